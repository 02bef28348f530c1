"""Topology, rest data, coloring and the dihedral angle's gradient."""

from __future__ import annotations

import numpy as np
from pbdcloth.cloth.coloring import color_constraints
from pbdcloth.cloth.mesh import ClothMesh, vertex_normals, vertex_normals_t
from pbdcloth.cloth.model import build_model, geodesic_to_pins
from pbdcloth.cloth.topology import build_topology
from pbdcloth.constraints.bend import dihedral_angle, dihedral_angle_and_gradient
from pbdcloth.scenes.cloth import grid


def test_grid_counts_follow_euler() -> None:
    nx, ny = 7, 5
    pos, tris = grid(nx, ny, 1.0, 1.0)
    top = build_topology(ClothMesh.from_arrays(pos, tris))
    quads = (nx - 1) * (ny - 1)
    edges = nx * (ny - 1) + ny * (nx - 1) + quads          # rows + columns + one diagonal each
    boundary = 2 * (nx - 1) + 2 * (ny - 1)
    assert top.edges.shape == (edges, 2)
    assert top.boundary_edges.shape == (boundary, 2)
    assert top.bend_quads.shape == (edges - boundary, 4)
    assert np.allclose(top.triangle_area.sum(), 1.0)
    assert np.allclose(top.point_area.sum(), 1.0)
    assert np.all(top.edges[:, 0] < top.edges[:, 1])


def test_rest_data_match_the_geometry() -> None:
    pos, tris = grid(4, 4, 3.0, 3.0)
    top = build_topology(ClothMesh.from_arrays(pos, tris))
    # Unit grid: edges are 1 or sqrt(2); a flat sheet has zero rest dihedral angles.
    assert set(np.round(top.edge_rest_length, 12)) == {1.0, round(np.sqrt(2), 12)}
    assert np.all(top.bend_rest_angle == 0.0)
    q = top.bend_quads
    assert np.allclose(top.wing_rest_length, np.linalg.norm(pos[q[:, 2]] - pos[q[:, 3]], axis=1))
    s = top.shear_pairs
    assert np.allclose(top.shear_rest_length, np.linalg.norm(pos[s[:, 0]] - pos[s[:, 1]], axis=1))
    # Wings are the opposite corners of the two triangles sharing the edge.
    tri_sets = {frozenset(t) for t in tris.tolist()}
    for p1, p2, p3, p4 in q.tolist():
        assert frozenset((p1, p2, p3)) in tri_sets and frozenset((p1, p2, p4)) in tri_sets


def test_detail_arrays_use_the_seed_names() -> None:
    pos, tris = grid(3, 3)
    arrays = build_topology(ClothMesh.from_arrays(pos, tris)).detail_arrays()
    assert {"stretch_edge_v0", "stretch_edge_v1", "rest_lengths", "bend_shared_edge_v0",
            "bend_shared_edge_v1", "bend_non_shared_edge_v0", "bend_non_shared_edge_v1",
            "rest_angles", "shear_lengths", "triangles"} == set(arrays)
    assert arrays["triangles"].shape == (tris.size,)


def test_coloring_has_no_shared_particle_within_a_color_and_is_deterministic() -> None:
    pos, tris = grid(20, 17)
    top = build_topology(ClothMesh.from_arrays(pos, tris))
    for cons in (top.edges, top.shear_pairs, top.bend_quads):
        col = color_constraints(cons, pos.shape[0])
        assert sorted(col.order.tolist()) == list(range(cons.shape[0]))
        for s in col.slices():
            members = cons[col.order[s]].ravel()
            assert np.unique(members).size == members.size
        again = color_constraints(cons, pos.shape[0])
        assert np.array_equal(col.order, again.order) and np.array_equal(col.offsets, again.offsets)
    # A particle of valence 6 needs at least 6 edge colors; greedy in row order stays close.
    assert color_constraints(top.edges, pos.shape[0]).color_count <= 9


def test_parallel_coloring_equals_the_rules() -> None:
    """The Jones-Plassmann path (used for big meshes) also gives a valid coloring."""
    from pbdcloth.cloth import coloring

    pos, tris = grid(15, 15)
    top = build_topology(ClothMesh.from_arrays(pos, tris))
    colors = coloring._greedy_parallel(top.bend_quads.astype(np.int64), pos.shape[0])
    for c in range(colors.max() + 1):
        members = top.bend_quads[colors == c].ravel()
        assert np.unique(members).size == members.size
    # First fit: every constraint of color c > 0 meets each lower color among its neighbours.
    assert colors.min() == 0


def _random_hinges(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(4, 3, count))


def test_angle_gradient_matches_finite_differences() -> None:
    x = _random_hinges(16, 1)
    _, grad, valid = dihedral_angle_and_gradient(x)
    assert valid.all()
    eps = 1e-6
    for i in range(4):
        for k in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, k] += eps
            xm[i, k] -= eps
            fd = (dihedral_angle(*xp) - dihedral_angle(*xm)) / (2 * eps)
            # Central differences err by O(eps^2 |theta'''|) ~ 1e-10 here; 1e-6 is generous.
            assert np.allclose(fd, grad[i, k], atol=1e-6), (i, k)


