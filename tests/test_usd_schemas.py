"""hydro and the official Newton USD schemas (newton-usd-schemas): registered, read through, written as
they declare, seen by other tools, NEWTON.MAS.001's examples, files of older hydro versions."""

import math
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

pytest.importorskip("pxr")
pytest.importorskip("newton_usd_schemas")

from hydro.geometry import Box, Sphere
from hydro.scene import validate as rules
from hydro.scene.mass import DEFAULT_SHELL_THICKNESS
from hydro.scene.material import DEFAULT_MATERIAL, ShapeMaterial, material_row
from hydro.scene.model import ModelBuilder
from hydro.scene.usd_io import SceneWarning, load_usd, save_usd, schemas_registered, validate_usd
from hydro.sdf import SDFSettings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = '#usda 1.0\n(\n    defaultPrim = "World"\n    metersPerUnit = {mpu}\n    upAxis = "{up}"\n)\n'


def write(tmp_path, body, *, mpu=1, up="Z", name="scene.usda"):
    path = tmp_path / name
    path.write_text(HEADER.format(mpu=mpu, up=up) + textwrap.dedent(body))
    return str(path)


def quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_usd(path, **kw)


def _python(code, tmp_path, *, hydro=False):
    """Run ``code`` in a fresh interpreter; without ``hydro`` the tree is not importable there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if hydro:
        env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_schemas_are_registered_by_hydro():
    from pxr import Usd

    assert schemas_registered()
    for api in ("NewtonCollisionAPI", "NewtonSDFCollisionAPI", "NewtonMeshCollisionAPI", "NewtonMassAPI",
                "NewtonMaterialAPI", "NewtonSceneAPI"):
        assert Usd.SchemaRegistry().FindAppliedAPIPrimDefinition(api) is not None, api


def test_hydros_tables_are_the_registered_schema():
    """The Python builder's defaults and the hand-made records' schema inclusions equal the schema."""
    from pxr import Usd

    reg = Usd.SchemaRegistry()

    def fallback(api, name):
        v = reg.FindAppliedAPIPrimDefinition(api).GetSchemaAttributeSpec(name).default
        return float(np.float32(v)) if isinstance(v, float) else v

    for name, v in rules.SDF_COLLISION_DEFAULTS.items():
        got = fallback("NewtonSDFCollisionAPI", name)
        assert got == v or (isinstance(v, float) and got == pytest.approx(v, rel=1e-7)), name
    for name, v in rules.COLLISION_DEFAULTS.items():
        assert fallback("NewtonCollisionAPI", name) == v, name
    for api, included in rules.INCLUDED_SCHEMAS.items():
        assert set(reg.FindAppliedAPIPrimDefinition(api).GetAppliedAPISchemas()) == {api, *included}, api
    # NewtonMaterialAPI: the fallbacks that are not sentinels are hydro's defaults
    assert fallback("NewtonMaterialAPI", "newton:torsionalFriction") == pytest.approx(
        DEFAULT_MATERIAL.torsional_friction, rel=1e-7)
    assert fallback("NewtonMaterialAPI", "newton:rollingFriction") == pytest.approx(
        DEFAULT_MATERIAL.rolling_friction, rel=1e-7)
    for name in ("newton:contactStiffness", "newton:contactDamping", "newton:contactFrictionGain",
                 "newton:contactAdhesion"):
        assert fallback("NewtonMaterialAPI", name) == -math.inf
    assert fallback("NewtonMassAPI", "newton:shellThickness") == -math.inf


def _written_scene(tmp_path):
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.1)), local_pose=[0, 0, -0.05, 0, 0, 0, 1], hydroelastic=True,
                stiffness=2e7, sdf=SDFSettings(max_resolution=32, padding=0.01), margin=0.001)
    body = b.add_body("/World/Ball", [0, 0, 0.1, 0, 0, 0, 1])
    b.add_shape("/World/Ball/Collider", Sphere(0.1), body=body, hydroelastic=True, stiffness=3e7, gap=0.004,
                material=ShapeMaterial(static_friction=0.9, dynamic_friction=0.7, contact_stiffness=1e4))
    path = str(tmp_path / "written.usda")
    save_usd(b.finalize(build_sdfs=False), path)
    return path


def test_a_scene_written_by_hydro_shows_its_schemas_to_plain_usd(tmp_path):
    path = _written_scene(tmp_path)
    out = _python(f"""
        import sys
        import newton_usd_schemas
        from pxr import Sdf, Usd, UsdShade
        assert "hydro" not in sys.modules
        stage = Usd.Stage.Open({path!r})
        g = stage.GetPrimAtPath("/World/Ground")
        c = stage.GetPrimAtPath("/World/Ball/Collider")
        b = stage.GetPrimAtPath("/World/Ball")
        print(g.HasAPI("NewtonSDFCollisionAPI"), g.HasAPI("NewtonCollisionAPI"), g.HasAPI("PhysicsCollisionAPI"))
        print(b.HasAPI("NewtonMassAPI"), b.HasAPI("PhysicsMassAPI"), b.HasAPI("PhysicsRigidBodyAPI"))
        for p, n in ((g, "newton:hydroelasticStiffness"), (g, "newton:sdfMaxResolution"), (g, "newton:sdfPadding"),
                     (g, "newton:contactMargin"), (c, "newton:contactGap"), (c, "newton:sdfTargetVoxelSize")):
            a = p.GetAttribute(n)
            print(n, a.Get(), a.GetVariability() == Sdf.VariabilityUniform, a.IsCustom())
        mat = UsdShade.MaterialBindingAPI(c).ComputeBoundMaterial("physics")[0].GetPrim()
        print(mat.HasAPI("NewtonMaterialAPI"), mat.GetAttribute("newton:contactStiffness").Get(),
              mat.GetAttribute("newton:torsionalFriction").Get())
    """, tmp_path)
    lines = out.splitlines()
    assert lines[0] == "True True True"
    assert lines[1] == "True True True"
    assert lines[2].startswith("newton:hydroelasticStiffness 20000000.0 ") and lines[2].endswith("False")
    assert lines[3] == "newton:sdfMaxResolution 32 True False"  # uniform, as the schema declares
    assert lines[4].startswith("newton:sdfPadding 0.00999") and lines[4].endswith(" True False")
    assert lines[5].startswith("newton:contactMargin 0.00100")
    assert lines[6].startswith("newton:contactGap 0.00400")
    assert lines[7] == "newton:sdfTargetVoxelSize -inf True False"  # unset: the schema's sentinel
    assert lines[8].startswith("True 10000.0 0.00499")  # set value; unset one from the schema


def test_apply_api_with_no_values_loads_the_schema_defaults(tmp_path):
    from pxr import Gf, Usd, UsdGeom, UsdPhysics, UsdShade

    stage = Usd.Stage.CreateNew(str(tmp_path / "bare.usda"))
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.Xform.Define(stage, "/World")
    ground = UsdGeom.Cube.Define(stage, "/World/Ground")
    ground.CreateSizeAttr(1.0)
    ground.GetPrim().ApplyAPI("NewtonSDFCollisionAPI")  # includes NewtonCollisionAPI and PhysicsCollisionAPI
    body = UsdGeom.Xform.Define(stage, "/World/Ball")
    body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 2))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    ball = UsdGeom.Sphere.Define(stage, "/World/Ball/Collider")
    ball.CreateRadiusAttr(0.1)
    ball.GetPrim().ApplyAPI("NewtonCollisionAPI")
    ball.GetPrim().ApplyAPI("NewtonMassAPI")
    ball.GetPrim().GetAttribute("newton:massModel").Set("shell")  # thickness left to the "solver"
    mat = UsdShade.Material.Define(stage, "/World/Mat")
    mat.GetPrim().ApplyAPI("NewtonMaterialAPI")  # includes PhysicsMaterialAPI
    mat.GetPrim().ApplyAPI("PhysicsMaterialAPI")
    UsdShade.MaterialBindingAPI.Apply(ball.GetPrim()).Bind(mat, UsdShade.Tokens.weakerThanDescendants, "physics")
    stage.Save()
    m = quiet_load(str(tmp_path / "bare.usda"), build_sdfs=False)
    assert m.shape_hydroelastic.tolist() == [False, False]
    assert m.shape_stiffness[0] == 1e10 and m.shape_margin.tolist() == [0.0, 0.0]
    assert m.shape_gap.tolist() == [0.0, 0.0]  # -inf: hydro's engine default, no gap
    assert m.shape_sdf_settings[0] == SDFSettings()  # 64, ±0.1 m, uint16, padding and voxel size unset
    assert m.shape_sdf_collision.tolist() == [True, False]
    # the bound material: PhysicsMaterialAPI's friction fallbacks (0) and NewtonMaterialAPI's fallbacks
    expected = ShapeMaterial(static_friction=0.0, dynamic_friction=0.0, restitution=0.0)
    np.testing.assert_allclose(m.shape_material[1], material_row(expected), rtol=1e-6)
    np.testing.assert_allclose(m.shape_material[0], material_row(DEFAULT_MATERIAL))  # none bound
    # massModel shell with the thickness sentinel: a 1 mm wall, density 1000 kg/m^3
    R, t = 0.1, DEFAULT_SHELL_THICKNESS
    assert m.body_mass[0] == pytest.approx(1000 * 4 / 3 * math.pi * (R**3 - (R - t) ** 3), rel=1e-12)
    # a fallback is a value in the stage's units like any other: in a centimetre stage (USD's default
    # when metersPerUnit is not authored) the fallback band is 0.1 cm and the stiffness 1e10 N/cm^3
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    stage.Save()
    cm = quiet_load(str(tmp_path / "bare.usda"), build_sdfs=False)
    assert cm.shape_sdf_settings[0].narrow_band_outer == pytest.approx(0.001)
    assert cm.shape_stiffness[0] == pytest.approx(1e14)


# ---------------------------------------------------------------------------------------------
# NEWTON.MAS.001, its three examples as the rule's page writes them


RULE_EXAMPLES = """
def Xform "World"
{
    # Valid: explicit inertia tensor override.
    def Xform "Link" (
        prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "NewtonMassAPI"]
    )
    {
        float physics:mass = 2.0
        double[] newton:inertia = [0.01, 0.01, 0.005, 0, 0, 0]
    }

    # Valid: hollow shell mass model on a collision shape.
    def Mesh "Shell" (
        prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonMassAPI"]
    )
    {
        uniform token newton:massModel = "shell"
        float newton:shellThickness = 0.002
    }

    # Invalid: inertia tensor with the wrong element count.
    def Xform "BadLink" (
        prepend apiSchemas = ["NewtonMassAPI"]
    )
    {
        double[] newton:inertia = [0.01, 0.01, 0.005]
    }
}
"""


def test_the_three_examples_of_newton_mas_001(tmp_path):
    found = validate_usd(write(tmp_path, RULE_EXAMPLES))
    mas = [(f.code, f.severity, f.prim_path) for f in found if f.code == "NEWTON.MAS.001"]
    assert mas == [("NEWTON.MAS.001", "ERROR", "/World/BadLink")]
    # the example mesh has no points, which is a different rule (and the mesh one of Newton's)
    assert {f.code for f in found if f.prim_path == "/World/Shell"} == {"HYDRO.GEO.001", "NEWTON.COL.001"}
    assert not any(f.prim_path == "/World/Link" for f in found)


def test_a_solid_body_with_a_shell_thickness_loads_and_stays_solid(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def Sphere "Ball" (
            prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonMassAPI"]
        )
        {
            double radius = 0.1
            float newton:shellThickness = 0.002
        }
        def Sphere "Solid" (
            prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonMassAPI"]
        )
        {
            double radius = 0.1
            uniform token newton:massModel = "solid"
            float newton:shellThickness = 0.002
            double3 xformOp:translate = (1, 0, 0)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
    """)
    m = quiet_load(path, build_sdfs=False)
    solid = 1000 * 4 / 3 * math.pi * 0.1**3
    np.testing.assert_allclose(m.body_mass, [solid, solid], rtol=1e-12)


