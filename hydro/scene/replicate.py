"""Environments: which env each body and shape belongs to, and copies of a template env.

``num_envs`` E, ``env_spacing`` d (the env-path rule itself is :mod:`hydro.scene.paths`):

- Paths under ``/World/envs/env_<i>/`` belong to env ``i``. Static shapes outside
  ``/World/envs`` are global (env −1: they pair with every env); a dynamic body outside
  ``/World/envs`` belongs to env 0 and is never copied.
- If the scene has a template ``/World/envs/env_0`` and nothing else under ``/World/envs``,
  and E > 1: env_1 … env_{E−1} are copies of env_0 (paths renamed ``env_0`` → ``env_i``).
  The E env origins lie on a square grid of spacing d centred on env_0's authored origin,
  exactly as Isaac Lab's cloner lays them out (rows along −x, columns along +y, env 0 in
  the first slot, so env 0 moves too when E > 1): ``rows = ceil(E / floor(sqrt(E)))``,
  ``cols = ceil(E / rows)``, env i at row ``i // cols``, column ``i % cols``,
  ``offset = (−(row − (rows−1)/2)·d, (col − (cols−1)/2)·d, 0)``.
- If the scene has no ``/World/envs`` namespace and E > 1: the whole scene is copied E
  times, prim path ``/World/X`` becoming ``/World/envs/env_i/X`` (a path outside
  ``/World``, ``/X``, becomes ``/World/envs/env_i/X``), on the same grid centred on the
  world origin; static shapes then belong to their env.
- If the scene authors envs env_0 … env_{n−1} itself (n > 1), they are kept as authored
  with their own origins; E must then be 1 or n.

Copies share the SDFs of the template (:class:`~hydro.scene.model.ModelBuilder` builds each
distinct SDF once).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .paths import ENVS_ROOT, env_of, is_under, path_in_env

__all__ = ["env_grid", "replicate"]


def env_grid(num_envs: int, spacing: float) -> np.ndarray:
    """(E, 3) env offsets on Isaac Lab's grid, centred on the origin (see the module docstring)."""
    n = int(num_envs)
    rows = int(math.ceil(n / int(math.sqrt(n))))
    cols = int(math.ceil(n / rows))
    i = np.arange(n)
    r, c = i // cols, i % cols
    out = np.zeros((n, 3))
    out[:, 0] = -(r - (rows - 1) / 2.0) * spacing
    out[:, 1] = (c - (cols - 1) / 2.0) * spacing
    return out


