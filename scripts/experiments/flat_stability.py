"""STUB — flat-on-flat stability: hydroelastic patch vs single-point contact (the jumping point).

    python scripts/experiments/flat_stability.py [--quick]

NOT IMPLEMENTED YET: this experiment needs the simulator ``hydro.simulation.Simulation`` (being
built on the ``sim`` branch). When that branch has been merged into main and this branch has
been brought up to date, this script replaces the stub below. Until then it only explains
itself and exits with status 2, writing nothing.

What it will measure
    A 0.1 m box (500 kg/m³) on a static ground box, both hydroelastic (k = 1e9 N/m³, SDF
    resolution 64), stepped at dt = 1/60 s with automatic sub-steps, in two runs of 2 s each:

    1. resting: the box starts 1 mm above the ground and settles under gravity;
    2. sliding: the box starts resting with a horizontal velocity of 0.5 m/s along x
       (friction 0.5) and slides to a stop.

    Each run uses two contact models on the same scene and solver:

    - hydroelastic: the reduced patch (``max_contacts_per_pair`` 32) — force and torque of the
      whole pressure distribution;
    - single point: per pair, one contact at the deepest patch point carrying the pair's whole
      normal force and stiffness (what a classic point-contact generator gives for flat-on-flat:
      the deepest point jumps between the box's corners from one step to the next). Built from
      the same pipeline output, so the only difference is where the force acts.

    Recorded per step: the box's height and tilt (roll, pitch) and yaw, the contact torque about
    the box's centre of mass, and the contact point(s). Reported:

    - pose jitter: the standard deviation of height (µm) and tilt (mrad) over the last second of
      the resting run, and of height, tilt and lateral drift (mm) during the slide;
    - torque noise: the RMS of the step-to-step change of the contact torque about the centre
      of mass (N·m), and the number of steps where the single contact point changes corner;
    - plots (``out/experiments/flat_stability.png``): height, tilt and torque against time for
      both models, resting and sliding; ``flat_stability.csv`` holds the per-step series.

    Expected: the hydroelastic patch keeps the torque about the centre of mass near zero at rest
    (symmetric pressure) and smooth while sliding (the pressure shifts forward continuously),
    while the single point flips between corners, which shows as torque spikes of the order of
    weight × half-width (≈ 0.25 N·m here) and a rocking tilt.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

NAME = "flat_stability"


def simulator_available() -> bool:
    try:
        from hydro.simulation import Simulation  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv=None) -> int:
    _common.parse_args(__doc__, argv)
    if not simulator_available():
        print(f"# {NAME}: STUB — needs hydro.simulation.Simulation, which is not on this branch yet "
              "(the 'sim' branch has not been merged). Nothing was run or written; see this script's "
              "docstring for what it will measure.", file=sys.stderr)
        return 2
    print(f"# {NAME}: hydro.simulation is present, but this experiment is still the stub: write it "
          "against the merged simulator (see the docstring).", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
