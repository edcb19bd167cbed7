"""Patches too small for their grid: a warning at collide time naming the shape and the resolution
that would carry the patch (issue 27; docs/limits.md, "Patches a few voxels across").

A patch is meshed on B's grid, and an interpolated field (a mesh's, or any shape's with
``exact_primitives`` off) rounds the shape's edges over about a voxel of its own grid. Both lose
force without a word when the patch is small for them: a 0.1 m ball 1 mm into a box at
``sdfMaxResolution`` 8 carries 85 % less than it should; two 0.1 m cubes of one mesh 2 mm into a
box at 32, 29 % less. :class:`PatchResolution` looks at each pair's patch after ``collide``:

- *narrow*: the patch's width, 2·√(A/π) from its area A inside the overlap, is under
  ``MIN_PATCH_VOXELS`` voxels of the coarsest grid that shapes it (B's; A's too when A's field is
  interpolated) — a sphere's force is 85 % low at 0.3 voxels, 59 % at 1.6, 31 % at 2.2, 11 % at
  3.2, 2.7 % at 4.6, 0.4 % at 11; the suggested resolution aims at ``TARGET_PATCH_VOXELS``;
- *shallow on an interpolated field*: the deepest overlap is under ``MIN_DEPTH_VOXELS`` of a voxel
  of an interpolated shape's grid (its edges, rounded over a voxel, then miss much of the patch:
  two cubes of one mesh 2 mm into a box are 29 % low at 0.04 voxel, 12 % at 0.11, 4.7 % at 0.22;
  the shipped torus, 3.3 % low at 0.28 voxel as the reduced contacts measure it, is not reported);
  the suggested resolution makes the depth ``TARGET_DEPTH_VOXELS`` voxels. A flat face pressed
  shallow loses force at the walls even on an exact mesh field (the pressure k·min(depth, distance
  to the wall) bends a depth from the walls, inside a voxel): a 40 mm kitchen-appliance foot
  (gymnasium-robotics' ``microfeet.stl``, four of them 0.63 m apart) 1.3 mm into a 1000× stiffer
  box: one foot alone is 3.5 % low at 0.45 voxel; the four 2.9 % at 0.51 (the resolution the earlier
  target, 0.45 voxel, named: low without a word), 0.9 % at 0.77, 0.3 % at 1.1.

A pair is reported (:class:`~hydro.contact.deep_overlap.HydroelasticLimitWarning`) once per
pipeline, on its first call: a query (``hydro collide``, a script's ``collide``), or a simulation's
start with the bodies resting on each other. Contacts that form later are not looked at: a body
landing passes through a small patch, and a pile keeps corner and tip contacts a voxel wide (the
shipped ``mixed_pile``: a cone on a capsule rests on 0.8 voxels), which a warning would only
clutter; checking a patch only when it has lasted (tried: 4 checks 64 calls apart, the area steady
within 10 %) still reported that cone. The later calls cost one comparison.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..sdf.layout import BRICK
from .deep_overlap import EXACT_KINDS, HydroelasticLimitWarning
from .pair_layout import ROUTE_GRID

#: A patch narrower than this many voxels is reported.
MIN_PATCH_VOXELS = 3.0
#: The width the suggested resolution aims for.
TARGET_PATCH_VOXELS = 6.0
#: A patch shallower than this fraction of an interpolated field's voxel is reported.
MIN_DEPTH_VOXELS = 0.15
#: The depth (in voxels) the resolution suggested for a shallow patch aims for.
TARGET_DEPTH_VOXELS = 1.0
class PatchResolution:
    """The per-shape grids of one pipeline and the pairs it has reported (module docstring)."""

    def __init__(self, model, exact_primitives: bool):
        sdf = np.asarray(model.shape_sdf)
        n = len(sdf)
        self.paths = model.shape_path
        self.voxel = np.zeros(n)
        self.exact = np.zeros(n, dtype=bool)
        self.settings = [None] * n
        for s in range(n):
            if sdf[s] >= 0:
                f = model.sdfs[sdf[s]]
                self.voxel[s] = f.voxel_size
                self.exact[s] = bool(exact_primitives) and f.geometry.kind in EXACT_KINDS
                self.settings[s] = f.settings
        self.warned: set = set()

    def check(self, calls: int, contacts, pair_a, pair_b, routes=None) -> None:
        """Look at the pairs' patches of the ``calls``-th call (its contact table and pairs; each
        pair's route, ``PI_ROUTE``): the first only. A pair on an exact polygon route (boxes,
        caps, convex meshes: stage 4b) is not meshed on a grid and is not looked at."""
        if calls != 1:
            return
        n_pairs = len(pair_a)
        if n_pairs == 0 or len(contacts) == 0:
            return
        inside = ~np.asarray(contacts.speculative, dtype=bool)
        pair = np.asarray(contacts.pair)[inside]
        area = np.bincount(pair, weights=np.asarray(contacts.area, float)[inside], minlength=n_pairs)[:n_pairs]
        deepest = np.zeros(n_pairs)
        np.minimum.at(deepest, pair, np.asarray(contacts.depth, float)[inside])
        # the same tests as _finding, on every pair at once; _finding then words the few it flags
        a = np.asarray(pair_a, dtype=np.int64)
        b = np.asarray(pair_b, dtype=np.int64)
        h_width = np.maximum(self.voxel[b], np.where(self.exact[a], 0.0, self.voxel[a]))
        shallow_h = np.maximum(np.where(self.exact[a], 0.0, self.voxel[a]), np.where(self.exact[b], 0.0, self.voxel[b]))
        small = (area > 0.0) & ((2.0 * np.sqrt(area / math.pi) < MIN_PATCH_VOXELS * h_width)
                                | (-deepest < MIN_DEPTH_VOXELS * shallow_h))
        if routes is not None:
            small &= np.asarray(routes)[:n_pairs] == ROUTE_GRID
        for p in np.flatnonzero(small):
            key = (int(min(a[p], b[p])), int(max(a[p], b[p])))
            if key in self.warned:
                continue
            finding = self._finding(int(a[p]), int(b[p]), float(area[p]), -float(deepest[p]))
            if finding is not None:
                self.warned.add(key)
                warnings.warn(finding, HydroelasticLimitWarning, stacklevel=4)

    def _finding(self, a, b, area, depth):
        """The message for pair (A = a, B = b) whose patch has ``area`` inside and ``depth``, or None."""
        width = 2.0 * math.sqrt(area / math.pi)
        # the grids that shape the patch: B's (the lattice), and any interpolated field's
        worst = None  # (how far below the threshold, shape, what, needed voxel)
        for s in (a, b):
            h = self.voxel[s]
            if s != b and self.exact[s]:
                continue
            if width < MIN_PATCH_VOXELS * h:
                short = width / (MIN_PATCH_VOXELS * h)
                if worst is None or short < worst[0]:
                    worst = (short, s, f"{width / h:.2g} voxels wide", width / TARGET_PATCH_VOXELS)
            if not self.exact[s] and depth < MIN_DEPTH_VOXELS * h:
                short = depth / (MIN_DEPTH_VOXELS * h)
                if worst is None or short < worst[0]:
                    worst = (short, s, f"{depth / h:.2g} voxels deep (its field is a grid's, or a mesh's whose "
                                       f"edges bend the pressure within a voxel)", depth / TARGET_DEPTH_VOXELS)
        if worst is None:
            return None
        _, s, what, h_need = worst
        h = self.voxel[s]
        st = self.settings[s]
        if st is not None and st.target_voxel_size is not None and st.target_voxel_size > 0.0:
            fix = f"newton:sdfTargetVoxelSize {h_need:.2g} m or finer would carry it"
        else:
            res = st.max_resolution if st is not None else 64
            need = int(math.ceil(res * h / max(h_need, 1e-12) / BRICK)) * BRICK
            fix = (f"newton:sdfMaxResolution {need} (voxel about {h * res / need:.2g} m) would carry it (the patch grows "
                   f"as a finer grid resolves it, so less may do)")
        other = a if s == b else b
        return (f"the contact patch of {self.paths[s]} with {self.paths[other]} is {what} on {self.paths[s]}'s grid "
                f"(voxel {h:.3g} m): its force may be well off (a 0.1 m ball 1 mm into a box at sdfMaxResolution 8 "
                f"is 85 % low); {fix} (docs/limits.md)")
