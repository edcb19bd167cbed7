"""A convex mesh's faces for the exact polygon route (stage 4b, :mod:`hydro.contact.faces`).

Inside a closed convex polyhedron the signed distance is the largest of its face planes' signed
distances, and an inside point's nearest boundary point is its projection on that plane, which
lies in the face: the point lies in the face's *prism* (the face swept along its normal). So
within a depth D below the surface, the region where triangle i's plane is the field is bounded by
that prism and by the planes of the triangles within 2·D of triangle i (a point at depth ≤ D below
triangle i whose nearest triangle is m lies within D of both: :mod:`hydro.contact.faces` gives the
argument). Built here once per mesh, beside its exact field, when the mesh's solid is convex:

- per triangle (the rows of the exact field's triangle table, :func:`~.mesh_field.triangle_table`),
  the triangles within 2·``reach`` of it (exact triangle–triangle distance of the stored corners),
  its *neighbours*, nearest first with their distances, CSR in ``start`` / ``ids`` / ``gap`` (a
  pair then clips against those within twice its own depth bound);
- ``reach``: ``FACE_REACH_VOXELS`` voxels, less where lists of ``MAX_FACE_NEIGHBOURS`` do not hold
  every triangle that near (small triangles, many at a vertex; under ``MIN_FACE_REACH_VOXELS``:
  no lists). The route takes a pair only when neither shape can be pressed deeper than its reach
  (:func:`hydro.contact.face_bounds.faces_fit`); deeper pairs take the grid.

Packed with the mesh (:func:`cluster_balls`): per run of ``FACE_CLUSTER`` consecutive triangles a
ball holding theirs, so that the search for the triangles near the other shape of a pair passes
over a run at once (a mesh's triangles usually come in spatially coherent order, as subdivision and
most exporters make them; an incoherent order only makes the balls large, never wrong).

A mesh is convex when every vertex of its solid lies on or below every triangle's plane, to
``CONVEX_TOLERANCE`` of its size (rounding: the triangle table stores float32 corners); checked
only below ``MAX_FACE_TRIANGLES`` triangles (the check costs triangles × hull vertices).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import cpu_jit
from ..geometry.mesh_distance import _closest_on_triangle
from ..geometry.support import closest_segments
from .layout import FACE_CLUSTER, MESH_TRI_BALL, MESH_TRI_PLANE

#: Depth (× the shape's voxel) the neighbour lists hold for, at most (less where lists of
#: ``MAX_FACE_NEIGHBOURS`` do not reach that far)
FACE_REACH_VOXELS = 8.0
#: ... and at least: a mesh whose lists reach less gets none (the grid route)
MIN_FACE_REACH_VOXELS = 0.5
#: Vertices may lie this far (× the mesh's bounding diagonal) above a face plane of a convex mesh
CONVEX_TOLERANCE = 1e-6
#: Larger meshes are not checked for convexity (they take the grid route)
MAX_FACE_TRIANGLES = 5000
#: Neighbours listed per triangle at most (a piece is clipped against both triangles' lists)
MAX_FACE_NEIGHBOURS = 64
#: A triangle of area below this (× the diagonal²) has no region of its own: it lists no neighbours
#: and is no neighbour
DEGENERATE_FACE = 1e-12


@dataclass
class ConvexFaces:
    """The neighbour lists of a convex mesh's triangles (see the module docstring).

    | field | shape | meaning |
    |---|---|---|
    | ``start`` | (T + 1,) int32 | triangle t's neighbours are ``ids[start[t]:start[t + 1]]`` |
    | ``ids`` | (E,) int32 | rows of the triangle table (t itself not listed), nearest first |
    | ``gap`` | (E,) float32 | each one's distance from t, rounded down |
    | ``reach`` | float | m: the depth the lists hold for |
    """

    start: np.ndarray
    ids: np.ndarray
    gap: np.ndarray
    reach: float

    @property
    def nbytes(self) -> int:
        return int(self.start.nbytes + self.ids.nbytes + self.gap.nbytes)


def is_convex(vertices, faces, tolerance=CONVEX_TOLERANCE) -> bool:
    """Whether the closed mesh (``vertices``, ``faces``, outward winding) bounds a convex solid:
    every vertex on or below every face's plane, within ``tolerance`` × its bounding diagonal."""
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64)
    if len(f) == 0 or len(f) > MAX_FACE_TRIANGLES:
        return False
    size = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    n = np.cross(b - a, c - a)
    length = np.linalg.norm(n, axis=1)
    ok = length > DEGENERATE_FACE * size * size
    n = n[ok] / length[ok, None]
    off = np.einsum("ij,ij->i", n, a[ok])
    used = v[np.unique(f)]
    for lo in range(0, len(n), 1024):  # vertices × a chunk of faces at a time
        above = used @ n[lo:lo + 1024].T - off[lo:lo + 1024]
        if above.max() > tolerance * size:
            return False
    return True


