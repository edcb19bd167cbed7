"""A fuzz suite (issue 16): random poses, sizes, stiffness ratios, margins, resolutions and
malformed scenes through validate → load → collide → a few steps.

Invariants: no exception other than hydro's documented errors (:class:`hydro.errors.HydroError`,
whose bad-input kinds are ``ValueError``), no NaN in the outputs, forces >= 0 along their normals,
force continuous in depth, nothing written on failure.

Hypothesis runs derandomized (the same examples on every run, so CI is reproducible) without an
example database; the example counts keep the file under two minutes on a 2-core machine with a
warm kernel cache. ``HYPOTHESIS_FUZZ_EXAMPLES=N`` scales them for a longer local hunt.
"""

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from hostile_util import HEADER, box_on_ground
from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.errors import HydroError, SceneError
from hydro.geometry import Box, Sphere
from pipeline_util import pose, shapes

# random poses overlap deeply on purpose: the fallback's warning (docs/limits.md) is expected here
pytestmark = pytest.mark.filterwarnings("ignore::hydro.contact.deep_overlap.HydroelasticLimitWarning")

SCALE = float(os.environ.get("HYPOTHESIS_FUZZ_EXAMPLES", "1"))


def fuzz_settings(examples):
    return settings(max_examples=max(1, int(examples * SCALE)), derandomize=True, database=None, deadline=None,
                    print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def check_contacts(contacts):
    """The table's invariants: finite, forces >= 0 along unit normals from A to B."""
    for name in ("point", "normal", "area", "depth", "pressure", "force", "stiffness"):
        col = np.asarray(getattr(contacts, name), dtype=float)
        assert np.all(np.isfinite(col)), f"non-finite {name}"
    n = len(contacts.force)
    if n == 0:
        return
    assert np.all(contacts.force >= 0)
    assert np.allclose(np.linalg.norm(contacts.normal.astype(float), axis=1), 1.0, atol=1e-3)
    along = np.einsum("ij,ij->i", contacts.force_vectors().astype(float), contacts.normal.astype(float))
    assert np.all(along >= -1e-6 * max(1.0, float(np.abs(along).max())))
    assert np.all(contacts.area >= 0)


# ---------------------------------------------------------------------------------------------
# the pipeline on its own: random shapes, sizes, stiffnesses, margins, resolutions and poses

geometry = st.one_of(
    st.builds(lambda r: Sphere(r), st.floats(0.01, 0.3)),
    st.builds(lambda x, y, z: Box((x, y, z)), st.floats(0.01, 0.4), st.floats(0.01, 0.4), st.floats(0.01, 0.4)),
)
unit_axis = st.tuples(st.floats(-1, 1), st.floats(0, 2 * math.pi)).map(
    lambda zt: (math.sqrt(1 - zt[0] ** 2) * math.cos(zt[1]), math.sqrt(1 - zt[0] ** 2) * math.sin(zt[1]), zt[0]))


@fuzz_settings(300)
@given(a=geometry, b=geometry, k=st.floats(1e4, 1e10), ratio=st.floats(1e-3, 1e3),
       margin=st.sampled_from([0.0, 0.001, 0.005]), resolution=st.sampled_from([8, 16, 24]),
       offset=st.tuples(st.floats(-0.3, 0.3), st.floats(-0.3, 0.3), st.floats(-0.3, 0.3)),
       axis=unit_axis, angle=st.floats(-math.pi, math.pi))
def test_random_pairs_give_finite_nonnegative_contacts(a, b, k, ratio, margin, resolution, offset, axis, angle):
    m = shapes([a, b], stiffness=[k, k * ratio], resolution=resolution, margin=[margin, 0.0])
    poses = np.array([pose((0, 0, 0)), pose(offset, axis, angle)])
    result = HydroelasticPipeline(m).collide(poses)
    check_contacts(result.contacts)
    assert not result.overflow
    f = result.contacts.force_vectors().astype(float)
    for s in result.pair_summaries():  # each pair's net force is the sum of its rows
        assert np.all(np.isfinite(s.net_force)) and np.all(np.isfinite(s.net_torque))
        rows = (result.contacts.shape_a == s.shape_a) & (result.contacts.shape_b == s.shape_b)
        np.testing.assert_allclose(s.net_force, f[rows].sum(axis=0), rtol=1e-4, atol=1e-9 * k)


@fuzz_settings(100)
@given(R=st.floats(0.03, 0.2), k=st.floats(1e5, 1e9), ratio=st.floats(0.1, 10.0),
       frac=st.floats(0.02, 0.4), resolution=st.sampled_from([16, 24]))
def test_force_is_continuous_and_grows_with_depth(R, k, ratio, frac, resolution):
    """A sphere pressed into a box: the force grows with the depth, without jumps bigger than the
    stiffness times the sphere's cross-section times the change in depth (plus a voxel's worth)."""
    m = shapes([Box((1.0, 1.0, 0.4)), Sphere(R)], stiffness=[k, k * ratio], resolution=resolution)
    pipe = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False))
    h = max(s.voxel_size for s in m.sdfs)
    depths = R * frac + np.array([0.0, 0.1, 0.2, 0.3]) * h

    def force(d):
        res = pipe.collide(np.array([pose((0, 0, -0.2)), pose((0, 0, R - d))]))
        check_contacts(res.contacts)
        return float(res.contacts.force_vectors().astype(float).sum(axis=0)[2])

    forces = np.array([force(d) for d in depths])
    k_max = max(k, k * ratio)
    bound = k_max * math.pi * R * R * (depths[1] - depths[0] + h)
    assert np.all(forces > 0), forces
    assert np.all(np.abs(np.diff(forces)) <= bound), (forces, bound)
    assert forces[-1] >= forces[0] * 0.95, forces  # deeper never pushes (much) less


