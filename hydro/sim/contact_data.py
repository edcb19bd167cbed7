"""Per-contact data of (sensor, filter) pairs — Isaac Sim's Newton tensor functions
``launchCountContactsPerPair`` and ``launchContactData``, on the CPU and on CUDA from one source.

Over 500 lines: the parameter table, the kernels and the launchers' argument checks belong together.

They read a contact buffer in Newton's layout (:class:`~hydro.contact.types.RigidContacts`,
``rigid_contact_*``: shape indices, a contact point on each shape in the frame of that shape's
body, the normal from shape 0 toward shape 1, the force on shape 0 — Newton's convention, the
force exerted on body0 by body1 —, the two shapes' thicknesses) and write, for every sensor/filter pair, its contacts::

    launch_count_contacts_per_pair(contact_count, shape0, shape1, shape_body, body_sensor_map,
        body_sensor_map_size, body_filter_map, num_bodies, filter_count, world_body_idx, counts,
        rigid_contact_max)
    start_indices = exclusive prefix sum of counts
    launch_contact_data(contact_count, shape0, shape1, point0, point1, normal, contact_force,
        thickness0, thickness1, shape_body, body_q, body_sensor_map, body_sensor_map_size,
        body_filter_map, num_bodies, filter_count, world_body_idx, dt_scale,
        max_contact_data_count, out_forces, out_points, out_normals, out_separations, out_counts,
        start_indices, rigid_contact_max, points_in_world_space=False)

The parameters, in the documented order (snake_case names):

| parameter | type | meaning |
|---|---|---|
| ``contact_count`` | int32 (1,) or int | live contacts; rows ``min(contact_count, rigid_contact_max)`` are read |
| ``shape0``, ``shape1`` | int32 (max,) | the contact's two shapes (0 = A, 1 = B) |
| ``point0``, ``point1`` | float32 (max,3) | the contact point on shape 0 / 1 in the frame of that shape's body (world for a static shape) |
| ``normal`` | float32 (max,3) | unit, world, from shape 0 toward shape 1 |
| ``contact_force`` | float32 (max,3) | N, world, the force on shape 0 (by shape 1; as Newton's ``Contacts.force``); shape 1 feels its opposite |
| ``thickness0``, ``thickness1`` | float32 (max,) | m, the shapes' thicknesses (margins) |
| ``shape_body`` | int32 (shapes,) | the body of each shape, −1 for a static shape |
| ``body_q`` | float32 (bodies,7) | body poses: position, quaternion (x, y, z, w) |
| ``body_sensor_map`` | int32 (body_sensor_map_size,) | body → sensor index, −1 none |
| ``body_filter_map`` | int32 (sensors, num_bodies) | (sensor, body) → filter index in [0, filter_count), −1 none |
| ``num_bodies`` | int | columns of ``body_filter_map``: the bodies, the world sentinel included |
| ``filter_count`` | int | filters per sensor (F) |
| ``world_body_idx`` | int | the body index a static shape counts as (the static world); outside [0, num_bodies) static shapes never count |
| ``dt_scale`` | float | every force is multiplied by it (``dt``: impulses in N·s) |
| ``max_contact_data_count`` | int | contacts kept per pair (M) |
| ``out_forces``, ``out_points``, ``out_normals`` | float32 (S,F,M,3) | per pair, its contacts in slots 0 … count−1 |
| ``out_separations`` | float32 (S,F,M) | m, negative when penetrating |
| ``out_counts`` / ``counts`` | uint32 (S·F,) | contacts written per pair, clipped to M / contacts per pair |
| ``start_indices`` | uint32 (S·F,) | the exclusive prefix sum of ``counts`` |
| ``rigid_contact_max`` | int | capacity of the contact arrays |
| ``points_in_world_space`` | bool | points in the world frame, else in the frame of the sensor's body |
| ``stream`` | — | accepted for the signature; hydro launches on the default stream |

Both return True. A contact has two *sides*: shape 0's body feels ``contact_force`` and shape
1's body its opposite. A side belongs to pair ``p = sensor · F + filter`` when its own body is
a sensor (``body_sensor_map``) and the other shape's body is one of that sensor's filters
(``body_filter_map``); a static shape is the body ``world_body_idx``. What a side writes:

- force: the force on the sensor's body × ``dt_scale``; normal: pointing into the sensor's
  shape (along the normal force on it: ``normal`` on shape 1's side, its opposite on shape 0's);
- point: the contact point on the sensor's own shape, in its body's frame or, with
  ``points_in_world_space``, in the world;
- separation: ``normal · (world(point1) − world(point0)) − thickness0 − thickness1``.

Slots: a pair's sides in contact order (a contact's shape-0 side first), the first
``max_contact_data_count`` of them; ``out_counts`` says how many were written. Rows past a
pair's count are left as they were. Every stage is count → scan → scatter or a stable radix
sort, so the CPU and a GPU write the same slots. ``start_indices`` must be the exclusive prefix
sum of ``launch_count_contacts_per_pair``'s counts (it is checked): a pair's sides are at
``start_indices[p] …`` in the sorted list of sides, which gives each side its slot.

Where the arrays are says where it runs: CUDA when the outputs are CUDA arrays (inputs given as
NumPy arrays are copied to the device), else the CPU; outputs are written in place and must
have the documented dtypes. :func:`rigid_contact_data` does the three steps on a
``RigidContacts``-like object and returns the result on the host.

:meth:`hydro.sim.simulation.Simulation.rigid_contacts` gives the last physics step's buffer with
``rigid_contact_force`` filled by the solver, and :meth:`~hydro.sim.simulation.Simulation.contact_data`
is :func:`rigid_contact_data` on it. :func:`hydro.sim.contact_data_packed.pack_contact_data` is
an earlier, packed form (points in the world frame, separations given, each pair's rows at
``start_indices[p]`` of one (K,3) array, its forces on shape 1), no longer used by the
simulation; it shares this module's pair rule and sort.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..backend import CUDASIM, Device, device_fn, get_device, kernel, lower_bound
from ..errors import InputError
from ..transforms import quat_rotate_one

__all__ = ["PairContactData", "PairMap", "RigidView", "launch_count_contacts_per_pair", "launch_contact_data",
           "rigid_contact_data"]


class PairMap(NamedTuple):
    """Which contact sides belong to which (sensor, filter) pair, passed to kernels as one argument."""

    shape_body: Any  # (shapes,) int32: body of each shape, −1 static
    body_sensor_map: Any  # (body_sensor_map_size,) int32: body → sensor, −1 none
    body_filter_map: Any  # (sensors · num_bodies,) int32: (sensor, body) → filter, −1 none
    world_body_idx: int
    num_bodies: int
    sensor_count: int
    filter_count: int


class RigidView(NamedTuple):
    """The contact buffer in Newton's layout, passed to the emit kernel as one argument."""

    shape0: Any
    shape1: Any
    point0: Any
    point1: Any
    normal: Any
    force: Any
    thickness0: Any
    thickness1: Any


