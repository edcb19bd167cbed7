"""Mass properties of bodies, from their shapes and what the scene authors.

A body's mass, centre of mass and inertia are computed from its shapes (planes and
heightfields carry none), each shape with its own density, else its body's, else
:data:`DEFAULT_DENSITY` (1000 kg/m³, water), combined with the parallel-axis theorem. An
explicit ``mass`` rescales the computed inertia (same distribution); an explicit ``com``
moves the centre of mass (the inertia is carried to it by the parallel-axis theorem); an
explicit ``inertia`` replaces the tensor. Kinematic bodies have zero inverse mass and
inertia.
"""

from __future__ import annotations

import numpy as np

from ..transforms import quat_to_matrix

__all__ = ["DEFAULT_DENSITY", "mass_properties", "body_mass_properties", "inverse_mass_properties", "check_inertia"]

#: kg/m³ used when neither a shape nor its body gives a density (water).
DEFAULT_DENSITY = 1000.0


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
    if np.linalg.eigvalsh(a).min() < -1e-12 * max(1.0, abs(a).max()):
        raise ValueError(f"{name} must be positive semi-definite")
    return a


def mass_properties(shapes, *, body_density=None, mass=None, com=None, inertia=None):
    """(mass, com, inertia about the com) of shapes given as ``(geometry, local_pose, density)``.

    The rules of the module docstring: per-shape density else ``body_density`` else
    :data:`DEFAULT_DENSITY`; explicit ``mass`` rescales, ``com`` shifts, ``inertia`` replaces.
    """
    m_total = 0.0
    first = np.zeros(3)
    parts = []
    for geometry, pose, density in shapes:
        if not geometry.volumetric:
            continue
        rho = density if density is not None else (body_density if body_density is not None else DEFAULT_DENSITY)
        m = rho * geometry.volume()
        rot = quat_to_matrix(pose[3:])
        c = pose[:3] + rot @ geometry.center_of_mass()
        i_c = rho * rot @ geometry.unit_inertia() @ rot.T
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
