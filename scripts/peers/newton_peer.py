"""Newton 1.8 (``pip install newton warp-lang``) hydroelastic SDF contact on Warp's CPU backend.

Newton refuses hydroelastic SDF contact without CUDA. Its texture SDFs (``wp.Texture3D``) and
hydroelastic kernels do run on Warp's CPU backend; what stops them is two explicit guards and one
CUDA-only kernel (see ``NEWTON_CPU.md`` beside this file for file:line):

1. ``ModelBuilder._finalize_impl`` raises ``ValueError("Building texture SDFs requires a
   CUDA-capable GPU device ...")`` when a hydroelastic or SDF mesh shape meets a non-CUDA device
   (``newton/_src/sim/builder.py:15481``);
2. ``SDF.create_from_mesh`` (behind ``Mesh.build_sdf``) raises ``RuntimeError`` unless
   ``wp.is_cuda_available()`` (``newton/_src/geometry/sdf_utils.py:456``);
3. the octree refinement of the hydroelastic broad phase evaluates each parent's eight children
   with ``count_iso_voxel_children``, a block-cooperative kernel (``wp.block_dim()`` lanes and a
   shared tile). Warp runs CPU kernels with ``wp.block_dim() == 1``, so its ``parents_per_block``
   is ``1 >> 3 == 0``, its grid stride is 0 and the launch never returns
   (``newton/_src/geometry/sdf_hydroelastic.py:1616-1623``, called from ``_find_iso_voxels``).

:func:`apply_cpu_patch` lifts them at run time, without touching the installed files: it takes the
source of the three methods, makes an exact, asserted text substitution in each (the guard
conditions become ``False``; on non-CUDA devices ``_find_iso_voxels`` uses Newton's per-thread
``count_iso_voxels_block`` kernel, which already takes ``n_blocks=2`` and evaluates the eight
children serially), compiles the result against the defining module's globals and installs it on
the class. A Newton whose source no longer matches makes the patch fail loudly
(:class:`NewtonPatchError`) instead of silently doing something else.

Pressure law. Newton's default ``linear_pressure`` is ``p = -kh * signed_depth`` with
``signed_depth`` the shape's own SDF (``newton/_src/geometry/sdf_hydroelastic.py:238``), and the
contact surface is the iso-surface ``p_A == p_B``, i.e. ``kh_A * phi_A == kh_B * phi_B``. That is
hydro's law ``p = k * (-phi)`` with the same equal-pressure surface, so ``kh = k`` (N/m^3) with
no conversion, provided the shape ``margin`` is 0 (Newton subtracts it from ``phi``, and it is 0
by default) — :func:`newton_case` sets ``margin = 0``.

Matching the grid. Newton's texture SDF pads the shape's AABB by ``sdf_padding`` on each side and
sets the voxel size to (longest padded extent) / ``max_resolution``. hydro pads by 4 voxels a
side, so ``sdf_padding = 4 * L / (resolution - 8)`` (L the longest edge of the shape's AABB) gives
Newton exactly hydro's voxel size h = L / (resolution - 8) (sphere R = 0.1 at 64: 3.57 mm).
``gap`` (speculative-contact distance, default 0.1 m from ``ModelBuilder.rigid_gap``) is set to
0, which also keeps it from inflating the padding: only penetrating faces are generated.

Force. The full, unreduced patch: ``HydroelasticSDF.Config(reduce_contacts=False)``. The force is
read from the hydroelastic face buffer that Newton fills during ``collide`` (one entry per
marching-cubes face of the contact surface: shape pair (a, b), octahedral-encoded unit normal n
pointing from a to b, margin-relative separation, force-bearing area A, pressure p), as
``F_b = +sum(p A n)``, ``F_a = -sum(p A n)``; for penetrating faces this is exactly what Newton
hands its solvers (``rigid_contact_stiffness * -depth = A p`` along ``rigid_contact_normal``),
which the self-check cross-checks. ``area`` is the sum of A over penetrating faces and ``elements``
their count.
"""

from __future__ import annotations

import __future__
import inspect
import os
import statistics
import sys
import textwrap
import time
import warnings

import numpy as np

__all__ = ["NewtonPatchError", "apply_cpu_patch", "newton_available", "newton_case", "closed_form_sphere_on_box"]


class NewtonPatchError(RuntimeError):
    """Raised when the installed Newton's source no longer matches the CPU patch."""


_PATCH_STATE: dict = {"applied": False, "error": None}


