"""Central result types of the contact pipeline (shapes and SI units in each docstring)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..jit import cpu_jit

CONTACT_FIELDS = ("point", "normal", "area", "depth", "pressure", "force", "stiffness", "weight",
                  "shape_a", "shape_b", "env", "speculative", "pair", "kind", "damping", "friction",
                  "static_friction")

#: ``Contacts.kind``: made by the hydroelastic path (a patch triangle, or a reduced contact).
CONTACT_HYDROELASTIC = 0
#: ``Contacts.kind``: a point contact of the default contact path.
CONTACT_POINT = 1
#: Names of the kinds (``hydro collide --json`` writes them).
CONTACT_KIND_NAMES = ("hydroelastic", "point")


@cpu_jit
def _pair_friction(shape_a, shape_b, m, friction, static_friction):
    """Per contact, the means of its two shapes' dynamic (column 1) and static (column 0) friction."""
    for k in range(shape_a.shape[0]):
        a = shape_a[k]
        b = shape_b[k]
        friction[k] = 0.5 * (m[a, 1] + m[b, 1])
        static_friction[k] = 0.5 * (m[a, 0] + m[b, 0])


@dataclass
class Contacts:
    """The contact table of both contact paths: one row per patch triangle (or per reduced
    contact) of a hydroelastic pair, one row per point contact of every other pair.

    | field | shape | meaning |
    |---|---|---|
    | ``point`` | (N,3) | m, world position: the centre of pressure of the part of the triangle inside |
    |  |  | the overlap (a speculative triangle: its centroid); for a point contact the midpoint |
    |  |  | of the two surface points |
    | ``normal`` | (N,3) | unit, world, from shape A toward shape B; the force on B is along +normal |
    | ``area`` | (N,) | m², the part of the triangle inside the overlap (0 when speculative; 0 for point contacts) |
    | ``depth`` | (N,) | m, signed separation less both margins, negative when penetrating: on a patch the |
    |  |  | mean of φA+φB over that part (the document's δ is φB's share of it) |
    | ``pressure`` | (N,) | Pa, interface pressure k_eff·(−(φA + φB)) ≥ 0, = kB·(−φB) on the patch (0 for point contacts) |
    | ``force`` | (N,) | N, normal force magnitude: pressure·area; stiffness·max(0, −depth) for point contacts |
    | ``stiffness`` | (N,) | N/m, c = area·k_eff, k_eff = kA·kB/(kA+kB); for point contacts the |
    |  |  | materials' contact stiffnesses in series |
    | ``weight`` | (N,) | m³, ∫(−φB) dA over that part = force / kB: the document's area·(−δ), δ the mean of φB |
    |  |  | at the vertices, on a full triangle of a flat patch; exact integral on rim and curved |
    |  |  | triangles (docs/design.md, "The contact table"); 0 for point contacts |
    | ``shape_a`` | (N,) | int32 shape index of A |
    | ``shape_b`` | (N,) | int32 shape index of B (on a patch, the shape whose grid was meshed) |
    | ``env`` | (N,) | int32 environment (−1: both shapes global) |
    | ``speculative`` | (N,) | bool, inside the gap band (0 ≤ depth ≤ gaps), no force |
    | ``pair`` | (N,) | int32 index into :attr:`CollisionResult.pair_shape_a` / ``pair_shape_b`` |
    | ``kind`` | (N,) | int32 ``CONTACT_HYDROELASTIC`` (0) or ``CONTACT_POINT`` (1): the path that made it |
    | ``damping`` | (N,) | N·s/m, point contacts: the pair's material damping (NaN: not authored, the |
    |  |  | solver derives it from its damping ratio); hydroelastic: 0 (likewise derived) |
    | ``friction`` | (N,) | the pair's dynamic friction coefficient (mean of the two shapes') |
    | ``static_friction`` | (N,) | the pair's static friction coefficient (mean of the two shapes') |

    Margins inflate both surfaces: φ here means φ − margin of the shape. Where each column differs
    from the reference document, and why: docs/design.md, "The contact table". A table made without the
    last four columns (older code) gets kind 0, damping 0 and NaN friction (not resolved).
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
    kind: np.ndarray = None
    damping: np.ndarray = None
    friction: np.ndarray = None
    static_friction: np.ndarray = None

    def __post_init__(self):
        n = len(self.area)
        if self.kind is None:
            self.kind = np.zeros(n, np.int32)
        if self.damping is None:
            self.damping = np.zeros(n, np.float32)
        if self.friction is None:
            self.friction = np.full(n, np.nan, np.float32)
        if self.static_friction is None:
            self.static_friction = np.full(n, np.nan, np.float32)

    def __len__(self) -> int:
        return len(self.area)

    @classmethod
    def empty(cls, n: int = 0) -> "Contacts":
        f = np.float32
        return cls(point=np.zeros((n, 3), f), normal=np.zeros((n, 3), f), area=np.zeros(n, f),
                   depth=np.zeros(n, f), pressure=np.zeros(n, f), force=np.zeros(n, f),
                   stiffness=np.zeros(n, f), weight=np.zeros(n, f), shape_a=np.zeros(n, np.int32),
                   shape_b=np.zeros(n, np.int32), env=np.zeros(n, np.int32),
                   speculative=np.zeros(n, np.bool_), pair=np.zeros(n, np.int32), kind=np.zeros(n, np.int32),
                   damping=np.zeros(n, f), friction=np.zeros(n, f), static_friction=np.zeros(n, f))

    @classmethod
    def concatenate(cls, tables) -> "Contacts":
        """The rows of ``tables`` one after the other (columns as they are)."""
        tables = list(tables)
        if not tables:
            return cls.empty(0)
        return cls(**{k: np.concatenate([getattr(t, k) for t in tables]) for k in CONTACT_FIELDS})

    def set_pair_materials(self, shape_friction) -> None:
        """Fill ``friction`` and ``static_friction`` from the shapes' friction: (S, >= 2), columns
        static then dynamic friction (``Model.shape_friction``, or ``Model.shape_material``, whose
        first two columns they are); each the mean of the two shapes' coefficients. (No import of
        hydro.scene here: the kernels' modules import this one.)"""
        m = np.ascontiguousarray(shape_friction, dtype=np.float64)
        n = len(self.shape_a)
        self.friction = np.empty(n, np.float32)
        self.static_friction = np.empty(n, np.float32)
        _pair_friction(np.ascontiguousarray(self.shape_a, dtype=np.int32),
                       np.ascontiguousarray(self.shape_b, dtype=np.int32), m, self.friction, self.static_friction)

    def select(self, mask) -> "Contacts":
        return Contacts(**{k: getattr(self, k)[mask] for k in CONTACT_FIELDS})

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in CONTACT_FIELDS}

    def force_vectors(self) -> np.ndarray:
        """(N,3) N: force on shape B of each contact, float64."""
        return self.force.astype(np.float64)[:, None] * self.normal.astype(np.float64)

    def to_rigid(self, model, body_q, out: "RigidContacts | None" = None) -> "RigidContacts":
        """The table in Newton's rigid-contact layout (:class:`RigidContacts`), for code written for
        Newton's solvers and ``launchContactData``: shape 0 = A, shape 1 = B, the points on each
        surface in the frame of that shape's body at ``body_q`` (B,7) (world for static shapes),
        thicknesses the shapes' margins, so that ``dot(normal, world(point1) − world(point0)) −
        thickness0 − thickness1`` equals ``depth``. ``out``: a RigidContacts to fill (its capacity
        ``rigid_contact_max`` must hold every row; a full one raises ContactOverflowError).
        ``rigid_contact_force`` is 0: a contact table holds no solver forces
        (:meth:`hydro.sim.simulation.Simulation.rigid_contacts` has them)."""
        return rigid_from_rows(self.point, self.normal, self.depth, self.shape_a, self.shape_b, model, body_q, out)


