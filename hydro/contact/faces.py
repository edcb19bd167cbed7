"""Stage 4b, face route — a convex triangle mesh against another or against a shape of planes (a
box, a convex mesh of few planes): the patch as exact polygons, one per pair of triangles or planes.

Inside a closed convex polyhedron φ is the largest of its triangles' plane distances, as inside a
convex mesh of few planes (:mod:`.polytope`), but an icosphere has 1,280 triangles: clipping each
pair against every plane, as the polytope route does, costs planes³. Here each piece is clipped only
against what can bound it, and only pairs near the overlap are tried:

- **Depth.** For x in B, A's field is at least any plane of A: −φA(x) ≤ h_B(−n_k) − c_k for every
  triangle k of A (n_k·x + c_k its plane, h_B B's support function, bounded by B's box and ball), so
  D_A = the least of these over the triangles near B bounds how deep the overlap reaches into A;
  likewise D_B. Against a wide shape of planes, whose support along a tilted normal is large, the
  overlap's part of A's ball below each of its planes bounds it instead
  (:func:`~.face_bounds.faces_fit`).
- **Prism.** A point at depth ≤ D_A below triangle i where i's plane is A's field projects into
  triangle i (the nearest point of a convex polyhedron from inside is on the nearest face plane,
  within that face): the piece lies in i's prism (its three side planes), within D_A below it.
- **Neighbours.** For such a point q, A's nearest triangle m lies within D_A of q, so within 2·D_A
  of triangle i; and if q were outside A, the segment from q's projection p ∈ triangle i to q
  would leave A through a triangle within D_A of i, whose plane is then above i's at q though not at
  p — yet the clip against it holds at both, and the half space is convex. So clipping against the
  triangles within 2·D_A of i (:mod:`hydro.sdf.mesh_faces` lists those within 2·reach, built once;
  the route needs D_A ≤ reach) leaves exactly the region where i is A's field, inside A. A shape of
  planes is clipped against all its other planes, as on the polytope route.
- **Candidates.** Triangle i can hold a piece only if its prism piece (to D_A below it) meets B:
  then no plane of B (a lower bound on B's field) is positive all over it (:func:`_candidates`,
  against B's planes near A). Two triangles are clipped only when their grown balls meet, no side
  plane of one prism separates their prism pieces and no plane of either's nearest neighbours is
  above its own all over the other's piece.

The piece of (i, j) is the plane kA·a_i = kB·b_j clipped to the prisms, the depths, the band
a_i + b_j <= 0 and both sides' neighbours; a piece or fan triangle under ``SLIVER`` voxel² is
dropped and each polygon's fan starts at a canonical vertex (so that the CPU and a GPU cut the same
triangles); its fan triangles go through :func:`~.polygon.emit_polygon`, as the polytope route's
polygons (both fields are linear on them: area, force, centre of pressure and depth are exact to
rounding). The count pass records the pieces it found, each with the neighbour planes that cut it;
the write pass rebuilds only those, clipped against only those planes (the same polygon to the bit:
a plane that cuts nothing leaves the polygon as it is). Pair
setup sends a pair here (:data:`~hydro.contact.pair_setup.ROUTE_FACES`) when one shape is a convex
mesh with face lists (:mod:`hydro.sdf.mesh_faces`) and the other another or a shape of planes (not
a pair the polytope route takes), exact meshes (and, with a box, exact primitives) and polygons
are on, neither has a margin or a gap, each mesh's depth bound is within its lists' reach and at
most ``MAX_FACE_CANDIDATES`` triangles of each lie near the other (:func:`faces_fit`); every other
pair takes the grid.

**A non-convex mesh** (A, against a shape of planes) has a rule per neighbour
(:func:`hydro.sdf.mesh_faces.region_rules`, the table in docs/design.md stage 4b): the max rule
above, the min rule (i's plane below the neighbour's: across a reflex edge, where i's prism side
is then not clipped and the piece runs on into the wedge), none, or the max rule within a cluster
of mutually reflex neighbours, where i's plane need only lie above the least of the cluster's: a
union, so each pair of triangles has one piece per choice of each cluster's least
(:func:`_region_shape`, :func:`_a_cut`). Its depth bound is how far its corners reach below the
other's planes (:func:`~.face_bounds._region_depth`), its candidates the triangles within that of
the other (pieces leave the prism at reflex edges, so the prism test does not apply). A piece
clipped by a cluster has no record (the write pass clips it again against all).
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..sdf.layout import I_FACE_CONVEX, I_FACE_START, I_FACES, I_PLANE_COUNT
from ..sdf.mesh_faces import MAX_CHOICES, MAX_FACE_NEIGHBOURS, RULE_MAX, RULE_MIN_EDGE, RULE_SKIP
from .face_bounds import (MAX_FACE_CANDIDATES, cut_edge, face_ball, face_corner, face_plane, faces_fit, has_faces,
                          shape_plane, side_plane)
from .pair_layout import PF_FACE_DEPTH_A, PF_FACE_DEPTH_B, PF_KA, PF_KB, PF_KEFF, PF_VOXEL_B, PI_SDF_A, PI_SDF_B
from .polygon import MAX_POLYGON, canonical_start, clip, emit_polygon, interface_square, polygon_area

#: The scratch's first column of the candidate lists (after the two polygon rows)
FACE_LISTS = 2 * 3 * MAX_POLYGON
#: Pieces the count pass records for the write pass (more: the write pass searches again)
MAX_FACE_PIECES = 384
#: Of each piece the count pass found: i·512 + the mask of its fixed planes that cut it, j, the
#: record of its neighbour planes that cut it (:func:`_piece`)
FACE_PIECES = FACE_LISTS + 2 * MAX_FACE_CANDIDATES
FACE_META = FACE_PIECES + 3 * MAX_FACE_PIECES  # how many pieces, D_A, D_B
FACE_NEIGHBOURS = FACE_META + 3  # the planes of one A triangle's neighbours, in B's frame
FACE_LABELS = FACE_NEIGHBOURS + 4 * MAX_FACE_NEIGHBOURS  # a non-convex mesh's clusters (:func:`_region_shape`)
FACE_SCRATCH = FACE_LABELS + MAX_FACE_NEIGHBOURS
#: Neighbours (nearest first: those across an edge) whose planes a pair of triangles is tested against
#: before it is clipped
BISECTORS = 3
#: A piece or fan triangle smaller than this (× the voxel²) is dropped: where two regions only
#: touch, or a clip plane nearly holds an edge, a rounding decides whether a sliver is cut at all
#: (and differs between the CPU and a GPU); its force is at most this × h² × the pressure (1e-5 N
#: on the icospheres, of 900 N)
SLIVER = 1e-6
#: The starting square's half edge over the grown ball's radius (the piece lies in the ball)
SQUARE_SLACK = 1.001


@device_fn(inline=True)
def _prism_range(nx, ny, nz, c, x0, y0, z0, x1, y1, z1, x2, y2, z2, mx, my, mz, depth):
    """The least and largest of the plane (n, c) over the prism piece of a triangle (corners x0..x2,
    unit normal m) from its face to ``depth`` below it (an affine function: at its six corners)."""
    v0 = nx * x0 + ny * y0 + nz * z0 + c
    v1 = nx * x1 + ny * y1 + nz * z1 + c
    v2 = nx * x2 + ny * y2 + nz * z2 + c
    lo = min(v0, min(v1, v2))
    hi = max(v0, max(v1, v2))
    shift = -depth * (nx * mx + ny * my + nz * mz)  # the corners moved depth along −m
    return min(lo, lo + shift), max(hi, hi + shift)


@device_fn(inline=True)
def _face_corners(pair_f, p, sdf, side, t):
    """Triangle ``t``'s three corners in B's frame."""
    x0, y0, z0 = face_corner(pair_f, p, sdf, side, t, 0)
    x1, y1, z1 = face_corner(pair_f, p, sdf, side, t, 1)
    x2, y2, z2 = face_corner(pair_f, p, sdf, side, t, 2)
    return x0, y0, z0, x1, y1, z1, x2, y2, z2


@device_fn(inline=False)
def _candidates(pair_f, p, sdf, side, n, col, depth, so, other_side, m, other_col, scratch):
    """Keep, in place from ``scratch[p, col]``, the ``n`` listed triangles (shape ``side``) whose
    prism piece to ``depth`` below them (where their piece of the patch lies) can meet the other
    shape: over the piece, no one of the other's ``m`` listed planes (from ``other_col``) stays
    positive (each is a lower bound on its field: SDF ``so``'s); how many are kept."""
    kept = 0
    for q in range(n):
        t = int(scratch[p, col + q])
        x0, y0, z0, x1, y1, z1, x2, y2, z2 = _face_corners(pair_f, p, sdf, side, t)
        mx, my, mz, mc = face_plane(pair_f, p, sdf, side, t)
        keep = True
        for e in range(m):
            nx, ny, nz, c = side_plane(pair_f, p, sdf, so, other_side, int(scratch[p, other_col + e]))
            lo, hi = _prism_range(nx, ny, nz, c, x0, y0, z0, x1, y1, z1, x2, y2, z2, mx, my, mz, depth)
            if lo > 0.0:
                keep = False
                break
        if keep:
            scratch[p, col + kept] = t
            kept += 1
    return kept


@device_fn(inline=True)
def _side(ax, ay, az, bx, by, bz, nx, ny, nz):
    """The side plane of a triangle's prism along its edge a → b (n its unit normal, the triangle
    wound counter-clockwise about n): (e × n, offset), (e × n)·x − offset > 0 outside."""
    ex = bx - ax
    ey = by - ay
    ez = bz - az
    sx = ey * nz - ez * ny
    sy = ez * nx - ex * nz
    sz = ex * ny - ey * nx
    return sx, sy, sz, sx * ax + sy * ay + sz * az


@device_fn(inline=True)
def _beyond_side(ax, ay, az, bx, by, bz, nx, ny, nz, x0, y0, z0, x1, y1, z1, x2, y2, z2, mx, my, mz, depth):
    """Whether the prism piece of a triangle (corners x0..x2, unit normal m, to ``depth`` below
    it) lies wholly outside the side plane along edge a → b of another triangle (normal n)."""
    sx, sy, sz, so = _side(ax, ay, az, bx, by, bz, nx, ny, nz)
    lo, hi = _prism_range(sx, sy, sz, -so, x0, y0, z0, x1, y1, z1, x2, y2, z2, mx, my, mz, depth)
    return lo > 0.0


@device_fn(inline=False)
def _apart(ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2, anx, any_, anz, depth_a,
           bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2, bnx, bny, bnz, depth_b):
    """Whether the prism pieces of triangles a and b (each to its depth below it) are separated by
    a side plane of one's prism: they then share no piece (the prisms hold the pieces)."""
    return (_beyond_side(ax0, ay0, az0, ax1, ay1, az1, anx, any_, anz, bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2,
                         bnx, bny, bnz, depth_b)
            or _beyond_side(ax1, ay1, az1, ax2, ay2, az2, anx, any_, anz, bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2,
                            bnx, bny, bnz, depth_b)
            or _beyond_side(ax2, ay2, az2, ax0, ay0, az0, anx, any_, anz, bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2,
                            bnx, bny, bnz, depth_b)
            or _beyond_side(bx0, by0, bz0, bx1, by1, bz1, bnx, bny, bnz, ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2,
                            anx, any_, anz, depth_a)
            or _beyond_side(bx1, by1, bz1, bx2, by2, bz2, bnx, bny, bnz, ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2,
                            anx, any_, anz, depth_a)
            or _beyond_side(bx2, by2, bz2, bx0, by0, bz0, bnx, bny, bnz, ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2,
                            anx, any_, anz, depth_a))


@device_fn(inline=True)
def _neighbour_range(sdf, s, t):
    """The entries of triangle ``t``'s (a row of ``mesh_tri``, of SDF ``s``) neighbours in ``face_ids``."""
    at = sdf.params_i[s, I_FACE_START] + t - sdf.params_i[s, I_FACES]
    return sdf.face_start[at], sdf.face_start[at + 1]


@device_fn(inline=False)
def _outside_regions(pair_f, p, sdf, sb, j, n_a, anx, any_, anz, ac, bnx, bny, bnz, bc, depth_a, depth_b, ax0, ay0,
                     az0, ax1, ay1, az1, ax2, ay2, az2, bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2, scratch):
    """Whether one of the first ``BISECTORS`` neighbours of j (of i, cached) has its plane above
    j's (i's) all over i's (j's) prism piece: then j's (i's) region misses it, and they share no piece."""
    e, end = _neighbour_range(sdf, sb, j)
    for k in range(min(BISECTORS, end - e)):
        kx, ky, kz, kc = face_plane(pair_f, p, sdf, 1, sdf.face_ids[e + k])
        lo, hi = _prism_range(bnx - kx, bny - ky, bnz - kz, bc - kc, ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2, anx,
                              any_, anz, depth_a)
        if hi < 0.0:
            return True
    for k in range(min(BISECTORS, n_a)):
        base = FACE_NEIGHBOURS + 4 * k
        lo, hi = _prism_range(anx - scratch[p, base], any_ - scratch[p, base + 1], anz - scratch[p, base + 2],
                              ac - scratch[p, base + 3], bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2, bnx, bny, bnz,
                              depth_b)
        if hi < 0.0:
            return True
    return False


@device_fn(inline=False)
def _cache_neighbours(pair_f, p, sdf, s, t, depth, scratch):
    """Triangle ``t``'s (of A, SDF ``s``) listed neighbours within 2·``depth`` of it: their planes in
    B's frame into ``scratch[p, FACE_NEIGHBOURS:]`` (four values each, nearest first), transformed
    once for all the pairs of t; how many. A shape of planes: all its other planes."""
    if not has_faces(sdf, s):
        k = 0
        for e in range(sdf.params_i[s, I_PLANE_COUNT]):
            if e != t:
                kx, ky, kz, kc = shape_plane(pair_f, p, sdf, s, 0, e)
                scratch[p, FACE_NEIGHBOURS + 4 * k] = kx
                scratch[p, FACE_NEIGHBOURS + 4 * k + 1] = ky
                scratch[p, FACE_NEIGHBOURS + 4 * k + 2] = kz
                scratch[p, FACE_NEIGHBOURS + 4 * k + 3] = kc
                k += 1
        return k
    e, end = _neighbour_range(sdf, s, t)
    k = 0
    regions = sdf.params_i[s, I_FACE_CONVEX] == 0
    while e < end and float(sdf.face_gap[e]) <= 2.0 * depth:
        kx = ky = kz = kc = 0.0
        if not (regions and sdf.face_rule[e] == RULE_SKIP):  # (a skipped one's plane is never read)
            kx, ky, kz, kc = face_plane(pair_f, p, sdf, 0, sdf.face_ids[e])
        scratch[p, FACE_NEIGHBOURS + 4 * k] = kx
        scratch[p, FACE_NEIGHBOURS + 4 * k + 1] = ky
        scratch[p, FACE_NEIGHBOURS + 4 * k + 2] = kz
        scratch[p, FACE_NEIGHBOURS + 4 * k + 3] = kc
        k += 1
        e += 1
    return k


#: Neighbour clips a piece records for the write pass (base-256 digits of one float64, 6 < 2^53 / 2^48)
RECORDED_CUTS = 6
#: The code of B's k-th neighbour plane in a record (A's k-th: k)
B_CODE = MAX_FACE_NEIGHBOURS


@device_fn(inline=True)
def _cut(scratch, p, row, n, nx, ny, nz, c, code, cuts, scale):
    """:func:`~.polygon.clip` that adds ``code`` to the record ``cuts`` (its next
    base-256 digit, ``scale``) if the plane cut the polygon (moved it to the other row): (row,
    count, cuts, scale); more than ``RECORDED_CUTS`` cuts: the record becomes −1 (not replayable)."""
    new_row, m = clip(scratch, p, row, n, nx, ny, nz, c)
    if new_row != row and cuts >= 0.0:
        if scale >= 256.0**RECORDED_CUTS:
            cuts = -1.0
        else:
            cuts += (code + 1) * scale
            scale *= 256.0
    return new_row, m, cuts, scale


@device_fn(inline=True)
def _a_neighbour(pair_f, p, sdf, sa, i, k):
    """The plane (B frame) of the k-th of triangle i's neighbours as :func:`_cache_neighbours` lists them."""
    if not has_faces(sdf, sa):
        return shape_plane(pair_f, p, sdf, sa, 0, k + 1 if k >= i else k)
    e, end = _neighbour_range(sdf, sa, i)
    return face_plane(pair_f, p, sdf, 0, sdf.face_ids[e + k])


@device_fn(inline=True)
def _regions(sdf, s):
    """Whether SDF ``s`` is a non-convex mesh with face lists: its neighbours bound a triangle's
    region by their rules (``face_rule``, :func:`hydro.sdf.mesh_faces.region_rules`), not all by the max rule."""
    return has_faces(sdf, s) and sdf.params_i[s, I_FACE_CONVEX] == 0


@device_fn(inline=True)
def _cluster_size(scratch, p, n_a, root):
    """How many of the cached neighbours are in the cluster of least entry ``root``."""
    size = 0
    for k in range(n_a):
        if scratch[p, FACE_LABELS + k] == root:
            size += 1
    return size


@device_fn(inline=False)
def _region_shape(sdf, sa, i, n_a, scratch, p):
    """(the mask of A's triangle i's prism sides that do not bound its region — its reflex edges,
    where the region runs on into the wedge —, how many pieces each of its pairs has: the product
    of its clusters' sizes). The clusters: its ``n_a`` cached max-rule neighbours joined where
    mutually reflex (``face_link``), each labelled in ``scratch[p, FACE_LABELS:]`` with its
    cluster's least entry (−1: another rule, or alone). (0, 1) but on a non-convex mesh."""
    if not _regions(sdf, sa):
        return 0, 1
    e, end = _neighbour_range(sdf, sa, i)
    mask = 0
    for k in range(end - e):
        r = sdf.face_rule[e + k]
        if RULE_MIN_EDGE <= r < RULE_MIN_EDGE + 3:
            mask |= 1 << (r - RULE_MIN_EDGE)
    linked = False
    for k in range(n_a):
        scratch[p, FACE_LABELS + k] = -1.0
        if sdf.face_rule[e + k] == RULE_MAX and sdf.face_link[e + k] != 0:
            scratch[p, FACE_LABELS + k] = k
            linked = True
    if not linked:  # (most triangles: no cluster)
        return mask, 1
    changed = True
    while changed:  # each takes the least label of those it links to, until none changes
        changed = False
        for k in range(n_a):
            if scratch[p, FACE_LABELS + k] < 0.0:
                continue
            links = sdf.face_link[e + k]
            for b in range(n_a):
                if (links >> b) & 1 and 0.0 <= scratch[p, FACE_LABELS + b] < scratch[p, FACE_LABELS + k]:
                    scratch[p, FACE_LABELS + k] = scratch[p, FACE_LABELS + b]
                    changed = True
    choices = 1
    for k in range(n_a):
        if scratch[p, FACE_LABELS + k] == k:
            size = _cluster_size(scratch, p, n_a, k)
            if size >= 2:
                choices *= size
            else:
                scratch[p, FACE_LABELS + k] = -1.0  # alone: the plain max rule
    return mask, min(choices, MAX_CHOICES)


@device_fn(inline=False)
def _chosen(scratch, p, n_a, root, choice):
    """The cached neighbour that ``choice`` takes as the least plane of the cluster of least entry
    ``root``: choice's mixed-radix digit of that cluster (radices the clusters' sizes, in order of
    their least entries), its member of that rank."""
    div = 1
    for r in range(int(root)):
        if scratch[p, FACE_LABELS + r] == r:
            size = _cluster_size(scratch, p, n_a, r)
            if size >= 2:
                div *= size
    digit = (choice // div) % _cluster_size(scratch, p, n_a, root)
    m = 0
    for k in range(n_a):
        if scratch[p, FACE_LABELS + k] == root:
            if m == digit:
                return k
            m += 1
    return -1


@device_fn(inline=True)
def _a_cut(sdf, e, regions, k, n_a, choice, anx, any_, anz, ac, scratch, p, row, n, cuts, scale):
    """Clip the polygon in ``row`` by A's triangle's k-th cached neighbour (its list from entry
    ``e``; ``regions``: a non-convex mesh's, else every rule the max rule) by its rule: max (its
    plane below the triangle's), min (above), skip, or in a cluster (the triangle's plane above the
    least of the cluster's, the one ``choice`` takes; a clip between two neighbours is not
    recorded: the record becomes −1). (row, count, cuts, scale)."""
    rule = sdf.face_rule[e + k] if regions else RULE_MAX
    base = FACE_NEIGHBOURS + 4 * k
    kx = scratch[p, base]
    ky = scratch[p, base + 1]
    kz = scratch[p, base + 2]
    kc = scratch[p, base + 3]
    if rule == RULE_SKIP:
        return row, n, cuts, scale
    if rule != RULE_MAX:  # min
        return _cut(scratch, p, row, n, anx - kx, any_ - ky, anz - kz, ac - kc, k, cuts, scale)
    root = scratch[p, FACE_LABELS + k] if regions else -1.0
    if root < 0.0:  # (labelled only in a cluster of two or more)
        return _cut(scratch, p, row, n, kx - anx, ky - any_, kz - anz, kc - ac, k, cuts, scale)
    least = _chosen(scratch, p, n_a, root, choice)
    if least == k:
        row, n = clip(scratch, p, row, n, kx - anx, ky - any_, kz - anz, kc - ac)
    else:
        lb = FACE_NEIGHBOURS + 4 * least
        row, n = clip(scratch, p, row, n, scratch[p, lb] - kx, scratch[p, lb + 1] - ky, scratch[p, lb + 2] - kz,
                      scratch[p, lb + 3] - kc)
    return row, n, -1.0, scale


@device_fn(inline=True)
def _clip_neighbours(pair_f, p, sdf, sa, sb, i, j, n_a, anx, any_, anz, ac, bnx, bny, bnz, bc, depth_b, scratch, row,
                     n, replay, choice):
    """Clip the polygon in ``row`` to where triangle i's plane (an, ac) is A's largest among the
    ``n_a`` cached planes of its neighbours (:func:`_cache_neighbours`), and j's (bn, bc) B's among
    j's listed neighbours within 2·D_B: the two lists taken in turn, nearest first, so that an empty
    piece stops soonest; B of planes: j's plane against all its others. (row, count, the record of
    the planes that cut, in order: base-256 digits code + 1, code k for A's k-th plane, ``B_CODE`` +
    k for B's; −1: more than ``RECORDED_CUTS``). ``replay`` >= 0: such a record: only those planes,
    in that order (no cache needed), which gives the same polygon to the bit, as a plane that cuts
    nothing leaves it where it is."""
    regions = _regions(sdf, sa)  # A's neighbours' rules (else all the max rule) from entry e_a
    e_a = 0
    if regions:
        e_a, end_a = _neighbour_range(sdf, sa, i)
    if replay >= 0.0:
        codes = replay
        while codes > 0.0 and n > 0:
            digit = codes - 256.0 * math.floor(codes / 256.0)
            codes = math.floor(codes / 256.0)
            code = int(digit) - 1
            if code < B_CODE:
                kx, ky, kz, kc = _a_neighbour(pair_f, p, sdf, sa, i, code)
                if not regions or sdf.face_rule[e_a + code] == RULE_MAX:
                    row, n = clip(scratch, p, row, n, kx - anx, ky - any_, kz - anz, kc - ac)
                else:  # min (a record holds no cluster's clip)
                    row, n = clip(scratch, p, row, n, anx - kx, any_ - ky, anz - kz, ac - kc)
            else:
                k = code - B_CODE
                if has_faces(sdf, sb):
                    e, end = _neighbour_range(sdf, sb, j)
                    kx, ky, kz, kc = face_plane(pair_f, p, sdf, 1, sdf.face_ids[e + k])
                else:
                    kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sb, 1, k)
                row, n = clip(scratch, p, row, n, kx - bnx, ky - bny, kz - bnz, kc - bc)
        return row, n, replay
    cuts = 0.0
    scale = 1.0
    ea = 0
    if not has_faces(sdf, sb):
        for k in range(sdf.params_i[sb, I_PLANE_COUNT]):
            if k != j and n > 0:
                kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sb, 1, k)
                row, n, cuts, scale = _cut(scratch, p, row, n, kx - bnx, ky - bny, kz - bnz, kc - bc, B_CODE + k,
                                           cuts, scale)
        while n > 0 and ea < n_a:
            row, n, cuts, scale = _a_cut(sdf, e_a, regions, ea, n_a, choice, anx, any_, anz, ac, scratch, p, row,
                                         n, cuts, scale)
            ea += 1
        return row, n, cuts
    eb, end_b = _neighbour_range(sdf, sb, j)
    first_b = eb
    while n > 0 and (ea < n_a or eb < end_b):
        if ea < n_a:
            row, n, cuts, scale = _a_cut(sdf, e_a, regions, ea, n_a, choice, anx, any_, anz, ac, scratch, p, row,
                                         n, cuts, scale)
            ea += 1
        if eb < end_b and n > 0:
            if float(sdf.face_gap[eb]) > 2.0 * depth_b:
                eb = end_b
            else:
                kx, ky, kz, kc = face_plane(pair_f, p, sdf, 1, sdf.face_ids[eb])
                row, n, cuts, scale = _cut(scratch, p, row, n, kx - bnx, ky - bny, kz - bnz, kc - bc,
                                           B_CODE + eb - first_b, cuts, scale)
                eb += 1
    return row, n, cuts


