"""USD in and out (usd-core). The only module of hydro that imports ``pxr``.

This module walks stages and reads and writes prims; what it computes on the plain values it
reads (units, transforms → geometry, bodies and colliders → the builder, gravity, the write
plan) is :mod:`hydro.scene.usd_convert`, which never imports ``pxr``.

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

import os
import warnings

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from . import validate as rules
from ..geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Plane, Sphere
from ..transforms import matrix_to_quat, pose_compose, pose_inverse, quat_rotate
from .model import DEFAULT_ENV_SPACING, DEFAULT_FRICTION, Model
from .paths import WORLD_ROOT, env_of, is_env_prim, nearest_ancestor
from .usd_convert import (AXIS_TYPES, EARTH_GRAVITY, KIND_OF_TYPE, GeometryError, SceneData, body_values,
                          build_model, collider_values, gravity_vector, mesh_geometry, plain32, primitive_geometry,
                          shortest, write_geometry_scale, write_plan)

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


def _read_geometry(prim, m: np.ndarray, unit: float = 1.0):
    """(Geometry, world pose) of a geometry prim with world matrix ``m`` (hydro frame)."""
    tn = str(prim.GetTypeName())
    if tn == "Mesh":
        mesh = UsdGeom.Mesh(prim)
        return mesh_geometry(mesh.GetPointsAttr().Get(), mesh.GetFaceVertexCountsAttr().Get(),
                             mesh.GetFaceVertexIndicesAttr().Get(), m, name=str(prim.GetPath()),
                             left_handed=mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded)
    axis = str(prim.GetAttribute("axis").Get() or "Z") if tn in AXIS_TYPES else "Z"

    def get(name):
        attr = prim.GetAttribute(name)
        v = attr.Get()
        if v is None:
            raise GeometryError(f"{tn} has no {name}")
        return shortest(v) if attr.GetTypeName().scalarType in _FLOAT32_TYPES else float(v)

    return primitive_geometry(tn, m, unit, axis, get)


def _schemas(prim) -> tuple:
    return tuple(str(s) for s in prim.GetPrimTypeInfo().GetAppliedAPISchemas())


def _authored(prim) -> dict:
    """Authored ``physics:*``/``newton:*`` values as plain Python (32-bit floats as written)."""
    out = {}
    for attr in prim.GetAttributes():
        name = attr.GetName()
        if (name.startswith("newton:") or name.startswith("physics:")) and attr.HasAuthoredValue():
            value = _plain(attr.Get())
            scalar = attr.GetTypeName().scalarType
            if scalar in _FLOAT32_TYPES:
                value = plain32(value)
            out[name] = value
    return out


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
    density = shortest(pm.GetDensityAttr().Get() or 0.0)
    return (shortest(pm.GetStaticFrictionAttr().Get() or 0.0), shortest(pm.GetDynamicFrictionAttr().Get() or 0.0),
            density * frame.kpu / frame.mpu**3 if density > 0 else None)


def read_records(stage_or_path):
    """(records, scene): the :class:`~hydro.scene.validate.PrimRecord` s and the extracted scene data."""
    stage = stage_or_path if isinstance(stage_or_path, Usd.Stage) else _open(stage_or_path)
    frame = _Frame(stage)
    scene = SceneData()
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
        if is_env_prim(path):
            scene.env_origins[env_of(path)] = frame.world(prim)[3, :3]
        if not (set(schemas) & relevant) and not any(k.startswith("newton:") for k in attrs) and not is_joint:
            continue
        rec = rules.PrimRecord(path=path, type_name=tn, xformable=prim.IsA(UsdGeom.Xformable), schemas=schemas,
                               attributes=attrs)
        scene.records.append(rec)
        if rules.ARTICULATION_ROOT_API in schemas:
            scene.articulations.append(path)
        if path in body_prims:
            scene.bodies.append(body_values(path, frame.world(prim), frame.world(prim.GetParent()), attrs, schemas,
                                            kpu=frame.kpu, mpu=frame.mpu))
        collider = bool(set(schemas) & set(rules.COLLISION_APIS)) and attrs.get("physics:collisionEnabled", True) is not False
        if not collider:
            continue
        rec.collider = True
        rec.geometry_kind = KIND_OF_TYPE.get(tn)
        body = prim
        while body and not body.IsPseudoRoot() and str(body.GetPath()) not in body_prims:
            body = body.GetParent()
        rec.body = None if (not body or body.IsPseudoRoot()) else str(body.GetPath())
        values = rules.shape_values(attrs)
        try:
            geometry, world_pose = _read_geometry(prim, frame.world(prim), frame.mpu)
        except GeometryError as exc:
            rec.geometry_error = str(exc)
            continue
        if isinstance(geometry, Mesh) and (values["hydroelastic"] is True or rules.SDF_COLLISION_API in schemas):
            try:
                geometry.check_watertight()
            except ValueError as exc:
                rec.watertight_error = str(exc)
        scene.shapes.append(collider_values(path, attrs, schemas, values, geometry, world_pose, rec.body,
                                            _material(prim, frame), kpu=frame.kpu, mpu=frame.mpu))
    return scene.records, scene


def validate_usd(path) -> list:
    """Every finding of the scene at ``path`` (see :mod:`hydro.scene.validate`)."""
    records, _ = read_records(path)
    return rules.validate_records(records)


def load_usd(path, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, build_sdfs: bool = True) -> Model:
    """Load a USD scene into a :class:`~hydro.scene.model.Model` (rules in the module docstring).

    A scene with ERROR findings is refused with a ``ValueError`` carrying the finding lines;
    WARNING findings are issued as :class:`SceneWarning`. ``num_envs``/``env_spacing``: see
    :mod:`hydro.scene.replicate` (replication of ``/World/envs/env_0``).
    """
    records, scene = read_records(path)
    findings = rules.validate_records(records)
    errors = [f for f in findings if f.severity == rules.ERROR]
    if errors:
        raise ValueError(f"{os.fspath(path)}: {len(errors)} error(s) in the scene:\n" + rules.format_findings(errors))
    for f in findings:
        warnings.warn(str(f), SceneWarning, stacklevel=2)
    return build_model(scene, num_envs=num_envs, env_spacing=env_spacing, build_sdfs=build_sdfs)


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
        return gravity_vector(scene.GetGravityDirectionAttr().Get(), scene.GetGravityMagnitudeAttr().Get(),
                              rot=frame.rot, mpu=frame.mpu)
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


def save_usd(model: Model, path) -> None:
    """Write ``model`` to a ``.usda``/``.usd`` file (see the module docstring)."""
    path = os.fspath(path)
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, WORLD_ROOT).GetPrim()
    stage.SetDefaultPrim(world)

    plan = write_plan(model)
    poses, scaled, shape_of_path = plan.poses, plan.scaled, plan.shape_of_path
    for p in plan.order:
        scale = None
        if p in shape_of_path:
            prim, scale = _write_geometry(stage, p, model.shape_geometry[shape_of_path[p]])
        else:
            prim = UsdGeom.Xform.Define(stage, p).GetPrim()
        if p in poses:
            parent = nearest_ancestor(p, poses)
            local = poses[p] if parent is None else pose_compose(pose_inverse(poses[parent]), poses[p])
            _set_xform(prim, local, scale)

    for i, p in enumerate(model.body_path):
        prim = stage.GetPrimAtPath(p)
        rb = UsdPhysics.RigidBodyAPI.Apply(prim)
        rb.CreateKinematicEnabledAttr(bool(model.body_kinematic[i]))
        parent = nearest_ancestor(p, poses)
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
            com = com / np.asarray(write_geometry_scale(model.shape_geometry[shape_of_path[p]]))
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
    material_root = WORLD_ROOT + "/PhysicsMaterials"
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
