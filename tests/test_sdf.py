"""Sparse SDFs against exact distances (analytic primitives, trimesh for meshes)."""

import math

import numpy as np
import pytest

import naive

from hydro.geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Sphere
from hydro.sdf import SDFSettings, build_sdf, grid_layout

SMOOTH = [Sphere(0.1), Capsule(0.04, 0.1), Ellipsoid((0.1, 0.06, 0.04))]
# smallest radius of curvature of each smooth surface (ellipsoid: c²/a)
CURVATURE_RADIUS = {"sphere": 0.1, "capsule": 0.04, "ellipsoid": 0.04**2 / 0.1}
KINKED = [Box((0.1, 0.2, 0.15)), Cylinder(0.05, 0.12), Cone(0.06, 0.12)]


def _points_in_box(sdf, n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(sdf.box_lo, sdf.box_hi, size=(n, 3))


# ---------------------------------------------------------------------------------------------
# Grid rules


def test_longest_axis_gets_exactly_max_resolution_and_all_axes_are_multiples_of_8():
    for res in (8, 16, 64, 128):
        origin, h, n, pad = grid_layout([-0.05, -0.1, -0.15], [0.05, 0.1, 0.15], SDFSettings(max_resolution=res))
        assert max(n) == res
        assert all(v % 8 == 0 for v in n)
        # the padded shape fits inside the box on every axis
        assert np.all(origin <= np.array([-0.05, -0.1, -0.15]) - pad + 1e-12)
        assert np.all(origin + np.array(n) * h >= np.array([0.05, 0.1, 0.15]) + pad - 1e-12)


def test_positive_target_voxel_size_wins():
    s = SDFSettings(max_resolution=16, target_voxel_size=0.002, padding=0.004)
    origin, h, n, pad = grid_layout([-0.05] * 3, [0.05] * 3, s)
    assert h == 0.002
    assert n == (56, 56, 56)  # (0.1 + 2 * 0.004) / 0.002 = 54 -> 56
    # zero or negative means "unset": max_resolution decides
    _, h0, n0, _ = grid_layout([-0.05] * 3, [0.05] * 3, SDFSettings(max_resolution=16, target_voxel_size=0.0))
    assert max(n0) == 16 and h0 != 0.002


def test_padding_is_honoured():
    sdf = build_sdf(Sphere(0.1), SDFSettings(max_resolution=32, padding=0.02))
    assert sdf.padding == pytest.approx(0.02)
    assert np.all(sdf.box_lo <= -0.12 + 1e-12) and np.all(sdf.box_hi >= 0.12 - 1e-12)


# ---------------------------------------------------------------------------------------------
# Accuracy against the analytic distance


def _tolerances(sdf):
    """(near-surface, anywhere-in-box) error bounds for a primitive's field.

    Trilinear interpolation of exact samples: on smooth surfaces the error is second order,
    far below 0.05 voxel at these resolutions; across sharp edges, the cone apex and the
    medial ridges inside a shape the field has kinks and the error grows to a fraction of a
    voxel (at most √3/2 · h for a 1-Lipschitz field). Quantisation adds half a step.
    """
    return sdf.quantization_step, 0.5 * sdf.voxel_size + sdf.quantization_step


@pytest.mark.parametrize("fmt", ["float32", "uint16", "uint8"])
@pytest.mark.parametrize("geometry", SMOOTH + KINKED, ids=lambda g: g.kind_name)
def test_primitive_matches_analytic_distance(geometry, fmt):
    sdf = build_sdf(geometry, SDFSettings(max_resolution=64, texture_format=fmt))
    h = sdf.voxel_size
    pts = _points_in_box(sdf, 20_000, seed=hash((geometry.kind, fmt)) % 2**31)
    exact = geometry.phi(pts)
    sampled = sdf.sample(pts)
    err = np.abs(sampled - exact)
    q, anywhere = _tolerances(sdf)
    assert err.max() <= anywhere, f"max error {err.max() / h:.3f} voxel"
    near = np.abs(exact) < 2 * h
    if geometry in SMOOTH:
        # trilinear error of a C² field: (h²/8)·|Δφ| <= h²/(4ρ) with ρ the local curvature
        # radius (ρ - 2h within two voxels of the surface); a factor 2 of margin
        rho = CURVATURE_RADIUS[geometry.kind_name] - 2 * h
        near_tol = h * h / (2.0 * rho) + q
    else:
        near_tol = 0.45 * h + q
    assert err[near].max() <= near_tol, f"near-surface error {err[near].max() / h:.3f} voxel"
    # the sign is right wherever the exact distance exceeds the error bound
    sure = np.abs(exact) > anywhere
    assert np.all(np.sign(sampled[sure]) == np.sign(exact[sure]))


@pytest.mark.parametrize("geometry", SMOOTH, ids=lambda g: g.kind_name)
def test_gradient_is_unit_and_normal_near_smooth_surfaces(geometry):
    sdf = build_sdf(geometry, SDFSettings(max_resolution=64, texture_format="float32"))
    h = sdf.voxel_size
    pts = _points_in_box(sdf, 20_000, seed=3)
    exact = geometry.phi(pts)
    pts = pts[(exact > -h) & (exact < 2 * h)]  # inside, keep clear of the medial set
    phi, grad = sdf.sample_grad(pts)
    norm = np.linalg.norm(grad, axis=1)
    assert np.abs(norm - 1.0).max() < 0.05
    # direction against central differences of the exact field
    e = 1e-6
    fd = np.stack([(geometry.phi(pts + e * ax) - geometry.phi(pts - e * ax)) / (2 * e) for ax in np.eye(3)], axis=1)
    cos = np.einsum("ij,ij->i", grad, fd) / norm / np.linalg.norm(fd, axis=1)
    assert cos.min() > 0.99
    # φ from sample_grad is the same as from sample
    np.testing.assert_allclose(phi, sdf.sample(pts), rtol=0, atol=1e-12)


@pytest.mark.parametrize("geometry", KINKED, ids=lambda g: g.kind_name)
def test_gradient_norm_in_the_band_of_kinked_shapes(geometry):
    sdf = build_sdf(geometry, SDFSettings(max_resolution=64, texture_format="float32"))
    pts = _points_in_box(sdf, 20_000, seed=4)
    _, grad = sdf.sample_grad(pts)
    norm = np.linalg.norm(grad, axis=1)
    # trilinear gradients of a distance field are unit except in cells cut by a kink or of
    # high curvature; each component is a mean of finite differences of a 1-Lipschitz field,
    # so the norm never exceeds √3
    assert np.mean(np.abs(norm - 1.0) < 0.05) > 0.9
    assert norm.max() <= np.sqrt(3.0) + 1e-9


def test_outside_the_box_returns_an_upper_bound_that_grows_with_distance():
    g = Box((0.1, 0.1, 0.1))
    sdf = build_sdf(g, SDFSettings(max_resolution=32))
    rng = np.random.default_rng(5)
    dirs = rng.normal(size=(500, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    pts = dirs * rng.uniform(0.3, 2.0, size=(500, 1))
    phi = sdf.sample(pts)
    exact = g.phi(pts)
    assert np.all(phi >= exact - sdf.quantization_step - 1e-9)  # never claims closer than it is
    lo, hi = sdf.box_lo, sdf.box_hi
    clamped = np.clip(pts, lo, hi)
    np.testing.assert_allclose(phi, sdf.sample(clamped) + np.linalg.norm(pts - clamped, axis=1), atol=1e-12)
    # the gradient is the derivative of the returned bound
    _, grad = sdf.sample_grad(pts)
    e = 1e-7
    fd = np.stack([(sdf.sample(pts + e * ax) - sdf.sample(pts - e * ax)) / (2 * e) for ax in np.eye(3)], axis=1)
    np.testing.assert_allclose(grad, fd, atol=1e-5)


def test_quantisation_rounds_rather_than_truncates():
    sdf = build_sdf(Sphere(0.1), SDFSettings(max_resolution=16, texture_format="uint8"))
    # grid samples of the fine bricks carry at most half a quantisation step of error
    slots = np.argwhere(sdf.brick_slot >= 0)
    bz, by, bx = slots[0]
    s = sdf.brick_slot[bz, by, bx]
    lz, ly, lx = np.meshgrid(range(9), range(9), range(9), indexing="ij")
    pts = np.stack([sdf.origin[0] + (8 * bx + lx) * sdf.voxel_size,
                    sdf.origin[1] + (8 * by + ly) * sdf.voxel_size,
                    sdf.origin[2] + (8 * bz + lz) * sdf.voxel_size], axis=-1).reshape(-1, 3)
    stored = sdf.offset + sdf.scale * sdf.atlas[s].reshape(-1).astype(float)
    err = np.abs(stored - Sphere(0.1).phi(pts))
    assert err.max() <= 0.5 * sdf.scale + 1e-9
    assert err.max() > 0.25 * sdf.scale  # truncation would show a one-sided error up to a full step


# ---------------------------------------------------------------------------------------------
# Meshes


def _trimesh_signed_distance(tm, pts):
    import trimesh

    return -trimesh.proximity.signed_distance(tm, pts)  # trimesh: positive inside


def _star_mesh():
    """A closed, star-shaped mesh with concave valleys."""
    import trimesh

    tm = trimesh.creation.icosphere(subdivisions=3, radius=1.0)
    v = tm.vertices
    theta = np.arctan2(v[:, 1], v[:, 0])
    z = v[:, 2]
    r = 0.08 * (1.0 + 0.35 * np.cos(3 * theta) * (1 - z * z) + 0.2 * z * z)
    return trimesh.Trimesh(v * r[:, None], tm.faces, process=False)


def _meshes():
    import trimesh

    return {
        "icosphere": trimesh.creation.icosphere(subdivisions=3, radius=0.1),
        "torus": trimesh.creation.torus(major_radius=0.08, minor_radius=0.03),
        "star": _star_mesh(),
    }


@pytest.mark.parametrize("name", ["icosphere", "torus", "star"])
def test_mesh_distance_and_field_match_trimesh(name):
    tm = _meshes()[name]
    mesh = Mesh.from_trimesh(tm, name=name)
    sdf = build_sdf(mesh, SDFSettings(max_resolution=48, texture_format="float32"))
    pts = _points_in_box(sdf, 3000, seed=7)
    exact = naive.mesh_signed_distance(pts, np.asarray(tm.triangles))
    # the direct query is exact (against brute force over all triangles + winding number)
    direct = mesh.phi(pts)
    np.testing.assert_allclose(direct, exact, rtol=0, atol=1e-12)
    # trimesh's signed distance agrees, except where its candidate search misses the nearest
    # triangle and reports a farther one: it never reports a closer one
    ref = _trimesh_signed_distance(tm, pts)
    assert np.all(np.sign(ref) == np.sign(direct))
    assert np.all(np.abs(ref) >= np.abs(direct) - 1e-12)
    assert np.mean(np.abs(ref - direct) < 1e-9) > 0.98
    # the grid is exact up to interpolation (the surface is polyhedral: kinks at edges)
    err = np.abs(sdf.sample(pts) - exact)
    assert err.max() <= 0.5 * sdf.voxel_size
    sure = np.abs(exact) > 0.5 * sdf.voxel_size
    assert np.all(np.sign(sdf.sample(pts)[sure]) == np.sign(exact[sure]))


def test_non_watertight_mesh_raises_naming_it():
    import trimesh

    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.1)
    open_mesh = Mesh(tm.vertices, tm.faces[:-3], name="leaky_cup")
    with pytest.raises(ValueError, match="leaky_cup.*not watertight"):
        build_sdf(open_mesh)


def test_inward_wound_mesh_raises():
    import trimesh

    tm = trimesh.creation.box(extents=(0.1, 0.1, 0.1))
    inside_out = Mesh(tm.vertices, tm.faces[:, ::-1], name="flipped")
    with pytest.raises(ValueError, match="flipped.*outward"):
        build_sdf(inside_out)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Mesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=int), name="void"), "void.*empty"),
        (lambda: Mesh(np.array([[0, 0, 0], [1, 0, 0], [np.nan, 1, 0]]), [[0, 1, 2]], name="nanny"), "nanny.*finite"),
        (lambda: Mesh(np.array([[0, 0, 0], [1, 0, 0], [np.inf, 1, 0]]), [[0, 1, 2]], name="inf"), "inf.*finite"),
        (lambda: Sphere(0.0), "radius must be a finite number > 0"),
        (lambda: Sphere(-1.0), "radius must be a finite number > 0"),
        (lambda: Box((0.1, 0.0, 0.1)), r"size\[y\] must be a finite number > 0"),
        (lambda: Capsule(0.1, -0.1), "height must be a finite number >= 0"),
        (lambda: Cylinder(0.1, math.nan), "height must be a finite number > 0"),
        (lambda: Ellipsoid((0.1, 0.1)), "radii must have 3 components"),
        (lambda: SDFSettings(max_resolution=60), "max_resolution must be a positive multiple of 8"),
        (lambda: SDFSettings(max_resolution=0), "max_resolution must be a positive multiple of 8"),
        (lambda: SDFSettings(max_resolution=-8), "max_resolution must be a positive multiple of 8"),
        (lambda: SDFSettings(narrow_band_inner=0.0), "narrow_band_inner must be a finite number < 0"),
        (lambda: SDFSettings(narrow_band_outer=-0.1), "narrow_band_outer must be a finite number > 0"),
        (lambda: SDFSettings(texture_format="half"), "texture_format must be one of"),
        (lambda: SDFSettings(padding=-1.0), "padding must be a finite number >= 0"),
    ],
)
def test_bad_input_raises_a_clear_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_planes_cannot_have_an_sdf():
    from hydro.geometry import Plane

    with pytest.raises(ValueError, match="plane has no inside"):
        build_sdf(Plane())


