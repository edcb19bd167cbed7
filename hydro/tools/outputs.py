"""Where hydro writes files: every output appears whole or not at all.

- :func:`atomic_file` (one file) and :func:`atomic_files` (files that belong together, such as
  ``hydro run``'s three) write to temporary files in the target folder, named
  ``.NAME.XXXX.tmp.EXT`` (same folder, so the final rename never crosses file systems; same
  extension, so writers that choose a format by it keep working), then rename them over the
  targets with ``os.replace``. On an error or Ctrl-C the temporary files are removed and the
  targets are untouched: a reader sees the old file or the new one, never a half-written one.
  :func:`atomic_files` renames all its files in one burst at the end, with Ctrl-C held back
  during the burst, so a set is not left half old and half new.
- :func:`interrupts_deferred`: the first Ctrl-C inside the block is held until the block ends
  (with a message saying so); a second one interrupts at once.
- :func:`output_file` / :func:`output_folder`: check an ``--out`` path before any work is done
  (``--out`` means exactly the path given: a file option refuses a folder, a folder option a
  file), and say which.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading

from ..errors import InputError

__all__ = ["atomic_file", "atomic_files", "interrupts_deferred", "output_file", "output_folder"]

_held: list = []  # the pending lists of the interrupts_deferred blocks now open (innermost last)


def _temporary(path: str) -> str:
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    ext = os.path.splitext(name)[1]
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=f".tmp{ext}", dir=folder)
    os.close(fd)
    return tmp


def _mode(path: str) -> int:
    """The permissions a new file gets (those of the file it replaces, else 0o666 less the umask;
    temporary files are made 0o600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


@contextlib.contextmanager
def atomic_file(path):
    """``with atomic_file("out/x.npz") as tmp: np.savez(tmp, ...)``: write ``tmp`` (a path in the
    same folder with the same extension); it becomes ``path`` when the block ends without error."""
    with atomic_files([path]) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_files(paths):
    """Temporary paths for ``paths`` (a list, yielded in the same order); when the block ends
    without error all of them are renamed over their targets in one burst; otherwise all are
    removed and no target changes."""
    targets = [os.fspath(p) for p in paths]
    temps = []
    try:
        for p in targets:
            temps.append(_temporary(p))
        yield list(temps)
        with interrupts_deferred(final=True):  # the renames take microseconds: never stop half way
            for tmp, p in zip(temps, targets):
                os.chmod(tmp, _mode(p))
                os.replace(tmp, p)
            temps = []
    finally:
        for tmp in temps:
            _remove(tmp)


@contextlib.contextmanager
def interrupts_deferred(message: str | None = None, *, final: bool = False, stream=None):
    """Hold back the first Ctrl-C (SIGINT) until the block ends, then raise ``KeyboardInterrupt``;
    a second Ctrl-C raises at once (``final=True``: every one is held, for short blocks that must
    not stop half way). ``message`` (printed to ``stream``, default stderr, at the first Ctrl-C)
    tells the user what is being finished. Yields a list that holds the signal numbers that
    arrived (the caller may raise its own error after the block instead: clear the list to stop
    the default). Inside another such block the outer one decides what happens at its end.
    Outside the main thread (where Python cannot handle signals) it changes nothing."""
    outer = _held[-1] if _held else None
    pending: list = outer if outer is not None else []
    if threading.current_thread() is not threading.main_thread() or (outer is not None and not final):
        yield pending
        return

    def handler(signum, frame):
        if pending and not final:
            raise KeyboardInterrupt
        if not pending and message:
            print(message, file=stream or sys.stderr, flush=True)
        pending.append(signum)

    previous = signal.signal(signal.SIGINT, handler)
    _held.append(pending)
    try:
        yield pending
    finally:
        _held.pop()
        signal.signal(signal.SIGINT, previous)
    if pending and outer is None:
        raise KeyboardInterrupt


def output_file(path, *, option: str = "--out") -> str:
    """Check that ``path`` can be written as a file: not a folder, in a folder that exists and can
    be written. Returns it unchanged (hydro writes exactly there, adding no extension)."""
    p = os.fspath(path)
    if not p:
        raise InputError(f"{option} must name a file, got an empty path")
    if os.path.isdir(p):
        raise InputError(f"{option} {p} is a folder: give the file to write, e.g. {os.path.join(p, 'contacts.npz')}")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise InputError(f"{option} {p}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{option} {p}: the folder {folder} cannot be written")
    return p


def output_folder(path, *, option: str = "--out") -> str:
    """Check that ``path`` can be used as an output folder (it may not exist yet; it is made when
    the outputs are written). Returns it unchanged."""
    p = os.fspath(path)
    if not p:
        raise InputError(f"{option} must name a folder, got an empty path")
    if os.path.exists(p) and not os.path.isdir(p):
        raise InputError(f"{option} {p} is a file, not a folder")
    parent = os.path.abspath(p)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise InputError(f"{option} {p}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{option} {p}: {parent} cannot be written")
    return p
