"""The implicit solver (the default) against closed forms: its one-contact force law, a resting
box at the shipped stiffness, incline stick/slide, rolling, no bounce, a force-controlled grasp,
and the control inputs (apply_force, set_pd_target)."""

import math

import numpy as np
import pytest

from hydro.contact.types import CONTACT_POINT
from hydro.errors import InputError
from hydro.geometry import Box, Plane, Sphere
from hydro.scene.material import ShapeMaterial
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings
from hydro.sim.sensors import ContactSensorCfg
from hydro.sim.simulation import Simulation
from hydro.transforms import quat_from_axis_angle, quat_rotate
from sim_util import box_on_ground

G = 9.81
SDF = SDFSettings(max_resolution=32)


def _ball_on_plane(material=None, depth=0.002, velocity=-0.5):
    b = ModelBuilder()
    b.add_shape("/World/Ground", Plane(), material=material)
    body = b.add_body("/World/Ball", (0, 0, 0.05 - depth, 0, 0, 0, 1), density=1000.0, velocity=(0, 0, velocity))
    b.add_shape("/World/Ball/c", Sphere(0.05), body=body, material=material)
    return b.finalize()


@pytest.mark.parametrize("damping", [None, 300.0])
def test_one_point_contact_follows_the_implicit_law(damping):
    # one point contact, x0 = 2 mm deep, approaching at 0.5 m/s, no gravity: the step's impulse is
    # h·c·(x0 − (h + τ)·v) with v the velocity at its end, so
    # v = (m·v0 + h·c·x0) / (m + h·c·(h + τ)); τ = b/c with an authored damping b, else
    # 2ζ·sqrt(m/c) (ζ = 1)
    m = _ball_on_plane(None if damping is None else ShapeMaterial(contact_damping=2 * damping))
    h, c, x0, v0 = 1e-3, 0.5 * 1e5, 0.002, -0.5
    mass = m.body_mass[0]
    sim = Simulation(m, dt=h, gravity=(0, 0, 0), newton_tolerance=1e-13)
    sim.step()
    x0 = -sim.last_frame.depth[0]  # the table's float32 depth of the 2 mm overlap
    assert x0 == pytest.approx(0.002, rel=1e-6)
    assert sim.last_result.contacts.stiffness[0] == pytest.approx(c, rel=1e-6)
    c = float(sim.last_result.contacts.stiffness[0])
    if damping is not None:
        assert sim.last_result.contacts.damping[0] == pytest.approx(damping, rel=1e-6)  # float32
        tau = float(sim.last_result.contacts.damping[0]) / c
    else:
        tau = 2.0 * math.sqrt(mass / c)
    v = (mass * v0 + h * c * x0) / (mass + h * c * (h + tau))
    assert sim.state.body_qd[0, 2] == pytest.approx(v, rel=1e-7)
    f = sim.last_frame
    assert f.kind.tolist() == [CONTACT_POINT]
    assert f.normal_force[0, 2] == pytest.approx(c * (x0 - (h + tau) * v), rel=1e-7)
    assert sim.solver_stats["not_converged"] == 0 and sim.substeps == 1


def test_a_resting_box_at_the_shipped_stiffness_reads_m_g_in_one_solve_per_step():
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.2)), local_pose=[0, 0, -0.1, 0, 0, 0, 1], hydroelastic=True,
                sdf=SDF)
    body = b.add_body("/World/Box", [0, 0, 0.05 + 0.002, 0, 0, 0, 1], mass=2.0)
    b.add_shape("/World/Box/c", Box((0.1, 0.1, 0.1)), body=body, hydroelastic=True, sdf=SDF)
    m = b.finalize()
    assert m.shape_stiffness[1] >= 1e10  # the shipped default
    sim = Simulation(m, dt=1e-3)
    sensor = sim.add_sensor(ContactSensorCfg("/World/Box", track_friction_forces=True))
    sim.update(200)
    assert sim.substeps == 1
    np.testing.assert_allclose(sensor.data.net_forces_w[0, 0], [0, 0, 2.0 * G], rtol=0, atol=1e-3 * 2.0 * G)
    assert abs(sim.state.body_qd[0, 2]) < 1e-6


