"""Real meshes from public Python packages through hydro: accepted, repaired or refused, and how well.

    NUMBA_NUM_THREADS=2 python scripts/asset_corpus.py [--per-package 20] [--cache DIR] [--markdown]

Fetches a few public packages that ship robot and object meshes (``pip download --no-deps``, pinned
versions, into ``--cache``, default ``~/.cache/hydro/assets``; nothing is installed), picks up to
``--per-package`` OBJ/STL files from each (sorted, evenly spaced, duplicates by content skipped,
files over 3 MB skipped) and runs every one through:

1. ``Mesh.load`` and the solid check (welding, closedness, pieces merged): *accepted*; or, for a
   mesh that is not closed, ``hydro mesh repair`` (accepted only if the surface moves by at most a
   voxel): *repaired*; else *refused* with the reason, which must name a fix.
2. the SDF build at resolution 64 (time of a second build, kernels compiled);
3. the sign check: 2000 random points in the SDF box and 2000 points 0.5–3 voxels off the surface,
   the field's sign against the winding number of the mesh *as given* (direct summation over
   every triangle: no tree, no welding, nothing shared with the field); wrong-sign samples more
   than one voxel from the surface are counted (must be 0), and those closer for information;
4. a press onto a ground box: the mesh (as authored, hydroelastic, k = 1e9 N/m³ for both) lowered
   until its lowest point is 2 mm into the box; the force beside k_eff × overlap volume (the
   overlap volume from slicing the solid; k_eff = k/2). A ratio near 1 is expected for a thin
   overlap.

Meshes longer than 3 units are taken to be in millimetres (scaled by 0.001) so that the press
is physical; the table says which. Prints a table (``--markdown`` for docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import re
import subprocess
import sys
import time
import warnings
import zipfile

import numpy as np

PACKAGES = [  # (pip requirement, what it ships)
    ("gymnasium-robotics==1.4.2", "Shadow/Adroit hand, Fetch, Franka kitchen (STL)"),
    ("airo-models==0.0.12", "UR arms, grippers, cameras (OBJ/STL)"),
    ("example-robot-data==6.0.0", "Talos, Solo, UR, Panda, … (STL/OBJ)"),
    ("robosuite==1.5.2", "Panda, Sawyer, IIWA, grippers, objects (STL/OBJ)"),
]
MAX_FILE_BYTES = 3_000_000
PRESS_DEPTH = 2e-3
STIFFNESS = 1e9


def fetch(requirement: str, cache: str) -> str:
    """The wheel of ``requirement`` in ``cache`` (downloaded once with pip)."""
    name = requirement.split("==")[0].replace("-", "_")
    found = glob.glob(os.path.join(cache, f"{name}-*.whl"))
    if not found:
        os.makedirs(cache, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", cache, requirement],
                       check=True)
        found = glob.glob(os.path.join(cache, f"{name}-*.whl"))
    return sorted(found)[-1]


def wheel_license(wheel: str) -> str:
    with zipfile.ZipFile(wheel) as z:
        meta = [n for n in z.namelist() if n.endswith("METADATA")]
        if not meta:
            return "?"
        for line in z.read(meta[0]).decode("utf-8", "replace").splitlines():
            if line.startswith("License-Expression:") or line.startswith("License:"):
                return line.split(":", 1)[1].strip()[:40]
            if line.startswith("Classifier: License ::"):
                return line.rsplit("::", 1)[1].strip()[:40]
        files = [n for n in z.namelist() if ".dist-info/licenses/LICENSE" in n or n.endswith(".dist-info/LICENSE")]
        if files:
            return z.read(files[0]).decode("utf-8", "replace").strip().splitlines()[0][:40]
    return "?"


def pick_meshes(wheel: str, cache: str, count: int) -> list:
    """Up to ``count`` mesh files of the wheel, extracted under ``cache``: (path inside, file)."""
    with zipfile.ZipFile(wheel) as z:
        infos = sorted((i for i in z.infolist() if i.filename.lower().endswith((".stl", ".obj"))
                        and 0 < i.file_size <= MAX_FILE_BYTES), key=lambda i: i.filename)
        seen, unique = set(), []
        for i in infos:
            digest = hashlib.sha1(z.read(i)).hexdigest()
            if digest not in seen:
                seen.add(digest)
                unique.append(i)
        step = max(1, len(unique) / max(count, 1))
        chosen = [unique[int(k * step)].filename for k in range(min(count, len(unique)))]
    return extract_meshes(wheel, cache, chosen)


def extract_meshes(wheel: str, cache: str, names) -> list:
    """The files ``names`` (paths inside the wheel) extracted under ``cache``: (path inside, file)."""
    out_dir = os.path.join(cache, os.path.basename(wheel)[:-4])
    with zipfile.ZipFile(wheel) as z:
        for name in names:
            z.extract(name, out_dir)
    return [(name, os.path.join(out_dir, name)) for name in names]


def sign_check(mesh, sdf, rng):
    """(wrong beyond one voxel, wrong within one voxel, points) against the exact winding number."""
    import trimesh

    from hydro.geometry.mesh_distance import MeshDistance
    from hydro.geometry.mesh_winding import winding_number_exact

    h = sdf.voxel_size
    box = rng.uniform(sdf.box_lo, sdf.box_hi, size=(2000, 3))
    tm = mesh.to_trimesh()
    surf, face = trimesh.sample.sample_surface(tm, 2000, seed=int(rng.integers(1 << 31)))
    normals = tm.face_normals[face]
    offset = rng.uniform(0.5, 3.0, len(surf)) * h * rng.choice([-1.0, 1.0], len(surf))
    near = surf + normals * offset[:, None]
    pts = np.concatenate([box, near])
    pts = pts[np.all((pts >= sdf.box_lo) & (pts <= sdf.box_hi), axis=1)]
    inside = winding_number_exact(mesh.vertices[mesh.faces], pts) > 0.5
    dist = MeshDistance(mesh, sign="unsigned").signed_distance(pts)
    wrong = (sdf.sample(pts) < 0.0) != inside
    return int(np.sum(wrong & (dist > h))), int(np.sum(wrong & (dist <= h))), len(pts)


def volume_below(vertices, faces, z0):
    """Volume of the closed solid (vertices, faces) below the plane z = z0: every triangle clipped to
    z <= z0, summed as tetrahedra with their apex on the plane (the cut's cap lies in the plane and
    adds nothing), exact."""
    o = np.array([0.0, 0.0, z0])
    tri = vertices[faces] - o
    z = tri[:, :, 2]
    below = np.all(z <= 0.0, axis=1)
    t = tri[below]
    volume = float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum())
    for k in np.nonzero(~below & np.any(z < 0.0, axis=1))[0]:
        poly = []
        for i in range(3):  # Sutherland–Hodgman against z <= 0
            p, q = tri[k, i], tri[k, (i + 1) % 3]
            if p[2] <= 0.0:
                poly.append(p)
            if (p[2] < 0.0) != (q[2] < 0.0) and p[2] != q[2]:
                poly.append(p + (q - p) * (p[2] / (p[2] - q[2])))
        for j in range(1, len(poly) - 1):
            volume += float(np.dot(poly[0], np.cross(poly[j], poly[j + 1])))
    return volume / 6.0


def press(mesh, sdf_settings):
    """(force N, k_eff × overlap volume N) with the mesh's lowest point PRESS_DEPTH into a ground box."""
    from hydro.contact.pipeline import HydroelasticPipeline
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder

    solid = mesh.solid()
    lo, hi = mesh.local_aabb()
    size = hi - lo
    center = 0.5 * (lo + hi)
    b = ModelBuilder()
    footprint = (float(size[0]) + 0.1, float(size[1]) + 0.1, 0.1)
    b.add_shape("/World/Ground", Box(footprint), local_pose=[center[0], center[1], -0.05, 0, 0, 0, 1],
                hydroelastic=True, stiffness=STIFFNESS)
    body = b.add_body("/World/Part", [0.0, 0.0, -PRESS_DEPTH - float(lo[2]), 0, 0, 0, 1])
    b.add_shape("/World/Part/Mesh", mesh, body=body, hydroelastic=True, stiffness=STIFFNESS, sdf=sdf_settings)
    model = b.finalize()
    pipe = HydroelasticPipeline(model)
    result = pipe.collide(model.shape_world_poses(model.state()))
    force = float(np.linalg.norm(result.contacts.force_vectors().sum(axis=0))) if len(result.contacts) else 0.0
    volume = volume_below(solid.vertices, solid.faces, float(lo[2]) + PRESS_DEPTH)
    return force, 0.5 * STIFFNESS * volume


