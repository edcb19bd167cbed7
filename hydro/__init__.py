"""hydro: SDF-based hydroelastic contact with visual debugging."""

__version__ = "0.1.0"
