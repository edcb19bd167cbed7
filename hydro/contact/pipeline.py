"""The hydroelastic contact pipeline: calls the stages in order and checks their buffers.

    broad phase → pair setup → refinement (bricks of 8 voxels → 4 → blocks of 2) → marching cubes
    on the blocks' voxels + contacts (pairs of boxes: exact polygons instead, stage 4b)
    → (optional) contact reduction → download

:class:`HydroelasticPipeline` holds a :class:`~hydro.contact.workspace.ContactWorkspace` of
device buffers that is reused across calls (see there for how capacities grow or overflow).
Every stage that makes a variable number of outputs is count → exclusive scan → reserve →
scatter (:meth:`HydroelasticPipeline._count_scan_scatter`), so the order is the same on every
target.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from ..arguments import float_array, index_pairs, model_like
from ..backend import SERIAL_BELOW, get_device
from ..errors import InputError
from ..geometry.primitives import BOX, CONE, CONVEX_MESH, CYLINDER
from ..sdf.layout import BRICK
from ..scene.material import DEFAULT_MATERIAL, material_row
from ..transforms import check_poses, normalized_poses_into
from .broad_phase import SWEEP, pair_filter, shape_boxes, sweep_order
from .config import exact_code, hydroelastic_config
from .contacts import CF_COUNT, CI_COUNT, TF_COUNT, PackedContacts
from .cpu_driver import (GROW, S_BLOCKS, S_BRICKS, S_CELLS4, S_CELLS8, S_CODE, S_CONTACTS, S_DEEP, S_OVERFLOW, S_PAIRS,
                         S_POLYGON_TRIANGLES, S_REDUCED, S_REQUIRED, S_SETTING, S_TRIANGLES, SETTINGS, STATUS_LEN,
                         cpu_collide_build)
from .deep_overlap import DeepOverlap, shape_size_findings, warn_findings
from .interface import interface_code
from .marching import MARCHING_CUBES
from .pair_setup import PAIR_SETUP, PI_COUNT, PI_ROUTE, PairView
from .polytope import POLYTOPE_CONTACTS
from .reduction import reduce_on_device
from .refine import REFINE_BRICKS, REFINE_CHILDREN
from .resolution import PatchResolution
from .threads import ThreadChoice
from .types import CollisionResult, Contacts, Overflow, PatchTriangles
from .workspace import Buffer, CallRecord, ContactOverflowError, ContactWorkspace, reserve

__all__ = ["ContactOverflowError", "HydroelasticPipeline"]

#: The next compiled call starts threads when the last one had at least this many marching-cubes
#: blocks, patch triangles, candidate bricks or pairs. Below, waking the threads (passive waiting:
#: 75–120 µs a launch on a 2-core VM) costs more than it saves, the more so as a serial call
#: counts and writes its triangles in one pass: a 0.1 m sphere 5 mm into a box (124 blocks, 630
#: triangles) runs as fast either way, a torus mesh on a box at h 3.75 mm (848 blocks, 2592
#: triangles) 1.3× faster serially, at h 2.5 mm (4604 triangles) 1.1–1.2× faster on two threads.
THREADED_BLOCKS = 1024
THREADED_TRIANGLES = 4096
THREADED_BRICKS = 16384
THREADED_PAIRS = 256


def _worth_threads(pairs, bricks, blocks, triangles) -> bool:
    """The size gate of :class:`~hydro.contact.threads.ThreadChoice`: whether a call this big may
    run on threads at all (above it, measured cost decides)."""
    return (blocks >= THREADED_BLOCKS or triangles >= THREADED_TRIANGLES or bricks >= THREADED_BRICKS
            or pairs >= THREADED_PAIRS)


class HydroelasticPipeline:
    """Hydroelastic contacts of a model's shapes at given poses, on the CPU or CUDA.

    ``model`` provides, per shape: ``shape_path``, ``shape_hydroelastic``, ``shape_sdf`` (index
    into ``sdfs``/``sdf_pack``, −1 none), ``shape_stiffness``, ``shape_margin``, ``shape_gap``,
    ``shape_env``, ``shape_body``; and ``sdfs`` with ``sdf_pack``. ``config`` is a
    :class:`~hydro.contact.config.HydroelasticConfig` or a :class:`~hydro.contact.config.NewtonConfig`
    (default: the one set by :func:`~hydro.contact.config.configure_newton`).
    """

    def __init__(self, model, config=None, *, device="cpu", stage_timings: bool = False):
        if not isinstance(stage_timings, (bool, np.bool_)):
            raise InputError(f"stage_timings must be True or False, got {stage_timings!r}")
        self.stage_timings = bool(stage_timings)
        self.model = model = model_like(model)
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
        # the broad phase's candidates: none when HydroelasticConfig.enabled is False (the collision
        # pipeline then sends these pairs to point contacts); the pair rule does the rest
        self.hydro_shapes = np.flatnonzero(hydro & self.config.enabled).astype(np.int32)
        # stage 4b runs when a hydroelastic box or convex mesh without a margin can meet another or a
        # cylinder or cone (pair setup decides per pair)
        cfg = self.config
        kinds = np.array([model.sdfs[sdf[s]].geometry.kind if sdf[s] >= 0 else -1 for s in range(n)])
        no_margin = hydro & (np.asarray(model.shape_margin, dtype=float) == 0.0)
        flat = no_margin & np.isin(kinds, (BOX, CONVEX_MESH))
        round_ = no_margin & np.isin(kinds, (CYLINDER, CONE))
        # convex meshes with face lists (hydro.sdf.mesh_faces): the face route, pairs of them
        faced = no_margin & np.array([sdf[s] >= 0 and model.sdfs[sdf[s]].face_lists is not None
                                      for s in range(n)], dtype=bool)
        self._routes = np.zeros(0, np.int32)  # the last call's pairs' routes (PI_ROUTE)
        self.polygons = bool(cfg.flat_polygons and cfg.interface == "continuous"
                             and ((cfg.exact_primitives and flat.sum() >= 1 and flat.sum() + round_.sum() >= 2)
                                  or (cfg.exact_meshes and faced.sum() >= 2)
                                  or (cfg.exact_meshes and cfg.exact_primitives and faced.sum() >= 1
                                      and flat.sum() >= 1)))
        self.is_hydro = hydro
        self.sdf_view = model.sdf_pack.view(dev)
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
        self.pair_filter = pair_filter(model, dev)
        material = getattr(model, "shape_material", None)  # a plain namespace of shapes: the defaults
        self.shape_material = (np.tile(material_row(DEFAULT_MATERIAL), (n, 1)) if material is None
                               else np.asarray(material, dtype=float))
        hydro_sdfs = [model.sdfs[sdf[s]] for s in self.hydro_shapes]
        self.workspace = ContactWorkspace(dev, self.config, hydro_shape_count=len(self.hydro_shapes),
                                          brick_count=sum(f.brick_count for f in hydro_sdfs),
                                          fine_brick_count=sum(f.fine_brick_count for f in hydro_sdfs))
        self.calls = 0
        self._compiled = not (dev.is_cuda or self.stage_timings)  # one compiled call (the CPU), or stages
        # the compiled CPU call's per-shape arrays and status
        self._shape_arrays = (self.d_shape_sdf, self.d_shape_stiffness, self.d_shape_margin, self.d_shape_gap,
                              self.d_shape_env)
        self._no_pairs = np.zeros((1, 2), np.int32)
        self._status = np.zeros(STATUS_LEN, np.int64)
        self._threaded = False  # the first call runs serially; later ones as thread_choice says
        self.thread_choice = ThreadChoice(_worth_threads)
        self._thread_mode = "auto"
        self._one_thread_last = False  # the last call was big but had one Numba thread
        self._driver_key = None  # (triangles, Buffer.generation, reduction pairs) its arguments were built for
        self._driver_args = None
        self._entries = {}  # (build, pairs' type) -> the compiled entry point for the current arguments
        # the model's limits (docs/limits.md): narrow shapes and huge margins reported once, a
        # fallback contact for pairs in deep overlap
        self._limit_warnings = set()
        warn_findings(shape_size_findings(model), self._limit_warnings)
        self.deep_overlap = DeepOverlap(model) if self.config.deep_overlap_fallback else None
        # the compiled call's test for it (inradius 0: never deep, when the fallback is off)
        d = self.deep_overlap
        self._deep_arrays = ((d.center, d.inradius, d.lo, d.hi, d.margin) if d is not None else
                             (np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n)))
        self.resolution = PatchResolution(model, self.config.exact_primitives)  # patches small for their grid

    @property
    def thread_mode(self) -> str:
        """How the compiled CPU calls use Numba's threads: ``"auto"`` (default: by size and measured
        cost, :class:`~hydro.contact.threads.ThreadChoice`), ``"serial"`` (never) or ``"threaded"``
        (every call, when Numba has more than one thread), from the next call on."""
        return self._thread_mode

    @thread_mode.setter
    def thread_mode(self, mode):
        if mode not in ("auto", "serial", "threaded"):
            raise InputError(f"thread_mode must be 'auto', 'serial' or 'threaded', got {mode!r}")
        self._thread_mode = mode
        if mode != "auto":
            self._threaded = mode == "threaded" and numba.get_num_threads() > 1
            self._one_thread_last = False

    @property
    def next_build(self):
        """The compiled CPU call the next ``collide`` runs, as a key (None on CUDA or with
        ``stage_timings``): :attr:`thread_mode` (by default the measured choice of
        :class:`~hydro.contact.threads.ThreadChoice`) may move the next one to the threaded build,
        which compiles (or loads) then. The command line calls once more before it times a call."""
        if self.device.is_cuda or self.stage_timings:
            return None
        return (self._threaded, self.polygons, self.config.reduce_contacts)

    # ------------------------------------------------------------------------------------------
    def collide(self, shape_poses, *, pairs=None, triangles: bool = False) -> CollisionResult:
        """Contacts of all hydroelastic pairs at world ``shape_poses`` (S, 7).

        ``pairs`` (optional, (K, 2) shape indices) skips the broad phase and collides exactly
        those pairs; both shapes of each must be hydroelastic with an SDF. A pair is unordered and
        collided once however often it is listed ((0, 1) and (1, 0) are one pair): the result's
        ``pair_shape_a``/``pair_shape_b`` hold the distinct pairs, in order of first appearance. ``triangles``: also
        return the patch triangles' vertices (``result.triangles``, one row per ``result.patch``
        contact), for drawing the patch.
        """
        if self._compiled:
            return self._collide_compiled(shape_poses, pairs, triangles)
        poses = self._check_poses(shape_poses)
        if not isinstance(triangles, (bool, np.bool_)):
            raise InputError(f"triangles must be True or False, got {triangles!r}")
        call = CallRecord(self.device)
        n_reduced = None
        with call.stage("broad_phase"):
            n_pairs = self._broad_phase(call, poses, pairs)
        with call.stage("pair_setup"):
            n_bricks = self._pair_setup(call, n_pairs)
        with call.stage("refine"):
            n_blocks = self._refine(call, n_pairs, n_bricks)
        with call.stage("marching_cubes"):
            n_tri = self._march(call, n_pairs, n_blocks, triangles)
        self.calls += 1
        if self.config.reduce_contacts:
            with call.stage("reduce"):
                n_reduced = self._reduce(call, n_pairs, n_tri)
        with call.stage("download"):
            results = self._download(n_pairs, n_tri, n_reduced, triangles)
        if self.deep_overlap is not None:
            with call.stage("deep_overlap"):
                self._add_deep_overlap(poses, results, call.counts, stacklevel=5)
        self.resolution.check(self.calls, results["contacts"], results["pair_shape_a"], results["pair_shape_b"],
                                  self._routes)
        call.handle_overflow(self.config.overflow)
        return CollisionResult(**results, overflow=call.overflow, timings_ms=call.timings_ms, counts=call.counts)

    def _add_deep_overlap(self, poses, results, counts, stacklevel):
        """The fallback contacts of pairs in deep overlap, after the patch's (``results``)."""
        # the warning names the caller of CollisionPipeline.collide (``stacklevel``: the frames
        # from the fallback's to it)
        extra = self.deep_overlap.contacts(poses, results["pair_shape_a"], results["pair_shape_b"], results["contacts"],
                                           stacklevel=stacklevel)
        if extra is not None:  # result.patch stays the meshed patch
            extra.set_pair_materials(self.shape_material)
            results["contacts"] = Contacts.concatenate([results["contacts"], extra])
        counts["deep_overlap"] = 0 if extra is None else len(extra)

    def _collide_compiled(self, shape_poses, pairs, triangles) -> CollisionResult:
        """:meth:`collide` on the CPU: one compiled call (:func:`~hydro.contact.cpu_driver.cpu_collide`)
        and what it must return, nothing else in Python per call — the pair list copied out, the
        contact rows copied into a table whose columns are made when read (:class:`PackedContacts`),
        the deep-overlap fallback only when the call found a pair near it, counts from the status."""
        t0 = time.perf_counter()
        poses = self._check_poses(shape_poses)
        if not isinstance(triangles, (bool, np.bool_)):
            raise InputError(f"triangles must be True or False, got {triangles!r}")
        overflow = []
        status = self._compiled_call(overflow, poses, pairs, triangles)
        self.calls += 1
        t1 = time.perf_counter()
        counts = self._counts(status)
        n_pairs, n_tri = status[S_PAIRS], status[S_CONTACTS]
        if n_pairs or triangles:
            results = self._download(n_pairs, n_tri, status[S_REDUCED] if self.config.reduce_contacts else None,
                                     triangles)
        else:  # nothing to copy: no pair, so no contact
            none = np.empty(0, np.int32)
            results = dict(contacts=self._no_contacts(), pair_shape_a=none, pair_shape_b=none.copy(), patch=None,
                           patch_loader=self._no_contacts, triangles=None)
        t2 = time.perf_counter()
        timings = {"stages": (t1 - t0) * 1e3, "download": (t2 - t1) * 1e3}
        if self.deep_overlap is not None:
            if status[S_DEEP]:
                self._add_deep_overlap(poses, results, counts, stacklevel=6)
                timings["deep_overlap"] = (time.perf_counter() - t2) * 1e3
            else:
                counts["deep_overlap"] = 0
                timings["deep_overlap"] = 0.0
        if self.calls == 1:  # patches small for their grid: looked at on the first call
            self.resolution.check(self.calls, results["contacts"], results["pair_shape_a"], results["pair_shape_b"],
                                  self._routes)
        if overflow:
            call = CallRecord(self.device)
            call.overflow = overflow
            call.handle_overflow(self.config.overflow)
        return CollisionResult(**results, overflow=overflow, timings_ms=timings, counts=counts)

    def _counts(self, status) -> dict:
        """A compiled call's counts, from its status (a list)."""
        counts = {"pairs": status[S_PAIRS], "candidate_bricks": status[S_BRICKS], f"cells_{BRICK}": status[S_CELLS8],
                  f"cells_{BRICK // 2}": status[S_CELLS4], "cells_2": status[S_BLOCKS],
                  "triangles": status[S_TRIANGLES], "polygon_triangles": status[S_POLYGON_TRIANGLES]}
        if self.config.reduce_contacts:
            counts["reduced"] = status[S_REDUCED]
        return counts

    # -- all stages in one compiled call (the CPU) --------------------------------------------------
    def _setting_buffers(self, setting, triangles):
        """The buffers a capacity setting sizes (grown together)."""
        ws = self.workspace
        if setting == "pair_capacity":
            return ws.pair_buffers
        if setting == "cell_capacity":
            return (ws.cell_flags, ws.cell_offsets, ws.cell_masks) + ws.cells[0] + ws.cells[1]
        if setting == "block_capacity":
            return ws.block_pair, ws.block_ijk, ws.block_corners, ws.block_counts, ws.block_offsets
        if setting == "contact_capacity":
            return (ws.contact_f, ws.contact_i) + ((ws.triangles(),) if triangles else ())
        return ws.reduced_f, ws.reduced_i

    def _driver_arguments(self, triangles):
        """The compiled call's arguments after the poses and pairs, up to the status (rebuilt
        when a buffer is reallocated), and the capacities they carry."""
        ws = self.workspace
        cfg = self.config
        uploads = ws.uploads
        for name, shape, dtype in (("aabb", (self.shape_count, 6), np.float64), ("rot", (self.shape_count, 9), np.float64),
                                   ("center", (self.shape_count, 3), np.float64),
                                   ("half", (self.shape_count, 3), np.float64),
                                   ("order", (len(self.hydro_shapes),), np.int32)):
            if name not in uploads or uploads[name].shape != shape:
                uploads[name] = np.empty(shape, dtype)
        groups = [self._setting_buffers(name, triangles) for name in SETTINGS]
        capacities = np.array([min(b.capacity for b in g) for g in groups], dtype=np.int64)
        explicit = np.array([g[0].explicit is not None for g in groups], dtype=np.bool_)
        ws.reduction.ensure(int(capacities[0]))
        red = ws.reduction
        settings = (exact_code(cfg), self.polygons, interface_code(cfg.interface),
                    float(cfg.mc_edge_clamp_min), bool(cfg.reduce_contacts), int(cfg.max_contacts_per_pair),
                    bool(triangles), float(cfg.polygon_cells))
        self._pair_view = PairView(ws.pair_f.array, ws.pair_i.array)
        args = (self.box_lo, self.box_hi, self.shape_pad, self.hydro_shapes, self._shape_arrays, self.pair_filter,
                self.sdf_view, self._pair_view, settings, capacities, explicit,
                (uploads["aabb"], uploads["rot"], uploads["center"], uploads["half"], uploads["order"],
                 ws.sweep_counts, ws.sweep_offsets, ws.pair_a.array, ws.pair_b.array, ws.pair_counts.array,
                 ws.pair_offsets.array, ws.polygon_scratch.array, ws.polygon_counts.array, ws.polygon_offsets.array),
                (ws.cell_flags.array, ws.cell_offsets.array, ws.cell_masks.array, ws.cells[0][0].array,
                 ws.cells[0][1].array, ws.cells[1][0].array, ws.cells[1][1].array),
                (ws.block_pair.array, ws.block_ijk.array, ws.block_corners.array, ws.block_counts.array,
                 ws.block_offsets.array),
                (ws.contact_f.array, ws.contact_i.array, ws.triangles().array if triangles else ws.no_triangles),
                (red.groups, red.slot_f, red.slot_i, red.counts, red.offsets, ws.reduced_f.array, ws.reduced_i.array),
                self._deep_arrays)
        return args, capacities

    def _compiled_call(self, overflow, poses, pairs, triangles):
        """Every stage in :func:`~hydro.contact.cpu_driver.cpu_collide`, growing automatic
        buffers and calling again when it asks; returns its status (a list: the counts) and
        appends what an explicit capacity clipped to ``overflow``."""
        ws = self.workspace
        if pairs is None:
            explicit_pairs, n_explicit = self._no_pairs, -1
        else:
            explicit_pairs = self._check_pairs(pairs)
            n_explicit = len(explicit_pairs)
            if n_explicit == 0:
                explicit_pairs = self._no_pairs
        status = self._status
        threaded = self._threaded
        if self._one_thread_last and numba.get_num_threads() > 1:  # threads back: the plan before
            threaded = self.thread_choice.resume()
        timed = True
        t0 = time.perf_counter()
        while True:
            key = (bool(triangles), Buffer.generation, ws.reduction.pairs)
            if self._driver_key != key:
                self._driver_args, capacities = self._driver_arguments(triangles)
                self._driver_key = key
                self._entries.clear()  # entry points for the previous arguments' types
            args = (poses, explicit_pairs, n_explicit, *self._driver_args, status)
            entry_key = (threaded, explicit_pairs.dtype.str, explicit_pairs.flags.c_contiguous)
            entry = self._entries.get(entry_key)
            if entry is None:
                # the first call of these argument types goes through the dispatcher (compiling
                # or loading); later ones call its compiled entry point directly, which skips
                # typing ~70 arguments (12 µs of a 0.2 ms box-on-box call)
                build = cpu_collide_build(threaded=threaded, polygons=self.polygons,
                                          reduce=self.config.reduce_contacts)
                known = len(build.overloads)
                build(*args)
                if len(build.overloads) != known:
                    timed = False  # it compiled, or loaded from the disk cache
                sig = tuple(build.typeof_pyval(a) for a in args)
                if sig in build.overloads:
                    self._entries[entry_key] = build.overloads[sig].entry_point
            else:
                entry(*args)
            if status[S_CODE] != GROW:
                break
            timed = False
            reserve(int(status[S_REQUIRED]), *self._setting_buffers(SETTINGS[int(status[S_SETTING])], triangles))
        seconds = time.perf_counter() - t0
        st = status.tolist()
        n_pairs, n_bricks, n_blocks, n_tri = st[S_PAIRS], st[S_BRICKS], st[S_BLOCKS], st[S_TRIANGLES]
        if max(st[S_OVERFLOW:S_OVERFLOW + len(SETTINGS)]) >= 0:
            capacities = self._driver_args[9]
            for k, setting in enumerate(SETTINGS):
                if st[S_OVERFLOW + k] >= 0:
                    overflow.append(Overflow(setting, int(capacities[k]), st[S_OVERFLOW + k]))
        # threads for the next call: by this call's size and what the two modes cost (a small
        # scene never compiles or starts them; threads.ThreadChoice)
        mode = self._thread_mode
        self._one_thread_last = False
        if mode == "auto":
            if threaded or _worth_threads(n_pairs, n_bricks, n_blocks, n_tri):
                threads = numba.get_num_threads()
                self._threaded = self.thread_choice.record(threaded, seconds, n_pairs, n_bricks, n_blocks, n_tri,
                                                           threads, timed)
                self._one_thread_last = threads <= 1
            else:
                self._threaded = False
        else:
            self._threaded = mode == "threaded" and numba.get_num_threads() > 1
        return st

    # -- the stages --------------------------------------------------------------------------------
    def _broad_phase(self, call, poses, pairs) -> int:
        """Candidate pairs into ``pair_a``/``pair_b`` (swept, or the given ``pairs``); their count."""
        dev = self.device
        ws = self.workspace
        aabb, rot, center, half = shape_boxes(poses, self.box_lo, self.box_hi, self.shape_pad)
        ws.upload("rot", rot)
        ws.upload("pos", poses[:, :3])
        if pairs is None:
            order, axis = sweep_order(aabb, self.hydro_shapes)
            n_sorted = len(order)
            inputs = (ws.upload("order", order), n_sorted, axis, ws.upload("aabb", aabb), self.pair_filter,
                      ws.uploads["rot"], ws.upload("center", center), ws.upload("half", half))
            n_pairs = self._count_scan_scatter(call, SWEEP, n_sorted, inputs, ws.sweep_counts, ws.sweep_offsets,
                                               (ws.pair_a, ws.pair_b), "pair_capacity", reserved=ws.pair_buffers)
        else:
            explicit = self._check_pairs(pairs)
            capacity = reserve(len(explicit), *ws.pair_buffers)
            call.note_overflow("pair_capacity", capacity, len(explicit))
            n_pairs = min(len(explicit), capacity)
            if n_pairs:
                dev.copy_into(ws.pair_a.array, explicit[:n_pairs, 0])
                dev.copy_into(ws.pair_b.array, explicit[:n_pairs, 1])
        call.counts["pairs"] = n_pairs
        return n_pairs

    def _pair_setup(self, call, n_pairs) -> int:
        """Each pair's transforms, constants and range of B's bricks; the candidate brick count."""
        ws = self.workspace
        self._pair_view = PairView(ws.pair_f.array, ws.pair_i.array)
        self.device.launch(PAIR_SETUP, n_pairs, ws.pair_a.array, ws.pair_b.array, self.d_shape_sdf,
                           self.d_shape_stiffness, self.d_shape_margin, self.d_shape_gap, self.d_shape_env,
                           ws.uploads["rot"], ws.uploads["pos"], exact_code(self.config), self.polygons,
                           self.sdf_view, self._pair_view, ws.pair_counts.array)
        n_bricks = self.device.exclusive_scan(ws.pair_counts.array, ws.pair_offsets.array, n_pairs) if n_pairs else 0
        call.counts["candidate_bricks"] = n_bricks
        return n_bricks

    def _refine(self, call, n_pairs, n_bricks) -> int:
        """Candidate bricks → cells of 4 voxels → blocks of 2 that may hold the patch; the block count."""
        ws = self.workspace
        interface = interface_code(self.config.interface)
        capacity = reserve(n_bricks, ws.cell_flags, ws.cell_offsets)
        call.note_overflow("cell_capacity", capacity, n_bricks)
        inputs = (interface, ws.pair_offsets.array, n_pairs, self._pair_view, self.sdf_view)
        n_cells = self._count_scan_scatter(call, REFINE_BRICKS, min(n_bricks, capacity), inputs, ws.cell_flags.array,
                                           ws.cell_offsets.array, ws.cells[0], "cell_capacity",
                                           scatter_serial_below=SERIAL_BELOW)
        call.counts[f"cells_{BRICK}"] = n_cells
        size = BRICK
        for level in range(2):
            size //= 2  # the children's edge
            in_pair, in_ijk = ws.cells[level]
            if size == 2:
                out, setting = (ws.block_pair, ws.block_ijk), "block_capacity"
            else:
                out, setting = ws.cells[1 - level], "cell_capacity"
            reserve(n_cells, ws.cell_masks, ws.cell_flags, ws.cell_offsets)
            inputs = (2 * size, interface, in_pair.array, in_ijk.array, self._pair_view, self.sdf_view,
                      ws.cell_masks.array)
            n_cells = self._count_scan_scatter(call, REFINE_CHILDREN, n_cells, inputs, ws.cell_flags.array,
                                               ws.cell_offsets.array, out, setting, scatter_serial_below=SERIAL_BELOW)
            call.counts[f"cells_{size}"] = n_cells
        return n_cells

    def _march(self, call, n_pairs, n_blocks, triangles) -> int:
        """Marching cubes on the blocks (stage 4) and the polygons of box pairs (stage 4b), one
        contact per patch triangle, in pair order; the contact count.

        Both count first; the scatter passes then place each pair's triangles after those of the
        pairs before it, whichever stage made them."""
        dev = self.device
        ws = self.workspace
        reserve(n_blocks, ws.block_corners, ws.block_counts, ws.block_offsets)
        polygons = self.polygons and n_pairs > 0
        outputs = (ws.contact_f, ws.contact_i) + ((ws.triangles(),) if triangles else ())
        out_arrays = tuple(o.array for o in outputs) + (() if triangles else (ws.no_triangles,))
        mc_inputs = (interface_code(self.config.interface), float(self.config.mc_edge_clamp_min), ws.block_pair.array,
                     ws.block_ijk.array, self._pair_view, self.sdf_view, ws.block_corners.array, polygons,
                     ws.polygon_offsets.array, ws.block_counts.array, ws.block_offsets.array)
        dev.launch(MARCHING_CUBES, n_blocks, False, *mc_inputs, *out_arrays, 0)
        n_mc = dev.exclusive_scan(ws.block_counts.array, ws.block_offsets.array, n_blocks)
        n_poly = 0
        if polygons:
            poly_inputs = (self._pair_view, self.sdf_view, ws.polygon_scratch.array, float(self.config.polygon_cells),
                           ws.block_pair.array, n_blocks, ws.block_offsets.array, ws.polygon_counts.array,
                           ws.polygon_offsets.array)
            dev.launch(POLYTOPE_CONTACTS, n_pairs, False, *poly_inputs, *out_arrays, 0)
            n_poly = dev.exclusive_scan(ws.polygon_counts.array, ws.polygon_offsets.array, n_pairs)
        total = n_mc + n_poly
        capacity = reserve(total, *outputs)
        dev.launch(MARCHING_CUBES, n_blocks, True, *mc_inputs, *out_arrays, capacity)
        if polygons:
            dev.launch(POLYTOPE_CONTACTS, n_pairs, True, *poly_inputs, *out_arrays, capacity)
        call.note_overflow("contact_capacity", capacity, total)
        call.counts["triangles"] = n_mc
        call.counts["polygon_triangles"] = n_poly
        return min(total, capacity)

    def _reduce(self, call, n_pairs, n_tri) -> int:
        """A few contacts per pair that keep its force and torque; their count."""
        ws = self.workspace
        capacity = reserve(n_pairs * self.config.max_contacts_per_pair, ws.reduced_f, ws.reduced_i)
        n_reduced, required = reduce_on_device(self.device, ws.reduction, n_pairs, n_tri, ws.contact_f.array,
                                               ws.contact_i.array, ws.reduced_f.array, ws.reduced_i.array, capacity)
        call.note_overflow("reduced_contact_capacity", capacity, required)
        call.counts["reduced"] = n_reduced
        return n_reduced

    def _download(self, n_pairs, n_tri, n_reduced, triangles) -> dict:
        """The call's results on the host (the unreduced patch only when it is read)."""
        dev = self.device
        ws = self.workspace
        pair_host = dev.to_host(ws.pair_i.array[:n_pairs]) if n_pairs else np.zeros((0, PI_COUNT), np.int32)
        self._routes = pair_host[:, PI_ROUTE].copy()  # for the first call's resolution check
        load_patch = None
        if n_reduced is not None:
            contacts = self._contacts(ws.reduced_f, ws.reduced_i, n_reduced)
            patch = None

            def load_patch(n=n_tri, call_number=self.calls):
                if self.calls != call_number:
                    raise RuntimeError("the unreduced patch of an earlier collide call was overwritten by a "
                                       "later call; read result.patch before calling collide again")
                return self._contacts(ws.contact_f, ws.contact_i, n)
        else:
            contacts = patch = self._contacts(ws.contact_f, ws.contact_i, n_tri)
        tri = None
        if triangles:
            t = dev.to_host(ws.triangle_f.array[:n_tri]) if n_tri else np.zeros((0, TF_COUNT), np.float32)
            t = np.array(t, dtype=np.float64)
            tri = PatchTriangles(vertices=t[:, 0:9].reshape(-1, 3, 3), vertex_depth=t[:, 9:12],
                                 vertex_pressure=t[:, 12:15])
        return dict(contacts=contacts, pair_shape_a=pair_host[:, 0].copy(), pair_shape_b=pair_host[:, 1].copy(),
                    patch=patch, patch_loader=load_patch, triangles=tri)

    # -- helpers -------------------------------------------------------------------------------------
    def _count_scan_scatter(self, call, kernel, n, inputs, counts, offsets, outputs, setting, *, reserved=None,
                            scatter_serial_below=None) -> int:
        """Run ``kernel(i, write, *inputs, counts, offsets, *outputs, capacity)`` over ``n`` items
        twice. The count pass (``write`` False) writes each item's output count to ``counts``;
        their exclusive scan into ``offsets`` gives each item's first output; the buffers
        ``reserved`` (default: the :class:`Buffer` outputs) make room for the total; the scatter
        pass writes each item's outputs at its offset, below the capacity. An overflow is noted
        under ``setting``. Returns the outputs written."""
        dev = self.device

        def arrays():
            return tuple(o.array if isinstance(o, Buffer) else o for o in outputs)

        dev.launch(kernel, n, False, *inputs, counts, offsets, *arrays(), 0)
        total = dev.exclusive_scan(counts, offsets, n) if n else 0
        if reserved is None:
            reserved = [o for o in outputs if isinstance(o, Buffer)]
        capacity = reserve(total, *reserved)
        dev.launch(kernel, n, True, *inputs, counts, offsets, *arrays(), capacity, serial_below=scatter_serial_below)
        call.note_overflow(setting, capacity, total)
        return min(total, capacity)

    def _no_contacts(self) -> Contacts:
        return PackedContacts(np.empty((0, CF_COUNT), np.float32), np.empty((0, CI_COUNT), np.int32),
                              self.shape_material)

    def _contacts(self, buf_f, buf_i, n) -> Contacts:
        """The first ``n`` rows of a pair of contact buffers as a table of their own (copied; its
        columns made when read)."""
        f, i = buf_f.array[:n], buf_i.array[:n]
        if self.device.is_cuda:  # copies already
            f, i = (f.copy_to_host(), i.copy_to_host()) if n else (np.zeros((0, CF_COUNT), np.float32),
                                                                   np.zeros((0, CI_COUNT), np.int32))
        else:
            f, i = f.copy(), i.copy()
        return PackedContacts(f, i, self.shape_material)

    def _check_poses(self, shape_poses) -> np.ndarray:
        poses = float_array(shape_poses, "shape_poses")
        if poses.shape != (self.shape_count, 7):
            raise InputError(f"shape_poses must have shape ({self.shape_count}, 7), got {poses.shape}")
        out = np.empty((self.shape_count, 7))
        bad = normalized_poses_into(np.ascontiguousarray(poses), out)
        if bad >= 0:
            raise InputError(f"the pose of shape {self.model.shape_path[bad]} is not finite: {poses[bad].tolist()}")
        if bad < -1:
            return check_poses(poses, "shape pose")  # names the zero quaternion
        return out

    def _check_pairs(self, pairs) -> np.ndarray:
        arr = index_pairs(pairs, "pairs", self.shape_count)
        paths = self.model.shape_path
        for a, b in arr:
            for s in (a, b):
                if not 0 <= s < self.shape_count:
                    raise InputError(f"pair ({a}, {b}): shape index {s} is out of range [0, {self.shape_count - 1}]")
            if a == b:
                raise InputError(f"pair ({a}, {b}) pairs shape {paths[a]} with itself")
            for s, other in ((a, b), (b, a)):
                if not self.is_hydro[s]:
                    raise InputError(f"shape {paths[s]} is not hydroelastic, so it cannot be paired with "
                                     f"{paths[other]} for hydroelastic contact")
        arr = np.sort(arr, axis=1).astype(np.int32)
        # a pair is unordered and names one contact: (0, 1) twice, or (0, 1) and (1, 0), is collided
        # once (it doubled the force before, issue 27); the first occurrence keeps its place
        if len(arr) > 1:
            _, first = np.unique(arr, axis=0, return_index=True)
            if len(first) < len(arr):
                arr = np.ascontiguousarray(arr[np.sort(first)])
        return arr
