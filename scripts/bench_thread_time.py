"""CPU time (time.thread_time) of hydro's and Drake's queries on bench_peers' scenes, interleaved in
one run: on a shared machine the CPU time a query takes is steadier than its wall time.

    NUMBA_NUM_THREADS=1 python scripts/bench_thread_time.py --only "cylinder end" [--repeat 41] [--rounds 5]

Prints per scene the median thread time of one query of each (hydro with one Numba thread, so its
work runs on the calling thread; Drake's query is single-threaded) and their ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_peers import drake_case, hydro_case, scenes  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="only the scenes whose name contains this")
    ap.add_argument("--repeat", type=int, default=41)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    print("| scene | hydro 1T CPU ms | Drake CPU ms | Drake / hydro (CPU) | hydro wall ms | Drake wall ms |")
    print("|---|---|---|---|---|---|")
    for name, (shapes, _, _) in scenes().items():
        if args.only not in name:
            continue
        hy = hydro_case(shapes, 64)
        dk = drake_case(shapes, hy["h"])
        queries = {"hydro": lambda: hy["query"](1), "drake": dk["query"]}
        for q in queries.values():
            for _ in range(3):
                q()
        cpu = {k: [] for k in queries}
        wall = {k: [] for k in queries}
        per = max(1, -(-args.repeat // args.rounds))
        for _ in range(args.rounds):
            for k, q in queries.items():
                for _ in range(per):
                    c0, w0 = time.thread_time(), time.perf_counter()
                    q()
                    cpu[k].append(time.thread_time() - c0)
                    wall[k].append(time.perf_counter() - w0)
        med = {k: 1e3 * float(np.median(v)) for k, v in cpu.items()}
        wmed = {k: 1e3 * float(np.median(v)) for k, v in wall.items()}
        print(f"| {name} | {med['hydro']:.3g} | {med['drake']:.3g} | {med['drake'] / med['hydro']:.2g}× | "
              f"{wmed['hydro']:.3g} | {wmed['drake']:.3g} |", flush=True)


if __name__ == "__main__":
    main()
