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
