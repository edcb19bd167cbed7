"""USD in and out (usd-core). The only module of hydro that imports ``pxr``.

Reading (:func:`load_usd`, :func:`validate_usd`)
    - Units and axes: positions, sizes and velocities are multiplied by the stage's
      ``metersPerUnit``; masses by ``kilogramsPerUnit`` (densities by kpu/mpu³, inertias by
      kpu·mpu²). A Y-up stage is turned Z-up by +90° about X ((x, y, z) → (x, −z, y)). The
      ``newton:*`` lengths (band, voxel size, padding, margin, gap) are metres whatever the
      stage units, as the schema documents them; stiffness is N/m³.
    - Transforms compose through the hierarchy (``UsdGeom.XformCache``, row vectors). A
      shape's world transform is split into a rigid pose and per-axis scales, which go into its
      geometry: ``Sphere`` (radius; non-uniform scale → Ellipsoid), ``Cube`` (size × scale →
      Box), ``Capsule`` (radius, height, axis; uniform scale only), ``Cylinder``/``Cone``
      (radius × the scale across the axis, which must be equal on both sides; height × the
      scale along it), ``Mesh`` (polygons fan-triangulated, the whole linear transform baked
      into the vertices, ``leftHanded`` winding flipped), ``Plane`` (never hydroelastic). The
      ``axis`` attribute becomes a local rotation taking the canonical +Z to that axis. A
      mirroring transform on a primitive is absorbed by one of its symmetry planes; a shear is
      an error (HYDRO.GEO.001).
    - A prim with ``PhysicsRigidBodyAPI`` (and ``physics:rigidBodyEnabled`` not false) is a
      body, its frame the rigid part of its world transform. A prim with a collision API
      (``physics:collisionEnabled`` not false) is a shape of its nearest rigid-body ancestor
      (itself included), or static. ``physics:velocity`` is the centre-of-mass velocity and
      ``physics:angularVelocity`` (degrees/s) the angular velocity, both in the space of the
      body's parent (its xform's space). Mass: ``PhysicsMassAPI`` mass/density/centerOfMass/
      diagonalInertia+principalAxes on the body, mass or density on a collider, density of
      its bound physics material, then the body's density, then 1000 kg/m³; ``NewtonMassAPI``
      ``newton:inertia`` [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (tensor elements, body frame) replaces
      the tensor. Friction from the physics material bound to the collider
      (``material:binding:physics``, else ``material:binding``, inherited from ancestors);
      0.5 / 0.5 when none is bound.
    - Applied schemas are read with ``GetPrimTypeInfo().GetAppliedAPISchemas()``.
    - Every finding of :mod:`hydro.scene.validate` is checked first: errors refuse the load
      (``ValueError`` carrying the finding lines), warnings are issued as
      :class:`SceneWarning` s.

Writing (:func:`save_usd`)
    A Z-up, metres, kilograms stage: bodies as ``Xform`` (or their geometry prim) with
    ``PhysicsRigidBodyAPI``, ``PhysicsMassAPI`` (mass, centre of mass, diagonal inertia and
    principal axes) and ``NewtonMassAPI`` (the full tensor in ``newton:inertia``); shapes as
    geometry prims with ``PhysicsCollisionAPI`` and ``NewtonSDFCollisionAPI`` (every
    attribute written) or ``NewtonCollisionAPI``; friction as bound physics materials; env
    prims carrying their origins. Reading the file back gives the same model; the values
    stored as 32-bit floats by the UsdPhysics schema (mass, centre of mass, velocities,
    friction, the ``newton:*`` floats) and mesh points keep float32 precision.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from . import validate as rules
from ..geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Plane, Sphere
from .model import DEFAULT_ENV_SPACING, DEFAULT_FRICTION, DEFAULT_STIFFNESS, ENVS_ROOT, IDENTITY, Model, ModelBuilder
from ..sdf import SDFSettings
from ..transforms import matrix_to_quat, pose_compose, pose_inverse, quat_rotate, quat_to_matrix

__all__ = ["load_usd", "save_usd", "validate_usd", "read_records", "read_gravity", "SceneWarning"]


class SceneWarning(UserWarning):
    """A WARNING finding met while loading a scene."""


# USD attribute type of each newton:* collider attribute (the contract's table).
_NEWTON_TYPES = {
    "newton:hydroelasticEnabled": Sdf.ValueTypeNames.Bool,
    "newton:hydroelasticStiffness": Sdf.ValueTypeNames.Float,
    "newton:sdfMaxResolution": Sdf.ValueTypeNames.Int,
    "newton:sdfTargetVoxelSize": Sdf.ValueTypeNames.Float,
    "newton:sdfNarrowBandInner": Sdf.ValueTypeNames.Float,
    "newton:sdfNarrowBandOuter": Sdf.ValueTypeNames.Float,
    "newton:sdfPadding": Sdf.ValueTypeNames.Float,
    "newton:sdfTextureFormat": Sdf.ValueTypeNames.Token,
    "newton:contactMargin": Sdf.ValueTypeNames.Float,
    "newton:contactGap": Sdf.ValueTypeNames.Float,
}

_FLOAT32_TYPES = {Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Float2, Sdf.ValueTypeNames.Float3,
                  Sdf.ValueTypeNames.Float4, Sdf.ValueTypeNames.Vector3f, Sdf.ValueTypeNames.Point3f,
                  Sdf.ValueTypeNames.Normal3f, Sdf.ValueTypeNames.Color3f, Sdf.ValueTypeNames.Quatf}

_GEOMETRY_TYPES = ("Sphere", "Cube", "Capsule", "Capsule_1", "Cylinder", "Cylinder_1", "Cone", "Mesh", "Plane")
_KIND_OF_TYPE = {"Sphere": "sphere", "Cube": "box", "Capsule": "capsule", "Capsule_1": "capsule",
                 "Cylinder": "cylinder", "Cylinder_1": "cylinder", "Cone": "cone", "Mesh": "mesh", "Plane": "plane",
                 "HeightField": "heightfield", "Heightfield": "heightfield"}
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
# canonical +Z → the prim's axis
_AXIS_QUAT = {
    "X": np.array([0.0, math.sqrt(0.5), 0.0, math.sqrt(0.5)]),  # +90° about Y
    "Y": np.array([-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)]),  # −90° about X
    "Z": np.array([0.0, 0.0, 0.0, 1.0]),
}


class _GeometryError(ValueError):
    pass


# ================================================================================================
# Reading


def _open(path) -> Usd.Stage:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        stage = Usd.Stage.Open(path)
    except Exception as exc:  # pxr raises Tf.ErrorException: keep the first error's own words
        raise ValueError(f"{path}: cannot be read as USD: {_usd_error(exc)}") from None
    if stage is None:
        raise ValueError(f"{path}: cannot be read as USD")
    return stage


def _usd_error(exc) -> str:
    for line in str(exc).splitlines():
        if " : '" in line:
            return line.split(" : '", 1)[1].rstrip("'").strip()
    return str(exc).strip() or type(exc).__name__


def _plain(v):
    """A USD value as plain Python (Vt arrays → lists, Gf vectors → tuples, quats → (x, y, z, w))."""
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (Gf.Quatd, Gf.Quatf, Gf.Quath)):
        im = v.GetImaginary()
        return (float(im[0]), float(im[1]), float(im[2]), float(v.GetReal()))
    if isinstance(v, (Gf.Vec2d, Gf.Vec2f, Gf.Vec3d, Gf.Vec3f, Gf.Vec3h, Gf.Vec4d, Gf.Vec4f)):
        return tuple(float(x) for x in v)
    if hasattr(v, "__len__") and not isinstance(v, str):
        return [_plain(x) for x in v]
    if isinstance(v, Sdf.AssetPath):
        return v.path
    return v if v is None else (float(v) if isinstance(v, (np.floating,)) else v)


class _Frame:
    """A stage's unit and axis conversion to hydro's SI, Z-up world."""

    def __init__(self, stage):
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.y_up = UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
        rot = np.eye(3)
        if self.y_up:
            rot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # +90° about X
        self.rot = rot  # column convention: p_hydro = mpu · rot @ p_stage
        self.cache = UsdGeom.XformCache(Usd.TimeCode.Default())

    def world(self, prim) -> np.ndarray:
        """4×4 row-vector matrix from the prim's local space to hydro's world (metres, Z-up)."""
        if not prim or prim.IsPseudoRoot():
            m = np.eye(4)
        else:
            m = np.array(self.cache.GetLocalToWorldTransform(prim), dtype=float)
        conv = np.eye(4)
        conv[:3, :3] = self.mpu * self.rot.T
        return m @ conv


def _decompose(m: np.ndarray, unit: float | None = None):
    """Row-vector 4×4 → (translation, scales (3,), rows U (3×3, rows = local axes in world), det sign).

    A scale within 1e-9 of ``unit`` (the stage's metres per unit: no authored scale) is taken
    as exactly ``unit``, so rounding in the composed rotations does not leak into sizes.
    """
    a = m[:3, :3]
    s = np.linalg.norm(a, axis=1)
    if unit is not None:
        s = np.where(np.abs(s / unit - 1.0) < 1e-9, unit, s)
    if np.any(s < 1e-12 * max(1.0, s.max())):
        raise _GeometryError("its transform collapses an axis (zero scale)")
    u = a / s[:, None]
    if not np.allclose(u @ u.T, np.eye(3), atol=1e-6):
        raise _GeometryError("its transform is sheared (scale along axes that are not the prim's own); "
                             "only per-axis scale is supported on primitives")
    return m[3, :3].copy(), s, u, float(np.sign(np.linalg.det(u)))


def _rigid_pose(m: np.ndarray) -> np.ndarray:
    """Pose (7,) of the rigid part of a row-vector matrix (its rotation by polar decomposition)."""
    a = m[:3, :3]
    w, _, vt = np.linalg.svd(a)
    q = w @ vt
    if np.linalg.det(q) < 0:
        q = -q
    return np.concatenate([m[3, :3], matrix_to_quat(q.T)])


def _close(a, b, tol=1e-6) -> bool:
    return abs(a - b) <= tol * max(abs(a), abs(b))


def _read_geometry(prim, m: np.ndarray, unit: float = 1.0):
    """(Geometry, world pose) of a geometry prim with world matrix ``m`` (hydro frame)."""
    tn = prim.GetTypeName()
    if tn == "Mesh":
        return _read_mesh(prim, m)
    if tn not in _GEOMETRY_TYPES:
        raise _GeometryError(f"a collider of type {tn or '(no type)'} is not supported: use Sphere, Cube, Capsule, "
                             f"Cylinder, Cone, Mesh or Plane")
    axis = "Z"
    if tn in ("Capsule", "Capsule_1", "Cylinder", "Cylinder_1", "Cone", "Plane"):
        axis = str(prim.GetAttribute("axis").Get() or "Z")
        if axis not in _AXIS_INDEX:
            raise _GeometryError(f"axis must be X, Y or Z, got {axis!r}")
    t, s, u, sign = _decompose(m, unit=unit)
    ai = _AXIS_INDEX[axis]
    if sign < 0:  # a mirror: absorb it by a symmetry plane of the shape that contains its axis
        u = u.copy()
        u[(ai + 1) % 3] *= -1.0
    q = matrix_to_quat(u.T)
    pose = np.concatenate([t, q])
    pose = pose_compose(pose, np.concatenate([np.zeros(3), _AXIS_QUAT[axis]]))
    across = [s[k] for k in range(3) if k != ai]
    along = s[ai]

    def get(name):
        attr = prim.GetAttribute(name)
        v = attr.Get()
        if v is None:
            raise _GeometryError(f"{tn} has no {name}")
        return _shortest(v) if attr.GetTypeName().scalarType in _FLOAT32_TYPES else float(v)

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
                raise _GeometryError(f"{tn} with radiusTop {rt} != radiusBottom {rb} is not supported")
            r = rt
        else:
            r = get("radius")
        h = get("height")
        if tn.startswith("Capsule"):
            if not (_close(s[0], s[1]) and _close(s[0], s[2])):
                raise _GeometryError(f"a Capsule needs a uniform scale (its caps must stay round), got {s.tolist()}")
            return Capsule(r * s[0], h * s[0]), pose
        if not _close(across[0], across[1]):
            raise _GeometryError(f"a {tn} needs equal scales across its axis {axis} (a round cross-section), "
                                 f"got {s.tolist()}")
        if tn.startswith("Cylinder"):
            return Cylinder(r * across[0], h * along), pose
        return Cone(r * across[0], h * along), pose
    except _GeometryError:
        raise
    except ValueError as exc:
        raise _GeometryError(f"{tn}: {exc}") from None


def _read_mesh(prim, m: np.ndarray):
    mesh = UsdGeom.Mesh(prim)
    path = str(prim.GetPath())
    pts = mesh.GetPointsAttr().Get()
    counts = mesh.GetFaceVertexCountsAttr().Get()
    idx = mesh.GetFaceVertexIndicesAttr().Get()
    if pts is None or counts is None or idx is None or len(pts) == 0 or len(counts) == 0:
        raise _GeometryError("a Mesh collider needs points, faceVertexCounts and faceVertexIndices")
    pts = np.array(pts, dtype=float).reshape(-1, 3)
    counts = np.array(counts, dtype=np.int64)
    idx = np.array(idx, dtype=np.int64)
    if counts.sum() != len(idx):
        raise _GeometryError(f"faceVertexCounts add up to {counts.sum()} but there are {len(idx)} faceVertexIndices")
    if np.any(counts < 3):
        raise _GeometryError("every face needs at least 3 vertices")
    tris = []
    start = 0
    for c in counts:  # fan triangulation
        f = idx[start:start + c]
        tris.extend((f[0], f[k], f[k + 1]) for k in range(1, c - 1))
        start += c
    faces = np.array(tris, dtype=np.int64)
    a = m[:3, :3]
    if abs(np.linalg.det(a)) < 1e-300:
        raise _GeometryError("its transform collapses an axis (zero scale)")
    pose = _rigid_pose(m)
    r_row = quat_to_matrix(pose[3:]).T
    verts = pts @ a @ r_row.T
    flip = (np.linalg.det(a) < 0) != (mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded)
    if flip:
        faces = faces[:, [0, 2, 1]]
    try:
        return Mesh(verts, faces, name=path), pose
    except ValueError as exc:
        raise _GeometryError(str(exc)) from None


def _schemas(prim) -> tuple:
    return tuple(str(s) for s in prim.GetPrimTypeInfo().GetAppliedAPISchemas())


def _shortest(x: float) -> float:
    """A 32-bit float as the shortest decimal that reads back to it (``0.05f`` → 0.05), so
    values authored as text load exactly as written."""
    return float(str(np.float32(x)))


def _plain32(v):
    if isinstance(v, float):
        return _shortest(v)
    if isinstance(v, tuple):
        return tuple(_shortest(x) for x in v)
    if isinstance(v, list):
        return [_plain32(x) for x in v]
    return v


def _authored(prim) -> dict:
    """Authored ``physics:*``/``newton:*`` values as plain Python (32-bit floats as written)."""
    out = {}
    for attr in prim.GetAttributes():
        name = attr.GetName()
        if (name.startswith("newton:") or name.startswith("physics:")) and attr.HasAuthoredValue():
            value = _plain(attr.Get())
            scalar = attr.GetTypeName().scalarType
            if scalar in _FLOAT32_TYPES:
                value = _plain32(value)
            out[name] = value
    return out


class _Scene:
    """Everything read from a stage, as plain data, before the builder sees it."""

    def __init__(self):
        self.records = []  # PrimRecord per relevant prim
        self.bodies = []  # dicts
        self.shapes = []  # dicts
        self.articulations = []
        self.env_origins = {}


def _material(prim, frame):
    """(static friction, dynamic friction, density kg/m³ or None) of the physics material bound to prim."""
    api = UsdShade.MaterialBindingAPI(prim)
    mat, _ = api.ComputeBoundMaterial("physics")
    if not mat:
        return None
    mp = mat.GetPrim()
    if "PhysicsMaterialAPI" not in _schemas(mp):
        return None
    pm = UsdPhysics.MaterialAPI(mp)
    density = _shortest(pm.GetDensityAttr().Get() or 0.0)
    return (_shortest(pm.GetStaticFrictionAttr().Get() or 0.0), _shortest(pm.GetDynamicFrictionAttr().Get() or 0.0),
            density * frame.kpu / frame.mpu**3 if density > 0 else None)


def read_records(stage_or_path):
    """(records, scene): the :class:`~hydro.scene.validate.PrimRecord` s and the extracted scene data."""
    stage = stage_or_path if isinstance(stage_or_path, Usd.Stage) else _open(stage_or_path)
    frame = _Frame(stage)
    scene = _Scene()
    body_prims = {}
    relevant = set(rules.COLLISION_APIS) | {rules.RIGID_BODY_API, rules.MASS_API, rules.NEWTON_MASS_API,
                                            rules.ARTICULATION_ROOT_API}
    prims = list(Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()))
    # bodies first, so colliders can find theirs
    for prim in prims:
        schemas = _schemas(prim)
        attrs = _authored(prim) if (set(schemas) & relevant) else {}
        if rules.RIGID_BODY_API in schemas and attrs.get("physics:rigidBodyEnabled", True) is not False:
            body_prims[str(prim.GetPath())] = prim
    for prim in prims:
        path = str(prim.GetPath())
        schemas = _schemas(prim)
        tn = str(prim.GetTypeName())
        attrs = _authored(prim)
        is_joint = tn.startswith("Physics") and tn.endswith("Joint")
        if not (set(schemas) & relevant) and not any(k.startswith("newton:") for k in attrs) and not is_joint:
            if _is_env_prim(path):
                scene.env_origins[int(path.rsplit("_", 1)[1])] = frame.world(prim)[3, :3]
            continue
        if _is_env_prim(path):
            scene.env_origins[int(path.rsplit("_", 1)[1])] = frame.world(prim)[3, :3]
        rec = rules.PrimRecord(path=path, type_name=tn, xformable=prim.IsA(UsdGeom.Xformable), schemas=schemas,
                               attributes=attrs)
        scene.records.append(rec)
        if rules.ARTICULATION_ROOT_API in schemas:
            scene.articulations.append(path)
        if path in body_prims:
            scene.bodies.append(_read_body(prim, attrs, schemas, frame))
        collider = bool(set(schemas) & set(rules.COLLISION_APIS)) and attrs.get("physics:collisionEnabled", True) is not False
        if not collider:
            continue
        rec.collider = True
        rec.geometry_kind = _KIND_OF_TYPE.get(tn)
        body = prim
        while body and not body.IsPseudoRoot() and str(body.GetPath()) not in body_prims:
            body = body.GetParent()
        rec.body = None if (not body or body.IsPseudoRoot()) else str(body.GetPath())
        values = rules.shape_values(attrs)
        try:
            geometry, world_pose = _read_geometry(prim, frame.world(prim), frame.mpu)
        except _GeometryError as exc:
            rec.geometry_error = str(exc)
            continue
        if isinstance(geometry, Mesh) and (values["hydroelastic"] is True or rules.SDF_COLLISION_API in schemas):
            try:
                geometry.check_watertight()
            except ValueError as exc:
                rec.watertight_error = str(exc)
        scene.shapes.append(_read_shape(prim, attrs, schemas, values, geometry, world_pose, rec.body, frame))
    return scene.records, scene


def _is_env_prim(path: str) -> bool:
    head, _, tail = path.rpartition("/env_")
    return head == ENVS_ROOT and tail.isdigit()


def _number(attrs, name, default=0.0):
    """An authored finite number, else ``default`` (bad values are the validator's to report)."""
    v = attrs.get(name, default)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else default


def _vector(attrs, name, n=3):
    """An authored vector of ``n`` finite numbers as an array, else None."""
    v = attrs.get(name)
    if isinstance(v, (tuple, list)) and len(v) == n and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        return np.array(v, dtype=float)
    return None


def _read_body(prim, attrs, schemas, frame) -> dict:
    m = frame.world(prim)
    pose = _rigid_pose(m)
    parent = frame.world(prim.GetParent())
    pu = parent[:3, :3] / np.linalg.norm(parent[:3, :3], axis=1)[:, None]
    zero = np.zeros(3)
    v = (_vector(attrs, "physics:velocity") if "physics:velocity" in attrs else zero)
    w = (_vector(attrs, "physics:angularVelocity") if "physics:angularVelocity" in attrs else zero)
    v = (zero if v is None else v) @ parent[:3, :3]
    w = np.radians(zero if w is None else w) @ pu
    kpu, mpu = frame.kpu, frame.mpu
    mass = _number(attrs, "physics:mass")
    density = _number(attrs, "physics:density")
    com = _vector(attrs, "physics:centerOfMass")
    if com is not None:
        try:  # the body prim's own per-axis scale (and the stage units) apply to its centre of mass
            _, scale, _, _ = _decompose(m, unit=frame.mpu)
            com = np.asarray(com, dtype=float) * scale
        except _GeometryError:  # a sheared body frame: go through the whole matrix
            com_world = np.append(np.asarray(com, dtype=float), 1.0) @ m
            com = quat_rotate(pose_inverse(pose)[3:], com_world[:3] - pose[:3])
    else:
        com = None
    inertia = None
    six = _vector(attrs, "newton:inertia", 6) if rules.NEWTON_MASS_API in schemas else None
    diag = _vector(attrs, "physics:diagonalInertia")
    if six is not None:
        ixx, iyy, izz, ixy, ixz, iyz = six
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) * kpu * mpu**2
    elif diag is not None and diag.max() > 0:
        q = _vector(attrs, "physics:principalAxes", 4)
        n = 0.0 if q is None else np.linalg.norm(q)
        rot = quat_to_matrix(q / n) if n > 0 else np.eye(3)
        inertia = rot @ np.diag(diag) @ rot.T * kpu * mpu**2
    return dict(path=str(prim.GetPath()), pose=pose, mass=mass * kpu if mass > 0 else None,
                density=density * kpu / mpu**3 if density > 0 else None, com=com, inertia=inertia,
                velocity=v, angular_velocity=w, kinematic=attrs.get("physics:kinematicEnabled", False) is True)


def _read_shape(prim, attrs, schemas, values, geometry, world_pose, body, frame) -> dict:
    kpu, mpu = frame.kpu, frame.mpu
    density = None
    if rules.MASS_API in schemas:
        if _number(attrs, "physics:density") > 0:
            density = _number(attrs, "physics:density") * kpu / mpu**3
        elif _number(attrs, "physics:mass") > 0 and geometry.volumetric and geometry.volume() > 0:
            density = _number(attrs, "physics:mass") * kpu / geometry.volume()
    friction = (DEFAULT_FRICTION, DEFAULT_FRICTION)
    mat = _material(prim, frame)
    if mat is not None:
        friction = mat[:2]
        if density is None:
            density = mat[2]
    return dict(path=str(prim.GetPath()), geometry=geometry, world_pose=world_pose, body=body, values=values,
                friction=friction, density=density, sdf_collision=rules.SDF_COLLISION_API in schemas)


def validate_usd(path) -> list:
    """Every finding of the scene at ``path`` (see :mod:`hydro.scene.validate`)."""
    records, _ = read_records(path)
    return rules.validate_records(records)


def _as_float(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def load_usd(path, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, build_sdfs: bool = True) -> Model:
    """Load a USD scene into a :class:`~hydro.scene.model.Model` (rules in the module docstring).

    A scene with ERROR findings is refused with a ``ValueError`` carrying the finding lines;
    WARNING findings are issued as :class:`SceneWarning`. ``num_envs``/``env_spacing``: see
    :mod:`hydro.scene.model` (replication of ``/World/envs/env_0``).
    """
    records, scene = read_records(path)
    findings = rules.validate_records(records)
    errors = [f for f in findings if f.severity == rules.ERROR]
    if errors:
        raise ValueError(f"{os.fspath(path)}: {len(errors)} error(s) in the scene:\n" + rules.format_findings(errors))
    for f in findings:
        warnings.warn(str(f), SceneWarning, stacklevel=2)
    builder = ModelBuilder()
    index = {}
    for b in scene.bodies:
        index[b["path"]] = builder.add_body(b["path"], b["pose"], mass=b["mass"], density=b["density"], com=b["com"],
                                            inertia=b["inertia"], velocity=b["velocity"],
                                            angular_velocity=b["angular_velocity"], kinematic=b["kinematic"])
    for s in scene.shapes:
        v = s["values"]
        body = index[s["body"]] if s["body"] is not None else -1
        if body >= 0:
            local = pose_compose(pose_inverse(scene.bodies[body]["pose"]), s["world_pose"])
        else:
            local = s["world_pose"]
        settings = SDFSettings(max_resolution=v["max_resolution"], target_voxel_size=_as_float(v["target_voxel_size"]),
                               narrow_band_inner=float(v["narrow_band_inner"]),
                               narrow_band_outer=float(v["narrow_band_outer"]), padding=_as_float(v["padding"]),
                               texture_format=v["texture_format"])
        builder.add_shape(s["path"], s["geometry"], body=body, local_pose=local, hydroelastic=v["hydroelastic"],
                          stiffness=_number({"k": v["stiffness"]}, "k", DEFAULT_STIFFNESS), sdf=settings, margin=float(v["margin"]),
                          gap=float(v["gap"]), static_friction=s["friction"][0], dynamic_friction=s["friction"][1],
                          density=s["density"], sdf_collision=s["sdf_collision"])
    for root in scene.articulations:
        builder.add_articulation(root)
    for env, origin in scene.env_origins.items():
        builder.set_env_origin(env, origin)
    return builder.finalize(num_envs=num_envs, env_spacing=env_spacing, build_sdfs=build_sdfs)


#: m/s², the gravity of a stage without a ``PhysicsScene`` (and USD's "earth gravity").
EARTH_GRAVITY = 9.81


def read_gravity(path) -> np.ndarray:
    """(3,) m/s², the gravity of the stage's first ``PhysicsScene`` in hydro's Z-up world.

    USD's rules: ``physics:gravityDirection`` (0, 0, 0) (the default) means "down the stage's
    up axis", ``physics:gravityMagnitude`` −inf (the default) means earth gravity, 9.81 m/s²;
    an authored magnitude is in stage units per s² (multiplied by ``metersPerUnit``). A stage
    without a ``PhysicsScene`` gets (0, 0, −9.81).
    """
    stage = path if isinstance(path, Usd.Stage) else _open(path)
    frame = _Frame(stage)
    for prim in stage.Traverse():
        if not prim.IsA(UsdPhysics.Scene):
            continue
        scene = UsdPhysics.Scene(prim)
        d = scene.GetGravityDirectionAttr().Get()
        mag = scene.GetGravityMagnitudeAttr().Get()
        direction = np.zeros(3) if d is None else frame.rot @ np.array([float(v) for v in d])
        norm = float(np.linalg.norm(direction))
        direction = np.array([0.0, 0.0, -1.0]) if norm == 0.0 else direction / norm
        if mag is None or not math.isfinite(float(mag)) or float(mag) < 0.0:
            magnitude = EARTH_GRAVITY
        else:
            magnitude = _shortest(float(mag)) * frame.mpu
        return magnitude * direction
    return np.array([0.0, 0.0, -EARTH_GRAVITY])


# ================================================================================================
# Writing


def _set_xform(prim, pose, scale=None):
    x = UsdGeom.Xformable(prim)
    x.ClearXformOpOrder()
    x.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, pose[:3])))
    q = pose[3:]
    x.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(float(q[3]), float(q[0]), float(q[1]), float(q[2])))
    if scale is not None:
        x.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, scale)))


