"""Generate the shipped scenes in ``scenes/`` (USD, Z-up, metres, kilograms).

Usage::

    python scripts/make_scenes.py           # (re)write scenes/*.usda
    python scripts/make_scenes.py --check   # exit 1 if a checked-in scene is stale

Every scene is written with usd-core, then a comment block is put at its top: what it shows,
which bodies are dynamic, and the numbers behind its stiffnesses. Stiffness is chosen so that
the authored penetration d (1–3 mm, so a patch appears when the pipeline runs at the authored
pose) roughly carries the weight: for two shapes of stiffness kA and kB pressed together,
k_eff = kA·kB/(kA+kB) and the normal force is about k_eff × (overlap volume under the patch).
Overlap volumes are closed forms (spherical cap, lens, circular segment × length, Pappus for
the torus). g = 9.81 m/s².
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import newton_usd_schemas  # noqa: F401  (registers the Newton schemas before pxr is used, as hydro does)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

G = 9.81
SCENES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenes")
GAP = 0.003  # m, newton:contactGap on dynamic shapes
GROUND = (0.5, 0.5, 0.1)  # m, the static ground box of most scenes; its top face is z = 0


# ------------------------------------------------------------------------------------------
# closed forms


def cap_volume(r, d):
    """Volume of a spherical cap of height d cut from a sphere of radius r."""
    return math.pi * d * d * (3.0 * r - d) / 3.0


def lens_volume(r1, r2, dist):
    """Volume of the intersection of two spheres whose centres are ``dist`` apart."""
    h = r1 + r2 - dist
    return math.pi * h * h * (dist * dist + 2.0 * dist * (r1 + r2) - 3.0 * (r1 - r2) ** 2) / (12.0 * dist)


def segment_area(r, d):
    """Area of the circular segment of depth d cut from a circle of radius r."""
    return r * r * math.acos((r - d) / r) - (r - d) * math.sqrt(2.0 * r * d - d * d)


def mesh_volume_below(verts, faces, z0):
    """Volume of a closed, outward-wound triangle mesh below the plane z = z0 (exact).

    Divergence theorem with the field (0, 0, z − z0): the cap on the plane contributes nothing,
    so the volume is the sum over the surface below the plane of ∫ (z − z0) n_z dA.
    """
    total = 0.0
    for tri in verts[faces] - np.array([0.0, 0.0, z0]):
        below = tri[:, 2] < 0.0
        if not below.any():
            continue
        # clip the triangle to z < 0 (Sutherland–Hodgman against one plane)
        poly = []
        for i in range(3):
            p, q = tri[i], tri[(i + 1) % 3]
            if p[2] < 0.0:
                poly.append(p)
            if (p[2] < 0.0) != (q[2] < 0.0):
                t = p[2] / (p[2] - q[2])
                poly.append(p + t * (q - p))
        for k in range(1, len(poly) - 1):
            a, b, c = poly[0], poly[k], poly[k + 1]
            nz_area = 0.5 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))
            total += nz_area * (a[2] + b[2] + c[2]) / 3.0
    return total


def k_eff(ka, kb):
    return ka * kb / (ka + kb)


def round2(x):
    """x rounded to two significant digits."""
    e = math.floor(math.log10(abs(x)))
    return round(x / 10**e, 1) * 10**e


def torus_mesh(major, minor, n_major=32, n_minor=16):
    """A closed, outward-wound torus around +Z (vertices, triangles); vertex rings include the
    lowest points (z = −minor)."""
    th = 2.0 * math.pi * np.arange(n_major) / n_major
    ph = 2.0 * math.pi * np.arange(n_minor) / n_minor
    T, P = np.meshgrid(th, ph, indexing="ij")
    ring = major + minor * np.cos(P)
    verts = np.stack([ring * np.cos(T), ring * np.sin(T), minor * np.sin(P)], axis=-1).reshape(-1, 3)
    faces = []
    for i in range(n_major):
        for j in range(n_minor):
            a = i * n_minor + j
            b = ((i + 1) % n_major) * n_minor + j
            c = ((i + 1) % n_major) * n_minor + (j + 1) % n_minor
            d = i * n_minor + (j + 1) % n_minor
            faces += [(a, b, c), (a, c, d)]
    return np.round(verts, 7), np.array(faces, dtype=np.int64)


# ------------------------------------------------------------------------------------------
# writing helpers


def new_stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    scene.CreateGravityMagnitudeAttr(G)
    return stage


def place(prim, translate=None, orient=None, scale=None):
    x = UsdGeom.Xformable(prim)
    if translate is not None:
        x.AddTranslateOp().Set(Gf.Vec3d(*translate))
    if orient is not None:  # (w, x, y, z)
        x.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(*orient))
    if scale is not None:
        x.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*scale))


def hydroelastic(prim, stiffness, *, gap=None, resolution=64):
    """PhysicsCollisionAPI + NewtonSDFCollisionAPI with hydroelastic contact enabled."""
    UsdPhysics.CollisionAPI.Apply(prim)
    prim.AddAppliedSchema("NewtonSDFCollisionAPI")
    prim.CreateAttribute("newton:hydroelasticEnabled", Sdf.ValueTypeNames.Bool).Set(True)
    prim.CreateAttribute("newton:hydroelasticStiffness", Sdf.ValueTypeNames.Float).Set(float(stiffness))
    prim.CreateAttribute("newton:sdfMaxResolution", Sdf.ValueTypeNames.Int).Set(int(resolution))
    if gap is not None:
        prim.CreateAttribute("newton:contactGap", Sdf.ValueTypeNames.Float).Set(float(gap))


def body(stage, path, translate, *, density=None, mass=None, kinematic=False):
    prim = UsdGeom.Xform.Define(stage, path).GetPrim()
    place(prim, translate=translate)
    rb = UsdPhysics.RigidBodyAPI.Apply(prim)
    if kinematic:
        rb.CreateKinematicEnabledAttr(True)
    if density is not None or mass is not None:
        m = UsdPhysics.MassAPI.Apply(prim)
        if density is not None:
            m.CreateDensityAttr(float(density))
        if mass is not None:
            m.CreateMassAttr(float(mass))
    return prim


def ground(stage, stiffness, path="/World/Ground", size=GROUND, resolution=64):
    """A static box of ``size`` whose top face is z = 0."""
    g = UsdGeom.Cube.Define(stage, path)
    g.CreateSizeAttr(1.0)
    place(g.GetPrim(), translate=(0.0, 0.0, -size[2] / 2.0), scale=size)
    hydroelastic(g.GetPrim(), stiffness, resolution=resolution)
    return g.GetPrim()


def template_env(stage):
    """The env namespace with its template env_0 at the origin."""
    UsdGeom.Xform.Define(stage, "/World/envs")
    UsdGeom.Xform.Define(stage, "/World/envs/env_0")


def cube(stage, path, edge, translate=None):
    c = UsdGeom.Cube.Define(stage, path)
    c.CreateSizeAttr(float(edge))
    if translate is not None:
        place(c.GetPrim(), translate=translate)
    return c.GetPrim()


def text(stage, header):
    body_text = stage.GetRootLayer().ExportToString()
    first, rest = body_text.split("\n", 1)
    comment = "\n".join(("# " + line).rstrip() for line in header.strip("\n").splitlines())
    return f"{first}\n{comment}\n{rest}"


def fmt(x, unit=""):
    return f"{x:.4g}{unit}"


# ------------------------------------------------------------------------------------------
# the scenes


def sphere_on_box():
    r, rho, d = 0.1, 1000.0, 0.002
    m = rho * 4.0 / 3.0 * math.pi * r**3
    w = m * G
    v = cap_volume(r, d)
    k = round2(2.0 * w / v)  # equal stiffnesses: k_eff = k/2
    stage = new_stage()
    ground(stage, k)
    body(stage, "/World/Sphere", (0.0, 0.0, r - d), density=rho)
    s = UsdGeom.Sphere.Define(stage, "/World/Sphere/Collider")
    s.CreateRadiusAttr(r)
    hydroelastic(s.GetPrim(), k, gap=GAP)
    f = k_eff(k, k) * v
    return text(stage, f"""
