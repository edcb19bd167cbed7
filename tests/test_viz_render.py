"""Headless pictures of every shipped scene: not blank, and the patch's colours where it projects."""

import numpy as np
import pytest

from viz_util import PATCH_SCENES, SIZE, background_fraction, headless_polyscope, scene_path


@pytest.fixture(scope="module")
def ps():
    return headless_polyscope()


def _view(name, **contact_settings):
    from viz.scene import SceneView

    view = SceneView.from_usd(scene_path(name))
    for k, v in contact_settings.items():
        setattr(view.settings.contacts, k, v)
    return view


@pytest.mark.parametrize("name", PATCH_SCENES)
def test_scene_renders_with_its_patch_where_the_patch_projects(ps, name):
    from viz.picture import project, render

    view = _view(name, show_contacts=False)  # patch only: no points or arrows over it
    with_patch = render(view, size=SIZE, colorbar=False)
    assert with_patch.shape == (SIZE[1], SIZE[0], 4) and with_patch.dtype == np.uint8
    # not blank: shapes cover a good part of the picture (a ground wider than the view may cover
    # all of it), in many colours, none of them nearly everywhere
    assert 0.05 < 1.0 - background_fraction(with_patch)
    _, counts = np.unique(with_patch[..., :3].reshape(-1, 3), axis=0, return_counts=True)
    assert counts.max() < 0.98 * counts.sum()
    assert len(np.unique(with_patch[..., :3].reshape(-1, 3), axis=0)) > 100
    centroids = np.concatenate([p.face_centroid[~p.face_speculative] for p in view.patches])
    assert len(centroids) > 0, "every shipped scene is authored in contact"
    px, front = project(centroids)
    assert front.all()
    inside = (px[:, 0] >= 0) & (px[:, 0] < SIZE[0] - 1) & (px[:, 1] >= 0) & (px[:, 1] < SIZE[1] - 1)
    assert inside.mean() > 0.9
    # the same view without the patch: the pictures differ where the patch projects, and only near it
    view.settings.contacts.show_patch = False
    without = render(view, size=SIZE, colorbar=False)
    diff = np.abs(with_patch[..., :3].astype(int) - without[..., :3].astype(int)).max(axis=-1) > 12
    ij = np.round(px[inside]).astype(int)
    hit = diff[ij[:, 1], ij[:, 0]]
    assert hit.mean() > 0.8, f"only {hit.mean():.0%} of the patch's centroids show it"
    ys, xs = np.nonzero(diff)
    corners = project(np.concatenate([p.vertices for p in view.patches]))[0]  # speculative rims included
    lo, hi = corners.min(axis=0) - 3, corners.max(axis=0) + 3
    near = (xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])
    assert near.mean() > 0.95  # the patch changes the picture only where it projects


def test_patch_colours_follow_the_colour_map_and_range(ps):
    from viz.picture import project, render

    view = _view("sphere_on_box.usda", show_contacts=False, show_speculative=False)
    pressure = render(view, size=SIZE, colorbar=False)
    (pm,) = view.patches
    inner = pm.face_pressure > 0.3 * pm.face_pressure.max()  # away from the patch's rim
    ij = np.round(project(pm.face_centroid[inner])[0]).astype(int)
    view.settings.contacts.color_by = "depth"
    depth = render(view, size=SIZE, colorbar=False)
    changed = np.abs(pressure[ij[:, 1], ij[:, 0], :3].astype(int) - depth[ij[:, 1], ij[:, 0], :3]).max(axis=1) > 12
    assert changed.mean() > 0.5
    # a range far above the data paints the whole patch with the low end of the map
    view.settings.contacts.color_by = "pressure"
    view.settings.contacts.color_range = (1e9, 2e9)
    low = render(view, size=SIZE, colorbar=False)[ij[:, 1], ij[:, 0], :3].astype(int)[changed]  # where the patch shows
    assert np.ptp(low, axis=0).max() < 20 < np.ptp(pressure[ij[:, 1], ij[:, 0], :3].astype(int), axis=0).max()


def test_colour_bar_is_in_the_picture(ps):
    from viz.picture import render

    view = _view("cube_on_box.usda", show_contacts=False)  # thin arrows render a few pixels differently each pass
    view.settings.show_legend = False  # the bar alone (the legend: test_legend_*)
    plain = render(view, size=SIZE, colorbar=False)
    bar = render(view, size=SIZE, colorbar=True)
    diff = np.abs(plain[..., :3].astype(int) - bar[..., :3].astype(int)).max(axis=-1) > 12
    ys, xs = np.nonzero(diff)
    assert len(xs) > 200 and xs.min() > SIZE[0] // 2 and ys.min() < SIZE[1] // 5  # from the top right


