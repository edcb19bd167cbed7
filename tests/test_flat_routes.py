"""Issue 25: flat faces as polygons wherever both fields are affine — convex meshes on boxes and
each other (exact polygons, stage 4b), a cylinder's or cone's cap on a box or convex mesh (the
axial route: caps and rim band integrated exactly around the axis) — against closed forms, an
independent quadrature of the model and the marching-cubes route on the same pairs."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.spatial.transform import Rotation

from hydro.contact.config import HydroelasticConfig
from hydro.contact.contacts import CF_COUNT, CF_FORCE, CF_NORMAL, CI_COUNT, TF_COUNT
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Cone, ConvexMesh, Cylinder
from hydro.sdf import SDFPack, SDFSettings, build_sdf
from hydro.tools import analytic
from pipeline_util import pose, shapes

K = 1e9
R, H = 0.05, 0.1
NO_REDUCE = HydroelasticConfig(reduce_contacts=False)
GRID = HydroelasticConfig(reduce_contacts=False, flat_polygons=False)


def totals(res):
    """Force and torque (about the origin) on shape 1 and the patch area, summed in float64."""
    c = res.contacts
    f = c.force_vectors().astype(float) * np.where(c.shape_b == 1, 1.0, -1.0)[:, None]
    return f.sum(0), np.cross(c.point.astype(float), f).sum(0), float(c.area[~c.speculative].astype(float).sum())


def hex_prism(radius=0.05, height=0.08):
    th = np.arange(6) * np.pi / 3
    ring = np.c_[radius * np.cos(th), radius * np.sin(th)]
    return ConvexMesh.from_points(np.concatenate([np.c_[ring, np.full(6, -height / 2)],
                                                  np.c_[ring, np.full(6, height / 2)]]))


# ---------------------------------------------------------------------------------------------
# The closed form of a cylinder standing on its end, against a quadrature of the model


def _cylinder_phi(rho, z, depth):
    """The exact signed distance of a long cylinder of radius R whose end face is z = −depth."""
    dr = rho - R
    dz = -depth - z
    return min(max(dr, dz), 0.0) + math.hypot(max(dr, 0.0), max(dz, 0.0))


@pytest.mark.parametrize("kc, kb", [(K, K), (K, 4 * K), (4 * K, K), (K, 1000 * K)])
def test_the_cylinder_end_closed_form_matches_a_quadrature_of_the_model(kc, kb):
    # on each ray ρ the interface height z* solves kc·φ_cyl(ρ, z) = kb·z (one root: the
    # difference falls as z rises); P_z = kb·∫ 2πρ (−z*) dρ and A = ∫ 2πρ √(1 + z*'²) dρ
    d = 0.002

    def z_star(rho):
        g = lambda z: kc * _cylinder_phi(rho, z, d) - kb * z  # noqa: E731
        return optimize.brentq(g, -d, 0.0, xtol=1e-15, rtol=1e-15) if g(0.0) < 0.0 else 0.0

    # the rim band starts where the end face and the side are equally near: a breakpoint
    a = R - d * kb / (kc + kb)
    force = kb * sum(integrate.quad(lambda r: -2 * math.pi * r * z_star(r), lo, hi, epsabs=0, epsrel=1e-12)[0]
                     for lo, hi in ((0.0, a), (a, R)))
    step = 1e-7 * R

    def slope(r):
        return (z_star(r + step) - z_star(r - step)) / (2 * step)

    area = sum(integrate.quad(lambda r: 2 * math.pi * r * math.sqrt(1 + slope(r) ** 2), lo, hi, epsrel=1e-10)[0]
               for lo, hi in ((0.0, a - 2 * step), (a + 2 * step, R - 2 * step)))
    ref = analytic.cylinder_end_on_box(d, R, k_cylinder=kc, k_box=kb)
    assert ref.force == pytest.approx(force, rel=1e-9)
    assert ref.area == pytest.approx(area, rel=1e-5)
    assert ref.lowest == pytest.approx(z_star(0.0), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# The axial route


@pytest.mark.parametrize("kc, kb", [(K, K), (K, 4 * K), (4 * K, K)])
def test_a_cylinder_on_its_end_is_exact(kc, kb):
    d = 0.002
    m = shapes([Box((0.4, 0.4, 0.2)), Cylinder(R, H)], stiffness=[kb, kc])
    poses = np.array([pose((0, 0, -0.1)), pose((0.01, 0.02, H / 2 - d))])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    assert res.counts["triangles"] == 0 and 0 < res.counts["polygon_triangles"] < 400
    ref = analytic.cylinder_end_on_box(d, R, k_cylinder=kc, k_box=kb)
    f, t, area = totals(res)
    # float32 contact columns: the closed form to their rounding
    assert f[2] == pytest.approx(ref.force, rel=1e-7)
    assert area == pytest.approx(ref.area, rel=1e-6)
    np.testing.assert_allclose(f[:2], 0.0, atol=1e-7 * ref.force)
    # the centre of pressure on the axis: torque about it vanishes (to 1e-5: a contact on the
    # curved rim band is its part's force at its centre of pressure, off by O(Δθ²) in moment)
    cop = np.array([0.01, 0.02, 0.0])
    np.testing.assert_allclose(t - np.cross(cop, f), 0.0, atol=1e-5 * ref.force * R)
    assert res.patch.depth.min() < 0 and not res.patch.speculative.any()


def test_the_axial_route_is_the_closed_form_to_double_rounding():
    # the route's own arithmetic in float64 (its Python source, float64 buffers): ~1e-15
    from hydro.contact.axial import axial_contacts
    from hydro.contact.polytope import POLYGON_SCRATCH

    d = 0.002
    m = shapes([Box((0.4, 0.4, 0.2)), Cylinder(R, H)], stiffness=[4 * K, K])
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    pipe.collide(np.array([pose((0, 0, -0.1)), pose((0.01, 0.02, H / 2 - d), (0, 0, 1), 0.3)]))
    args = (pipe._pair_view, pipe.sdf_view, np.zeros((1, POLYGON_SCRATCH)), 6.0, 0)
    n = axial_contacts.py_func(0, False, *args, np.zeros((1, CF_COUNT)), np.zeros((1, CI_COUNT), np.int32),
                               np.zeros((0, TF_COUNT)), 0)
    cf = np.full((n, CF_COUNT), np.nan)
    ci = np.full((n, CI_COUNT), -1, np.int32)
    assert axial_contacts.py_func(0, True, *args, cf, ci, np.zeros((0, TF_COUNT)), n) == n
    assert np.isfinite(cf).all() and (ci >= 0).all()
    f = (cf[:, CF_FORCE, None] * cf[:, CF_NORMAL:CF_NORMAL + 3]).sum(0)
    ref = analytic.cylinder_end_on_box(d, R, k_cylinder=K, k_box=4 * K)
    assert abs(f[2]) == pytest.approx(ref.force, rel=1e-12)


def _placed(phi, p):
    rot = Rotation.from_quat(p[3:]).as_matrix()
    return lambda x: phi((x - p[:3]) @ rot)


def _cylinder_field(x, hh=H / 2):
    dr = np.hypot(x[:, 0], x[:, 1]) - R
    dz = np.abs(x[:, 2]) - hh
    return np.minimum(np.maximum(dr, dz), 0) + np.hypot(np.maximum(dr, 0), np.maximum(dz, 0))


def _planes_field(planes):
    return lambda x: (x @ planes[:, :3].T - planes[:, 3]).max(axis=1)


def _quadrature(phi, p, surface, k_shape, k_box, spacing=1.5e-4):
    """The model's force by column quadrature (hydro.tools.analytic.half_space_force) over the
    extent of the shape's ``surface`` points (local) below the box's top face, grown by 1 mm (a
    larger rectangle adds only columns without overlap)."""
    pts = surface @ Rotation.from_quat(p[3:]).as_matrix().T + p[:3]
    pts = pts[pts[:, 2] < 0.0]
    lo = pts.min(axis=0)[:2] - 0.001
    hi = pts.max(axis=0)[:2] + 0.001
    return analytic.half_space_force(_placed(phi, p), lo, hi, k_shape=k_shape, k_box=k_box, spacing=spacing,
                                     depth_scale=0.02).force


# (name, geometry, its field for the quadrature (None: none, too slow for the suite), pose on a
# box whose top face is z = 0)
TILTED = {
    "cylinder_tilted": (Cylinder(R, H), _cylinder_field,
                        pose((0, 0, 0.05 * math.cos(0.1) + 0.05 * math.sin(0.1) - 0.003), (1, 0, 0), 0.1)),
    "cone_tilted": (Cone(R, H), None, pose((0, 0, 0.05 - 0.003), (0, 1, 0), 0.05)),
}


@pytest.mark.parametrize("name", sorted(TILTED))
@pytest.mark.parametrize("ratio", [1.0, 3.0])
def test_tilted_caps_match_the_quadrature_and_marching_cubes(name, ratio):
    # a partly resting cap: its piece is cut by a line across the disk; the θ quadrature
    # converges (6th order away from the cut's corners) — well inside marching cubes' error
    geo, phi, p = TILTED[name]
    m = shapes([Box((0.4, 0.4, 0.2)), geo], stiffness=[ratio * K, K])
    poses = np.array([pose((0, 0, -0.1)), p])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    grid = HydroelasticPipeline(m, GRID).collide(poses)
    assert res.counts["triangles"] == 0 and res.counts["polygon_triangles"] > 0
    f, t, area = totals(res)
    fg, tg, ag = totals(grid)
    if phi is not None:
        th = np.linspace(0, 2 * np.pi, 721)
        rim = np.c_[R * np.cos(th), R * np.sin(th), np.full_like(th, -H / 2)]
        assert f[2] == pytest.approx(_quadrature(phi, p, rim, K, ratio * K), rel=5e-4)
    # against marching cubes (64³, its exact fields): force, torque, area within its error
    assert np.linalg.norm(f - fg) < 0.012 * np.linalg.norm(fg)
    assert np.linalg.norm(t - tg) < 0.012 * np.linalg.norm(tg)
    assert area == pytest.approx(ag, rel=0.015)


def test_the_cylinder_as_either_shape_of_the_pair_gives_one_patch():
    # B is the finer grid: a long cylinder's coarse grid makes it A; a short one's, B
    p = pose((0.01, 0, 0.15 - 0.002), (1, 0, 0), 0.05)
    box_pose = pose((0, 0, -0.05))
    out = []
    for res_box, res_cyl in ((32, 16), (16, 32)):
        m = shapes([Box((0.2, 0.2, 0.1)), Cylinder(R, 0.3)], stiffness=[2 * K, K], resolution=8)
        m.sdfs = [build_sdf(Box((0.2, 0.2, 0.1)), SDFSettings(max_resolution=res_box)),
                  build_sdf(Cylinder(R, 0.3), SDFSettings(max_resolution=res_cyl))]
        m.sdf_pack = SDFPack(m.sdfs)
        res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([box_pose, p]))
        assert res.counts["polygon_triangles"] > 0
        out.append((res.pair_shape_a[0], totals(res)))
    assert out[0][0] != out[1][0]
    np.testing.assert_allclose(out[0][1][0], out[1][1][0], rtol=1e-6, atol=1e-6 * abs(out[0][1][0][2]))
    np.testing.assert_allclose(out[0][1][1], out[1][1][1], rtol=1e-5, atol=1e-6 * np.abs(out[0][1][1]).max())


@pytest.mark.parametrize("case", ["lying", "overhanging", "no_polygons"])
def test_pairs_the_axial_route_cannot_take_go_to_the_grid(case):
    # a cylinder on its side (its rim interface is parallel to the axis), overhanging the box's
    # edge (the box's side face against the cylinder's side), or polygons off
    p = {"lying": pose((0, 0, R - 0.002), (1, 0, 0), math.pi / 2),
         "overhanging": pose((0.18, 0, H / 2 - 0.002))}.get(case, pose((0, 0, H / 2 - 0.002)))
    m = shapes([Box((0.4, 0.4, 0.2)), Cylinder(R, H)])
    res = HydroelasticPipeline(m, GRID if case == "no_polygons" else NO_REDUCE).collide(
        np.array([pose((0, 0, -0.1)), p]))
    assert res.counts["polygon_triangles"] == 0 and res.counts["triangles"] > 100
    if case == "lying":
        ref = analytic.cylinder_on_box(0.002, R, H)
        assert totals(res)[0][2] == pytest.approx(ref.force, rel=0.01)


# ---------------------------------------------------------------------------------------------
# Convex meshes: exact polygons


def _hull():
    return ConvexMesh.from_points(np.random.default_rng(1).normal(size=(20, 3)) * 0.04, name="hull")


# (a flat hexagonal prism is the box-as-a-mesh and marching-cubes test's below: its quadrature is
# too slow for the suite)
CONVEX = {
    "hex_prism_tilted": (hex_prism, pose((0.01, 0, 0.045), (1, 0.3, 0), 0.15)),
    "random_hull": (_hull, None),
}


@pytest.mark.parametrize("name, ratio", [("hex_prism_tilted", 1.0), ("hex_prism_tilted", 3.0), ("random_hull", 3.0)])
def test_a_convex_mesh_on_a_box_matches_the_quadrature(name, ratio):
    make, p = CONVEX[name]
    g = make()
    if p is None:  # resting 4 mm deep on its lowest vertex
        p = pose((0, 0, -g.vertices[:, 2].min() - 0.004))
    m = shapes([Box((0.4, 0.4, 0.2)), g], stiffness=[ratio * K, K])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), p]))
    assert res.counts["triangles"] == 0 and res.counts["polygon_triangles"] > 0
    f, t, area = totals(res)
    # the overlap's extent: the hull's edges, sampled (they cross the top face where it ends)
    a, b = g.vertices[g.faces], g.vertices[np.roll(g.faces, 1, axis=1)]
    t = np.linspace(0.0, 1.0, 201)[:, None, None, None]
    edges = (a + t * (b - a)).reshape(-1, 3)
    ref = _quadrature(_planes_field(g.planes), p, edges, K, ratio * K, spacing=1e-4 if name.startswith("hex") else 2e-4)
    # the quadrature's midpoint rule is the looser of the two
    assert f[2] == pytest.approx(ref, rel=2e-4)
    np.testing.assert_allclose(f[:2], 0.0, atol=1e-6 * f[2])


def test_convex_polygons_agree_with_marching_cubes_and_a_box_as_a_convex_mesh():
    # a box given as a convex mesh takes the same polygons as the box itself; the hexagonal
    # prism's polygons agree with marching cubes on its grid (within the grid's error near edges)
    box = Box((0.1, 0.08, 0.06))
    as_mesh = ConvexMesh.from_points(np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.04, 0.04)
                                               for z in (-0.03, 0.03)]))
    p = pose((0.02, -0.01, 0.03 - 0.002), (1, 1, 0), 0.04)
    out = []
    for g in (box, as_mesh):
        m = shapes([Box((0.4, 0.4, 0.2)), g], stiffness=[2 * K, K])
        out.append(totals(HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), p]))))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6, atol=1e-6 * out[0][0][2])
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-5, atol=1e-6 * np.abs(out[0][1]).max())
    assert out[0][2] == pytest.approx(out[1][2], rel=1e-6)
    m = shapes([Box((0.4, 0.4, 0.2)), hex_prism()], stiffness=K)
    poses = np.array([pose((0, 0, -0.1)), pose((0.01, 0, 0.04 - 0.002))])
    f, t, area = totals(HydroelasticPipeline(m, NO_REDUCE).collide(poses))
    fg, tg, ag = totals(HydroelasticPipeline(m, GRID).collide(poses))
    assert np.linalg.norm(f - fg) < 0.03 * np.linalg.norm(f)
    assert np.linalg.norm(t - tg) < 0.03 * np.linalg.norm(t)
    assert area == pytest.approx(ag, rel=0.02)


def test_two_convex_meshes_and_a_cylinder_on_a_convex_mesh():
    # convex on convex (polygons), a cylinder's end on a convex mesh's face (axial): against the
    # same pairs with the mesh replaced by the box it equals
    slab = ConvexMesh.from_points(np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.2, 0.2)
                                            for z in (-0.1, 0.1)]))
    for upper, p in ((hex_prism(), pose((0.01, 0, 0.04 - 0.002))), (Cylinder(R, H), pose((0.01, 0, H / 2 - 0.002)))):
        out = []
        for lower in (slab, Box((0.4, 0.4, 0.2))):
            m = shapes([lower, upper], stiffness=[3 * K, K])
            res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), p]))
            assert res.counts["triangles"] == 0 and res.counts["polygon_triangles"] > 0
            out.append(totals(res))
        np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6, atol=1e-6 * out[0][0][2])
    ref = analytic.cylinder_end_on_box(0.002, R, k_cylinder=K, k_box=3 * K)
    assert out[0][0][2] == pytest.approx(ref.force, rel=1e-7)


def test_coplanar_hull_triangles_are_one_plane():
    from hydro.sdf.pack import shape_planes

    rows, count = shape_planes(hex_prism())
    assert count == 8 and len(hex_prism().faces) == 20
    np.testing.assert_allclose(np.linalg.norm(rows[:count, :3], axis=1), 1.0)
    np.testing.assert_allclose(rows[count + 1, :3], [0.05, 0.05 * math.sqrt(3) / 2, 0.04])


def test_a_hexagonal_prism_flat_on_a_box_is_its_closed_form():
    # the cube's closed form for any convex cross-section (analytic.prism_on_box; the square is
    # the cube's), met by the polygons to float32 rounding
    th = np.arange(6) * np.pi / 3
    ring = 0.05 * np.c_[np.cos(th), np.sin(th)]
    square = analytic.prism_on_box(0.002, [[-0.05, -0.05], [0.05, -0.05], [0.05, 0.05], [-0.05, 0.05]])
    cube = analytic.cube_on_box(0.002, 0.1)
    assert square.force == pytest.approx(cube.force, rel=1e-12) and square.area == pytest.approx(cube.area, rel=1e-12)
    m = shapes([Box((0.4, 0.4, 0.2)), hex_prism()], stiffness=K)
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), pose((0.01, 0, 0.04 - 0.002))]))
    f, t, area = totals(res)
    ref = analytic.prism_on_box(0.002, ring)
    assert f[2] == pytest.approx(ref.force, rel=1e-7)
    assert area == pytest.approx(ref.area, rel=1e-6)


@pytest.mark.parametrize("tilt", [0.0, 0.1])
def test_the_axial_routes_triangles_show_its_contacts(tilt):
    # the optional triangle buffer: each contact's part of the (curved) patch as a triangle, wound
    # along the contact's normal, holding its centre of pressure nearby; together about its area
    m = shapes([Box((0.4, 0.4, 0.2)), Cylinder(R, H)], stiffness=[2 * K, K])
    p = pose((0, 0, 0.05 * math.cos(tilt) + 0.05 * math.sin(tilt) - 0.003), (1, 0, 0), tilt)
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), p]), triangles=True)
    c, tri = res.patch, res.triangles
    v = tri.vertices.astype(float)
    cross = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    # (the part next to the axis of a cell there is a sliver: two of its corners are the axis)
    big = np.linalg.norm(cross, axis=1) > 1e-12
    assert big.mean() > 0.8
    assert (np.einsum("ij,ij->i", cross[big], c.normal[big].astype(float)) > 0).all()
    reach = np.linalg.norm(v - v.mean(axis=1, keepdims=True), axis=2).max(axis=1)
    assert (np.linalg.norm(c.point - v.mean(axis=1), axis=1)[big] <= 1.5 * reach[big]).all()
    # the triangles are for display: straight between their corners, where a part's bounds curve
    # in θ (a cut across the tilted cap), so their area is the contacts' only to a few per cent
    shown = 0.5 * np.linalg.norm(cross, axis=1).sum()
    assert shown == pytest.approx(float(c.area.astype(float).sum()), rel=0.02 if tilt == 0.0 else 0.1)
    assert (tri.vertex_depth <= 1e-8).all() and (tri.vertex_pressure >= 0).all()


def test_a_cone_on_its_tip_matches_the_quadrature():
    # the side against the face only (the rim band's cone, here the whole patch): exact, where
    # marching cubes' grid is coarse next to a 1.5 mm patch
    r, hh = R, H / 2
    slant = math.hypot(r, 2 * hh)

    def cone_field(x):  # inside: the larger of the slant's and the base's distances; outside: positive
        return np.maximum((2 * hh * np.hypot(x[:, 0], x[:, 1]) + r * (x[:, 2] - hh)) / slant, -hh - x[:, 2])

    p = pose((0, 0, hh - 0.003), (1, 0, 0), math.pi)
    m = shapes([Box((0.4, 0.4, 0.2)), Cone(r, H)], stiffness=[2 * K, K])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), p]))
    assert res.counts["triangles"] == 0 and res.counts["polygon_triangles"] > 0
    ref = analytic.half_space_force(_placed(cone_field, p), (-0.003, -0.003), (0.003, 0.003), k_shape=K,
                                    k_box=2 * K, spacing=2e-5, depth_scale=0.02).force
    assert totals(res)[0][2] == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("d", [0.002, -0.0005, -0.0015])
def test_the_axial_route_with_a_gap_gives_speculative_contacts_inside_it(d):
    # gap 1 mm: pressed 2 mm, the force is the gap-free closed form (the rim band's cells reach
    # into the gap band outside the rim: partly inside, they are ordinary contacts); 0.5 mm
    # apart, only speculative contacts (depth within the gap); 1.5 mm apart, nothing — as the
    # grid route does
    m = shapes([Box((0.4, 0.4, 0.2)), Cylinder(R, H)], stiffness=[2 * K, K], gap=[0.0, 0.001])
    poses = np.array([pose((0, 0, -0.1)), pose((0.01, 0, H / 2 - d))])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    grid = HydroelasticPipeline(m, GRID).collide(poses)
    assert res.counts["triangles"] == 0
    c = res.patch
    spec = c.speculative
    if d < -0.001:
        assert len(c) == 0 and len(grid.patch) == 0
        return
    assert (spec.any() and grid.patch.speculative.any()) or d > 0
    assert (c.depth[spec] > 0).all() and (c.depth[spec] <= 0.001 * (1 + 1e-6)).all()
    assert (c.force[spec] == 0).all() and (c.area[spec] == 0).all()
    f = totals(res)[0]
    if d > 0:
        ref = analytic.cylinder_end_on_box(d, R, k_cylinder=K, k_box=2 * K)
        assert f[2] == pytest.approx(ref.force, rel=1e-7)
        # the area inside the overlap is the gap-free patch's
        assert c.area.astype(float).sum() == pytest.approx(ref.area, rel=1e-6)
    else:
        assert spec.all() and f[2] == 0.0


def _multi_root_force(phi, lo, hi, k_shape, k_box, spacing, depth, steps):
    """P_z of a shape on a softer box's top face (z = 0), where the interface may fold (a slanted
    side: k_shape·∂φ/∂z > k_box) and a vertical line meets it more than once: every root of
    k_shape·φ − k_box·z on [−depth, 0] counts, signed by which way the difference crosses."""
    xs = np.arange(lo[0] + spacing / 2, hi[0], spacing)
    ys = np.arange(lo[1] + spacing / 2, hi[1], spacing)
    x, y = (a.ravel() for a in np.meshgrid(xs, ys, indexing="ij"))
    zs = np.linspace(-depth, 0.0, steps + 1)
    total = 0.0
    prev = k_shape * phi(np.c_[x, y, np.full_like(x, zs[0])]) - k_box * zs[0]
    for z0, z1 in zip(zs[:-1], zs[1:]):
        g = k_shape * phi(np.c_[x, y, np.full_like(x, z1)]) - k_box * z1
        cross = np.sign(g) != np.sign(prev)
        if cross.any():
            a, b, ga = np.full(cross.sum(), z0), np.full(cross.sum(), z1), prev[cross]
            for _ in range(40):
                mid = 0.5 * (a + b)
                gm = k_shape * phi(np.c_[x[cross], y[cross], mid]) - k_box * mid
                same = np.sign(gm) == np.sign(ga)
                a, ga, b = np.where(same, mid, a), np.where(same, gm, ga), np.where(same, b, mid)
            total += np.sum(np.sign(g[cross] - prev[cross]) * k_box * 0.5 * (a + b)) * spacing**2
        prev = g
    return total


def test_a_tilted_cone_on_a_softer_box_where_the_interface_folds():
    # a cone on its base, tilted, on a box 0.3× as stiff: along a vertical line the interface is
    # met twice near the rim (the slant rises faster than the box gives); the axial route
    # integrates each piece on its own surface, against a quadrature that counts every root
    r, hh, tilt, d = 0.059, 0.046, 0.177, 0.00289
    slant = math.hypot(r, 2 * hh)

    def cone_field(x):
        return np.maximum((2 * hh * np.hypot(x[:, 0], x[:, 1]) + r * (x[:, 2] - hh)) / slant, -hh - x[:, 2])

    lowest = hh * math.cos(tilt) + r * math.sin(tilt)  # the rim's lowest point, below the centre
    p = pose((0, 0, lowest - d), (1, 0, 0), tilt)
    th = np.linspace(0, 2 * np.pi, 3601)
    rim = np.c_[r * np.cos(th), r * np.sin(th), np.full_like(th, -hh)] @ Rotation.from_quat(p[3:]).as_matrix().T
    rim = rim[rim[:, 2] + p[2] < 0.0] + p[:3]
    m = shapes([Box((0.4, 0.4, 0.2)), Cone(r, 2 * hh)], stiffness=[0.3 * K, K])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), p]))
    assert res.counts["triangles"] == 0 and res.counts["polygon_triangles"] > 0
    ref = _multi_root_force(_placed(cone_field, p), rim.min(axis=0)[:2] - 0.002, rim.max(axis=0)[:2] + 0.004, K,
                            0.3 * K, 2e-4, 0.004, 100)
    assert totals(res)[0][2] == pytest.approx(ref, rel=2e-3)


def test_a_cone_on_its_tip_at_equal_stiffness_takes_the_axial_route():
    # its base is parallel to the box's face, of equal pressure: no surface there, not a reason
    # for the grid (the rotation leaves rounding in the face's normal)
    m = shapes([Box((0.4, 0.4, 0.2)), Cone(R, H)], stiffness=K)
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)),
                                                               pose((0, 0, H / 2 - 0.003), (1, 0, 0), math.pi)]))
    assert res.counts["triangles"] == 0 and res.counts["polygon_triangles"] > 0
