"""Runnable examples, each a commented module to read: ``hydro example NAME``."""

from __future__ import annotations

import importlib

from ...arguments import integer
from ...errors import InputError

#: example name → (module, one-line description)
EXAMPLES = {
    "contact-sensor": ("hydro.tools.examples.contact_sensor",
                       "contact sensors on a gripper's fingers pinching and lifting a box (scenes/pinch.usda)"),
    "force-grasp": ("hydro.tools.examples.force_grasp",
                    "two free fingers squeeze a box with a set force (apply_force) and lift it (PD targets)"),
}


def run_example(name: str, **kwargs) -> int:
    """Run example ``name`` (see :data:`EXAMPLES`); keyword arguments go to its ``main``
    (``steps``, when given, must be an integer >= 1: leave it out for the example's own)."""
    if name not in EXAMPLES:
        raise InputError(f"no example named {name!r}; the examples are: {', '.join(sorted(EXAMPLES))}")
    if "steps" in kwargs:
        kwargs["steps"] = integer(kwargs["steps"], "steps", minimum=1)
    module = importlib.import_module(EXAMPLES[name][0])
    return int(module.main(**kwargs) or 0)