@dataclass
class RigidContacts:
    """Contacts in Newton's rigid-contact layout (what ``launchContactData`` and solvers written
    for Newton read); made by :meth:`Contacts.to_rigid` (geometry only) and by
    :meth:`hydro.sim.simulation.Simulation.rigid_contacts` (the last physics step, with the solver's
    forces). Rows ``0 .. rigid_contact_count[0] − 1`` are live.

    | field | shape | meaning |
    |---|---|---|
    | ``rigid_contact_max`` | int | capacity (``CollisionConfig.rigid_contact_max``) |
    | ``rigid_contact_count`` | int32 (1,) | live count |
    | ``rigid_contact_shape0`` / ``shape1`` | int32 (max,) | shape indices (A and B of the contact table) |
    | ``rigid_contact_point0`` / ``point1`` | float32 (max,3) | m, the contact point on shape 0 / 1, in the |
    |  |  | frame of that shape's body (world for a static shape) |
    | ``rigid_contact_normal`` | float32 (max,3) | unit, world, from shape 0 toward shape 1 |
    | ``rigid_contact_thickness0`` / ``thickness1`` | float32 (max,) | m, the shapes' margins |
    | ``rigid_contact_force`` | float32 (max,3) | N, world, the force on shape 0 (exerted by shape 1, Newton's |
    |  |  | convention; shape 1 feels its opposite): normal + friction, written by a solver after a |
    |  |  | step (:meth:`~hydro.sim.simulation.Simulation.rigid_contacts`); 0 from :meth:`Contacts.to_rigid` |

    separation = dot(normal, world(point1) − world(point0)) − thickness0 − thickness1 = depth.
    """

    rigid_contact_max: int
    rigid_contact_count: np.ndarray
    rigid_contact_shape0: np.ndarray
    rigid_contact_shape1: np.ndarray
    rigid_contact_point0: np.ndarray
    rigid_contact_point1: np.ndarray
    rigid_contact_normal: np.ndarray
    rigid_contact_thickness0: np.ndarray
    rigid_contact_thickness1: np.ndarray
    rigid_contact_force: np.ndarray

    @classmethod
    def allocate(cls, rigid_contact_max: int) -> "RigidContacts":
        """An empty buffer of capacity ``rigid_contact_max`` (shapes −1, floats NaN: unwritten rows show)."""
        m = int(rigid_contact_max)
        f = np.float32
        return cls(rigid_contact_max=m, rigid_contact_count=np.zeros(1, np.int32),
                   rigid_contact_shape0=np.full(m, -1, np.int32), rigid_contact_shape1=np.full(m, -1, np.int32),
                   rigid_contact_point0=np.full((m, 3), np.nan, f), rigid_contact_point1=np.full((m, 3), np.nan, f),
                   rigid_contact_normal=np.full((m, 3), np.nan, f), rigid_contact_thickness0=np.full(m, np.nan, f),
                   rigid_contact_thickness1=np.full(m, np.nan, f), rigid_contact_force=np.full((m, 3), np.nan, f))


