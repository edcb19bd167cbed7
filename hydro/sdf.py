"""Sparse narrow-band signed distance fields: build, pack and sample.

Layout of one shape's field (its local frame):

- a grid of ``resolution = (nx, ny, nz)`` voxels of edge ``voxel_size`` starting at
  ``origin``; every count is a multiple of 8, so the grid splits into bricks of 8³ voxels;
- a *coarse grid*: one float32 sample per brick corner over the whole box;
- *fine bricks*: 9³ samples (faces shared with neighbours are duplicated) for the bricks that
  lie in the narrow band and that the coarse grid cannot reproduce within tolerance, stored
  in ``texture_format`` (``uint8``/``uint16`` quantise the band range linearly, rounding;
  ``float32`` stores values as they are);
- a slot table mapping each brick to its fine slot, or −1 for "coarse".

Sampling is trilinear in a fine brick and trilinear on the coarse grid elsewhere; outside the
box it returns φ(clamped point) + distance to the box, a valid upper bound. Several shapes are
packed into one :class:`SDFPack` so a single kernel launch can sample any of them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numba import cuda, njit, prange

from .backend import KernelPair, cpu_kernel, cuda_kernel, device_fn, get_device
from .geometry import MESH, Geometry

BRICK = 8  # voxels per brick edge
BRICK_SAMPLES = BRICK + 1
SAMPLES_PER_BRICK = BRICK_SAMPLES**3
FORMATS = ("float32", "uint16", "uint8")
FORMAT_CODES = {"float32": 0, "uint16": 1, "uint8": 2}
FORMAT_DTYPES = {"float32": np.float32, "uint16": np.uint16, "uint8": np.uint8}
DEFAULT_PADDING_VOXELS = 4


@dataclass(frozen=True)
class SDFSettings:
    """How a shape's SDF is built (the per-shape ``newton:sdf*`` attributes).

    | field | meaning |
    |---|---|
    | ``max_resolution`` | voxels along the longest padded axis; a positive multiple of 8 |
    | ``target_voxel_size`` | m; when set and > 0 it decides the grid instead |
    | ``narrow_band_inner`` | m, < 0: how deep inside the surface fine samples are kept |
    | ``narrow_band_outer`` | m, > 0: how far outside the surface fine samples are kept |
    | ``padding`` | m added around the shape's bounds; ``None``: 4 voxels (1 below 32) |
    | ``texture_format`` | ``"uint8"``, ``"uint16"`` or ``"float32"`` storage of fine samples |
    | ``coarse_tolerance`` | voxels: a band brick stays coarse when trilinear interpolation |
    |  | of the coarse grid is within this of every exact sample |
    """

    max_resolution: int = 64
    target_voxel_size: float | None = None
    narrow_band_inner: float = -0.1
    narrow_band_outer: float = 0.1
    padding: float | None = None
    texture_format: str = "uint16"
    coarse_tolerance: float = 0.05

    def __post_init__(self):
        r = self.max_resolution
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r <= 0 or r % 8 != 0:
            raise ValueError(f"max_resolution must be a positive multiple of 8, got {r!r}")
        object.__setattr__(self, "max_resolution", int(r))
        if self.target_voxel_size is not None:
            t = float(self.target_voxel_size)
            if not math.isfinite(t):
                raise ValueError(f"target_voxel_size must be finite, got {self.target_voxel_size!r}")
            object.__setattr__(self, "target_voxel_size", t)
        inner = float(self.narrow_band_inner)
        outer = float(self.narrow_band_outer)
        if not math.isfinite(inner) or inner >= 0.0:
            raise ValueError(f"narrow_band_inner must be a finite number < 0, got {self.narrow_band_inner!r}")
        if not math.isfinite(outer) or outer <= 0.0:
            raise ValueError(f"narrow_band_outer must be a finite number > 0, got {self.narrow_band_outer!r}")
        object.__setattr__(self, "narrow_band_inner", inner)
        object.__setattr__(self, "narrow_band_outer", outer)
        if self.padding is not None:
            p = float(self.padding)
            if not math.isfinite(p) or p < 0.0:
                raise ValueError(f"padding must be a finite number >= 0, got {self.padding!r}")
            object.__setattr__(self, "padding", p)
        if self.texture_format not in FORMATS:
            raise ValueError(
                f"texture_format must be one of {', '.join(FORMATS)}, got {self.texture_format!r}"
            )
        c = float(self.coarse_tolerance)
        if not math.isfinite(c) or c < 0.0:
            raise ValueError(f"coarse_tolerance must be a finite number >= 0, got {self.coarse_tolerance!r}")
        object.__setattr__(self, "coarse_tolerance", c)


def grid_layout(lo, hi, settings: SDFSettings, extra_padding: float = 0.0):
    """The grid for bounds ``lo..hi``: ``(origin, voxel_size, resolution, padding)``.

    The longest padded axis gets exactly ``max_resolution`` voxels (unless a positive
    ``target_voxel_size`` decides); every axis count is rounded up to a multiple of 8 and the
    box is centred on the shape's bounds.
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    size = hi - lo
    extra = float(extra_padding)
    tvs = settings.target_voxel_size
    if tvs is not None and tvs > 0.0:
        h = tvs
        pad = settings.padding if settings.padding is not None else DEFAULT_PADDING_VOXELS * h
        pad += extra
        n = np.maximum(8, np.ceil((size + 2 * pad) / h / 8.0 - 1e-9).astype(np.int64) * 8)
    else:
        n_max = settings.max_resolution
        longest = float(size.max())
        if settings.padding is None:
            pad_vox = DEFAULT_PADDING_VOXELS if n_max >= 32 else 1
            h = (longest + 2 * extra) / (n_max - 2 * pad_vox)
            pad = pad_vox * h + extra
        else:
            pad = settings.padding + extra
            h = (longest + 2 * pad) / n_max
        n = np.maximum(8, np.ceil((size + 2 * pad) / h / 8.0 - 1e-9).astype(np.int64) * 8)
        n = np.minimum(n, n_max)
    center = 0.5 * (lo + hi)
    origin = center - 0.5 * n * h
    return origin, float(h), tuple(int(v) for v in n), float(pad)


