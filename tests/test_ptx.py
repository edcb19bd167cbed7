"""Compile every CUDA kernel to real PTX for sm_90, so typing errors fail without a GPU."""

import pytest

from cuda_util import CUDA_EXTRA_MISSING, cuda_extra_installed
from hydro import backend

if not cuda_extra_installed():
    pytest.skip(CUDA_EXTRA_MISSING, allow_module_level=True)


def _fake_device(monkeypatch):
    import numba.cuda.dispatcher as dispatcher

    class _Device:
        compute_capability = (9, 0)

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _Device())


def _nvvm_available():
    try:
        from numba import cuda

        cuda.compile_ptx(lambda a: None, "void(float64[:])", cc=(9, 0))
        return True
    except Exception:  # noqa: BLE001
        return False


def test_every_kernel_compiles_to_ptx(monkeypatch):
    from numba import cuda

    from kernel_workload import exercise_all_kernels

    _fake_device(monkeypatch)
    if not _nvvm_available():
        pytest.fail("NVVM is missing: install the cuda extra (pip install 'numba-cuda[cu13]')")
    with backend.record_signatures() as sigs:
        exercise_all_kernels(backend.Device("cpu"))
    missing = sorted(set(backend.KERNELS) - set(sigs))
    assert not missing, f"the workload never launched these kernels, so they were not compiled: {missing}"
    compiled = 0
    for name, k in sorted(backend.KERNELS.items()):
        if k.cuda is None:  # CPU only (the CUDA scan has kernels of its own, below)
            continue
        ptx, _ = cuda.compile_ptx(k.cuda.py_func, sigs[name], cc=(9, 0))
        assert ".target sm_90" in ptx, name
        compiled += 1
    assert compiled >= 14
    for name, (kernel, sig) in backend.cuda_scan_kernels().items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        assert ".target sm_90" in ptx, name
