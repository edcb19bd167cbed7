"""Bad input to the default contact path: one clear error naming the shape (or the field)."""

import numpy as np
import pytest
import trimesh

from hydro.contact.collision import CollisionPipeline
from hydro.errors import InputError
from hydro.geometry import Box, ConvexMesh, Heightfield, Mesh, Plane
from hydro.scene.material import ShapeMaterial
from hydro.scene.model import ModelBuilder


@pytest.mark.parametrize("geometry", [Plane(), Heightfield()])
def test_a_plane_or_heightfield_marked_hydroelastic_is_refused(geometry):
    b = ModelBuilder()
    with pytest.raises(ValueError, match=r"/World/Ground: newton:hydroelasticEnabled is true on a (plane|heightfield)"):
        b.add_shape("/World/Ground", geometry, hydroelastic=True)


def test_a_mesh_whose_convex_hull_cannot_be_built_is_named():
    flat = Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]), np.array([[0, 1, 2], [1, 3, 2]]),
                name="/World/Sheet")
    with pytest.raises(ValueError, match="/World/Sheet: the convex hull cannot be built"):
        flat.convex_hull()
    with pytest.raises(ValueError, match="the convex hull cannot be built"):
        ConvexMesh.from_points(np.zeros((3, 3)), name="/World/Dot")


def test_nan_material_values_are_refused():
    with pytest.raises(ValueError, match="ShapeMaterial.contact_stiffness must be a finite number"):
        ShapeMaterial(contact_stiffness=float("nan"))
    b = ModelBuilder()
    with pytest.raises(ValueError, match="shape /World/Box: static_friction must be a finite number"):
        b.add_shape("/World/Box", Box((1, 1, 1)), static_friction=float("nan"))


def test_an_open_triangle_mesh_collider_is_named_when_it_needs_a_field():
    tm = trimesh.creation.box((0.2, 0.2, 0.2))
    open_mesh = Mesh(np.asarray(tm.vertices), np.asarray(tm.faces)[:-1], name="open box")
    b = ModelBuilder()
    b.add_shape("/World/Ground", Plane())
    body = b.add_body("/World/Thing", (0, 0, 0.1, 0, 0, 0, 1), mass=1.0)
    b.add_shape("/World/Thing/Mesh", open_mesh, body=body)
    m = b.finalize()
    with pytest.raises(InputError, match="/World/Thing/Mesh: a triangle-mesh collider needs a closed mesh"):
        CollisionPipeline(m)


def test_a_heightfield_collider_takes_the_default_path():
    # issue 29: heightfields were refused ("not supported yet"); now point contacts, never hydroelastic
    b = ModelBuilder()
    b.add_shape("/World/Terrain", Heightfield())
    body = b.add_body("/World/Thing", (0, 0, 0.049, 0, 0, 0, 1), mass=1.0)
    b.add_shape("/World/Thing/Box", Box((0.1, 0.1, 0.1)), body=body)
    m = b.finalize()
    result = CollisionPipeline(m).collide(m.shape_world_poses(m.state()))
    c = result.contacts
    assert len(c) == 4 and set(c.kind.tolist()) == {1} and np.allclose(c.depth, -0.001, atol=2e-5)
