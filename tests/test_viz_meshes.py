"""Meshes for display (library side, no Polyscope): level sets of SDFs and contact patches.

- hydro.sdf.level_set.marching_cubes against the slow reference extractor (tests/naive_mc.py);
- SDF grid values against the SDF's own sampler; zero level sets against analytic areas;
- hydro.contact.patch_mesh against the pipeline's unreduced contacts (one triangle per contact).
"""

import math
import os

import numpy as np
import pytest
from scipy.spatial import cKDTree

from hydro.contact.config import HydroelasticConfig
from hydro.geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Plane, Sphere
from hydro.sdf.level_set import marching_cubes, mesh_area, sdf_grid_values, sdf_level_set
from hydro.contact.patch_mesh import patch_mesh, patch_meshes
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.sdf import SDFSettings, build_sdf
from hydro.transforms import pose_compose
from naive_mc import extract_surface
from pipeline_util import pose

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _closed_and_oriented(faces):
    """Every directed edge used once and its reverse once (a closed, consistently wound mesh)."""
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    n = int(faces.max()) + 1
    directed = e[:, 0] * n + e[:, 1]
    reverse = e[:, 1] * n + e[:, 0]
    return len(np.unique(directed)) == len(directed) and np.all(np.isin(reverse, directed))


def test_marching_cubes_matches_the_reference_extractor():
    rng = np.random.default_rng(3)
    n = 12
    x, y, z = np.meshgrid(*(np.linspace(-1, 1, n + 1),) * 3, indexing="ij")
    values = np.sqrt(x**2 + 1.3 * y**2 + z**2) - 0.7 + 0.05 * rng.standard_normal(x.shape)  # (x, y, z)
    ref = extract_surface(values, origin=(-1, -1, -1), spacing=2.0 / n)
    mesh = marching_cubes(values.transpose(2, 1, 0), origin=(-1, -1, -1), spacing=2.0 / n)
    assert len(mesh.faces) == len(ref.triangles) and len(mesh.vertices) == len(ref.vertices)

    def triangles(v, f):  # order-free: each triangle as its sorted, rounded corner positions
        return sorted(tuple(sorted(map(tuple, tri))) for tri in np.round(v[f], 12).tolist())

    assert triangles(mesh.vertices, mesh.faces) == triangles(ref.vertices, ref.triangles)
    # same winding: normals agree triangle by triangle once matched by centroid
    c_ref = ref.vertices[ref.triangles].mean(axis=1)
    c = mesh.vertices[mesh.faces].mean(axis=1)
    d, idx = cKDTree(c_ref).query(c)
    assert d.max() < 1e-12
    n_ref = np.cross(*(ref.vertices[ref.triangles[:, k]] - ref.vertices[ref.triangles[:, 0]] for k in (1, 2)))
    n = np.cross(*(mesh.vertices[mesh.faces[:, k]] - mesh.vertices[mesh.faces[:, 0]] for k in (1, 2)))
    np.testing.assert_allclose(n, n_ref[idx], atol=1e-12)
    # a field on the grid carried to the vertices: the field itself interpolates to zero
    np.testing.assert_allclose(mesh.interpolate(values.transpose(2, 1, 0)), 0.0, atol=1e-12)


def test_marching_cubes_on_a_long_grid():
    # more than 127 samples along an axis (the tables are int8)
    x = np.linspace(-1, 1, 300)
    values = np.broadcast_to(x[None, None, :] - 0.1, (3, 4, 300))  # the plane x = 0.1
    mesh = marching_cubes(values, origin=(-1, 0, 0), spacing=(2 / 299, 1, 1))
    np.testing.assert_allclose(mesh.vertices[:, 0], 0.1, atol=1e-12)
    assert mesh_area(mesh.vertices, mesh.faces) == pytest.approx(3 * 2)


def test_marching_cubes_clamp_and_empty_grid():
    values = np.ones((3, 3, 3))
    assert len(marching_cubes(values).faces) == 0
    values[0, 0, 0] = -1e-9  # a crossing right at one corner
    free = marching_cubes(values)
    clamped = marching_cubes(values, clamp=0.25)
    assert free.vertex_t.min() < 1e-6 and clamped.vertex_t.min() == pytest.approx(0.25)
    with pytest.raises(ValueError, match="clamp"):
        marching_cubes(values, clamp=0.5)


