"""The legend drawn over the picture (an ImGui window at the bottom left): what each colour and
style means — shapes by role (hydroelastic: the SDF's zero level set, patches; default path:
the geometry with its edges, point contacts; planes: a gridded quad) and the contact markers.

It is part of the picture's UI, with the colour bars: :func:`viz.render` draws it when
``colorbar=True`` (``hydro view --screenshot``), the window's panel draws it every frame.
"""

from __future__ import annotations

import numpy as np

from hydro.contact.types import CONTACT_POINT
from hydro.geometry import PLANE

from .contacts import CONTACT_COLOR, FORCE_COLOR, NORMAL_COLOR, POINT_CONTACT_COLOR
from .shapes import DEFAULT_PATH, HYDROELASTIC, shape_color, shape_role

#: swatches shown per role before "+N"
SWATCHES = 8


def legend_rows(view) -> list:
    """``(colours, text)`` rows of the legend of ``view`` (a :class:`~viz.scene.SceneView`), for
    the ImGui window and for tests: one row per shape role present, one per contact marker drawn."""
    model = view.model
    rows = []
    planes = [s for s in range(model.shape_count) if model.shape_geometry[s].kind == PLANE]
    for role, text in ((HYDROELASTIC, "hydroelastic: SDF zero level set; patches with hydroelastic shapes"),
                       (DEFAULT_PATH, "default path: geometry with edges; point contacts")):
        shapes = [s for s in range(model.shape_count) if shape_role(model, s) == role and s not in planes]
        if shapes:
            rows.append(([shape_color(model, s) for s in shapes], f"{text} ({len(shapes)} shape(s))"))
    if planes:
        rows.append(([shape_color(model, s) for s in planes], f"plane, default path: a gridded quad "
                                                              f"({len(planes)})"))
    result = view.result
    if result is not None:
        kind = getattr(result.contacts, "kind", None)
        point_rows = np.zeros(len(result.contacts), bool) if kind is None else kind == CONTACT_POINT
        n_point = int(point_rows.sum())
        n_hydro = len(result.contacts) - n_point
        if n_hydro:
            rows.append(([CONTACT_COLOR], f"hydroelastic contacts ({n_hydro}); the patch coloured by "
                                          f"{view.settings.contacts.color_by} (colour bar)"))
        if n_point:
            rows.append(([POINT_CONTACT_COLOR], f"point contacts ({n_point})"))
        if len(result.contacts):
            rows.append(([FORCE_COLOR, NORMAL_COLOR], "force on B (length ~ N), normal A -> B"))
    return rows


def draw_legend(view, *, margin: float = 10.0) -> None:
    """The legend window, anchored at the bottom left of the window (call inside a frame: the
    Polyscope user callback)."""
    import polyscope as ps
    import polyscope.imgui as psim

    rows = legend_rows(view)
    if not rows:
        return
    _, h = ps.get_window_size()
    psim.SetNextWindowPos((margin, h - margin), 0, (0.0, 1.0))
    psim.SetNextWindowBgAlpha(0.8)
    flags = (psim.ImGuiWindowFlags_NoDecoration | psim.ImGuiWindowFlags_AlwaysAutoResize
             | psim.ImGuiWindowFlags_NoSavedSettings | psim.ImGuiWindowFlags_NoFocusOnAppearing
             | psim.ImGuiWindowFlags_NoNav | psim.ImGuiWindowFlags_NoMove)
    swatch = (psim.ImGuiColorEditFlags_NoTooltip | psim.ImGuiColorEditFlags_NoPicker
              | psim.ImGuiColorEditFlags_NoDragDrop)
    psim.Begin("Legend##hydro", True, flags)
    for r, (colours, text) in enumerate(rows):
        for k, c in enumerate(colours[:SWATCHES]):
            psim.ColorButton(f"##legend{r}.{k}", (c[0], c[1], c[2], 1.0), swatch, (12.0, 12.0))
            psim.SameLine(0.0, 2.0)
        if len(colours) > SWATCHES:
            psim.TextUnformatted(f"+{len(colours) - SWATCHES}")
            psim.SameLine()
        psim.TextUnformatted(" " + text)
    psim.End()
