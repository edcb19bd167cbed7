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
                     history_length=4, track_air_time=True, track_contact_points=True)
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
    assert d.net_forces_w_history.shape == (2, 1, 1, 3)  # H = max(history_length, 1)
    _, filtered = sensor_on(model, prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground"])
    assert filtered.data.force_matrix_w is not None and filtered.data.contact_pos_w is None
    with pytest.raises(RuntimeError, match="track_air_time"):
        plain.compute_first_contact(DT)


def test_total_force_includes_friction_and_each_side_gets_its_sign():
    model = robot_scene(1)
    sim, foot = sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/Foot", filter_prim_paths_expr=["/World/Ground"])
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
    sim, s = sensor_on(model, prim_path="{ENV_REGEX_NS}/Robot/.*",
                     filter_prim_paths_expr=["/World/Ground", "{ENV_REGEX_NS}/Object"],
                     exclude_prim_paths_expr=["{ENV_REGEX_NS}/Robot/.*"])
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
                                            track_contact_points=True))
    upper = sim.add_sensor(ContactSensorCfg("/World/Box2", filter_prim_paths_expr=["/World/Box1"]))
    both = sim.add_sensor(ContactSensorCfg("/World/Box.*", filter_prim_paths_expr=["/World/Box.*", "/World/Ground"]))
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
