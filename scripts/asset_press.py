"""Real robot and object meshes pressed into a stiffer box at hydro's DEFAULT settings, against an
independent reference (issue 25: "within 1 % at default settings, or hydro warned that the
resolution cannot carry the patch and said what would").

    NUMBA_NUM_THREADS=2 python scripts/asset_press.py [--cache DIR] [--only TEXT] [--spacing-check]

Each mesh (fetched from a pinned public wheel with ``asset_corpus.fetch``, loaded and checked or
repaired with ``asset_corpus.load_closed``: lengths over 3 units are millimetres) is a body, k =
1e9 N/m³, whose lowest point is pressed 10 % of its z-extent into a static box (top face z = 0,
k = 1000 × 1e9), both hydroelastic, every setting at its default (``SDFSettings()``:
max_resolution 64; ``HydroelasticConfig`` with only the contact reduction off, so the force is the
unreduced patch's, as ``bench_peers.hydro_case``). The force is the sum of the z-forces on the mesh.
The reference is ``bench_peers.asset_reference``: a column quadrature of the interface
k·φ = k_box·z with libigl's winding-number signed distance of the mesh (no hydro code), on a
square lattice of ``REFERENCE_SPACING_VOXELS`` of hydro's voxel (``--spacing-check`` halves it on
every mesh and prints the change).

Every warning hydro gives while the model is built and on the first ``collide`` call is recorded
(the thin-wall ``MeshWarning`` of the SDF build, the patch-resolution
``HydroelasticLimitWarning`` of the first call, …). A row is *ok* when the force is within 1 % of
the reference, or hydro warned. The same press at twice the resolution (max_resolution 128)
shows the convergence, and a row off by more than 1 % that was warned is pressed again at the
largest ``sdfMaxResolution`` its warnings name (up to ``MAX_NAMED``): did the warning say what would
carry it?

``--corpus N`` presses ``asset_corpus``'s pick of N meshes per package instead (with
``--reference-voxels 0.25`` to halve the reference's cost).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import asset_corpus  # noqa: E402
import bench_peers  # noqa: E402

K_MESH = 1e9
BOX_RATIO = 1000.0
PRESS_FRACTION = 0.10
#: the reference's column spacing, in voxels of hydro's default grid of the mesh
REFERENCE_SPACING_VOXELS = 0.125
#: a row off by more than 1 % that was warned is pressed again at the resolution the warnings name,
#: up to this one
MAX_NAMED = 1024

#: (pip requirement, path inside the wheel, what it is): arm links, gripper fingers, pads and jaws,
#: objects (no mug or cup ships in these packages: the kettle and the can stand for them)
ERD = "cmeel.prefix/share/example-robot-data/robots/"  # example-robot-data's robots
MESHES = [
    ("example-robot-data==6.0.0", ERD + "so_arm_description/meshes/so100/Moving_Jaw.stl",
     "SO-100 moving jaw"),
    ("example-robot-data==6.0.0", ERD + "so_arm_description/meshes/so100/Fixed_Jaw.stl",
     "SO-100 fixed jaw"),
    ("example-robot-data==6.0.0",
     ERD + "so_arm_description/meshes/so101/moving_jaw_so101_v1.stl",
     "SO-101 moving jaw"),
    ("robosuite==1.5.2", "robosuite/models/assets/grippers/meshes/xarm7_gripper/left_finger.stl", "xArm7 finger"),
    ("example-robot-data==6.0.0", ERD + "pr2_description/meshes/gripper_v0/l_finger_tip.stl",
     "PR2 finger tip"),
    ("example-robot-data==6.0.0", ERD + "talos_data/meshes/gripper/fingertip_collision.STL",
     "TALOS finger tip (collision)"),
    ("airo-models==0.0.12", "airo_models/grippers/robotiq_2f_85/meshes/collision/robotiq_arg2f_85_inner_finger.obj",
     "Robotiq 2F-85 inner finger (collision)"),
    ("airo-models==0.0.12", "airo_models/grippers/robotiq_2f_85/meshes/visual/robotiq_arg2f_85_pad.obj",
     "Robotiq 2F-85 pad"),
    ("robosuite==1.5.2", "robosuite/models/assets/grippers/meshes/panda_gripper/finger.stl", "Panda finger"),
    ("robosuite==1.5.2", "robosuite/models/assets/bullet_data/panda_description/meshes/collision/link5.stl",
     "Panda link 5 (collision)"),
    ("airo-models==0.0.12", "airo_models/arms/ur5e/collision/wrist2.obj", "UR5e wrist 2 (collision)"),
    ("gymnasium-robotics==1.4.2", "gymnasium_robotics/envs/assets/stls/fetch/shoulder_lift_link_collision.stl",
     "Fetch shoulder lift link (collision)"),
    ("robosuite==1.5.2", "robosuite/models/assets/robots/iiwa/meshes/link_5.stl", "IIWA link 5"),
    ("gymnasium-robotics==1.4.2", "gymnasium_robotics/envs/assets/kitchen_franka/kitchen_assets/meshes/kettle.stl",
     "kitchen kettle"),
    ("robosuite==1.5.2", "robosuite/models/assets/objects/meshes/can.stl", "can"),
    ("robosuite==1.5.2", "robosuite/models/assets/objects/meshes/lemon.stl", "lemon"),
]


def press_shapes(mesh):
    """bench_peers shape specs: the mesh's lowest point PRESS_FRACTION of its z-extent into a static
    box 1000× stiffer (top face z = 0, at least 0.5 m and twice the mesh's footprint wide), and the
    lift applied to the mesh."""
    v = np.asarray(mesh.vertices, dtype=np.float64)
    lo, hi = v.min(axis=0), v.max(axis=0)
    depth = PRESS_FRACTION * float(hi[2] - lo[2])
    lift = np.array([0.0, 0.0, -float(lo[2]) - depth])
    centre = 0.5 * (lo + hi)
    side = max(0.5, 2.0 * float(np.max(hi[:2] - lo[:2])))
    tall = max(0.2, 0.5 * side)  # a box many of its own voxels tall (its grid's voxel follows its longest side)
    box = bench_peers._shape("box", (side, side, tall), (centre[0], centre[1], -0.5 * tall), k=BOX_RATIO * K_MESH,
                             static=True)
    body = bench_peers._shape("mesh", (v, np.asarray(mesh.faces)), lift, k=K_MESH, tets=False)
    return [box, body], lift


def hydro_press(shapes, resolution):
    """(force on the mesh N, the mesh's voxel m, warnings given while building and on the first
    collide: list of (category name, message))."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        case = bench_peers.hydro_case(shapes, resolution)
        case["query"](1)
    res = case["result"]()
    seen, out = set(), []
    for w in caught:
        key = (w.category.__name__, str(w.message))
        if key not in seen:
            seen.add(key)
            out.append(key)
    return res["force"], case["shape_h"][1], out


def named_resolution(caught):
    """The largest sdfMaxResolution the warnings name (None: none names one)."""
    import re

    found = [int(m) for _, message in caught
             for m in re.findall(r"(?:newton:sdfMaxResolution |sdfMaxResolution >= )(\d+)", message)]
    return max(found) if found else None


def short_warning(category, message):
    """A table cell for one warning: its kind and the setting it names."""
    import re

    if "walls thinner" in message:
        thick = re.search(r"down to ([0-9.e+-]+ mm)", message)
        fix = re.search(r"sdfMaxResolution >= (\d+)", message)
        return f"thin walls ({thick.group(1) if thick else '?'}; res ≥ {fix.group(1) if fix else '?'})"
    if "contact patch" in message:
        what = re.search(r"is (.*?) on ", message)
        fix = (re.search(r"newton:sdfMaxResolution (\d+)", message)
               or re.search(r"newton:sdfTargetVoxelSize ([0-9.e+-]+)", message))
        return f"patch {what.group(1).split(' (')[0] if what else ''} (res {fix.group(1) if fix else '?'})"
    return f"{category}: {message[:80]}"


def run_one(requirement, inner, what, cache, spacing_check, spacing_voxels=REFERENCE_SPACING_VOXELS):
    wheel = asset_corpus.fetch(requirement, cache)
    (_, path), = asset_corpus.extract_meshes(wheel, cache, [inner])
    label = f"{requirement.split('==')[0]}:{inner.rsplit('/', 1)[-1]}"
    mesh, row = asset_corpus.load_closed(label, path)
    row.update(what=what, package=requirement)
    if mesh is None:
        return row
    solid = mesh.solid()
    if solid.sign == "winding":  # its triangles include inner ones: libigl's distance is not the solid's
        row.update(status="winding sign", reason="pieces whose union could not be formed: no reference")
        return row
    v = np.asarray(mesh.vertices)
    row["size_mm"] = np.ptp(v, axis=0) * 1e3
    shapes, lift = press_shapes(mesh)
    t0 = time.perf_counter()
    row["force"], row["h"], row["warnings"] = hydro_press(shapes, 64)
    row["hydro_s"] = time.perf_counter() - t0
    row["force2"], row["h2"], row["warnings2"] = hydro_press(shapes, 128)
    spacing = spacing_voxels * row["h"]
    t0 = time.perf_counter()
    row["ref"] = bench_peers.asset_reference(solid.vertices, solid.faces, lift, K_MESH, BOX_RATIO * K_MESH, spacing)
    row["ref_s"] = time.perf_counter() - t0
    row["spacing"] = spacing
    named = named_resolution(row["warnings"])
    if abs(pct(row["force"], row["ref"])) > 1.0 and named and named <= MAX_NAMED:
        force, _, warned = hydro_press(shapes, named)
        row["named"] = (named, force, warned)
    if spacing_check:
        row["ref_half"] = bench_peers.asset_reference(solid.vertices, solid.faces, lift, K_MESH, BOX_RATIO * K_MESH,
                                                      spacing / 2)
    return row


def pct(value, ref):
    """The error in %: 0 when both are 0 (nothing reaches below the box's face in the reference's
    columns nor in hydro), inf when only the reference is 0."""
    if ref > 0:
        return 100.0 * (value / ref - 1.0)
    return 0.0 if value == 0.0 else math.inf


def table(rows, spacing_check):
    head = ["mesh", "package: file", "triangles", "status", "size x × y × z (mm)", "voxel h (mm)",
            "F ref (N)", "hydro F err (64, default)", "warnings (64)", "ok", "F err (128)", "warnings (128)",
            "F err at the resolution named (warnings left)"]
    if spacing_check:
        head.append("ref change at spacing / 2")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["what"], r["mesh"], str(r.get("triangles", "–")), r["status"]
                 + (f" ({r['reason']})" if r.get("reason") and r["status"] == "repaired" else "")]
        if "force" not in r:
            cells += [r.get("reason", "")[:80]] + ["–"] * (len(head) - 5)
        else:
            err = pct(r["force"], r["ref"])
            warned = bool(r["warnings"])
            ok = abs(err) <= 1.0 or warned
            cells += [" × ".join(f"{x:.3g}" for x in r["size_mm"]), f"{r['h'] * 1e3:.3g}", f"{r['ref']:.4g}",
                      f"{err:+.2f} %", "; ".join(short_warning(*w) for w in r["warnings"]) or "none",
                      ("ok" if abs(err) <= 1.0 else "warned") if ok else "**NO**",
                      f"{pct(r['force2'], r['ref']):+.2f} %",
                      "; ".join(short_warning(*w) for w in r["warnings2"]) or "none"]
            if "named" in r:
                res, force, warned = r["named"]
                cells.append(f"{res}: {pct(force, r['ref']):+.2f} % ("
                             + ("; ".join(short_warning(*w) for w in warned) or "none") + ")")
            else:
                cells.append("–")
            if spacing_check:
                cells.append(f"{pct(r['ref_half'], r['ref']):+.3f} %")
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "hydro", "assets"))
    ap.add_argument("--only", metavar="TEXT", help="only the meshes whose file or description contains TEXT")
    ap.add_argument("--spacing-check", action="store_true",
                    help="also run the reference at half its spacing on every mesh (its convergence)")
    ap.add_argument("--corpus", type=int, metavar="N",
                    help="instead of the chosen meshes, asset_corpus's pick of N meshes per package")
    ap.add_argument("--reference-voxels", type=float, default=REFERENCE_SPACING_VOXELS,
                    help="the reference's column spacing in voxels of hydro's grid")
    ap.add_argument("--full-warnings", action="store_true", help="print every warning's whole message")
    args = ap.parse_args(argv)
    from hydro.backend import configure_runtime
    from hydro.sdf import SDFSettings

    configure_runtime(announce_compiles=True)
    default = SDFSettings()
    print(f"# meshes pressed {PRESS_FRACTION:.0%} of their height into a {BOX_RATIO:g}× stiffer box — hydro at its "
          f"defaults (SDFSettings(): max_resolution {default.max_resolution}), k = {K_MESH:g} N/m³; reference: "
          f"libigl column quadrature at {args.reference_voxels:g} voxel; NUMBA_NUM_THREADS="
          f"{os.environ.get('NUMBA_NUM_THREADS', 'all')}", flush=True)
    rows = []
    meshes = MESHES
    if args.corpus:
        meshes = [(requirement, inner, inner.rsplit("/", 1)[-1])
                  for requirement, _ in asset_corpus.PACKAGES
                  for inner, _ in asset_corpus.pick_meshes(asset_corpus.fetch(requirement, args.cache), args.cache,
                                                           args.corpus)]
    for requirement, inner, what in meshes:
        if args.only and args.only not in inner and args.only not in what:
            continue
        try:
            row = run_one(requirement, inner, what, args.cache, args.spacing_check, args.reference_voxels)
        except Exception as exc:  # the table must say so; nothing may crash silently
            row = {"mesh": inner.rsplit('/', 1)[-1], "what": what, "status": "CRASH",
                   "reason": f"{type(exc).__name__}: {exc}"[:80]}
        rows.append(row)
        if "force" in row:
            print(f"# {what}: hydro {row['force']:.6g} N (128: {row['force2']:.6g}), reference {row['ref']:.6g} N "
                  f"({pct(row['force'], row['ref']):+.2f} %), h {row['h'] * 1e3:.3g} mm, "
                  f"hydro {row['hydro_s']:.1f} s, reference {row['ref_s']:.1f} s, warnings {len(row['warnings'])}",
                  flush=True)
            if args.full_warnings:
                for category, message in row["warnings"] + row["warnings2"]:
                    print(f"#   {category}: {message}")
        else:
            print(f"# {what}: {row['status']} {row.get('reason', '')}", flush=True)
    print()
    print(table(rows, args.spacing_check))
    pressed = [r for r in rows if "force" in r]
    bad = [r for r in pressed if abs(pct(r["force"], r["ref"])) > 1.0 and not r["warnings"]]
    print()
    within = sum(abs(pct(r["force"], r["ref"])) <= 1.0 for r in pressed)
    print(f"meshes {len(rows)}: pressed {len(pressed)}, within 1 % {within}, "
          f"warned {sum(bool(r['warnings']) for r in pressed)}, off by more than 1 % without a warning {len(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