# ---------------------------------------------------------------------------------------------
# scenes: malformed and extreme values through validate → load → collide → steps → outputs

HOSTILE_NUMBERS = ["0", "-1", "-0.0", "nan", "inf", "-inf", "1e308", "1e-30", "1e30"]


def maybe(strategy, hostile=HOSTILE_NUMBERS, weight=4):
    """Mostly a plausible value (``weight`` to 1); sometimes a hostile one (as text)."""
    return st.tuples(st.sampled_from([False] * weight + [True]), strategy, st.sampled_from(hostile)).map(
        lambda t: t[2] if t[0] else repr(t[1]))


EXTRA_PRIMS = [
    "",
    """
    def Sphere "Neg" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = -1
    }""",
    """
    def Sphere "NanPose" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.05
        double3 xformOp:translate = (nan, 0, 1)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }""",
    """
    def Sphere "Big" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        custom bool newton:hydroelasticEnabled = 1
        custom int newton:sdfMaxResolution = 100000
        double radius = 0.05
        double3 xformOp:translate = (0.3, 0.3, 0.2)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }""",
    """
    def Sphere "TinyVoxels" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        custom bool newton:hydroelasticEnabled = 1
        custom float newton:sdfTargetVoxelSize = 1e-6
        double radius = 0.05
        double3 xformOp:translate = (0.3, 0.3, 0.2)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }""",
    """
    def Xform "NotARigidBody" (prepend apiSchemas = ["PhysicsMassAPI"])
    {
        float physics:mass = -3
    }""",
]


