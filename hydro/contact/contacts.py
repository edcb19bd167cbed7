"""Stage 5 — one contact per patch triangle (the math; the kernel that calls it is stage 4's),
and the packed contact columns every stage after it reads and writes.

Given a patch triangle in B's frame with eA = φA − marginA and eB = φB − marginB at its three
vertices, :func:`triangle_contact` computes the contract's contact fields over the part of the
triangle inside the overlap (where the linear separation s = eA + eB is negative): its area,
the force ∫p dA of the linear pressure p = k_eff·(−s) (exact for linear p, partial triangles
included), the centre of pressure as the contact point, the unit normal (from A toward B),
depth = the mean separation there, mean pressure, stiffness c = area·k_eff, weight ∫(−eB) dA,
and whether the triangle is speculative (all s >= 0, depth within the gap band).
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import device_fn
from .pair_setup import PI_ENV, PI_SHAPE_A, PI_SHAPE_B, b_dir_to_world, b_to_world
from .types import CONTACT_FIELDS, Contacts

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
TF_PRESSURE = 12  # 3: k_eff·max(0, −(eA + eB)) at each vertex
TF_COUNT = 15

#: Triangles with less area than this fraction of a voxel face are degenerate and skipped.
DEGENERATE_AREA = 1e-10


@device_fn(inline=True)
def _inside_count(s0, s1, s2):
    """How many of a triangle's three vertex separations are negative (inside the overlap)."""
    n_in = 0
    if s0 < 0.0:
        n_in += 1
    if s1 < 0.0:
        n_in += 1
    if s2 < 0.0:
        n_in += 1
    return n_in


@device_fn(inline=True)
def inside_fraction(s0, s1, s2):
    """Fraction of a triangle's area where the linear interpolant of s is negative."""
    n_in = _inside_count(s0, s1, s2)
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


@device_fn(inline=True)
def _cross(x0, y0, z0, x1, y1, z1, x2, y2, z2):
    """(p1 − p0) × (p2 − p0): twice the area, along the triangle's normal."""
    ux = x1 - x0
    uy = y1 - y0
    uz = z1 - z0
    wx = x2 - x0
    wy = y2 - y0
    wz = z2 - z0
    return uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx


@device_fn(inline=True)
def degenerate(cross2, voxel):
    """Whether a triangle whose edges' cross product has squared length ``cross2`` has less area
    than ``DEGENERATE_AREA`` of a ``voxel`` face."""
    min_area = DEGENERATE_AREA * voxel * voxel
    return 0.25 * cross2 <= min_area * min_area