#: The mask of the nine planes every piece is clipped against (A's prism sides and depth, B's, the band)
ALL_FIXED = 511


@device_fn(inline=True)
def _fixed_cut(scratch, p, row, n, nx, ny, nz, c, bit, cut):
    """:func:`~.polygon.clip` to one of a piece's nine fixed planes, adding ``bit`` to ``cut``
    (the mask of those that cut) when it moved the polygon: (row, count, cut)."""
    new_row, m = clip(scratch, p, row, n, nx, ny, nz, c)
    if new_row != row:
        cut |= bit
    return new_row, m, cut


@device_fn(inline=True)
def _prism_cuts(x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, c, depth, first, apply, cut, scratch, p, row, n):
    """Clip the polygon in ``row`` to a triangle's prism (corners x0..x2, B frame; its plane
    n·x + c) and to ``depth`` below its plane: the four planes of mask bits ``first`` .. ``first``·8
    that ``apply`` holds, recorded in ``cut`` when they cut; (row, count, cut)."""
    if apply & first:
        sx, sy, sz, so = _side(x0, y0, z0, x1, y1, z1, nx, ny, nz)
        row, n, cut = _fixed_cut(scratch, p, row, n, sx, sy, sz, -so, first, cut)
    if apply & (2 * first):
        sx, sy, sz, so = _side(x1, y1, z1, x2, y2, z2, nx, ny, nz)
        row, n, cut = _fixed_cut(scratch, p, row, n, sx, sy, sz, -so, 2 * first, cut)
    if apply & (4 * first):
        sx, sy, sz, so = _side(x2, y2, z2, x0, y0, z0, nx, ny, nz)
        row, n, cut = _fixed_cut(scratch, p, row, n, sx, sy, sz, -so, 4 * first, cut)
    if apply & (8 * first):
        row, n, cut = _fixed_cut(scratch, p, row, n, -nx, -ny, -nz, -c - depth, 8 * first, cut)
    return row, n, cut


