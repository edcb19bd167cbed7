"""Benchmark the contact pipeline. Prints a table; not a test.

    NUMBA_NUM_THREADS=2 python scripts/bench_collide.py [--repeat 7] [--max-boxes 4096] [--device cpu|cuda|both]

(OMP_WAIT_POLICY=ACTIVE gives faster parallel launches on a machine with nothing else running;
hydro's default is PASSIVE, see hydro/backend.py.)

First the fixed cost of a call (an empty scene, a cube on a box; ``_timing.fixed_cost_us``). For
each scene: the median time per ``collide`` call (kernels compiled, workspace warm),
unreduced patch triangles and reduced contacts, triangles and contacts per second, the time
of the reduction stage against the unreduced pipeline, peak memory (the pipeline's
workspace plus the largest NumPy allocation during a call, by tracemalloc), and ``NT/1T``: the
wall time at ``NUMBA_NUM_THREADS`` over that at one thread, the same pipeline timed interleaved
call by call (medians; ``p20``: of the 20th percentiles, which a stretch of calls preempted by
other processes moves little). Scenes: the
shipped ones (at their authored poses) and N boxes of 0.1 m resting 2 mm deep in a 1 m thick
ground, N = 1, 16, 256, 4096; then two scaling checks: the same boxes hovering 5 mm above
the ground (pairs that pass the broad phase but do not touch), and a box ten times taller
(more volume, same patch). Last, the default contact path (point contacts) beside MuJoCo's
``mj_collision`` on the same scenes in the same run (:mod:`bench_points`: 1, 256 and 4096
boxes on a plane, a pile of 1000 mixed primitives); ``--no-points`` skips it.
"""

from __future__ import annotations

import argparse
import glob
import os
import tracemalloc

import numpy as np

from hydro.backend import configure_runtime
from hydro.contact.config import HydroelasticConfig
from hydro.geometry import Box
from hydro.scene.model import ModelBuilder
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.sdf import SDFSettings

from _timing import fixed_cost_us, median_collide_ms, median_ms_by_threads  # noqa: E402  (scripts/ on sys.path)

ROOT = os.path.join(os.path.dirname(__file__), "..")


def boxes_on_ground(n, *, depth=0.002, height=0.1, stiffness=1e9):
    """n boxes of 0.1 m on a grid with 0.2 m spacing, sunk ``depth`` into a static 1 m thick ground."""
    side = int(np.ceil(np.sqrt(n)))
    extent = side * 0.2 + 0.4
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((extent, extent, 1.0)), local_pose=(0, 0, -0.5, 0, 0, 0, 1),
                hydroelastic=True, stiffness=stiffness, sdf=SDFSettings(max_resolution=64))
    for i in range(n):
        x = (i % side - (side - 1) / 2) * 0.2
        y = (i // side - (side - 1) / 2) * 0.2
        body = b.add_body(f"/World/Box_{i}", (x, y, height / 2 - depth, 0, 0, 0, 1), density=500.0)
        b.add_shape(f"/World/Box_{i}/Collider", Box((0.1, 0.1, height)), body=body, hydroelastic=True,
                    stiffness=stiffness,
                    sdf=SDFSettings(max_resolution=64, target_voxel_size=0.1 / 56 if height > 0.1 else None))
    return b.finalize()


def workspace_bytes(pipe):
    ws = pipe.workspace
    total = 0
    for v in vars(ws).values():  # the buffers of whole stages (as this column always counted)
        arr = getattr(v, "array", None)
        if arr is not None and hasattr(arr, "nbytes"):
            total += arr.nbytes
    red = ws.reduction
    total += red.groups.nbytes + red.slot_f.nbytes + red.slot_i.nbytes
    return total


def measure(model, device, repeat, reduce=True):
    cfg = HydroelasticConfig(reduce_contacts=reduce)
    pipe = HydroelasticPipeline(model, cfg, device=device)
    poses = model.shape_world_poses(model.state())
    t_ms, res, stage = median_collide_ms(pipe, poses, repeat)
    # memory in a separate call: tracing allocations slows them down
    tracemalloc.start()
    pipe.collide(poses)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return t_ms / 1e3, res, stage, workspace_bytes(pipe) + peak


def thread_ratio(model, device, repeat, reduce=True):
    """Wall time at all Numba threads over that at one, the same pipeline timed interleaved."""
    import numba

    n = numba.config.NUMBA_NUM_THREADS
    if device != "cpu" or n == 1:
        return None
    pipe = HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=reduce), device=device)
    # at least 30 calls each, alternating one by one: below the size gate both counts run the same serial
    # call, and what is measured then is the noise of a shared machine, which needs the samples
    calls = max(repeat, 30)
    low = {}
    ms = median_ms_by_threads(pipe, model.shape_world_poses(model.state()), calls, (1, n), rounds=calls, low=low)
    return ms[n] / ms[1], low[n] / low[1]