def _rewrite_method(owner, name, replacements, extra_globals=None):
    """Replace ``owner.name`` by a copy of its source with exact text substitutions.

    Each ``(old, new)`` must occur exactly once. The copy is compiled with the defining module's
    globals (a shallow copy of them plus ``extra_globals``) and its original line numbers, so
    tracebacks point at the installed file."""
    raw = owner.__dict__[name]
    is_static = isinstance(raw, staticmethod)
    fn = raw.__func__ if is_static else raw
    if getattr(fn, "_hydro_cpu_patched", False):
        return
    lines, first = inspect.getsourcelines(fn)
    src = textwrap.dedent("".join(lines))
    body = src.splitlines(True)
    skipped = 0
    while body and body[0].lstrip().startswith("@"):
        body.pop(0)
        skipped += 1
    src = "".join(body)
    for old, new in replacements:
        n = src.count(old)
        if n != 1:
            raise NewtonPatchError(f"{owner.__qualname__}.{name}: expected 1 occurrence of {old!r}, found {n}")
        src = src.replace(old, new)
    module = sys.modules[fn.__module__]
    glb = dict(module.__dict__)
    glb.update(extra_globals or {})
    flags = 0
    if getattr(module, "annotations", None) is __future__.annotations:
        flags |= __future__.annotations.compiler_flag
    code = compile("\n" * (first - 1 + skipped) + src, inspect.getsourcefile(fn), "exec", flags=flags,
                   dont_inherit=True)
    ns: dict = {}
    exec(code, glb, ns)
    new = ns[fn.__name__]
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new._hydro_cpu_patched = True
    new._hydro_cpu_original = fn
    setattr(owner, name, staticmethod(new) if is_static else new)


def _cpu_count_iso_voxels_block_kernel(hydro):
    """Newton's per-thread subblock counter with non-integer centres (the level-1 voxels),
    built once per ``HydroelasticSDF`` for the CPU path of ``_find_iso_voxels``."""
    kernel = hydro.__dict__.get("_hydro_cpu_count_block_kernel")
    if kernel is None:
        from newton._src.geometry.sdf_hydroelastic import create_count_iso_voxels_block_kernel

        kernel = create_count_iso_voxels_block_kernel(hydro.pressure_func, False, hydro.paired_samples)
        hydro._hydro_cpu_count_block_kernel = kernel
    return kernel


def apply_cpu_patch() -> None:
    """Lift Newton's CUDA-only guards for hydroelastic SDF contact (idempotent).

    Raises :class:`NewtonPatchError` if the installed Newton's source does not match, and
    ``ImportError`` if Newton or Warp are missing."""
    if _PATCH_STATE["applied"]:
        return
    os.environ.setdefault("WARP_CACHE_PATH", "/tmp/warp_cache")
    import newton  # noqa: F401
    import warp as wp  # noqa: F401
    from newton._src.geometry import sdf_hydroelastic, sdf_utils
    from newton._src.sim import builder

    # 1. builder.py: "Building texture SDFs requires a CUDA-capable GPU device"
    _rewrite_method(builder.ModelBuilder, "_finalize_impl",
                    [("if (has_mesh_sdf or has_deferred_mesh_sdf or has_hydroelastic_shapes) and not is_gpu:",
                      "if (has_mesh_sdf or has_deferred_mesh_sdf or has_hydroelastic_shapes) and False:")])
    # 2. sdf_utils.py: "SDF.create_from_mesh requires a CUDA device" (Mesh.build_sdf)
    _rewrite_method(sdf_utils.SDF, "create_from_mesh",
                    [("if not wp.is_cuda_available():\n", "if False:\n")])
    # 3. sdf_hydroelastic.py: the block-cooperative child counter never returns on CPU
    #    (block_dim() == 1 there): use the per-thread counter with n_blocks=2 instead.
    _rewrite_method(sdf_hydroelastic.HydroelasticSDF, "_find_iso_voxels",
                    [("if n_blocks == 2:\n", "if n_blocks == 2 and wp.get_device(self.device).is_cuda:\n"),
                     ("count_kernel = self.count_iso_voxels_block_integer_kernel\n",
                      "count_kernel = (self.count_iso_voxels_block_integer_kernel if subblock_size % 2 == 0\n"
                      "                else _hydro_cpu_count_block_kernel(self))\n")],
                    {"_hydro_cpu_count_block_kernel": _cpu_count_iso_voxels_block_kernel})
    _PATCH_STATE["applied"] = True


