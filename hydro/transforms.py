"""Rigid transforms. Poses are (position, quaternion) with quaternions stored (x, y, z, w).

A pose array has shape (..., 7): ``[px, py, pz, qx, qy, qz, qw]``. Functions accept and
return NumPy arrays and broadcast over leading axes. The ``*_one`` device helpers work on
scalars inside kernels.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import cpu_jit, device_fn

IDENTITY_POSE = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def quat_normalize(q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n == 0.0) or not np.all(np.isfinite(q)):
        raise ValueError("quaternions must be finite and non-zero")
    return q / n


def quat_mul(a, b) -> np.ndarray:
    """Hamilton product a ⊗ b (rotation b first, then a)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], axis=-1)


def quat_conjugate(q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    return np.concatenate([-q[..., :3], q[..., 3:]], axis=-1)


def quat_rotate(q, v) -> np.ndarray:
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    u = q[..., :3]
    w = q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_to_matrix(q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    x, y, z, w = np.moveaxis(q, -1, 0)
    m = np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
    ], axis=-1)
    return m.reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(m) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix (..., 3, 3)."""
    m = np.asarray(m, dtype=float)
    flat = m.reshape(-1, 3, 3)
    out = np.empty((len(flat), 4))
    for i, r in enumerate(flat):
        tr = r[0, 0] + r[1, 1] + r[2, 2]
        if tr > 0.0:
            s = math.sqrt(tr + 1.0) * 2.0
            out[i] = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
        elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
            s = math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2]) * 2.0
            out[i] = [0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s]
        elif r[1, 1] > r[2, 2]:
            s = math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2]) * 2.0
            out[i] = [(r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s]
        else:
            s = math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1]) * 2.0
            out[i] = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s, (r[1, 0] - r[0, 1]) / s]
        if out[i, 3] < 0.0:
            out[i] = -out[i]
    return out.reshape(m.shape[:-2] + (4,))


def quat_from_axis_angle(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    half = 0.5 * np.asarray(angle, dtype=float)[..., None]
    return np.concatenate([axis * np.sin(half), np.cos(half)], axis=-1)


def pose_compose(a, b) -> np.ndarray:
    """a ∘ b: the pose of frame b (given in a's frame) in a's parent frame."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    p = a[..., :3] + quat_rotate(a[..., 3:], b[..., :3])
    q = quat_mul(a[..., 3:], b[..., 3:])
    return np.concatenate([p, q], axis=-1)


def pose_inverse(a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    qi = quat_conjugate(a[..., 3:])
    return np.concatenate([-quat_rotate(qi, a[..., :3]), qi], axis=-1)


def pose_transform_points(pose, pts) -> np.ndarray:
    """Points (..., 3) from the pose's frame to its parent frame."""
    pose = np.asarray(pose, dtype=float)
    return pose[..., :3] + quat_rotate(pose[..., 3:], pts)


@cpu_jit
def normalized_poses_into(poses, out):
    """Copy poses (S, 7) into ``out`` with unit quaternions; returns −1, or the first pose that is
    not finite (its index) or has a zero quaternion (−2 − its index), leaving ``out`` partial."""
    for s in range(poses.shape[0]):
        for k in range(7):
            v = poses[s, k]
            if not (v - v == 0.0):  # NaN or inf
                return s
        n = math.sqrt(poses[s, 3] ** 2 + poses[s, 4] ** 2 + poses[s, 5] ** 2 + poses[s, 6] ** 2)
        if n < 1e-12:
            return -2 - s
        for k in range(3):
            out[s, k] = poses[s, k]
        for k in range(3, 7):
            out[s, k] = poses[s, k] / n
    return -1


def check_poses(poses, name: str = "pose") -> np.ndarray:
    """Validate an array of poses (..., 7): finite, non-zero quaternions; returns them normalised."""
    p = np.asarray(poses, dtype=float)
    if p.shape[-1] != 7:
        raise ValueError(f"{name} must have 7 components (px, py, pz, qx, qy, qz, qw), got shape {p.shape}")
    bad = ~np.all(np.isfinite(p), axis=-1)
    if np.any(bad):
        idx = np.argwhere(bad)[0].tolist()
        raise ValueError(f"{name} {idx} is not finite: {p[tuple(idx)].tolist()}")
    n = np.linalg.norm(p[..., 3:], axis=-1)
    if np.any(n < 1e-12):
        idx = np.argwhere(n < 1e-12)[0].tolist()
        raise ValueError(f"{name} {idx} has a zero quaternion")
    out = p.copy()
    out[..., 3:] /= n[..., None]
    return out


# Device helpers --------------------------------------------------------------------------------


@device_fn
def quat_rotate_one(qx, qy, qz, qw, vx, vy, vz):
    """Rotate (vx, vy, vz) by the unit quaternion (qx, qy, qz, qw)."""
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return (vx + qw * tx + (qy * tz - qz * ty),
            vy + qw * ty + (qz * tx - qx * tz),
            vz + qw * tz + (qx * ty - qy * tx))
