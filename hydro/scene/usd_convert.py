"""USD's values as hydro's, on plain data: what :mod:`hydro.scene.usd_io` computes once ``pxr``
has handed it numbers (no ``pxr`` here; the rules are usd_io's module docstring).

Reading: a prim's world matrix (4×4, row vectors, hydro's metres and Z-up) split into a rigid
pose and per-axis scales (:func:`decompose`, :func:`rigid_pose`); a collider's
:class:`~hydro.geometry.Geometry` from its type, matrix and sizes (:func:`primitive_geometry`,
:func:`mesh_geometry`); a body's and a collider's values from their authored attributes
(:func:`body_values`, :func:`collider_values`); the scene read from a stage (:class:`SceneData`)
into a :class:`~hydro.scene.model.ModelBuilder` (:func:`build_model`); gravity
(:func:`gravity_vector`). Writing: what to define, where and with which pose
(:func:`write_plan`, :func:`write_geometry_scale`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validate as rules
from ..errors import InputError
from ..geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Heightfield, Mesh, Plane, Sphere
from ..sdf import SDFSettings
from ..transforms import matrix_to_quat, pose_compose, pose_inverse, quat_rotate, quat_to_matrix
from .mass import mass_properties, shell_properties, shell_thickness_or_default
from .model import DEFAULT_STIFFNESS, IDENTITY, ModelBuilder
from .paths import env_of, env_path, is_under, nearest_ancestor, prim_order
from .usd_values import filter_targets, merge_collision_groups, to_si
from .usd_values import shape_material as usd_shape_material
from ..errors import shown

GEOMETRY_TYPES = ("Sphere", "Cube", "Capsule", "Capsule_1", "Cylinder", "Cylinder_1", "Cone", "Mesh", "Plane")
KIND_OF_TYPE = {"Sphere": "sphere", "Cube": "box", "Capsule": "capsule", "Capsule_1": "capsule",
                "Cylinder": "cylinder", "Cylinder_1": "cylinder", "Cone": "cone", "Mesh": "mesh", "Plane": "plane",
                "HeightField": "heightfield", "Heightfield": "heightfield"}
#: Prim types of a heightfield collider. Neither UsdGeom/UsdPhysics nor newton-usd-schemas
#: define one (Newton's own USD importer reads none; Isaac Lab authors terrain as a Mesh, which
#: hydro reads as a triangle mesh): hydro reads a ``HeightField`` prim with the attributes below,
#: the fields of Newton's Python ``Heightfield`` (docs/usd.md).
HEIGHTFIELD_TYPES = ("HeightField", "Heightfield")
#: float[] (rows × cols, row-major, stage units): heights[r, c] at x = −hx + 2hx·c/(cols−1), y = −hy + 2hy·r/(rows−1)
HF_ELEVATION = "hydro:heightfield:elevation"
#: int, int: the grid's rows (along y) and columns (along x), each >= 2
HF_ROWS, HF_COLS = "hydro:heightfield:numRows", "hydro:heightfield:numCols"
#: float2 (hx, hy), stage units: half-extents of the rectangle the grid spans
HF_HALF_EXTENTS = "hydro:heightfield:halfExtents"
#: float, stage units (optional, default 0.1 m): the slab's depth below the lowest height
HF_THICKNESS = "hydro:heightfield:thickness"
#: Prim types that carry an ``axis`` attribute.
AXIS_TYPES = ("Capsule", "Capsule_1", "Cylinder", "Cylinder_1", "Cone", "Plane")
AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
# canonical +Z → the prim's axis
AXIS_QUAT = {
    "X": np.array([0.0, math.sqrt(0.5), 0.0, math.sqrt(0.5)]),  # +90° about Y
    "Y": np.array([-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)]),  # −90° about X
    "Z": np.array([0.0, 0.0, 0.0, 1.0]),
}


class GeometryError(ValueError):
    """A collider hydro cannot represent (reported as HYDRO.GEO.001)."""


# ================================================================================================
# Numbers


def shortest(x: float) -> float:
    """A 32-bit float as the shortest decimal that reads back to it (``0.05f`` → 0.05), so
    values authored as text load exactly as written."""
    return float(str(np.float32(x)))


def plain32(v):
    """:func:`shortest` applied to a float, or to every float of a tuple or list."""
    if isinstance(v, float):
        return shortest(v)
    if isinstance(v, tuple):
        return tuple(shortest(x) for x in v)
    if isinstance(v, list):
        return [plain32(x) for x in v]
    return v


def number(attrs, name, default=0.0):
    """An authored finite number, else ``default`` (bad values are the validator's to report)."""
    v = attrs.get(name, default)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else default


def vector(attrs, name, n=3):
    """An authored vector of ``n`` finite numbers as an array, else None."""
    v = attrs.get(name)
    if isinstance(v, (tuple, list)) and len(v) == n and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        return np.array(v, dtype=float)
    return None


def as_float(v):
    """A number as a float; anything else (None, a bad value for the validator) unchanged."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


# ================================================================================================
# Transforms and geometry


def decompose(m: np.ndarray, unit: float | None = None):
    """Row-vector 4×4 → (translation, scales (3,), rows U (3×3, rows = local axes in world), det sign).

    A scale within 1e-9 of ``unit`` (the stage's metres per unit: no authored scale) is taken
    as exactly ``unit``, so rounding in the composed rotations does not leak into sizes.
    """
    a = m[:3, :3]
    s = np.linalg.norm(a, axis=1)
    if unit is not None:
        s = np.where(np.abs(s / unit - 1.0) < 1e-9, unit, s)
    if np.any(s < 1e-12 * max(1.0, s.max())):
        raise GeometryError("its transform (the xformOps of the prim or its ancestors) collapses an axis (zero scale)")
    u = a / s[:, None]
    if not np.allclose(u @ u.T, np.eye(3), atol=1e-6):
        raise GeometryError("its transform (the xformOps of the prim or its ancestors) is sheared (scale along axes "
                            "that are not the prim's own); "
                            "only per-axis scale is supported on primitives")
    return m[3, :3].copy(), s, u, float(np.sign(np.linalg.det(u)))


def rigid_pose(m: np.ndarray) -> np.ndarray:
    """Pose (7,) of the rigid part of a row-vector matrix (its rotation by polar decomposition)."""
    a = m[:3, :3]
    w, _, vt = np.linalg.svd(a)
    q = w @ vt
    if np.linalg.det(q) < 0:
        q = -q
    return np.concatenate([m[3, :3], matrix_to_quat(q.T)])


def _close(a, b, tol=1e-6) -> bool:
    return abs(a - b) <= tol * max(abs(a), abs(b))



def primitive_geometry(type_name: str, m: np.ndarray, unit: float, axis: str, get):
    """(Geometry, world pose) of a primitive collider prim of type ``type_name`` with world matrix
    ``m`` (hydro frame; ``unit`` the stage's metres per unit), its ``axis`` attribute and
    ``get(name)`` giving an attribute's value as a float (raising :class:`GeometryError` when it
    has none). Meshes go through :func:`mesh_geometry`."""
    tn = type_name
    if tn not in GEOMETRY_TYPES:
        raise GeometryError(f"a collider of type {tn or '(no type)'} is not supported: use Sphere, Cube, Capsule, "
                            f"Cylinder, Cone, Mesh or Plane")
    if tn not in AXIS_TYPES:
        axis = "Z"
    if axis not in AXIS_INDEX:
        raise GeometryError(f"axis must be X, Y or Z, got {shown(axis)}")
    t, s, u, sign = decompose(m, unit=unit)
    ai = AXIS_INDEX[axis]
    if sign < 0:  # a mirror: absorb it by a symmetry plane of the shape that contains its axis
        u = u.copy()
        u[(ai + 1) % 3] *= -1.0
    q = matrix_to_quat(u.T)
    pose = np.concatenate([t, q])
    pose = pose_compose(pose, np.concatenate([np.zeros(3), AXIS_QUAT[axis]]))
    across = [s[k] for k in range(3) if k != ai]
    along = s[ai]
    try:
        if tn == "Sphere":
            r = get("radius")
            if _close(s[0], s[1], 1e-9) and _close(s[0], s[2], 1e-9):
                return Sphere(r * s[0]), pose
            return Ellipsoid(tuple(r * s)), pose
        if tn == "Cube":
            return Box(tuple(get("size") * s)), pose
        if tn == "Plane":
            return Plane(), pose
        if tn in ("Capsule_1", "Cylinder_1"):
            rt, rb = get("radiusTop"), get("radiusBottom")
            if not _close(rt, rb, 1e-9):
                raise GeometryError(f"{tn} with radiusTop {rt} != radiusBottom {rb} is not supported")
            r = rt
        else:
            r = get("radius")
        h = get("height")
        if tn.startswith("Capsule"):
            if not (_close(s[0], s[1]) and _close(s[0], s[2])):
                raise GeometryError(f"a Capsule needs a uniform scale (its caps must stay round), got {s.tolist()}")
            return Capsule(r * s[0], h * s[0]), pose
        if not _close(across[0], across[1]):
            raise GeometryError(f"a {tn} needs equal scales across its axis {axis} (a round cross-section), "
                                f"got {s.tolist()}")
        if tn.startswith("Cylinder"):
            return Cylinder(r * across[0], h * along), pose
        return Cone(r * across[0], h * along), pose
    except GeometryError:
        raise
    except ValueError as exc:
        raise GeometryError(f"{tn} (radius, size or height, times the prim's scale): {exc}") from None


def heightfield_geometry(m: np.ndarray, unit: float, elevation, rows, cols, half_extents, thickness=None):
    """(Heightfield, world pose) of a ``HeightField`` prim with world matrix ``m`` and its
    authored :data:`HF_ELEVATION`, rows, columns, half-extents and thickness (stage units; None:
    not authored). Per-axis scale scales the extents (x, y) and the heights (z)."""
    missing = [n for n, v in ((HF_ELEVATION, elevation), (HF_ROWS, rows), (HF_COLS, cols),
                              (HF_HALF_EXTENTS, half_extents)) if v is None]
    if missing:
        raise GeometryError(f"a HeightField needs {', '.join(missing)} authored")
    rows, cols = int(rows), int(cols)
    z = np.asarray(elevation, dtype=float).reshape(-1)
    if rows < 2 or cols < 2 or len(z) != rows * cols:
        raise GeometryError(f"{HF_ELEVATION} must hold {HF_ROWS} x {HF_COLS} values with both >= 2, got "
                            f"{len(z)} values for {rows} x {cols}")
    he = np.asarray(half_extents, dtype=float).reshape(-1)
    if len(he) != 2:
        raise GeometryError(f"{HF_HALF_EXTENTS} must be 2 numbers (hx, hy), got {len(he)}")
    t, s, u, sign = decompose(m, unit=unit)
    if sign < 0:
        raise GeometryError("a HeightField cannot be mirrored (a negative scale)")
    pose = np.concatenate([t, matrix_to_quat(u.T)])
    try:
        thick = 0.1 if thickness is None else float(thickness) * s[2]
        return Heightfield(z.reshape(rows, cols) * s[2], hx=he[0] * s[0], hy=he[1] * s[1], thickness=thick), pose
    except ValueError as exc:
        raise GeometryError(f"HeightField: {exc}") from None


def mesh_geometry(points, counts, indices, m: np.ndarray, *, left_handed: bool, name: str):
    """(Mesh, world pose) of a mesh collider: ``points``, ``faceVertexCounts`` and
    ``faceVertexIndices`` as authored (None when missing), polygons fan-triangulated, the linear
    part of the world matrix ``m`` baked into the vertices, the winding flipped for a mirroring
    matrix or a ``leftHanded`` mesh."""
    if points is None or counts is None or indices is None or len(points) == 0 or len(counts) == 0:
        raise GeometryError("a Mesh collider needs points, faceVertexCounts and faceVertexIndices authored")
    pts = np.array(points, dtype=float).reshape(-1, 3)
    counts = np.array(counts, dtype=np.int64)
    idx = np.array(indices, dtype=np.int64)
    if counts.sum() != len(idx):
        raise GeometryError(f"faceVertexCounts add up to {counts.sum()} but there are {len(idx)} faceVertexIndices")
    if np.any(counts < 3):
        raise GeometryError("faceVertexCounts: every face needs at least 3 vertices")
    tris = []
    start = 0
    for c in counts:  # fan triangulation
        f = idx[start:start + c]
        tris.extend((f[0], f[k], f[k + 1]) for k in range(1, c - 1))
        start += c
    faces = np.array(tris, dtype=np.int64)
    a = m[:3, :3]
    if abs(np.linalg.det(a)) < 1e-300:
        raise GeometryError("its transform collapses an axis (zero scale)")
    pose = rigid_pose(m)
    r_row = quat_to_matrix(pose[3:]).T
    verts = pts @ a @ r_row.T
    if (np.linalg.det(a) < 0) != left_handed:
        faces = faces[:, [0, 2, 1]]
    try:
        return Mesh(verts, faces, name=name), pose
    except ValueError as exc:
        raise GeometryError(str(exc)) from None


# ================================================================================================
# Bodies, colliders, the scene


class SceneData:
    """Everything read from a stage, as plain data, before the builder sees it."""

    def __init__(self):
        self.records = []  # PrimRecord per relevant prim
        self.bodies = []  # dicts (body_values)
        self.shapes = []  # dicts (collider_values)
        self.articulations = []
        self.env_origins = {}
        self.groups = []  # (path, filtered group paths, invert, merge name) per collision group
        self.filtered = []  # (prim path, [target paths]) per PhysicsFilteredPairsAPI


class MaterialError(ValueError):
    """A bound physics material with a value hydro cannot use (reported as HYDRO.MAT.001)."""

    def __init__(self, material: str, message: str):
        super().__init__(message)
        self.material = material


def body_values(path: str, m: np.ndarray, parent: np.ndarray, attrs: dict, schemas, *, kpu: float, mpu: float) -> dict:
    """A rigid body's :meth:`~hydro.scene.model.ModelBuilder.add_body` values, from its world matrix
    ``m``, its parent's ``parent`` (both hydro frame), its authored attributes and applied schemas,
    and the stage's kilograms (``kpu``) and metres (``mpu``) per unit."""
    pose = rigid_pose(m)
    pu = parent[:3, :3] / np.linalg.norm(parent[:3, :3], axis=1)[:, None]
    zero = np.zeros(3)
    v = (vector(attrs, "physics:velocity") if "physics:velocity" in attrs else zero)
    w = (vector(attrs, "physics:angularVelocity") if "physics:angularVelocity" in attrs else zero)
    v = (zero if v is None else v) @ parent[:3, :3]
    w = np.radians(zero if w is None else w) @ pu
    mass = number(attrs, "physics:mass")
    density = number(attrs, "physics:density")
    com = vector(attrs, "physics:centerOfMass")
    if com is not None:
        try:  # the body prim's own per-axis scale (and the stage units) apply to its centre of mass
            _, scale, _, _ = decompose(m, unit=mpu)
            com = np.asarray(com, dtype=float) * scale
        except GeometryError:  # a sheared body frame: go through the whole matrix
            com_world = np.append(np.asarray(com, dtype=float), 1.0) @ m
            com = quat_rotate(pose_inverse(pose)[3:], com_world[:3] - pose[:3])
    else:
        com = None
    inertia = None
    six = vector(attrs, "newton:inertia", 6) if rules.NEWTON_MASS_API in schemas else None
    diag = vector(attrs, "physics:diagonalInertia")
    if six is not None:
        ixx, iyy, izz, ixy, ixz, iyz = six
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) * kpu * mpu**2
    elif diag is not None and diag.max() > 0:
        q = vector(attrs, "physics:principalAxes", 4)
        n = 0.0 if q is None else np.linalg.norm(q)
        rot = quat_to_matrix(q / n) if n > 0 else np.eye(3)
        inertia = rot @ np.diag(diag) @ rot.T * kpu * mpu**2
    return dict(path=path, pose=pose, mass=mass * kpu if mass > 0 else None,
                density=density * kpu / mpu**3 if density > 0 else None, com=com, inertia=inertia,
                velocity=v, angular_velocity=w, kinematic=attrs.get("physics:kinematicEnabled", False) is True)


def _shell_thickness(values: dict, mpu: float):
    """The wall thickness (m) of a collider with ``newton:massModel = "shell"`` (None: solid); a
    bad value is the validator's to report (solid meanwhile)."""
    if values.get("newton:massModel") != "shell":
        return None
    t = values.get("newton:shellThickness", -math.inf)
    if t == -math.inf:
        return shell_thickness_or_default(None)
    ok = isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0
    return float(t) * mpu if ok else None


def collider_values(path: str, record, values: dict, geometry, world_pose, body, material, *, kpu: float,
                    mpu: float) -> dict:
    """A collider's :meth:`~hydro.scene.model.ModelBuilder.add_shape` values.

    ``record``: its :class:`~hydro.scene.validate.PrimRecord` (authored values, schema fallbacks,
    applied schemas); ``values`` its ``newton:*`` values (:func:`hydro.scene.validate.shape_values`,
    the prim's units, sentinels kept); ``body`` its body's path (None: static); ``material`` (path,
    resolved values[, (mpu, kpu) of the material's own units]) of its bound physics material, or
    None. ``kpu``/``mpu``: the units the collider's values are authored in (its layer's). Raises
    :class:`MaterialError` for a material value hydro cannot use."""
    resolved = {**record.fallbacks, **record.attributes}
    applied = record.applied or record.schemas
    v = rules.resolve_sentinels({k: to_si(rules.VALUE_ATTRIBUTES[k], x, mpu, kpu) for k, x in values.items()})
    shell = _shell_thickness(resolved, mpu) if rules.NEWTON_MASS_API in applied else None
    volume = None
    if geometry.volumetric:
        volume = shell_properties(geometry, shell)[0] if shell is not None else geometry.volume()
    density = None
    if rules.MASS_API in applied:
        if number(resolved, "physics:density") > 0:
            density = number(resolved, "physics:density") * kpu / mpu**3
        elif number(resolved, "physics:mass") > 0 and volume:
            density = number(resolved, "physics:mass") * kpu / volume
    shape_material = None
    if material is not None:
        try:
            m_mpu, m_kpu = material[2] if len(material) > 2 else (mpu, kpu)  # the material's own layer's units
            shape_material, material_density = usd_shape_material(material[1], mpu=m_mpu, kpu=m_kpu)
        except ValueError as exc:
            raise MaterialError(material[0], f"{exc} (the physics material bound to {path})") from None
        if density is None:
            density = material_density
    sdf_collision = rules.SDF_COLLISION_API in applied
    settings = None
    if (sdf_collision or v["hydroelastic"] is True) and geometry.volumetric:
        try:
            settings = SDFSettings(max_resolution=v["max_resolution"], target_voxel_size=as_float(v["target_voxel_size"]),
                                   narrow_band_inner=float(v["narrow_band_inner"]),
                                   narrow_band_outer=float(v["narrow_band_outer"]), padding=as_float(v["padding"]),
                                   texture_format=v["texture_format"])
        except (TypeError, ValueError):
            settings = None  # the validator names the bad value
    extra = None
    if settings is not None and all(isinstance(x, float) and math.isfinite(x) for x in (v["margin"], v["gap"])):
        extra = float(v["margin"]) + float(v["gap"])
    enabled = resolved.get("physics:collisionEnabled", True) is not False
    return dict(path=path, geometry=geometry, world_pose=world_pose, body=body, values=v, material=shape_material,
                density=density, sdf_collision=sdf_collision, shell=shell, collision_enabled=enabled,
                budget=(settings, extra) if extra is not None else None, groups=[])


def _shell_bodies(scene: SceneData) -> dict:
    """Explicit (mass, com, inertia) of each body with a shell shape (the builder computes solids)."""
    out = {}
    for b in scene.bodies:
        shapes = [s for s in scene.shapes if s["body"] == b["path"]]
        if not any(s["shell"] is not None for s in shapes):
            continue
        items = [(s["geometry"], pose_compose(pose_inverse(b["pose"]), s["world_pose"]), s["density"], s["shell"])
                 for s in shapes]
        m, c, i = mass_properties(items, body_density=b["density"], mass=b["mass"], com=b["com"], inertia=b["inertia"])
        out[b["path"]] = dict(mass=m if m > 0 else None, com=c, inertia=i if m > 0 else None)
    return out


def build_model(scene: SceneData, *, num_envs: int, env_spacing: float, build_sdfs: bool):
    """The :class:`~hydro.scene.model.Model` of a scene read from a stage (its findings already
    checked): bodies (shell shapes' mass properties computed here, docs/usd.md), colliders (local
    poses relative to their bodies, materials, collision flags and groups), filtered pairs,
    articulations and env origins through a :class:`~hydro.scene.model.ModelBuilder`."""
    builder = ModelBuilder()
    index = {}
    shells = _shell_bodies(scene)
    for b in scene.bodies:
        given = shells.get(b["path"], {})
        index[b["path"]] = builder.add_body(
            b["path"], b["pose"], mass=given.get("mass", b["mass"]), density=b["density"],
            com=given.get("com", b["com"]), inertia=given.get("inertia", b["inertia"]), velocity=b["velocity"],
            angular_velocity=b["angular_velocity"], kinematic=b["kinematic"])
    name_of, groups = merge_collision_groups(scene.groups)
    for name, filtered, invert in groups:
        builder.add_collision_group(name, filtered_groups=filtered, invert=invert)
    bodies = {b["path"]: b for b in scene.bodies}
    for s in scene.shapes:
        v = s["values"]
        body = index[s["body"]] if s["body"] is not None else -1
        if body >= 0:
            local = pose_compose(pose_inverse(bodies[s["body"]]["pose"]), s["world_pose"])
        else:
            local = s["world_pose"]
        settings = SDFSettings(max_resolution=v["max_resolution"], target_voxel_size=as_float(v["target_voxel_size"]),
                               narrow_band_inner=float(v["narrow_band_inner"]),
                               narrow_band_outer=float(v["narrow_band_outer"]), padding=as_float(v["padding"]),
                               texture_format=v["texture_format"])
        builder.add_shape(s["path"], s["geometry"], body=body, local_pose=local, hydroelastic=v["hydroelastic"],
                          stiffness=number({"k": v["stiffness"]}, "k", DEFAULT_STIFFNESS), sdf=settings,
                          margin=float(v["margin"]), gap=float(v["gap"]), density=s["density"],
                          sdf_collision=s["sdf_collision"], collision_enabled=s["collision_enabled"],
                          collision_groups=sorted({name_of[g] for g in s["groups"]}),
                          material=s["material"])
    shape_body = {s["path"]: s["body"] for s in scene.shapes}
    for source, targets in scene.filtered:
        for a in filter_targets(source, shape_body):
            for t in targets:
                for b in filter_targets(t, shape_body):
                    if a != b:
                        builder.add_filtered_pair(a, b)
    for root in scene.articulations:
        builder.add_articulation(root)
    for env, origin in scene.env_origins.items():
        builder.set_env_origin(env, origin)
    return builder.finalize(num_envs=num_envs, env_spacing=env_spacing, build_sdfs=build_sdfs)


#: m/s², the gravity of a stage without a ``PhysicsScene`` (and USD's "earth gravity").
EARTH_GRAVITY = 9.81


def gravity_vector(direction, magnitude, *, rot: np.ndarray, mpu: float) -> np.ndarray:
    """(3,) m/s² from a ``PhysicsScene``'s ``physics:gravityDirection`` and
    ``physics:gravityMagnitude`` as authored (None when unset), ``rot`` the stage's axis
    conversion and ``mpu`` its metres per unit (the rules: :func:`hydro.scene.usd_io.read_gravity`)."""
    problem = rules.gravity_problem(direction, magnitude)
    if problem is not None:
        raise InputError(f"PhysicsScene: {problem}")
    direction = np.zeros(3) if direction is None else rot @ np.array([float(v) for v in direction])
    norm = float(np.linalg.norm(direction))
    direction = np.array([0.0, 0.0, -1.0]) if norm == 0.0 else direction / norm
    if magnitude is None or not math.isfinite(float(magnitude)) or float(magnitude) < 0.0:
        magnitude = EARTH_GRAVITY
    else:
        magnitude = shortest(float(magnitude)) * mpu
    return magnitude * direction


# ================================================================================================
# Writing


def write_geometry_scale(geometry):
    """The scale op the writer puts on the prim of ``geometry`` (None: none): an ellipsoid is a
    unit sphere scaled by its radii, a box with unequal sides a unit cube scaled by its size."""
    if isinstance(geometry, Ellipsoid):
        return geometry.radii
    if isinstance(geometry, Box) and not geometry.size[0] == geometry.size[1] == geometry.size[2]:
        return geometry.size
    return None


@dataclass
class WritePlan:
    """What :func:`hydro.scene.usd_io.save_usd` defines, in which order, with which pose.

    | field | meaning |
    |---|---|
    | ``order`` | every prim path to define (bodies, shapes, articulation roots, env prims and their ancestors below /World), parents first |
    | ``poses`` | path → world pose (7,) of each prim whose transform is written (env prims, bodies, shapes that are not their body's prim) |
    | ``body_of_path`` / ``shape_of_path`` | path → body / shape index |
    | ``scaled`` | paths of shapes whose prim carries a scale (:func:`write_geometry_scale`) |
    """

    order: list
    poses: dict
    body_of_path: dict
    shape_of_path: dict
    scaled: set


def write_plan(model) -> WritePlan:
    """The :class:`WritePlan` of ``model``; ``ValueError`` when USD cannot hold it as it is (a
    shape sharing its body's prim with a local offset, a shape whose path is not under its body,
    a prim under a scaled shape)."""
    poses = {}  # path → world pose of prims whose transform is written
    env_ids = sorted({e for e in map(env_of, model.body_path + model.shape_path + list(model.articulations))
                      if e is not None})
    for e in env_ids:
        pose = np.concatenate([model.env_origins[e] if e < model.num_envs else np.zeros(3), [0.0, 0.0, 0.0, 1.0]])
        poses[env_path(e)] = pose
    body_of_path = {p: i for i, p in enumerate(model.body_path)}
    for i, p in enumerate(model.body_path):
        poses[p] = model.body_q0[i]
    world_shape = model.shape_world_poses()
    for i, p in enumerate(model.shape_path):
        if p in body_of_path:
            if not np.allclose(model.shape_local_pose[i], IDENTITY, atol=1e-12):
                raise ValueError(f"shape {p} shares its prim with a body, so its local pose must be the identity")
            continue
        poses[p] = world_shape[i]
    shape_of_path = {p: i for i, p in enumerate(model.shape_path)}

    # the body each shape must find as its nearest rigid-body ancestor
    for i, p in enumerate(model.shape_path):
        b = model.shape_body[i]
        owner = p if p in body_of_path else nearest_ancestor(p, body_of_path)
        want = model.body_path[b] if b >= 0 else None
        if owner != want:
            raise ValueError(f"shape {p} belongs to {'body ' + want if want else 'no body (static)'} but its prim path "
                             f"is {'under body ' + owner if owner else 'not under that body'}: in USD a collider "
                             f"belongs to its nearest rigid-body ancestor")

    scaled = {p for p, i in shape_of_path.items() if write_geometry_scale(model.shape_geometry[i]) is not None}
    envs = [env_path(e) for e in env_ids]
    order = prim_order([list(model.body_path), list(model.shape_path), list(model.articulations), envs])
    for p in order:
        for s in scaled:
            if p != s and is_under(p, s):
                raise ValueError(f"prim {p} is under shape {s}, whose scale would apply to it")
    return WritePlan(order=order, poses=poses, body_of_path=body_of_path, shape_of_path=shape_of_path, scaled=scaled)