def test_a_shell_in_a_stage_has_the_closed_form_mass(tmp_path):
    # a thin hollow ball (2/3 m R^2) and a hollow box, in a centimetre stage
    path = write(tmp_path, """
    def Xform "World"
    {
        def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
        {
            float physics:density = 0.0027
            def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonMassAPI"])
            {
                double radius = 10
                uniform token newton:massModel = "shell"
                float newton:shellThickness = 0.01
            }
        }
        def Cube "Crate" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonMassAPI"])
        {
            double size = 1
            uniform token newton:massModel = "shell"
            float newton:shellThickness = 1
            double3 xformOp:translate = (100, 0, 0)
            double3 xformOp:scale = (30, 20, 10)
            uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]
        }
    }
    """, mpu=0.01)
    m = quiet_load(path, build_sdfs=False)
    R, t, rho = 0.1, 1e-4, 2700.0  # 0.0027 g/cm^3 ... here kg/cm^3 with kilogramsPerUnit 1: 2700 kg/m^3
    mass = rho * 4 / 3 * math.pi * (R**3 - (R - t) ** 3)
    assert m.body_mass[0] == pytest.approx(mass, rel=1e-9)
    np.testing.assert_allclose(np.diag(m.body_inertia[0]), 2 / 3 * mass * R**2, rtol=1e-2)
    a, b, c, w = 0.3, 0.2, 0.1, 0.01
    v = a * b * c - (a - 2 * w) * (b - 2 * w) * (c - 2 * w)
    assert m.body_mass[1] == pytest.approx(1000 * v, rel=1e-9)
    ixx = 1000 / 12 * (a * b * c * (b * b + c * c) - (a - 2 * w) * (b - 2 * w) * (c - 2 * w) * ((b - 2 * w) ** 2 + (c - 2 * w) ** 2))
    assert m.body_inertia[1][0, 0] == pytest.approx(ixx, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# Round trips and old files


RICH = """
def Xform "World"
{
    def PhysicsScene "Scene" {}
    def Scope "Looks"
    {
        def Material "Rubber" (prepend apiSchemas = ["PhysicsMaterialAPI", "NewtonMaterialAPI"])
        {
            float physics:staticFriction = 1.2
            float physics:dynamicFriction = 0.9
            float physics:restitution = 0.1
            float newton:torsionalFriction = 0.02
            float newton:contactStiffness = 20000
            float newton:contactDamping = -inf
        }
    }
    def Plane "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
    {
        float newton:contactMargin = 0.001
    }
    def Xform "Robot" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsFilteredPairsAPI"])
    {
        rel physics:filteredPairs = </World/Crate>
        double3 xformOp:translate = (0, 0, 0.5)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Sphere "Head" (prepend apiSchemas = ["NewtonSDFCollisionAPI", "MaterialBindingAPI"])
        {
            double radius = 0.1
            bool newton:hydroelasticEnabled = 1
            uniform int newton:sdfMaxResolution = 32
            rel material:binding:physics = </World/Looks/Rubber>
        }
        def Mesh "Hull" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonMeshCollisionAPI"])
        {
            uniform token physics:approximation = "convexHull"
            uniform int newton:maxHullVertices = 6
            int[] faceVertexCounts = [4, 4, 4, 4, 4, 4]
            int[] faceVertexIndices = [0, 1, 3, 2, 4, 6, 7, 5, 0, 4, 5, 1, 2, 3, 7, 6, 0, 2, 6, 4, 1, 5, 7, 3]
            point3f[] points = [(-0.1, -0.1, 0.2), (0.1, -0.1, 0.2), (-0.1, 0.1, 0.2), (0.1, 0.1, 0.2),
                                (-0.1, -0.1, 0.4), (0.1, -0.1, 0.4), (-0.1, 0.1, 0.4), (0.1, 0.1, 0.4)]
        }
        def Capsule "Ghost" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            bool physics:collisionEnabled = 0
            double radius = 0.05
            double height = 0.1
        }
    }
    def Cube "Crate" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double size = 0.2
        bool newton:hydroelasticEnabled = 1
        uniform int newton:sdfMaxResolution = 16
        float newton:contactGap = 0.002
        double3 xformOp:translate = (1, 0, 0.1)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def Cube "Other" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonCollisionAPI"])
    {
        double size = 0.2
        double3 xformOp:translate = (-1, 0, 0.1)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def PhysicsCollisionGroup "Robots" (prepend apiSchemas = ["CollectionAPI:colliders"])
    {
        rel collection:colliders:includes = </World/Robot>
        rel physics:filteredGroups = </World/Props>
    }
    def PhysicsCollisionGroup "Props" (prepend apiSchemas = ["CollectionAPI:colliders"])
    {
        rel collection:colliders:includes = [</World/Other>]
    }
}
"""


def test_load_save_load_is_identical(tmp_path):
    from test_usd import assert_models_equal

    first = quiet_load(write(tmp_path, RICH), build_sdfs=False)
    assert first.shape_path == ["/World/Ground", "/World/Robot/Head", "/World/Robot/Hull", "/World/Robot/Ghost",
                                "/World/Crate", "/World/Other"]
    save_usd(first, str(tmp_path / "saved.usda"))
    second = quiet_load(str(tmp_path / "saved.usda"), build_sdfs=False)
    # masses and inertias hydro computed are stored as UsdPhysics' 32-bit floats; the rest is exact
    assert_models_equal(first, second, rtol=2e-7)
    for name in ("shape_material", "shape_margin", "shape_gap", "shape_collision_enabled", "shape_collision_group",
                 "collision_group_mask", "filtered_shape_pairs", "shape_local_pose"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name), err_msg=name)
    assert first.shape_geometry == second.shape_geometry
    assert first.shape_sdf_settings == second.shape_sdf_settings
    third = quiet_load(str(tmp_path / "saved.usda"), build_sdfs=False)
    save_usd(second, str(tmp_path / "again.usda"))
    assert_models_equal(second, quiet_load(str(tmp_path / "again.usda"), build_sdfs=False), rtol=0.0)
    assert (tmp_path / "again.usda").read_text() == (tmp_path / "saved.usda").read_text()
    # what the file holds
    assert first.shape_collision_enabled.tolist() == [True, True, True, False, True, True]
    robot = [first.shape_path.index(p) for p in ("/World/Robot/Head", "/World/Robot/Hull")]
    other, crate = first.shape_path.index("/World/Other"), first.shape_path.index("/World/Crate")
    assert not first.may_collide(robot[0], other) and first.may_collide(crate, other)  # the groups
    ground = first.shape_path.index("/World/Ground")
    assert not first.may_collide(robot[1], crate) and first.may_collide(robot[1], ground)  # the filtered pair
    assert len(first.shape_geometry[robot[1]].vertices) == 6  # newton:maxHullVertices
    assert third.shape_material[robot[0]].tolist()[:6] == pytest.approx([1.2, 0.9, 0.1, 0.02, 1e-4, 2e4])


