"""Sampling a packed SDF on the device: φ, ∇φ, grid samples and slope bounds (device helpers),
and the kernels that sample many points at once.

Sampling is trilinear in a fine brick and trilinear on the coarse grid elsewhere; outside the
box it returns φ(clamped point) + distance to the box, a valid upper bound.
"""

from __future__ import annotations

import math

from ..backend import device_fn, kernel
from ..geometry.mesh_distance import _closest_on_triangle
from ..geometry.primitives import primitive_phi3
from .layout import (B_CURVED, B_EXACT_GAP, BRICK, BRICK_BOUNDS, BRICK_SAMPLES, BRICK_SHIFT, CELLS_PER_EDGE, F_INV_VOXEL,
                     F_OFFSET, F_ORIGIN, F_PRIMITIVE, F_SCALE, F_VOXEL, FORMAT_FLOAT32, FORMAT_UINT16, I_ATLAS_OFFSET,
                     I_BRICKS, I_COARSE_OFFSET, I_FORMAT, I_MESH, I_PRIMITIVE, I_RES, I_SLOPES_OFFSET, I_SLOT_OFFSET,
                     INV_BRICK, MESH_CELL, MESH_CELL_SHIFT, MESH_TRI_BALL, MESH_TRI_PLANE, SAMPLES_PER_BRICK)


@device_fn(inline=True)
def _fine_value(fmt, idx, scale, offset, sdf):
    if fmt == FORMAT_UINT16:
        return offset + scale * float(sdf.atlas_u16[idx])
    if fmt == FORMAT_FLOAT32:
        return float(sdf.atlas_f32[idx])
    return offset + scale * float(sdf.atlas_u8[idx])


@device_fn(inline=True)
def _corner_values(values, base, sy, sz):
    """The 8 corners of the cell whose lowest sample is values[base], in rows of ``sy`` and layers
    of ``sz`` samples: (v000, v100, v010, v110, v001, v101, v011, v111)."""
    return (float(values[base]), float(values[base + 1]), float(values[base + sy]), float(values[base + sy + 1]),
            float(values[base + sz]), float(values[base + sz + 1]), float(values[base + sz + sy]),
            float(values[base + sz + sy + 1]))


@device_fn(inline=True)
def _dequantized(c, scale, offset):
    """Stored integer corners ``c`` (8) as distances: offset + scale · q."""
    return (offset + scale * c[0], offset + scale * c[1], offset + scale * c[2], offset + scale * c[3],
            offset + scale * c[4], offset + scale * c[5], offset + scale * c[6], offset + scale * c[7])


@device_fn(inline=True)
def _cell_corners(s, ix, iy, iz, sdf, fine_cell):
    """The 8 corner values of a cell. Returns (v000, v100, v010, v110, v001, v101, v011, v111).

    With ``fine_cell`` >= 0 the cell is voxel (ix, iy, iz) of that fine brick slot; otherwise
    it is the coarse cell of brick (ix, iy, iz).
    """
    pf = sdf.params_f
    pi = sdf.params_i
    if fine_cell >= 0:
        fmt = pi[s, I_FORMAT]
        base = (pi[s, I_ATLAS_OFFSET] + fine_cell * SAMPLES_PER_BRICK + (iz * BRICK_SAMPLES + iy) * BRICK_SAMPLES
                + ix)
        sy = BRICK_SAMPLES
        sz = BRICK_SAMPLES * BRICK_SAMPLES
        if fmt == FORMAT_UINT16:
            return _dequantized(_corner_values(sdf.atlas_u16, base, sy, sz), pf[s, F_SCALE], pf[s, F_OFFSET])
        if fmt == FORMAT_FLOAT32:
            return _corner_values(sdf.atlas_f32, base, sy, sz)
        return _dequantized(_corner_values(sdf.atlas_u8, base, sy, sz), pf[s, F_SCALE], pf[s, F_OFFSET])
    cx = pi[s, I_BRICKS] + 1
    cy = pi[s, I_BRICKS + 1] + 1
    base = pi[s, I_COARSE_OFFSET] + (iz * cy + iy) * cx + ix
    return _corner_values(sdf.coarse, base, cx, cx * cy)


