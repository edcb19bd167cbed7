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
  file), and say which. Neither they nor :func:`atomic_files` replace what is not a regular file
  (:func:`check_target`): a symbolic link, a FIFO, a device or a socket is refused, as is a file
  the command reads (``--out`` naming the input scene) and a read-only file; an unknown
  extension is refused before the work where the writer chooses the format by it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading

from .. import _signals
from ..errors import InputError

__all__ = ["atomic_file", "atomic_files", "check_target", "interrupts_deferred", "output_file", "output_folder"]

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
    for p in targets:  # never replace a link, a FIFO or a device, whoever calls
        check_target(p, option="output")
    temps = []
    try:
        for p in targets:
            temps.append(_temporary(p))
        yield list(temps)
        _signals.check()  # a Ctrl-C that a library swallowed while the files were made: none is kept
        outermost = not _held
        with interrupts_deferred(final=True) as held:  # the renames take microseconds: never stop half way
            for tmp, p in zip(temps, targets):
                os.chmod(tmp, _mode(p))
                os.replace(tmp, p)
            temps = []
            # the hydro command's output is whole now: a Ctrl-C from here on comes too late to stop it,
            # so the command exits with its own status, never 130 after its output (inside another
            # deferring block, as hydro run's, that block decides)
            if outermost and _signals.finished():
                held.clear()
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
        if signal.getsignal(signal.SIGINT) is handler:  # not if the block itself set another (finished())
            signal.signal(signal.SIGINT, previous)
    if pending and outer is None:
        raise KeyboardInterrupt


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _same_file(a: str, b) -> bool:
    try:
        return os.path.samefile(a, os.fspath(b))
    except (OSError, TypeError, ValueError):
        return os.path.abspath(a) == os.path.abspath(os.fspath(b)) if b is not None else False


def check_target(path, *, option: str = "--out", inputs=()) -> None:
    """Refuse (:class:`~hydro.errors.InputError`) to replace what is at ``path`` unless it is
    nothing or a regular file hydro may overwrite: not a symbolic link (replacing it would cut the
    link), not a FIFO, device or socket (replacing it would destroy it; writing to it is not a
    file), not one of ``inputs`` (the files the command reads), not read-only."""
    p = os.fspath(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"{option} {p}: cannot be inspected ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{option} {p} is a symbolic link (to {os.readlink(p)}): hydro replaces files whole and would "
                         f"replace the link; give the file it points to, or another path")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{option} {p} is {_kind(st.st_mode)}, not a regular file: hydro writes only regular files "
                         f"(it would replace it); give another path")
    for inp in inputs:
        if inp is not None and _same_file(p, inp):
            raise InputError(f"{option} {p} is the input {os.fspath(inp)}: writing there would destroy it; give "
                             f"another path")
    if not os.access(p, os.W_OK):
        raise InputError(f"{option} {p}: the file exists and is read-only; give another path or make it writable")


def output_file(path, *, option: str = "--out", inputs=(), suffixes=None, example: str = "contacts.npz") -> str:
    """Check that ``path`` can be written as a file: not a folder (nor a path ending in a
    separator), in a folder that exists and can be written, and nothing there that hydro must not
    replace (:func:`check_target`: a link, a FIFO or device, an input, a read-only file).
    ``suffixes``: the extensions the writer knows (lower case, with the dot; None: any). Returns it
    unchanged (hydro writes exactly there, adding no extension)."""
    p = os.fspath(path)
    if not p:
        raise InputError(f"{option} must name a file, got an empty path")
    if p.endswith(("/", os.sep)) or os.path.isdir(p):
        base = p.rstrip("/" + os.sep) or p
        raise InputError(f"{option} {p} {'is' if os.path.isdir(p) else 'names'} a folder: give the file to write, "
                         f"e.g. {os.path.join(base, example)}")
    check_target(p, option=option, inputs=inputs)
    if suffixes is not None:
        ext = os.path.splitext(p)[1].lower()
        if ext not in suffixes:
            raise InputError(f"{option} {p}: unknown file type {ext or '(no extension)'!r}; use one of "
                             f"{', '.join(sorted(suffixes))}")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise InputError(f"{option} {p}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{option} {p}: the folder {folder} cannot be written")
    return p


def output_folder(path, *, option: str = "--out", inputs=(), files=()) -> str:
    """Check that ``path`` can be used as an output folder (it may not exist yet; it is made when
    the outputs are written), and that none of ``files`` (names inside it) is something hydro must
    not replace (:func:`check_target`). Returns it unchanged."""
    p = os.fspath(path)
    if not p:
        raise InputError(f"{option} must name a folder, got an empty path")
    if os.path.exists(p) and not os.path.isdir(p):
        kind = "a file" if os.path.isfile(p) else _kind(os.stat(p).st_mode)
        raise InputError(f"{option} {p} is {kind}, not a folder")
    parent = os.path.abspath(p)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise InputError(f"{option} {p}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{option} {p}: {parent} cannot be written")
    for name in files:
        check_target(os.path.join(p, name), option=option, inputs=inputs)
    return p
