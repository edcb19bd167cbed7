"""hydro beside Drake's hydroelastic contact surfaces: time per query and force error, one table.

    pip install -e '.[peers]'          # drake (about 42 MB)
    NUMBA_NUM_THREADS=2 python scripts/bench_peers.py [--repeat 15] [--depth 0.01]

Scenes (equal stiffness k = 1e9 N/m³, overlap d, closed forms from ``hydro.tools.analytic``):
sphere R = 0.1 m on a 0.5 × 0.5 × 0.2 m box; a 0.1 m cube resting flat on a 0.4 × 0.4 × 0.2 m
box; two spheres R = 0.1 m. For each scene and each of two resolutions (hydro's
``max_resolution`` 64 and 128), one row: hydro's ``collide`` (unreduced patch, CPU with one
Numba thread and with all of ``NUMBA_NUM_THREADS``, and CUDA when a GPU is present) and Drake's
``QueryObject.ComputeContactSurfaces`` (polygon representation; Drake's geometry queries are
single-threaded): median milliseconds per query (kernels compiled, meshes built, poses fixed),
the ratio Drake / hydro, the relative error of the normal force and of the patch area against
the closed form, the number of patch elements, and the one-off setup time (hydro: SDF builds;
Drake: building the compliant tetrahedral meshes and fields when the role is assigned).

Matching the models. Drake's compliant pressure field is p = E·e(x), with the extent
e = (distance to the boundary)/H: H = R for a sphere (e = 1 − r/R), H = the smallest half-size
for a box, H = min(R, L/2) for a cylinder. hydro's pressure is k·(depth) with depth = −φ. Giving
every Drake shape E = k·H makes Drake's field k·depth (exactly for boxes, whose distance field is
piecewise linear on Drake's medial-axis mesh; up to tessellation for spheres), so both compute the
surface where the two pressures are equal with pressure k·depth, and the same closed forms apply.

Matching resolution. hydro meshes the patch on the finer SDF grid, voxel size h (shape B); the
sphere's SDF at ``max_resolution`` 64 has h = 0.2 m / 56 = 3.57 mm (4 voxels of padding a side),
at 128 h = 0.2 m / 120 = 1.67 mm. Drake's ``resolution_hint`` is "roughly a typical edge length"
of its tetrahedral mesh, so it is set to the same h (for every tessellated shape); Drake ignores
it for boxes (their mesh is fixed by the medial axis), so the cube row differs only on hydro's side.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

from hydro.tools import analytic
from hydro.contact.config import HydroelasticConfig
from hydro.geometry import Box, Sphere
from hydro.scene.model import ModelBuilder
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.sdf import SDFSettings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_collide_ms  # noqa: E402

K = 1e9
R = 0.1
CUBE = 0.1

# scene → (lower geometry, lower centre, upper geometry, upper centre at depth d, closed form)
SCENES = {
    "sphere on box": (("box", (0.5, 0.5, 0.2)), lambda d: (0, 0, -0.1), ("sphere", R), lambda d: (0, 0, R - d),
                      lambda d: analytic.sphere_on_box(d, R, k_sphere=K, k_box=K)),
    "box on box": (("box", (0.4, 0.4, 0.2)), lambda d: (0, 0, -0.1), ("box", (CUBE,) * 3),
                   lambda d: (0, 0, CUBE / 2 - d), lambda d: analytic.cube_on_box(d, CUBE, k=K)),
    "two spheres": (("sphere", R), lambda d: (0, 0, 0), ("sphere", R), lambda d: (0, 0, 2 * R - d),
                    lambda d: analytic.two_spheres(d, R, k=K)),
}


def _hydro_geometry(spec):
    kind, size = spec
    return Sphere(size) if kind == "sphere" else Box(size)


def pressure_scale(spec) -> float:
    """Drake's H (m): the length that maps the extent e ∈ [0, 1] to depth (E = k·H)."""
    kind, size = spec
    return size if kind == "sphere" else min(size) / 2


# ---------------------------------------------------------------------------------------------
# hydro


def hydro_case(scene, depth, resolution, device, repeat, threads):
    lower, lower_at, upper, upper_at, _ = SCENES[scene]
    sdf = SDFSettings(max_resolution=resolution)
    t0 = time.perf_counter()
    b = ModelBuilder()
    b.add_shape("/World/Lower", _hydro_geometry(lower), local_pose=(*lower_at(depth), 0, 0, 0, 1),
                hydroelastic=True, stiffness=K, sdf=sdf)
    body = b.add_body("/World/Upper", (*upper_at(depth), 0, 0, 0, 1))
    b.add_shape("/World/Upper/Collider", _hydro_geometry(upper), body=body, hydroelastic=True, stiffness=K, sdf=sdf)
    model = b.finalize()
    setup = time.perf_counter() - t0
    pipe = HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=False), device=device)
    poses = model.shape_world_poses(model.state())
    out = {}
    for n in threads:
        import numba

        numba.set_num_threads(n)
        out[n], res, _ = median_collide_ms(pipe, poses, repeat)
    c = res.contacts
    sign = np.where(c.shape_b == 1, 1.0, -1.0)
    fz = float((c.force_vectors()[:, 2] * sign).sum())
    area = float(c.area[~c.speculative].astype(float).sum())
    h = min(s.voxel_size for s in model.sdfs)
    return {"ms": out, "force": fz, "area": area, "elements": len(c), "setup_s": setup, "h": h}


# ---------------------------------------------------------------------------------------------
# Drake


