"""Stages as real assets are authored: units and up axes, references and payloads, instanceable prims,
point instancers, non-uniform scales, mesh approximations, planes, enable flags, gravity, collision
groups and filtered pairs, materials."""

import textwrap
import warnings

import numpy as np
import pytest

pytest.importorskip("pxr")

from hydro.geometry import Box, ConvexMesh, Ellipsoid, Mesh, Plane, Sphere
from hydro.scene.material import MAT_CONTACT_DAMPING, MAT_CONTACT_STIFFNESS, MAT_ROLLING_FRICTION, \
    MAT_STATIC_FRICTION, MAT_TORSIONAL_FRICTION
from hydro.scene.usd_io import SceneWarning, load_usd, read_gravity, validate_usd
from hydro.transforms import quat_to_matrix

HEADER = '#usda 1.0\n(\n    defaultPrim = "World"\n    metersPerUnit = {mpu}\n    kilogramsPerUnit = {kpu}\n    upAxis = "{up}"\n)\n'


def write(tmp_path, body, *, mpu=1, kpu=1, up="Z", name="scene.usda"):
    path = tmp_path / name
    path.write_text(HEADER.format(mpu=mpu, kpu=kpu, up=up) + textwrap.dedent(body))
    return str(path)


def quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_usd(path, **kw)


def codes(path):
    return [(f.code, f.severity, f.prim_path) for f in validate_usd(path)]


# ---------------------------------------------------------------------------------------------
# Units and axes: a centimetre, Y-up stage is the metre, Z-up one


METRE_Z_UP = """
def Xform "World"
{
    def PhysicsScene "Scene"
    {
        vector3f physics:gravityDirection = (0, 0, -1)
        float physics:gravityMagnitude = 9.81
    }
    def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double size = 1
        bool newton:hydroelasticEnabled = 1
        float newton:hydroelasticStiffness = 66000000
        uniform int newton:sdfMaxResolution = 32
        uniform float newton:sdfNarrowBandInner = -0.05
        uniform float newton:sdfNarrowBandOuter = 0.05
        double3 xformOp:translate = (0, 0, -0.05)
        double3 xformOp:scale = (0.5, 0.4, 0.1)
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]
    }
    def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        float physics:density = 1000
        double3 xformOp:translate = (0.01, 0.02, 0.097)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            double radius = 0.1
            bool newton:hydroelasticEnabled = 1
            float newton:hydroelasticStiffness = 33000000
            uniform int newton:sdfMaxResolution = 32
            uniform float newton:sdfNarrowBandInner = -0.05
            uniform float newton:sdfNarrowBandOuter = 0.05
            float newton:contactGap = 0.003
        }
    }
}
"""

# the same scene in centimetres, Y up ((x, y, z) Z-up is (x, z, -y) Y-up), 1 kg per unit:
# lengths x100, stiffness (force / distance^3) x1e-4, gravity 981 cm/s^2 along -Y
CENTIMETRE_Y_UP = """
def Xform "World"
{
    def PhysicsScene "Scene"
    {
        vector3f physics:gravityDirection = (0, -1, 0)
        float physics:gravityMagnitude = 981
    }
    def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {
        double size = 100
        bool newton:hydroelasticEnabled = 1
        float newton:hydroelasticStiffness = 6600
        uniform int newton:sdfMaxResolution = 32
        uniform float newton:sdfNarrowBandInner = -5
        uniform float newton:sdfNarrowBandOuter = 5
        double3 xformOp:translate = (0, -5, 0)
        double3 xformOp:scale = (0.5, 0.1, 0.4)
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]
    }
    def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        float physics:density = 0.001
        double3 xformOp:translate = (1, 9.7, -2)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            double radius = 10
            bool newton:hydroelasticEnabled = 1
            float newton:hydroelasticStiffness = 3300
            uniform int newton:sdfMaxResolution = 32
            uniform float newton:sdfNarrowBandInner = -5
            uniform float newton:sdfNarrowBandOuter = 5
            float newton:contactGap = 0.3
        }
    }
}
"""


def _contacts(model):
    from hydro.contact.pipeline import HydroelasticPipeline

    return HydroelasticPipeline(model, device="cpu").collide(model.shape_world_poses(model.state())).contacts


