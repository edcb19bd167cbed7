"""Schema rules: every rule with a record that breaks it and one that passes."""

import math

import pytest

from hydro.scene import validate as rules
from hydro.scene.validate import (CODES, ERROR, WARNING, Finding, PrimRecord, has_errors, shape_findings,
                            validate_records)

INF = math.inf
NAN = math.nan


def findings_of(*records):
    return [(f.code, f.severity, f.prim_path) for f in validate_records(list(records))]


def collider(path="/World/S", *, body="/World/B", kind="sphere", schemas=("PhysicsCollisionAPI", "NewtonSDFCollisionAPI"),
             **attributes):
    return PrimRecord(path=path, type_name="Sphere", schemas=tuple(schemas), attributes=dict(attributes),
                      collider=True, body=body, geometry_kind=kind)


#: hydroelastic, with an SDF source authored
HYDRO = {"newton:hydroelasticEnabled": True, "newton:sdfMaxResolution": 64}


def partner(path="/World/Ground"):
    """A static hydroelastic box that any dynamic shape can touch."""
    return collider(path, body=None, kind="box", **HYDRO)


def test_finding_prints_code_severity_path_message():
    f = Finding("NEWTON.MAS.001", ERROR, "/World/BadLink", "newton:inertia must be empty or contain exactly 6 elements")
    assert str(f) == "NEWTON.MAS.001 ERROR /World/BadLink: newton:inertia must be empty or contain exactly 6 elements"


def test_every_code_has_a_severity_and_summary():
    for code, (severity, summary) in CODES.items():
        assert severity in (ERROR, WARNING) and summary
        assert code in ("NEWTON.MAS.001", "NEWTON.COL.001", "NEWTON.COL.002", "NEWTON.MAT.001") or \
            code.startswith("HYDRO.")


def test_a_clean_pair_has_no_findings():
    assert findings_of(collider(**HYDRO), partner()) == []


# ---------------------------------------------------------------------------------------------
# NEWTON.MAS.001, clause by clause (the examples of the rule's own page first)


def mass_prim(path="/World/Link", *, xformable=True, **attributes):
    return PrimRecord(path=path, type_name="Xform" if xformable else "Material", xformable=xformable,
                      schemas=("PhysicsRigidBodyAPI", "PhysicsMassAPI", "NewtonMassAPI"), attributes=dict(attributes))


def test_newton_mass_examples_of_the_rule():
    valid_link = mass_prim(**{"physics:mass": 2.0, "newton:inertia": [0.01, 0.01, 0.005, 0, 0, 0]})
    valid_shell = mass_prim("/World/Shell", **{"newton:massModel": "shell", "newton:shellThickness": 0.002})
    invalid = mass_prim("/World/BadLink", **{"newton:inertia": [0.01, 0.01, 0.005]})
    found = validate_records([valid_link, valid_shell, invalid])
    assert [(f.code, f.prim_path) for f in found if f.severity == ERROR] == [("NEWTON.MAS.001", "/World/BadLink")]
    # the shell example is valid, and hydro computes shells: no finding at all
    assert [f for f in found if f.prim_path != "/World/BadLink"] == []


