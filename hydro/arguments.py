"""Checks of public API arguments: each returns the value in the form hydro uses, or raises
:class:`~hydro.errors.InputError` naming the argument, the rule and what was given.

Used where a caller's value first enters hydro (``HydroelasticPipeline``, ``collide``,
``Simulation``, ``hydro run``), so a wrong type or value is reported as such instead of
surfacing later as an ``AttributeError``, a ``TypeError`` or a NumPy reshape error.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InputError, shown

__all__ = ["number", "integer", "float_array", "index_pairs", "env_ids", "model_like", "MODEL_FIELDS"]

#: What the collision pipeline reads from a model (a :class:`~hydro.scene.model.Model`, or any
#: object with these fields, as the tests' small models are).
MODEL_FIELDS = ("shape_path", "shape_hydroelastic", "shape_sdf", "shape_stiffness", "shape_margin", "shape_gap",
                "shape_env", "shape_body", "sdfs", "sdf_pack")


def _rule(minimum, maximum, exclusive_minimum, finite):
    parts = []
    if exclusive_minimum is not None:
        parts.append(f"> {exclusive_minimum:g}")
    elif minimum is not None:
        parts.append(f">= {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:g}")
    return ("a finite number" if finite else "a number") + (" " + " and ".join(parts) if parts else "")


def number(value, name: str, *, minimum=None, maximum=None, exclusive_minimum=None, finite: bool = True,
           unit: str = "") -> float:
    """``value`` as a float: a real number (not a bool, not a string) within the bounds."""
    rule = _rule(minimum, maximum, exclusive_minimum, finite) + (f" ({unit})" if unit else "")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be {rule}, got {shown(value)} ({type(value).__name__})")
    v = float(value)
    ok = not math.isnan(v) and (math.isfinite(v) or not finite)
    ok = ok and (minimum is None or v >= minimum) and (maximum is None or v <= maximum)
    ok = ok and (exclusive_minimum is None or v > exclusive_minimum)
    if not ok:
        raise InputError(f"{name} must be {rule}, got {shown(value)}")
    return v


def integer(value, name: str, *, minimum=None, maximum=None) -> int:
    """``value`` as an int: an integer (not a bool, not a float) within the bounds."""
    rule = "an integer" + "".join(f" {op} {b}" for op, b in ((">=", minimum), ("<=", maximum)) if b is not None)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be {rule}, got {shown(value)} ({type(value).__name__})")
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise InputError(f"{name} must be {rule}, got {v}")
    return v


def float_array(value, name: str, shape=None) -> np.ndarray:
    """``value`` as a float64 array; ``shape`` (optional) with ``-1`` for any length."""
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise InputError(f"{name} must be an array of numbers, got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of numbers ({exc})") from None
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s == -1 or s == n for s, n in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("N" if s == -1 else str(s) for s in shape) + ")"
            raise InputError(f"{name} must have shape {want}, got {arr.shape}")
    return arr


def _as_array(value, what: str) -> np.ndarray:
    """``value`` as a NumPy array, or an InputError starting with ``what`` (None, text, mappings and
    sets are no arrays of indices)."""
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise InputError(f"{what}, got {type(value).__name__}")
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} ({exc})") from None


def _integral(arr: np.ndarray, what: str, values: str) -> np.ndarray:
    """int64 ``arr`` when it holds integers (floats only when integral: 2.0 is 2, 0.5 is refused,
    never truncated), else an InputError starting with ``what`` (``values``: what a wrong dtype shows)."""
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise InputError(f"{what}, got {arr.dtype} values{values}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (np.trunc(arr) != arr)
        if bad.any():
            raise InputError(f"{what}, got the non-integer {float(arr[bad][0])!r}")
    return arr.astype(np.int64)


def index_pairs(value, name: str, count: int) -> np.ndarray:
    """``value`` as (K, 2) int64 indices in ``[0, count)``: a (K, 2) array-like of integers, or one
    pair ``(a, b)``."""
    what = f"{name} must be (K, 2) integer indices (a list of (a, b) pairs)"
    arr = _as_array(value, what)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim == 1 and arr.shape[0] == 2:
        arr = arr.reshape(1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{what}, got shape {arr.shape}")
    arr = _integral(arr, what, "")
    out = (arr < 0) | (arr >= count)
    if out.any():
        k = int(np.flatnonzero(out.any(axis=1))[0])
        raise InputError(f"{name}[{k}] = {tuple(arr[k].tolist())}: shape index out of range [0, {count - 1}]")
    return arr


def env_ids(value, name: str, count: int) -> np.ndarray:
    """``value`` as sorted unique int64 env indices in ``[0, count)``: one integer, or a sequence,
    array or tensor (any device) of integers (floats only when integral: 2.0 is env 2, 0.5 is
    refused, never truncated to env 0)."""
    what = f"{name} must be in [0, {count - 1}] (env indices: integers)"
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    arr = _as_array(value, what).reshape(-1)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    arr = np.unique(_integral(arr, what, f" ({arr[:4].tolist()})"))
    if np.any((arr < 0) | (arr >= count)):
        raise InputError(f"{what}, got {arr[(arr < 0) | (arr >= count)][:8].tolist()}")
    return arr


def model_like(value, name: str = "model", fields=MODEL_FIELDS):
    """``value`` itself when it has every field in ``fields`` (a hydro Model does)."""
    missing = [f for f in fields if not hasattr(value, f)]
    if missing:
        hint = " (load one with hydro.load_usd(path), or build one with ModelBuilder().finalize())"
        if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
            hint = " (a path: load it first with hydro.load_usd(path))"
        raise InputError(f"{name} must be a hydro Model, got {type(value).__name__}{hint}")
    return value
