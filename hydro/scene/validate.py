"""Schema rules for scenes: findings with stable codes, on plain data (no ``pxr`` here).

:mod:`hydro.scene.usd_io` turns each relevant USD prim into a :class:`PrimRecord` (its path, type,
whether it is Xformable, its applied schema names and its *authored* attribute values as plain
Python values); :func:`validate_records` applies every rule and returns :class:`Finding` s.
:class:`~hydro.scene.model.ModelBuilder` applies the per-shape rules through :func:`shape_findings`,
so a scene made in Python and one read from USD are held to the same rules.

A finding prints as ``CODE SEVERITY PRIM_PATH: message``. The codes are stable:

| code | severity | rule |
|---|---|---|
| ``NEWTON.MAS.001`` | ERROR | NewtonMassAPI on a prim that is not Xformable; ``newton:inertia`` |
| | | authored non-empty but not exactly 6 finite values with a non-negative diagonal; |
| | | ``newton:massModel`` not ``solid``/``shell``; ``newton:shellThickness`` not finite |
| | | and > 0 (other than the −inf sentinel), or authored with the solid model |
| ``HYDRO.HYD.001`` | ERROR | hydroelastic enabled on a plane, a heightfield or a non-watertight mesh |
| ``HYDRO.HYD.002`` | ERROR | hydroelastic stiffness ≤ 0 or not finite (a WARNING when the shape |
| | | is not hydroelastic: the value is then never read) |
| ``HYDRO.HYD.003`` | WARNING | a hydroelastic shape none of whose possible partners is hydroelastic: |
| | | it will never produce a hydroelastic contact |
| ``HYDRO.SDF.001`` | ERROR | ``newton:sdfMaxResolution`` not a positive multiple of 8 |
| ``HYDRO.SDF.002`` | ERROR | narrow band inner ≥ 0 or outer ≤ 0 (or not finite) |
| ``HYDRO.SDF.003`` | ERROR | ``newton:sdfTextureFormat`` not ``uint8``, ``uint16`` or ``float32`` |
| ``HYDRO.SDF.004`` | ERROR | ``newton:sdfTargetVoxelSize`` not finite, ``newton:sdfPadding`` not finite or < 0 |
| ``HYDRO.SDF.005`` | ERROR | NewtonSDFCollisionAPI on a mesh that is not watertight (no SDF can be built) |
| ``HYDRO.CON.001`` | ERROR | ``newton:contactMargin`` or ``newton:contactGap`` negative or not finite |
| ``HYDRO.GEO.001`` | ERROR | a collider hydro cannot represent: unsupported prim type, bad size, |
| | | sheared transform, non-uniform scale across a capsule or a round cross-section |
| ``HYDRO.MAS.001`` | ERROR | ``physics:mass``/``physics:density`` negative or not finite, |
| | | ``physics:diagonalInertia`` negative or not finite, ``physics:centerOfMass`` not finite |
| | | (other than the unset sentinel −inf) |
| ``HYDRO.BOD.001`` | ERROR | ``physics:velocity`` or ``physics:angularVelocity`` not 3 finite numbers |
| ``HYDRO.MAS.002`` | WARNING | ``newton:massModel = "shell"``: hydro computes solid mass properties |
| ``HYDRO.SCH.001`` | WARNING | a ``newton:hydroelastic*``/``newton:sdf*`` attribute authored on a collider |
| | | without NewtonSDFCollisionAPI (hydro reads it anyway), or a Newton mass attribute |
| | | without NewtonMassAPI (hydro ignores it) |
| ``HYDRO.USD.001`` | WARNING | a physics joint: hydro has no joints, the prim is ignored |
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .paths import env_of

#: The env of a prim path (:func:`hydro.scene.paths.env_of`), under its old name.
env_of_path = env_of

ERROR = "ERROR"
WARNING = "WARNING"

#: Every code with its severity and a one-line summary (see the module docstring).
CODES = {
    "NEWTON.MAS.001": (ERROR, "NewtonMassAPI on a non-Xformable or invalid Newton mass attributes"),
    "HYDRO.HYD.001": (ERROR, "hydroelastic on a plane, heightfield or non-watertight mesh"),
    "HYDRO.HYD.002": (ERROR, "hydroelastic stiffness <= 0 or not finite"),
    "HYDRO.HYD.003": (WARNING, "hydroelastic shape without a hydroelastic partner"),
    "HYDRO.SDF.001": (ERROR, "sdfMaxResolution not a positive multiple of 8"),
    "HYDRO.SDF.002": (ERROR, "narrow band inner >= 0 or outer <= 0"),
    "HYDRO.SDF.003": (ERROR, "unknown SDF texture format"),
    "HYDRO.SDF.004": (ERROR, "sdfTargetVoxelSize or sdfPadding invalid"),
    "HYDRO.SDF.005": (ERROR, "SDF asked for on a non-watertight mesh"),
    "HYDRO.CON.001": (ERROR, "negative contact margin or gap"),
    "HYDRO.GEO.001": (ERROR, "collider geometry hydro cannot represent"),
    "HYDRO.MAS.001": (ERROR, "invalid physics mass properties"),
    "HYDRO.MAS.002": (WARNING, "shell mass model computed as solid"),
    "HYDRO.BOD.001": (ERROR, "non-finite body velocity"),
    "HYDRO.SCH.001": (WARNING, "Newton attribute without its schema applied"),
    "HYDRO.USD.001": (WARNING, "physics joint ignored"),
}

# --- the schema: attribute names and their defaults (contract, "USD that a scene may author") ---

#: NewtonSDFCollisionAPI attributes (its own) and their defaults when unauthored.
SDF_COLLISION_DEFAULTS = {
    "newton:hydroelasticEnabled": False,
    "newton:hydroelasticStiffness": 1e10,
    "newton:sdfMaxResolution": 64,
    "newton:sdfTargetVoxelSize": None,
    "newton:sdfNarrowBandInner": -0.1,
    "newton:sdfNarrowBandOuter": 0.1,
    "newton:sdfPadding": None,
    "newton:sdfTextureFormat": "uint16",
}
#: NewtonCollisionAPI attributes (inherited by NewtonSDFCollisionAPI). ``newton:contactGap``:
#: the engine default is 0 m.
COLLISION_DEFAULTS = {
    "newton:contactMargin": 0.0,
    "newton:contactGap": 0.0,
}
TEXTURE_FORMATS = ("uint8", "uint16", "float32")
MASS_MODELS = ("solid", "shell")
NEWTON_MASS_ATTRIBUTES = ("newton:inertia", "newton:massModel", "newton:shellThickness")

SDF_COLLISION_API = "NewtonSDFCollisionAPI"
COLLISION_APIS = ("PhysicsCollisionAPI", "NewtonCollisionAPI", SDF_COLLISION_API)
RIGID_BODY_API = "PhysicsRigidBodyAPI"
MASS_API = "PhysicsMassAPI"
NEWTON_MASS_API = "NewtonMassAPI"
ARTICULATION_ROOT_API = "PhysicsArticulationRootAPI"

#: Geometry kinds that can never be hydroelastic.
NON_VOLUMETRIC = ("plane", "heightfield")


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
    | ``schemas`` | applied API schema names, unregistered ones included |
    | ``attributes`` | authored ``physics:*``/``newton:*`` values: bool, int, float, str, tuples |
    |  | and lists (quaternions as (x, y, z, w)); unauthored attributes are absent |
    | ``collider`` | the prim is an enabled collider (a collision API applied) |
    | ``body`` | for a collider, the path of the rigid body it belongs to (None: static) |
    | ``geometry_kind`` | ``sphere``, ``box``, …, ``mesh``, ``plane``, ``heightfield`` (None: unknown) |
    | ``geometry_error`` | why the collider's geometry cannot be represented (None: it can) |
    | ``watertight_error`` | for a mesh, why it is not watertight (None: it is, or unchecked) |
    """

    path: str
    type_name: str = ""
    xformable: bool = True
    schemas: tuple = ()
    attributes: dict = field(default_factory=dict)
    collider: bool = False
    body: str | None = None
    geometry_kind: str | None = None
    geometry_error: str | None = None
    watertight_error: str | None = None


