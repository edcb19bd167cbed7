"""Stage 4b's polygons (:mod:`.polytope`, :mod:`.faces`): clipping a convex polygon held in a pair's
scratch row to a half space, and the contacts of a polygon on an interface plane where both fields
are affine (its fan triangles, each cut into m² so that a solver linearising the contacts feels the
face resist tilting; see :mod:`.polytope`)."""

from __future__ import annotations

import math

from ..backend import device_fn
from .contacts import degenerate, emit_triangle, triangle_is_contact
from ..sdf.mesh_faces import MAX_FACE_NEIGHBOURS
from .pair_layout import MAX_POLYTOPE_PLANES

MAX_SUBDIVISION = 8  # cuts per edge of a fan triangle: at most 64 triangles each
#: vertices of a clipped polygon: 4 + one per clip (the polytope route: the other planes of both
#: shapes and the band; the face route: two prisms, the band, two depths and both neighbour lists)
MAX_POLYGON = 4 + max(2 * MAX_POLYTOPE_PLANES, 9 + 2 * MAX_FACE_NEIGHBOURS)


@device_fn(inline=True)
def clip_polygon(scratch, p, src, n, dst, nx, ny, nz, c):
    """Clip the convex polygon of ``n`` vertices in row ``src`` of ``scratch[p]`` to the half
    space n·x + c <= 0 into row ``dst``; the number of vertices kept."""
    m = 0
    if n == 0:
        return 0
    base_s = src * 3 * MAX_POLYGON
    base_d = dst * 3 * MAX_POLYGON
    k = n - 1
    px = scratch[p, base_s + 3 * k]
    py = scratch[p, base_s + 3 * k + 1]
    pz = scratch[p, base_s + 3 * k + 2]
    gp = nx * px + ny * py + nz * pz + c
    for v in range(n):
        qx = scratch[p, base_s + 3 * v]
        qy = scratch[p, base_s + 3 * v + 1]
        qz = scratch[p, base_s + 3 * v + 2]
        gq = nx * qx + ny * qy + nz * qz + c
        if (gp <= 0.0) != (gq <= 0.0) and m < MAX_POLYGON:  # the edge p -> q crosses: its crossing
            t = gp / (gp - gq)
            scratch[p, base_d + 3 * m] = px + t * (qx - px)
            scratch[p, base_d + 3 * m + 1] = py + t * (qy - py)
            scratch[p, base_d + 3 * m + 2] = pz + t * (qz - pz)
            m += 1
        if gq <= 0.0 and m < MAX_POLYGON:
            scratch[p, base_d + 3 * m] = qx
            scratch[p, base_d + 3 * m + 1] = qy
            scratch[p, base_d + 3 * m + 2] = qz
            m += 1
        px = qx
        py = qy
        pz = qz
        gp = gq
    return m


@device_fn(inline=False)
def interface_square(scratch, p, ka, kb, anx, any_, anz, ac, bnx, bny, bnz, bc, qx, qy, qz, half):
    """The interface plane kA·a − kB·b = 0 of the planes a = (an, ac) of A and b = (bn, bc) of B
    (n·x + c each), and a square on it of half edge ``half`` about q projected onto it, in row 0
    of ``scratch[p]``: (False when the planes are parallel with equal pressure: no surface, its
    unit normal along increasing kA·a − kB·b, from A toward B)."""
    nx = ka * anx - kb * bnx
    ny = ka * any_ - kb * bny
    nz = ka * anz - kb * bnz
    c = ka * ac - kb * bc
    nn = nx * nx + ny * ny + nz * nz
    if nn <= 1e-18 * (ka + kb) * (ka + kb):
        return False, nx, ny, nz
    inv = 1.0 / math.sqrt(nn)
    ux, uy, uz = nx * inv, ny * inv, nz * inv
    dist = (nx * qx + ny * qy + nz * qz + c) * inv
    ox = qx - dist * ux
    oy = qy - dist * uy
    oz = qz - dist * uz
    if abs(ux) < 0.57735:
        ex, ey, ez = 0.0, uz, -uy
    elif abs(uy) < 0.57735:
        ex, ey, ez = -uz, 0.0, ux
    else:
        ex, ey, ez = uy, -ux, 0.0
    el = 1.0 / math.sqrt(ex * ex + ey * ey + ez * ez)
    ex, ey, ez = ex * el, ey * el, ez * el
    fx = uy * ez - uz * ey
    fy = uz * ex - ux * ez
    fz = ux * ey - uy * ex
    for v in range(4):
        su = half if (v == 1 or v == 2) else -half
        sv = half if v >= 2 else -half
        scratch[p, 3 * v] = ox + su * ex + sv * fx
        scratch[p, 3 * v + 1] = oy + su * ey + sv * fy
        scratch[p, 3 * v + 2] = oz + su * ez + sv * fz
    return True, ux, uy, uz