def _write_geometry(stage, path, geometry):
    """Define the prim for ``geometry``; returns (prim, scale or None)."""
    if isinstance(geometry, Sphere):
        g = UsdGeom.Sphere.Define(stage, path)
        g.CreateRadiusAttr(geometry.radius)
        return g.GetPrim(), None
    if isinstance(geometry, Ellipsoid):
        g = UsdGeom.Sphere.Define(stage, path)
        g.CreateRadiusAttr(1.0)
        return g.GetPrim(), geometry.radii
    if isinstance(geometry, Box):
        g = UsdGeom.Cube.Define(stage, path)
        sx, sy, sz = geometry.size
        if sx == sy == sz:
            g.CreateSizeAttr(sx)
            return g.GetPrim(), None
        g.CreateSizeAttr(1.0)
        return g.GetPrim(), geometry.size
    if isinstance(geometry, (Capsule, Cylinder, Cone)):
        cls = {Capsule: UsdGeom.Capsule, Cylinder: UsdGeom.Cylinder, Cone: UsdGeom.Cone}[type(geometry)]
        g = cls.Define(stage, path)
        g.CreateRadiusAttr(geometry.radius)
        g.CreateHeightAttr(geometry.height)
        g.CreateAxisAttr(UsdGeom.Tokens.z)
        return g.GetPrim(), None
    if isinstance(geometry, Mesh):
        g = UsdGeom.Mesh.Define(stage, path)
        g.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(geometry.vertices, dtype=np.float32)))
        g.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(geometry.faces)))
        g.CreateFaceVertexIndicesAttr(Vt.IntArray([int(i) for i in geometry.faces.ravel()]))
        g.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        return g.GetPrim(), None
    if isinstance(geometry, Plane):
        g = UsdGeom.Plane.Define(stage, path)
        g.CreateAxisAttr(UsdGeom.Tokens.z)
        return g.GetPrim(), None
    raise ValueError(f"shape {path}: a {geometry.kind_name} cannot be written to USD")


