"""A mesh's exact field where the patch is built: per cell, the triangles that can be nearest.

A mesh's stored field is its grid, trilinearly interpolated. Near the polyhedron's edges and
vertices the exact distance is a kinked max of planes and the interpolant over-estimates φ (too
little depth: −2.5 % of force on two icospheres at 64³). Marching cubes therefore evaluates a
mesh's exact signed distance (``HydroelasticConfig.exact_meshes``), as it does a primitive's closed
form: :func:`~hydro.sdf.sample.mesh_field_phi` at any point of a listed cell.

Built here once per mesh (CPU), beside its SDF:

- cells of ``MESH_CELL``³ voxels (a marching-cubes block; ``CELLS_PER_BRICK`` per brick) in the
  bricks near the surface. A cell lists every triangle within u + ρ of its centre c (ρ: the
  cell's half diagonal; u: the largest distance from its corners to c's nearest triangle T₀, at
  most d + ρ, d the distance of c): for x in the cell the nearest triangle T* has dist(x, T*) ≤
  dist(x, T₀) ≤ u (the distance to a triangle is convex, largest at a corner) and dist(c, T*) ≤
  dist(x, T*) + ρ, so T* is listed (a provable bound; a small slack covers the rounding of the
  stored float32 corners). Each list
  is sorted by distance from c, with that distance rounded down as a lower bound, so a query
  stops at the first candidate whose bound exceeds the best found.
- cells whose centre lies deeper than ``MESH_LIST_DEPTH_VOXELS`` voxels (more than a 1000× stiffer
  partner presses 10 % of a 64-voxel shape's height), or farther outside than
  ``MESH_LIST_OUTSIDE_VOXELS`` voxels plus the shape's margin and gap, keep no list and use the
  stored field: lists grow with depth, and patches rarely lie there.
- per triangle, float32: its corners and the angle-weighted pseudo-normals of its vertices and
  edges (the sign near the surface, exact for the closed solid :meth:`Mesh.solid` makes).
- cells over which one face plane is provably the exact field (:func:`_affine_regions`, as for
  bricks) start their list with a negative key (still a lower bound): marching cubes takes the
  affine path in such a cell's block, as in a brick proven affine.

The builder checks the exact field against the build's own exact samples (winding-number signed)
at every sample of the listed bricks; a brick where they disagree (a sign the pseudo-normals get
wrong where shells touch) drops its lists. ``brick_exact_gap`` bounds |exact − stored| per brick
(measured at the voxel centres, widened like a primitive's), so refinement keeps every cell the
exact interface crosses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import prange

from ..backend import cpu_jit
from ..geometry.mesh_distance import _box_dist2, _closest_on_triangle, _closest_point
from .layout import BRICK, CELLS_PER_BRICK, CELLS_PER_EDGE, MESH_CELL, MESH_TRI_BALL, MESH_TRI_PLANE, MESH_TRI_VALUES

#: Cells whose centre lies deeper than this many voxels keep no list
MESH_LIST_DEPTH_VOXELS = 6.0
#: ... or lies farther outside than this many voxels (plus the shape's margin and gap)
MESH_LIST_OUTSIDE_VOXELS = 2.0
#: Relative slack of the list bound (covers float32 corners and rounding), × the voxel
LIST_SLACK = 1e-4
#: The first key of a cell over which one face plane is the exact field (:func:`mark_affine_cells`):
#: negative, so still a lower bound on that candidate's distance
AFFINE_KEY = -1.0
#: Agreement of the list-evaluated field with the build's exact samples, × the voxel
CHECK_TOLERANCE = 1e-3


@dataclass
class MeshField:
    """The exact field of one mesh (see the module docstring).

    | field | shape | meaning |
    |---|---|---|
    | ``brick_row`` | (bricks,) int32 | each brick's row of cells, −1: none |
    | ``cell_start`` | (rows · CELLS_PER_BRICK + 1,) int32 | each cell's first entry; the last: the end |
    | ``ids`` | (E,) int32 | candidate triangles, nearest to the cell's centre first |
    | ``key`` | (E,) float32 | a lower bound on each candidate's distance from the centre; a |
    |  |  | cell's first ``AFFINE_KEY``: one face plane is its exact field (:func:`mark_affine_cells`) |
    | ``tri`` | (T, MESH_TRI_VALUES) float32 | corners and pseudo-normals per triangle |
    """

    brick_row: np.ndarray
    cell_start: np.ndarray
    ids: np.ndarray
    key: np.ndarray
    tri: np.ndarray
    dropped_bricks: int = 0

    @property
    def nbytes(self) -> int:
        return int(self.brick_row.nbytes + self.cell_start.nbytes + self.ids.nbytes + self.key.nbytes + self.tri.nbytes)

    @property
    def rows(self) -> int:
        return (len(self.cell_start) - 1) // CELLS_PER_BRICK


def triangle_table(md) -> np.ndarray:
    """(T, MESH_TRI_VALUES) float32 rows of a :class:`~hydro.geometry.mesh_distance.MeshDistance`:
    corners a, b, c; vertex pseudo-normals at a, b, c; edge pseudo-normals of ab, bc, ca."""
    tri, _, _, _, _, _, _, _, _, _, vert_n, edge_n, faces, tri_edge = md.arrays
    out = np.empty((len(tri), MESH_TRI_VALUES), np.float32)
    out[:, 0:9] = tri.reshape(-1, 9)
    for k in range(3):
        out[:, 9 + 3 * k : 12 + 3 * k] = vert_n[faces[:, k]]
        out[:, 18 + 3 * k : 21 + 3 * k] = edge_n[tri_edge[:, k]]
    # a ball about the (stored, rounded) corners' centroid holding them, its radius rounded up
    corners = out[:, 0:9].astype(np.float64).reshape(-1, 3, 3)
    centre = corners.mean(axis=1).astype(np.float32)
    radius = np.linalg.norm(corners - centre.astype(np.float64)[:, None, :], axis=2).max(axis=1)
    out[:, MESH_TRI_BALL : MESH_TRI_BALL + 3] = centre
    out[:, MESH_TRI_BALL + 3] = (radius * (1.0 + 1e-6) + 1e-12).astype(np.float32)
    # the plane: a lower bound on the distance that prunes the neighbours of the nearest triangle
    # (inside a convex part every other face's plane is farther); the slack bounds, from the
    # stored values, how far the stored corners lie off the stored plane
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(normal, axis=1)
    normal = np.where(length[:, None] > 0.0, normal / np.where(length > 0.0, length, 1.0)[:, None], 0.0)
    n32 = normal.astype(np.float32)
    offset = np.einsum("ij,ij->i", n32.astype(np.float64), corners[:, 0]).astype(np.float32)
    off_plane = np.abs(np.einsum("ij,ikj->ik", n32.astype(np.float64), corners) - offset.astype(np.float64)[:, None])
    slack = off_plane.max(axis=1) * (1.0 + 1e-6) + 1e-6 * radius + 1e-12
    out[:, MESH_TRI_PLANE : MESH_TRI_PLANE + 3] = n32
    out[:, MESH_TRI_PLANE + 3] = offset
    out[:, MESH_TRI_PLANE + 4] = slack.astype(np.float32) * np.float32(1.0 + 1e-6)
    return out


@cpu_jit(parallel=True)
def _cell_lists(centres, phi, inner, outer, reach, slack, write, tri, tri_lo, tri_hi, node_lo, node_hi, node_left,
                node_start, node_count, order, counts, offsets, ids, keys):
    """Per cell centre with signed distance ``phi`` in [``inner``, ``outer``]: count (``write``
    False) or write at ``offsets`` (True, sorted by distance) the triangles within u + ρ
    (+ ``slack``) of it, ρ = ``reach`` / 2 the cell's half diagonal and u the largest distance from
    the cell's corners to the centre's nearest triangle (at most d + ρ); none elsewhere."""
    n = centres.shape[0]
    for c in prange(n):
        if not (phi[c] >= inner and phi[c] <= outer):
            if not write:
                counts[c] = 0
            continue
        stack = np.empty(256, dtype=np.int64)
        px, py, pz = centres[c, 0], centres[c, 1], centres[c, 2]
        best2, t0, _, _, _, _ = _closest_point(px, py, pz, np.inf, -1, tri, tri_lo, tri_hi, node_lo, node_hi,
                                               node_left, node_start, node_count, order, stack)
        # every point of the cell lies within u of the centre's nearest triangle (the distance to a
        # triangle is convex: its largest over the cube is at a corner), so its own nearest one lies
        # within u of it, and within u + ρ of the centre (ρ = reach / 2, the half diagonal)
        u = 0.0
        half = 0.5 * reach / math.sqrt(3.0)
        for q in range(8):
            cx = px + (half if q & 1 else -half)
            cy = py + (half if q & 2 else -half)
            cz = pz + (half if q & 4 else -half)
            qx, qy, qz, _ = _closest_on_triangle(cx, cy, cz, tri[t0, 0, 0], tri[t0, 0, 1], tri[t0, 0, 2], tri[t0, 1, 0],
                                                 tri[t0, 1, 1], tri[t0, 1, 2], tri[t0, 2, 0], tri[t0, 2, 1],
                                                 tri[t0, 2, 2])
            u = max(u, math.sqrt((cx - qx) ** 2 + (cy - qy) ** 2 + (cz - qz) ** 2))
        r = u + 0.5 * reach + slack
        r2 = r * r
        m = 0
        o = offsets[c] if write else 0
        sp = 0
        stack[sp] = 0
        sp += 1
        while sp > 0:
            sp -= 1
            node = stack[sp]
            if _box_dist2(px, py, pz, node_lo, node_hi, node) > r2:
                continue
            cnt = node_count[node]
            if cnt > 0:
                s = node_start[node]
                for k in range(s, s + cnt):
                    t = order[k]
                    if _box_dist2(px, py, pz, tri_lo, tri_hi, t) > r2:
                        continue
                    qx, qy, qz, _ = _closest_on_triangle(
                        px, py, pz, tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2], tri[t, 1, 0], tri[t, 1, 1], tri[t, 1, 2],
                        tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2])
                    d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
                    if d2 <= r2:
                        if write:
                            ids[o + m] = t
                            # a lower bound, the stored corners' rounding off it
                            keys[o + m] = max(math.sqrt(d2) - slack, 0.0)
                        m += 1
            else:
                left = node_left[node]
                stack[sp] = left
                stack[sp + 1] = left + 1
                sp += 2
        if write:
            # insertion sort by distance (lists are short)
            for a in range(o + 1, o + m):
                kv = keys[a]
                iv = ids[a]
                b = a - 1
                while b >= o and keys[b] > kv:
                    keys[b + 1] = keys[b]
                    ids[b + 1] = ids[b]
                    b -= 1
                keys[b + 1] = kv
                ids[b + 1] = iv
        else:
            counts[c] = m


@cpu_jit(parallel=True)
def _cell_centres(origin, h, nb, bricks, out):
    """Centres of the cells of ``bricks`` (CELLS_PER_BRICK each, x fastest)."""
    for k in prange(bricks.shape[0]):
        b = bricks[k]
        bx = b % nb[0]
        by = (b // nb[0]) % nb[1]
        bz = b // (nb[0] * nb[1])
        for cz in range(CELLS_PER_EDGE):
            for cy in range(CELLS_PER_EDGE):
                for cx in range(CELLS_PER_EDGE):
                    j = k * CELLS_PER_BRICK + (cz * CELLS_PER_EDGE + cy) * CELLS_PER_EDGE + cx
                    out[j, 0] = origin[0] + (BRICK * bx + MESH_CELL * cx + 0.5 * MESH_CELL) * h
                    out[j, 1] = origin[1] + (BRICK * by + MESH_CELL * cy + 0.5 * MESH_CELL) * h
                    out[j, 2] = origin[2] + (BRICK * bz + MESH_CELL * cz + 0.5 * MESH_CELL) * h


def build_mesh_field(md, origin, h, nb, band, band_values, inner=None, outer=None) -> MeshField:
    """The candidate lists of the cells of the band bricks ``band`` near the surface of the mesh
    of ``md`` (a :class:`~hydro.geometry.mesh_distance.MeshDistance`), for the grid ``origin``,
    voxel ``h``, bricks ``nb``: the cells whose centre's φ lies in [``inner``, ``outer``] (default
    ∓ ``MESH_LIST_DEPTH_VOXELS`` voxels). ``band_values``: the exact φ at the 9³ samples of each
    band brick (a cell's centre is one of them)."""
    inner = -MESH_LIST_DEPTH_VOXELS * h if inner is None else float(inner)
    outer = MESH_LIST_DEPTH_VOXELS * h if outer is None else float(outer)
    n_bricks = int(np.prod(nb))
    rho = 0.5 * math.sqrt(3.0) * MESH_CELL * h
    v = np.asarray(band_values).reshape(len(band), BRICK + 1, BRICK + 1, BRICK + 1)
    # each cell's centre sample (a cell of one voxel: its lowest corner's; this only selects the cells)
    c0 = MESH_CELL // 2
    centre_phi = v[:, c0:BRICK:MESH_CELL, c0:BRICK:MESH_CELL, c0:BRICK:MESH_CELL].reshape(len(band), CELLS_PER_BRICK)
    near = np.any((centre_phi >= inner) & (centre_phi <= outer), axis=1)
    bricks = np.ascontiguousarray(np.asarray(band, dtype=np.int64)[near])
    centre_phi = np.ascontiguousarray(centre_phi[near].ravel())
    brick_row = np.full(n_bricks, -1, np.int32)
    brick_row[bricks] = np.arange(len(bricks), dtype=np.int32)
    centres = np.empty((len(bricks) * CELLS_PER_BRICK, 3))
    _cell_centres(np.asarray(origin, dtype=float), float(h), np.asarray(nb, dtype=np.int64), bricks, centres)
    tri, tri_lo, tri_hi, lo, hi, left, start, count, order = md.arrays[:9]
    slack = LIST_SLACK * h
    counts = np.zeros(len(centres), np.int64)
    offsets = np.zeros(len(centres), np.int64)
    dummy_i = np.zeros(1, np.int32)
    dummy_f = np.zeros(1)
    args = (tri, tri_lo, tri_hi, lo, hi, left, start, count, order)
    if len(centres):
        _cell_lists(centres, centre_phi, inner, outer, 2.0 * rho, slack, False, *args, counts, offsets, dummy_i, dummy_f)
    cell_start = np.zeros(len(centres) + 1, np.int64)
    np.cumsum(counts, out=cell_start[1:])
    total = int(cell_start[-1])
    if total >= 2**31:
        raise ValueError("a mesh's exact field would list over 2^31 candidates; use a coarser SDF")
    ids = np.zeros(max(total, 1), np.int32)
    key = np.zeros(max(total, 1), np.float32)
    if total:
        keys64 = np.zeros(total)
        _cell_lists(centres, centre_phi, inner, outer, 2.0 * rho, slack, True, *args, counts, cell_start[:-1].copy(),
                    ids, keys64)
        # float32 rounded down: still a lower bound
        k32 = keys64.astype(np.float32)
        k32 = np.where(k32.astype(np.float64) > keys64, np.nextafter(k32, np.float32(-np.inf)), k32)
        key[:total] = k32
    return MeshField(brick_row=brick_row, cell_start=cell_start.astype(np.int32), ids=ids, key=key,
                     tri=triangle_table(md))


def drop_bricks(field: MeshField, bricks) -> MeshField:
    """``field`` without the lists of ``bricks`` (their rows stay, with empty cells)."""
    bricks = np.asarray(bricks, dtype=np.int64)
    if len(bricks) == 0:
        return field
    rows = field.brick_row[bricks]
    rows = rows[rows >= 0]
    counts = np.diff(field.cell_start.astype(np.int64))
    keep = np.ones(len(counts), bool)
    for r in rows:
        keep[r * CELLS_PER_BRICK : (r + 1) * CELLS_PER_BRICK] = False
    entry_keep = np.repeat(keep, counts)
    new_counts = np.where(keep, counts, 0)
    start = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(new_counts, out=start[1:])
    brick_row = field.brick_row.copy()
    brick_row[bricks] = -1
    ids = field.ids[: len(entry_keep)][entry_keep]
    key = field.key[: len(entry_keep)][entry_keep]
    return MeshField(brick_row=brick_row, cell_start=start.astype(np.int32),
                     ids=ids if len(ids) else np.zeros(1, np.int32), key=key if len(key) else np.zeros(1, np.float32),
                     tri=field.tri, dropped_bricks=field.dropped_bricks + len(rows))


# ============================================================================================
# Thin walls

#: Surface points sampled (area-weighted, seeded) to measure wall thickness
THIN_SAMPLES = 4096
#: Steps (× the voxel) along the inward normal at which the side is read: a wall thinner than two
#: voxels is left before the last
THIN_STEPS = np.arange(1, 9) * 0.25
#: Warn when walls thinner than two voxels cover at least this fraction of the surface
THIN_AREA_FRACTION = 0.01


@dataclass
class ThinWalls:
    """Walls thinner than two voxels of a mesh's grid, from rays along the inward normals of
    ``THIN_SAMPLES`` surface points: ``fraction`` of the area (sampled) where the ray leaves the
    solid within two voxels, and ``thickness`` (m), the 5th percentile of where it leaves there
    (nan when none)."""

    fraction: float
    thickness: float


def thin_walls(md, h: float) -> ThinWalls:
    """Measure the walls of the solid of ``md`` (a solid-signed
    :class:`~hydro.geometry.mesh_distance.MeshDistance`) against the voxel ``h``: from each
    sampled surface point p with inward normal n, the side at p + t·n for t in ``THIN_STEPS`` × h;
    a wall of thickness w < 2h is left at t = w, and there φ = t − w."""
    tri = md.tri
    e1 = tri[:, 1] - tri[:, 0]
    e2 = tri[:, 2] - tri[:, 0]
    cross = np.cross(e1, e2)
    area = np.linalg.norm(cross, axis=1)
    ok = area > 0.0
    if not np.any(ok):
        return ThinWalls(0.0, math.nan)
    rng = np.random.default_rng(0)
    p_face = area[ok] / area[ok].sum()
    faces = np.flatnonzero(ok)[rng.choice(int(ok.sum()), size=THIN_SAMPLES, p=p_face)]
    r1 = np.sqrt(rng.random(THIN_SAMPLES))
    r2 = rng.random(THIN_SAMPLES)
    a, b, c = tri[faces, 0], tri[faces, 1], tri[faces, 2]
    pts = (1.0 - r1)[:, None] * a + (r1 * (1.0 - r2))[:, None] * b + (r1 * r2)[:, None] * c
    n = cross[faces] / area[faces, None]
    t = THIN_STEPS * h
    # inward: the side where the first step is deeper (a surface need not be wound outward)
    first_steps = md.signed_distance(np.concatenate([pts - t[0] * n, pts + t[0] * n]))
    n = np.where((first_steps[:THIN_SAMPLES] <= first_steps[THIN_SAMPLES:])[:, None], n, -n)
    probe = pts[:, None, :] - t[None, :, None] * n[:, None, :]
    phi = md.signed_distance(probe.reshape(-1, 3)).reshape(THIN_SAMPLES, len(t))
    out = phi > 0.0
    thin = np.any(out, axis=1)
    if not np.any(thin):
        return ThinWalls(0.0, math.nan)
    first = np.argmax(out, axis=1)[thin]
    w = np.maximum(t[first] - phi[thin, first], 0.0)
    return ThinWalls(float(thin.mean()), float(np.percentile(w, 5)))


# ============================================================================================
# Bricks where one face plane is the exact field

#: Triangles are coplanar when their unit normals agree to this and their planes' offsets to
#: this × the voxel
COPLANAR_TOLERANCE = 1e-9


@cpu_jit
def _affine_regions(lows, size, origin, h, tri, tri_lo, tri_hi, node_lo, node_hi, node_left, node_start, node_count,
                    order, face_n, tri_edge, n_edges, out):
    """Per region of ``lows`` (its lowest grid sample; a cube of ``size`` voxels, a multiple of
    MESH_CELL: a brick, or one cell): 1 where the plane P of the triangle nearest to its centre is
    provably the exact signed distance over the whole region, else 0.

    Every cell of MESH_CELL³ voxels gets its candidates as the lists do (the triangles within
    d + 2ρ of its centre, ρ its half diagonal: they include the nearest triangle of each of its
    points). With G the candidates coplanar with P (same outward normal): (1) the region centre's
    projection c' onto P lies in a triangle of G and farther than the region's half diagonal from
    every edge of G not shared by two triangles of G, so every point's projection lies in G's
    union and its distance to the mesh is at most its distance |pd| to P; (2) in every cell each
    candidate not in G lies farther from the centre than the cell's largest |pd| (over its
    corners) + ρ, so none is nearer. The distance is then |pd| throughout, and its sign P's side
    (the face's outward normal)."""
    marker = np.zeros(tri.shape[0], np.int8)
    edge_count = np.zeros(n_edges, np.int32)
    group = np.empty(tri.shape[0], np.int64)
    stack = np.empty(256, dtype=np.int64)
    rho_cell = 0.5 * math.sqrt(3.0) * MESH_CELL * h
    rho = 0.5 * math.sqrt(3.0) * size * h
    per_edge = size // MESH_CELL
    for k in range(lows.shape[0]):
        out[k] = 0
        bx = lows[k, 0]
        by = lows[k, 1]
        bz = lows[k, 2]
        qx = origin[0] + (bx + 0.5 * size) * h
        qy = origin[1] + (by + 0.5 * size) * h
        qz = origin[2] + (bz + 0.5 * size) * h
        _, t0, _, _, _, _ = _closest_point(qx, qy, qz, np.inf, -1, tri, tri_lo, tri_hi, node_lo, node_hi, node_left,
                                           node_start, node_count, order, stack)
        nx, ny, nz = face_n[t0, 0], face_n[t0, 1], face_n[t0, 2]
        if t0 < 0 or (nx == 0.0 and ny == 0.0 and nz == 0.0):
            continue
        off = nx * tri[t0, 0, 0] + ny * tri[t0, 0, 1] + nz * tri[t0, 0, 2]
        ok = True
        m = 0
        touched = 0
        for c in range(per_edge * per_edge * per_edge):
            cx = c % per_edge
            cy = (c // per_edge) % per_edge
            cz = c // (per_edge * per_edge)
            worst = 0.0
            for q in range(8):
                px = origin[0] + (bx + MESH_CELL * (cx + (q & 1))) * h
                py = origin[1] + (by + MESH_CELL * (cy + ((q >> 1) & 1))) * h
                pz = origin[2] + (bz + MESH_CELL * (cz + ((q >> 2) & 1))) * h
                worst = max(worst, abs(nx * px + ny * py + nz * pz - off))
            px = origin[0] + (bx + MESH_CELL * cx + 0.5 * MESH_CELL) * h
            py = origin[1] + (by + MESH_CELL * cy + 0.5 * MESH_CELL) * h
            pz = origin[2] + (bz + MESH_CELL * cz + 0.5 * MESH_CELL) * h
            best2, _, _, _, _, _ = _closest_point(px, py, pz, np.inf, -1, tri, tri_lo, tri_hi, node_lo, node_hi,
                                                  node_left, node_start, node_count, order, stack)
            r = math.sqrt(best2) + 2.0 * rho_cell
            r2 = r * r
            sp = 0
            stack[sp] = 0
            sp += 1
            while sp > 0 and ok:
                sp -= 1
                node = stack[sp]
                if _box_dist2(px, py, pz, node_lo, node_hi, node) > r2:
                    continue
                cnt = node_count[node]
                if cnt > 0:
                    st = node_start[node]
                    for e in range(st, st + cnt):
                        t = order[e]
                        if _box_dist2(px, py, pz, tri_lo, tri_hi, t) > r2:
                            continue
                        ax, ay, az, _ = _closest_on_triangle(px, py, pz, tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2],
                                                             tri[t, 1, 0], tri[t, 1, 1], tri[t, 1, 2], tri[t, 2, 0],
                                                             tri[t, 2, 1], tri[t, 2, 2])
                        d2 = (px - ax) ** 2 + (py - ay) ** 2 + (pz - az) ** 2
                        if d2 > r2:
                            continue
                        if marker[t] == 0:
                            coplanar = face_n[t, 0] * nx + face_n[t, 1] * ny + face_n[t, 2] * nz > 1.0 - COPLANAR_TOLERANCE
                            if coplanar:
                                for v in range(3):
                                    if abs(nx * tri[t, v, 0] + ny * tri[t, v, 1] + nz * tri[t, v, 2] - off) \
                                            > COPLANAR_TOLERANCE * h:
                                        coplanar = False
                            marker[t] = 1 if coplanar else 2
                            group[touched] = t
                            touched += 1
                        if marker[t] == 2 and not math.sqrt(d2) - rho_cell > worst:
                            ok = False
                            break
                else:
                    left = node_left[node]
                    stack[sp] = left
                    stack[sp + 1] = left + 1
                    sp += 2
            if not ok:
                break
        # (1) the centre's projection inside G, every open edge of G farther than the half diagonal
        if ok:
            s = nx * qx + ny * qy + nz * qz - off
            qx -= s * nx
            qy -= s * ny
            qz -= s * nz
            inside = False
            for g in range(touched):
                t = group[g]
                if marker[t] != 1:
                    continue
                m += 1
                for v in range(3):
                    edge_count[tri_edge[t, v]] += 1
                _, _, _, feat = _closest_on_triangle(qx, qy, qz, tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2], tri[t, 1, 0],
                                                     tri[t, 1, 1], tri[t, 1, 2], tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2])
                if feat == 0:
                    inside = True
            ok = inside and m > 0
            for g in range(touched):
                t = group[g]
                if marker[t] != 1:
                    continue
                for v in range(3):
                    if ok and edge_count[tri_edge[t, v]] == 1:
                        a = tri[t, v]
                        bb = tri[t, (v + 1) % 3]
                        ex, ey, ez = bb[0] - a[0], bb[1] - a[1], bb[2] - a[2]
                        u = ((qx - a[0]) * ex + (qy - a[1]) * ey + (qz - a[2]) * ez) / (ex * ex + ey * ey + ez * ez)
                        u = min(max(u, 0.0), 1.0)
                        d2 = (qx - a[0] - u * ex) ** 2 + (qy - a[1] - u * ey) ** 2 + (qz - a[2] - u * ez) ** 2
                        if not d2 > rho * rho:
                            ok = False
            for g in range(touched):
                t = group[g]
                if marker[t] == 1:
                    for v in range(3):
                        edge_count[tri_edge[t, v]] = 0
        for g in range(touched):
            marker[group[g]] = 0
        out[k] = 1 if ok else 0