# ============================================================================================
# Device helpers and kernels


@device_fn
def _side_key(i, shape0, shape1, pm):
    """Pair key of contact side i (contact i >> 1; side 1: shape 1's body is the sensor), −1 none."""
    c = i >> 1
    s_own = shape1[c] if (i & 1) == 1 else shape0[c]
    s_other = shape0[c] if (i & 1) == 1 else shape1[c]
    shape_count = len(pm.shape_body)
    if s_own < 0 or s_own >= shape_count or s_other < 0 or s_other >= shape_count:
        return -1
    own = pm.shape_body[s_own]
    if own < 0:
        own = pm.world_body_idx
    other = pm.shape_body[s_other]
    if other < 0:
        other = pm.world_body_idx
    if own < 0 or own >= len(pm.body_sensor_map) or other < 0 or other >= pm.num_bodies:
        return -1
    sensor = pm.body_sensor_map[own]
    if sensor < 0 or sensor >= pm.sensor_count:
        return -1
    f = pm.body_filter_map[sensor * pm.num_bodies + other]
    if f < 0 or f >= pm.filter_count:
        return -1
    return sensor * pm.filter_count + f


# Model: pm (PairMap); Data in: shape0, shape1 (contacts)
# Data out: flags (count pass), out_key, out_side (scatter pass, in contact-side order)
@device_fn
def _keys_item(i, write, shape0, shape1, pm, flags, offsets, out_key, out_side):
    if write:
        if flags[i] != 0:
            o = offsets[i]
            out_key[o] = _side_key(i, shape0, shape1, pm)
            out_side[o] = i
        return
    flags[i] = 1 if _side_key(i, shape0, shape1, pm) >= 0 else 0


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


