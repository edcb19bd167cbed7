"""Stage 4b, axial route — a cylinder or cone against a box or convex mesh: the patch integrated
exactly around the round shape's axis.

Inside a cylinder or a cone φ is the largest of its features: its caps (planes) and its side, whose
field is affine in (ρ, z) around the axis (a cylinder: ρ − r; a cone: the distance to its slant,
(2hh·ρ + r·(z − hh))/L). Inside the other shape φ is the largest of its planes. Every piece of the
patch lies where one feature f of the round shape and one plane j of the other are the largest,
on kr·φ_f = kq·b_j, which around the round shape's axis (local u = (ρ cos θ, ρ sin θ, z)) is

    z = z0 + ρ·z1(θ),   z1(θ) = α + β cos θ + γ sin θ

(:func:`~hydro.contact.pair_setup.axial_slope`): a plane for a cap (α = 0), a cone with its apex on
the axis for the side (the rim band next to the cap, where the side is nearer). Along the ray at
angle θ every condition that bounds the piece is affine in ρ (another plane or feature is not
larger, the gap band s = φ_f + b_j <= gap, ρ bounded), so the piece is an interval [ρ_lo, ρ_hi]
(:func:`_ray_interval`); the area element is ρ·J(θ) dρ dθ with J = √(1 + z1² + z1'²) and the unit
normal depends on θ only. The pressure and the separation are affine in ρ, so two Gauss points in
ρ integrate area, force, moment and depth exactly over the part inside the overlap (s <= 0; a
part wholly in the gap band is a speculative contact, as a triangle would be); θ is integrated by 3-point Gauss on
``AXIAL_PANELS × polygon_cells`` panels, each split where an end of the interval changes formula
(the bound that sets it: :func:`_next_kink`, by bisection, up to ``MAX_KINKS`` per panel): exact
where the ends are constant in θ — a cap resting on a face, the rim band around it, whatever the
stiffness ratio — and of 6th order between kinks where they curve (a line across a tilted cap:
1e-6 at the default ``polygon_cells``).

Each panel is cut into m radial cells (m from the panel's longest interval over the smaller
shape's shortest edge / ``polygon_cells``, at most 8, as the polygons are cut) and each cell into
its two parameter triangles (t <= τ and t >= τ, t the fraction along the cell, τ along the panel):
one contact each, whose area, force vector ∫p·n dA, centre of pressure and depth are the exact
integrals over that part of the true (curved) surface; its triangle in the optional triangle
buffer is the part's corners, for display.

Pair setup sends a pair here (:data:`~hydro.contact.pair_setup.ROUTE_AXIAL`) when one shape is a
cylinder or cone and the other has planes, neither has a contact margin, and every (feature,
plane) pair that can hold a piece is no steeper than
:data:`~hydro.contact.pair_setup.AXIAL_SLOPE_MAX` (a cylinder lying on its side takes the grid).
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..sdf.layout import F_PRIMITIVE, I_PLANE_COUNT
from .contacts import DEGENERATE_AREA, _write_triangle_vertex, write_contact
from .pair_setup import (MAX_POLYTOPE_PLANES, PF_GAP, PF_KA, PF_KB, PF_KEFF, PF_VOXEL_B, PI_ENV, PI_SDF_A, PI_SDF_B,
                         PI_SHAPE_A, PI_SHAPE_B,
                         axial_slope, b_dir_to_world, b_to_world, is_round, overlap_box, possible_planes,
                         round_feature, round_features, round_frame, round_plane, shape_box)

#: θ panels per ``HydroelasticConfig.polygon_cells`` (24 at the default 6)
AXIAL_PANELS = 4
MAX_RADIAL = 8  # radial cells per panel
MAX_KINKS = 3  # kinks located per panel (where an end of the ray interval changes formula)
KINK_STEPS = 40  # bisection halvings locating one (a panel / 2⁴⁰)
#: Where a panel's node intervals start in the pair's scratch row (after the planes)
AXIAL_NODES = 4 * MAX_POLYTOPE_PLANES
AXIAL_SCRATCH = AXIAL_NODES + 2 * 3 * (MAX_KINKS + 1)
_G3X = math.sqrt(0.6)  # 3-point Gauss–Legendre on [−1, 1]: nodes 0, ±√(3/5), weights 8/9, 5/9
_G2X = 1.0 / math.sqrt(3.0)  # 2-point: ±1/√3, weights 1


@device_fn(inline=True)
def _gauss3(g):
    """Node (on [0, 1]) and weight (summing to 1) ``g`` of 3-point Gauss–Legendre."""
    if g == 0:
        return 0.5 - 0.5 * _G3X, 5.0 / 18.0
    if g == 1:
        return 0.5, 8.0 / 18.0
    return 0.5 + 0.5 * _G3X, 5.0 / 18.0


@device_fn(inline=True)
def _bound(lo, hi, id_lo, id_hi, v0, v1, ident):
    """[lo, hi] cut by v0 + v1·ρ <= 0, with the identity of the bound that sets each end."""
    if v1 > 0.0:
        r = -v0 / v1
        if r < hi:
            hi = r
            id_hi = ident
    elif v1 < 0.0:
        r = -v0 / v1
        if r > lo:
            lo = r
            id_lo = ident
    elif v0 > 0.0:
        hi = -1.0
        id_hi = ident
    return lo, hi, id_lo, id_hi


@device_fn(inline=False)
def _ray_interval(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, z1, c, s, rho_max, gap):
    """[ρ_lo, ρ_hi] of the piece (round feature f = (sr, sz, s0), plane j = (m, cj) of shape sq,
    both in the round shape's frame; shape sq's planes in that frame in ``scratch[p]``) on the ray
    at angle θ (c = cos θ, s = sin θ), where the piece is z = z0 + z1·ρ; empty when ρ_hi <= ρ_lo.
    Third: which bounds set the two ends (a signature that changes where the ends' formulas do —
    a kink in θ), −1 when empty."""
    lo = 0.0
    hi = rho_max
    id_lo = 0
    id_hi = 1
    # plane j is the other shape's largest: m_k·u + c_k − (m_j·u + c_j) <= 0
    for k in range(sdf.params_i[sq, I_PLANE_COUNT]):
        if k != j and hi > lo:
            kx = scratch[p, 4 * k]
            ky = scratch[p, 4 * k + 1]
            kz = scratch[p, 4 * k + 2]
            kc = scratch[p, 4 * k + 3]
            lo, hi, id_lo, id_hi = _bound(lo, hi, id_lo, id_hi, (kz - mz) * z0 + kc - cj,
                                          (kx - mx) * c + (ky - my) * s + (kz - mz) * z1, 4 + k)
    # feature f is the round shape's largest
    for g in range(sdf.params_i[sr_, I_PLANE_COUNT] + 1):
        if g != f and hi > lo:
            gr, gz, g0 = round_feature(sdf, sr_, g)
            lo, hi, id_lo, id_hi = _bound(lo, hi, id_lo, id_hi, (gz - sz) * z0 + g0 - s0, (gr - sr) + (gz - sz) * z1,
                                          4 + MAX_POLYTOPE_PLANES + g)
    # within the gap band: φ_f + b_j <= gap
    if hi > lo:
        lo, hi, id_lo, id_hi = _bound(lo, hi, id_lo, id_hi, (sz + mz) * z0 + s0 + cj - gap,
                                      sr + sz * z1 + mx * c + my * s + mz * z1, 2)
    sig = -1 if hi <= lo else id_lo * 1024 + id_hi
    return lo, hi, sig


@device_fn(inline=False)
def _signature(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga, theta, rho_max, gap):
    c = math.cos(theta)
    s = math.sin(theta)
    return _ray_interval(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0,
                         al + be * c + ga * s, c, s, rho_max, gap)[2]


@device_fn(inline=False)
def _next_kink(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga, ta, tb, rho_max,
               gap):
    """The first angle after ``ta`` (up to ``tb``) where the interval's ends change formula, found
    by bisection (KINK_STEPS halvings) when the signatures at ``ta`` and ``tb`` differ; ``tb``
    when they agree."""
    sa = _signature(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga, ta, rho_max,
                    gap)
    if _signature(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga, tb,
                  rho_max, gap) == sa:
        return tb
    lo = ta
    hi = tb
    for _ in range(KINK_STEPS):
        mid = 0.5 * (lo + hi)
        if _signature(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga, mid,
                      rho_max, gap) == sa:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@device_fn(inline=True)
def _to_b(frame, x, y, z):
    """A round-frame point in B's frame (``frame`` from :func:`round_frame`)."""
    ox, oy, oz, e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = frame
    return (ox + x * e0x + y * e1x + z * e2x, oy + x * e0y + y * e1y + z * e2y, oz + x * e0z + y * e1z + z * e2z)


