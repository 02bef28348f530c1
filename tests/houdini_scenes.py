"""Scenes for the hou double: grids, sphere VDBs and node chains (test helpers, not hou API)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import hou_double as hou
import numpy as np
from pbdcloth.houdini.operators import CURRENT_FRAME, Operator


def grid_quads(nx: int, ny: int, size: float = 1.0, height: float = 1.0
               ) -> tuple[np.ndarray, list[list[int]]]:
    """A flat nx x ny grid of quads in the xz plane at y = ``height`` (like Houdini's Grid SOP)."""
    x, z = np.meshgrid(np.linspace(-size / 2, size / 2, nx), np.linspace(-size / 2, size / 2, ny))
    pos = np.stack([x.ravel(), np.full(nx * ny, height), z.ravel()], axis=1)
    idx = np.arange(nx * ny).reshape(ny, nx)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], axis=-1)
    return pos, quads.reshape(-1, 4).tolist()


def geometry(positions: np.ndarray, faces: Sequence[Sequence[int]],
             groups: dict[str, Sequence[int]] | None = None, closed: bool = True,
             point_floats: dict[str, np.ndarray] | None = None,
             polylines: Sequence[Sequence[int]] = (),
             prim_groups: dict[str, Sequence[int]] | None = None,
             polyline_floats: dict[str, Sequence[float]] | None = None) -> hou.Geometry:
    """A double Geometry with P, polygons (or open polylines), then the open ``polylines``
    (with float primitive attributes ``polyline_floats``, one value per polyline), point
    groups and primitive groups (by primitive number)."""
    geo = hou.Geometry()
    geo._count = int(len(positions))
    geo.addAttrib(hou.attribType.Point, "P", (0.0, 0.0, 0.0))
    geo._point_values["P"] = np.asarray(positions, dtype=np.float64).copy()
    for name, values in (point_floats or {}).items():
        arr = np.asarray(values, dtype=np.float64)
        geo.addAttrib(hou.attribType.Point, name, 0.0 if arr.ndim == 1 else (0.0,) * arr.shape[1])
        geo._point_values[name] = arr.reshape(len(positions), -1).copy()
    for number, face in enumerate(faces):
        prim = hou.Polygon(face, _closed=closed)
        prim._number = number
        geo._prims.append(prim)
    for k, line in enumerate(polylines):
        prim = hou.Polygon(line, _closed=False)
        prim._number = len(geo._prims)
        prim._floats = {name: float(values[k]) for name, values in (polyline_floats or {}).items()}
        geo._prims.append(prim)
    geo._groups = {k: np.asarray(v, dtype=np.int64) for k, v in (groups or {}).items()}
    geo._prim_groups = {k: [int(i) for i in v] for k, v in (prim_groups or {}).items()}
    return geo


def points_geometry(positions: np.ndarray, **point_floats: np.ndarray) -> hou.Geometry:
    return geometry(positions, [], point_floats=point_floats)


def sphere_vdb(center: Sequence[float], radius: float, voxel_size: float, band_voxels: int = 3,
               inclusive: bool = False) -> hou.VDB:
    """A narrow-band level set of a sphere; voxel index m is centred at m * voxel_size."""
    c = np.asarray(center, dtype=np.float64)
    band = band_voxels * voxel_size
    lo = np.floor((c - radius - band) / voxel_size).astype(np.int64) - 1
    hi = np.ceil((c + radius + band) / voxel_size).astype(np.int64) + 1
    axes = [np.arange(lo[a], hi[a] + 1) * voxel_size for a in range(3)]
    gx, gy, gz = np.meshgrid(*axes, indexing="ij")
    dist = np.sqrt((gx - c[0]) ** 2 + (gy - c[1]) ** 2 + (gz - c[2]) ** 2) - radius
    values = np.clip(dist, -band, band)
    return hou.VDB(values, lo, voxel_size, (0.0, 0.0, 0.0), band, _inclusive=inclusive)


def vdb_geometry(*vdbs: hou.VDB) -> hou.Geometry:
    """VDB primitives, each with its point (at the grid's centre), as Houdini stores them."""
    centres = [v._index_origin + v._voxel_size * (v._lo + (np.array(v._values.shape) - 1) / 2)
               for v in vdbs]
    geo = points_geometry(np.array(centres).reshape(-1, 3))
    for k, v in enumerate(vdbs):
        v._number = k
        geo._prims.append(v)
    return geo


def source(path: str, make: Callable[[float], hou.Geometry],
           animated: bool = True) -> hou.SopNode:
    """An upstream node whose geometry at a frame is ``make(frame)`` (a fresh copy each time);
    ``animated=False`` says it is not time dependent (its geometry is the same at every frame)."""
    return hou.SopNode(path, _source=lambda f: hou.Geometry(make(f)), _time_dependent=animated)


def cooked(node: hou.SopNode, cook: Callable[[Any], None]) -> hou.SopNode:
    """An upstream node that is ``node`` cooked by ``cook`` at the requested frame (time
    dependent when one of ``node``'s inputs is)."""
    node._cook_fn = cook
    return hou.SopNode(node.path() + "_out", _source=lambda f: hou.Geometry(node._cook(f, cook)),
                       _inputs=[node], _time_dependent=False)


def parm_values(op: Operator, **overrides: Any) -> dict[str, Any]:
    """Every declared parameter at its default (current_frame follows the frame), plus overrides."""
    values: dict[str, Any] = {}
    for p in op.parameters:
        values[p.name] = p.decl.default
    if CURRENT_FRAME in values:
        values[CURRENT_FRAME] = hou._Expression("$FF", lambda frame: frame)
    unknown = set(overrides) - set(values)
    if unknown:
        raise KeyError(f"{op.name} has no parameters {sorted(unknown)}")
    values.update(overrides)
    return values


def sop(op: Operator, path: str, inputs: Sequence[hou.SopNode | None] = (),
        **overrides: Any) -> hou.SopNode:
    return hou.SopNode(path, _parms=parm_values(op, **overrides), _inputs=inputs)
