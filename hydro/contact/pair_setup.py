"""Stage 2 — pair setup on B's grid.

For each pair from the broad phase, pick B (the shape with the smaller voxel size; ties: the
higher shape index), compute the transforms every later stage needs (B-local → A-local and
B-local → world), the pair's constants (stiffnesses, k_eff, margins, gaps), which fields stage 4
evaluates exactly, the route (two boxes: exact polygons, stage 4b; else the grid) and, on the
grid route, the range of B's bricks that A's SDF box overlaps. All of B's bricks in that range
become candidates — deep ones included, so a deep patch has no hole in its middle — and stage 3
decides which can hold the patch.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ..backend import device_fn, kernel
from ..geometry.primitives import BOX
from ..sdf.layout import BRICK, F_JUMP, F_ORIGIN, F_VOXEL, I_BRICKS, I_MESH, I_PRIMITIVE, I_RES

# pair_f columns (float64)
PF_R_AB = 0  # 9: rotation B-local -> A-local (row-major)
PF_T_AB = 9  # 3: translation B-local -> A-local
PF_R_WB = 12  # 9: rotation B-local -> world
PF_T_WB = 21  # 3
PF_KA = 24
PF_KB = 25
PF_MARGIN_A = 26
PF_MARGIN_B = 27
PF_GAP = 28  # gaps summed: speculative band width
PF_KEFF = 29
PF_KNA = 30  # normalised stiffness kA / sqrt(kA kB)
PF_KNB = 31
PF_SLACK_A = 32  # A's field: the largest jump where a fine brick meets a coarse one (m)
PF_VOXEL_B = 33
PF_ABS_ROWS = 34  # 3: Σ_i |R_AB[j, i]|, how far A's axis j can move when B's axes move by 1 each
PF_SLACK_B = 37  # B's field: likewise
PF_COUNT = 38
# pair_i columns (int32)
PI_SHAPE_A = 0
PI_SHAPE_B = 1
PI_SDF_A = 2
PI_SDF_B = 3
PI_ENV = 4
PI_BRICK_LO = 5  # 3
PI_BRICK_DIMS = 8  # 3
PI_EXACT = 11  # bit 0: A's field is evaluated exactly (a primitive, a mesh), bit 1: B's (stage 4 and its refinement)
PI_ROUTE = 12  # how the patch is built: ROUTE_GRID or ROUTE_POLYTOPE
PI_COUNT = 13

#: The patch is refined on B's grid and meshed by marching cubes (stages 3 and 4).
ROUTE_GRID = 0
#: Both shapes are boxes without margins, evaluated exactly: the patch is exact polygons (stage 4b,
#: :mod:`hydro.contact.polytope`), and the pair has no candidate bricks.
ROUTE_POLYTOPE = 1


class PairView(NamedTuple):
    """The pairs' rows written by pair setup, passed to the later stages as one argument."""

    f: Any  # (P, PF_COUNT) float64: the PF_* columns
    i: Any  # (P, PI_COUNT) int32: the PI_* columns


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
    route = ROUTE_GRID
    if (polygons and bits == 3 and sdf_pi[sa, I_PRIMITIVE] == BOX and sdf_pi[sb, I_PRIMITIVE] == BOX
            and shape_margin[a] == 0.0 and shape_margin[b] == 0.0):
        route = ROUTE_POLYTOPE
    pair_i[p, PI_ROUTE] = route
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
def _rotate(pair_f, p, r, x, y, z):
    """The row-major 3×3 rotation stored at pair_f[p, r:r+9] applied to (x, y, z)."""
    return (pair_f[p, r] * x + pair_f[p, r + 1] * y + pair_f[p, r + 2] * z,
            pair_f[p, r + 3] * x + pair_f[p, r + 4] * y + pair_f[p, r + 5] * z,
            pair_f[p, r + 6] * x + pair_f[p, r + 7] * y + pair_f[p, r + 8] * z)


@device_fn(inline=True)
def _transform(pair_f, p, r, t, x, y, z):
    """The rotation at column ``r`` then the translation at column ``t`` of pair p, applied to a point."""
    rx, ry, rz = _rotate(pair_f, p, r, x, y, z)
    return rx + pair_f[p, t], ry + pair_f[p, t + 1], rz + pair_f[p, t + 2]


@device_fn(inline=True)
def b_to_a(pairs, p, x, y, z):
    """A B-local point in A's local frame."""
    return _transform(pairs.f, p, PF_R_AB, PF_T_AB, x, y, z)


@device_fn(inline=True)
def b_to_world(pairs, p, x, y, z):
    """A B-local point in the world."""
    return _transform(pairs.f, p, PF_R_WB, PF_T_WB, x, y, z)


@device_fn(inline=True)
def b_dir_to_world(pairs, p, x, y, z):
    """A B-local direction in the world."""
    return _rotate(pairs.f, p, PF_R_WB, x, y, z)