@device_fn(inline=True)
def _dir_to_b(frame, x, y, z):
    ox, oy, oz, e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = frame
    return x * e0x + y * e1x + z * e2x, x * e0y + y * e1y + z * e2y, x * e0z + y * e1z + z * e2z


@device_fn(inline=False)
def _corner(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga, theta, t, rho_max, gap):
    """The point of the piece at angle θ and fraction t along its ray interval (round frame), with
    the round feature's and the plane's values there: (x, y, z, φ_f, b_j)."""
    c = math.cos(theta)
    s = math.sin(theta)
    z1 = al + be * c + ga * s
    lo, hi, sig = _ray_interval(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, z1, c, s,
                                rho_max, gap)
    if hi < lo:
        hi = lo
    rho = lo + t * (hi - lo)
    z = z0 + z1 * rho
    x = rho * c
    y = rho * s
    return x, y, z, sr * rho + sz * z + s0, mx * x + my * y + mz * z + cj


@device_fn(inline=True)
def _node(node, t0, k1, k2, k3, t4):
    """Gauss node ``node`` (3 per piece) of a panel [t0, t4] cut at k1 <= k2 <= k3: (θ, weight);
    weight 0 for a piece of no width."""
    piece = node // 3
    a = t0 if piece == 0 else k1 if piece == 1 else k2 if piece == 2 else k3
    b = k1 if piece == 0 else k2 if piece == 1 else k3 if piece == 2 else t4
    tg, wg = _gauss3(node - 3 * piece)
    return a + tg * (b - a), wg * (b - a)


