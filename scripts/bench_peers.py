"""hydro beside Drake and Newton on the same hydroelastic scenes, in one run: time per query and
force error against the closed form (or a quadrature of the defining integral), and the ratios.

    pip install -e '.[peers]'          # drake (about 42 MB); Newton: pip install newton warp-lang
    NUMBA_NUM_THREADS=2 python scripts/bench_peers.py [--repeat 15] [--rounds 5] [--no-newton] [--only TEXT]   # a markdown table
    NUMBA_NUM_THREADS=2 python scripts/bench_peers.py --curve [--repeat 9]
    NUMBA_NUM_THREADS=1 python scripts/bench_peers.py --no-newton --cpu-time --only mesh   # the mesh rows, CPU time
    NUMBA_NUM_THREADS=1 python scripts/bench_peers.py --mesh-curve --repeat 3   # their error against resolution
                                                                                 # (default path, marching cubes, grids)

Scenes (k = 1e9 N/m³ unless stated; every lower shape is a static box whose top face is z = 0,
but the two spheres'):

| scene | shapes | reference |
|---|---|---|
| sphere into box, 5 mm | sphere R 0.1 m into a 0.5 × 0.5 × 0.2 m box | closed form |
| two spheres, 5 mm | two spheres R 0.1 m, centres 2R − d apart | closed form |
| sphere, stiffness 4:1 | the sphere row with k_sphere = 4e9, k_box = 1e9 | closed form |
| 0.2 cube on box, 2 mm | a 0.2 m cube flat on a 0.6 × 0.6 × 0.2 m box | closed form |
| 0.2 cube tilted 10° (edge), 3 mm | the cube turned 10° about x, its lowest edge 3 mm into the box | quadrature |
| 0.2 cube on a corner (diagonal tilt), 3 mm | the cube turned about (1, −1, 0), its lowest corner 3 mm in | quadrature |
| torus mesh on box, 3 mm | a 1024-triangle torus (major 0.08 m, tube 0.025 m) on a 0.5 × 0.5 × 0.2 m box | quadrature |
| two icosphere meshes, 4 mm | icospheres (subdivision 3, R 0.1 m, 1280 triangles), centres 2R − d apart | quadrature (closed-form φ) |
| icosphere meshes rotated, 4 mm | the same, each randomly rotated | quadrature (closed-form φ) |
| ring mesh on box, 2 mm | a ring (32 sections, radii 0.08 / 0.05 m, 0.03 m tall: 64 wall facets) flat on the box | closed form |
| milk carton (asset) 10 % into a 1000× stiffer box | robosuite's milk.stl (tests/data), k_box = 1000 k | quadrature (libigl) |
| Panda finger / link 5 (asset) 10 % into a 1000× stiffer box | the Franka Panda's collision meshes (tests/data: 32 and 300 triangles), k_box = 1000 k | quadrature (libigl) |
| cylinder end on box, 2 mm | a cylinder R 0.05 m, length 0.1 m, standing on its flat end on a 0.5 × 0.5 × 0.2 m box | closed form |
| hex prism (convex mesh) on box, 2 mm | a hexagonal prism (apothem 0.04 m, height 0.08 m) as a convex mesh, flat on the 0.5 m box | closed form |
| 256 boxes on a ground, 2 mm | 16 × 16 boxes of 0.1 m (0.15 m apart) on a 2.6 × 2.6 × 1 m ground | closed form × 256 |

One query is hydro's ``HydroelasticPipeline.collide`` (the unreduced patch; CPU with one Numba thread
and with all of ``NUMBA_NUM_THREADS``), Drake's ``QueryObject.ComputeContactSurfaces`` (polygon
representation; single-threaded) and Newton's ``CollisionPipeline.collide`` (its CPU backend through
``scripts/peers/newton_peer.py``, single-threaded Warp kernels, unreduced). Each column is the
median of ``--repeat`` queries after warm-up (kernels compiled, meshes and SDFs built, poses
fixed). hydro's and Drake's queries are timed interleaved, in ``--rounds`` rounds of a batch of
each, so that a busy spell of a shared machine falls on both alike and their ratio holds; Newton
(seconds per query on the big scenes, timed ``--newton-repeat-big`` times) runs after them.

Matching the models and the resolution:

- hydro builds each shape's SDF at ``max_resolution`` 64 and meshes the patch on the finer grid
  (voxel h: 3.57 mm for the sphere, the 0.2 m cube and the torus' 0.21 m, 1.79 mm for a 0.1 m box).
  Primitives are evaluated exactly where the patch is built, box pairs become exact polygons (see
  ``docs/design.md``); meshes' exact distances are evaluated where marching cubes samples, and two
  convex meshes (the icospheres) become exact polygons, one per pair of triangles (the face route).
- Drake's compliant pressure is E·(distance to the boundary)/H, H = R for a sphere and the
  smallest half-size for a box: E = k·H makes it k·depth like hydro's, and its
  ``resolution_hint`` (a typical tetrahedron edge) is hydro's h of the same scene. Boxes have
  exact fields on Drake's medial-axis meshes (the hint is ignored). The torus is a compliant
  tetrahedral mesh (:func:`torus_tetrahedra`: the wedges from the tube's centre circle to each
  surface quad), whose extent Drake takes as the distance to the surface over its largest value
  at a vertex: H is that value, so the query is compliant–compliant as hydro's and Newton's, all
  three against the same quadrature of the polygonal torus. The icospheres are Drake meshes of
  tetrahedra from the centre to each face; the ring is revolved like the torus (wedges from the
  centre of its square cross-section: they follow its medial axis). The assets have no tetrahedral
  meshes, so no Drake model. The mesh rows' references use no hydro code: inside a convex polyhedron
  φ is the nearest face plane's distance; the ring's force is a closed form; the assets' are a
  column quadrature with libigl's winding-number signed distance.
- Newton: ``kh = k``, no margins or gaps, unreduced, SDF resolution 64 padded so its voxel equals
  hydro's h (the issue's earlier run let Newton pad less, a finer h).

Force errors are of the vertical force on the upper shapes; area errors where a closed form exists.
Times: wall time per query (``perf_counter``) and, for hydro at one thread and Drake, the CPU time
of the calling thread (``thread_time``: what a query costs itself on a shared machine); ``hydro
NT / 1T`` is the wall time at all threads over that at one (medians, and ``p20``: of the 20th
percentiles, which a stretch of queries preempted by other processes moves little; run with
``--rounds`` equal to ``--repeat`` to alternate them query by query). Above the table, hydro's fixed cost
per call (``_timing.fixed_cost_us``: an empty scene and the cube on the box).
``--curve`` prints the error-vs-time curve of the sphere row for hydro (max_resolution 32 … 160)
and Drake (resolution_hint from 8 mm down), one line per resolution.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import math
import os
import platform
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fixed_cost_us  # noqa: E402

K = 1e9
R = 0.1
TORUS = (0.08, 0.025)  # major, tube radius
GRID = 16  # boxes per side of the ground scene
CYLINDER = (0.05, 0.1)  # radius, length: R = L/2, so Drake's extent (depth over the deepest, R) is k·depth / E
HEX = (0.04, 0.08)  # apothem, height: every face 0.04 m from the centre (Drake's one interior vertex)


def hex_ring():
    """The hexagonal prism's cross-section (6, 2), counter-clockwise, apothem HEX[0]."""
    th = np.arange(6) * np.pi / 3
    return HEX[0] / math.cos(math.pi / 6) * np.c_[np.cos(th), np.sin(th)]


