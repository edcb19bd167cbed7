"""USD in and out (usd-core and the Newton schemas). The only module of hydro that imports ``pxr``.

(It is longer than hydro's usual 500 lines because every ``pxr`` call of hydro lives here, by rule;
what is computed on the plain values it reads is :mod:`hydro.scene.usd_convert` and
:mod:`hydro.scene.usd_values`, and the rules are :mod:`hydro.scene.validate`.)

The Newton schemas come from ``newton-usd-schemas``: importing it (first thing here) registers
NewtonCollisionAPI, NewtonSDFCollisionAPI, NewtonMeshCollisionAPI, NewtonMassAPI, NewtonMaterialAPI,
NewtonSceneAPI … with USD, so every tool sees them (``prim.HasAPI("NewtonSDFCollisionAPI")``).
Registration only takes effect before USD's schema registry is first used in the process; when
something used it earlier, hydro reads the same definitions from the package's
``generatedSchema.usda`` and warns once (:class:`SceneWarning`).

Reading (:func:`load_usd`, :func:`validate_usd`, :func:`read_records`): every ``physics:*`` and
``newton:*`` value is read through the schemas: an authored value, else the fallback the applied
schema declares (so a prim with ``ApplyAPI`` and nothing authored has the schema's values), with
the schemas' "-inf: the engine's default" sentinels resolved as docs/usd.md documents. Values are
in the stage's units and converted by the dimension the schema declares
(:func:`hydro.scene.usd_values.to_si`). Stages are composed as USD composes them (references,
payloads, instanceable prims); point instancers are expanded into one copy of their prototype's
bodies and colliders per instance (``<instancer>/<prototype>_<i>``). The whole set of rules —
units and axes, transforms, bodies, colliders, approximations, materials, mass (solid and shell),
collision groups, filtered pairs, gravity, what is ignored — is docs/usd.md. Every finding of
:mod:`hydro.scene.validate` is checked first: errors refuse the load (:class:`~hydro.errors.SceneError`
carrying the findings), warnings are issued as :class:`SceneWarning` s.

Writing (:func:`save_usd`): a Z-up, metres, kilograms stage with the schemas applied as
``ApplyAPI`` does and typed (``uniform`` where the schema says so) attributes: bodies with
PhysicsRigidBodyAPI, PhysicsMassAPI and NewtonMassAPI (the full tensor); every collider with
PhysicsCollisionAPI and NewtonSDFCollisionAPI (shapes with an SDF), NewtonMeshCollisionAPI
(meshes and convex hulls, with ``physics:approximation``) or NewtonCollisionAPI; materials
with PhysicsMaterialAPI and NewtonMaterialAPI; collision groups and filtered pairs. Reading the
file back gives the same model.
"""

from __future__ import annotations

import math
import os
import warnings

import newton_usd_schemas  # noqa: F401  (registers the Newton schemas: before pxr's schema registry is used)
import numpy as np
from pxr import Gf, Pcp, Sdf, Tf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from . import validate as rules
from ..errors import InputError, SceneError
from ..geometry import Box, Capsule, Cone, ConvexMesh, Cylinder, Ellipsoid, Heightfield, Mesh, Plane, Sphere
from ..transforms import matrix_to_quat, pose_compose, pose_inverse, quat_rotate
from .material import DEFAULT_MATERIAL, MATERIAL_FIELDS, material_row
from .model import DEFAULT_ENV_SPACING, Model
from .paths import WORLD_ROOT, env_of, is_env_prim, nearest_ancestor
from .usd_convert import (AXIS_TYPES, EARTH_GRAVITY, HEIGHTFIELD_TYPES, HF_COLS, HF_ELEVATION, HF_HALF_EXTENTS,
                          HF_ROWS, HF_THICKNESS, KIND_OF_TYPE, GeometryError, MaterialError, SceneData,
                          body_values, build_model, collider_values, gravity_vector, heightfield_geometry,
                          mesh_geometry, plain32,
                          primitive_geometry, shortest, write_geometry_scale, write_plan)
from .usd_values import approximate_mesh, filter_targets

__all__ = ["load_usd", "save_usd", "validate_usd", "read_records", "read_gravity", "SceneWarning",
           "schemas_registered"]


class SceneWarning(UserWarning):
    """A WARNING finding met while loading a scene."""


_FLOAT32_TYPES = {Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Float2, Sdf.ValueTypeNames.Float3,
                  Sdf.ValueTypeNames.Float4, Sdf.ValueTypeNames.Vector3f, Sdf.ValueTypeNames.Point3f,
                  Sdf.ValueTypeNames.Normal3f, Sdf.ValueTypeNames.Color3f, Sdf.ValueTypeNames.Quatf,
                  Sdf.ValueTypeNames.FloatArray}

# ================================================================================================
# The schemas

#: The applied API schemas hydro reads (with the ones each includes, from their definitions).
_APIS = ("PhysicsCollisionAPI", "PhysicsMeshCollisionAPI", "PhysicsMassAPI", "PhysicsMaterialAPI",
         "PhysicsRigidBodyAPI", "PhysicsFilteredPairsAPI", "PhysicsArticulationRootAPI",
         "NewtonCollisionAPI", "NewtonSDFCollisionAPI", "NewtonMeshCollisionAPI", "NewtonMassAPI",
         "NewtonMaterialAPI", "NewtonSceneAPI", "NewtonSiteAPI", "NewtonArticulationRootAPI")


def _plain(v):
    """A USD value as plain Python (Vt arrays → lists, Gf vectors → tuples, quats → (x, y, z, w))."""
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (Gf.Quatd, Gf.Quatf, Gf.Quath)):
        im = v.GetImaginary()
        return (float(im[0]), float(im[1]), float(im[2]), float(v.GetReal()))
    if isinstance(v, (Gf.Vec2d, Gf.Vec2f, Gf.Vec3d, Gf.Vec3f, Gf.Vec3h, Gf.Vec4d, Gf.Vec4f)):
        return tuple(float(x) for x in v)
    if isinstance(v, Sdf.AssetPath):
        return v.path
    if hasattr(v, "__len__") and not isinstance(v, str):
        return [_plain(x) for x in v]
    return v if v is None else (float(v) if isinstance(v, (np.floating,)) else v)


def _value(v, type_name):
    """A value as plain Python, 32-bit floats as the shortest decimal that reads back to them."""
    value = _plain(v)
    return plain32(value) if type_name in _FLOAT32_TYPES or type_name.scalarType in _FLOAT32_TYPES else value


