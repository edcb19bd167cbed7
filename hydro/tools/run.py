"""``hydro run``: step a scene with the built-in (implicit) solver and record what its sensors read.

Every body gets a :class:`~hydro.sim.sensors.ContactSensor` (one per env-relative body path, with
air/contact times), so a scene needs no sensor definitions. Written to ``DIR``:

| file | contents |
|---|---|
| ``trajectories.npz`` | ``time`` (T,) s; ``body_q`` (T,B,7) poses; ``body_qd`` (T,B,6) velocities; ``body_path`` (B,); ``env_origins`` (E,3) |
| ``sensors.npz`` | ``sensor_names`` (K,), ``body_paths`` (E,K); ``net_normal_forces_w``, ``net_friction_forces_w``, ``net_forces_w`` (T,E,K,3) N; ``in_contact`` (T,E,K) bool; ``time`` (T,) |
| ``forces.png`` | \\|net force\\| of every sensor body of env 0 against time |

T is the number of steps: sample t is taken after step t + 1 (at ``time[t]``).

The summary names the envs it describes: env 0 (as the plot), and with several envs the spread
of every sensor's peak over all of them. Before stepping it warns about bodies that have nothing
beneath them in some envs only (a ground smaller than the env grid), after stepping about bodies
that left the ground or the scene's bounds (:mod:`hydro.tools.support`).

The files appear whole or not at all (:mod:`hydro.tools.outputs`: temporary files in ``DIR``,
renamed together at the end). Ctrl-C while stepping stops the run and writes the steps simulated
so far (T smaller than ``steps``), then raises :class:`~hydro.errors.Interrupted` saying so;
Ctrl-C while writing lets the files finish (a second Ctrl-C abandons them: nothing is written).
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
import warnings

import numpy as np
from tqdm.auto import tqdm

from .. import _signals
from ..arguments import integer
from ..budget import check_memory
from ..errors import HydroWarning, Interrupted
from ..scene.paths import env_of, env_relative, relative_name
from ..sim.sensors import ContactSensorCfg
from ..sim.simulation import Simulation
from .outputs import atomic_files, interrupts_deferred, output_folder
from .plots import line_plot
from .support import departure_warnings, support_warnings

__all__ = ["run_scene", "OUTPUT_FILES"]

#: ``hydro run`` says it is building the envs from this many (a build takes seconds per 10,000).
BUILD_NOTICE_ENVS = 1000
#: Without a terminal the progress line is written about every 10 % of the steps, and at least
#: every this many seconds (slow steps: many envs, fine SDFs).
PROGRESS_SECONDS = 30.0

#: The files ``hydro run`` writes into its folder.
OUTPUT_FILES = ("trajectories.npz", "sensors.npz", "forces.png")


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
        sensor = sim.add_sensor(ContactSensorCfg(prim_path=expr, track_air_time=True, track_friction_forces=True,
                                                 buffer_dtype="float64"))  # for analysis: the sums as they are
        name = relative_name(sim.model.body_path[members[0]])
        out.append((name, sensor))
    return out


def run_scene(scene, *, steps: int, dt: float = 1.0 / 60.0, num_envs: int = 1, out_dir=None, device="cpu",
              stream=None, log=print, solver: str = "implicit") -> dict:
    """Run ``steps`` physics steps of ``scene`` and write the files of the module docstring into
    ``out_dir`` (default ``out/<scene name>``); returns ``{name: path}`` of what was written.
    Warnings (:class:`~hydro.errors.HydroWarning`) say when bodies fall off their ground. ``solver``:
    :class:`~hydro.sim.simulation.Simulation`'s (``"implicit"`` or ``"explicit"``)."""
    steps = integer(steps, "steps", minimum=1)
    out_dir = output_folder(out_dir or os.path.join("out", os.path.splitext(os.path.basename(os.fspath(scene)))[0]),
                            option="out_dir", inputs=[scene], files=OUTPUT_FILES)
    out = sys.stderr if stream is None else stream
    if num_envs >= BUILD_NOTICE_ENVS:  # a build of many envs takes a while: say what is going on
        print(f"building     {num_envs} envs of {scene}…", file=out, flush=True)
    sim = Simulation(scene, num_envs=num_envs, dt=dt, device=device, solver=solver)
    sim.watch_departures = False  # checked over the whole trajectory after the run (departure_warnings)
    sensors = body_sensors(sim)
    names = [n for n, _ in sensors]
    m = sim.model
    B, E, K = m.body_count, m.num_envs, len(sensors)
    # what is recorded per step (time, poses, velocities, sensor forces, contact flags), before allocating it
    check_memory(float(steps) * (8 + B * 13 * 8 + E * K * (6 * 8 + 1)) * 2,  # x2: the files are written from it
                 what=f"recording {steps} steps of {B} {'body' if B == 1 else 'bodies'} and {E * K} sensor(s)",
                 setting="run fewer steps (steps, hydro run --steps), or split the run")
    t = np.empty(steps)
    body_q = np.empty((steps, B, 7))
    body_qd = np.empty((steps, B, 6))
    fn = np.zeros((steps, E, K, 3))
    ft = np.zeros((steps, E, K, 3))
    touching = np.zeros((steps, E, K), dtype=bool)
    log(f"scene        {scene}: {B} bodies, {m.shape_count} shapes, {E} env(s); dt {sim.dt:g} s x {steps} steps, "
        f"{sim.solver} solver, {sim.substeps} sub-step(s) each ({'auto' if sim.stability.auto else 'given'})")
    for message in support_warnings(m, sim.gravity):
        warnings.warn(message, HydroWarning, stacklevel=2)
    # steps done, rate and ETA: a widget in notebooks, a line redrawn on a terminal, about every
    # 10% when stderr (or ``stream``) is a file or a pipe (logs stay short: no maxinterval, whose
    # monitor thread would drop miniters to 1 after one slow step and log every step after it)
    tty = bool(getattr(out, "isatty", lambda: False)())
    bar = tqdm(total=steps, unit="step", desc="simulating", file=out, dynamic_ncols=True,
               **({} if tty else {"mininterval": 0.0, "maxinterval": math.inf, "miniters": max(1, steps // 10)}))
    t0 = time.perf_counter()
    shown = t0
    done = 0
    interrupted = False
    try:
        for i in range(steps):
            _signals.check()  # a Ctrl-C swallowed inside a step (a compile, a library) stops the run here
            sim.step()
            t[i] = sim.time
            body_q[i] = sim.state.body_q
            body_qd[i] = sim.state.body_qd
            for k, (_, s) in enumerate(sensors):
                d = s.data
                fn[i, :, k] = d.net_normal_forces_w[:, 0]
                ft[i, :, k] = d.net_friction_forces_w[:, 0]
                touching[i, :, k] = d.current_contact_time[:, 0] > 0
            done = i + 1
            bar.set_postfix_str(f"t={sim.time:.3f} s", refresh=False)
            if bar.update(1):
                shown = time.perf_counter()
            elif not tty and time.perf_counter() - shown >= PROGRESS_SECONDS:  # slow steps: a line anyway
                bar.refresh()
                shown = time.perf_counter()
    except KeyboardInterrupt:
        interrupted = True
        _signals.clear()  # handled: the steps done are written, as documented
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    if interrupted and done == 0:
        raise Interrupted(f"interrupted before the first of {steps} steps finished: nothing written")
    T = done
    t, body_q, body_qd, fn, ft, touching = (a[:T] for a in (t, body_q, body_qd, fn, ft, touching))
    files = _write(out_dir, scene, m, names, sensors, t, body_q, body_qd, fn, ft, touching)
    log(f"time         {t[-1]:.4g} s simulated in {wall:.2f} s ({T / max(wall, 1e-9):.1f} steps/s)"
        + (f", interrupted after {T} of {steps} steps" if interrupted else ""))
    _summary(names, fn, ft, touching, log)
    for message in departure_warnings(m, body_q, sim.gravity, t):
        warnings.warn(message, HydroWarning, stacklevel=2)
    for name, path in files.items():
        if name != "_late":
            log(f"wrote        {path}")
    late = files.pop("_late")
    if interrupted:
        raise Interrupted(f"interrupted after {T} of {steps} steps (t = {t[-1]:.4g} s): wrote the {T} simulated "
                          f"steps to {out_dir}", files)
    if late:
        raise Interrupted(f"interrupted while writing: finished the files in {out_dir}", files)
    return files


def _write(out_dir, scene, m, names, sensors, t, body_q, body_qd, fn, ft, touching) -> dict:
    """Write the three files together (atomically); ``files["_late"]``: Ctrl-C came meanwhile."""
    E, K = m.num_envs, len(sensors)
    files = {name: os.path.join(out_dir, base) for name, base in zip(("trajectories", "sensors", "plot"), OUTPUT_FILES)}
    held = []
    try:
        with interrupts_deferred("hydro run: finishing the output files (Ctrl-C again to abandon them)") as held:
            os.makedirs(out_dir, exist_ok=True)
            with atomic_files(list(files.values())) as (traj, sens, plot):
                np.savez(traj, time=t, body_q=body_q, body_qd=body_qd, body_path=np.array(m.body_path),
                         env_origins=m.env_origins)
                paths = np.array([[s.body_paths[e][0] for _, s in sensors] for e in range(E)]).reshape(E, K)
                np.savez(sens, time=t, sensor_names=np.array(names, dtype=str).reshape(K), body_paths=paths,
                         net_normal_forces_w=fn, net_friction_forces_w=ft, net_forces_w=fn + ft, in_contact=touching)
                # one line per sensor body, labelled by the body's path in env 0
                series = [(paths[0, k], np.linalg.norm(fn[:, 0, k] + ft[:, 0, k], axis=-1)) for k in range(K)]
                line_plot(plot, t, series, title=f"{os.path.basename(os.fspath(scene))}: net contact force on each "
                          f"sensor body (env 0)", xlabel="time", xunit="s", ylabel="|net contact force|", yunit="N")
            late = bool(held)
            held.clear()
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted twice while writing: abandoned the output files, nothing written to "
                          f"{out_dir}") from None
    files["_late"] = late
    return files


def _summary(names, fn, ft, touching, log):
    """One line per sensor for env 0 (as the plot), and one over all envs when there are several."""
    E = fn.shape[1]
    for k, n in enumerate(names):
        total = fn[:, :, k] + ft[:, :, k]  # (T, E, 3)
        mag = np.linalg.norm(total, axis=-1)
        f = total[-1, 0]
        log(f"sensor       {n} (env 0): net force ({f[0]:.4g}, {f[1]:.4g}, {f[2]:.4g}) N at the end, "
            f"peak {mag[:, 0].max():.4g} N")
        if E > 1:
            peaks = mag.max(axis=0)
            touched = touching[:, :, k].any(axis=0)
            log(f"sensor       {n} (all {E} envs): peak min {peaks.min():.4g} / median {np.median(peaks):.4g} / "
                f"max {peaks.max():.4g} N (env {int(peaks.argmax())}); in contact in {int(touched.sum())} of {E} envs")