@device_fn(inline=True)
def triangle_is_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, s0, s1, s2, gap, voxel):
    """Whether a patch triangle yields a contact: not degenerate, and either partly inside the
    overlap (some vertex separation s < 0) or, wholly outside, with depth (mean s) in the gap band."""
    nx, ny, nz = _cross(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    if degenerate(nx * nx + ny * ny + nz * nz, voxel):
        return False
    if s0 < 0.0 or s1 < 0.0 or s2 < 0.0:
        return True
    return (s0 + s1 + s2) / 3.0 <= gap


@device_fn(inline=True)
def _linear_integrals(x0, y0, z0, x1, y1, z1, x2, y2, z2, area, p0, p1, p2, s0, s1, s2):
    """Integrals over a triangle of area ``area`` of the linear interpolants of the vertex values
    p and s: (∫p, ∫p·x, ∫p·y, ∫p·z, ∫s, ∫x, ∫y, ∫z) — exact, from the vertex rule
    ∫p·x = area/12·(Σ p_i x_i + Σp_i·Σx_i)."""
    sp = p0 + p1 + p2
    sx = x0 + x1 + x2
    sy = y0 + y1 + y2
    sz = z0 + z1 + z2
    a12 = area / 12.0
    return (area * sp / 3.0, a12 * (p0 * x0 + p1 * x1 + p2 * x2 + sp * sx),
            a12 * (p0 * y0 + p1 * y1 + p2 * y2 + sp * sy), a12 * (p0 * z0 + p1 * z1 + p2 * z2 + sp * sz),
            area * (s0 + s1 + s2) / 3.0, area * sx / 3.0, area * sy / 3.0, area * sz / 3.0)


@device_fn
def _corner_integrals(ax, ay, az, bx, by, bz, cx, cy, cz, area, pa, pb, pc, sa, sb, sc):
    """:func:`_linear_integrals` over the corner at vertex a cut off by the line s = 0 (s_a on one
    side, s_b and s_c on the other): the triangle a, a + t_b·(b − a), a + t_c·(c − a)."""
    tb = sa / (sa - sb)
    tc = sa / (sa - sc)
    return _linear_integrals(ax, ay, az, ax + tb * (bx - ax), ay + tb * (by - ay), az + tb * (bz - az),
                             ax + tc * (cx - ax), ay + tc * (cy - ay), az + tc * (cz - az), area * tb * tc,
                             pa, pa + tb * (pb - pa), pa + tc * (pc - pa), sa, 0.0, 0.0)


@device_fn
def inside_integrals(x0, y0, z0, x1, y1, z1, x2, y2, z2, area, p0, p1, p2, s0, s1, s2):
    """:func:`_linear_integrals` over the part of the triangle where the linear separation s < 0
    (inside the overlap), plus that part's area: (A_in, ∫p, ∫p·x, ∫p·y, ∫p·z, ∫s, ∫x, ∫y, ∫z).

    Exact for pressure and separation linear over the triangle: the inside part is the whole
    triangle, the corner at the one inside vertex, or the whole less the corner at the one
    outside vertex."""
    n_in = _inside_count(s0, s1, s2)
    if n_in == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    if n_in == 3:
        f, mx, my, mz, si, ax, ay, az = _linear_integrals(x0, y0, z0, x1, y1, z1, x2, y2, z2, area, p0, p1, p2,
                                                          s0, s1, s2)
        return area, f, mx, my, mz, si, ax, ay, az
    # the lone vertex a (inside when n_in == 1, outside when n_in == 2) and the other two in order
    lone_inside = n_in == 1
    if (s0 < 0.0) == lone_inside:
        f, mx, my, mz, si, ax, ay, az = _corner_integrals(x0, y0, z0, x1, y1, z1, x2, y2, z2, area, p0, p1, p2,
                                                          s0, s1, s2)
    elif (s1 < 0.0) == lone_inside:
        f, mx, my, mz, si, ax, ay, az = _corner_integrals(x1, y1, z1, x2, y2, z2, x0, y0, z0, area, p1, p2, p0,
                                                          s1, s2, s0)
    else:
        f, mx, my, mz, si, ax, ay, az = _corner_integrals(x2, y2, z2, x0, y0, z0, x1, y1, z1, area, p2, p0, p1,
                                                          s2, s0, s1)
    a_in = area * inside_fraction(s0, s1, s2)
    if lone_inside:
        return a_in, f, mx, my, mz, si, ax, ay, az
    wf, wmx, wmy, wmz, wsi, wax, way, waz = _linear_integrals(x0, y0, z0, x1, y1, z1, x2, y2, z2, area, p0, p1, p2,
                                                              s0, s1, s2)
    return a_in, wf - f, wmx - mx, wmy - my, wmz - mz, wsi - si, wax - ax, way - ay, waz - az


@device_fn
def triangle_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1, ea2, eb0, eb1, eb2, kb, keff, curved, ea_c,
                     eb_c):
    """Contact of one patch triangle (B frame) that :func:`triangle_is_contact` accepted. Returns
    (speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness, weight).

    Pressure p = −k_eff·s and separation s = eA + eB are linear over the triangle (their vertex
    values); over the part inside the overlap (s < 0): force = ∫p dA, exact for linear p, at the
    centre of pressure ∫p·x dA / ∫p dA (so the triangle's moment is exact too), depth = the mean
    separation ∫s dA / A_in (stiffness·|depth| = force),
    pressure = force / A_in and weight = ∫(−eB) dA = force / kB. A triangle wholly outside is
    speculative: no area or force, at its centroid, depth the mean separation.

    ``curved``: ``ea_c``, ``eb_c`` are the fields at the point of the patch above the triangle's
    centroid (the centroid settled on the interface). A triangle wholly inside then integrates p
    and s by the rule exact for quadratics, area·(Σ vertex values / 12 + 3/4 · centre value):
    the linear integral plus 3/4·area·(centre value − linear centre value), applied at the
    centroid — on a curved patch the chords' linear pressure falls short by about h²·|∇²p|/12
    (−0.8 % for a sphere at 64³), which this removes.

    Why −k_eff·s and not −kB·eB (equal on the interface, where kA·eA = kB·eB and s = eA + eB):
    off it, −k_eff·s = (kB·(−kA·eA) + kA·(−kB·eB))/(kA + kB) weighs each side's pressure by the
    other's stiffness, so it follows the *softer* field, whose value is large and well resolved.
    At a stiffness ratio of 1e4 or more the stiff side's e is a rounding error (a stiff sphere
    into a soft box: eB ≈ 1e-12·eA on the sphere's surface), and kB·eB amplified that error by
    kB: −kB·eB gave a force 39 % low at 1e4 and 300× high at 1e8 (issue 27); −k_eff·s tends to
    k_soft·V at every ratio, whichever shape is B."""
    nx, ny, nz, area = unit_normal(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    s0 = ea0 + eb0
    s1 = ea1 + eb1
    s2 = ea2 + eb2
    a_in, force, mx, my, mz, s_int, ax, ay, az = inside_integrals(x0, y0, z0, x1, y1, z1, x2, y2, z2, area,
                                                                  -keff * s0, -keff * s1, -keff * s2, s0, s1, s2)
    if a_in > 0.0 and curved and s0 < 0.0 and s1 < 0.0 and s2 < 0.0:
        ds = 0.75 * area * (ea_c + eb_c - (s0 + s1 + s2) / 3.0)
        dp = -keff * ds
        force += dp
        s_int += ds
        mx += dp * (x0 + x1 + x2) / 3.0
        my += dp * (y0 + y1 + y2) / 3.0
        mz += dp * (z0 + z1 + z2) / 3.0
    return _finish_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, s0, s1, s2, a_in, force, mx, my, mz,
                           s_int, ax, ay, az, kb, keff)


