"""Budgets: what a setting will cost, estimated before anything is allocated or run.

A setting that would need more memory than hydro allows, or more work than hydro allows per
call, is refused with a :class:`~hydro.errors.BudgetError` that names the setting, the amount and
the limit, instead of dying in an allocation or running for days.

| check | limit | why |
|---|---|---|
| :func:`check_sdf_memory` | the SDF budget of the scene rules (4 GiB, ``HYDRO_SDF_BUDGET_GIB``) | an SDF build allocates its grid tables and band samples at once |
| :func:`check_substeps` | :data:`MAX_SUBSTEPS` sub-steps per physics step | a step runs its sub-steps without a progress report; more means a step that looks hung |
| :func:`check_memory` | the memory budget (half of this machine's memory, ``HYDRO_MEMORY_BUDGET_GIB``) | env copies (``num_envs``), sensor histories (``history_length``), ``hydro run``'s recorded steps (``--steps``): allocated at once, or growing until the system kills the process |

The SDF estimate and budget are the scene rules' own (:func:`hydro.scene.validate.sdf_build_bytes`,
:func:`~hydro.scene.validate.sdf_budget_bytes`, finding ``HYDRO.BUD.001``): ``hydro sdf`` and a
USD scene refuse the same grids.
"""

from __future__ import annotations

import math

from .errors import BudgetError

__all__ = ["MAX_SUBSTEPS", "ENV_COPY_BYTES", "check_memory", "check_sdf_memory", "check_substeps",
           "memory_budget_bytes"]

#: Bytes one copied body or shape costs when envs are replicated (its Python record, its rows in
#: the model, the simulation and the contact buffers; measured: about 14 KB for a box-on-ground env).
ENV_COPY_BYTES = 16 * 1024

#: Most sub-steps one physics step may take (``Simulation(substeps=...)`` or chosen by ``"auto"``).
MAX_SUBSTEPS = 10_000


def check_sdf_memory(geometry, settings, *, what: str, setting: str) -> int:
    """Refuse (:class:`BudgetError`) an SDF of ``geometry`` with ``settings`` whose build needs more
    than the SDF budget; ``what`` names the shape, ``setting`` the knob to turn. Returns the
    estimate in bytes."""
    from .scene.validate import _bytes, sdf_budget_bytes, sdf_build_bytes

    try:
        limit = sdf_budget_bytes()
    except ValueError as exc:
        raise BudgetError(str(exc)) from None
    need, res = sdf_build_bytes(geometry, settings)
    if need > limit:
        raise BudgetError(f"{what}: an SDF grid of {' x '.join(map(str, res))} voxels needs about {_bytes(need)} to "
                          f"build, over hydro's budget of {_bytes(limit)} (HYDRO_SDF_BUDGET_GIB): {setting}")
    return int(need)


def memory_budget_bytes() -> int:
    """The most bytes one setting may ask for: ``HYDRO_MEMORY_BUDGET_GIB`` GiB when set, else half of
    this machine's physical memory."""
    import os

    text = os.environ.get("HYDRO_MEMORY_BUDGET_GIB")
    if text:
        try:
            gib = float(text)
        except ValueError:
            gib = math.nan
        if not (math.isfinite(gib) and gib > 0):
            raise BudgetError(f"HYDRO_MEMORY_BUDGET_GIB must be a number > 0 (GiB), got {text!r}")
        return int(gib * 2**30)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 16 * 2**30
    return int(total // 2)


def check_memory(need: float, *, what: str, setting: str) -> int:
    """Refuse (:class:`BudgetError`) ``need`` bytes over :func:`memory_budget_bytes`, before they are
    allocated; ``what`` says what would be allocated, ``setting`` the knob to turn. Returns the
    need in bytes."""
    from .scene.validate import _bytes

    limit = memory_budget_bytes()
    if not need <= limit:  # NaN or inf too
        raise BudgetError(f"{what} needs about {_bytes(need)}, over hydro's memory budget of {_bytes(limit)} (half of "
                          f"this machine's memory, or HYDRO_MEMORY_BUDGET_GIB): {setting}")
    return int(need)


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
