"""Heightfield colliders (issue 29): the geometry (grid, slab, heights), point contacts of a sphere,
a box, a capsule and a convex hull against it (depths and normals against closed forms), refusal
as hydroelastic with the document's reason, USD reading and writing, the shipped scene (a box
resting on a heightfield reads m·g on its sensor) and the viewer's mesh."""

import os

import numpy as np
import pytest

from hydro.contact.point_pipeline import PointContactPipeline
from hydro.geometry import Box, Capsule, ConvexMesh, Heightfield, Sphere
from hydro.scene.model import ModelBuilder
from point_util import point_model, pose

SCENES = os.path.join(os.path.dirname(__file__), "..", "scenes")


def collide(model, poses):
    contacts, pa, pb, call = PointContactPipeline(model).collide(np.asarray(poses, float))
    assert not call.overflow
    return contacts


def bumpy(slope=0.0):
    """A 1.2 m square field: a plane z = slope·x inside |x|, |y| <= 0.3 m, bumps beyond."""
    x = np.linspace(-0.6, 0.6, 13)
    xx, yy = np.meshgrid(x, x)
    outside = np.maximum(np.abs(xx), np.abs(yy)) > 0.3 + 1e-9
    return Heightfield(slope * xx + np.where(outside, 0.03 * np.sin(7 * xx) * np.cos(5 * yy), 0.0), hx=0.6, hy=0.6)


def test_the_grid_follows_newtons_convention_and_the_slab_is_closed():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(4, 6)) * 0.05
    hf = Heightfield(h, hx=1.0, hy=0.5, thickness=0.2)
    verts, faces = hf.surface_mesh()
    # heights[r, c] at x = −hx + 2hx·c/(ncol−1), y = −hy + 2hy·r/(nrow−1)
    np.testing.assert_allclose(verts[1 * 6 + 2], [-1.0 + 2.0 * 2 / 5, -0.5 + 1.0 / 3, h[1, 2]])
    tri = verts[faces]
    normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    assert np.all(normals[:, 2] > 0)  # the surface faces up
    slab = hf.to_mesh()
    slab.check_watertight()
    # the slab's volume: over each triangle, its xy area times its mean height above the bottom
    bottom = h.min() - 0.2
    area = 0.5 * np.abs(normals[:, 2])
    np.testing.assert_allclose(slab.volume(), np.sum(area * (tri[:, :, 2].mean(axis=1) - bottom)), rtol=1e-9)
    lo, hi = hf.local_aabb()
    np.testing.assert_allclose(lo, [-1.0, -0.5, bottom]) and np.testing.assert_allclose(hi, [1.0, 0.5, h.max()])
    # height_at lies on the triangulated surface: the slab's signed distance there is 0
    x, y = rng.uniform(-1, 1, 40), rng.uniform(-0.5, 0.5, 40)
    np.testing.assert_allclose(slab.phi(np.c_[x, y, hf.height_at(x, y)]), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="at least 2 rows and 2 columns"):
        Heightfield([[0.0, 1.0]])
    with pytest.raises(ValueError, match="hx must be a finite number > 0"):
        Heightfield(h, hx=0.0)
    from hydro.scene.validate import size_findings

    assert size_findings("/World/T", hf) == []
    (f,) = size_findings("/World/T", Heightfield(h, hx=1e5, hy=0.5))
    assert f.code == "HYDRO.GEO.002" and "extent along x (2 hx) is 200000 m" in f.message


@pytest.mark.parametrize("slope", [0.0, 0.2])
def test_a_sphere_on_a_heightfield_touches_where_its_samples_reach(slope):
    # the heightfield takes the triangle-mesh route: the sphere's surface samples are looked up
    # in the slab's distance field, so the deepest contact is the deepest sample's true depth
    from hydro.geometry.support import surface_samples

    r, sink = 0.05, 0.002
    m = point_model([bumpy(slope), Sphere(r)], static=(0,))
    n = np.array([-slope, 0.0, 1.0]) / np.hypot(slope, 1.0)  # the plane z = slope·x: its upward normal
    center = np.array([0.05, -0.04, slope * 0.05]) + n * (r - sink)
    c = collide(m, [pose(), pose(center)])
    assert len(c) >= 1 and set(c.shape_a) == {0} and set(c.shape_b) == {1}
    deepest = int(np.argmin(c.depth))
    expected = np.min((center + surface_samples(Sphere(r))) @ n)  # signed distance of the deepest sample
    assert -sink <= expected < -sink + 0.02 * r  # the samples' spacing costs < 2 % of the radius here
    np.testing.assert_allclose(c.depth[deepest], expected, atol=2e-5)
    np.testing.assert_allclose(c.normal[deepest], n, atol=2e-3)  # from the heightfield (A) toward the sphere


