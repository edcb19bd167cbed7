"""Where bodies are in their scene: what lies beneath them, and whether they left it.

``hydro run`` warns with these before and after stepping (a simulation that runs fine but shows
bodies falling off a ground that is smaller than the env grid should say so):

- :func:`support_warnings` (before): a body with *nothing beneath it* along gravity in some envs
  but not in others (the ground does not reach every env of the replication grid).
- :func:`departure_warnings` (after): bodies that *left the ground* (a static shape was beneath
  them at the start, none is at the end) or *left the scene's bounds* (the box around every shape
  at the start, widened on every side by half its longest edge).

"Beneath" means: the ray from the body's centre of mass along gravity meets the world bounding
box of a collision-enabled shape of another body, or of a static shape, that the body may touch
(same env, or a global shape); an infinite plane counts when gravity points into it. Bounding
boxes make it generous (a body beside a sphere's box counts as supported): it finds grids that
outrun their ground, not balance.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..geometry.shapes import Plane
from ..scene.paths import env_of, env_relative
from ..transforms import quat_rotate

__all__ = ["support_warnings", "departure_warnings", "scene_bounds", "body_centres", "shape_world_boxes", "beneath"]


def body_centres(model, body_q) -> np.ndarray:
    """World centres of mass (..., B, 3) of bodies at poses ``body_q`` (..., B, 7)."""
    q = np.asarray(body_q, dtype=float)
    com = np.broadcast_to(np.asarray(model.body_com, dtype=float), q.shape[:-1] + (3,))
    return q[..., :3] + quat_rotate(q[..., 3:], com)


def shape_world_boxes(model, body_q):
    """``(lo, hi, kind)`` world bounding boxes (S, 3) of every shape at ``body_q``; ``kind`` (S,)
    is 0 for a bounded shape, 1 for a plane (lo holds its point, hi its normal) and 2 for a shape
    without bounds (treated as beneath everything)."""
    poses = model.shape_world_poses(SimpleNamespace(body_q=np.asarray(body_q, dtype=float)))
    S = model.shape_count
    lo = np.zeros((S, 3))
    hi = np.zeros((S, 3))
    kind = np.zeros(S, dtype=np.int8)
    corners = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], dtype=float)
    for s, g in enumerate(model.shape_geometry):
        p, q = poses[s, :3], poses[s, 3:]
        if isinstance(g, Plane):
            kind[s] = 1
            lo[s], hi[s] = p, quat_rotate(q, np.array([0.0, 0.0, 1.0]))
            continue
        try:
            a, b = (np.asarray(v, dtype=float) for v in g.local_aabb())
        except NotImplementedError:
            kind[s] = 2
            continue
        pts = p + quat_rotate(q, a + corners * (b - a))
        lo[s], hi[s] = pts.min(axis=0), pts.max(axis=0)
    return lo, hi, kind


def _ray_hits(origin, direction, lo, hi, kind) -> np.ndarray:
    """Whether the ray ``origin + t·direction`` (t ≥ 0) meets each box (N,) (planes, unbounded)."""
    d = direction
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (lo - origin) / d
        t2 = (hi - origin) / d
    flat = d == 0.0
    inside = (lo <= origin) & (origin <= hi)
    tmin = np.where(flat, -np.inf, np.minimum(t1, t2))
    tmax = np.where(flat, np.inf, np.maximum(t1, t2))
    ok = np.all(~flat | inside, axis=-1)
    near, far = tmin.max(axis=-1), tmax.min(axis=-1)
    hit = ok & (far >= np.maximum(near, 0.0))
    plane = kind == 1
    if plane.any():
        hit[plane] = hi[plane] @ d < 0.0
    hit[kind == 2] = True
    return hit


def beneath(model, body_q, gravity, *, static_only: bool = False, boxes=None, centres=None) -> np.ndarray:
    """bool (B,): whether something lies beneath each dynamic body at ``body_q`` (see the module
    docstring); True for kinematic bodies and when gravity is zero. ``static_only``: count only
    static shapes. ``boxes``: :func:`shape_world_boxes` already computed (with ``static_only``,
    those at any poses serve: static shapes do not move); ``centres``: :func:`body_centres` at
    ``body_q``, if already computed."""
    B = model.body_count
    out = np.ones(B, dtype=bool)
    g = np.asarray(gravity, dtype=float)
    norm = float(np.linalg.norm(g))
    if B == 0 or not np.isfinite(norm) or norm == 0.0:
        return out
    d = g / norm
    lo, hi, kind = shape_world_boxes(model, body_q) if boxes is None else boxes
    centres = body_centres(model, body_q) if centres is None else centres
    shape_body = np.asarray(model.shape_body)
    shape_env = np.asarray(model.shape_env)
    usable = np.asarray(getattr(model, "shape_collision_enabled", np.ones(model.shape_count, bool)), dtype=bool)
    if static_only:
        usable = usable & (shape_body < 0)
    dynamic = np.asarray(model.body_inv_mass, dtype=float) > 0.0
    body_env = np.asarray(model.body_env)
    for b in np.flatnonzero(dynamic):
        cand = usable & (shape_body != b) & ((shape_env == body_env[b]) | (shape_env < 0))
        idx = np.flatnonzero(cand)
        out[b] = bool(idx.size) and bool(_ray_hits(centres[b], d, lo[idx], hi[idx], kind[idx]).any())
    return out


def _box_text(lo, hi) -> str:
    return ", ".join(f"{a} [{lo[k]:.3g}, {hi[k]:.3g}]" for k, a in enumerate("xyz")) + " m"


def _envs_text(envs, limit: int = 5) -> str:
    envs = [int(e) for e in envs]
    head = ", ".join(str(e) for e in envs[:limit])
    return head + (", …" if len(envs) > limit else "")


def support_warnings(model, gravity) -> list:
    """Messages for the bodies (by env-relative path) that have nothing beneath them in some envs
    but something in others, at the model's initial poses."""
    if model.num_envs < 2:
        return []
    ok = beneath(model, model.body_q0, gravity)
    groups: dict = {}
    for b, path in enumerate(model.body_path):
        e = env_of(path)
        if e is not None:
            groups.setdefault(env_relative(path), []).append((e, b))
    lo, hi, kind = shape_world_boxes(model, model.body_q0)
    static = (np.asarray(model.shape_body) < 0) & (kind == 0)
    origins = np.asarray(model.env_origins, dtype=float)
    out = []
    for rel, members in groups.items():
        missing = sorted(e for e, b in members if not ok[b])
        if not missing or len(missing) == len(members):
            continue
        e0 = missing[0]
        b0 = next(b for e, b in members if e == e0)
        c = body_centres(model, model.body_q0)[b0]
        cover = f"; the static shapes span {_box_text(lo[static].min(0), hi[static].max(0))}" if static.any() else ""
        out.append(f"{rel} has nothing beneath it in {len(missing)} of {len(members)} envs (env {_envs_text(missing)}; "
                   f"env {e0}'s is at ({c[0]:.3g}, {c[1]:.3g}, {c[2]:.3g}) m){cover}, the env origins "
                   f"{_box_text(origins.min(0), origins.max(0))}: those bodies fall (use fewer envs or a larger ground)")
    return out


