"""EmbodiChain-style per-contact sensor: uids, AND/OR matching, slots, overflow, ids, visibility,
torch reports on sim.device, the 1e-7 impulse filter, and the document's snippet."""

import numpy as np
import pytest

from hydro.sim.embodichain import ArticulationContactFilterCfg, ContactSensorCfg
from sim_util import fake_sim, frame, ground_push, robot_scene, shape

DT = 0.01


def make(model, **cfg):
    sim = fake_sim(model, DT)
    return sim, sim.add_sensor(ContactSensorCfg(**cfg))


def step(sim, rows):
    sim.step([frame(sim.model, rows)])


def test_uids_name_bodies_statics_and_articulation_links_per_env():
    model = robot_scene(2)
    _, s = make(model, rigid_uid_list=["Object", "Ground"],
                articulation_cfg_list=[ArticulationContactFilterCfg("Robot", ["Hand"])])
    paths = [s.get_actor_info(i).path for i in s.item_user_ids]
    assert paths == ["/World/envs/env_0/Robot/Hand", "/World/envs/env_0/Object", "/World/envs/env_1/Robot/Hand",
                     "/World/envs/env_1/Object", "/World/Ground"]
    hand = s.get_actor_info(s.item_user_ids[2])
    assert (hand.link_name, hand.articulation_uid, hand.env_id, hand.uid) == ("Hand", "Robot", 1, "Robot/Hand")
    assert hand.arena == "/World/envs/env_1"  # its Arena, as the document's get_actor_info resolves
    np.testing.assert_allclose(hand.arena_origin, model.env_origins[1])
    ground = s.get_actor_info(s.item_user_ids[-1])
    assert ground.env_id == -1 and ground.body_index == -1 and ground.link_name is None
    assert ground.arena is None and ground.arena_origin is None  # global: in every Arena
    # an empty link list monitors every link
    _, all_links = make(model, articulation_cfg_list=[ArticulationContactFilterCfg("Robot")])
    assert len(all_links.item_user_ids) == 4
    caps = s.contact_capabilities
    assert caps.geometry is True and caps.normal_impulse is True and caps.friction is True  # the document's names
    assert caps.friction_impulse is True  # the earlier name, kept


@pytest.mark.parametrize("cfg, message", [
    ({"rigid_uid_list": ["Table"]}, "matches no body"),
    ({"articulation_cfg_list": [ArticulationContactFilterCfg("Arm")]}, "matches no articulation"),
    ({"articulation_cfg_list": [ArticulationContactFilterCfg("Robot", ["Toe"])]}, "has no link 'Toe'"),
    ({"max_contacts_per_env": 0}, "max_contacts_per_env"),
])
def test_unknown_names_are_refused_with_what_exists(cfg, message):
    with pytest.raises(ValueError, match=message):
        make(robot_scene(1), **cfg)


def test_both_actors_or_either_actor():
    model = robot_scene(1)
    obj, hand = shape(model, "/World/envs/env_0/Object/Collider"), shape(model, "/World/envs/env_0/Robot/Hand/Collider")
    rows = [ground_push(model, 0, "Object", 5.0), (hand, obj, (1.0, 0, 0), (0, 0, 0), (0.1, 0, 0))]
    sim, both = make(model, rigid_uid_list=["Object"], articulation_cfg_list=[ArticulationContactFilterCfg("Robot")])
    either = sim.add_sensor(ContactSensorCfg(rigid_uid_list=["Object"], filter_need_both_actor=False))
    step(sim, rows)
    d = both.get_data()  # stale after the step: it updates itself
    assert d["is_valid"][0].tolist()[:2] == [True, False]
    assert d["user_ids"][0, 0].tolist() == [1, 2]  # hand (actor 0) → object (actor 1)
    e = either.get_data()
    assert e["is_valid"][0, :3].tolist() == [True, True, False]
    assert e["user_ids"][0, 0].tolist() == [3, 2]  # the ground is the first static actor (id B = 3)


