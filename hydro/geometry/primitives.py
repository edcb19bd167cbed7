"""Exact signed distances of the primitives (device helpers, CPU and CUDA from one source).

Every primitive is canonical: centred at its local origin, axis (capsule, cylinder, cone) along
local +Z, sizes in metres. φ > 0 outside, φ < 0 inside. These fill the SDF grids and are the
references the grids are tested against.
"""

from __future__ import annotations

import math

from numba import prange

from ..backend import cpu_jit, device_fn

# Shape kind codes (stable: they appear in packed arrays).
SPHERE, BOX, CAPSULE, CYLINDER, CONE, ELLIPSOID, MESH, PLANE, HEIGHTFIELD, CONVEX_MESH = range(10)
KIND_NAMES = ("sphere", "box", "capsule", "cylinder", "cone", "ellipsoid", "mesh", "plane", "heightfield",
              "convex_mesh")

#: The kinds with an exact signed distance formula here (:func:`primitive_phi3`).
PRIMITIVE_KINDS = (SPHERE, BOX, CAPSULE, CYLINDER, CONE, ELLIPSOID)

#: Relative distance from a symmetry plane below which the ellipsoid's distance takes the point
#: on the plane (see :func:`ellipsoid_phi`)
PLANE_SNAP = 1e-10

#: Number of float parameters a primitive packs into (see :meth:`Geometry.params`).
PARAM_COUNT = 4

# ============================================================================================
# Exact signed distance functions (device helpers)


@device_fn(inline=True)
def sphere_phi(r, x, y, z):
    return math.sqrt(x * x + y * y + z * z) - r


@device_fn(inline=True)
def box_phi(hx, hy, hz, x, y, z):
    qx = abs(x) - hx
    qy = abs(y) - hy
    qz = abs(z) - hz
    ox = max(qx, 0.0)
    oy = max(qy, 0.0)
    oz = max(qz, 0.0)
    return math.sqrt(ox * ox + oy * oy + oz * oz) + min(max(qx, max(qy, qz)), 0.0)


@device_fn(inline=True)
def capsule_phi(r, hh, x, y, z):
    cz = min(max(z, -hh), hh)
    dz = z - cz
    return math.sqrt(x * x + y * y + dz * dz) - r


@device_fn(inline=True)
def cylinder_phi(r, hh, x, y, z):
    dr = math.sqrt(x * x + y * y) - r
    dz = abs(z) - hh
    ox = max(dr, 0.0)
    oz = max(dz, 0.0)
    return min(max(dr, dz), 0.0) + math.sqrt(ox * ox + oz * oz)


@device_fn
def _segment_distance_2d(px, py, ax, ay, bx, by):
    ex = bx - ax
    ey = by - ay
    t = ((px - ax) * ex + (py - ay) * ey) / (ex * ex + ey * ey)
    t = min(max(t, 0.0), 1.0)
    dx = px - (ax + t * ex)
    dy = py - (ay + t * ey)
    return math.sqrt(dx * dx + dy * dy)


@device_fn
def cone_phi(r, hh, x, y, z):
    # In the (rho, z) half-plane the cone is the triangle apex (0, hh), rim (r, -hh), centre (0, -hh).
    rho = math.sqrt(x * x + y * y)
    d_slant = _segment_distance_2d(rho, z, 0.0, hh, r, -hh)
    d_base = _segment_distance_2d(rho, z, r, -hh, 0.0, -hh)
    d = min(d_slant, d_base)
    inside = z >= -hh and z <= hh and rho <= r * (hh - z) / (2.0 * hh)
    return -d if inside else d


@device_fn(inline=True)
def _robust_length3(a, b, c):
    m = max(abs(a), max(abs(b), abs(c)))
    if m == 0.0:
        return 0.0
    a /= m
    b /= m
    c /= m
    return m * math.sqrt(a * a + b * b + c * c)


@device_fn
def _newton_root(n0, r0, n1, r1, n2, s0, s1):
    """Root of G(s) = (n0/(s+r0))² + (n1/(s+r1))² + (n2/(s+1))² − 1 in [s0, s1].

    G is convex and decreasing there, so Newton's method started at the left end (G >= 0)
    climbs to the root without overshooting; bisection takes over if rounding ever does.
    """
    s = s0
    for _ in range(60):
        a = n0 / (s + r0)
        b = n1 / (s + r1)
        c = n2 / (s + 1.0)
        g = a * a + b * b + c * c - 1.0
        if g <= 0.0:
            break
        dg = -2.0 * (a * a / (s + r0) + b * b / (s + r1) + c * c / (s + 1.0))
        step = -g / dg
        nxt = s + step
        if not nxt < s1:
            nxt = 0.5 * (s + s1)
        if nxt <= s or step <= 1e-16 * (1.0 + abs(s)):
            s = nxt
            break
        s = nxt
    return s


