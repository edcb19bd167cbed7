"""CUDA kernels under the simulator against the CPU result (tiny inputs, small blocks)."""

import numpy as np
import pytest

from hydro.backend import CUDASIM, Device

assert CUDASIM

SIM = Device("cuda", threads_per_block=32)  # small blocks: tiny inputs still span several blocks
CPU = Device("cpu")


@pytest.mark.parametrize("n", [0, 1, 31, 300, 600])
def test_exclusive_scan(n):
    # 600 > 2 scan blocks of 256, so the recursive block-sum pass runs too
    rng = np.random.default_rng(n)
    values = rng.integers(0, 5, size=n).astype(np.int32)
    out_cpu = np.zeros(n + 1, dtype=np.int64)
    CPU.exclusive_scan(values, out_cpu)
    out_sim = SIM.full(n + 1, -1, np.int64)
    total = SIM.exclusive_scan(SIM.asarray(values), out_sim)
    np.testing.assert_array_equal(SIM.to_host(out_sim), out_cpu)
    assert total == out_cpu[-1]


@pytest.mark.parametrize("fmt", ["float32", "uint16", "uint8"])
def test_sdf_sampling(fmt):
    from hydro.geometry import Box, Sphere
    from hydro.sdf import SDFPack, SDFSettings, build_sdf

    settings = SDFSettings(max_resolution=16, texture_format=fmt)
    pack = SDFPack([build_sdf(Sphere(0.1), settings), build_sdf(Box((0.1, 0.2, 0.15)), settings)])
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 2, size=48)
    pts = rng.uniform(-0.16, 0.16, size=(48, 3))  # some outside the boxes
    np.testing.assert_allclose(pack.sample(ids, pts, device=SIM), pack.sample(ids, pts, device=CPU), rtol=0, atol=1e-12)
    phi_s, grad_s = pack.sample_grad(ids, pts, device=SIM)
    phi_c, grad_c = pack.sample_grad(ids, pts, device=CPU)
    np.testing.assert_allclose(phi_s, phi_c, rtol=0, atol=1e-12)
    np.testing.assert_allclose(grad_s, grad_c, rtol=0, atol=1e-9)
    # the stored grid values (a box of samples spanning fine and coarse bricks, and the far faces)
    lo, hi = (5, 6, 7), pack.sdfs[1].resolution
    np.testing.assert_array_equal(pack.grid_values(1, lo, hi, device=SIM), pack.grid_values(1, lo, hi, device=CPU))


def test_exact_mesh_field():
    # a mesh's exact field (hydro/sdf/mesh_field.py) beside a primitive's: points near the surface
    # (candidate lists, pseudo-normal sign), farther (the stored sign) and outside the box
    import trimesh

    from hydro.geometry import Mesh, Sphere
    from hydro.sdf import SDFPack, SDFSettings, build_sdf

    ico = trimesh.creation.icosphere(subdivisions=1, radius=0.1)
    settings = SDFSettings(max_resolution=16)
    pack = SDFPack([build_sdf(Sphere(0.05), settings), build_sdf(Mesh(ico.vertices, ico.faces, name="ico"), settings)])
    rng = np.random.default_rng(2)
    d = rng.normal(size=(40, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    pts = np.concatenate([d * rng.uniform(0.07, 0.11, (40, 1)), rng.uniform(-0.16, 0.16, (8, 3))])
    ids = np.concatenate([np.ones(40, np.int64), rng.integers(0, 2, size=8)])
    cpu = pack.sample_exact(ids, pts, device=CPU)
    assert np.count_nonzero(cpu[:40] != pack.sample(ids[:40], pts[:40], device=CPU)) > 20  # the lists were used
    np.testing.assert_allclose(pack.sample_exact(ids, pts, device=SIM), cpu, rtol=0, atol=1e-12)
