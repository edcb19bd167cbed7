"""Stage 3 — octree iso-refinement on B's grid: bricks (8 voxels) → cells of 4 → blocks of 2.

The blocks go to marching cubes (stage 4), which settles each of their voxels exactly.

A cell of half edge ``a`` centred at c may hold part of the patch only if both tests pass,
with eA = φA − marginA and eB = φB − marginB sampled at c:

- the shapes can touch: eA + eB <= 2r + gaps;
- the interface can cross zero: |kB·eB − kA·eA| <= r·(kA + kB) (continuous field), or for the
  switched field either of its two forms can;
- (continuous field) it can cross zero where the patch makes contacts: on the interface the
  pressure P = kA·eA = kB·eB and eA + eB = P/k_eff, so a contact (a triangle with a vertex at
  eA + eB <= gaps) needs a P in both ranges kA·[eA ± rA], kB·[eB ± rB] with P <= k_eff·gaps. The
  two tests above apart keep a wide band of cells around the rim of a shallow patch (a sphere
  meeting a face at a small angle), where the interface runs on outside the overlap: half the
  blocks of a sphere pressed into a box made no contact before this one.

rA and rB bound how far each stored field can change inside the cell. Every SDF keeps, per
brick, bounds g on its three partial derivatives (B's cells lie inside one of B's bricks; for
A, the largest bounds of the bricks that the cell's bounding cube overlaps); walking from
the centre to any point of the cell along B's axes changes φB by at most a·(gx + gy + gz), and
φA by at most a·Σ_j g_j·Σ_i |R_AB[j, i]| (B's axes seen in A's frame). For interpolated
distance samples every partial is at most 1, so this is never looser than the L1 bound 3a;
on a flat face aligned with the grid it is a, the exact half height, where the half diagonal
√3·a of a true 1-Lipschitz distance would keep more cells yet could still drop cells of the
interpolated field near kinks. Each also gets its field's largest jump (where a coarse band
brick meets a fine one, measured when the SDF is built), and, when stage 4 evaluates the
shape's exact distance (a primitive, ``HydroelasticConfig.exact_primitives``), the bricks' bound
on how far the exact field lies from the stored one, so no cell that the exact interface
crosses is dropped. Such a field is then taken at its exact value at the centre, its change
bounded by the smaller of that and the Lipschitz bound √3·a; when both fields are exact convex
primitives, their subgradients bound eA, eB and eA + eB from below (:func:`_convex_lows`); when
both are exact, a block is kept only if one of its voxels passes too
(:func:`_some_voxel_may_hold_patch`).

Every level is count → exclusive scan → scatter through one kernel with a ``write`` flag, so
both passes make the same decisions and the order is the same on every target.
"""

from __future__ import annotations

from numba import int64

from ..backend import device_fn, find_segment, kernel
from ..geometry.primitives import primitive_subgradient3
from ..sdf.layout import BRICK, F_ORIGIN, F_PRIMITIVE, I_PRIMITIVE
from ..sdf.sample import primitive_field_phi, sdf_brick_slopes, sdf_phi, sdf_slopes
from .interface import INTERFACE_SWITCHED
from .pair_setup import (PF_ABS_ROWS, PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_KNA, PF_KNB, PF_MARGIN_A, PF_MARGIN_B, PF_R_AB,
                         PF_SLACK_A, PF_SLACK_B, PF_VOXEL_B, PI_BRICK_DIMS, PI_BRICK_LO, PI_EXACT, PI_SDF_A, PI_SDF_B,
                         b_to_a)

SQRT3 = 1.7320508075688772
#: The exact fields' Lipschitz bound over a cell is √3·half·(1 + LIPSCHITZ_SLACK): a primitive's
#: exact distance is 1-Lipschitz up to its rounding (the ellipsoid's root finding)
LIPSCHITZ_SLACK = 1e-6
#: The convex lower bound's margin, relative to |eA| + |eB| at the centre: it must not drop a
#: cell whose float32 samples (marching cubes rounds eA, eB to float32) make a contact
CONVEX_SLACK = 2.0**-18