class _Schemas:
    """The attributes (type, uniform or not, fallback) and included schemas of each API in
    :data:`_APIS`, from USD's schema registry, or from newton-usd-schemas' generatedSchema.usda
    when the registration came too late."""

    def __init__(self):
        reg = Usd.SchemaRegistry()
        self.registered = reg.FindAppliedAPIPrimDefinition(rules.NEWTON_COLLISION_API) is not None
        self.attributes = {}  # api -> {name: (Sdf type, uniform, fallback)} (included schemas' too)
        self.includes = {}  # api -> included apis, itself first
        layer = None
        if not self.registered:
            path = os.path.join(os.path.dirname(newton_usd_schemas.__file__), "generatedSchema.usda")
            layer = Sdf.Layer.FindOrOpen(path)
        for api in _APIS:
            d = reg.FindAppliedAPIPrimDefinition(api)
            if d is not None:
                attrs = {}
                for name in d.GetPropertyNames():
                    spec = d.GetSchemaAttributeSpec(name)
                    if spec is not None:
                        attrs[name] = (spec.typeName, spec.variability == Sdf.VariabilityUniform,
                                       _value(spec.default, spec.typeName))
                self.attributes[api] = attrs
                self.includes[api] = tuple(str(s) for s in d.GetAppliedAPISchemas()) or (api,)
            elif layer is not None:
                self._from_layer(layer, api)

    def _from_layer(self, layer, api):
        spec = layer.GetPrimAtPath("/" + api)
        if spec is None:
            return
        attrs = {a.name: (a.typeName, a.variability == Sdf.VariabilityUniform, _value(a.default, a.typeName))
                 for a in spec.attributes}
        includes = [api]
        listed = spec.GetInfo("apiSchemas")
        for inc in (listed.GetAddedOrExplicitItems() if listed else ()):
            if inc not in self.includes:
                self._from_layer(layer, inc)
            for name in self.includes.get(inc, (inc,)):
                if name not in includes:
                    includes.append(name)
                attrs = {**self.attributes.get(name, {}), **attrs}
        self.attributes[api] = attrs
        self.includes[api] = tuple(includes)

    def expand(self, names) -> tuple:
        """``names`` with the schemas each includes (order kept, unknown names kept as they are)."""
        out = []
        for n in names:
            for m in self.includes.get(n, (n,)):
                if m not in out:
                    out.append(m)
        return tuple(out)

    def fallbacks(self, applied) -> dict:
        """Every attribute of the (expanded) applied schemas with its fallback."""
        out = {}
        for api in applied:
            for name, (_, _, fallback) in self.attributes.get(api, {}).items():
                if fallback is not None:
                    out[name] = fallback
        return out

    def attribute(self, name):
        """(Sdf type, uniform) of attribute ``name`` as some schema declares it (None: none does)."""
        for attrs in self.attributes.values():
            if name in attrs:
                return attrs[name][:2]
        return None


_SCHEMAS = None
_WARNED_LATE = False


def _schemas() -> _Schemas:
    global _SCHEMAS, _WARNED_LATE
    if _SCHEMAS is None:
        _SCHEMAS = _Schemas()
    if not _SCHEMAS.registered and not _WARNED_LATE:
        _WARNED_LATE = True
        warnings.warn("newton-usd-schemas could not register the Newton schemas: USD's schema registry was used "
                      "before hydro.scene.usd_io was imported. hydro reads their definitions from the package "
                      "itself; import hydro.scene.usd_io (or newton_usd_schemas) before anything else touches "
                      "pxr so that other tools see them too", SceneWarning, stacklevel=3)
    return _SCHEMAS


def schemas_registered() -> bool:
    """Whether the Newton schemas are registered with USD in this process."""
    return _schemas().registered


# ================================================================================================
# Reading


def _open(path) -> Usd.Stage:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        with Tf.DiagnosticTrap() as trap:
            stage = Usd.Stage.Open(path)
            # composition errors (a reference to a missing file, ...) become HYDRO.USD.006 findings
            # (read_records); USD's own warning lines for them are not printed as well
            trap.EraseMatching(lambda d: "_ReportErrors" in d.sourceFunction)
    except Exception as exc:  # pxr raises Tf.ErrorException: keep the first error's own words
        raise InputError(f"{path}: cannot be read as USD: {_usd_error(exc)}") from None
    if stage is None:
        raise InputError(f"{path}: cannot be read as USD")
    return stage


def _usd_error(exc) -> str:
    for line in str(exc).splitlines():
        if " : '" in line:
            return line.split(" : '", 1)[1].rstrip("'").strip()
    return str(exc).strip() or type(exc).__name__


#: Rotation taking a Y-up space to a Z-up one (+90° about X), column convention.
_Y_TO_Z = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def _layer_metrics(layer) -> dict:
    """The metrics a layer authors: ``{"mpu", "kpu", "up"}`` (only those authored)."""
    root = layer.pseudoRoot
    out = {}
    for key, name in (("mpu", "metersPerUnit"), ("kpu", "kilogramsPerUnit"), ("up", "upAxis")):
        if root.HasInfo(name):
            out[key] = root.GetInfo(name)
    return out


class _Units:
    """The units a prim's own values are authored in: metres and kilograms per unit, up axis."""

    __slots__ = ("mpu", "kpu", "y_up", "layer")

    def __init__(self, mpu, kpu, y_up, layer=None):
        self.mpu, self.kpu, self.y_up, self.layer = float(mpu), float(kpu), bool(y_up), layer


