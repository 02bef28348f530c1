"""Tearing: links stretched past their limit break, and the cloth is split along torn edges.

A mesh edge breaks when its length exceeds ``(1 + tear_strain)`` times its rest length. Its two
half-edges are marked torn (``Topology.cut``); the hinge across it (bend quad and shear pair)
goes at once, its stretch constraint stays (each triangle still needs its side). A vertex splits
when the triangles around it fall into more than one edge-connected fan once the torn edges no
longer connect them: the fan holding the vertex's lowest corner keeps the vertex, every other
fan gets a new particle, appended after the existing ones (in order of vertex, then fan). So a
crack opens where a torn edge reaches the boundary or meets another torn edge at a vertex, and
runs on as further edges break, as in a real tear.

Each new particle starts where its parent is, with its velocity and its rest position; the
parent's mass is shared among its copies in proportion to the rest area of their fans (the
lumped mass of each fan; the kept copy takes the remainder), so total mass and linear momentum
are unchanged up to one rounding per split. Copies of a pinned particle stay pinned to the
parent's target. The constraint families are rebuilt from the torn mesh; their colors carry
over (removing constraints and moving their ends to copies of particles keeps a coloring valid)
and only constraints that did not exist before (the second side of a torn edge) are colored,
first fit (:func:`~pbdcloth.cloth.coloring.extend_coloring`), so the whole tear is
deterministic. Tethers are rebuilt over the torn mesh (a tether never reaches across a tear).

Other distance-like families (stitches, welds) plug in as :class:`Breakable`: pairs (i, j) with
a length beyond which each breaks; :func:`broken` tests any of them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import B, F, I
from .coloring import extend_coloring
from .mesh import ClothMesh
from .model import ClothModel, FamilyColorings, _ColoredFamily, assemble_model
from .topology import build_topology, edge_use


@dataclass(frozen=True)
class Breakable:
    """A family of distance-like links that break when stretched too far.

    Attributes:
        name: the family ("stretch", "stitch", ...).
        index: each link's index in its family, shape (K,).
        i, j: the particles of each link, shape (K,).
        max_length: length beyond which each link breaks [m], shape (K,).
    """

    name: str
    index: I
    i: I
    j: I
    max_length: F


def broken(positions: F, family: Breakable) -> I:
    """Indices (``family.index``) of the links longer than their ``max_length``, ascending."""
    d = positions[family.i] - positions[family.j]
    length = np.sqrt((d * d).sum(axis=1))
    return np.sort(family.index[length > family.max_length])


def stretch_breakable(model: ClothModel, tear_strain: float) -> Breakable:
    """The mesh edges not torn yet, breaking past ``(1 + tear_strain)`` x rest length."""
    top = model.topology
    whole = np.flatnonzero(~top.edge_cut)
    return Breakable("stretch", whole.astype(np.intp), top.edges[whole, 0].astype(np.intp),
                     top.edges[whole, 1].astype(np.intp),
                     (1.0 + tear_strain) * top.edge_rest_length[whole])


@dataclass(frozen=True)
class Tear:
    """The cloth after a tear.

    Attributes:
        model: the torn model.
        origin: the particle of the previous model each particle comes from, shape (N',);
            ``origin[:N] == arange(N)``, new particles follow.
        pin_rows: for each pin of the torn model (sorted), its row in the previous pin order,
            shape (P',).
        torn_edges: edges that broke.
        new_particles: particles added by splitting vertices.
    """

    model: ClothModel
    origin: I
    pin_rows: I
    torn_edges: int
    new_particles: int


def _next_corner(halves: I) -> I:
    """The corner after each corner (3 t + k -> 3 t + (k + 1) % 3)."""
    return halves - halves % 3 + (halves % 3 + 1) % 3


def corner_fans(triangles: I, cut: B,
                use: tuple[I, I, I] | None = None) -> I:
    """The fan of every triangle corner: corners (3 t + k) at one vertex are in one fan when
    triangles linked by un-torn shared edges around that vertex join them. Returns, for each
    corner, the lowest corner index of its fan, shape (3 T,).

    Connected components by label propagation over the corner links, with pointer jumping
    (each round also takes the label of the label), in whole-array steps. ``use``: the
    :func:`~pbdcloth.cloth.topology.edge_use` of ``triangles`` when already at hand.
    """
    edges, counts, edge_of = use if use is not None else edge_use(triangles)
    edge_cut = np.zeros(edges.shape[0], dtype=bool)
    np.logical_or.at(edge_cut, edge_of, cut.reshape(-1))
    order = np.argsort(edge_of, kind="stable")
    starts = np.searchsorted(edge_of[order], np.arange(edges.shape[0]))
    joined = starts[(counts == 2) & ~edge_cut]
    h0, h1 = order[joined], order[joined + 1]
    flat = triangles.reshape(-1)
    n0, n1 = _next_corner(h0), _next_corner(h1)
    same = flat[h1] == flat[h0]  # both triangles list the edge in the same direction
    a1 = np.where(same, h1, n1)
    b1 = np.where(same, n1, h1)
    l0 = np.concatenate([h0, n0])
    l1 = np.concatenate([a1, b1])
    label = np.arange(flat.shape[0], dtype=np.int64)
    while True:
        low = np.minimum(label[l0], label[l1])
        nxt = label.copy()
        np.minimum.at(nxt, l0, low)
        np.minimum.at(nxt, l1, low)
        nxt = nxt[nxt]
        if np.array_equal(nxt, label):
            return label
        label = nxt


def _family_colors(family: _ColoredFamily, source: I) -> I:
    """Color of each constraint of a family in topology order."""
    colors = np.empty(source.shape[0], dtype=np.int64)
    colors[source] = np.repeat(np.arange(family.color_count), np.diff(family.offsets))
    return colors


def _carried(old_keys: I, old_colors: I, new_keys: I) -> I:
    """The color of each new constraint whose key names an old one, -1 for the rest; of
    several new constraints with one old key only the first keeps its color. Keys are int64,
    one per constraint, unique among the old ones."""
    m = old_keys.shape[0]
    if new_keys.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if m == 0:
        return np.full(new_keys.shape[0], -1, dtype=np.int64)
    both = np.concatenate([old_keys, new_keys]).astype(np.int64)
    _, inverse = np.unique(both, return_inverse=True)
    inverse = inverse.reshape(-1)
    slot = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
    slot[inverse[:m]] = old_colors
    colors = slot[inverse[m:]]
    _, first = np.unique(inverse[m:], return_index=True)
    later = np.ones(colors.shape[0], dtype=bool)
    later[first] = False
    colors[later] = -1
    return colors


def _pair_keys(pairs: I, base: int) -> I:
    """One int64 key per unordered pair: min * base + max (``base`` > every index)."""
    p = np.sort(pairs, axis=1).astype(np.int64)
    return p[:, 0] * base + p[:, 1]


def _quad_keys(quads: I, base: int) -> I:
    """A hinge's key: its shared edge's (one hinge per edge of a manifold mesh)."""
    return _pair_keys(quads[:, :2], base)


def tear_edges(model: ClothModel, edges: I) -> Tear:
    """Break the mesh edges ``edges`` (indices into ``model.topology.edges``) and split the
    cloth where its fans come apart (see the module docstring)."""
    top, mesh = model.topology, model.mesh
    tris = mesh.triangles
    n = mesh.point_count
    torn = np.zeros(top.edges.shape[0], dtype=bool)
    torn[np.asarray(edges, dtype=np.intp)] = True
    use = edge_use(tris)
    cut = top.cut | torn[use[2]].reshape(tris.shape)
    edge_cut = top.edge_cut | torn

    # Fans of the corners at vertices on a torn edge; others never split.
    flat = tris.reshape(-1)
    label = corner_fans(tris, cut, use)
    candidate = np.zeros(n, dtype=bool)
    candidate[top.edges[edge_cut].reshape(-1)] = True
    sel = np.flatnonzero(candidate[flat])
    corner_base = flat.shape[0]
    fan_keys, inverse = np.unique(flat[sel].astype(np.int64) * corner_base + label[sel],
                                  return_inverse=True)
    inverse = inverse.reshape(-1)
    fans = np.stack([fan_keys // corner_base, fan_keys % corner_base], axis=1)
    extra = np.zeros(fans.shape[0], dtype=bool)
    extra[1:] = fans[1:, 0] == fans[:-1, 0]
    new_id = np.where(extra, n + np.cumsum(extra) - 1, fans[:, 0])
    corners = flat.copy()
    corners[sel] = new_id[inverse]
    parents = fans[extra, 0]
    origin = np.concatenate([np.arange(n), parents]).astype(np.intp)

    # Mass: the parent's mass shared by rest fan area; the kept copy takes the remainder.
    corner_area = np.repeat(top.triangle_area / 3.0, 3)[sel]
    fan_area = np.bincount(inverse, weights=corner_area, minlength=fans.shape[0])
    vertex_area = np.bincount(fans[:, 0], weights=fan_area, minlength=n)
    mass = model.mass.copy()
    extra_mass = mass[parents] * (fan_area[extra] / vertex_area[parents])
    given = np.bincount(parents, weights=extra_mass, minlength=n)
    mass -= given
    mass = np.concatenate([mass, extra_mass])

    new_mesh = ClothMesh(positions=mesh.positions[origin], triangles=corners.reshape(tris.shape))
    new_top = build_topology(new_mesh, cut)
    was_pinned = np.zeros(n, dtype=bool)
    was_pinned[model.pinned] = True
    pins = np.flatnonzero(was_pinned[origin]).astype(np.int64)
    pin_rows = np.searchsorted(model.pinned, origin[pins]).astype(np.intp)

    org = origin.astype(np.int64)
    count = new_mesh.point_count
    base = n
    colorings = FamilyColorings(
        stretch=extend_coloring(new_top.edges, _carried(
            _pair_keys(top.edges, base), _family_colors(model.stretch, model.stretch.source),
            _pair_keys(org[new_top.edges], base)), count),
        shear=extend_coloring(new_top.shear_pairs, _carried(
            _pair_keys(top.shear_pairs, base), _family_colors(model.shear, model.shear.source),
            _pair_keys(org[new_top.shear_pairs], base)), count),
        bend=extend_coloring(new_top.bend_quads, _carried(
            _quad_keys(top.bend_quads, base), _family_colors(model.bend, model.bend.source),
            _quad_keys(org[new_top.bend_quads], base)), count),
    )
    new_model = assemble_model(new_mesh, new_top, mass, pins, colorings)
    return Tear(model=new_model, origin=origin, pin_rows=pin_rows,
                torn_edges=int(torn.sum()), new_particles=int(parents.shape[0]))


def piece_labels(edges: I, particle_count: int) -> I:
    """The connected piece of every particle over ``edges`` (E, 2): the lowest particle index
    of its piece, shape (N,); ``np.unique(labels).size`` counts the pieces a tear left."""
    label = np.arange(particle_count, dtype=np.int64)
    if edges.shape[0] == 0:
        return label
    a, b = edges[:, 0], edges[:, 1]
    while True:
        low = np.minimum(label[a], label[b])
        nxt = label.copy()
        np.minimum.at(nxt, a, low)
        np.minimum.at(nxt, b, low)
        nxt = nxt[nxt]
        if np.array_equal(nxt, label):
            return label
        label = nxt


def family_colors(model: ClothModel) -> dict[str, I]:
    """The color of every stretch, shear and bend constraint, in topology order (what a
    checkpoint stores to rebuild a torn model with the same colors)."""
    return {"stretch_colors": _family_colors(model.stretch, model.stretch.source),
            "shear_colors": _family_colors(model.shear, model.shear.source),
            "bend_colors": _family_colors(model.bend, model.bend.source)}


__all__ = ["Breakable", "Tear", "broken", "corner_fans", "family_colors", "piece_labels",
           "stretch_breakable", "tear_edges"]
