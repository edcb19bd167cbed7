"""The command line, run as users run it (python -m hydro in a subprocess)."""

import json

import numpy as np
import pytest

from cli_util import assert_one_line_error, hydro


def test_collide_json_reports_each_pair_as_the_contract_says(tmp_path):
    out = tmp_path / "contacts.npz"
    proc = hydro("collide", "scenes/sphere_on_box.usda", "--json", "--out", str(out), "--stage-timings")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report) == {"pairs", "contact_count", "overflow", "timings_ms"}
    assert report["overflow"] is None
    (pair,) = report["pairs"]
    assert pair["shape_a"] == "/World/Ground" and pair["shape_b"] == "/World/Sphere/Collider"
    assert set(pair) == {"shape_a", "shape_b", "kind", "contact_count", "net_force", "net_torque", "patch_area",
                         "center_of_pressure"}
    assert pair["kind"] == "hydroelastic"
    # the scene is authored so the patch carries about the sphere's weight (41 N)
    assert 30 < pair["net_force"][2] < 50
    assert abs(pair["net_force"][0]) < 1e-3 * pair["net_force"][2]
    assert set(report["timings_ms"]) >= {"broad_phase", "pair_setup", "refine", "marching_cubes", "reduce"}
    table = np.load(out)
    for name in ("point", "normal", "area", "depth", "pressure", "force", "stiffness", "weight", "shape_a",
                 "shape_b", "env", "speculative", "shape_paths"):
        assert name in table.files, name
    assert len(table["force"]) == report["contact_count"]
    assert list(table["shape_paths"][table["shape_b"]][:1]) == ["/World/Sphere/Collider"]
    f = (table["force"].astype(float)[:, None] * table["normal"]).sum(axis=0)
    np.testing.assert_allclose(f, pair["net_force"], rtol=0, atol=1e-6 * np.linalg.norm(pair["net_force"]))


def test_collide_json_reports_point_contact_pairs_with_their_kind(tmp_path):
    out = tmp_path / "contacts.npz"
    proc = hydro("collide", "scenes/primitives_on_plane.usda", "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    pairs = {p["shape_b"]: p for p in report["pairs"]}
    assert set(pairs) == {"/World/Box/Collider", "/World/Sphere/Collider", "/World/Capsule/Collider"}
    assert {p["kind"] for p in report["pairs"]} == {"point"}
    # the scene sinks each body so that its contacts carry its weight (k_eff d = m g / n)
    rho, g = 1000.0, 9.81
    weights = {"/World/Box/Collider": (rho * 0.1**3 * g, 4),
               "/World/Sphere/Collider": (rho * 4 / 3 * np.pi * 0.05**3 * g, 1),
               "/World/Capsule/Collider": (rho * (np.pi * 0.03**2 * 0.15 + 4 / 3 * np.pi * 0.03**3) * g, 2)}
    for path, (w, n) in weights.items():
        assert pairs[path]["contact_count"] == n
        np.testing.assert_allclose(pairs[path]["net_force"], [0, 0, w], rtol=1e-4, atol=1e-9)
        assert pairs[path]["patch_area"] == 0.0
    table = np.load(out)
    assert set(table["kind"].tolist()) == {1} and set(table["pair_kind"].tolist()) == {1}
    assert report["contact_count"] == 7 and {"point_broad_phase", "point_narrow_phase"} <= set(report["timings_ms"])


def test_collide_no_reduce_reports_every_triangle():
    reduced = json.loads(hydro("collide", "scenes/sphere_on_box.usda", "--json").stdout)
    full = json.loads(hydro("collide", "scenes/sphere_on_box.usda", "--json", "--no-reduce").stdout)
    assert full["contact_count"] > 10 * reduced["contact_count"]
    # without --stage-timings the CPU runs the hydroelastic stages as one compiled call
    assert "stages" in full["timings_ms"] and "marching_cubes" not in full["timings_ms"]
    f = np.array(full["pairs"][0]["net_force"])
    np.testing.assert_allclose(reduced["pairs"][0]["net_force"], f, rtol=0, atol=1e-6 * np.linalg.norm(f))


def test_collide_text_output():
    proc = hydro("collide", "scenes/two_spheres.usda")
    assert proc.returncode == 0, proc.stderr
    assert "pair" in proc.stdout and "ms per call" in proc.stdout


@pytest.mark.parametrize("args, message", [
    (("collide", "scenes/missing.usda"), "missing.usda"),
    (("sdf", "sphere:0.1", "--resolution", "60"), "argument --resolution: must be a positive multiple of 8"),
    (("sdf", "box:0.1,0.2"), "box takes 3 number"),
])
def test_errors_are_one_line_on_stderr(args, message):
    assert_one_line_error(hydro(*args), message)


def test_sdf_command_prints_grid_memory_and_error():
    proc = hydro("sdf", "sphere:0.1", "--points", "20000")
    assert proc.returncode == 0, proc.stderr
    for word in ("grid", "bricks", "memory", "dense grid", "build", "error vs exact", "wrong sign"):
        assert word in proc.stdout
