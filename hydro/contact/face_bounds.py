"""The face route's bounds (:mod:`.faces`), which pair setup also reads to choose the route: each
convex mesh triangle's ball, plane and corners in B's frame, lower bounds on a shape's field from
its box and ball, upper bounds on its support function, and :func:`faces_fit` (which triangles lie
near the other shape and how deep the overlap can reach below them)."""

from __future__ import annotations

import math

from ..backend import device_fn
from ..sdf.layout import (F_FACE_REACH, FACE_CLUSTER, I_FACE_CONVEX, I_FACE_COUNT, I_FACES, I_PLANE_COUNT, I_PLANES,
                          MESH_TRI_BALL, MESH_TRI_PLANE, PLANE_ROWS_EXTRA)
from .pair_layout import MAX_POLYTOPE_PLANES, PF_R_AB, PF_T_AB, pair_rotate, pair_transform

#: Triangles of each shape that may lie near the other (the scratch holds their ids); more: the grid
MAX_FACE_CANDIDATES = 384


@device_fn(inline=True)
def _dir_to_b(pair_f, p, side, x, y, z):
    """A direction of shape ``side`` in B's frame."""
    if side == 1:
        return x, y, z
    r = PF_R_AB
    return (pair_f[p, r] * x + pair_f[p, r + 3] * y + pair_f[p, r + 6] * z,
            pair_f[p, r + 1] * x + pair_f[p, r + 4] * y + pair_f[p, r + 7] * z,
            pair_f[p, r + 2] * x + pair_f[p, r + 5] * y + pair_f[p, r + 8] * z)


@device_fn(inline=True)
def _to_b(pair_f, p, side, x, y, z):
    """A point of shape ``side`` (0: A, seen through the pair's transform; 1: B) in B's frame."""
    if side == 1:
        return x, y, z
    return _dir_to_b(pair_f, p, 0, x - pair_f[p, PF_T_AB], y - pair_f[p, PF_T_AB + 1], z - pair_f[p, PF_T_AB + 2])


@device_fn(inline=True)
def plane_to_b(pair_f, p, side, nx, ny, nz, c):
    """A plane n·x + c of shape ``side`` (0: A, seen through the pair transform; 1: B) in B's frame."""
    if side == 1:
        return nx, ny, nz, c
    bx, by, bz = _dir_to_b(pair_f, p, 0, nx, ny, nz)
    # x_A = R_AB·x_B + t_AB: n·x_A + c = (R_ABᵀ n)·x_B + n·t_AB + c
    return bx, by, bz, nx * pair_f[p, PF_T_AB] + ny * pair_f[p, PF_T_AB + 1] + nz * pair_f[p, PF_T_AB + 2] + c


@device_fn(inline=True)
def shape_plane(pair_f, p, sdf, s, side, k):
    """Plane ``k`` of SDF ``s`` (a row of ``sdf.planes``) in B's frame: (nx, ny, nz, c) with its
    signed distance n·x + c. ``side`` 0: the shape is A (seen through the pair transform), 1: B."""
    row = sdf.params_i[s, I_PLANES] + k
    return plane_to_b(pair_f, p, side, sdf.planes[row, 0], sdf.planes[row, 1], sdf.planes[row, 2], sdf.planes[row, 3])


@device_fn(inline=True)
def has_faces(sdf, s):
    """Whether SDF ``s`` is a convex mesh with face lists (else, on the face route, a shape of planes):
    one of few planes (a convex hull's distinct planes, at most ``MAX_POLYTOPE_PLANES``) counts as
    planes, which are fewer to clip than its triangles."""
    return sdf.params_i[s, I_FACES] >= 0 and not (0 < sdf.params_i[s, I_PLANE_COUNT] <= MAX_POLYTOPE_PLANES)


@device_fn(inline=True)
def face_ball(pair_f, p, sdf, side, t):
    """Triangle ``t`` (a row of ``mesh_tri``)'s ball in B's frame: centre, radius. (Every float32
    load here is widened first: the CUDA simulator would otherwise compute in float32.)"""
    x, y, z = _to_b(pair_f, p, side, float(sdf.mesh_tri[t, MESH_TRI_BALL]),
                    float(sdf.mesh_tri[t, MESH_TRI_BALL + 1]), float(sdf.mesh_tri[t, MESH_TRI_BALL + 2]))
    return x, y, z, float(sdf.mesh_tri[t, MESH_TRI_BALL + 3])


