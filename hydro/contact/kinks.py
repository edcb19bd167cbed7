"""Stage 5, kinks: a patch triangle across which one exact field changes face, integrated exactly.

Marching cubes' triangles have their vertices on the patch. Where a polyhedron's nearest face
changes across a triangle (a mesh's convex edge, a box's edge), that field is the larger of two
face planes there, so the patch over the triangle is two flat pieces meeting along a *kink* and the
pressure is linear on each: the triangle's linear rule misses the kink (−3.5 % on a ring of flat
facets on a box at 64³). Such a triangle used to be subdivided into SUB_CUTS² sub-triangles whose
corners were settled on the patch one by one (a Newton step of both fields each: most of the cost
of a faceted mesh's patch), still linear across the kink inside each.

Here (:func:`kink_contact`) the kink is located instead:

- at each vertex, each field's face plane: a mesh's nearest triangle's (its plane from the stored
  corners, as the exact distance uses them), a shape of planes' largest (a box), accepted where it
  *is* the field there (they agree to ``KINK_TOLERANCE`` voxels: the nearest point lies inside that
  face) and no other face is within ``KINK_MARGIN`` voxels (a vertex on a kink could take either);
- the triangle is kinked when one vertex's planes differ from the other two's (which agree) in one
  field only; the kink crosses the lone vertex's two edges where, moved along the triangle's
  normal onto the interface kA·eA = kB·eB (continuous interface), that field's two planes are
  equal: two linear equations per edge;
- the fields are evaluated exactly at those two points, and the kink is taken only where both
  equal the planes there (the same agreement); else the triangle is subdivided as before (a third
  face, an edge's own region, a reflex edge's curved field, the switched interface).

The three sub-triangles — the lone vertex's corner, and the other side's quadrilateral as two —
then lie each on one flat piece of the patch with linear pressure, so the linear rule (clipped at
s = 0 exactly) integrates them exactly; they are summed into the triangle's one contact as
subdivided triangles are (:func:`~.contacts.sub_triangles_contact`). Five evaluations of each
field instead of up to 24 Newton steps, and exact where subdivision was only closer.
"""

from __future__ import annotations


from ..backend import device_fn
from ..geometry.primitives import BOX
from ..sdf.layout import I_PLANE_COUNT, I_PRIMITIVE
from ..sdf.sample import corner_plane, field_phi_hint, mesh_face_alone
from .contacts import sub_triangle_sums, sub_triangles_contact, unit_normal
from .face_bounds import plane_to_b, shape_plane
from .interface import INTERFACE_CONTINUOUS
from .pair_layout import PF_KA, PI_SDF_A, PI_SDF_B
from .pair_setup import b_to_a

#: A face plane is a field's value at a point, and two planes are one over a triangle, when they
#: agree to this many voxels. A mesh's exact distance and its nearest triangle's plane come from
#: the same corners (they agree to ~1e-13 voxel where the nearest point lies inside the face), but
#: the triangles of one flat face, their corners stored as float32, lie on planes that differ by
#: their rounding (~1e-8 m at 0.1 m: ~4e-6 of a 3 mm voxel); the contact moves by about this
#: fraction of a voxel's pressure where it is taken
KINK_TOLERANCE = 1e-5
#: A vertex whose nearest face is not the only one within this many voxels (it lies on a kink)
#: could take either face's plane: the triangle is subdivided instead
KINK_MARGIN = 1e-6


@device_fn(inline=True)
def _field_plane(pairs, p, sdf, s, side, t, other, x, y, z, phi, tol, margin):
    """(whether found, nx, ny, nz, c): in B's frame, the face plane n·x + c of SDF ``s`` (shape
    ``side``: 0 A, 1 B) that is its field at the B-local point (x, y, z), where the field is
    ``phi``: a mesh's triangle ``t`` (its nearest there; −1: none; ``other``: the search's lower
    bound on every other triangle's distance), or a box's largest face plane there (no other
    primitive); accepted where it agrees with ``phi`` to ``tol`` and (``margin`` >= 0) no other face
    comes within ``margin`` of it: proven by ``other`` when it lies beyond, else by a pass over
    the cell's list (:func:`~hydro.sdf.sample.mesh_face_alone`)."""
    nx = ny = nz = c = 0.0
    if sdf.params_i[s, I_PRIMITIVE] < 0:
        if t < 0:
            return False, nx, ny, nz, c
        lx, ly, lz, lc = corner_plane(sdf.mesh_tri, t)
        if lx == 0.0 and ly == 0.0 and lz == 0.0:
            return False, nx, ny, nz, c
        if margin >= 0.0 and not other > abs(phi) + margin:
            # another face may be as near (to the margin): the point could take either plane
            qx, qy, qz = x, y, z
            if side == 0:
                qx, qy, qz = b_to_a(pairs, p, x, y, z)
            if not mesh_face_alone(s, qx, qy, qz, sdf, t, abs(phi), margin, tol):
                return False, nx, ny, nz, c
        nx, ny, nz, c = plane_to_b(pairs.f, p, side, lx, ly, lz, lc)
    elif sdf.params_i[s, I_PRIMITIVE] == BOX:
        best = second = -1e300
        for k in range(sdf.params_i[s, I_PLANE_COUNT]):
            kx, ky, kz, kc = shape_plane(pairs.f, p, sdf, s, side, k)
            value = kx * x + ky * y + kz * z + kc
            if value > best:
                second = best
                best = value
                nx, ny, nz, c = kx, ky, kz, kc
            elif value > second:
                second = value
        if best == -1e300 or not best - second > margin:
            return False, nx, ny, nz, c
    else:  # another primitive: a curved field, or planes the route does not model (a cylinder's caps)
        return False, nx, ny, nz, c
    return abs(nx * x + ny * y + nz * z + c - phi) <= tol, nx, ny, nz, c