class _Frame:
    """A stage's unit and axis conversion to hydro's SI, Z-up world, and the instant it is read at.

    Units per layer (docs/usd.md): values are in the units of the layer stack that defines the prim.
    A prim brought in by a reference or payload whose layer authors other ``metersPerUnit``,
    ``kilogramsPerUnit`` or ``upAxis`` than the referencing context is converted as Omniverse's
    metrics assembler does: a correction (scale, and the Y-up/Z-up rotation) inside the referencing
    prim's own transform, and its values (and its descendants') converted with the asset's units.
    USD itself leaves such conversion to its clients. Time: every attribute is read at the stage's
    start time code (time samples win over a default there, as USD resolves them)."""

    def __init__(self, stage):
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.y_up = UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
        rot = _Y_TO_Z if self.y_up else np.eye(3)
        self.rot = rot  # column convention: p_hydro = mpu · rot @ p_stage
        self.conv = np.eye(4)
        if math.isfinite(self.mpu) and self.mpu > 0:  # else HYDRO.STG.001 stops the reading
            self.conv[:3, :3] = self.mpu * rot.T
        self.start = float(stage.GetStartTimeCode())
        self.time = Usd.TimeCode(self.start)
        self.cache = UsdGeom.XformCache(self.time)
        self.stage_units = _Units(self.mpu, self.kpu, self.y_up)
        self._units = {}  # prim path -> _Units
        self._changes = {}  # prim path -> the _Units its own reference arc brings (None: none)
        self._worlds = {}  # prim path of a unit anchor -> its corrected world matrix
        self.unit_findings = []  # (prim path, message) of referenced layers whose units cannot be used

    # --- units of referenced layers ------------------------------------------------------------

    def _arc_units(self, prim, outer: _Units):
        """The units of the strongest reference/payload arc introduced at ``prim`` (its layer's
        authored metrics, the rest from ``outer``), or None when it brings no change."""
        key = str(prim.GetPath())
        if key in self._changes:
            return self._changes[key]
        found = None
        try:
            index = prim.GetPrimIndex()
            nodes = [index.rootNode]
        except Exception:  # noqa: BLE001 - a prim without an index (a prototype) brings nothing
            nodes = []
        while nodes and found is None:
            node = nodes.pop(0)
            if (node.arcType in (Pcp.ArcTypeReference, Pcp.ArcTypePayload) and node.GetDepthBelowIntroduction() == 0
                    and node.hasSpecs):
                found = node.layerStack.identifier.rootLayer
                break
            nodes[0:0] = list(node.children)
        change = None
        if found is not None and found != prim.GetStage().GetRootLayer():
            metrics = _layer_metrics(found)
            mpu, kpu = metrics.get("mpu", outer.mpu), metrics.get("kpu", outer.kpu)
            y_up = str(metrics.get("up", "Y" if outer.y_up else "Z")) == "Y"
            bad = [f"{name} = {v!r}" for name, v in (("metersPerUnit", mpu), ("kilogramsPerUnit", kpu))
                   if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0)]
            if bad:
                self.unit_findings.append((key, f"the layer it references ({found.identifier}) authors "
                                                f"{', '.join(bad)}: its values cannot be converted (units must be "
                                                f"finite numbers > 0)"))
            elif (mpu, kpu, y_up) != (outer.mpu, outer.kpu, outer.y_up):
                change = _Units(mpu, kpu, y_up, layer=found.identifier)
        self._changes[key] = change
        return change

    def units(self, prim) -> _Units:
        """The units ``prim``'s own values (sizes, points, masses, physics values) are authored in."""
        if not prim or prim.IsPseudoRoot():
            return self.stage_units
        key = str(prim.GetPath())
        u = self._units.get(key)
        if u is None:
            outer = self.units(prim.GetParent())
            u = self._arc_units(prim, outer) or outer
            self._units[key] = u
        return u

    def _anchor(self, prim):
        """The nearest ancestor-or-self of ``prim`` whose reference changes units (None: none)."""
        p = prim
        while p and not p.IsPseudoRoot():
            parent = p.GetParent()
            if self.units(p) is not self.units(parent):
                return p
            p = parent
        return None

    def _correction(self, prim) -> np.ndarray:
        """Row-vector 4×4 from ``prim``'s asset space to the space its referencing context uses."""
        inner, outer = self.units(prim), self.units(prim.GetParent())
        rot = np.eye(3)
        if inner.y_up and not outer.y_up:
            rot = _Y_TO_Z
        elif outer.y_up and not inner.y_up:
            rot = _Y_TO_Z.T
        k = np.eye(4)
        k[:3, :3] = (inner.mpu / outer.mpu) * rot.T
        return k

    def _anchor_local(self, prim):
        """(local 4×4 in the referencing context's units, resets the xform stack) of a prim whose
        reference changes units: each xformOp authored by the asset (its translation in the
        asset's units) is converted into the context's units; ops authored by the referencing
        layer are used as they are."""
        xf = UsdGeom.Xformable(prim)
        if not xf:
            return np.eye(4), False
        layer = self.units(prim).layer
        k = self._correction(prim)
        k_inv = np.linalg.inv(k)
        local = np.eye(4)
        for op in xf.GetOrderedXformOps():  # the first op is the outermost: row vectors multiply it last
            m = np.array(op.GetOpTransform(self.time), dtype=float)
            node = op.GetAttr().GetResolveInfo(self.time).GetNode()
            if node and node.layerStack.identifier.rootLayer.identifier == layer:
                m = k_inv @ m @ k  # the asset's op, in the context's units
            local = m @ local
        return local, bool(xf.GetResetXformStack())

    def world(self, prim) -> np.ndarray:
        """4×4 row-vector matrix from the prim's local space to hydro's world (metres, Z-up)."""
        if not prim or prim.IsPseudoRoot():
            return self.conv.copy()
        anchor = self._anchor(prim)
        if anchor is None:
            return np.array(self.cache.GetLocalToWorldTransform(prim), dtype=float) @ self.conv
        key = str(anchor.GetPath())
        base = self._worlds.get(key)
        if base is None:
            local, resets = self._anchor_local(anchor)
            outer = self.conv if resets else self.world(anchor.GetParent())
            base = self._correction(anchor) @ local @ outer
            self._worlds[key] = base
        if prim == anchor:
            return base.copy()
        return np.array(self.cache.ComputeRelativeTransform(prim, anchor)[0], dtype=float) @ base

    def relative(self, prim, ancestor) -> np.ndarray:
        """4×4 of ``prim`` in the space of ``ancestor``'s own transform (excluded)."""
        if self._anchor(prim) == self._anchor(ancestor):  # no unit change between them
            return np.array(self.cache.ComputeRelativeTransform(prim, ancestor)[0], dtype=float)
        return self.world(prim) @ np.linalg.inv(self.world(ancestor))


class _Occurrence:
    """A prim as hydro meets it: itself, or one point-instancer copy of a prototype prim."""

    __slots__ = ("prim", "path", "_world", "_parent", "frame", "source")

    def __init__(self, prim, frame, path=None, world=None, parent=None):
        self.prim = prim
        self.frame = frame
        self.path = str(prim.GetPath()) if path is None else path
        self.source = str(prim.GetPath())  # the authored prim (the prototype prim for a copy)
        self._world = world
        self._parent = parent

    def world(self) -> np.ndarray:
        return self.frame.world(self.prim) if self._world is None else self._world

    def parent_world(self) -> np.ndarray:
        return self.frame.world(self.prim.GetParent()) if self._parent is None else self._parent


