"""hydro beside Drake and Newton on the same hydroelastic scenes, in one run: time per query and
force error against the closed form (or a quadrature of the defining integral), and the ratios.

    pip install -e '.[peers]'          # drake (about 42 MB); Newton: pip install newton warp-lang
    NUMBA_NUM_THREADS=2 python scripts/bench_peers.py [--repeat 15] [--rounds 5] [--no-newton] [--only TEXT]   # a markdown table
    NUMBA_NUM_THREADS=2 python scripts/bench_peers.py --curve [--repeat 9]

Scenes (k = 1e9 N/m³ unless stated; every lower shape is a static box whose top face is z = 0,
but the two spheres'):

| scene | shapes | reference |
|---|---|---|
| sphere into box, 5 mm | sphere R 0.1 m into a 0.5 × 0.5 × 0.2 m box | closed form |
| two spheres, 5 mm | two spheres R 0.1 m, centres 2R − d apart | closed form |
| sphere, stiffness 4:1 | the sphere row with k_sphere = 4e9, k_box = 1e9 | closed form |
| 0.2 cube on box, 2 mm | a 0.2 m cube flat on a 0.6 × 0.6 × 0.2 m box | closed form |
| torus mesh on box, 3 mm | a 1024-triangle torus (major 0.08 m, tube 0.025 m) on a 0.5 × 0.5 × 0.2 m box | quadrature |
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
  ``docs/design.md``); the torus mesh is sampled from its grid.
- Drake's compliant pressure is E·(distance to the boundary)/H, H = R for a sphere and the
  smallest half-size for a box: E = k·H makes it k·depth like hydro's, and its
  ``resolution_hint`` (a typical tetrahedron edge) is hydro's h of the same scene. Boxes have
  exact fields on Drake's medial-axis meshes (the hint is ignored). The torus is a compliant
  tetrahedral mesh (:func:`torus_tetrahedra`: the wedges from the tube's centre circle to each
  surface quad), whose extent Drake takes as the distance to the surface over its largest value
  at a vertex: H is that value, so the query is compliant–compliant as hydro's and Newton's, all
  three against the same quadrature of the polygonal torus.
- Newton: ``kh = k``, no margins or gaps, unreduced, SDF resolution 64 padded so its voxel equals
  hydro's h (the issue's earlier run let Newton pad less, a finer h).

Force errors are of the vertical force on the upper shapes; area errors where a closed form exists.
``--curve`` prints the error-vs-time curve of the sphere row for hydro (max_resolution 32 … 160)
and Drake (resolution_hint from 8 mm down), one line per resolution.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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


def _shape(kind, size, pos, k=K, static=False):
    return {"kind": kind, "size": size, "pos": tuple(float(v) for v in pos), "stiffness": float(k), "static": static}


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
    return Mesh(*spec["size"])


def hydro_case(shapes, resolution):
    """hydro's model of ``shapes`` at ``max_resolution``: a dict with ``query(threads)`` (one
    ``collide`` with that many Numba threads) and ``result()`` (force, area, elements of the last
    query), ``h`` and ``setup_s``."""
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
            b.add_shape(f"/World/S{k}", _hydro_geometry(spec), local_pose=(*spec["pos"], 0, 0, 0, 1),
                        hydroelastic=True, stiffness=spec["stiffness"], sdf=sdf)
        else:
            body = b.add_body(f"/World/B{k}", (*spec["pos"], 0, 0, 0, 1))
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

    return {"query": query, "result": result, "setup_s": setup, "h": min(s.voxel_size for s in model.sdfs)}


def interleaved_medians(queries, repeat, rounds=5, warmup=3):
    """Median ms of each query over ``repeat`` calls, timed in ``rounds`` interleaved rounds (a batch
    of each query in turn, so a busy spell of a shared machine falls on all of them alike) after
    ``warmup`` calls of each."""
    for q in queries.values():
        for _ in range(warmup):
            q()
    times = {name: [] for name in queries}
    per_round = max(1, -(-repeat // rounds))
    for r in range(rounds):
        for name, q in queries.items():
            for _ in range(min(per_round, repeat - r * per_round)):
                t0 = time.perf_counter()
                q()
                times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) * 1e3 for name, t in times.items()}


# ---------------------------------------------------------------------------------------------
# Drake


def _largest_depth(verts, surface_verts, faces):
    """The largest distance from the vertices ``verts`` to the surface mesh: Drake's divisor of its
    mesh pressure field (the extent is distance / this)."""
    from hydro.geometry import Mesh
    from hydro.geometry.mesh_distance import MeshDistance

    return float(-MeshDistance(Mesh(surface_verts, faces)).signed_distance(verts).min())


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
        # the torus as a compliant tetrahedral mesh: Drake's extent is the distance to the surface
        # over its largest value among the vertices (those on the tube's centre circle)
        verts, tets = torus_tetrahedra(*TORUS)
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
            g = sg.RegisterAnchoredGeometry(source, GeometryInstance(RigidTransform(list(spec["pos"])),
                                                                     geometry(spec, k), f"s{k}"))
        else:
            frame = sg.RegisterFrame(source, GeometryFrame(f"f{k}"))
            g = sg.RegisterGeometry(source, frame, GeometryInstance(RigidTransform(), geometry(spec, k), f"s{k}"))
            frames.append((frame, spec["pos"]))
        sg.AssignRole(source, g, props(spec, k))
    setup = time.perf_counter() - t0
    context = sg.CreateDefaultContext()
    poses = FramePoseVector()
    for frame, pos in frames:
        poses.set_value(frame, RigidTransform(list(pos)))
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
    cols = ["h (mm)"] + [f"hydro {n}T ms" for n in threads] + ["Drake ms"] + (["Newton ms"] if newton else []) + [
        f"Drake / hydro {all_t}T"] + ([f"Newton / hydro 1T"] if newton else []) + [
        "hydro F err", "Drake F err"] + (["Newton F err"] if newton else []) + [
        "hydro A err", "Drake A err"] + (["Newton A err"] if newton else []) + [
        "hydro tri", "Drake poly"] + (["Newton tri"] if newton else [])
    print("| scene | " + " | ".join(cols) + " |")
    print("|" + "---|" * (1 + len(cols)))
    hydro_case(scenes()["sphere into box, 5 mm"][0], 16)["query"](1)  # load the compiled kernels first
    for name, (shapes, (f_ref, a_ref), drake_ref) in scenes().items():
        if args.only and args.only not in name:
            continue
        big = len(shapes) > 8
        hy = hydro_case(shapes, 64)
        dk = drake_case(shapes, hy["h"])
        queries = {n: (lambda n=n: hy["query"](n)) for n in threads}
        queries["drake"] = dk["query"]
        ms = interleaved_medians(queries, args.repeat, args.rounds)
        hy.update(hy["result"](), ms=ms)
        dk.update(dk["result"](), ms=ms["drake"])
        nw = None
        if newton:
            try:
                nw = newton[1](shapes, args.newton_repeat_big if big else args.repeat, resolution=64,
                               buffer_fraction=0.05 if big else None)
            except Exception as exc:  # a peer's failure is reported in the row, not fatal
                print(f"# Newton failed on {name}: {type(exc).__name__}: {exc}", flush=True)
        cells = [f"{hy['h'] * 1e3:.2f}"] + [f"{hy['ms'][n]:.3g}" for n in threads] + [f"{dk['ms']:.3g}"]
        na = newton and nw is None  # Newton installed, but failed on this row
        cells += [f"{nw['ms']:.3g}"] if nw else ["–"] if na else []
        cells += [f"{dk['ms'] / hy['ms'][all_t]:.2g}×"]
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds the repeats are split into")
    ap.add_argument("--newton-repeat-big", type=int, default=1, help="Newton queries timed on the 256 boxes")
    ap.add_argument("--no-newton", action="store_true", help="leave Newton out even when it is installed")
    ap.add_argument("--curve", action="store_true", help="the error-vs-time curve of the sphere row instead")
    ap.add_argument("--only", metavar="TEXT", help="only the rows whose scene name contains TEXT")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.rounds < 1:
        ap.error("--repeat and --rounds must be at least 1")
    from hydro.backend import configure_runtime

    configure_runtime(announce_compiles=True)
    try:
        import pydrake  # noqa: F401
    except ImportError:
        raise SystemExit("bench_peers needs Drake: pip install -e '.[peers]'")
    (curve if args.curve else table)(args)


if __name__ == "__main__":
    main()
