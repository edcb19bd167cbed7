"""Convex hulls of point sets: the ``physics:approximation = "convexHull"`` collider.

A :class:`ConvexMesh` is a closed, outward-wound triangle mesh (so it can also carry an SDF) that
additionally knows its face planes and answers support queries, which the default contact path's
convex–convex tests use.
"""

from __future__ import annotations

from .shapes import ConvexMesh, _reduce_points  # noqa: F401  (defined beside Mesh: no import cycle)

__all__ = ["ConvexMesh"]
