"""How hydro compiles: device helpers, kernels generated from item functions, and the disk cache.

Every kernel in hydro is written once as an *item function*: a ``@device_fn`` that does the
work for one index ``i``, ``item(i, *args)``. :func:`kernel` builds from it, by generating the
three-line launchers, the three builds a :class:`~hydro.backend.Device` runs:

- ``loop``: ``for i in range(lo, hi): item(i, *args)``, the serial build (small launches run
  ``loop(0, n, …)``: no thread start-up cost);
- ``parallel``: ``loop`` over contiguous runs of items, the runs shared out to threads by a
  ``prange`` (large launches);
- ``cuda``: ``i = cuda.grid(1); if i < n: item(i, *args)``.

All three call the very same ``@device_fn`` helpers, so no formula exists twice. The parallel
launcher's own body is a single call, which Numba's parallel transforms compile in moments (a large
item inlined into a ``prange`` took three times as long as in a serial loop, and then once more
for it). CPU-only compiled code (SDF building, mesh distances) uses :func:`cpu_jit`.

What a first run compiles is kept small (the command line's first contact took minutes):

- Helpers are typed and lowered once per argument type (a literal argument or a narrower integer
  compiles no build of its own: :func:`_widened`) and *linked* into the functions that call them:
  kept (and cached) as LLVM IR with function-level optimisation only, never turned into machine
  code on their own (:class:`_LinkOnlyDispatcher`). The kernels' loops are linked into the one-call
  CPU pipeline the same way (``Kernel.linked``). Numba's own way compiles every function to machine
  code and optimises it again inside every caller that links it.
- Inlining is LLVM's (``forceinline``), after typing: Numba's own inlining re-typed a helper at
  every call site.
- hydro's functions run LLVM's O3 module pipeline once (:class:`_HydroLibrary`), not twice.
- CPU functions with ``prange`` loops have a serial build for small inputs (:class:`SerialOrThreaded`).

These use Numba's compiler classes (``_FunctionCompiler``, ``JITCodeLibrary``), which is why
hydro pins Numba's minor version.

Importing this module changes nothing outside hydro. :func:`configure_runtime` (called by the
``hydro`` command, and otherwise before hydro first compiles anything) gives hydro's own
compiled functions an on-disk cache and sets the threading default; see its docstring.

Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` set before Numba is imported) device
helpers receive simulator arrays, which compiled Numba code cannot unbox; ``device_fn`` then
returns a dispatcher that runs the helper's Python source for such calls, and compiled code
otherwise, so the CPU kernels keep working in the same process.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import linecache
import os
import re
import sys
import tempfile
import threading
import time
import types as types_module
import warnings

import numba
from llvmlite import binding as llvm_binding
from numba import prange

try:  # the CUDA target: numba-cuda (the ``cuda`` extra), or the one built into this Numba
    from numba import cuda
except ImportError:  # a CPU-only install: kernels still define their CUDA builds, which say what to install
    from ._nocuda import cuda
from numba.core import caching
from numba.core import compiler as numba_compiler
from numba.core import event as numba_event
from numba.core import serialize as numba_serialize
from numba.core import types
from numba.core.codegen import JITCodeLibrary
from numba.core.dispatcher import _FunctionCompiler
from numba.core.registry import CPUDispatcher

from .errors import HydroWarning

__all__ = [
    "CUDASIM",
    "COMPILING_MESSAGE",
    "announce",
    "KERNELS",
    "Kernel",
    "SERIAL_BELOW",
    "configure_runtime",
    "cpu_jit",
    "default_cache_folder",
    "device_fn",
    "kernel",
    "record_signatures",
]

CUDASIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"

#: Launches below this many items run the serial CPU build (no thread start-up cost), unless
#: the kernel says otherwise (``kernel(..., serial_below=...)`` for heavy items).
SERIAL_BELOW = 2048

COMPILING_MESSAGE = "hydro: compiling kernels (first run, cached afterwards)…"

_PACKAGE = __name__.rsplit(".", 1)[0]  # "hydro"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# ============================================================================================
# The runtime: an on-disk cache for hydro's compiled functions, and threads


class _Runtime:
    """What :func:`configure_runtime` decided (one per process)."""

    def __init__(self, cache_folder, announce_compiles):
        self.cache_folder = cache_folder
        self.announce_compiles = announce_compiles
        self.announced = False
        self._writable = None

    def cache_writable(self) -> bool:
        """Whether the cache folder exists or can be made, and takes files (checked once; when it
        does not, one warning names the folder and the variable that sets it)."""
        if self._writable is None:
            try:
                os.makedirs(self.cache_folder, exist_ok=True)
                tempfile.TemporaryFile(dir=self.cache_folder).close()
                self._writable = True
            except OSError as exc:
                self._writable = False
                source = (f"NUMBA_CACHE_DIR={os.environ['NUMBA_CACHE_DIR']}" if os.environ.get("NUMBA_CACHE_DIR")
                          else "the default (set NUMBA_CACHE_DIR to choose another)")
                warnings.warn(f"cannot cache compiled kernels in {self.cache_folder} ({exc.strerror or exc}; from "
                              f"{source}): every run compiles them again, which takes minutes; point "
                              "NUMBA_CACHE_DIR at a writable folder", HydroWarning, stacklevel=2)
        return self._writable


_runtime: _Runtime | None = None


def default_cache_folder() -> str:
    """Where hydro caches compiled code: ``$NUMBA_CACHE_DIR/hydro-numba`` when NUMBA_CACHE_DIR
    is set, else ``~/.cache/hydro-numba``; the simulator's process uses ``…-cudasim``."""
    root = os.environ.get("NUMBA_CACHE_DIR")
    if root:
        folder = os.path.join(root, "hydro-numba")
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(xdg, "hydro-numba")
    # the simulator's process compiles the same CPU kernels around Python-running helpers
    return folder + "-cudasim" if CUDASIM else folder


