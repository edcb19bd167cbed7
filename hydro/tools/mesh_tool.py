"""``hydro mesh check PATH`` and ``hydro mesh repair PATH -o OUT``.

``check`` prints what the mesh is made of (welding, edges, holes, shells, the solid), whether it
can be hydroelastic and, when not, what to do; its size against plausible sizes and the SDF
voxel against the narrow band. Exit 0 when it can be hydroelastic, 1 when not.

``repair`` welds, removes duplicated and cancelling faces, reorients, closes holes, measures how
far the surface moved and writes ``OUT`` (any format trimesh writes: .obj, .stl, .ply) only when
the result is closed and moved by at most a voxel (or ``--max-displacement``). Exit 0 when
written, 1 when refused. ``OUT`` is checked before the work (:func:`hydro.tools.outputs.output_file`):
its extension must be one of :data:`REPAIR_FORMATS`, and it must not be the input, a link, a FIFO
or a device.
"""

from __future__ import annotations

import os


#: Extensions ``mesh repair -o`` writes (trimesh's mesh exporters that keep triangles).
REPAIR_FORMATS = (".obj", ".stl", ".ply", ".off", ".glb")


def add_mesh_parser(sub) -> None:
    """Add ``mesh`` with its ``check`` and ``repair`` subcommands to the ``hydro`` parser."""
    from .flags import sdf_resolution
    m = sub.add_parser("mesh", help="check a mesh file for hydroelastic use, or repair it")
    msub = m.add_subparsers(dest="mesh_command", required=True)
    c = msub.add_parser("check", help="welding, holes, shells, the solid it bounds, size and units")
    c.add_argument("path", help="a mesh file (.obj, .stl, .ply, …)")
    c.add_argument("--scale", type=float, default=1.0, help="metres per file unit (e.g. 0.001 for millimetres)")
    c.add_argument("--resolution", type=sdf_resolution, default=64, help="SDF voxels along the longest axis, for the voxel check")
    c.add_argument("--band-inner", type=float, default=-0.1, help="narrow band inner extent in m")
    c.add_argument("--band-outer", type=float, default=0.1, help="narrow band outer extent in m")
    c.add_argument("--weld-tolerance", type=float, default=None, help="weld distance in m (default 1e-6 of the diagonal)")
    c.set_defaults(func=_cmd_check)
    r = msub.add_parser("repair", help="close holes and fix winding without moving the surface; write OUT")
    r.add_argument("path", help="a mesh file (.obj, .stl, .ply, …)")
    r.add_argument("-o", "--out", required=True, help="where to write the repaired mesh (format from the extension)")
    r.add_argument("--scale", type=float, default=1.0, help="metres per file unit; OUT is written in file units")
    r.add_argument("--resolution", type=sdf_resolution, default=64, help="SDF resolution whose voxel bounds the displacement")
    r.add_argument("--max-displacement", type=float, default=None, help="largest surface displacement allowed, m")
    r.add_argument("--weld-tolerance", type=float, default=None, help="weld distance in m (default 1e-6 of the diagonal)")
    r.set_defaults(func=_cmd_repair)


def _cmd_check(args) -> int:
    from ..geometry import Mesh
    from ..geometry.mesh_check import inspect_mesh, size_warnings
    from .flags import sdf_settings
    from ..sdf.layout import grid_layout

    mesh = Mesh.load(args.path, scale=args.scale)
    check = inspect_mesh(mesh, weld_tolerance=args.weld_tolerance)
    print(check.summary())
    settings = sdf_settings(max_resolution=args.resolution, narrow_band_inner=args.band_inner,
                           narrow_band_outer=args.band_outer)
    lo, hi = mesh.local_aabb()
    voxel = grid_layout(lo, hi, settings)[1]
    print(f"sdf          voxel {voxel:.4g} m at resolution {args.resolution} (band [{args.band_inner:g}, "
          f"{args.band_outer:g}] m)")
    for message in size_warnings(mesh, voxel=voxel, narrow_band_inner=args.band_inner,
                                 narrow_band_outer=args.band_outer,
                                 scale_fix="check it again with --scale 0.001 (millimetres) or --scale 0.01 "
                                           "(centimetres)",
                                 resolution_fix="raise --resolution"):
        print(f"warning      {message}")
    return 0 if check.hydroelastic_ok else 1


def _cmd_repair(args) -> int:
    from ..geometry import Mesh
    from ..geometry.mesh_repair import repair_mesh
    from .outputs import atomic_file, output_file

    output_file(args.out, option="-o", inputs=[args.path], suffixes=REPAIR_FORMATS,
                example="repaired.obj")  # before the work: a writable regular file of a format trimesh writes
    mesh = Mesh.load(args.path, scale=args.scale)
    repaired, report = repair_mesh(mesh, max_displacement=args.max_displacement, resolution=args.resolution,
                                   weld_tolerance=args.weld_tolerance)
    print(report.summary())
    if not report.accepted:
        return 1
    out = repaired.to_trimesh()
    if args.scale != 1.0:
        out.apply_scale(1.0 / args.scale)
    with atomic_file(args.out) as tmp:  # written beside the target, renamed when complete
        out.export(tmp, file_type=os.path.splitext(args.out)[1].lstrip(".").lower() or None)
    print(f"wrote        {args.out}")
    return 0
