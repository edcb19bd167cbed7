"""Stage 1 — broad phase: candidate pairs of hydroelastic shapes.

Both shapes hydroelastic with an SDF, allowed to collide by the pair rule (:func:`pair_allowed`,
the device twin of :meth:`hydro.scene.model.Model.may_collide`: different bodies, so two static
shapes never pair; the same env or a global shape, env −1; both collision-enabled; their
collision groups allow it; the pair not filtered), world AABBs of their SDF boxes overlapping
(padded by margins and gaps), then an exact oriented-box (separating axis) test of the two
SDF boxes. Shapes are swept along the axis of largest spread: the host sorts the
AABB minima, and each item ``i`` walks forward while the boxes can still overlap, so the cost
follows the number of nearby pairs, not the square of the shape count. Count → scan → scatter
gives the same pair order on every target.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..backend import cpu_jit, device_fn, kernel, lower_bound
from ..geometry.primitives import CAPSULE, MESH, PLANE, SPHERE


class PairFilter(NamedTuple):
    """The model's pair rule, on one device, passed to kernels as one argument (:func:`pair_filter`)."""

    shape_env: Any  # int32 (S,): env, −1 global
    shape_body: Any  # int32 (S,): body, −1 static
    collision_enabled: Any  # uint8 (S,): physics:collisionEnabled
    group: Any  # int32 (S,): the shape's collision-group set
    group_mask: Any  # uint8 (C, C): whether group sets i and j may collide
    filtered_keys: Any  # int64 (K + 1,): filtered pairs a·S + b (a < b), ascending (one spare entry)
    filtered_count: int  # K
    shape_count: int  # S


def pair_filter(model, device) -> PairFilter:
    """The :class:`PairFilter` of ``model`` on ``device``. A model without the filtering fields (a
    plain namespace of shape arrays, as some tests build) lets every shape collide."""
    n = len(model.shape_path)
    enabled = getattr(model, "shape_collision_enabled", None)
    enabled = np.ones(n, np.uint8) if enabled is None else np.asarray(enabled, dtype=np.uint8).reshape(n)
    group = getattr(model, "shape_collision_group", None)
    group = np.zeros(n, np.int32) if group is None else np.asarray(group, dtype=np.int32).reshape(n)
    mask = getattr(model, "collision_group_mask", None)
    mask = np.ones((1, 1), np.uint8) if mask is None else np.ascontiguousarray(mask, dtype=np.uint8)
    pairs = getattr(model, "filtered_shape_pairs", None)
    pairs = np.zeros((0, 2), np.int64) if pairs is None else np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    keys = np.sort(np.minimum(pairs[:, 0], pairs[:, 1]) * n + np.maximum(pairs[:, 0], pairs[:, 1]))
    keys = np.append(keys, np.iinfo(np.int64).max)  # never empty (CUDA takes no empty arrays)
    return PairFilter(device.asarray(np.asarray(model.shape_env, dtype=np.int32)),
                      device.asarray(np.asarray(model.shape_body, dtype=np.int32)), device.asarray(enabled),
                      device.asarray(group), device.asarray(mask), device.asarray(keys), len(pairs), n)


@device_fn(inline=True)
def pair_allowed(a, b, filt):
    """Whether shapes ``a`` and ``b`` may collide at all: the device twin of
    :meth:`hydro.scene.model.Model.may_collide` (same rule, same order of tests)."""
    if a == b:
        return False
    if filt.shape_body[a] == filt.shape_body[b]:  # same body, or both static (-1)
        return False
    ea = filt.shape_env[a]
    eb = filt.shape_env[b]
    if ea >= 0 and eb >= 0 and ea != eb:
        return False
    if filt.collision_enabled[a] == 0 or filt.collision_enabled[b] == 0:
        return False
    if filt.group_mask[filt.group[a], filt.group[b]] == 0:
        return False
    if filt.filtered_count > 0:
        lo = min(a, b)
        hi = max(a, b)
        key = lo * filt.shape_count + hi
        k = lower_bound(filt.filtered_keys, filt.filtered_count, key)
        if k < filt.filtered_count and filt.filtered_keys[k] == key:
            return False
    return True


@device_fn(inline=True)
def _axis_dot(rot, a, b, i, j):
    """A_i · B_j: axis i of box a against axis j of box b (``rot`` rows are row-major matrices)."""
    return rot[a, i] * rot[b, j] + rot[a, 3 + i] * rot[b, 3 + j] + rot[a, 6 + i] * rot[b, 6 + j]


@device_fn(inline=True)
def _abs_axis_dot(rot, a, b, i, j):
    """|A_i · B_j| padded against near-parallel axes (their cross products vanish)."""
    return abs(_axis_dot(rot, a, b, i, j)) + 1e-9


