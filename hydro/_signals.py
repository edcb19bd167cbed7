"""Ctrl-C (SIGINT) for the ``hydro`` command, honoured from the first instant (issue 27).

Python turns SIGINT into ``KeyboardInterrupt`` wherever the main thread happens to be; raised inside
an import of a C extension (usd-core's post-processing of ``pxr`` modules), a ``__del__`` or a
callback it is swallowed ("Exception ignored … KeyboardInterrupt") and the command went on to exit 0
with its output. So the command installs its own handler:

- :func:`install_for_command` (from ``hydro/__init__.py``, only when the process *is* the
  ``hydro`` command: ``python -m hydro`` or the ``hydro`` script): until the command starts its
  work, Ctrl-C prints one line and exits 130 at once (nothing has been written yet).
- :func:`working` (from :func:`hydro.cli.main` around the command): Ctrl-C raises
  ``KeyboardInterrupt`` *and* is remembered, so one that some library swallows is still honoured
  at the next :func:`check` (before any output is written or printed, at each step of
  ``hydro run``, and when the command returns), and the "Exception ignored" report of a swallowed
  one is not printed. Inside an import (where usd-core swallows it and prints a warning) the raise
  is retried 20 ms later instead.
- :func:`finished` (when the command returns, its output written): Ctrl-C is ignored from then on,
  so the exit status is the command's (0 with its output, or 130 with none, never 130 after it).
- :func:`clear`: a caller that handled the interrupt on purpose (``hydro run`` writing the steps
  simulated so far) says so, so the checks let its documented output through.

Library use (``import hydro`` in a script or notebook) changes nothing: no handler is installed.
It imports only modules the interpreter has already loaded (``atexit``, ``os``, ``signal``, ``sys``),
so the handler is in place within microseconds of hydro's first line. What comes before that line — the
interpreter's start-up, site-packages ``.pth`` files such as an editable install's finder — is
Python's own (a Ctrl-C there is Python's traceback).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

__all__ = ["install_for_command", "working", "pending", "check", "clear"]

_state = {"count": 0, "active": False, "command": "hydro"}


def _is_command() -> bool:
    """Whether this process is the ``hydro`` command (``python -m hydro ...`` or the script)."""
    argv = list(getattr(sys, "orig_argv", []) or [])
    if "-m" in argv:
        i = argv.index("-m")
        if i + 1 < len(argv) and argv[i + 1] == "hydro":
            return True
    return bool(sys.argv) and os.path.basename(sys.argv[0]) in ("hydro", "hydro.exe")


def _exit_now(signum, frame):  # pragma: no cover - exercised through subprocesses
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    try:
        os.write(2, f"{_state['command']}: interrupted\n".encode())
    finally:
        os._exit(130)


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an import (where C extensions swallow a raise)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _raise(signum, frame):
    _state["count"] += 1
    if _importing(frame):  # raising here may be swallowed (and printed): ask again in 20 ms
        import threading

        timer = threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


def _unraisable(hook):
    """``sys.unraisablehook`` that drops the KeyboardInterrupts a library swallowed (they were
    counted by the handler and are honoured at the next :func:`check`)."""
    def quiet(info):
        if isinstance(info.exc_value, KeyboardInterrupt):
            return
        hook(info)

    return quiet


def install_for_command() -> None:
    """In the ``hydro`` command's main thread: Ctrl-C exits 130 at once until :func:`working`."""
    if _state["active"] or not _is_command():
        return
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # a background job: keep ignoring it
        return
    try:
        signal.signal(signal.SIGINT, _exit_now)
    except ValueError:  # not the main thread: Python cannot handle signals there
        return
    _state["active"] = True
    # Python's finalisation puts SIGINT back to the system default (the process would die of it,
    # status -2, with no line) after the command has said everything: from the exit handlers on,
    # a Ctrl-C is ignored, so the status is the one the command returned
    atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)


def working(command: str) -> None:
    """The command's work starts: Ctrl-C raises ``KeyboardInterrupt`` and is remembered."""
    _state["command"] = command
    if _state["active"]:
        sys.unraisablehook = _unraisable(sys.unraisablehook)
        signal.signal(signal.SIGINT, _raise)


def finished() -> bool:
    """The command's work is over and its output written: a Ctrl-C now is ignored, so the exit
    status is the one the command returned (exiting 130 here would report as interrupted a command
    whose output is complete). Called when the command returns, and by
    :func:`hydro.tools.outputs.atomic_files` the moment a command's output file is in place.
    Returns whether this process is the ``hydro`` command (in library use it changes nothing)."""
    if _state["active"]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return True
    return False


def pending() -> bool:
    """Whether a Ctrl-C arrived that nobody has handled (:func:`clear`)."""
    return _state["count"] > 0


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a Ctrl-C arrived and was not handled (e.g. swallowed by a
    library); call before writing or printing output."""
    if _state["count"]:
        raise KeyboardInterrupt


def clear() -> None:
    """The interrupt was handled on purpose (its documented output may be written)."""
    _state["count"] = 0
