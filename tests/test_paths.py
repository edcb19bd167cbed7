"""The env-path rule (hydro.scene.paths): envs of paths, paths in envs, expressions, the actor table."""

import re
from types import SimpleNamespace

import pytest

from hydro.scene import paths
from hydro.scene.paths import (ENV_REGEX_NS, ENVS_ROOT, actor_table, env_namespace, env_of, env_path, env_relative,
                               expand_expr, is_env_prim, is_under, nearest_ancestor, path_in_env, prim_order,
                               relative_name)
from sim_util import robot_scene


@pytest.mark.parametrize("path, env, rest, name", [
    ("/World/envs/env_3/Table/Top", 3, "/Table/Top", "Table/Top"),
    ("/World/envs/env_12/A", 12, "/A", "A"),
    ("/World/envs/env_0", 0, "", ""),
    ("/World/Ground", None, "/World/Ground", "Ground"),
    ("/World/envs", None, "/World/envs", "envs"),
    ("/World/envs/env_3x/A", None, "/World/envs/env_3x/A", "envs/env_3x/A"),
    ("/World/envs/env_/A", None, "/World/envs/env_/A", "envs/env_/A"),
    ("/Other/Box", None, "/Other/Box", "Other/Box"),
])
def test_the_env_of_a_path_and_its_name_in_every_env(path, env, rest, name):
    assert env_of(path) == env
    assert env_relative(path) == rest
    assert relative_name(path) == name
    assert is_env_prim(path) == (env is not None and rest == "")


def test_env_prims_and_the_namespace_regex_agree_with_env_of():
    assert ENVS_ROOT == "/World/envs" and env_path(7) == "/World/envs/env_7"
    rx = re.compile(ENV_REGEX_NS + "(/.*)?")
    for p in ["/World/envs/env_0", "/World/envs/env_42/A/B", "/World/envs/env_x/A", "/World/Ground", "/World/envs"]:
        assert bool(rx.fullmatch(p)) == (env_of(p) is not None), p


@pytest.mark.parametrize("path, moved", [
    ("/World/envs/env_0/Box", "/World/envs/env_2/Box"),
    ("/World/envs/env_5/Robot/Hand", "/World/envs/env_2/Robot/Hand"),
    ("/World/Box", "/World/envs/env_2/Box"),
    ("/Box", "/World/envs/env_2/Box"),
    ("/World", "/World/envs/env_2"),
    ("/Worldly/Box", "/World/envs/env_2/Worldly/Box"),
])
def test_a_path_moves_into_another_env(path, moved):
    assert path_in_env(path, 2) == moved
    assert env_of(moved) == 2
    # moving on keeps the env-relative path
    assert env_relative(path_in_env(moved, 9)) == env_relative(moved)


def test_prim_tree_helpers():
    assert is_under("/World/A", "/World") and is_under("/World", "/World") and not is_under("/WorldA", "/World")
    assert nearest_ancestor("/World/A/B/C", {"/World/A": 0, "/World": 1}) == "/World/A"
    assert nearest_ancestor("/World/A", {"/World/A": 0}) is None
    # ancestors first; each sequence's order kept where the tree allows it
    order = prim_order([["/World/b/x", "/World/a/y"], ["/World/envs/env_0"]])
    assert order == ["/World/b", "/World/b/x", "/World/a", "/World/a/y", "/World/envs", "/World/envs/env_0"]


def _names(body_path, shape_path=()):
    return SimpleNamespace(body_path=list(body_path), shape_path=list(shape_path))


def test_env_regex_ns_stands_for_the_env_namespace_when_the_scene_has_envs():
    with_envs = _names(["/World/envs/env_0/Box", "/World/envs/env_1/Box"], ["/World/Ground"])
    assert env_namespace(with_envs) == ENV_REGEX_NS
    rx = expand_expr("{ENV_REGEX_NS}/Box", with_envs)
    assert rx.fullmatch("/World/envs/env_1/Box") and not rx.fullmatch("/World/Box")
    flat = _names(["/World/Box"], ["/World/Ground"])
    assert env_namespace(flat) == "/World"
    assert expand_expr("{ENV_REGEX_NS}/Box", flat).fullmatch("/World/Box")
    with pytest.raises(ValueError, match=r"prim path expression '\{ENV_REGEX_NS\}/\(' is not a valid regular"):
        expand_expr("{ENV_REGEX_NS}/(", flat)
    with pytest.raises(ValueError, match="non-empty string"):
        expand_expr("", flat)


def test_the_actor_table_lists_bodies_then_static_shapes():
    model = robot_scene(2)  # per env Foot, Hand, Object; one global ground
    names, envs, actor_of_shape = actor_table(model)
    assert names == list(model.body_path) + ["/World/Ground"]
    assert envs.tolist() == [0, 0, 0, 1, 1, 1, -1]
    for s in range(model.shape_count):
        b = model.shape_body[s]
        assert actor_of_shape[s] == (b if b >= 0 else model.body_count)


def test_the_rule_is_written_once():
    # the env pattern appears in hydro's code only in paths.py (docstrings, and the examples that
    # show users how to write an expression, aside)
    import ast
    import os

    root = os.path.dirname(os.path.dirname(paths.__file__))
    offenders = []
    for d, _, files in os.walk(root):
        if os.path.basename(d) == "examples":
            continue
        for f in files:
            if not f.endswith(".py") or f == "paths.py":
                continue
            tree = ast.parse(open(os.path.join(d, f), encoding="utf-8").read())
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                    and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                    if "envs/env_" in n.value or n.value.startswith("/World/envs"):
                        offenders.append(f"{os.path.relpath(os.path.join(d, f), root)}:{n.lineno}")
    assert offenders == []