@device_fn(inline=True)
def unit_normal(x0, y0, z0, x1, y1, z1, x2, y2, z2):
    """A triangle's unit normal (by its winding) and area."""
    nx, ny, nz = _cross(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    length = math.sqrt(nx * nx + ny * ny + nz * nz)
    inv = 1.0 / length
    return nx * inv, ny * inv, nz * inv, 0.5 * length


@device_fn(inline=True)
def _finish_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, s0, s1, s2, a_in, force, mx, my, mz, s_int, ax,
                    ay, az, kb, keff):
    """:func:`triangle_contact`'s result from a triangle's integrals over its part inside the overlap."""
    if a_in <= 0.0:
        return (True, (x0 + x1 + x2) / 3.0, (y0 + y1 + y2) / 3.0, (z0 + z1 + z2) / 3.0, nx, ny, nz, 0.0,
                (s0 + s1 + s2) / 3.0, 0.0, 0.0, 0.0, 0.0)
    if force > 0.0:
        cx = mx / force
        cy = my / force
        cz = mz / force
    else:  # no pressure where the interpolants say the shapes overlap (a sliver at the rim)
        force = 0.0
        cx = ax / a_in
        cy = ay / a_in
        cz = az / a_in
    return (False, cx, cy, cz, nx, ny, nz, a_in, s_int / a_in, force / a_in, force, a_in * keff, force / kb)


#: Most cuts per edge of a subdivided patch triangle (:func:`subdivided_triangle_contact`): up to
#: SUB_CUTS² sub-triangles over up to SUB_POINTS points, SUB_VALUES numbers each (x, y, z, eA, eB)
SUB_CUTS = 4
SUB_POINTS = (SUB_CUTS + 1) * (SUB_CUTS + 2) // 2
SUB_VALUES = 5


@device_fn(inline=True)
def sub_index(i, j, cuts):
    """Index of the subdivision point i/cuts along edge 0→1 and j/cuts along edge 0→2 of a triangle
    cut ``cuts`` times per edge (i + j <= cuts): 0 .. (cuts + 1)(cuts + 2)/2 − 1."""
    return i * (2 * cuts + 3 - i) // 2 + j


@device_fn(inline=True)
def _sub_point(values, row, k, x0, y0, z0):
    """The subdivision point stored at ``values[row, k:k + SUB_VALUES]``: (x, y, z, s = eA + eB)."""
    return (x0 + float(values[row, k]), y0 + float(values[row, k + 1]), z0 + float(values[row, k + 2]),
            float(values[row, k + 3]) + float(values[row, k + 4]))


