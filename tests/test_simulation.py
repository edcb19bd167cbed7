"""The penalty solver against physics: resting load, incline stick/slide, free fall, stability."""

import math

import numpy as np
import pytest

from hydro.contact.config import HydroelasticConfig
from hydro.sim.sensors import ContactSensorCfg
from hydro.sim.simulation import Simulation, critical_step
from hydro.transforms import quat_from_axis_angle, quat_rotate
from sim_util import box_on_ground

G = 9.81


@pytest.mark.parametrize("reduce", [True, False])
def test_a_resting_box_reads_m_g_within_one_percent(reduce):
    # dropped from 5 mm so it has to settle, not just start at the answer
    model = box_on_ground(height=0.005)
    sim = Simulation(model, dt=1 / 60, config=HydroelasticConfig(reduce_contacts=reduce))
    box = sim.add_sensor(ContactSensorCfg("/World/Box", filter_prim_paths_expr=["/World/Ground"]))
    ground = sim.add_sensor(ContactSensorCfg("/World/Ground"))
    sim.update(step=60)
    weight = model.body_mass[0] * G
    n = box.data.net_normal_forces_w[0, 0]
    assert n[2] == pytest.approx(weight, rel=0.01)
    assert np.hypot(n[0], n[1]) < 1e-3 * weight
    # the ground feels the opposite force; the filter covering every partner sums to the net force
    np.testing.assert_allclose(ground.data.net_forces_w[0, 0], -box.data.net_forces_w[0, 0], rtol=0, atol=1e-9 * weight)
    np.testing.assert_allclose(box.data.force_matrix_w[0, 0, 0], box.data.net_forces_w[0, 0], rtol=0, atol=1e-12)
    # speculative contacts are never counted: every contact in the frame is penetrating
    assert len(sim.last_frame) > 0 and np.all(sim.last_frame.depth < 0)
    assert abs(sim.state.body_qd[0, 2]) < 1e-4


def _slope_run(theta, mu, steps):
    model = box_on_ground(tilt=theta, mu=mu, ground=(3.0, 0.5, 0.2))
    sim = Simulation(model, dt=1 / 60)
    sensor = sim.add_sensor(ContactSensorCfg("/World/Box", track_friction_forces=True))
    q = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), theta)
    down_slope = quat_rotate(q, np.array([1.0, 0.0, 0.0]))
    p0 = sim.state.body_q[0, :3].copy()
    t, s = [], []
    for _ in range(steps):
        sim.step()
        t.append(sim.time)
        s.append((sim.state.body_q[0, :3] - p0) @ down_slope)
    return sim, sensor, np.array(t), np.array(s), down_slope


def test_a_box_on_an_incline_sticks_below_the_friction_angle():
    theta, mu = math.radians(20.0), 0.5  # tan θ = 0.36 < μ
    sim, sensor, t, s, down = _slope_run(theta, mu, 60)
    half = len(t) // 2
    # after settling (the soft contact lets the box lean ~1°), it does not creep
    assert abs(s[-1] - s[half]) < 1e-6
    # friction holds the weight's component along the slope, and is reported in the total
    m = sim.model.body_mass[0]
    f_t = sensor.data.net_friction_forces_w[0, 0]
    assert f_t @ -down == pytest.approx(m * G * math.sin(theta), rel=0.01)
    np.testing.assert_allclose(sensor.data.net_forces_w[0, 0], [0.0, 0.0, m * G], rtol=0, atol=0.01 * m * G)


def test_a_box_on_an_incline_slides_above_it_with_g_sin_minus_mu_cos():
    theta, mu = math.radians(30.0), 0.3  # tan θ = 0.58 > μ
    sim, sensor, t, s, down = _slope_run(theta, mu, 45)
    k = len(t) // 3
    fit = np.polyfit(t[k:], s[k:], 2)
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    assert 2.0 * fit[0] == pytest.approx(expected, rel=0.02)
    # sliding friction is μ times the normal force (Σ of the contacts' magnitudes, which differs
    # from the norm of the summed vector by the spread of the contact normals), against the motion
    n = np.linalg.norm(sensor.data.net_normal_forces_w[0, 0])
    n_sum = np.linalg.norm(sim.last_frame.normal_force, axis=1).sum()
    assert n <= n_sum * (1 + 1e-12) and n_sum < 1.01 * n  # equal when every contact acts along the pair normal
    f = sensor.data.net_friction_forces_w[0, 0]
    assert np.linalg.norm(f) == pytest.approx(mu * n_sum, rel=1e-3)
    assert f @ down < 0


