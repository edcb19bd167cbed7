"""Distance and penetration of two convex cores: GJK, then EPA when they overlap (device helpers).

Works on the Minkowski difference D = A − B of the two shapes' cores (support mappings of
:mod:`hydro.geometry.support`, in world): its support in direction d is sA(d) − sB(−d).

- :func:`gjk` finds the point of D closest to the origin (Gilbert–Johnson–Keerthi with the
  closest point on each simplex by Voronoi regions, Ericson §5.1): the cores' distance and
  witness points when they are apart;
- :func:`epa` expands the simplex GJK ends with into a polytope inside D and pushes its face
  nearest the origin outward until the support in that face's normal adds less than the
  tolerance (Expanding Polytope Algorithm): penetration depth, normal and witness points.

Both keep their simplex/polytope in one row of a scratch array (no allocation in kernels); the
layout constants below say where. The normal n points from A toward B: translating B by
depth·n separates overlapping cores; for separate cores n = (pB − pA)/|pB − pA|.

(Over 500 lines on purpose: GJK's simplex reduction and EPA's polytope share the scratch layout
and the support helpers; split, each half would re-declare the other's layout.)
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..geometry.support import core_support

# -- scratch layout of one pair (float64 row) ----------------------------------------------
VERTEX_WIDTH = 9  # w (3), a (3), b (3): a point of D and the supports of A and B that made it
SIMPLEX = 0  # 4 vertices
SIMPLEX_LAMBDA = SIMPLEX + 4 * VERTEX_WIDTH  # 4 barycentric weights
EPA_VERTEX_MAX = 40
EPA_FACE_MAX = 80
EPA_EDGE_MAX = 48
EPA_VERTICES = SIMPLEX_LAMBDA + 4
FACE_WIDTH = 8  # i, j, k (as floats), nx, ny, nz, distance, alive
EPA_FACES = EPA_VERTICES + EPA_VERTEX_MAX * VERTEX_WIDTH
EPA_EDGES = EPA_FACES + EPA_FACE_MAX * FACE_WIDTH
GJK_EPA_WIDTH = EPA_EDGES + 2 * EPA_EDGE_MAX

GJK_ITERATIONS = 64
EPA_ITERATIONS = EPA_VERTEX_MAX - 4

GJK_SEPARATE = 0
GJK_OVERLAP = 1


@device_fn(inline=False)
def _support(a, b, shapes, rot, pos, dx, dy, dz, buf, row, at):
    """Write the vertex of D in direction d (w = sA(d) − sB(−d), with sA and sB) at offset ``at``."""
    ax, ay, az = core_support(a, shapes, rot, pos, dx, dy, dz)
    bx, by, bz = core_support(b, shapes, rot, pos, -dx, -dy, -dz)
    buf[row, at] = ax - bx
    buf[row, at + 1] = ay - by
    buf[row, at + 2] = az - bz
    buf[row, at + 3] = ax
    buf[row, at + 4] = ay
    buf[row, at + 5] = az
    buf[row, at + 6] = bx
    buf[row, at + 7] = by
    buf[row, at + 8] = bz


@device_fn
def _w(buf, row, at):
    return buf[row, at], buf[row, at + 1], buf[row, at + 2]


@device_fn
def _copy_vertex(buf, row, src, dst):
    if src != dst:
        for c in range(VERTEX_WIDTH):
            buf[row, dst + c] = buf[row, src + c]


@device_fn
def _dot(ax, ay, az, bx, by, bz):
    return ax * bx + ay * by + az * bz


@device_fn(inline=False)
def _triangle_region(buf, row, ia, ib, ic):
    """Closest point of triangle (simplex vertices ia, ib, ic) to the origin, by Voronoi regions.
    Returns (count, k0, k1, k2, l0, l1, l2): the vertices kept (simplex indices) and weights."""
    ax, ay, az = _w(buf, row, SIMPLEX + VERTEX_WIDTH * ia)
    bx, by, bz = _w(buf, row, SIMPLEX + VERTEX_WIDTH * ib)
    cx, cy, cz = _w(buf, row, SIMPLEX + VERTEX_WIDTH * ic)
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    d1 = -_dot(abx, aby, abz, ax, ay, az)
    d2 = -_dot(acx, acy, acz, ax, ay, az)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1, ia, ia, ia, 1.0, 0.0, 0.0
    d3 = -_dot(abx, aby, abz, bx, by, bz)
    d4 = -_dot(acx, acy, acz, bx, by, bz)
    if d3 >= 0.0 and d4 <= d3:
        return 1, ib, ib, ib, 1.0, 0.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return 2, ia, ib, ib, 1.0 - v, v, 0.0
    d5 = -_dot(abx, aby, abz, cx, cy, cz)
    d6 = -_dot(acx, acy, acz, cx, cy, cz)
    if d6 >= 0.0 and d5 <= d6:
        return 1, ic, ic, ic, 1.0, 0.0, 0.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return 2, ia, ic, ic, 1.0 - w, w, 0.0
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 2, ib, ic, ic, 1.0 - w, w, 0.0
    denom = va + vb + vc
    if denom == 0.0:  # a degenerate triangle: keep its first edge
        return 2, ia, ib, ib, 0.5, 0.5, 0.0
    v = vb / denom
    w = vc / denom
    return 3, ia, ib, ic, 1.0 - v - w, v, w


@device_fn
def _point_of(buf, row, count, k0, k1, k2, l0, l1, l2):
    x0, y0, z0 = _w(buf, row, SIMPLEX + VERTEX_WIDTH * k0)
    x = l0 * x0
    y = l0 * y0
    z = l0 * z0
    if count > 1:
        x1, y1, z1 = _w(buf, row, SIMPLEX + VERTEX_WIDTH * k1)
        x += l1 * x1
        y += l1 * y1
        z += l1 * z1
    if count > 2:
        x2, y2, z2 = _w(buf, row, SIMPLEX + VERTEX_WIDTH * k2)
        x += l2 * x2
        y += l2 * y2
        z += l2 * z2
    return x, y, z


@device_fn
def _keep(buf, row, count, k0, k1, k2, l0, l1, l2):
    """Rewrite the simplex as vertices k0 < k1 < k2 (the first ``count``) with weights l."""
    _copy_vertex(buf, row, SIMPLEX + VERTEX_WIDTH * k0, SIMPLEX)
    if count > 1:
        _copy_vertex(buf, row, SIMPLEX + VERTEX_WIDTH * k1, SIMPLEX + VERTEX_WIDTH)
    if count > 2:
        _copy_vertex(buf, row, SIMPLEX + VERTEX_WIDTH * k2, SIMPLEX + 2 * VERTEX_WIDTH)
    buf[row, SIMPLEX_LAMBDA] = l0
    buf[row, SIMPLEX_LAMBDA + 1] = l1
    buf[row, SIMPLEX_LAMBDA + 2] = l2
    buf[row, SIMPLEX_LAMBDA + 3] = 0.0


@device_fn(inline=False)
def _reduce_simplex(buf, row, n):
    """Replace the simplex (n vertices) by the smallest face holding its point closest to the
    origin; returns (count, vx, vy, vz); count 4 means the origin is inside the tetrahedron."""
    if n == 1:
        buf[row, SIMPLEX_LAMBDA] = 1.0
        x, y, z = _w(buf, row, SIMPLEX)
        return 1, x, y, z
    if n == 2:
        ax, ay, az = _w(buf, row, SIMPLEX)
        bx, by, bz = _w(buf, row, SIMPLEX + VERTEX_WIDTH)
        ex, ey, ez = bx - ax, by - ay, bz - az
        ee = _dot(ex, ey, ez, ex, ey, ez)
        t = -_dot(ax, ay, az, ex, ey, ez) / ee if ee > 0.0 else 0.0
        if t <= 0.0:
            _keep(buf, row, 1, 0, 0, 0, 1.0, 0.0, 0.0)
            return 1, ax, ay, az
        if t >= 1.0:
            _keep(buf, row, 1, 1, 1, 1, 1.0, 0.0, 0.0)
            return 1, bx, by, bz
        buf[row, SIMPLEX_LAMBDA] = 1.0 - t
        buf[row, SIMPLEX_LAMBDA + 1] = t
        return 2, ax + t * ex, ay + t * ey, az + t * ez
    if n == 3:
        count, k0, k1, k2, l0, l1, l2 = _triangle_region(buf, row, 0, 1, 2)
        x, y, z = _point_of(buf, row, count, k0, k1, k2, l0, l1, l2)
        _keep(buf, row, count, k0, k1, k2, l0, l1, l2)
        return count, x, y, z
    # a tetrahedron: the faces the origin lies outside of
    best = math.inf
    b_count = 0
    b0 = 0
    b1 = 0
    b2 = 0
    bl0 = 0.0
    bl1 = 0.0
    bl2 = 0.0
    outside_any = False
    for f in range(4):
        # the face opposite vertex f, its vertices ascending
        if f == 0:
            i, j, k = 1, 2, 3
        elif f == 1:
            i, j, k = 0, 2, 3
        elif f == 2:
            i, j, k = 0, 1, 3
        else:
            i, j, k = 0, 1, 2
        ax, ay, az = _w(buf, row, SIMPLEX + VERTEX_WIDTH * i)
        bx, by, bz = _w(buf, row, SIMPLEX + VERTEX_WIDTH * j)
        cx, cy, cz = _w(buf, row, SIMPLEX + VERTEX_WIDTH * k)
        dx, dy, dz = _w(buf, row, SIMPLEX + VERTEX_WIDTH * f)
        ux, uy, uz = bx - ax, by - ay, bz - az
        vx, vy, vz = cx - ax, cy - ay, cz - az
        nx = uy * vz - uz * vy
        ny = uz * vx - ux * vz
        nz = ux * vy - uy * vx
        s_origin = -_dot(nx, ny, nz, ax, ay, az)
        s_other = _dot(nx, ny, nz, dx - ax, dy - ay, dz - az)
        if s_origin * s_other < 0.0 or s_other == 0.0:
            outside_any = True
            count, k0, k1, k2, l0, l1, l2 = _triangle_region(buf, row, i, j, k)
            px, py, pz = _point_of(buf, row, count, k0, k1, k2, l0, l1, l2)
            d = _dot(px, py, pz, px, py, pz)
            if d < best:
                best = d
                b_count, b0, b1, b2, bl0, bl1, bl2 = count, k0, k1, k2, l0, l1, l2
    if not outside_any:
        return 4, 0.0, 0.0, 0.0
    x, y, z = _point_of(buf, row, b_count, b0, b1, b2, bl0, bl1, bl2)
    # sort the kept indices so that rewriting in place never overwrites one still to be read
    if b_count > 1 and b1 < b0:
        b0, b1 = b1, b0
        bl0, bl1 = bl1, bl0
    if b_count > 2:
        if b2 < b1:
            b1, b2 = b2, b1
            bl1, bl2 = bl2, bl1
        if b1 < b0:
            b0, b1 = b1, b0
            bl0, bl1 = bl1, bl0
    _keep(buf, row, b_count, b0, b1, b2, bl0, bl1, bl2)
    return b_count, x, y, z


@device_fn
def _witness(buf, row, n):
    """The witness points (pA, pB) of the simplex's weights."""
    ax = 0.0
    ay = 0.0
    az = 0.0
    bx = 0.0
    by = 0.0
    bz = 0.0
    for k in range(n):
        lam = buf[row, SIMPLEX_LAMBDA + k]
        at = SIMPLEX + VERTEX_WIDTH * k
        ax += lam * buf[row, at + 3]
        ay += lam * buf[row, at + 4]
        az += lam * buf[row, at + 5]
        bx += lam * buf[row, at + 6]
        by += lam * buf[row, at + 7]
        bz += lam * buf[row, at + 8]
    return ax, ay, az, bx, by, bz


