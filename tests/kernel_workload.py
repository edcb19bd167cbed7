"""A small workload that launches every kernel hydro defines (used by the PTX test)."""

import numpy as np


def exercise_all_kernels(device):
    from hydro.contact.config import HydroelasticConfig
    from hydro.geometry import Box, Sphere
    from hydro.contact.pipeline import HydroelasticPipeline
    from hydro.sdf import SDFPack, SDFSettings, build_sdf
    from pipeline_util import pose, shapes

    pack = SDFPack([build_sdf(Sphere(0.1), SDFSettings(max_resolution=16)),
                    build_sdf(Box((0.1, 0.1, 0.1)), SDFSettings(max_resolution=16))])
    pts = np.zeros((4, 3))
    ids = np.array([0, 1, 0, 1])
    pack.sample(ids, pts, device=device)
    pack.sample_grad(ids, pts, device=device)
    pack.grid_values(1, (0, 0, 0), (3, 2, 1), device=device)
    import trimesh

    from hydro.geometry import Mesh

    ico = trimesh.creation.icosphere(subdivisions=1, radius=0.05)
    mesh = Mesh(ico.vertices, ico.faces, name="ico")
    mesh_pack = SDFPack([build_sdf(mesh, SDFSettings(max_resolution=16))])
    mesh_pack.sample_exact(np.zeros(4, np.int32), pts, device=device)  # a mesh's exact field

    # the staged path (every launch through Device.launch, where signatures are recorded); a sphere
    # (marching cubes) and a box (polygons, stage 4b) on a box
    m = shapes([Box((0.3, 0.3, 0.1)), Sphere(0.05), Box((0.04, 0.04, 0.04)), mesh], resolution=16)
    poses = np.array([pose((0, 0, -0.05)), pose((0, 0, 0.045)), pose((0.1, 0, 0.019)), pose((-0.08, 0, 0.045))])
    HydroelasticPipeline(m, HydroelasticConfig(reduce_contacts=True), device=device,
                         stage_timings=True).collide(poses)

    from hydro.contact.point_pipeline import PointContactPipeline
    from point_util import every_handler_scene

    m, poses = every_handler_scene()  # the default contact path: every narrow-phase handler
    PointContactPipeline(m, device=device).collide(poses)

    from hydro.sim.contact_data_packed import pack_contact_data
    from test_contact_data import launch_both, random_case, random_rigid_case

    pack_contact_data(device, **random_case(0, n=40), max_contact_data_count=3, points_in_world_space=False)
    launch_both(random_rigid_case(0, capacity=40), 3, False)  # the documented launchers (NumPy: CPU)
