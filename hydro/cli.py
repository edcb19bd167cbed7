"""The ``hydro`` command line (also ``python -m hydro``).

Errors are one line on stderr, never a traceback (``HYDRO_DEBUG=1`` shows it); a scene that
breaks the schema rules also gets its first findings, one per line, in ``hydro validate``'s
``CODE SEVERITY PRIM_PATH: message`` form. Warnings are ``hydro CMD: warning: ...`` lines.

| exit status | meaning |
|---|---|
| 0 | done |
| 1 | ``hydro validate`` found errors |
| 2 | bad input: an argument, a file, a scene, a budget (:class:`~hydro.errors.HydroError`, ``ValueError``, ``OSError``), or out of memory |
| 3 | an internal error (a bug, or an input hydro does not check yet): the line names the exception |
| 130 | interrupted (Ctrl-C, from the first instant: one line, nothing written; :mod:`hydro._signals`); ``hydro run`` writes what it simulated first and says so |

``--out`` means exactly the path given: ``collide --out FILE`` writes FILE (no extension added)
and refuses a folder; ``run --out DIR`` writes into the folder DIR (made if missing) and refuses a
file. Files appear whole or not at all (:mod:`hydro.tools.outputs`). Before any work, every output
path is refused when it is a link, a FIFO, a device, the command's input or read-only (what is
there would be destroyed), or ends in ``/``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

from . import _signals
from .errors import HydroError, InputError, SceneError
from .tools.flags import SDF_FLAGS, UsageError, sdf_settings  # noqa: F401  (SDF_FLAGS: hydro.cli's names)
from .tools.flags import sdf_resolution as _sdf_resolution

#: Findings of an invalid scene printed under its error line (``hydro validate`` lists them all).
FINDINGS_SHOWN = 5


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (``hydro run: error: argument --steps: ...``)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _integer(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _positive(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _check_sdf_grid(text, geometry, settings) -> None:
    """Refuse absurd sizes (the scene rules' range, ``HYDRO.GEO.002``) and grids over the SDF budget."""
    from .budget import check_sdf_memory
    from .scene.validate import MAX_LENGTH, MIN_LENGTH

    with np.errstate(all="ignore"):
        lo, hi = (np.asarray(v, dtype=float) for v in geometry.local_aabb())
        size = float(np.max(hi - lo))
    if not (math.isfinite(size) and MIN_LENGTH <= size <= MAX_LENGTH):
        raise InputError(f"shape {text}: {size:.3g} m across is outside the {MIN_LENGTH:g} .. {MAX_LENGTH:g} m hydro "
                         "handles (lengths are in metres)")
    setting = "raise --voxel-size" if settings.target_voxel_size else "lower --resolution"
    check_sdf_memory(geometry, settings, what=f"shape {text}", setting=setting)


def _cmd_sdf(args) -> int:
    from .errors import HydroWarning
    from .geometry import Mesh, parse_shape
    from .sdf import build_sdf, report

    geometry = parse_shape(args.shape)
    settings = sdf_settings(
        max_resolution=args.resolution,
        target_voxel_size=args.voxel_size,
        narrow_band_inner=args.band_inner,
        narrow_band_outer=args.band_outer,
        padding=args.padding,
        texture_format=args.format,
    )
    _check_sdf_grid(args.shape, geometry, settings)
    build_sdf(geometry, settings)  # the first build compiles (or loads) the kernels
    sdf = build_sdf(geometry, settings)
    print(report(sdf))
    if sdf.settings.texture_format != "float32" and sdf.quantization_step > 0.5 * sdf.voxel_size:
        warnings.warn(f"the band's storage step ({sdf.quantization_step:.3g} m) is coarser than half a voxel "
                      f"({sdf.voxel_size:.3g} m): narrow the band (--band-inner/--band-outer) or use --format float32",
                      HydroWarning, stacklevel=2)

    # error against the exact distance on random points in the box
    rng = np.random.default_rng(args.seed)
    pts = rng.uniform(sdf.box_lo, sdf.box_hi, size=(args.points, 3))
    exact = geometry.phi(pts)
    sdf.sample(pts[:16])  # compile the sampler before timing it
    t0 = time.perf_counter()
    sampled = sdf.sample(pts)
    dt = time.perf_counter() - t0
    err = np.abs(sampled - exact)
    band = (exact >= settings.narrow_band_inner) & (exact <= settings.narrow_band_outer)
    near = np.abs(exact) <= 2.0 * sdf.voxel_size
    h = sdf.voxel_size

    def row(name, mask):
        if not mask.any():
            return f"  {name:<22} (no points)"
        e = err[mask]
        wrong = np.sum((np.sign(sampled[mask]) != np.sign(exact[mask])) & (np.abs(exact[mask]) > 1e-3 * h))
        return (f"  {name:<22} {mask.sum():>8d} pts  max {e.max() * 1e3:9.4f} mm ({e.max() / h:6.3f} voxel)"
                f"  rms {np.sqrt(np.mean(e * e)) * 1e3:9.4f} mm  wrong sign {wrong}")

    reference = "exact" if not isinstance(geometry, Mesh) else (
        "the reference (sign from the winding number of the mesh as given; distance to its nearest triangle "
        "outside, to the solid's surface inside)")
    print(f"error vs {reference} on {args.points} random points in the box (seed {args.seed}):")
    print(row("whole box", np.ones(len(pts), dtype=bool)))
    print(row("in the band", band))
    print(row("within 2 voxels of φ=0", near))
    print(f"sampling     {args.points / dt / 1e6:.1f} M points/s (CPU, {os.environ.get('NUMBA_NUM_THREADS', 'all')} threads)")
    return 0


def check_device_flag(device: str) -> None:
    """``--device cuda`` on a machine without a usable GPU: one line in the flag's words."""
    if device != "cuda":
        return
    from .backend import get_device

    try:
        get_device("cuda")
    except ValueError as exc:
        extra = " (pip install 'hydro[cuda]' for Numba's CUDA target)" if "not installed" in str(exc) else ""
        raise UsageError(f"--device cuda: no CUDA GPU is available here{extra}; use --device cpu "
                         "(or --device auto: the GPU when there is one, else the CPU)") from None


def _collide_config(args):
    from dataclasses import replace

    from .contact.config import active_config

    collision_cfg = active_config().collision_cfg
    if args.no_reduce:
        collision_cfg = replace(collision_cfg, hydroelastic=replace(collision_cfg.hydroelastic, reduce_contacts=False))
    return collision_cfg


def _cmd_collide(args) -> int:
    import json

    from .contact.collision import CollisionPipeline
    from .contact.types import CONTACT_KIND_NAMES
    from .scene.usd_io import load_usd
    from .tools.outputs import atomic_file, output_file

    if args.out is not None:
        output_file(args.out, inputs=[args.scene])  # before any work: a folder, a link, a FIFO, the scene
    check_device_flag(args.device)
    model = load_usd(args.scene)
    cfg = _collide_config(args)
    pipe = CollisionPipeline(model, cfg, device=args.device, stage_timings=args.stage_timings)
    poses = model.shape_world_poses(model.state())
    t0 = time.perf_counter()
    build = pipe.hydroelastic.next_build
    pipe.collide(poses)  # the first call compiles (or loads) the kernels
    if pipe.hydroelastic.next_build != build:
        pipe.collide(poses)  # a scene big enough for threads: their build compiles now, not in the timed call
    first_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    result = pipe.collide(poses)
    call_ms = (time.perf_counter() - t0) * 1e3
    contacts = result.contacts
    paths = model.shape_path
    pairs = []
    for s in result.pair_summaries():
        pairs.append({
            "shape_a": paths[s.shape_a], "shape_b": paths[s.shape_b], "kind": CONTACT_KIND_NAMES[s.kind],
            "contact_count": s.contact_count,
            "net_force": [float(v) for v in s.net_force], "net_torque": [float(v) for v in s.net_torque],
            "patch_area": float(s.patch_area),
            "center_of_pressure": [None if not np.isfinite(v) else float(v) for v in s.center_of_pressure],
        })
    _signals.check()  # an interrupt that a library swallowed: no output
    overflow = None
    if result.overflow:
        overflow = {o.setting: {"capacity": o.capacity, "required": o.required} for o in result.overflow}
    if args.out is not None:
        table = contacts.as_dict()
        with atomic_file(args.out) as tmp, open(tmp, "wb") as fh:  # a file object: no ".npz" is appended
            np.savez(fh, **table, shape_paths=np.array(paths), pair_shape_a=result.pair_shape_a,
                     pair_shape_b=result.pair_shape_b, pair_kind=result.pair_kind)
    if args.json:
        print(json.dumps({"pairs": pairs, "contact_count": len(contacts), "overflow": overflow,
                          "timings_ms": {k: round(v, 4) for k, v in result.timings_ms.items()}}))
        return 0
    print(f"scene        {args.scene}: {len(paths)} shapes, {len(model.body_path)} bodies, device {pipe.device.name}")
    n_point = int((contacts.kind != 0).sum())
    n_hyd = len(contacts) - n_point
    if n_hyd == 0 and result.counts.get("triangles", 0) == 0:  # no patch: nothing was reduced
        hyd_text = "0 hydroelastic"
    elif cfg.hydroelastic.reduce_contacts:
        hyd_text = f"{n_hyd} hydroelastic, reduced from {result.counts.get('triangles', 0)} patch triangles"
    else:
        hyd_text = f"{n_hyd} hydroelastic, patch triangles, unreduced"
    print(f"contacts     {len(contacts)} ({hyd_text}; {n_point} point)")
    for pr in pairs:
        f = pr["net_force"]
        cop = pr["center_of_pressure"]
        cop_text = "-" if cop[0] is None else "(" + ", ".join(f"{v:.5f}" for v in cop) + ") m"
        print(f"pair         {pr['shape_a']} -> {pr['shape_b']} ({pr['kind']}): {pr['contact_count']} contacts, force on B "
              f"({f[0]:.4g}, {f[1]:.4g}, {f[2]:.4g}) N, area {pr['patch_area'] * 1e4:.4g} cm², "
              f"centre of pressure {cop_text}")
    if overflow:
        for o in result.overflow:
            print(f"overflow     {o.message()}")
    stages = ", ".join(f"{k} {v:.3f}" for k, v in result.timings_ms.items())
    print(f"time         {call_ms:.3f} ms per call ({stages} ms); first call {first_ms:.0f} ms")
    if args.out is not None:
        print(f"wrote        {args.out}")
    return 0


def _cmd_validate(args) -> int:
    """``hydro validate SCENE``: print every finding, return 1 if any is an error, else 0."""
    from .scene.usd_io import validate_usd
    from .scene.validate import ERROR, WARNING

    findings = validate_usd(args.scene)
    _signals.check()
    for f in findings:
        print(f)
    n_err = sum(f.severity == ERROR for f in findings)
    n_warn = sum(f.severity == WARNING for f in findings)
    print(f"{args.scene}: {n_err} error(s), {n_warn} warning(s)", file=sys.stderr)
    return 1 if n_err else 0


#: Entry-point group through which other packages add subcommands (``viz`` adds ``view``): each
#: entry point names a function ``register(subparsers)`` that adds its parser and sets ``func``.
COMMAND_GROUP = "hydro.commands"


def _plugin_commands():
    from importlib.metadata import entry_points

    return sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name)


