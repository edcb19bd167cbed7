"""Sampling a packed SDF on the device: φ, ∇φ, grid samples and slope bounds (device helpers),
and the kernels that sample many points at once.

Sampling is trilinear in a fine brick and trilinear on the coarse grid elsewhere; outside the
box it returns φ(clamped point) + distance to the box, a valid upper bound.
"""

from __future__ import annotations

import math

from numba import cuda, prange

from ..backend import KernelPair, cpu_kernel, cuda_kernel, device_fn
from .layout import (F_INV_VOXEL, F_OFFSET, F_ORIGIN, F_SCALE, F_VOXEL, I_ATLAS_OFFSET, I_BRICKS, I_COARSE_OFFSET,
                     I_FORMAT, I_RES, I_SLOPES_OFFSET, I_SLOT_OFFSET)


@device_fn
def _fine_value(fmt, idx, scale, offset, a32, a16, a8):
    if fmt == 1:
        return offset + scale * float(a16[idx])
    if fmt == 0:
        return float(a32[idx])
    return offset + scale * float(a8[idx])


@device_fn
def _fine_corners(atlas, base, scale, offset):
    """The 8 corners of the fine cell whose lowest sample is atlas[base] (9×9 rows)."""
    return (offset + scale * float(atlas[base]), offset + scale * float(atlas[base + 1]),
            offset + scale * float(atlas[base + 9]), offset + scale * float(atlas[base + 10]),
            offset + scale * float(atlas[base + 81]), offset + scale * float(atlas[base + 82]),
            offset + scale * float(atlas[base + 90]), offset + scale * float(atlas[base + 91]))


@device_fn
def _cell_corners(s, ix, iy, iz, pf, pi, slots, coarse, a32, a16, a8, fine_cell):
    """The 8 corner values of a cell. Returns (v000, v100, v010, v110, v001, v101, v011, v111).

    With ``fine_cell`` >= 0 the cell is voxel (ix, iy, iz) of that fine brick slot; otherwise
    it is the coarse cell of brick (ix, iy, iz).
    """
    if fine_cell >= 0:
        fmt = pi[s, I_FORMAT]
        base = pi[s, I_ATLAS_OFFSET] + fine_cell * 729 + (iz * 9 + iy) * 9 + ix
        if fmt == 1:
            return _fine_corners(a16, base, pf[s, F_SCALE], pf[s, F_OFFSET])
        if fmt == 0:
            return _fine_corners(a32, base, 1.0, 0.0)
        return _fine_corners(a8, base, pf[s, F_SCALE], pf[s, F_OFFSET])
    cx = pi[s, I_BRICKS] + 1
    cy = pi[s, I_BRICKS + 1] + 1
    base = pi[s, I_COARSE_OFFSET] + (iz * cy + iy) * cx + ix
    sy = cx
    sz = cx * cy
    return _fine_corners_strided(coarse, base, sy, sz)


@device_fn
def _fine_corners_strided(values, base, sy, sz):
    return (float(values[base]), float(values[base + 1]), float(values[base + sy]), float(values[base + sy + 1]),
            float(values[base + sz]), float(values[base + sz + 1]), float(values[base + sz + sy]),
            float(values[base + sz + sy + 1]))


@device_fn
def _locate(s, x, y, z, pf, pi, slots):
    """Clamp a local point into the box and find its cell.

    Returns (ix, iy, iz, fine_slot, tx, ty, tz, cell_size, outside_x, outside_y, outside_z):
    the cell indices (voxel within the brick, or the brick for a coarse cell), the brick's fine
    slot (−1: coarse), the fractions inside the cell, the cell edge in voxels (1 or 8) and the
    offset from the clamped point to the query point (zero inside the box).
    """
    inv = pf[s, F_INV_VOXEL]
    gx = (x - pf[s, F_ORIGIN]) * inv
    gy = (y - pf[s, F_ORIGIN + 1]) * inv
    gz = (z - pf[s, F_ORIGIN + 2]) * inv
    nx = pi[s, I_RES]
    ny = pi[s, I_RES + 1]
    nz = pi[s, I_RES + 2]
    cgx = min(max(gx, 0.0), float(nx))
    cgy = min(max(gy, 0.0), float(ny))
    cgz = min(max(gz, 0.0), float(nz))
    h = pf[s, F_VOXEL]
    ox = (gx - cgx) * h
    oy = (gy - cgy) * h
    oz = (gz - cgz) * h
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    nbz = pi[s, I_BRICKS + 2]
    bx = min(int(cgx) >> 3, nbx - 1)
    by = min(int(cgy) >> 3, nby - 1)
    bz = min(int(cgz) >> 3, nbz - 1)
    ux = cgx - 8.0 * bx
    uy = cgy - 8.0 * by
    uz = cgz - 8.0 * bz
    slot = slots[pi[s, I_SLOT_OFFSET] + (bz * nby + by) * nbx + bx]
    if slot >= 0:
        cx = min(int(ux), 7)
        cy = min(int(uy), 7)
        cz = min(int(uz), 7)
        return cx, cy, cz, slot, ux - cx, uy - cy, uz - cz, 1.0, ox, oy, oz
    return bx, by, bz, -1, ux * 0.125, uy * 0.125, uz * 0.125, 8.0, ox, oy, oz