@device_fn(inline=True)
def _subgradient(s, x, y, z, sdf):
    """A subgradient of packed shape ``s``'s exact field at local (x, y, z) (see
    :func:`~hydro.geometry.primitives.primitive_subgradient3`): (gx, gy, gz, ok)."""
    pf = sdf.params_f
    return primitive_subgradient3(sdf.params_i[s, I_PRIMITIVE], pf[s, F_PRIMITIVE], pf[s, F_PRIMITIVE + 1],
                                  pf[s, F_PRIMITIVE + 2], x, y, z)


@device_fn(inline=True)
def exact_primitives(p, pairs, sdf):
    """The bits of PI_EXACT (1: A, 2: B) whose shape is a primitive evaluated exactly: its exact
    field is taken at the cell (:func:`primitive_field_phi`). A mesh evaluated exactly
    (``exact_meshes``) is taken from its grid here, widened by its bricks' gap, as before: its
    exact field costs a triangle search, and marching cubes settles it where the patch is."""
    exact = pairs.i[p, PI_EXACT]
    bits = 0
    if exact & 1 and sdf.params_i[pairs.i[p, PI_SDF_A], I_PRIMITIVE] >= 0:
        bits |= 1
    if exact & 2 and sdf.params_i[pairs.i[p, PI_SDF_B], I_PRIMITIVE] >= 0:
        bits |= 2
    return bits


@device_fn(inline=True)
def _convex_lows(p, cx, cy, cz, ax, ay, az, half, ea, eb, pairs, sdf):
    """Lower bounds (ok, lowA, lowB, lowS) over the cell of half edge ``half`` centred at B-local
    (cx, cy, cz) (A-local (ax, ay, az)) of eA, eB and eA + eB, both fields evaluated exactly and
    convex (``ok`` False when a kind has no subgradient here): with subgradients gA, gB (in B's
    axes), e(c + d) ≥ e(c) + g·d ≥ e(c) − half·Σ|g_i|. Where the shapes touch, gA ≈ −gB, so the
    sum's bound is far tighter than the two Lipschitz bounds √3·half: the cells where the
    interface runs on outside the overlap (the rim of a shallow patch) are dropped."""
    ga0, ga1, ga2, ok_a = _subgradient(pairs.i[p, PI_SDF_A], ax, ay, az, sdf)
    gb0, gb1, gb2, ok_b = _subgradient(pairs.i[p, PI_SDF_B], cx, cy, cz, sdf)
    if not (ok_a and ok_b):
        return False, 0.0, 0.0, 0.0
    f = pairs.f
    # gA in B's axes: R_AB^T gA
    ux = f[p, PF_R_AB] * ga0 + f[p, PF_R_AB + 3] * ga1 + f[p, PF_R_AB + 6] * ga2
    uy = f[p, PF_R_AB + 1] * ga0 + f[p, PF_R_AB + 4] * ga1 + f[p, PF_R_AB + 7] * ga2
    uz = f[p, PF_R_AB + 2] * ga0 + f[p, PF_R_AB + 5] * ga1 + f[p, PF_R_AB + 8] * ga2
    slack = CONVEX_SLACK * (abs(ea) + abs(eb)) + 1e-12
    low_a = ea - half * (abs(ux) + abs(uy) + abs(uz)) - slack
    low_b = eb - half * (abs(gb0) + abs(gb1) + abs(gb2)) - slack
    low_s = ea + eb - half * (abs(ux + gb0) + abs(uy + gb1) + abs(uz + gb2)) - slack
    return True, low_a, low_b, low_s


