"""Point contacts of one shape pair (device helpers): the exact pairs, box–box, and the general
convex path. Each writes its contacts to ``slot_f`` rows ``slot .. slot + n − 1`` as
(midpoint x, y, z, normal x, y, z, depth) and returns n.

Conventions (as on the hydroelastic path): the normal points from shape A toward shape B (the
force on B is along +normal); ``depth`` is the signed separation of the two surfaces minus both
margins (negative: penetrating); a contact is kept while depth <= the two gaps summed
(``depth_max``); the point is the midpoint of the two surface points.

- plane–X (:func:`plane_contacts`): the plane is a half-space z <= 0 in its frame; the points of
  X that can touch it: a sphere's lowest point, a capsule's two end points, a box's 8 corners,
  4 points on each cylinder rim (starting at the lowest), a cone's apex and 4 base points, an
  ellipsoid's support point, a hull's or mesh's vertices (reduced to 4: deepest, then
  farthest-point picks);
- sphere/capsule pairs (:func:`round_contacts`): closest points of their segments; two parallel
  overlapping capsules touch along a line and get its two end points;
- box–box (:func:`box_box_contacts`): separating axes (15), the least-penetrating face axis unless
  an edge–edge axis is clearly better; a face axis clips the other box's face to it (up to 8
  points at their true depths), an edge axis gives the edges' closest points;
- any other convex pair (:func:`convex_contacts`): GJK on the cores, EPA when they overlap, then
  feature clipping (:mod:`hydro.contact.manifold`) for up to 4 points.
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..geometry.primitives import BOX, CAPSULE, CONE, CYLINDER, ELLIPSOID, SPHERE
from ..geometry.support import closest_segments, core_support_local, point_to_world, to_local, to_world
from .gjk import GJK_SEPARATE, epa, gjk
from .manifold import add_candidate, clip_features, reduce_candidates

#: Most contacts one pair writes (a box on a plane: 8 corners when sunk; box–box: the clipped polygon).
PAIR_CONTACT_MAX = 8
#: Contacts the general convex path and the vertex sets keep.
MANIFOLD_MAX = 4
#: Columns of a contact slot: midpoint (3), normal (3), depth, then 3 columns of working space.
SLOT_WIDTH = 10


@device_fn
def write_slot(slot_f, r, px, py, pz, nx, ny, nz, depth):
    slot_f[r, 0] = px
    slot_f[r, 1] = py
    slot_f[r, 2] = pz
    slot_f[r, 3] = nx
    slot_f[r, 4] = ny
    slot_f[r, 5] = nz
    slot_f[r, 6] = depth


@device_fn
def pick_score(slot_f, slot, n, k, depth, qx, qy, qz):
    """How good a candidate surface point q is as the pair's (k+1)-th manifold point: the deepest
    first (k = 0), then the farthest (squared) from the ``n`` points already kept (columns 7..9 of
    their slots), which keeps the manifold's extent."""
    if k == 0:
        return -depth
    score = math.inf
    for j in range(n):
        dx = qx - slot_f[slot + j, 7]
        dy = qy - slot_f[slot + j, 8]
        dz = qz - slot_f[slot + j, 9]
        score = min(score, dx * dx + dy * dy + dz * dz)
    return score


# ============================================================================================
# Plane against anything


@device_fn(inline=False)
def _plane_point(slot_f, slot, n, qx, qy, qz, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max):
    """Emit surface point q of the other shape against the plane (point p, normal pn) if close."""
    sep = (qx - px) * pnx + (qy - py) * pny + (qz - pz) * pnz
    depth = sep - margins
    if depth > depth_max or n >= PAIR_CONTACT_MAX:
        return n
    write_slot(slot_f, slot + n, qx - 0.5 * sep * pnx, qy - 0.5 * sep * pny, qz - 0.5 * sep * pnz,
               sgn * pnx, sgn * pny, sgn * pnz, depth)
    return n + 1


@device_fn
def _vertex_world(shapes, rot, pos, o, v):
    return point_to_world(rot, pos, o, shapes.verts[v, 0], shapes.verts[v, 1], shapes.verts[v, 2])


