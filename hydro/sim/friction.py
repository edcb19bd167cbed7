"""The solver's friction: one implicit Coulomb solve per sub-step, over every shape pair in contact.

Friction, per shape pair, is Coulomb with the pair's coefficients combined as PhysX does by
default (the average of the two shapes' static and dynamic coefficients). It is regularised
implicitly, at the velocity level: each pair's friction acts at its centre of pressure as a
tangential force and a moment about the mean normal, and the impulses are those that stop every
pair's slip and spin within the sub-step, solved together for pairs that share a body
(λ = −D⁻¹·u with D = J·M⁻¹·Jᵀ, rotation included). A pair whose impulse leaves the cone
``|F_t| <= μ_s·Fn`` slides with ``μ_d·Fn`` against its would-be slip (and the torsional limit
``μ·Fn·ρ``, ρ the force-weighted mean distance of the contacts from the centre of pressure), and
the others are solved again with it held (``iterations`` rounds). A viscous regularisation
``−μ·fn·v/v_eps`` would limit the sub-step to ``~v_eps/(μ·g)`` and creep at ``~v_eps``; this
form sticks exactly below the cone and never limits the sub-step. The pair's friction force is
shared among its contacts in proportion to their normal force (plus the torsional part, a pure
moment), so per-contact normal and friction forces are both kept.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .sensing import rows_sum

__all__ = ["solve_friction", "DENSE_FRICTION_MAX"]

#: Friction systems with at most this many unknowns (3 per pair) are solved dense, larger ones sparse.
DENSE_FRICTION_MAX = 300


def _solve_sym(matrix, rhs):
    """Solve a positive definite system, dense or sparse."""
    if isinstance(matrix, np.ndarray):
        return np.linalg.solve(matrix, rhs)
    from scipy.sparse.linalg import spsolve

    return spsolve(matrix.tocsc(), rhs)


def _basis(n):
    """Deterministic unit tangents (t1, t2) completing unit normals n (P,3)."""
    a = np.zeros_like(n)
    use_x = np.abs(n[:, 0]) < 0.57735
    use_y = ~use_x & (np.abs(n[:, 1]) < 0.57735)
    a[use_x, 0] = 1.0
    a[use_y, 1] = 1.0
    a[~use_x & ~use_y, 2] = 1.0
    t1 = np.cross(a, n)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return t1, np.cross(n, t1)


def solve_friction(*, pair, pair_count, fn, normal, point, shape_a, shape_b, body_a, body_b, inv_mass, inv_inertia,
                   com, velocity, dynamic, h, shape_friction, iterations):
    """Friction forces (N,3) on shape B of each of N penetrating contacts (module docstring).

    Per contact: ``pair`` its shape pair (< ``pair_count``), ``fn`` its normal force (N),
    ``normal``, ``point``, ``shape_a``/``shape_b`` and ``body_a``/``body_b`` (padded body rows:
    the last row of the per-body arrays is the static world). Per padded body: ``inv_mass``,
    ``inv_inertia`` (world), ``com`` (world), ``velocity`` ((B+1,6), the predicted velocities,
    updated in place for ``dynamic`` bodies). ``h`` the sub-step (s), ``shape_friction`` (S,2)
    the shapes' (static, dynamic) coefficients, ``iterations`` the active-set rounds.
    """
    fr = np.asarray(shape_friction, dtype=float)
    pts, nrm, sa, sb, ia, ib = point, normal, shape_a, shape_b, body_a, body_b
    n_pairs = pair_count
    Fn = np.bincount(pair, weights=fn, minlength=n_pairs)
    live = np.flatnonzero(Fn > 0.0)
    friction = np.zeros((len(fn), 3))
    if len(live) == 0:
        return friction
    first = np.full(n_pairs, -1, np.int64)
    used, at = np.unique(pair, return_index=True)
    first[used] = at
    f0 = first[live]
    A, Bb = ia[f0], ib[f0]
    mobile = (inv_mass[A] + inv_mass[Bb]) > 0.0
    live, f0, A, Bb = live[mobile], f0[mobile], A[mobile], Bb[mobile]
    if len(live) == 0:
        return friction
    P = len(live)
    slot = np.full(n_pairs, -1, np.int64)
    slot[live] = np.arange(P)
    Fl = Fn[live]
    cop = rows_sum(pair, fn[:, None] * pts, n_pairs)[live] / Fl[:, None]
    nsum = rows_sum(pair, fn[:, None] * nrm, n_pairs)[live]
    nn = np.linalg.norm(nsum, axis=1)
    ok = nn > 1e-12 * Fl
    n_p = nsum / np.where(ok, nn, 1.0)[:, None]
    n_p[~ok] = nrm[f0[~ok]]
    t1, t2 = _basis(n_p)
    # contact offsets from the centre of pressure, in the tangent plane
    ci = slot[pair]
    has = ci >= 0
    d = np.zeros_like(pts)
    d[has] = pts[has] - cop[ci[has]]
    d[has] -= np.sum(d[has] * n_p[ci[has]], axis=1, keepdims=True) * n_p[ci[has]]
    dn = np.linalg.norm(d, axis=1)
    rho = np.bincount(ci[has], weights=fn[has] * dn[has], minlength=P) / Fl
    s2 = np.bincount(ci[has], weights=fn[has] * dn[has] ** 2, minlength=P)
    mu_s = 0.5 * (fr[sa[f0], 0] + fr[sb[f0], 0])
    mu_d = 0.5 * (fr[sa[f0], 1] + fr[sb[f0], 1])

    def jac(X):
        r = cop - com[X]
        J = np.zeros((P, 3, 6))
        J[:, 0, :3] = t1
        J[:, 0, 3:] = np.cross(r, t1)
        J[:, 1, :3] = t2
        J[:, 1, 3:] = np.cross(r, t2)
        J[:, 2, 3:] = n_p
        W = np.zeros((P, 6, 6))
        W[:, :3, :3] = inv_mass[X][:, None, None] * np.eye(3)
        W[:, 3:, 3:] = inv_inertia[X]
        JW = np.einsum("pij,pjk->pik", J, W)
        return J, JW

    JA, JWA = jac(A)
    JB, JWB = jac(Bb)
    # The pairs' friction impulses λ (3 per pair: two tangents and the spin about the normal)
    # act on the bodies through J; the Delassus matrix D = J·M⁻¹·Jᵀ couples pairs that share a
    # body. Sticking is λ = −D⁻¹·u, u the pairs' slip velocities; a pair beyond its cone
    # slides with μ_d·Fn against the would-be slip and is held there while the rest re-solve.
    # only the bodies these pairs touch enter the system
    used, local = np.unique(np.concatenate([A, Bb]), return_inverse=True)
    la, lb = local[:P], local[P:]
    nu = len(used)
    rows = np.broadcast_to(np.arange(3 * P).reshape(P, 3, 1), (P, 3, 6))
    cols_a = np.broadcast_to((6 * la)[:, None, None] + np.arange(6)[None, None, :], (P, 3, 6))
    cols_b = np.broadcast_to((6 * lb)[:, None, None] + np.arange(6)[None, None, :], (P, 3, 6))
    r_idx = np.concatenate([rows.ravel(), rows.ravel()])
    c_idx = np.concatenate([cols_a.ravel(), cols_b.ravel()])
    j_val = np.concatenate([-JA.ravel(), JB.ravel()])
    wj_val = np.concatenate([-JWA.ravel(), JWB.ravel()])
    if 3 * P <= DENSE_FRICTION_MAX:
        J = np.zeros((3 * P, 6 * nu))
        WJt = np.zeros((3 * P, 6 * nu))
        np.add.at(J, (r_idx, c_idx), j_val)
        np.add.at(WJt, (r_idx, c_idx), wj_val)
        WJt = WJt.T  # M⁻¹·Jᵀ
        D = J @ WJt
        D[np.arange(2, 3 * P, 3), np.arange(2, 3 * P, 3)] += 1e-12 * (D.diagonal().max() or 1.0)
    else:
        J = sparse.csr_matrix((j_val, (r_idx, c_idx)), shape=(3 * P, 6 * nu))
        WJt = sparse.csr_matrix((wj_val, (r_idx, c_idx)), shape=(3 * P, 6 * nu)).T.tocsr()
        D = (J @ WJt).tocsc()
        # a point contact has no spin resistance: keep its spin row solvable
        D = D + sparse.diags(np.tile([0.0, 0.0, 1e-12], P) * (D.diagonal().max() or 1.0))
    v_used = velocity[used]
    u = J @ v_used.ravel()
    lim_t = mu_s * Fl * h
    lim_s = mu_s * Fl * rho * h
    lam = np.zeros(3 * P)
    fixed = np.zeros((P, 3), dtype=bool)
    for _ in range(iterations):
        free = np.flatnonzero(~fixed.ravel())
        if len(free) == 0:
            break
        rhs = -u[free]
        held = np.flatnonzero(fixed.ravel())
        if len(held):
            rhs = rhs - D[free][:, held] @ lam[held]
        lam[free] = _solve_sym(D[free][:, free], rhs)
        lt = lam.reshape(P, 3)
        tmag = np.linalg.norm(lt[:, :2], axis=1)
        slide = ~fixed[:, 0] & (tmag > lim_t)
        spin = ~fixed[:, 2] & (np.abs(lt[:, 2]) > lim_s)
        if not slide.any() and not spin.any():
            break
        lt[slide, :2] *= (mu_d[slide] * Fl[slide] * h / tmag[slide])[:, None]
        lt[spin, 2] = np.sign(lt[spin, 2]) * mu_d[spin] * Fl[spin] * rho[spin] * h
        fixed[slide, :2] = True
        fixed[spin, 2] = True
    lam = lam.reshape(P, 3)
    moved = used[dynamic[used]]
    velocity[moved] = (v_used + (WJt @ lam.ravel()).reshape(nu, 6))[dynamic[used]]
    # share each pair's friction among its contacts (force ∝ fn, plus the torsional part)
    Ft = (lam[:, 0:1] * t1 + lam[:, 1:2] * t2) / h
    Mn = lam[:, 2] / h
    friction[has] = (fn[has] / Fl[ci[has]])[:, None] * Ft[ci[has]]
    tors = has & (s2[np.maximum(ci, 0)] > 0.0)
    k = ci[tors]
    friction[tors] += (Mn[k] * fn[tors] / s2[k])[:, None] * np.cross(n_p[k], d[tors])
    return friction
