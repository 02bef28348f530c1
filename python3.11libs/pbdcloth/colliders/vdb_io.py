"""OpenVDB level sets in and out, through the real library (``pyopenvdb``, OpenVDB 10).

pyopenvdb is optional: Debian and Ubuntu ship it as ``python3-openvdb`` (built against numpy 1.x),
and it is imported only inside these functions. A level set's active narrow band is copied once
into a dense block (``FloatGrid.copyToArray`` over the active voxels' bounding box; inactive voxels
read their tile values, +background outside and -background inside after OpenVDB's sign flood
fill), which :class:`~pbdcloth.colliders.sdf_grid.SdfGrid` then samples.

OpenVDB's index space puts voxel (i, j, k)'s centre at index coordinates (i, j, k); a linear grid
transform maps it to world space as x = A (i, j, k) + x0. We accept transforms where A is a uniform
scale times a rotation (the voxel size and the grid's orientation), split as A = s R, so that the
block's local frame is y = s (i, j, k) and world = R y + x0.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .rigid import ROTATION_TOLERANCE, Rigid
from .sdf_grid import MAX_VOXELS, SdfError, SdfGrid, check_voxel_size
from .vdb_header import check_vdb_file

INSTALL_HINT = (
    "pyopenvdb (OpenVDB's Python module) is needed for .vdb level sets: install it with "
    "`apt-get install python3-openvdb` (Debian/Ubuntu, numpy < 2) and use a Python that sees the "
    "system site-packages; without it, build colliders with SdfCollider.from_dense"
)


class OpenVdbMissingError(ImportError):
    """pyopenvdb is not installed."""


def import_openvdb() -> Any:
    """The ``pyopenvdb`` module, or :class:`OpenVdbMissingError` saying how to install it."""
    try:
        import pyopenvdb
    except ImportError as exc:
        raise OpenVdbMissingError(f"{INSTALL_HINT} ({exc})") from None
    return pyopenvdb


def _describe(grid: Any) -> str:
    return f"'{grid.name}' ({type(grid).__name__}, class {grid.gridClass})"


def check_level_set(grid: Any, vdb: Any) -> None:
    """SdfError unless ``grid`` is a pyopenvdb FloatGrid whose class is level set."""
    if not isinstance(grid, vdb.FloatGrid):
        kind = type(grid).__name__
        raise SdfError(f"an SDF collider needs a pyopenvdb FloatGrid level set, got a {kind}"
                       + (f" named '{grid.name}'" if hasattr(grid, "name") else ""))
    if grid.gridClass != vdb.GridClass.LEVEL_SET:
        hint = (" (a fog volume holds densities, not signed distances; convert it with VDB "
                "Convert/SDF from fog or rebuild with VDB from Polygons, distance mode)"
                if grid.gridClass == vdb.GridClass.FOG_VOLUME else "")
        raise SdfError(f"grid {_describe(grid)} is not a level set{hint}")


def grid_frame(grid: Any) -> tuple[float, Rigid]:
    """Voxel size s [m] and rigid part (R, x0) of a grid's linear index-to-world transform.

    Raises SdfError for non-linear (frustum), non-uniform, sheared, mirrored or zero-size
    transforms.
    """
    xf = grid.transform
    if not xf.isLinear:
        raise SdfError(f"grid {_describe(grid)} has a non-linear (frustum) transform; "
                       "resample it to a linear transform")
    x0 = np.asarray(xf.indexToWorld((0, 0, 0)), dtype=np.float64)
    a = np.stack([np.asarray(xf.indexToWorld(e), dtype=np.float64) - x0
                  for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1))], axis=1)
    sizes = np.linalg.norm(a, axis=0)
    if not np.all(sizes > 0.0):
        raise SdfError(f"grid {_describe(grid)} has a zero voxel size {sizes.tolist()}")
    s = float(sizes.mean())
    if float(np.abs(sizes - s).max()) > 1e-6 * s:
        raise SdfError(f"grid {_describe(grid)} has non-uniform voxel size {sizes.tolist()}; "
                       "an SDF collider needs cubic voxels (resample the grid)")
    r = a / s
    if float(np.abs(r.T @ r - np.eye(3)).max()) > ROTATION_TOLERANCE or np.linalg.det(r) < 0:
        raise SdfError(f"grid {_describe(grid)} has a sheared or mirrored transform; "
                       "an SDF collider needs a uniform scale and a rotation")
    return s, Rigid.from_parts(r, x0)


def dense_from_grid(grid: Any) -> tuple[SdfGrid, Rigid]:
    """The grid's active band as an :class:`SdfGrid` in its local frame, and that frame's pose.

    The local frame is the grid's index space scaled by the voxel size; the returned rigid
    transform maps it to the grid's world space.
    """
    vdb = import_openvdb()
    check_level_set(grid, vdb)
    s, frame = grid_frame(grid)
    if grid.activeVoxelCount() == 0:
        raise SdfError(f"grid {_describe(grid)} is empty (no active voxels)")
    lo, hi = (np.asarray(c, dtype=np.int64) for c in grid.evalActiveVoxelBoundingBox())
    dims = hi - lo + 1
    count = int(np.prod(dims))
    if count > MAX_VOXELS:
        raise SdfError(f"grid {_describe(grid)} spans {dims.tolist()} voxels, too many for a "
                       f"dense copy ({count} > {MAX_VOXELS}); use a coarser voxel size")
    values = np.empty(tuple(int(d) for d in dims), dtype=np.float32)
    grid.copyToArray(values, ijk=tuple(int(c) for c in lo))
    background = float(grid.background)
    return SdfGrid.from_dense(values, s, s * lo.astype(np.float64), background), frame


def read_level_set(path: str | os.PathLike[str], grid_name: str | None = None) -> Any:
    """Read one level set FloatGrid from a .vdb file.

    With ``grid_name``, that grid (which must be a FloatGrid level set); without, the first
    FloatGrid level set in the file. Raises SdfError for a missing or unreadable file, an
    unknown grid name, or a file with no level set. The file's size and header are checked
    first (:func:`~pbdcloth.colliders.vdb_header.check_vdb_file`: grid and voxel counts
    capped), so a truncated or damaged file fails in microseconds, not inside OpenVDB.
    """
    vdb = import_openvdb()
    p = Path(path)
    if not p.is_file():
        raise SdfError(f"level set file not found: {str(p)!r}")
    check_vdb_file(p)  # bounded: size, header and grid descriptors, before OpenVDB parses
    try:
        grids = vdb.readAllGridMetadata(str(p))
    except (OSError, RuntimeError, ValueError, KeyError, LookupError) as exc:
        raise SdfError(f"cannot read {str(p)!r} as a .vdb file: {_short(exc)}") from None
    listing = ", ".join(_describe(g) for g in grids) or "none"
    if grid_name is not None:
        match = [g for g in grids if g.name == grid_name]
        if not match:
            raise SdfError(f"{str(p)!r} has no grid named {grid_name!r}; grids: {listing}")
        check_level_set(match[0], vdb)
        name = grid_name
    else:
        levels = [g for g in grids
                  if isinstance(g, vdb.FloatGrid) and g.gridClass == vdb.GridClass.LEVEL_SET]
        if not levels:
            raise SdfError(f"{str(p)!r} has no level set grid (a FloatGrid of class level set); "
                           f"grids: {listing}")
        name = levels[0].name
    try:
        return vdb.read(str(p), name)
    except (OSError, RuntimeError, KeyError, LookupError, ValueError) as exc:
        raise SdfError(f"cannot read grid {name!r} from {str(p)!r}: {_short(exc)}") from None


def _short(exc: BaseException) -> str:
    """An exception's message on one line of at most 200 characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