def replicate(bodies, shapes, roots, env_origins: dict, num_envs: int, spacing: float):
    """The final bodies and shapes (copies included), articulation roots, env origins and envs,
    and for each final body the index of the authored body it copies.

    ``bodies``/``shapes``: the authored ones (with ``path``, ``pose``; ``body``, ``local_pose``),
    ``roots`` the articulation root paths, ``env_origins`` the authored origins by env index.
    Returns ``(bodies, shapes, roots, origins, body_env, shape_env, body_src)``.
    """
    paths = [b.path for b in bodies] + [s.path for s in shapes] + list(roots)
    authored = sorted({e for e in map(env_of, paths) if e is not None})
    under_envs = [p for p in paths if is_under(p, ENVS_ROOT) and env_of(p) is None]
    if under_envs:
        raise ValueError(f"prim {under_envs[0]} is under {ENVS_ROOT} but not in an env: env prims must be "
                         f"named {ENVS_ROOT}/env_<i>")
    bodies, shapes, roots = list(bodies), list(shapes), list(roots)
    body_src = list(range(len(bodies)))

    if not authored:
        if num_envs == 1:
            origins = [np.zeros(3)]
            body_env = [0] * len(bodies)
            shape_env = [0 if s.body >= 0 else -1 for s in shapes]
            return bodies, shapes, roots, origins, body_env, shape_env, body_src
        _check_copies(num_envs, len(bodies) + len(shapes))
        return _copies(bodies, shapes, range(len(bodies)), range(len(shapes)), roots, np.zeros(3),
                       env_grid(num_envs, spacing), global_bodies=[], global_shapes=[])

    if authored != list(range(len(authored))):
        missing = sorted(set(range(max(authored) + 1)) - set(authored))
        raise ValueError(f"the scene's envs must be numbered env_0 … env_{max(authored)} without gaps; "
                         f"env_{missing[0]} is missing")
    n = len(authored)
    if n > 1:
        if num_envs not in (1, n):
            raise ValueError(f"the scene authors {n} envs itself; num_envs must be 1 or {n}, got {num_envs}")
        origins = [env_origins.get(i, np.zeros(3)) for i in range(n)]
        body_env = [env_of(b.path) if env_of(b.path) is not None else 0 for b in bodies]
        shape_env = [body_env[s.body] if s.body >= 0 else (env_of(s.path) if env_of(s.path) is not None else -1)
                     for s in shapes]
        return bodies, shapes, roots, origins, body_env, shape_env, body_src

    # one template env (env_0): copy it num_envs times
    template_origin = env_origins.get(0, np.zeros(3))
    if num_envs == 1:
        body_env = [0] * len(bodies)
        shape_env = [0 if (s.body >= 0 or env_of(s.path) == 0) else -1 for s in shapes]
        return bodies, shapes, roots, [template_origin], body_env, shape_env, body_src
    t_bodies = [i for i, b in enumerate(bodies) if env_of(b.path) == 0]
    t_shapes = [i for i, s in enumerate(shapes) if env_of(s.path) == 0]
    for i in t_shapes:
        s = shapes[i]
        if s.body >= 0 and env_of(bodies[s.body].path) != 0:
            raise ValueError(f"shape {s.path} is in env_0 but its body {bodies[s.body].path} is not")
    g_bodies = [i for i in range(len(bodies)) if i not in set(t_bodies)]
    g_shapes = [i for i in range(len(shapes)) if i not in set(t_shapes)]
    for i in g_shapes:
        s = shapes[i]
        if s.body >= 0 and env_of(bodies[s.body].path) == 0:
            raise ValueError(f"shape {s.path} is outside env_0 but its body {bodies[s.body].path} is in it")
    t_roots = [r for r in roots if env_of(r) == 0]
    g_roots = [r for r in roots if env_of(r) != 0]
    _check_copies(num_envs, len(t_bodies) + len(t_shapes))
    return _copies(bodies, shapes, t_bodies, t_shapes, t_roots, template_origin, env_grid(num_envs, spacing),
                   global_bodies=g_bodies, global_shapes=g_shapes, global_roots=g_roots)


def _check_copies(num_envs: int, items: int) -> None:
    """Refuse (:class:`~hydro.errors.BudgetError`) env copies over the memory budget, before any
    is made (:func:`hydro.budget.check_memory`)."""
    from ..budget import ENV_COPY_BYTES, check_memory

    check_memory(float(num_envs) * max(items, 1) * ENV_COPY_BYTES,
                 what=f"{num_envs} envs of {items} bodies and shapes each",
                 setting="use fewer envs (num_envs, hydro run --num-envs)")


def _copies(all_bodies, all_shapes, body_ids, shape_ids, roots, base_origin, offsets, *, global_bodies, global_shapes,
            global_roots=()):
    """Global items first (unchanged), then for each env i a copy of the template moved into env i
    (:func:`~hydro.scene.paths.path_in_env`) and shifted by ``offsets[i]``; env i's origin is
    ``base_origin + offsets[i]``."""
    bodies, shapes, body_env, shape_env, body_src = [], [], [], [], []
    new_index = {}
    for b in global_bodies:
        new_index[(None, b)] = len(bodies)
        bodies.append(all_bodies[b])
        body_env.append(0)
        body_src.append(b)
    for s in global_shapes:
        sh = all_shapes[s]
        shapes.append(replace(sh, body=new_index[(None, sh.body)]) if sh.body >= 0 else sh)
        shape_env.append(0 if sh.body >= 0 else -1)
    out_roots = list(global_roots)
    for i, off in enumerate(offsets):
        for b in body_ids:
            src = all_bodies[b]
            pose = src.pose.copy()
            pose[:3] += off
            new_index[(i, b)] = len(bodies)
            bodies.append(replace(src, path=path_in_env(src.path, i), pose=pose))
            body_env.append(i)
            body_src.append(b)
        for s in shape_ids:
            src = all_shapes[s]
            if src.body >= 0:
                shapes.append(replace(src, path=path_in_env(src.path, i), body=new_index[(i, src.body)]))
            else:
                pose = src.local_pose.copy()
                pose[:3] += off
                shapes.append(replace(src, path=path_in_env(src.path, i), local_pose=pose))
            shape_env.append(i)
        out_roots += [path_in_env(r, i) for r in roots]
    origins = [np.asarray(base_origin, dtype=float) + o for o in offsets]
    return bodies, shapes, out_roots, origins, body_env, shape_env, body_src
