"""Running the ``hydro`` command as users run it: ``python -m hydro`` in a subprocess."""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run_python(args, *, env=None, cwd=ROOT, timeout=600):
    """``python ARGS`` with this checkout first on the path; the completed process (text output)."""
    e = dict(os.environ, PYTHONPATH=ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout)


def hydro(*args, env=None, cwd=ROOT, timeout=600):
    """``hydro ARGS`` (scene paths relative to the repository root unless ``cwd`` says otherwise)."""
    return run_python(["-m", "hydro", *args], env=env, cwd=cwd, timeout=timeout)


def assert_one_line_error(proc, message):
    """A failed command that said ``message`` in one line on stderr, with no traceback."""
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
