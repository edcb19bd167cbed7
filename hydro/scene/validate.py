"""Schema rules for scenes: findings with stable codes, on plain data (no ``pxr`` here).

(Over 500 lines on purpose: every code is defined, documented and checked in this one module, so a
finding's code leads to its rule.)

:mod:`hydro.scene.usd_io` turns each relevant USD prim into a :class:`PrimRecord` (its path, type,
whether it is Xformable, its applied schema names, its *authored* attribute values and the
schema's fallbacks for the rest, as plain Python values); :func:`validate_records` applies every
rule and returns :class:`Finding` s. :class:`~hydro.scene.model.ModelBuilder` applies the
per-shape rules through :func:`shape_findings`, so a scene made in Python and one read from USD
are held to the same rules.

A finding prints as ``CODE SEVERITY PRIM_PATH: message`` and its message names the attribute. Codes
are those of Newton's asset validators where one exists (``NEWTON.*``), hydro's own otherwise
(``HYDRO.*``). The severity is hydro's: ERROR when hydro cannot load the scene as authored (the
load is refused), WARNING when it can and does something documented instead.

| code | severity | rule |
|---|---|---|
| ``NEWTON.MAS.001`` | ERROR | NewtonMassAPI on a prim that is not Xformable; ``newton:inertia`` authored non-empty |
| | | but not exactly 6 finite values with a non-negative diagonal; ``newton:massModel`` not |
| | | ``solid``/``shell``; ``newton:shellThickness`` not finite and > 0 (other than the -inf |
| | | sentinel). A thickness authored with the solid model is ignored, as the rule says. |
| ``NEWTON.COL.001`` | WARNING | a Mesh collider with neither NewtonMeshCollisionAPI nor NewtonSDFCollisionAPI (hydro |
| | | uses its triangles); both on one mesh (the SDF configuration is used, as in Newton); |
| | | NewtonMeshCollisionAPI on a prim that is not a Mesh (its attributes are ignored) |
| ``NEWTON.COL.002`` | ERROR | an authored collider value hydro cannot use: ``newton:contactMargin``/``contactGap`` |
| | | negative or not finite (gap: -inf is the sentinel), ``newton:sdfMaxResolution`` not a |
| | | positive multiple of 8, ``newton:sdfNarrowBandInner`` not < 0 or ``Outer`` not > 0, |
| | | ``newton:sdfTextureFormat`` unknown, ``newton:sdfTargetVoxelSize`` not > 0, |
| | | ``newton:sdfPadding`` < 0 (both: -inf is the sentinel), ``newton:hydroelasticStiffness`` |
| | | not > 0 on a hydroelastic shape, ``newton:hydroelasticEnabled`` not a bool |
| ``NEWTON.COL.002`` | WARNING | hydroelastic enabled without an authored SDF source (``newton:sdfMaxResolution`` or |
| | | ``newton:sdfTargetVoxelSize``) when the schema's fallback resolution is not the |
| | | documented 64 (at 64, the document's default, nothing is said); a bad |
| | | ``newton:hydroelasticStiffness`` on a shape that is not hydroelastic (never read) |
| ``NEWTON.MAT.001`` | WARNING | NewtonMaterialAPI on a prim that is not a Material, or without PhysicsMaterialAPI listed |
| ``HYDRO.HYD.001`` | ERROR | hydroelastic enabled on a plane, a heightfield or a non-watertight mesh |
| ``HYDRO.HYD.003`` | WARNING | a hydroelastic shape none of whose possible partners is hydroelastic |
| ``HYDRO.SDF.005`` | ERROR | NewtonSDFCollisionAPI on a mesh that is not watertight (no SDF can be built) |
| ``HYDRO.BUD.001`` | ERROR | an SDF whose settings would need more memory to build than hydro's budget |
| ``HYDRO.GEO.001`` | ERROR | a collider hydro cannot represent: unsupported prim type, bad size, sheared |
| | | transform, non-uniform scale across a capsule or a round cross-section, a plane on a |
| | | rigid body, ``newton:maxHullVertices`` between 0 and 3 |
| ``HYDRO.GEO.002`` | ERROR | a collider size outside [:data:`MIN_LENGTH`, :data:`MAX_LENGTH`] metres |
| ``HYDRO.XFM.001`` | ERROR | a prim whose transform is not finite (names the xformOp attribute) |
| ``HYDRO.GRV.001`` | ERROR | a ``PhysicsScene``'s ``physics:gravityDirection`` not 3 finite numbers, or its |
| | | ``physics:gravityMagnitude`` NaN or +inf (-inf is the "earth gravity" sentinel) |
| ``HYDRO.STG.001`` | ERROR | the stage's ``metersPerUnit`` or ``kilogramsPerUnit`` not a finite number > 0 (or a |
| | | referenced layer's: its values cannot be converted) |
| ``HYDRO.MAS.001`` | ERROR | ``physics:mass``/``physics:density`` negative or not finite, ``physics:diagonalInertia`` |
| | | negative, not finite or breaking the triangle inequality (a moment over the sum of the |
| | | other two), ``physics:centerOfMass`` not finite (other than the unset -inf) |
| ``HYDRO.MAT.001`` | ERROR | a bound physics material's friction, restitution or Newton contact value negative |
| | | or not finite (other than the -inf sentinel), or a contact stiffness of 0 |
| ``HYDRO.BOD.001`` | ERROR | ``physics:velocity`` or ``physics:angularVelocity`` not 3 finite numbers |
| ``HYDRO.SCH.001`` | WARNING | a Newton attribute authored without its schema applied (files of older hydro |
| | | versions): collider attributes are read anyway, mass attributes are ignored |
| ``HYDRO.USD.001`` | WARNING | a physics joint: hydro has no joints, the prim is ignored |
| ``HYDRO.USD.002`` | WARNING | a ``physics:approximation`` hydro does not implement (the triangles are used) |
| ``HYDRO.USD.003`` | WARNING | a filtered pair or collision group that names nothing hydro can filter (ignored) |
| ``HYDRO.USD.004`` | WARNING | an attribute hydro reads holds time samples: it is read at the stage's start time |
| | | code (a default authored beside the samples is not used there) |
| ``HYDRO.USD.006`` | ERROR | a composition error: a reference or payload to a file that cannot be opened, a |
| | | prim it names that is not there (USD composes the stage without it, silently) |
| ``HYDRO.USD.005`` | ERROR | a point instancer whose ``protoIndices`` name a prototype it does not have, or whose |
| | | ``positions`` (``orientations``, ``scales`` when authored) are not one per ``protoIndices`` entry |

Codes of earlier versions: ``HYDRO.HYD.002``, ``HYDRO.SDF.001``–``004`` and ``HYDRO.CON.001`` are
``NEWTON.COL.002`` now; ``HYDRO.MAS.002`` (shell computed as solid) is gone (hydro computes shells).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from ..sdf.layout import BRICK, grid_layout
from .paths import env_of

#: The env of a prim path (:func:`hydro.scene.paths.env_of`), under its old name.
env_of_path = env_of

ERROR = "ERROR"
WARNING = "WARNING"

#: Every code with its severity and a one-line summary (see the module docstring).
CODES = {
    "NEWTON.MAS.001": (ERROR, "NewtonMassAPI on a non-Xformable or invalid Newton mass attributes"),
    "NEWTON.COL.001": (WARNING, "a mesh collider without exactly one Newton collision representation"),
    "NEWTON.COL.002": (ERROR, "invalid authored Newton collider (SDF, contact, hydroelastic) values"),
    "NEWTON.MAT.001": (WARNING, "NewtonMaterialAPI not on a physics Material"),
    "HYDRO.HYD.001": (ERROR, "hydroelastic on a plane, heightfield or non-watertight mesh"),
    "HYDRO.HYD.003": (WARNING, "hydroelastic shape without a hydroelastic partner"),
    "HYDRO.SDF.005": (ERROR, "SDF asked for on a non-watertight mesh"),
    "HYDRO.BUD.001": (ERROR, "SDF settings that need more memory than the budget"),
    "HYDRO.GEO.001": (ERROR, "collider geometry hydro cannot represent"),
    "HYDRO.GEO.002": (ERROR, "collider size out of the supported range"),
    "HYDRO.XFM.001": (ERROR, "non-finite transform"),
    "HYDRO.STG.001": (ERROR, "invalid stage units"),
    "HYDRO.GRV.001": (ERROR, "non-finite gravity"),
    "HYDRO.MAS.001": (ERROR, "invalid physics mass properties"),
    "HYDRO.MAT.001": (ERROR, "a physics material value hydro cannot use"),
    "HYDRO.BOD.001": (ERROR, "non-finite body velocity"),
    "HYDRO.SCH.001": (WARNING, "Newton attribute without its schema applied"),
    "HYDRO.USD.001": (WARNING, "physics joint ignored"),
    "HYDRO.USD.002": (WARNING, "mesh approximation not implemented"),
    "HYDRO.USD.003": (WARNING, "filter that names nothing hydro can filter"),
    "HYDRO.USD.004": (WARNING, "time-sampled attribute read at the stage's start time code"),
    "HYDRO.USD.005": (ERROR, "point instancer with a missing prototype or positions not one per index"),
    "HYDRO.USD.006": (ERROR, "a composition error (a reference to a missing file)"),
}

# --- the schemas (newton-usd-schemas; usd_io reads the registered definitions) ---------------------

SDF_COLLISION_API = "NewtonSDFCollisionAPI"
NEWTON_COLLISION_API = "NewtonCollisionAPI"
MESH_COLLISION_API = "NewtonMeshCollisionAPI"
COLLISION_API = "PhysicsCollisionAPI"
PHYSICS_MESH_COLLISION_API = "PhysicsMeshCollisionAPI"
COLLISION_APIS = (COLLISION_API, NEWTON_COLLISION_API, SDF_COLLISION_API, MESH_COLLISION_API)
RIGID_BODY_API = "PhysicsRigidBodyAPI"
MASS_API = "PhysicsMassAPI"
NEWTON_MASS_API = "NewtonMassAPI"
MATERIAL_API = "PhysicsMaterialAPI"
NEWTON_MATERIAL_API = "NewtonMaterialAPI"
ARTICULATION_ROOT_API = "PhysicsArticulationRootAPI"
FILTERED_PAIRS_API = "PhysicsFilteredPairsAPI"
SITE_API = "NewtonSiteAPI"
#: The schemas each schema includes (its ``apiSchemas``), for records made by hand; records read
#: from USD carry the registry's own expansion in ``PrimRecord.applied`` (tests/test_usd_schemas.py
#: checks this table against it).
INCLUDED_SCHEMAS = {
    SDF_COLLISION_API: (NEWTON_COLLISION_API, COLLISION_API),
    MESH_COLLISION_API: (NEWTON_COLLISION_API, COLLISION_API, PHYSICS_MESH_COLLISION_API),
    NEWTON_COLLISION_API: (COLLISION_API,),
    NEWTON_MASS_API: (MASS_API,),
    NEWTON_MATERIAL_API: (MATERIAL_API,),
    "NewtonArticulationRootAPI": (ARTICULATION_ROOT_API,),
}

#: NewtonSDFCollisionAPI's own attributes and their schema fallbacks (newton-usd-schemas 0.6;
#: tests/test_usd_schemas.py checks them against the registered schema). -inf: "the engine's
#: default" (:data:`ENGINE_DEFAULTS`). These are also the Python builder's defaults.
SDF_COLLISION_DEFAULTS = {
    "newton:hydroelasticEnabled": False,
    "newton:hydroelasticStiffness": 1e10,
    "newton:sdfMaxResolution": 64,
    "newton:sdfTargetVoxelSize": -math.inf,
    "newton:sdfNarrowBandInner": -0.1,
    "newton:sdfNarrowBandOuter": 0.1,
    "newton:sdfPadding": -math.inf,
    "newton:sdfTextureFormat": "uint16",
}
#: NewtonCollisionAPI's attributes (inherited by NewtonSDFCollisionAPI and NewtonMeshCollisionAPI).
COLLISION_DEFAULTS = {
    "newton:contactMargin": 0.0,
    "newton:contactGap": -math.inf,
}
#: hydro's value for each collider attribute whose schema sentinel -inf means "the engine's
#: default" (docs/usd.md): no gap (no speculative contacts), 4 voxels of padding (1 below a
#: resolution of 32), and the grid sized by ``newton:sdfMaxResolution``. The material sentinels
#: are :mod:`hydro.scene.material`'s, the shell thickness :mod:`hydro.scene.mass`'s.
ENGINE_DEFAULTS = {
    "newton:contactGap": 0.0,
    "newton:sdfPadding": None,
    "newton:sdfTargetVoxelSize": None,
}
#: NewtonMaterialAPI's attributes (the ones of PhysicsMaterialAPI are friction, restitution, density).
MATERIAL_ATTRIBUTES = ("newton:torsionalFriction", "newton:rollingFriction", "newton:contactStiffness",
                       "newton:contactDamping", "newton:contactFrictionGain", "newton:contactAdhesion")
TEXTURE_FORMATS = ("uint8", "uint16", "float32")
MASS_MODELS = ("solid", "shell")
NEWTON_MASS_ATTRIBUTES = ("newton:inertia", "newton:massModel", "newton:shellThickness")
#: ``physics:approximation`` values hydro implements (others use the mesh's triangles, HYDRO.USD.002).
APPROXIMATIONS = ("none", "convexHull", "boundingSphere", "boundingCube")

#: Geometry kinds that can never be hydroelastic.
NON_VOLUMETRIC = ("plane", "heightfield")

#: m, the range of collider sizes (radii, edges, heights; a mesh's largest extent) hydro accepts.
MIN_LENGTH = 1e-6
MAX_LENGTH = 1e4
#: The stage units hydro converts (HYDRO.STG.001): beyond them a unit's powers (density is
#: kg/unit³) overflow or vanish in float64 before any size rule can name a prim.
UNIT_RANGE = (1e-9, 1e9)
#: Bytes one SDF may need while it is built (HYDRO.BUD.001); the environment variable
#: ``HYDRO_SDF_BUDGET_GIB`` changes it.
DEFAULT_SDF_BUDGET_GIB = 4.0


@dataclass(frozen=True)
class Finding:
    """One rule broken by one prim; ``str()`` gives ``CODE SEVERITY PRIM_PATH: message``."""

    code: str
    severity: str
    prim_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.severity} {self.prim_path}: {self.message}"


@dataclass
class PrimRecord:
    """What the rules need to know about one prim, as plain data.

    | field | meaning |
    |---|---|
    | ``path`` | the prim path |
    | ``type_name`` | the prim's type (``Sphere``, ``Mesh``, ``Xform``, ``PhysicsRevoluteJoint``…) |
    | ``xformable`` | whether the prim is a UsdGeomXformable |
    | ``schemas`` | applied API schema names as authored, unregistered ones included |
    | ``applied`` | ``schemas`` with the schemas they include (NewtonSDFCollisionAPI → |
    |  | NewtonCollisionAPI, PhysicsCollisionAPI); empty: same as ``schemas`` |
    | ``attributes`` | authored ``physics:*``/``newton:*`` values: bool, int, float, str, tuples |
    |  | and lists (quaternions as (x, y, z, w)); unauthored attributes are absent |
    | ``fallbacks`` | the schema fallbacks of the unauthored attributes of the applied schemas |
    | ``collider`` | the prim is a collider (a collision API applied) |
    | ``body`` | for a collider, the path of the rigid body it belongs to (None: static) |
    | ``geometry_kind`` | ``sphere``, ``box``, …, ``mesh``, ``plane``, ``heightfield`` (None: unknown) |
    | ``geometry_error`` | why the collider's geometry cannot be represented (None: it can) |
    | ``watertight_error`` | for a mesh, why it is not watertight (None: it is, or unchecked) |
    | ``findings`` | findings made while reading (units, transforms, sizes, budgets, filters) |
    """

    path: str
    type_name: str = ""
    xformable: bool = True
    schemas: tuple = ()
    attributes: dict = field(default_factory=dict)
    fallbacks: dict = field(default_factory=dict)
    applied: tuple = ()
    collider: bool = False
    body: str | None = None
    geometry_kind: str | None = None
    geometry_error: str | None = None
    watertight_error: str | None = None
    findings: list = field(default_factory=list)

    def __post_init__(self):
        if not self.applied:
            self.applied = tuple(dict.fromkeys(
                [a for s in self.schemas for a in (s,) + INCLUDED_SCHEMAS.get(s, ())]))

    def has(self, api: str) -> bool:
        """Whether ``api`` is applied (directly or included by another applied schema)."""
        return api in self.schemas or api in self.applied


def has_errors(findings) -> bool:
    return any(f.severity == ERROR for f in findings)


def format_findings(findings) -> str:
    return "\n".join(str(f) for f in findings)


def _shown(value) -> str:
    """``value`` as a finding shows it: plain Python numbers, not NumPy's ``np.float64(-1.0)``."""
    if isinstance(value, np.generic):
        value = value.item()
    elif isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def _finding(code: str, path: str, message: str, severity: str | None = None) -> Finding:
    return Finding(code, severity or CODES[code][0], path, message)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _finite_at_least(v, low, *, strict=False, sentinel=False) -> bool:
    if sentinel and v == -math.inf:
        return True
    return _is_number(v) and math.isfinite(v) and (v > low if strict else v >= low)


