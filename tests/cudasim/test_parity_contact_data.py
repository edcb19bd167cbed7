"""Contact data under the CUDA simulator against the CPU and the NumPy references: the documented
launchers on device arrays (Newton layout), and the packed helper."""

import os
import sys

import numpy as np
import pytest
from numba import cuda

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from hydro.backend import Device  # noqa: E402
from hydro.sim.contact_data import launch_contact_data, launch_count_contacts_per_pair  # noqa: E402
from hydro.sim.contact_data_packed import pack_contact_data  # noqa: E402
from test_contact_data import (check_against_reference, check_rigid_against_reference, launch_both,  # noqa: E402
                               random_case, random_rigid_case)

SIM = Device("cuda", threads_per_block=32)  # small blocks: 2·n contact sides span several blocks
CPU = Device("cpu")


@pytest.mark.parametrize("seed, max_count, in_world", [(10, 3, False), (11, 100, True)])
def test_packed_contact_data_parity(seed, max_count, in_world):
    case = random_case(seed, n=70)
    cpu = pack_contact_data(CPU, **case, max_contact_data_count=max_count, points_in_world_space=in_world)
    sim = pack_contact_data(SIM, **case, max_contact_data_count=max_count, points_in_world_space=in_world)
    for name in ("counts", "required_counts", "start_indices", "separations"):
        np.testing.assert_array_equal(getattr(sim, name), getattr(cpu, name), err_msg=name)
    for name in ("forces", "points", "normals"):
        np.testing.assert_allclose(getattr(sim, name), getattr(cpu, name), rtol=1e-12, atol=1e-14, err_msg=name)
    check_against_reference(sim, case, max_count, in_world)
    assert cpu.required_counts.sum() > 20


@pytest.mark.parametrize("seed, max_count, in_world", [(12, 2, False), (13, 50, True)])
def test_launch_contact_data_parity_on_device_arrays(seed, max_count, in_world):
    case = random_rigid_case(seed, capacity=40, count=37)
    counts_cpu, start_cpu, out_cpu = launch_both(case, max_count, in_world)
    # the same launch with every array on the device (the outputs pre-filled with NaN there)
    S, F = case["body_filter_map"].shape[0], case["filter_count"]
    P = S * F
    dev = {k: cuda.to_device(v) if isinstance(v, np.ndarray) else v for k, v in case.items()}
    counts = cuda.to_device(np.full(P, 99, np.uint32))
    keys = ("contact_count", "shape0", "shape1", "shape_body", "body_sensor_map", "body_sensor_map_size",
            "body_filter_map", "num_bodies", "filter_count", "world_body_idx")
    launch_count_contacts_per_pair(*[dev[k] for k in keys], counts, case["rigid_contact_max"])
    host_counts = counts.copy_to_host().astype(np.int64)
    np.testing.assert_array_equal(host_counts, counts_cpu)
    start = cuda.to_device(np.r_[0, np.cumsum(host_counts)[:-1]].astype(np.uint32))
    out = {"forces": cuda.to_device(np.full((S, F, max_count, 3), np.nan, np.float32)),
           "points": cuda.to_device(np.full((S, F, max_count, 3), np.nan, np.float32)),
           "normals": cuda.to_device(np.full((S, F, max_count, 3), np.nan, np.float32)),
           "separations": cuda.to_device(np.full((S, F, max_count), np.nan, np.float32)),
           "counts": cuda.to_device(np.zeros(P, np.uint32))}
    launch_contact_data(dev["contact_count"], dev["shape0"], dev["shape1"], dev["point0"], dev["point1"],
                        dev["normal"], dev["contact_force"], dev["thickness0"], dev["thickness1"], dev["shape_body"],
                        dev["body_q"], dev["body_sensor_map"], case["body_sensor_map_size"], dev["body_filter_map"],
                        case["num_bodies"], case["filter_count"], case["world_body_idx"], case["dt_scale"], max_count,
                        out["forces"], out["points"], out["normals"], out["separations"], out["counts"], start,
                        case["rigid_contact_max"], points_in_world_space=in_world)
    host = {k: v.copy_to_host() for k, v in out.items()}
    for name in ("counts", "forces", "points", "normals", "separations"):
        np.testing.assert_array_equal(host[name], out_cpu[name], err_msg=name)  # the same slots, bit for bit
    check_rigid_against_reference(host_counts, start.copy_to_host(), host, case, max_count, in_world)
    assert host_counts.sum() > 10
