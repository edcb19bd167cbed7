"""Command-line values shared by hydro's commands (``hydro sdf``, ``hydro mesh``): argument types
and the settings they make, with refusals in the words of the flags typed. Imported by
:mod:`hydro.cli` and :mod:`hydro.tools.mesh_tool` alike (neither imports the other for them)."""

from __future__ import annotations

import argparse

from ..errors import InputError

__all__ = ["UsageError", "SDF_FLAGS", "sdf_resolution", "sdf_settings"]


class UsageError(InputError):
    """An error in what the user asked for; printed as one line."""


def sdf_resolution(text):
    """``--resolution``: SDF voxels along the longest axis, a positive multiple of 8 (whole bricks)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value <= 0 or value % 8:
        raise argparse.ArgumentTypeError(f"must be a positive multiple of 8 (voxels along the longest axis), "
                                         f"got {text!r}")
    return value


sdf_resolution.__name__ = "multiple of 8"

#: SDFSettings' argument names → the flags of ``hydro sdf`` / ``hydro mesh`` that set them
SDF_FLAGS = {"max_resolution": "--resolution", "target_voxel_size": "--voxel-size", "narrow_band_inner": "--band-inner",
             "narrow_band_outer": "--band-outer", "padding": "--padding", "texture_format": "--format"}


def sdf_settings(**kwargs):
    """:class:`~hydro.sdf.SDFSettings` from command-line values; a refusal names the flag, not the
    Python argument (``--band-inner must be …``, not ``narrow_band_inner must be …``)."""
    import re

    from ..sdf import SDFSettings

    try:
        return SDFSettings(**kwargs)
    except ValueError as exc:
        text = str(exc)
        for name, flag in SDF_FLAGS.items():
            text = re.sub(rf"\b{name}\b", flag, text)
        raise UsageError(text) from None
