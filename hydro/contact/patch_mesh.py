"""The contact patch of a shape pair as a triangle mesh, for display (NumPy only).

The contact table keeps one row per patch triangle (centroid, normal, area, …); the pipeline
also returns the triangles' vertices when asked (``collide(..., triangles=True)``), and this
module turns them into one surface per pair, with the vertices the triangles share merged
(neighbouring triangles compute a shared edge's crossing identically), so a patch can be drawn
and coloured per vertex. Nothing here recomputes the pipeline's math.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PatchMesh", "patch_mesh", "patch_meshes"]


@dataclass
class PatchMesh:
    """The patch triangles of one pair (world frame). Forces act on ``shape_b``.

    | field | shape | meaning |
    |---|---|---|
    | ``shape_a``, ``shape_b`` | int | the pair, B being the shape whose grid was meshed |
    | ``vertices`` | (V,3) | m, world |
    | ``faces`` | (T,3) int64 | wound so normals point from A toward B |
    | ``vertex_pressure`` | (V,) | Pa, k_eff·(−(eA + eB)) clipped at 0 (eX = φX − marginX; = kB·(−eB) on the patch) |
    | ``vertex_depth`` | (V,) | m, eA + eB: separation, negative when penetrating |
    | ``face_point`` | (T,3) | m, world: the contact's point — the centre of pressure of the part inside the overlap, the centroid when speculative |
    | ``face_area`` | (T,) | m², the part of the triangle inside the overlap (0 when speculative) |
    | ``face_depth`` | (T,) | m, the contact's depth: the mean of ``vertex_depth`` over the part inside the overlap |
    | ``face_pressure`` | (T,) | Pa, the contact's pressure: its force / ``face_area`` (0 when speculative) |

    Faces are in the order of the pair's contact rows. ``face_depth`` and ``face_pressure`` are the
    contact's quadrature of the linear vertex fields; where the pipeline used exact primitive
    distances on a triangle wholly inside (``HydroelasticConfig.exact_primitives``) they include its
    curvature correction, so they differ from the vertex means by O(h²).
    | ``face_normal`` | (T,3) | unit, world, from A toward B |
    | ``face_speculative`` | (T,) bool | wholly outside the overlap, within the gap band |
    """

    shape_a: int
    shape_b: int
    vertices: np.ndarray
    faces: np.ndarray
    face_point: np.ndarray
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
        """(T,3) m, world: the triangles' centroids (``face_point`` is the contact's point)."""
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
                         self.face_point[m], self.vertex_pressure[used], self.vertex_depth[used], self.face_area[m], self.face_depth[m],
                         self.face_pressure[m], self.face_normal[m], self.face_speculative[m])


def _from_rows(a, b, contacts, triangles) -> PatchMesh:
    """A pair's mesh from its rows of the patch contact table and triangle buffer."""
    verts = triangles.vertices.reshape(-1, 3)
    depth = triangles.vertex_depth.reshape(-1)
    pressure = triangles.vertex_pressure.reshape(-1)
    if len(verts):
        uniq, first, inverse = np.unique(verts, axis=0, return_index=True, return_inverse=True)
        faces = inverse.reshape(-1, 3).astype(np.int64)
        depth, pressure = depth[first], pressure[first]
    else:
        uniq, faces = np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
    return PatchMesh(
        shape_a=int(a), shape_b=int(b), vertices=uniq, faces=faces, face_point=contacts.point.astype(np.float64),
        vertex_pressure=pressure, vertex_depth=depth,
        face_area=contacts.area.astype(np.float64), face_depth=contacts.depth.astype(np.float64),
        face_pressure=contacts.pressure.astype(np.float64), face_normal=contacts.normal.astype(np.float64),
        face_speculative=contacts.speculative.copy())


def patch_meshes(model, shape_poses, result, *, config=None) -> list:
    """One :class:`PatchMesh` per pair of a :class:`~hydro.contact.types.CollisionResult` (same order as
    ``result.pair_shape_a``). When the result holds no triangles (``collide`` was called without
    ``triangles=True``) the pairs are collided again at ``shape_poses`` with ``config`` to get them."""
    if result.triangles is None:
        from .pipeline import HydroelasticPipeline

        pairs = np.column_stack([result.pair_shape_a, result.pair_shape_b])
        result = HydroelasticPipeline(model, config).collide(shape_poses, pairs=pairs, triangles=True)
    patch, tri = result.patch, result.triangles
    out = []
    for p in range(len(result.pair_shape_a)):
        rows = np.flatnonzero(patch.pair == p)
        if len(rows):
            a, b = int(patch.shape_a[rows[0]]), int(patch.shape_b[rows[0]])
        else:
            a, b = int(result.pair_shape_a[p]), int(result.pair_shape_b[p])
        sub = type(tri)(tri.vertices[rows], tri.vertex_depth[rows], tri.vertex_pressure[rows])
        out.append(_from_rows(a, b, patch.select(rows), sub))
    return out


def patch_mesh(model, shape_poses, shape_0: int, shape_1: int, *, config=None) -> PatchMesh:
    """The patch triangles of the pair ``shape_0``, ``shape_1`` at world ``shape_poses`` (S,7),
    from the pipeline (run on that pair only; ``config`` as for the pipeline)."""
    from .pipeline import HydroelasticPipeline

    result = HydroelasticPipeline(model, config).collide(shape_poses, pairs=[(shape_0, shape_1)], triangles=True)
    (mesh,) = patch_meshes(model, shape_poses, result)
    return mesh
