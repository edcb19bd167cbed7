"""USD import and export against hand-written stages and hand-computed values."""

import importlib.util
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("pxr")

from hydro.geometry import Box, Capsule, Cone, ConvexMesh, Cylinder, Ellipsoid, Mesh, Plane, Sphere
from hydro.scene.material import ShapeMaterial
from hydro.scene.model import ModelBuilder
from hydro.scene.replicate import env_grid
from hydro.sdf import SDFSettings
from hydro.transforms import quat_to_matrix
from hydro.errors import SceneError
from hydro.scene.usd_io import SceneWarning, load_usd, save_usd, validate_usd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENES = os.path.join(ROOT, "scenes")

HEADER = """#usda 1.0
(
    defaultPrim = "World"
    metersPerUnit = {mpu}
    upAxis = "{up}"
)
"""


def write(tmp_path, body, *, mpu=1, up="Z", name="scene.usda"):
    path = tmp_path / name
    path.write_text(HEADER.format(mpu=mpu, up=up) + body)
    return str(path)


def rot(pose):
    return quat_to_matrix(np.asarray(pose)[3:])


# ---------------------------------------------------------------------------------------------
# Defaults


def test_defaults_when_attributes_are_absent(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Sphere "Plain" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.1
    }
    def Sphere "Marked" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double radius = 0.1
        double3 xformOp:translate = (1, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
}
""")
    m = load_usd(path)
    assert m.shape_path == ["/World/Plain", "/World/Marked"]
    assert m.shape_hydroelastic.tolist() == [False, False]
    assert m.shape_stiffness.tolist() == [1e10, 1e10]
    assert m.shape_margin.tolist() == [0.0, 0.0] and m.shape_gap.tolist() == [0.0, 0.0]
    for s in m.shape_sdf_settings:
        assert s == SDFSettings(max_resolution=64, target_voxel_size=None, narrow_band_inner=-0.1,
                                narrow_band_outer=0.1, padding=None, texture_format="uint16")
    np.testing.assert_allclose(m.shape_friction, 0.5)
    assert m.shape_body.tolist() == [-1, -1] and m.shape_env.tolist() == [-1, -1]
    # NewtonSDFCollisionAPI alone asks for an SDF; a plain collider gets none
    assert m.shape_sdf_collision.tolist() == [False, True]
    assert m.shape_sdf.tolist() == [-1, 0]


def test_every_newton_attribute_is_read(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Cube "A" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double size = 0.5
        bool newton:hydroelasticEnabled = 1
        float newton:hydroelasticStiffness = 3e6
        int newton:sdfMaxResolution = 32
        float newton:sdfTargetVoxelSize = 0.25
        float newton:sdfNarrowBandInner = -0.05
        float newton:sdfNarrowBandOuter = 0.125
        float newton:sdfPadding = 0.5
        token newton:sdfTextureFormat = "float32"
        float newton:contactMargin = 0.25
        float newton:contactGap = 0.5
    }
    def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
    {
        def Cube "B" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            double size = 0.5
            bool newton:hydroelasticEnabled = 1
        }
    }
}
""", name="attrs.usda")
    m = load_usd(path, build_sdfs=False)
    assert m.shape_hydroelastic.tolist() == [True, True]
    assert m.shape_stiffness[0] == 3e6
    assert m.shape_sdf_settings[0] == SDFSettings(max_resolution=32, target_voxel_size=0.25, narrow_band_inner=-0.05,
                                                  narrow_band_outer=0.125, padding=0.5, texture_format="float32")
    assert m.shape_margin[0] == 0.25 and m.shape_gap[0] == 0.5
    assert m.sdf_specs[0].extra_padding == 0.75  # margin + gap pad the SDF


# ---------------------------------------------------------------------------------------------
# Transforms, units, axes


