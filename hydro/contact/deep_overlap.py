"""Where the hydroelastic model runs out: deep overlap, shapes too small for their grid, margins
larger than the shapes (issue 16's hydroelastic cases; docs/limits.md, "Hydroelastic contact").

**Deep overlap.** The patch is the surface where the two pressure fields are equal. When one shape
sinks wholly into the other (or margins make both "thicker" than they are), the smaller shape's
pressure, bounded by its stiffness times its inradius, no longer reaches the larger one's, the
surface shrinks to nothing and the patch force falls to zero while the overlap keeps growing.
:func:`deep_overlap_contacts` adds one *fallback contact* per such pair, on the host after the
patch is downloaded: for the shape X of the pair (each in turn) whose centre c sits inside the
other, Y, with r the depth of c inside X (its inradius there, margin included) and e the
separation of c from Y (φ_Y − margin, negative inside)::

    F_fallback = k_eff · π ρ² · (r/2 − e),   ρ = min(r, r_Y)

along Y's SDF gradient at c (pushing X out of Y). For a sphere against a flat face it starts at
depth r/2, stays below the patch force while the sphere's centre is above the surface (they meet
at depth r), and grows linearly with the overlap beyond, where the patch vanishes (docs/limits.md
has the curve). ρ, the contact's radius, is Y's inradius r_Y when Y is the
narrower shape (a large X around a small Y). When F_fallback exceeds the patch's own force on the pair, the
pair gets a contact carrying the difference (so the pair's total is the larger of the two), and a
warning names the pair once per pipeline.

**Grid size.** :func:`shape_size_findings` lists hydroelastic shapes that span fewer than
``MIN_VOXELS_ACROSS`` voxels of their grid (after padding, which the SDF builder already refines,
see :func:`hydro.sdf.layout.grid_layout`) and shapes whose margin + gap exceed their own size;
the pipeline warns about each once.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import HydroWarning
from ..jit import cpu_jit
from ..sdf.layout import I_PRIMITIVE
from ..sdf.sample import primitive_field_phi, sdf_phi
from ..geometry.primitives import BOX, CAPSULE, CONE, CYLINDER, ELLIPSOID, SPHERE
from ..transforms import pose_inverse, pose_transform_points, quat_rotate, quat_rotate_one
from .types import Contacts

#: Kinds whose exact distance (Geometry.phi) is evaluated here instead of the sampled field.
EXACT_KINDS = (SPHERE, BOX, CAPSULE, CYLINDER, CONE, ELLIPSOID)

#: A shape narrower than this many voxels of its grid gets a warning (its force is unreliable).
MIN_VOXELS_ACROSS = 4


class HydroelasticLimitWarning(HydroWarning):
    """A hydroelastic pair or shape beyond what the model resolves (see docs/limits.md)."""


def _phi_function(sdf):
    """φ of an SDF at local points (M, 3): the primitive's exact distance, else the field."""
    g = sdf.geometry
    if g.kind in EXACT_KINDS:
        return g.phi
    return lambda pts: np.asarray(sdf.sample(pts), dtype=np.float64)


def shape_size_findings(model) -> list:
    """(shape index, message) for each hydroelastic shape that is narrow on its grid or has a
    margin + gap larger than itself."""
    out = []
    for s in np.flatnonzero(np.asarray(model.shape_hydroelastic, dtype=bool)):
        k = int(model.shape_sdf[s])
        if k < 0:
            continue
        sdf = model.sdfs[k]
        lo, hi = sdf.geometry.local_aabb()
        size = np.asarray(hi, float) - np.asarray(lo, float)
        across = float(size.min()) / sdf.voxel_size
        path = model.shape_path[s]
        pad = float(model.shape_margin[s]) + float(model.shape_gap[s])
        if pad > float(size.max()):
            out.append((int(s), f"shape {path}: margin + gap ({pad:.4g} m) exceed the shape's own size "
                                f"({float(size.max()):.4g} m); its grid is padded by that much, and the "
                                f"fallback of deep overlap may carry its contacts (docs/limits.md)"))
        if across < MIN_VOXELS_ACROSS:
            out.append((int(s), f"shape {path} spans only {across:.2g} voxels of {sdf.voxel_size:.3g} m across "
                                f"(its grid is padded by {sdf.padding:.3g} m): its contact force is unreliable; "
                                f"raise its SDF resolution (newton:sdfMaxResolution / sdfTargetVoxelSize) or "
                                f"lower its margin and gap"))
    return out