def _shape(kind, size, pos, k=K, static=False, quat=(0.0, 0.0, 0.0, 1.0), tets=None):
    """A shape spec; ``quat`` (x, y, z, w) its orientation; ``tets`` for a mesh: (vertices,
    tetrahedra) of Drake's compliant mesh (the torus' when None; False: none, the row has no Drake
    model)."""
    return {"kind": kind, "size": size, "pos": tuple(float(v) for v in pos), "stiffness": float(k), "static": static,
            "quat": tuple(float(v) for v in quat), "tets": tets}


def torus_mesh(major, minor, n_major=32, n_minor=16):
    """A closed, outward-wound torus around +Z: (vertices, faces); its lowest ring is z = −minor."""
    th = 2.0 * math.pi * np.arange(n_major) / n_major
    ph = 2.0 * math.pi * np.arange(n_minor) / n_minor
    T, P = np.meshgrid(th, ph, indexing="ij")
    ring = major + minor * np.cos(P)
    verts = np.stack([ring * np.cos(T), ring * np.sin(T), minor * np.sin(P)], axis=-1).reshape(-1, 3)
    faces = []
    for i in range(n_major):
        for j in range(n_minor):
            a = i * n_minor + j
            b = ((i + 1) % n_major) * n_minor + j
            c = ((i + 1) % n_major) * n_minor + (j + 1) % n_minor
            d = i * n_minor + (j + 1) % n_minor
            faces += [(a, b, c), (a, c, d)]
    return verts, np.array(faces, dtype=np.int64)


def torus_tetrahedra(major, minor, n_major=32, n_minor=16):
    """The solid of :func:`torus_mesh` as tetrahedra, for Drake's compliant mesh: the surface
    vertices plus one on the tube's centre circle per section; the wedge from each section's centre
    to each surface quad, to the next section, is a prism cut into three tetrahedra along the
    diagonals through each quad's lowest-numbered vertex (so neighbours share faces), every one
    positively oriented. Returns (vertices, tetrahedra)."""
    verts, _ = torus_mesh(major, minor, n_major, n_minor)
    th = 2.0 * math.pi * np.arange(n_major) / n_major
    centres = np.stack([major * np.cos(th), major * np.sin(th), np.zeros(n_major)], axis=-1)
    verts = np.concatenate([verts, centres])
    tets = []
    for i in range(n_major):
        i1 = (i + 1) % n_major
        for j in range(n_minor):
            j1 = (j + 1) % n_minor
            bottom = (n_major * n_minor + i, i * n_minor + j, i * n_minor + j1)
            top = (n_major * n_minor + i1, i1 * n_minor + j, i1 * n_minor + j1)
            tets += _prism_tetrahedra(bottom, top)
    tets = np.array(tets, dtype=np.int64)
    a, b, c, d = (verts[tets[:, k]] for k in range(4))
    negative = np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a) < 0.0
    tets[negative, 1], tets[negative, 2] = tets[negative, 2], tets[negative, 1].copy()
    return verts, tets