def test_parent_translate_rotate_and_child_scale(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Parent"
    {
        double3 xformOp:translate = (1, 2, 3)
        float xformOp:rotateZ = 90
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateZ"]

        def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
        {
            double3 xformOp:translate = (0.5, 0, 0)
            uniform token[] xformOpOrder = ["xformOp:translate"]

            def Cube "Box" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double size = 0.2
                double3 xformOp:translate = (0, 0.1, 0)
                float3 xformOp:scale = (1, 2, 3)
                uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]
            }
            def Sphere "Egg" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double radius = 0.1
                float3 xformOp:scale = (1, 1, 2)
                uniform token[] xformOpOrder = ["xformOp:scale"]
            }
        }
    }
}
""")
    m = load_usd(path)
    rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])  # 90° about z
    # body: parent translation + Rz (0.5, 0, 0) = (1, 2.5, 3), rotated by Rz
    np.testing.assert_allclose(m.body_q0[0, :3], [1.0, 2.5, 3.0], atol=1e-12)
    np.testing.assert_allclose(rot(m.body_q0[0]), rz, atol=1e-12)
    # the box: its scale goes into its size, its translation stays in the body frame
    np.testing.assert_allclose(m.shape_geometry[0].size, [0.2, 0.4, 0.6], rtol=1e-15)
    np.testing.assert_allclose(m.shape_local_pose[0], [0, 0.1, 0, 0, 0, 0, 1], atol=1e-12)
    world = m.shape_world_poses()
    np.testing.assert_allclose(world[0, :3], [1.0 - 0.1, 2.5, 3.0], atol=1e-12)
    # a sphere with a non-uniform scale is an ellipsoid
    assert m.shape_geometry[1] == Ellipsoid((0.1, 0.1, 0.2))


def test_axes_become_local_rotations(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Capsule "CapX" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.05
        double height = 0.2
        uniform token axis = "X"
    }
    def Cylinder "CylY" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.05
        double height = 0.2
        uniform token axis = "Y"
        float3 xformOp:scale = (2, 3, 2)
        uniform token[] xformOpOrder = ["xformOp:scale"]
    }
    def Cone "ConeZ" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.05
        double height = 0.2
    }
}
""")
    m = load_usd(path)
    assert m.shape_geometry[0] == Capsule(0.05, 0.2)
    assert isinstance(m.shape_geometry[1], Cylinder)
    assert (m.shape_geometry[1].radius, m.shape_geometry[1].height) == pytest.approx((0.1, 0.6), rel=1e-15)
    assert m.shape_geometry[2] == Cone(0.05, 0.2)
    # the canonical +Z axis is mapped onto the prim's axis
    np.testing.assert_allclose(rot(m.shape_local_pose[0]) @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rot(m.shape_local_pose[1]) @ [0, 0, 1], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(m.shape_local_pose[2], [0, 0, 0, 0, 0, 0, 1], atol=1e-12)


def test_y_up_stage_is_turned_z_up(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
    {
        vector3f physics:velocity = (0, -1, 0)
        double3 xformOp:translate = (1, 2, 3)
        uniform token[] xformOpOrder = ["xformOp:translate"]

        def Capsule "Standing" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double radius = 0.05
            double height = 0.2
            uniform token axis = "Y"
        }
    }
}
""", up="Y")
    m = load_usd(path)
    # (x, y, z) in Y-up is (x, -z, y) in Z-up
    np.testing.assert_allclose(m.body_q0[0, :3], [1, -3, 2], atol=1e-12)
    np.testing.assert_allclose(m.body_qd0[0, :3], [0, 0, -1], atol=1e-7)  # falling stays falling
    # a capsule standing along Y-up stands along Z-up
    world = m.shape_world_poses()
    np.testing.assert_allclose(rot(world[0]) @ [0, 0, 1], [0, 0, 1], atol=1e-12)


def test_centimetre_stage_is_converted_to_metres(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        float physics:density = 0.001
        vector3f physics:velocity = (100, 0, 0)
        vector3f physics:angularVelocity = (0, 0, 180)
        double3 xformOp:translate = (0, 0, 50)
        uniform token[] xformOpOrder = ["xformOp:translate"]

        def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double radius = 10
        }
    }
}
""", mpu=0.01)
    m = load_usd(path)
    assert isinstance(m.shape_geometry[0], Sphere) and m.shape_geometry[0].radius == pytest.approx(0.1, rel=1e-15)
    np.testing.assert_allclose(m.body_q0[0, :3], [0, 0, 0.5], atol=1e-12)
    # 0.001 kg/cm^3 is 1000 kg/m^3
    assert m.body_mass[0] == pytest.approx(1000 * 4 / 3 * math.pi * 0.1**3, rel=1e-6)
    np.testing.assert_allclose(m.body_qd0[0], [1, 0, 0, 0, 0, math.pi], rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Bodies, mass, friction


def test_body_mass_api_and_newton_inertia(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Given" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        float physics:mass = 2
        point3f physics:centerOfMass = (0, 0, 0.25)
        float3 physics:diagonalInertia = (1, 2, 3)
        quatf physics:principalAxes = (0.70710677, 0.70710677, 0, 0)
        bool physics:kinematicEnabled = 1
        def Cube "C" (prepend apiSchemas = ["PhysicsCollisionAPI"]) {
            double size = 0.1
        }
    }
    def Xform "Override" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "NewtonMassAPI"])
    {
        float physics:mass = 2
        float3 physics:diagonalInertia = (1, 2, 3)
        double[] newton:inertia = [0.02, 0.02, 0.03, 0.001, 0.002, 0.003]
        def Cube "C" (prepend apiSchemas = ["PhysicsCollisionAPI"]) {
            double size = 0.1
        }
    }
    def Xform "FromShapes" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
    {
        def Cube "Heavy" (prepend apiSchemas = ["PhysicsCollisionAPI", "PhysicsMassAPI"])
        {
            double size = 0.1
            float physics:mass = 5
        }
        def Cube "Dense" (prepend apiSchemas = ["PhysicsCollisionAPI", "PhysicsMassAPI"])
        {
            double size = 0.1
            float physics:density = 2000
            double3 xformOp:translate = (0.5, 0, 0)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
}
""")
    m = load_usd(path)
    assert m.body_mass[0] == 2.0 and m.body_kinematic[0]
    np.testing.assert_allclose(m.body_com[0], [0, 0, 0.25])
    # principal axes (USD writes quaternions w, x, y, z): 90° about x swaps the y and z moments
    np.testing.assert_allclose(m.body_inertia[0], np.diag([1.0, 3.0, 2.0]), atol=1e-6)
    # (a tensor a body can have: Ixx = 0.01 broke the triangle inequality, refused since issue 27)
    np.testing.assert_allclose(m.body_inertia[1], [[0.02, 0.001, 0.002], [0.001, 0.02, 0.003], [0.002, 0.003, 0.03]])
    # a collider's mass gives its density: 5 kg + 2000 kg/m^3 * 1e-3 m^3 = 7 kg
    assert m.body_mass[2] == pytest.approx(7.0)
    np.testing.assert_allclose(m.body_com[2], [2.0 * 0.5 / 7.0, 0, 0], atol=1e-9)


def test_velocities_are_in_the_parent_space_and_degrees(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Turned"
    {
        float xformOp:rotateZ = 90
        uniform token[] xformOpOrder = ["xformOp:rotateZ"]
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
        {
            double radius = 0.1
            vector3f physics:velocity = (1, 0, 0)
            vector3f physics:angularVelocity = (90, 0, 0)
        }
    }
}
""")
    m = load_usd(path)
    # a prim that is body and collider at once: the shape sits at the body frame
    np.testing.assert_allclose(m.shape_local_pose[0], [0, 0, 0, 0, 0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(m.body_qd0[0], [0, 1, 0, 0, math.pi / 2, 0], atol=1e-7)


def test_friction_from_a_bound_physics_material(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Material "Rubber" (prepend apiSchemas = ["PhysicsMaterialAPI"])
    {
        float physics:staticFriction = 0.9
        float physics:dynamicFriction = 0.7
        float physics:density = 1500
    }
    def Material "Ice" (prepend apiSchemas = ["PhysicsMaterialAPI"])
    {
        float physics:staticFriction = 0.05
        float physics:dynamicFriction = 0.02
    }
    def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
    {
        def Cube "Physics" (prepend apiSchemas = ["PhysicsCollisionAPI", "MaterialBindingAPI"])
        {
            double size = 0.1
            rel material:binding:physics = </World/Rubber>
            rel material:binding = </World/Ice>
        }
        def Cube "AllPurpose" (prepend apiSchemas = ["PhysicsCollisionAPI", "MaterialBindingAPI"])
        {
            double size = 0.1
            rel material:binding = </World/Ice>
        }
    }
    def Xform "Group" (prepend apiSchemas = ["MaterialBindingAPI"])
    {
        rel material:binding:physics = </World/Rubber>
        def Cube "Inherited" (prepend apiSchemas = ["PhysicsCollisionAPI"]) {
            double size = 0.1
        }
    }
}
""")
    m = load_usd(path)
    np.testing.assert_allclose(m.shape_friction, [[0.9, 0.7], [0.05, 0.02], [0.9, 0.7]], rtol=1e-6)
    # the material's density counts for mass: 1500 * 1e-3 + 1000 (default) * 1e-3
    assert m.body_mass[0] == pytest.approx(2.5e-3 * 1000, rel=1e-6)


def test_mesh_polygons_are_triangulated_and_scale_is_baked(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Mesh "Cube" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        bool newton:hydroelasticEnabled = 1
        int[] faceVertexCounts = [4, 4, 4, 4, 4, 4]
        int[] faceVertexIndices = [0, 3, 2, 1, 4, 5, 6, 7, 0, 1, 5, 4, 1, 2, 6, 5, 2, 3, 7, 6, 3, 0, 4, 7]
        point3f[] points = [(-0.5, -0.5, -0.5), (0.5, -0.5, -0.5), (0.5, 0.5, -0.5), (-0.5, 0.5, -0.5),
                            (-0.5, -0.5, 0.5), (0.5, -0.5, 0.5), (0.5, 0.5, 0.5), (-0.5, 0.5, 0.5)]
        double3 xformOp:translate = (0, 0, 1)
        float3 xformOp:scale = (0.1, 0.2, 0.3)
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]
    }
    def Cube "Other" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        bool newton:hydroelasticEnabled = 1
        double size = 0.1
        double3 xformOp:translate = (0, 0, 1.2)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
    {
        def Cube "Dynamic" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            bool newton:hydroelasticEnabled = 1
            double size = 0.1
        }
    }
}
""")
    m = load_usd(path, build_sdfs=False)
    mesh = m.shape_geometry[0]
    assert isinstance(mesh, Mesh) and mesh.faces.shape == (12, 3)
    mesh.check_watertight()
    assert mesh.volume() == pytest.approx(0.1 * 0.2 * 0.3, rel=1e-6)
    np.testing.assert_allclose(mesh.vertices.max(axis=0), [0.05, 0.1, 0.15], rtol=1e-6)
    np.testing.assert_allclose(m.shape_local_pose[0], [0, 0, 1, 0, 0, 0, 1], atol=1e-12)


def test_articulation_roots_collect_the_bodies_under_them(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Arm" (prepend apiSchemas = ["PhysicsArticulationRootAPI"])
    {
        def Sphere "Link1" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]) {
            double radius = 0.1
        }
        def Xform "Sub"
        {
            def Sphere "Link2" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]) {
            double radius = 0.1
        }
        }
    }
    def Sphere "Free" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]) {
            double radius = 0.1
        }
}
""")
    m = load_usd(path)
    assert m.articulations == {"/World/Arm": [0, 1]}
    assert m.body_articulation.tolist() == [0, 0, -1]


# ---------------------------------------------------------------------------------------------
# Errors and warnings


def test_a_scene_with_errors_is_refused_with_the_finding_lines(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Plane "Floor" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        bool newton:hydroelasticEnabled = 1
    }
    def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double radius = 0.1
        bool newton:hydroelasticEnabled = 1
        int newton:sdfMaxResolution = 60
        float newton:contactMargin = -0.01
    }
}
""")
    findings = validate_usd(path)
    lines = [str(f) for f in findings]
    with pytest.raises(SceneError) as exc:
        load_usd(path)
    assert isinstance(exc.value, ValueError)  # code written for earlier versions still catches it
    msg = str(exc.value)
    for line in lines:
        if " ERROR " in line:
            assert line in msg
    assert "HYDRO.HYD.001 ERROR /World/Floor:" in msg
    assert "NEWTON.COL.002 ERROR /World/Ball: newton:sdfMaxResolution must be a positive multiple of 8, got 60" in msg
    assert "NEWTON.COL.002 ERROR /World/Ball: newton:contactMargin must be a finite number >= 0 (m), got -0.01" in msg
    # the error carries the findings themselves, errors first
    assert [f.severity for f in exc.value.findings] == sorted(f.severity for f in findings)
    assert set(exc.value.findings) == set(findings)


