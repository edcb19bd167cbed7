"""Hostile USD (issue 16's cases in the USD reader and validator): budgets checked before anything is
allocated, stage units that are zero or negative, non-finite transforms and absurd sizes, each a
finding that names the prim and the attribute, never a traceback or a wrong answer."""

import textwrap
import time

import pytest

pytest.importorskip("pxr")

from hydro.errors import SceneError
from hydro.geometry import Box, Sphere
from hydro.scene import validate as rules
from hydro.scene.usd_io import load_usd, validate_usd
from hydro.sdf import SDFSettings, build_sdf

HEADER = '#usda 1.0\n(\n    metersPerUnit = {mpu}\n    kilogramsPerUnit = {kpu}\n    upAxis = "Z"\n)\n'

BALL = """
def Xform "World"
{
    def Cube "Ground" (prepend apiSchemas = ["NewtonSDFCollisionAPI"])
    {
        double size = 1
        bool newton:hydroelasticEnabled = 1
        uniform int newton:sdfMaxResolution = 16
        double3 xformOp:translate = (0, 0, -0.5)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "NewtonSDFCollisionAPI"])
    {
        double radius = RADIUS
        bool newton:hydroelasticEnabled = 1
        EXTRA
        double3 xformOp:translate = TRANSLATE
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
}
"""


def scene(tmp_path, *, mpu=1, kpu=1, radius="0.1", extra="uniform int newton:sdfMaxResolution = 16",
          translate="(0, 0, 0.1)"):
    path = tmp_path / "scene.usda"
    path.write_text(HEADER.format(mpu=mpu, kpu=kpu) + BALL.replace("RADIUS", radius).replace("EXTRA", extra)
                    .replace("TRANSLATE", translate))
    return str(path)


def only(path, code):
    return [f for f in validate_usd(path) if f.code == code]


def refused(path, code):
    with pytest.raises(SceneError) as exc:
        load_usd(path)
    assert any(f.code == code for f in exc.value.findings)
    assert code in str(exc.value)
    return exc.value


# ---------------------------------------------------------------------------------------------
# Budgets: refused before allocating, naming the attribute and the memory


@pytest.mark.parametrize("extra,attribute,unit", [
    ("uniform int newton:sdfMaxResolution = 100000", "newton:sdfMaxResolution = 100000", "TiB"),
    ("uniform float newton:sdfTargetVoxelSize = 1e-05", "newton:sdfTargetVoxelSize = 1e-05", "GiB"),
])
def test_sdf_settings_beyond_the_memory_budget_are_refused_before_building(tmp_path, extra, attribute, unit):
    path = scene(tmp_path, extra=extra)
    t0 = time.perf_counter()
    (finding,) = only(path, "HYDRO.BUD.001")
    assert finding.severity == rules.ERROR and finding.prim_path == "/World/Ball"
    assert finding.message.startswith(attribute) and unit in finding.message and "budget" in finding.message
    err = refused(path, "HYDRO.BUD.001")
    assert time.perf_counter() - t0 < 30.0  # nothing of that size was allocated (it would take far longer)
    assert "HYDRO.BUD.001 ERROR /World/Ball: " + attribute in str(err)


def test_the_estimate_is_close_to_what_building_needs():
    import tracemalloc

    for geometry, settings in ((Sphere(0.1), SDFSettings(max_resolution=64)),
                               (Box((0.3, 0.2, 0.1)), SDFSettings(max_resolution=32, narrow_band_inner=-0.01,
                                                                  narrow_band_outer=0.01)),
                               (Sphere(0.1), SDFSettings(max_resolution=128, narrow_band_inner=-0.01,
                                                         narrow_band_outer=0.01))):
        estimate, res = rules.sdf_build_bytes(geometry, settings)
        build_sdf(geometry, settings)  # compiles first: the compiler's memory is not the build's
        tracemalloc.start()
        try:
            sdf = build_sdf(geometry, settings)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert res == tuple(sdf.resolution)
        assert 0.5 * peak < estimate < 4.0 * peak


def test_the_budget_follows_the_environment(tmp_path, monkeypatch):
    path = scene(tmp_path, extra="uniform int newton:sdfMaxResolution = 256")  # about 1.3 GiB
    assert only(path, "HYDRO.BUD.001") == []
    monkeypatch.setenv("HYDRO_SDF_BUDGET_GIB", "0.01")
    assert len(only(path, "HYDRO.BUD.001")) == 1
    monkeypatch.setenv("HYDRO_SDF_BUDGET_GIB", "lots")
    with pytest.raises(ValueError, match="HYDRO_SDF_BUDGET_GIB must be a number"):
        validate_usd(path)


