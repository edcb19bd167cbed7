"""Isaac Lab–style contact sensors (names and shapes kept so code moves over).

Longer than most modules: the configuration, the data's table and the sensor belong together.

A :class:`ContactSensor` is made by ``sim.add_sensor(ContactSensorCfg(...))`` and updates every
physics step of its :class:`~hydro.sim.simulation.Simulation` from then on, whether or not anybody
reads it (reads are never lazy, so a history never skips a step): the simulation hands it each
step's contacts (``on_step``, :mod:`hydro.sim.sensing`) — point contacts and hydroelastic
contacts alike —; it never reads the simulation back.

Buffers
    Every buffer of ``sensor.data`` is an :class:`~hydro.sim.arrays.ArrayView`: a NumPy array
    (float32 as in Isaac Lab, or float64 with ``ContactSensorCfg.buffer_dtype="float64"`` for
    analysis; bool for the latch) allocated once and updated in place, so it is the same object
    at every step, with ``.torch``, a zero-copy torch tensor on the simulation's device, as
    Isaac Lab's documentation reads them (``contact.data.net_normal_forces_w.torch``).
    Optional buffers are ``None`` unless their option (or a filter) enables them.

Shapes: E envs, S sensor bodies per env, F filter columns, H = max(history_length, 1).

Sensor bodies (``prim_path``)
    A regular expression, fully matched against prim paths; ``{ENV_REGEX_NS}`` stands for each
    env's namespace (``/World/envs/env_\\d+``, or ``/World`` in a scene without envs). It
    matches bodies and static colliders (a static collider is its own "body": a force plate).
    Every env must match the same bodies (same env-relative paths); one sensor body per match
    per env. A global static collider (outside ``/World/envs``) is a sensor body in every env
    and sees each env's contacts in that env's row. With ``sensor_shape_prim_expr`` (a list of
    expressions) the sensor bodies are the matched *collider shapes* instead.

Filter columns (F)
    One column per ``filter_prim_paths_expr`` entry (partners whose body path, or static
    collider path, matches), then one per ``filter_shape_prim_expr`` entry (partners whose
    collider shape path matches), then, when ``exclude_prim_paths_expr`` is given, one column
    "every partner except these" (a partner is excluded when its body or shape path matches any
    entry). A partner may fall in several columns. An expression that matches nothing warns
    (its column stays zero). Isaac Lab's rule: with filter columns, body-level sensing is
    many-to-one — ``prim_path`` must match one sensor body per env (define one sensor per body,
    e.g. per foot); more raises an InputError saying so. Shape-level sensing
    (``sensor_shape_prim_expr``, Newton's extension) takes any number of shapes, and
    ``many_to_many_filters=True`` (hydro's extension) lifts the rule for body-level sensing.

Forces (as on Newton)
    World frame, on the sensor body, averaged over the physics step's solver sub-steps (the
    impulse over the step divided by dt), and only from contacts that carry force (speculative
    contacts never count). ``net_forces_w`` and ``force_matrix_w`` are the total, normal +
    friction, whether or not ``track_friction_forces`` is set; the friction buffers
    (``net_friction_forces_w``, ``friction_force_matrix_w`` and their histories, and the alias
    ``friction_forces_w``) exist only with ``track_friction_forces=True``. Without contact a
    force is 0. Sums are ordered, so repeated runs give identical numbers on the CPU. Summing a
    matrix over F gives the net force only when the filters cover every partner.

Contact points (``track_contact_points``: needs filter columns and a positive
``max_contact_data_count_per_prim``, as in Isaac Lab)
    ``contact_pos_w`` (E,S,F,3) is, per sensor body and filter column, the average of its
    contact points over the physics step **weighted by each contact's normal force** (the
    centre of pressure), NaN when the pair had no contact. It averages *every* contact: hydro
    keeps no fixed per-pair contact buffer, so nothing is lost and nothing is warned about,
    whatever the capacity (a hydroelastic patch has tens of contacts per sub-step; Isaac Lab's
    default capacity of 4 would otherwise cut every one).
    :attr:`ContactSensor.required_contact_data_count` holds the largest count of contacts one
    pair had in a sub-step (the capacity a fixed buffer would need). Forces never depend on the
    capacity.

Pose (``track_pose``)
    Not supported, as on Newton: with ``track_pose=True`` reading ``pose_w``, ``pos_w`` or
    ``quat_w`` raises ``NotImplementedError``; without it they are ``None``.

Time
    The sensor counts physics steps in integers; ``*_air_time``/``*_contact_time`` are
    ``steps · dt`` computed in float64 (then stored in the buffers' dtype), and
    ``compute_first_contact``/``compute_first_air`` compare the integer counts, so they stay
    exact after any simulated time. Forces are summed in float64 and stored in the buffers'
    dtype. In contact means ``|net normal force| > force_threshold``. ``update_period`` 0 publishes every physics step;
    otherwise an env publishes when ``ceil(update_period/dt − 1e-9)`` steps have passed since it
    last did, and its timers advance by those steps. ``reset(env_ids)`` zeroes forces,
    histories, timers and latches (positions NaN) and the env publishes again at the next step,
    from contacts after the reset only.

Latch (short contacts between control steps)
    ``data.contact_latch`` (E,S) bool and ``data.peak_force_latch`` (E,S) N record, over every
    solver sub-step since :meth:`ContactSensor.clear_latch` (or reset), whether the body was in
    contact and the largest ``|net force|``, whatever ``update_period`` is. Clear it once per
    control step.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..scene.paths import actor_table, env_relative, expand_expr
from .arrays import ArrayView, device_name
from .sensing import rows_sum

__all__ = ["ContactSensorCfg", "ContactSensor", "ContactSensorData"]


def _expr_list(name, value, *, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, str):
        value = [value]
    try:
        out = list(value)
    except TypeError:
        raise InputError(f"ContactSensorCfg.{name} must be a list of prim path expressions, got {value!r}") from None
    for v in out:
        if not isinstance(v, str) or not v:
            raise InputError(f"ContactSensorCfg.{name} entries must be non-empty strings, got {v!r}")
    return out


@dataclass
class ContactSensorCfg:
    """Configuration of a :class:`ContactSensor` (Isaac Lab's names; see the module docstring).

    Checked when made and again when the sensor is made (fields may be set in between)."""

    prim_path: str = ""
    """Expression of the sensor bodies (``{ENV_REGEX_NS}`` and regular expressions)."""
    filter_prim_paths_expr: list = field(default_factory=list)
    """One filter column per expression, matched against partner body (or static collider) paths."""
    history_length: int = 0
    """Samples kept in ``*_history`` (H = max(history_length, 1)); index 0 is the newest."""
    update_period: float = 0.0
    """s between published samples; 0 = every physics step."""
    track_air_time: bool = False
    """Keep ``current/last_air_time`` and ``current/last_contact_time``."""
    track_contact_points: bool = False
    """Keep ``contact_pos_w`` (needs filter columns and a positive ``max_contact_data_count_per_prim``)."""
    track_friction_forces: bool = False
    """Publish the friction buffers (the total forces include friction either way)."""
    track_pose: bool = False
    """Pose tracking: not supported (as on Newton); reading the pose then raises NotImplementedError."""
    max_contact_data_count_per_prim: int = 4
    """Isaac Lab's capacity of detailed contacts per sensor body and filter column; must be positive
    for ``track_contact_points`` (as in Isaac Lab). hydro averages every contact whatever it is."""
    force_threshold: float = 1.0
    """N: in contact means |net normal force| > this."""
    debug_vis: bool = False
    """Ask the viewer to draw markers on sensor bodies in contact and force arrows (data unchanged)."""
    sensor_shape_prim_expr: list | None = None
    """Shape-level sensing: the sensor bodies are the collider shapes these expressions match."""
    filter_shape_prim_expr: list | None = None
    """Shape-level filter columns, matched against partner collider shape paths."""
    exclude_prim_paths_expr: list = field(default_factory=list)
    """Adds one last filter column: every partner except those matching these expressions."""
    many_to_many_filters: bool = False
    """hydro's extension: allow filter columns with more than one sensor body per env (Isaac Lab's
    body-level filtering is many-to-one: one sensor body per env when filters are configured)."""
    buffer_dtype: str = "float32"
    """dtype of the float buffers: ``"float32"`` (Isaac Lab's) or ``"float64"`` (for analysis; the sums
    are float64 either way)."""

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Check every field (and normalise the expression lists); raises InputError naming it."""
        if self.sensor_shape_prim_expr is None and (not isinstance(self.prim_path, str) or not self.prim_path):
            raise InputError(f"ContactSensorCfg.prim_path must be a non-empty prim path expression, "
                             f"got {self.prim_path!r}")
        self.filter_prim_paths_expr = _expr_list("filter_prim_paths_expr", self.filter_prim_paths_expr)
        self.sensor_shape_prim_expr = _expr_list("sensor_shape_prim_expr", self.sensor_shape_prim_expr, allow_none=True)
        self.filter_shape_prim_expr = _expr_list("filter_shape_prim_expr", self.filter_shape_prim_expr, allow_none=True)
        self.exclude_prim_paths_expr = _expr_list("exclude_prim_paths_expr", self.exclude_prim_paths_expr)
        for name in ("history_length", "max_contact_data_count_per_prim"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise InputError(f"ContactSensorCfg.{name} must be an integer >= 0, got {v!r}")
        for name in ("update_period", "force_threshold"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"ContactSensorCfg.{name} must be a finite number >= 0, got {v!r}")
        try:
            dtype = np.dtype(self.buffer_dtype) if not isinstance(self.buffer_dtype, bool) else None
        except TypeError:
            dtype = None
        if dtype not in (np.float32, np.float64):
            raise InputError(f"ContactSensorCfg.buffer_dtype must be 'float32' (Isaac Lab's) or 'float64', "
                             f"got {self.buffer_dtype!r}")
        for name in ("track_air_time", "track_contact_points", "track_friction_forces", "track_pose", "debug_vis",
                     "many_to_many_filters"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"ContactSensorCfg.{name} must be True or False, got {getattr(self, name)!r}")
        if self.track_contact_points and self.max_contact_data_count_per_prim < 1:
            raise InputError(f"ContactSensorCfg.track_contact_points needs a positive max_contact_data_count_per_prim "
                             f"(the contacts per sensor body and filter that contact_pos_w averages), got "
                             f"{self.max_contact_data_count_per_prim}")

    def _make_sensor(self, sim):
        return ContactSensor(self, sim)


_POSE_MESSAGE = ("pose tracking is not supported by hydro's contact sensor (as on Newton): ContactSensorCfg."
                 "track_pose=True has no {name}; read the body poses from the simulation state instead")


class ContactSensorData:
    """What a :class:`ContactSensor` reports (world frame, N, m, s): buffers updated in place.

    Each buffer is an :class:`~hydro.sim.arrays.ArrayView` (a NumPy array with ``.torch``), the
    same object at every step; ``None`` where the module docstring says so.

    | field | shape | meaning |
    |---|---|---|
    | ``net_normal_forces_w`` | (E,S,3) | normal force on each sensor body |
    | ``net_friction_forces_w`` | (E,S,3) | friction force; None unless track_friction_forces |
    | ``net_forces_w`` | (E,S,3) | normal + friction (always the total) |
    | ``net_normal_forces_w_history`` | (E,H,S,3) | index 0 newest |
    | ``net_friction_forces_w_history`` | (E,H,S,3) | None unless track_friction_forces |
    | ``net_forces_w_history`` | (E,H,S,3) | index 0 newest |
    | ``normal_force_matrix_w`` | (E,S,F,3) | per filter column; None without filters |
    | ``friction_force_matrix_w`` | (E,S,F,3) | None without filters or track_friction_forces |
    | ``force_matrix_w`` | (E,S,F,3) | normal + friction per filter column; None without filters |
    | ``normal_force_matrix_w_history`` | (E,H,S,F,3) | index 0 newest; None without filters |
    | ``friction_force_matrix_w_history`` | (E,H,S,F,3) | None without filters or track_friction_forces |
    | ``force_matrix_w_history`` | (E,H,S,F,3) | None without filters |
    | ``contact_pos_w`` | (E,S,F,3) | force-weighted centre of pressure, NaN without contact; None unless track_contact_points |
    | ``current_air_time`` / ``last_air_time`` | (E,S) | s; None unless track_air_time |
    | ``current_contact_time`` / ``last_contact_time`` | (E,S) | s; None unless track_air_time |
    | ``contact_latch`` | (E,S) bool | in contact in any sub-step since the latch was cleared |
    | ``peak_force_latch`` | (E,S) | largest \\|net force\\| in any sub-step since then |

    Properties: ``friction_forces_w`` (Isaac Lab's compatibility alias of
    ``net_friction_forces_w``); ``pose_w`` (E,S,7), ``pos_w``, ``quat_w``: None, or with
    ``track_pose=True`` a ``NotImplementedError`` (as on Newton).
    """

    FIELDS = ("net_normal_forces_w", "net_friction_forces_w", "net_forces_w", "net_normal_forces_w_history",
              "net_friction_forces_w_history", "net_forces_w_history", "normal_force_matrix_w",
              "friction_force_matrix_w", "force_matrix_w", "normal_force_matrix_w_history",
              "friction_force_matrix_w_history", "force_matrix_w_history", "contact_pos_w", "current_air_time",
              "last_air_time", "current_contact_time", "last_contact_time", "contact_latch", "peak_force_latch")

    def __init__(self, *, track_pose: bool = False):
        self._track_pose = bool(track_pose)
        for name in self.FIELDS:
            setattr(self, name, None)

    def buffers(self) -> dict:
        """``{name: buffer}`` of the buffers this sensor keeps (the fields that are not None)."""
        return {n: getattr(self, n) for n in self.FIELDS if getattr(self, n) is not None}

    @property
    def friction_forces_w(self):
        """Isaac Lab's compatibility alias: the aggregate friction, ``net_friction_forces_w``."""
        return self.net_friction_forces_w

    def _pose(self, name):
        if self._track_pose:
            raise NotImplementedError(_POSE_MESSAGE.format(name=name))
        return None

    @property
    def pose_w(self):
        """Not supported (as on Newton): None, or NotImplementedError with ``track_pose=True``."""
        return self._pose("pose_w")

    @property
    def pos_w(self):
        """Not supported (as on Newton): None, or NotImplementedError with ``track_pose=True``."""
        return self._pose("pos_w")

    @property
    def quat_w(self):
        """Not supported (as on Newton): None, or NotImplementedError with ``track_pose=True``."""
        return self._pose("quat_w")

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}={tuple(b.shape)}" for n, b in self.buffers().items())
        return f"ContactSensorData({shapes})"