@st.composite
def scene_text(draw):
    text = box_on_ground(
        box=draw(st.sampled_from([0.1, 0.05, 0.2])),
        depth=draw(st.floats(-0.01, 0.02)),
        stiffness=draw(st.floats(1e4, 1e7)),
        resolution=draw(st.sampled_from([8, 16])),
        mpu=draw(maybe(st.sampled_from([1.0, 0.01]), weight=8)),
        kpu=draw(maybe(st.sampled_from([1.0, 0.001]), weight=8)),
        extra=draw(st.sampled_from([""] * 6 + EXTRA_PRIMS[1:])),
    )
    # rewrite one authored number into something hostile (or leave the scene alone)
    targets = ["physics:density = 1000", "double size = 0.1", "double size = 0.05", "double size = 0.2",
               "physics:gravityMagnitude = 9.81", "newton:sdfMaxResolution = 16", "newton:sdfMaxResolution = 8"]
    target = draw(st.sampled_from([None] * 7 + targets))
    if target is not None and target in text:
        key = target.split(" = ")[0]
        text = text.replace(target, f"{key} = {draw(st.sampled_from(HOSTILE_NUMBERS + ['-5', '7']))}", 1)
    if draw(st.integers(0, 14)) == 0:  # a truncated file
        text = text[: draw(st.integers(len(HEADER), len(text) - 1))]
    return text


@fuzz_settings(250)
@given(text=scene_text())
@example(text=box_on_ground(resolution=8))
@example(text=box_on_ground(resolution=8, mpu="0"))
@example(text=box_on_ground(resolution=8, kpu="-1"))
@example(text=box_on_ground(resolution=8, mpu="1e308"))  # found by this suite: OverflowError converting density
@example(text=box_on_ground(resolution=8, kpu="1e-300"))
@example(text=box_on_ground(resolution=8)[:200])  # found by this suite: a plain ValueError for a truncated file
def test_malformed_scenes_fail_with_hydro_errors_and_write_nothing(text, tmp_path_factory):
    from hydro.scene.usd_io import load_usd, validate_usd
    from hydro.scene.validate import ERROR
    from hydro.sim.simulation import Simulation
    from hydro.tools.run import run_scene

    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "scene.usda"
    path.write_text(text)
    out = folder / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scene warnings are fine; only exceptions matter here
        try:
            findings = validate_usd(str(path))
        except HydroError:
            findings = None  # a file that cannot be read is refused as such
            event("refused: unreadable")
        try:
            model = load_usd(str(path))
        except HydroError as exc:
            if findings is not None and any(f.severity == ERROR for f in findings):
                assert isinstance(exc, SceneError) and exc.findings, exc
                event("refused: scene findings")
            return  # refused, with a documented error: that's all this scene can show
        assert findings is not None and not any(f.severity == ERROR for f in findings), \
            "load_usd accepted a scene validate_usd refuses"
        # collide at the authored poses
        try:
            pipe = HydroelasticPipeline(model)
            result = pipe.collide(model.shape_world_poses(model.state()))
        except HydroError as exc:
            event(f"refused by collide: {type(exc).__name__}")
            return
        check_contacts(result.contacts)
        # a few steps, and the outputs of hydro run: whole, or nothing at all
        try:
            sim = Simulation(model, dt=1e-3)
        except HydroError as exc:
            event(f"refused by Simulation: {type(exc).__name__}")
            return
        if sim.substeps > 50:
            event("collided; too stiff to step")
            return  # stiff enough to need many sub-steps: the fuzz budget is for breadth
        try:
            files = run_scene(str(path), steps=3, dt=1e-3, out_dir=str(out), stream=open(os.devnull, "w"),
                              log=lambda *a: None)
        except HydroError as exc:
            assert not out.exists(), "a failed run wrote files"
            event(f"refused by run_scene: {type(exc).__name__}")
            return
    event("stepped and wrote")
    assert sorted(os.listdir(out)) == ["forces.png", "sensors.npz", "trajectories.npz"]
    traj = np.load(files["trajectories"])
    assert np.all(np.isfinite(traj["body_q"])) and np.all(np.isfinite(traj["body_qd"]))
    sens = np.load(files["sensors"])
    assert np.all(np.isfinite(sens["net_forces_w"]))


@pytest.fixture(autouse=True)
def _no_leaked_outputs():
    """Nothing is written outside the test's own folders (``out/`` in the working tree)."""
    before = os.path.exists("out") and sorted(os.listdir("out"))
    yield
    assert (os.path.exists("out") and sorted(os.listdir("out"))) == before