def test_files_of_older_hydro_versions_load_with_a_warning(tmp_path):
    # custom attributes, Newton collider values without the schema that declares them
    path = write(tmp_path, """
    def Xform "World"
    {
        def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            double size = 1
            custom bool newton:hydroelasticEnabled = 1
            custom int newton:sdfMaxResolution = 32
            custom float newton:contactGap = 0.003
        }
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            double radius = 0.1
            custom bool newton:hydroelasticEnabled = 1
            custom int newton:sdfMaxResolution = 16
            double3 xformOp:translate = (0, 0, 0.6)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
        def Sphere "Plain" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
        {
            double radius = 0.1
            custom float newton:contactMargin = 0.002
            double3 xformOp:translate = (2, 0, 0.6)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
    """)
    with pytest.warns(SceneWarning) as caught:
        m = load_usd(path, build_sdfs=False)
    messages = [str(w.message) for w in caught]
    assert any(msg.startswith("HYDRO.SCH.001 WARNING /World/Ball: newton:hydroelasticEnabled, newton:sdfMaxResolution")
               for msg in messages)
    assert any(msg.startswith("HYDRO.SCH.001 WARNING /World/Plain: newton:contactMargin") for msg in messages)
    # ... and the values are read anyway
    assert m.shape_hydroelastic.tolist() == [True, True, False]
    assert m.shape_sdf_settings[1].max_resolution == 16 and m.shape_gap[0] == pytest.approx(0.003)
    assert m.shape_margin[2] == pytest.approx(0.002)