def has_errors(findings) -> bool:
    return any(f.severity == ERROR for f in findings)


def format_findings(findings) -> str:
    return "\n".join(str(f) for f in findings)


def _finding(code: str, path: str, message: str, severity: str | None = None) -> Finding:
    return Finding(code, severity or CODES[code][0], path, message)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ----------------------------------------------------------------------------------------------
# Rules on one shape's values (shared by the USD validator and the Python builder)


def shape_findings(path: str, *, kind: str, hydroelastic, stiffness, max_resolution=64,
                   target_voxel_size=None, narrow_band_inner=-0.1, narrow_band_outer=0.1,
                   padding=None, texture_format="uint16", margin=0.0, gap=0.0,
                   watertight_error: str | None = None, sdf_collision: bool = False) -> list[Finding]:
    """Findings of one collider's values (HYDRO.HYD.001/002, HYDRO.SDF.*, HYDRO.CON.001)."""
    out = []
    if sdf_collision and hydroelastic is not True and kind == "mesh" and watertight_error:
        out.append(_finding("HYDRO.SDF.005", path, f"NewtonSDFCollisionAPI asks for an SDF, but the mesh is not "
                                                   f"watertight ({watertight_error})"))
    if hydroelastic is True:
        if kind in NON_VOLUMETRIC:
            out.append(_finding("HYDRO.HYD.001", path,
                                f"newton:hydroelasticEnabled is true on a {kind}: planes, heightfields and "
                                f"non-watertight meshes cannot be hydroelastic"))
        elif kind == "mesh" and watertight_error:
            out.append(_finding("HYDRO.HYD.001", path,
                                f"newton:hydroelasticEnabled is true on a mesh that is not watertight "
                                f"({watertight_error}): planes, heightfields and non-watertight meshes cannot "
                                f"be hydroelastic"))
    elif not isinstance(hydroelastic, bool):
        out.append(_finding("HYDRO.HYD.001", path, f"newton:hydroelasticEnabled must be true or false, got {hydroelastic!r}"))
    if not (_is_number(stiffness) and math.isfinite(stiffness) and stiffness > 0):
        if hydroelastic is True:
            out.append(_finding("HYDRO.HYD.002", path,
                                f"newton:hydroelasticStiffness must be a finite number > 0 (N/m^3), got {stiffness!r}"))
        else:
            out.append(_finding("HYDRO.HYD.002", path,
                                f"newton:hydroelasticStiffness must be a finite number > 0 (N/m^3), got {stiffness!r} "
                                f"(ignored: the shape is not hydroelastic)", WARNING))
    r = max_resolution
    if not (_is_int(r) and r > 0 and r % 8 == 0):
        out.append(_finding("HYDRO.SDF.001", path, f"newton:sdfMaxResolution must be a positive multiple of 8, got {r!r}"))
    if not (_is_number(narrow_band_inner) and math.isfinite(narrow_band_inner) and narrow_band_inner < 0):
        out.append(_finding("HYDRO.SDF.002", path,
                            f"newton:sdfNarrowBandInner must be a finite number < 0 (m), got {narrow_band_inner!r}"))
    if not (_is_number(narrow_band_outer) and math.isfinite(narrow_band_outer) and narrow_band_outer > 0):
        out.append(_finding("HYDRO.SDF.002", path,
                            f"newton:sdfNarrowBandOuter must be a finite number > 0 (m), got {narrow_band_outer!r}"))
    if texture_format not in TEXTURE_FORMATS:
        out.append(_finding("HYDRO.SDF.003", path,
                            f"newton:sdfTextureFormat must be one of {', '.join(TEXTURE_FORMATS)}, got {texture_format!r}"))
    if target_voxel_size is not None and not (_is_number(target_voxel_size) and math.isfinite(target_voxel_size)):
        out.append(_finding("HYDRO.SDF.004", path,
                            f"newton:sdfTargetVoxelSize must be a finite number (m; > 0 to take effect), got {target_voxel_size!r}"))
    if padding is not None and not (_is_number(padding) and math.isfinite(padding) and padding >= 0):
        out.append(_finding("HYDRO.SDF.004", path, f"newton:sdfPadding must be a finite number >= 0 (m), got {padding!r}"))
    for name, v in (("newton:contactMargin", margin), ("newton:contactGap", gap)):
        if not (_is_number(v) and math.isfinite(v) and v >= 0):
            out.append(_finding("HYDRO.CON.001", path, f"{name} must be a finite number >= 0 (m), got {v!r}"))
    return out