@device_fn(inline=True)
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


@device_fn(inline=True)
def aabb_overlap(a, b, aabb):
    """Whether the world AABBs (S, 6: lo, hi) of shapes ``a`` and ``b`` overlap."""
    for k in range(3):
        if aabb[a, k] > aabb[b, 3 + k] or aabb[b, k] > aabb[a, 3 + k]:
            return False
    return True


@device_fn(inline=True)
def _may_pair(a, b, axis, aabb, filt, rot, center, half):
    if not aabb_overlap(a, b, aabb):  # the cheap test first
        return False
    if not pair_allowed(a, b, filt):
        return False
    return obb_overlap(a, b, rot, center, half)


# Model: order (sorted candidates), axis, aabb, filt (PairFilter), rot, center, half
# Data out: counts (count pass) / pair_a, pair_b (scatter pass, at offsets, below capacity)
@device_fn
def _sweep_item(i, write, order, count_sorted, axis, aabb, filt, rot, center, half,
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
        if _may_pair(a, b, axis, aabb, filt, rot, center, half):
            if write:
                k = base + n
                if k < capacity:
                    pair_a[k] = min(a, b)
                    pair_b[k] = max(a, b)
            n += 1
    if not write:
        counts[i] = n


SWEEP = kernel("broad_phase.sweep", _sweep_item)


@cpu_jit
def shape_boxes_into(shape_pose, box_lo, box_hi, pad, aabb, rot, center, half):
    """World AABBs ``aabb`` (S, 6: lo, hi), rotations ``rot`` (S, 9, row-major), centres and half
    extents (S, 3) of the shapes' SDF boxes ``box_lo .. box_hi`` (local) at ``shape_pose`` (S, 7:
    position, unit quaternion x, y, z, w), each widened by ``pad`` (S,)."""
    for s in range(shape_pose.shape[0]):
        x = shape_pose[s, 3]
        y = shape_pose[s, 4]
        z = shape_pose[s, 5]
        w = shape_pose[s, 6]
        r0 = 1.0 - 2.0 * (y * y + z * z)
        r1 = 2.0 * (x * y - z * w)
        r2 = 2.0 * (x * z + y * w)
        r3 = 2.0 * (x * y + z * w)
        r4 = 1.0 - 2.0 * (x * x + z * z)
        r5 = 2.0 * (y * z - x * w)
        r6 = 2.0 * (x * z - y * w)
        r7 = 2.0 * (y * z + x * w)
        r8 = 1.0 - 2.0 * (x * x + y * y)
        rot[s, 0] = r0
        rot[s, 1] = r1
        rot[s, 2] = r2
        rot[s, 3] = r3
        rot[s, 4] = r4
        rot[s, 5] = r5
        rot[s, 6] = r6
        rot[s, 7] = r7
        rot[s, 8] = r8
        for k in range(3):
            half[s, k] = 0.5 * (box_hi[s, k] - box_lo[s, k]) + pad[s]
        lx = 0.5 * (box_lo[s, 0] + box_hi[s, 0])
        ly = 0.5 * (box_lo[s, 1] + box_hi[s, 1])
        lz = 0.5 * (box_lo[s, 2] + box_hi[s, 2])
        for k in range(3):
            c = shape_pose[s, k] + rot[s, 3 * k] * lx + rot[s, 3 * k + 1] * ly + rot[s, 3 * k + 2] * lz
            e = abs(rot[s, 3 * k]) * half[s, 0] + abs(rot[s, 3 * k + 1]) * half[s, 1] + abs(rot[s, 3 * k + 2]) * half[s, 2]
            center[s, k] = c
            aabb[s, k] = c - e
            aabb[s, 3 + k] = c + e


def shape_boxes(shape_pose, box_lo, box_hi, pad):
    """World AABBs and oriented boxes of shapes' SDF boxes (host).

    Returns ``(aabb (S,6), rot (S,9), center (S,3), half (S,3))``; ``pad`` (S,) widens both.
    """
    n = len(shape_pose)
    aabb = np.empty((n, 6))
    rot = np.empty((n, 9))
    center = np.empty((n, 3))
    half = np.empty((n, 3))
    shape_boxes_into(np.ascontiguousarray(shape_pose, dtype=np.float64), np.ascontiguousarray(box_lo, dtype=np.float64),
                     np.ascontiguousarray(box_hi, dtype=np.float64), np.ascontiguousarray(pad, dtype=np.float64),
                     aabb, rot, center, half)
    return aabb, rot, center, half


@cpu_jit
def sweep_order_into(aabb, candidates, order):
    """Sort the candidate shapes into ``order`` by AABB minimum along the axis of largest spread of
    their centres (ties keep the candidates' order); returns the axis."""
    n = candidates.shape[0]
    if n == 0:
        return 0
    axis = 0
    if n > 1:
        best = -1.0
        for k in range(3):
            lo = np.inf
            hi = -np.inf
            for c in range(n):
                s = candidates[c]
                m = 0.5 * (aabb[s, k] + aabb[s, 3 + k])
                lo = min(lo, m)
                hi = max(hi, m)
            if hi - lo > best:
                best = hi - lo
                axis = k
    # a stable bottom-up merge sort of the candidates by key (Numba's own sort would cost more to
    # compile than the whole broad phase)
    keys = np.empty(n)
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for c in range(n):
        keys[c] = aabb[candidates[c], axis]
        idx[c] = c
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for k in range(lo, hi):
                if i < mid and (j >= hi or keys[idx[i]] <= keys[idx[j]]):
                    tmp[k] = idx[i]
                    i += 1
                else:
                    tmp[k] = idx[j]
                    j += 1
        for k in range(n):
            idx[k] = tmp[k]
        width *= 2
    for c in range(n):
        order[c] = candidates[idx[c]]
    return axis


def sweep_order(aabb, candidates):
    """Sort candidate shapes by AABB minimum along the axis of largest spread of their centres."""
    order = np.empty(len(candidates), dtype=np.int32)
    axis = sweep_order_into(np.ascontiguousarray(aabb, dtype=np.float64),
                            np.ascontiguousarray(candidates, dtype=np.int32), order)
    return order, int(axis)


# ============================================================================================
# The default contact path's broad phase: every pair that may collide, but the hydroelastic ones


@device_fn(inline=True)
def needs_scratch(kind_a, kind_b):
    """Whether a point-contact pair of these kinds runs a narrow phase that needs a scratch row
    (box–box and the general convex path; not planes, meshes, or spheres and capsules)."""
    if kind_a == PLANE or kind_b == PLANE or kind_a == MESH or kind_b == MESH:
        return False
    round_a = kind_a == SPHERE or kind_a == CAPSULE
    round_b = kind_b == SPHERE or kind_b == CAPSULE
    return not (round_a and round_b)


@device_fn(inline=True)
def _point_pair(a, b, write, k, capacity, routed, kinds, pair_a, pair_b, pair_scratch):
    """Record pair (a, b) at output k (scatter pass, below capacity)."""
    if write and k < capacity:
        lo = min(a, b)
        hi = max(a, b)
        pair_a[k] = lo
        pair_b[k] = hi
        pair_scratch[k] = 1 if needs_scratch(kinds[lo], kinds[hi]) else 0


@device_fn(inline=True)
def _near_plane(s, pl, rot, pos, bound, pad):
    """Whether shape s's bounding ball (radius ``bound[s]``, padded) reaches plane pl's half-space."""
    nx = rot[pl, 2]
    ny = rot[pl, 5]
    nz = rot[pl, 8]
    d = (pos[s, 0] - pos[pl, 0]) * nx + (pos[s, 1] - pos[pl, 1]) * ny + (pos[s, 2] - pos[pl, 2]) * nz
    return d - bound[s] <= pad[s] + pad[pl]


# Model: order (sorted non-plane shapes), axis, aabb, filt (PairFilter), routed (uint8: takes the
# hydroelastic path), kinds, planes (plane shapes), bound, pad (margin + gap); Data in: rot, pos
# Data out: counts (count pass) / pair_a, pair_b, pair_scratch (scatter pass, at offsets, below capacity)
@device_fn
def _point_sweep_item(i, write, order, count_sorted, axis, aabb, filt, routed, kinds, planes, plane_count, bound,
                      pad, rot, pos, counts, offsets, pair_a, pair_b, pair_scratch, capacity):
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
        if routed[a] != 0 and routed[b] != 0:
            continue
        if aabb_overlap(a, b, aabb) and pair_allowed(a, b, filt):  # the cheap test first
            _point_pair(a, b, write, base + n, capacity, routed, kinds, pair_a, pair_b, pair_scratch)
            n += 1
    for q in range(plane_count):
        pl = planes[q]
        if pair_allowed(a, pl, filt) and _near_plane(a, pl, rot, pos, bound, pad):
            _point_pair(a, pl, write, base + n, capacity, routed, kinds, pair_a, pair_b, pair_scratch)
            n += 1
    if not write:
        counts[i] = n


POINT_SWEEP = kernel("broad_phase.point_sweep", _point_sweep_item)