# ----------------------------------------------------------------------------------------------
# Rules on one shape's values (shared by the USD validator and the Python builder)


def shape_findings(path: str, *, kind: str, hydroelastic, stiffness, max_resolution=64,
                   target_voxel_size=None, narrow_band_inner=-0.1, narrow_band_outer=0.1,
                   padding=None, texture_format="uint16", margin=0.0, gap=0.0,
                   watertight_error: str | None = None, sdf_collision: bool = False,
                   sentinels: bool = False) -> list[Finding]:
    """Findings of one collider's values (NEWTON.COL.002, HYDRO.HYD.001, HYDRO.SDF.005).

    ``target_voxel_size``/``padding`` None: unset. ``sentinels``: the values are USD's, where -inf
    means "the engine's default" for the gap, the voxel size and the padding."""
    out = []
    col = "NEWTON.COL.002"
    if sdf_collision and hydroelastic is not True and kind == "mesh" and watertight_error:
        out.append(_finding("HYDRO.SDF.005", path, f"NewtonSDFCollisionAPI asks for an SDF, but the mesh is not "
                                                   f"watertight ({watertight_error})"))
    if hydroelastic is True:
        if kind in NON_VOLUMETRIC:
            out.append(_finding("HYDRO.HYD.001", path,
                                f"newton:hydroelasticEnabled is true on a {kind}: hydroelastic contact requires "
                                f"volumetric shapes with SDF data and is not supported for planes, heightfields or "
                                f"non-watertight meshes (they take the default path with point contacts)"))
        elif kind == "mesh" and watertight_error:
            out.append(_finding("HYDRO.HYD.001", path,
                                f"newton:hydroelasticEnabled is true on a mesh that is not watertight "
                                f"({watertight_error}): planes, heightfields and non-watertight meshes cannot "
                                f"be hydroelastic"))
    elif not isinstance(hydroelastic, bool):
        out.append(_finding(col, path, f"newton:hydroelasticEnabled must be true or false, got {_shown(hydroelastic)}"))
    if not _finite_at_least(stiffness, 0.0, strict=True):
        if hydroelastic is True:
            out.append(_finding(col, path, f"newton:hydroelasticStiffness must be a finite number > 0 (N/m^3), "
                                           f"got {_shown(stiffness)}"))
        else:
            out.append(_finding(col, path, f"newton:hydroelasticStiffness must be a finite number > 0 (N/m^3), "
                                           f"got {_shown(stiffness)} (ignored: the shape is not hydroelastic)", WARNING))
    r = max_resolution
    if not (_is_int(r) and r > 0 and r % 8 == 0):
        out.append(_finding(col, path, f"newton:sdfMaxResolution must be a positive multiple of 8, got {_shown(r)}"))
    if not (_is_number(narrow_band_inner) and math.isfinite(narrow_band_inner) and narrow_band_inner < 0):
        out.append(_finding(col, path, f"newton:sdfNarrowBandInner must be a finite number < 0 (m), "
                                       f"got {_shown(narrow_band_inner)}"))
    if not (_is_number(narrow_band_outer) and math.isfinite(narrow_band_outer) and narrow_band_outer > 0):
        out.append(_finding(col, path, f"newton:sdfNarrowBandOuter must be a finite number > 0 (m), "
                                       f"got {_shown(narrow_band_outer)}"))
    if texture_format not in TEXTURE_FORMATS:
        out.append(_finding(col, path, f"newton:sdfTextureFormat must be one of {', '.join(TEXTURE_FORMATS)}, "
                                       f"got {_shown(texture_format)}"))
    if target_voxel_size is not None and not _finite_at_least(target_voxel_size, 0.0, strict=True, sentinel=sentinels):
        out.append(_finding(col, path, f"newton:sdfTargetVoxelSize must be a finite number > 0 (m)"
                                       f"{' or -inf (unset)' if sentinels else ''}, got {_shown(target_voxel_size)}"))
    if padding is not None and not _finite_at_least(padding, 0.0, sentinel=sentinels):
        out.append(_finding(col, path, f"newton:sdfPadding must be a finite number >= 0 (m)"
                                       f"{' or -inf (the engine default)' if sentinels else ''}, got {_shown(padding)}"))
    if not _finite_at_least(margin, 0.0):
        out.append(_finding(col, path, f"newton:contactMargin must be a finite number >= 0 (m), got {_shown(margin)}"))
    if not _finite_at_least(gap, 0.0, sentinel=sentinels):
        out.append(_finding(col, path, f"newton:contactGap must be a finite number >= 0 (m)"
                                       f"{' or -inf (the engine default)' if sentinels else ''}, got {_shown(gap)}"))
    return out