@device_fn(inline=True)
def sub_triangle_sums(xa, ya, za, sa, xb, yb, zb, sb, xc, yc, zc, sc, keff, a_in, total, fx, fy, fz, mx, my, mz, s_int,
                      ax, ay, az):
    """Add one sub-triangle of a patch triangle (corners on the patch, their separations s) to the
    sums of :func:`sub_triangles_contact`: its part inside the overlap by the linear rule (clipped
    at s = 0 exactly), its force along its own normal; the sums, updated."""
    sx, sy, sz = _cross(xa, ya, za, xb, yb, zb, xc, yc, zc)
    length = math.sqrt(sx * sx + sy * sy + sz * sz)
    if not length > 0.0:
        return a_in, total, fx, fy, fz, mx, my, mz, s_int, ax, ay, az
    r = inside_integrals(xa, ya, za, xb, yb, zb, xc, yc, zc, 0.5 * length, -keff * sa, -keff * sb, -keff * sc, sa, sb,
                         sc)
    return (a_in + r[0], total + r[1], fx + r[1] * sx / length, fy + r[1] * sy / length, fz + r[1] * sz / length,
            mx + r[2], my + r[3], mz + r[4], s_int + r[5], ax + r[6], ay + r[7], az + r[8])


@device_fn(inline=True)
def sub_triangles_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, s0, s1, s2, kb, keff, a_in, total, fx, fy, fz, mx, my,
                          mz, s_int, ax, ay, az):
    """:func:`triangle_contact` of a patch triangle (B frame; s0..s2 its vertices' separations)
    from the sums of its sub-triangles (:func:`sub_triangle_sums`), whose corners lie on the patch:
    the contact's force is the sum's resultant, along its normal (the resultant's direction); its
    point is the sub-triangles' centre of pressure; area, depth and stiffness are as in
    :func:`triangle_contact` over the sub-triangles, with the depth scaled so that
    stiffness·|depth| = force."""
    nx, ny, nz, area = unit_normal(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    force = math.sqrt(fx * fx + fy * fy + fz * fz)
    if force > 0.0 and total > 0.0:
        nx = fx / force
        ny = fy / force
        nz = fz / force
        scale = force / total  # the resultant over the sum of the sub-triangles' forces
        mx *= scale
        my *= scale
        mz *= scale
        s_int *= scale
    else:
        force = total
    return _finish_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, s0, s1, s2, a_in, force, mx, my, mz,
                           s_int, ax, ay, az, kb, keff)


@device_fn
def subdivided_triangle_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, kb, keff, values, row, base, cuts):
    """:func:`triangle_contact` of a patch triangle (B frame) over which the patch bends or the
    pressure is far from linear — a kink of an exact field, where its nearest face changes, or the
    rim crosses it: its cuts² sub-triangles (``cuts`` <= SUB_CUTS per edge), whose corners lie on
    the patch, are integrated each by the linear rule (partial ones clipped at s = 0 exactly) with
    its own normal, and summed into one contact (:func:`sub_triangles_contact`). The points are
    ``values[row, base + SUB_VALUES·sub_index(i, j, cuts) + (0 .. 4)]`` = (x, y, z from vertex 0,
    eA, eB): the triangle's point i/cuts along edge 0→1 and j/cuts along 0→2, settled on the patch
    (the corners are the triangle's vertices). Piecewise-linear pressure on a piecewise-flat patch
    is integrated with an error about cuts² times smaller than by the whole triangle's rule."""
    a_in = total = mx = my = mz = s_int = ax = ay = az = 0.0
    fx = fy = fz = 0.0
    for i in range(cuts):
        for j in range(cuts - i):
            for down in range(2):
                if down == 1 and i + j == cuts - 1:
                    break
                # up: (i, j), (i + 1, j), (i, j + 1); down: (i + 1, j), (i + 1, j + 1), (i, j + 1)
                ka = base + SUB_VALUES * sub_index(i + down, j, cuts)
                kb_ = base + SUB_VALUES * sub_index(i + 1, j + down, cuts)
                kc = base + SUB_VALUES * sub_index(i, j + 1, cuts)
                xa, ya, za, sa = _sub_point(values, row, ka, x0, y0, z0)
                xb, yb, zb, sb = _sub_point(values, row, kb_, x0, y0, z0)
                xc, yc, zc, sc = _sub_point(values, row, kc, x0, y0, z0)
                a_in, total, fx, fy, fz, mx, my, mz, s_int, ax, ay, az = sub_triangle_sums(
                    xa, ya, za, sa, xb, yb, zb, sb, xc, yc, zc, sc, keff, a_in, total, fx, fy, fz, mx, my, mz, s_int,
                    ax, ay, az)
    s0 = _sub_point(values, row, base, x0, y0, z0)[3]
    s1 = _sub_point(values, row, base + SUB_VALUES * sub_index(cuts, 0, cuts), x0, y0, z0)[3]
    s2 = _sub_point(values, row, base + SUB_VALUES * sub_index(0, cuts, cuts), x0, y0, z0)[3]
    return sub_triangles_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, s0, s1, s2, kb, keff, a_in, total, fx, fy, fz,
                                 mx, my, mz, s_int, ax, ay, az)


