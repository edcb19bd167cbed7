"""The whole contact pipeline under the CUDA simulator against the CPU, on a tiny scene."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from hydro.backend import Device  # noqa: E402
from hydro.contact.config import HydroelasticConfig  # noqa: E402
from hydro.geometry import Box, Capsule, Sphere  # noqa: E402
from hydro.contact.pipeline import HydroelasticPipeline  # noqa: E402
from pipeline_util import pose, shapes  # noqa: E402

SIM = Device("cuda", threads_per_block=32)
CPU = Device("cpu")


def _collide_both(m, cfg, poses):
    """One collide on the CPU and one on the simulated GPU: (cpu, sim), every stage's count equal."""
    cpu = HydroelasticPipeline(m, cfg, device=CPU).collide(poses)
    sim = HydroelasticPipeline(m, cfg, device=SIM).collide(poses)
    for key, value in sim.counts.items():
        assert cpu.counts[key] == value, key
    return cpu, sim


def _assert_tables_close(got, want, label=""):
    """Every column of contact table ``got`` as ``want``'s: floats to float32 rounding, the rest exactly."""
    for name, arr in want.as_dict().items():
        value = getattr(got, name)
        if arr.dtype.kind == "f":
            np.testing.assert_allclose(value, arr, rtol=1e-5, atol=1e-6 * (np.abs(arr).max() + 1e-30),
                                       err_msg=label + name)
        else:
            np.testing.assert_array_equal(value, arr, err_msg=label + name)


@pytest.mark.parametrize("interface, reduce, exact", [("continuous", True, True), ("switched", False, True),
                                                      ("continuous", False, False)])
def test_pipeline_parity(interface, reduce, exact):
    # the CPU's compiled call against the simulated GPU's staged launches: a sphere and a capsule
    # (marching cubes, exact fields or the grids) and a box (exact polygons) on a box
    m = shapes([Box((0.3, 0.3, 0.1)), Sphere(0.05), Capsule(0.03, 0.04), Box((0.04, 0.04, 0.04))],
               stiffness=[1e9, 2e9, 1e9, 1e9], resolution=16, gap=[0.0, 0.002, 0.002, 0.0])
    poses = np.array([pose((0, 0, -0.05)), pose((0.0, 0.0, 0.045)), pose((0.1, 0, 0.025), (1, 0, 0), 1.3),
                      pose((-0.1, 0.05, 0.019), (1, 1, 0), 0.1)])
    cfg = HydroelasticConfig(reduce_contacts=reduce, interface=interface, max_contacts_per_pair=12,
                             exact_primitives=exact, exact_meshes=exact)
    cpu, sim = _collide_both(m, cfg, poses)
    np.testing.assert_array_equal(cpu.pair_shape_a, sim.pair_shape_a)
    np.testing.assert_array_equal(cpu.pair_shape_b, sim.pair_shape_b)
    assert len(cpu.patch) > 20
    _assert_tables_close(sim.patch, cpu.patch)
    _assert_tables_close(sim.contacts, cpu.contacts, "reduced.")


@pytest.mark.parametrize("faces", [False, True])
def test_pipeline_parity_exact_meshes(faces):
    # two meshes (exact mesh fields: A at any point, B's settled crossings; or, both convex, the
    # face route's polygons) and a mesh on a box
    import trimesh

    from hydro.geometry import Mesh

    ico = trimesh.creation.icosphere(subdivisions=2, radius=0.05)
    mesh = Mesh(ico.vertices, ico.faces, name="ico")
    m = shapes([Box((0.3, 0.3, 0.1)), mesh, mesh], stiffness=[1e9, 2e9, 1e9], resolution=16)
    poses = np.array([pose((0, 0, -0.05)), pose((0.0, 0.0, 0.047)), pose((0.0, 0.0, 0.14), (1, 1, 0), 0.7)])
    cfg = HydroelasticConfig(reduce_contacts=False, flat_polygons=faces)
    cpu, sim = _collide_both(m, cfg, poses)
    assert len(cpu.patch) > 20 and len(cpu.pair_shape_a) == 2
    assert (cpu.counts["polygon_triangles"] > 20) == faces
    _assert_tables_close(sim.patch, cpu.patch)


