"""Stage 4b — flat patches as polygons, exactly, at a cost that does not grow with the patch:
pairs of boxes or convex meshes here, a cylinder's or cone's caps on them in :mod:`.axial` (the
kernel below runs both routes).

Inside a box or a convex mesh its distance is the largest of its face planes' signed distances
(``SDFView.planes``: a box's six, a convex mesh's distinct planes), a piecewise-linear field: the
region where plane i is the largest is a convex polyhedron, and there φ is that plane. For two
such shapes A and B (both hydroelastic, no contact margins, so the overlap lies inside both),
every piece of the patch lies on one plane per pair of planes (i of A, j of B): where
kA·a_i = kB·b_j, with a_i, b_j the two planes' signed distances. The piece is that plane clipped
to the region where a_i and b_j are the largest of their shape's planes and to the band
s = a_i + b_j <= gap — a convex polygon. Its fan triangles go through the same contact math as
marching cubes' triangles (:func:`~hydro.contact.contacts.triangle_contact`); both fields are
linear on them, so area, force, the centre of pressure and the depth are exact. Each fan triangle
is cut into m² equal triangles, m = ⌈√(2·area) / ℓ⌉ (at most 8), ℓ the smaller shape's shortest
bounding-box edge over ``HydroelasticConfig.polygon_cells``: the force and torque are exact
either way, but a solver that linearises the contacts (stiffness at fixed points) needs them
spread over the face to resist tilting — a face as two triangles resists no rotation about their
shared diagonal, and a box rocks on it. The thin rim bands stay whole.

A 0.1 m box resting on a ground makes 5 polygons (the face and four 45° rim bands): 2·6² + 8
triangles at the default ``polygon_cells`` = 6, where marching cubes at 64³ makes about 7,000.
Pair setup sends a pair here (route :data:`~hydro.contact.pair_setup.ROUTE_POLYTOPE`) when both
shapes are boxes or convex meshes (of at most ``MAX_POLYTOPE_PLANES`` planes) evaluated exactly,
the interface is continuous and neither shape has a contact margin (a margin puts part of the
overlap outside a shape, where its distance near edges is not a plane); every other pair but the
axial route's goes through refinement and marching cubes. With a contact gap, speculative
contacts outside the overlap take the planes as the field there too (the true distance is larger
near edges and corners).

Only the plane pairs whose regions can meet the shapes' overlap are clipped (:func:`_face_masks`
over the overlap of their bounding boxes: a box resting on another, 5 of the 36). Clipping uses
two rows of ``MAX_POLYGON`` vertices per pair in a scratch buffer (``POLYGON_SCRATCH`` floats);
a polygon has at most 4 + one vertex per clipping plane, so it always fits.
"""

from __future__ import annotations

import math

from ..backend import device_fn, kernel, lower_bound
from ..sdf.layout import I_PLANE_COUNT
from .contacts import DEGENERATE_AREA, emit_triangle, triangle_is_contact
from .pair_setup import (MAX_POLYTOPE_PLANES, PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_VOXEL_B, PI_ROUTE, PI_SDF_A,
                         PI_SDF_B, ROUTE_AXIAL, ROUTE_POLYTOPE, overlap_box, possible_planes, shape_box, shape_plane)
from .axial import AXIAL_SCRATCH, axial_contacts

MAX_SUBDIVISION = 8  # cuts per edge of a fan triangle: at most 64 triangles each
MAX_POLYGON = 4 + 2 * MAX_POLYTOPE_PLANES  # vertices of a clipped polygon: 4 + one per clip
POLYGON_SCRATCH = max(2 * 3 * MAX_POLYGON, AXIAL_SCRATCH)  # two ping-pong rows of (x, y, z) per vertex;
#                                                            the axial route's planes and node intervals


@device_fn(inline=False)
def _face_masks(pair_f, p, sdf, sa, sb, gap):
    """(planes of A, planes of B) that can hold a piece of the pair's patch
    (:func:`~hydro.contact.pair_setup.possible_planes` over the overlap of the two shapes' boxes
    grown by the gap, in B's frame, where every piece lies: on the interface a_i and b_j share
    their sign and a_i + b_j <= gap); (0, 0) when they do not overlap."""
    ok, cx, cy, cz, hx, hy, hz = overlap_box(pair_f, p, sdf, sa, sb, gap)
    if not ok:
        return 0, 0
    return (possible_planes(pair_f, p, sdf, sa, 0, cx, cy, cz, hx, hy, hz),
            possible_planes(pair_f, p, sdf, sb, 1, cx, cy, cz, hx, hy, hz))


