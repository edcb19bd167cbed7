"""Headless pictures: render a scene through EGL, write a PNG or JPEG, project points to pixels.

    import viz
    image = viz.render("scenes/sphere_on_box.usda", "out.png", camera="iso")  # (H, W, 4) uint8

Cameras (``camera=``): ``"auto"`` (three-quarter view from above; with an SDF slice, the slice
face-on), ``"iso"`` (three-quarter view from above), ``"top"``, ``"front"`` (from −y), ``"side"``
(from +x), each framing everything drawn; or ``"EX,EY,EZ"`` (an eye position, looking at the
centre of that region) or ``"EX,EY,EZ:TX,TY,TZ"`` (eye and target), in metres.

Pictures are written in the format their suffix names (:data:`IMAGE_FORMATS`): ``.png`` (no
dependencies), ``.jpg``/``.jpeg`` (through Pillow, which matplotlib brings); any other suffix is
refused before anything is rendered.
"""

from __future__ import annotations

import math
import os
import struct
import zlib

import numpy as np

from . import backend

CAMERA_DIRECTIONS = {
    "auto": (0.9, -1.5, 1.0),
    "iso": (0.9, -1.5, 1.0),
    "top": (0.0, -1e-3, 1.0),
    "front": (0.0, -1.0, 0.25),
    "side": (1.0, 0.0, 0.25),
}
DEFAULT_SIZE = (1024, 768)
#: picture suffixes and the format written
IMAGE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}


