"""A small penalty solver for experiments: rigid bodies stepped through hydroelastic and point contact.

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
       list, see :meth:`Simulation.set_kinematic_script` and :mod:`hydro.sim.kinematics`) with
       the velocity that reaches the pose at t + h; unscripted kinematic bodies move with their
       constant velocity.
    2. The collision pipeline (one :class:`~hydro.contact.collision.CollisionPipeline`, reused)
       collides the shapes at their current poses: hydroelastic contacts for the pairs whose
       shapes both opt in (``HydroelasticConfig.enabled``), point contacts for every other pair.
    3. Normal force per contact, only for penetrating, non-speculative contacts (depth d < 0):
       ``fn = max(0, c·|d| − b·v_n)`` with c the contact's stiffness (N/m: a hydroelastic
       contact's ``area·k_eff``, a point contact's material stiffness, the two shapes' springs in
       series), v_n the normal relative velocity at the contact (B relative to A) and the
       damping b: a point contact whose material authors ``newton:contactDamping`` takes that
       (N·s/m, in series when both shapes author it; v_n along its normal from A to B); every
       other contact gets the damping that gives its pair the damping ratio ζ (``damping_ratio``,
       default 1: critically damped, no bounce): ``b = 2ζ·c·sqrt(m_eff / C)``, C = Σ c over the
       pair's contacts, m_eff = 1 / (1/m_A + 1/m_B) (static and kinematic bodies have 1/m = 0),
       with v_n along the pair's mean normal (Σ c·n, normalised) — the pair's approach, so the
       tilted contacts of a patch's rim band do not brake a body that slides. The force on B is
       ``fn·n``, on A its opposite.
    4. Velocities are predicted with gravity and the normal forces (world-frame inertia
       R·I·Rᵀ, gyroscopic term included).
    5. Friction, per shape pair, Coulomb, solved implicitly at the velocity level for all pairs
       together (:mod:`hydro.sim.friction`); it is shared among the pair's contacts, so
       per-contact normal and friction forces are both kept.
    6. Positions: the centre of mass moves by h·v, the orientation by the exact rotation of
       h·ω (quaternion exponential).

Stable sub-step (``substeps="auto"``)
    Hydroelastic contact is stiff: with C the contact stiffness a body feels and m its mass,
    ω = sqrt(C/m) and semi-implicit Euler with damping ratio ζ is stable only for
    ``h·ω < a(ζ) = min(1/ζ, 2(sqrt(ζ²+1) − ζ))`` (2 undamped, 0.83 at ζ = 1). ``"auto"`` bounds
    C per dynamic body before any contact exists: ``C_b = Σ_shapes k_eff·A``, A the largest face
    of the shape's bounding box, k_eff = k·k_p/(k + k_p) against the stiffest other
    hydroelastic shape, times 4 (contact on opposite faces, and a dynamic partner moving
    against it), plus for point contacts ``8·k_eff`` per shape (its material stiffness in
    series with the stiffest shape it makes point contacts with: a face of 4 points, twice), and
    picks ``substeps = ceil(dt·ω_max / (stability_margin·a(ζ)))``. Every
    sub-step also measures the stiffness its contacts actually have and warns (once) when
    ``h·ω`` exceeds ``a(ζ)``, naming the body and the sub-step count needed, instead of letting
    the run explode. :attr:`Simulation.stability` reports the bound and the choice.

Runtime configuration
    ``config=None`` follows the active configuration (:func:`hydro.contact.config.configure_newton`):
    a ``configure_newton`` call after the simulation was made — before the first step or
    mid-run — takes effect at the next step (the collision pipeline is rebuilt with the new
    routing and capacities; bodies, sensors and the clock are untouched; ``substeps`` stays as
    chosen). A ``config`` given to the constructor is fixed for the simulation's life.

Sensors
    ``add_sensor`` registers a sensor; after every physics step the simulation hands it the
    step's contacts, the state, the step index and dt (``on_step``, :mod:`hydro.sim.sensing`),
    and ``reset`` resets it with the envs. A sensor never reads the simulation back.

(A little over 500 lines: the sub-step is one function on purpose, so the force law, friction
and integration read in order; friction and kinematics already live in their own modules.)
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..arguments import float_array, number
from ..budget import check_substeps
from ..contact.types import CONTACT_POINT
from ..errors import InputError
from ..scene.material import MAT_CONTACT_STIFFNESS
from ..scene.model import DEFAULT_ENV_SPACING, Model, State
from ..transforms import quat_mul, quat_normalize, quat_rotate, quat_to_matrix
from .departure import DepartureWatch
from .friction import solve_friction
from .kinematics import KinematicScript, kinematic_targets, quat_exp
from .sensing import ContactFrame, rows_sum

__all__ = ["Simulation", "ContactFrame", "StabilityReport", "critical_step"]

#: m/s², gravity of a scene that does not say (a Model built in Python).
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def critical_step(damping_ratio: float) -> float:
    """a(ζ): semi-implicit Euler on x'' = −ω²x − 2ζωx' is stable for h·ω < a(ζ)."""
    z = float(damping_ratio)
    if z <= 0.0:
        return 2.0
    return min(1.0 / z, 2.0 * (math.sqrt(z * z + 1.0) - z))


