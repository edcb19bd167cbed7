"""Slow, obviously correct NumPy twins of hydro's kernels (test references only)."""

import numpy as np


def point_segment_distance(p, a, b):
    """Distance from points p (N,3) to segments a-b (T,3) -> (N,T)."""
    ab = b - a
    t = np.einsum("ntk,tk->nt", p[:, None, :] - a[None], ab) / np.einsum("tk,tk->t", ab, ab)
    t = np.clip(t, 0.0, 1.0)
    closest = a[None] + t[..., None] * ab[None]
    return np.linalg.norm(p[:, None, :] - closest, axis=-1)


def point_triangle_distance(p, tri):
    """Exact distance from points p (N,3) to the nearest of triangles tri (T,3,3)."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d_plane = np.einsum("ntk,tk->nt", p[:, None, :] - a[None], n)
    proj = p[:, None, :] - d_plane[..., None] * n[None]
    # inside test by the signs of the three edge cross products
    def side(u, v):
        return np.einsum("ntk,tk->nt", np.cross(v[None] - u[None], proj - u[None]), n)

    inside = (side(a, b) >= 0) & (side(b, c) >= 0) & (side(c, a) >= 0)
    d_edges = np.minimum(np.minimum(point_segment_distance(p, a, b), point_segment_distance(p, b, c)),
                         point_segment_distance(p, c, a))
    d = np.where(inside, np.abs(d_plane), d_edges)
    return d.min(axis=1)


def winding_number(p, tri):
    """Generalised winding number of the closed mesh tri (T,3,3) at points p (N,3)."""
    a = tri[None, :, 0] - p[:, None]
    b = tri[None, :, 1] - p[:, None]
    c = tri[None, :, 2] - p[:, None]
    la, lb, lc = (np.linalg.norm(v, axis=-1) for v in (a, b, c))
    num = np.einsum("ntk,ntk->nt", a, np.cross(b, c))
    den = la * lb * lc + np.einsum("ntk,ntk->nt", a, b) * lc + np.einsum("ntk,ntk->nt", b, c) * la \
        + np.einsum("ntk,ntk->nt", c, a) * lb
    return np.arctan2(num, den).sum(axis=1) / (2.0 * np.pi)


def mesh_signed_distance(p, tri):
    d = point_triangle_distance(p, tri)
    return np.where(winding_number(p, tri) > 0.5, -d, d)