# Data in: keys (sorted pair keys of the sides); Data out: first (where pair p's sides start),
# count_out (its sides), clipped_out (min(count, max_count)) — any integer dtypes
@device_fn
def _count_item(p, keys, count, max_count, first, count_out, clipped_out):
    lo = lower_bound(keys, count, p)
    hi = lower_bound(keys, count, p + 1)
    first[p] = lo
    count_out[p] = hi - lo
    clipped_out[p] = min(hi - lo, max_count)


CONTACT_DATA_COUNT = kernel("contact_data.count", _count_item)


@device_fn
def _to_world(body_q, b, px, py, pz):
    """A point in body b's frame in the world (b < 0: a static shape's point, already world)."""
    if b < 0:
        return px, py, pz
    rx, ry, rz = quat_rotate_one(np.float64(body_q[b, 3]), np.float64(body_q[b, 4]), np.float64(body_q[b, 5]),
                                 np.float64(body_q[b, 6]), px, py, pz)
    return np.float64(body_q[b, 0]) + rx, np.float64(body_q[b, 1]) + ry, np.float64(body_q[b, 2]) + rz


# Model: pm (PairMap), body_q; Data in: keys, sides (sorted), start_indices, rv (RigidView)
# Data out: out_forces, out_points, out_normals (P·M, 3), out_separations (P·M,)
@device_fn
def _emit_item(j, keys, sides, start_indices, max_count, rv, pm, body_q, dt_scale, points_in_world, out_forces,
               out_points, out_normals, out_separations):
    p = keys[j]
    rank = j - start_indices[p]
    if rank < 0 or rank >= max_count:
        return
    o = p * max_count + rank
    i = sides[j]
    c = i >> 1
    b0 = pm.shape_body[rv.shape0[c]]
    b1 = pm.shape_body[rv.shape1[c]]
    # in float64 (the buffers are float32; np.float64, since Numba's float() keeps float32)
    x0, y0, z0 = _to_world(body_q, b0, np.float64(rv.point0[c, 0]), np.float64(rv.point0[c, 1]),
                           np.float64(rv.point0[c, 2]))
    x1, y1, z1 = _to_world(body_q, b1, np.float64(rv.point1[c, 0]), np.float64(rv.point1[c, 1]),
                           np.float64(rv.point1[c, 2]))
    nx = np.float64(rv.normal[c, 0])
    ny = np.float64(rv.normal[c, 1])
    nz = np.float64(rv.normal[c, 2])
    gap = nx * (x1 - x0) + ny * (y1 - y0) + nz * (z1 - z0)
    out_separations[o] = gap - np.float64(rv.thickness0[c]) - np.float64(rv.thickness1[c])
    sign = 1.0 if (i & 1) == 1 else -1.0  # the normal into the sensor's shape: +normal on shape 1's side
    for k in range(3):  # contact_force acts on shape 0 (Newton's convention), its opposite on shape 1
        out_forces[o, k] = -sign * np.float64(rv.force[c, k]) * dt_scale
    out_normals[o, 0] = sign * nx
    out_normals[o, 1] = sign * ny
    out_normals[o, 2] = sign * nz
    if (i & 1) == 1:
        if points_in_world:
            out_points[o, 0] = x1
            out_points[o, 1] = y1
            out_points[o, 2] = z1
        else:
            for k in range(3):
                out_points[o, k] = rv.point1[c, k]
    else:
        if points_in_world:
            out_points[o, 0] = x0
            out_points[o, 1] = y0
            out_points[o, 2] = z0
        else:
            for k in range(3):
                out_points[o, k] = rv.point0[c, k]


CONTACT_DATA_EMIT = kernel("contact_data.emit", _emit_item)


# ============================================================================================
# Host side: arrays, checks, the stages


def _is_device_array(a) -> bool:
    if a is None or isinstance(a, (np.ndarray, int, float, bool, np.generic)):
        return False
    if CUDASIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return isinstance(a, FakeCUDAArray)
    return hasattr(a, "__cuda_array_interface__")


