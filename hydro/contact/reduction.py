"""Stage 6 — contact reduction that keeps each pair's force and torque.

A patch yields hundreds to thousands of triangle contacts per pair; solvers want a few dozen.
Per pair (one thread walks the pair's contacts in order, so every sum is ordered and the
result is bit-identical whatever the thread count):

1. Totals: the force vector F = Σ f·n, the centre of pressure, the mean normal n̄ (F's
   direction) and an in-plane basis (u, v).
2. Groups: contacts are binned by normal direction (within 30° of n̄, or one of four azimuth
   quadrants beyond) and by a k×k grid of the patch's extent in the (u, v) plane; k starts at
   ⌊√budget⌋ and shrinks (down to 2) until the non-empty groups fit the budget; if they still do
   not, the normal bins are merged and k starts again from the top (spread-out contacts keep a
   round patch's resistance to tilting).
3. One contact per group at the group's centre of pressure, with the group's force vector
   F_g = Σ f·n (so Σ F_g = F exactly), stiffness c_g = Σ c (the group's area × k_eff, so the
   response to further penetration stays right), depth −|F_g|/c_g (so c_g·|d_g| = |F_g| and a
   penalty solver sees the same load), area, pressure and weight of the group.
4. Torque: replacing a group by one contact moves its moment by Σ (p − P_g) × f·n. The
   residual ΔT (about the centre of pressure) is removed exactly by the smallest shifts δ_g of
   the representatives with Σ δ_g × F_g = ΔT: δ_g = F_g × λ, (Σ |F_g|²I − F_g F_gᵀ) λ = ΔT.
   (Open engines keep force exactly and torque only roughly; this keeps both.)
5. Speculative contacts (zero force) survive as a separate small set: up to
   ``SPECULATIVE_SLOTS`` representatives on a 2×2 grid, at their mean position and normal, with
   the smallest depth.

Reduced contacts are written to fixed slots (pair × budget), then compacted in pair order.

(About 600 lines: the stage's steps are named device helpers, one per numbered step above, kept
together so that the order of every sum, which makes the result bit-identical, reads in one
place.)
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import device_fn, get_device, kernel, lower_bound
from .contacts import (CF_AREA, CF_COUNT, CF_DEPTH, CF_FORCE, CF_NORMAL, CF_POINT, CF_STIFFNESS, CF_WEIGHT, CI_COUNT,
                       CI_ENV, CI_PAIR, CI_SHAPE_A, CI_SHAPE_B, CI_SPECULATIVE, contacts_from_buffers,
                       contacts_to_buffers, write_contact)
from .types import Contacts, Overflow

SPECULATIVE_SLOTS = 4
NORMAL_BINS = 5
COS_30 = 0.8660254037844387
# group accumulator columns
G_FX, G_FY, G_FZ, G_PX, G_PY, G_PZ, G_F, G_AX, G_AY, G_AZ, G_A, G_C, G_W, G_N = range(14)
G_COLS = 14


@device_fn(inline=True)
def _basis(nx, ny, nz):
    """Two unit vectors completing the unit normal n to a right-handed frame (deterministic)."""
    if abs(nx) < 0.57735:
        ax, ay, az = 1.0, 0.0, 0.0
    elif abs(ny) < 0.57735:
        ax, ay, az = 0.0, 1.0, 0.0
    else:
        ax, ay, az = 0.0, 0.0, 1.0
    ux = ay * nz - az * ny
    uy = az * nx - ax * nz
    uz = ax * ny - ay * nx
    inv = 1.0 / math.sqrt(ux * ux + uy * uy + uz * uz)
    ux *= inv
    uy *= inv
    uz *= inv
    return ux, uy, uz, ny * uz - nz * uy, nz * ux - nx * uz, nx * uy - ny * ux


@device_fn(inline=True)
def _contact_vector(contact_f, k, col):
    """Columns col .. col+2 of contact k (a point or a normal), as float64."""
    return float(contact_f[k, col]), float(contact_f[k, col + 1]), float(contact_f[k, col + 2])


@device_fn(inline=True)
def _plane_coordinates(contact_f, k, u, v):
    """Contact k's point projected on the in-plane axes u and v."""
    px, py, pz = _contact_vector(contact_f, k, CF_POINT)
    return px * u[0] + py * u[1] + pz * u[2], px * v[0] + py * v[1] + pz * v[2]


