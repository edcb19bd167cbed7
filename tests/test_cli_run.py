"""``hydro run`` and ``hydro example contact-sensor``, run as users run them."""

import re

import numpy as np

from cli_util import assert_one_line_error, hydro


def test_run_writes_trajectories_sensor_data_and_a_plot(tmp_path):
    proc = hydro("run", "scenes/cube_on_box.usda", "--steps", "12", "--dt", "0.02", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    # tqdm's bar: steps done, elapsed<remaining, rate (step/s, or s/step while the kernels compile)
    assert re.search(r"simulating: 100%.*12/12 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+(step/s|s/step)", proc.stderr), proc.stderr
    traj = np.load(tmp_path / "trajectories.npz")
    assert traj["body_q"].shape == (12, 1, 7) and traj["body_qd"].shape == (12, 1, 6)
    np.testing.assert_allclose(traj["time"], 0.02 * np.arange(1, 13), rtol=1e-12)
    assert list(traj["body_path"]) == ["/World/Cube"]
    sensors = np.load(tmp_path / "sensors.npz")
    assert list(sensors["sensor_names"]) == ["Cube"] and sensors["net_forces_w"].shape == (12, 1, 1, 3)
    # the cube is authored near its resting depth: the sensor reads about its weight
    assert abs(sensors["net_forces_w"][-1, 0, 0, 2] - 9.81) < 0.5
    np.testing.assert_array_equal(sensors["net_forces_w"],
                                  sensors["net_normal_forces_w"] + sensors["net_friction_forces_w"])
    from matplotlib.image import imread

    img = np.round(imread(tmp_path / "forces.png") * 255).astype(int)  # the matplotlib figure, 9 x 5 in at 100 dpi
    assert img.shape[:2] == (500, 900)
    assert np.sum(np.all(img[..., :3] == (31, 119, 180), axis=-1)) > 100  # the first series' line (tab:blue)
    assert "sensor       Cube" in proc.stdout


def test_run_replicates_envs_and_errors_are_one_line(tmp_path):
    proc = hydro("run", "scenes/boxes_envs.usda", "--steps", "2", "--num-envs", "2", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    sensors = np.load(tmp_path / "sensors.npz")
    assert sensors["net_forces_w"].shape == (2, 2, 1, 3)
    assert sensors["body_paths"].tolist() == [["/World/envs/env_0/Box"], ["/World/envs/env_1/Box"]]
    assert_one_line_error(hydro("run", "scenes/cube_on_box.usda", "--steps", "0"), "--steps")


def test_the_contact_sensor_example_prints_what_it_reads():
    proc = hydro("example", "contact-sensor", "--steps", "20")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "grip L / R (N)" in out and "per-contact sensor:" in out and "LeftFinger" in out
    # the box is held by friction alone: the fingers' friction carries its weight
    line = next(ln for ln in out.splitlines() if ln.startswith("box weight"))
    weight, carried = (float(v) for v in re.findall(r"(\d+\.\d+) N", line))
    assert abs(carried - weight) < 0.01 * weight
