"""Convex hulls of point sets: the ``physics:approximation = "convexHull"`` collider.

A :class:`ConvexMesh` is a closed, outward-wound triangle mesh (so it can also carry an SDF) that
additionally knows its face planes and answers support queries, which the default contact path's
convex–convex tests use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .primitives import CONVEX_MESH
from .shapes import Mesh
from ..errors import shown

__all__ = ["ConvexMesh"]


def _reduce_points(points: np.ndarray, max_vertices: int) -> np.ndarray:
    """At most ``max_vertices`` of the points, spread out (farthest-point sampling, deterministic:
    it starts from the point farthest from the centroid)."""
    c = points.mean(axis=0)
    chosen = [int(np.argmax(np.linalg.norm(points - c, axis=1)))]
    d = np.linalg.norm(points - points[chosen[0]], axis=1)
    while len(chosen) < max_vertices:
        i = int(np.argmax(d))
        if d[i] <= 0.0:
            break
        chosen.append(i)
        d = np.minimum(d, np.linalg.norm(points - points[i], axis=1))
    return points[sorted(chosen)]


@dataclass(frozen=True, eq=False)
class ConvexMesh(Mesh):
    """The convex hull of a point set, as a closed triangle mesh wound outward.

    Make one with :meth:`from_points` (or :meth:`Mesh.convex_hull`); the constructor takes the hull's
    own vertices and faces. ``planes`` (F, 4): each face's outward unit normal n and offset d
    (n·x = d on the face, n·x <= d inside).
    """

    kind = CONVEX_MESH

    def __post_init__(self):
        super().__post_init__()
        a, b, c = (self.vertices[self.faces[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        length = np.linalg.norm(n, axis=1)
        if np.any(length <= 0.0):
            raise ValueError(f"mesh {self.name!r}: a convex hull face is degenerate")
        n /= length[:, None]
        planes = np.concatenate([n, np.einsum("ij,ij->i", n, a)[:, None]], axis=1)
        planes.setflags(write=False)
        object.__setattr__(self, "planes", planes)
        object.__setattr__(self, "_key", ("convex",) + self._key[1:])

    def __eq__(self, other):
        return isinstance(other, ConvexMesh) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    @classmethod
    def from_points(cls, points, *, max_vertices: int = -1, name: str = "convex hull") -> "ConvexMesh":
        """The convex hull of ``points`` (N, 3). ``max_vertices`` > 0 keeps at most that many hull
        vertices (spread out by farthest-point sampling, then hulled again); −1 keeps them all.
        Points that span no volume (fewer than 4, collinear, coplanar) raise ``ValueError``."""
        from scipy.spatial import ConvexHull, QhullError

        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if isinstance(max_vertices, bool) or int(max_vertices) != max_vertices or (max_vertices < 4
                                                                                  and max_vertices != -1):
            raise ValueError(f"{name}: max_vertices must be -1 (no limit) or an integer >= 4, got {shown(max_vertices)}")
        if not np.all(np.isfinite(pts)):
            raise ValueError(f"{name}: the points must be finite")
        try:
            hull = ConvexHull(pts)
            if max_vertices > 0 and len(hull.vertices) > max_vertices:
                pts = _reduce_points(pts[hull.vertices], int(max_vertices))
                hull = ConvexHull(pts)
        except (QhullError, ValueError) as exc:
            raise ValueError(f"{name}: the convex hull cannot be built — the points span no volume "
                             f"(fewer than 4, collinear or coplanar): {str(exc).splitlines()[0]}") from None
        used = np.unique(hull.simplices)
        remap = np.full(len(pts), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        verts = pts[used]
        faces = remap[hull.simplices]
        # wind every face outward: its normal along qhull's outward plane normal
        a, b, c = (verts[faces[:, k]] for k in range(3))
        flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0.0
        faces[flip] = faces[flip][:, ::-1]
        return cls(verts, faces, name=name)

    def support(self, direction) -> np.ndarray:
        """The hull vertex farthest along ``direction`` (3,)."""
        return self.vertices[int(np.argmax(self.vertices @ np.asarray(direction, dtype=float)))]