def _device_of_outputs(outputs) -> Device:
    on_device = [_is_device_array(a) for a in outputs]
    if any(on_device) and not all(on_device):
        raise InputError("the output arrays must all be CUDA arrays or all NumPy arrays")
    return get_device("cuda" if any(on_device) else "cpu")


def _input(dev, name, a, dtype, tail=()):
    """An input array on ``dev`` with ``dtype`` (NumPy inputs are converted and copied as needed)."""
    if _is_device_array(a):
        if not dev.is_cuda:
            raise InputError(f"{name} is a CUDA array but the outputs are NumPy arrays (the launch runs on the CPU)")
        from numba import cuda

        a = a if CUDASIM else cuda.as_cuda_array(a)
        if a.dtype != np.dtype(dtype):
            raise InputError(f"{name} must be {np.dtype(dtype).name}, got {a.dtype}")
        return a
    h = np.ascontiguousarray(np.asarray(a), dtype=dtype)
    if tail:
        h = h.reshape((-1,) + tail)
    if h.size == 0:
        h = np.zeros((1,) + tail, dtype=dtype)
    return dev.asarray(h)


def _output(dev, name, a, dtype_kind, size):
    """An output array written in place, flattened to (size // 3, 3) or (size,)."""
    if dev.is_cuda:
        from numba import cuda

        a = a if CUDASIM else cuda.as_cuda_array(a)
    elif not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
        raise InputError(f"{name} must be a C-contiguous NumPy array (it is written in place)")
    dt = np.dtype(a.dtype)
    if dtype_kind == "f" and dt != np.float32:
        raise InputError(f"{name} must be float32, got {dt}")
    if dtype_kind == "i" and dt.kind not in "iu":
        raise InputError(f"{name} must be an integer array (uint32), got {dt}")
    if a.size != size[0] * (size[1] if len(size) > 1 else 1):
        raise InputError(f"{name} must hold {size[0]} x {size[1] if len(size) > 1 else 1} values, got shape {a.shape}")
    return a.reshape(size)


def _host(dev, a):
    return np.asarray(dev.to_host(a))


def _live_count(dev, contact_count, rigid_contact_max):
    if _is_device_array(contact_count):
        n = int(dev.read_scalar(contact_count, 0) if dev.is_cuda else np.asarray(dev.to_host(contact_count))[0])
    else:
        c = np.asarray(contact_count).reshape(-1)
        if c.size != 1:
            raise InputError(f"contact_count must be an int or a 1-element array, got shape {c.shape}")
        n = int(c[0])
    if n < 0:
        raise InputError(f"contact_count must be >= 0, got {n}")
    m = int(rigid_contact_max)
    if m < 0:
        raise InputError(f"rigid_contact_max must be >= 0, got {rigid_contact_max!r}")
    return min(n, m)


def _rows(a):
    return int(a.shape[0]) if hasattr(a, "shape") and len(a.shape) else len(np.asarray(a))


def _pair_map(dev, shape_body, body_sensor_map, body_sensor_map_size, body_filter_map, num_bodies, filter_count,
              world_body_idx, body_rows=None):
    """Check the model-side arrays (small: copied to the host for the checks) → (PairMap, P)."""
    nb = int(num_bodies)
    fc = int(filter_count)
    if nb < 1:
        raise InputError(f"num_bodies must be >= 1 (the bodies and the world sentinel), got {num_bodies!r}")
    if fc < 0:
        raise InputError(f"filter_count must be >= 0, got {filter_count!r}")
    sb = _as_host_int(dev, shape_body)
    sm = _as_host_int(dev, body_sensor_map)
    size = int(body_sensor_map_size)
    if not 0 <= size <= len(sm):
        raise InputError(f"body_sensor_map_size {size} must be in [0, {len(sm)}] (the length of body_sensor_map)")
    sm = sm[:size]
    fm = _as_host_int(dev, body_filter_map)
    if len(fm) % nb:
        raise InputError(f"body_filter_map must hold sensors x num_bodies = k x {nb} entries, got {len(fm)}")
    sensors = len(fm) // nb
    if len(sm) and sm.max() >= sensors:
        raise InputError(f"body_sensor_map names sensor {int(sm.max())} but body_filter_map has rows for {sensors}")
    if len(fm) and fm.max() >= fc:
        raise InputError(f"body_filter_map names filter {int(fm.max())} but filter_count is {fc}")
    if body_rows is not None and len(sb) and sb.max() >= body_rows:
        raise InputError(f"shape_body names body {int(sb.max())} but body_q has {body_rows} poses")
    pm = PairMap(_input(dev, "shape_body", sb, np.int32), _input(dev, "body_sensor_map", sm, np.int32),
                 _input(dev, "body_filter_map", fm, np.int32), int(world_body_idx), nb, sensors, fc)
    return pm, sensors * fc