@device_fn(inline=False)
def gjk(a, b, shapes, rot, pos, scale, buf, row):
    """Distance between the cores of shapes ``a`` and ``b`` (``scale``: a length of the pair, m).

    Returns ``(status, n, dist, pax, pay, paz, pbx, pby, pbz)``: ``GJK_SEPARATE`` with the
    distance and witness points, or ``GJK_OVERLAP`` (the cores touch or overlap; the simplex of
    ``n`` vertices holds the origin, for :func:`epa`).
    """
    dx = pos[b, 0] - pos[a, 0]
    dy = pos[b, 1] - pos[a, 1]
    dz = pos[b, 2] - pos[a, 2]
    if dx * dx + dy * dy + dz * dz <= 1e-30 * scale * scale:
        dx = 1.0
    _support(a, b, shapes, rot, pos, -dx, -dy, -dz, buf, row, SIMPLEX)
    n = 1
    vx, vy, vz = _w(buf, row, SIMPLEX)
    buf[row, SIMPLEX_LAMBDA] = 1.0
    tiny = (1e-12 * scale) ** 2
    for _ in range(GJK_ITERATIONS):
        vv = _dot(vx, vy, vz, vx, vy, vz)
        if vv <= tiny:
            return GJK_OVERLAP, n, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        at = SIMPLEX + VERTEX_WIDTH * n
        _support(a, b, shapes, rot, pos, -vx, -vy, -vz, buf, row, at)
        wx, wy, wz = _w(buf, row, at)
        # no progress toward the origin: v is the closest point (relative tolerance)
        if vv - _dot(vx, vy, vz, wx, wy, wz) <= 1e-10 * vv:
            break
        n, vx, vy, vz = _reduce_simplex(buf, row, n + 1)
        if n == 4:
            return GJK_OVERLAP, 4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    pax, pay, paz, pbx, pby, pbz = _witness(buf, row, n)
    dist = math.sqrt(_dot(vx, vy, vz, vx, vy, vz))
    return GJK_SEPARATE, n, dist, pax, pay, paz, pbx, pby, pbz


