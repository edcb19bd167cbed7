"""Both contact paths in one call: every pair of colliders that may collide gets contacts.

A pair is **hydroelastic** iff both shapes enable it (``newton:hydroelasticEnabled``), both have
an SDF and ``HydroelasticConfig.enabled`` is true; every other pair that the pair rule allows
(:meth:`hydro.scene.model.Model.may_collide`) takes the **default path**: point contacts with the
pair's material stiffness, damping and friction (:mod:`hydro.contact.point_pipeline`).

:class:`CollisionPipeline` runs the :class:`~hydro.contact.pipeline.HydroelasticPipeline` and the
:class:`~hydro.contact.point_pipeline.PointContactPipeline` and returns one
:class:`~hydro.contact.types.CollisionResult`: one contact table (hydroelastic rows first, then
point contacts; ``Contacts.kind`` says which), one pair list (``pair_kind`` per pair), the
hydroelastic patch (``result.patch``/``result.triangles``, as before), both paths' timings
(``point_*`` stages for the default path), counts and overflows.
"""

from __future__ import annotations

import numpy as np

from .config import collision_config
from .pipeline import HydroelasticPipeline
from .point_pipeline import PointContactPipeline, hydroelastic_routed
from .types import CONTACT_HYDROELASTIC, CONTACT_POINT, CollisionResult, Contacts, PatchTriangles
from .workspace import CallRecord

__all__ = ["CollisionPipeline"]


class CollisionPipeline:
    """Contacts of both paths for a :class:`~hydro.scene.model.Model` at given poses (module
    docstring). ``config``: a ``NewtonConfig``, ``CollisionConfig`` or ``HydroelasticConfig``
    (default: the active configuration, read when the pipeline is made). ``stage_timings``: as for
    :class:`~hydro.contact.pipeline.HydroelasticPipeline` (time each hydroelastic stage on its own)."""

    def __init__(self, model, config=None, *, device="cpu", stage_timings: bool = False):
        self.model = model
        self.config = collision_config(config)
        self.hydroelastic = HydroelasticPipeline(model, self.config.hydroelastic, device=device,
                                                 stage_timings=stage_timings)
        self.device = self.hydroelastic.device
        self.point = PointContactPipeline(model, self.config, device=self.device)
        routed = hydroelastic_routed(model, self.config)
        self.has_hydroelastic = bool(routed.any())
        # a pair takes the default path when one of its shapes collides but is not routed: none such,
        # no point contacts (an all-hydroelastic scene skips the point stages)
        self.has_points = bool((np.asarray(model.shape_collision_enabled, bool) & ~routed).any())

    def collide(self, shape_poses, *, triangles: bool = False) -> CollisionResult:
        """Contacts of every pair at world ``shape_poses`` (S, 7); ``triangles``: also the
        hydroelastic patch triangles (``result.triangles``)."""
        if self.has_hydroelastic:
            hyd = self.hydroelastic.collide(shape_poses, triangles=triangles)
        else:
            hyd = None
        call = CallRecord(self.device)
        if self.has_points:
            points, pa, pb, call = self.point.collide(shape_poses, call=call)
        else:
            points, pa, pb = Contacts.empty(0), np.zeros(0, np.int32), np.zeros(0, np.int32)
        call.handle_overflow(self.config.overflow)
        if hyd is None:
            hyd_contacts = Contacts.empty(0)
            h_a = h_b = np.zeros(0, np.int32)
            overflow, timings, counts = [], {}, {}
            tri = PatchTriangles(np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, 3))) if triangles else None

            def load_patch():
                return Contacts.empty(0)
        else:
            hyd_contacts = hyd.contacts
            h_a, h_b = hyd.pair_shape_a, hyd.pair_shape_b
            overflow, timings, counts, tri = list(hyd.overflow), dict(hyd.timings_ms), dict(hyd.counts), hyd.triangles

            def load_patch(hyd=hyd):
                return hyd.patch
        points.pair += len(h_a)
        contacts = Contacts.concatenate([hyd_contacts, points])
        kind = np.concatenate([np.full(len(h_a), CONTACT_HYDROELASTIC, np.int32),
                               np.full(len(pa), CONTACT_POINT, np.int32)])
        timings.update(call.timings_ms)
        counts.update(call.counts)
        return CollisionResult(contacts, np.concatenate([h_a, pa]).astype(np.int32),
                               np.concatenate([h_b, pb]).astype(np.int32), patch_loader=load_patch,
                               overflow=overflow + call.overflow, timings_ms=timings, counts=counts, triangles=tri,
                               pair_kind=kind)