@pytest.mark.parametrize("fmt", ["uint16", "uint8", "float32"])
def test_sdf_grid_values_are_what_the_sampler_reads(fmt):
    sdf = build_sdf(Sphere(0.1), SDFSettings(max_resolution=64, texture_format=fmt,
                                                      narrow_band_inner=-0.01, narrow_band_outer=0.01))
    assert (sdf.brick_slot >= 0).any() and (sdf.brick_slot < 0).any()  # both fine and coarse bricks
    grid = sdf.grid_points()
    np.testing.assert_allclose(sdf_grid_values(sdf), sdf.sample(grid.reshape(-1, 3)).reshape(grid.shape[:3]),
                               rtol=0, atol=1e-12)
    part = sdf_grid_values(sdf, (3, 5, 7), (10, 9, 30))
    np.testing.assert_array_equal(part, sdf_grid_values(sdf)[7:31, 5:10, 3:11])


def test_zero_level_set_of_a_sphere_has_the_sphere_area():
    r = 0.1
    sdf = build_sdf(Sphere(r), SDFSettings(max_resolution=48))
    mesh = sdf_level_set(sdf)
    assert _closed_and_oriented(mesh.faces)
    assert mesh_area(mesh.vertices, mesh.faces) == pytest.approx(4 * math.pi * r * r, rel=0.01)
    np.testing.assert_allclose(np.linalg.norm(mesh.vertices, axis=1), r, atol=0.1 * sdf.voxel_size)
    # the band's inner edge is the sphere of radius r + inner (the band reaches below the centre here)
    inner = sdf_level_set(sdf, -0.05)
    assert mesh_area(inner.vertices, inner.faces) == pytest.approx(4 * math.pi * 0.05**2, rel=0.02)


def test_zero_level_set_of_a_box_has_the_box_area():
    size = (0.2, 0.1, 0.06)
    sdf = build_sdf(Box(size), SDFSettings(max_resolution=64))
    mesh = sdf_level_set(sdf)
    assert _closed_and_oriented(mesh.faces)
    a, b, c = size
    # flat faces are exact; marching cubes bevels the 12 edges: where the faces are cut u, v <= h
    # from an edge, u + v becomes sqrt(u² + v²), losing at most (2 - √2)·h per metre of edge
    exact = 2 * (a * b + b * c + c * a)
    bevel = 4 * (a + b + c) * (2 - math.sqrt(2)) * sdf.voxel_size
    assert exact - bevel <= mesh_area(mesh.vertices, mesh.faces) <= exact * (1 + 1e-9)
    # the faces sit where the stored (uint16) field crosses zero
    assert np.abs(mesh.vertices).max(axis=0) == pytest.approx(np.array(size) / 2, abs=0.01 * sdf.voxel_size)


@pytest.mark.parametrize("geometry", [Sphere(0.1), Box((0.2, 0.1, 0.05)), Capsule(0.03, 0.12), Cylinder(0.05, 0.1),
                                      Cone(0.05, 0.12), Ellipsoid((0.1, 0.05, 0.03))], ids=lambda g: g.kind_name)
def test_source_meshes_are_the_authored_geometry(geometry):
    import trimesh

    from viz.shapes import source_mesh

    v, f = source_mesh(geometry)
    lo, hi = geometry.local_aabb()
    np.testing.assert_allclose(v.min(axis=0), lo, atol=1e-9 + 0.01 * np.abs(lo).max())
    np.testing.assert_allclose(v.max(axis=0), hi, atol=1e-9 + 0.01 * np.abs(hi).max())
    tm = trimesh.Trimesh(v, f, process=False)
    assert tm.is_watertight and tm.volume == pytest.approx(geometry.volume(), rel=0.02)