def newton_mass_findings(path: str, *, xformable: bool, attributes: dict) -> list[Finding]:
    """NEWTON.MAS.001, exactly as the rule reads, for a prim with NewtonMassAPI applied: authored
    values are checked; ``newton:shellThickness`` is "only meaningful" with the shell model, so
    with the solid model it is ignored, not an error."""
    out = []
    code = "NEWTON.MAS.001"
    if not xformable:
        out.append(_finding(code, path, "NewtonMassAPI must be applied on an Xformable (a rigid body or a collision-shape Gprim)"))
    if "newton:inertia" in attributes:
        inertia = attributes["newton:inertia"]
        if not isinstance(inertia, (list, tuple)):
            out.append(_finding(code, path, f"newton:inertia must be an array, got {_shown(inertia)}"))
        elif len(inertia) != 0:
            if len(inertia) != 6:
                out.append(_finding(code, path, f"newton:inertia must be empty or contain exactly 6 elements "
                                                f"[Ixx, Iyy, Izz, Ixy, Ixz, Iyz], got {len(inertia)}"))
            elif not all(_is_number(v) and math.isfinite(v) for v in inertia):
                out.append(_finding(code, path, f"newton:inertia elements must be finite, got {_shown(list(inertia))}"))
            elif min(inertia[:3]) < 0:
                out.append(_finding(code, path, f"newton:inertia diagonal terms Ixx, Iyy, Izz must be non-negative, "
                                                f"got {_shown(list(inertia[:3]))}"))
    model = attributes.get("newton:massModel")
    if "newton:massModel" in attributes and model not in MASS_MODELS:
        out.append(_finding(code, path, f"newton:massModel must be solid or shell, got {_shown(model)}"))
    if "newton:shellThickness" in attributes:
        t = attributes["newton:shellThickness"]
        if not (_is_number(t) and ((math.isfinite(t) and t > 0) or t == -math.inf)):
            out.append(_finding(code, path, f"newton:shellThickness must be finite and > 0, or -inf (the solver "
                                            f"chooses), got {_shown(t)}"))
    return out


