"""SdfCollider: an obstacle given by a narrow-band signed distance field (an OpenVDB level set).

The cloth seed collides garments with props through level sets made by Houdini's "VDB from
Polygons": a particle with phi(p) < thickness moves along n = grad phi / |grad phi| by
thickness - phi(p), then friction and restitution act on its motion (shared with every collider,
see :mod:`pbdcloth.colliders.response`).

Where the voxels come from:

* :meth:`SdfCollider.from_vdb` reads a level set from a ``.vdb`` file,
* :meth:`SdfCollider.from_mesh` converts a closed mesh with OpenVDB (``createLevelSetFromPolygons``),
* :meth:`SdfCollider.from_grid` takes a pyopenvdb ``FloatGrid`` already in memory,
* :meth:`SdfCollider.from_dense` takes a plain numpy block of distances (no OpenVDB needed; the
  Houdini layer builds colliders from ``hou.VDB`` voxels this way).

All four end in the same :class:`~pbdcloth.colliders.sdf_grid.SdfGrid` sampler (trilinear distance
and gradient for all particles in one call). Outside the band the field reads ``background`` and
gives no direction (far away); deeper inside than the band it reads -background and also gives no
direction, so such "tunnelled" particles are not pushed (see :mod:`~pbdcloth.colliders.sdf_grid`).

Moving: the level set is never rebuilt. :meth:`SdfCollider.move_to` sets a rigid 4 x 4 world
matrix for the end of the coming frame; substeps in between see the pose interpolated about the
block's centre (linear in position, slerp in rotation; :mod:`~pbdcloth.colliders.rigid`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..portable import rotate, rotate_columns
from .base import Collider, F
from .continuous import field_entry
from .rigid import Rigid, interpolate, rigid_from_matrix
from .sdf_grid import SdfError, SdfGrid

__all__ = ["SdfCollider", "SdfError"]


class SdfCollider(Collider):
    """A rigid obstacle described by a sampled signed distance field.

    Build one with a ``from_*`` constructor. The field lives in its own local frame; ``base``
    places it in the world at the identity pose (for OpenVDB grids: the rotation and offset of the
    grid's transform), and :meth:`move_to` moves it rigidly from there.

    Attributes:
        grid: the dense sampler.
        base: local frame -> world at the identity pose.
        source: where the field came from (for messages and ``repr``).
    """

    def __init__(self, grid: SdfGrid, base: Rigid | None = None, source: str = "dense") -> None:
        if not isinstance(grid, SdfGrid):
            raise SdfError(f"SdfCollider needs an SdfGrid, got {type(grid).__name__}; use "
                           "SdfCollider.from_dense/from_vdb/from_mesh/from_grid")
        self.grid = grid
        self.base = base if base is not None else Rigid.identity()
        self.source = source
        self._user = Rigid.identity()
        self._pose0 = self._pose1 = self.base
        self._cache: dict[float, tuple[Rigid, F, F]] = {}

    # --- constructors --------------------------------------------------------------------------
    @classmethod
    def from_dense(cls, values: object, voxel_size: object, origin: object,
                   background: object) -> SdfCollider:
        """From a dense block of signed distances, numpy only.

        Args:
            values: signed distance at each voxel centre [m], shape (nx, ny, nz), negative
                inside; voxel (i, j, k) sits at ``origin + voxel_size * (i, j, k)``.
            voxel_size: voxel edge [m] (a number, or three equal numbers).
            origin: world position of voxel (0, 0, 0)'s centre [m].
            background: the value outside the narrow band [m] (positive, its half-width).

        Raises:
            SdfError: bad shape, NaN values, zero or non-uniform voxel size, bad background.
        """
        return cls(SdfGrid.from_dense(values, voxel_size, origin, background), source="dense")

    @classmethod
    def from_grid(cls, grid: Any) -> SdfCollider:
        """From a pyopenvdb ``FloatGrid`` level set in memory (its active band is copied once).

        Raises:
            OpenVdbMissingError: pyopenvdb is not installed.
            SdfError: not a FloatGrid, not a level set (e.g. a fog volume), empty, or a transform
                with non-uniform, sheared or zero voxels.
        """
        from .vdb_io import dense_from_grid

        sdf, frame = dense_from_grid(grid)
        return cls(sdf, frame, source=f"grid '{grid.name}'")

    @classmethod
    def from_vdb(cls, path: str | os.PathLike[str],
                 grid_name: str | None = None) -> SdfCollider:
        """From a level set in a ``.vdb`` file: ``grid_name``, or the file's first level set.

        Raises:
            OpenVdbMissingError: pyopenvdb is not installed.
            SdfError: missing or unreadable file, unknown grid name, no level set in the file,
                or any error of :meth:`from_grid`.
        """
        from .vdb_io import read_level_set

        grid = read_level_set(path, grid_name)
        collider = cls.from_grid(grid)
        collider.source = f"{os.fspath(path)}:{grid.name}"
        return collider

    @classmethod
    def from_mesh(cls, vertices: object, faces: object, voxel_size: float,
                  half_width: float = 3.0) -> SdfCollider:
        """From a closed mesh, converted to a narrow-band level set by OpenVDB.

        Args:
            vertices: (V, 3) world positions [m].
            faces: (F, 3) triangles or (F, 4) quads of vertex indices.
            voxel_size: voxel edge [m].
            half_width: band half-width in voxels on each side of the surface (>= 1). The band
                must be wider than ``thickness`` plus the distance particles travel in a substep.

        Raises:
            OpenVdbMissingError: pyopenvdb is not installed.
            SdfError: bad mesh arrays, voxel size or half-width; empty result.
        """
        from .vdb_io import level_set_from_mesh

        grid = level_set_from_mesh(vertices, faces, voxel_size, half_width)
        collider = cls.from_grid(grid)
        collider.source = "mesh"
        return collider

    # --- properties ----------------------------------------------------------------------------
    @property
    def voxel_size(self) -> float:
        """Voxel edge [m]."""
        return self.grid.voxel_size

    @property
    def band_width(self) -> float:
        """Half-width of the narrow band [m] (the background value): the deepest penetration,
        and the largest clearance, the field can see."""
        return self.grid.background

    @property
    def matrix(self) -> F:
        """The pose set by the last :meth:`move_to` (identity if none), 4 x 4, column vectors."""
        return self._user.matrix()

    # --- motion --------------------------------------------------------------------------------
    def move_to(self, matrix: object) -> None:
        """Set the rigid world matrix for the end of the coming frame.

        ``matrix`` is 4 x 4 with column vectors (translation in the last column), applied to the
        field as it was built (identity = where it was made). Raises
        :class:`~pbdcloth.colliders.rigid.RigidTransformError` (a ValueError) for scale, shear,
        mirroring, NaNs or a row-vector matrix.
        """
        self._user = rigid_from_matrix(matrix, "SdfCollider.move_to matrix")
        self._pose1 = self._user.compose(self.base)
        self._cache.clear()

    def end_frame(self) -> None:
        self._pose0 = self._pose1
        self._cache.clear()

    @property
    def is_moving(self) -> bool:
        return not self._pose0.same_as(self._pose1)

    def pose(self, alpha: float = 1.0) -> Rigid:
        """The local -> world transform at ``alpha`` in [0, 1] of the current frame."""
        return self._at(alpha)[0]

    def _at(self, alpha: float) -> tuple[Rigid, F, F]:
        """Pose at ``alpha`` and its world -> voxel map (A, b), cached until the pose changes."""
        hit = self._cache.get(alpha)
        if hit is None:
            if self.is_moving:
                pose = interpolate(self._pose0, self._pose1, alpha, self.grid.center)
            else:
                pose = self._pose1
            a, b = self.grid.index_transform(pose.rotation, pose.translation)
            hit = (pose, a, b[:, None])
            self._cache[alpha] = hit
        return hit

    # --- queries -------------------------------------------------------------------------------
    def query(self, points: F, alpha: float = 1.0) -> tuple[F, F]:
        """Signed distance (M,) [m] and unit outward normal (M, 3) at world ``points`` (M, 3).

        The normal is zero where the field gives no direction (outside the band, or deeper
        inside than the band); there the distance reads +background or -background.
        """
        pose, a, b = self._at(alpha)
        phi, grad = self.grid.evaluate(self.grid.locate(rotate_columns(a, points) + b))
        return phi, rotate(pose.rotation, grad.T)

    def near(self, points: F, alpha: float, distance: float) -> tuple[NDArray[np.intp], F, F]:
        """The points closer than ``distance`` [m]: their indices (K,), distances (K,) and
        normals (K, 3), as :meth:`query` would give them.

        Two passes: distances of all points (one 4-byte gather per cell corner), then gradients
        for the K near points only.
        """
        pose, a, b = self._at(alpha)
        cells = self.grid.locate(rotate_columns(a, points) + b)
        phi = self.grid.distance(cells)
        idx = np.flatnonzero(phi < distance)
        grad = self.grid.normal(cells if idx.size == phi.size else cells.subset(idx))
        return idx, phi[idx], rotate(pose.rotation, grad.T)

    def _distance(self, points: F, alpha: float) -> F:
        _, a, b = self._at(alpha)
        cells = self.grid.locate(rotate_columns(a, points) + b)
        return self.grid.distance(cells).astype(np.float64)

    def _normal(self, points: F, alpha: float) -> F:
        pose, a, b = self._at(alpha)
        cells = self.grid.locate(rotate_columns(a, points) + b)
        return rotate(pose.rotation, self.grid.normal(cells).T)

    def sweep(self, x_prev: F, p: F, alpha0: float, alpha1: float, thickness: float | F
              ) -> tuple[NDArray[np.intp], F]:
        """Continuous collision for a rigidly moving field (:func:`~.continuous.field_entry`):
        in the placement of the substep's start pose the particle moves from ``x_prev`` to its
        end position carried back by the body's motion; an entry found there is carried to the
        end pose."""
        if not self.is_moving:
            return np.zeros(0, dtype=np.intp), np.zeros((0, 3))
        pose0, pose1 = self.pose(alpha0), self.pose(alpha1)
        y1 = pose0.to_world(pose1.to_local(p))
        idx, entry = field_entry(lambda y: self._distance(y, alpha0),
                                 lambda y: self._normal(y, alpha0), x_prev, y1, thickness,
                                 self.voxel_size)
        return idx, pose1.to_world(pose0.to_local(entry))

    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        """World motion from ``alpha0`` to ``alpha1`` of the body points now (at ``alpha1``) at
        ``points`` (M, 3) [m]."""
        if not self.is_moving:
            return np.zeros_like(points)
        local = self.pose(alpha1).to_local(points)
        return points - self.pose(alpha0).to_world(local)

    def __repr__(self) -> str:
        return (f"SdfCollider(source={self.source!r}, voxel_size={self.voxel_size:g}, "
                f"band={self.band_width:g}, block={self.grid.dense_shape})")