@device_fn(inline=True)
def cell_may_hold_patch(p, cx, cy, cz, half, interface, pairs, sdf):
    """Interval tests for the cell of half edge ``half`` (m) centred at B-local (cx, cy, cz)."""
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    mesh = pairs.i[p, PI_EXACT]  # meshes evaluated exactly: the grid, widened by the bricks' gap
    exact = exact_primitives(p, pairs, sdf)
    mesh &= ~exact
    reach = SQRT3 * half
    bx, by, bz, gap_b, _ = sdf_brick_slopes(sb, cx, cy, cz, sdf)  # the cell lies in one of B's bricks
    rb = (bx + by + bz) * half + pair_f[p, PF_SLACK_B]
    if mesh & 2:
        rb += gap_b
    if exact & 2:
        # an exactly evaluated field: its value at the centre, and its change over the cell at
        # most the stored field's plus twice their gap, and at most √3·half (a distance is
        # 1-Lipschitz); the first is the tighter on a face along B's axes, the second where the
        # stored voxels are coarse beside the primitive's edges
        eb = primitive_field_phi(sb, cx, cy, cz, sdf) - pair_f[p, PF_MARGIN_B]
        rb = min(rb + 2.0 * gap_b, reach * (1.0 + LIPSCHITZ_SLACK))
    else:
        eb = sdf_phi(sb, cx, cy, cz, sdf) - pair_f[p, PF_MARGIN_B]
    ax, ay, az = b_to_a(pairs, p, cx, cy, cz)
    gx, gy, gz, gap_a, _ = sdf_slopes(sa, ax, ay, az, reach, sdf)
    ra = ((gx * pair_f[p, PF_ABS_ROWS] + gy * pair_f[p, PF_ABS_ROWS + 1] + gz * pair_f[p, PF_ABS_ROWS + 2]) * half
          + pair_f[p, PF_SLACK_A])
    if mesh & 1:
        ra += gap_a
    if exact & 1:
        ea = primitive_field_phi(sa, ax, ay, az, sdf) - pair_f[p, PF_MARGIN_A]
        ra = min(ra + 2.0 * gap_a, reach * (1.0 + LIPSCHITZ_SLACK))
    else:
        ea = sdf_phi(sa, ax, ay, az, sdf) - pair_f[p, PF_MARGIN_A]
    if ea + eb > ra + rb + pair_f[p, PF_GAP]:
        return False
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
    low_a = ea - ra
    low_b = eb - rb
    if exact == 3:  # both exact: the convex fields' lower bounds (a contact needs eA + eB <= gaps)
        convex, cva, cvb, cvs = _convex_lows(p, cx, cy, cz, ax, ay, az, half, ea, eb, pairs, sdf)
        if convex:
            if cvs > pair_f[p, PF_GAP]:
                return False
            low_a = max(low_a, cva)
            low_b = max(low_b, cvb)
    if interface == INTERFACE_SWITCHED:
        kna = pair_f[p, PF_KNA]
        knb = pair_f[p, PF_KNB]
        inner_can_cross = abs(knb * eb - kna * ea) <= kna * ra + knb * rb
        outer_can_cross = abs(eb - ea) <= ra + rb
        return inner_can_cross or outer_can_cross
    # the pressures both fields allow, and at most the gap band's. Margins, each in its own field's
    # units (so a stiffness ratio of 1e12 does not turn one field's rounding into the other's):
    # the points marching cubes interpolates are stored as float32 (2⁻²⁴ of a value, widened to
    # 1e-6), and a crossing found from their float32 f lies within a few 2⁻²⁴ of the edge from
    # the root, where the separation moves by at most that fraction of ra + rb
    # the same margins widen the lower bounds (the convex ones included)
    margin_a = 1e-6 * (abs(ea) + ra)
    margin_b = 1e-6 * (abs(eb) + rb)
    ra += margin_a
    rb += margin_b
    lowest = max(ka * (low_a - margin_a), kb * (low_b - margin_b))
    return (lowest <= min(ka * (ea + ra), kb * (eb + rb))
            and lowest <= pair_f[p, PF_KEFF] * (pair_f[p, PF_GAP] + 1e-5 * (ra + rb)))


@device_fn(inline=True)
def _cell_center(sdf, sb, h, i, j, k, half_cells):
    """B-local centre of the cell whose lowest voxel is (i, j, k), ``half_cells`` voxels from it."""
    return (sdf.params_f[sb, F_ORIGIN] + (i + half_cells) * h, sdf.params_f[sb, F_ORIGIN + 1] + (j + half_cells) * h,
            sdf.params_f[sb, F_ORIGIN + 2] + (k + half_cells) * h)