# ============================================================================================
# Device helpers: sampling a packed field

# Per-shape float parameters (row of SDFPack.params_f)
F_ORIGIN = 0  # 0..2
F_VOXEL = 3
F_INV_VOXEL = 4
F_SCALE = 5
F_OFFSET = 6
F_BAND_INNER = 7
F_BAND_OUTER = 8
F_JUMP = 9  # largest jump of the stored field (coarse error + half a quantisation step)
F_COUNT = 10
# Per-shape integer parameters (row of SDFPack.params_i)
I_RES = 0  # 0..2 voxels
I_BRICKS = 3  # 3..5 bricks
I_FORMAT = 6
I_SLOT_OFFSET = 7
I_COARSE_OFFSET = 8
I_ATLAS_OFFSET = 9
I_SLOPES_OFFSET = 10  # into the float32 ``coarse`` array: three slope bounds per brick
I_COUNT = 11


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


# ============================================================================================
# Building a field (CPU, once per shape)


@njit(parallel=True, cache=True)
def _brick_sample_points(origin, h, nb, bricks, out):
    """Sample positions of the given bricks, x fastest: out (len(bricks) * 729, 3)."""
    for k in prange(bricks.shape[0]):
        b = bricks[k]
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        base = k * 729
        for lz in range(9):
            for ly in range(9):
                for lx in range(9):
                    j = base + (lz * 9 + ly) * 9 + lx
                    out[j, 0] = origin[0] + (8 * bx + lx) * h
                    out[j, 1] = origin[1] + (8 * by + ly) * h
                    out[j, 2] = origin[2] + (8 * bz + lz) * h