@device_fn(inline=True)
def face_plane(pair_f, p, sdf, side, t):
    """Triangle ``t``'s plane in B's frame: (nx, ny, nz, c), n·x + c its signed distance."""
    return plane_to_b(pair_f, p, side, float(sdf.mesh_tri[t, MESH_TRI_PLANE]), float(sdf.mesh_tri[t, MESH_TRI_PLANE + 1]),
                      float(sdf.mesh_tri[t, MESH_TRI_PLANE + 2]), -float(sdf.mesh_tri[t, MESH_TRI_PLANE + 3]))


@device_fn(inline=True)
def side_plane(pair_f, p, sdf, s, side, k):
    """Plane ``k`` of SDF ``s`` in B's frame: triangle k's of a convex mesh with face lists, else
    its plane row k (a box's, a convex mesh's of few planes)."""
    if has_faces(sdf, s):
        return face_plane(pair_f, p, sdf, side, k)
    return shape_plane(pair_f, p, sdf, s, side, k)


@device_fn(inline=True)
def face_corner(pair_f, p, sdf, side, t, k):
    """Corner ``k`` of triangle ``t`` in B's frame."""
    return _to_b(pair_f, p, side, float(sdf.mesh_tri[t, 3 * k]), float(sdf.mesh_tri[t, 3 * k + 1]),
                 float(sdf.mesh_tri[t, 3 * k + 2]))


@device_fn(inline=True)
def _dir_to_local(pair_f, p, side, x, y, z):
    """A B-frame direction in shape ``side``'s own frame."""
    if side == 1:
        return x, y, z
    return pair_rotate(pair_f, p, PF_R_AB, x, y, z)


@device_fn(inline=True)
def _to_local(pair_f, p, side, x, y, z):
    """A B-frame point in shape ``side``'s own frame (A's: the pair's B → A transform)."""
    if side == 1:
        return x, y, z
    return pair_transform(pair_f, p, PF_R_AB, PF_T_AB, x, y, z)


@device_fn(inline=True)
def cut_edge(sdf, sa, sb, cells):
    """The edge polygons are cut to (:func:`~.polygon.emit_polygon`): the smaller shape's shortest
    local box edge over ``cells``."""
    ra = bounds_row(sdf, sa) + 1
    rb = bounds_row(sdf, sb) + 1
    return 2.0 * min(min(sdf.planes[ra, 0], min(sdf.planes[ra, 1], sdf.planes[ra, 2])),
                     min(sdf.planes[rb, 0], min(sdf.planes[rb, 1], sdf.planes[rb, 2]))) / cells


@device_fn(inline=True)
def bounds_row(sdf, s):
    """The row of ``sdf.planes`` holding SDF ``s``'s box centre (the next: half extents, ball radius)."""
    return sdf.params_i[s, I_PLANES] + sdf.params_i[s, I_PLANE_COUNT]


@device_fn(inline=True)
def _distance_below(pair_f, p, sdf, s, side, x, y, z):
    """A lower bound on SDF ``s``'s (shape ``side``) field at the B-frame point x: the larger of the
    distances to its local box and to its ball (it lies in both)."""
    lx, ly, lz = _to_local(pair_f, p, side, x, y, z)
    row = bounds_row(sdf, s)
    dx = lx - sdf.planes[row, 0]
    dy = ly - sdf.planes[row, 1]
    dz = lz - sdf.planes[row, 2]
    ball = math.sqrt(dx * dx + dy * dy + dz * dz) - sdf.planes[row + 1, 3]
    ox = max(abs(dx) - sdf.planes[row + 1, 0], 0.0)
    oy = max(abs(dy) - sdf.planes[row + 1, 1], 0.0)
    oz = max(abs(dz) - sdf.planes[row + 1, 2], 0.0)
    return max(ball, math.sqrt(ox * ox + oy * oy + oz * oz))


