"""Generate ``hydro/contact/mc_tables.py``: the marching-cubes lookup tables, derived, not pasted.

Usage::

    python scripts/gen_mc_tables.py           # (re)write hydro/contact/mc_tables.py
    python scripts/gen_mc_tables.py --check   # exit 1 if the checked-in file is stale

Conventions (the rest of hydro depends on them):

- Corner ``c`` of a cell sits at ``(c & 1, (c >> 1) & 1, (c >> 2) & 1)``.
- Edges 0..3 run along x, 4..7 along y, 8..11 along z; within an axis they are ordered by
  their lower corner, and each edge lists its lower corner first.
- The case index of a cell is ``sum((value[c] < 0) << c)``: bit ``c`` is set when corner
  ``c`` is on the NEGATIVE side. A vertex lies on every edge whose corners differ in sign.
- Every triangle ``(e0, e1, e2)`` is wound counter-clockwise seen from the POSITIVE side:
  ``cross(p1 - p0, p2 - p0)`` points toward increasing field value.

How a case is triangulated:

1. Face segments. On each of the six faces the crossing edges (0, 2 or 4 of them) are paired
   into segments. Two crossings give one segment. Four crossings (an *ambiguous* face: the
   two negative corners sit on one diagonal, the two positive ones on the other) are paired by
   the FACE RULE: **negative corners are always separated** -- each negative corner is cut off
   by its own segment, joining the two face edges that meet at it, and the two positive
   corners stay connected across the face. The rule reads nothing but the signs of that
   face's four corners, so the two cells sharing a face cut it identically and the extracted
   surface is watertight.
2. Segment direction. The part of the surface inside the cell bounds the cell's negative
   region together with the negative parts of the faces. Orienting the surface toward the
   positive side makes its boundary run with the negative part of each face on the RIGHT when
   the face is seen from outside the cell; every segment is directed that way.
3. Loops. Each crossing edge lies on exactly two faces, so it ends one segment and starts
   another; following segments gives closed, consistently directed loops.
4. Triangles. Each loop (3..7 edges) is cut into ``len(loop) - 2`` triangles, wound like the
   loop. Among all triangulations of the loop we keep those whose diagonals never join two
   edges of a common face (such a diagonal would lie in that face, where the neighbouring
   cell may use it too, and the mesh edge would then have four triangles), and of these the
   one whose worst triangle is fattest, measured with the vertices at the edge midpoints;
   ties go to the first found. The choice matters: 36 of the 358 loops would get such a
   diagonal from a fan at the wrong vertex (every loop has at least one safe fan, but the
   fattest triangulation is not always a fan).

With this rule loops have 3 to 7 edges and the largest case has 5 triangles
(``MAX_TRIANGLES``), so no loop needs an extra vertex. The complement of a case cuts the same edges, but it is not its mirror image:
where the case separates its negative corners on a face, the complement connects them.
"""

from __future__ import annotations

import argparse
import math
import sys
from itertools import combinations
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLES_PATH = REPO_ROOT / "hydro" / "contact" / "mc_tables.py"
SCRIPT_NAME = "scripts/gen_mc_tables.py"
MAX_TRIANGLES_ALLOWED = 5
QUALITY_DECIMALS = 9  # triangle qualities are compared rounded, so float noise cannot decide

CORNER_COUNT = 8
AXIS_NAMES = "xyz"


# ---------------------------------------------------------------------------------------------
# Cube geometry


def corner_offset(corner: int) -> tuple[int, int, int]:
    return (corner & 1, (corner >> 1) & 1, (corner >> 2) & 1)


def edge_corner_pairs() -> list[tuple[int, int]]:
    """The 12 edges, axis by axis (x, y, z), each by its lower then upper corner."""
    pairs = []
    for axis in range(3):
        for corner in range(CORNER_COUNT):
            if not corner >> axis & 1:
                pairs.append((corner, corner | 1 << axis))
    return pairs


EDGE_CORNER_PAIRS = edge_corner_pairs()
EDGE_BY_CORNERS = {frozenset(pair): edge for edge, pair in enumerate(EDGE_CORNER_PAIRS)}


def edge_midpoint(edge: int) -> tuple[float, float, float]:
    lower, upper = (corner_offset(c) for c in EDGE_CORNER_PAIRS[edge])
    return tuple(0.5 * (a + b) for a, b in zip(lower, upper))


def cube_faces() -> list[dict]:
    """The six faces: corners in cyclic order around the face, the edge from each corner to
    the next, and the outward normal."""
    faces = []
    for axis in range(3):
        u_axis, v_axis = (a for a in range(3) if a != axis)
        for side in (0, 1):
            cycle = [(0, 0), (1, 0), (1, 1), (0, 1)]
            corners = [side << axis | u << u_axis | v << v_axis for u, v in cycle]
            edges = [EDGE_BY_CORNERS[frozenset((corners[k], corners[(k + 1) % 4]))] for k in range(4)]
            normal = [0, 0, 0]
            normal[axis] = 1 if side else -1
            faces.append({"corners": corners, "edges": edges, "normal": tuple(normal)})
    return faces


