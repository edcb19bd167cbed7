"""A small workload that launches every kernel hydro defines (used by the PTX test)."""

import numpy as np


def exercise_all_kernels(device):
    from hydro.geometry import Box, Sphere
    from hydro.sdf import SDFPack, SDFSettings, build_sdf

    pack = SDFPack([build_sdf(Sphere(0.1), SDFSettings(max_resolution=16)),
                    build_sdf(Box((0.1, 0.1, 0.1)), SDFSettings(max_resolution=16))])
    pts = np.zeros((4, 3))
    ids = np.array([0, 1, 0, 1])
    pack.sample(ids, pts, device=device)
    pack.sample_grad(ids, pts, device=device)
