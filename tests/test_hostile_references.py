"""Hostile USD, third round (issue 27): references across units, time-sampled values and broken
point instancers. Each family is fuzzed (derandomized Hypothesis, small example counts) so it stays
fixed; the rules are docs/usd.md's."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pxr")

from cli_util import hydro
from hostile_util import referencing_stage, unit_asset
from hydro.errors import SceneError
from hydro.scene.usd_io import load_usd, validate_usd

FUZZ = dict(derandomize=True, database=None, deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_usd(path, build_sdfs=False)


def _codes(path):
    return [f.code for f in validate_usd(path)]


# ---------------------------------------------------------------------------------------------
# references across units: an asset's values are in its own layer's units


def test_a_centimetre_asset_in_a_metre_stage_keeps_its_size_and_mass(tmp_path):
    # the case: a 5 cm ball authored in centimetres loaded as 5 m (and 523,599 kg)
    (tmp_path / "ball.usda").write_text(unit_asset(mpu=0.01, radius=5.0, density=0.001))  # 0.001 kg/cm³
    stage = tmp_path / "stage.usda"
    stage.write_text(referencing_stage("ball.usda", mpu=1.0, translate=(0.0, 0.0, 2.0)))
    m = _load(str(stage))
    assert m.shape_geometry[0].radius == pytest.approx(0.05, rel=1e-12)
    assert m.body_mass[0] == pytest.approx(1000.0 * 4.0 / 3.0 * math.pi * 0.05**3, rel=1e-6)  # 1000 kg/m³
    assert m.shape_margin[0] == pytest.approx(0.005, rel=1e-6)  # 0.5 cm
    np.testing.assert_allclose(m.body_q0[0, :3], [0.01, 0.02, 2.03], atol=1e-12)  # (1, 2, 3) cm from (0, 0, 2) m
    assert not [c for c in _codes(str(stage)) if not c.startswith("HYDRO.HYD")]


@settings(max_examples=12, **FUZZ)
@given(asset_mpu=st.sampled_from([0.001, 0.01, 0.0254, 1.0, 100.0]),
       asset_kpu=st.sampled_from([0.001, 1.0, 1000.0]), asset_up=st.sampled_from(["Y", "Z"]),
       stage_mpu=st.sampled_from([0.01, 1.0]), stage_up=st.sampled_from(["Y", "Z"]),
       instanceable=st.booleans())
def test_a_referenced_asset_loads_as_it_does_alone(tmp_path, asset_mpu, asset_kpu, asset_up, stage_mpu, stage_up,
                                                    instanceable):
    # per layer: the referenced asset equals the asset opened on its own, moved by the reference's
    # translate (a scale inside the referencing prim, as Omniverse's metrics assembler corrects it)
    radius = 0.05 / asset_mpu  # a 5 cm ball in every unit
    (tmp_path / "asset.usda").write_text(unit_asset(mpu=asset_mpu, kpu=asset_kpu, up=asset_up, radius=radius,
                                                    offset=(0.1 / asset_mpu, 0.2 / asset_mpu, 0.3 / asset_mpu),
                                                    density=1000.0 * asset_mpu**3 / asset_kpu,
                                                    margin=0.001 / asset_mpu))
    alone = _load(str(tmp_path / "asset.usda"))
    stage = tmp_path / "stage.usda"
    shift = (2.0 / stage_mpu, 0.0, 0.0)
    stage.write_text(referencing_stage("asset.usda", mpu=stage_mpu, up=stage_up, translate=shift,
                                       instanceable=instanceable))
    m = _load(str(stage))
    assert m.shape_geometry[0].radius == pytest.approx(alone.shape_geometry[0].radius, rel=1e-9)
    assert m.shape_geometry[0].radius == pytest.approx(0.05, rel=1e-6)
    assert m.body_mass[0] == pytest.approx(alone.body_mass[0], rel=1e-6)
    assert m.body_mass[0] == pytest.approx(1000.0 * 4.0 / 3.0 * math.pi * 0.05**3, rel=1e-5)
    assert m.shape_margin[0] == pytest.approx(alone.shape_margin[0], rel=1e-6)
    np.testing.assert_allclose(m.body_inertia[0], alone.body_inertia[0], rtol=1e-6, atol=1e-12)
    offset = np.array([2.0, 0.0, 0.0])  # the stage's translate in hydro's world (+X is +X for both up axes)
    ours, theirs = m.shape_world_poses(m.state())[0], alone.shape_world_poses(alone.state())[0]
    np.testing.assert_allclose(ours[:3], theirs[:3] + offset, atol=1e-9)
    assert abs(abs(float(np.dot(ours[3:], theirs[3:]))) - 1.0) < 1e-9


ROOT_OPS = """#usda 1.0
(
    defaultPrim = "Thing"
    metersPerUnit = 0.01
    upAxis = "Z"
)
def Xform "Thing" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
{
    double3 xformOp:translate = (0, 0, 10)
    float xformOp:rotateX = 30
    uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateX"]
    def Sphere "Ball" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 5
        double3 xformOp:translate = (0, 3, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
}
"""


def test_each_op_of_the_referencing_prim_is_in_the_units_of_the_layer_that_authored_it(tmp_path):
    # the asset root's own 10 cm offset and 30° turn, placed by the stage 1 m along x
    (tmp_path / "asset.usda").write_text(ROOT_OPS)
    stage = tmp_path / "stage.usda"
    stage.write_text(referencing_stage("asset.usda", translate=(1.0, 0.0, 0.0)).replace(
        'double3 xformOp:translate = (1.0, 0.0, 0.0)\n        uniform token[] xformOpOrder = ["xformOp:translate"]',
        'double3 xformOp:translate:place = (1.0, 0.0, 0.0)\n        uniform token[] xformOpOrder = '
        '["xformOp:translate:place", "xformOp:translate", "xformOp:rotateX"]'))
    assert "translate:place" in stage.read_text()
    alone, m = _load(str(tmp_path / "asset.usda")), _load(str(stage))
    ours, theirs = m.shape_world_poses(m.state())[0], alone.shape_world_poses(alone.state())[0]
    np.testing.assert_allclose(ours[:3], theirs[:3] + [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(theirs[:3], [0.0, 0.03 * math.cos(math.radians(30)),
                                            0.1 + 0.03 * math.sin(math.radians(30))], atol=1e-9)
    np.testing.assert_allclose(ours[3:], theirs[3:], atol=1e-12)


def test_a_referenced_layer_with_unusable_units_is_a_finding_on_the_referencing_prim(tmp_path):
    (tmp_path / "asset.usda").write_text(unit_asset(mpu=0.0))
    stage = tmp_path / "stage.usda"
    stage.write_text(referencing_stage("asset.usda"))
    found = [f for f in validate_usd(str(stage)) if f.code == "HYDRO.STG.001"]
    assert len(found) == 1 and found[0].prim_path == "/World/A" and "metersPerUnit = 0.0" in found[0].message
    with pytest.raises(SceneError, match="HYDRO.STG.001"):
        load_usd(str(stage), build_sdfs=False)


@pytest.mark.parametrize("reference, words", [
    ("@./missing.usda@", "Could not open asset"), ("@./asset.usda@</Nothing>", "/Nothing"),
])
def test_a_reference_usd_cannot_compose_is_an_error_not_a_missing_asset(tmp_path, reference, words):
    (tmp_path / "asset.usda").write_text(unit_asset())
    stage = tmp_path / "stage.usda"
    stage.write_text(referencing_stage("asset.usda").replace("@./asset.usda@", reference))
    (f,) = [f for f in validate_usd(str(stage)) if f.code == "HYDRO.USD.006"]
    assert f.severity == "ERROR" and f.prim_path == "/World/A" and words in f.message
    proc = hydro("validate", str(stage))
    assert proc.returncode == 1 and "HYDRO.USD.006" in proc.stdout
    assert "Warning" not in proc.stderr  # USD's own warning lines are the finding now


# ---------------------------------------------------------------------------------------------
# time samples: read at the stage's start time code

SAMPLED = """#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
    {start}
)
def Xform "World"
{{
    def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {{
        double size = 1
        double3 xformOp:translate = (0, 0, -0.5)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }}
    def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {{
        {default}
        double3 xformOp:translate.timeSamples = {{ {samples} }}
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Sphere "C" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {{
            double radius = 0.1
        }}
    }}
}}
"""


def _sampled(tmp_path, samples, *, start=None, default=None):
    text = SAMPLED.format(start="" if start is None else f"startTimeCode = {start!r}",
                          default="" if default is None else f"double3 xformOp:translate = (0, 0, {default!r})",
                          samples=", ".join(f"{t!r}: (0, 0, {z!r})" for t, z in samples))
    path = tmp_path / "sampled.usda"
    path.write_text(text)
    return str(path)


def test_a_pose_authored_only_as_time_samples_is_read_at_the_start_time_code(tmp_path):
    # the case: read as the identity (the ball inside the ground, a 982 N fallback)
    path = _sampled(tmp_path, [(0.0, 0.0999), (50.0, 3.0)])
    m = _load(path)
    assert m.body_q0[0, 2] == pytest.approx(0.0999)
    found = [f for f in validate_usd(path) if f.code == "HYDRO.USD.004"]
    assert len(found) == 1 and found[0].prim_path == "/World/Ball" and "start time code 0" in found[0].message


def test_a_default_beside_samples_is_named_and_not_used(tmp_path):
    path = _sampled(tmp_path, [(10.0, 0.5)], start=10.0, default=7.0)
    assert _load(path).body_q0[0, 2] == pytest.approx(0.5)
    (f,) = [f for f in validate_usd(path) if f.code == "HYDRO.USD.004"]
    assert "xformOp:translate" in f.message and "default (0.0, 0.0, 7.0) is not used" in f.message
    assert f.severity == "WARNING"


@settings(max_examples=15, **FUZZ)
@given(times=st.lists(st.integers(-20, 40), min_size=1, max_size=4, unique=True),
       heights=st.lists(st.floats(0.2, 5.0), min_size=4, max_size=4), start=st.one_of(st.none(), st.integers(-30, 50)))
def test_time_samples_are_read_as_usd_resolves_them_at_the_start(tmp_path, times, heights, start):
    times = sorted(float(t) for t in times)
    samples = list(zip(times, heights))
    path = _sampled(tmp_path, samples, start=start)
    t = 0.0 if start is None else float(start)
    expected = float(np.interp(t, times, [z for _, z in samples]))  # held outside, linear between
    assert _load(path).body_q0[0, 2] == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_collide_and_run_read_a_sampled_pose(tmp_path):
    path = _sampled(tmp_path, [(0.0, 0.0999)])
    proc = hydro("collide", path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "deep" not in proc.stderr and "HYDRO.USD.004" in proc.stderr
    import json
    (pair,) = json.loads(proc.stdout)["pairs"]
    assert 0.0 < pair["net_force"][2] < 100.0  # 0.1 mm into the ground, not a 982 N fallback


# ---------------------------------------------------------------------------------------------
# point instancers whose indices or positions do not match

INSTANCER = """#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "World"
{{
    def PointInstancer "Inst"
    {{
        rel prototypes = [{protos}]
        int[] protoIndices = [{indices}]
        point3f[] positions = [{positions}]
        def Xform "P0"
        {{
            def Cube "C" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {{
                double size = 0.1
            }}
        }}
    }}
}}
"""


def _instancer(tmp_path, indices, positions, protos=("</World/Inst/P0>",)):
    path = tmp_path / "inst.usda"
    path.write_text(INSTANCER.format(protos=", ".join(protos), indices=", ".join(map(str, indices)),
                                     positions=", ".join(f"({i}, 0, 0)" for i in range(positions))))
    return str(path)


@pytest.mark.parametrize("indices, positions, protos, words", [
    ([0, 1, 0], 3, ("</World/Inst/P0>",), ["protoIndices names prototype 1", "1 target(s)"]),
    ([0, 0, 0], 2, ("</World/Inst/P0>",), ["positions has 2 value(s) for 3 protoIndices"]),
    ([0, 0], 2, ("</World/Nothing>",), ["prototypes names /World/Nothing, which is not a prim"]),
])
def test_a_broken_instancer_is_a_finding_naming_it(tmp_path, indices, positions, protos, words):
    path = _instancer(tmp_path, indices, positions, protos)
    (f,) = [f for f in validate_usd(path) if f.code == "HYDRO.USD.005"]
    assert f.prim_path == "/World/Inst" and f.severity == "ERROR"
    for w in words:
        assert w in f.message
    with pytest.raises(SceneError, match="HYDRO.USD.005"):
        load_usd(path, build_sdfs=False)
    proc = hydro("validate", path)
    assert proc.returncode == 1 and "internal error" not in proc.stderr and "HYDRO.USD.005" in proc.stdout


@settings(max_examples=20, **FUZZ)
@given(indices=st.lists(st.integers(-2, 3), min_size=1, max_size=6), positions=st.integers(0, 7))
def test_random_instancers_load_or_are_refused_with_a_finding(tmp_path, indices, positions):
    path = _instancer(tmp_path, indices, positions)
    good = all(k == 0 for k in indices) and positions == len(indices)
    if good:
        m = _load(path)
        assert m.shape_count == len(indices)
        np.testing.assert_allclose(m.shape_world_poses(m.state())[:, 0], np.arange(len(indices)), atol=1e-6)
    else:
        with pytest.raises(SceneError) as exc:
            load_usd(path, build_sdfs=False)
        assert [f.code for f in exc.value.findings if f.severity == "ERROR"] == ["HYDRO.USD.005"]
