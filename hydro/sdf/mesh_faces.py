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

A closed non-convex mesh (``MAX_REGION_TRIANGLES`` at most) gets the same lists with a rule per neighbour
(:func:`region_rules`: max, min or none, and which max-rule neighbours are mutually reflex), which
the face route takes against a shape of planes (docs/design.md stage 4b).
"""

from __future__ import annotations

import math
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
    | ``rule`` | (E,) int32 | how each neighbour bounds t's region (``RULE_*``; all ``RULE_MAX`` on a convex mesh) |
    | ``link`` | (E,) int64 | bit b: this max-rule neighbour and t's b-th are mutually reflex (clustered) |
    | ``convex`` | bool | the mesh is convex (else its triangles' regions follow :func:`region_rules`) |
    """

    start: np.ndarray
    ids: np.ndarray
    gap: np.ndarray
    reach: float
    rule: np.ndarray = None
    link: np.ndarray = None
    convex: bool = True

    def __post_init__(self):
        if self.rule is None:
            self.rule = np.zeros(len(self.ids), np.int32)
        if self.link is None:
            self.link = np.zeros(len(self.ids), np.int64)

    @property
    def nbytes(self) -> int:
        return int(self.start.nbytes + self.ids.nbytes + self.gap.nbytes + self.rule.nbytes + self.link.nbytes)


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


# ---------------------------------------------------------------------------------------------
# Regions of a non-convex mesh's triangles (docs/design.md stage 4b)

#: A neighbour m bounds triangle i's region: plane_m <= plane_i (across a convex edge, or mutually inside)
RULE_MAX = 0
#: plane_i <= plane_m (mutually outside: a reflex pair; the deeper plane is the field between them)
RULE_MIN = 1
#: no bound from m (coplanar, behind i, or mixed)
RULE_SKIP = 2
#: RULE_MIN across i's edge k (corners k → k + 1): i's prism side along that edge is not applied
RULE_MIN_EDGE = 3
#: Max-rule neighbours that are mutually reflex (``link``) form clusters: plane_i >= the least of a
#: cluster's planes (a union: one piece per choice of each cluster's least). Clusters per triangle at
#: most, and pieces per triangle pair (choices) at most, over every prefix of its list
MAX_CLUSTERS = 8
MAX_CHOICES = 64
#: A non-convex mesh of more triangles gets no rules (their lists and rules cost about 0.13 s of build
#: per 1000 triangles: a 4900-triangle torus 0.64 s on top of its 0.7 s field)
MAX_REGION_TRIANGLES = 2000
#: A non-convex mesh whose reflex edges turn by more than this (the angle between their faces'
#: normals) gets no rules: in a reflex edge's wedge the route's depth is short by up to
#: 1 − cos(θ/2) of it (1.5 % at 20°), and it takes marching cubes on the exact field instead
MAX_REFLEX_DEGREES = 20.0


@cpu_jit
def _plane_range(n, c, corners):
    lo = np.inf
    hi = -np.inf
    for v in range(3):
        s = n[0] * corners[v, 0] + n[1] * corners[v, 1] + n[2] * corners[v, 2] + c
        lo = min(lo, s)
        hi = max(hi, s)
    return lo, hi


@cpu_jit
def _parallel(normals, a, b):
    """Whether triangles a and b face the same way (unit normals within 1e-5)."""
    return (abs(normals[a, 0] - normals[b, 0]) <= 1e-5 and abs(normals[a, 1] - normals[b, 1]) <= 1e-5
            and abs(normals[a, 2] - normals[b, 2]) <= 1e-5)


@cpu_jit
def _reflex_pair(corners, normals, offsets, a, b, tol):
    """Whether triangles a and b are mutually outside (each one's corners on or above the other's plane)."""
    if _parallel(normals, a, b):
        return False
    lo_ab, hi_ab = _plane_range(normals[a], offsets[a], corners[b])
    lo_ba, hi_ba = _plane_range(normals[b], offsets[b], corners[a])
    return lo_ab >= -tol and lo_ba >= -tol


