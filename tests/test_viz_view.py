"""The interactive view: edits recompute the contact, the panel runs headless, `hydro view` works."""

import os

import numpy as np
import pytest

from cli_util import assert_one_line_error, hydro, run_python
from viz_util import ROOT, SIZE, background_fraction, headless_polyscope, scene_path


def _view(name="sphere_on_box.usda", **kw):
    from viz.scene import SceneView

    return SceneView.from_usd(scene_path(name), **kw)


def _net_force(view):
    return sum(s.net_force for s in view.update().pair_summaries())


def test_edits_recompute_the_contact_and_leave_the_model_alone():
    from hydro.scene.usd_io import load_usd
    from viz.scene import SceneView

    model = load_usd(scene_path("sphere_on_box.usda"))
    view = SceneView(model)
    f0 = _net_force(view)
    assert f0[2] > 30
    # stiffer shapes, same depth: the force scales with k_eff
    for s in range(model.shape_count):
        view.set_stiffness(s, 2 * model.shape_stiffness[s])
    np.testing.assert_allclose(_net_force(view), 2 * f0, rtol=1e-3)
    assert model.shape_stiffness[0] == view.model.shape_stiffness[0] / 2  # the caller's model is untouched
    # deeper: more force; lifted: none
    pose = view.state.body_q[0].copy()
    pose[2] -= 0.001
    view.set_body_pose(0, pose)
    assert _net_force(view)[2] > 2 * f0[2]
    pose[2] += 0.05
    view.set_body_pose(0, pose)
    assert len(view.update().contacts) == 0
    view.reset_bodies()
    assert len(view.update().contacts) > 0
    # options: every patch triangle, the switched interface
    n_reduced = len(view.update().contacts)
    view.set_config(reduce_contacts=False)
    assert len(view.update().contacts) == len(view.update().patch) > n_reduced
    view.set_config(interface="switched")
    assert view.pipeline is None and view.update().contacts is not None
    with pytest.raises(ValueError, match="stiffness"):
        view.set_stiffness(0, -1.0)
    with pytest.raises(ValueError, match="body"):
        view.set_body_pose(5, pose)
    assert any("contacts" in line for line in view.summary_lines())


def test_resolution_rebuilds_the_shapes_sdf():
    from hydro.scene.usd_io import load_usd
    from viz.scene import SceneView

    model = load_usd(scene_path("sphere_on_box.usda"))
    sdfs, pack = list(model.sdfs), model.sdf_pack
    view = SceneView(model)
    sphere = view.model.shape_path.index("/World/Sphere/Collider")
    before = view.model.sdfs[view.model.shape_sdf[sphere]]
    f0 = _net_force(view)
    shared = view.set_resolution(sphere, 32)
    after = view.model.sdfs[view.model.shape_sdf[sphere]]
    assert shared == [sphere] and max(after.resolution) == 32 and max(before.resolution) == 64
    assert view.model.sdf_pack.sdfs[view.model.shape_sdf[sphere]] is after
    assert view.model is not model and model.sdfs == sdfs and model.sdf_pack is pack  # the caller's model is untouched
    assert 0.7 < _net_force(view)[2] / f0[2] < 1.3  # the same contact through a coarser field


def test_a_rebuilt_sdf_is_drawn_again():
    ps = headless_polyscope()
    from viz import render

    view = _view()
    sphere = view.model.shape_path.index("/World/Sphere/Collider")
    view.settings.slice_shape = sphere
    render(view, size=SIZE)
    mesh = f"{sphere}: /World/Sphere/Collider [SDF φ=0]"
    fine = ps.get_surface_mesh(mesh).n_vertices()
    view.set_resolution(sphere, 16)
    view.draw()
    coarse = ps.get_surface_mesh(mesh).n_vertices()
    assert coarse < fine / 4  # the zero level set of the 16³ field, not the 64³ one (vertices ~ resolution²)
    plane = f"SDF {sphere} slice y=+0.0000"
    new = view.model.sdfs[int(view.model.shape_sdf[sphere])]  # its grid: 16 voxels over the sphere, and the
    nx, _, nz = new.resolution                               # bricks its contact gap adds on each side
    assert max(new.resolution) < 64
    assert ps.get_surface_mesh(plane).n_vertices() == (2 * nx + 1) * (2 * nz + 1)  # the new field, 2 per voxel


def test_panel_runs_a_frame_and_applies_its_actions():
    ps = headless_polyscope()
    from viz import backend
    from viz.panel import ViewerPanel

    backend.clear()
    ps.set_window_size(960, 720)
    view = _view("capsule_on_box.usda")
    view.forget_drawing()
    panel = ViewerPanel(view)
    ps.set_user_callback(panel)
    try:
        _panel_frames(ps, panel, view)
    finally:
        ps.clear_user_callback()