@pytest.mark.parametrize("geometry", [Box((0.1, 0.08, 0.06)), Capsule(0.03, 0.12),
                                      ConvexMesh.from_points(np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1]))
                                                             .reshape(3, -1).T * [0.05, 0.04, 0.03])],
                         ids=["box", "capsule", "convex"])
def test_a_box_a_capsule_and_a_hull_resting_flat_touch_at_their_lowest_points(geometry):
    sink = 0.001
    lo, _ = geometry.local_aabb() if not isinstance(geometry, Capsule) else (np.array([0, 0, -0.03]), None)
    # the capsule lies along x (its axis turned from z to x); the others sit on their bottom face
    p = pose((0.02, 0.01, -lo[2] - sink)) if not isinstance(geometry, Capsule) else \
        pose((0.02, 0.01, 0.03 - sink), (0.0, 1.0, 0.0), np.pi / 2)
    m = point_model([bumpy(), geometry], static=(0,))
    c = collide(m, [pose(), p])
    assert 2 <= len(c) <= 4
    # the lowest points are sink deep (every one for a flat face); each contact's depth is its
    # surface point's height above the flat ground, the contact point midway
    np.testing.assert_allclose(c.depth.min(), -sink, atol=2e-5)
    if not isinstance(geometry, Capsule):
        np.testing.assert_allclose(c.depth, -sink, atol=2e-5)
    np.testing.assert_allclose(c.depth, 2.0 * c.point[:, 2], atol=2e-5)
    assert np.all(c.depth < 0)
    np.testing.assert_allclose(c.normal, np.tile([0, 0, 1.0], (len(c), 1)), atol=1e-3)
    # nothing when lifted clear
    assert len(collide(m, [pose(), p + np.r_[0, 0, 0.01, 0, 0, 0, 0]])) == 0


def test_hydroelastic_is_refused_with_the_documents_reason_and_a_body_cannot_carry_one():
    b = ModelBuilder()
    with pytest.raises(ValueError, match="HYDRO.HYD.001 ERROR /World/Terrain: newton:hydroelasticEnabled is true on a "
                                         "heightfield: hydroelastic contact requires volumetric shapes with SDF data "
                                         "and is not supported for planes, heightfields"):
        b.add_shape("/World/Terrain", Heightfield(), hydroelastic=True)
    body = b.add_body("/World/Cart", density=1000.0)
    with pytest.raises(ValueError, match="/World/Cart/Terrain: a heightfield is static"):
        b.add_shape("/World/Cart/Terrain", Heightfield(), body=body)


def test_usd_round_trip_keeps_the_grid_and_the_pose(tmp_path):
    from hydro.scene.usd_io import load_usd, save_usd

    h = np.round(np.random.default_rng(1).normal(size=(4, 6)) * 0.02, 3)
    b = ModelBuilder()
    b.add_shape("/World/Terrain", Heightfield(h, hx=1.0, hy=0.5, thickness=0.2), local_pose=pose((0.1, 0.2, 0.3)))
    body = b.add_body("/World/Box", pose((0, 0, 0.5)), mass=1.0)
    b.add_shape("/World/Box/Collider", Box((0.1, 0.1, 0.1)), body=body)
    m = b.finalize()
    path = str(tmp_path / "hf.usda")
    save_usd(m, path)
    text = open(path).read()
    assert 'def HeightField "Terrain"' in text and "hydro:heightfield:elevation" in text
    m2 = load_usd(path)
    assert m2.shape_geometry[0] == m.shape_geometry[0]
    np.testing.assert_allclose(m2.shape_world_poses(m2.state())[0], pose((0.1, 0.2, 0.3)), atol=1e-12)


