"""The static simulation model: particles' masses, constraint families in colored order, tethers.

Everything here is prepared once per cloth (and per pin set) and never changes while stepping;
positions and velocities live in :class:`pbdcloth.state.ClothState`. Each constraint family stores
its arrays already permuted into colored order, so color ``c`` is the contiguous slice
``offsets[c]:offsets[c+1]`` of every array of the family.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from .attributes import FAMILY_SCALES, constraint_scale, validate_point_attributes
from .coloring import Coloring, color_constraints
from .hierarchy import EMPTY_HIERARCHY, Hierarchy, build_hierarchy, rest_normals
from .mesh import ClothMesh, FloatArray, IndexArray, MeshError, vertex_normals
from .stitches import (
    StitchList,
    TriangleStitchList,
    no_stitches,
    no_triangle_stitches,
    validate_stitches,
    validate_triangle_stitches,
)
from .topology import Topology, build_topology


class _ColoredFamily:
    """Colour bookkeeping shared by the constraint families: ``offsets`` bounds each colour."""

    offsets: IndexArray

    @property
    def color_count(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def color_slices(self) -> list[slice]:
        """The slice of the family's arrays holding each colour, in order."""
        return [slice(int(a), int(b)) for a, b in zip(self.offsets[:-1], self.offsets[1:])]


@dataclass(frozen=True)
class DistanceFamily(_ColoredFamily):
    """Distance constraints (stretch or shear) in colored order.

    Attributes:
        i, j: particle indices of each constraint, shape (M,).
        rest: rest length [m], shape (M,).
        wi, wj: inverse masses of the two particles [1/kg], shape (M,).
        wi_frac, wj_frac: w_i / (w_i + w_j) and w_j / (w_i + w_j), 0 where both are pinned.
        offsets: color boundaries, shape (C + 1,).
        source: index of each constraint in the unpermuted family (topology order), shape (M,).
        scale: stiffness scale of each constraint (:mod:`pbdcloth.cloth.attributes`), shape
            (M,); ``None``: 1 everywhere.
        compliance: the stitch family's compliance of each stitch [m/N] (0 where hard or not
            sewn yet, :mod:`pbdcloth.cloth.stitches`), shape (M,); ``None``: all hard.
    """

    i: IndexArray
    j: IndexArray
    rest: FloatArray
    wi: FloatArray
    wj: FloatArray
    wi_frac: FloatArray
    wj_frac: FloatArray
    offsets: IndexArray
    source: IndexArray
    scale: FloatArray | None = None
    compliance: FloatArray | None = None

    @property
    def count(self) -> int:
        return int(self.i.shape[0])


@dataclass(frozen=True)
class BendFamily(_ColoredFamily):
    """Dihedral bend constraints in colored order.

    Attributes:
        quads: (p1, p2, p3, p4) per hinge (shared edge p1-p2, wings p3, p4), shape (B, 4).
        rest_angle: rest dihedral angle [rad], shape (B,).
        w: inverse masses of the four particles [1/kg], shape (B, 4).
        offsets: color boundaries, shape (C + 1,).
        source: index of each hinge in topology order, shape (B,).
        scale: stiffness scale of each hinge (:mod:`pbdcloth.cloth.attributes`), shape (B,);
            ``None``: 1 everywhere.
    """

    quads: IndexArray
    rest_angle: FloatArray
    w: FloatArray
    offsets: IndexArray
    source: IndexArray
    scale: FloatArray | None = None

    @property
    def count(self) -> int:
        return int(self.quads.shape[0])


@dataclass(frozen=True)
class Tethers:
    """Long range attachments (Kim, Chentanez and Müller-Fischer 2012).

    Each free particle reachable from a pin over mesh edges is tied to its nearest pin by geodesic
    (shortest edge path) rest distance. No two tethers move the same particle (anchors are pinned),
    so all tethers are projected at once.

    Attributes:
        particle: the tethered free particle, shape (K,).
        anchor: its nearest pinned particle, shape (K,).
        rest: geodesic rest distance over mesh edges [m], shape (K,).
    """

    particle: IndexArray
    anchor: IndexArray
    rest: FloatArray

    @property
    def count(self) -> int:
        return int(self.particle.shape[0])