def _prism_tetrahedra(bottom, top):
    """The prism with triangles ``bottom`` and ``top`` (vertex k of one joined to vertex k of the
    other) as three tetrahedra, each quad face cut along the diagonal through its lowest-numbered
    vertex (Dompierre et al.'s rule: conforming between prisms that share a quad)."""
    ring = list(bottom) + list(top)
    k = int(np.argmin(ring))
    # rotate so the lowest vertex is a (bottom) and keep the prism's correspondence
    order = [(k + m) % 3 + 3 * (k // 3) for m in range(3)] + [(k + m) % 3 + 3 * (1 - k // 3) for m in range(3)]
    a, b, c, d, e, f = (ring[o] for o in order)
    if min(b, f) < min(c, e):
        return [(a, b, c, f), (a, b, f, e), (a, e, f, d)]
    return [(a, b, c, e), (a, e, c, f), (a, e, f, d)]


def _write_vtk(path, verts, tets):
    """A legacy ASCII VTK unstructured grid of tetrahedra (what Drake reads as a compliant mesh)."""
    with open(path, "w") as fh:
        fh.write("# vtk DataFile Version 3.0\ntorus\nASCII\nDATASET UNSTRUCTURED_GRID\n")
        fh.write(f"POINTS {len(verts)} double\n")
        fh.writelines(f"{x:.17g} {y:.17g} {z:.17g}\n" for x, y, z in verts)
        fh.write(f"CELLS {len(tets)} {5 * len(tets)}\n")
        fh.writelines(f"4 {a} {b} {c} {d}\n" for a, b, c, d in tets)
        fh.write(f"CELL_TYPES {len(tets)}\n" + "10\n" * len(tets))


def scenes():
    """name -> (shapes (lower first), reference (force, area or nan), Drake's reference force)."""
    from hydro.tools import analytic

    out = {}
    d = 0.005
    box = _shape("box", (0.5, 0.5, 0.2), (0, 0, -0.1), static=True)
    ref = analytic.sphere_on_box(d, R, k_sphere=K, k_box=K)
    out["sphere into box, 5 mm"] = ([box, _shape("sphere", R, (0, 0, R - d))], (ref.force, ref.area), ref.force)
    ref = analytic.two_spheres(d, R, k=K)
    out["two spheres, 5 mm"] = ([_shape("sphere", R, (0, 0, 0), static=True), _shape("sphere", R, (0, 0, 2 * R - d))],
                                (ref.force, ref.area), ref.force)
    ref = analytic.sphere_on_box(d, R, k_sphere=4 * K, k_box=K)
    out["sphere, stiffness 4:1"] = ([box, _shape("sphere", R, (0, 0, R - d), k=4 * K)], (ref.force, math.nan),
                                    ref.force)
    d = 0.002
    ref = analytic.cube_on_box(d, 0.2, k=K)
    out["0.2 cube on box, 2 mm"] = ([_shape("box", (0.6, 0.6, 0.2), (0, 0, -0.1), static=True),
                                     _shape("box", (0.2, 0.2, 0.2), (0, 0, 0.1 - d))], (ref.force, ref.area), ref.force)
    d = 0.003
    verts, faces = torus_mesh(*TORUS)
    ref = _torus_reference(verts, faces, d)
    out["torus mesh on box, 3 mm"] = ([box, _shape("mesh", (verts, faces), (0, 0, TORUS[1] - d))], ref, ref[0])
    out.update(mesh_scenes(box))
    d = 0.002
    ref = analytic.cylinder_end_on_box(d, CYLINDER[0], k_cylinder=K, k_box=K)
    out["cylinder end on box, 2 mm"] = ([box, _shape("cylinder", CYLINDER, (0, 0, CYLINDER[1] / 2 - d))],
                                        (ref.force, ref.area), ref.force)
    ring = hex_ring()
    ref = analytic.prism_on_box(d, ring, k=K)
    prism = np.concatenate([np.c_[ring, np.full(6, -HEX[1] / 2)], np.c_[ring, np.full(6, HEX[1] / 2)]])
    out["hex prism (convex mesh) on box, 2 mm"] = ([box, _shape("convex", prism, (0, 0, HEX[1] / 2 - d))],
                                                   (ref.force, ref.area), ref.force)
    ref = analytic.cube_on_box(d, 0.1, k=K)
    ground = _shape("box", (2.6, 2.6, 1.0), (0, 0, -0.5), static=True)
    boxes = [_shape("box", (0.1, 0.1, 0.1), ((i - (GRID - 1) / 2) * 0.15, (j - (GRID - 1) / 2) * 0.15, 0.05 - d))
             for i in range(GRID) for j in range(GRID)]
    out[f"{GRID * GRID} boxes on a ground, 2 mm"] = ([ground] + boxes, (GRID**2 * ref.force, GRID**2 * ref.area),
                                                    GRID**2 * ref.force)
    out.update(tilted_cube_scenes())
    return out


def _quat_about(axis, angle):
    """The unit quaternion (x, y, z, w) of a rotation by ``angle`` about ``axis``."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return (*(math.sin(angle / 2) * axis), math.cos(angle / 2))


@functools.lru_cache(maxsize=None)
def tilted_cube_scenes():
    """The 0.2 m cube on a 0.6 × 0.6 × 0.2 m box, tilted: 10° about x (its lowest edge 3 mm into
    the box: a strip patch) and about the horizontal diagonal (1, −1, 0) by 80 % of the angle that
    stands it on a corner (its lowest corner 3 mm in: a triangular patch). Reference: quadrature of
    the defining integral with the cube's exact distance (``hydro.tools.analytic.half_space_force``,
    a 0.1 / 0.05 mm grid; the box's field is its depth below the top face there)."""
    from hydro.tools import analytic

    out = {}
    size, d = 0.2, 0.003
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * size / 2
    for name, q, spacing in (("0.2 cube tilted 10° (edge), 3 mm", _quat_about((1, 0, 0), math.radians(10)), 1e-4),
                             ("0.2 cube on a corner (diagonal tilt), 3 mm",
                              _quat_about((1, -1, 0), 0.8 * math.atan(math.sqrt(2))), 5e-5)):
        world = _rotate_rows(q, corners)
        centre = np.array([0.0, 0.0, -world[:, 2].min() - d])
        inverse = (-q[0], -q[1], -q[2], q[3])

        def phi(p, centre=centre, inverse=inverse):  # the cube's exact signed distance at world points
            local = _rotate_rows(inverse, p - centre)
            e = np.abs(local) - size / 2
            outside = np.linalg.norm(np.maximum(e, 0.0), axis=1)
            return outside + np.minimum(e.max(axis=1), 0.0)

        low = world[world[:, 2] < world[:, 2].min() + 1e-9]  # the lowest corners (an edge, or one)
        lo, hi = low[:, :2].min(axis=0) - 0.025, low[:, :2].max(axis=0) + 0.025  # holds the patch
        ref = analytic.half_space_force(phi, lo, hi, k_shape=K, k_box=K, spacing=spacing, depth_scale=0.02)
        out[name] = ([_shape("box", (0.6, 0.6, 0.2), (0, 0, -0.1), static=True),
                      _shape("box", (size,) * 3, centre, quat=q)], (ref.force, math.nan), ref.force)
    return out


def _rotate_rows(q, v):
    """Rotate the rows of ``v`` (N, 3) by the unit quaternion ``q`` (x, y, z, w)."""
    u = np.asarray(q[:3], dtype=float)
    t = 2.0 * np.cross(u, v)
    return v + q[3] * t + np.cross(u, t)




# ---------------------------------------------------------------------------------------------
# mesh rows (issue 25): icosphere pairs, a non-convex ring, a real asset


def icosphere_mesh(radius=R, subdivisions=3):
    import trimesh

    ico = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    return np.asarray(ico.vertices, dtype=float), np.asarray(ico.faces, dtype=np.int64)


def star_tetrahedra(verts, faces):
    """A convex mesh as tetrahedra from its centre to each face, for Drake's compliant mesh."""
    v = np.concatenate([verts, verts.mean(axis=0)[None]])
    tets = np.concatenate([np.full((len(faces), 1), len(verts)), faces], axis=1)
    a, b, c, d = (v[tets[:, k]] for k in range(4))
    negative = np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a) < 0.0
    tets[negative, 1], tets[negative, 2] = tets[negative, 2], tets[negative, 1].copy()
    return v, tets


def revolved_mesh(profile, n):
    """A closed, outward-wound solid of revolution about +Z of the closed (r, z) polygon ``profile``
    (counter-clockwise), ``n`` sections: (vertices, faces)."""
    profile = np.asarray(profile, dtype=float)
    m = len(profile)
    th = 2.0 * math.pi * np.arange(n) / n
    verts = np.stack([np.outer(np.cos(th), profile[:, 0]), np.outer(np.sin(th), profile[:, 0]),
                      np.broadcast_to(profile[:, 1], (n, m))], axis=-1).reshape(-1, 3)
    faces = []
    for i in range(n):
        for j in range(m):
            a, b = i * m + j, ((i + 1) % n) * m + j
            c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
            faces += [(a, b, c), (a, c, d)]
    return verts, np.array(faces, dtype=np.int64)


def revolved_tetrahedra(profile, centre, n):
    """:func:`revolved_mesh` as tetrahedra: the wedge from each section's ``centre`` (r, z) to each
    profile edge, to the next section, cut like the torus' (:func:`_prism_tetrahedra`)."""
    verts, _ = revolved_mesh(profile, n)
    m = len(profile)
    th = 2.0 * math.pi * np.arange(n) / n
    centres = np.stack([centre[0] * np.cos(th), centre[0] * np.sin(th), np.full(n, centre[1])], axis=-1)
    verts = np.concatenate([verts, centres])
    tets = []
    for i in range(n):
        i1 = (i + 1) % n
        for j in range(m):
            j1 = (j + 1) % m
            tets += _prism_tetrahedra((n * m + i, i * m + j, i * m + j1), (n * m + i1, i1 * m + j, i1 * m + j1))
    tets = np.array(tets, dtype=np.int64)
    a, b, c, d = (verts[tets[:, k]] for k in range(4))
    negative = np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a) < 0.0
    tets[negative, 1], tets[negative, 2] = tets[negative, 2], tets[negative, 1].copy()
    return verts, tets