@cpu_jit
def _segment_gap(px, py, pz, qx, qy, qz, rx, ry, rz, sx, sy, sz):
    """The distance between segments pq and rs."""
    s, t = closest_segments(px, py, pz, qx, qy, qz, rx, ry, rz, sx, sy, sz)
    dx = px + s * (qx - px) - (rx + t * (sx - rx))
    dy = py + s * (qy - py) - (ry + t * (sy - ry))
    dz = pz + s * (qz - pz) - (rz + t * (sz - rz))
    return np.sqrt(dx * dx + dy * dy + dz * dz)


@cpu_jit
def _triangle_gaps(corners, first, second, out):
    """The distance between triangles first[k] and second[k] (corners: (T, 3, 3)) for each k,
    for two triangles that do not cross (a convex mesh's): the least over each one's corners to the
    other and over their edges' pairs."""
    for k in range(len(first)):
        a = corners[first[k]]
        b = corners[second[k]]
        best = np.inf
        for u in range(2):
            p_tri = a if u == 0 else b
            q_tri = b if u == 0 else a
            for v in range(3):
                x, y, z, _ = _closest_on_triangle(p_tri[v, 0], p_tri[v, 1], p_tri[v, 2], q_tri[0, 0], q_tri[0, 1],
                                                  q_tri[0, 2], q_tri[1, 0], q_tri[1, 1], q_tri[1, 2], q_tri[2, 0],
                                                  q_tri[2, 1], q_tri[2, 2])
                d = np.sqrt((x - p_tri[v, 0]) ** 2 + (y - p_tri[v, 1]) ** 2 + (z - p_tri[v, 2]) ** 2)
                best = min(best, d)
        for v in range(3):
            for w in range(3):
                best = min(best, _segment_gap(a[v, 0], a[v, 1], a[v, 2], a[(v + 1) % 3, 0], a[(v + 1) % 3, 1],
                                              a[(v + 1) % 3, 2], b[w, 0], b[w, 1], b[w, 2], b[(w + 1) % 3, 0],
                                              b[(w + 1) % 3, 1], b[(w + 1) % 3, 2]))
        out[k] = best


