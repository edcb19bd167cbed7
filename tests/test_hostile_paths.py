"""Every path a command writes (issue 27): ``collide --out``, ``run --out``, ``mesh repair -o``,
``view --screenshot`` and ``save_usd`` refuse, before any work and without touching it, a path that
is missing its folder, a folder (or ends in '/'), a FIFO, a device, a symbolic link, the command's
own input, a read-only file or folder, or an extension the writer does not know; and Ctrl-C is
honoured from the first instant (exit 130, one line, nothing written) at several delays.

The refusal matrix runs ``hydro.cli.main`` in this process (the refusals come before any work, so
it takes milliseconds); a few cases and the signals run as users run them, in a subprocess."""

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from cli_util import ROOT, hydro
from hostile_util import assert_error
from hydro.cli import main

SCENE = os.path.join(ROOT, "scenes", "cube_on_box.usda")
MESH = os.path.join(ROOT, "tests", "data", "meshes", "bread.obj")

# command -> (arguments before the output path, its option, the input it reads, a good file name)
COMMANDS = {
    "collide": (["collide", SCENE, "--out"], "--out", SCENE, "contacts.npz"),
    "run": (["run", SCENE, "--steps", "1", "--out"], "--out", SCENE, None),  # a folder
    "mesh repair": (["mesh", "repair", MESH, "-o"], "-o", MESH, "repaired.obj"),
    "view": (["view", SCENE, "--screenshot"], "--screenshot", SCENE, "view.png"),
}


def _target(tmp_path, kind, command):
    """(path to give, what must stay as it was: (path, check) or None, words of the error)."""
    good = COMMANDS[command][3] or "out"
    if kind == "missing folder":
        if command == "run":
            return None, None, None  # run makes its folder
        return str(tmp_path / "no" / "such" / good), None, ["does not exist"]
    if kind == "folder":
        if command == "run":
            return None, None, None  # a folder is what run wants
        return str(tmp_path), None, ["is a folder"]
    if kind == "trailing slash":
        if command == "run":
            return None, None, None
        return str(tmp_path / "newdir") + "/", None, ["names a folder"]
    if kind == "fifo":
        p = tmp_path / ("fifo" if command != "run" else "sensors.npz")
        os.mkfifo(p)
        given = str(p) if command != "run" else str(tmp_path)
        return given, (p, lambda q: stat.S_ISFIFO(os.lstat(q).st_mode)), ["FIFO", "not a regular file"]
    if kind == "device":
        if command == "run":
            return None, None, None
        return "/dev/null", ("/dev/null", lambda q: stat.S_ISCHR(os.stat(q).st_mode)), ["character device"]
    if kind == "symlink":
        real = tmp_path / "real.txt"
        real.write_text("mine")
        link = tmp_path / ("link" + os.path.splitext(good)[1] if command != "run" else "trajectories.npz")
        os.symlink(real, link)
        given = str(link) if command != "run" else str(tmp_path)
        return given, (link, lambda q: os.path.islink(q) and real.read_text() == "mine"), ["symbolic link"]
    if kind == "input":
        if command == "run":
            return COMMANDS[command][2], None, ["is a file, not a folder"]
        inp = COMMANDS[command][2]
        size = os.path.getsize(inp)
        return inp, (inp, lambda q: os.path.getsize(q) == size), ["is the input"]
    if kind == "bad suffix":
        if command in ("collide", "run"):
            return None, None, None  # collide writes exactly the name given (no extension rule)
        return str(tmp_path / "x.foo"), None, ["unknown file type", "'.foo'"]
    raise AssertionError(kind)


KINDS = ["missing folder", "folder", "trailing slash", "fifo", "device", "symlink", "input", "bad suffix"]
#: What does not apply: run takes a folder (made when missing), collide writes exactly the name given.
NOT_APPLICABLE = {("run", "missing folder"), ("run", "folder"), ("run", "trailing slash"), ("run", "device"),
                  ("run", "bad suffix"), ("collide", "bad suffix")}


@pytest.mark.parametrize("command, kind", [(c, k) for c in sorted(COMMANDS) for k in KINDS
                                           if (c, k) not in NOT_APPLICABLE])
