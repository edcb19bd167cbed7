"""Scene shapes as meshes: each SDF's zero level set beside the source geometry; every collider
is drawn (a shape without an SDF — a plane, a default-path shape — as its geometry, a plane as a
gridded quad sized to the scene), each with its role (:func:`shape_role`).

Meshes live in the shape's local frame and are placed by a 4×4 transform, so moving a body
only updates transforms. The tessellation helpers are NumPy + trimesh (no Polyscope).
"""

from __future__ import annotations

import math

import numpy as np

from hydro.geometry import BOX, CAPSULE, CONE, CONVEX_MESH, CYLINDER, ELLIPSOID, HEIGHTFIELD, MESH, PLANE, SPHERE
from hydro.sdf.level_set import sdf_level_set

from .backend import group, pose_matrix

#: colours of static shapes and of the shapes of bodies (cycled by body index: twelve bodies, twelve colours)
STATIC_COLOR = (0.62, 0.64, 0.68)
BODY_COLORS = ((0.40, 0.60, 0.85), (0.55, 0.78, 0.55), (0.85, 0.70, 0.45), (0.70, 0.55, 0.80),
               (0.50, 0.78, 0.80), (0.85, 0.55, 0.55), (0.25, 0.40, 0.70), (0.35, 0.60, 0.30),
               (0.75, 0.50, 0.20), (0.50, 0.35, 0.65), (0.25, 0.60, 0.60), (0.70, 0.35, 0.45))
#: a plane and the grid drawn on it
PLANE_COLOR = (0.80, 0.80, 0.76)
PLANE_GRID_COLOR = (0.35, 0.35, 0.35)
PLANE_OPACITY = 0.55
#: a plane has no extent: without a scene to size it, it is drawn as a square of this side (m)
PLANE_DRAW_SIZE = 2.0

#: How each kind of geometry is drawn: ``kind → mesher(geometry, extent) → (vertices, faces)`` in
#: the shape's local frame (faces (M, 3) triangles or (M, 4) quads), or None when it cannot be
#: drawn. ``extent`` is ``(lo, hi)``, the local box of what the scene holds around the shape, for
#: kinds without a size of their own (a plane is drawn as a gridded quad over it); bounded kinds
#: ignore it. A new kind of shape is drawn by registering one function: ``@mesher(KIND)``.
MESHERS = {}


def mesher(*kinds):
    """Register the decorated ``fn(geometry, extent)`` as the mesher of ``kinds`` (:data:`MESHERS`)."""
    def register(fn):
        for kind in kinds:
            MESHERS[kind] = fn
        return fn

    return register


def _trimesh_arrays(tm):
    return np.asarray(tm.vertices, dtype=float), np.asarray(tm.faces, dtype=np.int64)


@mesher(MESH, CONVEX_MESH)
def _mesh_as_authored(geometry, extent=None):
    return np.asarray(geometry.vertices), np.asarray(geometry.faces)


@mesher(SPHERE)
def _sphere(geometry, extent=None):
    import trimesh

    return _trimesh_arrays(trimesh.creation.icosphere(subdivisions=4, radius=geometry.radius))


@mesher(BOX)
def _box(geometry, extent=None):
    import trimesh

    return _trimesh_arrays(trimesh.creation.box(extents=geometry.size))


@mesher(CAPSULE)
def _capsule(geometry, extent=None):
    import trimesh

    return _trimesh_arrays(trimesh.creation.capsule(height=geometry.height, radius=geometry.radius, count=[48, 24]))


@mesher(CYLINDER)
def _cylinder(geometry, extent=None):
    import trimesh

    return _trimesh_arrays(trimesh.creation.cylinder(radius=geometry.radius, height=geometry.height, sections=64))


@mesher(CONE)
def _cone(geometry, extent=None):
    import trimesh

    tm = trimesh.creation.cone(radius=geometry.radius, height=geometry.height, sections=64)
    tm.apply_translation((0.0, 0.0, -0.5 * geometry.height))  # base at −h/2, apex at +h/2
    return _trimesh_arrays(tm)


@mesher(ELLIPSOID)
def _ellipsoid(geometry, extent=None):
    import trimesh

    tm = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
    tm.apply_scale(geometry.radii)
    return _trimesh_arrays(tm)


@mesher(HEIGHTFIELD)
def heightfield_mesh(geometry, extent=None):
    """``(vertices, faces)`` of a heightfield's surface (its grid, two triangles a cell; local frame)."""
    return geometry.surface_mesh()


def grid_step(length: float, *, cells: int = 10) -> float:
    """A round cell size (1, 2 or 5 × 10^k m) giving about ``cells`` cells over ``length``."""
    raw = max(float(length), 1e-6) / cells
    k = math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** k >= raw:
            return m * 10.0 ** k
    return 10.0 ** (k + 1)


