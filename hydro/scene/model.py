"""The scene model: bodies, shapes and their SDFs, built once; a :class:`State` per step.

(Over 500 lines: the builder's checks, the :class:`Model` table it fills and its few edits
belong together; mass, envs, paths and materials already live in their own modules.)

Scenes come from USD (:func:`hydro.scene.usd_io.load_usd`) or from Python with a
:class:`ModelBuilder`; both end in :meth:`ModelBuilder.finalize`, which computes mass
properties, replicates environments and builds each distinct SDF once.

Mass properties are :mod:`hydro.scene.mass`'s rules; envs (which env each body and shape
belongs to, and copies of a template env for ``num_envs``/``env_spacing``) are
:mod:`hydro.scene.replicate`'s, on the env-path rule of :mod:`hydro.scene.paths`
(``/World/envs/env_<i>``). Copies share the SDFs of the template: SDFs are built once per
distinct (geometry, SDF settings, margin + gap), however many shapes use them.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from . import validate as _rules
from ..errors import InputError, shown
from ..geometry import Geometry, Heightfield, Mesh
from ..sdf import SDFPack, SDFSettings, build_sdf
from ..transforms import IDENTITY_POSE, check_poses, pose_compose
from .material import MATERIAL_COUNT, ShapeMaterial, material_row
from .mass import DEFAULT_DENSITY, body_mass_properties, check_inertia, inverse_mass_properties, mass_properties
from .paths import ENVS_ROOT, is_under, prim_path_problem
from .replicate import env_grid, replicate

# DEFAULT_DENSITY, ENVS_ROOT, env_grid and mass_properties live in mass, paths and replicate now;
# they stay importable from here.
__all__ = ["Model", "ModelBuilder", "State", "SDFSpec", "IDENTITY", "DEFAULT_STIFFNESS", "DEFAULT_FRICTION",
           "DEFAULT_ENV_SPACING", "DEFAULT_DENSITY", "ENVS_ROOT", "env_grid", "mass_properties"]

#: The identity pose [0, 0, 0, 0, 0, 0, 1].
IDENTITY = IDENTITY_POSE
#: N/m³, the hydroelastic stiffness of a shape that does not set one (``newton:hydroelasticStiffness``).
DEFAULT_STIFFNESS = float(_rules.SDF_COLLISION_DEFAULTS["newton:hydroelasticStiffness"])
#: Static and dynamic friction of a shape without a bound physics material.
DEFAULT_FRICTION = 0.5
#: m, distance between neighbouring env origins on the replication grid.
DEFAULT_ENV_SPACING = 2.0


@dataclass
class State:
    """Body poses and velocities at one step.

    | field | shape | meaning | units |
    |---|---|---|---|
    | ``body_q`` | (B,7) | pose of each body frame in world [px,py,pz,qx,qy,qz,qw] | m |
    | ``body_qd`` | (B,6) | [linear velocity of the centre of mass, angular velocity], world | m/s, rad/s |
    """

    body_q: np.ndarray
    body_qd: np.ndarray


@dataclass(frozen=True)
class SDFSpec:
    """One distinct SDF: what :func:`~hydro.sdf.build_sdf` is called with."""

    geometry: Geometry
    settings: SDFSettings
    extra_padding: float


#: An SDF build announced on the command line (it takes a second or more): a mesh of this many
#: triangles or more, or a grid this fine or finer.
LONG_BUILD_TRIANGLES = 5000
LONG_BUILD_RESOLUTION = 192


def _long_sdf_build(spec: "SDFSpec") -> bool:
    faces = getattr(spec.geometry, "faces", None)
    return (faces is not None and len(faces) >= LONG_BUILD_TRIANGLES) or \
        spec.settings.max_resolution >= LONG_BUILD_RESOLUTION


def _geometry_name(geometry) -> str:
    name = getattr(geometry, "name", "") or ""
    return f"{geometry.kind_name} {name}".strip()


@dataclass(eq=False)
class Model:
    """Bodies, shapes and SDFs of a scene (S shapes, B bodies, E envs). Built once; read-only.

    | field | shape | meaning | units |
    |---|---|---|---|
    | ``body_count`` | | B | |
    | ``shape_count`` | | S | |
    | ``num_envs`` | | E | |
    | ``env_origins`` | (E,3) | world origin of each env | m |
    | ``body_path`` | list[str] (B) | prim path of each body | |
    | ``body_env`` | int32 (B,) | env of each body | |
    | ``body_q0`` | (B,7) | initial pose of the body frame in world [px,py,pz,qx,qy,qz,qw] | m |
    | ``body_qd0`` | (B,6) | initial [linear velocity of the COM, angular velocity], world | m/s, rad/s |
    | ``body_mass`` | (B,) | mass | kg |
    | ``body_inv_mass`` | (B,) | 1/mass; 0 for kinematic or massless bodies | 1/kg |
    | ``body_com`` | (B,3) | centre of mass in the body frame | m |
    | ``body_inertia`` | (B,3,3) | inertia tensor about the COM, body frame axes | kg·m² |
    | ``body_inv_inertia`` | (B,3,3) | its inverse; 0 for kinematic bodies | 1/(kg·m²) |
    | ``body_kinematic`` | bool (B,) | moved by its velocity only, never by forces | |
    | ``body_articulation`` | int32 (B,) | index into ``articulations`` (its key order), −1 none | |
    | ``shape_path`` | list[str] (S) | prim path of each shape | |
    | ``shape_geometry`` | list[Geometry] (S) | geometry in the shape frame (canonical along +Z) | m |
    | ``shape_body`` | int32 (S,) | body of each shape, −1 static | |
    | ``shape_env`` | int32 (S,) | env of each shape; −1 global (pairs with every env) | |
    | ``shape_local_pose`` | (S,7) | shape frame relative to the body frame (world pose for statics) | m |
    | ``shape_hydroelastic`` | bool (S,) | ``newton:hydroelasticEnabled`` | |
    | ``shape_stiffness`` | (S,) | ``newton:hydroelasticStiffness`` k | N/m³ |
    | ``shape_margin`` | (S,) | ``newton:contactMargin``, outward inflation | m |
    | ``shape_gap`` | (S,) | ``newton:contactGap``, extra distance for early contacts | m |
    | ``shape_friction`` | (S,2) | (static, dynamic) friction coefficients (= ``shape_material[:, :2]``) | |
    | ``shape_material`` | (S, M) | resolved contact material, columns ``MAT_*`` of :mod:`~hydro.scene.material` | |
    | ``shape_collision_enabled`` | bool (S,) | ``physics:collisionEnabled``; False: collides with nothing | |
    | ``shape_collision_group`` | int32 (S,) | the shape's collision-group set (0: in no group) | |
    | ``collision_group_mask`` | bool (C,C) | whether shapes of group sets i and j may collide | |
    | ``filtered_shape_pairs`` | int32 (K,2) | shape pairs (a < b, sorted) that never collide | |
    | ``shape_sdf_collision`` | bool (S,) | carries NewtonSDFCollisionAPI (wants an SDF) | |
    | ``shape_sdf_settings`` | list[SDFSettings] (S) | the ``newton:sdf*`` settings | |
    | ``shape_sdf`` | int32 (S,) | index into ``sdfs`` and ``sdf_specs``, −1 when the shape has none | |
    | ``sdf_specs`` | list[SDFSpec] | each distinct SDF: geometry, settings, padding margin + gap | |
    | ``sdfs`` | list[SDF] | the built SDFs, one per spec (empty until built) | |
    | ``sdf_pack`` | SDFPack | ``sdfs`` packed for the kernels | |
    | ``articulations`` | dict[str, list[int]] | articulation root prim path → its body indices | |
    """

    body_count: int
    shape_count: int
    num_envs: int
    env_origins: np.ndarray
    body_path: list
    body_env: np.ndarray
    body_q0: np.ndarray
    body_qd0: np.ndarray
    body_mass: np.ndarray
    body_inv_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    body_inv_inertia: np.ndarray
    body_kinematic: np.ndarray
    body_articulation: np.ndarray
    shape_path: list
    shape_geometry: list
    shape_body: np.ndarray
    shape_env: np.ndarray
    shape_local_pose: np.ndarray
    shape_hydroelastic: np.ndarray
    shape_stiffness: np.ndarray
    shape_margin: np.ndarray
    shape_gap: np.ndarray
    shape_friction: np.ndarray
    shape_material: np.ndarray
    shape_collision_enabled: np.ndarray
    shape_collision_group: np.ndarray
    collision_group_mask: np.ndarray
    filtered_shape_pairs: np.ndarray
    shape_sdf_collision: np.ndarray
    shape_sdf_settings: list
    shape_sdf: np.ndarray
    sdf_specs: list
    sdfs: list
    sdf_pack: SDFPack
    articulations: dict
    _shape_sdf_spec: np.ndarray = field(default=None, repr=False)

    def state(self) -> State:
        """A fresh state holding copies of the initial poses and velocities."""
        return State(body_q=self.body_q0.copy(), body_qd=self.body_qd0.copy())

    def shape_world_poses(self, state: State | None = None) -> np.ndarray:
        """(S,7) world pose of every shape in ``state`` (default: the initial poses)."""
        body_q = self.body_q0 if state is None else np.asarray(state.body_q, dtype=float)
        out = self.shape_local_pose.copy()
        on_body = self.shape_body >= 0
        if np.any(on_body):
            out[on_body] = pose_compose(body_q[self.shape_body[on_body]], self.shape_local_pose[on_body])
        return out

    def find_shapes(self, pattern: str) -> np.ndarray:
        """Indices (int32) of the shapes whose prim path fully matches the regular expression."""
        rx = re.compile(pattern)
        return np.array([i for i, p in enumerate(self.shape_path) if rx.fullmatch(p)], dtype=np.int32)

    def find_bodies(self, pattern: str) -> np.ndarray:
        """Indices (int32) of the bodies whose prim path fully matches the regular expression."""
        rx = re.compile(pattern)
        return np.array([i for i, p in enumerate(self.body_path) if rx.fullmatch(p)], dtype=np.int32)

    def may_collide(self, a: int, b: int) -> bool:
        """Whether shapes ``a`` and ``b`` may collide at all (the host reference of the pair rule):
        different bodies (two static shapes never collide), the same env or one of them global
        (env −1), both collision-enabled, their collision groups allow it, and the pair is not
        filtered."""
        a, b = int(a), int(b)
        if a == b:
            return False
        if self.shape_body[a] == self.shape_body[b]:  # same body, or both static (-1)
            return False
        ea, eb = self.shape_env[a], self.shape_env[b]
        if ea >= 0 and eb >= 0 and ea != eb:
            return False
        if not (self.shape_collision_enabled[a] and self.shape_collision_enabled[b]):
            return False
        if not self.collision_group_mask[self.shape_collision_group[a], self.shape_collision_group[b]]:
            return False
        key = (min(a, b), max(a, b))
        f = self.filtered_shape_pairs
        if len(f):
            i = np.searchsorted(f[:, 0] * np.int64(self.shape_count) + f[:, 1], key[0] * self.shape_count + key[1])
            if i < len(f) and tuple(f[i]) == key:
                return False
        return True

    def build_sdfs(self) -> None:
        """Build every distinct SDF (once) and point ``shape_sdf`` at them."""
        if len(self.sdfs) != len(self.sdf_specs):
            from ..jit import announce

            sdfs = []
            for i, s in enumerate(self.sdf_specs):
                if _long_sdf_build(s):
                    announce(f"hydro: building SDF {i + 1}/{len(self.sdf_specs)}: {_geometry_name(s.geometry)} at "
                             f"resolution {s.settings.max_resolution}…")
                sdfs.append(build_sdf(s.geometry, s.settings, extra_padding=s.extra_padding))
            self.sdfs = sdfs
            self.sdf_pack = SDFPack(self.sdfs)
        self.shape_sdf = self._shape_sdf_spec.copy()

    def sdf_memory_bytes(self) -> int:
        """Bytes held by the built SDFs (each distinct field counted once)."""
        return sum(s.memory().total_bytes for s in self.sdfs)

    def with_sdf_resolution(self, shape: int, max_resolution: int) -> "Model":
        """A new model in which the SDF of ``shape`` is rebuilt with ``max_resolution`` voxels along
        its longest axis (its target voxel size, if set, is dropped).

        Every shape sharing that SDF changes with it. The new model shares everything else with
        this one (arrays, geometry, the other SDFs) and gets a fresh :class:`~hydro.sdf.SDFPack`;
        this model is not modified. An unbuilt model (``finalize(build_sdfs=False)``) only gets
        the new spec: :meth:`build_sdfs` builds it.
        """
        if isinstance(shape, bool) or not isinstance(shape, (int, np.integer)) or not 0 <= shape < self.shape_count:
            raise ValueError(f"shape must be an index in [0, {self.shape_count - 1}], got {shown(shape)}")
        spec_of = self.shape_sdf if self._shape_sdf_spec is None else self._shape_sdf_spec
        i = int(spec_of[shape])
        if i < 0:
            raise ValueError(f"shape {self.shape_path[shape]} has no SDF")
        old = self.sdf_specs[i]
        try:
            settings = replace(old.settings, max_resolution=max_resolution, target_voxel_size=None)
        except ValueError as exc:
            raise ValueError(f"shape {self.shape_path[shape]}: {exc}") from None
        spec = SDFSpec(old.geometry, settings, old.extra_padding)
        changes = {
            "sdf_specs": [spec if k == i else s for k, s in enumerate(self.sdf_specs)],
            "shape_sdf_settings": [settings if spec_of[s] == i else self.shape_sdf_settings[s]
                                   for s in range(self.shape_count)],
        }
        if len(self.sdfs) == len(self.sdf_specs):
            sdf = build_sdf(spec.geometry, settings, extra_padding=spec.extra_padding)
            sdfs = [sdf if k == i else s for k, s in enumerate(self.sdfs)]
            changes.update(sdfs=sdfs, sdf_pack=SDFPack(sdfs))
        return replace(self, **changes)


# ================================================================================================


@dataclass
class _Body:
    path: str
    pose: np.ndarray
    mass: float | None
    density: float | None
    com: np.ndarray | None
    inertia: np.ndarray | None
    velocity: np.ndarray
    angular_velocity: np.ndarray
    kinematic: bool


@dataclass
class _Shape:
    path: str
    geometry: Geometry
    body: int
    local_pose: np.ndarray
    hydroelastic: bool
    stiffness: float
    sdf: SDFSettings
    margin: float
    gap: float
    friction: tuple
    density: float | None
    sdf_collision: bool
    index: int = -1  # the authored shape it is (copies keep it)
    collision_enabled: bool = True
    collision_groups: tuple = ()
    material: ShapeMaterial = ShapeMaterial()


@dataclass(frozen=True)
class _Group:
    name: str
    filtered: tuple
    invert: bool


def _vec3(name: str, v) -> np.ndarray:
    a = np.asarray(v, dtype=float).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be 3 finite numbers, got {shown(v)}")
    return a


def _pose(name: str, pose) -> np.ndarray:
    p = check_poses(np.asarray(pose, dtype=float).reshape(-1), name)
    if p[6] < 0:
        p[3:] = -p[3:]
    return p


def _positive_or_none(name: str, v):
    if v is None:
        return None
    f = float(v)
    if not math.isfinite(f) or f <= 0:
        raise ValueError(f"{name} must be a finite number > 0 (or None), got {shown(v)}")
    return f


class ModelBuilder:
    """Makes a :class:`Model` from Python calls (``load_usd`` uses it too).

    Prim paths name every body and shape (``/World/envs/env_0/Box``); they decide envs (see
    :mod:`hydro.scene.replicate`) and are what :meth:`Model.find_shapes` matches.
    """

    def __init__(self):
        self._bodies: list[_Body] = []
        self._shapes: list[_Shape] = []
        self._articulations: list[str] = []
        self._env_origins: dict[int, np.ndarray] = {}
        self._body_paths: set = set()
        self._shape_paths: set = set()
        self._groups: dict[str, _Group] = {}
        self._filtered: list[tuple[str, str]] = []

    @property
    def body_count(self) -> int:
        return len(self._bodies)

    @property
    def shape_count(self) -> int:
        return len(self._shapes)

    def add_body(self, path: str, pose=IDENTITY, *, mass=None, density=None, com=None, inertia=None,
                 velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0), kinematic=False) -> int:
        """Add a rigid body; returns its index.

        ``pose``: the body frame in world (m, quaternion x, y, z, w). ``mass`` (kg), ``com`` (m, body
        frame), ``inertia`` (kg·m², 3×3 about the COM or 3 diagonal values): given values win over
        the ones computed from the shapes. ``density`` (kg/m³) applies to its shapes that have
        none. ``velocity``: of the centre of mass, world, m/s; ``angular_velocity``: world, rad/s.
        """
        path = self._check_path(path, self._body_paths, "body")
        body = _Body(
            path=path,
            pose=_pose(f"pose of body {path}", pose),
            mass=_positive_or_none(f"mass of body {path}", mass),
            density=_positive_or_none(f"density of body {path}", density),
            com=None if com is None else _vec3(f"com of body {path}", com),
            inertia=None if inertia is None else check_inertia(f"inertia of body {path}", inertia),
            velocity=_vec3(f"velocity of body {path}", velocity),
            angular_velocity=_vec3(f"angular_velocity of body {path}", angular_velocity),
            kinematic=bool(kinematic),
        )
        self._bodies.append(body)
        self._body_paths.add(path)
        return len(self._bodies) - 1

    def add_shape(self, path: str, geometry: Geometry, *, body: int = -1, local_pose=IDENTITY,
                  hydroelastic: bool = False, stiffness: float = DEFAULT_STIFFNESS,
                  sdf: SDFSettings | None = None, margin: float = 0.0, gap: float = 0.0,
                  static_friction: float = DEFAULT_FRICTION, dynamic_friction: float = DEFAULT_FRICTION,
                  density: float | None = None, sdf_collision: bool = False, collision_enabled: bool = True,
                  collision_groups=(), material: ShapeMaterial | None = None) -> int:
        """Add a collision shape; returns its index.

        ``body`` −1 makes it static, ``local_pose`` then being its world pose. ``hydroelastic``,
        ``stiffness`` (N/m³), ``sdf``, ``margin`` and ``gap`` (m) are the ``newton:*`` attributes.
        ``sdf_collision``: the shape carries NewtonSDFCollisionAPI and gets an SDF even when not
        hydroelastic (hydroelastic shapes always do). ``density`` (kg/m³) for its body's mass.
        ``collision_enabled`` (``physics:collisionEnabled``): False keeps the shape out of every
        pair. ``collision_groups``: names of groups made with :meth:`add_collision_group` that the
        shape belongs to. ``material``: its contact material (friction, and stiffness/damping of
        the default contact path); without one, ``static_friction``/``dynamic_friction`` and
        defaults for the rest; a material's unset friction also takes those arguments.
        Breaking a schema rule raises ``ValueError`` with the finding's line.
        """
        path = self._check_path(path, self._shape_paths, "shape")
        if not isinstance(geometry, Geometry):
            raise ValueError(f"shape {path}: geometry must be a hydro Geometry, got {type(geometry).__name__}")
        if isinstance(body, bool) or not isinstance(body, (int, np.integer)) or not -1 <= body < len(self._bodies):
            raise ValueError(f"shape {path}: body must be -1 (static) or a body index in [0, {len(self._bodies) - 1}], got {shown(body)}")
        if isinstance(geometry, Heightfield) and body != -1:
            raise ValueError(f"shape {path}: a heightfield is static (as in Newton): add it with body=-1")
        sdf = SDFSettings() if sdf is None else sdf
        if not isinstance(sdf, SDFSettings):
            raise ValueError(f"shape {path}: sdf must be an SDFSettings, got {type(sdf).__name__}")
        watertight_error = None
        if (hydroelastic is True or sdf_collision) and isinstance(geometry, Mesh):
            try:
                geometry.check_watertight()
            except ValueError as exc:
                watertight_error = str(exc)
        numbers = {}
        for name, v in (("stiffness", stiffness), ("margin", margin), ("gap", gap)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise ValueError(f"shape {path}: {name} must be a number, got {shown(v)}")
            numbers[name] = float(v)
        findings = _rules.shape_findings(
            path, kind=geometry.kind_name, hydroelastic=hydroelastic, stiffness=numbers["stiffness"],
            max_resolution=sdf.max_resolution, target_voxel_size=sdf.target_voxel_size,
            narrow_band_inner=sdf.narrow_band_inner, narrow_band_outer=sdf.narrow_band_outer,
            padding=sdf.padding, texture_format=sdf.texture_format, margin=numbers["margin"],
            gap=numbers["gap"], watertight_error=watertight_error, sdf_collision=bool(sdf_collision))
        if _rules.has_errors(findings):
            raise ValueError(_rules.format_findings([f for f in findings if f.severity == _rules.ERROR]))
        friction = []
        for name, v in (("static_friction", static_friction), ("dynamic_friction", dynamic_friction)):
            f = float(v)
            if not math.isfinite(f) or f < 0:
                raise ValueError(f"shape {path}: {name} must be a finite number >= 0, got {shown(v)}")
            friction.append(f)
        if material is None:
            material = ShapeMaterial()
        if not isinstance(material, ShapeMaterial):
            raise ValueError(f"shape {path}: material must be a ShapeMaterial, got {type(material).__name__}")
        material = replace(material,
                           static_friction=friction[0] if material.static_friction is None else material.static_friction,
                           dynamic_friction=friction[1] if material.dynamic_friction is None
                           else material.dynamic_friction)
        if not isinstance(collision_enabled, (bool, np.bool_)):
            raise ValueError(f"shape {path}: collision_enabled must be True or False, got {shown(collision_enabled)}")
        if isinstance(collision_groups, str):
            collision_groups = (collision_groups,)
        groups = tuple(collision_groups)
        if not all(isinstance(g, str) and g for g in groups):
            raise ValueError(f"shape {path}: collision_groups must be group names, got {shown(collision_groups)}")
        self._shapes.append(_Shape(
            path=path, geometry=geometry, body=int(body), local_pose=_pose(f"local_pose of shape {path}", local_pose),
            hydroelastic=bool(hydroelastic), stiffness=numbers["stiffness"], sdf=sdf, margin=numbers["margin"],
            gap=numbers["gap"], friction=(material.static_friction, material.dynamic_friction),
            density=_positive_or_none(f"density of shape {path}", density),
            sdf_collision=bool(sdf_collision) or bool(hydroelastic), index=len(self._shapes),
            collision_enabled=bool(collision_enabled), collision_groups=groups, material=material))
        self._shape_paths.add(path)
        return len(self._shapes) - 1

    def add_collision_group(self, name: str, *, filtered_groups=(), invert: bool = False) -> None:
        """A collision group (``UsdPhysics.CollisionGroup``): its shapes do not collide with shapes of
        the groups named in ``filtered_groups`` (either side may name the other); with ``invert``
        they collide only with those groups' shapes (``physics:invertFilteredGroups``), so not with
        shapes in no group either. Groups may
        name groups added later; unknown names are an error when the model is made."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"collision group name must be a non-empty string, got {shown(name)}")
        if name in self._groups:
            raise ValueError(f"collision group {name} is added twice")
        if isinstance(filtered_groups, str):
            filtered_groups = (filtered_groups,)
        self._groups[name] = _Group(name, tuple(filtered_groups), bool(invert))

    def add_filtered_pair(self, path_a: str, path_b: str) -> None:
        """Never let ``path_a`` and ``path_b`` collide (``PhysicsFilteredPairsAPI``): each is a shape
        path or a body path (all of the body's shapes). In a replicated env the pair is filtered
        in every copy."""
        for p in (path_a, path_b):
            if not isinstance(p, str) or not p.startswith("/"):
                raise ValueError(f"filtered pair: {p!r} is not a prim path")
        self._filtered.append((path_a, path_b))

    def add_articulation(self, root_path: str) -> None:
        """Mark ``root_path`` as an articulation root: the bodies at or under it form one articulation."""
        root = self._check_path(root_path, set(self._articulations), "articulation root")
        self._articulations.append(root)

    def set_env_origin(self, env: int, origin) -> None:
        """The world origin of authored env ``env`` (its ``/World/envs/env_<i>`` prim); default 0."""
        self._env_origins[int(env)] = _vec3(f"origin of env {env}", origin)

    @staticmethod
    def _check_path(path, existing, what) -> str:
        problem = prim_path_problem(path)
        if problem is not None:  # caught here, not as a pxr error in save_usd
            raise InputError(f"{what} path {path!r} is not a USD prim path: {problem}")
        if path in existing:
            raise ValueError(f"{what} path {path} is used twice")
        return path

    def _warn_mesh_scale(self) -> None:
        """A :class:`~hydro.geometry.mesh_check.MeshWarning` for each mesh 100 times larger or smaller
        than the median size of the scene's other shapes (a mesh authored in millimetres in a scene
        in metres, say)."""
        from ..geometry.mesh_check import MeshWarning, scene_size_warnings

        sizes = []
        for s in self._shapes:
            if not s.geometry.volumetric:  # planes, heightfields: no size of their own
                sizes.append(math.nan)
                continue
            lo, hi = s.geometry.local_aabb()
            sizes.append(float(np.max(np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float))))
        for i, s in enumerate(self._shapes):
            if not isinstance(s.geometry, Mesh):
                continue
            others = [v for j, v in enumerate(sizes) if j != i and math.isfinite(v) and v > 0.0]
            if others:
                for message in scene_size_warnings(s.geometry, float(np.median(others))):
                    warnings.warn(f"{s.path}: {message}", MeshWarning, stacklevel=3)

    # ------------------------------------------------------------------------------------------
    def finalize(self, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, build_sdfs: bool = True) -> Model:
        """Make the :class:`Model`: mass properties (:mod:`~hydro.scene.mass`), env replication
        (:mod:`~hydro.scene.replicate`), SDFs."""
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {shown(num_envs)}")
        spacing = float(env_spacing)
        if not math.isfinite(spacing) or spacing < 0:
            raise ValueError(f"env_spacing must be a finite number >= 0 (m), got {shown(env_spacing)}")
        num_envs = int(num_envs)

        self._warn_mesh_scale()
        # mass properties once per authored body (copies share them)
        props = [body_mass_properties(body.path, [(s.geometry, s.local_pose, s.density) for s in self._shapes
                                                  if s.body == b], density=body.density, mass=body.mass,
                                      com=body.com, inertia=body.inertia, kinematic=body.kinematic)
                 for b, body in enumerate(self._bodies)]

        bodies, shapes, roots, origins, body_env, shape_env, body_src = replicate(
            self._bodies, self._shapes, self._articulations, self._env_origins, num_envs, spacing)
        B, S, E = len(bodies), len(shapes), len(origins)

        body_q0 = np.array([b.pose for b in bodies], dtype=float).reshape(B, 7)
        body_qd0 = np.array([np.concatenate([b.velocity, b.angular_velocity]) for b in bodies], dtype=float).reshape(B, 6)
        body_mass = np.array([props[k][0] for k in body_src], dtype=float)
        body_com = np.array([props[k][1] for k in body_src], dtype=float).reshape(B, 3)
        body_inertia = np.array([props[k][2] for k in body_src], dtype=float).reshape(B, 3, 3)
        body_kinematic = np.array([b.kinematic for b in bodies], dtype=bool)
        body_inv_mass, body_inv_inertia = inverse_mass_properties(body_mass, body_inertia, body_kinematic)

        articulations = {}
        body_articulation = np.full(B, -1, dtype=np.int32)
        for a, root in enumerate(roots):
            members = [i for i, b in enumerate(bodies) if is_under(b.path, root)]
            articulations[root] = members
        # a body under nested roots belongs to the innermost one
        for a, root in sorted(enumerate(roots), key=lambda t: len(t[1])):
            for i in articulations[root]:
                body_articulation[i] = a

        # distinct SDFs
        specs, spec_index = [], {}
        shape_spec = np.full(S, -1, dtype=np.int32)
        for i, s in enumerate(shapes):
            if not (s.hydroelastic or s.sdf_collision) or not s.geometry.volumetric:
                continue
            extra = s.margin + s.gap
            key = (s.geometry.key(), s.sdf, extra)
            if key not in spec_index:
                spec_index[key] = len(specs)
                specs.append(SDFSpec(s.geometry, s.sdf, extra))
            shape_spec[i] = spec_index[key]

        group_of_set, group_mask = self._collision_groups(shapes)
        filtered = self._filtered_pairs(shapes, shape_env)

        model = Model(
            body_count=B, shape_count=S, num_envs=E, env_origins=np.asarray(origins, dtype=float).reshape(E, 3),
            body_path=[b.path for b in bodies], body_env=np.asarray(body_env, dtype=np.int32).reshape(B),
            body_q0=body_q0, body_qd0=body_qd0, body_mass=body_mass, body_inv_mass=body_inv_mass,
            body_com=body_com, body_inertia=body_inertia, body_inv_inertia=body_inv_inertia,
            body_kinematic=body_kinematic, body_articulation=body_articulation,
            shape_path=[s.path for s in shapes], shape_geometry=[s.geometry for s in shapes],
            shape_body=np.array([s.body for s in shapes], dtype=np.int32).reshape(S),
            shape_env=np.asarray(shape_env, dtype=np.int32).reshape(S),
            shape_local_pose=np.array([s.local_pose for s in shapes], dtype=float).reshape(S, 7),
            shape_hydroelastic=np.array([s.hydroelastic for s in shapes], dtype=bool).reshape(S),
            shape_stiffness=np.array([s.stiffness for s in shapes], dtype=float).reshape(S),
            shape_margin=np.array([s.margin for s in shapes], dtype=float).reshape(S),
            shape_gap=np.array([s.gap for s in shapes], dtype=float).reshape(S),
            shape_friction=np.array([s.friction for s in shapes], dtype=float).reshape(S, 2),
            shape_material=np.array([material_row(s.material) for s in shapes], dtype=float).reshape(S, MATERIAL_COUNT),
            shape_collision_enabled=np.array([s.collision_enabled for s in shapes], dtype=bool).reshape(S),
            shape_collision_group=group_of_set, collision_group_mask=group_mask, filtered_shape_pairs=filtered,
            shape_sdf_collision=np.array([s.sdf_collision for s in shapes], dtype=bool).reshape(S),
            shape_sdf_settings=[s.sdf for s in shapes],
            shape_sdf=np.full(S, -1, dtype=np.int32),
            sdf_specs=specs, sdfs=[], sdf_pack=SDFPack([]), articulations=articulations,
            _shape_sdf_spec=shape_spec,
        )
        if build_sdfs:
            model.build_sdfs()
        return model

    def _collision_groups(self, shapes):
        """Each shape's group set (0: none) and whether sets i and j may collide."""
        for s in shapes:
            for g in s.collision_groups:
                if g not in self._groups:
                    raise ValueError(f"shape {s.path}: no collision group named {g!r} (add_collision_group)")
        for g in self._groups.values():
            for h in g.filtered:
                if h not in self._groups:
                    raise ValueError(f"collision group {g.name} filters {h!r}, which is not a collision group")

        def disables(g, h):  # g's filter keeps its shapes from colliding with h's
            return (h in self._groups[g].filtered) != self._groups[g].invert

        sets = [frozenset()]
        index = {frozenset(): 0}
        of_shape = np.zeros(len(shapes), dtype=np.int32)
        for i, s in enumerate(shapes):
            key = frozenset(s.collision_groups)
            if key not in index:
                index[key] = len(sets)
                sets.append(key)
            of_shape[i] = index[key]
        def keeps_out_ungrouped(g):  # an inverted filter admits only the groups it names
            return self._groups[g].invert

        mask = np.ones((len(sets), len(sets)), dtype=bool)
        for i, gi in enumerate(sets):
            for j, gj in enumerate(sets):
                if not gi or not gj:  # a shape in no group meets the other side's filters alone
                    mask[i, j] = not any(keeps_out_ungrouped(g) for g in gi | gj)
                else:
                    mask[i, j] = not any(disables(g, h) or disables(h, g) for g in gi for h in gj)
        return of_shape, mask

    def _filtered_pairs(self, shapes, shape_env):
        """(K, 2) sorted unique shape pairs that never collide, over every env copy."""
        if not self._filtered:
            return np.zeros((0, 2), dtype=np.int32)
        authored_shape = {s.path: i for i, s in enumerate(self._shapes)}
        authored_body = {b.path: i for i, b in enumerate(self._bodies)}

        def sources(path):
            if path in authored_shape:
                return {authored_shape[path]}
            if path in authored_body:
                b = authored_body[path]
                return {i for i, s in enumerate(self._shapes) if s.body == b}
            raise ValueError(f"filtered pair names {path}, which is neither a shape nor a body")

        copies = {}
        for k, s in enumerate(shapes):
            copies.setdefault(s.index, []).append(k)
        out = set()
        for pa, pb in self._filtered:
            for sa in sources(pa):
                for sb in sources(pb):
                    for x in copies.get(sa, ()):
                        for y in copies.get(sb, ()):
                            ex, ey = shape_env[x], shape_env[y]
                            if x != y and (ex < 0 or ey < 0 or ex == ey):
                                out.add((min(x, y), max(x, y)))
        return np.array(sorted(out), dtype=np.int32).reshape(-1, 2)