def _as_host_int(dev, a):
    if _is_device_array(a):
        a = dev.to_host(a) if dev.is_cuda else a
    return np.ascontiguousarray(np.asarray(a), dtype=np.int32).reshape(-1)


def _sorted_sides(dev, n, shape0, shape1, pm, pair_count):
    """The contact sides that belong to a pair, sorted by pair key (stable: contact order within
    a pair): (keys, sides, m)."""
    sides = 2 * n
    flags = dev.empty(max(sides, 1), np.int32)
    offsets = dev.empty(sides + 1, np.int64)
    key_a = dev.empty(max(sides, 1), np.int32)
    side_a = dev.empty(max(sides, 1), np.int32)
    dev.launch(CONTACT_DATA_KEYS, sides, False, shape0, shape1, pm, flags, offsets, key_a, side_a)
    m = dev.exclusive_scan(flags, offsets, sides) if sides else 0
    dev.launch(CONTACT_DATA_KEYS, sides, True, shape0, shape1, pm, flags, offsets, key_a, side_a)
    # a stable radix sort by key, one bit per pass, each a count → scan → scatter split
    key_b = dev.empty(max(m, 1), np.int32)
    side_b = dev.empty(max(m, 1), np.int32)
    zeros = dev.empty(max(m, 1), np.int32)
    zero_offsets = dev.empty(m + 1, np.int64)
    src, dst = (key_a, side_a), (key_b, side_b)
    if m:
        for bit in range(max(1, int(max(pair_count - 1, 0)).bit_length())):
            dev.launch(CONTACT_DATA_SPLIT, m, False, bit, m, src[0], src[1], zeros, zero_offsets, dst[0], dst[1])
            dev.exclusive_scan(zeros, zero_offsets, m)
            dev.launch(CONTACT_DATA_SPLIT, m, True, bit, m, src[0], src[1], zeros, zero_offsets, dst[0], dst[1])
            src, dst = dst, src
    return src[0], src[1], m


def launch_count_contacts_per_pair(contact_count, shape0, shape1, shape_body, body_sensor_map, body_sensor_map_size,
                                   body_filter_map, num_bodies, filter_count, world_body_idx, counts,
                                   rigid_contact_max, stream=None) -> bool:
    """Contacts of every (sensor, filter) pair into ``counts`` (S·F,), unclipped: what
    :func:`launch_contact_data` writes for that pair before clipping (see the module docstring)."""
    del stream  # hydro launches on the default stream
    dev = _device_of_outputs([counts])
    n = _live_count(dev, contact_count, rigid_contact_max)
    pm, P = _pair_map(dev, shape_body, body_sensor_map, body_sensor_map_size, body_filter_map, num_bodies,
                      filter_count, world_body_idx)
    s0 = _contact_input(dev, "shape0", shape0, np.int32, rigid_contact_max)
    s1 = _contact_input(dev, "shape1", shape1, np.int32, rigid_contact_max)
    out = _output(dev, "counts", counts, "i", (P,))
    keys, _, m = _sorted_sides(dev, n, s0, s1, pm, P)
    first = dev.empty(max(P, 1), np.int64)
    clipped = dev.empty(max(P, 1), np.int64)
    dev.launch(CONTACT_DATA_COUNT, P, keys, m, 0, first, out, clipped)
    return True