@device_fn(inline=True)
def _group_of(contact_f, k, nx, ny, nz, ux, uy, uz, vx, vy, vz, u0, v0, su, sv, cells, normal_bins):
    """Group index of contact k: normal bin * cells² + spatial cell (one bin unless ``normal_bins``)."""
    qx, qy, qz = _contact_vector(contact_f, k, CF_NORMAL)
    cn = qx * nx + qy * ny + qz * nz
    nbin = 0
    if normal_bins and cn < COS_30:
        tu = qx * ux + qy * uy + qz * uz
        tv = qx * vx + qy * vy + qz * vz
        if abs(tu) >= abs(tv):
            nbin = 1 if tu >= 0.0 else 2
        else:
            nbin = 3 if tv >= 0.0 else 4
    px, py, pz = _contact_vector(contact_f, k, CF_POINT)
    cu = int((px * ux + py * uy + pz * uz - u0) * su)
    cv = int((px * vx + py * vy + pz * vz - v0) * sv)
    cu = min(max(cu, 0), cells - 1)
    cv = min(max(cv, 0), cells - 1)
    return nbin * cells * cells + cv * cells + cu


@device_fn(inline=True)
def _solve_sym3(a00, a01, a02, a11, a12, a22, b0, b1, b2):
    """Solve the symmetric 3×3 system (Cramer's rule); zero when singular."""
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    det = a00 * c00 + a01 * c01 + a02 * c02
    if det == 0.0:
        return 0.0, 0.0, 0.0
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    inv = 1.0 / det
    return ((c00 * b0 + c01 * b1 + c02 * b2) * inv, (c01 * b0 + c11 * b1 + c12 * b2) * inv,
            (c02 * b0 + c12 * b1 + c22 * b2) * inv)


@device_fn(inline=True)
def _clear_groups(groups, p, count):
    for g in range(count):
        for q in range(G_COLS):
            groups[p, g, q] = 0.0


# -- 1. totals -----------------------------------------------------------------------------------


@device_fn
def _pair_totals(contact_f, contact_i, start, stop):
    """One ordered pass over a pair's contacts. Over the active ones: the force vector F, Σ f,
    Σ area, the moments Σ f·p and Σ area·p, Σ area·n, the torque about the origin and the
    bounds of the points; over all: Σ n of the speculative ones joins Σ area·n. Returns
    (F, fsum, asum, Σ f·p, Σ a·p, Σ a·n, torque, lo, hi, n_active, n_spec), vectors as their
    three components (a flat tuple: Numba's parallel analysis trips over nested ones)."""
    fx = 0.0
    fy = 0.0
    fz = 0.0
    fsum = 0.0
    asum = 0.0
    fpx = 0.0
    fpy = 0.0
    fpz = 0.0
    apx = 0.0
    apy = 0.0
    apz = 0.0
    anx = 0.0
    any_ = 0.0
    anz = 0.0
    tox = 0.0
    toy = 0.0
    toz = 0.0
    lox = 1e300
    loy = 1e300
    loz = 1e300
    hix = -1e300
    hiy = -1e300
    hiz = -1e300
    n_active = 0
    n_spec = 0
    for k in range(start, stop):
        qx, qy, qz = _contact_vector(contact_f, k, CF_NORMAL)
        if contact_i[k, CI_SPECULATIVE] != 0:
            n_spec += 1
            anx += qx
            any_ += qy
            anz += qz
            continue
        n_active += 1
        px, py, pz = _contact_vector(contact_f, k, CF_POINT)
        f = float(contact_f[k, CF_FORCE])
        a = float(contact_f[k, CF_AREA])
        gx = f * qx
        gy = f * qy
        gz = f * qz
        fx += gx
        fy += gy
        fz += gz
        fsum += f
        asum += a
        fpx += f * px
        fpy += f * py
        fpz += f * pz
        apx += a * px
        apy += a * py
        apz += a * pz
        anx += a * qx
        any_ += a * qy
        anz += a * qz
        tox += py * gz - pz * gy
        toy += pz * gx - px * gz
        toz += px * gy - py * gx
        lox = min(lox, px)
        loy = min(loy, py)
        loz = min(loz, pz)
        hix = max(hix, px)
        hiy = max(hiy, py)
        hiz = max(hiz, pz)
    return (fx, fy, fz, fsum, asum, fpx, fpy, fpz, apx, apy, apz, anx, any_, anz, tox, toy, toz, lox, loy, loz, hix,
            hiy, hiz, n_active, n_spec)


