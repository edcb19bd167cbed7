"""A scene being looked at: model, state, contact config, the last collision and its drawing.

:class:`SceneView` never changes the model or the state it is given: an edit of a stiffness or
of an SDF's resolution replaces ``view.model`` by a new model that hydro makes
(:meth:`hydro.Model.with_sdf_resolution`, :func:`dataclasses.replace`), and ``view.state`` is the
view's own copy. Every edit marks what must be recomputed; :meth:`SceneView.update` recomputes
it (pipeline, collision, patch meshes) and :meth:`SceneView.draw` pushes the picture to Polyscope.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

import hydro
from hydro.contact.collision import CollisionPipeline
from hydro.contact.config import CollisionConfig, hydroelastic_config
from hydro.contact.patch_mesh import patch_meshes
from hydro.geometry import PLANE
from hydro.transforms import check_poses, quat_rotate

from .contacts import ContactLayer, ContactSettings
from .sdf_view import SDFLayer, SliceSettings
from .shapes import ShapeLayer
from .sensors import draw_sensor, pipeline_sensor_arrays, remove_sensor, sensor_arrays

BODY_SENSOR = "body contacts"


@dataclass
class ViewSettings:
    """Everything the picture shows (the panel edits these)."""

    show_sdf_mesh: bool = True
    """Each shape's SDF zero level set."""
    show_source_mesh: bool = False
    """Each shape's source geometry (primitives tessellated, meshes as authored)."""
    shape_transparency: float = 0.35
    """Opacity of the shape meshes (0..1; static shapes get half)."""
    contacts: ContactSettings = field(default_factory=ContactSettings)
    slice_shape: int | None = None
    """Shape whose SDF is sliced (None: no slice)."""
    slice: SliceSettings = field(default_factory=SliceSettings)
    show_legend: bool = True
    """The legend over the picture (shape roles, contact markers; :mod:`viz.legend`)."""
    show_body_sensors: bool = False
    """Every body as a contact sensor computed from the collision (marker when in contact,
    net and per-pair forces, centres of pressure)."""


