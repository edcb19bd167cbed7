"""Contact patches, contact points, normals and forces.

- the patch of each pair as triangles (:mod:`hydro.contact.patch_mesh`), coloured by pressure or depth
  with one colour-bar range for all pairs; speculative triangles (inside the gap band, no force)
  drawn apart, pale blue and translucent;
- the contacts (reduced, when reduction is on) as points with their normals and force arrows
  (length = force × ``force_scale``); speculative contacts as small grey-blue points;
- the point contacts of the default contact path (pairs that are not hydroelastic: planes, mixed
  and plain pairs) beside the patches, as orange points with their normals and force arrows on
  the same force scale;
- optionally the centroids of every patch triangle (the unreduced contacts) as tiny dots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hydro.contact.types import CONTACT_POINT

from .backend import add_scalar, group, remove_structures

COLOR_BY = ("pressure", "depth")
PATCH_CMAPS = {"pressure": "turbo", "depth": "viridis"}
CONTACT_COLOR = (1.0, 0.0, 1.0)  # magenta: not in either colour map
POINT_CONTACT_COLOR = (1.0, 0.55, 0.0)  # orange: the default path's point contacts
SPECULATIVE_COLOR = (0.55, 0.70, 0.90)
FORCE_COLOR = (0.85, 0.1, 0.1)
NORMAL_COLOR = (0.1, 0.1, 0.1)


@dataclass
class ContactSettings:
    """What :class:`ContactLayer` draws."""

    color_by: str = "pressure"
    """``"pressure"`` (Pa) or ``"depth"`` (m) on the patch."""
    color_range: tuple | None = None
    """(lo, hi) of the colour bar; None: from the data (pressure 0..max, depth min..0)."""
    show_patch: bool = True
    show_speculative: bool = True
    show_contacts: bool = True
    show_normals: bool = True
    show_forces: bool = True
    show_patch_points: bool = False
    force_scale: float | None = None
    """m per N of the force arrows; None: the largest arrow is ``auto_force_length`` long."""
    auto_force_length: float = 0.5
    """Length of the largest force arrow, as a fraction of the view scale (automatic scale)."""
    normal_length: float = 0.15
    """Length of the normal arrows, as a fraction of the view scale."""
    point_radius: float = 0.008
    """Radius of the contact points, as a fraction of the view scale."""


def auto_range(patches, color_by: str) -> tuple:
    """The colour-bar range of the data: pressure [0, max], depth [min, 0] (never empty)."""
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {COLOR_BY}, got {color_by!r}")
    vals = [p.vertex_pressure if color_by == "pressure" else p.vertex_depth for p in patches if len(p)]
    if not vals:
        return (0.0, 1.0) if color_by == "pressure" else (-1e-3, 0.0)
    v = np.concatenate(vals)
    if color_by == "pressure":
        hi = float(v.max())
        return (0.0, hi if hi > 0 else 1.0)
    lo = float(v.min())
    return (lo if lo < 0 else -1e-3, 0.0)


def force_scale_for(contacts, view_scale: float, settings: ContactSettings) -> float:
    """m per N: the setting, or so that the largest contact force is drawn
    ``auto_force_length × view_scale`` long."""
    if settings.force_scale is not None:
        return float(settings.force_scale)
    fmax = float(np.max(contacts.force)) if len(contacts) else 0.0
    return settings.auto_force_length * view_scale / fmax if fmax > 0 else 0.0


class ContactLayer:
    """Draws one collision result (see :class:`ContactSettings`)."""

    GROUP = "contacts"

    def __init__(self, settings: ContactSettings | None = None):
        self.settings = settings or ContactSettings()
        self._names = []
        self.patch_names = []  # the patch surfaces (a slice plane must not cut them)
        self.range = (0.0, 1.0)
        self.applied_force_scale = 0.0

    def remove(self) -> None:
        remove_structures(self._names)
        self._names = []
        self.patch_names = []

    def draw(self, model, result, patches, view_scale: float) -> None:
        """Draw ``result`` (a :class:`~hydro.contact.types.CollisionResult`) and its ``patches``
        (:func:`hydro.contact.patch_mesh.patch_meshes`); sizes are fractions of ``view_scale`` (m)."""
        import polyscope as ps

        self.remove()
        cfg = self.settings
        group(self.GROUP)
        self.range = tuple(cfg.color_range) if cfg.color_range is not None else auto_range(patches, cfg.color_by)
        first_bar = True
        for p, pm in enumerate(patches):
            label = f"patch {p}: {model.shape_path[pm.shape_a]} → {model.shape_path[pm.shape_b]}"
            active = pm.select(~pm.face_speculative)
            spec = pm.select(pm.face_speculative)
            if cfg.show_patch and len(active):
                m = ps.register_surface_mesh(label, active.vertices, active.faces, material="flat",
                                             back_face_policy="identical", edge_width=0.0)
                values = active.vertex_pressure if cfg.color_by == "pressure" else active.vertex_depth
                unit = "Pa" if cfg.color_by == "pressure" else "m"
                add_scalar(m, f"{cfg.color_by} ({unit})", values, enabled=True, cmap=PATCH_CMAPS[cfg.color_by],
                           vminmax=self.range, onscreen_colorbar_enabled=first_bar)
                first_bar = False
                m.add_to_group(self.GROUP)
                self._names.append(("surface_mesh", label))
                self.patch_names.append(label)
            if cfg.show_patch and cfg.show_speculative and len(spec):
                name = label + " (speculative)"
                m = ps.register_surface_mesh(name, spec.vertices, spec.faces, color=SPECULATIVE_COLOR, material="flat",
                                             transparency=0.5, back_face_policy="identical", edge_width=0.0)
                m.add_to_group(self.GROUP)
                self._names.append(("surface_mesh", name))
                self.patch_names.append(name)
        radius = cfg.point_radius * view_scale
        self.applied_force_scale = force_scale_for(result.contacts, view_scale, cfg)
        kind = getattr(result.contacts, "kind", None)
        point_rows = np.zeros(len(result.contacts), bool) if kind is None else kind == CONTACT_POINT
        contacts = result.contacts.select(~point_rows)
        self._draw_points(result.contacts.select(point_rows), "point contacts", POINT_CONTACT_COLOR, radius, view_scale)
        reduced = "reduced contacts" if len(contacts) != len(result.patch) or len(contacts) == 0 else "contacts"
        active = ~contacts.speculative
        if cfg.show_contacts and active.any():
            pts = contacts.point[active].astype(float)
            pc = ps.register_point_cloud(reduced, pts, color=CONTACT_COLOR, material="flat")
            pc.set_radius(radius, relative=False)
            normals = contacts.normal[active].astype(float)
            if cfg.show_normals:
                pc.add_vector_quantity("normal (A→B)", normals * cfg.normal_length * view_scale, vectortype="ambient",
                                       enabled=True, color=NORMAL_COLOR, radius=0.3 * radius / ps.get_length_scale())
            if cfg.show_forces and self.applied_force_scale > 0:
                f = contacts.force[active].astype(float)[:, None] * normals * self.applied_force_scale
                pc.add_vector_quantity("force on B", f, vectortype="ambient", enabled=True, color=FORCE_COLOR,
                                       radius=0.5 * radius / ps.get_length_scale())
            pc.add_scalar_quantity("force (N)", contacts.force[active].astype(float))
            pc.add_scalar_quantity("depth (m)", contacts.depth[active].astype(float))
            pc.add_to_group(self.GROUP)
            self._names.append(("point_cloud", reduced))
        if cfg.show_contacts and cfg.show_speculative and contacts.speculative.any():
            name = reduced + " (speculative)"
            pc = ps.register_point_cloud(name, contacts.point[contacts.speculative].astype(float),
                                         color=SPECULATIVE_COLOR, material="flat")
            pc.set_radius(0.6 * radius, relative=False)
            pc.add_to_group(self.GROUP)
            self._names.append(("point_cloud", name))
        if cfg.show_patch_points and len(result.patch):
            name = "patch triangle centroids"
            pc = ps.register_point_cloud(name, result.patch.point.astype(float), color=(0.2, 0.2, 0.2), material="flat")
            pc.set_radius(0.25 * radius, relative=False)
            pc.add_to_group(self.GROUP)
            self._names.append(("point_cloud", name))

    def _draw_points(self, contacts, name, color, radius, view_scale) -> None:
        """The default path's point contacts: points, normals and force arrows (speculative ones pale)."""
        import polyscope as ps

        cfg = self.settings
        if not cfg.show_contacts or len(contacts) == 0:
            return
        active = ~contacts.speculative
        if active.any():
            pc = ps.register_point_cloud(name, contacts.point[active].astype(float), color=color, material="flat")
            pc.set_radius(radius, relative=False)
            normals = contacts.normal[active].astype(float)
            if cfg.show_normals:
                pc.add_vector_quantity("normal (A→B)", normals * cfg.normal_length * view_scale, vectortype="ambient",
                                       enabled=True, color=NORMAL_COLOR, radius=0.3 * radius / ps.get_length_scale())
            if cfg.show_forces and self.applied_force_scale > 0:
                f = contacts.force[active].astype(float)[:, None] * normals * self.applied_force_scale
                pc.add_vector_quantity("force on B", f, vectortype="ambient", enabled=True, color=FORCE_COLOR,
                                       radius=0.5 * radius / ps.get_length_scale())
            pc.add_scalar_quantity("force (N)", contacts.force[active].astype(float))
            pc.add_scalar_quantity("depth (m)", contacts.depth[active].astype(float))
            pc.add_to_group(self.GROUP)
            self._names.append(("point_cloud", name))
        if cfg.show_speculative and contacts.speculative.any():
            spec = name + " (speculative)"
            pc = ps.register_point_cloud(spec, contacts.point[contacts.speculative].astype(float),
                                         color=SPECULATIVE_COLOR, material="flat")
            pc.set_radius(0.6 * radius, relative=False)
            pc.add_to_group(self.GROUP)
            self._names.append(("point_cloud", spec))
