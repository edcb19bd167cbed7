"""Stage 4b, face route — two convex meshes: the patch as exact polygons, one per pair of triangles.

Inside a closed convex polyhedron φ is the largest of its triangles' plane distances, as inside a
convex mesh of few planes (:mod:`.polytope`), but an icosphere has 1,280 triangles: clipping each
pair against every plane, as the polytope route does, costs planes³. Here each piece is clipped only
against what can bound it, and only pairs near the overlap are tried:

- **Depth.** For x in B, A's field is at least any plane of A: −φA(x) ≤ h_B(−n_k) − c_k for every
  triangle k of A (n_k·x + c_k its plane, h_B B's support function, bounded by B's box and ball), so
  D_A = the least of these over the triangles near B bounds how deep the overlap reaches into A
  (:func:`depth_bound`); likewise D_B.
- **Prism.** A point at depth ≤ D_A below triangle i where i's plane is A's field projects into
  triangle i (the nearest point of a convex polyhedron from inside is on the nearest face plane,
  within that face): the piece lies in i's prism (its three side planes), within D_A below it.
- **Neighbours.** For such a point q, A's nearest triangle m lies within D_A of q, so within 2·D_A
  of triangle i; and if q were outside A, the segment from q's projection p ∈ triangle i to q
  would leave A through a triangle within D_A of i, whose plane is then above i's at q though not at
  p — yet the clip against it holds at both, and the half space is convex. So clipping against the
  triangles within 2·D_A of i (:mod:`hydro.sdf.mesh_faces` lists those within 2·reach, built once;
  the route needs D_A ≤ reach) leaves exactly the region where i is A's field, inside A.
- **Candidates.** Triangle i can hold a piece only if its prism piece (to D_A below it) meets B:
  then no plane of B (a lower bound on B's field) is positive all over it (:func:`_candidates`,
  against B's planes near A). Pairs (i, j) are tried when their grown balls meet and their prism
  pieces overlap along both normals.

The piece of (i, j) is the plane kA·a_i = kB·b_j clipped to both prisms, the band a_i + b_j <= 0,
the depths and both triangles' neighbours; its fan triangles go through
:func:`~.polytope.emit_polygon`, as the polytope route's polygons (both fields are linear on them:
area, force, centre of pressure and depth are exact to rounding). Pair setup sends a pair here
(:data:`~hydro.contact.pair_setup.ROUTE_FACES`) when both shapes are convex meshes with face lists
(:mod:`hydro.sdf.mesh_faces`), exact meshes and polygons are on, neither has a margin or a gap,
both depth bounds are within their lists' reach and at most ``MAX_FACE_CANDIDATES`` triangles of
each lie near the other (:func:`faces_fit`); every other pair takes the grid.
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..sdf.layout import I_FACE_START, I_FACES
from .face_bounds import MAX_FACE_CANDIDATES, bounds_row, face_ball, face_corner, face_plane, faces_fit
from .pair_layout import PF_KA, PF_KB, PF_KEFF, PF_VOXEL_B, PI_SDF_A, PI_SDF_B
from .polygon import MAX_POLYGON, clip_polygon, emit_polygon
#: The scratch's first column of the candidate lists (after the two polygon rows)
FACE_LISTS = 2 * 3 * MAX_POLYGON
#: Pieces the count pass records for the write pass (more: the write pass searches again)
MAX_FACE_PIECES = 256
FACE_PIECES = FACE_LISTS + 2 * MAX_FACE_CANDIDATES  # (i, j) of each piece the count pass found
FACE_META = FACE_PIECES + 2 * MAX_FACE_PIECES  # how many pieces, D_A, D_B
FACE_SCRATCH = FACE_META + 3
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
def _candidates(pair_f, p, sdf, side, n, col, depth, other_side, m, other_col, scratch):
    """Keep, in place from ``scratch[p, col]``, the ``n`` listed triangles (shape ``side``) whose
    prism piece to ``depth`` below them (where their piece of the patch lies) can meet the other
    shape: over the piece, no one of the other's ``m`` listed planes (from ``other_col``) stays
    positive (each is a lower bound on its field); how many are kept."""
    kept = 0
    for q in range(n):
        t = int(scratch[p, col + q])
        x0, y0, z0, x1, y1, z1, x2, y2, z2 = _face_corners(pair_f, p, sdf, side, t)
        mx, my, mz, mc = face_plane(pair_f, p, sdf, side, t)
        keep = True
        for e in range(m):
            nx, ny, nz, c = face_plane(pair_f, p, sdf, other_side, int(scratch[p, other_col + e]))
            lo, hi = _prism_range(nx, ny, nz, c, x0, y0, z0, x1, y1, z1, x2, y2, z2, mx, my, mz, depth)
            if lo > 0.0:
                keep = False
                break
        if keep:
            scratch[p, col + kept] = t
            kept += 1
    return kept


@device_fn(inline=True)
def _clip_prism(pair_f, p, sdf, side, t, nx, ny, nz, scratch, row, n):
    """Clip the polygon in ``row`` to triangle ``t``'s prism (its plane's normal n, B frame): the
    three side planes (e × n)·(x − a) <= 0 of its edges a → b; (row, count)."""
    for k in range(3):
        ax, ay, az = face_corner(pair_f, p, sdf, side, t, k)
        bx, by, bz = face_corner(pair_f, p, sdf, side, t, (k + 1) % 3)
        ex = bx - ax
        ey = by - ay
        ez = bz - az
        sx = ey * nz - ez * ny
        sy = ez * nx - ex * nz
        sz = ex * ny - ey * nx
        if n > 0:
            n = clip_polygon(scratch, p, row, n, 1 - row, sx, sy, sz, -(sx * ax + sy * ay + sz * az))
            row = 1 - row
    return row, n


@device_fn(inline=True)
def _clip_neighbours(pair_f, p, sdf, s, side, t, nx, ny, nz, c, scratch, row, n):
    """Clip the polygon in ``row`` to where triangle ``t``'s plane (n, c) is not below any of its
    listed neighbours' planes; (row, count)."""
    local = t - sdf.params_i[s, I_FACES]
    at = sdf.params_i[s, I_FACE_START] + local
    for e in range(sdf.face_start[at], sdf.face_start[at + 1]):
        if n == 0:
            break
        kx, ky, kz, kc = face_plane(pair_f, p, sdf, side, sdf.face_ids[e])
        n = clip_polygon(scratch, p, row, n, 1 - row, kx - nx, ky - ny, kz - nz, kc - c)
        row = 1 - row
    return row, n