RING = (0.08, 0.05, 0.03, 32)  # outer and inner circumradius, height, sections: a square cross-section


def icosphere_pair_reference(rot_a, rot_b, d, spacing=2.5e-4):
    """Force of two icospheres (equal k) pressed d along Z, A at the origin, B at (0, 0, 2R − d), rotated
    by the matrices: :func:`hydro.tools.analytic.convex_pair_force` (column quadrature of the nearest
    face planes; no pipeline code)."""
    from hydro.tools.analytic import convex_pair_force

    verts, faces = icosphere_mesh()
    return convex_pair_force(verts, faces, rot_a, rot_b, 2 * R - d, k=K, spacing=spacing)


def asset_reference(verts, faces, lift, k_mesh, k_box, spacing):
    """Force of a mesh (k_mesh) translated by ``lift`` into a box (k_box > k_mesh, top face z = 0):
    on each column the interface k_mesh·φ_mesh = k_box·z by bisection, φ_mesh libigl's
    winding-number signed distance, F_z = k_mesh ∫∫ −φ_mesh dx dy. No hydro code.

    Only columns where the mesh is inside at z = 0 carry force, and there the root lies within
    k_mesh·|φ(0)|/(k_box − k_mesh) below the plane (φ is 1-Lipschitz: where φ(0) >= 0, φ < 0 below
    needs k_box·|z| = k_mesh·|φ(z)| < k_mesh·|z|, impossible), so the bisection runs on those
    columns in that bracket only."""
    import igl

    v = np.ascontiguousarray(verts + lift, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    # the part below z = 0 lies over its vertices below and its edges' crossings of the plane
    a, b = v[f].reshape(-1, 3), v[np.roll(f, 1, axis=1)].reshape(-1, 3)
    cross = (a[:, 2] < 0.0) != (b[:, 2] < 0.0)
    t = a[cross, 2] / (a[cross, 2] - b[cross, 2])
    under = np.concatenate([v[v[:, 2] <= 0.0, :2], a[cross, :2] + t[:, None] * (b[cross, :2] - a[cross, :2])])
    lo_xy, hi_xy = under.min(axis=0) - spacing, under.max(axis=0) + spacing
    gx = np.arange(lo_xy[0], hi_xy[0], spacing) + spacing / 2
    gy = np.arange(lo_xy[1], hi_xy[1], spacing) + spacing / 2
    X, Y = (a.ravel() for a in np.meshgrid(gx, gy))

    def phi(z):
        out = igl.signed_distance(np.stack([X, Y, z], 1), v, f, sign_type=igl.SIGNED_DISTANCE_TYPE_WINDING_NUMBER)
        return out[0]

    if not k_box > k_mesh:
        raise ValueError("asset_reference needs k_box > k_mesh")
    phi0 = phi(np.zeros(X.shape))
    keep = phi0 < 0.0
    X, Y, phi0 = X[keep], Y[keep], phi0[keep]
    hi = np.zeros(X.shape)
    lo = np.maximum(float(v[:, 2].min()), -1.000001 * k_mesh * (-phi0) / (k_box - k_mesh))
    for _ in range(24):  # the bracket starts k_mesh/(k_box - k_mesh) of |φ(0)| wide: p to 1e-7 of k_mesh·|φ(0)|
        mid = 0.5 * (lo + hi)
        below = k_mesh * phi(mid) - k_box * mid > 0.0  # the mesh's side: the root lies above
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    z = 0.5 * (lo + hi)
    p = -k_mesh * phi(z)
    return float(np.where((p > 0) & (z < 0), p, 0.0).sum()) * spacing**2


ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "meshes")
ASSET = os.path.join(ASSETS, "milk.stl")
#: the real meshes pressed 10 % of their height into a 1000× stiffer box: (row name, file in
#: tests/data/meshes, the reference's column spacing m)
ASSET_ROWS = [
    ("milk carton (asset) 10 % into a 1000× stiffer box", "milk.stl", 2.5e-4),
    ("Panda finger (asset) 10 % into a 1000× stiffer box", "panda_finger.stl", 1.25e-4),
    ("Panda link 5 (asset) 10 % into a 1000× stiffer box", "panda_link5.stl", 5e-4),
]


