"""Meshes as users have them: welding, closedness, multi-piece solids, winding numbers, signs.

Every sign is checked against the winding number of the mesh as given, summed directly over
its triangles (``winding_number_exact``), never against hydro's own distance.
"""

import warnings

import numpy as np
import pytest
import trimesh

from hydro.errors import InputError
from hydro.geometry import Mesh
from hydro.geometry.mesh_check import (MeshWarning, edge_topology, inspect_mesh, mesh_solid, size_warnings, weld)
from hydro.geometry.mesh_distance import MeshDistance
from hydro.geometry.mesh_winding import WindingNumber, winding_number_exact
from hydro.sdf import SDFSettings, build_sdf


def _box(size=(0.1, 0.1, 0.1), at=(0.0, 0.0, 0.0)):
    tm = trimesh.creation.box(size)
    tm.apply_translation(at)
    return np.asarray(tm.vertices), np.asarray(tm.faces)


def _soup(*parts, name="mesh"):
    """One Mesh of several (vertices, faces) parts, each triangle with its own three vertices (as STL)."""
    tris = np.concatenate([v[f] for v, f in parts])
    return Mesh(tris.reshape(-1, 3), np.arange(3 * len(tris)).reshape(-1, 3), name=name)


def _union_of_boxes_phi(points, boxes):
    """Exact outside distance of a union of axis-aligned boxes (min of the boxes' distances) and
    whether each point is inside one of them."""
    d = []
    for size, at in boxes:
        q = np.abs(points - np.asarray(at)) - 0.5 * np.asarray(size)
        outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
        d.append(outside + np.minimum(q.max(axis=1), 0.0))
    d = np.min(d, axis=0)
    return d


def _wn_inside(mesh, pts):
    return winding_number_exact(mesh.vertices[mesh.faces], pts) > 0.5


# ---------------------------------------------------------------------------------------------
# Welding and topology


def test_weld_merges_stl_style_vertices_and_reports_it():
    mesh = _soup(_box())
    assert len(mesh.vertices) == 36
    v, f, report = weld(mesh.vertices, mesh.faces)
    assert len(v) == 8 and len(f) == 12
    assert report.vertices_in == 36 and report.vertices_out == 8 and report.collapsed_faces == 0
    assert "36 vertices into 8" in report.summary()
    assert edge_topology(f, len(v)).closed
    # the loader keeps the file's vertices; the solid welds them: an STL box is accepted
    assert mesh.is_closed()
    assert mesh.volume() == pytest.approx(1e-3, rel=1e-12)


def test_weld_tolerance_is_relative_to_the_mesh_size():
    rng = np.random.default_rng(3)
    for scale in (1e-3, 1.0, 1e3):
        mesh = _soup(_box(size=(scale, scale, scale)))
        jitter = rng.uniform(-1, 1, mesh.vertices.shape) * 1e-8 * scale  # far below 1e-6 of the diagonal
        v, f, _ = weld(mesh.vertices + jitter, mesh.faces)
        assert len(v) == 8, scale
        gap = rng.uniform(-1, 1, mesh.vertices.shape) * 1e-4 * scale  # far above it: kept apart
        v, f, _ = weld(mesh.vertices + gap, mesh.faces)
        assert len(v) == 36, scale


def test_welding_drops_collapsed_faces():
    v, f = _box()
    v = np.concatenate([v, v[:1] + 1e-12])  # a sliver triangle on vertex 0 and its near copy
    f = np.concatenate([f, [[0, 8, 1]]])
    _, f2, report = weld(v, f)
    assert report.collapsed_faces == 1 and len(f2) == 12