@device_fn(inline=True)
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


@device_fn(inline=True)
def _write_triangle_vertex(triangle_f, o, v, pairs, p, x, y, z, ea, eb, keff):
    """Vertex ``v`` (B-local x, y, z) of row ``o`` of the optional triangle buffer: its world
    position, eA + eB and the pressure k_eff·max(0, −(eA + eB)) there."""
    wx, wy, wz = b_to_world(pairs, p, x, y, z)
    triangle_f[o, TF_VERTICES + 3 * v] = wx
    triangle_f[o, TF_VERTICES + 3 * v + 1] = wy
    triangle_f[o, TF_VERTICES + 3 * v + 2] = wz
    triangle_f[o, TF_DEPTH + v] = ea + eb
    triangle_f[o, TF_PRESSURE + v] = max(0.0, -keff * (ea + eb))


@device_fn(inline=True)
def emit_triangle(contact_f, contact_i, triangle_f, o, pairs, p, x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1, ea2,
                  eb0, eb1, eb2, kb, keff, curved, ea_c, eb_c):
    """Row ``o`` of the contact buffers for a patch triangle of pair ``p`` (B-local vertices and
    their eA, eB; accepted by :func:`triangle_is_contact`; ``curved``, ``ea_c``, ``eb_c`` as in
    :func:`triangle_contact`), in the world, and its vertices in the optional triangle buffer (a
    1-row dummy when it is off)."""
    (speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness,
     weight) = triangle_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1, ea2, eb0, eb1, eb2, kb, keff, curved,
                                ea_c, eb_c)
    write_triangle_contact(contact_f, contact_i, triangle_f, o, pairs, p, x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0, ea1,
                           ea2, eb0, eb1, eb2, keff, speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force,
                           stiffness, weight)


@device_fn(inline=True)
def write_triangle_contact(contact_f, contact_i, triangle_f, o, pairs, p, x0, y0, z0, x1, y1, z1, x2, y2, z2, ea0,
                           ea1, ea2, eb0, eb1, eb2, keff, speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure,
                           force, stiffness, weight):
    """Row ``o`` of the contact buffers from a patch triangle's contact (B frame, as
    :func:`triangle_contact` returns it), in the world, and the triangle's vertices in the optional
    triangle buffer."""
    wx, wy, wz = b_to_world(pairs, p, cx, cy, cz)
    wnx, wny, wnz = b_dir_to_world(pairs, p, nx, ny, nz)
    write_contact(contact_f, contact_i, o, wx, wy, wz, wnx, wny, wnz, area, depth, pressure, force, stiffness,
                  weight, pairs.i[p, PI_SHAPE_A], pairs.i[p, PI_SHAPE_B], pairs.i[p, PI_ENV], p, speculative)
    if triangle_f.shape[0] > o:
        _write_triangle_vertex(triangle_f, o, 0, pairs, p, x0, y0, z0, ea0, eb0, keff)
        _write_triangle_vertex(triangle_f, o, 1, pairs, p, x1, y1, z1, ea1, eb1, keff)
        _write_triangle_vertex(triangle_f, o, 2, pairs, p, x2, y2, z2, ea2, eb2, keff)


# -- packing on the host --------------------------------------------------------------------------

# Contacts fields stored in one column each
_F_COLUMNS = (("area", CF_AREA), ("depth", CF_DEPTH), ("pressure", CF_PRESSURE), ("force", CF_FORCE),
              ("stiffness", CF_STIFFNESS), ("weight", CF_WEIGHT))
