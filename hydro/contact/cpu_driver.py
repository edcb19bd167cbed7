"""The hydroelastic pipeline on the CPU in one compiled call.

:class:`~hydro.contact.pipeline.HydroelasticPipeline` runs its stages from Python: a launch, a
scan and a reserve per step, about 25 launches per call. On a GPU that is how work reaches the
device; on the CPU the Python between the launches costs more than a small scene's whole work
(a box on a box: 1 ms of it, against 20 µs of kernels). :func:`cpu_collide` is the same sequence
compiled: it calls the very same kernel launchers (the serial or parallel build, by each kernel's
threshold, as :meth:`~hydro.backend.Device.launch` does) and the same scan, in the same order,
so it writes exactly what the staged path writes — the tests compare the two bit for bit. (One
shortcut: a serial call without box-pair polygons counts and writes the marching-cubes triangles
in one pass over the blocks in order, which puts each at the offset the scatter pass would.) It
is built for what a call needs (:func:`cpu_collide_build`).

Capacities work as in the staged path. Before a scatter, an automatic buffer too small for what
its count pass needs stops the call: ``status`` then holds :data:`GROW` with the setting and the
size needed, the pipeline grows those buffers and calls again (a call never writes past a
buffer). An explicit capacity clips the scatter and the overflow is recorded in ``status``.

``status`` (int64, ``STATUS_LEN``): ``[S_CODE]`` OK or GROW, ``[S_SETTING]``, ``[S_REQUIRED]``
(when growing), the counts of every stage (``S_PAIRS`` …) and, per setting, the count an
explicit capacity could not hold (``S_OVERFLOW + setting``, −1 when it held).
"""

from __future__ import annotations

import numpy as np

from ..backend import SERIAL_BELOW, cpu_exclusive_scan, cpu_jit, device_fn
from .broad_phase import SWEEP, shape_boxes_into, sweep_order_into
from .deep_overlap import _any_deep_candidate
from .marching import MARCHING_CUBES
from .pair_setup import PAIR_SETUP
from .polytope import POLYTOPE_CONTACTS
from .reduction import COMPACT, REDUCE
from .refine import REFINE_BRICKS, REFINE_CHILDREN

# settings (the order of HydroelasticPipeline.SETTINGS)
SET_PAIRS, SET_CELLS, SET_BLOCKS, SET_CONTACTS, SET_REDUCED = range(5)
SETTINGS = ("pair_capacity", "cell_capacity", "block_capacity", "contact_capacity", "reduced_contact_capacity")

OK, GROW = 0, 1
S_CODE, S_SETTING, S_REQUIRED = 0, 1, 2
S_PAIRS, S_BRICKS, S_CELLS8, S_CELLS4, S_BLOCKS, S_TRIANGLES, S_POLYGON_TRIANGLES, S_CONTACTS, S_REDUCED = range(3, 12)
S_OVERFLOW = 12  # + setting
S_DEEP = S_OVERFLOW + len(SETTINGS)  # 1: a pair may be in deep overlap (the host's fallback looks)
STATUS_LEN = S_DEEP + 1


def _launcher(k, threaded, serial_below=None):
    """``launch(n, args)`` of kernel ``k`` for compiled callers: its parallel build at or above the
    threshold when ``threaded``, else its loop (a serial driver never compiles a parallel build)."""
    parallel = k.parallel
    loop = k.linked
    threshold = k.serial_below if serial_below is None else serial_below

    @device_fn(inline=True)
    def launch(n, args):
        if threaded:  # a constant: pruned from a serial build, with the parallel build it names
            if n >= threshold:
                parallel(n, *args)
                return
        if n > 0:
            loop(n * 0, n, *args)

    return launch


@cpu_jit
def _fits(status, setting, capacity, explicit, required):
    """Whether ``required`` entries fit (or are clipped to an explicit capacity); else mark GROW."""
    if required <= capacity:
        return True
    if explicit:
        status[S_OVERFLOW + setting] = max(status[S_OVERFLOW + setting], required)
        return True
    status[S_CODE] = GROW
    status[S_SETTING] = setting
    status[S_REQUIRED] = required
    return False


