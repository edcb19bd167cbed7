"""The interface field between two shapes: where the patch lies (shared by refinement and marching).

With eA = φA − marginA and eB = φB − marginB at a point, the interface field f is zero on the
contact patch and increases from A toward B:

- ``continuous``: f = kA·eA − kB·eB, the plane of equal pressure of two elastic foundations;
- ``switched``: inside both shapes f = k̂A·eA − k̂B·eB with the normalised stiffnesses
  k̂ = k/√(kA·kB); elsewhere the equidistant surface f = eA − eB.
"""

from __future__ import annotations

from ..backend import device_fn

INTERFACE_CONTINUOUS = 0
INTERFACE_SWITCHED = 1


def interface_code(name: str) -> int:
    """The code passed to kernels for ``HydroelasticConfig.interface``."""
    return INTERFACE_SWITCHED if name == "switched" else INTERFACE_CONTINUOUS


@device_fn(inline=True)
def interface_value(ea, eb, ka, kb, kna, knb, interface):
    """The interface field f at a point from eA, eB (zero on the patch, increasing from A to B)."""
    if interface == INTERFACE_SWITCHED:
        if ea < 0.0 and eb < 0.0:
            return kna * ea - knb * eb
        return ea - eb
    return ka * ea - kb * eb
