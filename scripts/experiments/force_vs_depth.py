"""Force vs penetration for a sphere, a cube and a cylinder on a box, against the closed forms.

    python scripts/experiments/force_vs_depth.py [--quick]

Measures the normal force on the upper shape (unreduced patch, equal stiffness 1e9 N/m³) as the
overlap depth d goes from 0.5 to 20 mm, at SDF resolutions 32, 64 and 128 (``max_resolution`` of
both shapes), for: a sphere R = 0.1 m on a box, a cube of 0.1 m resting flat on a box, and a
cylinder R = 0.1 m, L = 0.2 m lying on its side on a box (closed forms in
:mod:`hydro.tools.analytic`; the cylinder's is derived there). Writes
``out/experiments/force_vs_depth.{csv,png}``: force and relative error vs d per scene and
resolution; prints the largest relative error for d ≥ 5 mm per scene and resolution.
``--quick``: 8 depths, resolutions 32 and 64.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

from hydro.tools.sweep import grid, measure, run_sweep  # noqa: E402

SCENES = ("sphere_on_box", "cube_on_box", "cylinder_on_box")
NAME = "force_vs_depth"


def run(*, resolutions=(32, 64, 128), depths=None, scenes=SCENES, workers=1) -> list:
    """One row per (scene, resolution, depth) with the measured and closed-form force."""
    if depths is None:
        depths = np.round(np.arange(1, 41) * 0.0005, 6)
    settings = grid(scenes, resolution=list(resolutions), depth=[float(d) for d in depths])
    rows = run_sweep(settings, measure, workers=workers)
    keep = ("scene", "resolution", "voxel_size", "depth", "force_z", "exact_force", "force_error", "area",
            "exact_area", "area_error", "triangle_count", "time_ms")
    return [{k: r[k] for k in keep} for r in rows]


def summarize(rows, min_depth=0.005) -> dict:
    """(scene, resolution) → largest |relative force error| over depths ≥ ``min_depth``."""
    out = {}
    for r in rows:
        if r["depth"] >= min_depth - 1e-12:
            key = (r["scene"], r["resolution"])
            out[key] = max(out.get(key, 0.0), abs(r["force_error"]))
    return out


def plot(rows, path):
    plt = _common.pyplot()
    if plt is None:
        return None
    scenes = list(dict.fromkeys(r["scene"] for r in rows))
    resolutions = sorted({r["resolution"] for r in rows})
    fig, axes = plt.subplots(2, len(scenes), figsize=(4.2 * len(scenes), 7), squeeze=False)
    for j, scene in enumerate(scenes):
        sub = [r for r in rows if r["scene"] == scene]
        ax, ex = axes[0, j], axes[1, j]
        ref = sorted({(r["depth"], r["exact_force"]) for r in sub})
        ax.plot([d * 1e3 for d, _ in ref], [f for _, f in ref], "k-", lw=1.5, label="closed form")
        for res in resolutions:
            s = sorted((r for r in sub if r["resolution"] == res), key=lambda r: r["depth"])
            d = [r["depth"] * 1e3 for r in s]
            ax.plot(d, [r["force_z"] for r in s], "o", ms=3, label=f"{res}")
            ex.plot(d, [100 * r["force_error"] for r in s], "o-", ms=3, lw=0.8, label=f"{res}")
        ax.set_title(scene.replace("_", " "))
        ax.set_xlabel("depth d (mm)")
        ax.set_ylabel("normal force (N)")
        ax.legend(title="resolution", fontsize=8)
        ex.axhline(0, color="k", lw=0.5)
        ex.set_xlabel("depth d (mm)")
        ex.set_ylabel("force error (%)")
    return _common.save(fig, path)


def main(argv=None):
    args = _common.parse_args(__doc__, argv)
    if args.quick:
        rows = run(resolutions=(32, 64), depths=np.arange(1, 9) * 0.0025)
    else:
        rows = run()
    csv = _common.write_csv(rows, os.path.join(args.out, NAME + ".csv"))
    png = plot(rows, os.path.join(args.out, NAME + ".png"))
    summary = summarize(rows)
    lines = ["largest |force error| for d >= 5 mm:"]
    lines += [f"  {scene:<16} res {res:>4}: {100 * e:6.2f} %" for (scene, res), e in sorted(summary.items())]
    _common.report(NAME, [csv, png], lines)
    return rows


if __name__ == "__main__":
    main()