@njit(parallel=True, cache=True)
def _coarse_mismatch(coarse, nb, bricks, values, tolerance, inner, outer, out_fine, out_error):
    """Flag the bricks to store fine: some exact sample lies in the band [inner, outer] and
    trilinear interpolation of the coarse grid misses some sample by more than ``tolerance``.
    ``out_error``: the largest miss of each brick (0 for bricks wholly outside the band)."""
    cx = nb[0] + 1
    cy = nb[1] + 1
    for k in prange(bricks.shape[0]):
        b = bricks[k]
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        c000 = coarse[(bz * cy + by) * cx + bx]
        c100 = coarse[(bz * cy + by) * cx + bx + 1]
        c010 = coarse[(bz * cy + by + 1) * cx + bx]
        c110 = coarse[(bz * cy + by + 1) * cx + bx + 1]
        c001 = coarse[((bz + 1) * cy + by) * cx + bx]
        c101 = coarse[((bz + 1) * cy + by) * cx + bx + 1]
        c011 = coarse[((bz + 1) * cy + by + 1) * cx + bx]
        c111 = coarse[((bz + 1) * cy + by + 1) * cx + bx + 1]
        in_band = False
        for j in range(k * 729, (k + 1) * 729):
            if values[j] >= inner and values[j] <= outer:
                in_band = True
                break
        if not in_band:
            out_fine[k] = False
            out_error[k] = 0.0
            continue
        worst = 0.0
        for lz in range(9):
            tz = lz / 8.0
            for ly in range(9):
                ty = ly / 8.0
                for lx in range(9):
                    tx = lx / 8.0
                    a = c000 + (c100 - c000) * tx
                    bb = c010 + (c110 - c010) * tx
                    c = c001 + (c101 - c001) * tx
                    d = c011 + (c111 - c011) * tx
                    e = a + (bb - a) * ty
                    f = c + (d - c) * ty
                    v = e + (f - e) * tz
                    worst = max(worst, abs(v - values[k * 729 + (lz * 9 + ly) * 9 + lx]))
        out_fine[k] = worst > tolerance
        out_error[k] = worst


@njit(parallel=True, cache=True)
def _brick_slopes(nb, h, slot, atlas_values, coarse, out):
    """Per brick and axis: the largest |∂φ/∂x_i| of the stored, trilinearly interpolated field.

    In a trilinear cell the partial derivative along axis i is a blend of that axis' four edge
    differences, so it never exceeds the largest |Δ|/spacing among them. A fine brick takes the
    max over its 8³ cells of its stored samples, a coarse one its single coarse cell. For
    samples of a true distance every slope is at most 1 (plus rounding); on a flat face the
    two in-plane slopes vanish, which is what keeps refinement tight there.
    """
    n = nb[0] * nb[1] * nb[2]
    for b in prange(n):
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        s = slot[b]
        gx = 0.0
        gy = 0.0
        gz = 0.0
        if s >= 0:
            for lz in range(9):
                for ly in range(9):
                    for lx in range(8):
                        gx = max(gx, abs(atlas_values[s, lz, ly, lx + 1] - atlas_values[s, lz, ly, lx]))
            for lz in range(9):
                for ly in range(8):
                    for lx in range(9):
                        gy = max(gy, abs(atlas_values[s, lz, ly + 1, lx] - atlas_values[s, lz, ly, lx]))
            for lz in range(8):
                for ly in range(9):
                    for lx in range(9):
                        gz = max(gz, abs(atlas_values[s, lz + 1, ly, lx] - atlas_values[s, lz, ly, lx]))
            out[b, 0] = gx / h
            out[b, 1] = gy / h
            out[b, 2] = gz / h
        else:
            for v in range(2):
                for u in range(2):
                    gx = max(gx, abs(coarse[bz + v, by + u, bx + 1] - coarse[bz + v, by + u, bx]))
                    gy = max(gy, abs(coarse[bz + v, by + 1, bx + u] - coarse[bz + v, by, bx + u]))
                    gz = max(gz, abs(coarse[bz + 1, by + v, bx + u] - coarse[bz, by + v, bx + u]))
            out[b, 0] = gx / (8.0 * h)
            out[b, 1] = gy / (8.0 * h)
            out[b, 2] = gz / (8.0 * h)


@njit(parallel=True, cache=True)
def _quantize(values, lo, scale_inv, levels, out):
    for i in prange(values.shape[0]):
        q = math.floor((values[i] - lo) * scale_inv + 0.5)
        out[i] = min(max(q, 0.0), levels)


def _primitive_phi_points(geometry: Geometry):
    from .geometry import _primitive_phi_many

    kind = geometry.kind
    params = geometry.params()

    def evaluate(points):
        out = np.empty(len(points))
        _primitive_phi_many(kind, params, points, out)
        return out

    return evaluate


@dataclass
class SDFMemory:
    """Bytes a field takes, beside what dense grids at the same resolution would take."""

    fine_bytes: int
    coarse_bytes: int
    slot_bytes: int
    dense_same_format_bytes: int
    dense_float32_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.fine_bytes + self.coarse_bytes + self.slot_bytes


