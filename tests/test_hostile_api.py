"""Hostile input through the Python API (issue 16): wrong types and values are named errors
(:class:`hydro.errors.InputError` / :class:`~hydro.errors.BudgetError`, both ``ValueError``), never
an ``AttributeError``, a reshape error or a run that never ends; outputs appear whole or not at
all; an unwritable kernel cache warns once, naming the variable."""

import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from cli_util import ROOT
from hostile_util import box_on_ground, write
from hydro.budget import MAX_SUBSTEPS, check_sdf_memory, check_substeps
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.errors import BudgetError, HydroError, HydroWarning, InputError
from hydro.geometry import Box, Sphere
from hydro.tools.outputs import atomic_file, atomic_files, output_file, output_folder
from pipeline_util import pose, shapes


@pytest.fixture(scope="module")
def sphere_box():
    m = shapes([Box((0.5, 0.5, 0.2)), Sphere(0.1)], stiffness=1e9, resolution=16)
    poses = np.array([pose((0, 0, -0.1)), pose((0, 0, 0.1 - 0.01))])
    return HydroelasticPipeline(m), poses


# ---------------------------------------------------------------------------------------------
# the pipeline: its model, poses, pairs and options


@pytest.mark.parametrize("model, words", [
    (None, ("model must be a hydro Model, got NoneType", "load_usd")),
    ("scenes/cube_on_box.usda", ("model must be a hydro Model, got str", "a path: load it first")),
    (42, ("model must be a hydro Model, got int",)),
])
def test_pipeline_refuses_what_is_not_a_model(model, words):
    with pytest.raises(InputError) as err:
        HydroelasticPipeline(model)
    for w in words:
        assert w in str(err.value)


@pytest.mark.parametrize("pairs, words", [
    ([0, 1, 2], ("pairs must be (K, 2) integer indices", "shape (3,)")),
    ([[0, 1, 2]], ("pairs must be (K, 2)", "shape (1, 3)")),
    ([[0, 5]], ("pairs[0] = (0, 5)", "out of range [0, 1]")),
    ([[0, -1]], ("pairs[0] = (0, -1)", "out of range")),
    ([[0.5, 1]], ("non-integer 0.5",)),
    ("01", ("pairs must be (K, 2)", "got str")),
    ([[True, False]], ("got bool values",)),
])
def test_collide_names_bad_pairs(sphere_box, pairs, words):
    pipe, poses = sphere_box
    with pytest.raises(InputError) as err:
        pipe.collide(poses, pairs=pairs)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_collide_accepts_one_pair_and_float_indices_that_are_integers(sphere_box):
    pipe, poses = sphere_box
    ref = pipe.collide(poses).contacts.force.sum()
    assert ref > 0
    for pairs in ([0, 1], [[0.0, 1.0]], np.array([[0, 1]], dtype=np.int32)):
        assert pipe.collide(poses, pairs=pairs).contacts.force.sum() == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("poses, words", [
    (None, ("shape_poses must be an array of numbers, got NoneType",)),
    ("poses", ("shape_poses must be an array of numbers, got str",)),
    ([[0, 0, 0, 1, 0, 0, "x"]] * 2, ("shape_poses must be an array of numbers",)),
    (np.zeros((2, 6)), ("shape_poses must have shape (2, 7)",)),
])
def test_collide_names_bad_poses(sphere_box, poses, words):
    pipe, _ = sphere_box
    with pytest.raises(InputError) as err:
        pipe.collide(poses)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_collide_names_a_bad_option(sphere_box):
    pipe, poses = sphere_box
    with pytest.raises(InputError, match="triangles must be True or False, got 'yes'"):
        pipe.collide(poses, triangles="yes")


# ---------------------------------------------------------------------------------------------
# the simulation: numbers with units, sub-step budget


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    return write(tmp_path_factory.mktemp("scene"), box_on_ground(resolution=8))