# ============================================================================================
# EPA


@device_fn
def _vertex_at(k):
    return EPA_VERTICES + VERTEX_WIDTH * k


@device_fn
def _face_at(f):
    return EPA_FACES + FACE_WIDTH * f


@device_fn(inline=False)
def _set_face(buf, row, f, i, j, k):
    """Face f = (i, j, k) of the polytope, its plane computed; returns False when degenerate."""
    ax, ay, az = _w(buf, row, _vertex_at(i))
    bx, by, bz = _w(buf, row, _vertex_at(j))
    cx, cy, cz = _w(buf, row, _vertex_at(k))
    ux, uy, uz = bx - ax, by - ay, bz - az
    vx, vy, vz = cx - ax, cy - ay, cz - az
    nx = uy * vz - uz * vy
    ny = uz * vx - ux * vz
    nz = ux * vy - uy * vx
    length = math.sqrt(nx * nx + ny * ny + nz * nz)
    at = _face_at(f)
    buf[row, at] = i
    buf[row, at + 1] = j
    buf[row, at + 2] = k
    if length <= 0.0:
        buf[row, at + 7] = 0.0
        return False
    nx /= length
    ny /= length
    nz /= length
    buf[row, at + 3] = nx
    buf[row, at + 4] = ny
    buf[row, at + 5] = nz
    buf[row, at + 6] = _dot(nx, ny, nz, ax, ay, az)
    buf[row, at + 7] = 1.0
    return True