def test_a_dropped_box_first_touches_at_sqrt_2h_over_g_within_one_step():
    h, dt = 0.1, 1 / 120
    sim = Simulation(box_on_ground(height=h), dt=dt)
    sensor = sim.add_sensor(ContactSensorCfg("/World/Box", track_air_time=True, force_threshold=0.0))
    touch = None
    for _ in range(30):
        sim.step()
        if sensor.compute_first_contact(dt)[0, 0]:
            touch = sim.time
            break
    assert touch is not None
    assert abs(touch - math.sqrt(2 * h / G)) <= dt
    # the air time that just ended is the whole fall
    assert sensor.data.last_air_time[0, 0] == pytest.approx(touch, abs=1e-12)


def test_runs_repeat_bit_for_bit():
    def run():
        sim = Simulation(box_on_ground(height=0.002), dt=1 / 60)
        s = sim.add_sensor(ContactSensorCfg("/World/Box"))
        sim.update(step=8)
        return sim.state.body_q.copy(), s.data.net_forces_w.copy()

    (q1, f1), (q2, f2) = run(), run()
    assert np.array_equal(q1, q2) and np.array_equal(f1, f2)


def test_auto_substeps_keep_the_step_stable_and_explicit_ones_warn():
    model = box_on_ground()
    assert Simulation(model, dt=1 / 60).substeps == 1  # the implicit solver needs none
    sim = Simulation(model, dt=1 / 60, solver="explicit")
    rep = sim.stability
    assert rep.auto and rep.substeps == sim.substeps >= 2
    # C = k_eff·A = 1e4 N/m on a 1 kg box: ω = 100 rad/s, bounded by sqrt(4·C/m) = 200
    assert rep.omega_bound == pytest.approx(200.0)
    assert sim.substep_dt * rep.omega_bound <= 0.5 * critical_step(1.0) + 1e-12
    coarse = Simulation(model, dt=1 / 60, substeps=1, solver="explicit")
    with pytest.warns(RuntimeWarning, match="substeps >= "):
        coarse.step()


def test_critical_step_matches_the_damped_oscillator():
    for zeta in (0.0, 0.3, 1.0, 2.0):
        a = critical_step(zeta)
        for scale, stable in ((0.99, True), (1.01, False)):
            x = a * scale  # h·ω
            # semi-implicit Euler on (x, y = v/ω): y' = y − x·x_ − 2ζ·x·y ; x_' = x_ + x·y'
            step = np.array([[1 - x * x, x * (1 - 2 * zeta * x)], [-x, 1 - 2 * zeta * x]])
            radius = max(abs(np.linalg.eigvals(step)))
            assert (radius < 1.0) == stable, (zeta, scale, radius)


def test_kinematic_keyframes_move_bodies_and_report_their_velocity():
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder

    b = ModelBuilder()
    k = b.add_body("/World/Pusher", kinematic=True)
    b.add_shape("/World/Pusher/Collider", Box((0.1, 0.1, 0.1)), body=k)
    sim = Simulation(b.finalize(build_sdfs=False), dt=0.1)
    q90 = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), math.pi / 2)
    sim.set_kinematic_script("/World/Pusher", [(0.0, [0, 0, 0, 0, 0, 0, 1]), (1.0, np.r_[1.0, 0, 0, q90])])
    sim.update(step=5)
    np.testing.assert_allclose(sim.state.body_q[0, :3], [0.5, 0, 0], atol=1e-12)
    half = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), math.pi / 4)
    np.testing.assert_allclose(sim.state.body_q[0, 3:], half, atol=1e-12)
    np.testing.assert_allclose(sim.state.body_qd[0], [1, 0, 0, 0, 0, math.pi / 2], atol=1e-9)
    sim.update(step=10)  # held after the last key
    np.testing.assert_allclose(sim.state.body_q[0, :3], [1, 0, 0], atol=1e-12)
    with pytest.raises(ValueError, match="already follows"):
        sim.set_kinematic_script(0, lambda t: [0, 0, 0, 0, 0, 0, 1])


