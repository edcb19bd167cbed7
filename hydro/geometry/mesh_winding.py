"""Generalised winding numbers of triangle meshes: exact, and fast with a proven error bound.

(Over 500 lines on purpose: the tree moments, its bounded evaluation and the exact ray count share
their arrays and are checked against each other.)

The winding number of a triangle soup at p is ``w(p) = Σ_t Ω_t(p) / 4π``, Ω_t the signed solid
angle of triangle t seen from p (Van Oosterom & Strackee's formula), positive when p is behind
the triangle (on the side its normal points away from). For a closed, outward-wound surface w is
1 inside and 0 outside, 2 where two closed pieces overlap; for an open surface it varies
smoothly and ``w > 1/2`` is the natural "inside" (Jacobson, Kavan & Sorkine-Hornung 2013). It
needs no welding, no orientation of neighbours and no closed surface, which makes it the
reference for every inside/outside decision hydro makes about a mesh.

Fast evaluation (the idea of Barill et al. 2018, with a rigorous bound instead of a fixed
opening angle): a bounding-volume hierarchy over the triangles; a node far from p contributes
the first two terms of the Taylor expansion of ``∫ K(x)·n dA``, K(x) = (x − p)/|x − p|³, about
its area centroid c: ``K(c)·N + tr(J(c)·M)`` with N = Σ aₜ·nₜ the node's vector area,
M = Σ (gₜ − c) ⊗ aₜ·nₜ its first moment (gₜ the triangle centroids; exact for flat triangles)
and J = (I − 3·u·uᵀ)/ρ³ the Jacobian of K (u, ρ: direction and distance from p to c). K·n is
−D(1/|x − p|)[n], and the third derivatives of 1/ρ are bounded by 3!/ρ⁴, so with A the node's
unsigned area and r the radius of a ball about c holding its triangles the remainder is at most
``3·A·r² / (d − r)⁴`` for d = |p − c| > r. A node is approximated only when this bound
(divided by 4π) is below ``node_tolerance``; the sum of the bounds of the
approximated nodes is returned beside w, so every value comes with a guaranteed error bar, and
:func:`inside` re-evaluates exactly every point whose error bar reaches |w − 1/2|.

Used by :mod:`hydro.geometry.mesh_distance` (``sign="winding"``), by the sign audit of
:func:`hydro.sdf.build_sdf`, by ``hydro sdf``'s reference distance and by the tests.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ..backend import cpu_jit, device_fn
from ..errors import shown
from .bvh import _build_bvh
from .mesh_weld import weld

__all__ = ["WindingNumber", "winding_number_exact", "NODE_TOLERANCE"]

#: Default largest error (in winding-number units) that one approximated BVH node may add.
NODE_TOLERANCE = 1e-4
_LEAF_SIZE = 4


@device_fn
def _solid_angle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Signed solid angle of triangle abc seen from p (Van Oosterom & Strackee), in [−2π, 2π]."""
    ax -= px
    ay -= py
    az -= pz
    bx -= px
    by -= py
    bz -= pz
    cx -= px
    cy -= py
    cz -= pz
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    num = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    den = (la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la
           + (cx * ax + cy * ay + cz * az) * lb)
    return 2.0 * math.atan2(num, den)