def _aligned(text):
    """The centimetre stage with each prim turned by -90° about X, so its own axes are the metre stage's."""
    text = text.replace("double3 xformOp:scale = (0.5, 0.1, 0.4)", "double3 xformOp:scale = (0.5, 0.4, 0.1)")
    text = text.replace('uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]',
                        'double xformOp:rotateX = -90\n        '
                        'uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateX", "xformOp:scale"]')
    return text.replace('double3 xformOp:translate = (1, 9.7, -2)\n        uniform token[] xformOpOrder = ["xformOp:translate"]',
                        'double3 xformOp:translate = (1, 9.7, -2)\n        double xformOp:rotateX = -90\n        '
                        'uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateX"]')


def test_a_centimetre_y_up_stage_gives_the_contacts_of_the_metre_z_up_one(tmp_path):
    metre = quiet_load(write(tmp_path, METRE_Z_UP, name="m.usda"))
    text = _aligned(CENTIMETRE_Y_UP)
    assert text.count("rotateX = -90") == 2
    aligned = quiet_load(write(tmp_path, text, mpu=0.01, up="Y", name="aligned.usda"))
    for name in ("shape_stiffness", "shape_gap", "body_mass", "body_inertia", "body_q0", "shape_local_pose"):
        np.testing.assert_allclose(getattr(aligned, name), getattr(metre, name), rtol=1e-6, atol=1e-12, err_msg=name)
    assert [s.narrow_band_outer for s in aligned.shape_sdf_settings] == pytest.approx([0.05, 0.05])
    np.testing.assert_allclose(read_gravity(str(tmp_path / "aligned.usda")), [0, 0, -9.81], rtol=1e-6, atol=1e-12)
    a, b = _contacts(metre), _contacts(aligned)
    assert len(a) == len(b) > 0
    assert a.force_vectors().sum(axis=0)[2] > 40.0  # the ball presses on the ground
    for name in ("point", "normal", "area", "depth", "force", "stiffness"):
        x, y = getattr(a, name), getattr(b, name)
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-9 * max(1.0, float(np.abs(x).max())), err_msg=name)