def _rotate(q, v, sign=1.0):
    """Rotate rows v (N, 3) by unit quaternions q (N, 4, xyzw), or by their inverse (sign −1):
    :func:`~hydro.transforms.quat_rotate_one` on arrays (np.cross costs more than this call)."""
    qx, qy, qz, qw = sign * q[:, 0], sign * q[:, 1], sign * q[:, 2], q[:, 3]
    vx, vy, vz = v[:, 0], v[:, 1], v[:, 2]
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return np.stack([vx + qw * tx + (qy * tz - qz * ty), vy + qw * ty + (qz * tx - qx * tz),
                     vz + qw * tz + (qx * ty - qy * tx)], axis=1)


@cpu_jit
def _centre_outside(poses, x, y, center, lo, hi):
    """Shape X's centre in shape Y's frame (the inverse rotation), and its distance to Y's bounds:
    (cx, cy, cz, distance)."""
    wx, wy, wz = quat_rotate_one(poses[x, 3], poses[x, 4], poses[x, 5], poses[x, 6],
                                 center[x, 0], center[x, 1], center[x, 2])
    cx, cy, cz = quat_rotate_one(-poses[y, 3], -poses[y, 4], -poses[y, 5], poses[y, 6],
                                 wx + poses[x, 0] - poses[y, 0], wy + poses[x, 1] - poses[y, 1],
                                 wz + poses[x, 2] - poses[y, 2])
    ox = max(max(lo[y, 0] - cx, cx - hi[y, 0]), 0.0)
    oy = max(max(lo[y, 1] - cy, cy - hi[y, 1]), 0.0)
    oz = max(max(lo[y, 2] - cz, cz - hi[y, 2]), 0.0)
    return cx, cy, cz, math.sqrt(ox * ox + oy * oy + oz * oz)


@cpu_jit
def _role(poses, a, b, p, role, center, inradius, lo, hi):
    """Pair p with shape X = B (``role`` 0) or A (1) and Y the other: (Y, X's inradius r, X's centre
    in Y's frame, its distance to Y's bounds; infinite when X has no inside, r <= 0, so that no
    test below trips on it)."""
    x = b[p] if role == 0 else a[p]
    y = a[p] if role == 0 else b[p]
    r = inradius[x]
    if r <= 0.0:
        return y, r, 0.0, 0.0, 0.0, math.inf
    cx, cy, cz, outside = _centre_outside(poses, x, y, center, lo, hi)
    return y, r, cx, cy, cz, outside


@cpu_jit
def _any_may_be_deep(poses, a, b, center, inradius, lo, hi, margin) -> bool:
    """Whether any pair may be in deep overlap: the centre of one shape X lies within r_X/2 of the
    other's bounds (the test :meth:`DeepOverlap.contacts` makes first, for every pair and both roles,
    compiled so that the usual case — no pair near — costs microseconds, not NumPy calls)."""
    for p in range(a.shape[0]):
        for role in range(2):
            y, r, cx, cy, cz, outside = _role(poses, a, b, p, role, center, inradius, lo, hi)
            if outside - margin[y] < 0.5 * r:
                return True
    return False


#: Slack of :func:`_any_deep_candidate`'s test, × X's inradius (plus 1e-9 m): the host recomputes
#: the centre's φ from the same formulas, rotated by NumPy instead (rounding only)
DEEP_TEST_SLACK = 1e-6