def test_every_output_path_kind_is_refused_before_the_work(tmp_path, capsys, command, kind):
    if command == "view":
        pytest.importorskip("polyscope")
    given, keep, words = _target(tmp_path, kind, command)
    before = sorted(os.listdir(tmp_path))
    t0 = time.perf_counter()
    status = main([*COMMANDS[command][0], given])
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err.strip().splitlines()
    err = [ln for ln in err if not ln.startswith("hydro:")]  # compile notes of a cold cache
    assert status == 2, err
    assert len(err) == 1 and "error:" in err[0] and COMMANDS[command][1] in err[0], err
    for w in words or []:
        assert w in err[0], (w, err)
    assert sorted(os.listdir(tmp_path)) == before  # nothing written, nothing replaced
    if keep is not None:
        assert keep[1](keep[0]), f"{keep[0]} changed"
    assert elapsed < 20.0  # before the work (a load, a compile)


def test_a_read_only_file_or_folder_is_refused(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root may write anything")
    ro = tmp_path / "ro.npz"
    ro.write_text("mine")
    ro.chmod(0o444)
    assert main(["collide", SCENE, "--out", str(ro)]) == 2
    assert "read-only" in capsys.readouterr().err
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    assert main(["collide", SCENE, "--out", str(folder / "x.npz")]) == 2
    assert "cannot be written" in capsys.readouterr().err


def test_save_usd_refuses_what_load_usd_cannot_read(tmp_path):
    pytest.importorskip("pxr")
    from hydro import ModelBuilder, Sphere, load_usd, save_usd
    from hydro.errors import InputError

    b = ModelBuilder()
    body = b.add_body("/World/Ball", (0, 0, 1, 0, 0, 0, 1))
    b.add_shape("/World/Ball/C", Sphere(0.1), body=body)
    m = b.finalize(build_sdfs=False)
    for bad in ("x.txt", "x", "x.usdz"):
        with pytest.raises(InputError, match="unknown file type"):
            save_usd(m, tmp_path / bad)
    assert os.listdir(tmp_path) == []
    for good in ("x.usd", "x.usda", "x.usdc"):
        save_usd(m, tmp_path / good)
        back = load_usd(tmp_path / good, build_sdfs=False)
        assert back.shape_path == ["/World/Ball/C"]
    assert sorted(os.listdir(tmp_path)) == ["x.usd", "x.usda", "x.usdc"]  # no temporary file left


def test_the_input_scene_survives_collide_out_in_a_subprocess(tmp_path):
    scene = tmp_path / "scene.usda"
    scene.write_text(open(SCENE).read())
    text = scene.read_text()
    proc = hydro("collide", str(scene), "--out", str(scene))
    assert_error(proc, "--out", "is the input")
    assert scene.read_text() == text
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_error(hydro("collide", str(scene), "--out", str(fifo)), "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---------------------------------------------------------------------------------------------
# Ctrl-C from the first instant: exit 130, one line, nothing written


def _interrupt(args, delay, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "hydro", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    notes = ("hydro: compiling", "hydro:   compiled")  # a cold cache's compile notes
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(notes)]
    return proc.returncode, out, lines


@pytest.mark.parametrize("delay", [0.4, 1.2, 2.5])
def test_sigint_at_any_moment_of_collide_exits_130_with_one_line_and_no_output(tmp_path, delay):
    out = tmp_path / "contacts.npz"
    rc, stdout, lines = _interrupt(["collide", SCENE, "--out", str(out)], delay, tmp_path)
    if rc == 0:  # the whole command finished before the signal (a fast machine, a warm cache)
        assert out.exists()
        return
    assert rc == 130, lines
    assert len(lines) == 1 and lines[0].endswith("interrupted"), lines
    assert stdout == "" and os.listdir(tmp_path) == []


def test_sigint_before_hydro_run_steps_writes_nothing(tmp_path):
    out = tmp_path / "out"
    rc, _, lines = _interrupt(["run", SCENE, "--steps", "400", "--out", str(out)], 0.8, tmp_path)
    assert rc == 130 and len(lines) == 1 and "interrupted" in lines[0], lines
    assert not out.exists()
    np.testing.assert_equal(os.listdir(tmp_path), [])


# ---------------------------------------------------------------------------------------------
# fuzz: random things at random output paths; hydro writes a regular file or refuses, and never
# replaces what is not a regular file it may overwrite

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hydro.errors import InputError  # noqa: E402
from hydro.tools.outputs import atomic_file, output_file  # noqa: E402

THINGS = ["nothing", "file", "folder", "fifo", "link to file", "link to nothing", "link to folder", "input"]


def _make(tmp, thing, name):
    p = tmp / name
    if thing == "file":
        p.write_text("old")
    elif thing == "folder":
        p.mkdir()
    elif thing == "fifo":
        os.mkfifo(p)
    elif thing.startswith("link"):
        target = {"link to file": tmp / "target.txt", "link to nothing": tmp / "gone.txt",
                  "link to folder": tmp / "target_dir"}[thing]
        if thing == "link to file":
            target.write_text("old")
        elif thing == "link to folder":
            target.mkdir(exist_ok=True)
        os.symlink(target, p)
    elif thing == "input":
        p.write_text("the scene")
    return p


@settings(max_examples=40, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(thing=st.sampled_from(THINGS), name=st.sampled_from(["out.npz", "out", "x.png", "x.obj", ".hidden"]),
       slash=st.booleans(), suffixes=st.sampled_from([None, (".png",), (".obj", ".stl")]))
def test_random_output_paths_are_written_whole_or_refused_untouched(tmp_path_factory, thing, name, slash,
                                                                     suffixes):
    tmp = tmp_path_factory.mktemp("fuzz")
    p = _make(tmp, thing, name)
    given_path = str(p) + ("/" if slash else "")
    snapshot = {q: (os.lstat(tmp / q).st_mode, os.path.islink(tmp / q)) for q in os.listdir(tmp)}
    inputs = [str(p)] if thing == "input" else []
    try:
        output_file(given_path, inputs=inputs, suffixes=suffixes)
    except InputError as exc:
        assert "\n" not in str(exc) and given_path in str(exc)
        assert {q: (os.lstat(tmp / q).st_mode, os.path.islink(tmp / q)) for q in os.listdir(tmp)} == snapshot
        if thing in ("file", "link to file", "input"):
            assert (tmp / name).read_text() in ("old", "the scene")
        return
    # accepted: only nothing or a regular file hydro may replace, with a known suffix, not the input
    assert thing in ("nothing", "file") and not slash
    assert suffixes is None or os.path.splitext(name)[1] in suffixes
    with atomic_file(given_path) as tmpfile, open(tmpfile, "w") as fh:
        fh.write("new")
    assert stat.S_ISREG(os.lstat(given_path).st_mode) and open(given_path).read() == "new"
    assert sorted(os.listdir(tmp)) == sorted(set(snapshot) | {name})  # no temporary file left


def test_library_use_installs_no_signal_handler():
    proc = subprocess.run([sys.executable, "-c", "import signal, hydro, hydro.cli; "
                           "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT, timeout=120)
    assert proc.stdout.strip() == "True", proc.stderr


def test_a_swallowed_interrupt_still_stops_the_output(tmp_path):
    # a Ctrl-C that a library swallowed (counted by the command's handler, never raised): no file
    # is renamed into place, and the temporary one is removed
    from hydro import _signals

    target = tmp_path / "x.npz"
    _signals._state["count"] = 1
    try:
        with pytest.raises(KeyboardInterrupt):
            with atomic_file(target) as tmpfile, open(tmpfile, "w") as fh:
                fh.write("half")
        assert os.listdir(tmp_path) == []
    finally:
        _signals.clear()
    with atomic_file(target) as tmpfile, open(tmpfile, "w") as fh:  # handled: writes again
        fh.write("whole")
    assert target.read_text() == "whole"


@pytest.mark.parametrize("command", [True, False])
def test_a_ctrl_c_once_the_output_is_in_place_comes_too_late_for_the_command(tmp_path, monkeypatch, command):
    # CI caught `hydro collide --out` exiting 130 with its file written: the Ctrl-C came while the
    # file was renamed into place (held until the renames ended, then raised) or while the summary
    # was printed. For the command the output being whole ends the interrupt (status 0 and the file;
    # a later Ctrl-C is ignored); in library use nothing changes (the held Ctrl-C raises after the
    # renames, the file whole)
    from hydro import _signals

    target = tmp_path / "x.npz"
    replace = os.replace

    def replace_then_interrupt(src, dst):
        replace(src, dst)
        os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C in the middle of the burst of renames

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    monkeypatch.setitem(_signals._state, "active", command)
    before = signal.getsignal(signal.SIGINT)
    try:
        if command:
            with atomic_file(target) as tmpfile, open(tmpfile, "w") as fh:
                fh.write("whole")
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # from now on Ctrl-C changes nothing
            os.kill(os.getpid(), signal.SIGINT)
        else:
            with pytest.raises(KeyboardInterrupt):
                with atomic_file(target) as tmpfile, open(tmpfile, "w") as fh:
                    fh.write("whole")
            assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, before)
    assert os.listdir(tmp_path) == ["x.npz"] and target.read_text() == "whole"