def configure_runtime(*, cache_folder: str | None = None, announce_compiles: bool = False):
    """Set up how hydro compiles and runs its kernels. Hydro's entry points call it; library
    use gets the defaults, applied before hydro compiles its first function.

    - Caching: hydro's compiled functions (and only those: Numba's global configuration is
      left alone) are cached on disk in ``cache_folder`` (default
      :func:`default_cache_folder`). Each function's cache is keyed on a digest of the hydro
      sources it can inline: its module and the hydro modules that module imports,
      transitively. Numba's own key sees only the function's file, so an edited helper in
      another file would otherwise load stale machine code; an edit elsewhere in hydro (the
      viewer, the USD reader) recompiles nothing.
    - Threads: Numba's OpenMP layer starts a parallel loop in ~2 µs on a quiet 2-core machine
      (the work-queue layer in 60–120 µs), but its spinning workers can stall for milliseconds
      when other processes compete for the cores. ``OMP_WAIT_POLICY=PASSIVE`` (set unless the
      user set it; it takes effect if Numba has not started its threads yet) keeps launches
      predictable (~45 µs); small launches run serially anyway (``SERIAL_BELOW``). A user's
      own ``NUMBA_THREADING_LAYER`` and ``OMP_WAIT_POLICY`` win.
    - ``announce_compiles``: print one line to stderr (:data:`COMPILING_MESSAGE`) when hydro
      first has to compile instead of loading from the cache, and a line before each long step
      of loading (:func:`announce`: an SDF build of a large mesh or a fine grid) — the command
      line does this.

    Calling it again changes the settings; already compiled functions stay in memory.
    """
    global _runtime
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _runtime = _Runtime(cache_folder or default_cache_folder(), bool(announce_compiles))


def _ensure_runtime() -> _Runtime:
    if _runtime is None:
        configure_runtime()
    return _runtime


