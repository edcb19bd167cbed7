"""Hostile input on the command line (issue 16): each case as a user met it, and what hydro does now.

Every command runs as users run it (``python -m hydro`` in a subprocess).
"""

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import numpy as np
import pytest

from cli_util import ROOT, hydro
from hostile_util import assert_error, bad_spheres, box_on_ground, stderr_lines, write


def _files(folder):
    return sorted(os.listdir(folder))


# ---------------------------------------------------------------------------------------------
# --out means exactly the path given; outputs are whole or absent


def test_collide_out_refuses_a_folder_before_any_work(tmp_path):
    proc = hydro("collide", "scenes/sphere_on_box.usda", "--out", str(tmp_path))
    assert_error(proc, "--out", "is a folder", "contacts.npz")
    assert _files(tmp_path) == []  # and no "DIR.npz" beside it either
    assert not os.path.exists(str(tmp_path) + ".npz")
    assert_error(hydro("collide", "scenes/sphere_on_box.usda", "--out", str(tmp_path / "no" / "x.npz")),
                 "does not exist")


def test_collide_out_writes_exactly_the_path_given(tmp_path):
    proc = hydro("collide", os.path.join(ROOT, "scenes", "sphere_on_box.usda"), "--out", "table", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "wrote        table" in proc.stdout
    assert _files(tmp_path) == ["table"]  # not table.npz, and no temporary file left
    table = np.load(tmp_path / "table")
    assert len(table["force"]) > 0 and np.all(np.isfinite(table["force"]))
    assert oct(os.stat(tmp_path / "table").st_mode & 0o777) != oct(0o600)  # not the temporary file's mode


# ---------------------------------------------------------------------------------------------
# arguments: clear one-line errors, never a default in disguise


@pytest.mark.parametrize("args, words", [
    (("sdf", "sphere:1e308"), ("sphere:1e308", "outside the", "metres")),
    (("sdf", "sphere:1e-30"), ("outside the",)),
    (("sdf", "sphere:0.1", "--points", "-5"), ("argument --points", "integer >= 1", "-5")),
    (("sdf", "sphere:0.1", "--points", "0"), ("argument --points",)),
    (("sdf", "sphere:0.1", "--seed", "-1"), ("argument --seed",)),
    (("sdf", "sphere:0.1", "--voxel-size", "nan"), ("argument --voxel-size", "finite number > 0")),
    (("sdf", "sphere:0.1", "--resolution", "100000"), ("100000 x 100000 x 100000", "TiB", "lower --resolution")),
    (("sdf", "sphere:0.1", "--voxel-size", "1e-5"), ("TiB", "raise --voxel-size")),
    (("example", "contact-sensor", "--steps", "-3"), ("argument --steps", "integer >= 1", "-3")),
    (("example", "contact-sensor", "--steps", "0"), ("argument --steps", "'0'")),
    (("run", "scenes/cube_on_box.usda", "--steps", "2", "--dt", "-1"), ("argument --dt",)),
    (("run", "scenes/cube_on_box.usda", "--steps", "2", "--num-envs", "0"), ("argument --num-envs",)),
    (("run", "scenes/cube_on_box.usda", "--steps", "x"), ("argument --steps",)),
])
def test_bad_arguments_are_one_named_line(args, words):
    assert_error(hydro(*args), *words)


def test_a_huge_dt_is_refused_with_the_sub_step_bound(tmp_path):
    # (the explicit solver's sub-steps; the default implicit one needs none at any dt)
    proc = hydro("run", "scenes/cube_on_box.usda", "--steps", "2", "--dt", "1e6", "--out", str(tmp_path / "o"),
                 "--solver", "explicit", timeout=300)
    assert_error(proc, "sub-steps", "10000", "use dt <=")
    assert not (tmp_path / "o").exists()  # nothing written on failure


def test_run_out_refuses_a_file(tmp_path):
    f = tmp_path / "taken"
    f.write_text("mine")
    assert_error(hydro("run", "scenes/cube_on_box.usda", "--steps", "1", "--out", str(f)), "is a file")
    assert f.read_text() == "mine"


# ---------------------------------------------------------------------------------------------
# an invalid scene shows its findings


@pytest.mark.parametrize("command", [("collide",), ("run", "--steps", "1"), ("view", "--screenshot", "x.png")])
def test_an_invalid_scene_prints_its_first_findings(tmp_path, command):
    scene = write(tmp_path, bad_spheres(7))
    proc = hydro(command[0], scene, *command[1:], cwd=str(tmp_path))
    lines = assert_error(proc, "7 error(s) in the scene", lines=7)
    for i, line in enumerate(lines[1:6]):
        assert re.fullmatch(rf"HYDRO\.GEO\.\d+ ERROR /World/S{i}: .*radius.*", line), line
    assert lines[6] == f"... and 2 more (hydro validate {scene} lists every finding)"
    assert _files(tmp_path) == ["scene.usda"]


# ---------------------------------------------------------------------------------------------
# hydro run on a scene whose ground is smaller than the env grid


def test_run_says_which_envs_it_summarises_and_warns_when_bodies_fall_off(tmp_path):
    scene = write(tmp_path, box_on_ground(ground=(1.5, 1.5, 0.2), envs=True))
    proc = hydro("run", scene, "--num-envs", "9", "--steps", "50", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    warn = [ln for ln in stderr_lines(proc) if ln.startswith("hydro run: warning:")]
    # before: 8 of the 9 envs (all but the centre one) have no ground beneath their box
    assert any("/Box has nothing beneath it in 8 of 9 envs (env 0, 1, 2, 3, 5, …" in w for w in warn), proc.stderr
    # after: they fell out of the scene's bounds
    assert any(re.search(r"8 bodies in 8 env\(s\) left the scene's bounds", w) for w in warn), proc.stderr
    out = proc.stdout
    assert "sensor       Box (env 0): net force" in out
    assert re.search(r"sensor       Box \(all 9 envs\): peak min 0 / median 0 / max [\d.]+ N \(env 4\); "
                     r"in contact in 1 of 9 envs", out), out


# ---------------------------------------------------------------------------------------------
# Ctrl-C while stepping: the steps done are written, and the command says so


def test_sigint_while_stepping_writes_the_steps_done_and_exits_130(tmp_path):
    out = tmp_path / "out"
    steps = 1_000_000
    master, slave = os.openpty()  # stderr on a terminal: the bar is redrawn at every step
    # a terminal 120 columns wide (a new pty has 0 columns, where tqdm draws nothing)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "hydro", "run", "scenes/cube_on_box.usda", "--steps", str(steps),
                             "--dt", "0.001", "--out", str(out)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=slave, text=True,
                            # a shell's background job ignores SIGINT; the test needs the default
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    seen = bytearray()
    started = threading.Event()

    def drain():  # keep reading the terminal so the child never blocks on it
        while True:
            try:
                ready, _, _ = select.select([master], [], [], 0.5)
                if ready:
                    chunk = os.read(master, 65536)
                    if not chunk:
                        return
                    seen.extend(chunk)
                    if re.search(rb"\| *[1-9]\d*/1000000", bytes(seen[-4096:])):
                        started.set()
                elif proc.poll() is not None:
                    return
            except OSError:
                return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert started.wait(600), bytes(seen[-2000:]).decode(errors="replace")
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(5)
        os.close(master)
    text = bytes(seen).decode(errors="replace")
    assert proc.returncode == 130, text
    m = re.search(r"hydro run: interrupted after (\d+) of 1000000 steps \(t = [\d.]+ s\): wrote the \d+ simulated "
                  r"steps to " + re.escape(str(out)), text)
    assert m, text
    done = int(m.group(1))
    assert 1 <= done < steps
    assert f"interrupted after {done} of {steps} steps" in stdout
    assert _files(out) == ["forces.png", "sensors.npz", "trajectories.npz"]
    traj = np.load(out / "trajectories.npz")
    assert traj["body_q"].shape == (done, 1, 7) and np.all(np.isfinite(traj["body_q"]))
    np.testing.assert_allclose(traj["time"], 0.001 * np.arange(1, done + 1), rtol=1e-9)
    assert np.load(out / "sensors.npz")["net_forces_w"].shape == (done, 1, 1, 3)
