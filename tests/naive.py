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


# ---------------------------------------------------------------------------------------------
# Contact pipeline references


def obb_overlap(rot_a, center_a, half_a, rot_b, center_b, half_b):
    """Separating axis test by brute force over the 15 candidate axes (rot: 3×3, columns = axes)."""
    axes = [rot_a[:, i] for i in range(3)] + [rot_b[:, i] for i in range(3)]
    axes += [np.cross(rot_a[:, i], rot_b[:, j]) for i in range(3) for j in range(3)]
    d = center_b - center_a
    for ax in axes:
        n = np.linalg.norm(ax)
        if n < 1e-9:
            continue
        ax = ax / n
        ra = np.sum(half_a * np.abs(rot_a.T @ ax))
        rb = np.sum(half_b * np.abs(rot_b.T @ ax))
        if abs(d @ ax) > ra + rb + 1e-9:
            return False
    return True


def broad_phase_pairs(model, shape_poses):
    """All hydroelastic pairs whose padded SDF boxes overlap (all-pairs loop)."""
    from hydro.transforms import quat_to_matrix

    out = set()
    n = len(model.shape_path)
    boxes = []
    for s in range(n):
        sdf = model.sdfs[model.shape_sdf[s]]
        pad = model.shape_margin[s] + model.shape_gap[s]
        rot = quat_to_matrix(shape_poses[s, 3:])
        c_local = 0.5 * (sdf.box_lo + sdf.box_hi)
        boxes.append((rot, shape_poses[s, :3] + rot @ c_local, 0.5 * (sdf.box_hi - sdf.box_lo) + pad))
    for a in range(n):
        for b in range(a + 1, n):
            if not (model.shape_hydroelastic[a] and model.shape_hydroelastic[b]):
                continue
            ea, eb = model.shape_env[a], model.shape_env[b]
            if ea >= 0 and eb >= 0 and ea != eb:
                continue
            if model.shape_body[a] == model.shape_body[b]:
                continue
            if obb_overlap(*boxes[a], *boxes[b]):
                out.add((a, b))
    return out


def patch_contacts(model, shape_poses, a, b, *, clamp=0.02, switched=False):
    """Every contact of pair (a, b) by marching cubes over B's whole grid (no refinement).

    A is the coarser shape (ties: B is the higher index), as in the pipeline. Returns a dict of
    arrays: point, normal, area, depth, pressure, force, stiffness, weight, speculative.
    """
    from hydro.contact.mc_tables import CORNER_OFFSETS, EDGE_CORNERS, TRI_COUNT, TRI_EDGES
    from hydro.transforms import pose_inverse, pose_transform_points, quat_rotate

    sa, sb = model.sdfs[model.shape_sdf[a]], model.sdfs[model.shape_sdf[b]]
    if sa.voxel_size < sb.voxel_size:
        a, b, sa, sb = b, a, sb, sa
    ka, kb = model.shape_stiffness[a], model.shape_stiffness[b]
    keff = ka * kb / (ka + kb)
    gap = model.shape_gap[a] + model.shape_gap[b]
    grid = sb.grid_points()  # (nz+1, ny+1, nx+1, 3) in B's frame
    pts_b = grid.reshape(-1, 3)
    eb = sb.sample(pts_b) - model.shape_margin[b]
    world = pose_transform_points(shape_poses[b], pts_b)
    in_a = pose_transform_points(pose_inverse(shape_poses[a]), world)
    ea = sa.sample(in_a) - model.shape_margin[a]
    shape = grid.shape[:3]
    ea = ea.astype(np.float32).astype(np.float64).reshape(shape)
    eb = eb.astype(np.float32).astype(np.float64).reshape(shape)
    if switched:
        kna, knb = ka / np.sqrt(ka * kb), kb / np.sqrt(ka * kb)
        f = np.where((ea < 0) & (eb < 0), kna * ea - knb * eb, ea - eb)
    else:
        f = ka * ea - kb * eb
    # the pipeline keeps the grid samples of eA, eB and f as float32 (both of its passes read
    # the same stored values); the reference rounds them alike
    f = f.astype(np.float32).astype(np.float64)
    rows = []
    nz, ny, nx = (s - 1 for s in shape)
    h = sb.voxel_size
    for k in range(nz):
        for j in range(ny):
            for i in range(nx):
                case = 0
                for c in range(8):
                    dx, dy, dz = CORNER_OFFSETS[c]
                    if f[k + dz, j + dy, i + dx] < 0:
                        case |= 1 << c
                for t in range(TRI_COUNT[case]):
                    verts, vea, veb = [], [], []
                    for e in TRI_EDGES[case, 3 * t : 3 * t + 3]:
                        c0, c1 = EDGE_CORNERS[e]
                        p0 = np.array([i, j, k]) + CORNER_OFFSETS[c0]
                        p1 = np.array([i, j, k]) + CORNER_OFFSETS[c1]
                        f0 = f[p0[2], p0[1], p0[0]]
                        f1 = f[p1[2], p1[1], p1[0]]
                        tt = 0.5 if f1 == f0 else -f0 / (f1 - f0)
                        tt = min(max(tt, clamp), 1 - clamp)
                        verts.append(sb.origin + h * (p0 + tt * (p1 - p0)))
                        vea.append(ea[p0[2], p0[1], p0[0]] + tt * (ea[p1[2], p1[1], p1[0]] - ea[p0[2], p0[1], p0[0]]))
                        veb.append(eb[p0[2], p0[1], p0[0]] + tt * (eb[p1[2], p1[1], p1[0]] - eb[p0[2], p0[1], p0[0]]))
                    v = np.array(verts)
                    cr = np.cross(v[1] - v[0], v[2] - v[0])
                    area = 0.5 * np.linalg.norm(cr)
                    s = np.array(vea) + np.array(veb)
                    frac = _inside_fraction_by_clipping(s)
                    if area <= 1e-10 * h * h or (frac == 0.0 and s.mean() > gap):
                        continue
                    delta = np.mean(veb)
                    spec = frac == 0.0
                    pressure = 0.0 if spec else max(0.0, -kb * delta)
                    area_in = area * frac
                    n_local = cr / np.linalg.norm(cr)
                    rows.append((pose_transform_points(shape_poses[b], v.mean(axis=0)),
                                 quat_rotate(shape_poses[b][3:], n_local), area_in, s.mean(), pressure,
                                 pressure * area_in, area_in * keff, area_in * -delta, spec))
    if not rows:
        return None
    cols = list(zip(*rows))
    names = ("point", "normal", "area", "depth", "pressure", "force", "stiffness", "weight", "speculative")
    return {n: np.array(c) for n, c in zip(names, cols)}


def _inside_fraction_by_clipping(s):
    """Area fraction of a triangle where the linear interpolant of vertex values s is negative:
    clip the triangle (in barycentric coordinates) by s < 0 and take the shoelace area."""
    poly = [np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 1.0])]
    vals = list(s)
    clipped = []
    for k in range(3):
        p, q = poly[k], poly[(k + 1) % 3]
        vp, vq = vals[k], vals[(k + 1) % 3]
        if vp < 0:
            clipped.append(p)
        if (vp < 0) != (vq < 0):
            t = vp / (vp - vq)
            clipped.append(p + t * (q - p))
    if len(clipped) < 3:
        return 0.0
    x = np.array([c[0] for c in clipped])
    y = np.array([c[1] for c in clipped])
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    return area / 0.5
