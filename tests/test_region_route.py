"""The face route for non-convex meshes against a shape of planes (hydro.contact.faces with
hydro.sdf.mesh_faces.region_rules): against the ring's closed form, the NumPy twin
(tests/naive_regions.py), marching cubes on the exact fields, and the routing rules."""

import math

import numpy as np
import pytest
import trimesh

from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Mesh
from hydro.sdf.mesh_faces import MAX_REGION_TRIANGLES, RULE_MAX, RULE_MIN, RULE_MIN_EDGE
from hydro.tools import analytic
from naive_regions import integrate, pieces
from pipeline_util import pose, shapes

K = 1e9
NO_REDUCE = HydroelasticConfig(reduce_contacts=False)
GRID = HydroelasticConfig(reduce_contacts=False, flat_polygons=False)


def ring(n, r_out=0.08, r_in=0.05, height=0.03):
    """A ring of n sections (regular n-gons of circumradius r_out and r_in, flat top and bottom at
    z = 0 and height), outward wound: (vertices, faces). Its hole's corners are reflex edges."""
    profile = [(r_out, 0.0), (r_out, height), (r_in, height), (r_in, 0.0)]
    th = 2.0 * np.pi * np.arange(n) / n
    p = np.asarray(profile)
    verts = np.stack([np.outer(np.cos(th), p[:, 0]), np.outer(np.sin(th), p[:, 0]),
                      np.broadcast_to(p[:, 1], (n, 4))], axis=-1).reshape(-1, 3)
    faces = []
    for i in range(n):
        for j in range(4):
            a, b = i * 4 + j, ((i + 1) % n) * 4 + j
            c, d = ((i + 1) % n) * 4 + (j + 1) % 4, i * 4 + (j + 1) % 4
            faces += [(a, b, c), (a, c, d)]
    return verts, np.array(faces, np.int64)


def torus(major=0.08, minor=0.025, n_major=32, n_minor=16):
    m = trimesh.creation.torus(major, minor, major_sections=n_major, minor_sections=n_minor)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def on_box(verts, faces, depth, resolution=64, k_mesh=K):
    """(model, poses): the mesh's lowest point ``depth`` into a 0.5 × 0.5 × 0.2 m box (top z = 0)."""
    lift = -float(verts[:, 2].min()) - depth
    m = shapes([Box((0.5, 0.5, 0.2)), Mesh(verts, faces)], resolution=resolution, stiffness=[K, k_mesh])
    return m, np.array([pose((0.0, 0.0, -0.1)), pose((0.0, 0.0, lift))])


def force_on_mesh(res):
    c = res.contacts
    return float((c.force_vectors()[:, 2].astype(float) * np.where(c.shape_b == 1, 1.0, -1.0)).sum())


def mitre(n, depth, k=K):
    """How much less force the route's field gives a ring of n sections than the exact distance: in
    each wedge of the hole's corners it takes the deeper face plane for the distance to the edge
    (the closed form's π·c³/3 becomes n·tan(π/n)·c³/3, c = depth / 2)."""
    c = 0.5 * depth
    return k * (n * math.tan(math.pi / n) - math.pi) * c**3 / 3.0


def test_a_ring_has_rules_of_each_kind():
    v, f = ring(32)
    m = shapes([Mesh(v, f)], resolution=64)
    lists = m.sdfs[0].face_lists
    assert lists is not None and not lists.convex
    kinds = set(np.unique(lists.rule))
    # reflex edges (the hole's corners), mutually reflex pairs, and max-rule neighbours linked in
    # clusters at the hole's bottom corners
    assert {RULE_MAX, RULE_MIN} <= kinds and kinds & {RULE_MIN_EDGE, RULE_MIN_EDGE + 1, RULE_MIN_EDGE + 2}
    linked = lists.link != 0
    assert linked.any() and np.all(lists.rule[linked] == RULE_MAX)
    # a ring of 8 sections: its hole's corners turn by 45°, where the route's depth in their wedges
    # would be short by up to 1 − cos(22.5°) = 7.6 %: no rules, marching cubes
    v, f = ring(8)
    assert shapes([Mesh(v, f)], resolution=64).sdfs[0].face_lists is None
    # more triangles than MAX_REGION_TRIANGLES (their lists' build cost): none either
    v, f = torus(n_major=48, n_minor=24)
    assert len(f) > MAX_REGION_TRIANGLES
    assert shapes([Mesh(v, f)], resolution=32).sdfs[0].face_lists is None


@pytest.mark.parametrize("n", [24, 32])
def test_a_ring_on_a_box_matches_its_closed_form_to_the_mitre(n):
    d = 0.002
    v, f = ring(n)
    m, poses = on_box(v, f, d)
    res = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    assert res.counts["polygon_triangles"] > 100 and res.counts["candidate_bricks"] == 0  # the face route
    ref = analytic.ring_on_box(d, 0.08, 0.05, n, k=K).force
    short = ref - force_on_mesh(res)
    # short by the mitre term, to the float32 rounding of the stored corners
    assert abs(short - mitre(n, d)) <= 2e-6 * ref, (short, mitre(n, d), ref)


