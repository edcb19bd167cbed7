"""Contact sensors' debug view (``debug_vis``), drawn from plain arrays.

:class:`SensorArrays` is what is drawn; :func:`draw_sensor` draws it:

- a red marker at every sensor body **in contact** (none for a body out of contact),
- net force arrows at those bodies, filtered (per-partner) force arrows at their centres of
  pressure, the centres of pressure themselves (yellow),
- per-contact points with their own colour and size (EmbodiChain style).

Adapters read what a sensor publishes (duck-typed, so a real sensor is wired in a few lines);
they never recompute a sensor's values:

- :func:`contact_sensor_arrays` — Isaac Lab style ``ContactSensor``. Drawn only when its debug
  view is on: the sensor's own ``debug_vis`` attribute (hydro's, changed by
  ``set_debug_vis``), else ``sensor.cfg.debug_vis``. A sensor with ``debug_markers()`` (hydro's
  :class:`~hydro.sim.sensors.ContactSensor`) says itself where its bodies are, which are in
  contact and their net forces (``position``, ``in_contact``, ``force``). Otherwise the adapter
  reads ``sensor.data``: ``net_forces_w`` (E,S,3), the bodies' positions from ``data.pos_w``
  (E,S,3) or from the sensor's body indices (``body_ids``, ``body_indices`` or ``body_index``,
  on the sensor or its data; (S,) or (E,S)) into the scene's body positions, and in contact
  from ``data.in_contact`` (E,S) when present, else as Isaac Lab's own debug view decides it:
  ``|net_forces_w| > cfg.force_threshold`` (N, default 0). Either way the filtered forces
  ``data.force_matrix_w`` (E,S,F,3) and centres of pressure ``data.contact_pos_w`` (E,S,F,3,
  NaN without contact) are drawn when present.
- :func:`contact_point_arrays` — EmbodiChain style per-contact sensor. A sensor with
  ``contact_points_to_draw()`` (hydro's :class:`~hydro.sim.embodichain.ContactSensor`) gives the
  world points itself; otherwise ``get_data()`` gives ``position`` (E,C,3) and ``is_valid``
  (E,C). What ``set_contact_point_visibility(visible, rgba, point_size, env_ids)`` stored is read
  from ``contact_point_visibility`` (a mapping or an object with those four names) or from the
  public attributes ``contact_point_visible``, ``contact_point_rgba``, ``contact_point_size``,
  ``contact_point_env_ids``. ``point_size`` is the points' radius in millimetres.
- :func:`pipeline_sensor_arrays` — not a sensor: every body's contact picture from a collision
  result's per-pair totals (:meth:`~hydro.CollisionResult.pair_summaries`), for the viewer's
  "body contact sensors" option.

Torch tensors are accepted anywhere an array is (``.detach().cpu().numpy()``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .backend import group, remove_structures

MARKER_COLOR = (0.9, 0.05, 0.05)
NET_FORCE_COLOR = (0.9, 0.1, 0.1)
FILTERED_FORCE_COLOR = (0.95, 0.55, 0.0)
COP_COLOR = (0.95, 0.85, 0.0)


@dataclass
class SensorArrays:
    """One sensor's debug picture, world frame.

    | field | shape | meaning |
    |---|---|---|
    | ``body_position`` | (N,3) | m, the sensor bodies |
    | ``in_contact`` | (N,) bool | a marker is drawn only where true |
    | ``net_force`` | (N,3) or None | N, net contact force on each body |
    | ``filtered_force`` | (N,F,3) or None | N, force from each filtered partner |
    | ``center_of_pressure`` | (N,F,3) or None | m, where each filtered force acts; NaN: none |
    | ``contact_point`` | (M,3) or None | m, per-contact points |
    | ``contact_point_rgba`` | (4,) or (M,4) | colour of the points, 0..1 |
    | ``contact_point_radius`` | float | m |
    """

    body_position: np.ndarray
    in_contact: np.ndarray
    net_force: np.ndarray | None = None
    filtered_force: np.ndarray | None = None
    center_of_pressure: np.ndarray | None = None
    contact_point: np.ndarray | None = None
    contact_point_rgba: np.ndarray | None = None
    contact_point_radius: float = 0.003

    @classmethod
    def empty(cls) -> "SensorArrays":
        return cls(np.zeros((0, 3)), np.zeros(0, dtype=bool))


def to_numpy(x, dtype=float):
    """A NumPy array from an array, a list or a torch tensor (None stays None)."""
    if x is None:
        return None
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "cpu"):
        x = x.cpu()
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    return np.asarray(x, dtype=dtype)


def _first_attr(objs, names, default=None):
    for obj in objs:
        for name in names:
            if obj is not None and getattr(obj, name, None) is not None:
                return getattr(obj, name)
    return default


def contact_sensor_arrays(sensor, *, body_positions=None) -> SensorArrays:
    """Isaac Lab–style ``ContactSensor`` → :class:`SensorArrays` (see the module docstring).

    ``body_positions`` (B,3): world positions of the scene's bodies, used with the sensor's
    body indices when its data has no ``pos_w``.
    """
    cfg = getattr(sensor, "cfg", None)
    debug_vis = getattr(sensor, "debug_vis", None)
    if debug_vis is None:
        debug_vis = getattr(cfg, "debug_vis", True)
    if not bool(debug_vis):
        return SensorArrays.empty()
    data = sensor.data
    filtered = to_numpy(getattr(data, "force_matrix_w", None))
    cop = to_numpy(getattr(data, "contact_pos_w", None))
    if callable(getattr(sensor, "debug_markers", None)):
        markers = sensor.debug_markers()
        pos = to_numpy(markers["position"])
        n = int(np.prod(pos.shape[:-1]))
        return SensorArrays(body_position=pos.reshape(n, 3),
                            in_contact=to_numpy(markers["in_contact"], bool).reshape(n),
                            net_force=to_numpy(markers["force"]).reshape(n, 3),
                            filtered_force=None if filtered is None else filtered.reshape(n, -1, 3),
                            center_of_pressure=None if cop is None else cop.reshape(n, -1, 3))
    net = to_numpy(data.net_forces_w)
    if net.ndim == 2:
        net = net[None]
    E, S = net.shape[:2]
    pos = to_numpy(getattr(data, "pos_w", None))
    if pos is None or pos.size == 0:
        ids = _first_attr((sensor, data), ("body_ids", "body_indices", "body_index"))
        if ids is None or body_positions is None:
            raise ValueError("the sensor's data has no pos_w: give body_positions and a sensor with body_ids")
        ids = to_numpy(ids, np.int64)
        ids = np.broadcast_to(ids.reshape(-1) if ids.size == S else ids.reshape(E, S), (E, S))
        pos = to_numpy(body_positions)[ids]
    pos = pos.reshape(E * S, 3)
    net = net.reshape(E * S, 3)
    flag = to_numpy(getattr(data, "in_contact", None), bool)
    if flag is not None:
        in_contact = flag.reshape(E * S)
    else:
        threshold = float(getattr(cfg, "force_threshold", 0.0) or 0.0)
        in_contact = np.linalg.norm(net, axis=1) > threshold
    if filtered is not None:
        filtered = filtered.reshape(E * S, -1, 3)
    if cop is not None:
        cop = cop.reshape(E * S, -1, 3)
    return SensorArrays(body_position=pos, in_contact=in_contact, net_force=net, filtered_force=filtered,
                        center_of_pressure=cop)


_VISIBILITY_ATTRS = {"visible": "contact_point_visible", "rgba": "contact_point_rgba",
                     "point_size": "contact_point_size", "env_ids": "contact_point_env_ids"}


def _visibility(sensor) -> dict:
    """What ``set_contact_point_visibility`` stored: visible (default True), rgba, point_size, env_ids."""
    stored = getattr(sensor, "contact_point_visibility", None)
    out = {}
    for key, attr in _VISIBILITY_ATTRS.items():
        if stored is not None:
            value = stored.get(key) if isinstance(stored, dict) else getattr(stored, key, None)
        else:
            value = getattr(sensor, attr, None)
        out[key] = value
    if out["visible"] is None:
        out["visible"] = True
    return out


def _field(data, name):
    try:
        return data[name]
    except (TypeError, KeyError, IndexError):
        return getattr(data, name)


def contact_point_arrays(sensor) -> SensorArrays:
    """EmbodiChain-style per-contact sensor → :class:`SensorArrays` (see the module docstring)."""
    vis = _visibility(sensor)
    if not vis["visible"]:
        return SensorArrays.empty()
    if callable(getattr(sensor, "contact_points_to_draw", None)):
        points = to_numpy(sensor.contact_points_to_draw()).reshape(-1, 3)
    else:
        d = sensor.get_data()
        position = to_numpy(_field(d, "position"))
        valid = to_numpy(_field(d, "is_valid"), bool)
        if position.ndim == 2:
            position, valid = position[None], valid[None]
        if vis["env_ids"] is not None:
            envs = to_numpy(vis["env_ids"], np.int64).reshape(-1)
            position, valid = position[envs], valid[envs]
        points = position[valid].reshape(-1, 3)
    rgba = np.asarray(vis["rgba"] if vis["rgba"] is not None else (0.8, 0.2, 0.2, 1.0), dtype=float)
    if rgba.max() > 1.0:  # 0..255
        rgba = rgba / 255.0
    size = float(vis["point_size"]) if vis["point_size"] is not None else 3.0
    return SensorArrays(body_position=np.zeros((0, 3)), in_contact=np.zeros(0, dtype=bool),
                        contact_point=points, contact_point_rgba=rgba,
                        contact_point_radius=size * 1e-3)


def sensor_arrays(sensor, *, body_positions=None) -> SensorArrays:
    """Either adapter, by what the sensor has (``data`` → contact sensor, ``get_data`` → points)."""
    if hasattr(sensor, "data") and hasattr(sensor.data, "net_forces_w"):
        return contact_sensor_arrays(sensor, body_positions=body_positions)
    if hasattr(sensor, "get_data"):
        return contact_point_arrays(sensor)
    if isinstance(sensor, SensorArrays):
        return sensor
    raise ValueError(f"cannot read a {type(sensor).__name__} as a contact sensor: it has neither data.net_forces_w "
                     f"nor get_data()")


def pipeline_sensor_arrays(model, state, result, *, bodies=None, force_threshold: float = 0.0) -> SensorArrays:
    """Every body (or ``bodies``) drawn like a contact sensor, from a collision result's per-pair
    totals (:meth:`~hydro.CollisionResult.pair_summaries`).

    Net force on a body: the sum over its shapes' pairs (+ on shape B, − on shape A). Filtered
    forces: one slot per pair of the result, with the pair's centre of pressure, for the bodies
    of that pair (zero and NaN elsewhere).
    """
    bodies = np.arange(model.body_count) if bodies is None else np.asarray(bodies, dtype=np.int64)
    body_q = np.asarray(state.body_q, dtype=float)
    n_pairs = len(result.pair_shape_a)
    net = np.zeros((len(bodies), 3))
    filtered = np.zeros((len(bodies), n_pairs, 3))
    cop = np.full((len(bodies), n_pairs, 3), np.nan)
    row = {int(b): i for i, b in enumerate(bodies)}
    for p, s in enumerate(result.pair_summaries()):
        for shape, sign in ((s.shape_b, 1.0), (s.shape_a, -1.0)):
            body = int(model.shape_body[shape])
            if body in row:
                net[row[body]] += sign * s.net_force
                filtered[row[body], p] = sign * s.net_force
                if np.linalg.norm(s.net_force) > 0:
                    cop[row[body], p] = s.center_of_pressure
    in_contact = np.linalg.norm(net, axis=1) > force_threshold
    return SensorArrays(body_position=body_q[bodies, :3] if len(bodies) else np.zeros((0, 3)), in_contact=in_contact,
                        net_force=net, filtered_force=filtered, center_of_pressure=cop)


def draw_sensor(name: str, arrays: SensorArrays, *, force_scale: float, marker_radius: float) -> list:
    """Draw ``arrays`` as Polyscope structures named ``name/...``; returns the names drawn.

    Call :func:`remove_sensor` first to redraw: a structure that has nothing to show (no body
    in contact, no valid contact point) is not registered at all.
    """
    import polyscope as ps

    group("sensors")
    drawn = []
    contact = np.asarray(arrays.in_contact, dtype=bool)
    pos = np.asarray(arrays.body_position, dtype=float).reshape(-1, 3)
    if contact.any():
        pc = ps.register_point_cloud(f"{name}/in contact", pos[contact], color=MARKER_COLOR, material="flat")
        pc.set_radius(marker_radius, relative=False)
        if arrays.net_force is not None and force_scale > 0:
            pc.add_vector_quantity("net force", np.asarray(arrays.net_force, float)[contact] * force_scale,
                                   vectortype="ambient", enabled=True, color=NET_FORCE_COLOR,
                                   radius=0.35 * marker_radius / ps.get_length_scale())
        pc.add_to_group("sensors")
        drawn.append(f"{name}/in contact")
    if arrays.filtered_force is not None and force_scale > 0 and len(pos):
        f = np.asarray(arrays.filtered_force, dtype=float).reshape(len(pos), -1, 3)
        at = np.repeat(pos[:, None, :], f.shape[1], axis=1)
        if arrays.center_of_pressure is not None:
            cop = np.asarray(arrays.center_of_pressure, dtype=float).reshape(f.shape)
            finite = np.all(np.isfinite(cop), axis=-1)
            at = np.where(finite[..., None], cop, at)
        keep = np.linalg.norm(f, axis=-1) > 0
        if keep.any():
            pc = ps.register_point_cloud(f"{name}/filtered force", at[keep], color=FILTERED_FORCE_COLOR,
                                         material="flat")
            pc.set_radius(0.5 * marker_radius, relative=False)
            pc.add_vector_quantity("filtered force", f[keep] * force_scale, vectortype="ambient", enabled=True,
                                   color=FILTERED_FORCE_COLOR, radius=0.25 * marker_radius / ps.get_length_scale())
            pc.add_to_group("sensors")
            drawn.append(f"{name}/filtered force")
    if arrays.center_of_pressure is not None:
        cop = np.asarray(arrays.center_of_pressure, dtype=float).reshape(-1, 3)
        cop = cop[np.all(np.isfinite(cop), axis=1)]
        if len(cop):
            pc = ps.register_point_cloud(f"{name}/centre of pressure", cop, color=COP_COLOR, material="flat")
            pc.set_radius(0.6 * marker_radius, relative=False)
            pc.add_to_group("sensors")
            drawn.append(f"{name}/centre of pressure")
    if arrays.contact_point is not None and len(arrays.contact_point):
        pts = np.asarray(arrays.contact_point, dtype=float).reshape(-1, 3)
        rgba = np.asarray(arrays.contact_point_rgba if arrays.contact_point_rgba is not None else (0.8, 0.2, 0.2, 1.0),
                          dtype=float)
        pc = ps.register_point_cloud(f"{name}/contact points", pts, material="flat")
        pc.set_radius(float(arrays.contact_point_radius), relative=False)
        if rgba.ndim == 1:
            pc.set_color(tuple(rgba[:3]))
            if rgba.shape[0] == 4 and rgba[3] < 1.0:
                pc.set_transparency(float(rgba[3]))
        else:
            pc.add_color_quantity("rgba", rgba[:, :3], enabled=True)
        pc.add_to_group("sensors")
        drawn.append(f"{name}/contact points")
    return drawn


def remove_sensor(name: str) -> None:
    """Remove what :func:`draw_sensor` drew under ``name``."""
    remove_structures(("point_cloud", f"{name}/{part}")
                      for part in ("in contact", "filtered force", "centre of pressure", "contact points"))