sphere_on_box: a sphere resting on a box, slightly penetrating.
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/Sphere is dynamic (R = {r} m, density {rho:g} kg/m^3, mass {fmt(m, ' kg')}).
        /World/Ground is a static {GROUND[0]} x {GROUND[1]} x {GROUND[2]} m box whose top face is z = 0.
Penetration: the sphere's centre is at z = {r - d:g} m, {d * 1e3:g} mm into the box.
Stiffness: k = {k:.3g} N/m^3 on both shapes, k_eff = k/2 = {k_eff(k, k):.3g} N/m^3.
  Overlap (spherical cap, depth {d * 1e3:g} mm): V = pi d^2 (3R - d)/3 = {v:.4g} m^3.
  k_eff * V = {fmt(f, ' N')} against a weight of {fmt(w, ' N')}.
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shape.
""")


def cube_on_box():
    a, rho, d = 0.1, 1000.0, 0.002
    m = rho * a**3
    w = m * G
    v = a * a * d
    k = round2(2.0 * w / v)
    stage = new_stage()
    ground(stage, k)
    body(stage, "/World/Cube", (0.0, 0.0, a / 2.0 - d), density=rho)
    c = cube(stage, "/World/Cube/Collider", a)
    hydroelastic(c, k, gap=GAP)
    f = k_eff(k, k) * v
    return text(stage, f"""
