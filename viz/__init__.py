"""hydro's Polyscope viewer: shapes, SDF slices and iso-surfaces, contact patches, sensors.

``viz`` is the only package that imports Polyscope, and it sees hydro only through hydro's
public API; it never changes a model it is given (edits make new models). ``hydro`` never
imports ``viz``: the ``hydro view`` subcommand is added by :func:`viz.cli.register`, declared
in the ``hydro.commands`` entry point group of the package's metadata. What is here:

- ``hydro view SCENE.usda [--screenshot FILE.png]`` (:mod:`viz.cli`): a window with the panel
  (:mod:`viz.panel`), or a picture rendered headless through EGL;
- :func:`viz.render` — a picture of a scene, headless, for scripts and tests (:mod:`viz.picture`);
- :class:`viz.SceneView` / :class:`viz.ViewSettings` — a scene being looked at (edits,
  collision, numbers, drawing) and what the picture shows (:mod:`viz.scene`);
- :mod:`viz.sensors` — sensors' debug view, from what the sensors publish;
- :mod:`viz.shapes` — every collider as a mesh (one mesher per kind of shape: ``MESHERS``), each
  with its role (hydroelastic or default path); :mod:`viz.legend` — the legend over the picture.

``import viz`` is cheap: Polyscope loads when something is drawn.
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