@cpu_jit
def _node_moments(tri, node_left, node_start, node_count, order):
    """Per node: area centroid (3), radius of a ball about it holding the node's triangles, vector
    area (3), unsigned area and first moment (3, 3). Children have larger indices than their parent, so one pass over
    the nodes in reverse order sees children first."""
    n_nodes = node_left.shape[0]
    center = np.zeros((n_nodes, 3))
    radius = np.zeros(n_nodes)
    vec_area = np.zeros((n_nodes, 3))
    area = np.zeros(n_nodes)
    moment = np.zeros((n_nodes, 3, 3))  # moment[node, j, i] = Σ (g − c)_j · (a·n)_i
    first = np.zeros(n_nodes, dtype=np.int64)  # the subtree's triangles: order[first:last]
    last = np.zeros(n_nodes, dtype=np.int64)
    for node in range(n_nodes - 1, -1, -1):
        cnt = node_count[node]
        if cnt > 0:
            s = node_start[node]
            first[node] = s
            last[node] = s + cnt
            cx = cy = cz = 0.0
            ax = ay = az = 0.0
            asum = 0.0
            for k in range(s, s + cnt):
                t = order[k]
                e1x = tri[t, 1, 0] - tri[t, 0, 0]
                e1y = tri[t, 1, 1] - tri[t, 0, 1]
                e1z = tri[t, 1, 2] - tri[t, 0, 2]
                e2x = tri[t, 2, 0] - tri[t, 0, 0]
                e2y = tri[t, 2, 1] - tri[t, 0, 1]
                e2z = tri[t, 2, 2] - tri[t, 0, 2]
                nx = 0.5 * (e1y * e2z - e1z * e2y)
                ny = 0.5 * (e1z * e2x - e1x * e2z)
                nz = 0.5 * (e1x * e2y - e1y * e2x)
                a = math.sqrt(nx * nx + ny * ny + nz * nz)
                ax += nx
                ay += ny
                az += nz
                asum += a
                for j in range(3):
                    cx += a * tri[t, j, 0] / 3.0
                    cy += a * tri[t, j, 1] / 3.0
                    cz += a * tri[t, j, 2] / 3.0
            if asum > 0.0:
                cx /= asum
                cy /= asum
                cz /= asum
            else:  # only degenerate triangles: their first vertex
                t = order[s]
                cx, cy, cz = tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2]
            r = 0.0
            for k in range(s, s + cnt):
                t = order[k]
                for j in range(3):
                    r = max(r, math.sqrt((tri[t, j, 0] - cx) ** 2 + (tri[t, j, 1] - cy) ** 2 + (tri[t, j, 2] - cz) ** 2))
                e1x = tri[t, 1, 0] - tri[t, 0, 0]
                e1y = tri[t, 1, 1] - tri[t, 0, 1]
                e1z = tri[t, 1, 2] - tri[t, 0, 2]
                e2x = tri[t, 2, 0] - tri[t, 0, 0]
                e2y = tri[t, 2, 1] - tri[t, 0, 1]
                e2z = tri[t, 2, 2] - tri[t, 0, 2]
                an0 = 0.5 * (e1y * e2z - e1z * e2y)
                an1 = 0.5 * (e1z * e2x - e1x * e2z)
                an2 = 0.5 * (e1x * e2y - e1y * e2x)
                g0 = (tri[t, 0, 0] + tri[t, 1, 0] + tri[t, 2, 0]) / 3.0 - cx
                g1 = (tri[t, 0, 1] + tri[t, 1, 1] + tri[t, 2, 1]) / 3.0 - cy
                g2 = (tri[t, 0, 2] + tri[t, 1, 2] + tri[t, 2, 2]) / 3.0 - cz
                moment[node, 0, 0] += g0 * an0
                moment[node, 0, 1] += g0 * an1
                moment[node, 0, 2] += g0 * an2
                moment[node, 1, 0] += g1 * an0
                moment[node, 1, 1] += g1 * an1
                moment[node, 1, 2] += g1 * an2
                moment[node, 2, 0] += g2 * an0
                moment[node, 2, 1] += g2 * an1
                moment[node, 2, 2] += g2 * an2
        else:
            left = node_left[node]
            right = left + 1
            asum = area[left] + area[right]
            ax = vec_area[left, 0] + vec_area[right, 0]
            ay = vec_area[left, 1] + vec_area[right, 1]
            az = vec_area[left, 2] + vec_area[right, 2]
            if asum > 0.0:
                cx = (area[left] * center[left, 0] + area[right] * center[right, 0]) / asum
                cy = (area[left] * center[left, 1] + area[right] * center[right, 1]) / asum
                cz = (area[left] * center[left, 2] + area[right] * center[right, 2]) / asum
            else:
                cx, cy, cz = center[left, 0], center[left, 1], center[left, 2]
            first[node] = min(first[left], first[right])
            last[node] = max(last[left], last[right])
            r = 0.0  # exact: the farthest vertex of the subtree's triangles (contiguous in ``order``)
            for k in range(first[node], last[node]):
                t = order[k]
                for j in range(3):
                    r = max(r, math.sqrt((tri[t, j, 0] - cx) ** 2 + (tri[t, j, 1] - cy) ** 2 + (tri[t, j, 2] - cz) ** 2))
            for ch in (left, right):
                sx = center[ch, 0] - cx
                sy = center[ch, 1] - cy
                sz = center[ch, 2] - cz
                for i in range(3):
                    moment[node, 0, i] += moment[ch, 0, i] + sx * vec_area[ch, i]
                    moment[node, 1, i] += moment[ch, 1, i] + sy * vec_area[ch, i]
                    moment[node, 2, i] += moment[ch, 2, i] + sz * vec_area[ch, i]
        center[node, 0] = cx
        center[node, 1] = cy
        center[node, 2] = cz
        radius[node] = r
        vec_area[node, 0] = ax
        vec_area[node, 1] = ay
        vec_area[node, 2] = az
        area[node] = asum
    return center, radius, vec_area, area, moment