def level_set_from_mesh(vertices: object, faces: object, voxel_size: float,
                        half_width: float = 3.0) -> Any:
    """A narrow-band level set FloatGrid of a closed triangle or quad mesh, made by OpenVDB.

    Uses ``FloatGrid.createLevelSetFromPolygons`` (OpenVDB's mesh-to-volume, the same conversion
    as Houdini's VDB from Polygons) with a linear transform of ``voxel_size`` [m] and a band of
    ``half_width`` voxels on each side of the surface.

    Args:
        vertices: world positions (V, 3) [m].
        faces: triangles (F, 3) or quads (F, 4) of vertex indices.
    """
    vdb = import_openvdb()
    pts = np.asarray(vertices, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3 or pts.shape[0] < 3:
        raise SdfError(f"mesh vertices must have shape (V, 3) with V >= 3, got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        row = int(np.flatnonzero(~np.isfinite(pts).all(axis=1))[0])
        raise SdfError(f"mesh vertex {row} is not finite: {pts[row].tolist()}")
    try:
        idx = np.asarray(faces)
    except (TypeError, ValueError):
        raise SdfError("mesh faces must be an (F, 3) or (F, 4) integer array") from None
    if idx.ndim != 2 or idx.shape[1] not in (3, 4) or idx.shape[0] == 0 \
            or not np.issubdtype(idx.dtype, np.integer):
        raise SdfError(f"mesh faces must be a non-empty (F, 3) or (F, 4) integer array, got "
                       f"shape {idx.shape} of {idx.dtype}")
    bad = np.flatnonzero(((idx < 0) | (idx >= pts.shape[0])).any(axis=1))
    if bad.size:
        raise SdfError(f"mesh face {int(bad[0])} refers to a missing vertex: "
                       f"{idx[bad[0]].tolist()} (only {pts.shape[0]} vertices)")
    h = check_voxel_size(voxel_size)
    try:
        hw = float(half_width)
    except (TypeError, ValueError):
        raise SdfError(f"half_width must be a number of voxels, got {half_width!r}") from None
    if not (np.isfinite(hw) and hw >= 1.0):
        raise SdfError(f"half_width must be at least 1 voxel, got {half_width!r}")
    extent = float((pts.max(axis=0) - pts.min(axis=0)).max())
    if ((extent / h + 2.0 * hw) ** 3) > MAX_VOXELS:
        raise SdfError(f"voxel size {h} m is too fine for a mesh {extent:.3g} m across; "
                       "use a coarser voxel size")
    xf = vdb.createLinearTransform(h)
    tri = idx.astype(np.int32) if idx.shape[1] == 3 else None
    quad = idx.astype(np.int32) if idx.shape[1] == 4 else None
    grid = vdb.FloatGrid.createLevelSetFromPolygons(
        pts.astype(np.float32), triangles=tri, quads=quad, transform=xf, halfWidth=hw)
    if grid.activeVoxelCount() == 0:
        raise SdfError("the mesh gave an empty level set (is it closed and larger than a voxel?)")
    return grid


def write_level_set(path: str | os.PathLike[str], grid: Any) -> Path:
    """Write ``grid`` to a .vdb file atomically (a temporary file renamed into place)."""
    from ..atomic import atomic_path

    vdb = import_openvdb()
    target = Path(path)
    tmp = atomic_path(target)
    try:
        vdb.write(str(tmp), grids=[grid])
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