def physics_mass_findings(path: str, attributes: dict) -> list[Finding]:
    """HYDRO.MAS.001: authored ``physics:mass``, ``physics:density``, ``physics:diagonalInertia``."""
    out = []
    for name in ("physics:mass", "physics:density"):
        if name in attributes:
            v = attributes[name]
            if not (_is_number(v) and math.isfinite(v) and v >= 0):
                out.append(_finding("HYDRO.MAS.001", path, f"{name} must be a finite number >= 0, got {_shown(v)}"))
    if "physics:centerOfMass" in attributes:
        v = attributes["physics:centerOfMass"]
        ok = isinstance(v, (list, tuple)) and len(v) == 3 and all(_is_number(x) for x in v) and (
            all(math.isfinite(x) for x in v) or all(x == -math.inf for x in v))
        if not ok:
            out.append(_finding("HYDRO.MAS.001", path, f"physics:centerOfMass must be 3 finite numbers "
                                                       f"(or -inf: unset), got {_shown(v)}"))
    if "physics:diagonalInertia" in attributes:
        v = attributes["physics:diagonalInertia"]
        if not (isinstance(v, (list, tuple)) and len(v) == 3 and all(_is_number(x) and math.isfinite(x) and x >= 0 for x in v)):
            out.append(_finding("HYDRO.MAS.001", path, f"physics:diagonalInertia must be 3 finite numbers >= 0, got {_shown(v)}"))
        else:
            lo, mid, hi = sorted(float(x) for x in v)
            if hi > (lo + mid) * (1.0 + 1e-6) + 1e-15 * max(1.0, hi):  # 1e-6: values stored as float32
                out.append(_finding("HYDRO.MAS.001", path, f"physics:diagonalInertia {_shown(v)} breaks the triangle "
                                                           f"inequality (each moment must be at most the sum of the "
                                                           f"other two: {hi:.9g} > {lo:.9g} + {mid:.9g}); no body "
                                                           f"has it"))
    return out


