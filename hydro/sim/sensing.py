"""What the simulation hands its sensors: the contacts of each physics step, and the interface.

A sensor never reads the solver back. :class:`~hydro.sim.simulation.Simulation` calls, after
every physics step, ``sensor.on_step(frames, state, step, dt)`` on each sensor registered with
``sim.add_sensor``, and ``sensor.reset(env_ids)`` from ``sim.reset``; that is all a sensor
receives (:class:`StepSensor`). The Isaac Lab–style :class:`hydro.sim.sensors.ContactSensor` and
the EmbodiChain-style :class:`hydro.sim.embodichain.ContactSensor` both implement it.

``on_step`` arguments
    | argument | type | meaning |
    |---|---|---|
    | ``frames`` | tuple[ContactFrame] | the contacts that carried force in each solver sub-step of the step, in order; each sub-step lasts ``dt / len(frames)`` |
    | ``state`` | :class:`~hydro.scene.model.State` | body poses and velocities after the step (the simulation's own, updated in place: read it, do not write it) |
    | ``step`` | int | physics steps since the simulation started or was last fully reset (1 after the first) |
    | ``dt`` | float | s, the physics step |
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol, Sequence

import numpy as np

__all__ = ["ContactFrame", "StepSensor", "rows_sum"]


@dataclass
class ContactFrame:
    """The contacts that carried force in one solver sub-step (N of them).

    | field | shape | meaning |
    |---|---|---|
    | ``point`` | (N,3) | m, world position of the contact |
    | ``normal`` | (N,3) | unit, world, from shape A toward shape B: the direction the normal force acts |
    |  |  | along (the implicit solver: the pair's mean normal for contacts within 45° of it) |
    | ``depth`` | (N,) | m, separation, negative when penetrating |
    | ``normal_force`` | (N,3) | N, normal force on B (on A: its negative) |
    | ``friction_force`` | (N,3) | N, friction force on B (on A: its negative), tangential |
    | ``shape_a`` / ``shape_b`` | (N,) | int32 shape indices |
    | ``body_a`` / ``body_b`` | (N,) | int32 body indices, −1 for a static shape |
    | ``env`` | (N,) | int32 env of the contact (−1: both shapes global) |
    | ``pair`` | (N,) | int32 index of the shape pair in the pipeline's result |
    | ``kind`` | (N,) | int32 the path that made the contact: ``CONTACT_HYDROELASTIC`` (0) or ``CONTACT_POINT`` |
    |  |  | (1), :mod:`hydro.contact.types` (a frame made without it: all hydroelastic) |
    """

    point: np.ndarray
    normal: np.ndarray
    depth: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    shape_a: np.ndarray
    shape_b: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray
    env: np.ndarray
    pair: np.ndarray
    kind: np.ndarray = None

    def __post_init__(self):
        if self.kind is None:
            self.kind = np.zeros(len(self.depth), np.int32)

    @classmethod
    def empty(cls) -> "ContactFrame":
        z3 = np.zeros((0, 3))
        zi = np.zeros(0, np.int32)
        return cls(point=z3, normal=z3.copy(), depth=np.zeros(0), normal_force=z3.copy(), friction_force=z3.copy(),
                   shape_a=zi, shape_b=zi.copy(), body_a=zi.copy(), body_b=zi.copy(), env=zi.copy(), pair=zi.copy(),
                   kind=zi.copy())

    def __len__(self) -> int:
        return len(self.depth)

    def take(self, keep) -> "ContactFrame":
        """The contacts that ``keep`` (a boolean mask or indices) selects, in their order."""
        return ContactFrame(**{f.name: getattr(self, f.name)[keep] for f in fields(self)})

    def without_envs(self, envs) -> "ContactFrame":
        """The contacts of every env but ``envs`` (what is left after those envs are reset)."""
        return self.take(~np.isin(self.env, envs))


class StepSensor(Protocol):
    """What a sensor implements to be driven by a simulation (see the module docstring)."""

    def on_step(self, frames: Sequence[ContactFrame], state, step: int, dt: float) -> None:
        """Take in one physics step: its sub-steps' contacts, the state after it, its index, dt."""

    def reset(self, env_ids=None) -> None:
        """Forget what was seen in ``env_ids`` (default all)."""


def rows_sum(index, values, n):
    """Ordered sums of ``values`` rows into ``n`` bins (deterministic: bincount is sequential)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        return np.bincount(index, weights=values, minlength=n)[:n]
    out = np.empty((n,) + values.shape[1:])
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    flat = values.reshape(len(values), width)
    res = out.reshape(n, width)
    for k in range(flat.shape[1]):
        res[:, k] = np.bincount(index, weights=flat[:, k], minlength=n)[:n]
    return out