@cpu_jit
def _any_deep_candidate(poses, a, b, center, inradius, lo, hi, margin, shape_sdf, sdf) -> bool:
    """Whether any pair may get a fallback contact from :meth:`DeepOverlap.contacts`: the
    separation e of the centre of one shape X from the other, Y (φ_Y − margin, with φ_Y as the host
    evaluates it: a primitive's closed form, else the stored field), is below r_X/2, F_fallback's
    only positive range (less a rounding slack, :data:`DEEP_TEST_SLACK`). The bounds test of
    :func:`_any_may_be_deep` first (φ_Y is at least the distance to Y's bounds), then φ_Y only
    where it trips: two shapes merely pressed together, their centres near each other's bounds
    (a rotated box's corner), ask the host for nothing."""
    for p in range(a.shape[0]):
        for role in range(2):
            y, r, cx, cy, cz, outside = _role(poses, a, b, p, role, center, inradius, lo, hi)
            slack = DEEP_TEST_SLACK * r + 1e-9
            if not outside - margin[y] < 0.5 * r + slack:
                continue
            k = shape_sdf[y]
            if k < 0:
                return True
            if sdf.params_i[k, I_PRIMITIVE] >= 0:
                phi = primitive_field_phi(k, cx, cy, cz, sdf)
            else:
                phi = sdf_phi(k, cx, cy, cz, sdf)
            if not phi - margin[y] >= 0.5 * r + slack:  # (NaN: looked at)
                return True
    return False