@device_fn(inline=False)
def _plane_vertices(slot_f, slot, shapes, rot, pos, o, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max):
    """A hull's or mesh's vertices against the plane, reduced to MANIFOLD_MAX: the deepest, then
    each time the close vertex farthest from those picked."""
    v0 = shapes.vert_start[o]
    v1 = shapes.vert_start[o + 1]
    n = 0
    for k in range(MANIFOLD_MAX):
        best = -1
        best_score = -math.inf
        for v in range(v0, v1):
            qx, qy, qz = _vertex_world(shapes, rot, pos, o, v)
            depth = (qx - px) * pnx + (qy - py) * pny + (qz - pz) * pnz - margins
            if depth > depth_max:
                continue
            score = pick_score(slot_f, slot, n, k, depth, qx, qy, qz)
            if score > best_score:
                best_score = score
                best = v
        if best < 0 or (k > 0 and best_score <= 0.0):
            break
        qx, qy, qz = _vertex_world(shapes, rot, pos, o, best)
        n = _plane_point(slot_f, slot, n, qx, qy, qz, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max)
        slot_f[slot + n - 1, 7] = qx  # the picked vertex, for the distances of later picks
        slot_f[slot + n - 1, 8] = qy
        slot_f[slot + n - 1, 9] = qz
    return n


@device_fn(inline=False)
def plane_contacts(pl, o, plane_is_a, shapes, rot, pos, depth_max, slot_f, slot):
    """Contacts of plane shape ``pl`` with shape ``o`` (see the module docstring)."""
    pnx, pny, pnz = to_world(rot, pl, 0.0, 0.0, 1.0)
    px = pos[pl, 0]
    py = pos[pl, 1]
    pz = pos[pl, 2]
    sgn = 1.0 if plane_is_a else -1.0
    margins = shapes.margin[pl] + shapes.margin[o]
    kind = shapes.kind[o]
    p = shapes.params
    # the direction into the plane, in o's frame
    dx, dy, dz = to_local(rot, o, -pnx, -pny, -pnz)
    n = 0
    if kind == SPHERE or kind == CAPSULE:
        r = shapes.radius[o]
        hh = p[o, 1] if kind == CAPSULE else 0.0
        ends = 2 if kind == CAPSULE else 1
        for e in range(ends):
            z = hh if e == 1 else -hh
            cx, cy, cz = point_to_world(rot, pos, o, 0.0, 0.0, z)
            n = _plane_point(slot_f, slot, n, cx - r * pnx, cy - r * pny, cz - r * pnz, px, py, pz, pnx, pny, pnz,
                             sgn, margins, depth_max)
        return n
    if kind == BOX:
        for c in range(8):
            x = p[o, 0] if c & 1 else -p[o, 0]
            y = p[o, 1] if c & 2 else -p[o, 1]
            z = p[o, 2] if c & 4 else -p[o, 2]
            qx, qy, qz = point_to_world(rot, pos, o, x, y, z)
            n = _plane_point(slot_f, slot, n, qx, qy, qz, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max)
        return n
    if kind == CYLINDER or kind == CONE:
        r = p[o, 0]
        hh = p[o, 1]
        rho = math.sqrt(dx * dx + dy * dy)
        ux = 1.0
        uy = 0.0
        if rho > 1e-12:
            ux = dx / rho
            uy = dy / rho
        caps = 2 if kind == CYLINDER else 1
        for cap in range(caps):
            z = -hh if cap == 0 else hh
            for k in range(4):
                # 0°, 180°, 90°, 270° from the lowest rim point
                c = 1.0 if k == 0 else (-1.0 if k == 1 else 0.0)
                sn = 0.0 if k < 2 else (1.0 if k == 2 else -1.0)
                qx, qy, qz = point_to_world(rot, pos, o, r * (c * ux - sn * uy), r * (sn * ux + c * uy), z)
                n = _plane_point(slot_f, slot, n, qx, qy, qz, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max)
        if kind == CONE:
            qx, qy, qz = point_to_world(rot, pos, o, 0.0, 0.0, hh)
            n = _plane_point(slot_f, slot, n, qx, qy, qz, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max)
        return n
    if kind == ELLIPSOID:
        x, y, z = core_support_local(o, shapes, dx, dy, dz)
        qx, qy, qz = point_to_world(rot, pos, o, x, y, z)
        return _plane_point(slot_f, slot, 0, qx, qy, qz, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max)
    return _plane_vertices(slot_f, slot, shapes, rot, pos, o, px, py, pz, pnx, pny, pnz, sgn, margins, depth_max)