@device_fn(inline=True)
def _pair_normal(fx, fy, fz, anx, any_, anz):
    """The pair's normal: along the force; while it carries none, along Σ area·n; else +z."""
    fmag = math.sqrt(fx * fx + fy * fy + fz * fz)
    if fmag > 0.0:
        return fx / fmag, fy / fmag, fz / fmag
    amag = math.sqrt(anx * anx + any_ * any_ + anz * anz)
    if amag > 0.0:
        return anx / amag, any_ / amag, anz / amag
    return 0.0, 0.0, 1.0


@device_fn(inline=True)
def _center_of_pressure(fsum, asum, fp, ap, lo, hi):
    """Force-weighted centre of the active contacts; area-weighted while the patch carries no
    force; the middle of their bounds when it has no area either."""
    if fsum > 0.0:
        return fp[0] / fsum, fp[1] / fsum, fp[2] / fsum
    if asum > 0.0:
        return ap[0] / asum, ap[1] / asum, ap[2] / asum
    return 0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])


@device_fn(inline=True)
def _plane_extents(lo, hi, ux, uy, uz, vx, vy, vz):
    """(u0, v0, du, dv): the bounds' corners projected on (u, v), their lower ends and spans."""
    u0 = 1e300
    u1 = -1e300
    v0 = 1e300
    v1 = -1e300
    for c in range(8):
        px = hi[0] if c & 1 else lo[0]
        py = hi[1] if c & 2 else lo[1]
        pz = hi[2] if c & 4 else lo[2]
        pu = px * ux + py * uy + pz * uz
        pv = px * vx + py * vy + pz * vz
        u0 = min(u0, pu)
        u1 = max(u1, pu)
        v0 = min(v0, pv)
        v1 = max(v1, pv)
    return u0, v0, max(u1 - u0, 1e-12) * (1.0 + 1e-9), max(v1 - v0, 1e-12) * (1.0 + 1e-9)


# -- 2. groups -----------------------------------------------------------------------------------


@device_fn
def _accumulate_groups(p, groups, contact_f, contact_i, start, stop, n, u, v, u0, v0, du, dv, cells, normal_bins,
                       cop, by_force):
    """Sum the active contacts into groups[p] (NORMAL_BINS · cells² of them); returns how many
    are used. Positions are summed relative to the centre of pressure ``cop``, weighted by force
    (``by_force``) or else by area."""
    nx, ny, nz = n
    ux, uy, uz = u
    vx, vy, vz = v
    ng = NORMAL_BINS * cells * cells
    _clear_groups(groups, p, ng)
    for k in range(start, stop):
        if contact_i[k, CI_SPECULATIVE] != 0:
            continue
        g = _group_of(contact_f, k, nx, ny, nz, ux, uy, uz, vx, vy, vz, u0, v0, cells / du, cells / dv, cells,
                      normal_bins)
        f = float(contact_f[k, CF_FORCE])
        a = float(contact_f[k, CF_AREA])
        qx, qy, qz = _contact_vector(contact_f, k, CF_NORMAL)
        groups[p, g, G_FX] += f * qx
        groups[p, g, G_FY] += f * qy
        groups[p, g, G_FZ] += f * qz
        w = f if by_force else a
        px, py, pz = _contact_vector(contact_f, k, CF_POINT)
        groups[p, g, G_PX] += w * (px - cop[0])
        groups[p, g, G_PY] += w * (py - cop[1])
        groups[p, g, G_PZ] += w * (pz - cop[2])
        groups[p, g, G_F] += w
        groups[p, g, G_A] += a
        groups[p, g, G_C] += float(contact_f[k, CF_STIFFNESS])
        groups[p, g, G_W] += float(contact_f[k, CF_WEIGHT])
    used = 0
    for g in range(ng):
        if groups[p, g, G_A] > 0.0:  # active contacts always have area
            used += 1
    return used


