"""Issue 17: exact primitive fields where the patch is built, exact polygons for box pairs, the CPU
pipeline in one compiled call — against closed forms, a quadrature of the defining integral, the
stage-by-stage path and the invariants."""

import math

import numpy as np
import pytest

from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Capsule, Ellipsoid, Mesh, Sphere
from hydro.tools import analytic
from pipeline_util import pose, shapes

K = 1e9
NO_REDUCE = HydroelasticConfig(reduce_contacts=False)


def _force_z(contacts, upper=1):
    sign = np.where(contacts.shape_b == upper, 1.0, -1.0)
    return float((contacts.force_vectors()[:, 2] * sign).sum())


def _box_phi(center, half, rot=None):
    rot = np.eye(3) if rot is None else rot

    def phi(p):
        q = np.abs((p - center) @ rot) - half
        return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)

    return phi


# ---------------------------------------------------------------------------------------------
# Exact fields on curved patches


def test_exact_fields_reach_drakes_accuracy_where_the_grid_alone_falls_short():
    # sphere R 0.1 pressed 5 mm at 64³ (h = 3.57 mm): the grid alone −0.87 %, exact −0.11 %;
    # Drake at the same h: −0.41 % (docs/benchmarks.md)
    m = shapes([Box((0.5, 0.5, 0.2)), Sphere(0.1)], stiffness=K)
    poses = np.array([pose((0, 0, -0.1)), pose((0, 0, 0.1 - 0.005))])
    ref = analytic.sphere_on_box(0.005, 0.1).force
    err = {}
    for exact in (False, True):
        c = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False, exact_primitives=exact, exact_meshes=exact)).collide(poses)
        err[exact] = _force_z(c.contacts) / ref - 1
    assert abs(err[True]) < 0.002
    assert abs(err[False]) > 2 * abs(err[True])


@pytest.mark.parametrize("upper", ["sphere", "ellipsoid", "capsule"])
def test_vertices_lie_on_the_true_interface(upper):
    # one parabolic step settles each crossing on the exact interface (clamp off: the vertex is
    # the crossing); its pressure there is the exact field's
    geometry = {"sphere": Sphere(0.06), "ellipsoid": Ellipsoid((0.07, 0.05, 0.04)), "capsule": Capsule(0.04, 0.05)}
    g = geometry[upper]
    m = shapes([Box((0.4, 0.4, 0.2)), g], stiffness=[K, 2 * K], resolution=48)
    low = -g.local_aabb()[0][2]
    poses = np.array([pose((0, 0, -0.1)), pose((0.01, -0.02, low - 0.006), (1, 1, 0), 0.3)])
    cfg = HydroelasticConfig(reduce_contacts=False, mc_edge_clamp_min=0.0)
    res = HydroelasticPipeline(m, cfg).collide(poses, triangles=True)
    from hydro.transforms import pose_inverse, pose_transform_points

    v = res.triangles.vertices.reshape(-1, 3)
    phi_box = v[:, 2]  # the box's top face is z = 0 and the patch is far from its sides
    phi_up = g.phi(pose_transform_points(pose_inverse(poses[1]), v))
    f = K * phi_box - 2 * K * phi_up
    h = m.sdfs[m.shape_sdf[1]].voxel_size
    assert np.abs(f).max() < 1e-4 * h * 3 * K  # within 1e-4 voxel of the interface
    np.testing.assert_allclose(res.triangles.vertex_depth.ravel(), phi_box + phi_up, atol=1e-6 * h)


