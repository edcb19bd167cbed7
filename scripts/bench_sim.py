"""Time one simulation step of hydro beside Drake (MultibodyPlant, discrete SAP, hydroelastic
contact) and MuJoCo, on the same scenes, in one run, interleaved.

    python scripts/bench_sim.py [--steps 200] [--rounds 3] [--dt 0.001] [--scenes box,stack,...]
                                [--no-drake] [--no-mujoco]

Scenes (each built here for all three engines, the same sizes, masses, friction and stiffness):

| scene | what |
|---|---|
| ``box`` | a 0.1 m box of 1 kg resting on a ground box |
| ``stack`` | five such boxes stacked |
| ``roll`` | a 5 cm sphere (0.52 kg) rolling down a 20° slope (μ 1) |
| ``pile`` | 64 boxes (4 × 4 × 4, 1 mm apart) dropped onto the ground, timed while they land |
| ``pinch`` | ``scenes/pinch.usda``: two kinematic fingers lift a 0.1 kg box by friction (5 cm up) |

Stiffness: hydro's k = 1e9 N/m³ on every shape (pinch: the scene's 1.4e6); Drake's compliant
hydroelastic modulus E = k·ℓ with ℓ the shape's pressure-field depth scale (a box's smallest
half size, a sphere's radius), Hunt–Crossley dissipation 5 s/m; MuJoCo's default soft contact
(box/sphere geoms, a plane ground). Every engine steps dt = 1 ms (``--dt``).

Timing: each round runs ``--steps`` steps of every engine in turn (hydro, Drake, MuJoCo), after
a warm-up; the table gives the median over rounds of the wall time per step and of the CPU time
of this thread per step (``time.thread_time``; the machine is shared, so the CPU time is the
steadier of the two), and hydro ÷ Drake of both. A check column says what each engine's physics
did (resting force / m·g, the rolling acceleration / (5/7)·g·sin θ, the box's slip in the pinch).
NUMBA_NUM_THREADS is set to 1 unless given.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

G = 9.81
K = 1e9
EDGE = 0.1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLOPE = math.radians(20.0)
R_BALL = 0.05
#: hydro's SDF resolution (cells along a shape's longest side), ``--sdf-resolution``
SDF_RESOLUTION = 32


def _quat_y(theta):
    return np.array([0.0, math.sin(theta / 2), 0.0, math.cos(theta / 2)])  # x, y, z, w


def _rot_y(theta, v):
    c, s = math.cos(theta), math.sin(theta)
    return np.array([c * v[0] + s * v[2], v[1], -s * v[0] + c * v[2]])


def scene_bodies(name):
    """The scene as plain data: ground boxes (size, pose) and dynamic bodies
    (kind, size, mass, pose, mu). Poses (x, y, z, qx, qy, qz, qw)."""
    ident = [0, 0, 0, 1]
    if name == "box":
        ground = [((1.0, 1.0, 0.2), [0, 0, -0.1, *ident])]
        bodies = [("box", EDGE, 1.0, [0, 0, EDGE / 2, *ident], 0.5)]
    elif name == "stack":
        ground = [((1.0, 1.0, 0.2), [0, 0, -0.1, *ident])]
        bodies = [("box", EDGE, 1.0, [0, 0, EDGE / 2 + i * EDGE, *ident], 0.5) for i in range(5)]
    elif name == "roll":
        q = _quat_y(SLOPE)
        ground = [((3.0, 0.5, 0.2), [*_rot_y(SLOPE, [0, 0, -0.1]), *q])]
        bodies = [("sphere", R_BALL, 1000.0 * 4 / 3 * math.pi * R_BALL ** 3,
                   [*_rot_y(SLOPE, [-1.0, 0, R_BALL]), *ident], 1.0)]
    elif name == "pile":
        ground = [((2.0, 2.0, 0.2), [0, 0, -0.1, *ident])]
        bodies = []
        for i in range(4):
            for j in range(4):
                for k in range(4):
                    bodies.append(("box", EDGE, 1.0, [(i - 1.5) * (EDGE + 0.001), (j - 1.5) * (EDGE + 0.001),
                                                      0.02 + EDGE / 2 + k * (EDGE + 0.001), *ident], 0.5))
    else:
        raise ValueError(name)
    return ground, bodies


# ---------------------------------------------------------------------------------------------
# hydro

def hydro_sim(name, dt):
    from hydro.sim.simulation import Simulation

    if name == "pinch":
        sim = Simulation(os.path.join(ROOT, "scenes", "pinch.usda"), dt=dt)
        fingers = sim.find_bodies(r"/World/envs/env_\d+/Gripper/.*Finger")
        start = sim.model.body_q0[fingers]
        lifted = start.copy()
        lifted[:, 2] += 0.05
        sim.set_kinematic_script(fingers, [(0.0, start), (0.2, start), (0.7, lifted)])
        box = int(sim.find_bodies(r"/World/envs/env_\d+/Box")[0])
        return sim, lambda: sim.step(), lambda: (sim.state.body_q[box, 2], sim.state.body_q[fingers[0], 2])
    from hydro.geometry import Box, Sphere
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings

    sdf = SDFSettings(max_resolution=SDF_RESOLUTION)
    b = ModelBuilder()
    ground, bodies = scene_bodies(name)
    for k, (size, pose) in enumerate(ground):
        b.add_shape(f"/World/Ground{k}", Box(size), local_pose=pose, hydroelastic=True, stiffness=K, sdf=sdf,
                    static_friction=bodies[0][4], dynamic_friction=bodies[0][4])
    for i, (kind, size, mass, pose, mu) in enumerate(bodies):
        body = b.add_body(f"/World/B{i}", pose, mass=mass)
        geo = Box((size, size, size)) if kind == "box" else Sphere(size)
        b.add_shape(f"/World/B{i}/c", geo, body=body, hydroelastic=True, stiffness=K, sdf=sdf, static_friction=mu,
                    dynamic_friction=mu)
    sim = Simulation(b.finalize(), dt=dt)
    return sim, lambda: sim.step(), lambda: (sim.state.body_q.copy(), sim.state.body_qd.copy(), sim.last_frame)


# ---------------------------------------------------------------------------------------------
# Drake

def drake_sim(name, dt):
    from pydrake.geometry import AddCompliantHydroelasticProperties, AddContactMaterial, Box, ProximityProperties
    from pydrake.geometry import Sphere as DSphere
    from pydrake.math import RigidTransform, RotationMatrix
    from pydrake.common.eigen_geometry import Quaternion
    from pydrake.multibody.plant import AddMultibodyPlant, CoulombFriction, MultibodyPlantConfig
    from pydrake.multibody.tree import FixedOffsetFrame, PdControllerGains, PrismaticJoint, SpatialInertia
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(MultibodyPlantConfig(time_step=dt, discrete_contact_approximation="sap",
                                                      contact_model="hydroelastic_with_fallback"), builder)

    def X(pose):
        x, y, z, qx, qy, qz, qw = pose
        return RigidTransform(RotationMatrix(Quaternion(w=qw, x=qx, y=qy, z=qz)), [x, y, z])

    def props(modulus, mu, hint):
        p = ProximityProperties()
        AddContactMaterial(dissipation=5.0, friction=CoulombFriction(mu, mu), properties=p)
        AddCompliantHydroelasticProperties(hint, modulus, p)
        return p

    poses = []
    if name == "pinch":
        k, mu, pad = 1.4e6, 0.8, (0.02, 0.03, 0.03)
        fingers = []
        for side, x in (("L", -0.033), ("R", 0.033)):
            f = plant.AddRigidBody(f"finger{side}", SpatialInertia.SolidBoxWithMass(0.1, *pad))
            frame = plant.AddFrame(FixedOffsetFrame(f"F{side}", plant.world_frame(), RigidTransform([x, 0, 0])))
            j = plant.AddJoint(PrismaticJoint(f"z{side}", frame, f.body_frame(), [0, 0, 1]))
            plant.RegisterCollisionGeometry(f, RigidTransform(), Box(*pad), f"pad{side}", props(k * 0.01, mu, 0.01))
            a = plant.AddJointActuator(f"a{side}", j)
            a.set_controller_gains(PdControllerGains(p=1e5, d=1e3))
            fingers.append((f, j, x))
        box = plant.AddRigidBody("box", SpatialInertia.SolidBoxWithMass(0.1, 0.05, 0.05, 0.05))
        plant.RegisterCollisionGeometry(box, RigidTransform(), Box(0.05, 0.05, 0.05), "box", props(k * 0.025, mu, 0.01))
        plant.Finalize()
        diagram = builder.Build()
        sim = Simulator(diagram)
        ctx = sim.get_mutable_context()
        pc = plant.GetMyMutableContextFromRoot(ctx)
        plant.SetFreeBodyPose(pc, box, RigidTransform([0, 0, 0.3]))
        for f, j, x in fingers:
            j.set_translation(pc, 0.3)
        port = plant.get_desired_state_input_port(fingers[0][0].model_instance())
        port.FixValue(pc, [0.3, 0.3, 0.0, 0.0])
        sim.Initialize()
        t = [0.0]

        def step():
            t[0] += dt
            u = min(1.0, max(0.0, (t[0] - 0.2) / 0.5))
            z, vz = 0.3 + 0.05 * u, (0.1 if 0.2 < t[0] < 0.7 else 0.0)
            port.FixValue(pc, [z, z, vz, vz])
            sim.AdvanceTo(t[0])

        return sim, step, lambda: (plant.EvalBodyPoseInWorld(pc, box).translation()[2],
                                   plant.EvalBodyPoseInWorld(pc, fingers[0][0]).translation()[2])
    ground, bodies = scene_bodies(name)
    for k_, (size, pose) in enumerate(ground):
        plant.RegisterCollisionGeometry(plant.world_body(), X(pose), Box(*size), f"ground{k_}",
                                        props(K * min(size) / 2, bodies[0][4], 0.05))
    handles = []
    for i, (kind, size, mass, pose, mu) in enumerate(bodies):
        if kind == "box":
            body = plant.AddRigidBody(f"b{i}", SpatialInertia.SolidBoxWithMass(mass, size, size, size))
            plant.RegisterCollisionGeometry(body, RigidTransform(), Box(size, size, size), f"c{i}",
                                            props(K * size / 2, mu, size))
        else:
            body = plant.AddRigidBody(f"b{i}", SpatialInertia.SolidSphereWithMass(mass, size))
            plant.RegisterCollisionGeometry(body, RigidTransform(), DSphere(size), f"c{i}", props(K * size, mu, size / 4))
        handles.append((body, pose))
    plant.Finalize()
    diagram = builder.Build()
    sim = Simulator(diagram)
    ctx = sim.get_mutable_context()
    pc = plant.GetMyMutableContextFromRoot(ctx)
    for body, pose in handles:
        plant.SetFreeBodyPose(pc, body, X(pose))
    sim.Initialize()
    t = [0.0]

    def step():
        t[0] += dt
        sim.AdvanceTo(t[0])

    def state():
        q = np.array([np.r_[plant.EvalBodyPoseInWorld(pc, b).translation(), 0, 0, 0, 1] for b, _ in handles])
        v = np.array([np.r_[plant.EvalBodySpatialVelocityInWorld(pc, b).translational(),
                            plant.EvalBodySpatialVelocityInWorld(pc, b).rotational()] for b, _ in handles])
        return q, v, None

    return sim, step, state


# ---------------------------------------------------------------------------------------------
# MuJoCo

def mujoco_sim(name, dt):
    import mujoco

    if name == "pinch":
        xml = f"""<mujoco><option timestep="{dt}" gravity="0 0 -9.81"/><worldbody>
          <body name="fl" mocap="true" pos="-0.033 0 0.3"><geom type="box" size="0.01 0.015 0.015" friction="0.8 0.005 0.0001"/></body>
          <body name="fr" mocap="true" pos="0.033 0 0.3"><geom type="box" size="0.01 0.015 0.015" friction="0.8 0.005 0.0001"/></body>
          <body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.025 0.025 0.025" mass="0.1" friction="0.8 0.005 0.0001"/></body>
        </worldbody></mujoco>"""
        m = mujoco.MjModel.from_xml_string(xml)
        d = mujoco.MjData(m)
        t = [0.0]

        def step():
            t[0] += dt
            u = min(1.0, max(0.0, (t[0] - 0.2) / 0.5))
            d.mocap_pos[:, 2] = 0.3 + 0.05 * u
            mujoco.mj_step(m, d)

        return (m, d), step, lambda: (d.qpos[2], d.mocap_pos[0, 2])
    ground, bodies = scene_bodies(name)
    size, pose = ground[0]
    top = _rot_y(SLOPE, [0, 0, 0]) if name == "roll" else np.zeros(3)
    quat = f"{pose[6]} {pose[3]} {pose[4]} {pose[5]}"
    parts = [f'<mujoco><option timestep="{dt}" gravity="0 0 -9.81"/><worldbody>',
             f'<geom type="plane" size="5 5 0.1" pos="{top[0]} {top[1]} {top[2]}" quat="{quat}" '
             f'friction="{bodies[0][4]} 0.005 0.0001"/>']
    for i, (kind, s, mass, p, mu) in enumerate(bodies):
        geom = f'type="box" size="{s / 2} {s / 2} {s / 2}"' if kind == "box" else f'type="sphere" size="{s}"'
        parts.append(f'<body name="b{i}" pos="{p[0]} {p[1]} {p[2]}"><freejoint/><geom {geom} mass="{mass}" '
                     f'friction="{mu} 0.005 0.0001"/></body>')
    parts.append("</worldbody></mujoco>")
    m = mujoco.MjModel.from_xml_string("".join(parts))
    d = mujoco.MjData(m)

    def state():
        n = len(bodies)
        q = np.array([np.r_[d.qpos[7 * i:7 * i + 3], 0, 0, 0, 1] for i in range(n)])
        v = np.array([np.r_[d.qvel[6 * i:6 * i + 3], d.qvel[6 * i + 3:6 * i + 6]] for i in range(n)])
        return q, v, None

    return (m, d), lambda: mujoco.mj_step(m, d), state


# ---------------------------------------------------------------------------------------------

def check(name, samples, dt):
    """A physics check from the samples (one per step) of one engine."""
    if name == "pinch":
        box = np.array([s[0] for s in samples])
        finger = np.array([s[1] for s in samples])
        slip = (box - finger) - (box[0] - finger[0])
        return f"box slip {slip[-1] * 1e3:+.2f} mm (fingers +{(finger[-1] - finger[0]) * 1e3:.0f} mm)"
    qs = np.array([s[0] for s in samples])
    vs = np.array([s[1] for s in samples])
    if name in ("box", "stack"):
        drift = qs[-1, :, 2] - qs[0, :, 2]
        return f"top box dz {drift[-1] * 1e6:+.1f} µm, |v| max {np.abs(vs[-1]).max():.1e}"
    if name == "roll":
        down = _rot_y(SLOPE, [1.0, 0, 0])
        a = (vs[-1, 0, :3] - vs[0, 0, :3]) @ down / (dt * (len(vs) - 1))
        return f"a / (5/7 g sin θ) = {a / (5 / 7 * G * math.sin(SLOPE)):.4f}"
    if name == "pile":
        return f"z min {qs[-1, :, 2].min():.3f} m, |v| max {np.abs(vs[-1, :, :3]).max():.2f} m/s"
    return ""


def main(argv=None):
    global SDF_RESOLUTION
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="steps timed per round and engine")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--scenes", default="box,stack,roll,pile,pinch")
    ap.add_argument("--no-drake", action="store_true")
    ap.add_argument("--no-mujoco", action="store_true")
    ap.add_argument("--sdf-resolution", type=int, default=SDF_RESOLUTION, help="hydro's SDF cells per shape")
    args = ap.parse_args(argv)
    SDF_RESOLUTION = args.sdf_resolution
    engines = [("hydro", hydro_sim)]
    if not args.no_drake:
        engines.append(("Drake", drake_sim))
    if not args.no_mujoco:
        engines.append(("MuJoCo", mujoco_sim))
    rows = []
    for name in args.scenes.split(","):
        sims = {}
        for label, make in engines:
            _, step, sample = make(name, args.dt)
            for _ in range(args.warmup):
                step()
            sims[label] = (step, sample)
        wall = {e: [] for e, _ in engines}
        cpu = {e: [] for e, _ in engines}
        samples = {e: [sims[e][1]()] for e, _ in engines}
        for _ in range(args.rounds):
            for label, _ in engines:
                step, sample = sims[label]
                t0, c0 = time.perf_counter(), time.thread_time()
                for _ in range(args.steps):
                    step()
                wall[label].append((time.perf_counter() - t0) / args.steps * 1e3)
                cpu[label].append((time.thread_time() - c0) / args.steps * 1e3)
                samples[label].append(sample())
        med = {e: (statistics.median(wall[e]), statistics.median(cpu[e])) for e, _ in engines}
        rows.append((name, med, {e: check(name, samples[e], args.dt * args.steps) for e, _ in engines}))
        print(name, {e: f"{w:.3f} / {c:.3f} ms" for e, (w, c) in med.items()}, flush=True)
    print()
    print(f"dt = {args.dt * 1e3:g} ms; ms per step, wall / thread CPU (median of {args.rounds} rounds of "
          f"{args.steps} steps); NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}")
    print()
    head = "| scene | " + " | ".join(f"{e} wall / CPU" for e, _ in engines)
    if "Drake" in dict(engines):
        head += " | hydro ÷ Drake (wall / CPU)"
    print(head + " | checks (hydro; Drake; MuJoCo) |")
    print("|" + "---|" * (head.count("|") + 1))
    for name, med, checks in rows:
        line = f"| {name} | " + " | ".join(f"{med[e][0]:.3f} / {med[e][1]:.3f}" for e, _ in engines)
        if "Drake" in med:
            line += f" | {med['hydro'][0] / med['Drake'][0]:.2f} / {med['hydro'][1] / med['Drake'][1]:.2f}"
        print(line + " | " + "; ".join(checks[e] for e, _ in engines) + " |")


if __name__ == "__main__":
    main()
