"""Small scenes for pipeline tests, built without USD."""

from types import SimpleNamespace

import numpy as np

from hydro.sdf import SDFPack, SDFSettings, build_sdf
from hydro.transforms import quat_from_axis_angle


def shapes(geometries, *, stiffness=1e9, resolution=64, margin=0.0, gap=0.0, env=None, body=None, settings=None):
    """A minimal collision model: every shape hydroelastic, each on its own body."""
    n = len(geometries)
    margin = np.broadcast_to(np.asarray(margin, dtype=float), (n,)).copy()
    gap = np.broadcast_to(np.asarray(gap, dtype=float), (n,)).copy()
    settings = settings or SDFSettings(max_resolution=resolution)
    cache = {}
    sdfs, index = [], []
    for g, m, gp in zip(geometries, margin, gap):
        key = (g.key(), m + gp)
        if key not in cache:
            cache[key] = len(sdfs)
            sdfs.append(build_sdf(g, settings, extra_padding=m + gp))
        index.append(cache[key])
    return SimpleNamespace(
        shape_path=[f"/World/shape_{i}" for i in range(n)],
        shape_hydroelastic=np.ones(n, dtype=bool),
        shape_sdf=np.array(index, dtype=np.int32),
        shape_stiffness=np.broadcast_to(np.asarray(stiffness, dtype=float), (n,)).copy(),
        shape_margin=margin,
        shape_gap=gap,
        shape_env=np.zeros(n, np.int32) if env is None else np.asarray(env, np.int32),
        shape_body=np.arange(n, dtype=np.int32) if body is None else np.asarray(body, np.int32),
        sdfs=sdfs,
        sdf_pack=SDFPack(sdfs),
    )


def pose(position=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), angle=0.0):
    q = quat_from_axis_angle(np.asarray(axis, float), angle)
    return np.concatenate([np.asarray(position, float), q])


def rigid_motion(poses, position, axis, angle):
    """Apply one rigid motion (rotate about the origin, then translate) to several poses."""
    from hydro.transforms import pose_compose

    m = pose(position, axis, angle)
    return np.array([pose_compose(m, p) for p in poses])
