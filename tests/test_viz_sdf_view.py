"""Inside an SDF: slice samples, marching-squares contours, fine bricks, and the slice's picture."""

import numpy as np
import pytest

from hydro.geometry import Box, Sphere
from hydro.sdf import SDFSettings, build_sdf
from viz.sdf_view import (box_edges, brick_is_fine, contour_segments, default_levels, fine_brick_boxes, slice_grid)
from viz_util import SIZE, headless_polyscope, scene_path, window


def test_contours_of_a_circle_lie_on_the_circle():
    n = 40
    x = np.linspace(-1, 1, n + 1)
    X, Y = np.meshgrid(x, x, indexing="xy")
    r = np.hypot(X + 0.1, Y)
    for level in (0.33, 0.71):  # (levels that hit no sample exactly)
        segs = contour_segments(r - 0.5, level - 0.5, origin=(-1, -1), spacing=(2 / n, 2 / n))
        d = np.hypot(segs[..., 0] + 0.1, segs[..., 1])
        np.testing.assert_allclose(d, level, atol=2 / n * 0.1)
        # a closed curve: every end point is shared by exactly two segments
        ends = np.round(segs.reshape(-1, 2), 9)
        _, counts = np.unique(ends, axis=0, return_counts=True)
        assert np.all(counts == 2)
        assert np.sum(np.linalg.norm(segs[:, 1] - segs[:, 0], axis=1)) == pytest.approx(2 * np.pi * level, rel=0.01)


def test_saddles_are_split_by_the_centre_value():
    values = np.array([[-1.0, 1.0], [1.0, -1.0]])  # corners 0 and 2 below
    assert len(contour_segments(values)) == 2
    assert len(contour_segments(values + 0.5)) == 2  # centre above: the two low corners cut off
    assert len(contour_segments(np.ones((3, 3)))) == 0


def test_fine_bricks_and_slice_samples():
    sdf = build_sdf(Sphere(0.1), SDFSettings(max_resolution=64, narrow_band_inner=-0.01, narrow_band_outer=0.01))
    boxes = fine_brick_boxes(sdf)
    assert len(boxes) == sdf.fine_brick_count > 0
    centres = boxes.mean(axis=1)
    assert brick_is_fine(sdf, centres).all()
    assert not brick_is_fine(sdf, [[0.0, 0.0, 0.0]])[0]  # the deep inside stays coarse
    assert not brick_is_fine(sdf, [sdf.box_hi + 1.0])[0]
    nodes, edges = box_edges(boxes[:3])
    assert nodes.shape == (24, 3) and edges.shape == (36, 2)
    assert np.all(np.linalg.norm(nodes[edges[:, 0]] - nodes[edges[:, 1]], axis=1) == pytest.approx(8 * sdf.voxel_size))
    grid = slice_grid(sdf, 2, 0.02)
    assert np.all(grid.points[..., 2] == 0.02)
    np.testing.assert_allclose(grid.points[0, 0, :2], sdf.box_lo[:2])
    np.testing.assert_allclose(grid.points[-1, -1, :2], sdf.box_hi[:2])
    assert 0.0 in default_levels(sdf) and -0.01 in default_levels(sdf)
    assert max(default_levels(build_sdf(Box((0.02, 0.02, 0.02)), SDFSettings(max_resolution=16)))) < 0.1


def test_slice_picture_shows_the_zero_contour(tmp_path):
    headless_polyscope()
    from viz.picture import project, render
    from viz.scene import SceneView

    view = SceneView.from_usd(scene_path("sphere_on_box.usda"))
    sphere = view.model.shape_path.index("/World/Sphere/Collider")
    view.settings.slice_shape = sphere
    view.settings.slice.axis = 1
    view.settings.slice.show_fine_bricks = True
    view.settings.slice.iso_levels = [-0.05]
    image = render(view, tmp_path / "slice.png", camera="front", size=SIZE, colorbar=False)
    import polyscope as ps

    assert ps.has_surface_mesh(f"SDF {sphere} iso φ=-50.00 mm") and ps.has_curve_network(f"SDF {sphere} fine bricks")
    # the zero contour is drawn black along the sphere's great circle in the plane y = 0
    angles = np.linspace(0.3, 2.8, 12)  # its upper part, clear of the patch
    centre = view.state.body_q[0, :3]
    pts = centre + 0.1 * np.stack([np.cos(angles), np.zeros_like(angles), np.sin(angles)], axis=1)
    px, front = project(pts)
    assert front.all()
    dark = image[..., :3].max(axis=-1) < 70
    seen = [window(dark, p, half=2).any() for p in px]
    assert np.mean(seen) > 0.8
    # the plane is coloured by φ: blue inside the sphere, red outside
    inside = project([centre + (0.0, 0.0, 0.03)])[0][0]
    r, g, b = image[int(inside[1]), int(inside[0]), :3].astype(int)
    assert b > r + 20