def test_fields_slots_and_units():
    model = robot_scene(2)
    sim, s = make(model, rigid_uid_list=["Object", "Ground"], max_contacts_per_env=4)
    origin1 = model.env_origins[1]
    step(sim, [ground_push(model, 1, "Object", 20.0, friction=(3.0, 0, 0), point=origin1 + [0.1, 0.2, 0.0])])
    s.update()
    d = s.get_data(as_numpy=True)
    assert d["position"].shape == (2, 4, 3) and d["user_ids"].shape == (2, 4, 2) and d["impulse"].shape == (2, 4)
    assert d["position"].dtype == np.float32 and d["user_ids"].dtype == np.int32 and d["is_valid"].dtype == bool
    assert d["is_valid"].tolist() == [[False] * 4, [True, False, False, False]]
    np.testing.assert_allclose(d["position"][1, 0], [0.1, 0.2, 0.0], atol=1e-6)  # env frame
    np.testing.assert_allclose(d["normal"][1, 0], [0, 0, 1])  # from actor 0 (ground) toward actor 1
    assert d["impulse"][1, 0] == pytest.approx(20.0 * DT)
    np.testing.assert_allclose(d["friction"][1, 0], [-3.0 * DT, 0, 0], rtol=1e-6)  # on actor 0 (the ground)
    assert d["distance"][1, 0] < 0
    assert np.all(d["position"][~d["is_valid"]] == 0)  # unused slots are cleared, not left over


def test_overflow_is_counted_per_env_and_warned_and_valid_slots_stay_a_prefix():
    model = robot_scene(2)
    sim, s = make(model, rigid_uid_list=["Object"], filter_need_both_actor=False, max_contacts_per_env=3)
    rows = [ground_push(model, 0, "Object", float(k + 1)) for k in range(5)] + [ground_push(model, 1, "Object", 1.0)]
    step(sim, rows)
    with pytest.warns(RuntimeWarning, match="raise ContactSensorCfg.max_contacts_per_env to at least 5"):
        s.update()
    d = s.get_data(as_numpy=True)
    assert s.required_contacts.tolist() == [5, 1] and s.overflow_count.tolist() == [2, 0]
    assert d["is_valid"].tolist() == [[True, True, True], [True, False, False]]
    np.testing.assert_allclose(d["impulse"][0], np.array([1.0, 2.0, 3.0]) * DT)  # the first ones, in order


def test_filter_by_user_ids_and_env_ids():
    model = robot_scene(2)
    sim, s = make(model, rigid_uid_list=["Object", "Ground"], articulation_cfg_list=[ArticulationContactFilterCfg("Robot")])
    step(sim, [ground_push(model, 0, "Object", 1.0), ground_push(model, 0, "Robot/Foot", 2.0),
               ground_push(model, 1, "Robot/Foot", 3.0)])
    feet = [i for i in s.item_user_ids if s.get_actor_info(i).link_name == "Foot"]
    out = s.filter_by_user_ids(feet)
    np.testing.assert_allclose(out["impulse"], np.array([2.0, 3.0]) * DT)
    assert out["env_ids"].tolist() == [0, 1] and out["position"].shape == (2, 3)
    only1 = s.filter_by_user_ids(np.array(feet, dtype=np.int32), env_ids=[1])
    assert only1["env_ids"].tolist() == [1]


def test_contact_point_visibility_is_stored_for_the_viewer():
    model = robot_scene(2)
    sim, s = make(model, rigid_uid_list=["Object", "Ground"])
    assert not s.contact_point_visibility.visible and len(s.contact_points_to_draw()) == 0
    step(sim, [ground_push(model, 0, "Object", 1.0, point=model.env_origins[0]),
               ground_push(model, 1, "Object", 1.0, point=model.env_origins[1])])
    s.set_contact_point_visibility(visible=True, rgba=(0.0, 0.0, 1.0, 1.0), point_size=6.0, env_ids=[1])
    v = s.contact_point_visibility
    assert v.visible and v.rgba == (0.0, 0.0, 1.0, 1.0) and v.point_size == 6.0 and v.env_ids == (1,)
    np.testing.assert_allclose(s.contact_points_to_draw(), [model.env_origins[1]], atol=1e-6)
    with pytest.raises(ValueError, match="rgba"):
        s.set_contact_point_visibility(True, rgba=(2, 0, 0, 1))
    with pytest.raises(ValueError, match="point_size"):
        s.set_contact_point_visibility(True, point_size=0)


def test_reset_clears_the_envs():
    model = robot_scene(2)
    sim, s = make(model, rigid_uid_list=["Object", "Ground"])
    step(sim, [ground_push(model, 0, "Object", 1.0), ground_push(model, 1, "Object", 1.0)])
    s.update()
    s.reset([0])
    d = s.get_data()
    assert not d["is_valid"][0].any() and d["is_valid"][1, 0]


