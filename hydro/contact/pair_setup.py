"""Stage 2 — pair setup on B's grid.

For each pair from the broad phase, pick B (the shape with the smaller voxel size; ties: the
higher shape index), compute the transforms every later stage needs (B-local → A-local and
B-local → world), the pair's constants (stiffnesses, k_eff, margins, gaps), which fields stage 4
evaluates exactly, the route (two shapes whose fields are planes — boxes, convex meshes — exact
polygons; a cylinder or cone against such a shape, its caps and rim integrated exactly; a convex
triangle mesh against another or against a shape of planes, a polygon per pair of triangles or
planes; all in stage 4b, :mod:`hydro.contact.polytope`; else the grid) and, on the grid route, the
range of B's bricks that A's SDF box overlaps. All of B's bricks in that range become candidates — deep ones
included, so a deep patch has no hole in its middle — and stage 3 decides which can hold the
patch.
"""

from __future__ import annotations

import math

from ..backend import device_fn, kernel
from ..geometry.primitives import CONE, CYLINDER
from ..sdf.layout import (BRICK, F_JUMP, F_ORIGIN, F_PRIMITIVE, F_VOXEL, I_BRICKS, I_FACE_CONVEX, I_MESH, I_PLANE_COUNT,
                          I_PLANES, I_PRIMITIVE, I_RES)
from .face_bounds import faces_fit, has_faces, shape_plane  # noqa: F401 (shape_plane re-exported)
# the pair rows' layout (hydro.contact.pair_layout), re-exported: later stages import it from here
from .pair_layout import (PF_R_AB, PF_T_AB, PF_R_WB, PF_T_WB, PF_KA, PF_KB, PF_MARGIN_A,  # noqa: F401
                          PF_MARGIN_B, PF_GAP, PF_KEFF, PF_KNA, PF_KNB, PF_SLACK_A, PF_VOXEL_B,  # noqa: F401
                          PF_ABS_ROWS, PF_SLACK_B, PF_FACE_DEPTH_A, PF_FACE_DEPTH_B, PF_COUNT,  # noqa: F401
                          PI_SHAPE_A, PI_SHAPE_B, PI_SDF_A,  # noqa: F401
                          PI_SDF_B, PI_ENV, PI_BRICK_LO, PI_BRICK_DIMS, PI_EXACT, PI_ROUTE,  # noqa: F401
                          PI_COUNT, ROUTE_GRID, ROUTE_POLYTOPE, ROUTE_AXIAL, ROUTE_FACES,  # noqa: F401
                          MAX_POLYTOPE_PLANES, PairView)  # noqa: F401
from .pair_layout import pair_rotate, pair_transform

#: The axial route parametrises each piece of the patch as z = z0 + ρ·z1(θ) around the round
#: shape's axis; a piece steeper than this (|z1|, e.g. a cylinder lying on its side, whose rim
#: interface is parallel to the axis) sends the pair to the grid.
AXIAL_SLOPE_MAX = 1000.0
#: Relative size (of kr + kq) below which kr·∇φ_f − kq·∇b_j counts as zero along the axis or across it
PARALLEL = 1e-9


@device_fn(inline=True)
def shape_box(pair_f, p, sdf, s, side):
    """SDF ``s``'s local bounding box as an axis-aligned box in B's frame (``side`` as in
    :func:`shape_plane`): centre, half extents."""
    row = sdf.params_i[s, I_PLANES] + sdf.params_i[s, I_PLANE_COUNT]
    cx = sdf.planes[row, 0]
    cy = sdf.planes[row, 1]
    cz = sdf.planes[row, 2]
    hx = sdf.planes[row + 1, 0]
    hy = sdf.planes[row + 1, 1]
    hz = sdf.planes[row + 1, 2]
    if side == 1:
        return cx, cy, cz, hx, hy, hz
    # x_B = R_ABᵀ (x_A − t_AB); half extents |R_AB|ᵀ·h
    dx = cx - pair_f[p, PF_T_AB]
    dy = cy - pair_f[p, PF_T_AB + 1]
    dz = cz - pair_f[p, PF_T_AB + 2]
    r = PF_R_AB
    return (pair_f[p, r] * dx + pair_f[p, r + 3] * dy + pair_f[p, r + 6] * dz,
            pair_f[p, r + 1] * dx + pair_f[p, r + 4] * dy + pair_f[p, r + 7] * dz,
            pair_f[p, r + 2] * dx + pair_f[p, r + 5] * dy + pair_f[p, r + 8] * dz,
            abs(pair_f[p, r]) * hx + abs(pair_f[p, r + 3]) * hy + abs(pair_f[p, r + 6]) * hz,
            abs(pair_f[p, r + 1]) * hx + abs(pair_f[p, r + 4]) * hy + abs(pair_f[p, r + 7]) * hz,
            abs(pair_f[p, r + 2]) * hx + abs(pair_f[p, r + 5]) * hy + abs(pair_f[p, r + 8]) * hz)


