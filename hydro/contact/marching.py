"""Stage 4 — marching cubes of the interface field on the blocks kept by refinement.

Refinement ends with blocks of 2×2×2 voxels. For each block the count pass samples eA, eB and
the interface field f at its 27 grid points once (B's grid samples directly, A through the
pair transform; neighbouring voxels share them), stores them as float32 so both passes see
identical values, and counts the triangles of its 8 voxels that yield a contact
(non-degenerate, not wholly beyond the gap band). The scatter pass rebuilds the same triangles and writes their contacts at the scanned
offsets, in block → voxel → triangle order. Edge crossings are interpolated with
t = −f0/(f1 − f0), clamped to [c, 1 − c] with c = ``mc_edge_clamp_min`` (t = 0.5 when f1 − f0
vanishes). Triangles are wound so their normals point toward increasing f: from A toward B.

Testing single voxels first (a last refinement level) would cost 2 samples per voxel and keep
several layers of voxels around a flat patch; sampling the block's 27 points once is cheaper
and exact.
"""

from __future__ import annotations

import math

import numpy as np
from numba import int64

from ..backend import device_fn, kernel
from ..sdf.layout import BRICK, F_ORIGIN, I_PRIMITIVE
from ..sdf.sample import (exact_field_phi, field_phi_hint, mesh_cell_affine, sdf_brick_slopes, sdf_grid_brick,
                          sdf_grid_brick_value, sdf_grid_phi, sdf_phi_reuse, sdf_slopes)
from .contacts import (SUB_CUTS, SUB_POINTS, SUB_VALUES, emit_triangle, sub_index, subdivided_triangle_contact,
                       triangle_is_contact, unit_normal, write_triangle_contact)
from .interface import interface_value
from .kinks import kink_contact
from .mc_tables import CORNER_OFFSETS, EDGE_CORNERS, TRI_COUNT, TRI_EDGES
from .refine import SQRT3
from .pair_setup import (PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_KNA, PF_KNB, PF_MARGIN_A, PF_MARGIN_B, PF_VOXEL_B,
                         PI_EXACT, PI_SDF_A, PI_SDF_B, b_to_a)

BLOCK_SAMPLES = 3  # grid points per edge of a 2×2×2-voxel block
BLOCK_POINTS = BLOCK_SAMPLES**3  # 27, numbered x fastest
BLOCK_EDGES = 3 * (BLOCK_SAMPLES - 1) * BLOCK_SAMPLES**2  # 54 grid edges between the points
# A block's row of the corners buffer: eA, eB, f at each point (three runs of BLOCK_POINTS), then
# per grid edge its crossing once found (t from the edge's lower point, eA, eB; t NaN until then),
# so the voxels and both passes that share an edge settle it once and see the same vertex
EDGE_CACHE = 3 * BLOCK_POINTS
#: then the block's ``exact`` bits (:func:`_with_curved_bits`), for the scatter pass
BLOCK_EXACT = EDGE_CACHE + 3 * BLOCK_EDGES
#: then (x, y, z from vertex 0, eA, eB) at the subdivision points of the triangle being subdivided
#: (:func:`_subdivided`)
BLOCK_SUB = BLOCK_EXACT + 1
BLOCK_ROW = BLOCK_SUB + SUB_VALUES * SUB_POINTS
#: A curved triangle (partly) inside the overlap is subdivided when the separation at its centre
#: (settled on the patch) differs from the mean of its vertices' by more than this many voxels: the
#: pressure is far from linear over it (a kink of an exact field, where its nearest face changes,
#: or the rim crosses it), into SUB_CUTS² sub-triangles (fewer cuts lose more than they gain: their
#: linear rule falls short on a smoothly curved patch where the whole triangle's quadratic rule does not)
SUB_DEVIATION = 0.02
#: A point whose Newton step onto the patch is under this many voxels is taken to be on it (no second
#: evaluation: the separation moves by at most twice the step)
ON_PATCH = 1e-5
#: A bound on the float32 rounding of a crossing's eA + eB, relative to the largest |eA| + |eB| of
#: the block's points: 2⁻²⁴ of |eA| and of |eB|, each at most that largest sum (2⁻²³), doubled
#: for the float64 arithmetic around them
ROUNDING = 2.0**-22
#: A crossing whose separation eA + eB is within this many voxels of 0 lies on the patch's rim
#: (where both surfaces meet): its separation is set to exactly 0 (eB = −eA), so whether a
#: triangle there is inside, partly inside or speculative does not hinge on the sign of a
#: rounding error (±1e-17 m; the float32 rounding of fields of about a voxel is 2⁻²⁴ of one)
RIM_ROUNDING = 1e-7
#: Voxels by which a crossing's separation eA + eB can fall below the smaller of its edge's points'
#: (edge h): each field changes by at most the distance, at most h/2 from the nearer point, so 1
#: for exact distances; 0.25 more covers stored fields (an interpolant of distance samples, its
#: coarse bricks within 0.05 voxel of it, quantized)
LIPSCHITZ_REACH = 1.25
#: Blocks looked back over for a block's lower neighbours (:func:`_lower_neighbours`): the blocks of
#: one brick, which refinement writes together ((BRICK / 2)³ at most)
SHARE_WINDOW = 64


@device_fn(inline=True)
def _point_index(q, c):
    """Index (0..26) of corner c of voxel q of a block (both numbered x fastest)."""
    x = (q & 1) + (c & 1)
    y = ((q >> 1) & 1) + ((c >> 1) & 1)
    z = ((q >> 2) & 1) + ((c >> 2) & 1)
    return (z * BLOCK_SAMPLES + y) * BLOCK_SAMPLES + x


