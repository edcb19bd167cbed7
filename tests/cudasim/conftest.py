import os

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run this suite with NUMBA_ENABLE_CUDASIM=1 (tests/test_cudasim.py does)"
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".numba_cache"))