@device_fn(inline=False)
def possible_planes(pair_f, p, sdf, s, side, cx, cy, cz, hx, hy, hz):
    """Bit i set for each plane i of SDF ``s`` (``side`` as in :func:`shape_plane`) whose region
    (where it is the shape's largest plane) meets the B-frame box of centre c and half extents h.
    A plane is left out when, for another plane k, a_i − a_k < 0 over the whole box (a linear
    function, so at the corner that maximises it): no piece of the patch can lie on it there."""
    mask = 0
    count = sdf.params_i[s, I_PLANE_COUNT]
    for i in range(count):
        nx, ny, nz, c = shape_plane(pair_f, p, sdf, s, side, i)
        possible = True
        for k in range(count):
            if k != i and possible:
                kx, ky, kz, kc = shape_plane(pair_f, p, sdf, s, side, k)
                dx = nx - kx
                dy = ny - ky
                dz = nz - kz
                if dx * cx + dy * cy + dz * cz + (c - kc) + abs(dx) * hx + abs(dy) * hy + abs(dz) * hz < 0.0:
                    possible = False
        if possible:
            mask |= 1 << i
    return mask


@device_fn(inline=False)
def overlap_box(pair_f, p, sdf, sa, sb, gap):
    """The overlap of the two shapes' bounding boxes grown by the gap, in B's frame (where every
    piece of the patch lies): (ok, centre, half extents), ok False when they do not overlap."""
    acx, acy, acz, ahx, ahy, ahz = shape_box(pair_f, p, sdf, sa, 0)
    bcx, bcy, bcz, bhx, bhy, bhz = shape_box(pair_f, p, sdf, sb, 1)
    lo_x = max(acx - ahx, bcx - bhx) - gap
    hi_x = min(acx + ahx, bcx + bhx) + gap
    lo_y = max(acy - ahy, bcy - bhy) - gap
    hi_y = min(acy + ahy, bcy + bhy) + gap
    lo_z = max(acz - ahz, bcz - bhz) - gap
    hi_z = min(acz + ahz, bcz + bhz) + gap
    ok = hi_x >= lo_x and hi_y >= lo_y and hi_z >= lo_z
    return (ok, 0.5 * (lo_x + hi_x), 0.5 * (lo_y + hi_y), 0.5 * (lo_z + hi_z), 0.5 * (hi_x - lo_x),
            0.5 * (hi_y - lo_y), 0.5 * (hi_z - lo_z))


@device_fn(inline=True)
def is_round(sdf, s):
    """A cylinder or a cone: planes (caps) and a side whose field is affine in (ρ, z)."""
    kind = sdf.params_i[s, I_PRIMITIVE]
    return kind == CYLINDER or kind == CONE


@device_fn(inline=True)
def round_frame(pair_f, p, side):
    """The round shape's local frame in B's frame (``side`` as in :func:`shape_plane`): origin o and
    axes e0, e1, e2 (x_B = o + Σ u_k·e_k for round-local u)."""
    if side == 1:
        return 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    r = PF_R_AB
    t = PF_T_AB
    # o = −R_ABᵀ t_AB; axis k of A in B's frame: row k of R_AB
    ox = -(pair_f[p, r] * pair_f[p, t] + pair_f[p, r + 3] * pair_f[p, t + 1] + pair_f[p, r + 6] * pair_f[p, t + 2])
    oy = -(pair_f[p, r + 1] * pair_f[p, t] + pair_f[p, r + 4] * pair_f[p, t + 1] + pair_f[p, r + 7] * pair_f[p, t + 2])
    oz = -(pair_f[p, r + 2] * pair_f[p, t] + pair_f[p, r + 5] * pair_f[p, t + 1] + pair_f[p, r + 8] * pair_f[p, t + 2])
    return (ox, oy, oz, pair_f[p, r], pair_f[p, r + 1], pair_f[p, r + 2], pair_f[p, r + 3], pair_f[p, r + 4],
            pair_f[p, r + 5], pair_f[p, r + 6], pair_f[p, r + 7], pair_f[p, r + 8])