@dataclass
class SDF:
    """One shape's sparse field. See the module docstring for the layout.

    | field | shape | meaning |
    |---|---|---|
    | ``origin`` | (3,) | m, local position of grid sample (0, 0, 0) |
    | ``voxel_size`` | | m |
    | ``resolution`` | (3,) | voxels per axis, multiples of 8 |
    | ``coarse`` | (bz+1, by+1, bx+1) | float32 samples at brick corners |
    | ``brick_slot`` | (bz, by, bx) | int32 fine slot per brick, −1 for coarse |
    | ``atlas`` | (F, 9, 9, 9) | fine samples (z, y, x order) in ``texture_format`` |
    | ``scale``, ``offset`` | | dequantisation: φ = offset + scale · q (float32: 1, 0) |
    | ``coarse_error`` | | m, largest miss of the coarse grid in a band brick left coarse (the |
    |  |  | field's only jump, where such a brick meets a fine one; <= coarse_tolerance) |
    | ``brick_slopes`` | (bz, by, bx, 3) | float32 bounds on |∂φ/∂x|, |∂φ/∂y|, |∂φ/∂z| of the stored |
    |  |  | field over the brick (each <= 1 for a distance) |
    """

    geometry: Geometry
    settings: SDFSettings
    origin: np.ndarray
    voxel_size: float
    resolution: tuple
    padding: float
    coarse: np.ndarray
    brick_slot: np.ndarray
    atlas: np.ndarray
    scale: float
    offset: float
    brick_slopes: np.ndarray
    coarse_error: float = 0.0
    build_seconds: float = 0.0
    band_bricks: int = 0
    _pack: "SDFPack | None" = field(default=None, repr=False)

    @property
    def bricks(self) -> tuple:
        return tuple(r // BRICK for r in self.resolution)

    @property
    def brick_count(self) -> int:
        b = self.bricks
        return b[0] * b[1] * b[2]

    @property
    def fine_brick_count(self) -> int:
        return int(self.atlas.shape[0])

    @property
    def box_lo(self) -> np.ndarray:
        return np.asarray(self.origin, dtype=float)

    @property
    def box_hi(self) -> np.ndarray:
        return self.box_lo + np.asarray(self.resolution) * self.voxel_size

    @property
    def quantization_step(self) -> float:
        """Largest rounding error of a stored fine sample (m); 0 for float32."""
        return 0.5 * self.scale if self.settings.texture_format != "float32" else 0.0

    def memory(self) -> SDFMemory:
        n_samples = int(np.prod(np.asarray(self.resolution) + 1))
        itemsize = np.dtype(FORMAT_DTYPES[self.settings.texture_format]).itemsize
        return SDFMemory(
            fine_bytes=int(self.atlas.nbytes),
            coarse_bytes=int(self.coarse.nbytes),
            slot_bytes=int(self.brick_slot.nbytes + self.brick_slopes.nbytes),
            dense_same_format_bytes=n_samples * itemsize,
            dense_float32_bytes=n_samples * 4,
        )

    def pack(self) -> "SDFPack":
        if self._pack is None:
            self._pack = SDFPack([self])
        return self._pack

    def sample(self, points, *, device="cpu") -> np.ndarray:
        """φ at local ``points`` (N, 3)."""
        return self.pack().sample(np.zeros(len(np.atleast_2d(points)), dtype=np.int32), points, device=device)

    def sample_grad(self, points, *, device="cpu"):
        """(φ, ∇φ) at local ``points`` (N, 3)."""
        return self.pack().sample_grad(np.zeros(len(np.atleast_2d(points)), dtype=np.int32), points, device=device)

    def grid_points(self) -> np.ndarray:
        """Local positions of every grid sample, (nz+1, ny+1, nx+1, 3)."""
        n = self.resolution
        axes = [self.origin[k] + np.arange(n[k] + 1) * self.voxel_size for k in range(3)]
        z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
        return np.stack([x, y, z], axis=-1)


def build_sdf(geometry: Geometry, settings: SDFSettings | None = None, *, extra_padding: float = 0.0) -> SDF:
    """Build the sparse narrow-band SDF of ``geometry`` (CPU).

    ``extra_padding`` (m) widens the box beyond ``settings.padding``, e.g. by the shape's
    contact margin and gap. Meshes must be watertight; other bad input raises ``ValueError``.
    """
    settings = settings or SDFSettings()
    if not isinstance(geometry, Geometry):
        raise ValueError(f"geometry must be a hydro Geometry, got {type(geometry).__name__}")
    if not geometry.volumetric:
        raise ValueError(f"a {geometry.kind_name} has no inside and cannot have an SDF")
    if not math.isfinite(extra_padding) or extra_padding < 0.0:
        raise ValueError(f"extra_padding must be a finite number >= 0, got {extra_padding!r}")
    t0 = time.perf_counter()
    if geometry.kind == MESH:
        from .mesh_sdf import MeshDistance

        evaluate = MeshDistance(geometry).signed_distance  # checks watertightness
    else:
        evaluate = _primitive_phi_points(geometry)
    lo, hi = geometry.local_aabb()
    origin, h, res, pad = grid_layout(lo, hi, settings, extra_padding)
    nb = np.array([r // BRICK for r in res], dtype=np.int64)
    n_bricks = int(nb.prod())

    # coarse grid: exact φ at every brick corner
    cz, cy, cx = (np.arange(nb[k] + 1) * BRICK * h + origin[k] for k in (2, 1, 0))
    Z, Y, X = np.meshgrid(cz, cy, cx, indexing="ij")
    coarse_pts = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    coarse = evaluate(coarse_pts).astype(np.float32)

    # bricks whose centre lies within band + half the brick diagonal of the surface
    b_idx = np.arange(n_bricks)
    centers = np.stack([
        origin[0] + (b_idx % nb[0] + 0.5) * BRICK * h,
        origin[1] + ((b_idx // nb[0]) % nb[1] + 0.5) * BRICK * h,
        origin[2] + (b_idx // (nb[0] * nb[1]) + 0.5) * BRICK * h,
    ], axis=1)
    phi_c = evaluate(centers)
    half_diag = 0.5 * math.sqrt(3.0) * BRICK * h
    inner, outer = settings.narrow_band_inner, settings.narrow_band_outer
    in_band = (phi_c - half_diag <= outer) & (phi_c + half_diag >= inner)
    band = b_idx[in_band].astype(np.int64)

    # exact samples of band bricks; keep the ones the coarse grid cannot reproduce
    pts = np.empty((len(band) * SAMPLES_PER_BRICK, 3))
    _brick_sample_points(np.asarray(origin, dtype=float), h, nb, band, pts)
    values = evaluate(pts)
    fine_flag = np.empty(len(band), dtype=np.bool_)
    miss = np.empty(len(band))
    _coarse_mismatch(coarse.astype(np.float64), nb, band, values, settings.coarse_tolerance * h,
                     inner, outer, fine_flag, miss)
    # the largest jump where a coarse band brick meets a fine one (at most coarse_tolerance)
    coarse_error = float(miss[~fine_flag].max()) if np.any(~fine_flag) else 0.0
    fine_bricks = band[fine_flag]
    values = values.reshape(len(band), SAMPLES_PER_BRICK)[fine_flag]

    slot = np.full(n_bricks, -1, dtype=np.int32)
    slot[fine_bricks] = np.arange(len(fine_bricks), dtype=np.int32)
    fmt = settings.texture_format
    if fmt == "float32":
        atlas = values.astype(np.float32)
        scale, offset = 1.0, 0.0
    else:
        # the band widened by half a brick diagonal, so in-band bricks are (almost) never clamped
        levels = float(np.iinfo(FORMAT_DTYPES[fmt]).max)
        q_lo = inner - half_diag
        scale = (outer - inner + 2.0 * half_diag) / levels
        offset = q_lo
        q = np.empty(values.size)
        _quantize(values.ravel(), q_lo, 1.0 / scale, levels, q)
        atlas = q.astype(FORMAT_DTYPES[fmt]).reshape(values.shape)
    atlas = atlas.reshape(-1, BRICK_SAMPLES, BRICK_SAMPLES, BRICK_SAMPLES)
    stored = atlas.astype(np.float64) * scale + offset if fmt != "float32" else atlas.astype(np.float64)
    coarse3 = coarse.reshape(nb[2] + 1, nb[1] + 1, nb[0] + 1)
    slopes = np.empty((n_bricks, 3))
    _brick_slopes(nb, h, slot, stored, coarse3.astype(np.float64), slopes)
    brick_slopes = (slopes * (1.0 + 1e-6) + 1e-9).astype(np.float32)
    return SDF(
        geometry=geometry,
        settings=settings,
        origin=np.asarray(origin, dtype=float),
        voxel_size=h,
        resolution=res,
        padding=pad,
        coarse=coarse3,
        brick_slot=slot.reshape(nb[2], nb[1], nb[0]),
        brick_slopes=brick_slopes.reshape(nb[2], nb[1], nb[0], 3),
        coarse_error=coarse_error,
        atlas=atlas,
        scale=float(scale),
        offset=float(offset),
        build_seconds=time.perf_counter() - t0,
        band_bricks=int(len(band)),
    )


# ============================================================================================
# Packing several fields for the kernels


class SDFPack:
    """Several shapes' fields concatenated so one kernel launch can sample any of them.

    | array | shape | meaning |
    |---|---|---|
    | ``params_f`` | (S, F_COUNT) float64 | origin, voxel size, its inverse, scale, offset, band |
    | ``params_i`` | (S, I_COUNT) int32 | resolution, bricks, format, offsets into the arrays below |
    | ``slots`` | (Σ bricks,) int32 | fine slot per brick, −1 coarse |
    | ``coarse`` | (Σ coarse samples + bricks,) float32 | each shape's coarse grid, then its |
    |  |  | per-brick slope bounds (3 per brick, at ``I_SLOPES_OFFSET``) |
    | ``atlas_f32`` / ``atlas_u16`` / ``atlas_u8`` | (Σ samples,) | fine samples by format |
    """

    def __init__(self, sdfs):
        sdfs = list(sdfs)
        n = len(sdfs)
        self.sdfs = sdfs
        pf = np.zeros((max(n, 1), F_COUNT))
        pi = np.zeros((max(n, 1), I_COUNT), dtype=np.int32)
        slots, coarse = [], []
        atlases = {"float32": [], "uint16": [], "uint8": []}
        atlas_len = {"float32": 0, "uint16": 0, "uint8": 0}
        slot_off = coarse_off = 0
        for s, sdf in enumerate(sdfs):
            fmt = sdf.settings.texture_format
            pf[s, F_ORIGIN : F_ORIGIN + 3] = sdf.origin
            pf[s, F_VOXEL] = sdf.voxel_size
            pf[s, F_INV_VOXEL] = 1.0 / sdf.voxel_size
            pf[s, F_SCALE] = sdf.scale
            pf[s, F_OFFSET] = sdf.offset
            pf[s, F_BAND_INNER] = sdf.settings.narrow_band_inner
            pf[s, F_BAND_OUTER] = sdf.settings.narrow_band_outer
            pf[s, F_JUMP] = (sdf.coarse_error + 0.5 * sdf.scale) * 1.0001 if sdf.settings.texture_format != "float32" \
                else sdf.coarse_error * 1.0001
            pi[s, I_RES : I_RES + 3] = sdf.resolution
            pi[s, I_BRICKS : I_BRICKS + 3] = sdf.bricks
            pi[s, I_FORMAT] = FORMAT_CODES[fmt]
            pi[s, I_SLOT_OFFSET] = slot_off
            pi[s, I_COARSE_OFFSET] = coarse_off
            pi[s, I_ATLAS_OFFSET] = atlas_len[fmt]
            pi[s, I_SLOPES_OFFSET] = coarse_off + sdf.coarse.size
            slots.append(sdf.brick_slot.ravel())
            coarse.append(sdf.coarse.ravel())
            coarse.append(sdf.brick_slopes.ravel())
            atlases[fmt].append(sdf.atlas.ravel())
            slot_off += sdf.brick_slot.size
            coarse_off += sdf.coarse.size + sdf.brick_slopes.size
            atlas_len[fmt] += sdf.atlas.size
        for fmt, total in atlas_len.items():
            if total >= 2**31:
                raise ValueError(f"the packed {fmt} fine samples exceed 2^31 entries; use fewer or coarser shapes")

        def cat(parts, dtype):
            return np.ascontiguousarray(np.concatenate(parts).astype(dtype, copy=False)) if parts else np.zeros(1, dtype)

        self.params_f = pf
        self.params_i = pi
        self.slots = cat(slots, np.int32)
        self.coarse = cat(coarse, np.float32)
        self.atlas_f32 = cat(atlases["float32"], np.float32)
        self.atlas_u16 = cat(atlases["uint16"], np.uint16)
        self.atlas_u8 = cat(atlases["uint8"], np.uint8)
        self._device_arrays = {}

    def __len__(self) -> int:
        return len(self.sdfs)

    def arrays(self, device="cpu") -> tuple:
        """``(params_f, params_i, slots, coarse, atlas_f32, atlas_u16, atlas_u8)`` on ``device``."""
        dev = get_device(device)
        if dev.name not in self._device_arrays:
            host = (self.params_f, self.params_i, self.slots, self.coarse, self.atlas_f32, self.atlas_u16, self.atlas_u8)
            self._device_arrays[dev.name] = tuple(dev.asarray(a) for a in host)
        return self._device_arrays[dev.name]

    def _points(self, shape_ids, points):
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        ids = np.ascontiguousarray(shape_ids, dtype=np.int32).reshape(-1)
        if len(ids) != len(pts):
            raise ValueError(f"shape_ids has {len(ids)} entries but points has {len(pts)}")
        if len(ids) and (ids.min() < 0 or ids.max() >= len(self)):
            raise ValueError(f"shape_ids must lie in [0, {len(self) - 1}]")
        if not np.all(np.isfinite(pts)):
            raise ValueError("points must be finite")
        return ids, pts

    def sample(self, shape_ids, points, *, device="cpu") -> np.ndarray:
        """φ of shape ``shape_ids[i]`` at its local point ``points[i]``."""
        dev = get_device(device)
        ids, pts = self._points(shape_ids, points)
        out = dev.full(len(pts), np.nan, np.float64)
        dev.launch(SAMPLE_PHI, len(pts), dev.asarray(ids), dev.asarray(pts), *self.arrays(dev), out)
        return dev.to_host(out)

    def sample_grad(self, shape_ids, points, *, device="cpu"):
        """(φ, ∇φ) of shape ``shape_ids[i]`` at its local point ``points[i]``."""
        dev = get_device(device)
        ids, pts = self._points(shape_ids, points)
        phi = dev.full(len(pts), np.nan, np.float64)
        grad = dev.full((len(pts), 3), np.nan, np.float64)
        dev.launch(SAMPLE_PHI_GRAD, len(pts), dev.asarray(ids), dev.asarray(pts), *self.arrays(dev), phi, grad)
        return dev.to_host(phi), dev.to_host(grad)


def report(sdf: SDF) -> str:
    """A human-readable summary of a built field (used by ``hydro sdf``)."""
    m = sdf.memory()
    nb = sdf.bricks
    lines = [
        f"shape        {sdf.geometry.kind_name} {getattr(sdf.geometry, 'name', '') if sdf.geometry.kind == MESH else ''}".rstrip(),
        f"grid         {sdf.resolution[0]} x {sdf.resolution[1]} x {sdf.resolution[2]} voxels, "
        f"voxel {sdf.voxel_size * 1e3:.4g} mm, padding {sdf.padding * 1e3:.4g} mm",
        f"box          [{', '.join(f'{v:.4g}' for v in sdf.box_lo)}] .. [{', '.join(f'{v:.4g}' for v in sdf.box_hi)}] m",
        f"band         [{sdf.settings.narrow_band_inner:g}, {sdf.settings.narrow_band_outer:g}] m, "
        f"format {sdf.settings.texture_format}",
        f"bricks       {nb[0]} x {nb[1]} x {nb[2]} = {sdf.brick_count}: {sdf.band_bricks} in the band, "
        f"{sdf.fine_brick_count} fine ({100.0 * sdf.fine_brick_count / sdf.brick_count:.1f}%)",
        f"memory       fine {m.fine_bytes / 1024:.1f} KiB + coarse {m.coarse_bytes / 1024:.1f} KiB + slots "
        f"{m.slot_bytes / 1024:.1f} KiB = {m.total_bytes / 1024:.1f} KiB",
        f"dense grid   {m.dense_float32_bytes / 1024:.1f} KiB float32 ({100.0 * m.total_bytes / m.dense_float32_bytes:.1f}% "
        f"of it), {m.dense_same_format_bytes / 1024:.1f} KiB {sdf.settings.texture_format} "
        f"({100.0 * m.total_bytes / m.dense_same_format_bytes:.1f}% of it)",
        f"build        {sdf.build_seconds * 1e3:.1f} ms",
    ]
    return "\n".join(lines)
