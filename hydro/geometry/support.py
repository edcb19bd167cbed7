"""Convex colliders for the default contact path: support mappings, contact features and the
packed per-shape data the point-contact kernels read (device helpers, CPU and CUDA from one source).

Every collider is split into a *core* and a *radius*: a sphere is a point of radius r, a capsule
a segment of radius r, every other shape its own core with radius 0. Distances between cores
minus the radii are exact distances between the shapes (Minkowski sums), which keeps GJK/EPA on
spheres and capsules exact and fast.

A *feature* of a core facing a direction is the set of core points that can touch there: a box
face (4 corners), a cylinder cap (an 8-gon on its rim starting at the support point) or its side
line, a cone base or slant line, a hull's face polygon, a capsule's segment, a sphere's or
ellipsoid's support point. Feature points are true surface points of the core; the contact
manifold is built by clipping one feature against the other (:mod:`hydro.contact.manifold`).

Frames: a shape's world pose is ``rot[s]`` (row-major 3×3, world = R·local + pos) and ``pos[s]``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..backend import device_fn
from .primitives import BOX, CAPSULE, CONE, CONVEX_MESH, CYLINDER, ELLIPSOID, PLANE, SPHERE, primitive_phi

#: Points on a cylinder cap or cone base feature (a regular polygon on the rim).
RIM_POINTS = 8
#: Most points of a hull face used as a feature (larger faces are subsampled evenly).
FEATURE_MAX = 16
#: A cylinder's cap (a cone's base) is its feature when its normal is within 45° of the direction.
CAP_COS = 0.7071


class ShapeView(NamedTuple):
    """Per-shape data of the default contact path on one device (:func:`shape_view`), one argument.

    | field | shape | meaning |
    |---|---|---|
    | ``kind`` | int32 (S,) | primitive kind code (``hydro.geometry.primitives``) |
    | ``params`` | float64 (S, 4) | the primitive's packed sizes (``Geometry.params``) |
    | ``radius`` | float64 (S,) | core radius: sphere and capsule radius, else 0 |
    | ``bound`` | float64 (S,) | radius of a ball about the shape origin that holds the shape |
    | ``vert_start`` | int32 (S+1,) | the shape's hull/mesh vertices are ``verts[vert_start[s]:vert_start[s+1]]`` |
    | ``verts`` | float64 (V, 3) | local vertices of convex hulls and meshes |
    | ``face_start`` | int32 (S+1,) | the hull's faces are ``face_start[s] .. face_start[s+1]-1`` |
    | ``face_plane`` | float64 (F, 4) | outward unit normal and offset of each hull face (n·x = d) |
    | ``face_vstart`` | int32 (F+1,) | face f's polygon is ``face_vidx[face_vstart[f]:face_vstart[f+1]]`` (CCW) |
    | ``face_vidx`` | int32 (FV,) | indices into ``verts`` |
    | ``sample_start`` | int32 (S+1,) | surface samples of shape s (local) for SDF contacts |
    | ``samples`` | float64 (N, 3) | |
    | ``sdf`` | int32 (S,) | index of the shape's field in the path's SDF pack (triangle meshes), −1 |
    | ``margin``, ``gap`` | float64 (S,) | m |
    | ``material`` | float64 (S, 4) | contact stiffness (N/m), damping (N·s/m, NaN: derived), static, dynamic friction |
    """

    kind: Any
    params: Any
    radius: Any
    bound: Any
    vert_start: Any
    verts: Any
    face_start: Any
    face_plane: Any
    face_vstart: Any
    face_vidx: Any
    sample_start: Any
    samples: Any
    sdf: Any
    margin: Any
    gap: Any
    material: Any


# ============================================================================================
# Frames


@device_fn
def to_local(rot, s, x, y, z):
    """Rᵀ·(x, y, z): a world vector in shape ``s``'s frame."""
    return (rot[s, 0] * x + rot[s, 3] * y + rot[s, 6] * z, rot[s, 1] * x + rot[s, 4] * y + rot[s, 7] * z,
            rot[s, 2] * x + rot[s, 5] * y + rot[s, 8] * z)