@device_fn(inline=True)
def _grid_coords(s, x, y, z, sdf):
    """Local (x, y, z) of packed shape ``s`` in voxel units from its grid's origin, and the grid's
    cells per axis: (gx, gy, gz, nx, ny, nz)."""
    pf = sdf.params_f
    pi = sdf.params_i
    inv = pf[s, F_INV_VOXEL]
    return ((x - pf[s, F_ORIGIN]) * inv, (y - pf[s, F_ORIGIN + 1]) * inv, (z - pf[s, F_ORIGIN + 2]) * inv,
            pi[s, I_RES], pi[s, I_RES + 1], pi[s, I_RES + 2])


@device_fn(inline=True)
def _locate(s, x, y, z, sdf):
    """Clamp a local point into the box and find its cell.

    Returns (ix, iy, iz, fine_slot, tx, ty, tz, cell_size, outside_x, outside_y, outside_z):
    the cell indices (voxel within the brick, or the brick for a coarse cell), the brick's fine
    slot (−1: coarse), the fractions inside the cell, the cell edge in voxels (1 or BRICK) and the
    offset from the clamped point to the query point (zero inside the box).
    """
    pf = sdf.params_f
    pi = sdf.params_i
    gx, gy, gz, nx, ny, nz = _grid_coords(s, x, y, z, sdf)
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
    bx = min(int(cgx) >> BRICK_SHIFT, nbx - 1)
    by = min(int(cgy) >> BRICK_SHIFT, nby - 1)
    bz = min(int(cgz) >> BRICK_SHIFT, nbz - 1)
    ux = cgx - BRICK * bx
    uy = cgy - BRICK * by
    uz = cgz - BRICK * bz
    slot = sdf.slots[pi[s, I_SLOT_OFFSET] + (bz * nby + by) * nbx + bx]
    if slot >= 0:
        cx = min(int(ux), BRICK - 1)
        cy = min(int(uy), BRICK - 1)
        cz = min(int(uz), BRICK - 1)
        return cx, cy, cz, slot, ux - cx, uy - cy, uz - cz, 1.0, ox, oy, oz
    return bx, by, bz, -1, ux * INV_BRICK, uy * INV_BRICK, uz * INV_BRICK, float(BRICK), ox, oy, oz


@device_fn(inline=True)
def _trilerp_steps(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz):
    """The partial blends of trilinear interpolation: (a, b, c, d) along x, (e, f) along y;
    the value is ``e + (f − e)·tz`` and the partial sums give the gradient."""
    a = v000 + (v100 - v000) * tx
    b = v010 + (v110 - v010) * tx
    c = v001 + (v101 - v001) * tx
    d = v011 + (v111 - v011) * tx
    return a, b, c, d, a + (b - a) * ty, c + (d - c) * ty


@device_fn(inline=True)
def trilerp(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz):
    """Trilinear interpolation of a cell's corners at fractions (tx, ty, tz)."""
    a, b, c, d, e, f = _trilerp_steps(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz)
    return e + (f - e) * tz


@device_fn(inline=True)
def sdf_phi(s, x, y, z, sdf):
    """φ of packed shape ``s`` at local point (x, y, z)."""
    ix, iy, iz, slot, tx, ty, tz, cell, ox, oy, oz = _locate(s, x, y, z, sdf)
    v000, v100, v010, v110, v001, v101, v011, v111 = _cell_corners(s, ix, iy, iz, sdf, slot)
    phi = trilerp(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz)
    if ox != 0.0 or oy != 0.0 or oz != 0.0:
        phi += math.sqrt(ox * ox + oy * oy + oz * oz)
    return phi


@device_fn(inline=True)
def sdf_phi_reuse(s, x, y, z, sdf, key_slot, key_x, key_y, key_z, v000, v100, v010, v110, v001, v101, v011, v111):
    """:func:`sdf_phi` for a run of nearby points: the corner values of the previous point's cell
    (and its key: slot, cell indices) are passed in and reused when the cell is the same.

    Returns (phi, slot, ix, iy, iz, v000, …, v111) to pass on to the next call; start with
    ``key_slot = -2``.
    """
    ix, iy, iz, slot, tx, ty, tz, cell, ox, oy, oz = _locate(s, x, y, z, sdf)
    if slot != key_slot or ix != key_x or iy != key_y or iz != key_z:
        v000, v100, v010, v110, v001, v101, v011, v111 = _cell_corners(s, ix, iy, iz, sdf, slot)
    phi = trilerp(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz)
    if ox != 0.0 or oy != 0.0 or oz != 0.0:
        phi += math.sqrt(ox * ox + oy * oy + oz * oz)
    return phi, slot, ix, iy, iz, v000, v100, v010, v110, v001, v101, v011, v111


