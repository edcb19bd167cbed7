"""``hydro run``: step a scene with the built-in solver and record what its sensors read.

Every body gets a :class:`~hydro.sim.sensors.ContactSensor` (one per env-relative body path, with
air/contact times), so a scene needs no sensor definitions. Written to ``DIR``:

| file | contents |
|---|---|
| ``trajectories.npz`` | ``time`` (T,) s; ``body_q`` (T,B,7) poses; ``body_qd`` (T,B,6) velocities; ``body_path`` (B,); ``env_origins`` (E,3) |
| ``sensors.npz`` | ``sensor_names`` (K,), ``body_paths`` (E,K); ``net_normal_forces_w``, ``net_friction_forces_w``, ``net_forces_w`` (T,E,K,3) N; ``in_contact`` (T,E,K) bool; ``time`` (T,) |
| ``forces.png`` | \\|net force\\| of every sensor body of env 0 against time |

T is the number of steps: sample t is taken after step t + 1 (at ``time[t]``).
"""

from __future__ import annotations

import os
import re
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from ..scene.paths import env_of, env_relative, relative_name
from ..sim.sensors import ContactSensorCfg
from ..sim.simulation import Simulation
from .plots import line_plot

__all__ = ["run_scene"]


def body_sensors(sim: Simulation):
    """One sensor per env-relative body path present in every env: ``[(name, sensor)]``."""
    E = sim.num_envs
    groups = {}
    for b, path in enumerate(sim.model.body_path):
        key = ("env", env_relative(path)) if env_of(path) is not None else ("global", path)
        groups.setdefault(key, []).append(b)
    out = []
    for (kind, rel), members in groups.items():
        if len(members) != E or (kind == "global" and E > 1):
            continue  # not one body per env (a body outside /World/envs lives in env 0 only)
        expr = "{ENV_REGEX_NS}" + re.escape(rel) if kind == "env" else re.escape(rel)
        sensor = sim.add_sensor(ContactSensorCfg(prim_path=expr, track_air_time=True, track_friction_forces=True))
        name = relative_name(sim.model.body_path[members[0]])
        out.append((name, sensor))
    return out


def run_scene(scene, *, steps: int, dt: float = 1.0 / 60.0, num_envs: int = 1, out_dir=None, device="cpu",
              stream=None, log=print) -> dict:
    """Run ``steps`` physics steps of ``scene`` and write the files of the module docstring into
    ``out_dir`` (default ``out/<scene name>``); returns ``{name: path}`` of what was written."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"--steps must be an integer >= 1, got {steps!r}")
    sim = Simulation(scene, num_envs=num_envs, dt=dt, device=device)
    sensors = body_sensors(sim)
    names = [n for n, _ in sensors]
    out_dir = out_dir or os.path.join("out", os.path.splitext(os.path.basename(os.fspath(scene)))[0])
    os.makedirs(out_dir, exist_ok=True)
    m = sim.model
    B, E, K = m.body_count, m.num_envs, len(sensors)
    t = np.empty(steps)
    body_q = np.empty((steps, B, 7))
    body_qd = np.empty((steps, B, 6))
    fn = np.zeros((steps, E, K, 3))
    ft = np.zeros((steps, E, K, 3))
    touching = np.zeros((steps, E, K), dtype=bool)
    log(f"scene        {scene}: {B} bodies, {m.shape_count} shapes, {E} env(s); dt {dt:g} s x {steps} steps, "
        f"{sim.substeps} sub-steps each ({'auto' if sim.stability.auto else 'given'})")
    # steps done, rate and ETA: a widget in notebooks, a line redrawn on a terminal, about every
    # 10% when stderr (or ``stream``) is a file or a pipe (logs stay short)
    out = sys.stderr if stream is None else stream
    tty = bool(getattr(out, "isatty", lambda: False)())
    bar = tqdm(total=steps, unit="step", desc="simulating", file=out, dynamic_ncols=True,
               **({} if tty else {"mininterval": 0.0, "miniters": max(1, steps // 10)}))
    t0 = time.perf_counter()
    try:
        for i in range(steps):
            sim.step()
            t[i] = sim.time
            body_q[i] = sim.state.body_q
            body_qd[i] = sim.state.body_qd
            for k, (_, s) in enumerate(sensors):
                d = s.data
                fn[i, :, k] = d.net_normal_forces_w[:, 0]
                ft[i, :, k] = d.net_friction_forces_w[:, 0]
                touching[i, :, k] = d.current_contact_time[:, 0] > 0
            bar.set_postfix_str(f"t={sim.time:.3f} s", refresh=False)
            bar.update(1)
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    files = {}
    files["trajectories"] = os.path.join(out_dir, "trajectories.npz")
    np.savez(files["trajectories"], time=t, body_q=body_q, body_qd=body_qd, body_path=np.array(m.body_path),
             env_origins=m.env_origins)
    files["sensors"] = os.path.join(out_dir, "sensors.npz")
    paths = np.array([[s.body_paths[e][0] for _, s in sensors] for e in range(E)]).reshape(E, K)
    np.savez(files["sensors"], time=t, sensor_names=np.array(names, dtype=str).reshape(K), body_paths=paths,
             net_normal_forces_w=fn, net_friction_forces_w=ft, net_forces_w=fn + ft, in_contact=touching)
    files["plot"] = os.path.join(out_dir, "forces.png")
    series = [(n, np.linalg.norm(fn[:, 0, k] + ft[:, 0, k], axis=-1)) for k, n in enumerate(names)]
    line_plot(files["plot"], t, series, title=f"{os.path.basename(os.fspath(scene))}: net contact force on each "
              f"sensor body (env 0)", xlabel="time", xunit="s", ylabel="|net contact force|", yunit="N")
    log(f"time         {sim.time:.4g} s simulated in {wall:.2f} s ({steps / max(wall, 1e-9):.1f} steps/s)")
    for k, n in enumerate(names):
        f = fn[-1, 0, k] + ft[-1, 0, k]
        peak = np.linalg.norm(fn[:, 0, k] + ft[:, 0, k], axis=-1).max()
        log(f"sensor       {n}: net force ({f[0]:.4g}, {f[1]:.4g}, {f[2]:.4g}) N at the end, peak {peak:.4g} N (env 0)")
    for name, path in files.items():
        log(f"wrote        {path}")
    return files
