"""The layout of a sparse SDF: bricks, storage formats, the grid and the packed parameter rows.

One definition of each layout constant lives here; the builder (:mod:`.build`), the packer
(:mod:`.pack`), the device samplers (:mod:`.sample`) and the NumPy decoder used by the viewer
(:mod:`.level_set`) all read them from this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..errors import shown

BRICK_SHIFT = 3
BRICK = 1 << BRICK_SHIFT  # voxels per brick edge (8)
INV_BRICK = 1.0 / BRICK
BRICK_SAMPLES = BRICK + 1  # samples per brick edge (faces shared with neighbours are duplicated)
SAMPLES_PER_BRICK = BRICK_SAMPLES**3
FORMATS = ("float32", "uint16", "uint8")
FORMAT_FLOAT32, FORMAT_UINT16, FORMAT_UINT8 = range(3)  # codes in params_i (read by jitted code)
FORMAT_CODES = {"float32": FORMAT_FLOAT32, "uint16": FORMAT_UINT16, "uint8": FORMAT_UINT8}
FORMAT_DTYPES = {"float32": np.float32, "uint16": np.uint16, "uint8": np.uint8}
DEFAULT_PADDING_VOXELS = 4
#: A mesh's exact field lists its candidate triangles per cell of MESH_CELL³ voxels (a marching-cubes
#: block), CELLS_PER_BRICK per brick (hydro.sdf.mesh_field)
MESH_CELL_SHIFT = 1
MESH_CELL = 1 << MESH_CELL_SHIFT
CELLS_PER_EDGE = BRICK // MESH_CELL
CELLS_PER_BRICK = CELLS_PER_EDGE**3
#: float32 values per triangle of a mesh's exact field: corners a, b, c, the vertex pseudo-normals
#: at a, b, c, the edge pseudo-normals of ab, bc, ca (3 each), then a ball holding the triangle
#: (centre, radius rounded up), then the triangle's plane: unit normal n, offset n·a and a slack
#: covering the stored corners' rounding (|n·x − offset| − slack ≤ (1 + 1e-6) · the distance)
MESH_TRI_VALUES = 36
MESH_TRI_BALL = 27
MESH_TRI_PLANE = 31
#: How many times max_resolution a grid may get for the shape's margin + gap (at the shape's own voxel size).
PADDED_REFINEMENT = 2
#: Voxels of padding left beyond a shape's margin + gap (whole bricks are added when they do not fit).
SPARE_VOXELS = 2


@dataclass(frozen=True)
class SDFSettings:
    """How a shape's SDF is built (the per-shape ``newton:sdf*`` attributes).

    | field | meaning |
    |---|---|
    | ``max_resolution`` | voxels along the longest axis with ``padding``; a positive multiple of 8 |
    |  | (a contact margin + gap add voxels of that size, :func:`grid_layout`) |
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
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r <= 0 or r % BRICK != 0:
            raise ValueError(f"max_resolution must be a positive multiple of {BRICK}, got {shown(r)}")
        object.__setattr__(self, "max_resolution", int(r))
        if self.target_voxel_size is not None:
            t = float(self.target_voxel_size)
            if not math.isfinite(t):
                raise ValueError(f"target_voxel_size must be finite, got {shown(self.target_voxel_size)}")
            object.__setattr__(self, "target_voxel_size", t)
        inner = float(self.narrow_band_inner)
        outer = float(self.narrow_band_outer)
        if not math.isfinite(inner) or inner >= 0.0:
            raise ValueError(f"narrow_band_inner must be a finite number < 0, got {shown(self.narrow_band_inner)}")
        if not math.isfinite(outer) or outer <= 0.0:
            raise ValueError(f"narrow_band_outer must be a finite number > 0, got {shown(self.narrow_band_outer)}")
        object.__setattr__(self, "narrow_band_inner", inner)
        object.__setattr__(self, "narrow_band_outer", outer)
        if self.padding is not None:
            p = float(self.padding)
            if not math.isfinite(p) or p < 0.0:
                raise ValueError(f"padding must be a finite number >= 0, got {shown(self.padding)}")
            object.__setattr__(self, "padding", p)
        if self.texture_format not in FORMATS:
            raise ValueError(
                f"texture_format must be one of {', '.join(FORMATS)}, got {shown(self.texture_format)}"
            )
        c = float(self.coarse_tolerance)
        if not math.isfinite(c) or c < 0.0:
            raise ValueError(f"coarse_tolerance must be a finite number >= 0, got {shown(self.coarse_tolerance)}")
        object.__setattr__(self, "coarse_tolerance", c)


