"""EmbodiChain-style per-contact sensor: uids, AND/OR matching, slots, overflow, ids, visibility."""

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
    ground = s.get_actor_info(s.item_user_ids[-1])
    assert ground.env_id == -1 and ground.body_index == -1 and ground.link_name is None
    # an empty link list monitors every link
    _, all_links = make(model, articulation_cfg_list=[ArticulationContactFilterCfg("Robot")])
    assert len(all_links.item_user_ids) == 4
    caps = s.contact_capabilities
    assert caps.geometry and caps.normal_impulse and caps.friction_impulse


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
    d = s.get_data()
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
    d = s.get_data()
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
