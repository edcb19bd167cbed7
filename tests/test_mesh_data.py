"""Real meshes as packages ship them (tests/data/meshes, see its README): welded, accepted or
refused with the fix, repaired, and signed like their winding number."""

import hashlib
import os
import warnings

import numpy as np
import pytest
import trimesh

from hydro.errors import InputError
from hydro.geometry import Mesh
from hydro.geometry.mesh_distance import MeshDistance
from hydro.geometry.mesh_repair import repair_mesh
from hydro.geometry.mesh_winding import winding_number_exact
from hydro.sdf import SDFSettings, build_sdf

DATA = os.path.join(os.path.dirname(__file__), "data", "meshes")
SHA256 = {
    "bread.obj": "fb11db62e9da167ebf91ff4bed4d07a2f8d8210d5333df1bf01e18217a37cc1a",
    "milk.stl": "e7880b8da658d7612990cbafa83fb8d358005319a5cab7be6db6993b4b830b6b",
    "head_9.obj": "e55dbbcef11f2a551d23144d41a09fb61471d131f5605f2d9772f72d550f9a5e",
}
CLOSED = {"bread.obj": (168, 54), "milk.stl": (726, 123)}  # vertices as read -> after welding


def _load(name):
    path = os.path.join(DATA, name)
    with open(path, "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == SHA256[name], "test data changed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # head_9.obj names a material file that is not shipped
        return Mesh.load(path)


def _sign_errors(mesh, sdf, seed):
    """Field sign against the exact winding number of the mesh as given, at points in the box
    and near the surface; returns (wrong more than one voxel from the surface, points checked)."""
    rng = np.random.default_rng(seed)
    h = sdf.voxel_size
    tm = mesh.to_trimesh()
    surf, face = trimesh.sample.sample_surface(tm, 3000, seed=seed)
    normals = tm.face_normals[face]
    near = surf + normals * (rng.uniform(1.0, 3.0, len(surf)) * h * rng.choice([-1.0, 1.0], len(surf)))[:, None]
    pts = np.concatenate([rng.uniform(sdf.box_lo, sdf.box_hi, (5000, 3)), near])
    pts = pts[np.all((pts >= sdf.box_lo) & (pts <= sdf.box_hi), axis=1)]
    inside = winding_number_exact(mesh.vertices[mesh.faces], pts) > 0.5
    far = MeshDistance(mesh, sign="unsigned").signed_distance(pts) > h
    wrong = (sdf.sample(pts) < 0.0) != inside
    return int(np.sum(wrong & far)), int(far.sum())


@pytest.mark.parametrize("name", list(CLOSED))
def test_closed_real_mesh_is_welded_accepted_and_signed_right(name):
    mesh = _load(name)
    n_in, n_out = CLOSED[name]
    assert len(mesh.vertices) == n_in
    solid = mesh.solid()
    assert solid.weld.vertices_out == n_out and solid.shells == 1 and solid.volume > 0.0
    sdf = build_sdf(mesh, SDFSettings(max_resolution=48))
    wrong, checked = _sign_errors(mesh, sdf, seed=1)
    assert checked > 4000 and wrong == 0


def test_open_real_mesh_is_refused_with_the_fix_then_repaired():
    mesh = _load("head_9.obj")
    with pytest.raises(InputError) as info:
        build_sdf(mesh, SDFSettings(max_resolution=32))
    text = str(info.value)
    assert "not watertight" in text and "2 hole(s)" in text and "hydro mesh repair" in text
    # the default (point) contact path: winding-number sign, against the exact winding number
    rng = np.random.default_rng(2)
    lo, hi = mesh.local_aabb()
    pts = rng.uniform(lo - 0.01, hi + 0.01, (3000, 3))
    w = winding_number_exact(mesh.vertices[mesh.faces], pts)
    clear = np.abs(w - 0.5) > 1e-6
    d = MeshDistance(mesh, sign="winding").signed_distance(pts)
    np.testing.assert_array_equal((d < 0.0)[clear], (w > 0.5)[clear])
    # its holes' rims are flat (within 0.05 mm, a voxel is 2.3 mm): the repair closes them with
    # flat patches and moves the surface it keeps by nothing
    fixed, report = repair_mesh(mesh)
    assert report.accepted and report.added_faces > 0
    assert max(report.displacement, report.coverage) <= 1e-9
    assert 0.0 < report.fill_flatness <= 0.1 * report.max_displacement
    assert fixed.is_closed()
    sdf = build_sdf(fixed, SDFSettings(max_resolution=48))
    wrong, checked = _sign_errors(fixed, sdf, seed=3)
    assert checked > 4000 and wrong == 0


def test_asset_corpus_rows_on_the_shipped_meshes():
    """scripts/asset_corpus.py's per-mesh pipeline (no download) on the shipped meshes, and its
    overlap volume against a closed form."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
    try:
        import asset_corpus
    finally:
        sys.path.pop(0)
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    assert asset_corpus.volume_below(np.asarray(box.vertices), np.asarray(box.faces), -0.15 + 0.002) \
        == pytest.approx(0.1 * 0.2 * 0.002, rel=1e-12)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = asset_corpus.run_one("milk.stl", os.path.join(DATA, "milk.stl"), rng)
        assert row["status"] == "accepted" and row["wrong_far"] == 0 and row["points"] > 3000
        assert 0.8 < row["force"] / row["expected"] <= 1.0
        row = asset_corpus.run_one("head_9.obj", os.path.join(DATA, "head_9.obj"), rng)
    assert row["status"] == "repaired" and row["wrong_far"] == 0