@device_fn(inline=False)
def _blow_up(a, b, shapes, rot, pos, scale, buf, row, n):
    """Grow GJK's final simplex (n vertices, holding the origin) into a tetrahedron in
    ``EPA_VERTICES``; returns False if D is too flat to span one."""
    for k in range(n):
        _copy_vertex(buf, row, SIMPLEX + VERTEX_WIDTH * k, _vertex_at(k))
    eps = 1e-9 * scale
    if n == 1:
        for t in range(6):
            d = 1.0 if t < 3 else -1.0
            _support(a, b, shapes, rot, pos, d if t % 3 == 0 else 0.0, d if t % 3 == 1 else 0.0,
                     d if t % 3 == 2 else 0.0, buf, row, _vertex_at(1))
            x0, y0, z0 = _w(buf, row, _vertex_at(0))
            x1, y1, z1 = _w(buf, row, _vertex_at(1))
            if math.sqrt((x1 - x0) ** 2 + (y1 - y0) ** 2 + (z1 - z0) ** 2) > eps:
                n = 2
                break
        if n == 1:
            return False
    if n == 2:
        x0, y0, z0 = _w(buf, row, _vertex_at(0))
        x1, y1, z1 = _w(buf, row, _vertex_at(1))
        ex, ey, ez = x1 - x0, y1 - y0, z1 - z0
        # a direction perpendicular to the segment, then three more around it
        if abs(ex) <= abs(ey) and abs(ex) <= abs(ez):
            px, py, pz = 0.0, ez, -ey
        elif abs(ey) <= abs(ez):
            px, py, pz = -ez, 0.0, ex
        else:
            px, py, pz = ey, -ex, 0.0
        qx = ey * pz - ez * py
        qy = ez * px - ex * pz
        qz = ex * py - ey * px
        for t in range(4):
            if t == 0:
                dx, dy, dz = px, py, pz
            elif t == 1:
                dx, dy, dz = -px, -py, -pz
            elif t == 2:
                dx, dy, dz = qx, qy, qz
            else:
                dx, dy, dz = -qx, -qy, -qz
            _support(a, b, shapes, rot, pos, dx, dy, dz, buf, row, _vertex_at(2))
            x2, y2, z2 = _w(buf, row, _vertex_at(2))
            cx = ey * (z2 - z0) - ez * (y2 - y0)
            cy = ez * (x2 - x0) - ex * (z2 - z0)
            cz = ex * (y2 - y0) - ey * (x2 - x0)
            if math.sqrt(cx * cx + cy * cy + cz * cz) > eps * math.sqrt(ex * ex + ey * ey + ez * ez):
                n = 3
                break
        if n == 2:
            return False
    if n == 3:
        x0, y0, z0 = _w(buf, row, _vertex_at(0))
        x1, y1, z1 = _w(buf, row, _vertex_at(1))
        x2, y2, z2 = _w(buf, row, _vertex_at(2))
        ux, uy, uz = x1 - x0, y1 - y0, z1 - z0
        vx, vy, vz = x2 - x0, y2 - y0, z2 - z0
        nx = uy * vz - uz * vy
        ny = uz * vx - ux * vz
        nz = ux * vy - uy * vx
        found = False
        for t in range(2):
            sgn = 1.0 if t == 0 else -1.0
            _support(a, b, shapes, rot, pos, sgn * nx, sgn * ny, sgn * nz, buf, row, _vertex_at(3))
            x3, y3, z3 = _w(buf, row, _vertex_at(3))
            vol = _dot(nx, ny, nz, x3 - x0, y3 - y0, z3 - z0)
            if abs(vol) > eps * math.sqrt(nx * nx + ny * ny + nz * nz):
                found = True
                break
        if not found:
            return False
    return True