def test_usd_heightfield_scale_and_bad_values(tmp_path):
    from hydro.scene.usd_io import load_usd

    def write(extra, attrs):
        p = tmp_path / "t.usda"
        p.write_text(f"""#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "World"
{{
    def Xform "T"
    {{
        double3 xformOp:scale = (2, 3, 0.5)
        uniform token[] xformOpOrder = ["xformOp:scale"]
        def HeightField "Terrain" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {{
{attrs}
        }}
    }}
{extra}
}}
""")
        return str(p)

    good = """            float[] hydro:heightfield:elevation = [0, 0.1, 0.2, 0.3]
            int hydro:heightfield:numRows = 2
            int hydro:heightfield:numCols = 2
            float2 hydro:heightfield:halfExtents = (0.5, 0.5)"""
    g = load_usd(write("", good)).shape_geometry[0]
    assert isinstance(g, Heightfield)
    assert (g.hx, g.hy) == (1.0, 1.5) and g.heights == ((0.0, 0.05), (0.1, 0.15))  # scaled per axis
    with pytest.raises(ValueError, match="HYDRO.GEO.001 ERROR /World/T/Terrain: hydro:heightfield:elevation must "
                                         "hold hydro:heightfield:numRows x hydro:heightfield:numCols values"):
        load_usd(write("", good.replace("numCols = 2", "numCols = 3")))
    with pytest.raises(ValueError, match="a HeightField needs hydro:heightfield:halfExtents authored"):
        load_usd(write("", good.rsplit("\n", 1)[0]))


def test_a_box_resting_on_the_shipped_heightfield_reads_its_weight():
    from hydro.sim.sensors import ContactSensorCfg
    from hydro.sim.simulation import Simulation

    sim = Simulation(os.path.join(SCENES, "box_on_heightfield.usda"), dt=1.0 / 60.0)
    assert type(sim.model.shape_geometry[0]) is Heightfield
    sensor = sim.add_sensor(ContactSensorCfg("/World/Box", filter_prim_paths_expr=["/World/Terrain"]))
    sim.update(step=20)
    mg = sim.model.body_mass[0] * 9.81
    np.testing.assert_allclose(sensor.data.net_forces_w[0, 0], [0, 0, mg], rtol=0, atol=0.01 * mg)
    np.testing.assert_allclose(sensor.data.force_matrix_w[0, 0, 0], [0, 0, mg], rtol=0, atol=0.01 * mg)
    assert abs(sim.state.body_q[0, 2] - (0.05 - mg / 2e5)) < 2e-5  # at the depth the scene's header gives


def test_the_viewer_draws_a_heightfields_surface():
    pytest.importorskip("trimesh")
    from viz.shapes import source_mesh

    hf = bumpy()
    v, f = source_mesh(hf)
    v0, f0 = hf.surface_mesh()
    np.testing.assert_array_equal(v, v0) and np.testing.assert_array_equal(f, f0)
    assert len(v) == 13 * 13 and len(f) == 2 * 12 * 12


def test_the_shipped_heightfield_scene_renders_its_terrain():
    from viz_util import SIZE, background_fraction, headless_polyscope, scene_path

    headless_polyscope()
    from viz.picture import render
    from viz.scene import SceneView, ViewSettings

    settings = ViewSettings()  # as `hydro view` draws it: a heightfield has no SDF, its surface stands in
    view = SceneView.from_usd(scene_path("box_on_heightfield.usda"), settings=settings)
    picture = render(view, size=SIZE, colorbar=False, camera="0.9,-1.0,0.6:0,0,0")
    assert 1.0 - background_fraction(picture) > 0.3  # the opaque terrain fills the lower part
    settings.show_sdf_mesh = False
    bare = render(view, size=SIZE, colorbar=False, camera="0.9,-1.0,0.6:0,0,0")
    assert background_fraction(bare) > 0.9 and background_fraction(bare) > background_fraction(picture) + 0.3
