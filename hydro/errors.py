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
"""

from __future__ import annotations

__all__ = ["HydroError", "InputError", "SceneError", "BudgetError", "ContactOverflowError"]


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
