"""The face route (hydro.contact.faces): two convex triangle meshes as exact polygons, one per pair of
triangles, against an independent quadrature, the polytope route and marching cubes."""

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import ConvexMesh, Mesh
from hydro.sdf.mesh_faces import is_convex
from hydro.tools.analytic import convex_pair_force
from pipeline_util import pose, shapes

K = 1e9
R = 0.1
NO_REDUCE = HydroelasticConfig(reduce_contacts=False)
GRID = HydroelasticConfig(reduce_contacts=False, flat_polygons=False)


def icosphere(radius=R, subdivisions=3):
    m = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def totals(res):
    """Force and torque (about the origin) on shape 1 and the patch area, summed in float64."""
    c = res.contacts
    f = c.force_vectors().astype(float) * np.where(c.shape_b == 1, 1.0, -1.0)[:, None]
    return f.sum(0), np.cross(c.point.astype(float), f).sum(0), float(c.area[~c.speculative].astype(float).sum())


def test_convex_meshes_are_told_from_the_others():
    v, f = icosphere(subdivisions=2)
    assert is_convex(v, f)
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    assert is_convex(box.vertices, box.faces)
    dented = np.array(box.vertices, float)
    dented[0] *= 0.8  # a corner pushed in: its faces fold inward
    assert not is_convex(dented, box.faces)
    torus = trimesh.creation.torus(0.08, 0.025)
    assert not is_convex(torus.vertices, torus.faces)
    m = shapes([Mesh(v, f), Mesh(torus.vertices, torus.faces)], resolution=32)
    assert m.sdfs[0].face_lists.convex
    assert m.sdfs[1].face_lists is None or not m.sdfs[1].face_lists.convex  # its regions' rules


@pytest.mark.parametrize("rotated", [False, True])
def test_two_icospheres_match_the_quadrature_and_marching_cubes(rotated):
    v, f = icosphere()
    ra, rb = ((Rotation.random(random_state=3), Rotation.random(random_state=4)) if rotated
              else (Rotation.identity(), Rotation.identity()))
    d = 0.004
    ref = convex_pair_force(v, f, ra.as_matrix(), rb.as_matrix(), 2 * R - d, k=K)  # no pipeline code
    m = shapes([Mesh(v, f), Mesh(v, f)], resolution=64)
    poses = np.array([np.r_[0.0, 0.0, 0.0, ra.as_quat()], np.r_[0.0, 0.0, 2 * R - d, rb.as_quat()]])
    faces = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    assert faces.counts["polygon_triangles"] > 20 and faces.counts["candidate_bricks"] == 0
    grid = HydroelasticPipeline(m, GRID).collide(poses)
    assert grid.counts["polygon_triangles"] == 0 and grid.counts["triangles"] > 100
    (fx, fy, fz), torque, area = totals(faces)
    assert abs(fz / ref - 1.0) < 2e-4, (fz, ref)  # the quadrature's own error is ~1e-5
    (gx, gy, gz), g_torque, g_area = totals(grid)
    assert abs(gz / fz - 1.0) < 5e-3  # marching cubes on the exact fields: within half a percent
    np.testing.assert_allclose([fx, fy], [gx, gy], atol=5e-3 * fz)
    np.testing.assert_allclose(torque, g_torque, atol=5e-3 * fz * R)
    # every contact inside both shapes (separation <= 0, to float32 rounding of the planes)
    c = faces.contacts
    assert np.all(c.depth <= 1e-6) and np.all(np.isfinite(c.point))


def assert_as_the_polytope_route(tri, hull, poses):
    """The triangle-mesh model ``tri`` (face route) gives the convex-mesh model ``hull``'s contacts
    (polytope route: float64 planes) to the float32 rounding of the triangle table."""
    got = HydroelasticPipeline(tri, NO_REDUCE).collide(poses)
    want = HydroelasticPipeline(hull, NO_REDUCE).collide(poses)
    assert got.counts["polygon_triangles"] > 0 and got.counts["candidate_bricks"] == 0
    (force, torque, area), (w_force, w_torque, w_area) = totals(got), totals(want)
    assert abs(w_force[2]) > 10.0
    np.testing.assert_allclose(force, w_force, rtol=0, atol=1e-5 * abs(w_force[2]))
    np.testing.assert_allclose(torque, w_torque, rtol=0, atol=1e-5 * abs(w_force[2]) * 0.1)
    assert abs(area / w_area - 1.0) < 1e-5


