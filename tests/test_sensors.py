"""Isaac Lab–style ContactSensor: names, shapes, histories, timers, filters, NaN rules, latch.

Most tests feed hand-made contact frames through the interface the simulation drives sensors
with (``sim_util.FakeSim.step`` → ``on_step``), so every number is known; the stack test runs the
real solver.
"""


import numpy as np
import pytest

from hydro.geometry import Box
from hydro.scene.model import ModelBuilder
from hydro.sim.sensors import ContactSensor, ContactSensorCfg
from sim_util import fake_sim, frame, ground_push, robot_scene, shape

DT = 0.01


def sensor_on(model, **cfg):
    sim = fake_sim(model, DT)
    return sim, sim.add_sensor(ContactSensorCfg(**cfg))


def test_names_and_shapes_follow_isaac_lab():
    model = robot_scene()
    _, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*", filter_prim_paths_expr=["/World/Ground"],
                     history_length=4, track_air_time=True, track_contact_points=True, many_to_many_filters=True)
    d = s.data
    assert s.num_instances == 2 and s.num_bodies == 2 and s.body_names == ["Foot", "Hand"]
    assert d.net_forces_w.shape == (2, 2, 3) and d.net_normal_forces_w_history.shape == (2, 4, 2, 3)
    assert d.force_matrix_w.shape == (2, 2, 1, 3) and d.force_matrix_w_history.shape == (2, 4, 2, 1, 3)
    assert d.contact_pos_w.shape == (2, 2, 1, 3) and np.all(np.isnan(d.contact_pos_w))
    assert d.current_air_time.shape == (2, 2) and d.contact_latch.dtype == bool
    assert s.find_bodies("H.*") == ([1], ["Hand"])
    assert s.find_bodies(["Hand", "Foot"], preserve_order=True) == ([1, 0], ["Hand", "Foot"])
    with pytest.raises(ValueError, match="no sensor body name matches"):
        s.find_bodies("Arm")


def test_optional_buffers_are_none_unless_asked_for():
    model = robot_scene()
    _, plain = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object")
    d = plain.data
    assert d.force_matrix_w is None and d.contact_pos_w is None and d.current_air_time is None
    assert d.net_friction_forces_w is None and d.friction_forces_w is None and d.net_friction_forces_w_history is None
    assert d.pose_w is None and d.pos_w is None and d.quat_w is None  # track_pose is off
    assert d.net_forces_w_history.shape == (2, 1, 1, 3)  # H = max(history_length, 1)
    _, filtered = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"])
    f = filtered.data
    assert f.force_matrix_w is not None and f.normal_force_matrix_w is not None and f.contact_pos_w is None
    assert f.friction_force_matrix_w is None and f.friction_force_matrix_w_history is None
    _, both = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"],
                        track_friction_forces=True)
    b = both.data
    assert b.friction_force_matrix_w.shape == (2, 1, 1, 3) and b.net_friction_forces_w_history.shape == (2, 1, 1, 3)
    assert b.friction_forces_w is b.net_friction_forces_w  # Isaac Lab's compatibility alias
    with pytest.raises(RuntimeError, match="track_air_time"):
        plain.compute_first_contact(DT)


def test_total_force_includes_friction_even_when_friction_is_not_tracked():
    # as on Newton: net_forces_w and force_matrix_w are normal + friction whatever track_friction_forces says
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"])
    sim.step([frame(model, [ground_push(model, 0, "Object", 10.0, friction=(2.0, -1.0, 0.0))])])
    np.testing.assert_array_equal(s.data.net_normal_forces_w[0, 0], [0, 0, 10])
    np.testing.assert_array_equal(s.data.net_forces_w[0, 0], [2, -1, 10])
    np.testing.assert_array_equal(s.data.force_matrix_w[0, 0, 0], [2, -1, 10])
    np.testing.assert_array_equal(s.data.normal_force_matrix_w[0, 0, 0], [0, 0, 10])
    assert s.data.net_friction_forces_w is None


