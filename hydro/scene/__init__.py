"""Scenes: the model (bodies, shapes, SDFs, envs), USD in and out, the schema rules.

``model`` (:class:`ModelBuilder`, :class:`Model`, :class:`State`), ``usd_io`` (the only module
that imports ``pxr``), ``validate`` (pure rules on plain records, no USD), ``paths`` (env
namespaces and prim-path expressions).
"""
