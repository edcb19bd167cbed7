"""Issue 16, the mesh case: a self-intersecting mesh (two overlapping cubes in one file) used to be
accepted silently with a field that had false zeros at each cube's faces inside the other (9 % too
little force in the issue's case; 3.4 % in the press below). It is now the solid the cubes bound
(their union): the sign matches the winding number everywhere and the press force matches the same
solid authored as one clean mesh."""

import numpy as np
import pytest
import trimesh

from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Mesh
from hydro.geometry.mesh_winding import winding_number_exact
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings, build_sdf

STIFFNESS = 1e9
DEPTH = 2e-3
SIDE = 0.1


def _two_cubes():
    """Cube A = [0, s]³ and cube B = A + (s/2, s/2, 0) in one mesh: B's walls cross A's inside down
    to the common bottom face, where the press happens."""
    a = trimesh.creation.box((SIDE,) * 3).apply_translation((SIDE / 2,) * 3)
    b = a.copy().apply_translation((SIDE / 2, SIDE / 2, 0.0))
    return Mesh(np.concatenate([a.vertices, b.vertices]), np.concatenate([a.faces, b.faces + len(a.vertices)]),
                name="two_cubes.obj")


def _press(mesh):
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.1)), local_pose=[0, 0, -0.05, 0, 0, 0, 1], hydroelastic=True,
                stiffness=STIFFNESS)
    body = b.add_body("/World/Part", [0.0, 0.0, -DEPTH, 0, 0, 0, 1])
    b.add_shape("/World/Part/Mesh", mesh, body=body, hydroelastic=True, stiffness=STIFFNESS,
                sdf=SDFSettings(max_resolution=64))
    model = b.finalize()
    result = HydroelasticPipeline(model).collide(model.shape_world_poses(model.state()))
    c = result.contacts
    # the force on the part (a contact's force acts on its shape_b; the face route takes the mesh as A)
    return (c.force_vectors() * np.where(np.asarray(c.shape_b) == 1, 1.0, -1.0)[:, None]).sum(axis=0)


def test_two_overlapping_cubes_are_their_union():
    mesh = _two_cubes()
    solid = mesh.solid()
    assert solid.merged and solid.shells == 2
    # 2 cubes − the overlap (a quarter); the new vertices are rounded to float32 by the boolean engine
    assert solid.volume == pytest.approx(1.75 * SIDE**3, rel=1e-6)
    assert mesh.volume() == pytest.approx(1.75 * SIDE**3, rel=1e-6)
    sdf = build_sdf(mesh, SDFSettings(max_resolution=64))
    assert any("merged into their union" in n for n in sdf.notes)
    rng = np.random.default_rng(0)
    pts = rng.uniform(sdf.box_lo, sdf.box_hi, (20000, 3))
    w = winding_number_exact(mesh.vertices[mesh.faces], pts)  # 2 where the cubes overlap
    assert np.any(w > 1.5)
    # the exact distance to the union of two boxes: inside, the larger of the two depths
    q = [np.abs(pts - c) - SIDE / 2 for c in (np.full(3, SIDE / 2), np.array([SIDE, SIDE, SIDE / 2]))]
    phi = [np.linalg.norm(np.maximum(x, 0), axis=1) + np.minimum(x.max(axis=1), 0) for x in q]
    outside = np.minimum(*phi)
    far = np.abs(outside) > sdf.voxel_size
    np.testing.assert_array_equal(sdf.sample(pts[far]) < 0.0, w[far] > 0.5)
    # inside: no false zero where B's walls cross A (depth at least each cube's own depth)
    inner = (w > 0.5) & far
    assert np.all(sdf.sample(pts[inner]) <= outside[inner] + 0.5 * sdf.voxel_size)


def _union_as_one_clean_mesh():
    """The same solid authored as one closed mesh: the outline of the two squares (an octagon),
    fanned from an inner point from which it is star-shaped, extruded by ``SIDE``."""
    outline = SIDE * np.array([[0, 0], [1, 0], [1, 0.5], [1.5, 0.5], [1.5, 1.5], [0.5, 1.5], [0.5, 1], [0, 1]])
    pts2 = np.concatenate([outline, [[0.9 * SIDE, 0.9 * SIDE]]])
    tri2 = np.array([[8, k, (k + 1) % 8] for k in range(8)])
    tm = trimesh.creation.extrude_triangulation(pts2, tri2, SIDE)
    assert tm.is_watertight and tm.volume == pytest.approx(1.75 * SIDE**3)
    return Mesh(np.asarray(tm.vertices), np.asarray(tm.faces), name="union.obj")


def test_two_overlapping_cubes_press_with_the_force_of_their_union():
    force = _press(_two_cubes())
    reference = _press(_union_as_one_clean_mesh())
    # the old field (each cube's faces kept inside the other) pressed 3.4 % weaker here (16231 N vs 16798 N)
    assert force[2] == pytest.approx(reference[2], rel=2e-3)
    assert np.hypot(force[0], force[1]) < 1e-3 * force[2]
    # and near k_eff × overlap volume (k_eff = k/2); the rest is the pressure field's fall-off
    # within a press depth of the side walls
    assert force[2] == pytest.approx(0.5 * STIFFNESS * 1.75 * SIDE**2 * DEPTH, rel=0.06)