def newton_available() -> str | None:
    """Newton's version if ``import newton, warp`` works and the CPU patch applies, else None."""
    try:
        apply_cpu_patch()
        import newton
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        _PATCH_STATE["error"] = f"{type(e).__name__}: {e}"
        return None
    return getattr(newton, "__version__", "unknown")


# ---------------------------------------------------------------------------------------------


def _decode_oct(e: np.ndarray) -> np.ndarray:
    """numpy port of Newton's ``decode_oct`` (contact_reduction_global.py)."""
    nx, ny = e[:, 0].astype(np.float64), e[:, 1].astype(np.float64)
    nz = 1.0 - np.abs(nx) - np.abs(ny)
    neg = nz < 0.0
    fx = (1.0 - np.abs(ny)) * np.where(nx < 0.0, -1.0, 1.0)
    fy = (1.0 - np.abs(nx)) * np.where(ny < 0.0, -1.0, 1.0)
    n = np.stack([np.where(neg, fx, nx), np.where(neg, fy, ny), nz], axis=1)
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def _aabb_extent(shape) -> np.ndarray:
    kind, size = shape["kind"], shape["size"]
    if kind == "sphere":
        return np.full(3, 2.0 * float(size))
    if kind == "box":
        return np.asarray(size, dtype=float)
    if kind == "mesh":
        v = np.asarray(size[0], dtype=float)
        return v.max(axis=0) - v.min(axis=0)
    raise ValueError(f"unknown shape kind {kind!r}")


def _build(shapes, resolution, texture_format, device):
    import newton
    import warp as wp

    b = newton.ModelBuilder()
    b.rigid_gap = 0.0
    for i, s in enumerate(shapes):
        L = float(_aabb_extent(s).max())
        pad = 4.0 * L / (resolution - 8)  # hydro's grid: 4 voxels a side, h = L / (res - 8)
        xform = wp.transform(wp.vec3(*map(float, s["pos"])), wp.quat_identity())
        static = bool(s.get("static", i == 0))
        if static:
            body, local = -1, xform
        else:
            body, local = b.add_body(xform=xform, label=f"body{i}"), wp.transform_identity()
        common = dict(is_hydroelastic=True, kh=float(s["stiffness"]), margin=0.0, gap=0.0, density=1000.0)
        if s["kind"] == "mesh":
            verts, faces = s["size"]
            mesh = newton.Mesh(np.asarray(verts, dtype=np.float32), np.asarray(faces, dtype=np.int32).reshape(-1))
            mesh.build_sdf(device=device, max_resolution=resolution, margin=pad, texture_format=texture_format)
            cfg = newton.ModelBuilder.ShapeConfig(**common)
            b.add_shape_mesh(body=body, xform=local, mesh=mesh, cfg=cfg, label=f"shape{i}")
        else:
            cfg = newton.ModelBuilder.ShapeConfig(sdf_max_resolution=resolution, sdf_padding=pad,
                                                  sdf_texture_format=texture_format, **common)
            if s["kind"] == "sphere":
                b.add_shape_sphere(body=body, xform=local, radius=float(s["size"]), cfg=cfg, label=f"shape{i}")
            else:
                hx, hy, hz = (0.5 * float(v) for v in s["size"])
                b.add_shape_box(body=body, xform=local, hx=hx, hy=hy, hz=hz, cfg=cfg, label=f"shape{i}")
    return b.finalize(device=device)


def _patch_faces(pipe):
    """The hydroelastic face buffer of the last ``collide``: (shape pairs, normals a→b, areas,
    pressures, separations), penetrating faces only."""
    reducer = pipe.hydroelastic_sdf.contact_reduction.reducer
    cap = int(reducer.capacity)
    count = int(reducer.contact_count.numpy()[0])
    if count > cap:
        warnings.warn(f"Newton hydroelastic face buffer overflowed ({count} > {cap}); the patch is truncated",
                      stacklevel=3)
    n = min(count, cap)
    ids = slice(1, n + 1)  # contact ids start at 1 (buffer_idx + 1)
    pd = reducer.position_depth.numpy()[ids]
    pairs = reducer.shape_pairs.numpy()[ids]
    normal = _decode_oct(reducer.normal.numpy()[ids])
    area = reducer.contact_area.numpy()[ids].astype(np.float64)
    pressure = reducer.contact_pressure.numpy()[ids].astype(np.float64)
    pen = pd[:, 3] < 0.0
    return pairs[pen], normal[pen], area[pen], pressure[pen], pd[pen, 3]


