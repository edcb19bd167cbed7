"""Shared by the benchmark scripts: how one ``collide`` call is timed."""

import time

import numpy as np


def median_collide_ms(pipe, poses, repeat, *, warmup=2):
    """Median wall time (ms) of ``pipe.collide(poses)`` over ``repeat`` calls after ``warmup``
    calls (kernels compiled, workspace grown); returns ``(ms, last_result, per_stage_medians)``."""
    for _ in range(warmup):
        pipe.collide(poses)
    times = []
    stages = {}
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = pipe.collide(poses)
        times.append(time.perf_counter() - t0)
        for k, v in result.timings_ms.items():
            stages.setdefault(k, []).append(v)
    return float(np.median(times)) * 1e3, result, {k: float(np.median(v)) for k, v in stages.items()}