class _CompileProgress(numba_event.Listener):
    """While the command line compiles: a line as each of hydro's kernels and top-level functions
    finishes compiling (its name and seconds), so a first run shows what it is doing. Helpers
    compiled inside them are not listed. A compile that runs on with no line for ``quiet_limit``
    seconds gets one (``still compiling NAME… N s``) every ``quiet_limit`` seconds, from a
    watcher thread (LLVM's passes release the GIL), so the terminal never goes quiet for longer."""

    #: seconds without a line before the watcher says which compile is still running
    QUIET_LIMIT = 5.0

    def __init__(self, *, quiet_limit: float | None = None, stream=None, enabled=None):
        self.enabled = enabled or (lambda: True)  # print only while this says so
        self.depth = 0
        self.started = []
        self.quiet_limit = self.QUIET_LIMIT if quiet_limit is None else float(quiet_limit)
        self._stream = stream
        self._last_line = time.perf_counter()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._watcher = None

    @staticmethod
    def _name(event):
        dispatcher = event.data.get("dispatcher") if isinstance(event.data, dict) else None
        func = getattr(dispatcher, "py_func", None)
        module = getattr(func, "__module__", "") or ""
        if func is None or not (module == _PACKAGE or module.startswith(_PACKAGE + ".")):
            return None
        name = getattr(func, "__qualname__", func.__name__).rsplit(".", 1)[-1]
        for variant, text in (("__loop", " (kernel, serial)"), ("__parallel", " (kernel, threaded)")):
            if name.endswith(variant):
                return name[: -len(variant)] + text
        return name

    def _print(self, text):
        if self.enabled():
            print(text, file=self._stream or sys.stderr, flush=True)
        self._last_line = time.perf_counter()

    def on_start(self, event):
        with self._lock:
            if self.depth == 0:
                self._last_line = time.perf_counter()
            self.depth += 1
            self.started.append((time.perf_counter(), self._name(event)))
            if self._watcher is None or not self._watcher.is_alive():
                self._watcher = threading.Thread(target=self._watch, name="hydro-compile-progress", daemon=True)
                self._watcher.start()
            self._wake.notify_all()

    def on_end(self, event):
        with self._lock:
            if not self.started:  # a compile that began before the listener was registered
                return
            self.depth -= 1
            t0, name = self.started.pop()
            # top level, and the kernels directly inside it (loop / parallel builds of an item)
            kernel_build = name is not None and name.endswith(")")
            if name is not None and (self.depth == 0 or kernel_build and self.depth <= 2):
                self._print(f"hydro:   compiled {name} ({time.perf_counter() - t0:.1f} s)")
            self._wake.notify_all()

    def _watch(self):
        """The watcher thread: while anything compiles, a line whenever ``quiet_limit`` s passed
        without one; it waits (no polling) while nothing compiles."""
        with self._lock:
            while True:
                if self.depth == 0:
                    self._wake.wait()
                    continue
                quiet = time.perf_counter() - self._last_line
                if quiet < self.quiet_limit:
                    self._wake.wait(self.quiet_limit - quiet)
                    continue
                # the innermost compile that gets a line of its own (a top-level function or a kernel
                # build in it: "marching_cubes (kernel, serial)", not one of its helpers)
                listed = [(t0, n) for i, (t0, n) in enumerate(self.started)
                          if n is not None and (i == 0 or n.endswith(")") and i <= 2)]
                t0, name = (listed or [(t0, n) for t0, n in self.started if n is not None] or self.started[:1])[-1]
                self._print(f"hydro:   still compiling {name or 'a kernel'}… "
                            f"({time.perf_counter() - t0:.0f} s so far)")


_progress = None  # the one compile listener of the process (registered on the first announced compile)


def _announcing() -> bool:
    rt = _runtime
    return rt is not None and rt.announce_compiles


def _announce_compile():
    global _progress
    rt = _runtime
    if rt is not None and rt.announce_compiles and not rt.announced:
        rt.announced = True
        print(COMPILING_MESSAGE, file=sys.stderr, flush=True)
        if _progress is None:  # once per process: a command run twice in one process prints each line once
            _progress = _CompileProgress(enabled=_announcing)
            numba_event.register("numba:compile", _progress)


def announce(message: str) -> None:
    """Print ``message`` (what hydro is about to spend a while on) to stderr when the runtime
    announces its work (``configure_runtime(announce_compiles=True)``: the command line)."""
    rt = _runtime
    if rt is not None and rt.announce_compiles:
        print(message, file=sys.stderr, flush=True)


# -- which hydro sources a module can inline ---------------------------------------------------


def _module_file(modname: str) -> str | None:
    """The source file of hydro module ``modname`` (a package's ``__init__.py``), or None."""
    if modname != _PACKAGE and not modname.startswith(_PACKAGE + "."):
        return None
    parts = modname.split(".")[1:]
    base = os.path.join(_PACKAGE_DIR, *parts)
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


# ``from .x import (a, b)`` (parenthesised names may span lines) or ``import a.b as c, d``, at the
# start of a line anywhere in a file; an import quoted in a docstring only adds a dependency
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]*))",
                     re.M)