@pytest.mark.parametrize("attributes,ok", [
    ({"newton:inertia": []}, True),  # empty: no opinion
    ({"newton:inertia": [1, 2, 3, 0.1, 0.2, 0.3]}, True),
    ({"newton:inertia": [0, 0, 0, 0, 0, 0]}, True),
    ({"newton:inertia": [1, 2, 3, 4, 5]}, False),
    ({"newton:inertia": [1, 2, 3, 4, 5, 6, 7]}, False),
    ({"newton:inertia": [1, 2, INF, 0, 0, 0]}, False),
    ({"newton:inertia": [1, 2, 3, NAN, 0, 0]}, False),
    ({"newton:inertia": [1, -2, 3, 0, 0, 0]}, False),
    ({"newton:inertia": [1, 2, 3, -5, -5, -5]}, True),  # off-diagonal terms may be negative
    ({"newton:inertia": 7.0}, False),
    ({"newton:massModel": "solid"}, True),
    ({"newton:massModel": "hollow"}, False),
    ({"newton:massModel": "shell", "newton:shellThickness": -INF}, True),  # the solver chooses
    ({"newton:massModel": "shell", "newton:shellThickness": 0.0}, False),
    ({"newton:massModel": "shell", "newton:shellThickness": -0.001}, False),
    ({"newton:massModel": "shell", "newton:shellThickness": INF}, False),
    ({"newton:massModel": "shell", "newton:shellThickness": NAN}, False),
    ({"newton:massModel": "solid", "newton:shellThickness": 0.002}, True),  # only meaningful with shell: ignored
    ({"newton:shellThickness": 0.002}, True),  # the default model is solid: ignored
])
def test_newton_mass_attribute_clauses(attributes, ok):
    codes = [f.code for f in validate_records([mass_prim(**attributes)]) if f.severity == ERROR]
    assert codes == ([] if ok else ["NEWTON.MAS.001"])


def test_newton_mass_api_must_sit_on_an_xformable():
    assert findings_of(mass_prim(xformable=False)) == [("NEWTON.MAS.001", ERROR, "/World/Link")]
    assert findings_of(mass_prim(xformable=True)) == []


def test_newton_mass_attributes_without_the_schema_are_not_this_rule():
    rec = PrimRecord(path="/World/X", type_name="Xform", schemas=(), attributes={"newton:inertia": [1.0]})
    assert findings_of(rec) == [("HYDRO.SCH.001", WARNING, "/World/X")]  # ignored, and said so


@pytest.mark.parametrize("attributes,ok", [
    ({"physics:mass": 1.0, "physics:density": 1000.0, "physics:diagonalInertia": (1.0, 2.0, 3.0)}, True),
    ({"physics:mass": -1.0}, False),
    ({"physics:density": NAN}, False),
    ({"physics:diagonalInertia": (1.0, -2.0, 3.0)}, False),
    ({"physics:centerOfMass": (-INF, -INF, -INF)}, True),  # the schema's "unset"
    ({"physics:centerOfMass": (0.0, NAN, 0.0)}, False),
])
def test_physics_mass_values(attributes, ok):
    rec = PrimRecord(path="/World/B", type_name="Xform", schemas=("PhysicsRigidBodyAPI", "PhysicsMassAPI"),
                     attributes=attributes)
    assert findings_of(rec) == ([] if ok else [("HYDRO.MAS.001", ERROR, "/World/B")])


# ---------------------------------------------------------------------------------------------
# Per-shape rules


@pytest.mark.parametrize("kind", ["plane", "heightfield"])
def test_hydroelastic_on_plane_or_heightfield(kind):
    bad = collider("/World/Floor", body=None, kind=kind, **HYDRO)
    ball = collider(**HYDRO)
    assert ("HYDRO.HYD.001", ERROR, "/World/Floor") in findings_of(bad, ball)
    fine = collider("/World/Floor", body=None, kind=kind)
    assert findings_of(fine, ball, partner()) == []


def test_hydroelastic_on_a_non_watertight_mesh():
    bad = collider("/World/Shell", kind="mesh", **HYDRO)
    bad.watertight_error = "mesh '/World/Shell' is not watertight (4 boundary edges, 0 edges shared by more than two faces)"
    found = validate_records([bad, partner()])
    assert [(f.code, f.prim_path) for f in found] == [("HYDRO.HYD.001", "/World/Shell")]
    assert "4 boundary edges" in found[0].message
    closed = collider("/World/Shell", kind="mesh", **HYDRO)
    assert findings_of(closed, partner()) == []


@pytest.mark.parametrize("stiffness,ok", [(1e10, True), (3.5, True), (0.0, False), (-1e6, False), (INF, False),
                                          (NAN, False), ("stiff", False)])
def test_stiffness(stiffness, ok):
    rec = collider(**HYDRO, **{"newton:hydroelasticStiffness": stiffness})
    assert findings_of(rec, partner()) == ([] if ok else [("NEWTON.COL.002", ERROR, "/World/S")])


