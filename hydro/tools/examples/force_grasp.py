"""A force-controlled grasp: two free fingers squeeze a box with a set force and lift it.

Run it with ``hydro example force-grasp`` (``--steps N`` for a shorter run) and read it as a
template for scripted experiments.

The scene is built here (no USD): a ground, a 5 cm box of 0.2 kg resting on it, and two fingers
(dynamic bodies of 0.1 kg, no joints) either side of it. The fingers are driven two ways at once:

* :meth:`~hydro.sim.simulation.Simulation.apply_force` pushes each one toward the box with
  ``squeeze`` newtons (persistent: it acts every step until cleared), and carries their weight;
* :meth:`~hydro.sim.simulation.Simulation.set_pd_target` holds them in y, z and orientation with
  implicit PD drives (stable at any gain and dt) and leaves x free, so the squeeze sets the grip.

After 0.1 s the PD targets rise 5 cm over 0.4 s. Friction at the two pads can carry at most
2·μ·squeeze: with the default 2.5 N (μ = 0.5) that is 2.5 N > m·g = 1.96 N and the box rides
along (slipping a couple of mm while the lift starts, when it also needs m·a); with ``squeeze=1.5`` it stays on the ground (or slides down the fingers once lifted).
A contact sensor on the box, filtered by finger, reads the grip and the lift.
"""

from __future__ import annotations

import numpy as np

from ...geometry import Box
from ...scene.model import ModelBuilder
from ...sdf import SDFSettings
from ...sim.sensors import ContactSensorCfg
from ...sim.simulation import Simulation

G = 9.81


def build(mu: float = 0.5):
    """The ground, the box (``/World/Box``) and the fingers (``/World/Left``, ``/World/Right``)."""
    sdf = SDFSettings(max_resolution=16)
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((0.3, 0.3, 0.1)), local_pose=[0, 0, -0.05, 0, 0, 0, 1], hydroelastic=True,
                stiffness=1e8, sdf=SDFSettings(max_resolution=32), static_friction=mu, dynamic_friction=mu)
    box = b.add_body("/World/Box", [0, 0, 0.025, 0, 0, 0, 1], mass=0.2)
    b.add_shape("/World/Box/c", Box((0.05, 0.05, 0.05)), body=box, hydroelastic=True, stiffness=1e8, sdf=sdf,
                static_friction=mu, dynamic_friction=mu)
    for name, x in (("Left", -0.036), ("Right", 0.036)):
        finger = b.add_body(f"/World/{name}", [x, 0, 0.035, 0, 0, 0, 1], mass=0.1)
        b.add_shape(f"/World/{name}/c", Box((0.02, 0.04, 0.05)), body=finger, hydroelastic=True, stiffness=1e8,
                    sdf=sdf, static_friction=mu, dynamic_friction=mu)
    return b.finalize()


def main(steps: int = 300, dt: float = 0.002, squeeze: float = 2.5, mu: float = 0.5, log=print) -> int:
    sim = Simulation(build(mu), dt=dt)  # the implicit solver: one solve per 2 ms step

    # -- the fingers: pushed in x by a force, held in y, z and orientation by PD drives ------------
    fingers = sim.find_bodies("/World/(Left|Right)")
    start = sim.state.body_q[fingers].copy()
    gains = dict(stiffness=(0.0, 1e4, 1e4), damping=(0.0, 200.0, 200.0), angular_stiffness=50.0,
                 angular_damping=1.0)
    sim.set_pd_target(fingers, start, **gains)
    sim.apply_force(fingers, [[squeeze, 0, 0], [-squeeze, 0, 0]], persistent=True)  # the squeeze
    sim.apply_force(fingers, [0, 0, 0.1 * G], persistent=True)  # carry the fingers' own weight

    # -- a sensor on the box, one filter column per finger -----------------------------------------
    sensor = sim.add_sensor(ContactSensorCfg("/World/Box", filter_prim_paths_expr=["/World/Left", "/World/Right"],
                                             track_friction_forces=True))
    box = int(sim.find_bodies("/World/Box")[0])
    weight = sim.model.body_mass[box] * G
    log(f"box {sim.model.body_mass[box]:.2f} kg (weight {weight:.3f} N), squeeze {squeeze:.2f} N per finger, "
        f"mu {mu}: friction can carry 2·mu·F = {2 * mu * squeeze:.3f} N")
    log("")
    log("   t (s)  finger z (mm)  box z (mm)  grip L / R (N)   lift L / R (N)")
    every = max(1, steps // 10)
    for i in range(steps):
        t = sim.time
        rise = 0.05 * min(1.0, max(0.0, (t - 0.1) / 0.4))  # lift 5 cm from 0.1 s to 0.5 s
        target = start.copy()
        target[:, 2] += rise
        vz = 0.05 / 0.4 if 0.1 <= t < 0.5 else 0.0
        sim.set_pd_target(fingers, target, velocity=[0, 0, vz, 0, 0, 0], **gains)
        sim.step()
        if (i + 1) % every and i + 1 != steps:
            continue
        d = sensor.data
        grip = np.abs(d.normal_force_matrix_w[0, 0, :, 0])  # each finger's push on the box, along x
        lift = d.friction_force_matrix_w[0, 0, :, 2]
        log(f"{sim.time:8.3f} {(sim.state.body_q[fingers[0], 2] - start[0, 2]) * 1e3:14.2f} "
            f"{(sim.state.body_q[box, 2] - 0.025) * 1e3:11.2f} {grip[0]:8.3f} / {grip[1]:5.3f} "
            f"{lift[0]:8.3f} / {lift[1]:5.3f}")
    d = sensor.data
    log("")
    log(f"box weight {weight:.4f} N; the fingers' friction carries {d.net_friction_forces_w[0, 0, 2]:.4f} N of it; "
        f"the box rose {(sim.state.body_q[box, 2] - 0.025) * 1e3:.1f} mm")
    return 0
