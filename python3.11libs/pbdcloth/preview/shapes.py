"""What a picture draws of a collider: its shape at one pose, as plain arrays (no matplotlib).

:func:`shapes_of` takes a snapshot of colliders at the end of the current frame (alpha = 1):

* :class:`Plane` -> :class:`GroundShape` (point, unit normal), drawn as a grid of lines;
* :class:`Sphere` -> :class:`SphereShape`, :class:`Capsule` -> :class:`CapsuleShape`, drawn as
  shaded surfaces;
* :class:`~pbdcloth.colliders.sdf.SdfCollider` -> :class:`SurfaceShape`, its zero level set as
  quads in world space at the collider's pose;
* :class:`~pbdcloth.colliders.mesh.MeshCollider` -> :class:`SurfaceShape`, its triangles at the
  end of the frame (each a quad with its last corner repeated).

The level set's surface is extracted once per field (cached) in the field's local frame by the
"cuberille" method: every pair of neighbouring voxels on opposite sides of zero (phi < 0 inside)
gets the square face between them, moved along its axis to the linearly interpolated zero
crossing, so the surface lies within half a (sampled) voxel of the true one. The field is
subsampled so that its longest side has at most :data:`SURFACE_CELLS` samples (a picture needs
no more). Every pose change is then a rigid transform of the cached vertices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np
from numpy.typing import NDArray

from ..arrays import F
from ..colliders.base import Collider
from ..colliders.mesh import MeshCollider
from ..colliders.sdf import SdfCollider
from ..colliders.sdf_grid import SdfGrid
from ..colliders.sdf_sequence import SdfSequence
from ..colliders.shapes import Capsule, Plane, Sphere

#: The longest side of a level set, in samples, when its surface is extracted for a picture.
SURFACE_CELLS = 96


@dataclass(frozen=True)
class GroundShape:
    """An infinite plane through ``point`` with unit ``normal`` [m]."""

    point: F
    normal: F


@dataclass(frozen=True)
class SphereShape:
    center: F
    radius: float


@dataclass(frozen=True)
class CapsuleShape:
    a: F
    b: F
    radius: float


@dataclass(frozen=True)
class SurfaceShape:
    """A closed surface in world space: ``vertices`` (V, 3) [m], ``quads`` (Q, 4) indices."""

    vertices: F
    quads: NDArray[np.int64]


Shape = GroundShape | SphereShape | CapsuleShape | SurfaceShape

_SURFACES: WeakKeyDictionary[SdfGrid, tuple[F, NDArray[np.int64]]] = WeakKeyDictionary()


def shapes_of(colliders: Sequence[Collider | Shape]) -> list[Shape]:
    """Snapshot of ``colliders`` at their current (end of frame) pose; shapes pass through.

    Raises:
        TypeError: a collider of a kind pictures cannot draw.
    """
    out: list[Shape] = []
    for c in colliders:
        if isinstance(c, (GroundShape, SphereShape, CapsuleShape, SurfaceShape)):
            out.append(c)
        elif isinstance(c, Plane):
            out.append(GroundShape(c.point.copy(), c.normal.copy()))
        elif isinstance(c, Sphere):
            out.append(SphereShape(c.center.copy(), float(c.radius)))
        elif isinstance(c, Capsule):
            out.append(CapsuleShape(c.a.copy(), c.b.copy(), float(c.radius)))
        elif isinstance(c, MeshCollider):
            t = c.triangles.astype(np.int64)
            out.append(SurfaceShape(np.array(c.vertices), np.concatenate([t, t[:, 2:]], axis=1)))
        elif isinstance(c, (SdfCollider, SdfSequence)):
            c = c.current if isinstance(c, SdfSequence) else c
            local, quads = level_set_surface(c.grid)
            out.append(SurfaceShape(c.pose(1.0).to_world(local), quads))
        else:
            raise TypeError(f"pictures cannot draw a {type(c).__name__} collider")
    return out


def level_set_surface(grid: SdfGrid, cells: int = SURFACE_CELLS
                      ) -> tuple[F, NDArray[np.int64]]:
    """Zero level set of ``grid`` as quads in its local frame (cuberille; see the module
    docstring): vertices (4 Q, 3) [m] and quads (Q, 4). Cached per grid."""
    hit = _SURFACES.get(grid)
    if hit is not None and cells == SURFACE_CELLS:
        return hit
    phi_all = np.asarray(grid.table[:, 0], dtype=np.float64).reshape(grid.shape)
    step = max(1, int(np.ceil(max(grid.shape) / cells)))
    phi = phi_all[::step, ::step, ::step]
    h = grid.voxel_size * step
    inside = phi < 0.0
    verts: list[F] = []
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        cross = inside[tuple(lo)] != inside[tuple(hi)]
        idx = np.argwhere(cross)
        if idx.size == 0:
            continue
        a = phi[tuple(lo)][cross]
        b = phi[tuple(hi)][cross]
        t = a / (a - b)
        centre = idx.astype(np.float64)
        centre[:, axis] += t
        u, v = [k for k in range(3) if k != axis]
        corners = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
        quad = np.repeat(centre[:, None, :], 4, axis=1)
        quad[:, :, u] += corners[:, 0]
        quad[:, :, v] += corners[:, 1]
        verts.append(quad.reshape(-1, 3))
    if not verts:
        result: tuple[F, NDArray[np.int64]] = (np.zeros((0, 3)), np.zeros((0, 4), np.int64))
    else:
        index = np.concatenate(verts)
        local = grid.origin + h * index
        result = (local, np.arange(local.shape[0], dtype=np.int64).reshape(-1, 4))
    if cells == SURFACE_CELLS:
        _SURFACES[grid] = result
    return result


def shape_bounds(shape: Shape) -> F | None:
    """Axis-aligned bounds (2, 3) [m] of a shape; None for the unbounded ground."""
    if isinstance(shape, SphereShape):
        return np.stack([shape.center - shape.radius, shape.center + shape.radius])
    if isinstance(shape, CapsuleShape):
        ends = np.stack([shape.a, shape.b])
        return np.stack([ends.min(axis=0) - shape.radius, ends.max(axis=0) + shape.radius])
    if isinstance(shape, SurfaceShape):
        if shape.vertices.size == 0:
            return None
        return np.stack([shape.vertices.min(axis=0), shape.vertices.max(axis=0)])
    return None
