"""Point contacts of a triangle mesh with another shape, from distance fields (device helpers).

Both ways: the surface samples of each shape (a mesh's vertices; points spread over a
primitive's surface, :func:`hydro.geometry.support.surface_samples`) are looked up in the other
shape's field — a triangle mesh's SDF, a primitive's exact φ, a hull's face planes. A sample of A
at φB gives a contact of depth φB − margins with normal −∇φB (from A toward B); a sample of B at
φA one with normal +∇φA. The point is midway between the sample and its projection onto the
other surface. Samples outside the other shape's bounding ball (padded by the gap band) are
skipped without a lookup.

The samples within the gap band are reduced to at most ``MANIFOLD_MAX`` contacts in passes over
them (nothing is stored per sample): the deepest, then each time the one farthest from those
already picked.
"""

from __future__ import annotations

import math

from ..backend import device_fn
from ..geometry.primitives import MESH
from ..geometry.support import convex_phi, point_to_local, point_to_world, to_world
from ..sdf.sample import sdf_phi, sdf_phi_grad
from .point_pairs import MANIFOLD_MAX, pick_score, write_slot


@device_fn(inline=False)
def field_phi(s, shapes, sdf, x, y, z):
    """φ of shape s at its local point (x, y, z): its SDF for a triangle mesh, else :func:`convex_phi`."""
    if shapes.kind[s] == MESH:
        return sdf_phi(shapes.sdf[s], x, y, z, sdf)
    return convex_phi(s, shapes, x, y, z)


@device_fn(inline=False)
def field_phi_grad(s, shapes, sdf, x, y, z):
    """φ and its unit gradient (local) of shape s at (x, y, z)."""
    if shapes.kind[s] == MESH:
        phi, gx, gy, gz = sdf_phi_grad(shapes.sdf[s], x, y, z, sdf)
    else:
        h = 1e-6 * shapes.bound[s]
        phi = convex_phi(s, shapes, x, y, z)
        gx = convex_phi(s, shapes, x + h, y, z) - convex_phi(s, shapes, x - h, y, z)
        gy = convex_phi(s, shapes, x, y + h, z) - convex_phi(s, shapes, x, y - h, z)
        gz = convex_phi(s, shapes, x, y, z + h) - convex_phi(s, shapes, x, y, z - h)
    length = math.sqrt(gx * gx + gy * gy + gz * gz)
    if length <= 0.0:
        return phi, 0.0, 0.0, 1.0
    return phi, gx / length, gy / length, gz / length


@device_fn(inline=False)
def _sample(i, a, b, shapes, rot, pos):
    """Sample i of the pair: A's samples first, then B's. Returns (from_a, world x, y, z, the
    other shape, its local x, y, z)."""
    na = shapes.sample_start[a + 1] - shapes.sample_start[a]
    if i < na:
        src = a
        dst = b
        k = shapes.sample_start[a] + i
    else:
        src = b
        dst = a
        k = shapes.sample_start[b] + i - na
    qx, qy, qz = point_to_world(rot, pos, src, shapes.samples[k, 0], shapes.samples[k, 1], shapes.samples[k, 2])
    lx, ly, lz = point_to_local(rot, pos, dst, qx, qy, qz)
    return i < na, qx, qy, qz, dst, lx, ly, lz


@device_fn(inline=False)
def mesh_contacts(a, b, shapes, rot, pos, sdf, depth_max, slot_f, slot):
    """Contacts of a pair with at least one triangle mesh (see the module docstring)."""
    margins = shapes.margin[a] + shapes.margin[b]
    count = (shapes.sample_start[a + 1] - shapes.sample_start[a]) + (shapes.sample_start[b + 1]
                                                                     - shapes.sample_start[b])
    pad = depth_max + margins
    n = 0
    for k in range(MANIFOLD_MAX):
        best = -1
        best_score = -math.inf
        for i in range(count):
            from_a, qx, qy, qz, dst, lx, ly, lz = _sample(i, a, b, shapes, rot, pos)
            reach = shapes.bound[dst] + pad
            if lx * lx + ly * ly + lz * lz > reach * reach:
                continue
            depth = field_phi(dst, shapes, sdf, lx, ly, lz) - margins
            if depth > depth_max:
                continue
            score = pick_score(slot_f, slot, n, k, depth, qx, qy, qz)
            if score > best_score:
                best_score = score
                best = i
        if best < 0 or (k > 0 and best_score <= 0.0):
            break
        from_a, qx, qy, qz, dst, lx, ly, lz = _sample(best, a, b, shapes, rot, pos)
        phi, gx, gy, gz = field_phi_grad(dst, shapes, sdf, lx, ly, lz)
        wx, wy, wz = to_world(rot, dst, gx, gy, gz)
        sgn = -1.0 if from_a else 1.0
        write_slot(slot_f, slot + n, qx - 0.5 * phi * wx, qy - 0.5 * phi * wy, qz - 0.5 * phi * wz, sgn * wx,
                   sgn * wy, sgn * wz, phi - margins)
        slot_f[slot + n, 7] = qx
        slot_f[slot + n, 8] = qy
        slot_f[slot + n, 9] = qz
        n += 1
    return n
