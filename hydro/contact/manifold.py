"""Contact manifolds of the default contact path: feature clipping and reduction (device helpers).

Given a pair's contact normal (from GJK/EPA, or the separating axis of two boxes), each core's
feature facing the other (:func:`hydro.geometry.support.core_feature`) is collected; when one of
them is a face (a polygon whose normal is within ``REFERENCE_COS`` of the contact normal) it is
the *reference*, and the other feature (polygon, segment or point: the *incident* one) is
clipped to the prism over the reference face (Sutherland–Hodgman). Every clipped point is a
true point of the incident surface; its separation is its signed distance to the reference
face's plane along that face's normal — the true depth at that point, as a user would measure
it (a box resting on a box: the corners of the overlap polygon at their depths).

Candidates then go through :func:`reduce_candidates`: when there are more than a pair may keep,
the deepest first, then farthest-point picks (each the candidate farthest from those already
kept), which keeps the manifold's extent.

Scratch layout (after GJK/EPA's, :mod:`hydro.contact.gjk`): the two features, two clip buffers
and the candidates (point, normal, depth, picked).
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..geometry.support import FEATURE_MAX, core_feature
from .gjk import GJK_EPA_WIDTH

#: A face is a reference for clipping when its normal is within ~8° of the contact normal.
REFERENCE_COS = 0.99
CLIP_MAX = 2 * FEATURE_MAX + 2
CANDIDATE_WIDTH = 8  # point (3), normal (3), depth, picked
CANDIDATE_MAX = CLIP_MAX + 1
FEATURE_A = GJK_EPA_WIDTH
FEATURE_B = FEATURE_A + 3 * FEATURE_MAX
CLIP_0 = FEATURE_B + 3 * FEATURE_MAX
CLIP_1 = CLIP_0 + 3 * CLIP_MAX
CANDIDATES = CLIP_1 + 3 * CLIP_MAX
SCRATCH_WIDTH = CANDIDATES + CANDIDATE_WIDTH * CANDIDATE_MAX


@device_fn
def add_candidate(buf, row, count, px, py, pz, nx, ny, nz, depth):
    """Append a candidate contact (midpoint, normal A→B, depth) if there is room; the new count."""
    if count >= CANDIDATE_MAX:
        return count
    at = CANDIDATES + CANDIDATE_WIDTH * count
    buf[row, at] = px
    buf[row, at + 1] = py
    buf[row, at + 2] = pz
    buf[row, at + 3] = nx
    buf[row, at + 4] = ny
    buf[row, at + 5] = nz
    buf[row, at + 6] = depth
    buf[row, at + 7] = 0.0
    return count + 1


@device_fn
def _inside(buf, row, at, k, ex, ey, ez, mx, my, mz):
    return ((buf[row, at + 3 * k] - ex) * mx + (buf[row, at + 3 * k + 1] - ey) * my
            + (buf[row, at + 3 * k + 2] - ez) * mz)


@device_fn(inline=False)
def _clip_polygon(buf, row, src, count, ref, ref_count, rnx, rny, rnz):
    """Clip polygon ``src`` (``count`` points) to the prism over polygon ``ref`` (normal rn); the
    result ends in CLIP_0 or CLIP_1. Returns (offset, count)."""
    cur = src
    n = count
    for e in range(ref_count):
        e1 = (e + 1) % ref_count
        ex = buf[row, ref + 3 * e]
        ey = buf[row, ref + 3 * e + 1]
        ez = buf[row, ref + 3 * e + 2]
        dx = buf[row, ref + 3 * e1] - ex
        dy = buf[row, ref + 3 * e1 + 1] - ey
        dz = buf[row, ref + 3 * e1 + 2] - ez
        # inward normal of the side plane through this edge
        mx = rny * dz - rnz * dy
        my = rnz * dx - rnx * dz
        mz = rnx * dy - rny * dx
        dst = CLIP_1 if cur == CLIP_0 else CLIP_0
        m = 0
        for k in range(n):
            k1 = (k + 1) % n
            s0 = _inside(buf, row, cur, k, ex, ey, ez, mx, my, mz)
            s1 = _inside(buf, row, cur, k1, ex, ey, ez, mx, my, mz)
            if s0 >= 0.0 and m < CLIP_MAX:
                for c in range(3):
                    buf[row, dst + 3 * m + c] = buf[row, cur + 3 * k + c]
                m += 1
            if (s0 >= 0.0) != (s1 >= 0.0) and m < CLIP_MAX:
                t = s0 / (s0 - s1)
                for c in range(3):
                    v0 = buf[row, cur + 3 * k + c]
                    buf[row, dst + 3 * m + c] = v0 + t * (buf[row, cur + 3 * k1 + c] - v0)
                m += 1
        cur = dst
        n = m
        if n == 0:
            break
    return cur, n


@device_fn(inline=False)
def _clip_segment(buf, row, src, ref, ref_count, rnx, rny, rnz):
    """Clip the segment at ``src`` (2 points) to the prism over ``ref``; the result (0 or 2 points)
    in CLIP_0. Returns the count."""
    t0 = 0.0
    t1 = 1.0
    ax = buf[row, src]
    ay = buf[row, src + 1]
    az = buf[row, src + 2]
    bx = buf[row, src + 3]
    by = buf[row, src + 4]
    bz = buf[row, src + 5]
    for e in range(ref_count):
        e1 = (e + 1) % ref_count
        ex = buf[row, ref + 3 * e]
        ey = buf[row, ref + 3 * e + 1]
        ez = buf[row, ref + 3 * e + 2]
        dx = buf[row, ref + 3 * e1] - ex
        dy = buf[row, ref + 3 * e1 + 1] - ey
        dz = buf[row, ref + 3 * e1 + 2] - ez
        mx = rny * dz - rnz * dy
        my = rnz * dx - rnx * dz
        mz = rnx * dy - rny * dx
        sa = (ax - ex) * mx + (ay - ey) * my + (az - ez) * mz
        sb = (bx - ex) * mx + (by - ey) * my + (bz - ez) * mz
        if sa < 0.0 and sb < 0.0:
            return 0
        if sa < 0.0:
            t0 = max(t0, sa / (sa - sb))
        elif sb < 0.0:
            t1 = min(t1, sa / (sa - sb))
    if t0 > t1:
        return 0
    buf[row, CLIP_0] = ax + t0 * (bx - ax)
    buf[row, CLIP_0 + 1] = ay + t0 * (by - ay)
    buf[row, CLIP_0 + 2] = az + t0 * (bz - az)
    buf[row, CLIP_0 + 3] = ax + t1 * (bx - ax)
    buf[row, CLIP_0 + 4] = ay + t1 * (by - ay)
    buf[row, CLIP_0 + 5] = az + t1 * (bz - az)
    return 2 if t1 > t0 else 1


@device_fn(inline=False)
def clip_features(a, b, shapes, rot, pos, nx, ny, nz, force_reference, depth_max, buf, row, count):
    """Candidates from clipping the cores' features of shapes ``a`` and ``b`` facing the contact
    normal (nx, ny, nz) (unit, from A toward B), appended to the candidates (``count`` so far).

    ``force_reference``: 0 picks the best aligned face (if within ``REFERENCE_COS``), 1 uses A's
    face, 2 B's. Candidates deeper than ``depth_max`` (the pair's depth including margins,
    i.e. its gap band) are dropped. Returns the new candidate count (unchanged when neither
    feature is a face aligned with the normal)."""
    ca, fax, fay, faz = core_feature(a, shapes, rot, pos, nx, ny, nz, buf, row, FEATURE_A)
    cb, fbx, fby, fbz = core_feature(b, shapes, rot, pos, -nx, -ny, -nz, buf, row, FEATURE_B)
    align_a = fax * nx + fay * ny + faz * nz if ca >= 3 else -2.0
    align_b = -(fbx * nx + fby * ny + fbz * nz) if cb >= 3 else -2.0
    if force_reference == 1:
        use_a = True
    elif force_reference == 2:
        use_a = False
    else:
        if max(align_a, align_b) < REFERENCE_COS:
            return count
        use_a = align_a >= align_b
    if use_a:
        ref, ref_count, rnx, rny, rnz = FEATURE_A, ca, fax, fay, faz
        inc, inc_count, r_inc = FEATURE_B, cb, shapes.radius[b]
        sgn = 1.0  # the contact normal, A → B, is the reference's outward normal
    else:
        ref, ref_count, rnx, rny, rnz = FEATURE_B, cb, fbx, fby, fbz
        inc, inc_count, r_inc = FEATURE_A, ca, shapes.radius[a]
        sgn = -1.0
    if ref_count < 3:
        return count
    d_ref = rnx * buf[row, ref] + rny * buf[row, ref + 1] + rnz * buf[row, ref + 2]
    if inc_count >= 3:
        for k in range(inc_count * 3):
            buf[row, CLIP_0 + k] = buf[row, inc + k]
        out, m = _clip_polygon(buf, row, CLIP_0, inc_count, ref, ref_count, rnx, rny, rnz)
    elif inc_count == 2:
        out = CLIP_0
        m = _clip_segment(buf, row, inc, ref, ref_count, rnx, rny, rnz)
    else:
        for k in range(3):
            buf[row, CLIP_0 + k] = buf[row, inc + k]
        out, m = _clip_polygon(buf, row, CLIP_0, 1, ref, ref_count, rnx, rny, rnz)
    margins = shapes.margin[a] + shapes.margin[b]
    for k in range(m):
        qx = buf[row, out + 3 * k] - r_inc * rnx
        qy = buf[row, out + 3 * k + 1] - r_inc * rny
        qz = buf[row, out + 3 * k + 2] - r_inc * rnz
        sep = qx * rnx + qy * rny + qz * rnz - d_ref
        depth = sep - margins
        if depth <= depth_max:
            count = add_candidate(buf, row, count, qx - 0.5 * sep * rnx, qy - 0.5 * sep * rny, qz - 0.5 * sep * rnz,
                                  sgn * rnx, sgn * rny, sgn * rnz, depth)
    return count


@device_fn
def _candidate_distance2(buf, row, i, j):
    ai = CANDIDATES + CANDIDATE_WIDTH * i
    aj = CANDIDATES + CANDIDATE_WIDTH * j
    dx = buf[row, ai] - buf[row, aj]
    dy = buf[row, ai + 1] - buf[row, aj + 1]
    dz = buf[row, ai + 2] - buf[row, aj + 2]
    return dx * dx + dy * dy + dz * dz


@device_fn(inline=False)
def reduce_candidates(buf, row, count, keep_max, slot_f, slot_row):
    """Write at most ``keep_max`` of the ``count`` candidates to ``slot_f`` rows ``slot_row ..``
    (point, normal, depth): all of them when they fit, else the deepest and then farthest-point
    picks. Returns the number written."""
    if count <= keep_max:
        for i in range(count):
            at = CANDIDATES + CANDIDATE_WIDTH * i
            for c in range(7):
                slot_f[slot_row + i, c] = buf[row, at + c]
        return count
    first = 0
    for i in range(1, count):
        if buf[row, CANDIDATES + CANDIDATE_WIDTH * i + 6] < buf[row, CANDIDATES + CANDIDATE_WIDTH * first + 6]:
            first = i
    pick = first
    for k in range(keep_max):
        at = CANDIDATES + CANDIDATE_WIDTH * pick
        buf[row, at + 7] = 1.0
        for c in range(7):
            slot_f[slot_row + k, c] = buf[row, at + c]
        if k + 1 == keep_max:
            break
        # the candidate farthest from every pick so far
        best = -1.0
        for i in range(count):
            if buf[row, CANDIDATES + CANDIDATE_WIDTH * i + 7] > 0.0:
                continue
            dmin = math.inf
            for j in range(count):
                if buf[row, CANDIDATES + CANDIDATE_WIDTH * j + 7] > 0.0:
                    dmin = min(dmin, _candidate_distance2(buf, row, i, j))
            if dmin > best:
                best = dmin
                pick = i
    return keep_max
