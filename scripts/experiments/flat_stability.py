"""Flat-on-flat stability: a box resting and sliding on a hydroelastic patch vs point contacts.

    python scripts/experiments/flat_stability.py [--quick]

The jumping-point problem: when a flat face rests on a flat face, a contact generator that
reports one point (the deepest) picks an arbitrary corner, and the next step another one; the
force jumps from corner to corner, producing torque spikes and a rocking pose. A hydroelastic
patch carries the pressure over the whole face instead.

Scene: a 0.1 m box (500 kg/m³, 0.5 kg) on a static 1 × 1 × 0.2 m ground box, both hydroelastic
with k = 1e6 N/m³ (soft enough that the automatic sub-step count stays small: about 1 mm of
sink under its weight), SDF resolution 64, friction 0.1, simulated with
:class:`hydro.sim.simulation.Simulation` at dt = 1/60 s (automatic sub-steps, critically damped
normal contact). Two motions, 2 s each:

- ``resting``: the box starts 1 mm into the ground (about its equilibrium), at rest;
- ``sliding``: the same, with 0.5 m/s along x; friction stops it after about 0.5 s.

Three contact models, the same scene and solver:

- ``hydroelastic``: the pipeline's reduced patch (``max_contacts_per_pair`` 32);
- ``point contacts``: the real default contact path (``HydroelasticConfig.enabled = False``
  routes the pair there): box–box face clipping, four corner points at their true depths, each
  with the materials' default contact stiffness (1e5 N/m per shape, in series) and the solver's
  damping-ratio rule;
- ``single point``: per pair, one contact at the deepest triangle of the voxel patch
  (``flat_polygons=False``: sampled like a point-contact generator), carrying the patch's
  whole normal force (its stiffness set to F/|depth| there, so c·|d| = F): where a point-contact
  generator would put it. It wraps the same pipeline (``SinglePointPipeline``), so only where
  the force acts differs.

Recorded every step: the box's height, tilt (angle of its z axis from vertical), lateral offset
and the contact torque about its centre of mass. Reported per (motion, model): the standard
deviation of the height (µm) and the RMS tilt (mrad) over the second half of the run (after the
initial settling, and after the slide has stopped), the RMS torque about the centre of mass and
the RMS of its step-to-step change (N·m: torque noise), the lateral drift across the slide
direction (mm), and, for the single point, how often the point jumped by more than half the box.
Writes ``out/experiments/flat_stability.{csv,png}`` (per-step series). ``--quick``: 0.5 s runs at
resolution 32.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

from hydro.contact.config import HydroelasticConfig  # noqa: E402
from hydro.geometry import Box  # noqa: E402
from hydro.scene.model import ModelBuilder  # noqa: E402
from hydro.sdf import SDFSettings  # noqa: E402
from hydro.transforms import quat_rotate  # noqa: E402
from hydro.contact.types import CollisionResult, Contacts  # noqa: E402

NAME = "flat_stability"
SIZE = 0.1
STIFFNESS = 1e6
FRICTION = 0.1
SINK = 0.001
MODELS = ("hydroelastic", "point contacts", "single point")


class SinglePointPipeline:
    """A pipeline whose contacts are one per pair: the deepest patch triangle, carrying the
    patch's total normal force (stiffness F/|depth|). Every other attribute is the wrapped one's."""

    def __init__(self, pipeline):
        self._inner = pipeline

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def collide(self, shape_poses, **kwargs):
        res = self._inner.collide(shape_poses, **kwargs)
        patch = res.patch
        live = (~patch.speculative) & (patch.depth < 0) & (patch.force > 0)
        rows, force = [], []
        for p in range(len(res.pair_shape_a)):
            idx = np.flatnonzero(live & (patch.pair == p))
            if len(idx):
                rows.append(idx[np.argmin(patch.depth[idx])])
                force.append(float(patch.force[idx].astype(np.float64).sum()))
        one = patch.select(np.asarray(rows, dtype=np.int64)) if rows else Contacts.empty(0)
        if rows:
            one.force = np.asarray(force, np.float32)
            one.stiffness = (one.force / np.abs(one.depth)).astype(np.float32)
            one.area = np.asarray([float(patch.area[live & (patch.pair == p)].sum()) for p in one.pair], np.float32)
        return CollisionResult(one, res.pair_shape_a, res.pair_shape_b, patch=patch, overflow=res.overflow,
                               timings_ms=res.timings_ms, counts=res.counts)


def build_scene(resolution=64, velocity=0.0):
    b = ModelBuilder()
    sdf = SDFSettings(max_resolution=resolution)
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.2)), local_pose=(0, 0, -0.1, 0, 0, 0, 1), hydroelastic=True,
                stiffness=STIFFNESS, sdf=sdf, static_friction=FRICTION, dynamic_friction=FRICTION)
    body = b.add_body("/World/Box", (-0.1 if velocity else 0.0, 0, SIZE / 2 - SINK, 0, 0, 0, 1), density=500.0,
                      velocity=(velocity, 0.0, 0.0))
    b.add_shape("/World/Box/Collider", Box((SIZE,) * 3), body=body, hydroelastic=True, stiffness=STIFFNESS, sdf=sdf,
                static_friction=FRICTION, dynamic_friction=FRICTION)
    return b.finalize()


def run_case(model_kind: str, motion: str, *, duration=2.0, resolution=64, dt=1.0 / 60.0) -> list:
    """Per-step rows of one (contact model, motion) run."""
    from hydro.sim.simulation import Simulation

    velocity = 0.5 if motion == "sliding" else 0.0
    model = build_scene(resolution, velocity)
    # the single point is the deepest of the voxel patch's triangles (what a point generator samples);
    # a box pair's exact polygons are equally deep over the face and would pin it to one triangle
    sim = Simulation(model, dt=dt, config=HydroelasticConfig(max_contacts_per_pair=32,
                                                             enabled=model_kind != "point contacts",
                                                             flat_polygons=model_kind != "single point"))
    if model_kind == "single point":
        sim.pipeline = SinglePointPipeline(sim.pipeline)
    rows = []
    last_point = None
    for step in range(int(round(duration / dt))):
        sim.step()
        q = sim.state.body_q[0]
        com = q[:3] + quat_rotate(q[3:], np.asarray(model.body_com[0], float))
        up = quat_rotate(q[3:], np.array([0.0, 0.0, 1.0]))
        f = sim.last_frame
        on_box = np.where(f.body_b == 0, 1.0, np.where(f.body_a == 0, -1.0, 0.0))
        force = (f.normal_force + f.friction_force) * on_box[:, None]
        torque = np.cross(f.point - com, force).sum(axis=0) if len(f) else np.zeros(3)
        fn = np.linalg.norm(f.normal_force, axis=1)
        point = (f.point * fn[:, None]).sum(axis=0) / fn.sum() if len(f) and fn.sum() > 0 else np.full(3, np.nan)
        jump = bool(last_point is not None and np.linalg.norm(point[:2] - last_point[:2]) > SIZE / 2)
        last_point = point
        rows.append({"model": model_kind, "motion": motion, "step": step, "time": (step + 1) * dt,
                     "height": float(com[2]), "tilt": float(np.arccos(np.clip(up[2], -1.0, 1.0))),
                     "x": float(com[0]), "y": float(com[1]), "vx": float(sim.state.body_qd[0, 0]),
                     "torque_x": float(torque[0]), "torque_y": float(torque[1]), "torque_z": float(torque[2]),
                     "contact_count": len(f), "point_x": float(point[0]), "point_y": float(point[1]),
                     "point_jump": jump, "substeps": sim.substeps})
    return rows


def summarize(rows) -> dict:
    """(motion, model) → jitter and torque-noise numbers (units in the module docstring)."""
    out = {}
    for key in dict.fromkeys((r["motion"], r["model"]) for r in rows):
        s = [r for r in rows if (r["motion"], r["model"]) == key]
        late = s[len(s) // 2:]
        torque = np.array([[r["torque_x"], r["torque_y"], r["torque_z"]] for r in s])
        tmag = np.linalg.norm(torque, axis=1)
        out[key] = {
            "height_std_um": float(np.std([r["height"] for r in late]) * 1e6),
            "tilt_rms_mrad": float(np.sqrt(np.mean([r["tilt"] ** 2 for r in late])) * 1e3),
            "tilt_max_mrad": float(max(r["tilt"] for r in s) * 1e3),
            "torque_rms": float(np.sqrt(np.mean(tmag**2))),
            "torque_step_rms": float(np.sqrt(np.mean(np.sum(np.diff(torque, axis=0) ** 2, axis=1)))) if len(s) > 1
            else 0.0,
            "lateral_drift_mm": float((s[-1]["y"] - s[0]["y"]) * 1e3),
            "slide_mm": float((s[-1]["x"] - s[0]["x"]) * 1e3),
            "point_jumps": int(sum(r["point_jump"] for r in s)),
        }
    return out


def plot(rows, path):
    plt = _common.pyplot()
    if plt is None:
        return None
    motions = list(dict.fromkeys(r["motion"] for r in rows))
    fig, axes = plt.subplots(len(motions), 3, figsize=(14, 3.8 * len(motions)), squeeze=False)
    for i, motion in enumerate(motions):
        for model_kind, style in (("hydroelastic", "-"), ("point contacts", "-"), ("single point", "-")):
            s = [r for r in rows if r["motion"] == motion and r["model"] == model_kind]
            if not s:
                continue
            t = [r["time"] for r in s]
            axes[i, 0].plot(t, [(r["height"] - SIZE / 2) * 1e3 for r in s], style, lw=1, label=model_kind)
            axes[i, 1].plot(t, [r["tilt"] * 1e3 for r in s], style, lw=1, label=model_kind)
            axes[i, 2].plot(t, [np.hypot(r["torque_x"], r["torque_y"]) for r in s], style, lw=1, label=model_kind)
        axes[i, 0].set_ylabel(f"{motion}: centre height − 0.05 m (mm)")
        axes[i, 1].set_ylabel("tilt (mrad)")
        axes[i, 2].set_ylabel("|tipping torque| about the COM (N·m)")
        for ax in axes[i]:
            ax.set_xlabel("time (s)")
            ax.legend(fontsize=8)
            ax.grid(True, lw=0.3)
    return _common.save(fig, path)


def main(argv=None) -> int:
    args = _common.parse_args(__doc__, argv)
    try:
        import hydro.sim.simulation  # noqa: F401
    except ImportError:
        print(f"# {NAME}: needs hydro.sim.simulation, which this checkout does not have", file=sys.stderr)
        return 2
    duration, resolution = (0.5, 32) if args.quick else (2.0, 64)
    rows = []
    for motion in ("resting", "sliding"):
        for model_kind in MODELS:
            rows += run_case(model_kind, motion, duration=duration, resolution=resolution)
    csv = _common.write_csv(rows, os.path.join(args.out, NAME + ".csv"))
    png = plot(rows, os.path.join(args.out, NAME + ".png"))
    s = summarize(rows)
    lines = [f"{'motion':<8} {'model':<14} {'height std µm':>13} {'tilt rms mrad':>13} {'tilt max mrad':>13} "
             f"{'torque rms':>10} {'Δtorque rms':>11} {'drift y mm':>10} {'slide mm':>8} {'jumps':>5}"]
    for (motion, model_kind), v in s.items():
        lines.append(f"{motion:<8} {model_kind:<14} {v['height_std_um']:>13.3f} {v['tilt_rms_mrad']:>13.3f} "
                     f"{v['tilt_max_mrad']:>13.3f} {v['torque_rms']:>10.4f} {v['torque_step_rms']:>11.4f} "
                     f"{v['lateral_drift_mm']:>10.3f} {v['slide_mm']:>8.1f} {v['point_jumps']:>5}")
    _common.report(NAME, [csv, png], lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
