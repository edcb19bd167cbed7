"""The pipeline's device buffers, their capacities, and the overflow bookkeeping of a call.

A buffer whose capacity is left automatic (``None`` in
:class:`~hydro.contact.config.HydroelasticConfig`) grows before a scatter that would overflow
it, so nothing is lost; a buffer whose capacity is set explicitly never grows: the scatter
stops at the capacity, the overflow is counted and reported with the setting to raise
(``overflow="raise" | "warn" | "ignore"``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .contacts import CF_COUNT, CI_COUNT, TF_COUNT
from .marching import BLOCK_ROW
from .pair_setup import PF_COUNT, PI_COUNT
from .polytope import POLYGON_SCRATCH
from .reduction import ReductionWorkspace
from ..errors import ContactOverflowError
from .types import Overflow


class Buffer:
    """A named device array that grows (automatic capacity) or stays fixed (explicit)."""

    #: Counts every reallocation of any buffer (so a caller can tell that arrays it holds are stale)
    generation = 0

    def __init__(self, device, setting, shape_tail, dtype, explicit, initial):
        self.device = device
        self.setting = setting
        self.shape_tail = tuple(shape_tail)
        self.dtype = dtype
        self.explicit = explicit
        self.capacity = int(explicit if explicit is not None else initial)
        self.array = self._fresh()

    def _fresh(self):
        # filled with NaN (floats) or -1 (integers), so an unwritten slot shows
        fill = np.nan if np.dtype(self.dtype).kind == "f" else -1
        return self.device.full((self.capacity + 1,) + self.shape_tail, fill, self.dtype)

    def reserve(self, required: int) -> int:
        """Make room for ``required`` entries if automatic; return the usable capacity."""
        if self.explicit is None and required > self.capacity:
            self.capacity = int(required * 1.25) + 16
            self.array = self._fresh()
            Buffer.generation += 1
        return self.capacity


def reserve(required: int, *buffers) -> int:
    """Make room for ``required`` entries in every buffer that grows; the capacity they share."""
    return min(b.reserve(required) for b in buffers)


def upload_kept(device, kept: dict, name, host):
    """Copy per-call host data into the device array ``kept[name]`` (allocated, or reallocated when
    its shape or dtype changes); that array."""
    host = np.ascontiguousarray(host)
    buf = kept.get(name)
    if buf is None or buf.shape != host.shape or buf.dtype != host.dtype:
        buf = device.empty(host.shape, host.dtype)
        kept[name] = buf
    if host.size:
        device.copy_into(buf, host)
    return buf


class ContactWorkspace:
    """Every device buffer of one :class:`~hydro.contact.pipeline.HydroelasticPipeline`, kept
    between calls. Initial sizes follow the model (hydroelastic shapes, their bricks and fine
    bricks); automatic buffers grow on the first call that needs more.

    | buffers | setting | per entry |
    |---|---|---|
    | ``pair_a``, ``pair_b``, ``pair_f``, ``pair_i``, ``pair_counts``, ``pair_offsets``, | ``pair_capacity`` | pair |
    | ``polygon_counts``, ``polygon_offsets``, ``polygon_scratch`` (stage 4b) | | |
    | ``cell_flags``, ``cell_offsets``, ``cell_masks``, ``cells`` (2 levels: pair, ijk) | ``cell_capacity`` | cell |
    | ``block_pair``, ``block_ijk``, ``block_corners`` (eA, eB, f at its points, edge crossings), ``block_counts``, | | |
    | ``block_offsets`` | ``block_capacity`` | block |
    | ``contact_f``, ``contact_i``, ``triangle_f`` (when asked for) | ``contact_capacity`` | patch contact |
    | ``reduced_f``, ``reduced_i`` | ``reduced_contact_capacity`` | reduced contact |
    """

    def __init__(self, device, config, *, hydro_shape_count: int, brick_count: int, fine_brick_count: int):
        cfg = config
        dev = device
        self.device = dev
        self.contact_capacity = cfg.contact_capacity
        nh = max(1, hydro_shape_count)
        pair0 = max(64, 4 * nh)

        def pair_buffer(tail, dtype):
            return Buffer(dev, "pair_capacity", tail, dtype, cfg.pair_capacity, pair0)

        self.pair_a = pair_buffer((), np.int32)
        self.pair_b = pair_buffer((), np.int32)
        self.pair_f = pair_buffer((PF_COUNT,), np.float64)
        self.pair_i = pair_buffer((PI_COUNT,), np.int32)
        self.pair_counts = pair_buffer((), np.int64)
        self.pair_offsets = pair_buffer((), np.int64)
        self.polygon_counts = pair_buffer((), np.int32)
        self.polygon_offsets = pair_buffer((), np.int64)
        self.polygon_scratch = pair_buffer((POLYGON_SCRATCH,), np.float64)
        self.pair_buffers = (self.pair_a, self.pair_b, self.pair_f, self.pair_i, self.pair_counts, self.pair_offsets,
                             self.polygon_counts, self.polygon_offsets, self.polygon_scratch)
        cell0 = max(4096, 2 * max(brick_count, 1))

        def cell_buffer(tail, dtype):
            return Buffer(dev, "cell_capacity", tail, dtype, cfg.cell_capacity, cell0)

        self.cell_flags = cell_buffer((), np.int32)
        self.cell_offsets = cell_buffer((), np.int64)
        self.cell_masks = cell_buffer((), np.int32)
        self.cells = [(cell_buffer((), np.int32), cell_buffer((3,), np.int32)) for _ in range(2)]
        block0 = max(4096, max(fine_brick_count, 1))  # a first estimate: automatic buffers grow on the first call

        def block_buffer(tail, dtype):
            return Buffer(dev, "block_capacity", tail, dtype, cfg.block_capacity, block0)

        self.block_pair = block_buffer((), np.int32)
        self.block_ijk = block_buffer((3,), np.int32)
        self.block_corners = block_buffer((BLOCK_ROW,), np.float32)
        self.block_counts = block_buffer((), np.int32)
        self.block_offsets = block_buffer((), np.int64)
        con0 = 4 * self.block_pair.capacity
        self.contact_f = Buffer(dev, "contact_capacity", (CF_COUNT,), np.float32, cfg.contact_capacity, con0)
        self.contact_i = Buffer(dev, "contact_capacity", (CI_COUNT,), np.int32, cfg.contact_capacity, con0)
        self.triangle_f = None  # allocated when triangles are first asked for
        self.no_triangles = dev.empty((1, TF_COUNT), np.float32)  # the kernel's dummy when they are not
        self.reduction = ReductionWorkspace(dev, cfg.max_contacts_per_pair)
        red0 = cfg.reduced_contact_capacity or pair0 * cfg.max_contacts_per_pair
        self.reduced_f = Buffer(dev, "reduced_contact_capacity", (CF_COUNT,), np.float32,
                                cfg.reduced_contact_capacity, red0)
        self.reduced_i = Buffer(dev, "reduced_contact_capacity", (CI_COUNT,), np.int32,
                                cfg.reduced_contact_capacity, red0)
        self.sweep_counts = dev.empty(hydro_shape_count + 1, np.int64)
        self.sweep_offsets = dev.empty(hydro_shape_count + 1, np.int64)
        self.uploads = {}

    def triangles(self) -> Buffer:
        """The optional triangle buffer (allocated on first use)."""
        if self.triangle_f is None:
            self.triangle_f = Buffer(self.device, "contact_capacity", (TF_COUNT,), np.float32,
                                     self.contact_capacity, self.contact_f.capacity)
        return self.triangle_f

    def upload(self, name, host):
        """Copy per-call host data into a device array kept for it (allocated on first use)."""
        return upload_kept(self.device, self.uploads, name, host)

    def buffers(self) -> dict:
        """Every device array of the workspace by name (to check that calls reuse them)."""
        out = {name: b.array for name, b in vars(self).items() if isinstance(b, Buffer)}
        for level, (pair, ijk) in enumerate(self.cells):
            out[f"cells.{level}.pair"] = pair.array
            out[f"cells.{level}.ijk"] = ijk.array
        out.update({f"upload.{k}": v for k, v in self.uploads.items()})
        out["reduction.groups"] = self.reduction.groups
        return out


class _Stage:
    """The context of :meth:`CallRecord.stage` (a class: a generator context costs a few µs, a
    share of a small scene's call)."""

    __slots__ = ("record", "name", "t0")

    def __init__(self, record, name):
        self.record = record
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        record = self.record
        record.device.synchronize()
        record.timings_ms[self.name] = (time.perf_counter() - self.t0) * 1e3
        return False


class CallRecord:
    """What one ``collide`` call measured: stage timings (ms), item counts and overflows."""

    def __init__(self, device):
        self.device = device
        self.timings_ms = {}
        self.counts = {}
        self.overflow = []

    def stage(self, name: str) -> "_Stage":
        """Time a stage (to the end of its device work): ``with call.stage(name): ...``."""
        return _Stage(self, name)

    def note_overflow(self, setting: str, capacity: int, required: int, *, owner: str = "HydroelasticConfig"):
        if required > capacity:
            self.overflow.append(Overflow(setting=setting, capacity=capacity, required=int(required), owner=owner))

    def handle_overflow(self, policy: str):
        """Raise, warn or ignore (``HydroelasticConfig.overflow``) what overflowed."""
        if not self.overflow:
            return
        msg = "; ".join(o.message() for o in self.overflow)
        if policy == "raise":
            raise ContactOverflowError(msg)
        if policy == "warn":
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
