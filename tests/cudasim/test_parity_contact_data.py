"""launch_contact_data under the CUDA simulator against the CPU and the NumPy reference."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from hydro.backend import Device  # noqa: E402
from hydro.sim.contact_data import launch_contact_data  # noqa: E402
from test_contact_data import check_against_reference, random_case  # noqa: E402

SIM = Device("cuda", threads_per_block=32)  # small blocks: 2·n contact sides span several blocks
CPU = Device("cpu")


@pytest.mark.parametrize("seed, max_count, in_world", [(10, 3, False), (11, 100, True)])
def test_contact_data_parity(seed, max_count, in_world):
    case = random_case(seed, n=70)
    cpu = launch_contact_data(CPU, **case, max_contact_data_count=max_count, points_in_world_space=in_world)
    sim = launch_contact_data(SIM, **case, max_contact_data_count=max_count, points_in_world_space=in_world)
    for name in ("counts", "required_counts", "start_indices", "separations"):
        np.testing.assert_array_equal(getattr(sim, name), getattr(cpu, name), err_msg=name)
    for name in ("forces", "points", "normals"):
        np.testing.assert_allclose(getattr(sim, name), getattr(cpu, name), rtol=1e-12, atol=1e-14, err_msg=name)
    check_against_reference(sim, case, max_count, in_world)
    assert cpu.required_counts.sum() > 20