@device_fn(inline=True)
def _planes_at(p, pairs, sdf, x, y, z, tol, margin):
    """(whether both found, A's plane, B's plane, each (nx, ny, nz, c) in B's frame) at the B-local
    point (x, y, z), from both exact fields there (:func:`_field_plane`)."""
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    ax, ay, az = b_to_a(pairs, p, x, y, z)
    phi_a, ta, bound_a = field_phi_hint(sa, ax, ay, az, sdf, 1, -1, 0.0)
    phi_b, tb, bound_b = field_phi_hint(sb, x, y, z, sdf, 1, -1, 0.0)
    ok_a, anx, any_, anz, ac = _field_plane(pairs, p, sdf, sa, 0, ta, bound_a, x, y, z, phi_a, tol, margin)
    ok_b, bnx, bny, bnz, bc = _field_plane(pairs, p, sdf, sb, 1, tb, bound_b, x, y, z, phi_b, tol, margin)
    return ok_a and ok_b, anx, any_, anz, ac, bnx, bny, bnz, bc


@device_fn(inline=True)
def _same_plane(ax, ay, az, ac, bx, by, bz, bc, x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, h, tol):
    """Whether two planes are one over a triangle (unit normal n) and a voxel h either side of it:
    they agree to ``tol`` at its corners and a voxel along n from its first."""
    dx = ax - bx
    dy = ay - by
    dz = az - bz
    dc = ac - bc
    return (abs(dx * x0 + dy * y0 + dz * z0 + dc) <= tol and abs(dx * x1 + dy * y1 + dz * z1 + dc) <= tol
            and abs(dx * x2 + dy * y2 + dz * z2 + dc) <= tol and abs(dx * nx + dy * ny + dz * nz) * h <= tol)


@device_fn(inline=True)
def _agreement(aix, aiy, aiz, aic, ajx, ajy, ajz, ajc, bix, biy, biz, bic, bjx, bjy, bjz, bjc, x0, y0, z0, x1, y1,
               z1, x2, y2, z2, nx, ny, nz, h, tol):
    """Which fields two vertices share a plane in over the triangle (:func:`_same_plane`): bit 0 A
    (planes ai, aj), bit 1 B (bi, bj)."""
    bits = 0
    if _same_plane(aix, aiy, aiz, aic, ajx, ajy, ajz, ajc, x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, h, tol):
        bits |= 1
    if _same_plane(bix, biy, biz, bic, bjx, bjy, bjz, bjc, x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, h, tol):
        bits |= 2
    return bits