@device_fn(inline=False)
def _piece(pair_f, p, sdf, sa, sb, i, j, ka, kb, depth_a, depth_b, scratch):
    """The piece of triangles (i of A, j of B) in row 0 or 1 of ``scratch[p]``: (row, vertex count,
    the interface's unit normal, the two planes); count < 3: no piece."""
    anx, any_, anz, ac = face_plane(pair_f, p, sdf, 0, i)
    bnx, bny, bnz, bc = face_plane(pair_f, p, sdf, 1, j)
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
    # a square on the plane about i's ball centre projected onto it, holding the ball grown by D_A
    cix, ciy, ciz, ri = face_ball(pair_f, p, sdf, 0, i)
    dist = (nx * cix + ny * ciy + nz * ciz + c) * inv
    ox = cix - dist * ux
    oy = ciy - dist * uy
    oz = ciz - dist * uz
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
    half = SQUARE_SLACK * (ri + depth_a)
    for v in range(4):
        su = half if (v == 1 or v == 2) else -half
        sv = half if v >= 2 else -half
        scratch[p, 3 * v] = ox + su * ex + sv * fx
        scratch[p, 3 * v + 1] = oy + su * ey + sv * fy
        scratch[p, 3 * v + 2] = oz + su * ez + sv * fz
    row = 0
    n = 4
    row, n = _clip_prism(pair_f, p, sdf, 0, i, anx, any_, anz, scratch, row, n)
    row, n = _clip_prism(pair_f, p, sdf, 1, j, bnx, bny, bnz, scratch, row, n)
    if n > 0:  # the band a_i + b_j <= 0 (no gap on this route)
        n = clip_polygon(scratch, p, row, n, 1 - row, anx + bnx, any_ + bny, anz + bnz, ac + bc)
        row = 1 - row
    if n > 0:  # no deeper than D_A below i, D_B below j
        n = clip_polygon(scratch, p, row, n, 1 - row, -anx, -any_, -anz, -ac - depth_a)
        row = 1 - row
    if n > 0:
        n = clip_polygon(scratch, p, row, n, 1 - row, -bnx, -bny, -bnz, -bc - depth_b)
        row = 1 - row
    row, n = _clip_neighbours(pair_f, p, sdf, sa, 0, i, anx, any_, anz, ac, scratch, row, n)
    row, n = _clip_neighbours(pair_f, p, sdf, sb, 1, j, bnx, bny, bnz, bc, scratch, row, n)
    return row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc


