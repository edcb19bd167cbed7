"""Runs tests/cudasim in a separate process with the CUDA simulator enabled."""

import os
import subprocess
import sys

import pytest

from cuda_util import CUDA_EXTRA_MISSING, cuda_extra_installed


@pytest.mark.skipif(not cuda_extra_installed(), reason=CUDA_EXTRA_MISSING)
def test_cuda_kernels_under_the_simulator_match_the_cpu():
    here = os.path.dirname(__file__)
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(here, "cudasim")],
        env=env, capture_output=True, text=True, cwd=os.path.join(here, ".."),
    )
    assert proc.returncode == 0, f"simulator suite failed:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
