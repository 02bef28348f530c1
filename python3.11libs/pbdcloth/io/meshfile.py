"""Cloth input from a file, whatever its format: OBJ, Houdini ``.geo`` or USD.

Point groups come along where the format has them: ``.geo`` point groups and USD GeomSubsets
(point subsets as they are, face subsets as the points of their faces). They serve as pin groups.
So do one-component point attributes (``.geo`` point attributes, USD vertex primvars): the scene
file's ``[attributes]`` table reads per-point attributes from them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..cloth.mesh import MeshError

#: File suffixes understood by :func:`read_mesh`.
MESH_SUFFIXES = (".obj", ".geo", ".usd", ".usda", ".usdc", ".usdz")


@dataclass
class MeshInput:
    """A polygon mesh read from a file.

    Attributes:
        positions: points [m], shape (N, 3).
        faces: polygons as lists of point indices.
        groups: named point groups as sorted index arrays.
        attributes: one-component point attributes by name, shape (N,): ``.geo`` point
            attributes and USD vertex primvars (none from OBJ).
    """

    positions: NDArray[np.float64]
    faces: list[list[int]]
    groups: dict[str, NDArray[np.int64]] = field(default_factory=dict)
    attributes: dict[str, NDArray[np.float64]] = field(default_factory=dict)


def read_mesh(path: str | os.PathLike[str], prim_path: str | None = None) -> MeshInput:
    """Read a cloth mesh; the format follows the suffix (see :data:`MESH_SUFFIXES`).

    ``prim_path`` picks the mesh in a USD stage (default: the default prim, else the first mesh).
    Raises :class:`~pbdcloth.mesh.MeshError` with the file name for missing or bad files.
    """
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix not in MESH_SUFFIXES:
        raise MeshError(f"{source}: unknown mesh format {suffix!r}; use one of {MESH_SUFFIXES}")
    if not source.is_file():
        raise MeshError(f"mesh file not found: {source}")
    if suffix == ".obj":
        from .obj import read_obj

        pos, faces = read_obj(source)
        return MeshInput(pos, faces)
    if suffix == ".geo":
        from .geo import read_geo

        geo = read_geo(source)
        n = geo.positions.shape[0]
        scalars = {name: np.asarray(v, dtype=np.float64).reshape(n)
                   for name, v in geo.point_attributes.items()
                   if np.asarray(v).size == n}
        return MeshInput(geo.positions, geo.faces, dict(geo.point_groups), scalars)
    from .usd import read_usd_mesh

    usd = read_usd_mesh(source, prim_path)
    return MeshInput(usd.positions, usd.faces, dict(usd.subsets), dict(usd.primvars))