def test_reports_are_torch_tensors_of_the_documented_dtypes_on_the_sim_device():
    torch = pytest.importorskip("torch")
    model = robot_scene(2)
    sim, s = make(model, rigid_uid_list=["Object", "Ground"], max_contacts_per_env=5)
    step(sim, [ground_push(model, 0, "Object", 2.0)])
    d = s.get_data()
    dtypes = {"position": torch.float32, "normal": torch.float32, "friction": torch.float32,
              "impulse": torch.float32, "distance": torch.float32, "user_ids": torch.int32, "is_valid": torch.bool}
    shapes = {"position": (2, 5, 3), "normal": (2, 5, 3), "friction": (2, 5, 3), "impulse": (2, 5),
              "distance": (2, 5), "user_ids": (2, 5, 2), "is_valid": (2, 5)}
    assert set(d) == set(dtypes)
    for key, value in d.items():
        assert isinstance(value, torch.Tensor) and value.dtype == dtypes[key] and tuple(value.shape) == shapes[key], key
        assert value.device == torch.device(sim.device)
    assert d["position"][0][d["is_valid"][0]].shape == (1, 3)  # the document's masking
    ids = s.item_user_ids
    assert isinstance(ids, torch.Tensor) and ids.dtype == torch.int32
    numpy_report = s.get_data(as_numpy=True)
    assert all(isinstance(v, np.ndarray) for v in numpy_report.values())
    np.testing.assert_array_equal(numpy_report["impulse"], d["impulse"].numpy())


def test_without_torch_reports_are_numpy(monkeypatch):
    import sys

    model = robot_scene(1)
    sim, s = make(model, rigid_uid_list=["Object", "Ground"])
    monkeypatch.setitem(sys.modules, "torch", None)
    step(sim, [ground_push(model, 0, "Object", 2.0)])
    d = s.get_data()
    assert isinstance(d["impulse"], np.ndarray) and d["impulse"].dtype == np.float32 and d["is_valid"][0, 0]
    assert isinstance(s.item_user_ids, np.ndarray)


def test_only_contacts_with_a_normal_impulse_above_1e_7_are_reported():
    model = robot_scene(1)
    sim, s = make(model, rigid_uid_list=["Object"], filter_need_both_actor=False)
    # impulse = force × dt (dt = 0.01 s): 2e-5 N → 2e-7 N·s is reported, 5e-6 N → 5e-8 N·s is not
    step(sim, [ground_push(model, 0, "Object", 5e-6), ground_push(model, 0, "Object", 2e-5)])
    d = s.get_data(as_numpy=True)
    assert d["is_valid"][0].sum() == 1 and d["impulse"][0, 0] == pytest.approx(2e-7, rel=1e-6)
    assert s.required_contacts.tolist() == [1]


def test_fields_set_one_by_one_are_checked_when_the_sensor_is_made():
    cfg = ContactSensorCfg()
    cfg.max_contacts_per_env = 0
    with pytest.raises(ValueError, match="max_contacts_per_env"):
        fake_sim(robot_scene(1), DT).add_sensor(cfg)


