"""Parameter sweeps over the reference scenes: one measurement per setting, run in parallel.

A :class:`Setting` names a scene (one of :data:`SCENES`) and the knobs to vary (depth, SDF
resolution, stiffness ratio, interface field, contact reduction and its budget, a tilt, the
marching-cubes edge clamp).
:func:`measure` builds the scene (cached per process), runs one ``collide`` and returns a flat
dict of plain floats, ints and strings: the measured totals, the closed form where one exists
(:mod:`hydro.tools.analytic`) and their relative errors. :func:`run_sweep` maps a function over
settings, in order, through a ``concurrent.futures`` executor:

- ``workers=1``: in this process (no pool);
- default: a pool of ``workers`` processes (spawned, so each loads the kernels from the Numba
  cache instead of inheriting a forked runtime);
- ``scheduler="tcp://host:port"`` (or a ``distributed`` Client/LocalCluster): the same
  ``executor.map`` call on a Dask cluster, through ``Client.get_executor()``. Dask is imported
  only then (optional extra ``sweep``).

The pipeline is deterministic (ordered sums), so every path gives identical numbers; only
``time_ms`` differs.

Scenes (lengths in m; the lower shape is shape 0 and static, the upper one shape 1)
    ``sphere_on_box``  sphere R = 0.1 on a 0.5 × 0.5 × 0.2 box, top face at z = 0
    ``cube_on_box``    cube 0.1 on a 0.4 × 0.4 × 0.2 box
    ``cylinder_on_box`` cylinder R = 0.1, L = 0.2, axis along x, lying on a 0.5 × 0.5 × 0.2 box
    ``two_spheres``    two spheres R = 0.1, the upper one 2R − d above the lower one
``depth`` is the overlap of the undeformed shapes; ``tilt`` rotates the upper shape about the
y axis through the point where it first touched (0 for the closed forms).
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields
from itertools import product

import numpy as np

from . import analytic
from ..contact.config import HydroelasticConfig
from ..geometry import Box, Cylinder, Sphere
from ..scene.model import ModelBuilder
from ..contact.pipeline import HydroelasticPipeline
from ..sdf import SDFSettings
from ..transforms import pose_compose, quat_from_axis_angle

#: N/m³, stiffness of the lower shape (the upper one gets ``stiffness_ratio`` times it).
BASE_STIFFNESS = 1e9
SPHERE_RADIUS = 0.1
CUBE_SIZE = 0.1
CYLINDER_RADIUS = 0.1
CYLINDER_LENGTH = 0.2
SCENES = ("sphere_on_box", "cube_on_box", "cylinder_on_box", "two_spheres")
#: Result keys that differ from run to run (everything else is deterministic).
NONDETERMINISTIC = ("time_ms",)


@dataclass(frozen=True)
class Setting:
    """One point of a sweep (the knobs; units in the module docstring)."""

    scene: str = "sphere_on_box"
    depth: float = 0.01
    resolution: int = 64
    stiffness_ratio: float = 1.0
    interface: str = "continuous"
    reduce: bool = False
    max_contacts_per_pair: int = 32
    tilt: float = 0.0
    edge_clamp: float = 0.02
    device: str = "cpu"

    def __post_init__(self):
        if self.scene not in SCENES:
            raise ValueError(f"scene must be one of {SCENES}, got {self.scene!r}")


def grid(scenes=SCENES, **axes) -> list:
    """All :class:`Setting` combinations: ``scenes`` × every value list in ``axes`` (in order)."""
    names = [f.name for f in fields(Setting)]
    for k in axes:
        if k not in names or k == "scene":
            raise ValueError(f"unknown sweep axis {k!r}; axes are {names[1:]}")
    keys = list(axes)
    values = [list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v] for v in axes.values()]
    return [Setting(scene=s, **dict(zip(keys, combo))) for s in scenes for combo in product(*values)]


# ---------------------------------------------------------------------------------------------
# scenes


def _geometries(scene):
    if scene == "sphere_on_box":
        return Box((0.5, 0.5, 0.2)), Sphere(SPHERE_RADIUS)
    if scene == "cube_on_box":
        return Box((0.4, 0.4, 0.2)), Box((CUBE_SIZE,) * 3)
    if scene == "cylinder_on_box":
        return Box((0.5, 0.5, 0.2)), Cylinder(CYLINDER_RADIUS, CYLINDER_LENGTH)
    return Sphere(SPHERE_RADIUS), Sphere(SPHERE_RADIUS)


@functools.lru_cache(maxsize=32)
def build_scene(scene: str, resolution: int, stiffness_ratio: float = 1.0):
    """The two-shape model of ``scene`` (SDFs at ``max_resolution=resolution`` for both shapes)."""
    lower, upper = _geometries(scene)
    sdf = SDFSettings(max_resolution=int(resolution))
    b = ModelBuilder()
    lower_pose = (0, 0, 0, 0, 0, 0, 1) if scene == "two_spheres" else (0, 0, -0.1, 0, 0, 0, 1)
    b.add_shape("/World/Lower", lower, local_pose=lower_pose, hydroelastic=True, stiffness=BASE_STIFFNESS, sdf=sdf)
    body = b.add_body("/World/Upper", (0, 0, 1, 0, 0, 0, 1), density=500.0)
    b.add_shape("/World/Upper/Collider", upper, body=body, hydroelastic=True,
                stiffness=BASE_STIFFNESS * float(stiffness_ratio), sdf=sdf)
    return b.finalize()


def upper_pose(scene: str, depth: float, tilt: float = 0.0) -> np.ndarray:
    """World pose of the upper shape at overlap ``depth`` (m), tilted by ``tilt`` (rad) about y
    through the point where the two undeformed shapes first touch."""
    if scene == "two_spheres":
        base = np.array([0.0, 0.0, 2 * SPHERE_RADIUS - depth, 0, 0, 0, 1])
        touch = np.array([0.0, 0.0, SPHERE_RADIUS - depth])
    elif scene == "cylinder_on_box":
        q = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), math.pi / 2)  # axis z → x
        base = np.concatenate([[0.0, 0.0, CYLINDER_RADIUS - depth], q])
        touch = np.array([0.0, 0.0, -depth])
    else:
        half = SPHERE_RADIUS if scene == "sphere_on_box" else CUBE_SIZE / 2
        base = np.array([0.0, 0.0, half - depth, 0, 0, 0, 1])
        touch = np.array([0.0, 0.0, -depth])
    if tilt == 0.0:
        return base
    rot = np.concatenate([[0.0, 0.0, 0.0], quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), tilt)])
    to_origin = base.copy()
    to_origin[:3] -= touch
    out = pose_compose(rot, to_origin)
    out[:3] += touch
    return out


def shape_poses(model, scene: str, depth: float, tilt: float = 0.0) -> np.ndarray:
    poses = model.shape_world_poses(model.state())
    poses[1] = upper_pose(scene, depth, tilt)
    return poses


def closed_form(setting: Setting):
    """The :class:`~hydro.tools.analytic.ClosedForm` of an untilted setting (None where none is known)."""
    s = setting
    if s.tilt != 0.0:
        return None
    k = BASE_STIFFNESS
    if s.scene == "sphere_on_box":
        return analytic.sphere_on_box(s.depth, SPHERE_RADIUS, k_sphere=k * s.stiffness_ratio, k_box=k)
    if s.stiffness_ratio != 1.0:
        return None
    if s.scene == "cube_on_box":
        return analytic.cube_on_box(s.depth, CUBE_SIZE, k=k)
    if s.scene == "cylinder_on_box":
        return analytic.cylinder_on_box(s.depth, CYLINDER_RADIUS, CYLINDER_LENGTH, k=k)
    return analytic.two_spheres(s.depth, SPHERE_RADIUS, k=k)


@functools.lru_cache(maxsize=32)
def _pipeline(scene, resolution, stiffness_ratio, interface, reduce, budget, edge_clamp, device):
    model = build_scene(scene, resolution, stiffness_ratio)
    cfg = HydroelasticConfig(reduce_contacts=bool(reduce), interface=interface, max_contacts_per_pair=int(budget),
                             mc_edge_clamp_min=float(edge_clamp))
    return HydroelasticPipeline(model, cfg, device=device)


# ---------------------------------------------------------------------------------------------
# measurement


def _totals(c, upper_sign):
    """Force on the upper shape, torque about the world origin, area, centre of pressure."""
    fvec = c.force_vectors() * upper_sign[:, None]
    pts = c.point.astype(np.float64)
    force = fvec.sum(axis=0)
    torque = np.cross(pts, fvec).sum(axis=0)
    active = ~c.speculative
    mag = c.force[active].astype(np.float64)
    cop = (pts[active] * mag[:, None]).sum(axis=0) / mag.sum() if mag.sum() > 0 else np.full(3, np.nan)
    area = float(c.area[active].astype(np.float64).sum())
    return force, torque, area, cop


def _sign(c):
    # contacts give the force on shape_b; the upper shape is shape 1
    return np.where(c.shape_b == 1, 1.0, -1.0)


def measure(setting: Setting) -> dict:
    """One ``collide`` of ``setting``; a flat dict (force on the upper shape, N; torque about the
    world origin, N·m; area, m²; lengths, m; relative errors against the closed form)."""
    s = setting
    pipe = _pipeline(s.scene, s.resolution, s.stiffness_ratio, s.interface, s.reduce, s.max_contacts_per_pair,
                     s.edge_clamp, s.device)
    model = pipe.model
    poses = shape_poses(model, s.scene, s.depth, s.tilt)
    t0 = time.perf_counter()
    res = pipe.collide(poses)
    elapsed = (time.perf_counter() - t0) * 1e3
    patch = res.patch
    force, torque, area, cop = _totals(patch, _sign(patch))
    out = asdict(s)
    out["voxel_size"] = float(min(sd.voxel_size for sd in model.sdfs))
    out["triangle_count"] = len(patch)
    out["contact_count"] = len(res.contacts)
    out["force_z"] = float(force[2])
    out["force_lateral"] = float(np.hypot(force[0], force[1]))
    out["torque_x"], out["torque_y"], out["torque_z"] = (float(v) for v in torque)
    out["area"] = area
    out["cop_x"], out["cop_y"], out["cop_z"] = (float(v) for v in cop)
    active = ~patch.speculative & (patch.force > 0)
    out["lowest"] = float(patch.point[active, 2].min()) if active.any() else math.nan
    exact = closed_form(s)
    out["exact_force"] = exact.force if exact else math.nan
    out["exact_area"] = exact.area if exact else math.nan
    out["exact_lowest"] = exact.lowest if exact else math.nan
    out["force_error"] = float(force[2] / exact.force - 1) if exact and exact.force > 0 else math.nan
    out["area_error"] = float(area / exact.area - 1) if exact and exact.area > 0 else math.nan
    if s.reduce:
        red = res.contacts
        rf, rt, _, _ = _totals(red, _sign(red))
        fnorm = float(np.linalg.norm(force))
        # torque scale: |F| times the patch's radius of gyration about its centre of pressure
        pts = patch.point[active].astype(np.float64)
        w = patch.force[active].astype(np.float64)
        radius = float(np.sqrt((w * ((pts - cop) ** 2).sum(axis=1)).sum() / w.sum())) if w.sum() > 0 else math.nan
        out["reduced_force_error"] = float(np.linalg.norm(rf - force) / fnorm) if fnorm > 0 else math.nan
        out["reduced_torque_error"] = (float(np.linalg.norm(rt - torque) / (fnorm * radius))
                                       if fnorm > 0 else math.nan)
        # resistance to tilting: Σ c·r⊥² about the centre of pressure, reduced vs the whole patch
        out["tilt_stiffness_error"] = float(_tilt_stiffness(red, cop) / _tilt_stiffness(patch, cop) - 1)
    else:
        out["reduced_force_error"] = out["reduced_torque_error"] = out["tilt_stiffness_error"] = math.nan
    out["time_ms"] = elapsed
    return out


def _tilt_stiffness(c, cop):
    """Σ c·|r × n|² (N·m): the moment a penalty solver feels per radian of tilt about ``cop``."""
    live = ~c.speculative
    r = c.point[live].astype(np.float64) - cop
    n = c.normal[live].astype(np.float64)
    arm = np.cross(r, n)
    return float((c.stiffness[live].astype(np.float64) * (arm**2).sum(axis=1)).sum())


# ---------------------------------------------------------------------------------------------
# runner


class _InProcess(Executor):
    """A serial executor (``workers=1``): no pool, results in order."""

    def map(self, fn, *iterables, timeout=None, chunksize=1):
        return map(fn, *iterables)


def _with_threads(fn, threads, item):
    if threads:
        import numba

        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    return fn(item)


def run_sweep(settings, fn=measure, *, workers: int | None = None, scheduler=None,
              threads_per_task: int | None = 1) -> list:
    """``[fn(s) for s in settings]``, in order, computed in parallel.

    ``scheduler``: a Dask scheduler address (``"tcp://host:8786"``), a ``distributed.Client`` or
    anything with a ``scheduler_address`` (a ``LocalCluster``); None runs ``workers`` local
    processes (default: the CPU count; 1: in this process). ``fn`` must be importable by the
    workers (a module-level function). ``threads_per_task``: Numba threads inside each worker
    process (None leaves Numba's default; a run in this process keeps this process's setting).
    """
    settings = list(settings)
    # worker processes run with ``threads_per_task`` Numba threads; in this process the thread
    # count is left as it is
    task = functools.partial(_with_threads, fn, threads_per_task)
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError as e:  # pragma: no cover - depends on the optional extra
            raise ImportError("a Dask scheduler needs the optional extra: pip install 'hydro[sweep]'") from e
        if isinstance(scheduler, Client):
            return _run(scheduler.get_executor(), task, settings)
        address = getattr(scheduler, "scheduler_address", scheduler)
        with Client(address) as client:
            return _run(client.get_executor(), task, settings)
    workers = workers or multiprocessing.cpu_count()
    if workers == 1 or len(settings) <= 1:
        return _run(_InProcess(), fn, settings)
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return _run(pool, task, settings)


def _run(executor: Executor, task, settings) -> list:
    """The one code path of every runner: ``executor.map`` in order."""
    return list(executor.map(task, settings))

