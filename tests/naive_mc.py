"""Slow, obviously correct NumPy marching cubes driven by hydro.contact.mc_tables (a test reference).

Vertices are keyed by their global grid edge, so the two to four cells around an edge share one
vertex with one position, and mesh connectivity can be checked by vertex index alone.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from hydro.contact.mc_tables import CORNER_OFFSETS, EDGE_CORNERS, TRI_COUNT, TRI_EDGES


class SurfaceMesh(NamedTuple):
    vertices: np.ndarray  # (V, 3) float64
    triangles: np.ndarray  # (T, 3) int64 indices into vertices
    vertex_edges: np.ndarray  # (V, 4) int64: (axis, i, j, k) of the grid edge, lower sample first
    cell_cases: np.ndarray  # (nx, ny, nz) int64 case index of every cell


def cell_cases(values: np.ndarray) -> np.ndarray:
    """Case index of every cell of a sample grid of shape (nx+1, ny+1, nz+1)."""
    nx, ny, nz = (size - 1 for size in values.shape)
    cases = np.zeros((nx, ny, nz), dtype=np.int64)
    for corner, (dx, dy, dz) in enumerate(CORNER_OFFSETS):
        negative = values[dx : dx + nx, dy : dy + ny, dz : dz + nz] < 0
        cases |= negative.astype(np.int64) << corner
    return cases


def extract_surface(values: np.ndarray, *, origin=(0.0, 0.0, 0.0), spacing=1.0) -> SurfaceMesh:
    """The level set ``values == 0`` of samples at ``origin + spacing * (i, j, k)``."""
    values = np.asarray(values, dtype=np.float64)
    origin = np.broadcast_to(np.asarray(origin, dtype=np.float64), (3,))
    spacing = np.broadcast_to(np.asarray(spacing, dtype=np.float64), (3,))
    cases = cell_cases(values)
    vertex_of_edge: dict[tuple[int, int, int, int], int] = {}
    vertices, vertex_edges, triangles = [], [], []

    def vertex(cell: tuple[int, int, int], edge: int) -> int:
        lower_corner, upper_corner = EDGE_CORNERS[edge]
        lower = tuple(int(c) + int(o) for c, o in zip(cell, CORNER_OFFSETS[lower_corner]))
        upper = tuple(int(c) + int(o) for c, o in zip(cell, CORNER_OFFSETS[upper_corner]))
        axis = int(np.flatnonzero(np.subtract(upper, lower))[0])
        key = (axis, *lower)
        if key not in vertex_of_edge:
            value_lower, value_upper = values[lower], values[upper]
            fraction = -value_lower / (value_upper - value_lower)
            position = origin + spacing * np.asarray(lower, dtype=np.float64)
            position[axis] = origin[axis] + spacing[axis] * (lower[axis] + fraction)
            vertex_of_edge[key] = len(vertices)
            vertices.append(position)
            vertex_edges.append(key)
        return vertex_of_edge[key]

    for cell in zip(*np.nonzero((cases > 0) & (cases < 255))):
        cell = tuple(int(c) for c in cell)
        case = cases[cell]
        for t in range(TRI_COUNT[case]):
            triangles.append([vertex(cell, int(e)) for e in TRI_EDGES[case, 3 * t : 3 * t + 3]])

    return SurfaceMesh(
        vertices=np.array(vertices, dtype=np.float64).reshape(-1, 3),
        triangles=np.array(triangles, dtype=np.int64).reshape(-1, 3),
        vertex_edges=np.array(vertex_edges, dtype=np.int64).reshape(-1, 4),
        cell_cases=cases,
    )


def triangle_normals(mesh: SurfaceMesh) -> np.ndarray:
    """Right-hand normals cross(p1 - p0, p2 - p0), length twice the triangle area."""
    p0, p1, p2 = (mesh.vertices[mesh.triangles[:, k]] for k in range(3))
    return np.cross(p1 - p0, p2 - p0)


def surface_area(mesh: SurfaceMesh) -> float:
    return 0.5 * float(np.linalg.norm(triangle_normals(mesh), axis=1).sum())


def enclosed_volume(mesh: SurfaceMesh) -> float:
    """Volume inside a closed mesh (divergence theorem), positive for outward normals."""
    p0, p1, p2 = (mesh.vertices[mesh.triangles[:, k]] for k in range(3))
    return float(np.einsum("tk,tk->t", p0, np.cross(p1, p2)).sum() / 6.0)


def vertex_boundary_planes(mesh: SurfaceMesh, *, cells_shape) -> list[set[tuple[int, int]]]:
    """For each vertex, the grid boundary planes (axis, side) its grid edge lies in."""
    planes = []
    for axis_of_edge, *lower in mesh.vertex_edges:
        on = set()
        for axis in range(3):
            if axis == axis_of_edge:
                continue  # an edge along this axis leaves every plane normal to it
            if lower[axis] == 0:
                on.add((axis, 0))
            if lower[axis] == cells_shape[axis]:
                on.add((axis, 1))
        planes.append(on)
    return planes


def edge_use_problems(mesh: SurfaceMesh, *, cells_shape) -> list[str]:
    """Why the mesh is not closed and consistently oriented away from the grid boundary.

    Every mesh edge must be used once in each direction, except edges lying in a boundary plane
    of the grid, which must be used exactly once. Returns an empty list when all is well.
    """
    directed = Counter()
    for a, b, c in mesh.triangles.tolist():
        directed.update([(a, b), (b, c), (c, a)])
    planes = vertex_boundary_planes(mesh, cells_shape=cells_shape)
    problems = []
    for (a, b), count in directed.items():
        reverse = directed.get((b, a), 0)
        on_boundary = bool(planes[a] & planes[b])
        if count != 1:
            problems.append(f"edge {a}->{b} used {count} times in one direction")
        elif on_boundary and reverse != 0:
            problems.append(f"boundary edge {a}-{b} used in both directions")
        elif not on_boundary and reverse != 1:
            problems.append(f"interior edge {a}->{b} has {reverse} reverse uses")
    return problems