def test_other_engines_attributes_and_unknown_schemas_are_ignored_quietly(tmp_path):
    plain = write(tmp_path, """
    def Xform "World"
    {
        def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            double size = 1
        }
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            double radius = 0.1
            double3 xformOp:translate = (0, 0, 0.6)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
    """, name="plain.usda")
    noisy = write(tmp_path, """
    def Xform "World" (prepend apiSchemas = ["PhysxSceneAPI", "SomeStudioAPI"])
    {
        def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI", "PhysxCollisionAPI",
                                                 "MjcCollisionAPI"])
        {
            double size = 1
            float physxCollision:contactOffset = 0.02
            float physxCollision:restOffset = 0.01
            int mjc:condim = 6
            custom string studio:note = "ground"
        }
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysxRigidBodyAPI", "MjcBodyAPI",
                                                 "PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            double radius = 0.1
            float physxRigidBody:linearDamping = 0.5
            float mjc:gravcomp = 1
            double3 xformOp:translate = (0, 0, 0.6)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
        def Xform "Rig" (prepend apiSchemas = ["MjcSiteAPI"])
        {
            float mjc:margin = 0.1
        }
    }
    """, name="noisy.usda")
    assert validate_usd(noisy) == []
    from test_usd import assert_models_equal

    assert_models_equal(quiet_load(plain, build_sdfs=False), quiet_load(noisy, build_sdfs=False), rtol=0.0)


def test_late_registration_reads_the_schema_file_and_says_so(tmp_path):
    path = _written_scene(tmp_path)
    out = _python(f"""
        import warnings
        from pxr import Usd, UsdGeom
        s = Usd.Stage.CreateInMemory()
        UsdGeom.Sphere.Define(s, "/x")  # the schema registry is used before hydro registers the schemas
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from hydro.scene.usd_io import load_usd, schemas_registered
            m = load_usd({path!r}, build_sdfs=False)
            m = load_usd({path!r}, build_sdfs=False)
        print(schemas_registered(), len([w for w in caught if "newton-usd-schemas" in str(w.message)]))
        print(m.shape_gap.tolist(), m.shape_sdf_settings[1].max_resolution, m.shape_sdf_settings[0].padding)
    """, tmp_path, hydro=True)
    lines = out.splitlines()
    assert lines[0] == "False 1"  # warned once
    gap = float(np.float32(0.004))
    assert lines[1] == f"[0.0, {shortest(gap)}] 64 {shortest(float(np.float32(0.01)))}"


def shortest(x):
    return float(str(np.float32(x)))