def newton_material_findings(path: str, *, type_name: str, schemas) -> list[Finding]:
    """NEWTON.MAT.001 (placement only, as the rule reads) for a prim with NewtonMaterialAPI."""
    out = []
    if type_name != "Material":
        out.append(_finding("NEWTON.MAT.001", path, f"NewtonMaterialAPI must be applied on a Material, not a "
                                                    f"{type_name or 'typeless prim'}: it is ignored"))
    elif MATERIAL_API not in schemas:
        out.append(_finding("NEWTON.MAT.001", path, "NewtonMaterialAPI must be applied alongside PhysicsMaterialAPI "
                                                    "(hydro reads the material anyway)"))
    return out


def collider_schema_findings(path: str, *, type_name: str, schemas, applied=()) -> list[Finding]:
    """NEWTON.COL.001 for a collider: which Newton collision representation a mesh uses."""
    names = set(schemas) | set(applied)
    mesh_api, sdf_api = MESH_COLLISION_API in names, SDF_COLLISION_API in names
    out = []
    if type_name == "Mesh":
        if mesh_api and sdf_api:
            out.append(_finding("NEWTON.COL.001", path, "both NewtonMeshCollisionAPI and NewtonSDFCollisionAPI are "
                                                        "applied: hydro uses the SDF configuration (as Newton does)"))
        elif not (mesh_api or sdf_api):
            out.append(_finding("NEWTON.COL.001", path, "a Mesh collider needs NewtonMeshCollisionAPI or "
                                                        "NewtonSDFCollisionAPI: hydro uses its triangles "
                                                        "(physics:approximation aside)"))
    elif mesh_api:
        out.append(_finding("NEWTON.COL.001", path, f"NewtonMeshCollisionAPI applies to a Mesh, not a "
                                                    f"{type_name or 'typeless prim'}: its attributes are ignored"))
    return out