def _occurrences(stage, frame, records):
    """Every prim of the composed stage (instance proxies included), point instancers expanded."""
    it = iter(Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()))
    for prim in it:
        yield _Occurrence(prim, frame)
        if prim.IsA(UsdGeom.PointInstancer):
            it.PruneChildren()  # prototypes are drawn (and simulated) only through the instancer
            yield from _instances(prim, frame, records)


def _instancer_problems(inst, protos, indices, t) -> list:
    """What makes a point instancer unusable (HYDRO.USD.005): indices naming no prototype, a
    prototype target that is no prim, positions (orientations, scales when authored) not one per
    index (USD's rule: it computes no instance transforms then)."""
    out = []
    n = len(indices)
    bad = sorted({int(k) for k in indices if not 0 <= int(k) < len(protos)})
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", …" if len(bad) > 5 else "")
        out.append(f"protoIndices names prototype {shown}, but prototypes has {len(protos)} target(s)"
                   + (f" (indices 0..{len(protos) - 1})" if protos else ""))
    stage = inst.GetPrim().GetStage()
    used = {int(k) for k in indices if 0 <= int(k) < len(protos)}
    missing = [str(protos[k]) for k in sorted(used) if not stage.GetPrimAtPath(protos[k])]
    if missing:
        out.append(f"prototypes names {', '.join(missing)}, which is not a prim")
    for name, attr, required in (("positions", inst.GetPositionsAttr(), True),
                                 ("orientations", inst.GetOrientationsAttr(), False),
                                 ("scales", inst.GetScalesAttr(), False)):
        v = attr.Get(t)
        count = 0 if v is None else len(v)
        if (required or count) and count != n:
            out.append(f"{name} has {count} value(s) for {n} protoIndices (one per instance)")
    return out


def _instances(prim, frame, records):
    inst = UsdGeom.PointInstancer(prim)
    t = frame.time
    protos = inst.GetPrototypesRel().GetTargets()
    indices = inst.GetProtoIndicesAttr().Get(t) or []
    if not len(indices):
        return
    problems = _instancer_problems(inst, protos, indices, t)
    if problems:
        path = str(prim.GetPath())
        records.append(rules.PrimRecord(path=path, type_name="PointInstancer", findings=[
            rules._finding("HYDRO.USD.005", path, f"point instancer: {'; '.join(problems)}")]))
        return
    with_proto = inst.ComputeInstanceTransformsAtTime(t, t, UsdGeom.PointInstancer.IncludeProtoXform,
                                                      UsdGeom.PointInstancer.IgnoreMask)
    without = inst.ComputeInstanceTransformsAtTime(t, t, UsdGeom.PointInstancer.ExcludeProtoXform,
                                                   UsdGeom.PointInstancer.IgnoreMask)
    if len(with_proto) < len(indices) or len(without) < len(indices):  # USD refused them (its own rules)
        path = str(prim.GetPath())
        records.append(rules.PrimRecord(path=path, type_name="PointInstancer", findings=[
            rules._finding("HYDRO.USD.005", path, "point instancer: USD cannot compute its instance transforms "
                                                  "(positions, orientations, scales and protoIndices must agree)")]))
        return
    mask = list(inst.ComputeMaskAtTime(t) or [])
    mask += [True] * (len(indices) - len(mask))
    base = frame.world(prim)
    stage = prim.GetStage()
    here = str(prim.GetPath())
    for i, k in enumerate(indices):
        if not mask[i] or not 0 <= k < len(protos):
            continue
        root = stage.GetPrimAtPath(protos[k])
        if not root:
            continue
        root_path = str(root.GetPath())
        copy_root = f"{here}/{root.GetName()}_{i}"
        inst_world = np.array(with_proto[i], dtype=float) @ base
        worlds = {}
        sub = iter(Usd.PrimRange(root, Usd.TraverseInstanceProxies()))
        for p in sub:
            if p.IsA(UsdGeom.PointInstancer) and p != root:
                sub.PruneChildren()
                records.append(rules.PrimRecord(path=str(p.GetPath()), type_name="PointInstancer", findings=[
                    rules._finding("HYDRO.USD.003", str(p.GetPath()), "a point instancer inside a point instancer's "
                                                                      "prototype is not expanded (ignored)")]))
                continue
            path = copy_root + str(p.GetPath())[len(root_path):]
            world = (frame.relative(p, root) if p != root else np.eye(4)) @ inst_world
            parent = np.array(without[i], dtype=float) @ base if p == root else worlds[str(p.GetParent().GetPath())]
            worlds[str(p.GetPath())] = world
            yield _Occurrence(p, frame, path=path, world=world, parent=parent)


def _applied(prim) -> tuple:
    """Applied API schema names as authored (unregistered ones too)."""
    return tuple(str(s) for s in prim.GetPrimTypeInfo().GetAppliedAPISchemas())


def _authored(prim, time) -> dict:
    """Authored ``physics:*``/``newton:*`` values at ``time`` as plain Python (32-bit floats as
    written)."""
    out = {}
    for attr in prim.GetAttributes():
        name = attr.GetName()
        if (name.startswith("newton:") or name.startswith("physics:")) and attr.HasAuthoredValue():
            stack = attr.GetPropertyStack(time)
            type_name = stack[0].typeName if stack else attr.GetTypeName()
            out[name] = _value(attr.Get(time), type_name)
    return out


def _resolved(prim, schemas, time) -> dict:
    """``physics:*``/``newton:*`` values as USD resolves them at ``time``: the applied schemas'
    fallbacks, overridden by what is authored."""
    return {**schemas.fallbacks(schemas.expand(_applied(prim))), **_authored(prim, time)}


#: Attributes of geometry prims whose value hydro reads (besides ``physics:*``, ``newton:*`` and
#: the xformOps).
_GEOMETRY_ATTRIBUTES = ("radius", "size", "height", "axis", "points", "faceVertexCounts", "faceVertexIndices",
                        "orientation", "positions", "orientations", "scales", "protoIndices", "invisibleIds")


def _time_sampled(prim, time, start: float) -> list:
    """HYDRO.USD.004 findings for the attributes of ``prim`` that hydro reads and that hold time
    samples: they are read at the stage's start time code ``start`` (a default beside them is
    ignored there, as USD resolves it)."""
    names = []
    for attr in prim.GetAttributes():
        name = attr.GetName()
        if not (name.startswith(("physics:", "newton:", "xformOp:")) or name in _GEOMETRY_ATTRIBUTES):
            continue
        if attr.GetNumTimeSamples() == 0:
            continue
        text = name
        if any(spec.HasDefaultValue() for spec in attr.GetPropertyStack(Usd.TimeCode.Default())):
            default, value = attr.Get(Usd.TimeCode.Default()), attr.Get(time)
            if default != value:
                text += f" (its default {_plain(default)!r} is not used)"
        names.append(text)
    if not names:
        return []
    return [rules._finding("HYDRO.USD.004", str(prim.GetPath()),
                           f"time-sampled {', '.join(names)}: read at the stage's start time code {start:g} (hydro "
                           f"loads one instant; set the stage's startTimeCode to choose another)")]