@device_fn(inline=True)
def sdf_grid_brick(s, i, j, k, sdf):
    """The brick holding grid sample (i, j, k) and what reading its samples needs:
    (slot, lx, ly, lz, c000, …, c111) with (lx, ly, lz) the sample within the brick (0..BRICK)
    and, for a coarse brick (slot −1), its 8 coarse corners (zeros for a fine one)."""
    pi = sdf.params_i
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    nbz = pi[s, I_BRICKS + 2]
    bx = min(i >> BRICK_SHIFT, nbx - 1)
    by = min(j >> BRICK_SHIFT, nby - 1)
    bz = min(k >> BRICK_SHIFT, nbz - 1)
    slot = sdf.slots[pi[s, I_SLOT_OFFSET] + (bz * nby + by) * nbx + bx]
    if slot >= 0:
        return slot, i - BRICK * bx, j - BRICK * by, k - BRICK * bz, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    c000, c100, c010, c110, c001, c101, c011, c111 = _cell_corners(s, bx, by, bz, sdf, -1)
    return slot, i - BRICK * bx, j - BRICK * by, k - BRICK * bz, c000, c100, c010, c110, c001, c101, c011, c111


@device_fn(inline=True)
def sdf_grid_brick_value(s, slot, lx, ly, lz, c000, c100, c010, c110, c001, c101, c011, c111, sdf):
    """φ at sample (lx, ly, lz) (0..BRICK) of the brick described by :func:`sdf_grid_brick`."""
    if slot >= 0:
        pi = sdf.params_i
        idx = pi[s, I_ATLAS_OFFSET] + slot * SAMPLES_PER_BRICK + (lz * BRICK_SAMPLES + ly) * BRICK_SAMPLES + lx
        return _fine_value(pi[s, I_FORMAT], idx, sdf.params_f[s, F_SCALE], sdf.params_f[s, F_OFFSET], sdf)
    return trilerp(c000, c100, c010, c110, c001, c101, c011, c111, lx * INV_BRICK, ly * INV_BRICK, lz * INV_BRICK)


@device_fn(inline=True)
def sdf_phi_grad(s, x, y, z, sdf):
    """φ and ∇φ of packed shape ``s`` at local point (x, y, z): (phi, gx, gy, gz)."""
    ix, iy, iz, slot, tx, ty, tz, cell, ox, oy, oz = _locate(s, x, y, z, sdf)
    v000, v100, v010, v110, v001, v101, v011, v111 = _cell_corners(s, ix, iy, iz, sdf, slot)
    a, b, c, d, e, f = _trilerp_steps(v000, v100, v010, v110, v001, v101, v011, v111, tx, ty, tz)
    phi = e + (f - e) * tz
    inv_len = sdf.params_f[s, F_INV_VOXEL] / cell
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


@device_fn(inline=True)
def sdf_grid_phi(s, ix, iy, iz, sdf):
    """φ of packed shape ``s`` at its grid sample (ix, iy, iz), 0 <= i <= n."""
    slot, lx, ly, lz, c000, c100, c010, c110, c001, c101, c011, c111 = sdf_grid_brick(s, ix, iy, iz, sdf)
    return sdf_grid_brick_value(s, slot, lx, ly, lz, c000, c100, c010, c110, c001, c101, c011, c111, sdf)


@device_fn(inline=True)
def _brick_range(g, r, nb):
    """The bricks ``b0 .. b1`` (clamped into 0 .. nb−1) that grid interval g ± r overlaps."""
    b0 = min(max(int(math.floor((g - r) * INV_BRICK)), 0), nb - 1)
    b1 = min(max(int(math.floor((g + r) * INV_BRICK)), 0), nb - 1)
    return b0, b1