@device_fn
def _group_within_budget(p, groups, contact_f, contact_i, start, stop, n, u, v, u0, v0, du, dv, cop, by_force,
                         budget):
    """Group the active contacts on a k×k grid of the patch plane, shrinking k until the
    non-empty groups fit the budget: first with normal bins down to 2×2 cells, then without
    them from the top again (a round patch under a small budget keeps contacts spread over it,
    its resistance to tilting, rather than one contact per normal direction). Returns the
    final cell count k; groups[p] holds the groups."""
    top = max(1, int(math.sqrt(budget)))
    cells = top
    normal_bins = True
    while True:
        used = _accumulate_groups(p, groups, contact_f, contact_i, start, stop, n, u, v, u0, v0, du, dv, cells,
                                  normal_bins, cop, by_force)
        if used <= budget or (cells == 1 and not normal_bins):
            return cells
        if normal_bins and cells > 2:
            cells -= 1
        elif normal_bins:
            normal_bins = False
            cells = top
        else:
            cells -= 1


# -- 3., 4. representatives and the torque they must carry --------------------------------------


@device_fn
def _representatives(p, groups, ng):
    """Turn each used group's position sum into its centre (relative to the CoP, in place) and
    return the torque the representatives carry about the CoP and the matrix
    Σ |F_g|²I − F_g F_gᵀ: (rtx, rty, rtz, m00, m01, m02, m11, m12, m22)."""
    rtx = 0.0
    rty = 0.0
    rtz = 0.0
    m00 = 0.0
    m01 = 0.0
    m02 = 0.0
    m11 = 0.0
    m12 = 0.0
    m22 = 0.0
    for g in range(ng):
        if groups[p, g, G_A] <= 0.0:
            continue
        w = groups[p, g, G_F]
        if w > 0.0:
            px = groups[p, g, G_PX] / w
            py = groups[p, g, G_PY] / w
            pz = groups[p, g, G_PZ] / w
        else:
            px = 0.0
            py = 0.0
            pz = 0.0
        groups[p, g, G_PX] = px
        groups[p, g, G_PY] = py
        groups[p, g, G_PZ] = pz
        gx = groups[p, g, G_FX]
        gy = groups[p, g, G_FY]
        gz = groups[p, g, G_FZ]
        rtx += py * gz - pz * gy
        rty += pz * gx - px * gz
        rtz += px * gy - py * gx
        g2 = gx * gx + gy * gy + gz * gz
        m00 += g2 - gx * gx
        m01 -= gx * gy
        m02 -= gx * gz
        m11 += g2 - gy * gy
        m12 -= gy * gz
        m22 += g2 - gz * gz
    return rtx, rty, rtz, m00, m01, m02, m11, m12, m22


@device_fn(inline=True)
def _torque_shift(p, groups, ng, tx, ty, tz):
    """λ of the smallest representative shifts δ_g = F_g × λ that make the representatives carry
    the patch's torque (tx, ty, tz) about the CoP: (Σ |F_g|²I − F_g F_gᵀ) λ = ΔT."""
    rtx, rty, rtz, m00, m01, m02, m11, m12, m22 = _representatives(p, groups, ng)
    reg = 1e-7 * (m00 + m11 + m22)
    return _solve_sym3(m00 + reg, m01, m02, m11 + reg, m12, m22 + reg, tx - rtx, ty - rty, tz - rtz)


