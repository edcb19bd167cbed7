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

import numpy as np

from ..backend import device_fn, kernel
from ..sdf.layout import BRICK, F_ORIGIN
from ..sdf.sample import sdf_grid_brick, sdf_grid_brick_value, sdf_grid_phi, sdf_phi_reuse
from .contacts import TF_DEPTH, TF_PRESSURE, TF_VERTICES, triangle_contact, triangle_is_contact, write_contact
from .interface import interface_value
from .mc_tables import CORNER_OFFSETS, EDGE_CORNERS, TRI_COUNT, TRI_EDGES
from .pair_setup import (PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_KNA, PF_KNB, PF_MARGIN_A, PF_MARGIN_B, PF_VOXEL_B,
                         PI_ENV, PI_SDF_A, PI_SDF_B, PI_SHAPE_A, PI_SHAPE_B, b_dir_to_world, b_to_a, b_to_world)

BLOCK_SAMPLES = 3  # grid points per edge of a 2×2×2-voxel block
BLOCK_POINTS = BLOCK_SAMPLES**3  # 27, numbered x fastest
# stored per point, in three runs of BLOCK_POINTS: eA, eB, f


@device_fn
def _point_index(q, c):
    """Index (0..26) of corner c of voxel q of a block (both numbered x fastest)."""
    x = (q & 1) + (c & 1)
    y = ((q >> 1) & 1) + ((c >> 1) & 1)
    z = ((q >> 2) & 1) + ((c >> 2) & 1)
    return (z * BLOCK_SAMPLES + y) * BLOCK_SAMPLES + x


@device_fn
def _edge_vertex(b, q, e, corners, clamp):
    """Crossing on edge e of voxel q of block b: (x, y, z in voxel units from the block's corner, eA, eB)."""
    c0 = EDGE_CORNERS[e, 0]
    c1 = EDGE_CORNERS[e, 1]
    i0 = _point_index(q, c0)
    i1 = _point_index(q, c1)
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
    t = min(max(t, clamp), 1.0 - clamp)
    qx = q & 1
    qy = (q >> 1) & 1
    qz = (q >> 2) & 1
    x = qx + CORNER_OFFSETS[c0, 0] + t * (CORNER_OFFSETS[c1, 0] - CORNER_OFFSETS[c0, 0])
    y = qy + CORNER_OFFSETS[c0, 1] + t * (CORNER_OFFSETS[c1, 1] - CORNER_OFFSETS[c0, 1])
    z = qz + CORNER_OFFSETS[c0, 2] + t * (CORNER_OFFSETS[c1, 2] - CORNER_OFFSETS[c0, 2])
    return x, y, z, ea0 + t * (ea1 - ea0), eb0 + t * (eb1 - eb0)