def _panel_frames(ps, panel, view):
    from viz.picture import screenshot

    ps.frame_tick()
    assert not panel.dirty and panel.message == ""
    assert ps.has_surface_mesh("patch 0: /World/Ground → /World/Capsule/Collider")
    f0 = _net_force(view)
    p0 = view.state.body_q[0, :3].copy()
    panel.move_body(0, p0 - (0, 0, 0.001), (0.0, 5.0, 0.0))
    image = screenshot(colorbar=True)  # a frame: the panel draws and redraws the scene
    assert not panel.dirty
    assert _net_force(view)[2] > f0[2]
    # the panel occupies the right of the window
    right = image[:, image.shape[1] * 3 // 4:]
    assert background_fraction(right) < 0.5
    # the gizmo: it starts at the body, and dragging it moves the body
    panel.use_gizmo = True
    ps.frame_tick()
    gizmo = ps.get_transformation_gizmo("body")
    np.testing.assert_allclose(gizmo.get_transform()[:3, 3], view.state.body_q[0, :3], atol=1e-6)
    moved = np.array(gizmo.get_transform(), dtype=float)
    moved[2, 3] += 0.05
    gizmo.set_transform(moved)
    ps.frame_tick()
    assert view.state.body_q[0, 2] == pytest.approx(moved[2, 3], abs=1e-6)
    assert len(view.update().contacts) == 0  # lifted off the box


def test_a_failing_simulation_shows_its_error_in_the_panel(monkeypatch):
    import hydro
    from viz.panel import ViewerPanel

    class Broken:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("boom")

    monkeypatch.setattr(hydro, "Simulation", Broken)
    panel = ViewerPanel(_view())
    panel.running = True
    panel.step_simulation()
    assert panel.message == "simulation: RuntimeError: boom" and not panel.running


def test_the_panel_steps_the_real_simulation_from_the_pose_on_screen():
    from viz.panel import ViewerPanel

    view = _view()
    panel = ViewerPanel(view)
    start = view.state.body_q[0].copy()
    panel.step_simulation()
    assert panel.message == "" and panel.simulation is not None
    assert not np.array_equal(view.state.body_q[0], start)  # it moved (the implicit step settles it at once)
    first = panel.simulation
    # an edit (moving the body up 5 cm) restarts the simulation from the edited scene
    panel.move_body(0, start[:3] + (0, 0, 0.05), (0.0, 0.0, 0.0))
    panel.step_simulation()
    assert panel.simulation is not first
    assert view.state.body_q[0, 2] == pytest.approx(start[2] + 0.05, abs=0.01)  # falling from there


def test_hydro_view_is_a_subcommand_ofhydro():
    # registered by viz through the hydro.commands entry point (hydro never imports viz)
    top = hydro("--help")
    assert top.returncode == 0 and "view" in top.stdout, top.stdout
    proc = hydro("view", "--help")
    assert proc.returncode == 0, proc.stderr
    for option in ("--screenshot", "--camera", "--size", "--color-by", "--slice"):
        assert option in proc.stdout
    assert "polyscope" not in proc.stderr.lower()


def test_hydro_view_screenshot_writes_a_picture_and_nothing_else(tmp_path):
    from viz.picture import read_png

    out = tmp_path / "pinch.png"
    proc = hydro("view", scene_path("pinch.usda"), "--screenshot", str(out), "--size", f"{SIZE[0]}x{SIZE[1]}",
                  "--camera", "top", "--color-by", "depth", "--slice", "/World/envs/env_0/Box/Collider:z", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == ["pinch.png"]  # no imgui.ini / .polyscope.ini in the working folder
    image = read_png(out)
    assert image.shape == (SIZE[1], SIZE[0], 3)
    assert 0.05 < 1.0 - background_fraction(image) < 0.999


def test_the_panel_writes_no_ini_file(tmp_path):
    # ImGui saves window positions to imgui.ini in the working folder unless Polyscope's prefs
    # file is off; the panel draws ImGui windows, so run a few frames of it where we can look
    headless_polyscope()
    code = ("from viz import backend\n"
            "from viz.panel import ViewerPanel\n"
            "from viz.scene import SceneView\n"
            "ps = backend.init(headless=True)\n"
            f"view = SceneView.from_usd({scene_path('sphere_on_box.usda')!r})\n"
            "ps.set_user_callback(ViewerPanel(view))\n"
            "for _ in range(3):\n"
            "    ps.frame_tick()\n")
    proc = run_python(["-c", code], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args, message", [
    (("view", "scenes/missing.usda", "--screenshot", "x.png"), "missing.usda"),
    (("view", "scenes/two_spheres.usda", "--screenshot", "x.png", "--camera", "under"), "camera must be"),
    (("view", "scenes/two_spheres.usda", "--screenshot", "x.png", "--size", "big"), "size must be"),
    (("view", "scenes/two_spheres.usda", "--screenshot", "x.png", "--slice", "/World/Nope"), "--slice: no shape"),
])
def test_hydro_view_errors_are_one_line(args, message):
    assert_one_line_error(hydro(*args), message)


def test_hydro_view_without_a_display_says_so_in_one_line():
    env = {k: "" for k in ("DISPLAY", "WAYLAND_DISPLAY")}
    assert_one_line_error(hydro("view", "scenes/two_spheres.usda", env=env), "--screenshot")


def test_only_viz_imports_polyscope():
    import glob
    import re

    code = ("import sys, hydro.cli, hydro.sdf.level_set, hydro.contact.patch_mesh, viz, viz.cli, viz.sensors, "
            "viz.scene, viz.panel; "
            "assert 'polyscope' not in sys.modules, 'polyscope imported'")
    proc = run_python(["-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr
    for path in glob.glob(os.path.join(ROOT, "hydro", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            assert not re.search(r"^\s*(from|import) (polyscope|viz)\b", fh.read(), flags=re.M), path