def tilted_cube(angle, axis):
    """A 0.1 m cube's triangle mesh, and a tilt with how far the tilted cube reaches below its centre."""
    cube = trimesh.creation.box((0.1, 0.1, 0.1))
    tilt = Rotation.from_rotvec(angle * np.asarray(axis, float) / np.linalg.norm(axis))
    return (np.asarray(cube.vertices, float), np.asarray(cube.faces, np.int64), tilt,
            0.05 * np.abs(tilt.as_matrix()[2]).sum())


def test_a_box_as_a_triangle_mesh_is_the_box_as_a_convex_mesh():
    # the same tilted cube pair through the face route (triangle meshes: 12 triangles, 2 per face)
    # and through the polytope route (convex meshes: 6 planes): one exact answer
    v, f, tilt, below = tilted_cube(0.1, (1.0, 0.4, 0.0))
    poses = np.array([pose((0, 0, 0)), np.r_[0.004, -0.003, 0.05 + below - 0.003, tilt.as_quat()]])
    assert_as_the_polytope_route(shapes([Mesh(v, f), Mesh(v, f)], resolution=32),
                                 shapes([ConvexMesh.from_points(v), ConvexMesh.from_points(v)], resolution=32), poses)


def test_apart_nothing_and_deep_the_grid():
    v, f = icosphere(subdivisions=2)
    m = shapes([Mesh(v, f), Mesh(v, f)], resolution=32)
    apart = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, 0)), pose((0, 0, 2 * R + 0.001))]))
    assert len(apart.contacts) == 0
    # pressed deeper than the neighbour lists hold: the pair takes the grid
    reach = m.sdfs[0].face_lists.reach
    assert 0.5 * m.sdfs[0].voxel_size <= reach <= 8.0 * m.sdfs[0].voxel_size
    deep = HydroelasticPipeline(m, NO_REDUCE).collide(np.array([pose((0, 0, 0)),
                                                                pose((0, 0, 2 * R - reach - 0.005))]))
    assert deep.counts["candidate_bricks"] > 0 and deep.counts["polygon_triangles"] == 0
    assert totals(deep)[0][2] > 0.0


@pytest.mark.parametrize("box_size", [0.3, 0.08])
def test_a_cube_mesh_on_a_box_is_the_convex_cube_on_the_box(box_size):
    # a triangle mesh against a shape of planes (the box): the face route, one answer with the
    # polytope route's cube; the box as B (a large box: the cube's finer grid is B) and as A (a
    # small one, under the tilted cube's lower part)
    from hydro.geometry import Box

    v, f, tilt, below = tilted_cube(0.03, (0.3, 1.0, 0.0))
    poses = np.array([pose((0, 0, -box_size / 2)), np.r_[-0.02, 0.005, below - 0.003, tilt.as_quat()]])
    ground = Box((box_size, box_size, box_size))
    assert_as_the_polytope_route(shapes([ground, Mesh(v, f)], resolution=32, stiffness=[2e9, 1e9]),
                                 shapes([ground, ConvexMesh.from_points(v)], resolution=32, stiffness=[2e9, 1e9]),
                                 poses)


def test_an_icosphere_on_a_box_agrees_with_marching_cubes():
    from hydro.geometry import Box

    v, f = icosphere()
    m = shapes([Box((0.5, 0.5, 0.2)), Mesh(v, f)], resolution=64)
    poses = np.array([pose((0, 0, -0.1)), np.r_[0.0, 0.0, R - 0.003, Rotation.random(random_state=5).as_quat()]])
    faces = HydroelasticPipeline(m, NO_REDUCE).collide(poses)
    grid = HydroelasticPipeline(m, GRID).collide(poses)
    assert faces.counts["polygon_triangles"] > 10 and faces.counts["candidate_bricks"] == 0
    (fx, fy, fz), torque, area = totals(faces)
    (gx, gy, gz), g_torque, g_area = totals(grid)
    assert fz > 10.0 and abs(gz / fz - 1.0) < 5e-3
    np.testing.assert_allclose(torque, g_torque, atol=5e-3 * fz * R)


