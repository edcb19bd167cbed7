"""The simulation on the default contact path: boxes resting on a plane, a dropped sphere, mixed
scenes, material damping, and the runtime configuration (configure_newton after loading)."""

import math

import numpy as np
import pytest

from hydro.contact.config import (CollisionConfig, HydroelasticConfig, NewtonConfig, active_config,
                                  configure_newton)
from hydro.contact.types import CONTACT_HYDROELASTIC, CONTACT_POINT
from hydro.geometry import Box, Plane, Sphere
from hydro.scene.material import MAT_CONTACT_STIFFNESS, ShapeMaterial
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings
from hydro.sim.sensors import ContactSensorCfg
from hydro.sim.simulation import Simulation

G = 9.81


class _Recorder:
    """A sensor that keeps every sub-step's contact frame (what on_step hands it)."""

    def __init__(self):
        self.frames = []

    def on_step(self, frames, state, step, dt):
        self.frames.extend(frames)

    def reset(self, env_ids=None):
        pass


class _RecorderCfg:
    def _make_sensor(self, sim):
        return _Recorder()


@pytest.fixture
def restore_config():
    before = active_config()
    yield
    configure_newton(before)


def test_boxes_resting_on_a_plane_read_their_weight_without_drift():
    b = ModelBuilder()
    b.add_shape("/World/Ground", Plane())
    sizes = [(0.2, 0.2, 0.2), (0.3, 0.2, 0.1), (0.3, 0.3, 0.2)]
    for i, size in enumerate(sizes):
        body = b.add_body(f"/World/Box{i}", (1.0 * i, 0, 0.5 * size[2], 0, 0, 0, 1), density=2000.0)
        b.add_shape(f"/World/Box{i}/c", Box(size), body=body)
    m = b.finalize()
    sim = Simulation(m, dt=1.0 / 60.0)
    sensor = sim.add_sensor(ContactSensorCfg(prim_path="/World/Box.*"))
    weight = m.body_mass * G
    z, fz = [], []
    for _ in range(600):  # 10 s
        sim.step()
        z.append(sim.state.body_q[:, 2].copy())
        fz.append(np.asarray(sensor.data.net_forces_w)[0, :, 2].copy())
    z, fz = np.array(z), np.array(fz)
    settled = slice(60, None)  # after the first second
    np.testing.assert_allclose(fz[settled], np.tile(weight, (540, 1)), rtol=5e-3)
    assert np.ptp(z[settled], axis=0).max() < 1e-6  # no drift, no jitter
    assert np.abs(sim.state.body_q[:, :2] - m.body_q0[:, :2]).max() < 1e-6  # no sliding
    k_eff = 0.5 * m.shape_material[1, MAT_CONTACT_STIFFNESS]  # the box's spring in series with the plane's
    np.testing.assert_allclose(0.5 * np.array(sizes)[:, 2] - z[-1], weight / (4 * k_eff), rtol=1e-4)  # 4 corners


def test_a_dropped_sphere_first_touches_at_the_free_fall_time():
    r, h = 0.05, 0.2
    b = ModelBuilder()
    b.add_shape("/World/Ground", Plane())
    body = b.add_body("/World/Ball", (0, 0, r + h, 0, 0, 0, 1), density=1000.0)
    b.add_shape("/World/Ball/c", Sphere(r), body=body)
    sim = Simulation(b.finalize(), dt=1.0 / 120.0)
    rec = sim.add_sensor(_RecorderCfg())
    sim.update(40)
    sub = sim.substep_dt
    first = next(k for k, f in enumerate(rec.frames) if len(f))
    t_touch = (first + 1) * sub  # the sub-step whose end pose overlaps
    expected = math.sqrt(2.0 * h / G)
    # semi-implicit Euler falls ½g·h²·n(n+1) after n sub-steps: within one sub-step of the closed form
    assert abs(t_touch - expected) <= 1.5 * sub, (t_touch, expected, sub)
    assert np.all(rec.frames[first].kind == CONTACT_POINT)


def _mixed_model():
    b = ModelBuilder()
    sdf = SDFSettings(max_resolution=16)
    b.add_shape("/World/Ground", Plane())
    base = b.add_body("/World/Base", (0, 0, 0.05, 0, 0, 0, 1), density=1000.0)
    b.add_shape("/World/Base/c", Box((0.3, 0.3, 0.1)), body=base, hydroelastic=True, stiffness=1e7, sdf=sdf)
    top = b.add_body("/World/Top", (0, 0, 0.15 - 0.0005, 0, 0, 0, 1), density=1000.0)
    b.add_shape("/World/Top/c", Box((0.1, 0.1, 0.1)), body=top, hydroelastic=True, stiffness=1e7, sdf=sdf)
    return b.finalize()


