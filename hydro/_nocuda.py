"""A stand-in for ``numba.cuda`` when Numba has no CUDA target (the ``cuda`` extra not installed
and a Numba without the built-in one): hydro imports, the CPU runs, and anything that would
need CUDA says which extra to install.

:data:`cuda` answers ``is_available()`` with False; ``cuda.jit`` keeps the function so modules
that define CUDA kernels import, and launching one raises :class:`CUDAMissing`.
"""

from __future__ import annotations

MESSAGE = ("CUDA needs Numba's CUDA target, which is not installed: pip install 'hydro[cuda]' "
           "(or use the CPU: device 'cpu', --device cpu)")


class CUDAMissing(RuntimeError):
    """Something needed numba-cuda (the ``cuda`` extra), which is not installed."""


class _Kernel:
    """What ``cuda.jit`` gives without CUDA: the Python function, which cannot be launched."""

    def __init__(self, py_func):
        self.py_func = py_func
        self.__name__ = getattr(py_func, "__name__", "kernel")

    def __getitem__(self, launch_config):
        raise CUDAMissing(MESSAGE)

    def __call__(self, *args, **kwargs):
        raise CUDAMissing(MESSAGE)


class _NoCUDA:
    """The few names of ``numba.cuda`` hydro touches at import time; the rest raise."""

    available = False

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def jit(func=None, **options):
        if func is None or isinstance(func, (str, tuple, list)):  # @cuda.jit(...) with options or a signature
            return _Kernel
        return _Kernel(func)

    def __getattr__(self, name):
        raise CUDAMissing(f"numba.cuda.{name}: {MESSAGE}")


cuda = _NoCUDA()