def test_ellipsoid_distance_is_exact_next_to_its_symmetry_planes():
    # regression: at |z| = 1e-18 (a grid point's round-off) Eberly's root stopped far from the
    # root: −8.7 mm for a distance of −11.2 mm
    e = Ellipsoid((0.05, 0.04, 0.03))
    base = np.array([0.0374899, -0.00742857, 0.0])
    ref = e.phi(base[None])[0]
    for z in (1e-18, -1.7e-18, 1e-14, 1e-11, 1e-8):
        assert abs(e.phi((base + [0, 0, z])[None])[0] - ref) < 1e-9, z
    pts = np.array([[1e-17, 0.01, 0.02], [0.01, 1e-19, 0.0], [1e-16, 1e-16, 0.029]])
    plane = pts.copy()
    plane[np.abs(plane) < 1e-12] = 0.0
    np.testing.assert_allclose(e.phi(pts), e.phi(plane), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Box pairs: exact polygons


@pytest.mark.parametrize("ratio", [1.0, 3.0])
def test_a_tilted_box_on_a_box_matches_the_quadrature_of_the_model(ratio):
    # no closed form: the defining integral by column quadrature (hydro.tools.analytic)
    s = 0.08
    rot_axis, angle = np.array([1.0, 0.5, 0.0]) / math.sqrt(1.25), 0.12
    m = shapes([Box((0.5, 0.5, 0.2)), Box((s, s, s))], stiffness=[K, ratio * K])
    # lowest corner 4 mm under the top face
    from hydro.transforms import quat_to_matrix

    p = pose((0.01, 0.0, 0.0), rot_axis, angle)
    rot = quat_to_matrix(p[3:])
    corners = np.array([[x, y, z] for x in (-s / 2, s / 2) for y in (-s / 2, s / 2) for z in (-s / 2, s / 2)])
    p[2] = -(corners @ rot.T)[:, 2].min() - 0.004
    poses = np.array([pose((0, 0, -0.1)), p])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(poses, triangles=True)
    ref = analytic.half_space_force(_box_phi(p[:3], s / 2, rot), (-0.08, -0.08), (0.08, 0.08), k_shape=ratio * K,
                                    k_box=K, spacing=2e-4, depth_scale=0.02)
    assert abs(_force_z(res.contacts) / ref.force - 1) < 2e-4  # the quadrature's own error
    assert len(res.contacts) < 200  # polygons cut into triangles, not one per voxel
    # the patch's lowest point where the closed form puts it (the softer body takes more)
    assert abs(res.triangles.vertices.reshape(-1, 3)[:, 2].min() - ref.lowest) < 2e-4


def test_box_polygons_keep_the_moment_and_agree_with_marching_cubes():
    # an off-centre, yawed, tilted cube: the polygons' centre of pressure and the grid route's
    # agree (the grid converges to the polygons), and the moment about the cube's axis vanishes
    s = 0.1
    m = shapes([Box((0.6, 0.6, 0.2)), Box((s, s, s))], stiffness=K, resolution=96)
    poses = np.array([pose((0, 0, -0.1)), pose((0.12, -0.07, s / 2 - 0.004), (0, 0, 1), 0.4)])
    poly = HydroelasticPipeline(m, NO_REDUCE).collide(poses).contacts
    grid = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False, flat_polygons=False)).collide(poses)
    grid = grid.contacts
    f_poly, f_grid = _force_z(poly), _force_z(grid)
    assert abs(f_poly / analytic.cube_on_box(0.004, s).force - 1) < 1e-5
    assert abs(f_grid / f_poly - 1) < 0.005
    cop = (poly.point * poly.force[:, None]).sum(axis=0) / poly.force.sum()
    np.testing.assert_allclose(cop[:2], [0.12, -0.07], atol=1e-8)
    assert len(poly) < 200 < len(grid)
    # the cut into triangles (polygon_cells) changes nothing but the count: exact either way
    whole = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False, polygon_cells=1)).collide(poses)
    whole = whole.contacts
    assert len(whole) < 20
    assert abs(_force_z(whole) / f_poly - 1) < 1e-6
    cop_whole = (whole.point * whole.force[:, None]).sum(axis=0) / whole.force.sum()
    np.testing.assert_allclose(cop_whole, cop, atol=1e-8)


def test_box_polygons_give_speculative_contacts_inside_the_gap_and_nothing_beyond():
    m = shapes([Box((0.4, 0.4, 0.2)), Box((0.1, 0.1, 0.1))], stiffness=K, gap=[0.0, 0.003])
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    near = pipe.collide(np.array([pose((0, 0, -0.1)), pose((0, 0, 0.05 + 0.002))])).contacts
    assert len(near) > 0 and np.all(near.speculative) and np.all(near.force == 0.0)
    far = pipe.collide(np.array([pose((0, 0, -0.1)), pose((0, 0, 0.05 + 0.004))])).contacts
    assert len(far) == 0


def test_a_box_with_a_margin_takes_the_grid_route():
    # outside a box its distance near the edges is not a plane: a margin sends the pair to marching cubes
    m = shapes([Box((0.4, 0.4, 0.2)), Box((0.1, 0.1, 0.1))], stiffness=K, margin=[0.0, 0.001])
    res = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, -0.1)), pose((0, 0, 0.05 - 0.001))]))
    assert res.counts["polygon_triangles"] == 0 and res.counts["triangles"] > 100


# ---------------------------------------------------------------------------------------------
# The compiled call against the staged path