@device_fn(inline=True)
def _support_above(pair_f, p, sdf, s, side, ux, uy, uz):
    """An upper bound on SDF ``s``'s (shape ``side``) support function along the B-frame direction u
    (unit): the smaller of its local box's and its ball's, in B's frame."""
    row = bounds_row(sdf, s)
    cx, cy, cz = _to_b(pair_f, p, side, sdf.planes[row, 0], sdf.planes[row, 1], sdf.planes[row, 2])
    lx, ly, lz = _dir_to_local(pair_f, p, side, ux, uy, uz)
    centre = ux * cx + uy * cy + uz * cz
    box = abs(lx) * sdf.planes[row + 1, 0] + abs(ly) * sdf.planes[row + 1, 1] + abs(lz) * sdf.planes[row + 1, 2]
    return centre + min(box, sdf.planes[row + 1, 3])


@device_fn(inline=True)
def _cap_max(ux, uy, uz, cx, cy, cz, radius, mx, my, mz, d):
    """The largest of u·x (u unit) over the ball (c, radius) cut by the half space m·x <= d (m unit);
    −1e300 when they do not meet."""
    h = mx * cx + my * cy + mz * cz - d  # the centre's height above the plane
    if h > radius:
        return -1e300
    top = ux * cx + uy * cy + uz * cz + radius
    if mx * (cx + radius * ux) + my * (cy + radius * uy) + mz * (cz + radius * uz) <= d:
        return top  # the ball's own maximiser is inside
    # else on the circle where the plane cuts the ball
    rho = math.sqrt(max(radius * radius - h * h, 0.0))
    um = ux * mx + uy * my + uz * mz
    tx = ux - um * mx
    ty = uy - um * my
    tz = uz - um * mz
    return ux * (cx - h * mx) + uy * (cy - h * my) + uz * (cz - h * mz) + rho * math.sqrt(tx * tx + ty * ty + tz * tz)


@device_fn(inline=False)
def _depth_in_cap(pair_f, p, sdf, s, side, so, so_side, t):
    """How deep the overlap can reach below triangle ``t``'s plane (of SDF ``s``) when the other
    (SDF ``so``) is a shape of planes: the overlap lies in s's ball and below every plane of so, so
    the least over those planes of the largest of −(n·x + c) over the ball cut by the plane."""
    nx, ny, nz, c = face_plane(pair_f, p, sdf, side, t)
    row = bounds_row(sdf, s)
    bx, by, bz = _to_b(pair_f, p, side, sdf.planes[row, 0], sdf.planes[row, 1], sdf.planes[row, 2])
    radius = sdf.planes[row + 1, 3]
    best = 1e300
    for j in range(sdf.params_i[so, I_PLANE_COUNT]):
        mx, my, mz, mc = shape_plane(pair_f, p, sdf, so, so_side, j)
        best = min(best, _cap_max(-nx, -ny, -nz, bx, by, bz, radius, mx, my, mz, -mc) - c)
    return best


@device_fn(inline=False)
def _within_planes(pair_f, p, sdf, s, side, so, so_side, t, grow):
    """Whether triangle ``t`` (of a non-convex mesh, SDF ``s``) comes within ``grow`` of the shape of
    planes SDF ``so``: no plane of it lies more than that below all three corners (its piece lies
    within its depth bound of the triangle, also where it runs on past a reflex edge)."""
    x0, y0, z0 = face_corner(pair_f, p, sdf, side, t, 0)
    x1, y1, z1 = face_corner(pair_f, p, sdf, side, t, 1)
    x2, y2, z2 = face_corner(pair_f, p, sdf, side, t, 2)
    for j in range(sdf.params_i[so, I_PLANE_COUNT]):
        mx, my, mz, mc = shape_plane(pair_f, p, sdf, so, so_side, j)
        low = min(mx * x0 + my * y0 + mz * z0, min(mx * x1 + my * y1 + mz * z1, mx * x2 + my * y2 + mz * z2)) + mc
        if low > grow:
            return False
    return True


