"""Benchmark SDF builds and sampling (CPU). Prints a table; not a test.

    NUMBA_NUM_THREADS=2 python scripts/bench_sdf.py [--repeat 5] [--points 2000000]

Columns: build time (median of --repeat builds, kernels already compiled), fine bricks,
the field's bytes beside dense grids (same format, and float32), and sampling throughput
(million points per second) for random points in the box and for points in grid order.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from hydro.geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Sphere
from hydro.sdf import SDFSettings, build_sdf
from hydro.sdf.sample import SAMPLE_PHI
from hydro.backend import Device, configure_runtime


def ten_k_mesh():
    import trimesh

    tm = trimesh.creation.torus(major_radius=0.08, minor_radius=0.03, major_sections=100, minor_sections=50)
    return Mesh.from_trimesh(tm, name=f"torus ({len(tm.faces)} triangles)")


def median_time(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--points", type=int, default=2_000_000)
    args = ap.parse_args()
    configure_runtime(announce_compiles=True)
    threads = os.environ.get("NUMBA_NUM_THREADS", "all cores")
    print(f"# hydro SDF benchmark — CPU, NUMBA_NUM_THREADS={threads}, median of {args.repeat}")
    shapes = [("sphere r=0.1", Sphere(0.1)), ("box 0.1x0.2x0.3", Box((0.1, 0.2, 0.3))),
              ("capsule r=0.04 h=0.1", Capsule(0.04, 0.1)), ("cylinder r=0.05 h=0.1", Cylinder(0.05, 0.1)),
              ("cone r=0.05 h=0.1", Cone(0.05, 0.1)), ("ellipsoid 0.1,0.06,0.04", Ellipsoid((0.1, 0.06, 0.04)))]
    mesh = ten_k_mesh()
    shapes.append((mesh.name, mesh))
    header = (f"{'shape':<28} {'res':>4} {'build ms':>9} {'fine/total bricks':>18} {'KiB':>9} "
              f"{'% dense same':>12} {'% dense f32':>11} {'Mpts/s rand':>11} {'Mpts/s grid':>11}")
    print(header)
    print("-" * len(header))
    dev = Device("cpu")
    rng = np.random.default_rng(0)
    for name, g in shapes:
        for res in (64, 128):
            settings = SDFSettings(max_resolution=res)
            build_sdf(g, settings)  # compile / warm caches
            repeat = args.repeat if g.kind_name != "mesh" else max(1, args.repeat // 2)
            t_build = median_time(lambda: build_sdf(g, settings), repeat)
            sdf = build_sdf(g, settings)
            m = sdf.memory()
            view = sdf.pack().view(dev)
            pts = rng.uniform(sdf.box_lo, sdf.box_hi, size=(args.points, 3))
            ids = np.zeros(len(pts), dtype=np.int32)
            out = np.empty(len(pts))
            dev.launch(SAMPLE_PHI, len(pts), ids, pts, view, out)
            t_rand = median_time(lambda: dev.launch(SAMPLE_PHI, len(pts), ids, pts, view, out), args.repeat)
            key = np.floor((pts - sdf.box_lo) / sdf.voxel_size).astype(np.int64)
            order = np.lexsort((key[:, 0], key[:, 1], key[:, 2]))
            pts_sorted = np.ascontiguousarray(pts[order])
            t_grid = median_time(lambda: dev.launch(SAMPLE_PHI, len(pts), ids, pts_sorted, view, out),
                                 args.repeat)
            print(f"{name:<28} {res:>4} {t_build * 1e3:>9.1f} {sdf.fine_brick_count:>8d}/{sdf.brick_count:<9d} "
                  f"{m.total_bytes / 1024:>9.1f} {100 * m.total_bytes / m.dense_same_format_bytes:>12.1f} "
                  f"{100 * m.total_bytes / m.dense_float32_bytes:>11.1f} {len(pts) / t_rand / 1e6:>11.1f} "
                  f"{len(pts) / t_grid / 1e6:>11.1f}")
    # memory follows surface area once the band is narrow against the shape
    print()
    print("# narrow band (±5 mm) against a sphere of r = 0.5 m: fine bricks follow the surface")
    for res in (64, 128, 256):
        sdf = build_sdf(Sphere(0.5), SDFSettings(max_resolution=res, narrow_band_inner=-0.005,
                                                narrow_band_outer=0.005))
        m = sdf.memory()
        print(f"sphere r=0.5 res {res:>4}: {sdf.fine_brick_count:>6d} fine of {sdf.brick_count:>7d} bricks, "
              f"{m.total_bytes / 2**20:7.2f} MiB = {100 * m.total_bytes / m.dense_same_format_bytes:5.1f}% of dense "
              f"uint16, {100 * m.total_bytes / m.dense_float32_bytes:5.1f}% of dense float32")


if __name__ == "__main__":
    main()
