"""EmbodiChain-style per-contact sensor: EmbodiChain's names, so ported code reads the same.

::

    from hydro.sim.embodichain import ContactSensor, ContactSensorCfg, ArticulationContactFilterCfg

    cfg = ContactSensorCfg(rigid_uid_list=["Box"],
                           articulation_cfg_list=[ArticulationContactFilterCfg("Gripper", ["LeftFinger"])],
                           filter_need_both_actor=True, max_contacts_per_env=64)
    sensor = sim.add_sensor(sensor_cfg=cfg)
    sim.update(step=1)
    sensor.update()
    report = sensor.get_data()          # dict of torch tensors on sim.device, (E, C, ...)

UIDs
    A rigid uid names a body, or a static collider, by its prim path relative to its env:
    ``/World/envs/env_<i>/Table/Top`` has the uid ``Table/Top`` (in every env), a prim outside
    ``/World/envs`` such as ``/World/Ground`` has ``Ground``. A uid without ``/`` also matches
    by the prim's own name (``Top``) when that is unique. An articulation uid names an
    articulation root (a ``PhysicsArticulationRootAPI`` prim) the same way; its links are the
    bodies under it, named by their prim name (``LeftFinger``); an empty ``link_name_list``
    monitors every link. Anything that matches nothing is an error listing what exists. The
    configuration is checked when it is made and again when the sensor is made (EmbodiChain code
    sets its fields one by one).

Contacts and slots
    ``update()`` reads the contacts that carried force in the last solver sub-step of the
    latest physics step (the simulation hands the sensor every step's contacts: ``on_step``,
    :mod:`hydro.sim.sensing`; the sensor never reads the simulation back) — point contacts and
    hydroelastic contacts alike. A contact is reported when both of its actors are monitored
    (``filter_need_both_actor=True``) or either is (False), and its normal impulse exceeds
    :data:`IMPULSE_THRESHOLD` (1e-7 N·s, EmbodiChain's positive-impulse filter for
    force-reporting solvers). Per env, reported contacts fill slots 0, 1, … in the pipeline's
    order (``is_valid`` is a prefix); slots past the last are zero. More contacts than
    ``max_contacts_per_env``: the first ones are kept, the rest are counted in
    :attr:`ContactSensor.overflow_count` (per env) and :attr:`ContactSensor.required_contacts`,
    and a ``RuntimeWarning`` names the setting to raise — never dropped silently.
    ``get_data()`` updates first when the simulation has stepped since the last ``update()``, so
    it is never stale.

Fields (E envs, C = max_contacts_per_env), torch tensors on ``sim.device`` when torch is
installed (``get_data(as_numpy=True)``, or no torch: NumPy arrays of the same dtypes)
    | key | dtype | shape | meaning |
    |---|---|---|---|
    | ``position`` | float32 | (E,C,3) | m, in the env's frame (world minus the env origin) |
    | ``normal`` | float32 | (E,C,3) | unit, from actor 0 toward actor 1 |
    | ``friction`` | float32 | (E,C,3) | N·s, the tangential impulse on actor 0 over the physics step (friction force × dt) |
    | ``impulse`` | float32 | (E,C) | N·s, the normal impulse magnitude (normal force × dt) |
    | ``distance`` | float32 | (E,C) | m, signed separation, negative = penetration |
    | ``user_ids`` | int32 | (E,C,2) | actor ids (actor 0 = the contact's shape A, actor 1 = shape B) |
    | ``is_valid`` | bool | (E,C) | which slots hold a contact (a prefix) |

Actor ids (``user_ids``, ``item_user_ids``)
    Query-local and backend-neutral: bodies are ``0 … B−1`` (the model's body order, every env),
    static colliders follow (``B, B+1, …``); :meth:`ContactSensor.get_actor_info` resolves one.
    ``item_user_ids`` is an int32 tensor on ``sim.device`` (NumPy without torch).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..scene.paths import WORLD_ROOT, actor_table, env_of, env_path, relative_name
from .arrays import device_name, to_torch, torch_available
from .sensing import ContactFrame

__all__ = ["ContactSensorCfg", "ArticulationContactFilterCfg", "ContactSensor", "ContactActorInfo",
           "ContactCapabilities", "ContactPointVisibility", "IMPULSE_THRESHOLD"]

DATA_KEYS = ("position", "normal", "friction", "impulse", "distance", "user_ids", "is_valid")

#: N·s: a contact is reported only when its normal impulse exceeds this (EmbodiChain's filter).
IMPULSE_THRESHOLD = 1e-7


@dataclass
class ArticulationContactFilterCfg:
    """The links of one articulation to monitor (empty ``link_name_list``: all of them)."""

    articulation_uid: str = ""
    link_name_list: list = field(default_factory=list)


@dataclass
class ContactSensorCfg:
    """Which actors the sensor monitors and how many contacts each env can report."""

    rigid_uid_list: list = field(default_factory=list)
    articulation_cfg_list: list = field(default_factory=list)
    filter_need_both_actor: bool = True
    max_contacts_per_env: int = 64

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Check every field (and make the lists lists); raises InputError naming it."""
        if isinstance(self.rigid_uid_list, str):
            raise InputError("ContactSensorCfg.rigid_uid_list must be a list of uids, got a string")
        self.rigid_uid_list = list(self.rigid_uid_list)
        self.articulation_cfg_list = list(self.articulation_cfg_list)
        for a in self.articulation_cfg_list:
            if not isinstance(a, ArticulationContactFilterCfg):
                raise InputError(f"ContactSensorCfg.articulation_cfg_list takes ArticulationContactFilterCfg, "
                                 f"got {type(a).__name__}")
            if isinstance(a.link_name_list, str):
                raise InputError("ArticulationContactFilterCfg.link_name_list must be a list of link names, "
                                 "got a string")
        if not isinstance(self.filter_need_both_actor, bool):
            raise InputError(f"ContactSensorCfg.filter_need_both_actor must be True or False, got "
                             f"{self.filter_need_both_actor!r}")
        c = self.max_contacts_per_env
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise InputError(f"ContactSensorCfg.max_contacts_per_env must be an integer >= 1, got {c!r}")

    def _make_sensor(self, sim):
        return ContactSensor(self, sim)