@device_fn(inline=False)
def _region_depth(pair_f, p, sdf, s, side, so, so_side):
    """How deep the overlap can reach into a non-convex mesh (SDF ``s``) pressed into a shape of
    planes (SDF ``so``): from a point of both, the way out of the mesh along −n_j (n_j one of the
    other's planes) is no longer than the mesh reaches below that plane, so the least over its
    planes of the most any of the mesh's corners lies below it."""
    first = sdf.params_i[s, I_FACES]
    end = first + sdf.params_i[s, I_FACE_COUNT]
    best = 1e300
    for j in range(sdf.params_i[so, I_PLANE_COUNT]):
        mx, my, mz, mc = shape_plane(pair_f, p, sdf, so, so_side, j)
        # the plane in the mesh's frame: n·R x + n·t + c, once
        lx, ly, lz = _dir_to_local(pair_f, p, side, mx, my, mz)
        ox, oy, oz = _to_b(pair_f, p, side, 0.0, 0.0, 0.0)
        lc = mx * ox + my * oy + mz * oz + mc
        far = -1e300
        for t in range(first, end):
            for k in range(3):
                v = (lx * float(sdf.mesh_tri[t, 3 * k]) + ly * float(sdf.mesh_tri[t, 3 * k + 1])
                     + lz * float(sdf.mesh_tri[t, 3 * k + 2]) + lc)
                far = max(far, -v)
        best = min(best, far)
    return best


@device_fn(inline=True)
def _near(pair_f, p, sdf, s, side, so, so_side, t, ox, oy, oz, ball, grow):
    """Whether triangle ``t``'s ball grown by ``grow`` can meet the other shape (SDF ``so``; its ball,
    of radius ``ball`` about o in this shape's frame, then its box and ball)."""
    dx = float(sdf.mesh_tri[t, MESH_TRI_BALL]) - ox
    dy = float(sdf.mesh_tri[t, MESH_TRI_BALL + 1]) - oy
    dz = float(sdf.mesh_tri[t, MESH_TRI_BALL + 2]) - oz
    far = ball + grow + float(sdf.mesh_tri[t, MESH_TRI_BALL + 3])
    if dx * dx + dy * dy + dz * dz >= far * far:  # most, untransformed
        return False
    x, y, z, r = face_ball(pair_f, p, sdf, side, t)
    return _distance_below(pair_f, p, sdf, so, so_side, x, y, z) < r + grow


@device_fn(inline=True)
def _next_near(pair_f, p, sdf, s, side, so, so_side, t, ox, oy, oz, ball, grow):
    """The first triangle from ``t`` on (rows of SDF ``s``'s convex mesh, in order) that is
    :func:`_near` the other shape, or the end of its rows. A run of ``FACE_CLUSTER`` triangles
    whose cluster ball grown likewise misses the other's ball is passed over at once (each of its
    triangles' balls lies in the cluster's, so each would fail the same test)."""
    first = sdf.params_i[s, I_FACES]
    end = first + sdf.params_i[s, I_FACE_COUNT]
    runs = bounds_row(sdf, s) + PLANE_ROWS_EXTRA  # the clusters' rows (hydro.sdf.mesh_faces.cluster_balls)
    while t < end:
        k = t - first
        if k % FACE_CLUSTER == 0:
            row = runs + k // FACE_CLUSTER
            dx = sdf.planes[row, 0] - ox
            dy = sdf.planes[row, 1] - oy
            dz = sdf.planes[row, 2] - oz
            far = ball + grow + sdf.planes[row, 3]
            if dx * dx + dy * dy + dz * dz >= far * far:
                t += FACE_CLUSTER
                continue
        if _near(pair_f, p, sdf, s, side, so, so_side, t, ox, oy, oz, ball, grow):
            return t
        t += 1
    return end