def _nonfinite_ops(prim, time) -> list:
    """Paths of the non-finite xformOp attributes of ``prim`` and its ancestors."""
    out = []
    p = prim
    while p and not p.IsPseudoRoot():
        for op in UsdGeom.Xformable(p).GetOrderedXformOps() if p.IsA(UsdGeom.Xformable) else ():
            v = op.Get(time)
            try:
                finite = v is None or bool(np.all(np.isfinite(np.asarray(v, dtype=float))))
            except (TypeError, ValueError):
                finite = True
            if not finite:
                out.append(str(op.GetAttr().GetPath()))
        p = p.GetParent()
    return out[::-1]


def _read_geometry(prim, m: np.ndarray, unit: float, values: dict, time):
    """(Geometry, world pose) of a geometry prim with world matrix ``m`` (hydro frame) and its
    resolved ``values`` (``physics:approximation``, ``newton:maxHullVertices``)."""
    tn = str(prim.GetTypeName())
    if tn == "Mesh":
        mesh = UsdGeom.Mesh(prim)
        geometry, pose = mesh_geometry(mesh.GetPointsAttr().Get(time), mesh.GetFaceVertexCountsAttr().Get(time),
                                       mesh.GetFaceVertexIndicesAttr().Get(time), m, name=str(prim.GetPath()),
                                       left_handed=mesh.GetOrientationAttr().Get(time) == UsdGeom.Tokens.leftHanded)
        approximation = values.get("physics:approximation", "none")
        if rules.SDF_COLLISION_API in _schemas().expand(_applied(prim)):
            approximation = "none"  # the SDF is built from the mesh itself
        limit = values.get("newton:maxHullVertices", -1)
        if approximation == "convexHull" and not (isinstance(limit, int) and (limit == -1 or limit >= 4)):
            raise GeometryError(f"newton:maxHullVertices must be -1 (no limit) or >= 4, got {limit!r}")
        try:
            return approximate_mesh(geometry, pose, approximation, limit)
        except ValueError as exc:
            raise GeometryError(str(exc)) from None
    if tn in HEIGHTFIELD_TYPES:
        def raw(name):
            attr = prim.GetAttribute(name)
            v = attr.Get(time) if attr else None
            if v is not None and attr.GetTypeName().scalarType in _FLOAT32_TYPES:  # as written: 0.05f → 0.05
                v = [shortest(x) for x in np.asarray(v, dtype=np.float32).reshape(-1)] \
                    if np.ndim(np.asarray(v)) else shortest(v)
            return v

        # a HeightField is no UsdGeom type, so the transform cache skips its own xformOps: apply them
        if not prim.IsA(UsdGeom.Xformable) and prim.GetAttribute("xformOpOrder"):
            m = np.array(UsdGeom.Xformable(prim).GetLocalTransformation(), dtype=float) @ m
        return heightfield_geometry(m, unit, raw(HF_ELEVATION), raw(HF_ROWS), raw(HF_COLS), raw(HF_HALF_EXTENTS),
                                    raw(HF_THICKNESS))
    axis = str(prim.GetAttribute("axis").Get(time) or "Z") if tn in AXIS_TYPES else "Z"

    def get(name):
        attr = prim.GetAttribute(name)
        v = attr.Get(time)
        if v is None:
            raise GeometryError(f"{tn} has no {name}")
        return shortest(v) if attr.GetTypeName().scalarType in _FLOAT32_TYPES else float(v)

    return primitive_geometry(tn, m, unit, axis, get)


def _material(prim, schemas, frame):
    """(material prim path, its resolved values) of the physics material bound to ``prim`` (None:
    none, or the bound material has no physics material schema)."""
    mat, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if not mat:
        return None
    mp = mat.GetPrim()
    applied = schemas.expand(_applied(mp))
    if rules.MATERIAL_API not in applied:
        return None
    u = frame.units(mp)
    return str(mp.GetPath()), _resolved(mp, schemas, frame.time), (u.mpu, u.kpu)


def _collision_groups(stage, records):
    """[(path, filtered group paths, invert, merge name, membership query)] of the stage's
    PhysicsCollisionGroup prims (a filter naming a non-group is reported and dropped)."""
    out = []
    for prim in stage.Traverse():
        if not prim.IsA(UsdPhysics.CollisionGroup):
            continue
        g = UsdPhysics.CollisionGroup(prim)
        path = str(prim.GetPath())
        filtered, bad = [], []
        for target in g.GetFilteredGroupsRel().GetTargets():
            t = stage.GetPrimAtPath(target)
            (filtered if t and t.IsA(UsdPhysics.CollisionGroup) else bad).append(str(target))
        rec = rules.PrimRecord(path=path, type_name=str(prim.GetTypeName()))
        if bad:
            rec.findings.append(rules._finding("HYDRO.USD.003", path, f"physics:filteredGroups names {', '.join(bad)}, "
                                                                     f"which is not a collision group: ignored"))
        records.append(rec)
        query = g.GetCollidersCollectionAPI().ComputeMembershipQuery()
        out.append((path, filtered, bool(g.GetInvertFilteredGroupsAttr().Get()),
                    str(g.GetMergeGroupNameAttr().Get() or ""), query))
    return out


