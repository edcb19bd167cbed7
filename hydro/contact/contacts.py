"""Stage 5 — one contact per patch triangle (the math; the kernel that calls it is stage 4's),
and the packed contact columns every stage after it reads and writes.

Given a patch triangle in B's frame with eA = φA − marginA and eB = φB − marginB at its three
vertices, :func:`triangle_contact` computes the contract's contact fields: centroid, unit
normal (from A toward B), the area inside the overlap (partial triangles scaled by the exact
fraction where the linear separation s = eA + eB is negative), depth = mean s, pressure
kB·(−δ) with δ the mean eB, force, stiffness c = area·k_eff, weight = area·(−δ), and whether
the triangle is speculative (all s >= 0, depth within the gap band).
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import device_fn
from .types import Contacts

# Columns of the packed contact buffers: contact_f (N, CF_COUNT) float32, contact_i (N, CI_COUNT) int32
CF_POINT = 0  # 3
CF_NORMAL = 3  # 3
CF_AREA = 6
CF_DEPTH = 7
CF_PRESSURE = 8
CF_FORCE = 9
CF_STIFFNESS = 10
CF_WEIGHT = 11
CF_COUNT = 12
CI_SHAPE_A = 0
CI_SHAPE_B = 1
CI_ENV = 2
CI_PAIR = 3
CI_SPECULATIVE = 4
CI_COUNT = 5
# Columns of the optional triangle buffer (one row per patch contact, same order)
TF_VERTICES = 0  # 9: the three vertices, world
TF_DEPTH = 9  # 3: eA + eB at each vertex
TF_PRESSURE = 12  # 3: kB·max(0, −eB) at each vertex
TF_COUNT = 15

#: Triangles with less area than this fraction of a voxel face are degenerate and skipped.
DEGENERATE_AREA = 1e-10


@device_fn
def inside_fraction(s0, s1, s2):
    """Fraction of a triangle's area where the linear interpolant of s is negative."""
    n_in = 0
    if s0 < 0.0:
        n_in += 1
    if s1 < 0.0:
        n_in += 1
    if s2 < 0.0:
        n_in += 1
    if n_in == 3:
        return 1.0
    if n_in == 0:
        return 0.0
    # the lone vertex: inside when n_in == 1, outside when n_in == 2
    lone_inside = n_in == 1
    if (s0 < 0.0) == lone_inside:
        a, b, c = s0, s1, s2
    elif (s1 < 0.0) == lone_inside:
        a, b, c = s1, s2, s0
    else:
        a, b, c = s2, s0, s1
    corner = (a * a) / ((a - b) * (a - c))
    return corner if lone_inside else 1.0 - corner


@device_fn
def _cross(x0, y0, z0, x1, y1, z1, x2, y2, z2):
    """(p1 − p0) × (p2 − p0): twice the area, along the triangle's normal."""
    ux = x1 - x0
    uy = y1 - y0
    uz = z1 - z0
    wx = x2 - x0
    wy = y2 - y0
    wz = z2 - z0
    return uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx


