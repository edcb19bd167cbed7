"""Scenes: the model (bodies, shapes, SDFs, envs), USD in and out, the schema rules.

``model`` (:class:`ModelBuilder`, :class:`Model`, :class:`State`), ``mass`` (mass properties),
``replicate`` (envs and their copies), ``paths`` (the env-path rule, prim-path expressions, the
actor table), ``usd_io`` (the only module that imports ``pxr``), ``usd_convert`` (what USD
reading and writing compute on plain values), ``usd_values`` (the schemas' values in hydro's
units and terms: materials, mesh approximations, groups, filtered pairs), ``material`` (contact
materials), ``validate`` (pure rules on plain records, no USD). The rules: docs/usd.md.
"""