def _force_on_upper(pipe, n_shapes):
    pairs, normal, area, pressure, _ = _patch_faces(pipe)
    f = (pressure * area)[:, None] * normal  # force on shape b of each pair (n points a -> b)
    per_shape = np.zeros((n_shapes, 3))
    np.add.at(per_shape, pairs[:, 1], f)
    np.add.at(per_shape, pairs[:, 0], -f)
    return per_shape[1:].sum(axis=0), float(area.sum()), int(len(area))


def _contacts_force_on_upper(contacts, model, state, n_shapes):
    """Cross-check: the same force from Newton's solver-facing ``Contacts`` output."""
    n = int(contacts.rigid_contact_count.numpy()[0])
    normal = contacts.rigid_contact_normal.numpy()[:n].astype(np.float64)
    k = contacts.rigid_contact_stiffness.numpy()[:n].astype(np.float64)
    s0 = contacts.rigid_contact_shape0.numpy()[:n]
    s1 = contacts.rigid_contact_shape1.numpy()[:n]
    p0 = contacts.rigid_contact_point0.numpy()[:n].astype(np.float64)
    p1 = contacts.rigid_contact_point1.numpy()[:n].astype(np.float64)
    body_q = state.body_q.numpy() if model.body_count else np.zeros((0, 7))
    shape_body = model.shape_body.numpy()

    def world(p, s):
        bidx = shape_body[s]
        out = p.copy()
        m = bidx >= 0
        out[m] += body_q[bidx[m], :3]  # identity rotations
        return out

    depth = np.einsum("ij,ij->i", world(p1, s1) - world(p0, s0), normal)
    pen = depth < 0
    f = (k * -depth)[pen, None] * normal[pen]
    per_shape = np.zeros((n_shapes, 3))
    np.add.at(per_shape, s1[pen], f)
    np.add.at(per_shape, s0[pen], -f)
    return per_shape[1:].sum(axis=0)


def newton_case(shapes, repeat, *, resolution=64, texture_format="uint16", device="cpu", cross_check=False,
                rigid_contact_max=200_000, grid_size=None, buffer_fraction=None):
    """Newton's hydroelastic contact between ``shapes[0]`` (the lower, static shape) and
    ``shapes[1:]`` (upper shapes, each on its own free body), unreduced, on ``device``.

    ``shapes``: dicts ``{"kind": "sphere"|"box"|"mesh", "size": R | (sx, sy, sz) full edges |
    (vertices (N, 3), faces (M, 3)) in the shape frame, "pos": (x, y, z), "stiffness": k N/m^3,
    "static": bool}``, identity rotations; ``kh = k`` (see the module docstring).
    ``resolution``: Newton's ``sdf_max_resolution`` (a multiple of 8), with the padding chosen so
    the voxel size equals hydro's at its ``max_resolution`` (h = L / (resolution - 8)).
    ``texture_format``: Newton's subgrid storage, ``"uint16"`` (its default) or ``"float32"``.
    ``rigid_contact_max``: capacity of Newton's solver-facing ``Contacts`` (one per face here).
    ``grid_size``: ``HydroelasticSDF.Config.grid_size``, the number of lanes Newton's grid-stride
    hydroelastic kernels launch; None: 1024 on CPU, Newton's default (262144, sized for GPU
    occupancy) on CUDA. Warp's CPU backend runs the lanes one after another, so the GPU default
    costs 44 ms against 16 ms per sphere-on-box query at 64, with the same patch.
    ``buffer_fraction``: ``HydroelasticSDF.Config.buffer_fraction`` (None: Newton's 1.0, whose
    octree buffers for 256 pairs exceed Warp's 2³¹-element arrays).

    Runs ``CollisionPipeline.collide`` once to warm up (Warp compiles Newton's kernels on the first
    call: minutes the first time, cached in ``WARP_CACHE_PATH``), then times ``repeat`` calls of
    ``collide`` for the fixed state (median ms; CPU launches are synchronous, Warp's CPU backend
    runs each kernel on one thread). Returns ``{"ms", "force" (total Fz on the upper shapes, N,
    positive = pushing them up), "area" (m^2), "elements" (contact-surface triangles), "setup_s"
    (model build incl. SDF builds, s), "h" (voxel size of the finest SDF, m)}`` and, with
    ``cross_check``, ``"force_contacts"``: the same Fz from Newton's ``Contacts`` output.
    """
    if len(shapes) < 2:
        raise ValueError("newton_case needs a lower shape and at least one upper shape")
    if resolution % 8:
        raise ValueError("Newton's SDF resolution must be a multiple of 8")
    apply_cpu_patch()
    import newton
    import warp as wp

    t0 = time.perf_counter()
    with wp.ScopedDevice(device):
        model = _build(shapes, resolution, texture_format, device)
        setup = time.perf_counter() - t0
        state = model.state()
        cfg = newton.geometry.HydroelasticSDF.Config(reduce_contacts=False)
        if grid_size is not None or not wp.get_device(device).is_cuda:
            cfg.grid_size = int(grid_size or 1024)
        if buffer_fraction is not None:
            cfg.buffer_fraction = float(buffer_fraction)
        pipe = newton.CollisionPipeline(model, sdf_hydroelastic_config=cfg, rigid_contact_max=rigid_contact_max)
        if pipe.hydroelastic_sdf is None:
            raise RuntimeError("Newton built no hydroelastic pair for these shapes")
        contacts = pipe.contacts()
        pipe.collide(state, contacts)  # warm-up: compiles every kernel on first use
        wp.synchronize_device(device)
        times = []
        for _ in range(max(1, int(repeat))):
            t1 = time.perf_counter()
            pipe.collide(state, contacts)
            wp.synchronize_device(device)
            times.append(time.perf_counter() - t1)
        force, area, elements = _force_on_upper(pipe, model.shape_count)
        tex = model._texture_sdf_data.numpy()
        idx = model._shape_sdf_index.numpy()
        h = float(min(np.min(tex[i]["voxel_size"]) for i in idx if i >= 0))
        out = {"ms": statistics.median(times) * 1e3, "force": float(force[2]), "area": area if elements else None,
               "elements": elements, "setup_s": setup, "h": h}
        if cross_check:
            out["force_contacts"] = float(_contacts_force_on_upper(contacts, model, state, model.shape_count)[2])
    return out


