"""Two execution targets from one source.

Every kernel in hydro is written once as an *item function*: a ``@device_fn`` that does the
work for one index ``i``. Each stage then wraps it in two three-line launchers:

- a CPU kernel, ``@cpu_kernel``: ``for i in prange(n): item(i, ...)`` compiled by Numba both
  parallel (large launches) and serial (small ones, no threading overhead);
- a CUDA kernel, ``@cuda_kernel``: ``i = cuda.grid(1); if i < n: item(i, ...)``.

Both launchers call the very same ``@device_fn`` helpers, so no formula exists twice. A
:class:`Device` runs a :class:`KernelPair` on either target, allocates and moves arrays, and
provides the exclusive prefix sum that every count → scan → scatter stage is built on.

Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` set before Numba is imported) device
helpers receive simulator arrays, which compiled Numba code cannot unbox; ``device_fn`` then
returns a dispatcher that runs the helper's Python source for such calls, and compiled code
otherwise, so the CPU kernels keep working in the same process.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import numba
from numba import cuda, njit, prange

__all__ = [
    "CUDASIM",
    "Device",
    "KernelPair",
    "cpu_kernel",
    "cuda_kernel",
    "device_fn",
    "get_device",
    "KERNELS",
]

CUDASIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def _source_digest() -> str:
    """A digest of hydro's own source files."""
    import hashlib

    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha1()
    for root, _, files in sorted(os.walk(here)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    h.update(name.encode() + f.read())
    return h.hexdigest()[:12]


# Numba's on-disk cache notices a change in a kernel's own file only, not in the helpers it
# inlines from other files: an edited or upgraded hydro could load stale (slow, or wrong)
# machine code. Hydro's kernels are therefore cached under a folder named after a digest of
# all of hydro's sources (inside NUMBA_CACHE_DIR when set, else ~/.cache/hydro-numba).
# The simulator's process compiles the same CPU kernels around different (Python-running)
# helpers, so it keeps its own folder.
_cache_root = numba.config.CACHE_DIR or os.path.join(os.path.expanduser("~"), ".cache", "hydro-numba")
numba.config.CACHE_DIR = os.path.join(_cache_root, f"hydro-{_source_digest()}" + ("-cudasim" if CUDASIM else ""))

# Threads: Numba's OpenMP layer starts a parallel loop in ~2 µs on a quiet 2-core machine
# (the work-queue layer in 60–120 µs), but its spinning workers can stall for milliseconds when
# other processes compete for the cores. Passive waiting keeps the OpenMP layer predictable
# (~45 µs a launch); small launches run serially anyway (``SERIAL_BELOW``). Set
# OMP_WAIT_POLICY=ACTIVE for the fastest launches on a dedicated machine; a user's own
# NUMBA_THREADING_LAYER or OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: Launches below this many items run the serial CPU build (no thread start-up cost), unless
#: the kernel says otherwise (``KernelPair(..., serial_below=...)`` for heavy items).
SERIAL_BELOW = 2048

if CUDASIM:  # pragma: no cover - exercised only in the simulator test process
    from numba.core.registry import CPUDispatcher
    from numba.cuda.simulator.cudadrv.devicearray import (
        FakeCUDAArray,
        FakeWithinKernelCUDAArray,
    )

    _FAKE_ARRAYS = (FakeCUDAArray, FakeWithinKernelCUDAArray)

    class _SimDispatcher(CPUDispatcher):
        """A CPU dispatcher that runs the Python source when given simulator arrays."""

        def __call__(self, *args, **kws):
            for a in args:
                if isinstance(a, _FAKE_ARRAYS):
                    return self.py_func(*args, **kws)
            return super().__call__(*args, **kws)


def device_fn(fn=None, *, inline: bool = True):
    """Declare a device helper: plain math callable from CPU and CUDA kernels alike.

    Helpers may use scalars, tuples, array indexing, loops and ``math``; no allocation, no
    exceptions, no Python objects, so that the same source compiles for CUDA. Helpers are
    inlined into their callers by default: a call that passes many arrays would otherwise
    cost more than the work it does.
    """

    def wrap(f):
        opts = {"cache": True}
        if inline:
            opts["inline"] = "always"
        if CUDASIM:
            d = _SimDispatcher(f, targetoptions={"nopython": True, **({"inline": "always"} if inline else {})})
            return d
        return njit(**opts)(f)

    return wrap(fn) if fn is not None else wrap


def _renamed(fn, suffix: str):
    """The same function under another qualified name (Numba names cache files after it)."""
    import types

    g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix, fn.__defaults__, fn.__closure__)
    g.__qualname__ = fn.__qualname__ + suffix
    g.__module__ = fn.__module__
    return g


