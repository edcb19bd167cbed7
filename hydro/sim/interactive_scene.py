"""Isaac Lab's scene classes, for its sensors: ``InteractiveSceneCfg`` and ``InteractiveScene``.

Isaac Lab code declares its sensors as attributes of an ``InteractiveSceneCfg`` subclass and
reads them by name from the scene; that code runs here with only its imports changed::

    from hydro.sim.interactive_scene import InteractiveScene, InteractiveSceneCfg
    from hydro.sim.sensors import ContactSensorCfg

    class MySceneCfg(InteractiveSceneCfg):
        left_foot_contact = ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Robot/LF_FOOT", history_length=6,
                                             filter_prim_paths_expr=["{ENV_REGEX_NS}/Object"],
                                             track_air_time=True)

    scene = InteractiveScene(MySceneCfg(num_envs=4, env_spacing=2.0), "robot.usda", dt=1 / 200)
    scene.sim.step()                      # one physics step: every sensor updates
    contact = scene["left_foot_contact"]
    net_normal_force = contact.data.net_normal_forces_w.torch

What differs from Isaac Lab: the bodies and colliders come from a USD stage or a
:class:`~hydro.scene.model.Model` (the scene argument), not from spawner configurations, and
the scene steps through its :class:`~hydro.sim.simulation.Simulation` (``scene.sim``, or pass
one you made). Attributes of the configuration that are not sensor configurations (an
articulation's config, a light) are kept on it and not used. ``scene.update(dt)`` is accepted
and does nothing: sensors update at every physics step.
"""

from __future__ import annotations

import copy
import math

from ..errors import InputError
from ..scene.model import DEFAULT_ENV_SPACING

__all__ = ["InteractiveScene", "InteractiveSceneCfg"]


class InteractiveSceneCfg:
    """A scene's configuration: ``num_envs``, ``env_spacing`` and, as class attributes of a
    subclass, its sensors (hydro's Isaac Lab or EmbodiChain sensor configurations)."""

    num_envs: int = 1
    """Copies of the scene (envs)."""
    env_spacing: float = DEFAULT_ENV_SPACING
    """m between env origins (a USD scene's envs are laid out on a grid)."""
    lazy_sensor_update: bool = True
    """Kept for Isaac Lab code; hydro's sensors update every physics step either way."""
    replicate_physics: bool = True
    """Kept for Isaac Lab code (no effect)."""
    filter_collisions: bool = True
    """Kept for Isaac Lab code: envs never collide with each other in hydro."""

    def __init__(self, num_envs: int | None = None, env_spacing: float | None = None, **fields):
        if num_envs is not None:
            self.num_envs = num_envs
        if env_spacing is not None:
            self.env_spacing = env_spacing
        for name, value in fields.items():
            if not hasattr(type(self), name):
                raise InputError(f"{type(self).__name__} has no field {name!r}")
            setattr(self, name, value)
        # each instance gets its own copies of the class-level sensor configurations
        for name, cfg in self._class_sensors().items():
            if name not in fields:
                setattr(self, name, copy.deepcopy(cfg))
        n = self.num_envs
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"{type(self).__name__}.num_envs must be an integer >= 1, got {n!r}")
        s = self.env_spacing
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0:
            raise InputError(f"{type(self).__name__}.env_spacing must be a finite number >= 0 (m), got {s!r}")

    @classmethod
    def _class_sensors(cls) -> dict:
        out = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if not name.startswith("_") and callable(getattr(value, "_make_sensor", None)):
                    out[name] = value
        return out

    def sensor_cfgs(self) -> dict:
        """``{name: configuration}`` of the sensors, in the order the class declares them."""
        return {name: getattr(self, name) for name in self._class_sensors()}


class InteractiveScene:
    """The sensors of an :class:`InteractiveSceneCfg` on a simulation, by name (``scene[name]``).

    ``scene``: a USD path or a :class:`~hydro.scene.model.Model` — a
    :class:`~hydro.sim.simulation.Simulation` is made with the configuration's ``num_envs`` and
    ``env_spacing`` and the keyword arguments (``dt``, ``device``, …) — or a ``Simulation``.
    """

    def __init__(self, cfg: InteractiveSceneCfg, scene, **simulation_options):
        from .simulation import Simulation

        if not isinstance(cfg, InteractiveSceneCfg):
            raise InputError(f"InteractiveScene needs an InteractiveSceneCfg, got {type(cfg).__name__}")
        self.cfg = cfg
        if isinstance(scene, Simulation):
            if simulation_options:
                raise InputError(f"simulation options {sorted(simulation_options)} apply only when the scene is a USD "
                                 f"path or a Model, not an existing Simulation")
            sim = scene
        else:
            from ..scene.model import Model

            if isinstance(scene, Model):
                sim = Simulation(scene, **simulation_options)
            else:
                sim = Simulation(scene, num_envs=cfg.num_envs, env_spacing=cfg.env_spacing, **simulation_options)
        if sim.num_envs != cfg.num_envs:
            raise InputError(f"the scene has {sim.num_envs} envs but {type(cfg).__name__}.num_envs is {cfg.num_envs}")
        self.sim = sim
        self._sensors = {name: sim.add_sensor(c) for name, c in cfg.sensor_cfgs().items()}

    @property
    def num_envs(self) -> int:
        return self.sim.num_envs

    @property
    def device(self) -> str:
        return self.sim.device

    @property
    def physics_dt(self) -> float:
        return self.sim.physics_dt

    @property
    def env_origins(self):
        """(E,3) m, each env's origin."""
        return self.sim.model.env_origins

    @property
    def sensors(self) -> dict:
        """``{name: sensor}``."""
        return dict(self._sensors)

    def keys(self) -> list:
        return list(self._sensors)

    def __getitem__(self, name: str):
        try:
            return self._sensors[name]
        except KeyError:
            raise KeyError(f"the scene has no sensor {name!r}; its sensors are {sorted(self._sensors)}") from None

    def __contains__(self, name) -> bool:
        return name in self._sensors

    def update(self, dt: float | None = None) -> None:
        """Kept for Isaac Lab code: the sensors already update at every physics step."""

    def write_data_to_sim(self) -> None:
        """Kept for Isaac Lab code: nothing is buffered on hydro's side."""

    def reset(self, env_ids=None) -> None:
        """Put ``env_ids`` (default all) back to their initial state and reset their sensors."""
        self.sim.reset(env_ids)

    def __repr__(self) -> str:
        return f"InteractiveScene({self.num_envs} envs, sensors {self.keys()})"