@dataclass
class PairSummary:
    """Totals of one shape pair (forces act on shape B; torques about the world origin).
    ``kind``: the path that collided it (``CONTACT_HYDROELASTIC`` or ``CONTACT_POINT``)."""

    shape_a: int
    shape_b: int
    contact_count: int
    net_force: np.ndarray
    net_torque: np.ndarray
    patch_area: float
    center_of_pressure: np.ndarray
    kind: int = CONTACT_HYDROELASTIC


@dataclass
class Overflow:
    """A buffer that was too small: ``owner.setting`` (a field of the config class ``owner``)
    must be raised to at least ``required``."""

    setting: str
    capacity: int
    required: int
    owner: str = "HydroelasticConfig"

    def message(self) -> str:
        return (f"contact buffer full: raise {self.owner}.{self.setting} to at least {self.required} "
                f"(now {self.capacity}); {self.required - self.capacity} entries were dropped")


@dataclass
class PatchTriangles:
    """The patch triangles behind the contacts of :attr:`CollisionResult.patch` (same rows).

    | field | shape | meaning |
    |---|---|---|
    | ``vertices`` | (N,3,3) | m, world; wound so the normal points from A toward B |
    | ``vertex_depth`` | (N,3) | m, φA + φB at each vertex (the contact's depth is their mean) |
    | ``vertex_pressure`` | (N,3) | Pa, k_eff·max(0, −(φA + φB)) at each vertex (= kB·max(0, −φB) on the patch) |
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
    | ``pair_kind`` | (P,) int32, the path of each pair (``CONTACT_HYDROELASTIC`` or ``CONTACT_POINT``) |
    """

    def __init__(self, contacts, pair_shape_a, pair_shape_b, *, patch=None, patch_loader=None, overflow=(),
                 timings_ms=None, counts=None, triangles=None, pair_kind=None):
        self.contacts = contacts
        self.pair_shape_a = pair_shape_a
        self.pair_shape_b = pair_shape_b
        self._pair_kind = None if pair_kind is None else np.asarray(pair_kind, dtype=np.int32)
        self.overflow = list(overflow)
        self.timings_ms = dict(timings_ms or {})
        self.counts = dict(counts or {})
        self._patch = patch
        self._patch_loader = patch_loader
        self.triangles = triangles

    @property
    def pair_kind(self) -> np.ndarray:
        if self._pair_kind is None:  # every pair hydroelastic (made when first read)
            self._pair_kind = np.full(len(self.pair_shape_a), CONTACT_HYDROELASTIC, np.int32)
        return self._pair_kind

    @pair_kind.setter
    def pair_kind(self, value):
        self._pair_kind = np.asarray(value, dtype=np.int32)

    @property
    def patch(self) -> Contacts:
        if self._patch is None:
            self._patch = self._patch_loader()
            self._patch_loader = None
        return self._patch

    def pair_summaries(self, *, reduced: bool = True) -> list:
        """Per-pair totals (force on B, torque about the world origin, area, centre of pressure)."""
        c = self.contacts if reduced else self.patch
        return summarize_pairs(c, self.pair_shape_a, self.pair_shape_b, self.pair_kind)


