"""A slow, obviously correct NumPy twin of hydro.sim.contact_data.launch_contact_data."""

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