class CPUKernel:
    """A CPU launcher compiled twice from one source: parallel and serial.

    Numba's cache keys a function by its name, signature and bytecode, not by its options: the
    serial build is given a name of its own, or one build would be loaded for the other.
    """

    def __init__(self, fn):
        self.py_func = fn
        self.name = fn.__name__
        self.parallel = njit(parallel=True, cache=True)(fn)
        self.serial = njit(cache=True)(_renamed(fn, "__serial"))

    def __call__(self, n, *args, serial_below=SERIAL_BELOW):
        (self.parallel if n >= serial_below else self.serial)(n, *args)


def cpu_kernel(fn):
    """Decorate a CPU launcher ``f(n, *args)`` that loops ``for i in prange(n)``."""
    return CPUKernel(fn)


def cuda_kernel(fn):
    """Decorate a CUDA launcher ``f(n, *args)`` that runs one item per thread."""
    return cuda.jit(fn)


#: Every kernel pair defined in hydro, by name (the PTX test compiles each one).
KERNELS: dict[str, "KernelPair"] = {}


class KernelPair:
    """The CPU and CUDA launchers of one kernel, registered under a unique name."""

    def __init__(self, name: str, cpu: CPUKernel, cuda_fn, *, serial_below: int = SERIAL_BELOW):
        if name in KERNELS:
            raise ValueError(f"kernel name {name!r} is defined twice")
        self.name = name
        self.cpu = cpu
        self.cuda = cuda_fn
        self.serial_below = int(serial_below)
        KERNELS[name] = self


@device_fn
def find_segment(offsets, count, item):
    """The segment ``p`` with ``offsets[p] <= item < offsets[p + 1]`` (offsets ascending, count+1 long)."""
    lo = 0
    hi = count
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if offsets[mid] <= item:
            lo = mid
        else:
            hi = mid
    return lo


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


def _record(kp: KernelPair, args):
    if _recorded is not None and kp.name not in _recorded:
        _recorded[kp.name] = tuple(numba.typeof(a) for a in args)


# --------------------------------------------------------------------------------------------
# Exclusive prefix sum


@cpu_kernel
def _scan_chunk_sums_cpu(n, values, count, chunk, sums_out):
    for c in prange(n):
        start = c * chunk
        stop = min(start + chunk, count)
        s = 0
        for i in range(start, stop):
            s += values[i]
        sums_out[c] = s


@cpu_kernel
def _scan_chunk_write_cpu(n, values, count, chunk, chunk_offsets, out):
    for c in prange(n):
        start = c * chunk
        stop = min(start + chunk, count)
        s = chunk_offsets[c]
        for i in range(start, stop):
            out[i] = s
            s += values[i]
        if stop == count and start < stop:
            out[count] = s
        if count == 0:
            out[0] = 0


_SCAN_TPB = 256  # threads per block of the CUDA scan (a power of two)


