"""The experiment scripts' core functions, the closed forms they rely on, and the sweep runner."""

import importlib.util
import math
import os

import numpy as np
import pytest

from hydro.tools import analytic
from hydro.tools.sweep import NONDETERMINISTIC, Setting, grid, measure, run_sweep

EXPERIMENTS = os.path.join(os.path.dirname(__file__), "..", "scripts", "experiments")


def _script(name):
    spec = importlib.util.spec_from_file_location(f"experiment_{name}", os.path.join(EXPERIMENTS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# closed forms


@pytest.mark.parametrize("d, V, A", [(0.005, 3.82882e-6, 3.0826e-3), (0.01, 1.49226e-5, 6.0469e-3),
                                     (0.02, 5.65487e-5, 1.16183e-2)])
def test_sphere_closed_form_matches_the_reference_table(d, V, A):
    cf = analytic.sphere_on_box(d, 0.1, k_sphere=1.0, k_box=1.0)
    # equal stiffness k: P = k·V with k_eff = k/2 in the unequal formula
    assert cf.force == pytest.approx(V, rel=1e-5)
    assert cf.area == pytest.approx(A, rel=1e-4)
    assert cf.lowest == pytest.approx(-d / 2)


@pytest.mark.parametrize("d, V, A", [(0.002, 9.80133e-6, 1.0164e-2), (0.005, 2.37708e-5, 1.0404e-2),
                                     (0.01, 4.51667e-5, 1.0787e-2)])
def test_cube_closed_form_matches_the_reference_table(d, V, A):
    cf = analytic.cube_on_box(d, 0.1, k=1.0)
    assert cf.force == pytest.approx(V, rel=1e-5)
    assert cf.area == pytest.approx(A, rel=1e-4)


@pytest.mark.parametrize("d, V, A", [(0.005, 1.93077e-6, 1.55116e-3), (0.01, 7.59218e-6, 3.06305e-3),
                                     (0.02, 2.93215e-5, 5.96903e-3)])
def test_two_spheres_closed_form_matches_the_reference_table(d, V, A):
    cf = analytic.two_spheres(d, 0.1, k=1.0)
    assert cf.force == pytest.approx(V, rel=1e-5)
    assert cf.area == pytest.approx(A, rel=1e-5)


def _cylinder_phi(x, y, z, axis_z, R, L):
    """Exact signed distance of a finite cylinder with its axis along x at height ``axis_z``."""
    dr = np.hypot(y, z - axis_z) - R
    dx = np.abs(x) - L / 2
    return np.minimum(np.maximum(dr, dx), 0.0) + np.hypot(np.maximum(dr, 0.0), np.maximum(dx, 0.0))


def _interface_height(x, y, d, R, L):
    """z where φ_box = z equals φ_cylinder, by bisection (φ_box − φ_cyl grows with z)."""
    lo = np.full(np.broadcast(x, y).shape, -R)
    hi = np.zeros_like(lo)
    for _ in range(56):
        mid = 0.5 * (lo + hi)
        above = mid - _cylinder_phi(x, y, mid, R - d, R, L) > 0
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("d", [0.003, 0.01, 0.02])
def test_cylinder_closed_form_matches_quadrature(d):
    # Independent of the derivation: Gauss–Legendre quadrature over the patch's footprint of
    # the interface height found by bisection from the two exact signed distance functions;
    # V = ∫∫ −z* dx dy (P_z = k·V), A = ∫∫ √(1 + |∇z*|²) dx dy (gradient by central differences).
    R, L = 0.1, 0.2
    a = math.sqrt(d * (2 * R - d))
    g, w = np.polynomial.legendre.leggauss(120)
    # x in [0, L/2] (doubled by symmetry), split where the end ramp can begin (within d/2 of the
    # end face: the overlap is at most d deep, so the interface is at most d/2 deep)
    cut = L / 2 - d / 2
    x = np.concatenate([(g + 1) / 2 * cut, cut + (g + 1) / 2 * (L / 2 - cut)])
    wx = np.concatenate([w * cut / 2, w * (L / 2 - cut) / 2])
    y, wy = g * a, w * a
    X, Y = np.meshgrid(x, y, indexing="ij")
    W = 2 * np.outer(wx, wy)
    Z = _interface_height(X, Y, d, R, L)
    V = float((W * -Z).sum())
    eps = 1e-7
    zx = (_interface_height(X + eps, Y, d, R, L) - _interface_height(X - eps, Y, d, R, L)) / (2 * eps)
    zy = (_interface_height(X, Y + eps, d, R, L) - _interface_height(X, Y - eps, d, R, L)) / (2 * eps)
    A = float((W * np.sqrt(1 + zx**2 + zy**2)).sum())
    cf = analytic.cylinder_on_box(d, R, L, k=1.0)
    assert V == pytest.approx(cf.force, rel=1e-6)
    assert A == pytest.approx(cf.area, rel=2e-4)
    assert float(_interface_height(np.zeros(1), np.zeros(1), d, R, L)[0]) == pytest.approx(cf.lowest, abs=1e-9)


def test_cylinder_closed_form_limits():
    R, L, d = 0.1, 0.2, 0.01
    cf = analytic.cylinder_on_box(d, R, L, k=1.0)
    a = math.sqrt(d * (2 * R - d))
    # the curved part alone (no end ramps) is (2/3)·L·a·d; the ramps take a little off
    assert cf.force < 2 / 3 * L * a * d
    # the area lies between the flat footprint and the footprint with √2 ramps everywhere
    assert 2 * a * L < cf.area < 2 * a * L * math.sqrt(2)
    assert analytic.cylinder_on_box(0.0, R, L).force == 0.0
    with pytest.raises(ValueError):
        analytic.cylinder_on_box(0.5, R, L)


# ---------------------------------------------------------------------------------------------
# experiments on tiny configurations


def test_force_vs_depth_matches_the_closed_forms_at_64():
    exp = _script("force_vs_depth")
    rows = exp.run(resolutions=(64,), depths=(0.01, 0.02))
    assert len(rows) == 6
    for r in rows:
        assert r["force_z"] > 0
        tol = 0.02 if r["depth"] >= 0.01 else 0.03
        assert abs(r["force_error"]) < tol, r
        assert abs(r["area_error"]) < 0.02, r
    worst = exp.summarize(rows)
    assert set(worst) == {(s, 64) for s in exp.SCENES}


def test_convergence_order_is_above_one_for_the_sphere():
    exp = _script("convergence")
    rows = exp.run(scenes=("sphere_on_box",), resolutions=(32, 48, 64), depths=(0.008, 0.016), clamps=(0.02,))
    s = exp.summarize(rows)[("sphere_on_box", 0.02)]
    assert s["force_rms"][0] > s["force_rms"][-1]
    assert s["force_order"] > 1.0
    assert s["area_order"] > 1.0


def test_fit_order_recovers_a_known_slope():
    exp = _script("convergence")
    common = exp._common
    h = np.array([0.01, 0.005, 0.0025])
    assert common.fit_order(h, 3 * h**2) == pytest.approx(2.0)
    assert common.fit_order(h, -3 * h**1.5) == pytest.approx(1.5)
    assert math.isnan(common.fit_order([0.01], [0.1]))


def test_stiffness_ratio_follows_the_unequal_stiffness_formulas():
    exp = _script("stiffness_ratio")
    rows = exp.run(ratios=(0.25, 4.0), interfaces=("continuous",))
    for r in rows:
        assert abs(r["force_error"]) < 0.02, r
        assert abs(r["lowest_error_voxels"]) < 0.5, r
    soft, stiff = sorted(rows, key=lambda r: r["stiffness_ratio"])
    # the stiffer the sphere, the deeper the patch sits (toward the sphere's own surface)
    assert stiff["lowest"] < soft["lowest"]


def test_reduction_keeps_force_and_torque_within_the_budget():
    exp = _script("reduction")
    # (a long, tapered voxel patch: a box pair's exact polygons are fewer triangles than either budget)
    rows = exp.run(budgets=(16, 64), cases=(("cylinder_on_box", 0.02),))
    for r in rows:
        assert 0 < r["contact_count"] <= r["max_contacts_per_pair"]
        assert r["reduced_force_error"] < 1e-5
        assert r["reduced_torque_error"] < 1e-5
    # more contacts keep more of the patch's resistance to tilting
    assert abs(rows[1]["tilt_stiffness_error"]) < abs(rows[0]["tilt_stiffness_error"])


def test_an_experiment_script_writes_its_csv_and_plot(tmp_path):
    exp = _script("stiffness_ratio")
    exp.main(["--quick", "--out", str(tmp_path)])
    rows = exp._common.read_csv(tmp_path / "stiffness_ratio.csv")
    assert len(rows) == 10 and {"interface", "force_error", "lowest"} <= set(rows[0])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (tmp_path / "stiffness_ratio.png").exists()
    else:
        assert (tmp_path / "stiffness_ratio.png").stat().st_size > 10_000


# ---------------------------------------------------------------------------------------------
# sweep runner


def test_grid_is_the_product_of_scenes_and_axes():
    g = grid(("sphere_on_box", "two_spheres"), depth=[0.005, 0.01], resolution=32, reduce=[False, True])
    assert len(g) == 8
    assert g[0] == Setting(scene="sphere_on_box", depth=0.005, resolution=32, reduce=False)
    assert g[-1] == Setting(scene="two_spheres", depth=0.01, resolution=32, reduce=True)
    with pytest.raises(ValueError, match="unknown sweep axis"):
        grid(("sphere_on_box",), colour=["red"])
    with pytest.raises(ValueError, match="scene must be one of"):
        Setting(scene="teapot")


def test_measure_is_zero_when_apart():
    r = measure(Setting(scene="two_spheres", depth=-0.002, resolution=32))
    assert r["force_z"] == 0.0 and r["triangle_count"] == 0 and r["exact_force"] == 0.0


SWEEP = grid(("sphere_on_box", "two_spheres"), depth=[0.006, 0.012], resolution=32,
             reduce=[True], max_contacts_per_pair=16)


def _deterministic(rows):
    return [{k: v for k, v in r.items() if k not in NONDETERMINISTIC} for r in rows]


def _same(a, b):
    assert len(a) == len(b)
    for ra, rb in zip(_deterministic(a), _deterministic(b)):
        assert ra.keys() == rb.keys()
        for k in ra:
            if isinstance(ra[k], float) and math.isnan(ra[k]):
                assert math.isnan(rb[k]), k
            else:
                assert ra[k] == rb[k], (k, ra[k], rb[k])


def test_sweep_in_processes_equals_the_serial_run():
    serial = run_sweep(SWEEP, workers=1)
    assert [r["scene"] for r in serial] == [s.scene for s in SWEEP]
    assert all(r["force_z"] > 0 for r in serial)
    _same(serial, run_sweep(SWEEP, workers=2))


def test_sweep_on_a_local_dask_cluster_equals_the_local_run():
    distributed = pytest.importorskip("distributed", reason="the Dask path needs the 'sweep' extra")
    local = run_sweep(SWEEP, workers=1)
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster:
        on_dask = run_sweep(SWEEP, scheduler=cluster.scheduler_address)
        with distributed.Client(cluster) as client:
            with_client = run_sweep(SWEEP, scheduler=client)
    _same(local, on_dask)
    _same(local, with_client)


# ---------------------------------------------------------------------------------------------
# the GPU script (its CPU-only parts)


def _gpu_check():
    spec = importlib.util.spec_from_file_location(
        "gpu_check", os.path.join(os.path.dirname(__file__), "..", "scripts", "gpu_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_check_exits_cleanly_without_a_gpu(capsys):
    from hydro.jit import cuda  # numba.cuda, or its stand-in without the cuda extra

    if cuda.is_available():
        pytest.skip("a GPU is present: the script would run the real check")
    assert _gpu_check().main([]) == 0
    assert "no CUDA GPU" in capsys.readouterr().out


def test_gpu_check_compares_contact_tables():
    g = _gpu_check()
    scenes = {k: v for k, v in g.parity_scenes().items() if k == "two spheres"}
    assert g.parity("cpu", "cpu", scenes=scenes)
    model = scenes["two spheres"]
    from hydro.contact.config import HydroelasticConfig
    from hydro.contact.pipeline import HydroelasticPipeline

    c = HydroelasticPipeline(model, HydroelasticConfig(reduce_contacts=False)).collide(
        model.shape_world_poses(model.state())).contacts
    assert g.compare_tables(c, c) == []
    shuffled = c.select(np.random.default_rng(3).permutation(len(c)))
    assert g.compare_tables(c, shuffled) == []  # order alone is not a mismatch
    moved = c.select(np.arange(len(c)))
    moved.force = moved.force.copy()
    moved.force[5] *= 1.01
    assert any("force" in p for p in g.compare_tables(c, moved))
    assert g.compare_tables(c, c.select(np.arange(len(c) - 1))) == [f"row counts differ: {len(c)} vs {len(c) - 1}"]


def test_flat_box_rests_still_on_a_patch_and_rocks_on_a_single_point():
    pytest.importorskip("hydro.sim.simulation")
    exp = _script("flat_stability")
    rows = exp.run_case("hydroelastic", "resting", duration=0.25, resolution=32)
    rows += exp.run_case("single point", "resting", duration=0.25, resolution=32)
    s = exp.summarize(rows)
    patch, point = s[("resting", "hydroelastic")], s[("resting", "single point")]
    weight = 9.81 * 0.5
    # the patch's pressure is centred: no tipping torque, no tilt, no jumps
    assert patch["torque_rms"] < 1e-3 * weight * exp.SIZE
    assert patch["tilt_max_mrad"] < 0.01 and patch["point_jumps"] == 0
    # the single deepest point jumps between corners: torque of the order of weight × half-width
    assert point["point_jumps"] >= 5
    assert point["torque_rms"] > 0.2 * weight * exp.SIZE / 2
    assert point["tilt_max_mrad"] > 0.05



def test_flat_box_rests_still_on_the_default_paths_clipped_face():
    pytest.importorskip("hydro.sim.simulation")
    exp = _script("flat_stability")
    rows = exp.run_case("point contacts", "resting", duration=0.5, resolution=32)
    s = exp.summarize(rows)[("resting", "point contacts")]
    weight = 9.81 * 0.5
    # four corners at their true depths: no tipping torque, no tilt, no jumps, rests still
    assert all(r["contact_count"] == 4 for r in rows[len(rows) // 2:])
    assert s["torque_rms"] < 1e-3 * weight * exp.SIZE and s["tilt_max_mrad"] < 0.01 and s["point_jumps"] == 0
    assert s["height_std_um"] < 0.01


def test_flat_patch_on_a_brick_boundary_matches_the_closed_form():
    # Regression: blocks read B's brick once; points on its far faces must take the next
    # brick's value (one value per grid point), else a patch lying on a brick boundary was
    # meshed twice over with a sawtooth between the layers (+59 % force).
    # cube 0.1 at max_resolution 48: voxel 2.5 mm, grid origin 4 voxels below the cube; at
    # d = 20 mm the patch (z = −d/2) lies 8 voxels up: exactly on the first brick boundary
    r = measure(Setting(scene="cube_on_box", resolution=48, depth=0.02))
    assert abs(r["force_error"]) < 0.01 and abs(r["area_error"]) < 0.01
