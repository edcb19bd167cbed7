"""Collision geometry: the shape types (sizes validated, mass properties, local bounds).

Every primitive is canonical: centred at its local origin, with its axis (capsule, cylinder,
cone) along local +Z. Other axes are expressed through the shape's local pose. Sizes are in
metres. Each type validates its sizes on construction and raises ``ValueError`` naming the
argument and the rule it breaks.

Their exact signed distances are device helpers in :mod:`hydro.geometry.primitives`; meshes use
:mod:`hydro.geometry.mesh_distance`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, shown
from .primitives import (BOX, CAPSULE, CONE, CONVEX_MESH, CYLINDER, ELLIPSOID, HEIGHTFIELD, KIND_NAMES, MESH,
                         PARAM_COUNT, PLANE, SPHERE, _primitive_phi_many)


def _positive(name: str, value) -> float:
    v = float(value)
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def _positive3(name: str, values) -> tuple[float, float, float]:
    vals = tuple(float(v) for v in np.asarray(values, dtype=float).reshape(-1))
    if len(vals) != 3:
        raise ValueError(f"{name} must have 3 components, got {len(vals)}")
    for axis, v in zip("xyz", vals):
        if not math.isfinite(v) or v <= 0.0:
            raise ValueError(f"{name}[{axis}] must be a finite number > 0, got {v!r}")
    return vals


class Geometry:
    """Base class of collision geometry."""

    kind: int = -1
    #: Whether the shape can carry an SDF and take part in hydroelastic contact.
    volumetric: bool = True

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]

    def params(self) -> np.ndarray:
        """Packed float64 parameters for the device helpers (see ``primitive_phi``)."""
        raise NotImplementedError

    def local_aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """Tight axis-aligned bounds ``(lo, hi)`` in the shape's local frame."""
        raise NotImplementedError

    def key(self) -> tuple:
        """A hashable key: equal keys mean identical geometry (SDFs can be shared)."""
        raise NotImplementedError

    def volume(self) -> float:
        raise NotImplementedError

    def center_of_mass(self) -> np.ndarray:
        return np.zeros(3)

    def unit_inertia(self) -> np.ndarray:
        """Inertia tensor (3×3) about the centre of mass for unit density (kg·m² per kg/m³)."""
        raise NotImplementedError

    def phi(self, points) -> np.ndarray:
        """Exact signed distance at ``points`` (N,3) in the local frame (NumPy in, out)."""
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        out = np.empty(len(pts))
        _primitive_phi_many(np.int32(self.kind), self.params(), pts, out)
        return out


@dataclass(frozen=True, eq=True)
class Sphere(Geometry):
    radius: float
    kind = SPHERE

    def __post_init__(self):
        object.__setattr__(self, "radius", _positive("radius", self.radius))

    def params(self):
        return np.array([self.radius, 0.0, 0.0, 0.0])

    def local_aabb(self):
        r = self.radius
        return np.full(3, -r), np.full(3, r)

    def key(self):
        return ("sphere", self.radius)

    def volume(self):
        return 4.0 / 3.0 * math.pi * self.radius**3

    def unit_inertia(self):
        return np.eye(3) * (0.4 * self.volume() * self.radius**2)


@dataclass(frozen=True, eq=True)
class Box(Geometry):
    """A box with full edge lengths ``size`` = (sx, sy, sz)."""

    size: tuple
    kind = BOX

    def __post_init__(self):
        object.__setattr__(self, "size", _positive3("size", self.size))

    @property
    def half_extents(self) -> np.ndarray:
        return 0.5 * np.asarray(self.size)

    def params(self):
        h = self.half_extents
        return np.array([h[0], h[1], h[2], 0.0])

    def local_aabb(self):
        h = self.half_extents
        return -h, h.copy()

    def key(self):
        return ("box",) + tuple(self.size)

    def volume(self):
        sx, sy, sz = self.size
        return sx * sy * sz

    def unit_inertia(self):
        sx, sy, sz = self.size
        m = self.volume()
        return np.diag([m * (sy**2 + sz**2), m * (sx**2 + sz**2), m * (sx**2 + sy**2)]) / 12.0


