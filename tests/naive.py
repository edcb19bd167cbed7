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
    return triangle_distances(p, tri).min(axis=1)


def triangle_distances(p, tri):
    """Exact distance from each point p (N,3) to each triangle of tri (T,3,3): (N, T)."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d_plane = np.einsum("ntk,tk->nt", p[:, None, :] - a[None], n)
    proj = p[:, None, :] - d_plane[..., None] * n[None]
    inside = ((np.einsum("ntk,tk->nt", np.cross((b - a)[None], proj - a[None]), n) >= 0)
              & (np.einsum("ntk,tk->nt", np.cross((c - b)[None], proj - b[None]), n) >= 0)
              & (np.einsum("ntk,tk->nt", np.cross((a - c)[None], proj - c[None]), n) >= 0))
    d_edges = np.minimum(np.minimum(point_segment_distance(p, a, b), point_segment_distance(p, b, c)),
                         point_segment_distance(p, c, a))
    return np.where(inside, np.abs(d_plane), d_edges)


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


def patch_contacts(model, shape_poses, a, b, *, clamp=0.02, switched=False, exact=False):
    """Every contact of pair (a, b) by marching cubes over B's whole grid (no refinement).

    A is the coarser shape (ties: B is the higher index), as in the pipeline. ``exact``: the
    fields are the primitives' exact distances (``Geometry.phi``) where the patch is built — at
    the grid points, at each vertex, settled on the interface by bisection to round-off (the
    pipeline takes one parabolic step), and at the point of the patch over each inside triangle's
    centroid (Newton's method along the normal to round-off; the pipeline takes one step). Returns
    a dict of arrays: point, normal, area, depth, pressure, force, stiffness, weight, speculative,
    and ``kinked``: the rows cut along a kink (the pipeline's ``kinks.kink_contact``).
    """
    from hydro.contact.mc_tables import CORNER_OFFSETS, EDGE_CORNERS, TRI_COUNT, TRI_EDGES
    from hydro.transforms import pose_inverse, pose_transform_points, quat_rotate

    sa, sb = model.sdfs[model.shape_sdf[a]], model.sdfs[model.shape_sdf[b]]
    if sa.voxel_size < sb.voxel_size:
        a, b, sa, sb = b, a, sb, sa
    ka, kb = model.shape_stiffness[a], model.shape_stiffness[b]
    ma, mb = model.shape_margin[a], model.shape_margin[b]
    keff = ka * kb / (ka + kb)
    gap = model.shape_gap[a] + model.shape_gap[b]
    b_to_a = pose_inverse(shape_poses[a])

    def fields(pts_b):
        """eA, eB at B-local points (M, 3)."""
        in_a = pose_transform_points(b_to_a, pose_transform_points(shape_poses[b], pts_b))
        if exact:
            return sa.geometry.phi(in_a) - ma, sb.geometry.phi(pts_b) - mb
        return sa.sample(in_a) - ma, sb.sample(pts_b) - mb

    def interface(ea, eb):
        if switched:
            kna, knb = ka / np.sqrt(ka * kb), kb / np.sqrt(ka * kb)
            return np.where((ea < 0) & (eb < 0), kna * ea - knb * eb, ea - eb)
        return ka * ea - kb * eb

    def planes_at(x, margin):
        """A's and B's face planes (n, c) in B's frame that are their exact fields at the B-local
        point x, no other face within ``margin`` (the kink path, hydro/contact/kinks.py), or None."""
        def to_a(q):
            return pose_transform_points(b_to_a, pose_transform_points(shape_poses[b], q))

        out = []
        for sdf, local in ((sa, to_a), (sb, lambda q: q)):
            plane = _face_plane(sdf, local(x[None])[0], float(sdf.geometry.phi(local(x[None]))[0]), KINK_TOLERANCE * h,
                                margin)
            if plane is None:
                return None
            n_l, c_l = plane
            # the plane as a function of the B-local point: affine, its coefficients by evaluation
            basis = local(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
            vals = basis @ n_l + c_l
            out.append((vals[1:] - vals[0], vals[0]))
        return out

    grid = sb.grid_points()  # (nz+1, ny+1, nx+1, 3) in B's frame
    pts_b = grid.reshape(-1, 3)
    ea, eb = fields(pts_b)
    if not exact:  # B's grid samples as stored (what the kernels read there), not interpolated
        eb = sb.pack().grid_values(0).ravel() - mb
    shape = grid.shape[:3]
    ea = ea.astype(np.float32).astype(np.float64).reshape(shape)
    eb = eb.astype(np.float32).astype(np.float64).reshape(shape)
    f = interface(ea, eb)
    # the pipeline keeps the grid samples of eA, eB and f as float32 (both of its passes read
    # the same stored values); the reference rounds them alike
    f = f.astype(np.float32).astype(np.float64)
    rows = []
    nz, ny, nx = (s - 1 for s in shape)
    h = sb.voxel_size

    def crossing(p0, p1):
        """(t, eA, eB) of the crossing on the grid edge p0 -> p1 (grid indices)."""
        f0 = f[p0[2], p0[1], p0[0]]
        f1 = f[p1[2], p1[1], p1[0]]
        tt = 0.5 if f1 == f0 else -f0 / (f1 - f0)
        if exact and 0.0 < tt < 1.0:
            x0 = sb.origin + h * p0
            x1 = sb.origin + h * p1
            e = fields((x0 + tt * (x1 - x0))[None])
            ft = interface(*e)[0]
            if ft != 0.0:
                tt = _parabolic_root(f0, tt, ft, f1)
                e = fields((x0 + tt * (x1 - x0))[None])
            ea_v, eb_v = e[0][0], e[1][0]
        else:
            ea_v = ea[p0[2], p0[1], p0[0]] + tt * (ea[p1[2], p1[1], p1[0]] - ea[p0[2], p0[1], p0[0]])
            eb_v = eb[p0[2], p0[1], p0[0]] + tt * (eb[p1[2], p1[1], p1[0]] - eb[p0[2], p0[1], p0[0]])
        # the pipeline keeps each edge's crossing as float32 (one value for every voxel and pass)
        return float(np.float32(tt)), float(np.float32(ea_v)), float(np.float32(eb_v))

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
                        tt, ea_v, eb_v = crossing(p0, p1)
                        if abs(ea_v + eb_v) <= 1e-7 * h:  # marching.RIM_ROUNDING: on the rim
                            eb_v = -ea_v
                        tt = min(max(tt, clamp), 1 - clamp)
                        verts.append(sb.origin + h * (p0 + tt * (p1 - p0)))
                        vea.append(ea_v)
                        veb.append(eb_v)
                    v = np.array(verts)
                    cr = np.cross(v[1] - v[0], v[2] - v[0])
                    area = 0.5 * np.linalg.norm(cr)
                    s = np.array(vea) + np.array(veb)
                    if area <= 1e-10 * h * h or (np.all(s >= 0) and s.mean() > gap):
                        continue
                    n_local = cr / np.linalg.norm(cr)
                    centre = None
                    sub = None
                    kinked = None
                    if exact and np.any(s < 0):
                        # one Newton step along the normal, its slope from the voxel's trilinear
                        # gradient of the corners' f
                        corner_f = f[k:k + 2, j:j + 2, i:i + 2]  # (z, y, x)

                        def on_patch(c):
                            u = np.clip((c - sb.origin) / h - np.array([i, j, k]), 0.0, 1.0)
                            grad = np.array([
                                np.sum((corner_f[:, :, 1] - corner_f[:, :, 0]) * _weights(u[1], u[2])),
                                np.sum((corner_f[:, 1, :] - corner_f[:, 0, :]) * _weights(u[0], u[2])),
                                np.sum((corner_f[1, :, :] - corner_f[0, :, :]) * _weights(u[0], u[1]))]) / h
                            e = fields(c[None])
                            slope = grad @ n_local
                            if slope > 0.0:
                                step = -interface(*e)[0] / slope
                                if ON_PATCH * h < abs(step) <= h:
                                    return c + step * n_local, fields((c + step * n_local)[None])
                            return c, e

                        centre = on_patch(v.mean(axis=0))[1]
                        if abs(centre[0][0] + centre[1][0] - s.mean()) > SUB_DEVIATION * h:
                            if not switched:
                                kinked = _kink_pieces(v, planes_at, ka, kb, ma, mb, h)
                            if kinked is None:
                                sub = _subdivision(v, vea, veb, on_patch)
                        elif not np.all(s < 0):
                            centre = None
                    if kinked is not None:
                        row, n_row = _pieces_row(v, kinked, kb, keff, n_local)
                    elif sub is not None:
                        row, n_row = _subdivided_row(v, sub, kb, keff, n_local)
                    else:
                        row, n_row = _triangle_row(v, np.array(vea), np.array(veb), kb, keff, area, centre), n_local
                    rows.append((pose_transform_points(shape_poses[b], row[0]), quat_rotate(shape_poses[b][3:], n_row))
                                + row[1:] + (kinked is not None,))
    if not rows:
        return None
    cols = list(zip(*rows))
    names = ("point", "normal", "area", "depth", "pressure", "force", "stiffness", "weight", "speculative", "kinked")
    return {n: np.array(c) for n, c in zip(names, cols)}


KINK_TOLERANCE = 1e-5  # kinks.KINK_TOLERANCE
KINK_MARGIN = 1e-6  # kinks.KINK_MARGIN


def _face_plane(sdf, x, phi, tol, margin):
    """(n, c) in the shape's frame: the face plane n·x + c that is its exact field ``phi`` at the
    local point x — a mesh's nearest triangle's (the corners as its SDF stores them, float32, which
    the exact distance is measured to), a box's largest face plane — when they agree to ``tol`` and
    no other face comes within ``margin``; else None."""
    from hydro.geometry import Box, Mesh

    geometry = sdf.geometry

    if isinstance(geometry, Box):
        half = np.asarray(geometry.size, float) / 2
        planes = sorted(((np.eye(3)[i] * sgn, -half[i]) for i in range(3) for sgn in (1.0, -1.0)),
                        key=lambda q: q[0] @ x + q[1])
        (n, c), runner_up = planes[-1], planes[-2]
        if not (n @ x + c) - (runner_up[0] @ x + runner_up[1]) > margin:
            return None
    elif isinstance(geometry, Mesh):
        tri = np.asarray(sdf.mesh_field.tri[:, :9], float).reshape(-1, 3, 3)
        d = triangle_distances(x[None], tri)[0]
        first = int(np.argmin(d))
        normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        normals /= np.linalg.norm(normals, axis=1)[:, None]
        offsets = -np.einsum("tk,tk->t", normals, tri[:, 0])
        n, c = normals[first], offsets[first]
        # another face as near (to the margin) but not in this one's plane: either could be taken
        near = d <= d[first] + margin
        other = (np.abs(normals - n).max(axis=1) > 1e-5) | (np.abs((normals - n) @ x + offsets - c) > tol)
        if margin >= 0.0 and np.any(near & other):
            return None
    else:
        return None
    return (n, c) if abs(n @ x + c - phi) <= tol else None


def _kink_pieces(v, planes_at, ka, kb, ma, mb, h):
    """The pipeline's kink path (``kinks.kink_contact``) in NumPy: when one field changes face plane
    across the triangle v (3,3) — one vertex's planes differ from the other two's, in one field —
    the kink line (where that field's two planes are equal, on the interface of the lone vertex's
    planes), its points nearest the lone vertex's two edges, checked against both exact fields
    there; the three pieces [(x (3,3), s (3,))], or None (subdivide)."""
    tol = KINK_TOLERANCE * h
    found = [planes_at(x, KINK_MARGIN * h) for x in v]
    if any(f is None for f in found):
        return None
    n_t = np.cross(v[1] - v[0], v[2] - v[0])
    n_t /= np.linalg.norm(n_t)

    def same(p, q):
        dn, dc = p[0] - q[0], p[1] - q[1]
        return all(abs(dn @ x + dc) <= tol for x in v) and abs(dn @ n_t) * h <= tol

    bits = [(1 if same(found[k][0], found[(k + 1) % 3][0]) else 0)
            | (2 if same(found[k][1], found[(k + 1) % 3][1]) else 0) for k in range(3)]
    lone = [r for r in range(3) if bits[(r + 1) % 3] == 3 and bits[r] == bits[(r + 2) % 3] and bits[r] in (1, 2)]
    if not lone:
        return None
    r = lone[0]
    changes = 0 if bits[r] == 2 else 1  # the lone vertex's pairs agree in B only: A changes
    order = [r, (r + 1) % 3, (r + 2) % 3]
    x0, x1, x2 = v[order]
    (pa0, pb0), (pa1, pb1) = found[r], found[(r + 1) % 3]
    g = (pa0[0] - pa1[0], pa0[1] - pa1[1]) if changes == 0 else (pb0[0] - pb1[0], pb0[1] - pb1[1])
    f = (ka * pa0[0] - kb * pb0[0], ka * (pa0[1] - ma) - kb * (pb0[1] - mb))
    line = np.cross(g[0], f[0])
    # a point of the kink line: least-norm solution of the two plane equations, then the points of
    # the line and the edge nearest each other
    base = np.linalg.lstsq(np.array([g[0], f[0]]), -np.array([g[1], f[1]]), rcond=None)[0]
    ks = []
    for x_end in (x1, x2):
        e = x_end - x0
        m = np.array([[line @ line, -(line @ e)], [line @ e, -(e @ e)]])
        sl, u = np.linalg.solve(m, np.array([(x0 - base) @ line, (x0 - base) @ e]))
        k = base + sl * line
        if not (0.0 <= u <= 1.0 and np.linalg.norm(k - x0 - u * e) <= h):
            return None
        # both fields at the kink point are the lone vertex's planes (the other's agree there)
        there = planes_at(k, -1.0)  # (the kink's ends lie on two faces by construction)
        if there is None:
            return None
        for mine, other in ((pa0, there[0]), (pb0, there[1])):
            if abs(mine[0] @ k + mine[1] - (other[0] @ k + other[1])) > tol:
                return None
        ks.append(k)
    k1, k2 = ks

    def sep(x, pa, pb):
        return pa[0] @ x + pa[1] - ma + pb[0] @ x + pb[1] - mb

    s0, s1, s2 = sep(x0, pa0, pb0), sep(x1, pa1, pb1), sep(x2, pa1, pb1)
    sk1, sk2 = sep(k1, pa0, pb0), sep(k2, pa0, pb0)
    return [(np.array([x0, k1, k2]), np.array([s0, sk1, sk2])), (np.array([k1, x1, x2]), np.array([sk1, s1, s2])),
            (np.array([k1, x2, k2]), np.array([sk1, s2, sk2]))], order, np.array([s0, s1, s2])


def _pieces_row(v, kinked, kb, keff, n_local):
    """:func:`_triangle_row` of a triangle cut along its kink into pieces (the pipeline's
    ``contacts.sub_triangles_contact``): each by the linear rule with its own normal, summed."""
    pieces, order, s_v = kinked
    return _summed_row(v[order], [(x, s / 2, s / 2) for x, s in pieces], s_v, kb, keff, n_local)


SUB_CUTS = 4  # contacts.SUB_CUTS
SUB_DEVIATION = 0.02  # marching.SUB_DEVIATION
ON_PATCH = 1e-5  # marching.ON_PATCH


def _subdivision(v, vea, veb, on_patch):
    """The pipeline's subdivision points of a triangle: {(i, j): (x, eA, eB)} at i/SUB_CUTS along
    edge 0→1 and j/SUB_CUTS along 0→2, settled on the patch (``on_patch``) but at the vertices; the
    pipeline keeps them as float32 (the position as its offset from vertex 0)."""
    f32 = lambda x: np.float32(x).astype(np.float64)
    pts = {}
    for i in range(SUB_CUTS + 1):
        for j in range(SUB_CUTS + 1 - i):
            if (i, j) in ((0, 0), (SUB_CUTS, 0), (0, SUB_CUTS)):
                k = 0 if i == j == 0 else (1 if i else 2)
                x, ea_, eb_ = v[k], vea[k], veb[k]
            else:
                x, (ea_, eb_) = on_patch(v[0] + i / SUB_CUTS * (v[1] - v[0]) + j / SUB_CUTS * (v[2] - v[0]))
                ea_, eb_ = ea_[0], eb_[0]
            pts[i, j] = (v[0] + f32(x - v[0]), f32(ea_), f32(eb_))
    return pts


def _subdivided_row(v, pts, kb, keff, n_local):
    """:func:`_triangle_row` of a subdivided triangle (the pipeline's
    ``contacts.subdivided_triangle_contact``): each sub-triangle by the linear rule with its own
    normal, summed; the force is the resultant, along it. Returns (row, normal)."""
    subs = []
    for i in range(SUB_CUTS):
        for j in range(SUB_CUTS - i):
            tris = [((i, j), (i + 1, j), (i, j + 1))]
            if i + j < SUB_CUTS - 1:
                tris.append(((i + 1, j), (i + 1, j + 1), (i, j + 1)))
            for tri in tris:
                subs.append((np.array([pts[t][0] for t in tri]), np.array([pts[t][1] for t in tri]),
                             np.array([pts[t][2] for t in tri])))
    s = np.array([pts[0, 0][1] + pts[0, 0][2], pts[SUB_CUTS, 0][1] + pts[SUB_CUTS, 0][2],
                  pts[0, SUB_CUTS][1] + pts[0, SUB_CUTS][2]])
    return _summed_row(v, subs, s, kb, keff, n_local)


def _summed_row(v, subs, s, kb, keff, n_local):
    """A patch triangle's row from its sub-triangles [(x (3,3), eA (3,), eB (3,))] on the patch:
    each by the linear rule with its own normal, summed; the force is the resultant, along it
    (``s``: the triangle's vertices' separations). Returns (row, normal)."""
    total = a_in = s_int = 0.0
    fvec = np.zeros(3)
    moment = np.zeros(3)
    mom_area = np.zeros(3)
    for xs, ea_, eb_ in subs:
        cr = np.cross(xs[1] - xs[0], xs[2] - xs[0])
        if not np.linalg.norm(cr) > 0.0:
            continue
        point, ar, depth, _, force, _, _, spec = _triangle_row(xs, ea_, eb_, kb, keff, 0.5 * np.linalg.norm(cr), None)
        if spec:
            continue
        a_in += ar
        total += force
        fvec += force * cr / np.linalg.norm(cr)
        moment += force * point if force > 0.0 else 0.0
        s_int += depth * ar
        mom_area += ar * point if force == 0.0 else 0.0
    if a_in <= 0.0:
        return (v.mean(axis=0), 0.0, s.mean(), 0.0, 0.0, 0.0, 0.0, True), n_local
    force = np.linalg.norm(fvec)
    normal = n_local
    if force > 0.0 and total > 0.0:
        normal = fvec / force
        moment *= force / total
        s_int *= force / total
    else:
        force = total
    if force > 0.0:
        point = moment / force
    else:
        force = 0.0
        point = mom_area / a_in
    return (point, a_in, s_int / a_in, force / a_in, force, a_in * keff, force / kb, False), normal


def _parabolic_root(f0, t1, ft, f1):
    """The pipeline's settled crossing: the root of the parabola through (0, f0), (t1, ft), (1, f1)
    in the sub-interval that brackets the sign change, else that sub-interval's secant root."""
    lo, flo, hi, fhi = (t1, ft, 1.0, f1) if (ft < 0.0) == (f0 < 0.0) else (0.0, f0, t1, ft)
    if fhi == flo:
        return t1
    secant = lo - flo * (hi - lo) / (fhi - flo)
    d01 = (ft - f0) / t1
    qa = (f1 - ft) / (1.0 - t1) - d01
    qb = d01 - qa * t1
    if abs(qa) <= 1e-12 * abs(qb):
        return secant
    disc = qb * qb - 4.0 * qa * f0
    if disc < 0.0:
        return secant
    qq = -0.5 * (qb + np.copysign(np.sqrt(disc), qb))
    for r in ((f0 / qq) if qq != 0.0 else np.nan, qq / qa):  # the stable pair of roots, in that order
        if lo <= r <= hi:
            return r
    return secant


def _weights(a, b):
    """Bilinear weights (2, 2) at fractions a (last axis), b (first axis)."""
    return np.outer([1 - b, b], [1 - a, a])


def _triangle_row(v, vea, veb, kb, keff, area, centre):
    """(point, area, depth, pressure, force, stiffness, weight, speculative) of one triangle: the
    linear pressure p = −k_eff·s and separation s = eA + eB integrated over the part where s < 0
    (the triangle clipped by s = 0, then split into triangles: the vertex rule integrates linear
    functions exactly), at the centre of pressure; ``centre`` (eA, eB at the patch point over the
    centroid) adds 3/4·area·(centre value − mean vertex value) to ∫p and ∫s."""
    s = vea + veb
    p = -keff * s
    poly = _clip_linear(v, np.column_stack([s, p]), s)
    a_in = f_int = s_int = 0.0
    moment = np.zeros(3)
    mom_area = np.zeros(3)
    for k in range(1, len(poly) - 1):
        (x0, q0), (x1, q1), (x2, q2) = poly[0], poly[k], poly[k + 1]
        ar = 0.5 * np.linalg.norm(np.cross(x1 - x0, x2 - x0))
        a_in += ar
        pv = np.array([q0[1], q1[1], q2[1]])
        sv = np.array([q0[0], q1[0], q2[0]])
        xs = np.array([x0, x1, x2])
        f_int += ar * pv.mean()
        s_int += ar * sv.mean()
        moment += ar / 12.0 * (pv @ xs + pv.sum() * xs.sum(axis=0))
        mom_area += ar * xs.mean(axis=0)
    if a_in <= 0.0:
        return v.mean(axis=0), 0.0, s.mean(), 0.0, 0.0, 0.0, 0.0, True
    if centre is not None:
        ea_c, eb_c = centre[0][0], centre[1][0]
        dp = 0.75 * area * (-keff * (ea_c + eb_c) - p.mean())
        f_int += dp
        s_int += 0.75 * area * (ea_c + eb_c - s.mean())
        moment += dp * v.mean(axis=0)
    if f_int > 0.0:
        point = moment / f_int
    else:
        f_int = 0.0
        point = mom_area / a_in
    return point, a_in, s_int / a_in, f_int / a_in, f_int, a_in * keff, f_int / kb, False


def _clip_linear(v, values, s):
    """The polygon where the linear interpolant of ``s`` (vertex values) is negative, as a list of
    (point, interpolated ``values``) (Sutherland–Hodgman on the triangle)."""
    out = []
    for k in range(3):
        j = (k + 1) % 3
        if s[k] < 0:
            out.append((v[k], values[k]))
        if (s[k] < 0) != (s[j] < 0):
            t = s[k] / (s[k] - s[j])
            out.append((v[k] + t * (v[j] - v[k]), values[k] + t * (values[j] - values[k])))
    return out