@device_fn(inline=True)
def _clip(scratch, p, src, n, dst, nx, ny, nz, c):
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
def _face_polygon(pair_f, p, sdf, sa, sb, i, j, ka, kb, gap, reach, scratch):
    """The polygon of faces (i of A, j of B) in row 0 or 1 of ``scratch[p]``: (row, vertex count,
    plane normal, and the two planes), count 0 when the faces share no piece of the patch."""
    anx, any_, anz, ac = shape_plane(pair_f, p, sdf, sa, 0, i)
    bnx, bny, bnz, bc = shape_plane(pair_f, p, sdf, sb, 1, j)
    # the interface plane kA·a_i − kB·b_j = 0, normal along increasing f (from A toward B)
    nx = ka * anx - kb * bnx
    ny = ka * any_ - kb * bny
    nz = ka * anz - kb * bnz
    c = ka * ac - kb * bc
    nn = nx * nx + ny * ny + nz * nz
    if nn <= 1e-18 * (ka + kb) * (ka + kb):  # parallel faces of equal pressure: no surface
        return 0, 0, nx, ny, nz, anx, any_, anz, ac, bnx, bny, bnz, bc
    inv = 1.0 / math.sqrt(nn)
    ux, uy, uz = nx * inv, ny * inv, nz * inv
    # a square on the plane around B's box's centre projected onto it, large enough to hold the piece
    qx, qy, qz, hx, hy, hz = shape_box(pair_f, p, sdf, sb, 1)
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
        su = reach if (v == 1 or v == 2) else -reach
        sv = reach if v >= 2 else -reach
        scratch[p, 3 * v] = ox + su * ex + sv * fx
        scratch[p, 3 * v + 1] = oy + su * ey + sv * fy
        scratch[p, 3 * v + 2] = oz + su * ez + sv * fz
    n = 4
    row = 0
    # face i is A's largest plane: a_k − a_i <= 0 for every other face k; likewise j for B
    for k in range(sdf.params_i[sa, I_PLANE_COUNT]):
        if k != i and n > 0:
            kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sa, 0, k)
            n = _clip(scratch, p, row, n, 1 - row, kx - anx, ky - any_, kz - anz, kc - ac)
            row = 1 - row
    for k in range(sdf.params_i[sb, I_PLANE_COUNT]):
        if k != j and n > 0:
            kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sb, 1, k)
            n = _clip(scratch, p, row, n, 1 - row, kx - bnx, ky - bny, kz - bnz, kc - bc)
            row = 1 - row
    if n > 0:  # within the band s = a_i + b_j <= gap
        n = _clip(scratch, p, row, n, 1 - row, anx + bnx, any_ + bny, anz + bnz, ac + bc - gap)
        row = 1 - row
    return row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc


@device_fn(inline=True)
def _vertex(scratch, p, row, v):
    base = row * 3 * MAX_POLYGON + 3 * v
    return scratch[p, base], scratch[p, base + 1], scratch[p, base + 2]