def test_edge_topology_names_holes_and_inconsistent_winding():
    v, f = _box()
    topo = edge_topology(f[:-1], len(v))  # one triangle missing: a 3-edge hole
    assert not topo.closed and topo.boundary_edges == 3 and topo.boundary_loops == 1
    assert "3 boundary edge(s) in 1 hole(s)" in topo.problems()
    flipped = f.copy()
    flipped[0] = flipped[0, ::-1]
    topo = edge_topology(flipped, len(v))
    assert not topo.closed and topo.misoriented_edges == 3
    assert any("wound inconsistently" in p for p in topo.problems())


# ---------------------------------------------------------------------------------------------
# Refusal messages name the fix


@pytest.mark.parametrize("cut", ["hole", "flipped"])
def test_open_mesh_is_refused_for_hydroelastic_with_the_fix(cut):
    v, f = _box()
    if cut == "hole":
        f = f[:-2]  # one side of the box missing
    else:
        f = f.copy()
        f[3] = f[3, ::-1]
    mesh = Mesh(v, f, name="part.stl")
    for call in (mesh.check_watertight, lambda: build_sdf(mesh, SDFSettings(max_resolution=16)),
                 lambda: MeshDistance(mesh)):
        with pytest.raises(InputError) as info:
            call()
        text = str(info.value)
        if cut == "flipped":  # closed: reorienting the face is the fix, and the message says only that
            assert "'part.stl' is closed, but 1 face(s) wound inconsistently" in text
            assert "`hydro mesh repair PATH -o OUT` fixes that" in text and "not watertight" not in text
            continue
        assert "'part.stl' is not watertight" in text
        assert "Fix:" in text and "hydro mesh repair" in text and "convexHull" in text and "point" in text
    check = inspect_mesh(mesh)
    assert not check.hydroelastic_ok and "hydroelastic REFUSED" in check.summary() and "hydro mesh repair" in check.summary()


def test_inward_wound_mesh_is_refused_with_the_fix():
    v, f = _box()
    with pytest.raises(InputError, match="no positive volume.*hydro mesh repair"):
        Mesh(v, f[:, ::-1], name="inside-out").check_watertight()


# ---------------------------------------------------------------------------------------------
# Winding numbers: the reference every sign is checked against


def _open_hemisphere():
    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.05)
    keep = tm.triangles_center[:, 2] > 0.0
    return Mesh(np.asarray(tm.vertices), np.asarray(tm.faces)[keep], name="hemisphere")


def test_exact_winding_number_of_a_closed_mesh_is_0_or_1():
    v, f = _box()
    rng = np.random.default_rng(0)
    pts = rng.uniform(-0.1, 0.1, (500, 3))
    w = winding_number_exact(v[f], pts)
    inside = np.all(np.abs(pts) < 0.05, axis=1)
    np.testing.assert_allclose(w, inside.astype(float), atol=1e-9)


def test_fast_winding_number_stays_within_its_error_bound():
    rng = np.random.default_rng(1)
    for mesh in (Mesh.from_trimesh(trimesh.creation.icosphere(subdivisions=4, radius=0.05)), _open_hemisphere()):
        wn = WindingNumber.of_mesh(mesh, node_tolerance=1e-3)
        pts = rng.uniform(-0.08, 0.08, (2000, 3))
        w, bound = wn.evaluate(pts)
        exact = wn.exact(pts)
        assert np.all(np.abs(w - exact) <= bound + 1e-12)
        assert np.any(bound > 0.0)  # the tree approximated something


@pytest.mark.parametrize("which", ["open hemisphere", "two overlapping cubes", "hollow box", "soup"])
def test_inside_matches_the_exact_winding_number(which):
    rng = np.random.default_rng(2)
    if which == "open hemisphere":
        mesh = _open_hemisphere()
    elif which == "two overlapping cubes":
        mesh = _soup(_box(), _box(at=(0.05, 0.03, 0.02)))
    elif which == "hollow box":
        v, f = _box(size=(0.04, 0.04, 0.04))
        outer = _box()
        mesh = Mesh(np.concatenate([outer[0], v]), np.concatenate([outer[1], f[:, ::-1] + 8]), name="hollow")
    else:  # a random soup of triangles: w takes any value
        mesh = Mesh(rng.uniform(-0.05, 0.05, (60, 3)), rng.integers(0, 60, (40, 3)), name="soup")
    pts = rng.uniform(-0.1, 0.12, (3000, 3))
    exact = winding_number_exact(mesh.vertices[mesh.faces], pts)
    clear = np.abs(exact - 0.5) > 1e-6
    inside = WindingNumber.of_mesh(mesh).inside(pts)
    np.testing.assert_array_equal(inside[clear], exact[clear] > 0.5)