@pytest.mark.parametrize("kwargs, words", [
    ({"dt": "0.01"}, ("dt must be a finite number > 0 (s), got '0.01' (str)",)),
    ({"dt": float("nan")}, ("dt must be a finite number > 0",)),
    ({"dt": True}, ("dt must be", "(bool)")),
    ({"gravity": "down"}, ("gravity must be an array of numbers, got str",)),
    ({"damping_ratio": -1}, ("damping_ratio must be a finite number >= 0, got -1",)),
    ({"stability_margin": 2}, ("stability_margin must be a finite number > 0 and <= 1, got 2",)),
    ({"substeps": 0}, ("substeps must be 'auto' or a positive integer",)),
])
def test_simulation_names_bad_arguments(scene, kwargs, words):
    from hydro.sim.simulation import Simulation

    with pytest.raises(InputError) as err:
        Simulation(scene, **kwargs)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_a_huge_dt_is_refused_before_it_runs(scene):
    """``dt = 1e6`` planned 2.7 billion sub-steps and ran until killed; now refused at once,
    saying which dt would do."""
    from hydro.sim.simulation import Simulation

    # (the explicit solver's sub-steps; the implicit one takes any dt in one solve)
    assert Simulation(scene, dt=1e6).substeps == 1
    with pytest.raises(BudgetError) as err:
        Simulation(scene, dt=1e6, solver="explicit")
    msg = str(err.value)
    assert f"more than the {MAX_SUBSTEPS} hydro allows per step" in msg and "use dt <=" in msg
    limit = float(msg.split("use dt <= ")[1].split(" s")[0])
    assert Simulation(scene, dt=limit * 0.999, solver="explicit").substeps <= MAX_SUBSTEPS  # the advice holds
    with pytest.raises(BudgetError, match=f"substeps = {MAX_SUBSTEPS + 1} is more than"):
        Simulation(scene, substeps=MAX_SUBSTEPS + 1)


def test_check_substeps_passes_the_limit_itself():
    assert check_substeps(MAX_SUBSTEPS, dt=1.0) == MAX_SUBSTEPS
    with pytest.raises(BudgetError):
        check_substeps(MAX_SUBSTEPS + 1, dt=1.0)


# ---------------------------------------------------------------------------------------------
# hydro run / examples as functions


def test_run_scene_names_bad_steps_and_out_dir(scene, tmp_path):
    from hydro.tools.run import run_scene

    for steps, words in ((0, "steps must be an integer >= 1, got 0"), (-3, "got -3"), (1.5, "got 1.5 (float)")):
        with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
            run_scene(scene, steps=steps, out_dir=str(tmp_path / "o"))
    taken = tmp_path / "taken"
    taken.write_text("mine")
    with pytest.raises(InputError, match="is a file, not a folder"):
        run_scene(scene, steps=1, out_dir=str(taken))
    assert taken.read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["taken"]  # nothing written on failure


@pytest.mark.parametrize("steps", [0, -3, 2.0, "10"])
def test_example_steps_is_a_positive_integer_not_a_default_in_disguise(steps):
    from hydro.tools.examples import run_example

    with pytest.raises(InputError, match="steps must be an integer >= 1"):
        run_example("contact-sensor", steps=steps)
    with pytest.raises(InputError, match="no example named 'nope'"):
        run_example("nope")


# ---------------------------------------------------------------------------------------------
# SDF memory budget


def test_sdf_memory_budget_names_the_setting_and_the_amount(monkeypatch):
    """``hydro sdf``'s check is the scene rules' (HYDRO.BUD.001): same estimate, same budget."""
    from hydro.scene.validate import sdf_build_bytes
    from hydro.sdf import SDFSettings

    with pytest.raises(BudgetError) as err:
        check_sdf_memory(Sphere(0.1), SDFSettings(max_resolution=100000), what="shape /World/S",
                         setting="lower newton:sdfMaxResolution")
    msg = str(err.value)
    for w in ("shape /World/S", "100000 x 100000 x 100000", "TiB", "HYDRO_SDF_BUDGET_GIB",
              "lower newton:sdfMaxResolution"):
        assert w in msg
    small = SDFSettings(max_resolution=64)
    assert check_sdf_memory(Sphere(0.1), small, what="s", setting="x") == int(sdf_build_bytes(Sphere(0.1), small)[0])
    monkeypatch.setenv("HYDRO_SDF_BUDGET_GIB", "1e-6")
    with pytest.raises(BudgetError, match="HYDRO_SDF_BUDGET_GIB"):
        check_sdf_memory(Sphere(0.1), small, what="s", setting="x")
    monkeypatch.setenv("HYDRO_SDF_BUDGET_GIB", "lots")
    with pytest.raises(BudgetError, match="HYDRO_SDF_BUDGET_GIB must be a number of GiB, got 'lots'"):
        check_sdf_memory(Sphere(0.1), small, what="s", setting="x")


def test_the_errors_are_value_errors_and_hydro_errors():
    for cls in (InputError, BudgetError):
        assert issubclass(cls, ValueError) and issubclass(cls, HydroError)


# ---------------------------------------------------------------------------------------------
# atomic outputs