def _imported_modules(modname: str, path: str) -> set:
    """The hydro modules that the source at ``path`` imports (anywhere in it). ``from p import m``
    of a submodule m counts m only: jitted code can inline what a module names, and p's own
    source defines none of it. (A regular expression, not a parse: it runs at every start.)"""
    with open(path, encoding="utf-8") as f:
        source = re.sub(r"#[^\n]*", "", f.read()).replace("\\\n", " ")  # no comments, no continuations
    package = modname if path.endswith("__init__.py") else modname.rpartition(".")[0]
    found = set()
    for dots, module, names, plain in _IMPORT.findall(source):
        if not dots and not module:  # ``import a.b as c, d``
            found.update(part.split()[0] for part in plain.split(",") if part.strip())
            continue
        if dots:
            base = package.split(".")
            base = base[: len(base) - (len(dots) - 1)]
            module = ".".join(base + ([module] if module else []))
        for part in names.strip("() \t\n").split(","):
            name = part.split()[0] if part.split() else ""
            sub = f"{module}.{name}"
            found.add(sub if name and _module_file(sub) is not None else module)
    return {m for m in found if _module_file(m) is not None}


@functools.lru_cache(maxsize=None)
def _module_closure(modname: str) -> tuple:
    """``modname`` and every hydro module it imports, transitively (sorted names)."""
    seen = set()
    todo = [modname]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        path = _module_file(m)
        if path is None:
            continue
        seen.add(m)
        todo.extend(_imported_modules(m, path) - seen)
    return tuple(sorted(seen))


#: When this process started importing hydro (the time its sources were read)
_IMPORTED_AT = time.time()


@functools.lru_cache(maxsize=None)
def source_digest(modname: str) -> str:
    """A digest of the hydro sources a function defined in ``modname`` can inline.

    The files are read when first asked, which can be long after the process imported them: a
    file edited since then is not the code this process compiles, and an entry saved under its
    digest would hand this process's old code to every later process (measured: a constant changed
    between two runs while a test run was still compiling gave the old constant's results). So if
    any of them changed after hydro was imported, the stamp is one no other process shares: this
    process's entries are never loaded."""
    h = hashlib.sha256()
    for m in _module_closure(modname):
        path = _module_file(m)
        if os.stat(path).st_mtime > _IMPORTED_AT:
            return f"edited-after-import-{os.getpid()}-{_IMPORTED_AT!r}"
        with open(path, "rb") as f:
            h.update(m.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()[:16]


# -- a Numba cache for hydro's functions -------------------------------------------------------


class _HydroLocator(caching._CacheLocator):
    """All of hydro's functions in one folder, stamped with the digest of what they can inline."""

    def __init__(self, py_func):
        self._py_file = py_func.__code__.co_filename
        self._modname = py_func.__module__
        self._cache_path = _runtime.cache_folder

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return source_digest(self._modname)

    def get_disambiguator(self):
        return ""

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func)


class _HydroCacheImpl(caching.CompileResultCacheImpl):
    def __init__(self, py_func):  # noqa: D107  (no call to super: no search over Numba's locators)
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = _HydroLocator(py_func)
        fullname = f"{py_func.__module__}.{py_func.__qualname__}".replace("<", "").replace(">", "")
        self._filename_base = f"{fullname}.py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"