@mesher(PLANE)
def plane_mesh(geometry, extent=None):
    """The plane z = 0 as a gridded quad covering ``extent``'s x, y (local, padded by a quarter
    of its largest side, height included; a :data:`PLANE_DRAW_SIZE` square about the origin without one): quads of a round
    cell size (:func:`grid_step`), aligned to the plane's origin, so the edges draw a grid."""
    if extent is None:
        lo = np.full(2, -0.5 * PLANE_DRAW_SIZE)
        hi = -lo
    else:
        lo3, hi3 = (np.asarray(v, dtype=float) for v in extent)
        pad = 0.25 * max(float(np.max(hi3 - lo3)), 1e-3)  # height above the plane counts: bodies high
        lo, hi = lo3[:2] - pad, hi3[:2] + pad              # above it still stand over a plane that shows
    step = grid_step(float(np.max(hi - lo)))
    i0, i1 = np.floor(lo / step).astype(int), np.ceil(hi / step).astype(int)
    xs = step * np.arange(i0[0], i1[0] + 1)
    ys = step * np.arange(i0[1], i1[1] + 1)
    gx, gy = np.meshgrid(xs, ys, indexing="xy")
    vertices = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    idx = np.arange(gx.size).reshape(gx.shape)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], axis=-1).reshape(-1, 4)
    return vertices, quads


def source_mesh(geometry, *, extent=None):
    """``(vertices, faces)`` of the geometry as authored, in its local frame (:data:`MESHERS`), or
    None for a kind no mesher draws. Primitives are tessellated with trimesh (canonical along
    +Z, as hydro's geometry is); meshes are returned as they are; a plane is a gridded quad over
    ``extent`` (see :func:`plane_mesh`)."""
    fn = MESHERS.get(geometry.kind)
    return None if fn is None else fn(geometry, extent)


def shape_color(model, shape: int):
    if model.shape_geometry[shape].kind == PLANE:
        return PLANE_COLOR
    body = int(model.shape_body[shape])
    return STATIC_COLOR if body < 0 else BODY_COLORS[body % len(BODY_COLORS)]


def shape_label(model, shape: int) -> str:
    return f"{shape}: {model.shape_path[shape]}"


#: a shape's role: which contact path it takes
HYDROELASTIC = "hydroelastic"
DEFAULT_PATH = "default path"


def shape_role(model, shape: int) -> str:
    """``"hydroelastic"`` (an SDF: pressure-field patches with other hydroelastic shapes) or
    ``"default path"`` (point contacts: planes, shapes without hydroelastic contact)."""
    return HYDROELASTIC if model.shape_hydroelastic[shape] and model.shape_sdf[shape] >= 0 else DEFAULT_PATH


def role_text(model, shape: int) -> str:
    """One line for the panel: the shape's kind, role, and how it is drawn."""
    kind = model.shape_geometry[shape].kind_name
    if shape_role(model, shape) == HYDROELASTIC:
        return f"{kind}, hydroelastic: drawn as its SDF's zero level set; patches with hydroelastic shapes"
    drawn = "a gridded quad" if model.shape_geometry[shape].kind == PLANE else "its geometry, with edges"
    return f"{kind}, default path (point contacts): drawn as {drawn}"


