"""Contact sensors on a robot-like gripper pinching and lifting a box.

Run it with ``hydro example contact-sensor`` (``--steps N`` for a shorter run) and read it as a
template for your own scenes.

The scene, ``scenes/pinch.usda``: a ``Gripper`` (an articulation root) holds two kinematic
fingers, ``LeftFinger`` and ``RightFinger``, whose rubber pads squeeze a 0.1 kg ``Box`` from
both sides. Nothing else holds the box up: friction at the two pads carries its weight
(0.981 N). The script below holds the grip for 0.2 s, lifts the fingers 5 cm over 0.5 s, then
holds again; the box rides along.

It reads the contact forces three ways:

1. An Isaac Lab–style ``ContactSensor`` on both fingers, filtered by partner (the box): the
   grip (normal force) of each finger, the load it lifts (friction, tracked on request), where
   it presses (the force-weighted centre of pressure) and for how long.
2. A second ``ContactSensor`` on the box with one filter column per finger: the matrix says
   which finger carries what; as the fingers are the box's only partners, its columns add up
   to the box's net force.
3. The EmbodiChain-style per-contact sensor on the fingers and the box: every contact's
   position, normal and impulses, with actor ids that resolve to prim paths.

Every buffer of ``sensor.data`` is a NumPy array updated in place, with ``.torch`` (a torch
tensor sharing its memory, when torch is installed: ``pip install 'hydro[torch]'``); the
EmbodiChain sensor's ``get_data()`` gives torch tensors (NumPy with ``as_numpy=True``).
"""

from __future__ import annotations

import os

import numpy as np

import hydro
from hydro import contact_sensor_embodichain as embodichain
from hydro.sim.sensors import ContactSensorCfg
from hydro.sim.simulation import Simulation


