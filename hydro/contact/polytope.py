"""Stage 4b — flat patches as polygons, exactly, at a cost that does not grow with the patch:
pairs of boxes or convex meshes of few planes here, a cylinder's or cone's caps on them in
:mod:`.axial`, two convex triangle meshes in :mod:`.faces` (the kernel below runs all three routes).

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


from ..backend import device_fn, kernel, lower_bound
from ..sdf.layout import I_PLANE_COUNT
from .contacts import DEGENERATE_AREA
from .polygon import MAX_POLYGON, clip_polygon, emit_polygon, interface_square
from .pair_setup import (PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_VOXEL_B, PI_ROUTE, PI_SDF_A,
                         PI_SDF_B, ROUTE_AXIAL, ROUTE_FACES, ROUTE_POLYTOPE, overlap_box, possible_planes, shape_box, shape_plane)
from .axial import AXIAL_SCRATCH, axial_contacts
from .face_bounds import cut_edge
from .faces import FACE_SCRATCH, face_contacts

POLYGON_SCRATCH = max(2 * 3 * MAX_POLYGON, AXIAL_SCRATCH, FACE_SCRATCH)  # two ping-pong rows of (x, y, z)
#   per vertex; the axial route's planes and node intervals; the face route's polygons and triangle lists


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


@device_fn(inline=False)
def _face_polygon(pair_f, p, sdf, sa, sb, i, j, ka, kb, gap, reach, scratch):
    """The polygon of faces (i of A, j of B) in row 0 or 1 of ``scratch[p]``: (row, vertex count,
    plane normal, and the two planes), count 0 when the faces share no piece of the patch."""
    anx, any_, anz, ac = shape_plane(pair_f, p, sdf, sa, 0, i)
    bnx, bny, bnz, bc = shape_plane(pair_f, p, sdf, sb, 1, j)
    # the interface plane and a square on it about B's box's centre, large enough to hold the piece
    qx, qy, qz, hx, hy, hz = shape_box(pair_f, p, sdf, sb, 1)
    ok, ux, uy, uz = interface_square(scratch, p, ka, kb, anx, any_, anz, ac, bnx, bny, bnz, bc, qx, qy, qz, reach)
    if not ok:  # parallel faces of equal pressure: no surface
        return 0, 0, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc
    n = 4
    row = 0
    # face i is A's largest plane: a_k − a_i <= 0 for every other face k; likewise j for B
    for k in range(sdf.params_i[sa, I_PLANE_COUNT]):
        if k != i and n > 0:
            kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sa, 0, k)
            n = clip_polygon(scratch, p, row, n, 1 - row, kx - anx, ky - any_, kz - anz, kc - ac)
            row = 1 - row
    for k in range(sdf.params_i[sb, I_PLANE_COUNT]):
        if k != j and n > 0:
            kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sb, 1, k)
            n = clip_polygon(scratch, p, row, n, 1 - row, kx - bnx, ky - bny, kz - bnz, kc - bc)
            row = 1 - row
    if n > 0:  # within the band s = a_i + b_j <= gap
        n = clip_polygon(scratch, p, row, n, 1 - row, anx + bnx, any_ + bny, anz + bnz, ac + bc - gap)
        row = 1 - row
    return row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc


# Model: pairs (PairView), sdf (SDFView); Data in/out: scratch (POLYGON_SCRATCH per pair);
# Setting: cells (HydroelasticConfig.polygon_cells)
# Data in: block_pair, block_count, block_offsets (stage 4's contacts, to place these after them)
# Data out: counts (count pass) / contact_f, contact_i, and when asked triangle_f (scatter pass, at
# offsets[p] + the marching-cubes contacts of pairs <= p, below capacity)
@device_fn
def _polytope_item(p, write, pairs, sdf, scratch, cells, block_pair, block_count, block_offsets, counts, offsets,
                   contact_f, contact_i, triangle_f, capacity):
    route = pairs.i[p, PI_ROUTE]
    if route != ROUTE_POLYTOPE and route != ROUTE_AXIAL and route != ROUTE_FACES:
        if not write:
            counts[p] = 0
        return
    if write and counts[p] == 0:
        return
    if route == ROUTE_AXIAL or route == ROUTE_FACES:
        o = 0
        if write:
            o = offsets[p] + block_offsets[lower_bound(block_pair, block_count, p + 1)]
        if route == ROUTE_AXIAL:
            n_route = axial_contacts(p, write, pairs, sdf, scratch, cells, o, contact_f, contact_i, triangle_f,
                                     capacity)
        else:
            n_route = face_contacts(p, write, pairs, sdf, scratch, cells, o, contact_f, contact_i, triangle_f,
                                    capacity)
        if not write:
            counts[p] = n_route
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
    bx_, by_, bz_, bhx, bhy, bhz = shape_box(pair_f, p, sdf, sb, 1)
    reach = 6.0 * gap + 2.0 * (bhx + bhy + bhz)
    # the cut: the smaller shape's shortest box edge over ``cells``
    edge = cut_edge(sdf, sa, sb, cells)
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
            emitted = emit_polygon(scratch, p, row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, kb, keff,
                                   gap, h, edge, DEGENERATE_AREA, write, o, capacity, pairs, contact_f, contact_i,
                                   triangle_f)
            o += emitted
            n_out += emitted
    if not write:
        counts[p] = n_out


POLYTOPE_CONTACTS = kernel("polytope_contacts", _polytope_item, serial_below=64)
