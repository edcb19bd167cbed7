"""Budgets: what a setting will cost, estimated before anything is allocated or run.

A setting that would need more memory than the machine has, or more work than hydro allows per
call, is refused with a :class:`~hydro.errors.BudgetError` that names the setting, the amount and
the limit, instead of dying in an allocation or running for days.

| check | limit | why |
|---|---|---|
| :func:`check_sdf_memory` | the machine's physical memory (``HYDRO_MEMORY_LIMIT`` bytes overrides) | an SDF build allocates its coarse grid and band samples at once |
| :func:`check_substeps` | :data:`MAX_SUBSTEPS` sub-steps per physics step | a step runs its sub-steps without a progress report; more means a step that looks hung |
"""

from __future__ import annotations

import math
import os

import numpy as np

from .errors import BudgetError

__all__ = ["MAX_SUBSTEPS", "memory_limit_bytes", "sdf_bytes_estimate", "check_sdf_memory", "check_substeps",
           "format_bytes"]

#: Most sub-steps one physics step may take (``Simulation(substeps=...)`` or chosen by ``"auto"``).
MAX_SUBSTEPS = 10_000

# bytes per coarse grid point while building: 3 float64 coordinates (meshgrid and stacked), the
# float64 distance, the float32 copy
_COARSE_POINT_BYTES = 7 * 8 + 4
# bytes per sample of a band brick while building: 3 float64 coordinates, the float64 distance,
# its quantised and decoded copies
_BAND_SAMPLE_BYTES = 3 * 8 + 8 + 8 + 8
_BRICK = 8
_SAMPLES_PER_BRICK = (_BRICK + 1) ** 3


def format_bytes(n: float) -> str:
    """``1.5 GiB``-style text."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024.0 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024.0
    return f"{n:.3g} PiB"  # pragma: no cover


def memory_limit_bytes() -> int:
    """The most memory one allocation plan may need: ``HYDRO_MEMORY_LIMIT`` (bytes) when set,
    else the machine's physical memory."""
    env = os.environ.get("HYDRO_MEMORY_LIMIT")
    if env:
        try:
            return int(float(env))
        except ValueError:
            raise BudgetError(f"HYDRO_MEMORY_LIMIT must be a number of bytes, got {env!r}") from None
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 64 << 30


def sdf_bytes_estimate(resolution) -> int:
    """Bytes an SDF build of a grid of ``resolution`` (3 voxel counts, multiples of 8) needs at
    least: its coarse grid, and the band bricks of a surface that crosses the grid (about the
    bricks of the grid's outer shell; a band as wide as the shape needs more)."""
    nb = np.maximum(1, np.asarray(resolution, dtype=np.float64) // _BRICK)
    coarse = float(np.prod(nb + 1)) * _COARSE_POINT_BYTES
    shell = 2.0 * (nb[0] * nb[1] + nb[1] * nb[2] + nb[0] * nb[2])
    band = min(shell, float(np.prod(nb))) * _SAMPLES_PER_BRICK * _BAND_SAMPLE_BYTES
    return int(min(coarse + band, 2.0**62))


def check_sdf_memory(resolution, voxel_size: float, *, what: str, setting: str) -> int:
    """Refuse (:class:`BudgetError`) an SDF grid whose build needs more than
    :func:`memory_limit_bytes`; ``what`` names the shape, ``setting`` the knob to turn. Returns the
    estimate in bytes."""
    res = [int(r) for r in resolution]
    need = sdf_bytes_estimate(res)
    limit = memory_limit_bytes()
    if need > limit:
        raise BudgetError(f"{what}: an SDF grid of {' x '.join(map(str, res))} voxels of {voxel_size:.3g} m needs at "
                          f"least {format_bytes(need)} to build, more than the {format_bytes(limit)} allowed "
                          f"(the machine's memory, or HYDRO_MEMORY_LIMIT): {setting}")
    return need


def check_substeps(substeps: int, *, dt: float, critical_step: float = math.inf, auto: bool = True) -> int:
    """Refuse (:class:`BudgetError`) more than :data:`MAX_SUBSTEPS` sub-steps per physics step;
    returns ``substeps``."""
    if substeps <= MAX_SUBSTEPS:
        return int(substeps)
    if auto:
        hint = (f"the contact stiffness allows sub-steps of at most {critical_step:.3g} s, so dt = {dt:g} s needs "
                f"{substeps:.3g} of them, more than the {MAX_SUBSTEPS} hydro allows per step: use dt <= "
                f"{MAX_SUBSTEPS * critical_step:.3g} s (more, shorter steps) or softer contacts")
    else:
        hint = f"substeps = {substeps} is more than the {MAX_SUBSTEPS} hydro allows per step: use a shorter dt"
    raise BudgetError(hint)
