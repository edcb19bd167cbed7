"""The hydroelastic contact pipeline: calls the stages in order and checks their buffers.

    broad phase → pair setup → refinement (bricks of 8 voxels → 4 → blocks of 2) → marching cubes
    on the blocks' voxels + contacts
    → (optional) contact reduction → download

:class:`HydroelasticPipeline` holds a :class:`~hydro.contact.workspace.ContactWorkspace` of
device buffers that is reused across calls (see there for how capacities grow or overflow).
Every stage that makes a variable number of outputs is count → exclusive scan → reserve →
scatter (:meth:`HydroelasticPipeline._count_scan_scatter`), so the order is the same on every
target.
"""

from __future__ import annotations

import numpy as np

from ..arguments import float_array, index_pairs, model_like
from ..backend import SERIAL_BELOW, get_device
from ..errors import InputError
from ..sdf.layout import BRICK
from ..scene.material import DEFAULT_MATERIAL, material_row
from ..transforms import check_poses
from .broad_phase import SWEEP, pair_filter, shape_boxes, sweep_order
from .config import hydroelastic_config
from .contacts import TF_COUNT, contacts_from_buffers
from .deep_overlap import DeepOverlap, shape_size_findings, warn_findings
from .interface import interface_code
from .marching import MARCHING_CUBES
from .pair_setup import PAIR_SETUP, PI_COUNT, PairView
from .reduction import reduce_on_device
from .refine import REFINE_BRICKS, REFINE_CHILDREN
from .types import CollisionResult, Contacts, PatchTriangles
from .workspace import Buffer, CallRecord, ContactOverflowError, ContactWorkspace, reserve

__all__ = ["ContactOverflowError", "HydroelasticPipeline"]


class HydroelasticPipeline:
    """Hydroelastic contacts of a model's shapes at given poses, on the CPU or CUDA.

    ``model`` provides, per shape: ``shape_path``, ``shape_hydroelastic``, ``shape_sdf`` (index
    into ``sdfs``/``sdf_pack``, −1 none), ``shape_stiffness``, ``shape_margin``, ``shape_gap``,
    ``shape_env``, ``shape_body``; and ``sdfs`` with ``sdf_pack``. ``config`` is a
    :class:`~hydro.contact.config.HydroelasticConfig` or a :class:`~hydro.contact.config.NewtonConfig`
    (default: the one set by :func:`~hydro.contact.config.configure_newton`).
    """

    def __init__(self, model, config=None, *, device="cpu"):
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
        # the model's limits (docs/limits.md): narrow shapes and huge margins reported once, a
        # fallback contact for pairs in deep overlap
        self._limit_warnings = set()
        warn_findings(shape_size_findings(model), self._limit_warnings)
        self.deep_overlap = DeepOverlap(model) if self.config.deep_overlap_fallback else None

    # ------------------------------------------------------------------------------------------
    def collide(self, shape_poses, *, pairs=None, triangles: bool = False) -> CollisionResult:
        """Contacts of all hydroelastic pairs at world ``shape_poses`` (S, 7).

        ``pairs`` (optional, (K, 2) shape indices) skips the broad phase and collides exactly
        those pairs; both shapes of each must be hydroelastic with an SDF. ``triangles``: also
        return the patch triangles' vertices (``result.triangles``, one row per ``result.patch``
        contact), for drawing the patch.
        """
        poses = self._check_poses(shape_poses)
        if not isinstance(triangles, (bool, np.bool_)):
            raise InputError(f"triangles must be True or False, got {triangles!r}")
        call = CallRecord(self.device)
        with call.stage("broad_phase"):
            n_pairs = self._broad_phase(call, poses, pairs)
        with call.stage("pair_setup"):
            n_bricks = self._pair_setup(call, n_pairs)
        with call.stage("refine"):
            n_blocks = self._refine(call, n_pairs, n_bricks)
        with call.stage("marching_cubes"):
            n_tri = self._march(call, n_blocks, triangles)
        self.calls += 1
        n_reduced = None
        if self.config.reduce_contacts:
            with call.stage("reduce"):
                n_reduced = self._reduce(call, n_pairs, n_tri)
        with call.stage("download"):
            results = self._download(n_pairs, n_tri, n_reduced, triangles)
        if self.deep_overlap is not None:
            with call.stage("deep_overlap"):
                extra = self.deep_overlap.contacts(poses, results["pair_shape_a"], results["pair_shape_b"],
                                                   results["contacts"])
            if extra is not None:  # result.patch stays the meshed patch
                extra.set_pair_materials(self.shape_material)
                results["contacts"] = Contacts.concatenate([results["contacts"], extra])
            call.counts["deep_overlap"] = 0 if extra is None else len(extra)
        call.handle_overflow(self.config.overflow)
        return CollisionResult(**results, overflow=call.overflow, timings_ms=call.timings_ms, counts=call.counts)

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
                           ws.uploads["rot"], ws.uploads["pos"], self.sdf_view, self._pair_view, ws.pair_counts.array)
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

    def _march(self, call, n_blocks, triangles) -> int:
        """Marching cubes on the blocks and one contact per patch triangle; the contact count."""
        ws = self.workspace
        reserve(n_blocks, ws.block_corners, ws.block_counts, ws.block_offsets)
        inputs = (interface_code(self.config.interface), float(self.config.mc_edge_clamp_min), ws.block_pair.array,
                  ws.block_ijk.array, self._pair_view, self.sdf_view, ws.block_corners.array)
        outputs = (ws.contact_f, ws.contact_i, ws.triangles() if triangles else ws.no_triangles)
        n_tri = self._count_scan_scatter(call, MARCHING_CUBES, n_blocks, inputs, ws.block_counts.array,
                                         ws.block_offsets.array, outputs, "contact_capacity")
        call.counts["triangles"] = n_tri
        return n_tri

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

    def _contacts(self, buf_f, buf_i, n) -> Contacts:
        if n == 0:
            return Contacts.empty(0)
        c = contacts_from_buffers(self.device.to_host(buf_f.array[:n]), self.device.to_host(buf_i.array[:n]))
        c.set_pair_materials(self.shape_material)
        return c

    def _check_poses(self, shape_poses) -> np.ndarray:
        poses = float_array(shape_poses, "shape_poses")
        if poses.shape != (self.shape_count, 7):
            raise InputError(f"shape_poses must have shape ({self.shape_count}, 7), got {poses.shape}")
        bad = ~np.all(np.isfinite(poses), axis=1)
        if bad.any():
            s = int(np.flatnonzero(bad)[0])
            raise InputError(f"the pose of shape {self.model.shape_path[s]} is not finite: {poses[s].tolist()}")
        return check_poses(poses, "shape pose")

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
        return np.sort(arr, axis=1).astype(np.int32)