def asset_press(path, spacing):
    """(shapes, reference force) of the mesh at ``path`` pressed 10 % of its z-extent into a static
    box (top face z = 0) 1000× stiffer, the reference by :func:`asset_reference`."""
    from hydro.geometry import Mesh

    solid = Mesh.load(path).solid()
    lo, hi = solid.vertices.min(axis=0), solid.vertices.max(axis=0)
    d = 0.1 * float(hi[2] - lo[2])
    lift = np.array([0.0, 0.0, -float(lo[2]) - d])
    centre = 0.5 * (lo + hi)
    stiff = _shape("box", (0.5, 0.5, 0.2), (centre[0], centre[1], -0.1), k=1000 * K, static=True)
    ref = asset_reference(solid.vertices, solid.faces, lift, K, 1000 * K, spacing)
    return [stiff, _shape("mesh", (solid.vertices, solid.faces), lift, tets=False)], ref


def mesh_scenes(box):
    """The mesh rows: two icospheres (subdivision 3, R 0.1 m) 4 mm, aligned and randomly rotated; the
    ring (32 sections, square cross-section: 64 wall facets) flat on the box, 2 mm; a real asset
    (robosuite's milk carton) and two of a robot's (the Franka Panda's finger and link 5 collision
    meshes) pressed 10 % of their height into a 1000× stiffer box."""
    from scipy.spatial.transform import Rotation

    from hydro.tools import analytic

    out = {}
    verts, faces = icosphere_mesh()
    tets = star_tetrahedra(verts, faces)
    d = 0.004
    ref = icosphere_pair_reference(np.eye(3), np.eye(3), d)
    out["two icosphere meshes, 4 mm"] = ([_shape("mesh", (verts, faces), (0, 0, 0), static=True, tets=tets),
                                          _shape("mesh", (verts, faces), (0, 0, 2 * R - d), tets=tets)],
                                         (ref, math.nan), ref)
    qa, qb = Rotation.random(random_state=3), Rotation.random(random_state=4)
    ref = icosphere_pair_reference(qa.as_matrix(), qb.as_matrix(), d)
    out["icosphere meshes rotated, 4 mm"] = ([
        _shape("mesh", (verts, faces), (0, 0, 0), static=True, quat=qa.as_quat(), tets=tets),
        _shape("mesh", (verts, faces), (0, 0, 2 * R - d), quat=qb.as_quat(), tets=tets)], (ref, math.nan), ref)
    r_out, r_in, height, n = RING
    profile = [(r_out, 0.0), (r_out, height), (r_in, height), (r_in, 0.0)]
    ring = revolved_mesh(profile, n)
    ring_tets = revolved_tetrahedra(profile, (0.5 * (r_out + r_in), 0.5 * height), n)
    d = 0.002
    ref = analytic.ring_on_box(d, r_out, r_in, n, k=K).force
    out["ring mesh on box, 2 mm"] = ([box, _shape("mesh", ring, (0, 0, -d), tets=ring_tets)], (ref, math.nan), ref)
    for name, file, spacing in ASSET_ROWS:
        shapes, ref = asset_press(os.path.join(ASSETS, file), spacing)
        out[name] = (shapes, (ref, math.nan), ref)
    return out


def _torus_reference(verts, faces, d):
    """Compliant–compliant force of the polygonal torus (equal k), by column quadrature of the
    defining integral with the mesh's exact distance (hydro.tools.analytic.half_space_force)."""
    from hydro.geometry import Mesh
    from hydro.geometry.mesh_distance import MeshDistance
    from hydro.tools import analytic

    md = MeshDistance(Mesh(verts, faces))
    lift = np.array([0.0, 0.0, TORUS[1] - d])
    reach = TORUS[0] + TORUS[1]
    ref = analytic.half_space_force(lambda p: md.signed_distance(p - lift), (-reach, -reach), (reach, reach),
                                    k_shape=K, k_box=K, spacing=2.5e-4, depth_scale=0.01)
    return ref.force, math.nan


# ---------------------------------------------------------------------------------------------
# hydro


def _hydro_geometry(spec):
    from hydro.geometry import Box, ConvexMesh, Cylinder, Mesh, Sphere

    if spec["kind"] == "sphere":
        return Sphere(spec["size"])
    if spec["kind"] == "box":
        return Box(spec["size"])
    if spec["kind"] == "cylinder":
        return Cylinder(*spec["size"])
    if spec["kind"] == "convex":
        return ConvexMesh.from_points(spec["size"])
    return Mesh(*spec["size"], name="mesh")


def hydro_case(shapes, resolution):
    """hydro's model of ``shapes`` at ``max_resolution``: a dict with ``query(threads)`` (one
    ``collide`` with that many Numba threads) and ``result()`` (force, area, elements of the last
    query), ``h`` (the finest voxel), ``shape_h`` (each shape's voxel, in the order of ``shapes``)
    and ``setup_s``."""
    import numba

    from hydro.contact.config import HydroelasticConfig
    from hydro.contact.pipeline import HydroelasticPipeline
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings

    sdf = SDFSettings(max_resolution=resolution)
    t0 = time.perf_counter()
    b = ModelBuilder()
    for k, spec in enumerate(shapes):
        if spec["static"]:
            b.add_shape(f"/World/S{k}", _hydro_geometry(spec), local_pose=(*spec["pos"], *spec["quat"]),
                        hydroelastic=True, stiffness=spec["stiffness"], sdf=sdf)
        else:
            body = b.add_body(f"/World/B{k}", (*spec["pos"], *spec["quat"]))
            b.add_shape(f"/World/B{k}/Collider", _hydro_geometry(spec), body=body, hydroelastic=True,
                        stiffness=spec["stiffness"], sdf=sdf)
    model = b.finalize()
    setup = time.perf_counter() - t0
    pipe = HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=False))
    poses = model.shape_world_poses(model.state())
    last = {}

    def query(threads):
        numba.set_num_threads(threads)
        last["result"] = pipe.collide(poses)

    def result():
        c = last["result"].contacts
        upper = np.array([not shapes[s]["static"] for s in range(len(shapes))])
        sign = np.where(upper[c.shape_b], 1.0, -1.0)  # the force on B along +normal
        fz = float((c.force_vectors()[:, 2] * sign).sum())
        area = float(c.area[~c.speculative].astype(float).sum())
        return {"force": fz, "area": area, "elements": len(c)}

    shape_h = [model.sdfs[i].voxel_size if i >= 0 else math.nan for i in np.asarray(model.shape_sdf)]
    return {"query": query, "result": result, "setup_s": setup, "h": min(s.voxel_size for s in model.sdfs),
            "shape_h": shape_h}


