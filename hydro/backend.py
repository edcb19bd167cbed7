"""Where kernels run: :class:`Device` (the CPU through Numba, or CUDA), its arrays, launches and
the exclusive prefix sum that every count → scan → scatter stage is built on.

Kernels and device helpers are defined with :mod:`hydro.jit` (re-exported here: ``device_fn``,
``kernel``, ``configure_runtime`` …): one item function per kernel, compiled for the CPU
(parallel and serial) and for CUDA.
"""

from __future__ import annotations

import numpy as np
import numba

from . import jit as _jit
from .errors import shown
from .jit import cuda  # numba.cuda, or hydro._nocuda's stand-in in a CPU-only install
from .jit import (COMPILING_MESSAGE, CUDASIM, KERNELS, SERIAL_BELOW, Kernel, _record,  # noqa: F401  (re-exported)
                  configure_runtime, cpu_jit, default_cache_folder, device_fn, kernel, record_signatures)

__all__ = ["Device", "cpu_exclusive_scan", "find_segment", "get_device", "lower_bound", *_jit.__all__]


# ============================================================================================
# Small device helpers shared by several stages


@device_fn(inline=True)
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


@device_fn(inline=True)
def lower_bound(keys, count, value):
    """The first index ``k`` in ``0 .. count`` with ``keys[k] >= value`` (``keys`` ascending)."""
    lo = 0
    hi = count
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------------------------
# Exclusive prefix sum


@cpu_jit
def cpu_exclusive_scan(values, out, count):
    """Exclusive prefix sum of ``values[:count]`` into ``out[:count + 1]`` on the CPU (out[count]:
    the total, returned). One ordered pass: it is memory-bound, and a second thread would only
    add a launch to the counts hydro scans."""
    s = 0
    for i in range(count):
        out[i] = s
        s += values[i]
    out[count] = s
    return s


_SCAN_TPB = 256  # threads per block of the CUDA scan (a power of two)


@cuda.jit
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


@cuda.jit
def _scan_add_cuda(n, out, block_offsets, values):
    i = cuda.grid(1)
    if i < n:
        out[i] += block_offsets[i // _SCAN_TPB]
        if i == n - 1:
            out[n] = out[i] + values[i]


# ============================================================================================
# Devices


class Device:
    """An execution target: ``"cpu"`` (Numba, parallel) or ``"cuda"`` (Numba CUDA).

    Arrays on the CPU are NumPy arrays; on CUDA they are device arrays. Kernels are launched
    with :meth:`launch`, which runs ``n`` items of a :class:`Kernel`.
    """

    def __init__(self, name: str = "cpu", *, threads_per_block: int = 128):
        if name not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {shown(name)}")
        if name == "cuda" and not (cuda.is_available() or CUDASIM):
            raise ValueError("device 'cuda' was asked for but no CUDA GPU is available; use device='cpu'"
                             + ("" if getattr(cuda, "available", True) else
                                " (and Numba's CUDA target is not installed: pip install 'hydro[cuda]')"))
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
    def launch(self, k: Kernel, n: int, *args, serial_below: int | None = None):
        """Run items ``0 .. n-1`` of kernel ``k`` on this device.

        ``serial_below`` overrides the kernel's own threshold for running serially on the CPU
        (e.g. for a scatter pass whose items are cheap).
        """
        n = int(n)
        if n <= 0:
            return
        _record(k.name, (n,) + args)
        if self.is_cuda:
            tpb = self.threads_per_block
            k.cuda[(n + tpb - 1) // tpb, tpb](n, *args)
        else:
            k.cpu(n, *args, serial_below=serial_below)

    def exclusive_scan(self, values, out, count: int | None = None) -> int:
        """Exclusive prefix sum of ``values[:count]`` into ``out[:count+1]``; returns the total.

        ``out`` has room for ``count + 1`` entries: ``out[count]`` holds the total. ``values``
        is an integer array; ``out`` is int64 or int32 (totals must fit).
        """
        count = len(values) if count is None else int(count)
        if self.is_cuda:
            self._scan_cuda(values, out, count)
            return int(self.read_scalar(out, count))
        return int(cpu_exclusive_scan(values, out, count))

    def _scan_cuda(self, values, out, count: int, level: int = 0):
        if count == 0:
            out[0:1].copy_to_device(np.zeros(1, dtype=out.dtype))
            return
        nblocks = (count + _SCAN_TPB - 1) // _SCAN_TPB
        block_sums = self.scratch(f"scan.block_sums.{level}", nblocks, np.int64)
        _record("exclusive_scan.block", (count, values, out, block_sums))
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
        raise ValueError(f"device must be 'cpu', 'cuda' or 'auto', got {shown(device)}")
    return Device(device)


def cuda_scan_kernels():
    """The raw CUDA scan kernels with example signatures (for the PTX test)."""
    i64 = numba.int64
    arr = numba.types.Array(numba.int64, 1, "C")
    return {
        "exclusive_scan.block": (_scan_block_cuda, (i64, arr, arr, arr)),
        "exclusive_scan.add": (_scan_add_cuda, (i64, arr, arr, arr)),
    }
