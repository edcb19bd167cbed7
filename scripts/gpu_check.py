"""GPU check: CPU/CUDA parity of the contact pipeline and time per collide for 1 … 4096 pairs.

    NUMBA_NUM_THREADS=$(nproc) python scripts/gpu_check.py [--max-pairs 4096] [--repeat 7] [--out gpu_check.md]

Self-contained (imports only hydro, its dependencies and numba). On a machine without a CUDA GPU it says so and
exits 0. With one:

1. Parity: for a few scenes (sphere on box, tilted cube on box, two spheres, 64 boxes on a
   ground, a ring mesh on a box: exact mesh fields, triangles subdivided across the kinks of its
   pressure, cells proven one face plane; two icosphere meshes: the face route's polygons),
   unreduced and reduced, the CPU and CUDA contact tables must have the same number of
   rows and, matched row by row (both devices count → scan → scatter in the same order; rows
   are also sorted by pair and position before comparing, so an order change alone is not a
   failure), every field equal within float32 tolerance (``atol = 1e-5 × the field's largest
   magnitude``, integers and flags exactly). Prints one line per scene and exits 1 on a mismatch.
2. Timing: N boxes of 0.1 m resting 2 mm deep in a static ground (N pairs), N = 1, 4, 16, …,
   ``--max-pairs``: median ms per ``collide`` (kernels compiled, workspace warm, reduction on)
   on CPU and on CUDA, patch triangles, reduced contacts, and the CPU/GPU ratio, as a Markdown
   table with the date, the card and the thread count (also written to ``--out`` if given), ready
   for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

import numpy as np

from hydro.contact.config import HydroelasticConfig
from hydro.geometry import Box, Mesh, Sphere
from hydro.scene.model import ModelBuilder
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.sdf import SDFSettings
from hydro.transforms import quat_from_axis_angle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_collide_ms  # noqa: E402

K = 1e9
SDF = SDFSettings(max_resolution=64)


def _model(lower, lower_pose, upper, upper_pose):
    b = ModelBuilder()
    b.add_shape("/World/Lower", lower, local_pose=lower_pose, hydroelastic=True, stiffness=K, sdf=SDF)
    body = b.add_body("/World/Upper", upper_pose)
    b.add_shape("/World/Upper/Collider", upper, body=body, hydroelastic=True, stiffness=K, sdf=SDF)
    return b.finalize()


def boxes_on_ground(n, depth=0.002):
    """n boxes of 0.1 m on a 0.2 m grid, sunk ``depth`` into a static 1 m thick ground."""
    side = int(np.ceil(np.sqrt(n)))
    extent = side * 0.2 + 0.4
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((extent, extent, 1.0)), local_pose=(0, 0, -0.5, 0, 0, 0, 1),
                hydroelastic=True, stiffness=K, sdf=SDF)
    for i in range(n):
        x = (i % side - (side - 1) / 2) * 0.2
        y = (i // side - (side - 1) / 2) * 0.2
        body = b.add_body(f"/World/Box_{i}", (x, y, 0.05 - depth, 0, 0, 0, 1))
        b.add_shape(f"/World/Box_{i}/Collider", Box((0.1, 0.1, 0.1)), body=body, hydroelastic=True, stiffness=K,
                    sdf=SDF)
    return b.finalize()


def ring_mesh(r_out=0.08, r_in=0.05, height=0.03, n=32):
    """A ring of square cross-section (two n-gons' walls, a flat top and bottom) as a closed mesh."""
    th = 2.0 * np.pi * np.arange(n) / n
    profile = [(r_out, 0.0), (r_out, height), (r_in, height), (r_in, 0.0)]
    verts = np.array([(r * np.cos(t), r * np.sin(t), z) for t in th for r, z in profile])
    faces = []
    for i in range(n):
        for j in range(4):
            a, b = 4 * i + j, 4 * ((i + 1) % n) + j
            c, d = 4 * ((i + 1) % n) + (j + 1) % 4, 4 * i + (j + 1) % 4
            faces += [(a, b, c), (a, c, d)]
    return Mesh(verts, np.array(faces), name="ring")


def parity_scenes():
    tilt = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), 0.05)
    return {
        "sphere on box": _model(Box((0.5, 0.5, 0.2)), (0, 0, -0.1, 0, 0, 0, 1), Sphere(0.1), (0, 0, 0.09, 0, 0, 0, 1)),
        "tilted cube on box": _model(Box((0.4, 0.4, 0.2)), (0, 0, -0.1, 0, 0, 0, 1), Box((0.1, 0.1, 0.1)),
                                     (0, 0, 0.045, *tilt)),
        "two spheres": _model(Sphere(0.1), (0, 0, 0, 0, 0, 0, 1), Sphere(0.1), (0.003, 0.002, 0.19, 0, 0, 0, 1)),
        "64 boxes on ground": boxes_on_ground(64),
        "ring mesh on box": _model(Box((0.5, 0.5, 0.2)), (0, 0, -0.1, 0, 0, 0, 1), ring_mesh(),
                                   (0, 0, -0.002, 0, 0, 0, 1)),
        "two icosphere meshes (face route)": _model(icosphere(), (0, 0, 0, 0, 0, 0, 1), icosphere(),
                                                    (0.003, 0.002, 0.196, *tilt)),
    }