def _closure_description(value, depth=0):
    """A description of a closure variable that is the same in every process: scalars by value,
    functions and dispatchers by module, name, bytecode and (recursively) their own closure.
    Numba keys a closure's cache entry on the pickled cell contents, whose bytes for functions
    made at run time differ from process to process, so such a closure was compiled every run."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    if isinstance(value, tuple):
        return "(" + ",".join(_closure_description(v, depth) for v in value) + ")"
    func = getattr(value, "py_func", value)
    code = getattr(func, "__code__", None)
    if code is None or depth > 8:  # anything else as Numba keys it: by its pickle
        return hashlib.sha256(numba_serialize.dumps(value)).hexdigest()[:16]
    cells = func.__closure__ or ()
    inner = ",".join(_closure_description(c.cell_contents, depth + 1) for c in cells)
    digest = hashlib.sha256(code.co_code).hexdigest()[:16]
    return f"{func.__module__}.{func.__qualname__}:{digest}[{inner}]"


class _HydroCache(caching.FunctionCache):
    _impl_class = _HydroCacheImpl

    def _index_key(self, sig, codegen):
        # as Numba's, with closure variables described deterministically (_closure_description);
        # what they compile in is covered by the source stamp (the digest of the module's closure)
        codebytes = self._py_func.__code__.co_code
        cells = self._py_func.__closure__ or ()
        cvars = ",".join(_closure_description(c.cell_contents) for c in cells)
        return (sig, codegen.magic_tuple(), (hashlib.sha256(codebytes).hexdigest(),
                                             hashlib.sha256(cvars.encode()).hexdigest()))

    def load_overload(self, sig, target_context):
        cres = super().load_overload(sig, target_context)
        if cres is None:
            _announce_compile()
        return cres


class _AnnouncingNullCache(caching.NullCache):
    """No disk cache (the folder cannot be written); compiles are still announced."""

    def load_overload(self, sig, target_context):
        _announce_compile()


class _HydroLibrary(JITCodeLibrary):
    """The code of one of hydro's compiled functions. Numba optimises a function's module (with
    the functions it calls linked in) with LLVM's O3 pipeline twice: a variant first, to inline
    reference-count operations together for its pruning pass, then the full one. hydro's kernels
    keep no reference counts, so one full pass does (it halves the time LLVM takes to compile
    the contact pipeline; the machine code runs as fast)."""

    def _optimize_final_module(self):
        mpm, mpb = self._codegen._module_pass_manager()
        with self._recorded_timings.record("Module passes (full optimization)", mpb):
            mpm.run(self._final_module, mpb)


class _LinkOnlyLibrary(_HydroLibrary):
    """Code that is only ever linked into the functions that call it: kept as LLVM IR, optimised
    there (inlined into its callers) and never turned into machine code of its own. Numba emits
    machine code for every function it compiles, and again in every caller that links it."""

    def _optimize_final_module(self):
        pass

    def _finalize_final_module(self):
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True


class _HydroCompiler(_FunctionCompiler):
    """Numba's function compiler, building into a :class:`_HydroLibrary`."""

    link_only = False

    def _compile_core(self, args, return_type):
        flags = numba_compiler.Flags()
        self.targetdescr.options.parse_as_flags(flags, self.targetoptions)
        codegen = self.targetdescr.target_context.codegen()
        if self.link_only:
            # no wrappers (nothing calls it from Python) and no executable: callers find it under
            # the key _LinkOnlyDispatcher.add_overload gives it
            flags.no_cpython_wrapper = True
            flags.no_cfunc_wrapper = True
            flags.no_compile = True
            library = _LinkOnlyLibrary(codegen, self.py_func.__qualname__)
        else:
            library = _HydroLibrary(codegen, self.py_func.__qualname__)
            library.enable_object_caching()  # as Numba's own libraries: the disk cache stores machine code
        cres = numba_compiler.compile_extra(self.targetdescr.typing_context, self.targetdescr.target_context,
                                            self.py_func, args=args, return_type=return_type, flags=flags,
                                            locals=self.locals, library=library, pipeline_class=self.pipeline_class)
        if cres.typing_error is not None:
            raise cres.typing_error
        return cres


class _LinkOnlyCompiler(_HydroCompiler):
    link_only = True


class _LinkOnlyEntry:
    """Where a link-only build's executable would be: the key its callers find it under."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kws):
        raise TypeError(f"{self.name} is compiled to be linked into compiled callers only")


class _LinkOnlyCacheImpl(_HydroCacheImpl):
    """The disk cache of a link-only build: its LLVM IR (bitcode, with the helpers it links) and
    what its callers need to call it (its descriptor and signature), not machine code. Its files
    are named apart from the same function's ordinary build (``…-linked``)."""

    def __init__(self, py_func):  # noqa: D107
        super().__init__(py_func)
        stem, _, version = self._filename_base.rpartition(".")
        self._filename_base = f"{stem}-linked.{version}"

    def reduce(self, cres):
        fndesc = cres.fndesc
        fndesc.typemap = fndesc.calltypes = None  # as Numba's own: not needed, may not pickle
        return (cres.library.name, cres.library._get_module_for_linking().as_bitcode(), fndesc, cres.signature,
                cres.environment, tuple(cres.reload_init or ()))

    def rebuild(self, target_context, payload):
        name, bitcode, fndesc, signature, environment, reload_init = payload
        for fn in reload_init:
            fn()
        library = _LinkOnlyLibrary(target_context.codegen(), name)
        library._final_module = llvm_binding.parse_bitcode(bitcode)
        library._finalize_final_module()
        return numba_compiler.CompileResult(
            target_context=target_context, typing_context=target_context.typing_context, library=library,
            environment=environment, entry_point=None, fndesc=fndesc, type_annotation=None, signature=signature,
            objectmode=False, lifted=(), typing_error=None, call_helper=None, metadata=None,
            reload_init=list(reload_init), referenced_envs=())

    def check_cachable(self, cres):
        return not cres.library.has_dynamic_globals


