"""Runtime configuration (not stored in USD): ``NewtonConfig`` ⊃ ``CollisionConfig`` ⊃
``HydroelasticConfig``, applied with :func:`configure_newton` after loading a stage and before
simulating, so code written for the reference documentation runs as it reads::

    configure_newton(NewtonConfig(collision_cfg=CollisionConfig(hydroelastic=HydroelasticConfig(
        enabled=True, reduce_contacts=True))))

Every dataclass is frozen and validated when it is made: a bad value raises ``ValueError``
naming the field and the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from ..errors import shown

INTERFACES = ("continuous", "switched")
OVERFLOW_POLICIES = ("raise", "warn", "ignore")


def _check_capacity(name: str, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be None (automatic) or a positive integer, got {shown(value)}")


@dataclass(frozen=True)
class HydroelasticConfig:
    """Pipeline-wide options of the hydroelastic path."""

    enabled: bool = True
    """Run the hydroelastic pipeline for pairs of hydroelastic shapes."""
    reduce_contacts: bool = True
    """Replace each pair's patch triangles by a few contacts that keep force and torque."""
    mc_edge_clamp_min: float = 0.02
    """Marching-cubes edge crossings are clamped to [c, 1 − c] of the edge; 0 disables the clamp."""
    interface: str = "continuous"
    """``"continuous"``: f = kA·φA − kB·φB everywhere; ``"switched"``: normalised inside the
    overlap and φA − φB outside it (kept for parity studies)."""
    pair_capacity: int | None = None
    """Most candidate shape pairs per call (None: sized from the shapes)."""
    cell_capacity: int | None = None
    """Most octree cells kept at any refinement level (None: sized from the shapes' bricks)."""
    block_capacity: int | None = None
    """Most blocks of 2×2×2 voxels kept for marching cubes (None: sized from the shapes' bricks)."""
    contact_capacity: int | None = None
    """Most patch triangles (unreduced contacts) per call (None: sized from the shapes)."""
    max_contacts_per_pair: int = 32
    """Budget of contacts per pair after reduction."""
    reduced_contact_capacity: int | None = None
    """Most contacts after reduction, all pairs together (None: pairs × budget)."""
    overflow: str = "warn"
    """What a full buffer does: ``"raise"`` an error, ``"warn"``, or ``"ignore"``; the
    overflow is always counted and reported with the setting to raise."""
    deep_overlap_fallback: bool = True
    """Give a pair in deep overlap (one shape sunk into the other past what the patch resolves)
    a fallback contact along the SDF gradient and warn (hydro/contact/deep_overlap.py)."""
    exact_primitives: bool = True
    """Where the patch is built (marching-cubes samples, vertices, pressures), evaluate a primitive's
    exact signed distance instead of interpolating its stored grid, and settle each vertex on the
    true interface. ``False`` reproduces the grid-only pipeline for primitives."""
    exact_meshes: bool = True
    """Likewise for triangle meshes: their exact signed distance (the nearest of the triangles listed
    for the point's cell when the SDF was built, hydro/sdf/mesh_field.py) near the surface, instead of
    the trilinear interpolant, which over-estimates φ at the polyhedron's edges and vertices (−2.5 %
    of force on two icospheres at 64³). ``False`` keeps the interpolated mesh fields."""

    flat_polygons: bool = True
    """Where both fields are affine pieces — boxes and convex meshes without contact margins,
    evaluated exactly — build the patch as a few exact polygons (hydro/contact/polytope.py), and
    for a cylinder's or cone's caps on them integrate the caps and the rim band exactly
    around its axis (hydro/contact/axial.py), instead of marching cubes: exact, and at a cost that
    does not grow with the patch."""
    polygon_cells: int = 6
    """Polygons are cut into triangles about the smaller shape's shortest edge / this (a face:
    ~2·polygon_cells² triangles, before reduction; the axial route: 4·polygon_cells panels around
    the axis, each cut radially likewise): exact either way; spread over the face,
    the contacts resist tilting in a solver that linearises them. 1 to 64."""

    def __post_init__(self):
        for name in ("enabled", "reduce_contacts", "deep_overlap_fallback", "exact_primitives", "exact_meshes",
                     "flat_polygons"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"HydroelasticConfig.{name} must be True or False, got {shown(getattr(self, name))}")
        n = self.polygon_cells
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 64:
            raise ValueError(f"HydroelasticConfig.polygon_cells must be an integer in [1, 64], got {shown(n)}")
        c = self.mc_edge_clamp_min
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or not 0.0 <= c < 0.5:
            raise ValueError(f"HydroelasticConfig.mc_edge_clamp_min must be a number in [0, 0.5), got {shown(c)}")
        if self.interface not in INTERFACES:
            raise ValueError(f"HydroelasticConfig.interface must be one of {INTERFACES}, got {shown(self.interface)}")
        for name in ("pair_capacity", "cell_capacity", "block_capacity", "contact_capacity",
                     "reduced_contact_capacity"):
            _check_capacity(f"HydroelasticConfig.{name}", getattr(self, name))
        m = self.max_contacts_per_pair
        if isinstance(m, bool) or not isinstance(m, int) or m < 8:
            raise ValueError(f"HydroelasticConfig.max_contacts_per_pair must be an integer >= 8, got {shown(m)}")
        if self.overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"HydroelasticConfig.overflow must be one of {OVERFLOW_POLICIES}, got {shown(self.overflow)}")


