"""Whether the CUDA kernels' tests can run here: they need hydro's ``cuda`` extra (numba-cuda)."""

from importlib.metadata import PackageNotFoundError, version

CUDA_EXTRA_MISSING = "the CUDA kernels' tests need the cuda extra: pip install -e \".[test,cuda]\" (README's test command)"


def cuda_extra_installed() -> bool:
    """Whether numba-cuda (hydro's ``cuda`` extra) is installed: the PTX and simulator tests need
    it; a CPU install (``pip install -e ".[test]"``) skips them, saying so (CI installs the extra)."""
    try:
        version("numba-cuda")
        return True
    except PackageNotFoundError:
        return False