class SceneView:
    """Model + state + config → collision result, patch meshes, numbers, picture."""

    def __init__(self, model, *, config=None, state=None, device: str = "cpu", settings: ViewSettings | None = None):
        if len(model.sdfs) != len(model.sdf_specs):
            model = replace(model)  # a copy to build: the caller's model stays as it was given
            model.build_sdfs()
        self.model = model
        state = state if state is not None else model.state()
        self.state = replace(state, body_q=np.array(state.body_q, dtype=float),
                             body_qd=np.array(state.body_qd, dtype=float))
        self.initial_body_q = self.state.body_q.copy()
        self.config = hydroelastic_config(config)
        self.device = device
        self.settings = settings or ViewSettings()
        self.sensors = {}
        self.pipeline = None
        self.result = None
        self.patches = []
        self.patch_ms = 0.0
        self.last_image = None
        """The last picture :func:`viz.render` took of this view, (H, W, 4) uint8."""
        self._shapes = None
        self._contacts = None
        self._slice = None
        self._sensor_names = set()

    @classmethod
    def from_usd(cls, path, *, num_envs: int = 1, **kwargs) -> "SceneView":
        return cls(hydro.load_usd(path, num_envs=num_envs), **kwargs)

    # -- edits ------------------------------------------------------------------------------
    def shape_poses(self) -> np.ndarray:
        return self.model.shape_world_poses(self.state)

    def set_body_pose(self, body: int, pose) -> None:
        """Place body ``body`` at world ``pose`` [px, py, pz, qx, qy, qz, qw]."""
        self._check_index(body, self.model.body_count, "body")
        self.state.body_q[body] = check_poses(np.asarray(pose, dtype=float), f"pose of body {body}")
        self.result = None

    def set_body_poses(self, body_q) -> None:
        """Place every body at once: ``body_q`` (B,7) world poses (e.g. a simulation's state)."""
        q = np.asarray(body_q, dtype=float)
        if q.shape != (self.model.body_count, 7):
            raise ValueError(f"body poses must have shape ({self.model.body_count}, 7), got {q.shape}")
        self.state.body_q = check_poses(q, "pose of body")
        self.result = None

    def reset_bodies(self) -> None:
        self.state.body_q = self.initial_body_q.copy()
        self.result = None

    def set_stiffness(self, shape: int, stiffness: float) -> None:
        """Hydroelastic stiffness of one shape (N/m³, finite and > 0)."""
        self._check_index(shape, self.model.shape_count, "shape")
        k = float(stiffness)
        if not np.isfinite(k) or k <= 0:
            raise ValueError(f"stiffness must be a finite number > 0 (N/m³), got {stiffness!r}")
        stiffness_all = np.array(self.model.shape_stiffness, dtype=float)
        stiffness_all[shape] = k
        self._set_model(replace(self.model, shape_stiffness=stiffness_all))

    def set_resolution(self, shape: int, max_resolution: int) -> list:
        """Rebuild the SDF of ``shape`` with ``max_resolution`` voxels along its longest axis (a
        target voxel size, if set, is dropped). Shapes sharing that SDF change with it; returns
        their indices."""
        self._check_index(shape, self.model.shape_count, "shape")
        model = self.model.with_sdf_resolution(shape, max_resolution)
        sdf = int(model.shape_sdf[shape])
        self._set_model(model, rebuilt_sdf=sdf)
        return np.flatnonzero(model.shape_sdf == sdf).tolist()

    def _set_model(self, model, *, rebuilt_sdf: int | None = None) -> None:
        """Look at ``model`` (an edited copy of the current one) from now on."""
        self.model = model
        if self._shapes is not None:
            self._shapes.set_model(model, rebuilt_sdf=rebuilt_sdf)
        if self._slice is not None:  # made again from the new model on the next draw
            self._slice.remove()
            self._slice = None
        self.pipeline = None
        self.result = None

    def set_config(self, **changes) -> None:
        """Change contact options (``interface``, ``reduce_contacts``, ``mc_edge_clamp_min``, …)."""
        self.config = replace(self.config, **changes)
        self.pipeline = None
        self.result = None

    def add_sensor(self, name: str, sensor) -> None:
        """Draw a sensor's debug view (an Isaac Lab–style contact sensor, an EmbodiChain-style
        contact-point sensor, or :class:`~viz.sensors.SensorArrays`) with the scene."""
        self.sensors[str(name)] = sensor

    @staticmethod
    def _check_index(i, n, what):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < n:
            raise ValueError(f"{what} must be an index in [0, {n - 1}], got {i!r}")

    # -- computing --------------------------------------------------------------------------
    def update(self):
        """Run the pipeline at the current poses (if anything changed) and mesh the patches."""
        if self.result is not None:
            return self.result
        if self.pipeline is None:
            # both contact paths: hydroelastic patches and the default path's point contacts
            self.pipeline = CollisionPipeline(self.model, CollisionConfig(hydroelastic=self.config), device=self.device)
        poses = self.shape_poses()
        result = self.pipeline.collide(poses, triangles=True)
        t0 = time.perf_counter()
        self.patches = patch_meshes(self.model, poses, result)
        self.patch_ms = (time.perf_counter() - t0) * 1e3
        self.result = result
        return result

    def view_box(self) -> tuple:
        """World (lo, hi) of everything drawn, framed on what matters: the bodies' shapes and the
        contacts (all bounded shapes when nothing moves), then the static shapes as far as they
        reach within that region's size around it (a large ground shows, without shrinking the
        bodies to a few pixels), and the region's shadow on each plane (the plane's gridded quad
        is drawn over it)."""
        model = self.model
        poses = self.shape_poses()
        boxes = {}
        for s in range(model.shape_count):
            g = model.shape_geometry[s]
            if not g.volumetric:
                continue
            lo, hi = g.local_aabb()
            corners = np.array([[(hi if (c >> k) & 1 else lo)[k] for k in range(3)] for c in range(8)])
            w = poses[s, :3] + quat_rotate(poses[s, 3:], corners)
            boxes[s] = (w.min(axis=0), w.max(axis=0))
        moving = [s for s in boxes if model.shape_body[s] >= 0] or list(boxes)
        pts = [np.array(boxes[s]) for s in moving]
        if self.result is not None and len(self.result.contacts):
            pts.append(self.result.contacts.point.astype(float))
        if not pts:
            lo, hi = np.full(3, -1.0), np.full(3, 1.0)
        else:
            allp = np.concatenate(pts)
            lo, hi = allp.min(axis=0), allp.max(axis=0)
        reach = max(float(np.max(hi - lo)), 1e-3)
        out_lo, out_hi = lo.copy(), hi.copy()
        for s, (blo, bhi) in boxes.items():
            if s in moving:
                continue
            clo, chi = np.maximum(blo, lo - reach), np.minimum(bhi, hi + reach)
            if np.all(clo <= chi):  # the part of the static shape near the bodies
                out_lo, out_hi = np.minimum(out_lo, clo), np.maximum(out_hi, chi)
            else:  # a static shape away from everything: all of it
                out_lo, out_hi = np.minimum(out_lo, blo), np.maximum(out_hi, bhi)
        for s in range(model.shape_count):
            if model.shape_geometry[s].kind != PLANE:
                continue
            n = quat_rotate(poses[s, 3:], np.array([0.0, 0.0, 1.0]))
            corners = np.array([[(hi if (c >> k) & 1 else lo)[k] for k in range(3)] for c in range(8)])
            shadow = corners - np.outer((corners - poses[s, :3]) @ n, n)  # onto the plane
            out_lo, out_hi = np.minimum(out_lo, shadow.min(axis=0)), np.maximum(out_hi, shadow.max(axis=0))
        return out_lo, out_hi

    def view_scale(self) -> float:
        lo, hi = self.view_box()
        return max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)

    def summary_lines(self) -> list:
        """The numbers: per pair force on B, torque, area, contacts, centre of pressure; per-stage times."""
        r = self.update()
        paths = self.model.shape_path
        lines = []
        total_f = np.zeros(3)
        for s in r.pair_summaries():
            f, t = s.net_force, s.net_torque
            total_f += f
            cop = s.center_of_pressure
            cop_text = "-" if not np.all(np.isfinite(cop)) else "(" + ", ".join(f"{v:+.4f}" for v in cop) + ") m"
            lines += [f"{paths[s.shape_a]} -> {paths[s.shape_b]}",
                      f"  {s.contact_count} contacts, area {s.patch_area * 1e4:.4g} cm^2",
                      f"  force on B ({f[0]:+.4g}, {f[1]:+.4g}, {f[2]:+.4g}) N, |F| {np.linalg.norm(f):.4g} N",
                      f"  torque ({t[0]:+.4g}, {t[1]:+.4g}, {t[2]:+.4g}) N m about the origin",
                      f"  centre of pressure {cop_text}"]
        n_tri = r.counts.get("triangles", len(r.patch))
        lines.append(f"{len(r.pair_shape_a)} pairs, {len(r.contacts)} contacts from {n_tri} patch triangles")
        lines.append("time " + ", ".join(f"{k} {v:.2f}" for k, v in r.timings_ms.items())
                     + f" ms; patch meshes {self.patch_ms:.1f} ms")
        for o in r.overflow:
            lines.append("overflow: " + o.message())
        return lines

    # -- drawing ----------------------------------------------------------------------------
    @property
    def color_range(self) -> tuple:
        """(lo, hi) of the patch colour bar as last drawn (Pa or m, by ``settings.contacts.color_by``);
        (0, 1) before the first draw."""
        return self._contacts.range if self._contacts is not None else (0.0, 1.0)

    def shape_structures(self, shape: int) -> list:
        """Names of the Polyscope surface meshes that draw ``shape`` (empty before the first draw)."""
        return [] if self._shapes is None else self._shapes.shape_names(shape)

    def forget_drawing(self) -> None:
        """Forget what was drawn (after Polyscope's structures were cleared elsewhere)."""
        self._shapes = None
        self._contacts = None
        self._slice = None
        self._sensor_names = set()

    def draw(self) -> None:
        """Push the current picture to Polyscope (initialised by :func:`viz.backend.init`)."""
        from .backend import set_scene_extent

        result = self.update()
        st = self.settings
        poses = self.shape_poses()
        lo, hi = self.view_box()
        pad = 0.5 * (hi - lo) + 0.05 * self.view_scale()
        set_scene_extent(lo - pad, hi + pad)
        scale = self.view_scale()
        if self._shapes is None:
            self._shapes = ShapeLayer(self.model)
        self._shapes.show_sdf = st.show_sdf_mesh
        self._shapes.show_source = st.show_source_mesh
        self._shapes.transparency = st.shape_transparency
        self._shapes.draw(poses, scene_box=(lo, hi))
        if self._contacts is None:
            self._contacts = ContactLayer(st.contacts)
        self._contacts.settings = st.contacts
        self._contacts.draw(self.model, result, self.patches, scale)
        if self._slice is not None and (st.slice_shape is None or self._slice.shape != st.slice_shape):
            self._slice.remove()
            self._slice = None
        if st.slice_shape is not None:
            if self._slice is None:
                self._slice = SDFLayer(self.model, st.slice_shape, st.slice)
            self._slice.settings = st.slice
            self._slice.draw(poses)
            for name in self._contacts.patch_names:
                self._slice.ignore_slice("surface_mesh", name)
        self._draw_sensors(scale)

    def _draw_sensors(self, scale: float) -> None:
        for name in self._sensor_names:
            remove_sensor(name)
        self._sensor_names = set()
        force_scale = self.settings.contacts.force_scale or 0.0  # m per N; automatic below when unset
        arrays = {}
        if self.settings.show_body_sensors:
            arrays[BODY_SENSOR] = pipeline_sensor_arrays(self.model, self.state, self.result)
        body_pos = self.state.body_q[:, :3]
        for name, sensor in self.sensors.items():
            arrays[name] = sensor_arrays(sensor, body_positions=body_pos)
        if force_scale == 0.0:
            fmax = max([float(np.max(np.linalg.norm(a.net_force, axis=-1))) for a in arrays.values()
                        if a.net_force is not None and len(a.net_force)] or [0.0])
            force_scale = 0.5 * scale / fmax if fmax > 0 else 0.0
        for name, a in arrays.items():
            draw_sensor(name, a, force_scale=force_scale, marker_radius=0.03 * scale)
            self._sensor_names.add(name)