def exact_code(cfg) -> int:
    """The ``exact`` argument of pair setup: bit 0 ``exact_primitives``, bit 1 ``exact_meshes``."""
    return int(cfg.exact_primitives) | (2 if cfg.exact_meshes else 0)


@dataclass(frozen=True)
class CollisionConfig:
    """Collision options: the default contact path (point contacts) here, hydroelastic contact in
    ``hydroelastic``. A pair takes the hydroelastic path iff both shapes enable it, both have
    SDFs and ``hydroelastic.enabled``; every other pair that may collide gets point contacts."""

    hydroelastic: HydroelasticConfig = field(default_factory=HydroelasticConfig)
    """Options of the hydroelastic pipeline."""
    rigid_contact_max: int | None = None
    """Most point contacts per call, all pairs together (None: automatic, grows as needed)."""
    overflow: str = "warn"
    """What a full point-contact buffer does: ``"raise"``, ``"warn"`` or ``"ignore"`` (the
    hydroelastic path follows ``hydroelastic.overflow``)."""

    def __post_init__(self):
        if not isinstance(self.hydroelastic, HydroelasticConfig):
            raise ValueError(f"CollisionConfig.hydroelastic must be a HydroelasticConfig, got {type(self.hydroelastic).__name__}")
        _check_capacity("CollisionConfig.rigid_contact_max", self.rigid_contact_max)
        if self.overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"CollisionConfig.overflow must be one of {OVERFLOW_POLICIES}, got {shown(self.overflow)}")


@dataclass(frozen=True)
class NewtonConfig:
    """Top-level runtime configuration."""

    collision_cfg: CollisionConfig = field(default_factory=CollisionConfig)
    """Collision options."""

    def __post_init__(self):
        if not isinstance(self.collision_cfg, CollisionConfig):
            raise ValueError(f"NewtonConfig.collision_cfg must be a CollisionConfig, got {type(self.collision_cfg).__name__}")


_active = NewtonConfig()


def configure_newton(config: NewtonConfig) -> NewtonConfig:
    """Make ``config`` the active configuration (reapply after (re)loading a stage)."""
    global _active
    if not isinstance(config, NewtonConfig):
        raise ValueError(f"configure_newton takes a NewtonConfig, got {type(config).__name__}")
    _active = config
    return config


def active_config() -> NewtonConfig:
    """The configuration set by the last :func:`configure_newton` (defaults before any)."""
    return _active


def hydroelastic_config(config=None) -> HydroelasticConfig:
    """The :class:`HydroelasticConfig` in ``config`` (a ``NewtonConfig`` or a
    ``HydroelasticConfig``; ``None``: the active configuration)."""
    if config is None:
        config = active_config()
    if isinstance(config, NewtonConfig):
        return config.collision_cfg.hydroelastic
    if isinstance(config, HydroelasticConfig):
        return config
    if isinstance(config, CollisionConfig):
        return config.hydroelastic
    raise ValueError(f"config must be a NewtonConfig, CollisionConfig or HydroelasticConfig, got "
                     f"{type(config).__name__}")


def collision_config(config=None) -> CollisionConfig:
    """The :class:`CollisionConfig` in ``config``: a ``NewtonConfig``, a ``CollisionConfig``, a
    ``HydroelasticConfig`` (with the default point-contact options) or ``None`` (the active
    configuration)."""
    if config is None:
        config = active_config()
    if isinstance(config, NewtonConfig):
        return config.collision_cfg
    if isinstance(config, CollisionConfig):
        return config
    if isinstance(config, HydroelasticConfig):
        return CollisionConfig(hydroelastic=config)
    raise ValueError(f"config must be a NewtonConfig, CollisionConfig or HydroelasticConfig, got "
                     f"{type(config).__name__}")


def field_docs(cls) -> dict[str, str]:
    """The docstring written under each field (used by tests and the docs)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body
    out = {}
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and i + 1 < len(body):
            nxt = body[i + 1]
            if isinstance(nxt, ast.Expr) and isinstance(getattr(nxt, "value", None), ast.Constant):
                out[node.target.id] = nxt.value.value
    missing = [f.name for f in fields(cls) if f.name not in out]
    if missing:
        raise AssertionError(f"{cls.__name__} fields without a docstring: {missing}")
    return out
