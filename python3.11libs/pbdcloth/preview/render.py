"""Drawing one frame of a scene into a matplotlib 3D axes: cloth, colliders, pins.

:func:`render_frame` is the one renderer of the contact sheets, the movies and the wedge grids.
Opaque surfaces (the cloth's triangles, spheres, capsules and level-set surfaces) go into ONE
:class:`ScenePolygons` collection so that matplotlib depth-sorts their polygons together (separate
collections are sorted as wholes, which draws a cloth lying in front of a sphere behind it). The
ground is a grid of lines in its plane; pins are black dots.

Coordinates: the world is Y-up (Houdini); matplotlib's 3D axes are Z-up, so a world point
(x, y, z) is drawn at (x, -z, y), a rotation (no mirror). Views (``--view``): ``front`` looks
along -z (from +z), ``side`` along -x (from +x), ``top`` down along -y, or ``"AZ,EL"``:
matplotlib's azimuth and elevation in degrees of the drawn axes (the default, ``-60,20``, looks
from the front right and a little above).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arrays import F
from ..colliders.base import Collider
from ..portable import dot, norm
from .shapes import (
    CapsuleShape,
    GroundShape,
    Shape,
    SphereShape,
    SurfaceShape,
    shape_bounds,
    shapes_of,
)

#: Named views: (azimuth, elevation) in degrees of the drawn (x, -z, y) axes.
VIEWS: dict[str, tuple[float, float]] = {
    "front": (-90.0, 12.0),
    "side": (0.0, 12.0),
    "top": (-90.0, 89.9),
}
DEFAULT_VIEW = "-60,20"

CLOTH_RGB = (0.55, 0.65, 0.85)
COLLIDER_RGB = (0.78, 0.74, 0.70)
STRAIN_CMAP = "viridis"

_RING = 48  # segments round a sphere or capsule
_ROWS = 24  # rings from pole to pole


class ViewError(ValueError):
    """A ``--view`` that is neither a named view nor "AZIMUTH,ELEVATION"."""


def parse_view(view: str | tuple[float, float]) -> tuple[float, float]:
    """(azimuth, elevation) [degrees] of ``front``, ``side``, ``top`` or ``"AZ,EL"``."""
    if isinstance(view, tuple):
        return float(view[0]), float(view[1])
    text = view.strip().lower()
    if text in VIEWS:
        return VIEWS[text]
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        az, el = float(parts[0]), float(parts[1])
    except ValueError:
        raise ViewError(f"view must be one of {', '.join(VIEWS)} or AZIMUTH,ELEVATION in "
                        f"degrees (e.g. -60,20), got {view!r}") from None
    if not (np.isfinite(az) and np.isfinite(el) and -90.0 <= el <= 90.0):
        raise ViewError(f"view elevation must be in [-90, 90] degrees, got {view!r}")
    return az, el


def to_display(points: F) -> F:
    """World (x, y, z), Y up -> drawn (x, -z, y), Z up. Shape (..., 3)."""
    p = np.asarray(points, dtype=np.float64)
    return np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1)


def from_display(points: F) -> F:
    """Inverse of :func:`to_display`."""
    p = np.asarray(points, dtype=np.float64)
    return np.stack([p[..., 0], p[..., 2], -p[..., 1]], axis=-1)


def scene_bounds(positions: Sequence[F], shapes: Sequence[Sequence[Shape]] = ()) -> F:
    """Bounds (2, 3) [m] of the cloth over ``positions`` and of every bounded shape."""
    boxes = [np.stack([p.min(axis=0), p.max(axis=0)]) for p in positions if len(p)]
    boxes += [b for frame in shapes for s in frame if (b := shape_bounds(s)) is not None]
    if not boxes:
        return np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])
    stack = np.stack(boxes)
    return np.stack([stack[:, 0].min(axis=0), stack[:, 1].max(axis=0)])


def _grid_quads(points: F) -> F:
    """Quads (R-1, C, 4, 3) of a ring grid (R, C, 3), wrapping round the C direction."""
    nxt = np.roll(points, -1, axis=1)
    return np.stack([points[:-1], nxt[:-1], nxt[1:], points[1:]], axis=2)


def _basis(axis: F) -> tuple[F, F]:
    """Two unit vectors perpendicular to unit ``axis`` and to each other."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= norm(e1)
    return e1, np.cross(axis, e1)