def test_a_box_on_a_35_degree_incline_slides_and_on_20_sticks():
    def run(theta, steps):
        sim = Simulation(box_on_ground(tilt=theta, mu=0.5, ground=(3.0, 0.5, 0.2)), dt=1 / 60)
        down = quat_rotate(quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), theta), np.array([1.0, 0.0, 0.0]))
        p0 = sim.state.body_q[0, :3].copy()
        s = []
        for _ in range(steps):
            sim.step()
            s.append((sim.state.body_q[0, :3] - p0) @ down)
        return np.array(s), sim

    s, _ = run(math.radians(20.0), 40)
    assert abs(s[-1] - s[20]) < 1e-6  # sticks: no creep once settled
    theta = math.radians(35.0)
    s, sim = run(theta, 40)
    t = sim.dt * np.arange(1, 41)
    fit = np.polyfit(t[10:], s[10:], 2)
    assert 2 * fit[0] == pytest.approx(G * (math.sin(theta) - 0.5 * math.cos(theta)), rel=0.01)


def test_a_sphere_rolls_down_a_20_degree_slope_at_five_sevenths_g_sin():
    theta, r = math.radians(20.0), 0.05
    q = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), theta)
    b = ModelBuilder()
    b.add_shape("/World/Slope", Box((2.0, 0.5, 0.2)), local_pose=np.r_[quat_rotate(q, np.array([0, 0, -0.1])), q],
                hydroelastic=True, stiffness=1e10, sdf=SDF, static_friction=1.0, dynamic_friction=1.0)
    body = b.add_body("/World/Ball", np.r_[quat_rotate(q, np.array([-0.5, 0, r])), 0, 0, 0, 1], density=1000.0)
    b.add_shape("/World/Ball/c", Sphere(r), body=body, hydroelastic=True, stiffness=1e10, sdf=SDF,
                static_friction=1.0, dynamic_friction=1.0)
    sim = Simulation(b.finalize(), dt=2e-3)
    down = quat_rotate(q, np.array([1.0, 0.0, 0.0]))
    p0 = sim.state.body_q[0, :3].copy()
    s = []
    for _ in range(200):
        sim.step()
        s.append((sim.state.body_q[0, :3] - p0) @ down)
    t = sim.dt * np.arange(1, 201)
    fit = np.polyfit(t[40:], np.array(s)[40:], 2)
    assert 2 * fit[0] == pytest.approx(5 / 7 * G * math.sin(theta), rel=0.01)
    v = sim.state.body_qd[0]
    assert np.linalg.norm(v[3:]) * r == pytest.approx(v[:3] @ down, rel=0.01)  # rolls, does not slide


@pytest.mark.parametrize("dt", [1e-3, 1 / 60])
@pytest.mark.parametrize("hydroelastic", [True, False])
def test_a_dropped_sphere_does_not_bounce(dt, hydroelastic):
    r = 0.05
    b = ModelBuilder()
    if hydroelastic:
        b.add_shape("/World/Ground", Box((1.0, 1.0, 0.2)), local_pose=[0, 0, -0.1, 0, 0, 0, 1], hydroelastic=True,
                    sdf=SDF)
    else:
        b.add_shape("/World/Ground", Plane())
    body = b.add_body("/World/Ball", [0, 0, r + 0.05, 0, 0, 0, 1], density=1000.0)
    b.add_shape("/World/Ball/c", Sphere(r), body=body, hydroelastic=hydroelastic, sdf=SDF)
    sim = Simulation(b.finalize(), dt=dt)
    z, touching = [], []
    for _ in range(int(round(0.3 / dt))):
        sim.step()
        z.append(sim.state.body_q[0, 2])
        touching.append(len(sim.last_frame) > 0)
    z, touching = np.array(z), np.array(touching)
    first = int(np.argmax(touching))
    assert 0 < first and touching[first:].all()  # it never leaves the ground again
    deepest = first + int(np.argmin(z[first:]))
    assert z[deepest:].max() <= z[-1] + 1e-9  # and never rises above where it comes to rest
    assert abs(sim.state.body_qd[0, 2]) < 1e-3