# ---------------------------------------------------------------------------------------------
# Solids of several pieces: the sign is right everywhere, against the winding number


PIECES = {
    "overlapping": [((0.1, 0.1, 0.1), (0, 0, 0)), ((0.1, 0.1, 0.1), (0.05, 0.03, 0.02))],
    "touching (convex decomposition)": [((0.1, 0.1, 0.1), (0, 0, 0)), ((0.1, 0.06, 0.04), (0.1, 0.0, 0.0))],
    "one inside another": [((0.1, 0.1, 0.1), (0, 0, 0)), ((0.04, 0.04, 0.04), (0.01, 0.0, 0.0))],
    "apart": [((0.1, 0.1, 0.1), (0, 0, 0)), ((0.05, 0.05, 0.05), (0.2, 0.0, 0.0))],
    "coplanar bottoms": [((0.1, 0.1, 0.1), (0, 0, 0)), ((0.1, 0.1, 0.1), (0.05, 0.05, 0.0))],
}


@pytest.mark.parametrize("name", list(PIECES))
def test_solid_sign_and_distance_of_pieces(name):
    boxes = PIECES[name]
    mesh = _soup(*[_box(size, at) for size, at in boxes], name=name)
    solid = mesh.solid()
    assert solid.sign == "pseudonormal"
    assert solid.merged == (name != "apart")
    rng = np.random.default_rng(4)
    pts = rng.uniform(-0.1, 0.3 if name == "apart" else 0.2, (4000, 3))
    exact = _union_of_boxes_phi(pts, boxes)
    inside = _wn_inside(mesh, pts)
    assert np.array_equal(inside, exact < 0.0)
    for sign in ("solid", "pseudonormal", "winding"):
        d = MeshDistance(mesh, sign=sign).signed_distance(pts)
        np.testing.assert_array_equal(d < 0.0, inside, err_msg=sign)
    d = MeshDistance(mesh).signed_distance(pts)
    out = ~inside
    # outside: the exact distance to the union; the vertices the boolean engine creates where the
    # pieces cross are rounded to float32 about the centre (~1e-7 of the size)
    atol = 1e-7 * 0.2
    np.testing.assert_allclose(d[out], exact[out], atol=atol)
    # inside: no false zero at the pieces' inner faces (the union's depth, >= each box's own)
    assert np.all(d[inside] <= exact[inside] + atol)
    # the solid's volume counts overlaps once
    u = trimesh.boolean.union([trimesh.creation.box(s).apply_translation(a) for s, a in boxes], engine="manifold")
    assert solid.volume == pytest.approx(u.volume, rel=1e-6)


def test_shared_face_is_not_a_false_zero():
    """Two cubes sharing a face (a convex decomposition): at the shared face's centre the depth is
    the distance to the outer surface, not zero."""
    mesh = _soup(_box(), _box(at=(0.1, 0.0, 0.0)), name="pair")
    d = MeshDistance(mesh).signed_distance(np.array([[0.05, 0.0, 0.0], [0.05, 0.01, 0.0]]))
    np.testing.assert_allclose(d, [-0.05, -0.04], atol=1e-12)


