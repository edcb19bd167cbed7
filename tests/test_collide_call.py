"""The collide call's fixed cost (issue 26): the contact table made when read, the empty scene,
the deep-overlap test inside the compiled call, and the rule that picks threads by measured work."""

import contextlib
import math
import os
import pickle
import tracemalloc
import warnings

import numba
import numpy as np
import pytest

from hydro.contact.collision import CollisionPipeline
from hydro.contact.config import HydroelasticConfig
from hydro.contact.deep_overlap import HydroelasticLimitWarning
from hydro.contact.contacts import (CF_AREA, CF_COUNT, CF_DEPTH, CF_FORCE, CF_NORMAL, CF_POINT, CF_PRESSURE,
                                    CF_STIFFNESS, CF_WEIGHT, CI_ENV, CI_PAIR, CI_SHAPE_A, CI_SHAPE_B,
                                    CI_SPECULATIVE, PackedContacts)
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.contact.threads import ThreadChoice, call_work, spare_cores
from hydro.errors import InputError
from hydro.contact.types import CONTACT_FIELDS, Contacts
from hydro.contact.workspace import Buffer
from hydro.geometry import Box, Sphere
from pipeline_util import pose, shapes

K = 1e9
NO_REDUCE = HydroelasticConfig(reduce_contacts=False)


def eager_table(f, i, shape_friction):
    """The table as it was built before it became lazy: every column at once (the reference)."""
    n = len(f)
    c = Contacts(point=f[:, CF_POINT:CF_POINT + 3].copy(), normal=f[:, CF_NORMAL:CF_NORMAL + 3].copy(),
                 area=f[:, CF_AREA].copy(), depth=f[:, CF_DEPTH].copy(), pressure=f[:, CF_PRESSURE].copy(),
                 force=f[:, CF_FORCE].copy(), stiffness=f[:, CF_STIFFNESS].copy(), weight=f[:, CF_WEIGHT].copy(),
                 shape_a=i[:, CI_SHAPE_A].copy(), shape_b=i[:, CI_SHAPE_B].copy(), env=i[:, CI_ENV].copy(),
                 pair=i[:, CI_PAIR].copy(), speculative=i[:, CI_SPECULATIVE] != 0, kind=np.zeros(n, np.int32),
                 damping=np.zeros(n, np.float32))
    c.set_pair_materials(shape_friction)
    return c


def assert_same_table(got, want):
    assert len(got) == len(want)
    for name in CONTACT_FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name


def cube_on_box(z):
    m = shapes([Box((0.6, 0.6, 0.2)), Box((0.2, 0.2, 0.2))])
    return m, np.array([pose((0, 0, -0.1)), pose((0, 0, z))])


def test_the_table_made_when_read_equals_the_eager_one():
    rng = np.random.default_rng(26)
    n = 37
    f = rng.normal(size=(n, CF_COUNT)).astype(np.float32)
    i = np.stack([rng.integers(0, 4, n), rng.integers(0, 4, n), rng.integers(-1, 2, n), np.sort(rng.integers(0, 9, n)),
                  rng.integers(0, 2, n)], axis=1).astype(np.int32)
    friction = rng.uniform(0.1, 1.0, size=(4, 2))
    want = eager_table(f, i, friction)
    lazy = PackedContacts(f.copy(), i.copy(), friction)
    assert isinstance(lazy, Contacts) and len(lazy) == n
    assert "force" not in vars(lazy)  # nothing made yet
    assert_same_table(lazy, want)
    # a column read in any order, assigned, or changed in place behaves as on a plain table
    lazy = PackedContacts(f.copy(), i.copy(), friction)
    assert np.array_equal(lazy.static_friction, want.static_friction)
    lazy.force = lazy.force * 2
    lazy.pair += 5
    assert np.array_equal(lazy.force, 2 * want.force) and np.array_equal(lazy.pair, want.pair + 5)
    back = pickle.loads(pickle.dumps(lazy))
    assert np.array_equal(back.force, lazy.force) and np.array_equal(back.normal, want.normal)
    # its methods: selecting, concatenating, force vectors
    sel = lazy.select(lazy.speculative)
    assert len(sel) == int(want.speculative.sum())
    assert np.allclose(PackedContacts(f, i, friction).force_vectors(), want.force_vectors())
    assert len(Contacts.concatenate([PackedContacts(f, i, friction), want])) == 2 * n