def load_closed(label, path):
    """(mesh or None, row): the file at ``path`` loaded (lengths over 3 units read as millimetres)
    and its solid checked (*accepted*), else repaired (*repaired*, when the repair moves the
    surface by at most a voxel at resolution 64), else None (*refused*, with the reason)."""
    from hydro.errors import InputError
    from hydro.geometry import Mesh
    from hydro.geometry.mesh_repair import repair_mesh

    row = {"mesh": label}
    try:
        raw = Mesh.load(path)
    except InputError as exc:
        row.update(status="refused", reason=str(exc))
        return None, row
    longest = float(np.max(np.ptp(raw.vertices, axis=0)))
    scale = 0.001 if longest > 3.0 else 1.0
    mesh = Mesh(raw.vertices * scale, raw.faces, name=label) if scale != 1.0 else Mesh(raw.vertices, raw.faces, name=label)
    row.update(triangles=len(mesh.faces), units="mm" if scale != 1.0 else "m")
    try:
        mesh.solid()
        row["status"] = "accepted"
    except InputError as exc:
        fixed, report = repair_mesh(mesh)
        if report.accepted:
            mesh = Mesh(fixed.vertices, fixed.faces, name=label)
            mesh.solid()
            row.update(status="repaired", reason=f"moved {max(report.displacement, report.coverage) * 1e3:.3g} mm")
        else:
            message = str(exc)
            found = re.search(r"it has (.*?)\. A hydroelastic", message)
            row.update(status="refused", reason=(found.group(1) if found else message)
                       + f"; repair refused: {report.reason().split(':')[0]}",
                       fix_named="Fix:" in message, repair=report.reason())
            return None, row
    return mesh, row


