"""Packed per-contact data of (sensor, filter) pairs — Isaac Sim's ``launchContactData``, on the
CPU and on CUDA from one source.

Each contact has two sides: its shape-1 body (the contact's force acts on it) and its shape-0
body (the opposite force). A side whose body is a sensor (``body_sensor_map``) and whose
partner body is one of that sensor's filters (``body_filter_map``) belongs to the pair
``p = sensor · filter_count + filter``. Static shapes (``shape_body`` −1) are the world: the
sentinel body ``world_body_idx`` (it may be a filter partner, or even a sensor).

Stages (every one deterministic, so the CPU and a GPU write the same slots):

1. keys: one item per contact side; count → exclusive scan → scatter of the sides that belong
   to a pair (their pair key and side id, in contact order);
2. a stable radix sort of those sides by key, one bit per pass, each pass itself a
   count → scan → scatter split, so every pair's sides stay in contact order;
3. counts: one item per pair, its range in the sorted keys by binary search: the required
   count, clipped to ``max_contact_data_count``; an exclusive scan of the clipped counts gives
   each pair's start index in the packed output;
4. emit: each side whose rank in its pair is below the clip writes, at ``start + rank``: the
   force on the sensor body times ``dt_scale``, the point (world frame, or the sensor body's
   frame when ``points_in_world_space`` is False), the normal pointing into the sensor body
   (along the normal force on it) and the separation.

The required count of every pair is reported next to the written one: nothing is lost
silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import device_fn, get_device, kernel, lower_bound
from ..transforms import quat_rotate_one

__all__ = ["ContactData", "launch_contact_data"]


@device_fn
def _side_key(i, shape0, shape1, shape_body, world_body_idx, body_sensor_map, body_filter_map, filter_count):
    """Pair key of contact side i (contact i >> 1; side 1: shape-1's body is the sensor), −1 none."""
    c = i >> 1
    side = i & 1
    s_own = shape1[c] if side == 1 else shape0[c]
    s_other = shape0[c] if side == 1 else shape1[c]
    own = shape_body[s_own]
    if own < 0:
        own = world_body_idx
    other = shape_body[s_other]
    if other < 0:
        other = world_body_idx
    sensor = body_sensor_map[own]
    if sensor < 0:
        return -1
    f = body_filter_map[sensor, other]
    if f < 0:
        return -1
    return sensor * filter_count + f


# Model: shape_body, body_sensor_map, body_filter_map; Data in: shape0, shape1 (contacts)
# Data out: flags (count pass), out_key, out_side (scatter pass)
@device_fn
def _keys_item(i, write, shape0, shape1, shape_body, world_body_idx, body_sensor_map, body_filter_map, filter_count,
               flags, offsets, out_key, out_side):
    if write:
        if flags[i] != 0:
            o = offsets[i]
            out_key[o] = _side_key(i, shape0, shape1, shape_body, world_body_idx, body_sensor_map, body_filter_map,
                                   filter_count)
            out_side[o] = i
        return
    k = _side_key(i, shape0, shape1, shape_body, world_body_idx, body_sensor_map, body_filter_map, filter_count)
    flags[i] = 1 if k >= 0 else 0


CONTACT_DATA_KEYS = kernel("contact_data.keys", _keys_item)


# Data in: in_key, in_side (sides sorted by the lower bits); Data out: zeros / out_key, out_side
@device_fn
def _split_item(j, write, bit, count, in_key, in_side, zeros, zero_offsets, out_key, out_side):
    b = (in_key[j] >> bit) & 1
    if not write:
        zeros[j] = 1 - b
        return
    if b == 0:
        o = zero_offsets[j]
    else:
        o = zero_offsets[count] + (j - zero_offsets[j])
    out_key[o] = in_key[j]
    out_side[o] = in_side[j]


CONTACT_DATA_SPLIT = kernel("contact_data.split", _split_item)


# Data in: keys (sorted pair keys of the sides); Data out: first, required, clipped (per pair)
@device_fn
def _count_item(p, keys, count, max_count, first, required, clipped):
    lo = lower_bound(keys, count, p)
    hi = lower_bound(keys, count, p + 1)
    first[p] = lo
    required[p] = hi - lo
    clipped[p] = min(hi - lo, max_count)


CONTACT_DATA_COUNT = kernel("contact_data.count", _count_item)


# Model: shape_body, body_q; Data in: keys, sides (sorted), first, start, contact arrays
# Data out: out_forces, out_points, out_normals, out_separations (packed per pair)
@device_fn
def _emit_item(j, keys, sides, first, start, max_count, shape0, shape1, shape_body, world_body_idx, body_q, points,
               normals, forces, separations, dt_scale, points_in_world, out_forces, out_points, out_normals,
               out_separations):
    p = keys[j]
    rank = j - first[p]
    if rank >= max_count:
        return
    o = start[p] + rank
    i = sides[j]
    c = i >> 1
    sign = 1.0 if (i & 1) == 1 else -1.0
    for k in range(3):
        out_forces[o, k] = sign * forces[c, k] * dt_scale
        out_normals[o, k] = sign * normals[c, k]
    out_separations[o] = separations[c]
    px = points[c, 0]
    py = points[c, 1]
    pz = points[c, 2]
    if not points_in_world:
        own = shape_body[shape1[c]] if (i & 1) == 1 else shape_body[shape0[c]]
        if own >= 0 and own != world_body_idx:
            # into the sensor body's frame: R(q)ᵀ (p − t)
            dx = px - body_q[own, 0]
            dy = py - body_q[own, 1]
            dz = pz - body_q[own, 2]
            px, py, pz = quat_rotate_one(-body_q[own, 3], -body_q[own, 4], -body_q[own, 5], body_q[own, 6], dx, dy, dz)
    out_points[o, 0] = px
    out_points[o, 1] = py
    out_points[o, 2] = pz


CONTACT_DATA_EMIT = kernel("contact_data.emit", _emit_item)


@dataclass
class ContactData:
    """Packed contact data of P = sensor_count × filter_count pairs (K = Σ counts rows).

    | field | shape | meaning |
    |---|---|---|
    | ``forces`` | (K,3) | force on the sensor body × dt_scale (N, or N·s with dt_scale = dt) |
    | ``points`` | (K,3) | m, world frame or the sensor body's frame |
    | ``normals`` | (K,3) | unit, pointing into the sensor body |
    | ``separations`` | (K,) | m, negative when penetrating |
    | ``counts`` | (P,) | rows written per pair: min(required, max_contact_data_count) |
    | ``required_counts`` | (P,) | contacts each pair had (more than written means clipped) |
    | ``start_indices`` | (P+1,) | pair p's rows are ``start_indices[p] : start_indices[p] + counts[p]`` |
    """

    forces: np.ndarray
    points: np.ndarray
    normals: np.ndarray
    separations: np.ndarray
    counts: np.ndarray
    required_counts: np.ndarray
    start_indices: np.ndarray
    sensor_count: int
    filter_count: int
    max_contact_data_count: int

    def pair_slice(self, sensor: int, filter: int) -> slice:
        p = int(sensor) * self.filter_count + int(filter)
        s = int(self.start_indices[p])
        return slice(s, s + int(self.counts[p]))

    @property
    def clipped_pairs(self) -> np.ndarray:
        """Pair indices whose contacts did not all fit."""
        return np.flatnonzero(self.required_counts > self.counts)


def launch_contact_data(device="cpu", *, contact_count: int, shape0, shape1, points, normals, forces, separations,
                        shape_body, body_q, body_sensor_map, body_filter_map, filter_count: int, world_body_idx: int,
                        dt_scale: float = 1.0, max_contact_data_count: int,
                        points_in_world_space: bool = False) -> ContactData:
    """Per-contact data of every (sensor, filter) pair, packed (see the module docstring).

    Contacts (the first ``contact_count`` rows): ``shape0``/``shape1`` (N,) shape indices,
    ``points`` (N,3) world, ``normals`` (N,3) unit, from shape 0 toward shape 1, ``forces``
    (N,3) the force on shape 1's body, ``separations`` (N,). Model: ``shape_body`` (S,) body of
    each shape (−1: static, the world), ``body_q`` (B,7) body poses, ``body_sensor_map``
    (W,) body → sensor index or −1 and ``body_filter_map`` (sensor_count, W) (sensor, body) →
    filter index in [0, filter_count) or −1, with W > ``world_body_idx`` (the world's column).
    NumPy arrays in, a :class:`ContactData` of NumPy arrays out, whatever the device.
    """
    dev = get_device(device)
    n = int(contact_count)
    mx = int(max_contact_data_count)
    if mx < 0:
        raise ValueError(f"max_contact_data_count must be >= 0, got {max_contact_data_count!r}")
    fc = int(filter_count)
    if fc < 0:
        raise ValueError(f"filter_count must be >= 0, got {filter_count!r}")
    filter_map = np.ascontiguousarray(body_filter_map, dtype=np.int32)
    sensor_map = np.ascontiguousarray(body_sensor_map, dtype=np.int32).reshape(-1)
    world = int(world_body_idx)
    if filter_map.ndim != 2 or filter_map.shape[1] != len(sensor_map):
        raise ValueError(f"body_filter_map must have shape (sensor_count, {len(sensor_map)}) like body_sensor_map, "
                         f"got {filter_map.shape}")
    if not 0 <= world < len(sensor_map):
        raise ValueError(f"world_body_idx {world} must index body_sensor_map (length {len(sensor_map)})")
    sensor_count = int(filter_map.shape[0])
    if np.any(sensor_map >= sensor_count):
        raise ValueError(f"body_sensor_map names sensor {int(sensor_map.max())} but body_filter_map has {sensor_count}")
    if np.any(filter_map >= fc):
        raise ValueError(f"body_filter_map names filter {int(filter_map.max())} but filter_count is {fc}")
    if n < 0 or n > len(np.asarray(shape0)):
        raise ValueError(f"contact_count {n} must be in [0, {len(np.asarray(shape0))}]")
    return _launch(dev, n, shape0, shape1, points, normals, forces, separations, shape_body, body_q, sensor_map,
                   filter_map, sensor_count, fc, world, float(dt_scale), mx, bool(points_in_world_space))


def _on(dev, a, dtype, shape_tail=()):
    a = np.ascontiguousarray(a, dtype=dtype)
    if a.size == 0:
        a = np.zeros((1,) + shape_tail, dtype=dtype)
    return dev.asarray(a)


def _launch(dev, n, shape0, shape1, points, normals, forces, separations, shape_body, body_q, sensor_map, filter_map,
            sensor_count, filter_count, world, dt_scale, mx, in_world):
    P = sensor_count * filter_count
    d_shape0 = _on(dev, shape0, np.int32)
    d_shape1 = _on(dev, shape1, np.int32)
    d_points = _on(dev, points, np.float64, (3,))
    d_normals = _on(dev, normals, np.float64, (3,))
    d_forces = _on(dev, forces, np.float64, (3,))
    d_sep = _on(dev, separations, np.float64)
    d_shape_body = _on(dev, shape_body, np.int32)
    d_body_q = _on(dev, np.asarray(body_q, dtype=np.float64).reshape(-1, 7), np.float64, (7,))
    d_sensor = _on(dev, sensor_map, np.int32)
    d_filter = _on(dev, filter_map, np.int32, (filter_map.shape[1],))

    # 1. keys of the contact sides that belong to a pair, in contact order
    sides = 2 * n
    flags = dev.empty(max(sides, 1), np.int32)
    offsets = dev.empty(sides + 1, np.int64)
    key_a = dev.empty(max(sides, 1), np.int32)
    side_a = dev.empty(max(sides, 1), np.int32)
    args = (d_shape0, d_shape1, d_shape_body, world, d_sensor, d_filter, max(filter_count, 1))
    dev.launch(CONTACT_DATA_KEYS, sides, False, *args, flags, offsets, key_a, side_a)
    m = dev.exclusive_scan(flags, offsets, sides) if sides else 0
    dev.launch(CONTACT_DATA_KEYS, sides, True, *args, flags, offsets, key_a, side_a)

    # 2. stable radix sort by key, one bit per pass
    key_b = dev.empty(max(m, 1), np.int32)
    side_b = dev.empty(max(m, 1), np.int32)
    zeros = dev.empty(max(m, 1), np.int32)
    zero_offsets = dev.empty(m + 1, np.int64)
    bits = max(1, int(max(P - 1, 0)).bit_length())
    src, dst = (key_a, side_a), (key_b, side_b)
    if m:
        for bit in range(bits):
            dev.launch(CONTACT_DATA_SPLIT, m, False, bit, m, src[0], src[1], zeros, zero_offsets, dst[0], dst[1])
            dev.exclusive_scan(zeros, zero_offsets, m)
            dev.launch(CONTACT_DATA_SPLIT, m, True, bit, m, src[0], src[1], zeros, zero_offsets, dst[0], dst[1])
            src, dst = dst, src
    keys, side_ids = src

    # 3. per pair: range in the sorted keys, required and clipped counts; start indices
    first = dev.empty(max(P, 1), np.int64)
    required = dev.empty(max(P, 1), np.int64)
    clipped = dev.empty(max(P, 1), np.int64)
    start = dev.empty(P + 1, np.int64)
    dev.launch(CONTACT_DATA_COUNT, P, keys, m, mx, first, required, clipped)
    total = dev.exclusive_scan(clipped, start, P) if P else 0

    # 4. emit
    out_forces = dev.full((max(total, 1), 3), np.nan, np.float64)
    out_points = dev.full((max(total, 1), 3), np.nan, np.float64)
    out_normals = dev.full((max(total, 1), 3), np.nan, np.float64)
    out_sep = dev.full(max(total, 1), np.nan, np.float64)
    dev.launch(CONTACT_DATA_EMIT, m, keys, side_ids, first, start, mx, d_shape0, d_shape1, d_shape_body, world,
               d_body_q, d_points, d_normals, d_forces, d_sep, dt_scale, in_world, out_forces, out_points,
               out_normals, out_sep)
    host = dev.to_host
    return ContactData(forces=host(out_forces)[:total], points=host(out_points)[:total],
                       normals=host(out_normals)[:total], separations=host(out_sep)[:total],
                       counts=host(clipped)[:P].copy(), required_counts=host(required)[:P].copy(),
                       start_indices=host(start)[: P + 1].copy(), sensor_count=sensor_count,
                       filter_count=filter_count, max_contact_data_count=mx)