def convex_faces(tri, h: float) -> ConvexFaces | None:
    """The neighbour lists of the triangle table ``tri`` (float32 rows: corners, ball, plane) of a
    convex mesh whose grid has voxel ``h``: complete within twice their ``reach``, at most
    ``FACE_REACH_VOXELS`` voxels and as far as lists of ``MAX_FACE_NEIGHBOURS`` hold; None when
    that is under ``MIN_FACE_REACH_VOXELS`` (triangles too small or too many at a vertex)."""
    from scipy.spatial import cKDTree

    corners = tri[:, 0:9].astype(np.float64).reshape(-1, 3, 3)
    centre = tri[:, MESH_TRI_BALL:MESH_TRI_BALL + 3].astype(np.float64)
    radius = tri[:, MESH_TRI_BALL + 3].astype(np.float64)
    size = float(np.linalg.norm(corners.reshape(-1, 3).max(axis=0) - corners.reshape(-1, 3).min(axis=0)))
    area2 = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    live = ((area2 > 2.0 * DEGENERATE_FACE * size * size)
            & np.any(tri[:, MESH_TRI_PLANE:MESH_TRI_PLANE + 3] != 0, axis=1))
    alive = np.flatnonzero(live)
    if len(alive) == 0:
        return None
    r_max = float(radius[alive].max())
    # each triangle's nearest centres; a triangle beyond them is at least their farthest centre's
    # distance minus both radii away, which bounds how far the lists are complete
    k = min(len(alive), 4 * MAX_FACE_NEIGHBOURS + 1)
    dist, idx = cKDTree(centre[alive]).query(centre[alive], k)
    dist, idx = dist.reshape(len(alive), k), alive[idx.reshape(len(alive), k)]
    first = np.repeat(alive, k)
    gaps = np.zeros(len(first))
    _triangle_gaps(corners, first, idx.ravel(), gaps)
    gaps = (gaps * (1.0 - 1e-9) - 1e-12 * size).reshape(len(alive), k)  # rounded down: lower bounds
    gaps[idx == alive[:, None]] = np.inf  # the triangle itself
    complete = np.full(len(alive), np.inf) if k == len(alive) else dist[:, -1] - radius[alive] - r_max
    # nearest first, and among those that touch, the nearest centres (across an edge) first: an
    # empty piece stops soonest
    order = np.lexsort((dist, gaps), axis=1)
    gaps = np.take_along_axis(gaps, order, axis=1)
    idx = np.take_along_axis(idx, order, axis=1)
    if k > MAX_FACE_NEIGHBOURS:
        complete = np.minimum(complete, gaps[:, MAX_FACE_NEIGHBOURS])
    reach = min(FACE_REACH_VOXELS * float(h), 0.5 * float(complete.min()) * (1.0 - 1e-9))
    if not reach >= MIN_FACE_REACH_VOXELS * float(h):
        return None
    keep = gaps <= 2.0 * reach
    counts = np.zeros(len(tri), np.int64)
    counts[alive] = keep.sum(axis=1)
    start = np.zeros(len(tri) + 1, np.int64)
    np.cumsum(counts, out=start[1:])
    ids = np.zeros(max(int(start[-1]), 1), np.int64)
    gap = np.zeros(max(int(start[-1]), 1))
    ids[:start[-1]] = idx[keep]  # row by row: the alive triangles in order, each nearest first
    gap[:start[-1]] = gaps[keep]
    g32 = gap.astype(np.float32)
    g32 = np.where(g32.astype(np.float64) > gap, np.nextafter(g32, np.float32(-np.inf)), g32)  # still a lower bound
    return ConvexFaces(start=start.astype(np.int32), ids=ids.astype(np.int32), gap=g32, reach=reach)


#: Relative slack of a cluster's ball over its triangles' (covers the rounding of the tests that use it)
CLUSTER_SLACK = 1e-6


def cluster_balls(tri: np.ndarray) -> np.ndarray:
    """Per run of ``FACE_CLUSTER`` consecutive rows of the triangle table ``tri`` (the last run may
    be shorter): a ball (x, y, z, r) holding each of their balls (the centre their balls' mean,
    the radius the farthest reach, widened by ``CLUSTER_SLACK``), float64, (runs, 4)."""
    balls = np.asarray(tri[:, MESH_TRI_BALL:MESH_TRI_BALL + 4], dtype=np.float64)
    out = np.zeros((-(-len(balls) // FACE_CLUSTER), 4))
    for c in range(len(out)):
        run = balls[c * FACE_CLUSTER:(c + 1) * FACE_CLUSTER]
        centre = run[:, :3].mean(axis=0)
        reach = float((np.linalg.norm(run[:, :3] - centre, axis=1) + run[:, 3]).max())
        out[c, :3] = centre
        out[c, 3] = reach * (1.0 + CLUSTER_SLACK) + CLUSTER_SLACK * float(np.abs(centre).max())
    return out