@cpu_jit
def _winding_at(px, py, pz, node_tolerance, tri, node_left, node_start, node_count, order, center, radius, vec_area,
                area, moment, stack):
    """(w, error bound) at p; ``node_tolerance`` <= 0 sums every triangle exactly."""
    inv4pi = 0.25 / math.pi
    w = 0.0
    err = 0.0
    sp = 0
    stack[sp] = 0
    sp += 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if node_tolerance > 0.0:
            dx = center[node, 0] - px
            dy = center[node, 1] - py
            dz = center[node, 2] - pz
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            r = radius[node]
            if d > r:
                g = d - r
                bound = 3.0 * area[node] * r * r / (g * g * g * g) * inv4pi
                if bound <= node_tolerance:
                    d3 = d * d * d
                    first = vec_area[node, 0] * dx + vec_area[node, 1] * dy + vec_area[node, 2] * dz
                    ux = dx / d
                    uy = dy / d
                    uz = dz / d
                    trace = moment[node, 0, 0] + moment[node, 1, 1] + moment[node, 2, 2]
                    umu = 0.0
                    for j in range(3):
                        uj = ux if j == 0 else (uy if j == 1 else uz)
                        umu += uj * (moment[node, j, 0] * ux + moment[node, j, 1] * uy + moment[node, j, 2] * uz)
                    w += (first / d3 + (trace - 3.0 * umu) / d3) * inv4pi
                    err += bound
                    continue
        cnt = node_count[node]
        if cnt > 0:
            s = node_start[node]
            for k in range(s, s + cnt):
                t = order[k]
                w += _solid_angle(px, py, pz, tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2], tri[t, 1, 0], tri[t, 1, 1],
                                  tri[t, 1, 2], tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2]) * inv4pi
        else:
            left = node_left[node]
            stack[sp] = left
            stack[sp + 1] = left + 1
            sp += 2
    return w, err


@cpu_jit(parallel=True)
def _winding_many(pts, node_tolerance, tri, node_left, node_start, node_count, order, center, radius, vec_area, area,
                  moment, out_w, out_err):
    n = pts.shape[0]
    chunk = 64
    nchunks = (n + chunk - 1) // chunk
    depth = node_left.shape[0] + 2
    for c in prange(nchunks):
        stack = np.empty(min(depth, 256), dtype=np.int64)
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            w, e = _winding_at(pts[i, 0], pts[i, 1], pts[i, 2], node_tolerance, tri, node_left, node_start, node_count,
                               order, center, radius, vec_area, area, moment, stack)
            out_w[i] = w
            out_err[i] = e



# Closed surfaces: the winding number is an integer, counted exactly by one ray