@device_fn
def to_world(rot, s, x, y, z):
    """R·(x, y, z): a local vector of shape ``s`` in world."""
    return (rot[s, 0] * x + rot[s, 1] * y + rot[s, 2] * z, rot[s, 3] * x + rot[s, 4] * y + rot[s, 5] * z,
            rot[s, 6] * x + rot[s, 7] * y + rot[s, 8] * z)


@device_fn
def point_to_world(rot, pos, s, x, y, z):
    wx, wy, wz = to_world(rot, s, x, y, z)
    return wx + pos[s, 0], wy + pos[s, 1], wz + pos[s, 2]


@device_fn
def point_to_local(rot, pos, s, x, y, z):
    return to_local(rot, s, x - pos[s, 0], y - pos[s, 1], z - pos[s, 2])


# ============================================================================================
# Support mappings


@device_fn
def _rim_direction(dx, dy):
    """The unit direction of (dx, dy) in the plane, (1, 0) when it vanishes."""
    r = math.sqrt(dx * dx + dy * dy)
    if r <= 1e-12:
        return 1.0, 0.0
    return dx / r, dy / r


@device_fn(inline=False)
def core_support_local(s, shapes, dx, dy, dz):
    """The point of shape ``s``'s core farthest along the local direction (dx, dy, dz)."""
    kind = shapes.kind[s]
    p = shapes.params
    if kind == SPHERE:
        return 0.0, 0.0, 0.0
    if kind == CAPSULE:
        return 0.0, 0.0, (p[s, 1] if dz >= 0.0 else -p[s, 1])
    if kind == BOX:
        return (p[s, 0] if dx >= 0.0 else -p[s, 0]), (p[s, 1] if dy >= 0.0 else -p[s, 1]), \
            (p[s, 2] if dz >= 0.0 else -p[s, 2])
    if kind == CYLINDER:
        ux, uy = _rim_direction(dx, dy)
        if dx * dx + dy * dy <= 1e-24:
            ux = 0.0
            uy = 0.0
        return p[s, 0] * ux, p[s, 0] * uy, (p[s, 1] if dz >= 0.0 else -p[s, 1])
    if kind == CONE:
        r = p[s, 0]
        hh = p[s, 1]
        ux, uy = _rim_direction(dx, dy)
        rim = r * (ux * dx + uy * dy) - hh * dz
        if hh * dz >= rim:
            return 0.0, 0.0, hh
        return r * ux, r * uy, -hh
    if kind == ELLIPSOID:
        a = p[s, 0]
        b = p[s, 1]
        c = p[s, 2]
        n = math.sqrt(a * a * dx * dx + b * b * dy * dy + c * c * dz * dz)
        if n <= 0.0:
            return a, 0.0, 0.0
        return a * a * dx / n, b * b * dy / n, c * c * dz / n
    # convex hull (or a mesh's vertices): the farthest vertex
    v0 = shapes.vert_start[s]
    v1 = shapes.vert_start[s + 1]
    best = v0
    best_d = -math.inf
    for v in range(v0, v1):
        d = shapes.verts[v, 0] * dx + shapes.verts[v, 1] * dy + shapes.verts[v, 2] * dz
        if d > best_d:
            best_d = d
            best = v
    return shapes.verts[best, 0], shapes.verts[best, 1], shapes.verts[best, 2]


@device_fn(inline=False)
def core_support(s, shapes, rot, pos, dx, dy, dz):
    """World point of shape ``s``'s core farthest along the world direction (dx, dy, dz)."""
    lx, ly, lz = to_local(rot, s, dx, dy, dz)
    x, y, z = core_support_local(s, shapes, lx, ly, lz)
    return point_to_world(rot, pos, s, x, y, z)


# ============================================================================================
# Features


