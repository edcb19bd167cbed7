"""The implicit contact step: one convex problem over the bodies' velocities per physics step.

This is the default solver of :class:`~hydro.sim.simulation.Simulation` (``solver="implicit"``).
It follows the structure of Drake's SAP (Castro et al., "An unconstrained convex formulation of
compliant contact", 2022) and MuJoCo's soft constraints, written for hydro's contact table.

Unknowns
    The generalized velocities v at the end of the step, 6 per dynamic body (the centre of mass's
    linear velocity and the angular velocity, world frame). Kinematic bodies move with their given
    velocity, static shapes not at all.

Per contact i (one row of the pipeline's table with stiffness c > 0)
    A frame (t1, t2, n), n from shape A toward B — the pair's mean normal Σc·n/|Σc·n| when the
    contact's own normal is within 45° of it (:data:`PAIR_NORMAL_COS`), else its own; the contact
    velocity vc = J·v (slip along t1, t2 and the normal velocity vn, B relative to A). The normal
    impulse is linearly implicit regularised compliant contact:

        γn = h·c·max(0, x − (h + τ)·vn),   x = −depth (an overlap less its pair's ``pair_offset``, >= 0),  τ = b/c

    (the spring at the end of the step, and a Kelvin–Voigt damper of damping time τ). As a
    projection: γn = max(0, yn), yn = −(vn − v̂n)/R_n, R_n = 1/(h·c·(h + τ)), v̂n = x/(h + τ).
    Friction is Coulomb with the pair's dynamic coefficient μ (the mean of the two shapes'):
    γt = yt inside the disk ‖γt‖ <= ρ = μ·γn (sticking, with a tiny compliance R_t = σ·w, w the
    contact's Delassus diagonal, σ = ``friction_regularization``: a sticking contact creeps at
    most σ·w·γt), else ρ·yt/‖yt‖ (sliding, against the contact's own slip), yt = −vt/R_t.
    ρ follows γn at the current Newton iterate and is held while the step linearises (SAP's
    convex cone in the R-norm would lift a sliding contact by μ·|vt|·(h + τ)).

    The damping b of a contact: a point contact whose material authors ``contactDamping`` uses
    it; every other contact gets its pair's damping ratio ζ (``damping_ratio``, default 1:
    critically damped): τ = 2ζ·sqrt(m_eff / C), C = Σ c over the pair's contacts,
    m_eff = 1/(1/m_A + 1/m_B).

    The normal row of a sphere (or a capsule) acts through its centre (its axis): a rigid
    sphere's pressure is radial, its rotation changes nothing of its geometry, so the normal
    force neither predicts penetration from rolling nor brakes it; friction still acts at the
    contact point.

The problem
    v minimises ℓ(v) = ½‖v − v*‖²_M + ½‖v − v_pd‖²_D + Σ_i ℓ_i(vc_i) (convex for fixed ρ), with
    v* = v0 + h·M⁻¹(f_ext + m·g − ω×Iω) the free motion and D, v_pd the implicit PD drives
    (:meth:`Simulation.set_pd_target`). ∇ℓ = M(v − v*) + D(v − v_pd) − Σ Jᵀγ, so at the
    minimum the momentum balance holds with the contact impulses γ. Newton's method with an exact
    line search on the slope dℓ/dα, Hessian M + D + Σ Jᵀ·G·J (G = ∂γ/∂y·R⁻¹, symmetric
    positive semi-definite), one dense Cholesky per island of bodies that touch each other.
    It stops when ‖∇ℓ‖ (scaled by M^-½) is below ``tol`` times the momentum scale.

Then positions: the centre of mass moves by h·v, the orientation by the exact rotation h·ω.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import cpu_jit

__all__ = ["implicit_step", "LEVER_POINT", "LEVER_SPHERE", "LEVER_CAPSULE", "STAT_FIELDS"]

LEVER_POINT = 0
LEVER_SPHERE = 1
LEVER_CAPSULE = 2

#: A contact whose normal is within acos(PAIR_NORMAL_COS) of its pair's mean normal Σc·n/|Σc·n|
#: is solved along the pair's normal (the tilted contacts of a flat patch's rim band are an
#: artefact of the sampled fields: along their own normals they would brake and spin a sliding
#: body); contacts further off keep their own normal (a patch that truly bends).
PAIR_NORMAL_COS = 0.7

#: What ``stats`` holds after a step, in order.
STAT_FIELDS = ("newton_iterations_max", "newton_iterations_total", "islands", "not_converged", "contacts")


@cpu_jit
def _quat_to_matrix(q):
    x, y, z, w = q[0], q[1], q[2], q[3]
    m = np.empty((3, 3))
    m[0, 0] = 1 - 2 * (y * y + z * z)
    m[0, 1] = 2 * (x * y - z * w)
    m[0, 2] = 2 * (x * z + y * w)
    m[1, 0] = 2 * (x * y + z * w)
    m[1, 1] = 1 - 2 * (x * x + z * z)
    m[1, 2] = 2 * (y * z - x * w)
    m[2, 0] = 2 * (x * z - y * w)
    m[2, 1] = 2 * (y * z + x * w)
    m[2, 2] = 1 - 2 * (x * x + y * y)
    return m


@cpu_jit
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@cpu_jit
def _project(y0, y1, y2, rho, rt, rn, g, G):
    """γ = P(y) into ``g`` (3,) and G = ∂γ/∂y·R⁻¹ into ``G`` (3,3), for a friction disk of radius
    ``rho`` (μ·γn, held while the solve linearises): γn = max(0, yn); γt = yt within the disk
    (sticking), ρ·yt/‖yt‖ on its rim (sliding, against the slip)."""
    for a in range(3):
        for b in range(3):
            G[a, b] = 0.0
    if y2 > 0.0:
        g[2] = y2
        G[2, 2] = 1.0 / rn
    else:
        g[2] = 0.0
    yr = math.sqrt(y0 * y0 + y1 * y1)
    if yr <= rho:
        g[0] = y0
        g[1] = y1
        if rho > 0.0:
            G[0, 0] = 1.0 / rt
            G[1, 1] = 1.0 / rt
    else:
        tx = y0 / yr
        ty = y1 / yr
        g[0] = rho * tx
        g[1] = rho * ty
        a2 = rho / (yr * rt)
        G[0, 0] = a2 * (1.0 - tx * tx)
        G[0, 1] = -a2 * tx * ty
        G[1, 0] = G[0, 1]
        G[1, 1] = a2 * (1.0 - ty * ty)


@cpu_jit
def _slope_at(alpha, q1, q2, nc, corder, c0, vc, dvc, rt, rn, vhat, rho, g3, G):
    """dℓ/dα of ℓ(v + α·dv): the quadratic part's q1 + 2·q2·α less Σ Δvcᵀ·γ."""
    d = q1 + 2.0 * q2 * alpha
    for q in range(nc):
        j = corder[c0 + q]
        u0 = vc[q, 0] + alpha * dvc[q, 0]
        u1 = vc[q, 1] + alpha * dvc[q, 1]
        u2 = vc[q, 2] + alpha * dvc[q, 2]
        _project(-u0 / rt[j], -u1 / rt[j], -(u2 - vhat[j]) / rn[j], rho[j], rt[j], rn[j], g3, G)
        d -= dvc[q, 0] * g3[0] + dvc[q, 1] * g3[1] + dvc[q, 2] * g3[2]
    return d


