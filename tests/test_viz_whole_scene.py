"""The viewer shows the whole scene: every collider (planes as gridded quads, shapes without an
SDF as their geometry), point contacts beside patches, roles in a legend, the camera framing all
of it, the SDF slice face-on with its colour bar, pictures in the format their suffix names."""

import numpy as np
import pytest

from cli_util import assert_one_line_error, hydro
from viz_util import SIZE, headless_polyscope, scene_path

#: scenes with planes and shapes that have no SDF (and one with a plane far below its bodies)
WHOLE_SCENES = ["primitives_on_plane.usda", "mixed_pile.usda", "pinch_over_plane.usda"]


@pytest.fixture(scope="module")
def ps():
    return headless_polyscope()


def _view(name):
    from viz.scene import SceneView

    return SceneView.from_usd(scene_path(name))


@pytest.mark.parametrize("name", WHOLE_SCENES)
def test_every_collider_is_drawn_and_visible(ps, name):
    """Each shape has a mesh, and hiding it changes the picture where it is: it is in view and
    not hidden behind the others."""
    from viz.picture import render, screenshot

    view = _view(name)
    full = render(view, size=SIZE, colorbar=False)
    model = view.model
    for s in range(model.shape_count):
        names = view.shape_structures(s)
        assert names, f"{model.shape_path[s]} is not drawn"
        for n in names:
            ps.get_surface_mesh(n).set_enabled(False)
        without = screenshot(colorbar=False)
        for n in names:
            ps.get_surface_mesh(n).set_enabled(True)
        changed = np.abs(full[..., :3].astype(int) - without[..., :3].astype(int)).max(axis=-1) > 8
        assert changed.sum() > 150, f"{model.shape_path[s]} shows in only {changed.sum()} pixels"


def test_primitives_on_plane_shows_the_shapes_the_plane_and_the_point_contacts(ps):
    import polyscope

    from viz.picture import project, render
    from viz.shapes import PLANE_COLOR

    view = _view("primitives_on_plane.usda")
    image = render(view, size=SIZE, colorbar=False)
    model = view.model
    assert [model.shape_geometry[s].kind_name for s in range(model.shape_count)] == ["plane", "box", "sphere",
                                                                                        "capsule"]
    plane = polyscope.get_surface_mesh("0: /World/Ground [source]")
    assert plane.is_enabled() and plane.n_faces() >= 16  # a gridded quad, not one square
    for s in (1, 2, 3):  # no SDF: drawn as their geometry
        assert view.shape_structures(s) == [f"{s}: {model.shape_path[s]} [source]"]
    # the plane's colour shows around the shapes, its grid lines darker
    rgb = image[..., :3].astype(int)
    pale = np.all(np.abs(rgb - np.round(255 * (0.45 + 0.55 * np.array(PLANE_COLOR)))) < 40, axis=-1)
    assert pale.mean() > 0.2
    # the point contacts: 7 orange points where the contacts project, inside the picture
    cloud = polyscope.get_point_cloud("point contacts")
    assert cloud.n_points() == 7
    px, front = project(view.result.contacts.point.astype(float))
    assert front.all() and np.all((px >= 0) & (px < np.array(SIZE)))
    # without the arrows over them, each point shows orange where it projects (through a
    # translucent shape when it lies behind one: the hue stays, r > g > b)
    view.settings.contacts.show_forces = view.settings.contacts.show_normals = False
    rgb = render(view, size=SIZE, colorbar=False)[..., :3].astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    orange = (r - b > 60) & (g - b > 15) & (r - g > 30)
    assert orange.sum() < 0.01 * orange.size  # nothing else is orange
    for x, y in np.round(px).astype(int):
        assert orange[max(0, y - 4):y + 5, max(0, x - 4):x + 5].any()


@pytest.mark.parametrize("name", WHOLE_SCENES + ["sphere_on_box.usda"])
def test_the_camera_frames_every_shape(ps, name):
    from viz.picture import project, render

    view = _view(name)
    render(view, size=SIZE, colorbar=False)
    centres = view.shape_poses()[:, :3]
    px, front = project(centres)
    assert front.all()
    inside = np.all((px >= 0) & (px < np.array(SIZE)), axis=1)
    # a plane's origin may lie anywhere on it; its drawn quad lies under what the camera frames
    bounded = [s for s in range(view.model.shape_count) if view.model.shape_geometry[s].volumetric]
    assert inside[bounded].all()


def test_legend_names_each_role_and_marker(ps):
    from viz.legend import legend_rows
    from viz.picture import render

    view = _view("primitives_on_plane.usda")
    view.update()
    rows = [text for _, text in legend_rows(view)]
    assert any(t.startswith("default path") and "(3 shape(s))" in t for t in rows)
    assert any(t.startswith("plane") for t in rows) and any("point contacts (7)" in t for t in rows)
    assert not any(t.startswith("hydroelastic") for t in rows)
    mixed = _view("mixed_pile.usda")
    mixed.update()
    rows = [text for _, text in legend_rows(mixed)]
    assert any(t.startswith("hydroelastic") and "(6 shape(s))" in t for t in rows)
    assert any(t.startswith("default path") and "(6 shape(s))" in t for t in rows)
    # in the picture: bottom left, with the colour bars' UI
    view.settings.show_legend = False
    plain = render(view, size=SIZE, colorbar=True)
    view.settings.show_legend = True
    legend = render(view, size=SIZE, colorbar=True)
    diff = np.abs(plain[..., :3].astype(int) - legend[..., :3].astype(int)).max(axis=-1) > 12
    ys, xs = np.nonzero(diff)
    assert len(xs) > 500 and xs.min() < SIZE[0] // 10 and ys.max() > SIZE[1] * 9 // 10


