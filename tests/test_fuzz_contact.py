"""Fuzz families of issue 27's contact cases, so they stay fixed: stiffness ratios up to 1e12 on
every primitive and on a mesh against a box, pair lists (repeated, swapped, out of range), and gaps
on either shape of a penetrating pair. Seeded; resolution 64 for the ratio family (32 for the mesh),
32 elsewhere; about 20 s on a warm cache.

Against a box's top face (z = 0, a half space here), each upright shape's force at a ratio of 1e12
is checked against k_soft·V, V its closed-form volume below the face, and at ratio 1 against the
defining integral by quadrature (:func:`hydro.tools.analytic.half_space_force`, independent of the
pipeline: bisection for the patch height on vertical lines; not for the cone, narrower upward).
"""

import math

import numpy as np
import pytest
import trimesh

from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.errors import InputError
from hydro.geometry import Box, Capsule, Cone, Cylinder, Ellipsoid, Mesh, Sphere
from hydro.tools.analytic import half_space_force
from hydro.transforms import pose_inverse, pose_transform_points
from pipeline_util import pose, shapes

# small patches of random poses are the resolution warning's business, not these tests'
pytestmark = pytest.mark.filterwarnings("ignore::hydro.contact.deep_overlap.HydroelasticLimitWarning")

K_SOFT = 1e7
RATIOS = (1.0, 1e4, 1e8, 1e12)
D = 0.003
GROUND = Box((0.6, 0.6, 0.1))


def _icosphere():
    tm = trimesh.creation.icosphere(subdivisions=3, radius=0.06)
    return Mesh(np.asarray(tm.vertices), np.asarray(tm.faces))


SHAPES = {
    "sphere": (Sphere(0.06), 0.06),
    "box": (Box((0.08, 0.1, 0.06)), 0.03),
    "capsule": (Capsule(0.03, 0.06), 0.06),
    "cylinder": (Cylinder(0.04, 0.08), 0.04),
    "cone": (Cone(0.05, 0.08), 0.04),
    "ellipsoid": (Ellipsoid((0.06, 0.05, 0.04)), 0.04),
    "mesh": (_icosphere(), 0.06),
}


def _cap(r, d):
    return math.pi * d * d * (r - d / 3.0)


_RR = 0.05 - D * 0.05 / 0.08  # the cone's radius at the face
VOLUME_BELOW = {
    "sphere": _cap(0.06, D),
    "box": 0.08 * 0.1 * D,
    "capsule": _cap(0.03, D),
    "cylinder": math.pi * 0.04**2 * D,
    "cone": math.pi * D / 3.0 * (0.05**2 + 0.05 * _RR + _RR**2),
    "ellipsoid": 0.06 * 0.05 / 0.04**2 * _cap(0.04, D),  # the sphere of radius c, stretched in x and y
}


def _pair_force(m, poses, config=None):
    res = HydroelasticPipeline(m, config).collide(poses)
    c = res.contacts
    sign = np.where(c.shape_b == 1, 1.0, -1.0)[:, None]
    f = (c.force_vectors().astype(float) * sign).sum(axis=0)
    assert np.all(np.isfinite(c.force)) and np.all(c.force >= 0.0)
    return f