@dataclass(frozen=True, eq=True)
class _RadiusHeight(Geometry):
    """A solid of revolution about local Z given by a ``radius`` and a ``height`` (both > 0)."""

    radius: float
    height: float

    def __post_init__(self):
        object.__setattr__(self, "radius", _positive("radius", self.radius))
        object.__setattr__(self, "height", _positive("height", self.height))

    def params(self):
        return np.array([self.radius, 0.5 * self.height, 0.0, 0.0])

    def local_aabb(self):
        r, hh = self.radius, 0.5 * self.height
        return np.array([-r, -r, -hh]), np.array([r, r, hh])

    def key(self):
        return (self.kind_name, self.radius, self.height)


@dataclass(frozen=True, eq=True)
class Capsule(_RadiusHeight):
    """A capsule along local Z: a cylinder of length ``height`` (>= 0) capped by two hemispheres."""

    kind = CAPSULE

    def __post_init__(self):
        object.__setattr__(self, "radius", _positive("radius", self.radius))
        h = float(self.height)
        if not math.isfinite(h) or h < 0.0:
            raise ValueError(f"height must be a finite number >= 0, got {self.height!r}")
        object.__setattr__(self, "height", h)

    def local_aabb(self):
        r, hh = self.radius, 0.5 * self.height
        return np.array([-r, -r, -hh - r]), np.array([r, r, hh + r])

    def volume(self):
        r, h = self.radius, self.height
        return math.pi * r * r * h + 4.0 / 3.0 * math.pi * r**3

    def unit_inertia(self):
        r, h = self.radius, self.height
        mc = math.pi * r * r * h  # cylinder
        ms = 4.0 / 3.0 * math.pi * r**3  # two hemispheres
        izz = mc * r * r / 2.0 + ms * 2.0 * r * r / 5.0
        # Hemisphere centroid offset 3r/8 from its flat face; parallel-axis to the capsule centre.
        ixx = mc * (3 * r * r + h * h) / 12.0 + ms * (2.0 * r * r / 5.0 + h * h / 4.0 + 3.0 * h * r / 8.0)
        return np.diag([ixx, ixx, izz])


@dataclass(frozen=True, eq=True)
class Cylinder(_RadiusHeight):
    """A solid cylinder along local Z of radius ``radius`` and length ``height``."""

    kind = CYLINDER

    def volume(self):
        return math.pi * self.radius**2 * self.height

    def unit_inertia(self):
        r, h = self.radius, self.height
        m = self.volume()
        ixx = m * (3 * r * r + h * h) / 12.0
        return np.diag([ixx, ixx, m * r * r / 2.0])


@dataclass(frozen=True, eq=True)
class Cone(_RadiusHeight):
    """A solid cone along local Z: base of radius ``radius`` at z = −height/2, apex at +height/2."""

    kind = CONE

    def volume(self):
        return math.pi * self.radius**2 * self.height / 3.0

    def center_of_mass(self):
        # A quarter of the height above the base.
        return np.array([0.0, 0.0, -0.5 * self.height + 0.25 * self.height])

    def unit_inertia(self):
        r, h = self.radius, self.height
        m = self.volume()
        ixx = m * (3.0 * r * r / 20.0 + 3.0 * h * h / 80.0)
        return np.diag([ixx, ixx, 3.0 * m * r * r / 10.0])


@dataclass(frozen=True, eq=True)
class Ellipsoid(Geometry):
    """A solid ellipsoid with semi-axes ``radii`` = (a, b, c) along local X, Y, Z."""

    radii: tuple
    kind = ELLIPSOID

    def __post_init__(self):
        object.__setattr__(self, "radii", _positive3("radii", self.radii))

    def params(self):
        a, b, c = self.radii
        return np.array([a, b, c, 0.0])

    def local_aabb(self):
        r = np.asarray(self.radii)
        return -r, r.copy()

    def key(self):
        return ("ellipsoid",) + tuple(self.radii)

    def volume(self):
        a, b, c = self.radii
        return 4.0 / 3.0 * math.pi * a * b * c

    def unit_inertia(self):
        a, b, c = self.radii
        m = self.volume()
        return np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * (m / 5.0)


