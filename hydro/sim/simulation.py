"""A small solver for experiments: rigid bodies stepped through hydroelastic and point contact.

:class:`Simulation` loads a scene (a USD path or a :class:`~hydro.scene.model.Model`), calls the
contact pipeline once per step and moves the bodies. It is meant for reading forces the way a
robot-learning simulator reports them (``hydro.sim.sensors``, ``hydro.sim.embodichain``) and for
scripted experiments (kinematic scripts, :meth:`Simulation.apply_force`, PD targets), not as a
product of its own.

Two solvers (``solver=``)
    ``"implicit"`` (default): one convex problem over the bodies' velocities per physics step,
    solved by Newton's method in compiled code (:mod:`hydro.sim.implicit`, where the model is
    written out): regularised compliant contact per contact (c = the contact's stiffness, its
    depth, normal and point), the spring taken at the end of the step and a Kelvin–Voigt damper,
    Coulomb friction per contact (each contact's friction opposes its own slip). It is stable at
    any step for any stiffness, so ``substeps="auto"`` is 1: a 1–16 ms step needs no sub-steps
    at hydro's shipped stiffnesses. ``"explicit"``: the penalty solver below, kept for comparison:
    forces from the start of each sub-step, as many sub-steps as the stiffness needs.

Time
    ``dt`` is the physics step: sensors sample once per physics step. Each step is split into
    ``substeps`` solver sub-steps of ``h = dt / substeps`` (the implicit solver: 1 unless given);
    the clock counts steps in integers (``sim.time = step_count · dt``), so nothing drifts after
    long runs.

One implicit step
    1. Kinematic bodies take their scripted pose (below); the shapes' world poses are composed
       in compiled code and the pipeline collides them (one call).
    2. :func:`hydro.sim.implicit.implicit_step`: per contact with stiffness c > 0 the impulse
       γn = h·c·max(0, x − (h + τ)·vn) (x the overlap, vn the normal velocity at the end of the
       step, τ = b/c the damping time: a point contact's authored ``contactDamping`` b, else the
       pair's damping ratio ζ: τ = 2ζ·sqrt(m_eff/C), C = Σ c of the pair) and friction within
       μ·γn (μ the mean of the two shapes' dynamic coefficients), sticking within a tiny
       regularisation (``friction_regularization``); contacts within 45° of their pair's mean
       normal act along it (the rim band of a flat patch does not brake or spin a sliding body),
       a sphere's or capsule's normal force acts through its centre or axis (no rolling
       resistance from the linearisation); external forces, gravity, gyroscopic torque and the
       PD drives enter the same problem. Newton iterations until the momentum balance holds to
       ``newton_tolerance``; then positions (centre of mass by h·v, orientation by the exact
       rotation of h·ω). :attr:`Simulation.solver_stats` reports the iterations.
    3. The contacts that carried force become the step's :class:`ContactFrame` (normal force
       along the normal the solver used, friction tangential to the pair) and go to the sensors.

New contacts (implicit solver)
    Hydroelastic contact starts at touch, so a falling body is found already overlapping by up
    to its speed times dt. A pair that carried no force the step before does not push that
    overlap back at once (that would throw the body off: a bounce): the deepest overlap it is
    found with, plus what it still gains while the impact is stopped (faster than
    ``IMPACT_SPEED``), is released over ``recovery_time`` (default 20 ms; 0 turns this off). The
    contacts' damping stops the approach meanwhile, so a dropped body comes to rest without
    rebounding (tested at dt = 1 ms and 1/60 s, k = 1e10). The poses a simulation starts or is
    reset with are meant as they are: their overlaps push from the first step.

Control inputs
    :meth:`Simulation.apply_force` (force, torque, point; one step or persistent, one row per
    body or env), :meth:`Simulation.set_pd_target` (implicit PD drives toward a pose, per axis),
    :meth:`Simulation.set_kinematic_script` (scripted poses of kinematic bodies).

One explicit sub-step (``solver="explicit"``)
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

Stable sub-step (explicit solver, ``substeps="auto"``)
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

(The explicit sub-step is one function on purpose, so the force law, friction and integration
read in order; the implicit solver, friction and kinematics live in their own modules.)
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..arguments import env_ids as checked_env_ids
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
from .implicit import (LEVER_CAPSULE, LEVER_SPHERE, STAT_FIELDS, implicit_step, pair_offsets, shape_world_poses,
                       touching_pairs)
from .sensing import ContactFrame, rows_sum

#: m/s: a new contact whose overlap still grows faster than this is an impact being stopped
#: (module docstring, "New contacts").
IMPACT_SPEED = 0.01

#: The solvers :class:`Simulation` offers (module docstring).
SOLVERS = ("implicit", "explicit")

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
    the active one, see "Runtime configuration"). ``solver``: ``"implicit"`` (default) or
    ``"explicit"`` (module docstring). ``damping_ratio`` ζ of the normal contact damping (1:
    critically damped). Implicit solver: ``friction_regularization`` σ (a sticking contact
    creeps at most σ·w·γt, w its Delassus diagonal), ``newton_tolerance`` and
    ``newton_iterations``, ``recovery_time`` (s, "New contacts"). Explicit solver:
    ``friction_iterations`` the active-set rounds of the friction solve; ``stability_margin``
    the fraction of the critical sub-step ``"auto"`` aims for.
    """

    def __init__(self, scene, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, dt: float = 1.0 / 60.0,
                 substeps="auto", config=None, device="cpu", gravity=None, damping_ratio: float = 1.0,
                 friction_iterations: int = 4, stability_margin: float = 0.5, solver: str = "implicit",
                 friction_regularization: float = 1e-5, newton_tolerance: float = 1e-8, newton_iterations: int = 50,
                 recovery_time: float = 0.02):
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
        if solver not in SOLVERS:
            raise InputError(f"solver must be one of {', '.join(repr(x) for x in SOLVERS)}, got {solver!r}")
        self.solver = solver
        self.friction_regularization = number(friction_regularization, "friction_regularization",
                                              exclusive_minimum=0.0)
        self.newton_tolerance = number(newton_tolerance, "newton_tolerance", exclusive_minimum=0.0)
        if isinstance(newton_iterations, bool) or not isinstance(newton_iterations, (int, np.integer)) \
                or newton_iterations < 1:
            raise InputError(f"newton_iterations must be an integer >= 1, got {newton_iterations!r}")
        self.newton_iterations = int(newton_iterations)
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
        self.last_step_frames: tuple = ()  # the last physics step's sub-step frames (rigid_contacts)
        self.last_result = None
        self._scripts: list[KinematicScript] = []
        self._sensors = []
        self._warned_unstable = False
        B = self.body_count
        self._force_persistent = np.zeros((B, 6))
        self._force_once = np.zeros((B, 6))
        self._point_forces = []  # (body ids, forces (K,3), body-frame points (K,3), persistent)
        self._pd_kp = np.zeros((B, 6))
        self._pd_kd = np.zeros((B, 6))
        self._pd_pose = np.zeros((B, 7))
        self._pd_pose[:, 6] = 1.0
        self._pd_vel = np.zeros((B, 6))
        self.solver_stats = dict.fromkeys(STAT_FIELDS, 0)
        self._warned_newton = False
        self._buffers = None
        self.recovery_time = number(recovery_time, "recovery_time", minimum=0.0, unit="s")
        self._touching = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
        self._authored_envs = np.arange(-1, model.num_envs)
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
        self.body_inertia_local_c = np.ascontiguousarray(self.body_inertia_local.reshape(B, 3, 3))
        # where each shape's normal force acts (implicit solver): a sphere's centre, a capsule's axis
        from ..geometry.shapes import Capsule, Sphere

        S = m.shape_count
        self.shape_lever = np.zeros(S, np.int64)
        self.shape_lever_pts = np.zeros((S, 2, 3))
        for s in range(S):
            g = m.shape_geometry[s]
            if self.shape_body[s] < 0 or not isinstance(g, (Sphere, Capsule)):
                continue
            pose = np.asarray(m.shape_local_pose[s], dtype=float)
            if isinstance(g, Sphere):
                self.shape_lever[s] = LEVER_SPHERE
                self.shape_lever_pts[s, 0] = pose[:3]
            else:
                self.shape_lever[s] = LEVER_CAPSULE
                for i, z in enumerate((-0.5 * g.height, 0.5 * g.height)):
                    self.shape_lever_pts[s, i] = pose[:3] + quat_rotate(pose[3:], np.array([0.0, 0.0, z]))
        self.shape_mu = np.ascontiguousarray(np.asarray(m.shape_friction, dtype=float)[:, 1])
        self._shape_local_pose = np.ascontiguousarray(m.shape_local_pose, dtype=float)
        self._shape_poses = np.empty((S, 7))

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
            if self.solver == "implicit":  # stable at any step: one solve per physics step
                return StabilityReport(omega, h_crit, 1, True)
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

    def rigid_contacts(self, rigid_contact_max: int | None = None):
        """The last physics step's contacts in Newton's layout (:class:`~hydro.contact.types.RigidContacts`),
        ``rigid_contact_force`` filled: world, on shape 0, normal + friction, each sub-step's rows
        with its force divided by the sub-step count, so a body's forces add up to the step's mean
        force, as the Isaac Lab sensor reports it (:mod:`hydro.sim.rigid_step`). Points are in
        the frame of each shape's body at ``state.body_q``. Read it with
        :func:`hydro.sim.contact_data.launch_contact_data` (or ``rigid_contact_data``)."""
        from .rigid_step import step_rigid_contacts

        return step_rigid_contacts(self.last_step_frames, self.model, self.state.body_q,
                                   rigid_contact_max=rigid_contact_max)

    def contact_data(self, sensor_bodies, filter_bodies, *, max_contact_data_count: int, dt_scale: float = 1.0,
                     points_in_world_space: bool = False):
        """Per (sensor, filter) pair contact data of the last physics step, the documented
        ``launchContactData`` on :meth:`rigid_contacts` (:func:`hydro.sim.contact_data.rigid_contact_data`,
        a :class:`~hydro.sim.contact_data.PairContactData`, arrays (S,F,M,...)): sensor i is body
        ``sensor_bodies[i]``, every sensor has the filters ``filter_bodies`` (body indices or
        paths; −1 is the static world). Forces are normal + friction on the sensor body, the
        step's mean (times ``dt_scale``)."""
        from .contact_data import rigid_contact_data

        B = self.model.body_count
        sensors = self._resolve_bodies(sensor_bodies)
        filters = [B if (not isinstance(f, str) and int(f) == -1) else int(self._resolve_bodies([f])[0])
                   for f in filter_bodies]
        sensor_map = np.full(B + 1, -1, np.int32)
        sensor_map[sensors] = np.arange(len(sensors))
        filter_map = np.full((len(sensors), B + 1), -1, np.int32)
        for k, f in enumerate(filters):
            filter_map[:, f] = k
        return rigid_contact_data(self.rigid_contacts(), shape_body=self.model.shape_body, body_q=self.state.body_q,
                                  body_sensor_map=sensor_map, body_filter_map=filter_map, filter_count=len(filters),
                                  world_body_idx=B, num_bodies=B + 1, dt_scale=dt_scale,
                                  max_contact_data_count=max_contact_data_count,
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
            envs = checked_env_ids(env_ids, "env_ids", m.num_envs)  # 0.5 is refused, not env 0
        sel = np.isin(m.body_env, envs)
        self.state.body_q[sel] = m.body_q0[sel]
        self.state.body_qd[sel] = m.body_qd0[sel]
        self.last_frame = self.last_frame.without_envs(envs)
        self.last_step_frames = tuple(f.without_envs(envs) for f in self.last_step_frames)
        self._authored_envs = np.union1d(envs, [-1]) if self._authored_envs is None else \
            np.union1d(self._authored_envs, envs)
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
        sub = self._substep_implicit if self.solver == "implicit" else self._substep
        frames = tuple(sub() for _ in range(self.substeps))
        self.last_step_frames = frames
        self._force_once[:] = 0.0
        self._point_forces = [f for f in self._point_forces if f[3]]
        self.step_count += 1
        for s in self._sensors:
            s.on_step(frames, self.state, self.step_count, self.dt)
        self._departures.check(self)  # bodies that left the ground or the scene: warned once (departure.py)

    # ------------------------------------------------------------------------------------------
    def apply_force(self, bodies, force=None, torque=None, point=None, *, persistent: bool = False) -> np.ndarray:
        """Push dynamic ``bodies`` with an external ``force`` (N, world) and ``torque`` (N·m, world,
        about the centre of mass); returns their body indices.

        ``bodies``: a regular expression on body paths (e.g. one body per env with
        ``{ENV_REGEX_NS}``-style patterns already expanded, or ``"/World/envs/env_.*/Box"``), an
        index or a sequence of indices/paths: K bodies. ``force``/``torque``: (3,) for all of them
        or (K,3), one row per body (env-batched). ``point``: where the force acts, world, (3,) or
        (K,3) — then the force also turns the body by (point − centre of mass) × force; the point
        is fixed to the body (it moves and turns with it while the force lasts).

        Lifetime: by default the push acts during the next physics step only (call it every
        step from a controller); ``persistent=True`` keeps it, step after step, until
        :meth:`clear_forces`. Pushes add up.
        """
        ids = self._resolve_bodies(bodies)
        dyn = self.body_dynamic[ids]
        if not dyn.all():
            raise InputError(f"apply_force: body {self.model.body_path[ids[~dyn][0]]} is not dynamic (kinematic or "
                             f"massless bodies are moved by scripts, not forces)")
        K = len(ids)

        def rows(x, name):
            if x is None:
                return np.zeros((K, 3))
            a = float_array(x, name)
            if a.shape == (3,):
                a = np.broadcast_to(a, (K, 3))
            if a.shape != (K, 3) or not np.all(np.isfinite(a)):
                raise InputError(f"apply_force: {name} must be 3 finite numbers or ({K}, 3) rows, one per body, "
                                 f"got shape {np.shape(x)}")
            return np.array(a, dtype=float)

        f = rows(force, "force")
        t = rows(torque, "torque")
        target = self._force_persistent if persistent else self._force_once
        if point is not None:
            p = rows(point, "point")
            q = self.state.body_q[ids]
            local = quat_rotate(np.concatenate([-q[:, 3:6], q[:, 6:]], axis=1), p - q[:, :3])
            self._point_forces.append((ids, f, local, bool(persistent)))
        else:
            np.add.at(target, ids, np.concatenate([f, np.zeros((K, 3))], axis=1))
        np.add.at(target, ids, np.concatenate([np.zeros((K, 3)), t], axis=1))
        return ids

    def clear_forces(self, bodies=None) -> None:
        """Drop the pushes of :meth:`apply_force` (persistent ones too) on ``bodies`` (default all)."""
        if bodies is None:
            self._force_persistent[:] = 0.0
            self._force_once[:] = 0.0
            self._point_forces = []
            return
        ids = self._resolve_bodies(bodies)
        self._force_persistent[ids] = 0.0
        self._force_once[ids] = 0.0
        kept = []
        for b, f, loc, per in self._point_forces:
            keep = ~np.isin(b, ids)
            if keep.any():
                kept.append((b[keep], f[keep], loc[keep], per))
        self._point_forces = kept

    def _external_forces(self) -> np.ndarray:
        """(B,6) force and torque about the centre of mass of every push this step."""
        f = self._force_persistent + self._force_once
        if self._point_forces:
            q = self.state.body_q
            com = q[:, :3] + quat_rotate(q[:, 3:], self.body_com_local)
            for ids, force, local, _ in self._point_forces:
                p = q[ids, :3] + quat_rotate(q[ids, 3:], local)
                np.add.at(f, ids, np.concatenate([force, np.cross(p - com[ids], force)], axis=1))
        return f

    def set_pd_target(self, bodies, pose=None, *, stiffness=0.0, damping=0.0, angular_stiffness=0.0,
                      angular_damping=0.0, velocity=None) -> np.ndarray:
        """Drive dynamic (joint-less) ``bodies`` toward a target ``pose`` by an implicit PD force
        (``solver="implicit"``); returns their body indices.

        Force ``kp·(x_t − x) + kd·(v_t − v)`` on the centre of mass and torque
        ``kθ·log(q_t·q⁻¹) + kω·(ω_t − ω)``, evaluated at the end of the step (so any gain is
        stable at any dt). ``pose``: world pose of the body frame, (7,) or (K,7) (default: where the
        bodies are now); ``velocity``: (6,) or (K,6) target (linear, angular; default 0). Gains:
        scalars or 3 numbers, one per world axis (N/m, N·s/m, N·m/rad, N·m·s/rad), so an axis with
        0 is free — e.g. a finger held in y and z by PD and squeezed along x by
        :meth:`apply_force`. Gravity still acts: a PD-held body sags by m·g/kp unless a force
        compensates. A target lasts until changed or :meth:`clear_pd_target`.
        """
        if self.solver != "implicit":
            raise InputError("set_pd_target needs solver='implicit' (the explicit solver has no implicit drives)")
        ids = self._resolve_bodies(bodies)
        dyn = self.body_dynamic[ids]
        if not dyn.all():
            raise InputError(f"set_pd_target: body {self.model.body_path[ids[~dyn][0]]} is not dynamic (drive "
                             f"kinematic bodies with set_kinematic_script)")
        K = len(ids)

        def rows(x, width, name):
            a = float_array(x, name)
            if a.shape in ((), (1,)):
                a = np.full(width, float(a.reshape(-1)[0]))
            if a.shape == (width,):
                a = np.broadcast_to(a, (K, width))
            if a.shape != (K, width) or not np.all(np.isfinite(a)):
                raise InputError(f"set_pd_target: {name} must be {width} finite numbers or ({K}, {width}) rows, "
                                 f"got shape {np.shape(x)}")
            return np.array(a, dtype=float)

        gains = [rows(g, 3, n) for g, n in ((stiffness, "stiffness"), (damping, "damping"),
                                             (angular_stiffness, "angular_stiffness"),
                                             (angular_damping, "angular_damping"))]
        if any((g < 0).any() for g in gains):
            raise InputError("set_pd_target: gains must be >= 0")
        p = self.state.body_q[ids].copy() if pose is None else rows(pose, 7, "pose")
        p[:, 3:] = quat_normalize(p[:, 3:])
        self._pd_pose[ids, :3] = p[:, :3] + quat_rotate(p[:, 3:], self.body_com_local[ids])
        self._pd_pose[ids, 3:] = p[:, 3:]
        self._pd_kp[ids] = np.concatenate([gains[0], gains[2]], axis=1)
        self._pd_kd[ids] = np.concatenate([gains[1], gains[3]], axis=1)
        self._pd_vel[ids] = 0.0 if velocity is None else rows(velocity, 6, "velocity")
        return ids

    def clear_pd_target(self, bodies=None) -> None:
        """Stop the PD drives of ``bodies`` (default all)."""
        ids = slice(None) if bodies is None else self._resolve_bodies(bodies)
        self._pd_kp[ids] = 0.0
        self._pd_kd[ids] = 0.0

    # ------------------------------------------------------------------------------------------
    def _substep_implicit(self) -> ContactFrame:
        m = self.model
        h = self.substep_dt
        t = self.substep_count * h
        targets = kinematic_targets(self._scripts, self.state, self.body_com_local, t, h)
        poses = self._shape_poses
        shape_world_poses(self.state.body_q, self.shape_body, self._shape_local_pose, poses)
        result = self.pipeline.collide(poses)
        self.last_result = result
        c = result.contacts
        n = len(c)
        buf = self._buffers
        if buf is None or len(buf[2]) < n:
            cap = max(64, 2 * n)
            buf = self._buffers = (np.empty((cap, 3)), np.empty((cap, 3)), np.empty(cap), np.zeros(5, np.int64),
                                  np.empty((cap, 3)))
        fn, ft, gn, stats, nrm_used = buf[0][:n], buf[1][:n], buf[2][:n], buf[3], buf[4][:n]
        offset = self._pair_offsets(c, result, h)
        q = self.state.body_q
        qd = self.state.body_qd
        implicit_step(h, self.gravity, self.damping_ratio, self.friction_regularization, self.newton_tolerance,
                      self.newton_iterations, q, qd, self.body_inv_mass, self.body_inertia_local_c,
                      self.body_com_local, self.body_dynamic, self._external_forces(), self._pd_kp, self._pd_kd,
                      self._pd_pose, self._pd_vel, self.shape_body, self.shape_lever, self.shape_lever_pts,
                      self.shape_mu, c.point, c.normal, c.depth, c.stiffness, c.damping, c.kind, c.shape_a,
                      c.shape_b, c.pair, len(result.pair_shape_a), offset, CONTACT_POINT, fn, ft, gn, nrm_used, stats)
        self.solver_stats = dict(zip(STAT_FIELDS, (int(x) for x in stats)))
        if stats[3] and not self._warned_newton:
            self._warned_newton = True
            warnings.warn(f"step {self.step_count + 1}: the implicit solve of {int(stats[3])} island(s) of bodies did "
                          f"not reach newton_tolerance={self.newton_tolerance:g} in newton_iterations="
                          f"{self.newton_iterations} (raise newton_iterations; the step kept its last iterate)",
                          RuntimeWarning, stacklevel=3)
        if targets is not None:
            ids, nxt = targets
            q[ids] = nxt
        self.substep_count += 1
        idx = np.flatnonzero(gn > 0.0)
        sa = c.shape_a[idx].astype(np.int32)
        sb = c.shape_b[idx].astype(np.int32)
        frame = ContactFrame(point=c.point[idx].astype(float), normal=nrm_used[idx], depth=c.depth[idx].astype(float),
                             normal_force=fn[idx], friction_force=ft[idx], shape_a=sa, shape_b=sb,
                             body_a=self.shape_body[sa].astype(np.int32), body_b=self.shape_body[sb].astype(np.int32),
                             env=c.env[idx].astype(np.int32), pair=c.pair[idx].astype(np.int32),
                             kind=c.kind[idx].astype(np.int32))
        self.last_frame = frame
        # the pairs that carried force, for the next step's new-contact rule
        if self.recovery_time > 0.0:
            self._touching = touching_pairs(result.pair_shape_a, result.pair_shape_b, m.shape_count, c.pair, gn,
                                            offset, self._deepest, math.exp(-h / self.recovery_time))
        return frame

    def _pair_offsets(self, c, result, h) -> np.ndarray:
        """m, per pair of this collide call: the overlap its spring leaves alone (module
        docstring, "New contacts"; :func:`hydro.sim.implicit.pair_offsets`)."""
        n_pairs = len(result.pair_shape_a)
        off = np.zeros(n_pairs)
        self._deepest = np.zeros(n_pairs)
        if n_pairs == 0 or self.recovery_time == 0.0:
            return off
        authored = np.zeros(self.model.num_envs + 1, np.bool_)
        if self._authored_envs is not None:  # the first step after a (re)start: its overlaps are meant
            authored[np.asarray(self._authored_envs, np.int64) + 1] = True
            self._authored_envs = None
        prev_keys, prev_off, prev_deep = self._touching
        pair_offsets(result.pair_shape_a, result.pair_shape_b, self.model.shape_count, c.pair, c.stiffness, c.depth,
                     c.env, prev_keys, prev_off, prev_deep, authored, IMPACT_SPEED * h, off, self._deepest)
        return off

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
        if B:
            ext = self._external_forces()
            force[:B] += ext[:, :3]
            torque[:B] += ext[:, 3:]
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