@cpu_jit
def _ray_winding(px, py, pz, dx, dy, dz, tri, node_lo, node_hi, node_left, node_start, node_count, order, stack):
    """Signed crossings of the ray p + t·d (t > 0) with the triangles: +1 leaving through a
    triangle's front, −1 entering. For a closed surface that is the winding number at p.
    Returns (w, ok); ok is False when the ray grazes an edge or a vertex, lies in a triangle's
    plane, or p lies on a triangle (the count is then not to be trusted)."""
    eps = 1e-9
    w = 0
    inv_x = 1.0 / dx if dx != 0.0 else np.inf
    inv_y = 1.0 / dy if dy != 0.0 else np.inf
    inv_z = 1.0 / dz if dz != 0.0 else np.inf
    sp = 0
    stack[sp] = 0
    sp += 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        # slab test, t in [0, inf)
        t0 = 0.0
        t1 = np.inf
        hit = True
        for k in range(3):
            o = px if k == 0 else (py if k == 1 else pz)
            inv = inv_x if k == 0 else (inv_y if k == 1 else inv_z)
            lo = node_lo[node, k]
            hi = node_hi[node, k]
            if inv == np.inf:  # ray parallel to the slab
                if o < lo or o > hi:
                    hit = False
                    break
                continue
            ta = (lo - o) * inv
            tb = (hi - o) * inv
            if ta > tb:
                ta, tb = tb, ta
            t0 = max(t0, ta)
            t1 = min(t1, tb)
            if t0 > t1:
                hit = False
                break
        if not hit:
            continue
        cnt = node_count[node]
        if cnt > 0:
            s = node_start[node]
            for k in range(s, s + cnt):
                t = order[k]
                ax, ay, az = tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2]
                e1x, e1y, e1z = tri[t, 1, 0] - ax, tri[t, 1, 1] - ay, tri[t, 1, 2] - az
                e2x, e2y, e2z = tri[t, 2, 0] - ax, tri[t, 2, 1] - ay, tri[t, 2, 2] - az
                hx = dy * e2z - dz * e2y
                hy = dz * e2x - dx * e2z
                hz = dx * e2y - dy * e2x
                det = e1x * hx + e1y * hy + e1z * hz
                sx, sy, sz = px - ax, py - ay, pz - az
                scale = math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z) * math.sqrt(e2x * e2x + e2y * e2y + e2z * e2z)
                if scale == 0.0:
                    continue  # a collapsed triangle contributes nothing
                if abs(det) <= 1e-12 * scale:
                    # the ray is parallel to the plane: trouble only if it lies in it
                    nx = e1y * e2z - e1z * e2y
                    ny = e1z * e2x - e1x * e2z
                    nz = e1x * e2y - e1y * e2x
                    if abs(nx * sx + ny * sy + nz * sz) <= eps * scale * math.sqrt(scale):
                        return 0, False
                    continue
                f = 1.0 / det
                u = f * (sx * hx + sy * hy + sz * hz)
                qx = sy * e1z - sz * e1y
                qy = sz * e1x - sx * e1z
                qz = sx * e1y - sy * e1x
                v = f * (dx * qx + dy * qy + dz * qz)
                if u < -eps or v < -eps or u + v > 1.0 + eps:
                    continue
                tt = f * (e2x * qx + e2y * qy + e2z * qz)
                tscale = math.sqrt(scale)
                if tt < -eps * tscale:
                    continue
                if tt <= eps * tscale or u <= eps or v <= eps or u + v >= 1.0 - eps:
                    return 0, False  # p on the triangle, or the ray grazes an edge or a vertex
                w += 1 if det < 0.0 else -1
        else:
            left = node_left[node]
            stack[sp] = left
            stack[sp + 1] = left + 1
            sp += 2
    return w, True


#: Ray directions tried in turn (irrational components: grid-aligned meshes are not grazed).
_RAY_DIRECTIONS = np.array([
    [0.5773502691896258, 0.5773502691896258, 0.5773502691896258],
    [0.2672612419124244, -0.5345224838248488, 0.8017837257372732],
    [-0.7071067811865476, 0.1414213562373095, 0.6928203230275509],
    [0.1230914909793327, 0.9847319278346618, -0.1230914909793327],
    [-0.4850712500726659, -0.7276068751089989, -0.4850712500726659],
    [0.9128709291752769, -0.1825741858350554, -0.3651483716701107],
])
_RAY_DIRECTIONS /= np.linalg.norm(_RAY_DIRECTIONS, axis=1)[:, None]


@cpu_jit(parallel=True)
def _ray_winding_many(pts, directions, tri, node_lo, node_hi, node_left, node_start, node_count, order, out_w, out_ok):
    for i in prange(pts.shape[0]):
        stack = np.empty(256, dtype=np.int64)
        out_ok[i] = False
        out_w[i] = 0
        for r in range(directions.shape[0]):
            w, ok = _ray_winding(pts[i, 0], pts[i, 1], pts[i, 2], directions[r, 0], directions[r, 1], directions[r, 2],
                                 tri, node_lo, node_hi, node_left, node_start, node_count, order, stack)
            if ok:
                out_w[i] = w
                out_ok[i] = True
                break


