"""Small scenes for the default contact path's tests, built with the ModelBuilder (no USD)."""

import numpy as np

from hydro.scene.model import ModelBuilder
from hydro.transforms import quat_from_axis_angle


def pose(position=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), angle=0.0):
    q = quat_from_axis_angle(np.asarray(axis, float), angle)
    return np.concatenate([np.asarray(position, float), q])


def point_model(geometries, *, margin=0.0, gap=0.0, static=(), build_sdfs=False, **shape_kwargs):
    """Each geometry on its own body (those whose index is in ``static``: static shapes), at the
    origin: the tests pass the world poses to ``collide``. ``shape_kwargs`` values may be lists
    (one per shape)."""
    b = ModelBuilder()
    n = len(geometries)
    margin = np.broadcast_to(np.asarray(margin, float), (n,))
    gap = np.broadcast_to(np.asarray(gap, float), (n,))
    for i, g in enumerate(geometries):
        kw = {k: (v[i] if isinstance(v, list) else v) for k, v in shape_kwargs.items()}
        body = -1 if i in static else b.add_body(f"/World/body_{i}", density=1000.0)
        b.add_shape(f"/World/body_{i}/shape", g, body=body, margin=float(margin[i]), gap=float(gap[i]), **kw)
    return b.finalize(build_sdfs=build_sdfs)


def rows(contacts, order_by=None):
    """Contacts as a dict of float64 arrays, sorted by ``order_by`` (a function of the table)."""
    idx = np.arange(len(contacts)) if order_by is None else order_by(contacts)
    return {k: np.asarray(getattr(contacts, k))[idx].astype(np.float64) for k in ("point", "normal", "depth")}


def every_handler_scene():
    """A small scene whose pairs go through every narrow-phase handler of the default path (plane,
    spheres and capsules, box–box, the general convex path, a triangle mesh): (model, poses)."""
    import trimesh

    from hydro.geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Plane, Sphere
    from hydro.sdf import SDFSettings

    tm = trimesh.creation.box((0.2, 0.2, 0.2))
    geoms = [Plane(), Box((0.4, 0.4, 0.1)), Sphere(0.05), Capsule(0.03, 0.1), Box((0.1, 0.1, 0.1)),
             Cylinder(0.05, 0.1), Cone(0.05, 0.1), Mesh(np.asarray(tm.vertices), np.asarray(tm.faces)),
             Ellipsoid((0.05, 0.03, 0.04))]
    m = point_model(geoms, static=(0,), gap=0.002, sdf=SDFSettings(max_resolution=16))
    poses = np.array([
        pose(),
        pose((0, 0, 0.049)),                            # box on the plane (corners)
        pose((0.05, 0.0, 0.148)),                       # sphere on the box (convex path)
        pose((0.05, 0.0, 0.226), (1, 0, 0), 0.3),       # capsule on the sphere (round pair)
        pose((-0.1, 0.1, 0.148), (0, 0, 1), 0.4),       # box on the box (clipping)
        pose((1.0, 0.0, 0.049)),                        # cylinder on the plane
        pose((0.12, -0.12, 0.148), (1, 0, 0), 0.1),     # cone on the box (convex path)
        pose((-1.0, 0.0, 0.099)),                       # a triangle mesh on the plane (its field)
        pose((-1.0, 0.0, 0.238), (0, 1, 0), 0.5),       # an ellipsoid on the mesh (mesh path)
    ])
    return m, poses
