"""Packed per-contact data of (sensor, filter) pairs: an earlier form of
:func:`hydro.sim.contact_data.launch_contact_data` for contacts given as world points with their
forces on shape 1. The simulation no longer uses it: :meth:`~hydro.sim.simulation.Simulation.contact_data`
is the documented call on :meth:`~hydro.sim.simulation.Simulation.rigid_contacts` (Newton's layout,
forces on shape 0).

Differences from the documented launchers: the contacts come as world points with their
separations (not Newton's body-local ``point0``/``point1`` and thicknesses), the point written is
the contact point (world, or in the sensor body's frame), and the output is packed: each pair's
rows follow the previous pair's in one (K,3) array, ``start_indices`` the exclusive prefix sum
of the *clipped* counts. The pair rule, the stable sort and the counts are the same kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import device_fn, get_device, kernel
from ..errors import InputError
from ..transforms import quat_rotate_one
from .contact_data import CONTACT_DATA_COUNT, _host, _input, _pair_map, _sorted_sides

__all__ = ["ContactData", "pack_contact_data"]


# The packed form. Model: shape_body, body_q; Data in: keys, sides (sorted), first, start, contacts
# with world points and separations; Data out: out_forces, out_points, out_normals, out_separations
@device_fn
def _emit_packed_item(j, keys, sides, first, start, max_count, shape0, shape1, shape_body, world_body_idx, body_q,
                      points, normals, forces, separations, dt_scale, points_in_world, out_forces, out_points,
                      out_normals, out_separations):
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


CONTACT_DATA_EMIT_PACKED = kernel("contact_data.emit_packed", _emit_packed_item)


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


def pack_contact_data(device="cpu", *, contact_count: int, shape0, shape1, points, normals, forces, separations,
                      shape_body, body_q, body_sensor_map, body_filter_map, filter_count: int, world_body_idx: int,
                      dt_scale: float = 1.0, max_contact_data_count: int,
                      points_in_world_space: bool = False) -> ContactData:
    """Per-contact data of every (sensor, filter) pair, packed: each pair's rows follow the
    previous pair's (no empty slots), ``start_indices`` the exclusive prefix sum of the clipped
    counts.

    Contacts (the first ``contact_count`` rows): ``shape0``/``shape1`` (N,) shape indices,
    ``points`` (N,3) world, ``normals`` (N,3) unit, from shape 0 toward shape 1, ``forces``
    (N,3) the force on shape 1's body, ``separations`` (N,). Model: ``shape_body`` (S,) body of
    each shape (−1: static, the world), ``body_q`` (B,7) body poses, ``body_sensor_map``
    (W,) body → sensor index or −1 and ``body_filter_map`` (sensor_count, W) (sensor, body) →
    filter index in [0, filter_count) or −1, with W > ``world_body_idx`` (the world's column).
    NumPy arrays in, a :class:`ContactData` of NumPy arrays out, whatever the device. Points are
    the contact point (world), or that point in the sensor body's frame.
    """
    dev = get_device(device)
    n = int(contact_count)
    mx = int(max_contact_data_count)
    if mx < 0:
        raise InputError(f"max_contact_data_count must be >= 0, got {max_contact_data_count!r}")
    fc = int(filter_count)
    if fc < 0:
        raise InputError(f"filter_count must be >= 0, got {filter_count!r}")
    filter_map = np.ascontiguousarray(body_filter_map, dtype=np.int32)
    sensor_map = np.ascontiguousarray(body_sensor_map, dtype=np.int32).reshape(-1)
    world = int(world_body_idx)
    if filter_map.ndim != 2 or filter_map.shape[1] != len(sensor_map):
        raise InputError(f"body_filter_map must have shape (sensor_count, {len(sensor_map)}) like body_sensor_map, "
                         f"got {filter_map.shape}")
    if not 0 <= world < len(sensor_map):
        raise InputError(f"world_body_idx {world} must index body_sensor_map (length {len(sensor_map)})")
    if n < 0 or n > len(np.asarray(shape0)):
        raise InputError(f"contact_count {n} must be in [0, {len(np.asarray(shape0))}]")
    pm, P = _pair_map(dev, shape_body, sensor_map, len(sensor_map), filter_map, len(sensor_map), fc, world)
    sensor_count = pm.sensor_count

    def on(a, dtype, tail=()):
        return _input(dev, "array", a, dtype, tail)

    d_shape0, d_shape1 = on(shape0, np.int32), on(shape1, np.int32)
    keys, side_ids, m = _sorted_sides(dev, n, d_shape0, d_shape1, pm, P)
    first = dev.empty(max(P, 1), np.int64)
    required = dev.empty(max(P, 1), np.int64)
    clipped = dev.empty(max(P, 1), np.int64)
    start = dev.empty(P + 1, np.int64)
    dev.launch(CONTACT_DATA_COUNT, P, keys, m, mx, first, required, clipped)
    total = dev.exclusive_scan(clipped, start, P) if P else 0
    out_forces = dev.full((max(total, 1), 3), np.nan, np.float64)
    out_points = dev.full((max(total, 1), 3), np.nan, np.float64)
    out_normals = dev.full((max(total, 1), 3), np.nan, np.float64)
    out_sep = dev.full(max(total, 1), np.nan, np.float64)
    dev.launch(CONTACT_DATA_EMIT_PACKED, m, keys, side_ids, first, start, mx, d_shape0, d_shape1, pm.shape_body, world,
               on(np.asarray(body_q, dtype=np.float64).reshape(-1, 7), np.float64, (7,)), on(points, np.float64, (3,)),
               on(normals, np.float64, (3,)), on(forces, np.float64, (3,)), on(separations, np.float64),
               float(dt_scale), bool(points_in_world_space), out_forces, out_points, out_normals, out_sep)
    return ContactData(forces=_host(dev, out_forces)[:total], points=_host(dev, out_points)[:total],
                       normals=_host(dev, out_normals)[:total], separations=_host(dev, out_sep)[:total],
                       counts=_host(dev, clipped)[:P].copy(), required_counts=_host(dev, required)[:P].copy(),
                       start_indices=_host(dev, start)[: P + 1].copy(), sensor_count=sensor_count,
                       filter_count=fc, max_contact_data_count=mx)
