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

from ..errors import InputError
from .config import collision_config
from .contacts import CF_COUNT, CI_COUNT, PackedContacts
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
        if not self.has_points:
            if self.has_hydroelastic:
                # one path: its result as it is (its rows, pairs and kinds are the whole table)
                return self.hydroelastic.collide(shape_poses, triangles=triangles)
            return self._empty(shape_poses, triangles)
        hyd = self.hydroelastic.collide(shape_poses, triangles=triangles) if self.has_hydroelastic else None
        call = CallRecord(self.device)
        points, pa, pb, call = self.point.collide(shape_poses, call=call)
        call.handle_overflow(self.config.overflow)
        if hyd is None:
            tri = PatchTriangles(np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, 3))) if triangles else None
            return CollisionResult(points, pa.astype(np.int32), pb.astype(np.int32), patch_loader=_empty_table,
                                   overflow=call.overflow, timings_ms=call.timings_ms, counts=call.counts,
                                   triangles=tri, pair_kind=np.full(len(pa), CONTACT_POINT, np.int32))
        h_a, h_b = hyd.pair_shape_a, hyd.pair_shape_b
        hyd_contacts = hyd.contacts
        if len(points) and len(h_a):
            points.pair += len(h_a)
        # one table, hydroelastic rows first (a side without rows adds nothing to copy)
        if not len(points):
            contacts = hyd_contacts
        elif not len(hyd_contacts):
            contacts = points
        else:
            contacts = Contacts.concatenate([hyd_contacts, points])
        kind = np.concatenate([np.full(len(h_a), CONTACT_HYDROELASTIC, np.int32),
                               np.full(len(pa), CONTACT_POINT, np.int32)])
        timings = dict(hyd.timings_ms)
        timings.update(call.timings_ms)
        counts = dict(hyd.counts)
        counts.update(call.counts)

        def load_patch(hyd=hyd):
            return hyd.patch

        return CollisionResult(contacts, np.concatenate([h_a, pa]).astype(np.int32),
                               np.concatenate([h_b, pb]).astype(np.int32), patch_loader=load_patch,
                               overflow=list(hyd.overflow) + call.overflow, timings_ms=timings, counts=counts,
                               triangles=hyd.triangles, pair_kind=kind)

    def _empty(self, shape_poses, triangles) -> CollisionResult:
        """A scene where no pair may collide: the poses are still checked."""
        self.point._check_poses(shape_poses)
        if not isinstance(triangles, (bool, np.bool_)):
            raise InputError(f"triangles must be True or False, got {triangles!r}")
        tri = PatchTriangles(np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, 3))) if triangles else None
        none = np.zeros(0, np.int32)
        return CollisionResult(_empty_table(), none, none.copy(), patch_loader=_empty_table, triangles=tri,
                               pair_kind=none.copy())


def _empty_table() -> Contacts:
    return PackedContacts(np.zeros((0, CF_COUNT), np.float32), np.zeros((0, CI_COUNT), np.int32))