@dataclass(frozen=True)
class SoftPins:
    """Points pulled toward their pin targets with a weight between 0 and 1
    (:mod:`pbdcloth.constraints.softpin`); hard pins (weight 1) are in ``ClothModel.pinned``.

    Attributes:
        particle: the soft-pinned points, sorted, shape (S,).
        weight: their pin weights, in (0, 1), shape (S,).
    """

    particle: IndexArray
    weight: FloatArray

    @property
    def count(self) -> int:
        return int(self.particle.shape[0])


@dataclass(frozen=True)
class TriangleStitchFamily(_ColoredFamily):
    """Point-to-triangle stitches in colored order (:mod:`pbdcloth.constraints.stitch`).

    Attributes:
        members: (point, a, b, c) of each stitch, shape (M, 4).
        barycentric: (u, v, w) of the triangle point q = u x_a + v x_b + w x_c, shape (M, 3).
        rest: rest length |x_p - q| [m], shape (M,).
        w: inverse masses of the four points [1/kg], shape (M, 4).
        offsets: color boundaries, shape (C + 1,).
        source: index of each stitch as given, shape (M,).
        speed: the fastest a stitch closes toward its rest length [m/s].
        compliance: each stitch's compliance [m/N] (0 where hard or not sewn yet), shape
            (M,); ``None``: all hard.
    """

    members: IndexArray
    barycentric: FloatArray
    rest: FloatArray
    w: FloatArray
    offsets: IndexArray
    source: IndexArray
    speed: float = 0.0
    compliance: FloatArray | None = None

    @property
    def count(self) -> int:
        return int(self.members.shape[0])


def _no_triangle_stitches() -> TriangleStitchFamily:
    return TriangleStitchFamily(np.zeros((0, 4), dtype=np.intp), np.zeros((0, 3)), np.zeros(0),
                                np.zeros((0, 4)), np.zeros(1, dtype=np.int64),
                                np.zeros(0, dtype=np.intp))


def _no_soft_pins() -> SoftPins:
    return SoftPins(np.zeros(0, dtype=np.intp), np.zeros(0))


def _no_stitches() -> DistanceFamily:
    none_i, none_f = np.zeros(0, dtype=np.intp), np.zeros(0)
    return DistanceFamily(i=none_i, j=none_i, rest=none_f, wi=none_f, wj=none_f,
                          wi_frac=none_f, wj_frac=none_f, offsets=np.zeros(1, dtype=np.int64),
                          source=none_i)


@dataclass(frozen=True)
class ClothModel:
    """Static data of one cloth: mesh, topology, masses, pins, colored constraints, tethers.

    Attributes:
        mesh: the validated input mesh.
        topology: edges, hinges and rest data.
        mass: particle mass [kg] from the areal density, shape (N,).
        inv_mass: 1 / mass, 0 for pinned particles [1/kg], shape (N,).
        pinned: sorted indices of the pinned particles, shape (P,).
        stretch, shear: distance constraint families.
        bend: dihedral bend family.
        tethers: long range attachments to the pins (empty without pins).
        hierarchy: coarse levels for the hierarchical projection (:mod:`.hierarchy`).
        soft_pins: points pulled toward their targets with a pin weight below 1.
        stitches: stitch and weld constraints between point pairs, colored like the mesh's
            families (:mod:`pbdcloth.constraints.stitch`); empty without stitches.
        point_attributes: the validated per-point attributes, (N,) each, by name.
        triangle_stitches: stitches from points to points inside triangles; empty without.
        stitch_list, triangle_stitch_list: the stitches still holding, in the order given
            (what :attr:`stitches` and :attr:`triangle_stitches` are built from, and what
            breaking removes rows from).
    """

    mesh: ClothMesh
    topology: Topology
    mass: FloatArray
    inv_mass: FloatArray
    pinned: IndexArray
    stretch: DistanceFamily
    shear: DistanceFamily
    bend: BendFamily
    tethers: Tethers
    hierarchy: Hierarchy = EMPTY_HIERARCHY
    soft_pins: SoftPins = field(default_factory=_no_soft_pins)
    stitches: DistanceFamily = field(default_factory=_no_stitches)
    point_attributes: dict[str, FloatArray] = field(default_factory=dict)
    triangle_stitches: TriangleStitchFamily = field(default_factory=_no_triangle_stitches)
    stitch_list: StitchList = field(default_factory=no_stitches)
    triangle_stitch_list: TriangleStitchList = field(default_factory=no_triangle_stitches)

    @property
    def particle_count(self) -> int:
        return self.mesh.point_count

    @property
    def stitch_speed(self) -> float:
        """The fastest a point-pair stitch closes toward its rest length [m/s]."""
        return self.stitch_list.speed

    def color_counts(self) -> dict[str, int]:
        """Colors per constraint family."""
        counts = {
            "stretch": self.stretch.color_count,
            "shear": self.shear.color_count,
            "bend": self.bend.color_count,
        }
        if self.stitches.count:
            counts["stitch"] = self.stitches.color_count
        if self.triangle_stitches.count:
            counts["triangle_stitch"] = self.triangle_stitches.color_count
        return counts