def test_findings_show_values_as_authored_not_as_numpy_reprs():
    import numpy as np

    rec = collider(**{**HYDRO, "newton:hydroelasticStiffness": np.float64(-1.0), "newton:sdfMaxResolution": np.int32(60)})
    messages = " | ".join(f.message for f in validate_records([rec, partner()]))
    assert "got -1.0" in messages and "got 60" in messages
    assert "np." not in messages


def test_stiffness_of_a_shape_that_is_not_hydroelastic_only_warns():
    rec = collider(**{"newton:hydroelasticStiffness": -1.0})
    assert findings_of(rec) == [("NEWTON.COL.002", WARNING, "/World/S")]


def test_hydroelastic_at_the_documented_default_resolution_says_nothing():
    # issue 29: newton:sdfMaxResolution left at the document's default (64) is a fine SDF source
    rec = collider(**{"newton:hydroelasticEnabled": True})
    assert validate_records([rec, partner()]) == []
    # a schema whose fallback is not the documented 64 is worth a word
    rec.fallbacks = {"newton:sdfMaxResolution": 128}
    found = validate_records([rec, partner()])
    assert [(f.code, f.severity, f.prim_path) for f in found] == [("NEWTON.COL.002", WARNING, "/World/S")]
    assert "newton:sdfMaxResolution = 128, not the documented 64" in found[0].message
    rec = collider(**{"newton:hydroelasticEnabled": True, "newton:sdfTargetVoxelSize": 0.001})
    assert findings_of(rec, partner()) == []


@pytest.mark.parametrize("resolution,ok", [(64, True), (8, True), (256, True), (60, False), (0, False), (-8, False),
                                           (64.0, False), (True, False)])
def test_sdf_max_resolution(resolution, ok):
    rec = collider(**{"newton:sdfMaxResolution": resolution})
    assert findings_of(rec) == ([] if ok else [("NEWTON.COL.002", ERROR, "/World/S")])


@pytest.mark.parametrize("inner,outer,ok", [(-0.1, 0.1, True), (-0.001, 0.5, True), (0.0, 0.1, False),
                                            (0.05, 0.1, False), (-0.1, 0.0, False), (-0.1, -0.05, False),
                                            (-INF, 0.1, False), (-0.1, NAN, False)])
def test_narrow_band(inner, outer, ok):
    rec = collider(**{"newton:sdfNarrowBandInner": inner, "newton:sdfNarrowBandOuter": outer})
    found = findings_of(rec)
    assert (found == []) == ok
    assert all(code == "NEWTON.COL.002" for code, _, _ in found)


@pytest.mark.parametrize("fmt,ok", [("uint8", True), ("uint16", True), ("float32", True), ("float16", False),
                                    ("UINT8", False), ("", False)])
def test_texture_format(fmt, ok):
    rec = collider(**{"newton:sdfTextureFormat": fmt})
    assert findings_of(rec) == ([] if ok else [("NEWTON.COL.002", ERROR, "/World/S")])


@pytest.mark.parametrize("attributes,ok", [
    ({"newton:sdfTargetVoxelSize": 0.001, "newton:sdfPadding": 0.01}, True),
    ({"newton:sdfTargetVoxelSize": -INF, "newton:sdfPadding": -INF}, True),  # the sentinels: unset, engine default
    ({"newton:sdfPadding": 0.0}, True),
    ({"newton:sdfTargetVoxelSize": 0.0}, False),  # Newton: must be positive
    ({"newton:sdfTargetVoxelSize": -0.001}, False),
    ({"newton:sdfTargetVoxelSize": NAN}, False),
    ({"newton:sdfPadding": -0.01}, False),
    ({"newton:sdfPadding": INF}, False),
])
def test_voxel_size_and_padding(attributes, ok):
    assert findings_of(collider(**attributes)) == ([] if ok else [("NEWTON.COL.002", ERROR, "/World/S")])