def newton_mass_findings(path: str, *, xformable: bool, attributes: dict) -> list[Finding]:
    """NEWTON.MAS.001, exactly as the rule reads, for a prim with NewtonMassAPI applied."""
    out = []
    code = "NEWTON.MAS.001"
    if not xformable:
        out.append(_finding(code, path, "NewtonMassAPI must be applied on an Xformable (a rigid body or a collision-shape Gprim)"))
    if "newton:inertia" in attributes:
        inertia = attributes["newton:inertia"]
        if not isinstance(inertia, (list, tuple)):
            out.append(_finding(code, path, f"newton:inertia must be an array, got {inertia!r}"))
        elif len(inertia) != 0:
            if len(inertia) != 6:
                out.append(_finding(code, path, f"newton:inertia must be empty or contain exactly 6 elements "
                                                f"[Ixx, Iyy, Izz, Ixy, Ixz, Iyz], got {len(inertia)}"))
            elif not all(_is_number(v) and math.isfinite(v) for v in inertia):
                out.append(_finding(code, path, f"newton:inertia elements must be finite, got {list(inertia)}"))
            elif min(inertia[:3]) < 0:
                out.append(_finding(code, path, f"newton:inertia diagonal terms Ixx, Iyy, Izz must be non-negative, "
                                                f"got {list(inertia[:3])}"))
    model = attributes.get("newton:massModel")
    if "newton:massModel" in attributes and model not in MASS_MODELS:
        out.append(_finding(code, path, f"newton:massModel must be solid or shell, got {model!r}"))
    if "newton:shellThickness" in attributes:
        t = attributes["newton:shellThickness"]
        if not (_is_number(t) and ((math.isfinite(t) and t > 0) or t == -math.inf)):
            out.append(_finding(code, path, f"newton:shellThickness must be finite and > 0, or -inf (the solver "
                                            f"chooses), got {t!r}"))
        elif model != "shell":
            out.append(_finding(code, path, f"newton:shellThickness is only meaningful with newton:massModel = "
                                            f"\"shell\", but the mass model is {model or 'solid (default)'}"))
    if model == "shell":
        out.append(_finding("HYDRO.MAS.002", path, "newton:massModel is \"shell\": hydro computes solid mass "
                                                   "properties from the geometry"))
    return out


