"""Stitches and welds: constraints between given pairs of points of a cloth.

A stitch joins point i to point j at a rest length (0: sewn shut, a weld), the way Marvelous
Designer sews flat panels into a garment and Vellum's stitch and weld constraints join pieces.
The solver projects them as hard distance constraints, colored like the mesh's families
(:mod:`pbdcloth.constraints.stitch`); a stitch whose points start farther apart than its rest
length closes at :attr:`Stitches.speed` at most.

Accepted forms (``ClothSolver(..., stitches=...)``):

* a :class:`Stitches`;
* a (K, 2) array of point pairs (rest length 0);
* a (K, 3) array of rows (i, j, rest);
* a tuple ``(i, j)`` or ``(i, j, rest)`` of (K,) arrays (``rest`` may be one number).

A :class:`TriangleStitches` (``ClothSolver(..., triangle_stitches=...)``) sews points onto
points inside triangles of the cloth instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..arrays import I64, F, real_array
from .mesh import MeshError

#: Default closing speed of a stitch that starts apart [m/s].
DEFAULT_STITCH_SPEED = 1.0
#: Fastest closing speed accepted [m/s].
MAX_STITCH_SPEED = 1e3


class StitchError(MeshError):
    """Stitches that cannot be used: bad shape, indices outside the mesh, a point stitched to
    itself, a negative or non-finite rest length, a bad closing speed."""


@dataclass(frozen=True)
class Stitches:
    """Stitch constraints before validation.

    Attributes:
        pairs: (K, 2) point indices.
        rest: (K,) rest lengths [m] (0 sews the points together).
        speed: the fastest a stitch shortens toward its rest length [m/s], so that panels laid
            out apart are pulled in over a few frames instead of in one substep.
    """

    pairs: ArrayLike
    rest: ArrayLike = 0.0
    speed: float = DEFAULT_STITCH_SPEED


def _indices(value: object, what: str) -> I64:
    arr = real_array(value, what, StitchError)
    if arr.size and (arr != np.round(arr)).any():
        raise StitchError(f"{what} must be whole point indices, got {arr.reshape(-1)[:8]}")
    return arr.astype(np.int64)


def validate_stitches(stitches: object, particle_count: int) -> tuple[I64, F, float]:
    """(pairs (K, 2), rest (K,) [m], closing speed [m/s]), or a :class:`StitchError`."""
    if stitches is None:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0), DEFAULT_STITCH_SPEED
    speed = DEFAULT_STITCH_SPEED
    rest: object = 0.0
    if isinstance(stitches, Stitches):
        pairs = _indices(stitches.pairs, "stitch pairs")
        rest, speed = stitches.rest, stitches.speed
    elif isinstance(stitches, tuple) and len(stitches) in (2, 3) and all(
            np.ndim(part) == 1 for part in stitches[:2]):
        i, j = (_indices(part, "stitch indices") for part in stitches[:2])
        if i.shape != j.shape:
            raise StitchError(f"stitch index arrays i and j must have the same length, got "
                              f"{i.shape[0]} and {j.shape[0]}")
        pairs = np.stack([i, j], axis=1)
        rest = stitches[2] if len(stitches) == 3 else 0.0
    else:
        rows = real_array(stitches, "stitches", StitchError)
        if rows.ndim != 2 or rows.shape[1] not in (2, 3):
            raise StitchError(f"stitches must be (K, 2) point pairs or (K, 3) rows (i, j, "
                              f"rest), got shape {rows.shape}")
        pairs = _indices(rows[:, :2], "stitch pairs")
        rest = rows[:, 2] if rows.shape[1] == 3 else 0.0
    pairs = pairs.reshape(-1, 2) if pairs.size else np.zeros((0, 2), dtype=np.int64)
    k = pairs.shape[0]
    rest_arr = real_array(rest, "stitch rest lengths", StitchError)
    if rest_arr.ndim == 0:
        rest_arr = np.full(k, float(rest_arr))
    if rest_arr.shape != (k,):
        raise StitchError(f"stitch rest lengths must have one value per stitch ({k},), got "
                          f"shape {rest_arr.shape}")
    outside = np.flatnonzero(((pairs < 0) | (pairs >= particle_count)).any(axis=1))
    if outside.size:
        s = int(outside[0])
        raise StitchError(f"stitch {s} joins points {pairs[s].tolist()}, outside "
                          f"[0, {particle_count - 1}] ({outside.size} bad stitch(es))")
    same = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    if same.size:
        raise StitchError(f"stitch {int(same[0])} joins point {int(pairs[same[0], 0])} to "
                          f"itself ({same.size} such stitch(es))")
    negative = np.flatnonzero(rest_arr < 0.0)
    if negative.size:
        raise StitchError(f"stitch rest lengths must be >= 0; stitch {int(negative[0])} has "
                          f"{rest_arr[negative[0]]!r}")
    if isinstance(speed, bool) or not isinstance(speed, (int, float, np.floating)) \
            or not 0.0 < float(speed) <= MAX_STITCH_SPEED:
        raise StitchError(f"stitch closing speed must be a number in (0, {MAX_STITCH_SPEED:g}] "
                          f"m/s, got {speed!r}")
    return pairs, rest_arr, float(speed)


__all__ = ["DEFAULT_STITCH_SPEED", "StitchError", "Stitches", "validate_stitches"]


@dataclass(frozen=True)
class TriangleStitches:
    """Stitches from points to points inside triangles of the cloth, before validation.

    Point p is held at ``rest`` from q = u x_a + v x_b + w x_c, the point of triangle
    (a, b, c) at barycentric coordinates (u, v, w) (0: sewn onto the triangle).

    Attributes:
        points: (K,) point indices.
        triangles: (K, 3) point indices (a, b, c) of the triangle each point is sewn to.
        barycentric: (K, 3) weights (u, v, w) >= 0 summing to 1.
        rest: (K,) rest lengths [m], or one number.
        speed: the fastest a stitch shortens toward its rest length [m/s].
    """

    points: ArrayLike
    triangles: ArrayLike
    barycentric: ArrayLike
    rest: ArrayLike = 0.0
    speed: float = DEFAULT_STITCH_SPEED


#: How far barycentric weights may be from summing to 1.
BARYCENTRIC_TOLERANCE = 1e-9


def validate_triangle_stitches(stitches: object, particle_count: int
                               ) -> tuple[I64, F, F, float]:
    """(members (K, 4): point, a, b, c; barycentric (K, 3); rest (K,) [m]; speed [m/s]), or a
    :class:`StitchError`."""
    if stitches is None:
        return np.zeros((0, 4), dtype=np.int64), np.zeros((0, 3)), np.zeros(0), \
            DEFAULT_STITCH_SPEED
    if not isinstance(stitches, TriangleStitches):
        raise StitchError(f"triangle stitches must be a TriangleStitches, got "
                          f"{type(stitches).__name__}")
    points = _indices(stitches.points, "triangle stitch points").reshape(-1)
    tris = _indices(stitches.triangles, "triangle stitch triangles")
    bary = real_array(stitches.barycentric, "triangle stitch barycentric weights", StitchError)
    k = points.shape[0]
    if tris.shape != (k, 3) or bary.shape != (k, 3):
        raise StitchError(f"triangle stitches need ({k}, 3) triangles and barycentric weights "
                          f"for {k} points, got {tris.shape} and {bary.shape}")
    members = np.concatenate([points[:, None], tris], axis=1)
    pairs, rest, speed = validate_stitches(Stitches(members[:, :2], stitches.rest,
                                                    stitches.speed), particle_count)
    outside = np.flatnonzero(((members < 0) | (members >= particle_count)).any(axis=1))
    if outside.size:
        s = int(outside[0])
        raise StitchError(f"triangle stitch {s} uses points {members[s].tolist()}, outside "
                          f"[0, {particle_count - 1}]")
    repeated = np.flatnonzero(np.array([len(set(m)) < 4 for m in members.tolist()], dtype=bool))
    if repeated.size:
        s = int(repeated[0])
        raise StitchError(f"triangle stitch {s} sews point {int(points[s])} to a triangle "
                          f"{tris[s].tolist()} that has it as a corner (or repeats a corner)")
    bad = np.flatnonzero((bary < 0.0).any(axis=1)
                         | (np.abs(bary.sum(axis=1) - 1.0) > BARYCENTRIC_TOLERANCE))
    if bad.size:
        s = int(bad[0])
        raise StitchError(f"triangle stitch {s} has barycentric weights {bary[s].tolist()}; "
                          "they must be >= 0 and sum to 1")
    return members, bary, rest, speed


__all__ += ["TriangleStitches", "validate_triangle_stitches"]