def _grasp(squeeze, *, mu=0.5, mass=0.2, steps=50, dt=2e-3):
    """A 5 cm box of ``mass`` between two 0.1 kg fingers, each pushed toward it by ``squeeze`` N
    (apply_force) and held in y, z and orientation by PD targets, their weight carried by a
    force; gravity on everything, no ground."""
    sdf = SDFSettings(max_resolution=16)
    b = ModelBuilder()
    box = b.add_body("/World/Box", [0, 0, 0.2, 0, 0, 0, 1], mass=mass)
    b.add_shape("/World/Box/c", Box((0.05, 0.05, 0.05)), body=box, hydroelastic=True, stiffness=1e8, sdf=sdf,
                static_friction=mu, dynamic_friction=mu)
    for name, x in (("Left", -0.035), ("Right", 0.035)):
        f = b.add_body(f"/World/{name}", [x, 0, 0.2, 0, 0, 0, 1], mass=0.1)
        b.add_shape(f"/World/{name}/c", Box((0.02, 0.04, 0.06)), body=f, hydroelastic=True, stiffness=1e8, sdf=sdf,
                    static_friction=mu, dynamic_friction=mu)
    sim = Simulation(b.finalize(), dt=dt)
    fingers = sim.set_pd_target("/World/(Left|Right)", stiffness=(0, 1e4, 1e4), damping=(0, 200, 200),
                                angular_stiffness=100, angular_damping=2)
    sim.apply_force(fingers, [[squeeze, 0, 0], [-squeeze, 0, 0]], persistent=True)
    sim.apply_force(fingers, [0, 0, 0.1 * G], persistent=True)
    z0 = sim.state.body_q[0, 2]
    dz = []
    for _ in range(steps):
        sim.step()
        dz.append(sim.state.body_q[0, 2] - z0)
    f = sim.last_frame
    on_box = np.where(f.body_b == 0, 1.0, np.where(f.body_a == 0, -1.0, 0.0))[:, None]
    return sim, np.array(dz), (on_box * f.friction_force).sum(axis=0), (on_box * f.normal_force).sum(axis=0)


def test_a_force_controlled_grasp_holds_when_two_mu_fn_exceeds_m_g():
    mu, mass, squeeze = 0.5, 0.2, 2.5  # 2μF = 2.5 N > m·g = 1.96 N
    sim, dz, friction, normal = _grasp(squeeze, mu=mu, mass=mass, steps=100)
    assert abs(dz[-1] - dz[75]) < 1e-6  # held: it settles (a fraction of a mm) and stays
    np.testing.assert_allclose(friction, [0, 0, mass * G], rtol=0, atol=1e-3 * mass * G)
    # each finger squeezes with what it is pushed by
    f = sim.last_frame
    left = f.body_a == 1
    assert abs(np.abs(f.normal_force[left | (f.body_b == 1)][:, 0]).sum() - squeeze) < 1e-3 * squeeze


def test_a_force_controlled_grasp_below_the_limit_slides_down_with_friction_against_the_slip():
    mu, mass, squeeze = 0.5, 0.2, 1.5  # 2μF = 1.5 N < m·g
    sim, dz, friction, normal = _grasp(squeeze, mu=mu, mass=mass)
    t = sim.dt * np.arange(1, len(dz) + 1)
    fit = np.polyfit(t[10:], dz[10:], 2)
    assert 2 * fit[0] == pytest.approx(-(G - 2 * mu * squeeze / mass), rel=0.01)
    # sliding friction: 2μF, up, against the box's slip down the fingers
    np.testing.assert_allclose(friction, [0, 0, 2 * mu * squeeze], rtol=0, atol=1e-3 * 2 * mu * squeeze)