class DeepOverlap:
    """The fallback of deep overlap for one pipeline (static per-shape data, warned pairs)."""

    def __init__(self, model):
        self.model = model
        n = len(model.shape_path)
        self.center = np.zeros((n, 3))  # the shape's local centre (its grid box's centre)
        self.inradius = np.zeros(n)  # depth of that centre inside the shape, margin included
        self.lo = np.zeros((n, 3))  # the shape's local bounds
        self.hi = np.zeros((n, 3))
        self.margin = np.asarray(model.shape_margin, dtype=np.float64)
        self.phi = {}
        sdf_index = np.asarray(model.shape_sdf)
        margin = np.asarray(model.shape_margin, dtype=np.float64)
        for s in range(n):
            k = int(sdf_index[s])
            if k < 0 or not model.shape_hydroelastic[s]:
                continue
            if k not in self.phi:
                self.phi[k] = _phi_function(model.sdfs[k])
            lo, hi = model.sdfs[k].geometry.local_aabb()
            self.lo[s], self.hi[s] = lo, hi
            self.center[s] = 0.5 * (np.asarray(lo, float) + np.asarray(hi, float))
            self.inradius[s] = margin[s] - float(self.phi[k](self.center[s][None])[0])
        self.warned = set()

    def _phi_at(self, shape, points):
        return self.phi[int(self.model.shape_sdf[shape])](points) - float(self.model.shape_margin[shape])

    def _gradient(self, shape, point):
        """Unit gradient of the shape's φ at a local point (central differences)."""
        k = int(self.model.shape_sdf[shape])
        eps = 0.05 * self.model.sdfs[k].voxel_size
        offsets = np.vstack([np.eye(3), -np.eye(3)]) * eps
        v = self.phi[k](point[None] + offsets)
        g = (v[:3] - v[3:]) / (2 * eps)
        n = np.linalg.norm(g)
        return g / n if n > 0 and np.isfinite(n) else np.array([0.0, 0.0, 1.0])

    def contacts(self, poses, pair_a, pair_b, contacts: Contacts, *, stacklevel: int = 4) -> Contacts | None:
        """Fallback contacts for the pairs (A, B as the pipeline ordered them) whose patch force is
        below F_fallback (module docstring); None when there are none. Vectorised over pairs: one
        φ evaluation per distinct SDF and orientation. ``stacklevel``: the warning's, as for
        ``warnings.warn`` counted from here (the default names the caller of a
        ``CollisionPipeline.collide`` that called the pipeline's ``collide``, which called this)."""
        model = self.model
        n = len(pair_a)
        if n == 0:
            return None
        a = np.asarray(pair_a, dtype=np.int64)
        b = np.asarray(pair_b, dtype=np.int64)
        poses = np.ascontiguousarray(poses, dtype=np.float64)
        if not _any_may_be_deep(poses, a, b, self.center, self.inradius, self.lo, self.hi, self.margin):
            return None
        stiff = np.asarray(model.shape_stiffness, dtype=np.float64)
        keff = stiff[a] * stiff[b] / (stiff[a] + stiff[b])
        sdf_index = np.asarray(model.shape_sdf)
        best_force = np.zeros(n)
        best_x = np.full(n, -1, dtype=np.int64)
        best_e = np.zeros(n)
        for x, y in ((b, a), (a, b)):
            r = self.inradius[x]
            c_world = _rotate(poses[x, 3:], self.center[x]) + poses[x, :3]
            c_y = _rotate(poses[y, 3:], c_world - poses[y, :3], -1.0)
            # φ_Y(c) >= the distance from c to Y's bounds: only pairs that may have e < r/2 need φ
            outside = np.maximum(np.maximum(self.lo[y] - c_y, c_y - self.hi[y]), 0.0)
            near = (r > 0.0) & (np.sqrt((outside * outside).sum(axis=1)) - self.margin[y] < 0.5 * r)
            if not near.any():
                continue
            e = np.full(n, np.inf)
            for k in np.unique(sdf_index[y][near]):
                sel = near & (sdf_index[y] == k)
                e[sel] = self.phi[int(k)](c_y[sel]) - self.margin[y[sel]]
            # the contact's cross-section: X's, or Y's when Y is the narrower (X around a small Y)
            ry = self.inradius[y]
            rho = np.where(ry > 0.0, np.minimum(r, ry), r)
            with np.errstate(invalid="ignore", over="ignore"):
                force = keff * math.pi * rho * rho * (0.5 * r - e)
            better = (r > 0.0) & np.isfinite(force) & (force > best_force)
            best_force[better] = force[better]
            best_x[better] = x[better]
            best_e[better] = e[better]
        candidates = np.flatnonzero(best_x >= 0)
        if len(candidates) == 0:
            return None
        patch_force = np.zeros((n, 3))
        if len(contacts):
            mine = np.isin(contacts.pair, candidates)
            np.add.at(patch_force, contacts.pair[mine], contacts.force_vectors()[mine])
        extra = best_force - np.linalg.norm(patch_force, axis=1)
        rows = [p for p in candidates if extra[p] > 0.0]
        if not rows:
            return None
        out = Contacts.empty(len(rows))
        env = np.asarray(model.shape_env)
        for i, p in enumerate(rows):
            sa, sb, x = int(a[p]), int(b[p]), int(best_x[p])
            y = sa if x == sb else sb
            point = pose_transform_points(poses[x], self.center[x][None])
            grad = quat_rotate(poses[y][3:], self._gradient(y, pose_transform_points(pose_inverse(poses[y]), point)[0]))
            r = self.inradius[x] if self.inradius[y] <= 0.0 else min(self.inradius[x], self.inradius[y])
            stiffness = keff[p] * math.pi * r * r
            out.point[i] = point[0]
            out.normal[i] = grad if x == sb else -grad  # from A toward B: pushes X out of Y
            out.force[i] = extra[p]
            out.stiffness[i] = stiffness
            out.depth[i] = -extra[p] / stiffness  # the solver's stiffness·(−depth) is the force
            out.weight[i] = extra[p] / stiff[sb]
            out.shape_a[i] = sa
            out.shape_b[i] = sb
            out.env[i] = env[sa] if env[sa] >= 0 else env[sb]
            out.pair[i] = p
            if (sa, sb) not in self.warned:
                self.warned.add((sa, sb))
                warnings.warn(f"deep overlap between {model.shape_path[sa]} and {model.shape_path[sb]}: the "
                              f"hydroelastic patch cannot carry it ({model.shape_path[x]} is sunk {-best_e[p]:.3g} m "
                              f"into the other at its centre); a fallback contact of {best_force[p]:.4g} N along "
                              f"the SDF gradient pushes them apart (docs/limits.md)", HydroelasticLimitWarning,
                              stacklevel=stacklevel)
        return out



def warn_findings(findings, warned: set):
    for s, message in findings:
        if message not in warned:
            warned.add(message)
            warnings.warn(message, HydroelasticLimitWarning, stacklevel=3)