@cpu_jit
def _region_rules(corners, normals, offsets, vid, start, ids, tol, rule, link, ok):
    T = len(start) - 1
    label = np.zeros(MAX_FACE_NEIGHBOURS, np.int64)
    for i in range(T):
        e0 = start[i]
        e1 = start[i + 1]
        for e in range(e0, e1):
            m = ids[e]
            shared = 0
            first = -1
            for u in range(3):
                for w in range(3):
                    if vid[i, u] == vid[m, w]:
                        shared += 1
                        if first < 0:
                            first = u
                        elif u != first + 1:
                            first = 2  # corners 2 and 0: edge 2
            coplanar = _parallel(normals, m, i)
            si_lo, si_hi = _plane_range(normals[i], offsets[i], corners[m])
            sm_lo, sm_hi = _plane_range(normals[m], offsets[m], corners[i])
            link[e] = 0
            if coplanar and max(si_hi, -si_lo) <= tol:
                rule[e] = RULE_SKIP
            elif shared >= 3:
                ok[i] = False  # a duplicate triangle
                rule[e] = RULE_SKIP
            elif shared == 2:
                # m's far corner against i's plane decides: below (convex edge) or above (reflex)
                far = 0.0
                for w in range(3):
                    if vid[m, w] != vid[i, 0] and vid[m, w] != vid[i, 1] and vid[m, w] != vid[i, 2]:
                        far = (normals[i, 0] * corners[m, w, 0] + normals[i, 1] * corners[m, w, 1]
                               + normals[i, 2] * corners[m, w, 2] + offsets[i])
                rule[e] = RULE_MAX if far <= 0.0 else RULE_MIN_EDGE + first
            elif si_hi <= tol and sm_hi <= tol:
                rule[e] = RULE_MAX
            elif si_lo >= -tol and sm_lo >= -tol:
                rule[e] = RULE_MIN
            else:
                rule[e] = RULE_SKIP  # behind i, or mixed
        # the max-rule neighbours that are mutually reflex: linked (bit b of an entry's link: its
        # list's entry b); the route clusters those of a pair's cached prefix of the list
        n = e1 - e0
        for a in range(n):
            if rule[e0 + a] != RULE_MAX:
                continue
            for b in range(a + 1, n):
                if rule[e0 + b] == RULE_MAX and _reflex_pair(corners, normals, offsets, ids[e0 + a], ids[e0 + b],
                                                             tol):
                    link[e0 + a] |= np.int64(1) << np.int64(b)
                    link[e0 + b] |= np.int64(1) << np.int64(a)
        # every prefix (the route caches the neighbours within twice its depth bound, nearest first)
        # must make at most MAX_CLUSTERS clusters and MAX_CHOICES pieces
        for k in range(n):
            label[k] = k
            if rule[e0 + k] == RULE_MAX:
                for b in range(k):  # join k's earlier links' clusters (labels: their least entry)
                    if (link[e0 + k] >> np.int64(b)) & 1:
                        old = label[b]
                        new = min(old, label[k])
                        other = max(old, label[k])
                        for c in range(k + 1):
                            if label[c] == other:
                                label[c] = new
            clusters = 0
            choices = 1
            for r in range(k + 1):
                size = 0
                for c in range(k + 1):
                    if label[c] == r and rule[e0 + c] == RULE_MAX:
                        size += 1
                if size >= 2:
                    clusters += 1
                    choices *= size
            if clusters > MAX_CLUSTERS or choices > MAX_CHOICES:
                ok[i] = False


def region_rules(tri, faces: ConvexFaces, h: float, tolerance=CONVEX_TOLERANCE) -> ConvexFaces | None:
    """``faces`` (the neighbour lists of a non-convex closed mesh's triangle table ``tri``, grid voxel
    ``h``) with each neighbour's rule (``RULE_*``, docs/design.md stage 4b): how it bounds the
    triangle's region, the part of the depth below it where its plane is the mesh's field (exactly,
    but in the wedges of reflex edges, where the deeper plane stands in for the distance to the
    edge). The lists are cut to a shorter reach (halved until ``MIN_FACE_REACH_VOXELS``) where
    a triangle's neighbours within twice it make more than ``MAX_CLUSTERS`` clusters or
    ``MAX_CHOICES`` pieces; None where no reach serves, or a triangle's region cannot be told
    so (a duplicate triangle, an edge not shared by exactly two triangles)."""
    corners = tri[:, 0:9].astype(np.float64).reshape(-1, 3, 3)
    # the vertices: the stored float32 corners welded where equal
    _, vid = np.unique(tri[:, 0:9].reshape(-1, 3), axis=0, return_inverse=True)
    vid = vid.reshape(-1, 3).astype(np.int64)
    edges = np.sort(np.stack([vid, np.roll(vid, -1, axis=1)], axis=2).reshape(-1, 2), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    if np.any(counts != 2):
        return None
    u = corners[:, 1] - corners[:, 0]
    v = corners[:, 2] - corners[:, 0]
    normals = np.cross(u, v)
    length = np.linalg.norm(normals, axis=1)
    if not np.all(length > 0.0):
        return None
    normals /= length[:, None]
    offsets = -np.einsum("ij,ij->i", normals, corners[:, 0])
    size = float(np.linalg.norm(corners.reshape(-1, 3).max(axis=0) - corners.reshape(-1, 3).min(axis=0)))
    # the reflex edges' exterior angles: in an edge's wedge the route's depth is short by up to
    # 1 − cos(θ/2) of it; sharper reflex edges keep the mesh on marching cubes
    order = np.argsort(edges[:, 0] * (int(vid.max()) + 1) + edges[:, 1], kind="stable")
    pair = order.reshape(-1, 2) // 3  # the two triangles of each edge (each edge twice in the table)
    far = np.einsum("ij,ikj->ik", normals[pair[:, 0]], corners[pair[:, 1]]).max(axis=1) + offsets[pair[:, 0]]
    reflex = far > tolerance * size
    cosine = np.einsum("ij,ij->i", normals[pair[:, 0]], normals[pair[:, 1]])
    if np.any(reflex & (cosine < math.cos(math.radians(MAX_REFLEX_DEGREES)))):
        return None
    reach = float(faces.reach)
    while reach >= MIN_FACE_REACH_VOXELS * float(h):
        # each triangle's neighbours within 2·reach: a prefix of its list (nearest first)
        keep = np.zeros(len(faces.ids), np.bool_)
        listed = int(faces.start[-1])  # (the arrays hold one padding entry when empty)
        keep[:listed] = faces.gap[:listed].astype(np.float64) <= 2.0 * reach
        start = np.concatenate([[0], np.cumsum(keep)])[faces.start].astype(np.int64)
        ids = faces.ids[keep].astype(np.int64)
        rule = np.full(max(len(ids), 1), RULE_SKIP, np.int32)
        link = np.zeros(max(len(ids), 1), np.int64)
        ok = np.ones(len(tri), np.bool_)
        _region_rules(corners, normals, offsets, vid, start, ids, tolerance * size, rule, link, ok)
        if ok.all():
            return ConvexFaces(start=start.astype(np.int32), ids=ids.astype(np.int32) if len(ids)
                               else np.zeros(1, np.int32), gap=faces.gap[keep] if len(ids)
                               else np.zeros(1, np.float32), reach=reach, rule=rule, link=link, convex=False)
        reach *= 0.5
    return None