@cpu_jit(parallel=True)
def _winding_exact_many(pts, tri, out):
    for i in prange(pts.shape[0]):
        w = 0.0
        for t in range(tri.shape[0]):
            w += _solid_angle(pts[i, 0], pts[i, 1], pts[i, 2], tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2], tri[t, 1, 0],
                              tri[t, 1, 1], tri[t, 1, 2], tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2])
        out[i] = w * 0.25 / math.pi


def winding_number_exact(triangles, points) -> np.ndarray:
    """The winding number of ``triangles`` (T, 3, 3) at ``points`` (N, 3) by direct summation
    over every triangle (O(N·T): a reference for small inputs)."""
    tri = np.ascontiguousarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.empty(len(pts))
    if len(pts):
        _winding_exact_many(pts, tri, out)
    return out


def net_boundary_edges(v, f):
    """The edges of the soup (v, f) used more often one way than the other: ``(e_lo, e_hi, net)``,
    each edge by its vertex indices ``e_lo < e_hi`` and ``net`` (non-zero) how many more times it
    runs lo → hi than hi → lo. Empty for a closed, consistently wound soup."""
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    key = lo * np.int64(len(v)) + hi
    uniq, inv = np.unique(key, return_inverse=True)
    net = np.bincount(inv.reshape(-1), weights=np.where(a < b, 1, -1), minlength=len(uniq)).astype(np.int64)
    sel = np.nonzero(net)[0]
    return uniq[sel] // len(v), uniq[sel] % len(v), net[sel]


def _boundary_cap(v, f):
    """Triangles that close the welded soup (v, f): one fan from a common apex over the chain's
    boundary (each edge used more often one way than the other, with that multiplicity). The
    boundary of a triangle chain is a cycle, so the fan's own edges cancel and soup + cap is
    closed. Returns (cap triangles (C, 3, 3), apex) — C = 0 for a closed soup."""
    e_lo, e_hi, net = net_boundary_edges(v, f)
    if len(net) == 0:
        return np.zeros((0, 3, 3)), None
    mult = np.abs(net)
    # the boundary runs lo -> hi where net > 0: cancel it with (hi, lo, apex), else (lo, hi, apex)
    first = np.where(net > 0, e_hi, e_lo)
    second = np.where(net > 0, e_lo, e_hi)
    first = np.repeat(first, mult)
    second = np.repeat(second, mult)
    apex = v[np.unique(np.concatenate([e_lo, e_hi]))].mean(axis=0)
    cap = np.empty((len(first), 3, 3))
    cap[:, 0] = v[first]
    cap[:, 1] = v[second]
    cap[:, 2] = apex
    return cap, apex