@pytest.mark.parametrize("reduce", [False, True])
def test_collide_tables_equal_the_eager_ones_and_survive_the_next_call(reduce):
    m, poses = cube_on_box(0.1 - 0.002)
    pipe = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=reduce))
    res = pipe.collide(poses)
    ws = pipe.workspace
    fb, ib = (ws.reduced_f, ws.reduced_i) if reduce else (ws.contact_f, ws.contact_i)
    n = len(res.contacts)
    assert n > 0
    want = eager_table(fb.array[:n].copy(), ib.array[:n].copy(), pipe.shape_material)
    # a later call (other poses) must not change the first call's table, read or not
    pipe.collide(np.array([pose((0, 0, -0.1)), pose((0.01, 0, 0.1 - 0.004), (1, 0, 0), 0.1)]))
    assert_same_table(res.contacts, want)
    # and the staged path (every stage from Python) gives the same table
    staged = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=reduce), stage_timings=True).collide(poses)
    assert_same_table(staged.contacts, want)
    assert res.counts == {k: v for k, v in staged.counts.items()}
    assert set(res.timings_ms) == {"stages", "download", "deep_overlap"}


def cube_on_box_model(z):
    """The cube on the box as a Model (what CollisionPipeline takes)."""
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings

    b = ModelBuilder()
    sdf = SDFSettings(max_resolution=64)
    b.add_shape("/World/Box", Box((0.6, 0.6, 0.2)), local_pose=(0, 0, -0.1, 0, 0, 0, 1), hydroelastic=True,
                stiffness=K, sdf=sdf)
    body = b.add_body("/World/Cube", (0, 0, z, 0, 0, 0, 1))
    b.add_shape("/World/Cube/Collider", Box((0.2, 0.2, 0.2)), body=body, hydroelastic=True, stiffness=K, sdf=sdf)
    m = b.finalize()
    return m, m.shape_world_poses(m.state())


def test_an_empty_scene_returns_an_empty_table_and_allocates_no_buffer():
    m, poses = cube_on_box_model(0.5)  # 0.4 m above the box: no pair (even of grid boxes)
    for pipe in (HydroelasticPipeline(m), CollisionPipeline(m)):
        pipe.collide(poses)
        hyd = pipe if isinstance(pipe, HydroelasticPipeline) else pipe.hydroelastic
        before = {k: id(v) for k, v in hyd.workspace.buffers().items()}
        generation = Buffer.generation
        tracemalloc.start()
        res = pipe.collide(poses)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 16384, peak  # the result's few small objects, no array of any size
        assert Buffer.generation == generation
        assert {k: id(v) for k, v in hyd.workspace.buffers().items()} == before
        assert len(res.contacts) == 0 and len(res.patch) == 0
        assert res.pair_shape_a.shape == res.pair_shape_b.shape == res.pair_kind.shape == (0,)
        assert res.counts["pairs"] == 0 and res.counts["deep_overlap"] == 0
        for name in CONTACT_FIELDS:
            assert len(getattr(res.contacts, name)) == 0


def test_the_deep_overlap_test_in_the_compiled_call_finds_the_deep_pair():
    # a sphere sunk to its centre in a box: the compiled call flags the pair and the fallback adds
    # its contact, as the staged path does; lifted out, neither looks
    m = shapes([Box((0.5, 0.5, 0.2)), Sphere(0.05)])
    for z, deep in ((-0.06, True), (0.05 - 0.002, False)):
        poses = np.array([pose((0, 0, -0.1)), pose((0, 0, z))])
        with pytest.warns(HydroelasticLimitWarning) if deep else contextlib.nullcontext():
            got = HydroelasticPipeline(m).collide(poses)
        with pytest.warns(HydroelasticLimitWarning) if deep else contextlib.nullcontext():
            want = HydroelasticPipeline(m, stage_timings=True).collide(poses)
        assert got.counts["deep_overlap"] == want.counts["deep_overlap"] == int(deep)
        assert_same_table(got.contacts, want.contacts)