@device_fn(inline=True)
def _field_values(p, pairs, sdf, x, y, z, exact, ma, mb, hint_a, bound_a, hint_b, bound_b):
    """eA, eB at B-local (x, y, z) as stage 4 evaluates them (exactly for the fields flagged in
    ``exact``, the pair's ``PI_EXACT`` bits; else the stored grids), with each mesh field's
    nearest-triangle hint and bound (:func:`~hydro.sdf.sample.mesh_field_phi_hint`; −1: none):
    (eA, eB, hint_a, bound_a, hint_b, bound_b) for the next evaluation near this point."""
    ax, ay, az = b_to_a(pairs, p, x, y, z)
    ea, hint_a, bound_a = field_phi_hint(pairs.i[p, PI_SDF_A], ax, ay, az, sdf, exact & 1, hint_a, bound_a)
    eb, hint_b, bound_b = field_phi_hint(pairs.i[p, PI_SDF_B], x, y, z, sdf, exact & 2, hint_b, bound_b)
    return ea - ma, eb - mb, hint_a, bound_a, hint_b, bound_b


#: ``exact`` bits of a block beyond the pair's (``PI_EXACT``: 1 A, 2 B evaluated exactly): 4 (A) and
#: 8 (B) where that exactly evaluated field may be curved over the block
CURVED_A, CURVED_B = 4, 8


@device_fn(inline=True)
def _with_curved_bits(p, pairs, sdf, exact, x, y, z, h):
    """The pair's ``exact`` bits, with ``CURVED_A`` / ``CURVED_B`` for each exactly evaluated field
    that may be curved over the block centred at B-local (x, y, z) (voxel h): over a brick where a
    primitive's field is affine (a box's face region; ``B_CURVED`` 0), or a mesh's is one face
    plane (the brick, or for B the block's own cell: :func:`~hydro.sdf.sample.mesh_cell_affine`),
    and a stored field is trilinear, the interface is linear along every grid edge, so the linear
    crossing is exact and needs no settling step."""
    gap_a = 0.0
    if exact & 1:
        ax, ay, az = b_to_a(pairs, p, x, y, z)
        gx, gy, gz, gap_a, curved = sdf_slopes(pairs.i[p, PI_SDF_A], ax, ay, az, SQRT3 * h, sdf)  # A's bricks it meets
        if curved > 0.0:
            exact |= CURVED_A
    if exact & 2:
        sb = pairs.i[p, PI_SDF_B]
        gx, gy, gz, gap, curved = sdf_brick_slopes(sb, x, y, z, sdf)  # the block lies in one brick
        # ... and is one cell of a mesh's exact field, which may be proven affine on its own
        if curved > 0.0 and not (sdf.params_i[sb, I_PRIMITIVE] < 0 and mesh_cell_affine(sb, x, y, z, sdf)):
            exact |= CURVED_B
    return exact, gap_a


@device_fn(inline=True)
def _settled_root(f0, t1, f1t, f1):
    """A root in [0, 1] of the interface along an edge with f(0) = f0, f(t1) = f1t, f(1) = f1
    (f0 and f1 of opposite signs, 0 < t1 < 1): the root of the parabola through the three points
    inside the sub-interval that brackets it, or that sub-interval's secant root."""
    if (f1t < 0.0) == (f0 < 0.0):
        lo, flo, hi, fhi = t1, f1t, 1.0, f1
    else:
        lo, flo, hi, fhi = 0.0, f0, t1, f1t
    if fhi == flo:  # flat between the bracket's ends (only where f vanishes at t1 to round-off)
        return t1
    secant = lo - flo * (hi - lo) / (fhi - flo)
    # f(t) = f0 + d01·t + c2·t·(t − t1)
    d01 = (f1t - f0) / t1
    c2 = (f1 - f1t) / (1.0 - t1) - d01
    qa = c2
    qb = d01 - c2 * t1
    if abs(qa) <= 1e-12 * abs(qb):
        return secant
    disc = qb * qb - 4.0 * qa * f0
    if disc < 0.0:
        return secant
    qq = -0.5 * (qb + math.copysign(math.sqrt(disc), qb))
    if qq != 0.0:
        r = f0 / qq
        if lo <= r <= hi:
            return r
    r = qq / qa
    if lo <= r <= hi:
        return r
    return secant


