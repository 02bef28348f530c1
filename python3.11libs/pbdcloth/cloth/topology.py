"""Mesh topology and rest data: edges, bend quads, shear pairs, areas and lumped masses.

Everything is computed once, in whole-array operations, from a :class:`~pbdcloth.mesh.ClothMesh`.
Array names follow the seed's Houdini detail attributes where one exists (``stretch_edge_v0``,
``rest_lengths``, ``bend_shared_edge_v0``, ...), see :meth:`Topology.detail_arrays`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..arrays import B as BoolArray
from ..constraints.bend import dihedral_angle
from .mesh import ClothMesh, FloatArray, IndexArray, triangle_areas


@dataclass(frozen=True)
class Topology:
    """Static connectivity and rest data of a cloth mesh (struct of arrays).

    Attributes:
        triangles: point indices per triangle, shape (T, 3).
        edges: unique undirected edges (i < j), sorted, shape (E, 2).
        edge_rest_length: rest length of each edge [m], shape (E,).
        bend_quads: (p1, p2, p3, p4) per interior manifold edge: shared edge p1 < p2, wing p3 in
            the lower-numbered triangle, wing p4 in the other, shape (B, 4).
        bend_rest_angle: signed rest dihedral angle [rad], 0 = flat, shape (B,).
        wing_rest_length: rest distance between the wings p3 and p4 of each bend quad [m],
            shape (B,).
        shear_pairs: the distinct wing pairs (p3, p4), each listed once, in the order of their
            first bend quad, shape (S, 2), S <= B. On a grid the two quads of a straight pair
            of triangles two cells apart share their wings; listing such a pair twice would
            give it half the set compliance.
        shear_rest_length: rest distance of each shear pair [m], shape (S,).
        triangle_area: rest area of each triangle [m^2], shape (T,).
        point_area: one third of the area of each triangle lumped on its corners [m^2], shape (N,).
        boundary_edges: edges used by one triangle only, shape (K, 2).
        cut: torn half-edges, shape (T, 3): ``cut[t, k]`` marks the edge from corner k to
            corner (k + 1) % 3 of triangle t as torn (:mod:`pbdcloth.cloth.tear`); all False
            for an untorn cloth.
        edge_cut: edges with a torn half-edge, shape (E,). A torn edge keeps its stretch
            constraint (its triangles still need their side) but has no bend quad and is not
            checked for tearing again.
    """

    triangles: IndexArray
    edges: IndexArray
    edge_rest_length: FloatArray
    bend_quads: IndexArray
    bend_rest_angle: FloatArray
    wing_rest_length: FloatArray
    shear_pairs: IndexArray
    shear_rest_length: FloatArray
    triangle_area: FloatArray
    point_area: FloatArray
    boundary_edges: IndexArray
    cut: BoolArray
    edge_cut: BoolArray

    def detail_arrays(self) -> dict[str, NDArray[np.generic]]:
        """Flat arrays under the names of the seed's Houdini detail attributes."""
        q = self.bend_quads
        return {
            "stretch_edge_v0": self.edges[:, 0],
            "stretch_edge_v1": self.edges[:, 1],
            "rest_lengths": self.edge_rest_length,
            "bend_shared_edge_v0": q[:, 0],
            "bend_shared_edge_v1": q[:, 1],
            "bend_non_shared_edge_v0": q[:, 2],
            "bend_non_shared_edge_v1": q[:, 3],
            "rest_angles": self.bend_rest_angle,
            "shear_lengths": self.wing_rest_length,
            "triangles": self.triangles.reshape(-1),
        }