@cpu_jit
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]



@cpu_jit
def _basis(n0, n1, n2, F):
    """Rows t1, t2, n of ``F`` (3,3): deterministic unit tangents completing the unit normal."""
    a0, a1, a2 = 0.0, 0.0, 0.0
    if abs(n0) < 0.57735:
        a0 = 1.0
    elif abs(n1) < 0.57735:
        a1 = 1.0
    else:
        a2 = 1.0
    t0 = a1 * n2 - a2 * n1
    t1 = a2 * n0 - a0 * n2
    t2 = a0 * n1 - a1 * n0
    s = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    t0 /= s
    t1 /= s
    t2 /= s
    F[0, 0] = t0
    F[0, 1] = t1
    F[0, 2] = t2
    F[1, 0] = n1 * t2 - n2 * t1
    F[1, 1] = n2 * t0 - n0 * t2
    F[1, 2] = n0 * t1 - n1 * t0
    F[2, 0] = n0
    F[2, 1] = n1
    F[2, 2] = n2


@cpu_jit
def _side_jacobian(J, F, p, lever, c, sign):
    """The 3×6 block of one side: rows t1, t2 at the contact point ``p``, n at ``lever``."""
    for r in range(3):
        q = p if r < 2 else lever
        d0, d1, d2 = F[r, 0], F[r, 1], F[r, 2]
        x0, x1, x2 = q[0] - c[0], q[1] - c[1], q[2] - c[2]
        J[r, 0] = sign * d0
        J[r, 1] = sign * d1
        J[r, 2] = sign * d2
        J[r, 3] = sign * (x1 * d2 - x2 * d1)
        J[r, 4] = sign * (x2 * d0 - x0 * d2)
        J[r, 5] = sign * (x0 * d1 - x1 * d0)