def test_warnings_are_issued_and_the_scene_still_loads(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Sphere "Lonely" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double radius = 0.1
        bool newton:hydroelasticEnabled = 1
    }
    def Cube "Floor" (prepend apiSchemas = ["PhysicsCollisionAPI"]) {
            double size = 1
        }
}
""")
    with pytest.warns(SceneWarning, match="HYDRO.HYD.003 WARNING /World/Lonely:"):
        m = load_usd(path, build_sdfs=False)
    assert m.shape_count == 2


def test_unsupported_and_sheared_colliders_are_findings(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Sheared"
    {
        matrix4d xformOp:transform = ((1, 0, 0, 0), (0.5, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))
        uniform token[] xformOpOrder = ["xformOp:transform"]
        def Cube "Box" (prepend apiSchemas = ["PhysicsCollisionAPI"]) {
            double size = 1
        }
    }
    def Points "Cloud" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
    }
    def Capsule "Squashed" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        float3 xformOp:scale = (1, 1, 2)
        uniform token[] xformOpOrder = ["xformOp:scale"]
    }
}
""")
    codes = [(f.code, f.prim_path) for f in validate_usd(path)]
    assert codes == [("HYDRO.GEO.001", "/World/Sheared/Box"), ("HYDRO.GEO.001", "/World/Cloud"),
                     ("HYDRO.GEO.001", "/World/Squashed")]
    with pytest.raises(ValueError, match="sheared"):
        load_usd(path)