@device_fn
def _ellipse_root(r0, z0, z1, g):
    n0 = r0 * z0
    s0 = z1 - 1.0
    s1 = 0.0 if g < 0.0 else _robust_length3(n0, z1, 0.0) - 1.0
    return _newton_root(n0, r0, 0.0, 1.0, z1, s0, s1)


@device_fn
def _ellipse_distance(e0, e1, y0, y1):
    # Distance from (y0, y1) >= 0 to the ellipse with semi-axes e0 >= e1 > 0 (Eberly's method).
    if y1 > 0.0:
        if y0 > 0.0:
            z0 = y0 / e0
            z1 = y1 / e1
            g = z0 * z0 + z1 * z1 - 1.0
            if g != 0.0:
                r0 = (e0 / e1) * (e0 / e1)
                sbar = _ellipse_root(r0, z0, z1, g)
                x0 = r0 * y0 / (sbar + r0)
                x1 = y1 / (sbar + 1.0)
                return math.sqrt((x0 - y0) ** 2 + (x1 - y1) ** 2)
            return 0.0
        return abs(y1 - e1)
    numer0 = e0 * y0
    denom0 = e0 * e0 - e1 * e1
    if numer0 < denom0:
        xde0 = numer0 / denom0
        x0 = e0 * xde0
        x1 = e1 * math.sqrt(max(1.0 - xde0 * xde0, 0.0))
        return math.sqrt((x0 - y0) ** 2 + x1 * x1)
    return abs(y0 - e0)


@device_fn
def _ellipsoid_root(r0, r1, z0, z1, z2, g):
    n0 = r0 * z0
    n1 = r1 * z1
    s0 = z2 - 1.0
    s1 = 0.0 if g < 0.0 else _robust_length3(n0, n1, z2) - 1.0
    return _newton_root(n0, r0, n1, r1, z2, s0, s1)


@device_fn
def _ellipsoid_distance_sorted(e0, e1, e2, y0, y1, y2):
    # Unsigned distance from (y0, y1, y2) >= 0 to the ellipsoid surface, e0 >= e1 >= e2 > 0.
    if y2 > 0.0:
        if y1 > 0.0:
            if y0 > 0.0:
                z0 = y0 / e0
                z1 = y1 / e1
                z2 = y2 / e2
                g = z0 * z0 + z1 * z1 + z2 * z2 - 1.0
                if g != 0.0:
                    r0 = (e0 / e2) * (e0 / e2)
                    r1 = (e1 / e2) * (e1 / e2)
                    sbar = _ellipsoid_root(r0, r1, z0, z1, z2, g)
                    x0 = r0 * y0 / (sbar + r0)
                    x1 = r1 * y1 / (sbar + r1)
                    x2 = y2 / (sbar + 1.0)
                    return math.sqrt((x0 - y0) ** 2 + (x1 - y1) ** 2 + (x2 - y2) ** 2)
                return 0.0
            return _ellipse_distance(e1, e2, y1, y2)
        if y0 > 0.0:
            return _ellipse_distance(e0, e2, y0, y2)
        return abs(y2 - e2)
    denom0 = e0 * e0 - e2 * e2
    denom1 = e1 * e1 - e2 * e2
    numer0 = e0 * y0
    numer1 = e1 * y1
    if numer0 < denom0 and numer1 < denom1:
        xde0 = numer0 / denom0
        xde1 = numer1 / denom1
        discr = 1.0 - xde0 * xde0 - xde1 * xde1
        if discr > 0.0:
            x0 = e0 * xde0
            x1 = e1 * xde1
            x2 = e2 * math.sqrt(discr)
            return math.sqrt((x0 - y0) ** 2 + (x1 - y1) ** 2 + x2 * x2)
    return _ellipse_distance(e0, e1, y0, y1)


@device_fn
def ellipsoid_phi(a, b, c, x, y, z):
    # Sort the semi-axes in decreasing order, carrying the coordinates along.
    e0, e1, e2 = a, b, c
    y0, y1, y2 = abs(x), abs(y), abs(z)
    if e0 < e1:
        e0, e1 = e1, e0
        y0, y1 = y1, y0
    if e1 < e2:
        e1, e2 = e2, e1
        y1, y2 = y2, y1
    if e0 < e1:
        e0, e1 = e1, e0
        y0, y1 = y1, y0
    # A coordinate within round-off of a symmetry plane is taken on it: Eberly's root is
    # ill-conditioned there (at |z| = 1e-18 Newton's method stops far from the root, giving
    # −8.7 mm for a distance of −11.2 mm), while the plane's own branch is exact, and the distance
    # moves by no more than the coordinate does.
    if y0 < PLANE_SNAP * e0:
        y0 = 0.0
    if y1 < PLANE_SNAP * e1:
        y1 = 0.0
    if y2 < PLANE_SNAP * e2:
        y2 = 0.0
    d = _ellipsoid_distance_sorted(e0, e1, e2, y0, y1, y2)
    k = (x / a) ** 2 + (y / b) ** 2 + (z / c) ** 2
    return -d if k < 1.0 else d