def default_scene() -> str:
    """``scenes/pinch.usda`` of the hydro source tree."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(hydro.__file__))), "scenes", "pinch.usda")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: the example needs the scenes/ folder of the hydro source tree")
    return path


def main(steps: int = 60, dt: float = 1.0 / 60.0, scene: str | None = None, log=print) -> int:
    # -- the simulation ------------------------------------------------------------------------
    # Gravity comes from the scene's PhysicsScene; the solver picks its sub-step from the
    # contact stiffness (sim.stability says how).
    sim = Simulation(scene or default_scene(), dt=dt)
    log(f"scene: {sim.model.body_count} bodies {sim.model.body_path}")
    log(f"solver: dt = {sim.dt:.4f} s in {sim.substeps} sub-steps (contact frequency bound "
        f"{sim.stability.omega_bound:.0f} rad/s)")

    # -- the gripper's motion: kinematic fingers follow keyframes ------------------------------
    fingers = sim.find_bodies(r"/World/envs/env_\d+/Gripper/.*Finger")
    start = sim.model.body_q0[fingers]
    lifted = start.copy()
    lifted[:, 2] += 0.05  # 5 cm up
    sim.set_kinematic_script(fingers, [(0.0, start), (0.2, start), (0.7, lifted)])

    # -- 1. one sensor on both fingers, filtered by the box -------------------------------------
    # prim_path matches two bodies per env (S = 2); the filter gives one column (F = 1). Isaac Lab's
    # filtered sensors are many-to-one (one sensor per finger there): many_to_many_filters is hydro's extension.
    finger_sensor = sim.add_sensor(ContactSensorCfg(
        prim_path="{ENV_REGEX_NS}/Gripper/.*Finger",
        filter_prim_paths_expr=["{ENV_REGEX_NS}/Box"],
        history_length=4,          # the last 4 physics steps, newest first
        track_air_time=True,       # contact / air timers
        track_contact_points=True,  # centre of pressure per (finger, filter) ...
        max_contact_data_count_per_prim=256,  # Isaac Lab's capacity (hydro averages every contact)
        track_friction_forces=True,  # the friction buffers (the totals include friction anyway)
        force_threshold=0.1,       # N: "in contact" above this normal force
        debug_vis=True,            # the viewer draws markers and arrows; the data is unchanged
        many_to_many_filters=True,  # two sensor bodies with a filter (hydro's extension)
    ))
    left, _ = finger_sensor.find_bodies("LeftFinger")
    right, _ = finger_sensor.find_bodies("RightFinger")
    left, right = left[0], right[0]

    # -- 2. a sensor on the box with one filter column per finger -------------------------------
    box_sensor = sim.add_sensor(ContactSensorCfg(
        prim_path="{ENV_REGEX_NS}/Box",
        filter_prim_paths_expr=["{ENV_REGEX_NS}/Gripper/LeftFinger", "{ENV_REGEX_NS}/Gripper/RightFinger"],
        track_friction_forces=True,
    ))

    # -- 3. the per-contact sensor (EmbodiChain's API) -------------------------------------------
    per_contact = sim.add_sensor(sensor_cfg=embodichain.ContactSensorCfg(
        rigid_uid_list=["Box"],
        articulation_cfg_list=[embodichain.ArticulationContactFilterCfg("Gripper", ["LeftFinger", "RightFinger"])],
        filter_need_both_actor=True,  # only contacts between two monitored actors
        max_contacts_per_env=64,
    ))

    # -- run, printing what the sensors read -----------------------------------------------------
    box = sim.find_bodies(r"/World/envs/env_\d+/Box")[0]
    z0 = sim.state.body_q[box, 2]
    log("")
    log("   t (s)  box dz (mm)  grip L / R (N)   lift L / R (N)   box net z (N)  in contact L / R (s)")
    every = max(1, steps // 10)
    for i in range(steps):
        sim.update(step=1)  # one physics step; every sensor updates
        if (i + 1) % every and i + 1 != steps:
            continue
        f = finger_sensor.data
        grip = np.linalg.norm(f.normal_force_matrix_w[0, :, 0], axis=-1)  # normal force of the box on each finger
        lift = -f.friction_force_matrix_w[0, :, 0, 2]  # friction on the box is upward: minus that on the finger
        net = box_sensor.data.net_forces_w[0, 0, 2]
        times = f.current_contact_time[0]
        log(f"{sim.time:8.3f} {(sim.state.body_q[box, 2] - z0) * 1e3:12.2f} {grip[left]:7.3f} / {grip[right]:5.3f}"
            f" {lift[left]:8.3f} / {lift[right]:5.3f} {net:14.3f} {times[left]:10.3f} / {times[right]:.3f}")

    # -- what the sensors hold at the end --------------------------------------------------------
    f = finger_sensor.data
    b = box_sensor.data
    weight = sim.model.body_mass[box] * 9.81
    log("")
    log(f"box weight {weight:.4f} N; the fingers' friction carries {b.net_friction_forces_w[0, 0, 2]:.4f} N of it")
    log(f"box force matrix (one column per finger), z: {np.round(b.force_matrix_w[0, 0, :, 2], 4).tolist()} N; "
        f"summed {b.force_matrix_w[0, 0].sum(axis=0)[2]:.4f} N = net {b.net_forces_w[0, 0, 2]:.4f} N")
    for name, s in (("left", left), ("right", right)):
        log(f"{name} finger: centre of pressure {np.round(f.contact_pos_w[0, s, 0], 4).tolist()} m, grip history "
            f"(newest first) {np.round(np.linalg.norm(f.normal_force_matrix_w_history[0, :, s, 0], axis=-1), 3).tolist()} N")
    try:  # the same buffer as a torch tensor, without a copy (on the simulation's device)
        grip_tensor = f.normal_force_matrix_w.torch
        log(f"as torch: normal_force_matrix_w.torch {tuple(grip_tensor.shape)} {grip_tensor.dtype} on "
            f"{grip_tensor.device}")
    except ImportError as exc:
        log(f"(no torch tensors: {exc})")
    per_contact.update()
    report = per_contact.get_data(as_numpy=True)  # torch tensors without the flag (when torch is installed)
    valid = report["is_valid"][0]
    log(f"per-contact sensor: {int(valid.sum())} contacts in env 0 (capacity {report['is_valid'].shape[1]}, "
        f"overflow {int(per_contact.overflow_count[0])})")
    for k in range(min(3, int(valid.sum()))):
        a0, a1 = report["user_ids"][0, k]
        info0, info1 = per_contact.get_actor_info(a0), per_contact.get_actor_info(a1)
        position = np.round(report["position"][0, k].astype(float), 4).tolist()
        normal = np.round(report["normal"][0, k].astype(float), 3).tolist()
        log(f"  {info0.link_name or info0.uid} -> {info1.link_name or info1.uid}: position {position} m, normal {normal}, "
            f"normal impulse {report['impulse'][0, k]:.3e} N·s, depth {report['distance'][0, k] * 1e3:.3f} mm")
    lefts = [i for i in per_contact.item_user_ids if per_contact.get_actor_info(i).link_name == "LeftFinger"]
    only_left = per_contact.filter_by_user_ids(lefts, env_ids=[0], as_numpy=True)
    log(f"  of which {len(only_left['impulse'])} touch the left finger")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
