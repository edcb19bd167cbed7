"""Parameter sweep runner: a grid of settings over scenes, in parallel, locally or on Dask.

    python scripts/sweep.py [--scenes sphere_on_box,cube_on_box] [--depth 0.005,0.01]
                            [--resolution 32,64] [--stiffness-ratio 1] [--interface continuous]
                            [--reduce false] [--budget 32] [--tilt 0] [--edge-clamp 0.02]
                            [--workers N | --scheduler tcp://HOST:8786] [--out out/experiments/sweep.csv]

Every comma-separated list is one axis; the grid is scenes × all axes (see ``hydro.tools.sweep``).
Each setting runs one ``collide`` of the scene (SDFs built once per worker process) and gives
one CSV row: the setting, the measured force/torque/area/centre of pressure, the closed form
where one exists and the relative errors, and the time of the call. By default the settings run
in ``--workers`` local processes (default: the CPU count); with ``--scheduler`` the very same
``executor.map`` runs on that Dask cluster (needs the ``sweep`` extra: ``pip install
'hydro[sweep]'``; workers must have ``hydro`` importable). ``--workers 1`` runs in this process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "experiments"))
import _common  # noqa: E402

from hydro.tools.sweep import SCENES, grid, measure, run_sweep  # noqa: E402


def _floats(text):
    return [float(v) for v in text.split(",")]


def _ints(text):
    return [int(v) for v in text.split(",")]


def _bools(text):
    out = []
    for v in text.split(","):
        if v.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise argparse.ArgumentTypeError(f"not a boolean: {v!r}")
        out.append(v.lower() in ("true", "1", "yes"))
    return out


def _strings(text):
    return [v for v in text.split(",") if v]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenes", type=_strings, default=list(SCENES[:2]), help=f"comma list of {', '.join(SCENES)}")
    ap.add_argument("--depth", type=_floats, default=[0.005, 0.01])
    ap.add_argument("--resolution", type=_ints, default=[32, 64])
    ap.add_argument("--stiffness-ratio", type=_floats, default=[1.0])
    ap.add_argument("--interface", type=_strings, default=["continuous"])
    ap.add_argument("--reduce", type=_bools, default=[False])
    ap.add_argument("--budget", type=_ints, default=[32], help="max_contacts_per_pair values")
    ap.add_argument("--tilt", type=_floats, default=[0.0])
    ap.add_argument("--edge-clamp", type=_floats, default=[0.02])
    ap.add_argument("--workers", type=int, default=None, help="local processes (default: CPU count)")
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://127.0.0.1:8786")
    ap.add_argument("--out", default=os.path.join(_common.DEFAULT_OUT, "sweep.csv"))
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    settings = grid(args.scenes, depth=args.depth, resolution=args.resolution,
                    stiffness_ratio=args.stiffness_ratio, interface=args.interface, reduce=args.reduce,
                    max_contacts_per_pair=args.budget, tilt=args.tilt, edge_clamp=args.edge_clamp)
    where = f"Dask scheduler {args.scheduler}" if args.scheduler else f"{args.workers or os.cpu_count()} local process(es)"
    print(f"# sweep: {len(settings)} settings on {where}")
    t0 = time.perf_counter()
    rows = run_sweep(settings, measure, workers=args.workers, scheduler=args.scheduler)
    wall = time.perf_counter() - t0
    path = _common.write_csv(rows, args.out)
    print(f"{'scene':<16} {'res':>4} {'depth':>7} {'force N':>11} {'err %':>7} {'area err %':>10} {'contacts':>8}")
    for r in rows:
        print(f"{r['scene']:<16} {r['resolution']:>4} {r['depth']:>7.4f} {r['force_z']:>11.2f} "
              f"{100 * r['force_error']:>7.2f} {100 * r['area_error']:>10.2f} {r['contact_count']:>8}")
    print(f"# {len(rows)} settings in {wall:.1f} s; wrote {os.path.relpath(path, os.getcwd())}")
    return rows


if __name__ == "__main__":
    main()