# ---------------------------------------------------------------------------------------------
# Sparsity


def test_fine_bricks_follow_surface_area_not_volume():
    # A band thin against the bricks: fine bricks are the ones the surface crosses, so doubling
    # the resolution multiplies them by about 4 (surface), not 8 (volume).
    g = Sphere(0.2)
    s = dict(narrow_band_inner=-0.004, narrow_band_outer=0.004)
    n64 = build_sdf(g, SDFSettings(max_resolution=64, **s)).fine_brick_count
    n128 = build_sdf(g, SDFSettings(max_resolution=128, **s)).fine_brick_count
    assert 3.0 < n128 / n64 < 5.5, (n64, n128)


def test_flat_regions_are_left_coarse():
    # inside a box face region the field is linear: coarse interpolation reproduces it exactly
    sdf = build_sdf(Box((0.4, 0.4, 0.4)), SDFSettings(max_resolution=64))
    assert sdf.fine_brick_count < 0.5 * sdf.brick_count
    m = sdf.memory()
    assert m.total_bytes == m.fine_bytes + m.coarse_bytes + m.slot_bytes + m.mesh_bytes
    assert m.total_bytes < m.dense_same_format_bytes


@pytest.mark.parametrize("geometry", [Box((0.1, 0.2, 0.15)), Sphere(0.1), Cone(0.06, 0.12)], ids=lambda g: g.kind_name)
def test_brick_slope_bounds_hold(geometry):
    # each brick's bounds on |∂φ/∂x_i| hold for the stored field everywhere in the brick,
    # checked against the sampled gradient at random points
    sdf = build_sdf(geometry, SDFSettings(max_resolution=32))
    pts = _points_in_box(sdf, 20_000, seed=9)
    _, grad = sdf.sample_grad(pts)
    b = np.minimum(((pts - sdf.box_lo) / (8 * sdf.voxel_size)).astype(int), np.array(sdf.bricks) - 1)
    own = sdf.brick_slopes[b[:, 2], b[:, 1], b[:, 0]]
    assert np.all(np.abs(grad) <= own + 1e-9)
    assert np.all(own <= 1.0 + sdf.scale / sdf.voxel_size + 1e-6)  # slopes of distance samples
    # a box's flat faces leave some bricks with a single non-zero slope
    if geometry.kind_name == "box":
        assert np.any(np.sort(sdf.brick_slopes.reshape(-1, 3), axis=1)[:, 1] < 1e-6)