@cpu_jit
def _lever_point(kind, pts, q, R, p, out):
    """Where a shape's normal force acts: the contact point, a sphere's centre, or the point of a
    capsule's axis nearest the contact point (``pts`` in the body frame, body pose ``q``, ``R``)."""
    if kind == LEVER_SPHERE:
        for a in range(3):
            out[a] = q[a] + R[a, 0] * pts[0, 0] + R[a, 1] * pts[0, 1] + R[a, 2] * pts[0, 2]
    elif kind == LEVER_CAPSULE:
        e0 = np.empty(3)
        e1 = np.empty(3)
        for a in range(3):
            e0[a] = q[a] + R[a, 0] * pts[0, 0] + R[a, 1] * pts[0, 1] + R[a, 2] * pts[0, 2]
            e1[a] = q[a] + R[a, 0] * pts[1, 0] + R[a, 1] * pts[1, 1] + R[a, 2] * pts[1, 2]
        dd = 0.0
        dp = 0.0
        for a in range(3):
            dd += (e1[a] - e0[a]) ** 2
            dp += (p[a] - e0[a]) * (e1[a] - e0[a])
        u = 0.0 if dd <= 0.0 else min(1.0, max(0.0, dp / dd))
        for a in range(3):
            out[a] = e0[a] + u * (e1[a] - e0[a])
    else:
        for a in range(3):
            out[a] = p[a]