# ---------------------------------------------------------------------------------------------
# Stage units


@pytest.mark.parametrize("mpu,kpu,name", [(0, 1, "metersPerUnit"), (-1, 1, "metersPerUnit"), (1, 0, "kilogramsPerUnit"),
                                          (1, -2, "kilogramsPerUnit"), ("inf", 1, "metersPerUnit")])
def test_stage_units_must_be_positive(tmp_path, mpu, kpu, name):
    path = scene(tmp_path, mpu=mpu, kpu=kpu)
    found = validate_usd(path)
    assert [(f.code, f.severity, f.prim_path) for f in found] == [("HYDRO.STG.001", rules.ERROR, "/")]
    assert f"the stage's {name} must be a finite number > 0" in found[0].message
    refused(path, "HYDRO.STG.001")


# ---------------------------------------------------------------------------------------------
# Transforms and sizes


@pytest.mark.parametrize("translate", ["(nan, 0, 0.1)", "(0, inf, 0.1)", "(0, 0, -inf)"])
def test_a_non_finite_transform_names_the_prim_and_the_attribute(tmp_path, translate):
    path = scene(tmp_path, translate=translate)
    found = only(path, "HYDRO.XFM.001")
    assert [(f.severity, f.prim_path) for f in found] == [(rules.ERROR, "/World/Ball")]
    assert "/World/Ball.xformOp:translate holds NaN or inf" in found[0].message
    refused(path, "HYDRO.XFM.001")


def test_a_non_finite_parent_transform_is_named(tmp_path):
    path = tmp_path / "parent.usda"
    path.write_text(HEADER.format(mpu=1, kpu=1) + textwrap.dedent("""
    def Xform "World"
    {
        def Xform "Rig"
        {
            double xformOp:rotateZ = nan
            uniform token[] xformOpOrder = ["xformOp:rotateZ"]
            def Cube "Box" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double size = 1
            }
        }
    }
    """))
    (finding,) = validate_usd(str(path))
    assert finding.code == "HYDRO.XFM.001" and finding.prim_path == "/World/Rig/Box"
    assert "/World/Rig.xformOp:rotateZ" in finding.message


@pytest.mark.parametrize("radius,mpu", [("1e30", 1), ("1e-9", 1), ("1e8", 0.01), ("2e4", 1)])
def test_absurd_sizes_are_named(tmp_path, radius, mpu):
    path = scene(tmp_path, radius=radius, mpu=mpu)
    found = only(path, "HYDRO.GEO.002")
    assert [(f.severity, f.prim_path) for f in found] == [(rules.ERROR, "/World/Ball")]
    assert found[0].message.startswith("radius is ") and "m, outside the 1e-06..10000 m" in found[0].message
    refused(path, "HYDRO.GEO.002")


def test_sizes_in_range_pass(tmp_path):
    assert validate_usd(scene(tmp_path, radius="0.001")) == []


def test_a_bad_material_value_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "mat.usda"
    path.write_text(HEADER.format(mpu=1, kpu=1) + textwrap.dedent("""
    def Xform "World"
    {
        def Material "Slime" (prepend apiSchemas = ["PhysicsMaterialAPI", "NewtonMaterialAPI"])
        {
            float physics:staticFriction = -0.5
            float newton:contactStiffness = nan
        }
        def Cube "A" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI", "MaterialBindingAPI"])
        {
            double size = 1
            rel material:binding:physics = </World/Slime>
        }
        def Cube "B" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI", "MaterialBindingAPI"])
        {
            double size = 1
            rel material:binding:physics = </World/Slime>
        }
    }
    """))
    found = validate_usd(str(path))
    assert [(f.code, f.prim_path) for f in found] == [("HYDRO.MAT.001", "/World/Slime")]  # once, however many bind it
    assert "physics:staticFriction must be a finite number >= 0" in found[0].message
    refused(str(path), "HYDRO.MAT.001")


def test_every_finding_names_a_prim_and_an_attribute_or_rule(tmp_path):
    # a scene broken in many ways at once: every finding has a prim path and names what it checks
    path = scene(tmp_path, radius="1e30", translate="(nan, 0, 0)", extra="uniform int newton:sdfMaxResolution = 7")
    found = validate_usd(path)
    assert found and all(f.prim_path.startswith("/") and f.message for f in found)
    for f in found:
        assert str(f).startswith(f"{f.code} {f.severity} {f.prim_path}: ")
    assert len({str(f) for f in found}) == len(found)  # none twice
    assert {f.code for f in found} >= {"HYDRO.XFM.001", "HYDRO.HYD.003"}