@device_fn(inline=True)
def sdf_slopes(s, x, y, z, reach, sdf):
    """Bounds (gx, gy, gz) on |∂φ/∂x_i| of packed shape ``s`` over the cube of half edge
    ``reach`` around local (x, y, z): the largest bounds of the bricks it overlaps; the largest
    exact-to-stored gap of those bricks (:data:`~hydro.sdf.layout.B_EXACT_GAP`); and whether the
    exact field may be curved in any of them (:data:`~hydro.sdf.layout.B_CURVED`, 1.0, else 0.0):
    (gx, gy, gz, gap, curved).

    Outside the box the returned field adds the distance to the box, whose slopes are at most
    1; every slope of interpolated distance samples is at most 1 (plus rounding), which also
    serves when the cube would span too many bricks to visit (the gap is then the Lipschitz
    bound of the cube, twice its half diagonal).
    """
    pf = sdf.params_f
    pi = sdf.params_i
    h = pf[s, F_VOXEL]
    fallback = 1.0 + pf[s, F_SCALE] / h
    r = reach / h
    gx = (x - pf[s, F_ORIGIN]) / h
    gy = (y - pf[s, F_ORIGIN + 1]) / h
    gz = (z - pf[s, F_ORIGIN + 2]) / h
    if r > BRICK:
        return fallback, fallback, fallback, 4.0 * reach, 1.0
    nx = pi[s, I_RES]
    ny = pi[s, I_RES + 1]
    nz = pi[s, I_RES + 2]
    leaves = gx - r < 0.0 or gy - r < 0.0 or gz - r < 0.0 or gx + r > nx or gy + r > ny or gz + r > nz
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    # brick ranges of the cube, clamped into the box (the outside adds slopes of at most 1)
    x0, x1 = _brick_range(gx, r, nbx)
    y0, y1 = _brick_range(gy, r, nby)
    z0, z1 = _brick_range(gz, r, pi[s, I_BRICKS + 2])
    sx = 0.0
    sy = 0.0
    sz = 0.0
    gap = 0.0
    curved = 0.0
    base = pi[s, I_SLOPES_OFFSET]
    coarse = sdf.coarse
    for bz in range(z0, z1 + 1):
        for by in range(y0, y1 + 1):
            for bx in range(x0, x1 + 1):
                k = base + BRICK_BOUNDS * ((bz * nby + by) * nbx + bx)
                sx = max(sx, float(coarse[k]))
                sy = max(sy, float(coarse[k + 1]))
                sz = max(sz, float(coarse[k + 2]))
                gap = max(gap, float(coarse[k + B_EXACT_GAP]))
                curved = max(curved, float(coarse[k + B_CURVED]))
    if leaves:
        sx = max(sx, 1.0)
        sy = max(sy, 1.0)
        sz = max(sz, 1.0)
        curved = 1.0  # outside the box: the distance to the box is added
    return sx, sy, sz, gap, curved


@device_fn(inline=True)
def sdf_brick_slopes(s, x, y, z, sdf):
    """Bounds (gx, gy, gz) on |∂φ/∂x_i| over the brick holding local (x, y, z), inside the box,
    the brick's exact-to-stored gap and its curved flag: (gx, gy, gz, gap, curved), valid for any
    region inside that brick (a cell of the shape's own grid)."""
    pf = sdf.params_f
    pi = sdf.params_i
    h = pf[s, F_VOXEL]
    nbx = pi[s, I_BRICKS]
    nby = pi[s, I_BRICKS + 1]
    bx = min(int((x - pf[s, F_ORIGIN]) / h) >> BRICK_SHIFT, nbx - 1)
    by = min(int((y - pf[s, F_ORIGIN + 1]) / h) >> BRICK_SHIFT, nby - 1)
    bz = min(int((z - pf[s, F_ORIGIN + 2]) / h) >> BRICK_SHIFT, pi[s, I_BRICKS + 2] - 1)
    k = pi[s, I_SLOPES_OFFSET] + BRICK_BOUNDS * ((bz * nby + by) * nbx + bx)
    return (float(sdf.coarse[k]), float(sdf.coarse[k + 1]), float(sdf.coarse[k + 2]),
            float(sdf.coarse[k + B_EXACT_GAP]), float(sdf.coarse[k + B_CURVED]))