# ============================================================================================
# Spheres and capsules


@device_fn
def _segment(rot, pos, shapes, s):
    """World end points of shape s's core segment (a sphere's is its centre, twice)."""
    hh = shapes.params[s, 1] if shapes.kind[s] == CAPSULE else 0.0
    x0, y0, z0 = point_to_world(rot, pos, s, 0.0, 0.0, -hh)
    x1, y1, z1 = point_to_world(rot, pos, s, 0.0, 0.0, hh)
    return x0, y0, z0, x1, y1, z1


@device_fn(inline=False)
def _round_point(slot_f, slot, n, ax, ay, az, bx, by, bz, ra, rb, fx, fy, fz, margins, depth_max):
    """Emit the contact of core points a (of A) and b (of B); (fx, fy, fz) is the normal used
    when the points coincide."""
    dx, dy, dz = bx - ax, by - ay, bz - az
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dist > 1e-12 * (ra + rb):
        nx, ny, nz = dx / dist, dy / dist, dz / dist
    else:
        nx, ny, nz = fx, fy, fz
    sep = dist - ra - rb
    depth = sep - margins
    if depth > depth_max:
        return n
    sax, say, saz = ax + ra * nx, ay + ra * ny, az + ra * nz
    write_slot(slot_f, slot + n, sax + 0.5 * sep * nx, say + 0.5 * sep * ny, saz + 0.5 * sep * nz, nx, ny, nz, depth)
    return n + 1


@device_fn(inline=False)
def round_contacts(a, b, shapes, rot, pos, depth_max, slot_f, slot):
    """Contacts of two shapes among spheres and capsules (see the module docstring)."""
    ra = shapes.radius[a]
    rb = shapes.radius[b]
    margins = shapes.margin[a] + shapes.margin[b]
    p1x, p1y, p1z, q1x, q1y, q1z = _segment(rot, pos, shapes, a)
    p2x, p2y, p2z, q2x, q2y, q2z = _segment(rot, pos, shapes, b)
    # a fallback normal for coincident cores: perpendicular to A's axis, else +z
    fx, fy, fz = to_world(rot, a, 1.0, 0.0, 0.0) if shapes.kind[a] == CAPSULE else (0.0, 0.0, 1.0)
    d1x, d1y, d1z = q1x - p1x, q1y - p1y, q1z - p1z
    d2x, d2y, d2z = q2x - p2x, q2y - p2y, q2z - p2z
    l1 = d1x * d1x + d1y * d1y + d1z * d1z
    l2 = d2x * d2x + d2y * d2y + d2z * d2z
    if l1 > 0.0 and l2 > 0.0:
        cx = d1y * d2z - d1z * d2y
        cy = d1z * d2x - d1x * d2z
        cz = d1x * d2y - d1y * d2x
        if cx * cx + cy * cy + cz * cz <= 1e-12 * l1 * l2:
            # parallel capsules: B's segment projected on A's, clipped to it
            t0 = ((p2x - p1x) * d1x + (p2y - p1y) * d1y + (p2z - p1z) * d1z) / l1
            t1 = ((q2x - p1x) * d1x + (q2y - p1y) * d1y + (q2z - p1z) * d1z) / l1
            lo = max(min(t0, t1), 0.0)
            hi = min(max(t0, t1), 1.0)
            if hi > lo:
                n = 0
                for e in range(2):
                    s = lo if e == 0 else hi
                    ax, ay, az = p1x + s * d1x, p1y + s * d1y, p1z + s * d1z
                    # the foot of that point on B's line
                    t = ((ax - p2x) * d2x + (ay - p2y) * d2y + (az - p2z) * d2z) / l2
                    t = min(max(t, 0.0), 1.0)
                    n = _round_point(slot_f, slot, n, ax, ay, az, p2x + t * d2x, p2y + t * d2y, p2z + t * d2z, ra, rb,
                                     fx, fy, fz, margins, depth_max)
                return n
    s, t = closest_segments(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z)
    return _round_point(slot_f, slot, 0, p1x + s * d1x, p1y + s * d1y, p1z + s * d1z, p2x + t * d2x, p2y + t * d2y,
                        p2z + t * d2z, ra, rb, fx, fy, fz, margins, depth_max)