def summarize_pairs(contacts: Contacts, pair_shape_a, pair_shape_b, pair_kind=None) -> list:
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
                               center_of_pressure=cop,
                               kind=CONTACT_HYDROELASTIC if pair_kind is None else int(pair_kind[p])))
    return out


def rigid_from_rows(point, normal, depth, shape_a, shape_b, model, body_q, out: "RigidContacts | None" = None,
                    force=None) -> RigidContacts:
    """Contact rows (world ``point`` (N,3) on the mid-surface, ``normal`` A→B, signed ``depth``,
    shapes A and B) in Newton's layout (:class:`RigidContacts`), shape 0 = A, shape 1 = B: the
    point on each surface (``point ∓ ½·reach·normal``, reach = depth + both margins) in the frame
    of that shape's body at ``body_q`` (B,7) (world for a static shape), thicknesses the margins,
    so that ``dot(normal, world(point1) − world(point0)) − thickness0 − thickness1 = depth``.
    ``force`` (N,3): the force on shape 0 (default 0). ``out``: a buffer to fill, whose capacity
    must hold every row (else ContactOverflowError)."""
    from ..errors import ContactOverflowError
    from ..transforms import quat_rotate

    n = len(depth)
    if out is None:
        out = RigidContacts.allocate(n)
    elif n > out.rigid_contact_max:
        raise ContactOverflowError(f"contact buffer full: raise CollisionConfig.rigid_contact_max to at least "
                                   f"{n} (now {out.rigid_contact_max}); {n - out.rigid_contact_max} entries "
                                   f"were dropped")
    margin = np.asarray(model.shape_margin, dtype=np.float64)
    shape_body = np.asarray(model.shape_body)
    body_q = np.asarray(body_q, dtype=np.float64).reshape(-1, 7)
    a = np.asarray(shape_a).astype(np.int64)
    b = np.asarray(shape_b).astype(np.int64)
    nrm = np.asarray(normal, dtype=np.float64).reshape(-1, 3)
    reach = np.asarray(depth, dtype=np.float64) + margin[a] + margin[b]  # distance between the surfaces
    mid = np.asarray(point, dtype=np.float64).reshape(-1, 3)
    for shape, sgn, point_out, thick_out, shape_out in ((a, -0.5, out.rigid_contact_point0,
                                                       out.rigid_contact_thickness0, out.rigid_contact_shape0),
                                                      (b, 0.5, out.rigid_contact_point1,
                                                       out.rigid_contact_thickness1, out.rigid_contact_shape1)):
        world = mid + sgn * reach[:, None] * nrm
        body = shape_body[shape]
        local = world.copy()
        on_body = body >= 0
        if on_body.any():
            q = body_q[body[on_body]]
            inv = np.concatenate([-q[:, 3:6], q[:, 6:7]], axis=1)
            local[on_body] = quat_rotate(inv, world[on_body] - q[:, :3])
        point_out[:n] = local
        thick_out[:n] = margin[shape]
        shape_out[:n] = shape
    out.rigid_contact_normal[:n] = nrm
    out.rigid_contact_force[:n] = 0.0 if force is None else np.asarray(force, dtype=np.float64).reshape(-1, 3)
    out.rigid_contact_count[0] = n
    return out