# ---------------------------------------------------------------------------------------------


def closed_form_sphere_on_box(d, R, ks, kb):
    """F = k_eff π d² [R − d (ks + 2 kb) / (3 (ks + kb))], k_eff = ks kb / (ks + kb)."""
    k_eff = ks * kb / (ks + kb)
    return k_eff * np.pi * d * d * (R - d * (ks + 2 * kb) / (3 * (ks + kb)))


if __name__ == "__main__":
    version = newton_available()
    if version is None:
        raise SystemExit(f"Newton unavailable: {_PATCH_STATE['error']}")
    import warp as wp

    k, R, d = 1e9, 0.1, 0.005
    shapes = [
        {"kind": "box", "size": (0.5, 0.5, 0.2), "pos": (0.0, 0.0, -0.1), "stiffness": k, "static": True},
        {"kind": "sphere", "size": R, "pos": (0.0, 0.0, R - d), "stiffness": k, "static": False},
    ]
    exact = closed_form_sphere_on_box(d, R, k, k)
    # equal k: the surface r - R = z (hydro.tools.analytic.sphere_on_box)
    a_exact = (2 * np.pi / 3) * ((2 * R) ** 1.5 * (2 * R - d) ** 0.5 - (2 * R - d) ** 2)
    fmt = sys.argv[1] if len(sys.argv) > 1 else "uint16"
    print(f"newton {version}, warp {wp.__version__}, device cpu, texture {fmt}")
    r = newton_case(shapes, 5, resolution=64, texture_format=fmt, cross_check=True)
    print(f"sphere R={R} on box, d={d * 1e3:g} mm, k={k:g}: "
          f"closed form F = {exact:.1f} N, A = {a_exact * 1e4:.3f} cm^2")
    print(f"  Newton F = {r['force']:.1f} N (error {100 * (r['force'] / exact - 1):+.2f} %), "
          f"Contacts-output F = {r['force_contacts']:.1f} N, "
          f"A = {r['area'] * 1e4:.3f} cm^2 (error {100 * (r['area'] / a_exact - 1):+.2f} %), "
          f"{r['elements']} triangles")
    print(f"  {r['ms']:.2f} ms per collide (median of 5), h = {r['h'] * 1e3:.3f} mm, setup {r['setup_s']:.2f} s")