_I_COLUMNS = (("shape_a", CI_SHAPE_A), ("shape_b", CI_SHAPE_B), ("env", CI_ENV), ("pair", CI_PAIR))


def contacts_from_buffers(f, i, shape_friction=None) -> Contacts:
    """A :class:`~hydro.contact.types.Contacts` table from packed host buffers (copied; its columns
    made when first read, :class:`PackedContacts`). ``shape_friction``: the shapes' friction
    (``Contacts.set_pair_materials``), else friction 0."""
    return PackedContacts(np.array(f, copy=True), np.array(i, copy=True), shape_friction)


class _Column:
    """A column of :class:`PackedContacts`, made on first read and then kept in the instance (a
    non-data descriptor: the instance's own attribute wins from then on, so a read costs what a
    plain attribute does, and assigning one replaces it as on any Contacts)."""

    __slots__ = ("name", "make")

    def __init__(self, name, make):
        self.name = name
        self.make = make

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = self.make(obj)
        obj.__dict__[self.name] = value
        return value


def _friction_columns(c, name):
    """Both friction columns at once (one pass over the rows); the one asked for."""
    n = len(c)
    d = c.__dict__
    m = c._shape_friction
    if m is None or n == 0:
        d["friction"] = np.zeros(n, np.float32)
        d["static_friction"] = np.zeros(n, np.float32)
    else:
        Contacts.set_pair_materials(c, m)  # reads shape_a/shape_b (made here) and sets both
    return d[name]


class PackedContacts(Contacts):
    """A :class:`~hydro.contact.types.Contacts` table over packed rows (``f`` (N, CF_COUNT)
    float32, ``i`` (N, CI_COUNT) int32, owned by the table): each column is made — a view of the
    rows, or computed (``speculative``, ``kind``, ``damping``, the friction columns) — the first
    time it is read, so a ``collide`` call whose table is never read, or only partly, costs
    nothing for the rest. Reading, assigning and every method work as on an eagerly built table,
    with the same values (``tests/test_pipeline.py`` compares them column by column)."""

    def __init__(self, f, i, shape_friction=None):  # noqa: super().__init__ would make every column
        d = self.__dict__
        d["_f"] = f
        d["_i"] = i
        d["_shape_friction"] = shape_friction

    def __len__(self) -> int:
        return len(self._f)

    def set_pair_materials(self, shape_friction) -> None:
        # the friction columns, when read, from these shapes' friction
        self.__dict__.pop("friction", None)
        self.__dict__.pop("static_friction", None)
        self.__dict__["_shape_friction"] = np.ascontiguousarray(shape_friction, dtype=np.float64)

    def materialize(self) -> "PackedContacts":
        """Make every column now (returns the table)."""
        for name in CONTACT_FIELDS:
            getattr(self, name)
        return self


def _f_column(lo, hi=None):
    return (lambda c: c._f[:, lo:hi]) if hi is not None else (lambda c: c._f[:, lo])


for _name, _make in (("point", _f_column(CF_POINT, CF_POINT + 3)), ("normal", _f_column(CF_NORMAL, CF_NORMAL + 3)),
                     ("area", _f_column(CF_AREA)), ("depth", _f_column(CF_DEPTH)),
                     ("pressure", _f_column(CF_PRESSURE)), ("force", _f_column(CF_FORCE)),
                     ("stiffness", _f_column(CF_STIFFNESS)), ("weight", _f_column(CF_WEIGHT)),
                     ("shape_a", lambda c: c._i[:, CI_SHAPE_A]), ("shape_b", lambda c: c._i[:, CI_SHAPE_B]),
                     ("env", lambda c: c._i[:, CI_ENV]), ("pair", lambda c: c._i[:, CI_PAIR]),
                     ("speculative", lambda c: c._i[:, CI_SPECULATIVE] != 0),
                     ("kind", lambda c: np.zeros(len(c), np.int32)),
                     ("damping", lambda c: np.zeros(len(c), np.float32)),
                     ("friction", lambda c: _friction_columns(c, "friction")),
                     ("static_friction", lambda c: _friction_columns(c, "static_friction"))):
    setattr(PackedContacts, _name, _Column(_name, _make))
del _name, _make


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
