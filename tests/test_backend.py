import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hydro.backend import KERNELS, Device, get_device

ROOT = os.path.join(os.path.dirname(__file__), "..")


@pytest.mark.parametrize("n", [0, 1, 2, 7, 4096, 4097, 100_003])
def test_exclusive_scan_cpu_matches_numpy(n):
    rng = np.random.default_rng(n)
    values = rng.integers(0, 9, size=n).astype(np.int32)
    out = np.full(n + 1, -7, dtype=np.int64)
    total = Device("cpu").exclusive_scan(values, out)
    expect = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
    np.testing.assert_array_equal(out, expect)
    assert total == expect[-1]


def test_scan_of_a_prefix_leaves_the_rest():
    values = np.arange(10, dtype=np.int32)
    out = np.full(11, -1, dtype=np.int64)
    total = Device("cpu").exclusive_scan(values, out, count=4)
    assert total == 0 + 1 + 2 + 3
    np.testing.assert_array_equal(out[:5], [0, 0, 1, 3, 6])
    assert np.all(out[5:] == -1)


def test_device_names_and_errors():
    assert get_device("cpu").name == "cpu"
    assert get_device("auto").name in ("cpu", "cuda")
    with pytest.raises(ValueError, match="device must be"):
        get_device("tpu")
    with pytest.raises(ValueError, match="threads_per_block"):
        Device("cpu", threads_per_block=0)


def test_kernel_registry_names_are_unique_and_paired():
    import hydro.sdf  # noqa: F401  (registers its kernels)

    assert KERNELS, "no kernels registered"
    for name, k in KERNELS.items():
        assert k.name == name
        assert k.parallel is not None and k.loop is not None
        assert k.cuda is not None or name.startswith("exclusive_scan."), name  # only the CPU scan is CPU-only


def _python(code, env, cwd=None):
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def _env(**changes):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "NUMBA_ENABLE_CUDASIM")}
    env.update(changes)
    return env


def test_importing_hydro_changes_nothing_outside_it(tmp_path):
    # Numba's configuration and the threading environment are left alone until the runtime is set up
    code = ("import os, numba\n"
            "before = numba.config.CACHE_DIR\n"
            "import hydro, hydro.contact.pipeline, hydro.sim.contact_data, hydro.sdf\n"
            "print(numba.config.CACHE_DIR == before, os.environ.get('OMP_WAIT_POLICY'))\n"
            "hydro.backend.configure_runtime()\n"
            "print(numba.config.CACHE_DIR == before, os.environ.get('OMP_WAIT_POLICY'))\n"
            "print(hydro.jit._runtime.cache_folder)\n")
    out = _python(code, _env(NUMBA_CACHE_DIR=str(tmp_path))).split("\n")
    assert out[:3] == ["True None", "True PASSIVE", str(tmp_path / "hydro-numba")]
    # a user's own setting wins; the simulator's process keeps its own folder
    out = _python(code, _env(NUMBA_CACHE_DIR=str(tmp_path), OMP_WAIT_POLICY="ACTIVE", NUMBA_ENABLE_CUDASIM="1"))
    assert out.split("\n")[:3] == ["True ACTIVE", "True ACTIVE", str(tmp_path / "hydro-numba-cudasim")]


def _packing_in_a_copy(tmp_path):
    """A copy of hydro's sources under ``tmp_path`` and ``run(edit="")``: a fresh process on that copy
    (its own cache folder) imports the packed contact data, runs the lines ``edit``, packs once and
    returns its emit kernel's [cache hits, cache misses] as strings."""
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "hydro"), src / "hydro", ignore=shutil.ignore_patterns("__pycache__"))
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(src))

    def run(edit=""):
        code = ("import sys\n"
                f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
                "from test_contact_data import random_case\n"
                "from hydro.sim import contact_data_packed as C\n"
                f"assert C.__file__.startswith({str(src)!r}), C.__file__\n"
                + edit
                + "C.pack_contact_data('cpu', **random_case(0, n=10), max_contact_data_count=3,\n"
                "                    points_in_world_space=False)\n"
                "s = C.CONTACT_DATA_EMIT_PACKED.loop.stats\n"
                "print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))\n")
        return _python(code, env, tmp_path).split()

    return src, run


def test_cache_follows_the_sources_a_kernel_can_inline(tmp_path):
    # Numba's own cache sees a kernel's file only. Hydro keys each kernel on a digest of its module
    # and the hydro modules it imports: an edit to an inlined helper in another file
    # (quat_rotate_one in transforms.py, inlined by the packed contact data's emit kernel) recompiles it, an
    # edit to an unrelated file (the USD reader) does not.
    src, run = _packing_in_a_copy(tmp_path)
    assert run() == ["0", "1"]  # compiled
    assert run() == ["1", "0"]  # loaded
    with open(src / "hydro" / "scene" / "usd_io.py", "a") as f:
        f.write("\n# an unrelated edit\n")
    assert run() == ["1", "0"]  # still loaded
    with open(src / "hydro" / "transforms.py", "a") as f:
        f.write("\n# an edit beside an inlined helper\n")
    assert run() == ["0", "1"]  # compiled again