@dataclass(frozen=True)
class ContactActorInfo:
    """What an actor id stands for."""

    user_id: int
    path: str
    """Prim path of the body (or static collider)."""
    uid: str
    """Its uid (path relative to its env)."""
    link_name: str | None
    """Its prim name when it is a link of an articulation, else None."""
    articulation_uid: str | None
    """The uid of its articulation, else None."""
    env_id: int
    """Its env; −1 for a global static collider (shared by every env)."""
    body_index: int
    """Index into the model's bodies; −1 for a static collider."""
    arena: str | None = None
    """Its Arena: the prim path of its env (as :mod:`hydro.scene.paths` names it; ``/World`` in a scene without envs);
    None for a global static collider (in every Arena)."""
    arena_origin: tuple | None = None
    """m, world position of the Arena's origin (what ``position`` is relative to); None when global."""


@dataclass(frozen=True)
class ContactCapabilities:
    """What this backend reports: all of it (the built-in solver exposes its forces).
    ``friction`` is the document's name (the ``friction`` field's availability);
    ``friction_impulse`` the same flag under its earlier name."""

    geometry: bool = True
    normal_impulse: bool = True
    friction: bool = True

    @property
    def friction_impulse(self) -> bool:
        """Alias of :attr:`friction`."""
        return self.friction


@dataclass(frozen=True)
class ContactPointVisibility:
    """Contact points the viewer draws: ``env_ids`` None means every env."""

    visible: bool
    rgba: tuple
    point_size: float
    env_ids: tuple | None


