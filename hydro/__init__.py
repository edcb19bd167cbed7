"""hydro: SDF-based hydroelastic contact with visual debugging."""

__version__ = "0.1.0"


def __getattr__(name):
    # ``hydro.Simulation`` without making ``import hydro`` load Numba and the pipeline
    if name == "Simulation":
        from .simulation import Simulation

        return Simulation
    raise AttributeError(f"module 'hydro' has no attribute {name!r}")