def test_cavity_is_subtracted():
    v, f = _box(size=(0.04, 0.04, 0.04))
    outer = _box()
    mesh = Mesh(np.concatenate([outer[0], v]), np.concatenate([outer[1], f[:, ::-1] + 8]), name="hollow")
    solid = mesh.solid()
    assert solid.cavities == 1
    assert solid.volume == pytest.approx(1e-3 - 0.04**3, rel=1e-9)
    d = MeshDistance(mesh).signed_distance(np.array([[0.0, 0.0, 0.0], [0.03, 0.0, 0.0]]))
    np.testing.assert_allclose(d, [0.02, -0.01], atol=1e-12)


def test_open_mesh_winding_sign_for_the_point_contact_path():
    mesh = _open_hemisphere()
    rng = np.random.default_rng(5)
    pts = rng.uniform(-0.08, 0.08, (3000, 3))
    exact = winding_number_exact(mesh.vertices[mesh.faces], pts)
    clear = np.abs(exact - 0.5) > 1e-6
    d = MeshDistance(mesh, sign="winding").signed_distance(pts)
    unsigned = MeshDistance(mesh, sign="unsigned").signed_distance(pts)
    assert np.all(unsigned >= 0.0)
    np.testing.assert_allclose(np.abs(d), unsigned, atol=0.0)
    np.testing.assert_array_equal((d < 0.0)[clear], (exact > 0.5)[clear])
    # the SDF build takes it when asked, with the same sign
    sdf = build_sdf(mesh, SDFSettings(max_resolution=32), allow_open=True)
    assert any("open mesh" in n for n in sdf.notes)
    far = unsigned > 2.0 * sdf.voxel_size
    inbox = np.all((pts >= sdf.box_lo) & (pts <= sdf.box_hi), axis=1)
    # away from the triangles, an open mesh's sign flips where w crosses 1/2 (the field jumps
    # there): the interpolated field is right where the whole cube p ± voxel is on p's side
    h = sdf.voxel_size
    corners = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)])
    w_corners = winding_number_exact(mesh.vertices[mesh.faces], (pts[:, None, :] + corners[None]).reshape(-1, 3))
    same_side = np.all((w_corners.reshape(len(pts), 8) > 0.5) == (exact > 0.5)[:, None], axis=1)
    sel = far & inbox & clear & same_side
    assert sel.sum() > 1000
    np.testing.assert_array_equal(sdf.sample(pts[sel]) < 0.0, exact[sel] > 0.5)


def test_sign_mode_is_checked():
    with pytest.raises(ValueError, match="sign must be one of"):
        MeshDistance(_soup(_box()), sign="maybe")


def test_sdf_of_a_multi_piece_mesh_has_the_winding_sign():
    boxes = PIECES["overlapping"] + [((0.03, 0.2, 0.03), (0.0, 0.05, 0.0))]
    mesh = _soup(*[_box(s, a) for s, a in boxes], name="assembly")
    sdf = build_sdf(mesh, SDFSettings(max_resolution=48))
    assert any("merged into their union" in n for n in sdf.notes)
    rng = np.random.default_rng(6)
    pts = rng.uniform(sdf.box_lo, sdf.box_hi, (20000, 3))
    exact = _union_of_boxes_phi(pts, boxes)
    far = np.abs(exact) > sdf.voxel_size
    wrong = (sdf.sample(pts[far]) < 0.0) != _wn_inside(mesh, pts[far])
    assert wrong.sum() == 0
    # and the reference the report compares with (Mesh.phi) is signed by the winding number too
    phi = mesh.phi(pts[:2000])
    np.testing.assert_array_equal(phi < 0.0, _wn_inside(mesh, pts[:2000]))


def test_stl_file_round_trip(tmp_path):
    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.04)
    path = tmp_path / "ball.stl"
    tm.export(path)
    mesh = Mesh.load(str(path))
    assert len(mesh.vertices) == 3 * len(mesh.faces)  # STL: three vertices per triangle, as read
    solid = mesh.solid()
    assert solid.weld.vertices_out == len(tm.vertices)
    assert solid.volume == pytest.approx(tm.volume, rel=1e-6)
    mm = Mesh.load(str(path), scale=1000.0)
    assert np.ptp(mm.vertices[:, 0]) == pytest.approx(1000.0 * np.ptp(tm.vertices[:, 0]), rel=1e-6)
    with pytest.raises(InputError, match="scale"):
        Mesh.load(str(path), scale=0.0)