class ContactSensor:
    """Per-contact report of the monitored actors (see the module docstring)."""

    def __init__(self, cfg: ContactSensorCfg, sim):
        if not isinstance(cfg, ContactSensorCfg):
            raise InputError(f"this ContactSensor needs a hydro.sim.embodichain.ContactSensorCfg, "
                             f"got {type(cfg).__name__}")
        cfg.validate()
        self.cfg = cfg
        model = sim.model
        self._dt = float(sim.physics_dt)
        self.device = device_name(getattr(sim, "device", "cpu"))
        self._frame = ContactFrame.empty()  # the last sub-step of the latest physics step
        self._stale = False  # stepped since the last update()
        self._paths, self._envs, self._actor_of_shape = actor_table(model)
        A = len(self._paths)
        B = model.body_count
        uids = [relative_name(p) for p in self._paths]
        names = [p.rsplit("/", 1)[-1] for p in self._paths]
        link_of = [None] * A
        art_of = [None] * A
        art_uids = {}
        for root, members in model.articulations.items():
            ru = relative_name(root)
            art_uids.setdefault(ru, []).append(root)
            for b in members:
                link_of[b] = names[b]
                art_of[b] = ru
        monitored = np.zeros(A, dtype=bool)
        for uid in cfg.rigid_uid_list:
            monitored |= self._match_uid(uid, uids, names, "rigid uid", sorted(set(uids)))
        for ac in cfg.articulation_cfg_list:
            roots = self._match_articulation(ac.articulation_uid, art_uids, model)
            members = np.zeros(A, dtype=bool)
            for r in roots:
                members[model.articulations[r]] = True
            if ac.link_name_list:
                for link in ac.link_name_list:
                    m = members & np.array([n == link for n in names])
                    if not m.any():
                        have = sorted({names[i] for i in np.flatnonzero(members)})
                        raise InputError(f"articulation {ac.articulation_uid!r} has no link {link!r}; its links are "
                                         f"{have}")
                    monitored |= m
            else:
                monitored |= members
        self._monitored = monitored
        self._uids, self._link_of, self._art_of, self._B = uids, link_of, art_of, B
        self._E = model.num_envs
        self._C = int(cfg.max_contacts_per_env)
        self._origins = np.asarray(model.env_origins, dtype=float)
        self.contact_point_visibility = ContactPointVisibility(False, (1.0, 0.0, 0.0, 1.0), 4.0, None)
        self.overflow_count = np.zeros(self._E, np.int64)
        self.required_contacts = np.zeros(self._E, np.int64)
        self.total_overflow = 0
        self._warned = False
        self._data = self._empty()

    @staticmethod
    def _match_uid(uid, uids, names, what, known):
        if not isinstance(uid, str) or not uid:
            raise InputError(f"a {what} must be a non-empty string, got {uid!r}")
        m = np.array([u == uid for u in uids])
        if not m.any() and "/" not in uid:
            by_name = np.array([n == uid for n in names])
            distinct = {uids[i] for i in np.flatnonzero(by_name)}
            if len(distinct) > 1:
                raise InputError(f"{what} {uid!r} is ambiguous: it is the name of {sorted(distinct)}; use one of those")
            m = by_name
        if not m.any():
            raise InputError(f"{what} {uid!r} matches no body or static collider; the uids are {known}")
        return m

    @staticmethod
    def _match_articulation(uid, art_uids, model):
        if uid in art_uids:
            return art_uids[uid]
        if isinstance(uid, str) and "/" not in uid:
            hits = {u: r for u, r in art_uids.items() if u.rsplit("/", 1)[-1] == uid}
            if len(hits) == 1:
                return next(iter(hits.values()))
        raise InputError(f"articulation uid {uid!r} matches no articulation root; the articulations are "
                         f"{sorted(art_uids) or 'none'}")

    # ------------------------------------------------------------------------------------------
    @property
    def item_user_ids(self):
        """int32 ids of every monitored actor (all envs), ascending: a tensor on the sensor's
        device (NumPy without torch)."""
        ids = np.flatnonzero(self._monitored).astype(np.int32)
        return to_torch(ids, self.device) if torch_available() else ids

    @property
    def contact_capabilities(self) -> ContactCapabilities:
        return ContactCapabilities()

    def get_actor_info(self, actor_id) -> ContactActorInfo:
        """Resolve an actor id to its path, uid, link name, articulation, Arena, env and body index."""
        i = int(actor_id)
        if not 0 <= i < len(self._paths):
            raise InputError(f"actor id {actor_id} is out of range [0, {len(self._paths) - 1}]")
        env = int(self._envs[i])
        arena = origin = None
        if env >= 0:
            arena = env_path(env) if env_of(self._paths[i]) == env else WORLD_ROOT
            origin = tuple(float(x) for x in self._origins[env])
        return ContactActorInfo(user_id=i, path=self._paths[i], uid=self._uids[i], link_name=self._link_of[i],
                                articulation_uid=self._art_of[i], env_id=env, body_index=i if i < self._B else -1,
                                arena=arena, arena_origin=origin)

    def _empty(self):
        E, C = self._E, self._C
        return {"position": np.zeros((E, C, 3), np.float32), "normal": np.zeros((E, C, 3), np.float32),
                "friction": np.zeros((E, C, 3), np.float32), "impulse": np.zeros((E, C), np.float32),
                "distance": np.zeros((E, C), np.float32), "user_ids": np.full((E, C, 2), -1, np.int32),
                "is_valid": np.zeros((E, C), bool)}

    def update(self, **kwargs) -> None:
        """Refresh the report from the contacts of the latest physics step."""
        frame = self._frame
        dt = self._dt
        a0 = self._actor_of_shape[frame.shape_a]
        a1 = self._actor_of_shape[frame.shape_b]
        m0, m1 = self._monitored[a0], self._monitored[a1]
        hit = (m0 & m1) if self.cfg.filter_need_both_actor else (m0 | m1)
        hit &= frame.env >= 0
        normal_impulse = np.linalg.norm(frame.normal_force, axis=1) * dt
        hit &= normal_impulse > IMPULSE_THRESHOLD
        idx = np.flatnonzero(hit)
        env = frame.env[idx].astype(np.int64)
        order = np.argsort(env, kind="stable")
        idx, env = idx[order], env[order]
        counts = np.bincount(env, minlength=self._E)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.arange(len(idx)) - starts[env]
        keep = rank < self._C
        idx, env, rank = idx[keep], env[keep], rank[keep]
        d = self._empty()
        d["position"][env, rank] = frame.point[idx] - self._origins[env]
        d["normal"][env, rank] = frame.normal[idx]
        d["friction"][env, rank] = -frame.friction_force[idx] * dt
        d["impulse"][env, rank] = normal_impulse[idx]
        d["distance"][env, rank] = frame.depth[idx]
        d["user_ids"][env, rank, 0] = a0[idx]
        d["user_ids"][env, rank, 1] = a1[idx]
        d["is_valid"][env, rank] = True
        self.required_contacts = counts.astype(np.int64)
        self.overflow_count = np.maximum(counts - self._C, 0).astype(np.int64)
        lost = int(self.overflow_count.sum())
        self.total_overflow += lost
        if lost and not self._warned:
            self._warned = True
            worst = int(np.argmax(self.overflow_count))
            warnings.warn(f"contact sensor: env {worst} had {int(counts[worst])} contacts for max_contacts_per_env="
                          f"{self._C}; {lost} contacts were not reported this update (see overflow_count): raise "
                          f"ContactSensorCfg.max_contacts_per_env to at least {int(counts.max())}",
                          RuntimeWarning, stacklevel=2)
        self._data = d
        self._stale = False

    def get_data(self, *, as_numpy: bool = False) -> dict:
        """The report (see the module docstring), updated first if stale: fresh torch tensors on
        the sensor's device, or NumPy arrays with ``as_numpy=True`` or when torch is missing."""
        if self._stale:
            self.update()
        return self._report({k: v.copy() for k, v in self._data.items()}, as_numpy)

    def _report(self, arrays: dict, as_numpy: bool) -> dict:
        if as_numpy or not torch_available():
            return arrays
        return {k: to_torch(v, self.device) for k, v in arrays.items()}

    def filter_by_user_ids(self, item_user_ids, env_ids=None, *, as_numpy: bool = False) -> dict:
        """Valid contacts of ``env_ids`` (default all) whose actor 0 or actor 1 is one of
        ``item_user_ids`` (a tensor, an array or a list), flattened: each field (K, ...), plus
        ``env_ids`` (K,); tensors or NumPy arrays like :meth:`get_data`."""
        if self._stale:
            self.update()
        data = self._data
        ids = _host_ints(item_user_ids)
        envs = np.arange(self._E) if env_ids is None else _host_ints(env_ids)
        if np.any((envs < 0) | (envs >= self._E)):
            raise InputError(f"env_ids must be in [0, {self._E - 1}], got {envs.tolist()}")
        sel = np.zeros((self._E, self._C), dtype=bool)
        sel[envs] = True
        u = data["user_ids"]
        sel &= data["is_valid"] & (np.isin(u[..., 0], ids) | np.isin(u[..., 1], ids))
        out = {k: v[sel] for k, v in data.items()}
        out["env_ids"] = np.nonzero(sel)[0].astype(np.int32)
        return self._report(out, as_numpy)

    def set_contact_point_visibility(self, visible: bool = True, rgba=(0.0, 0.0, 1.0, 1.0), point_size: float = 6.0,
                                     env_ids=None) -> None:
        """Ask the viewer to draw (or hide) this sensor's contact points; the data is unchanged."""
        c = tuple(float(v) for v in np.asarray(rgba, dtype=float).reshape(-1))
        if len(c) != 4 or not all(0.0 <= v <= 1.0 for v in c):
            raise InputError(f"rgba must be 4 numbers in [0, 1], got {rgba!r}")
        size = float(point_size)
        if not math.isfinite(size) or size <= 0.0:
            raise InputError(f"point_size must be a finite number > 0, got {point_size!r}")
        envs = None
        if env_ids is not None:
            envs = tuple(int(e) for e in _host_ints(env_ids))
            if any(not 0 <= e < self._E for e in envs):
                raise InputError(f"env_ids must be in [0, {self._E - 1}], got {list(envs)}")
        self.contact_point_visibility = ContactPointVisibility(bool(visible), c, size, envs)

    def contact_points_to_draw(self) -> np.ndarray:
        """(K,3) world positions of the valid contacts the viewer should draw (none when hidden)."""
        v = self.contact_point_visibility
        if not v.visible:
            return np.zeros((0, 3))
        data = self.get_data(as_numpy=True)
        envs = range(self._E) if v.env_ids is None else v.env_ids
        pts = [data["position"][e][data["is_valid"][e]].astype(float) + self._origins[e] for e in envs]
        return np.concatenate(pts) if pts else np.zeros((0, 3))

    def reset(self, env_ids=None) -> None:
        """Clear the report of ``env_ids`` (default all), and forget their contacts."""
        envs = np.arange(self._E) if env_ids is None else _host_ints(env_ids)
        self._frame = self._frame.without_envs(envs)
        empty = self._empty()
        for k in self._data:
            self._data[k][envs] = empty[k][envs]
        self.overflow_count[envs] = 0
        self.required_contacts[envs] = 0

    def on_step(self, frames, state, step: int, dt: float) -> None:
        """Take in one physics step (:mod:`hydro.sim.sensing`): keep its last sub-step's contacts
        for the next :meth:`update` (or :meth:`get_data`)."""
        self._frame = frames[-1]
        self._dt = float(dt)
        self._stale = True


def _host_ints(values) -> np.ndarray:
    """Ids given as a torch tensor (any device), an array, a list or a number, as int64 NumPy."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values).reshape(-1)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
                                 or arr.size == 0):
        raise InputError(f"ids must be integers, got {arr.dtype} values")
    if np.issubdtype(arr.dtype, np.floating) and np.any(~np.isfinite(arr) | (np.trunc(arr) != arr)):
        raise InputError(f"ids must be integers, got the non-integer {float(arr[np.trunc(arr) != arr][0])!r}")
    return arr.astype(np.int64)
