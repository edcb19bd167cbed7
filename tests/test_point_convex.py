"""The default contact path's general convex pairs (GJK/EPA + feature clipping, up to 4 points)
and the plane against cylinders, cones, ellipsoids and convex hulls, against closed forms."""

import numpy as np
import pytest

from hydro.contact.point_pipeline import PointContactPipeline
from hydro.geometry import Box, Cone, ConvexMesh, Cylinder, Ellipsoid, Plane, Sphere, ellipsoid_phi
from hydro.transforms import quat_to_matrix
from point_util import point_model, pose


def collide(model, poses):
    contacts, pa, pb, call = PointContactPipeline(model).collide(np.asarray(poses, float))
    assert not call.overflow
    return contacts


def rot(p):
    return quat_to_matrix(np.asarray(p[3:], float)[None])[0]


def test_upright_cylinder_on_a_plane_touches_at_its_rim():
    r, h = 0.05, 0.1
    m = point_model([Plane(), Cylinder(r, h)], static=(0,))
    c = collide(m, [pose(), pose((0.2, 0.1, 0.5 * h - 0.002))])
    assert len(c) == 4  # the bottom cap's rim, four points 90° apart
    np.testing.assert_allclose(c.depth, -0.002, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(c.point[:, :2] - [0.2, 0.1], axis=1), r, atol=1e-7)
    np.testing.assert_allclose(c.point[:, 2], -0.001, atol=1e-7)


def test_lying_cylinder_and_cone_on_a_plane():
    r, h = 0.05, 0.12
    m = point_model([Plane(), Cylinder(r, h), Cone(r, h)], static=(0,), gap=0.0)
    side = pose((0, 0, r - 0.001), (1, 0, 0), 0.5 * np.pi)  # axis along y, resting on its side
    apex_down = pose((1.0, 0, 0.5 * h - 0.003), (1, 0, 0), np.pi)  # cone standing on its apex
    c = collide(m, [pose(), side, apex_down])
    cyl = c.shape_b == 1
    assert cyl.sum() == 2  # the lowest point of each cap's rim: the line of contact's two ends
    np.testing.assert_allclose(np.sort(c.point[cyl, 1]), [-0.5 * h, 0.5 * h], atol=1e-7)
    np.testing.assert_allclose(c.depth[cyl], -0.001, atol=1e-7)
    cone = c.shape_b == 2
    assert cone.sum() == 1
    np.testing.assert_allclose(c.point[cone][0], [1.0, 0, -0.0015], atol=1e-7)
    np.testing.assert_allclose(c.depth[cone], -0.003, atol=1e-7)


def test_ellipsoid_on_a_plane_touches_at_its_support_point():
    radii = np.array([0.06, 0.04, 0.03])
    m = point_model([Plane(), Ellipsoid(tuple(radii))], static=(0,))
    q = pose((0.1, 0.2, 0.0), (1, 1, 0.3), 0.7)
    R = rot(q)
    # the lowest point's height below the centre: sqrt(nᵀ R diag(r²) Rᵀ n), n = z
    reach = np.sqrt(((R.T[:, 2] * radii) ** 2).sum())
    q[2] = reach - 0.002
    c = collide(m, [pose(), q])
    assert len(c) == 1
    np.testing.assert_allclose(c.depth, -0.002, atol=1e-7)
    local = -(radii**2) * R.T[:, 2] / reach  # the support point in the ellipsoid's frame
    np.testing.assert_allclose(c.point[0], q[:3] + R @ local + [0, 0, 0.001], atol=1e-6)


def test_a_convex_hull_on_a_plane_and_on_a_box_matches_the_box():
    size = np.array([0.2, 0.1, 0.08])
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.5 * size
    hull = ConvexMesh.from_points(corners)
    m = point_model([Plane(), hull, Box((1.0, 1.0, 0.2))], static=(0, 2))
    q = pose((0.3, 0.0, 0.5 * size[2] - 0.002), (0, 0, 1), 0.3)
    c = collide(m, [pose(), q, pose((5.0, 0, -0.1))])
    assert len(c) == 4 and np.all(c.shape_b == 1)
    np.testing.assert_allclose(c.depth, -0.002, atol=1e-7)
    want = (corners[corners[:, 2] < 0] @ rot(q).T + q[:3])[:, :2]
    got = c.point[:, :2]
    assert all(np.min(np.linalg.norm(got - w, axis=1)) < 1e-6 for w in want)
    # the same hull on a table (a box): GJK/EPA finds the face, clipping gives its 4 corners
    q2 = pose((5.0, 0.0, 0.5 * size[2] - 0.002), (0, 0, 1), 0.3)
    c = collide(m, [pose((0, 0, -10.0)), q2, pose((5.0, 0, -0.1))])
    assert len(c) == 4
    np.testing.assert_allclose(c.depth, -0.002, atol=1e-6)
    np.testing.assert_allclose(np.abs(c.normal[:, 2]), 1.0, atol=1e-6)
    want = (corners[corners[:, 2] < 0] @ rot(q2).T + q2[:3])[:, :2]
    got = c.point[:, :2]
    assert all(np.min(np.linalg.norm(got - w, axis=1)) < 1e-6 for w in want)