def test_source_meshes_of_meshes_and_planes():
    from viz.shapes import source_mesh

    tri = Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]), np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2],
                                                                                   [1, 2, 3]]))
    v, f = source_mesh(tri)
    assert v is tri.vertices and f is tri.faces
    v, f = source_mesh(Plane())  # no scene to size it: a PLANE_DRAW_SIZE square, gridded
    assert np.ptp(v, axis=0).tolist() == [2.0, 2.0, 0.0] and f.shape[1] == 4 and len(f) >= 16
    # sized to the scene: it covers the extent it is given (padded), on a round grid
    v, f = source_mesh(Plane(), extent=(np.array([0.3, -0.1, 0.0]), np.array([0.7, 0.1, 0.2])))
    assert np.all(v.min(axis=0)[:2] <= [0.3, -0.1]) and np.all(v.max(axis=0)[:2] >= [0.7, 0.1])
    assert np.ptp(v, axis=0)[:2].max() < 1.0 and np.all(v[:, 2] == 0.0)
    step = np.diff(np.unique(v[:, 0]))
    np.testing.assert_allclose(step, step[0])  # even cells of a round size, aligned to the plane's origin
    np.testing.assert_allclose(v[:, 0] / step[0], np.round(v[:, 0] / step[0]), atol=1e-9)


# --------------------------------------------------------------------------------------------
# patch meshes


def _scene(name):
    from hydro.scene.usd_io import load_usd

    return load_usd(os.path.join(ROOT, "scenes", name))


def _assert_patch_matches_contacts(pm, contacts, h):
    """Same triangles as the pipeline's contacts, in row order: each face is the triangle its contact
    was integrated over — the contact's point lies on it, its normal is the face's, the area inside
    the overlap is at most the face's and all of it when every vertex is inside. A face that a kink
    of an exact field or the rim crosses is integrated over its sub-triangles settled on the patch
    (docs/design.md, stage 5): its contact's normal is their resultant's direction, its point their
    centre of pressure, off the face by at most the patch's sag over it; those are checked as such."""
    assert len(pm) == len(contacts) > 0
    np.testing.assert_array_equal(pm.face_point, contacts.point.astype(float))
    assert pm.face_area.sum() == pytest.approx(contacts.area.astype(float).sum(), rel=1e-5)
    assert np.array_equal(pm.face_speculative, contacts.speculative)
    v = pm.vertices[pm.faces]
    cross = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    geo_area = 0.5 * np.linalg.norm(cross, axis=1)
    big = geo_area > 1e-3 * h * h  # (float32 vertices: a sliver's normal is not resolved)
    assert big.mean() > 0.9
    unit = cross / (2 * np.maximum(geo_area, 1e-300)[:, None])
    whole = np.linalg.norm(unit - contacts.normal, axis=1) <= 1e-3  # the face's own normal
    sub = big & ~whole  # subdivided: the resultant of sub-triangles within a voxel's sag of the face
    assert whole[big].mean() > 0.5
    assert ((unit[sub] * contacts.normal[sub]).sum(axis=1) > 0.5).all()  # tilted, never turned over
    # the contact's point is on its face's plane (a subdivided one's within the sag), and within the
    # face's extent
    off_plane = np.abs(((contacts.point - v[:, 0]) * unit).sum(axis=1))
    assert off_plane[big & whole].max() < 1e-4 * h
    if sub.any():
        assert off_plane[sub].max() < 0.5 * h
    reach = np.where(sub, 0.5 * h, 1e-4 * h)[:, None]
    lo, hi = v.min(axis=1) - reach, v.max(axis=1) + reach
    assert ((contacts.point >= lo) & (contacts.point <= hi)).all()
    # the inside part's area: at most the face's, all of it when the face is wholly inside (a
    # subdivided face's: the area of its sub-triangles on the patch, which bends within a voxel)
    flat = ~sub
    assert (contacts.area[flat] <= geo_area[flat] * (1 + 1e-4) + 1e-9 * h * h).all()
    assert (contacts.area[sub] <= 2.0 * geo_area[sub]).all()
    inside = (pm.vertex_depth[pm.faces] < 0).all(axis=1)
    np.testing.assert_allclose(contacts.area[inside & flat], geo_area[inside & flat], rtol=1e-4, atol=1e-6 * h * h)
    np.testing.assert_allclose(pm.face_area, contacts.area, rtol=0, atol=0)
    np.testing.assert_allclose(pm.face_pressure, contacts.pressure, rtol=0, atol=0)
    np.testing.assert_allclose(pm.face_depth, contacts.depth, rtol=0, atol=0)
    # a vertex's fields are those the triangle was integrated from: the depth of a wholly inside
    # face is within the range of its vertices' depths, up to the curvature term of exact
    # primitive fields — 3/4 of the sag of a distance of curvature radius R over a chord of h,
    # at most h²/(8R) ≤ h/8 for any surface the grid resolves (R ≥ h)
    vd = pm.vertex_depth[pm.faces]
    assert (pm.face_depth[inside] <= vd[inside].max(axis=1) + h / 8).all()
    assert (pm.face_depth[inside] >= vd[inside].min(axis=1) - h / 8).all()