#: the clock of the timings: wall time, or with --cpu-time this thread's CPU time (one Numba thread:
#: fair on a shared machine, where another process's burst adds wall time but no CPU time)
CLOCK = time.perf_counter


def interleaved_medians(queries, repeat, rounds=5, warmup=3, cpu=None, low=None):
    """Median ms of each query over ``repeat`` calls, timed in ``rounds`` interleaved rounds (a batch
    of each query in turn, so a busy spell of a shared machine falls on all of them alike) after
    ``warmup`` calls of each. ``cpu``: a dict that gets each query's median CPU time of the calling
    thread (``time.thread_time``, ms; what a single-threaded query costs whatever else runs);
    ``low``: a dict that gets each query's 20th percentile of wall time (ms; other processes only
    add to a query's wall time, and a stretch of preempted queries moves a median, not this)."""
    for q in queries.values():
        for _ in range(warmup):
            q()
    times = {name: [] for name in queries}
    cpu_times = {name: [] for name in queries}
    per_round = max(1, -(-repeat // rounds))
    names = list(queries)
    order = np.random.default_rng(26)
    for r in range(rounds):
        # a new order each round (seeded), so that each query follows each other one as often on
        # average: a big query leaves the caches cold for the next (a fixed order 1T, 2T, Drake
        # made the 1T column 0.1 ms slower on the sphere rows)
        for name in (names if r == 0 else [names[k] for k in order.permutation(len(names))]):
            q = queries[name]
            for _ in range(min(per_round, repeat - r * per_round)):
                c0 = time.thread_time()
                t0 = CLOCK()
                q()
                times[name].append(CLOCK() - t0)
                cpu_times[name].append(time.thread_time() - c0)
    if cpu is not None:
        cpu.update({name: float(np.median(t)) * 1e3 for name, t in cpu_times.items()})
    if low is not None:
        low.update({name: float(np.percentile(t, 20)) * 1e3 for name, t in times.items()})
    return {name: float(np.median(t)) * 1e3 for name, t in times.items()}


# ---------------------------------------------------------------------------------------------
# Drake


def _largest_depth(verts, surface_verts, faces):
    """The largest distance from the vertices ``verts`` to the surface mesh: Drake's divisor of its
    mesh pressure field (the extent is distance / this)."""
    from hydro.geometry import Mesh
    from hydro.geometry.mesh_distance import MeshDistance

    return float(-MeshDistance(Mesh(surface_verts, faces)).signed_distance(verts).min())


def _drake_pose(spec):
    from pydrake.common.eigen_geometry import Quaternion
    from pydrake.math import RigidTransform

    x, y, z, w = spec["quat"]
    return RigidTransform(Quaternion(w, x, y, z), list(spec["pos"]))


def drake_case(shapes, hint):
    """Drake's model of ``shapes`` with ``resolution_hint``: a dict with ``query()`` (one
    ``ComputeContactSurfaces``), ``result()`` and ``setup_s``."""
    from pydrake.geometry import (AddCompliantHydroelasticProperties, FramePoseVector,
                                  GeometryFrame, GeometryInstance, HydroelasticContactRepresentation, Mesh,
                                  ProximityProperties, SceneGraph)
    from pydrake.geometry import Box as DBox
    from pydrake.geometry import Convex
    from pydrake.geometry import Cylinder as DCylinder
    from pydrake.geometry import Sphere as DSphere
    from pydrake.math import RigidTransform

    tmp = tempfile.mkdtemp(prefix="bench_peers_")
    scale = {}  # Drake's H per shape: E = k·H makes its pressure E·(extent) equal k·depth

    def geometry(spec, k):
        if spec["kind"] == "sphere":
            scale[k] = spec["size"]
            return DSphere(spec["size"])
        if spec["kind"] == "box":
            scale[k] = min(spec["size"]) / 2
            return DBox(*spec["size"])
        if spec["kind"] == "cylinder":
            # a compliant cylinder: extent = depth / its deepest point's (min(R, L/2))
            scale[k] = min(spec["size"][0], spec["size"][1] / 2)
            return DCylinder(*spec["size"])
        if spec["kind"] == "convex":
            # a compliant convex hull: tetrahedra from its faces to one interior vertex (its
            # centre), pressure linear from 0 on the face to E there: for this prism, whose faces
            # are all HEX[0] from the centre, E·depth / HEX[0]
            from hydro.geometry import ConvexMesh

            hull = ConvexMesh.from_points(spec["size"])
            path = os.path.join(tmp, f"convex{k}.obj")
            with open(path, "w") as fh:
                fh.writelines(f"v {x:.17g} {y:.17g} {z:.17g}\n" for x, y, z in hull.vertices)
                fh.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in hull.faces)
            scale[k] = HEX[0]
            return Convex(path)
        # the torus (or the mesh's own ``tets``) as a compliant tetrahedral mesh: Drake's extent is
        # the distance to the surface over its largest value among the vertices
        verts, tets = spec["tets"] if spec["tets"] is not None else torus_tetrahedra(*TORUS)
        path = os.path.join(tmp, f"mesh{k}.vtk")
        _write_vtk(path, verts, tets)
        scale[k] = _largest_depth(verts, *spec["size"])
        return Mesh(path)

    def props(spec, k):
        p = ProximityProperties()
        AddCompliantHydroelasticProperties(hint, spec["stiffness"] * scale[k], p)
        return p

    sg = SceneGraph()
    source = sg.RegisterSource("bench_peers")
    t0 = time.perf_counter()
    frames = []
    for k, spec in enumerate(shapes):
        if spec["static"]:
            g = sg.RegisterAnchoredGeometry(source, GeometryInstance(_drake_pose(spec),
                                                                     geometry(spec, k), f"s{k}"))
        else:
            frame = sg.RegisterFrame(source, GeometryFrame(f"f{k}"))
            g = sg.RegisterGeometry(source, frame, GeometryInstance(RigidTransform(), geometry(spec, k), f"s{k}"))
            frames.append((frame, spec))
        sg.AssignRole(source, g, props(spec, k))
    setup = time.perf_counter() - t0
    context = sg.CreateDefaultContext()
    poses = FramePoseVector()
    for frame, spec in frames:
        poses.set_value(frame, _drake_pose(spec))
    sg.get_source_pose_port(source).FixValue(context, poses)
    query = sg.get_query_output_port().Eval(context)
    rep = HydroelasticContactRepresentation.kPolygon
    last = {"keep": (sg, context, poses)}  # the query object refers to them

    def run():
        last["surfaces"] = query.ComputeContactSurfaces(rep)

    def result():
        inspector = query.inspector()
        force = 0.0
        area = 0.0
        elements = 0
        for surface in last["surfaces"]:
            mesh, field = surface.poly_mesh_W(), surface.poly_e_MN()
            # face normals point out of N into M: the force on N is −Σ p·n·A (p is linear on each
            # polygon, so p at the area centroid times the area is the exact integral)
            f = np.zeros(3)
            for e in range(mesh.num_faces()):
                f += field.EvaluateCartesian(e, mesh.element_centroid(e)) * mesh.area(e) * mesh.face_normal(e)
            n_static = inspector.GetFrameId(surface.id_N()) == inspector.world_frame_id()
            force += float((f if n_static else -f)[2])  # on the upper (moving) shape
            area += surface.total_area()
            elements += mesh.num_faces()
        return {"force": force, "area": area, "elements": elements}

    return {"query": run, "result": result, "setup_s": setup}


# ---------------------------------------------------------------------------------------------


def _err(value, ref):
    if value is None or ref is None or not math.isfinite(ref) or ref == 0.0:
        return "–"
    return f"{100 * (value / ref - 1):+.2f} %"


def table(args):
    import importlib.metadata

    import numba

    newton = None
    if not args.no_newton:
        try:
            from peers.newton_peer import newton_available, newton_case

            version = newton_available()
            newton = (version, newton_case) if version else None
        except ImportError:
            newton = None
    threads = sorted({1, numba.config.NUMBA_NUM_THREADS})
    all_t = max(threads)
    header = (f"# hydro vs Drake {importlib.metadata.version('drake')}"
              + (f" vs Newton {newton[0]} (CPU)" if newton else "") +
              f" — {datetime.date.today()}, {platform.machine()} {os.cpu_count()} cores, NUMBA_NUM_THREADS={all_t}, "
              f"median of {args.repeat}, hydro and Drake interleaved in {args.rounds} rounds")
    print(header)
    hydro_case(scenes()["sphere into box, 5 mm"][0], 16)["query"](1)  # load the compiled kernels first
    costs = fixed_cost_us()
    print("# hydro's fixed cost per collide call (1 thread; µs of CPU time / wall): "
          + "; ".join(f"{scene}, {label}: {c:.1f} / {w:.1f}" for (scene, label), (c, w) in costs.items()))
    cols = ["h (mm)"] + [f"hydro {n}T ms" for n in threads] + ["Drake ms"] + (["Newton ms"] if newton else []) + [
        f"Drake / hydro {all_t}T", "hydro 1T CPU ms", "Drake CPU ms", "Drake / hydro 1T CPU",
        f"hydro {all_t}T / 1T", f"hydro {all_t}T / 1T p20"] + (["Newton / hydro 1T"] if newton else []) + [
        "hydro F err", "Drake F err"] + (["Newton F err"] if newton else []) + [
        "hydro A err", "Drake A err"] + (["Newton A err"] if newton else []) + [
        "hydro tri", "Drake poly"] + (["Newton tri"] if newton else [])
    print("| scene | " + " | ".join(cols) + " |")
    print("|" + "---|" * (1 + len(cols)))
    for name, (shapes, (f_ref, a_ref), drake_ref) in scenes().items():
        if args.only and args.only not in name:
            continue
        big = len(shapes) > 8
        hy = hydro_case(shapes, 64)
        dk = None if any(s["tets"] is False for s in shapes) else drake_case(shapes, hy["h"])
        queries = {n: (lambda n=n: hy["query"](n)) for n in threads}
        if dk:
            queries["drake"] = dk["query"]
        cpu, low = {}, {}
        ms = interleaved_medians(queries, args.repeat, args.rounds, cpu=cpu, low=low)
        hy.update(hy["result"](), ms=ms)
        if dk:
            dk.update(dk["result"](), ms=ms["drake"])
        else:  # no tetrahedral mesh of the asset for Drake's compliant model
            dk = {"ms": math.nan, "force": None, "area": None, "elements": "–"}
        nw = None
        if newton:
            try:
                nw = newton[1](shapes, args.newton_repeat_big if big else args.repeat, resolution=64,
                               buffer_fraction=0.05 if big else None)
            except Exception as exc:  # a peer's failure is reported in the row, not fatal
                print(f"# Newton failed on {name}: {type(exc).__name__}: {exc}", flush=True)
        cells = [f"{hy['h'] * 1e3:.2f}"] + [f"{hy['ms'][n]:.3g}" for n in threads] + [f"{dk['ms']:.3g}" if math.isfinite(dk['ms']) else "–"]
        na = newton and nw is None  # Newton installed, but failed on this row
        cells += [f"{nw['ms']:.3g}"] if nw else ["–"] if na else []
        if math.isfinite(dk["ms"]):
            cells += [f"{dk['ms'] / hy['ms'][all_t]:.2g}×", f"{cpu[1]:.3g}", f"{cpu['drake']:.3g}",
                      f"{cpu['drake'] / cpu[1]:.2g}×"]
        else:
            cells += ["–", f"{cpu[1]:.3g}", "–", "–"]
        cells += [f"{hy['ms'][all_t] / hy['ms'][1]:.2f}", f"{low[all_t] / low[1]:.2f}"]
        cells += [f"{nw['ms'] / hy['ms'][1]:.3g}×"] if nw else ["–"] if na else []
        cells += [_err(hy["force"], f_ref), _err(dk["force"], drake_ref)]
        cells += [_err(nw["force"], f_ref)] if nw else ["–"] if na else []
        cells += [_err(hy["area"], a_ref), _err(dk["area"], a_ref)]
        cells += [_err(nw["area"], a_ref)] if nw else ["–"] if na else []
        cells += [str(hy["elements"]), str(dk["elements"])]
        cells += [str(nw["elements"])] if nw else ["–"] if na else []
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def curve(args):
    """Error against time for the sphere row: hydro over max_resolution, Drake over its hint."""
    import numba

    shapes, (f_ref, _), _ = scenes()["sphere into box, 5 mm"]
    n = numba.config.NUMBA_NUM_THREADS
    print(f"# sphere R 0.1 into box, 5 mm: force error against time — hydro {n}T, Drake 1T, median of {args.repeat}")
    print("| engine | resolution | h (mm) | ms | F err |")
    print("|---|---|---|---|---|")
    hydro_case(shapes, 16)["query"](n)
    for res in (32, 48, 64, 96, 128, 160):
        hy = hydro_case(shapes, res)
        ms = interleaved_medians({"hydro": lambda: hy["query"](n)}, args.repeat, args.rounds)["hydro"]
        print(f"| hydro | {res} | {hy['h'] * 1e3:.2f} | {ms:.3g} | {_err(hy['result']()['force'], f_ref)} |",
              flush=True)
    for hint in (0.008, 0.00536, 0.00357, 0.0025, 0.00167, 0.00125):
        dk = drake_case(shapes, hint)
        ms = interleaved_medians({"drake": dk["query"]}, args.repeat, args.rounds)["drake"]
        print(f"| Drake | hint {hint * 1e3:.3g} mm | {hint * 1e3:.2f} | {ms:.3g} | {_err(dk['result']()['force'], f_ref)} |",
              flush=True)


def mesh_curve(args):
    """Force error of the mesh rows against resolution (issue 25): the default path (exact mesh
    fields; two convex meshes take the face route), the same fields on marching cubes
    (``flat_polygons`` off) and the interpolated grids (``exact_meshes`` off)."""
    from hydro.contact.config import HydroelasticConfig
    from hydro.contact.pipeline import HydroelasticPipeline
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings

    rows = {k: v for k, v in scenes().items() if ("mesh" in k or "asset" in k) and (not args.only or args.only in k)}
    configs = ({}, {"flat_polygons": False}, {"exact_meshes": False})
    print("# mesh rows: force error against resolution — hydro's default path, its exact fields on marching "
          "cubes, the interpolated grids")
    print("| scene | resolution | h (mm) | F err | F err, marching cubes | F err, interpolated | ms |")
    print("|---|---|---|---|---|---|---|")
    for name, (shapes, (f_ref, _), _) in rows.items():
        for res in (32, 48, 64, 96, 128):
            errs = []
            for options in configs:
                b = ModelBuilder()
                for k, spec in enumerate(shapes):
                    body = -1 if spec["static"] else b.add_body(f"/World/B{k}", (*spec["pos"], *spec["quat"]))
                    pose = (*spec["pos"], *spec["quat"]) if spec["static"] else (0, 0, 0, 0, 0, 0, 1)
                    b.add_shape(f"/World/S{k}" if body < 0 else f"/World/B{k}/C", _hydro_geometry(spec),
                                local_pose=pose, body=body, hydroelastic=True, stiffness=spec["stiffness"],
                                sdf=SDFSettings(max_resolution=res))
                model = b.finalize()
                pipe = HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=False, **options))
                poses = model.shape_world_poses(model.state())
                ms = interleaved_medians({"q": lambda: pipe.collide(poses)}, args.repeat, 1)["q"]
                c = pipe.collide(poses).contacts
                upper = np.array([not sp["static"] for sp in shapes])
                fz = float((c.force_vectors()[:, 2] * np.where(upper[c.shape_b], 1.0, -1.0)).sum())
                errs.append((_err(fz, f_ref), ms))
            h = min(s.voxel_size for s in model.sdfs)
            print(f"| {name} | {res} | {h * 1e3:.2f} | {errs[0][0]} | {errs[1][0]} | {errs[2][0]} | {errs[0][1]:.3g} |",
                  flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds the repeats are split into")
    ap.add_argument("--newton-repeat-big", type=int, default=1, help="Newton queries timed on the 256 boxes")
    ap.add_argument("--no-newton", action="store_true", help="leave Newton out even when it is installed")
    ap.add_argument("--curve", action="store_true", help="the error-vs-time curve of the sphere row instead")
    ap.add_argument("--mesh-curve", action="store_true",
                    help="the mesh rows' force error against resolution, exact mesh fields on and off, instead")
    ap.add_argument("--only", metavar="TEXT", help="only the rows whose scene name contains TEXT")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time this thread's CPU time instead of wall time (use with NUMBA_NUM_THREADS=1)")
    args = ap.parse_args(argv)
    if args.cpu_time:
        global CLOCK
        CLOCK = time.thread_time
    if args.repeat < 1 or args.rounds < 1:
        ap.error("--repeat and --rounds must be at least 1")
    from hydro.backend import configure_runtime

    configure_runtime(announce_compiles=True)
    try:
        import pydrake  # noqa: F401
    except ImportError:
        raise SystemExit("bench_peers needs Drake: pip install -e '.[peers]'")
    (mesh_curve if args.mesh_curve else curve if args.curve else table)(args)


if __name__ == "__main__":
    main()
