"""hydro's errors: what a caller can catch, and what each means.

Every error hydro raises on purpose is a :class:`HydroError`; the ones about bad input are also
``ValueError`` (so ``except ValueError`` written for earlier versions keeps working) and their
message names the argument or prim and the rule it breaks.

| class | bases | raised when |
|---|---|---|
| :class:`HydroError` | ``Exception`` | base of all of them |
| :class:`InputError` | ``HydroError``, ``ValueError`` | an argument, file or setting breaks a rule |
| :class:`SceneError` | ``InputError`` | a scene breaks schema rules; ``.findings`` lists them |
| :class:`BudgetError` | ``InputError`` | a setting would need more memory or time than allowed |
| :class:`ContactOverflowError` | ``HydroError``, ``RuntimeError`` | a buffer with an explicit capacity is full (``overflow="raise"``) |
| :class:`Interrupted` | ``KeyboardInterrupt`` | Ctrl-C stopped a long operation; the message says what was kept |

Warnings hydro issues on purpose are :class:`HydroWarning` (a ``UserWarning``): results that are
computed but probably not what was meant (bodies with nothing beneath them, a cache that cannot
be written). The ``hydro`` command prints each as one ``hydro CMD: warning: ...`` line.

What the ``hydro`` command does with them (``hydro.cli``): one line on stderr and exit status 2
for a :class:`HydroError` or other bad input, the first findings of a :class:`SceneError`, 130
for :class:`Interrupted` (with its message), 3 for anything else (a bug: ``HYDRO_DEBUG=1`` shows
the traceback). docs/limits.md lists what hydro refuses and why.
"""

from __future__ import annotations

__all__ = ["shown", "HydroError", "InputError", "SceneError", "BudgetError", "ContactOverflowError", "Interrupted",
           "HydroWarning"]


class HydroError(Exception):
    """Base class of every error hydro raises on purpose."""


class InputError(HydroError, ValueError):
    """Bad input: the message names the argument or prim and the rule it breaks."""


class SceneError(InputError):
    """A scene that breaks schema rules. ``findings``: the validation findings (``CODE SEVERITY
    PRIM_PATH: message`` when printed), errors first."""

    def __init__(self, message: str, findings=()):
        super().__init__(message)
        self.findings = list(findings)


class BudgetError(InputError):
    """A setting that would need more memory or time than hydro allows (the message names the
    setting, the amount needed and the limit)."""


class ContactOverflowError(HydroError, RuntimeError):
    """A contact buffer with an explicit capacity was too small (with ``overflow="raise"``)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a long operation (``hydro run``'s stepping or saving). The message
    says what was kept, e.g. ``interrupted after 120 of 600 steps: wrote the 120 steps to out/x``;
    ``files`` maps what was written to its path (empty when nothing was)."""

    def __init__(self, message: str = "interrupted", files=None):
        super().__init__(message)
        self.files = dict(files or {})


class HydroWarning(UserWarning):
    """A result that was computed but is probably not what was meant (see the message)."""


def shown(value) -> str:
    """``value`` as a message shows it: plain Python (``-0.1``, ``[1.0, 2.0]``), never NumPy's
    reprs (``np.float64(-0.1)``, ``array([...])``)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # a NumPy scalar or 0-d array
        value = value.item()
    elif hasattr(value, "tolist") and getattr(value, "ndim", 0) >= 1:
        value = value.tolist()
    if isinstance(value, list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(shown(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)
