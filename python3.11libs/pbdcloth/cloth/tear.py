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

Other distance-like families plug in as :class:`Breakable`: pairs (i, j) with a length beyond
which each breaks; :func:`broken` tests any of them the same way. Stitches and welds
(:mod:`pbdcloth.cloth.stitches`) with a finite ``break_length`` are such families (a
point-to-triangle stitch measures from its point to the barycentric point of its triangle):
:func:`break_stitches` removes the broken ones, and nothing else changes.

A tear keeps what the cloth was built with (:func:`carry_extras`): every copy of a point takes
its input point's attributes (stiffness scales, pin weight: a copy of a soft pin is a soft pin),
a stitch stays on the point it was given (the copy that keeps the index), and a
point-to-triangle stitch follows its triangle to the triangle's corners in the torn mesh.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..arrays import B, F, I
from .coloring import extend_coloring
from .mesh import ClothMesh
from .model import ClothModel, FamilyColorings, _ColoredFamily, assemble_model, dress_model
from .topology import build_topology, edge_use


@dataclass(frozen=True)
class Breakable:
    """A family of distance-like links that break when stretched too far.

    Attributes:
        name: the family ("stretch", "stitch", "triangle_stitch", ...).
        index: each link's index in its family, shape (K,).
        i: the first particle of each link, shape (K,).
        j: the other particle of each link, shape (K,); or, with ``weights``, the particles
            (K, m) whose weighted sum is the link's other end.
        max_length: length beyond which each link breaks [m], shape (K,).
        weights: (K, m) weights of ``j`` (barycentric coordinates), or None.
    """

    name: str
    index: I
    i: I
    j: I
    max_length: F
    weights: F | None = None


def broken(positions: F, family: Breakable) -> I:
    """Indices (``family.index``) of the links longer than their ``max_length``, ascending."""
    if family.weights is None:
        other = positions[family.j]
    else:
        other = (positions[family.j] * family.weights[:, :, None]).sum(axis=1)
    d = positions[family.i] - other
    length = np.sqrt((d * d).sum(axis=1))
    return np.sort(family.index[length > family.max_length])


def stitch_breakables(model: ClothModel) -> list[Breakable]:
    """The sewn stitches with a finite break length, as ``stitch`` and ``triangle_stitch``
    families; ``index`` is each stitch's row in the model's stitch list."""
    out = []
    st = model.stitch_list
    rows = np.flatnonzero(np.isfinite(st.break_length) & st.sewn).astype(np.intp)
    if rows.size:
        out.append(Breakable("stitch", rows, st.pairs[rows, 0].astype(np.intp),
                             st.pairs[rows, 1].astype(np.intp), st.break_length[rows]))
    tri = model.triangle_stitch_list
    rows = np.flatnonzero(np.isfinite(tri.break_length) & tri.sewn).astype(np.intp)
    if rows.size:
        out.append(Breakable("triangle_stitch", rows, tri.members[rows, 0].astype(np.intp),
                             tri.members[rows, 1:].astype(np.intp), tri.break_length[rows],
                             tri.barycentric[rows]))
    return out


def break_stitches(model: ClothModel, stitch_rows: I, triangle_rows: I) -> ClothModel:
    """The model without the stitches at ``stitch_rows`` of its stitch list and
    ``triangle_rows`` of its triangle stitch list (the families recolored from the rows that
    hold, in their order)."""
    keep = np.ones(model.stitch_list.count, dtype=bool)
    keep[np.asarray(stitch_rows, dtype=np.intp)] = False
    keep_tri = np.ones(model.triangle_stitch_list.count, dtype=bool)
    keep_tri[np.asarray(triangle_rows, dtype=np.intp)] = False
    return dress_model(model, model.point_attributes,
                       model.stitch_list.take(np.flatnonzero(keep)),
                       model.triangle_stitch_list.take(np.flatnonzero(keep_tri)))


def sew_and_break(model: ClothModel, positions: F) -> tuple[ClothModel, int]:
    """At a frame end: mark the stitches that closed as sewn, then remove the sewn ones
    stretched past their break length. Returns the model (``model`` itself when nothing
    changed) and the number of stitches broken."""
    st, tri = model.stitch_list, model.triangle_stitch_list
    sewn = replace(model, stitch_list=st.sew(positions) if st.watched else st,
                   triangle_stitch_list=tri.sew(positions) if tri.watched else tri)
    hits = {family.name: broken(positions, family) for family in stitch_breakables(sewn)}
    none = np.zeros(0, dtype=np.intp)
    rows, tri_rows = hits.get("stitch", none), hits.get("triangle_stitch", none)
    if not rows.size and not tri_rows.size and np.array_equal(
            sewn.stitch_list.sewn, st.sewn) and np.array_equal(
            sewn.triangle_stitch_list.sewn, tri.sewn):
        return model, 0
    return break_stitches(sewn, rows, tri_rows), int(rows.size + tri_rows.size)