@device_fn(inline=True)
def primitive_field_phi(s, x, y, z, sdf):
    """The exact distance of packed shape ``s``, a primitive (``I_PRIMITIVE`` ≥ 0), at local
    (x, y, z): one call that passes only scalars."""
    pf = sdf.params_f
    return primitive_phi3(sdf.params_i[s, I_PRIMITIVE], pf[s, F_PRIMITIVE], pf[s, F_PRIMITIVE + 1],
                          pf[s, F_PRIMITIVE + 2], x, y, z)


#: Beyond this many voxels from a mesh's surface its exact field takes the sign of the stored one:
#: the cell corners of a trilinear lookup lie within √3 voxels, a distance's samples change by at
#: most that much, so they all share the sign (a coarse brick's interpolant is within
#: ``coarse_tolerance`` ≤ 0.05 voxel of the fine one); nearer, the nearest feature's pseudo-normal
MESH_GRID_SIGN_VOXELS = 2.0


@device_fn(inline=True)
def _mesh_cell(s, x, y, z, sdf):
    """The candidate list of the cell of MESH_CELL³ voxels of packed mesh shape ``s`` that holds
    local (x, y, z), and the point's offset from the cell's centre: (e0, e1, ox, oy, oz), the
    list ``mesh_ids[e0:e1]``; e0 == e1 where there is none (no exact field, outside the box, a
    brick or cell without a list)."""
    pf = sdf.params_f
    pi = sdf.params_i
    base = pi[s, I_MESH]
    if base < 0:
        return 0, 0, 0.0, 0.0, 0.0
    h = pf[s, F_VOXEL]
    gx, gy, gz, nx, ny, nz = _grid_coords(s, x, y, z, sdf)
    if not (gx >= 0.0 and gy >= 0.0 and gz >= 0.0 and gx <= nx and gy <= ny and gz <= nz):
        return 0, 0, 0.0, 0.0, 0.0
    ix = min(int(gx), nx - 1)
    iy = min(int(gy), ny - 1)
    iz = min(int(gz), nz - 1)
    bx = ix >> BRICK_SHIFT
    by = iy >> BRICK_SHIFT
    bz = iz >> BRICK_SHIFT
    row = sdf.mesh_index[base + (bz * pi[s, I_BRICKS + 1] + by) * pi[s, I_BRICKS] + bx]
    if row < 0:
        return 0, 0, 0.0, 0.0, 0.0
    cx = (ix - BRICK * bx) >> MESH_CELL_SHIFT
    cy = (iy - BRICK * by) >> MESH_CELL_SHIFT
    cz = (iz - BRICK * bz) >> MESH_CELL_SHIFT
    k = row * (CELLS_PER_EDGE * CELLS_PER_EDGE * CELLS_PER_EDGE) + (cz * CELLS_PER_EDGE + cy) * CELLS_PER_EDGE + cx
    half = 0.5 * MESH_CELL
    ox = x - (pf[s, F_ORIGIN] + (BRICK * bx + MESH_CELL * cx + half) * h)
    oy = y - (pf[s, F_ORIGIN + 1] + (BRICK * by + MESH_CELL * cy + half) * h)
    oz = z - (pf[s, F_ORIGIN + 2] + (BRICK * bz + MESH_CELL * cz + half) * h)
    return sdf.mesh_cells[k], sdf.mesh_cells[k + 1], ox, oy, oz


@device_fn(inline=True)
def mesh_cell_affine(s, x, y, z, sdf):
    """Whether the exact field of packed mesh shape ``s`` is one face plane over the whole cell of
    MESH_CELL³ voxels (a marching-cubes block) that holds local (x, y, z): its list starts with a
    negative key (:func:`~hydro.sdf.mesh_field.mark_affine_cells`)."""
    e0, e1, ox, oy, oz = _mesh_cell(s, x, y, z, sdf)
    return e0 < e1 and sdf.mesh_key[e0] < 0.0