@device_fn
def _trilerp(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz):
    a = v000 + (v100 - v000) * tx
    b = v010 + (v110 - v010) * tx
    c = v001 + (v101 - v001) * tx
    d = v011 + (v111 - v011) * tx
    e = a + (b - a) * ty
    f = c + (d - c) * ty
    return e + (f - e) * tz


@device_fn
def sdf_phi(s, x, y, z, pf, pi, slots, coarse, a32, a16, a8):
    """φ of packed shape ``s`` at local point (x, y, z)."""
    ix, iy, iz, slot, tx, ty, tz, cell, ox, oy, oz = _locate(s, x, y, z, pf, pi, slots)
    v000, v100, v010, v110, v001, v101, v011, v111 = _cell_corners(
        s, ix, iy, iz, pf, pi, slots, coarse, a32, a16, a8, slot)
    phi = _trilerp(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz)
    if ox != 0.0 or oy != 0.0 or oz != 0.0:
        phi += math.sqrt(ox * ox + oy * oy + oz * oz)
    return phi


@device_fn
def sdf_phi_reuse(s, x, y, z, pf, pi, slots, coarse, a32, a16, a8, key_slot, key_x, key_y, key_z,
                  v000, v100, v010, v110, v001, v101, v011, v111):
    """:func:`sdf_phi` for a run of nearby points: the corner values of the previous point's cell
    (and its key: slot, cell indices) are passed in and reused when the cell is the same.

    Returns (phi, slot, ix, iy, iz, v000, …, v111) to pass on to the next call; start with
    ``key_slot = -2``.
    """
    ix, iy, iz, slot, tx, ty, tz, cell, ox, oy, oz = _locate(s, x, y, z, pf, pi, slots)
    if slot != key_slot or ix != key_x or iy != key_y or iz != key_z:
        v000, v100, v010, v110, v001, v101, v011, v111 = _cell_corners(
            s, ix, iy, iz, pf, pi, slots, coarse, a32, a16, a8, slot)
    phi = _trilerp(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz)
    if ox != 0.0 or oy != 0.0 or oz != 0.0:
        phi += math.sqrt(ox * ox + oy * oy + oz * oz)
    return phi, slot, ix, iy, iz, v000, v100, v010, v110, v001, v101, v011, v111


@device_fn
def sdf_grid_brick(s, i, j, k, pf, pi, slots, coarse, a32, a16, a8):
    """The brick holding grid sample (i, j, k) and what reading its samples needs:
    (slot, lx, ly, lz, c000, …, c111) with (lx, ly, lz) the sample within the brick (0..8) and,
    for a coarse brick (slot −1), its 8 coarse corners (zeros for a fine one)."""
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    nbz = pi[s, I_BRICKS + 2]
    bx = min(i >> 3, nbx - 1)
    by = min(j >> 3, nby - 1)
    bz = min(k >> 3, nbz - 1)
    slot = slots[pi[s, I_SLOT_OFFSET] + (bz * nby + by) * nbx + bx]
    if slot >= 0:
        return slot, i - 8 * bx, j - 8 * by, k - 8 * bz, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    c000, c100, c010, c110, c001, c101, c011, c111 = _cell_corners(
        s, bx, by, bz, pf, pi, slots, coarse, a32, a16, a8, -1)
    return slot, i - 8 * bx, j - 8 * by, k - 8 * bz, c000, c100, c010, c110, c001, c101, c011, c111