@pytest.mark.parametrize("gap_or_depth", [0.004, -0.003])
def test_sphere_against_a_cylinder_side_and_an_ellipsoid(gap_or_depth):
    # separated (GJK) and overlapping (EPA): depth = distance − radii, along the closest direction
    rs, rc, h = 0.03, 0.05, 0.2
    radii = (0.08, 0.05, 0.04)
    m = point_model([Cylinder(rc, h), Sphere(rs), Ellipsoid(radii), Sphere(rs)], gap=0.003)
    d = np.array([1.0, 0.5, 0.0]) / np.linalg.norm([1.0, 0.5, 0.0])
    sphere_at = (rc + rs + gap_or_depth) * d + [0, 0, 0.02]
    p_ell = np.array([3.0, 0, 0])
    e_dir = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    # a sphere centre whose exact distance to the ellipsoid is rs + gap_or_depth: march along e_dir
    t = 0.2
    for _ in range(60):  # bisection on the exact ellipsoid distance
        phi = float(ellipsoid_phi(*radii, *(t * e_dir)))
        t += (rs + gap_or_depth) - phi
    c = collide(m, [pose(), pose(sphere_at), pose(p_ell), pose(p_ell + t * e_dir)])
    cyl = c.shape_a == 0
    assert cyl.sum() == 1
    np.testing.assert_allclose(c.depth[cyl], gap_or_depth, atol=1e-6)
    np.testing.assert_allclose(c.normal[cyl][0], d, atol=1e-5)
    ell = c.shape_a == 2
    assert ell.sum() == 1
    np.testing.assert_allclose(c.depth[ell], gap_or_depth, atol=2e-5)
    assert bool(c.speculative[ell][0]) == (gap_or_depth >= 0)


def test_stacked_cylinders_touch_on_their_cap_polygon():
    r, h = 0.05, 0.1
    m = point_model([Cylinder(r, h), Cylinder(r, h)], static=(0,))
    c = collide(m, [pose((0, 0, 0)), pose((0.01, 0, h - 0.002), (0, 0, 1), 0.2)])
    assert len(c) == 4  # the clipped cap polygon reduced to 4 points
    np.testing.assert_allclose(c.depth, -0.002, atol=1e-6)
    np.testing.assert_allclose(c.normal, np.tile([0, 0, 1], (4, 1)), atol=1e-6)
    # every point lies in the overlap of the two discs (to the rim polygon's accuracy)
    assert np.all(np.linalg.norm(c.point[:, :2], axis=1) <= r + 1e-6)
    assert np.all(np.linalg.norm(c.point[:, :2] - [0.01, 0], axis=1) <= r + 1e-6)
    spread = np.ptp(c.point[:, :2], axis=0)
    assert spread.min() > 1.2 * r  # the manifold keeps the patch's extent


def test_a_triangle_mesh_on_a_plane_and_under_a_sphere():
    import trimesh

    from hydro.geometry import Mesh
    from hydro.sdf import SDFSettings

    tm = trimesh.creation.box((0.2, 0.2, 0.2))
    mesh = Mesh(np.asarray(tm.vertices), np.asarray(tm.faces))
    r = 0.05
    m = point_model([Plane(), mesh, Sphere(r)], static=(0,), sdf=SDFSettings(max_resolution=32))
    c = collide(m, [pose(), pose((0, 0, 0.1 - 0.002)), pose((0.02, 0.01, 0.198 + r - 0.003))])  # the mesh top is z = 0.198
    ground = c.shape_a == 0
    assert ground.sum() == 4  # the mesh's bottom vertices against the plane, exact
    np.testing.assert_allclose(c.depth[ground], -0.002, atol=1e-7)
    top = (c.shape_a == 1) & (c.shape_b == 2)
    assert 1 <= top.sum() <= 4  # surface samples of the sphere against the mesh's field (and back)
    # the samples' deepest point: within the sphere's sampling spacing of the true depth
    assert abs(c.depth[top].min() - (-0.003)) < 1e-3
    np.testing.assert_allclose(c.normal[top][np.argmin(c.depth[top])], [0, 0, 1], atol=0.05)