@device_fn(inline=True)
def mesh_field_phi_hint(s, x, y, z, sdf, hint, bound):
    """The exact signed distance of packed mesh shape ``s`` at local (x, y, z), from the candidate
    triangles listed for the cell of MESH_CELL³ voxels that holds the point (see
    :mod:`hydro.sdf.mesh_field`): the nearest of them is the mesh's nearest triangle (a cell lists
    every triangle within u + ρ of its centre: ρ its half diagonal, u the farthest its corners lie
    from the centre's nearest triangle), found in order of
    distance from the centre and stopped once the next one's lower bound exceeds the best. The sign
    is the stored field's where the distance exceeds :data:`MESH_GRID_SIGN_VOXELS` voxels, else the
    nearest feature's angle-weighted pseudo-normal. Outside the box, or in a cell without a list
    (deep inside, far outside), the stored field (:func:`sdf_phi`).

    Returns (φ, the nearest triangle, a lower bound on every other triangle's distance; −1 and 0
    where the stored field answered). A caller evaluating again near a point passes that triangle
    as ``hint`` with ``bound`` the returned bound less the distance moved (still a lower bound on
    every other triangle's distance, the distance being 1-Lipschitz): when the hint is within it,
    it is the nearest, found with one test instead of a search; else the search starts from it
    (−1: none)."""
    e0, e1, ox, oy, oz = _mesh_cell(s, x, y, z, sdf)
    if e0 == e1:
        return sdf_phi(s, x, y, z, sdf), -1, 0.0
    h = sdf.params_f[s, F_VOXEL]
    rho = math.sqrt(ox * ox + oy * oy + oz * oz)
    tri = sdf.mesh_tri
    best = math.inf  # the nearest distance so far (compared unsquared: no root per candidate)
    other = math.inf  # a lower bound on the distance of every triangle but the best
    best_t = -1
    best_f = 0
    qx = qy = qz = 0.0
    if hint >= 0:
        t = hint
        px, py, pz, feat = _closest_on_triangle(
            x, y, z, float(tri[t, 0]), float(tri[t, 1]), float(tri[t, 2]), float(tri[t, 3]), float(tri[t, 4]),
            float(tri[t, 5]), float(tri[t, 6]), float(tri[t, 7]), float(tri[t, 8]))
        best = math.sqrt((x - px) ** 2 + (y - py) ** 2 + (z - pz) ** 2)
        best_t = t
        best_f = feat
        qx = px
        qy = py
        qz = pz
        if best <= bound:
            other = bound
            e1 = e0  # certified: no search
        # else a search that starts from it (its distance prunes the list at once)
    last = e0
    for e in range(e0, e1):
        last = e + 1
        lower = float(sdf.mesh_key[e]) - rho
        if lower >= best:
            other = min(other, lower)  # this one's, the rest's and every unlisted triangle's bound
            last = e0
            break
        t = sdf.mesh_ids[e]
        if t == hint:  # tested already
            continue
        # the triangle's plane first (a lower bound within the stored values' rounding: see
        # MESH_TRI_PLANE), which prunes the nearest triangle's neighbours
        plane = (abs(x * float(tri[t, MESH_TRI_PLANE]) + y * float(tri[t, MESH_TRI_PLANE + 1])
                     + z * float(tri[t, MESH_TRI_PLANE + 2]) - float(tri[t, MESH_TRI_PLANE + 3]))
                 - float(tri[t, MESH_TRI_PLANE + 4])) * (1.0 / (1.0 + 1e-6))
        if plane >= best:
            other = min(other, plane)
            continue
        # then its ball: farther than the best, it cannot be nearer
        bx_ = x - float(tri[t, MESH_TRI_BALL])
        by_ = y - float(tri[t, MESH_TRI_BALL + 1])
        bz_ = z - float(tri[t, MESH_TRI_BALL + 2])
        reach = float(tri[t, MESH_TRI_BALL + 3]) + best
        ball2 = bx_ * bx_ + by_ * by_ + bz_ * bz_
        if ball2 >= reach * reach:
            if ball2 < (float(tri[t, MESH_TRI_BALL + 3]) + other) ** 2:
                other = math.sqrt(ball2) - float(tri[t, MESH_TRI_BALL + 3])
            continue
        px, py, pz, feat = _closest_on_triangle(
            x, y, z, float(tri[t, 0]), float(tri[t, 1]), float(tri[t, 2]), float(tri[t, 3]), float(tri[t, 4]),
            float(tri[t, 5]), float(tri[t, 6]), float(tri[t, 7]), float(tri[t, 8]))
        d2 = (x - px) ** 2 + (y - py) ** 2 + (z - pz) ** 2
        if d2 < best * best:
            other = min(other, best)
            best = math.sqrt(d2)
            best_t = t
            best_f = feat
            qx = px
            qy = py
            qz = pz
        elif d2 < other * other:
            other = math.sqrt(d2)
    if last > e0:  # the whole list seen: the unlisted triangles lie beyond its last key
        other = min(other, float(sdf.mesh_key[last - 1]) - rho)
    d = best
    if d > MESH_GRID_SIGN_VOXELS * h:
        return (-d if sdf_phi(s, x, y, z, sdf) < 0.0 else d), best_t, other
    t = best_t
    if best_f == 0:  # the face: its normal
        ux = float(tri[t, 3]) - float(tri[t, 0])
        uy = float(tri[t, 4]) - float(tri[t, 1])
        uz = float(tri[t, 5]) - float(tri[t, 2])
        vx = float(tri[t, 6]) - float(tri[t, 0])
        vy = float(tri[t, 7]) - float(tri[t, 1])
        vz = float(tri[t, 8]) - float(tri[t, 2])
        mx = uy * vz - uz * vy
        my = uz * vx - ux * vz
        mz = ux * vy - uy * vx
    else:  # a vertex (features 1..3: columns 9..17) or an edge (4..6: columns 18..26)
        c = 9 + 3 * (best_f - 1)
        mx = float(tri[t, c])
        my = float(tri[t, c + 1])
        mz = float(tri[t, c + 2])
    if (x - qx) * mx + (y - qy) * my + (z - qz) * mz < 0.0:
        return -d, best_t, other
    return d, best_t, other


