"""The default contact path (broad phase, narrow phase of every handler, compaction) under the
CUDA simulator against the CPU."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from hydro.backend import Device  # noqa: E402
from hydro.contact.point_pipeline import PointContactPipeline  # noqa: E402
from point_util import every_handler_scene  # noqa: E402

SIM = Device("cuda", threads_per_block=32)
CPU = Device("cpu")


def test_point_contact_parity():
    m, poses = every_handler_scene()
    cpu, pa, pb, call_cpu = PointContactPipeline(m, device=CPU).collide(poses)
    sim, sa, sb, call_sim = PointContactPipeline(m, device=SIM).collide(poses)
    assert call_cpu.counts == call_sim.counts and call_cpu.counts["point_pairs"] == 8
    np.testing.assert_array_equal(pa, sa)
    np.testing.assert_array_equal(pb, sb)
    assert len(cpu) > 20
    for name, arr in cpu.as_dict().items():
        got = getattr(sim, name)
        if arr.dtype.kind == "f":
            np.testing.assert_allclose(got, arr, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(got, arr, err_msg=name)


def test_heightfield_point_contact_parity():
    # a heightfield takes the triangle-mesh route (its slab's field): a box on a sloped field
    from hydro.geometry import Box, Heightfield
    from hydro.sdf import SDFSettings
    from point_util import point_model, pose

    hf = Heightfield([[0.0, 0.01, 0.0], [0.01, 0.02, 0.015], [0.0, 0.01, 0.005]], hx=0.3, hy=0.3)
    m = point_model([hf, Box((0.08, 0.08, 0.08))], static=(0,), sdf=SDFSettings(max_resolution=16))
    poses = np.array([pose(), pose((-0.12, -0.1, 0.04 + float(hf.height_at(-0.12, -0.1)) - 0.003))])
    cpu, pa, pb, call_cpu = PointContactPipeline(m, device=CPU).collide(poses)
    sim, sa, sb, call_sim = PointContactPipeline(m, device=SIM).collide(poses)
    assert call_cpu.counts == call_sim.counts and call_cpu.counts["point_pairs"] == 1
    np.testing.assert_array_equal(pa, sa)
    np.testing.assert_array_equal(pb, sb)
    assert len(cpu) >= 2 and set(cpu.shape_a.tolist()) == {0}
    for name, arr in cpu.as_dict().items():
        got = getattr(sim, name)
        if arr.dtype.kind == "f":
            np.testing.assert_allclose(got, arr, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(got, arr, err_msg=name)