@dataclass
class StabilityReport:
    """How ``substeps`` was chosen: ``omega_bound`` (rad/s) is the largest contact frequency
    the model can reach, ``critical_h`` (s) the largest stable sub-step, ``substeps`` the count
    used, ``auto`` whether it was chosen automatically."""

    omega_bound: float
    critical_h: float
    substeps: int
    auto: bool


class Simulation:
    """Rigid bodies stepped through hydroelastic and point contact (see the module docstring).

    ``scene``: a USD path (loaded with ``num_envs``/``env_spacing``; gravity read from its
    ``PhysicsScene``) or a :class:`~hydro.scene.model.Model` (gravity ``DEFAULT_GRAVITY`` unless
    given). ``dt`` (s): the physics step. ``substeps``: ``"auto"`` or a positive integer.
    ``config``: a ``NewtonConfig``, ``CollisionConfig`` or ``HydroelasticConfig`` (default: follow
    the active one, see "Runtime configuration"). ``damping_ratio`` ζ of the normal contact damping; ``friction_iterations``
    the active-set rounds of the friction solve; ``stability_margin`` the fraction of the critical
    sub-step ``"auto"`` aims for.
    """

    def __init__(self, scene, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, dt: float = 1.0 / 60.0,
                 substeps="auto", config=None, device="cpu", gravity=None, damping_ratio: float = 1.0,
                 friction_iterations: int = 4, stability_margin: float = 0.5):
        if isinstance(scene, Model):
            model = scene
            scene_gravity = DEFAULT_GRAVITY
        elif isinstance(scene, (str, os.PathLike)):
            from ..scene.usd_io import load_usd, read_gravity

            model = load_usd(scene, num_envs=num_envs, env_spacing=env_spacing)
            scene_gravity = read_gravity(scene)
        else:
            raise InputError(f"scene must be a USD path or a hydro Model, got {type(scene).__name__}")
        self.model = model
        self.dt = dt = number(dt, "dt", exclusive_minimum=0.0, unit="s")
        g = float_array(scene_gravity if gravity is None else gravity, "gravity").reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise InputError(f"gravity must be 3 finite numbers (m/s²), got {gravity!r}")
        self.gravity = g
        self.damping_ratio = number(damping_ratio, "damping_ratio", minimum=0.0)
        if isinstance(friction_iterations, bool) or not isinstance(friction_iterations, int) or friction_iterations < 1:
            raise InputError(f"friction_iterations must be an integer >= 1, got {friction_iterations!r}")
        self.friction_iterations = friction_iterations
        margin = number(stability_margin, "stability_margin", exclusive_minimum=0.0, maximum=1.0)
        self._config_arg = config
        self._device_arg = device
        self._active_seen = None
        self.pipeline = self._make_pipeline()
        self._prepare_bodies()
        self.stability = self._choose_substeps(substeps, margin)
        self.substeps = self.stability.substeps
        self.substep_dt = self.dt / self.substeps
        self.state: State = model.state()
        self.step_count = 0
        self.substep_count = 0
        self.last_frame = ContactFrame.empty()
        self.last_result = None
        self._scripts: list[KinematicScript] = []
        self._sensors = []
        self._warned_unstable = False
        #: warn when bodies leave the ground or the scene while stepping (:mod:`hydro.sim.departure`)
        self.watch_departures = True
        self._departures = DepartureWatch(model, self.gravity)

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
    def device(self) -> str:
        """Where the contact pipeline runs and sensors put their torch tensors: ``"cpu"`` or
        ``"cuda:0"`` (a string torch accepts as a device)."""
        return "cuda:0" if self.pipeline.device.is_cuda else "cpu"

    @property
    def sensors(self) -> list:
        return list(self._sensors)

    def find_bodies(self, pattern: str) -> np.ndarray:
        """Indices of the bodies whose prim path fully matches the regular expression."""
        return self.model.find_bodies(pattern)

    def _make_pipeline(self):
        from ..contact.collision import CollisionPipeline
        from ..contact.config import active_config

        config = self._config_arg
        if config is None:
            config = self._active_seen = active_config()
        return CollisionPipeline(self.model, config, device=self._device_arg)

    def _follow_active_config(self):
        """Rebuild the pipeline when ``configure_newton`` changed the active configuration."""
        from ..contact.config import active_config

        if self._config_arg is None and active_config() is not self._active_seen:
            self.pipeline = self._make_pipeline()

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
        # point contacts: every collision-enabled shape with the others but its hydroelastic pairs
        from ..contact.point_pipeline import hydroelastic_routed

        point_shapes = np.asarray(m.shape_collision_enabled, dtype=bool)
        routed = hydroelastic_routed(m, self.pipeline.config)
        k_point = np.asarray(m.shape_material, dtype=float)[:, MAT_CONTACT_STIFFNESS]
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
            c_point = 0.0
            for s in np.flatnonzero((self.shape_body == b) & point_shapes):
                others = point_shapes.copy()
                others[self.shape_body == b] = False
                if routed[s]:
                    others &= ~routed  # its pairs with hydroelastic shapes are hydroelastic
                if not others.any():
                    continue
                kp = float(k_point[others].max())
                c_point += 8.0 * k_point[s] * kp / (k_point[s] + kp)
            omega2 = max(omega2, (4.0 * c_body + c_point) * self.body_inv_mass[b])
        omega = math.sqrt(omega2)
        h_crit = a / omega if omega > 0.0 else math.inf
        if isinstance(substeps, str):
            if substeps != "auto":
                raise InputError(f"substeps must be 'auto' or a positive integer, got {substeps!r}")
            n = 1 if omega == 0.0 else max(1, math.ceil(self.dt / (margin * h_crit)))
            return StabilityReport(omega, h_crit, check_substeps(n, dt=self.dt, critical_step=margin * h_crit), True)
        if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1:
            raise InputError(f"substeps must be 'auto' or a positive integer, got {substeps!r}")
        return StabilityReport(omega, h_crit, check_substeps(int(substeps), dt=self.dt, auto=False), False)

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
        sc = KinematicScript(ids, script)
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
        Sensors receive every physics step from then on (``on_step``, :mod:`hydro.sim.sensing`).
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
        """Packed per-pair contact data (:func:`hydro.sim.contact_data_packed.pack_contact_data`)
        of the last sub-step: sensor i is body ``sensor_bodies[i]``, every sensor has the filters
        ``filter_bodies`` (body indices or paths; −1 is the static world). Forces are normal +
        friction, on the sensor body."""
        from .contact_data_packed import pack_contact_data

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
        return pack_contact_data(self.pipeline.device, contact_count=len(fr), shape0=fr.shape_a, shape1=fr.shape_b,
                                 points=fr.point, normals=fr.normal, forces=fr.normal_force + fr.friction_force,
                                 separations=fr.depth, shape_body=self.model.shape_body, body_q=self.state.body_q,
                                 body_sensor_map=sensor_map, body_filter_map=filter_map, filter_count=len(filters),
                                 world_body_idx=B, dt_scale=dt_scale, max_contact_data_count=max_contact_data_count,
                                 points_in_world_space=points_in_world_space)

    # ------------------------------------------------------------------------------------------
    def reset(self, env_ids=None) -> None:
        """Put the bodies of ``env_ids`` (default: all, and the clock back to 0) back to their
        initial state (in place: ``state`` stays the same object), and reset every sensor for
        those envs."""
        m = self.model
        if env_ids is None:
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
        self.last_frame = self.last_frame.without_envs(envs)
        for s in self._sensors:
            s.reset(envs)

    def update(self, step: int = 1) -> None:
        """Advance ``step`` physics steps (EmbodiChain's name for it)."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"step must be an integer >= 0, got {step!r}")
        for _ in range(int(step)):
            self.step()

    def step(self) -> None:
        """Advance one physics step of ``dt`` (``substeps`` solver sub-steps), then hand every
        sensor the step's contacts (:mod:`hydro.sim.sensing`)."""
        self._follow_active_config()
        frames = tuple(self._substep() for _ in range(self.substeps))
        self.step_count += 1
        for s in self._sensors:
            s.on_step(frames, self.state, self.step_count, self.dt)
        self._departures.check(self)  # bodies that left the ground or the scene: warned once (departure.py)

    # ------------------------------------------------------------------------------------------
    def _substep(self) -> ContactFrame:
        m = self.model
        h = self.substep_dt
        t = self.substep_count * h
        targets = kinematic_targets(self._scripts, self.state, self.body_com_local, t, h)
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
        authored = c.damping[idx].astype(float)  # point contacts' material damping (NaN: not authored)
        own = (c.kind[idx] == CONTACT_POINT) & np.isfinite(authored)
        damp[own] = authored[own]
        # the damping ratio is the pair's: its approach speed along the pair's mean normal, so
        # a patch's tilted rim contacts do not brake a sliding body
        n_pair = rows_sum(pair, stiff[:, None] * nrm, n_pairs)
        n_pair /= np.maximum(np.linalg.norm(n_pair, axis=1, keepdims=True), 1e-300)
        vn = np.where(own, vn, np.sum(v_rel * n_pair[pair], axis=1))
        fn = np.maximum(0.0, stiff * (-depth) - damp * vn)
        fvec = fn[:, None] * nrm
        self._check_stability(c_pair, pair, ia, ib, inv_m, h)

        # -- forces and predicted velocities --------------------------------------------------
        nb = B + 1
        force = rows_sum(ib, fvec, nb) - rows_sum(ia, fvec, nb)
        torque = rows_sum(ib, np.cross(rb, fvec), nb) - rows_sum(ia, np.cross(ra, fvec), nb)
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
            friction = solve_friction(pair=pair, pair_count=n_pairs, fn=fn, normal=nrm, point=pts, shape_a=sa,
                                      shape_b=sb, body_a=ia, body_b=ib, inv_mass=inv_m, inv_inertia=inv_i, com=com_p,
                                      velocity=v_pred, dynamic=dyn, h=h, shape_friction=m.shape_friction,
                                      iterations=self.friction_iterations)

        # -- integrate ------------------------------------------------------------------------
        if B:
            d = self.body_dynamic
            qd[d] = v_pred[:B][d]
            com_new = com + h * qd[:, :3]
            dq = quat_exp(h * qd[:, 3:])
            quat = quat_normalize(quat_mul(dq, q[:, 3:]))
            q[:, 3:] = quat
            q[:, :3] = com_new - quat_rotate(quat, self.body_com_local)
            if targets is not None:
                ids, nxt = targets
                q[ids] = nxt
        self.substep_count += 1

        frame = ContactFrame(point=pts, normal=nrm, depth=depth, normal_force=fvec, friction_force=friction,
                             shape_a=sa.astype(np.int32), shape_b=sb.astype(np.int32), body_a=ba.astype(np.int32),
                             body_b=bb.astype(np.int32), env=c.env[idx].astype(np.int32), pair=pair.astype(np.int32),
                             kind=c.kind[idx].astype(np.int32))
        keep = fn > 0.0
        if not keep.all():
            frame = frame.take(keep)
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