@cuda_kernel
def _scan_block_cuda(n, values, out, block_sums):
    # Inclusive Hillis–Steele scan of one block in shared memory, written exclusive to out.
    buf = cuda.shared.array(_SCAN_TPB, numba.int64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * _SCAN_TPB + t
    v = 0
    if i < n:
        v = values[i]
    buf[t] = v
    cuda.syncthreads()
    offset = 1
    while offset < _SCAN_TPB:
        add = 0
        if t >= offset:
            add = buf[t - offset]
        cuda.syncthreads()
        buf[t] += add
        cuda.syncthreads()
        offset *= 2
    if i < n:
        out[i] = buf[t] - v
    if t == _SCAN_TPB - 1:
        block_sums[cuda.blockIdx.x] = buf[t]


@cuda_kernel
def _scan_add_cuda(n, out, block_offsets, values):
    i = cuda.grid(1)
    if i < n:
        out[i] += block_offsets[i // _SCAN_TPB]
        if i == n - 1:
            out[n] = out[i] + values[i]


# --------------------------------------------------------------------------------------------
# Devices


class Device:
    """An execution target: ``"cpu"`` (Numba, parallel) or ``"cuda"`` (Numba CUDA).

    Arrays on the CPU are NumPy arrays; on CUDA they are device arrays. Kernels are launched
    with :meth:`launch`, which runs ``n`` items of a :class:`KernelPair`.
    """

    def __init__(self, name: str = "cpu", *, threads_per_block: int = 128):
        if name not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {name!r}")
        if name == "cuda" and not (cuda.is_available() or CUDASIM):
            raise ValueError("device 'cuda' was asked for but no CUDA GPU is available; use device='cpu'")
        if threads_per_block <= 0:
            raise ValueError(f"threads_per_block must be positive, got {threads_per_block}")
        self.name = name
        self.threads_per_block = int(threads_per_block)
        self._scratch_arrays = {}

    def __repr__(self) -> str:
        return f"Device({self.name!r})"

    @property
    def is_cuda(self) -> bool:
        return self.name == "cuda"

    # -- arrays -------------------------------------------------------------------------------
    def scratch(self, name, size, dtype):
        """A reusable 1-D work array of at least ``size`` entries (kept between calls)."""
        arr = self._scratch_arrays.get(name)
        if arr is None or len(arr) < size or arr.dtype != np.dtype(dtype):
            arr = self.empty(max(int(size), 1), dtype)
            self._scratch_arrays[name] = arr
        return arr

    def empty(self, shape, dtype):
        if self.is_cuda:
            return cuda.device_array(shape, dtype=dtype)
        return np.empty(shape, dtype=dtype)

    def full(self, shape, value, dtype):
        if self.is_cuda:
            return cuda.to_device(np.full(shape, value, dtype=dtype))
        return np.full(shape, value, dtype=dtype)

    def asarray(self, host, dtype=None):
        a = np.ascontiguousarray(host, dtype=dtype)
        if self.is_cuda:
            return cuda.to_device(a)
        return a

    def to_host(self, arr) -> np.ndarray:
        if self.is_cuda:
            return arr.copy_to_host()
        return arr

    def copy_into(self, dst, host):
        """Copy host values into the first ``len(host)`` entries of ``dst`` (same trailing shape)."""
        host = np.ascontiguousarray(host, dtype=dst.dtype)
        if self.is_cuda:
            dst[: len(host)].copy_to_device(host)
        else:
            dst[: len(host)] = host

    def read_scalar(self, arr, index: int):
        """Read one element (a host round trip on CUDA)."""
        if self.is_cuda:
            return arr[index : index + 1].copy_to_host()[0]
        return arr[index]

    def synchronize(self):
        if self.is_cuda:
            cuda.synchronize()

    # -- launches -----------------------------------------------------------------------------
    def launch(self, kp: KernelPair, n: int, *args, serial_below: int | None = None):
        """Run items ``0 .. n-1`` of kernel pair ``kp`` on this device.

        ``serial_below`` overrides the kernel's own threshold for running serially on the CPU
        (e.g. for a scatter pass whose items are cheap).
        """
        n = int(n)
        if n <= 0:
            return
        _record(kp, (n,) + args)
        if self.is_cuda:
            tpb = self.threads_per_block
            kp.cuda[(n + tpb - 1) // tpb, tpb](n, *args)
        else:
            kp.cpu(n, *args, serial_below=kp.serial_below if serial_below is None else serial_below)

    def exclusive_scan(self, values, out, count: int | None = None) -> int:
        """Exclusive prefix sum of ``values[:count]`` into ``out[:count+1]``; returns the total.

        ``out`` has room for ``count + 1`` entries: ``out[count]`` holds the total. ``values``
        is an integer array; ``out`` is int64 or int32 (totals must fit).
        """
        count = len(values) if count is None else int(count)
        if self.is_cuda:
            self._scan_cuda(values, out, count)
        else:
            chunk = max(4096, (count + 7) // 8)
            nchunks = max(1, (count + chunk - 1) // chunk)
            sums = self.scratch("scan.sums", nchunks, np.int64)
            _scan_chunk_sums_cpu(nchunks, values, count, chunk, sums)
            offsets = self.scratch("scan.offsets", nchunks, np.int64)
            offsets[0] = 0
            np.cumsum(sums[: nchunks - 1], out=offsets[1:nchunks])
            _scan_chunk_write_cpu(nchunks, values, count, chunk, offsets, out)
        return int(self.read_scalar(out, count))

    def _scan_cuda(self, values, out, count: int, level: int = 0):
        if count == 0:
            out[0:1].copy_to_device(np.zeros(1, dtype=out.dtype))
            return
        nblocks = (count + _SCAN_TPB - 1) // _SCAN_TPB
        block_sums = self.scratch(f"scan.block_sums.{level}", nblocks, np.int64)
        if _recorded is not None:
            _recorded.setdefault("exclusive_scan.block", tuple(numba.typeof(a) for a in (count, values, out, block_sums)))
        _scan_block_cuda[nblocks, _SCAN_TPB](count, values, out, block_sums)
        block_offsets = self.scratch(f"scan.block_offsets.{level}", nblocks + 1, np.int64)
        if nblocks == 1:
            block_offsets[0:1].copy_to_device(np.zeros(1, dtype=np.int64))
        else:
            self._scan_cuda(block_sums, block_offsets, nblocks, level + 1)
        tpb = self.threads_per_block
        _scan_add_cuda[(count + tpb - 1) // tpb, tpb](count, out, block_offsets, values)


def get_device(device="cpu") -> Device:
    """Resolve ``"cpu" | "cuda" | "auto"`` (or a :class:`Device`) to a :class:`Device`.

    ``"auto"`` picks CUDA when a GPU is present and the CPU otherwise.
    """
    if isinstance(device, Device):
        return device
    if device == "auto":
        return Device("cuda" if cuda.is_available() else "cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'auto', got {device!r}")
    return Device(device)


def cuda_scan_kernels():
    """The raw CUDA scan kernels with example signatures (for the PTX test)."""
    i64 = numba.int64
    arr = numba.types.Array(numba.int64, 1, "C")
    return {
        "exclusive_scan.block": (_scan_block_cuda, (i64, arr, arr, arr)),
        "exclusive_scan.add": (_scan_add_cuda, (i64, arr, arr, arr)),
    }