def _write_geometry_scale(geometry):
    """The scale op :func:`_write_geometry` writes for ``geometry`` (None: none)."""
    if isinstance(geometry, Ellipsoid):
        return geometry.radii
    if isinstance(geometry, Box) and not geometry.size[0] == geometry.size[1] == geometry.size[2]:
        return geometry.size
    return None


def _prim_order(sequences) -> list:
    """Every prim path of ``sequences`` and their ancestors (below /World), in an order to define
    them so that a depth-first traversal of the stage meets each sequence's paths in its order
    (when the sequences allow it; otherwise in order of first appearance)."""
    children = {}  # parent → its children, in order of first appearance
    before = {}  # parent → {(child a, child b)}: subtree a must come before subtree b
    first = {}

    def chain(path):
        parts = path.split("/")
        return ["/".join(parts[:k]) for k in range(2, len(parts) + 1)]  # /World, /World/x, ...

    for seq in sequences:
        for p in seq:
            c = chain(p)
            for parent, child in zip(["/"] + c[:-1], c):
                if child not in first:
                    first[child] = len(first)
                    children.setdefault(parent, []).append(child)
        for a, b in zip(seq, seq[1:]):
            ca, cb = chain(a), chain(b)
            k = 0
            while k < min(len(ca), len(cb)) and ca[k] == cb[k]:
                k += 1
            if k < len(ca) and k < len(cb):  # neither is an ancestor of the other
                parent = ca[k - 1] if k > 0 else "/"
                before.setdefault(parent, set()).add((ca[k], cb[k]))

    out = []

    def visit(node):
        kids = list(children.get(node, []))
        edges = before.get(node, set())
        while kids:  # topological order, ties (and cycles) broken by first appearance
            free = [c for c in kids if not any(b == c and a in kids for a, b in edges)]
            nxt = min(free or kids, key=first.get)
            kids.remove(nxt)
            out.append(nxt)
            visit(nxt)

    visit("/")
    return [p for p in out if p != "/World"]


