"""Repairing a mesh so that it bounds a solid, without moving its surface (``hydro mesh repair``).

The steps keep the geometry: weld vertices by position; drop collapsed faces, duplicated faces
and pairs of coincident faces wound opposite ways; make the winding consistent and outward
(trimesh's ``fix_normals``, per connected body); close each hole with a fan of triangles from
the centre of its rim (one apex per connected rim), only where the rim is flat: within the limit of
its best-fit plane, so that the fill is the plane the rim spans and invents no shape. Then the
surface displacement is measured both ways against the input triangles: how far any point of the
kept (non-fill) surface lies from the original surface, and how far any original vertex or face
centroid lies from the repaired one. A repair that leaves the mesh open, fills a hole whose rim is
not flat, or moves the surface by more than ``max_displacement`` (default: one voxel of the
shape's SDF at the given resolution), is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, shown
from .mesh_check import drop_cancelling_faces, edge_topology, weld
from .mesh_winding import net_boundary_edges

__all__ = ["RepairReport", "repair_mesh"]


@dataclass
class RepairReport:
    """What :func:`repair_mesh` did and whether the result is accepted."""

    name: str
    steps: list = field(default_factory=list)
    closed: bool = False
    displacement: float = 0.0  # m: farthest point of the repaired surface from the original surface
    coverage: float = 0.0  # m: farthest original vertex / face centroid from the repaired surface
    max_displacement: float = 0.0  # m: the limit (a voxel unless given)
    added_faces: int = 0
    removed_faces: int = 0
    fill_flatness: float = 0.0  # m: farthest rim vertex of a filled hole from its rim's best-fit plane
    fill_area: float = 0.0  # m²: area of the triangles added to close holes

    @property
    def accepted(self) -> bool:
        return (self.closed and max(self.displacement, self.coverage) <= self.max_displacement
                and self.fill_flatness <= self.max_displacement)

    def reason(self) -> str:
        if not self.closed:
            return "the mesh is still not closed after the repair"
        if self.fill_flatness > self.max_displacement:
            return (f"a hole's rim is {self.fill_flatness:.4g} m off a plane (more than the {self.max_displacement:.4g} m "
                    f"allowed, one voxel): filling it would invent surface; close it in a modelling tool, or use the "
                    f"mesh's convex hull (physics:approximation = \"convexHull\"), or the default (point) contact path, "
                    f"which takes open meshes")
        if max(self.displacement, self.coverage) > self.max_displacement:
            return (f"the repair moves the surface by {max(self.displacement, self.coverage):.4g} m, more than the "
                    f"{self.max_displacement:.4g} m allowed (one voxel): fix the mesh in a modelling tool, or use its "
                    f"convex hull (physics:approximation = \"convexHull\")")
        return ""

    def summary(self) -> str:
        lines = [f"mesh         {self.name}"]
        lines.extend(f"step         {s}" for s in self.steps)
        lines.append(f"faces        {self.added_faces} added, {self.removed_faces} removed; closed: {self.closed}")
        if self.added_faces:
            lines.append(f"fill         {self.fill_area:.4g} m² of flat patches; rims off their planes by <= "
                         f"{self.fill_flatness:.4g} m")
        lines.append(f"displacement {self.displacement:.4g} m (kept surface from the original), {self.coverage:.4g} m "
                     f"(original from the repaired); limit {self.max_displacement:.4g} m")
        lines.append("repair ACCEPTED" if self.accepted else f"repair REFUSED: {self.reason()}")
        return "\n".join(lines)


def _cap_holes(v, f):
    """Close every hole: per connected group of boundary edges (used once), a fan of triangles
    from the group's centroid, wound to cancel the rim. Returns (vertices, faces, holes, flatness):
    flatness, the largest distance of a rim vertex from its rim's best-fit plane."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    e_lo, e_hi, net = net_boundary_edges(v, f)
    if len(net) == 0:
        return v, f, 0, 0.0
    verts, idx = np.unique(np.concatenate([e_lo, e_hi]), return_inverse=True)
    k = len(net)
    g = coo_matrix((np.ones(k), (idx[:k], idx[k:])), shape=(len(verts), len(verts)))
    n_holes, label = connected_components(g, directed=False)
    apex = np.zeros((n_holes, 3))
    np.add.at(apex, label, v[verts])
    apex /= np.bincount(label, minlength=n_holes)[:, None]
    apex_index = len(v) + np.arange(n_holes)
    mult = np.abs(net)
    first = np.repeat(np.where(net > 0, e_hi, e_lo), mult)
    second = np.repeat(np.where(net > 0, e_lo, e_hi), mult)
    hole = np.repeat(label[idx[:k]], mult)
    cap = np.stack([first, second, apex_index[hole]], axis=1)
    flatness = 0.0
    for h in range(n_holes):
        rim = v[verts[label == h]]
        centred = rim - rim.mean(axis=0)
        normal = np.linalg.svd(centred, full_matrices=False)[2][-1]
        flatness = max(flatness, float(np.abs(centred @ normal).max()))
    return np.concatenate([v, apex]), np.concatenate([f, cap]), n_holes, flatness


