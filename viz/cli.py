"""``hydro view SCENE.usda [--screenshot FILE.png] [--camera ...]``, a subcommand that viz adds to
the ``hydro`` command through the ``hydro.commands`` entry point (see :func:`register`).

Without ``--screenshot`` it opens a window with the panel (:mod:`viz.panel`); with it, it
renders headless through EGL, writes the PNG and exits.
"""

from __future__ import annotations


def register(subparsers) -> None:
    """Add ``view`` to the ``hydro`` command (the ``hydro.commands`` entry point)."""
    parser = subparsers.add_parser("view", help="open the Polyscope viewer; with --screenshot render headless "
                                                "(EGL) and exit")
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser) -> None:
    """The ``view`` subcommand's arguments; Polyscope loads only when the command runs."""
    parser.add_argument("scene", help="a .usda/.usd/.usdc file")
    parser.add_argument("--screenshot", metavar="FILE.png", help="render headless (EGL), write this picture and "
                                                                  "exit (.png, or .jpg/.jpeg: the suffix names the format)")
    parser.add_argument("--camera", default="auto",
                        help="auto | iso | top | front | side | EX,EY,EZ | EX,EY,EZ:TX,TY,TZ (metres); auto: the "
                             "three-quarter view, or with --slice the slice face-on")
    parser.add_argument("--size", default="1024x768", help="picture size WIDTHxHEIGHT in pixels (default 1024x768)")
    parser.add_argument("--color-by", default="pressure", choices=["pressure", "depth"], help="patch colours")
    parser.add_argument("--no-reduce", action="store_true", help="show every patch triangle as a contact")
    parser.add_argument("--slice", metavar="SHAPE[:AXIS[:OFFSET]]",
                        help="slice a shape's SDF: a shape index or prim path, local axis x|y|z (default y), "
                             "offset in m (default 0)")
    parser.add_argument("--num-envs", type=int, default=1, help="replicate the scene's envs (default 1)")


def _slice_setting(model, text):
    parts = text.split(":")
    if len(parts) > 3:
        raise ValueError(f"--slice must be SHAPE[:AXIS[:OFFSET]], got {text!r}")
    key = parts[0]
    if key.lstrip("-").isdigit():
        shape = int(key)
        if not 0 <= shape < model.shape_count:
            raise ValueError(f"--slice: shape index {shape} is out of range [0, {model.shape_count - 1}]")
    elif key in model.shape_path:
        shape = model.shape_path.index(key)
    else:
        raise ValueError(f"--slice: no shape {key!r} (give an index or one of {', '.join(model.shape_path)})")
    axis = 1
    if len(parts) > 1 and parts[1]:
        if parts[1] not in ("x", "y", "z"):
            raise ValueError(f"--slice: axis must be x, y or z, got {parts[1]!r}")
        axis = "xyz".index(parts[1])
    offset = float(parts[2]) if len(parts) > 2 else 0.0
    return shape, axis, offset


def run(args) -> int:
    """Run ``hydro view``; errors are raised as ``ValueError``/``RuntimeError`` (one line)."""
    from dataclasses import replace

    from hydro.contact.config import active_config

    from .picture import image_format, parse_camera, parse_size

    size = parse_size(args.size)
    parse_camera(args.camera, (0.0, 0.0, 0.0), 1.0)
    if args.screenshot:  # before any work: an image path hydro may write (not the scene, a link, a FIFO)
        from hydro.tools.outputs import output_file

        output_file(args.screenshot, option="--screenshot", inputs=[args.scene], example="view.png")
        image_format(args.screenshot, option="--screenshot")  # .png or .jpg/.jpeg: the format the suffix names
    try:
        import polyscope  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(f"the viewer needs polyscope (pip install polyscope): {exc}") from None
    import hydro

    from .scene import SceneView, ViewSettings

    model = hydro.load_usd(args.scene, num_envs=args.num_envs)
    config = active_config().collision_cfg.hydroelastic
    if args.no_reduce:
        config = replace(config, reduce_contacts=False)
    settings = ViewSettings()
    settings.contacts.color_by = args.color_by
    if args.slice:
        shape, axis, offset = _slice_setting(model, args.slice)
        if model.shape_sdf[shape] < 0:
            raise ValueError(f"--slice: shape {model.shape_path[shape]} has no SDF")
        settings.slice_shape = shape
        settings.slice.axis = axis
        settings.slice.offset = offset
    view = SceneView(model, config=config, settings=settings)
    if args.screenshot:
        from .picture import render

        render(view, args.screenshot, camera=args.camera, size=size)
        print(f"wrote {args.screenshot}")
        return 0
    return show(view, camera=args.camera, size=size)


def show(view, *, camera: str = "auto", size=(1280, 800)) -> int:
    """Open the window with the panel and block until it is closed."""
    from . import backend
    from .panel import ViewerPanel
    from .picture import view_camera

    try:
        ps = backend.init(headless=False)
    except backend.ViewerError as exc:
        raise backend.ViewerError(f"{exc} (no display? use --screenshot FILE.png to render headless)") from None
    ps.set_window_size(*size)
    view.update()
    ps.look_at_dir(*view_camera(view, camera))
    view.draw()
    panel = ViewerPanel(view)
    panel.dirty = False
    ps.set_user_callback(panel)
    ps.show()
    return 0