@device_fn
def _sample_block(b, p, i, j, k, interface, pairs, sdf, corners):
    """Store eA, eB and f at the block's 27 points; return how many have f < 0.

    The 27 points lie in one of B's bricks (blocks start at even samples, bricks hold 9³), which
    is read once (points on its far faces take the next brick's values, as every lookup does),
    and runs of them often fall in one cell of A's coarser grid, whose corners are reused.
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
    bslot, lx, ly, lz, b0, b1, b2, b3, b4, b5, b6, b7 = sdf_grid_brick(sb, i, j, k, sdf)
    key_slot = -2
    key_x = 0
    key_y = 0
    key_z = 0
    v0 = v1 = v2 = v3 = v4 = v5 = v6 = v7 = 0.0
    n_neg = 0
    for g in range(BLOCK_POINTS):
        dx = g % BLOCK_SAMPLES
        dy = (g // BLOCK_SAMPLES) % BLOCK_SAMPLES
        dz = g // (BLOCK_SAMPLES * BLOCK_SAMPLES)
        if lx + dx == BRICK or ly + dy == BRICK or lz + dz == BRICK:
            # a face shared with the next brick: its value is the next brick's (as everywhere
            # else: one value per grid point, or neighbouring blocks could disagree on a sign)
            eb = sdf_grid_phi(sb, i + dx, j + dy, k + dz, sdf) - mb
        else:
            eb = sdf_grid_brick_value(sb, bslot, lx + dx, ly + dy, lz + dz, b0, b1, b2, b3, b4, b5, b6, b7, sdf) - mb
        x = sdf.params_f[sb, F_ORIGIN] + (i + dx) * h
        y = sdf.params_f[sb, F_ORIGIN + 1] + (j + dy) * h
        z = sdf.params_f[sb, F_ORIGIN + 2] + (k + dz) * h
        ax, ay, az = b_to_a(pairs, p, x, y, z)
        phi_a, key_slot, key_x, key_y, key_z, v0, v1, v2, v3, v4, v5, v6, v7 = sdf_phi_reuse(
            sa, ax, ay, az, sdf, key_slot, key_x, key_y, key_z, v0, v1, v2, v3, v4, v5, v6, v7)
        ea32 = float(np.float32(phi_a - ma))
        eb32 = float(np.float32(eb))
        f = interface_value(ea32, eb32, ka, kb, kna, knb, interface)
        corners[b, g] = ea32
        corners[b, BLOCK_POINTS + g] = eb32
        corners[b, 2 * BLOCK_POINTS + g] = f
        if np.float32(f) < 0.0:
            n_neg += 1
    return n_neg


@device_fn
def _write_vertex(triangle_f, o, v, pairs, p, x, y, z, ea, eb, kb):
    wx, wy, wz = b_to_world(pairs, p, x, y, z)
    triangle_f[o, TF_VERTICES + 3 * v] = wx
    triangle_f[o, TF_VERTICES + 3 * v + 1] = wy
    triangle_f[o, TF_VERTICES + 3 * v + 2] = wz
    triangle_f[o, TF_DEPTH + v] = ea + eb
    triangle_f[o, TF_PRESSURE + v] = max(0.0, -kb * eb)


# Model: pairs (PairView), sdf (SDFView), interface, clamp
# Data in: block_pair, block_ijk; Data in/out: corners (written by the count pass)
# Data out: tri_counts (count pass) / contact_f, contact_i, and when asked triangle_f (scatter pass,
# at tri_offsets, below capacity)
@device_fn
def _block_item(b, write, interface, clamp, block_pair, block_ijk, pairs, sdf, corners, tri_counts, tri_offsets,
                contact_f, contact_i, triangle_f, capacity):
    if write and tri_counts[b] == 0:
        return
    p = block_pair[b]
    i = block_ijk[b, 0]
    j = block_ijk[b, 1]
    k = block_ijk[b, 2]
    if not write:
        n_neg = _sample_block(b, p, i, j, k, interface, pairs, sdf, corners)
        # one sign at all 27 points: no surface in the block
        if n_neg == 0 or n_neg == BLOCK_POINTS:
            tri_counts[b] = 0
            return
    pair_f = pairs.f
    sb = pairs.i[p, PI_SDF_B]
    h = pair_f[p, PF_VOXEL_B]
    ox = sdf.params_f[sb, F_ORIGIN] + i * h
    oy = sdf.params_f[sb, F_ORIGIN + 1] + j * h
    oz = sdf.params_f[sb, F_ORIGIN + 2] + k * h
    kb = pair_f[p, PF_KB]
    keff = pair_f[p, PF_KEFF]
    gap = pair_f[p, PF_GAP]
    o = 0
    if write:
        o = tri_offsets[b]
    n = 0
    for q in range(8):
        case = 0
        for c in range(8):
            if corners[b, 2 * BLOCK_POINTS + _point_index(q, c)] < 0.0:
                case |= 1 << c
        for t in range(TRI_COUNT[case]):
            x0, y0, z0, ea0, eb0 = _edge_vertex(b, q, TRI_EDGES[case, 3 * t], corners, clamp)
            x1, y1, z1, ea1, eb1 = _edge_vertex(b, q, TRI_EDGES[case, 3 * t + 1], corners, clamp)
            x2, y2, z2, ea2, eb2 = _edge_vertex(b, q, TRI_EDGES[case, 3 * t + 2], corners, clamp)
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
            if write and o < capacity:
                (speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness,
                 weight) = triangle_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1, ea2, eb0, eb1, eb2, kb,
                                            keff)
                wx, wy, wz = b_to_world(pairs, p, cx, cy, cz)
                wnx, wny, wnz = b_dir_to_world(pairs, p, nx, ny, nz)
                write_contact(contact_f, contact_i, o, wx, wy, wz, wnx, wny, wnz, area, depth, pressure, force,
                              stiffness, weight, pairs.i[p, PI_SHAPE_A], pairs.i[p, PI_SHAPE_B], pairs.i[p, PI_ENV], p,
                              speculative)
                if triangle_f.shape[0] > o:  # the optional vertex output (a 1-row dummy when off)
                    _write_vertex(triangle_f, o, 0, pairs, p, x0, y0, z0, ea0, eb0, kb)
                    _write_vertex(triangle_f, o, 1, pairs, p, x1, y1, z1, ea1, eb1, kb)
                    _write_vertex(triangle_f, o, 2, pairs, p, x2, y2, z2, ea2, eb2, kb)
            o += 1
            n += 1
    if not write:
        tri_counts[b] = n


MARCHING_CUBES = kernel("marching_cubes", _block_item, serial_below=128)
