"""How hydro compiles (hydro/jit.py): helpers built once per argument type and linked into their
callers as LLVM IR (cached as IR), serial builds of threaded CPU functions for small inputs."""

import os
import subprocess
import sys
import textwrap

import numpy as np

from hydro.jit import SerialOrThreaded

ROOT = os.path.join(os.path.dirname(__file__), "..")


_MODULE = """
import numpy as np
from hydro.jit import cpu_jit, device_fn

@device_fn
def helper(x, k):
    return x * k + 1.0

@cpu_jit
def mixed(a):
    # literals, an int32 and an intp: one build of the helper serves them all
    return helper(a[0], 2) + helper(a[1], 3) + helper(a[2], np.int32(4)) + helper(a[3], a.shape[0])

@cpu_jit
def first(a):
    return helper(a[0], 3)

@cpu_jit
def second(a):
    return helper(a[1], 5) - 1.0
"""


def _run(code, tmp_path, cache):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM",)}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.split()


def test_a_helper_is_built_once_per_argument_type_and_linked_into_its_callers(tmp_path):
    (tmp_path / "jit_case.py").write_text(_MODULE)
    code = """
        import numpy as np, jit_case as m
        from hydro.jit import _LinkOnlyEntry
        print(m.mixed(np.array([1.0, 2.0, 3.0, 4.0])))
        print(len(m.helper.overloads))
        (cres,) = m.helper.overloads.values()
        # no machine code of its own: its callers find it under a key, not an executable
        engine = cres.library._codegen._engine
        print(isinstance(cres.entry_point, _LinkOnlyEntry), engine.is_symbol_defined(cres.fndesc.llvm_cpython_wrapper_name))
        # from Python it runs a twin compiled with the usual wrapper: the same arithmetic
        print(m.helper(2.5, 4), m.helper(np.float32(1.5), 3))
    """
    assert _run(code, tmp_path, tmp_path / "cache") == [str(2.0 + 1 + 6 + 1 + 12 + 1 + 16 + 1), "1", "True", "False",
                                                       "11.0", "5.5"]


def test_linked_helpers_are_cached_as_ir_and_reused_by_a_new_caller(tmp_path):
    (tmp_path / "jit_case.py").write_text(_MODULE)
    cache = tmp_path / "cache"
    code = """
        import numpy as np, jit_case as m
        print(m.{fn}(np.array([2.0, 3.0])))
        s = m.helper.stats
        print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))
    """
    assert _run(code.format(fn="first"), tmp_path, cache) == ["7.0", "0", "1"]  # compiled, its IR saved
    # another process compiles another caller: the helper's IR comes from the cache
    assert _run(code.format(fn="second"), tmp_path, cache) == ["15.0", "1", "0"]
    names = sorted(p.name for p in (cache / "hydro-numba").glob("jit_case.helper*.nbi"))
    assert names == ["jit_case.helper-linked.py{}{}.nbi".format(*sys.version_info[:2])], names


def test_small_inputs_run_the_serial_build_and_large_ones_the_threaded_build(monkeypatch):
    from hydro.sdf.build import SERIAL_SAMPLES, _quantize

    assert isinstance(_quantize, SerialOrThreaded)
    assert _quantize.threaded.py_func.__qualname__ == "_quantize__threaded"  # cached apart from the serial one
    ran = []
    for build in ("serial", "threaded"):
        compiled = getattr(_quantize, build)
        monkeypatch.setattr(_quantize, build, lambda *a, _b=build, _c=compiled: ran.append(_b) or _c(*a))
    rng = np.random.default_rng(5)
    for n in (1000, SERIAL_SAMPLES - 1, SERIAL_SAMPLES):
        values = rng.uniform(-0.1, 0.3, n)
        out = np.full(n, np.nan)
        _quantize(values, -0.05, 1000.0, 255.0, out)
        np.testing.assert_array_equal(out, np.clip(np.floor((values + 0.05) * 1000.0 + 0.5), 0.0, 255.0))
    assert ran == ["serial", "serial", "threaded"]
