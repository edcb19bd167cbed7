"""Refinement's bounds for exactly evaluated primitive fields (stage 3): the convex lower bound
of eA + eB and the voxel test of each block drop the cells around a shallow patch's rim, and
lose no contact (against the dense NumPy reference, which meshes B's whole grid)."""

import math

import numpy as np
import pytest

import naive
from hydro.backend import cpu_jit
from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Capsule, Cylinder, Sphere
from hydro.geometry.primitives import BOX, CAPSULE, CYLINDER, SPHERE, primitive_phi3, primitive_subgradient3
from pipeline_util import pose, shapes
from test_pipeline import _assert_rows_close

K = 1e9
KEYS = ("point", "normal", "area", "depth", "pressure", "force", "stiffness", "weight")


@cpu_jit
def _phi_and_subgradient(kind, p0, p1, p2, pts, out):
    for i in range(pts.shape[0]):
        g0, g1, g2, ok = primitive_subgradient3(kind, p0, p1, p2, pts[i, 0], pts[i, 1], pts[i, 2])
        out[i, 0] = primitive_phi3(kind, p0, p1, p2, pts[i, 0], pts[i, 1], pts[i, 2])
        out[i, 1] = g0
        out[i, 2] = g1
        out[i, 3] = g2
        out[i, 4] = 1.0 if ok else 0.0


@pytest.mark.parametrize("kind, params", [(SPHERE, (0.05, 0.0, 0.0)), (BOX, (0.03, 0.05, 0.02)),
                                          (CAPSULE, (0.02, 0.04, 0.0)), (CYLINDER, (0.03, 0.02, 0.0))])
def test_subgradients_bound_the_exact_distance_from_below(kind, params):
    # φ(y) >= φ(x) + g(x)·(y − x) for every pair of points (the primitives are convex), |g| <= 1,
    # and g is the gradient where φ is smooth (central differences)
    rng = np.random.default_rng(7 + kind)
    pts = rng.uniform(-0.08, 0.08, (400, 3))
    out = np.full((400, 5), np.nan)
    _phi_and_subgradient(kind, *params, pts, out)
    assert np.all(out[:, 4] == 1.0)
    phi, g = out[:, 0], out[:, 1:4]
    assert np.all(np.linalg.norm(g, axis=1) <= 1.0 + 1e-12)
    lower = phi[:, None] + np.einsum("ik,ijk->ij", g, pts[None, :, :] - pts[:, None, :])
    assert np.all(phi[None, :] >= lower - 1e-12)
    eps = 1e-7
    fd = np.empty_like(g)
    for k in range(3):
        d = np.zeros(3)
        d[k] = eps
        hi = np.full((400, 5), np.nan)
        lo = np.full((400, 5), np.nan)
        _phi_and_subgradient(kind, *params, pts + d, hi)
        _phi_and_subgradient(kind, *params, pts - d, lo)
        fd[:, k] = (hi[:, 0] - lo[:, 0]) / (2 * eps)
    smooth = np.linalg.norm(fd, axis=1) > 1.0 - 1e-6  # off the kinks (where |∇φ| < 1 numerically)
    assert smooth.sum() > 300
    np.testing.assert_allclose(g[smooth], fd[smooth], atol=1e-5)


def _rolling(depth, spin):
    """A 5 cm sphere on a long 20° slope whose coarse grid (voxel 0.1 m) sees only its faces:
    scripts/bench_sim.py's rolling scene, ``depth`` into the face, the sphere turned by ``spin``."""
    slope = math.radians(20.0)
    m = shapes([Box((3.0, 0.5, 0.2)), Sphere(0.05)], resolution=24)
    n = np.array([math.sin(slope), 0.0, math.cos(slope)])  # the face's normal
    down = np.array([math.cos(slope), 0.0, -math.sin(slope)])  # along the face
    poses = np.array([pose(-0.1 * n, (0, 1, 0), slope),
                      pose((0.05 - depth) * n + 0.3 * down + np.array([0.0, 0.01, 0.0]), (1, 2, 3), spin)])
    return m, poses


CASES = {
    "rolling_shallow": lambda: _rolling(0.0003, 0.4),
    "rolling_spun": lambda: _rolling(0.001, 2.1),
    "rolling_deep": lambda: _rolling(0.02, 1.0),
    "capsule_lying_on_a_box": lambda: (
        shapes([Box((0.6, 0.6, 0.2)), Capsule(0.02, 0.05)], stiffness=[K, 3 * K], resolution=24, gap=[0.0, 0.001]),
        np.array([pose((0, 0, -0.1)), pose((0.01, 0.0, 0.02 - 0.002), (0, 1, 0.2), math.pi / 2)])),
    "cylinder_lying_on_a_box": lambda: (
        shapes([Box((0.6, 0.6, 0.2)), Cylinder(0.03, 0.04)], resolution=24),
        np.array([pose((0, 0, -0.1)), pose((0.004, 0.0, 0.03 - 0.0015), (1, 0.1, 0), math.pi / 2 + 0.05)])),
    "cube_corner_into_a_big_sphere": lambda: (
        shapes([Sphere(0.3), Box((0.05, 0.05, 0.05))], stiffness=[2 * K, K], resolution=24),
        np.array([pose((0, 0, -0.3)), pose((0.0, 0.0, 0.04 - 0.003), (1, 1, 0.3), 0.9)])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_culled_refinement_loses_no_contact(case):
    m, poses = CASES[case]()
    # the grid route (refinement and marching cubes) on every pair: a cylinder's end on a box would
    # otherwise take the exact axial route (stage 4b), which refines nothing
    cfg = HydroelasticConfig(reduce_contacts=False, flat_polygons=False)
    pipe = HydroelasticPipeline(m, cfg)
    res = pipe.collide(poses)
    (a, b), = zip(res.pair_shape_a, res.pair_shape_b)
    ref = naive.patch_contacts(m, poses, a, b, clamp=cfg.mc_edge_clamp_min, exact=True)
    assert len(res.contacts) == len(ref["area"]) > 0
    _assert_rows_close(res.contacts.as_dict(), ref, KEYS)
    # and the bounds cull: at most a few of the blocks marching cubes looks at make no contact
    blocks = res.counts["cells_2"]
    counts = pipe.workspace.block_counts.array[:blocks]
    assert (counts == 0).sum() <= max(2, 0.35 * blocks), (blocks, (counts == 0).sum())