CUBE_FACES = cube_faces()
FACES_OF_EDGE = [
    frozenset(f for f, face in enumerate(CUBE_FACES) if edge in face["edges"]) for edge in range(12)
]


def _sub(a, b):
    return tuple(x - y for x, y in zip(a, b))


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


# ---------------------------------------------------------------------------------------------
# Case -> segments -> loops -> triangles


def is_negative(case: int, corner: int) -> bool:
    return bool(case >> corner & 1)


def crossing_edges(case: int) -> list[int]:
    return [e for e, (a, b) in enumerate(EDGE_CORNER_PAIRS) if is_negative(case, a) != is_negative(case, b)]


def face_segments(case: int, face: dict) -> list[tuple[int, int]]:
    """The directed segments cutting one face: (from edge, to edge), negative part on the right
    seen from outside the cell."""
    corners, edges = face["corners"], face["edges"]
    negative = [is_negative(case, c) for c in corners]
    crossing = [k for k in range(4) if negative[k] != negative[(k + 1) % 4]]
    # each segment comes with a corner of the face that it cuts off (strictly on one side)
    if not crossing:
        return []
    if len(crossing) == 4:
        # ambiguous face: the face rule cuts off each negative corner on its own
        undirected = [(edges[(k - 1) % 4], edges[k], corners[k]) for k in range(4) if negative[k]]
    else:
        k1, k2 = crossing
        if (k2 - k1) % 4 == 1:  # edges k1, k1+1 meet at corner k1+1: a cut-off corner
            witness = corners[(k1 + 1) % 4]
        elif (k1 - k2) % 4 == 1:
            witness = corners[(k2 + 1) % 4]
        else:  # opposite edges: the negative corners lie on one side of the segment
            witness = next(c for c, neg in zip(corners, negative) if neg)
        undirected = [(edges[k1], edges[k2], witness)]
    directed = []
    for edge_a, edge_b, witness in undirected:
        start, end, corner = edge_midpoint(edge_a), edge_midpoint(edge_b), corner_offset(witness)
        side = _dot(_cross(_sub(end, start), _sub(corner, start)), face["normal"])  # > 0: left
        assert side != 0
        witness_on_left = side > 0
        # the negative part must be on the right
        if witness_on_left == is_negative(case, witness):
            edge_a, edge_b = edge_b, edge_a
        directed.append((edge_a, edge_b))
    return directed


def case_loops(case: int) -> list[list[int]]:
    """Closed, directed loops of crossing edges; each starts at its smallest edge, and loops are
    ordered by that edge."""
    successor = {}
    for face in CUBE_FACES:
        for edge_a, edge_b in face_segments(case, face):
            assert edge_a not in successor, (case, edge_a)
            successor[edge_a] = edge_b
    assert sorted(successor) == crossing_edges(case) == sorted(successor.values()), case
    loops, seen = [], set()
    for start in sorted(successor):
        if start in seen:
            continue
        loop = [start]
        while successor[loop[-1]] != start:
            loop.append(successor[loop[-1]])
        seen.update(loop)
        loops.append(loop)
    return loops


def triangle_quality(edges: tuple[int, int, int]) -> float:
    """4·sqrt(3)·area / (sum of squared side lengths): 1 for equilateral, 0 for degenerate."""
    p0, p1, p2 = (edge_midpoint(e) for e in edges)
    normal = _cross(_sub(p1, p0), _sub(p2, p0))
    area = 0.5 * math.sqrt(_dot(normal, normal))
    sides = _dot(_sub(p1, p0), _sub(p1, p0)) + _dot(_sub(p2, p1), _sub(p2, p1)) + _dot(_sub(p0, p2), _sub(p0, p2))
    return round(4.0 * math.sqrt(3.0) * area / sides, QUALITY_DECIMALS)


def polygon_triangulations(first: int, last: int):
    """All triangulations of polygon vertices first..last (positions in the loop), as lists of
    position triples in increasing order, so each triangle keeps the loop's winding."""
    if last - first < 2:
        yield []
        return
    for apex in range(first + 1, last):
        for left in polygon_triangulations(first, apex):
            for right in polygon_triangulations(apex, last):
                yield left + [(first, apex, last)] + right


def triangulate_loop(loop: list[int]) -> list[tuple[int, int, int]]:
    size = len(loop)

    def is_diagonal_in_a_face(a: int, b: int) -> bool:
        adjacent_in_loop = (b - a) % size in (1, size - 1)
        return not adjacent_in_loop and bool(FACES_OF_EDGE[loop[a]] & FACES_OF_EDGE[loop[b]])

    best, best_quality = None, -1.0
    for positions in polygon_triangulations(0, size - 1):
        if any(is_diagonal_in_a_face(a, b) for tri in positions for a, b in combinations(tri, 2)):
            continue
        triangles = [tuple(loop[p] for p in tri) for tri in positions]
        quality = min(triangle_quality(t) for t in triangles)
        if quality > best_quality:
            best, best_quality = triangles, quality
    assert best is not None, loop
    return best