@device_fn(inline=False)
def _piece(pair_f, p, sdf, sa, sb, i, j, n_a, ka, kb, depth_a, depth_b, scratch, apply, replay, choice):
    """The piece of i of A (its ``n_a`` neighbours' planes cached) and j of B — triangles of convex
    meshes with face lists, or plane rows of a shape of planes — in row 0 or 1 of ``scratch[p]``:
    (row, vertex count, the interface's unit normal, the two planes, the mask of its nine fixed
    planes that cut it, the record of its neighbour planes that cut it); count < 3: no piece.
    ``apply``: the mask of the fixed planes to clip against (``ALL_FIXED``; a mask this returned, in
    the write pass); ``replay`` >= 0: a record the count pass made, so that only those neighbours
    are clipped against (none cached; :func:`_clip_neighbours`), −1: all. A plane that cuts nothing
    leaves the polygon as it is, so the write pass's piece is the count pass's to the bit."""
    faces_a = has_faces(sdf, sa)
    faces_b = has_faces(sdf, sb)
    anx, any_, anz, ac = side_plane(pair_f, p, sdf, sa, 0, i)
    bnx, bny, bnz, bc = side_plane(pair_f, p, sdf, sb, 1, j)
    # the interface plane, and a square on it about a triangle's ball centre projected onto it,
    # holding the ball grown by its depth bound (the piece lies in it)
    if faces_a:
        cx, cy, cz, radius = face_ball(pair_f, p, sdf, 0, i)
        radius += depth_a
    else:
        cx, cy, cz, radius = face_ball(pair_f, p, sdf, 1, j)
        radius += depth_b
    ok, ux, uy, uz = interface_square(scratch, p, ka, kb, anx, any_, anz, ac, bnx, bny, bnz, bc, cx, cy, cz,
                                      SQUARE_SLACK * radius)
    if not ok:  # parallel faces of equal pressure: no surface
        return 0, 0, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, 0, -1.0
    row = 0
    n = 4
    cut = 0
    if faces_a:  # within i's prism, no deeper than D_A below it
        ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2 = _face_corners(pair_f, p, sdf, 0, i)
        row, n, cut = _prism_cuts(ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2, anx, any_, anz, ac, depth_a, 1, apply,
                                  cut, scratch, p, row, n)
    if faces_b:
        bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2 = _face_corners(pair_f, p, sdf, 1, j)
        row, n, cut = _prism_cuts(bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2, bnx, bny, bnz, bc, depth_b, 16, apply,
                                  cut, scratch, p, row, n)
    if apply & 256:  # the band a_i + b_j <= 0
        row, n, cut = _fixed_cut(scratch, p, row, n, anx + bnx, any_ + bny, anz + bnz, ac + bc, 256, cut)
    row, n, cuts = _clip_neighbours(pair_f, p, sdf, sa, sb, i, j, n_a, anx, any_, anz, ac, bnx, bny, bnz, bc,
                                    depth_b, scratch, row, n, replay, choice)
    if n >= 3 and polygon_area(scratch, p, row, n) <= SLIVER * pair_f[p, PF_VOXEL_B] * pair_f[p, PF_VOXEL_B]:
        n = 0  # a sliver where regions touch: whether it exists at all is a rounding's call
    if n >= 3:
        row = canonical_start(scratch, p, row, n)
    return row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, cut, cuts