class _LinkOnlyCache(_HydroCache):
    _impl_class = _LinkOnlyCacheImpl


def _widened(t):
    """The argument type a helper is compiled for: a literal as its plain type and every integer as
    int64, so a helper called with ``0``, ``1``, … or with int32 and int64 values is compiled once."""
    t = types.unliteral(t)
    if isinstance(t, types.Integer) and t.bitwidth <= 64 and t != types.uint64:
        return types.int64
    return t


class _HydroDispatcher(CPUDispatcher):
    """A CPU dispatcher of hydro's: before it compiles (or loads) anything, the runtime is set up
    and the dispatcher gets the runtime's cache (only dispatchers in use pay for one). Called from
    compiled code it compiles one build per argument type (:func:`_widened`), not one per literal."""

    _cache_runtime = None
    _compiler_class = _HydroCompiler

    def __init__(self, py_func, locals, targetoptions):
        super().__init__(py_func=py_func, locals=locals, targetoptions=targetoptions)
        if not targetoptions.get("parallel"):  # parfors build their own libraries: Numba's compiler
            self._compiler = self._compiler_class(py_func, self.targetdescr, targetoptions, locals,
                                                  self._compiler.pipeline_class)

    def compile(self, sig):
        rt = _ensure_runtime()
        if self._cache_runtime is not rt:
            self._cache = self._make_cache(rt)
            self._cache_runtime = rt
        return super().compile(sig)

    def _make_cache(self, rt):
        return _HydroCache(self.py_func) if rt.cache_writable() else _AnnouncingNullCache()

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(_widened(a) for a in args), kws)

    if CUDASIM:  # pragma: no cover - exercised only in the simulator test process

        def __call__(self, *args, **kws):
            # simulator arrays, which compiled code cannot unbox: run the Python source
            for a in args:
                if _holds_fake_array(a):
                    return self.py_func(*args, **kws)
            return super().__call__(*args, **kws)


class _LinkOnlyDispatcher(_HydroDispatcher):
    """A device helper's dispatcher: compiled code that calls it links its LLVM IR (LLVM inlines it
    when it is small or ``forceinline``); it has no machine code of its own, and its cache entry is
    that IR (:class:`_LinkOnlyCacheImpl`: a new build of a function that calls it, say the threaded
    pipeline after the serial one, links it from the cache instead of compiling it again). A call
    from Python goes to a twin compiled with the usual wrapper, so helpers stay callable from tests
    and scripts."""

    _twin = None
    _compiler_class = _LinkOnlyCompiler

    def _make_cache(self, rt):
        return _LinkOnlyCache(self.py_func) if rt.cache_writable() else _AnnouncingNullCache()

    def add_overload(self, cres):
        # Numba finds a compiled function's implementation for its callers under its executable;
        # a link-only build has none, so it is registered under a key of its own
        key = _LinkOnlyEntry(self.py_func.__qualname__)
        cres = cres._replace(entry_point=key)
        self.targetctx.insert_user_function(key, cres.fndesc, [cres.library])
        self.overloads[tuple(cres.signature.args)] = cres  # not in the C dispatch table: __call__ below

    def __call__(self, *args, **kws):
        # (under the simulator the twin runs the Python source for simulator arrays)
        if self._twin is None:
            self._twin = _HydroDispatcher(py_func=self.py_func, locals={}, targetoptions=dict(self.targetoptions))
        return self._twin(*args, **kws)


if CUDASIM:  # pragma: no cover - exercised only in the simulator test process
    from numba.cuda.simulator.cudadrv.devicearray import (
        FakeCUDAArray,
        FakeWithinKernelCUDAArray,
    )

    _FAKE_ARRAYS = (FakeCUDAArray, FakeWithinKernelCUDAArray)

    def _holds_fake_array(a):
        if isinstance(a, _FAKE_ARRAYS):
            return True
        return isinstance(a, tuple) and any(_holds_fake_array(x) for x in a)


