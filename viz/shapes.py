"""Scene shapes as meshes: each SDF's zero level set beside the source geometry.

Meshes live in the shape's local frame and are placed by a 4×4 transform, so moving a body
only updates transforms. The tessellation helpers are NumPy + trimesh (no Polyscope).
"""

from __future__ import annotations

import numpy as np

from hydro.geometry import BOX, CAPSULE, CONE, CONVEX_MESH, CYLINDER, ELLIPSOID, HEIGHTFIELD, MESH, PLANE, SPHERE
from hydro.sdf.level_set import sdf_level_set

from .backend import group, pose_matrix

#: colours of static shapes and of the shapes of bodies (cycled by body index)
STATIC_COLOR = (0.62, 0.64, 0.68)
BODY_COLORS = ((0.40, 0.60, 0.85), (0.55, 0.78, 0.55), (0.85, 0.70, 0.45), (0.70, 0.55, 0.80),
               (0.50, 0.78, 0.80), (0.85, 0.55, 0.55))
#: a plane has no extent: it is drawn as a square of this side (m)
PLANE_DRAW_SIZE = 2.0


def source_mesh(geometry, *, plane_size: float = PLANE_DRAW_SIZE):
    """``(vertices, faces)`` of the geometry as authored, in its local frame (a heightfield: its
    surface, :func:`heightfield_mesh`), or None.

    Primitives are tessellated with trimesh (canonical along +Z, as hydro's geometry is);
    meshes are returned as they are.
    """
    import trimesh

    kind = geometry.kind
    if kind in (MESH, CONVEX_MESH):
        return np.asarray(geometry.vertices), np.asarray(geometry.faces)
    if kind == SPHERE:
        tm = trimesh.creation.icosphere(subdivisions=4, radius=geometry.radius)
    elif kind == BOX:
        tm = trimesh.creation.box(extents=geometry.size)
    elif kind == CAPSULE:
        tm = trimesh.creation.capsule(height=geometry.height, radius=geometry.radius, count=[48, 24])
    elif kind == CYLINDER:
        tm = trimesh.creation.cylinder(radius=geometry.radius, height=geometry.height, sections=64)
    elif kind == CONE:
        tm = trimesh.creation.cone(radius=geometry.radius, height=geometry.height, sections=64)
        tm.apply_translation((0.0, 0.0, -0.5 * geometry.height))  # base at −h/2, apex at +h/2
    elif kind == ELLIPSOID:
        tm = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
        tm.apply_scale(geometry.radii)
    elif kind == HEIGHTFIELD:
        return heightfield_mesh(geometry)
    elif kind == PLANE:
        s = 0.5 * plane_size
        v = np.array([[-s, -s, 0.0], [s, -s, 0.0], [s, s, 0.0], [-s, s, 0.0]])
        return v, np.array([[0, 1, 2], [0, 2, 3]])
    else:
        return None
    return np.asarray(tm.vertices, dtype=float), np.asarray(tm.faces, dtype=np.int64)


def heightfield_mesh(geometry):
    """``(vertices, faces)`` of a heightfield's surface (its grid, two triangles a cell; local frame)."""
    return geometry.surface_mesh()


def shape_color(model, shape: int):
    body = int(model.shape_body[shape])
    return STATIC_COLOR if body < 0 else BODY_COLORS[body % len(BODY_COLORS)]


def shape_label(model, shape: int) -> str:
    return f"{shape}: {model.shape_path[shape]}"


class ShapeLayer:
    """Polyscope meshes of every shape: ``sdf`` (the SDF's zero level set) and ``source``.

    | attribute | meaning |
    |---|---|
    | ``show_sdf`` | draw the SDF meshes |
    | ``show_source`` | draw the source geometry |
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

    def draw(self, shape_poses) -> None:
        """Register (first time) or re-place every shape's meshes at world ``shape_poses`` (S,7)."""
        import polyscope as ps

        model = self.model
        group(self.GROUP)
        for s in range(model.shape_count):
            transform = pose_matrix(shape_poses[s])
            color = shape_color(model, s)
            label = shape_label(model, s)
            for kind, wanted in (("sdf", self.show_sdf), ("source", self.show_source)):
                key = (s, kind)
                name = self._names.get(key)
                if name is not None and not ps.has_surface_mesh(name):  # removed behind our back
                    del self._names[key]
                    name = None
                if name is None:
                    if not wanted:
                        continue
                    mesh = self._mesh(s, kind)
                    if mesh is None:
                        continue
                    name = f"{label} [{'SDF φ=0' if kind == 'sdf' else 'source'}]"
                    m = ps.register_surface_mesh(name, mesh[0], mesh[1], color=color, smooth_shade=kind == "source",
                                                 transparency=self.opacity(s), material="clay",
                                                 edge_width=0.0 if kind == "sdf" else 0.6,
                                                 edge_color=(0.3, 0.3, 0.3))
                    m.add_to_group(self.GROUP)
                    self._names[key] = name
                m = ps.get_surface_mesh(name)
                m.set_enabled(bool(wanted))
                m.set_transparency(self.opacity(s))
                m.set_transform(transform)

    def opacity(self, shape: int) -> float:
        """Polyscope's "transparency" is an opacity; static shapes get half of it (they are
        usually the large ones the patches lie in); a heightfield is opaque (its contacts are points
        on its surface, nothing lies inside it)."""
        if self.model.shape_geometry[shape].kind == HEIGHTFIELD:
            return 1.0
        return self.transparency * (0.5 if self.model.shape_body[shape] < 0 else 1.0)

    def _mesh(self, shape: int, kind: str):
        if kind == "source":
            return source_mesh(self.model.shape_geometry[shape])
        sdf = int(self.model.shape_sdf[shape])
        if sdf < 0:
            geometry = self.model.shape_geometry[shape]
            return heightfield_mesh(geometry) if geometry.kind == HEIGHTFIELD else None  # no SDF: its surface
        return self.sdf_mesh(sdf)

    def names(self) -> list:
        return list(self._names.values())
