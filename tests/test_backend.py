import numpy as np
import pytest

from hydro.backend import KERNELS, Device, get_device


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
    for name, kp in KERNELS.items():
        assert kp.name == name
        assert kp.cpu is not None and kp.cuda is not None


def test_kernels_are_cached_under_a_digest_of_the_sources(tmp_path):
    # Numba's cache only sees a kernel's own file; hydro keys its cache folder on all sources.
    import subprocess
    import sys

    code = "import hydro.backend, numba; print(numba.config.CACHE_DIR)"
    env = dict(__import__("os").environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    from hydro.backend import _source_digest

    assert out.stdout.strip() == str(tmp_path / f"hydro-{_source_digest()}")
    # the simulator's process compiles the CPU kernels around Python-running helpers: its own folder
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / f"hydro-{_source_digest()}-cudasim")


def test_parallel_and_serial_builds_are_cached_apart(tmp_path):
    # Numba's cache ignores options: under one name the serial build could be loaded for the
    # parallel one (kernels silently serial) or the reverse (a thread launch on every call).
    import glob
    import subprocess
    import sys

    code = (
        "import numpy as np, hydro.sdf.sample as S\n"
        "k = S.SAMPLE_PHI.cpu\n"
        "print(k.parallel.py_func.__qualname__, k.serial.py_func.__qualname__)\n"
        "args = (np.zeros(1, np.int32), np.zeros((1, 3)), np.zeros((1, 10)), np.zeros((1, 11), np.int32),\n"
        "        np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32),\n"
        "        np.zeros(1, np.uint16), np.zeros(1, np.uint8), np.zeros(1))\n"
        "k.parallel(0, *args); k.serial(0, *args)\n"
    )
    env = dict(__import__("os").environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    parallel_name, serial_name = out.stdout.split()
    assert parallel_name != serial_name
    index = {p.rsplit("/", 1)[-1] for p in glob.glob(str(tmp_path / "**" / "*.nbi"), recursive=True)}
    stems = {name.split(".", 1)[1].split("-", 1)[0] for name in index}  # "module.qualname-line.py311.nbi"
    assert {parallel_name, serial_name} <= stems, index