class ShapeLayer:
    """Polyscope meshes of every shape: ``sdf`` (the SDF's zero level set) and ``source`` (the
    geometry: :func:`source_mesh`).

    | attribute | meaning |
    |---|---|
    | ``show_sdf`` | draw the SDF meshes; a shape without an SDF (a plane, a default-path shape) is then drawn as its geometry |
    | ``show_source`` | draw the source geometry of every shape |
    | ``transparency`` | opacity of the shape meshes, 0..1 (the patch lies inside both shapes of a pair) |
    """

    GROUP = "shapes"

    def __init__(self, model, *, show_sdf: bool = True, show_source: bool = False, transparency: float = 0.35):
        self.model = model
        self.show_sdf = show_sdf
        self.show_source = show_source
        self.transparency = transparency
        self._sdf_cache = {}  # sdf index -> (vertices, faces); SDFs are shared between shapes
        self._names = {}  # (shape, kind) -> structure name

    def sdf_mesh(self, sdf_index: int):
        """``(vertices, faces)`` of an SDF's zero level set in its shape's frame (cached)."""
        if sdf_index not in self._sdf_cache:
            mesh = sdf_level_set(self.model.sdfs[sdf_index])
            self._sdf_cache[sdf_index] = (mesh.vertices, mesh.faces)
        return self._sdf_cache[sdf_index]

    def set_model(self, model, *, rebuilt_sdf: int | None = None) -> None:
        """Draw ``model`` (an edited copy of the old one) from now on; ``rebuilt_sdf``: the index
        of an SDF that was rebuilt, whose mesh is made again."""
        self.model = model
        if rebuilt_sdf is not None:
            self.forget_sdf(rebuilt_sdf)

    def forget_sdf(self, sdf_index: int) -> None:
        """Drop a cached mesh (the SDF was rebuilt)."""
        self._sdf_cache.pop(sdf_index, None)
        for key in [k for k in self._names if k[1] == "sdf"]:
            if self.model.shape_sdf[key[0]] == sdf_index:
                self._remove(key)

    def _remove(self, key):
        import polyscope as ps

        name = self._names.pop(key, None)
        if name is not None and ps.has_surface_mesh(name):
            ps.remove_surface_mesh(name)

    def wanted(self, shape: int, kind: str) -> bool:
        """Whether the ``kind`` mesh of ``shape`` is shown: the SDF mesh when SDF meshes are on;
        the geometry when source meshes are on, or when SDF meshes are on and the shape has no
        SDF to show (every collider is drawn)."""
        if kind == "sdf":
            return self.show_sdf and self.model.shape_sdf[shape] >= 0
        return self.show_source or (self.show_sdf and self.model.shape_sdf[shape] < 0)

    def draw(self, shape_poses, scene_box=None) -> None:
        """Register (first time) or re-place every shape's meshes at world ``shape_poses`` (S,7).
        ``scene_box``: world (lo, hi) of what is drawn; a plane's quad is sized to cover it."""
        import polyscope as ps

        model = self.model
        group(self.GROUP)
        for s in range(model.shape_count):
            transform = pose_matrix(shape_poses[s])
            color = shape_color(model, s)
            label = shape_label(model, s)
            plane = model.shape_geometry[s].kind == PLANE
            for kind in ("sdf", "source"):
                wanted = self.wanted(s, kind)
                key = (s, kind)
                name = self._names.get(key)
                if name is not None and not ps.has_surface_mesh(name):  # removed behind our back
                    del self._names[key]
                    name = None
                if name is None:
                    if not wanted:
                        continue
                    mesh = self._mesh(s, kind, transform, scene_box)
                    if mesh is None:
                        continue
                    name = f"{label} [{'SDF φ=0' if kind == 'sdf' else 'source'}]"
                    m = ps.register_surface_mesh(name, mesh[0], mesh[1], color=color,
                                                 smooth_shade=kind == "source" and not plane,
                                                 transparency=self.opacity(s), material="clay",
                                                 edge_width=0.0 if kind == "sdf" else (1.0 if plane else 0.6),
                                                 edge_color=PLANE_GRID_COLOR if plane else (0.3, 0.3, 0.3),
                                                 back_face_policy="identical" if plane else "different")
                    m.add_to_group(self.GROUP)
                    self._names[key] = name
                m = ps.get_surface_mesh(name)
                m.set_enabled(bool(wanted))
                m.set_transparency(self.opacity(s))
                m.set_transform(transform)

    def opacity(self, shape: int) -> float:
        """Polyscope's "transparency" is an opacity; static shapes get 0.65 of it (they are
        usually the large ones the patches lie in), default-path shapes 1.6 times it (no patch
        lies inside them); a plane gets :data:`PLANE_OPACITY` (its grid
        must show under the shapes standing on it)."""
        if self.model.shape_geometry[shape].kind == PLANE:
            return max(PLANE_OPACITY, self.transparency)
        if self.model.shape_geometry[shape].kind == HEIGHTFIELD:  # its contacts are points on its surface
            return 1.0
        if shape_role(self.model, shape) == DEFAULT_PATH:  # no patch inside to see through to: more solid
            return min(1.0, 1.6 * self.transparency)
        return self.transparency * (0.65 if self.model.shape_body[shape] < 0 else 1.0)

    def _mesh(self, shape: int, kind: str, transform=None, scene_box=None):
        if kind == "source":
            extent = None
            if scene_box is not None and transform is not None:
                extent = local_box(scene_box, transform)
            return source_mesh(self.model.shape_geometry[shape], extent=extent)
        sdf = int(self.model.shape_sdf[shape])
        if sdf < 0:
            return None
        return self.sdf_mesh(sdf)

    def names(self) -> list:
        return list(self._names.values())

    def shape_names(self, shape: int) -> list:
        """The Polyscope surface meshes drawn for ``shape`` (its SDF mesh, its geometry)."""
        return [name for (s, _), name in self._names.items() if s == shape]


def local_box(world_box, transform) -> tuple:
    """The box (lo, hi) in a shape's frame (``transform``: 4×4 local → world) that holds the
    corners of ``world_box``."""
    lo, hi = (np.asarray(v, dtype=float) for v in world_box)
    corners = np.array([[(hi if (c >> k) & 1 else lo)[k] for k in range(3)] for c in range(8)])
    local = (corners - transform[:3, 3]) @ transform[:3, :3]
    return local.min(axis=0), local.max(axis=0)
