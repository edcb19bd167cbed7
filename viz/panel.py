"""The interactive patch visualizer's ImGui panel (``hydro view SCENE.usda``).

Sections: **Body** (pick a body; position and rotation sliders, or a transformation gizmo),
**Shape** (stiffness, SDF resolution — rebuilds that shape's SDF — and mesh toggles),
**Contact** (interface, reduction, edge clamp, colour by pressure/depth with the colour-bar
range, arrows), **SDF slice** (a shape's φ on a plane with contours, iso-surfaces, fine
bricks), **Numbers** (per pair force, torque, area, contacts, centre of pressure; per-stage
times), and **Simulation**.

The Simulation section's Step and Run buttons call :meth:`ViewerPanel.step_simulation`: a
``hydro.Simulation`` of the view's model (with the view's stiffnesses, SDFs and contact
options) starts from the poses on screen and steps; any edit in the panel (a body moved, a
stiffness, a resolution, a contact option) starts a new one from the edited scene.
"""

from __future__ import annotations

import math

import numpy as np

import hydro
from hydro.contact.config import INTERFACES
from hydro.transforms import matrix_to_quat, quat_from_axis_angle, quat_mul

from .backend import pose_matrix
from .contacts import COLOR_BY
from .legend import draw_legend
from .sdf_view import AXES
from .shapes import role_text, shape_label


def euler_quat(roll_deg: float, pitch_deg: float, yaw_deg: float) -> np.ndarray:
    """Rotation about world x, then y, then z (degrees) as a quaternion (x, y, z, w)."""
    qx = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), math.radians(roll_deg))
    qy = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), math.radians(pitch_deg))
    qz = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), math.radians(yaw_deg))
    return quat_mul(qz, quat_mul(qy, qx))


def _parse_levels(text: str) -> list:
    """Comma-separated millimetres → metres (empty → [])."""
    out = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part:
            out.append(float(part) * 1e-3)
    return out