def build_topology(mesh: ClothMesh, cut: BoolArray | None = None) -> Topology:
    """Edges, bend quads, shear pairs and rest data of a validated mesh.

    Interior edges shared by exactly two triangles get a bend quad and their wings a shear pair
    (once per distinct pair, :func:`unique_pairs`); boundary edges get neither. (Non-manifold edges are refused by :class:`ClothMesh`.)
    ``cut`` (T, 3) marks torn half-edges (see :class:`Topology`): an edge with a torn half gets
    no bend quad, so neither a hinge nor a shear pair spans a tear.
    """
    pos, tris = mesh.positions, mesh.triangles
    edges, counts, edge_of = edge_use(tris)
    cut_mask = (np.zeros(tris.shape, dtype=bool) if cut is None
                else np.ascontiguousarray(cut, dtype=bool).reshape(tris.shape))
    edge_cut = np.zeros(edges.shape[0], dtype=bool)
    np.logical_or.at(edge_cut, edge_of, cut_mask.reshape(-1))
    hinged = (counts == 2) & ~edge_cut
    edge_rest_length = np.linalg.norm(pos[edges[:, 0]] - pos[edges[:, 1]], axis=1)
    boundary_edges = edges[counts == 1]
    # The two half-edges of each interior edge, in triangle order; c is the corner opposite
    # each half-edge (a -> b) of its triangle.
    c = tris[:, [2, 0, 1]].reshape(-1)
    order = np.argsort(edge_of, kind="stable")
    starts = np.searchsorted(edge_of[order], np.arange(edges.shape[0]))
    interior = starts[hinged]
    h0 = order[interior]
    h1 = order[interior + 1]
    quads = np.concatenate([edges[hinged], c[h0, None], c[h1, None]], axis=1)
    x1, x2, x3, x4 = (pos[quads[:, k]].T for k in range(4))
    rest_angle = dihedral_angle(x1, x2, x3, x4)
    wing_len = np.linalg.norm(pos[quads[:, 2]] - pos[quads[:, 3]], axis=1)
    first = unique_pairs(quads[:, 2:4])
    shear_pairs = np.ascontiguousarray(quads[first, 2:4])

    area = triangle_areas(pos, tris)
    point_area = np.zeros(pos.shape[0])
    np.add.at(point_area, tris.reshape(-1), np.repeat(area / 3.0, 3))
    return Topology(
        triangles=tris,
        edges=edges,
        edge_rest_length=edge_rest_length,
        bend_quads=quads,
        bend_rest_angle=rest_angle,
        wing_rest_length=wing_len,
        shear_pairs=shear_pairs,
        shear_rest_length=wing_len[first],
        triangle_area=area,
        point_area=point_area,
        boundary_edges=boundary_edges,
        cut=cut_mask,
        edge_cut=edge_cut,
    )


def unique_pairs(pairs: IndexArray) -> IndexArray:
    """Indices of the first occurrence of each distinct unordered pair of ``pairs`` (K, 2), in
    ascending order: ``pairs[unique_pairs(pairs)]`` lists every pair once, in first-seen order."""
    if pairs.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    _, first = np.unique(np.sort(pairs, axis=1), axis=0, return_index=True)
    return np.sort(first).astype(np.intp)


def edge_use(triangles: IndexArray) -> tuple[IndexArray, IndexArray, IndexArray]:
    """Undirected edges (i < j) (E, 2), how many triangles use each (E,), and for every
    directed triangle edge (3 T,) the index of its undirected edge."""
    directed = np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1).astype(np.int64)
    # One int64 key per edge, i * base + j: sorting keys sorts the edges by (i, j).
    base = int(directed.max()) + 1 if directed.size else 1
    keys, inverse, counts = np.unique(directed[:, 0] * base + directed[:, 1],
                                      return_inverse=True, return_counts=True)
    edges = np.stack([keys // base, keys % base], axis=1)
    return edges, counts, inverse.reshape(-1)


def incidence(elements: IndexArray, count: int) -> tuple[IndexArray, IndexArray]:
    """Which elements (M, k) (triangles, edges) use each of ``count`` points: ``start``
    (count + 1,) and ``members`` (k M,), point i's elements being
    ``members[start[i]:start[i + 1]]``, in element order."""
    flat = np.asarray(elements).reshape(-1)
    order = np.argsort(flat, kind="stable")  # by point, then by element
    start = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=count))])
    return start.astype(np.intp), (order // np.asarray(elements).shape[1]).astype(np.intp)


def boundary_edges(triangles: IndexArray) -> IndexArray:
    """Edges used by one triangle, directed as in that triangle (a -> b), shape (K, 2)."""
    directed = triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    _, counts, inverse = edge_use(triangles)
    return directed[counts[inverse] == 1]