def gravity_problem(direction, magnitude) -> str | None:
    """What makes a ``PhysicsScene``'s gravity unusable (None: nothing): ``physics:gravityDirection``
    not 3 finite numbers, ``physics:gravityMagnitude`` NaN or +inf (-inf is the schema's "earth
    gravity" sentinel). ``None`` values are unset (the schema's defaults)."""
    if direction is not None:
        try:
            d = [float(v) for v in direction]
        except (TypeError, ValueError):
            d = []
        if len(d) != 3 or not all(math.isfinite(v) for v in d):
            return (f"physics:gravityDirection must be 3 finite numbers ((0, 0, 0): down the up axis), got "
                    f"{_shown(direction)}")
    if magnitude is not None:
        m = float(magnitude) if _is_number(magnitude) else math.nan
        if math.isnan(m) or m == math.inf:
            return (f"physics:gravityMagnitude must be a finite number (or -inf: earth gravity), got "
                    f"{_shown(magnitude)}")
    return None


def gravity_findings(path: str, direction, magnitude) -> list:
    """HYDRO.GRV.001 for a ``PhysicsScene`` whose gravity cannot be used (:func:`gravity_problem`)."""
    problem = gravity_problem(direction, magnitude)
    return [] if problem is None else [_finding("HYDRO.GRV.001", path, problem)]


def stage_findings(*, meters_per_unit, kilograms_per_unit, path: str = "/") -> list[Finding]:
    """HYDRO.STG.001: the stage's units must be finite and > 0, within :data:`UNIT_RANGE`."""
    out = []
    lo, hi = UNIT_RANGE
    for name, v in (("metersPerUnit", meters_per_unit), ("kilogramsPerUnit", kilograms_per_unit)):
        if not (_finite_at_least(v, 0.0, strict=True) and lo <= v <= hi):
            out.append(_finding("HYDRO.STG.001", path, f"the stage's {name} must be a finite number > 0 (within "
                                                       f"{lo:g}..{hi:g}), got {_shown(v)}: every length (or mass) is "
                                                       f"multiplied by it"))
    return out


def transform_finding(path: str, attributes) -> Finding:
    """HYDRO.XFM.001 for a prim whose world transform is not finite; ``attributes`` the paths of the
    non-finite xformOp attributes found on it or its ancestors."""
    where = ", ".join(attributes) if attributes else "its transform (or an ancestor's)"
    return _finding("HYDRO.XFM.001", path, f"the world transform is not finite: {where} holds NaN or inf")


def _lengths(geometry):
    """(name, metres) of the sizes that define ``geometry``."""
    kind = geometry.kind_name
    if kind == "sphere":
        return [("radius", geometry.radius)]
    if kind == "box":
        return [("size", s) for s in geometry.size]
    if kind == "ellipsoid":
        return [("radius", s) for s in geometry.radii]
    if kind in ("capsule", "cylinder", "cone"):
        out = [("radius", geometry.radius)]
        return out + ([("height", geometry.height)] if geometry.height > 0 or kind != "capsule" else [])
    if kind in ("mesh", "convex_mesh"):
        lo, hi = geometry.local_aabb()
        return [("points (largest extent)", float(np.max(hi - lo)))]
    if kind == "heightfield":
        return [("extent along x (2 hx)", 2.0 * geometry.hx), ("extent along y (2 hy)", 2.0 * geometry.hy)]
    return []


def size_findings(path: str, geometry) -> list[Finding]:
    """HYDRO.GEO.002: every size of ``geometry`` (metres) within [MIN_LENGTH, MAX_LENGTH]."""
    for name, v in _lengths(geometry):
        if not MIN_LENGTH <= v <= MAX_LENGTH:
            return [_finding("HYDRO.GEO.002", path, f"{name} is {v:.6g} m, outside the {MIN_LENGTH:g}..{MAX_LENGTH:g} m "
                                                    f"hydro supports (check the stage's metersPerUnit and the prim's "
                                                    f"scale)")]
    return []


