"""Sensors' debug view: adapters read sensors duck-typed; a marker appears only in contact."""

from types import SimpleNamespace

import numpy as np
import pytest

from viz.sensors import (SensorArrays, contact_point_arrays, contact_sensor_arrays, pipeline_sensor_arrays,
                         sensor_arrays)
from viz_util import SIZE, headless_polyscope, reddish, scene_path, window


class FakeTensor:
    """Looks like a torch tensor: .detach().cpu().numpy()."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.a


def isaac_sensor(net, *, pos=None, body_ids=None, threshold=1.0, debug_vis=True, force_matrix=None, cop=None):
    data = SimpleNamespace(net_forces_w=net, pos_w=pos, force_matrix_w=force_matrix, contact_pos_w=cop)
    return SimpleNamespace(cfg=SimpleNamespace(debug_vis=debug_vis, force_threshold=threshold), data=data,
                           body_ids=body_ids)


def test_contact_sensor_in_contact_by_force_threshold_and_body_ids():
    net = np.array([[[0.0, 0.0, 5.0], [0.0, 0.0, 0.5]], [[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]]])  # (E=2, S=2, 3)
    body_positions = np.arange(12, dtype=float).reshape(4, 3)
    s = isaac_sensor(FakeTensor(net), body_ids=np.array([[0, 1], [2, 3]]))
    a = contact_sensor_arrays(s, body_positions=body_positions)
    assert a.in_contact.tolist() == [True, False, False, True]  # 0.5 N is under the 1 N threshold
    np.testing.assert_array_equal(a.body_position, body_positions)
    np.testing.assert_array_equal(a.net_force, net.reshape(4, 3))
    # (S,) body indices are the same bodies in every env; pos_w wins when present
    a = contact_sensor_arrays(isaac_sensor(net[:1], body_ids=[3, 1]), body_positions=body_positions)
    np.testing.assert_array_equal(a.body_position, body_positions[[3, 1]])
    a = contact_sensor_arrays(isaac_sensor(net, pos=np.ones((2, 2, 3))))
    np.testing.assert_array_equal(a.body_position, 1.0)
    with pytest.raises(ValueError, match="pos_w"):
        contact_sensor_arrays(isaac_sensor(net))


def test_contact_sensor_debug_vis_off_draws_nothing_and_filtered_forces_are_kept():
    net = np.array([[[0.0, 0.0, 5.0]]])
    off = contact_sensor_arrays(isaac_sensor(net, pos=np.zeros((1, 1, 3)), debug_vis=False))
    assert len(off.body_position) == 0 and not off.in_contact.any()
    fm = np.array([[[[0.0, 0.0, 2.0], [0.0, 0.0, 3.0]]]])
    cop = np.array([[[[0.0, 0.0, 0.0], [np.nan] * 3]]])
    a = sensor_arrays(isaac_sensor(net, pos=np.zeros((1, 1, 3)), force_matrix=fm, cop=cop))
    assert a.filtered_force.shape == (1, 2, 3) and np.isnan(a.center_of_pressure[0, 1]).all()


def embodichain_sensor(position, valid, **stored):
    class Sensor:
        def get_data(self):
            return {"position": FakeTensor(position), "is_valid": FakeTensor(valid)}

    s = Sensor()
    for k, v in stored.items():
        setattr(s, k, v)
    return s


def test_contact_points_honour_stored_visibility():
    position = np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3)
    valid = np.array([[True, False, True], [False, True, False]])
    a = contact_point_arrays(embodichain_sensor(position, valid))
    np.testing.assert_array_equal(a.contact_point, position[valid])
    # what set_contact_point_visibility(visible, rgba, point_size, env_ids) stored, as attributes ...
    a = contact_point_arrays(embodichain_sensor(position, valid, contact_point_rgba=(0, 255, 0, 255),
                                                contact_point_size=5.0, contact_point_env_ids=[1]))
    np.testing.assert_array_equal(a.contact_point, position[1][valid[1]])
    np.testing.assert_allclose(a.contact_point_rgba, (0, 1, 0, 1))
    assert a.contact_point_radius == pytest.approx(5e-3)
    # ... or as one record; invisible draws nothing
    hidden = embodichain_sensor(position, valid, contact_point_visibility={"visible": False})
    assert sensor_arrays(hidden).contact_point is None


def test_pipeline_sensor_arrays_give_each_body_its_net_force():
    from hydro.contact.pipeline import HydroelasticPipeline
    from hydro.scene.usd_io import load_usd

    model = load_usd(scene_path("box_stack.usda"))
    state = model.state()
    result = HydroelasticPipeline(model).collide(model.shape_world_poses(state))
    a = pipeline_sensor_arrays(model, state, result)
    assert a.in_contact.all()
    # net force on a body: + the force of contacts where it is B, − where it is A
    c = result.contacts
    f = c.force_vectors()
    expect = np.array([f[model.shape_body[c.shape_b] == b].sum(axis=0) - f[model.shape_body[c.shape_a] == b].sum(axis=0)
                       for b in range(model.body_count)])
    np.testing.assert_allclose(a.net_force, expect, rtol=1e-9, atol=1e-9)
    # each box carries about its weight (the scene is authored in balance)
    np.testing.assert_allclose(a.net_force[:, 2], 9.81 * model.body_mass, rtol=0.1)
    assert a.filtered_force.shape == (3, 3, 3)
    lifted = model.state()
    lifted.body_q[:, 2] += 1.0  # all three boxes far above the ground, still stacked
    lifted.body_q[1, 2] += 1.0
    lifted.body_q[2, 2] += 2.0
    result = HydroelasticPipeline(model).collide(model.shape_world_poses(lifted))
    a = pipeline_sensor_arrays(model, lifted, result)
    assert not a.in_contact.any() and np.isnan(a.center_of_pressure).all()


def _marker_pixels(view, points):
    from viz.picture import project, render

    image = render(view, size=SIZE, colorbar=False)
    px, front = project(points)
    assert front.all()
    red = reddish(image)
    return [int(window(red, p).sum()) for p in px]


def test_a_marker_appears_only_where_a_sensor_body_is_in_contact():
    headless_polyscope()
    from viz.scene import SceneView

    view = SceneView.from_usd(scene_path("sphere_on_box.usda"))
    view.settings.contacts.show_forces = False
    view.settings.contacts.show_contacts = False
    # two sensor bodies in the air beside the sphere: one pressed (5 N), one not
    pos = np.array([[[-0.15, 0.0, 0.15], [0.15, 0.0, 0.15]]])
    view.add_sensor("fake", isaac_sensor(np.array([[[0.0, 0.0, 5.0], [0.0, 0.0, 0.0]]]), pos=pos))
    touching, free = _marker_pixels(view, pos[0])
    assert touching > 10 and free == 0


def test_body_sensor_marker_follows_the_contact():
    headless_polyscope()
    from viz.scene import SceneView

    view = SceneView.from_usd(scene_path("sphere_on_box.usda"))
    view.settings.show_body_sensors = True
    view.settings.contacts.show_forces = False
    view.settings.contacts.show_contacts = False
    centre = view.state.body_q[0, :3].copy()
    (resting,) = _marker_pixels(view, [centre])
    import polyscope as ps

    assert resting > 10 and ps.has_point_cloud("body contacts/in contact")
    pose = view.state.body_q[0].copy()
    pose[2] += 0.03  # lifted off the box
    view.set_body_pose(0, pose)
    (lifted,) = _marker_pixels(view, [pose[:3]])
    assert lifted == 0 and not ps.has_point_cloud("body contacts/in contact")


def test_contact_points_are_drawn_in_their_colour():
    headless_polyscope()
    from viz.scene import SceneView

    view = SceneView.from_usd(scene_path("sphere_on_box.usda"))
    p = np.array([[[-0.15, 0.0, 0.2], [0.15, 0.0, 0.2]]])
    view.add_sensor("points", embodichain_sensor(p, np.array([[True, False]]), contact_point_rgba=(1.0, 0.0, 0.0, 1.0),
                                                 contact_point_size=8.0))
    shown, hidden = _marker_pixels(view, p[0])
    assert shown > 10 and hidden == 0
    assert isinstance(sensor_arrays(SensorArrays.empty()), SensorArrays)


def test_real_contact_sensor_marks_only_bodies_in_contact():
    # hydro.Simulation with two boxes: one resting on the ground, one held high by a kinematic
    # script; the sensor's debug view marks the first only
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings
    from hydro.sim.sensors import ContactSensorCfg
    from hydro.sim.simulation import Simulation
    from viz.sensors import sensor_arrays

    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.2)), local_pose=(0, 0, -0.1, 0, 0, 0, 1), hydroelastic=True,
                stiffness=1e7, sdf=SDFSettings(max_resolution=32))
    for name, z in (("Resting", 0.049), ("Lifted", 0.3)):
        body = b.add_body(f"/World/{name}", (0.2 if name == "Lifted" else -0.2, 0, z, 0, 0, 0, 1),
                          kinematic=name == "Lifted")
        b.add_shape(f"/World/{name}/Collider", Box((0.1, 0.1, 0.1)), body=body, hydroelastic=True, stiffness=1e7,
                    sdf=SDFSettings(max_resolution=32))
    sim = Simulation(b.finalize(), dt=1.0 / 120.0)
    sensor = sim.add_sensor(ContactSensorCfg(prim_path="/World/(Resting|Lifted)"))
    for _ in range(3):
        sim.step()
    assert len(sensor_arrays(sensor).body_position) == 0  # debug_vis is off by default
    sensor.set_debug_vis(True)  # the sensor's own switch wins over its cfg
    arrays = sensor_arrays(sensor)
    names = [sim.model.body_path[i] for i in range(sim.model.body_count)]
    resting = names.index("/World/Resting")
    assert arrays.in_contact.tolist() == [i == resting for i in range(2)]
    np.testing.assert_allclose(arrays.body_position[1 - resting], [0.2, 0, 0.3], atol=1e-9)
    assert arrays.net_force[resting, 2] > 0


def test_real_per_contact_sensor_points_are_in_world_frame():
    # EmbodiChain-style sensor on two envs: the sensor reports positions in each env's frame;
    # the viewer draws the world points the sensor gives (contact_points_to_draw)
    from hydro.sim.embodichain import ContactSensorCfg
    from hydro.sim.simulation import Simulation

    sim = Simulation(scene_path("boxes_envs.usda"), num_envs=2, dt=1.0 / 120.0)
    sensor = sim.add_sensor(sensor_cfg=ContactSensorCfg(rigid_uid_list=["Box", "Ground"], max_contacts_per_env=64))
    sim.step()
    assert sensor_arrays(sensor).contact_point is None  # hidden until asked for
    sensor.set_contact_point_visibility(True, rgba=(0.0, 1.0, 0.0, 1.0), point_size=4.0, env_ids=[1])
    a = sensor_arrays(sensor)
    data = sensor.get_data()
    origin = sim.model.env_origins[1]
    assert np.linalg.norm(origin) > 0.5  # the envs lie apart: env and world frames differ
    np.testing.assert_allclose(a.contact_point, data["position"][1][data["is_valid"][1]] + origin, atol=1e-6)
    box = sim.model.body_path.index("/World/envs/env_1/Box")
    assert len(a.contact_point) > 0
    assert np.all(np.abs(a.contact_point[:, :2] - sim.state.body_q[box, :2]) <= 0.051)  # under env 1's 0.1 m box
    np.testing.assert_allclose(a.contact_point_rgba, (0, 1, 0, 1))
    assert a.contact_point_radius == pytest.approx(4e-3)