#: Mesh file formats :meth:`Mesh.load` reads (extension → name); others are refused by name.
MESH_FORMATS = {".obj": "OBJ", ".stl": "STL", ".ply": "PLY", ".off": "OFF", ".glb": "glTF (binary)",
                ".gltf": "glTF"}
#: Formats that hold points only (no triangles).
POINT_FORMATS = {".xyz": "XYZ point cloud", ".pts": "point cloud", ".pcd": "point cloud"}


def _mesh_file_kind(path) -> str:
    """The format name of a mesh file, after checking that it can be read: it exists, is a file,
    has an extension :data:`MESH_FORMATS` lists, and an STL is a whole binary or an ASCII STL
    (trimesh's own errors for a corrupt STL name a missing module). Raises :class:`InputError`."""
    import os

    p = os.fspath(path)
    if not os.path.exists(p):
        raise InputError(f"mesh file {p!r}: no such file")
    if os.path.isdir(p):
        raise InputError(f"mesh file {p!r} is a folder: give a mesh file ({', '.join(MESH_FORMATS)})")
    ext = os.path.splitext(p)[1].lower()
    if ext in POINT_FORMATS:
        raise InputError(f"mesh file {p!r} is a {POINT_FORMATS[ext]} ({ext}): it holds no triangles; give a mesh "
                         f"({', '.join(MESH_FORMATS)})")
    if ext not in MESH_FORMATS:
        raise InputError(f"mesh file {p!r}: unknown mesh format {ext or '(no extension)'!r}; hydro reads "
                         f"{', '.join(MESH_FORMATS)}")
    if ext == ".stl":
        size = os.path.getsize(p)
        with open(p, "rb") as fh:
            head = fh.read(84)
            if size >= 84:
                count = int.from_bytes(head[80:84], "little")
                if size == 84 + 50 * count and count > 0:
                    return "binary STL"
            fh.seek(0)
            text = fh.read(min(size, 1 << 16))
        try:
            ascii_ok = text.decode("ascii").lstrip().lower().startswith("solid") and b"facet" in text
        except UnicodeDecodeError:
            ascii_ok = False
        if not ascii_ok:
            raise InputError(f"mesh file {p!r} is not a valid STL file: neither binary STL (84 + 50 bytes per "
                             f"triangle, this file has {size} bytes) nor ASCII STL ('solid ... facet ...'); it may be "
                             f"truncated or corrupt")
        return "ASCII STL"
    return MESH_FORMATS[ext]


