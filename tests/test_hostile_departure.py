"""Issue 27: ``Simulation`` warns when a body tunnels through a thin shape (as ``hydro run`` does)."""

import warnings

import numpy as np
import pytest

from hydro.contact.deep_overlap import HydroelasticLimitWarning
from hydro.errors import HydroWarning
from hydro.geometry import Box, Sphere
from hydro.scene.model import ModelBuilder
from hydro.sdf import SDFSettings
from hydro.sim.departure import CHECK_EVERY
from hydro.sim.simulation import Simulation

SDF = SDFSettings(max_resolution=16)

# the 3 cm box is thin on its 16³ grid (its own warning, not the one under test)
pytestmark = pytest.mark.filterwarnings("ignore::hydro.contact.deep_overlap.HydroelasticLimitWarning")


def _drop(height):
    """A 5 cm ball of 1 kg ``height`` m above a static 3 cm thick box (top face at z = 0)."""
    b = ModelBuilder()
    b.add_shape("/World/Ground", Box((1.0, 1.0, 0.03)), local_pose=np.r_[0.0, 0.0, -0.015, 0.0, 0.0, 0.0, 1.0],
                hydroelastic=True, stiffness=1e7, sdf=SDF)
    body = b.add_body("/World/Ball", np.r_[0.0, 0.0, 0.05 + height, 0.0, 0.0, 0.0, 1.0], mass=1.0)
    b.add_shape("/World/Ball/Collider", Sphere(0.05), body=body, hydroelastic=True, stiffness=1e7, sdf=SDF)
    return b.finalize()


def test_a_ball_tunnelling_through_a_thin_box_is_reported_once():
    # the issue dropped it from 500 m; from 20 m it arrives at ~20 m/s, 0.33 m per 1/60 s step,
    # and passes the 3 cm box as well
    sim = Simulation(_drop(20.0), dt=1.0 / 60.0, substeps=1)
    with pytest.warns(HydroWarning, match=r"/World/Ball.*left the ground|left the ground.*/World/Ball") as rec:
        for _ in range(400):  # it passes z = 0 at ~2 s
            sim.step()
            if sim.state.body_q[0, 2] < -5.0:
                break
        for _ in range(64):  # and falls on: no second warning of the kind
            sim.step()
    assert sim.state.body_q[0, 2] < -5.0
    ground = [w for w in rec if "left the ground" in str(w.message)]
    assert len(ground) == 1
    assert "thin shape" in str(ground[0].message)


def test_a_resting_ball_or_a_switched_off_watch_says_nothing():
    sim = Simulation(_drop(0.0), dt=1.0 / 60.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HydroWarning)
        warnings.simplefilter("ignore", HydroelasticLimitWarning)  # a 5 cm ball on a 16³ grid: its own warning
        for _ in range(CHECK_EVERY + 1):
            sim.step()
    sim = Simulation(_drop(20.0), dt=1.0 / 60.0, substeps=1)
    sim.watch_departures = False
    with warnings.catch_warnings():
        warnings.simplefilter("error", HydroWarning)
        warnings.simplefilter("ignore", HydroelasticLimitWarning)  # a 5 cm ball on a 16³ grid: its own warning
        sim.state.body_q[0, 2] = -10.0  # below the ground already
        for _ in range(CHECK_EVERY + 1):
            sim.step()