# ============================================================================================
# Box against box


@device_fn(inline=False)
def _box_axis_sep(a, b, rot, shapes, lx, ly, lz, tx, ty, tz):
    """Separation of boxes a and b along the unit world axis l (|T·l| − rA − rB)."""
    ra = 0.0
    rb = 0.0
    for i in range(3):
        ra += shapes.params[a, i] * abs(rot[a, i] * lx + rot[a, 3 + i] * ly + rot[a, 6 + i] * lz)
        rb += shapes.params[b, i] * abs(rot[b, i] * lx + rot[b, 3 + i] * ly + rot[b, 6 + i] * lz)
    return abs(tx * lx + ty * ly + tz * lz) - ra - rb


@device_fn(inline=False)
def _box_edge(s, rot, pos, shapes, i, nx, ny, nz):
    """End points (world) of box s's edge along its axis i that lies farthest along n."""
    p = shapes.params
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    lx, ly, lz = to_local(rot, s, nx, ny, nz)
    if i != 0:
        c0 = p[s, 0] if lx >= 0.0 else -p[s, 0]
    if i != 1:
        c1 = p[s, 1] if ly >= 0.0 else -p[s, 1]
    if i != 2:
        c2 = p[s, 2] if lz >= 0.0 else -p[s, 2]
    ax, ay, az = point_to_world(rot, pos, s, c0 - (p[s, 0] if i == 0 else 0.0), c1 - (p[s, 1] if i == 1 else 0.0),
                                c2 - (p[s, 2] if i == 2 else 0.0))
    bx, by, bz = point_to_world(rot, pos, s, c0 + (p[s, 0] if i == 0 else 0.0), c1 + (p[s, 1] if i == 1 else 0.0),
                                c2 + (p[s, 2] if i == 2 else 0.0))
    return ax, ay, az, bx, by, bz


@device_fn(inline=False)
def box_box_contacts(a, b, shapes, rot, pos, depth_max, buf, row, slot_f, slot):
    """Contacts of boxes a and b (see the module docstring)."""
    tx = pos[b, 0] - pos[a, 0]
    ty = pos[b, 1] - pos[a, 1]
    tz = pos[b, 2] - pos[a, 2]
    margins = shapes.margin[a] + shapes.margin[b]
    best_face = -math.inf
    face_axis = 0  # 0..2: A's axes, 3..5: B's
    for k in range(6):
        s = a if k < 3 else b
        i = k % 3
        sep = _box_axis_sep(a, b, rot, shapes, rot[s, i], rot[s, 3 + i], rot[s, 6 + i], tx, ty, tz)
        if sep > best_face + 1e-9 * (shapes.bound[a] + shapes.bound[b]):  # ties: the lower axis (A's)
            best_face = sep
            face_axis = k
    if best_face - margins > depth_max:
        return 0
    best_edge = -math.inf
    edge_i = 0
    edge_j = 0
    ex = 0.0
    ey = 0.0
    ez = 0.0
    for i in range(3):
        for j in range(3):
            ux, uy, uz = rot[a, i], rot[a, 3 + i], rot[a, 6 + i]
            vx, vy, vz = rot[b, j], rot[b, 3 + j], rot[b, 6 + j]
            cx = uy * vz - uz * vy
            cy = uz * vx - ux * vz
            cz = ux * vy - uy * vx
            length = math.sqrt(cx * cx + cy * cy + cz * cz)
            if length < 1e-6:
                continue
            cx /= length
            cy /= length
            cz /= length
            sep = _box_axis_sep(a, b, rot, shapes, cx, cy, cz, tx, ty, tz)
            if sep > best_edge:
                best_edge = sep
                edge_i = i
                edge_j = j
                ex, ey, ez = cx, cy, cz
    if best_edge - margins > depth_max:
        return 0
    scale = shapes.bound[a] + shapes.bound[b]
    if best_edge > best_face + 0.05 * abs(best_face) + 1e-5 * scale:
        # edge against edge: the closest points of the two edges
        if tx * ex + ty * ey + tz * ez < 0.0:
            ex, ey, ez = -ex, -ey, -ez
        p1x, p1y, p1z, q1x, q1y, q1z = _box_edge(a, rot, pos, shapes, edge_i, ex, ey, ez)
        p2x, p2y, p2z, q2x, q2y, q2z = _box_edge(b, rot, pos, shapes, edge_j, -ex, -ey, -ez)
        s, t = closest_segments(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z)
        ax, ay, az = p1x + s * (q1x - p1x), p1y + s * (q1y - p1y), p1z + s * (q1z - p1z)
        bx, by, bz = p2x + t * (q2x - p2x), p2y + t * (q2y - p2y), p2z + t * (q2z - p2z)
        write_slot(slot_f, slot, 0.5 * (ax + bx), 0.5 * (ay + by), 0.5 * (az + bz), ex, ey, ez, best_edge - margins)
        return 1
    s = a if face_axis < 3 else b
    i = face_axis % 3
    nx, ny, nz = rot[s, i], rot[s, 3 + i], rot[s, 6 + i]
    if tx * nx + ty * ny + tz * nz < 0.0:
        nx, ny, nz = -nx, -ny, -nz
    count = clip_features(a, b, shapes, rot, pos, nx, ny, nz, 1 if face_axis < 3 else 2, depth_max, buf, row, 0)
    return reduce_candidates(buf, row, count, PAIR_CONTACT_MAX, slot_f, slot)


