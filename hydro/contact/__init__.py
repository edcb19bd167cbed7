"""Contacts between shapes: configuration, the stages of the pipeline, and their results.

Stages, in the order :class:`~hydro.contact.pipeline.HydroelasticPipeline` calls them:
``broad_phase`` → ``pair_setup`` → ``refine`` → ``marching`` (with ``contacts``, the per-triangle
math and the packed contact columns, and ``mc_tables``) → ``reduction``; ``interface`` is the
interface field that refinement and marching share, ``workspace`` the pipeline's buffers and
their capacities. ``config`` holds the runtime options, ``types`` the result types;
``patch_mesh`` turns a result into patch meshes for drawing.
"""