def _free_body(**kw):
    b = ModelBuilder()
    body = b.add_body("/World/B", [0, 0, 0, 0, 0, 0, 1], mass=2.0, inertia=(0.1, 0.1, 0.1))
    b.add_shape("/World/B/c", Box((0.1, 0.1, 0.1)), body=body)
    k = b.add_body("/World/K", [5, 0, 0, 0, 0, 0, 1], kinematic=True)
    b.add_shape("/World/K/c", Box((0.1, 0.1, 0.1)), body=k)
    return Simulation(b.finalize(build_sdfs=False), dt=0.01, gravity=(0, 0, 0), **kw)


@pytest.mark.parametrize("solver", ["implicit", "explicit"])
def test_apply_force_lasts_one_step_or_until_cleared(solver):
    sim = _free_body(solver=solver)
    sim.apply_force(0, [2.0, 0, 0])
    sim.step()
    sim.step()  # a one-step push is gone
    np.testing.assert_allclose(sim.state.body_qd[0], [0.01, 0, 0, 0, 0, 0], atol=1e-15)
    sim.apply_force("/World/B", [0, 4.0, 0], persistent=True)
    sim.update(3)
    np.testing.assert_allclose(sim.state.body_qd[0, :3], [0.01, 0.06, 0], atol=1e-15)
    sim.clear_forces()
    sim.step()
    np.testing.assert_allclose(sim.state.body_qd[0, :3], [0.01, 0.06, 0], atol=1e-15)
    # a force at a point also turns the body: 1 N along x at 0.1 m up is 0.1 N·m about +y
    sim.apply_force(0, [1.0, 0, 0], point=sim.state.body_q[0, :3] + [0, 0, 0.1])
    sim.step()
    np.testing.assert_allclose(sim.state.body_qd[0, 3:], [0, 0.01 * 0.1 / 0.1, 0], atol=1e-12)
    with pytest.raises(InputError, match="not dynamic"):
        sim.apply_force("/World/K", [1, 0, 0])
    with pytest.raises(InputError, match=r"force must be 3 finite numbers or \(1, 3\)"):
        sim.apply_force(0, [[1, 0, 0], [0, 1, 0]])


def test_apply_force_takes_one_row_per_env():
    b = ModelBuilder()
    body = b.add_body("/World/envs/env_0/B", [0, 0, 0, 0, 0, 0, 1], mass=1.0)
    b.add_shape("/World/envs/env_0/B/c", Box((0.1, 0.1, 0.1)), body=body)
    sim = Simulation(b.finalize(num_envs=3, build_sdfs=False), dt=0.1, gravity=(0, 0, 0))
    ids = sim.apply_force("/World/envs/env_.*/B", [[1, 0, 0], [2, 0, 0], [3, 0, 0]])
    sim.step()
    np.testing.assert_allclose(sim.state.body_qd[ids, 0], [0.1, 0.2, 0.3], atol=1e-15)


def test_a_pd_target_pulls_a_body_to_its_pose_on_the_driven_axes_only():
    sim = _free_body()
    q = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), 0.3)
    sim.set_pd_target(0, np.r_[0.1, 0.2, 0.0, q], stiffness=(100.0, 100.0, 0.0), damping=(28.0, 28.0, 0.0),
                      angular_stiffness=5.0, angular_damping=1.4)
    sim.apply_force(0, [0, 0, 1.0], persistent=True)  # the free axis just accelerates
    sim.update(300)
    np.testing.assert_allclose(sim.state.body_q[0, :2], [0.1, 0.2], atol=1e-6)
    np.testing.assert_allclose(sim.state.body_q[0, 3:], q, atol=1e-6)
    assert sim.state.body_qd[0, 2] == pytest.approx(3.0 * 1.0 / 2.0, rel=1e-9)
    sim.clear_pd_target()
    with pytest.raises(InputError, match="set_pd_target needs solver='implicit'"):
        _free_body(solver="explicit").set_pd_target(0, stiffness=1.0)


