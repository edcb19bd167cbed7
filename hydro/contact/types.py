"""Central result types of the contact pipeline (shapes and SI units in each docstring)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONTACT_FIELDS = ("point", "normal", "area", "depth", "pressure", "force", "stiffness", "weight",
                  "shape_a", "shape_b", "env", "speculative", "pair")


@dataclass
class Contacts:
    """The contact table: one row per patch triangle (or per reduced contact).

    | field | shape | meaning |
    |---|---|---|
    | ``point`` | (N,3) | m, world position: the triangle centroid |
    | ``normal`` | (N,3) | unit, world, from shape A toward shape B; the force on B is along +normal |
    | ``area`` | (N,) | m², the part of the triangle inside the overlap (0 when speculative) |
    | ``depth`` | (N,) | m, separation φA+φB at the contact, negative when penetrating |
    | ``pressure`` | (N,) | Pa, interface pressure kB·(−φB) ≥ 0 |
    | ``force`` | (N,) | N, normal force magnitude pressure·area |
    | ``stiffness`` | (N,) | N/m, c = area·k_eff, k_eff = kA·kB/(kA+kB) |
    | ``weight`` | (N,) | m³, area·(−δ), δ the mean of φB at the triangle's vertices |
    | ``shape_a`` | (N,) | int32 shape index of A |
    | ``shape_b`` | (N,) | int32 shape index of B (the shape whose grid was meshed) |
    | ``env`` | (N,) | int32 environment (−1: both shapes global) |
    | ``speculative`` | (N,) | bool, inside the gap band (0 ≤ depth ≤ margins+gaps), no force |
    | ``pair`` | (N,) | int32 index into :attr:`CollisionResult.pair_shape_a` / ``pair_shape_b`` |

    Margins inflate both surfaces: φ here means φ − margin of the shape.
    """

    point: np.ndarray
    normal: np.ndarray
    area: np.ndarray
    depth: np.ndarray
    pressure: np.ndarray
    force: np.ndarray
    stiffness: np.ndarray
    weight: np.ndarray
    shape_a: np.ndarray
    shape_b: np.ndarray
    env: np.ndarray
    speculative: np.ndarray
    pair: np.ndarray

    def __len__(self) -> int:
        return len(self.area)

    @classmethod
    def empty(cls, n: int = 0) -> "Contacts":
        f = np.float32
        return cls(point=np.zeros((n, 3), f), normal=np.zeros((n, 3), f), area=np.zeros(n, f),
                   depth=np.zeros(n, f), pressure=np.zeros(n, f), force=np.zeros(n, f),
                   stiffness=np.zeros(n, f), weight=np.zeros(n, f), shape_a=np.zeros(n, np.int32),
                   shape_b=np.zeros(n, np.int32), env=np.zeros(n, np.int32),
                   speculative=np.zeros(n, np.bool_), pair=np.zeros(n, np.int32))

    def select(self, mask) -> "Contacts":
        return Contacts(**{k: getattr(self, k)[mask] for k in CONTACT_FIELDS})

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in CONTACT_FIELDS}

    def force_vectors(self) -> np.ndarray:
        """(N,3) N: force on shape B of each contact, float64."""
        return self.force.astype(np.float64)[:, None] * self.normal.astype(np.float64)


@dataclass
class PairSummary:
    """Totals of one shape pair (forces act on shape B; torques about the world origin)."""

    shape_a: int
    shape_b: int
    contact_count: int
    net_force: np.ndarray
    net_torque: np.ndarray
    patch_area: float
    center_of_pressure: np.ndarray


@dataclass
class Overflow:
    """A buffer that was too small: ``setting`` must be raised to at least ``required``."""

    setting: str
    capacity: int
    required: int

    def message(self) -> str:
        return (f"contact buffer full: raise HydroelasticConfig.{self.setting} to at least {self.required} "
                f"(now {self.capacity}); {self.required - self.capacity} entries were dropped")


@dataclass
class PatchTriangles:
    """The patch triangles behind the contacts of :attr:`CollisionResult.patch` (same rows).

    | field | shape | meaning |
    |---|---|---|
    | ``vertices`` | (N,3,3) | m, world; wound so the normal points from A toward B |
    | ``vertex_depth`` | (N,3) | m, φA + φB at each vertex (the contact's depth is their mean) |
    | ``vertex_pressure`` | (N,3) | Pa, kB·max(0, −φB) at each vertex |
    """

    vertices: np.ndarray
    vertex_depth: np.ndarray
    vertex_pressure: np.ndarray


class CollisionResult:
    """Everything one ``collide`` call produced.

    | attribute | meaning |
    |---|---|
    | ``contacts`` | :class:`Contacts`, the (reduced, when enabled) contact table |
    | ``patch`` | :class:`Contacts` before reduction (the same table when reduction is off); |
    |  | copied from the pipeline's buffers on first access, which must come before the next call |
    | ``pair_shape_a`` / ``pair_shape_b`` | (P,) int32, the pairs that passed the broad phase |
    | ``overflow`` | list of :class:`Overflow` (empty when every buffer sufficed) |
    | ``timings_ms`` | stage name → milliseconds |
    | ``counts`` | stage name → items produced (pairs, cells per level, blocks, triangles) |
    | ``triangles`` | :class:`PatchTriangles` of ``patch`` when asked for (``collide(triangles=True)``) |
    """

    def __init__(self, contacts, pair_shape_a, pair_shape_b, *, patch=None, patch_loader=None, overflow=(),
                 timings_ms=None, counts=None, triangles=None):
        self.contacts = contacts
        self.pair_shape_a = pair_shape_a
        self.pair_shape_b = pair_shape_b
        self.overflow = list(overflow)
        self.timings_ms = dict(timings_ms or {})
        self.counts = dict(counts or {})
        self._patch = patch
        self._patch_loader = patch_loader
        self.triangles = triangles

    @property
    def patch(self) -> Contacts:
        if self._patch is None:
            self._patch = self._patch_loader()
            self._patch_loader = None
        return self._patch

    def pair_summaries(self, *, reduced: bool = True) -> list:
        """Per-pair totals (force on B, torque about the world origin, area, centre of pressure)."""
        c = self.contacts if reduced else self.patch
        return summarize_pairs(c, self.pair_shape_a, self.pair_shape_b)


def summarize_pairs(contacts: Contacts, pair_shape_a, pair_shape_b) -> list:
    out = []
    fvec = contacts.force_vectors()
    pts = contacts.point.astype(np.float64)
    torque = np.cross(pts, fvec)
    for p in range(len(pair_shape_a)):
        m = contacts.pair == p
        active = m & ~contacts.speculative
        f = fvec[m].sum(axis=0)
        mag = contacts.force[active].astype(np.float64)
        if mag.sum() > 0.0:
            cop = (pts[active] * mag[:, None]).sum(axis=0) / mag.sum()
        else:
            cop = np.full(3, np.nan)
        out.append(PairSummary(shape_a=int(pair_shape_a[p]), shape_b=int(pair_shape_b[p]),
                               contact_count=int(m.sum()), net_force=f, net_torque=torque[m].sum(axis=0),
                               patch_area=float(contacts.area[active].astype(np.float64).sum()),
                               center_of_pressure=cop))
    return out
