"""The default contact path's narrow phase and its contact columns (kernels).

``point.narrow`` runs one pair per item and writes up to ``PAIR_CONTACT_MAX`` contacts into the
pair's slots (``slot_f`` rows ``p·PAIR_CONTACT_MAX ..``) and their count; the handler follows the
pair's kinds:

| pair | handler |
|---|---|
| a plane and anything | :func:`~hydro.contact.point_pairs.plane_contacts` |
| a triangle mesh and anything else | :func:`~hydro.contact.point_mesh.mesh_contacts` (distance fields) |
| spheres and capsules | :func:`~hydro.contact.point_pairs.round_contacts` (closed forms) |
| box and box | :func:`~hydro.contact.point_pairs.box_box_contacts` (separating axes, clipping) |
| any other convex pair | :func:`~hydro.contact.point_pairs.convex_contacts` (GJK/EPA, clipping) |

The last two use a row of ``scratch`` (``pair_scratch[p]``, the exclusive scan of the broad
phase's flags). ``point.compact`` then writes the slots, in pair order, as packed rows of the
contact table (count → scan → scatter, so the order is the same on every target), with the
pair's material: stiffness kA·kB/(kA+kB) (springs in series), damping likewise when both
shapes author one (one authored: that one; none: NaN, the solver derives it), friction the mean
of the two shapes' coefficients, force stiffness·max(0, −depth).
"""

from __future__ import annotations

import math

from ..backend import device_fn, kernel
from ..geometry.primitives import BOX, CAPSULE, MESH, PLANE, SPHERE
from .point_mesh import mesh_contacts
from .point_pairs import (PAIR_CONTACT_MAX, box_box_contacts, convex_contacts, plane_contacts,
                          round_contacts)

# Packed columns of the default path's contacts: out_f (N, PT_COUNT) float32, out_i (N, PI_COUNT) int32
PT_POINT = 0  # 3
PT_NORMAL = 3  # 3
PT_DEPTH = 6
PT_STIFFNESS = 7
PT_DAMPING = 8
PT_FRICTION = 9
PT_STATIC_FRICTION = 10
PT_FORCE = 11
PT_COUNT = 12
PI_SHAPE_A = 0
PI_SHAPE_B = 1
PI_ENV = 2
PI_PAIR = 3
PI_SPECULATIVE = 4
PI_COUNT = 5
# ShapeView.material columns
SM_STIFFNESS = 0
SM_DAMPING = 1
SM_STATIC_FRICTION = 2
SM_DYNAMIC_FRICTION = 3
SM_COUNT = 4


# Model: shapes (ShapeView), sdf (SDFView of triangle meshes); Data in: pair_a, pair_b, pair_scratch, rot, pos
# Data out: slot_f (P·PAIR_CONTACT_MAX, SLOT_WIDTH), pair_count (P,); scratch: one row per flagged pair
@device_fn
def _narrow_item(p, pair_a, pair_b, pair_scratch, shapes, sdf, rot, pos, scratch, slot_f, pair_count):
    a = pair_a[p]
    b = pair_b[p]
    ka = shapes.kind[a]
    kb = shapes.kind[b]
    depth_max = shapes.gap[a] + shapes.gap[b]
    slot = p * PAIR_CONTACT_MAX
    if ka == PLANE or kb == PLANE:
        if ka == PLANE and kb == PLANE:
            n = 0
        elif ka == PLANE:
            n = plane_contacts(a, b, True, shapes, rot, pos, depth_max, slot_f, slot)
        else:
            n = plane_contacts(b, a, False, shapes, rot, pos, depth_max, slot_f, slot)
    elif ka == MESH or kb == MESH:
        n = mesh_contacts(a, b, shapes, rot, pos, sdf, depth_max, slot_f, slot)
    elif (ka == SPHERE or ka == CAPSULE) and (kb == SPHERE or kb == CAPSULE):
        n = round_contacts(a, b, shapes, rot, pos, depth_max, slot_f, slot)
    elif ka == BOX and kb == BOX:
        n = box_box_contacts(a, b, shapes, rot, pos, depth_max, scratch, pair_scratch[p], slot_f, slot)
    else:
        n = convex_contacts(a, b, shapes, rot, pos, depth_max, scratch, pair_scratch[p], slot_f, slot)
    pair_count[p] = n


NARROW = kernel("point.narrow", _narrow_item, serial_below=256)


@device_fn
def pair_stiffness(ka, kb):
    """Two contact springs in series, N/m."""
    return ka * kb / (ka + kb)


@device_fn
def pair_damping(da, db):
    """The pair's contact damping (N·s/m): both authored: in series; one: that one; none: NaN."""
    if math.isnan(da):
        return db
    if math.isnan(db):
        return da
    if da + db <= 0.0:
        return 0.0
    return da * db / (da + db)


# Model: shapes (ShapeView); Data in: pair_a, pair_b, pair_count, offsets (exclusive scan of the
# counts), slot_f; Data out: out_f, out_i rows offsets[p] .. (below capacity)
@device_fn
def _compact_item(p, pair_a, pair_b, pair_count, offsets, slot_f, shapes, env, out_f, out_i, capacity):
    a = pair_a[p]
    b = pair_b[p]
    m = shapes.material
    stiffness = pair_stiffness(m[a, SM_STIFFNESS], m[b, SM_STIFFNESS])
    damping = pair_damping(m[a, SM_DAMPING], m[b, SM_DAMPING])
    mu_s = 0.5 * (m[a, SM_STATIC_FRICTION] + m[b, SM_STATIC_FRICTION])
    mu_d = 0.5 * (m[a, SM_DYNAMIC_FRICTION] + m[b, SM_DYNAMIC_FRICTION])
    e = env[a]
    if e < 0:
        e = env[b]
    for k in range(pair_count[p]):
        o = offsets[p] + k
        if o >= capacity:
            break
        r = p * PAIR_CONTACT_MAX + k
        depth = slot_f[r, 6]
        for c in range(3):
            out_f[o, PT_POINT + c] = slot_f[r, c]
            out_f[o, PT_NORMAL + c] = slot_f[r, 3 + c]
        out_f[o, PT_DEPTH] = depth
        out_f[o, PT_STIFFNESS] = stiffness
        out_f[o, PT_DAMPING] = damping
        out_f[o, PT_FRICTION] = mu_d
        out_f[o, PT_STATIC_FRICTION] = mu_s
        out_f[o, PT_FORCE] = stiffness * max(0.0, -depth)
        out_i[o, PI_SHAPE_A] = a
        out_i[o, PI_SHAPE_B] = b
        out_i[o, PI_ENV] = e
        out_i[o, PI_PAIR] = p
        out_i[o, PI_SPECULATIVE] = 1 if depth >= 0.0 else 0


COMPACT = kernel("point.compact", _compact_item)
