"""Module paths from before the package layout (hydro ≤ 0.1), kept importable.

``import hydro.pipeline`` still works and gives the very module now at
``hydro.contact.pipeline`` (one module object, so patching either name patches both), with a
``DeprecationWarning`` that names the new path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module name (under ``hydro.``) → its home now
MOVED = {
    "pipeline": "contact.pipeline",
    "config": "contact.config",
    "types": "contact.types",
    "reduction": "contact.reduction",
    "patch_mesh": "contact.patch_mesh",
    "model": "scene.model",
    "usd_io": "scene.usd_io",
    "validate": "scene.validate",
    "simulation": "sim.simulation",
    "sensors": "sim.sensors",
    "contact_sensor_embodichain": "sim.embodichain",
    "contact_data": "sim.contact_data",
    "level_set": "sdf.level_set",
    "mesh_sdf": "geometry.mesh_distance",
    "analytic": "tools.analytic",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._real_specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("hydro.") and fullname[6:] in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = "hydro." + MOVED[spec.name[6:]]
        warnings.warn(f"{spec.name} moved to {new}; import it from there (the old path will go away)",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._real_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # The real module is already executed; the import system has just set its ``__spec__`` to
        # the alias's (it always does), which would break its relative imports: put it back.
        module.__spec__ = self._real_specs.pop(module.__spec__.name, module.__spec__)


def install():
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())  # ahead of path finders: the old files may linger