@cpu_jit
def implicit_step(h, gravity, zeta, sigma, tol, max_iter,
                  body_q, body_qd, inv_mass, inertia_local, com_local, dynamic,
                  body_f, pd_kp, pd_kd, pd_pose, pd_vel,
                  shape_body, shape_lever, shape_lever_pts, shape_mu,
                  c_point, c_normal, c_depth, c_stiff, c_damp, c_kind, c_sa, c_sb, c_pair, n_pairs, pair_offset, point_kind,
                  out_fn, out_ft, out_gn, out_n, stats):
    """One implicit step of ``h`` s (module docstring): updates ``body_q``/``body_qd`` in place
    (dynamic bodies' velocities by the solve, every body's pose by its velocity), writes each
    contact's normal and friction force on B (N) into ``out_fn``/``out_ft`` (N,3) and its normal
    impulse (N·s) into ``out_gn`` (N,) (0: no force), the normal it was solved along into
    ``out_n`` (N,3), and ``stats`` (:data:`STAT_FIELDS`).

    Bodies: ``inv_mass`` (B,), ``inertia_local`` (B,3,3), ``com_local`` (B,3), ``dynamic`` (B,)
    bool, ``body_f`` (B,6) external force and torque (world, about the centre of mass),
    ``pd_kp``/``pd_kd`` (B,6) implicit PD gains (world axes) toward ``pd_pose`` (B,7: centre of
    mass position, orientation) at velocity ``pd_vel`` (B,6). Shapes: ``shape_body`` (−1:
    static), ``shape_lever`` (LEVER_*), ``shape_lever_pts`` (S,2,3) a sphere's centre / a
    capsule's axis ends in the body frame, ``shape_mu`` (S,) dynamic friction. Contacts: the
    pipeline's columns; ``pair_offset`` (n_pairs,) m of overlap each pair's spring does not push
    back (the late-found overlap of a new contact, :class:`Simulation`); ``point_kind`` the kind
    code whose authored damping (finite) is used.
    """
    B = body_q.shape[0]
    N = c_depth.shape[0]
    for k in range(N):
        for a in range(3):
            out_fn[k, a] = 0.0
            out_ft[k, a] = 0.0
        out_gn[k] = 0.0
    # -- bodies in world: rotation, centre of mass, inertia, free velocity ----------------------
    rot = np.empty((B, 3, 3))
    com = np.empty((B, 3))
    iw = np.empty((B, 3, 3))
    iw_inv = np.zeros((B, 3, 3))
    vstar = np.empty((B, 6))
    for b in range(B):
        R = _quat_to_matrix(body_q[b, 3:7])
        rot[b] = R
        for a in range(3):
            com[b, a] = body_q[b, a] + R[a, 0] * com_local[b, 0] + R[a, 1] * com_local[b, 1] + R[a, 2] * com_local[b, 2]
        iw[b] = R @ inertia_local[b] @ R.T
        for a in range(6):
            vstar[b, a] = body_qd[b, a]
        if dynamic[b]:
            iw_inv[b] = np.linalg.inv(iw[b])
            w0, w1, w2 = body_qd[b, 3], body_qd[b, 4], body_qd[b, 5]
            I0 = iw[b, 0, 0] * w0 + iw[b, 0, 1] * w1 + iw[b, 0, 2] * w2
            I1 = iw[b, 1, 0] * w0 + iw[b, 1, 1] * w1 + iw[b, 1, 2] * w2
            I2 = iw[b, 2, 0] * w0 + iw[b, 2, 1] * w1 + iw[b, 2, 2] * w2
            t0 = body_f[b, 3] - (w1 * I2 - w2 * I1)
            t1 = body_f[b, 4] - (w2 * I0 - w0 * I2)
            t2 = body_f[b, 5] - (w0 * I1 - w1 * I0)
            for a in range(3):
                vstar[b, a] += h * (gravity[a] + body_f[b, a] * inv_mass[b])
                vstar[b, 3 + a] += h * (iw_inv[b, a, 0] * t0 + iw_inv[b, a, 1] * t1 + iw_inv[b, a, 2] * t2)
    # -- implicit PD drives: a quadratic ½‖v − v_pd‖²_D per driven dynamic body -----------------
    dgain = np.zeros((B, 6))
    vpd = np.zeros((B, 6))
    for b in range(B):
        if not dynamic[b]:
            continue
        driven = False
        for a in range(6):
            if pd_kp[b, a] > 0.0 or pd_kd[b, a] > 0.0:
                dgain[b, a] = h * (pd_kp[b, a] * h + pd_kd[b, a])
                driven = True
        if not driven:
            continue
        # orientation error: the rotation vector of q_target · q⁻¹ (world)
        x1, y1, z1, w1 = pd_pose[b, 3], pd_pose[b, 4], pd_pose[b, 5], pd_pose[b, 6]
        x2, y2, z2, w2 = -body_q[b, 3], -body_q[b, 4], -body_q[b, 5], body_q[b, 6]
        rx = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
        ry = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
        rz = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
        rw = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
        if rw < 0.0:
            rx, ry, rz, rw = -rx, -ry, -rz, -rw
        s = math.sqrt(rx * rx + ry * ry + rz * rz)
        kf = 2.0 * math.atan2(s, rw) / s if s > 1e-12 else 2.0
        err = np.empty(6)
        for a in range(3):
            err[a] = pd_pose[b, a] - com[b, a]
        err[3] = rx * kf
        err[4] = ry * kf
        err[5] = rz * kf
        for a in range(6):
            den = pd_kp[b, a] * h + pd_kd[b, a]
            if den > 0.0:
                vpd[b, a] = (pd_kp[b, a] * err[a] + pd_kd[b, a] * pd_vel[b, a]) / den
    # -- the contacts that can carry force: frames, Jacobians, regularisation --------------------
    act = np.empty(N, np.int64)
    K = 0
    for k in range(N):
        if c_stiff[k] > 0.0 and math.isfinite(c_depth[k]):
            act[K] = k
            K += 1
    ia = np.full(K, -1, np.int64)
    ib = np.full(K, -1, np.int64)
    Fr = np.empty((K, 3, 3))
    JA = np.zeros((K, 3, 6))
    JB = np.zeros((K, 3, 6))
    vc0 = np.zeros((K, 3))
    wdiag = np.zeros(K)
    rt = np.empty(K)
    rn = np.empty(K)
    vhat = np.empty(K)
    mu = np.empty(K)
    rho = np.zeros(K)
    csum = np.zeros(n_pairs)
    invp = np.zeros(n_pairs)
    p = np.empty(3)
    lever = np.empty(3)
    # the pair's mean normal (Σ c·n): friction acts in the pair's tangent plane, so the tilted
    # contacts of a patch's rim band neither lift nor rock a body that slides
    npair = np.zeros((n_pairs, 3))
    for j in range(K):
        k = act[j]
        for a in range(3):
            npair[c_pair[k], a] += c_stiff[k] * c_normal[k, a]
    for j in range(K):
        k = act[j]
        nx, ny, nz = float(c_normal[k, 0]), float(c_normal[k, 1]), float(c_normal[k, 2])
        nl = math.sqrt(nx * nx + ny * ny + nz * nz)
        if nl > 0.0:
            nx /= nl
            ny /= nl
            nz /= nl
        else:
            nz = 1.0
        px, py, pz = npair[c_pair[k], 0], npair[c_pair[k], 1], npair[c_pair[k], 2]
        pl = math.sqrt(px * px + py * py + pz * pz)
        if pl > 0.0 and (px * nx + py * ny + pz * nz) > PAIR_NORMAL_COS * pl:
            _basis(px / pl, py / pl, pz / pl, Fr[j])
        else:
            _basis(nx, ny, nz, Fr[j])
        for a in range(3):
            p[a] = c_point[k, a]
        sa = c_sa[k]
        sb = c_sb[k]
        for side in range(2):
            s = sa if side == 0 else sb
            b = shape_body[s]
            if b < 0:
                continue
            if side == 0:
                ia[j] = b
                J = JA[j]
            else:
                ib[j] = b
                J = JB[j]
            _lever_point(shape_lever[s], shape_lever_pts[s], body_q[b], rot[b], p, lever)
            _side_jacobian(J, Fr[j], p, lever, com[b], -1.0 if side == 0 else 1.0)
            if dynamic[b]:
                for r in range(3):
                    acc = 0.0
                    for a in range(3):
                        acc += J[r, a] * J[r, a] * inv_mass[b]
                        for e in range(3):
                            acc += J[r, 3 + a] * iw_inv[b, a, e] * J[r, 3 + e]
                    wdiag[j] += acc / 3.0
            else:
                for r in range(3):
                    acc = 0.0
                    for a in range(6):
                        acc += J[r, a] * body_qd[b, a]
                    vc0[j, r] += acc
        pr = c_pair[k]
        csum[pr] += c_stiff[k]
        im = 0.0
        if ia[j] >= 0 and dynamic[ia[j]]:
            im += inv_mass[ia[j]]
        if ib[j] >= 0 and dynamic[ib[j]]:
            im += inv_mass[ib[j]]
        invp[pr] = im
        mu[j] = 0.5 * (shape_mu[sa] + shape_mu[sb])
    for j in range(K):
        k = act[j]
        c = float(c_stiff[k])
        pr = c_pair[k]
        if c_kind[k] == point_kind and math.isfinite(c_damp[k]):
            tau = float(c_damp[k]) / c
        elif invp[pr] > 0.0:
            tau = 2.0 * zeta * math.sqrt(1.0 / (invp[pr] * csum[pr]))
        else:
            tau = 0.0
        rn[j] = 1.0 / (h * c * (h + tau))
        x0 = -float(c_depth[k])
        if x0 > 0.0:  # the overlap left alone: every overlapping contact still resists approach
            x0 = max(0.0, x0 - pair_offset[pr])
        vhat[j] = x0 / (h + tau)
        rt[j] = sigma * wdiag[j] if wdiag[j] > 0.0 else sigma * rn[j]
    # -- islands: dynamic bodies joined by contacts --------------------------------------------
    parent = np.arange(B)
    for j in range(K):
        a = ia[j]
        b = ib[j]
        if a >= 0 and b >= 0 and dynamic[a] and dynamic[b]:
            ra = _find(parent, a)
            rb = _find(parent, b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    island = np.full(B, -1, np.int64)
    n_isl = 0
    for b in range(B):
        if dynamic[b]:
            rb = _find(parent, b)
            if island[rb] < 0:
                island[rb] = n_isl
                n_isl += 1
            island[b] = island[rb]
    isl_nb = np.zeros(n_isl + 1, np.int64)
    local = np.full(B, -1, np.int64)
    for b in range(B):
        if island[b] >= 0:
            local[b] = isl_nb[island[b] + 1]
            isl_nb[island[b] + 1] += 1
    bstart = np.zeros(n_isl + 1, np.int64)
    for i in range(n_isl):
        bstart[i + 1] = bstart[i] + isl_nb[i + 1]
    bodies = np.empty(bstart[n_isl], np.int64)
    for b in range(B):
        if island[b] >= 0:
            bodies[bstart[island[b]] + local[b]] = b
    cisl = np.full(K, -1, np.int64)
    ccount = np.zeros(n_isl + 1, np.int64)
    for j in range(K):
        if ia[j] >= 0 and dynamic[ia[j]]:
            cisl[j] = island[ia[j]]
        elif ib[j] >= 0 and dynamic[ib[j]]:
            cisl[j] = island[ib[j]]
        if cisl[j] >= 0:
            ccount[cisl[j] + 1] += 1
    cstart = np.zeros(n_isl + 1, np.int64)
    for i in range(n_isl):
        cstart[i + 1] = cstart[i] + ccount[i + 1]
    cfill = cstart.copy()
    corder = np.empty(cstart[n_isl], np.int64)
    for j in range(K):
        if cisl[j] >= 0:
            corder[cfill[cisl[j]]] = j
            cfill[cisl[j]] += 1
    gam = np.zeros((K, 3))
    G = np.empty((3, 3))
    g3 = np.empty(3)
    # contacts with no dynamic body: their impulse from the given motion alone
    for j in range(K):
        if cisl[j] < 0:
            rho[j] = mu[j] * max(0.0, -(vc0[j, 2] - vhat[j]) / rn[j])
            _project(-vc0[j, 0] / rt[j], -vc0[j, 1] / rt[j], -(vc0[j, 2] - vhat[j]) / rn[j], rho[j], rt[j], rn[j],
                     g3, G)
            for a in range(3):
                gam[j, a] = g3[a]
    # -- Newton per island -----------------------------------------------------------------------
    it_max = 0
    it_total = 0
    failed = 0
    for isl in range(n_isl):
        b0 = bstart[isl]
        nb = bstart[isl + 1] - b0
        n = 6 * nb
        c0 = cstart[isl]
        nc = cstart[isl + 1] - c0
        Mb = np.zeros((nb, 6, 6))
        mdiag = np.empty(n)
        v = np.empty(n)
        vs = np.empty(n)
        vp = np.empty(n)
        dg = np.empty(n)
        for i in range(nb):
            b = bodies[b0 + i]
            m = 1.0 / inv_mass[b]
            for a in range(3):
                Mb[i, a, a] = m
                for e in range(3):
                    Mb[i, 3 + a, 3 + e] = iw[b, a, e]
            for a in range(6):
                mdiag[6 * i + a] = Mb[i, a, a]
                v[6 * i + a] = vstar[b, a]
                vs[6 * i + a] = vstar[b, a]
                vp[6 * i + a] = vpd[b, a]
                dg[6 * i + a] = dgain[b, a]
        la = np.full(nc, -1, np.int64)
        lb = np.full(nc, -1, np.int64)
        for q in range(nc):
            j = corder[c0 + q]
            if ia[j] >= 0 and dynamic[ia[j]]:
                la[q] = local[ia[j]]
            if ib[j] >= 0 and dynamic[ib[j]]:
                lb[q] = local[ib[j]]
        vc = np.empty((nc, 3))
        dvc = np.empty((nc, 3))
        grad = np.empty(n)
        H = np.empty((n, n))
        dv = np.empty(n)
        GJA = np.empty((3, 6))
        GJB = np.empty((3, 6))
        iters = 0
        converged = False
        for it in range(max_iter + 1):
            # contact velocities, impulses, gradient
            for q in range(nc):
                j = corder[c0 + q]
                for r in range(3):
                    acc = vc0[j, r]
                    if la[q] >= 0:
                        o = 6 * la[q]
                        for a in range(6):
                            acc += JA[j, r, a] * v[o + a]
                    if lb[q] >= 0:
                        o = 6 * lb[q]
                        for a in range(6):
                            acc += JB[j, r, a] * v[o + a]
                    vc[q, r] = acc
            for i in range(nb):
                for a in range(6):
                    acc = dg[6 * i + a] * (v[6 * i + a] - vp[6 * i + a])
                    for e in range(6):
                        acc += Mb[i, a, e] * (v[6 * i + e] - vs[6 * i + e])
                    grad[6 * i + a] = acc
            jg2 = 0.0
            Jg = np.zeros(n)
            for q in range(nc):
                j = corder[c0 + q]
                # friction's disk follows the normal impulse at the current iterate (then held
                # for this Newton step): Coulomb's bound without the convex relaxation's lift
                rho[j] = mu[j] * max(0.0, -(vc[q, 2] - vhat[j]) / rn[j])
                _project(-vc[q, 0] / rt[j], -vc[q, 1] / rt[j], -(vc[q, 2] - vhat[j]) / rn[j], rho[j], rt[j], rn[j],
                         g3, G)
                for a in range(3):
                    gam[j, a] = g3[a]
                if la[q] >= 0:
                    o = 6 * la[q]
                    for a in range(6):
                        Jg[o + a] += JA[j, 0, a] * g3[0] + JA[j, 1, a] * g3[1] + JA[j, 2, a] * g3[2]
                if lb[q] >= 0:
                    o = 6 * lb[q]
                    for a in range(6):
                        Jg[o + a] += JB[j, 0, a] * g3[0] + JB[j, 1, a] * g3[1] + JB[j, 2, a] * g3[2]
            gn2 = 0.0
            pn2 = 0.0
            for a in range(n):
                grad[a] -= Jg[a]
                gn2 += grad[a] * grad[a] / mdiag[a]
                jg2 += Jg[a] * Jg[a] / mdiag[a]
            for i in range(nb):
                for a in range(6):
                    acc = 0.0
                    for e in range(6):
                        acc += Mb[i, a, e] * v[6 * i + e]
                    pn2 += acc * acc / mdiag[6 * i + a]
            if gn2 <= tol * tol * max(pn2, jg2) or gn2 == 0.0:
                converged = True
                break
            if it == max_iter:
                break
            iters += 1
            # Hessian M + D + Σ Jᵀ·G·J, G recomputed per contact
            for a in range(n):
                for e in range(n):
                    H[a, e] = 0.0
            for i in range(nb):
                for a in range(6):
                    for e in range(6):
                        H[6 * i + a, 6 * i + e] = Mb[i, a, e]
                    H[6 * i + a, 6 * i + a] += dg[6 * i + a]
            for q in range(nc):
                j = corder[c0 + q]
                _project(-vc[q, 0] / rt[j], -vc[q, 1] / rt[j], -(vc[q, 2] - vhat[j]) / rn[j], rho[j], rt[j], rn[j],
                         g3, G)
                if G[0, 0] == 0.0 and G[2, 2] == 0.0 and G[1, 1] == 0.0:
                    continue
                for r in range(3):
                    for a in range(6):
                        GJA[r, a] = G[r, 0] * JA[j, 0, a] + G[r, 1] * JA[j, 1, a] + G[r, 2] * JA[j, 2, a]
                        GJB[r, a] = G[r, 0] * JB[j, 0, a] + G[r, 1] * JB[j, 1, a] + G[r, 2] * JB[j, 2, a]
                oa = 6 * la[q]
                ob = 6 * lb[q]
                for a in range(6):
                    for e in range(6):
                        if la[q] >= 0:
                            H[oa + a, oa + e] += JA[j, 0, a] * GJA[0, e] + JA[j, 1, a] * GJA[1, e] + JA[j, 2, a] * GJA[2, e]
                        if lb[q] >= 0:
                            H[ob + a, ob + e] += JB[j, 0, a] * GJB[0, e] + JB[j, 1, a] * GJB[1, e] + JB[j, 2, a] * GJB[2, e]
                        if la[q] >= 0 and lb[q] >= 0:
                            x = JA[j, 0, a] * GJB[0, e] + JA[j, 1, a] * GJB[1, e] + JA[j, 2, a] * GJB[2, e]
                            H[oa + a, ob + e] += x
                            H[ob + e, oa + a] += x
            # H·dv = −grad (Cholesky, H is symmetric positive definite)
            L = np.linalg.cholesky(H)
            for a in range(n):
                acc = -grad[a]
                for e in range(a):
                    acc -= L[a, e] * dv[e]
                dv[a] = acc / L[a, a]
            for a in range(n - 1, -1, -1):
                acc = dv[a]
                for e in range(a + 1, n):
                    acc -= L[e, a] * dv[e]
                dv[a] = acc / L[a, a]
            # backtracking line search on ℓ along dv
            slope = 0.0
            for a in range(n):
                slope += grad[a] * dv[a]
            if slope >= 0.0:
                break
            for q in range(nc):
                j = corder[c0 + q]
                for r in range(3):
                    acc = 0.0
                    if la[q] >= 0:
                        o = 6 * la[q]
                        for a in range(6):
                            acc += JA[j, r, a] * dv[o + a]
                    if lb[q] >= 0:
                        o = 6 * lb[q]
                        for a in range(6):
                            acc += JB[j, r, a] * dv[o + a]
                    dvc[q, r] = acc
            # exact line search: ℓ is convex along dv, so find where its slope
            # dℓ/dα = q1 + 2·q2·α − Σ Δvcᵀ·γ(vc + α·Δvc) crosses zero in (0, 1] (a full step
            # when it is still descending at 1). Slopes, not values: near the minimum the
            # values' differences drown in rounding.
            q1 = 0.0
            q2 = 0.0
            for i in range(nb):
                for a in range(6):
                    da = dv[6 * i + a]
                    ma = 0.0
                    me = 0.0
                    for e in range(6):
                        ma += Mb[i, a, e] * dv[6 * i + e]
                        me += Mb[i, a, e] * (v[6 * i + e] - vs[6 * i + e])
                    q1 += da * (me + dg[6 * i + a] * (v[6 * i + a] - vp[6 * i + a]))
                    q2 += 0.5 * da * (ma + dg[6 * i + a] * da)
            alpha = 1.0
            d1 = _slope_at(1.0, q1, q2, nc, corder, c0, vc, dvc, rt, rn, vhat, rho, g3, G)
            if d1 > 1e-9 * -slope:  # (a quadratic: the full step, up to rounding)
                lo, dlo = 0.0, slope
                hi, dhi = 1.0, d1
                side = 0
                for _ in range(60):
                    alpha = lo - dlo * (hi - lo) / (dhi - dlo)
                    if not (lo < alpha < hi):
                        alpha = 0.5 * (lo + hi)
                    da_ = _slope_at(alpha, q1, q2, nc, corder, c0, vc, dvc, rt, rn, vhat, rho, g3, G)
                    if abs(da_) <= 1e-9 * -slope:
                        break
                    if da_ < 0.0:
                        lo, dlo = alpha, da_
                        if side == -1:
                            dhi *= 0.5
                        side = -1
                    else:
                        hi, dhi = alpha, da_
                        if side == 1:
                            dlo *= 0.5
                        side = 1
            for a in range(n):
                v[a] += alpha * dv[a]
        it_total += iters
        it_max = max(it_max, iters)
        if not converged:
            failed += 1
        for i in range(nb):
            b = bodies[b0 + i]
            for a in range(6):
                body_qd[b, a] = v[6 * i + a]
    # -- forces on B, then positions ----------------------------------------------------------------
    for j in range(K):
        k = act[j]
        gn = gam[j, 2]
        out_gn[k] = gn
        for a in range(3):
            out_n[k, a] = Fr[j, 2, a]
            out_fn[k, a] = gn / h * Fr[j, 2, a]
            out_ft[k, a] = (gam[j, 0] * Fr[j, 0, a] + gam[j, 1] * Fr[j, 1, a]) / h
    for b in range(B):
        wx, wy, wz = h * body_qd[b, 3], h * body_qd[b, 4], h * body_qd[b, 5]
        ang = math.sqrt(wx * wx + wy * wy + wz * wz)
        half = 0.5 * ang
        kq = math.sin(half) / ang if ang > 1e-8 else 0.5 - ang * ang / 48.0
        dx, dy, dz, dw = wx * kq, wy * kq, wz * kq, math.cos(half)
        x, y, z, w = body_q[b, 3], body_q[b, 4], body_q[b, 5], body_q[b, 6]
        nx = dw * x + dx * w + dy * z - dz * y
        ny = dw * y - dx * z + dy * w + dz * x
        nz = dw * z + dx * y - dy * x + dz * w
        nw = dw * w - dx * x - dy * y - dz * z
        s = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
        body_q[b, 3] = nx * s
        body_q[b, 4] = ny * s
        body_q[b, 5] = nz * s
        body_q[b, 6] = nw * s
        R = _quat_to_matrix(body_q[b, 3:7])
        for a in range(3):
            body_q[b, a] = com[b, a] + h * body_qd[b, a] - (R[a, 0] * com_local[b, 0] + R[a, 1] * com_local[b, 1]
                                                            + R[a, 2] * com_local[b, 2])
    stats[0] = it_max
    stats[1] = it_total
    stats[2] = n_isl
    stats[3] = failed
    stats[4] = K


@cpu_jit
def shape_world_poses(body_q, shape_body, shape_local_pose, out):
    """(S,7) world poses of the shapes into ``out``: body pose ∘ local pose (static shapes: their
    local pose is their world pose). The compiled twin of ``Model.shape_world_poses``."""
    for s in range(shape_body.shape[0]):
        b = shape_body[s]
        if b < 0:
            for a in range(7):
                out[s, a] = shape_local_pose[s, a]
            continue
        R = _quat_to_matrix(body_q[b, 3:7])
        lp = shape_local_pose[s]
        for a in range(3):
            out[s, a] = body_q[b, a] + R[a, 0] * lp[0] + R[a, 1] * lp[1] + R[a, 2] * lp[2]
        x1, y1, z1, w1 = body_q[b, 3], body_q[b, 4], body_q[b, 5], body_q[b, 6]
        x2, y2, z2, w2 = lp[3], lp[4], lp[5], lp[6]
        out[s, 3] = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
        out[s, 4] = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
        out[s, 5] = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
        out[s, 6] = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2


@cpu_jit
def pair_offsets(pair_a, pair_b, n_shapes, c_pair, c_stiff, c_depth, c_env, prev_keys, prev_off, prev_deep,
                 authored, impact_step, off, deepest):
    """Per pair of this collide call, the overlap its spring leaves alone (``off``, m) and its
    deepest overlap (``deepest``, m) — :class:`~hydro.sim.simulation.Simulation`'s "New contacts".
    ``prev_*``: the pairs that carried force the step before (keys a·S + b, sorted), their offsets
    (already faded) and deepest overlaps; ``authored`` (E+1,) bool by env + 1: envs whose
    overlaps are meant (the first step after a start or reset); ``impact_step`` (m): overlap
    gained in one step beyond which a known pair is still being stopped."""
    P = pair_a.shape[0]
    pair_env = np.full(P, -1, np.int64)
    for p in range(P):
        off[p] = 0.0
        deepest[p] = 0.0
    for k in range(c_pair.shape[0]):
        p = c_pair[k]
        pair_env[p] = c_env[k]
        if c_stiff[k] > 0.0 and -c_depth[k] > deepest[p]:
            deepest[p] = -c_depth[k]
    n_prev = prev_keys.shape[0]
    for p in range(P):
        if authored[pair_env[p] + 1]:
            continue  # a start or reset pose: its overlaps push at once
        key = np.int64(pair_a[p]) * n_shapes + pair_b[p]
        lo = 0
        hi = n_prev
        while lo < hi:
            mid = (lo + hi) // 2
            if prev_keys[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < n_prev and prev_keys[lo] == key:
            off[p] = prev_off[lo]
            grow = deepest[p] - prev_deep[lo]
            if grow > impact_step and off[p] > 0.0:
                off[p] += grow
        else:
            off[p] = deepest[p]


@cpu_jit
def touching_pairs(pair_a, pair_b, n_shapes, c_pair, gn, off, deepest, fade):
    """The pairs that carried force this step (some contact with γn > 0): sorted keys a·S + b,
    their offsets times ``fade`` and their deepest overlaps (the next step's ``prev_*``)."""
    P = pair_a.shape[0]
    used = np.zeros(P, np.bool_)
    for k in range(c_pair.shape[0]):
        if gn[k] > 0.0:
            used[c_pair[k]] = True
    n = 0
    for p in range(P):
        if used[p]:
            n += 1
    keys = np.empty(n, np.int64)
    idx = np.empty(n, np.int64)
    n = 0
    for p in range(P):
        if used[p]:
            keys[n] = np.int64(pair_a[p]) * n_shapes + pair_b[p]
            idx[n] = p
            n += 1
    order = np.argsort(keys)
    out_keys = np.empty(n, np.int64)
    out_off = np.empty(n)
    out_deep = np.empty(n)
    for i in range(n):
        out_keys[i] = keys[order[i]]
        out_off[i] = off[idx[order[i]]] * fade
        out_deep[i] = deepest[idx[order[i]]]
    return out_keys, out_off, out_deep