@device_fn(inline=True)
def _block_edge(i0, i1):
    """The block's grid edge between its points i0 < i1 (neighbours along one axis): 0 .. 53."""
    gx = i0 % BLOCK_SAMPLES
    gy = (i0 // BLOCK_SAMPLES) % BLOCK_SAMPLES
    gz = i0 // (BLOCK_SAMPLES * BLOCK_SAMPLES)
    step = i1 - i0
    if step == 1:
        return (gz * BLOCK_SAMPLES + gy) * (BLOCK_SAMPLES - 1) + gx
    if step == BLOCK_SAMPLES:
        return BLOCK_EDGES // 3 + (gz * (BLOCK_SAMPLES - 1) + gy) * BLOCK_SAMPLES + gx
    return 2 * (BLOCK_EDGES // 3) + (gz * BLOCK_SAMPLES + gy) * BLOCK_SAMPLES + gx


@device_fn(inline=True)
def _edge_floor(b, corners, q, e):
    """The smaller separation eA + eB (as stored) of the two points of edge e of voxel q of block b."""
    i0 = _point_index(q, EDGE_CORNERS[e, 0])
    i1 = _point_index(q, EDGE_CORNERS[e, 1])
    return min(float(corners[b, i0]) + float(corners[b, BLOCK_POINTS + i0]),
               float(corners[b, i1]) + float(corners[b, BLOCK_POINTS + i1]))


@device_fn(inline=True)
def _linear_crossing(b, corners, i0, i1):
    """The linear crossing of the interface on the block edge from point i0 to i1 (lower to upper),
    from the points' stored f: (t from i0, eA and eB interpolated there, f0, f1)."""
    ea0 = float(corners[b, i0])
    eb0 = float(corners[b, BLOCK_POINTS + i0])
    ea1 = float(corners[b, i1])
    eb1 = float(corners[b, BLOCK_POINTS + i1])
    f0 = float(corners[b, 2 * BLOCK_POINTS + i0])
    f1 = float(corners[b, 2 * BLOCK_POINTS + i1])
    d = f1 - f0
    if d == 0.0 or abs(d) <= 1e-12 * (abs(f0) + abs(f1)):
        t = 0.5
    else:
        t = -f0 / d
    return t, ea0 + t * (ea1 - ea0), eb0 + t * (eb1 - eb0), f0, f1


@device_fn(inline=True)
def _cached_crossing(b, corners, slot, t, ea, eb):
    """Store a crossing in the edge cache at ``slot`` as float32 and return it as stored, so a
    vertex read back from the cache is the vertex first found."""
    t = float(np.float32(t))
    ea = float(np.float32(ea))
    eb = float(np.float32(eb))
    corners[b, slot] = t
    corners[b, slot + 1] = ea
    corners[b, slot + 2] = eb
    return t, ea, eb


@device_fn(inline=False)
def _settled_crossing(b, corners, i0, i1, slot, gx, gy, gz, dx, dy, dz, p, pairs, sdf, exact, h, ma, mb, ka, kb, kna,
                      knb, interface):
    """The crossing on the block edge from point i0 to i1, B's grid point (gx, gy, gz) to the next
    along (dx, dy, dz), where an exactly evaluated field may be curved (``CURVED_A``/``CURVED_B``
    bits of ``exact``): the linear crossing settled on the true interface by one parabolic step
    (two evaluations), with eA, eB the fields' values there; cached and returned as (t, eA, eB).
    The points evaluated are placed from the grid's origin (not the block's), so every block
    that shares the edge and its points' values settles it to the same crossing, to the bit."""
    sb = pairs.i[p, PI_SDF_B]
    ox = sdf.params_f[sb, F_ORIGIN]
    oy = sdf.params_f[sb, F_ORIGIN + 1]
    oz = sdf.params_f[sb, F_ORIGIN + 2]
    x0 = float(gx)
    y0 = float(gy)
    z0 = float(gz)
    t, ea, eb, f0, f1 = _linear_crossing(b, corners, i0, i1)
    if 0.0 < t < 1.0 and f1 != f0:
        # the fields at the linear root, then (unless it is on the interface) at the settled one:
        # one call site, so the samplers are compiled into this function once
        # the second evaluation lies within |Δt|·h of the first: its nearest triangles are
        # likely the first's (a hint, certified by the bound less the move)
        hint_a = hint_b = -1
        bound_a = bound_b = 0.0
        t_prev = t
        for step in range(2):
            move = abs(t - t_prev) * h * math.sqrt(dx * dx + dy * dy + dz * dz)
            ea, eb, hint_a, bound_a, hint_b, bound_b = _field_values(
                p, pairs, sdf, ox + (x0 + t * dx) * h, oy + (y0 + t * dy) * h, oz + (z0 + t * dz) * h, exact, ma,
                mb, hint_a, bound_a - move, hint_b, bound_b - move)
            if step == 1:
                break
            t_prev = t
            ft = interface_value(ea, eb, ka, kb, kna, knb, interface)
            if ft == 0.0:
                break
            t = _settled_root(f0, t, ft, f1)
    return _cached_crossing(b, corners, slot, t, ea, eb)


@device_fn(inline=True)
def _shared_crossing(b, corners, i0, i1, slot, near_x, near_y, near_z):
    """The settled crossing on the block edge from point i0 to i1, copied into the block's edge
    cache at ``slot`` from a lower neighbour's (``near_x/y/z``: the blocks 2 voxels below along x,
    y, z, −1: none; :func:`_lower_neighbours`) when the edge lies on their common face, that block
    settled it and stored the same eA, eB and f at both points (so its crossing is the one this
    block would settle: :func:`_settled_crossing`); its t, NaN when none."""
    for axis in range(3):
        if axis == 0:
            n = near_x
            step = 1
        elif axis == 1:
            n = near_y
            step = BLOCK_SAMPLES
        else:
            n = near_z
            step = BLOCK_SAMPLES * BLOCK_SAMPLES
        if n < 0 or (i0 // step) % BLOCK_SAMPLES != 0 or (i1 // step) % BLOCK_SAMPLES != 0:
            continue
        j0 = i0 + (BLOCK_SAMPLES - 1) * step  # the same points, on the neighbour's upper face
        j1 = i1 + (BLOCK_SAMPLES - 1) * step
        same = True
        for r in range(3):
            if (corners[n, r * BLOCK_POINTS + j0] != corners[b, r * BLOCK_POINTS + i0]
                    or corners[n, r * BLOCK_POINTS + j1] != corners[b, r * BLOCK_POINTS + i1]):
                same = False
        if not same:
            continue
        k = EDGE_CACHE + 3 * _block_edge(j0, j1)
        t = corners[n, k]
        if t == t:
            corners[b, slot] = t
            corners[b, slot + 1] = corners[n, k + 1]
            corners[b, slot + 2] = corners[n, k + 2]
            return float(t)
    return math.nan


@device_fn(inline=True)
def _lower_neighbours(b, p, i, j, k, block_pair, block_ijk, corners):
    """The blocks 2 voxels below block b (pair p, lowest sample (i, j, k)) along x, y and z among
    the ``SHARE_WINDOW`` blocks before it, when they hold the surface and settle their crossings
    (``CURVED_A``/``CURVED_B`` in their ``BLOCK_EXACT``, −1 there: they do not); −1: none. Only for
    a pass over the blocks in order, where the blocks before b are done."""
    near_x = near_y = near_z = -1
    for c in range(b - 1, max(b - SHARE_WINDOW, 0) - 1, -1):
        if block_pair[c] != p or not corners[c, BLOCK_EXACT] >= 0.0 \
                or int64(corners[c, BLOCK_EXACT]) & (CURVED_A | CURVED_B) == 0:
            continue
        ci = block_ijk[c, 0]
        cj = block_ijk[c, 1]
        ck = block_ijk[c, 2]
        if cj == j and ck == k and ci == i - 2:
            near_x = c
        elif ci == i and ck == k and cj == j - 2:
            near_y = c
        elif ci == i and cj == j and ck == k - 2:
            near_z = c
    return near_x, near_y, near_z


@device_fn(inline=True)
def _edge_vertex(b, q, e, corners, clamp, p, pairs, sdf, exact, i, j, k, h, ma, mb, ka, kb, kna, knb, interface,
                 near_x, near_y, near_z):
    """Crossing on edge e of voxel q of block b (lowest sample (i, j, k) of B's grid): (x, y, z in
    voxel units from the block's corner, eA, eB).

    Found once per block edge (the linear crossing, or where an exact field may be curved the
    settled one, :func:`_settled_crossing`, or the one a lower neighbour settled,
    :func:`_shared_crossing`), into the edge cache of the block's row, and read back by every
    voxel and pass that meets the edge; the position is clamped to [c, 1 − c] of the edge (the
    values stay those of the crossing)."""
    c0 = EDGE_CORNERS[e, 0]
    c1 = EDGE_CORNERS[e, 1]
    i0 = _point_index(q, c0)
    i1 = _point_index(q, c1)
    x0 = (q & 1) + CORNER_OFFSETS[c0, 0]
    y0 = ((q >> 1) & 1) + CORNER_OFFSETS[c0, 1]
    z0 = ((q >> 2) & 1) + CORNER_OFFSETS[c0, 2]
    dx = CORNER_OFFSETS[c1, 0] - CORNER_OFFSETS[c0, 0]
    dy = CORNER_OFFSETS[c1, 1] - CORNER_OFFSETS[c0, 1]
    dz = CORNER_OFFSETS[c1, 2] - CORNER_OFFSETS[c0, 2]
    slot = EDGE_CACHE + 3 * _block_edge(i0, i1)
    t = float(corners[b, slot])
    if t == t:  # found before (not NaN)
        ea = float(corners[b, slot + 1])
        eb = float(corners[b, slot + 2])
    elif exact & (CURVED_A | CURVED_B):
        t = _shared_crossing(b, corners, i0, i1, slot, near_x, near_y, near_z)
        if t == t:
            ea = float(corners[b, slot + 1])
            eb = float(corners[b, slot + 2])
        else:
            t, ea, eb = _settled_crossing(b, corners, i0, i1, slot, i + x0, j + y0, k + z0, dx, dy, dz, p, pairs, sdf,
                                          exact, h, ma, mb, ka, kb, kna, knb, interface)
    else:
        t, ea, eb, f0, f1 = _linear_crossing(b, corners, i0, i1)
        t, ea, eb = _cached_crossing(b, corners, slot, t, ea, eb)
    t = min(max(t, clamp), 1.0 - clamp)
    if abs(ea + eb) <= RIM_ROUNDING * h:  # on the rim to rounding: exactly on it
        eb = -ea
    return x0 + t * dx, y0 + t * dy, z0 + t * dz, ea, eb


@device_fn(inline=False)
def _on_patch(b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, cx, cy, cz, nx, ny, nz, ma, mb, ka, kb, kna, knb,
              interface, hint_a, bound_a, hint_b, bound_b):
    """eA, eB at the point of the patch over B-local (cx, cy, cz), a point of a triangle of voxel q
    of block b with unit normal (nx, ny, nz): one Newton step of the interface along the normal from
    the point, with the slope along it from the voxel's trilinear gradient of the corners' f (the
    point lies within about h²·curvature of the patch, so one step settles it)."""
    # the trilinear gradient of f in voxel q at the point (voxel units → per metre)
    u = min(max((cx - ox) / h - (q & 1), 0.0), 1.0)
    v = min(max((cy - oy) / h - ((q >> 1) & 1), 0.0), 1.0)
    w = min(max((cz - oz) / h - ((q >> 2) & 1), 0.0), 1.0)
    f000 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 0)])
    f100 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 1)])
    f010 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 2)])
    f110 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 3)])
    f001 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 4)])
    f101 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 5)])
    f011 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 6)])
    f111 = float(corners[b, 2 * BLOCK_POINTS + _point_index(q, 7)])
    gx = ((f100 - f000) * (1 - v) * (1 - w) + (f110 - f010) * v * (1 - w) + (f101 - f001) * (1 - v) * w
          + (f111 - f011) * v * w) / h
    gy = ((f010 - f000) * (1 - u) * (1 - w) + (f110 - f100) * u * (1 - w) + (f011 - f001) * (1 - u) * w
          + (f111 - f101) * u * w) / h
    gz = ((f001 - f000) * (1 - u) * (1 - v) + (f101 - f100) * u * (1 - v) + (f011 - f010) * (1 - u) * v
          + (f111 - f110) * u * v) / h
    slope = gx * nx + gy * ny + gz * nz
    # the fields at the point, then at the Newton step from it (one call site, as above)
    t = 0.0
    ea = 0.0
    eb = 0.0
    # hint_a, bound_a, hint_b, bound_b: the nearest triangles at an evaluation near (cx, cy, cz) and
    # the bounds that certify them there, less the distance from it (−1: none); each evaluation's
    # for the next
    for step in range(2):
        move = abs(t)  # from the point (|n| = 1)
        ea, eb, hint_a, bound_a, hint_b, bound_b = _field_values(
            p, pairs, sdf, cx + t * nx, cy + t * ny, cz + t * nz, exact, ma, mb, hint_a, bound_a - move, hint_b,
            bound_b - move)
        if step == 1 or not slope > 0.0:
            break
        t = -interface_value(ea, eb, ka, kb, kna, knb, interface) / slope
        if not abs(t) <= h or abs(t) <= ON_PATCH * h:
            t = 0.0  # no step (the point is on the patch, or the step is no use): the point's values
            break
    return ea, eb, t, hint_a, bound_a, hint_b, bound_b