# Model: pairs (PairView), sdf (SDFView); Data in/out: scratch (POLYGON_SCRATCH per pair);
# Setting: cells (HydroelasticConfig.polygon_cells)
# Data in: block_pair, block_count, block_offsets (stage 4's contacts, to place these after them)
# Data out: counts (count pass) / contact_f, contact_i, and when asked triangle_f (scatter pass, at
# offsets[p] + the marching-cubes contacts of pairs <= p, below capacity)
@device_fn
def _polytope_item(p, write, pairs, sdf, scratch, cells, block_pair, block_count, block_offsets, counts, offsets,
                   contact_f, contact_i, triangle_f, capacity):
    route = pairs.i[p, PI_ROUTE]
    if route != ROUTE_POLYTOPE and route != ROUTE_AXIAL:
        if not write:
            counts[p] = 0
        return
    if write and counts[p] == 0:
        return
    if route == ROUTE_AXIAL:
        o = 0
        if write:
            o = offsets[p] + block_offsets[lower_bound(block_pair, block_count, p + 1)]
        n_axial = axial_contacts(p, write, pairs, sdf, scratch, cells, o, contact_f, contact_i, triangle_f,
                                 capacity)
        if not write:
            counts[p] = n_axial
        return
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
    keff = pair_f[p, PF_KEFF]
    gap = pair_f[p, PF_GAP]
    h = pair_f[p, PF_VOXEL_B]
    # half the square's edge: on the plane kB·b_j and kA·a_i agree in sign, so s <= gap puts the
    # piece inside B (in its bounding box) grown by the gap, within twice the box's half-extents' L1
    # norm of the point where the square is centred (the box's centre projected on the plane)
    ax_, ay_, az_, ahx, ahy, ahz = shape_box(pair_f, p, sdf, sa, 1)  # A's own half extents (unrotated)
    bx_, by_, bz_, bhx, bhy, bhz = shape_box(pair_f, p, sdf, sb, 1)
    reach = 6.0 * gap + 2.0 * (bhx + bhy + bhz)
    # the cut: the smaller shape's shortest box edge over ``cells``
    edge = 2.0 * min(min(ahx, min(ahy, ahz)), min(bhx, min(bhy, bhz))) / cells
    o = 0
    if write:
        o = offsets[p] + block_offsets[lower_bound(block_pair, block_count, p + 1)]
    n_out = 0
    faces_a, faces_b = _face_masks(pair_f, p, sdf, sa, sb, gap)
    for i in range(sdf.params_i[sa, I_PLANE_COUNT]):
        for j in range(sdf.params_i[sb, I_PLANE_COUNT]):
            if (faces_a >> i) & 1 == 0 or (faces_b >> j) & 1 == 0:
                continue
            row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc = _face_polygon(
                pair_f, p, sdf, sa, sb, i, j, ka, kb, gap, reach, scratch)
            if n < 3:
                continue
            # fan from vertex 0, wound so the triangles' normals point along the plane's (A -> B);
            # each fan triangle cut into m² (m per edge) of edge at most ``edge``
            x0, y0, z0 = _vertex(scratch, p, row, 0)
            for t in range(1, n - 1):
                x1, y1, z1 = _vertex(scratch, p, row, t)
                x2, y2, z2 = _vertex(scratch, p, row, t + 1)
                cx = (y1 - y0) * (z2 - z0) - (z1 - z0) * (y2 - y0)
                cy = (z1 - z0) * (x2 - x0) - (x1 - x0) * (z2 - z0)
                cz = (x1 - x0) * (y2 - y0) - (y1 - y0) * (x2 - x0)
                if cx * ux + cy * uy + cz * uz < 0.0:
                    x1, y1, z1, x2, y2, z2 = x2, y2, z2, x1, y1, z1
                # m from the triangle's size, sqrt(2·area): thin rim bands stay whole
                size = math.sqrt(math.sqrt(cx * cx + cy * cy + cz * cz))
                m = min(MAX_SUBDIVISION, max(1, int(math.ceil(size / edge))))
                # a sliver is dropped whole (its pieces, similar to it, are only smaller)
                if m > 1 and 0.25 * (cx * cx + cy * cy + cz * cz) <= (DEGENERATE_AREA * h * h) ** 2:
                    continue
                piece_voxel = h if m == 1 else 0.0
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
                    if not triangle_is_contact(px0, py0, pz0, px1, py1, pz1, px2, py2, pz2, ea0 + eb0, ea1 + eb1,
                                               ea2 + eb2, gap, piece_voxel):
                        continue
                    if write and o < capacity:
                        emit_triangle(contact_f, contact_i, triangle_f, o, pairs, p, px0, py0, pz0, px1, py1, pz1,
                                      px2, py2, pz2, ea0, ea1, ea2, eb0, eb1, eb2, kb, keff, False, 0.0, 0.0)
                    o += 1
                    n_out += 1
    if not write:
        counts[p] = n_out


POLYTOPE_CONTACTS = kernel("polytope_contacts", _polytope_item, serial_below=64)
