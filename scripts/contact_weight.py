"""How the contact table's ``weight`` (∫(−φB) dA over the part of a patch triangle inside the
overlap) compares with the reference document's w = A·(−δ), δ the mean of φB at the triangle's
three vertices, on the shipped hydroelastic scenes at their authored poses, with and without
exact primitive fields (docs/design.md, "The contact table").

Usage::

    python scripts/contact_weight.py [SCENE ...]     # default: sphere, capsule, cube and torus on a box

Per scene and setting: full triangles (wholly inside the overlap) — the median and largest
relative difference; rim triangles; and the patch's total weight beside the document's.
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT = ("sphere_on_box", "capsule_on_box", "cube_on_box", "torus_on_box")


def compare(model, exact: bool) -> dict:
    from hydro.contact.collision import CollisionPipeline
    from hydro.contact.config import HydroelasticConfig

    r = CollisionPipeline(model, HydroelasticConfig(reduce_contacts=False, exact_primitives=exact)).collide(
        model.shape_world_poses(model.state()), triangles=True)
    c, t = r.contacts, r.triangles
    hyd = c.kind == 0
    kb = model.shape_stiffness[c.shape_b[hyd]].astype(float)
    eb = -t.vertex_pressure / kb[:, None]  # φB − marginB at the vertices (0 where outside B)
    live = ~c.speculative[hyd]
    full = live & np.all(t.vertex_depth < 0, axis=1)
    rim = live & ~full
    doc = c.area[hyd] * -eb.mean(axis=1)
    w = c.weight[hyd].astype(float)
    rel = np.abs(w - doc) / np.maximum(doc, 1e-300)
    pick = full & (doc > 0)
    return {"full": int(pick.sum()), "median": float(np.median(rel[pick])) if pick.any() else 0.0,
            "max": float(rel[pick].max()) if pick.any() else 0.0, "rim": int(rim.sum()),
            "total": float(w[live].sum()), "total_doc": float(doc[live].sum())}


def main(argv=None) -> int:
    import hydro

    names = (argv if argv is not None else sys.argv[1:]) or DEFAULT
    print("| scene | exact fields | full triangles | median | max | rim triangles | Σ weight / Σ A·(−δ) |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        model = hydro.load_usd(os.path.join(ROOT, "scenes", f"{name}.usda"))
        for exact in (True, False):
            s = compare(model, exact)
            print(f"| {name} | {'on' if exact else 'off'} | {s['full']} | {100 * s['median']:.2f} % | "
                  f"{100 * s['max']:.2f} % | {s['rim']} | {s['total'] / s['total_doc']:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