def run_one(label, path, rng):
    from hydro.geometry import Mesh
    from hydro.sdf import SDFSettings, build_sdf

    mesh, row = load_closed(label, path)
    if mesh is None:
        return row
    solid = mesh.solid()
    row.update(shells=solid.shells, merged=solid.merged, welded=f"{solid.weld.vertices_in}->{solid.weld.vertices_out}",
               winding=solid.sign == "winding")
    settings = SDFSettings(max_resolution=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_sdf(mesh, settings)  # compile / warm
        m2 = Mesh(mesh.vertices, mesh.faces, name=label)  # a fresh mesh: the solid is rebuilt too
        t0 = time.perf_counter()
        sdf = build_sdf(m2, settings)
        row["build_s"] = time.perf_counter() - t0
        far, near, n = sign_check(mesh, sdf, rng)
        row.update(wrong_far=far, wrong_near=near, points=n)
        force, expected = press(mesh, settings)
    row.update(force=force, expected=expected)
    return row


def fmt(row, markdown):
    cells = [row["mesh"][-58:], str(row.get("triangles", "-")), row.get("units", "-"), row.get("welded", "-"),
             str(row.get("shells", "-")) + ("*" if row.get("merged") else "") + (" w" if row.get("winding") else ""),
             row["status"]]
    if row["status"] in ("refused", "CRASH"):
        cells.append(row.get("reason", "")[:110] + ("" if row.get("fix_named", True) else " (NO FIX NAMED)"))
        cells += ["-"] * 3
    else:
        cells.append(row.get("reason", ""))
        cells.append(f"{row['wrong_far']} / {row['wrong_near']} of {row['points']}")
        cells.append(f"{row['build_s']:.2f}")
        ratio = row["force"] / row["expected"] if row["expected"] > 0 else float("nan")
        cells.append(f"{row['force']:.4g} / {row['expected']:.4g} = {ratio:.3f}")
    if markdown:
        return "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"
    return "  ".join(cells)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-package", type=int, default=20)
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "hydro", "assets"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from hydro.backend import configure_runtime

    configure_runtime(announce_compiles=True)
    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"# hydro asset corpus — CPU, NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'all')}, "
          f"resolution 64, press {PRESS_DEPTH * 1e3:g} mm, k = {STIFFNESS:g} N/m³ both")
    for requirement, what in PACKAGES:
        wheel = fetch(requirement, args.cache)
        print(f"# {requirement} ({wheel_license(wheel)}): {what}", flush=True)
        for inner, path in pick_meshes(wheel, args.cache, args.per_package):
            label = f"{requirement.split('==')[0]}:{inner.split('/', 1)[-1]}"
            try:
                row = run_one(label, path, rng)
            except Exception as exc:  # the table must say so; nothing may crash silently
                row = {"mesh": label, "status": "CRASH", "reason": f"{type(exc).__name__}: {exc}"[:80]}
            rows.append(row)
            print(fmt(row, args.markdown), flush=True)
    head = ["mesh", "triangles", "units", "welded vertices", "shells (*merged, w: winding sign)", "status", "note",
            "wrong sign >1 voxel / <=1 voxel", "build s", "force N / k_eff·V N = ratio"]
    print()
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(head))
    for row in rows:
        print(fmt(row, args.markdown))
    ok = [r for r in rows if r["status"] in ("accepted", "repaired") and "wrong_far" in r]
    small = [r["build_s"] for r in ok if r.get("triangles", 0) <= 20000]
    print()
    print(f"meshes {len(rows)}: accepted {sum(r['status'] == 'accepted' for r in rows)}, repaired "
          f"{sum(r['status'] == 'repaired' for r in rows)}, refused {sum(r['status'] == 'refused' for r in rows)}, "
          f"crashed {sum(r['status'] == 'CRASH' for r in rows)}")
    print(f"wrong-sign samples more than one voxel from the surface: {sum(r['wrong_far'] for r in ok)} "
          f"(within one voxel: {sum(r['wrong_near'] for r in ok)}) over {sum(r['points'] for r in ok)} points")
    print(f"refused without a fix named: {sum(1 for r in rows if r['status'] == 'refused' and not r.get('fix_named', True))}")
    if small:
        print(f"build time at resolution 64, meshes <= 20k triangles ({len(small)}): median {np.median(small):.2f} s, "
              f"max {np.max(small):.2f} s")
    ratios = [r["force"] / r["expected"] for r in ok if r["expected"] > 0]
    if ratios:
        print(f"force / (k_eff · overlap volume) at {PRESS_DEPTH * 1e3:g} mm: median {np.median(ratios):.3f}, "
              f"range {np.min(ratios):.3f} .. {np.max(ratios):.3f}")


if __name__ == "__main__":
    main()
