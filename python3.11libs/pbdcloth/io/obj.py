"""Wavefront OBJ: polygon meshes in, frame sequences out (the polygons as given)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..atomic import atomic_write
from ..cloth.mesh import MeshError


def frame_path(pattern: str | os.PathLike[str], frame: int) -> Path:
    """Expand a frame pattern: ``$F4`` (Houdini style, zero-padded to 4), ``$F``, ``#### ``, or
    Python ``{frame:04d}``. A pattern without a frame token gets ``.NNNN`` before its suffix."""
    text = str(pattern)
    for token, value in (("$F4", f"{frame:04d}"), ("$F3", f"{frame:03d}"), ("$F2", f"{frame:02d}"),
                         ("$F", f"{frame}"), ("####", f"{frame:04d}")):
        if token in text:
            return Path(text.replace(token, value))
    if "{frame" in text:
        return Path(text.format(frame=frame))
    p = Path(text)
    return p.with_name(f"{p.stem}.{frame:04d}{p.suffix}")


def write_obj(path: str | os.PathLike[str], positions: NDArray[np.float64],
              triangles: NDArray[np.int64] | Sequence[Sequence[int]], comment: str = "") -> Path:
    """Write one OBJ (``v`` lines with 9 significant digits, 1-based ``f`` lines), atomically.

    ``triangles``: the faces, an (F, k) array or a list of polygons of any sizes (a quad mesh
    is written as quads)."""
    target = Path(path)
    lines = []
    if comment:
        lines.append(f"# {comment}\n")
    body = "\n".join(
        ["v " + " ".join(f"{c:.9g}" for c in p) for p in np.asarray(positions).tolist()]
        + ["f " + " ".join(str(int(i) + 1) for i in t) for t in _face_lists(triangles)]
    )
    with atomic_write(target) as fh:
        fh.write("".join(lines) + body + "\n")
    return target


def _face_lists(faces: NDArray[np.int64] | Sequence[Sequence[int]]) -> list[list[int]]:
    if isinstance(faces, np.ndarray):
        return [list(f) for f in faces.tolist()]
    return [[int(i) for i in f] for f in faces]


def read_obj(path: str | os.PathLike[str]) -> tuple[NDArray[np.float64], list[list[int]]]:
    """Positions (N, 3) and polygon faces (0-based point indices) of an OBJ file.

    Only ``v`` and ``f`` records are read; ``f`` corners may be ``i``, ``i/t``, ``i//n`` or
    ``i/t/n`` and negative (relative) indices are resolved.
    """
    source = Path(path)
    if not source.is_file():
        raise MeshError(f"OBJ file not found: {source}")
    verts: list[list[float]] = []
    faces: list[list[int]] = []
    with source.open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            try:
                if parts[0] == "v":
                    verts.append([float(x) for x in parts[1:4]])
                elif parts[0] == "f":
                    face = []
                    for corner in parts[1:]:
                        idx = int(corner.split("/")[0])
                        face.append(idx - 1 if idx > 0 else len(verts) + idx)
                    faces.append(face)
            except (ValueError, IndexError):
                raise MeshError(f"{source}:{lineno}: cannot parse {line.strip()!r}") from None
    if not verts:
        raise MeshError(f"{source}: no vertices")
    return np.array(verts, dtype=np.float64).reshape(-1, 3), faces