def test_a_y_up_stage_as_authored_gives_the_same_patch(tmp_path):
    # without the turn each body frame is the Y-up stage's (turned to Z-up): the SDF grids are the
    # same lattice with other axis labels, so the patch triangles carry the same forces, areas and
    # depths, and the net force, torque and centre of pressure agree
    metre = quiet_load(write(tmp_path, METRE_Z_UP, name="m.usda"))
    cm = quiet_load(write(tmp_path, CENTIMETRE_Y_UP, mpu=0.01, up="Y", name="cm.usda"))
    np.testing.assert_allclose(cm.body_q0[:, :3], metre.body_q0[:, :3], atol=1e-12)
    for m in (metre, cm):
        box, pose = m.shape_geometry[0], m.shape_world_poses()[0]
        np.testing.assert_allclose(np.abs(quat_to_matrix(pose[3:]) @ np.asarray(box.size)) / 2, [0.25, 0.2, 0.05],
                                   atol=1e-12)
    a, b = _contacts(metre), _contacts(cm)
    assert len(a) == len(b) > 0
    for name in ("area", "depth", "force"):
        np.testing.assert_allclose(np.sort(getattr(b, name)), np.sort(getattr(a, name)), rtol=1e-6, atol=1e-12)
    fa, fb = a.force_vectors(), b.force_vectors()
    np.testing.assert_allclose(fb.sum(axis=0), fa.sum(axis=0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.cross(b.point, fb).sum(axis=0), np.cross(a.point, fa).sum(axis=0), rtol=1e-6,
                               atol=1e-9)
    cop = [(c.point.astype(float) * c.force.astype(float)[:, None]).sum(axis=0) / c.force.astype(float).sum()
           for c in (a, b)]
    # the contact points are float32: the two stages' poses differ by rounding, which moves a point
    # by a float32 step or two (1.9e-9 m at 2 cm)
    np.testing.assert_allclose(cop[1], cop[0], atol=4 * np.finfo(np.float32).eps * np.abs(cop[0]).max())


def test_newton_values_are_in_stage_units(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def Material "Soft" (prepend apiSchemas = ["PhysicsMaterialAPI", "NewtonMaterialAPI"])
        {
            float physics:staticFriction = 0.8
            float newton:torsionalFriction = 0.5
            float newton:rollingFriction = 0.02
            float newton:contactStiffness = 300
            float newton:contactDamping = 4
        }
        def Cube "Box" (prepend apiSchemas = ["NewtonSDFCollisionAPI", "MaterialBindingAPI"])
        {
            double size = 20
            float newton:contactMargin = 0.2
            float newton:contactGap = 0.5
            uniform float newton:sdfTargetVoxelSize = 0.5
            uniform float newton:sdfPadding = 1
            rel material:binding:physics = </World/Soft>
        }
    }
    """, mpu=0.01, kpu=0.001)  # centimetres and grams
    m = quiet_load(path, build_sdfs=False)
    assert m.shape_geometry[0] == Box((0.2, 0.2, 0.2))
    assert m.shape_margin[0] == pytest.approx(0.002) and m.shape_gap[0] == pytest.approx(0.005)
    s = m.shape_sdf_settings[0]
    assert s.target_voxel_size == pytest.approx(0.005) and s.padding == pytest.approx(0.01)
    assert s.narrow_band_inner == pytest.approx(-0.001)  # the fallback, -0.1 stage units
    assert m.shape_stiffness[0] == pytest.approx(1e10 * 0.001 / 0.01**2)  # g/(cm^2 s^2) is 0.001/0.0001 Pa/m
    row = m.shape_material[0]
    assert row[MAT_STATIC_FRICTION] == pytest.approx(0.8)
    assert row[MAT_TORSIONAL_FRICTION] == pytest.approx(0.005) and row[MAT_ROLLING_FRICTION] == pytest.approx(2e-4)
    assert row[MAT_CONTACT_STIFFNESS] == pytest.approx(0.3) and row[MAT_CONTACT_DAMPING] == pytest.approx(0.004)


# ---------------------------------------------------------------------------------------------
# Composition: references, payloads, instanceable prims, point instancers


BALL_ASSET = """
def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
{
    float physics:mass = 2
    def Sphere "Collider" (prepend apiSchemas = ["NewtonSDFCollisionAPI"])
    {
        double radius = 0.05
        bool newton:hydroelasticEnabled = 1
        uniform int newton:sdfMaxResolution = 16
        float newton:contactGap = 0.002
    }
}
"""


def write_ball_asset(tmp_path):
    (tmp_path / "ball.usda").write_text(HEADER.format(mpu=1, kpu=1, up="Z").replace('"World"', '"Ball"') + BALL_ASSET)


def test_references_and_payloads(tmp_path):
    write_ball_asset(tmp_path)
    path = write(tmp_path, """
    def Xform "World"
    {
        def Cube "Ground" (prepend apiSchemas = ["NewtonSDFCollisionAPI"])
        {
            double size = 1
            bool newton:hydroelasticEnabled = 1
            uniform int newton:sdfMaxResolution = 16
            double3 xformOp:translate = (0, 0, -0.5)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
        def Xform "Referenced" (prepend references = @./ball.usda@)
        {
            double3 xformOp:translate = (0.3, 0, 0.05)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
        def Xform "Loaded" (prepend payload = @./ball.usda@)
        {
            double3 xformOp:translate = (-0.3, 0, 0.05)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
    }
    """)
    m = quiet_load(path, build_sdfs=False)
    assert m.body_path == ["/World/Referenced", "/World/Loaded"]
    assert m.shape_path == ["/World/Ground", "/World/Referenced/Collider", "/World/Loaded/Collider"]
    np.testing.assert_allclose(m.body_q0[:, :3], [[0.3, 0, 0.05], [-0.3, 0, 0.05]])
    np.testing.assert_allclose(m.body_mass, 2.0)
    assert m.shape_gap.tolist() == pytest.approx([0.0, 0.002, 0.002])
    assert m.shape_geometry[1] == m.shape_geometry[2] == Sphere(0.05)


def test_an_instanced_scene_of_a_hundred_colliders(tmp_path):
    write_ball_asset(tmp_path)
    instances = "\n".join(
        f'''        def "Ball_{i}" (instanceable = true
                        prepend references = @./ball.usda@)
        {{
            double3 xformOp:translate = ({(i % 10) * 0.2}, {(i // 10) * 0.2}, 0.05)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }}''' for i in range(100))
    path = write(tmp_path, f"""
    def Xform "World"
    {{
        def Cube "Ground" (prepend apiSchemas = ["NewtonSDFCollisionAPI"])
        {{
            double size = 3
            bool newton:hydroelasticEnabled = 1
            uniform int newton:sdfMaxResolution = 16
            double3 xformOp:translate = (0.9, 0.9, -1.5)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }}
        def Xform "Balls"
        {{
{instances}
        }}
    }}
    """)
    from pxr import Usd

    stage = Usd.Stage.Open(path)
    assert stage.GetPrimAtPath("/World/Balls/Ball_7").IsInstance()
    assert stage.GetPrimAtPath("/World/Balls/Ball_7/Collider").IsInstanceProxy()
    m = quiet_load(path)
    assert m.body_count == 100 and m.shape_count == 101
    assert m.shape_path[1:] == [f"/World/Balls/Ball_{i}/Collider" for i in range(100)]
    np.testing.assert_allclose(m.body_q0[:, :2], [[(i % 10) * 0.2, (i // 10) * 0.2] for i in range(100)], atol=1e-12)
    assert len(m.sdfs) == 2  # one SDF for the hundred balls, one for the ground
    assert set(m.shape_sdf[1:].tolist()) == {m.shape_sdf[1]}


def test_a_point_instancer_of_bodies_and_colliders(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def PointInstancer "Balls"
        {
            rel prototypes = [</World/Balls/Protos/Ball>, </World/Balls/Protos/Rock>]
            int[] protoIndices = [0, 1, 0, 0, 1]
            point3f[] positions = [(0, 0, 1), (1, 0, 0), (2, 0, 1), (3, 0, 1), (4, 0, 0)]
            quath[] orientations = [(1, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 0), (1, 0, 0, 0), (1, 0, 0, 0)]
            float3[] scales = [(1, 1, 1), (1, 1, 1), (2, 2, 2), (1, 2, 3), (1, 1, 1)]
            double3 xformOp:translate = (0, 10, 0)
            uniform token[] xformOpOrder = ["xformOp:translate"]
            def Scope "Protos"
            {
                def Xform "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
                {
                    def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
                    {
                        double radius = 0.1
                        double3 xformOp:translate = (0, 0, 0.5)
                        uniform token[] xformOpOrder = ["xformOp:translate"]
                    }
                }
                def Cube "Rock" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
                {
                    double size = 0.2
                }
            }
        }
    }
    """)
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(path)
    UsdGeom.PointInstancer(stage.GetPrimAtPath("/World/Balls")).DeactivateId(4)  # the inactiveIds metadata
    stage.Save()
    m = quiet_load(path, build_sdfs=False)
    # the prototypes themselves are not simulated; instance 4 is inactive
    assert m.body_path == ["/World/Balls/Ball_0", "/World/Balls/Ball_2", "/World/Balls/Ball_3"]
    assert m.shape_path == ["/World/Balls/Ball_0/Collider", "/World/Balls/Rock_1", "/World/Balls/Ball_2/Collider",
                            "/World/Balls/Ball_3/Collider"]
    np.testing.assert_allclose(m.body_q0[:, :3], [[0, 10, 1], [2, 10, 1], [3, 10, 1]], atol=1e-6)
    world = m.shape_world_poses()
    np.testing.assert_allclose(world[[0, 2, 3], :3], [[0, 10, 1.5], [2, 10, 2], [3, 10, 2.5]], atol=1e-6)
    assert m.shape_body.tolist() == [0, -1, 1, 2]
    assert m.shape_geometry[0] == Sphere(0.1)
    assert m.shape_geometry[2].radius == pytest.approx(0.2)  # scaled 2x
    assert isinstance(m.shape_geometry[3], Ellipsoid)  # scaled (1, 2, 3)
    np.testing.assert_allclose(m.shape_geometry[3].radii, [0.1, 0.2, 0.3], rtol=1e-6)
    assert m.shape_geometry[1] == Box((0.2, 0.2, 0.2))
    np.testing.assert_allclose(quat_to_matrix(world[1, 3:]) @ [1, 0, 0], [-1, 0, 0], atol=1e-6)  # turned about z


# ---------------------------------------------------------------------------------------------
# Scales, approximations, planes


SQUASHED = """
    def Xform "World"
    {
        def Xform "Squash"
        {
            double3 xformOp:scale = (1, 2, 0.5)
            uniform token[] xformOpOrder = ["xformOp:scale"]
            def Sphere "Egg" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
            {
                double radius = 0.1
            }
            def Cube "Brick" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
            {
                double size = 0.2
            }
            def Mesh "Tet" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonMeshCollisionAPI"])
            {
                int[] faceVertexCounts = [3, 3, 3, 3]
                int[] faceVertexIndices = [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]
                point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
            }
        }
        PILL
    }
"""

PILL = """def Capsule "Pill" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            double radius = 0.05
            double height = 0.2
            double3 xformOp:scale = (1, 2, 1)
            uniform token[] xformOpOrder = ["xformOp:scale"]
        }"""


def test_non_uniform_scales(tmp_path):
    path = write(tmp_path, SQUASHED.replace("PILL", PILL), name="pill.usda")
    found = validate_usd(path)
    assert [(f.code, f.prim_path) for f in found] == [("HYDRO.GEO.001", "/World/Pill")]
    assert "Capsule needs a uniform scale" in found[0].message and "[1.0, 2.0, 1.0]" in found[0].message
    m = quiet_load(write(tmp_path, SQUASHED.replace("PILL", ""), name="ok.usda"), build_sdfs=False)
    assert m.shape_geometry[0] == Ellipsoid((0.1, 0.2, 0.05))
    assert m.shape_geometry[1] == Box((0.2, 0.4, 0.1))
    tet = m.shape_geometry[2]
    assert tet.volume() == pytest.approx(1 / 6)  # det(diag(1, 2, 0.5)) = 1
    np.testing.assert_allclose(tet.vertices.max(axis=0) - tet.vertices.min(axis=0), [1, 2, 0.5], atol=1e-7)


def test_mesh_approximations(tmp_path):
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=2, radius=0.1)
    pts = ", ".join(f"({x:.9g}, {y:.9g}, {z:.9g})" for x, y, z in sphere.vertices + [0.5, 0, 0])
    idx = ", ".join(str(int(i)) for i in sphere.faces.ravel())
    counts = ", ".join(["3"] * len(sphere.faces))

    def mesh(name, approximation, extra=""):
        return f'''
        def Mesh "{name}" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonMeshCollisionAPI"])
        {{
            uniform token physics:approximation = "{approximation}"
            {extra}
            int[] faceVertexCounts = [{counts}]
            int[] faceVertexIndices = [{idx}]
            point3f[] points = [{pts}]
        }}'''

    body = ('def Xform "World"\n{' + mesh("Plain", "none") + mesh("Hull", "convexHull") +
            mesh("Small", "convexHull", "uniform int newton:maxHullVertices = 8") + mesh("Ball", "boundingSphere") +
            mesh("Crate", "boundingCube") + mesh("Parts", "convexDecomposition") + "\n}\n")
    path = write(tmp_path, body)
    with pytest.warns(SceneWarning, match="HYDRO.USD.002 WARNING /World/Parts: physics:approximation = "
                                          "'convexDecomposition' is not implemented"):
        m = load_usd(path, build_sdfs=False)
    plain, hull, small, ball, crate, parts = m.shape_geometry
    assert type(plain) is Mesh and type(parts) is Mesh and len(plain.vertices) == len(sphere.vertices)
    assert isinstance(hull, ConvexMesh) and len(hull.vertices) == len(sphere.vertices)  # already convex
    assert isinstance(small, ConvexMesh) and len(small.vertices) == 8
    assert isinstance(ball, Sphere) and ball.radius == pytest.approx(0.1, rel=1e-6)
    assert isinstance(crate, Box) and crate.size == pytest.approx((0.2, 0.2 * np.ptp(sphere.vertices[:, 1]) / 0.2,
                                                                   np.ptp(sphere.vertices[:, 2])), rel=1e-6)
    world = m.shape_world_poses()
    np.testing.assert_allclose(world[3, :3], [0.5, 0, 0], atol=1e-7)  # about the mesh's centre
    bad = write(tmp_path, 'def Xform "World"\n{' + mesh("Few", "convexHull", "uniform int newton:maxHullVertices = 3")
                + "\n}\n", name="bad.usda")
    assert codes(bad) == [("HYDRO.GEO.001", "ERROR", "/World/Few")]


def test_newton_collider_schema_findings(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def Mesh "Bare" (prepend apiSchemas = ["PhysicsCollisionAPI", "PhysicsMeshCollisionAPI"])
        {
            int[] faceVertexCounts = [3, 3, 3, 3]
            int[] faceVertexIndices = [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]
            point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
        }
        def Mesh "Both" (prepend apiSchemas = ["PhysicsMeshCollisionAPI", "NewtonMeshCollisionAPI", "NewtonSDFCollisionAPI"])
        {
            int[] faceVertexCounts = [3, 3, 3, 3]
            int[] faceVertexIndices = [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]
            point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
        }
        def Sphere "Round" (prepend apiSchemas = ["NewtonMeshCollisionAPI"])
        {
            double radius = 0.1
        }
        def Xform "NotAMaterial" (prepend apiSchemas = ["NewtonMaterialAPI"])
        {
        }
        def Material "MissingBase" (prepend apiSchemas = ["NewtonMaterialAPI"])
        {
        }
    }
    """)
    assert codes(path) == [("NEWTON.COL.001", "WARNING", "/World/Bare"), ("NEWTON.COL.001", "WARNING", "/World/Both"),
                           ("NEWTON.COL.001", "WARNING", "/World/Round"), ("NEWTON.MAT.001", "WARNING", "/World/NotAMaterial"),
                           ("NEWTON.MAT.001", "WARNING", "/World/MissingBase")]
    with pytest.warns(SceneWarning):
        m = load_usd(path, build_sdfs=False)
    assert m.shape_sdf_collision.tolist() == [False, True, False]  # "Both": the SDF configuration
    assert m.shape_geometry[2] == Sphere(0.1)


def test_a_plane_is_static_ground(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def Plane "Floor" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            uniform token axis = "Y"
            double3 xformOp:translate = (0, 0, -1)
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "NewtonCollisionAPI"])
        {
            double radius = 0.1
        }
    }
    """)
    m = quiet_load(path, build_sdfs=False)
    assert m.shape_geometry[0] == Plane() and m.shape_body[0] == -1
    np.testing.assert_allclose(quat_to_matrix(m.shape_local_pose[0, 3:]) @ [0, 0, 1], [0, 1, 0], atol=1e-12)
    assert m.may_collide(0, 1)
    moving = write(tmp_path, """
    def Xform "World"
    {
        def Xform "Cart" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
        {
            def Plane "Deck" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
            }
            def Cube "Box" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double size = 0.1
            }
        }
    }
    """, name="moving.usda")
    found = validate_usd(moving)
    assert [(f.code, f.prim_path) for f in found] == [("HYDRO.GEO.001", "/World/Cart/Deck")]
    assert "must be static" in found[0].message


# ---------------------------------------------------------------------------------------------
# Flags, gravity, groups, filtered pairs


def test_enable_flags(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def Xform "Frozen" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
        {
            bool physics:rigidBodyEnabled = 0
            def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double radius = 0.1
            }
        }
        def Xform "Live" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])
        {
            def Sphere "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double radius = 0.1
            }
            def Sphere "Ghost" (prepend apiSchemas = ["PhysicsCollisionAPI"])
            {
                double radius = 0.1
                bool physics:collisionEnabled = 0
                double3 xformOp:translate = (0, 0, 1)
                uniform token[] xformOpOrder = ["xformOp:translate"]
            }
        }
    }
    """)
    m = quiet_load(path, build_sdfs=False)
    assert m.body_path == ["/World/Live"]
    assert m.shape_body.tolist() == [-1, 0, 0]  # a disabled body's collider is static
    assert m.shape_collision_enabled.tolist() == [True, True, False]
    # the disabled collider still has mass: its sphere moves the centre of mass up
    assert m.body_com[0, 2] == pytest.approx(0.5)
    assert m.may_collide(0, 1) and not m.may_collide(0, 2)


@pytest.mark.parametrize("scene,gravity", [
    ('vector3f physics:gravityDirection = (1, 0, 0)\n float physics:gravityMagnitude = 2', [0.02, 0, 0]),
    ('', [0, 0, -9.81]),  # unauthored: down the up axis, earth gravity
    ('float physics:gravityMagnitude = 500', [0, 0, -5.0]),
])
def test_gravity_direction_and_magnitude(tmp_path, scene, gravity):
    path = write(tmp_path, f'def Xform "World"\n{{\n def PhysicsScene "Scene"\n {{\n {scene}\n }}\n}}\n', mpu=0.01)
    np.testing.assert_allclose(read_gravity(path), gravity, rtol=1e-6)


def test_gravity_can_be_turned_off(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def PhysicsScene "Scene" (prepend apiSchemas = ["NewtonSceneAPI"])
        {
            bool newton:gravityEnabled = 0
        }
    }
    """)
    np.testing.assert_allclose(read_gravity(path), 0.0)