def test_a_mixed_scene_steps_with_both_paths_and_configure_newton_reroutes_the_next_step(restore_config):
    m = _mixed_model()
    sim = Simulation(m, dt=1.0 / 60.0)
    rec = sim.add_sensor(_RecorderCfg())
    sim.step()
    kinds = {int(k) for f in rec.frames for k in f.kind}
    assert kinds == {CONTACT_HYDROELASTIC, CONTACT_POINT}  # box on box: patch; base on the plane: corners
    # configure_newton after the simulation exists: the next step routes every pair to points
    configure_newton(NewtonConfig(collision_cfg=CollisionConfig(hydroelastic=HydroelasticConfig(enabled=False))))
    rec.frames.clear()
    sim.step()
    assert {int(k) for f in rec.frames for k in f.kind} == {CONTACT_POINT}
    assert any(np.any((f.body_a == 0) & (f.body_b == 1)) for f in rec.frames)  # box on box as points now
    # a configuration given to the constructor is fixed
    fixed = Simulation(m, dt=1.0 / 60.0, config=HydroelasticConfig())
    rec2 = fixed.add_sensor(_RecorderCfg())
    fixed.step()
    assert CONTACT_HYDROELASTIC in {int(k) for f in rec2.frames for k in f.kind}


def test_configure_newton_before_the_first_step_takes_effect(restore_config):
    m = _mixed_model()
    sim = Simulation(m, dt=1.0 / 60.0)
    configure_newton(NewtonConfig(collision_cfg=CollisionConfig(hydroelastic=HydroelasticConfig(enabled=False))))
    rec = sim.add_sensor(_RecorderCfg())
    sim.step()
    assert {int(k) for f in rec.frames for k in f.kind} == {CONTACT_POINT}


def test_authored_contact_damping_is_used():
    # (the explicit solver's force law; the implicit one's is tested in test_simulation_implicit.py)
    # a ball moving into the plane at 0.5 m/s, 2 mm deep: the first sub-step's normal force is
    # k·d + b·|v| with the pair's authored damping b (two dampers in series), or the damping-ratio
    # rule's b = 2ζ·sqrt(m·k) without one
    def first_force(material):
        b = ModelBuilder()
        b.add_shape("/World/Ground", Plane(), material=material)
        body = b.add_body("/World/Ball", (0, 0, 0.05 - 0.002, 0, 0, 0, 1), density=1000.0, velocity=(0, 0, -0.5))
        b.add_shape("/World/Ball/c", Sphere(0.05), body=body, material=material)
        m = b.finalize()
        sim = Simulation(m, dt=1.0 / 6000.0, substeps=1, gravity=(0, 0, 0), solver="explicit")
        sim.step()
        f = sim.last_frame
        assert f.kind.tolist() == [CONTACT_POINT]
        return f.normal_force[0, 2], m

    k = 0.5 * 1e5  # two default stiffnesses in series
    f_ratio, m = first_force(None)
    np.testing.assert_allclose(f_ratio, k * 0.002 + 2.0 * np.sqrt(m.body_mass[0] * k) * 0.5, rtol=1e-5)
    f_damped, _ = first_force(ShapeMaterial(contact_damping=300.0))
    np.testing.assert_allclose(f_damped, k * 0.002 + 150.0 * 0.5, rtol=1e-5)


def test_contact_data_sees_point_contacts_on_the_shipped_plane_scene():
    import os

    sim = Simulation(os.path.join(os.path.dirname(__file__), "..", "scenes", "primitives_on_plane.usda"),
                     dt=1.0 / 60.0)
    for _ in range(30):
        sim.step()
    box = int(sim.find_bodies("/World/Box")[0])
    data = sim.contact_data([box], [-1], max_contact_data_count=8 * sim.substeps)
    n = int(data.counts[0, 0])
    assert n == 4 * sim.substeps and data.required_counts[0, 0] == n  # the box's four corners, every sub-step
    np.testing.assert_allclose(data.forces[0, 0, :n].sum(axis=0), [0, 0, sim.model.body_mass[box] * G], rtol=5e-3,
                               atol=1e-4)
    np.testing.assert_allclose(data.normals[0, 0, :n], np.tile([0, 0, 1], (n, 1)), atol=1e-6)
    assert np.all(sim.last_frame.kind == CONTACT_POINT)