def test_callbacks_drive_kinematic_bodies_and_dynamic_ones_are_refused():
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder

    b = ModelBuilder()
    k = b.add_body("/World/Pusher", kinematic=True)
    d = b.add_body("/World/Free")
    b.add_shape("/World/Pusher/C", Box((0.1, 0.1, 0.1)), body=k)
    b.add_shape("/World/Free/C", Box((0.1, 0.1, 0.1)), body=d, local_pose=[5, 0, 0, 0, 0, 0, 1])
    sim = Simulation(b.finalize(build_sdfs=False), dt=0.01, gravity=(0, 0, -1.0))
    sim.set_kinematic_script("/World/Pusher", lambda t: [0.0, 0.0, 2.0 * t, 0, 0, 0, 1])
    with pytest.raises(ValueError, match="not kinematic"):
        sim.set_kinematic_script("/World/Free", lambda t: [0, 0, 0, 0, 0, 0, 1])
    sim.update(step=100)
    assert sim.time == 1.0
    np.testing.assert_allclose(sim.state.body_q[0, 2], 2.0, atol=1e-12)
    np.testing.assert_allclose(sim.state.body_qd[0, 2], 2.0, atol=1e-9)
    # free fall under the given gravity, semi-implicit Euler over n sub-steps of h: z = −g h² n(n+1)/2
    # (the boxes may touch through point contacts, so "auto" picks several sub-steps per step)
    n, h = 100 * sim.substeps, sim.substep_dt
    assert sim.state.body_q[1, 2] == pytest.approx(-1.0 * h**2 * n * (n + 1) / 2, rel=1e-9)


def test_reset_puts_envs_back_and_the_clock_counts_integers():
    sim = Simulation(box_on_ground(height=0.01, envs=True, num_envs=2), dt=1 / 60)
    z0 = sim.state.body_q[:, 2].copy()
    sim.update(step=3)
    assert sim.step_count == 3 and sim.time == 3 * (1 / 60)
    moved = sim.state.body_q[:, 2].copy()
    sim.reset([1])
    assert sim.state.body_q[0, 2] == moved[0] and sim.state.body_q[1, 2] == z0[1]
    sim.reset()
    assert sim.step_count == 0 and np.array_equal(sim.state.body_q[:, 2], z0)


def test_sensors_are_handed_every_step_and_reset_with_the_envs():
    from hydro.sim.sensing import ContactFrame

    class Recorder:
        """A sensor that keeps what the simulation hands it (hydro.sim.sensing)."""

        def __init__(self):
            self.steps, self.resets = [], []

        def on_step(self, frames, state, step, dt):
            self.steps.append((frames, state, step, dt, state.body_q.copy()))

        def reset(self, env_ids=None):
            self.resets.append(np.asarray(env_ids).tolist())

    class RecorderCfg:
        def _make_sensor(self, sim):
            return Recorder()

    sim = Simulation(box_on_ground(envs=True, num_envs=2, ground=(5.0, 5.0, 0.2)), dt=1 / 60)
    rec = sim.add_sensor(RecorderCfg())
    sim.update(step=2)
    assert [s[2] for s in rec.steps] == [1, 2] and all(s[3] == sim.dt for s in rec.steps)
    frames, state, _, _, body_q = rec.steps[-1]
    assert len(frames) == sim.substeps and all(isinstance(f, ContactFrame) for f in frames)
    assert frames[-1] is sim.last_frame and len(frames[-1]) > 0
    # the state after the step, not before it
    assert state is sim.state and np.array_equal(body_q, sim.state.body_q)
    # each box rests on the ground: each sub-step's normal forces carry both boxes' weights
    for f in frames:
        assert f.normal_force[:, 2].sum() == pytest.approx(2 * G * sim.model.body_mass[0], rel=0.05)
    sim.reset([1])
    sim.reset()
    assert rec.resets == [[1], [0, 1]]
    assert sim.state is state and np.array_equal(sim.state.body_q, sim.model.body_q0)  # reset in place
    assert len(sim.last_frame) == 0


def test_gravity_comes_from_the_usd_scene(tmp_path):
    from hydro.scene.usd_io import read_gravity

    import os

    pinch = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenes", "pinch.usda")
    text = open(pinch).read()
    np.testing.assert_allclose(read_gravity(pinch), [0, 0, -9.81])
    p = tmp_path / "moon.usda"
    p.write_text(text.replace("float physics:gravityMagnitude = 9.81", "float physics:gravityMagnitude = 1.62")
                 .replace("vector3f physics:gravityDirection = (0, 0, -1)", "vector3f physics:gravityDirection = (0, 0, 0)"))
    np.testing.assert_allclose(read_gravity(p), [0, 0, -1.62], rtol=1e-6)