def _surface_samples(v, f, *, per_edge: int, rng) -> np.ndarray:
    """Points on every triangle (a barycentric lattice with ``per_edge`` steps per edge)."""
    steps = np.arange(per_edge + 1) / per_edge
    i, j = np.meshgrid(steps, steps, indexing="ij")
    keep = i + j <= 1.0 + 1e-12
    bi, bj = i[keep], j[keep]
    a, b, c = (v[f[:, k]] for k in range(3))
    pts = a[:, None] + bi[None, :, None] * (b - a)[:, None] + bj[None, :, None] * (c - a)[:, None]
    return pts.reshape(-1, 3)


def repair_mesh(mesh, *, max_displacement: float | None = None, resolution: int = 64,
                weld_tolerance: float | None = None, sample_count: int = 20000, seed: int = 0):
    """Repair ``mesh`` (see the module docstring). Returns ``(repaired Mesh, RepairReport)``;
    check ``report.accepted`` before using the mesh."""
    import trimesh

    from ..sdf.layout import SDFSettings, grid_layout
    from .shapes import Mesh

    rng = np.random.default_rng(seed)
    report = RepairReport(name=mesh.name)
    if max_displacement is None:
        lo, hi = mesh.local_aabb()
        max_displacement = grid_layout(lo, hi, SDFSettings(max_resolution=resolution))[1]
    if not np.isfinite(max_displacement) or max_displacement < 0.0:
        raise InputError(f"max_displacement must be a finite number >= 0, got {shown(max_displacement)}")
    report.max_displacement = float(max_displacement)

    v, f, w = weld(mesh.vertices, mesh.faces, tolerance=weld_tolerance)
    report.steps.append(w.summary())
    n_in = len(mesh.faces)
    # duplicated faces (same vertices, same winding) and walls (same vertices, opposite windings)
    canon = np.sort(f, axis=1)
    k = np.argmin(f, axis=1)
    rows = np.arange(len(f))
    orient = f[rows, (k + 1) % 3] < f[rows, (k + 2) % 3]
    _, first = np.unique(np.concatenate([canon, orient[:, None]], axis=1), axis=0, return_index=True)
    dup = len(f) - len(first)
    f = f[np.sort(first)]
    if dup:
        report.steps.append(f"removed {dup} duplicated face(s)")
    f, walls = drop_cancelling_faces(f)
    if walls:
        report.steps.append(f"removed {walls} pair(s) of coincident faces wound opposite ways")
    # consistent, outward winding per connected body
    tm = trimesh.Trimesh(v, f, process=False)
    before = tm.faces.copy()
    trimesh.repair.fix_normals(tm, multibody=True)
    flipped = int(np.sum(np.any(np.asarray(tm.faces) != before, axis=1)))
    if flipped:
        report.steps.append(f"reoriented {flipped} face(s) (consistent, outward winding)")
    v = np.asarray(tm.vertices, dtype=np.float64)
    f = np.asarray(tm.faces, dtype=np.int64)
    n_before_caps = len(f)
    v, f, holes, report.fill_flatness = _cap_holes(v, f)
    if holes:
        fill = f[n_before_caps:]
        report.fill_area = float(0.5 * np.linalg.norm(np.cross(v[fill[:, 1]] - v[fill[:, 0]],
                                                               v[fill[:, 2]] - v[fill[:, 0]]), axis=1).sum())
        report.steps.append(f"closed {holes} hole(s) with {len(f) - n_before_caps} triangle(s) (flat fans)")
    report.added_faces = len(f) - n_before_caps
    report.removed_faces = n_in - n_before_caps
    topo = edge_topology(f, len(v))
    report.closed = topo.closed
    if topo.closed:
        vol = float(np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum() / 6.0)
        if vol < 0.0:
            f = f[:, ::-1].copy()
            report.steps.append("inverted every face (the mesh was wound inward)")
    repaired = Mesh(v, f, name=mesh.name)

    # displacement, both ways, against the original triangles
    from .mesh_distance import MeshDistance

    to_original = MeshDistance(mesh, sign="unsigned")
    kept = f[:n_before_caps]
    pts = [v[np.unique(kept)], _surface_samples(v, kept, per_edge=2, rng=rng),
           np.asarray(trimesh.sample.sample_surface(trimesh.Trimesh(v, kept, process=False), sample_count,
                                                    seed=seed)[0])]
    report.displacement = float(to_original.signed_distance(np.concatenate(pts)).max())
    to_repaired = MeshDistance(repaired, sign="unsigned")
    orig_pts = np.concatenate([mesh.vertices, mesh.vertices[mesh.faces].mean(axis=1)])
    report.coverage = float(to_repaired.signed_distance(orig_pts).max())
    return repaired, report
