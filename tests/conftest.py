import os
import sys

# Compiled kernels are cached between runs (CI sets its own directory).
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))

# The simulator suite must start in its own process (NUMBA_ENABLE_CUDASIM before numba loads);
# tests/test_cudasim.py runs it.
collect_ignore = ["cudasim"]

sys.path.insert(0, os.path.dirname(__file__))
