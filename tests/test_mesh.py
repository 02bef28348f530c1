"""Mesh validation and triangulation: every bad input gets its own clear error."""

from __future__ import annotations

import numpy as np
import pytest
from pbdcloth import ClothMesh, ClothSolver, MeshError
from pbdcloth.cloth.mesh import triangulate

SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]], dtype=float)


def test_quads_and_ngons_are_fan_triangulated_in_order() -> None:
    tris = triangulate([[0, 1, 2, 3], [3, 2, 4, 5, 6]])
    assert tris.tolist() == [[0, 1, 2], [0, 2, 3], [3, 2, 4], [3, 4, 5], [3, 5, 6]]
    same = triangulate(np.array([[0, 1, 2, 3]]))
    assert same.tolist() == [[0, 1, 2], [0, 2, 3]]


def test_valid_quad_mesh_is_accepted() -> None:
    mesh = ClothMesh.from_arrays(SQUARE, [[0, 1, 2, 3]])
    assert mesh.triangle_count == 2 and mesh.point_count == 4


def test_nan_positions_are_named() -> None:
    pos = SQUARE.copy()
    pos[2, 1] = np.nan
    with pytest.raises(MeshError, match=r"NaN or inf at point\(s\) 2"):
        ClothMesh.from_arrays(pos, [[0, 1, 2, 3]])


def test_inf_positions_are_named() -> None:
    pos = SQUARE.copy()
    pos[3, 0] = np.inf
    with pytest.raises(MeshError, match=r"point\(s\) 3"):
        ClothMesh.from_arrays(pos, [[0, 1, 2, 3]])


def test_out_of_range_index_is_named() -> None:
    with pytest.raises(MeshError, match=r"triangle\(s\) 1 use point indices outside \[0, 3\]"):
        ClothMesh.from_arrays(SQUARE, [[0, 1, 2], [0, 2, 7]])


def test_negative_index_is_refused() -> None:
    with pytest.raises(MeshError, match="outside"):
        ClothMesh.from_arrays(SQUARE, [[0, 1, -1]])


def test_repeated_index_in_a_face_is_named() -> None:
    with pytest.raises(MeshError, match=r"triangle\(s\) 0 repeat a point index"):
        ClothMesh.from_arrays(SQUARE, [[0, 1, 1], [0, 2, 3]])


def test_zero_area_triangle_is_named() -> None:
    pos = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 1]], dtype=float)
    with pytest.raises(MeshError, match=r"zero-area triangle\(s\) 1"):
        ClothMesh.from_arrays(pos, [[0, 1, 3], [0, 1, 2]])


def test_non_manifold_edge_is_refused_with_its_triangles() -> None:
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1]], dtype=float)
    with pytest.raises(MeshError, match=r"non-manifold.*edge \(0, 1\) by triangles 0, 1, 2"):
        ClothMesh.from_arrays(pos, [[0, 1, 2], [0, 1, 3], [0, 1, 4]])


def test_empty_mesh_is_refused() -> None:
    with pytest.raises(MeshError, match="empty mesh: no points"):
        ClothMesh.from_arrays(np.zeros((0, 3)), [[0, 1, 2]])
    with pytest.raises(MeshError, match="empty mesh: no faces"):
        ClothMesh.from_arrays(SQUARE, [])


def test_face_with_two_corners_is_refused() -> None:
    with pytest.raises(MeshError, match="face 1 has 2 corner"):
        ClothMesh.from_arrays(SQUARE, [[0, 1, 2], [2, 3]])


def test_wrong_position_shape_is_refused() -> None:
    with pytest.raises(MeshError, match=r"shape \(N, 3\)"):
        ClothMesh.from_arrays(np.zeros((4, 2)), [[0, 1, 2]])


def test_bad_pins_are_refused() -> None:
    with pytest.raises(MeshError, match=r"pinned point index\(es\) \[9\]"):
        ClothSolver(SQUARE, [[0, 1, 2, 3]], pinned=[0, 9])
    with pytest.raises(MeshError, match="integers"):
        ClothSolver(SQUARE, [[0, 1, 2, 3]], pinned=[0.5])
