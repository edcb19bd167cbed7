"""Small scenes for the solver and sensor tests, built with ModelBuilder (hydroelastic boxes).

Stiffness k = 2e6 N/m³ on every shape (k_eff = 1e6): a 0.1 m box of 1 kg sinks about 1 mm, and
the auto sub-step stays near 2 ms, so a second of simulated time costs about a second of CPU.
"""

import math

import numpy as np

from hydro.geometry import Box
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings
from hydro.transforms import quat_from_axis_angle, quat_rotate

K = 2.0e6
EDGE = 0.1
SDF = SDFSettings(max_resolution=32)


def box_on_ground(*, height=0.0, tilt=0.0, mu=0.5, ground=(1.0, 1.0, 0.2), num_envs=1, envs=False, boxes=1):
    """``boxes`` 0.1 m cubes of 1 kg stacked on a static ground box whose top face passes through the
    origin, the whole scene tilted by ``tilt`` rad about +y (so the slope descends along the tilted
    +x). The lowest box's bottom starts ``height`` m above the ground (0: at equilibrium depth)."""
    q = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), tilt)
    b = ModelBuilder()
    root = "/World/envs/env_0" if envs else "/World"
    gz = quat_rotate(q, np.array([0.0, 0.0, -ground[2] / 2]))
    b.add_shape("/World/Ground", Box(ground), local_pose=np.r_[gz, q], hydroelastic=True, stiffness=K, sdf=SDF,
                static_friction=mu, dynamic_friction=mu)
    keff_area = K / 2 * EDGE * EDGE
    z = 0.0
    for i in range(boxes):
        # at rest, the interface under box i carries the boxes - i boxes above it
        sink = 0.0 if height else 9.81 * (boxes - i) * math.cos(tilt) / keff_area
        z += (height if i == 0 else 0.0) - sink + (EDGE / 2 if i == 0 else EDGE)
        c = quat_rotate(q, np.array([0.0, 0.0, z]))
        name = "Box" if boxes == 1 else f"Box{i + 1}"
        body = b.add_body(f"{root}/{name}", np.r_[c, q], mass=1.0)
        b.add_shape(f"{root}/{name}/Collider", Box((EDGE, EDGE, EDGE)), body=body, hydroelastic=True, stiffness=K,
                    sdf=SDF, gap=0.002, static_friction=mu, dynamic_friction=mu)
    return b.finalize(num_envs=num_envs)


class FakeSim:
    """A stand-in for :class:`~hydro.sim.simulation.Simulation` that feeds its sensors frames by
    hand: what a sensor reads when it is made (``model``, ``physics_dt``, ``state``, ``device``),
    and the simulation's side of the sensor interface (:mod:`hydro.sim.sensing`)."""

    def __init__(self, model, dt=0.01):
        self.model = model
        self.physics_dt = dt
        self.device = "cpu"
        self.state = model.state()
        self.step_count = 0
        self.sensors = []

    def add_sensor(self, cfg):
        sensor = cfg._make_sensor(self)
        self.sensors.append(sensor)
        return sensor

    def step(self, frames_per_substep):
        """One physics step: ``frames_per_substep`` is a list of ContactFrames (equal sub-steps)."""
        self.step_count += 1
        for sensor in self.sensors:
            sensor.on_step(tuple(frames_per_substep), self.state, self.step_count, self.physics_dt)


def fake_sim(model, dt=0.01):
    return FakeSim(model, dt)


def frame(model, rows):
    """A ContactFrame from rows ``(shape_a, shape_b, normal_force_on_b (3,), friction_on_b (3,), point (3,))``."""
    from hydro.sim.sensing import ContactFrame

    if not rows:
        return ContactFrame.empty()
    sa = np.array([r[0] for r in rows], np.int32)
    sb = np.array([r[1] for r in rows], np.int32)
    fn = np.array([r[2] for r in rows], float)
    ft = np.array([r[3] for r in rows], float)
    pt = np.array([r[4] if len(r) > 4 else (0.0, 0.0, 0.0) for r in rows], float)
    n = fn / np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-30)
    sbody = np.asarray(model.shape_body)
    env_a = np.asarray(model.shape_env)[sa]
    env = np.where(env_a >= 0, env_a, np.asarray(model.shape_env)[sb]).astype(np.int32)
    return ContactFrame(point=pt, normal=n, depth=np.full(len(rows), -1e-3), normal_force=fn, friction_force=ft,
                        shape_a=sa, shape_b=sb, body_a=sbody[sa].astype(np.int32), body_b=sbody[sb].astype(np.int32),
                        env=env, pair=np.zeros(len(rows), np.int32))


