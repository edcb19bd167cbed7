"""What a triangle mesh is made of, and the solid it bounds: welding, topology, pieces, union.

(Over 500 lines on purpose: each step feeds the next and the checks report on all of them.)

Real meshes arrive with each triangle's own vertices (STL), vertices split at texture seams
(OBJ), several closed pieces that touch or overlap (convex decompositions, CAD assemblies),
holes, flipped faces. Everything hydro does with a mesh's inside goes through here:

1. :func:`weld` merges vertices closer than a tolerance relative to the mesh's size
   (:data:`WELD_TOLERANCE` × the bounding-box diagonal) and drops the faces that collapse.
2. :func:`edge_topology` counts, per undirected edge, the faces that use it in each direction.
   The mesh is *closed* when every edge is used as often a→b as b→a: then its winding number
   is an integer everywhere (0 outside) and the mesh bounds a solid. Boundary edges (one use),
   edges used twice the same way (inconsistent winding) and unbalanced non-manifold edges
   break it; each is named with its fix.
3. :func:`mesh_solid` splits a closed mesh into *shells* (faces connected through edges with
   exactly one use each way). One shell, or shells whose boxes are apart, bound the solid as
   they are. Shells that touch or overlap (or share an edge) leave surfaces *inside* the solid,
   where the closest-feature sign is wrong and the distance has a false zero: they are merged
   into their union (exact boolean through trimesh's manifold engine; inward-wound shells are
   cavities and are subtracted). If the union cannot be formed, the solid keeps every triangle
   and takes its sign from winding numbers instead (reported as ``sign="winding"``).

:func:`inspect_mesh` reports all of it (``hydro mesh check``); :func:`reference_signed_distance`
is the signed distance that tests and ``hydro sdf`` compare fields with: its sign comes from the
winding number of the mesh as given, never from the solid built here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..errors import HydroWarning, InputError
from .mesh_distance import MeshDistance
from .mesh_weld import WELD_TOLERANCE, WeldReport, weld
from .mesh_winding import WindingNumber

__all__ = ["MeshWarning", "size_warnings", "scene_size_warnings", "LARGEST_PLAUSIBLE", "SMALLEST_PLAUSIBLE", "WELD_TOLERANCE", "WeldReport", "EdgeTopology", "MeshSolid", "MeshCheck", "weld", "edge_topology",
           "mesh_solid", "inspect_mesh", "reference_signed_distance", "open_mesh_message"]


_FIXES_OPEN = ("`hydro mesh repair PATH -o OUT` closes small holes and reorients faces (it reports how far the "
               "surface moved and refuses more than a voxel); or use the mesh's convex hull "
               "(physics:approximation = \"convexHull\"); or leave hydroelastic contact off for this shape: "
               "the default (point) contact path takes open meshes")


#: A mesh longer than this (m) along its longest side is implausible for a robot part or an
#: object; a CAD file in millimetres read as metres is the usual cause.
LARGEST_PLAUSIBLE = 20.0
#: A mesh shorter than this (m) along its longest side is implausible (a file in metres read as
#: kilometres, or a scale applied twice).
SMALLEST_PLAUSIBLE = 1e-3


class MeshWarning(HydroWarning):
    """A mesh that builds, but probably not as meant (its size, units or resolution)."""


def size_warnings(mesh, *, voxel: float | None = None, narrow_band_inner: float | None = None,
                  narrow_band_outer: float | None = None, scene_size: float | None = None,
                  scale_fix: str = "load it with Mesh.load(path, scale=0.001)",
                  resolution_fix: str = "raise sdfMaxResolution / set sdfTargetVoxelSize") -> list:
    """Why ``mesh``'s size looks wrong, one message each (empty when it looks right): longer than
    :data:`LARGEST_PLAUSIBLE` or shorter than :data:`SMALLEST_PLAUSIBLE`; more than 100 times
    larger or smaller than ``scene_size`` (m, e.g. the median size of the scene's other shapes);
    a ``voxel`` wider than the narrow band [``narrow_band_inner``, ``narrow_band_outer``].

    ``scale_fix`` and ``resolution_fix`` say how to rescale the mesh and refine its SDF in the
    words of the interface the user is in (the defaults: the Python API and the USD attributes;
    ``hydro mesh check`` passes its ``--scale`` and ``--resolution`` flags)."""
    lo, hi = mesh.local_aabb()
    longest = float(np.max(hi - lo))
    out = []
    units = f"is it authored in millimetres or centimetres? Set the stage's metersPerUnit (USD) or {scale_fix}"
    if longest > LARGEST_PLAUSIBLE:
        out.append(f"mesh {mesh.name!r} is {longest:.4g} m long: implausibly large for a robot part or an object; {units}")
    elif 0.0 < longest < SMALLEST_PLAUSIBLE:
        out.append(f"mesh {mesh.name!r} is {longest:.3g} m long: implausibly small; check its units (metersPerUnit, "
                   f"or {scale_fix.replace('0.001', '...')})")
    if scene_size is not None:
        out += scene_size_warnings(mesh, scene_size)
    if voxel is not None and narrow_band_inner is not None and narrow_band_outer is not None:
        band = min(-narrow_band_inner, narrow_band_outer)
        if voxel > band:
            out.append(f"mesh {mesh.name!r}: its SDF voxel ({voxel:.4g} m) is wider than the narrow band "
                       f"[{narrow_band_inner:g}, {narrow_band_outer:g}] m, so the band holds less than one voxel; "
                       f"check the mesh's units, or {resolution_fix}")
    return out


def scene_size_warnings(mesh, scene_size: float) -> list:
    """A message when ``mesh`` is more than 100 times larger or smaller than ``scene_size`` (m, the
    typical size of the other shapes of its scene): its units are likely not the scene's."""
    lo, hi = mesh.local_aabb()
    longest = float(np.max(hi - lo))
    if not (scene_size > 0.0 and longest > 0.0 and math.isfinite(scene_size)):
        return []
    ratio = longest / scene_size
    if 0.01 <= ratio <= 100.0:
        return []
    return [f"mesh {mesh.name!r} is {longest:.4g} m long, {ratio:.3g} times the typical shape of its scene "
            f"({scene_size:.4g} m): are its units those of the scene?"]


@dataclass(frozen=True)
class EdgeTopology:
    """Per undirected edge of a (welded) mesh, how its faces use it.

    ``closed``: every edge is used as often in each direction (the winding number is then an
    integer everywhere, 0 far away: the mesh bounds a solid)."""

    edge_count: int
    boundary_edges: int  # used by one face only (a hole's rim)
    misoriented_edges: int  # two faces, both the same direction (neighbours wound inconsistently)
    nonmanifold_edges: int  # more than two faces
    unbalanced_edges: int  # used more often one way than the other (any of the above)
    boundary_loops: int  # holes: connected groups of boundary edges (edges of one face)
    manifold_edge_faces: np.ndarray = field(repr=False)  # (K, 2): the two faces of each edge used once each way
    flipped_faces: int = 0  # faces to turn over so that every edge of two faces is used once each way
                            # (the fewer of each connected piece's two orientations); 0 if none can do it

    @property
    def only_winding(self) -> bool:
        """Closed except for faces wound inconsistently with their neighbours (no hole, no edge of
        more than two faces): reorienting those faces closes it."""
        return (self.misoriented_edges > 0 and self.boundary_edges == 0 and self.nonmanifold_edges == 0
                and self.unbalanced_edges == self.misoriented_edges)

    @property
    def closed(self) -> bool:
        return self.unbalanced_edges == 0

    def problems(self) -> list:
        out = []
        if self.boundary_edges:
            out.append(f"{self.boundary_edges} boundary edge(s) in {self.boundary_loops} hole(s)")
        if self.only_winding and self.flipped_faces:
            out.append(f"closed, but {self.flipped_faces} face(s) wound inconsistently with their neighbours "
                       f"({self.misoriented_edges} edge(s) used the same way by both faces): `hydro mesh repair` fixes that")
        elif self.misoriented_edges:
            out.append(f"{self.misoriented_edges} edge(s) where neighbouring faces are wound inconsistently")
        unbalanced_nm = self.unbalanced_edges - self.boundary_edges - self.misoriented_edges
        if unbalanced_nm:
            out.append(f"{unbalanced_nm} edge(s) shared by more than two faces that do not pair up")
        return out


def edge_topology(faces, vertex_count: int) -> EdgeTopology:
    """Edge use counts of ``faces`` (M, 3) over ``vertex_count`` vertices (see :class:`EdgeTopology`)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    m = len(f)
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    face_of = np.tile(np.arange(m), 3)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    key = lo * np.int64(vertex_count) + hi
    forward = a < b
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    n_fwd = np.bincount(inv, weights=forward, minlength=len(uniq)).astype(np.int64)
    n_bwd = counts - n_fwd
    unbalanced = n_fwd != n_bwd
    boundary = counts == 1
    misoriented = (counts == 2) & unbalanced
    nonmanifold = counts > 2
    # holes: connected groups of boundary edges (by shared vertices); a misoriented edge is no hole
    loops = 0
    if np.any(boundary):
        e_lo = uniq[boundary] // vertex_count
        e_hi = uniq[boundary] % vertex_count
        verts, idx = np.unique(np.concatenate([e_lo, e_hi]), return_inverse=True)
        k = int(boundary.sum())
        g = coo_matrix((np.ones(k), (idx[:k], idx[k:])), shape=(len(verts), len(verts)))
        loops = int(connected_components(g, directed=False)[0])
    # the two faces of every edge used exactly once each way
    manifold = (counts == 2) & ~unbalanced
    order = np.argsort(inv, kind="stable")
    first_use = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sel = np.nonzero(manifold)[0]
    pairs = np.stack([face_of[order[first_use[sel]]], face_of[order[first_use[sel] + 1]]], axis=1)
    flipped = 0
    if np.any(misoriented):
        sel2 = np.nonzero(counts == 2)[0]
        two = np.stack([face_of[order[first_use[sel2]]], face_of[order[first_use[sel2] + 1]]], axis=1)
        flipped = _faces_to_flip(m, two, misoriented[sel2])
    return EdgeTopology(edge_count=len(uniq), boundary_edges=int(boundary.sum()),
                        misoriented_edges=int(misoriented.sum()), nonmanifold_edges=int(nonmanifold.sum()),
                        unbalanced_edges=int(unbalanced.sum()), boundary_loops=loops, manifold_edge_faces=pairs,
                        flipped_faces=flipped)


def _faces_to_flip(face_count: int, pairs, same_way) -> int:
    """The fewest faces to turn over so that every pair of faces across an edge (``pairs`` (K, 2))
    uses it once each way; ``same_way[k]``: pair k uses it the same way now. Each face has two
    states (as given, turned over); a pair used once each way ties equal states, a pair used the
    same way ties opposite ones. In each connected piece the two consistent orientations are the
    two components of that doubled graph: the smaller one is what must turn. 0 when some piece
    cannot be oriented consistently (a Möbius strip) or nothing needs to turn."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    i, j = pairs[:, 0], pairs[:, 1]
    flip = same_way.astype(np.int64)
    rows = np.concatenate([2 * i, 2 * i + 1])
    cols = np.concatenate([2 * j + flip, 2 * j + 1 - flip])
    n = 2 * face_count
    g = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, label = connected_components(g, directed=False)
    as_given, turned = label[0::2], label[1::2]
    if np.any(as_given == turned):
        return 0
    sizes = np.bincount(as_given, minlength=label.max() + 1)  # faces as given in each component
    pieces = np.unique(np.minimum(as_given, turned), return_index=True)[1]
    return int(sum(min(sizes[as_given[f]], sizes[turned[f]]) for f in pieces))


def _nonmanifold_pairs(v, f):
    """Face pairs across edges shared by more than two faces, found by sorting the faces around
    the edge by angle: each face is paired with its neighbour on its inner side (normals point
    out), which must use the edge the other way. Returns (K, 2) pairs; an edge whose faces do not
    pair up like that adds none (its faces stay apart there, so their shells may stay open and
    the union then falls back to winding numbers)."""
    m = len(f)
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    c = np.concatenate([f[:, 2], f[:, 0], f[:, 1]])
    face_of = np.tile(np.arange(m), 3)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    key = lo * np.int64(len(v)) + hi
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    order = np.argsort(inv, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pairs = []
    for e in np.nonzero(counts > 2)[0]:
        uses = order[starts[e]:starts[e] + counts[e]]
        p0 = v[lo[uses[0]]]
        axis = v[hi[uses[0]]] - p0
        axis /= np.linalg.norm(axis)
        ref = v[c[uses[0]]] - p0
        ref -= axis * (ref @ axis)
        ref /= max(np.linalg.norm(ref), 1e-300)
        side = np.cross(axis, ref)
        r = v[c[uses]] - p0
        r -= np.outer(r @ axis, axis)
        theta = np.arctan2(r @ side, r @ ref)
        normal = np.cross(v[b[uses]] - v[a[uses]], v[c[uses]] - v[a[uses]])
        tangent = np.cross(axis, r)  # direction of increasing angle at each face
        inward_up = np.einsum("ij,ij->i", tangent, normal) < 0.0  # the solid lies towards larger angles
        # faces at the same angle (a zero-thickness wall: two pieces' coplanar faces, e.g. a shared
        # face triangulated differently on each side): the one whose solid lies towards smaller
        # angles comes first, so that each pairs with the faces of its own piece
        srt = np.argsort(theta, kind="stable")
        tie_group = np.concatenate([[0], np.cumsum(np.diff(theta[srt]) > 1e-9)])
        srt = srt[np.lexsort((inward_up[srt], tie_group))]
        k = len(uses)
        edge_pairs = []
        for j in range(k):
            if not inward_up[srt[j]]:
                continue
            u, w = uses[srt[j]], uses[srt[(j + 1) % k]]
            if inward_up[srt[(j + 1) % k]] or (a[u] < b[u]) == (a[w] < b[w]):
                edge_pairs = None  # this edge does not pair up: its faces stay apart here
                break
            edge_pairs.append((face_of[u], face_of[w]))
        if edge_pairs is not None:
            pairs.extend(edge_pairs)
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def drop_cancelling_faces(faces):
    """Remove pairs of faces on the same three vertices wound opposite ways (a zero-thickness
    wall, e.g. where two pieces share a face: it lies inside their union and adds nothing to the
    winding number). Returns ``(faces, pairs_removed)``."""
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(f) == 0:
        return f, 0
    k = np.argmin(f, axis=1)
    rolled = np.stack([f[np.arange(len(f)), k], f[np.arange(len(f)), (k + 1) % 3], f[np.arange(len(f)), (k + 2) % 3]], 1)
    positive = rolled[:, 1] < rolled[:, 2]
    key = np.sort(f, axis=1)
    _, group = np.unique(key, axis=0, return_inverse=True)
    group = group.reshape(-1)
    n_pos = np.bincount(group, weights=positive).astype(np.int64)
    n_neg = np.bincount(group, weights=~positive).astype(np.int64)
    cancel = np.minimum(n_pos, n_neg)
    if not np.any(cancel):
        return f, 0
    keep = np.ones(len(f), dtype=bool)
    left_pos = cancel.copy()
    left_neg = cancel.copy()
    for i in np.nonzero(cancel[group] > 0)[0]:
        g = group[i]
        if positive[i] and left_pos[g] > 0:
            left_pos[g] -= 1
            keep[i] = False
        elif not positive[i] and left_neg[g] > 0:
            left_neg[g] -= 1
            keep[i] = False
    return f[keep], int(cancel.sum())


def _shells(face_count: int, topo: EdgeTopology, extra_pairs=None) -> np.ndarray:
    """Shell label per face: faces connected through edges used exactly once each way (and
    through ``extra_pairs``)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    p = topo.manifold_edge_faces
    if extra_pairs is not None and len(extra_pairs):
        p = np.concatenate([p, extra_pairs])
    g = coo_matrix((np.ones(len(p)), (p[:, 0], p[:, 1])), shape=(face_count, face_count))
    return connected_components(g, directed=False)[1]


def _signed_volumes(v, f, labels, n_labels) -> np.ndarray:
    a, b, c = (v[f[:, k]] for k in range(3))
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    return np.bincount(labels, weights=vol, minlength=n_labels)


def open_mesh_message(name: str, topo: EdgeTopology, weld_report: WeldReport) -> str:
    if topo.only_winding and topo.flipped_faces:
        return (f"mesh {name!r} is closed, but {topo.flipped_faces} face(s) wound inconsistently with their "
                f"neighbours: `hydro mesh repair PATH -o OUT` fixes that (hydro.geometry.mesh_repair.repair_mesh in "
                f"Python); a hydroelastic shape needs every face wound alike")
    return (f"mesh {name!r} is not watertight: after welding ({weld_report.summary()}) it has "
            f"{'; '.join(topo.problems())}. A hydroelastic shape needs a closed surface. Fix: {_FIXES_OPEN}")


@dataclass(frozen=True)
class MeshSolid:
    """The solid a closed mesh bounds, as triangles whose closest feature gives an exact sign.

    | field | meaning |
    |---|---|
    | ``vertices``, ``faces`` | the solid's surface: closed, outward, no surface inside the solid (when ``sign`` is ``"pseudonormal"``) |
    | ``sign`` | ``"pseudonormal"`` (exact from the closest feature) or ``"winding"`` (the union could not be formed: every triangle kept, the sign from winding numbers) |
    | ``weld`` | :class:`WeldReport` of the input |
    | ``shells`` | closed shells of the welded input; ``cavities``: those wound inward |
    | ``merged`` | whether shells were merged into their union |
    | ``removed_area`` | m², surface of the input that lies inside the solid (dropped by the union) |
    | ``notes`` | what was done, one line each |
    """

    vertices: np.ndarray
    faces: np.ndarray
    sign: str
    weld: WeldReport
    shells: int
    cavities: int
    merged: bool
    removed_area: float
    volume: float
    notes: tuple = ()


def _union_of_shells(v, f, labels, volumes):
    """(vertices, faces) of the union of the outward shells minus the inward ones (cavities),
    through trimesh's manifold engine; None when it cannot be formed."""
    import trimesh

    center = 0.5 * (v.min(axis=0) + v.max(axis=0))  # the engine works in float32: centre first
    vc = v - center
    solids, cavities = [], []
    for s, vol in enumerate(volumes):
        fs = f[labels == s]
        if vol < 0.0:
            fs = fs[:, ::-1]
        tm = trimesh.Trimesh(vc, fs, process=False)
        tm.remove_unreferenced_vertices()
        (cavities if vol < 0.0 else solids).append(tm)
    try:
        out = trimesh.boolean.union(solids, engine="manifold", check_volume=False) if len(solids) > 1 else solids[0]
        if cavities:
            out = trimesh.boolean.difference([out] + cavities, engine="manifold", check_volume=False)
    except Exception:  # the engine is missing, or refuses its input
        return None
    if out is None or len(out.faces) == 0:
        return None
    ov = np.asarray(out.vertices, dtype=np.float64) + center
    of = np.asarray(out.faces, dtype=np.int64)
    # the engine rounds to float32: put vertices that are input vertices back where they were
    from scipy.spatial import cKDTree

    dist, idx = cKDTree(v).query(ov)
    snap = dist <= 1e-6 * float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    ov[snap] = v[idx[snap]]
    ov, of, _ = weld(ov, of, tolerance=0.0)
    if not edge_topology(of, len(ov)).closed:
        return None
    return ov, of


def _boxes_touch(v, f, labels, n, tol) -> bool:
    lo = np.full((n, 3), np.inf)
    hi = np.full((n, 3), -np.inf)
    tri = v[f]
    np.minimum.at(lo, labels, tri.min(axis=1))
    np.maximum.at(hi, labels, tri.max(axis=1))
    for i in range(n):
        if np.any(np.all((lo[i + 1:] <= hi[i] + tol) & (hi[i + 1:] >= lo[i] - tol), axis=1)):
            return True
    return False


def mesh_solid(mesh, *, weld_tolerance: float | None = None) -> MeshSolid:
    """The solid that ``mesh`` bounds (see the module docstring). Raises
    :class:`~hydro.errors.InputError` naming the mesh, what is wrong and how to fix it when the
    mesh is not closed after welding, or encloses no volume."""
    v, f, weld_report = weld(mesh.vertices, mesh.faces, tolerance=weld_tolerance)
    name = mesh.name
    f, walls = drop_cancelling_faces(f)
    if len(f) == 0:
        raise InputError(f"mesh {name!r}: no face is left after welding ({weld_report.summary()}) and removing "
                         f"{walls} pair(s) of coincident faces wound opposite ways")
    topo = edge_topology(f, len(v))
    if not topo.closed:
        raise InputError(open_mesh_message(name, topo, weld_report))
    extra = _nonmanifold_pairs(v, f) if topo.nonmanifold_edges else None
    labels = _shells(len(f), topo, extra)
    n = int(labels.max()) + 1
    volumes = _signed_volumes(v, f, labels, n)
    total = float(volumes.sum())
    if total <= 0.0:
        raise InputError(f"mesh {name!r} encloses no positive volume (volume {total:.3g} m³: its faces are wound "
                         f"inward?): a hydroelastic shape needs outward-facing triangles. Fix: `hydro mesh repair PATH "
                         f"-o OUT` reorients them")
    notes = [weld_report.summary()] if weld_report.changed else []
    if walls:
        notes.append(f"removed {walls} pair(s) of coincident faces wound opposite ways (walls inside the solid)")
    cavities = int(np.sum(volumes < 0.0))
    diag = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    need_union = topo.nonmanifold_edges > 0 or (n > 1 and _boxes_touch(v, f, labels, n, 1e-9 * diag))
    if not need_union:
        return MeshSolid(vertices=v, faces=f, sign="pseudonormal", weld=weld_report, shells=n, cavities=cavities,
                         merged=False, removed_area=0.0, volume=total, notes=tuple(notes))
    area_in = _area(v, f)
    union = _union_of_shells(v, f, labels, volumes)
    if union is None:
        notes.append(f"{n} shells touch or overlap and their union could not be formed: every triangle is kept and "
                     f"the sign comes from winding numbers (depth has false zeros at inner surfaces)")
        return MeshSolid(vertices=v, faces=f, sign="winding", weld=weld_report, shells=n, cavities=cavities,
                         merged=False, removed_area=0.0, volume=total, notes=tuple(notes))
    uv, uf = union
    vol = float(_signed_volumes(uv, uf, np.zeros(len(uf), dtype=np.int64), 1)[0])
    removed = max(0.0, area_in - _area(uv, uf))
    notes.append(f"{n} shells ({cavities} cavities) touch or overlap: merged into their union, which drops "
                 f"{removed:.3g} m² of inner surface (volume {total:.6g} -> {vol:.6g} m³)")
    return MeshSolid(vertices=uv, faces=uf, sign="pseudonormal", weld=weld_report, shells=n, cavities=cavities,
                     merged=True, removed_area=removed, volume=vol, notes=tuple(notes))


def _area(v, f) -> float:
    a, b, c = (v[f[:, k]] for k in range(3))
    return float(0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum())


@dataclass
class MeshCheck:
    """``hydro mesh check``: what a mesh is made of and whether it can be hydroelastic."""

    name: str
    vertices: int
    triangles: int
    extent: np.ndarray  # (3,) m (as authored, in the mesh's units)
    weld: WeldReport
    topology: EdgeTopology
    degenerate_faces: int  # zero area after welding
    duplicate_faces: int  # same three vertices as another face
    shells: int = 0
    solid: MeshSolid | None = None
    error: str | None = None  # why it is refused for hydroelastic contact

    @property
    def hydroelastic_ok(self) -> bool:
        return self.error is None

    def summary(self) -> str:
        e = self.extent
        t = self.topology
        lines = [
            f"mesh         {self.name}",
            f"size         {self.vertices} vertices, {self.triangles} triangles, extent {e[0]:.4g} x {e[1]:.4g} x "
            f"{e[2]:.4g} (units as authored)",
            f"welding      {self.weld.summary()}",
            f"edges        {t.edge_count}: {t.boundary_edges} boundary, {t.misoriented_edges} misoriented, "
            f"{t.nonmanifold_edges} shared by > 2 faces; {t.boundary_loops} hole(s)",
            f"faces        {self.degenerate_faces} of zero area, {self.duplicate_faces} duplicate(s)",
        ]
        if self.solid is not None:
            s = self.solid
            lines.append(f"solid        {s.shells} shell(s), {s.cavities} cavity(ies), volume {s.volume:.6g}, sign from "
                         f"{'closest-feature pseudo-normals (exact)' if s.sign == 'pseudonormal' else 'winding numbers'}")
            lines.extend(f"             {note}" for note in s.notes if note != self.weld.summary())  # said above
        error = None if self.error is None else self.error.replace(f"after welding ({self.weld.summary()}) it has",
                                                                    "after welding it has")  # welding: said above
        lines.append("hydroelastic OK" if error is None else f"hydroelastic REFUSED: {error}")
        return "\n".join(lines)


def inspect_mesh(mesh, *, weld_tolerance: float | None = None) -> MeshCheck:
    """Everything :func:`mesh_solid` looks at, without raising (``hydro mesh check``)."""
    v, f, weld_report = weld(mesh.vertices, mesh.faces, tolerance=weld_tolerance)
    topo = edge_topology(f, len(v)) if len(f) else edge_topology(np.zeros((0, 3), np.int64), 1)
    a, b, c = (v[f[:, k]] for k in range(3))
    area2 = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    dup = len(f) - len(np.unique(np.sort(f, axis=1), axis=0)) if len(f) else 0
    ext = np.asarray(mesh.vertices).max(axis=0) - np.asarray(mesh.vertices).min(axis=0)
    check = MeshCheck(name=mesh.name, vertices=len(mesh.vertices), triangles=len(mesh.faces), extent=ext,
                      weld=weld_report, topology=topo, degenerate_faces=int(np.sum(area2 == 0.0)),
                      duplicate_faces=int(dup))
    try:
        check.solid = mesh_solid(mesh, weld_tolerance=weld_tolerance)
        check.shells = check.solid.shells
    except InputError as exc:
        check.error = str(exc)
    return check


def reference_signed_distance(mesh, points, *, solid: MeshSolid | None = None) -> np.ndarray:
    """A signed distance to compare fields with, that cannot share the field's sign mistakes:
    the sign is the winding number of the mesh *as given* (``w > 1/2`` inside, decided exactly);
    outside, the distance to the nearest input triangle (exact: the nearest surface point of an
    outside point always bounds the solid); inside, the distance to the solid's surface when
    one exists (``solid``, else the input's triangles)."""
    pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    inside = WindingNumber.of_mesh(mesh).inside(pts)
    d_in = MeshDistance(mesh, sign="unsigned").signed_distance(pts)
    if solid is not None and solid.sign == "pseudonormal" and np.any(inside):
        surface = SimpleNamespace(vertices=solid.vertices, faces=solid.faces, name=mesh.name)
        d_solid = MeshDistance(surface, sign="unsigned").signed_distance(pts[inside])
        d_in[inside] = d_solid
    return np.where(inside, -d_in, d_in)
