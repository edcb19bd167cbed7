"""Level sets of sampled fields as triangle meshes (NumPy; used for display and checks).

:func:`marching_cubes` is a vectorised twin of the pipeline's marching cubes: the same tables
(:mod:`hydro.contact.mc_tables`: case bit ``c`` set when corner ``c`` is negative, triangles wound so
their normals point toward increasing value), the same edge crossing
``t = −f0/(f1 − f0)`` (0.5 where the difference vanishes) clamped to ``[c, 1 − c]``. Vertices
are shared: one per crossed grid edge.

:func:`sdf_grid_values` reads an :class:`~hydro.sdf.SDF`'s stored values at its grid samples
through the kernels' own sampler (fine brick samples dequantised, trilinear coarse values
elsewhere), and :func:`sdf_level_set` meshes the surface ``φ = level`` of a shape in its local frame (the
zero level set is the shape as its SDF sees it; the narrow band edges are other levels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contact.mc_tables import CORNER_OFFSETS, EDGE_CORNERS, TRI_COUNT, TRI_EDGES
from ..errors import shown

__all__ = ["MarchingCubesMesh", "marching_cubes", "sdf_grid_values", "sdf_level_set", "mesh_area"]

# edge e of a cell: the offset (x, y, z) of its lower corner and its axis (0 x, 1 y, 2 z)
_EDGE_LOWER = CORNER_OFFSETS[EDGE_CORNERS[:, 0]].astype(np.int64)
_EDGE_AXIS = np.argmax(CORNER_OFFSETS[EDGE_CORNERS[:, 1]] - CORNER_OFFSETS[EDGE_CORNERS[:, 0]], axis=1)
_TRI_COUNT = TRI_COUNT.astype(np.int64)
_TRI_EDGES = TRI_EDGES.astype(np.int64)


@dataclass
class MarchingCubesMesh:
    """A level set of a sample grid.

    | field | shape | meaning |
    |---|---|---|
    | ``vertices`` | (V,3) | positions, in the grid's frame (``origin + spacing·index``) |
    | ``faces`` | (T,3) int64 | vertex indices, wound so ``cross(v1 − v0, v2 − v0)`` points toward increasing value |
    | ``vertex_lower`` | (V,) int64 | flat index (z, y, x order) of the crossed edge's lower sample |
    | ``vertex_upper`` | (V,) int64 | flat index of its upper sample |
    | ``vertex_t`` | (V,) | position along the edge, lower 0 → upper 1 |
    | ``face_cell`` | (T,) int64 | flat index (z, y, x order) of the cell of each face |

    Another field sampled on the same grid is carried to the vertices by
    :meth:`interpolate`.
    """

    vertices: np.ndarray
    faces: np.ndarray
    vertex_lower: np.ndarray
    vertex_upper: np.ndarray
    vertex_t: np.ndarray
    face_cell: np.ndarray

    def interpolate(self, values) -> np.ndarray:
        """``values`` (same grid shape) at the vertices, linearly along each crossed edge."""
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
        a = flat[self.vertex_lower]
        return a + self.vertex_t * (flat[self.vertex_upper] - a)


def mesh_area(vertices, faces) -> float:
    """Total area of a triangle mesh (m²)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(f) == 0:
        return 0.0
    return 0.5 * float(np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum())