@device_fn
def sdf_grid_brick_value(s, slot, lx, ly, lz, c000, c100, c010, c110, c001, c101, c011, c111, pf, pi, a32, a16,
                         a8):
    """φ at sample (lx, ly, lz) (0..8) of the brick described by :func:`sdf_grid_brick`."""
    if slot >= 0:
        idx = pi[s, I_ATLAS_OFFSET] + slot * 729 + (lz * 9 + ly) * 9 + lx
        return _fine_value(pi[s, I_FORMAT], idx, pf[s, F_SCALE], pf[s, F_OFFSET], a32, a16, a8)
    return _trilerp(c000, c100, c010, c110, c001, c101, c011, c111, lx * 0.125, ly * 0.125, lz * 0.125)


@device_fn
def sdf_phi_grad(s, x, y, z, pf, pi, slots, coarse, a32, a16, a8):
    """φ and ∇φ of packed shape ``s`` at local point (x, y, z): (phi, gx, gy, gz)."""
    ix, iy, iz, slot, tx, ty, tz, cell, ox, oy, oz = _locate(s, x, y, z, pf, pi, slots)
    v000, v100, v010, v110, v001, v101, v011, v111 = _cell_corners(
        s, ix, iy, iz, pf, pi, slots, coarse, a32, a16, a8, slot)
    a = v000 + (v100 - v000) * tx
    b = v010 + (v110 - v010) * tx
    c = v001 + (v101 - v001) * tx
    d = v011 + (v111 - v011) * tx
    e = a + (b - a) * ty
    f = c + (d - c) * ty
    phi = e + (f - e) * tz  # the trilinear blend, kept open: its partial sums give the gradient
    inv_len = pf[s, F_INV_VOXEL] / cell
    # derivatives of the trilinear interpolant
    dx0 = (v100 - v000) + ((v110 - v010) - (v100 - v000)) * ty
    dx1 = (v101 - v001) + ((v111 - v011) - (v101 - v001)) * ty
    gx = (dx0 + (dx1 - dx0) * tz) * inv_len
    gy = ((b - a) + ((d - c) - (b - a)) * tz) * inv_len
    gz = (f - e) * inv_len
    if ox != 0.0 or oy != 0.0 or oz != 0.0:
        dist = math.sqrt(ox * ox + oy * oy + oz * oz)
        phi += dist
        # along clamped axes the interpolant does not vary; the distance term does
        if ox != 0.0:
            gx = 0.0
        if oy != 0.0:
            gy = 0.0
        if oz != 0.0:
            gz = 0.0
        gx += ox / dist
        gy += oy / dist
        gz += oz / dist
    return phi, gx, gy, gz


@device_fn
def sdf_grid_phi(s, ix, iy, iz, pf, pi, slots, coarse, a32, a16, a8):
    """φ of packed shape ``s`` at its grid sample (ix, iy, iz), 0 <= i <= n."""
    slot, lx, ly, lz, c000, c100, c010, c110, c001, c101, c011, c111 = sdf_grid_brick(
        s, ix, iy, iz, pf, pi, slots, coarse, a32, a16, a8)
    return sdf_grid_brick_value(s, slot, lx, ly, lz, c000, c100, c010, c110, c001, c101, c011, c111, pf, pi, a32,
                                a16, a8)


