"""Sparse narrow-band signed distance fields.

| module | what |
|---|---|
| :mod:`.layout` | brick and format constants, :class:`SDFSettings`, the grid, packed parameter rows |
| :mod:`.build` | :func:`build_sdf` (CPU, once per shape), :class:`SDF`, :func:`report` |
| :mod:`.pack` | :class:`SDFPack`: several shapes' fields in one set of arrays for the kernels |
| :mod:`.sample` | device helpers and kernels that sample φ, ∇φ and slope bounds |
| :mod:`.level_set` | NumPy decoding of a field and its level sets (for the viewer and tests) |
"""

from .build import SDF, SDFMemory, build_sdf, report
from .layout import (BRICK, BRICK_SAMPLES, FORMAT_CODES, FORMAT_DTYPES, FORMATS, SAMPLES_PER_BRICK, SDFSettings,
                     grid_layout)
from .pack import SDFPack

__all__ = ["SDF", "SDFMemory", "SDFPack", "SDFSettings", "build_sdf", "grid_layout", "report", "BRICK",
           "BRICK_SAMPLES", "SAMPLES_PER_BRICK", "FORMATS", "FORMAT_CODES", "FORMAT_DTYPES"]
