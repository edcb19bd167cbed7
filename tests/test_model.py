"""The model and its builder: mass properties against closed forms, envs, SDF sharing."""

import math
import os
import re
import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

from hydro.geometry import Box, Cylinder, Heightfield, Mesh, Plane, Sphere
from hydro.scene.mass import DEFAULT_DENSITY
from hydro.scene.model import IDENTITY, Model, ModelBuilder, State
from hydro.scene.replicate import env_grid
from hydro.sdf import SDFSettings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quat_z(angle):
    return [0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)]


def one_body(geometry, *, local_pose=IDENTITY, body_kw=None, shape_kw=None):
    b = ModelBuilder()
    i = b.add_body("/World/Body", **(body_kw or {}))
    b.add_shape("/World/Body/Shape", geometry, body=i, local_pose=local_pose, **(shape_kw or {}))
    return b.finalize(build_sdfs=False)


# ---------------------------------------------------------------------------------------------
# Mass properties against closed forms


def test_box_mass_and_inertia_from_density():
    a, b_, c, rho = 0.2, 0.3, 0.5, 700.0
    m = one_body(Box((a, b_, c)), shape_kw={"density": rho})
    mass = rho * a * b_ * c
    assert m.body_mass[0] == pytest.approx(mass, rel=1e-12)
    expect = mass / 12.0 * np.diag([b_**2 + c**2, a**2 + c**2, a**2 + b_**2])
    np.testing.assert_allclose(m.body_inertia[0], expect, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(m.body_com[0], 0.0, atol=1e-15)
    assert m.body_inv_mass[0] == pytest.approx(1.0 / mass)
    np.testing.assert_allclose(m.body_inv_inertia[0] @ m.body_inertia[0], np.eye(3), atol=1e-12)


def test_sphere_mass_uses_the_default_density_of_water():
    r = 0.1
    m = one_body(Sphere(r))
    assert DEFAULT_DENSITY == 1000.0
    mass = 1000.0 * 4.0 / 3.0 * math.pi * r**3
    assert m.body_mass[0] == pytest.approx(mass, rel=1e-12)
    np.testing.assert_allclose(m.body_inertia[0], np.eye(3) * 0.4 * mass * r * r, rtol=1e-12)


def test_cylinder_inertia_and_body_density():
    r, h, rho = 0.05, 0.3, 2500.0
    m = one_body(Cylinder(r, h), body_kw={"density": rho})
    mass = rho * math.pi * r * r * h
    assert m.body_mass[0] == pytest.approx(mass, rel=1e-12)
    ixx = mass * (3 * r * r + h * h) / 12.0
    np.testing.assert_allclose(m.body_inertia[0], np.diag([ixx, ixx, mass * r * r / 2]), rtol=1e-12)


def test_shape_density_wins_over_body_density():
    m = one_body(Box((0.1, 0.1, 0.1)), body_kw={"density": 10.0}, shape_kw={"density": 20.0})
    assert m.body_mass[0] == pytest.approx(20.0 * 1e-3)


def test_rotated_shape_rotates_its_inertia():
    # a box rotated 90° about z swaps its x and y moments
    a, b_, c = 0.1, 0.4, 0.2
    m = one_body(Box((a, b_, c)), local_pose=[0, 0, 0] + quat_z(math.pi / 2))
    mass = 1000.0 * a * b_ * c
    expect = mass / 12.0 * np.diag([a**2 + c**2, b_**2 + c**2, a**2 + b_**2])
    np.testing.assert_allclose(m.body_inertia[0], expect, rtol=1e-9, atol=1e-15)


def test_two_shapes_combine_with_the_parallel_axis_theorem():
    # sphere (r1, rho1) at x = -d1 and sphere (r2, rho2) at x = +d2 on one body
    r1, r2, rho1, rho2, d1, d2 = 0.05, 0.03, 1000.0, 3000.0, 0.1, 0.2
    b = ModelBuilder()
    i = b.add_body("/World/Dumbbell", [1.0, 2.0, 3.0] + quat_z(0.3))
    b.add_shape("/World/Dumbbell/A", Sphere(r1), body=i, local_pose=[-d1, 0, 0, 0, 0, 0, 1], density=rho1)
    b.add_shape("/World/Dumbbell/B", Sphere(r2), body=i, local_pose=[d2, 0, 0, 0, 0, 0, 1], density=rho2)
    m = b.finalize(build_sdfs=False)
    m1 = rho1 * 4 / 3 * math.pi * r1**3
    m2 = rho2 * 4 / 3 * math.pi * r2**3
    mass = m1 + m2
    cx = (-m1 * d1 + m2 * d2) / mass
    assert m.body_mass[0] == pytest.approx(mass, rel=1e-12)
    np.testing.assert_allclose(m.body_com[0], [cx, 0, 0], atol=1e-15)
    i1, i2 = 0.4 * m1 * r1 * r1, 0.4 * m2 * r2 * r2
    ixx = i1 + i2
    iyy = i1 + m1 * (-d1 - cx) ** 2 + i2 + m2 * (d2 - cx) ** 2
    np.testing.assert_allclose(m.body_inertia[0], np.diag([ixx, iyy, iyy]), rtol=1e-12, atol=1e-16)


def test_explicit_mass_rescales_and_explicit_inertia_and_com_win():
    geom = Box((0.1, 0.2, 0.3))
    base = one_body(geom)
    scaled = one_body(geom, body_kw={"mass": 3.0})
    assert scaled.body_mass[0] == 3.0
    np.testing.assert_allclose(scaled.body_inertia[0], base.body_inertia[0] * 3.0 / base.body_mass[0], rtol=1e-12)
    given = one_body(geom, body_kw={"mass": 2.0, "inertia": [1.0, 2.0, 3.0], "com": [0.0, 0.0, 0.01]})
    np.testing.assert_allclose(given.body_inertia[0], np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(given.body_com[0], [0, 0, 0.01])
    # a given com without a given inertia carries the computed inertia to it (parallel axis)
    moved = one_body(geom, body_kw={"com": [0.0, 0.0, 0.1]})
    mass = base.body_mass[0]
    np.testing.assert_allclose(moved.body_inertia[0], base.body_inertia[0] + mass * 0.01 * np.diag([1, 1, 0]),
                               rtol=1e-12)


def test_planes_carry_no_mass_and_massless_dynamic_bodies_are_refused():
    b = ModelBuilder()
    i = b.add_body("/World/B")
    b.add_shape("/World/B/P", Plane(), body=i)
    with pytest.raises(ValueError, match="/World/B has no mass"):
        b.finalize()
    b = ModelBuilder()
    b.add_body("/World/K", kinematic=True)
    m = b.finalize()
    assert m.body_mass[0] == 0.0 and m.body_inv_mass[0] == 0.0 and m.body_kinematic[0]


def test_kinematic_bodies_have_zero_inverses():
    m = one_body(Sphere(0.1), body_kw={"kinematic": True})
    assert m.body_mass[0] > 0
    assert m.body_inv_mass[0] == 0.0
    assert np.all(m.body_inv_inertia[0] == 0.0)


# ---------------------------------------------------------------------------------------------
# Shapes: rules, poses, state


@pytest.mark.parametrize("geometry,kind", [(Plane(), "plane"), (Heightfield(), "heightfield")])
def test_hydroelastic_on_plane_or_heightfield_is_refused_naming_the_shape(geometry, kind):
    b = ModelBuilder()
    with pytest.raises(ValueError, match=rf"HYDRO.HYD.001 ERROR /World/Floor: .*{kind}.*not supported for planes, heightfields"):
        b.add_shape("/World/Floor", geometry, hydroelastic=True)
    b.add_shape("/World/Floor", geometry, hydroelastic=False)  # fine when not hydroelastic


def test_hydroelastic_on_an_open_mesh_is_refused():
    import trimesh

    tm = trimesh.creation.box((0.1, 0.1, 0.1))
    open_mesh = Mesh(np.asarray(tm.vertices), np.asarray(tm.faces)[:-1], name="lid-less box")
    b = ModelBuilder()
    with pytest.raises(ValueError, match=r"HYDRO.HYD.001 ERROR /World/Open: .*not watertight"):
        b.add_shape("/World/Open", open_mesh, hydroelastic=True)
    b.add_shape("/World/Closed", Mesh.from_trimesh(tm), hydroelastic=True)


@pytest.mark.parametrize("kw,code", [
    ({"stiffness": 0.0}, "NEWTON.COL.002"),
    ({"stiffness": float("inf")}, "NEWTON.COL.002"),
    ({"margin": -0.001}, "NEWTON.COL.002"),
    ({"gap": float("nan")}, "NEWTON.COL.002"),
])
def test_bad_shape_values_are_refused_with_their_code(kw, code):
    b = ModelBuilder()
    with pytest.raises(ValueError, match=rf"{code} ERROR /World/S:"):
        b.add_shape("/World/S", Sphere(0.1), hydroelastic=True, **kw)


def test_a_bad_stiffness_on_a_plain_shape_is_kept_but_not_a_bad_type():
    b = ModelBuilder()
    b.add_shape("/World/S", Sphere(0.1), stiffness=-1.0)  # never read: the rule only warns
    with pytest.raises(ValueError, match="stiffness must be a number"):
        b.add_shape("/World/T", Sphere(0.1), stiffness="stiff")
    assert b.finalize().shape_stiffness.tolist() == [-1.0]


def test_duplicate_paths_and_bad_body_indices_are_refused():
    b = ModelBuilder()
    b.add_body("/World/A")
    with pytest.raises(ValueError, match="used twice"):
        b.add_body("/World/A")
    with pytest.raises(ValueError, match="body must be -1"):
        b.add_shape("/World/S", Sphere(0.1), body=3)
    with pytest.raises(ValueError, match="absolute prim path"):
        b.add_body("World/B")


def test_shape_world_poses_and_state_copies():
    b = ModelBuilder()
    i = b.add_body("/World/B", [1.0, 0.0, 0.0] + quat_z(math.pi / 2), velocity=(1, 2, 3), angular_velocity=(0, 0, 4))
    b.add_shape("/World/B/S", Sphere(0.1), body=i, local_pose=[0.5, 0, 0, 0, 0, 0, 1])
    b.add_shape("/World/Static", Box((1, 1, 1)), local_pose=[0, 0, -1, 0, 0, 0, 1])
    m = b.finalize(build_sdfs=False)
    poses = m.shape_world_poses()
    # rotating (0.5, 0, 0) by 90° about z gives (0, 0.5, 0)
    np.testing.assert_allclose(poses[0], [1.0, 0.5, 0.0] + quat_z(math.pi / 2), atol=1e-15)
    np.testing.assert_allclose(poses[1], [0, 0, -1, 0, 0, 0, 1])
    s = m.state()
    assert isinstance(s, State)
    np.testing.assert_allclose(s.body_qd, [[1, 2, 3, 0, 0, 4]])
    s.body_q[0, :3] = [5, 5, 5]
    assert m.body_q0[0, 0] == 1.0  # the model is not changed through a state
    np.testing.assert_allclose(m.shape_world_poses(s)[0, :3], [5.0, 5.5, 5.0], atol=1e-15)
    np.testing.assert_allclose(m.shape_world_poses(s)[1], poses[1])


def test_find_shapes_and_bodies_use_full_matches():
    b = ModelBuilder()
    for name in ("Left", "Right", "LeftToe"):
        i = b.add_body(f"/World/{name}", kinematic=True)
        b.add_shape(f"/World/{name}/Pad", Sphere(0.1), body=i)
    m = b.finalize(build_sdfs=False)
    assert m.find_bodies("/World/Left").tolist() == [0]
    assert m.find_bodies("/World/Left.*").tolist() == [0, 2]
    assert m.find_shapes(".*/Pad").tolist() == [0, 1, 2]
    assert m.find_shapes("Pad").tolist() == []
    assert m.find_shapes(".*/Pad").dtype == np.int32


def test_model_docstring_table_lists_every_field_in_order():
    doc_fields = re.findall(r"^\s*\| ``(\w+)`` \|", Model.__doc__, flags=re.M)
    public = [f.name for f in fields(Model) if not f.name.startswith("_")]
    assert doc_fields == public
    state_doc = re.findall(r"^\s*\| ``(\w+)`` \|", State.__doc__, flags=re.M)
    assert state_doc == [f.name for f in fields(State)]


# ---------------------------------------------------------------------------------------------
# SDFs: one per distinct (geometry, settings, margin + gap)


def test_identical_shapes_share_an_sdf_and_differences_split_them():
    b = ModelBuilder()
    for k in range(3):
        i = b.add_body(f"/World/Ball{k}", [k * 1.0, 0, 0, 0, 0, 0, 1])
        b.add_shape(f"/World/Ball{k}/C", Sphere(0.05), body=i, hydroelastic=True, sdf=SDFSettings(max_resolution=16))
    i = b.add_body("/World/Other", [5.0, 0, 0, 0, 0, 0, 1])
    b.add_shape("/World/Other/Wider", Sphere(0.05), body=i, hydroelastic=True, margin=0.001,
                sdf=SDFSettings(max_resolution=16))
    b.add_shape("/World/Other/Plain", Sphere(0.05), body=i, local_pose=[0, 1, 0, 0, 0, 0, 1])  # no SDF
    b.add_shape("/World/Other/Marked", Box((0.1, 0.1, 0.1)), body=i, sdf_collision=True,
                sdf=SDFSettings(max_resolution=16))
    m = b.finalize()
    assert m.shape_sdf.tolist() == [0, 0, 0, 1, -1, 2]
    assert len(m.sdfs) == 3 and len(m.sdf_pack) == 3
    assert m.sdf_specs[1].extra_padding == pytest.approx(0.001)
    assert m.sdfs[1].padding > m.sdfs[0].padding  # margin + gap widen the box
    assert m.shape_sdf_collision.tolist() == [True, True, True, True, False, True]


def test_sdfs_can_be_built_later():
    b = ModelBuilder()
    b.add_shape("/World/S", Sphere(0.05), hydroelastic=True, sdf=SDFSettings(max_resolution=16))
    m = b.finalize(build_sdfs=False)
    assert m.shape_sdf.tolist() == [-1] and m.sdfs == [] and len(m.sdf_specs) == 1
    m.build_sdfs()
    assert m.shape_sdf.tolist() == [0] and len(m.sdfs) == 1
    assert m.sdfs[0].sample([[0.0, 0.0, 0.0]])[0] == pytest.approx(-0.05, abs=2e-3)


# ---------------------------------------------------------------------------------------------
# Environments


def test_env_grid_is_isaac_lab_style():
    # 4 envs: 2 x 2 centred on the origin, rows along -x, columns along +y
    np.testing.assert_allclose(env_grid(4, 2.0), [[1, -1, 0], [1, 1, 0], [-1, -1, 0], [-1, 1, 0]])
    # 5 envs: rows = ceil(5 / floor(sqrt 5)) = 3, cols = ceil(5 / 3) = 2
    np.testing.assert_allclose(env_grid(5, 1.0)[:, 0], [1, 1, 0, 0, -1])
    np.testing.assert_allclose(env_grid(5, 1.0)[:, 1], [-0.5, 0.5, -0.5, 0.5, -0.5])
    np.testing.assert_allclose(env_grid(1, 3.0), [[0, 0, 0]])


def _template_builder():
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((10, 10, 1)), local_pose=[0, 0, -0.5, 0, 0, 0, 1], hydroelastic=True,
                sdf=SDFSettings(max_resolution=16))
    g = b.add_body("/World/Drone", [0, 0, 5, 0, 0, 0, 1])  # a global dynamic body
    b.add_shape("/World/Drone/C", Sphere(0.1), body=g)
    i = b.add_body("/World/envs/env_0/Robot/Base", [0.1, 0.2, 0.05, 0, 0, 0, 1])
    b.add_shape("/World/envs/env_0/Robot/Base/C", Box((0.1, 0.1, 0.1)), body=i, hydroelastic=True,
                sdf=SDFSettings(max_resolution=16))
    b.add_shape("/World/envs/env_0/Wall", Box((0.1, 1, 1)), local_pose=[1, 0, 0.5, 0, 0, 0, 1])
    b.add_articulation("/World/envs/env_0/Robot")
    return b


def test_template_env_is_replicated_with_its_own_namespaces():
    m = _template_builder().finalize(num_envs=4, env_spacing=2.0)
    assert m.num_envs == 4
    assert m.body_path == ["/World/Drone"] + [f"/World/envs/env_{i}/Robot/Base" for i in range(4)]
    assert m.body_env.tolist() == [0, 0, 1, 2, 3]  # the global dynamic body belongs to env 0
    assert m.shape_path[:2] == ["/World/Ground", "/World/Drone/C"]
    assert m.shape_env.tolist() == [-1, 0, 0, 0, 1, 1, 2, 2, 3, 3]
    grid = env_grid(4, 2.0)
    np.testing.assert_allclose(m.env_origins, grid)
    for e in range(4):
        b = m.find_bodies(f"/World/envs/env_{e}/Robot/Base")[0]
        np.testing.assert_allclose(m.body_q0[b, :3], np.array([0.1, 0.2, 0.05]) + grid[e])
        wall = m.find_shapes(f"/World/envs/env_{e}/Wall")[0]
        np.testing.assert_allclose(m.shape_local_pose[wall, :3], np.array([1, 0, 0.5]) + grid[e])
        assert m.shape_body[m.find_shapes(f"/World/envs/env_{e}/Robot/Base/C")[0]] == b
    np.testing.assert_allclose(m.body_q0[0, :3], [0, 0, 5])  # global bodies stay
    assert m.articulations == {f"/World/envs/env_{e}/Robot": [e + 1] for e in range(4)}
    assert m.body_articulation.tolist() == [-1, 0, 1, 2, 3]
    assert len(m.sdfs) == 2  # ground + one box shared by the 4 envs
    assert len(set(m.body_mass[1:])) == 1


def test_single_template_env_keeps_its_authored_pose():
    m = _template_builder().finalize(num_envs=1)
    np.testing.assert_allclose(m.body_q0[1, :3], [0.1, 0.2, 0.05])
    assert m.shape_env.tolist() == [-1, 0, 0, 0]


def test_a_scene_without_env_namespace_is_replicated_whole():
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((1, 1, 1)), local_pose=[0, 0, -0.5, 0, 0, 0, 1])
    i = b.add_body("/World/Ball", [0, 0, 0.1, 0, 0, 0, 1])
    b.add_shape("/World/Ball/C", Sphere(0.1), body=i)
    b.add_shape("/Outside", Sphere(0.1))
    m = b.finalize(num_envs=2, env_spacing=3.0)
    assert m.shape_path == ["/World/envs/env_0/Ground", "/World/envs/env_0/Ball/C", "/World/envs/env_0/Outside",
                            "/World/envs/env_1/Ground", "/World/envs/env_1/Ball/C", "/World/envs/env_1/Outside"]
    assert m.shape_env.tolist() == [0, 0, 0, 1, 1, 1]  # statics belong to their copy
    np.testing.assert_allclose(m.env_origins, env_grid(2, 3.0))
    np.testing.assert_allclose(m.shape_local_pose[3, :3], np.array([0, 0, -0.5]) + env_grid(2, 3.0)[1])
    single = b.finalize()
    assert single.shape_env.tolist() == [-1, 0, -1] and single.body_env.tolist() == [0]