@pytest.mark.parametrize("attributes,ok", [
    ({"newton:contactMargin": 0.0, "newton:contactGap": 0.005}, True),
    ({"newton:contactMargin": -0.001}, False),
    ({"newton:contactGap": -0.001}, False),
    ({"newton:contactGap": INF}, False),
    ({"newton:contactGap": -INF}, True),  # the sentinel: the engine's default
    ({"newton:contactMargin": -INF}, False),  # no sentinel for the margin
])
def test_margin_and_gap(attributes, ok):
    assert findings_of(collider(**attributes)) == ([] if ok else [("NEWTON.COL.002", ERROR, "/World/S")])


def test_geometry_errors_are_reported():
    rec = collider()
    rec.geometry_error = "its transform is sheared"
    assert findings_of(rec) == [("HYDRO.GEO.001", ERROR, "/World/S")]


def test_sdf_attributes_without_the_schema_warn():
    rec = collider(schemas=("PhysicsCollisionAPI",), **HYDRO)
    assert ("HYDRO.SCH.001", WARNING, "/World/S") in findings_of(rec, partner())
    # margin and gap belong to NewtonCollisionAPI (which NewtonSDFCollisionAPI includes)
    rec = collider(schemas=("PhysicsCollisionAPI",), **{"newton:contactGap": 0.01})
    assert findings_of(rec) == [("HYDRO.SCH.001", WARNING, "/World/S")]
    for schemas in (("NewtonCollisionAPI",), ("PhysicsCollisionAPI", "NewtonSDFCollisionAPI")):
        assert findings_of(collider(schemas=schemas, **{"newton:contactGap": 0.01})) == []


def test_sdf_on_an_open_mesh_that_is_not_hydroelastic():
    rec = collider("/World/Shell", kind="mesh")
    rec.watertight_error = "3 boundary edges"
    assert findings_of(rec) == [("HYDRO.SDF.005", ERROR, "/World/Shell")]
    rec = collider("/World/Shell", kind="mesh", schemas=("PhysicsCollisionAPI",))
    rec.watertight_error = "3 boundary edges"  # no SDF asked for: an open mesh is a fine plain collider
    assert findings_of(rec) == []


@pytest.mark.parametrize("attributes,ok", [
    ({"physics:velocity": (1.0, 2.0, 3.0), "physics:angularVelocity": (0.0, 0.0, 90.0)}, True),
    ({"physics:velocity": (INF, 0.0, 0.0)}, False),
    ({"physics:angularVelocity": (0.0, NAN, 0.0)}, False),
])
def test_body_velocities(attributes, ok):
    rec = PrimRecord(path="/World/B", type_name="Xform", schemas=("PhysicsRigidBodyAPI",), attributes=attributes)
    assert findings_of(rec) == ([] if ok else [("HYDRO.BOD.001", ERROR, "/World/B")])


def test_joints_are_reported_as_ignored():
    joint = PrimRecord(path="/World/Hinge", type_name="PhysicsRevoluteJoint", xformable=False)
    assert findings_of(joint) == [("HYDRO.USD.001", WARNING, "/World/Hinge")]


# ---------------------------------------------------------------------------------------------
# HYDRO.HYD.003: a hydroelastic shape that no hydroelastic shape can touch


def test_lonely_hydroelastic_shape_warns():
    ball = collider(**HYDRO)
    plain_ground = collider("/World/Ground", body=None, kind="box")
    assert findings_of(ball, plain_ground) == [("HYDRO.HYD.003", WARNING, "/World/S")]
    assert findings_of(ball, partner()) == []


def test_shapes_that_can_never_pair_do_not_count_as_partners():
    h = HYDRO
    # two shapes of the same body
    a, b = collider("/World/B/A", **h), collider("/World/B/C", **h)
    assert [c for c, _, _ in findings_of(a, b)] == ["HYDRO.HYD.003", "HYDRO.HYD.003"]
    # two static shapes
    s1, s2 = collider("/World/S1", body=None, **h), collider("/World/S2", body=None, **h)
    assert len(findings_of(s1, s2)) == 2
    # shapes of two different envs; a global static shape pairs with every env
    e0 = collider("/World/envs/env_0/Box/C", body="/World/envs/env_0/Box", **h)
    e1 = collider("/World/envs/env_1/Box/C", body="/World/envs/env_1/Box", **h)
    assert len(findings_of(e0, e1)) == 2
    assert findings_of(e0, e1, partner()) == []