def test_pipeline_parity_affine_mesh_cells():
    # a large sphere pressed into a box given as a mesh (B, the finer grid): the patch lies in
    # cells of the mesh's exact field proven one face plane (hydro.sdf.mesh_field.mark_affine_cells),
    # whose blocks take the affine path
    import trimesh

    from hydro.geometry import Mesh
    from hydro.sdf.layout import BRICK, CELLS_PER_EDGE, MESH_CELL

    cube = trimesh.creation.box((0.1, 0.1, 0.1))
    m = shapes([Sphere(0.15), Mesh(cube.vertices, cube.faces, name="cube")], resolution=16)
    poses = np.array([pose((0.004, -0.003, 0.05 + 0.15 - 0.003)), pose((0, 0, 0))])
    cfg = HydroelasticConfig(reduce_contacts=False)
    cpu, sim = _collide_both(m, cfg, poses)
    assert list(cpu.pair_shape_b) == [1]
    # the cells (of B, at the origin unrotated) that hold patch points: many are flagged
    sdf = m.sdfs[1]
    mf = sdf.mesh_field
    g = np.floor((cpu.patch.point - sdf.origin) / sdf.voxel_size).astype(int)
    brick = g // BRICK
    nb = np.array(sdf.bricks)
    row = mf.brick_row[(brick[:, 2] * nb[1] + brick[:, 1]) * nb[0] + brick[:, 0]]
    c = (g - BRICK * brick) // MESH_CELL
    k = row * CELLS_PER_EDGE**3 + (c[:, 2] * CELLS_PER_EDGE + c[:, 1]) * CELLS_PER_EDGE + c[:, 0]
    listed = (row >= 0) & (mf.cell_start[k + 1] > mf.cell_start[k])
    flagged = listed & (mf.key[np.where(listed, mf.cell_start[k], 0)] < 0)
    assert flagged.sum() > 20
    _assert_tables_close(sim.patch, cpu.patch)


def test_flat_routes_parity():
    # stage 4b's two routes under the simulator against the CPU: a convex mesh's polygons and a
    # cylinder's axial route on a box
    from hydro.geometry import ConvexMesh, Cylinder

    th = np.arange(6) * np.pi / 3
    ring = 0.03 * np.c_[np.cos(th), np.sin(th)]
    prism = ConvexMesh.from_points(np.concatenate([np.c_[ring, np.full(6, -0.02)], np.c_[ring, np.full(6, 0.02)]]))
    m = shapes([Box((0.3, 0.3, 0.1)), prism, Cylinder(0.03, 0.06)], stiffness=[2e9, 1e9, 1e9], resolution=16,
               gap=[0.0, 0.0, 0.001])
    poses = np.array([pose((0, 0, -0.05)), pose((-0.06, 0, 0.018), (1, 0, 0), 0.05), pose((0.06, 0, 0.028))])
    cfg = HydroelasticConfig(reduce_contacts=False, polygon_cells=1)
    cpu, sim = _collide_both(m, cfg, poses)
    assert cpu.counts["polygon_triangles"] > 10 and cpu.counts["triangles"] == 0
    _assert_tables_close(sim.patch, cpu.patch)


def test_face_route_parity():
    # stage 4b's face route (two convex triangle meshes) under the simulator against the CPU
    import trimesh

    from hydro.geometry import Mesh

    ico = trimesh.creation.icosphere(subdivisions=1, radius=0.05)
    mesh = Mesh(np.asarray(ico.vertices), np.asarray(ico.faces))
    # two convex meshes, and one on a box (a shape of planes)
    m = shapes([Box((0.3, 0.3, 0.1)), mesh, mesh], stiffness=[2e9, 1e9, 2e9], resolution=16)
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, 0.045), (0, 1, 0), 0.2),
                      pose((0.004, 0.0, 0.142), (1, 1, 0), 0.3)])
    cfg = HydroelasticConfig(reduce_contacts=False, polygon_cells=1)
    cpu, sim = _collide_both(m, cfg, poses)
    assert len(cpu.pair_shape_a) == 2
    assert cpu.counts["polygon_triangles"] > 6 and cpu.counts["triangles"] == 0
    _assert_tables_close(sim.patch, cpu.patch)


def test_face_route_parity_non_convex():
    # the face route for a non-convex mesh (a ring of 24 sections: reflex edges, min rules, clusters)
    # on a box under the simulator against the CPU
    from hydro.geometry import Mesh

    n, r_out, r_in, height = 24, 0.08, 0.05, 0.03
    th = 2.0 * np.pi * np.arange(n) / n
    profile = np.array([(r_out, 0.0), (r_out, height), (r_in, height), (r_in, 0.0)])
    verts = np.stack([np.outer(np.cos(th), profile[:, 0]), np.outer(np.sin(th), profile[:, 0]),
                      np.broadcast_to(profile[:, 1], (n, 4))], axis=-1).reshape(-1, 3)
    faces = [(i * 4 + j, ((i + 1) % n) * 4 + j, ((i + 1) % n) * 4 + (j + 1) % 4, i * 4 + (j + 1) % 4)
             for i in range(n) for j in range(4)]
    tris = np.array([(a, b, c) for a, b, c, d in faces] + [(a, c, d) for a, b, c, d in faces], np.int64)
    m = shapes([Box((0.3, 0.3, 0.1)), Mesh(verts, tris)], resolution=16)
    assert m.sdfs[1].face_lists is not None and not m.sdfs[1].face_lists.convex
    # tilted: one side of the ring 2 mm in (few pieces: the simulator is slow)
    poses = np.array([pose((0, 0, -0.05)), pose((0.003, -0.002, r_out * np.sin(0.1) - 0.002), (1, 0, 0), 0.1)])
    cfg = HydroelasticConfig(reduce_contacts=False, polygon_cells=1)
    cpu, sim = _collide_both(m, cfg, poses)
    assert cpu.counts["polygon_triangles"] > 10 and cpu.counts["triangles"] == 0
    _assert_tables_close(sim.patch, cpu.patch)