def test_angle_equals_arctan2_and_gradient_equals_mullers_q_vectors() -> None:
    """theta = pi - arccos(d) of Müller's normals, and grad theta = -q / sqrt(1 - d^2)."""
    x = _random_hinges(32, 2)
    theta, grad, _ = dihedral_angle_and_gradient(x)
    p1, p2, p3, p4 = (x[i].T - x[0].T for i in range(4))  # Müller: p1 at the origin
    c3, c4 = np.cross(p2, p3), np.cross(p2, p4)
    n1 = c3 / np.linalg.norm(c3, axis=1)[:, None]
    n2 = c4 / np.linalg.norm(c4, axis=1)[:, None]
    d = np.einsum("ij,ij->i", n1, n2)
    assert np.allclose(np.abs(theta), np.pi - np.arccos(d), atol=1e-12)
    l3, l4 = np.linalg.norm(c3, axis=1)[:, None], np.linalg.norm(c4, axis=1)[:, None]
    dd = d[:, None]
    q3 = (np.cross(p2, n2) + np.cross(n1, p2) * dd) / l3
    q4 = (np.cross(p2, n1) + np.cross(n2, p2) * dd) / l4
    q2 = -(np.cross(p3, n2) + np.cross(n1, p3) * dd) / l3 - (np.cross(p4, n1) + np.cross(n2, p4) * dd) / l4
    q1 = -q2 - q3 - q4
    sin = np.sqrt(1 - d * d)[:, None]
    sign = np.sign(theta)[:, None]
    for g, q in zip(grad, (q1, q2, q3, q4)):
        # Müller's q_i = -grad d, so grad phi = q / sin for phi = arccos(d) = pi - |theta|,
        # and grad phi = -sign(theta) grad theta.
        assert np.allclose(-sign * g.T, q / sin, atol=1e-9)


def test_angle_gradient_sums_to_zero_and_degenerate_hinges_are_flagged() -> None:
    x = _random_hinges(8, 3)
    x[:, :, 0] = x[:, :, 0][[0, 1, 0, 3]]  # hinge 0: wing x3 on the shared edge's x1
    _, grad, valid = dihedral_angle_and_gradient(x)
    assert not valid[0] and valid[1:].all()
    assert np.all(grad[:, :, 0] == 0.0)
    assert np.allclose(grad.sum(axis=0), 0.0, atol=1e-12)


def test_geodesic_distances_and_masses() -> None:
    pos, tris = grid(5, 1 + 1, 4.0, 1.0)
    model = build_model(ClothMesh.from_arrays(pos, tris), [0], density=2.0)
    assert np.isclose(model.mass.sum(), 2.0 * 4.0)
    assert model.inv_mass[0] == 0.0
    dist, anchor = geodesic_to_pins(model.topology.edges, model.topology.edge_rest_length,
                                    np.array([0]), pos.shape[0])
    assert np.all(anchor == 0)
    assert np.allclose(dist[:5], [0, 1, 2, 3, 4])


def test_vertex_normals_are_the_normalised_sums_of_face_normals() -> None:
    """n_p = sum over p's triangles of (b - a) x (c - a), normalised, against a per-triangle loop;
    both summation orders agree to rounding (2e-16 per component of a unit vector, 1e-15
    allowed); a flat xz grid (triangles wound clockwise seen from +y) has n = -y everywhere;
    a point on no triangle gets 0."""
    pos, tris = grid(6, 5, 1.0, 0.8)
    flat = vertex_normals(pos, tris)
    assert np.array_equal(flat, np.tile([0.0, -1.0, 0.0], (pos.shape[0], 1)))
    rng = np.random.default_rng(7)
    bent = pos + rng.normal(scale=0.05, size=pos.shape)
    bent = np.vstack([bent, [[5.0, 5.0, 5.0]]])             # a lonely point
    expected = np.zeros_like(bent)
    for a, b, c in tris.tolist():
        face = np.cross(bent[b] - bent[a], bent[c] - bent[a])
        for p in (a, b, c):
            expected[p] += face
    length = np.linalg.norm(expected, axis=1)
    expected[length > 0] /= length[length > 0, None]
    normals = vertex_normals(bent, tris)
    assert normals.shape == bent.shape and normals.flags.c_contiguous
    np.testing.assert_allclose(normals, expected, rtol=0, atol=1e-15)
    assert np.array_equal(normals[-1], np.zeros(3))
    by_triangle = vertex_normals_t(np.ascontiguousarray(bent.T), tris)
    np.testing.assert_allclose(by_triangle.T, normals, rtol=0, atol=1e-15)
    assert np.array_equal(vertex_normals_t(np.ascontiguousarray(bent.T), tris, by_corner=True).T,
                          normals)