def capsule_polygons(a: F, b: F, radius: float) -> F:
    """Quads (Q, 4, 3) of a capsule's surface (a sphere when a == b)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    d = b - a
    length = norm(d)
    axis = d / length if length > 1e-12 else np.array([0.0, 1.0, 0.0])
    e1, e2 = _basis(axis)
    half = _ROWS // 2
    # Rings: b's hemisphere, the cylinder cut into pieces about as long as a ring segment (so
    # that depth sorting sees polygons of similar size), a's hemisphere.
    pieces = int(np.clip(np.ceil(length / max(2.0 * np.pi * radius / _RING, 1e-12)), 1, 64))
    t = np.linspace(0.0, 1.0, pieces + 1)
    theta = np.concatenate([np.linspace(0.0, np.pi / 2, half + 1), np.full(pieces - 1, np.pi / 2),
                            np.linspace(np.pi / 2, np.pi, half + 1)])
    along = np.concatenate([np.zeros(half + 1), t[1:-1], np.ones(half + 1)])
    centre = b + along[:, None] * (a - b)
    phi = np.linspace(0.0, 2.0 * np.pi, _RING, endpoint=False)
    ring = np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2
    pts = (centre[:, None, :] + radius * np.cos(theta)[:, None, None] * axis
           + radius * np.sin(theta)[:, None, None] * ring[None, :, :])
    return _grid_quads(pts).reshape(-1, 4, 3)


def _shade(polys: Sequence[F], light: F) -> F:
    """Two-sided Lambert shading in [0.35, 1] of polygons (first three corners' normal)."""
    p0 = np.array([p[0] for p in polys])
    p1 = np.array([p[1] for p in polys])
    p2 = np.array([p[2] for p in polys])
    n = np.cross(p1 - p0, p2 - p0)
    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-30)[:, None]
    return 0.35 + 0.65 * np.abs(dot(n, light))


def _light(azim: float, elev: float) -> F:
    """Unit direction towards the viewer (drawn coordinates), raised a little."""
    az, el = np.radians(azim), np.radians(min(elev + 25.0, 89.0))
    v = np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
    return v / norm(v)


def _poly_class() -> type:
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    class ScenePolygons(Poly3DCollection):
        """Every opaque polygon of a frame in one collection (depth-sorted together).

        Attributes:
            world: the polygons in world coordinates, a list of (k, 3) arrays [m].
            parts: (label, start, stop): which polygons are what: ``"cloth"``,
                ``"collider 2 sphere"``, ``"collider 3 surface"``...
        """

        world: list[F]
        parts: list[tuple[str, int, int]]

    return ScenePolygons


def render_frame(
    ax: Any,
    positions: F,
    triangles: NDArray[np.int64],
    colliders: Sequence[Collider | Shape] = (),
    strain: F | None = None,
    vmax: float | None = None,
    pins: NDArray[np.int64] | None = None,
    view: str | tuple[float, float] = DEFAULT_VIEW,
    bounds: F | None = None,
    faces: Sequence[Sequence[int]] | None = None,
) -> Any:
    """Draw one frame into the 3D axes ``ax``; return its :class:`ScenePolygons`.

    Args:
        ax: a matplotlib ``Axes3D`` (``fig.add_subplot(..., projection="3d")``).
        positions: cloth points [m], (N, 3), world Y up.
        triangles: (T, 3) point indices (or give ``faces``: the polygons to draw instead).
        colliders: :class:`~pbdcloth.colliders.base.Collider` objects (drawn at their current
            pose) or :mod:`~pbdcloth.preview.shapes` snapshots.
        strain: per-point strain (fractions), (N,): the cloth is coloured by the mean over
            each polygon's corners on the ``viridis`` scale 0..``vmax``; None: one colour.
        vmax: top of the colour scale (fraction); default the largest ``strain``.
        pins: indices of pinned points, drawn as black dots (``gid="pins"``).
        view: see the module docstring.
        bounds: (2, 3) world box [m] the camera frames (a cube round its centre); default the
            cloth and the bounded colliders of this frame.
    """
    from matplotlib import colormaps
    from mpl_toolkits.mplot3d.art3d import Line3DCollection

    azim, elev = parse_view(view)
    shapes = shapes_of(colliders)
    if bounds is None:
        bounds = scene_bounds([positions], [shapes])
    centre = 0.5 * (bounds[0] + bounds[1])
    half = max(0.5 * float((bounds[1] - bounds[0]).max()) * 1.04, 1e-3)

    world: list[F] = []
    parts: list[tuple[str, int, int]] = []
    x = np.asarray(positions, dtype=np.float64)
    if faces is None:
        world.extend(x[np.asarray(triangles, dtype=np.int64)])
    else:
        world.extend(x[np.asarray(f, dtype=np.int64)] for f in faces)
    parts.append(("cloth", 0, len(world)))
    ground: list[tuple[int, GroundShape]] = []
    for k, shape in enumerate(shapes):
        start = len(world)
        if isinstance(shape, SphereShape):
            world.extend(capsule_polygons(shape.center, shape.center, shape.radius))
            parts.append((f"collider {k} sphere", start, len(world)))
        elif isinstance(shape, CapsuleShape):
            world.extend(capsule_polygons(shape.a, shape.b, shape.radius))
            parts.append((f"collider {k} capsule", start, len(world)))
        elif isinstance(shape, SurfaceShape):
            world.extend(shape.vertices[shape.quads])
            parts.append((f"collider {k} surface", start, len(world)))
        else:
            ground.append((k, shape))

    drawn = [to_display(p) for p in world]
    light = _light(azim, elev)
    shade = _shade(drawn, light) if drawn else np.zeros(0)
    colour = np.empty((len(drawn), 4))
    colour[:, 3] = 1.0
    n_cloth = parts[0][2]
    if strain is not None and n_cloth:
        s = np.asarray(strain, dtype=np.float64)
        top = float(vmax) if vmax is not None else float(s.max())
        if faces is None:
            per_face = s[np.asarray(triangles, dtype=np.int64)].mean(axis=1)
        else:
            per_face = np.array([s[np.asarray(f, dtype=np.int64)].mean() for f in faces])
        colour[:n_cloth] = colormaps[STRAIN_CMAP](np.clip(per_face / (top if top > 0 else 1.0),
                                                          0.0, 1.0))
    else:
        colour[:n_cloth, :3] = CLOTH_RGB
    colour[n_cloth:, :3] = COLLIDER_RGB
    colour[:, :3] *= shade[:, None]
    edges = np.zeros((len(drawn), 4))
    edges[:n_cloth, 3] = 0.08
    polys = _poly_class()(drawn, facecolors=colour, edgecolors=edges, linewidths=0.2)
    polys.world, polys.parts = world, parts
    polys.set_gid("scene")
    ax.add_collection3d(polys, autolim=False)  # limits are set below

    for k, g in ground:
        segments = _ground_lines(g, centre, half)
        lines = Line3DCollection(to_display(segments), colors=(0.45, 0.45, 0.45, 0.6),
                                 linewidths=0.5)
        lines.set_gid(f"collider {k} ground")
        lines.world = segments
        ax.add_collection3d(lines, autolim=False)
    if pins is not None and len(pins):
        p = x[np.asarray(pins, dtype=np.int64)]
        dots = ax.scatter(*to_display(p).T, color="black", s=6, depthshade=False)
        dots.set_gid("pins")
        dots.world = p

    c = to_display(centre)
    ax.set_xlim(c[0] - half, c[0] + half)
    ax.set_ylim(c[1] - half, c[1] + half)
    ax.set_zlim(c[2] - half, c[2] + half)
    ax.set_box_aspect((1.0, 1.0, 1.0))
    ax.view_init(elev=elev, azim=azim)
    ax.set_axis_off()
    return polys


