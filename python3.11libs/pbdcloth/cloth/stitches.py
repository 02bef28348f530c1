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

A stitch is *sewn* once a frame ends with its points within :data:`SEWN_GAP` of its rest
length (at once for stitches given closed). A sewn stitch with a ``compliance`` [m/N] above 0
holds like a spring, XPBD (Macklin et al. 2016) at its rest length: it stretches by
``compliance x force`` under load, as Vellum's stitch stiffness; at compliance 0 (the default)
it stays hard. A sewn stitch with a ``break_length`` [m] is removed at the end of the first
frame that leaves its points farther apart than that (:mod:`pbdcloth.cloth.tear`), the way
Vellum's stitches break past their threshold; ``inf`` (the default) never breaks. A stitch
still closing from a layout gap neither stretches nor breaks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..arrays import I64, B, F, real_array
from .mesh import MeshError

#: Default closing speed of a stitch that starts apart [m/s].
DEFAULT_STITCH_SPEED = 1.0
#: Fastest closing speed accepted [m/s].
MAX_STITCH_SPEED = 1e3
#: A stitch within this of its rest length at a frame end is sewn [m].
SEWN_GAP = 1e-4
#: Largest stitch compliance accepted [m/N] (as the settings' distance compliances).
MAX_STITCH_COMPLIANCE = 1e3


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
        break_length: (K,) lengths [m] past which each stitch breaks (at a frame end), or one
            number; ``inf`` never breaks.
        compliance: (K,) compliances [m/N] of the sewn stitches, or one number; 0 is hard.
    """

    pairs: ArrayLike
    rest: ArrayLike = 0.0
    speed: float = DEFAULT_STITCH_SPEED
    break_length: ArrayLike = np.inf
    compliance: ArrayLike = 0.0


class _StitchRows:
    """What both stitch lists share: break lengths, compliances, sewn flags, and the frame-end
    measures on them (each list says where its two ends are, :meth:`ends`)."""

    rest: F
    break_length: F
    compliance: F
    sewn: B

    def ends(self, positions: F) -> tuple[F, F]:
        raise NotImplementedError

    @property
    def breakable(self) -> bool:
        """True when some stitch has a finite break length."""
        return bool(np.isfinite(self.break_length).any())

    @property
    def watched(self) -> bool:
        """True when frame ends must measure the stitches: one can break or is compliant and
        not sewn yet."""
        return self.breakable or bool((~self.sewn & (self.compliance > 0.0)).any())

    def take(self: _Rows, rows: I64) -> _Rows:
        """The stitches at ``rows`` (of this list), in that order: every per-stitch array
        field taken at ``rows``."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]
        picked = {k: v[rows] for k, v in values.items() if isinstance(v, np.ndarray)}
        return replace(self, **picked)  # type: ignore[type-var]  # subclasses are dataclasses

    def sew(self: _Rows, positions: F) -> _Rows:
        """The list with every stitch within :data:`SEWN_GAP` of its rest length at
        ``positions`` marked sewn (once sewn, always sewn)."""
        a, b = self.ends(positions)
        sewn = self.sewn | (np.sqrt(((a - b) ** 2).sum(axis=1)) <= self.rest + SEWN_GAP)
        return replace(self, sewn=sewn)  # type: ignore[type-var]  # subclasses are dataclasses


_Rows = TypeVar("_Rows", bound=_StitchRows)


@dataclass(frozen=True)
class StitchList(_StitchRows):
    """Validated point-pair stitches in the order given (the ones still holding).

    Attributes:
        pairs: (K, 2) point indices.
        rest: (K,) rest lengths [m].
        break_length: (K,) lengths [m] past which each breaks (``inf``: never).
        index: (K,) each stitch's row in the list as first given (breaking removes rows).
        speed: the fastest a stitch closes toward its rest length [m/s].
        compliance: (K,) compliance of each stitch once sewn [m/N].
        sewn: (K,) whether each stitch is sewn (see the module docstring).
    """

    pairs: I64
    rest: F
    break_length: F
    index: I64
    speed: float = DEFAULT_STITCH_SPEED
    compliance: F = field(default_factory=lambda: np.zeros(0))
    sewn: B = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def count(self) -> int:
        return int(self.pairs.shape[0])

    def ends(self, positions: F) -> tuple[F, F]:
        """The two ends of each stitch at ``positions`` (N, 3), each (K, 3)."""
        return positions[self.pairs[:, 0]], positions[self.pairs[:, 1]]


def _indices(value: object, what: str) -> I64:
    arr = real_array(value, what, StitchError)
    if arr.size and (arr != np.round(arr)).any():
        raise StitchError(f"{what} must be whole point indices, got {arr.reshape(-1)[:8]}")
    return arr.astype(np.int64)


def _per_stitch(value: object, what: str, k: int, finite: bool = True) -> F:
    """(K,) float64 values from one number or one per stitch, or a :class:`StitchError`
    naming ``what``."""
    arr = real_array(value, what, StitchError, finite=finite)
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    if arr.shape != (k,):
        raise StitchError(f"{what} must be one number or one per stitch ({k},), got shape "
                          f"{arr.shape}")
    return arr


def _break_lengths(value: object, k: int) -> F:
    """(K,) break lengths [m] from one number or one per stitch: > 0, ``inf`` allowed."""
    arr = _per_stitch(value, "stitch break lengths", k, finite=False)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(np.isnan(arr) | ~(arr > 0.0))
    if bad.size:
        raise StitchError(f"stitch break lengths must be > 0 m (inf: never breaks); stitch "
                          f"{int(bad[0])} has {arr[bad[0]]!r}")
    return arr