def test_authored_envs_are_kept_and_num_envs_must_agree():
    b = ModelBuilder()
    for e in range(3):
        i = b.add_body(f"/World/envs/env_{e}/Box", [e, 0, 0, 0, 0, 0, 1])
        b.add_shape(f"/World/envs/env_{e}/Box/C", Sphere(0.1), body=i)
        b.set_env_origin(e, [e, 0, 0])
    m = b.finalize()
    assert m.num_envs == 3 and m.body_env.tolist() == [0, 1, 2]
    np.testing.assert_allclose(m.env_origins[:, 0], [0, 1, 2])
    with pytest.raises(ValueError, match="authors 3 envs itself; num_envs must be 1 or 3"):
        b.finalize(num_envs=5)
    gap = ModelBuilder()
    gap.add_body("/World/envs/env_0/A", kinematic=True)
    gap.add_body("/World/envs/env_2/A", kinematic=True)
    with pytest.raises(ValueError, match="env_1 is missing"):
        gap.finalize()


# ---------------------------------------------------------------------------------------------
# Imports


def test_importing_the_model_does_not_import_pxr():
    code = "import sys, hydro.scene.model, hydro.scene.validate, hydro.cli; assert 'pxr' not in sys.modules, 'pxr imported'"
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_only_usd_io_imports_pxr():
    pkg = os.path.join(ROOT, "hydro")
    offenders = []
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") and name != "usd_io.py":
            src = open(os.path.join(pkg, name), encoding="utf-8").read()
            if re.search(r"^\s*(from pxr|import pxr)", src, flags=re.M):
                offenders.append(name)
    assert offenders == []