cube_on_box: a cube lying flat on a larger box (flat on flat; the cube's face is the smaller
footprint, so the patch is the cube's {a} x {a} m bottom face).
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/Cube is dynamic ({a} m edge, density {rho:g} kg/m^3, mass {fmt(m, ' kg')}).
        /World/Ground is a static {GROUND[0]} x {GROUND[1]} x {GROUND[2]} m box whose top face is z = 0.
Penetration: the cube's bottom face is at z = {-d:g} m, {d * 1e3:g} mm into the box.
Stiffness: k = {k:.3g} N/m^3 on both shapes, k_eff = k/2 = {k_eff(k, k):.3g} N/m^3.
  Overlap (footprint x depth): V = {a}^2 x {d} = {v:.4g} m^3.
  k_eff * V = {fmt(f, ' N')} against a weight of {fmt(w, ' N')}.
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shape.
""")


def two_spheres():
    r1, r2, rho, d = 0.1, 0.05, 1000.0, 0.002
    m = rho * 4.0 / 3.0 * math.pi * r2**3
    w = m * G
    dist = r1 + r2 - d
    v = lens_volume(r1, r2, dist)
    # the small sphere is 4x softer than the big one: k_eff = (4k·k)/(5k) = 0.8 k
    k = round2(w / v / 0.8)
    k_big = 4.0 * k
    stage = new_stage()
    big = UsdGeom.Sphere.Define(stage, "/World/BigSphere")
    big.CreateRadiusAttr(r1)
    hydroelastic(big.GetPrim(), k_big)
    body(stage, "/World/SmallSphere", (0.0, 0.0, dist), density=rho)
    s = UsdGeom.Sphere.Define(stage, "/World/SmallSphere/Collider")
    s.CreateRadiusAttr(r2)
    hydroelastic(s.GetPrim(), k, gap=GAP)
    ke = k_eff(k_big, k)
    f = ke * v
    return text(stage, f"""
two_spheres: a small soft sphere resting on top of a big stiff one (an unstable balance: the
scene is meant for the contact at the authored pose; the patch bulges into the softer sphere).
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/SmallSphere is dynamic (R = {r2} m, density {rho:g} kg/m^3, mass {fmt(m, ' kg')}).
        /World/BigSphere is static (R = {r1} m, centred at the origin).
Penetration: centres {dist:g} m apart, {d * 1e3:g} mm of overlap along the line of centres.
Stiffness: k = {k_big:.3g} N/m^3 on the big sphere, {k:.3g} N/m^3 on the small one,
  k_eff = {ke:.3g} N/m^3.
  Overlap (lens of the two balls): V = {v:.4g} m^3.
  k_eff * V = {fmt(f, ' N')} against a weight of {fmt(w, ' N')}.
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shape.
""")


def capsule_on_box():
    r, h, rho, d = 0.03, 0.12, 1000.0, 0.002
    m = rho * (math.pi * r * r * h + 4.0 / 3.0 * math.pi * r**3)
    w = m * G
    v = segment_area(r, d) * h + cap_volume(r, d)
    k = round2(2.0 * w / v)
    stage = new_stage()
    ground(stage, k)
    body(stage, "/World/Capsule", (0.0, 0.0, r - d), density=rho)
    c = UsdGeom.Capsule.Define(stage, "/World/Capsule/Collider")
    c.CreateRadiusAttr(r)
    c.CreateHeightAttr(h)
    c.CreateAxisAttr(UsdGeom.Tokens.x)
    hydroelastic(c.GetPrim(), k, gap=GAP)
    f = k_eff(k, k) * v
    return text(stage, f"""
capsule_on_box: a capsule lying on its side (axis X) on a box: a long, narrow patch.
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/Capsule is dynamic (radius {r} m, cylinder length {h} m, density {rho:g} kg/m^3,
        mass {fmt(m, ' kg')}).
        /World/Ground is a static {GROUND[0]} x {GROUND[1]} x {GROUND[2]} m box whose top face is z = 0.
Penetration: the capsule's axis is at z = {r - d:g} m, {d * 1e3:g} mm into the box.
Stiffness: k = {k:.3g} N/m^3 on both shapes, k_eff = k/2 = {k_eff(k, k):.3g} N/m^3.
  Overlap: circular segment x length + the two end caps (one spherical cap):
  V = {segment_area(r, d):.4g} m^2 x {h} m + {cap_volume(r, d):.4g} m^3 = {v:.4g} m^3.
  k_eff * V = {fmt(f, ' N')} against a weight of {fmt(w, ' N')}.
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shape.
""")


def torus_on_box():
    major, minor, rho, d = 0.08, 0.025, 1000.0, 0.002
    verts, faces = torus_mesh(major, minor)
    a, b, c = (verts[faces[:, k]] for k in range(3))
    vol = float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)
    m = rho * vol
    w = m * G
    v = mesh_volume_below(verts + np.array([0.0, 0.0, minor - d]), faces, 0.0)
    v_smooth = 2.0 * math.pi * major * segment_area(minor, d)  # Pappus, smooth torus
    k = round2(2.0 * w / v)
    stage = new_stage()
    ground(stage, k)
    body(stage, "/World/Torus", (0.0, 0.0, minor - d), density=rho)
    mesh = UsdGeom.Mesh.Define(stage, "/World/Torus/Collider")
    mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*map(float, p)) for p in verts]))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(faces)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([int(i) for i in faces.ravel()]))
    mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    hydroelastic(mesh.GetPrim(), k, gap=GAP)
    f = k_eff(k, k) * v
    return text(stage, f"""
torus_on_box: a watertight triangle-mesh torus lying flat on a box: a ring-shaped patch.
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/Torus is dynamic: a Mesh of {len(verts)} vertices and {len(faces)} triangles (major radius
        {major} m, tube radius {minor} m, around +Z; mesh volume {vol:.4g} m^3, density {rho:g} kg/m^3,
        mass {fmt(m, ' kg')}).
        /World/Ground is a static {GROUND[0]} x {GROUND[1]} x {GROUND[2]} m box whose top face is z = 0.
Penetration: the lowest ring of vertices is at z = {-d:g} m, {d * 1e3:g} mm into the box.
Stiffness: k = {k:.3g} N/m^3 on both shapes, k_eff = k/2 = {k_eff(k, k):.3g} N/m^3.
  Overlap: the part of the mesh below z = 0, V = {v:.4g} m^3 (exact for the mesh, whose tube
  cross-section is a 16-gon standing on a vertex; a smooth torus would give
  2 pi R x circular segment = {v_smooth:.4g} m^3).
  k_eff * V = {fmt(f, ' N')} against a weight of {fmt(w, ' N')}.
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shape.
""")


def box_stack():
    a, rho = 0.1, 1000.0
    m = rho * a**3
    w = m * G
    k = 2.0e6
    ke = k_eff(k, k)
    # the interface under box i carries the boxes i..3
    depths = [n * w / (ke * a * a) for n in (3, 2, 1)]
    stage = new_stage()
    ground(stage, k)
    z_bottom = -depths[0]
    lines = []
    for i, name in enumerate(("Box1", "Box2", "Box3")):
        if i > 0:
            z_bottom -= depths[i]
        centre = z_bottom + a / 2.0
        body(stage, f"/World/{name}", (0.0, 0.0, centre), density=rho)
        hydroelastic(cube(stage, f"/World/{name}/Collider", a), k, gap=GAP)
        lines.append(f"  under {name}: carries {3 - i} box(es), d = {depths[i] * 1e3:.3g} mm, "
                     f"k_eff * V = {ke * a * a * depths[i]:.4g} N = {3 - i} x {w:.4g} N")
        z_bottom += a
    joined = "\n".join(lines)
    return text(stage, f"""
box_stack: three equal cubes stacked on a box; each interface carries the cubes above it.
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/Box1 (bottom), /World/Box2, /World/Box3 (top) are dynamic ({a} m edge, density
        {rho:g} kg/m^3, mass {fmt(m, ' kg')} each).
        /World/Ground is a static {GROUND[0]} x {GROUND[1]} x {GROUND[2]} m box whose top face is z = 0.
Stiffness: k = {k:.3g} N/m^3 on every shape, k_eff = k/2 = {ke:.3g} N/m^3; penetrations chosen so
  that k_eff x footprint x depth balances the load exactly:
{joined}
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shapes.
""")


def pinch():
    header, stage = _pinch_stage()
    return text(stage, header)


def _pinch_stage():
    a, rho, mu, d = 0.05, 800.0, 0.8, 0.002
    pad = (0.02, 0.03, 0.03)  # finger pad: thickness along X, then Y, Z
    m = rho * a**3
    w = m * G
    need = w / (2.0 * mu)  # normal force per jaw that friction needs to hold the box
    v = pad[1] * pad[2] * d
    k = round2(2.0 * (2.0 * need) / v)  # twice what is needed
    ke = k_eff(k, k)
    n = ke * v
    z = 0.3
    x_finger = a / 2.0 + pad[0] / 2.0 - d
    stage = new_stage()
    template_env(stage)
    mat = UsdShade.Material.Define(stage, "/World/PhysicsMaterials/Rubber")
    api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
    api.CreateStaticFrictionAttr(mu)
    api.CreateDynamicFrictionAttr(mu)
    gripper = UsdGeom.Xform.Define(stage, "/World/envs/env_0/Gripper").GetPrim()
    place(gripper, translate=(0.0, 0.0, z))
    UsdPhysics.ArticulationRootAPI.Apply(gripper)
    for name, x in (("LeftFinger", -x_finger), ("RightFinger", x_finger)):
        body(stage, f"/World/envs/env_0/Gripper/{name}", (x, 0.0, 0.0), density=1000.0, kinematic=True)
        p = UsdGeom.Cube.Define(stage, f"/World/envs/env_0/Gripper/{name}/Pad")
        p.CreateSizeAttr(1.0)
        place(p.GetPrim(), scale=pad)
        hydroelastic(p.GetPrim(), k)
        UsdShade.MaterialBindingAPI.Apply(p.GetPrim()).Bind(mat, UsdShade.Tokens.weakerThanDescendants, "physics")
    body(stage, "/World/envs/env_0/Box", (0.0, 0.0, z), density=rho)
    c = cube(stage, "/World/envs/env_0/Box/Collider", a)
    hydroelastic(c, k, gap=GAP)
    UsdShade.MaterialBindingAPI.Apply(c).Bind(mat, UsdShade.Tokens.weakerThanDescendants, "physics")
    return f"""
pinch: two parallel-jaw fingers pinch a box and hold it up by friction alone (no ground).
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/envs/env_0/Gripper (PhysicsArticulationRootAPI, at z = {z} m) holds two kinematic
        bodies, LeftFinger and RightFinger, each with a {pad[0]} x {pad[1]} x {pad[2]} m pad (a scaled Cube)
        at x = -/+{x_finger:g} m.
        /World/envs/env_0/Box is dynamic ({a} m cube, density {rho:g} kg/m^3, mass {fmt(m, ' kg')}).
        Every collider is bound to /World/PhysicsMaterials/Rubber (static = dynamic friction {mu}).
Penetration: each pad is {d * 1e3:g} mm into a side of the box.
Stiffness: k = {k:.3g} N/m^3 on every shape, k_eff = k/2 = {ke:.3g} N/m^3.
  Overlap per jaw (pad face x depth): V = {pad[1]} x {pad[2]} x {d} = {v:.4g} m^3, normal force
  k_eff * V = {fmt(n, ' N')} per jaw. Friction can hold 2 mu N = {fmt(2 * mu * n, ' N')}, about
  {2 * mu * n / w:.2g} x the weight {fmt(w, ' N')} (k chosen for twice the {fmt(need, ' N')} per jaw needed).
SDF: newton:sdfMaxResolution 64; newton:contactGap {GAP} m on the dynamic shape.
""", stage


def boxes_envs():
    a, rho, d = 0.1, 1000.0, 0.002
    m = rho * a**3
    w = m * G
    v = a * a * d
    k = round2(2.0 * w / v)
    size = (20.0, 20.0, 1.0)
    stage = new_stage()
    ground(stage, k, size=size, resolution=256)
    template_env(stage)
    body(stage, "/World/envs/env_0/Box", (0.0, 0.0, a / 2.0 - d), density=rho)
    hydroelastic(cube(stage, "/World/envs/env_0/Box/Collider", a), k, gap=GAP)
    f = k_eff(k, k) * v
    return text(stage, f"""
boxes_envs: a box resting on a global ground, in a template env meant to be replicated:
load it with num_envs = E (hydro.scene.usd_io.load_usd(path, num_envs=E, env_spacing=2.0)) to get
/World/envs/env_0 ... env_(E-1) on a square grid, all resting on the same ground and sharing
their SDFs.
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/envs/env_0/Box is dynamic ({a} m cube, density {rho:g} kg/m^3, mass {fmt(m, ' kg')}).
        /World/Ground is a static, global {size[0]:g} x {size[1]:g} x {size[2]:g} m box whose top face is z = 0: it
        covers 100 envs at the default 2 m spacing (a 10 x 10 grid within +-9 m). Its SDF uses
        newton:sdfMaxResolution 256 (about 8 cm voxels; its top face is flat, so the field is
        exact there) and the box 64.
Penetration: the box's bottom face is at z = {-d:g} m, {d * 1e3:g} mm into the ground.
Stiffness: k = {k:.3g} N/m^3 on both shapes, k_eff = k/2 = {k_eff(k, k):.3g} N/m^3.
  Overlap (footprint x depth): V = {v:.4g} m^3; k_eff * V = {fmt(f, ' N')} against a weight of {fmt(w, ' N')}.
SDF: newton:contactGap {GAP} m on the dynamic shape.
""")


# ------------------------------------------------------------------------------------------
# scenes on the default contact path (point contacts; a ground plane)

K_POINT = 1.0e5  # N/m, hydro's default newton:contactStiffness (DEFAULT_CONTACT_STIFFNESS)


def ground_plane(stage, path="/World/Ground"):
    """A static, infinite collision plane z = 0 (UsdGeom.Plane, axis Z): point contacts only."""
    g = UsdGeom.Plane.Define(stage, path)
    g.CreateAxisAttr(UsdGeom.Tokens.z)
    UsdPhysics.CollisionAPI.Apply(g.GetPrim())
    return g.GetPrim()


def collider(prim):
    UsdPhysics.CollisionAPI.Apply(prim)
    return prim


def primitives_on_plane():
    rho = 1000.0
    ke = K_POINT / 2.0  # every shape and the plane at the default stiffness: springs in series
    stage = new_stage()
    ground_plane(stage)
    a = 0.1
    m_box = rho * a**3
    d_box = m_box * G / (4.0 * ke)  # four corners carry the weight
    body(stage, "/World/Box", (-0.3, 0.0, a / 2.0 - d_box), density=rho)
    collider(cube(stage, "/World/Box/Collider", a))
    r = 0.05
    m_sph = rho * 4.0 / 3.0 * math.pi * r**3
    d_sph = m_sph * G / ke  # one point
    body(stage, "/World/Sphere", (0.0, 0.0, r - d_sph), density=rho)
    s = UsdGeom.Sphere.Define(stage, "/World/Sphere/Collider")
    s.CreateRadiusAttr(r)
    collider(s.GetPrim())
    rc, hc = 0.03, 0.15
    m_cap = rho * (math.pi * rc * rc * hc + 4.0 / 3.0 * math.pi * rc**3)
    d_cap = m_cap * G / (2.0 * ke)  # its two end spheres
    body(stage, "/World/Capsule", (0.3, 0.0, rc - d_cap), density=rho)
    c = UsdGeom.Capsule.Define(stage, "/World/Capsule/Collider")
    c.CreateRadiusAttr(rc)
    c.CreateHeightAttr(hc)
    c.CreateAxisAttr(UsdGeom.Tokens.x)
    collider(c.GetPrim())
    return text(stage, f"""
primitives_on_plane: a box, a sphere and a capsule (lying along X) resting on a ground plane: the
default contact path (point contacts) only; no shape is hydroelastic.
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies: /World/Box ({a} m cube, mass {fmt(m_box, ' kg')}), /World/Sphere (R = {r} m, mass {fmt(m_sph, ' kg')}) and
        /World/Capsule (R = {rc} m, height {hc} m, mass {fmt(m_cap, ' kg')}) are dynamic, density {rho:g} kg/m^3.
        /World/Ground is a static UsdGeom.Plane (axis Z, infinite) through the origin.
Stiffness: no material is bound, so every shape has the default newton:contactStiffness
  {K_POINT:.3g} N/m; a pair's springs in series give k_eff = {ke:.3g} N/m per contact point.
Penetration: each body sinks so that its contacts carry its weight m g = n k_eff d at the
  authored pose: the box's 4 corners d = {d_box * 1e6:.4g} um, the sphere's lowest point
  d = {d_sph * 1e6:.4g} um, the capsule's 2 end spheres d = {d_cap * 1e6:.4g} um.
""")


def pinch_over_plane():
    header, stage = _pinch_stage()
    ground_plane(stage)
    return text(stage, header.replace("pinch: two parallel-jaw fingers pinch a box and hold it up by friction alone (no ground).",
                                      "pinch_over_plane: two parallel-jaw fingers pinch a box above a ground plane. The fingers\n"
                                      "and the box are hydroelastic (their pair takes the hydroelastic path); /World/Ground is a\n"
                                      "UsdGeom.Plane at z = 0 (point contacts if the box falls)."))


def mixed_pile():
    rho, k_h = 500.0, 2.0e7
    stage = new_stage()
    ground_plane(stage)
    kinds = ("Cube", "Sphere", "Capsule", "Cylinder", "Cone", "Ellipsoid")
    rows = []
    n = 0
    for layer in range(3):
        for i in range(2):
            for j in range(2):
                kind = kinds[n % len(kinds)]
                hyd = n % 2 == 0
                x = -0.06 + 0.12 * i + 0.02 * layer
                y = -0.06 + 0.12 * j - 0.015 * layer
                z = 0.08 + 0.12 * layer
                path = f"/World/Pile/Body{n:02d}"
                body(stage, path, (x, y, z), density=rho)
                cpath = path + "/Collider"
                if kind == "Cube":
                    prim = cube(stage, cpath, 0.08)
                elif kind == "Sphere":
                    g = UsdGeom.Sphere.Define(stage, cpath)
                    g.CreateRadiusAttr(0.04)
                    prim = g.GetPrim()
                elif kind == "Ellipsoid":  # a non-uniformly scaled sphere
                    g = UsdGeom.Sphere.Define(stage, cpath)
                    g.CreateRadiusAttr(1.0)
                    place(g.GetPrim(), scale=(0.05, 0.035, 0.03))
                    prim = g.GetPrim()
                else:
                    g = getattr(UsdGeom, kind).Define(stage, cpath)
                    g.CreateRadiusAttr(0.035)
                    g.CreateHeightAttr(0.06)
                    g.CreateAxisAttr(UsdGeom.Tokens.y if layer % 2 else UsdGeom.Tokens.z)
                    prim = g.GetPrim()
                if hyd:
                    hydroelastic(prim, k_h, gap=GAP, resolution=32)
                else:
                    collider(prim)
                rows.append(f"  {path}: {kind.lower()}{' (hydroelastic)' if hyd else ''} at ({x:.3f}, {y:.3f}, {z:.3f})")
                n += 1
    listing = "\n".join(rows)
    return text(stage, f"""
mixed_pile: {n} mixed primitives (box, sphere, capsule, cylinder, cone, ellipsoid) in three layers,
dropped on a ground plane; every other one is hydroelastic. Two hydroelastic shapes that touch
take the hydroelastic path; every other pair (the plane, mixed pairs, plain pairs) gets point
contacts. The shapes start apart (nothing touches at the authored pose).
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Bodies (all dynamic, density {rho:g} kg/m^3):
{listing}
/World/Ground is a static UsdGeom.Plane (axis Z) at z = 0.
Stiffness: hydroelastic shapes newton:hydroelasticStiffness {k_h:.3g} N/m^3 (newton:sdfMaxResolution 32,
  newton:contactGap {GAP} m); point contacts the default newton:contactStiffness {K_POINT:.3g} N/m.
""")


def terrain_heights(n=12, half=0.6, flat=0.2, ridge=0.06):
    """(n, n) heights over [−half, half]²: flat (z = 0) where max(|x|, |y|) <= ``flat``, rising
    smoothly to ridges of ``ridge`` m beyond (z = ridge · sin²(π (max(|x|,|y|) − flat) / 0.4))."""
    x = np.linspace(-half, half, n)
    xx, yy = np.meshgrid(x, x)
    r = np.maximum(np.abs(xx), np.abs(yy))
    return np.round(np.where(r <= flat + 1e-12, 0.0, ridge * np.sin(np.pi * (r - flat) / 0.4) ** 2), 6)


def box_on_heightfield():
    from hydro.geometry import Heightfield  # noqa: PLC0415  (hydro writes the HeightField prim it reads)
    from hydro.scene.usd_io import write_heightfield  # noqa: PLC0415

    rho = 1000.0
    ke = K_POINT / 2.0
    stage = new_stage()
    half = 0.6
    heights = terrain_heights(half=half)
    terrain = write_heightfield(stage, "/World/Terrain", Heightfield(heights, hx=half, hy=half, thickness=0.1))
    UsdPhysics.CollisionAPI.Apply(terrain)
    a = 0.1
    m_box = rho * a**3
    d_box = m_box * G / (4.0 * ke)  # four corners carry the weight
    body(stage, "/World/Box", (0.0, 0.0, a / 2.0 - d_box), density=rho)
    collider(cube(stage, "/World/Box/Collider", a))
    return text(stage, f"""
box_on_heightfield: a box resting on a heightfield terrain (the default contact path: point
contacts; a heightfield is never hydroelastic).
Units: SI (m, kg, s); Z-up; gravity 9.81 m/s^2 along -Z.
Terrain: /World/Terrain is a static HeightField prim (PhysicsCollisionAPI) with hydro's
  attributes hydro:heightfield:* (docs/usd.md): {heights.shape[0]} x {heights.shape[1]} heights over
  [-{half}, {half}] m in x and y, flat (z = 0) inside |x|, |y| <= 0.2 m, rising to 0.06 m ridges beyond;
  a 0.1 m thick slab below its lowest point.
Body: /World/Box ({a} m cube, density {rho:g} kg/m^3, mass {fmt(m_box, ' kg')}) on the flat middle.
Stiffness: no material is bound: every shape has the default newton:contactStiffness
  {K_POINT:.3g} N/m, k_eff = {ke:.3g} N/m per contact point; the box's 4 corners sink
  d = m g / (4 k_eff) = {d_box * 1e6:.4g} um at the authored pose.
""")


SCENES = {
    "sphere_on_box": sphere_on_box,
    "cube_on_box": cube_on_box,
    "two_spheres": two_spheres,
    "capsule_on_box": capsule_on_box,
    "torus_on_box": torus_on_box,
    "box_stack": box_stack,
    "pinch": pinch,
    "boxes_envs": boxes_envs,
    "primitives_on_plane": primitives_on_plane,
    "pinch_over_plane": pinch_over_plane,
    "mixed_pile": mixed_pile,
    "box_on_heightfield": box_on_heightfield,
}


def scene_texts() -> dict:
    """File name → text of every shipped scene."""
    return {f"{name}.usda": make() for name, make in SCENES.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if a checked-in scene differs from what this script writes")
    p.add_argument("--out", default=SCENES_DIR, help="folder to write to (default: scenes/)")
    args = p.parse_args(argv)
    stale = []
    os.makedirs(args.out, exist_ok=True)
    for name, content in scene_texts().items():
        path = os.path.join(args.out, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != content:
            stale.append(name)
            if not args.check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(content)
    if args.check:
        if stale:
            print(f"stale scenes (run python scripts/make_scenes.py): {', '.join(stale)}", file=sys.stderr)
            return 1
        return 0
    print(f"wrote {len(stale)} scene(s) to {os.path.normpath(args.out)}" + (f": {', '.join(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