def _cmd_run(args) -> int:
    from .tools.outputs import output_folder
    from .tools.run import OUTPUT_FILES, run_scene

    check_device_flag(args.device)
    if args.out is not None:  # named as the user typed it (run_scene checks it again as out_dir)
        output_folder(args.out, option="--out", inputs=[args.scene], files=OUTPUT_FILES)
    run_scene(args.scene, steps=args.steps, dt=args.dt, num_envs=args.num_envs, out_dir=args.out, device=args.device,
              solver=args.solver)
    return 0


def _cmd_example(args) -> int:
    from .tools.examples import run_example

    return run_example(args.name, **({"steps": args.steps} if args.steps is not None else {}))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hydro", description="SDF-based hydroelastic contact with visual debugging.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("sdf", help="build one shape's SDF and report its grid, memory, time and error")
    s.add_argument("shape", help="sphere:R | box:SX,SY,SZ | capsule:R,H | cylinder:R,H | cone:R,H | "
                                 "ellipsoid:A,B,C | mesh:PATH")
    s.add_argument("--resolution", type=_sdf_resolution, default=64,
                   help="voxels along the longest axis (a multiple of 8)")
    s.add_argument("--voxel-size", type=_positive, default=None, help="target voxel size in m (wins over --resolution)")
    s.add_argument("--format", default="uint16", choices=["uint8", "uint16", "float32"],
                   help="how the band's samples are stored (default uint16)")
    s.add_argument("--band-inner", type=float, default=-0.1, help="narrow band inner extent in m (< 0)")
    s.add_argument("--band-outer", type=float, default=0.1, help="narrow band outer extent in m (> 0)")
    s.add_argument("--padding", type=float, default=None, help="padding in m (default 4 voxels)")
    s.add_argument("--points", type=_integer(1), default=200_000, help="random points for the error report")
    s.add_argument("--seed", type=_integer(0), default=0)
    s.set_defaults(func=_cmd_sdf)

    c = sub.add_parser("collide", help="run the contact pipeline once at the scene's authored poses")
    c.add_argument("scene", help="a .usda/.usd/.usdc file")
    c.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    c.add_argument("--no-reduce", action="store_true", help="report every patch triangle (no contact reduction)")
    c.add_argument("--out", metavar="FILE", help="write the contact table (.npz format) to exactly this file")
    c.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    c.add_argument("--stage-timings", action="store_true",
                   help="time each hydroelastic stage on its own (broad_phase, pair_setup, refine, marching_cubes, "
                        "reduce, ...) instead of the CPU's single compiled call ('stages'); compiles more on first use")
    c.set_defaults(func=_cmd_collide)

    for ep in _plugin_commands():  # e.g. ``view`` from viz (hydro itself never imports the viewer)
        ep.load()(sub)

    r = sub.add_parser("run", help="step a scene with the built-in solver; write trajectories, sensor data and a plot")
    r.add_argument("scene", help="a .usda/.usd/.usdc file")
    r.add_argument("--steps", type=_integer(1), required=True, help="physics steps to run")
    r.add_argument("--dt", type=_positive, default=1.0 / 60.0, help="physics step in s (default 1/60)")
    r.add_argument("--num-envs", type=_integer(1), default=1, help="replicate the scene's env_0 (or the whole scene) "
                                                                   "E times")
    r.add_argument("--out", metavar="DIR", help="output folder (default out/<scene name>)")
    r.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    r.add_argument("--solver", default="implicit", choices=["implicit", "explicit"],
                   help="implicit (default: one solve per step) or explicit (the penalty solver's sub-steps)")
    r.set_defaults(func=_cmd_run)

    from .tools.examples import EXAMPLES

    e = sub.add_parser("example", help="run a commented example from hydro/tools/examples")
    e.add_argument("name", choices=sorted(EXAMPLES), help="; ".join(f"{k}: {v[1]}" for k, v in EXAMPLES.items()))
    e.add_argument("--steps", type=_integer(1), default=None, help="physics steps (default: the example's own)")
    e.set_defaults(func=_cmd_example)

    from .tools.mesh_tool import add_mesh_parser

    add_mesh_parser(sub)  # ``hydro mesh check`` / ``hydro mesh repair``

    v = sub.add_parser("validate", help="check a USD scene against the schema rules (exit 1 on any error)")
    v.add_argument("scene", help="a .usda/.usd/.usdc file")
    v.set_defaults(func=_cmd_validate)
    return p