@device_fn
def _put(buf, row, base, k, rot, pos, s, x, y, z):
    wx, wy, wz = point_to_world(rot, pos, s, x, y, z)
    buf[row, base + 3 * k] = wx
    buf[row, base + 3 * k + 1] = wy
    buf[row, base + 3 * k + 2] = wz


@device_fn(inline=False)
def _rim_polygon(buf, row, base, rot, pos, s, r, z, ux, uy, ccw):
    """RIM_POINTS points of the circle of radius r at height z, starting at angle (ux, uy); wound
    counter-clockwise about +z when ``ccw`` (else clockwise)."""
    for k in range(RIM_POINTS):
        t = 2.0 * math.pi * k / RIM_POINTS
        if not ccw:
            t = -t
        c = math.cos(t)
        sn = math.sin(t)
        _put(buf, row, base, k, rot, pos, s, r * (c * ux - sn * uy), r * (sn * ux + c * uy), z)
    return RIM_POINTS


@device_fn(inline=False)
def core_feature(s, shapes, rot, pos, dx, dy, dz, buf, row, base):
    """The feature of shape ``s``'s core facing the world direction (dx, dy, dz) (unit): its points
    (world) written to ``buf[row, base + 3k .. base + 3k + 2]``, k < count. Returns
    ``(count, nx, ny, nz)``: a polygon (count >= 3, wound counter-clockwise about its outward
    normal n, world), a segment (2) or a point (1); n is zero unless a polygon."""
    kind = shapes.kind[s]
    p = shapes.params
    lx, ly, lz = to_local(rot, s, dx, dy, dz)
    if kind == SPHERE or kind == ELLIPSOID:
        x, y, z = core_support_local(s, shapes, lx, ly, lz)
        _put(buf, row, base, 0, rot, pos, s, x, y, z)
        return 1, 0.0, 0.0, 0.0
    if kind == CAPSULE:
        _put(buf, row, base, 0, rot, pos, s, 0.0, 0.0, -p[s, 1])
        _put(buf, row, base, 1, rot, pos, s, 0.0, 0.0, p[s, 1])
        return 2, 0.0, 0.0, 0.0
    if kind == BOX:
        # the face whose normal is most aligned with the direction
        ax = 0
        best = abs(lx)
        if abs(ly) > best:
            ax = 1
            best = abs(ly)
        if abs(lz) > best:
            ax = 2
        d = lx if ax == 0 else (ly if ax == 1 else lz)
        sign = 1.0 if d >= 0.0 else -1.0
        a1 = (ax + 1) % 3
        a2 = (ax + 2) % 3
        h = sign * p[s, ax]
        # corners in the (a1, a2) plane, counter-clockwise about +axis, reversed for the −axis face
        for k in range(4):
            u = 1.0 if (k == 1 or k == 2) else -1.0
            v = 1.0 if k >= 2 else -1.0
            if sign < 0.0:
                v = -v
            c0 = 0.0
            c1 = 0.0
            c2 = 0.0
            if ax == 0:
                c0 = h
            elif ax == 1:
                c1 = h
            else:
                c2 = h
            if a1 == 0:
                c0 = u * p[s, 0]
            elif a1 == 1:
                c1 = u * p[s, 1]
            else:
                c2 = u * p[s, 2]
            if a2 == 0:
                c0 = v * p[s, 0]
            elif a2 == 1:
                c1 = v * p[s, 1]
            else:
                c2 = v * p[s, 2]
            _put(buf, row, base, k, rot, pos, s, c0, c1, c2)
        nlx = sign if ax == 0 else 0.0
        nly = sign if ax == 1 else 0.0
        nlz = sign if ax == 2 else 0.0
        nx, ny, nz = to_world(rot, s, nlx, nly, nlz)
        return 4, nx, ny, nz
    if kind == CYLINDER:
        r = p[s, 0]
        hh = p[s, 1]
        ux, uy = _rim_direction(lx, ly)
        if abs(lz) >= CAP_COS:
            sign = 1.0 if lz >= 0.0 else -1.0
            n = _rim_polygon(buf, row, base, rot, pos, s, r, sign * hh, ux, uy, sign > 0.0)
            nx, ny, nz = to_world(rot, s, 0.0, 0.0, sign)
            return n, nx, ny, nz
        _put(buf, row, base, 0, rot, pos, s, r * ux, r * uy, -hh)
        _put(buf, row, base, 1, rot, pos, s, r * ux, r * uy, hh)
        return 2, 0.0, 0.0, 0.0
    if kind == CONE:
        r = p[s, 0]
        hh = p[s, 1]
        ux, uy = _rim_direction(lx, ly)
        slant = math.sqrt(4.0 * hh * hh + r * r)
        along_slant = (2.0 * hh * (ux * lx + uy * ly) + r * lz) / slant
        if -lz >= CAP_COS and -lz >= along_slant:
            n = _rim_polygon(buf, row, base, rot, pos, s, r, -hh, ux, uy, False)
            nx, ny, nz = to_world(rot, s, 0.0, 0.0, -1.0)
            return n, nx, ny, nz
        _put(buf, row, base, 0, rot, pos, s, 0.0, 0.0, hh)
        _put(buf, row, base, 1, rot, pos, s, r * ux, r * uy, -hh)
        return 2, 0.0, 0.0, 0.0
    if kind == CONVEX_MESH:
        # of the faces through the support vertex, the one whose normal is most aligned
        sx, sy, sz = core_support_local(s, shapes, lx, ly, lz)
        eps = 1e-9 * shapes.bound[s]
        f0 = shapes.face_start[s]
        f1 = shapes.face_start[s + 1]
        best = f0
        best_d = -math.inf
        for f in range(f0, f1):
            pl = shapes.face_plane
            if pl[f, 0] * sx + pl[f, 1] * sy + pl[f, 2] * sz < pl[f, 3] - eps:
                continue
            d = pl[f, 0] * lx + pl[f, 1] * ly + pl[f, 2] * lz
            if d > best_d:
                best_d = d
                best = f
        i0 = shapes.face_vstart[best]
        count = shapes.face_vstart[best + 1] - i0
        n = min(count, FEATURE_MAX)
        for k in range(n):
            v = shapes.face_vidx[i0 + (k * count) // n]
            _put(buf, row, base, k, rot, pos, s, shapes.verts[v, 0], shapes.verts[v, 1], shapes.verts[v, 2])
        nx, ny, nz = to_world(rot, s, shapes.face_plane[best, 0], shapes.face_plane[best, 1],
                              shapes.face_plane[best, 2])
        return n, nx, ny, nz
    x, y, z = core_support_local(s, shapes, lx, ly, lz)
    _put(buf, row, base, 0, rot, pos, s, x, y, z)
    return 1, 0.0, 0.0, 0.0


# ============================================================================================
# Distance fields of convex colliders (for SDF contacts against triangle meshes)


@device_fn(inline=False)
def convex_phi(s, shapes, x, y, z):
    """A signed distance of shape ``s`` at local (x, y, z): exact for primitives; for a hull the
    largest face-plane distance (exact inside and off a face, a lower bound off an edge)."""
    kind = shapes.kind[s]
    if kind == CONVEX_MESH:
        best = -math.inf
        for f in range(shapes.face_start[s], shapes.face_start[s + 1]):
            d = (shapes.face_plane[f, 0] * x + shapes.face_plane[f, 1] * y + shapes.face_plane[f, 2] * z
                 - shapes.face_plane[f, 3])
            if d > best:
                best = d
        return best
    if kind == PLANE:
        return z
    return primitive_phi(kind, shapes.params[s], x, y, z)


# ============================================================================================
# Host side: packing the model's shapes


def _polygon_faces(hull):
    """Merge a hull's coplanar triangles into polygon faces: (planes (F,4), polygons (list of index
    lists, counter-clockwise about the outward normal))."""
    planes = np.asarray(hull.planes, dtype=float)
    faces = np.asarray(hull.faces)
    verts = np.asarray(hull.vertices)
    scale = max(float(np.abs(verts).max()), 1e-12)
    groups = {}
    for t, pl in enumerate(planes):
        for key, (ref, members) in groups.items():
            if np.dot(pl[:3], ref[:3]) > 1.0 - 1e-9 and abs(pl[3] - ref[3]) <= 1e-9 * scale:
                members.append(t)
                break
        else:
            groups[len(groups)] = (pl, [t])
    out_planes, polygons = [], []
    for pl, members in groups.values():
        # boundary edges of the merged triangles, chained into a loop
        count = {}
        for t in members:
            a, b, c = faces[t]
            for e in ((a, b), (b, c), (c, a)):
                count[e] = count.get(e, 0) + 1
        boundary = {e[0]: e[1] for e in count if (e[1], e[0]) not in count}
        start = min(boundary)
        loop = [start]
        nxt = boundary[start]
        while nxt != start and len(loop) <= len(boundary):
            loop.append(nxt)
            nxt = boundary[nxt]
        n = np.mean(planes[members, :3], axis=0)
        n /= np.linalg.norm(n)
        out_planes.append(np.r_[n, float(np.mean(verts[loop] @ n))])
        polygons.append(loop)
    return np.array(out_planes).reshape(-1, 4), polygons


def surface_samples(geometry) -> np.ndarray:
    """Points on the surface of ``geometry`` (local) used against a triangle mesh's field: corners,
    edges and faces of a box, rings on round shapes, a hull's or mesh's vertices."""
    from .convex import ConvexMesh
    from .shapes import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Sphere

    def fibonacci(n):
        k = np.arange(n) + 0.5
        z = 1.0 - 2.0 * k / n
        t = np.pi * (1.0 + 5.0**0.5) * k
        rho = np.sqrt(1.0 - z * z)
        return np.stack([rho * np.cos(t), rho * np.sin(t), z], axis=1)

    def ring(r, z, n=16):
        t = 2.0 * np.pi * np.arange(n) / n
        return np.stack([r * np.cos(t), r * np.sin(t), np.full(n, z)], axis=1)

    g = geometry
    if isinstance(g, Sphere):
        return g.radius * fibonacci(96)
    if isinstance(g, Ellipsoid):
        return np.asarray(g.radii) * fibonacci(128)
    if isinstance(g, Box):
        h = g.half_extents
        u = np.linspace(-1.0, 1.0, 5)
        grid = np.array(np.meshgrid(u, u, u, indexing="ij")).reshape(3, -1).T
        on_surface = np.abs(grid).max(axis=1) == 1.0
        return grid[on_surface] * h
    if isinstance(g, Capsule):
        r, hh = g.radius, 0.5 * g.height
        f = r * fibonacci(96)
        f[:, 2] += np.where(f[:, 2] >= 0.0, hh, -hh)
        side = [ring(r, z) for z in np.linspace(-hh, hh, 5)]
        return np.concatenate([f] + side)
    if isinstance(g, Cylinder):
        r, hh = g.radius, 0.5 * g.height
        rings = [ring(r, z) for z in np.linspace(-hh, hh, 5)] + [ring(0.5 * r, z, 8) for z in (-hh, hh)]
        return np.concatenate(rings + [np.array([[0, 0, -hh], [0, 0, hh]])])
    if isinstance(g, Cone):
        r, hh = g.radius, 0.5 * g.height
        rings = [ring(r * t, hh - 2 * hh * t) for t in np.linspace(0.25, 1.0, 4)] + [ring(0.5 * r, -hh, 8)]
        return np.concatenate(rings + [np.array([[0, 0, hh], [0, 0, -hh]])])
    if isinstance(g, (ConvexMesh, Mesh)):
        return np.asarray(g.vertices, dtype=float)
    return np.zeros((0, 3))


def shape_radius(geometry) -> float:
    """The core radius of ``geometry`` (sphere and capsule radius, else 0)."""
    from .shapes import Capsule, Sphere

    return float(geometry.radius) if isinstance(geometry, (Sphere, Capsule)) else 0.0


def bounding_radius(geometry) -> float:
    """Radius of a ball about the local origin holding the whole shape (inf for a plane)."""
    if not geometry.volumetric:
        return math.inf
    lo, hi = geometry.local_aabb()
    return float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi))))