def image_format(path, *, option: str = "screenshot") -> str:
    """The format ``path``'s suffix names (``"PNG"`` or ``"JPEG"``); a clear error for any other
    suffix, or for JPEG without Pillow (checked before anything is rendered). ``option`` names the
    path in the message as the user gave it (``--screenshot`` on the command line)."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in IMAGE_FORMATS:
        raise ValueError(f"{option} {os.fspath(path)!r}: unknown file type {repr(ext) if ext else '(no suffix)'}: "
                         f"the format follows the suffix, one of {', '.join(IMAGE_FORMATS)}")
    fmt = IMAGE_FORMATS[ext]
    if fmt == "JPEG":
        try:
            import PIL.Image  # noqa: F401
        except ImportError:
            raise ValueError(f"{option} {os.fspath(path)!r}: JPEG needs Pillow (pip install pillow); "
                             "or write a .png") from None
    return fmt


def write_image(path, image, *, quality: int = 92) -> None:
    """Write an (H, W, 3|4) uint8 image in the format ``path``'s suffix names (:func:`image_format`);
    the file appears whole or not at all."""
    fmt = image_format(path)
    if fmt == "PNG":
        write_png(path, image)
        return
    from PIL import Image

    from hydro.tools.outputs import atomic_file

    rgb = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[..., :3])
    with atomic_file(path) as tmp:
        Image.fromarray(rgb, mode="RGB").save(tmp, format=fmt, quality=int(quality))


def parse_camera(spec: str, center, radius: float) -> tuple:
    """``(eye, target, up)`` for a camera spec (see the module docstring) framing a sphere."""
    center = np.asarray(center, dtype=float)
    text = (spec or "auto").strip()
    up = np.array([0.0, 0.0, 1.0])
    if text in CAMERA_DIRECTIONS:
        d = np.asarray(CAMERA_DIRECTIONS[text], dtype=float)
        d /= np.linalg.norm(d)
        distance = radius / math.sin(math.radians(45.0) / 2.0) * 1.05
        if text == "top":
            up = np.array([0.0, 1.0, 0.0])
        return center + distance * d, center, up
    try:
        parts = text.split(":")
        if len(parts) > 2:
            raise ValueError
        eye = np.array([float(v) for v in parts[0].split(",")])
        target = np.array([float(v) for v in parts[1].split(",")]) if len(parts) == 2 else center
        if eye.shape != (3,) or target.shape != (3,) or not np.all(np.isfinite(np.r_[eye, target])):
            raise ValueError
    except ValueError:
        raise ValueError(f"camera must be one of {', '.join(CAMERA_DIRECTIONS)}, 'EX,EY,EZ' or "
                         f"'EX,EY,EZ:TX,TY,TZ' (metres), got {spec!r}") from None
    if np.linalg.norm(eye - target) == 0:
        raise ValueError(f"camera eye and target coincide: {spec!r}")
    direction = (eye - target) / np.linalg.norm(eye - target)
    if abs(direction[2]) > 0.999:
        up = np.array([0.0, 1.0, 0.0])
    return eye, target, up


def parse_size(text: str) -> tuple:
    """``"WxH"`` → (W, H), each between 16 and 8192 pixels."""
    try:
        w, h = (int(v) for v in str(text).lower().split("x"))
    except ValueError:
        raise ValueError(f"size must be WIDTHxHEIGHT in pixels, e.g. 1024x768, got {text!r}") from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise ValueError(f"size must be between 16 and 8192 pixels each way, got {text!r}")
    return w, h


def set_camera(spec: str, center, radius: float) -> None:
    import polyscope as ps

    eye, target, up = parse_camera(spec, center, radius)
    ps.look_at_dir(eye, target, up)


def view_camera(view, spec: str = "auto") -> tuple:
    """``(eye, target, up)`` for ``view`` (a :class:`~viz.scene.SceneView`): ``spec`` framing
    everything drawn; ``"auto"`` with an SDF slice looks at the slice face-on (along its normal,
    from the side nearer the three-quarter view), so the slice is never seen edge-on by default."""
    lo, hi = view.view_box()
    center, radius = 0.5 * (lo + hi), view.view_scale()
    st = view.settings
    if (spec or "auto").strip() != "auto" or st.slice_shape is None:
        return parse_camera(spec, center, radius)
    from hydro.transforms import quat_to_matrix

    shape = st.slice_shape
    pose = view.shape_poses()[shape]
    rot = quat_to_matrix(pose[3:] / np.linalg.norm(pose[3:]))
    sdf = view.model.sdfs[view.model.shape_sdf[shape]]
    local = 0.5 * (np.asarray(sdf.box_lo, dtype=float) + np.asarray(sdf.box_hi, dtype=float))
    local[st.slice.axis] = float(np.clip(st.slice.offset, sdf.box_lo[st.slice.axis], sdf.box_hi[st.slice.axis]))
    target = pose[:3] + rot @ local
    normal = rot[:, st.slice.axis]
    iso = np.asarray(CAMERA_DIRECTIONS["iso"], dtype=float)
    direction = normal if float(normal @ iso) >= 0.0 else -normal
    distance = radius / math.sin(math.radians(45.0) / 2.0) * 1.05
    up = np.array([0.0, 1.0, 0.0]) if abs(direction[2]) > 0.999 else np.array([0.0, 0.0, 1.0])
    return target + distance * direction, target, up


def project(points) -> tuple:
    """Pixel coordinates (N,2) (x right, y down, as in the screenshot buffer) of world points
    through the current Polyscope camera, and whether each lies in front of it."""
    import polyscope as ps

    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    params = ps.get_view_camera_parameters()
    view = np.asarray(params.get_view_mat(), dtype=float)
    w, h = ps.get_buffer_size()
    cam = pts @ view[:3, :3].T + view[:3, 3]
    depth = -cam[:, 2]
    front = depth > 0
    f = 1.0 / math.tan(math.radians(params.get_fov_vertical_deg()) / 2.0)
    aspect = params.get_aspect()
    with np.errstate(divide="ignore", invalid="ignore"):
        if ps.get_view_projection_mode() == "orthographic":
            raise ValueError("project() supports the perspective camera only")
        x_ndc = f / aspect * cam[:, 0] / depth
        y_ndc = f * cam[:, 1] / depth
    px = np.stack([(x_ndc + 1.0) * 0.5 * w, (1.0 - y_ndc) * 0.5 * h], axis=1)
    return px, front


def screenshot(*, colorbar: bool = True) -> np.ndarray:
    """The current picture, (H, W, 4) uint8, top row first (colour bars are UI: ``colorbar``)."""
    import polyscope as ps

    return np.asarray(ps.screenshot_to_buffer(transparent_bg=False, include_UI=colorbar))


def write_png(path, image) -> None:
    """Write an (H, W, 3|4) uint8 image as PNG (no dependencies)."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.ndim != 3 or img.shape[2] not in (3, 4):
        raise ValueError(f"image must have shape (H, W, 3|4), got {img.shape}")
    h, w, c = img.shape
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    color_type = 6 if c == 4 else 2
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    from hydro.tools.outputs import atomic_file

    with atomic_file(path) as tmp, open(tmp, "wb") as fh:  # the picture appears whole or not at all
        fh.write(png)