def _report(command: str, exc: BaseException, scene: str = "SCENE") -> int:
    """Print ``exc`` as the command's error (see the module docstring); its exit status."""
    if isinstance(exc, MemoryError):
        print(f"{command}: error: out of memory ({exc or 'an allocation failed'}): a setting asks for more memory "
              "than this machine has (a resolution, the number of envs, a buffer capacity)", file=sys.stderr)
        return 2
    if not isinstance(exc, (HydroError, ValueError, OSError, RuntimeError)):
        first = (str(exc).splitlines() or [""])[0]
        print(f"{command}: internal error: {type(exc).__name__}: {first} (a bug in hydro, or an input it does not "
              "check yet; HYDRO_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 3
    lines = [line for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    if isinstance(exc, SceneError) and exc.findings:
        details = [str(f) for f in exc.findings]
        lines = lines[:1]
    else:  # until every scene error is a SceneError: the finding lines follow the first line
        details = lines[1:]
    print(f"{command}: error: {lines[0]}", file=sys.stderr)
    for line in details[:FINDINGS_SHOWN]:
        print(line.strip(), file=sys.stderr)
    if len(details) > FINDINGS_SHOWN:
        print(f"... and {len(details) - FINDINGS_SHOWN} more (hydro validate {scene} lists every finding)",
              file=sys.stderr)
    return 2


def main(argv=None) -> int:
    from .backend import configure_runtime

    parser = build_parser()
    args = parser.parse_args(argv)
    command = f"hydro {args.command}"
    configure_runtime(announce_compiles=True)

    def show_warning(message, category, filename, lineno, file=None, line=None):
        print(f"{command}: warning: {message}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show_warning
        if not os.environ.get("HYDRO_DEBUG"):  # NumPy's floating-point notes are noise on a command line
            warnings.filterwarnings("ignore", message=r"(invalid value|overflow|divide by zero|underflow) encountered")
        _signals.working(command)  # Ctrl-C raises and is remembered (a library may swallow the raise)
        try:
            status = int(args.func(args) or 0)
            _signals.check()  # swallowed somewhere and never seen again: still an interrupt
            return status
        except KeyboardInterrupt as exc:
            print(f"{command}: {str(exc) or 'interrupted'}", file=sys.stderr)
            return 130
        except Exception as exc:  # noqa: BLE001 - the command line never shows a traceback
            if _signals.pending():  # a Ctrl-C that a library turned into another error
                print(f"{command}: interrupted", file=sys.stderr)
                return 130
            if os.environ.get("HYDRO_DEBUG"):
                raise
            return _report(command, exc, getattr(args, "scene", None) or "SCENE")
        finally:
            _signals.finished()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