@device_fn
def _add_edge(buf, row, ne, i, j):
    """Toggle edge (i, j) in the horizon list: drop its reverse if listed, else add it."""
    for e in range(ne):
        at = EPA_EDGES + 2 * e
        if buf[row, at] == j and buf[row, at + 1] == i:
            last = EPA_EDGES + 2 * (ne - 1)
            buf[row, at] = buf[row, last]
            buf[row, at + 1] = buf[row, last + 1]
            return ne - 1
    if ne >= EPA_EDGE_MAX:
        return -1
    at = EPA_EDGES + 2 * ne
    buf[row, at] = i
    buf[row, at + 1] = j
    return ne + 1


@device_fn(inline=False)
def epa(a, b, shapes, rot, pos, scale, buf, row, n):
    """Penetration of overlapping cores from GJK's simplex (``n`` vertices holding the origin).

    Returns ``(ok, depth, nx, ny, nz, pax, pay, paz, pbx, pby, pbz)``: the smallest translation of
    B along n (from A toward B) that separates the cores, and the witness points on A's and B's
    cores (pA − pB = depth·n). ``ok`` is False when D is too flat for a polytope (the cores
    merely touch: depth 0).
    """
    if not _blow_up(a, b, shapes, rot, pos, scale, buf, row, n):
        return False, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    # the tetrahedron's faces, wound outward (away from the opposite vertex)
    for f in range(4):
        if f == 0:
            i, j, k, o = 1, 2, 3, 0
        elif f == 1:
            i, j, k, o = 0, 3, 2, 1
        elif f == 2:
            i, j, k, o = 0, 1, 3, 2
        else:
            i, j, k, o = 0, 2, 1, 3
        _set_face(buf, row, f, i, j, k)
        at = _face_at(f)
        ox, oy, oz = _w(buf, row, _vertex_at(o))
        if _dot(buf[row, at + 3], buf[row, at + 4], buf[row, at + 5], ox, oy, oz) > buf[row, at + 6]:
            _set_face(buf, row, f, i, k, j)
    nv = 4
    nf = 4
    tol = 1e-9 * scale
    best = 0
    for _ in range(EPA_ITERATIONS):
        # the live face nearest the origin
        best = -1
        best_d = math.inf
        for f in range(nf):
            at = _face_at(f)
            if buf[row, at + 7] > 0.0 and buf[row, at + 6] < best_d:
                best_d = buf[row, at + 6]
                best = f
        if best < 0:
            break
        at = _face_at(best)
        nx = buf[row, at + 3]
        ny = buf[row, at + 4]
        nz = buf[row, at + 5]
        if nv >= EPA_VERTEX_MAX:
            break
        _support(a, b, shapes, rot, pos, nx, ny, nz, buf, row, _vertex_at(nv))
        wx, wy, wz = _w(buf, row, _vertex_at(nv))
        if _dot(nx, ny, nz, wx, wy, wz) - best_d <= tol:
            break
        # remove the faces the new vertex sees (marked −1 until the horizon fits); their outline
        # is the horizon
        ne = 0
        for f in range(nf):
            fa = _face_at(f)
            if buf[row, fa + 7] <= 0.0:
                continue
            if (_dot(buf[row, fa + 3], buf[row, fa + 4], buf[row, fa + 5], wx, wy, wz) - buf[row, fa + 6]
                    > 1e-12 * scale):
                buf[row, fa + 7] = -1.0
                i = int(buf[row, fa])
                j = int(buf[row, fa + 1])
                k = int(buf[row, fa + 2])
                ne = _add_edge(buf, row, ne, i, j)
                if ne >= 0:
                    ne = _add_edge(buf, row, ne, j, k)
                if ne >= 0:
                    ne = _add_edge(buf, row, ne, k, i)
                if ne < 0:
                    break
        restore = ne <= 0  # out of room for the horizon, or (numerically) nothing seen
        for f in range(nf):
            fa = _face_at(f)
            if buf[row, fa + 7] < 0.0:
                buf[row, fa + 7] = 1.0 if restore else 0.0
        if restore:
            break
        full = False
        for e in range(ne):
            # a dead slot if any, else a new one
            slot = -1
            for f in range(nf):
                if buf[row, _face_at(f) + 7] <= 0.0:
                    slot = f
                    break
            if slot < 0:
                if nf >= EPA_FACE_MAX:
                    full = True
                    break
                slot = nf
                nf += 1
            _set_face(buf, row, slot, int(buf[row, EPA_EDGES + 2 * e]), int(buf[row, EPA_EDGES + 2 * e + 1]), nv)
        nv += 1
        if full:
            break
    # the nearest live face
    best = -1
    best_d = math.inf
    for f in range(nf):
        at = _face_at(f)
        if buf[row, at + 7] > 0.0 and buf[row, at + 6] < best_d:
            best_d = buf[row, at + 6]
            best = f
    if best < 0:
        return False, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    at = _face_at(best)
    nx = buf[row, at + 3]
    ny = buf[row, at + 4]
    nz = buf[row, at + 5]
    depth = max(best_d, 0.0)
    # barycentric weights of the origin's projection onto the face
    i = int(buf[row, at])
    j = int(buf[row, at + 1])
    k = int(buf[row, at + 2])
    ax, ay, az = _w(buf, row, _vertex_at(i))
    bx, by, bz = _w(buf, row, _vertex_at(j))
    cx, cy, cz = _w(buf, row, _vertex_at(k))
    px, py, pz = depth * nx, depth * ny, depth * nz
    v0x, v0y, v0z = bx - ax, by - ay, bz - az
    v1x, v1y, v1z = cx - ax, cy - ay, cz - az
    v2x, v2y, v2z = px - ax, py - ay, pz - az
    d00 = _dot(v0x, v0y, v0z, v0x, v0y, v0z)
    d01 = _dot(v0x, v0y, v0z, v1x, v1y, v1z)
    d11 = _dot(v1x, v1y, v1z, v1x, v1y, v1z)
    d20 = _dot(v2x, v2y, v2z, v0x, v0y, v0z)
    d21 = _dot(v2x, v2y, v2z, v1x, v1y, v1z)
    den = d00 * d11 - d01 * d01
    if den > 0.0:
        lv = (d11 * d20 - d01 * d21) / den
        lw = (d00 * d21 - d01 * d20) / den
    else:
        lv = 0.0
        lw = 0.0
    lu = 1.0 - lv - lw
    ia = _vertex_at(i)
    ib = _vertex_at(j)
    ic = _vertex_at(k)
    pax = lu * buf[row, ia + 3] + lv * buf[row, ib + 3] + lw * buf[row, ic + 3]
    pay = lu * buf[row, ia + 4] + lv * buf[row, ib + 4] + lw * buf[row, ic + 4]
    paz = lu * buf[row, ia + 5] + lv * buf[row, ib + 5] + lw * buf[row, ic + 5]
    pbx = lu * buf[row, ia + 6] + lv * buf[row, ib + 6] + lw * buf[row, ic + 6]
    pby = lu * buf[row, ia + 7] + lv * buf[row, ib + 7] + lw * buf[row, ic + 7]
    pbz = lu * buf[row, ia + 8] + lv * buf[row, ib + 8] + lw * buf[row, ic + 8]
    return True, depth, nx, ny, nz, pax, pay, paz, pbx, pby, pbz