def read_png(path) -> np.ndarray:
    """Read a PNG written by :func:`write_png` (8-bit RGB/RGBA, no interlace) → (H, W, C) uint8."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG file")
    pos, idat, w, h, c = 8, b"", 0, 0, 4
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        tag = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if tag == b"IHDR":
            w, h, depth, color_type = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color_type not in (2, 6):
                raise ValueError(f"{path}: only 8-bit RGB/RGBA PNGs are read")
            c = 4 if color_type == 6 else 3
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + w * c)
    if np.any(raw[:, 0] != 0):
        raise ValueError(f"{path}: only unfiltered PNG rows are read")
    return raw[:, 1:].reshape(h, w, c).copy()


def render(scene, path=None, *, camera: str = "auto", size=DEFAULT_SIZE, settings=None, config=None, state=None,
           num_envs: int = 1, colorbar: bool = True):
    """Render ``scene`` headless (EGL) and return the picture (H, W, 4) uint8; write it to
    ``path`` if given, in the format its suffix names (.png, .jpg/.jpeg: :func:`write_image`).

    ``scene``: a :class:`~viz.scene.SceneView`, a :class:`~hydro.scene.model.Model` or a USD path.
    ``settings`` (:class:`~viz.scene.ViewSettings`), ``config`` and ``state`` apply when a view
    is made here. ``colorbar``: the picture's UI, the colour bars and the legend
    (:mod:`viz.legend`). The scene replaces whatever Polyscope was showing.
    """
    from .legend import draw_legend
    from .scene import SceneView

    if path is not None:
        image_format(path)  # a suffix we cannot write fails before any work
    if isinstance(scene, SceneView):
        view = scene
    elif isinstance(scene, (str, bytes)) or hasattr(scene, "__fspath__"):
        view = SceneView.from_usd(scene, num_envs=num_envs, config=config, state=state, settings=settings)
    else:
        view = SceneView(scene, config=config, state=state, settings=settings)
    w, h = (parse_size(size) if isinstance(size, str) else (int(size[0]), int(size[1])))
    parse_camera(camera, np.zeros(3), 1.0)  # a bad spec fails before any rendering
    ps = backend.init(headless=backend.running_backend() != "openGL3_glfw")
    backend.clear()
    view.forget_drawing()
    ps.set_window_size(w, h)
    view.update()
    eye, target, up = view_camera(view, camera)
    ps.look_at_dir(eye, target, up)  # before drawing: a slice faces the camera
    view.draw()
    if colorbar and view.settings.show_legend:
        ps.set_open_imgui_window_for_user_callback(False)  # the legend is its own window; no empty panel
        ps.set_user_callback(lambda: draw_legend(view))
    try:
        image = screenshot(colorbar=colorbar)
    finally:
        ps.clear_user_callback()
        ps.set_open_imgui_window_for_user_callback(True)
    if path is not None:
        write_image(path, image[..., :3])
    view.last_image = image
    return image
