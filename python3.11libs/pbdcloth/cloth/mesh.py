"""Cloth mesh input: validation and triangulation.

A :class:`ClothMesh` is the validated, triangulated input of every simulation: particle rest
positions (N, 3) in metres and triangles (T, 3) of point indices. Polygons with more than three
corners are fan-triangulated from their first corner (exact for convex polygons, which is what
cloth meshes from Houdini's Remesh/Grid are).

Bad input raises a :class:`MeshError` (a ``ValueError``) whose message names the problem and the
offending indices, never a traceback from inside numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..arrays import MAX_COORDINATE, real_array

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.int64]

#: A triangle whose area is below this fraction of its longest edge squared is "zero-area".
DEGENERATE_AREA_RATIO = 1e-12

_MAX_LISTED = 8


class MeshError(ValueError):
    """The cloth mesh is unusable; the message names the problem and the offending indices."""


def _listed(indices: Sequence[int] | NDArray[np.int64]) -> str:
    values = [int(i) for i in list(indices)[:_MAX_LISTED]]
    more = len(indices) - len(values)
    return ", ".join(map(str, values)) + (f", ... ({more} more)" if more > 0 else "")


def _as_positions(positions: ArrayLike) -> FloatArray:
    pos = real_array(positions, "positions", MeshError, finite=False)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise MeshError(f"positions must have shape (N, 3), got {pos.shape}")
    if pos.shape[0] == 0:
        raise MeshError("empty mesh: no points")
    bad = np.flatnonzero(~np.isfinite(pos).all(axis=1))
    if bad.size:
        raise MeshError(f"positions contain NaN or inf at point(s) {_listed(bad)}")
    far = np.flatnonzero((np.abs(pos) > MAX_COORDINATE).any(axis=1))
    if far.size:
        raise MeshError(f"positions must lie within +-{MAX_COORDINATE:g} m; point(s) "
                        f"{_listed(far)} lie outside (point {int(far[0])} is "
                        f"{pos[far[0]].tolist()})")
    return pos


#: Largest point index a face may hold (int64 with room for arithmetic).
_MAX_INDEX = 2**62


def _index_values(face: NDArray[np.generic], what: str) -> IndexArray:
    """A face's (or block's) indices as int64, or MeshError: indices must be real whole numbers
    within int64 (complex, text, fractional, NaN or huge values are refused)."""
    if face.dtype.kind == "O":
        try:
            face = np.asarray([int(i) if float(i) == int(i) else float(i)
                               for i in face.reshape(-1)], dtype=object).reshape(face.shape)
        except (TypeError, ValueError, OverflowError):
            raise MeshError(f"{what} must hold whole point indices, got {face.tolist()!r}"
                            ) from None
        if all(isinstance(i, int) for i in face.reshape(-1)):
            ints = [int(i) for i in face.reshape(-1)]
            if any(abs(i) > _MAX_INDEX for i in ints):
                raise MeshError(f"{what} has point indices beyond {_MAX_INDEX}: "
                                f"{face.tolist()!r}")
            return np.asarray(ints, dtype=np.int64).reshape(face.shape)
        face = face.astype(np.float64)
    if face.dtype.kind not in "iuf":
        raise MeshError(f"{what} must hold whole point indices (real numbers), got dtype "
                        f"{face.dtype}: {face.tolist()!r}"[:200])
    if face.dtype.kind == "i":
        return face.astype(np.int64)
    values = face.astype(np.float64)
    whole = np.isfinite(values) & (values == np.round(values))
    if not whole.all():
        raise MeshError(f"{what} has indices that are not whole numbers: {face.tolist()!r}"[:200])
    if (np.abs(values) > _MAX_INDEX).any():
        raise MeshError(f"{what} has point indices beyond {_MAX_INDEX}: {face.tolist()!r}"[:200])
    return face.astype(np.int64) if face.dtype.kind == "u" else values.astype(np.int64)


def triangulate(faces: ArrayLike | Sequence[Sequence[int]]) -> IndexArray:
    """Triangles (T, 3) from triangles, quads or n-gons.

    ``faces`` is either a rectangular integer array (F, k) with k >= 3, or a sequence of point-index
    sequences of any lengths >= 3. A polygon (v0, v1, ..., vk-1) becomes the fan
    (v0, vi, vi+1) for i = 1 .. k-2, in face order, so the triangulation is deterministic.
    """
    if isinstance(faces, np.ndarray) and faces.ndim == 2 and faces.shape[1] >= 3:
        return _fan_block(faces)
    else:
        try:
            rows: list[NDArray[np.generic]] = [np.asarray(f) for f in faces]  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise MeshError("faces must be a sequence of point-index sequences") from None
    if not rows:
        raise MeshError("empty mesh: no faces")
    tris: list[tuple[int, int, int]] = []
    for number, face in enumerate(rows):
        if face.ndim != 1:
            raise MeshError(f"face {number} must be a flat list of point indices, got {face!r}")
        if face.size < 3:
            raise MeshError(
                f"face {number} has {face.size} corner(s); a face needs at least 3 point indices"
            )
        corners = _index_values(face, f"face {number}").tolist()
        if len(corners) > 3 and len(set(corners)) != len(corners):
            raise MeshError(f"face {number} repeats a point index: {corners}")
        tris.extend((corners[0], corners[i], corners[i + 1]) for i in range(1, len(corners) - 1))
    return np.array(tris, dtype=np.int64).reshape(-1, 3)


def _fan_block(block: NDArray[np.generic]) -> IndexArray:
    """Fan-triangulate a rectangular (F, k) block of polygons in one operation."""
    if block.shape[0] == 0:
        raise MeshError("empty mesh: no faces")
    if block.dtype.kind in "uf":
        values = np.asarray(block, dtype=np.float64)
        bad = np.flatnonzero(~(np.isfinite(values) & (values == np.round(values))).all(axis=1))
        if bad.size:
            raise MeshError(f"face(s) {_listed(bad)} have indices that are not whole numbers")
        big = np.flatnonzero((np.abs(values) > _MAX_INDEX).any(axis=1))
        if big.size:
            raise MeshError(f"face(s) {_listed(big)} have point indices beyond {_MAX_INDEX} "
                            f"(face {int(big[0])} is {block[big[0]].tolist()})")
    faces = _index_values(block, "faces")
    k = faces.shape[1]
    if k > 3:
        ordered = np.sort(faces, axis=1)
        repeated = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if repeated.size:
            raise MeshError(f"face(s) {_listed(repeated)} repeat a point index (face "
                            f"{int(repeated[0])} is {faces[repeated[0]].tolist()})")
    fan = np.empty((faces.shape[0], k - 2, 3), dtype=np.int64)
    fan[:, :, 0] = faces[:, :1]
    fan[:, :, 1] = faces[:, 1:-1]
    fan[:, :, 2] = faces[:, 2:]
    return fan.reshape(-1, 3)


def triangle_areas(positions: FloatArray, triangles: IndexArray) -> FloatArray:
    """Area of each triangle, |(b - a) x (c - a)| / 2, shape (T,) [m^2]."""
    a, b, c = (positions[triangles[:, k]] for k in range(3))
    return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)


def face_normals_t(X: FloatArray, triangles: IndexArray) -> FloatArray:
    """(b - a) x (c - a) of each triangle (a, b, c), component-major (3, T) [m^2].

    ``X`` is component-major positions (3, N); each normal's length is twice the triangle's area.
    """
    a, b, c = X[:, triangles[:, 0]], X[:, triangles[:, 1]], X[:, triangles[:, 2]]
    u, w = b - a, c - a
    return np.stack([u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                     u[0] * w[1] - u[1] * w[0]])


def vertex_normals_t(X: FloatArray, triangles: IndexArray, by_corner: bool = False) -> FloatArray:
    """Area-weighted unit vertex normals of component-major positions ``X`` (3, N), shape (3, N).

    n_p = sum of (b - a) x (c - a) over the triangles at p, divided by its length (zero for a
    point with no triangle). The sum runs in triangle order, or with ``by_corner`` over all
    triangles' first corners, then their second, then their third (the order of
    :func:`vertex_normals`); the two orders differ by rounding only.
    """
    fn = face_normals_t(X, triangles)
    n = X.shape[1]
    out = np.empty_like(X)
    flat = triangles.T.reshape(-1) if by_corner else triangles.reshape(-1)
    for k in range(3):
        weights = np.tile(fn[k], 3) if by_corner else np.repeat(fn[k], 3)
        out[k] = np.bincount(flat, weights=weights, minlength=n)
    length = np.sqrt((out * out).sum(axis=0))
    return out / np.where(length > 0.0, length, 1.0)


def vertex_normals(positions: FloatArray, triangles: IndexArray) -> FloatArray:
    """Area-weighted unit vertex normals of ``positions`` (N, 3), shape (N, 3); zero for points
    with no triangle (:func:`vertex_normals_t`, summed by corner)."""
    return np.ascontiguousarray(vertex_normals_t(positions.T, triangles, by_corner=True).T)


@dataclass(frozen=True)
class ClothMesh:
    """A validated triangle mesh.

    Attributes:
        positions: rest positions of the particles [m], shape (N, 3), float64.
        triangles: point indices of each triangle, shape (T, 3), int64.
    """

    positions: FloatArray
    triangles: IndexArray

    @property
    def point_count(self) -> int:
        return int(self.positions.shape[0])

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])

    @classmethod
    def from_arrays(
        cls, positions: ArrayLike, faces: ArrayLike | Sequence[Sequence[int]]
    ) -> "ClothMesh":
        """Validate positions and faces and triangulate the faces.

        Raises:
            MeshError: empty mesh, NaN/inf positions, a face with fewer than three corners,
                out-of-range or repeated indices in a face, zero-area triangles, or edges shared
                by more than two triangles (non-manifold).
        """
        pos = _as_positions(positions)
        tris = triangulate(faces)
        n = pos.shape[0]

        out_of_range = np.flatnonzero(((tris < 0) | (tris >= n)).any(axis=1))
        if out_of_range.size:
            t = int(out_of_range[0])
            raise MeshError(
                f"triangle(s) {_listed(out_of_range)} use point indices outside [0, {n - 1}] "
                f"(triangle {t} is {tris[t].tolist()})"
            )
        repeated = np.flatnonzero(
            (tris[:, 0] == tris[:, 1]) | (tris[:, 1] == tris[:, 2]) | (tris[:, 0] == tris[:, 2])
        )
        if repeated.size:
            t = int(repeated[0])
            raise MeshError(
                f"triangle(s) {_listed(repeated)} repeat a point index "
                f"(triangle {t} is {tris[t].tolist()})"
            )

        areas = triangle_areas(pos, tris)
        a, b, c = (pos[tris[:, k]] for k in range(3))
        longest_sq = np.maximum.reduce(
            [((b - a) ** 2).sum(1), ((c - b) ** 2).sum(1), ((a - c) ** 2).sum(1)]
        )
        degenerate = np.flatnonzero(areas <= DEGENERATE_AREA_RATIO * longest_sq)
        if degenerate.size:
            raise MeshError(f"zero-area triangle(s) {_listed(degenerate)}")

        _check_manifold(tris)
        return cls(positions=pos, triangles=tris)


def _check_manifold(triangles: IndexArray) -> None:
    """Refuse edges shared by more than two triangles, naming the edges and the triangles."""
    half = np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    keys, inverse, counts = np.unique(half, axis=0, return_inverse=True, return_counts=True)
    bad = np.flatnonzero(counts > 2)
    if bad.size:
        edge = keys[bad[0]]
        owners = np.flatnonzero(inverse.reshape(-1) == bad[0]) // 3
        raise MeshError(
            f"non-manifold mesh: {bad.size} edge(s) are shared by more than two triangles, "
            f"e.g. edge ({edge[0]}, {edge[1]}) by triangles {_listed(owners)}"
        )


def grid(
    nx: int, ny: int, width: float = 1.0, height: float = 1.0, plane: str = "xz",
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A regular triangulated grid of ``nx`` x ``ny`` points.

    ``plane`` "xz" lies flat (normal +y), "xy" hangs vertically (from y = origin_y down to
    origin_y - height). Point (i, j) (column i, row j) has index j * nx + i. Each quad is split
    into two triangles along alternating diagonals, so the cloth has no preferred shear direction.
    Returns (positions (nx*ny, 3), triangles (2 (nx-1)(ny-1), 3)).
    """
    if nx < 2 or ny < 2:
        raise ValueError(f"a grid needs at least 2 x 2 points, got {nx} x {ny}")
    u = np.linspace(0.0, width, nx)
    w = np.linspace(0.0, height, ny)
    uu, ww = np.meshgrid(u, w, indexing="xy")
    pos = np.zeros((nx * ny, 3))
    if plane == "xz":
        pos[:, 0] = uu.ravel()
        pos[:, 2] = ww.ravel()
    elif plane == "xy":
        pos[:, 0] = uu.ravel()
        pos[:, 1] = -ww.ravel()
    else:
        raise ValueError(f"plane must be 'xz' or 'xy', got {plane!r}")
    pos += np.asarray(origin, dtype=np.float64)
    idx = np.arange(nx * ny).reshape(ny, nx)
    a = idx[:-1, :-1]
    b = idx[:-1, 1:]
    c = idx[1:, 1:]
    d = idx[1:, :-1]
    flip = ((np.arange(ny - 1)[:, None] + np.arange(nx - 1)[None, :]) % 2).astype(bool)
    t1 = np.where(flip[..., None], np.stack([a, b, d], -1), np.stack([a, b, c], -1))
    t2 = np.where(flip[..., None], np.stack([b, c, d], -1), np.stack([a, c, d], -1))
    tris = np.stack([t1, t2], axis=2).reshape(-1, 3)
    return pos, tris.astype(np.int64)
