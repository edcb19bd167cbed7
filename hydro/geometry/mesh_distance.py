"""Exact distance to a triangle mesh, signed by pseudo-normals or by winding numbers.

Distance: a bounding-volume hierarchy over the triangles, queried for the closest point
(exact to the triangles, not to sample points). Sign: the angle-weighted pseudo-normal of the
closest feature (face, edge or vertex), after Bærentzen & Aanæs, which is exact for a closed,
consistently oriented surface with nothing inside the solid — what
:func:`~hydro.geometry.mesh_check.mesh_solid` makes of a closed mesh; or, for any triangle soup,
the generalised winding number (:mod:`hydro.geometry.mesh_winding`). Used once per shape when
its SDF is built (CPU), and by the default contact path for open meshes (``sign="winding"``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ..backend import cpu_jit, device_fn
from ..errors import shown
from .bvh import _build_bvh
from .mesh_winding import WindingNumber

LEAF_SIZE = 8


@device_fn
def _edge_dots(abx, aby, abz, acx, acy, acz, dx, dy, dz):
    """(ab·d, ac·d) for d = p − (a vertex)."""
    return abx * dx + aby * dy + abz * dz, acx * dx + acy * dy + acz * dz


@device_fn
def _vertex_then_edge(a_e, a_f, v_e, v_f, ax, ay, az, vx, vy, vz, ex, ey, ez):
    """Ericson's tests for vertex v = a + e of a triangle, then for its edge a–v, from the dots of
    the edge e and the triangle's other edge f with p − a (a_e, a_f) and p − v (v_e, v_f).
    Returns (region, x, y, z): region 1 vertex v, 2 on the edge (x, y, z the point), 0 neither."""
    if v_e >= 0.0 and v_f <= v_e:
        return 1, vx, vy, vz
    m = a_e * v_f - v_e * a_f
    if m <= 0.0 and a_e >= 0.0 and v_e <= 0.0:
        t = a_e / (a_e - v_e)
        return 2, ax + t * ex, ay + t * ey, az + t * ez
    return 0, 0.0, 0.0, 0.0


@device_fn
def _closest_on_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Closest point on triangle abc to p, and its feature: 0 face, 1..3 vertex a,b,c, 4..6 edge ab,bc,ca."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    d1, d2 = _edge_dots(abx, aby, abz, acx, acy, acz, px - ax, py - ay, pz - az)
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, 1
    # vertex b, edge ab
    d3, d4 = _edge_dots(abx, aby, abz, acx, acy, acz, px - bx, py - by, pz - bz)
    region, qx, qy, qz = _vertex_then_edge(d1, d2, d3, d4, ax, ay, az, bx, by, bz, abx, aby, abz)
    if region != 0:
        return qx, qy, qz, 2 if region == 1 else 4
    # vertex c, edge ca: the same tests with the roles of ab and ac swapped
    d5, d6 = _edge_dots(abx, aby, abz, acx, acy, acz, px - cx, py - cy, pz - cz)
    region, qx, qy, qz = _vertex_then_edge(d2, d1, d6, d5, ax, ay, az, cx, cy, cz, acx, acy, acz)
    if region != 0:
        return qx, qy, qz, 3 if region == 1 else 6
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz), 5
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w, 0


@device_fn
def _gap2(lo, hi, p):
    """Squared distance from p to the interval [lo, hi]."""
    v = lo - p
    if v > 0.0:
        return v * v
    v = p - hi
    if v > 0.0:
        return v * v
    return 0.0


@device_fn
def _box_dist2(px, py, pz, lo, hi, node):
    """Squared distance from p to the box of ``node`` (0 inside)."""
    return (_gap2(lo[node, 0], hi[node, 0], px) + _gap2(lo[node, 1], hi[node, 1], py)
            + _gap2(lo[node, 2], hi[node, 2], pz))


@cpu_jit
def _closest_point(px, py, pz, bound, hint, tri, tri_lo, tri_hi, node_lo, node_hi, node_left, node_start, node_count,
                   order, stack):
    """The closest point of the mesh to p: ``(distance², triangle, feature, x, y, z)``.

    ``bound``: any upper bound on the distance (or inf); ``hint``: a triangle likely to be near
    (−1: none), evaluated first so that the search starts with a tight radius. A triangle is
    tested only when its bounding box is within the best distance so far."""
    best2 = bound * bound if bound < np.inf else np.inf
    best_t = -1
    best_f = 0
    bx = by = bz = 0.0
    if hint >= 0:
        qx, qy, qz, feat = _closest_on_triangle(
            px, py, pz, tri[hint, 0, 0], tri[hint, 0, 1], tri[hint, 0, 2], tri[hint, 1, 0], tri[hint, 1, 1],
            tri[hint, 1, 2], tri[hint, 2, 0], tri[hint, 2, 1], tri[hint, 2, 2])
        d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
        if d2 <= best2:
            best2 = d2
            best_t = hint
            best_f = feat
            bx, by, bz = qx, qy, qz
    sp = 0
    stack[sp] = 0
    sp += 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if _box_dist2(px, py, pz, node_lo, node_hi, node) > best2:
            continue
        cnt = node_count[node]
        if cnt > 0:
            s = node_start[node]
            for k in range(s, s + cnt):
                t = order[k]
                if t == best_t or _box_dist2(px, py, pz, tri_lo, tri_hi, t) > best2:
                    continue
                qx, qy, qz, feat = _closest_on_triangle(
                    px, py, pz, tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2], tri[t, 1, 0], tri[t, 1, 1],
                    tri[t, 1, 2], tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2])
                d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
                if d2 < best2 or best_t < 0 and d2 <= best2:
                    best2 = d2
                    best_t = t
                    best_f = feat
                    bx, by, bz = qx, qy, qz
        else:
            left = node_left[node]
            dl = _box_dist2(px, py, pz, node_lo, node_hi, left)
            dr = _box_dist2(px, py, pz, node_lo, node_hi, left + 1)
            # push the farther child first so the nearer one is visited first
            if dl <= dr:
                stack[sp] = left + 1
                stack[sp + 1] = left
            else:
                stack[sp] = left
                stack[sp + 1] = left + 1
            sp += 2
    return best2, best_t, best_f, bx, by, bz


@cpu_jit(parallel=True)
def _distance_many(pts, chunk, signed, tri, tri_lo, tri_hi, node_lo, node_hi, node_left, node_start, node_count,
                   order, face_n, vert_n, edge_n, tri_vert, tri_edge, out):
    """Distance at each point, signed by the closest feature's pseudo-normal when ``signed``.
    Points are taken in chunks; within a chunk each query starts from the previous point's
    closest triangle (neighbouring points in order share it often)."""
    n = pts.shape[0]
    nchunks = (n + chunk - 1) // chunk
    for c in prange(nchunks):
        stack = np.empty(min(node_lo.shape[0] + 2, 256), dtype=np.int64)
        hint = -1
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            x, y, z = pts[i, 0], pts[i, 1], pts[i, 2]
            best2, t, f, bx, by, bz = _closest_point(x, y, z, np.inf, hint, tri, tri_lo, tri_hi, node_lo, node_hi,
                                                     node_left, node_start, node_count, order, stack)
            hint = t
            d = math.sqrt(best2)
            if signed:
                if f == 0:
                    nx, ny, nz = face_n[t, 0], face_n[t, 1], face_n[t, 2]
                elif f <= 3:
                    v = tri_vert[t, f - 1]
                    nx, ny, nz = vert_n[v, 0], vert_n[v, 1], vert_n[v, 2]
                else:
                    e = tri_edge[t, f - 4]
                    nx, ny, nz = edge_n[e, 0], edge_n[e, 1], edge_n[e, 2]
                if (x - bx) * nx + (y - by) * ny + (z - bz) * nz < 0.0:
                    d = -d
            out[i] = d


@cpu_jit
def _sign_sources(pts, dist, out):
    """For a closed surface (winding number constant off the surface): ``out[i] = j`` for an
    earlier point j (i − 1, i − 9 or i − 81: neighbours along the rows, columns and layers of
    an SDF brick's samples) when the segment from j to i lies in the empty ball of radius d about
    one of its ends, so point i is inside iff point j is; else −1."""
    for i in range(pts.shape[0]):
        out[i] = -1
        for lag in (1, 9, 81):
            j = i - lag
            if j < 0:
                break
            step = math.sqrt((pts[i, 0] - pts[j, 0]) ** 2 + (pts[i, 1] - pts[j, 1]) ** 2 + (pts[i, 2] - pts[j, 2]) ** 2)
            if step < 0.999 * max(dist[i], dist[j]):
                out[i] = j
                break


@cpu_jit
def _propagate_inside(src, inside):
    for i in range(src.shape[0]):
        if src[i] >= 0:
            inside[i] = inside[src[i]]


SIGN_MODES = ("solid", "winding", "pseudonormal", "unsigned")


class MeshDistance:
    """Exact distance queries against a triangle mesh (BVH), signed in one of four ways.

    - ``sign="solid"`` (default): the signed distance of the *solid* the mesh bounds
      (:func:`~hydro.geometry.mesh_check.mesh_solid`: welded, touching or overlapping shells
      merged into their union, walls inside it removed): the distance to the solid's surface,
      negative where the solid's winding number is 1 (an integer, counted exactly along rays:
      :class:`~hydro.geometry.mesh_winding.WindingNumber`; away from the surface the side is
      carried from point to point, which is exact for a closed surface).
      Raises :class:`~hydro.errors.InputError` (what is wrong, how to fix it) when the mesh is
      not closed after welding.
    - ``sign="winding"``: any triangle soup, open meshes included (the default contact path):
      the distance to the nearest triangle, negative where the generalised winding number of
      the triangles exceeds 1/2 (decided exactly, see ``WindingNumber.inside``).
    - ``sign="pseudonormal"``: the solid's surface signed by the closest feature's
      angle-weighted pseudo-normal (exact for a clean closed 2-manifold; kept for comparison).
    - ``sign="unsigned"``: the distance to the nearest triangle, ≥ 0.
    """

    def __init__(self, mesh, *, sign: str = "solid"):
        if sign not in SIGN_MODES:
            raise ValueError(f"sign must be one of {', '.join(SIGN_MODES)}, got {shown(sign)}")
        self.name = mesh.name
        self.solid = None
        self.winding = None
        if sign in ("solid", "pseudonormal"):
            self.solid = mesh.solid()  # raises for an open mesh
            v, f = self.solid.vertices, self.solid.faces
        else:
            v, f = np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64)
        self.closed_soup = False
        if sign in ("solid", "winding"):
            # the solid's own winding number (consistent with its distance); tests compare the
            # result with the winding number of the mesh as given
            self.winding = WindingNumber(v[f])
            self.closed_soup = self.winding.closed
        self.sign = sign
        tri = np.ascontiguousarray(v[f])  # (T, 3, 3)
        e1 = tri[:, 1] - tri[:, 0]
        e2 = tri[:, 2] - tri[:, 0]
        fn = np.cross(e1, e2)
        fn_len = np.linalg.norm(fn, axis=1)
        degenerate = fn_len <= 0.0
        fn_unit = np.zeros_like(fn)
        fn_unit[~degenerate] = fn[~degenerate] / fn_len[~degenerate, None]
        # angle-weighted vertex pseudo-normals
        vert_n = np.zeros_like(v)
        for k in range(3):
            a = tri[:, k]
            b = tri[:, (k + 1) % 3]
            c = tri[:, (k + 2) % 3]
            u = b - a
            w = c - a
            nu = np.linalg.norm(u, axis=1)
            nw = np.linalg.norm(w, axis=1)
            cosang = np.einsum("ij,ij->i", u, w) / np.maximum(nu * nw, 1e-300)
            ang = np.arccos(np.clip(cosang, -1.0, 1.0))
            np.add.at(vert_n, f[:, k], fn_unit * ang[:, None])
        # edge pseudo-normals: the sum of the two adjacent face normals
        edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
        key = np.sort(edges, axis=1)
        uniq, inv = np.unique(key[:, 0] * len(v) + key[:, 1], return_inverse=True)
        inv = inv.reshape(-1)
        edge_n = np.zeros((len(uniq), 3))
        np.add.at(edge_n, inv, np.concatenate([fn_unit, fn_unit, fn_unit]))
        nt = len(f)
        tri_edge = np.stack([inv[:nt], inv[nt : 2 * nt], inv[2 * nt :]], axis=1)  # edges ab, bc, ca
        tri_lo = tri.min(axis=1)
        tri_hi = tri.max(axis=1)
        centroids = tri.mean(axis=1)
        lo, hi, left, start, count, order = _build_bvh(centroids, tri_lo, tri_hi, LEAF_SIZE)
        self.tri = tri
        self.arrays = (tri, np.ascontiguousarray(tri_lo), np.ascontiguousarray(tri_hi), lo, hi, left, start, count,
                       order, fn_unit, vert_n, edge_n, np.ascontiguousarray(f), np.ascontiguousarray(tri_edge))

    def signed_distance(self, points, chunk: int = 64) -> np.ndarray:
        """Distance at ``points`` (N, 3), signed as chosen (neighbouring points in order are
        queried faster)."""
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        if len(pts) > 4096:
            # SDF bricks repeat the samples on their shared faces: query each position once, in
            # the order of first appearance (neighbouring queries stay neighbours)
            bits = pts.view(np.uint64).reshape(-1, 3)
            key = (bits[:, 0] * np.uint64(0x9E3779B97F4A7C15)) ^ (bits[:, 1] * np.uint64(0xC2B2AE3D27D4EB4F)) \
                ^ (bits[:, 2] * np.uint64(0x165667B19E3779F9))
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            inverse = inverse.reshape(-1)
            if len(first) < 0.9 * len(pts) and np.array_equal(pts[first[inverse]], pts):  # (no hash collision)
                order = np.argsort(first, kind="stable")
                rank = np.empty_like(order)
                rank[order] = np.arange(len(order))
                unique_values = self.signed_distance(pts[first[order]], chunk)
                return unique_values[rank[inverse]]
        out = np.empty(len(pts))
        if len(pts):
            _distance_many(pts, chunk, self.sign == "pseudonormal", *self.arrays, out)
            if self.winding is not None:
                out[self._inside(pts, out)] *= -1.0
        return out

    def _inside(self, pts, dist):
        """Winding-number inside test; for a closed soup only where no earlier point's side carries
        over (its winding number changes only across the surface; ``dist`` >= the distance to it)."""
        if not self.closed_soup:
            return self.winding.inside(pts)
        src = np.empty(len(pts), dtype=np.int64)
        _sign_sources(pts, dist, src)
        inside = np.zeros(len(pts), dtype=np.bool_)
        todo = src < 0
        inside[todo] = self.winding.inside(pts[todo])
        _propagate_inside(src, inside)
        return inside

    __call__ = signed_distance