@device_fn(inline=False)
def face_contacts(p, write, pairs, sdf, scratch, cells, o, contact_f, contact_i, triangle_f, capacity):
    """The face route's contacts of pair ``p`` (see the module docstring): counted (``write``
    False) or written from row ``o`` below ``capacity``; how many. The count pass leaves in the
    scratch the triangle pairs that made a piece (up to ``MAX_FACE_PIECES``) and the depth bounds,
    so that the write pass rebuilds just those."""
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
    keff = pair_f[p, PF_KEFF]
    h = pair_f[p, PF_VOXEL_B]
    # the cut: the smaller shape's shortest box edge over ``cells``, as the polytope route's
    row_a = bounds_row(sdf, sa) + 1
    row_b = bounds_row(sdf, sb) + 1
    edge = 2.0 * min(min(sdf.planes[row_a, 0], min(sdf.planes[row_a, 1], sdf.planes[row_a, 2])),
                     min(sdf.planes[row_b, 0], min(sdf.planes[row_b, 1], sdf.planes[row_b, 2]))) / cells
    n_out = 0
    if write and scratch[p, FACE_META] <= MAX_FACE_PIECES:  # the count pass's pieces
        depth_a = scratch[p, FACE_META + 1]
        depth_b = scratch[p, FACE_META + 2]
        for q in range(int(scratch[p, FACE_META])):
            i = int(scratch[p, FACE_PIECES + 2 * q])
            j = int(scratch[p, FACE_PIECES + 2 * q + 1])
            row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc = _piece(
                pair_f, p, sdf, sa, sb, i, j, ka, kb, depth_a, depth_b, scratch)
            emitted = emit_polygon(scratch, p, row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, kb, keff,
                                   0.0, h, edge, write, o, capacity, pairs, contact_f, contact_i, triangle_f)
            o += emitted
            n_out += emitted
        return n_out
    ok, na, nb, depth_a, depth_b = faces_fit(pair_f, p, sdf, sa, sb, scratch, FACE_LISTS, MAX_FACE_CANDIDATES)
    if not write:
        scratch[p, FACE_META] = 0.0
        scratch[p, FACE_META + 1] = depth_a
        scratch[p, FACE_META + 2] = depth_b
    if not ok or na == 0 or nb == 0:  # (pair setup sent only pairs that fit)
        return 0
    col_a = FACE_LISTS
    col_b = FACE_LISTS + MAX_FACE_CANDIDATES
    na = _candidates(pair_f, p, sdf, 0, na, col_a, depth_a, 1, nb, col_b, scratch)
    nb = _candidates(pair_f, p, sdf, 1, nb, col_b, depth_b, 0, na, col_a, scratch)
    pieces = 0
    for qa in range(na):
        i = int(scratch[p, col_a + qa])
        cix, ciy, ciz, ri = face_ball(pair_f, p, sdf, 0, i)
        for qb in range(nb):
            j = int(scratch[p, col_b + qb])
            cjx, cjy, cjz, rj = face_ball(pair_f, p, sdf, 1, j)
            dx = cix - cjx
            dy = ciy - cjy
            dz = ciz - cjz
            grown = ri + depth_a + rj + depth_b
            if dx * dx + dy * dy + dz * dz > grown * grown:
                continue
            row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc = _piece(
                pair_f, p, sdf, sa, sb, i, j, ka, kb, depth_a, depth_b, scratch)
            if n < 3:
                continue
            if not write:
                if pieces < MAX_FACE_PIECES:
                    scratch[p, FACE_PIECES + 2 * pieces] = i
                    scratch[p, FACE_PIECES + 2 * pieces + 1] = j
                pieces += 1
            emitted = emit_polygon(scratch, p, row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, kb, keff,
                                   0.0, h, edge, write, o, capacity, pairs, contact_f, contact_i, triangle_f)
            o += emitted
            n_out += emitted
    if not write:
        scratch[p, FACE_META] = pieces
    return n_out