@device_fn
def _write_representatives(p, groups, ng, cop, lam, n, out_f, out_i, o, sa, sb, env):
    """One contact per used group, shifted by F_g × λ; returns the next output row."""
    lx, ly, lz = lam
    for g in range(ng):
        if groups[p, g, G_A] <= 0.0:
            continue
        gx = groups[p, g, G_FX]
        gy = groups[p, g, G_FY]
        gz = groups[p, g, G_FZ]
        # δ_g = F_g × λ
        px = cop[0] + groups[p, g, G_PX] + (gy * lz - gz * ly)
        py = cop[1] + groups[p, g, G_PY] + (gz * lx - gx * lz)
        pz = cop[2] + groups[p, g, G_PZ] + (gx * ly - gy * lx)
        gmag = math.sqrt(gx * gx + gy * gy + gz * gz)
        if gmag > 0.0:
            qx = gx / gmag
            qy = gy / gmag
            qz = gz / gmag
        else:  # a group of the rim with no pressure yet: the pair's normal
            qx, qy, qz = n
        area = groups[p, g, G_A]
        c = groups[p, g, G_C]
        depth = -gmag / c if c > 0.0 else 0.0
        pressure = gmag / area if area > 0.0 else 0.0
        write_contact(out_f, out_i, o, px, py, pz, qx, qy, qz, area, depth, pressure, gmag, c, groups[p, g, G_W],
                      sa, sb, env, p, False)
        o += 1
    return o


# -- 5. the speculative set -------------------------------------------------------------------


@device_fn
def _write_speculative(p, groups, contact_f, contact_i, start, stop, n, u, v, slots, out_f, out_i, o, sa, sb, env):
    """Up to ``slots`` speculative representatives on a grid of their extent in the (u, v) plane:
    mean position and normal, least depth, zero force. Returns the next output row."""
    su0 = 1e300
    su1 = -1e300
    sv0 = 1e300
    sv1 = -1e300
    for k in range(start, stop):
        if contact_i[k, CI_SPECULATIVE] == 0:
            continue
        pu, pv = _plane_coordinates(contact_f, k, u, v)
        su0 = min(su0, pu)
        su1 = max(su1, pu)
        sv0 = min(sv0, pv)
        sv1 = max(sv1, pv)
    sdu = max(su1 - su0, 1e-12) * (1.0 + 1e-9)
    sdv = max(sv1 - sv0, 1e-12) * (1.0 + 1e-9)
    scells = 1
    while (scells + 1) * (scells + 1) <= slots:
        scells += 1
    _clear_groups(groups, p, scells * scells)
    for g in range(scells * scells):
        groups[p, g, G_F] = 1e300  # least depth
    for k in range(start, stop):
        if contact_i[k, CI_SPECULATIVE] == 0:
            continue
        pu, pv = _plane_coordinates(contact_f, k, u, v)
        cu = min(max(int((pu - su0) / sdu * scells), 0), scells - 1)
        cv = min(max(int((pv - sv0) / sdv * scells), 0), scells - 1)
        g = cv * scells + cu
        px, py, pz = _contact_vector(contact_f, k, CF_POINT)
        qx, qy, qz = _contact_vector(contact_f, k, CF_NORMAL)
        groups[p, g, G_PX] += px
        groups[p, g, G_PY] += py
        groups[p, g, G_PZ] += pz
        groups[p, g, G_AX] += qx
        groups[p, g, G_AY] += qy
        groups[p, g, G_AZ] += qz
        groups[p, g, G_F] = min(groups[p, g, G_F], float(contact_f[k, CF_DEPTH]))
        groups[p, g, G_N] += 1.0
    for g in range(scells * scells):
        cnt = groups[p, g, G_N]
        if cnt <= 0.0:
            continue
        am = math.sqrt(groups[p, g, G_AX] ** 2 + groups[p, g, G_AY] ** 2 + groups[p, g, G_AZ] ** 2)
        if am > 0.0:
            qx = groups[p, g, G_AX] / am
            qy = groups[p, g, G_AY] / am
            qz = groups[p, g, G_AZ] / am
        else:
            qx, qy, qz = n
        write_contact(out_f, out_i, o, groups[p, g, G_PX] / cnt, groups[p, g, G_PY] / cnt, groups[p, g, G_PZ] / cnt,
                      qx, qy, qz, 0.0, groups[p, g, G_F], 0.0, 0.0, 0.0, 0.0, sa, sb, env, p, True)
        o += 1
    return o