@pytest.mark.parametrize("geometry", [Box((0.3, 0.2, 0.15)), Sphere(0.1), None], ids=["box", "sphere", "mesh"])
def test_bricks_say_where_the_exact_field_is_affine(geometry):
    # brick_curved is 0 exactly where the exact field is one affine function over the brick (a box's
    # face regions; none of a sphere; a box mesh's face regions where one face plane is proven to
    # be the exact field, hydro/sdf/mesh_field.py), checked at random points of every brick against
    # the affine fit of its corners
    if geometry is None:
        import trimesh

        tm = trimesh.creation.box(extents=(0.3, 0.2, 0.15))
        geometry = Mesh(tm.vertices, tm.faces, name="box_mesh")
    sdf = build_sdf(geometry, SDFSettings(max_resolution=64))
    curved = sdf.brick_curved
    rng = np.random.default_rng(3)
    h8 = 8 * sdf.voxel_size
    affine_bricks = 0
    for bz, by, bx in np.argwhere(curved == 0):
        lo = sdf.origin + np.array([bx, by, bz]) * h8
        corners = lo + h8 * np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
        v0, vx, vy, vz = geometry.phi(corners)
        t = rng.uniform(0.0, 1.0, (64, 3))
        expect = v0 + (vx - v0) * t[:, 0] + (vy - v0) * t[:, 1] + (vz - v0) * t[:, 2]
        np.testing.assert_allclose(geometry.phi(lo + h8 * t), expect, rtol=0, atol=1e-9 * sdf.voxel_size)
        affine_bricks += 1
    if geometry.kind_name == "box":
        assert affine_bricks >= 0.25 * curved.size  # the face regions away from the edges (80 of 240)
    elif geometry.kind_name == "mesh":
        assert affine_bricks >= 20  # the proof asks more room from the face's rim (28 of 240)
    else:
        assert affine_bricks == 0


def test_ellipsoid_distance_is_exact():
    # No point of the surface is closer than the returned distance, and a dense sample of the
    # surface comes within its spacing of it (an independent check of Eberly's root finding).
    from scipy.spatial import cKDTree

    g = Ellipsoid((0.1, 0.06, 0.04))
    rng = np.random.default_rng(12)
    p = rng.uniform(-0.15, 0.15, size=(2000, 3))
    d = g.phi(p)
    u = rng.normal(size=(400_000, 3))
    surface = u / np.linalg.norm(u, axis=1, keepdims=True) * np.array(g.radii)
    nearest, _ = cKDTree(surface).query(p)
    assert np.all(nearest >= np.abs(d) - 1e-12)
    assert np.all(nearest <= np.abs(d) + 2e-4)
    inside = (p / np.array(g.radii)) ** 2
    assert np.all((d < 0) == (inside.sum(axis=1) < 1))
