"""The default contact path's exact pairs against their closed forms (depth, point, normal),
margins and gaps, and the broad phase's pair rule against Model.may_collide."""

import itertools

import numpy as np

from hydro.contact.point_pipeline import PointContactPipeline
from hydro.geometry import Box, Capsule, Plane, Sphere
from hydro.scene.model import ModelBuilder
from hydro.transforms import quat_to_matrix
from point_util import point_model, pose


def collide(model, poses, **kw):
    contacts, pa, pb, call = PointContactPipeline(model, **kw).collide(np.asarray(poses, float))
    assert not call.overflow
    return contacts, pa, pb


def rot(p):
    return quat_to_matrix(np.asarray(p[3:], float)[None])[0]


def by_xy(c):
    return np.lexsort((c.point[:, 1].round(6), c.point[:, 0].round(6)))


def test_sphere_on_a_tilted_plane():
    r = 0.1
    plane = pose((0.1, -0.2, 0.3), (1.0, 0.5, 0.0), 0.4)
    n = rot(plane)[:, 2]
    tangent = np.cross(n, [0.0, 0.0, 1.0])
    center = plane[:3] + n * (r - 0.01) + 0.3 * tangent
    m = point_model([Plane(), Sphere(r)], static=(0,))
    c, pa, pb = collide(m, [plane, pose(center)])
    assert (pa.tolist(), pb.tolist()) == ([0], [1]) and len(c) == 1
    np.testing.assert_allclose(c.depth, [-0.01], atol=1e-6)
    np.testing.assert_allclose(c.normal[0], n, atol=1e-6)  # from the plane (A) toward the sphere (B)
    np.testing.assert_allclose(c.point[0], center - n * (r - 0.005), atol=1e-6)  # midway between the surfaces
    assert c.shape_a[0] == 0 and c.shape_b[0] == 1 and not c.speculative[0]


def test_margins_add_and_gaps_give_speculative_contacts():
    r = 0.1
    m = point_model([Plane(), Sphere(r)], static=(0,), margin=[0.002, 0.003], gap=[0.004, 0.006])
    for height, depth in ((r + 0.012, 0.007), (r - 0.01, -0.015), (r + 0.015, 0.010), (r + 0.0151, None)):
        c, _, _ = collide(m, [pose(), pose((0.0, 0.0, height))])
        if depth is None:
            assert len(c) == 0  # beyond margins + gaps
            continue
        assert len(c) == 1
        np.testing.assert_allclose(c.depth, [depth], atol=1e-6)
        assert bool(c.speculative[0]) == (depth >= 0)
        np.testing.assert_allclose(c.force, [m.shape_material[0, 5] * m.shape_material[1, 5]
                                             / (m.shape_material[0, 5] + m.shape_material[1, 5]) * max(0.0, -depth)],
                                   rtol=1e-5)


def test_sphere_sphere():
    r1, r2 = 0.1, 0.05
    c1 = np.array([0.2, 0.1, -0.3])
    d = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    for dist in (0.14, 0.152):
        c2 = c1 + dist * d
        m = point_model([Sphere(r1), Sphere(r2)], gap=0.002)
        c, _, _ = collide(m, [pose(c1), pose(c2, (0, 1, 0), 0.7)])
        assert len(c) == 1
        depth = dist - r1 - r2
        np.testing.assert_allclose(c.depth, [depth], atol=1e-6)
        np.testing.assert_allclose(c.normal[0], d, atol=1e-6)
        np.testing.assert_allclose(c.point[0], c1 + d * (r1 + 0.5 * depth), atol=1e-6)
        assert bool(c.speculative[0]) == (depth >= 0)


def test_capsule_on_a_plane_touches_at_its_ends():
    r, height = 0.05, 0.4
    m = point_model([Plane(), Capsule(r, height)], static=(0,), gap=0.01)
    for angle, expected in ((0.5 * np.pi, 2), (0.5 * np.pi - 0.2, 1)):
        # the capsule's axis (local z) tilted toward x; centre chosen so its lower end sinks 0.004
        q = pose((0.3, 0.2, 0.0), (0, 1, 0), angle)
        axis = rot(q)[:, 2]
        ends = [-0.5 * height * axis, 0.5 * height * axis]
        low = min(e[2] for e in ends)
        q[:3] += [0.0, 0.0, -low + r - 0.004]
        c, _, _ = collide(m, [pose(), q])
        ends = [q[:3] + e for e in ends]
        want = sorted((e[2] - r, e) for e in ends if e[2] - r <= 0.01)
        assert len(c) == len(want) == expected
        order = np.argsort(c.depth)
        for k, (depth, end) in zip(order, want):
            np.testing.assert_allclose(c.depth[k], depth, atol=1e-6)
            np.testing.assert_allclose(c.normal[k], [0, 0, 1], atol=1e-6)
            np.testing.assert_allclose(c.point[k], end - [0, 0, r + 0.5 * depth], atol=1e-6)


