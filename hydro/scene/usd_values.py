"""What the Newton and UsdPhysics schemas' values mean to hydro, on plain data (no ``pxr`` here).

:mod:`hydro.scene.usd_io` reads values through the registered schemas (authored, else the
schema's fallback) in the stage's units; this module turns them into hydro's: SI units by each
attribute's declared dimension (:func:`to_si`), a collider's contact material
(:func:`shape_material`), the collider a ``physics:approximation`` asks for
(:func:`approximate_mesh`), UsdPhysics collision groups with their merge groups
(:func:`merge_collision_groups`) and the shapes a filtered pair names (:func:`filter_targets`).
The rules are docs/usd.md's.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import shown

from ..geometry import Box, ConvexMesh, Mesh, Sphere
from ..transforms import pose_compose
from .material import ShapeMaterial
from .paths import is_under

__all__ = ["DISTANCE_ATTRIBUTES", "si_scale", "to_si", "shape_material", "approximate_mesh",
           "merge_collision_groups", "filter_targets"]

#: ``newton:*`` attributes whose schema unit is a distance (stage units, × metersPerUnit).
DISTANCE_ATTRIBUTES = ("newton:contactMargin", "newton:contactGap", "newton:sdfTargetVoxelSize",
                       "newton:sdfNarrowBandInner", "newton:sdfNarrowBandOuter", "newton:sdfPadding",
                       "newton:shellThickness", "newton:torsionalFriction", "newton:rollingFriction",
                       "newton:contactAdhesion")


def si_scale(name: str, mpu: float, kpu: float) -> float:
    """The factor taking attribute ``name`` from stage units to SI, from the unit the schema
    declares: distance × mpu; ``newton:hydroelasticStiffness`` (force / distance³) × kpu/mpu²;
    ``newton:contactStiffness`` (force / distance), ``newton:contactDamping`` and
    ``newton:contactFrictionGain`` (force · time / distance) × kpu; ``physics:density`` × kpu/mpu³;
    dimensionless attributes × 1."""
    if name in DISTANCE_ATTRIBUTES:
        return mpu
    if name == "newton:hydroelasticStiffness":
        return kpu / mpu**2
    if name in ("newton:contactStiffness", "newton:contactDamping", "newton:contactFrictionGain"):
        return kpu
    if name == "physics:density":
        return kpu / mpu**3
    return 1.0


def to_si(name: str, value, mpu: float, kpu: float):
    """``value`` of attribute ``name`` in SI (:func:`si_scale`); a non-number (a bad value for the
    validator) and the -inf sentinel pass unchanged."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == -math.inf:
        return value
    scale = si_scale(name, mpu, kpu)
    return float(value) * scale if scale != 1.0 else value