def test_reading_the_pose_raises_not_implemented_as_on_newton():
    cfg = ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Object", track_pose=True)
    _, s = sensor_on(robot_scene(1), **vars(cfg))
    for name in ("pose_w", "pos_w", "quat_w"):
        with pytest.raises(NotImplementedError, match=f"track_pose=True has no {name}"):
            getattr(s.data, name)
    assert s.data.net_forces_w.shape == (1, 1, 3)  # everything else works


def test_every_isaac_lab_field_is_accepted_and_checked():
    cfg = ContactSensorCfg(prim_path="/World/A", track_friction_forces=True, max_contact_data_count_per_prim=8,
                           track_pose=False, track_contact_points=True, filter_prim_paths_expr=["/World/B"])
    assert cfg.max_contact_data_count_per_prim == 8 and cfg.track_friction_forces
    assert ContactSensorCfg(prim_path="/World/A").max_contact_data_count_per_prim == 4  # Isaac Lab's default
    with pytest.raises(ValueError, match="track_friction_forces must be True or False"):
        ContactSensorCfg(prim_path="/World/A", track_friction_forces=1)
    with pytest.raises(ValueError, match="track_contact_points needs a positive max_contact_data_count_per_prim"):
        ContactSensorCfg(prim_path="/World/A", track_contact_points=True, max_contact_data_count_per_prim=0)
    with pytest.raises(ValueError, match="max_contact_data_count_per_prim must be an integer"):
        ContactSensorCfg(prim_path="/World/A", max_contact_data_count_per_prim=-1)
    # filtered contact points need filters; fields set after construction are checked when the sensor is made
    with pytest.raises(ValueError, match="track_contact_points needs filter columns"):
        sensor_on(robot_scene(1), prim_path="{ENV_REGEX_NS}/Object", track_contact_points=True)
    late = ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Object")
    late.history_length = -2
    with pytest.raises(ValueError, match="history_length"):
        fake_sim(robot_scene(1)).add_sensor(late)


def test_total_force_includes_friction_and_each_side_gets_its_sign():
    model = robot_scene(1)
    sim, foot = sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/Foot", filter_prim_paths_expr=["/World/Ground"],
                          track_friction_forces=True)
    ground = sim.add_sensor(ContactSensorCfg(prim_path="/World/Ground"))
    sim.step([frame(model, [ground_push(model, 0, "Robot/Foot", 10.0, friction=(2.0, -1.0, 0.0))])])
    np.testing.assert_array_equal(foot.data.net_normal_forces_w[0, 0], [0, 0, 10])
    np.testing.assert_array_equal(foot.data.net_friction_forces_w[0, 0], [2, -1, 0])
    np.testing.assert_array_equal(foot.data.net_forces_w[0, 0], [2, -1, 10])
    np.testing.assert_array_equal(foot.data.force_matrix_w[0, 0, 0], [2, -1, 10])
    np.testing.assert_array_equal(foot.data.friction_force_matrix_w[0, 0, 0], [2, -1, 0])
    # the ground is shape A of the contact: it feels the opposite force
    np.testing.assert_array_equal(ground.data.net_forces_w[0, 0], [-2, 1, -10])


def test_histories_roll_newest_first_even_when_nobody_reads():
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", history_length=3)
    for k in range(1, 6):
        sim.step([frame(model, [ground_push(model, 0, "Object", float(k))])])
    h = s.data.net_normal_forces_w_history[0, :, 0, 2]
    np.testing.assert_array_equal(h, [5.0, 4.0, 3.0])
    np.testing.assert_array_equal(s.data.net_forces_w_history[0, 0], s.data.net_forces_w[0])


