"""Stage 1 — broad phase: candidate pairs of hydroelastic shapes.

Both shapes hydroelastic with an SDF, in the same env (a global shape, env −1, pairs with
every env), on different bodies (two static shapes never pair), world AABBs of their SDF boxes
overlapping (padded by margins and gaps), then an exact oriented-box (separating axis) test
of the two SDF boxes. Shapes are swept along the axis of largest spread: the host sorts the
AABB minima, and each item ``i`` walks forward while the boxes can still overlap, so the cost
follows the number of nearby pairs, not the square of the shape count. Count → scan → scatter
gives the same pair order on every target.
"""

from __future__ import annotations

import numpy as np

from ..backend import device_fn, kernel


@device_fn
def _axis_dot(rot, a, b, i, j):
    """A_i · B_j: axis i of box a against axis j of box b (``rot`` rows are row-major matrices)."""
    return rot[a, i] * rot[b, j] + rot[a, 3 + i] * rot[b, 3 + j] + rot[a, 6 + i] * rot[b, 6 + j]


@device_fn
def _abs_axis_dot(rot, a, b, i, j):
    """|A_i · B_j| padded against near-parallel axes (their cross products vanish)."""
    return abs(_axis_dot(rot, a, b, i, j)) + 1e-9


@device_fn
def _in_frame(rot, a, i, dx, dy, dz):
    """Component i of the world vector (dx, dy, dz) in box a's frame."""
    return rot[a, i] * dx + rot[a, 3 + i] * dy + rot[a, 6 + i] * dz


@device_fn
def obb_overlap(a, b, rot, center, half):
    """Separating-axis test of oriented boxes ``a`` and ``b`` (15 axes).

    ``rot[s]`` is the row-major world rotation (9,), ``center[s]`` the world centre and
    ``half[s]`` the half extents of box ``s``.
    """
    # the translation, in A's frame
    dx = center[b, 0] - center[a, 0]
    dy = center[b, 1] - center[a, 1]
    dz = center[b, 2] - center[a, 2]
    t0 = _in_frame(rot, a, 0, dx, dy, dz)
    t1 = _in_frame(rot, a, 1, dx, dy, dz)
    t2 = _in_frame(rot, a, 2, dx, dy, dz)
    # A's axes
    for i in range(3):
        ti = t0 if i == 0 else (t1 if i == 1 else t2)
        if abs(ti) > (half[a, i] + half[b, 0] * _abs_axis_dot(rot, a, b, i, 0)
                      + half[b, 1] * _abs_axis_dot(rot, a, b, i, 1) + half[b, 2] * _abs_axis_dot(rot, a, b, i, 2)):
            return False
    # B's axes
    for j in range(3):
        tj = t0 * _axis_dot(rot, a, b, 0, j) + t1 * _axis_dot(rot, a, b, 1, j) + t2 * _axis_dot(rot, a, b, 2, j)
        if abs(tj) > (half[a, 0] * _abs_axis_dot(rot, a, b, 0, j) + half[a, 1] * _abs_axis_dot(rot, a, b, 1, j)
                      + half[a, 2] * _abs_axis_dot(rot, a, b, 2, j) + half[b, j]):
            return False
    # A_i × B_j, with (i1, i2) the next axes of A after i, cyclically, and (j1, j2) B's others in order
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        t_i1 = t0 if i1 == 0 else (t1 if i1 == 1 else t2)
        t_i2 = t0 if i2 == 0 else (t1 if i2 == 1 else t2)
        for j in range(3):
            j1 = 1 if j == 0 else 0
            j2 = 1 if j == 2 else 2
            tij = t_i2 * _axis_dot(rot, a, b, i1, j) - t_i1 * _axis_dot(rot, a, b, i2, j)
            if abs(tij) > (half[a, i1] * _abs_axis_dot(rot, a, b, i2, j) + half[a, i2] * _abs_axis_dot(rot, a, b, i1, j)
                           + half[b, j1] * _abs_axis_dot(rot, a, b, i, j2)
                           + half[b, j2] * _abs_axis_dot(rot, a, b, i, j1)):
                return False
    return True


@device_fn
def _may_pair(a, b, axis, aabb, shape_env, shape_body, rot, center, half):
    ea = shape_env[a]
    eb = shape_env[b]
    if ea >= 0 and eb >= 0 and ea != eb:
        return False
    if shape_body[a] == shape_body[b]:  # same body, or both static (-1)
        return False
    for k in range(3):
        if aabb[a, k] > aabb[b, 3 + k] or aabb[b, k] > aabb[a, 3 + k]:
            return False
    return obb_overlap(a, b, rot, center, half)


# Model: order (sorted candidates), axis, aabb, shape_env, shape_body, rot, center, half
# Data out: counts (count pass) / pair_a, pair_b (scatter pass, at offsets, below capacity)
@device_fn
def _sweep_item(i, write, order, count_sorted, axis, aabb, shape_env, shape_body, rot, center, half,
                counts, offsets, pair_a, pair_b, capacity):
    a = order[i]
    hi = aabb[a, 3 + axis]
    n = 0
    base = 0
    if write:
        base = offsets[i]
    for j in range(i + 1, count_sorted):
        b = order[j]
        if aabb[b, axis] > hi:
            break
        if _may_pair(a, b, axis, aabb, shape_env, shape_body, rot, center, half):
            if write:
                k = base + n
                if k < capacity:
                    pair_a[k] = min(a, b)
                    pair_b[k] = max(a, b)
            n += 1
    if not write:
        counts[i] = n


SWEEP = kernel("broad_phase.sweep", _sweep_item)


def shape_boxes(shape_pose, box_lo, box_hi, pad):
    """World AABBs and oriented boxes of shapes' SDF boxes (host, vectorised).

    Returns ``(aabb (S,6), rot (S,9), center (S,3), half (S,3))``; ``pad`` (S,) widens both.
    """
    from ..transforms import quat_rotate, quat_to_matrix

    rot = quat_to_matrix(shape_pose[:, 3:])  # (S,3,3)
    local_center = 0.5 * (box_lo + box_hi)
    half = 0.5 * (box_hi - box_lo) + pad[:, None]
    center = shape_pose[:, :3] + quat_rotate(shape_pose[:, 3:], local_center)
    extent = np.einsum("sij,sj->si", np.abs(rot), half)
    aabb = np.concatenate([center - extent, center + extent], axis=1)
    return aabb, np.ascontiguousarray(rot.reshape(-1, 9)), center, half


def sweep_order(aabb, candidates):
    """Sort candidate shapes by AABB minimum along the axis of largest spread of their centres."""
    if len(candidates) == 0:
        return np.zeros(0, dtype=np.int32), 0
    mid = 0.5 * (aabb[candidates, :3] + aabb[candidates, 3:])
    axis = int(np.argmax(mid.max(axis=0) - mid.min(axis=0))) if len(candidates) > 1 else 0
    order = candidates[np.argsort(aabb[candidates, axis], kind="stable")]
    return order.astype(np.int32), axis
