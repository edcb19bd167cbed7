"""Stage 3 — octree iso-refinement on B's grid: bricks (8 voxels) → cells of 4 → blocks of 2.

The blocks go to marching cubes (stage 4), which settles each of their voxels exactly.

A cell of half edge ``a`` centred at c may hold part of the patch only if both tests pass,
with eA = φA − marginA and eB = φB − marginB sampled at c:

- the shapes can touch: eA + eB <= 2r + gaps;
- the interface can cross zero: |kB·eB − kA·eA| <= r·(kA + kB) (continuous field), or for the
  switched field either of its two forms can.

rA and rB bound how far each stored field can change inside the cell. Every SDF keeps, per
brick, bounds g on its three partial derivatives (B's cells lie inside one of B's bricks; for
A, the largest bounds of the bricks that the cell's bounding cube overlaps); walking from
the centre to any point of the cell along B's axes changes φB by at most a·(gx + gy + gz), and
φA by at most a·Σ_j g_j·Σ_i |R_AB[j, i]| (B's axes seen in A's frame). For interpolated
distance samples every partial is at most 1, so this is never looser than the L1 bound 3a;
on a flat face aligned with the grid it is a, the exact half height, where the half diagonal
√3·a of a true 1-Lipschitz distance would keep more cells yet could still drop cells of the
interpolated field near kinks. Each also gets its field's largest jump (where a coarse band
brick meets a fine one, measured when the SDF is built).

Every level is count → exclusive scan → scatter through one kernel with a ``write`` flag, so
both passes make the same decisions and the order is the same on every target.
"""

from __future__ import annotations

from numba import cuda, prange

from ..backend import KernelPair, cpu_kernel, cuda_kernel, device_fn, find_segment
from .pair_setup import (PF_ABS_ROWS, PF_GAP, PF_KA, PF_KB, PF_KNA, PF_KNB, PF_MARGIN_A, PF_MARGIN_B, PF_SLACK_A,
                         PF_SLACK_B,
                         PF_VOXEL_B, PI_BRICK_DIMS, PI_BRICK_LO, PI_SDF_A, PI_SDF_B, b_to_a)
from ..sdf.layout import F_ORIGIN
from ..sdf.sample import sdf_brick_slopes, sdf_phi, sdf_slopes

SQRT3 = 1.7320508075688772

INTERFACE_CONTINUOUS = 0
INTERFACE_SWITCHED = 1


@device_fn
def interface_value(ea, eb, ka, kb, kna, knb, interface):
    """The interface field f at a point from eA, eB (zero on the patch, increasing from A to B)."""
    if interface == INTERFACE_SWITCHED:
        if ea < 0.0 and eb < 0.0:
            return kna * ea - knb * eb
        return ea - eb
    return ka * ea - kb * eb


@device_fn
def cell_may_hold_patch(p, cx, cy, cz, half, interface, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse, a32, a16, a8):
    """Interval tests for the cell of half edge ``half`` (m) centred at B-local (cx, cy, cz)."""
    sa = pair_i[p, PI_SDF_A]
    sb = pair_i[p, PI_SDF_B]
    eb = sdf_phi(sb, cx, cy, cz, sdf_pf, sdf_pi, slots, coarse, a32, a16, a8) - pair_f[p, PF_MARGIN_B]
    ax, ay, az = b_to_a(pair_f, p, cx, cy, cz)
    ea = sdf_phi(sa, ax, ay, az, sdf_pf, sdf_pi, slots, coarse, a32, a16, a8) - pair_f[p, PF_MARGIN_A]
    reach = SQRT3 * half
    bx, by, bz = sdf_brick_slopes(sb, cx, cy, cz, sdf_pf, sdf_pi, coarse)  # the cell lies in one of B's bricks
    rb = (bx + by + bz) * half + pair_f[p, PF_SLACK_B]
    gx, gy, gz = sdf_slopes(sa, ax, ay, az, reach, sdf_pf, sdf_pi, coarse)
    ra = ((gx * pair_f[p, PF_ABS_ROWS] + gy * pair_f[p, PF_ABS_ROWS + 1] + gz * pair_f[p, PF_ABS_ROWS + 2]) * half
          + pair_f[p, PF_SLACK_A])
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
    return abs(kb * eb - ka * ea) <= ka * ra + kb * rb


