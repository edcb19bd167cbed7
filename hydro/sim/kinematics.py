"""Kinematic scripts (scripted poses of kinematic bodies) and the rotation-vector maps the solver
integrates orientations with.

A script gives world poses of some kinematic bodies as a function of time: a callback
``(t) -> poses`` or a keyframe list ``[(t0, poses0), (t1, poses1), ...]`` (positions
interpolated linearly, orientations by slerp, held before the first and after the last key).
Each solver sub-step puts a scripted body at its pose at t with the velocity that reaches its
pose at t + h (:func:`kinematic_targets`), and at the end of the sub-step exactly at that pose.
"""

from __future__ import annotations

import numpy as np

from ..transforms import quat_mul, quat_normalize, quat_rotate

__all__ = ["KinematicScript", "kinematic_targets", "quat_exp", "quat_log", "slerp"]


def quat_exp(rotvec):
    """Unit quaternions (x, y, z, w) of rotation vectors (..., 3)."""
    angle = np.linalg.norm(rotvec, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(x/2)/x, with its series near 0
    k = np.where(angle > 1e-8, np.sin(half) / np.where(angle > 1e-8, angle, 1.0), 0.5 - angle * angle / 48.0)
    return np.concatenate([rotvec * k, np.cos(half)], axis=-1)


def quat_log(q):
    """Rotation vectors (..., 3) of unit quaternions (shortest rotation)."""
    q = np.where(q[..., 3:4] < 0.0, -q, q)
    v = q[..., :3]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., 3:4])
    k = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)
    return v * k


def slerp(q0, q1, u):
    """Spherical interpolation from unit quaternions ``q0`` to ``q1`` at ``u`` in [0, 1] (shortest arc)."""
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    rel = quat_mul(q1, np.concatenate([-q0[..., :3], q0[..., 3:]], axis=-1))
    return quat_normalize(quat_mul(quat_exp(u * quat_log(rel)), q0))


class KinematicScript:
    """World poses (K,7) of some kinematic bodies as a function of time (module docstring)."""

    def __init__(self, bodies, script):
        self.bodies = np.asarray(bodies, dtype=np.int64)
        if callable(script):
            self.fn = script
            self.keys = None
        else:
            keys = list(script)
            if not keys:
                raise ValueError("a keyframe list needs at least one (time, poses) entry")
            times = np.array([float(t) for t, _ in keys])
            if np.any(np.diff(times) <= 0) or not np.all(np.isfinite(times)):
                raise ValueError(f"keyframe times must be finite and strictly increasing, got {times.tolist()}")
            poses = np.array([self._shape(p) for _, p in keys])
            for p in poses:
                p[:, 3:] = quat_normalize(p[:, 3:])
            self.keys = (times, poses)
            self._turns = [not np.array_equal(a[:, 3:], b[:, 3:]) for a, b in zip(poses[:-1], poses[1:])]
            self.fn = None

    def _shape(self, poses):
        p = np.asarray(poses, dtype=float)
        if p.shape == (7,):
            p = np.broadcast_to(p, (len(self.bodies), 7))
        if p.shape != (len(self.bodies), 7) or not np.all(np.isfinite(p)):
            raise ValueError(f"a kinematic script must give finite poses of shape ({len(self.bodies)}, 7) "
                             f"(or (7,) for all), got shape {p.shape}")
        return np.array(p, dtype=float)

    def __call__(self, t: float) -> np.ndarray:
        if self.fn is not None:
            p = self._shape(self.fn(t))
            p[:, 3:] = quat_normalize(p[:, 3:])
            return p
        times, poses = self.keys
        if t <= times[0]:
            return poses[0].copy()
        if t >= times[-1]:
            return poses[-1].copy()
        i = int(np.searchsorted(times, t, side="right")) - 1
        u = (t - times[i]) / (times[i + 1] - times[i])
        out = np.empty_like(poses[i])
        out[:, :3] = (1.0 - u) * poses[i][:, :3] + u * poses[i + 1][:, :3]
        if self._turns[i]:
            out[:, 3:] = slerp(poses[i][:, 3:], poses[i + 1][:, 3:], u)
        else:  # the same orientation at both keys (a straight move): nothing to interpolate
            out[:, 3:] = poses[i][:, 3:]
        return out


def kinematic_targets(scripts, state, body_com_local, t, h):
    """Set the scripted bodies of ``state`` to their pose at ``t`` and the velocity reaching
    their pose at ``t + h`` (``body_com_local`` (B,3) the centres of mass in the body frames);
    returns ``(body ids, poses at t + h)``, or None without scripts."""
    if not scripts:
        return None
    q = state.body_q
    qd = state.body_qd
    ids_all, next_all = [], []
    for sc in scripts:
        p0 = sc(t)
        p1 = sc(t + h)
        ids = sc.bodies
        com_local = body_com_local[ids]
        q[ids] = p0
        if np.array_equal(p0[:, 3:], p1[:, 3:]):  # no turn (the common scripted move): a translation
            qd[ids, :3] = (p1[:, :3] - p0[:, :3]) / h
            qd[ids, 3:] = 0.0
        else:
            c0 = p0[:, :3] + quat_rotate(p0[:, 3:], com_local)
            c1 = p1[:, :3] + quat_rotate(p1[:, 3:], com_local)
            qd[ids, :3] = (c1 - c0) / h
            rel = quat_mul(p1[:, 3:], np.concatenate([-p0[:, 3:6], p0[:, 6:]], axis=1))
            qd[ids, 3:] = quat_log(rel) / h
        ids_all.append(ids)
        next_all.append(p1)
    return np.concatenate(ids_all), np.concatenate(next_all)