def test_atomic_file_leaves_the_old_file_on_an_error(tmp_path):
    target = tmp_path / "x.npz"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as tmp:
            assert os.path.dirname(tmp) == str(tmp_path) and tmp.endswith(".npz")  # same folder, same format
            np.savez(tmp, a=np.arange(3))
            raise RuntimeError("writer died half way")
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["x.npz"]  # no temporary file left
    with atomic_file(target) as tmp:
        np.savez(tmp, a=np.arange(3))
    np.testing.assert_array_equal(np.load(target)["a"], np.arange(3))
    assert sorted(os.listdir(tmp_path)) == ["x.npz"]


def test_atomic_files_are_all_new_or_all_old(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    with pytest.raises(KeyboardInterrupt):
        with atomic_files([a, b]) as (ta, tb):
            open(ta, "w").write("new a")
            raise KeyboardInterrupt  # Ctrl-C between the two files
    assert a.read_text() == "old a" and not b.exists()
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]
    with atomic_files([a, b]) as (ta, tb):
        open(ta, "w").write("new a")
        open(tb, "w").write("new b")
    assert (a.read_text(), b.read_text()) == ("new a", "new b")


def test_output_paths_mean_exactly_the_path_given(tmp_path):
    with pytest.raises(InputError, match="is a folder: give the file to write"):
        output_file(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        output_file(tmp_path / "missing" / "x.npz")
    assert output_file(tmp_path / "table") == str(tmp_path / "table")  # no extension added
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is a file, not a folder"):
        output_folder(tmp_path / "f")
    with pytest.raises(InputError, match="is a file, not a folder"):
        output_folder(tmp_path / "f" / "sub")
    assert output_folder(tmp_path / "new" / "deeper") == str(tmp_path / "new" / "deeper")
    assert not (tmp_path / "new").exists()  # checked, not made


# ---------------------------------------------------------------------------------------------
# an unwritable kernel cache


def test_an_unwritable_cache_warns_once_naming_the_variable(tmp_path, monkeypatch):
    from hydro import jit

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "cache"))  # under a file: never writable, even as root
    rt = jit._Runtime(jit.default_cache_folder(), False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert rt.cache_writable() is False
        assert rt.cache_writable() is False
    assert len(seen) == 1 and issubclass(seen[0].category, HydroWarning)
    msg = str(seen[0].message)
    assert f"NUMBA_CACHE_DIR={blocker / 'cache'}" in msg and "compiles them again" in msg
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "ok"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit._Runtime(jit.default_cache_folder(), False).cache_writable() is True


def test_an_unwritable_cache_still_compiles_and_warns_once_per_process(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code = """
import warnings
warnings.simplefilter("always")
from hydro.jit import cpu_jit

def add(a, b):
    return a + b

def mul(a, b):
    return a * b

print(cpu_jit(add)(2, 3), cpu_jit(mul)(2, 3))
"""
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBA_CACHE_DIR=str(blocker / "cache"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["5", "6"]
    assert proc.stderr.count("HydroWarning: cannot cache compiled kernels") == 1, proc.stderr
    assert "NUMBA_CACHE_DIR=" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Ctrl-C while hydro run writes its files (in-process: the signal arrives inside the writer)


def _sigint_in_plot(monkeypatch, times):
    import signal

    import hydro.tools.run as run

    real = run.line_plot

    def plot(*args, **kwargs):
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # let the handler run
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "line_plot", plot)
    return run.run_scene


def test_one_ctrl_c_while_writing_finishes_the_files_then_says_so(scene, tmp_path, monkeypatch, capsys):
    from hydro.errors import Interrupted

    run_scene = _sigint_in_plot(monkeypatch, 1)
    out = tmp_path / "out"
    with pytest.raises(Interrupted, match="interrupted while writing: finished the files in") as err:
        run_scene(scene, steps=2, dt=1e-3, out_dir=str(out), stream=open(os.devnull, "w"), log=lambda *a: None)
    assert "finishing the output files (Ctrl-C again to abandon them)" in capsys.readouterr().err
    assert sorted(os.listdir(out)) == ["forces.png", "sensors.npz", "trajectories.npz"]  # whole, no temporaries
    assert np.load(out / "trajectories.npz")["body_q"].shape[0] == 2
    assert set(err.value.files) == {"trajectories", "sensors", "plot"}


def test_two_ctrl_c_while_writing_abandon_the_files(scene, tmp_path, monkeypatch):
    from hydro.errors import Interrupted

    run_scene = _sigint_in_plot(monkeypatch, 2)
    out = tmp_path / "out"
    with pytest.raises(Interrupted, match="interrupted twice while writing: abandoned the output files"):
        run_scene(scene, steps=2, dt=1e-3, out_dir=str(out), stream=open(os.devnull, "w"), log=lambda *a: None)
    assert not out.exists() or os.listdir(out) == []  # no half-written file, no temporary left
