"""Building a shape's sparse narrow-band SDF (CPU, once per shape) and reporting on it.

Layout of one shape's field (its local frame):

- a grid of ``resolution = (nx, ny, nz)`` voxels of edge ``voxel_size`` starting at
  ``origin``; every count is a multiple of 8, so the grid splits into bricks of 8³ voxels;
- a *coarse grid*: one float32 sample per brick corner over the whole box;
- *fine bricks*: 9³ samples (faces shared with neighbours are duplicated) for the bricks that
  lie in the narrow band and that the coarse grid cannot reproduce within tolerance, stored
  in ``texture_format`` (``uint8``/``uint16`` quantise the band range linearly, rounding;
  ``float32`` stores values as they are);
- a slot table mapping each brick to its fine slot, or −1 for "coarse".
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from numba import prange

from ..backend import cpu_jit
from ..errors import InputError, shown
from ..geometry import MESH, Geometry, Mesh
from ..geometry.mesh_check import MeshWarning
from .pack import SDFPack
from .layout import BRICK, BRICK_SAMPLES, FORMAT_DTYPES, SAMPLES_PER_BRICK, SDFSettings, grid_layout
from .sample import trilerp

#: Builds of fewer samples than this run their loops serially (a 64³ primitive: about 0.4 M samples,
#: a few milliseconds), so loading a small scene never compiles the threaded builds
SERIAL_SAMPLES = 1 << 20


@cpu_jit(parallel=True, serial_below=SERIAL_SAMPLES)
def _brick_sample_points(origin, h, nb, bricks, out):
    """Sample positions of the given bricks, x fastest: out (len(bricks) * SAMPLES_PER_BRICK, 3)."""
    for k in prange(bricks.shape[0]):
        b = bricks[k]
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        base = k * SAMPLES_PER_BRICK
        for lz in range(BRICK_SAMPLES):
            for ly in range(BRICK_SAMPLES):
                for lx in range(BRICK_SAMPLES):
                    j = base + (lz * BRICK_SAMPLES + ly) * BRICK_SAMPLES + lx
                    out[j, 0] = origin[0] + (BRICK * bx + lx) * h
                    out[j, 1] = origin[1] + (BRICK * by + ly) * h
                    out[j, 2] = origin[2] + (BRICK * bz + lz) * h


@cpu_jit(parallel=True, serial_below=SERIAL_SAMPLES)
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
        for j in range(k * SAMPLES_PER_BRICK, (k + 1) * SAMPLES_PER_BRICK):
            if values[j] >= inner and values[j] <= outer:
                in_band = True
                break
        if not in_band:
            out_fine[k] = False
            out_error[k] = 0.0
            continue
        worst = 0.0
        for lz in range(BRICK_SAMPLES):
            tz = lz / BRICK
            for ly in range(BRICK_SAMPLES):
                ty = ly / BRICK
                for lx in range(BRICK_SAMPLES):
                    v = trilerp(c000, c100, c010, c110, c001, c101, c011, c111, lx / BRICK, ty, tz)
                    j = k * SAMPLES_PER_BRICK + (lz * BRICK_SAMPLES + ly) * BRICK_SAMPLES + lx
                    worst = max(worst, abs(v - values[j]))
        out_fine[k] = worst > tolerance
        out_error[k] = worst


@cpu_jit(parallel=True, serial_below=SERIAL_SAMPLES)
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
            for lz in range(BRICK_SAMPLES):
                for ly in range(BRICK_SAMPLES):
                    for lx in range(BRICK):
                        gx = max(gx, abs(atlas_values[s, lz, ly, lx + 1] - atlas_values[s, lz, ly, lx]))
            for lz in range(BRICK_SAMPLES):
                for ly in range(BRICK):
                    for lx in range(BRICK_SAMPLES):
                        gy = max(gy, abs(atlas_values[s, lz, ly + 1, lx] - atlas_values[s, lz, ly, lx]))
            for lz in range(BRICK):
                for ly in range(BRICK_SAMPLES):
                    for lx in range(BRICK_SAMPLES):
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
            out[b, 0] = gx / (BRICK * h)
            out[b, 1] = gy / (BRICK * h)
            out[b, 2] = gz / (BRICK * h)


@cpu_jit(parallel=True, serial_below=SERIAL_SAMPLES)
def _cell_center_points(origin, h, nb, bricks, out):
    """Centres of every voxel of the given bricks, x fastest: out (len(bricks) * BRICK³, 3)."""
    n = BRICK * BRICK * BRICK
    for k in prange(bricks.shape[0]):
        b = bricks[k]
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        for lz in range(BRICK):
            for ly in range(BRICK):
                for lx in range(BRICK):
                    j = k * n + (lz * BRICK + ly) * BRICK + lx
                    out[j, 0] = origin[0] + (BRICK * bx + lx + 0.5) * h
                    out[j, 1] = origin[1] + (BRICK * by + ly + 0.5) * h
                    out[j, 2] = origin[2] + (BRICK * bz + lz + 0.5) * h


@cpu_jit(parallel=True, serial_below=SERIAL_SAMPLES)
def _exact_gap(nb, bricks, slot, atlas_values, coarse, exact, out):
    """Per brick: the largest |exact φ − stored φ| over its voxel centres and grid samples, where
    the stored field is what the device samplers interpolate (fine samples or the coarse cell).

    ``exact`` holds the exact φ at the voxel centres of ``bricks`` (as :func:`_cell_center_points`
    orders them); ``atlas_values`` the stored (dequantised) fine samples."""
    n = BRICK * BRICK * BRICK
    for k in prange(bricks.shape[0]):
        b = bricks[k]
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        s = slot[b]
        worst = 0.0
        for lz in range(BRICK):
            for ly in range(BRICK):
                for lx in range(BRICK):
                    if s >= 0:
                        v = 0.0
                        for c in range(8):
                            v += atlas_values[s, lz + (c >> 2), ly + ((c >> 1) & 1), lx + (c & 1)]
                        v *= 0.125
                    else:
                        v = trilerp(coarse[bz, by, bx], coarse[bz, by, bx + 1], coarse[bz, by + 1, bx],
                                    coarse[bz, by + 1, bx + 1], coarse[bz + 1, by, bx], coarse[bz + 1, by, bx + 1],
                                    coarse[bz + 1, by + 1, bx], coarse[bz + 1, by + 1, bx + 1], (lx + 0.5) / BRICK,
                                    (ly + 0.5) / BRICK, (lz + 0.5) / BRICK)
                    worst = max(worst, abs(v - exact[k * n + (lz * BRICK + ly) * BRICK + lx]))
        out[k] = worst


@cpu_jit(parallel=True, serial_below=SERIAL_SAMPLES)
def _quantize(values, lo, scale_inv, levels, out):
    for i in prange(values.shape[0]):
        q = math.floor((values[i] - lo) * scale_inv + 0.5)
        out[i] = min(max(q, 0.0), levels)


def _primitive_phi_points(geometry: Geometry):
    from ..geometry.primitives import _primitive_phi_many

    kind = geometry.kind
    params = geometry.params()

    def evaluate(points):
        out = np.empty(len(points))
        _primitive_phi_many(np.int32(kind), params, points, out)
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
    mesh_bytes: int = 0  # a mesh's exact field: candidate lists and triangles

    @property
    def total_bytes(self) -> int:
        return self.fine_bytes + self.coarse_bytes + self.slot_bytes + self.mesh_bytes


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
    | ``brick_exact_gap`` | (bz, by, bx) | float32, m: a bound on |exact φ − stored φ| inside the brick |
    |  |  | (a primitive's, a mesh's where its cells list triangles; else 0) |
    | ``brick_curved`` | (bz, by, bx) | float32: 0 where the exact field is affine over the brick (a |
    |  |  | box's face region; a mesh's face plane, proven), 1 elsewhere |
    | ``notes`` | | meshes: what welding and merging did (one line each) |
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
    brick_exact_gap: np.ndarray | None = None
    brick_curved: np.ndarray | None = None
    coarse_error: float = 0.0
    build_seconds: float = 0.0
    band_bricks: int = 0
    notes: tuple = ()  # meshes: welding, merged pieces (one line each)
    mesh_field: "MeshField | None" = None  # a closed mesh's exact field (hydro.sdf.mesh_field)
    # a mesh's face neighbours (hydro.sdf.mesh_faces): a convex one's, or a non-convex one's with their rules
    face_lists: "ConvexFaces | None" = None
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
            mesh_bytes=(self.mesh_field.nbytes if self.mesh_field is not None else 0)
            + (self.face_lists.nbytes if self.face_lists is not None else 0),
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


#: How much the largest |exact − stored| seen at a brick's voxel centres is widened into the
#: brick's bound (the largest gap of a kinked field need not sit at a centre)
EXACT_GAP_SAFETY = 2.0


def _exact_at_centres(geometry, evaluate, origin, h, nb, band):
    """A primitive's exact φ at every voxel centre of the band bricks, (band, BRICK³) in z, y, x
    order (None for a mesh, whose stored field is its field)."""
    if isinstance(geometry, Mesh) or len(band) == 0:
        return None
    centres = np.empty((len(band) * BRICK**3, 3))
    _cell_center_points(np.asarray(origin, dtype=float), h, nb, band, centres)
    return evaluate(centres).reshape(len(band), BRICK**3)


def _brick_exact_gaps(h, nb, band, slot, stored, coarse3, exact_centres) -> np.ndarray:
    """Per brick, a bound on |exact φ − stored φ| (what refinement adds to its slack when the
    pipeline evaluates a primitive exactly): measured at every voxel centre of the band bricks and
    widened by ``EXACT_GAP_SAFETY``; bricks outside the band get the Lipschitz bound 2 × the brick
    diagonal. Zero for meshes (``exact_centres`` None)."""
    n_bricks = int(np.prod(nb))
    if exact_centres is None:
        return np.zeros(n_bricks, np.float32)
    gaps = np.full(n_bricks, 2.0 * math.sqrt(3.0) * BRICK * h)
    band_gap = np.empty(len(band))
    _exact_gap(nb, band, slot, stored, coarse3.astype(np.float64), exact_centres.ravel(), band_gap)
    gaps[band] = EXACT_GAP_SAFETY * band_gap
    return (gaps * (1.0 + 1e-6) + 1e-9).astype(np.float32)


#: An exact field is affine over a brick when no sample or voxel centre of the brick lies farther
#: than this (× the voxel) from the affine function through its corner samples
AFFINE_TOLERANCE = 1e-9


def _brick_curved(h, nb, band, values, exact_centres) -> np.ndarray:
    """Per brick: 0 where a primitive's exact φ is affine over the brick (every sample of the
    band brick, ``values`` (band, 9³), and every voxel centre, ``exact_centres`` (band, 8³), both
    z, y, x order, within ``AFFINE_TOLERANCE`` × h of the affine function through the brick's
    corner samples), else 1: outside the band, for meshes (``exact_centres`` None), and wherever
    the field bends. Marching cubes settles an edge crossing of an exact field with a parabolic
    step only where it is curved."""
    curved = np.ones(int(np.prod(nb)), np.float32)
    if exact_centres is None:
        return curved
    v = values.reshape(len(band), BRICK_SAMPLES, BRICK_SAMPLES, BRICK_SAMPLES)
    v0 = v[:, 0, 0, 0]
    gx = (v[:, 0, 0, BRICK] - v0) / BRICK
    gy = (v[:, 0, BRICK, 0] - v0) / BRICK
    gz = (v[:, BRICK, 0, 0] - v0) / BRICK

    def misfit(points, offsets, n):
        lz, ly, lx = (a.ravel() for a in np.meshgrid(*(np.arange(n) + offsets,) * 3, indexing="ij"))
        affine = v0[:, None] + gx[:, None] * lx + gy[:, None] * ly + gz[:, None] * lz
        return np.abs(points - affine).max(axis=1)

    worst = np.maximum(misfit(v.reshape(len(band), -1), 0.0, BRICK_SAMPLES), misfit(exact_centres, 0.5, BRICK))
    curved[band] = np.where(worst <= AFFINE_TOLERANCE * h, 0.0, 1.0)
    return curved


def _mesh_evaluator(mesh: Mesh, allow_open: bool):
    """(φ at points, notes, the solid's MeshDistance or None) for a mesh: the solid's exact
    distance, or winding-signed for an open mesh when allowed (then no exact field is built)."""
    from ..geometry.mesh_distance import MeshDistance

    if allow_open and not mesh.is_closed():
        return MeshDistance(mesh, sign="winding").signed_distance, [
            "open mesh: distance to its triangles, sign from winding numbers (not for hydroelastic contact)"], None
    md = MeshDistance(mesh)  # raises InputError for an open mesh, with the fix
    return md.signed_distance, list(md.solid.notes), md


def _mesh_size_warnings(mesh: Mesh, voxel: float, settings: SDFSettings) -> None:
    from ..geometry.mesh_check import size_warnings

    for message in size_warnings(mesh, voxel=voxel, narrow_band_inner=settings.narrow_band_inner,
                                 narrow_band_outer=settings.narrow_band_outer):
        warnings.warn(message, MeshWarning, stacklevel=4)


def _thin_wall_warning(mesh: Mesh, md, h: float, settings: SDFSettings) -> None:
    """Warn (:class:`~hydro.geometry.mesh_check.MeshWarning`, a ``HydroWarning``) when walls
    thinner than two voxels cover ``THIN_AREA_FRACTION`` of the mesh's surface: the grid cannot
    carry them (a 2 mm jaw at a 3.5 mm voxel lost 17 % of its force), and say which voxel would."""
    from .mesh_field import THIN_AREA_FRACTION, thin_walls

    walls = thin_walls(md, h)
    if not walls.fraction >= THIN_AREA_FRACTION:
        return
    # two voxels and a bit across the thin walls' 5th-percentile thickness
    target = walls.thickness / 2.5
    if not walls.thickness > 1e-3 * h:  # walls of no thickness (a surface folded onto itself): none carries them
        warnings.warn(f"mesh {mesh.name!r}: {100.0 * walls.fraction:.0f}% of its surface bounds walls of no thickness "
                      f"(surfaces that touch); no SDF voxel carries them", MeshWarning, stacklevel=4)
        return
    lo, hi = mesh.local_aabb()
    resolution = int(math.ceil(settings.max_resolution * h / target / BRICK)) * BRICK
    warnings.warn(
        f"mesh {mesh.name!r}: walls thinner than two voxels of its SDF (voxel {h * 1e3:.3g} mm) cover "
        f"{100.0 * walls.fraction:.0f}% of its surface (down to {walls.thickness * 1e3:.3g} mm): the grid cannot "
        f"carry them and contact there loses force; set sdfTargetVoxelSize <= {target:.3g} m "
        f"(or sdfMaxResolution >= {resolution})", MeshWarning, stacklevel=4)


def build_sdf(geometry: Geometry, settings: SDFSettings | None = None, *, extra_padding: float = 0.0,
              allow_open: bool = False) -> SDF:
    """Build the sparse narrow-band SDF of ``geometry`` (CPU).

    ``extra_padding`` (m) widens the box beyond ``settings.padding``, e.g. by the shape's
    contact margin and gap. A mesh is welded and must then be closed (its field is the exact
    distance to the solid it bounds, with pieces that touch or overlap merged; see
    :meth:`~hydro.geometry.Mesh.solid`), unless ``allow_open``: an open mesh then gets the
    distance to its triangles signed by winding numbers (the default contact path; never
    hydroelastic). ``SDF.notes`` says what was done to a mesh; a mesh implausibly large or small, or whose
    voxel is wider than the narrow band, gets a :class:`~hydro.geometry.mesh_check.MeshWarning`.
    Bad input raises :class:`~hydro.errors.InputError`.
    """
    settings = settings or SDFSettings()
    if not isinstance(geometry, Geometry):
        raise InputError(f"geometry must be a hydro Geometry, got {type(geometry).__name__}")
    if not geometry.volumetric:
        raise InputError(f"a {geometry.kind_name} has no inside and cannot have an SDF")
    if not math.isfinite(extra_padding) or extra_padding < 0.0:
        raise InputError(f"extra_padding must be a finite number >= 0, got {shown(extra_padding)}")
    t0 = time.perf_counter()
    notes = []
    md = None
    if isinstance(geometry, Mesh):  # meshes and convex hulls
        evaluate, notes, md = _mesh_evaluator(geometry, allow_open)
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
    # bricks whose centre lies within band + half the brick diagonal of the surface
    b_idx = np.arange(n_bricks)
    centers = np.stack([
        origin[0] + (b_idx % nb[0] + 0.5) * BRICK * h,
        origin[1] + ((b_idx // nb[0]) % nb[1] + 0.5) * BRICK * h,
        origin[2] + (b_idx // (nb[0] * nb[1]) + 0.5) * BRICK * h,
    ], axis=1)
    if isinstance(geometry, Mesh):
        _mesh_size_warnings(geometry, h, settings)
    coarse = evaluate(coarse_pts).astype(np.float32)
    phi_c = evaluate(centers)
    half_diag = 0.5 * math.sqrt(3.0) * BRICK * h
    inner, outer = settings.narrow_band_inner, settings.narrow_band_outer
    in_band = (phi_c - half_diag <= outer) & (phi_c + half_diag >= inner)
    band = b_idx[in_band].astype(np.int64)

    # exact samples of band bricks; keep the ones the coarse grid cannot reproduce
    pts = np.empty((len(band) * SAMPLES_PER_BRICK, 3))
    _brick_sample_points(np.asarray(origin, dtype=float), h, nb, band, pts)
    values = evaluate(pts)
    exact_centres = _exact_at_centres(geometry, evaluate, origin, h, nb, band)
    brick_curved = _brick_curved(h, nb, band, values, exact_centres)
    fine_flag = np.empty(len(band), dtype=np.bool_)
    miss = np.empty(len(band))
    _coarse_mismatch(coarse.astype(np.float64), nb, band, values, settings.coarse_tolerance * h,
                     inner, outer, fine_flag, miss)
    # the largest jump where a coarse band brick meets a fine one (at most coarse_tolerance)
    coarse_error = float(miss[~fine_flag].max()) if np.any(~fine_flag) else 0.0
    fine_bricks = band[fine_flag]
    band_values = values.reshape(len(band), SAMPLES_PER_BRICK)
    values = band_values[fine_flag]

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
    exact_gap = _brick_exact_gaps(h, nb, band, slot, stored, coarse3, exact_centres)
    sdf = SDF(
        geometry=geometry,
        settings=settings,
        origin=np.asarray(origin, dtype=float),
        voxel_size=h,
        resolution=res,
        padding=pad,
        coarse=coarse3,
        brick_slot=slot.reshape(nb[2], nb[1], nb[0]),
        brick_slopes=brick_slopes.reshape(nb[2], nb[1], nb[0], 3),
        brick_exact_gap=exact_gap.reshape(nb[2], nb[1], nb[0]),
        brick_curved=brick_curved.reshape(nb[2], nb[1], nb[0]),
        coarse_error=coarse_error,
        atlas=atlas,
        scale=float(scale),
        offset=float(offset),
        build_seconds=time.perf_counter() - t0,
        band_bricks=int(len(band)),
        notes=tuple(notes),
    )
    if md is not None:
        _thin_wall_warning(geometry, md, h, settings)
    if md is not None and md.solid.sign == "pseudonormal":  # (else inner surfaces: no pseudo-normal sign)
        _add_mesh_field(sdf, md, band, extra_padding, pts, band_values, stored, coarse3)
    sdf.build_seconds = time.perf_counter() - t0
    return sdf


#: A mesh brick whose stored field lies within its rounding plus this (× the voxel) of the exact
#: one at every voxel centre keeps the stored field (no lists)
FLAT_GAP_VOXELS = 1e-4


def _add_mesh_field(sdf: SDF, md, band, extra_padding, band_points, band_values, stored, coarse3) -> None:
    """Give a mesh's SDF its exact field (:mod:`hydro.sdf.mesh_field`): the candidate lists, checked
    against the build's exact samples (``band_values`` at ``band_points``; a brick that disagrees
    drops its lists), and per brick the bound on |exact − stored| that refinement adds."""
    from .mesh_field import (CHECK_TOLERANCE, MESH_LIST_DEPTH_VOXELS, MESH_LIST_OUTSIDE_VOXELS, affine_bricks,
                             build_mesh_field, drop_bricks, mark_affine_cells)

    h = sdf.voxel_size
    nb = np.array(sdf.bricks, dtype=np.int64)
    field = build_mesh_field(md, sdf.origin, h, nb, band, band_values, -MESH_LIST_DEPTH_VOXELS * h,
                             MESH_LIST_OUTSIDE_VOXELS * h + extra_padding)
    sdf.mesh_field = field
    from .mesh_faces import MAX_REGION_TRIANGLES, convex_faces, is_convex, region_rules

    sdf.face_lists = None
    if is_convex(md.solid.vertices, md.solid.faces):
        sdf.face_lists = convex_faces(field.tri, h)
    elif len(field.tri) <= MAX_REGION_TRIANGLES:  # a non-convex mesh: its triangles' regions (docs/design.md stage 4b)
        lists = convex_faces(field.tri, h)
        sdf.face_lists = region_rules(field.tri, lists, h) if lists is not None else None
    rows = field.brick_row[band]
    listed = np.flatnonzero(rows >= 0)
    if len(listed) == 0:
        return
    zeros = np.zeros(len(listed) * SAMPLES_PER_BRICK, np.int32)
    pts = band_points.reshape(len(band), SAMPLES_PER_BRICK, 3)[listed].reshape(-1, 3)
    pack = SDFPack([sdf])
    got = pack.sample_exact(zeros, pts).reshape(len(listed), SAMPLES_PER_BRICK)
    # where a cell keeps no list the stored field answers (within its rounding): not checked here
    from_lists = got != pack.sample(zeros, pts).reshape(got.shape)
    miss = np.where(from_lists, np.abs(got - band_values[listed]), 0.0).max(axis=1)
    bad = listed[~(miss <= CHECK_TOLERANCE * h)]
    if len(bad):
        field = drop_bricks(field, band[bad])
        sdf.mesh_field = field
        sdf.notes = sdf.notes + (f"exact field: {len(bad)} brick(s) where the triangles' pseudo-normals disagree with "
                                 "the winding number keep the stored field",)
    # bricks where one face plane is the exact field: marching cubes takes the affine path there
    curved = np.ones(sdf.brick_count, np.float32)
    curved[affine_bricks(field, md, sdf.origin, h, nb)] = 0.0
    sdf.brick_curved = curved.reshape(sdf.brick_slot.shape)
    # |exact − stored| at the voxel centres of the band bricks (unlisted ones: the stored field, 0)
    centres = np.empty((len(band) * BRICK**3, 3))
    _cell_center_points(np.asarray(sdf.origin, dtype=float), h, nb, band, centres)
    exact_centres = SDFPack([sdf]).sample_exact(np.zeros(len(centres), np.int32), centres).reshape(len(band), BRICK**3)
    gaps = np.zeros(len(band))
    _exact_gap(nb, band, sdf.brick_slot.ravel(), stored, coarse3.astype(np.float64), exact_centres.ravel(), gaps)
    # where the stored field is already as exact as its own rounding (flat faces), it serves: the
    # lists go (memory, and the time a query takes)
    plain = (gaps <= sdf.quantization_step + FLAT_GAP_VOXELS * h) & (sdf.mesh_field.brick_row[band] >= 0)
    if np.any(plain):
        sdf.mesh_field = drop_bricks(sdf.mesh_field, band[plain])
        sdf.mesh_field.dropped_bricks = field.dropped_bricks
        gaps[plain] = 0.0
    # cells where one face plane is the exact field: marching cubes takes the affine path in the
    # block that is that cell
    mark_affine_cells(sdf.mesh_field, md, sdf.origin, h, nb)
    out = np.zeros(sdf.brick_count)
    out[band] = EXACT_GAP_SAFETY * gaps
    sdf.brick_exact_gap = ((out * (1.0 + 1e-6) + 1e-9) * (out > 0)).astype(np.float32).reshape(sdf.brick_slot.shape)


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
        f"{m.slot_bytes / 1024:.1f} KiB" + (f" + exact mesh field {m.mesh_bytes / 1024:.1f} KiB" if m.mesh_bytes else "")
        + f" = {m.total_bytes / 1024:.1f} KiB",
        f"dense grid   {m.dense_float32_bytes / 1024:.1f} KiB float32 ({100.0 * m.total_bytes / m.dense_float32_bytes:.1f}% "
        f"of it)" + ("" if sdf.settings.texture_format == "float32" else  # the same grid: said once
                     f", {m.dense_same_format_bytes / 1024:.1f} KiB {sdf.settings.texture_format} "
                     f"({100.0 * m.total_bytes / m.dense_same_format_bytes:.1f}% of it)"),
        f"build        {sdf.build_seconds * 1e3:.1f} ms",
    ]
    lines.extend(f"mesh         {note}" for note in sdf.notes)
    return "\n".join(lines)