def shape_material(values: dict, *, mpu: float, kpu: float):
    """(ShapeMaterial, density kg/m³ or None) of a bound physics material from its resolved
    ``physics:*`` and ``newton:*`` values (stage units; -inf: the engine's default). Raises
    ``ValueError`` naming the attribute for a value hydro cannot use."""
    def si(name):
        return to_si(name, values.get(name, -math.inf), mpu, kpu)

    fields = {"static_friction": "physics:staticFriction", "dynamic_friction": "physics:dynamicFriction",
              "restitution": "physics:restitution", "torsional_friction": "newton:torsionalFriction",
              "rolling_friction": "newton:rollingFriction", "contact_stiffness": "newton:contactStiffness",
              "contact_damping": "newton:contactDamping", "friction_gain": "newton:contactFrictionGain",
              "adhesion": "newton:contactAdhesion"}
    kwargs = {}
    for key, name in fields.items():
        v = si(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{name} must be a number, got {shown(v)}")
        if v != -math.inf and (not math.isfinite(v) or v < 0 or (key == "contact_stiffness" and v == 0)):
            raise ValueError(f"{name} must be a finite number {'> 0' if key == 'contact_stiffness' else '>= 0'} "
                             f"(or -inf: the engine's default), got {shown(values.get(name))}")
        kwargs[key] = v
    density = si("physics:density")
    ok = isinstance(density, (int, float)) and not isinstance(density, bool) and math.isfinite(density)
    return ShapeMaterial(**kwargs), (float(density) if ok and density > 0 else None)


def _is_convex(mesh: Mesh) -> bool:
    """Whether the closed mesh is convex: every vertex on or behind every face's plane."""
    try:
        mesh.check_watertight()
    except ValueError:
        return False
    v, f = mesh.vertices, mesh.faces
    a, b, c = (v[f[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    length = np.linalg.norm(n, axis=1)
    if np.any(length <= 0.0) or len(np.unique(f)) != len(v):
        return False
    n /= length[:, None]
    d = np.einsum("ij,ij->i", n, a)
    tol = 1e-6 * float(np.max(v.max(axis=0) - v.min(axis=0)))  # points stored as 32-bit floats
    return bool(np.all(v @ n.T <= d + tol))


def approximate_mesh(mesh: Mesh, pose, approximation: str, max_hull_vertices: int = -1):
    """(geometry, pose) of a mesh collider with ``physics:approximation``: ``convexHull`` a
    :class:`~hydro.geometry.ConvexMesh` of at most ``max_hull_vertices`` vertices (−1: all; a mesh
    that already is a closed convex hull is kept as authored), ``boundingSphere`` the sphere about
    its bounding box's centre through its farthest vertex, ``boundingCube`` its bounding box (in
    the mesh's frame); anything else the mesh itself. ``ValueError`` when the hull cannot be built."""
    if approximation == "convexHull":
        if (max_hull_vertices < 0 or len(mesh.vertices) <= max_hull_vertices) and _is_convex(mesh):
            return ConvexMesh(mesh.vertices, mesh.faces, name=f"convex hull of {mesh.name}"), pose
        return mesh.convex_hull(max_hull_vertices), pose
    if approximation in ("boundingSphere", "boundingCube"):
        lo, hi = mesh.local_aabb()
        centre = 0.5 * (lo + hi)
        shifted = pose_compose(np.asarray(pose, dtype=float), np.concatenate([centre, [0.0, 0.0, 0.0, 1.0]]))
        if approximation == "boundingSphere":
            return Sphere(float(np.linalg.norm(mesh.vertices - centre, axis=1).max())), shifted
        return Box(tuple(float(x) for x in hi - lo)), shifted
    return mesh, pose


def merge_collision_groups(groups):
    """UsdPhysics collision groups as builder groups.

    ``groups``: (path, filtered group paths, invert, merge group name or "") per
    ``PhysicsCollisionGroup``. Groups with the same non-empty merge name act as one group with the
    colliders and filters of all (named by the merge name; its ``invert`` is that of any member).
    Returns (name of each group path, [(name, filtered names, invert)]); filters naming a path that
    is not a group are dropped (the reader reports them).
    """
    name_of = {path: (merge or path) for path, _, _, merge in groups}
    merged = {}
    for path, filtered, invert, _ in groups:
        name = name_of[path]
        names, inv = merged.get(name, (set(), False))
        names |= {name_of[f] for f in filtered if f in name_of}
        merged[name] = (names, inv or bool(invert))
    return name_of, [(name, tuple(sorted(f)), inv) for name, (f, inv) in merged.items()]


def filter_targets(path: str, shape_body: dict) -> list:
    """The shape paths a filtered-pair target ``path`` stands for (``shape_body``: each shape's path
    → its body's path or None): a body prim is all of its body's shapes, a shape prim that shape,
    any other prim every shape under it (an articulation, an asset's root); [] when it holds none."""
    if path in shape_body.values():
        return [s for s, b in shape_body.items() if b == path]
    if path in shape_body:
        return [path]
    return [s for s in shape_body if is_under(s, path)]