def test_unreadable_files_are_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_usd(str(tmp_path / "missing.usda"))
    bad = tmp_path / "bad.usda"
    bad.write_text("#usda 1.0\ndef Xform \"World\" {\n")
    with pytest.raises(ValueError, match="cannot be read as USD"):
        load_usd(str(bad))


# ---------------------------------------------------------------------------------------------
# Round trips


def _rich_model(num_envs=1):
    import trimesh

    rng = np.random.default_rng(7)
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((2.0, 2.0, 0.2)), local_pose=[0, 0, -0.1, 0, 0, 0, 1], hydroelastic=True,
                stiffness=3e7, sdf=SDFSettings(max_resolution=16), static_friction=0.9, dynamic_friction=0.8)
    b.add_shape("/World/Floor", Plane(), local_pose=[0, 0, -1, 0, 0, 0, 1], margin=0.5)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    i = b.add_body("/World/envs/env_0/Robot/Base", np.concatenate([[0.1, 0.2, 0.3], q]), velocity=rng.normal(size=3),
                   angular_velocity=rng.normal(size=3), density=1200.0)
    b.add_shape("/World/envs/env_0/Robot/Base/Egg", Ellipsoid((0.05, 0.04, 0.03)), body=i, hydroelastic=True,
                stiffness=5e6, margin=0.25, gap=0.5, local_pose=[0, 0, 0.1, 0, 0, 0, 1],
                sdf=SDFSettings(max_resolution=24, target_voxel_size=0.25, narrow_band_inner=-0.125,
                                narrow_band_outer=0.0625, padding=0.5, texture_format="float32"))
    b.add_shape("/World/envs/env_0/Robot/Base/Stick", Capsule(0.02, 0.1), body=i,
                local_pose=[0.1, 0, 0, 0, math.sqrt(0.5), 0, math.sqrt(0.5)], static_friction=0.25,
                dynamic_friction=0.125)
    j = b.add_body("/World/envs/env_0/Robot/Finger", [0.3, 0, 0.3, 0, 0, 0, 1], kinematic=True, mass=0.5,
                   inertia=[1e-3, 2e-3, 3e-3])
    b.add_collision_group("Robot", filtered_groups=("Props",))
    b.add_collision_group("Props")
    b.add_shape("/World/envs/env_0/Robot/Finger/Pad", Box((0.01, 0.02, 0.03)), body=j, sdf_collision=True,
                sdf=SDFSettings(max_resolution=16), collision_groups=("Robot",))
    b.add_shape("/World/envs/env_0/Robot/Finger/Cone", Cone(0.02, 0.04), body=j, collision_groups=("Robot",))
    b.add_shape("/World/envs/env_0/Robot/Finger/Cyl", Cylinder(0.01, 0.05), body=j,
                local_pose=[0, 0, 0.05, 0, 0, 0, 1], collision_enabled=False)
    k = b.add_body("/World/envs/env_0/Ring", [0, 0.5, 0.2, 0, 0, 0, 1], com=[0.0, 0.0, 0.01])
    b.add_shape("/World/envs/env_0/Ring/Mesh", Mesh.from_trimesh(trimesh.creation.torus(0.1, 0.03, 16, 8)), body=k,
                hydroelastic=True, stiffness=2e6, sdf=SDFSettings(max_resolution=16), collision_groups=("Props",))
    rubber = ShapeMaterial(static_friction=1.1, dynamic_friction=0.9, restitution=0.25, torsional_friction=0.02,
                           rolling_friction=0.001, contact_stiffness=2e4, contact_damping=30.0, friction_gain=5.0,
                           adhesion=0.001)
    b.add_shape("/World/envs/env_0/Ring/Hull", ConvexMesh.from_points(rng.normal(size=(40, 3)) * 0.05),
                body=k, local_pose=[0, 0, 0.3, 0, 0, 0, 1], material=rubber)
    b.add_shape("/World/envs/env_0/Ring/Grip", Sphere(0.02), body=k, local_pose=[0, 0, -0.3, 0, 0, 0, 1],
                material=ShapeMaterial(contact_stiffness=5e3))  # only one Newton value, friction as default
    b.add_filtered_pair("/World/envs/env_0/Robot/Base/Stick", "/World/envs/env_0/Ring")
    b.add_articulation("/World/envs/env_0/Robot")
    return b.finalize(num_envs=num_envs, env_spacing=1.5, build_sdfs=False)


