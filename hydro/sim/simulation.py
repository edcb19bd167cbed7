"""A small penalty solver for experiments: rigid bodies stepped through hydroelastic contact.

:class:`Simulation` loads a scene (a USD path or a :class:`~hydro.scene.model.Model`), calls the
contact pipeline once per sub-step and integrates the bodies with semi-implicit Euler. It is
meant for reading forces the way a robot-learning simulator reports them (``hydro.sim.sensors``,
``hydro.sim.embodichain``), not as a product of its own.

Time
    ``dt`` is the physics step: sensors sample once per physics step. Each step is split into
    ``substeps`` solver sub-steps of ``h = dt / substeps``; the clock counts steps in integers
    (``sim.time = step_count · dt``), so nothing drifts after long runs.

One sub-step
    1. Kinematic bodies take their scripted pose at t (a callback ``(t) -> poses`` or a keyframe
       list, see :meth:`Simulation.set_kinematic_script`) with the velocity that reaches the pose
       at t + h; unscripted kinematic bodies move with their constant velocity.
    2. The pipeline (one :class:`~hydro.contact.pipeline.HydroelasticPipeline`, reused) collides the
       shapes at their current poses.
    3. Normal force per contact, only for penetrating, non-speculative contacts (depth d < 0):
       ``fn = max(0, c·|d| − b·v_n)`` with c the contact's stiffness (N/m), v_n the normal
       relative velocity at the contact (B relative to A, along the normal from A to B) and a
       damping that gives each pair the damping ratio ζ (``damping_ratio``, default 1:
       critically damped, no bounce): ``b = 2ζ·c·sqrt(m_eff / C)``, C = Σ c over the pair's
       contacts, m_eff = 1 / (1/m_A + 1/m_B) (static and kinematic bodies have 1/m = 0). The
       force on B is ``fn·n``, on A its opposite.
    4. Velocities are predicted with gravity and the normal forces (world-frame inertia
       R·I·Rᵀ, gyroscopic term included).
    5. Friction, per shape pair, Coulomb with the pair's coefficients combined as PhysX does by
       default (the average of the two shapes' static and dynamic coefficients). It is
       regularised implicitly, at the velocity level: each pair's friction acts at its centre
       of pressure as a tangential force and a moment about the mean normal, and the impulses
       are those that stop every pair's slip and spin within the sub-step, solved together for
       pairs that share a body (λ = −D⁻¹·u with D = J·M⁻¹·Jᵀ, rotation included). A pair whose
       impulse leaves the cone ``|F_t| <= μ_s·Fn`` slides with ``μ_d·Fn`` against its would-be
       slip (and the torsional limit ``μ·Fn·ρ``, ρ the force-weighted mean distance of the
       contacts from the centre of pressure), and the others are solved again with it held
       (``friction_iterations`` rounds). A viscous regularisation ``−μ·fn·v/v_eps`` would limit
       the sub-step to ``~v_eps/(μ·g)`` and creep at ``~v_eps``; this form sticks exactly below
       the cone and never limits the sub-step. The pair's friction force is shared among its
       contacts in proportion to their normal force (plus the torsional part, a pure moment),
       so per-contact normal and friction forces are both kept.
    6. Positions: the centre of mass moves by h·v, the orientation by the exact rotation of
       h·ω (quaternion exponential).

Stable sub-step (``substeps="auto"``)
    Hydroelastic contact is stiff: with C the contact stiffness a body feels and m its mass,
    ω = sqrt(C/m) and semi-implicit Euler with damping ratio ζ is stable only for
    ``h·ω < a(ζ) = min(1/ζ, 2(sqrt(ζ²+1) − ζ))`` (2 undamped, 0.83 at ζ = 1). ``"auto"`` bounds
    C per dynamic body before any contact exists: ``C_b = Σ_shapes k_eff·A``, A the largest face
    of the shape's bounding box, k_eff = k·k_p/(k + k_p) against the stiffest other
    hydroelastic shape, times 4 (contact on opposite faces, and a dynamic partner moving
    against it), and picks ``substeps = ceil(dt·ω_max / (stability_margin·a(ζ)))``. Every
    sub-step also measures the stiffness its contacts actually have and warns (once) when
    ``h·ω`` exceeds ``a(ζ)``, naming the body and the sub-step count needed, instead of letting
    the run explode. :attr:`Simulation.stability` reports the bound and the choice.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ..scene.model import DEFAULT_ENV_SPACING, ENVS_ROOT, Model, State
from ..transforms import quat_mul, quat_normalize, quat_rotate, quat_to_matrix

__all__ = ["Simulation", "ContactFrame", "StabilityReport", "critical_step", "actor_table", "expand_expr"]

#: m/s², gravity of a scene that does not say (a Model built in Python).
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
#: Friction systems with at most this many unknowns (3 per pair) are solved dense, larger ones sparse.
DENSE_FRICTION_MAX = 300


def critical_step(damping_ratio: float) -> float:
    """a(ζ): semi-implicit Euler on x'' = −ω²x − 2ζωx' is stable for h·ω < a(ζ)."""
    z = float(damping_ratio)
    if z <= 0.0:
        return 2.0
    return min(1.0 / z, 2.0 * (math.sqrt(z * z + 1.0) - z))


