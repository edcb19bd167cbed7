"""Hostile API and command-line input, third round (issue 27): arguments that were silently
misread (a float env id, an impossible inertia, a prim name USD refuses), settings that grew memory
until the system killed the process (sensor histories, envs, recorded steps) and cryptic errors
(corrupt or point-cloud mesh files, a NaN gravity). Each is refused before any work with one line
naming the input and the fix."""

import os
import warnings

import numpy as np
import pytest

from cli_util import ROOT, hydro
from hostile_util import assert_error, box_on_ground, write
from hydro.cli import main
from hydro.errors import BudgetError, InputError
from hydro.geometry import Mesh, Sphere
from hydro.scene.model import ModelBuilder


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    return write(tmp_path_factory.mktemp("scene"), box_on_ground(resolution=8, envs=True))


@pytest.fixture(scope="module")
def sim(scene):
    from hydro.sim.simulation import Simulation

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Simulation(scene, num_envs=2)


# ---------------------------------------------------------------------------------------------
# env ids, inertia, prim names


@pytest.mark.parametrize("ids, words", [
    ([0.5], "non-integer 0.5"), (0.5, "non-integer 0.5"), ([float("nan")], "non-integer"), ([True], "bool"),
    (["0"], "<U1"), ([2], "got [2]"), ([-1], "got [-1]"),
])
def test_reset_refuses_env_ids_that_are_not_env_indices(sim, ids, words):
    q = sim.state.body_q.copy()
    sim.state.body_q[:, 2] += 1.0
    moved = sim.state.body_q.copy()
    with pytest.raises(InputError, match=r"env_ids must be in \[0, 1\] \(env indices: integers\)") as err:
        sim.reset(env_ids=ids)
    assert words in str(err.value)
    np.testing.assert_array_equal(sim.state.body_q, moved)  # nothing reset (not env 0)
    sim.state.body_q[:] = q


def test_reset_takes_integers_and_integral_floats(sim):
    sim.state.body_q[:, 2] += 1.0
    sim.reset(env_ids=np.array([1]))
    sim.reset(env_ids=[0.0])
    np.testing.assert_allclose(sim.state.body_q, sim.model.body_q0)


@pytest.mark.parametrize("inertia", [(1, 1, 100), (1, 100, 1), np.diag([3.0, 1.0, 1.0])])
def test_an_inertia_that_breaks_the_triangle_inequality_is_refused(inertia):
    with pytest.raises(ValueError, match="triangle inequality"):
        ModelBuilder().add_body("/World/B", mass=1.0, inertia=inertia)
    ModelBuilder().add_body("/World/B", mass=1.0, inertia=(1, 1, 2))  # a thin disc: on the bound


def test_a_usd_diagonal_inertia_that_breaks_the_triangle_inequality_is_a_finding(tmp_path):
    pytest.importorskip("pxr")
    from hydro.scene.usd_io import validate_usd

    extra = '''
    def Xform "Odd" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        float physics:mass = 1
        float3 physics:diagonalInertia = (1, 1, 100)
    }'''
    path = write(tmp_path, box_on_ground(extra=extra))
    found = [f for f in validate_usd(path) if f.code == "HYDRO.MAS.001"]
    assert len(found) == 1 and found[0].prim_path == "/World/Odd" and "triangle inequality" in found[0].message


@pytest.mark.parametrize("path, words", [
    ("/World/B all", "holds ' '"), ("/World/1ball", "starts with '1'"), ("/World/Ba-ll", "holds '-'"),
    ("/World//B", "empty name"), ("World/B", "absolute prim path"), ("/World/B.1", "holds '.'"),
])
def test_model_builder_checks_prim_names_with_usds_rule(path, words):
    b = ModelBuilder()
    with pytest.raises(InputError) as err:
        b.add_body(path)
    assert words in str(err.value) and "is not a USD prim path" in str(err.value) and path in str(err.value)
    with pytest.raises(InputError):
        b.add_shape(path, Sphere(0.1))


def test_names_usd_accepts_are_accepted_and_saved(tmp_path):
    pxr = pytest.importorskip("pxr")
    from hydro.scene.usd_io import load_usd, save_usd

    names = ["/World/_b", "/World/ball_1", "/World/Kugel_\u00e4"]
    b = ModelBuilder()
    for i, p in enumerate(names):
        assert pxr.Sdf.Path.IsValidPathString(p)
        body = b.add_body(p, (i, 0, 1, 0, 0, 0, 1))
        b.add_shape(p + "/C", Sphere(0.1), body=body)
    save_usd(b.finalize(build_sdfs=False), tmp_path / "names.usda")
    assert load_usd(tmp_path / "names.usda", build_sdfs=False).body_path == names


def test_the_core_checks_names_without_pxr():
    import hydro.scene.paths as paths

    src = open(paths.__file__).read()
    assert "pxr" not in src.replace("no ``pxr`` here", "").replace("No ``pxr`` here", "")


# ---------------------------------------------------------------------------------------------
# memory budgets, checked before allocating