FLOAT32_FIELDS = {"body_qd0", "body_mass", "body_inv_mass", "body_com", "shape_stiffness", "shape_margin",
                  "shape_gap", "shape_friction", "shape_material", "body_inv_inertia"}


def assert_models_equal(a, b, *, rtol):
    from dataclasses import fields

    from hydro.scene.model import Model

    for f in fields(Model):
        name = f.name
        if name in ("sdfs", "sdf_pack", "_shape_sdf_spec"):
            continue
        x, y = getattr(a, name), getattr(b, name)
        if name == "shape_geometry":
            assert [type(g) for g in x] == [type(g) for g in y]
            for g, h in zip(x, y):
                if isinstance(g, Mesh):
                    np.testing.assert_allclose(g.vertices, h.vertices, rtol=rtol, atol=1e-7)
                    np.testing.assert_array_equal(g.faces, h.faces)
                else:  # sizes pass through the composed world matrix: equal up to rounding
                    assert g.key()[0] == h.key()[0]
                    np.testing.assert_allclose(h.key()[1:], g.key()[1:], rtol=max(rtol, 1e-14), err_msg=name)
        elif name == "shape_sdf_settings":
            for s, t in zip(x, y):
                for k in ("max_resolution", "texture_format", "coarse_tolerance"):
                    assert getattr(s, k) == getattr(t, k)
                for k in ("target_voxel_size", "narrow_band_inner", "narrow_band_outer", "padding"):
                    u, v = getattr(s, k), getattr(t, k)
                    assert (u is None) == (v is None) and (u is None or v == pytest.approx(u, rel=rtol))
        elif name == "sdf_specs":
            assert len(x) == len(y)
        elif isinstance(x, (list, dict, int)):
            assert x == y, name
        else:
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape, name
            tol = rtol if name in FLOAT32_FIELDS else 1e-12
            np.testing.assert_allclose(y, x, rtol=tol, atol=tol * 1e-3, err_msg=name)


