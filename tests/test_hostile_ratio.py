"""Issue 27's contact cases: extreme stiffness ratios, repeated pairs, gaps on penetrating pairs.

A stiff curved shape pressed into a soft box: the patch sits on the stiff shape's surface and the
force tends to k_soft·V (V the overlap volume), at any ratio and whichever shape's grid is meshed
(B, the finer one). Before, the pressure was read from B's field, kB·(−φB): a stiff B's φB on the
patch is a rounding error times kB (−39 % at a ratio of 1e4, 300× at 1e8).
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.errors import InputError
from hydro.geometry import Box, Capsule, Sphere
from hydro.sdf import SDFPack, SDFSettings, build_sdf
from hydro.tools.analytic import half_space_force, sphere_on_box
from pipeline_util import pose, shapes

K_SOFT = 6.6e7
RATIOS = (1e2, 1e4, 1e6, 1e8, 1e10, 1e12)
R = 0.1  # sphere radius
D = 0.002  # depth
CAP_R, CAP_L = 0.05, 0.2  # capsule lying along x
CAP_Q = np.array([0.0, math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4)])  # xyzw: local z -> x


def _model(geometries, settings, stiffness):
    sdfs = [build_sdf(g, s) for g, s in zip(geometries, settings)]
    m = shapes(geometries, stiffness=stiffness)
    m.sdfs = sdfs
    m.sdf_pack = SDFPack(sdfs)
    return m


@pytest.fixture(scope="module")
def sphere_models():
    """A sphere on a soft box, meshed on the sphere's grid (B = sphere) and on the box's (B = box)."""
    res64 = SDFSettings(max_resolution=64)
    sphere_b = _model([Box((0.5, 0.5, 0.1)), Sphere(R)], [res64, res64], [K_SOFT, K_SOFT])
    # a box grid finer than the sphere's (2.5 mm against 3.6 mm): the box is B
    sphere_a = _model([Box((0.3, 0.3, 0.1)), Sphere(R)], [SDFSettings(max_resolution=128), res64],
                      [K_SOFT, K_SOFT])
    return {"sphere B": sphere_b, "sphere A": sphere_a}


def _force_on_1(model, poses, config=None):
    res = HydroelasticPipeline(model, config).collide(poses)
    c = res.contacts
    sign = np.where(c.shape_b == 1, 1.0, -1.0)[:, None]
    return (c.force_vectors().astype(float) * sign).sum(axis=0), res


def _with_stiffness(model, k0, k1):
    m = SimpleNamespace(**vars(model))
    m.shape_stiffness = np.array([k0, k1], dtype=float)
    return m


@pytest.mark.parametrize("case", ["sphere B", "sphere A"])
def test_a_stiff_sphere_into_a_soft_box_tends_to_k_soft_v(sphere_models, case):
    m = sphere_models[case]
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - D))])
    forces = []
    for ratio in RATIOS:
        f, res = _force_on_1(_with_stiffness(m, K_SOFT, K_SOFT * ratio), poses)
        assert (res.pair_shape_b[0] == 1) == (case == "sphere B")
        ref = sphere_on_box(D, R, k_sphere=K_SOFT * ratio, k_box=K_SOFT).force
        assert abs(f[2] / ref - 1.0) < 0.01, (ratio, f, ref)
        assert math.hypot(f[0], f[1]) <= 1e-6 * f[2], (ratio, f)  # no sideways force
        forces.append(f[2])
    # the limit is the soft side's pressure over the stiff surface: k_soft·V_cap
    v_cap = math.pi * D * D * (R - D / 3)
    assert abs(forces[-1] / (K_SOFT * v_cap) - 1.0) < 0.01
    assert np.all(np.diff(forces) >= -1e-9 * forces[-1])  # monotone toward it


def test_a_stiff_capsule_into_a_soft_box_tends_to_k_soft_v():
    m = _model([Box((0.5, 0.5, 0.1)), Capsule(CAP_R, CAP_L)], [SDFSettings(max_resolution=64)] * 2,
               [K_SOFT, K_SOFT])
    zc = CAP_R - D
    poses = np.array([pose((0, 0, -0.05)), np.concatenate([[0.0, 0.0, zc], CAP_Q])])

    def phi(p):  # the capsule's exact distance, axis along x at height zc
        x = np.clip(p[:, 0], -CAP_L / 2, CAP_L / 2)
        return np.sqrt((p[:, 0] - x) ** 2 + p[:, 1] ** 2 + (p[:, 2] - zc) ** 2) - CAP_R

    for ratio in (RATIOS[0], RATIOS[2], RATIOS[-1]):
        ks = K_SOFT * ratio
        f, _ = _force_on_1(_with_stiffness(m, K_SOFT, ks), poses)
        ref = half_space_force(phi, (-CAP_L / 2 - CAP_R, -CAP_R), (CAP_L / 2 + CAP_R, CAP_R), k_shape=ks,
                               k_box=K_SOFT, spacing=2.5e-4, depth_scale=0.01).force
        assert abs(f[2] / ref - 1.0) < 0.01, (ratio, f, ref)
        assert math.hypot(f[0], f[1]) <= 1e-5 * f[2], (ratio, f)
    # closed form of the limit: a cylinder's circular segment along L plus a sphere's cap
    h = CAP_R - D
    segment = CAP_R**2 * math.acos(h / CAP_R) - h * math.sqrt(CAP_R**2 - h * h)
    v = CAP_L * segment + math.pi * D * D * (CAP_R - D / 3)
    assert abs(f[2] / (K_SOFT * v) - 1.0) < 0.01, (f, K_SOFT * v)


def test_at_an_extreme_ratio_the_patch_lies_on_the_stiff_surface(sphere_models):
    # the pressures balance where kA·φA = kB·φB: at 1e12 on the sphere's surface, to rounding
    # (the edge clamp, which moves vertices by up to 2 % of a voxel, is off here)
    m = _with_stiffness(sphere_models["sphere B"], K_SOFT, K_SOFT * 1e12)
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - D))])
    res = HydroelasticPipeline(m, HydroelasticConfig(mc_edge_clamp_min=0.0)).collide(poses, triangles=True)
    v = res.triangles.vertices.reshape(-1, 3).astype(float)
    inside = v[:, 2] < 0.0
    assert inside.sum() > 50
    phi_sphere = np.linalg.norm(v[inside] - [0.0, 0.0, R - D], axis=1) - R
    assert np.abs(phi_sphere).max() < 1e-8  # float32 vertices of a 0.1 m patch


def test_a_stiff_box_and_a_soft_ball_on_a_stiff_ground_stay_right():
    res64 = SDFSettings(max_resolution=64)
    m = _model([Box((0.5, 0.5, 0.1)), Sphere(R)], [res64, res64], [K_SOFT, K_SOFT])
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - D))])
    for ratio in (1e-12, 1e-6, 1e-2):  # the ground is the stiff one
        f, _ = _force_on_1(_with_stiffness(m, K_SOFT / ratio, K_SOFT), poses)
        ref = sphere_on_box(D, R, k_sphere=K_SOFT, k_box=K_SOFT / ratio).force
        assert abs(f[2] / ref - 1.0) < 0.01, (ratio, f, ref)


# -- repeated pairs --------------------------------------------------------------------------------

def test_a_pair_listed_twice_is_collided_once():
    m = shapes([Box((0.5, 0.5, 0.1)), Sphere(R), Sphere(0.05)], stiffness=1e9, resolution=32)
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - D)), pose((0.2, 0, 0.05 - D))])
    pipe = HydroelasticPipeline(m)
    once = pipe.collide(poses, pairs=[[0, 1]])
    f_once = once.contacts.force_vectors().sum(axis=0)
    for pairs in ([[0, 1], [0, 1]], [[0, 1], [1, 0]], [[1, 0], [0, 1], [1, 0]]):
        res = pipe.collide(poses, pairs=pairs)
        assert len(res.pair_shape_a) == 1 and sorted((res.pair_shape_a[0], res.pair_shape_b[0])) == [0, 1]
        np.testing.assert_allclose(res.contacts.force_vectors().sum(axis=0), f_once, rtol=0,
                                   atol=1e-9 * np.linalg.norm(f_once))
    # distinct pairs keep their order of first appearance
    res = pipe.collide(poses, pairs=[[2, 0], [1, 0], [0, 2]])
    assert [sorted(p) for p in zip(res.pair_shape_a, res.pair_shape_b)] == [[0, 2], [0, 1]]
    both = pipe.collide(poses)
    f_both = both.contacts.force_vectors().sum(axis=0)
    np.testing.assert_allclose(res.contacts.force_vectors().sum(axis=0), f_both, rtol=0,
                               atol=1e-9 * np.linalg.norm(f_both))


@pytest.mark.parametrize("pairs, match", [([[0, 3]], r"pairs\[0\] = \(0, 3\): shape index out of range"),
                                          ([[-1, 0]], "out of range"), ([[1, 1]], "with itself"),
                                          ([[0.5, 1]], "non-integer"), ([[0, 1, 2]], "(K, 2)")])
def test_bad_pair_lists_name_the_argument(pairs, match):
    m = shapes([Box((0.5, 0.5, 0.1)), Sphere(R), Sphere(0.05)], stiffness=1e9, resolution=32)
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - D)), pose((0.2, 0, 0.05 - D))])
    with pytest.raises(InputError, match=match):
        HydroelasticPipeline(m).collide(poses, pairs=pairs)


# -- gaps ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("who", [0, 1])
def test_a_gap_does_not_change_a_penetrating_pair(who):
    # a gap only adds speculative contacts: it used to coarsen the shape's grid (its padding
    # shared the voxels), −5 % at 1 cm on a 0.2 m sphere at resolution 32
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - D))])
    forces = []
    for gap in (0.0, 0.01, 0.03, 0.05):
        gaps = [0.0, 0.0]
        gaps[who] = gap
        m = shapes([Box((0.5, 0.5, 0.1)), Sphere(R)], stiffness=1e9, resolution=32, gap=gaps)
        res = HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=False)).collide(poses)
        c = res.contacts
        pen = ~c.speculative
        forces.append(float(c.force[pen].sum()))
        assert (c.speculative.sum() > 0) == (gap > 0)  # the gap's speculative contacts
    np.testing.assert_allclose(forces, forces[0], rtol=1e-9)


# -- patches a few voxels across -------------------------------------------------------------------

def test_a_patch_few_voxels_wide_is_reported_once_naming_shape_and_resolution():
    from hydro.contact.deep_overlap import HydroelasticLimitWarning

    m = shapes([Box((0.5, 0.5, 0.1)), Sphere(R)], stiffness=1e9, resolution=8)
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, R - 0.001))])
    pipe = HydroelasticPipeline(m)
    with pytest.warns(HydroelasticLimitWarning, match=r"/World/shape_1 .*voxels wide.*sdfMaxResolution \d+") as rec:
        pipe.collide(poses)
    assert len([w for w in rec if "voxels wide" in str(w.message)]) == 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", HydroelasticLimitWarning)
        for _ in range(10):  # once per pair per pipeline
            pipe.collide(poses)


def test_only_the_first_call_is_looked_at():
    # a query, or a simulation that starts resting, is reported; a contact that forms later (a
    # landing's first touch, a pile's corners) is not
    import warnings

    from hydro.contact.deep_overlap import HydroelasticLimitWarning

    m = shapes([Box((0.5, 0.5, 0.1)), Sphere(R)], stiffness=1e9, resolution=64)
    apart = np.array([pose((0, 0, -0.05)), pose((0, 0, R + 0.01))])
    touch = np.array([pose((0, 0, -0.05)), pose((0, 0, R - 1e-5))])  # 10 µm: under a voxel wide
    pipe = HydroelasticPipeline(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HydroelasticLimitWarning)
        pipe.collide(apart)
        for _ in range(20):
            pipe.collide(touch)
    with pytest.warns(HydroelasticLimitWarning, match="0.\\d+ voxels wide"):
        HydroelasticPipeline(m).collide(touch)


def test_shipped_resolutions_are_not_reported():
    import warnings

    from hydro.contact.deep_overlap import HydroelasticLimitWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", HydroelasticLimitWarning)
        for res, d in ((64, 0.002), (32, 0.002)):
            m = shapes([Box((0.5, 0.5, 0.1)), Sphere(R)], stiffness=1e9, resolution=res)
            HydroelasticPipeline(m).collide(np.array([pose((0, 0, -0.05)), pose((0, 0, R - d))]))


def test_the_shipped_sphere_on_box_with_a_stiff_sphere():
    # the case: only the sphere's stiffness raised, 6.6e7 -> 6.6e15 (40.9 N, 81.3 N, 75.9 N,
    # 315 N, then 28,410 N plus 51 N sideways); the limit is k_box·V_cap = 82.39 N
    import os

    import hydro

    m = hydro.load_usd(os.path.join(os.path.dirname(__file__), "..", "scenes", "sphere_on_box.usda"))
    poses = m.shape_world_poses()
    k_box = float(m.shape_stiffness[0])
    ref = k_box * math.pi * D * D * (R - D / 3)
    for k in (6.6e10, 6.6e11, 6.6e13, 6.6e15):
        m.shape_stiffness[1] = k
        c = HydroelasticPipeline(m).collide(poses).contacts
        f = (c.force_vectors().astype(float) * np.where(c.shape_b == 1, 1.0, -1.0)[:, None]).sum(axis=0)
        exact = sphere_on_box(D, R, k_sphere=k, k_box=k_box).force
        assert abs(f[2] / exact - 1.0) < 0.01 and abs(f[2] / ref - 1.0) < 0.01, (k, f, exact)
        assert math.hypot(f[0], f[1]) <= 1e-5 * f[2], (k, f)