def test_the_write_pass_replays_each_piece_to_the_bit():
    # the count pass records, per piece, the planes that cut it (a mask of the nine fixed ones, the
    # neighbours in order); the write pass clips against only those: each recorded piece must come
    # out as the full clip makes it, to the bit
    import numba

    from hydro.contact.faces import ALL_FIXED, FACE_META, FACE_PIECES, _cache_neighbours, _piece, unpack_piece
    from hydro.contact.pair_layout import PF_KA, PF_KB, PI_SDF_A, PI_SDF_B
    from hydro.contact.polygon import MAX_POLYGON

    @numba.njit
    def replay_all(pairs, sdf, scratch, out):
        pair_f = pairs.f
        sa = pairs.i[0, PI_SDF_A]
        sb = pairs.i[0, PI_SDF_B]
        depth_a = scratch[0, FACE_META + 1]
        depth_b = scratch[0, FACE_META + 2]
        replayed = 0
        for q in range(int(scratch[0, FACE_META])):
            i, choice, fixed = unpack_piece(int(scratch[0, FACE_PIECES + 3 * q]))
            j = int(scratch[0, FACE_PIECES + 3 * q + 1])
            cuts = scratch[0, FACE_PIECES + 3 * q + 2]
            n_a = _cache_neighbours(pair_f, 0, sdf, sa, i, depth_a, scratch)
            for mode in range(2):
                row, n, ux, uy, uz, anx, any_, anz, ac, bnx, bny, bnz, bc, cut, got = _piece(
                    pair_f, 0, sdf, sa, sb, i, j, n_a, pair_f[0, PF_KA], pair_f[0, PF_KB], depth_a, depth_b, scratch,
                    ALL_FIXED if mode == 0 else fixed, -1.0 if mode == 0 else cuts, choice)
                out[q, mode, 0] = n
                for v in range(3 * n):
                    out[q, mode, 1 + v] = scratch[0, row * 3 * MAX_POLYGON + v]
                if mode == 0 and (got != cuts or cut != fixed):
                    out[q, 0, 0] = -1.0  # the record is not the one the count pass made
            if cuts >= 0.0:
                replayed += 1
        return replayed

    v, f = icosphere()
    ra, rb = Rotation.random(random_state=3), Rotation.random(random_state=4)
    m = shapes([Mesh(v, f), Mesh(v, f)], resolution=64)
    poses = np.array([np.r_[0.0, 0.0, 0.0, ra.as_quat()], np.r_[0.0, 0.0, 2 * R - 0.004, rb.as_quat()]])
    pipe = HydroelasticPipeline(m, NO_REDUCE)
    pipe.collide(poses)
    scratch = pipe.workspace.polygon_scratch.array
    pieces = int(scratch[0, FACE_META])
    records = scratch[0, FACE_PIECES + 2:FACE_PIECES + 3 * pieces:3]
    fixed = scratch[0, FACE_PIECES:FACE_PIECES + 3 * pieces:3].astype(np.int64) % 512
    assert pieces > 50 and np.sum(records > 256.0) > 10  # many pieces replay two neighbour cuts or more
    assert np.all(fixed > 0) and np.all(fixed < 511)  # each cut by some of the nine planes, not all
    out = np.full((pieces, 2, 1 + 3 * MAX_POLYGON), np.nan)
    replayed = replay_all(pipe._pair_view, pipe.sdf_view, scratch, out)
    assert replayed == np.sum(records >= 0.0) > 0.8 * pieces
    assert np.all(out[:, 0, 0] >= 3)  # each recorded piece is a piece, recorded as the count pass did
    np.testing.assert_array_equal(out[:, 0], out[:, 1])  # NaN past each polygon's end on both sides


def test_each_cluster_ball_holds_its_triangles_balls():
    # the near-triangle searches pass over a run of FACE_CLUSTER triangles when the run's ball
    # misses: each triangle's ball must lie in its run's (packed after the mesh's two bound rows)
    from hydro.sdf.layout import FACE_CLUSTER, I_FACE_COUNT, I_FACES, I_PLANE_COUNT, I_PLANES, MESH_TRI_BALL
    from hydro.sdf.layout import PLANE_ROWS_EXTRA

    v, f = icosphere(subdivisions=2)
    rng = np.random.default_rng(7)
    m = shapes([Mesh(v, f), Mesh(v, f[rng.permutation(len(f))])], resolution=32)  # coherent runs, shuffled ones
    pack = m.sdf_pack
    for s in range(2):
        first, count = pack.params_i[s, I_FACES], pack.params_i[s, I_FACE_COUNT]
        assert first >= 0 and count == len(f)
        runs = pack.params_i[s, I_PLANES] + pack.params_i[s, I_PLANE_COUNT] + PLANE_ROWS_EXTRA
        balls = pack.mesh_tri[first:first + count, MESH_TRI_BALL:MESH_TRI_BALL + 4].astype(float)
        for t in range(count):
            c = pack.planes[runs + t // FACE_CLUSTER]
            assert np.linalg.norm(balls[t, :3] - c[:3]) + balls[t, 3] < c[3]
        assert pack.planes.shape[0] >= runs + -(-count // FACE_CLUSTER)
