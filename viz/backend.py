"""Polyscope start-up and the few global settings every view shares.

Polyscope is one global state per process: :func:`init` starts it once (a window, or
headless through EGL), later calls only check that the backend asked for is the one running.
"""

from __future__ import annotations

import re
import sys

import numpy as np

_backend = None

#: Backends: a window (GLFW), headless rendering through EGL (real pictures), and a mock
#: that runs every call but renders black (API smoke tests only).
BACKENDS = ("openGL3_glfw", "openGL3_egl", "openGL_mock")


class ViewerError(RuntimeError):
    """Polyscope could not start (no display, no EGL, …); the message says which backend."""


def init(*, headless: bool = False, backend: str | None = None):
    """Start Polyscope once; returns the module. ``headless`` picks EGL (``openGL3_egl``)."""
    global _backend
    import polyscope as ps

    want = backend or ("openGL3_egl" if headless else "openGL3_glfw")
    if want not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {want!r}")
    if _backend is not None:
        if _backend != want:
            raise ViewerError(f"Polyscope is already running with {_backend}; one process cannot switch to {want}")
        return ps
    if want != "openGL3_glfw":
        ps.set_allow_headless_backends(True)
    ps.set_program_name("hydro")
    ps.set_use_prefs_file(False)  # no .polyscope.ini, and ImGui writes no imgui.ini in the working folder
    ps.set_verbosity(0)
    ps.set_print_prefix("[hydro view] ")
    ps.set_errors_throw_exceptions(True)
    ps.set_build_default_gui_panels(want == "openGL3_glfw")
    try:
        ps.init(want)
    except Exception as exc:  # the bindings raise RuntimeError; keep the message one line
        _quiet_shutdown_at_exit()
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        first = re.sub(r"^(\s*\[[^\]]*\]\s*)+", "", first).removeprefix("ERROR: ")
        raise ViewerError(f"Polyscope could not start with {want}: {first}") from exc
    _backend = want
    ps.set_up_dir("z_up")
    ps.set_front_dir("neg_y_front")
    ps.set_ground_plane_mode("none")
    ps.set_background_color((1.0, 1.0, 1.0))
    ps.set_transparency_mode("pretty")
    ps.set_transparency_render_passes(4)
    ps.set_automatically_compute_scene_extents(False)
    return ps


def _quiet_shutdown_at_exit() -> None:
    """Polyscope's bindings shut down at exit and complain when init failed; keep stderr to
    the one error line."""
    previous = sys.unraisablehook

    def hook(unraisable):
        if "Polyscope has not been initialized" in str(unraisable.exc_value):
            return
        previous(unraisable)

    sys.unraisablehook = hook


def running_backend() -> str | None:
    """The backend :func:`init` started, or None."""
    return _backend


def clear() -> None:
    """Remove every structure, group, slice plane and gizmo (a fresh scene, same process)."""
    import polyscope as ps

    ps.remove_all_structures()
    ps.remove_all_groups()
    ps.remove_all_slice_planes()
    ps.remove_all_transformation_gizmos()
    ps.clear_user_callback()


def add_scalar(structure, name, values, **options) -> None:
    """``structure.add_scalar_quantity(name, values, **options)``, tried a second time when
    polyscope's bindings fail to hand back the quantity they just made. Seen once in six CI runs:
    nanobind's "Unable to convert function return value" from ``set_color_map`` (which returns the
    quantity as a raw pointer) after many scenes in one process, the likeliest cause being a
    Python wrapper of an earlier, removed quantity that outlived it at the same address. The
    quantity exists by then but its options are unset; a collection drops such wrappers and adding
    it again (same name: it replaces the first) sets them."""
    try:
        structure.add_scalar_quantity(name, values, **options)
    except TypeError as err:
        if "Unable to convert function return value" not in str(err):
            raise
        import gc

        gc.collect()
        structure.add_scalar_quantity(name, values, **options)


def remove_structures(names) -> None:
    """Remove the structures ``names`` ((kind, name) pairs, kind e.g. ``"surface_mesh"``) that exist."""
    import polyscope as ps

    for kind, name in names:
        if getattr(ps, f"has_{kind}")(name):
            getattr(ps, f"remove_{kind}")(name)


def pose_matrix(pose) -> np.ndarray:
    """4×4 homogeneous matrix of a pose [px, py, pz, qx, qy, qz, qw]."""
    from hydro.transforms import quat_to_matrix

    pose = np.asarray(pose, dtype=float)
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix(pose[3:] / np.linalg.norm(pose[3:]))
    m[:3, 3] = pose[:3]
    return m


def set_scene_extent(lo, hi) -> None:
    """Tell Polyscope how big the scene is (length scale, clip planes) from a world box."""
    import polyscope as ps

    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    ps.set_bounding_box(lo, hi)
    ps.set_length_scale(float(np.linalg.norm(hi - lo)))


def group(name: str):
    """The Polyscope group ``name``, created on first use (groups toggle their structures together)."""
    import polyscope as ps

    try:
        return ps.get_group(name)
    except Exception:
        return ps.create_group(name)