@device_fn
def triangle_is_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, s0, s1, s2, gap, voxel):
    """Whether a patch triangle yields a contact: not degenerate, and either partly inside the
    overlap (some vertex separation s < 0) or, wholly outside, with depth (mean s) in the gap band."""
    nx, ny, nz = _cross(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    min_area = DEGENERATE_AREA * voxel * voxel
    if 0.25 * (nx * nx + ny * ny + nz * nz) <= min_area * min_area:
        return False
    if s0 < 0.0 or s1 < 0.0 or s2 < 0.0:
        return True
    return (s0 + s1 + s2) / 3.0 <= gap


@device_fn
def triangle_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1, ea2, eb0, eb1, eb2, kb, keff):
    """Contact of one patch triangle (B frame) that :func:`triangle_is_contact` accepted. Returns
    (speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness, weight)."""
    nx, ny, nz = _cross(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    length = math.sqrt(nx * nx + ny * ny + nz * nz)
    area = 0.5 * length
    s0 = ea0 + eb0
    s1 = ea1 + eb1
    s2 = ea2 + eb2
    depth = (s0 + s1 + s2) / 3.0
    frac = inside_fraction(s0, s1, s2)
    inv = 1.0 / length
    cx = (x0 + x1 + x2) / 3.0
    cy = (y0 + y1 + y2) / 3.0
    cz = (z0 + z1 + z2) / 3.0
    delta = (eb0 + eb1 + eb2) / 3.0
    if frac <= 0.0:
        return (True, cx, cy, cz, nx * inv, ny * inv, nz * inv, 0.0, depth, 0.0, 0.0, 0.0, 0.0)
    area_in = area * frac
    pressure = max(0.0, -kb * delta)
    return (False, cx, cy, cz, nx * inv, ny * inv, nz * inv, area_in, depth, pressure, pressure * area_in,
            area_in * keff, area_in * (-delta))


@device_fn
def write_contact(out_f, out_i, o, px, py, pz, nx, ny, nz, area, depth, pressure, force, stiffness, weight,
                  sa, sb, env, pair, speculative):
    """Row ``o`` of the packed contact buffers."""
    out_f[o, CF_POINT] = px
    out_f[o, CF_POINT + 1] = py
    out_f[o, CF_POINT + 2] = pz
    out_f[o, CF_NORMAL] = nx
    out_f[o, CF_NORMAL + 1] = ny
    out_f[o, CF_NORMAL + 2] = nz
    out_f[o, CF_AREA] = area
    out_f[o, CF_DEPTH] = depth
    out_f[o, CF_PRESSURE] = pressure
    out_f[o, CF_FORCE] = force
    out_f[o, CF_STIFFNESS] = stiffness
    out_f[o, CF_WEIGHT] = weight
    out_i[o, CI_SHAPE_A] = sa
    out_i[o, CI_SHAPE_B] = sb
    out_i[o, CI_ENV] = env
    out_i[o, CI_PAIR] = pair
    out_i[o, CI_SPECULATIVE] = 1 if speculative else 0


# -- packing on the host --------------------------------------------------------------------------

# Contacts fields stored in one column each
_F_COLUMNS = (("area", CF_AREA), ("depth", CF_DEPTH), ("pressure", CF_PRESSURE), ("force", CF_FORCE),
              ("stiffness", CF_STIFFNESS), ("weight", CF_WEIGHT))
_I_COLUMNS = (("shape_a", CI_SHAPE_A), ("shape_b", CI_SHAPE_B), ("env", CI_ENV), ("pair", CI_PAIR))


def contacts_from_buffers(f, i) -> Contacts:
    """A :class:`~hydro.contact.types.Contacts` table from packed host buffers (copied)."""
    f = np.array(f, copy=True)
    i = np.array(i, copy=True)
    return Contacts(point=f[:, CF_POINT:CF_POINT + 3], normal=f[:, CF_NORMAL:CF_NORMAL + 3],
                    speculative=i[:, CI_SPECULATIVE].astype(bool), **{name: f[:, col] for name, col in _F_COLUMNS},
                    **{name: i[:, col] for name, col in _I_COLUMNS})


def contacts_to_buffers(contacts: Contacts):
    """Packed host buffers ``(f, i)`` of a contact table, with one spare zero row each."""
    n = len(contacts)
    f = np.zeros((n + 1, CF_COUNT), np.float32)
    i = np.zeros((n + 1, CI_COUNT), np.int32)
    f[:n, CF_POINT:CF_POINT + 3] = contacts.point
    f[:n, CF_NORMAL:CF_NORMAL + 3] = contacts.normal
    for name, col in _F_COLUMNS:
        f[:n, col] = getattr(contacts, name)
    for name, col in _I_COLUMNS:
        i[:n, col] = getattr(contacts, name)
    i[:n, CI_SPECULATIVE] = contacts.speculative
    return f, i