@device_fn(inline=True)
def round_plane(pair_f, p, sdf, s, side, k, r_side):
    """Plane ``k`` of SDF ``s`` (``side``) in the round shape's local frame (the round shape on
    ``r_side``): (mx, my, mz, c)."""
    nx, ny, nz, c = shape_plane(pair_f, p, sdf, s, side, k)
    if r_side == 1:
        return nx, ny, nz, c
    ox, oy, oz, e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = round_frame(pair_f, p, r_side)
    return (nx * e0x + ny * e0y + nz * e0z, nx * e1x + ny * e1y + nz * e1z, nx * e2x + ny * e2y + nz * e2z,
            nx * ox + ny * oy + nz * oz + c)


@device_fn(inline=True)
def round_feature(sdf, s, f):
    """Feature ``f`` of round SDF ``s`` in its local frame, as (sρ, sz, s0) with its field
    sρ·ρ + sz·z + s0 (ρ the distance from the axis): f < plane count: a cap (sρ = 0), else the side
    (a cylinder: ρ − r; a cone: the distance to its slant surface, inside). Inside, the round
    shape's φ is the largest of its features."""
    n = sdf.params_i[s, I_PLANE_COUNT]
    if f < n:
        row = sdf.params_i[s, I_PLANES] + f
        return 0.0, sdf.planes[row, 2], sdf.planes[row, 3]
    r = sdf.params_f[s, F_PRIMITIVE]
    hh = sdf.params_f[s, F_PRIMITIVE + 1]
    if sdf.params_i[s, I_PRIMITIVE] == CYLINDER:
        return 1.0, 0.0, -r
    # the cone: apex (0, hh), rim (r, −hh) in the (ρ, z) half-plane; outward normal (2hh, r)/L
    inv = 1.0 / math.sqrt(r * r + 4.0 * hh * hh)
    return 2.0 * hh * inv, r * inv, -r * hh * inv


@device_fn(inline=True)
def axial_slope(kr, kq, sr, sz, mx, my, mz):
    """The piece where round feature (sρ, sz) meets plane m: kr·(sρ ρ + sz z + s0) = kq·(m·u + c)
    is z = z0 + ρ·(α + β cos θ + γ sin θ). Returns (D, α, β, γ) with D = kr·sz − kq·mz."""
    d = kr * sz - kq * mz
    if abs(d) <= PARALLEL * (kr + kq):
        # a cap against a face across the axis, of (to rounding) equal pressure: no surface, as
        # for two such faces of boxes; else parallel to the axis: not a graph around it
        parallel = sr == 0.0 and kq * math.sqrt(mx * mx + my * my) <= PARALLEL * (kr + kq)
        return 0.0, 0.0 if parallel else math.inf, 0.0, 0.0
    return d, -kr * sr / d, kq * mx / d, kq * my / d