@device_fn(inline=False)
def mesh_face_alone(s, x, y, z, sdf, t, d, margin, tol):
    """Whether triangle ``t`` of packed mesh shape ``s``, nearest to local (x, y, z) at distance
    ``d``, is the only face there: every other listed triangle within d + ``margin`` of the point
    lies in t's plane (unit normals within 1e-5, the planes' values at the point within ``tol``: the
    triangles of one flat face). False where the cell has no list. A listed cell's list holds every
    triangle within d + ``LIST_SLACK`` voxels of any of its points (the build's bound, u + ρ + slack
    from its centre: see :mod:`~hydro.sdf.mesh_field`), so a ``margin`` below that slack is decided
    by the list alone."""
    e0, e1, ox, oy, oz = _mesh_cell(s, x, y, z, sdf)
    if e0 == e1:
        return False
    rho = math.sqrt(ox * ox + oy * oy + oz * oz)
    tri = sdf.mesh_tri
    tx, ty, tz, tc = corner_plane(tri, t)
    reach = d + margin
    for e in range(e0, e1):
        if float(sdf.mesh_key[e]) - rho > reach:
            return True  # this one and the rest lie farther
        u = sdf.mesh_ids[e]
        if u == t:
            continue
        px, py, pz, feat = _closest_on_triangle(
            x, y, z, float(tri[u, 0]), float(tri[u, 1]), float(tri[u, 2]), float(tri[u, 3]), float(tri[u, 4]),
            float(tri[u, 5]), float(tri[u, 6]), float(tri[u, 7]), float(tri[u, 8]))
        if (x - px) ** 2 + (y - py) ** 2 + (z - pz) ** 2 > reach * reach:
            continue
        ux, uy, uz, uc = corner_plane(tri, u)
        if (abs(ux - tx) > 1e-5 or abs(uy - ty) > 1e-5 or abs(uz - tz) > 1e-5
                or abs((ux - tx) * x + (uy - ty) * y + (uz - tz) * z + uc - tc) > tol):
            return False
    return True  # the list's end: every unlisted triangle lies beyond d + LIST_SLACK·h > d + margin


@device_fn(inline=True)
def corner_plane(tri, t):
    """Triangle ``t``'s plane (unit n, c: n·x + c its signed distance) from its stored corners."""
    x0 = float(tri[t, 0])
    y0 = float(tri[t, 1])
    z0 = float(tri[t, 2])
    ux = float(tri[t, 3]) - x0
    uy = float(tri[t, 4]) - y0
    uz = float(tri[t, 5]) - z0
    vx = float(tri[t, 6]) - x0
    vy = float(tri[t, 7]) - y0
    vz = float(tri[t, 8]) - z0
    nx = uy * vz - uz * vy
    ny = uz * vx - ux * vz
    nz = ux * vy - uy * vx
    length = math.sqrt(nx * nx + ny * ny + nz * nz)
    if not length > 0.0:
        return 0.0, 0.0, 0.0, 0.0
    nx /= length
    ny /= length
    nz /= length
    return nx, ny, nz, -(nx * x0 + ny * y0 + nz * z0)


