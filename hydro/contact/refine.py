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
crosses is dropped.

Every level is count → exclusive scan → scatter through one kernel with a ``write`` flag, so
both passes make the same decisions and the order is the same on every target.
"""

from __future__ import annotations

from numba import int64

from ..backend import device_fn, find_segment, kernel
from ..sdf.layout import BRICK, F_ORIGIN
from ..sdf.sample import sdf_brick_slopes, sdf_phi, sdf_slopes
from .interface import INTERFACE_SWITCHED
from .pair_setup import (PF_ABS_ROWS, PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_KNA, PF_KNB, PF_MARGIN_A, PF_MARGIN_B, PF_SLACK_A,
                         PF_SLACK_B, PF_VOXEL_B, PI_BRICK_DIMS, PI_BRICK_LO, PI_EXACT, PI_SDF_A, PI_SDF_B, b_to_a)

SQRT3 = 1.7320508075688772


@device_fn(inline=True)
def cell_may_hold_patch(p, cx, cy, cz, half, interface, pairs, sdf):
    """Interval tests for the cell of half edge ``half`` (m) centred at B-local (cx, cy, cz)."""
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    eb = sdf_phi(sb, cx, cy, cz, sdf) - pair_f[p, PF_MARGIN_B]
    ax, ay, az = b_to_a(pairs, p, cx, cy, cz)
    ea = sdf_phi(sa, ax, ay, az, sdf) - pair_f[p, PF_MARGIN_A]
    reach = SQRT3 * half
    exact = pairs.i[p, PI_EXACT]
    bx, by, bz, gap_b, _ = sdf_brick_slopes(sb, cx, cy, cz, sdf)  # the cell lies in one of B's bricks
    rb = (bx + by + bz) * half + pair_f[p, PF_SLACK_B]
    if exact & 2:
        rb += gap_b
    gx, gy, gz, gap_a, _ = sdf_slopes(sa, ax, ay, az, reach, sdf)
    ra = ((gx * pair_f[p, PF_ABS_ROWS] + gy * pair_f[p, PF_ABS_ROWS + 1] + gz * pair_f[p, PF_ABS_ROWS + 2]) * half
          + pair_f[p, PF_SLACK_A])
    if exact & 1:
        ra += gap_a
    if ea + eb > ra + rb + pair_f[p, PF_GAP]:
        return False
    ka = pair_f[p, PF_KA]
    kb = pair_f[p, PF_KB]
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
    ra += 1e-6 * (abs(ea) + ra)
    rb += 1e-6 * (abs(eb) + rb)
    lowest = max(ka * (ea - ra), kb * (eb - rb))
    return (lowest <= min(ka * (ea + ra), kb * (eb + rb))
            and lowest <= pair_f[p, PF_KEFF] * (pair_f[p, PF_GAP] + 1e-5 * (ra + rb)))


@device_fn(inline=True)
def _cell_center(sdf, sb, h, i, j, k, half_cells):
    """B-local centre of the cell whose lowest voxel is (i, j, k), ``half_cells`` voxels from it."""
    return (sdf.params_f[sb, F_ORIGIN] + (i + half_cells) * h, sdf.params_f[sb, F_ORIGIN + 1] + (j + half_cells) * h,
            sdf.params_f[sb, F_ORIGIN + 2] + (k + half_cells) * h)


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
        if cell_may_hold_patch(p, cx, cy, cz, half, interface, pairs, sdf):
            m |= 1 << q
            n += 1
    masks[c] = m
    counts[c] = n


REFINE_CHILDREN = kernel("refine.children", _children_item, serial_below=128)