def sdf_budget_bytes() -> float:
    """Bytes one SDF may need while being built: ``HYDRO_SDF_BUDGET_GIB`` GiB, else the default."""
    text = os.environ.get("HYDRO_SDF_BUDGET_GIB")
    gib = DEFAULT_SDF_BUDGET_GIB
    if text:
        try:
            gib = float(text)
        except ValueError:
            raise ValueError(f"HYDRO_SDF_BUDGET_GIB must be a number of GiB, got {_shown(text)}") from None
    return gib * 2.0**30


def sdf_build_bytes(geometry, settings, extra_padding: float = 0.0):
    """(bytes, (nx, ny, nz)): an estimate of the memory building the SDF of ``geometry`` with
    ``settings`` needs at its peak (brick tables over the whole grid, the coarse grid, and the
    exact samples of the bricks near the surface) and the grid it would have."""
    lo, hi = geometry.local_aabb()
    _, h, res, _ = grid_layout(lo, hi, settings, extra_padding)
    nb = np.asarray(res, dtype=float) / BRICK
    bricks = float(np.prod(nb))
    coarse = float(np.prod(nb + 1))
    # NumPy floats throughout: a shape of 1e308 m overflows to inf here, never to OverflowError
    size = np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)
    brick = np.float64(BRICK * h)
    with np.errstate(over="ignore", invalid="ignore"):
        if geometry.kind_name in ("mesh", "convex_mesh"):
            v, f = geometry.vertices, geometry.faces
            area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum()
        else:
            area = 2.0 * (size[0] * size[1] + size[1] * size[2] + size[0] * size[2])
        band = settings.narrow_band_outer - settings.narrow_band_inner + 2.0 * math.sqrt(3.0) * brick
        band_bricks = min(bricks, float(area * band / brick**3 + area / brick**2))
        # bytes per brick of the grid, per coarse sample, per exact sample of a band brick (measured with
        # tracemalloc on spheres and boxes: within a factor 2 of the build's peak)
        need = float(96.0 * bricks + 72.0 * coarse + 729.0 * 80.0 * band_bricks)
    return (need if need == need else math.inf), tuple(int(r) for r in res)


def sdf_budget_findings(path: str, geometry, settings, extra_padding: float = 0.0, *, budget=None,
                        authored: dict | None = None) -> list[Finding]:
    """HYDRO.BUD.001 when the SDF of ``geometry`` would need more than ``budget`` bytes to build
    (default :func:`sdf_budget_bytes`); names the attribute that sizes the grid."""
    need, res = sdf_build_bytes(geometry, settings, extra_padding)
    limit = sdf_budget_bytes() if budget is None else float(budget)
    if need <= limit:
        return []
    authored = authored or {}
    if settings.target_voxel_size is not None and settings.target_voxel_size > 0:
        name = "newton:sdfTargetVoxelSize"
        value = authored.get(name, settings.target_voxel_size)
    else:
        name = "newton:sdfMaxResolution"
        value = settings.max_resolution
    return [_finding("HYDRO.BUD.001", path, f"{name} = {_shown(value)} makes this shape's SDF a {res[0]}x{res[1]}x{res[2]} "
                                            f"grid that needs about {_bytes(need)} to build, over hydro's budget of "
                                            f"{_bytes(limit)} (HYDRO_SDF_BUDGET_GIB): lower the resolution")]


def _bytes(n: float) -> str:
    for unit, scale in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def shape_values(attributes: dict, fallbacks: dict | None = None) -> dict:
    """A collider's ``newton:*`` values as USD resolves them: authored, else the schema's fallback
    (``fallbacks``, as read from the registered schema; :data:`SDF_COLLISION_DEFAULTS` and
    :data:`COLLISION_DEFAULTS` otherwise). Sentinels (-inf) are kept: :func:`resolve_sentinels`."""
    a = {**SDF_COLLISION_DEFAULTS, **COLLISION_DEFAULTS}
    if fallbacks:
        a.update({k: v for k, v in fallbacks.items() if k in a})
    a.update({k: v for k, v in attributes.items() if k in a})
    return {
        "hydroelastic": a["newton:hydroelasticEnabled"],
        "stiffness": a["newton:hydroelasticStiffness"],
        "max_resolution": a["newton:sdfMaxResolution"],
        "target_voxel_size": a["newton:sdfTargetVoxelSize"],
        "narrow_band_inner": a["newton:sdfNarrowBandInner"],
        "narrow_band_outer": a["newton:sdfNarrowBandOuter"],
        "padding": a["newton:sdfPadding"],
        "texture_format": a["newton:sdfTextureFormat"],
        "margin": a["newton:contactMargin"],
        "gap": a["newton:contactGap"],
    }


#: :func:`shape_values` key → attribute name.
VALUE_ATTRIBUTES = {"hydroelastic": "newton:hydroelasticEnabled", "stiffness": "newton:hydroelasticStiffness",
                    "max_resolution": "newton:sdfMaxResolution", "target_voxel_size": "newton:sdfTargetVoxelSize",
                    "narrow_band_inner": "newton:sdfNarrowBandInner", "narrow_band_outer": "newton:sdfNarrowBandOuter",
                    "padding": "newton:sdfPadding", "texture_format": "newton:sdfTextureFormat",
                    "margin": "newton:contactMargin", "gap": "newton:contactGap"}