def test_has_errors():
    assert has_errors([Finding("X", ERROR, "/a", "m")])
    assert not has_errors([Finding("X", WARNING, "/a", "m")])


def test_shape_findings_on_plain_values():
    assert shape_findings("/World/S", kind="sphere", hydroelastic=True, stiffness=1e6) == []
    codes = [f.code for f in shape_findings("/World/S", kind="plane", hydroelastic=True, stiffness=0.0,
                                            max_resolution=12, narrow_band_inner=0.1, texture_format="x",
                                            margin=-1.0)]
    assert codes == ["HYDRO.HYD.001"] + ["NEWTON.COL.002"] * 5
    # -inf is a sentinel only in USD values
    kw = dict(kind="sphere", hydroelastic=False, stiffness=1e6, gap=-INF, padding=-INF, target_voxel_size=-INF)
    assert len(shape_findings("/World/S", **kw)) == 3
    assert shape_findings("/World/S", sentinels=True, **kw) == []


# ---------------------------------------------------------------------------------------------
# The same rules on a USD stage


def test_newton_mass_rule_on_a_usd_stage(tmp_path):
    pytest.importorskip("pxr")
    from hydro.scene.usd_io import validate_usd

    path = tmp_path / "mass.usda"
    path.write_text("""#usda 1.0
(
    defaultPrim = "World"
    upAxis = "Z"
)
def Xform "World"
{
    def Xform "Link" (
        prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "NewtonMassAPI"]
    )
    {
        float physics:mass = 2.0
        double[] newton:inertia = [0.01, 0.01, 0.005, 0, 0, 0]
    }
    def Xform "BadLink" (
        prepend apiSchemas = ["NewtonMassAPI"]
    )
    {
        double[] newton:inertia = [0.01, 0.01, 0.005]
    }
    def Scope "NotXformable" (
        prepend apiSchemas = ["NewtonMassAPI"]
    )
    {
        uniform token newton:massModel = "solid"
    }
    def Xform "Thick" (
        prepend apiSchemas = ["NewtonMassAPI"]
    )
    {
        uniform token newton:massModel = "solid"
        float newton:shellThickness = 0.002
    }
}
""")
    found = [(f.code, f.severity, f.prim_path) for f in validate_usd(str(path))]
    # a shell thickness on a solid body is ignored, as the rule says, not an error
    assert found == [("NEWTON.MAS.001", ERROR, "/World/BadLink"), ("NEWTON.MAS.001", ERROR, "/World/NotXformable")]


# ---------------------------------------------------------------------------------------------
# Newton's collider and material placement rules, units, sizes, budgets (plain records)


def test_newton_col_001_for_mesh_colliders():
    def mesh(*schemas, type_name="Mesh"):
        return PrimRecord(path="/World/M", type_name=type_name, schemas=schemas, collider=True, geometry_kind="mesh")

    assert findings_of(mesh("PhysicsCollisionAPI", "PhysicsMeshCollisionAPI")) == [("NEWTON.COL.001", WARNING, "/World/M")]
    assert findings_of(mesh("PhysicsCollisionAPI", "NewtonMeshCollisionAPI")) == []
    assert findings_of(mesh("NewtonSDFCollisionAPI")) == []
    assert findings_of(mesh("NewtonMeshCollisionAPI", "NewtonSDFCollisionAPI")) == [("NEWTON.COL.001", WARNING, "/World/M")]
    assert findings_of(mesh("NewtonMeshCollisionAPI", type_name="Sphere")) == [("NEWTON.COL.001", WARNING, "/World/M")]
    assert findings_of(mesh("PhysicsCollisionAPI", type_name="Sphere")) == []  # primitives need no Newton schema