# ============================================================================================
# Any convex pair


@device_fn(inline=False)
def convex_contacts(a, b, shapes, rot, pos, depth_max, buf, row, slot_f, slot):
    """Contacts of two convex shapes by GJK/EPA on their cores and feature clipping (up to 4)."""
    ra = shapes.radius[a]
    rb = shapes.radius[b]
    margins = shapes.margin[a] + shapes.margin[b]
    scale = shapes.bound[a] + shapes.bound[b]
    status, n_simplex, dist, pax, pay, paz, pbx, pby, pbz = gjk(a, b, shapes, rot, pos, scale, buf, row)
    if status == GJK_SEPARATE and dist > 1e-9 * scale:
        sep = dist - ra - rb
        if sep - margins > depth_max:
            return 0
        nx = (pbx - pax) / dist
        ny = (pby - pay) / dist
        nz = (pbz - paz) / dist
    else:
        ok, depth_core, nx, ny, nz, pax, pay, paz, pbx, pby, pbz = epa(a, b, shapes, rot, pos, scale, buf, row,
                                                                     n_simplex)
        if not ok:  # cores only touching: the centres' direction
            dx = pos[b, 0] - pos[a, 0]
            dy = pos[b, 1] - pos[a, 1]
            dz = pos[b, 2] - pos[a, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length > 0.0:
                nx, ny, nz = dx / length, dy / length, dz / length
            pax, pay, paz = core_support_point(a, shapes, rot, pos, nx, ny, nz)
            pbx, pby, pbz = pax, pay, paz
        sep = -depth_core - ra - rb
    count = clip_features(a, b, shapes, rot, pos, nx, ny, nz, 0, depth_max, buf, row, 0)
    if count == 0:
        sax, say, saz = pax + ra * nx, pay + ra * ny, paz + ra * nz
        count = add_candidate(buf, row, 0, sax + 0.5 * sep * nx, say + 0.5 * sep * ny, saz + 0.5 * sep * nz,
                              nx, ny, nz, sep - margins)
    return reduce_candidates(buf, row, count, MANIFOLD_MAX, slot_f, slot)


@device_fn
def core_support_point(s, shapes, rot, pos, dx, dy, dz):
    lx, ly, lz = to_local(rot, s, dx, dy, dz)
    x, y, z = core_support_local(s, shapes, lx, ly, lz)
    return point_to_world(rot, pos, s, x, y, z)


__all__ = ["PAIR_CONTACT_MAX", "MANIFOLD_MAX", "SLOT_WIDTH", "plane_contacts", "round_contacts", "box_box_contacts",
           "convex_contacts", "write_slot"]