def resolve_sentinels(values: dict) -> dict:
    """:func:`shape_values` with each -inf sentinel replaced by hydro's choice (:data:`ENGINE_DEFAULTS`)."""
    out = dict(values)
    for key, name in VALUE_ATTRIBUTES.items():
        if name in ENGINE_DEFAULTS and out[key] == -math.inf:
            out[key] = ENGINE_DEFAULTS[name]
    return out


def _can_pair(a: PrimRecord, b: PrimRecord) -> bool:
    if a.body is None and b.body is None:
        return False
    if a.body is not None and a.body == b.body:
        return False
    ea, eb = env_of(a.path), env_of(b.path)
    return ea is None or eb is None or ea == eb


def validate_records(records) -> list[Finding]:
    """Every finding for a list of :class:`PrimRecord` s, in record order, pair warnings last."""
    out = []
    colliders = []
    for r in records:
        out += r.findings
        if r.has(NEWTON_MASS_API):
            out += newton_mass_findings(r.path, xformable=r.xformable, attributes=r.attributes)
        else:
            stray = [k for k in NEWTON_MASS_ATTRIBUTES if k in r.attributes]
            if stray:
                out.append(_finding("HYDRO.SCH.001", r.path, f"{', '.join(stray)} authored without NewtonMassAPI "
                                                             f"applied: ignored (apply the schema)"))
        if r.has(MASS_API):
            out += physics_mass_findings(r.path, r.attributes)
        if r.has(NEWTON_MATERIAL_API):
            out += newton_material_findings(r.path, type_name=r.type_name, schemas=r.schemas)
        elif r.has(MATERIAL_API):
            stray = [k for k in MATERIAL_ATTRIBUTES if k in r.attributes]
            if stray:
                out.append(_finding("HYDRO.SCH.001", r.path, f"{', '.join(stray)} authored without NewtonMaterialAPI "
                                                             f"applied (hydro reads it anyway; apply the schema)"))
        if r.has(RIGID_BODY_API):
            for name in ("physics:velocity", "physics:angularVelocity"):
                v = r.attributes.get(name, (0.0, 0.0, 0.0))
                if not (isinstance(v, (list, tuple)) and len(v) == 3 and all(_is_number(x) and math.isfinite(x) for x in v)):
                    out.append(_finding("HYDRO.BOD.001", r.path, f"{name} must be 3 finite numbers, got {_shown(v)}"))
        if r.type_name.startswith("Physics") and r.type_name.endswith("Joint"):
            out.append(_finding("HYDRO.USD.001", r.path, f"{r.type_name}: hydro has no joints; the joint is ignored"))
        if not r.collider:
            continue
        out += collider_schema_findings(r.path, type_name=r.type_name, schemas=r.schemas, applied=r.applied)
        if r.geometry_error:
            out.append(_finding("HYDRO.GEO.001", r.path, r.geometry_error))
        values = shape_values(r.attributes, r.fallbacks)
        out += shape_findings(r.path, kind=r.geometry_kind or "", watertight_error=r.watertight_error,
                              sdf_collision=r.has(SDF_COLLISION_API), sentinels=True, **values)
        # the documented default (64) is a fine SDF source: only a different fallback (another
        # schema version) is worth a word; a grid too coarse for its shape warns when it is built
        if values["hydroelastic"] is True and not any(
                k in r.attributes for k in ("newton:sdfMaxResolution", "newton:sdfTargetVoxelSize")) and \
                values["max_resolution"] != SDF_COLLISION_DEFAULTS["newton:sdfMaxResolution"]:
            out.append(_finding("NEWTON.COL.002", r.path, "newton:hydroelasticEnabled is true but no SDF source "
                                                          "(newton:sdfMaxResolution or newton:sdfTargetVoxelSize) is "
                                                          f"authored: hydro uses the schema's newton:sdfMaxResolution "
                                                          f"= {_shown(values['max_resolution'])}, not the documented "
                                                          f"{SDF_COLLISION_DEFAULTS['newton:sdfMaxResolution']}",
                                WARNING))
        if not r.has(SDF_COLLISION_API):
            stray = sorted(k for k in r.attributes if k in SDF_COLLISION_DEFAULTS)
            if stray:
                out.append(_finding("HYDRO.SCH.001", r.path,
                                    f"{', '.join(stray)} authored without NewtonSDFCollisionAPI applied "
                                    f"(hydro reads it anyway; apply the schema)"))
        if not r.has(NEWTON_COLLISION_API):
            stray = sorted(k for k in r.attributes if k in COLLISION_DEFAULTS)
            if stray:
                out.append(_finding("HYDRO.SCH.001", r.path,
                                    f"{', '.join(stray)} authored without NewtonCollisionAPI applied "
                                    f"(hydro reads it anyway; apply the schema)"))
        colliders.append((r, values))
    hydro = [(r, v) for r, v in colliders if v["hydroelastic"] is True]
    for r, _ in hydro:
        if not any(o is not r and _can_pair(r, o) for o, _ in hydro):
            out.append(_finding("HYDRO.HYD.003", r.path,
                                "newton:hydroelasticEnabled is true, but no shape it can touch is hydroelastic (both "
                                "shapes of a pair must enable it): it will never produce a hydroelastic contact"))
    return out
