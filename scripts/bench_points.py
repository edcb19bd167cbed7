"""The default contact path (point contacts) against MuJoCo's collision detection, same scenes.

Used by ``scripts/bench_collide.py`` (its point-contact rows); run alone with

    NUMBA_NUM_THREADS=2 python scripts/bench_points.py [--repeat 7] [--max-boxes 4096]

Scenes, each built twice — a hydro Model (no shape hydroelastic: every pair takes the point
path) and the equivalent MJCF (a plane geom and one free body per shape): N boxes of 0.1 m
resting 2 mm deep on a ground plane (N = 1, 256, 4096; 4 contacts each), and a pile of 1000
mixed primitives (boxes, spheres, capsules, cylinders, ellipsoids, seeded) in a loose heap on
the plane. hydro: the median wall time of ``PointContactPipeline.collide`` (broad phase, narrow
phase, compaction, download to NumPy). MuJoCo: the median of ``mj_collision`` after one
``mj_kinematics`` (broad and narrow phase into ``d.contact``), single-threaded.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from hydro.geometry import Box, Capsule, Cylinder, Ellipsoid, Plane, Sphere
from hydro.scene.model import ModelBuilder

BOX = 0.1


def _grid(n, spacing=0.2):
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    return np.stack([(i % side - (side - 1) / 2) * spacing, (i // side - (side - 1) / 2) * spacing], axis=1)


def boxes_on_plane(n, depth=0.002):
    """[(kind, size tuple, position)] of n boxes resting ``depth`` into the plane z = 0."""
    return [("box", (BOX, BOX, BOX), (x, y, BOX / 2 - depth)) for x, y in _grid(n)]


def mixed_pile(n, seed=0):
    """n mixed primitives in a loose heap on the plane (some touching, some the plane)."""
    rng = np.random.default_rng(seed)
    side = max(1.0, 0.06 * np.sqrt(n))
    out = []
    kinds = ("box", "sphere", "capsule", "cylinder", "ellipsoid")
    for k in range(n):
        kind = kinds[k % len(kinds)]
        x, y = rng.uniform(-side, side, 2)
        z = rng.uniform(0.02, 0.3)
        if kind == "box":
            size = tuple(rng.uniform(0.04, 0.1, 3))
        elif kind == "sphere":
            size = (rng.uniform(0.02, 0.05),)
        elif kind == "ellipsoid":
            size = tuple(rng.uniform(0.02, 0.05, 3))
        else:
            size = (rng.uniform(0.015, 0.03), rng.uniform(0.03, 0.08))  # radius, cylinder/segment length
        out.append((kind, size, (x, y, z)))
    return out


def hydro_model(shapes):
    b = ModelBuilder()
    b.add_shape("/World/Ground", Plane())
    for i, (kind, size, pos) in enumerate(shapes):
        g = {"box": lambda s: Box(s), "sphere": lambda s: Sphere(s[0]), "capsule": lambda s: Capsule(s[0], s[1]),
             "cylinder": lambda s: Cylinder(s[0], s[1]), "ellipsoid": lambda s: Ellipsoid(s)}[kind](size)
        body = b.add_body(f"/World/B{i}", (*pos, 0, 0, 0, 1), density=500.0)
        b.add_shape(f"/World/B{i}/c", g, body=body)
    return b.finalize(build_sdfs=False)


def mjcf(shapes):
    """The same scene in MJCF (sizes are half-sizes in MuJoCo; a capsule/cylinder's second size is
    its half-length)."""
    geoms = []
    for i, (kind, size, pos) in enumerate(shapes):
        if kind == "box":
            s = " ".join(f"{0.5 * v:.6g}" for v in size)
        elif kind in ("capsule", "cylinder"):
            s = f"{size[0]:.6g} {0.5 * size[1]:.6g}"
        else:
            s = " ".join(f"{v:.6g}" for v in size)
        geoms.append(f'<body pos="{pos[0]:.6g} {pos[1]:.6g} {pos[2]:.6g}"><freejoint/>'
                     f'<geom type="{kind}" size="{s}" density="500"/></body>')
    return ('<mujoco><option timestep="0.002"/><size nconmax="200000" njmax="1"/><worldbody>'
            '<geom type="plane" size="0 0 1"/>' + "".join(geoms) + "</worldbody></mujoco>")


def time_hydro(shapes, repeat, device="cpu"):
    from hydro.contact.point_pipeline import PointContactPipeline

    model = hydro_model(shapes)
    pipe = PointContactPipeline(model, device=device)
    poses = model.shape_world_poses()
    for _ in range(2):
        c, *_ = pipe.collide(poses)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        c, *_ = pipe.collide(poses)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3, len(c)


def thread_ratio(shapes, repeat, device="cpu"):
    """Wall time at all Numba threads over that at one (a new pipeline, timed interleaved)."""
    import numba

    from _timing import median_ms_by_threads
    from hydro.contact.point_pipeline import PointContactPipeline

    n = numba.config.NUMBA_NUM_THREADS
    if device != "cpu" or n == 1:
        return None
    model = hydro_model(shapes)
    low = {}
    ms = median_ms_by_threads(PointContactPipeline(model, device=device), model.shape_world_poses(),
                              max(repeat, 30), (1, n), rounds=max(repeat, 30), low=low)
    return ms[n] / ms[1], low[n] / low[1]


def time_mujoco(shapes, repeat):
    import mujoco

    try:
        m = mujoco.MjModel.from_xml_string(mjcf(shapes))
    except ValueError:  # MuJoCo versions without nconmax/njmax in <size>
        m = mujoco.MjModel.from_xml_string(mjcf(shapes).replace('<size nconmax="200000" njmax="1"/>', ""))
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    for _ in range(2):
        mujoco.mj_collision(m, d)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        mujoco.mj_collision(m, d)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3, int(d.ncon)


def scenes(max_boxes):
    out = [(f"{n} boxes on a plane", boxes_on_plane(n)) for n in (1, 256, 4096) if n <= max_boxes]
    out.append(("pile of 1000 mixed primitives", mixed_pile(1000)))
    return out


def print_table(repeat, max_boxes, device="cpu"):
    print(f"# point contacts vs MuJoCo mj_collision — hydro on {device.upper()}, "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'all cores')}, MuJoCo single-threaded, "
          f"median of {repeat}")
    header = (f"{'scene':<32} {'hydro ms':>9} {'contacts':>8} {'MuJoCo ms':>9} {'contacts':>8} {'hydro/MuJoCo':>12} "
              f"{'NT/1T':>6} {'p20':>5}")
    print(header)
    print("-" * len(header))
    for name, shapes in scenes(max_boxes):
        th, nh = time_hydro(shapes, repeat, device)
        tm, nm = time_mujoco(shapes, repeat)
        ratio = thread_ratio(shapes, repeat, device)
        nt = f"{ratio[0]:>6.2f} {ratio[1]:>5.2f}" if ratio is not None else "     -     -"
        print(f"{name:<32} {th:>9.3f} {nh:>8d} {tm:>9.3f} {nm:>8d} {th / tm:>12.2f} {nt}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--max-boxes", type=int, default=4096)
    args = ap.parse_args()
    print_table(args.repeat, args.max_boxes)


if __name__ == "__main__":
    main()
