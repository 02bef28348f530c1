"""Built-in scenes for the demo, the benchmarks and the tests.

A scene is a recipe: a mesh, pins, settings, colliders and a frame count, built fresh on each call
so that runs never share state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numpy.typing import NDArray

from .colliders import Collider, Plane, Sphere
from .settings import ClothSettings
from .solver import ClothSolver


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


@dataclass
class Scene:
    """A ready-to-run simulation recipe."""

    name: str
    description: str
    positions: NDArray[np.float64]
    triangles: NDArray[np.int64]
    pinned: NDArray[np.int64]
    settings: ClothSettings
    colliders: list[Collider]
    frames: int
    fps: float = 24.0
    animate: Callable[[ClothSolver, int], None] | None = None
    """Called before each frame with the solver and the frame number (1-based)."""
    info: dict[str, float] = field(default_factory=dict)

    def make_solver(self) -> ClothSolver:
        return ClothSolver(self.positions, self.triangles, pinned=self.pinned,
                           settings=self.settings, colliders=self.colliders)


def drape_scene(resolution: int = 50, settings: ClothSettings | None = None,
                frames: int = 72) -> Scene:
    """The demo: a 1.5 m square cloth pinned at two corners, falling onto a sphere and the ground.

    ``resolution`` points per side (50 gives 2,500 particles).
    """
    size = 1.5
    pos, tris = grid(resolution, resolution, size, size, plane="xz",
                     origin=(-size / 2, 1.2, -size / 2))
    pinned = np.array([0, resolution - 1], dtype=np.int64)
    s = settings or ClothSettings(substeps=20, iterations=2, bend_stiffness=0.05, thickness=0.01,
                                  friction=0.3, damping=0.1)
    colliders: list[Collider] = [Plane((0, 0, 0), (0, 1, 0)), Sphere((0.0, 0.6, 0.15), 0.35)]
    return Scene("drape", description=drape_scene.__doc__ or "", positions=pos, triangles=tris,
                 pinned=pinned, settings=s, colliders=colliders, frames=frames)


def hanging_scene(nx: int = 20, ny: int = 20, size: float = 1.0,
                  settings: ClothSettings | None = None, frames: int = 48) -> Scene:
    """A vertical sheet hanging from its top two corners under gravity."""
    pos, tris = grid(nx, ny, size, size * (ny - 1) / max(nx - 1, 1), plane="xy",
                     origin=(0.0, 1.0, 0.0))
    return Scene("hanging", description="A sheet hanging from its top corners.", positions=pos,
                 triangles=tris, pinned=np.array([0, nx - 1], dtype=np.int64),
                 settings=settings or ClothSettings(), colliders=[], frames=frames)


def prop_scene(resolution: int = 40, settings: ClothSettings | None = None,
               frames: int = 48, voxel_size: float = 0.01) -> Scene:
    """A 1.4 m square cloth dropped over a mannequin: an OpenVDB level set collider.

    The mannequin (the capsules of :class:`pbdcloth.body.Body`, meshed; see
    :func:`pbdcloth.props.mannequin_mesh`) is turned into a narrow-band level set by OpenVDB
    the first time and cached as a .vdb file (``$PBDCLOTH_CACHE`` or ~/.cache/pbdcloth); needs
    pyopenvdb. A ground plane catches the hem.
    """
    from .props import cached_level_set, mannequin_mesh

    size = 1.4
    pos, tris = grid(resolution, resolution, size, size, plane="xz",
                     origin=(-size / 2, 1.85, -size / 2 + 0.03))
    vertices, faces = mannequin_mesh(1.75)
    body, _, _ = cached_level_set("mannequin", vertices, faces, voxel_size)
    s = settings or ClothSettings(substeps=20, iterations=2, bend_stiffness=0.02,
                                  thickness=0.01, friction=0.4, static_friction=0.6,
                                  damping=0.3)
    colliders: list[Collider] = [Plane((0, 0, 0), (0, 1, 0)), body]
    return Scene("prop", description=prop_scene.__doc__ or "", positions=pos, triangles=tris,
                 pinned=np.zeros(0, dtype=np.int64), settings=s, colliders=colliders,
                 frames=frames, info={"voxel_size": voxel_size})


SCENES: dict[str, Callable[[], Scene]] = {
    "drape": drape_scene,
    "prop": prop_scene,
}
"""Scenes of ``pbdcloth demo --scene NAME``."""