@device_fn(inline=False)
def round_features(pair_f, p, sdf, sr_, sq, r_side, gap):
    """Bit f set for each feature f of round SDF ``sr_`` (its caps, then its side, bit = plane
    count) that can be its largest where it overlaps the other shape's box: a cap is left out when
    another cap is larger over the whole overlap (both planes, in the round shape's frame); 0 when
    the boxes do not overlap."""
    qx, qy, qz, qhx, qhy, qhz = shape_box(pair_f, p, sdf, sq, 1 - r_side)
    ox, oy, oz, e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = round_frame(pair_f, p, r_side)
    # the other shape's box in the round frame (u = Eᵀ(x − o)), cut by the round shape's own box
    dx = qx - ox
    dy = qy - oy
    dz = qz - oz
    r = sdf.params_f[sr_, F_PRIMITIVE]
    hh = sdf.params_f[sr_, F_PRIMITIVE + 1]
    c2 = e2x * dx + e2y * dy + e2z * dz
    h2 = abs(e2x) * qhx + abs(e2y) * qhy + abs(e2z) * qhz
    lo = max(c2 - h2, -hh) - gap
    hi = min(c2 + h2, hh) + gap
    if hi < lo:
        return 0
    for k in range(2):
        ck = (e0x * dx + e0y * dy + e0z * dz) if k == 0 else (e1x * dx + e1y * dy + e1z * dz)
        hk = (abs(e0x) * qhx + abs(e0y) * qhy + abs(e0z) * qhz) if k == 0 else (
            abs(e1x) * qhx + abs(e1y) * qhy + abs(e1z) * qhz)
        if ck + hk < -r - gap or ck - hk > r + gap:
            return 0
    n = sdf.params_i[sr_, I_PLANE_COUNT]
    mask = 1 << n
    for f in range(n):
        zf = sdf.planes[sdf.params_i[sr_, I_PLANES] + f, 2]
        cf = sdf.planes[sdf.params_i[sr_, I_PLANES] + f, 3]
        possible = True
        for g in range(n):
            if g != f:
                zg = sdf.planes[sdf.params_i[sr_, I_PLANES] + g, 2]
                cg = sdf.planes[sdf.params_i[sr_, I_PLANES] + g, 3]
                # (cap f − cap g) at its largest over z in [lo, hi]
                if max((zf - zg) * lo, (zf - zg) * hi) + cf - cg < 0.0:
                    possible = False
        if possible:
            mask |= 1 << f
    return mask


@device_fn(inline=False)
def axial_fits(pair_f, p, sdf, sa, sb, ka, kb, gap):
    """Whether a round shape (one of A, B) against a plane shape can take the axial route: every
    pair (round feature, plane whose region meets the overlap) gives a piece no steeper than
    AXIAL_SLOPE_MAX. Also False when the bounding boxes do not overlap (nothing to build)."""
    r_side = 0 if is_round(sdf, sa) else 1
    sr_ = sa if r_side == 0 else sb
    sq = sb if r_side == 0 else sa
    kr = ka if r_side == 0 else kb
    kq = kb if r_side == 0 else ka
    ok, cx, cy, cz, hx, hy, hz = overlap_box(pair_f, p, sdf, sa, sb, gap)
    if not ok:
        return False
    mask = possible_planes(pair_f, p, sdf, sq, 1 - r_side, cx, cy, cz, hx, hy, hz)
    features = round_features(pair_f, p, sdf, sr_, sq, r_side, gap)
    for j in range(sdf.params_i[sq, I_PLANE_COUNT]):
        if (mask >> j) & 1:
            mx, my, mz, c = round_plane(pair_f, p, sdf, sq, 1 - r_side, j, r_side)
            for f in range(sdf.params_i[sr_, I_PLANE_COUNT] + 1):
                if (features >> f) & 1 == 0:
                    continue
                sr, sz, s0 = round_feature(sdf, sr_, f)
                d, al, be, ga = axial_slope(kr, kq, sr, sz, mx, my, mz)
                if not abs(al) + math.sqrt(be * be + ga * ga) <= AXIAL_SLOPE_MAX:
                    return False
    return True