def _ground_lines(ground: GroundShape, centre: F, half: float, lines: int = 11) -> F:
    """Segments (2 * lines, 2, 3) [m] of a square grid on the plane, 2 ``half`` wide, centred
    on ``centre``'s projection onto it."""
    n = ground.normal / norm(ground.normal)
    e1, e2 = _basis(n)
    base = centre - float(dot(centre - ground.point, n)) * n
    t = np.linspace(-half, half, lines)
    segs = []
    for u, v in ((e1, e2), (e2, e1)):
        start = base + t[:, None] * u - half * v
        end = base + t[:, None] * u + half * v
        segs.append(np.stack([start, end], axis=1))
    return np.concatenate(segs)


def add_strain_colorbar(fig: Any, rect: tuple[float, float, float, float], vmax: float) -> Any:
    """A colour bar in its own axes at ``rect`` (figure fractions): strain 0..``vmax``
    (fraction) shown in %, labelled ``max edge strain [%]``."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    mappable = ScalarMappable(norm=Normalize(0.0, 100.0 * max(vmax, 1e-12)), cmap=STRAIN_CMAP)
    bar = fig.colorbar(mappable, cax=fig.add_axes(rect))
    bar.set_label("max edge strain [%]", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    return bar


def point_max_strain(positions: F, triangles: NDArray[np.int64], rest: F) -> F:
    """Per-point strain, (N,): the largest stretch ``L / L0 - 1`` (0 when compressed) of the
    mesh edges at each point, L0 from ``rest``. Its maximum over the points is the frame's max
    edge strain, :meth:`pbdcloth.ClothSolver.max_strain`."""
    from ..cloth.topology import edge_use

    edges = edge_use(np.asarray(triangles, dtype=np.int64))[0]
    i, j = edges[:, 0], edges[:, 1]
    rest_len = np.linalg.norm(rest[i] - rest[j], axis=1)
    length = np.linalg.norm(positions[i] - positions[j], axis=1)
    s = np.maximum(length / np.where(rest_len > 0.0, rest_len, 1.0) - 1.0, 0.0)
    out = np.zeros(positions.shape[0])
    np.maximum.at(out, i, s)
    np.maximum.at(out, j, s)
    return out