# Model: pairs (PairView), sdf (SDFView); Setting: cells (HydroelasticConfig.polygon_cells)
# Data out: contact_f, contact_i, triangle_f rows from o (below capacity) when ``write``
@device_fn(inline=False)
def axial_contacts(p, write, pairs, sdf, scratch, cells, o, contact_f, contact_i, triangle_f, capacity):
    """The contacts of axial-route pair ``p`` (written from row ``o`` when ``write``); their count.
    ``scratch[p]``: the other shape's planes in the round shape's frame (4 per plane), then each
    node's ray interval of the panel at hand (``AXIAL_NODES`` on, 2 per node)."""
    pair_f = pairs.f
    sa = pairs.i[p, PI_SDF_A]
    sb = pairs.i[p, PI_SDF_B]
    r_side = 0 if is_round(sdf, sa) else 1
    sr_ = sa if r_side == 0 else sb
    sq = sb if r_side == 0 else sa
    kb = pair_f[p, PF_KB]
    kr = pair_f[p, PF_KA] if r_side == 0 else kb
    kq = kb if r_side == 0 else pair_f[p, PF_KA]
    keff = pair_f[p, PF_KEFF]
    h = pair_f[p, PF_VOXEL_B]
    min_area = DEGENERATE_AREA * h * h
    gap = pair_f[p, PF_GAP]
    ok, cx, cy, cz, hx, hy, hz = overlap_box(pair_f, p, sdf, sa, sb, gap)
    if not ok:
        return 0
    mask = possible_planes(pair_f, p, sdf, sq, 1 - r_side, cx, cy, cz, hx, hy, hz)
    features = round_features(pair_f, p, sdf, sr_, sq, r_side, gap)
    frame = round_frame(pair_f, p, r_side)
    for k in range(sdf.params_i[sq, I_PLANE_COUNT]):
        kx, ky, kz, kc = round_plane(pair_f, p, sdf, sq, 1 - r_side, k, r_side)
        scratch[p, 4 * k] = kx
        scratch[p, 4 * k + 1] = ky
        scratch[p, 4 * k + 2] = kz
        scratch[p, 4 * k + 3] = kc
    # the piece lies where the side's field is at most the gap (on the interface both fields share
    # their sign and sum to at most the gap) above the base (z >= −hh − gap)
    radius = sdf.params_f[sr_, F_PRIMITIVE]
    hh = sdf.params_f[sr_, F_PRIMITIVE + 1]
    side_r, side_z, side_0 = round_feature(sdf, sr_, sdf.params_i[sr_, I_PLANE_COUNT])
    rho_max = (gap - side_0 + abs(side_z) * (hh + gap)) / side_r
    qcx, qcy, qcz, qhx, qhy, qhz = shape_box(pair_f, p, sdf, sq, 1)
    edge = 2.0 * min(min(radius, hh), min(qhx, min(qhy, qhz))) / cells
    panels = AXIAL_PANELS * int(cells)
    dth = 2.0 * math.pi / panels
    n_out = 0
    for j in range(sdf.params_i[sq, I_PLANE_COUNT]):
        if (mask >> j) & 1 == 0:
            continue
        mx, my, mz, cj = round_plane(pair_f, p, sdf, sq, 1 - r_side, j, r_side)
        for f in range(sdf.params_i[sr_, I_PLANE_COUNT] + 1):
            if (features >> f) & 1 == 0:
                continue
            sr, sz, s0 = round_feature(sdf, sr_, f)
            d, al, be, ga = axial_slope(kr, kq, sr, sz, mx, my, mz)
            if d == 0.0:  # no surface (pair setup sent no steeper piece here)
                continue
            z0 = (kq * cj - kr * s0) / d
            # the normal from A toward B: ∇(kr·φ_f − kq·b_j) has z-component d
            sign = 1.0 if (d > 0.0) == (r_side == 0) else -1.0
            for k in range(panels):
                # the panel's pieces between kinks (at most MAX_KINKS + 1), each integrated by 3-point
                # Gauss: k1..k3 the kinks, or the panel's end
                t_end = (k + 1) * dth
                k1 = _next_kink(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be, ga,
                                k * dth, t_end, rho_max, gap)
                k2 = t_end
                k3 = t_end
                if k1 < t_end:
                    k2 = _next_kink(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al, be,
                                    ga, k1, t_end, rho_max, gap)
                    if k2 < t_end:
                        k3 = _next_kink(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al,
                                        be, ga, k2, t_end, rho_max, gap)
                longest = 0.0
                for node in range(3 * (MAX_KINKS + 1)):
                    th, wth = _node(node, k * dth, k1, k2, k3, t_end)
                    if wth <= 0.0:
                        continue
                    c = math.cos(th)
                    s = math.sin(th)
                    lo, hi, sig = _ray_interval(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj,
                                                z0, al + be * c + ga * s, c, s, rho_max, gap)
                    scratch[p, AXIAL_NODES + 2 * node] = lo
                    scratch[p, AXIAL_NODES + 2 * node + 1] = hi
                    longest = max(longest, hi - lo)
                if longest <= 0.0:
                    continue
                m = min(MAX_RADIAL, max(1, int(math.ceil(longest / edge))))
                for cell in range(2 * m):
                    q = cell >> 1
                    upper = (cell & 1) == 1
                    area = 0.0  # over the part inside the overlap (s <= 0)
                    fp = 0.0
                    s_int = 0.0
                    fx = fy = fz = 0.0
                    mxp = myp = mzp = 0.0
                    ax = ay = az = 0.0
                    band = 0.0  # over the whole part, gap band included: area, ∫s dA, ∫x dA
                    band_s = 0.0
                    bx = by = bz = 0.0
                    for node in range(3 * (MAX_KINKS + 1)):
                        th, wth = _node(node, k * dth, k1, k2, k3, t_end)
                        if wth <= 0.0:
                            continue
                        tg = th / dth - k  # the fraction along the panel (the parameter triangles' τ)
                        c = math.cos(th)
                        s = math.sin(th)
                        z1 = al + be * c + ga * s
                        lo = scratch[p, AXIAL_NODES + 2 * node]
                        hi = scratch[p, AXIAL_NODES + 2 * node + 1]
                        if hi <= lo:
                            continue
                        # this part's fraction of the interval: t in [q/m, (q + tg)/m] or [(q + tg)/m, (q + 1)/m]
                        ta = (q + tg) / m if upper else q / m
                        tb = (q + 1.0) / m if upper else (q + tg) / m
                        ra = lo + ta * (hi - lo)
                        rb = lo + tb * (hi - lo)
                        z1p = -be * s + ga * c
                        jac = math.sqrt(1.0 + z1 * z1 + z1p * z1p)
                        nx = (s * z1p - z1 * c) / jac
                        ny = (-z1 * s - c * z1p) / jac
                        nz = 1.0 / jac
                        # the separation along the ray, s = v0 + v1·ρ: the part inside the overlap
                        v0 = (sz + mz) * z0 + s0 + cj
                        v1 = sr + sz * z1 + mx * c + my * s + mz * z1
                        ia = ra
                        ib = rb
                        if v1 > 0.0:
                            ib = min(ib, -v0 / v1)
                        elif v1 < 0.0:
                            ia = max(ia, -v0 / v1)
                        elif v0 > 0.0:
                            ib = ia
                        for e in range(4):
                            # e < 2: the whole part (gap band), e >= 2: the part inside the overlap
                            inside = e >= 2
                            if inside and (ib <= ia or gap == 0.0):
                                continue
                            pa = ia if inside else ra
                            pb = ib if inside else rb
                            half = 0.5 * (pb - pa)
                            rho = 0.5 * (pa + pb) + (_G2X if (e & 1) == 1 else -_G2X) * half
                            da = wth * half * rho * jac
                            x = rho * c
                            y = rho * s
                            z = z0 + z1 * rho
                            phr = sr * rho + sz * z + s0
                            phq = mx * x + my * y + mz * z + cj
                            if not inside:
                                band += da
                                band_s += (phr + phq) * da
                                bx += da * x
                                by += da * y
                                bz += da * z
                                if gap != 0.0:
                                    continue
                            # p = −k_eff·s (= −kB·φB on the interface; off it, and when B is the far
                            # stiffer shape whose φ there is rounding, it follows the softer field:
                            # contacts.triangle_contact's rule, issue 27)
                            pr = -keff * (phr + phq)
                            area += da
                            fp += pr * da
                            s_int += (phr + phq) * da
                            fx += pr * da * nx
                            fy += pr * da * ny
                            fz += pr * da * nz
                            mxp += pr * da * x
                            myp += pr * da * y
                            mzp += pr * da * z
                            ax += da * x
                            ay += da * y
                            az += da * z
                    # a part wholly in the gap band is a speculative contact (at its centroid, no area)
                    speculative = area <= min_area
                    if band <= min_area or (speculative and band_s / band > gap):
                        continue
                    if write and o < capacity:
                        force = math.sqrt(fx * fx + fy * fy + fz * fz)
                        if speculative:
                            area = 0.0
                            force = 0.0
                            fp = 0.0
                            s_int = band_s
                            ax = bx
                            ay = by
                            az = bz
                        if fp > 0.0 and force > 0.0:
                            px, py, pz = _to_b(frame, mxp / fp, myp / fp, mzp / fp)
                            unx, uny, unz = _dir_to_b(frame, sign * fx / force, sign * fy / force, sign * fz / force)
                        else:  # no pressure (a sliver at the rim, or speculative): at the centroid
                            force = 0.0
                            fp = 0.0
                            w_area = band if speculative else area
                            px, py, pz = _to_b(frame, ax / w_area, ay / w_area, az / w_area)
                            tgc = (k + 0.5) * dth
                            z1c = al + be * math.cos(tgc) + ga * math.sin(tgc)
                            z1pc = -be * math.sin(tgc) + ga * math.cos(tgc)
                            jc = math.sqrt(1.0 + z1c * z1c + z1pc * z1pc)
                            unx, uny, unz = _dir_to_b(frame, sign * (math.sin(tgc) * z1pc - z1c * math.cos(tgc)) / jc,
                                                      sign * (-z1c * math.sin(tgc) - math.cos(tgc) * z1pc) / jc,
                                                      sign / jc)
                        wx, wy, wz = b_to_world(pairs, p, px, py, pz)
                        wnx, wny, wnz = b_dir_to_world(pairs, p, unx, uny, unz)
                        depth = band_s / band if speculative else s_int / area
                        write_contact(contact_f, contact_i, o, wx, wy, wz, wnx, wny, wnz, area, depth,
                                      fp / area if area > 0.0 else 0.0, force, area * keff, fp / kb,
                                      pairs.i[p, PI_SHAPE_A], pairs.i[p, PI_SHAPE_B], pairs.i[p, PI_ENV], p,
                                      speculative)
                        if triangle_f.shape[0] > o:
                            # the part's corners (θ, t) as listed wind against the axis' side of the
                            # surface (normal −sign·n): with sign > 0 the last two swap, so the
                            # triangle's normal points from A toward B as the contact's does
                            t0 = q / m
                            t1 = (q + 1.0) / m
                            # the panel's ends, or the kinks where the piece starts or stops in it
                            th_a = k * dth
                            th_b = t_end
                            if _signature(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al,
                                          be, ga, th_a, rho_max, gap) < 0:
                                th_a = k1
                            if _signature(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx, my, mz, cj, z0, al,
                                          be, ga, th_b, rho_max, gap) < 0:
                                th_b = k3 if k3 < t_end else k2 if k2 < t_end else k1
                            for v in range(3):
                                if upper:
                                    th_v = th_a if v != 1 else th_b
                                    t_v = t0 if v == 0 else t1
                                else:
                                    th_v = th_a if v == 0 else th_b
                                    t_v = t1 if v == 2 else t0
                                x, y, z, phr, phq = _corner(scratch, p, sdf, sr_, sq, r_side, f, j, sr, sz, s0, mx,
                                                            my, mz, cj, z0, al, be, ga, th_v, t_v, rho_max, gap)
                                bx, by, bz = _to_b(frame, x, y, z)
                                ea = phr if r_side == 0 else phq
                                eb = phq if r_side == 0 else phr
                                slot = v if sign < 0.0 or v == 0 else 3 - v
                                _write_triangle_vertex(triangle_f, o, slot, pairs, p, bx, by, bz, ea, eb, kb)
                    o += 1
                    n_out += 1
    return n_out