def test_the_embodichain_snippet_runs_with_only_its_imports_changed():
    torch = pytest.importorskip("torch")
    from hydro.sim.simulation import Simulation
    from sim_util import cubes_and_gripper

    sim = Simulation(cubes_and_gripper(num_envs=2), dt=1 / 60)
    sim.update(step=30)  # settle: the cubes start at their equilibrium depths

    # ---- the document's snippet; only its imports differ ---------------------------------------
    from hydro.sim.embodichain import ContactSensor, ContactSensorCfg, ArticulationContactFilterCfg  # embodichain
    import torch  # noqa: F811

    # 1. Define Contact Filter Configuration
    contact_filter_cfg = ContactSensorCfg()

    # Monitor contacts for specific rigid bodies
    contact_filter_cfg.rigid_uid_list = ["cube0", "cube1", "cube2"]

    # Monitor contacts for specific articulation links
    contact_filter_art_cfg = ArticulationContactFilterCfg()
    contact_filter_art_cfg.articulation_uid = "UR10_PGI"
    contact_filter_art_cfg.link_name_list = ["finger1_link", "finger2_link"]
    contact_filter_cfg.articulation_cfg_list = [contact_filter_art_cfg]

    # Only report contacts when both actors are in the filter list
    contact_filter_cfg.filter_need_both_actor = True

    # Set maximum contacts per environment
    contact_filter_cfg.max_contacts_per_env = 128

    # 2. Add Sensor to Simulation
    contact_sensor: ContactSensor = sim.add_sensor(sensor_cfg=contact_filter_cfg)

    # 3. Update and Retrieve Contact Data
    sim.update(step=1)
    contact_sensor.update()
    contact_report = contact_sensor.get_data()

    # Access contacts for a specific environment using is_valid mask
    env_id = 0
    env_valid_mask = contact_report["is_valid"][env_id]
    env_contact_positions = contact_report["position"][env_id][env_valid_mask]

    # Or get all valid contacts across all environments
    valid_mask = contact_report["is_valid"]
    all_valid_positions = contact_report["position"][valid_mask]  # Shape: (total_valid_contacts, 3)

    # 4. Filter contacts by backend-neutral contact actor IDs
    filter_user_ids = torch.as_tensor(
        [
            actor_id
            for actor_id in contact_sensor.item_user_ids.tolist()
            if contact_sensor.get_actor_info(actor_id).path.endswith("/cube2")
            or contact_sensor.get_actor_info(actor_id).link_name == "finger1_link"
        ],
        dtype=torch.int32,
        device=sim.device,
    )
    # Filter for specific environments
    filter_contact_report = contact_sensor.filter_by_user_ids(filter_user_ids, env_ids=[env_id])

    # 5. Visualize Contact Points
    contact_sensor.set_contact_point_visibility(
        visible=True,
        rgba=(0.0, 0.0, 1.0, 1.0),  # Blue color
        point_size=6.0,
        env_ids=[env_id],  # Optional: visualize only specific environments
    )

    # ---- what it reads ------------------------------------------------------------------------
    # both actors monitored: only cube2-on-cube1 contacts (the ground and cube0's ground are not)
    u = contact_report["user_ids"][valid_mask]
    paths = {contact_sensor.get_actor_info(i).path.rsplit("/", 1)[-1] for i in u.reshape(-1).tolist()}
    assert paths == {"cube1", "cube2"}
    assert env_contact_positions.shape[1] == 3 and len(all_valid_positions) == int(valid_mask.sum())
    assert len(filter_user_ids) == 2 * 2  # cube2 and finger1_link, in each of the 2 envs
    # the impulses through the cube1/cube2 interface carry cube2's weight over the step (1 kg): their
    # vertical parts (the exact patch has a 45° band along the rim, whose sideways parts cancel)
    weight_impulse = 1.0 * 9.81 * sim.dt
    impulse = filter_contact_report["impulse"] * filter_contact_report["normal"][..., 2]
    assert abs(impulse.sum().item()) == pytest.approx(weight_impulse, rel=0.005)
    # (the implicit solver acts along the pair's normal on the rim band too: the magnitudes add up
    # to the weight, where the exact patch's 45° band adds more)
    assert filter_contact_report["impulse"].sum().item() >= weight_impulse * (1 - 1e-9)
    assert set(filter_contact_report["env_ids"].tolist()) == {env_id}
    # normals from actor 0 toward actor 1: up, the direction the solver pushed along (the pair's
    # normal on the face and the 45° rim band; a few sliver contacts of the patch's corners keep
    # their own, carrying under 1 %); positions in the env's frame, at the interface:
    # cube1's top face (less half the ~1 mm overlap)
    n = filter_contact_report["normal"]
    lower_first = filter_contact_report["user_ids"][:, 0] < filter_contact_report["user_ids"][:, 1]
    up = torch.where(lower_first, n[:, 2], -n[:, 2])
    face = up > 0.99
    assert (filter_contact_report["impulse"][~face].sum() < 0.01 * weight_impulse).item()
    assert (filter_contact_report["impulse"][face].sum() > 0.95 * filter_contact_report["impulse"].sum()).item()
    cube1_top = sim.state.body_q[sim.model.body_path.index("/World/envs/env_0/cube1"), 2] + 0.05
    assert (filter_contact_report["position"][:, 2] - cube1_top).abs().max().item() < 1e-3
    assert (filter_contact_report["distance"] < 0).all()
    assert contact_sensor.contact_point_visibility.env_ids == (env_id,)
