"""Exact signed distance to a closed triangle mesh.

Distance: a bounding-volume hierarchy over the triangles, queried for the closest point
(exact to the triangles, not to sample points). Sign: the angle-weighted pseudo-normal of the
closest feature (face, edge or vertex), after Bærentzen & Aanæs, which is exact for closed,
consistently oriented meshes. Used once per shape when its SDF is built (CPU).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ..backend import cpu_jit, device_fn

LEAF_SIZE = 4


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


@cpu_jit
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


@cpu_jit
def _build_bvh(centroids, tri_lo, tri_hi, leaf_size):
    """Median-split BVH. Returns (node_lo, node_hi, node_left, node_start, node_count, order).

    Leaves have node_count > 0 and cover order[node_start : node_start + node_count];
    inner nodes have node_count == 0 and children node_left, node_left + 1.
    """
    n = centroids.shape[0]
    max_nodes = 2 * n + 1
    node_lo = np.empty((max_nodes, 3))
    node_hi = np.empty((max_nodes, 3))
    node_left = np.full(max_nodes, -1, dtype=np.int64)
    node_start = np.zeros(max_nodes, dtype=np.int64)
    node_count = np.zeros(max_nodes, dtype=np.int64)
    order = np.arange(n)
    stack = np.empty((max_nodes, 3), dtype=np.int64)  # node, start, stop
    stack[0, 0] = 0
    stack[0, 1] = 0
    stack[0, 2] = n
    sp = 1
    n_nodes = 1
    while sp > 0:
        sp -= 1
        node = stack[sp, 0]
        start = stack[sp, 1]
        stop = stack[sp, 2]
        for k in range(3):
            lo = np.inf
            hi = -np.inf
            for t in range(start, stop):
                lo = min(lo, tri_lo[order[t], k])
                hi = max(hi, tri_hi[order[t], k])
            node_lo[node, k] = lo
            node_hi[node, k] = hi
        count = stop - start
        if count <= leaf_size:
            node_start[node] = start
            node_count[node] = count
            continue
        # split along the longest axis of the centroid bounds, at the median
        best_axis = 0
        best_ext = -1.0
        for k in range(3):
            lo = np.inf
            hi = -np.inf
            for t in range(start, stop):
                c = centroids[order[t], k]
                lo = min(lo, c)
                hi = max(hi, c)
            if hi - lo > best_ext:
                best_ext = hi - lo
                best_axis = k
        seg = order[start:stop].copy()
        keys = np.empty(count)
        for t in range(count):
            keys[t] = centroids[seg[t], best_axis]
        perm = np.argsort(keys, kind="mergesort")
        for t in range(count):
            order[start + t] = seg[perm[t]]
        mid = start + count // 2
        left = n_nodes
        n_nodes += 2
        node_left[node] = left
        stack[sp, 0] = left
        stack[sp, 1] = start
        stack[sp, 2] = mid
        sp += 1
        stack[sp, 0] = left + 1
        stack[sp, 1] = mid
        stack[sp, 2] = stop
        sp += 1
    return node_lo[:n_nodes], node_hi[:n_nodes], node_left[:n_nodes], node_start[:n_nodes], node_count[:n_nodes], order


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


@cpu_jit
def _box_dist2(px, py, pz, lo, hi, node):
    """Squared distance from p to the box of ``node`` (0 inside)."""
    return (_gap2(lo[node, 0], hi[node, 0], px) + _gap2(lo[node, 1], hi[node, 1], py)
            + _gap2(lo[node, 2], hi[node, 2], pz))


@cpu_jit
def _mesh_signed_distance(px, py, pz, bound, tri, node_lo, node_hi, node_left, node_start, node_count, order,
                          face_n, vert_n, edge_n, tri_vert, tri_edge, stack):
    """Signed distance from p to the mesh; ``bound`` is any upper bound on |distance| (or inf)."""
    best2 = bound * bound if bound < np.inf else np.inf
    best_t = -1
    best_f = 0
    bx = by = bz = 0.0
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
    if best_t < 0:
        return np.nan
    if best_f == 0:
        nx, ny, nz = face_n[best_t, 0], face_n[best_t, 1], face_n[best_t, 2]
    elif best_f <= 3:
        v = tri_vert[best_t, best_f - 1]
        nx, ny, nz = vert_n[v, 0], vert_n[v, 1], vert_n[v, 2]
    else:
        e = tri_edge[best_t, best_f - 4]
        nx, ny, nz = edge_n[e, 0], edge_n[e, 1], edge_n[e, 2]
    d = math.sqrt(best2)
    s = (px - bx) * nx + (py - by) * ny + (pz - bz) * nz
    return d if s >= 0.0 else -d


@cpu_jit(parallel=True)
def _signed_distance_many(pts, chunk, tri, node_lo, node_hi, node_left, node_start, node_count, order,
                          face_n, vert_n, edge_n, tri_vert, tri_edge, out):
    n = pts.shape[0]
    nchunks = (n + chunk - 1) // chunk
    depth = node_lo.shape[0]
    for c in prange(nchunks):
        stack = np.empty(depth + 2, dtype=np.int64)
        prev_d = np.inf
        lx = ly = lz = 0.0
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            x, y, z = pts[i, 0], pts[i, 1], pts[i, 2]
            bound = np.inf
            if prev_d < np.inf:
                # 1-Lipschitz: |d(p)| <= |d(q)| + |p - q| for the previous point q
                bound = abs(prev_d) + math.sqrt((x - lx) ** 2 + (y - ly) ** 2 + (z - lz) ** 2) * (1.0 + 1e-9) + 1e-12
            d = _mesh_signed_distance(x, y, z, bound, tri, node_lo, node_hi, node_left, node_start, node_count,
                                      order, face_n, vert_n, edge_n, tri_vert, tri_edge, stack)
            out[i] = d
            prev_d = d
            lx, ly, lz = x, y, z


class MeshDistance:
    """Exact signed distance queries against a closed mesh (BVH + pseudo-normals)."""

    def __init__(self, mesh):
        mesh.check_watertight()
        v = mesh.vertices
        f = mesh.faces
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
        edge_n = np.zeros((len(uniq), 3))
        np.add.at(edge_n, inv, np.concatenate([fn_unit, fn_unit, fn_unit]))
        nt = len(f)
        tri_edge = np.stack([inv[:nt], inv[nt : 2 * nt], inv[2 * nt :]], axis=1)  # edges ab, bc, ca
        tri_lo = tri.min(axis=1)
        tri_hi = tri.max(axis=1)
        centroids = tri.mean(axis=1)
        lo, hi, left, start, count, order = _build_bvh(centroids, tri_lo, tri_hi, LEAF_SIZE)
        self.tri = tri
        self.arrays = (tri, lo, hi, left, start, count, order, fn_unit, vert_n, edge_n,
                       np.ascontiguousarray(f), np.ascontiguousarray(tri_edge))
        self.name = mesh.name

    def signed_distance(self, points, chunk: int = 64) -> np.ndarray:
        """Signed distance at ``points`` (N, 3); neighbouring points in order are queried faster."""
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        out = np.empty(len(pts))
        if len(pts):
            _signed_distance_many(pts, chunk, *self.arrays, out)
        return out