def drake_case(scene, depth, hint, repeat):
    from pydrake.geometry import (AddCompliantHydroelasticProperties, FramePoseVector, GeometryFrame,
                                  GeometryInstance, HydroelasticContactRepresentation, ProximityProperties,
                                  SceneGraph)
    from pydrake.geometry import Box as DBox
    from pydrake.geometry import Sphere as DSphere
    from pydrake.math import RigidTransform

    lower, lower_at, upper, upper_at, _ = SCENES[scene]

    def shape(spec):
        kind, size = spec
        return DSphere(size) if kind == "sphere" else DBox(*size)

    def props(spec):
        p = ProximityProperties()
        AddCompliantHydroelasticProperties(hint, K * pressure_scale(spec), p)
        return p

    sg = SceneGraph()
    source = sg.RegisterSource("bench_peers")
    t0 = time.perf_counter()
    g_lower = sg.RegisterAnchoredGeometry(source, GeometryInstance(RigidTransform(list(lower_at(depth))),
                                                                    shape(lower), "lower"))
    sg.AssignRole(source, g_lower, props(lower))
    frame = sg.RegisterFrame(source, GeometryFrame("upper"))
    g_upper = sg.RegisterGeometry(source, frame, GeometryInstance(RigidTransform(), shape(upper), "upper"))
    sg.AssignRole(source, g_upper, props(upper))
    setup = time.perf_counter() - t0
    context = sg.CreateDefaultContext()
    poses = FramePoseVector()
    poses.set_value(frame, RigidTransform(list(upper_at(depth))))
    sg.get_source_pose_port(source).FixValue(context, poses)
    query = sg.get_query_output_port().Eval(context)
    rep = HydroelasticContactRepresentation.kPolygon
    query.ComputeContactSurfaces(rep)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        surfaces = query.ComputeContactSurfaces(rep)
        times.append(time.perf_counter() - t0)
    (surface,) = surfaces
    mesh, field = surface.poly_mesh_W(), surface.poly_e_MN()
    # face normals point out of N into M: the force on N is −Σ p·n·A (p linear on each polygon,
    # so p at the area centroid times the area is the exact integral)
    force = np.zeros(3)
    for f in range(mesh.num_faces()):
        force += field.EvaluateCartesian(f, mesh.element_centroid(f)) * mesh.area(f) * mesh.face_normal(f)
    on_upper = -force if surface.id_N() == g_upper else force
    return {"ms": float(np.median(times)) * 1e3, "force": float(on_upper[2]), "area": float(surface.total_area()),
            "elements": mesh.num_faces(), "setup_s": setup}


# ---------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--depth", type=float, default=0.01)
    ap.add_argument("--resolutions", default="64,128")
    args = ap.parse_args(argv)
    from hydro.backend import configure_runtime

    configure_runtime(announce_compiles=True)
    try:
        import pydrake  # noqa: F401
    except ImportError:
        raise SystemExit("bench_peers needs Drake: pip install -e '.[peers]'")
    import importlib.metadata

    import numba
    from numba import cuda

    all_threads = numba.config.NUMBA_NUM_THREADS
    threads = sorted({1, all_threads})
    gpu = cuda.is_available()
    d = args.depth
    print(f"# hydro vs Drake {importlib.metadata.version('drake')} hydroelastic contact surfaces — "
          f"{datetime.date.today()}, {platform.machine()} {os.cpu_count()} cores, NUMBA_NUM_THREADS={all_threads}, "
          f"{'CUDA: ' + cuda.get_current_device().name.decode() if gpu else 'no GPU'}; d = {d * 1e3:g} mm, "
          f"k = {K:g} N/m³, median of {args.repeat}")
    cols = [f"hydro {n}T ms" for n in threads] + (["hydro GPU ms"] if gpu else []) + [
        "Drake ms", f"Drake/hydro {all_threads}T", "hydro F err", "Drake F err", "hydro A err", "Drake A err",
        "hydro tri", "Drake poly", "hydro setup s", "Drake setup s"]
    head = "| scene | res | h (mm) | " + " | ".join(cols) + " |"
    print(head)
    print("|" + "---|" * (3 + len(cols)))
    hydro_case("sphere on box", d, 16, "cpu", 1, [1])  # load the compiled kernels before timing setups
    for scene in SCENES:
        exact = SCENES[scene][4](d)
        for res in (int(r) for r in args.resolutions.split(",")):
            hy = hydro_case(scene, d, res, "cpu", args.repeat, threads)
            gpu_ms = hydro_case(scene, d, res, "cuda", args.repeat, [all_threads])["ms"][all_threads] if gpu else None
            dk = drake_case(scene, d, hy["h"], args.repeat)
            cells = [f"{hy['ms'][n]:.2f}" for n in threads] + ([f"{gpu_ms:.2f}"] if gpu else []) + [
                f"{dk['ms']:.2f}", f"{dk['ms'] / hy['ms'][all_threads]:.2g}×",
                f"{100 * (hy['force'] / exact.force - 1):+.2f} %", f"{100 * (dk['force'] / exact.force - 1):+.2f} %",
                f"{100 * (hy['area'] / exact.area - 1):+.2f} %", f"{100 * (dk['area'] / exact.area - 1):+.2f} %",
                f"{hy['elements']}", f"{dk['elements']}", f"{hy['setup_s']:.2f}", f"{dk['setup_s']:.2f}"]
            print(f"| {scene} | {res} | {hy['h'] * 1e3:.2f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
