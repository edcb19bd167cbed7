"""The last physics step's contacts in Newton's layout, with the solver's forces.

:meth:`hydro.sim.simulation.Simulation.rigid_contacts` calls :func:`step_rigid_contacts` on the
:class:`~hydro.sim.sensing.ContactFrame` s of its last physics step (the same hand-off its
sensors get), so ``launch_contact_data`` on the result and the Isaac Lab sensor add up the same
forces.

Rows
    Every contact that carried force in any solver sub-step of the step, sub-step after
    sub-step (a step of n sub-steps has the rows of all n). Speculative and force-free contacts
    are not rows (as in the sensors).

``rigid_contact_force``
    World frame, N, on shape 0 (the force exerted on shape 0 by shape 1: Newton's convention),
    normal + friction, **divided by the sub-step count**: a row's force is its sub-step's force
    times h/dt, so the forces of a body's rows add up to the mean force over the physics step
    (its contact impulse over the step divided by dt) — what the Isaac Lab sensor reports as
    ``net_forces_w``. ``dt_scale = dt`` turns them into the impulses of the step (N·s).

Points
    In the frame of each shape's body at the pose after the step (``sim.state.body_q``, what a
    caller passes as ``body_q``), so ``world(point0/1)`` is where the contact was, on each
    surface, when it was made; separation ``dot(normal, world(point1) − world(point0)) −
    thickness0 − thickness1`` is the contact's depth.
"""

from __future__ import annotations

import numpy as np

from ..contact.types import RigidContacts, rigid_from_rows

__all__ = ["step_rigid_contacts"]


def step_rigid_contacts(frames, model, body_q, *, rigid_contact_max: int | None = None) -> RigidContacts:
    """The contacts of one physics step's sub-step ``frames`` (a sequence of ContactFrame) as a
    :class:`~hydro.contact.types.RigidContacts` (see the module docstring); its capacity is
    ``rigid_contact_max`` (default: the rows it holds; fewer than the rows raises
    ContactOverflowError naming the count needed)."""
    frames = list(frames)
    n_sub = max(len(frames), 1)
    if frames:
        cat = {k: np.concatenate([np.asarray(getattr(f, k)) for f in frames]) for k in
               ("point", "normal", "depth", "shape_a", "shape_b", "normal_force", "friction_force")}
    else:
        cat = {k: np.zeros((0, 3)) for k in ("point", "normal", "normal_force", "friction_force")}
        cat.update(depth=np.zeros(0), shape_a=np.zeros(0, np.int32), shape_b=np.zeros(0, np.int32))
    n = len(cat["depth"])
    out = None
    if rigid_contact_max is not None:
        if int(rigid_contact_max) < n:
            from ..errors import ContactOverflowError

            raise ContactOverflowError(f"the last physics step has {n} contacts (over its {len(frames)} sub-steps) but "
                                       f"rigid_contact_max is {int(rigid_contact_max)}: pass rigid_contact_max >= {n} "
                                       f"(or None: the rows it holds)")
        out = RigidContacts.allocate(int(rigid_contact_max))
    # the frames' forces act on B (shape 1): shape 0 feels their opposite
    force = -(cat["normal_force"].reshape(-1, 3) + cat["friction_force"].reshape(-1, 3)) / n_sub
    return rigid_from_rows(cat["point"].reshape(n, 3), cat["normal"].reshape(n, 3), cat["depth"], cat["shape_a"],
                           cat["shape_b"], model, body_q, out, force=force)
