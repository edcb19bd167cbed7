"""The face route for a non-convex mesh (``hydro.contact.faces`` with ``hydro.sdf.mesh_faces.region_rules``)
in NumPy, against a half space (a box's top face, z < 0, φ_B = z): one polygon per triangle i of
the mesh, the interface plane kA·plane_i = kB·z clipped to the depth bound below i and to i's
region, bounded by each neighbour m (the triangles within 2·depth of i and the 1-ring) by its
relation to i — coplanar across an edge: i's prism side; across a convex edge or mutually inside:
plane_m <= plane_i (max rule), those max-rule neighbours that are mutually reflex in clusters whose
least plane bounds i (a union: one polygon per choice); across a reflex edge or mutually outside:
plane_i <= plane_m (min rule); behind i or mixed: nothing. Written from the rule table in
docs/design.md stage 4b, not from the kernels."""
import numpy as np



def planes(V, F):
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    return n, -np.einsum("ij,ij->i", n, a)


def clip(poly, n, c):
    """Keep n.x + c <= 0."""
    out = []
    m = len(poly)
    for k in range(m):
        p, q = poly[k], poly[(k + 1) % m]
        fp, fq = n @ p + c, n @ q + c
        if fp <= 0:
            out.append(p)
        if (fp < 0 < fq) or (fq < 0 < fp):
            t = fp / (fp - fq)
            out.append(p + t * (q - p))
    return out


def pieces(V, F, ka, kb, depth_bound, tol=1e-9):
    """The polygons [(i, vertices (k, 3), the interface's unit normal)], the counts of the relations
    met, the triangles' unit normals and offsets."""
    near = near_lists(V, F, 2 * depth_bound)
    n, c = planes(V, F)
    T = len(F)
    # adjacency
    edge_tris = {}
    for t in range(T):
        for k in range(3):
            e = tuple(sorted((F[t, k], F[t, (k + 1) % 3])))
            edge_tris.setdefault(e, []).append(t)
    vert_tris = {}
    for t in range(T):
        for v in F[t]:
            vert_tris.setdefault(v, []).append(t)
    out = []
    stats = {"mixed": 0, "reflex_edges": 0, "convex_edges": 0, "flat_edges": 0}
    for i in range(T):
        a = V[F[i]]
        if a[:, 2].min() > depth_bound:  # its piece lies within depth_bound of it, so not below z = 0
            continue
        hs = []  # half spaces (normal, offset): keep normal.x + offset <= 0
        hs.append((n[i], c[i]))  # inside A (plane_i <= 0)
        hs.append((-n[i], -c[i] - depth_bound))  # plane_i >= -depth_bound
        hs.append((np.array([0.0, 0.0, 1.0]), 0.0))  # inside B
        edges_done = set()
        for k in range(3):
            u, w = F[i, k], F[i, (k + 1) % 3]
            e = tuple(sorted((u, w)))
            others = [t for t in edge_tris[e] if t != i]
            if len(others) != 1:
                stats["nonmanifold"] = stats.get("nonmanifold", 0) + 1
                continue
            m = others[0]
            edges_done.add(m)
            far = [v for v in F[m] if v not in (u, w)][0]
            s = n[i] @ V[far] + c[i]
            if abs(s) <= tol * max(1.0, np.abs(V).max()) and np.abs(n[m] - n[i]).max() < 1e-9:
                # coplanar: i's prism side plane at this edge (outward: away from i's third vertex)
                ed = V[w] - V[u]
                sn = np.cross(ed, n[i])
                sn /= np.linalg.norm(sn)
                third = V[F[i, (k + 2) % 3]]
                if sn @ (third - V[u]) > 0:
                    sn = -sn
                hs.append((sn, -sn @ V[u]))
                stats["flat_edges"] += 1
            elif s < 0:  # convex: plane_m <= plane_i
                hs.append((n[m] - n[i], c[m] - c[i]))
                stats["convex_edges"] += 1
            else:  # reflex: plane_i <= plane_m
                hs.append((n[i] - n[m], c[i] - c[m]))
                stats["reflex_edges"] += 1
        ring = set()
        for v in F[i]:
            ring.update(vert_tris[v])
        ring.update(near[i])
        ring.discard(i)
        scale = 1e-9 * max(1.0, np.abs(V).max())
        maxers = []
        for m in ring:
            if m in edges_done:
                u_far = [v for v in F[m] if v not in F[i]][0]
                if abs(n[i] @ V[u_far] + c[i]) <= scale and np.abs(n[m] - n[i]).max() < 1e-9:
                    continue
                if n[i] @ V[u_far] + c[i] < 0:
                    maxers.append(m)
                continue  # (reflex edge neighbours: min rule, added above)
            si = n[i] @ V[F[m]].T + c[i]  # m's corners against i's plane
            sm = n[m] @ a.T + c[m]
            if np.abs(n[m] - n[i]).max() < 1e-9 and abs(c[m] - c[i]) < scale:
                continue  # coplanar: i's own prism sides separate them
            if si.max() <= scale and sm.max() <= scale:
                maxers.append(m)
            elif si.min() >= -scale and sm.min() >= -scale:
                hs.append((n[i] - n[m], c[i] - c[m]))
            elif si.min() >= -scale:
                stats["behind"] = stats.get("behind", 0) + 1  # m behind i: never nearer in i's region
            else:
                stats["mixed"] += 1
        # max-rule neighbours in clusters linked by reflex relations between them: plane_i >= the
        # least of each cluster's planes (a union: one piece per choice of the least)
        def reflex_pair(m1, m2):
            s12 = n[m1] @ V[F[m2]].T + c[m1]
            s21 = n[m2] @ V[F[m1]].T + c[m2]
            coplanar = np.abs(n[m1] - n[m2]).max() < 1e-9
            return (not coplanar) and s12.min() >= -scale and s21.min() >= -scale
        clusters = []
        for m in maxers:
            hit = [cl for cl in clusters if any(reflex_pair(m, o) for o in cl)]
            merged = [m] + [x for cl in hit for x in cl]
            clusters = [cl for cl in clusters if cl not in hit] + [merged]
        stats["split"] = stats.get("split", 0) + sum(len(cl) > 1 for cl in clusters)
        import itertools
        choices = list(itertools.product(*clusters))
        # the interface plane: ka*plane_i - kb*z = 0
        fn = ka * n[i] - kb * np.array([0.0, 0.0, 1.0])
        fc = ka * c[i]
        fl = np.linalg.norm(fn)
        fn, fc = fn / fl, fc / fl
        # a big square in that plane around the triangle's projection
        q0 = a.mean(axis=0) - (fn @ a.mean(axis=0) + fc) * fn
        u1 = np.cross(fn, [1.0, 0, 0]) if abs(fn[0]) < 0.9 else np.cross(fn, [0, 1.0, 0])
        u1 /= np.linalg.norm(u1)
        u2 = np.cross(fn, u1)
        R = 4 * (np.linalg.norm(a - a.mean(axis=0), axis=1).max() + depth_bound)
        base = [q0 + R * (sx * u1 + sy * u2) for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        for choice in choices:
            extra = []
            for cl, j in zip(clusters, choice):
                extra.append((n[j] - n[i], c[j] - c[i]))  # plane_j <= plane_i
                for k2 in cl:
                    if k2 != j:
                        extra.append((n[j] - n[k2], c[j] - c[k2]))  # plane_j <= plane_k2 (j the least)
            poly = base
            for hn, hc in hs + extra:
                poly = clip(poly, hn, hc)
                if len(poly) < 3:
                    break
            if len(poly) >= 3:
                out.append((i, np.array(poly), fn))
    return out, stats, n, c


def integrate(out, n, c, ka):
    fz = area = 0.0
    for i, poly, fn in out:
        for k in range(1, len(poly) - 1):
            p0, p1, p2 = poly[0], poly[k], poly[k + 1]
            ar = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0))
            cen = (p0 + p1 + p2) / 3
            p = -ka * (n[i] @ cen + c[i])
            fz += p * ar * abs(fn[2])
            area += ar
    return fz, area



