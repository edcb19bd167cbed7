"""The kernels run as plain Python (``NUMBA_DISABLE_JIT=1``, how one steps through them in a
debugger) give the contacts the compiled kernels give. NumPy keeps small-integer arithmetic in its
own width where Numba widens it: with int8 marching-cubes tables the block's edge index overflowed
there, the staged path read the wrong edge cache slot, and a ring's force came out NaN."""

import json
import os
import subprocess
import sys

import numpy as np


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: A non-convex ring (16 sections, radii 0.08 / 0.05 m, 0.03 m tall) 2 mm into a box of equal
#: stiffness, at resolution 24: exact mesh fields, kinks and subdivided triangles, a few hundred
#: patch triangles (seconds as Python)
SCENE = """
import json, sys
import numpy as np, trimesh
from hydro.contact.config import HydroelasticConfig
from hydro.contact.pipeline import HydroelasticPipeline
from hydro.geometry import Box, Mesh
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings

def run(staged):
    ring = trimesh.creation.annulus(r_min=0.05, r_max=0.08, height=0.03, sections=16)
    b = ModelBuilder()
    b.add_shape("/World/Box", Box((0.3, 0.3, 0.1)), local_pose=[0, 0, -0.05, 0, 0, 0, 1], hydroelastic=True,
                stiffness=1e9)
    body = b.add_body("/World/Ring", [0.0, 0.0, 0.015 - 0.002, 0, 0, 0, 1])
    b.add_shape("/World/Ring/Mesh", Mesh(ring.vertices, ring.faces, name="ring"), body=body, hydroelastic=True,
                stiffness=1e9, sdf=SDFSettings(max_resolution=24))
    model = b.finalize()
    pipe = HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=False), stage_timings=staged)
    c = pipe.collide(model.shape_world_poses(model.state())).contacts
    return {"force": c.force_vectors().tolist(), "point": c.point.tolist()}
"""


def _contacts(staged, disable_jit):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable_jit else "0", PYTHONPATH=ROOT)
    code = SCENE + f"\nprint(json.dumps(run({staged})))\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return np.array(got["force"]), np.array(got["point"])


def test_kernels_run_as_python_give_the_compiled_contacts():
    compiled_f, compiled_p = _contacts(staged=False, disable_jit=False)
    python_f, python_p = _contacts(staged=True, disable_jit=True)
    assert len(compiled_f) > 100  # a patch with kinks and subdivisions, not an empty call
    assert np.isfinite(python_f).all() and np.isfinite(python_p).all()
    assert python_f.shape == compiled_f.shape
    total = np.abs(compiled_f[:, 2].sum())
    # the same triangles in the same order; float64 throughout, but the compiled kernels may fuse
    # multiply-adds: rows agree to rounding, not to the bit
    np.testing.assert_allclose(python_f, compiled_f, rtol=0, atol=1e-9 * total)
    # points: the marching vertices' edge parameters are stored as float32, so a point may move by
    # a float32 rounding at the scene's scale (0.1 m)
    np.testing.assert_allclose(python_p, compiled_p, rtol=0, atol=4 * float(np.spacing(np.float32(0.1))))