@device_fn(inline=False)
def _centre_on_patch(b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, x0, y0, z0, x1, y1, z1, x2, y2, z2, ma, mb,
                     ka, kb, kna, knb, interface):
    """eA, eB at the point of the patch over the centroid of triangle (B-local vertices) of voxel q
    of block b (:func:`_on_patch`)."""
    nx, ny, nz, area = unit_normal(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    found = _on_patch(b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, (x0 + x1 + x2) / 3.0, (y0 + y1 + y2) / 3.0,
                      (z0 + z1 + z2) / 3.0, nx, ny, nz, ma, mb, ka, kb, kna, knb, interface, -1, 0.0, -1, 0.0)
    return found[0], found[1]


@device_fn(inline=False)
def _subdivided(b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1,
                ea2, eb0, eb1, eb2, ma, mb, ka, kb, kna, knb, interface, cuts):
    """eA, eB at the subdivision points of a triangle (B-local vertices, voxel q of block b) into
    the block's row from ``BLOCK_SUB`` (:func:`~hydro.contact.contacts.subdivided_triangle_contact`'s
    layout): the vertices' own values at the corners, the others settled on the patch
    (:func:`_on_patch`)."""
    nx, ny, nz, area = unit_normal(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    hint_a = hint_b = -1  # each point's nearest triangles, certified at the next less the move there
    bound_a = bound_b = 0.0
    px = x0
    py = y0
    pz = z0
    for i in range(cuts + 1):
        for jj in range(cuts + 1 - i):
            # rows walked back and forth, so each point lies a cut from the one before (its hints)
            j = jj if i % 2 == 0 else cuts - i - jj
            k = BLOCK_SUB + SUB_VALUES * sub_index(i, j, cuts)
            u = i / cuts
            v = j / cuts
            x = x0 + u * (x1 - x0) + v * (x2 - x0)
            y = y0 + u * (y1 - y0) + v * (y2 - y0)
            z = z0 + u * (z1 - z0) + v * (z2 - z0)
            if i == 0 and j == 0:
                ea, eb = ea0, eb0
            elif i == cuts:
                ea, eb = ea1, eb1
            elif j == cuts:
                ea, eb = ea2, eb2
            else:
                move = math.sqrt((x - px) ** 2 + (y - py) ** 2 + (z - pz) ** 2)
                ea, eb, t, hint_a, bound_a, hint_b, bound_b = _on_patch(
                    b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, x, y, z, nx, ny, nz, ma, mb, ka, kb, kna, knb,
                    interface, hint_a, bound_a - move, hint_b, bound_b - move)
                x += t * nx
                y += t * ny
                z += t * nz
                px = x
                py = y
                pz = z
            corners[b, k] = x - x0  # from vertex 0: float32 keeps the small offsets finely
            corners[b, k + 1] = y - y0
            corners[b, k + 2] = z - z0
            corners[b, k + 3] = ea
            corners[b, k + 4] = eb


@device_fn(inline=True)
def _phi_a(p, pairs, sdf, sa, x, y, z):
    """A's exact φ at B-local (x, y, z)."""
    ax, ay, az = b_to_a(pairs, p, x, y, z)
    return exact_field_phi(sa, ax, ay, az, sdf)


@device_fn(inline=False)
def _sample_block(b, p, i, j, k, interface, pairs, sdf, corners):
    """Store eA, eB and f at the block's 27 points and, when they are not all of one sign (the
    block holds some of the surface), clear its edge cache and store its ``exact`` bits
    (:func:`_with_curved_bits`); return how many points have f < 0 and whether the block is
    *beyond the band*: no triangle of it can be a contact.

    A block is beyond the band when A's crossings are linear (no ``CURVED_A`` bit) and every
    point's separation s = eA + eB exceeds the gap band (and 0) by more than float32 rounding
    and, where B's exact field may be curved (``CURVED_B``), twice its brick's exact-to-stored
    gap: a linear crossing's eA and eB interpolate two points' values, so its s is at least the
    smaller of theirs, less the rounding of eA and eB to float32 (:data:`ROUNDING`); along B's
    grid edges its stored field is linear and the exact one within the gap of it, so a settled
    crossing's s is at least that less twice the gap; and
    :func:`~hydro.contact.contacts.triangle_is_contact` keeps only triangles with a vertex at
    s < 0 or a mean s within the gap. Where A's crossings are settled (``CURVED_A``), a block is
    beyond the band when every point's s exceeds it by more than :data:`LIPSCHITZ_REACH` voxels
    (and the rounding): both fields change by at most the distance. Refinement bounds each field's
    change over a cell, not where the patch ends, so a band of such blocks lines its rim.

    A's exact mesh field (curved over the block) is costly (a search of the cell's candidate
    triangles), so the block is first sampled with A's stored grid, which lies within its bricks'
    exact-to-stored gap of it: when every point's f keeps its sign across that gap (no surface in
    the block), or every s exceeds the band by the gap more than above, the block returns with
    what the exact values would give, and only the other blocks evaluate A exactly.

    The 27 points lie in one of B's bricks (blocks start at even samples, bricks hold 9³), which
    is read once (points on its far faces take the next brick's values, as every lookup does),
    and runs of them often fall in one cell of A's coarser grid, whose corners are reused. An
    exact field that is affine over the block (a box's face region) is evaluated at four points
    and the rest follow from those (exactly, to rounding).
    """
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    h = pair_f[p, PF_VOXEL_B]
    ma = pair_f[p, PF_MARGIN_A]
    mb = pair_f[p, PF_MARGIN_B]
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
    kna = pair_f[p, PF_KNA]
    knb = pair_f[p, PF_KNB]
    x0 = sdf.params_f[sb, F_ORIGIN] + i * h
    y0 = sdf.params_f[sb, F_ORIGIN + 1] + j * h
    z0 = sdf.params_f[sb, F_ORIGIN + 2] + k * h
    exact, gap_a = _with_curved_bits(p, pairs, sdf, pairs.i[p, PI_EXACT], x0 + h, y0 + h, z0 + h, h)
    # A's exact mesh field, curved over the block: its stored grid first, and the exact field only
    # where the grid, within its exact-to-stored gap, leaves a sign open (a block with the surface)
    grid_first = exact & CURVED_A != 0 and sdf.params_i[sa, I_PRIMITIVE] < 0
    affine_a = exact & 1 != 0 and exact & CURVED_A == 0
    affine_b = exact & 2 != 0 and exact & CURVED_B == 0
    a0 = gax = gay = gaz = 0.0
    if affine_a:
        a0 = _phi_a(p, pairs, sdf, sa, x0, y0, z0)
        gax = _phi_a(p, pairs, sdf, sa, x0 + h, y0, z0) - a0
        gay = _phi_a(p, pairs, sdf, sa, x0, y0 + h, z0) - a0
        gaz = _phi_a(p, pairs, sdf, sa, x0, y0, z0 + h) - a0
    b0 = gbx = gby = gbz = 0.0
    if affine_b:
        b0 = exact_field_phi(sb, x0, y0, z0, sdf)
        gbx = exact_field_phi(sb, x0 + h, y0, z0, sdf) - b0
        gby = exact_field_phi(sb, x0, y0 + h, z0, sdf) - b0
        gbz = exact_field_phi(sb, x0, y0, z0 + h, sdf) - b0
    bslot, lx, ly, lz, c0, c1, c2, c3, c4, c5, c6, c7 = sdf_grid_brick(sb, i, j, k, sdf)
    key_slot = -2
    key_x = 0
    key_y = 0
    key_z = 0
    v0 = v1 = v2 = v3 = v4 = v5 = v6 = v7 = 0.0
    sure_neg = 0  # points whose f is negative (positive) whatever A's exact field within its gap
    sure_pos = 0
    s_grid = math.inf  # with A's stored grid: the smallest separation, and the largest |eA| + |eB|
    size_grid = 0.0
    for g in range(BLOCK_POINTS):
        dx = g % BLOCK_SAMPLES
        dy = (g // BLOCK_SAMPLES) % BLOCK_SAMPLES
        dz = g // (BLOCK_SAMPLES * BLOCK_SAMPLES)
        x = sdf.params_f[sb, F_ORIGIN] + (i + dx) * h
        y = sdf.params_f[sb, F_ORIGIN + 1] + (j + dy) * h
        z = sdf.params_f[sb, F_ORIGIN + 2] + (k + dz) * h
        if affine_b:
            eb = b0 + dx * gbx + dy * gby + dz * gbz - mb
        elif exact & 2 and sdf.params_i[sb, I_PRIMITIVE] >= 0:
            eb = exact_field_phi(sb, x, y, z, sdf) - mb
        elif lx + dx == BRICK or ly + dy == BRICK or lz + dz == BRICK:
            # a face shared with the next brick: its value is the next brick's (as everywhere
            # else: one value per grid point, or neighbouring blocks could disagree on a sign)
            eb = sdf_grid_phi(sb, i + dx, j + dy, k + dz, sdf) - mb
        else:
            eb = sdf_grid_brick_value(sb, bslot, lx + dx, ly + dy, lz + dz, c0, c1, c2, c3, c4, c5, c6, c7, sdf) - mb
        eb32 = float(np.float32(eb))
        corners[b, BLOCK_POINTS + g] = eb32
        if affine_a:
            phi_a = a0 + dx * gax + dy * gay + dz * gaz
        elif exact & 1 and not grid_first:
            phi_a = _phi_a(p, pairs, sdf, sa, x, y, z)
        else:
            ax, ay, az = b_to_a(pairs, p, x, y, z)
            phi_a, key_slot, key_x, key_y, key_z, v0, v1, v2, v3, v4, v5, v6, v7 = sdf_phi_reuse(
                sa, ax, ay, az, sdf, key_slot, key_x, key_y, key_z, v0, v1, v2, v3, v4, v5, v6, v7)
        corners[b, g] = float(np.float32(phi_a - ma))  # as float32, so the values are those stored before
        if grid_first:
            # f's sign rises with eA (both interfaces), and so with A's φ and its float32 rounding
            slack = gap_a + ROUNDING * abs(phi_a)
            if np.float32(interface_value(float(np.float32(phi_a + slack - ma)), eb32, ka, kb, kna, knb,
                                          interface)) < 0.0:
                sure_neg += 1
            elif not np.float32(interface_value(float(np.float32(phi_a - slack - ma)), eb32, ka, kb, kna, knb,
                                                interface)) < 0.0:
                sure_pos += 1
            s_grid = min(s_grid, phi_a - ma + eb32)
            size_grid = max(size_grid, abs(phi_a - ma) + abs(eb32))
    band = max(pair_f[p, PF_GAP], 0.0)
    if grid_first:
        if sure_neg == BLOCK_POINTS or sure_pos == BLOCK_POINTS:
            # one sign at every point, as the exact field would give: no surface here, so no
            # value of the block is read again
            corners[b, BLOCK_EXACT] = -1.0
            return sure_neg, False
        if s_grid - gap_a - LIPSCHITZ_REACH * h - ROUNDING * (size_grid + gap_a) > band:
            corners[b, BLOCK_EXACT] = -1.0
            return sure_neg, True  # beyond the band whatever A's exact values (see below)
    n_neg = 0
    s_min = math.inf  # the smallest separation eA + eB of the points, and the largest |eA| + |eB|
    size = 0.0
    hint = -1  # the previous point's nearest triangle of A, and the bound on the others there
    bound = 0.0
    px = py = pz = 0.0
    for g in range(BLOCK_POINTS):
        if grid_first:
            dx = g % BLOCK_SAMPLES
            dy = (g // BLOCK_SAMPLES) % BLOCK_SAMPLES
            dz = g // (BLOCK_SAMPLES * BLOCK_SAMPLES)
            x = sdf.params_f[sb, F_ORIGIN] + (i + dx) * h
            y = sdf.params_f[sb, F_ORIGIN + 1] + (j + dy) * h
            z = sdf.params_f[sb, F_ORIGIN + 2] + (k + dz) * h
            move = math.sqrt((x - px) ** 2 + (y - py) ** 2 + (z - pz) ** 2)
            ax, ay, az = b_to_a(pairs, p, x, y, z)
            phi_a, hint, bound = field_phi_hint(sa, ax, ay, az, sdf, 1, hint, bound - move)
            px = x
            py = y
            pz = z
            ea32 = float(np.float32(phi_a - ma))
        else:
            ea32 = float(corners[b, g])
        eb32 = float(corners[b, BLOCK_POINTS + g])
        f = interface_value(ea32, eb32, ka, kb, kna, knb, interface)
        corners[b, g] = ea32
        corners[b, 2 * BLOCK_POINTS + g] = f
        if np.float32(f) < 0.0:
            n_neg += 1
        s_min = min(s_min, ea32 + eb32)
        size = max(size, abs(ea32) + abs(eb32))
    if 0 < n_neg < BLOCK_POINTS:  # the block holds the surface: its edges are looked at
        for e in range(BLOCK_EDGES):
            corners[b, EDGE_CACHE + 3 * e] = math.nan
        corners[b, BLOCK_EXACT] = exact
    else:  # its edge cache is not this call's (:func:`_lower_neighbours` reads the mark)
        corners[b, BLOCK_EXACT] = -1.0
    # B's exact field may bend between the points, by at most twice its brick's exact-to-stored gap
    # along a grid edge (where the stored field is linear); A's, along B's edges, by no known bound
    bend = 0.0
    if exact & CURVED_B:
        gx, gy, gz, gap_b, curved = sdf_brick_slopes(sb, x0 + h, y0 + h, z0 + h, sdf)
        bend = 2.0 * gap_b
    if exact & CURVED_A == 0:
        beyond = s_min - ROUNDING * size - bend > band
    else:
        # A's exact field may bend along B's edges by no known bound, but both fields change by at
        # most their distance (1-Lipschitz), so a crossing's separation is at least the smaller of
        # its edge's points' less h (LIPSCHITZ_REACH: less a margin for stored fields' rounding)
        beyond = s_min - ROUNDING * size - LIPSCHITZ_REACH * h > band
    return n_neg, beyond


# Model: pairs (PairView), sdf (SDFView), interface, clamp
# Data in: block_pair, block_ijk, shift and pair_shift (when shift: contacts of stage 4b placed before
# each pair's); Data in/out: corners (written by the count pass)
# Data out: tri_counts (count pass) / contact_f, contact_i, and when asked triangle_f (scatter pass,
# at tri_offsets (+ pair_shift[pair]), below capacity). A count pass given a capacity (> 0; never
# with ``shift``) writes too, each block at the offset after the blocks before it, which it
# stores in tri_offsets: valid in one serial loop over the blocks in order only (the CPU's serial
# call, which then needs no scatter pass)
@device_fn
def _block_item(b, write, interface, clamp, block_pair, block_ijk, pairs, sdf, corners, shift, pair_shift,
                tri_counts, tri_offsets, contact_f, contact_i, triangle_f, capacity):
    if write and tri_counts[b] == 0:
        return
    p = int64(block_pair[b])  # one type for the pair index everywhere (one build of each helper)
    i = block_ijk[b, 0]
    j = block_ijk[b, 1]
    k = block_ijk[b, 2]
    o = 0
    if write:
        o = tri_offsets[b]
        if shift:
            o += pair_shift[p]
    else:
        if capacity > 0:  # counting and writing, in order
            if b > 0:
                o = tri_offsets[b - 1] + tri_counts[b - 1]
            tri_offsets[b] = o
        n_neg, beyond = _sample_block(b, p, i, j, k, interface, pairs, sdf, corners)
        # one sign at all 27 points: no surface in the block; or no contact in it
        if n_neg == 0 or n_neg == BLOCK_POINTS or beyond:
            tri_counts[b] = 0
            return
    pair_f = pairs.f
    sb = pairs.i[p, PI_SDF_B]
    h = pair_f[p, PF_VOXEL_B]
    ox = sdf.params_f[sb, F_ORIGIN] + i * h
    oy = sdf.params_f[sb, F_ORIGIN + 1] + j * h
    oz = sdf.params_f[sb, F_ORIGIN + 2] + k * h
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
    kna = pair_f[p, PF_KNA]
    knb = pair_f[p, PF_KNB]
    ma = pair_f[p, PF_MARGIN_A]
    mb = pair_f[p, PF_MARGIN_B]
    keff = pair_f[p, PF_KEFF]
    gap = pair_f[p, PF_GAP]
    exact = int64(corners[b, BLOCK_EXACT])
    # where crossings are settled (costly exact evaluations), a triangle whose three edges' points
    # all lie beyond the band by more than a crossing's separation can fall below theirs (the
    # bounds of :func:`_sample_block`'s "beyond", per edge) is no contact: it is skipped before its
    # crossings are settled (they stay unsettled until a triangle that needs them settles them,
    # to the same values). ``floor``: that margin above the band (and the rim's rounding)
    floor = math.inf
    if exact & (CURVED_A | CURVED_B):
        size = 0.0
        for g in range(BLOCK_POINTS):
            size = max(size, abs(float(corners[b, g])) + abs(float(corners[b, BLOCK_POINTS + g])))
        if exact & CURVED_A:
            reach = LIPSCHITZ_REACH * h
        else:
            gx, gy, gz, gap_b, curved_b = sdf_brick_slopes(sb, ox + h, oy + h, oz + h, sdf)
            reach = 2.0 * gap_b
        floor = max(gap, 0.0) + RIM_ROUNDING * h + ROUNDING * size + reach
    # a pass over the blocks in order (the CPU's serial call) takes the crossings on a block's
    # lower faces that the neighbour there settled before it (the same values: see
    # :func:`_settled_crossing`); other passes settle their own
    near_x = near_y = near_z = -1
    if not write and capacity > 0 and exact & (CURVED_A | CURVED_B):
        near_x, near_y, near_z = _lower_neighbours(b, p, i, j, k, block_pair, block_ijk, corners)
    n = 0
    for q in range(8):
        case = 0
        for c in range(8):
            if corners[b, 2 * BLOCK_POINTS + _point_index(q, c)] < 0.0:
                case |= 1 << c
        for t in range(TRI_COUNT[case]):
            if (_edge_floor(b, corners, q, TRI_EDGES[case, 3 * t]) > floor
                    and _edge_floor(b, corners, q, TRI_EDGES[case, 3 * t + 1]) > floor
                    and _edge_floor(b, corners, q, TRI_EDGES[case, 3 * t + 2]) > floor):
                continue  # beyond the band whatever its settled crossings (see above)
            x0, y0, z0, ea0, eb0 = _edge_vertex(b, q, TRI_EDGES[case, 3 * t], corners, clamp, p, pairs, sdf, exact,
                                                i, j, k, h, ma, mb, ka, kb, kna, knb, interface, near_x, near_y, near_z)
            x1, y1, z1, ea1, eb1 = _edge_vertex(b, q, TRI_EDGES[case, 3 * t + 1], corners, clamp, p, pairs, sdf,
                                                exact, i, j, k, h, ma, mb, ka, kb, kna, knb, interface, near_x, near_y,
                                                near_z)
            x2, y2, z2, ea2, eb2 = _edge_vertex(b, q, TRI_EDGES[case, 3 * t + 2], corners, clamp, p, pairs, sdf,
                                                exact, i, j, k, h, ma, mb, ka, kb, kna, knb, interface, near_x, near_y,
                                                near_z)
            x0 = ox + x0 * h
            y0 = oy + y0 * h
            z0 = oz + z0 * h
            x1 = ox + x1 * h
            y1 = oy + y1 * h
            z1 = oz + z1 * h
            x2 = ox + x2 * h
            y2 = oy + y2 * h
            z2 = oz + z2 * h
            if not triangle_is_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0 + eb0, ea1 + eb1, ea2 + eb2, gap, h):
                continue
            if o < capacity:  # (0 in a count pass that only counts)
                s0 = ea0 + eb0
                s1 = ea1 + eb1
                s2 = ea2 + eb2
                curved = exact & (CURVED_A | CURVED_B) != 0
                inside = curved and s0 < 0.0 and s1 < 0.0 and s2 < 0.0
                ea_c = 0.0
                eb_c = 0.0
                cuts = 0  # per edge, when subdivided
                if curved and (s0 < 0.0 or s1 < 0.0 or s2 < 0.0):
                    # a curved triangle whose centre strays from its vertices' linear separation by
                    # more than SUB_DEVIATION voxels (a kink of an exact field or the rim crosses it) is
                    # subdivided
                    ea_c, eb_c = _centre_on_patch(b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, x0, y0, z0, x1,
                                                  y1, z1, x2, y2, z2, ma, mb, ka, kb, kna, knb, interface)
                    deviation = abs(ea_c + eb_c - (s0 + s1 + s2) / 3.0)
                    if deviation > SUB_DEVIATION * h:
                        cuts = SUB_CUTS
                if cuts > 0:
                    # across a kink of an exact field: located and integrated exactly where both fields
                    # are face planes on each side of it (hydro/contact/kinks.py), else subdivided
                    taken = False
                    if exact & 3 == 3:
                        (taken, speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness,
                         weight) = kink_contact(p, pairs, sdf, interface, ma, mb, kb, keff, h, x0, y0, z0, x1, y1, z1,
                                                x2, y2, z2)
                    if not taken:
                        _subdivided(b, q, corners, p, pairs, sdf, exact, ox, oy, oz, h, x0, y0, z0, x1, y1, z1, x2,
                                    y2, z2, ea0, ea1, ea2, eb0, eb1, eb2, ma, mb, ka, kb, kna, knb, interface, cuts)
                        (speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness,
                         weight) = subdivided_triangle_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, kb, keff, corners,
                                                               b, BLOCK_SUB, cuts)
                    write_triangle_contact(contact_f, contact_i, triangle_f, o, pairs, p, x0, y0, z0, x1, y1, z1, x2,
                                           y2, z2, ea0, ea1, ea2, eb0, eb1, eb2, keff, speculative, cx, cy, cz, nx,
                                           ny, nz, area, depth, pressure, force, stiffness, weight)
                else:
                    emit_triangle(contact_f, contact_i, triangle_f, o, pairs, p, x0, y0, z0, x1, y1, z1, x2, y2, z2,
                                  ea0, ea1, ea2, eb0, eb1, eb2, kb, keff, inside, ea_c, eb_c)
            o += 1
            n += 1
    if not write:
        tri_counts[b] = n


MARCHING_CUBES = kernel("marching_cubes", _block_item, serial_below=128)
