"""Stiffness ratio: patch location and force as kA/kB varies; continuous vs switched interface.

    python scripts/experiments/stiffness_ratio.py [--quick]

A sphere (R = 0.1 m) pressed d = 10 mm into a box at resolution 64; the box keeps
k_box = 1e9 N/m³ and the sphere gets k_sphere = ratio·k_box for ratios 0.01 … 100 (17 values,
log-spaced). For each ratio and each interface field (``continuous``: f = kA·φA − kB·φB
everywhere; ``switched``: the normalised form inside the overlap, φA − φB outside) it measures
the normal force and the patch's lowest point, against analytic.md's unequal-stiffness
formulas: P = k_eff·π d²·[R − d(ks + 2kb)/(3(ks + kb))] with k_eff = ks·kb/(ks + kb), and the
lowest point at z = −d·ks/(ks + kb) (the softer body takes more of the compression). The
lowest point is measured as the lowest patch-triangle centroid. Writes
``out/experiments/stiffness_ratio.{csv,png}``; prints the largest force error and lowest-point
error (in voxels) per interface, and the largest continuous-vs-switched difference.
``--quick``: 5 ratios.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

from hydro.tools.sweep import grid, measure, run_sweep  # noqa: E402

NAME = "stiffness_ratio"


def run(*, ratios=None, depth=0.01, resolution=64, interfaces=("continuous", "switched"), workers=1) -> list:
    """One row per (interface, ratio): measured vs closed-form force and lowest patch point."""
    if ratios is None:
        ratios = np.logspace(-2, 2, 17)
    settings = grid(("sphere_on_box",), interface=list(interfaces), stiffness_ratio=[float(r) for r in ratios],
                    depth=depth, resolution=resolution)
    rows = run_sweep(settings, measure, workers=workers)
    out = []
    for r in rows:
        out.append({"interface": r["interface"], "stiffness_ratio": r["stiffness_ratio"], "depth": r["depth"],
                    "resolution": r["resolution"], "voxel_size": r["voxel_size"], "force_z": r["force_z"],
                    "exact_force": r["exact_force"], "force_error": r["force_error"], "lowest": r["lowest"],
                    "exact_lowest": r["exact_lowest"],
                    "lowest_error_voxels": (r["lowest"] - r["exact_lowest"]) / r["voxel_size"],
                    "cop_z": r["cop_z"], "area": r["area"], "triangle_count": r["triangle_count"]})
    return out


def summarize(rows) -> dict:
    out = {}
    for iface in dict.fromkeys(r["interface"] for r in rows):
        sub = [r for r in rows if r["interface"] == iface]
        out[iface] = {"max_force_error": max(abs(r["force_error"]) for r in sub),
                      "max_lowest_error_voxels": max(abs(r["lowest_error_voxels"]) for r in sub)}
    cont = {r["stiffness_ratio"]: r for r in rows if r["interface"] == "continuous"}
    sw = {r["stiffness_ratio"]: r for r in rows if r["interface"] == "switched"}
    common = sorted(set(cont) & set(sw))
    if common:
        out["max_relative_difference"] = max(abs(sw[k]["force_z"] / cont[k]["force_z"] - 1) for k in common)
    return out


def plot(rows, path):
    plt = _common.pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.3))
    ref = sorted({(r["stiffness_ratio"], r["exact_force"], r["exact_lowest"]) for r in rows})
    x = [t[0] for t in ref]
    axes[0].loglog(x, [t[1] for t in ref], "k-", label="closed form")
    axes[1].semilogx(x, [t[2] * 1e3 for t in ref], "k-", label="closed form −d·ks/(ks+kb)")
    for i, iface in enumerate(dict.fromkeys(r["interface"] for r in rows)):
        s = sorted((r for r in rows if r["interface"] == iface), key=lambda r: r["stiffness_ratio"])
        xr = [r["stiffness_ratio"] for r in s]
        mk = "o" if i == 0 else "x"
        axes[0].loglog(xr, [r["force_z"] for r in s], mk, label=iface)
        axes[1].semilogx(xr, [r["lowest"] * 1e3 for r in s], mk, label=f"{iface} (lowest centroid)")
        axes[2].semilogx(xr, [100 * r["force_error"] for r in s], mk + "-", lw=0.8, label=iface)
    axes[0].set_ylabel("normal force (N)")
    axes[1].set_ylabel("patch lowest point z (mm)")
    axes[2].set_ylabel("force error vs closed form (%)")
    axes[2].axhline(0, color="k", lw=0.5)
    for ax in axes:
        ax.set_xlabel("k_sphere / k_box")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", lw=0.3)
    fig.suptitle(f"sphere R = 0.1 m on a box, d = {rows[0]['depth'] * 1e3:g} mm, resolution {rows[0]['resolution']}")
    return _common.save(fig, path)


def main(argv=None):
    args = _common.parse_args(__doc__, argv)
    rows = run(ratios=np.logspace(-2, 2, 5)) if args.quick else run()
    csv = _common.write_csv(rows, os.path.join(args.out, NAME + ".csv"))
    png = plot(rows, os.path.join(args.out, NAME + ".png"))
    s = summarize(rows)
    lines = [f"{k:<11} largest |force error| {100 * v['max_force_error']:.2f} %, largest |lowest-point error| "
             f"{v['max_lowest_error_voxels']:.3f} voxels" for k, v in s.items() if isinstance(v, dict)]
    if "max_relative_difference" in s:
        lines.append(f"largest |switched / continuous − 1| in force: {100 * s['max_relative_difference']:.3f} %")
    _common.report(NAME, [csv, png], lines)
    return s


if __name__ == "__main__":
    main()