@device_fn(inline=True)
def _some_voxel_may_hold_patch(p, cx, cy, cz, h, interface, pairs, sdf):
    """Whether one of the 8 voxels of the block (2 voxels a side) centred at B-local (cx, cy, cz)
    passes :func:`cell_may_hold_patch`: the block's own test bounds each field over twice the
    reach, which keeps blocks around the patch's rim where the interface runs on outside the
    overlap (a 5 cm sphere resting on a box face, 33 triangles in 4 blocks: 14 blocks without
    this test); marching cubes samples and meshes each, at ~50× the cost of a test. Asked only
    when both fields are exact: a stored field's test costs more, and marching cubes skips a
    block beyond the contact band cheaply where the fields are affine or trilinear (a torus
    mesh on a box ran 15 % slower with it)."""
    for q in range(8):
        if cell_may_hold_patch(p, cx + ((q & 1) - 0.5) * h, cy + (((q >> 1) & 1) - 0.5) * h,
                               cz + (((q >> 2) & 1) - 0.5) * h, 0.5 * h, interface, pairs, sdf):
            return True
    return False


# Model: pairs (PairView), sdf (SDFView); Data in: brick_offsets (pairs' candidate bricks)
# Data out: keep (count pass) / out_pair, out_ijk (scatter pass, at keep_offsets, below capacity)
@device_fn
def _brick_item(k, write, interface, brick_offsets, pair_count, pairs, sdf, keep, keep_offsets, out_pair, out_ijk,
                capacity):
    # candidate k: a brick of pair p's range
    p = find_segment(brick_offsets, pair_count, k)
    local = k - brick_offsets[p]
    dx = pairs.i[p, PI_BRICK_DIMS]
    dy = pairs.i[p, PI_BRICK_DIMS + 1]
    bx = pairs.i[p, PI_BRICK_LO] + local % dx
    by = pairs.i[p, PI_BRICK_LO + 1] + (local // dx) % dy
    bz = pairs.i[p, PI_BRICK_LO + 2] + local // (dx * dy)
    if write:
        if keep[k] != 0:
            o = keep_offsets[k]
            if o < capacity:
                out_pair[o] = p
                out_ijk[o, 0] = BRICK * bx
                out_ijk[o, 1] = BRICK * by
                out_ijk[o, 2] = BRICK * bz
        return
    h = pairs.f[p, PF_VOXEL_B]
    cx, cy, cz = _cell_center(sdf, pairs.i[p, PI_SDF_B], h, BRICK * bx, BRICK * by, BRICK * bz, BRICK // 2)
    ok = cell_may_hold_patch(p, cx, cy, cz, 0.5 * BRICK * h, interface, pairs, sdf)
    keep[k] = 1 if ok else 0


REFINE_BRICKS = kernel("refine.bricks", _brick_item, serial_below=256)


# Data in: in_pair, in_ijk (cells of edge ``size`` voxels)
# Data out: masks, counts (count pass) / out_pair, out_ijk (scatter pass, at offsets, below capacity)
@device_fn
def _children_item(c, write, size, interface, in_pair, in_ijk, pairs, sdf, masks, counts, offsets, out_pair, out_ijk,
                   capacity):
    p = int64(in_pair[c])  # one type for the pair index everywhere (one build of each helper)
    child = size // 2
    if write:
        m = masks[c]
        o = offsets[c]
        for q in range(8):
            if (m >> q) & 1:
                if o < capacity:
                    out_pair[o] = p
                    out_ijk[o, 0] = in_ijk[c, 0] + (q & 1) * child
                    out_ijk[o, 1] = in_ijk[c, 1] + ((q >> 1) & 1) * child
                    out_ijk[o, 2] = in_ijk[c, 2] + ((q >> 2) & 1) * child
                o += 1
        return
    h = pairs.f[p, PF_VOXEL_B]
    sb = pairs.i[p, PI_SDF_B]
    half = 0.5 * child * h
    m = 0
    n = 0
    for q in range(8):
        cx, cy, cz = _cell_center(sdf, sb, h, in_ijk[c, 0] + (q & 1) * child, in_ijk[c, 1] + ((q >> 1) & 1) * child,
                                  in_ijk[c, 2] + ((q >> 2) & 1) * child, 0.5 * child)
        if cell_may_hold_patch(p, cx, cy, cz, half, interface, pairs, sdf) and (
                child != 2 or exact_primitives(p, pairs, sdf) != 3 or _some_voxel_may_hold_patch(p, cx, cy, cz, h, interface,
                                                                                     pairs, sdf)):
            m |= 1 << q
            n += 1
    masks[c] = m
    counts[c] = n


REFINE_CHILDREN = kernel("refine.children", _children_item, serial_below=128)
