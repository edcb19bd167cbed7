"""Contact data per (sensor, filter) pair against NumPy references: Isaac Sim's documented
launch_count_contacts_per_pair / launch_contact_data on Newton-layout buffers (clipping, the world
body, body-local and world points), and the packed helper pack_contact_data."""

import numpy as np
import pytest

from hydro.errors import InputError
from hydro.sim.contact_data import launch_contact_data, launch_count_contacts_per_pair, rigid_contact_data
from hydro.sim.contact_data_packed import pack_contact_data
from naive_contact_data import reference_contact_data, reference_rigid_contact_data


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
def test_the_packed_helper_matches_its_numpy_reference(seed, max_count, in_world):
    case = random_case(seed)
    out = pack_contact_data("cpu", **case, max_contact_data_count=max_count, points_in_world_space=in_world)
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
    out = pack_contact_data("cpu", **case, max_contact_data_count=8, points_in_world_space=False)
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
    out = pack_contact_data("cpu", **case, max_contact_data_count=3)
    assert out.counts.sum() == 0 and len(out.forces) == 0 and out.start_indices[-1] == 0


def test_bad_maps_are_refused():
    case = random_case(6)
    with pytest.raises(ValueError, match="filter_count"):
        pack_contact_data("cpu", **{**case, "filter_count": 1}, max_contact_data_count=3)
    with pytest.raises(ValueError, match="world_body_idx"):
        pack_contact_data("cpu", **{**case, "world_body_idx": 99}, max_contact_data_count=3)


@pytest.mark.parametrize("solver", ["implicit", "explicit"])  # one step, or sub-steps each with its share
def test_the_simulations_contact_data_is_the_documented_call_on_its_rigid_contacts(solver):
    from hydro.sim.simulation import Simulation
    from sim_util import box_on_ground

    sim = Simulation(box_on_ground(boxes=2), dt=1 / 60, solver=solver)
    assert (sim.substeps > 1) == (solver == "explicit")
    sim.update(step=2)
    out = sim.contact_data(["/World/Box1"], [-1, "/World/Box2"], max_contact_data_count=4, dt_scale=sim.dt,
                           points_in_world_space=True)
    frames = sim.last_step_frames
    ground = [f.body_a == -1 for f in frames]
    assert out.required_counts.tolist() == [[sum(int(g.sum()) for g in ground),
                                             sum(int((~g).sum()) for g in ground)]]
    assert out.counts.tolist() == [[min(4, int(x)) for x in out.required_counts[0]]]
    # the first rows of the world pair are the first sub-step's ground contacts on Box1 (shape 1,
    # so the force on it is the frame's force on B), each a sub-step's share of the step, × dt
    f = frames[0]
    total = (f.normal_force + f.friction_force)[ground[0]][: out.counts[0, 0]] * sim.dt / sim.substeps
    np.testing.assert_allclose(out.forces[0, 0, : out.counts[0, 0]], total, rtol=1e-5, atol=1e-9)
    # on the Box2 pair Box1 is shape 0 (the lower box): its force is the opposite, its normal points down
    upper = (f.normal_force + f.friction_force)[~ground[0]][:4] * sim.dt / sim.substeps
    np.testing.assert_allclose(out.forces[0, 1, : out.counts[0, 1]], -upper, rtol=1e-5, atol=1e-9)
    assert np.all(out.normals[0, 1, : out.counts[0, 1], 2] < 0)


