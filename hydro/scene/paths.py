"""Prim paths and envs: the one place that knows how an env's prims are named.

An env is the subtree of the env prim ``/World/envs/env_<i>`` (:data:`ENVS_ROOT`): a prim at or
below it belongs to env ``i``; a prim outside ``/World/envs`` is global. Everything here works
on plain strings (and, for the last three, on a :class:`~hydro.scene.model.Model`'s path lists).

| name | what it gives |
|---|---|
| :data:`ENVS_ROOT`, :data:`ENV_PATH` | ``/World/envs``; the regex of a path in an env (group 1 the env, group 2 the rest) |
| :func:`env_of` | the env of a path, None for a global one |
| :func:`env_path` | the env prim of env i: ``/World/envs/env_<i>`` |
| :func:`is_env_prim` | whether a path is an env prim itself |
| :func:`env_relative` | the path below its env prim (``/Table/Top``); a global path unchanged |
| :func:`relative_name` | the path below its env, or below ``/World``, without the leading ``/`` (``Table/Top``, ``Ground``) |
| :func:`path_in_env` | the same prim in another env (``env_0/Box`` → ``env_2/Box``; ``/World/Box`` → ``env_2/Box``) |
| :func:`is_under`, :func:`nearest_ancestor`, :func:`prim_order` | the prim tree: ancestry, and an order to define prims in |
| :data:`ENV_REGEX_NS`, :func:`env_namespace`, :func:`expand_expr` | what ``{ENV_REGEX_NS}`` stands for; an expression compiled |
| :func:`actor_table` | the things a contact can push (bodies, then static shapes), with their paths and envs |
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import shown

__all__ = ["WORLD_ROOT", "ENVS_ROOT", "ENV_PATH", "ENV_REGEX_NS", "env_of", "env_path", "is_env_prim", "env_relative",
           "relative_name", "path_in_env", "is_under", "nearest_ancestor", "prim_order", "env_namespace",
           "expand_expr", "actor_table"]

#: The prim under which a scene's top-level prims live.
WORLD_ROOT = "/World"
#: The prim whose children ``env_<i>`` are the envs.
ENVS_ROOT = WORLD_ROOT + "/envs"
#: The regular expression ``{ENV_REGEX_NS}`` stands for in a scene with envs: any env prim.
ENV_REGEX_NS = ENVS_ROOT + r"/env_\d+"
#: A path in an env: group 1 the env index, group 2 the rest below the env prim (None at the env prim).
ENV_PATH = re.compile("^" + ENVS_ROOT + r"/env_(\d+)(/.*)?$")


def prim_path_problem(path) -> str | None:
    """What makes ``path`` not an absolute USD prim path (None: nothing). USD's rule for each name
    (``SdfPath.IsValidIdentifier``, UTF-8 since USD 24.03): a letter or ``_`` first, then letters,
    digits and ``_`` (Unicode XID_Start / XID_Continue, which ``str.isidentifier`` implements), so
    ``/World/B all``, ``/World/1ball`` and ``/World/Ba-ll`` are not prim paths. No ``pxr`` here:
    the core checks names without USD installed."""
    if not isinstance(path, str) or not path.startswith("/") or path == "/":
        return "it must be an absolute prim path like /World/Box"
    names = path[1:].split("/")
    for name in names:
        if not name:
            return "it has an empty name (a doubled or trailing '/')"
        if not name.isidentifier():
            first = name[0]
            why = (f"{name!r} starts with {first!r}" if not (first == "_" or first.isidentifier())
                   else f"{name!r} holds {next(c for c in name if not ('_' + c).isidentifier())!r}")
            return (f"{why}: a prim name is a letter or '_' followed by letters, digits and '_' "
                    f"(e.g. {_suggest(name)!r})")
    return None


def _suggest(name: str) -> str:
    """``name`` made a valid prim name (the fix a message suggests)."""
    out = "".join(c if ("_" + c).isidentifier() else "_" for c in name)
    return out if out[:1].isidentifier() else "_" + out


def env_of(path: str) -> int | None:
    """The env index of a prim path at or under ``/World/envs/env_<i>``, or None (global)."""
    m = ENV_PATH.match(path)
    return int(m.group(1)) if m else None


def env_path(env: int) -> str:
    """The env prim of env ``env``: ``/World/envs/env_<env>``."""
    return f"{ENVS_ROOT}/env_{int(env)}"


def is_env_prim(path: str) -> bool:
    """Whether ``path`` is an env prim itself (``/World/envs/env_<i>``)."""
    m = ENV_PATH.match(path)
    return m is not None and m.group(2) is None


def env_relative(path: str) -> str:
    """The part of ``path`` below its env prim, with its leading ``/`` (``/World/envs/env_3/Table/Top``
    → ``/Table/Top``; the env prim itself → ``""``); a global path is returned unchanged."""
    m = ENV_PATH.match(path)
    return (m.group(2) or "") if m else path


def relative_name(path: str) -> str:
    """The name a prim has in every env: its path below its env prim, or below ``/World`` for a
    global prim, without the leading ``/`` (``Table/Top``, ``Ground``; ``/X`` → ``X``)."""
    if env_of(path) is not None:
        return env_relative(path)[1:]
    return path[len(WORLD_ROOT) + 1:] if path.startswith(WORLD_ROOT + "/") else path.lstrip("/")


def path_in_env(path: str, env: int) -> str:
    """The path of the same prim in env ``env``: a path in an env changes env
    (``/World/envs/env_0/Box`` → ``/World/envs/env_2/Box``); a global path moves under the env
    prim (``/World/Box`` and ``/Box`` → ``/World/envs/env_2/Box``)."""
    if env_of(path) is not None:
        rest = env_relative(path)
    else:
        rest = path[len(WORLD_ROOT):] if is_under(path, WORLD_ROOT) else path
    return env_path(env) + rest


def is_under(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or a descendant of it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def nearest_ancestor(path: str, known):
    """The nearest strict ancestor of ``path`` that is in ``known`` (or None)."""
    p = path
    while True:
        p = p.rsplit("/", 1)[0]
        if not p:
            return None
        if p in known:
            return p


def prim_order(sequences) -> list:
    """Every prim path of ``sequences`` and their ancestors (below /World), in an order to define
    them so that a depth-first traversal of the stage meets each sequence's paths in its order
    (when the sequences allow it; otherwise in order of first appearance)."""
    children = {}  # parent → its children, in order of first appearance
    before = {}  # parent → {(child a, child b)}: subtree a must come before subtree b
    first = {}

    def chain(path):
        parts = path.split("/")
        return ["/".join(parts[:k]) for k in range(2, len(parts) + 1)]  # /World, /World/x, ...

    for seq in sequences:
        for p in seq:
            c = chain(p)
            for parent, child in zip(["/"] + c[:-1], c):
                if child not in first:
                    first[child] = len(first)
                    children.setdefault(parent, []).append(child)
        for a, b in zip(seq, seq[1:]):
            ca, cb = chain(a), chain(b)
            k = 0
            while k < min(len(ca), len(cb)) and ca[k] == cb[k]:
                k += 1
            if k < len(ca) and k < len(cb):  # neither is an ancestor of the other
                parent = ca[k - 1] if k > 0 else "/"
                before.setdefault(parent, set()).add((ca[k], cb[k]))

    out = []

    def visit(node):
        kids = list(children.get(node, []))
        edges = before.get(node, set())
        while kids:  # topological order, ties (and cycles) broken by first appearance
            free = [c for c in kids if not any(b == c and a in kids for a, b in edges)]
            nxt = min(free or kids, key=first.get)
            kids.remove(nxt)
            out.append(nxt)
            visit(nxt)

    visit("/")
    return [p for p in out if p != WORLD_ROOT]


# ----------------------------------------------------------------------------------------------
# On a model's paths


def env_namespace(model) -> str:
    """The regular expression ``{ENV_REGEX_NS}`` stands for in this model's paths:
    :data:`ENV_REGEX_NS` when some prim lies under ``/World/envs``, else ``/World``."""
    under = any(p.startswith(ENVS_ROOT + "/") for p in model.body_path + model.shape_path)
    return ENV_REGEX_NS if under else WORLD_ROOT


def expand_expr(expr: str, model) -> re.Pattern:
    """Compile a prim path expression: ``{ENV_REGEX_NS}`` → the env namespace, then a regex."""
    if not isinstance(expr, str) or not expr:
        raise ValueError(f"a prim path expression must be a non-empty string, got {shown(expr)}")
    text = expr.replace("{ENV_REGEX_NS}", env_namespace(model))
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"prim path expression {expr!r} is not a valid regular expression: {exc}") from None


def actor_table(model):
    """Actors: the bodies (ids 0 … B−1) then the static shapes (ids B, B+1, …), each a thing a
    contact can push. Returns ``(paths, envs, actor_of_shape)``: the actor's prim path, its env
    (−1 for a global static shape) and, per shape, the actor it belongs to."""
    B = model.body_count
    shape_body = np.asarray(model.shape_body, dtype=np.int64)
    static = np.flatnonzero(shape_body < 0)
    actor_of_shape = shape_body.copy()
    actor_of_shape[static] = B + np.arange(len(static))
    paths = list(model.body_path) + [model.shape_path[s] for s in static]
    envs = np.concatenate([np.asarray(model.body_env, dtype=np.int64),
                           np.asarray(model.shape_env, dtype=np.int64)[static]])
    return paths, envs, actor_of_shape
