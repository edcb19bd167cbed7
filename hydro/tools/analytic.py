"""Closed forms of the hydroelastic model for simple pairs (references for tests and experiments).

The model (``shared/reference/analytic.md``): the overlap is where φA < 0 and φB < 0; the patch is
where kA·φA = kB·φB inside it; the pressure on it is p = kB·(−φB); the force on the upper body is
P = ∫ p n dA. Every function here puts the lower body's top face (or the lower sphere's top) where
the scene builders of :mod:`hydro.tools.sweep` put it, and returns

- ``force``: N, the normal force P_z (= k·V for equal stiffness k);
- ``area``: m², the patch area ∫ dA (``nan`` where no closed form is known);
- ``lowest``: m, z of the patch's lowest point.

Lengths in m, stiffness in N/m³. The lower box is treated as a half space (its top face at
z = 0, large enough that its side faces never matter).

Cylinder lying on its side (radius R, length L, axis along x) pressed by d into the box
--------------------------------------------------------------------------------------
Equal stiffness k. Let b = 2R − d, a = √(d·b) (the patch's half-width across the axis), and
c = R − d the height of the axis. For a point (x, y) the interface height z* solves
φ_box(z) = φ_cyl(x, y, z), with φ_box = z and, inside the cylinder,
φ_cyl = max(ρ − R, |x| − L/2), ρ = √(y² + (z − c)²). φ_box − φ_cyl grows with z (slope ≥ 0,
since |∂φ_cyl/∂z| ≤ 1), so the root is unique, and it is z* = max(z_c(y), −e(x)) with

- the curved part: z_c solves z = ρ(z) − R, i.e. (z + R)² = y² + (z − c)², so
  z_c(y) = (y² − a²)/(2b) — the same parabolic cylinder as the sphere's paraboloid, lowest
  point −d/2 under the axis;
- the end caps: e(x) = L/2 − |x| (the distance to the nearer flat end), z = −e: a 45° ramp next
  to each end face, where the end face is closer than the curved side (as the cube's rim band).

Write q(y) = −z_c(y) = (a² − y²)/(2b) ∈ [0, d/2] (d/2 ≤ L/2 assumed). The patch is the set
|y| < a, |x| < L/2, and since the force on the cylinder is P_z = k·∫∫ (−z*) dx dy (n_z dA is
the projected area and p = k·(−φ_box) = −k·z* on the patch):

    V = ∫_{−a}^{a} ∫_{−L/2}^{L/2} min(q(y), L/2 − |x|) dx dy = ∫_{−a}^{a} (L·q − q²) dy
      = L·2a³/(3b) − 4a⁵/(15b²) = (2/3)·L·a·d − (4/15)·a·d²        (a²/b = d),

and P_z = k·V. The area: over the curved part dA = √(1 + y²/b²) dx dy on an x-length L − 2q(y);
over the two ramps dA = √2 dx dy on a total x-length 2q(y). With s(y) = √(1 + y²/b²),
S = s(a), T = asinh(a/b), ∫_{−a}^{a} s dy = aS + bT and
∫_{−a}^{a} y² s dy = (b³/4)·[(a/b)·S·(1 + 2a²/b²) − T] =: I₂ (substituting y = b·sinh t):

    A = L·(aS + bT) − [a²·(aS + bT) − I₂]/b + (4√2/3)·a·d.

For L → ∞ per unit length, V/L = (2/3)·a·d: the 2-D analogue of the sphere's V. The tests
check V and A against a direct numerical quadrature of the defining integrals from the two
signed distance functions (root-finding z* at every quadrature point), independent of the
algebra above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClosedForm:
    """The closed-form totals of one pair at one depth (units in the module docstring)."""

    force: float
    area: float
    lowest: float


def sphere_on_box(depth: float, radius: float, *, k_sphere: float = 1e9, k_box: float = 1e9) -> ClosedForm:
    """Sphere of ``radius`` pressed ``depth`` into a box's top face (z = 0).

    Equal stiffness: V = (π d²/2)(R − d/2), A from analytic.md. Unequal: P = k_eff·π d²·
    [R − d(ks + 2kb)/(3(ks + kb))], lowest point −d·ks/(ks + kb); the area then has no closed
    form here (``nan``).
    """
    d, R = float(depth), float(radius)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    ks, kb = float(k_sphere), float(k_box)
    k_eff = ks * kb / (ks + kb)
    force = k_eff * math.pi * d * d * (R - d * (ks + 2 * kb) / (3 * (ks + kb)))
    lowest = -d * ks / (ks + kb)
    if ks == kb:
        area = (2 * math.pi / 3) * ((2 * R) ** 1.5 * (2 * R - d) ** 0.5 - (2 * R - d) ** 2)
    else:
        area = math.nan
    return ClosedForm(force, area, lowest)


def cube_on_box(depth: float, size: float, *, k: float = 1e9) -> ClosedForm:
    """Cube of edge ``size`` resting flat on a larger box, overlap ``depth`` (equal stiffness)."""
    d, s = float(depth), float(size)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    w = d / 2
    V = s * s * d / 2 - s * d * d / 2 + d**3 / 6
    A = (s - 2 * w) ** 2 + (s * s - (s - 2 * w) ** 2) * math.sqrt(2.0)
    return ClosedForm(k * V, A, -d / 2)


def two_spheres(depth: float, radius: float, *, k: float = 1e9) -> ClosedForm:
    """Two equal spheres, centre distance 2R − d (equal stiffness); the patch is a flat disk."""
    d, R = float(depth), float(radius)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    V = math.pi * (d / 2) ** 2 * (R - d / 3)
    A = math.pi * (R * d - d * d / 4)
    # the disk lies in the mid-plane, at R − d/2 above the lower sphere's centre
    return ClosedForm(k * V, A, R - d / 2)


def cylinder_on_box(depth: float, radius: float, length: float, *, k: float = 1e9) -> ClosedForm:
    """Cylinder (radius, length) lying on its side, pressed ``depth`` into a box's top face.

    Derivation in the module docstring (equal stiffness, d/2 ≤ L/2).
    """
    d, R, L = float(depth), float(radius), float(length)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    if d > min(R, L):
        raise ValueError(f"depth {d} is outside the closed form's range (d <= min(R, L))")
    b = 2 * R - d
    a = math.sqrt(d * b)
    V = (2.0 / 3.0) * L * a * d - (4.0 / 15.0) * a * d * d
    S = math.sqrt(1 + (a / b) ** 2)
    T = math.asinh(a / b)
    int_s = a * S + b * T
    int_y2s = (b**3 / 4) * ((a / b) * S * (1 + 2 * (a / b) ** 2) - T)
    A = L * int_s - (a * a * int_s - int_y2s) / b + (4 * math.sqrt(2.0) / 3) * a * d
    return ClosedForm(k * V, A, -d / 2)


def cylinder_end_on_box(depth: float, radius: float, *, k_cylinder: float = 1e9, k_box: float = 1e9) -> ClosedForm:
    """Cylinder of ``radius`` standing on its flat end, pressed ``depth`` into a larger box's top
    face (z = 0); any stiffness ratio (the cylinder's length more than the overlap).

    Inside the cylinder (k_c; its end at z = −d) φ_c = max(−d − z, ρ − R) (the end face or the
    curved side, whichever is nearer); inside the box (k_b) φ_b = z. The patch k_c·φ_c = k_b·φ_b:

    - under the end face, the disk ρ <= a at z = −d·k_c/(k_c + k_b), pressure k_eff·d
      (k_eff = k_c·k_b/(k_c + k_b)); the end face is the nearer while −d − z >= ρ − R, so
      a = R − w with the rim band's width w = d·k_b/(k_c + k_b) (w = d/2 for equal stiffness,
      → d under a much stiffer box);
    - the rim band a < ρ < R, where the side is the nearer: the cone z = (k_c/k_b)·(ρ − R),
      pressure k_c·(R − ρ), rising to the rim ρ = R, z = 0 where the undeformed surfaces meet.

    P_z = ∫ p dA_xy (n_z dA is the projected area):

        P_z = k_eff·d·π a² + 2π k_c ∫_a^R (R − ρ) ρ dρ = k_eff·d·π a² + (π k_c/3)·w²·(R + 2a),

    and the area A = π a² + π (R² − a²)·√(k_c² + k_b²)/k_b (the band's slope is k_c/k_b). The
    tests check P_z against a quadrature of the defining integral (root-finding the interface on
    each ray) that does not use this algebra.
    """
    d, R = float(depth), float(radius)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    kc, kb = float(k_cylinder), float(k_box)
    w = d * kb / (kc + kb)
    if w > R:
        raise ValueError(f"depth {d} is outside the closed form's range (the rim band {w} is wider than R)")
    a = R - w
    k_eff = kc * kb / (kc + kb)
    force = k_eff * d * math.pi * a * a + (math.pi * kc / 3.0) * w * w * (R + 2.0 * a)
    area = math.pi * a * a + math.pi * (R * R - a * a) * math.hypot(kc, kb) / kb
    return ClosedForm(force, area, -d * kc / (kc + kb))


def prism_on_box(depth: float, polygon, *, k: float = 1e9) -> ClosedForm:
    """A right prism (convex cross-section ``polygon`` (N, 2), counter-clockwise) resting flat on a
    larger box, overlap ``depth`` (equal stiffness; the cube's closed form for any convex polygon).

    With t the distance from a point of the cross-section to its nearest side face, the patch is at
    z* = −min(t, w), w = d/2 (flat under the middle, a 45° ramp in the rim band). The region
    t >= s is the polygon offset inward by s, of area S − L·s + C·s² (S its area, L its
    perimeter, C = Σ cot(θ_i/2) over its interior angles θ_i), so

        V = ∫∫ min(t, w) dA = ∫_0^w (S − L·s + C·s²) ds = S·w − L·w²/2 + C·w³/3,

    valid while the offset polygon keeps every side (w below the shortest side's reach), and
    A = (S − L·w + C·w²) + √2·(L·w − C·w²).
    """
    d = float(depth)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    q = np.asarray(polygon, dtype=float)
    e = np.roll(q, -1, axis=0) - q
    S = 0.5 * float(np.sum(q[:, 0] * np.roll(q[:, 1], -1) - np.roll(q[:, 0], -1) * q[:, 1]))
    L = float(np.linalg.norm(e, axis=1).sum())
    # interior angle at vertex i between the edges into and out of it
    a_in = -np.roll(e, 1, axis=0)
    cos = np.einsum("ij,ij->i", a_in, e) / (np.linalg.norm(a_in, axis=1) * np.linalg.norm(e, axis=1))
    theta = np.arccos(np.clip(cos, -1.0, 1.0))
    C = float(np.sum(1.0 / np.tan(theta / 2)))
    w = d / 2
    V = S * w - L * w * w / 2 + C * w**3 / 3
    inner = S - L * w + C * w * w
    return ClosedForm(k * V, inner + math.sqrt(2.0) * (S - inner), -w)


def ring_on_box(depth: float, r_out: float, r_in: float, n: int, *, k: float = 1e9) -> ClosedForm:
    """A ring of regular n-gons (the outer and inner walls' corners at radii ``r_out`` and
    ``r_in``, at the same angles; flat top and bottom) resting flat on a larger box, overlap
    ``depth`` (equal stiffness). Where both fields are face planes the interface bisects the
    overlap; near a wall, at a distance t from it across the bottom, p = k·t, so with w = d/2

        V = ∫∫ min(t, w) dA = ∫_0^w |{t > s}| ds,

    |{t > s}| the outer polygon offset inward by s (apothem a − s: n·tan(π/n)·(a − s)²) less the
    inner one offset outward (its area + perimeter·s + π·s²: the hole's corners are the ring's
    reflex edges, where the distance is to the edge). Valid while w is below half the wall
    thickness; the area is not given."""
    d = float(depth)
    if d <= 0.0:
        return ClosedForm(0.0, 0.0, 0.0)
    c = 0.5 * d
    a_out = r_out * math.cos(math.pi / n)
    area_in = n * r_in**2 * math.sin(math.pi / n) * math.cos(math.pi / n)
    perim_in = 2.0 * n * r_in * math.sin(math.pi / n)
    outer = n * math.tan(math.pi / n) * (a_out**3 - (a_out - c) ** 3) / 3.0
    return ClosedForm(k * (outer - (area_in * c + perim_in * c * c / 2.0 + math.pi * c**3 / 3.0)), math.nan, -c)


def half_space_force(phi, lo, hi, *, k_shape: float = 1e9, k_box: float = 1e9, spacing: float,
                     depth_scale: float) -> ClosedForm:
    """The hydroelastic force on a shape pressed into a box's top face (z = 0, a half space below
    it), by quadrature of the defining integral — the numerical reference for shapes without a
    closed form (a tilted box, a mesh).

    ``phi(points (M, 3)) -> (M,)``: the shape's signed distance (exact: a primitive's formula, or
    :class:`~hydro.geometry.mesh_distance.MeshDistance` for a polygonal mesh); ``lo``, ``hi``: the
    (x, y) rectangle the patch lies in; ``spacing``: the quadrature grid's step (midpoint rule);
    ``depth_scale``: a length larger than the deepest overlap (where the root search starts).

    On the patch k_shape·φ = k_box·φ_box with φ_box = z. Along each vertical line the difference
    k_shape·φ(x, y, z) − k_box·z falls strictly as z rises (|∂φ/∂z| <= 1), so the patch height z*
    is its one root (found by bisection, 60 halvings), and the force is
    P_z = k_box·∫∫ max(0, −z*) dx dy (n_z dA is the projected area and p = k_box·(−z*) on it). The
    area is not evaluated (``nan``); ``lowest`` is the smallest z*.
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    nx = max(1, int(math.ceil((hi[0] - lo[0]) / spacing)))
    ny = max(1, int(math.ceil((hi[1] - lo[1]) / spacing)))
    dx = (hi[0] - lo[0]) / nx
    dy = (hi[1] - lo[1]) / ny
    x = lo[0] + (np.arange(nx) + 0.5) * dx
    y = lo[1] + (np.arange(ny) + 0.5) * dy
    X, Y = (a.ravel() for a in np.meshgrid(x, y, indexing="ij"))

    def g(z):
        return k_shape * phi(np.stack([X, Y, z], axis=1)) - k_box * z

    z_lo = np.full(len(X), -abs(depth_scale))
    z_hi = np.zeros(len(X))
    overlap = g(z_hi) < 0.0  # the shape reaches below the top face here
    if not np.any(overlap):
        return ClosedForm(0.0, math.nan, 0.0)
    X, Y, z_lo, z_hi = X[overlap], Y[overlap], z_lo[overlap], z_hi[overlap]
    if np.any(g(z_lo) <= 0.0):
        raise ValueError("depth_scale is smaller than the overlap: the root search cannot start below it")
    for _ in range(60):
        mid = 0.5 * (z_lo + z_hi)
        above = g(mid) < 0.0  # the root lies below mid
        z_hi = np.where(above, mid, z_hi)
        z_lo = np.where(above, z_lo, mid)
    z = 0.5 * (z_lo + z_hi)
    return ClosedForm(float(k_box * np.sum(-z) * dx * dy), math.nan, float(z.min()))


def convex_pair_force(verts, faces, rot_a, rot_b, lift: float, *, k: float = 1e9, spacing: float = 2.5e-4,
                      half: float = 0.03, reach: float = 0.05) -> float:
    """F_z of two copies of a convex polyhedron (``verts``, ``faces``; equal stiffness k) pressed
    together along Z — A rotated by the matrix ``rot_a`` about the origin, B by ``rot_b`` and lifted
    by ``lift`` — by column quadrature of the defining integral: the numerical reference for convex
    mesh pairs (two icospheres).

    Inside a convex polyhedron φ is the largest face plane's signed distance (only the faces within
    ``reach`` of the overlap's middle are taken: the others cannot be nearest there). On each
    vertical line (x, y) of a midpoint grid of step ``spacing`` over [−half, half]² the interface
    φA = φB is found by bisection (40 halvings) between B's lowest vertex and A's highest; where
    both fields are negative there, p = −k·φA and F_z = ∫∫ p dx dy."""
    verts = np.asarray(verts, dtype=float)
    faces = np.asarray(faces, dtype=np.int64)
    rot_a = np.asarray(rot_a, dtype=float)
    rot_b = np.asarray(rot_b, dtype=float)
    t_b = np.array([0.0, 0.0, float(lift)])
    n = np.cross(verts[faces[:, 1]] - verts[faces[:, 0]], verts[faces[:, 2]] - verts[faces[:, 0]])
    n /= np.linalg.norm(n, axis=1)[:, None]
    off = np.einsum("ij,ij->i", n, verts[faces[:, 0]])
    top_a = float((verts @ rot_a.T)[:, 2].max())
    bottom_b = float((verts @ rot_b.T)[:, 2].min()) + lift
    contact = np.array([0.0, 0.0, 0.5 * (top_a + bottom_b)])
    centre = verts[faces].mean(axis=1)
    near_a = np.linalg.norm(centre @ rot_a.T - contact, axis=1) < reach
    near_b = np.linalg.norm(centre @ rot_b.T + t_b - contact, axis=1) < reach
    g = np.arange(-half, half, spacing) + spacing / 2
    x, y = (a.ravel() for a in np.meshgrid(g, g))

    def phi(z, rot, t, near):
        local = (np.stack([x, y, z], 1) - t) @ rot
        return (local @ n[near].T - off[near]).max(axis=1)

    lo = np.full(x.shape, min(bottom_b, top_a))
    hi = np.full(x.shape, max(bottom_b, top_a))
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        below = phi(mid, rot_a, 0.0, near_a) - phi(mid, rot_b, t_b, near_b) < 0.0
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    z = 0.5 * (lo + hi)
    pa, pb = -phi(z, rot_a, 0.0, near_a), -phi(z, rot_b, t_b, near_b)
    return k * float(np.where((pa > 0) & (pb > 0), pa, 0.0).sum()) * spacing**2