def _compliances(value: object, k: int) -> F:
    """(K,) stitch compliances [m/N] from one number or one per stitch."""
    arr = _per_stitch(value, "stitch compliances", k)
    bad = np.flatnonzero((arr < 0.0) | (arr > MAX_STITCH_COMPLIANCE))
    if bad.size:
        raise StitchError(f"stitch compliances must be within [0, {MAX_STITCH_COMPLIANCE:g}] "
                          f"m/N; stitch {int(bad[0])} has {arr[bad[0]]!r}")
    return arr


def no_stitches() -> StitchList:
    """An empty :class:`StitchList`."""
    return StitchList(np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(0),
                      np.zeros(0, dtype=np.int64))


def validate_stitches(stitches: object, particle_count: int) -> StitchList:
    """The stitches as a :class:`StitchList`, or a :class:`StitchError` naming the problem."""
    if stitches is None:
        return no_stitches()
    speed = DEFAULT_STITCH_SPEED
    rest: object = 0.0
    break_length: object = np.inf
    compliance: object = 0.0
    if isinstance(stitches, Stitches):
        pairs = _indices(stitches.pairs, "stitch pairs")
        rest, speed = stitches.rest, stitches.speed
        break_length, compliance = stitches.break_length, stitches.compliance
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
    rest_arr = _per_stitch(rest, "stitch rest lengths", k)
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
    breaks = _break_lengths(break_length, k)
    short = np.flatnonzero(breaks <= rest_arr + SEWN_GAP)
    if short.size:
        s = int(short[0])
        raise StitchError(f"stitch {s} would break at {breaks[s]!r} m, not beyond its rest "
                          f"length {rest_arr[s]!r} m plus {SEWN_GAP:g} m")
    return StitchList(pairs, rest_arr.astype(np.float64), breaks, np.arange(k, dtype=np.int64),
                      float(speed), _compliances(compliance, k), np.zeros(k, dtype=bool))


__all__ = ["DEFAULT_STITCH_SPEED", "MAX_STITCH_COMPLIANCE", "SEWN_GAP", "StitchError",
           "StitchList", "Stitches", "no_stitches", "validate_stitches"]


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
        break_length: (K,) lengths [m] past which each stitch breaks, or one number; ``inf``
            never breaks.
        compliance: (K,) compliances [m/N] of the sewn stitches, or one number; 0 is hard.
    """

    points: ArrayLike
    triangles: ArrayLike
    barycentric: ArrayLike
    rest: ArrayLike = 0.0
    speed: float = DEFAULT_STITCH_SPEED
    break_length: ArrayLike = np.inf
    compliance: ArrayLike = 0.0


@dataclass(frozen=True)
class TriangleStitchList(_StitchRows):
    """Validated point-to-triangle stitches in the order given (the ones still holding).

    Attributes:
        members: (K, 4) point, a, b, c.
        barycentric: (K, 3) weights of a, b, c.
        rest: (K,) rest lengths [m].
        break_length: (K,) lengths [m] past which each breaks (``inf``: never).
        index: (K,) each stitch's row in the list as first given.
        speed: the fastest a stitch closes toward its rest length [m/s].
        compliance: (K,) compliance of each stitch once sewn [m/N].
        sewn: (K,) whether each stitch is sewn.
    """

    members: I64
    barycentric: F
    rest: F
    break_length: F
    index: I64
    speed: float = DEFAULT_STITCH_SPEED
    compliance: F = field(default_factory=lambda: np.zeros(0))
    sewn: B = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def count(self) -> int:
        return int(self.members.shape[0])

    def with_members(self, members: I64) -> TriangleStitchList:
        """The same stitches on other particles (a torn cloth's copies of the corners)."""
        return replace(self, members=members)

    def ends(self, positions: F) -> tuple[F, F]:
        """Each stitch's point and its barycentric point of the triangle, each (K, 3)."""
        corners = positions[self.members[:, 1:]]
        return positions[self.members[:, 0]], (corners * self.barycentric[:, :, None]).sum(1)


def no_triangle_stitches() -> TriangleStitchList:
    """An empty :class:`TriangleStitchList`."""
    return TriangleStitchList(np.zeros((0, 4), dtype=np.int64), np.zeros((0, 3)), np.zeros(0),
                              np.zeros(0), np.zeros(0, dtype=np.int64))


#: How far barycentric weights may be from summing to 1.
BARYCENTRIC_TOLERANCE = 1e-9


def validate_triangle_stitches(stitches: object, particle_count: int) -> TriangleStitchList:
    """The stitches as a :class:`TriangleStitchList`, or a :class:`StitchError`."""
    if stitches is None:
        return no_triangle_stitches()
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
    pair_list = validate_stitches(Stitches(members[:, :2], stitches.rest, stitches.speed,
                                           stitches.break_length, stitches.compliance),
                                  particle_count)
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
    return TriangleStitchList(members, bary.astype(np.float64), pair_list.rest,
                              pair_list.break_length, pair_list.index, pair_list.speed,
                              pair_list.compliance, pair_list.sewn)


__all__ += ["TriangleStitchList", "TriangleStitches", "no_triangle_stitches",
            "validate_triangle_stitches"]