def _is_strictly_under(path: str, root: str) -> bool:
    return path.startswith(root + "/")


def _nearest(path, known: dict):
    """The nearest strict ancestor of ``path`` in ``known`` (or None)."""
    p = path
    while True:
        p = p.rsplit("/", 1)[0]
        if not p:
            return None
        if p in known:
            return p


def save_usd(model: Model, path) -> None:
    """Write ``model`` to a ``.usda``/``.usd`` file (see the module docstring)."""
    path = os.fspath(path)
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World").GetPrim()
    stage.SetDefaultPrim(world)

    poses = {}  # path → world pose of prims whose transform is written
    env_ids = sorted({int(m.split("/")[3][4:]) for m in model.body_path + model.shape_path + list(model.articulations)
                      if m.startswith(ENVS_ROOT + "/env_")})
    for e in env_ids:
        p = f"{ENVS_ROOT}/env_{e}"
        pose = np.concatenate([model.env_origins[e] if e < model.num_envs else np.zeros(3), [0.0, 0.0, 0.0, 1.0]])
        poses[p] = pose
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
        owner = p if p in body_of_path else _nearest(p, body_of_path)
        want = model.body_path[b] if b >= 0 else None
        if owner != want:
            raise ValueError(f"shape {p} belongs to {'body ' + want if want else 'no body (static)'} but its prim path "
                             f"is {'under body ' + owner if owner else 'not under that body'}: in USD a collider "
                             f"belongs to its nearest rigid-body ancestor")

    scaled = {p for p, i in shape_of_path.items() if _write_geometry_scale(model.shape_geometry[i]) is not None}
    envs = [f"{ENVS_ROOT}/env_{e}" for e in env_ids]
    order = _prim_order([list(model.body_path), list(model.shape_path), list(model.articulations), envs])
    for p in order:
        for s in scaled:
            if _is_strictly_under(p, s):
                raise ValueError(f"prim {p} is under shape {s}, whose scale would apply to it")
    for p in order:
        scale = None
        if p in shape_of_path:
            prim, scale = _write_geometry(stage, p, model.shape_geometry[shape_of_path[p]])
        else:
            prim = UsdGeom.Xform.Define(stage, p).GetPrim()
        if p in poses:
            parent = _nearest(p, poses)
            local = poses[p] if parent is None else pose_compose(pose_inverse(poses[parent]), poses[p])
            _set_xform(prim, local, scale)

    for i, p in enumerate(model.body_path):
        prim = stage.GetPrimAtPath(p)
        rb = UsdPhysics.RigidBodyAPI.Apply(prim)
        rb.CreateKinematicEnabledAttr(bool(model.body_kinematic[i]))
        parent = _nearest(p, poses)
        q_parent = poses[parent][3:] if parent is not None else np.array([0.0, 0.0, 0.0, 1.0])
        q_inv = np.concatenate([-q_parent[:3], q_parent[3:]])
        v = quat_rotate(q_inv, model.body_qd0[i, :3])
        w = np.degrees(quat_rotate(q_inv, model.body_qd0[i, 3:]))
        rb.CreateVelocityAttr(Gf.Vec3f(*map(float, v)))
        rb.CreateAngularVelocityAttr(Gf.Vec3f(*map(float, w)))
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(float(model.body_mass[i]))
        com = model.body_com[i]
        if p in shape_of_path and p in scaled:  # the prim's own scale applies to its centre of mass
            com = com / np.asarray(_write_geometry_scale(model.shape_geometry[shape_of_path[p]]))
        mass.CreateCenterOfMassAttr(Gf.Vec3f(*map(float, com)))
        tensor = model.body_inertia[i]
        evals, evecs = np.linalg.eigh(tensor)
        if np.linalg.det(evecs) < 0:
            evecs[:, 0] = -evecs[:, 0]
        q = matrix_to_quat(evecs)
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(*map(float, np.maximum(evals, 0.0))))
        mass.CreatePrincipalAxesAttr(Gf.Quatf(float(q[3]), float(q[0]), float(q[1]), float(q[2])))
        prim.AddAppliedSchema(rules.NEWTON_MASS_API)
        six = [tensor[0, 0], tensor[1, 1], tensor[2, 2], tensor[0, 1], tensor[0, 2], tensor[1, 2]]
        prim.CreateAttribute("newton:inertia", Sdf.ValueTypeNames.DoubleArray, custom=True).Set(
            Vt.DoubleArray([float(x) for x in six]))

    materials = {}
    material_root = "/World/PhysicsMaterials"
    for i, p in enumerate(model.shape_path):
        prim = stage.GetPrimAtPath(p)
        UsdPhysics.CollisionAPI.Apply(prim)
        settings = model.shape_sdf_settings[i]
        values = {
            "newton:hydroelasticEnabled": bool(model.shape_hydroelastic[i]),
            "newton:hydroelasticStiffness": float(model.shape_stiffness[i]),
            "newton:sdfMaxResolution": int(settings.max_resolution),
            "newton:sdfTargetVoxelSize": settings.target_voxel_size,
            "newton:sdfNarrowBandInner": settings.narrow_band_inner,
            "newton:sdfNarrowBandOuter": settings.narrow_band_outer,
            "newton:sdfPadding": settings.padding,
            "newton:sdfTextureFormat": settings.texture_format,
            "newton:contactMargin": float(model.shape_margin[i]),
            "newton:contactGap": float(model.shape_gap[i]),
        }
        if model.shape_sdf_collision[i]:
            prim.AddAppliedSchema(rules.SDF_COLLISION_API)
        else:
            prim.AddAppliedSchema("NewtonCollisionAPI")
            # SDF attributes of a shape without the schema: only the ones that differ from the default
            for k, default in rules.SDF_COLLISION_DEFAULTS.items():
                if values[k] == default:
                    del values[k]
        for k, v in values.items():
            if v is not None:
                prim.CreateAttribute(k, _NEWTON_TYPES[k], custom=True).Set(v)
        fr = (float(model.shape_friction[i, 0]), float(model.shape_friction[i, 1]))
        if fr != (DEFAULT_FRICTION, DEFAULT_FRICTION):
            if fr not in materials:
                if not materials:
                    if stage.GetPrimAtPath(material_root):
                        raise ValueError(f"prim path {material_root} is taken; hydro writes physics materials there")
                    UsdGeom.Scope.Define(stage, material_root)
                mpath = f"{material_root}/Friction_{len(materials)}"
                mat = UsdShade.Material.Define(stage, mpath)
                api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
                api.CreateStaticFrictionAttr(fr[0])
                api.CreateDynamicFrictionAttr(fr[1])
                materials[fr] = mat
            UsdShade.MaterialBindingAPI.Apply(prim).Bind(materials[fr], UsdShade.Tokens.weakerThanDescendants, "physics")

    for root in model.articulations:
        UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(root))
    stage.GetRootLayer().Export(path)