@device_fn(inline=True)
def pack_piece(i, choice, cut):
    """A piece's record key: A's triangle (or plane row) i, its choice of clusters' least planes,
    the mask of its fixed planes that cut it (exact in a float64)."""
    return (i * MAX_CHOICES + choice) * (ALL_FIXED + 1) + cut


@device_fn(inline=True)
def unpack_piece(packed):
    """(i, choice, cut) of a :func:`pack_piece` key."""
    rest = packed // (ALL_FIXED + 1)
    return rest // MAX_CHOICES, rest % MAX_CHOICES, packed % (ALL_FIXED + 1)


@device_fn(inline=False)
def _plane_misses(pair_f, p, sdf, sb, j, cx, cy, cz, radius):
    """Whether plane j of B (a shape of planes) is nowhere B's largest in the ball (c, radius): another
    plane lies above it all over the ball (B's field is the largest of its planes)."""
    jx, jy, jz, jc = shape_plane(pair_f, p, sdf, sb, 1, j)
    for k in range(sdf.params_i[sb, I_PLANE_COUNT]):
        if k != j:
            kx, ky, kz, kc = shape_plane(pair_f, p, sdf, sb, 1, k)
            dx = kx - jx
            dy = ky - jy
            dz = kz - jz
            if dx * cx + dy * cy + dz * cz + kc - jc > math.sqrt(dx * dx + dy * dy + dz * dz) * radius:
                return True
    return False