class WindingNumber:
    """Winding-number queries against any triangle soup (open, closed, overlapping).

    ``WindingNumber(triangles)`` with ``triangles`` (T, 3, 3), or :meth:`of_mesh`.

    - :meth:`inside` decides w > 1/2 exactly and fast. The soup is welded and closed by a *cap*:
      a fan from one apex over its boundary edges (none for a closed mesh). Soup + cap is closed,
      so its winding number is an integer, counted exactly by the signed crossings of one ray
      through the tree (rays that graze an edge are replaced by others); the soup's own w is that
      integer minus the cap's w, a sum over the few cap triangles (through its own tree, with
      direct summation wherever its bound could change the answer).
    - :meth:`evaluate` returns w from the tree with a proven error bound; :meth:`exact` sums
      every triangle.
    """

    def __init__(self, triangles, *, node_tolerance: float = NODE_TOLERANCE):
        tri = np.ascontiguousarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
        if len(tri) == 0:
            raise ValueError("a winding number needs at least one triangle")
        if not np.all(np.isfinite(tri)):
            raise ValueError("triangle vertices must be finite")
        tol = float(node_tolerance)
        if not math.isfinite(tol) or tol < 0.0:
            raise ValueError(f"node_tolerance must be a finite number >= 0, got {shown(node_tolerance)}")
        self.node_tolerance = tol
        self.triangles = tri
        lo, hi, left, start, count, order = _build_bvh(tri.mean(axis=1), tri.min(axis=1), tri.max(axis=1), _LEAF_SIZE)
        center, radius, vec_area, area, moment = _node_moments(tri, left, start, count, order)
        self._arrays = (tri, left, start, count, order, center, radius, vec_area, area, moment)
        # the closed soup (welded + cap) for ray counting
        wv, wf, _ = weld(tri.reshape(-1, 3), np.arange(3 * len(tri)).reshape(-1, 3))
        cap, self.cap_apex = _boundary_cap(wv, wf)
        #: whether the welded triangles close up (no cap): w is then an integer everywhere
        self.closed = len(cap) == 0
        self.cap = None if self.closed else WindingNumber._cap_tree(cap, tol)
        soup = np.ascontiguousarray(np.concatenate([wv[wf], cap]) if len(wf) else cap)
        if len(soup):
            rlo, rhi, rleft, rstart, rcount, rorder = _build_bvh(soup.mean(axis=1), soup.min(axis=1),
                                                                   soup.max(axis=1), _LEAF_SIZE)
            self._ray_arrays = (soup, rlo, rhi, rleft, rstart, rcount, rorder)
        else:
            self._ray_arrays = None

    @staticmethod
    def _cap_tree(cap, tol):
        out = WindingNumber.__new__(WindingNumber)

        lo, hi, left, start, count, order = _build_bvh(cap.mean(axis=1), cap.min(axis=1), cap.max(axis=1), _LEAF_SIZE)
        center, radius, vec_area, area, moment = _node_moments(cap, left, start, count, order)
        out.node_tolerance = tol
        out.triangles = cap
        out._arrays = (cap, left, start, count, order, center, radius, vec_area, area, moment)
        return out

    @classmethod
    def of_mesh(cls, mesh, **kwargs) -> "WindingNumber":
        """Of a :class:`~hydro.geometry.Mesh` (its triangles as given)."""
        return cls(np.asarray(mesh.vertices)[np.asarray(mesh.faces)], **kwargs)

    def evaluate(self, points, *, node_tolerance: float | None = None):
        """``(w, bound)`` at ``points`` (N, 3) from the tree: |w − exact| <= bound for every point."""
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        tol = self.node_tolerance if node_tolerance is None else float(node_tolerance)
        w = np.empty(len(pts))
        err = np.empty(len(pts))
        if len(pts):
            _winding_many(pts, tol, *self._arrays, w, err)
        return w, err

    def __call__(self, points) -> np.ndarray:
        return self.evaluate(points)[0]

    def exact(self, points) -> np.ndarray:
        """w by direct summation over every triangle (no approximation)."""
        return winding_number_exact(self.triangles, points)

    def integer(self, points):
        """``(w, ok)``: the winding number of the closed soup (the triangles, welded, plus the
        cap) counted along a ray; exact where ``ok`` (False where every ray tried grazed an edge,
        or the point lies on the surface)."""
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        w = np.zeros(len(pts), dtype=np.int64)
        ok = np.zeros(len(pts), dtype=np.bool_)
        if len(pts) and self._ray_arrays is not None:
            _ray_winding_many(pts, _RAY_DIRECTIONS, *self._ray_arrays, w, ok)
        return w, ok

    def inside(self, points, *, threshold: float = 0.5) -> np.ndarray:
        """Whether w > ``threshold`` at each point, decided exactly (see the class docstring)."""
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        result = np.zeros(len(pts), dtype=np.bool_)
        if len(pts) == 0:
            return result
        wi, ok = self.integer(pts)
        w = wi.astype(np.float64)
        if self.cap is not None:
            sel = np.nonzero(ok)[0]
            wc, err = self.cap.evaluate(pts[sel])
            unsure = err >= np.abs(w[sel] - wc - threshold)
            if np.any(unsure):
                wc[unsure] = self.cap.exact(pts[sel[unsure]])
            w[sel] -= wc
        result[ok] = w[ok] > threshold
        if not np.all(ok):
            bad = ~ok
            result[bad] = self.exact(pts[bad]) > threshold
        return result
