"""hydro: SDF-based hydroelastic contact with visual debugging.

The public API, importable from ``hydro`` directly (loaded on first use, so ``import hydro`` stays
cheap)::

    import hydro
    model = hydro.load_usd("scenes/sphere_on_box.usda")
    pipe = hydro.HydroelasticPipeline(model)
    result = pipe.collide(model.shape_world_poses())

| name | home | what |
|---|---|---|
| ``ModelBuilder``, ``Model``, ``State`` | :mod:`hydro.scene.model` | a scene's bodies, shapes and SDFs |
| ``load_usd``, ``save_usd``, ``validate_usd`` | :mod:`hydro.scene.usd_io` | USD in and out |
| ``CollisionPipeline`` | :mod:`hydro.contact.collision` | contacts of both paths (hydroelastic + point) at given poses |
| ``HydroelasticPipeline`` | :mod:`hydro.contact.pipeline` | hydroelastic contacts only, at given poses |
| ``PointContactPipeline`` | :mod:`hydro.contact.point_pipeline` | the default path's point contacts only |
| ``HydroError``, ``InputError``, ``SceneError``, ``BudgetError``, ``ContactOverflowError``, ``Interrupted``, ``HydroWarning`` | :mod:`hydro.errors` | what hydro raises and warns |
| ``Contacts``, ``CollisionResult``, ``RigidContacts``, ``CONTACT_HYDROELASTIC``, ``CONTACT_POINT`` | :mod:`hydro.contact.types` | the contact table (``kind``: which path), a call's results, Newton's layout |
| ``NewtonConfig``, ``CollisionConfig``, ``HydroelasticConfig``, ``configure_newton`` | :mod:`hydro.contact.config` | runtime options |
| ``reduce_contacts`` | :mod:`hydro.contact.reduction` | contact reduction on its own |
| ``SDFSettings``, ``build_sdf``, ``SDF`` | :mod:`hydro.sdf` | sparse signed distance fields |
| ``Sphere``, ``Box``, ``Capsule``, ``Cylinder``, ``Cone``, ``Ellipsoid``, ``Mesh``, ``ConvexMesh``, ``Plane`` | :mod:`hydro.geometry` | shapes |
| ``Simulation`` | :mod:`hydro.sim.simulation` | the penalty solver for experiments |
| ``ContactSensor``, ``ContactSensorCfg``, ``ContactSensorData`` | :mod:`hydro.sim.sensors` | Isaac Lab–style sensors |
| ``launch_contact_data`` | :mod:`hydro.sim.contact_data` | per sensor/filter contact data |
| ``Device``, ``get_device`` | :mod:`hydro.backend` | CPU or CUDA |

EmbodiChain-style sensors live in :mod:`hydro.sim.embodichain` (their names clash with Isaac Lab's).
"""

from . import _signals

_signals.install_for_command()  # the ``hydro`` command only: Ctrl-C from the first instant (exit 130)

from importlib import import_module  # noqa: E402

from . import _compat  # noqa: E402

__version__ = "0.1.0"

_PUBLIC = {
    "ModelBuilder": "scene.model", "Model": "scene.model", "State": "scene.model",
    "load_usd": "scene.usd_io", "save_usd": "scene.usd_io", "validate_usd": "scene.usd_io",
    "HydroelasticPipeline": "contact.pipeline", "ContactOverflowError": "errors",
    "CollisionPipeline": "contact.collision", "PointContactPipeline": "contact.point_pipeline",
    "RigidContacts": "contact.types", "CONTACT_HYDROELASTIC": "contact.types", "CONTACT_POINT": "contact.types",
    "HydroError": "errors", "InputError": "errors", "SceneError": "errors", "BudgetError": "errors",
    "Interrupted": "errors", "HydroWarning": "errors",
    "Contacts": "contact.types", "CollisionResult": "contact.types",
    "NewtonConfig": "contact.config", "CollisionConfig": "contact.config",
    "HydroelasticConfig": "contact.config", "configure_newton": "contact.config",
    "reduce_contacts": "contact.reduction",
    "SDFSettings": "sdf", "build_sdf": "sdf", "SDF": "sdf",
    "Sphere": "geometry", "Box": "geometry", "Capsule": "geometry", "Cylinder": "geometry", "Cone": "geometry",
    "Ellipsoid": "geometry", "Mesh": "geometry", "ConvexMesh": "geometry", "Plane": "geometry",
    "Simulation": "sim.simulation",
    "ContactSensor": "sim.sensors", "ContactSensorCfg": "sim.sensors", "ContactSensorData": "sim.sensors",
    "launch_contact_data": "sim.contact_data",
    "Device": "backend", "get_device": "backend",
}

__all__ = sorted(_PUBLIC)

_compat.install()


def __getattr__(name):
    home = _PUBLIC.get(name)
    if home is None:
        raise AttributeError(f"module 'hydro' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