def icosphere(radius=0.1, subdivisions=3):
    """A convex triangle mesh (1,280 triangles at 3): two of them take the face route."""
    import trimesh

    ico = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    return Mesh(np.asarray(ico.vertices), np.asarray(ico.faces), name="icosphere")


def _sorted(table):
    d = table.as_dict()
    pts = d["point"].astype(np.float64)
    order = np.lexsort((np.round(pts[:, 2], 6), np.round(pts[:, 1], 6), np.round(pts[:, 0], 6), d["pair"]))
    return {k: v[order] for k, v in d.items()}


def compare_tables(a, b) -> list:
    """Differences between two contact tables (empty list: equal within float32 tolerance)."""
    if len(a) != len(b):
        return [f"row counts differ: {len(a)} vs {len(b)}"]
    problems = []
    for da, db, how in ((a.as_dict(), b.as_dict(), "in order"), (_sorted(a), _sorted(b), "sorted")):
        bad = []
        for k, va in da.items():
            vb = db[k]
            if va.dtype.kind == "f":
                scale = float(np.abs(va).max()) if len(va) else 1.0
                err = float(np.abs(va.astype(np.float64) - vb.astype(np.float64)).max()) if len(va) else 0.0
                if err > 1e-5 * max(scale, 1e-30):
                    bad.append(f"{k}: max difference {err:.3g} (scale {scale:.3g})")
            elif not np.array_equal(va, vb):
                bad.append(f"{k}: {int((va != vb).sum())} rows differ")
        if not bad:
            return []
        problems.append(f"{how}: " + "; ".join(bad))
    return problems


def parity(device_a="cpu", device_b="cuda", scenes=None) -> bool:
    ok = True
    for name, model in (scenes or parity_scenes()).items():
        poses = model.shape_world_poses(model.state())
        for reduce in (False, True):
            cfg = HydroelasticConfig(reduce_contacts=reduce)
            ra = HydroelasticPipeline(model, cfg, device=device_a).collide(poses)
            rb = HydroelasticPipeline(model, cfg, device=device_b).collide(poses)
            problems = compare_tables(ra.contacts, rb.contacts)
            if ra.counts != rb.counts:
                problems.append(f"stage counts differ: {ra.counts} vs {rb.counts}")
            what = "reduced" if reduce else "unreduced"
            status = "ok" if not problems else "MISMATCH " + " | ".join(problems)
            print(f"parity {name:<20} {what:<9} {len(ra.contacts):>7} contacts: {status}", flush=True)
            ok &= not problems
    return ok


def time_collide(model, device, repeat):
    pipe = HydroelasticPipeline(model, HydroelasticConfig(), device=device)
    poses = model.shape_world_poses(model.state())
    ms, res, _ = median_collide_ms(pipe, poses, repeat)
    return ms, res.counts.get("triangles", 0), len(res.contacts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-pairs", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=None, help="also write the timing table (Markdown) here")
    args = ap.parse_args(argv)
    from hydro.backend import configure_runtime

    configure_runtime(announce_compiles=True)
    from numba import cuda

    import numba

    if not cuda.is_available():
        print("gpu_check: no CUDA GPU on this machine; nothing to check (run it where a GPU is present)")
        return 0
    card = cuda.get_current_device().name
    card = card.decode() if isinstance(card, bytes) else str(card)
    print(f"# gpu_check on {card}", flush=True)
    ok = parity()
    threads = numba.config.NUMBA_NUM_THREADS
    lines = [f"GPU check — {datetime.date.today()}, {card}, CPU {platform.machine()} {os.cpu_count()} cores, "
             f"NUMBA_NUM_THREADS={threads}, median of {args.repeat}; parity: {'ok' if ok else 'MISMATCH'}", "",
             "| pairs | patch triangles | reduced contacts | CPU ms | GPU ms | CPU/GPU |", "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    n = 1
    while n <= args.max_pairs:
        model = boxes_on_ground(n)
        cpu_ms, tri, red = time_collide(model, "cpu", args.repeat)
        gpu_ms, tri_g, red_g = time_collide(model, "cuda", args.repeat)
        note = "" if (tri, red) == (tri_g, red_g) else f" (GPU: {tri_g} triangles, {red_g} contacts)"
        line = f"| {n} | {tri} | {red} | {cpu_ms:.2f} | {gpu_ms:.2f} | {cpu_ms / gpu_ms:.1f}× |{note}"
        print(line, flush=True)
        lines.append(line)
        n *= 4
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
