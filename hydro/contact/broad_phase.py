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
def obb_overlap(a, b, rot, center, half):
    """Separating-axis test of oriented boxes ``a`` and ``b``.

    ``rot[s]`` is the row-major world rotation (9,), ``center[s]`` the world centre and
    ``half[s]`` the half extents of box ``s``.
    """
    # translation in A's frame
    dx = center[b, 0] - center[a, 0]
    dy = center[b, 1] - center[a, 1]
    dz = center[b, 2] - center[a, 2]
    t0 = rot[a, 0] * dx + rot[a, 3] * dy + rot[a, 6] * dz
    t1 = rot[a, 1] * dx + rot[a, 4] * dy + rot[a, 7] * dz
    t2 = rot[a, 2] * dx + rot[a, 5] * dy + rot[a, 8] * dz
    # R[i][j] = A_i · B_j (columns are the box axes)
    r00 = rot[a, 0] * rot[b, 0] + rot[a, 3] * rot[b, 3] + rot[a, 6] * rot[b, 6]
    r01 = rot[a, 0] * rot[b, 1] + rot[a, 3] * rot[b, 4] + rot[a, 6] * rot[b, 7]
    r02 = rot[a, 0] * rot[b, 2] + rot[a, 3] * rot[b, 5] + rot[a, 6] * rot[b, 8]
    r10 = rot[a, 1] * rot[b, 0] + rot[a, 4] * rot[b, 3] + rot[a, 7] * rot[b, 6]
    r11 = rot[a, 1] * rot[b, 1] + rot[a, 4] * rot[b, 4] + rot[a, 7] * rot[b, 7]
    r12 = rot[a, 1] * rot[b, 2] + rot[a, 4] * rot[b, 5] + rot[a, 7] * rot[b, 8]
    r20 = rot[a, 2] * rot[b, 0] + rot[a, 5] * rot[b, 3] + rot[a, 8] * rot[b, 6]
    r21 = rot[a, 2] * rot[b, 1] + rot[a, 5] * rot[b, 4] + rot[a, 8] * rot[b, 7]
    r22 = rot[a, 2] * rot[b, 2] + rot[a, 5] * rot[b, 5] + rot[a, 8] * rot[b, 8]
    eps = 1e-9
    a00 = abs(r00) + eps
    a01 = abs(r01) + eps
    a02 = abs(r02) + eps
    a10 = abs(r10) + eps
    a11 = abs(r11) + eps
    a12 = abs(r12) + eps
    a20 = abs(r20) + eps
    a21 = abs(r21) + eps
    a22 = abs(r22) + eps
    ha0 = half[a, 0]
    ha1 = half[a, 1]
    ha2 = half[a, 2]
    hb0 = half[b, 0]
    hb1 = half[b, 1]
    hb2 = half[b, 2]
    # A's axes
    if abs(t0) > ha0 + hb0 * a00 + hb1 * a01 + hb2 * a02:
        return False
    if abs(t1) > ha1 + hb0 * a10 + hb1 * a11 + hb2 * a12:
        return False
    if abs(t2) > ha2 + hb0 * a20 + hb1 * a21 + hb2 * a22:
        return False
    # B's axes
    if abs(t0 * r00 + t1 * r10 + t2 * r20) > ha0 * a00 + ha1 * a10 + ha2 * a20 + hb0:
        return False
    if abs(t0 * r01 + t1 * r11 + t2 * r21) > ha0 * a01 + ha1 * a11 + ha2 * a21 + hb1:
        return False
    if abs(t0 * r02 + t1 * r12 + t2 * r22) > ha0 * a02 + ha1 * a12 + ha2 * a22 + hb2:
        return False
    # cross products A_i x B_j
    if abs(t2 * r10 - t1 * r20) > ha1 * a20 + ha2 * a10 + hb1 * a02 + hb2 * a01:
        return False
    if abs(t2 * r11 - t1 * r21) > ha1 * a21 + ha2 * a11 + hb0 * a02 + hb2 * a00:
        return False
    if abs(t2 * r12 - t1 * r22) > ha1 * a22 + ha2 * a12 + hb0 * a01 + hb1 * a00:
        return False
    if abs(t0 * r20 - t2 * r00) > ha0 * a20 + ha2 * a00 + hb1 * a12 + hb2 * a11:
        return False
    if abs(t0 * r21 - t2 * r01) > ha0 * a21 + ha2 * a01 + hb0 * a12 + hb2 * a10:
        return False
    if abs(t0 * r22 - t2 * r02) > ha0 * a22 + ha2 * a02 + hb0 * a11 + hb1 * a10:
        return False
    if abs(t1 * r00 - t0 * r10) > ha0 * a10 + ha1 * a00 + hb1 * a22 + hb2 * a21:
        return False
    if abs(t1 * r01 - t0 * r11) > ha0 * a11 + ha1 * a01 + hb0 * a22 + hb2 * a20:
        return False
    if abs(t1 * r02 - t0 * r12) > ha0 * a12 + ha1 * a02 + hb0 * a21 + hb1 * a20:
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