# Model: shape_* arrays, exact (bit 0: HydroelasticConfig.exact_primitives, bit 1: exact_meshes),
# polygons (flat_polygons, with the continuous interface), sdf (SDFView)
# Data in: raw_a, raw_b (broad-phase pairs), shape_rot, shape_pos
# Data out: pairs (PairView), brick_counts
@device_fn
def _pair_setup_item(p, raw_a, raw_b, shape_sdf, shape_stiffness, shape_margin, shape_gap, shape_env, shape_rot,
                     shape_pos, exact, polygons, sdf, pairs, brick_counts):
    sdf_pf = sdf.params_f
    sdf_pi = sdf.params_i
    pair_f = pairs.f
    pair_i = pairs.i
    s0 = raw_a[p]
    s1 = raw_b[p]
    h0 = sdf_pf[shape_sdf[s0], F_VOXEL]
    h1 = sdf_pf[shape_sdf[s1], F_VOXEL]
    # B: the finer grid; ties: the higher index (s1 > s0)
    if h0 < h1:
        a = s1
        b = s0
    else:
        a = s0
        b = s1
    # a non-convex mesh with face lists against a shape of planes: the face route takes it as A (its
    # triangles' regions, hydro.sdf.mesh_faces.region_rules); tried first, and if the route does
    # not fit, the pair is set up again as usual (B the finer grid)
    nb_ = sdf_pi[shape_sdf[a], I_PLANE_COUNT]
    swap = (polygons and exact & 3 == 3 and has_faces(sdf, shape_sdf[b])
            and sdf_pi[shape_sdf[b], I_FACE_CONVEX] == 0 and not has_faces(sdf, shape_sdf[a])
            and 0 < nb_ <= MAX_POLYTOPE_PLANES and not is_round(sdf, shape_sdf[a])
            and shape_margin[a] == 0.0 and shape_margin[b] == 0.0 and shape_gap[a] + shape_gap[b] == 0.0)
    first_a = a
    first_b = b
    for attempt in range(2 if swap else 1):
        if swap and attempt == 0:
            a = first_b
            b = first_a
        else:
            a = first_a
            b = first_b
        sa = shape_sdf[a]
        sb = shape_sdf[b]
        pair_i[p, PI_SHAPE_A] = a
        pair_i[p, PI_SHAPE_B] = b
        pair_i[p, PI_SDF_A] = sa
        pair_i[p, PI_SDF_B] = sb
        bits = 0
        if (exact & 1 and sdf_pi[sa, I_PRIMITIVE] >= 0) or (exact & 2 and sdf_pi[sa, I_MESH] >= 0):
            bits |= 1
        if (exact & 1 and sdf_pi[sb, I_PRIMITIVE] >= 0) or (exact & 2 and sdf_pi[sb, I_MESH] >= 0):
            bits |= 2
        pair_i[p, PI_EXACT] = bits
        route = ROUTE_GRID  # decided below, once the transforms are written
        env = shape_env[a]
        if env < 0:
            env = shape_env[b]
        pair_i[p, PI_ENV] = env
        # R_AB = R_WA^T R_WB, t_AB = R_WA^T (t_WB - t_WA)
        for i in range(3):
            for j in range(3):
                v = 0.0
                for k in range(3):
                    v += shape_rot[a, 3 * k + i] * shape_rot[b, 3 * k + j]
                pair_f[p, PF_R_AB + 3 * i + j] = v
            v = 0.0
            for k in range(3):
                v += shape_rot[a, 3 * k + i] * (shape_pos[b, k] - shape_pos[a, k])
            pair_f[p, PF_T_AB + i] = v
        for j in range(3):
            pair_f[p, PF_ABS_ROWS + j] = (abs(pair_f[p, PF_R_AB + 3 * j]) + abs(pair_f[p, PF_R_AB + 3 * j + 1])
                                          + abs(pair_f[p, PF_R_AB + 3 * j + 2]))
        for k in range(9):
            pair_f[p, PF_R_WB + k] = shape_rot[b, k]
        for k in range(3):
            pair_f[p, PF_T_WB + k] = shape_pos[b, k]
        ka = shape_stiffness[a]
        kb = shape_stiffness[b]
        pair_f[p, PF_KA] = ka
        pair_f[p, PF_KB] = kb
        pair_f[p, PF_MARGIN_A] = shape_margin[a]
        pair_f[p, PF_MARGIN_B] = shape_margin[b]
        pair_f[p, PF_GAP] = shape_gap[a] + shape_gap[b]
        pair_f[p, PF_KEFF] = ka * kb / (ka + kb)
        g = math.sqrt(ka * kb)
        pair_f[p, PF_KNA] = ka / g
        pair_f[p, PF_KNB] = kb / g
        ha = sdf_pf[sa, F_VOXEL]
        hb = sdf_pf[sb, F_VOXEL]
        pair_f[p, PF_SLACK_A] = sdf_pf[sa, F_JUMP]
        pair_f[p, PF_SLACK_B] = sdf_pf[sb, F_JUMP]
        pair_f[p, PF_VOXEL_B] = hb
        # the route: shapes with planes (boxes, convex meshes of at most MAX_POLYTOPE_PLANES, cylinders,
        # cones), no margins; polygons when neither is round, the axial route when one is
        na = sdf_pi[sa, I_PLANE_COUNT]
        nb = sdf_pi[sb, I_PLANE_COUNT]
        if (polygons and exact & 1 and 0 < na <= MAX_POLYTOPE_PLANES and 0 < nb <= MAX_POLYTOPE_PLANES
                and shape_margin[a] == 0.0 and shape_margin[b] == 0.0):
            round_a = is_round(sdf, sa)
            round_b = is_round(sdf, sb)
            if not round_a and not round_b:
                route = ROUTE_POLYTOPE
            elif round_a != round_b and axial_fits(pair_f, p, sdf, sa, sb, ka, kb, pair_f[p, PF_GAP]):
                route = ROUTE_AXIAL
        # a convex mesh with face lists (exact meshes) against another or against a shape of planes (exact
        # primitives), no margins or gaps: a polygon per pair of triangles or planes when the overlap is
        # shallow enough for the lists (counted here, nothing written: cap 0)
        faces_a = has_faces(sdf, sa)
        faces_b = has_faces(sdf, sb)
        planes_a = not faces_a and 0 < na <= MAX_POLYTOPE_PLANES and not is_round(sdf, sa)
        planes_b = not faces_b and 0 < nb <= MAX_POLYTOPE_PLANES and not is_round(sdf, sb)
        regions_a = faces_a and sdf_pi[sa, I_FACE_CONVEX] == 0
        regions_b = faces_b and sdf_pi[sb, I_FACE_CONVEX] == 0
        if (route == ROUTE_GRID and polygons and exact & 2 and (faces_a or faces_b)
                and (faces_a or (planes_a and exact & 1))
                and (faces_b or (planes_b and exact & 1))
                and not regions_b and (planes_b or not regions_a)
                and shape_margin[a] == 0.0 and shape_margin[b] == 0.0 and pair_f[p, PF_GAP] == 0.0):
            ok, n_a, n_b, depth_a, depth_b = faces_fit(pair_f, p, sdf, sa, sb, -1.0, -1.0, pair_f, 0, 0)
            if ok:
                route = ROUTE_FACES
                pair_f[p, PF_FACE_DEPTH_A] = depth_a  # for stage 4b, which lists the triangles
                pair_f[p, PF_FACE_DEPTH_B] = depth_b
        pair_i[p, PI_ROUTE] = route
        if route == ROUTE_FACES or not swap:
            break
    # A's SDF box in B's frame, x_B = R_AB^T (x_A - t_AB): per axis, bounds over its 8 corners,
    # then the range of B's bricks they cover
    count = 1
    for k in range(3):
        lo = 1e300
        hi = -1e300
        for c in range(8):
            xa = sdf_pf[sa, F_ORIGIN] + (c & 1) * sdf_pi[sa, I_RES] * ha - pair_f[p, PF_T_AB]
            ya = sdf_pf[sa, F_ORIGIN + 1] + ((c >> 1) & 1) * sdf_pi[sa, I_RES + 1] * ha - pair_f[p, PF_T_AB + 1]
            za = sdf_pf[sa, F_ORIGIN + 2] + ((c >> 2) & 1) * sdf_pi[sa, I_RES + 2] * ha - pair_f[p, PF_T_AB + 2]
            xb = pair_f[p, PF_R_AB + k] * xa + pair_f[p, PF_R_AB + 3 + k] * ya + pair_f[p, PF_R_AB + 6 + k] * za
            lo = min(lo, xb)
            hi = max(hi, xb)
        brick = BRICK * hb
        nb = sdf_pi[sb, I_BRICKS + k]
        blo = int(math.floor((lo - sdf_pf[sb, F_ORIGIN + k]) / brick))
        bhi = int(math.floor((hi - sdf_pf[sb, F_ORIGIN + k]) / brick))
        blo = max(blo, 0)
        bhi = min(bhi, nb - 1)
        dims = bhi - blo + 1
        if dims < 0:
            dims = 0
        pair_i[p, PI_BRICK_LO + k] = blo
        pair_i[p, PI_BRICK_DIMS + k] = dims
        count *= dims
    brick_counts[p] = count if route == ROUTE_GRID else 0


PAIR_SETUP = kernel("pair_setup", _pair_setup_item)


@device_fn(inline=True)
def b_to_a(pairs, p, x, y, z):
    """A B-local point in A's local frame."""
    return pair_transform(pairs.f, p, PF_R_AB, PF_T_AB, x, y, z)


@device_fn(inline=True)
def b_to_world(pairs, p, x, y, z):
    """A B-local point in the world."""
    return pair_transform(pairs.f, p, PF_R_WB, PF_T_WB, x, y, z)


@device_fn(inline=True)
def b_dir_to_world(pairs, p, x, y, z):
    """A B-local direction in the world."""
    return pair_rotate(pairs.f, p, PF_R_WB, x, y, z)
