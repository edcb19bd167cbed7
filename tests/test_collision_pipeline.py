"""Both contact paths in one call: routing (hydroelastic iff both shapes opt in, have SDFs and
HydroelasticConfig.enabled), one contact table with the kind and material columns, and the
Newton rigid-contact layout."""

import itertools

import numpy as np
import pytest

from hydro.contact.collision import CollisionPipeline
from hydro.contact.config import CollisionConfig, HydroelasticConfig
from hydro.contact.types import CONTACT_HYDROELASTIC, CONTACT_POINT, RigidContacts
from hydro.errors import ContactOverflowError
from hydro.geometry import Box, Capsule, Plane, Sphere
from hydro.scene.material import MAT_CONTACT_STIFFNESS, MAT_DYNAMIC_FRICTION, MAT_STATIC_FRICTION, ShapeMaterial
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings
from hydro.transforms import quat_rotate


def mixed_scene():
    """A plane; a hydroelastic box with a hydroelastic sphere on it; a plain capsule and a plain box
    on the plane."""
    b = ModelBuilder()
    sdf = SDFSettings(max_resolution=16)
    b.add_shape("/World/Ground", Plane(), material=ShapeMaterial(contact_stiffness=2e5, static_friction=0.9,
                                                                 dynamic_friction=0.7))
    box = b.add_body("/World/Box", (0, 0, 0.05 - 0.001, 0, 0, 0, 1), density=500.0)
    b.add_shape("/World/Box/c", Box((0.3, 0.3, 0.1)), body=box, hydroelastic=True, stiffness=1e8, sdf=sdf)
    ball = b.add_body("/World/Ball", (0.02, 0, 0.1 + 0.05 - 0.002, 0, 0, 0, 1), density=500.0)
    b.add_shape("/World/Ball/c", Sphere(0.05), body=ball, hydroelastic=True, stiffness=1e8, sdf=sdf)
    cap = b.add_body("/World/Cap", (1.0, 0, 0.05 - 0.002, 0.7071068, 0, 0, 0.7071068), density=500.0)
    b.add_shape("/World/Cap/c", Capsule(0.05, 0.3), body=cap, material=ShapeMaterial(contact_damping=30.0))
    cube = b.add_body("/World/Cube", (-1.0, 0, 0.05 - 0.003, 0, 0, 0, 1), density=500.0)
    b.add_shape("/World/Cube/c", Box((0.1, 0.1, 0.1)), body=cube, hydroelastic=True, sdf=sdf)
    return b.finalize()


@pytest.fixture(scope="module")
def scene():
    return mixed_scene()


def pairs_of(result):
    """{(lower shape, higher shape): kind} (the hydroelastic path orders a pair its own way)."""
    return {(int(min(a, b)), int(max(a, b))): int(k)
            for a, b, k in zip(result.pair_shape_a, result.pair_shape_b, result.pair_kind)}


def test_mixed_scene_gets_contacts_from_both_paths(scene):
    m = scene
    r = CollisionPipeline(m).collide(m.shape_world_poses())
    assert not r.overflow
    ground, box, ball, cap, cube = range(5)
    assert pairs_of(r) == {(box, ball): CONTACT_HYDROELASTIC, (ground, box): CONTACT_POINT,
                           (ground, cap): CONTACT_POINT, (ground, cube): CONTACT_POINT}
    c = r.contacts
    np.testing.assert_array_equal(c.kind, r.pair_kind[c.pair])  # each row's path is its pair's
    np.testing.assert_array_equal(c.shape_a, r.pair_shape_a[c.pair])
    np.testing.assert_array_equal(c.shape_b, r.pair_shape_b[c.pair])
    hyd = c.kind == CONTACT_HYDROELASTIC
    assert hyd.sum() > 0 and (~hyd).sum() == 4 + 2 + 4  # box corners, capsule ends, cube corners
    assert np.all(c.area[~hyd] == 0) and np.all(c.area[hyd] > 0) and np.all(c.damping[hyd] == 0)
    mat = m.shape_material
    for k in np.flatnonzero(~hyd):
        a, b = c.shape_a[k], c.shape_b[k]
        ka, kb = mat[a, MAT_CONTACT_STIFFNESS], mat[b, MAT_CONTACT_STIFFNESS]
        np.testing.assert_allclose(c.stiffness[k], ka * kb / (ka + kb), rtol=1e-6)
        np.testing.assert_allclose(c.force[k], c.stiffness[k] * max(0.0, -c.depth[k]), rtol=1e-5)
        np.testing.assert_allclose(c.friction[k], 0.5 * (mat[a, MAT_DYNAMIC_FRICTION] + mat[b, MAT_DYNAMIC_FRICTION]),
                                   rtol=1e-6)
        np.testing.assert_allclose(c.static_friction[k], 0.5 * (mat[a, MAT_STATIC_FRICTION]
                                                                + mat[b, MAT_STATIC_FRICTION]), rtol=1e-6)
    np.testing.assert_allclose(c.damping[c.shape_b == cap], 30.0)  # one shape authors it: that one
    assert np.all(np.isnan(c.damping[(c.shape_b == cube) & ~hyd]))  # none: the solver derives it
    np.testing.assert_allclose(c.depth[c.shape_b == cube], -0.003, atol=1e-6)
    np.testing.assert_allclose(c.friction[hyd], 0.5, rtol=1e-6)  # hydroelastic rows carry the pair's friction
    summaries = r.pair_summaries()
    assert {s.kind for s in summaries} == {CONTACT_HYDROELASTIC, CONTACT_POINT}