def read_records(stage_or_path):
    """(records, scene): the :class:`~hydro.scene.validate.PrimRecord` s and the extracted scene data."""
    stage = stage_or_path if isinstance(stage_or_path, Usd.Stage) else _open(stage_or_path)
    schemas = _schemas()
    frame = _Frame(stage)
    scene = SceneData()
    records = scene.records
    stage_findings = rules.stage_findings(meters_per_unit=frame.mpu, kilograms_per_unit=frame.kpu)
    if stage_findings:  # nothing can be converted
        records.append(rules.PrimRecord(path="/", type_name="Stage", findings=stage_findings))
        return records, scene
    for error in stage.GetCompositionErrors():  # what the stage could not compose is missing from it
        site = getattr(error, "rootSite", None)
        where = str(getattr(site, "path", "") or "/")
        text = str(error).strip().replace("\n", " ")
        records.append(rules.PrimRecord(path=where, type_name="", findings=[rules._finding(
            "HYDRO.USD.006", where, f"USD cannot compose this prim as authored: {text} (hydro would load the scene "
                                    f"without it; fix the reference or remove it)")]))
    relevant = set(rules.COLLISION_APIS) | {rules.RIGID_BODY_API, rules.MASS_API, rules.NEWTON_MASS_API,
                                            rules.ARTICULATION_ROOT_API, rules.MATERIAL_API, rules.NEWTON_MATERIAL_API,
                                            rules.FILTERED_PAIRS_API}
    occurrences = []
    sampled = set()
    for occ in _occurrences(stage, frame, records):
        if occ.source not in sampled:
            sampled.add(occ.source)
            found = _time_sampled(occ.prim, frame.time, frame.start)
            if found:
                records.append(rules.PrimRecord(path=occ.source, type_name=str(occ.prim.GetTypeName()),
                                                findings=found))
        applied = schemas.expand(_applied(occ.prim))
        tn = str(occ.prim.GetTypeName())
        is_joint = tn.startswith("Physics") and tn.endswith("Joint")
        if is_env_prim(occ.path):
            scene.env_origins[env_of(occ.path)] = occ.world()[3, :3]
        authored = _authored(occ.prim, frame.time)
        if occ.prim.IsA(UsdPhysics.Scene):
            scene_api = UsdPhysics.Scene(occ.prim)
            found = rules.gravity_findings(occ.path, _plain(scene_api.GetGravityDirectionAttr().Get(frame.time)),
                                           _plain(scene_api.GetGravityMagnitudeAttr().Get(frame.time)))
            if found:
                records.append(rules.PrimRecord(path=occ.path, type_name=str(occ.prim.GetTypeName()), findings=found))
        if not (set(applied) & relevant) and not any(k.startswith("newton:") for k in authored) and not is_joint:
            continue
        rec = rules.PrimRecord(path=occ.path, type_name=tn, xformable=occ.prim.IsA(UsdGeom.Xformable),
                               schemas=_applied(occ.prim), applied=applied, attributes=authored,
                               fallbacks=schemas.fallbacks(applied))
        records.append(rec)
        occurrences.append((occ, rec))

    # bodies first, so colliders can find theirs
    bodies = {}
    broken = set()  # prims already reported with a non-finite transform
    bad_materials = set()
    for occ, rec in occurrences:
        values = {**rec.fallbacks, **rec.attributes}
        if rec.has(rules.RIGID_BODY_API) and values.get("physics:rigidBodyEnabled", True) is not False:
            m = occ.world()
            if not np.all(np.isfinite(m)):
                rec.findings.append(rules.transform_finding(occ.path, _nonfinite_ops(occ.prim, frame.time)))
                broken.add(occ.path)
                continue
            bodies[occ.path] = rec
            scene.bodies.append(body_values(occ.path, m, occ.parent_world(), rec.attributes, rec.applied,
                                            kpu=frame.units(occ.prim).kpu, mpu=frame.units(occ.prim).mpu))
    for occ, rec in occurrences:
        if rec.has(rules.ARTICULATION_ROOT_API):
            scene.articulations.append(occ.path)
        if rec.has(rules.FILTERED_PAIRS_API):
            targets = UsdPhysics.FilteredPairsAPI(occ.prim).GetFilteredPairsRel().GetTargets()
            scene.filtered.append((occ.path, [str(t) for t in targets]))
        collider = any(rec.has(api) for api in rules.COLLISION_APIS) and not rec.has(rules.SITE_API)
        if not collider or occ.path in broken:
            continue
        rec.collider = True
        rec.geometry_kind = KIND_OF_TYPE.get(rec.type_name)
        rec.body = occ.path if occ.path in bodies else nearest_ancestor(occ.path, bodies)
        m = occ.world()
        if not np.all(np.isfinite(m)):
            rec.findings.append(rules.transform_finding(occ.path, _nonfinite_ops(occ.prim, frame.time)))
            continue
        values = {**rec.fallbacks, **rec.attributes}
        try:
            geometry, world_pose = _read_geometry(occ.prim, m, frame.units(occ.prim).mpu, values, frame.time)
            if isinstance(geometry, Plane) and rec.body is not None:
                raise GeometryError(f"a Plane collider is infinite and must be static, but it is under the rigid "
                                    f"body {rec.body}")
            if isinstance(geometry, Heightfield) and rec.body is not None:
                raise GeometryError(f"a HeightField collider is static (as in Newton), but it is under the rigid "
                                    f"body {rec.body}")
        except GeometryError as exc:
            rec.geometry_error = str(exc)
            continue
        rec.geometry_kind = geometry.kind_name if not isinstance(geometry, ConvexMesh) else "mesh"
        rec.findings += rules.size_findings(occ.path, geometry)
        approximation = values.get("physics:approximation", "none")
        if rec.type_name == "Mesh" and approximation not in rules.APPROXIMATIONS and not rec.has(rules.SDF_COLLISION_API):
            rec.findings.append(rules._finding("HYDRO.USD.002", occ.path, f"physics:approximation = "
                                                                         f"{approximation!r} is not implemented: "
                                                                         f"hydro uses the mesh's triangles"))
        shape_vals = rules.shape_values(rec.attributes, rec.fallbacks)
        sdf = rec.has(rules.SDF_COLLISION_API) or shape_vals["hydroelastic"] is True
        if isinstance(geometry, Mesh) and sdf:
            try:
                geometry.check_watertight()
            except ValueError as exc:
                rec.watertight_error = str(exc)
        material = _material(occ.prim, schemas, frame)
        try:
            shape = collider_values(occ.path, rec, shape_vals, geometry, world_pose, rec.body, material,
                                    kpu=frame.units(occ.prim).kpu, mpu=frame.units(occ.prim).mpu)
        except MaterialError as exc:
            if exc.material not in bad_materials:
                bad_materials.add(exc.material)
                rec.findings.append(rules._finding("HYDRO.MAT.001", exc.material, str(exc)))
            continue
        if shape["budget"] is not None:
            rec.findings += rules.sdf_budget_findings(occ.path, geometry, *shape["budget"], authored=rec.attributes)
        shape["source"] = occ.source
        scene.shapes.append(shape)

    for path, message in frame.unit_findings:
        records.append(rules.PrimRecord(path=path, type_name="", findings=[rules._finding("HYDRO.STG.001", path,
                                                                                         message)]))
    groups = _collision_groups(stage, records)
    scene.groups = [(p, f, inv, merge) for p, f, inv, merge, _ in groups]
    for shape in scene.shapes:
        shape["groups"] = [p for p, _, _, _, q in groups
                           if q.IsPathIncluded(Sdf.Path(shape["path"])) or q.IsPathIncluded(Sdf.Path(shape["source"]))]
    _check_filtered_pairs(scene, records)
    return records, scene