def launch_contact_data(contact_count, shape0, shape1, point0, point1, normal, contact_force, thickness0, thickness1,
                        shape_body, body_q, body_sensor_map, body_sensor_map_size, body_filter_map, num_bodies,
                        filter_count, world_body_idx, dt_scale, max_contact_data_count, out_forces, out_points,
                        out_normals, out_separations, out_counts, start_indices, rigid_contact_max,
                        points_in_world_space=False, stream=None) -> bool:
    """Each (sensor, filter) pair's contacts — force × ``dt_scale``, point, normal and
    separation — into slots ``[sensor, filter, 0 … out_counts[p]−1]`` of the outputs (see the
    module docstring for every parameter)."""
    del stream  # hydro launches on the default stream
    mx = int(max_contact_data_count)
    if mx < 0:
        raise InputError(f"max_contact_data_count must be >= 0, got {max_contact_data_count!r}")
    dev = _device_of_outputs([out_forces, out_points, out_normals, out_separations, out_counts])
    n = _live_count(dev, contact_count, rigid_contact_max)
    q = body_q if _is_device_array(body_q) else np.asarray(body_q, dtype=np.float32).reshape(-1, 7)
    pm, P = _pair_map(dev, shape_body, body_sensor_map, body_sensor_map_size, body_filter_map, num_bodies,
                      filter_count, world_body_idx, body_rows=_rows(q))
    cap = int(rigid_contact_max)
    rv = RigidView(_contact_input(dev, "shape0", shape0, np.int32, cap),
                   _contact_input(dev, "shape1", shape1, np.int32, cap),
                   _contact_input(dev, "point0", point0, np.float32, cap, (3,)),
                   _contact_input(dev, "point1", point1, np.float32, cap, (3,)),
                   _contact_input(dev, "normal", normal, np.float32, cap, (3,)),
                   _contact_input(dev, "contact_force", contact_force, np.float32, cap, (3,)),
                   _contact_input(dev, "thickness0", thickness0, np.float32, cap),
                   _contact_input(dev, "thickness1", thickness1, np.float32, cap))
    d_body_q = _input(dev, "body_q", q, np.float32, (7,))
    size = P * mx
    forces = _output(dev, "out_forces", out_forces, "f", (size, 3))
    points = _output(dev, "out_points", out_points, "f", (size, 3))
    normals = _output(dev, "out_normals", out_normals, "f", (size, 3))
    separations = _output(dev, "out_separations", out_separations, "f", (size,))
    counts = _output(dev, "out_counts", out_counts, "i", (P,))
    start = _input(dev, "start_indices", start_indices, np.uint32)
    if _rows(start) < P:
        raise InputError(f"start_indices must hold one entry per pair ({P}), got {_rows(start)}")

    keys, sides, m = _sorted_sides(dev, n, rv.shape0, rv.shape1, pm, P)
    first = dev.empty(max(P, 1), np.int64)
    required = dev.empty(max(P, 1), np.int64)
    dev.launch(CONTACT_DATA_COUNT, P, keys, m, mx, first, required, counts)
    if P:
        want = _host(dev, first)[:P]
        got = _host(dev, start)[:P].astype(np.int64)
        bad = np.flatnonzero(want != got)
        if len(bad):
            p = int(bad[0])
            raise InputError(f"start_indices must be the exclusive prefix sum of the counts of "
                             f"launch_count_contacts_per_pair: pair {p} starts at {int(want[p])}, got {int(got[p])}")
    if size:
        dev.launch(CONTACT_DATA_EMIT, m, keys, sides, start, mx, rv, pm, d_body_q, float(dt_scale),
                   bool(points_in_world_space), forces, points, normals, separations)
    return True


def _contact_input(dev, name, a, dtype, cap, tail=()):
    rows = _rows(a)
    if rows < cap:
        raise InputError(f"{name} must hold rigid_contact_max = {cap} rows, got {rows}")
    return _input(dev, name, a, dtype, tail)


# ============================================================================================
# The three steps on a RigidContacts-like buffer