@device_fn
def sdf_slopes(s, x, y, z, reach, pf, pi, coarse):
    """Bounds (gx, gy, gz) on |∂φ/∂x_i| of packed shape ``s`` over the cube of half edge
    ``reach`` around local (x, y, z): the largest bounds of the bricks it overlaps.

    Outside the box the returned field adds the distance to the box, whose slopes are at most
    1; every slope of interpolated distance samples is at most 1 (plus rounding), which also
    serves when the cube would span too many bricks to visit.
    """
    h = pf[s, F_VOXEL]
    fallback = 1.0 + pf[s, F_SCALE] / h
    r = reach / h
    gx = (x - pf[s, F_ORIGIN]) / h
    gy = (y - pf[s, F_ORIGIN + 1]) / h
    gz = (z - pf[s, F_ORIGIN + 2]) / h
    if r > 8.0:
        return fallback, fallback, fallback
    nx = pi[s, I_RES]
    ny = pi[s, I_RES + 1]
    nz = pi[s, I_RES + 2]
    leaves = gx - r < 0.0 or gy - r < 0.0 or gz - r < 0.0 or gx + r > nx or gy + r > ny or gz + r > nz
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    nbz = pi[s, I_BRICKS + 2]
    # brick ranges of the cube, clamped into the box (the outside adds slopes of at most 1)
    x0 = min(max(int(math.floor((gx - r) * 0.125)), 0), nbx - 1)
    x1 = min(max(int(math.floor((gx + r) * 0.125)), 0), nbx - 1)
    y0 = min(max(int(math.floor((gy - r) * 0.125)), 0), nby - 1)
    y1 = min(max(int(math.floor((gy + r) * 0.125)), 0), nby - 1)
    z0 = min(max(int(math.floor((gz - r) * 0.125)), 0), nbz - 1)
    z1 = min(max(int(math.floor((gz + r) * 0.125)), 0), nbz - 1)
    sx = 0.0
    sy = 0.0
    sz = 0.0
    base = pi[s, I_SLOPES_OFFSET]
    for bz in range(z0, z1 + 1):
        for by in range(y0, y1 + 1):
            for bx in range(x0, x1 + 1):
                k = base + 3 * ((bz * nby + by) * nbx + bx)
                sx = max(sx, float(coarse[k]))
                sy = max(sy, float(coarse[k + 1]))
                sz = max(sz, float(coarse[k + 2]))
    if leaves:
        sx = max(sx, 1.0)
        sy = max(sy, 1.0)
        sz = max(sz, 1.0)
    return sx, sy, sz


@device_fn
def sdf_brick_slopes(s, x, y, z, pf, pi, coarse):
    """Bounds (gx, gy, gz) on |∂φ/∂x_i| over the brick holding local (x, y, z), inside the box:
    valid for any region inside that brick (a cell of the shape's own grid)."""
    h = pf[s, F_VOXEL]
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    bx = min(int((x - pf[s, F_ORIGIN]) / h) >> 3, nbx - 1)
    by = min(int((y - pf[s, F_ORIGIN + 1]) / h) >> 3, nby - 1)
    bz = min(int((z - pf[s, F_ORIGIN + 2]) / h) >> 3, pi[s, I_BRICKS + 2] - 1)
    k = pi[s, I_SLOPES_OFFSET] + 3 * ((bz * nby + by) * nbx + bx)
    return float(coarse[k]), float(coarse[k + 1]), float(coarse[k + 2])


# --------------------------------------------------------------------------------------------
# Sampling kernels


@device_fn
def _sample_phi_item(i, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out):
    phi_out[i] = sdf_phi(shape_ids[i], points[i, 0], points[i, 1], points[i, 2], pf, pi, slots, coarse, a32, a16, a8)


@cpu_kernel
def _sample_phi_cpu(n, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out):
    for i in prange(n):
        _sample_phi_item(i, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out)


@cuda_kernel
def _sample_phi_cuda(n, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out):
    i = cuda.grid(1)
    if i < n:
        _sample_phi_item(i, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out)


@device_fn
def _sample_grad_item(i, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out, grad_out):
    phi, gx, gy, gz = sdf_phi_grad(shape_ids[i], points[i, 0], points[i, 1], points[i, 2],
                                   pf, pi, slots, coarse, a32, a16, a8)
    phi_out[i] = phi
    grad_out[i, 0] = gx
    grad_out[i, 1] = gy
    grad_out[i, 2] = gz


@cpu_kernel
def _sample_grad_cpu(n, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out, grad_out):
    for i in prange(n):
        _sample_grad_item(i, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out, grad_out)


@cuda_kernel
def _sample_grad_cuda(n, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out, grad_out):
    i = cuda.grid(1)
    if i < n:
        _sample_grad_item(i, shape_ids, points, pf, pi, slots, coarse, a32, a16, a8, phi_out, grad_out)


SAMPLE_PHI = KernelPair("sdf.sample_phi", _sample_phi_cpu, _sample_phi_cuda)
SAMPLE_PHI_GRAD = KernelPair("sdf.sample_phi_grad", _sample_grad_cpu, _sample_grad_cuda)
