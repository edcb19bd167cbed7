"""The contact patch of a shape pair as a triangle mesh, for display (NumPy only).

The contact table keeps one row per patch triangle (centroid, normal, area, …) but not the
triangles' vertices. :func:`patch_mesh` extracts them again the way the pipeline does: the
same choice of B (the shape with the smaller voxel size; ties: the higher shape index), the
same interface field sampled on B's grid (eB = φB − marginB read at B's grid samples, eA =
φA − marginA sampled through the pair transform, both rounded to float32 as the kernels
store them), the same marching cubes (:func:`hydro.level_set.marching_cubes` with the
config's edge clamp) and the same triangle filter as :func:`hydro.contacts.triangle_contact`
(degenerate triangles dropped; triangles wholly outside the overlap kept as speculative only
within the gap band). The triangles are therefore the pipeline's patch triangles, with shared
vertices, so they can be drawn as a surface and coloured per vertex.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import HydroelasticConfig, NewtonConfig, active_config
from .contacts import DEGENERATE_AREA
from .level_set import marching_cubes, sdf_grid_values
from .transforms import check_poses, quat_to_matrix

__all__ = ["PatchMesh", "patch_mesh", "patch_meshes", "interface_field", "pair_order"]


@dataclass
class PatchMesh:
    """The patch triangles of one pair (world frame). Forces act on ``shape_b``.

    | field | shape | meaning |
    |---|---|---|
    | ``shape_a``, ``shape_b`` | int | the pair, B being the shape whose grid was meshed |
    | ``vertices`` | (V,3) | m, world |
    | ``faces`` | (T,3) int64 | wound so normals point from A toward B |
    | ``vertex_pressure`` | (V,) | Pa, kB·(−eB) clipped at 0 (eB = φB − marginB) |
    | ``vertex_depth`` | (V,) | m, eA + eB: separation, negative when penetrating |
    | ``face_area`` | (T,) | m², the part of the triangle inside the overlap (0 when speculative) |
    | ``face_depth`` | (T,) | m, mean of ``vertex_depth`` over the triangle (the contact's depth) |
    | ``face_pressure`` | (T,) | Pa, kB·(−mean eB), the contact's pressure (0 when speculative) |
    | ``face_normal`` | (T,3) | unit, world, from A toward B |
    | ``face_speculative`` | (T,) bool | wholly outside the overlap, within the gap band |
    """

    shape_a: int
    shape_b: int
    vertices: np.ndarray
    faces: np.ndarray
    vertex_pressure: np.ndarray
    vertex_depth: np.ndarray
    face_area: np.ndarray
    face_depth: np.ndarray
    face_pressure: np.ndarray
    face_normal: np.ndarray
    face_speculative: np.ndarray

    def __len__(self) -> int:
        return len(self.faces)

    @property
    def face_centroid(self) -> np.ndarray:
        """(T,3) m, world: the contacts' points."""
        v = self.vertices[self.faces]
        return v.mean(axis=1) if len(v) else np.zeros((0, 3))

    @property
    def face_force(self) -> np.ndarray:
        """(T,) N: pressure × area."""
        return self.face_pressure * self.face_area

    def select(self, face_mask) -> "PatchMesh":
        """The faces where ``face_mask`` is true, with only the vertices they use."""
        m = np.asarray(face_mask, dtype=bool)
        faces = self.faces[m]
        used, inverse = np.unique(faces.reshape(-1), return_inverse=True)
        return PatchMesh(self.shape_a, self.shape_b, self.vertices[used], inverse.reshape(-1, 3).astype(np.int64),
                         self.vertex_pressure[used], self.vertex_depth[used], self.face_area[m], self.face_depth[m],
                         self.face_pressure[m], self.face_normal[m], self.face_speculative[m])


def _hydro_config(config) -> HydroelasticConfig:
    if config is None:
        config = active_config()
    if isinstance(config, NewtonConfig):
        return config.collision_cfg.hydroelastic
    if isinstance(config, HydroelasticConfig):
        return config
    raise ValueError(f"config must be a NewtonConfig or HydroelasticConfig, got {type(config).__name__}")


def pair_order(model, shape_0: int, shape_1: int) -> tuple:
    """``(a, b)``: B is the shape with the smaller voxel size (ties: the higher shape index)."""
    s0, s1 = sorted((int(shape_0), int(shape_1)))
    for s in (s0, s1):
        if model.shape_sdf[s] < 0:
            raise ValueError(f"shape {model.shape_path[s]} has no SDF")
    h0 = model.sdfs[model.shape_sdf[s0]].voxel_size
    h1 = model.sdfs[model.shape_sdf[s1]].voxel_size
    return (s1, s0) if h0 < h1 else (s0, s1)


def interface_field(ea, eb, ka, kb, interface: str = "continuous"):
    """f from eA, eB: zero on the patch, increasing from A toward B (see the contract)."""
    if interface == "switched":
        g = np.sqrt(ka * kb)
        inside = (ea < 0.0) & (eb < 0.0)
        return np.where(inside, (ka / g) * ea - (kb / g) * eb, ea - eb)
    if interface != "continuous":
        raise ValueError(f"interface must be 'continuous' or 'switched', got {interface!r}")
    return ka * ea - kb * eb


def _inside_fraction(s0, s1, s2):
    """Vectorised :func:`hydro.contacts.inside_fraction`."""
    n_in = (s0 < 0).astype(int) + (s1 < 0) + (s2 < 0)
    lone_inside = n_in == 1
    # the lone vertex: the one whose sign differs from the other two
    pick0 = (s0 < 0) == lone_inside
    pick1 = ~pick0 & ((s1 < 0) == lone_inside)
    a = np.where(pick0, s0, np.where(pick1, s1, s2))
    b = np.where(pick0, s1, np.where(pick1, s2, s0))
    c = np.where(pick0, s2, np.where(pick1, s0, s1))
    with np.errstate(divide="ignore", invalid="ignore"):
        corner = (a * a) / ((a - b) * (a - c))
    frac = np.where(lone_inside, corner, 1.0 - corner)
    return np.where(n_in == 3, 1.0, np.where(n_in == 0, 0.0, frac))


def _cell_range(model, pose_a, pose_b, sdf_a, sdf_b, near):
    """Cells (x, y, z inclusive index ranges) of B's grid the pipeline looks at: the bricks
    that A's SDF box overlaps (stage 2), optionally narrowed to the cells around ``near``."""
    rot_a = quat_to_matrix(pose_a[3:])
    rot_b = quat_to_matrix(pose_b[3:])
    r_ab = rot_a.T @ rot_b
    t_ab = rot_a.T @ (pose_b[:3] - pose_a[:3])
    corners = np.array([[(c >> k) & 1 for k in range(3)] for c in range(8)], dtype=np.float64)
    box_a = sdf_a.origin + corners * (np.asarray(sdf_a.resolution) * sdf_a.voxel_size)
    in_b = (box_a - t_ab) @ r_ab  # x_B = R_AB^T (x_A − t_AB)
    brick = 8.0 * sdf_b.voxel_size
    nb = np.asarray(sdf_b.resolution) // 8
    blo = np.maximum(np.floor((in_b.min(axis=0) - sdf_b.origin) / brick).astype(np.int64), 0)
    bhi = np.minimum(np.floor((in_b.max(axis=0) - sdf_b.origin) / brick).astype(np.int64), nb - 1)
    lo, hi = 8 * blo, 8 * (bhi + 1) - 1
    if near is not None:
        pts = np.asarray(near, dtype=np.float64).reshape(-1, 3)
        if len(pts) == 0:
            return lo, lo - 1
        local = (pts - pose_b[:3]) @ rot_b  # world → B-local
        cells = np.floor((local - sdf_b.origin) / sdf_b.voxel_size).astype(np.int64)
        lo = np.maximum(lo, cells.min(axis=0) - 1)
        hi = np.minimum(hi, cells.max(axis=0) + 1)
    return lo, hi


def patch_mesh(model, shape_poses, shape_0: int, shape_1: int, *, config=None, near=None) -> PatchMesh:
    """The patch triangles of the pair of shapes ``shape_0``, ``shape_1`` at world ``shape_poses`` (S,7).

    ``config``: a :class:`~hydro.config.HydroelasticConfig` or :class:`~hydro.config.NewtonConfig`
    (default: the active one); its ``interface`` and ``mc_edge_clamp_min`` are used. ``near``
    (N,3) world points, optional: only B's cells within a voxel of their bounding box are
    meshed (pass the pair's contact points for speed; each patch triangle lies in the voxel
    of its centroid). Without it every cell the pipeline could look at is meshed.
    """
    cfg = _hydro_config(config)
    poses = check_poses(np.asarray(shape_poses, dtype=np.float64), "shape pose")
    a, b = pair_order(model, shape_0, shape_1)
    sdf_a = model.sdfs[model.shape_sdf[a]]
    sdf_b = model.sdfs[model.shape_sdf[b]]
    pose_a, pose_b = poses[a], poses[b]
    ka, kb = float(model.shape_stiffness[a]), float(model.shape_stiffness[b])
    ma, mb = float(model.shape_margin[a]), float(model.shape_margin[b])
    gap = float(model.shape_gap[a]) + float(model.shape_gap[b])
    h = sdf_b.voxel_size
    lo, hi = _cell_range(model, pose_a, pose_b, sdf_a, sdf_b, near)
    if np.any(hi < lo):
        return _empty(a, b)
    # eB at B's grid samples; eA through the pair transform (B-local → A-local), as float32
    eb = sdf_grid_values(sdf_b, lo, hi + 1) - mb
    nzs, nys, nxs = eb.shape
    ix = np.arange(lo[0], hi[0] + 2)
    iy = np.arange(lo[1], hi[1] + 2)
    iz = np.arange(lo[2], hi[2] + 2)
    Z, Y, X = np.meshgrid(sdf_b.origin[2] + iz * h, sdf_b.origin[1] + iy * h, sdf_b.origin[0] + ix * h,
                          indexing="ij")
    pts_b = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    rot_a = quat_to_matrix(pose_a[3:])
    rot_b = quat_to_matrix(pose_b[3:])
    r_ab = rot_a.T @ rot_b
    t_ab = rot_a.T @ (pose_b[:3] - pose_a[:3])
    pts_a = pts_b @ r_ab.T + t_ab
    ea = (sdf_a.sample(pts_a) - ma).reshape(eb.shape)
    ea = ea.astype(np.float32).astype(np.float64)
    eb = eb.astype(np.float32).astype(np.float64)
    f = interface_field(ea, eb, ka, kb, cfg.interface)
    origin = sdf_b.origin + lo * h
    mc = marching_cubes(f, origin=origin, spacing=h, clamp=float(cfg.mc_edge_clamp_min))
    if len(mc.faces) == 0:
        return _empty(a, b)
    va = mc.interpolate(ea)
    vb = mc.interpolate(eb)
    p = mc.vertices[mc.faces]  # (T,3,3) B-local
    cross = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    length = np.linalg.norm(cross, axis=1)
    area = 0.5 * length
    s = va[mc.faces] + vb[mc.faces]  # (T,3)
    depth = s.mean(axis=1)
    frac = _inside_fraction(s[:, 0], s[:, 1], s[:, 2])
    keep = ~((area <= DEGENERATE_AREA * h * h) | ((frac <= 0.0) & (depth > gap)))
    speculative = frac <= 0.0
    delta = vb[mc.faces].mean(axis=1)
    face_area = np.where(speculative, 0.0, area * frac)
    face_pressure = np.where(speculative, 0.0, np.maximum(0.0, -kb * delta))
    with np.errstate(divide="ignore", invalid="ignore"):
        normal_local = cross / np.where(length > 0, length, 1.0)[:, None]
    mesh = PatchMesh(
        shape_a=a, shape_b=b,
        vertices=mc.vertices @ rot_b.T + pose_b[:3],
        faces=mc.faces,
        vertex_pressure=np.maximum(0.0, -kb * vb),
        vertex_depth=va + vb,
        face_area=face_area, face_depth=depth, face_pressure=face_pressure,
        face_normal=normal_local @ rot_b.T,
        face_speculative=speculative,
    )
    return mesh.select(keep)


def _empty(a, b) -> PatchMesh:
    z = np.zeros(0)
    return PatchMesh(a, b, np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), z, z.copy(), z.copy(), z.copy(),
                     z.copy(), np.zeros((0, 3)), np.zeros(0, dtype=bool))


def patch_meshes(model, shape_poses, result, *, config=None) -> list:
    """One :class:`PatchMesh` per pair of a :class:`~hydro.types.CollisionResult` (same order as
    ``result.pair_shape_a``), each meshed near that pair's unreduced contacts."""
    patch = result.patch
    out = []
    for p, (s0, s1) in enumerate(zip(result.pair_shape_a, result.pair_shape_b)):
        near = patch.point[patch.pair == p]
        out.append(patch_mesh(model, shape_poses, int(s0), int(s1), config=config, near=near))
    return out
