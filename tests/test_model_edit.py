"""Model.with_sdf_resolution: a new model with one SDF rebuilt; the old model is left as it was."""

import numpy as np
import pytest

from hydro.geometry import Box, Sphere
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings

RADIUS = 0.05


def _model(*, build_sdfs=True):
    """Two balls sharing one SDF (a target voxel size set), a box with its own, a shape with none."""
    b = ModelBuilder()
    ball = SDFSettings(max_resolution=16, target_voxel_size=0.01)
    for k in range(2):
        body = b.add_body(f"/World/Ball{k}", [k * 1.0, 0, 0, 0, 0, 0, 1])
        b.add_shape(f"/World/Ball{k}/C", Sphere(RADIUS), body=body, hydroelastic=True, sdf=ball)
    b.add_shape("/World/Box", Box((0.2, 0.2, 0.1)), local_pose=[0, 0, -1, 0, 0, 0, 1], hydroelastic=True,
                sdf=SDFSettings(max_resolution=16))
    b.add_shape("/World/Plain", Sphere(RADIUS), local_pose=[0, 3, 0, 0, 0, 0, 1])  # no SDF
    return b.finalize(build_sdfs=build_sdfs)


def test_the_shared_sdf_is_rebuilt_and_everything_else_is_shared():
    old = _model()
    before = dict(sdfs=list(old.sdfs), specs=list(old.sdf_specs), settings=list(old.shape_sdf_settings),
                  pack=old.sdf_pack, shape_sdf=old.shape_sdf.copy())
    new = old.with_sdf_resolution(1, 32)
    # the old model is untouched: same lists, same objects
    assert old.sdfs == before["sdfs"] and old.sdf_specs == before["specs"]
    assert old.shape_sdf_settings == before["settings"] and old.sdf_pack is before["pack"]
    np.testing.assert_array_equal(old.shape_sdf, before["shape_sdf"])
    assert old.sdf_specs[0].settings.target_voxel_size == 0.01
    # both balls share the rebuilt SDF: 32 voxels along the longest axis, no target voxel size
    ball = new.sdfs[new.shape_sdf[0]]
    assert new.shape_sdf[0] == new.shape_sdf[1] == old.shape_sdf[0]
    assert max(ball.resolution) == 32 and max(old.sdfs[old.shape_sdf[0]].resolution) != 32
    assert ball.settings == new.sdf_specs[new.shape_sdf[0]].settings
    assert ball.settings.max_resolution == 32 and ball.settings.target_voxel_size is None
    assert new.shape_sdf_settings[0] == new.shape_sdf_settings[1] == ball.settings
    assert new.sdf_specs[new.shape_sdf[0]].extra_padding == old.sdf_specs[old.shape_sdf[0]].extra_padding
    # the box keeps its SDF, the shape without one keeps none
    box = new.shape_sdf[2]
    assert new.sdfs[box] is old.sdfs[box] and new.shape_sdf_settings[2] is old.shape_sdf_settings[2]
    assert new.shape_sdf[3] == -1
    # a fresh pack of the new SDFs; the arrays and geometry are the old model's
    assert new.sdf_pack is not old.sdf_pack and new.sdf_pack.sdfs == new.sdfs
    assert new.shape_geometry is old.shape_geometry and new.shape_stiffness is old.shape_stiffness
    # the rebuilt field is a sphere of the same radius, finer than before
    rng = np.random.default_rng(7)
    d = rng.normal(size=(200, 3))
    pts = d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.5 * RADIUS, 1.5 * RADIUS, size=(200, 1))
    exact = np.linalg.norm(pts, axis=1) - RADIUS
    assert np.max(np.abs(ball.sample(pts) - exact)) < 0.25 * ball.voxel_size


def test_an_unbuilt_model_gets_the_new_spec_and_builds_it_later():
    old = _model(build_sdfs=False)
    new = old.with_sdf_resolution(0, 24)
    assert new.sdfs == [] and old.sdf_specs[0].settings.max_resolution == 16
    assert new.sdf_specs[0].settings.max_resolution == 24
    new.build_sdfs()
    assert max(new.sdfs[new.shape_sdf[1]].resolution) == 24 and old.sdfs == []


@pytest.mark.parametrize("shape, resolution, message", [
    (3, 32, "shape /World/Plain has no SDF"),
    (4, 32, r"shape must be an index in \[0, 3\]"),
    (True, 32, "shape must be an index"),
    (2, 20, "shape /World/Box: max_resolution must be a positive multiple of 8"),
])
def test_bad_requests_name_the_shape_and_the_rule(shape, resolution, message):
    model = _model(build_sdfs=False)
    with pytest.raises(ValueError, match=message):
        model.with_sdf_resolution(shape, resolution)