def test_a_source_edited_after_import_is_not_cached_under_its_new_digest(tmp_path):
    # a process compiles the source it imported; if the file changed since, an entry saved under
    # the new file's digest would hand the old code to every later process (a test run still
    # compiling while a constant was edited did so): such a process's entries are never loaded
    src, run = _packing_in_a_copy(tmp_path)
    edit = f"open({str(src / 'hydro' / 'transforms.py')!r}, 'a').write('\\n# edited after the import\\n')\n"
    assert run(edit) == ["0", "1"]  # compiled the old source
    assert run() == ["0", "1"]  # not handed the old code
    assert run() == ["1", "0"]  # its own entry is loaded


def test_the_compiled_pipeline_call_has_the_same_cache_key_in_every_process(tmp_path):
    # Numba keys a closure's cache entry on its pickled cell contents, which differ between
    # processes for functions made at run time: the one-call CPU pipeline (a closure over the
    # kernels' launchers) was compiled again on every run (9 s of a 12 s warm `hydro collide`)
    code = ("from hydro.backend import configure_runtime\n"
            "configure_runtime()\n"
            "from hydro.contact.cpu_driver import cpu_collide_build\n"
            "from hydro.jit import _HydroCache\n"
            "from numba.core.registry import cpu_target\n"
            "codegen = cpu_target.target_context.codegen()\n"
            "for threaded in (False, True):\n"
            "    build = cpu_collide_build(threaded=threaded, polygons=True, reduce=True)\n"
            "    print(_HydroCache(build.py_func)._index_key((), codegen)[2][1])\n")
    env = _env(NUMBA_CACHE_DIR=str(tmp_path))
    first, second = _python(code, env, tmp_path).split(), _python(code, env, tmp_path).split()
    assert first == second and len(first) == 2
    assert first[0] != first[1]  # the serial and threaded builds are told apart


def test_the_command_line_says_once_that_it_compiles_and_library_use_says_nothing(tmp_path):
    from hydro.backend import COMPILING_MESSAGE

    def run(announce, cache):
        code = ("import numpy as np\n"
                "from hydro.backend import Device, configure_runtime\n"
                + ("configure_runtime(announce_compiles=True)\n" if announce else "")
                + "out = np.zeros(4, np.int64)\n"
                "assert Device('cpu').exclusive_scan(np.arange(3), out) == 3\n")
        env = _env(NUMBA_CACHE_DIR=str(tmp_path / cache))
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True).stderr.splitlines()

    first = run(True, "cli")
    assert first[0] == COMPILING_MESSAGE  # said once, then what was compiled, as it finishes
    assert len(first) == 2 and first[1].startswith("hydro:   compiled cpu_exclusive_scan (")
    assert first[1].endswith(" s)")
    assert run(True, "cli") == []  # loaded from the cache
    assert run(False, "library") == []


def test_a_kernel_is_keyed_on_what_it_can_inline_and_nothing_else():
    from hydro.jit import _module_closure

    refine = set(_module_closure("hydro.contact.refine"))
    assert {"hydro.contact.refine", "hydro.sdf.sample", "hydro.sdf.layout", "hydro.contact.pair_setup",
            "hydro.contact.interface", "hydro.backend", "hydro.jit"} <= refine
    for m in ("hydro.contact.refine", "hydro.contact.marching", "hydro.contact.reduction", "hydro.sdf.build",
              "hydro.sim.contact_data"):
        closure = _module_closure(m)
        assert not any(c.startswith(("hydro.scene", "hydro.tools", "hydro.contact.pipeline", "hydro.sim.simulation"))
                       for c in closure), (m, closure)


def test_parallel_and_serial_builds_are_cached_apart(tmp_path):
    # Numba's cache ignores options: under one name the serial build could be loaded for the
    # parallel one (kernels silently serial) or the reverse (a thread launch on every call).
    code = (
        "import numpy as np, hydro.sdf.sample as S\n"
        "from hydro.sdf.layout import SDFView\n"
        "k = S.SAMPLE_PHI\n"
        "print(k.parallel.py_func.__qualname__, k.loop.py_func.__qualname__)\n"
        "z = np.zeros\n"
        "view = SDFView(z((1, 10)), z((1, 11), np.int32), z(1, np.int32), z(1, np.float32), z(1, np.float32),\n"
        "               z(1, np.uint16), z(1, np.uint8), z(1, np.int32), z(1, np.int32), z(1, np.int32),\n"
        "               z(1, np.float32), z((1, 36), np.float32), z((1, 4)), z(1, np.int32), z(1, np.int32),\n"
        "               z(1, np.float32), z(1, np.int32), z(1, np.int64))\n"
        "args = (np.zeros(1, np.int32), np.zeros((1, 3)), view, np.zeros(1))\n"
        "k.parallel(0, *args); k.loop(0, 0, *args)\n"
    )
    out = _python(code, _env(NUMBA_CACHE_DIR=str(tmp_path)))
    parallel_name, serial_name = out.split()
    assert parallel_name != serial_name
    index = {p.rsplit("/", 1)[-1] for p in glob.glob(str(tmp_path / "**" / "*.nbi"), recursive=True)}
    stems = {name.rsplit(".", 2)[0].rsplit(".", 1)[-1] for name in index}  # "module.qualname.py311.nbi"
    assert {parallel_name, serial_name} <= stems, index
