"""Looking inside a shape's SDF: a slice of φ with contour lines, iso-surfaces, fine bricks.

The helpers at the top are NumPy only (and tested without Polyscope): the slice's sample grid,
marching squares for contour lines, the boxes of the fine bricks. :class:`SDFLayer` draws them
for one shape in the shape's frame, placed by the shape's pose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hydro.sdf.level_set import sdf_level_set

from .backend import add_scalar, group, pose_matrix, remove_structures

AXES = ("x", "y", "z")

# marching squares: corners 0 (0,0), 1 (1,0), 2 (1,1), 3 (0,1); edges 0: 0-1, 1: 1-2, 2: 3-2, 3: 0-3
_SQ_CORNERS = np.array([[0, 0], [1, 0], [1, 1], [0, 1]])
_SQ_EDGES = np.array([[0, 1], [1, 2], [3, 2], [0, 3]])
# segments per case (corner bit set when below the level); saddles 5 and 10 are resolved below
_SQ_SEGMENTS = {1: [(3, 0)], 2: [(0, 1)], 3: [(3, 1)], 4: [(1, 2)], 6: [(0, 2)], 7: [(3, 2)], 8: [(2, 3)],
                9: [(0, 2)], 11: [(1, 2)], 12: [(1, 3)], 13: [(0, 1)], 14: [(0, 3)]}
_SADDLE = {  # (case, centre below the level) -> segments
    (5, True): [(0, 1), (2, 3)], (5, False): [(3, 0), (1, 2)],
    (10, True): [(3, 0), (1, 2)], (10, False): [(0, 1), (2, 3)],
}


def contour_segments(values, level: float = 0.0, *, origin=(0.0, 0.0), spacing=(1.0, 1.0)) -> np.ndarray:
    """Marching squares: the segments of ``values == level``, shape (K, 2, 2).

    ``values[j, i]`` sits at ``origin + spacing·(i, j)``. Saddle cells are split by the value at
    the cell centre (the mean of its corners).
    """
    v = np.asarray(values, dtype=np.float64) - float(level)
    ny, nx = (s - 1 for s in v.shape)
    if nx < 1 or ny < 1:
        return np.zeros((0, 2, 2))
    below = v < 0.0
    cases = (below[:-1, :-1].astype(int) | below[:-1, 1:] << 1 | below[1:, 1:] << 2 | below[1:, :-1] << 3)
    centre_below = (v[:-1, :-1] + v[:-1, 1:] + v[1:, 1:] + v[1:, :-1]) < 0.0
    origin = np.asarray(origin, dtype=float)
    spacing = np.asarray(spacing, dtype=float)
    out = []
    for case in range(1, 15):
        for saddle_below in ((True, False) if case in (5, 10) else (None,)):
            sel = cases == case
            if saddle_below is not None:
                sel &= centre_below == saddle_below
                segs = _SADDLE[(case, saddle_below)]
            else:
                segs = _SQ_SEGMENTS[case]
            j, i = np.nonzero(sel)
            if len(j) == 0:
                continue
            for e0, e1 in segs:
                out.append(np.stack([_edge_point(v, i, j, e0), _edge_point(v, i, j, e1)], axis=1))
    if not out:
        return np.zeros((0, 2, 2))
    pts = np.concatenate(out)
    return origin + spacing * pts


def _edge_point(v, i, j, e):
    c0, c1 = _SQ_EDGES[e]
    p0 = _SQ_CORNERS[c0]
    p1 = _SQ_CORNERS[c1]
    f0 = v[j + p0[1], i + p0[0]]
    f1 = v[j + p1[1], i + p1[0]]
    d = f1 - f0
    t = np.where(d == 0.0, 0.5, -f0 / np.where(d == 0.0, 1.0, d))
    x = i + p0[0] + t * (p1[0] - p0[0])
    y = j + p0[1] + t * (p1[1] - p0[1])
    return np.stack([x, y], axis=1)


@dataclass
class SliceGrid:
    """Samples of a plane through a shape's SDF box, normal to local axis ``axis`` at ``offset``.

    ``points`` (nv, nu, 3) local positions; ``u_axis``/``v_axis`` the in-plane local axes;
    ``origin_uv``/``spacing_uv`` map sample (i, j) to in-plane coordinates.
    """

    axis: int
    offset: float
    u_axis: int
    v_axis: int
    points: np.ndarray
    origin_uv: np.ndarray
    spacing_uv: np.ndarray

    def to_local(self, uv) -> np.ndarray:
        """In-plane coordinates (..., 2) → local 3-D points."""
        uv = np.asarray(uv, dtype=float)
        out = np.empty(uv.shape[:-1] + (3,))
        out[..., self.axis] = self.offset
        out[..., self.u_axis] = uv[..., 0]
        out[..., self.v_axis] = uv[..., 1]
        return out


def slice_grid(sdf, axis: int, offset: float, *, samples_per_voxel: int = 2) -> SliceGrid:
    """The plane ``local[axis] = offset`` clipped to the SDF's box, sampled finer than its voxels."""
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0, 1 or 2 (x, y, z), got {axis!r}")
    u, v = [a for a in range(3) if a != axis]
    lo, hi = sdf.box_lo, sdf.box_hi
    offset = float(np.clip(offset, lo[axis], hi[axis]))
    res = np.asarray(sdf.resolution)
    nu, nv = res[u] * samples_per_voxel, res[v] * samples_per_voxel
    su = (hi[u] - lo[u]) / nu
    sv = (hi[v] - lo[v]) / nv
    U, V = np.meshgrid(lo[u] + su * np.arange(nu + 1), lo[v] + sv * np.arange(nv + 1), indexing="xy")
    pts = np.empty(U.shape + (3,))
    pts[..., axis] = offset
    pts[..., u] = U
    pts[..., v] = V
    return SliceGrid(axis, offset, u, v, pts, np.array([lo[u], lo[v]]), np.array([su, sv]))