# -- the kernel ------------------------------------------------------------------------------------


# Data in: contact_f, contact_i (pair-major patch contacts); Workspace: groups
# Data out: out_f, out_i (pair × budget slots), out_counts
@device_fn
def _reduce_pair_item(p, n_contacts, contact_f, contact_i, budget, groups, out_f, out_i, out_counts):
    pair_column = contact_i[:, CI_PAIR]
    start = lower_bound(pair_column, n_contacts, p)
    stop = lower_bound(pair_column, n_contacts, p + 1)
    base = p * budget
    if stop <= start:
        out_counts[p] = 0
        return
    sa = contact_i[start, CI_SHAPE_A]
    sb = contact_i[start, CI_SHAPE_B]
    env = contact_i[start, CI_ENV]
    # 1. totals, the pair's normal and its in-plane basis
    (fx, fy, fz, fsum, asum, fpx, fpy, fpz, apx, apy, apz, anx, any_, anz, tox, toy, toz, lox, loy, loz, hix, hiy,
     hiz, n_active, n_spec) = _pair_totals(contact_f, contact_i, start, stop)
    lo = (lox, loy, loz)
    hi = (hix, hiy, hiz)
    n = _pair_normal(fx, fy, fz, anx, any_, anz)
    ux, uy, uz, vx, vy, vz = _basis(n[0], n[1], n[2])
    u = (ux, uy, uz)
    v = (vx, vy, vz)
    # speculative slots leave room for one group per normal bin
    spec_slots = min(SPECULATIVE_SLOTS, n_spec, budget - NORMAL_BINS)
    if n_spec > 0 and n_active == 0:
        spec_slots = min(budget, 4 * SPECULATIVE_SLOTS)
    o = base
    if n_active > 0:
        cop = _center_of_pressure(fsum, asum, (fpx, fpy, fpz), (apx, apy, apz), lo, hi)
        # the true torque about the centre of pressure: T_origin − CoP × F
        tx = tox - (cop[1] * fz - cop[2] * fy)
        ty = toy - (cop[2] * fx - cop[0] * fz)
        tz = toz - (cop[0] * fy - cop[1] * fx)
        # 2. groups on the patch plane, within the budget
        u0, v0, du, dv = _plane_extents(lo, hi, ux, uy, uz, vx, vy, vz)
        cells = _group_within_budget(p, groups, contact_f, contact_i, start, stop, n, u, v, u0, v0, du, dv, cop,
                                     fsum > 0.0, budget - spec_slots)
        ng = NORMAL_BINS * cells * cells
        # 3., 4. one representative per group, shifted so that together they carry the torque
        lam = _torque_shift(p, groups, ng, tx, ty, tz)
        o = _write_representatives(p, groups, ng, cop, lam, n, out_f, out_i, o, sa, sb, env)
    # 5. speculative contacts
    if n_spec > 0:
        o = _write_speculative(p, groups, contact_f, contact_i, start, stop, n, u, v, spec_slots, out_f, out_i, o,
                               sa, sb, env)
    out_counts[p] = o - base


REDUCE = kernel("reduction.reduce", _reduce_pair_item, serial_below=2)


# Data in: slot_f, slot_i (pair × budget slots), counts, offsets (their scan)
# Data out: out_f, out_i (compacted in pair order, below capacity)
@device_fn
def _compact_item(j, budget, slot_f, slot_i, counts, offsets, out_f, out_i, capacity):
    p = j // budget
    k = j - p * budget
    if k >= counts[p]:
        return
    o = offsets[p] + k
    if o >= capacity:
        return
    for q in range(CF_COUNT):
        out_f[o, q] = slot_f[j, q]
    for q in range(CI_COUNT):
        out_i[o, q] = slot_i[j, q]


