"""Hostile input to the sensors (issue 16's cases in the sensors' files): a filter expression that
matches nothing warns instead of leaving a silent column of zeros; bad arguments are named."""

import math
import re
import warnings

import numpy as np
import pytest

from hydro.errors import InputError
from hydro.sim.sensors import ContactSensorCfg
from sim_util import fake_sim, frame, ground_push, robot_scene


def make(**cfg):
    model = robot_scene(2)
    sim = fake_sim(model)
    return model, sim, sim.add_sensor(ContactSensorCfg(**cfg))


@pytest.mark.parametrize("option, expr, what", [
    ("filter_prim_paths_expr", "{ENV_REGEX_NS}/Objet", "body or static collider"),  # a typo
    ("filter_prim_paths_expr", "/World/envs/env_0/Object/Collider", "body or static collider"),  # a body's collider
    ("filter_shape_prim_expr", "/World/Table", "collider shape"),
    ("exclude_prim_paths_expr", "{ENV_REGEX_NS}/Arm/.*", "body, static collider or collider shape"),
])
def test_a_filter_expression_that_matches_nothing_warns(option, expr, what):
    with pytest.warns(UserWarning, match=rf"ContactSensorCfg\.{option} entry '{re.escape(expr)}' matches no {what}"):
        model, sim, s = make(prim_path="{ENV_REGEX_NS}/Object", **{option: [expr]})
    # the column exists (shapes stay as configured) and reads zero, as the warning says
    sim.step([frame(model, [ground_push(model, 0, "Object", 5.0)])])
    if option != "exclude_prim_paths_expr":
        assert s.data.force_matrix_w.shape == (2, 1, 1, 3) and np.all(s.data.force_matrix_w == 0)


def test_filters_that_match_say_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(prim_path="{ENV_REGEX_NS}/Object", filter_prim_paths_expr=["/World/Ground", "{ENV_REGEX_NS}/Robot/.*"],
             exclude_prim_paths_expr=["{ENV_REGEX_NS}/Robot/Hand"])


@pytest.mark.parametrize("cfg, message", [
    ({"prim_path": "{ENV_REGEX_NS}/Object", "filter_prim_paths_expr": ["/World/(Ground"]}, "not a valid regular"),
    ({"prim_path": "{ENV_REGEX_NS}/Object", "update_period": math.nan}, "update_period must be a finite number"),
    ({"prim_path": "{ENV_REGEX_NS}/Object", "force_threshold": -1.0}, "force_threshold must be a finite number"),
    ({"prim_path": "{ENV_REGEX_NS}/Object", "max_contact_data_count_per_prim": 2.5},
     "max_contact_data_count_per_prim must be an integer"),
    ({"prim_path": "{ENV_REGEX_NS}/Object", "filter_prim_paths_expr": [""]}, "non-empty strings"),
    ({"prim_path": "{ENV_REGEX_NS}/Nothing"}, "matches no body"),
])
def test_bad_sensor_settings_are_refused_by_name(cfg, message):
    with pytest.raises(ValueError, match=message):
        make(**cfg)


def test_env_ids_out_of_range_are_refused():
    _, _, s = make(prim_path="{ENV_REGEX_NS}/Object")
    with pytest.raises(InputError, match=r"env_ids must be in \[0, 1\]"):
        s.reset([2])
