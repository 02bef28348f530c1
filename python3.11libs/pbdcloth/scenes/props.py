"""Props for scenes: closed meshes made of primitives, turned into OpenVDB level sets and cached.

A prop's level set is built once with OpenVDB (``createLevelSetFromPolygons``, needs pyopenvdb)
and written as a ``.vdb`` file into a cache folder; later runs read the file. The file name holds a
hash of the mesh, the voxel size and the band, so changing any of them builds a new one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..colliders.sdf import SdfCollider
from ..portable import norm, rotate

F = NDArray[np.float64]
Ix = NDArray[np.int64]

#: Corner k = 4 a + 2 b + c of :func:`box_mesh` sits at (-+)x, (-+)y, (-+)z for a, b, c = 0/1.
_BOX_QUADS = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                       [1, 5, 7, 3]], dtype=np.int64)


def box_mesh(center: object, half: object, rotation: object = None) -> tuple[F, Ix]:
    """A closed box: 8 vertices (8, 3) [m] and 6 outward-facing quads (6, 4).

    ``half`` are the half-extents [m] along the box's own axes; ``rotation`` (3, 3) turns the
    box about its centre.
    """
    signs = np.array([[a, b, c] for a in (-1.0, 1.0) for b in (-1.0, 1.0) for c in (-1.0, 1.0)],
                     dtype=np.float64)
    local: F = signs * np.asarray(half, dtype=np.float64)
    if rotation is not None:
        local = rotate(rotation, local)
    return local + np.asarray(center, dtype=np.float64), _BOX_QUADS.copy()


def merge_meshes(parts: list[tuple[F, Ix]]) -> tuple[F, Ix]:
    """One mesh (vertices, faces) from several with faces of the same arity."""
    verts, faces, offset = [], [], 0
    for v, f in parts:
        verts.append(v)
        faces.append(f + offset)
        offset += v.shape[0]
    return np.concatenate(verts), np.concatenate(faces)


def capsule_mesh(a: object, b: object, radius: float, segments: int = 24,
                 rings: int = 8) -> tuple[F, Ix]:
    """A closed triangle mesh of the points within ``radius`` [m] of segment ab (a sphere when
    a = b): two hemispheres of ``rings`` latitude steps joined by a cylinder, ``segments``
    around. Returns vertices (V, 3) [m] and triangles (F, 3)."""
    pa = np.asarray(a, dtype=np.float64)
    pb = np.asarray(b, dtype=np.float64)
    axis = pb - pa
    length = norm(axis)
    u = axis / length if length > 0.0 else np.array([0.0, 1.0, 0.0])
    helper = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    e1 = np.cross(u, helper)
    e1 /= norm(e1)
    e2 = np.cross(u, e1)
    ang = 2.0 * np.pi * np.arange(segments) / segments
    around = np.cos(ang)[:, None] * e1 + np.sin(ang)[:, None] * e2  # (S, 3)
    lat = np.linspace(-0.5 * np.pi, 0.5 * np.pi, 2 * rings + 1)[1:-1]
    ring_pts = []
    for k, phi in enumerate(lat):
        centre = (pa if k < rings else pb) + u * radius * np.sin(phi)
        ring_pts.append(centre + radius * np.cos(phi) * around)
        if k == rings - 1:  # the equator twice: once at a, once at b (the cylinder between)
            ring_pts.append(pb + radius * around)
    n_rings = len(ring_pts)
    verts = np.concatenate(ring_pts + [(pa - radius * u)[None], (pb + radius * u)[None]])
    south, north = n_rings * segments, n_rings * segments + 1
    s_next = (np.arange(segments) + 1) % segments
    s_cur = np.arange(segments)
    tris = []
    for r in range(n_rings - 1):
        lo, hi = r * segments, (r + 1) * segments
        tris.append(np.stack([lo + s_cur, lo + s_next, hi + s_next], axis=1))
        tris.append(np.stack([lo + s_cur, hi + s_next, hi + s_cur], axis=1))
    tris.append(np.stack([np.full(segments, south), s_next, s_cur], axis=1))
    top = (n_rings - 1) * segments
    tris.append(np.stack([np.full(segments, north), top + s_cur, top + s_next], axis=1))
    return verts, np.concatenate(tris).astype(np.int64)


def mannequin_mesh(height: float = 1.75) -> tuple[F, Ix]:
    """A standing mannequin (Y up, facing +z, feet at y = 0) as one triangle mesh: the capsules
    and head sphere of :class:`pbdcloth.body.Body` meshed and merged. The parts overlap;
    OpenVDB's mesh-to-level-set fills each closed part, so the level set is their union."""
    from ..colliders.shapes import Capsule, Sphere
    from .body import Body

    parts = []
    for collider in Body(height).colliders:
        if isinstance(collider, Capsule):
            parts.append(capsule_mesh(collider.a, collider.b, collider.radius))
        elif isinstance(collider, Sphere):
            parts.append(capsule_mesh(collider.center, collider.center, collider.radius))
    return merge_meshes(parts)


def cache_dir() -> Path:
    """Folder for cached level sets: ``$PBDCLOTH_CACHE``, else ``~/.cache/pbdcloth``."""
    env = os.environ.get("PBDCLOTH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "pbdcloth"


def cached_level_set(name: str, vertices: F, faces: Ix, voxel_size: float,
                     half_width: float = 3.0, folder: str | os.PathLike[str] | None = None,
                     ) -> tuple[SdfCollider, Path, bool]:
    """An SdfCollider of a closed mesh, read from the cache or built with OpenVDB and cached.

    Returns the collider, the ``.vdb`` path and whether it was built now (False: read from the
    cache). The file is written atomically, so an interrupted run never leaves a broken cache.
    """
    from ..colliders.vdb_io import level_set_from_mesh, write_level_set

    digest = hashlib.sha256()
    for arr in (np.ascontiguousarray(vertices, dtype=np.float64),
                np.ascontiguousarray(faces, dtype=np.int64),
                np.array([voxel_size, half_width], dtype=np.float64)):
        digest.update(arr.tobytes())
    path = Path(folder) if folder is not None else cache_dir()
    path = path / f"{name}-{digest.hexdigest()[:12]}.vdb"
    built = not path.is_file()
    if built:
        grid = level_set_from_mesh(vertices, faces, voxel_size, half_width)
        grid.name = name
        write_level_set(path, grid)
    return SdfCollider.from_vdb(path, name), path, built