def fine_brick_boxes(sdf) -> np.ndarray:
    """(K, 2, 3) local (lo, hi) corners of the SDF's fine bricks."""
    bz, by, bx = np.nonzero(np.asarray(sdf.brick_slot) >= 0)
    lo = sdf.origin + 8 * sdf.voxel_size * np.stack([bx, by, bz], axis=1)
    return np.stack([lo, lo + 8 * sdf.voxel_size], axis=1)


def brick_is_fine(sdf, points) -> np.ndarray:
    """Whether each local point (N,3) lies in a fine brick (False outside the box)."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    b = np.floor((pts - sdf.origin) / (8 * sdf.voxel_size)).astype(np.int64)
    nb = np.asarray(sdf.resolution) // 8
    b = np.minimum(b, nb - 1)  # the box's upper faces belong to the last brick
    inside = np.all((b >= 0) & (b < nb), axis=1)
    out = np.zeros(len(pts), dtype=bool)
    bi = b[inside]
    out[inside] = np.asarray(sdf.brick_slot)[bi[:, 2], bi[:, 1], bi[:, 0]] >= 0
    return out


def box_edges(boxes) -> tuple:
    """Wireframes of boxes (K, 2, 3): ``(nodes (8K, 3), edges (12K, 2))`` for a curve network."""
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 2, 3)
    corner = np.array([[(c >> k) & 1 for k in range(3)] for c in range(8)])
    nodes = boxes[:, 0, None, :] + corner[None] * (boxes[:, 1] - boxes[:, 0])[:, None, :]
    local = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [0, 2], [1, 3], [4, 6], [5, 7], [0, 4], [1, 5], [2, 6], [3, 7]])
    edges = (np.arange(len(boxes)) * 8)[:, None, None] + local[None]
    return nodes.reshape(-1, 3), edges.reshape(-1, 2)


def default_levels(sdf) -> list:
    """Contour levels that say something at this shape's scale: 0, ±2 and ±4 voxels, and the
    band edges when they fall inside the box."""
    h = sdf.voxel_size
    levels = {0.0, -2 * h, 2 * h, -4 * h, 4 * h}
    half = 0.5 * float(np.min(sdf.box_hi - sdf.box_lo))
    for edge in (sdf.settings.narrow_band_inner, sdf.settings.narrow_band_outer):
        if abs(edge) < half:
            levels.add(edge)
    return sorted(levels)


# ============================================================================================


@dataclass
class SliceSettings:
    """What :class:`SDFLayer` shows for its shape."""

    axis: int = 1
    """Local axis normal to the slice plane (0 x, 1 y, 2 z)."""
    offset: float = 0.0
    """Position of the plane along that axis, local (m)."""
    levels: list = field(default_factory=list)
    """φ of the contour lines (m); empty: :func:`default_levels`."""
    show_slice: bool = True
    show_contours: bool = True
    cut_shapes: bool = True
    """Cut the shape meshes with a Polyscope slice plane at the slice, so the slice is seen."""
    keep_positive_side: bool | None = None
    """Keep the geometry on the +axis (True) or −axis (False) side of the cut; None: the side
    away from the camera when drawn, so the slice faces the viewer."""
    iso_levels: list = field(default_factory=list)
    """φ of extra iso-surfaces (m)."""
    show_band_edges: bool = False
    """Iso-surfaces at the narrow band's inner and outer edges."""
    show_fine_bricks: bool = False
    """Wireframes of the fine bricks the slice plane cuts (the rest of the box is coarse), and
    of the SDF's box."""
    all_fine_bricks: bool = False
    """Wireframes of every fine brick, not only those the slice cuts."""
    isolines: bool = False
    """Polyscope's periodic isolines on the slice (one per voxel of φ), besides the contours."""


