"""``hydro mesh check`` and ``hydro mesh repair``: what they say, what they write, what they refuse."""

import numpy as np
import pytest
import trimesh

from cli_util import assert_one_line_error, hydro

from hydro.cli import main
from hydro.geometry import Mesh
from hydro.geometry.mesh_repair import repair_mesh


@pytest.fixture
def files(tmp_path):
    box = trimesh.creation.box((0.1, 0.1, 0.1))
    out = {"box.stl": box, "open.obj": trimesh.Trimesh(box.vertices, box.faces[:-2], process=False)}
    flipped = box.faces.copy()
    flipped[[0, 5]] = flipped[[0, 5], ::-1]
    out["flipped.obj"] = trimesh.Trimesh(box.vertices, flipped, process=False)
    out["box_mm.stl"] = box.copy().apply_scale(1000.0)
    ball = trimesh.creation.icosphere(subdivisions=2, radius=0.05)
    bowl = ~((ball.triangles_center[:, 2] > 0.03) & (ball.triangles_center[:, 0] > 0.0))  # a dent cut out
    out["dented.obj"] = trimesh.Trimesh(ball.vertices, ball.faces[bowl], process=False)
    paths = {}
    for name, tm in out.items():
        paths[name] = str(tmp_path / name)
        tm.export(paths[name])
    return paths


def test_check_closed_stl(files, capsys):
    assert main(["mesh", "check", files["box.stl"]]) == 0
    text = capsys.readouterr().out
    assert "welded 36 vertices into 8" in text and "hydroelastic OK" in text and "warning" not in text


def test_check_open_mesh_says_what_and_how_to_fix(files, capsys):
    assert main(["mesh", "check", files["open.obj"]]) == 1
    text = capsys.readouterr().out
    assert "4 boundary edge(s) in 1 hole(s)" in text
    assert "hydroelastic REFUSED" in text and "Fix:" in text and "hydro mesh repair" in text


def test_check_warns_about_millimetres(files, capsys):
    assert main(["mesh", "check", files["box_mm.stl"]]) == 0
    text = capsys.readouterr().out
    assert "implausibly large" in text and "--scale 0.001" in text and "wider than the narrow band" in text
    assert "Mesh.load" not in text and "raise --resolution" in text  # the command's flags, not the Python API
    assert main(["mesh", "check", files["box_mm.stl"], "--scale", "0.001"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_repair_closes_a_flat_hole_without_moving_the_surface(files, tmp_path, capsys):
    out = str(tmp_path / "fixed.obj")
    assert main(["mesh", "repair", files["open.obj"], "-o", out]) == 0
    text = capsys.readouterr().out
    assert "closed 1 hole(s)" in text and "repair ACCEPTED" in text and "wrote" in text
    fixed = Mesh.load(out)
    assert fixed.is_closed() and fixed.volume() == pytest.approx(1e-3, rel=1e-9)
    assert main(["mesh", "check", out]) == 0


def test_repair_reorients_flipped_faces(files, tmp_path, capsys):
    out = str(tmp_path / "fixed.stl")
    assert main(["mesh", "repair", files["flipped.obj"], "-o", out]) == 0
    assert "reoriented 2 face(s)" in capsys.readouterr().out
    assert Mesh.load(out).volume() == pytest.approx(1e-3, rel=1e-6)  # STL stores float32


def test_repair_refuses_to_invent_surface_and_writes_nothing(files, tmp_path, capsys):
    out = tmp_path / "dented_fixed.obj"
    assert main(["mesh", "repair", files["dented.obj"], "-o", str(out)]) == 1
    text = capsys.readouterr().out
    assert "repair REFUSED" in text and "off a plane" in text and "convexHull" in text
    assert not out.exists() and not list(tmp_path.glob(".*tmp*"))


def test_repair_displacement_is_measured_against_the_original():
    """A mesh whose vertices are welded farther than the limit allows: the repair is refused and
    the displacement says by how much the surface moved."""
    box = trimesh.creation.box((0.1, 0.1, 0.1))
    tri = box.vertices[box.faces].reshape(-1, 3)
    rng = np.random.default_rng(0)
    tri = tri + rng.uniform(-1, 1, tri.shape) * 2e-4  # STL corners scattered by up to 0.35 mm
    mesh = Mesh(tri, np.arange(len(tri)).reshape(-1, 3), name="scattered")
    _, report = repair_mesh(mesh, weld_tolerance=1e-3, max_displacement=1e-5)
    assert report.closed and not report.accepted
    assert 1e-5 < max(report.displacement, report.coverage) < 1e-3
    assert "moves the surface by" in report.reason()
    _, report = repair_mesh(mesh, weld_tolerance=1e-3, max_displacement=1e-3)
    assert report.accepted


def test_repair_refuses_a_folder_as_output(files, tmp_path):
    proc = hydro("mesh", "repair", files["open.obj"], "-o", str(tmp_path))
    assert_one_line_error(proc, "is a folder")


def test_sdf_report_of_a_mesh_compares_with_the_winding_number_reference(tmp_path, capsys):
    a = trimesh.creation.box((0.1, 0.1, 0.1))
    path = str(tmp_path / "two.obj")
    trimesh.util.concatenate([a, a.copy().apply_translation((0.05, 0.05, 0.0))]).export(path)
    assert main(["sdf", f"mesh:{path}", "--resolution", "16", "--points", "2000"]) == 0
    text = capsys.readouterr().out
    assert "merged into their union" in text
    assert "sign from the winding number of the mesh as given" in text