def test_disabling_hydroelastic_contact_routes_every_pair_to_points(scene):
    m = scene
    poses = m.shape_world_poses()
    on = CollisionPipeline(m).collide(poses)
    off = CollisionPipeline(m, CollisionConfig(hydroelastic=HydroelasticConfig(enabled=False))).collide(poses)
    assert set(pairs_of(off)) == set(pairs_of(on))
    assert set(pairs_of(off).values()) == {CONTACT_POINT}
    assert np.all(off.contacts.kind == CONTACT_POINT) and len(off.patch) == 0
    ball = off.contacts.shape_b == 2
    assert ball.sum() == 1  # the sphere on the box: one point
    np.testing.assert_allclose(off.contacts.depth[ball], -0.001, atol=1e-6)  # GJK/EPA: sphere on box


def test_every_pair_the_rule_allows_collides_once():
    b = ModelBuilder()
    sdf = SDFSettings(max_resolution=16)
    b.add_collision_group("a", filtered_groups=("b",))
    b.add_collision_group("b")
    b.add_shape("/World/Ground", Plane())
    for i in range(6):
        body = b.add_body(f"/World/B{i}", (0.02 * i, 0.01 * i, 0.03 * i, 0, 0, 0, 1), density=1000.0)
        b.add_shape(f"/World/B{i}/c", Sphere(0.1) if i % 2 else Box((0.15, 0.15, 0.15)), body=body,
                    hydroelastic=i < 4, sdf=sdf, collision_groups=("a",) if i == 1 else (("b",) if i == 3 else ()))
    b.add_filtered_pair("/World/B0", "/World/B2")
    m = b.finalize()
    r = CollisionPipeline(m).collide(m.shape_world_poses())
    got = pairs_of(r)
    assert len(got) == len(r.pair_kind)  # no pair twice
    want = [(i, j) for i, j in itertools.combinations(range(m.shape_count), 2) if m.may_collide(i, j)]
    assert sorted(got) == sorted(want)
    for (i, j), kind in got.items():
        both = m.shape_hydroelastic[i] and m.shape_hydroelastic[j]
        assert kind == (CONTACT_HYDROELASTIC if both else CONTACT_POINT)


def test_newton_layout_round_trips_the_separation(scene):
    m = scene
    state = m.state()
    r = CollisionPipeline(m).collide(m.shape_world_poses(state))
    c = r.contacts
    rigid = c.to_rigid(m, state.body_q)
    n = int(rigid.rigid_contact_count[0])
    assert n == len(c)

    def world(shape, point):
        body = m.shape_body[shape]
        out = point.astype(np.float64).copy()
        on = body >= 0
        q = state.body_q[body[on]]
        out[on] = quat_rotate(q[:, 3:], out[on]) + q[:, :3]
        return out

    p0 = world(rigid.rigid_contact_shape0[:n], rigid.rigid_contact_point0[:n])
    p1 = world(rigid.rigid_contact_shape1[:n], rigid.rigid_contact_point1[:n])
    sep = (np.einsum("ij,ij->i", rigid.rigid_contact_normal[:n], p1 - p0) - rigid.rigid_contact_thickness0[:n]
           - rigid.rigid_contact_thickness1[:n])
    np.testing.assert_allclose(sep, c.depth, atol=1e-6)
    np.testing.assert_array_equal(rigid.rigid_contact_shape0[:n], c.shape_a)
    small = RigidContacts.allocate(3)
    with pytest.raises(ContactOverflowError, match="rigid_contact_max"):
        c.to_rigid(m, state.body_q, out=small)


def test_point_contact_capacity_overflow_is_reported(scene):
    m = scene
    cfg = CollisionConfig(rigid_contact_max=5, overflow="raise")
    with pytest.raises(ContactOverflowError, match="CollisionConfig.rigid_contact_max to at least 10"):
        CollisionPipeline(m, cfg).collide(m.shape_world_poses())
    with pytest.warns(RuntimeWarning, match="rigid_contact_max"):
        r = CollisionPipeline(m, CollisionConfig(rigid_contact_max=5)).collide(m.shape_world_poses())
    assert (r.contacts.kind == CONTACT_POINT).sum() == 5


def test_an_all_hydroelastic_scene_skips_the_point_stages_and_gives_the_hydroelastic_contacts():
    from hydro.contact.pipeline import HydroelasticPipeline

    b = ModelBuilder()
    sdf = SDFSettings(max_resolution=16)
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.1)), hydroelastic=True, sdf=sdf)
    ball = b.add_body("/World/Ball", (0, 0, 0.05 + 0.05 - 0.004, 0, 0, 0, 1), density=500.0)
    b.add_shape("/World/Ball/c", Sphere(0.05), body=ball, hydroelastic=True, sdf=sdf)
    m = b.finalize()
    poses = m.shape_world_poses()
    both = CollisionPipeline(m)
    assert not both.has_points
    got = both.collide(poses)
    want = HydroelasticPipeline(m).collide(poses)
    assert not any(k.startswith("point") for k in got.timings_ms)
    assert len(got.contacts) == len(want.contacts) > 0 and np.all(got.contacts.kind == CONTACT_HYDROELASTIC)
    np.testing.assert_array_equal(got.contacts.force, want.contacts.force)
    # with hydroelastic contact off the same scene needs the point stages again
    off = CollisionPipeline(m, CollisionConfig(hydroelastic=HydroelasticConfig(enabled=False)))
    assert off.has_points and np.all(off.collide(poses).contacts.kind == CONTACT_POINT)
