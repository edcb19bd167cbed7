"""Packed (sensor, filter) contact data against the NumPy reference, including clipping."""

import numpy as np
import pytest

from hydro.sim.contact_data import launch_contact_data
from naive_contact_data import reference_contact_data


def random_case(seed, *, n=300, shapes=14, bodies=6, sensors=3, filters=3):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(bodies, 4))
    nrm = rng.normal(size=(n, 3))
    W = bodies + 1  # the world is the sentinel body `bodies`
    sensor_map = np.full(W, -1)
    sensor_map[rng.choice(W, size=sensors, replace=False)] = np.arange(sensors)
    return dict(
        contact_count=n - 7,  # rows past the count must be ignored
        shape0=rng.integers(0, shapes, size=n), shape1=rng.integers(0, shapes, size=n),
        points=rng.normal(size=(n, 3)), normals=nrm / np.linalg.norm(nrm, axis=1, keepdims=True),
        forces=rng.normal(size=(n, 3)), separations=rng.normal(size=n) * 1e-3,
        shape_body=rng.integers(-1, bodies, size=shapes),
        body_q=np.c_[rng.normal(size=(bodies, 3)), q / np.linalg.norm(q, axis=1, keepdims=True)],
        body_sensor_map=sensor_map, body_filter_map=rng.integers(-1, filters, size=(sensors, W)),
        filter_count=filters, world_body_idx=bodies, dt_scale=0.25)


def check_against_reference(out, case, max_count, in_world):
    rows, required = reference_contact_data(**case, max_contact_data_count=max_count, points_in_world_space=in_world)
    np.testing.assert_array_equal(out.required_counts, required)
    np.testing.assert_array_equal(out.counts, np.minimum(required, max_count))
    np.testing.assert_array_equal(out.start_indices, np.r_[0, np.cumsum(out.counts)])
    for p, want in enumerate(rows):
        sl = out.pair_slice(p // out.filter_count, p % out.filter_count)
        assert sl.stop - sl.start == len(want)
        for k, (f, pt, nrm, sep) in enumerate(want):
            r = sl.start + k
            np.testing.assert_allclose(out.forces[r], f, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(out.points[r], pt, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(out.normals[r], nrm, rtol=1e-12, atol=1e-15)
            assert out.separations[r] == sep
    return required


@pytest.mark.parametrize("seed, max_count, in_world", [(0, 1000, True), (1, 1000, False), (2, 4, False), (3, 1, True),
                                                       (4, 0, True)])
def test_packed_data_matches_the_numpy_reference(seed, max_count, in_world):
    case = random_case(seed)
    out = launch_contact_data("cpu", **case, max_contact_data_count=max_count, points_in_world_space=in_world)
    required = check_against_reference(out, case, max_count, in_world)
    assert required.sum() > 50  # the case exercises many pairs
    if max_count < required.max():
        assert len(out.clipped_pairs) > 0 and np.all(out.required_counts[out.clipped_pairs] > max_count)
    assert len(out.forces) == out.counts.sum() and not np.isnan(out.forces).any()


def test_a_static_world_partner_and_body_frame_points():
    # shape 0 static (the world, sentinel 2), shape 1 on body 0 (a sensor), shape 2 on body 1
    case = dict(contact_count=3, shape0=np.array([0, 2, 0]), shape1=np.array([1, 1, 2]),
                points=np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]), normals=np.tile([0, 0, 1.0], (3, 1)),
                forces=np.array([[0, 0, 10.0], [0, 0, 4.0], [0, 0, 9.0]]), separations=np.array([-1e-3, -2e-3, -3e-3]),
                shape_body=np.array([-1, 0, 1]),
                body_q=np.array([[1.0, 0, 0, 0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)], [0, 0, 0, 0, 0, 0, 1.0]]),
                body_sensor_map=np.array([0, -1, -1]), body_filter_map=np.array([[-1, 1, 0]]), filter_count=2,
                world_body_idx=2, dt_scale=1.0)
    out = launch_contact_data("cpu", **case, max_contact_data_count=8, points_in_world_space=False)
    world, other = out.pair_slice(0, 0), out.pair_slice(0, 1)
    np.testing.assert_allclose(out.forces[world], [[0, 0, 10.0]])
    np.testing.assert_allclose(out.forces[other], [[0, 0, 4.0]])  # sensor is shape 1: force as given
    # (1,0,0) world is the body's origin; (0,1,0) world is (−1, 1, 0) from it, which the body
    # (turned +90° about z) sees turned back by −90°: (1, 1, 0)
    np.testing.assert_allclose(out.points[world], [[0, 0, 0]], atol=1e-15)
    np.testing.assert_allclose(out.points[other], [[1, 1, 0]], atol=1e-12)
    check_against_reference(out, case, 8, False)


def test_no_contacts_and_no_pairs():
    case = random_case(5)
    case["contact_count"] = 0
    out = launch_contact_data("cpu", **case, max_contact_data_count=3)
    assert out.counts.sum() == 0 and len(out.forces) == 0 and out.start_indices[-1] == 0


def test_bad_maps_are_refused():
    case = random_case(6)
    with pytest.raises(ValueError, match="filter_count"):
        launch_contact_data("cpu", **{**case, "filter_count": 1}, max_contact_data_count=3)
    with pytest.raises(ValueError, match="world_body_idx"):
        launch_contact_data("cpu", **{**case, "world_body_idx": 99}, max_contact_data_count=3)


def test_the_simulation_packs_its_last_contacts_per_sensor_and_filter():
    from hydro.sim.simulation import Simulation
    from sim_util import box_on_ground

    sim = Simulation(box_on_ground(boxes=2), dt=1 / 60)
    sim.update(step=2)
    out = sim.contact_data(["/World/Box1"], [-1, "/World/Box2"], max_contact_data_count=4, dt_scale=sim.dt,
                           points_in_world_space=True)
    f = sim.last_frame
    ground = f.body_a == -1
    assert out.required_counts.tolist() == [int(ground.sum()), int((~ground).sum())]
    assert out.counts.tolist() == [min(4, int(ground.sum())), min(4, int((~ground).sum()))]
    # the first rows of the world pair are the ground contacts on Box1 (shape 1), in order, × dt
    rows = out.pair_slice(0, 0)
    total = (f.normal_force + f.friction_force)[ground][: out.counts[0]] * sim.dt
    np.testing.assert_allclose(out.forces[rows], total, rtol=1e-12)
    # on the Box2 pair Box1 is shape 0 (the lower box), so its force is the opposite
    upper = out.pair_slice(0, 1)
    np.testing.assert_allclose(out.forces[upper], -(f.normal_force + f.friction_force)[~ground][:4] * sim.dt,
                               rtol=1e-12)
    assert np.all(out.normals[upper][:, 2] < 0)  # pointing into Box1, from above