@dataclass(frozen=True, eq=False)
class Mesh(Geometry):
    """A triangle mesh, as given. ``name`` appears in every error about it.

    Construction checks the arrays (finite vertices, valid indices, at least one triangle) and
    keeps them as they are. What hydro does with the mesh's inside (its SDF, mass, volume) uses
    :meth:`solid`: the vertices welded by position, then the solid the closed surface bounds,
    with pieces that touch or overlap merged (:mod:`hydro.geometry.mesh_check`).
    :meth:`check_watertight` raises when there is no such solid, saying what is wrong and how to
    fix it. Open meshes still have a signed distance by winding numbers
    (``MeshDistance(mesh, sign="winding")``), for the default contact path.
    """

    vertices: np.ndarray
    faces: np.ndarray
    name: str = "mesh"
    _key: tuple = field(default=(), repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    kind = MESH

    def __post_init__(self):
        v = np.ascontiguousarray(self.vertices, dtype=np.float64)
        f = np.ascontiguousarray(self.faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise InputError(f"mesh {self.name!r}: vertices must have shape (N, 3), got {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise InputError(f"mesh {self.name!r}: faces must have shape (M, 3), got {f.shape}")
        if len(v) == 0 or len(f) == 0:
            raise InputError(f"mesh {self.name!r} is empty: it needs at least one triangle")
        if not np.all(np.isfinite(v)):
            bad = int(np.argwhere(~np.isfinite(v).all(axis=1))[0, 0])
            raise InputError(f"mesh {self.name!r}: vertices must be finite, vertex {bad} is {v[bad].tolist()}")
        if f.min() < 0 or f.max() >= len(v):
            raise InputError(f"mesh {self.name!r}: face indices must lie in [0, {len(v) - 1}]")
        v.setflags(write=False)
        f.setflags(write=False)
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "faces", f)
        digest = hashlib.sha1(v.tobytes() + f.tobytes()).hexdigest()
        object.__setattr__(self, "_key", ("mesh", digest))

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    @classmethod
    def from_trimesh(cls, tm, name: str = "mesh") -> "Mesh":
        return cls(np.asarray(tm.vertices), np.asarray(tm.faces), name=name)

    @classmethod
    def load(cls, path: str, *, scale: float = 1.0) -> "Mesh":
        """Load a mesh file with trimesh (OBJ, STL, PLY, …; a scene's parts are concatenated in
        their placed frames), polygons triangulated, vertices as the file has them (STL: three
        per triangle; :meth:`solid` welds them). ``scale``: metres per file unit."""
        import trimesh

        scale = float(scale)
        if not math.isfinite(scale) or scale <= 0.0:
            raise InputError(f"scale must be a finite number > 0, got {scale!r}")
        kind = _mesh_file_kind(path)
        try:
            tm = trimesh.load(path, force="mesh", process=False)
        except Exception as exc:  # trimesh raises many types  # noqa: BLE001
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise InputError(f"mesh file {path!r} could not be read as {kind}: {first} (is it a complete {kind} "
                             f"file?)") from exc
        if not isinstance(tm, trimesh.Trimesh) or len(tm.faces) == 0:
            raise InputError(f"mesh file {path!r} holds no triangles")
        return cls(np.asarray(tm.vertices) * scale, np.asarray(tm.faces), name=str(path))

    def to_trimesh(self):
        import trimesh

        return trimesh.Trimesh(self.vertices, self.faces, process=False)

    def welded(self, tolerance: float | None = None) -> "Mesh":
        """This mesh with vertices merged by position (see :func:`~hydro.geometry.mesh_check.weld`)."""
        from .mesh_check import weld

        v, f, _ = weld(self.vertices, self.faces, tolerance=tolerance)
        return Mesh(v, f, name=self.name)

    def solid(self):
        """The :class:`~hydro.geometry.mesh_check.MeshSolid` this mesh bounds (cached): welded,
        touching or overlapping pieces merged. Raises :class:`~hydro.errors.InputError` (what is
        wrong, how to fix it) when the welded mesh is not closed or encloses no volume."""
        if "solid" not in self._cache:
            from .mesh_check import mesh_solid

            try:
                self._cache["solid"] = mesh_solid(self)
            except InputError as exc:
                self._cache["solid"] = exc
        out = self._cache["solid"]
        if isinstance(out, Exception):
            raise InputError(str(out))
        return out

    def check_watertight(self) -> None:
        """Raise :class:`~hydro.errors.InputError` unless the welded mesh is closed and encloses a
        positive volume (what an SDF needs); the message says what is wrong and how to fix it."""
        self.solid()

    def is_closed(self) -> bool:
        try:
            self.solid()
        except InputError:
            return False
        return True

    def convex_hull(self, max_vertices: int = -1) -> "ConvexMesh":
        """The convex hull of the vertices (``physics:approximation = "convexHull"``), with at most
        ``max_vertices`` vertices when > 0 (``newton:maxHullVertices``; −1: no limit)."""
        return ConvexMesh.from_points(self.vertices, max_vertices=max_vertices, name=f"convex hull of {self.name}")

    def signed_volume(self) -> float:
        """Σ over the faces as given of the signed tetrahedron volumes (overlapping pieces count twice)."""
        a, b, c = (self.vertices[self.faces[:, k]] for k in range(3))
        return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)

    def params(self):
        return np.zeros(PARAM_COUNT)

    def local_aabb(self):
        return self.vertices.min(axis=0), self.vertices.max(axis=0)

    def key(self):
        return self._key

    def _solid_trimesh(self):
        import trimesh

        if self.is_closed():
            s = self.solid()
            return trimesh.Trimesh(s.vertices, s.faces, process=False)
        return self.to_trimesh()

    def volume(self):
        """The solid's volume (overlaps counted once); an open mesh: :meth:`signed_volume`."""
        return self.solid().volume if self.is_closed() else self.signed_volume()

    def center_of_mass(self):
        return np.asarray(self._solid_trimesh().center_mass, dtype=float)

    def unit_inertia(self):
        tm = self._solid_trimesh()
        tm.density = 1.0
        return np.asarray(tm.moment_inertia, dtype=float)

    def phi(self, points):
        """The reference signed distance (sign from the winding number of the mesh as given; see
        :func:`~hydro.geometry.mesh_check.reference_signed_distance`), defined for open meshes too."""
        from .mesh_check import reference_signed_distance

        return reference_signed_distance(self, points, solid=self.solid() if self.is_closed() else None)


@dataclass(frozen=True, eq=True)
class Plane(Geometry):
    """An infinite plane z = 0 (normal +Z in its local frame). Never hydroelastic."""

    kind = PLANE
    volumetric = False

    def key(self):
        return ("plane",)


@dataclass(frozen=True, eq=True)
class Heightfield(Geometry):
    """Terrain: a grid of heights over the rectangle [−hx, hx] × [−hy, hy] of its local frame.

    ``heights`` (nrow, ncol), nrow, ncol ≥ 2, in metres: ``heights[r][c]`` is the surface's z at
    ``x = −hx + 2·hx·c/(ncol − 1)``, ``y = −hy + 2·hy·r/(nrow − 1)`` (Newton's ``Heightfield``
    convention: columns along x, rows along y; ``hx``, ``hy`` half-extents); each cell is two
    triangles (split along the diagonal from (r, c) to (r + 1, c + 1)), so the surface is
    piecewise linear. Solid below the surface down to ``min(heights) − thickness``: contacts see a
    closed slab (:meth:`to_mesh`). Static only; never hydroelastic (the document: hydroelastic
    contact "is not supported for planes, heightfields, or non-watertight meshes"); it takes the
    default path with point contacts. ``Heightfield()`` is a flat 1 m × 1 m field at z = 0.
    """

    heights: tuple = ((0.0, 0.0), (0.0, 0.0))
    hx: float = 0.5
    hy: float = 0.5
    thickness: float = 0.1
    kind = HEIGHTFIELD
    volumetric = False

    def __post_init__(self):
        try:
            h = np.array(self.heights, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("heights must be a 2-D grid of numbers (nrow, ncol)") from None
        if h.ndim != 2 or h.shape[0] < 2 or h.shape[1] < 2:
            raise ValueError(f"heights must be a 2-D grid with at least 2 rows and 2 columns, got shape {h.shape}")
        if not np.all(np.isfinite(h)):
            raise ValueError("heights must be finite numbers (m)")
        object.__setattr__(self, "heights", tuple(tuple(float(v) for v in row) for row in h))
        object.__setattr__(self, "hx", _positive("hx", self.hx))
        object.__setattr__(self, "hy", _positive("hy", self.hy))
        object.__setattr__(self, "thickness", _positive("thickness", self.thickness))

    @property
    def grid(self) -> np.ndarray:
        """(nrow, ncol) float64 heights."""
        return np.array(self.heights, dtype=float)

    @property
    def nrow(self) -> int:
        return len(self.heights)

    @property
    def ncol(self) -> int:
        return len(self.heights[0])

    def key(self):
        return ("heightfield", self.heights, self.hx, self.hy, self.thickness)

    def params(self):
        return np.zeros(PARAM_COUNT)

    def local_aabb(self):
        h = self.grid
        return (np.array([-self.hx, -self.hy, h.min() - self.thickness]), np.array([self.hx, self.hy, h.max()]))

    def surface_mesh(self) -> tuple[np.ndarray, np.ndarray]:
        """``(vertices, faces)`` of the top surface (local frame; faces wound with normals up)."""
        nr, nc = self.nrow, self.ncol
        x = np.linspace(-self.hx, self.hx, nc)
        y = np.linspace(-self.hy, self.hy, nr)
        xx, yy = np.meshgrid(x, y)  # (nr, nc): x along columns, y along rows
        verts = np.stack([xx.ravel(), yy.ravel(), self.grid.ravel()], axis=1)
        r, c = np.meshgrid(np.arange(nr - 1), np.arange(nc - 1), indexing="ij")
        v00 = (r * nc + c).ravel()
        v01, v10, v11 = v00 + 1, v00 + nc, v00 + nc + 1
        faces = np.concatenate([np.stack([v00, v01, v11], axis=1), np.stack([v00, v11, v10], axis=1)])
        return verts, faces.astype(np.int64)

    def to_mesh(self) -> "Mesh":
        """The closed slab the contacts see: the surface, four walls and a flat bottom at
        ``min(heights) − thickness`` (a watertight :class:`Mesh`, normals outward)."""
        top, top_faces = self.surface_mesh()
        nr, nc = self.nrow, self.ncol
        n = len(top)
        bottom = top.copy()
        bottom[:, 2] = self.grid.min() - self.thickness
        faces = [top_faces, top_faces[:, ::-1] + n]
        ring = ([c for c in range(nc)] + [r * nc + nc - 1 for r in range(1, nr)]
                + [(nr - 1) * nc + c for c in range(nc - 2, -1, -1)] + [r * nc for r in range(nr - 2, 0, -1)])
        a = np.array(ring)
        b = np.roll(a, -1)  # counter-clockwise seen from +z: each wall faces out
        faces.append(np.stack([a, a + n, b + n], axis=1))
        faces.append(np.stack([a, b + n, b], axis=1))
        return Mesh(np.concatenate([top, bottom]), np.concatenate(faces).astype(np.int64), name="heightfield")

    def height_at(self, x, y) -> np.ndarray:
        """Surface height (local) at points (x, y) inside the rectangle, on the triangulated surface."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        h = self.grid
        u = np.clip((x + self.hx) / (2 * self.hx) * (self.ncol - 1), 0, self.ncol - 1)
        v = np.clip((y + self.hy) / (2 * self.hy) * (self.nrow - 1), 0, self.nrow - 1)
        c = np.minimum(np.floor(u).astype(int), self.ncol - 2)
        r = np.minimum(np.floor(v).astype(int), self.nrow - 2)
        fu, fv = u - c, v - r
        h00, h01, h10, h11 = h[r, c], h[r, c + 1], h[r + 1, c], h[r + 1, c + 1]
        lower = fu >= fv  # the triangle (00, 01, 11)
        return np.where(lower, h00 + fu * (h01 - h00) + fv * (h11 - h01), h00 + fv * (h10 - h00) + fu * (h11 - h10))

    def phi(self, points):
        """Signed distance to the slab (:meth:`to_mesh`)."""
        return self.to_mesh().phi(points)


def parse_shape(text: str) -> Geometry:
    """Parse the command-line form ``KIND:ARGS``, e.g. ``sphere:0.1``, ``box:0.1,0.2,0.3``.

    Forms: ``sphere:R``, ``box:SX,SY,SZ`` (edge lengths), ``capsule:R,H``, ``cylinder:R,H``,
    ``cone:R,H``, ``ellipsoid:A,B,C``, ``mesh:PATH``.
    """
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if not sep or not rest:
        raise ValueError(f"shape {text!r} must be written KIND:ARGS, e.g. sphere:0.1 or box:0.1,0.2,0.3")
    if kind == "mesh":
        return Mesh.load(rest)
    try:
        nums = [float(x) for x in rest.split(",")]
    except ValueError:
        raise ValueError(f"shape {text!r}: the arguments must be numbers separated by commas") from None
    need = {"sphere": 1, "box": 3, "capsule": 2, "cylinder": 2, "cone": 2, "ellipsoid": 3}
    if kind not in need:
        raise ValueError(f"shape {text!r}: unknown kind {kind!r}; one of {', '.join(list(need) + ['mesh'])}")
    if len(nums) != need[kind]:
        raise ValueError(f"shape {text!r}: {kind} takes {need[kind]} number(s), got {len(nums)}")
    if kind == "sphere":
        return Sphere(nums[0])
    if kind == "box":
        return Box(tuple(nums))
    if kind == "capsule":
        return Capsule(nums[0], nums[1])
    if kind == "cylinder":
        return Cylinder(nums[0], nums[1])
    if kind == "cone":
        return Cone(nums[0], nums[1])
    return Ellipsoid(tuple(nums))


# ============================================================================================
# Convex hulls of point sets: the ``physics:approximation = "convexHull"`` collider (here, beside
# the Mesh it extends, so that hydro/geometry has no import cycle; hydro.geometry.convex names it)


def _reduce_points(points: np.ndarray, max_vertices: int) -> np.ndarray:
    """At most ``max_vertices`` of the points, spread out (farthest-point sampling, deterministic:
    it starts from the point farthest from the centroid)."""
    c = points.mean(axis=0)
    chosen = [int(np.argmax(np.linalg.norm(points - c, axis=1)))]
    d = np.linalg.norm(points - points[chosen[0]], axis=1)
    while len(chosen) < max_vertices:
        i = int(np.argmax(d))
        if d[i] <= 0.0:
            break
        chosen.append(i)
        d = np.minimum(d, np.linalg.norm(points - points[i], axis=1))
    return points[sorted(chosen)]


@dataclass(frozen=True, eq=False)
class ConvexMesh(Mesh):
    """The convex hull of a point set, as a closed triangle mesh wound outward.

    Make one with :meth:`from_points` (or :meth:`Mesh.convex_hull`); the constructor takes the hull's
    own vertices and faces. ``planes`` (F, 4): each face's outward unit normal n and offset d
    (n·x = d on the face, n·x <= d inside).
    """

    kind = CONVEX_MESH

    def __post_init__(self):
        super().__post_init__()
        a, b, c = (self.vertices[self.faces[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        length = np.linalg.norm(n, axis=1)
        if np.any(length <= 0.0):
            raise ValueError(f"mesh {self.name!r}: a convex hull face is degenerate")
        n /= length[:, None]
        planes = np.concatenate([n, np.einsum("ij,ij->i", n, a)[:, None]], axis=1)
        planes.setflags(write=False)
        object.__setattr__(self, "planes", planes)
        object.__setattr__(self, "_key", ("convex",) + self._key[1:])

    def __eq__(self, other):
        return isinstance(other, ConvexMesh) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    @classmethod
    def from_points(cls, points, *, max_vertices: int = -1, name: str = "convex hull") -> "ConvexMesh":
        """The convex hull of ``points`` (N, 3). ``max_vertices`` > 0 keeps at most that many hull
        vertices (spread out by farthest-point sampling, then hulled again); −1 keeps them all.
        Points that span no volume (fewer than 4, collinear, coplanar) raise ``ValueError``."""
        from scipy.spatial import ConvexHull, QhullError

        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if isinstance(max_vertices, bool) or int(max_vertices) != max_vertices or (max_vertices < 4
                                                                                  and max_vertices != -1):
            raise ValueError(f"{name}: max_vertices must be -1 (no limit) or an integer >= 4, got {shown(max_vertices)}")
        if not np.all(np.isfinite(pts)):
            raise ValueError(f"{name}: the points must be finite")
        try:
            hull = ConvexHull(pts)
            if max_vertices > 0 and len(hull.vertices) > max_vertices:
                pts = _reduce_points(pts[hull.vertices], int(max_vertices))
                hull = ConvexHull(pts)
        except (QhullError, ValueError) as exc:
            raise ValueError(f"{name}: the convex hull cannot be built — the points span no volume "
                             f"(fewer than 4, collinear or coplanar): {str(exc).splitlines()[0]}") from None
        used = np.unique(hull.simplices)
        remap = np.full(len(pts), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        verts = pts[used]
        faces = remap[hull.simplices]
        # wind every face outward: its normal along qhull's outward plane normal
        a, b, c = (verts[faces[:, k]] for k in range(3))
        flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0.0
        faces[flip] = faces[flip][:, ::-1]
        return cls(verts, faces, name=name)

    def support(self, direction) -> np.ndarray:
        """The hull vertex farthest along ``direction`` (3,)."""
        return self.vertices[int(np.argmax(self.vertices @ np.asarray(direction, dtype=float)))]