COMPACT = kernel("reduction.compact", _compact_item)


class ReductionWorkspace:
    """Buffers of the reduction stage, grown as the pair count grows."""

    def __init__(self, device, budget):
        self.device = device
        self.budget = int(budget)
        self.pairs = 0
        self.groups_per_pair = NORMAL_BINS * max(1, int(math.sqrt(self.budget))) ** 2
        self._allocate(16)

    def _allocate(self, pairs):
        dev = self.device
        self.pairs = int(pairs)
        g = max(self.groups_per_pair, 4 * SPECULATIVE_SLOTS)
        self.groups = dev.empty((self.pairs, g, G_COLS), np.float64)
        self.slot_f = dev.full((self.pairs * self.budget, CF_COUNT), np.nan, np.float32)
        self.slot_i = dev.full((self.pairs * self.budget, CI_COUNT), -1, np.int32)
        self.counts = dev.full(self.pairs + 1, 0, np.int64)
        self.offsets = dev.empty(self.pairs + 1, np.int64)

    def ensure(self, pairs):
        if pairs > self.pairs:
            self._allocate(int(pairs * 1.25) + 8)


def reduce_on_device(device, workspace, n_pairs, n_contacts, contact_f, contact_i, out_f, out_i, capacity):
    """Reduce device contact buffers; returns (written count, required count)."""
    b = workspace.budget
    workspace.ensure(n_pairs)
    if n_pairs == 0:
        return 0, 0
    device.launch(REDUCE, n_pairs, n_contacts, contact_f, contact_i, b, workspace.groups, workspace.slot_f,
                  workspace.slot_i, workspace.counts)
    total = device.exclusive_scan(workspace.counts, workspace.offsets, n_pairs)
    device.launch(COMPACT, n_pairs * b, b, workspace.slot_f, workspace.slot_i, workspace.counts,
                  workspace.offsets, out_f, out_i, capacity)
    return min(total, capacity), total


def reduce_contacts(contacts: Contacts, n_pairs: int | None = None, config=None, *, device="cpu"):
    """Reduce a host contact table (sorted by pair). Returns ``(reduced, overflow_list)``.

    ``config`` supplies ``max_contacts_per_pair`` and ``reduced_contact_capacity``.
    """
    from .config import HydroelasticConfig

    cfg = config or HydroelasticConfig()
    dev = get_device(device)
    if len(contacts) and np.any(np.diff(contacts.pair) < 0):
        raise ValueError("contacts must be sorted by pair (the pipeline's order)")
    n_pairs = int(contacts.pair.max()) + 1 if n_pairs is None and len(contacts) else int(n_pairs or 0)
    cf, ci = contacts_to_buffers(contacts)
    ws = ReductionWorkspace(dev, cfg.max_contacts_per_pair)
    capacity = cfg.reduced_contact_capacity or max(1, n_pairs * cfg.max_contacts_per_pair)
    out_f = dev.full((capacity + 1, CF_COUNT), np.nan, np.float32)
    out_i = dev.full((capacity + 1, CI_COUNT), -1, np.int32)
    n, required = reduce_on_device(dev, ws, n_pairs, len(contacts), dev.asarray(cf), dev.asarray(ci), out_f, out_i,
                                   capacity)
    overflow = []
    if required > capacity:
        overflow.append(Overflow("reduced_contact_capacity", capacity, required))
    reduced = contacts_from_buffers(dev.to_host(out_f[:n]), dev.to_host(out_i[:n]))
    if n and len(contacts):  # the per-pair columns (path, material) of the pair each contact reduces
        first = np.searchsorted(contacts.pair, reduced.pair)
        for name in ("kind", "damping", "friction", "static_friction"):
            setattr(reduced, name, getattr(contacts, name)[first].copy())
    return reduced, overflow