def _check_filtered_pairs(scene, records):
    shape_body = {s["path"]: s["body"] for s in scene.shapes}
    by_path = {r.path: r for r in records}
    kept = []
    for source, targets in scene.filtered:
        rec = by_path.get(source)
        if not filter_targets(source, shape_body):
            if rec is not None:
                rec.findings.append(rules._finding("HYDRO.USD.003", source, "PhysicsFilteredPairsAPI on a prim that "
                                                                            "holds no collider: ignored"))
            continue
        good = []
        for t in targets:
            if filter_targets(t, shape_body):
                good.append(t)
            elif rec is not None:
                rec.findings.append(rules._finding("HYDRO.USD.003", source, f"physics:filteredPairs names {t}, which "
                                                                            f"holds no collider: ignored"))
        kept.append((source, good))
    scene.filtered = kept


def validate_usd(path) -> list:
    """Every finding of the scene at ``path`` (see :mod:`hydro.scene.validate`)."""
    records, _ = read_records(path)
    return rules.validate_records(records)


def load_usd(path, *, num_envs: int = 1, env_spacing: float = DEFAULT_ENV_SPACING, build_sdfs: bool = True) -> Model:
    """Load a USD scene into a :class:`~hydro.scene.model.Model` (rules in docs/usd.md).

    A scene with ERROR findings is refused with a :class:`~hydro.errors.SceneError` (a
    ``ValueError``) whose message lists the findings and whose ``findings`` holds them (errors
    first); WARNING findings are issued as :class:`SceneWarning`. ``num_envs``/``env_spacing``: see
    :mod:`hydro.scene.replicate` (replication of ``/World/envs/env_0``).
    """
    records, scene = read_records(path)
    findings = rules.validate_records(records)
    errors = [f for f in findings if f.severity == rules.ERROR]
    if errors:
        ordered = errors + [f for f in findings if f.severity != rules.ERROR]
        raise SceneError(f"{os.fspath(path)}: {len(errors)} error(s) in the scene:\n" + rules.format_findings(errors),
                         ordered)
    for f in findings:
        warnings.warn(str(f), SceneWarning, stacklevel=2)
    return build_model(scene, num_envs=num_envs, env_spacing=env_spacing, build_sdfs=build_sdfs)


def read_gravity(path) -> np.ndarray:
    """(3,) m/s², the gravity of the stage's first ``PhysicsScene`` in hydro's Z-up world.

    USD's rules: ``physics:gravityDirection`` (0, 0, 0) (the default) means "down the stage's
    up axis", ``physics:gravityMagnitude`` −inf (the default) means earth gravity, 9.81 m/s²;
    an authored magnitude is in stage units per s² (multiplied by ``metersPerUnit``).
    ``newton:gravityEnabled = false`` (NewtonSceneAPI) turns gravity off. A stage without a
    ``PhysicsScene`` gets (0, 0, −9.81).
    """
    stage = path if isinstance(path, Usd.Stage) else _open(path)
    frame = _Frame(stage)
    schemas = _schemas()
    for prim in stage.Traverse():
        if not prim.IsA(UsdPhysics.Scene):
            continue
        if _resolved(prim, schemas, frame.time).get("newton:gravityEnabled", True) is False:
            return np.zeros(3)
        scene = UsdPhysics.Scene(prim)
        u = frame.units(prim)  # a PhysicsScene brought in by a reference: in its layer's units and axes
        return gravity_vector(scene.GetGravityDirectionAttr().Get(frame.time),
                              scene.GetGravityMagnitudeAttr().Get(frame.time),
                              rot=_Y_TO_Z if u.y_up else np.eye(3), mpu=u.mpu)
    return np.array([0.0, 0.0, -EARTH_GRAVITY])


# ================================================================================================
# Writing


def _apply(prim, api: str) -> None:
    """Apply ``api`` as ``ApplyAPI`` does (by name when the schema is not registered here)."""
    if _schemas().registered:
        prim.ApplyAPI(api)
    else:
        prim.AddAppliedSchema(api)


def _set(prim, name: str, value) -> None:
    """Author ``name`` with the type and variability its schema declares."""
    type_name, uniform = _schemas().attribute(name)
    variability = Sdf.VariabilityUniform if uniform else Sdf.VariabilityVarying
    prim.CreateAttribute(name, type_name, False, variability).Set(value)


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
    if isinstance(geometry, Mesh):  # meshes and convex hulls
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
    if isinstance(geometry, Heightfield):
        return write_heightfield(stage, path, geometry), None
    raise ValueError(f"shape {path}: a {geometry.kind_name} cannot be written to USD")


def write_heightfield(stage, path, geometry):
    """Define a ``HeightField`` prim holding ``geometry`` (hydro's attributes, usd_convert.HF_*)."""
    prim = stage.DefinePrim(path, "HeightField")
    prim.CreateAttribute(HF_ELEVATION, Sdf.ValueTypeNames.FloatArray).Set(
        Vt.FloatArray.FromNumpy(np.ascontiguousarray(geometry.grid.ravel(), dtype=np.float32)))
    prim.CreateAttribute(HF_ROWS, Sdf.ValueTypeNames.Int).Set(int(geometry.nrow))
    prim.CreateAttribute(HF_COLS, Sdf.ValueTypeNames.Int).Set(int(geometry.ncol))
    prim.CreateAttribute(HF_HALF_EXTENTS, Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(geometry.hx, geometry.hy))
    prim.CreateAttribute(HF_THICKNESS, Sdf.ValueTypeNames.Float).Set(float(geometry.thickness))
    return prim


def _free_root(stage, path):
    if stage.GetPrimAtPath(path):
        raise ValueError(f"prim path {path} is taken; hydro writes its {path.rsplit('/', 1)[1]} there")
    UsdGeom.Scope.Define(stage, path)