def test_a_huge_sensor_history_is_refused_before_allocating(sim, monkeypatch):
    from hydro.sim.sensors import ContactSensorCfg

    monkeypatch.setenv("HYDRO_MEMORY_BUDGET_GIB", "1")
    with pytest.raises(BudgetError) as err:
        sim.add_sensor(ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Box", history_length=10**9))
    msg = str(err.value)
    assert "history_length" in msg and "1000000000 samples" in msg and "GiB" in msg
    sim.add_sensor(ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Box", history_length=10))  # a normal one still fits


def test_a_huge_num_envs_is_refused_before_copying(scene, monkeypatch):
    from hydro.scene.usd_io import load_usd

    monkeypatch.setenv("HYDRO_MEMORY_BUDGET_GIB", "1")
    with pytest.raises(BudgetError, match=r"100000000 envs .* --num-envs"):
        load_usd(scene, num_envs=100_000_000, build_sdfs=False)


def test_the_memory_budget_variable_is_checked(monkeypatch):
    from hydro.budget import memory_budget_bytes

    monkeypatch.setenv("HYDRO_MEMORY_BUDGET_GIB", "lots")
    with pytest.raises(BudgetError, match="HYDRO_MEMORY_BUDGET_GIB must be a number > 0"):
        memory_budget_bytes()
    monkeypatch.setenv("HYDRO_MEMORY_BUDGET_GIB", "2")
    assert memory_budget_bytes() == 2 * 2**30


@pytest.mark.parametrize("steps, words", [
    ("100000000000000000000", ("--steps", "recording 100000000000000000000 steps", "run fewer steps")),
    ("1000000000", ("--steps", "GiB", "memory budget")),
])
def test_hydro_run_refuses_steps_it_cannot_record(tmp_path, steps, words):
    proc = hydro("run", "scenes/cube_on_box.usda", "--steps", steps, "--out", str(tmp_path / "o"),
                 env={"HYDRO_MEMORY_BUDGET_GIB": "8"})
    assert_error(proc, *words)
    assert "Maximum allowed dimension" not in proc.stderr and "a resolution, the number of envs" not in proc.stderr
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------------------------
# mesh files and gravity: one clear line naming the input


@pytest.fixture
def bad_meshes(tmp_path):
    rng = np.random.default_rng(27)
    files = {
        "corrupt.stl": rng.integers(0, 256, 1000, dtype=np.uint8).tobytes(),
        "truncated.stl": b"\0" * 80 + np.uint32(100).tobytes() + b"\1" * 500,
        "cloud.xyz": b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n",
        "mesh.foo": b"v 0 0 0\n",
        "broken.obj": b"v a b c\nf 1 2 3\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize("name, words", [
    ("corrupt.stl", ("not a valid STL file", "1000 bytes")), ("truncated.stl", ("not a valid STL file",)),
    ("cloud.xyz", ("point cloud", "no triangles", ".obj")), ("mesh.foo", ("unknown mesh format '.foo'",)),
    ("broken.obj", ("could not be read as OBJ",)), ("missing.obj", ("no such file",)),
])
def test_mesh_check_names_a_bad_mesh_file(bad_meshes, capsys, name, words):
    path = str(bad_meshes / name)
    with pytest.raises(InputError) as err:
        Mesh.load(path)
    for w in words:
        assert w in str(err.value), str(err.value)
    assert "charset_normalizer" not in str(err.value) and "could not convert string" not in str(err.value)
    assert main(["mesh", "check", path]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and words[0] in lines[0], lines


def test_mesh_repair_refuses_an_unknown_output_format_before_the_repair(capsys, tmp_path):
    mesh = os.path.join(ROOT, "tests", "data", "meshes", "bread.obj")
    assert main(["mesh", "repair", mesh, "-o", str(tmp_path / "x.foo")]) == 2
    err = capsys.readouterr()
    assert "unknown file type '.foo'" in err.err and ".obj" in err.err
    assert err.out == ""  # no repair report: nothing was done
    assert os.listdir(tmp_path) == []


def test_a_nan_gravity_is_a_finding_and_refused(tmp_path):
    pytest.importorskip("pxr")
    from hydro.scene.usd_io import read_gravity, validate_usd

    path = write(tmp_path, box_on_ground().replace("physics:gravityDirection = (0, 0, -1)",
                                                   "physics:gravityDirection = (nan, 0, -1)"))
    (f,) = [f for f in validate_usd(path) if f.code == "HYDRO.GRV.001"]
    assert f.severity == "ERROR" and "physics:gravityDirection" in f.message and f.prim_path == "/World/PhysicsScene"
    with pytest.raises(InputError, match="gravityDirection"):
        read_gravity(path)
    proc = hydro("run", path, "--steps", "1", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "HYDRO.GRV.001" in proc.stderr and "got None" not in proc.stderr


def test_hydro_run_shows_progress_on_time_when_steps_are_slow(scene, tmp_path, monkeypatch):
    # without a terminal the bar is written about every 10 % of the steps, and at least every
    # PROGRESS_SECONDS (0 here: every step) so slow steps (many envs) still show progress
    import io

    import hydro.tools.run as run

    monkeypatch.setattr(run, "PROGRESS_SECONDS", 0.0)
    stream = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.run_scene(scene, steps=20, out_dir=str(tmp_path / "o"), stream=stream, log=lambda *a: None)
    shown = {int(n) for n in __import__("re").findall(r"(\d+)/20 \[", stream.getvalue())}
    assert shown >= set(range(1, 21)), sorted(shown)
