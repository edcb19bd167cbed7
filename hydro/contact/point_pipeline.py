"""The default contact path: point contacts of every pair that may collide but is not hydroelastic.

    broad phase (sweep and prune + planes, the pair rule) → narrow phase (one pair per item)
    → compaction (count → scan → scatter into the contact table) → download

:class:`PointContactPipeline` keeps its device buffers between calls. A pair takes this path
unless both shapes take the hydroelastic one (hydroelastic, with an SDF, collision-enabled, and
``HydroelasticConfig.enabled``); :class:`~hydro.contact.collision.CollisionPipeline` runs both.
Capacities: the point contacts of a call are limited by ``CollisionConfig.rigid_contact_max``
(automatic when None); an overflow is counted and reported with that setting
(``CollisionConfig.overflow``). Candidate pairs and scratch rows grow as needed.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numba
import numpy as np

from ..backend import SERIAL_BELOW
from ..errors import InputError
from ..geometry import Heightfield, Mesh
from ..geometry.support import ShapeView, pack_shapes
from ..scene.material import (MAT_CONTACT_DAMPING, MAT_CONTACT_STIFFNESS, MAT_DYNAMIC_FRICTION,
                              MAT_STATIC_FRICTION)
from ..sdf import SDFPack, build_sdf
from ..transforms import check_poses, quat_to_matrix
from .broad_phase import POINT_SWEEP, pair_filter, shape_boxes, sweep_order
from .config import collision_config
from .manifold import SCRATCH_WIDTH
from .narrow_phase import (COMPACT, NARROW, PI_COUNT, PI_ENV, PI_PAIR, PI_SHAPE_A, PI_SHAPE_B, PI_SPECULATIVE,
                           PT_COUNT, PT_DAMPING, PT_DEPTH, PT_FORCE, PT_FRICTION, PT_NORMAL, PT_POINT,
                           PT_STATIC_FRICTION, PT_STIFFNESS, SM_COUNT)
from .point_pairs import PAIR_CONTACT_MAX, SLOT_WIDTH
from .threads import ThreadChoice
from .types import CONTACT_POINT, Contacts
from .workspace import Buffer, CallRecord, reserve, upload_kept

__all__ = ["PointContactPipeline", "hydroelastic_routed", "point_contacts_from_buffers"]

_NEVER = 1 << 62  # a launch's serial_below that keeps it serial


def hydroelastic_routed(model, config) -> np.ndarray:
    """(S,) bool: the shapes that take the hydroelastic path under ``config`` (a CollisionConfig):
    hydroelastic, with an SDF, collision-enabled, and ``hydroelastic.enabled``. A pair is
    hydroelastic iff both of its shapes are."""
    n = model.shape_count
    if not config.hydroelastic.enabled:
        return np.zeros(n, bool)
    return (np.asarray(model.shape_hydroelastic, bool) & (np.asarray(model.shape_sdf) >= 0)
            & np.asarray(model.shape_collision_enabled, bool))


def contact_geometry(model) -> list:
    """The geometry the point path collides, per shape: the model's, but a heightfield is its
    closed slab (:meth:`~hydro.geometry.Heightfield.to_mesh`, a triangle mesh: it takes the mesh
    route, its distance field and its vertices, on the CPU and CUDA alike; cached on the model)."""
    cache = model.__dict__.setdefault("_point_path_slabs", {})
    out = []
    for g in model.shape_geometry:
        if isinstance(g, Heightfield):
            if g.key() not in cache:
                cache[g.key()] = g.to_mesh()
            g = cache[g.key()]
        out.append(g)
    return out


def _mesh_fields(model, geoms=None):
    """Distance fields of the model's triangle-mesh colliders (``geoms``: the geometry collided,
    default the model's): (SDFPack, per-shape index, −1 none). The model's own SDFs are reused; a
    mesh without one gets one built here (cached on the model)."""
    n = model.shape_count
    geoms = model.shape_geometry if geoms is None else geoms
    index = np.full(n, -1, np.int32)
    meshes = [s for s in range(n) if type(geoms[s]) is Mesh and model.shape_collision_enabled[s]]
    if not meshes:
        return model.sdf_pack if len(model.sdfs) else SDFPack([]), index
    cache = model.__dict__.setdefault("_point_path_sdfs", {})
    extra = []
    for s in meshes:
        if model.shape_sdf[s] >= 0:
            index[s] = model.shape_sdf[s]
            continue
        g = geoms[s]
        settings = model.shape_sdf_settings[s]
        if isinstance(model.shape_geometry[s], Heightfield):  # its slab: full precision (resting contacts
            settings = replace(settings, texture_format="float32")  # are µm deep; uint16 steps are ~3 µm)
        key = (g.key(), settings, float(model.shape_margin[s] + model.shape_gap[s]))
        if key not in cache:
            try:
                g.check_watertight()
            except ValueError as exc:
                raise InputError(f"shape {model.shape_path[s]}: a triangle-mesh collider needs a closed mesh for its "
                                 f"distance field ({exc}); use its convex hull (physics:approximation = "
                                 f"\"convexHull\") or close the mesh") from None
            cache[key] = build_sdf(g, key[1], extra_padding=key[2])
        extra.append((s, cache[key]))
    if not extra:
        return model.sdf_pack, index
    sdfs = list(model.sdfs)
    for s, sdf in extra:
        index[s] = len(sdfs)
        sdfs.append(sdf)
    return SDFPack(sdfs), index


class PointContactPipeline:
    """Point contacts of a :class:`~hydro.scene.model.Model`'s shapes at given poses, on the CPU or
    CUDA (see the module docstring). ``config``: a ``NewtonConfig``, ``CollisionConfig`` or
    ``HydroelasticConfig`` (default: the active configuration)."""

    def __init__(self, model, config=None, *, device="cpu"):
        from ..backend import get_device

        self.model = model
        self.config = collision_config(config)
        self.device = dev = get_device(device)
        n = model.shape_count
        self.shape_count = n
        geoms = contact_geometry(model)  # heightfields as their closed slabs (triangle meshes)
        self.routed = hydroelastic_routed(model, self.config)
        enabled = np.asarray(model.shape_collision_enabled, bool)
        material = np.asarray(model.shape_material, dtype=np.float64)
        for s in range(n):
            if enabled[s] and not np.all(np.isfinite(np.delete(material[s], MAT_CONTACT_DAMPING))):
                raise InputError(f"shape {model.shape_path[s]}: its contact material has a non-finite value "
                                 f"({material[s].tolist()})")
        host = pack_shapes(geoms)
        pack, mesh_sdf = _mesh_fields(model, geoms)
        self.sdf_pack = pack
        mat = np.empty((n, SM_COUNT))
        mat[:, 0] = material[:, MAT_CONTACT_STIFFNESS]
        mat[:, 1] = material[:, MAT_CONTACT_DAMPING]
        mat[:, 2] = material[:, MAT_STATIC_FRICTION]
        mat[:, 3] = material[:, MAT_DYNAMIC_FRICTION]
        margin = np.asarray(model.shape_margin, dtype=np.float64)
        gap = np.asarray(model.shape_gap, dtype=np.float64)
        self.shapes = ShapeView(**{k: dev.asarray(v) for k, v in host.items()}, sdf=dev.asarray(mesh_sdf),
                                margin=dev.asarray(margin), gap=dev.asarray(gap), material=dev.asarray(mat))
        self.sdf_view = pack.view(dev)
        self.filter = pair_filter(model, dev)
        self.d_routed = dev.asarray(self.routed.astype(np.uint8))
        self.d_kind = dev.asarray(host["kind"])
        self.d_env = dev.asarray(np.asarray(model.shape_env, dtype=np.int32))
        planes = np.array([s for s in range(n) if not geoms[s].volumetric], dtype=np.int32)
        self.plane_count = len(planes)
        self.d_planes = dev.asarray(planes if len(planes) else np.zeros(1, np.int32))
        self.sweep_shapes = np.array([s for s in range(n) if geoms[s].volumetric and enabled[s]], dtype=np.int32)
        self.pad = margin + gap
        self.d_pad = dev.asarray(self.pad)
        self.d_bound = dev.asarray(host["bound"])
        lo = np.zeros((n, 3))
        hi = np.zeros((n, 3))
        for s in range(n):
            if geoms[s].volumetric:
                lo[s], hi[s] = geoms[s].local_aabb()
        self.box_lo, self.box_hi = lo, hi
        cfg = self.config
        pair0 = max(64, 2 * len(self.sweep_shapes))

        def grows(tail, dtype, initial):
            return Buffer(dev, "point_pair_capacity", tail, dtype, None, initial)

        self.pair_a = grows((), np.int32, pair0)
        self.pair_b = grows((), np.int32, pair0)
        self.pair_flag = grows((), np.int32, pair0)
        self.pair_scratch = grows((), np.int64, pair0)
        self.pair_count = grows((), np.int32, pair0)
        self.pair_offsets = grows((), np.int64, pair0)
        self.slots = grows((SLOT_WIDTH,), np.float64, pair0 * PAIR_CONTACT_MAX)
        self.pair_buffers = (self.pair_a, self.pair_b, self.pair_flag, self.pair_scratch, self.pair_count,
                             self.pair_offsets)
        self.scratch = grows((SCRATCH_WIDTH,), np.float64, 16)
        out0 = cfg.rigid_contact_max or 4 * pair0
        self.out_f = Buffer(dev, "rigid_contact_max", (PT_COUNT,), np.float32, cfg.rigid_contact_max, out0)
        self.out_i = Buffer(dev, "rigid_contact_max", (PI_COUNT,), np.int32, cfg.rigid_contact_max, out0)
        self.sweep_counts = dev.empty(len(self.sweep_shapes) + 1, np.int64)
        self.sweep_offsets = dev.empty(len(self.sweep_shapes) + 1, np.int64)
        self._uploads = {}
        self.calls = 0
        # threads by measured work (a launch of fewer items than SERIAL_BELOW runs serially anyway)
        self.thread_choice = ThreadChoice(lambda pairs, bricks, shapes, triangles: max(pairs, shapes) >= SERIAL_BELOW)
        self._threaded = False
        self._threaded_calls = 0
        self._one_thread_last = False
        self._serial_below = _NEVER

    # ------------------------------------------------------------------------------------------
    def collide(self, shape_poses, *, call: CallRecord | None = None):
        """Point contacts at world ``shape_poses`` (S, 7). Returns ``(contacts, pair_shape_a,
        pair_shape_b, call)``: the contact table (``pair`` indexes this call's pairs), the pairs
        that passed the broad phase and the call's record (timings, counts, overflow). With
        ``call`` given (a :class:`~hydro.contact.workspace.CallRecord`) the stages are recorded in
        it and its overflow is left to the caller; otherwise it is handled here."""
        own = call is None
        call = call or CallRecord(self.device)
        poses = self._check_poses(shape_poses)
        threaded = self._threaded
        if self._one_thread_last and numba.get_num_threads() > 1:  # threads back: the plan before
            threaded = self.thread_choice.resume()
        # one thread: every launch runs its serial loop (threads.ThreadChoice decides)
        self._serial_below = None if threaded else _NEVER
        generation = Buffer.generation
        t0 = time.perf_counter()
        with call.stage("point_broad_phase"):
            n_pairs = self._broad_phase(call, poses)
        with call.stage("point_narrow_phase"):
            self._narrow(n_pairs)
        with call.stage("point_compact"):
            n_out = self._compact(call, n_pairs)
        if not self.device.is_cuda:
            # the first call, the first threaded one (they compile) and one that grew are not timed
            timed = self.calls > 0 and Buffer.generation == generation and (self._threaded_calls > 0 or not threaded)
            self._threaded_calls += threaded
            threads = numba.get_num_threads()
            self._threaded = self.thread_choice.record(threaded, time.perf_counter() - t0, n_pairs, 0,
                                                       len(self.sweep_shapes), 0, threads, timed)
            self._one_thread_last = threads <= 1
        with call.stage("point_download"):
            result = self._download(n_pairs, n_out)
        self.calls += 1
        if own:
            call.handle_overflow(self.config.overflow)
        return (*result, call)

    # -- the stages ----------------------------------------------------------------------------
    def _upload(self, name, host):
        return upload_kept(self.device, self._uploads, name, host)

    def _broad_phase(self, call, poses) -> int:
        dev = self.device
        rot = np.ascontiguousarray(quat_to_matrix(poses[:, 3:]).reshape(-1, 9))
        self.d_rot = self._upload("rot", rot)
        self.d_pos = self._upload("pos", poses[:, :3])
        aabb, _, _, _ = shape_boxes(poses, self.box_lo, self.box_hi, self.pad)
        order, axis = sweep_order(aabb, self.sweep_shapes)
        n_sorted = len(order)
        if n_sorted == 0:
            call.counts["point_pairs"] = 0
            return 0
        inputs = (self._upload("order", order), n_sorted, axis, self._upload("aabb", aabb), self.filter, self.d_routed,
                  self.d_kind, self.d_planes, self.plane_count, self.d_bound, self.d_pad, self.d_rot, self.d_pos)
        dev.launch(POINT_SWEEP, n_sorted, False, *inputs, self.sweep_counts, self.sweep_offsets,
                   self.pair_a.array, self.pair_b.array, self.pair_flag.array, 0, serial_below=self._serial_below)
        total = dev.exclusive_scan(self.sweep_counts, self.sweep_offsets, n_sorted)
        capacity = reserve(total, *self.pair_buffers)
        reserve(total * PAIR_CONTACT_MAX, self.slots)
        dev.launch(POINT_SWEEP, n_sorted, True, *inputs, self.sweep_counts, self.sweep_offsets,
                   self.pair_a.array, self.pair_b.array, self.pair_flag.array, capacity,
                   serial_below=self._serial_below)
        call.counts["point_pairs"] = total
        return total

    def _narrow(self, n_pairs):
        if n_pairs == 0:
            self.scratch_rows = 0
            return
        dev = self.device
        rows = dev.exclusive_scan(self.pair_flag.array, self.pair_scratch.array, n_pairs)
        self.scratch_rows = rows
        reserve(rows, self.scratch)
        dev.launch(NARROW, n_pairs, self.pair_a.array, self.pair_b.array, self.pair_scratch.array, self.shapes,
                   self.sdf_view, self.d_rot, self.d_pos, self.scratch.array, self.slots.array, self.pair_count.array,
                   serial_below=self._serial_below)

    def _compact(self, call, n_pairs) -> int:
        if n_pairs == 0:
            call.counts["point_contacts"] = 0
            return 0
        dev = self.device
        total = dev.exclusive_scan(self.pair_count.array, self.pair_offsets.array, n_pairs)
        capacity = reserve(total, self.out_f, self.out_i)
        dev.launch(COMPACT, n_pairs, self.pair_a.array, self.pair_b.array, self.pair_count.array,
                   self.pair_offsets.array, self.slots.array, self.shapes, self.d_env, self.out_f.array,
                   self.out_i.array, capacity, serial_below=self._serial_below)
        call.note_overflow("rigid_contact_max", capacity, total, owner="CollisionConfig")
        call.counts["point_contacts"] = total
        return min(total, capacity)

    def _download(self, n_pairs, n_out):
        dev = self.device
        pa = dev.to_host(self.pair_a.array[:n_pairs]).copy() if n_pairs else np.zeros(0, np.int32)
        pb = dev.to_host(self.pair_b.array[:n_pairs]).copy() if n_pairs else np.zeros(0, np.int32)
        if n_out == 0:
            return point_contacts_from_buffers(np.zeros((0, PT_COUNT), np.float32),
                                               np.zeros((0, PI_COUNT), np.int32)), pa, pb
        f = dev.to_host(self.out_f.array[:n_out])
        i = dev.to_host(self.out_i.array[:n_out])
        return point_contacts_from_buffers(f, i), pa, pb

    def _check_poses(self, shape_poses) -> np.ndarray:
        poses = np.asarray(shape_poses, dtype=np.float64)
        if poses.shape != (self.shape_count, 7):
            raise ValueError(f"shape_poses must have shape ({self.shape_count}, 7), got {poses.shape}")
        bad = ~np.all(np.isfinite(poses), axis=1)
        if bad.any():
            s = int(np.flatnonzero(bad)[0])
            raise ValueError(f"the pose of shape {self.model.shape_path[s]} is not finite: {poses[s].tolist()}")
        return check_poses(poses, "shape pose")


def point_contacts_from_buffers(f, i) -> Contacts:
    """A :class:`~hydro.contact.types.Contacts` table (kind ``CONTACT_POINT``) from packed host rows."""
    f = np.array(f, dtype=np.float32, copy=True)
    i = np.array(i, dtype=np.int32, copy=True)
    n = len(f)
    zero = np.zeros(n, np.float32)
    return Contacts(point=f[:, PT_POINT:PT_POINT + 3], normal=f[:, PT_NORMAL:PT_NORMAL + 3], area=zero,
                    depth=f[:, PT_DEPTH], pressure=zero.copy(), force=f[:, PT_FORCE], stiffness=f[:, PT_STIFFNESS],
                    weight=zero.copy(), shape_a=i[:, PI_SHAPE_A], shape_b=i[:, PI_SHAPE_B], env=i[:, PI_ENV],
                    speculative=i[:, PI_SPECULATIVE].astype(bool), pair=i[:, PI_PAIR],
                    kind=np.full(n, CONTACT_POINT, np.int32), damping=f[:, PT_DAMPING], friction=f[:, PT_FRICTION],
                    static_friction=f[:, PT_STATIC_FRICTION])