def robot_scene(num_envs=2):
    """A global ground; per env a robot (Foot, Hand) and an Object, all with one collider."""
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((5, 5, 1)), local_pose=[0, 0, -0.5, 0, 0, 0, 1])
    for name in ("Robot/Foot", "Robot/Hand", "Object"):
        i = b.add_body(f"/World/envs/env_0/{name}")
        b.add_shape(f"/World/envs/env_0/{name}/Collider", Box((0.1, 0.1, 0.1)), body=i)
    b.add_articulation("/World/envs/env_0/Robot")
    return b.finalize(num_envs=num_envs, build_sdfs=False)


def shape(model, path):
    return model.shape_path.index(path)


def ground_push(model, env, body, fz, friction=(0.0, 0.0, 0.0), point=(0.0, 0.0, 0.0)):
    """A contact pushing ``body`` of ``env`` up from the ground with ``fz`` N."""
    return (shape(model, "/World/Ground"), shape(model, f"/World/envs/env_{env}/{body}/Collider"), (0, 0, fz), friction,
            point)


def foot_on_object(num_envs=2):
    """Per env: a robot foot ``Robot/LF_FOOT`` (a 0.1 m cube of 1 kg, hydroelastic) resting, at its
    equilibrium depth, on ``Object``, a static 0.4 m × 0.4 m × 0.1 m block whose top face is at
    z = 0 (env-local); ``Robot`` is an articulation root. The Isaac Lab snippet's scene."""
    b = ModelBuilder()
    root = "/World/envs/env_0"
    b.add_shape(f"{root}/Object", Box((0.4, 0.4, 0.1)), local_pose=[0, 0, -0.05, 0, 0, 0, 1], hydroelastic=True,
                stiffness=K, sdf=SDF)
    sink = 9.81 / (K / 2 * EDGE * EDGE)
    foot = b.add_body(f"{root}/Robot/LF_FOOT", [0, 0, EDGE / 2 - sink, 0, 0, 0, 1], mass=1.0)
    b.add_shape(f"{root}/Robot/LF_FOOT/Collider", Box((EDGE, EDGE, EDGE)), body=foot, hydroelastic=True, stiffness=K,
                sdf=SDF, gap=0.002)
    b.add_articulation(f"{root}/Robot")
    return b.finalize(num_envs=num_envs)


def cubes_and_gripper(num_envs=1):
    """The EmbodiChain snippet's scene, per env: a static ``Ground`` block (top face at z = 0);
    ``cube0`` on the ground; ``cube1`` on the ground with ``cube2`` stacked on it (0.1 m cubes of
    1 kg, hydroelastic, at their equilibrium depths); an articulation ``UR10_PGI`` whose kinematic
    links ``finger1_link`` and ``finger2_link`` hang in the air, touching nothing."""
    b = ModelBuilder()
    root = "/World/envs/env_0"
    b.add_shape(f"{root}/Ground", Box((0.9, 0.4, 0.2)), local_pose=[0, 0, -0.1, 0, 0, 0, 1], hydroelastic=True,
                stiffness=K, sdf=SDF)
    one = 9.81 / (K / 2 * EDGE * EDGE)  # the sink under one cube's weight
    for name, x, z in (("cube0", -0.3, EDGE / 2 - one), ("cube1", 0.0, EDGE / 2 - 2 * one),
                       ("cube2", 0.0, 1.5 * EDGE - 3 * one)):
        body = b.add_body(f"{root}/{name}", [x, 0, z, 0, 0, 0, 1], mass=1.0)
        b.add_shape(f"{root}/{name}/Collider", Box((EDGE, EDGE, EDGE)), body=body, hydroelastic=True, stiffness=K,
                    sdf=SDF, gap=0.002)
    for name, y in (("finger1_link", -0.1), ("finger2_link", 0.1)):
        body = b.add_body(f"{root}/UR10_PGI/{name}", [0.3, y, 0.5, 0, 0, 0, 1], mass=0.2, kinematic=True)
        b.add_shape(f"{root}/UR10_PGI/{name}/Collider", Box((0.02, 0.05, 0.08)), body=body, hydroelastic=True,
                    stiffness=K, sdf=SDF)
    b.add_articulation(f"{root}/UR10_PGI")
    return b.finalize(num_envs=num_envs)