@device_fn(inline=True)
def mesh_field_phi(s, x, y, z, sdf):
    """The exact signed distance of packed mesh shape ``s`` at local (x, y, z)
    (:func:`mesh_field_phi_hint` without a hint)."""
    phi, t, other = mesh_field_phi_hint(s, x, y, z, sdf, -1, 0.0)
    return phi


@device_fn(inline=True)
def exact_field_phi(s, x, y, z, sdf):
    """The exact signed distance of packed shape ``s`` at local (x, y, z): a primitive's closed
    form, or a mesh's distance to its triangles (:func:`mesh_field_phi`)."""
    if sdf.params_i[s, I_PRIMITIVE] >= 0:
        return primitive_field_phi(s, x, y, z, sdf)
    return mesh_field_phi(s, x, y, z, sdf)


@device_fn(inline=True)
def field_phi_hint(s, x, y, z, sdf, exact, hint, bound):
    """:func:`field_phi` with a mesh's nearest-triangle hint (:func:`mesh_field_phi_hint`): (φ,
    the nearest triangle, the bound on the others; −1 and 0 where no mesh's triangles answered)."""
    if exact and sdf.params_i[s, I_PRIMITIVE] < 0:
        return mesh_field_phi_hint(s, x, y, z, sdf, hint, bound)
    if exact:
        return primitive_field_phi(s, x, y, z, sdf), -1, 0.0
    return sdf_phi(s, x, y, z, sdf), -1, 0.0


@device_fn(inline=True)
def field_phi(s, x, y, z, sdf, exact):
    """φ of packed shape ``s`` at local (x, y, z) as the pipeline evaluates it: the exact distance
    (:func:`exact_field_phi`) when ``exact`` is true, else the stored field (:func:`sdf_phi`).
    Inlined (a call would copy the SDFView); callers keep to one call site."""
    if exact:
        return exact_field_phi(s, x, y, z, sdf)
    return sdf_phi(s, x, y, z, sdf)


# --------------------------------------------------------------------------------------------
# Sampling kernels


@device_fn
def _sample_phi_item(i, shape_ids, points, sdf, phi_out):
    phi_out[i] = sdf_phi(shape_ids[i], points[i, 0], points[i, 1], points[i, 2], sdf)


@device_fn
def _exact_phi_item(i, shape_ids, points, sdf, phi_out):
    phi_out[i] = exact_field_phi(shape_ids[i], points[i, 0], points[i, 1], points[i, 2], sdf)


@device_fn
def _sample_grad_item(i, shape_ids, points, sdf, phi_out, grad_out):
    phi, gx, gy, gz = sdf_phi_grad(shape_ids[i], points[i, 0], points[i, 1], points[i, 2], sdf)
    phi_out[i] = phi
    grad_out[i, 0] = gx
    grad_out[i, 1] = gy
    grad_out[i, 2] = gz


@device_fn
def _grid_phi_item(g, s, lo_x, lo_y, lo_z, count_x, count_y, sdf, phi_out):
    # grid sample g of the box lo .. lo + count − 1, x fastest
    ix = lo_x + g % count_x
    iy = lo_y + (g // count_x) % count_y
    iz = lo_z + g // (count_x * count_y)
    phi_out[g] = sdf_grid_phi(s, ix, iy, iz, sdf)


# Model: sdf (SDFView); Data in: shape_ids, points (local) / a box of grid samples
# Data out: phi_out (and grad_out)
SAMPLE_PHI = kernel("sdf.sample_phi", _sample_phi_item)
EXACT_PHI = kernel("sdf.exact_phi", _exact_phi_item)
SAMPLE_PHI_GRAD = kernel("sdf.sample_phi_grad", _sample_grad_item)
GRID_PHI = kernel("sdf.grid_phi", _grid_phi_item)