def test_long_sdf_builds_are_announced_when_the_runtime_announces_its_work(capsys):
    # issue 16: "everything long shows progress" — the command line announces a large mesh's build
    import trimesh

    import hydro.jit as jit
    from hydro.scene.model import LONG_BUILD_TRIANGLES, ModelBuilder
    from hydro.sdf import SDFSettings

    ball = trimesh.creation.icosphere(subdivisions=4, radius=0.05)  # 5120 triangles
    assert len(ball.faces) >= LONG_BUILD_TRIANGLES

    def build():
        b = ModelBuilder()
        body = b.add_body("/World/Ball", pose=(0.0, 0.0, 0.2, 1.0, 0.0, 0.0, 0.0))
        b.add_shape("/World/Ball/mesh", Mesh(ball.vertices, ball.faces, name="ball.stl"), body=body,
                    hydroelastic=True, sdf=SDFSettings(max_resolution=16))
        b.add_shape("/World/Ground", Box((1.0, 1.0, 0.1)), hydroelastic=True, sdf=SDFSettings(max_resolution=16))
        return b.finalize()

    saved = jit._runtime
    try:
        jit.configure_runtime(cache_folder=saved.cache_folder if saved else None, announce_compiles=True)
        capsys.readouterr()
        build()
        err = capsys.readouterr().err
        assert "hydro: building SDF 1/2: mesh ball.stl at resolution 16" in err
        assert "box" not in err  # a small primitive's build is not announced
        jit.configure_runtime(cache_folder=saved.cache_folder if saved else None, announce_compiles=False)
        build()
        assert "building SDF" not in capsys.readouterr().err  # a library user sees nothing
    finally:
        jit._runtime = saved