@pytest.mark.parametrize("solver", ["implicit", "explicit"])
def test_launch_contact_data_on_rigid_contacts_reads_the_weight_of_a_resting_box_like_the_sensor(solver):
    # the issue-29 regression: rigid_contact_force was 0, so launch_contact_data read no force
    from hydro.sim.sensors import ContactSensorCfg
    from hydro.sim.simulation import Simulation
    from sim_util import box_on_ground

    sim = Simulation(box_on_ground(), dt=1 / 60, solver=solver)
    assert (sim.substeps > 1) == (solver == "explicit")
    sensor = sim.add_sensor(ContactSensorCfg(prim_path="/World/Box", filter_prim_paths_expr=["/World/Ground"],
                                             track_friction_forces=True))
    sim.update(step=20)
    rigid = sim.rigid_contacts()
    model = sim.model
    B = model.body_count
    n = int(rigid.rigid_contact_count[0])
    assert n == sum(len(f) for f in sim.last_step_frames) > 0
    # Newton's convention: the force on shape 0 (the ground, A) is the opposite of the force on the box
    ground_side = rigid.rigid_contact_force[:n].sum(axis=0)
    sensor_map = np.array([0] + [-1] * B, np.int32)  # body 0 (the box) is sensor 0
    filter_map = np.full((1, B + 1), -1, np.int32)
    filter_map[0, B] = 0  # the static world (the ground) is filter 0
    M = n + 3
    counts = np.zeros(1, np.uint32)
    assert launch_count_contacts_per_pair(rigid.rigid_contact_count, rigid.rigid_contact_shape0,
                                          rigid.rigid_contact_shape1, model.shape_body, sensor_map, len(sensor_map),
                                          filter_map, B + 1, 1, B, counts, rigid.rigid_contact_max)
    assert counts[0] == n <= M
    start = np.zeros(1, np.uint32)
    forces = np.full((1, 1, M, 3), np.nan, np.float32)
    points, normals = forces.copy(), forces.copy()
    seps = np.full((1, 1, M), np.nan, np.float32)
    out_counts = np.zeros(1, np.uint32)
    assert launch_contact_data(rigid.rigid_contact_count, rigid.rigid_contact_shape0, rigid.rigid_contact_shape1,
                               rigid.rigid_contact_point0, rigid.rigid_contact_point1, rigid.rigid_contact_normal,
                               rigid.rigid_contact_force, rigid.rigid_contact_thickness0,
                               rigid.rigid_contact_thickness1, model.shape_body, sim.state.body_q, sensor_map,
                               len(sensor_map), filter_map, B + 1, 1, B, 1.0, M, forces, points, normals, seps,
                               out_counts, start, rigid.rigid_contact_max, True)
    assert out_counts[0] == n
    total = forces[0, 0, :n].astype(np.float64).sum(axis=0)
    mg = model.body_mass[0] * 9.81
    np.testing.assert_allclose(total, [0.0, 0.0, mg], rtol=0, atol=0.01 * mg)  # the box's weight, within 1 %
    np.testing.assert_allclose(ground_side, -total, rtol=1e-5, atol=1e-6)
    # the same numbers as the Isaac Lab sensor: its net force and its ground column
    np.testing.assert_allclose(total, sensor.data.net_forces_w[0, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(total, sensor.data.force_matrix_w[0, 0, 0], rtol=1e-5, atol=1e-5)
    assert np.all(seps[0, 0, :n] < 0) and np.all(normals[0, 0, :n, 2] > 0.5)  # penetrating, pushing the box up (rim: 45°)
    # the separations are the contacts' depths, the points where the contacts were
    depth = np.concatenate([f.depth for f in sim.last_step_frames])
    np.testing.assert_allclose(seps[0, 0, :n], depth, atol=1e-6)
    pts = np.concatenate([f.point for f in sim.last_step_frames])
    nrm = np.concatenate([f.normal for f in sim.last_step_frames])
    np.testing.assert_allclose(points[0, 0, :n], pts + 0.5 * depth[:, None] * nrm, atol=1e-6)
    # a capacity: rows past the count are unwritten (NaN); too small a capacity says what it needs
    big = sim.rigid_contacts(rigid_contact_max=n + 5)
    assert big.rigid_contact_max == n + 5 and np.isnan(big.rigid_contact_force[n:]).all()
    np.testing.assert_array_equal(big.rigid_contact_force[:n], rigid.rigid_contact_force[:n])
    with pytest.raises(RuntimeError, match=f"pass rigid_contact_max >= {n}"):
        sim.rigid_contacts(rigid_contact_max=n - 1)


# ---------------------------------------------------------------------------------------------
# The documented launchers on Newton-layout buffers


def random_rigid_case(seed, *, capacity=300, count=None, shapes=16, bodies=6, sensors=3, filters=3):
    """Random buffers in Newton's layout (float32), with static shapes (the world is the sentinel
    body ``bodies``), the world as a sensor and as a filter, and entries of body_sensor_map past
    body_sensor_map_size that must be ignored."""
    rng = np.random.default_rng(seed)
    nb = bodies + 1  # the bodies and the world
    q = rng.normal(size=(bodies, 4))
    nrm = rng.normal(size=(capacity, 3))
    sensor_map = np.full(nb + 2, -1, np.int32)
    sensor_map[rng.choice(bodies, size=sensors, replace=False)] = np.arange(sensors)
    sensor_map[bodies] = 0  # the world is sensor 0
    sensor_map[nb:] = 1  # past body_sensor_map_size: never read
    filter_map = rng.integers(-1, filters, size=(sensors, nb)).astype(np.int32)
    filter_map[:, bodies] = rng.integers(0, filters, size=sensors)  # the world is a filter of every sensor
    shape_body = rng.integers(-1, bodies, size=shapes).astype(np.int32)
    shape_body[:2] = -1
    f32 = np.float32
    return dict(
        contact_count=np.array([capacity - 9 if count is None else count], np.int32),
        shape0=rng.integers(0, shapes, size=capacity).astype(np.int32),
        shape1=rng.integers(0, shapes, size=capacity).astype(np.int32),
        point0=rng.normal(size=(capacity, 3)).astype(f32), point1=rng.normal(size=(capacity, 3)).astype(f32),
        normal=(nrm / np.linalg.norm(nrm, axis=1, keepdims=True)).astype(f32),
        contact_force=rng.normal(size=(capacity, 3)).astype(f32),
        thickness0=rng.uniform(0, 1e-3, size=capacity).astype(f32),
        thickness1=rng.uniform(0, 1e-3, size=capacity).astype(f32),
        shape_body=shape_body,
        body_q=np.c_[rng.normal(size=(bodies, 3)), q / np.linalg.norm(q, axis=1, keepdims=True)].astype(f32),
        body_sensor_map=sensor_map, body_sensor_map_size=nb, body_filter_map=filter_map, num_bodies=nb,
        filter_count=filters, world_body_idx=bodies, dt_scale=0.25, rigid_contact_max=capacity)


def launch_both(case, max_count, in_world, *, alloc=np.full, counts_dtype=np.uint32):
    """count → exclusive scan → data, outputs pre-filled with NaN (so an unwritten slot shows)."""
    S = case["body_filter_map"].shape[0]
    F = case["filter_count"]
    P = S * F
    counts = np.full(P, 12345, counts_dtype)
    keys = ("contact_count", "shape0", "shape1", "shape_body", "body_sensor_map", "body_sensor_map_size",
            "body_filter_map", "num_bodies", "filter_count", "world_body_idx")
    assert launch_count_contacts_per_pair(*[case[k] for k in keys], counts, case["rigid_contact_max"]) is True
    start = np.r_[0, np.cumsum(counts)[:-1]].astype(np.uint32)
    out = {"forces": np.full((S, F, max_count, 3), np.nan, np.float32),
           "points": np.full((S, F, max_count, 3), np.nan, np.float32),
           "normals": np.full((S, F, max_count, 3), np.nan, np.float32),
           "separations": np.full((S, F, max_count), np.nan, np.float32),
           "counts": np.full(P, 777, np.uint32)}
    ok = launch_contact_data(case["contact_count"], case["shape0"], case["shape1"], case["point0"], case["point1"],
                             case["normal"], case["contact_force"], case["thickness0"], case["thickness1"],
                             case["shape_body"], case["body_q"], case["body_sensor_map"], case["body_sensor_map_size"],
                             case["body_filter_map"], case["num_bodies"], case["filter_count"], case["world_body_idx"],
                             case["dt_scale"], max_count, out["forces"], out["points"], out["normals"],
                             out["separations"], out["counts"], start, case["rigid_contact_max"],
                             points_in_world_space=in_world)
    assert ok is True
    return counts.astype(np.int64), start, out


def check_rigid_against_reference(counts, start, out, case, max_count, in_world):
    rows, required = reference_rigid_contact_data(**case, max_contact_data_count=max_count,
                                                  points_in_world_space=in_world)
    F = case["filter_count"]
    np.testing.assert_array_equal(counts, required)
    np.testing.assert_array_equal(start, np.r_[0, np.cumsum(required)[:-1]])
    np.testing.assert_array_equal(out["counts"], np.minimum(required, max_count))
    for p, want in enumerate(rows):
        s, f = divmod(p, F)
        assert len(want) == min(required[p], max_count)
        for k, (force, pt, nrm, sep) in enumerate(want):
            np.testing.assert_allclose(out["forces"][s, f, k], force, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(out["points"][s, f, k], pt, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(out["normals"][s, f, k], nrm, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(out["separations"][s, f, k], sep, rtol=1e-5, atol=1e-5)
        # slots past the count are left as they were (NaN here)
        assert np.isnan(out["forces"][s, f, len(want):]).all() and np.isnan(out["separations"][s, f, len(want):]).all()
    return rows, required


@pytest.mark.parametrize("seed, max_count, in_world", [(0, 1000, True), (1, 1000, False), (2, 4, False), (3, 1, True)])
def test_launch_contact_data_matches_the_numpy_reference(seed, max_count, in_world):
    case = random_rigid_case(seed)
    counts, start, out = launch_both(case, max_count, in_world)
    rows, required = check_rigid_against_reference(counts, start, out, case, max_count, in_world)
    assert required.sum() > 50  # many pairs are exercised
    if max_count < required.max():
        assert (required > max_count).any()  # clipping happened, and out_counts says where
    # the world (sentinel) takes part as a sensor (sensor 0) and as a filter partner
    shape_body = case["shape_body"]
    n = int(case["contact_count"][0])
    static_sides = (shape_body[case["shape0"][:n]] < 0).sum() + (shape_body[case["shape1"][:n]] < 0).sum()
    assert static_sides > 10


def test_the_live_count_is_clipped_to_the_capacity_and_rows_past_it_are_never_read():
    case = random_rigid_case(7, capacity=60, count=500)  # more contacts than capacity: read 60
    counts, start, out = launch_both(case, 8, True)
    check_rigid_against_reference(counts, start, out, case, 8, True)
    # rows past the live count do not count
    case2 = random_rigid_case(7, capacity=60, count=20)
    counts2, _, _ = launch_both(case2, 8, True)
    assert counts2.sum() < counts.sum()
    rows, required = reference_rigid_contact_data(**case2, max_contact_data_count=8, points_in_world_space=True)
    np.testing.assert_array_equal(counts2, required)


def test_a_hand_made_contact_with_the_world_and_body_frames():
    # shape 0 static (the world, sentinel body 2); shape 1 on body 0, turned +90° about z at (1, 0, 0)
    s = np.sin(np.pi / 4)
    body_q = np.array([[1.0, 0, 0, 0, 0, s, s], [0, 0, 0, 0, 0, 0, 1.0]], np.float32)
    case = dict(contact_count=np.array([1], np.int32), shape0=np.array([0], np.int32), shape1=np.array([1], np.int32),
                point0=np.array([[1.0, 0.0, -0.001]], np.float32),  # world (static shape)
                point1=np.array([[0.0, 0.0, 0.001]], np.float32),  # body 0's frame: world (1, 0, 0.001)
                normal=np.array([[0, 0, 1.0]], np.float32),
                contact_force=np.array([[-0.5, 0, -10.0]], np.float32),  # on shape 0 (Newton's convention)
                thickness0=np.array([0.0005], np.float32), thickness1=np.array([0.0005], np.float32),
                shape_body=np.array([-1, 0], np.int32), body_q=body_q,
                body_sensor_map=np.array([0, -1, 1], np.int32), body_sensor_map_size=3,
                body_filter_map=np.array([[-1, -1, 0], [0, -1, -1]], np.int32), num_bodies=3, filter_count=1,
                world_body_idx=2, dt_scale=0.01, rigid_contact_max=1)
    counts, start, out = launch_both(case, 2, False)
    assert counts.tolist() == [1, 1] and out["counts"].tolist() == [1, 1]
    # body 0 (sensor 0, shape 1) against the world: the opposite of the force on shape 0, × dt, its own
    # point in its frame
    np.testing.assert_allclose(out["forces"][0, 0, 0], [0.005, 0, 0.1], rtol=1e-6)
    np.testing.assert_allclose(out["points"][0, 0, 0], [0, 0, 0.001], atol=1e-7)
    np.testing.assert_allclose(out["normals"][0, 0, 0], [0, 0, 1])
    # separation: 2 mm apart along the normal, less the two 0.5 mm thicknesses
    np.testing.assert_allclose(out["separations"][0, 0, 0], 0.001, rtol=1e-4)
    # the world (sensor 1, shape 0) against body 0: contact_force itself, normal into the world's shape
    np.testing.assert_allclose(out["forces"][1, 0, 0], [-0.005, 0, -0.1], rtol=1e-6)
    np.testing.assert_allclose(out["normals"][1, 0, 0], [0, 0, -1])
    np.testing.assert_allclose(out["points"][1, 0, 0], [1, 0, -0.001], atol=1e-7)
    # in world space, body 0's point is (1, 0, 0.001)
    _, _, world = launch_both(case, 2, True)
    np.testing.assert_allclose(world["points"][0, 0, 0], [1, 0, 0.001], atol=1e-6)


def test_a_world_sentinel_outside_the_bodies_leaves_static_shapes_out():
    case = random_rigid_case(8)
    case["world_body_idx"] = -1
    counts, start, out = launch_both(case, 5, False)
    check_rigid_against_reference(counts, start, out, case, 5, False)
    with_world, _, _ = launch_both(random_rigid_case(8), 5, False)
    assert counts.sum() < with_world.sum()


def test_wrong_start_indices_and_bad_arguments_are_refused():
    case = random_rigid_case(9, capacity=40)
    S, F = case["body_filter_map"].shape[0], case["filter_count"]
    args = [case[k] for k in ("contact_count", "shape0", "shape1", "point0", "point1", "normal", "contact_force",
                              "thickness0", "thickness1", "shape_body", "body_q", "body_sensor_map",
                              "body_sensor_map_size", "body_filter_map", "num_bodies", "filter_count",
                              "world_body_idx", "dt_scale")]

    def outs(dtype=np.float32):
        return [np.zeros((S, F, 3, 3), dtype), np.zeros((S, F, 3, 3), dtype), np.zeros((S, F, 3, 3), dtype),
                np.zeros((S, F, 3), dtype), np.zeros(S * F, np.uint32)]

    with pytest.raises(InputError, match="exclusive prefix sum"):
        launch_contact_data(*args, 3, *outs(), np.zeros(S * F, np.uint32), 40)
    with pytest.raises(InputError, match="out_forces must be float32"):
        launch_contact_data(*args, 3, *outs(np.float64), np.zeros(S * F, np.uint32), 40)
    with pytest.raises(InputError, match="rigid_contact_max"):
        launch_contact_data(*args, 3, *outs(), np.zeros(S * F, np.uint32), 41)
    bad = list(args)
    bad[15] = 1  # filter_count smaller than the filter map's entries
    with pytest.raises(InputError, match="filter_count"):
        launch_contact_data(*bad, 3, *outs(), np.zeros(S * F, np.uint32), 40)


def test_rigid_contact_data_on_a_rigid_contacts_buffer():
    from types import SimpleNamespace

    case = random_rigid_case(10, capacity=80)
    rigid = SimpleNamespace(rigid_contact_max=80, rigid_contact_count=case["contact_count"],
                            rigid_contact_shape0=case["shape0"], rigid_contact_shape1=case["shape1"],
                            rigid_contact_point0=case["point0"], rigid_contact_point1=case["point1"],
                            rigid_contact_normal=case["normal"], rigid_contact_force=case["contact_force"],
                            rigid_contact_thickness0=case["thickness0"], rigid_contact_thickness1=case["thickness1"])
    sensor_map = case["body_sensor_map"][: case["body_sensor_map_size"]]
    data = rigid_contact_data(rigid, shape_body=case["shape_body"], body_q=case["body_q"], body_sensor_map=sensor_map,
                              body_filter_map=case["body_filter_map"], filter_count=case["filter_count"],
                              world_body_idx=case["world_body_idx"], dt_scale=case["dt_scale"],
                              max_contact_data_count=2, points_in_world_space=True)
    out = {"forces": data.forces, "points": data.points, "normals": data.normals, "separations": data.separations,
           "counts": data.counts.reshape(-1)}
    check_rigid_against_reference(data.required_counts.reshape(-1), data.start_indices.reshape(-1), out, case, 2, True)
    assert len(data.clipped_pairs) > 0


def test_launch_contact_data_reads_the_pipelines_newton_layout_buffer():
    # Contacts.to_rigid (the default contact path's issue) builds the Newton-layout buffer from the
    # contact table: every contact's separation must come back as its depth
    from hydro.contact.types import Contacts

    if not hasattr(Contacts, "to_rigid"):
        pytest.skip("Contacts.to_rigid (the Newton-layout buffer) is not in this tree yet")
    from hydro.sim.simulation import Simulation
    from sim_util import box_on_ground

    sim = Simulation(box_on_ground(boxes=2), dt=1 / 60)
    sim.step()
    model = sim.model
    contacts = sim.last_result.contacts
    rigid = contacts.to_rigid(model, sim.state.body_q)
    B = model.body_count
    sensor_map = np.full(B + 1, -1, np.int32)
    sensor_map[0] = 0  # Box1 senses
    filter_map = np.full((1, B + 1), -1, np.int32)
    filter_map[0, B] = 0  # the ground (the world)
    filter_map[0, 1] = 1  # Box2
    n = len(contacts)
    data = rigid_contact_data(rigid, shape_body=model.shape_body, body_q=sim.state.body_q, body_sensor_map=sensor_map,
                              body_filter_map=filter_map, filter_count=2, world_body_idx=B,
                              max_contact_data_count=max(n, 1), points_in_world_space=True)
    body_of = np.asarray(model.shape_body)[np.c_[contacts.shape_a, contacts.shape_b]]
    on_ground = (body_of == -1).any(axis=1) & (body_of == 0).any(axis=1)
    assert data.required_counts[0, 0] == on_ground.sum()
    got = np.sort(data.separations[0, 0, : data.counts[0, 0]])
    np.testing.assert_allclose(got, np.sort(contacts.depth[on_ground]), rtol=0, atol=1e-6)
