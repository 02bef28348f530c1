"""Animated collider meshes from files: a numbered sequence (``walk.$F4.obj``) or a USD mesh
whose points are time-sampled.

A file name with ``$F`` (the frame number) or ``$F2`` ... ``$F9`` (zero-padded to that many
digits, as Houdini writes ``$F4``) names one file per frame; any other name is one file, read at
every frame (a USD stage's points at time code = frame number; other formats: a still mesh).
Every frame must have the first frame's polygons (same count, same point indices): a
MeshCollider keeps its triangles. Problems raise
:class:`~pbdcloth.colliders.mesh.MeshColliderError` naming the frame and the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..cloth.mesh import MeshError, triangulate
from ..colliders.mesh import MeshColliderError

__all__ = ["MeshSequence", "expand_frame", "is_sequence"]

_TOKEN = re.compile(r"\$F([1-9]?)")
_USD = (".usd", ".usda", ".usdc", ".usdz")


def is_sequence(name: str) -> bool:
    """True when ``name`` holds a ``$F`` frame token."""
    return _TOKEN.search(name) is not None


def expand_frame(name: str, frame: int) -> str:
    """``name`` with each ``$F`` / ``$Fn`` replaced by ``frame`` (zero-padded to n digits)."""
    return _TOKEN.sub(lambda m: f"{frame:0{int(m.group(1) or 1)}d}", name)


class MeshSequence:
    """The collider mesh at each frame (module docstring).

    Args:
        path: a file name, with ``$F`` tokens for a sequence.
        prim: the mesh's prim path in a USD stage (default: the default or first mesh).
    """

    def __init__(self, path: str | os.PathLike[str], prim: str | None = None) -> None:
        self.pattern = os.fspath(path)
        self.prim = prim or None
        self.sequence = is_sequence(self.pattern)
        self.usd = Path(self.pattern).suffix.lower() in _USD
        self._faces: list[list[int]] | None = None
        self.triangles: NDArray[np.int64] | None = None

    def path(self, frame: int) -> Path:
        """The file that holds ``frame``."""
        return Path(expand_frame(self.pattern, frame) if self.sequence else self.pattern)

    def missing(self, first: int, last: int) -> int | None:
        """The first frame in [first, last] whose file does not exist, or None."""
        for frame in range(first, last + 1):
            if not self.path(frame).is_file():
                return frame
            if not self.sequence:
                return None
        return None

    def read(self, frame: int) -> NDArray[np.float64]:
        """The mesh's points (V, 3) [m] at ``frame``; the first call also fixes the triangles
        (:attr:`triangles`) that every later frame must share."""
        source = self.path(frame)
        what = f"collider mesh frame {frame} ({source})"
        try:
            if self.usd:
                from .usd import read_usd_mesh

                usd = read_usd_mesh(source, self.prim, frame=float(frame))
                points, faces = usd.positions, usd.faces
            else:
                from .meshfile import read_mesh

                mesh = read_mesh(source, self.prim)
                points, faces = mesh.positions, mesh.faces
        except (MeshError, OSError, ValueError) as exc:
            raise MeshColliderError(f"{what}: {exc}") from None
        if self._faces is None:
            self._faces = faces
            self.triangles = np.asarray(triangulate(faces), dtype=np.int64)
        elif faces != self._faces:
            raise MeshColliderError(
                f"{what}: the polygons differ from the first frame's ({len(faces)} polygons, "
                f"first frame {len(self._faces)}): the topology changed; a mesh collider needs "
                "the same polygons every frame")
        if points.shape[0] < 1 + max((max(f) for f in faces), default=-1):
            raise MeshColliderError(f"{what}: polygons refer to missing points")
        return np.asarray(points, dtype=np.float64)