def _brick_multiple(length, h):
    """Voxels of edge ``h`` covering ``length`` per axis, rounded up to whole bricks (at least one)."""
    return np.maximum(BRICK, np.ceil(length / h / BRICK - 1e-9).astype(np.int64) * BRICK)


def grid_layout(lo, hi, settings: SDFSettings, extra_padding: float = 0.0):
    """The grid for bounds ``lo..hi``: ``(origin, voxel_size, resolution, padding)``.

    The voxel size is the shape's own: its longest axis plus the settings' padding gets
    ``max_resolution`` voxels (unless a positive ``target_voxel_size`` decides), every axis count
    rounded up to a multiple of 8, the box centred on the shape's bounds. ``extra_padding`` (the
    shape's contact margin + gap) fits in that padding with ``SPARE_VOXELS`` to spare, or adds
    whole bricks of those voxels on every side, up to
    ``PADDED_REFINEMENT`` × ``max_resolution`` per axis, so the shape's voxels and bricks stay where
    they are without it; only a margin + gap beyond that (more than about half the shape's size)
    coarsens the grid. So a gap, which only adds speculative contacts, does not move the grid a
    penetrating patch is built on (it did: a 1 cm gap on a 0.2 m sphere at resolution 32 took 5 %
    off its force, issue 27).
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
        n = _brick_multiple(size + 2 * pad, h)
    else:
        n_max = settings.max_resolution
        longest = float(size.max())
        n_cap = PADDED_REFINEMENT * n_max
        # the shape's own grid (what it gets without a margin or gap) ...
        if settings.padding is None:
            pad_vox = DEFAULT_PADDING_VOXELS if n_max >= 32 else 1
            h = longest / (n_max - 2 * pad_vox)
            pad = pad_vox * h
        else:
            pad = settings.padding
            h = (longest + 2 * pad) / n_max
        n = _brick_multiple(size + 2 * pad, h)
        # ... and for the margin + gap whole bricks on every side, so its voxels and bricks stay
        # where they were: a gap moves nothing a penetrating patch is built on (issue 27). None
        # while the padding covers them with SPARE_VOXELS to spare (the default's 4 voxels take a
        # gap of 2); up to PADDED_REFINEMENT × max_resolution voxels per axis (issue 16); beyond,
        # the voxels grow
        short = extra - (pad - SPARE_VOXELS * h)
        ext = int(math.ceil(short / h / BRICK - 1e-9)) * BRICK if extra > 0.0 and short > 0.0 else 0
        if int(n.max()) + 2 * ext <= n_cap:
            n = n + 2 * ext
            pad += ext * h
        else:
            if settings.padding is None:
                h = max(h, (longest + 2 * extra) / (n_cap - 2 * pad_vox))
                pad = pad_vox * h + extra
            else:
                pad = settings.padding + extra
                h = max(h, (longest + 2 * pad) / n_cap)
            n = np.minimum(_brick_multiple(size + 2 * pad, h), n_cap)
    center = 0.5 * (lo + hi)
    origin = center - 0.5 * n * h
    return origin, float(h), tuple(int(v) for v in n), float(pad)


# ============================================================================================
# The packed parameter rows (read by the device samplers in .sample)

# Per-shape float parameters (row of SDFPack.params_f)
F_ORIGIN = 0  # 0..2
F_VOXEL = 3
F_INV_VOXEL = 4
F_SCALE = 5
F_OFFSET = 6
F_BAND_INNER = 7
F_BAND_OUTER = 8
F_JUMP = 9  # largest jump of the stored field (coarse error + half a quantisation step)
F_PRIMITIVE = 10  # 10..12: the primitive's packed size parameters (Geometry.params), when I_PRIMITIVE >= 0
F_FACE_REACH = 13  # a convex mesh's faces (I_FACES >= 0): the depth their neighbour lists hold for (m)
F_COUNT = 14
# Per-shape integer parameters (row of SDFPack.params_i)
I_RES = 0  # 0..2 voxels
I_BRICKS = 3  # 3..5 bricks
I_FORMAT = 6
I_SLOT_OFFSET = 7
I_COARSE_OFFSET = 8
I_ATLAS_OFFSET = 9
I_SLOPES_OFFSET = 10  # into the float32 ``coarse`` array: BRICK_BOUNDS values per brick
I_PRIMITIVE = 11  # the primitive's kind code (hydro.geometry.primitives), −1 for a mesh: its exact φ
I_MESH = 12  # a mesh's exact field: offset of its bricks' rows in ``mesh_index`` (−1: none; hydro.sdf.mesh_field)
I_PLANES = 13  # first row of the shape's planes in ``SDFView.planes`` (see PLANE_ROWS_EXTRA)
I_PLANE_COUNT = 14  # how many planes: a box's 6 faces, a convex mesh's distinct faces, a cylinder's 2
#                     caps, a cone's base; 0 for the other shapes
I_FACES = 15  # a convex mesh (hydro.sdf.mesh_faces): its first row in ``mesh_tri`` (−1: not one)
I_FACE_COUNT = 16  # its triangles
I_FACE_START = 17  # its first row in ``face_start``
I_FACE_CONVEX = 18  # 1: the mesh with face lists is convex (max rule throughout); 0: its entries' ``face_rule`` say
I_COUNT = 19
#: Rows of ``SDFView.planes`` after a shape's planes: its local bounding box's centre (x, y, z, 0),
#: then its half extents and the radius of a ball about that centre holding the shape (x, y, z, r)
PLANE_ROWS_EXTRA = 2
#: A convex mesh with face lists (``I_FACES``) has, after those rows, one row per run of
#: ``FACE_CLUSTER`` consecutive triangles (the last may be shorter): a ball (x, y, z, r) holding
#: their balls, so that a search for the triangles near a point passes over a run at once
FACE_CLUSTER = 16
#: Values stored per brick at ``I_SLOPES_OFFSET``: bounds on |∂φ/∂x|, |∂φ/∂y|, |∂φ/∂z| of the
#: stored field, then (for a primitive) a bound on |exact φ − stored φ| inside the brick, then 1
#: where the exact field may be curved inside the brick and 0 where it is affine (a box away from
#: its edges), where the exact root of a grid edge is the linear one
BRICK_BOUNDS = 5
B_EXACT_GAP = 3
B_CURVED = 4


class SDFView(NamedTuple):
    """The packed fields of :class:`~hydro.sdf.pack.SDFPack` on one device: what every sampling
    helper reads, passed to kernels as one argument (see ``SDFPack`` for the shapes)."""

    params_f: Any  # (S, F_COUNT) float64: the rows above
    params_i: Any  # (S, I_COUNT) int32
    slots: Any  # (Σ bricks,) int32: fine slot per brick, −1 coarse
    coarse: Any  # float32: coarse grids, then per-brick slope bounds
    atlas_f32: Any  # fine samples by format
    atlas_u16: Any
    atlas_u8: Any
    # a mesh's exact field (hydro.sdf.mesh_field): per brick its row of cells (−1: none), per cell
    # the range of its candidate triangles, their ids and lower bounds, the triangles
    mesh_index: Any  # int32: per brick of each mesh shape (at I_MESH), its row (−1 none)
    mesh_cells: Any  # int32: CELLS_PER_BRICK starts per row, then the end (rows are contiguous)
    mesh_ids: Any  # int32: candidate triangles of each cell, nearest to the cell's centre first
    mesh_key: Any  # float32: lower bound on each candidate's distance from its cell's centre
    mesh_tri: Any  # (T, MESH_TRI_VALUES) float32: corners, vertex and edge pseudo-normals
    planes: Any  # (Σ (plane count + PLANE_ROWS_EXTRA [+ clusters]), 4) float64: (n, c) with n·x + c the plane's
    #              signed distance (n outward, unit), local frame; inside a box or convex mesh φ is their
    #              max; a convex mesh's FACE_CLUSTER balls after its two extra rows
    # a convex mesh's triangles (hydro.sdf.mesh_faces): per triangle its neighbours (rows of mesh_tri)
    face_start: Any  # int32: per triangle of each convex mesh (at I_FACE_START) its first entry, then the end
    face_ids: Any  # int32: the neighbours, nearest first
    face_gap: Any  # float32: a lower bound on each neighbour's distance
    face_rule: Any  # int32: how each neighbour bounds the triangle's region (hydro.sdf.mesh_faces.RULE_*)
    face_link: Any  # int64: bit b: this neighbour and the triangle's b-th are mutually reflex max-rule ones