class ContactSensor:
    """Contact forces on sensor bodies, batched over envs (see the module docstring).

    Made by ``sim.add_sensor(cfg)``, which reads the simulation's model, physics step, state and
    device once; from then on the simulation drives it through :meth:`on_step`. ``data`` is a
    :class:`ContactSensorData` whose buffers are updated in place.
    """

    def __init__(self, cfg: ContactSensorCfg, sim):
        if not isinstance(cfg, ContactSensorCfg):
            raise InputError(f"ContactSensor needs a hydro.sim.sensors.ContactSensorCfg, got {type(cfg).__name__}")
        cfg.validate()
        self.cfg = cfg
        self.debug_vis = bool(cfg.debug_vis)
        model = sim.model
        self._model = model
        self._state = sim.state  # the latest state handed in (for the viewer's markers)
        self._dt = float(sim.physics_dt)
        self.device = device_name(getattr(sim, "device", "cpu"))
        self._resolve(model)
        if cfg.track_contact_points and self._F == 0:
            raise InputError("ContactSensorCfg.track_contact_points needs filter columns: contact_pos_w is per sensor "
                             "body and filter (set filter_prim_paths_expr, filter_shape_prim_expr or "
                             "exclude_prim_paths_expr)")
        self._period_steps = 0 if cfg.update_period == 0 else max(1, math.ceil(cfg.update_period / self._dt - 1e-9))
        self.required_contact_data_count = 0
        self._allocate()

    # ------------------------------------------------------------------------------------------
    def _resolve(self, model):
        cfg = self.cfg
        E = model.num_envs
        paths, envs, self._actor_of_shape = actor_table(model)
        shape_paths = list(model.shape_path)
        shape_env = np.asarray(model.shape_env, dtype=np.int64)
        self._shape_level = cfg.sensor_shape_prim_expr is not None
        if self._shape_level:
            rx = [expand_expr(e, model) for e in cfg.sensor_shape_prim_expr]
            cand_paths, cand_env = shape_paths, shape_env
            what = f"sensor_shape_prim_expr {cfg.sensor_shape_prim_expr}"
        else:
            rx = [expand_expr(cfg.prim_path, model)]
            cand_paths, cand_env = paths, envs
            what = f"prim_path {cfg.prim_path!r}"
        matched = np.array([any(r.fullmatch(p) for r in rx) for p in cand_paths], dtype=bool)
        glob = np.flatnonzero(matched & (cand_env < 0))
        per_env = [np.concatenate([glob, np.flatnonzero(matched & (cand_env == e))]) for e in range(E)]
        S = len(per_env[0])
        if S == 0:
            raise InputError(f"ContactSensor: {what} matches no {'collider shape' if self._shape_level else 'body'}")
        names0 = [env_relative(cand_paths[i]) for i in per_env[0]]
        for e in range(1, E):
            names = [env_relative(cand_paths[i]) for i in per_env[e]]
            if names != names0:
                raise InputError(f"ContactSensor: {what} matches {names0} in env 0 but {names} in env {e}; "
                                 f"every env must have the same sensor bodies")
        slot = np.full(len(cand_paths), -1, np.int64)
        for e in range(E):
            slot[per_env[e]] = np.arange(S)
        self._slot = slot  # per actor (or per shape): its sensor body index, −1 none
        self._elements = per_env  # per env: actor (or shape) indices
        self.body_paths = [[cand_paths[i] for i in per_env[e]] for e in range(E)]
        self.body_names = [n.rsplit("/", 1)[-1] for n in names0]
        self._E, self._S = E, S

        # filter columns: boolean per partner actor or per partner shape
        cols_actor, cols_shape, names = [], [], []
        for expr in cfg.filter_prim_paths_expr:
            r = expand_expr(expr, model)
            cols_actor.append(np.array([bool(r.fullmatch(p)) for p in paths], dtype=bool))
            cols_shape.append(None)
            names.append(expr)
            _warn_if_empty(cols_actor[-1], "filter_prim_paths_expr", expr, "body or static collider")
        for expr in cfg.filter_shape_prim_expr or []:
            r = expand_expr(expr, model)
            cols_actor.append(None)
            cols_shape.append(np.array([bool(r.fullmatch(p)) for p in shape_paths], dtype=bool))
            names.append(expr)
            _warn_if_empty(cols_shape[-1], "filter_shape_prim_expr", expr, "collider shape")
        if cfg.exclude_prim_paths_expr:
            ex_actor = np.zeros(len(paths), dtype=bool)
            ex_shape = np.zeros(len(shape_paths), dtype=bool)
            for expr in cfg.exclude_prim_paths_expr:
                r = expand_expr(expr, model)
                a = np.array([bool(r.fullmatch(p)) for p in paths], dtype=bool)
                sh = np.array([bool(r.fullmatch(p)) for p in shape_paths], dtype=bool)
                _warn_if_empty(a | sh, "exclude_prim_paths_expr", expr, "body, static collider or collider shape")
                ex_actor |= a
                ex_shape |= sh
            # a partner shape is excluded when its own path or its actor's path matches
            cols_actor.append(None)
            cols_shape.append(~(ex_shape | ex_actor[self._actor_of_shape]))
            names.append("all except " + ", ".join(cfg.exclude_prim_paths_expr))
        # every column as a per-shape mask of partners (actor columns through actor_of_shape)
        self._columns = [cs if cs is not None else ca[self._actor_of_shape] for ca, cs in zip(cols_actor, cols_shape)]
        self.filter_names = names
        self._F = len(names)
        if self._F and S > 1 and not self._shape_level and not cfg.many_to_many_filters:
            raise InputError(f"ContactSensor: prim_path {cfg.prim_path!r} matches {S} bodies per env "
                             f"({', '.join(self.body_names)}) but filters are configured: filtered sensors are "
                             f"many-to-one, as in Isaac Lab (one sensor body per env); define one sensor per body, "
                             f"sense shapes with sensor_shape_prim_expr, or set ContactSensorCfg.many_to_many_filters="
                             f"True (hydro's extension)")

    def _allocate(self):
        cfg = self.cfg
        E, S, F, H = self._E, self._S, self._F, self.history_length
        from ..budget import check_memory  # before the histories are allocated (they are touched at once)

        check_memory(4.0 * 3 * 8 * E * S * (H + 1) * (1 + (F if self._F else 0)),
                     what=f"contact sensor {self.cfg.prim_path}: histories of {H} samples for {E} env(s) x {S} "
                          f"body(ies){f' x {F} filter(s)' if self._F else ''}",
                     setting="lower ContactSensorCfg.history_length")
        # the sensor's own state (float64, integer steps); published into the data's buffers
        self._n = np.zeros((E, S, 3))
        self._t = np.zeros((E, S, 3))
        self._hist_n = np.zeros((E, H, S, 3))
        self._hist_t = np.zeros((E, H, S, 3))
        if F:
            self._mn = np.zeros((E, S, F, 3))
            self._mt = np.zeros((E, S, F, 3))
            self._hist_mn = np.zeros((E, H, S, F, 3))
            self._hist_mt = np.zeros((E, H, S, F, 3))
            self._pos = np.full((E, S, F, 3), np.nan)
        self._air = np.zeros((E, S), np.int64)
        self._contact = np.zeros((E, S), np.int64)
        self._last_air = np.zeros((E, S), np.int64)
        self._last_contact = np.zeros((E, S), np.int64)
        self._latch = np.zeros((E, S), bool)
        self._peak = np.zeros((E, S))
        self._elapsed = np.zeros(E, np.int64)
        self._due = np.ones(E, bool)

        d = ContactSensorData(track_pose=cfg.track_pose)

        real = np.dtype(cfg.buffer_dtype)

        def buf(shape, dtype=real, fill=0.0):
            return ArrayView.allocate(shape, dtype, device=self.device, fill=fill)

        friction = cfg.track_friction_forces
        d.net_normal_forces_w, d.net_forces_w = buf((E, S, 3)), buf((E, S, 3))
        d.net_normal_forces_w_history, d.net_forces_w_history = buf((E, H, S, 3)), buf((E, H, S, 3))
        if friction:
            d.net_friction_forces_w, d.net_friction_forces_w_history = buf((E, S, 3)), buf((E, H, S, 3))
        if F:
            d.normal_force_matrix_w, d.force_matrix_w = buf((E, S, F, 3)), buf((E, S, F, 3))
            d.normal_force_matrix_w_history, d.force_matrix_w_history = buf((E, H, S, F, 3)), buf((E, H, S, F, 3))
            if friction:
                d.friction_force_matrix_w, d.friction_force_matrix_w_history = buf((E, S, F, 3)), buf((E, H, S, F, 3))
            if cfg.track_contact_points:
                d.contact_pos_w = buf((E, S, F, 3), fill=np.nan)
        if cfg.track_air_time:
            d.current_air_time, d.last_air_time = buf((E, S)), buf((E, S))
            d.current_contact_time, d.last_contact_time = buf((E, S)), buf((E, S))
        d.contact_latch, d.peak_force_latch = buf((E, S), bool, False), buf((E, S))
        self._data = d
        self._begin_step()
        self._publish()

    # ------------------------------------------------------------------------------------------
    @property
    def num_instances(self) -> int:
        """E, the number of envs."""
        return self._E

    @property
    def num_bodies(self) -> int:
        """S, sensor bodies per env."""
        return self._S

    @property
    def history_length(self) -> int:
        """H = max(cfg.history_length, 1)."""
        return max(int(self.cfg.history_length), 1)

    @property
    def data(self) -> ContactSensorData:
        """The latest published data (never stale: the sensor updates every physics step)."""
        return self._data

    def update(self, dt=None, force_recompute: bool = False) -> None:
        """Kept for Isaac Lab code: the sensor already updates every physics step, so this does nothing."""

    def find_bodies(self, name_keys, preserve_order: bool = False):
        """``(indices, names)`` of the sensor bodies whose name fully matches ``name_keys`` (a
        regular expression or a list of them); in sensor order, or in key order with
        ``preserve_order``."""
        keys = [name_keys] if isinstance(name_keys, str) else list(name_keys)
        rxs = [re.compile(k) for k in keys]
        ids = []
        if preserve_order:
            for r in rxs:
                ids += [i for i, n in enumerate(self.body_names) if r.fullmatch(n) and i not in ids]
        else:
            ids = [i for i, n in enumerate(self.body_names) if any(r.fullmatch(n) for r in rxs)]
        if not ids:
            raise InputError(f"no sensor body name matches {keys}; the names are {self.body_names}")
        return ids, [self.body_names[i] for i in ids]

    def compute_first_contact(self, dt: float, abs_tol: float = 1.0e-8) -> ArrayView:
        """(E,S) bool: bodies that made contact within the last ``dt`` seconds
        (0 < current_contact_time <= dt); an array with ``.torch``."""
        self._need_air_time("compute_first_contact")
        return self._bool_view((self._contact > 0) & (self._contact * self._dt <= float(dt) + abs_tol))

    def compute_first_air(self, dt: float, abs_tol: float = 1.0e-8) -> ArrayView:
        """(E,S) bool: bodies that broke contact within the last ``dt`` seconds
        (0 < current_air_time <= dt); an array with ``.torch``."""
        self._need_air_time("compute_first_air")
        return self._bool_view((self._air > 0) & (self._air * self._dt <= float(dt) + abs_tol))

    def _bool_view(self, values):
        out = ArrayView.allocate(values.shape, bool, device=self.device)
        out[...] = values
        return out

    def _need_air_time(self, what):
        if not self.cfg.track_air_time:
            raise RuntimeError(f"{what} needs ContactSensorCfg(track_air_time=True)")

    def reset(self, env_ids=None) -> None:
        """Zero forces, histories, timers and latches of ``env_ids`` (default all); they
        publish again at the next physics step, from contacts after the reset only."""
        envs = self._envs(env_ids)
        for name in ("_n", "_t", "_hist_n", "_hist_t", "_mn", "_mt", "_hist_mn", "_hist_mt", "_peak"):
            if hasattr(self, name):
                getattr(self, name)[envs] = 0.0
        if self._F:
            self._pos[envs] = np.nan
        for name in ("_air", "_contact", "_last_air", "_last_contact", "_elapsed"):
            getattr(self, name)[envs] = 0
        self._latch[envs] = False
        self._due[envs] = True
        self._publish()

    def clear_latch(self, env_ids=None) -> None:
        """Start a new latch window (call once per control step) for ``env_ids`` (default all)."""
        envs = self._envs(env_ids)
        self._latch[envs] = False
        self._peak[envs] = 0.0
        self._publish()

    def _envs(self, env_ids):
        if env_ids is None:
            return np.arange(self._E)
        from ..arguments import env_ids as checked_env_ids

        return checked_env_ids(env_ids, "env_ids", self._E)  # 0.5 is refused, not env 0

    def set_debug_vis(self, debug_vis: bool) -> bool:
        """Turn the viewer's markers on or off (the data does not change); returns True."""
        self.debug_vis = bool(debug_vis)
        return True

    def debug_markers(self) -> dict:
        """What the viewer draws when ``debug_vis`` is on: ``position`` (E,S,3) of each sensor
        body (its frame origin, or the shape's), ``in_contact`` (E,S) bool and ``force``
        (E,S,3) the net force, for the latest published sample."""
        model, state = self._model, self._state
        if self._shape_level:
            poses = model.shape_world_poses(state)
            pos = np.array([[poses[i, :3] for i in self._elements[e]] for e in range(self._E)])
        else:
            B = model.body_count
            shape_pose = model.shape_world_poses(state)
            static_shapes = np.flatnonzero(np.asarray(model.shape_body) < 0)
            pos = np.empty((self._E, self._S, 3))
            for e in range(self._E):
                for s, a in enumerate(self._elements[e]):
                    pos[e, s] = state.body_q[a, :3] if a < B else shape_pose[static_shapes[a - B], :3]
        normal = np.linalg.norm(self._n, axis=-1)
        return {"position": pos, "in_contact": normal > self.cfg.force_threshold, "force": self._n + self._t}

    # ------------------------------------------------------------------------------------------
    def on_step(self, frames, state, step: int, dt: float) -> None:
        """Take in one physics step (:mod:`hydro.sim.sensing`): average its sub-steps' contacts,
        latch every sub-step, and publish the envs that are due."""
        self._state = state
        self._begin_step()
        weight = 1.0 / len(frames)
        for frame in frames:
            self._accumulate(frame, weight)
        self._end_step()

    def _begin_step(self):
        E, S, F = self._E, self._S, self._F
        self._acc_n = np.zeros((E * S, 3))
        self._acc_t = np.zeros((E * S, 3))
        if F:
            self._acc_mn = np.zeros((F, E * S, 3))
            self._acc_mt = np.zeros((F, E * S, 3))
            self._acc_w = np.zeros((F, E * S))
            self._acc_p = np.zeros((F, E * S, 3))

    def _accumulate(self, frame, weight: float):
        E, S = self._E, self._S
        n_sub = np.zeros((E * S, 3))
        t_sub = np.zeros((E * S, 3))
        if len(frame):
            # the contacts' sides that touch a sensor body, in contact order (shape B's side first)
            parts = []
            for self_shape, other_shape, sign in ((frame.shape_b, frame.shape_a, 1.0),
                                                  (frame.shape_a, frame.shape_b, -1.0)):
                who = self_shape if self._shape_level else self._actor_of_shape[self_shape]
                slot = self._slot[who]
                keep = np.flatnonzero((slot >= 0) & (frame.env >= 0))
                parts.append((keep, frame.env[keep].astype(np.int64) * S + slot[keep], other_shape[keep], sign))
            rows = np.concatenate([p[0] for p in parts])
            order = np.argsort(rows, kind="stable")
            rows = rows[order]
            elem = np.concatenate([p[1] for p in parts])[order]
            partner = np.concatenate([p[2] for p in parts])[order]
            sign = np.concatenate([np.full(len(p[0]), p[3]) for p in parts])[order]
            fn = sign[:, None] * frame.normal_force[rows]
            ft = sign[:, None] * frame.friction_force[rows]
            n_sub += rows_sum(elem, fn, E * S)
            t_sub += rows_sum(elem, ft, E * S)
            for f, col in enumerate(self._columns):
                m = col[partner]
                if not m.any():
                    continue
                self._acc_mn[f] += weight * rows_sum(elem[m], fn[m], E * S)
                self._acc_mt[f] += weight * rows_sum(elem[m], ft[m], E * S)
                if self.cfg.track_contact_points:
                    e = elem[m]
                    self.required_contact_data_count = max(self.required_contact_data_count,
                                                           int(np.bincount(e).max()))
                    w = np.linalg.norm(fn[m], axis=1)
                    self._acc_w[f] += weight * np.bincount(e, weights=w, minlength=E * S)
                    self._acc_p[f] += weight * rows_sum(e, w[:, None] * frame.point[rows[m]], E * S)
        self._acc_n += weight * n_sub
        self._acc_t += weight * t_sub
        # latch: every sub-step counts, whatever the update period
        normal = np.linalg.norm(n_sub, axis=1).reshape(E, S)
        total = np.linalg.norm(n_sub + t_sub, axis=1).reshape(E, S)
        self._latch |= normal > self.cfg.force_threshold
        np.maximum(self._peak, total, out=self._peak)

    def _end_step(self):
        E, S, F = self._E, self._S, self._F
        self._elapsed += 1
        due = self._due | (self._elapsed >= self._period_steps)
        envs = np.flatnonzero(due)
        if len(envs):
            elapsed = self._elapsed[envs][:, None]
            self._n[envs] = self._acc_n.reshape(E, S, 3)[envs]
            self._t[envs] = self._acc_t.reshape(E, S, 3)[envs]
            self._hist_n[envs] = np.roll(self._hist_n[envs], 1, axis=1)
            self._hist_t[envs] = np.roll(self._hist_t[envs], 1, axis=1)
            self._hist_n[envs, 0] = self._n[envs]
            self._hist_t[envs, 0] = self._t[envs]
            if F:
                mn = np.moveaxis(self._acc_mn.reshape(F, E, S, 3), 0, 2)
                mt = np.moveaxis(self._acc_mt.reshape(F, E, S, 3), 0, 2)
                self._mn[envs] = mn[envs]
                self._mt[envs] = mt[envs]
                self._hist_mn[envs] = np.roll(self._hist_mn[envs], 1, axis=1)
                self._hist_mt[envs] = np.roll(self._hist_mt[envs], 1, axis=1)
                self._hist_mn[envs, 0] = mn[envs]
                self._hist_mt[envs, 0] = mt[envs]
                if self.cfg.track_contact_points:
                    w = np.moveaxis(self._acc_w.reshape(F, E, S), 0, 2)
                    p = np.moveaxis(self._acc_p.reshape(F, E, S, 3), 0, 2)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        pos = np.where(w[..., None] > 0.0, p / w[..., None], np.nan)
                    self._pos[envs] = pos[envs]
            if self.cfg.track_air_time:
                in_contact = np.linalg.norm(self._n[envs], axis=-1) > self.cfg.force_threshold
                air, con = self._air[envs], self._contact[envs]
                first_contact = (air > 0) & in_contact
                first_air = (con > 0) & ~in_contact
                self._last_air[envs] = np.where(first_contact, air + elapsed, self._last_air[envs])
                self._air[envs] = np.where(in_contact, 0, air + elapsed)
                self._last_contact[envs] = np.where(first_air, con + elapsed, self._last_contact[envs])
                self._contact[envs] = np.where(in_contact, con + elapsed, 0)
            self._elapsed[envs] = 0
            self._due[envs] = False
        self._publish()

    def _publish(self):
        """Write the sensor's state into the data's buffers (in place) and sync their tensors."""
        d = self._data
        values = {"net_normal_forces_w": self._n, "net_friction_forces_w": self._t, "net_forces_w": self._n + self._t,
                  "net_normal_forces_w_history": self._hist_n, "net_friction_forces_w_history": self._hist_t,
                  "net_forces_w_history": self._hist_n + self._hist_t,
                  "contact_latch": self._latch, "peak_force_latch": self._peak}
        if self._F:
            values.update({"normal_force_matrix_w": self._mn, "friction_force_matrix_w": self._mt,
                           "force_matrix_w": self._mn + self._mt, "normal_force_matrix_w_history": self._hist_mn,
                           "friction_force_matrix_w_history": self._hist_mt,
                           "force_matrix_w_history": self._hist_mn + self._hist_mt, "contact_pos_w": self._pos})
        if self.cfg.track_air_time:
            values.update({"current_air_time": self._air * self._dt, "last_air_time": self._last_air * self._dt,
                           "current_contact_time": self._contact * self._dt,
                           "last_contact_time": self._last_contact * self._dt})
        for name, target in d.buffers().items():
            target[...] = values[name]
            target.sync()

    def __repr__(self) -> str:
        return (f"ContactSensor({self.cfg.prim_path or self.cfg.sensor_shape_prim_expr!r}: {self._E} envs x "
                f"{self._S} bodies {self.body_names}, {self._F} filter columns)")


def _warn_if_empty(mask, option, expr, what):
    """The regression of issue 16: a filter expression that matches nothing says so."""
    if not np.any(mask):
        warnings.warn(f"ContactSensor: ContactSensorCfg.{option} entry {expr!r} matches no {what}, so its filter "
                      f"column stays zero; check the path (see the scene's prim paths)", UserWarning, stacklevel=6)
