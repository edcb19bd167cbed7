"""Mass properties of bodies, from their shapes and what the scene authors.

A body's mass, centre of mass and inertia are computed from its shapes (planes and
heightfields carry none), each shape with its own density, else its body's, else
:data:`DEFAULT_DENSITY` (1000 kg/m³, water), combined with the parallel-axis theorem. An
explicit ``mass`` rescales the computed inertia (same distribution); an explicit ``com``
moves the centre of mass (the inertia is carried to it by the parallel-axis theorem); an
explicit ``inertia`` replaces the tensor. Kinematic bodies have zero inverse mass and
inertia.

A shape is *solid* (its whole volume carries the density) or a *shell* of a given wall
thickness t (``newton:massModel = "shell"``, ``newton:shellThickness``): the density fills only
the wall between its surface and the surface moved inward by t, so the shell's mass, centre of
mass and inertia are those of the solid minus those of the inner cavity (:func:`shell_properties`):

| shape | inner cavity | |
|---|---|---|
| sphere R | sphere R − t | exact |
| box (a, b, c) | box (a − 2t, b − 2t, c − 2t) | exact |
| capsule (r, h) | capsule (r − t, h) | exact |
| cylinder (r, h) | cylinder (r − t, h − 2t) | exact |
| cone (r, h) | the cone whose faces lie t inside (same apex angle) | exact |
| ellipsoid, mesh | the triangle mesh moved inward by t (each vertex by the least-squares | |
| | displacement that moves each of its faces' planes by t) | see below |

For a mesh the inner surface is exact wherever at most three distinct face planes meet at a vertex
(boxes and other blocky meshes) and approximates the true offset to second order in t on smooth
meshes; an ellipsoid is tessellated (:data:`ELLIPSOID_SUBDIVISIONS`) and treated as a mesh. A wall
at least as thick as the shape is deep leaves no cavity: the shape is solid. ``-inf`` (the
schema's "the solver chooses") is :data:`DEFAULT_SHELL_THICKNESS`.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Sphere
from ..transforms import quat_to_matrix
from ..errors import shown

__all__ = ["DEFAULT_DENSITY", "DEFAULT_SHELL_THICKNESS", "mass_properties", "body_mass_properties",
           "inverse_mass_properties", "check_inertia", "shell_properties", "solid_properties",
           "shell_thickness_or_default"]

#: kg/m³ used when neither a shape nor its body gives a density (water).
DEFAULT_DENSITY = 1000.0
#: m, the wall of a shell whose ``newton:shellThickness`` is the schema's -inf ("the solver chooses").
DEFAULT_SHELL_THICKNESS = 0.001
#: Subdivisions of the icosphere an ellipsoid shell is computed on (10 242 vertices; the
#: tessellation's own volume error is below 1e-3).
ELLIPSOID_SUBDIVISIONS = 5


def check_inertia(name: str, v) -> np.ndarray:
    """An authored inertia tensor (3×3 about the COM, or 3 diagonal values) as a symmetric,
    positive semi-definite 3×3 array; ``ValueError`` naming ``name`` otherwise."""
    a = np.asarray(v, dtype=float)
    if a.shape == (3,):
        a = np.diag(a)
    if a.shape != (3, 3) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a finite 3x3 tensor or 3 diagonal values, got shape {a.shape}")
    if not np.allclose(a, a.T, rtol=1e-9, atol=1e-15):
        raise ValueError(f"{name} must be symmetric")
    moments = np.linalg.eigvalsh(a)
    if moments.min() < -1e-12 * max(1.0, abs(a).max()):
        raise ValueError(f"{name} must be positive semi-definite")
    # every principal moment is at most the sum of the other two (I_x + I_y = ∫(x²+y²+2z²) dm >= I_z):
    # no mass distribution has moments that break it, and the solver's rotation would be unphysical
    lo, mid, hi = moments
    if hi > (lo + mid) * (1.0 + 1e-6) + 1e-15 * max(1.0, abs(a).max()):  # 1e-6: values stored as float32
        shown = ", ".join(f"{x:.9g}" for x in moments)
        raise ValueError(f"{name}: principal moments ({shown}) break the triangle inequality (each must be at most "
                         f"the sum of the other two: {hi:.9g} > {lo:.9g} + {mid:.9g}); no body has them")
    return a


def shell_thickness_or_default(thickness) -> float:
    """A shell's wall thickness (m): ``thickness`` when finite and > 0, the default for the schema's
    ``-inf`` sentinel (or None); ``ValueError`` otherwise."""
    if thickness is None or thickness == -math.inf:
        return DEFAULT_SHELL_THICKNESS
    t = float(thickness)
    if not math.isfinite(t) or t <= 0.0:
        raise ValueError(f"shell thickness must be a finite number > 0 (m) or -inf, got {shown(thickness)}")
    return t


# ------------------------------------------------------------------------------------------------
# Solid and shell properties of one shape (unit density, shape frame)


def _parallel(d: np.ndarray) -> np.ndarray:
    """d·d I − d dᵀ: the parallel-axis term per unit mass for an offset d."""
    return float(d @ d) * np.eye(3) - np.outer(d, d)


def solid_properties(geometry):
    """(volume, centre of mass (3,), unit-density inertia about it (3×3)) of a solid shape."""
    return float(geometry.volume()), np.asarray(geometry.center_of_mass(), dtype=float), \
        np.asarray(geometry.unit_inertia(), dtype=float)


def _difference(outer, inner):
    """Properties of ``outer`` minus ``inner`` (both (V, c, J), J about c, unit density)."""
    vo, co, jo = outer
    vi, ci, ji = inner
    v = vo - vi
    c = (vo * co - vi * ci) / v
    j = (jo + vo * _parallel(co - c)) - (ji + vi * _parallel(ci - c))
    return v, c, j


def _mesh_solid(vertices, faces):
    """(V, c, J) of a closed triangle mesh by its signed volume integrals (unit density)."""
    import trimesh

    tm = trimesh.Trimesh(vertices, faces, process=False)
    tm.density = 1.0
    return float(tm.volume), np.asarray(tm.center_mass, dtype=float), np.asarray(tm.moment_inertia, dtype=float)


def inward_offset(vertices: np.ndarray, faces: np.ndarray, thickness: float) -> np.ndarray:
    """The vertices of a closed, outward-wound triangle mesh moved inward by ``thickness``: each by
    the least-squares displacement d with n_f · d = −thickness for the unit normals n_f of its faces
    (the minimum-norm one where they do not fix d, e.g. on a flat patch)."""
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64)
    a, b, c = (v[f[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    length = np.linalg.norm(n, axis=1)
    keep = length > 0.0
    n = n[keep] / length[keep, None]
    fk = f[keep]
    normal_sum = np.zeros((len(v), 3, 3))
    rhs = np.zeros((len(v), 3))
    outer = np.einsum("fi,fj->fij", n, n)
    for k in range(3):
        np.add.at(normal_sum, fk[:, k], outer)
        np.add.at(rhs, fk[:, k], n)
    # pseudo-inverse per vertex, dropping directions the face planes do not constrain
    w, q = np.linalg.eigh(normal_sum)
    cutoff = 1e-6 * np.maximum(w[:, -1:], 1e-300)
    inv_w = np.where(w > cutoff, 1.0 / np.where(w > cutoff, w, 1.0), 0.0)
    d = np.einsum("vij,vj,vkj,vk->vi", q, inv_w, q, rhs)
    return v - thickness * d


def _mesh_shell(vertices, faces, thickness):
    outer = _mesh_solid(vertices, faces)
    inner_vertices = inward_offset(vertices, faces, thickness)
    # the cavity must keep every face's orientation and a positive volume, else the wall fills the shape
    f = np.asarray(faces, dtype=np.int64)

    def normals(v):
        a, b, c = (v[f[:, k]] for k in range(3))
        return np.cross(b - a, c - a)

    if np.any(np.einsum("ij,ij->i", normals(np.asarray(vertices, dtype=float)), normals(inner_vertices)) <= 0.0):
        return outer
    inner = _mesh_solid(inner_vertices, faces)
    if not 0.0 < inner[0] < outer[0]:
        return outer
    return _difference(outer, inner)


def _ellipsoid_mesh(radii):
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=ELLIPSOID_SUBDIVISIONS, radius=1.0)
    return np.asarray(sphere.vertices) * np.asarray(radii, dtype=float), np.asarray(sphere.faces)


def shell_properties(geometry, thickness: float):
    """(volume, centre of mass (3,), unit-density inertia about it (3×3)) of ``geometry`` as a shell
    whose wall is ``thickness`` (m) deep (the module docstring's table); a wall at least as deep
    as the shape gives the solid's properties."""
    t = float(thickness)
    if not math.isfinite(t) or t <= 0.0:
        raise ValueError(f"shell thickness must be a finite number > 0 (m), got {shown(thickness)}")
    solid = solid_properties(geometry)
    g = geometry
    if isinstance(g, Sphere):
        inner = Sphere(g.radius - t) if g.radius > t else None
    elif isinstance(g, Box):
        inner = Box(tuple(s - 2.0 * t for s in g.size)) if min(g.size) > 2.0 * t else None
    elif isinstance(g, Capsule):
        inner = Capsule(g.radius - t, g.height) if g.radius > t else None
    elif isinstance(g, Cylinder):
        inner = Cylinder(g.radius - t, g.height - 2.0 * t) if g.radius > t and g.height > 2.0 * t else None
    elif isinstance(g, Cone):
        sin_half = g.radius / math.hypot(g.radius, g.height)  # sine of the half angle at the apex
        h = g.height - t - t / sin_half
        if h <= 0.0:
            return solid
        cavity = Cone(h * g.radius / g.height, h)
        centre = 0.5 * (t - t / sin_half)  # middle of the cavity's axial extent, in the cone's frame
        inner_props = solid_properties(cavity)
        return _difference(solid, (inner_props[0], inner_props[1] + [0.0, 0.0, centre], inner_props[2]))
    elif isinstance(g, Ellipsoid):
        return _mesh_shell(*_ellipsoid_mesh(g.radii), t)
    elif isinstance(g, Mesh):  # meshes and convex hulls
        return _mesh_shell(g.vertices, g.faces, t)
    else:
        raise ValueError(f"a {g.kind_name} has no volume, so no shell mass")
    if inner is None:
        return solid
    return _difference(solid, solid_properties(inner))


# ------------------------------------------------------------------------------------------------
# Bodies


def mass_properties(shapes, *, body_density=None, mass=None, com=None, inertia=None):
    """(mass, com, inertia about the com) of shapes given as ``(geometry, local_pose, density)`` or
    ``(geometry, local_pose, density, shell_thickness)`` (None: solid; m: a shell with that wall).

    The rules of the module docstring: per-shape density else ``body_density`` else
    :data:`DEFAULT_DENSITY`; explicit ``mass`` rescales, ``com`` shifts, ``inertia`` replaces.
    """
    m_total = 0.0
    first = np.zeros(3)
    parts = []
    for item in shapes:
        geometry, pose, density = item[:3]
        shell = item[3] if len(item) > 3 else None
        if not geometry.volumetric:
            continue
        rho = density if density is not None else (body_density if body_density is not None else DEFAULT_DENSITY)
        volume, c_local, unit = solid_properties(geometry) if shell is None else shell_properties(geometry, shell)
        m = rho * volume
        rot = quat_to_matrix(pose[3:])
        c = pose[:3] + rot @ c_local
        i_c = rho * rot @ unit @ rot.T
        parts.append((m, c, i_c))
        m_total += m
        first += m * c
    c_total = first / m_total if m_total > 0 else np.zeros(3)
    i_total = np.zeros((3, 3))
    for m, c, i_c in parts:
        d = c - c_total
        i_total += i_c + m * (d @ d * np.eye(3) - np.outer(d, d))
    if mass is not None:
        if m_total > 0:
            i_total *= mass / m_total
        m_total = mass
    if com is not None:
        d = com - c_total
        i_total = i_total + m_total * (d @ d * np.eye(3) - np.outer(d, d))
        c_total = com
    if inertia is not None:
        i_total = inertia
    return float(m_total), np.asarray(c_total, dtype=float), np.asarray(i_total, dtype=float)


def body_mass_properties(path: str, shapes, *, density, mass, com, inertia, kinematic: bool):
    """:func:`mass_properties` of body ``path``, refusing a dynamic body without mass or with a
    singular inertia (``ValueError`` saying what to give)."""
    m, c, i = mass_properties(shapes, body_density=density, mass=mass, com=com, inertia=inertia)
    if not kinematic:
        if m <= 0:
            raise ValueError(f"body {path} has no mass: give it a volumetric shape, or a mass and an inertia")
        if np.linalg.eigvalsh(i).min() <= 0:
            raise ValueError(f"body {path} has a singular inertia tensor {i.tolist()}: give a positive definite inertia")
    return m, c, i


def inverse_mass_properties(mass, inertia, kinematic):
    """(inverse masses (B,), inverse inertias (B,3,3)): zero for kinematic and massless bodies."""
    B = len(mass)
    inv_mass = np.zeros(B)
    inv_inertia = np.zeros((B, 3, 3))
    for i in range(B):
        if not kinematic[i] and mass[i] > 0:
            inv_mass[i] = 1.0 / mass[i]
            inv_inertia[i] = np.linalg.inv(inertia[i])
    return inv_mass, inv_inertia
