"""Slow, obviously correct NumPy twins of hydro.sim.contact_data: the packed helper
(pack_contact_data) and the documented launch_contact_data on Newton-layout buffers."""

import numpy as np

from hydro.transforms import quat_conjugate, quat_rotate


def reference_contact_data(*, contact_count, shape0, shape1, points, normals, forces, separations, shape_body, body_q,
                           body_sensor_map, body_filter_map, filter_count, world_body_idx, dt_scale,
                           max_contact_data_count, points_in_world_space):
    """Per pair (sensor, filter): the list of rows (force, point, normal, separation) in contact
    order, sides of a contact taken shape 0 first; returns (rows per pair, required counts)."""
    P = body_filter_map.shape[0] * filter_count
    rows = [[] for _ in range(P)]
    required = np.zeros(P, np.int64)
    for c in range(contact_count):
        for side in (0, 1):
            own_shape, other_shape = (shape1[c], shape0[c]) if side else (shape0[c], shape1[c])
            own = shape_body[own_shape] if shape_body[own_shape] >= 0 else world_body_idx
            other = shape_body[other_shape] if shape_body[other_shape] >= 0 else world_body_idx
            s = body_sensor_map[own]
            if s < 0 or body_filter_map[s, other] < 0:
                continue
            p = s * filter_count + body_filter_map[s, other]
            required[p] += 1
            if len(rows[p]) >= max_contact_data_count:
                continue
            sign = 1.0 if side else -1.0
            pt = np.asarray(points[c], float)
            if not points_in_world_space and own != world_body_idx:
                pt = quat_rotate(quat_conjugate(body_q[own, 3:]), pt - body_q[own, :3])
            rows[p].append((sign * forces[c] * dt_scale, pt, sign * normals[c], separations[c]))
    return rows, required


def _world(body_q, b, p):
    p = np.asarray(p, float)
    if b < 0:
        return p
    return np.asarray(body_q[b, :3], float) + quat_rotate(np.asarray(body_q[b, 3:], float), p)


def reference_rigid_contact_data(*, contact_count, shape0, shape1, point0, point1, normal, contact_force, thickness0,
                                 thickness1, shape_body, body_q, body_sensor_map, body_sensor_map_size,
                                 body_filter_map, num_bodies, filter_count, world_body_idx, dt_scale,
                                 max_contact_data_count, rigid_contact_max, points_in_world_space):
    """The documented launchContactData on Newton-layout buffers, one contact side at a time:
    per pair (sensor, filter), its rows (force, point, normal, separation) in contact order
    (a contact's shape-0 side first), clipped; and the unclipped count of every pair."""
    fm = np.asarray(body_filter_map).reshape(-1)
    sensors = len(fm) // num_bodies
    P = sensors * filter_count
    rows = [[] for _ in range(P)]
    required = np.zeros(P, np.int64)
    n = min(int(np.asarray(contact_count).reshape(-1)[0]), rigid_contact_max)
    for c in range(n):
        s0, s1 = int(shape0[c]), int(shape1[c])
        b0, b1 = int(shape_body[s0]), int(shape_body[s1])
        x0 = _world(body_q, b0, point0[c])
        x1 = _world(body_q, b1, point1[c])
        nrm = np.asarray(normal[c], float)
        sep = float(nrm @ (x1 - x0)) - float(thickness0[c]) - float(thickness1[c])
        for side in (0, 1):
            own, other = (b1, b0) if side else (b0, b1)
            own = world_body_idx if own < 0 else own
            other = world_body_idx if other < 0 else other
            if not 0 <= own < body_sensor_map_size or not 0 <= other < num_bodies:
                continue
            s = int(body_sensor_map[own])
            if s < 0:
                continue
            f = int(fm[s * num_bodies + other])
            if f < 0:
                continue
            p = s * filter_count + f
            required[p] += 1
            if len(rows[p]) >= max_contact_data_count:
                continue
            sign = 1.0 if side else -1.0
            if points_in_world_space:
                pt = x1 if side else x0
            else:
                pt = np.asarray(point1[c] if side else point0[c], float)
            # contact_force is the force on shape 0 (Newton's convention): shape 1 feels its opposite
            rows[p].append((-sign * np.asarray(contact_force[c], float) * dt_scale, pt, sign * nrm, sep))
    return rows, required