@pytest.mark.parametrize("scene, interface", [
    ("sphere_on_box.usda", "continuous"),
    ("two_spheres.usda", "switched"),
    ("torus_on_box.usda", "continuous"),
    ("pinch.usda", "continuous"),
])
def test_patch_mesh_has_the_pipelines_triangles(scene, interface):
    model = _scene(scene)
    cfg = HydroelasticConfig(reduce_contacts=False, interface=interface)
    poses = model.shape_world_poses(model.state())
    result = HydroelasticPipeline(model, cfg).collide(poses)
    assert len(result.pair_shape_a) > 0
    for p, (s0, s1) in enumerate(zip(result.pair_shape_a, result.pair_shape_b)):
        contacts = result.patch.select(result.patch.pair == p)
        h = model.sdfs[model.shape_sdf[s1]].voxel_size
        pm = patch_mesh(model, poses, s1, s0, config=cfg)  # either order: B is chosen
        assert (pm.shape_a, pm.shape_b) == (s0, s1)
        _assert_patch_matches_contacts(pm, contacts, h)


def test_patch_mesh_of_a_tilted_capsule_and_per_vertex_fields():
    model = _scene("capsule_on_box.usda")
    cfg = HydroelasticConfig(reduce_contacts=True, mc_edge_clamp_min=0.05)
    state = model.state()
    body = int(model.find_bodies("/World/Capsule")[0])
    state.body_q[body] = pose_compose(pose((0.01, -0.02, -0.004), (1.0, 2.0, 0.5), 0.3), state.body_q[body])
    poses = model.shape_world_poses(state)
    result = HydroelasticPipeline(model, cfg).collide(poses)
    (pm,) = patch_meshes(model, poses, result, config=cfg)
    h = model.sdfs[model.shape_sdf[pm.shape_b]].voxel_size
    _assert_patch_matches_contacts(pm, result.patch, h)
    # per-vertex pressure and depth: with the linear quadrature alone (no exact primitive
    # distances, so no curvature term) a wholly inside face's values are its vertices' means
    linear = HydroelasticConfig(reduce_contacts=True, mc_edge_clamp_min=0.05, exact_primitives=False, exact_meshes=False)
    (pl,) = patch_meshes(model, poses, HydroelasticPipeline(model, linear).collide(poses), config=linear)
    kb = model.shape_stiffness[pl.shape_b]
    inside = ~pl.face_speculative & (pl.vertex_depth[pl.faces] < 0).all(axis=1)
    assert inside.sum() > 0.5 * len(pl)
    mean_p = pl.vertex_pressure[pl.faces].mean(axis=1)
    positive = (pl.vertex_pressure[pl.faces] > 0).all(axis=1) & inside
    # (vertex and face values are both stored as float32)
    np.testing.assert_allclose(mean_p[positive], pl.face_pressure[positive], rtol=1e-6)
    np.testing.assert_allclose(pl.vertex_depth[pl.faces].mean(axis=1)[inside], pl.face_depth[inside], rtol=1e-6,
                               atol=1e-9)
    # neighbouring triangles share their vertices: the patch is one connected surface
    assert len(pm.vertices) < 0.6 * 3 * len(pm.faces)
    assert kb > 0 and pm.vertex_pressure.max() > 0
    # the patch's net force is the reduced contacts' net force
    f_patch = (pm.face_force[:, None] * pm.face_normal).sum(axis=0)
    f_red = result.contacts.force_vectors().sum(axis=0)
    np.testing.assert_allclose(f_patch, f_red, rtol=1e-4, atol=1e-6 * np.linalg.norm(f_red))


def test_patch_mesh_is_empty_apart():
    model = _scene("sphere_on_box.usda")
    state = model.state()
    state.body_q[0, 2] += 0.05
    poses = model.shape_world_poses(state)
    pm = patch_mesh(model, poses, 0, 1)
    assert len(pm) == 0 and pm.vertices.shape == (0, 3)
