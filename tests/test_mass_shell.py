"""The shell mass model (newton:massModel = "shell") against closed forms and a numerical reference."""

import math

import numpy as np
import pytest

from hydro.geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Sphere
from hydro.scene.mass import (DEFAULT_SHELL_THICKNESS, inward_offset, mass_properties, shell_properties,
                              shell_thickness_or_default, solid_properties)

IDENTITY = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def test_thin_spherical_shell_is_two_thirds_m_r_squared():
    R = 0.1
    v, c, j = shell_properties(Sphere(R), R / 1000)
    m = v  # unit density
    assert m == pytest.approx(4 * math.pi * R**2 * R / 1000, rel=1e-2)
    np.testing.assert_allclose(np.diag(j), 2.0 / 3.0 * m * R**2, rtol=1e-2)
    np.testing.assert_allclose(c, 0.0, atol=1e-15)


def test_spherical_shell_of_any_wall_is_exact():
    R, t = 0.1, 0.03
    r = R - t
    v, _, j = shell_properties(Sphere(R), t)
    assert v == pytest.approx(4 / 3 * math.pi * (R**3 - r**3), rel=1e-12)
    np.testing.assert_allclose(np.diag(j), 2 / 5 * v * (R**5 - r**5) / (R**3 - r**3), rtol=1e-12)


def test_hollow_box_matches_outer_minus_inner():
    a, b, c, t = 0.3, 0.2, 0.1, 0.01
    v, com, j = shell_properties(Box((a, b, c)), t)
    ai, bi, ci = a - 2 * t, b - 2 * t, c - 2 * t
    assert v == pytest.approx(a * b * c - ai * bi * ci, rel=1e-12)

    def box_i(x, y, z):
        m = x * y * z
        return np.array([y * y + z * z, x * x + z * z, x * x + y * y]) * m / 12

    np.testing.assert_allclose(np.diag(j), box_i(a, b, c) - box_i(ai, bi, ci), rtol=1e-12)
    np.testing.assert_allclose(com, 0.0, atol=1e-15)


def _cube_mesh(size):
    import trimesh

    return Mesh.from_trimesh(trimesh.creation.box(extents=size))


def test_a_box_mesh_shell_is_the_exact_hollow_box():
    # three face planes meet at each corner: the inward offset is exact
    size, t = (0.3, 0.2, 0.1), 0.01
    v, c, j = shell_properties(_cube_mesh(size), t)
    vb, cb, jb = shell_properties(Box(size), t)
    assert v == pytest.approx(vb, rel=1e-10)
    np.testing.assert_allclose(c, cb, atol=1e-12)
    np.testing.assert_allclose(j, jb, rtol=1e-9, atol=1e-15)


def test_a_sphere_mesh_shell_is_close_to_the_sphere_shell():
    import trimesh

    R, t = 0.1, 0.002
    mesh = Mesh.from_trimesh(trimesh.creation.icosphere(subdivisions=5, radius=R))
    v, _, j = shell_properties(mesh, t)
    vs, _, js = shell_properties(Sphere(R), t)
    assert v == pytest.approx(vs, rel=2e-3)
    np.testing.assert_allclose(np.diag(j), np.diag(js), rtol=3e-3)


def _numeric_shell(geometry, t, n=400_000, seed=3):
    """Monte Carlo volume, centroid and unit inertia of {x : -t < φ(x) <= 0} (the reference)."""
    rng = np.random.default_rng(seed)
    lo, hi = geometry.local_aabb()
    pts = rng.uniform(lo, hi, size=(n, 3))
    phi = geometry.phi(pts)
    inside = (phi <= 0) & (phi > -t)
    box = float(np.prod(hi - lo))
    p = pts[inside]
    v = box * inside.mean()
    c = p.mean(axis=0)
    d = p - c
    j = v * (np.eye(3) * np.mean(np.einsum("ij,ij->i", d, d)) - np.einsum("ni,nj->ij", d, d) / len(d))
    return v, c, j


@pytest.mark.parametrize("geometry, t", [
    (Capsule(0.05, 0.1), 0.01),
    (Cylinder(0.05, 0.12), 0.01),
    (Cone(0.06, 0.15), 0.01),
    (Ellipsoid((0.08, 0.05, 0.04)), 0.01),
])
def test_other_primitives_against_the_numerical_wall(geometry, t):
    v, c, j = shell_properties(geometry, t)
    vn, cn, jn = _numeric_shell(geometry, t)
    assert v == pytest.approx(vn, rel=0.02)
    np.testing.assert_allclose(c, cn, atol=0.02 * max(geometry.local_aabb()[1]))
    np.testing.assert_allclose(np.diag(j), np.diag(jn), rtol=0.03)


def test_thin_walls_hold_area_times_thickness():
    # a thin wall's volume is its surface area times its thickness, and grows with the wall
    for g, area in ((Cone(0.06, 0.15), math.pi * 0.06 * (0.06 + math.hypot(0.06, 0.15))),
                    (Cylinder(0.05, 0.12), 2 * math.pi * 0.05 * (0.05 + 0.12)),
                    (Capsule(0.05, 0.1), 4 * math.pi * 0.05**2 + 2 * math.pi * 0.05 * 0.1)):
        assert shell_properties(g, 1e-6)[0] == pytest.approx(area * 1e-6, rel=1e-3)
        walls = [shell_properties(g, t)[0] for t in (1e-3, 1e-2, 2e-2)]
        assert walls == sorted(walls) and walls[-1] < solid_properties(g)[0]


def test_a_wall_thicker_than_the_shape_is_the_solid():
    for g in (Sphere(0.1), Box((0.1, 0.2, 0.3)), Capsule(0.05, 0.1), Cylinder(0.05, 0.3), Cone(0.05, 0.1)):
        vs, cs, js = solid_properties(g)
        v, c, j = shell_properties(g, 1.0)
        assert v == vs
        np.testing.assert_allclose(j, js)


def test_the_sentinel_takes_the_documented_default():
    assert shell_thickness_or_default(-math.inf) == DEFAULT_SHELL_THICKNESS
    assert shell_thickness_or_default(None) == DEFAULT_SHELL_THICKNESS
    assert shell_thickness_or_default(0.004) == 0.004
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="shell thickness"):
            shell_thickness_or_default(bad)


def test_inward_offset_moves_each_face_plane_by_the_thickness():
    mesh = _cube_mesh((1.0, 1.0, 1.0))
    inner = inward_offset(mesh.vertices, mesh.faces, 0.1)
    np.testing.assert_allclose(np.abs(inner), 0.4, atol=1e-12)


def test_bodies_combine_shell_and_solid_shapes():
    # a hollow sphere and a solid one side by side: mass and inertia add with the parallel axis theorem
    rho, R, t = 500.0, 0.1, 0.01
    left = np.array([-0.2, 0, 0, 0, 0, 0, 1.0])
    right = np.array([0.2, 0, 0, 0, 0, 0, 1.0])
    m, c, i = mass_properties([(Sphere(R), left, rho, t), (Sphere(R), right, rho)])
    ms = rho * 4 / 3 * math.pi * R**3
    mh = rho * 4 / 3 * math.pi * (R**3 - (R - t) ** 3)
    assert m == pytest.approx(ms + mh, rel=1e-12)
    assert c[0] == pytest.approx((0.2 * ms - 0.2 * mh) / (ms + mh), rel=1e-12)
    solid_only = mass_properties([(Sphere(R), IDENTITY, rho)])
    assert solid_only[0] == pytest.approx(ms)