def _write_collider(stage, model, i):
    prim = stage.GetPrimAtPath(model.shape_path[i])
    UsdPhysics.CollisionAPI.Apply(prim)
    geometry = model.shape_geometry[i]
    if model.shape_sdf_collision[i]:
        _apply(prim, rules.SDF_COLLISION_API)
        s = model.shape_sdf_settings[i]
        _set(prim, "newton:hydroelasticEnabled", bool(model.shape_hydroelastic[i]))
        _set(prim, "newton:hydroelasticStiffness", float(model.shape_stiffness[i]))
        _set(prim, "newton:sdfMaxResolution", int(s.max_resolution))
        if s.target_voxel_size is not None and s.target_voxel_size > 0:
            _set(prim, "newton:sdfTargetVoxelSize", float(s.target_voxel_size))
        _set(prim, "newton:sdfNarrowBandInner", float(s.narrow_band_inner))
        _set(prim, "newton:sdfNarrowBandOuter", float(s.narrow_band_outer))
        if s.padding is not None:
            _set(prim, "newton:sdfPadding", float(s.padding))
        _set(prim, "newton:sdfTextureFormat", s.texture_format)
    elif isinstance(geometry, Mesh):
        UsdPhysics.MeshCollisionAPI.Apply(prim)
        _apply(prim, rules.MESH_COLLISION_API)
        _set(prim, "physics:approximation", "convexHull" if isinstance(geometry, ConvexMesh) else "none")
    else:
        _apply(prim, rules.NEWTON_COLLISION_API)
    _set(prim, "newton:contactMargin", float(model.shape_margin[i]))
    _set(prim, "newton:contactGap", float(model.shape_gap[i]))
    if not model.shape_collision_enabled[i]:
        UsdPhysics.CollisionAPI(prim).CreateCollisionEnabledAttr(False)
    return prim


def _write_material(stage, path, row):
    """A physics material with the (resolved) ``row`` of ``Model.shape_material``: the friction and
    restitution always, each Newton value only where it is not hydro's default."""
    mat = UsdShade.Material.Define(stage, path)
    prim = mat.GetPrim()
    api = UsdPhysics.MaterialAPI.Apply(prim)
    values = dict(zip(MATERIAL_FIELDS, row.tolist()))
    api.CreateStaticFrictionAttr(values["static_friction"])
    api.CreateDynamicFrictionAttr(values["dynamic_friction"])
    api.CreateRestitutionAttr(values["restitution"])
    default = dict(zip(MATERIAL_FIELDS, material_row(DEFAULT_MATERIAL).tolist()))
    newton = {"torsional_friction": "newton:torsionalFriction", "rolling_friction": "newton:rollingFriction",
              "contact_stiffness": "newton:contactStiffness", "contact_damping": "newton:contactDamping",
              "friction_gain": "newton:contactFrictionGain", "adhesion": "newton:contactAdhesion"}
    changed = {k: v for k, v in values.items() if k in newton and not (math.isnan(v) and math.isnan(default[k]))
               and v != default[k]}
    if changed:
        _apply(prim, rules.NEWTON_MATERIAL_API)
        for k, v in changed.items():
            _set(prim, newton[k], float(v))
    return mat


def _write_groups(stage, model):
    """One PhysicsCollisionGroup per group set in use, filtering the sets the model's mask keeps apart
    (inverted when the set is kept apart from shapes in no group)."""
    mask = model.collision_group_mask
    used = sorted(set(int(c) for c in model.shape_collision_group) - {0})
    if not used:
        return
    root = WORLD_ROOT + "/CollisionGroups"
    _free_root(stage, root)
    groups = {c: UsdPhysics.CollisionGroup.Define(stage, f"{root}/Group_{c}") for c in used}
    for c, g in groups.items():
        includes = g.GetCollidersCollectionAPI().CreateIncludesRel()
        for i in np.flatnonzero(model.shape_collision_group == c):
            includes.AddTarget(model.shape_path[i])
        rel = g.CreateFilteredGroupsRel()
        # a set kept apart from shapes in no group can only be said with an inverted filter,
        # which then names the groups it does collide with
        inverted = not mask[c, 0]
        if inverted:
            g.CreateInvertFilteredGroupsAttr(True)
        for d in used:
            if mask[c, d] == inverted:
                rel.AddTarget(groups[d].GetPath())


def _write_filtered_pairs(stage, model):
    bodies = set(model.body_path)
    shapes_of = {b: int(np.sum(model.shape_body == k)) for k, b in enumerate(model.body_path)}
    for a, b in model.filtered_shape_pairs:
        pa, pb = model.shape_path[a], model.shape_path[b]
        for p in (pa, pb):  # on (or naming) a body's own prim the API filters the whole body
            if p in bodies and shapes_of[p] > 1:
                raise ValueError(f"filtered pair {pa} - {pb}: shape {p} shares its prim with a body that has other "
                                 f"shapes, so USD's PhysicsFilteredPairsAPI cannot name it alone")
        UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath(pa)).CreateFilteredPairsRel().AddTarget(Sdf.Path(pb))


#: Extensions :func:`save_usd` writes (USD chooses text or binary by them).
USD_SUFFIXES = (".usd", ".usda", ".usdc")


def save_usd(model: Model, path) -> None:
    """Write ``model`` to a ``.usda``/``.usd``/``.usdc`` file (see the module docstring and
    docs/usd.md). Any other extension is refused before anything is written (``load_usd`` could not
    read it), as is a path that is a folder, a link, a FIFO or a device; the file appears whole or
    not at all (:mod:`hydro.tools.outputs`)."""
    from ..tools.outputs import atomic_file, output_file

    path = output_file(os.fspath(path), option="save_usd path", suffixes=USD_SUFFIXES, example="scene.usda")
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
        _apply(prim, rules.NEWTON_MASS_API)
        six = [tensor[0, 0], tensor[1, 1], tensor[2, 2], tensor[0, 1], tensor[0, 2], tensor[1, 2]]
        _set(prim, "newton:inertia", Vt.DoubleArray([float(x) for x in six]))

    materials = {}
    default_row = material_row(DEFAULT_MATERIAL)
    for i in range(model.shape_count):
        prim = _write_collider(stage, model, i)
        row = model.shape_material[i]
        if np.array_equal(row, default_row, equal_nan=True):
            continue  # no material bound: every value is the default
        key = tuple(np.nan_to_num(row, nan=-1.0).tolist())
        if key not in materials:
            if not materials:
                _free_root(stage, WORLD_ROOT + "/PhysicsMaterials")
            materials[key] = _write_material(stage, f"{WORLD_ROOT}/PhysicsMaterials/Material_{len(materials)}", row)
        UsdShade.MaterialBindingAPI.Apply(prim).Bind(materials[key], UsdShade.Tokens.weakerThanDescendants, "physics")

    _write_groups(stage, model)
    _write_filtered_pairs(stage, model)
    for root in model.articulations:
        UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(root))
    with atomic_file(path) as tmp:
        if not stage.GetRootLayer().Export(tmp):
            raise InputError(f"save_usd: USD could not write {path}")
