"""Bodies that leave the ground or the scene while :class:`~hydro.sim.simulation.Simulation` steps.

``hydro run`` checks a finished run's trajectory (:func:`hydro.tools.support.departure_warnings`);
a script that steps a ``Simulation`` itself got no word when a fast body tunnelled through a thin
shape (a ball dropped from 500 m passed through a 3 cm box and fell to z = −88 m, issue 27).
:class:`DepartureWatch` makes the same two checks on the current poses every ``CHECK_EVERY``
steps and warns (:class:`~hydro.errors.HydroWarning`) once per kind per simulation:

- a dynamic body *left the scene's bounds* (the box around every shape at the start and the planes under it, widened on
  every side by half its longest edge);
- a dynamic body *left the ground*: a static shape was beneath it (along gravity) at the start,
  none is now — what tunnelling through a floor looks like.

``Simulation.watch_departures = False`` turns it off (``hydro run`` does: it checks the whole
trajectory after the run).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import HydroWarning

#: Steps between two checks (each costs ~0.1 ms: a ray test of every body against the static shapes' boxes;
#: every 64 steps it adds ~1.5 µs to a step of ~0.15 ms).
CHECK_EVERY = 64


class DepartureWatch:
    """The departure checks of one simulation (see the module docstring)."""

    def __init__(self, model, gravity):
        self.model = model
        self.gravity = np.asarray(gravity, dtype=float)
        self.warned: set = set()
        self._start = None  # what depends only on the start: boxes, beneath, bounds (on the first check)

    def check(self, sim) -> None:
        """Warn about bodies that left the ground or the scene's bounds, every ``CHECK_EVERY``
        steps of ``sim`` (and not again for a kind already reported)."""
        if (not getattr(sim, "watch_departures", True) or sim.step_count % CHECK_EVERY != 0
                or len(self.warned) == 2 or self.model.body_count == 0):
            return
        # NumPy only; imported here since the tools' run module imports sim
        from ..tools.support import beneath, departure_warnings, scene_bounds, shape_world_boxes

        if self._start is None:
            m = self.model
            boxes = shape_world_boxes(m, m.body_q0)
            self._start = dict(start_boxes=boxes, bounds=scene_bounds(m, boxes),
                               start_beneath=beneath(m, m.body_q0, self.gravity, static_only=True, boxes=boxes))
        q = np.asarray(sim.state.body_q, dtype=float)[None]
        for message in departure_warnings(self.model, q, self.gravity, np.array([sim.time]), **self._start):
            kind = "bounds" if "scene's bounds" in message else "ground"
            if kind in self.warned:
                continue
            self.warned.add(kind)
            warnings.warn(f"{message} (a fast body may have passed through a thin shape: a smaller dt, more "
                          f"sub-steps or a thicker shape keep it out)", HydroWarning, stacklevel=3)