class ViewerPanel:
    """The user callback of Polyscope: draws the panel and applies what it changes to a
    :class:`~viz.scene.SceneView`, redrawing only after a change."""

    def __init__(self, view):
        self.view = view
        model = view.model
        self.body = 0
        self.shape = next((s for s in range(model.shape_count) if model.shape_sdf[s] >= 0), 0)
        self.offsets = {}  # body -> (position (3,), euler degrees (3,))
        self.use_gizmo = False
        self._gizmo = None
        self._gizmo_matrix = None
        self.stiffness_text = {}
        self.resolution = {}
        self.levels_text = ""
        self.iso_text = ""
        self.auto_range = True
        self.range = [0.0, 1.0]
        self.auto_force = True
        self.force_scale = 1e-3
        self.message = ""
        self.running = False
        self.simulation = None
        self._edits = 0  # counts panel edits; a simulation restarts from the scene after one
        self._simulated_edits = -1
        self.dirty = True

    # -- actions the widgets call (also used by tests) --------------------------------------
    def move_body(self, body: int, position, euler_deg) -> None:
        """Body at ``position`` (world, m), rotated by ``euler_deg`` from its initial orientation."""
        q0 = self.view.initial_body_q[body, 3:]
        q = quat_mul(euler_quat(*euler_deg), q0)
        self.view.set_body_pose(body, np.concatenate([np.asarray(position, dtype=float), q]))
        self.offsets[body] = (np.asarray(position, dtype=float), np.asarray(euler_deg, dtype=float))
        self._edits += 1
        self.dirty = True

    def body_controls(self, body: int):
        if body not in self.offsets:
            self.offsets[body] = (self.view.state.body_q[body, :3].copy(), np.zeros(3))
        return self.offsets[body]

    def step_simulation(self) -> None:
        """One step of a :class:`hydro.Simulation` (see the module docstring)."""
        try:
            if self.simulation is None or self._simulated_edits != self._edits:
                self.simulation = hydro.Simulation(self.view.model, config=self.view.config, device=self.view.device)
                self.simulation.state.body_q[:] = self.view.state.body_q
                self.simulation.state.body_qd[:] = self.view.state.body_qd
                self._simulated_edits = self._edits
            self.simulation.step()
            self.view.set_body_poses(self.simulation.state.body_q)
            self.dirty = True
            self.message = ""
        except Exception as exc:  # show it in the panel; the window stays usable
            self.running = False
            self.message = f"simulation: {type(exc).__name__}: {exc}".splitlines()[0]

    def redraw(self) -> None:
        try:
            self.view.draw()
            self.message = self.message if self.message.startswith("simulation") else ""
        except Exception as exc:
            self.message = f"{type(exc).__name__}: {exc}".splitlines()[0]
        self.dirty = False

    # -- the ImGui callback ------------------------------------------------------------------
    def __call__(self) -> None:
        import polyscope.imgui as psim

        psim.PushItemWidth(220)
        self._body_section(psim)
        self._shape_section(psim)
        self._contact_section(psim)
        self._slice_section(psim)
        self._numbers_section(psim)
        self._simulation_section(psim)
        if self.message:
            psim.TextUnformatted(self.message)
        psim.PopItemWidth()
        if self.view.settings.show_legend:
            draw_legend(self.view)
        if self.running:
            self.step_simulation()
        self._sync_gizmo()
        if self.dirty:
            self.redraw()

    def _body_section(self, psim) -> None:
        view = self.view
        model = view.model
        if model.body_count == 0 or not psim.CollapsingHeader("Body", psim.ImGuiTreeNodeFlags_DefaultOpen):
            return
        _, self.body = psim.Combo("body", self.body, model.body_path)
        pos, euler = self.body_controls(self.body)
        p0 = view.initial_body_q[self.body, :3]
        reach = 2.0 * view.view_scale()
        changed = False
        pos = list(pos)
        for k, axis in enumerate("xyz"):
            c, pos[k] = psim.SliderFloat(f"{axis} (m)", float(pos[k]), float(p0[k] - reach), float(p0[k] + reach),
                                         "%.4f")
            changed |= c
        euler = list(euler)
        for k, name in enumerate(("roll (deg)", "pitch (deg)", "yaw (deg)")):
            c, euler[k] = psim.SliderFloat(name, float(euler[k]), -180.0, 180.0, "%.1f")
            changed |= c
        if changed:
            self.move_body(self.body, pos, euler)
        c, self.use_gizmo = psim.Checkbox("gizmo", self.use_gizmo)
        if c:
            self._gizmo_matrix = None
        psim.SameLine()
        if psim.Button("reset bodies"):
            view.reset_bodies()
            self.offsets = {}
            self._gizmo_matrix = None
            self.dirty = True

    def _sync_gizmo(self) -> None:
        import polyscope as ps

        if not self.use_gizmo or self.view.model.body_count == 0:
            if self._gizmo is not None:
                self._gizmo.set_enabled(False)
            return
        if self._gizmo is None:
            self._gizmo = ps.add_transformation_gizmo("body")
            self._gizmo.set_allow_scaling(False)
        self._gizmo.set_enabled(True)
        current = pose_matrix(self.view.state.body_q[self.body])
        if self._gizmo_matrix is None or self.dirty:
            self._gizmo.set_transform(current)
            self._gizmo_matrix = current
            return
        m = np.asarray(self._gizmo.get_transform(), dtype=float)
        if not np.allclose(m, self._gizmo_matrix, atol=1e-9):
            u, _, vt = np.linalg.svd(m[:3, :3])  # drop any scale the gizmo carries
            q = matrix_to_quat(u @ vt)
            self.view.set_body_pose(self.body, np.concatenate([m[:3, 3], q]))
            self.offsets.pop(self.body, None)
            self._gizmo_matrix = m
            self.dirty = True

    def _shape_section(self, psim) -> None:
        view = self.view
        model = view.model
        st = view.settings
        if not psim.CollapsingHeader("Shape"):
            return
        labels = [shape_label(model, s) for s in range(model.shape_count)]
        _, self.shape = psim.Combo("shape", self.shape, labels)
        s = self.shape
        psim.TextUnformatted(role_text(model, s))  # hydroelastic or the default path, and how it is drawn
        if model.shape_hydroelastic[s]:
            text = self.stiffness_text.get(s, f"{model.shape_stiffness[s]:.4g}")
            c, text = psim.InputText("stiffness (N/m^3)", text, psim.ImGuiInputTextFlags_EnterReturnsTrue)
            self.stiffness_text[s] = text
            if c:
                try:
                    self._edits += 1
                    view.set_stiffness(s, float(text))
                    self.dirty = True
                except ValueError as exc:
                    self.message = str(exc)
        if model.shape_sdf[s] >= 0:
            sdf = model.sdfs[model.shape_sdf[s]]
            res = self.resolution.get(s, sdf.settings.max_resolution)
            _, res = psim.SliderInt("SDF resolution", int(res), 8, 256)
            res = max(8, int(round(res / 8.0)) * 8)
            self.resolution[s] = res
            psim.SameLine()
            if psim.Button("rebuild"):
                self._edits += 1
                shared = view.set_resolution(s, res)
                self.message = f"rebuilt the SDF of {len(shared)} shape(s) at {res}"
                self.dirty = True
            psim.TextUnformatted(f"grid {sdf.resolution}, voxel {sdf.voxel_size * 1e3:.3g} mm, "
                                 f"{sdf.fine_brick_count}/{sdf.brick_count} fine bricks")
        self._checkboxes(psim, st, (("SDF meshes (phi = 0)", "show_sdf_mesh"), ("source geometry", "show_source_mesh"),
                                    ("legend", "show_legend")))
        c, st.shape_transparency = psim.SliderFloat("shape opacity", st.shape_transparency, 0.0, 1.0)
        self.dirty |= c

    def _contact_section(self, psim) -> None:
        view = self.view
        cs = view.settings.contacts
        if not psim.CollapsingHeader("Contact", psim.ImGuiTreeNodeFlags_DefaultOpen):
            return
        i = INTERFACES.index(view.config.interface)
        c, i = psim.Combo("interface", i, list(INTERFACES))
        if c:
            self._edits += 1
            view.set_config(interface=INTERFACES[i])
            self.dirty = True
        c, v = psim.Checkbox("reduce contacts", view.config.reduce_contacts)
        if c:
            self._edits += 1
            view.set_config(reduce_contacts=v)
            self.dirty = True
        c, v = psim.SliderFloat("MC edge clamp", view.config.mc_edge_clamp_min, 0.0, 0.49)
        if c:
            self._edits += 1
            view.set_config(mc_edge_clamp_min=float(v))
            self.dirty = True
        k = COLOR_BY.index(cs.color_by)
        c, k = psim.Combo("colour by", k, list(COLOR_BY))
        if c:
            cs.color_by = COLOR_BY[k]
            self.dirty = True
        c, self.auto_range = psim.Checkbox("auto colour range", self.auto_range)
        if c:
            cs.color_range = None if self.auto_range else tuple(self.view.color_range)
            self.range = list(self.view.color_range)
            self.dirty = True
        if not self.auto_range:
            unit = "Pa" if cs.color_by == "pressure" else "m"
            c0, self.range[0] = psim.InputFloat(f"range low ({unit})", float(self.range[0]), 0.0, 0.0, "%.4g")
            c1, self.range[1] = psim.InputFloat(f"range high ({unit})", float(self.range[1]), 0.0, 0.0, "%.4g")
            if (c0 or c1) and self.range[1] > self.range[0]:
                cs.color_range = tuple(self.range)
                self.dirty = True
        self._checkboxes(psim, cs, (("patch", "show_patch"), ("speculative", "show_speculative"),
                                    ("contacts", "show_contacts"), ("normals", "show_normals"),
                                    ("force arrows", "show_forces"), ("patch triangle centroids", "show_patch_points")))
        c, self.auto_force = psim.Checkbox("auto force scale", self.auto_force)
        if c:
            cs.force_scale = None if self.auto_force else self.force_scale
            self.dirty = True
        if not self.auto_force:
            c, self.force_scale = psim.SliderFloat("force scale (m/N)", float(self.force_scale), 1e-6, 1.0, "%.2e",
                                                   psim.ImGuiSliderFlags_Logarithmic)
            if c:
                cs.force_scale = float(self.force_scale)
                self.dirty = True
        self._checkboxes(psim, view.settings, (("body contact sensors", "show_body_sensors"),))

    def _slice_section(self, psim) -> None:
        view = self.view
        model = view.model
        st = view.settings
        sl = st.slice
        if not psim.CollapsingHeader("SDF slice"):
            return
        with_sdf = [s for s in range(model.shape_count) if model.shape_sdf[s] >= 0]
        labels = ["none"] + [shape_label(model, s) for s in with_sdf]
        cur = 0 if st.slice_shape is None else 1 + with_sdf.index(st.slice_shape)
        c, cur = psim.Combo("sliced shape", cur, labels)
        if c:
            st.slice_shape = None if cur == 0 else with_sdf[cur - 1]
            self.dirty = True
        if st.slice_shape is None:
            return
        sdf = model.sdfs[model.shape_sdf[st.slice_shape]]
        c, sl.axis = psim.Combo("normal axis (local)", sl.axis, list(AXES))
        self.dirty |= c
        lo, hi = float(sdf.box_lo[sl.axis]), float(sdf.box_hi[sl.axis])
        c, sl.offset = psim.SliderFloat("offset (m)", float(min(max(sl.offset, lo), hi)), lo, hi, "%.4f")
        self.dirty |= c
        self.levels_text = self._levels_input(psim, "contours", self.levels_text, sl, "levels", "-2, 0, 2")
        self.iso_text = self._levels_input(psim, "iso-surfaces", self.iso_text, sl, "iso_levels", "-5, 5")
        sides = ["away from the camera", "+axis", "-axis"]
        side = {None: 0, True: 1, False: 2}[sl.keep_positive_side]
        c, side = psim.Combo("keep side", side, sides)
        if c:
            sl.keep_positive_side = (None, True, False)[side]
            self.dirty = True
        self._checkboxes(psim, sl, (("slice", "show_slice"), ("contours", "show_contours"),
                                    ("cut shapes", "cut_shapes"), ("periodic isolines", "isolines"),
                                    ("band edges", "show_band_edges"),
                                    ("fine bricks (cut by the slice)", "show_fine_bricks"),
                                    ("all fine bricks", "all_fine_bricks")))

    def _checkboxes(self, psim, settings, items) -> None:
        """One checkbox per ``(label, attribute)`` of ``settings``; a click sets it and redraws."""
        for label, attr in items:
            c, v = psim.Checkbox(label, getattr(settings, attr))
            if c:
                setattr(settings, attr, v)
                self.dirty = True

    def _levels_input(self, psim, what: str, text: str, settings, attr: str, example: str) -> str:
        """A text field of levels in mm; Enter sets ``settings.attr`` (m). Returns the text."""
        c, text = psim.InputText(f"{what} (mm)", text, psim.ImGuiInputTextFlags_EnterReturnsTrue)
        if c:
            try:
                setattr(settings, attr, _parse_levels(text))
                self.dirty = True
            except ValueError:
                self.message = f"{what}: comma-separated numbers in mm, e.g. {example}"
        return text

    def _numbers_section(self, psim) -> None:
        if not psim.CollapsingHeader("Numbers", psim.ImGuiTreeNodeFlags_DefaultOpen):
            return
        try:
            lines = self.view.summary_lines()
        except Exception as exc:
            lines = [f"{type(exc).__name__}: {exc}".splitlines()[0]]
        for line in lines:
            psim.TextUnformatted(line)

    def _simulation_section(self, psim) -> None:
        if not psim.CollapsingHeader("Simulation", psim.ImGuiTreeNodeFlags_DefaultOpen):
            return
        if psim.Button("step"):
            self.step_simulation()
        psim.SameLine()
        _, self.running = psim.Checkbox("run", self.running)
