"""Shared helpers of the viewer tests: headless Polyscope (EGL) and picture checks."""

import os

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
SCENES = sorted(f for f in os.listdir(os.path.join(ROOT, "scenes")) if f.endswith(".usda"))
#: Shipped scenes without a hydroelastic patch at the authored pose (point contacts only, or none).
POINT_ONLY_SCENES = ("mixed_pile.usda", "primitives_on_plane.usda", "box_on_heightfield.usda")
PATCH_SCENES = [f for f in SCENES if f not in POINT_ONLY_SCENES]
SIZE = (480, 360)


def scene_path(name):
    return os.path.join(ROOT, "scenes", name)


def headless_polyscope():
    """Polyscope started with EGL (once per process); skips the test only if EGL cannot start."""
    from viz import backend

    try:
        return backend.init(headless=True)
    except backend.ViewerError as exc:
        pytest.skip(f"headless rendering unavailable: {exc}")


def background_fraction(image, color=(255, 255, 255), tol=6):
    rgb = image[..., :3].astype(int)
    return float(np.mean(np.all(np.abs(rgb - np.array(color)) <= tol, axis=-1)))


def reddish(image):
    """Pixels clearly red (the sensor markers), also seen through a translucent shape."""
    rgb = image[..., :3].astype(int)
    return (rgb[..., 0] > 120) & (rgb[..., 0] - np.maximum(rgb[..., 1], rgb[..., 2]) > 60)


def window(mask, xy, half=4):
    """The part of a (H, W) mask within ``half`` pixels of point ``xy`` (x right, y down)."""
    h, w = mask.shape
    x, y = int(round(xy[0])), int(round(xy[1]))
    return mask[max(0, y - half):min(h, y + half + 1), max(0, x - half):min(w, x + half + 1)]