@dataclass
class ContactFrame:
    """The contacts that carried force in one solver sub-step (N of them).

    | field | shape | meaning |
    |---|---|---|
    | ``point`` | (N,3) | m, world position of the contact |
    | ``normal`` | (N,3) | unit, world, from shape A toward shape B |
    | ``depth`` | (N,) | m, separation, negative when penetrating |
    | ``normal_force`` | (N,3) | N, normal force on B (on A: its negative) |
    | ``friction_force`` | (N,3) | N, friction force on B (on A: its negative), tangential |
    | ``shape_a`` / ``shape_b`` | (N,) | int32 shape indices |
    | ``body_a`` / ``body_b`` | (N,) | int32 body indices, −1 for a static shape |
    | ``env`` | (N,) | int32 env of the contact (−1: both shapes global) |
    | ``pair`` | (N,) | int32 index of the shape pair in the pipeline's result |
    """

    point: np.ndarray
    normal: np.ndarray
    depth: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    shape_a: np.ndarray
    shape_b: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray
    env: np.ndarray
    pair: np.ndarray

    def __len__(self) -> int:
        return len(self.depth)

    @classmethod
    def empty(cls) -> "ContactFrame":
        z3 = np.zeros((0, 3))
        zi = np.zeros(0, np.int32)
        return cls(point=z3, normal=z3.copy(), depth=np.zeros(0), normal_force=z3.copy(), friction_force=z3.copy(),
                   shape_a=zi, shape_b=zi.copy(), body_a=zi.copy(), body_b=zi.copy(), env=zi.copy(), pair=zi.copy())


@dataclass
class StabilityReport:
    """How ``substeps`` was chosen: ``omega_bound`` (rad/s) is the largest contact frequency
    the model can reach, ``critical_h`` (s) the largest stable sub-step, ``substeps`` the count
    used, ``auto`` whether it was chosen automatically."""

    omega_bound: float
    critical_h: float
    substeps: int
    auto: bool


