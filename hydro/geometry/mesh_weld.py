"""Welding a triangle soup: vertices merged by position, collapsed faces dropped.

Below every other mesh module (:mod:`.mesh_winding`, :mod:`.mesh_distance`, :mod:`.mesh_check`,
:mod:`.shapes` import it; it imports none of them), so hydro/geometry has no import cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, shown

__all__ = ["WELD_TOLERANCE", "WeldReport", "weld"]

#: Vertices closer than this fraction of the bounding-box diagonal are merged by :func:`weld`
#: (far below a voxel: a 64³ grid has voxels of about 1/64 of the longest side).
WELD_TOLERANCE = 1e-6


@dataclass(frozen=True)
class WeldReport:
    """What :func:`weld` changed."""

    tolerance: float  # m, absolute
    vertices_in: int
    vertices_out: int
    faces_in: int
    collapsed_faces: int  # faces with two corners merged into one vertex (dropped)

    @property
    def faces_out(self) -> int:
        return self.faces_in - self.collapsed_faces

    @property
    def changed(self) -> bool:
        return self.vertices_out != self.vertices_in or self.collapsed_faces > 0

    def summary(self) -> str:
        if not self.changed:
            return f"welding (tolerance {self.tolerance:.3g} m) changed nothing"
        text = (f"welded {self.vertices_in} vertices into {self.vertices_out} (tolerance {self.tolerance:.3g} m)")
        if self.collapsed_faces:
            text += f", dropped {self.collapsed_faces} collapsed face(s)"
        return text


def weld(vertices, faces, *, tolerance: float | None = None):
    """Merge vertices closer than ``tolerance`` (m; default :data:`WELD_TOLERANCE` × the
    bounding-box diagonal). Returns ``(vertices, faces, WeldReport)``; faces whose corners
    merge are dropped, unused vertices removed, each kept vertex keeps its first position."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    diag = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0))) if len(v) else 0.0
    tol = WELD_TOLERANCE * diag if tolerance is None else float(tolerance)
    if not math.isfinite(tol) or tol < 0.0:
        raise InputError(f"weld tolerance must be a finite number >= 0, got {shown(tolerance)}")
    # exact duplicates first (cheap), then clusters of distinct positions within the tolerance
    # (a lexicographic sort of the rows: np.unique(axis=0) does the same, several times slower)
    order = np.lexsort((v[:, 2], v[:, 1], v[:, 0])) if len(v) else np.zeros(0, dtype=np.int64)
    ordered = v[order]
    starts = np.concatenate([[True], np.any(ordered[1:] != ordered[:-1], axis=1)]) if len(v) else np.zeros(0, bool)
    uniq = ordered[starts]
    label = np.empty(len(v), dtype=np.int64)
    label[order] = np.cumsum(starts) - 1
    if tol > 0.0 and len(uniq) > 1:
        pairs = cKDTree(uniq).query_pairs(tol, output_type="ndarray")
        if len(pairs):
            graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(uniq), len(uniq)))
            _, cluster = connected_components(graph, directed=False)
            label = cluster[label]
    # each cluster is represented by its first vertex (in input order)
    rep = np.full(label.max() + 1 if len(label) else 0, len(v), dtype=np.int64)
    np.minimum.at(rep, label, np.arange(len(v)))
    new_f = label[f]
    keep = (new_f[:, 0] != new_f[:, 1]) & (new_f[:, 1] != new_f[:, 2]) & (new_f[:, 2] != new_f[:, 0])
    new_f = new_f[keep]
    used = np.unique(new_f)
    remap = np.full(len(rep), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    out_v = v[rep[used]]
    out_f = remap[new_f]
    report = WeldReport(tolerance=tol, vertices_in=len(v), vertices_out=len(out_v), faces_in=len(f),
                        collapsed_faces=int(np.sum(~keep)))
    return out_v, out_f, report