def follow_triangles(triangles: I, torn_triangles: I, corners: I) -> I:
    """Corners (K, 3) of triangles of ``triangles`` moved to the same triangles of the torn
    mesh ``torn_triangles`` (row for row, as a tear keeps the rows), corner by corner; rows of
    ``corners`` that are no triangle of the mesh stay as they are."""
    k = corners.shape[0]
    if k == 0:
        return corners.copy()
    both = np.concatenate([np.sort(triangles, axis=1), np.sort(corners, axis=1)])
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    t = triangles.shape[0]
    slot = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
    kinds, first = np.unique(inverse[:t], return_index=True)
    slot[kinds] = first  # the first row of a repeated triangle
    row = slot[inverse[t:]]
    found = row >= 0
    out = corners.astype(np.int64, copy=True)
    r = row[found]
    where = triangles[r][:, :, None] == corners[found][:, None, :]  # (K', 3 slots, 3 corners)
    position = np.argmax(where, axis=1)  # the slot of each corner
    out[found] = np.take_along_axis(torn_triangles[r], position, axis=1)
    return out


def carry_extras(torn: ClothModel, untorn: ClothModel, origin: I, stitch_index: I,
                 triangle_stitch_index: I, stitch_sewn: B | None = None,
                 triangle_stitch_sewn: B | None = None) -> ClothModel:
    """The torn model with what the untorn cloth was built with (see the module docstring):
    point attributes by ``origin`` (the untorn point of each particle), the stitches at
    ``stitch_index`` and ``triangle_stitch_index`` of the untorn model's lists, with their
    sewn flags ``stitch_sewn`` and ``triangle_stitch_sewn`` (the untorn lists' when None)."""
    attrs = {name: values[origin] for name, values in untorn.point_attributes.items()}
    st = untorn.stitch_list.take(np.asarray(stitch_index, dtype=np.intp))
    if stitch_sewn is not None:
        st = replace(st, sewn=np.asarray(stitch_sewn, dtype=bool).copy())
    tri = untorn.triangle_stitch_list.take(np.asarray(triangle_stitch_index, dtype=np.intp))
    if triangle_stitch_sewn is not None:
        tri = replace(tri, sewn=np.asarray(triangle_stitch_sewn, dtype=bool).copy())
    if tri.count:
        members = tri.members.copy()
        members[:, 1:] = follow_triangles(untorn.mesh.triangles, torn.mesh.triangles,
                                          members[:, 1:])
        tri = tri.with_members(members)
    return dress_model(torn, attrs, st, tri)


def bend_rest_in_topology_order(model: ClothModel) -> F:
    """The bend family's rest angles [rad] in topology order (as ``topology.bend_quads``)."""
    rest = np.empty(model.bend.count)
    rest[model.bend.source] = model.bend.rest_angle
    return rest


def carry_bend_rest(torn: ClothModel, previous: ClothModel, origin: I) -> ClothModel:
    """The torn model with every hinge that was there before the tear keeping its previous
    rest angle (one that plasticity moved; the others are the same either way). A hinge is
    known by its shared edge, mapped back through ``origin`` (the previous particle of each)."""
    if torn.bend.count == 0 or previous.bend.count == 0:
        return torn
    base = previous.particle_count
    old_keys = _quad_keys(previous.bend.quads, base)
    order = np.argsort(old_keys, kind="stable")
    old_sorted = old_keys[order]
    new_keys = _quad_keys(np.asarray(origin, dtype=np.int64)[torn.bend.quads], base)
    at = np.minimum(np.searchsorted(old_sorted, new_keys), old_sorted.size - 1)
    found = old_sorted[at] == new_keys
    rest = torn.bend.rest_angle.copy()
    rest[found] = previous.bend.rest_angle[order[at[found]]]
    return replace(torn, bend=replace(torn.bend, rest_angle=rest))


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

    Connected components of the corner links (:func:`piece_labels`). ``use``: the
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
    links = np.stack([np.concatenate([h0, n0]), np.concatenate([a1, b1])], axis=1)
    return piece_labels(links, flat.shape[0])


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
    of its piece, shape (N,); ``np.unique(labels).size`` counts the pieces a tear left.

    Label propagation over the edges with pointer jumping (each round also takes the label of
    the label), in whole-array steps."""
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


__all__ = ["Breakable", "Tear", "bend_rest_in_topology_order", "break_stitches", "broken",
           "carry_bend_rest", "carry_extras", "corner_fans",
           "family_colors", "follow_triangles", "piece_labels", "sew_and_break",
           "stitch_breakables",
           "stretch_breakable", "tear_edges"]
