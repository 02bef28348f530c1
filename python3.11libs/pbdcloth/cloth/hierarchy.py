"""The particle hierarchy of hierarchical position based dynamics: Müller 2008, "Hierarchical
Position Based Dynamics" (VRIPHYS), section 4.

Gauss-Seidel passes carry a pin's pull one edge per pass, so a finely meshed cloth stretches in
proportion to its resolution. The hierarchy adds coarser copies of the mesh on which the same
pull travels in a few passes; their corrections are interpolated down to the fine particles.

Level 0 is the cloth's particles and mesh edges. Level l + 1 keeps a subset of level l's
particles, the *coarse* ones:

* coarse particles are every pinned particle and a maximal independent set of the others in
  level l's graph (no two free neighbours are coarse, every other particle has a coarse
  neighbour), chosen greedily by index (:func:`independent_set`);
* each *fine* particle f (of level l, not coarse) gets up to K = 2 *parents*: its nearest coarse
  neighbours in the rest shape, with weights w_fp proportional to 1 / |X_f - X_p|, summing to 1;
* level l + 1's constraints join the coarse particles that share a neighbour on level l, and
  those on either side of an edge between two fine particles (:func:`_coarse_links`), with
  the rest shape's distance over its surface as rest length (:func:`surface_distance`);
* masses are passed up: m_p += sum_f w_fp m_f (pinned particles stay pinned at every level).

Levels are added until fewer than :data:`MIN_LEVEL_PARTICLES` particles remain.
:mod:`pbdcloth.constraints.hierarchy` projects them, coarsest first.

A rest distance between coarse particles is the length of the surface path between them in the
rest shape, not the chord: for a curved rest shape the chord is shorter than the path, and a
stretch-only constraint on the chord is a bending constraint of infinite stiffness: a sheet
bent flatter than its curved rest shape was curled back in one pass, whatever its bend
compliance (scripts/energy_cases.py: a cylinder of radius 0.5 m released flat gained 225 % of
its energy, lying flat on a frictionless plane 1115 %). On a flat panel the path is the chord,
bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import F, I
from ..portable import atan2
from .coloring import color_constraints_pinned_last

MIN_LEVEL_PARTICLES = 16
"""No coarser level is built once a level has fewer particles than this."""
PARENTS = 2
"""Parents per fine particle (K)."""


@dataclass(frozen=True)
class HierarchyLevel:
    """One coarse level: its distance constraints (colored) and how its corrections reach the
    finer level's other particles. All indices are particle indices of the cloth.

    Attributes:
        i, j: constraint end points, shape (M,), in colored order.
        rest: rest-shape distances [m], shape (M,).
        wi, wj: the ends' inverse masses on this level [1/kg], shape (M,).
        wi_frac, wj_frac: w_i / (w_i + w_j) and w_j / (w_i + w_j) with this level's masses,
            0 where both ends are pinned, shape (M,).
        offsets: color boundaries, shape (C + 1,).
        fine: the finer level's particles that are not on this level, shape (F,).
        parents: each fine particle's parents on this level, shape (F, K) (a particle with one
            parent repeats it, with weight 0).
        weights: interpolation weights, rows summing to 1, shape (F, K).
        scale: no stiffness scale (the coarse levels are always projected fully); the field
            lets a level stand where a distance family is read.
    """

    i: I
    j: I
    rest: F
    wi: F
    wj: F
    wi_frac: F
    wj_frac: F
    offsets: I
    fine: I
    parents: I
    weights: F
    scale: F | None = None

    @property
    def count(self) -> int:
        return int(self.i.shape[0])

    def color_slices(self) -> list[slice]:
        return [slice(int(a), int(b)) for a, b in zip(self.offsets[:-1], self.offsets[1:])]


@dataclass(frozen=True)
class Hierarchy:
    """The coarse levels, finest first (level 1 at index 0); empty for small meshes."""

    levels: tuple[HierarchyLevel, ...] = ()

    @property
    def depth(self) -> int:
        return len(self.levels)

    def sizes(self) -> list[int]:
        """Constraints per level, finest first."""
        return [lv.count for lv in self.levels]


EMPTY_HIERARCHY = Hierarchy()


def independent_set(indptr: I, indices: I, pinned: np.ndarray) -> np.ndarray:
    """A maximal independent set of the free vertices of the graph (CSR ``indptr``,
    ``indices``, symmetric, no self loops), with every pinned vertex, as a boolean mask: all
    pinned vertices are taken (neighbouring pins too: a pin must stay on every level, as the
    hand-down would otherwise move it), then the others by index, each one taken when none of
    its neighbours is.

    On a mesh whose points are numbered row by row this gives a regular sub-lattice, which
    carries the pull far better than a scattered set: a 30 x 30 sheet hanging from two corners
    strains 3.8 % at most with it, 85 % with a set chosen by hashed priorities. A loop over the
    vertices, run once when the model is built (about 30 ms for 10k particles).
    """
    n = len(indptr) - 1
    state = np.zeros(n, dtype=np.int8)          # 0 open, 1 taken, 2 next to a taken vertex
    pins = np.flatnonzero(pinned)
    state[indices[np.isin(np.repeat(np.arange(n), np.diff(indptr)), pins)]] = 2
    state[pins] = 1
    for v in np.flatnonzero(~pinned).tolist():
        if state[v] == 0:
            state[v] = 1
            around = indices[indptr[v]:indptr[v + 1]]
            state[around[state[around] == 0]] = 2
    return state == 1


def _csr(pairs: I, n: int) -> tuple[I, I]:
    """Symmetric CSR (indptr, indices) of an undirected graph without duplicates or loops."""
    a = np.concatenate([pairs[:, 0], pairs[:, 1]])
    b = np.concatenate([pairs[:, 1], pairs[:, 0]])
    keep = a != b
    a, b = a[keep], b[keep]
    key = np.unique(a.astype(np.int64) * n + b)
    a, b = key // n, key % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, a + 1, 1)
    return np.cumsum(indptr), b


def _rep_table(owner: I, rep: I, n: int) -> I:
    """Each vertex's representatives ``rep`` (grouped by ``owner``, ascending), as an (n, width)
    table padded with -1."""
    counts = np.bincount(owner, minlength=n)
    width = max(int(counts.max(initial=0)), 1)
    table = np.full((n, width), -1, dtype=np.int64)
    order = np.lexsort((rep, owner))
    owner, rep = owner[order], rep[order]
    slot = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    table[owner, slot] = rep
    return table


def _coarse_links(indptr: I, indices: I, coarse: np.ndarray, pinned: np.ndarray) -> I:
    """Pairs (a < b) of coarse vertices, not both ``pinned`` (held: the pins and the particles
    :func:`build_hierarchy` is told to keep), that span a vertex or an edge of the
    graph: for every vertex v and every edge (u, v), each coarse representative of u with each
    of v, where a coarse vertex represents itself and a fine one its coarse neighbours.

    Through a fine vertex this links coarse vertices that share a neighbour (Müller 2008); the
    links across an edge between two fine vertices join coarse vertices three edges apart,
    which two fine neighbours in a row would otherwise leave unlinked (at the end of a strip
    between its pins, say). A link between two pins would move nothing, so none is made: with
    a pinned row kept on every level, such links would join every pin to every other a few
    levels down (and cost the square of their number to list).
    """
    n = len(indptr) - 1
    row = np.repeat(np.arange(n), np.diff(indptr))
    link = ~coarse[row] & coarse[indices]            # fine row -> coarse neighbour
    kept = np.flatnonzero(coarse)
    owner = np.concatenate([kept, row[link]])
    rep = np.concatenate([kept, indices[link]])
    is_pin = pinned[rep]
    free = _rep_table(owner[~is_pin], rep[~is_pin], n)
    pins = _rep_table(owner[is_pin], rep[is_pin], n)
    a = np.concatenate([np.arange(n), row])
    b = np.concatenate([np.arange(n), indices])
    parts = []
    for left, right in ((free, free), (free, pins), (pins, free)):
        both = np.stack(np.broadcast_arrays(left[a][:, :, None], right[b][:, None, :]),
                        axis=-1).reshape(-1, 2)
        parts.append(both[(both >= 0).all(axis=1)])
    pairs = np.sort(np.concatenate(parts), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs, axis=0)


def surface_distance(rest_positions: F, normals: F | None, i: I, j: I) -> F:
    """Distance [m] over the rest surface between particles ``i`` and ``j`` (M,), estimated
    from the chord c = X_j - X_i and the unit rest normals n_i, n_j (N, 3) at its ends.

    The normal turns by phi = angle(n_i, n_j) about k = n_i x n_j / |n_i x n_j|. The chord's
    part across k, c_t = |c - (c . k) k|, spans an arc of that turn, c_t = 2 R sin(phi / 2),
    of length R phi; its part along k is straight:

        s = sqrt((c_t (phi / 2) / sin(phi / 2))^2 + (c . k)^2)

    Exact on a cylinder, the chord itself where the normals agree
    (a flat panel keeps |c| bit for bit; so does ``normals=None``); at most pi / 2 |c| (a turn
    of pi). Geodesic curvature of the path and doubly curved surfaces are left to this
    estimate's second-order error.
    """
    c = rest_positions[j] - rest_positions[i]
    chord = np.linalg.norm(c, axis=1)
    if normals is None or not len(i):
        return chord
    ni, nj = normals[i], normals[j]
    axis = np.cross(ni, nj)
    sin_phi = np.linalg.norm(axis, axis=1)
    turned = sin_phi > 1e-12
    if not turned.any():
        return chord
    phi = atan2(sin_phi, np.einsum("ij,ij->i", ni, nj))
    k = axis / np.where(turned, sin_phi, 1.0)[:, None]
    along = np.einsum("ij,ij->i", c, k)
    across_sq = np.maximum(chord * chord - along * along, 0.0)
    half = np.where(turned, 0.5 * phi, 1.0)
    stretch = np.where(turned, half / np.sin(half), 1.0)
    s = np.sqrt(across_sq * stretch * stretch + along * along)
    return np.where(turned, np.maximum(s, chord), chord)


def rest_normals(positions: F, normals: F, edges: I, boundary_edges: I) -> F:
    """Unit vertex normals (N, 3) for :func:`surface_distance`: ``normals`` with those of the
    border points extrapolated one step outwards.

    A border point's triangles lie on one side of it, so its normal leans inwards by about half
    the turn to the next point inside (on a cylinder, half a column's angle). With n_in the
    normal of its inner neighbour across the border (the edge to a point off the border most
    nearly perpendicular to the point's border edges), n_b is replaced by n_b + (n_b - n_in),
    normalised. Where n_in equals n_b (a flat panel) nothing changes, bit for bit; a border
    point without an inner neighbour, or with a zero normal, keeps its normal.
    """
    n = len(normals)
    border_e = np.asarray(boundary_edges, dtype=np.int64).reshape(-1, 2)
    if not len(border_e):
        return normals
    border = np.zeros(n, dtype=bool)
    border[border_e.reshape(-1)] = True
    # Border tangent at each border point: its border edges, oriented alike, summed.
    d = positions[border_e[:, 1]] - positions[border_e[:, 0]]
    d = d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None]
    tangent = np.zeros((n, 3))
    for k in range(3):
        tangent[:, k] = (np.bincount(border_e[:, 0], weights=d[:, k], minlength=n)
                         + np.bincount(border_e[:, 1], weights=d[:, k], minlength=n))
    e = np.asarray(edges, dtype=np.int64)
    a, b = np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]])
    inner = border[a] & ~border[b]
    a, b = a[inner], b[inner]
    if not len(a):
        return normals
    r = positions[b] - positions[a]
    t = tangent[a]
    along = np.abs(np.einsum("ij,ij->i", r, t)) / np.maximum(
        np.linalg.norm(r, axis=1) * np.linalg.norm(t, axis=1), 1e-300)
    order = np.lexsort((b, along, a))
    a, b = a[order], b[order]
    first = np.r_[True, a[1:] != a[:-1]]
    a, b = a[first], b[first]
    out = normals.copy()
    moved = ~(normals[b] == normals[a]).all(axis=1) & (normals[a] != 0.0).any(axis=1)
    a, b = a[moved], b[moved]
    pushed = 2.0 * normals[a] - normals[b]
    length = np.linalg.norm(pushed, axis=1)
    ok = length > 0.0
    out[a[ok]] = pushed[ok] / length[ok, None]
    return out


def build_hierarchy(rest_positions: F, edges: I, mass: F, inv_mass: F,
                    normals: F | None = None, keep: np.ndarray | None = None) -> Hierarchy:
    """The coarse levels of a cloth (see the module docstring).

    Args:
        rest_positions: rest shape (N, 3) [m].
        edges: mesh edges (E, 2) (level 0's graph).
        mass: particle masses (N,) [kg].
        inv_mass: inverse masses (N,), 0 for pinned particles.
        normals: unit vertex normals of the rest shape (N, 3), for the coarse rest distances
            over the surface (:func:`surface_distance`); ``None``: chords.
        keep: particles held on every level like the pins, (N,) booleans, or None: a torn
            cloth's particles on torn edges (``edges`` leaves the torn edges out). A held
            particle is never a fine one and no link joins two held particles, so no coarse
            link runs from one side of a crack to the other: a chord across an opening crack
            (zero for two copies of one point) would pull it shut, and did, flinging debris at
            40 m/s in the tear scene.
    """
    n = len(rest_positions)
    pinned = inv_mass == 0.0
    held = pinned if keep is None else pinned | keep
    current = np.arange(n)
    pairs = np.asarray(edges, dtype=np.int64)  # in indices of ``current``
    level_mass = np.asarray(mass, dtype=np.float64).copy()
    levels: list[HierarchyLevel] = []
    while len(current) >= MIN_LEVEL_PARTICLES and len(pairs):
        m = len(current)
        indptr, indices = _csr(pairs, m)
        coarse = independent_set(indptr, indices, held[current])
        if coarse.all() or not coarse.any():
            break
        fine, parents, weights = _parents(rest_positions, current, indptr, indices, coarse)
        up = level_mass.copy()
        np.add.at(up, parents.ravel(), (weights * level_mass[fine][:, None]).ravel())
        coarse_pairs = _coarse_links(indptr, indices, coarse, held[current])
        if not len(coarse_pairs):
            break
        level_mass = up
        levels.append(_level(rest_positions, normals, current[coarse_pairs], fine, parents,
                             weights, np.where(pinned, 0.0, 1.0 / np.maximum(level_mass, 1e-300)),
                             n))
        local = np.full(m, -1, dtype=np.int64)
        local[coarse] = np.arange(int(coarse.sum()))
        pairs = local[coarse_pairs]
        current = current[coarse]
    return Hierarchy(tuple(levels))


def _parents(rest_positions: F, current: I, indptr: I, indices: I, coarse: np.ndarray
             ) -> tuple[I, I, F]:
    """Fine particles of a level (cloth indices), their K nearest coarse neighbours (cloth
    indices) and inverse-distance weights."""
    m = len(current)
    row = np.repeat(np.arange(m), np.diff(indptr))
    link = ~coarse[row] & coarse[indices]
    f_local, p_local = row[link], indices[link]
    dist = np.linalg.norm(rest_positions[current[f_local]] - rest_positions[current[p_local]],
                          axis=1)
    order = np.lexsort((p_local, dist, f_local))
    f_local, p_local, dist = f_local[order], p_local[order], dist[order]
    first = np.r_[True, f_local[1:] != f_local[:-1]]
    start = np.flatnonzero(first)
    rank = np.arange(len(f_local)) - start[np.cumsum(first) - 1]
    fine_local = f_local[start]
    parents = np.repeat(p_local[start][:, None], PARENTS, axis=1)
    inv = np.zeros((len(fine_local), PARENTS))
    slot = np.searchsorted(fine_local, f_local)
    near = rank < PARENTS
    parents[slot[near], rank[near]] = p_local[near]
    inv[slot[near], rank[near]] = 1.0 / np.maximum(dist[near], 1e-300)
    weights = inv / inv.sum(axis=1, keepdims=True)
    return current[fine_local], current[parents], weights


def _level(rest_positions: F, normals: F | None, pairs: I, fine: I, parents: I, weights: F,
           inv_mass: F, n: int) -> HierarchyLevel:
    coloring = color_constraints_pinned_last(pairs, inv_mass, n)
    pairs = pairs[coloring.order]
    i = np.ascontiguousarray(pairs[:, 0]).astype(np.intp)
    j = np.ascontiguousarray(pairs[:, 1]).astype(np.intp)
    wi, wj = inv_mass[i], inv_mass[j]
    wsum = wi + wj
    safe = np.where(wsum > 0.0, wsum, 1.0)
    return HierarchyLevel(
        i=i, j=j, rest=surface_distance(rest_positions, normals, i, j),
        wi=wi, wj=wj, wi_frac=np.where(wsum > 0.0, wi / safe, 0.0),
        wj_frac=np.where(wsum > 0.0, wj / safe, 0.0),
        offsets=coloring.offsets, fine=fine.astype(np.intp), parents=parents.astype(np.intp),
        weights=weights,
    )


__all__ = ["EMPTY_HIERARCHY", "Hierarchy", "HierarchyLevel", "build_hierarchy",
           "independent_set", "rest_normals", "surface_distance"]
