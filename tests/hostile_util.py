"""Small USD scenes for the hostile-input and fuzz tests, written as text."""

from hydro.jit import COMPILING_MESSAGE

HEADER = """#usda 1.0
(
    defaultPrim = "World"
    kilogramsPerUnit = {kpu}
    metersPerUnit = {mpu}
    upAxis = "Z"
)
"""


def box_on_ground(*, ground=(1.0, 1.0, 0.2), box=0.1, depth=0.001, stiffness=1e6, resolution=16, mpu="1", kpu="1",
                  envs=False, extra=""):
    """A static ground box (top face z = 0) and a dynamic box ``depth`` m into it; with ``envs``
    the box lives in ``/World/envs/env_0`` (replicated by ``--num-envs``). ``extra`` is added
    inside ``/World``."""
    body = f"""
        def Xform "Box" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
        {{
            float physics:density = 1000
            double3 xformOp:translate = (0, 0, {box / 2 - depth!r})
            uniform token[] xformOpOrder = ["xformOp:translate"]
            def Cube "Collider" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
            {{
                custom bool newton:hydroelasticEnabled = 1
                custom float newton:hydroelasticStiffness = {stiffness!r}
                custom int newton:sdfMaxResolution = {resolution}
                double size = {box!r}
            }}
        }}"""
    if envs:
        body = f"""
    def Xform "envs"
    {{
        def Xform "env_0"
        {{{body}
        }}
    }}"""
    gx, gy, gz = ground
    return HEADER.format(mpu=mpu, kpu=kpu) + f"""
def Xform "World"
{{
    def PhysicsScene "PhysicsScene"
    {{
        vector3f physics:gravityDirection = (0, 0, -1)
        float physics:gravityMagnitude = 9.81
    }}
    def Cube "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
    {{
        custom bool newton:hydroelasticEnabled = 1
        custom float newton:hydroelasticStiffness = {stiffness!r}
        custom int newton:sdfMaxResolution = {resolution}
        double size = 1
        double3 xformOp:scale = ({gx!r}, {gy!r}, {gz!r})
        double3 xformOp:translate = (0, 0, {-gz / 2!r})
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:scale"]
    }}{body}{extra}
}}
"""


def bad_spheres(count):
    """``count`` static spheres with a negative radius: ``count`` schema errors."""
    spheres = "".join(f"""
    def Sphere "S{i}" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {{
        double radius = -1
    }}""" for i in range(count))
    return HEADER.format(mpu="1", kpu="1") + f"""
def Xform "World"
{{{spheres}
}}
"""


def write(tmp_path, text, name="scene.usda"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def stderr_lines(proc):
    """stderr's lines without the one that announces a compile (a cold cache prints it)."""
    return [ln for ln in proc.stderr.strip().splitlines() if ln.strip() and ln.strip() != COMPILING_MESSAGE]


def assert_error(proc, *words, lines=1, status=2):
    """A command that failed with ``status`` and said every one of ``words`` in its first stderr
    line, in ``lines`` lines in all, without a traceback."""
    got = stderr_lines(proc)
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(got) == lines, proc.stderr
    for w in words:
        assert w in got[0], (w, proc.stderr)
    return got


def unit_asset(*, mpu=0.01, kpu=1.0, up="Z", radius=5.0, offset=(1.0, 2.0, 3.0), density=1.0, margin=0.5):
    """An asset layer (``defaultPrim`` "Thing") in its own units: a rigid body at ``offset`` whose
    sphere collider of ``radius`` (with ``newton:contactMargin`` ``margin``) sits 2 radii above it,
    ``density`` in the asset's kg per unit³. Lengths in the asset's units."""
    ox, oy, oz = offset
    return f"""#usda 1.0
(
    defaultPrim = "Thing"
    metersPerUnit = {mpu!r}
    kilogramsPerUnit = {kpu!r}
    upAxis = "{up}"
)
def Xform "Thing"
{{
    def Xform "Body" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {{
        float physics:density = {density!r}
        double3 xformOp:translate = ({ox!r}, {oy!r}, {oz!r})
        uniform token[] xformOpOrder = ["xformOp:translate"]
        def Sphere "Ball" (prepend apiSchemas = ["PhysicsCollisionAPI", "NewtonSDFCollisionAPI"])
        {{
            bool newton:hydroelasticEnabled = 0
            uniform int newton:sdfMaxResolution = 16
            float newton:contactMargin = {margin!r}
            double radius = {radius!r}
            double3 xformOp:translate = (0, {2 * radius!r}, {radius!r})
            uniform token[] xformOpOrder = ["xformOp:translate"]
        }}
    }}
}}
"""


def referencing_stage(asset, *, mpu=1.0, kpu=1.0, up="Z", translate=(5.0, 0.0, 0.0), instanceable=False):
    """A stage in its own units that references ``asset`` (a file name beside it) at /World/A,
    moved by ``translate`` (stage units)."""
    tx, ty, tz = translate
    meta = "instanceable = true\n        " if instanceable else ""
    return f"""#usda 1.0
(
    defaultPrim = "World"
    metersPerUnit = {mpu!r}
    kilogramsPerUnit = {kpu!r}
    upAxis = "{up}"
)
def Xform "World"
{{
    def Xform "A" (
        {meta}prepend references = @./{asset}@
    )
    {{
        double3 xformOp:translate = ({tx!r}, {ty!r}, {tz!r})
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }}
}}
"""
