"""Several shapes' SDFs packed into one set of arrays, so one kernel launch can sample any of them."""

from __future__ import annotations

import numpy as np

from ..backend import get_device
from ..geometry.primitives import PRIMITIVE_KINDS
from .layout import (B_CURVED, B_EXACT_GAP, BRICK_BOUNDS, F_BAND_INNER, F_BAND_OUTER, F_COUNT, F_FACE_REACH, F_INV_VOXEL, F_JUMP, F_OFFSET,
                     F_ORIGIN, F_PRIMITIVE, F_SCALE, F_VOXEL, FORMAT_CODES, I_ATLAS_OFFSET, I_BRICKS, I_COARSE_OFFSET,
                     I_COUNT, I_FACE_CONVEX, I_FACE_COUNT, I_FACE_START, I_FACES, I_FORMAT, I_MESH, I_PLANE_COUNT, I_PLANES,
                     I_PRIMITIVE, I_RES, I_SLOPES_OFFSET,
                     I_SLOT_OFFSET, MESH_TRI_VALUES, SDFView)
from .mesh_faces import cluster_balls
from .sample import EXACT_PHI, GRID_PHI, SAMPLE_PHI, SAMPLE_PHI_GRAD


class SDFPack:
    """Several shapes' fields concatenated so one kernel launch can sample any of them.

    | array | shape | meaning |
    |---|---|---|
    | ``params_f`` | (S, F_COUNT) float64 | origin, voxel size, its inverse, scale, offset, band |
    | ``params_i`` | (S, I_COUNT) int32 | resolution, bricks, format, offsets into the arrays below |
    | ``slots`` | (Σ bricks,) int32 | fine slot per brick, −1 coarse |
    | ``coarse`` | (Σ coarse samples + bricks,) float32 | each shape's coarse grid, then its |
    |  |  | per-brick bounds (``BRICK_BOUNDS`` per brick at ``I_SLOPES_OFFSET``: three slopes, |
    |  |  | the gap between a primitive's exact φ and the stored one, whether the exact φ is |
    |  |  | curved over the brick) |
    | ``atlas_f32`` / ``atlas_u16`` / ``atlas_u8`` | (Σ samples,) | fine samples by format |
    | ``mesh_index`` … ``mesh_tri`` | | meshes' exact fields (:mod:`hydro.sdf.mesh_field`): per brick |
    |  |  | its row of cells, per cell its candidates' range, their ids (offset to the packed |
    |  |  | triangles) and lower bounds, the triangles |
    | ``planes`` | (Σ rows, 4) float64 | each shape's flat faces (:func:`shape_planes`), then its |
    |  |  | bounding box's centre and half extents |
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
        mesh_index, mesh_cells, mesh_ids, mesh_key, mesh_tri = [], [], [], [], []
        index_off = rows_off = entries_off = tri_off = 0
        planes = []
        plane_off = 0
        face_start, face_ids, face_gap, face_rule, face_link = [], [], [], [], []
        face_rows = face_entries = 0
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
            kind = sdf.geometry.kind
            if kind in PRIMITIVE_KINDS:
                pi[s, I_PRIMITIVE] = kind
                params = np.asarray(sdf.geometry.params(), dtype=float)
                pf[s, F_PRIMITIVE : F_PRIMITIVE + 3] = params[:3]
            else:
                pi[s, I_PRIMITIVE] = -1
            mf = getattr(sdf, "mesh_field", None)
            pi[s, I_MESH] = -1
            pi[s, I_FACES] = -1
            cf = getattr(sdf, "face_lists", None)
            if mf is not None and cf is not None:
                pi[s, I_FACES] = tri_off
                pi[s, I_FACE_COUNT] = len(mf.tri)
                pi[s, I_FACE_START] = face_rows
                pf[s, F_FACE_REACH] = cf.reach
                n_ids = int(cf.start[-1])
                face_start.append(cf.start[:-1].astype(np.int64) + face_entries)
                face_ids.append(cf.ids[:n_ids].astype(np.int64) + tri_off)
                face_gap.append(cf.gap[:n_ids])
                face_rule.append(cf.rule[:n_ids])
                face_link.append(cf.link[:n_ids])
                pi[s, I_FACE_CONVEX] = 1 if cf.convex else 0
                face_rows += len(cf.start) - 1
                face_entries += n_ids
            if mf is not None:
                pi[s, I_MESH] = index_off
                mesh_index.append(np.where(mf.brick_row >= 0, mf.brick_row + rows_off, -1))
                n_entries = int(mf.cell_start[-1])
                mesh_cells.append(mf.cell_start[:-1].astype(np.int64) + entries_off)
                mesh_ids.append(mf.ids[:n_entries].astype(np.int64) + tri_off)
                mesh_key.append(mf.key[:n_entries])
                mesh_tri.append(mf.tri)
                index_off += len(mf.brick_row)
                rows_off += mf.rows
                entries_off += n_entries
                tri_off += len(mf.tri)
            rows, count = shape_planes(sdf.geometry)
            if mf is not None and cf is not None:  # its triangles' clusters (hydro.sdf.mesh_faces)
                rows = np.concatenate([rows, cluster_balls(mf.tri)])
            pi[s, I_PLANES] = plane_off
            pi[s, I_PLANE_COUNT] = count
            planes.append(rows)
            plane_off += len(rows)
            slots.append(sdf.brick_slot.ravel())
            coarse.append(sdf.coarse.ravel())
            bounds = np.zeros((sdf.brick_count, BRICK_BOUNDS), np.float32)
            bounds[:, :3] = sdf.brick_slopes.reshape(-1, 3)
            if sdf.brick_exact_gap is not None:
                bounds[:, B_EXACT_GAP] = sdf.brick_exact_gap.ravel()
            bounds[:, B_CURVED] = 1.0 if sdf.brick_curved is None else sdf.brick_curved.ravel()
            coarse.append(bounds.ravel())
            atlases[fmt].append(sdf.atlas.ravel())
            slot_off += sdf.brick_slot.size
            coarse_off += sdf.coarse.size + bounds.size
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
        if entries_off >= 2**31 or tri_off >= 2**31:
            raise ValueError("the packed meshes' exact fields exceed 2^31 entries; use fewer or coarser meshes")
        self.mesh_index = cat(mesh_index, np.int32)
        self.mesh_cells = cat(mesh_cells + [np.array([entries_off])], np.int32)
        self.mesh_ids = cat(mesh_ids, np.int32) if entries_off else np.zeros(1, np.int32)
        self.mesh_key = cat(mesh_key, np.float32) if entries_off else np.zeros(1, np.float32)
        self.mesh_tri = (np.ascontiguousarray(np.concatenate(mesh_tri).astype(np.float32)) if tri_off
                         else np.zeros((1, MESH_TRI_VALUES), np.float32))
        self.planes = np.ascontiguousarray(np.concatenate(planes)) if planes else np.zeros((1, 4))
        if face_entries >= 2**31:
            raise ValueError("the packed convex meshes' face neighbours exceed 2^31 entries; use fewer meshes")
        self.face_start = cat(face_start + [np.array([face_entries])], np.int32)
        self.face_ids = cat(face_ids, np.int32) if face_entries else np.zeros(1, np.int32)
        self.face_gap = cat(face_gap, np.float32) if face_entries else np.zeros(1, np.float32)
        self.face_rule = cat(face_rule, np.int32) if face_entries else np.zeros(1, np.int32)
        self.face_link = cat(face_link, np.int64) if face_entries else np.zeros(1, np.int64)
        self._views = {}

    def __len__(self) -> int:
        return len(self.sdfs)

    def view(self, device="cpu") -> SDFView:
        """The packed arrays on ``device``, as the one :class:`~hydro.sdf.layout.SDFView` argument
        that the sampling helpers take (copied to the device once, then reused)."""
        dev = get_device(device)
        if dev.name not in self._views:
            host = SDFView(self.params_f, self.params_i, self.slots, self.coarse, self.atlas_f32, self.atlas_u16,
                           self.atlas_u8, self.mesh_index, self.mesh_cells, self.mesh_ids, self.mesh_key, self.mesh_tri,
                           self.planes, self.face_start, self.face_ids, self.face_gap, self.face_rule,
                           self.face_link)
            self._views[dev.name] = SDFView(*(dev.asarray(a) for a in host))
        return self._views[dev.name]

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
        dev.launch(SAMPLE_PHI, len(pts), dev.asarray(ids), dev.asarray(pts), self.view(dev), out)
        return dev.to_host(out)

    def sample_exact(self, shape_ids, points, *, device="cpu") -> np.ndarray:
        """The exact φ of shape ``shape_ids[i]`` at its local point ``points[i]``, as the pipeline
        evaluates it where the patch is built: a primitive's closed form, a mesh's distance to its
        triangles (where its cells list them; else, like a shape without either, the stored field)."""
        dev = get_device(device)
        ids, pts = self._points(shape_ids, points)
        out = dev.full(len(pts), np.nan, np.float64)
        dev.launch(EXACT_PHI, len(pts), dev.asarray(ids), dev.asarray(pts), self.view(dev), out)
        return dev.to_host(out)

    def sample_grad(self, shape_ids, points, *, device="cpu"):
        """(φ, ∇φ) of shape ``shape_ids[i]`` at its local point ``points[i]``."""
        dev = get_device(device)
        ids, pts = self._points(shape_ids, points)
        phi = dev.full(len(pts), np.nan, np.float64)
        grad = dev.full((len(pts), 3), np.nan, np.float64)
        dev.launch(SAMPLE_PHI_GRAD, len(pts), dev.asarray(ids), dev.asarray(pts), self.view(dev), phi, grad)
        return dev.to_host(phi), dev.to_host(grad)

    def grid_values(self, shape: int, lo=(0, 0, 0), hi=None, *, device="cpu") -> np.ndarray:
        """φ of shape ``shape`` at its grid samples ``lo..hi`` (inclusive (x, y, z) index ranges;
        default the whole grid), shape (z, y, x): the values the kernels read there."""
        dev = get_device(device)
        if not 0 <= shape < len(self):
            raise ValueError(f"shape must lie in [0, {len(self) - 1}], got {shape}")
        res = np.asarray(self.sdfs[shape].resolution, dtype=np.int64)
        lo = np.asarray(lo, dtype=np.int64)
        hi = res.copy() if hi is None else np.asarray(hi, dtype=np.int64)
        if np.any(lo < 0) or np.any(hi > res) or np.any(hi < lo):
            raise ValueError(f"sample range {lo.tolist()}..{hi.tolist()} is outside the grid 0..{res.tolist()}")
        count = hi - lo + 1
        out = dev.full(int(np.prod(count)), np.nan, np.float64)
        dev.launch(GRID_PHI, len(out), int(shape), int(lo[0]), int(lo[1]), int(lo[2]), int(count[0]), int(count[1]),
                   self.view(dev), out)
        return dev.to_host(out).reshape(count[2], count[1], count[0])


#: Two planes are one face when their normals agree to this (|1 − n·n'|) and their offsets to this
#: fraction of the shape's size: a convex hull's coplanar triangles give one plane each.
PLANE_MERGE = 1e-9


def shape_planes(geometry):
    """``(rows, count)``: the flat faces of ``geometry`` as planes (n, c), n·x + c its signed
    distance (n outward, unit; local frame), ``count`` of them, then two rows: the shape's local
    bounding box's centre, then its half extents and the radius of a ball about the centre that
    holds the shape. A box: its six faces (face f along axis f // 2, + for even f); a convex mesh:
    its distinct face planes (coplanar triangles merged); a cylinder: its two caps (+z, −z); a
    cone: its base (−z); a mesh: none (its box and ball only); any other shape: none and no rows."""
    from ..geometry.primitives import BOX, CONE, CONVEX_MESH, CYLINDER, MESH

    kind = geometry.kind
    radius = None
    if kind == BOX:
        half = np.asarray(geometry.params()[:3], dtype=float)
        rows = []
        for f in range(6):
            n = np.zeros(3)
            n[f >> 1] = 1.0 if f % 2 == 0 else -1.0
            rows.append([*n, -half[f >> 1]])
        centre = np.zeros(3)
    elif kind in (CYLINDER, CONE):
        r, hh = (float(v) for v in geometry.params()[:2])
        rows = [[0.0, 0.0, 1.0, -hh], [0.0, 0.0, -1.0, -hh]] if kind == CYLINDER else [[0.0, 0.0, -1.0, -hh]]
        half = np.array([r, r, hh])
        centre = np.zeros(3)
    elif kind == CONVEX_MESH:
        v = np.asarray(geometry.vertices, dtype=float)
        lo, hi = v.min(axis=0), v.max(axis=0)
        centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        radius = float(np.linalg.norm(v - centre, axis=1).max())
        size = float(np.linalg.norm(hi - lo))
        rows = np.zeros((0, 4))
        for q in np.asarray(geometry.planes, dtype=float):
            n, d = q[:3], q[3]
            same = (np.abs(1.0 - rows[:, :3] @ n) <= PLANE_MERGE) & (np.abs(rows[:, 3] + d) <= PLANE_MERGE * size)
            if not np.any(same):
                rows = np.vstack([rows, [*n, -d]])
    elif kind == MESH:  # no planes: its box and ball (the convex-face route, hydro.contact.faces)
        v = np.asarray(geometry.vertices, dtype=float)
        lo, hi = v.min(axis=0), v.max(axis=0)
        centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        radius = float(np.linalg.norm(v - centre, axis=1).max())
        rows = []
    else:
        return np.zeros((2, 4)), 0
    out = np.zeros((len(rows) + 2, 4))
    if len(rows):
        out[:len(rows)] = rows
    out[len(rows), :3] = centre
    out[len(rows) + 1, :3] = half
    # the ball's radius, rounded up (float32 corners of a mesh's triangle table lie within it too)
    out[len(rows) + 1, 3] = (float(np.linalg.norm(half)) if radius is None else radius) * (1.0 + 1e-6) + 1e-9
    return out, len(rows)