def case_triangles(case: int) -> list[tuple[int, int, int]]:
    return [tri for loop in case_loops(case) for tri in triangulate_loop(loop)]


def build_tables() -> dict:
    triangles = [case_triangles(case) for case in range(256)]
    max_triangles = max(len(t) for t in triangles)
    if max_triangles > MAX_TRIANGLES_ALLOWED:
        raise SystemExit(f"a case needs {max_triangles} triangles; at most {MAX_TRIANGLES_ALLOWED} are allowed")
    return {"triangles": triangles, "max_triangles": max_triangles}


# ---------------------------------------------------------------------------------------------
# Rendering


def _row(values, *, width: int = 2) -> str:
    return "[" + ", ".join(f"{v:{width}d}" for v in values) + "]"


def case_comment(case: int) -> str:
    negative = " ".join(str(c) for c in range(CORNER_COUNT) if is_negative(case, c)) or "-"
    return f"case {case:3d} = 0b{case:08b}, negative corners: {negative}"


def render_module(*, tables: dict | None = None) -> str:
    tables = build_tables() if tables is None else tables
    max_triangles = tables["max_triangles"]
    lines = [
        f"# generated by {SCRIPT_NAME} — do not edit",
        '"""Marching-cubes lookup tables (see scripts/gen_mc_tables.py for how they are derived).',
        "",
        "- ``CORNER_OFFSETS[c]``: corner ``c`` of a cell sits at ``(c & 1, (c >> 1) & 1, (c >> 2) & 1)``.",
        "- ``EDGE_CORNERS[e]``: the two corners of edge ``e``, lower corner first; edges 0..3 run",
        "  along x, 4..7 along y, 8..11 along z.",
        "- Case index of a cell: ``sum((value[c] < 0) << c)`` (bit ``c`` set: corner ``c`` negative).",
        "- ``TRI_COUNT[case]`` triangles; triangle ``t`` has its vertices on edges",
        "  ``TRI_EDGES[case, 3 * t : 3 * t + 3]`` (rows padded with -1), wound counter-clockwise",
        "  seen from the positive side: ``cross(p1 - p0, p2 - p0)`` points toward increasing value.",
        "- Ambiguous faces always separate their two negative corners, so cells sharing a face cut",
        "  it alike and the surface is watertight.",
        "",
        "In the comments, ``0b...`` lists corners 7..0 left to right.",
        "",
        "The tables are int32, not int8: under ``NUMBA_DISABLE_JIT=1`` the kernels run as Python, where",
        "NumPy keeps int8 arithmetic in int8 (the block's edge index overflowed, and the staged path",
        "read the wrong edge cache slot); compiled, Numba widens them either way.",
        '"""',
        "",
        "import numpy as np",
        "",
        '__all__ = ["CORNER_OFFSETS", "EDGE_CORNERS", "MAX_TRIANGLES", "TRI_COUNT", "TRI_EDGES"]',
        "",
        "CORNER_OFFSETS = np.array(",
        "    [",
    ]
    for corner in range(CORNER_COUNT):
        lines.append(f"        {_row(corner_offset(corner), width=1)},  # corner {corner}")
    lines += ["    ],", "    dtype=np.int32,", ")", "", "EDGE_CORNERS = np.array(", "    ["]
    for edge, pair in enumerate(EDGE_CORNER_PAIRS):
        axis = AXIS_NAMES[edge // 4]
        lines.append(f"        {_row(pair, width=1)},  # edge {edge:2d}: {axis}-edge")
    lines += ["    ],", "    dtype=np.int32,", ")", "", f"MAX_TRIANGLES = {max_triangles}", ""]
    lines += ["TRI_COUNT = np.array(", "    ["]
    for case, triangles in enumerate(tables["triangles"]):
        lines.append(f"        {len(triangles)},  # {case_comment(case)}")
    lines += ["    ],", "    dtype=np.int32,", ")", "", "TRI_EDGES = np.array(", "    ["]
    for case, triangles in enumerate(tables["triangles"]):
        flat = [e for tri in triangles for e in tri]
        flat += [-1] * (3 * max_triangles - len(flat))
        lines.append(f"        {_row(flat)},  # {case_comment(case)}")
    lines += ["    ],", "    dtype=np.int32,", ")", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the checked-in file")
    parser.add_argument("--output", type=Path, default=TABLES_PATH, help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    source = render_module()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != source:
            print(f"{args.output} is stale: run python {SCRIPT_NAME}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(source, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