_BUILDS = {}


def cpu_collide_build(*, threaded: bool, polygons: bool, reduce: bool):
    """The compiled call for one combination of what a call needs — threads (else every launch
    runs its serial loop), stage 4b, the reduction — built once each: Numba compiles only the
    stages a build can reach, so a small scene's first call compiles no parallel build and a
    scene without box pairs no stage 4b."""
    key = (bool(threaded), bool(polygons), bool(reduce))
    if key not in _BUILDS:
        _BUILDS[key] = _make_cpu_collide(*key)
    return _BUILDS[key]


def _make_cpu_collide(threaded, with_polygons, with_reduce):
    serial_below = SERIAL_BELOW  # the refinement scatters' threshold in the staged path
    sweep = _launcher(SWEEP, threaded)
    pair_setup = _launcher(PAIR_SETUP, threaded)
    refine_bricks = _launcher(REFINE_BRICKS, threaded)
    refine_bricks_scatter = _launcher(REFINE_BRICKS, threaded, serial_below)
    refine_children = _launcher(REFINE_CHILDREN, threaded)
    refine_children_scatter = _launcher(REFINE_CHILDREN, threaded, serial_below)
    march = _launcher(MARCHING_CUBES, threaded)
    polytope = _launcher(POLYTOPE_CONTACTS, threaded)
    reduce_pairs = _launcher(REDUCE, threaded)
    compact = _launcher(COMPACT, threaded)

    @cpu_jit
    def cpu_collide(poses, explicit_pairs, n_explicit, box_lo, box_hi, pad, hydro_shapes, shapes, filt, sdf, pairs,
                    settings, capacities, explicit, ws, cells, blocks, contacts, reduction, deep, status):
        """One call of the hydroelastic pipeline (see the module docstring). Returns nothing; the
        counts are in ``status``.

        ``shapes``: (sdf, stiffness, margin, gap, env) per shape; ``settings``: (exact, polygons,
        interface, clamp, reduce, budget, triangles, polygon_cells); ``ws``: (aabb, rot, center, half,
        order, sweep_counts, sweep_offsets, pair_a, pair_b, pair_counts, pair_offsets, polygon_scratch,
        polygon_counts, polygon_offsets); ``cells``: (flags, offsets, masks, pair0, ijk0, pair1,
        ijk1); ``blocks``: (pair, ijk, corners, counts, offsets); ``contacts``: (contact_f,
        contact_i, triangle_f); ``reduction``: (groups, slot_f, slot_i, counts, offsets, out_f,
        out_i); ``deep``: (centre, inradius, lo, hi, margin) per shape of the deep-overlap test
        (:class:`~hydro.contact.deep_overlap.DeepOverlap`; inradius 0: never deep), whose answer
        goes to ``status[S_DEEP]`` so that a call with no pair near deep overlap leaves it alone.
        """
        shape_sdf, stiffness, margin, gap, env = shapes
        exact, polygons, interface, clamp, reduce, budget, triangles, polygon_cells = settings
        (aabb, rot, center, half, order, sweep_counts, sweep_offsets, pair_a, pair_b, pair_counts, pair_offsets,
         polygon_scratch, polygon_counts, polygon_offsets) = ws
        flags, cell_offsets, masks, pair0, ijk0, pair1, ijk1 = cells
        block_pair, block_ijk, corners, block_counts, block_offsets = blocks
        contact_f, contact_i, triangle_f = contacts
        groups, slot_f, slot_i, slot_counts, slot_offsets, out_f, out_i = reduction
        # values the launches take as bool and int (built at run time: a literal would make Numba
        # compile the launchers again for its literal type)
        zero = n_explicit * 0
        no = zero != 0
        yes = zero == 0
        size8 = zero + 8
        size4 = zero + 4
        for k in range(STATUS_LEN):
            status[k] = 0
        for k in range(len(SETTINGS)):
            status[S_OVERFLOW + k] = -1

        # stage 1: broad phase (or the given pairs)
        shape_boxes_into(poses, box_lo, box_hi, pad, aabb, rot, center, half)
        if n_explicit < 0:
            n_sorted = hydro_shapes.shape[0]
            axis = sweep_order_into(aabb, hydro_shapes, order)
            sweep(n_sorted, (no, order, n_sorted, axis, aabb, filt, rot, center, half, sweep_counts, sweep_offsets,
                             pair_a, pair_b, zero))
            total = cpu_exclusive_scan(sweep_counts, sweep_offsets, n_sorted)
            if not _fits(status, SET_PAIRS, capacities[SET_PAIRS], explicit[SET_PAIRS], total):
                return
            capacity = capacities[SET_PAIRS]
            sweep(n_sorted, (yes, order, n_sorted, axis, aabb, filt, rot, center, half, sweep_counts, sweep_offsets,
                             pair_a, pair_b, capacity))
            n_pairs = min(total, capacity)
        else:
            if not _fits(status, SET_PAIRS, capacities[SET_PAIRS], explicit[SET_PAIRS], n_explicit):
                return
            n_pairs = min(n_explicit, capacities[SET_PAIRS])
            for k in range(n_pairs):
                pair_a[k] = explicit_pairs[k, 0]
                pair_b[k] = explicit_pairs[k, 1]
        status[S_PAIRS] = n_pairs
        pos = np.empty((poses.shape[0], 3))
        for s in range(poses.shape[0]):
            for k in range(3):
                pos[s, k] = poses[s, k]

        # stage 2: pair setup
        pair_setup(n_pairs, (pair_a, pair_b, shape_sdf, stiffness, margin, gap, env, rot, pos, exact, polygons, sdf,
                             pairs, pair_counts))
        n_bricks = cpu_exclusive_scan(pair_counts, pair_offsets, n_pairs) if n_pairs > 0 else 0
        status[S_BRICKS] = n_bricks

        # stage 3: refinement, bricks -> cells of 4 -> blocks of 2
        if not _fits(status, SET_CELLS, capacities[SET_CELLS], explicit[SET_CELLS], n_bricks):
            return
        n_items = min(n_bricks, capacities[SET_CELLS])
        refine_bricks(n_items, (no, interface, pair_offsets, n_pairs, pairs, sdf, flags, cell_offsets, pair0, ijk0,
                                zero))
        total = cpu_exclusive_scan(flags, cell_offsets, n_items)
        if not _fits(status, SET_CELLS, capacities[SET_CELLS], explicit[SET_CELLS], total):
            return
        capacity = capacities[SET_CELLS]
        refine_bricks_scatter(n_items, (yes, interface, pair_offsets, n_pairs, pairs, sdf, flags, cell_offsets, pair0,
                                        ijk0, capacity))
        n_cells = min(total, capacity)
        status[S_CELLS8] = n_cells
        # cells of 4 from the bricks (into level 1), then blocks of 2 from them
        refine_children(n_cells, (no, size8, interface, pair0, ijk0, pairs, sdf, masks, flags, cell_offsets, pair1, ijk1,
                                  zero))
        total = cpu_exclusive_scan(flags, cell_offsets, n_cells)
        if not _fits(status, SET_CELLS, capacities[SET_CELLS], explicit[SET_CELLS], total):
            return
        refine_children_scatter(n_cells, (yes, size8, interface, pair0, ijk0, pairs, sdf, masks, flags, cell_offsets, pair1,
                                          ijk1, capacity))
        n_cells = min(total, capacity)
        status[S_CELLS4] = n_cells
        if not _fits(status, SET_CELLS, capacities[SET_CELLS], explicit[SET_CELLS], n_cells):
            return
        refine_children(n_cells, (no, size4, interface, pair1, ijk1, pairs, sdf, masks, flags, cell_offsets, block_pair,
                                  block_ijk, zero))
        total = cpu_exclusive_scan(flags, cell_offsets, n_cells)
        if not _fits(status, SET_BLOCKS, capacities[SET_BLOCKS], explicit[SET_BLOCKS], total):
            return
        capacity = capacities[SET_BLOCKS]
        refine_children_scatter(n_cells, (yes, size4, interface, pair1, ijk1, pairs, sdf, masks, flags, cell_offsets,
                                          block_pair, block_ijk, capacity))
        n_blocks = min(total, capacity)
        status[S_BLOCKS] = n_blocks

        # stage 4 (marching cubes) and 4b (polygons of box pairs)
        mc = (interface, clamp, block_pair, block_ijk, pairs, sdf, corners, polygons and n_pairs > 0, polygon_offsets,
              block_counts, block_offsets)
        # a serial call without stage 4b counts and writes in one pass (blocks in order, each at
        # the offset after those before it; the scan then gives the same offsets) and skips the
        # scatter pass: triangles past an automatic buffer stop the call to grow it below, as
        # before; an explicit capacity has clipped them as the scatter pass would
        in_order = zero
        if not threaded and not (with_polygons and polygons and n_pairs > 0):
            in_order = capacities[SET_CONTACTS]
        march(n_blocks, (no,) + mc + (contact_f, contact_i, triangle_f, in_order))
        n_mc = cpu_exclusive_scan(block_counts, block_offsets, n_blocks)
        n_poly = 0
        if with_polygons and polygons and n_pairs > 0:
            polytope(n_pairs, (no, pairs, sdf, polygon_scratch, polygon_cells, block_pair, n_blocks, block_offsets,
                               polygon_counts, polygon_offsets, contact_f, contact_i, triangle_f, zero))
            n_poly = cpu_exclusive_scan(polygon_counts, polygon_offsets, n_pairs)
        total = n_mc + n_poly
        if not _fits(status, SET_CONTACTS, capacities[SET_CONTACTS], explicit[SET_CONTACTS], total):
            return
        capacity = capacities[SET_CONTACTS]
        if in_order == 0:
            march(n_blocks, (yes,) + mc + (contact_f, contact_i, triangle_f, capacity))
        if with_polygons and polygons and n_pairs > 0:
            polytope(n_pairs, (yes, pairs, sdf, polygon_scratch, polygon_cells, block_pair, n_blocks, block_offsets,
                               polygon_counts, polygon_offsets, contact_f, contact_i, triangle_f, capacity))
        n_tri = min(total, capacity)
        status[S_TRIANGLES] = n_mc
        status[S_POLYGON_TRIANGLES] = n_poly
        status[S_CONTACTS] = n_tri

        # stage 6: reduction
        if with_reduce and reduce and n_pairs > 0:
            reduce_pairs(n_pairs, (n_tri, contact_f, contact_i, budget, groups, slot_f, slot_i, slot_counts))
            total = cpu_exclusive_scan(slot_counts, slot_offsets, n_pairs)
            if not _fits(status, SET_REDUCED, capacities[SET_REDUCED], explicit[SET_REDUCED], total):
                return
            capacity = capacities[SET_REDUCED]
            compact(n_pairs * budget, (budget, slot_f, slot_i, slot_counts, slot_offsets, out_f, out_i, capacity))
            status[S_REDUCED] = min(total, capacity)
        deep_center, deep_inradius, deep_lo, deep_hi, deep_margin = deep
        if n_pairs > 0 and _any_deep_candidate(poses, pair_a[:n_pairs], pair_b[:n_pairs], deep_center, deep_inradius,
                                               deep_lo, deep_hi, deep_margin, shape_sdf, sdf):
            status[S_DEEP] = 1
        status[S_CODE] = OK

    return cpu_collide