@device_fn
def _brick_item(k, write, interface, brick_offsets, pair_count, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                a32, a16, a8, keep, keep_offsets, out_pair, out_ijk, capacity):
    # candidate k: a brick of pair p's range (bricks are 8 voxels)
    p = find_segment(brick_offsets, pair_count, k)
    local = k - brick_offsets[p]
    dx = pair_i[p, PI_BRICK_DIMS]
    dy = pair_i[p, PI_BRICK_DIMS + 1]
    bx = pair_i[p, PI_BRICK_LO] + local % dx
    by = pair_i[p, PI_BRICK_LO + 1] + (local // dx) % dy
    bz = pair_i[p, PI_BRICK_LO + 2] + local // (dx * dy)
    if write:
        if keep[k] != 0:
            o = keep_offsets[k]
            if o < capacity:
                out_pair[o] = p
                out_ijk[o, 0] = 8 * bx
                out_ijk[o, 1] = 8 * by
                out_ijk[o, 2] = 8 * bz
        return
    h = pair_f[p, PF_VOXEL_B]
    sb = pair_i[p, PI_SDF_B]
    cx = sdf_pf[sb, F_ORIGIN] + (8 * bx + 4) * h
    cy = sdf_pf[sb, F_ORIGIN + 1] + (8 * by + 4) * h
    cz = sdf_pf[sb, F_ORIGIN + 2] + (8 * bz + 4) * h
    ok = cell_may_hold_patch(p, cx, cy, cz, 4.0 * h, interface, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                             a32, a16, a8)
    keep[k] = 1 if ok else 0


# Model: pair_f, pair_i, sdf arrays; Data in: brick_offsets (pairs' candidate bricks)
# Data out: keep (count pass), out_pair, out_ijk (scatter pass)
@cpu_kernel
def _bricks_cpu(n, write, interface, brick_offsets, pair_count, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse, a32,
                a16, a8, keep, keep_offsets, out_pair, out_ijk, capacity):
    for k in prange(n):
        _brick_item(k, write, interface, brick_offsets, pair_count, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                    a32, a16, a8, keep, keep_offsets, out_pair, out_ijk, capacity)


@cuda_kernel
def _bricks_cuda(n, write, interface, brick_offsets, pair_count, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse, a32,
                 a16, a8, keep, keep_offsets, out_pair, out_ijk, capacity):
    k = cuda.grid(1)
    if k < n:
        _brick_item(k, write, interface, brick_offsets, pair_count, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                    a32, a16, a8, keep, keep_offsets, out_pair, out_ijk, capacity)


REFINE_BRICKS = KernelPair("refine.bricks", _bricks_cpu, _bricks_cuda, serial_below=256)


@device_fn
def _children_item(c, write, size, interface, in_pair, in_ijk, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                   a32, a16, a8, masks, counts, offsets, out_pair, out_ijk, capacity):
    p = in_pair[c]
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
    h = pair_f[p, PF_VOXEL_B]
    sb = pair_i[p, PI_SDF_B]
    half = 0.5 * child * h
    m = 0
    n = 0
    for q in range(8):
        cx = sdf_pf[sb, F_ORIGIN] + (in_ijk[c, 0] + (q & 1) * child + 0.5 * child) * h
        cy = sdf_pf[sb, F_ORIGIN + 1] + (in_ijk[c, 1] + ((q >> 1) & 1) * child + 0.5 * child) * h
        cz = sdf_pf[sb, F_ORIGIN + 2] + (in_ijk[c, 2] + ((q >> 2) & 1) * child + 0.5 * child) * h
        if cell_may_hold_patch(p, cx, cy, cz, half, interface, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                               a32, a16, a8):
            m |= 1 << q
            n += 1
    masks[c] = m
    counts[c] = n


# Data in: in_pair, in_ijk (cells of edge ``size`` voxels); Data out: masks, counts / out_pair, out_ijk
@cpu_kernel
def _children_cpu(n, write, size, interface, in_pair, in_ijk, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse, a32,
                  a16, a8, masks, counts, offsets, out_pair, out_ijk, capacity):
    for c in prange(n):
        _children_item(c, write, size, interface, in_pair, in_ijk, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                       a32, a16, a8, masks, counts, offsets, out_pair, out_ijk, capacity)


@cuda_kernel
def _children_cuda(n, write, size, interface, in_pair, in_ijk, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse, a32,
                   a16, a8, masks, counts, offsets, out_pair, out_ijk, capacity):
    c = cuda.grid(1)
    if c < n:
        _children_item(c, write, size, interface, in_pair, in_ijk, pair_f, pair_i, sdf_pf, sdf_pi, slots, coarse,
                       a32, a16, a8, masks, counts, offsets, out_pair, out_ijk, capacity)


REFINE_CHILDREN = KernelPair("refine.children", _children_cpu, _children_cuda, serial_below=128)