def _deep_tests(pipe, model, poses):
    """(the bounds test, the compiled call's test) on every pair of ``poses``' shapes."""
    from hydro.contact.deep_overlap import _any_deep_candidate, _any_may_be_deep

    d = pipe.deep_overlap
    n = len(poses)
    a, b = (np.array(v, dtype=np.int32) for v in zip(*[(i, j) for i in range(n) for j in range(i + 1, n)]))
    args = (np.ascontiguousarray(poses, dtype=float), a, b, d.center, d.inradius, d.lo, d.hi, d.margin)
    return (_any_may_be_deep(*args),
            _any_deep_candidate(*args, np.asarray(model.shape_sdf, dtype=np.int32), model.sdf_pack.view()))


def test_the_compiled_deep_overlap_test_asks_for_no_fallback_when_centres_are_only_near_bounds():
    # a small sphere pressed 2 mm into a large one along its bounds' diagonal: its centre lies in
    # the large sphere's bounding box (the bounds test trips) but far outside the sphere itself
    m = shapes([Sphere(0.1), Sphere(0.05)])
    direction = np.ones(3) / math.sqrt(3.0)
    poses = np.array([pose((0, 0, 0)), pose(tuple((0.15 - 0.002) * direction))])
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    assert _deep_tests(pipe, m, poses) == (True, False)
    res = pipe.collide(poses)
    assert len(res.contacts) > 0 and res.counts["deep_overlap"] == 0 and res.timings_ms["deep_overlap"] == 0.0