def _affine(md, origin, h, lows, size) -> np.ndarray:
    """Per region (lowest samples ``lows``, ``size`` voxels): whether one face plane is provably
    the exact field over it (:func:`_affine_regions`)."""
    tri, tri_lo, tri_hi, lo, hi, left, start, count, order, face_n, _, edge_n, _, tri_edge = md.arrays
    out = np.zeros(len(lows), np.int64)
    if len(lows):
        _affine_regions(np.ascontiguousarray(lows, dtype=np.int64), int(size), np.asarray(origin, dtype=float), float(h),
                        tri, tri_lo, tri_hi, lo, hi, left, start, count, order, face_n,
                        np.ascontiguousarray(tri_edge, dtype=np.int64), len(edge_n), out)
    return out == 1


def _brick_lows(bricks, nb):
    nb = np.asarray(nb, dtype=np.int64)
    return BRICK * np.stack([bricks % nb[0], (bricks // nb[0]) % nb[1], bricks // (nb[0] * nb[1])], axis=1)


def affine_bricks(field: MeshField, md, origin, h, nb) -> np.ndarray:
    """The bricks (indices) with lists where one face plane of the mesh is provably its exact
    signed distance over the whole brick (see :func:`_affine_regions`)."""
    bricks = np.flatnonzero(field.brick_row >= 0).astype(np.int64)
    return bricks[_affine(md, origin, h, _brick_lows(bricks, nb), BRICK)]


def mark_affine_cells(field: MeshField, md, origin, h, nb) -> int:
    """Flag the listed cells over which one face plane of the mesh is provably its exact signed
    distance (:func:`_affine_regions`): their first candidate's key becomes ``AFFINE_KEY`` (< 0,
    still a lower bound), which marching cubes reads as "affine over this block"
    (:func:`~hydro.sdf.sample.mesh_cell_affine`). Returns how many were flagged."""
    bricks = np.flatnonzero(field.brick_row >= 0).astype(np.int64)
    if len(bricks) == 0:
        return 0
    rows = field.brick_row[bricks].astype(np.int64)
    cell = np.arange(CELLS_PER_BRICK)
    offsets = MESH_CELL * np.stack([cell % CELLS_PER_EDGE, (cell // CELLS_PER_EDGE) % CELLS_PER_EDGE,
                                    cell // (CELLS_PER_EDGE * CELLS_PER_EDGE)], axis=1)
    lows = (_brick_lows(bricks, nb)[:, None, :] + offsets[None, :, :]).reshape(-1, 3)
    index = (rows[:, None] * CELLS_PER_BRICK + cell[None, :]).ravel()
    start = field.cell_start[index].astype(np.int64)
    listed = field.cell_start[index + 1] > start
    flat = np.zeros(len(index), bool)
    flat[listed] = _affine(md, origin, h, lows[listed], MESH_CELL)
    field.key[start[flat]] = AFFINE_KEY
    return int(flat.sum())