def test_collision_groups_merge_groups_and_filtered_pairs(tmp_path):
    path = write(tmp_path, """
    def Xform "World"
    {
        def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI"])
        {
            double size = 1
        }
        def Xform "Arm" (prepend apiSchemas = ["PhysicsArticulationRootAPI", "PhysicsFilteredPairsAPI"])
        {
            rel physics:filteredPairs = [</World/Ball>, </World/Nothing>]
            def Sphere "Upper" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
            {
                double radius = 0.1
            }
            def Sphere "Lower" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
            {
                double radius = 0.1
            }
        }
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
        {
            double radius = 0.1
        }
        def Sphere "Pebble" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
        {
            double radius = 0.1
        }
        def Sphere "Dust" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"])
        {
            double radius = 0.1
        }
        def Scope "Groups"
        {
            def PhysicsCollisionGroup "ArmLinks" (prepend apiSchemas = ["CollectionAPI:colliders"])
            {
                rel collection:colliders:includes = </World/Arm>
                rel physics:filteredGroups = [</World/Groups/ArmLinks>, </World/Ground>]
            }
            def PhysicsCollisionGroup "Loose1" (prepend apiSchemas = ["CollectionAPI:colliders"])
            {
                rel collection:colliders:includes = </World/Pebble>
                string physics:mergeGroup = "loose"
                bool physics:invertFilteredGroups = 1
                rel physics:filteredGroups = </World/Groups/Floor>
            }
            def PhysicsCollisionGroup "Loose2" (prepend apiSchemas = ["CollectionAPI:colliders"])
            {
                rel collection:colliders:includes = </World/Dust>
                string physics:mergeGroup = "loose"
            }
            def PhysicsCollisionGroup "Floor" (prepend apiSchemas = ["CollectionAPI:colliders"])
            {
                rel collection:colliders:includes = </World/Ground>
            }
        }
    }
    """)
    found = codes(path)
    assert found == [("HYDRO.USD.003", "WARNING", "/World/Arm"), ("HYDRO.USD.003", "WARNING", "/World/Groups/ArmLinks")]
    with pytest.warns(SceneWarning):
        m = load_usd(path, build_sdfs=False)
    ground, upper, lower, ball, pebble, dust = range(6)
    assert m.shape_path[upper] == "/World/Arm/Upper"
    assert not m.may_collide(upper, lower)  # ArmLinks filters itself
    assert m.may_collide(upper, ground)
    assert not m.may_collide(upper, ball) and not m.may_collide(lower, ball)  # the articulation's filtered pair
    # Loose1 and Loose2 merge into one group that inverts its filter: it collides only with Floor
    assert m.may_collide(pebble, ground) and m.may_collide(dust, ground)
    assert not m.may_collide(pebble, dust) and not m.may_collide(dust, ball)
    assert m.may_collide(ball, ground)
    # ... and save_usd writes groups and pairs that load back to the same rules
    from hydro.scene.usd_io import save_usd

    save_usd(m, str(tmp_path / "saved.usda"))
    back = quiet_load(str(tmp_path / "saved.usda"), build_sdfs=False)
    np.testing.assert_array_equal(back.collision_group_mask, m.collision_group_mask)
    np.testing.assert_array_equal(back.shape_collision_group, m.shape_collision_group)
    np.testing.assert_array_equal(back.filtered_shape_pairs, m.filtered_shape_pairs)
    assert [[back.may_collide(i, j) for j in range(6)] for i in range(6)] == \
        [[m.may_collide(i, j) for j in range(6)] for i in range(6)]