def test_box_on_a_plane_touches_at_its_corners():
    size = np.array([0.2, 0.3, 0.1])
    m = point_model([Plane(), Box(tuple(size))], static=(0,), gap=0.005)
    for axis, angle in (((0, 0, 1), 0.3), ((1, 2, 0.5), 0.25)):
        q = pose((0.1, -0.2, 0.0), axis, angle)
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * 0.5 * size
        world = corners @ rot(q).T
        q[:3] += [0, 0, -world[:, 2].min() - 0.003]
        world += q[:3]
        want = world[world[:, 2] <= 0.01]  # within the gaps (0.005 + 0.005)
        c, _, _ = collide(m, [pose(), q])
        assert len(c) == len(want) and len(want) >= 1
        got = c.point[by_xy(c)]
        want = want[np.lexsort((want[:, 1].round(6), want[:, 0].round(6)))]
        np.testing.assert_allclose(got[:, :2], want[:, :2], atol=1e-6)
        np.testing.assert_allclose(got[:, 2], 0.5 * want[:, 2], atol=1e-6)  # midway: corner and its foot
        np.testing.assert_allclose(np.sort(c.depth), np.sort(want[:, 2]), atol=1e-6)
        np.testing.assert_allclose(c.normal, np.tile([0, 0, 1], (len(c), 1)), atol=1e-6)
    flat = pose((0, 0, 0.05 - 0.002))
    c, _, _ = collide(m, [pose(), flat])
    assert len(c) == 4
    np.testing.assert_allclose(c.depth, -0.002, atol=1e-6)


def test_box_on_a_box_gives_the_clipped_face_polygon():
    # a 0.2 cube turned 45° about z, sunk 0.01 into a table whose edge (x = 0.5) cuts one corner off
    m = point_model([Box((1.0, 1.0, 0.2)), Box((0.2, 0.2, 0.2))], static=(0,))
    c, _, _ = collide(m, [pose((0, 0, -0.1)), pose((0.45, 0, 0.1 - 0.01), (0, 0, 1), 0.25 * np.pi)])
    d = 0.1 * np.sqrt(2.0)
    want = np.array([[0.45 - d, 0.0], [0.45, -d], [0.45, d], [0.5, -(d - 0.05)], [0.5, d - 0.05]])
    assert len(c) == 5
    got = c.point[by_xy(c)]
    want = want[np.lexsort((want[:, 1].round(6), want[:, 0].round(6)))]
    np.testing.assert_allclose(got[:, :2], want, atol=1e-6)
    np.testing.assert_allclose(got[:, 2], -0.005, atol=1e-6)
    np.testing.assert_allclose(c.depth, -0.01, atol=1e-6)
    np.testing.assert_allclose(c.normal, np.tile([0, 0, 1], (5, 1)), atol=1e-6)


def test_box_on_a_box_tilted_has_true_depths():
    # B tilted a little about x: each clipped point is on B's bottom face, its depth the height of
    # that face point above A's top face (z = 0)
    m = point_model([Box((1.0, 1.0, 0.2)), Box((0.2, 0.2, 0.2))], static=(0,))
    qb = pose((0.1, 0.05, 0.1 - 0.006), (1, 0, 0), 0.04)
    c, _, _ = collide(m, [pose((0, 0, -0.1)), qb])
    assert len(c) == 4
    rb = rot(qb)
    for k in range(4):
        on_b = c.point[k] + 0.5 * c.depth[k] * c.normal[k]  # B's surface point
        on_a = c.point[k] - 0.5 * c.depth[k] * c.normal[k]
        np.testing.assert_allclose(on_a[2], 0.0, atol=1e-6)
        np.testing.assert_allclose((rb.T @ (on_b - qb[:3]))[2], -0.1, atol=1e-6)  # on B's bottom face
        np.testing.assert_allclose(c.depth[k], on_b[2], atol=1e-6)
    assert c.depth.min() < -0.008 and c.depth.max() > -0.004  # the tilt shows in the depths


def test_the_broad_phase_follows_the_pair_rule():
    b = ModelBuilder()
    b.add_collision_group("ghosts", filtered_groups=("ground",))
    b.add_collision_group("ground")
    b.add_shape("/World/Ground", Plane(), collision_groups=("ground",))
    b.add_shape("/World/Table", Box((2.0, 2.0, 0.1)))
    rng = np.random.default_rng(3)
    for i in range(7):
        body = b.add_body(f"/World/B{i}", (0.01 * i, 0, 0.02 * i, 0, 0, 0, 1), density=1000.0)
        groups = ("ghosts",) if i == 2 else ()
        for k in range(1 + i % 2):
            g = Sphere(0.1) if rng.random() < 0.5 else Box((0.15, 0.1, 0.12))
            b.add_shape(f"/World/B{i}/S{k}", g, body=body, collision_enabled=(i != 4), collision_groups=groups)
    b.add_filtered_pair("/World/B0", "/World/B1/S0")
    b.add_filtered_pair("/World/B5/S0", "/World/Table")
    for num_envs in (1, 2):
        m = b.finalize(num_envs=num_envs, build_sdfs=False)
        poses = m.shape_world_poses()
        pipe = PointContactPipeline(m)
        _, pa, pb, _ = pipe.collide(poses)
        got = set(zip(pa.tolist(), pb.tolist()))
        want = {(i, j) for i, j in itertools.combinations(range(m.shape_count), 2) if m.may_collide(i, j)}
        assert got == want and len(want) > 10