def test_the_force_grasp_example_lifts_the_box():
    import re

    from hydro.tools.examples import EXAMPLES
    from hydro.tools.examples.force_grasp import main

    assert "force-grasp" in EXAMPLES
    lines = []
    assert main(steps=150, log=lines.append) == 0
    last = lines[-1]
    assert last.startswith("box weight") and "the box rose" in last
    weight, carried = (float(v) for v in re.findall(r"(\d+\.\d+) N", last))
    assert abs(carried - weight) < 0.01 * weight  # the fingers' friction carries it
    assert float(last.split("rose ")[1].split(" mm")[0]) > 15.0  # lifted with the fingers (0.1 s in, 2 cm up)


def test_kinematic_fingers_sliding_up_a_cube_pull_it_straight_up_with_mu_times_their_grip():
    # the case: a cube on the ground squeezed by two kinematic fingers below the holding
    # force (2μF_n ≈ 0.9·m·g) that slide up past it. Each pad's friction must oppose its own slip
    # (+z on the cube), not point sideways; the cube stays on the ground, level.
    mu, mass = 0.5, 0.2
    sdf = SDFSettings(max_resolution=16)
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((0.3, 0.3, 0.1)), local_pose=[0, 0, -0.05, 0, 0, 0, 1], hydroelastic=True,
                stiffness=1e8, sdf=SDFSettings(max_resolution=32), static_friction=mu, dynamic_friction=mu)
    cube = b.add_body("/World/Cube", [0, 0, 0.025, 0, 0, 0, 1], mass=mass)
    b.add_shape("/World/Cube/c", Box((0.05, 0.05, 0.05)), body=cube, hydroelastic=True, stiffness=1e7, sdf=sdf,
                static_friction=mu, dynamic_friction=mu)
    overlap = 0.00026  # F_n ≈ 0.9·m·g/(2μ) ≈ 1.8 N per finger (measured below)
    for name, x in (("Left", -(0.035 - overlap)), ("Right", 0.035 - overlap)):
        f = b.add_body(f"/World/{name}", [x, 0, 0.03, 0, 0, 0, 1], kinematic=True)
        b.add_shape(f"/World/{name}/c", Box((0.02, 0.04, 0.04)), body=f, hydroelastic=True, stiffness=1e7, sdf=sdf,
                    static_friction=mu, dynamic_friction=mu)
    sim = Simulation(b.finalize(), dt=2e-3)
    fingers = sim.find_bodies("/World/(Left|Right)")
    start = sim.state.body_q[fingers].copy()
    up = start.copy()
    up[:, 2] += 0.01
    sim.set_kinematic_script(fingers, [(0.0, start), (0.2, up)])  # 5 cm/s up
    sim.update(60)
    f = sim.last_frame
    pads = (f.body_a >= 1) | (f.body_b >= 1)
    sign = np.where(f.body_b == 0, 1.0, -1.0)[pads, None]  # force on the cube
    friction = (sign * f.friction_force[pads]).sum(axis=0)
    grip = np.abs(f.normal_force[pads][:, 0]).sum()
    assert 0.8 * mass * G < 2 * mu * 0.5 * grip < mass * G  # below the holding force
    assert friction[2] == pytest.approx(mu * grip, rel=0.01)  # μ·F_n per pad, up
    assert np.hypot(friction[0], friction[1]) < 1e-3 * friction[2]  # not sideways
    q = sim.state.body_q[0]
    assert abs(q[2] - 0.025) < 5e-5  # on the ground (it sinks a little), not lifted
    assert 2 * math.degrees(math.acos(min(1.0, abs(q[6])))) < 0.1  # level


def test_a_solve_cut_short_says_so_once():
    sim = Simulation(box_on_ground(height=0.002), dt=1 / 60, newton_iterations=1, newton_tolerance=1e-15)
    with pytest.warns(RuntimeWarning, match="raise newton_iterations"):
        sim.update(20)
    assert sim.solver_stats["not_converged"] >= 0
    with pytest.raises(InputError, match="solver must be one of 'implicit', 'explicit'"):
        Simulation(box_on_ground(), solver="sap")