def _dispatcher(fn, *, link_only=False, **options):
    if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: plain Python, as numba.njit does
        return fn
    # IEEE division (inf/NaN, no ZeroDivisionError) on the CPU as on CUDA: one source, one behaviour
    targetoptions = {"nopython": True, "boundscheck": None, "error_model": "numpy", **options}
    cls = _LinkOnlyDispatcher if link_only else _HydroDispatcher
    return cls(py_func=fn, locals={}, targetoptions=targetoptions)


def device_fn(fn=None, *, inline: bool = False):
    """Declare a device helper: plain math callable from CPU and CUDA kernels alike.

    Helpers may use scalars, tuples, array indexing, loops and ``math``; no allocation, no
    exceptions, no Python objects, so that the same source compiles for CUDA. Helpers are
    compiled once per argument type and linked into their callers, where LLVM inlines the small
    ones; ``inline`` makes LLVM inline the helper at every call site (``forceinline``: samplers
    that take the SDFView, whose arrays a call would pass one by one).
    """

    def wrap(f):
        # helpers allocate nothing: no reference counting (else every array read out of a tuple
        # argument costs an atomic increment and decrement per call)
        return _dispatcher(f, link_only=True, _nrt=False, forceinline=bool(inline))

    return wrap(fn) if fn is not None else wrap


class SerialOrThreaded:
    """A CPU function with ``prange`` loops in two builds: a call whose largest array has fewer
    than ``serial_below`` rows runs the serial build (``prange`` as ``range``), a larger one the
    threaded build. Each is compiled when first needed, so a small first run compiles no threaded
    build (several seconds each)."""

    def __init__(self, fn, serial_below: int):
        self.py_func = fn
        self.serial_below = int(serial_below)
        self.serial = _dispatcher(fn)
        # a function of its own name: Numba's cache keys an entry on name, signature and bytecode,
        # not options, and would load one build for the other
        threaded = types_module.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "__threaded", fn.__defaults__,
                                             fn.__closure__)
        threaded.__qualname__ = fn.__qualname__ + "__threaded"
        threaded.__module__ = fn.__module__
        self.threaded = _dispatcher(threaded, parallel=True)
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        rows = max((a.shape[0] for a in args if getattr(a, "ndim", 0) > 0), default=0)
        return (self.threaded if rows >= self.serial_below else self.serial)(*args)


def cpu_jit(fn=None, *, parallel: bool = False, serial_below: int | None = None):
    """A CPU-only compiled function of hydro's (SDF building, mesh distance), cached like the kernels.

    ``parallel``: its ``prange`` loops run on threads; with ``serial_below`` too, calls whose
    largest array has fewer rows run a serial build instead (:class:`SerialOrThreaded`; called
    from Python only)."""

    def wrap(f):
        if numba.config.DISABLE_JIT:
            return f
        if parallel and serial_below is not None:
            return SerialOrThreaded(f, serial_below)
        return _dispatcher(f, **({"parallel": True} if parallel else {}))

    return wrap(fn) if fn is not None else wrap


# ============================================================================================
# Kernels: three launchers generated from one item function

#: Every kernel defined in hydro, by name (the PTX test compiles each one).
KERNELS: dict[str, "Kernel"] = {}

#: The one loop that runs items lo .. hi − 1: the item is inlined here, compiled once per kernel
_RANGE_LOOP = """\
def {fn}(_lo, _hi, {params}):
    for _i in range(_lo, _hi):
        _item(_i, {params})
"""

#: Threads take contiguous runs of items: the parallel loop calls the compiled range, so its body
#: stays one call (Numba's parallel transforms then cost little to compile) and both launchers
#: share one compiled item loop
_PARALLEL_LAUNCHER = """\
def {fn}(_n, {params}):
    _chunks = min(_n, _CHUNKS)
    for _c in prange(_chunks):
        _k = int64(_c)
        _range((_n * _k) // _chunks, (_n * (_k + 1)) // _chunks, {params})
"""

#: Runs of items a parallel launch splits into (the threads share them out statically)
_CHUNKS = 64

_CUDA_LAUNCHER = """\
def {fn}(_n, {params}):
    _i = cuda.grid(1)
    if _i < _n:
        _item(_i, {params})
"""