def test_air_and_contact_times_and_first_transitions():
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", track_air_time=True, force_threshold=1.0)
    pattern = [0, 0, 1, 1, 1, 0, 0, 1]
    # expected, in steps: (current air, current contact, last air, last contact, first contact, first air)
    expect = [(1, 0, 0, 0, False, True), (2, 0, 0, 0, False, False), (0, 1, 3, 0, True, False),
              (0, 2, 3, 0, False, False), (0, 3, 3, 0, False, False), (1, 0, 3, 4, False, True),
              (2, 0, 3, 4, False, False), (0, 1, 3, 4, True, False)]
    for on, (air, con, last_air, last_con, first_c, first_a) in zip(pattern, expect):
        # 0.5 N is below the threshold: not in contact
        sim.step([frame(model, [ground_push(model, 0, "Object", 5.0 if on else 0.5)])])
        d = s.data
        assert d.current_air_time[0, 0] == air * DT and d.current_contact_time[0, 0] == con * DT
        assert d.last_air_time[0, 0] == last_air * DT and d.last_contact_time[0, 0] == last_con * DT
        assert s.compute_first_contact(DT)[0, 0] == first_c
        assert s.compute_first_air(DT)[0, 0] == first_a
    # "within the last two steps"
    assert s.compute_first_contact(2 * DT)[0, 0]


def test_update_period_publishes_every_period_and_timers_advance_by_it():
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", update_period=0.03, history_length=2,
                     track_air_time=True)
    seen = []
    for k in range(1, 8):
        sim.step([frame(model, [ground_push(model, 0, "Object", 10.0 * k)])])
        seen.append(s.data.net_forces_w[0, 0, 2])
    # published at the first step, then every 3 steps (0.03 s / 0.01 s)
    assert seen == [10.0, 10.0, 10.0, 40.0, 40.0, 40.0, 70.0]
    np.testing.assert_array_equal(s.data.net_forces_w_history[0, :, 0, 2], [70.0, 40.0])
    # the timer advanced by the 3 steps of each period: 1 + 3 + 3
    assert s.data.current_contact_time[0, 0] == 7 * DT


def test_reset_zeroes_the_envs_and_the_next_read_sees_only_new_contacts():
    model = robot_scene(2)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"],
                     track_contact_points=True, track_air_time=True, history_length=2)
    both = frame(model, [ground_push(model, 0, "Object", 4.0, point=(0, 0, 1)),
                         ground_push(model, 1, "Object", 6.0, point=(1, 0, 0))])
    sim.step([both])
    sim.step([both])
    s.reset([0])
    d = s.data
    assert np.all(d.net_forces_w[0] == 0) and np.all(d.net_forces_w_history[0] == 0)
    assert np.all(d.force_matrix_w[0] == 0) and np.all(np.isnan(d.contact_pos_w[0]))
    assert d.current_contact_time[0, 0] == 0 and not d.contact_latch[0, 0]
    assert d.net_forces_w[1, 0, 2] == 6.0 and d.current_contact_time[1, 0] == 2 * DT
    # the next step: only env 1 touches; env 0 stays clean (no stale force from before the reset)
    sim.step([frame(model, [ground_push(model, 1, "Object", 6.0, point=(1, 0, 0))])])
    assert np.all(s.data.net_forces_w[0] == 0) and np.all(np.isnan(s.data.contact_pos_w[0]))
    assert s.data.current_air_time[0, 0] == DT
    # and a new contact in env 0 is all that env 0 reports
    sim.step([frame(model, [ground_push(model, 0, "Object", 2.0)])])
    assert s.data.net_forces_w[0, 0, 2] == 2.0
    np.testing.assert_array_equal(s.data.net_forces_w_history[0, :, 0, 2], [2.0, 0.0])


def test_contact_position_is_the_force_weighted_centre_of_pressure_or_nan():
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object",
                     filter_prim_paths_expr=["/World/Ground", "{ENV_REGEX_NS}/Robot/.*"], track_contact_points=True)
    # two sub-steps: 1 N at x = 0, then 3 N at x = 1 → centre of pressure x = 0.75 over the step
    f1 = frame(model, [ground_push(model, 0, "Object", 1.0, point=(0, 0, 0))])
    f2 = frame(model, [ground_push(model, 0, "Object", 3.0, point=(1, 0, 0))])
    sim.step([f1, f2])
    np.testing.assert_allclose(s.data.contact_pos_w[0, 0, 0], [0.75, 0, 0], rtol=0, atol=1e-15)
    assert np.all(np.isnan(s.data.contact_pos_w[0, 0, 1]))  # no contact with the robot: NaN
    np.testing.assert_array_equal(s.data.force_matrix_w[0, 0, 1], [0, 0, 0])  # ... and zero force
    assert s.data.net_forces_w[0, 0, 2] == 2.0  # the mean over the step
    sim.step([frame(model, [])])
    assert np.all(np.isnan(s.data.contact_pos_w)) and np.all(s.data.net_forces_w == 0)