@device_fn(inline=False)
def primitive_phi3(kind, p0, p1, p2, x, y, z):
    """Exact signed distance of primitive ``kind`` with size parameters ``p0, p1, p2`` (the first
    three of :meth:`Geometry.params`) at local (x, y, z); NaN for a kind without a formula.

    Called, not inlined: kernels evaluate it at several sites, and six inlined primitives each
    would multiply their compile time."""
    if kind == SPHERE:
        return sphere_phi(p0, x, y, z)
    if kind == BOX:
        return box_phi(p0, p1, p2, x, y, z)
    if kind == CAPSULE:
        return capsule_phi(p0, p1, x, y, z)
    if kind == CYLINDER:
        return cylinder_phi(p0, p1, x, y, z)
    if kind == CONE:
        return cone_phi(p0, p1, x, y, z)
    if kind == ELLIPSOID:
        return ellipsoid_phi(p0, p1, p2, x, y, z)
    return math.nan


@device_fn(inline=True)
def _sign(v):
    return -1.0 if v < 0.0 else 1.0


@device_fn(inline=False)
def primitive_subgradient3(kind, p0, p1, p2, x, y, z):
    """A subgradient (gx, gy, gz, ok) of the exact signed distance of primitive ``kind`` at local
    (x, y, z), for the kinds that have one here (sphere, box, capsule, cylinder; ``ok`` False for
    the others). Every primitive is convex, so its signed distance is a convex function and
    φ(x + d) ≥ φ(x) + g·d for every d: a lower bound over a cell that follows the surface's
    direction (where the gradient is not unique, any one of the active pieces' gradients is a
    subgradient; at a sphere's centre, 0)."""
    if kind == SPHERE:
        n = math.sqrt(x * x + y * y + z * z)
        if n == 0.0:
            return 0.0, 0.0, 0.0, True
        return x / n, y / n, z / n, True
    if kind == CAPSULE:
        dz = z - min(max(z, -p1), p1)
        n = math.sqrt(x * x + y * y + dz * dz)
        if n == 0.0:
            return 0.0, 0.0, 0.0, True
        return x / n, y / n, dz / n, True
    if kind == BOX:
        qx = abs(x) - p0
        qy = abs(y) - p1
        qz = abs(z) - p2
        if qx > 0.0 or qy > 0.0 or qz > 0.0:  # outside: towards the nearest point
            ox = max(qx, 0.0)
            oy = max(qy, 0.0)
            oz = max(qz, 0.0)
            n = math.sqrt(ox * ox + oy * oy + oz * oz)
            return _sign(x) * ox / n, _sign(y) * oy / n, _sign(z) * oz / n, True
        if qx >= qy and qx >= qz:  # inside: the nearest face's normal
            return _sign(x), 0.0, 0.0, True
        if qy >= qz:
            return 0.0, _sign(y), 0.0, True
        return 0.0, 0.0, _sign(z), True
    if kind == CYLINDER:
        rho = math.sqrt(x * x + y * y)
        dr = rho - p0
        dz = abs(z) - p1
        ux = x / rho if rho > 0.0 else 0.0
        uy = y / rho if rho > 0.0 else 0.0
        if dr > 0.0 or dz > 0.0:
            orr = max(dr, 0.0)
            oz = max(dz, 0.0)
            n = math.sqrt(orr * orr + oz * oz)
            return ux * orr / n, uy * orr / n, _sign(z) * oz / n, True
        if dr >= dz:
            return ux, uy, 0.0, True
        return 0.0, 0.0, _sign(z), True
    return 0.0, 0.0, 0.0, False


@device_fn(inline=True)
def primitive_phi(kind, params, x, y, z):
    """Exact signed distance of primitive ``kind`` with packed ``params`` at local (x, y, z)."""
    return primitive_phi3(kind, params[0], params[1], params[2], x, y, z)


@cpu_jit(parallel=True, serial_below=1 << 20)
def _primitive_phi_many(kind, params, pts, out):
    for i in prange(pts.shape[0]):
        out[i] = primitive_phi(kind, params, pts[i, 0], pts[i, 1], pts[i, 2])