@device_fn(inline=False)
def _near_faces(pair_f, p, sdf, s, side, so, so_side, reach, known, scratch, col, cap):
    """The triangles of SDF ``s`` (shape ``side``) whose piece of the patch can meet the other shape
    (SDF ``so``, ``so_side``): (how many, written as ids from ``scratch[p, col]`` up to ``cap``; the
    depth bound D). D is the least, over the triangles whose ball grown by ``reach`` can meet the
    other, of how deep the other shape reaches below their planes n·x + c (−φ ≤ h_other(−n) − c);
    the triangles listed are those whose ball grown by D can (a piece lies within D below its
    triangle). A D beyond ``reach`` lists those of the ball grown by ``reach`` (the route then does
    not fit). ``known`` >= 0: D as an earlier call found it (pair setup's), not found again."""
    # the other's ball in this shape's frame, so that most triangles are dismissed untransformed
    row = bounds_row(sdf, so)
    ox, oy, oz = _to_b(pair_f, p, so_side, sdf.planes[row, 0], sdf.planes[row, 1], sdf.planes[row, 2])
    ox, oy, oz = _to_local(pair_f, p, side, ox, oy, oz)
    ball = sdf.planes[row + 1, 3]
    first = sdf.params_i[s, I_FACES]
    end = first + sdf.params_i[s, I_FACE_COUNT]
    depth = known
    if known < 0.0 and sdf.params_i[s, I_FACE_CONVEX] == 0:  # a non-convex mesh (against a shape of planes)
        depth = max(_region_depth(pair_f, p, sdf, s, side, so, so_side), 0.0)
    elif known < 0.0:
        depth = 1e300
        t = _next_near(pair_f, p, sdf, s, side, so, so_side, first, ox, oy, oz, ball, reach)
        while t < end:
            nx, ny, nz, c = face_plane(pair_f, p, sdf, side, t)
            if nx != 0.0 or ny != 0.0 or nz != 0.0:
                depth = min(depth, _support_above(pair_f, p, sdf, so, so_side, -nx, -ny, -nz) - c)
            t = _next_near(pair_f, p, sdf, s, side, so, so_side, t + 1, ox, oy, oz, ball, reach)
        if depth > reach and sdf.params_i[so, I_FACES] < 0:  # against a shape of planes: a tighter bound
            tight = 1e300
            t = _next_near(pair_f, p, sdf, s, side, so, so_side, first, ox, oy, oz, ball, reach)
            while t < end:
                tight = min(tight, _depth_in_cap(pair_f, p, sdf, s, side, so, so_side, t))
                t = _next_near(pair_f, p, sdf, s, side, so, so_side, t + 1, ox, oy, oz, ball, reach)
            depth = min(depth, tight)
        depth = max(depth, 0.0)
    grow = min(depth, reach)
    regions = sdf.params_i[s, I_FACE_CONVEX] == 0
    n = 0
    t = _next_near(pair_f, p, sdf, s, side, so, so_side, first, ox, oy, oz, ball, grow)
    while t < end:
        if not regions or _within_planes(pair_f, p, sdf, s, side, so, so_side, t, grow):
            if n < cap:
                scratch[p, col + n] = t
            n += 1
        t = _next_near(pair_f, p, sdf, s, side, so, so_side, t + 1, ox, oy, oz, ball, grow)
    return n, depth


@device_fn(inline=False)
def _near_ids(pair_f, p, sdf, s, side, so, so_side, known, scratch, col, cap):
    """:func:`_near_faces` for a convex mesh with face lists; for a shape of planes, all of them."""
    if has_faces(sdf, s):
        return _near_faces(pair_f, p, sdf, s, side, so, so_side, sdf.params_f[s, F_FACE_REACH], known, scratch, col,
                           cap)
    n = sdf.params_i[s, I_PLANE_COUNT]
    for k in range(min(n, cap)):
        scratch[p, col + k] = k
    return n, 0.0


@device_fn(inline=False)
def faces_fit(pair_f, p, sdf, sa, sb, known_a, known_b, scratch, col, cap):
    """Whether the pair's patch can take the face route: at most ``MAX_FACE_CANDIDATES`` triangles
    of each convex mesh near the other shape and the mesh's depth bound within its lists' reach;
    also (count of A's near triangles or planes, of B's, D_A, D_B). The ids go to
    ``scratch[p, col:]`` (A's) and ``scratch[p, col + MAX_FACE_CANDIDATES:]`` (B's), at most
    ``cap`` each (0: only counted); a shape of planes lists all its planes, its depth 0 (unused:
    its pieces are clipped against all its planes). ``known_a``, ``known_b`` >= 0: the depths as
    pair setup found them (``PF_FACE_DEPTH_A``, ``_B``), not found again; −1: find them."""
    na, depth_a = _near_ids(pair_f, p, sdf, sa, 0, sb, 1, known_a, scratch, col, cap)
    nb, depth_b = _near_ids(pair_f, p, sdf, sb, 1, sa, 0, known_b, scratch, col + MAX_FACE_CANDIDATES, cap)
    ok = na <= MAX_FACE_CANDIDATES and nb <= MAX_FACE_CANDIDATES and (
        na == 0 or nb == 0 or ((not has_faces(sdf, sa) or depth_a <= sdf.params_f[sa, F_FACE_REACH])
                               and (not has_faces(sdf, sb) or depth_b <= sdf.params_f[sb, F_FACE_REACH])))
    return ok, na, nb, depth_a, depth_b