def test_each_shape_says_its_role():
    from viz.shapes import DEFAULT_PATH, HYDROELASTIC, role_text, shape_role

    view = _view("mixed_pile.usda")
    model = view.model
    roles = [shape_role(model, s) for s in range(model.shape_count)]
    assert roles[0] == DEFAULT_PATH and "gridded quad" in role_text(model, 0)  # the plane
    assert roles[1] == HYDROELASTIC and "hydroelastic" in role_text(model, 1)  # Body00, a box
    assert roles[2] == DEFAULT_PATH and "point contacts" in role_text(model, 2)  # Body01, a sphere


def test_slice_is_face_on_unless_a_camera_is_named_and_has_a_colour_bar(ps):
    from viz.picture import CAMERA_DIRECTIONS, render, view_camera

    view = _view("sphere_on_box.usda")
    view.settings.slice_shape = 1
    view.settings.slice.axis = 0  # local x of the sphere: world x
    view.update()
    eye, target, _ = view_camera(view, "auto")
    d = (eye - target) / np.linalg.norm(eye - target)
    assert abs(d[0]) > 0.999  # along the slice's normal
    eye, target, _ = view_camera(view, "front")  # named: as asked (edge-on, here)
    d = (eye - target) / np.linalg.norm(eye - target)
    front = np.array(CAMERA_DIRECTIONS["front"]) / np.linalg.norm(CAMERA_DIRECTIONS["front"])
    np.testing.assert_allclose(d, front, atol=1e-9)
    # the slice's colour bar: with the patch hidden, the only bar is φ's
    view.settings.contacts.show_patch = False
    view.settings.contacts.show_contacts = False  # thin arrows render a few pixels differently each pass
    view.settings.show_legend = False
    plain = render(view, size=SIZE, colorbar=False)
    bar = render(view, size=SIZE, colorbar=True)
    diff = np.abs(plain[..., :3].astype(int) - bar[..., :3].astype(int)).max(axis=-1) > 12
    ys, xs = np.nonzero(diff)
    assert len(xs) > 200 and xs.min() > SIZE[0] // 2 and ys.min() < SIZE[1] // 5


def test_pictures_are_written_in_the_format_their_suffix_names(ps, tmp_path):
    from PIL import Image

    from viz.picture import read_png, render

    image = render(scene_path("two_spheres.usda"), tmp_path / "v.jpg", size=SIZE)
    data = (tmp_path / "v.jpg").read_bytes()
    assert data[:3] == b"\xff\xd8\xff"  # JPEG, not PNG bytes
    back = np.asarray(Image.open(tmp_path / "v.jpg").convert("RGB")).astype(int)
    assert back.shape == (SIZE[1], SIZE[0], 3) and np.abs(back - image[..., :3]).mean() < 4
    render(scene_path("two_spheres.usda"), tmp_path / "v.png", size=SIZE)
    assert read_png(tmp_path / "v.png").shape == (SIZE[1], SIZE[0], 3)
    with pytest.raises(ValueError, match="suffix"):
        render(scene_path("two_spheres.usda"), tmp_path / "v.gif", size=SIZE)
    assert not (tmp_path / "v.gif").exists()


def test_hydro_view_refuses_a_suffix_it_cannot_write(tmp_path):
    proc = hydro("view", "scenes/two_spheres.usda", "--screenshot", str(tmp_path / "v.bmp"))
    assert_one_line_error(proc, "--screenshot")
    assert "unknown file type '.bmp': the format follows the suffix, one of .png, .jpg, .jpeg" in proc.stderr
    assert not list(tmp_path.iterdir())


def test_a_new_kind_of_shape_is_drawn_by_one_mesher(monkeypatch):
    """A shape kind is drawn once one function meshes it (a heightfield, say)."""
    from hydro.geometry import HEIGHTFIELD
    from hydro.geometry.shapes import Heightfield
    from viz import shapes

    vertices, faces = shapes.source_mesh(Heightfield())  # the heightfield's one mesher: its surface grid
    assert len(vertices) == 4 and len(faces) == 2
    monkeypatch.delitem(shapes.MESHERS, HEIGHTFIELD)
    assert shapes.source_mesh(Heightfield()) is None
    quad = (np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0.1], [0, 1, 0.0]]), np.array([[0, 1, 2, 3]]))
    monkeypatch.setitem(shapes.MESHERS, HEIGHTFIELD, lambda geometry, extent: quad)
    assert shapes.source_mesh(Heightfield()) is quad
