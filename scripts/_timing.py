"""Shared by the benchmark scripts: how one ``collide`` call is timed."""

import time

import numpy as np


def median_collide_ms(pipe, poses, repeat, *, warmup=2):
    """Median wall time (ms) of ``pipe.collide(poses)`` over ``repeat`` calls after ``warmup``
    calls (kernels compiled, workspace grown); returns ``(ms, last_result, per_stage_medians)``."""
    for _ in range(warmup):
        pipe.collide(poses)
    times = []
    stages = {}
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = pipe.collide(poses)
        times.append(time.perf_counter() - t0)
        for k, v in result.timings_ms.items():
            stages.setdefault(k, []).append(v)
    return float(np.median(times)) * 1e3, result, {k: float(np.median(v)) for k, v in stages.items()}


def median_ms_by_threads(pipe, poses, repeat, threads, *, rounds=5, warmup=2, low=None):
    """Median wall time (ms) of ``pipe.collide(poses)`` at each Numba thread count in ``threads``,
    timed interleaved (``rounds`` rounds of a batch per count, so a busy spell of a shared machine
    falls on all alike) after ``warmup`` calls at each; {threads: ms}. ``low``: a dict that gets
    the 20th percentiles (other processes only add to a call's wall time; on a loaded machine a
    stretch of preempted calls can move one count's median several-fold, the low percentile little)."""
    import numba

    before = numba.get_num_threads()
    times = {n: [] for n in threads}
    per_round = max(1, -(-repeat // rounds))
    try:
        for n in threads:
            numba.set_num_threads(n)
            for _ in range(warmup):
                pipe.collide(poses)
        for r in range(rounds):
            for n in threads[r % len(threads):] + threads[:r % len(threads)]:  # each count first as often
                numba.set_num_threads(n)
                for _ in range(min(per_round, repeat - r * per_round)):
                    t0 = time.perf_counter()
                    pipe.collide(poses)
                    times[n].append(time.perf_counter() - t0)
    finally:
        numba.set_num_threads(before)
    if low is not None:
        low.update({n: float(np.percentile(t, 20)) * 1e3 for n, t in times.items()})
    return {n: float(np.median(t)) * 1e3 for n, t in times.items()}


def fixed_cost_us(repeat=2000):
    """The fixed cost of one ``collide`` call, in µs at one Numba thread: the median CPU time of the
    calling thread (``time.thread_time``) and wall time, on an empty scene (a 0.2 m cube 0.4 m
    above a 0.6 × 0.6 × 0.2 m box: no pair) and with the cube resting 2 mm on the box (one exact
    polygon patch of 80 triangles; the table's force, normal and point read, as a solver would),
    through ``HydroelasticPipeline`` (unreduced) and ``CollisionPipeline`` (the defaults: reduced,
    deep-overlap check). Returns {(scene, pipeline): (cpu µs, wall µs)}."""
    import numba

    from hydro.contact.collision import CollisionPipeline
    from hydro.contact.config import HydroelasticConfig
    from hydro.contact.pipeline import HydroelasticPipeline
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    out = {}
    try:
        for scene, z in (("empty scene", 0.5), ("cube on a box", 0.1 - 0.002)):
            b = ModelBuilder()
            sdf = SDFSettings(max_resolution=64)
            b.add_shape("/World/Box", Box((0.6, 0.6, 0.2)), local_pose=(0, 0, -0.1, 0, 0, 0, 1), hydroelastic=True,
                        stiffness=1e9, sdf=sdf)
            body = b.add_body("/World/Cube", (0, 0, z, 0, 0, 0, 1))
            b.add_shape("/World/Cube/Collider", Box((0.2, 0.2, 0.2)), body=body, hydroelastic=True, stiffness=1e9,
                        sdf=sdf)
            model = b.finalize()
            poses = model.shape_world_poses(model.state())
            for label, pipe in (("HydroelasticPipeline",
                                 HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=False))),
                                ("CollisionPipeline", CollisionPipeline(model))):
                for _ in range(20):
                    pipe.collide(poses)
                cpu, wall = [], []
                for _ in range(repeat):
                    c0 = time.thread_time()
                    t0 = time.perf_counter()
                    c = pipe.collide(poses).contacts
                    c.force, c.normal, c.point  # noqa: B018 (read, as a solver would)
                    wall.append(time.perf_counter() - t0)
                    cpu.append(time.thread_time() - c0)
                out[(scene, label)] = (float(np.median(cpu)) * 1e6, float(np.median(wall)) * 1e6)
    finally:
        numba.set_num_threads(threads)
    return out