@pytest.mark.parametrize("name", list(SHAPES))
def test_stiffness_ratios_to_1e12_tend_to_the_soft_sides_k_v(name):
    geom, bottom = SHAPES[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    # upright (the shape's lowest point or face down), a random turn about z; D into the ground
    shape_pose = pose((0.0, 0.0, bottom - D), (0, 0, 1), rng.uniform(0, 2 * np.pi))
    poses = np.array([pose((0, 0, -0.05)), shape_pose])
    m = shapes([GROUND, geom], stiffness=K_SOFT, resolution=32 if name == "mesh" else 64)
    forces = []
    for ratio in RATIOS:
        m.shape_stiffness = np.array([K_SOFT, K_SOFT * ratio])
        f = _pair_force(m, poses)
        assert f[2] > 0.0, (name, ratio, f)
        assert math.hypot(f[0], f[1]) <= 1e-3 * f[2], (name, ratio, f)  # no sideways force
        forces.append(f[2])
    forces = np.array(forces)
    assert np.all(np.diff(forces) >= -1e-6 * forces[-1]), (name, forces)  # monotone in the stiff side's k
    assert abs(forces[-1] / forces[-2] - 1.0) < 1e-5, (name, forces)  # a limit, reached by 1e8
    if name == "mesh":  # its field is the grid's: compared with its own equal-stiffness force only
        assert forces[-1] > 1.5 * forces[0]  # k_soft·V against k_eff·V' (the overlap shared)
        return
    # the limit: the soft side's pressure over the stiff surface, k_soft·V with V the volume of the
    # shape below the face (closed forms of the upright shapes)
    assert abs(forces[-1] / (K_SOFT * VOLUME_BELOW[name]) - 1.0) < 0.01, (name, forces[-1], K_SOFT * VOLUME_BELOW[name])
    if name == "cone":  # narrower upward: the quadrature below needs columns that reach the face
        return

    def phi(p):  # the shape's exact distance at world points
        return geom.phi(pose_transform_points(pose_inverse(shape_pose), p))

    lo, hi = geom.local_aabb()
    half = float(np.hypot(*np.maximum(np.abs(lo), np.abs(hi))[:2]))  # any turn about z
    ref = half_space_force(phi, (-half, -half), (half, half), k_shape=K_SOFT, k_box=K_SOFT, spacing=5e-4,
                           depth_scale=0.02).force
    assert abs(forces[0] / ref - 1.0) < 0.015, (name, forces[0], ref)


@pytest.mark.parametrize("name", ["sphere", "capsule", "ellipsoid", "mesh"])
def test_a_gap_on_either_shape_leaves_a_penetrating_pair_alone(name):
    geom, bottom = SHAPES[name]
    poses = np.array([pose((0, 0, -0.05)), pose((0.01, -0.02, bottom - D), (1, 0.3, 0), 0.2)])
    # the mesh is convex: without a gap it takes the face route (exact polygons), with one marching
    # cubes (the face route has no speculative band), so a gap moves its force by the grid's error;
    # the invariant is marching cubes' (polygon routes off), and the two routes agree within that error
    cfg = HydroelasticConfig(reduce_contacts=False, flat_polygons=name != "mesh")
    if name == "mesh":
        m = shapes([GROUND, geom], stiffness=[K_SOFT, 3 * K_SOFT], resolution=32)
        exact = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False)).collide(poses)
        grid = HydroelasticPipeline(m, cfg).collide(poses)
        assert exact.counts["polygon_triangles"] > 0 and grid.counts["polygon_triangles"] == 0
        fz = [float(r.contacts.force_vectors().astype(float).sum(axis=0)[2]) for r in (exact, grid)]
        assert abs(fz[1] / fz[0] - 1.0) < 0.01, fz
    base = None
    for gaps in ([0.0, 0.0], [0.02, 0.0], [0.0, 0.02], [0.005, 0.04]):
        m = shapes([GROUND, geom], stiffness=[K_SOFT, 3 * K_SOFT], resolution=32, gap=gaps)
        res = HydroelasticPipeline(m, cfg).collide(poses)
        c = res.contacts
        f = (c.force_vectors().astype(float)[~c.speculative]).sum(axis=0)
        if base is None:
            base = f
        np.testing.assert_allclose(f, base, rtol=0, atol=1e-9 * np.linalg.norm(base), err_msg=str(gaps))


def test_random_pair_lists_collide_each_pair_once():
    rng = np.random.default_rng(27)
    geoms = [GROUND, Sphere(0.05), Capsule(0.03, 0.05), Box((0.06, 0.06, 0.06))]
    m = shapes(geoms, stiffness=K_SOFT, resolution=32)
    poses = np.array([pose((0, 0, -0.05)), pose((-0.15, 0, 0.05 - D)), pose((0.0, 0.1, 0.03 - D), (1, 0, 0), 1.57),
                      pose((0.15, 0, 0.03 - D))])
    pipe = HydroelasticPipeline(m)
    every = pipe.collide(poses)
    for _ in range(12):
        pairs = [(0, s) if rng.random() < 0.5 else (s, 0) for s in rng.integers(1, 4, size=rng.integers(1, 7))]
        res = pipe.collide(poses, pairs=pairs)
        distinct = list(dict.fromkeys(tuple(sorted(p)) for p in pairs))
        assert [tuple(sorted(p)) for p in zip(res.pair_shape_a, res.pair_shape_b)] == distinct
        for a, b in distinct:
            got = res.contacts.select((res.contacts.shape_a == a) & (res.contacts.shape_b == b) |
                                      (res.contacts.shape_a == b) & (res.contacts.shape_b == a))
            ref = every.contacts.select((every.contacts.shape_a == a) & (every.contacts.shape_b == b) |
                                        (every.contacts.shape_a == b) & (every.contacts.shape_b == a))
            fg, fr = got.force_vectors().sum(axis=0), ref.force_vectors().sum(axis=0)
            np.testing.assert_allclose(fg, fr, rtol=0, atol=1e-6 * np.linalg.norm(fr))
    for bad in ([(0, 4)], [(0, 1), (4, 0)], [(-1, 2)], [(2, 2)]):
        with pytest.raises(InputError, match="pair"):
            pipe.collide(poses, pairs=bad)