def test_many_to_many_filters_and_the_exclude_column():
    model = robot_scene(1)
    # Isaac Lab's filtered sensors are many-to-one: two sensor bodies per env with filters are refused
    with pytest.raises(ValueError, match=r"matches 2 bodies per env \(Foot, Hand\) but filters are configured: "
                                         r"filtered sensors are many-to-one"):
        sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*", filter_prim_paths_expr=["/World/Ground"])
    with pytest.raises(ValueError, match="many-to-one"):
        sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*", exclude_prim_paths_expr=["/World/Ground"])
    sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*")  # without filters: any number of bodies
    # hydro's extension lifts the rule
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*",
                       filter_prim_paths_expr=["/World/Ground", "{ENV_REGEX_NS}/Object"],
                       exclude_prim_paths_expr=["{ENV_REGEX_NS}/Robot/.*"], many_to_many_filters=True)
    foot = shape(model, "/World/envs/env_0/Robot/Foot/Collider")
    hand = shape(model, "/World/envs/env_0/Robot/Hand/Collider")
    obj = shape(model, "/World/envs/env_0/Object/Collider")
    rows = [ground_push(model, 0, "Robot/Foot", 10.0),
            (obj, hand, (0, 3.0, 0), (0, 0, 0)),  # the object pushes the hand along +y
            (foot, hand, (0, 0, 2.0), (0, 0, 0))]  # the foot pushes the hand up (self contact)
    sim.step([frame(model, rows)])
    m = s.data.force_matrix_w[0]
    assert s.filter_names[-1].startswith("all except")
    np.testing.assert_array_equal(m[0], [[0, 0, 10], [0, 0, 0], [0, 0, 10]])  # foot: ground, -, all but robot
    np.testing.assert_array_equal(m[1], [[0, 0, 0], [0, 3, 0], [0, 3, 0]])  # hand: -, object, all but robot
    np.testing.assert_array_equal(s.data.net_forces_w[0, 1], [0, 3, 2])  # the net keeps the self contact
    np.testing.assert_array_equal(s.data.net_forces_w[0, 0], [0, 0, 8])  # foot: ground up, hand reaction down


def test_shape_level_sensing_and_filtering():
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((5, 5, 1)), local_pose=[0, 0, -0.5, 0, 0, 0, 1])
    i = b.add_body("/World/Cart")
    b.add_shape("/World/Cart/WheelL", Box((0.1, 0.1, 0.1)), body=i)
    b.add_shape("/World/Cart/WheelR", Box((0.1, 0.1, 0.1)), body=i)
    model = b.finalize(build_sdfs=False)
    sim, s = sensor_on(model, sensor_shape_prim_expr=["/World/Cart/Wheel.*"], filter_shape_prim_expr=["/World/Ground"])
    assert s.body_names == ["WheelL", "WheelR"]
    g, wl, wr = (model.shape_path.index(p) for p in ("/World/Ground", "/World/Cart/WheelL", "/World/Cart/WheelR"))
    sim.step([frame(model, [(g, wl, (0, 0, 1.0), (0, 0, 0)), (g, wr, (0, 0, 3.0), (0, 0, 0))])])
    np.testing.assert_array_equal(s.data.net_forces_w[0, :, 2], [1.0, 3.0])
    np.testing.assert_array_equal(s.data.force_matrix_w[0, :, 0, 2], [1.0, 3.0])


def test_a_global_collider_is_a_sensor_body_in_every_env():
    model = robot_scene(3)
    sim, s = sensor_on(model, prim_path="/World/Ground")
    sim.step([frame(model, [ground_push(model, 1, "Object", 7.0), ground_push(model, 2, "Robot/Foot", 2.0)])])
    np.testing.assert_array_equal(s.data.net_forces_w[:, 0, 2], [0.0, -7.0, -2.0])


