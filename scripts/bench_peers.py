"""hydro beside Drake and Newton on the same hydroelastic scenes, in one run: time per query and
force error against the closed form (or a quadrature of the defining integral), and the ratios.

    pip install -e '.[peers]'          # drake (about 42 MB); Newton: pip install newton warp-lang
    NUMBA_NUM_THREADS=2 python scripts/bench_peers.py [--repeat 15] [--no-newton] [--markdown]
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
| 256 boxes on a ground, 2 mm | 16 × 16 boxes of 0.1 m (0.15 m apart) on a 2.6 × 2.6 × 1 m ground | closed form × 256 |

One query is hydro's ``HydroelasticPipeline.collide`` (the unreduced patch; CPU with one Numba thread
and with all of ``NUMBA_NUM_THREADS``), Drake's ``QueryObject.ComputeContactSurfaces`` (polygon
representation; single-threaded) and Newton's ``CollisionPipeline.collide`` (its CPU backend through
``scripts/peers/newton_peer.py``, single-threaded Warp kernels, unreduced). Each column is the
median of ``--repeat`` queries after warm-up (kernels compiled, meshes and SDFs built, poses
fixed); the big scenes' Newton query (seconds each) is timed ``--newton-repeat-big`` times.

Matching the models and the resolution:

- hydro builds each shape's SDF at ``max_resolution`` 64 and meshes the patch on the finer grid
  (voxel h: 3.57 mm for the sphere, the 0.2 m cube and the torus' 0.21 m, 1.79 mm for a 0.1 m box).
  Primitives are evaluated exactly where the patch is built, box pairs become exact polygons (see
  ``docs/design.md``); the torus mesh is sampled from its grid.
- Drake's compliant pressure is E·(distance to the boundary)/H, H = R for a sphere and the
  smallest half-size for a box: E = k·H makes it k·depth like hydro's, and its
  ``resolution_hint`` (a typical tetrahedron edge) is hydro's h of the same scene. Boxes have
  exact fields on Drake's medial-axis meshes (the hint is ignored). The torus has no compliant
  volume mesh here: Drake presses a *rigid* torus (its surface mesh) into the compliant box with
  E = k_eff·H, whose exact answer is k_eff × the overlap volume of the polygonal torus; its error
  is against that (its own model's exact answer), hydro's and Newton's against the compliant–
  compliant quadrature.
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
    out["torus mesh on box, 3 mm"] = ([box, _shape("mesh", (verts, faces), (0, 0, TORUS[1] - d))],
                                      _torus_reference(verts, faces, d), _torus_rigid_reference(verts, faces, d))
    d = 0.002
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


def _torus_rigid_reference(verts, faces, d):
    """Drake's rigid torus in a compliant box with pressure k_eff·depth: k_eff × the volume of the
    polygonal torus below z = 0 (each face's prism down to the plane, clipped)."""
    v = verts + np.array([0.0, 0.0, TORUS[1] - d])
    tri = v[faces]
    vol = 0.0
    # the solid below z = 0 is the mesh clipped by the plane; its volume by the divergence theorem
    # over the clipped faces (the cap on z = 0 contributes nothing for the z-flux form)
    for t in tri:
        below = t[:, 2] < 0.0
        if not below.any():
            continue
        poly = []
        for k in range(3):
            p, q = t[k], t[(k + 1) % 3]
            if p[2] < 0.0:
                poly.append(p)
            if (p[2] < 0.0) != (q[2] < 0.0):
                s = p[2] / (p[2] - q[2])
                poly.append(p + s * (q - p))
        for k in range(1, len(poly) - 1):
            a, b, c = poly[0], poly[k], poly[k + 1]
            n = np.cross(b - a, c - a)  # twice the area, outward
            vol += n[2] * (a[2] + b[2] + c[2]) / 3.0 / 2.0
    return 0.5 * K * vol


# ---------------------------------------------------------------------------------------------
# hydro


def _hydro_geometry(spec):
    from hydro.geometry import Box, Mesh, Sphere

    if spec["kind"] == "sphere":
        return Sphere(spec["size"])
    if spec["kind"] == "box":
        return Box(spec["size"])
    return Mesh(*spec["size"])


def hydro_case(shapes, resolution, repeat, threads):
    import numba

    from _timing import median_collide_ms
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
    ms = {}
    res = None
    for n in threads:
        numba.set_num_threads(n)
        ms[n], res, _ = median_collide_ms(pipe, poses, repeat)
    numba.set_num_threads(max(threads))
    c = res.contacts
    upper = np.array([not shapes[s]["static"] for s in range(len(shapes))])
    sign = np.where(upper[c.shape_b], 1.0, -1.0)  # the force on B along +normal
    fz = float((c.force_vectors()[:, 2] * sign).sum())
    area = float(c.area[~c.speculative].astype(float).sum())
    h = min(s.voxel_size for s in model.sdfs)
    return {"ms": ms, "force": fz, "area": area, "elements": len(c), "setup_s": setup, "h": h}


# ---------------------------------------------------------------------------------------------
# Drake


def _drake_hint_scale(spec):
    """Drake's H (m): the length that maps the extent e ∈ [0, 1] to depth (E = k·H)."""
    return spec["size"] if spec["kind"] == "sphere" else min(spec["size"]) / 2


def drake_case(shapes, hint, repeat):
    from pydrake.geometry import (AddCompliantHydroelasticProperties, AddRigidHydroelasticProperties, FramePoseVector,
                                  GeometryFrame, GeometryInstance, HydroelasticContactRepresentation, Mesh,
                                  ProximityProperties, SceneGraph)
    from pydrake.geometry import Box as DBox
    from pydrake.geometry import Sphere as DSphere
    from pydrake.math import RigidTransform

    rigid_mesh = any(s["kind"] == "mesh" for s in shapes)
    tmp = tempfile.mkdtemp(prefix="bench_peers_")

    def geometry(spec, k):
        if spec["kind"] == "sphere":
            return DSphere(spec["size"])
        if spec["kind"] == "box":
            return DBox(*spec["size"])
        v, f = spec["size"]
        path = os.path.join(tmp, f"mesh{k}.obj")
        with open(path, "w") as fh:
            fh.writelines(f"v {x:.9g} {y:.9g} {z:.9g}\n" for x, y, z in v)
            fh.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f)
        return Mesh(path)

    def props(spec):
        p = ProximityProperties()
        if spec["kind"] == "mesh":
            AddRigidHydroelasticProperties(hint, p)
        else:
            # a compliant shape facing a rigid one carries the pair's k_eff (both k here)
            k = spec["stiffness"] / 2 if rigid_mesh else spec["stiffness"]
            AddCompliantHydroelasticProperties(hint, k * _drake_hint_scale(spec), p)
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
        sg.AssignRole(source, g, props(spec))
    setup = time.perf_counter() - t0
    context = sg.CreateDefaultContext()
    poses = FramePoseVector()
    for frame, pos in frames:
        poses.set_value(frame, RigidTransform(list(pos)))
    sg.get_source_pose_port(source).FixValue(context, poses)
    query = sg.get_query_output_port().Eval(context)
    rep = HydroelasticContactRepresentation.kPolygon
    query.ComputeContactSurfaces(rep)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        surfaces = query.ComputeContactSurfaces(rep)
        times.append(time.perf_counter() - t0)
    inspector = query.inspector()
    force = 0.0
    area = 0.0
    elements = 0
    for surface in surfaces:
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
    return {"ms": float(np.median(times)) * 1e3, "force": force, "area": area, "elements": elements,
            "setup_s": setup}


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
              f"median of {args.repeat}")
    print(header)
    cols = ["h (mm)"] + [f"hydro {n}T ms" for n in threads] + ["Drake ms"] + (["Newton ms"] if newton else []) + [
        f"Drake / hydro {all_t}T"] + ([f"Newton / hydro 1T"] if newton else []) + [
        "hydro F err", "Drake F err"] + (["Newton F err"] if newton else []) + [
        "hydro A err", "Drake A err"] + (["Newton A err"] if newton else []) + [
        "hydro tri", "Drake poly"] + (["Newton tri"] if newton else [])
    print("| scene | " + " | ".join(cols) + " |")
    print("|" + "---|" * (1 + len(cols)))
    hydro_case(scenes()["sphere into box, 5 mm"][0], 16, 1, [1])  # load the compiled kernels first
    for name, (shapes, (f_ref, a_ref), drake_ref) in scenes().items():
        if args.only and args.only not in name:
            continue
        big = len(shapes) > 8
        hy = hydro_case(shapes, 64, args.repeat, threads)
        dk = drake_case(shapes, hy["h"], args.repeat)
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
    hydro_case(shapes, 16, 1, [n])
    for res in (32, 48, 64, 96, 128, 160):
        hy = hydro_case(shapes, res, args.repeat, [n])
        print(f"| hydro | {res} | {hy['h'] * 1e3:.2f} | {hy['ms'][n]:.3g} | {_err(hy['force'], f_ref)} |", flush=True)
    for hint in (0.008, 0.00536, 0.00357, 0.0025, 0.00167, 0.00125):
        dk = drake_case(shapes, hint, args.repeat)
        print(f"| Drake | hint {hint * 1e3:.3g} mm | {hint * 1e3:.2f} | {dk['ms']:.3g} | {_err(dk['force'], f_ref)} |",
              flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--newton-repeat-big", type=int, default=1, help="Newton queries timed on the 256 boxes")
    ap.add_argument("--no-newton", action="store_true", help="leave Newton out even when it is installed")
    ap.add_argument("--curve", action="store_true", help="the error-vs-time curve of the sphere row instead")
    ap.add_argument("--only", metavar="TEXT", help="only the rows whose scene name contains TEXT")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    from hydro.backend import configure_runtime

    configure_runtime(announce_compiles=True)
    try:
        import pydrake  # noqa: F401
    except ImportError:
        raise SystemExit("bench_peers needs Drake: pip install -e '.[peers]'")
    (curve if args.curve else table)(args)


if __name__ == "__main__":
    main()