def test_the_compiled_deep_overlap_test_flags_every_pair_the_fallback_would_take():
    # random poses of a box, a sphere and a mesh, many near deep overlap: wherever the host's
    # fallback (given an empty patch, so that any positive F_fallback counts) makes a contact,
    # the compiled call's test must have flagged the call
    from hydro.geometry import Mesh
    import trimesh

    ico = trimesh.creation.icosphere(subdivisions=2, radius=0.06)
    geos = [Box((0.3, 0.2, 0.1)), Sphere(0.05), Mesh(np.asarray(ico.vertices), np.asarray(ico.faces))]
    m = shapes(geos, resolution=32)
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    rng = np.random.default_rng(25)
    flagged = taken = 0
    for _ in range(300):
        poses = np.array([pose(tuple(rng.uniform(-0.12, 0.12, 3)), tuple(rng.normal(size=3)), rng.uniform(0, 6.3))
                          for _ in geos])
        bounds, compiled = _deep_tests(pipe, m, poses)
        a, b = zip(*[(i, j) for i in range(3) for j in range(i + 1, 3)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HydroelasticLimitWarning)
            extra = pipe.deep_overlap.contacts(poses, np.array(a), np.array(b), Contacts.empty(0))
        if extra is not None:
            assert compiled, poses
            taken += 1
        assert bounds or not compiled  # never flagged where the bounds test would not be
        flagged += compiled
    assert taken > 20 and flagged < 300  # both kinds of poses were met


# ---------------------------------------------------------------------------------------------
# The thread-count rule (synthetic timings: no threads are started)


def always(*counts):
    return True


def free(own):  # a machine with cores to spare
    return 4.0


def run_calls(choice, n, serial_s, threaded_s, counts=(1, 0, 2000, 6000), threads=2):
    """Feed ``choice`` ``n`` calls whose wall time is ``serial_s`` or ``threaded_s`` by the mode it
    picked (callables of the call number); the modes it ran, in order."""
    modes = []
    threaded = False
    for k in range(n):
        modes.append(threaded)
        seconds = threaded_s(k) if threaded else serial_s(k)
        threaded = choice.record(threaded, seconds, *counts, threads=threads)
    return modes


def test_threads_are_chosen_when_measured_faster_and_the_serial_mode_is_probed_now_and_then():
    choice = ThreadChoice(always, spare=free)
    modes = run_calls(choice, 400, lambda k: 1e-3, lambda k: 0.6e-3)
    assert modes[:3] == [False, True, True]  # the serial call measured, then a probe of two threaded ones
    assert sum(modes[10:]) / len(modes[10:]) > 0.95  # threads from then on, but for rare serial probes
    assert not all(modes[10:])


def test_threads_that_lose_are_tried_ever_more_rarely():
    choice = ThreadChoice(always, spare=free)
    modes = run_calls(choice, 2000, lambda k: 1e-3, lambda k: 1.5e-3)
    tried = np.flatnonzero(modes)
    assert len(tried) < 0.02 * len(modes)  # probes of two calls, 128 calls apart at last: < 2 %
    gaps = np.diff(tried)
    assert gaps.max() == choice.probe_max + 1
    # within the 5 % margin threads are not worth it either
    choice = ThreadChoice(always, spare=free)
    assert sum(run_calls(choice, 2000, lambda k: 1e-3, lambda k: 0.97e-3)) < 0.02 * 2000
    # one of the two probe calls losing is enough to stay serial
    choice = ThreadChoice(always, spare=free)
    assert sum(run_calls(choice, 2000, lambda k: 1e-3, lambda k: 0.5e-3 if k % 2 else 2e-3)) < 0.02 * 2000


def test_the_choice_follows_a_machine_that_gets_busy_and_quiet_again():
    choice = ThreadChoice(always, spare=free)
    busy = lambda k: 2e-3 if 200 <= k < 600 else 0.6e-3  # noqa: E731 (threads slow while busy)
    modes = np.array(run_calls(choice, 1200, lambda k: 1e-3, busy))
    assert modes[100:200].mean() > 0.9
    assert modes[210:600].mean() < 0.05  # back to serial within a few calls of the load
    assert modes[600 + choice.probe_max + 2:].mean() > 0.95  # threaded again once a probe finds it quiet


def test_no_threads_without_a_spare_core():
    choice = ThreadChoice(always, spare=lambda own: 1.0)  # other processes hold the other core
    assert not any(run_calls(choice, 200, lambda k: 1e-3, lambda k: 0.3e-3))
    # this process' own threads are not counted as others' load
    seen = []
    choice = ThreadChoice(always, spare=lambda own: seen.append(own) or 2.0)
    run_calls(choice, 50, lambda k: 1e-3, lambda k: 0.5e-3)
    assert seen and all(1.0 <= own <= 2.0 for own in seen)
    assert 0.0 <= spare_cores(1.0) <= (os.cpu_count() or 1)


def test_small_calls_and_one_thread_stay_serial_and_untimed_calls_do_not_count():
    gate = lambda pairs, bricks, blocks, triangles: triangles >= 4096  # noqa: E731
    choice = ThreadChoice(gate, spare=free)
    assert not any(run_calls(choice, 50, lambda k: 1e-3, lambda k: 1e-6, counts=(1, 0, 100, 630)))
    assert not any(run_calls(choice, 50, lambda k: 1e-3, lambda k: 1e-6, threads=1))
    assert not choice.rates[True] and not choice.rates[False]
    # a compile (untimed) is not a measurement: the threaded mode is tried again, then timed
    assert choice.record(False, 1e-3, 1, 0, 2000, 6000, threads=2) is True
    assert choice.record(True, 5.0, 1, 0, 2000, 6000, threads=2, timed=False) is True
    assert not choice.rates[True]
    assert choice.record(True, 0.5e-3, 1, 0, 2000, 6000, threads=2) is True
    assert call_work(1, 0, 2000, 6000) > call_work(1, 0, 100, 630)


def test_calls_at_one_thread_leave_the_plan_for_when_threads_are_back():
    choice = ThreadChoice(always, spare=free)
    run_calls(choice, 50, lambda k: 1e-3, lambda k: 0.5e-3)
    assert choice.preferred and choice.resume()
    assert not any(run_calls(choice, 10, lambda k: 1e-3, lambda k: 0.5e-3, threads=1))
    assert choice.resume()  # threads again on the next call with two


def test_thread_mode_forces_one_or_the_other():
    m, poses = cube_on_box(0.1 - 0.002)
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    with pytest.raises(InputError, match="thread_mode"):
        pipe.thread_mode = "two"
    pipe.thread_mode = "serial"
    pipe.collide(poses)
    assert pipe.next_build[0] is False
    pipe.thread_mode = "threaded"
    assert pipe.next_build[0] is (numba.get_num_threads() > 1)


def test_the_pipeline_starts_threads_only_for_a_big_call():
    m, poses = cube_on_box(0.1 - 0.002)
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    for _ in range(3):
        pipe.collide(poses)
        assert pipe.next_build == (False, pipe.polygons, False)
    assert not pipe.thread_choice.rates[True] and not pipe.thread_choice.rates[False]