def test_every_env_must_match_the_same_bodies():
    b = ModelBuilder()
    for env, names in ((0, ["A", "B"]), (1, ["A"])):
        for n in names:
            i = b.add_body(f"/World/envs/env_{env}/{n}")
            b.add_shape(f"/World/envs/env_{env}/{n}/C", Box((0.1, 0.1, 0.1)), body=i)
    model = b.finalize(build_sdfs=False)
    with pytest.raises(ValueError, match="every env must have the same sensor bodies"):
        sensor_on(model, prim_path="{ENV_REGEX_NS}/.*")
    with pytest.raises(ValueError, match="matches no body"):
        sensor_on(model, prim_path="{ENV_REGEX_NS}/Nothing")
    with pytest.raises(ValueError, match="prim_path"):
        ContactSensorCfg(prim_path="")
    with pytest.raises(ValueError, match="history_length"):
        ContactSensorCfg(prim_path="/World/A", history_length=-1)


def test_the_latch_catches_a_contact_shorter_than_a_physics_step():
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", track_air_time=True, force_threshold=1.0)
    touch = frame(model, [ground_push(model, 0, "Object", 2.0, friction=(1.5, 0, 0))])
    empty = frame(model, [])
    sim.step([empty, touch, empty, empty])  # one sub-step in four
    d = s.data
    assert d.net_normal_forces_w[0, 0, 2] == 0.5  # the mean over the step: below the threshold
    assert d.current_contact_time[0, 0] == 0.0
    assert d.contact_latch[0, 0] and d.peak_force_latch[0, 0] == pytest.approx(2.5)
    sim.step([empty] * 4)
    assert s.data.contact_latch[0, 0]  # held until the control step clears it
    s.clear_latch()
    assert not s.data.contact_latch[0, 0] and s.data.peak_force_latch[0, 0] == 0.0


