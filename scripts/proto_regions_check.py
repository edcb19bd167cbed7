import sys, time, os; sys.path.insert(0, "/work/proto"); sys.path.insert(0, "/work/main/scripts")
import numpy as np, bench_peers as bp
from nonconvex_pieces import *
from hydro.tools import analytic
from hydro.geometry import Mesh
def clean(V, F):
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    ar = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    return F[ar > 1e-12 * np.abs(V).max() ** 2]
def run(label, V, F, ka, kb, d, ref, rule):
    F = clean(V, F)
    near = near_lists(V, F, 2 * d)
    out, stats, n, c = pieces(V, F, ka, kb, d, near=near, mixed_rule=rule)
    fz, area = integrate(out, n, c, ka)
    print(f"{label:22s} {rule:4s} pieces {len(out):4d} err {fz / ref - 1:+.2e} {stats}")
K = 1e9
for name, file, spacing in bp.ASSET_ROWS[int(sys.argv[1]):int(sys.argv[1])+1]:
    solid = Mesh.load(os.path.join(bp.ASSETS, file)).solid()
    V, F = np.asarray(solid.vertices, float), np.asarray(solid.faces)
    lo, hi = V.min(0), V.max(0)
    for frac in (0.1, 0.02):
        d = frac * float(hi[2] - lo[2])
        lift = np.array([0, 0, -lo[2] - d])
        ref = bp.asset_reference(V, F, lift, 1e9, 1e12, spacing * 2)
        for rule in ("skip",):
            run(f"{name[:12]} {frac}", V + lift, F, 1e9, 1e12, d, ref, rule)
