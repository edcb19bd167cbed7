"""Which shape pairs may collide (Model.may_collide) and per-shape contact materials."""

import math

import numpy as np
import pytest

from hydro.geometry import Box, Sphere
from hydro.scene.material import (DEFAULT_CONTACT_STIFFNESS, DEFAULT_FRICTION, MAT_CONTACT_DAMPING,
                                  MAT_CONTACT_STIFFNESS, MAT_DYNAMIC_FRICTION, MAT_STATIC_FRICTION,
                                  MATERIAL_COUNT, ShapeMaterial)
from hydro.scene.model import ModelBuilder


def _three_bodies(**shape_kwargs):
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((2, 2, 0.1)), **shape_kwargs.get("ground", {}))
    for name in ("A", "B"):
        body = b.add_body(f"/World/{name}", (0, 0, 0.2, 0, 0, 0, 1))
        b.add_shape(f"/World/{name}/Collider", Sphere(0.1), body=body, **shape_kwargs.get(name, {}))
        b.add_shape(f"/World/{name}/Collider2", Sphere(0.05), body=body, **shape_kwargs.get(name, {}))
    return b


def test_the_pair_rule_same_body_statics_and_disabled_shapes():
    b = _three_bodies(A={"collision_enabled": False})
    b.add_shape("/World/Wall", Box((0.1, 2, 2)))
    m = b.finalize(build_sdfs=False)
    ground, a1, a2, b1, b2, wall = range(6)
    assert not m.may_collide(ground, wall)  # two static shapes
    assert not m.may_collide(b1, b2)  # one body
    assert not m.may_collide(a1, b1) and not m.may_collide(ground, a2)  # A is collision-disabled
    assert m.may_collide(ground, b1) and m.may_collide(b2, wall)
    assert not m.may_collide(b1, b1)


def test_collision_groups_filter_both_ways_and_invert():
    b = _three_bodies(ground={"collision_groups": ("ground",)}, A={"collision_groups": "ghosts"},
                      B={"collision_groups": ("robots",)})
    b.add_collision_group("ground")
    b.add_collision_group("ghosts", filtered_groups=("ground",))
    b.add_collision_group("robots", filtered_groups=("ghosts",), invert=True)  # robots collide only with ghosts
    m = b.finalize(build_sdfs=False)
    ground, a1, _, b1, _ = range(5)
    assert not m.may_collide(ground, a1)  # ghosts filter the ground
    assert m.may_collide(a1, b1)  # robots collide with ghosts only
    assert not m.may_collide(ground, b1)  # ... not with the ground
    assert m.collision_group_mask.shape[0] == 4  # no group + three sets
    b = _three_bodies(A={"collision_groups": ("robots",)})
    b.add_collision_group("robots", filtered_groups=(), invert=True)
    m = b.finalize(build_sdfs=False)
    assert not m.may_collide(0, 1)  # an inverted group keeps out shapes in no group too
    assert m.may_collide(0, 3)  # two ungrouped shapes collide


def test_unknown_groups_are_named():
    b = _three_bodies(A={"collision_groups": ("nope",)})
    with pytest.raises(ValueError, match="no collision group named 'nope'"):
        b.finalize(build_sdfs=False)
    b = ModelBuilder()
    b.add_collision_group("g", filtered_groups=("missing",))
    with pytest.raises(ValueError, match="filters 'missing'"):
        b.finalize(build_sdfs=False)


def test_filtered_pairs_by_shape_or_body_in_every_env_copy():
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((9, 9, 0.1)))
    for name in ("A", "B"):
        body = b.add_body(f"/World/envs/env_0/{name}", (0, 0, 0.2, 0, 0, 0, 1))
        b.add_shape(f"/World/envs/env_0/{name}/Collider", Sphere(0.1), body=body)
    b.add_filtered_pair("/World/envs/env_0/A", "/World/envs/env_0/B/Collider")
    b.add_filtered_pair("/World/Ground", "/World/envs/env_0/A/Collider")
    m = b.finalize(num_envs=3, build_sdfs=False)
    idx = {p: i for i, p in enumerate(m.shape_path)}
    for e in range(3):
        a, bb = idx[f"/World/envs/env_{e}/A/Collider"], idx[f"/World/envs/env_{e}/B/Collider"]
        assert not m.may_collide(a, bb)
        assert not m.may_collide(idx["/World/Ground"], a)
        assert m.may_collide(idx["/World/Ground"], bb)
    # across envs nothing collides anyway; the filtered list holds only same-env (or global) pairs
    assert len(m.filtered_shape_pairs) == 6
    assert np.all(m.filtered_shape_pairs[:, 0] < m.filtered_shape_pairs[:, 1])
    b = ModelBuilder()
    b.add_filtered_pair("/World/X", "/World/Y")
    with pytest.raises(ValueError, match="neither a shape nor a body"):
        b.finalize(build_sdfs=False)


def test_materials_resolve_the_engine_default_and_keep_friction_arguments():
    b = ModelBuilder()
    b.add_shape("/World/Plain", Box((1, 1, 1)), static_friction=0.8, dynamic_friction=0.6)
    b.add_shape("/World/Stiff", Box((1, 1, 1)), material=ShapeMaterial(contact_stiffness=2e6, contact_damping=50.0,
                                                                        dynamic_friction=-math.inf))
    m = b.finalize(build_sdfs=False)
    assert m.shape_material.shape == (2, MATERIAL_COUNT)
    np.testing.assert_array_equal(m.shape_material[0, [MAT_STATIC_FRICTION, MAT_DYNAMIC_FRICTION]], [0.8, 0.6])
    np.testing.assert_array_equal(m.shape_friction, m.shape_material[:, :2])
    assert m.shape_material[0, MAT_CONTACT_STIFFNESS] == DEFAULT_CONTACT_STIFFNESS
    assert math.isnan(m.shape_material[0, MAT_CONTACT_DAMPING])  # derived from the solver's damping ratio
    assert m.shape_material[1, MAT_CONTACT_STIFFNESS] == 2e6 and m.shape_material[1, MAT_CONTACT_DAMPING] == 50.0
    assert m.shape_material[1, MAT_DYNAMIC_FRICTION] == DEFAULT_FRICTION  # -inf: the engine's default


@pytest.mark.parametrize("bad", [{"static_friction": -0.1}, {"contact_stiffness": 0.0},
                                 {"contact_damping": math.nan}, {"adhesion": "x"}])
def test_bad_material_values_are_named(bad):
    with pytest.raises(ValueError, match=f"ShapeMaterial.{next(iter(bad))}"):
        ShapeMaterial(**bad)


def test_a_convex_hull_is_closed_outward_and_bounded_by_its_planes():
    from hydro.geometry import ConvexMesh, Mesh

    rng = np.random.default_rng(3)
    pts = rng.normal(size=(200, 3))
    hull = ConvexMesh.from_points(pts)
    hull.check_watertight()  # closed, consistently and outwardly wound
    inside = pts @ hull.planes[:, :3].T - hull.planes[:, 3]
    assert inside.max() <= 1e-12  # every input point is inside every face plane
    assert np.allclose(hull.support((1, 0, 0)), pts[np.argmax(pts[:, 0])])
    small = ConvexMesh.from_points(pts, max_vertices=12)
    assert len(small.vertices) <= 12 and small.volume() < hull.volume()
    cube = Mesh(*(lambda tm: (tm.vertices, tm.faces))(__import__("trimesh").creation.box(extents=(1, 2, 3))))
    assert abs(cube.convex_hull().volume() - 6.0) < 1e-12
    with pytest.raises(ValueError, match="cannot be built"):
        ConvexMesh.from_points([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