def _scenes_list():
    """(name, model, poses): curved primitives with gaps; box pairs (polygons); a mesh (its grid)."""
    curved = shapes([Box((0.3, 0.3, 0.1)), Sphere(0.05), Capsule(0.03, 0.04)], stiffness=[K, 2 * K, K],
                    resolution=24, gap=[0.0, 0.002, 0.002])
    boxes = shapes([Box((0.5, 0.5, 0.2)), Box((0.1, 0.1, 0.1)), Box((0.1, 0.1, 0.1))], stiffness=K, resolution=24)
    v = np.array([[0.05, 0, 0], [-0.05, 0, 0], [0, 0.05, 0], [0, -0.05, 0], [0, 0, 0.05], [0, 0, -0.05]])
    f = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    mesh = shapes([Box((0.3, 0.3, 0.1)), Mesh(v, f)], stiffness=K, resolution=24)
    return [
        ("sphere and capsule on a box", curved,
         np.array([pose((0, 0, -0.05)), pose((0.0, 0.0, 0.045)), pose((0.1, 0, 0.025), (1, 0, 0), 1.3)])),
        ("boxes", boxes, np.array([pose((0, 0, -0.1)), pose((0.1, 0, 0.048), (0, 0, 1), 0.3),
                                   pose((-0.1, 0, 0.047), (1, 0, 0), 0.05)])),
        ("mesh on a box", mesh, np.array([pose((0, 0, -0.05)), pose((0.0, 0.0, 0.046), (1, 1, 0), 0.2)])),
    ]


@pytest.mark.parametrize("reduce", [False, True])
def test_the_compiled_call_writes_what_the_staged_path_writes(reduce):
    cfg = HydroelasticConfig(reduce_contacts=reduce, max_contacts_per_pair=12)
    for name, m, poses in _scenes_list():
        one = HydroelasticPipeline(m, cfg).collide(poses)
        staged = HydroelasticPipeline(m, cfg, stage_timings=True).collide(poses)
        assert set(one.timings_ms) >= {"stages"} and "marching_cubes" in staged.timings_ms
        for key in ("pairs", "candidate_bricks", "cells_2", "triangles", "polygon_triangles"):
            assert one.counts[key] == staged.counts[key], (name, key)
        for field, arr in one.contacts.as_dict().items():
            np.testing.assert_array_equal(arr, getattr(staged.contacts, field), err_msg=f"{name}: {field}")


def test_the_compiled_call_grows_its_buffers_and_clips_explicit_ones():
    _, m, poses = _scenes_list()[0]
    ref = HydroelasticPipeline(m, NO_REDUCE, stage_timings=True).collide(poses)
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    ws = pipe.workspace
    for b in (ws.contact_f, ws.contact_i, ws.block_pair, ws.block_ijk, ws.block_corners, ws.block_counts,
              ws.block_offsets):
        b.capacity = 8  # pretend the estimates were too small: the call grows them and runs again
    res = pipe.collide(poses)
    assert not res.overflow and len(res.contacts) == len(ref.contacts) > 8
    clipped = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False, contact_capacity=40, overflow="ignore"))
    out = clipped.collide(poses)
    assert len(out.contacts) == 40
    assert out.overflow[0].setting == "contact_capacity" and out.overflow[0].required == len(ref.contacts)
    np.testing.assert_array_equal(out.contacts.force, ref.contacts.force[:40])


def test_a_small_scene_runs_serially_and_a_large_one_with_threads():
    import numba

    _, m, poses = _scenes_list()[0]
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    pipe.collide(poses)
    assert not pipe._threaded  # first call: serial; a small scene stays so
    n = 12
    boxes = [Box((2.0, 2.0, 0.2))] + [Box((0.1, 0.1, 0.1))] * (n * n)
    big = shapes(boxes, stiffness=K, resolution=16)
    grid = [pose(((i - n / 2) * 0.15, (j - n / 2) * 0.15, 0.048)) for i in range(n) for j in range(n)]
    poses = np.array([pose((0, 0, -0.1))] + grid)
    pipe = HydroelasticPipeline(big, HydroelasticConfig(reduce_contacts=False, flat_polygons=False))
    first = pipe.collide(poses)
    pipe.thread_mode = "threaded"  # whatever the machine's load (the automatic choice: test_collide_call.py)
    assert pipe._threaded == (numba.get_num_threads() > 1)
    second = pipe.collide(poses)  # the threaded build writes what the serial one wrote
    np.testing.assert_array_equal(first.contacts.force, second.contacts.force)