@device_fn(inline=True)
def _kink_on_edge(x0, y0, z0, x1, y1, z1, gx, gy, gz, gc, fx, fy, fz, fc, h):
    """The point of the kink line — where the kink plane g·x + gc = 0 meets the interface plane
    f·x + fc = 0 — nearest the edge x0 → x1: (whether its nearest edge point lies on the edge and
    within a voxel of it, x, y, z). It depends on the edge and the planes only, so the two
    triangles that share the edge take the same point (the pieces meet without gap or overlap)."""
    # the line's direction, and its point in the plane through x0 across it
    lx = gy * fz - gz * fy
    ly = gz * fx - gx * fz
    lz = gx * fy - gy * fx
    ll = lx * lx + ly * ly + lz * lz
    if not ll > 1e-18 * (gx * gx + gy * gy + gz * gz) * (fx * fx + fy * fy + fz * fz):
        return False, 0.0, 0.0, 0.0
    # x = x0 + α g + β f + γ l with l ⟂ g, f: γ = 0 (the plane through x0), α and β from the planes
    g0 = gx * x0 + gy * y0 + gz * z0 + gc
    f0 = fx * x0 + fy * y0 + fz * z0 + fc
    gg = gx * gx + gy * gy + gz * gz
    gf = gx * fx + gy * fy + gz * fz
    ff = fx * fx + fy * fy + fz * fz
    det = gg * ff - gf * gf  # = ll
    alpha = (-g0 * ff + f0 * gf) / det
    beta = (-f0 * gg + g0 * gf) / det
    px = x0 + alpha * gx + beta * fx
    py = y0 + alpha * gy + beta * fy
    pz = z0 + alpha * gz + beta * fz
    # the nearest points of the line p + s·l and the edge x0 + u·e
    ex = x1 - x0
    ey = y1 - y0
    ez = z1 - z0
    wx = px - x0
    wy = py - y0
    wz = pz - z0
    b = lx * ex + ly * ey + lz * ez
    c = ex * ex + ey * ey + ez * ez
    d = lx * wx + ly * wy + lz * wz
    e = ex * wx + ey * wy + ez * wz
    denom = ll * c - b * b
    if not denom > 1e-12 * ll * c:
        return False, 0.0, 0.0, 0.0  # the line runs along the edge
    sl = (b * e - c * d) / denom
    u = (ll * e - b * d) / denom
    kx = px + sl * lx
    ky = py + sl * ly
    kz = pz + sl * lz
    gap2 = (kx - x0 - u * ex) ** 2 + (ky - y0 - u * ey) ** 2 + (kz - z0 - u * ez) ** 2
    if not (0.0 <= u <= 1.0 and gap2 <= h * h):
        return False, 0.0, 0.0, 0.0
    return True, kx, ky, kz


