"""Contact reduction: force/torque error and contact count vs the per-pair budget.

    python scripts/experiments/reduction.py [--quick]

Three patches at resolution 64, d = 10 mm: a sphere on a box (round patch), a cube on a box
tilted by 0.05 rad about y (a wedge of pressure: the centre of pressure is off-centre; a box
pair's patch is a few exact polygons, ``flat_polygons``, so budgets above its triangle count keep it
whole), and a cylinder on its side tilted by 0.02 rad (a long, tapered patch). For budgets
``max_contacts_per_pair`` = 8 … 128 the reduced contacts are compared with the unreduced patch
of the same ``collide`` call:

- ``reduced_force_error``: |F_reduced − F_patch| / |F_patch| (force on the upper shape);
- ``reduced_torque_error``: |T_reduced − T_patch| / (|F_patch|·r), torques about the world
  origin, r the patch's force-weighted radius of gyration about its centre of pressure;
- ``tilt_stiffness_error``: Σ c·|r × n|² of the reduced set over that of the patch, minus one
  (c the contacts' stiffness, r from the centre of pressure): how well a penalty solver's
  resistance to rotation is kept — not preserved by construction, unlike force and torque;
- ``contact_count``: contacts kept (at most the budget).

Writes ``out/experiments/reduction.{csv,png}``; prints the errors per scene and budget.
``--quick``: budgets 8, 32, 128.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

from hydro.tools.sweep import Setting, measure, run_sweep  # noqa: E402

NAME = "reduction"
BUDGETS = (8, 12, 16, 24, 32, 48, 64, 96, 128)
CASES = (("sphere_on_box", 0.0), ("cube_on_box", 0.05), ("cylinder_on_box", 0.02))


def run(*, budgets=BUDGETS, cases=CASES, depth=0.01, resolution=64, workers=1) -> list:
    settings = [Setting(scene=scene, tilt=tilt, depth=depth, resolution=resolution, reduce=True,
                        max_contacts_per_pair=int(b)) for scene, tilt in cases for b in budgets]
    rows = run_sweep(settings, measure, workers=workers)
    keep = ("scene", "tilt", "max_contacts_per_pair", "triangle_count", "contact_count", "force_z",
            "reduced_force_error", "reduced_torque_error", "tilt_stiffness_error", "time_ms")
    return [{k: r[k] for k in keep} for r in rows]


def plot(rows, path):
    plt = _common.pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.3))
    for scene in dict.fromkeys(r["scene"] for r in rows):
        s = sorted((r for r in rows if r["scene"] == scene), key=lambda r: r["max_contacts_per_pair"])
        b = [r["max_contacts_per_pair"] for r in s]
        label = f"{scene.replace('_', ' ')} (tilt {s[0]['tilt']:g} rad, {s[0]['triangle_count']} triangles)"
        axes[0].plot(b, [r["contact_count"] for r in s], "o-", label=label)
        line, = axes[1].semilogy(b, [max(r["reduced_force_error"], 1e-12) for r in s], "o-", label=f"{scene}: force")
        axes[1].semilogy(b, [max(r["reduced_torque_error"], 1e-12) for r in s], "x--", color=line.get_color(),
                         label=f"{scene}: torque")
        axes[2].plot(b, [100 * r["tilt_stiffness_error"] for r in s], "o-", label=scene)
    axes[0].plot([min(r["max_contacts_per_pair"] for r in rows), max(r["max_contacts_per_pair"] for r in rows)],
                 [min(r["max_contacts_per_pair"] for r in rows), max(r["max_contacts_per_pair"] for r in rows)],
                 "k:", lw=1, label="budget")
    axes[0].set_ylabel("contacts kept")
    axes[1].set_ylabel("relative error vs the patch (float32 contacts)")
    axes[2].set_ylabel("tilt stiffness Σc·|r×n|² error (%)")
    axes[2].axhline(0, color="k", lw=0.5)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("max_contacts_per_pair")
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=7)
    return _common.save(fig, path)


def main(argv=None):
    args = _common.parse_args(__doc__, argv)
    rows = run(budgets=(8, 32, 128)) if args.quick else run()
    csv = _common.write_csv(rows, os.path.join(args.out, NAME + ".csv"))
    png = plot(rows, os.path.join(args.out, NAME + ".png"))
    lines = [f"{'scene':<16} {'budget':>6} {'kept':>5} {'force err':>10} {'torque err':>10} {'tilt stiff':>10}"]
    for r in rows:
        lines.append(f"{r['scene']:<16} {r['max_contacts_per_pair']:>6} {r['contact_count']:>5} "
                     f"{r['reduced_force_error']:>10.2e} {r['reduced_torque_error']:>10.2e} "
                     f"{100 * r['tilt_stiffness_error']:>9.1f}%")
    _common.report(NAME, [csv, png], lines)
    return rows


if __name__ == "__main__":
    main()