@pytest.mark.parametrize("kw, message", [
    ({"dt": 0.0}, "dt must be"), ({"substeps": 0}, "substeps must be"), ({"substeps": "fast"}, "substeps must be"),
    ({"damping_ratio": -1.0}, "damping_ratio"), ({"gravity": (0, 1)}, "gravity must be"),
])
def test_bad_settings_are_refused(kw, message):
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder

    b = ModelBuilder()
    i = b.add_body("/World/B")
    b.add_shape("/World/B/C", Box((0.1, 0.1, 0.1)), body=i)
    with pytest.raises(ValueError, match=message):
        Simulation(b.finalize(build_sdfs=False), **kw)


def test_hydro_simulation_is_exported_lazily():
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys, hydro; light = 'numba' not in sys.modules; "
            "from hydro.sim.simulation import Simulation; print(light, hydro.Simulation is Simulation)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.stdout.split() == ["True", "True"], out.stderr


def test_the_sparse_friction_solve_matches_the_dense_one(monkeypatch):
    # the same systems (every sub-step's friction solve of a settling two-box stack) solved both
    # ways; whole runs are compared only to the first sub-steps, since a roundoff-level
    # difference can flip a discrete choice later (stick or slide, a rim sliver of the patch)
    import copy

    import hydro.sim.friction as friction
    import hydro.sim.simulation as simulation

    calls = []

    def recording(**kwargs):
        calls.append(copy.deepcopy(kwargs))
        return friction.solve_friction(**kwargs)

    monkeypatch.setattr(simulation, "solve_friction", recording)
    sim = Simulation(box_on_ground(boxes=2, tilt=math.radians(10.0), mu=0.5), dt=1 / 60, solver="explicit")
    q0 = []
    for _ in range(6):
        sim.update(step=1)
        q0.append(sim.state.body_q.copy())
    assert len(calls) >= 6
    dense_max = friction.DENSE_FRICTION_MAX
    for kwargs in calls:
        v_dense, v_sparse = kwargs["velocity"].copy(), kwargs["velocity"].copy()
        f_dense = friction.solve_friction(**{**kwargs, "velocity": v_dense})
        monkeypatch.setattr(friction, "DENSE_FRICTION_MAX", 0)
        f_sparse = friction.solve_friction(**{**kwargs, "velocity": v_sparse})
        monkeypatch.setattr(friction, "DENSE_FRICTION_MAX", dense_max)
        np.testing.assert_allclose(f_sparse, f_dense, rtol=0, atol=1e-12 * max(1.0, np.abs(f_dense).max()))
        np.testing.assert_allclose(v_sparse, v_dense, rtol=0, atol=1e-12)
    assert max(np.abs(friction.solve_friction(**c)).max() for c in copy.deepcopy(calls)) > 0.1
    # and a whole run with the sparse solve follows the dense one over its first steps
    monkeypatch.setattr(friction, "DENSE_FRICTION_MAX", 0)
    sim = Simulation(box_on_ground(boxes=2, tilt=math.radians(10.0), mu=0.5), dt=1 / 60, solver="explicit")
    sim.update(step=2)
    np.testing.assert_allclose(sim.state.body_q, q0[1], rtol=0, atol=1e-15)


def test_speculative_contacts_carry_no_force():
    # the box hovers 1 mm above the ground, inside its 2 mm contact gap, with gravity off
    sim = Simulation(box_on_ground(height=0.001), dt=1 / 60, gravity=(0.0, 0.0, 0.0))
    sensor = sim.add_sensor(ContactSensorCfg("/World/Box", force_threshold=0.0, track_air_time=True))
    sim.step()
    assert len(sim.last_result.contacts) > 0 and sim.last_result.contacts.speculative.all()
    assert len(sim.last_frame) == 0
    assert np.all(sensor.data.net_forces_w == 0) and sensor.data.current_contact_time[0, 0] == 0
    with pytest.raises(ValueError, match="one configuration"):
        sim.add_sensor(ContactSensorCfg("/World/Box"), sensor_cfg=ContactSensorCfg("/World/Box"))
