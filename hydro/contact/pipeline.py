"""The hydroelastic contact pipeline: calls the stages in order and checks their buffers.

    broad phase → pair setup → refinement (bricks of 8 voxels → 4 → blocks of 2) → marching cubes
    on the blocks' voxels + contacts
    → (optional) contact reduction

:class:`HydroelasticPipeline` holds a workspace of device buffers that is reused across calls.
A buffer whose capacity is left automatic (``None`` in :class:`~hydro.contact.config.HydroelasticConfig`)
grows before a scatter that would overflow it, so nothing is lost; a buffer whose capacity is
set explicitly never grows: the scatter stops at the capacity, the overflow is counted and
reported with the setting to raise (``overflow="raise" | "warn" | "ignore"``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..backend import SERIAL_BELOW, get_device
from .broad_phase import SWEEP, shape_boxes, sweep_order
from .config import hydroelastic_config
from .contacts import CF_COUNT, CI_COUNT, TF_COUNT
from .marching import BLOCK_POINTS, MARCHING_CUBES
from .pair_setup import PAIR_SETUP, PF_COUNT, PI_COUNT
from .refine import INTERFACE_CONTINUOUS, INTERFACE_SWITCHED, REFINE_BRICKS, REFINE_CHILDREN
from ..transforms import check_poses
from .types import CollisionResult, Contacts, Overflow


class ContactOverflowError(RuntimeError):
    """Raised (with ``overflow="raise"``) when a buffer with an explicit capacity is too small."""


class _Buffer:
    """A named device array that grows (automatic capacity) or stays fixed (explicit)."""

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
        return self.capacity


class HydroelasticPipeline:
    """Hydroelastic contacts of a model's shapes at given poses, on the CPU or CUDA.

    ``model`` provides, per shape: ``shape_path``, ``shape_hydroelastic``, ``shape_sdf`` (index
    into ``sdfs``/``sdf_pack``, −1 none), ``shape_stiffness``, ``shape_margin``, ``shape_gap``,
    ``shape_env``, ``shape_body``; and ``sdfs`` with ``sdf_pack``. ``config`` is a
    :class:`~hydro.contact.config.HydroelasticConfig` or a :class:`~hydro.contact.config.NewtonConfig`
    (default: the one set by :func:`~hydro.contact.config.configure_newton`).
    """

    def __init__(self, model, config=None, *, device="cpu"):
        self.model = model
        self.config = hydroelastic_config(config)
        self.device = get_device(device)
        dev = self.device
        n = len(model.shape_path)
        self.shape_count = n
        hydro = np.asarray(model.shape_hydroelastic, dtype=bool)
        sdf = np.asarray(model.shape_sdf, dtype=np.int32)
        for s in np.flatnonzero(hydro & (sdf < 0)):
            raise ValueError(f"shape {model.shape_path[s]} is hydroelastic but has no SDF")
        stiffness = np.asarray(model.shape_stiffness, dtype=np.float64)
        for s in np.flatnonzero(hydro & ~(np.isfinite(stiffness) & (stiffness > 0))):
            raise ValueError(f"shape {model.shape_path[s]}: hydroelastic stiffness must be finite and > 0, "
                             f"got {stiffness[s]}")
        self.hydro_shapes = np.flatnonzero(hydro).astype(np.int32)
        self.is_hydro = hydro
        pack = model.sdf_pack
        self.sdf_arrays = pack.arrays(dev)
        self.shape_sdf_host = sdf
        box_lo = np.zeros((n, 3))
        box_hi = np.zeros((n, 3))
        for s in range(n):
            if sdf[s] >= 0:
                box_lo[s] = model.sdfs[sdf[s]].box_lo
                box_hi[s] = model.sdfs[sdf[s]].box_hi
        self.box_lo, self.box_hi = box_lo, box_hi
        self.shape_pad = np.asarray(model.shape_margin, dtype=np.float64) + np.asarray(model.shape_gap, dtype=np.float64)
        # static per-shape arrays on the device
        self.d_shape_sdf = dev.asarray(sdf)
        self.d_shape_stiffness = dev.asarray(stiffness)
        self.d_shape_margin = dev.asarray(np.asarray(model.shape_margin, dtype=np.float64))
        self.d_shape_gap = dev.asarray(np.asarray(model.shape_gap, dtype=np.float64))
        self.d_shape_env = dev.asarray(np.asarray(model.shape_env, dtype=np.int32))
        self.d_shape_body = dev.asarray(np.asarray(model.shape_body, dtype=np.int32))
        self._make_workspace()

    # ------------------------------------------------------------------------------------------
    def _make_workspace(self):
        cfg = self.config
        dev = self.device
        nh = max(1, len(self.hydro_shapes))
        bricks = sum(self.model.sdfs[self.shape_sdf_host[s]].brick_count for s in self.hydro_shapes) or 1
        fine = sum(self.model.sdfs[self.shape_sdf_host[s]].fine_brick_count for s in self.hydro_shapes) or 1
        pair0 = max(64, 4 * nh)
        self.pair_a = _Buffer(dev, "pair_capacity", (), np.int32, cfg.pair_capacity, pair0)
        self.pair_b = _Buffer(dev, "pair_capacity", (), np.int32, cfg.pair_capacity, pair0)
        self.pair_f = _Buffer(dev, "pair_capacity", (PF_COUNT,), np.float64, cfg.pair_capacity, pair0)
        self.pair_i = _Buffer(dev, "pair_capacity", (PI_COUNT,), np.int32, cfg.pair_capacity, pair0)
        self.pair_counts = _Buffer(dev, "pair_capacity", (), np.int64, cfg.pair_capacity, pair0)
        self.pair_offsets = _Buffer(dev, "pair_capacity", (), np.int64, cfg.pair_capacity, pair0)
        self.pair_buffers = (self.pair_a, self.pair_b, self.pair_f, self.pair_i, self.pair_counts, self.pair_offsets)
        cell0 = max(4096, 2 * bricks)
        self.cell_flags = _Buffer(dev, "cell_capacity", (), np.int32, cfg.cell_capacity, cell0)
        self.cell_offsets = _Buffer(dev, "cell_capacity", (), np.int64, cfg.cell_capacity, cell0)
        self.cell_masks = _Buffer(dev, "cell_capacity", (), np.int32, cfg.cell_capacity, cell0)
        self.cells = [
            (_Buffer(dev, "cell_capacity", (), np.int32, cfg.cell_capacity, cell0),
             _Buffer(dev, "cell_capacity", (3,), np.int32, cfg.cell_capacity, cell0))
            for _ in range(2)
        ]
        block0 = max(4096, fine)  # a first estimate: automatic buffers grow on the first call
        self.block_pair = _Buffer(dev, "block_capacity", (), np.int32, cfg.block_capacity, block0)
        self.block_ijk = _Buffer(dev, "block_capacity", (3,), np.int32, cfg.block_capacity, block0)
        self.block_corners = _Buffer(dev, "block_capacity", (3 * BLOCK_POINTS,), np.float32, cfg.block_capacity,
                                     block0)
        self.block_counts = _Buffer(dev, "block_capacity", (), np.int32, cfg.block_capacity, block0)
        self.block_offsets = _Buffer(dev, "block_capacity", (), np.int64, cfg.block_capacity, block0)
        con0 = 4 * self.block_pair.capacity
        self.contact_f = _Buffer(dev, "contact_capacity", (CF_COUNT,), np.float32, cfg.contact_capacity, con0)
        self.contact_i = _Buffer(dev, "contact_capacity", (CI_COUNT,), np.int32, cfg.contact_capacity, con0)
        from .reduction import ReductionWorkspace

        self.reduction = ReductionWorkspace(dev, cfg.max_contacts_per_pair)
        red0 = cfg.reduced_contact_capacity or pair0 * cfg.max_contacts_per_pair
        self.reduced_f = _Buffer(dev, "reduced_contact_capacity", (CF_COUNT,), np.float32,
                                 cfg.reduced_contact_capacity, red0)
        self.reduced_i = _Buffer(dev, "reduced_contact_capacity", (CI_COUNT,), np.int32,
                                 cfg.reduced_contact_capacity, red0)
        self.calls = 0
        self._uploads = {}
        self.triangle_f = None  # allocated when triangles are first asked for
        self._no_triangles = dev.empty((1, TF_COUNT), np.float32)
        self.bp_counts = dev.empty(len(self.hydro_shapes) + 1, np.int64)
        self.bp_offsets = dev.empty(len(self.hydro_shapes) + 1, np.int64)

    @staticmethod
    def _reserve(required, *buffers):
        return min(b.reserve(required) for b in buffers)

    def _note_overflow(self, overflow, setting, capacity, required):
        if required > capacity:
            overflow.append(Overflow(setting=setting, capacity=capacity, required=int(required)))

    # ------------------------------------------------------------------------------------------
    def collide(self, shape_poses, *, pairs=None, triangles: bool = False) -> CollisionResult:
        """Contacts of all hydroelastic pairs at world ``shape_poses`` (S, 7).

        ``pairs`` (optional, (K, 2) shape indices) skips the broad phase and collides exactly
        those pairs; both shapes of each must be hydroelastic with an SDF. ``triangles``: also
        return the patch triangles' vertices (``result.triangles``, one row per ``result.patch``
        contact), for drawing the patch.
        """
        dev = self.device
        cfg = self.config
        timings = {}
        counts = {}
        overflow = []
        model = self.model
        poses = np.asarray(shape_poses, dtype=np.float64)
        if poses.shape != (self.shape_count, 7):
            raise ValueError(f"shape_poses must have shape ({self.shape_count}, 7), got {poses.shape}")
        bad = ~np.all(np.isfinite(poses), axis=1)
        if bad.any():
            s = int(np.flatnonzero(bad)[0])
            raise ValueError(f"the pose of shape {model.shape_path[s]} is not finite: {poses[s].tolist()}")
        poses = check_poses(poses, "shape pose")
        interface = INTERFACE_SWITCHED if cfg.interface == "switched" else INTERFACE_CONTINUOUS

        # -- stage 1: broad phase ------------------------------------------------------------
        t0 = time.perf_counter()
        aabb, rot, center, half = shape_boxes(poses, self.box_lo, self.box_hi, self.shape_pad)
        d_rot = self._upload("rot", rot)
        d_pos = self._upload("pos", poses[:, :3])
        if pairs is None:
            order, axis = sweep_order(aabb, self.hydro_shapes)
            n_sorted = len(order)
            d_order = self._upload("order", order)
            d_aabb = self._upload("aabb", aabb)
            d_center = self._upload("center", center)
            d_half = self._upload("half", half)
            args = (d_order, axis, d_aabb, self.d_shape_env, self.d_shape_body, d_rot, d_center, d_half)
            dev.launch(SWEEP, n_sorted, False, *args, self.bp_counts, self.bp_offsets, self.pair_a.array,
                       self.pair_b.array, 0)
            n_pairs = dev.exclusive_scan(self.bp_counts, self.bp_offsets, n_sorted) if n_sorted else 0
            cap = self._reserve(n_pairs, *self.pair_buffers)
            dev.launch(SWEEP, n_sorted, True, *args, self.bp_counts, self.bp_offsets, self.pair_a.array,
                       self.pair_b.array, cap)
        else:
            explicit = self._check_pairs(pairs)
            n_pairs = len(explicit)
            cap = self._reserve(n_pairs, *self.pair_buffers)
            m = min(n_pairs, cap)
            if m:
                dev.copy_into(self.pair_a.array, explicit[:m, 0])
                dev.copy_into(self.pair_b.array, explicit[:m, 1])
        self._note_overflow(overflow, "pair_capacity", cap, n_pairs)
        n_pairs = min(n_pairs, cap)
        counts["pairs"] = n_pairs
        dev.synchronize()
        timings["broad_phase"] = (time.perf_counter() - t0) * 1e3

        # -- stage 2: pair setup -------------------------------------------------------------
        t0 = time.perf_counter()
        pair_f = self.pair_f.array
        pair_i = self.pair_i.array
        dev.launch(PAIR_SETUP, n_pairs, self.pair_a.array, self.pair_b.array, self.d_shape_sdf, self.d_shape_stiffness,
                   self.d_shape_margin, self.d_shape_gap, self.d_shape_env, d_rot, d_pos, self.sdf_arrays[0],
                   self.sdf_arrays[1], pair_f, pair_i, self.pair_counts.array)
        n_bricks = dev.exclusive_scan(self.pair_counts.array, self.pair_offsets.array, n_pairs) if n_pairs else 0
        counts["candidate_bricks"] = n_bricks
        dev.synchronize()
        timings["pair_setup"] = (time.perf_counter() - t0) * 1e3

        # -- stage 3: refinement -------------------------------------------------------------
        t0 = time.perf_counter()
        sdf = self.sdf_arrays
        cap = self._reserve(n_bricks, self.cell_flags, self.cell_offsets)
        self._note_overflow(overflow, "cell_capacity", cap, n_bricks)
        n_cand = min(n_bricks, cap)
        out_pair, out_ijk = self.cells[0]
        args = (interface, self.pair_offsets.array, n_pairs, pair_f, pair_i) + sdf
        dev.launch(REFINE_BRICKS, n_cand, False, *args, self.cell_flags.array, self.cell_offsets.array,
                   out_pair.array, out_ijk.array, 0)
        n_cells = dev.exclusive_scan(self.cell_flags.array, self.cell_offsets.array, n_cand) if n_cand else 0
        cap = self._reserve(n_cells, out_pair, out_ijk)
        dev.launch(REFINE_BRICKS, n_cand, True, *args, self.cell_flags.array, self.cell_offsets.array,
                   out_pair.array, out_ijk.array, cap, serial_below=SERIAL_BELOW)
        self._note_overflow(overflow, "cell_capacity", cap, n_cells)
        n_cells = min(n_cells, cap)
        counts["cells_8"] = n_cells
        src = 0
        for size in (8, 4):
            in_pair, in_ijk = self.cells[src]
            if size == 4:
                dst_pair, dst_ijk, setting = self.block_pair, self.block_ijk, "block_capacity"
            else:
                dst_pair, dst_ijk = self.cells[1 - src]
                setting = "cell_capacity"
            self._reserve(n_cells, self.cell_masks, self.cell_flags, self.cell_offsets)
            args = (size, interface, in_pair.array, in_ijk.array, pair_f, pair_i) + sdf
            dev.launch(REFINE_CHILDREN, n_cells, False, *args, self.cell_masks.array, self.cell_flags.array,
                       self.cell_offsets.array, dst_pair.array, dst_ijk.array, 0)
            n_next = dev.exclusive_scan(self.cell_flags.array, self.cell_offsets.array, n_cells) if n_cells else 0
            cap = self._reserve(n_next, dst_pair, dst_ijk)
            dev.launch(REFINE_CHILDREN, n_cells, True, *args, self.cell_masks.array, self.cell_flags.array,
                       self.cell_offsets.array, dst_pair.array, dst_ijk.array, cap, serial_below=SERIAL_BELOW)
            self._note_overflow(overflow, setting, cap, n_next)
            n_cells = min(n_next, cap)
            counts[f"cells_{size // 2}"] = n_cells
            src = 1 - src
        n_blocks = n_cells
        dev.synchronize()
        timings["refine"] = (time.perf_counter() - t0) * 1e3

        # -- stages 4 + 5: marching cubes and contacts ----------------------------------------
        t0 = time.perf_counter()
        clamp = float(cfg.mc_edge_clamp_min)
        self._reserve(n_blocks, self.block_corners, self.block_counts, self.block_offsets)
        args = (interface, clamp, self.block_pair.array, self.block_ijk.array, pair_f, pair_i) + sdf + (
            self.block_corners.array, self.block_counts.array, self.block_offsets.array)
        dev.launch(MARCHING_CUBES, n_blocks, False, *args, self.contact_f.array, self.contact_i.array,
                   self._no_triangles, 0)
        n_tri = dev.exclusive_scan(self.block_counts.array, self.block_offsets.array, n_blocks) if n_blocks else 0
        cap = self._reserve(n_tri, self.contact_f, self.contact_i)
        if triangles:
            if self.triangle_f is None:
                self.triangle_f = _Buffer(dev, "contact_capacity", (TF_COUNT,), np.float32, cfg.contact_capacity,
                                          self.contact_f.capacity)
            self.triangle_f.reserve(n_tri)
            tri_out = self.triangle_f.array
        else:
            tri_out = self._no_triangles
        dev.launch(MARCHING_CUBES, n_blocks, True, *args, self.contact_f.array, self.contact_i.array, tri_out, cap)
        self._note_overflow(overflow, "contact_capacity", cap, n_tri)
        n_tri = min(n_tri, cap)
        counts["triangles"] = n_tri
        dev.synchronize()
        timings["marching_cubes"] = (time.perf_counter() - t0) * 1e3

        # -- stage 6: contact reduction (optional) ---------------------------------------------
        self.calls += 1
        call = self.calls
        if cfg.reduce_contacts:
            t0 = time.perf_counter()
            from .reduction import reduce_on_device

            cap = self._reserve(n_pairs * cfg.max_contacts_per_pair, self.reduced_f, self.reduced_i)
            n_red, required = reduce_on_device(dev, self.reduction, n_pairs, n_tri, self.contact_f.array,
                                               self.contact_i.array, self.reduced_f.array, self.reduced_i.array,
                                               cap)
            self._note_overflow(overflow, "reduced_contact_capacity", cap, required)
            counts["reduced"] = n_red
            dev.synchronize()
            timings["reduce"] = (time.perf_counter() - t0) * 1e3

        # -- download -------------------------------------------------------------------------
        t0 = time.perf_counter()
        pair_host = dev.to_host(pair_i[:n_pairs]) if n_pairs else np.zeros((0, PI_COUNT), np.int32)
        if cfg.reduce_contacts:
            contacts = self._download(self.reduced_f, self.reduced_i, n_red)
            patch = None

            def load_patch(n=n_tri, call=call):
                if self.calls != call:
                    raise RuntimeError("the unreduced patch of an earlier collide call was overwritten by a "
                                       "later call; read result.patch before calling collide again")
                return self._download(self.contact_f, self.contact_i, n)
        else:
            contacts = patch = self._download(self.contact_f, self.contact_i, n_tri)
            load_patch = None
        tri = None
        if triangles:
            from .types import PatchTriangles

            t = dev.to_host(self.triangle_f.array[:n_tri]) if n_tri else np.zeros((0, TF_COUNT), np.float32)
            t = np.array(t, dtype=np.float64)
            tri = PatchTriangles(vertices=t[:, 0:9].reshape(-1, 3, 3), vertex_depth=t[:, 9:12],
                                 vertex_pressure=t[:, 12:15])
        timings["download"] = (time.perf_counter() - t0) * 1e3
        self._handle_overflow(overflow)
        return CollisionResult(contacts, pair_host[:, 0].copy(), pair_host[:, 1].copy(), patch=patch,
                               patch_loader=load_patch, overflow=overflow, timings_ms=timings, counts=counts,
                               triangles=tri)

    # ------------------------------------------------------------------------------------------
    def _upload(self, name, host):
        """Copy per-call host data into a device buffer kept for it (allocated on first use)."""
        host = np.ascontiguousarray(host)
        buf = self._uploads.get(name)
        if buf is None or buf.shape != host.shape or buf.dtype != host.dtype:
            buf = self.device.empty(host.shape, host.dtype)
            self._uploads[name] = buf
        if host.size:
            self.device.copy_into(buf, host)
        return buf

    def _download(self, buf_f, buf_i, n) -> Contacts:
        from .reduction import contacts_from_buffers

        if n == 0:
            return Contacts.empty(0)
        return contacts_from_buffers(self.device.to_host(buf_f.array[:n]), self.device.to_host(buf_i.array[:n]))

    def _check_pairs(self, pairs) -> np.ndarray:
        arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        paths = self.model.shape_path
        for a, b in arr:
            for s in (a, b):
                if not 0 <= s < self.shape_count:
                    raise ValueError(f"pair ({a}, {b}): shape index {s} is out of range [0, {self.shape_count - 1}]")
            if a == b:
                raise ValueError(f"pair ({a}, {b}) pairs shape {paths[a]} with itself")
            for s, other in ((a, b), (b, a)):
                if not self.is_hydro[s]:
                    raise ValueError(f"shape {paths[s]} is not hydroelastic, so it cannot be paired with "
                                     f"{paths[other]} for hydroelastic contact")
        return np.sort(arr, axis=1).astype(np.int32)

    def _handle_overflow(self, overflow):
        if not overflow:
            return
        msg = "; ".join(o.message() for o in overflow)
        if self.config.overflow == "raise":
            raise ContactOverflowError(msg)
        if self.config.overflow == "warn":
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