def test_render_writes_a_png_and_cameras_parse(ps, tmp_path):
    import viz
    from viz.picture import parse_camera, parse_size, read_png

    out = tmp_path / "two_spheres.png"
    image = viz.render(scene_path("two_spheres.usda"), out, camera="0.4,-0.4,0.3:0,0,0.1", size="320x240")
    back = read_png(out)
    np.testing.assert_array_equal(back, image[..., :3])
    eye, target, up = parse_camera("top", (1.0, 2.0, 3.0), 0.5)
    np.testing.assert_allclose(target, (1, 2, 3))
    assert eye[2] > 3.5 and up[1] == 1.0
    for bad in ("nowhere", "1,2", "1,2,3:4", "0,0,0:0,0,0"):
        with pytest.raises(ValueError, match="camera"):
            parse_camera(bad, (0, 0, 0), 1.0)
    with pytest.raises(ValueError, match="size"):
        parse_size("640")


def test_source_geometry_and_display_options(ps):
    import polyscope as ps_module

    from viz.picture import render
    from viz.scene import ViewSettings

    settings = ViewSettings(show_sdf_mesh=False, show_source_mesh=True, show_body_sensors=True)
    settings.contacts.show_patch_points = True
    settings.contacts.show_normals = False
    settings.contacts.force_scale = 1e-3
    image = render(scene_path("torus_on_box.usda"), size=SIZE, settings=settings, camera="side")
    assert 0.05 < 1.0 - background_fraction(image) < 0.999
    assert ps_module.get_surface_mesh("1: /World/Torus/Collider [source]").is_enabled()
    assert not ps_module.has_surface_mesh("1: /World/Torus/Collider [SDF φ=0]")
    assert ps_module.has_point_cloud("patch triangle centroids") and ps_module.has_point_cloud("body contacts/in contact")


def test_point_contacts_are_drawn_with_normals_beside_patches(ps):
    import polyscope

    from viz.picture import project, render

    view = _view("primitives_on_plane.usda")
    with_points = render(view, size=SIZE, colorbar=False)
    assert polyscope.has_point_cloud("point contacts")
    cloud = polyscope.get_point_cloud("point contacts")
    assert cloud.n_points() == 7  # box corners 4, sphere 1, capsule ends 2
    pts = view.result.contacts.point.astype(float)
    px, front = project(pts)
    assert front.all()
    view.settings.contacts.show_contacts = False
    without = render(view, size=SIZE, colorbar=False)
    assert not polyscope.has_point_cloud("point contacts")
    diff = np.abs(with_points[..., :3].astype(int) - without[..., :3].astype(int)).max(axis=-1) > 12
    ij = np.round(px).astype(int)
    assert diff[ij[:, 1], ij[:, 0]].mean() > 0.8  # each point shows where it projects
    # a scene with both: the patch and the point contacts are drawn together
    view = _view("pinch_over_plane.usda")
    render(view, size=SIZE, colorbar=False)
    assert len(view.patches) >= 2 and any(len(p.faces) for p in view.patches)


def test_a_scalar_quantity_polyscope_fails_to_hand_back_is_added_again_and_other_errors_raise():
    # the bindings' rare "Unable to convert function return value" (a quantity's setter returning
    # it): viz adds the quantity once more, with its options; any other TypeError is the caller's
    from viz.backend import add_scalar

    class Structure:
        def __init__(self, failures, message):
            self.calls = []
            self.failures = failures
            self.message = message

        def add_scalar_quantity(self, name, values, **options):
            self.calls.append((name, options))
            if len(self.calls) <= self.failures:
                raise TypeError(self.message)

    s = Structure(1, "Unable to convert function return value to a Python type! The signature was ...")
    add_scalar(s, "pressure (Pa)", np.zeros(3), cmap="viridis", enabled=True)
    assert s.calls == [("pressure (Pa)", {"cmap": "viridis", "enabled": True})] * 2
    s = Structure(2, "Unable to convert function return value")
    with pytest.raises(TypeError):
        add_scalar(s, "pressure (Pa)", np.zeros(3), cmap="viridis")
    assert len(s.calls) == 2
    s = Structure(1, "incompatible function arguments")
    with pytest.raises(TypeError, match="incompatible"):
        add_scalar(s, "pressure (Pa)", np.zeros(3))
    assert len(s.calls) == 1