@device_fn(inline=True)
def clip(scratch, p, row, n, nx, ny, nz, c):
    """Clip the convex polygon of ``n`` vertices in row ``row`` of ``scratch[p]`` to the half space
    n·x + c <= 0: (the row now holding it, its vertex count). A plane that cuts nothing leaves the
    polygon where it is (most clips, when they are many), one that cuts it moves it to the other row."""
    if n == 0:
        return row, 0
    base = row * 3 * MAX_POLYGON
    inside = 0
    for v in range(n):
        x = scratch[p, base + 3 * v]
        if nx * x + ny * scratch[p, base + 3 * v + 1] + nz * scratch[p, base + 3 * v + 2] + c <= 0.0:
            inside += 1
    if inside == n:
        return row, n
    if inside == 0:
        return row, 0
    return 1 - row, clip_polygon(scratch, p, row, n, 1 - row, nx, ny, nz, c)


@device_fn(inline=False)
def polygon_area(scratch, p, row, n):
    """The area of the planar convex polygon in ``row`` (its fan's cross products, summed)."""
    base = row * 3 * MAX_POLYGON
    x0 = scratch[p, base]
    y0 = scratch[p, base + 1]
    z0 = scratch[p, base + 2]
    sx = 0.0
    sy = 0.0
    sz = 0.0
    for v in range(1, n - 1):
        ax = scratch[p, base + 3 * v] - x0
        ay = scratch[p, base + 3 * v + 1] - y0
        az = scratch[p, base + 3 * v + 2] - z0
        bx = scratch[p, base + 3 * v + 3] - x0
        by = scratch[p, base + 3 * v + 4] - y0
        bz = scratch[p, base + 3 * v + 5] - z0
        sx += ay * bz - az * by
        sy += az * bx - ax * bz
        sz += ax * by - ay * bx
    return 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)


@device_fn(inline=False)
def canonical_start(scratch, p, row, n):
    """The polygon in ``row`` turned to start at its vertex least along a fixed generic direction
    (into the other row when it moves): the fan :func:`emit_polygon` cuts then does not depend on
    where the clipping happened to start the list, which a rounding can change (the CPU and a GPU
    must cut the same triangles); the row now holding it."""
    base = row * 3 * MAX_POLYGON
    best = 0
    low = 1e300
    for v in range(n):
        f = (scratch[p, base + 3 * v] + 0.318309886 * scratch[p, base + 3 * v + 1]
             + 0.159154943 * scratch[p, base + 3 * v + 2])
        if f < low:
            low = f
            best = v
    if best == 0:
        return row
    dst = (1 - row) * 3 * MAX_POLYGON
    for v in range(n):
        src = base + 3 * ((best + v) % n)
        scratch[p, dst + 3 * v] = scratch[p, src]
        scratch[p, dst + 3 * v + 1] = scratch[p, src + 1]
        scratch[p, dst + 3 * v + 2] = scratch[p, src + 2]
    return 1 - row


@device_fn(inline=True)
def polygon_vertex(scratch, p, row, v):
    base = row * 3 * MAX_POLYGON + 3 * v
    return scratch[p, base], scratch[p, base + 1], scratch[p, base + 2]