def _distance_family(
    pairs: IndexArray, rest: FloatArray, inv_mass: FloatArray, coloring: Coloring
) -> DistanceFamily:
    order = coloring.order
    i = np.ascontiguousarray(pairs[order, 0]).astype(np.intp)
    j = np.ascontiguousarray(pairs[order, 1]).astype(np.intp)
    wi, wj = inv_mass[i], inv_mass[j]
    wsum = wi + wj
    safe = np.where(wsum > 0.0, wsum, 1.0)
    return DistanceFamily(
        i=i, j=j, rest=np.ascontiguousarray(rest[order]), wi=wi, wj=wj,
        wi_frac=np.where(wsum > 0.0, wi / safe, 0.0), wj_frac=np.where(wsum > 0.0, wj / safe, 0.0),
        offsets=coloring.offsets, source=order,
    )


def validate_pins(pinned: object, particle_count: int) -> IndexArray:
    """Sorted unique pin indices, or a MeshError naming the bad entries."""
    if pinned is None:
        return np.zeros(0, dtype=np.int64)
    if isinstance(pinned, (str, bytes, dict)):
        raise MeshError(f"pinned must be point indices or a boolean mask, got {pinned!r}"[:200])
    try:
        arr = np.asarray(pinned)
    except (TypeError, ValueError):
        raise MeshError(f"pinned must be a flat list of point indices, got {pinned!r}"[:200]
                        ) from None
    if arr.dtype == bool:
        if arr.shape != (particle_count,):
            raise MeshError(
                f"a boolean pin mask must have one entry per point ({particle_count}), "
                f"got shape {arr.shape}"
            )
        return np.flatnonzero(arr).astype(np.int64)
    arr = arr.reshape(-1)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise MeshError(f"pinned must be point indices (integers), got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    bad = arr[(arr < 0) | (arr >= particle_count)]
    if bad.size:
        raise MeshError(
            f"pinned point index(es) {bad[:8].tolist()} outside [0, {particle_count - 1}]"
        )
    return np.unique(arr)


def geodesic_to_pins(
    edges: IndexArray, lengths: FloatArray, pinned: IndexArray, particle_count: int
) -> tuple[FloatArray, IndexArray]:
    """Multi-source Dijkstra over mesh edges: distance to, and index of, the nearest pin.

    Unreachable particles get distance ``inf`` and anchor ``-1``. Ties are broken by the lower
    pin index, so the result is deterministic.
    """
    dist = np.full(particle_count, np.inf)
    anchor = np.full(particle_count, -1, dtype=np.int64)
    if pinned.size == 0:
        return dist, anchor
    # CSR adjacency.
    both = np.concatenate([edges, edges[:, ::-1]])
    wts = np.concatenate([lengths, lengths])
    order = np.lexsort((both[:, 1], both[:, 0]))
    nbr = both[order, 1].tolist()
    wt = wts[order].tolist()
    start = np.searchsorted(both[order, 0], np.arange(particle_count + 1)).tolist()
    best = [float("inf")] * particle_count
    src = [-1] * particle_count
    heap: list[tuple[float, int, int]] = []
    for p in pinned.tolist():
        best[p] = 0.0
        src[p] = p
        heap.append((0.0, p, p))
    heapq.heapify(heap)
    done = [False] * particle_count
    while heap:
        d, s, u = heapq.heappop(heap)
        if done[u]:
            continue
        done[u] = True
        for k in range(start[u], start[u + 1]):
            v = nbr[k]
            nd = d + wt[k]
            if nd < best[v] or (nd == best[v] and s < src[v]):
                best[v] = nd
                src[v] = s
                heapq.heappush(heap, (nd, s, v))
    dist[:] = best
    anchor[:] = src
    return dist, anchor


def build_tethers(topology: Topology, pinned: IndexArray, particle_count: int) -> Tethers:
    """Tie every free particle reachable from a pin to its nearest pin (geodesic rest distance).

    The geodesic is the shortest path over the mesh edges AND the wing-to-wing diagonals of each
    pair of adjacent triangles (straight lines across two triangles). Paths over edges alone zig-zag
    and overestimate a diagonal distance on a grid by up to 8%, which would leave the tethers that
    much slack; with the diagonals the overestimate on a regular grid is under 3%. Torn edges
    (``topology.edge_cut``) are no path: a tether never reaches across a tear.
    """
    whole = ~topology.edge_cut
    links = np.concatenate([topology.edges[whole], topology.shear_pairs])
    lengths = np.concatenate([topology.edge_rest_length[whole], topology.shear_rest_length])
    dist, anchor = geodesic_to_pins(links, lengths, pinned, particle_count)
    free = np.ones(particle_count, dtype=bool)
    free[pinned] = False
    tied = np.flatnonzero(free & (anchor >= 0))
    return Tethers(particle=tied.astype(np.intp), anchor=anchor[tied].astype(np.intp),
                   rest=dist[tied])


def lumped_mass(topology: Topology, density: float) -> FloatArray:
    """Particle masses [kg]: each triangle's mass (density x area) goes one third to each
    corner; a point used by no triangle gets the mean particle mass so that it still falls
    under gravity."""
    mass = density * topology.point_area
    lonely = mass <= 0.0
    if lonely.any():
        mass[lonely] = mass[~lonely].mean() if (~lonely).any() else density
    return mass


@dataclass(frozen=True)
class FamilyColorings:
    """Precomputed colorings of the stretch, shear and bend families (in topology order), for
    :func:`assemble_model` to use instead of coloring from scratch."""

    stretch: Coloring
    shear: Coloring
    bend: Coloring


def build_model(mesh: ClothMesh, pinned: object, density: float,
                point_attributes: object = None, stitches: object = None,
                triangle_stitches: object = None, *,
                cut: NDArray[np.bool_] | None = None) -> ClothModel:
    """Prepare the static model: topology, lumped masses (:func:`lumped_mass`), pins, colored
    families, tethers, the hierarchy.

    ``point_attributes`` (:mod:`.attributes`) scale the masses and the families' stiffness and
    give pin weights: weight 1 adds a hard pin, a weight in (0, 1) a soft pin; ``stitches``
    (:mod:`.stitches`: any accepted form, or a validated :class:`~.stitches.StitchList`) adds
    the stitch family, ``triangle_stitches`` (a :class:`~.stitches.TriangleStitches` or
    :class:`~.stitches.TriangleStitchList`) the point-to-triangle one. ``cut`` (T, 3) marks
    torn half-edges (:func:`build_topology`).
    """
    topology = build_topology(mesh, cut)
    n = mesh.point_count
    attrs = validate_point_attributes(point_attributes, n)
    pins = validate_pins(pinned, n)
    weight = attrs.get("pin_weight")
    if weight is not None:
        pins = np.union1d(pins, np.flatnonzero(weight >= 1.0)).astype(np.int64)
    mass = lumped_mass(topology, density)
    if "mass_scale" in attrs:
        mass = mass * attrs["mass_scale"]
    model = assemble_model(mesh, topology, mass, pins)
    stitch_list = (stitches if isinstance(stitches, StitchList)
                   else validate_stitches(stitches, n).sew(mesh.positions))
    triangle_list = (triangle_stitches if isinstance(triangle_stitches, TriangleStitchList)
                     else validate_triangle_stitches(triangle_stitches, n).sew(mesh.positions))
    return dress_model(model, attrs, stitch_list, triangle_list)


def assemble_model(mesh: ClothMesh, topology: Topology, mass: FloatArray, pins: IndexArray,
                   colorings: FamilyColorings | None = None) -> ClothModel:
    """The model of a mesh with its topology, particle masses [kg] and sorted pin indices:
    inverse masses (0 on pins), the colored constraint families (``colorings``, or greedy
    colorings computed here), the tethers and the hierarchy."""
    n = mesh.point_count
    inv_mass = 1.0 / mass
    inv_mass[pins] = 0.0
    shear_pairs = topology.shear_pairs
    if colorings is None:
        colorings = FamilyColorings(color_constraints(topology.edges, n),
                                    color_constraints(shear_pairs, n),
                                    color_constraints(topology.bend_quads, n))
    stretch = _distance_family(topology.edges, topology.edge_rest_length, inv_mass,
                               colorings.stretch)
    shear = _distance_family(shear_pairs, topology.shear_rest_length, inv_mass,
                             colorings.shear)
    bend_col = colorings.bend
    quads = np.ascontiguousarray(topology.bend_quads[bend_col.order]).astype(np.intp)
    bend = BendFamily(
        quads=quads, rest_angle=np.ascontiguousarray(topology.bend_rest_angle[bend_col.order]),
        w=inv_mass[quads], offsets=bend_col.offsets, source=bend_col.order,
    )
    model = ClothModel(
        mesh=mesh, topology=topology, mass=mass, inv_mass=inv_mass, pinned=pins,
        stretch=stretch, shear=shear, bend=bend, tethers=build_tethers(topology, pins, n),
        hierarchy=build_hierarchy(mesh.positions, topology.edges[~topology.edge_cut], mass,
                                  inv_mass,
                                  rest_normals(mesh.positions,
                                               vertex_normals(mesh.positions, mesh.triangles),
                                               topology.edges, topology.boundary_edges),
                                  keep=_on_torn_edges(topology, n)),
    )
    return model


def _on_torn_edges(topology: Topology, n: int) -> NDArray[np.bool_] | None:
    """The particles at the ends of torn edges, (N,) booleans; None on a cloth never torn."""
    if not topology.edge_cut.any():
        return None
    out = np.zeros(n, dtype=bool)
    out[topology.edges[topology.edge_cut].reshape(-1)] = True
    return out


def _triangle_stitch_family(stitches: TriangleStitchList,
                            inv_mass: FloatArray) -> TriangleStitchFamily:
    if stitches.count == 0:
        return _no_triangle_stitches()
    col = color_constraints(stitches.members, inv_mass.shape[0])
    order = col.order
    m = np.ascontiguousarray(stitches.members[order]).astype(np.intp)
    return TriangleStitchFamily(members=m,
                                barycentric=np.ascontiguousarray(stitches.barycentric[order]),
                                rest=np.ascontiguousarray(stitches.rest[order]), w=inv_mass[m],
                                offsets=col.offsets, source=order.astype(np.intp),
                                speed=stitches.speed,
                                compliance=_sewn_compliance(stitches.compliance,
                                                            stitches.sewn, order))


def _sewn_compliance(compliance: FloatArray, sewn: NDArray[np.bool_],
                     order: IndexArray) -> FloatArray | None:
    """Each stitch's compliance in colored ``order``, 0 where not sewn; None when every
    stitch is hard (the hard stitches' own projection)."""
    if not (compliance > 0.0).any():
        return None
    return np.ascontiguousarray(np.where(sewn, compliance, 0.0)[order])


def dress_model(model: ClothModel, attrs: dict[str, FloatArray], stitches: StitchList,
                triangle_stitches: TriangleStitchList) -> ClothModel:
    """The model with validated point attributes (the families' stiffness scales and the soft
    pins; masses and hard pins are the caller's) and the two stitch families, colored here
    (first fit over the lists' order, so the same lists give the same colors)."""
    n = model.particle_count
    scaled = {}
    for family, name in FAMILY_SCALES.items():
        fam = getattr(model, family)
        members = fam.quads if family == "bend" else np.stack([fam.i, fam.j], axis=1)
        scaled[family] = replace(fam, scale=constraint_scale(attrs.get(name), members))
    soft = _no_soft_pins()
    weight = attrs.get("pin_weight")
    if weight is not None:
        idx = np.flatnonzero((weight > 0.0) & (weight < 1.0)).astype(np.intp)
        soft = SoftPins(idx, weight[idx].copy())
    stitch = _no_stitches()
    if stitches.count:
        stitch = _distance_family(stitches.pairs, stitches.rest, model.inv_mass,
                                  color_constraints(stitches.pairs, n))
        stitch = replace(stitch, compliance=_sewn_compliance(stitches.compliance, stitches.sewn,
                                                             stitch.source))
    return replace(model, stretch=scaled["stretch"], shear=scaled["shear"], bend=scaled["bend"],
                   soft_pins=soft, stitches=stitch, point_attributes=attrs,
                   triangle_stitches=_triangle_stitch_family(triangle_stitches, model.inv_mass),
                   stitch_list=stitches, triangle_stitch_list=triangle_stitches)