@dataclass
class PairContactData:
    """What :func:`rigid_contact_data` returns (S sensors, F filters, M = max_contact_data_count).

    | field | shape | meaning |
    |---|---|---|
    | ``forces`` | (S,F,M,3) | force on the sensor's body × dt_scale; slots past the count NaN |
    | ``points`` | (S,F,M,3) | m, the body's frame or the world |
    | ``normals`` | (S,F,M,3) | unit, into the sensor's shape |
    | ``separations`` | (S,F,M) | m, negative when penetrating |
    | ``counts`` | (S,F) | slots written: min(required, M) |
    | ``required_counts`` | (S,F) | contacts each pair had (more than counts: clipped) |
    | ``start_indices`` | (S,F) | the exclusive prefix sum of required_counts |
    """

    forces: np.ndarray
    points: np.ndarray
    normals: np.ndarray
    separations: np.ndarray
    counts: np.ndarray
    required_counts: np.ndarray
    start_indices: np.ndarray

    @property
    def clipped_pairs(self) -> np.ndarray:
        """(k, 2) (sensor, filter) of the pairs whose contacts did not all fit."""
        return np.argwhere(self.required_counts > self.counts)


def rigid_contact_data(rigid, *, shape_body, body_q, body_sensor_map, body_filter_map, filter_count: int,
                       world_body_idx: int, num_bodies: int | None = None, dt_scale: float = 1.0,
                       max_contact_data_count: int, points_in_world_space: bool = False) -> PairContactData:
    """Count, prefix sum and contact data of ``rigid`` (an object with Newton's ``rigid_contact_*``
    fields, :class:`~hydro.contact.types.RigidContacts`), on the device its arrays are on.

    ``body_filter_map`` (sensors, num_bodies); ``num_bodies`` defaults to its second axis.
    Returns host arrays; unwritten slots are NaN.
    """
    if num_bodies is None:
        shape = tuple(getattr(body_filter_map, "shape", np.shape(body_filter_map)))
        if len(shape) != 2:
            raise InputError("num_bodies is needed when body_filter_map is not 2-D (sensors, num_bodies)")
        num_bodies = shape[1]
    nb = int(num_bodies)
    if nb < 1:
        raise InputError(f"num_bodies must be >= 1, got {num_bodies!r}")
    sensors = _size(body_filter_map) // nb
    F, M = int(filter_count), int(max_contact_data_count)
    P = sensors * F
    dev = get_device("cuda" if _is_device_array(rigid.rigid_contact_shape0) else "cpu")
    map_size = _size(body_sensor_map)
    contacts = (rigid.rigid_contact_count, rigid.rigid_contact_shape0, rigid.rigid_contact_shape1)
    counts = dev.full(max(P, 1), 0, np.uint32)
    launch_count_contacts_per_pair(*contacts, shape_body, body_sensor_map, map_size, body_filter_map, nb, F,
                                   world_body_idx, counts[:P], rigid.rigid_contact_max)
    required = _host(dev, counts)[:P].astype(np.int64)
    start = np.concatenate([[0], np.cumsum(required)[:-1]]).astype(np.uint32) if P else np.zeros(0, np.uint32)
    out = [dev.full((max(P * M, 1), 3), np.nan, np.float32) for _ in range(3)]
    out_sep = dev.full(max(P * M, 1), np.nan, np.float32)
    out_counts = dev.full(max(P, 1), 0, np.uint32)
    launch_contact_data(*contacts, rigid.rigid_contact_point0, rigid.rigid_contact_point1, rigid.rigid_contact_normal,
                        rigid.rigid_contact_force, rigid.rigid_contact_thickness0, rigid.rigid_contact_thickness1,
                        shape_body, body_q, body_sensor_map, map_size, body_filter_map, nb, F, world_body_idx,
                        dt_scale, M, out[0][: P * M], out[1][: P * M], out[2][: P * M], out_sep[: P * M],
                        out_counts[:P], start, rigid.rigid_contact_max, points_in_world_space)
    h = [_host(dev, a)[: P * M].reshape(sensors, F, M, 3) for a in out]
    return PairContactData(forces=h[0], points=h[1], normals=h[2],
                           separations=_host(dev, out_sep)[: P * M].reshape(sensors, F, M),
                           counts=_host(dev, out_counts)[:P].astype(np.int64).reshape(sensors, F),
                           required_counts=required.reshape(sensors, F),
                           start_indices=start.astype(np.int64).reshape(sensors, F))


def _size(a) -> int:
    size = getattr(a, "size", None)
    return int(size) if size is not None and not callable(size) else int(np.size(a))