@device_fn(inline=False)
def emit_polygon(scratch, p, row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, kb, keff, gap, h, edge, sliver,
                 write, o, capacity, pairs, contact_f, contact_i, triangle_f):
    """The contacts of the convex polygon of ``n`` vertices in row ``row`` of ``scratch[p]``, on
    the interface plane of normal u (A toward B) where A's field is the plane (an, ac) and B's
    (bn, bc): its fan triangles, each cut into m² of edge at most ``edge`` (a fan triangle under
    ``sliver`` × h² dropped whole), written from row ``o`` (below ``capacity``) when ``write``; how
    many."""
    n_out = 0
    # all inside the band (s <= 0 at every vertex, so at every point): each piece of a fan triangle
    # is a contact unless degenerate, which its area over m² tells for all of them at once
    inside = gap >= 0.0
    for v in range(n):
        vx, vy, vz = polygon_vertex(scratch, p, row, v)
        if not (anx + bnx) * vx + (any_ + bny) * vy + (anz + bnz) * vz + ac + bc <= 0.0:
            inside = False
    # fan from vertex 0, wound so the triangles' normals point along the plane's (A -> B);
    # each fan triangle cut into m² (m per edge) of edge at most ``edge``
    x0, y0, z0 = polygon_vertex(scratch, p, row, 0)
    for t in range(1, n - 1):
        x1, y1, z1 = polygon_vertex(scratch, p, row, t)
        x2, y2, z2 = polygon_vertex(scratch, p, row, t + 1)
        cx = (y1 - y0) * (z2 - z0) - (z1 - z0) * (y2 - y0)
        cy = (z1 - z0) * (x2 - x0) - (x1 - x0) * (z2 - z0)
        cz = (x1 - x0) * (y2 - y0) - (y1 - y0) * (x2 - x0)
        if cx * ux + cy * uy + cz * uz < 0.0:
            x1, y1, z1, x2, y2, z2 = x2, y2, z2, x1, y1, z1
        # m from the triangle's size, sqrt(2·area): thin rim bands stay whole
        size = math.sqrt(math.sqrt(cx * cx + cy * cy + cz * cz))
        m = min(MAX_SUBDIVISION, max(1, int(math.ceil(size / edge))))
        # a sliver is dropped whole (its pieces, similar to it, are only smaller)
        if 0.25 * (cx * cx + cy * cy + cz * cz) <= (sliver * h * h) ** 2:
            continue
        piece_voxel = h if m == 1 else 0.0
        if inside:
            if degenerate((cx * cx + cy * cy + cz * cz) / (m * m * m * m), piece_voxel):
                continue  # (as triangle_is_contact would find each piece: each has 1/m² of its area)
            if not write:  # counted at once
                o += m * m
                n_out += m * m
                continue
        e1x = (x1 - x0) / m
        e1y = (y1 - y0) / m
        e1z = (z1 - z0) / m
        e2x = (x2 - x0) / m
        e2y = (y2 - y0) / m
        e2z = (z2 - z0) / m
        for q in range(m * m):
            # the m² triangles of the grid (i along e1, j along e2, i + j <= m) by rows
            # r = i + j of their first corner: r + 1 upright, then r inverted
            r = int(math.sqrt(q))
            c = q - r * r
            if c <= r:
                i0, j0, i1, j1, i2, j2 = c, r - c, c + 1, r - c, c, r - c + 1
            else:
                k = c - r - 1
                i0, j0, i1, j1, i2, j2 = k + 1, r - 1 - k, k + 1, r - k, k, r - k
            px0 = x0 + i0 * e1x + j0 * e2x
            py0 = y0 + i0 * e1y + j0 * e2y
            pz0 = z0 + i0 * e1z + j0 * e2z
            px1 = x0 + i1 * e1x + j1 * e2x
            py1 = y0 + i1 * e1y + j1 * e2y
            pz1 = z0 + i1 * e1z + j1 * e2z
            px2 = x0 + i2 * e1x + j2 * e2x
            py2 = y0 + i2 * e1y + j2 * e2y
            pz2 = z0 + i2 * e1z + j2 * e2z
            ea0 = anx * px0 + any_ * py0 + anz * pz0 + ac
            eb0 = bnx * px0 + bny * py0 + bnz * pz0 + bc
            ea1 = anx * px1 + any_ * py1 + anz * pz1 + ac
            eb1 = bnx * px1 + bny * py1 + bnz * pz1 + bc
            ea2 = anx * px2 + any_ * py2 + anz * pz2 + ac
            eb2 = bnx * px2 + bny * py2 + bnz * pz2 + bc
            if not inside and not triangle_is_contact(px0, py0, pz0, px1, py1, pz1, px2, py2, pz2, ea0 + eb0,
                                                      ea1 + eb1, ea2 + eb2, gap, piece_voxel):
                continue
            if write and o < capacity:
                emit_triangle(contact_f, contact_i, triangle_f, o, pairs, p, px0, py0, pz0, px1, py1, pz1,
                              px2, py2, pz2, ea0, ea1, ea2, eb0, eb1, eb2, kb, keff, False, 0.0, 0.0)
            o += 1
            n_out += 1
    return n_out
