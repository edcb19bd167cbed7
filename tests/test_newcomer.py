"""What a newcomer meets first (issue 28): an install that has every dependency and no CUDA
packages it does not need, compile progress that never goes quiet, and messages in the words of
the interface typed (flags on the command line, no NumPy reprs)."""

import os
import re
import time
import types

import numpy as np
import pytest
import trimesh

from cli_util import ROOT, run_python

from hydro.cli import main

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None


# -- dependencies ----------------------------------------------------------------------------


@pytest.mark.skipif(tomllib is None, reason="tomllib is Python >= 3.11")
def test_default_install_has_networkx_and_no_cuda_packages():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]
    names = [re.split(r"[<>=!\[ ;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]]
    assert "networkx" in names  # trimesh's fix_normals (hydro mesh repair) imports it
    assert not any(n.startswith(("numba-cuda", "cuda-")) for n in names)
    assert any(d.startswith("numba-cuda") for d in project["optional-dependencies"]["cuda"])


def test_hydro_imports_and_collides_without_numba_cuda(tmp_path):
    """numba.cuda absent (a CPU install with a Numba that has no built-in CUDA target): hydro
    imports, the CPU pipeline runs, and asking for CUDA says what to install."""
    code = f"""
import sys
sys.modules["numba.cuda"] = None  # import numba.cuda now fails, as without the cuda extra
import hydro
from hydro.cli import main
from hydro.backend import Device
assert main(["collide", {os.path.join(ROOT, "scenes", "sphere_on_box.usda")!r}]) == 0
try:
    Device("cuda")
except ValueError as exc:
    print("REFUSED", exc)
"""
    proc = run_python(["-c", code], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "29 hydroelastic" in proc.stdout
    assert "REFUSED" in proc.stdout and "pip install 'hydro[cuda]'" in proc.stdout


# -- compile progress ------------------------------------------------------------------------


def test_a_long_compile_never_goes_quiet_for_longer_than_the_limit():
    import io

    from hydro.jit import _CompileProgress

    def loop():
        pass

    loop.__name__ = loop.__qualname__ = "marching_cubes__loop"  # the serial build of a kernel, as hydro names it
    loop.__module__ = "hydro.contact.marching"
    item = types.SimpleNamespace(py_func=loop)
    out = io.StringIO()
    progress = _CompileProgress(quiet_limit=0.2, stream=out)
    event = types.SimpleNamespace(data={"dispatcher": item})
    progress.on_start(event)
    time.sleep(0.75)
    progress.on_end(event)
    time.sleep(0.3)  # nothing compiles: the watcher is quiet
    lines = out.getvalue().splitlines()
    still = [line for line in lines if "still compiling marching_cubes (kernel, serial)" in line]
    assert len(still) >= 2, lines
    assert lines[-1].startswith("hydro:   compiled marching_cubes (kernel, serial)")


# -- messages in the user's words ------------------------------------------------------------


@pytest.mark.parametrize("args, flag", [
    (["sdf", "sphere:0.1", "--resolution", "100"], "argument --resolution: must be a positive multiple of 8"),
    (["sdf", "sphere:0.1", "--format", "int8"], "argument --format: invalid choice: 'int8'"),
    (["mesh", "check", "x.stl", "--resolution", "12"], "argument --resolution: must be a positive multiple of 8"),
])
def test_bad_flags_are_named_as_typed(args, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and flag in err
    assert "max_resolution" not in err and "texture_format" not in err


def test_sdf_settings_refusals_name_the_flag(capsys):
    assert main(["sdf", "sphere:0.1", "--band-inner", "0.1", "--points", "10"]) == 2
    err = capsys.readouterr().err
    assert "--band-inner must be a finite number < 0, got 0.1" in err and "narrow_band_inner" not in err


def test_device_cuda_without_a_gpu_says_device_cpu(capsys):
    from hydro.backend import cuda

    if cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    assert main(["collide", os.path.join(ROOT, "scenes", "sphere_on_box.usda"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert "use --device cpu" in err and "device='cpu'" not in err and len(err.splitlines()) == 1


def test_no_numpy_reprs_in_messages():
    from hydro.errors import shown
    from hydro.sdf import SDFSettings

    with pytest.raises(ValueError) as exc:
        SDFSettings(narrow_band_inner=np.float64(0.1))
    assert "got 0.1" in str(exc.value) and "np." not in str(exc.value)
    assert shown(np.float64(-0.1)) == "-0.1" and shown(np.array([1.0, 2.0])) == "[1.0, 2.0]"
    assert shown(np.int32(60)) == "60" and shown("int8") == "'int8'"


def test_help_points_to_the_examples_folder_that_exists(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "hydro/tools/examples" in out and "hydro/examples" not in out.replace("hydro/tools/examples", "")
    assert os.path.isdir(os.path.join(ROOT, "hydro", "tools", "examples"))


def test_collide_on_a_point_only_scene_says_no_patch_was_reduced(capsys):
    assert main(["collide", os.path.join(ROOT, "scenes", "primitives_on_plane.usda")]) == 0
    out = capsys.readouterr().out
    assert "reduced from 0" not in out
    (line,) = [x for x in out.splitlines() if x.startswith("contacts")]
    assert re.search(r"\(0 hydroelastic; \d+ point\)", line), line


def test_sdf_float32_prints_its_dense_grid_once(capsys):
    assert main(["sdf", "sphere:0.1", "--format", "float32", "--resolution", "16", "--points", "10"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("dense grid")]
    assert line.count("float32") == 1


@pytest.fixture
def flipped_box(tmp_path):
    box = trimesh.creation.box((0.1, 0.1, 0.1))
    faces = box.faces.copy()
    faces[[0, 5]] = faces[[0, 5], ::-1]
    path = str(tmp_path / "flipped.stl")  # an STL: 36 vertices, welded into 8
    trimesh.Trimesh(box.vertices, faces, process=False).export(path)
    return path


def test_mesh_check_calls_a_closed_mesh_with_flipped_faces_closed(flipped_box, capsys):
    assert main(["mesh", "check", flipped_box]) == 1
    out = capsys.readouterr().out
    assert "closed, but 2 face(s) wound inconsistently" in out and "`hydro mesh repair" in out
    assert "not watertight" not in out
    assert "0 boundary" in out and "0 hole(s)" in out  # holes are boundary loops only
    assert out.count("welded 36 vertices into 8") == 1


def test_mesh_check_prints_welding_once_for_a_good_stl(tmp_path, capsys):
    path = str(tmp_path / "box.stl")
    trimesh.creation.box((0.1, 0.1, 0.1)).export(path)
    assert main(["mesh", "check", path]) == 0
    assert capsys.readouterr().out.count("welded 36 vertices into 8") == 1


def test_faces_to_flip_counts_the_smaller_orientation():
    from hydro.geometry.mesh_check import edge_topology

    box = trimesh.creation.box((1.0, 1.0, 1.0))
    for flip in ([0], [0, 5], [0, 1, 2, 3, 4, 5, 6]):
        f = box.faces.copy()
        f[flip] = f[flip, ::-1]
        topo = edge_topology(f, len(box.vertices))
        assert topo.only_winding and topo.flipped_faces == min(len(flip), 12 - len(flip))
        assert topo.boundary_loops == 0
    open_box = edge_topology(box.faces[:-2], len(box.vertices))
    assert open_box.boundary_loops == 1 and open_box.flipped_faces == 0 and not open_box.only_winding