LEVEL_COLORS = ((0.23, 0.30, 0.75), (0.35, 0.55, 0.95), (0.05, 0.05, 0.05), (0.95, 0.55, 0.30), (0.75, 0.15, 0.15))


def level_color(level: float, levels) -> tuple:
    """Contour colours: black at 0, blues inside (φ < 0), oranges/reds outside."""
    if level == 0.0:
        return LEVEL_COLORS[2]
    same_side = sorted(abs(x) for x in levels if x != 0.0 and (x < 0) == (level < 0))
    far = same_side.index(abs(level)) >= len(same_side) / 2 if same_side else False
    if level < 0:
        return LEVEL_COLORS[0] if far else LEVEL_COLORS[1]
    return LEVEL_COLORS[4] if far else LEVEL_COLORS[3]


class SDFLayer:
    """The inside of one shape's SDF (see :class:`SliceSettings`)."""

    GROUP = "sdf"
    PLANE = "hydro slice"

    def __init__(self, model, shape: int, settings: SliceSettings | None = None):
        if model.shape_sdf[shape] < 0:
            raise ValueError(f"shape {model.shape_path[shape]} has no SDF to slice")
        self.model = model
        self.shape = int(shape)
        self.settings = settings or SliceSettings()
        self._names = []
        self._iso_cache = {}

    @property
    def sdf(self):
        return self.model.sdfs[self.model.shape_sdf[self.shape]]

    def levels(self) -> list:
        return sorted(self.settings.levels) if self.settings.levels else default_levels(self.sdf)

    def remove(self) -> None:
        import polyscope as ps

        remove_structures(self._names)
        self._names = []
        try:
            ps.remove_slice_plane(self.PLANE)
        except Exception:
            pass

    def draw(self, shape_poses) -> None:
        """(Re)draw everything for the shape at world ``shape_poses`` (S,7)."""
        import polyscope as ps

        self.remove()
        cfg = self.settings
        sdf = self.sdf
        transform = pose_matrix(shape_poses[self.shape])
        group(self.GROUP)
        prefix = f"SDF {self.shape}"
        grid = slice_grid(sdf, cfg.axis, cfg.offset)
        phi = sdf.sample(grid.points.reshape(-1, 3)).reshape(grid.points.shape[:2])
        nv, nu = phi.shape
        if cfg.show_slice:
            idx = np.arange(nv * nu).reshape(nv, nu)
            quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], axis=-1).reshape(-1, 4)
            name = f"{prefix} slice {AXES[cfg.axis]}={grid.offset:+.4f}"
            m = ps.register_surface_mesh(name, grid.points.reshape(-1, 3), quads, material="flat",
                                         back_face_policy="identical")
            reach = float(np.max(np.abs(phi))) or sdf.voxel_size
            iso = dict(isolines_enabled=True, isoline_style="contour", isoline_period=sdf.voxel_size,
                       isoline_darkness=0.5) if cfg.isolines else dict(isolines_enabled=False)
            add_scalar(m, "φ (m)", phi.reshape(-1), enabled=True, cmap="coolwarm", vminmax=(-reach, reach),
                       onscreen_colorbar_enabled=True, **iso)  # the colour bar says what φ a colour is
            add_scalar(m, "fine brick (1) / coarse (0)", brick_is_fine(sdf, grid.points.reshape(-1, 3)).astype(float),
                       datatype="categorical", enabled=False)
            m.set_transform(transform)
            m.add_to_group(self.GROUP)
            self._names.append(("surface_mesh", name))
        if cfg.show_contours:
            radius = 0.25 * sdf.voxel_size
            lift = 1e-3 * sdf.voxel_size  # just off the plane so the lines are never hidden by it
            for level in self.levels():
                segs = contour_segments(phi, level, origin=grid.origin_uv, spacing=grid.spacing_uv)
                if len(segs) == 0:
                    continue
                nodes = grid.to_local(segs).reshape(-1, 3)
                name = f"{prefix} contour φ={level * 1e3:+.2f} mm"
                for side in (+1, -1):
                    n = nodes.copy()
                    n[:, cfg.axis] += side * lift
                    nm = name + ("" if side > 0 else " (back)")
                    c = ps.register_curve_network(nm, n, "segments", radius=radius, color=level_color(level, self.levels()),
                                                  material="flat")
                    c.set_radius(radius, relative=False)
                    c.set_transform(transform)
                    c.add_to_group(self.GROUP)
                    self._names.append(("curve_network", nm))
        iso = list(cfg.iso_levels)
        if cfg.show_band_edges:
            iso += [sdf.settings.narrow_band_inner, sdf.settings.narrow_band_outer]
        for level in iso:
            key = (int(self.model.shape_sdf[self.shape]), float(level))
            if key not in self._iso_cache:
                mesh = sdf_level_set(sdf, level)
                self._iso_cache[key] = (mesh.vertices, mesh.faces)
            v, f = self._iso_cache[key]
            if len(f) == 0:
                continue
            name = f"{prefix} iso φ={level * 1e3:+.2f} mm"
            m = ps.register_surface_mesh(name, v, f, color=level_color(level, iso + [0.0]), transparency=0.3,
                                         material="flat")
            m.set_transform(transform)
            m.add_to_group(self.GROUP)
            self._names.append(("surface_mesh", name))
        if cfg.show_fine_bricks:
            boxes = fine_brick_boxes(sdf)
            if not cfg.all_fine_bricks:
                boxes = boxes[(boxes[:, 0, cfg.axis] <= grid.offset) & (boxes[:, 1, cfg.axis] >= grid.offset)]
            self._wireframe(f"{prefix} fine bricks", boxes, (0.9, 0.5, 0.1), 0.04 * sdf.voxel_size, transform)
            self._wireframe(f"{prefix} SDF box", np.stack([sdf.box_lo, sdf.box_hi])[None], (0.4, 0.4, 0.4),
                            0.06 * sdf.voxel_size, transform)
        if cfg.cut_shapes and cfg.show_slice:
            plane = ps.add_slice_plane(self.PLANE)
            normal_local = np.zeros(3)
            normal_local[cfg.axis] = 1.0
            point_local = np.zeros(3)
            point_local[cfg.axis] = grid.offset
            point = transform[:3, :3] @ point_local + transform[:3, 3]
            normal = transform[:3, :3] @ normal_local
            keep_positive = cfg.keep_positive_side
            if keep_positive is None:  # keep what lies beyond the plane, seen from the camera
                eye = np.asarray(ps.get_view_camera_parameters().get_position(), dtype=float)
                keep_positive = float(np.dot(eye - point, normal)) < 0.0
            normal = normal if keep_positive else -normal
            plane.set_pose(point - 1e-3 * sdf.voxel_size * normal, normal)
            plane.set_draw_plane(False)
            plane.set_draw_widget(False)
            for kind, name in self._names:
                getattr(ps, f"get_{kind}")(name).set_ignore_slice_plane(self.PLANE, True)

    def _wireframe(self, name: str, boxes, color, radius: float, transform) -> None:
        """Box edges (K, 2, 3 local corners) as one curve network placed by ``transform``."""
        import polyscope as ps

        nodes, edges = box_edges(boxes)
        if len(edges) == 0:
            return
        c = ps.register_curve_network(name, nodes, edges, color=color, material="flat")
        c.set_radius(radius, relative=False)
        c.set_transform(transform)
        c.add_to_group(self.GROUP)
        self._names.append(("curve_network", name))

    def ignore_slice(self, kind: str, name: str) -> None:
        """Keep structure ``name`` (e.g. the contact patch) uncut by this layer's slice plane."""
        import polyscope as ps

        if self.settings.cut_shapes and self.settings.show_slice:
            try:
                getattr(ps, f"get_{kind}")(name).set_ignore_slice_plane(self.PLANE, True)
            except Exception:
                pass