def load_quietly(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_usd(path, **kw)


def test_round_trip_keeps_every_value(tmp_path):
    model = _rich_model()
    assert not model.collision_group_mask.all() and len(model.filtered_shape_pairs) == 3
    save_usd(model, str(tmp_path / "a.usda"))
    back = load_quietly(str(tmp_path / "a.usda"), build_sdfs=False)  # hydro's own files raise no finding
    # values the UsdPhysics schema stores as 32-bit floats keep float32 precision
    assert_models_equal(model, back, rtol=2e-7)
    # ... and a second trip changes nothing at all
    save_usd(back, str(tmp_path / "b.usda"))
    again = load_quietly(str(tmp_path / "b.usda"), build_sdfs=False)
    assert_models_equal(back, again, rtol=0.0)
    assert (tmp_path / "a.usda").read_text().count("custom ") == 0  # every attribute is the schema's


def test_values_a_shape_never_uses_are_not_written(tmp_path):
    b = ModelBuilder()
    b.add_shape("/World/Cone", Cone(0.02, 0.04), stiffness=123.0, sdf=SDFSettings(max_resolution=16))
    save_usd(b.finalize(build_sdfs=False), str(tmp_path / "c.usda"))
    back = load_quietly(str(tmp_path / "c.usda"), build_sdfs=False)
    assert back.shape_stiffness[0] == 1e10 and back.shape_sdf_settings[0] == SDFSettings()


def test_round_trip_of_replicated_envs(tmp_path):
    model = _rich_model(num_envs=3)
    save_usd(model, str(tmp_path / "envs.usda"))
    back = load_quietly(str(tmp_path / "envs.usda"), build_sdfs=False)  # the envs are authored now
    assert len(back.filtered_shape_pairs) == 9
    assert back.num_envs == 3
    assert_models_equal(model, back, rtol=2e-7)
    np.testing.assert_allclose(back.env_origins, env_grid(3, 1.5))


# ---------------------------------------------------------------------------------------------
# The shipped scenes


SCENE_FILES = sorted(f for f in os.listdir(SCENES) if f.endswith(".usda"))


def test_the_scene_library_is_complete():
    assert SCENE_FILES == sorted(["sphere_on_box.usda", "cube_on_box.usda", "two_spheres.usda", "capsule_on_box.usda",
                                  "torus_on_box.usda", "box_stack.usda", "pinch.usda", "boxes_envs.usda"]
                                 + sorted(PLANE_SCENES) + sorted(HEIGHTFIELD_SCENES))


#: Scenes on a ground plane (the default contact path: not every shape is hydroelastic).
PLANE_SCENES = {"primitives_on_plane.usda", "pinch_over_plane.usda", "mixed_pile.usda"}
#: Scenes on a heightfield (point contacts only).
HEIGHTFIELD_SCENES = {"box_on_heightfield.usda"}


@pytest.mark.parametrize("name", SCENE_FILES)
def test_every_shipped_scene_validates_clean_and_loads(name):
    path = os.path.join(SCENES, name)
    assert validate_usd(path) == []
    text = open(path).read()
    assert text.startswith("#usda 1.0\n# ")  # documented at its top
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = load_usd(path)
    hyd = m.shape_hydroelastic
    if name in PLANE_SCENES:
        assert any(g.kind_name == "plane" for g in m.shape_geometry)
    elif name in HEIGHTFIELD_SCENES:
        assert any(g.kind_name == "heightfield" for g in m.shape_geometry)
    else:
        assert hyd.all()
    assert (m.shape_sdf[hyd] >= 0).all()
    dynamic = ~m.body_kinematic
    assert dynamic.any()
    on_dynamic = (m.shape_body >= 0) & dynamic[np.maximum(m.shape_body, 0)] & hyd
    assert np.all(m.shape_gap[on_dynamic] > 0)
    # the header names each dynamic body and the stiffness it uses
    for b in np.flatnonzero(dynamic):
        assert m.body_path[b] in text
    for k in set(m.shape_stiffness[hyd].tolist()):
        assert f"{k:.3g}" in text
    assert np.all(m.body_mass[dynamic] > 0)


def test_scenes_match_their_generator():
    spec = importlib.util.spec_from_file_location("make_scenes", os.path.join(ROOT, "scripts", "make_scenes.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    texts = mod.scene_texts()
    assert sorted(texts) == SCENE_FILES
    for name, content in texts.items():
        assert open(os.path.join(SCENES, name)).read() == content, f"{name} is stale: run python scripts/make_scenes.py"


def test_scene_contents():
    m = load_usd(os.path.join(SCENES, "sphere_on_box.usda"), build_sdfs=False)
    np.testing.assert_allclose(m.shape_world_poses()[m.find_shapes(".*/Sphere/Collider")[0], :3], [0, 0, 0.098])
    assert m.body_mass[0] == pytest.approx(1000 * 4 / 3 * math.pi * 0.1**3)
    p = load_usd(os.path.join(SCENES, "pinch.usda"), build_sdfs=False)
    fingers = p.find_bodies(".*Finger")
    assert p.body_kinematic[fingers].all() and not p.body_kinematic[p.find_bodies(".*/Box")].any()
    assert p.articulations == {"/World/envs/env_0/Gripper": fingers.tolist()}
    np.testing.assert_allclose(p.shape_friction, 0.8, rtol=1e-6)
    assert p.shape_geometry[p.find_shapes(".*LeftFinger/Pad")[0]] == Box((0.02, 0.03, 0.03))
    c = load_usd(os.path.join(SCENES, "capsule_on_box.usda"), build_sdfs=False)
    cap = c.find_shapes(".*/Capsule/Collider")[0]
    np.testing.assert_allclose(rot(c.shape_world_poses()[cap]) @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    t = load_usd(os.path.join(SCENES, "torus_on_box.usda"), build_sdfs=False)
    torus = t.shape_geometry[1]
    torus.check_watertight()
    assert t.shape_world_poses()[1, 2] + torus.vertices[:, 2].min() == pytest.approx(-0.002, abs=1e-6)


def test_a_hundred_env_replica_shares_its_sdfs():
    path = os.path.join(SCENES, "boxes_envs.usda")
    one = load_usd(path)
    many = load_usd(path, num_envs=100)
    assert many.num_envs == 100 and many.body_count == 100 and many.shape_count == 101
    assert len(many.sdfs) == len(one.sdfs) == 2
    assert many.sdf_memory_bytes() == one.sdf_memory_bytes()
    assert len({p.rsplit("/", 1)[0] for p in many.body_path}) == 100
    assert {p.split("/")[3] for p in many.body_path} == {f"env_{i}" for i in range(100)}
    ground = many.find_shapes("/World/Ground")[0]
    assert many.shape_env[ground] == -1
    assert sorted(many.shape_env[many.shape_body >= 0].tolist()) == list(range(100))
    np.testing.assert_allclose(many.body_q0[:, :2], env_grid(100, 2.0)[:, :2])
    # every box rests on the one ground: the ground covers the grid
    half = np.asarray(many.shape_geometry[ground].size[:2]) / 2
    assert np.all(np.abs(many.body_q0[:, :2]) + 0.05 < half)


# ---------------------------------------------------------------------------------------------
# Command line


def _hydro(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "hydro", *args], env=env, capture_output=True, text=True, cwd=ROOT)


def test_cli_validate_prints_findings_and_exits_1_on_errors(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "BadLink" (prepend apiSchemas = ["NewtonMassAPI"])
    {
        double[] newton:inertia = [0.01, 0.01, 0.005]
    }
    def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double radius = 0.1
        bool newton:hydroelasticEnabled = 1
        token newton:sdfTextureFormat = "half"
    }
}
""")
    r = _hydro("validate", path)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("NEWTON.MAS.001 ERROR /World/BadLink: newton:inertia must be empty or contain exactly 6")
    assert lines[1].startswith("NEWTON.COL.002 ERROR /World/Ball: newton:sdfTextureFormat must be one of")
    assert lines[2].startswith("HYDRO.HYD.003 WARNING /World/Ball: ")
    assert len(lines) == 3  # no word about the SDF resolution: the documented default 64 is fine
    ok = _hydro("validate", os.path.join(SCENES, "cube_on_box.usda"))
    assert ok.returncode == 0 and ok.stdout == ""
    missing = _hydro("validate", str(tmp_path / "nope.usda"))
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr


def test_bad_values_are_reported_never_crash(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "NewtonMassAPI"])
    {
        float physics:mass = -1
        float physics:density = nan
        double[] newton:inertia = [1, 2]
        vector3f physics:velocity = (inf, 0, 0)
        def Cube "C" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            token newton:hydroelasticStiffness = "stiff"
            token newton:sdfMaxResolution = "many"
            double size = -1
        }
    }
}
""")
    found = [(f.code, f.severity, f.prim_path) for f in validate_usd(path)]
    assert found == [("NEWTON.MAS.001", "ERROR", "/World/Body"), ("HYDRO.MAS.001", "ERROR", "/World/Body"),
                     ("HYDRO.MAS.001", "ERROR", "/World/Body"), ("HYDRO.BOD.001", "ERROR", "/World/Body"),
                     ("HYDRO.GEO.001", "ERROR", "/World/Body/C"),
                     ("NEWTON.COL.002", "WARNING", "/World/Body/C"), ("NEWTON.COL.002", "ERROR", "/World/Body/C")]
    with pytest.raises(ValueError, match="6 error"):
        load_usd(path)


def test_mirrors_versioned_prims_and_disabled_physics(tmp_path):
    path = write(tmp_path, """
def Xform "World"
{
    def Cone "Upside" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radius = 0.05
        double height = 0.2
        float3 xformOp:scale = (1, 1, -1)
        uniform token[] xformOpOrder = ["xformOp:scale"]
    }
    def Cylinder_1 "Versioned" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double radiusTop = 0.05
        double radiusBottom = 0.05
        double height = 0.3
        uniform token axis = "X"
    }
    def Mesh "LeftHanded" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        uniform token orientation = "leftHanded"
        int[] faceVertexCounts = [3, 3, 3, 3]
        int[] faceVertexIndices = [0, 1, 2, 0, 3, 1, 0, 2, 3, 1, 3, 2]
        point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    }
    def Sphere "Disabled" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        bool physics:collisionEnabled = 0
    }
    def Sphere "NotABody" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
    {
        bool physics:rigidBodyEnabled = 0
    }
}
""")
    m = load_usd(path, build_sdfs=False)
    assert m.shape_path == ["/World/Upside", "/World/Versioned", "/World/LeftHanded", "/World/Disabled",
                            "/World/NotABody"]
    # collisionEnabled = false: a shape (it has mass) that collides with nothing
    assert m.shape_collision_enabled.tolist() == [True, True, True, False, True]
    assert not any(m.may_collide(3, k) for k in range(m.shape_count))
    assert m.body_count == 0  # rigidBodyEnabled = false: a static collider
    assert m.shape_geometry[0] == Cone(0.05, 0.2)
    # mirrored along its axis, the cone's apex (canonical +Z) points down
    np.testing.assert_allclose(rot(m.shape_local_pose[0]) @ [0, 0, 1], [0, 0, -1], atol=1e-12)
    assert m.shape_geometry[1] == Cylinder(0.05, 0.3)
    np.testing.assert_allclose(rot(m.shape_local_pose[1]) @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    # these faces wind inward for a right-handed mesh; leftHanded makes them outward
    tet = m.shape_geometry[2]
    tet.check_watertight()
    assert tet.volume() == pytest.approx(1.0 / 6.0)