def test_newton_mat_001_is_placement_only():
    def mat(type_name, *schemas, **attributes):
        return PrimRecord(path="/World/Mat", type_name=type_name, schemas=schemas, attributes=attributes)

    assert findings_of(mat("Material", "PhysicsMaterialAPI", "NewtonMaterialAPI",
                           **{"newton:contactStiffness": -5.0})) == []  # values are trusted by this rule
    assert findings_of(mat("Xform", "NewtonMaterialAPI")) == [("NEWTON.MAT.001", WARNING, "/World/Mat")]
    assert findings_of(mat("Material", "NewtonMaterialAPI")) == [("NEWTON.MAT.001", WARNING, "/World/Mat")]
    # Newton material attributes on a plain physics material: read anyway, and said so
    assert findings_of(mat("Material", "PhysicsMaterialAPI", **{"newton:torsionalFriction": 0.01})) == \
        [("HYDRO.SCH.001", WARNING, "/World/Mat")]


def test_records_know_the_schemas_theirs_include():
    rec = PrimRecord(path="/World/S", schemas=("NewtonSDFCollisionAPI",))
    assert rec.has("NewtonCollisionAPI") and rec.has("PhysicsCollisionAPI") and not rec.has("PhysicsMassAPI")
    assert PrimRecord(path="/World/B", schemas=("NewtonMassAPI",)).has("PhysicsMassAPI")


def test_sentinels_resolve_to_hydros_engine_defaults():
    values = rules.shape_values({"newton:sdfPadding": 0.01})
    assert values["gap"] == -INF and values["target_voxel_size"] == -INF and values["padding"] == 0.01
    resolved = rules.resolve_sentinels(values)
    assert resolved["gap"] == 0.0 and resolved["target_voxel_size"] is None and resolved["padding"] == 0.01
    # the schema's fallbacks as read win over the table
    assert rules.shape_values({}, {"newton:sdfMaxResolution": 128})["max_resolution"] == 128


def test_stage_units_sizes_and_budgets():
    from hydro.geometry import Box, Capsule, Mesh, Sphere
    from hydro.sdf import SDFSettings

    assert rules.stage_findings(meters_per_unit=0.01, kilograms_per_unit=1.0) == []
    assert [f.code for f in rules.stage_findings(meters_per_unit=0.0, kilograms_per_unit=NAN)] == ["HYDRO.STG.001"] * 2
    assert rules.size_findings("/World/S", Sphere(0.01)) == []
    assert rules.size_findings("/World/S", Capsule(0.01, 0.0)) == []  # a capsule of no length is a sphere
    (big,) = rules.size_findings("/World/B", Box((1.0, 1.0, 2e4)))
    assert big.code == "HYDRO.GEO.002" and big.message.startswith("size is 20000 m")
    flat = Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])  # a flat mesh: its largest extent counts
    assert rules.size_findings("/World/M", flat) == []
    settings = SDFSettings(max_resolution=64)
    assert rules.sdf_budget_findings("/World/S", Sphere(0.1), settings) == []
    (f,) = rules.sdf_budget_findings("/World/S", Sphere(0.1), settings, budget=1e6)
    assert f.code == "HYDRO.BUD.001" and "newton:sdfMaxResolution = 64" in f.message and "64x64x64" in f.message
    (f,) = rules.sdf_budget_findings("/World/S", Sphere(0.1), SDFSettings(target_voxel_size=1e-4), budget=1e6,
                                     authored={"newton:sdfTargetVoxelSize": 0.01})
    assert "newton:sdfTargetVoxelSize = 0.01" in f.message  # the authored value, in the stage's units


def test_sdf_memory_estimate_of_an_absurd_size_is_a_number_not_an_overflow():
    # found by the fuzz suite: a Cube of size 1e308 made the estimate raise OverflowError
    import warnings

    from hydro.geometry import parse_shape
    from hydro.sdf import SDFSettings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        need, res = rules.sdf_build_bytes(parse_shape("box:1e308,1e308,1e308"), SDFSettings(max_resolution=64))
    assert res == (64, 64, 64) and need > 0 and need == need