def marching_cubes(values, *, origin=(0.0, 0.0, 0.0), spacing=1.0, clamp: float = 0.0,
                   cell_mask=None) -> MarchingCubesMesh:
    """The level set ``values == 0`` of samples ``values[k, j, i]`` at ``origin + spacing·(i, j, k)``.

    ``values`` has shape (nz+1, ny+1, nx+1) — the layout of :meth:`hydro.sdf.SDF.grid_points`.
    ``clamp`` (in [0, 0.5)) keeps edge crossings at least that fraction away from the edge's
    ends, as ``HydroelasticConfig.mc_edge_clamp_min`` does in the pipeline. ``cell_mask``
    (nz, ny, nx) bool, optional, restricts the cells meshed.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 3 or min(v.shape) < 2:
        raise ValueError(f"values must be a 3-D grid with at least 2 samples per axis, got shape {v.shape}")
    if not 0.0 <= clamp < 0.5:
        raise ValueError(f"clamp must lie in [0, 0.5), got {shown(clamp)}")
    origin = np.broadcast_to(np.asarray(origin, dtype=np.float64), (3,))
    spacing = np.broadcast_to(np.asarray(spacing, dtype=np.float64), (3,))
    nz, ny, nx = (s - 1 for s in v.shape)
    negative = v < 0.0
    cases = np.zeros((nz, ny, nx), dtype=np.int64)
    for c, (dx, dy, dz) in enumerate(CORNER_OFFSETS.tolist()):  # Python ints: no int8 overflow
        cases |= negative[dz:dz + nz, dy:dy + ny, dx:dx + nx].astype(np.int64) << c
    if cell_mask is not None:
        mask = np.asarray(cell_mask, dtype=bool)
        if mask.shape != cases.shape:
            raise ValueError(f"cell_mask must have shape {cases.shape}, got {mask.shape}")
        cases[~mask] = 0
    flat_cases = cases.reshape(-1)
    active = np.flatnonzero(_TRI_COUNT[flat_cases] > 0)
    counts = _TRI_COUNT[flat_cases[active]]
    n_tri = int(counts.sum())
    if n_tri == 0:
        empty_i = np.zeros(0, dtype=np.int64)
        return MarchingCubesMesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), empty_i, empty_i.copy(),
                                 np.zeros(0), empty_i.copy())
    face_cell = np.repeat(active, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    tri_in_cell = np.arange(n_tri) - first
    case_of_tri = flat_cases[face_cell]
    cols = 3 * tri_in_cell[:, None] + np.arange(3)[None, :]
    edges = _TRI_EDGES[case_of_tri[:, None], cols]  # (T, 3)
    k, j, i = np.unravel_index(face_cell, (nz, ny, nx))
    lo = _EDGE_LOWER[edges]  # (T, 3, 3) x, y, z offsets
    sx = 1
    sy = nx + 1
    sz = (nx + 1) * (ny + 1)
    lower = (k[:, None] + lo[..., 2]) * sz + (j[:, None] + lo[..., 1]) * sy + (i[:, None] + lo[..., 0]) * sx
    key = lower * 3 + _EDGE_AXIS[edges]
    unique_keys, inverse = np.unique(key.reshape(-1), return_inverse=True)
    faces = inverse.reshape(-1, 3).astype(np.int64)
    v_lower = unique_keys // 3
    v_axis = unique_keys % 3
    stride = np.array([sx, sy, sz], dtype=np.int64)
    v_upper = v_lower + stride[v_axis]
    flat = v.reshape(-1)
    f0 = flat[v_lower]
    f1 = flat[v_upper]
    d = f1 - f0
    flat_edge = (d == 0.0) | (np.abs(d) <= 1e-12 * (np.abs(f0) + np.abs(f1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(flat_edge, 0.5, -f0 / np.where(flat_edge, 1.0, d))
    t = np.clip(t, clamp, 1.0 - clamp)
    vk, vj, vi = np.unravel_index(v_lower, v.shape)
    index = np.stack([vi, vj, vk], axis=1).astype(np.float64)
    index[np.arange(len(index)), v_axis] += t
    vertices = origin + spacing * index
    return MarchingCubesMesh(vertices=vertices, faces=faces, vertex_lower=v_lower, vertex_upper=v_upper,
                             vertex_t=t, face_cell=face_cell)


def sdf_grid_values(sdf, lo=(0, 0, 0), hi=None) -> np.ndarray:
    """φ of ``sdf`` at its grid samples ``lo..hi`` (inclusive (x, y, z) index ranges; default the
    whole grid), as an array of shape (z, y, x): read by the kernels' own sampler
    (:func:`hydro.sdf.sample.sdf_grid_phi`), so these are exactly the values they see."""
    return sdf.pack().grid_values(0, lo, hi)


def sdf_level_set(sdf, level: float = 0.0) -> MarchingCubesMesh:
    """The surface ``φ = level`` of a shape's stored field, in the shape's local frame (m).

    ``level`` 0 is the shape as its SDF sees it; ``sdf.settings.narrow_band_inner`` and
    ``narrow_band_outer`` are the edges of the band where fine samples are kept.
    """
    values = sdf_grid_values(sdf) - float(level)
    return marching_cubes(values, origin=sdf.origin, spacing=sdf.voxel_size)