def physics_mass_findings(path: str, attributes: dict) -> list[Finding]:
    """HYDRO.MAS.001: authored ``physics:mass``, ``physics:density``, ``physics:diagonalInertia``."""
    out = []
    for name in ("physics:mass", "physics:density"):
        if name in attributes:
            v = attributes[name]
            if not (_is_number(v) and math.isfinite(v) and v >= 0):
                out.append(_finding("HYDRO.MAS.001", path, f"{name} must be a finite number >= 0, got {v!r}"))
    if "physics:centerOfMass" in attributes:
        v = attributes["physics:centerOfMass"]
        ok = isinstance(v, (list, tuple)) and len(v) == 3 and all(_is_number(x) for x in v) and (
            all(math.isfinite(x) for x in v) or all(x == -math.inf for x in v))
        if not ok:
            out.append(_finding("HYDRO.MAS.001", path, f"physics:centerOfMass must be 3 finite numbers "
                                                       f"(or -inf: unset), got {v!r}"))
    if "physics:diagonalInertia" in attributes:
        v = attributes["physics:diagonalInertia"]
        if not (isinstance(v, (list, tuple)) and len(v) == 3 and all(_is_number(x) and math.isfinite(x) and x >= 0 for x in v)):
            out.append(_finding("HYDRO.MAS.001", path, f"physics:diagonalInertia must be 3 finite numbers >= 0, got {v!r}"))
    return out


def shape_values(attributes: dict) -> dict:
    """The collider values the rules and the loader use: authored, or the schema default."""
    a = {**SDF_COLLISION_DEFAULTS, **COLLISION_DEFAULTS}
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
        if NEWTON_MASS_API in r.schemas:
            out += newton_mass_findings(r.path, xformable=r.xformable, attributes=r.attributes)
        else:
            stray = [k for k in NEWTON_MASS_ATTRIBUTES if k in r.attributes]
            if stray:
                out.append(_finding("HYDRO.SCH.001", r.path, f"{', '.join(stray)} authored without NewtonMassAPI "
                                                             f"applied: ignored (apply the schema)"))
        if MASS_API in r.schemas:
            out += physics_mass_findings(r.path, r.attributes)
        if RIGID_BODY_API in r.schemas:
            for name in ("physics:velocity", "physics:angularVelocity"):
                v = r.attributes.get(name, (0.0, 0.0, 0.0))
                if not (isinstance(v, (list, tuple)) and len(v) == 3 and all(_is_number(x) and math.isfinite(x) for x in v)):
                    out.append(_finding("HYDRO.BOD.001", r.path, f"{name} must be 3 finite numbers, got {v!r}"))
        if r.type_name.startswith("Physics") and r.type_name.endswith("Joint"):
            out.append(_finding("HYDRO.USD.001", r.path, f"{r.type_name}: hydro has no joints; the joint is ignored"))
        if not r.collider:
            continue
        if r.geometry_error:
            out.append(_finding("HYDRO.GEO.001", r.path, r.geometry_error))
        values = shape_values(r.attributes)
        out += shape_findings(r.path, kind=r.geometry_kind or "", watertight_error=r.watertight_error,
                              sdf_collision=SDF_COLLISION_API in r.schemas, **values)
        if SDF_COLLISION_API not in r.schemas:
            stray = [k for k in r.attributes if k in SDF_COLLISION_DEFAULTS]
            if stray:
                out.append(_finding("HYDRO.SCH.001", r.path,
                                    f"{', '.join(sorted(stray))} authored without NewtonSDFCollisionAPI applied "
                                    f"(hydro reads it anyway; apply the schema)"))
        colliders.append((r, values))
    hydro = [(r, v) for r, v in colliders if v["hydroelastic"] is True]
    for r, _ in hydro:
        if not any(o is not r and _can_pair(r, o) for o, _ in hydro):
            out.append(_finding("HYDRO.HYD.003", r.path,
                                "hydroelastic, but no shape it can touch is hydroelastic (both shapes of a pair "
                                "must enable it): it will never produce a hydroelastic contact"))
    return out