@pytest.mark.parametrize("mesh", ["ring", "torus"])
def test_the_route_is_its_numpy_twin(mesh):
    d = 0.002 if mesh == "ring" else 0.003
    v, f = ring(32) if mesh == "ring" else torus()
    m, poses = on_box(v, f, d)
    res = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    assert res.counts["candidate_bricks"] == 0
    lift = poses[1, :3]
    out, stats, n, c = pieces(v + lift, f, K, K, d)
    want, area = integrate(out, n, c, K)
    got = force_on_mesh(res)
    got_area = float(res.contacts.area[~res.contacts.speculative].astype(float).sum())
    # the kernels read the triangles' planes as stored, float32: an offset of ~0.1 m rounds by ~4e-9 m,
    # ~3e-6 of the torus' 1.5 mm depths (the twin's are float64)
    assert abs(got / want - 1.0) < 1e-5, (got, want)
    assert abs(got_area / area - 1.0) < 1e-5


def test_the_twin_is_the_exact_distance_but_in_the_wedges():
    # random points of each polygon of the twin: the mesh's exact distance is the polygon's plane's,
    # but in the hole's corner wedges, where it is longer by at most rho (1 - cos(theta / 2))
    from naive_regions import check

    n_sec, d = 32, 0.002
    v, f = ring(n_sec)
    v = v + np.array([0.0, 0.0, -d])
    out, stats, n, c = pieces(v, f, K, K, d)
    worst = check(v, f, out, n, c, samples=8, seed=1)
    bound = d * (1.0 - math.cos(math.pi / n_sec))  # theta = 2 pi / n at the hole's corners; rho <= d
    assert worst[0][0] <= bound
    # the wedges are the hole's: every polygon with a larger error than rounding is an inner wall's
    inner = [i for e, i, _ in worst if e > 1e-9]
    centres = (v[f[inner]].mean(axis=1))
    assert np.all(np.hypot(centres[:, 0], centres[:, 1]) < 0.0501)


def test_a_torus_on_a_box_agrees_with_marching_cubes():
    v, f = torus()
    m, poses = on_box(v, f, 0.003)
    faces = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    grid = HydroelasticPipeline(m, GRID).collide(poses)
    assert faces.counts["candidate_bricks"] == 0 and grid.counts["polygon_triangles"] == 0
    assert abs(force_on_mesh(faces) / force_on_mesh(grid) - 1.0) < 2e-3  # marching cubes: −0.09 %
    c = faces.contacts
    assert np.all(c.depth <= 1e-6) and np.all(np.isfinite(c.point))


def test_a_ring_is_the_same_whichever_grid_is_finer():
    # pair setup takes the non-convex mesh as A on the face route: with the ring's grid the finer
    # (the ring first B, then set up again as A) and with the box's the finer (the ring A at once)
    from hydro.scene.model import ModelBuilder
    from hydro.sdf import SDFSettings

    d = 0.002
    v, f = ring(24)
    forces = []
    for box_resolution in (24, 96):
        b = ModelBuilder()
        b.add_shape("/World/Box", Box((0.5, 0.5, 0.2)), local_pose=[0, 0, -0.1, 0, 0, 0, 1], hydroelastic=True,
                    stiffness=K, sdf=SDFSettings(max_resolution=box_resolution))
        body = b.add_body("/World/Ring", [0.0, 0.0, -d, 0, 0, 0, 1])
        b.add_shape("/World/Ring/Mesh", Mesh(v, f), body=body, hydroelastic=True, stiffness=K,
                    sdf=SDFSettings(max_resolution=32))
        model = b.finalize()
        assert (model.sdfs[model.shape_sdf[0]].voxel_size < model.sdfs[model.shape_sdf[1]].voxel_size) == (
            box_resolution == 96)
        res = HydroelasticPipeline(model, NO_REDUCE).collide(model.shape_world_poses(model.state()))
        assert res.counts["candidate_bricks"] == 0 and res.counts["polygon_triangles"] > 0
        forces.append(force_on_mesh(res))
    ref = analytic.ring_on_box(d, 0.08, 0.05, 24, k=K).force
    # (pieces under SLIVER × B's voxel² are dropped, and the box's voxel differs: not to the bit)
    assert abs(forces[0] / forces[1] - 1.0) < 1e-6
    assert abs(ref - forces[0] - mitre(24, d)) <= 2e-6 * ref


def test_two_non_convex_meshes_and_a_deep_press_take_the_grid():
    v, f = ring(24)
    m = shapes([Mesh(v, f), Mesh(v, f)], resolution=32)
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, 0)), pose((0, 0, 0.03 - 0.002))]))
    assert res.counts["candidate_bricks"] > 0 and res.counts["polygon_triangles"] == 0
    # pressed deeper than the ring's lists reach: the grid (its force as marching cubes give it)
    v, f = ring(24, height=0.06)
    mb, poses = on_box(v, f, 0.002)
    reach = mb.sdfs[mb.shape_sdf[1]].face_lists.reach
    depth = reach + 0.003
    assert depth < 0.05  # still less than the ring's height
    deep, poses = on_box(v, f, depth)
    got = HydroelasticPipeline(deep, NO_REDUCE).collide(poses)
    assert got.counts["candidate_bricks"] > 0 and got.counts["polygon_triangles"] == 0
    grid = HydroelasticPipeline(deep, GRID).collide(poses)
    assert force_on_mesh(got) == force_on_mesh(grid) > 0.0
