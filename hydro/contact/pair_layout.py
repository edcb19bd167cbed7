"""The rows pair setup writes (stage 2, :mod:`hydro.contact.pair_setup`): the pair_f and pair_i
columns and the routes, read by every later stage."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..backend import device_fn

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
PF_FACE_DEPTH_A = 38  # the face route (ROUTE_FACES): D_A, how deep the overlap can reach into A (m)
PF_FACE_DEPTH_B = 39  # D_B
PF_COUNT = 40
# pair_i columns (int32)
PI_SHAPE_A = 0
PI_SHAPE_B = 1
PI_SDF_A = 2
PI_SDF_B = 3
PI_ENV = 4
PI_BRICK_LO = 5  # 3
PI_BRICK_DIMS = 8  # 3
PI_EXACT = 11  # bit 0: A's field is evaluated exactly (a primitive, a mesh), bit 1: B's (stage 4 and its refinement)
PI_ROUTE = 12  # how the patch is built: one of the ROUTE_* below
PI_COUNT = 13

#: The patch is refined on B's grid and meshed by marching cubes (stages 3 and 4).
ROUTE_GRID = 0
#: Both shapes' fields are the largest of their planes (boxes, convex meshes; no margins, evaluated
#: exactly): the patch is exact polygons (stage 4b, :mod:`hydro.contact.polytope`), and the pair has
#: no candidate bricks.
ROUTE_POLYTOPE = 1
#: A cylinder or cone against a box or convex mesh (no margins): its caps' pieces and its rim band
#: integrated exactly around its axis (stage 4b), no candidate bricks.
ROUTE_AXIAL = 2
#: Two convex meshes with face lists (hydro.sdf.mesh_faces; no margins or gaps, exact meshes, both
#: depths within the lists' reach): a polygon per pair of triangles (stage 4b, :mod:`hydro.contact.faces`),
#: no candidate bricks.
ROUTE_FACES = 3
#: A convex mesh with more planes than this takes the grid (clipping costs planes² per face pair).
MAX_POLYTOPE_PLANES = 40

class PairView(NamedTuple):
    """The pairs' rows written by pair setup, passed to the later stages as one argument."""

    f: Any  # (P, PF_COUNT) float64: the PF_* columns
    i: Any  # (P, PI_COUNT) int32: the PI_* columns


@device_fn(inline=True)
def pair_rotate(pair_f, p, r, x, y, z):
    """The row-major 3×3 rotation stored at pair_f[p, r:r+9] applied to (x, y, z)."""
    return (pair_f[p, r] * x + pair_f[p, r + 1] * y + pair_f[p, r + 2] * z,
            pair_f[p, r + 3] * x + pair_f[p, r + 4] * y + pair_f[p, r + 5] * z,
            pair_f[p, r + 6] * x + pair_f[p, r + 7] * y + pair_f[p, r + 8] * z)


@device_fn(inline=True)
def pair_transform(pair_f, p, r, t, x, y, z):
    """The rotation at column ``r`` then the translation at column ``t`` of pair p, applied to a point."""
    rx, ry, rz = pair_rotate(pair_f, p, r, x, y, z)
    return rx + pair_f[p, t], ry + pair_f[p, t + 1], rz + pair_f[p, t + 2]