def scene_bounds(model, boxes=None):
    """``(lo, hi, widen)``: the box around every bounded shape at the start and the planes under it,
    widened on every side by ``widen`` (half its longest edge), or None without a bounded shape
    (``boxes``: :func:`shape_world_boxes` at ``model.body_q0``, if already computed)."""
    lo, hi, kind = shape_world_boxes(model, model.body_q0) if boxes is None else boxes
    bounded = kind == 0
    if not bounded.any():
        return None
    blo, bhi = lo[bounded].min(0), hi[bounded].max(0)
    # a plane bounds the scene where it passes under it: its point nearest the shapes' centre
    # (a ball dropped onto a plane lands inside, not "outside the scene")
    centre = 0.5 * (blo + bhi)
    for s in np.flatnonzero(kind == 1):
        foot = centre - float(np.dot(centre - lo[s], hi[s])) * hi[s]
        blo, bhi = np.minimum(blo, foot), np.maximum(bhi, foot)
    widen = 0.5 * float((bhi - blo).max())
    return blo - widen, bhi + widen, widen


def departure_warnings(model, body_q_history, gravity, times, *, start_boxes=None, start_beneath=None,
                       bounds=False) -> list:
    """Messages for the bodies that left the ground or the scene's bounds during a run
    (``body_q_history`` (T, B, 7) at ``times`` (T,) s). What depends only on the start — the
    shapes' boxes there (``start_boxes``), :func:`beneath` there (``start_beneath``), the
    :func:`scene_bounds` (``bounds``) — may be passed in by a caller that checks again and again
    (:class:`hydro.sim.departure.DepartureWatch`)."""
    hist = np.asarray(body_q_history, dtype=float)
    if hist.shape[0] == 0 or model.body_count == 0:
        return []
    out = []
    dynamic = np.asarray(model.body_inv_mass, dtype=float) > 0.0
    centres = body_centres(model, hist)  # (T, B, 3)
    boxes = shape_world_boxes(model, model.body_q0) if start_boxes is None else start_boxes
    box = scene_bounds(model, boxes) if bounds is False else bounds
    if box is not None:
        blo, bhi, widen = box
        outside = np.any((centres < blo) | (centres > bhi), axis=-1) & dynamic  # (T, B)
        left = np.flatnonzero(outside.any(axis=0))
        if left.size:
            first = outside[:, left].argmax(axis=0)
            k = int(np.argmin(first))
            b, t = int(left[k]), int(first[k])
            c = centres[t, b]
            envs = sorted({int(model.body_env[i]) for i in left})
            out.append(f"{left.size} bodies in {len(envs)} env(s) left the scene's bounds ({_box_text(blo, bhi)}, the "
                       f"box around every shape and the planes under them at the start, widened by {widen:.3g} m): "
                       f"first {model.body_path[b]} at ({c[0]:.3g}, {c[1]:.3g}, {c[2]:.3g}) m at t = {times[t]:.4g} s")
    start = (beneath(model, model.body_q0, gravity, static_only=True, boxes=boxes) if start_beneath is None
             else start_beneath)
    end = beneath(model, hist[-1], gravity, static_only=True, boxes=boxes,  # static shapes: where they started
                  centres=centres[-1])
    fell = np.flatnonzero(start & ~end & dynamic)
    if fell.size:
        b = int(fell[0])
        c = centres[-1, b]
        out.append(f"{fell.size} bodies left the ground (a static shape was beneath them at the start, none is at the "
                   f"end): first {model.body_path[b]}, now at ({c[0]:.3g}, {c[1]:.3g}, {c[2]:.3g}) m")
    return out
