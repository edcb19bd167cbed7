"""Issue 16's hydroelastic cases: deep overlap, shapes small for their grid, huge margins."""

import warnings

import numpy as np
import pytest

from hydro.contact.config import HydroelasticConfig
from hydro.contact.deep_overlap import HydroelasticLimitWarning
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Sphere
from pipeline_util import pose, shapes

K = 1e9
GROUND = Box((0.5, 0.5, 0.2))  # top face at z = 0 when posed at z = −0.1


def _force_z(pipe, z):
    """The upward force on shape 1 (whichever of the pair is B) at height z, and the result."""
    res = pipe.collide(np.array([pose((0, 0, -0.1)), pose((0, 0, z))]))
    c = res.contacts
    sign = np.where(c.shape_b == 1, 1.0, -1.0)
    return float((c.force_vectors()[:, 2] * sign).sum()), res


def test_a_sphere_pushed_into_the_ground_is_pushed_back_at_every_depth():
    # issue 16: a 1 cm sphere gave 7.8 N at the surface, 0.3 N at 9.9 mm and 0 beyond
    r = 0.01
    pipe = HydroelasticPipeline(shapes([GROUND, Sphere(r)], stiffness=K))
    depths = np.linspace(0.001, 0.04, 40)  # wholly inside from 2r = 0.02 on
    forces = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for d in depths:
            forces.append(_force_z(pipe, r - d)[0])
    forces = np.array(forces)
    assert np.all(forces > 0.0), forces
    # once the patch is gone the fallback grows with the overlap
    deep = depths > 2 * r
    assert np.all(np.diff(forces[deep]) > 0.0)
    # k_eff·π r²·(r/2 − e), e = −(d − r) the sphere centre's depth in the ground
    np.testing.assert_allclose(forces[-1], K / 2 * np.pi * r * r * (r / 2 + depths[-1] - r), rtol=1e-3)
    limit = [w for w in caught if issubclass(w.category, HydroelasticLimitWarning)]
    assert len(limit) == 1  # once per pair, naming it
    assert "/World/shape_0" in str(limit[0].message) and "/World/shape_1" in str(limit[0].message)


def test_the_fallback_leaves_ordinary_contact_alone():
    with warnings.catch_warnings():
        warnings.simplefilter("error", HydroelasticLimitWarning)
        pipe = HydroelasticPipeline(shapes([GROUND, Sphere(0.1)], stiffness=K))
        for d in (0.005, 0.02, 0.04):
            _, res = _force_z(pipe, 0.1 - d)
            assert res.counts["deep_overlap"] == 0


def test_the_fallback_can_be_switched_off():
    r = 0.01
    pipe = HydroelasticPipeline(shapes([GROUND, Sphere(r)], stiffness=K),
                                HydroelasticConfig(deep_overlap_fallback=False))
    f, res = _force_z(pipe, r - 0.03)
    assert f == 0.0 and "deep_overlap" not in res.counts


def test_the_fallback_pushes_the_inner_shape_out_along_the_gradient():
    # a small sphere inside a big one, off-centre: pushed out radially, whichever is A
    r = 0.01
    pipe = HydroelasticPipeline(shapes([Sphere(0.1), Sphere(r)], stiffness=K))
    with pytest.warns(HydroelasticLimitWarning, match="deep overlap"):
        res = pipe.collide(np.array([pose((0, 0, 0)), pose((0.03, 0.04, 0.0))]))
    f = res.contacts.force_vectors().sum(axis=0)
    if res.pair_shape_b[0] == 0:  # force on the big sphere: the small one is pushed the other way
        f = -f
    np.testing.assert_allclose(f / np.linalg.norm(f), [0.6, 0.8, 0.0], atol=1e-3)
    # the fallback rows are rows of the hydroelastic path, with the pair's friction like the others
    c = res.contacts
    assert np.all(c.kind == 0)
    np.testing.assert_allclose(c.friction, 0.5 * (pipe.shape_material[c.shape_a, 1] + pipe.shape_material[c.shape_b, 1]))
    assert np.all(c.friction > 0.0)


def test_a_huge_margin_is_reported_and_still_pushes_back():
    # issue 16: a margin of 1 m on a 1 cm sphere gave zero force
    with pytest.warns(HydroelasticLimitWarning, match="margin \\+ gap .* exceed"):
        pipe = HydroelasticPipeline(shapes([GROUND, Sphere(0.01)], stiffness=K, margin=[0.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HydroelasticLimitWarning)
        for z in (0.005, -0.005, -0.02):
            assert _force_z(pipe, z)[0] > 0.0


def test_a_small_box_keeps_its_force_under_a_wide_gap():
    # issue 16: with a 3 mm gap a 1 mm box got 0.66× its force (the gap padded its grid)
    s, d = 0.001, 0.0001
    forces = []
    for gap in (0.0, 0.003):
        pipe = HydroelasticPipeline(shapes([GROUND, Box((s, s, s))], stiffness=K, gap=[0.0, gap]),
                                    HydroelasticConfig(reduce_contacts=False))
        forces.append(_force_z(pipe, s / 2 - d)[0])
    expect = K / 2 * s * s * d  # the flat part (the rim's band adds about 2 d/s)
    # the two grids have different voxels, and at 0.1 mm (a fraction of a voxel) the pipeline's
    # shallow-depth bias (a few %, docs/benchmarks.md) differs between them: within 5 % (was 0.66x)
    assert abs(forces[1] / forces[0] - 1) < 0.05, forces
    assert abs(forces[0] / expect - 1) < 0.25, forces


def test_a_shape_narrower_than_a_few_voxels_is_reported():
    plate = Box((0.1, 0.1, 0.002))  # 1.1 voxels thick at resolution 64
    with pytest.warns(HydroelasticLimitWarning, match="shape_1 spans only 1.1 voxels"):
        HydroelasticPipeline(shapes([GROUND, plate], stiffness=K))
