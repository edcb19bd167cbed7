"""Contact materials of shapes: friction and the default contact path's stiffness and damping.

A shape's material comes from the ``PhysicsMaterialAPI`` (static/dynamic friction, restitution)
and ``NewtonMaterialAPI`` (torsional and rolling friction, contact stiffness, damping, friction
gain, adhesion) of the material bound to it. ``None`` in a :class:`ShapeMaterial` means "the
engine's default" (the schema's ``-inf`` sentinel); :meth:`ShapeMaterial.resolved` replaces it by
hydro's documented default (the ``DEFAULT_*`` constants below). The model stores the resolved
values per shape in ``Model.shape_material`` (S, :data:`MATERIAL_COUNT`), columns ``MAT_*``.

Hydroelastic pairs take their normal stiffness from ``newton:hydroelasticStiffness`` instead;
friction applies to both contact paths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from ..errors import shown

__all__ = ["ShapeMaterial", "MATERIAL_FIELDS", "MATERIAL_COUNT", "DEFAULT_MATERIAL", "material_row"]

#: Coulomb friction of a shape without a bound material (PhysicsMaterialAPI has no fallback).
DEFAULT_FRICTION = 0.5
#: NewtonMaterialAPI fallbacks.
DEFAULT_TORSIONAL_FRICTION = 0.005
DEFAULT_ROLLING_FRICTION = 0.0001
#: N/m, point-contact stiffness when ``newton:contactStiffness`` is the engine default (-inf).
DEFAULT_CONTACT_STIFFNESS = 1.0e5
#: N·s/m, point-contact damping when ``newton:contactDamping`` is the engine default (-inf);
#: ``None`` after resolving means "derive it from the solver's damping ratio".
DEFAULT_CONTACT_DAMPING = None
#: Friction gain (``newton:contactFrictionGain``) when the engine default.
DEFAULT_FRICTION_GAIN = 1.0
#: N/m² adhesion (``newton:contactAdhesion``) when the engine default: none.
DEFAULT_ADHESION = 0.0


@dataclass(frozen=True)
class ShapeMaterial:
    """One shape's contact material. ``None``: the engine's default (see the module docstring).

    | field | units | source attribute |
    |---|---|---|
    | ``static_friction`` | | ``physics:staticFriction`` |
    | ``dynamic_friction`` | | ``physics:dynamicFriction`` |
    | ``restitution`` | | ``physics:restitution`` (kept; the penalty solver ignores it) |
    | ``torsional_friction`` | m | ``newton:torsionalFriction`` |
    | ``rolling_friction`` | m | ``newton:rollingFriction`` |
    | ``contact_stiffness`` | N/m | ``newton:contactStiffness`` (default contact path) |
    | ``contact_damping`` | N·s/m | ``newton:contactDamping`` (default contact path) |
    | ``friction_gain`` | | ``newton:contactFrictionGain`` |
    | ``adhesion`` | N/m² | ``newton:contactAdhesion`` |
    """

    static_friction: float | None = None
    dynamic_friction: float | None = None
    restitution: float | None = None
    torsional_friction: float | None = None
    rolling_friction: float | None = None
    contact_stiffness: float | None = None
    contact_damping: float | None = None
    friction_gain: float | None = None
    adhesion: float | None = None

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ValueError(f"ShapeMaterial.{f.name} must be a number or None, got {shown(v)}")
            v = float(v)
            if v == -math.inf:  # the schema's "engine default" sentinel
                object.__setattr__(self, f.name, None)
                continue
            if not math.isfinite(v) or v < 0.0:
                raise ValueError(f"ShapeMaterial.{f.name} must be a finite number >= 0 (or None / -inf for the "
                                 f"engine default), got {shown(getattr(self, f.name))}")
            if f.name == "contact_stiffness" and v == 0.0:
                raise ValueError("ShapeMaterial.contact_stiffness must be > 0 (or None for the engine default)")
            object.__setattr__(self, f.name, v)

    def resolved(self) -> "ShapeMaterial":
        """The same material with every ``None`` replaced by hydro's default (``contact_damping``
        stays ``None``: the solver derives it from its damping ratio)."""
        d = {"static_friction": DEFAULT_FRICTION, "dynamic_friction": DEFAULT_FRICTION, "restitution": 0.0,
             "torsional_friction": DEFAULT_TORSIONAL_FRICTION, "rolling_friction": DEFAULT_ROLLING_FRICTION,
             "contact_stiffness": DEFAULT_CONTACT_STIFFNESS, "contact_damping": DEFAULT_CONTACT_DAMPING,
             "friction_gain": DEFAULT_FRICTION_GAIN, "adhesion": DEFAULT_ADHESION}
        return ShapeMaterial(**{k: (v if getattr(self, k) is None else getattr(self, k)) for k, v in d.items()})


#: Column order of ``Model.shape_material``.
MATERIAL_FIELDS = tuple(f.name for f in fields(ShapeMaterial))
MATERIAL_COUNT = len(MATERIAL_FIELDS)
(MAT_STATIC_FRICTION, MAT_DYNAMIC_FRICTION, MAT_RESTITUTION, MAT_TORSIONAL_FRICTION, MAT_ROLLING_FRICTION,
 MAT_CONTACT_STIFFNESS, MAT_CONTACT_DAMPING, MAT_FRICTION_GAIN, MAT_ADHESION) = range(MATERIAL_COUNT)
DEFAULT_MATERIAL = ShapeMaterial().resolved()


def material_row(material: ShapeMaterial) -> np.ndarray:
    """The resolved material as a ``Model.shape_material`` row (float64); an unresolved damping
    (derive from the damping ratio) is stored as NaN."""
    m = material.resolved()
    return np.array([math.nan if getattr(m, k) is None else getattr(m, k) for k in MATERIAL_FIELDS], dtype=float)
