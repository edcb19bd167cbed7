"""A median-split bounding-volume hierarchy over triangles (CPU), shared by the mesh distance
(:mod:`.mesh_distance`) and the winding numbers (:mod:`.mesh_winding`); it imports neither."""

from __future__ import annotations

import numpy as np

from ..backend import cpu_jit

__all__ = ["_build_bvh"]


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