@device_fn(inline=False)
def face_contacts(p, write, pairs, sdf, scratch, cells, o, contact_f, contact_i, triangle_f, capacity):
    """The face route's contacts of pair ``p`` (see the module docstring): counted (``write``
    False) or written from row ``o`` below ``capacity``; how many. The count pass leaves in the
    scratch the triangle pairs that made a piece (up to ``MAX_FACE_PIECES``), the neighbour planes
    that cut each, and the depth bounds, so that the write pass rebuilds just those."""
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
    keff = pair_f[p, PF_KEFF]
    h = pair_f[p, PF_VOXEL_B]
    edge = cut_edge(sdf, sa, sb, cells)
    n_out = 0
    if write and scratch[p, FACE_META] <= MAX_FACE_PIECES:  # the count pass's pieces
        depth_a = scratch[p, FACE_META + 1]
        depth_b = scratch[p, FACE_META + 2]
        cached = -1
        n_a = 0
        for q in range(int(scratch[p, FACE_META])):
            i, choice, fixed = unpack_piece(int(scratch[p, FACE_PIECES + 3 * q]))
            j = int(scratch[p, FACE_PIECES + 3 * q + 1])
            cuts = scratch[p, FACE_PIECES + 3 * q + 2]
            if cuts < 0.0 and i != cached:  # no record: i's neighbours transformed once (the pieces come by i)
                n_a = _cache_neighbours(pair_f, p, sdf, sa, i, depth_a, scratch)
                _region_shape(sdf, sa, i, n_a, scratch, p)  # (its clusters' labels)
                cached = i
            row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, cut, cuts = _piece(
                pair_f, p, sdf, sa, sb, i, j, n_a, ka, kb, depth_a, depth_b, scratch, fixed, cuts, choice)
            emitted = emit_polygon(scratch, p, row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, kb, keff,
                                   0.0, h, edge, SLIVER, write, o, capacity, pairs, contact_f, contact_i, triangle_f)
            o += emitted
            n_out += emitted
        return n_out
    ok, na, nb, depth_a, depth_b = faces_fit(pair_f, p, sdf, sa, sb, pair_f[p, PF_FACE_DEPTH_A],
                                             pair_f[p, PF_FACE_DEPTH_B], scratch, FACE_LISTS, MAX_FACE_CANDIDATES)
    if not write:
        scratch[p, FACE_META] = 0.0
        scratch[p, FACE_META + 1] = depth_a
        scratch[p, FACE_META + 2] = depth_b
    if not ok or na == 0 or nb == 0:  # (pair setup sent only pairs that fit)
        return 0
    col_a = FACE_LISTS
    col_b = FACE_LISTS + MAX_FACE_CANDIDATES
    faces_a = has_faces(sdf, sa)
    faces_b = has_faces(sdf, sb)
    if faces_a and not _regions(sdf, sa):  # (a non-convex mesh's pieces leave the prism at reflex edges)
        na = _candidates(pair_f, p, sdf, 0, na, col_a, depth_a, sb, 1, nb, col_b, scratch)
    if faces_b:
        nb = _candidates(pair_f, p, sdf, 1, nb, col_b, depth_b, sa, 0, na, col_a, scratch)
    both = faces_a and faces_b  # two triangles: quick tests before a pair is clipped
    pieces = 0
    for qa in range(na):
        i = int(scratch[p, col_a + qa])
        n_a = _cache_neighbours(pair_f, p, sdf, sa, i, depth_a, scratch)
        mask, choices = _region_shape(sdf, sa, i, n_a, scratch, p)
        cix, ciy, ciz, ri = 0.0, 0.0, 0.0, 0.0
        anx, any_, anz, ac = 0.0, 0.0, 0.0, 0.0
        ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        if both:
            cix, ciy, ciz, ri = face_ball(pair_f, p, sdf, 0, i)
            anx, any_, anz, ac = face_plane(pair_f, p, sdf, 0, i)
            ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2 = _face_corners(pair_f, p, sdf, 0, i)
        if not faces_b:  # B of planes: its planes' regions against i's ball grown by its depth
            cix, ciy, ciz, ri = face_ball(pair_f, p, sdf, 0, i)
        for qb in range(nb):
            j = int(scratch[p, col_b + qb])
            if not faces_b and _plane_misses(pair_f, p, sdf, sb, j, cix, ciy, ciz, ri + depth_a):
                continue
            if both:
                cjx, cjy, cjz, rj = face_ball(pair_f, p, sdf, 1, j)
                dx = cix - cjx
                dy = ciy - cjy
                dz = ciz - cjz
                grown = ri + depth_a + rj + depth_b
                if dx * dx + dy * dy + dz * dz > grown * grown:
                    continue
                bnx, bny, bnz, bc = face_plane(pair_f, p, sdf, 1, j)
                bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2 = _face_corners(pair_f, p, sdf, 1, j)
                if _apart(ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2, anx, any_, anz, depth_a,
                          bx0, by0, bz0, bx1, by1, bz1, bx2, by2, bz2, bnx, bny, bnz, depth_b):
                    continue
                if _outside_regions(pair_f, p, sdf, sb, j, n_a, anx, any_, anz, ac, bnx, bny, bnz, bc, depth_a,
                                    depth_b, ax0, ay0, az0, ax1, ay1, az1, ax2, ay2, az2, bx0, by0, bz0, bx1, by1,
                                    bz1, bx2, by2, bz2, scratch):
                    continue
            for choice in range(choices):
                row, n, ux, uy, uz, pnx, pny, pnz, pc, qnx, qny, qnz, qc, cut, cuts = _piece(
                    pair_f, p, sdf, sa, sb, i, j, n_a, ka, kb, depth_a, depth_b, scratch, ALL_FIXED - mask, -1.0,
                    choice)
                if n < 3:
                    continue
                if not write:
                    if pieces < MAX_FACE_PIECES:
                        scratch[p, FACE_PIECES + 3 * pieces] = pack_piece(i, choice, cut)
                        scratch[p, FACE_PIECES + 3 * pieces + 1] = j
                        scratch[p, FACE_PIECES + 3 * pieces + 2] = cuts
                    pieces += 1
                emitted = emit_polygon(scratch, p, row, n, ux, uy, uz, pnx, pny, pnz, pc, qnx, qny, qnz, qc, kb, keff,
                                       0.0, h, edge, SLIVER, write, o, capacity, pairs, contact_f, contact_i,
                                       triangle_f)
                o += emitted
                n_out += emitted
    if not write:
        scratch[p, FACE_META] = pieces
    return n_out