# ---------------------------------------------------------------------------------------------
# Units and sizes


def test_size_warnings():
    assert size_warnings(_soup(_box())) == []
    mm = _soup(_box(size=(100.0, 60.0, 40.0)), name="part_mm.stl")  # millimetres read as metres
    (message,) = size_warnings(mm)
    assert "implausibly large" in message and "millimetres" in message and "scale=0.001" in message
    (message,) = size_warnings(_soup(_box(size=(1e-4, 1e-4, 1e-4))))
    assert "implausibly small" in message
    (message,) = size_warnings(_soup(_box()), scene_size=0.0001)
    assert "times the typical shape" in message
    (message,) = size_warnings(_soup(_box()), voxel=0.01, narrow_band_inner=-0.005, narrow_band_outer=0.1)
    assert "wider than the narrow band" in message
    assert size_warnings(_soup(_box()), voxel=0.001, narrow_band_inner=-0.005, narrow_band_outer=0.1) == []


def test_build_warns_for_a_mesh_in_millimetres_and_a_voxel_wider_than_the_band():
    mesh = _soup(_box(size=(100.0, 60.0, 40.0)), name="part_mm.stl")
    with pytest.warns(MeshWarning) as record:
        build_sdf(mesh, SDFSettings(max_resolution=16))
    text = " ".join(str(r.message) for r in record)
    assert "implausibly large" in text and "wider than the narrow band" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)
        build_sdf(_soup(_box()), SDFSettings(max_resolution=16))  # a 10 cm part: no warning


def test_mesh_solid_of_an_open_mesh_names_what_welding_changed():
    v, f = _box()
    mesh = _soup((v, f[:-1]), name="holed.stl")
    with pytest.raises(InputError) as info:
        mesh_solid(mesh)
    assert "welded 33 vertices into 8" in str(info.value)


def test_when_the_union_cannot_be_formed_the_sign_still_comes_from_winding_numbers(monkeypatch):
    import hydro.geometry.mesh_check as mesh_check

    monkeypatch.setattr(mesh_check, "_union_of_shells", lambda *a: None)
    boxes = PIECES["overlapping"]
    mesh = _soup(*[_box(s, a) for s, a in boxes], name="no union")
    solid = mesh.solid()
    assert solid.sign == "winding" and not solid.merged
    assert any("could not be formed" in n for n in solid.notes)
    rng = np.random.default_rng(7)
    pts = rng.uniform(-0.1, 0.2, (3000, 3))
    d = MeshDistance(mesh).signed_distance(pts)
    np.testing.assert_array_equal(d < 0.0, _wn_inside(mesh, pts))


def test_a_mesh_out_of_scale_with_its_scene_is_named_when_the_model_is_built():
    from hydro.geometry import Box
    from hydro.scene.model import ModelBuilder

    def scene(mesh_size):
        b = ModelBuilder()
        body = b.add_body("/World/Part", pose=(0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0))
        b.add_shape("/World/Part/mesh", _soup(_box(size=mesh_size), name="part.stl"), body=body)
        b.add_shape("/World/Block", Box((0.1, 0.1, 0.05)))
        b.add_shape("/World/Cup", Box((0.08, 0.08, 0.1)))
        return b

    with pytest.warns(MeshWarning, match=r"/World/Part/mesh: mesh 'part.stl' is 12 m long, .*times the typical shape"):
        scene((12.0, 6.0, 4.0)).finalize(build_sdfs=False)  # centimetres read as metres, beside 10 cm parts
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)
        scene((0.12, 0.06, 0.04)).finalize(build_sdfs=False)