def test_first_contact_is_exact_after_sixty_seconds():
    dt = 1.0 / 200.0
    model = robot_scene(1)
    sim = fake_sim(model, dt)
    s = ContactSensor(ContactSensorCfg("{ENV_REGEX_NS}/Object", track_air_time=True), sim)
    sim.sensors.append(s)
    on = frame(model, [ground_push(model, 0, "Object", 5.0)])
    off = frame(model, [])
    period = 37  # steps in contact, then 37 in the air, so transitions drift across the clock
    steps = int(round(61.0 / dt))
    starts = 0
    for k in range(steps):
        touching = (k // period) % 2 == 1
        sim.step([on if touching else off])
        first = s.compute_first_contact(dt)[0, 0]
        started = touching and k % period == 0
        assert first == started, f"step {k} (t = {(k + 1) * dt:.3f} s)"
        assert s.compute_first_air(dt)[0, 0] == ((not touching) and k % period == 0)
        starts += started
        if touching:
            assert s.data.current_contact_time[0, 0] == (k % period + 1) * dt
    assert (steps * dt) > 60.0 and starts > 100
    # what this guards against: at 60 s a float32 clock's step (t + dt) − t is off by far more
    # than compute_first_contact's tolerance, so "0 < contact time <= dt" would misfire
    t = np.float32(60.0)
    assert abs(float(np.float32(t + np.float32(dt)) - t) - dt) > 1e-6


def test_sensor_modules_never_import_the_solver():
    # they receive each step through hydro.sim.sensing and resolve paths through hydro.scene.paths
    import ast
    import hydro.sim.embodichain
    import hydro.sim.sensors

    for mod in (hydro.sim.sensors, hydro.sim.embodichain):
        tree = ast.parse(open(mod.__file__, encoding="utf-8").read())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "simulation" not in imported and "hydro.sim.simulation" not in imported, mod.__name__
        text = open(mod.__file__, encoding="utf-8").read()
        for reach_back in ("self.sim", "last_frame", "step_count"):
            assert reach_back not in text, (mod.__name__, reach_back)


def test_debug_vis_is_stored_for_the_viewer_and_does_not_change_the_data():
    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*", debug_vis=True)
    sim.step([frame(model, [ground_push(model, 0, "Robot/Hand", 3.0)])])
    before = s.data.net_forces_w.copy()
    marks = s.debug_markers()
    assert s.debug_vis and marks["in_contact"].tolist() == [[False, True]]
    np.testing.assert_array_equal(marks["force"], before)
    assert marks["position"].shape == (1, 2, 3)
    s.set_debug_vis(False)
    np.testing.assert_array_equal(s.data.net_forces_w, before)


def test_a_stack_filtered_matrix_sums_to_the_net_force_and_the_sides_are_opposite():
    from hydro.sim.simulation import Simulation
    from sim_util import box_on_ground

    sim = Simulation(box_on_ground(boxes=2), dt=1 / 60)
    lower = sim.add_sensor(ContactSensorCfg("/World/Box1", filter_prim_paths_expr=["/World/Ground", "/World/Box2"],
                                            track_contact_points=True, max_contact_data_count_per_prim=100000))
    upper = sim.add_sensor(ContactSensorCfg("/World/Box2", filter_prim_paths_expr=["/World/Box1"]))
    both = sim.add_sensor(ContactSensorCfg("/World/Box.*", filter_prim_paths_expr=["/World/Box.*", "/World/Ground"],
                                           many_to_many_filters=True))
    sim.update(step=20)
    lo, up = lower.data, upper.data
    weight = 9.81
    np.testing.assert_allclose(lo.force_matrix_w[0, 0].sum(axis=0), lo.net_forces_w[0, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(up.force_matrix_w[0, 0, 0], -lo.force_matrix_w[0, 0, 1], rtol=0, atol=1e-9)
    assert up.net_forces_w[0, 0, 2] == pytest.approx(weight, rel=0.01)
    assert lo.force_matrix_w[0, 0, 0, 2] == pytest.approx(2 * weight, rel=0.01)
    # the interface's centre of pressure lies on the top face of the lower box
    assert lo.contact_pos_w[0, 0, 1, 2] == pytest.approx(sim.state.body_q[0, 2] + 0.05, abs=2e-3)
    # many-to-many: both boxes, each against the boxes and the ground
    m = both.data.force_matrix_w[0]
    np.testing.assert_allclose(m[:, 0] + m[:, 1], both.data.net_forces_w[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(m[1, 0], up.net_forces_w[0, 0], rtol=0, atol=1e-9)


def test_buffers_are_the_same_objects_every_step_and_torch_views_share_their_memory():
    torch = pytest.importorskip("torch")
    model = robot_scene(2)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"],
                       history_length=3, track_air_time=True, track_friction_forces=True, track_contact_points=True)
    d = s.data
    buffers = {name: id(b) for name, b in d.buffers().items()}
    tensors = {name: b.torch for name, b in d.buffers().items()}
    assert set(buffers) == {"net_normal_forces_w", "net_friction_forces_w", "net_forces_w",
                            "net_normal_forces_w_history", "net_friction_forces_w_history", "net_forces_w_history",
                            "normal_force_matrix_w", "friction_force_matrix_w", "force_matrix_w",
                            "normal_force_matrix_w_history", "friction_force_matrix_w_history",
                            "force_matrix_w_history", "contact_pos_w", "current_air_time", "last_air_time",
                            "current_contact_time", "last_contact_time", "contact_latch", "peak_force_latch"}
    for k in range(1, 4):
        sim.step([frame(model, [ground_push(model, 1, "Object", 5.0 * k, friction=(1.0, 0, 0), point=(0, 0, 0.5))])])
        assert s.data is d and {n: id(b) for n, b in d.buffers().items()} == buffers
        for name, b in d.buffers().items():
            t = b.torch
            assert t is tensors[name] and t.device.type == "cpu"
            assert t.data_ptr() == b.ctypes.data  # zero-copy: the tensor is the buffer
            np.testing.assert_array_equal(t.numpy(), b)
    # the tensors read the newest sample without being taken again
    assert tensors["net_normal_forces_w"][1, 0, 2].item() == 15.0 and tensors["net_forces_w"].shape == (2, 1, 3)
    assert tensors["net_normal_forces_w_history"][1, :, 0, 2].tolist() == [15.0, 10.0, 5.0]
    assert tensors["force_matrix_w"].dtype == torch.float32 and tensors["contact_latch"].dtype == torch.bool
    assert torch.isnan(tensors["contact_pos_w"][0]).all() and tensors["contact_pos_w"][1, 0, 0, 2].item() == 0.5
    assert tensors["current_contact_time"][1, 0].item() == pytest.approx(3 * DT, rel=1e-7)
    # plain NumPy reads: arithmetic gives plain arrays; first-contact flags come as arrays with .torch too
    assert type(d.net_forces_w + 1.0) is np.ndarray and type(d.net_forces_w.numpy()) is np.ndarray
    first = s.compute_first_contact(3 * DT)
    assert first.torch.dtype == torch.bool and first.tolist() == [[False], [True]]


def test_without_torch_the_torch_view_says_which_extra_to_install(monkeypatch):
    import sys

    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    with pytest.raises(ImportError, match=r"hydro\[torch\]"):
        s.data.net_forces_w.torch
    sim.step([frame(model, [ground_push(model, 0, "Object", 3.0)])])
    assert s.data.net_forces_w[0, 0, 2] == 3.0  # the NumPy side needs no torch


def test_the_cuda_torch_view_aliases_a_device_mirror_synced_after_each_update(monkeypatch):
    # no GPU here: a stand-in for numba.cuda.to_device and torch.as_tensor records what .torch does
    import types

    from hydro.sim import arrays

    mirrors = []

    class Mirror:
        def __init__(self, host):
            self.values = host.copy()
            mirrors.append(self)

        def copy_to_device(self, host):
            self.values[...] = host

    fake_torch = types.SimpleNamespace(as_tensor=lambda obj, device: ("tensor", obj, device))
    monkeypatch.setattr(arrays, "import_torch", lambda: fake_torch)
    import numba.cuda

    monkeypatch.setattr(numba.cuda, "to_device", Mirror)
    model = robot_scene(1)
    sim = fake_sim(model, DT)
    sim.device = "cuda:0"
    s = sim.add_sensor(ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Object"))
    kind, mirror, device = s.data.net_forces_w.torch
    assert kind == "tensor" and device == "cuda:0" and mirrors == [mirror]
    assert s.data.net_forces_w.torch[1] is mirror  # taken once
    sim.step([frame(model, [ground_push(model, 0, "Object", 4.0)])])
    assert mirror.values[0, 0, 2] == 4.0  # copied in after the update
    with pytest.raises(ValueError, match="take .torch of the whole sensor buffer"):
        s.data.net_forces_w[0].torch


def test_contact_points_past_the_capacity_still_count_and_nothing_warns():
    # issue 29: the default capacity (4) warned on every hydroelastic patch; hydro averages every contact
    import warnings

    model = robot_scene(1)
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"],
                       track_contact_points=True, max_contact_data_count_per_prim=2)
    rows = [ground_push(model, 0, "Object", 1.0, point=(0, 0, 0)),
            ground_push(model, 0, "Object", 3.0, point=(1, 0, 0)),
            ground_push(model, 0, "Object", 100.0, point=(5, 0, 0))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.step([frame(model, rows)])
    # all three contacts, force-weighted: (1·0 + 3·1 + 100·5) / 104
    np.testing.assert_allclose(s.data.contact_pos_w[0, 0, 0], [503 / 104, 0, 0], rtol=1e-6)
    assert s.data.force_matrix_w[0, 0, 0, 2] == 104.0 and s.required_contact_data_count == 3


def test_a_resting_hydroelastic_box_with_the_default_capacity_does_not_warn():
    import warnings

    from hydro.sim.simulation import Simulation
    from sim_util import box_on_ground

    sim = Simulation(box_on_ground(), dt=1 / 60)
    s = sim.add_sensor(ContactSensorCfg("/World/Box", filter_prim_paths_expr=["/World/Ground"],
                                        track_contact_points=True))
    assert s.cfg.max_contact_data_count_per_prim == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.update(step=3)
    assert s.required_contact_data_count > 4  # a patch: more contacts than Isaac Lab's default capacity
    assert s.data.contact_pos_w[0, 0, 0, 2] == pytest.approx(0.0, abs=2e-3)  # on the ground's top face


def test_the_isaac_lab_snippet_runs_with_only_its_imports_changed():
    torch = pytest.importorskip("torch")  # the snippet reads .torch views (CI installs torch's CPU build)
    from sim_util import foot_on_object

    # ---- the document's snippet; only its imports differ --------------------------------------
    from hydro.sim.interactive_scene import InteractiveSceneCfg  # isaaclab.scene
    from hydro.sim.sensors import ContactSensorCfg  # isaaclab.sensors

    class MySceneCfg(InteractiveSceneCfg):
        left_foot_contact = ContactSensorCfg(
            prim_path="{ENV_REGEX_NS}/Robot/LF_FOOT",
            update_period=0.0,
            history_length=6,
            filter_prim_paths_expr=["{ENV_REGEX_NS}/Object"],
            track_air_time=True,
        )

    # ---- hydro's side: the scene's geometry (a Model here, or a USD path) and the stepping ----
    from hydro.sim.interactive_scene import InteractiveScene

    scene = InteractiveScene(MySceneCfg(num_envs=2, env_spacing=2.0), foot_on_object(num_envs=2), dt=1 / 60)
    scene.sim.update(step=40)
    scene.update(scene.physics_dt)

    # ---- the snippet again ---------------------------------------------------------------------
    contact = scene["left_foot_contact"]
    net_normal_force = contact.data.net_normal_forces_w.torch
    object_normal_force = contact.data.normal_force_matrix_w.torch

    # ---- what it reads: the resting foot's weight, from its only partner ------------------------
    weight = 1.0 * 9.81
    assert tuple(net_normal_force.shape) == (2, 1, 3) and tuple(object_normal_force.shape) == (2, 1, 1, 3)
    for e in range(2):
        assert net_normal_force[e, 0, 2].item() == pytest.approx(weight, rel=0.005)
        assert object_normal_force[e, 0, 0, 2].item() == pytest.approx(weight, rel=0.005)
        assert abs(net_normal_force[e, 0, :2]).max().item() < 1e-3 * weight
    history = contact.data.net_normal_forces_w_history.torch
    assert tuple(history.shape) == (2, 6, 1, 3)
    assert history[:, :, 0, 2].sub(weight).abs().max().item() < 0.005 * weight  # resting for the last 6 steps too
    assert contact.data.current_contact_time.torch[0, 0].item() == pytest.approx(40 / 60, rel=1e-7)  # float32
    assert net_normal_force.dtype == torch.float32  # Isaac Lab's dtype
    assert contact.data.current_air_time.torch.abs().max().item() == 0.0
    # the same tensors follow the next step
    before = net_normal_force.clone()
    scene.sim.step()
    assert contact.data.net_normal_forces_w.torch is net_normal_force
    assert contact.data.current_contact_time[0, 0] == pytest.approx(41 / 60, rel=1e-7)
    assert (net_normal_force - before).abs().max().item() < 0.005 * weight


def test_buffers_are_float32_as_in_isaac_lab_and_float64_on_request():
    torch = pytest.importorskip("torch")
    model = robot_scene(1)
    _, s32 = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"],
                       track_air_time=True, track_friction_forces=True)
    sim, s64 = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"],
                         track_air_time=True, track_friction_forces=True, buffer_dtype="float64")
    for name, b in s32.data.buffers().items():
        want = torch.bool if name == "contact_latch" else torch.float32
        assert b.torch.dtype == want, name
    for name, b in s64.data.buffers().items():
        want = torch.bool if name == "contact_latch" else torch.float64
        assert b.torch.dtype == want, name
    sim.step([frame(model, [ground_push(model, 0, "Object", 1.0 / 3.0)])])
    assert s64.data.net_forces_w[0, 0, 2] == 1.0 / 3.0  # the float64 sum, kept exactly
    with pytest.raises(ValueError, match="buffer_dtype must be 'float32'"):
        ContactSensorCfg(prim_path="/World/A", buffer_dtype="int32")