@device_fn(inline=False)
def kink_contact(p, pairs, sdf, interface, ma, mb, kb, keff, h, x0, y0, z0, x1, y1, z1, x2, y2, z2):
    """The contact of a patch triangle (B-local vertices on the patch) of pair ``p`` whose two fields
    are both exact, when one field changes face plane across it (see the module docstring):
    (whether taken, then :func:`~.contacts.triangle_contact`'s values); not taken: subdivide it."""
    tol = KINK_TOLERANCE * h
    no = (False, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if interface != INTERFACE_CONTINUOUS:
        return no
    ka = pairs.f[p, PF_KA]
    margin = KINK_MARGIN * h
    ok0, a0x, a0y, a0z, a0c, b0x, b0y, b0z, b0c = _planes_at(p, pairs, sdf, x0, y0, z0, tol, margin)
    ok1, a1x, a1y, a1z, a1c, b1x, b1y, b1z, b1c = _planes_at(p, pairs, sdf, x1, y1, z1, tol, margin)
    ok2, a2x, a2y, a2z, a2c, b2x, b2y, b2z, b2c = _planes_at(p, pairs, sdf, x2, y2, z2, tol, margin)
    if not (ok0 and ok1 and ok2):
        return no
    nx, ny, nz, area = unit_normal(x0, y0, z0, x1, y1, z1, x2, y2, z2)
    # the lone vertex r (its planes differ from the other two's, which agree), in one field only;
    # same[k]: vertices k and k + 1 share A's plane (bit 0) and B's (bit 1)
    same0 = _agreement(a0x, a0y, a0z, a0c, a1x, a1y, a1z, a1c, b0x, b0y, b0z, b0c, b1x, b1y, b1z, b1c,
                       x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, h, tol)
    same1 = _agreement(a1x, a1y, a1z, a1c, a2x, a2y, a2z, a2c, b1x, b1y, b1z, b1c, b2x, b2y, b2z, b2c,
                       x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, h, tol)
    same2 = _agreement(a2x, a2y, a2z, a2c, a0x, a0y, a0z, a0c, b2x, b2y, b2z, b2c, b0x, b0y, b0z, b0c,
                       x0, y0, z0, x1, y1, z1, x2, y2, z2, nx, ny, nz, h, tol)
    # the lone vertex: the pair opposite it agrees in both fields, each of its own pairs in one field
    # only, the same one (the other field one plane over the triangle)
    if same1 == 3 and same0 == same2 and (same0 == 1 or same0 == 2):
        r = 0
    elif same2 == 3 and same0 == same1 and (same0 == 1 or same0 == 2):
        r = 1
    elif same0 == 3 and same1 == same2 and (same1 == 1 or same1 == 2):
        r = 2
    else:
        return no  # one plane each (the rim, a curve), or more than two faces
    a_changes = (same1 if r == 2 else same0) == 2  # the lone vertex's pairs agree in B only: A changes
    if r == 1:
        x0, y0, z0, x1, y1, z1, x2, y2, z2 = x1, y1, z1, x2, y2, z2, x0, y0, z0
        a0x, a0y, a0z, a0c, a1x, a1y, a1z, a1c = a1x, a1y, a1z, a1c, a2x, a2y, a2z, a2c
        b0x, b0y, b0z, b0c, b1x, b1y, b1z, b1c = b1x, b1y, b1z, b1c, b2x, b2y, b2z, b2c
    elif r == 2:
        x0, y0, z0, x1, y1, z1, x2, y2, z2 = x2, y2, z2, x0, y0, z0, x1, y1, z1
        a0x, a0y, a0z, a0c, a1x, a1y, a1z, a1c = a2x, a2y, a2z, a2c, a0x, a0y, a0z, a0c
        b0x, b0y, b0z, b0c, b1x, b1y, b1z, b1c = b2x, b2y, b2z, b2c, b0x, b0y, b0z, b0c
    # (planes 0: the lone vertex's; 1: the other two's.) The kink: where the changing field's
    # planes are equal
    if a_changes:
        gx, gy, gz, gc = a0x - a1x, a0y - a1y, a0z - a1z, a0c - a1c
    else:
        gx, gy, gz, gc = b0x - b1x, b0y - b1y, b0z - b1z, b0c - b1c
    # the interface kA·(a − mA) − kB·(b − mB) = 0 with the lone vertex's planes (the other's agree on the kink)
    fx = ka * a0x - kb * b0x
    fy = ka * a0y - kb * b0y
    fz = ka * a0z - kb * b0z
    fc = ka * (a0c - ma) - kb * (b0c - mb)
    on1, k1x, k1y, k1z = _kink_on_edge(x0, y0, z0, x1, y1, z1, gx, gy, gz, gc, fx, fy, fz, fc, h)
    on2, k2x, k2y, k2z = _kink_on_edge(x0, y0, z0, x2, y2, z2, gx, gy, gz, gc, fx, fy, fz, fc, h)
    if not (on1 and on2):
        return no
    # the fields at the kink's ends must be those planes: no third face, edge or curve between
    for e in range(2):
        kx, ky, kz = (k1x, k1y, k1z) if e == 0 else (k2x, k2y, k2z)
        ok, cax, cay, caz, cac, cbx, cby, cbz, cbc = _planes_at(p, pairs, sdf, kx, ky, kz, tol, -1.0)
        if not ok:
            return no
        # (each field's plane there is one of the two of the vertices: both agree with it)
        if abs(a0x * kx + a0y * ky + a0z * kz + a0c - (cax * kx + cay * ky + caz * kz + cac)) > tol:
            return no
        if abs(b0x * kx + b0y * ky + b0z * kz + b0c - (cbx * kx + cby * ky + cbz * kz + cbc)) > tol:
            return no
    # separations s = eA + eB: the vertices' from their planes, the kink's from either side's
    s0 = a0x * x0 + a0y * y0 + a0z * z0 + a0c - ma + b0x * x0 + b0y * y0 + b0z * z0 + b0c - mb
    s1 = a1x * x1 + a1y * y1 + a1z * z1 + a1c - ma + b1x * x1 + b1y * y1 + b1z * z1 + b1c - mb
    s2 = a1x * x2 + a1y * y2 + a1z * z2 + a1c - ma + b1x * x2 + b1y * y2 + b1z * z2 + b1c - mb
    sk1 = a0x * k1x + a0y * k1y + a0z * k1z + a0c - ma + b0x * k1x + b0y * k1y + b0z * k1z + b0c - mb
    sk2 = a0x * k2x + a0y * k2y + a0z * k2z + a0c - ma + b0x * k2x + b0y * k2y + b0z * k2z + b0c - mb
    a_in = total = fx = fy = fz = mx = my = mz = s_int = ax = ay = az = 0.0
    a_in, total, fx, fy, fz, mx, my, mz, s_int, ax, ay, az = sub_triangle_sums(
        x0, y0, z0, s0, k1x, k1y, k1z, sk1, k2x, k2y, k2z, sk2, keff, a_in, total, fx, fy, fz, mx, my, mz, s_int, ax,
        ay, az)
    a_in, total, fx, fy, fz, mx, my, mz, s_int, ax, ay, az = sub_triangle_sums(
        k1x, k1y, k1z, sk1, x1, y1, z1, s1, x2, y2, z2, s2, keff, a_in, total, fx, fy, fz, mx, my, mz, s_int, ax,
        ay, az)
    a_in, total, fx, fy, fz, mx, my, mz, s_int, ax, ay, az = sub_triangle_sums(
        k1x, k1y, k1z, sk1, x2, y2, z2, s2, k2x, k2y, k2z, sk2, keff, a_in, total, fx, fy, fz, mx, my, mz, s_int, ax,
        ay, az)
    (speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness,
     weight) = sub_triangles_contact(x0, y0, z0, x1, y1, z1, x2, y2, z2, s0, s1, s2, kb, keff, a_in, total, fx, fy, fz,
                                     mx, my, mz, s_int, ax, ay, az)
    return True, speculative, cx, cy, cz, nx, ny, nz, area, depth, pressure, force, stiffness, weight
