"""hydro's Polyscope viewer: shapes, SDF slices and iso-surfaces, contact patches, sensors.

The only package that imports Polyscope (``hydro`` never imports ``viz``). Entry points:

- ``hydro view SCENE.usda [--screenshot FILE.png]`` (:mod:`viz.cli`);
- :func:`viz.render` — a picture of a scene, headless, for scripts and tests (:mod:`viz.picture`);
- :class:`viz.scene.SceneView` — a scene being looked at (edits, collision, numbers, drawing);
- :mod:`viz.sensors` — sensors' debug view from plain arrays, with duck-typed adapters.
"""

__all__ = ["render", "SceneView", "ViewSettings"]


def __getattr__(name):  # keep `import viz` cheap: Polyscope loads on first use
    if name == "render":
        from .picture import render

        return render
    if name in ("SceneView", "ViewSettings"):
        from . import scene

        return getattr(scene, name)
    raise AttributeError(f"module 'viz' has no attribute {name!r}")