def pack_shapes(geometries):
    """Host arrays of :class:`ShapeView` for ``geometries`` (all but the sdf, margin, gap and
    material columns): a dict of field name → array."""
    from .convex import ConvexMesh
    from .shapes import Mesh

    n = len(geometries)
    kind = np.array([g.kind for g in geometries], dtype=np.int32).reshape(n)
    params = np.zeros((n, 4))
    verts, vert_start = [], [0]
    planes, face_start, face_vstart, face_vidx = [], [0], [0], []
    samples, sample_start = [], [0]
    for s, g in enumerate(geometries):
        if g.volumetric and not isinstance(g, Mesh):
            params[s] = g.params()
        base = vert_start[-1]
        if isinstance(g, Mesh):
            verts.append(np.asarray(g.vertices, dtype=float))
            vert_start.append(base + len(g.vertices))
        else:
            vert_start.append(base)
        if isinstance(g, ConvexMesh):
            pl, polys = _polygon_faces(g)
            planes.append(pl)
            for poly in polys:
                face_vidx.extend(base + i for i in poly)
                face_vstart.append(len(face_vidx))
            face_start.append(face_start[-1] + len(polys))
        else:
            face_start.append(face_start[-1])
        smp = surface_samples(g)
        samples.append(smp)
        sample_start.append(sample_start[-1] + len(smp))

    def rows(parts, width):
        return np.concatenate(parts).reshape(-1, width) if parts else np.zeros((0, width))

    def nonempty(a, width):  # CUDA takes no empty arrays
        return a if len(a) else np.zeros((1, width))

    return dict(kind=kind, params=params,
                radius=np.array([shape_radius(g) for g in geometries], dtype=float).reshape(n),
                bound=np.array([bounding_radius(g) for g in geometries], dtype=float).reshape(n),
                vert_start=np.array(vert_start, dtype=np.int32), verts=nonempty(rows(verts, 3), 3),
                face_start=np.array(face_start, dtype=np.int32), face_plane=nonempty(rows(planes, 4), 4),
                face_vstart=np.array(face_vstart, dtype=np.int32),
                face_vidx=np.array(face_vidx or [0], dtype=np.int32),
                sample_start=np.array(sample_start, dtype=np.int32), samples=nonempty(rows(samples, 3), 3))


__all__ = ["ShapeView", "RIM_POINTS", "FEATURE_MAX", "core_support", "core_support_local", "core_feature",
           "convex_phi", "to_local", "to_world", "point_to_world", "point_to_local", "pack_shapes",
           "surface_samples", "shape_radius", "bounding_radius"]


@device_fn(inline=False)
def closest_segments(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z):
    """Parameters (s, t) of the closest points of segments p1q1 and p2q2 (Ericson §5.1.9)."""
    d1x, d1y, d1z = q1x - p1x, q1y - p1y, q1z - p1z
    d2x, d2y, d2z = q2x - p2x, q2y - p2y, q2z - p2z
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    eps = 1e-30
    if a <= eps and e <= eps:
        return 0.0, 0.0
    if a <= eps:
        return 0.0, min(max(f / e, 0.0), 1.0)
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= eps:
        return min(max(-c / a, 0.0), 1.0), 0.0
    b = d1x * d2x + d1y * d2y + d1z * d2z
    denom = a * e - b * b
    s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > 1e-12 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t = 1.0
        s = min(max((b - c) / a, 0.0), 1.0)
    return s, t
