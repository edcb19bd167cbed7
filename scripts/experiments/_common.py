"""Shared plumbing of the experiment scripts: arguments, the output folder, CSV and PNG writing.

Every experiment writes ``out/experiments/NAME.csv`` (always) and ``out/experiments/NAME.png``
(when matplotlib, the optional ``plot`` extra, is installed; otherwise it says so and goes on).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_OUT = os.path.join(ROOT, "out", "experiments")


def parse_args(doc: str, argv=None, extra=None):
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a coarse, fast version (for checking the script)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default: out/experiments)")
    if extra:
        extra(ap)
    return ap.parse_args(argv)


def write_csv(rows, path) -> str:
    """Rows (dicts; the columns are the union of their keys, in first-seen order) to ``path``."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(v) for k, v in r.items()})
    return path


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def read_csv(path) -> list:
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out.append({k: _parse(v) for k, v in r.items()})
    return out


def _parse(v):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(v, v)


def pyplot():
    """matplotlib.pyplot with the Agg backend, or None (with a note) when it is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib is not installed (pip install 'hydro[plot]'): CSV only, no PNG", file=sys.stderr)
        return None
    return plt


def save(fig, path) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def fit_order(h, err) -> float:
    """Least-squares slope of log|err| against log h (the convergence order); nan if < 2 points."""
    h = np.asarray(h, float)
    e = np.abs(np.asarray(err, float))
    ok = (h > 0) & (e > 0) & np.isfinite(e)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(h[ok]), np.log(e[ok]), 1)[0])


def rms(values) -> float:
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return float(np.sqrt(np.mean(v * v))) if len(v) else math.nan


def report(name, paths, summary_lines):
    print(f"# {name}")
    for line in summary_lines:
        print(line)
    for p in paths:
        if p:
            print(f"wrote {os.path.relpath(p, os.getcwd())}")