def _rows_sum(index, values, n):
    """Ordered sums of ``values`` rows into ``n`` bins (deterministic: bincount is sequential)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        return np.bincount(index, weights=values, minlength=n)[:n]
    out = np.empty((n,) + values.shape[1:])
    flat = values.reshape(len(values), int(np.prod(values.shape[1:])))
    res = out.reshape(n, -1)
    for k in range(flat.shape[1]):
        res[:, k] = np.bincount(index, weights=flat[:, k], minlength=n)[:n]
    return out


def _solve_sym(matrix, rhs):
    """Solve a positive definite system, dense or sparse."""
    if isinstance(matrix, np.ndarray):
        return np.linalg.solve(matrix, rhs)
    from scipy.sparse.linalg import spsolve

    return spsolve(matrix.tocsc(), rhs)


def _quat_exp(rotvec):
    """Unit quaternions (x, y, z, w) of rotation vectors (..., 3)."""
    angle = np.linalg.norm(rotvec, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(x/2)/x, with its series near 0
    k = np.where(angle > 1e-8, np.sin(half) / np.where(angle > 1e-8, angle, 1.0), 0.5 - angle * angle / 48.0)
    return np.concatenate([rotvec * k, np.cos(half)], axis=-1)


def _quat_log(q):
    """Rotation vectors (..., 3) of unit quaternions (shortest rotation)."""
    q = np.where(q[..., 3:4] < 0.0, -q, q)
    v = q[..., :3]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., 3:4])
    k = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)
    return v * k


def _slerp(q0, q1, u):
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    rel = quat_mul(q1, np.concatenate([-q0[..., :3], q0[..., 3:]], axis=-1))
    return quat_normalize(quat_mul(_quat_exp(u * _quat_log(rel)), q0))


def _basis(n):
    """Deterministic unit tangents (t1, t2) completing unit normals n (P,3)."""
    a = np.zeros_like(n)
    use_x = np.abs(n[:, 0]) < 0.57735
    use_y = ~use_x & (np.abs(n[:, 1]) < 0.57735)
    a[use_x, 0] = 1.0
    a[use_y, 1] = 1.0
    a[~use_x & ~use_y, 2] = 1.0
    t1 = np.cross(a, n)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return t1, np.cross(n, t1)


class _KinematicScript:
    """World poses (K,7) of some kinematic bodies as a function of time."""

    def __init__(self, bodies, script):
        self.bodies = np.asarray(bodies, dtype=np.int64)
        if callable(script):
            self.fn = script
            self.keys = None
        else:
            keys = list(script)
            if not keys:
                raise ValueError("a keyframe list needs at least one (time, poses) entry")
            times = np.array([float(t) for t, _ in keys])
            if np.any(np.diff(times) <= 0) or not np.all(np.isfinite(times)):
                raise ValueError(f"keyframe times must be finite and strictly increasing, got {times.tolist()}")
            poses = np.array([self._shape(p) for _, p in keys])
            for p in poses:
                p[:, 3:] = quat_normalize(p[:, 3:])
            self.keys = (times, poses)
            self.fn = None

    def _shape(self, poses):
        p = np.asarray(poses, dtype=float)
        if p.shape == (7,):
            p = np.broadcast_to(p, (len(self.bodies), 7))
        if p.shape != (len(self.bodies), 7) or not np.all(np.isfinite(p)):
            raise ValueError(f"a kinematic script must give finite poses of shape ({len(self.bodies)}, 7) "
                             f"(or (7,) for all), got shape {p.shape}")
        return np.array(p, dtype=float)

    def __call__(self, t: float) -> np.ndarray:
        if self.fn is not None:
            p = self._shape(self.fn(t))
            p[:, 3:] = quat_normalize(p[:, 3:])
            return p
        times, poses = self.keys
        if t <= times[0]:
            return poses[0].copy()
        if t >= times[-1]:
            return poses[-1].copy()
        i = int(np.searchsorted(times, t, side="right")) - 1
        u = (t - times[i]) / (times[i + 1] - times[i])
        out = np.empty_like(poses[i])
        out[:, :3] = (1.0 - u) * poses[i][:, :3] + u * poses[i + 1][:, :3]
        out[:, 3:] = _slerp(poses[i][:, 3:], poses[i + 1][:, 3:], u)
        return out


class Simulation:
    """Rigid bodies stepped through hydroelastic contact (see the module docstring).

    ``scene``: a USD path (loaded with ``num_envs``/``env_spacing``; gravity read from its
    ``PhysicsScene``) or a :class:`~hydro.scene.model.Model` (gravity ``DEFAULT_GRAVITY`` unless
    given). ``dt`` (s): the physics step. ``substeps``: ``"auto"`` or a positive integer.
    ``config``: a :class:`~hydro.contact.config.HydroelasticConfig` or ``NewtonConfig`` (default: the
    active one). ``damping_ratio`` ζ of the normal contact damping; ``friction_iterations``
    the active-set rounds of the friction solve; ``stability_margin`` the fraction of the critical
    sub-step ``"auto"`` aims for.
    """

    def __init__(self, scene, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, dt: float = 1.0 / 60.0,
                 substeps="auto", config=None, device="cpu", gravity=None, damping_ratio: float = 1.0,
                 friction_iterations: int = 4, stability_margin: float = 0.5):
        from ..contact.pipeline import HydroelasticPipeline

        if isinstance(scene, Model):
            model = scene
            scene_gravity = DEFAULT_GRAVITY
        elif isinstance(scene, (str, os.PathLike)):
            from ..scene.usd_io import load_usd, read_gravity

            model = load_usd(scene, num_envs=num_envs, env_spacing=env_spacing)
            scene_gravity = read_gravity(scene)
        else:
            raise ValueError(f"scene must be a USD path or a hydro Model, got {type(scene).__name__}")
        self.model = model
        dt = float(dt)
        if not math.isfinite(dt) or dt <= 0.0:
            raise ValueError(f"dt must be a finite number > 0 (s), got {dt!r}")
        self.dt = dt
        g = np.asarray(scene_gravity if gravity is None else gravity, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity must be 3 finite numbers (m/s²), got {gravity!r}")
        self.gravity = g
        z = float(damping_ratio)
        if not math.isfinite(z) or z < 0.0:
            raise ValueError(f"damping_ratio must be a finite number >= 0, got {damping_ratio!r}")
        self.damping_ratio = z
        if isinstance(friction_iterations, bool) or not isinstance(friction_iterations, int) or friction_iterations < 1:
            raise ValueError(f"friction_iterations must be an integer >= 1, got {friction_iterations!r}")
        self.friction_iterations = friction_iterations
        margin = float(stability_margin)
        if not 0.0 < margin <= 1.0:
            raise ValueError(f"stability_margin must be in (0, 1], got {stability_margin!r}")
        self.pipeline = HydroelasticPipeline(model, config, device=device)
        self._prepare_bodies()
        self.stability = self._choose_substeps(substeps, margin)
        self.substeps = self.stability.substeps
        self.substep_dt = self.dt / self.substeps
        self.state: State = model.state()
        self.step_count = 0
        self.substep_count = 0
        self.last_frame = ContactFrame.empty()
        self.last_result = None
        self._scripts: list[_KinematicScript] = []
        self._sensors = []
        self._warned_unstable = False

    # ------------------------------------------------------------------------------------------
    @property
    def time(self) -> float:
        """s, simulated time: ``step_count · dt`` (counted in integer steps)."""
        return self.step_count * self.dt

    @property
    def physics_dt(self) -> float:
        """s, the physics step (the sensors' sample period)."""
        return self.dt

    @property
    def num_envs(self) -> int:
        return self.model.num_envs

    @property
    def sensors(self) -> list:
        return list(self._sensors)

    def find_bodies(self, pattern: str) -> np.ndarray:
        """Indices of the bodies whose prim path fully matches the regular expression."""
        return self.model.find_bodies(pattern)

    # ------------------------------------------------------------------------------------------
    def _prepare_bodies(self):
        m = self.model
        B = m.body_count
        self.body_inv_mass = np.asarray(m.body_inv_mass, dtype=float)
        self.body_dynamic = self.body_inv_mass > 0.0
        self.body_com_local = np.asarray(m.body_com, dtype=float)
        self.body_inv_inertia_local = np.asarray(m.body_inv_inertia, dtype=float)
        self.body_inertia_local = np.asarray(m.body_inertia, dtype=float)
        self.shape_body = np.asarray(m.shape_body, dtype=np.int64)
        self.body_count = B

    def _choose_substeps(self, substeps, margin) -> StabilityReport:
        m = self.model
        a = critical_step(self.damping_ratio)
        hydro = np.asarray(m.shape_hydroelastic, dtype=bool)
        k = np.asarray(m.shape_stiffness, dtype=float)
        omega2 = 0.0
        for b in np.flatnonzero(self.body_dynamic):
            c_body = 0.0
            for s in np.flatnonzero((self.shape_body == b) & hydro):
                others = hydro.copy()
                others[self.shape_body == b] = False
                if not others.any():
                    continue
                kp = float(k[others].max())
                keff = k[s] * kp / (k[s] + kp)
                lo, hi = m.shape_geometry[s].local_aabb()
                ext = np.sort(np.asarray(hi, float) - np.asarray(lo, float))
                c_body += keff * ext[1] * ext[2]
            omega2 = max(omega2, 4.0 * c_body * self.body_inv_mass[b])
        omega = math.sqrt(omega2)
        h_crit = a / omega if omega > 0.0 else math.inf
        if isinstance(substeps, str):
            if substeps != "auto":
                raise ValueError(f"substeps must be 'auto' or a positive integer, got {substeps!r}")
            n = 1 if omega == 0.0 else max(1, math.ceil(self.dt / (margin * h_crit)))
            return StabilityReport(omega, h_crit, n, True)
        if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1:
            raise ValueError(f"substeps must be 'auto' or a positive integer, got {substeps!r}")
        return StabilityReport(omega, h_crit, int(substeps), False)

    # ------------------------------------------------------------------------------------------
    def set_kinematic_script(self, bodies, script) -> np.ndarray:
        """Drive kinematic ``bodies`` by ``script``; returns their body indices.

        ``bodies``: a regular expression matched against body prim paths, a body index, or a
        sequence of indices or paths; every one must be kinematic. ``script``: a callable
        ``(t) -> poses`` or a keyframe list ``[(t0, poses0), (t1, poses1), ...]`` (times in s,
        strictly increasing; positions interpolated linearly, orientations by slerp; held
        before the first and after the last key). ``poses`` are world poses of the body frames,
        (K, 7) in the order of the returned indices, or (7,) for all of them.
        """
        ids = self._resolve_bodies(bodies)
        kin = np.asarray(self.model.body_kinematic, dtype=bool)
        for b in ids:
            if not kin[b]:
                raise ValueError(f"body {self.model.body_path[b]} is not kinematic, so it cannot follow a script "
                                 f"(mark it physics:kinematicEnabled)")
        taken = {int(b) for s in self._scripts for b in s.bodies}
        for b in ids:
            if int(b) in taken:
                raise ValueError(f"body {self.model.body_path[b]} already follows a kinematic script")
        sc = _KinematicScript(ids, script)
        sc(self.time)  # validate the shape now, not in the middle of a step
        self._scripts.append(sc)
        return ids

    def _resolve_bodies(self, bodies) -> np.ndarray:
        m = self.model
        if isinstance(bodies, str):
            ids = m.find_bodies(bodies)
            if len(ids) == 0:
                raise ValueError(f"no body path matches {bodies!r}")
            return ids.astype(np.int64)
        if isinstance(bodies, (int, np.integer)):
            bodies = [bodies]
        out = []
        for b in bodies:
            if isinstance(b, str):
                if b not in m.body_path:
                    raise ValueError(f"no body has the path {b!r}")
                out.append(m.body_path.index(b))
            else:
                if not 0 <= int(b) < m.body_count:
                    raise ValueError(f"body index {b} is out of range [0, {m.body_count - 1}]")
                out.append(int(b))
        return np.asarray(out, dtype=np.int64)

    # ------------------------------------------------------------------------------------------
    def add_sensor(self, cfg=None, *, sensor_cfg=None):
        """Create and attach the sensor that ``cfg`` (or ``sensor_cfg=``) describes; returns it.

        An Isaac Lab style :class:`hydro.sim.sensors.ContactSensorCfg` gives a
        :class:`hydro.sim.sensors.ContactSensor`; an EmbodiChain style
        :class:`hydro.sim.embodichain.ContactSensorCfg` gives its ``ContactSensor``.
        Sensors update every physics step from then on.
        """
        if (cfg is None) == (sensor_cfg is None):
            raise ValueError("add_sensor takes one configuration: add_sensor(cfg) or add_sensor(sensor_cfg=cfg)")
        cfg = cfg if cfg is not None else sensor_cfg
        make = getattr(cfg, "_make_sensor", None)
        if make is None:
            raise ValueError(f"add_sensor does not know {type(cfg).__name__}: pass a hydro.sim.sensors.ContactSensorCfg "
                             f"or a hydro.sim.embodichain.ContactSensorCfg")
        sensor = make(self)
        self._sensors.append(sensor)
        return sensor

    def contact_data(self, sensor_bodies, filter_bodies, *, max_contact_data_count: int, dt_scale: float = 1.0,
                     points_in_world_space: bool = False):
        """Isaac Sim's packed per-pair contact data (:func:`hydro.sim.contact_data.launch_contact_data`)
        of the last sub-step: sensor i is body ``sensor_bodies[i]``, every sensor has the filters
        ``filter_bodies`` (body indices or paths; −1 is the static world). Forces are normal +
        friction, on the sensor body."""
        from .contact_data import launch_contact_data

        B = self.model.body_count
        sensors = self._resolve_bodies(sensor_bodies)
        filters = [B if (not isinstance(f, str) and int(f) == -1) else int(self._resolve_bodies([f])[0])
                   for f in filter_bodies]
        sensor_map = np.full(B + 1, -1, np.int32)
        sensor_map[sensors] = np.arange(len(sensors))
        filter_map = np.full((len(sensors), B + 1), -1, np.int32)
        for k, f in enumerate(filters):
            filter_map[:, f] = k
        fr = self.last_frame
        return launch_contact_data(self.pipeline.device, contact_count=len(fr), shape0=fr.shape_a, shape1=fr.shape_b,
                                   points=fr.point, normals=fr.normal, forces=fr.normal_force + fr.friction_force,
                                   separations=fr.depth, shape_body=self.model.shape_body, body_q=self.state.body_q,
                                   body_sensor_map=sensor_map, body_filter_map=filter_map, filter_count=len(filters),
                                   world_body_idx=B, dt_scale=dt_scale, max_contact_data_count=max_contact_data_count,
                                   points_in_world_space=points_in_world_space)

    # ------------------------------------------------------------------------------------------
    def reset(self, env_ids=None) -> None:
        """Put the bodies of ``env_ids`` (default: all, and the clock back to 0) back to their
        initial state, and reset every sensor for those envs."""
        m = self.model
        if env_ids is None:
            self.state = m.state()
            self.step_count = 0
            self.substep_count = 0
            envs = np.arange(m.num_envs)
        else:
            envs = np.unique(np.asarray(env_ids, dtype=np.int64).reshape(-1))
            if np.any((envs < 0) | (envs >= m.num_envs)):
                raise ValueError(f"env_ids must be in [0, {m.num_envs - 1}], got {envs.tolist()}")
            sel = np.isin(m.body_env, envs)
            self.state.body_q[sel] = m.body_q0[sel]
            self.state.body_qd[sel] = m.body_qd0[sel]
        f = self.last_frame
        keep = ~np.isin(f.env, envs)
        self.last_frame = ContactFrame(**{k: getattr(f, k)[keep] for k in f.__dataclass_fields__})
        for s in self._sensors:
            s.reset(envs)

    def update(self, step: int = 1) -> None:
        """Advance ``step`` physics steps (EmbodiChain's name for it)."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"step must be an integer >= 0, got {step!r}")
        for _ in range(int(step)):
            self.step()

    def step(self) -> None:
        """Advance one physics step of ``dt`` (``substeps`` solver sub-steps); sensors update."""
        for s in self._sensors:
            s._begin_step()
        w = 1.0 / self.substeps
        for _ in range(self.substeps):
            frame = self._substep()
            for s in self._sensors:
                s._accumulate(frame, w)
        self.step_count += 1
        for s in self._sensors:
            s._end_step()

    # ------------------------------------------------------------------------------------------
    def _kinematic_targets(self, t, h):
        """Set scripted kinematic bodies to their pose at t and the velocity reaching t + h;
        returns (ids, poses at t + h)."""
        if not self._scripts:
            return None
        q = self.state.body_q
        qd = self.state.body_qd
        ids_all, next_all = [], []
        for sc in self._scripts:
            p0 = sc(t)
            p1 = sc(t + h)
            ids = sc.bodies
            com_local = self.body_com_local[ids]
            c0 = p0[:, :3] + quat_rotate(p0[:, 3:], com_local)
            c1 = p1[:, :3] + quat_rotate(p1[:, 3:], com_local)
            q[ids] = p0
            qd[ids, :3] = (c1 - c0) / h
            rel = quat_mul(p1[:, 3:], np.concatenate([-p0[:, 3:6], p0[:, 6:]], axis=1))
            qd[ids, 3:] = _quat_log(rel) / h
            ids_all.append(ids)
            next_all.append(p1)
        return np.concatenate(ids_all), np.concatenate(next_all)

    def _substep(self) -> ContactFrame:
        m = self.model
        h = self.substep_dt
        t = self.substep_count * h
        targets = self._kinematic_targets(t, h)
        B = self.body_count
        q = self.state.body_q
        qd = self.state.body_qd
        rot = quat_to_matrix(q[:, 3:]) if B else np.zeros((0, 3, 3))
        com = q[:, :3] + quat_rotate(q[:, 3:], self.body_com_local) if B else np.zeros((0, 3))
        inv_iw = rot @ self.body_inv_inertia_local @ np.transpose(rot, (0, 2, 1)) if B else np.zeros((0, 3, 3))
        iw = rot @ self.body_inertia_local @ np.transpose(rot, (0, 2, 1)) if B else np.zeros((0, 3, 3))

        result = self.pipeline.collide(m.shape_world_poses(self.state))
        self.last_result = result
        c = result.contacts
        active = (~c.speculative) & (c.depth < 0.0) & (c.stiffness > 0.0)
        idx = np.flatnonzero(active)
        n_pairs = len(result.pair_shape_a)

        # padded per-body arrays: index B is "static" (no motion, no inverse mass)
        inv_m = np.append(self.body_inv_mass, 0.0)
        inv_i = np.concatenate([inv_iw, np.zeros((1, 3, 3))])
        com_p = np.concatenate([com, np.zeros((1, 3))])
        vel = np.concatenate([qd, np.zeros((1, 6))])

        sa = c.shape_a[idx].astype(np.int64)
        sb = c.shape_b[idx].astype(np.int64)
        ba = self.shape_body[sa]
        bb = self.shape_body[sb]
        ia = np.where(ba >= 0, ba, B)
        ib = np.where(bb >= 0, bb, B)
        pair = c.pair[idx].astype(np.int64)
        pts = c.point[idx].astype(float)
        nrm = c.normal[idx].astype(float)
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-30)
        stiff = c.stiffness[idx].astype(float)
        depth = c.depth[idx].astype(float)

        # -- normal force with damping ------------------------------------------------------
        ra = pts - com_p[ia]
        rb = pts - com_p[ib]
        v_rel = (vel[ib, :3] + np.cross(vel[ib, 3:], rb)) - (vel[ia, :3] + np.cross(vel[ia, 3:], ra))
        vn = np.sum(v_rel * nrm, axis=1)
        c_pair = np.bincount(pair, weights=stiff, minlength=n_pairs)
        inv_sum = inv_m[ia] + inv_m[ib]
        m_eff = np.where(inv_sum > 0.0, 1.0 / np.where(inv_sum > 0.0, inv_sum, 1.0), 0.0)
        damp = 2.0 * self.damping_ratio * stiff * np.sqrt(m_eff / np.maximum(c_pair[pair], 1e-300))
        fn = np.maximum(0.0, stiff * (-depth) - damp * vn)
        fvec = fn[:, None] * nrm
        self._check_stability(c_pair, pair, ia, ib, inv_m, h)

        # -- forces and predicted velocities --------------------------------------------------
        nb = B + 1
        force = _rows_sum(ib, fvec, nb) - _rows_sum(ia, fvec, nb)
        torque = _rows_sum(ib, np.cross(rb, fvec), nb) - _rows_sum(ia, np.cross(ra, fvec), nb)
        dyn = np.append(self.body_dynamic, False)
        v_pred = vel.copy()
        if B:
            w = qd[:, 3:]
            gyro = np.cross(w, np.einsum("bij,bj->bi", iw, w))
            lin = self.gravity + force[:B] * self.body_inv_mass[:, None]
            ang = np.einsum("bij,bj->bi", inv_iw, torque[:B] - gyro)
            d = self.body_dynamic
            v_pred[:B][d, :3] += h * lin[d]
            v_pred[:B][d, 3:] += h * ang[d]

        # -- friction -------------------------------------------------------------------------
        friction = np.zeros_like(fvec)
        if len(idx):
            friction = self._friction(pair, n_pairs, fn, nrm, pts, sa, sb, ia, ib, inv_m, inv_i, com_p, v_pred, dyn, h)

        # -- integrate ------------------------------------------------------------------------
        if B:
            d = self.body_dynamic
            qd[d] = v_pred[:B][d]
            com_new = com + h * qd[:, :3]
            dq = _quat_exp(h * qd[:, 3:])
            quat = quat_normalize(quat_mul(dq, q[:, 3:]))
            q[:, 3:] = quat
            q[:, :3] = com_new - quat_rotate(quat, self.body_com_local)
            if targets is not None:
                ids, nxt = targets
                q[ids] = nxt
        self.substep_count += 1

        frame = ContactFrame(point=pts, normal=nrm, depth=depth, normal_force=fvec, friction_force=friction,
                             shape_a=sa.astype(np.int32), shape_b=sb.astype(np.int32), body_a=ba.astype(np.int32),
                             body_b=bb.astype(np.int32), env=c.env[idx].astype(np.int32), pair=pair.astype(np.int32))
        keep = fn > 0.0
        if not keep.all():
            frame = ContactFrame(**{k: getattr(frame, k)[keep] for k in frame.__dataclass_fields__})
        self.last_frame = frame
        return frame

    def _check_stability(self, c_pair, pair, ia, ib, inv_m, h):
        if self._warned_unstable or len(pair) == 0:
            return
        used, first = np.unique(pair, return_index=True)
        pa, pb = ia[first], ib[first]
        w2 = c_pair[used] * (inv_m[pa] + inv_m[pb])
        per_body = np.bincount(pa, weights=w2, minlength=self.body_count + 1) + np.bincount(pb, weights=w2, minlength=self.body_count + 1)
        per_body[self.body_count] = 0.0
        b = int(np.argmax(per_body))
        omega = math.sqrt(per_body[b])
        a = critical_step(self.damping_ratio)
        if h * omega > a:
            self._warned_unstable = True
            need = math.ceil(self.dt * omega / (0.5 * a))
            warnings.warn(f"sub-step {h:.3g} s is too long for the contact stiffness on body {self.model.body_path[b]} "
                          f"(h·ω = {h * omega:.2f} > {a:.2f}): the run may blow up; use substeps >= {need} "
                          f"(or substeps='auto')", RuntimeWarning, stacklevel=3)

    def _friction(self, pair, n_pairs, fn, nrm, pts, sa, sb, ia, ib, inv_m, inv_i, com_p, v_pred, dyn, h):
        m = self.model
        fr = np.asarray(m.shape_friction, dtype=float)
        Fn = np.bincount(pair, weights=fn, minlength=n_pairs)
        live = np.flatnonzero(Fn > 0.0)
        friction = np.zeros((len(fn), 3))
        if len(live) == 0:
            return friction
        first = np.full(n_pairs, -1, np.int64)
        used, at = np.unique(pair, return_index=True)
        first[used] = at
        f0 = first[live]
        A, Bb = ia[f0], ib[f0]
        mobile = (inv_m[A] + inv_m[Bb]) > 0.0
        live, f0, A, Bb = live[mobile], f0[mobile], A[mobile], Bb[mobile]
        if len(live) == 0:
            return friction
        P = len(live)
        slot = np.full(n_pairs, -1, np.int64)
        slot[live] = np.arange(P)
        Fl = Fn[live]
        cop = _rows_sum(pair, fn[:, None] * pts, n_pairs)[live] / Fl[:, None]
        nsum = _rows_sum(pair, fn[:, None] * nrm, n_pairs)[live]
        nn = np.linalg.norm(nsum, axis=1)
        ok = nn > 1e-12 * Fl
        n_p = nsum / np.where(ok, nn, 1.0)[:, None]
        n_p[~ok] = nrm[f0[~ok]]
        t1, t2 = _basis(n_p)
        # contact offsets from the centre of pressure, in the tangent plane
        ci = slot[pair]
        has = ci >= 0
        d = np.zeros_like(pts)
        d[has] = pts[has] - cop[ci[has]]
        d[has] -= np.sum(d[has] * n_p[ci[has]], axis=1, keepdims=True) * n_p[ci[has]]
        dn = np.linalg.norm(d, axis=1)
        rho = np.bincount(ci[has], weights=fn[has] * dn[has], minlength=P) / Fl
        s2 = np.bincount(ci[has], weights=fn[has] * dn[has] ** 2, minlength=P)
        mu_s = 0.5 * (fr[sa[f0], 0] + fr[sb[f0], 0])
        mu_d = 0.5 * (fr[sa[f0], 1] + fr[sb[f0], 1])

        def jac(X):
            r = cop - com_p[X]
            J = np.zeros((P, 3, 6))
            J[:, 0, :3] = t1
            J[:, 0, 3:] = np.cross(r, t1)
            J[:, 1, :3] = t2
            J[:, 1, 3:] = np.cross(r, t2)
            J[:, 2, 3:] = n_p
            W = np.zeros((P, 6, 6))
            W[:, :3, :3] = inv_m[X][:, None, None] * np.eye(3)
            W[:, 3:, 3:] = inv_i[X]
            JW = np.einsum("pij,pjk->pik", J, W)
            return J, JW

        JA, JWA = jac(A)
        JB, JWB = jac(Bb)
        # The pairs' friction impulses λ (3 per pair: two tangents and the spin about the normal)
        # act on the bodies through J; the Delassus matrix D = J·M⁻¹·Jᵀ couples pairs that share a
        # body. Sticking is λ = −D⁻¹·u, u the pairs' slip velocities; a pair beyond its cone
        # slides with μ_d·Fn against the would-be slip and is held there while the rest re-solve.
        # only the bodies these pairs touch enter the system
        used, local = np.unique(np.concatenate([A, Bb]), return_inverse=True)
        la, lb = local[:P], local[P:]
        nu = len(used)
        rows = np.broadcast_to(np.arange(3 * P).reshape(P, 3, 1), (P, 3, 6))
        cols_a = np.broadcast_to((6 * la)[:, None, None] + np.arange(6)[None, None, :], (P, 3, 6))
        cols_b = np.broadcast_to((6 * lb)[:, None, None] + np.arange(6)[None, None, :], (P, 3, 6))
        r_idx = np.concatenate([rows.ravel(), rows.ravel()])
        c_idx = np.concatenate([cols_a.ravel(), cols_b.ravel()])
        j_val = np.concatenate([-JA.ravel(), JB.ravel()])
        wj_val = np.concatenate([-JWA.ravel(), JWB.ravel()])
        if 3 * P <= DENSE_FRICTION_MAX:
            J = np.zeros((3 * P, 6 * nu))
            WJt = np.zeros((3 * P, 6 * nu))
            np.add.at(J, (r_idx, c_idx), j_val)
            np.add.at(WJt, (r_idx, c_idx), wj_val)
            WJt = WJt.T  # M⁻¹·Jᵀ
            D = J @ WJt
            D[np.arange(2, 3 * P, 3), np.arange(2, 3 * P, 3)] += 1e-12 * (D.diagonal().max() or 1.0)
        else:
            J = sparse.csr_matrix((j_val, (r_idx, c_idx)), shape=(3 * P, 6 * nu))
            WJt = sparse.csr_matrix((wj_val, (r_idx, c_idx)), shape=(3 * P, 6 * nu)).T.tocsr()
            D = (J @ WJt).tocsc()
            # a point contact has no spin resistance: keep its spin row solvable
            D = D + sparse.diags(np.tile([0.0, 0.0, 1e-12], P) * (D.diagonal().max() or 1.0))
        v_used = v_pred[used]
        u = J @ v_used.ravel()
        lim_t = mu_s * Fl * h
        lim_s = mu_s * Fl * rho * h
        lam = np.zeros(3 * P)
        fixed = np.zeros((P, 3), dtype=bool)
        for _ in range(self.friction_iterations):
            free = np.flatnonzero(~fixed.ravel())
            if len(free) == 0:
                break
            rhs = -u[free]
            held = np.flatnonzero(fixed.ravel())
            if len(held):
                rhs = rhs - D[free][:, held] @ lam[held]
            lam[free] = _solve_sym(D[free][:, free], rhs)
            lt = lam.reshape(P, 3)
            tmag = np.linalg.norm(lt[:, :2], axis=1)
            slide = ~fixed[:, 0] & (tmag > lim_t)
            spin = ~fixed[:, 2] & (np.abs(lt[:, 2]) > lim_s)
            if not slide.any() and not spin.any():
                break
            lt[slide, :2] *= (mu_d[slide] * Fl[slide] * h / tmag[slide])[:, None]
            lt[spin, 2] = np.sign(lt[spin, 2]) * mu_d[spin] * Fl[spin] * rho[spin] * h
            fixed[slide, :2] = True
            fixed[spin, 2] = True
        lam = lam.reshape(P, 3)
        moved = used[dyn[used]]
        v_pred[moved] = (v_used + (WJt @ lam.ravel()).reshape(nu, 6))[dyn[used]]
        # share each pair's friction among its contacts (force ∝ fn, plus the torsional part)
        Ft = (lam[:, 0:1] * t1 + lam[:, 1:2] * t2) / h
        Mn = lam[:, 2] / h
        friction[has] = (fn[has] / Fl[ci[has]])[:, None] * Ft[ci[has]]
        tors = has & (s2[np.maximum(ci, 0)] > 0.0)
        k = ci[tors]
        friction[tors] += (Mn[k] * fn[tors] / s2[k])[:, None] * np.cross(n_p[k], d[tors])
        return friction


def actor_table(model):
    """Actors: the bodies (ids 0 … B−1) then the static shapes (ids B, B+1, …), each a thing a
    contact can push. Returns ``(paths, envs, actor_of_shape)``: the actor's prim path, its env
    (−1 for a global static shape) and, per shape, the actor it belongs to."""
    B = model.body_count
    shape_body = np.asarray(model.shape_body, dtype=np.int64)
    static = np.flatnonzero(shape_body < 0)
    actor_of_shape = shape_body.copy()
    actor_of_shape[static] = B + np.arange(len(static))
    paths = list(model.body_path) + [model.shape_path[s] for s in static]
    envs = np.concatenate([np.asarray(model.body_env, dtype=np.int64),
                           np.asarray(model.shape_env, dtype=np.int64)[static]])
    return paths, envs, actor_of_shape


def env_namespace(model) -> str:
    """The regular expression ``{ENV_REGEX_NS}`` stands for in this model's paths."""
    under = any(p.startswith(ENVS_ROOT + "/") for p in model.body_path + model.shape_path)
    return ENVS_ROOT + r"/env_\d+" if under else "/World"


def expand_expr(expr: str, model) -> re.Pattern:
    """Compile a prim path expression: ``{ENV_REGEX_NS}`` → the env namespace, then a regex."""
    if not isinstance(expr, str) or not expr:
        raise ValueError(f"a prim path expression must be a non-empty string, got {expr!r}")
    text = expr.replace("{ENV_REGEX_NS}", env_namespace(model))
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"prim path expression {expr!r} is not a valid regular expression: {exc}") from None