def check(V, F, out, n, c, samples=20, seed=0):
    from naive import triangle_distances
    rng = np.random.default_rng(seed)
    tri = V[F]
    worst = []
    for i, poly, fn in out:
        pts = []
        for k in range(1, len(poly) - 1):
            r = rng.random((samples, 2))
            r[r.sum(1) > 1] = 1 - r[r.sum(1) > 1]
            pts.append(poly[0] + r[:, :1] * (poly[k] - poly[0]) + r[:, 1:] * (poly[k + 1] - poly[0]))
        pts = np.concatenate(pts)
        d = triangle_distances(pts, tri).min(axis=1)
        plane = -(pts @ n[i] + c[i])
        worst.append((np.abs(d - plane).max(), i, len(poly)))
    worst.sort(reverse=True)
    return worst


def near_lists(V, F, reach):
    """Per triangle, the triangles within ``reach`` of it (triangle-triangle distance, by sampling
    the pairs whose balls meet: exact enough for the prototype)."""
    from hydro.sdf.mesh_faces import _triangle_gaps
    tri = np.ascontiguousarray(V[F], dtype=np.float64)
    cen = tri.mean(axis=1)
    rad = np.linalg.norm(tri - cen[:, None], axis=2).max(axis=1)
    T = len(F)
    out = [[] for _ in range(T)]
    d2 = ((cen[:, None] - cen[None]) ** 2).sum(-1)
    cand = np.argwhere(np.sqrt(d2) <= rad[:, None] + rad[None] + reach)
    cand = cand[cand[:, 0] < cand[:, 1]]
    gaps = np.zeros(len(cand))
    _triangle_gaps(tri, cand[:, 0].astype(np.int64), cand[:, 1].astype(np.int64), gaps)
    for (a, b), g in zip(cand, gaps):
        if g <= reach:
            out[a].append(b)
            out[b].append(a)
    return out