def row(name, t, res, stage, mem, unreduced_t=None, ratio=None):
    tri = res.counts.get("triangles", 0)
    red = len(res.contacts)
    reduce_ms = stage.get("reduce", 0.0)
    share = f"{100 * reduce_ms / (unreduced_t * 1e3):5.1f}%" if unreduced_t else "   - "
    nt = f"{ratio[0]:>7.2f} {ratio[1]:>5.2f}" if ratio is not None else "      -     -"
    print(f"{name:<34} {t * 1e3:>10.3f} {tri:>9d} {red:>7d} {tri / t / 1e6:>10.2f} {red / t / 1e6:>9.3f} "
          f"{reduce_ms:>8.3f} {share:>7} {mem / 2**20:>8.1f} {nt}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--max-boxes", type=int, default=4096)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda", "both"])
    ap.add_argument("--no-points", action="store_true", help="skip the point-contact rows (MuJoCo beside them)")
    ap.add_argument("--no-thread-ratio", action="store_true",
                    help="skip the NT/1T column (each scene timed again at one and at all threads, interleaved)")
    args = ap.parse_args()
    configure_runtime(announce_compiles=True)
    from numba import cuda

    devices = ["cpu", "cuda"] if args.device == "both" else [args.device]
    if "cuda" in devices and not cuda.is_available():
        print("# no CUDA GPU here: CPU only")
        devices = ["cpu"]
    from hydro.scene.usd_io import load_usd

    threads = os.environ.get("NUMBA_NUM_THREADS", "all cores")

    for device in devices:
        print(f"# hydro collide benchmark — {device.upper()}, NUMBA_NUM_THREADS={threads}, "
              f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, median of {args.repeat}")
        if device == "cpu":
            costs = fixed_cost_us()
            print("# fixed cost per collide call (1 thread; µs of CPU time / wall): "
                  + "; ".join(f"{scene}, {label}: {c:.1f} / {w:.1f}" for (scene, label), (c, w) in costs.items()))
        header = (f"{'scene':<34} {'ms/call':>10} {'patch tri':>9} {'reduced':>7} {'Mtri/s':>10} {'Mcon/s':>9} "
                  f"{'reduce ms':>8} {'reduce%':>7} {'peak MiB':>8} {'NT/1T':>7} {'p20':>5}")
        print(header)
        print("-" * len(header))
        scenes = [(os.path.basename(p)[:-5], load_usd(p)) for p in sorted(glob.glob(os.path.join(ROOT, "scenes", "*.usda")))]
        # the hydroelastic path's table: the scenes whose every shape is hydroelastic (the plane
        # scenes are the point-contact rows' business)
        scenes = [(name, m) for name, m in scenes if m.shape_hydroelastic.all()]
        n = 1
        while n <= args.max_boxes:
            scenes.append((f"{n} boxes on the ground", boxes_on_ground(n)))
            n *= 16
        for name, model in scenes:
            t_full, res_full, _, _ = measure(model, device, args.repeat, reduce=False)
            t, res, stage, mem = measure(model, device, args.repeat, reduce=True)
            ratio = None if args.no_thread_ratio else thread_ratio(model, device, args.repeat)
            row(name, t, res, stage, mem, unreduced_t=t_full, ratio=ratio)
        print()
        print("# scaling: time follows the patch, not shape volume or pairs that do not touch")
        for name, model in [("256 boxes, touching", boxes_on_ground(256)),
                            ("256 boxes, 5 mm above", boxes_on_ground(256, depth=-0.005)),
                            ("1 box 0.1 m tall", boxes_on_ground(1)),
                            ("1 box 1.0 m tall (same voxel)", boxes_on_ground(1, height=1.0))]:
            t, res, stage, mem = measure(model, device, args.repeat, reduce=True)
            ratio = None if args.no_thread_ratio else thread_ratio(model, device, args.repeat)
            row(name, t, res, stage, mem, ratio=ratio)
        print()
        if not args.no_points:
            from bench_points import print_table

            print_table(args.repeat, args.max_boxes, device)
            print()


if __name__ == "__main__":
    main()