def _launcher(template, name, variant, item, loop=None):
    """Generate the launcher ``template`` around ``item`` (a Python function in item's module) or,
    for the CPU launchers, around the compiled item ``loop``."""
    py_item = getattr(item, "py_func", item)
    params = list(inspect.signature(py_item).parameters.values())
    for p in params:
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty:
            raise TypeError(f"kernel {name!r}: item arguments must be plain positional ones, not {p}")
    names = [p.name for p in params[1:]]
    if not params or any(n.startswith("_") for n in names):
        raise TypeError(f"kernel {name!r}: the item takes the index first, then arguments not starting with '_'")
    fn = name.replace(".", "_") + "__" + variant
    source = template.format(fn=fn, params=", ".join(names))
    filename = f"<hydro kernel {name} ({variant})>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for tracebacks
    scope = {"__name__": py_item.__module__, "prange": prange, "cuda": cuda, "_item": item, "_range": loop,
             "int64": numba.int64, "_CHUNKS": _CHUNKS}
    exec(compile(source, filename, "exec"), scope)
    f = scope[fn]
    f.__module__ = py_item.__module__
    return f


class Kernel:
    """The serial CPU loop, parallel CPU and CUDA builds of one item function, registered by name.

    Numba's cache keys a function by its name, signature and bytecode, not by its options: each
    build is generated under a name of its own, or one build could be loaded for the other
    (kernels silently serial, or a thread launch on every call).
    """

    def __init__(self, name: str, item, *, serial_below: int = SERIAL_BELOW, cuda_build: bool = True):
        if name in KERNELS:
            raise ValueError(f"kernel name {name!r} is defined twice")
        if not hasattr(item, "py_func") and not numba.config.DISABLE_JIT:
            item = device_fn(item)
        self.name = name
        self.item = item
        self.serial_below = int(serial_below)
        # Kernels allocate nothing, so they run without Numba's reference counting: with it, every
        # array read out of a tuple argument (an SDFView) costs an atomic increment and decrement
        # per item, which Numba's pruning cannot always remove.
        # the item inlined into its one loop (a call per item would pass every array each time)
        inlined = item if numba.config.DISABLE_JIT else _dispatcher(item.py_func, link_only=True, _nrt=False,
                                                                        forceinline=True)
        loop = _launcher(_RANGE_LOOP, name, "loop", inlined)
        self.loop = _dispatcher(loop, _nrt=False)  # launched from Python
        # the same loop for compiled callers (the one-call pipeline, the parallel build): they link
        # its code, so it needs no machine code, wrapper or cache entry of its own
        self.linked = _dispatcher(loop, link_only=True, _nrt=False)
        self.parallel = _dispatcher(_launcher(_PARALLEL_LAUNCHER, name, "parallel", item, self.linked), parallel=True,
                                    _nrt=False)
        self.cuda = cuda.jit(_launcher(_CUDA_LAUNCHER, name, "cuda", item)) if cuda_build else None
        KERNELS[name] = self

    def __repr__(self) -> str:
        return f"Kernel({self.name!r})"

    def cpu(self, n: int, *args, serial_below: int | None = None):
        """Run items ``0 .. n-1`` on the CPU: serially below the threshold, else in parallel."""
        threshold = self.serial_below if serial_below is None else serial_below
        if n >= threshold:
            self.parallel(n, *args)
        else:
            self.loop(0, n, *args)


def kernel(name: str, item, *, serial_below: int = SERIAL_BELOW, cuda: bool = True) -> Kernel:
    """The :class:`Kernel` of item function ``item(i, *args)`` (a ``@device_fn``), named ``name``.

    ``serial_below``: launches of fewer items run the serial CPU build (lower it for heavy
    items). ``cuda=False``: a CPU-only kernel (no CUDA build).
    """
    return Kernel(name, item, serial_below=serial_below, cuda_build=cuda)


# --------------------------------------------------------------------------------------------
# Signature recording (for the PTX compile test)

_recorded: dict[str, tuple] | None = None


@contextlib.contextmanager
def record_signatures():
    """Record the Numba argument types of every kernel launched inside the block."""
    global _recorded
    prev = _recorded
    _recorded = {}
    try:
        yield _recorded
    finally:
        _recorded = prev


def _record(name: str, args):
    if _recorded is not None and name not in _recorded:
        _recorded[name] = tuple(numba.typeof(a) for a in args)
