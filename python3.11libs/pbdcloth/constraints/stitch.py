"""Stitches and welds: hard distance constraints between point pairs that close at a speed.

A stitch (i, j) with rest length r (0: a weld, the points sewn together) is the distance
constraint of :mod:`.distance` with stiffness 1 (PBD k' = 1; XPBD with compliance 0 is the same
step), projected after the bend family, whatever the model. Panels laid out apart would snap
shut in one substep, so each substep's target length is

    r_h = max(r, |x_i - x_j| - v h)

with x the positions at the start of the substep, v the closing speed [m/s] and h the substep
[s]: the stitch shortens by at most v h per substep (the pair approaches at v at most), and
holds at r once closed. The correction is split by inverse mass, so linear and angular momentum
are conserved (Müller et al. 2006, eq. 10-11).

A point-to-triangle stitch holds point p at r from q = u x_a + v x_b + w x_c, the point of
triangle (a, b, c) at fixed barycentric coordinates (u, v, w). With d = x_p - q, n = d / |d|,
C = |d| - r_h and the gradients (n, -u n, -v n, -w n),

    s = C / (w_p + u^2 w_a + v^2 w_b + w^2 w_c),
    dx_p = -w_p s n,  dx_a = u w_a s n,  dx_b = v w_b s n,  dx_c = w w_c s n,

the PBD step at stiffness 1 (Müller et al. 2006, eq. 8); u + v + w = 1 makes the moves' mass
weighted sum zero, so momentum is conserved.

Usage (positions component-major (3, N), C-contiguous; corrected in place)::

    colors = distance_colors(model.stitches, n)     # once per model
    project_stitches(P, X, colors, v * h)
    tri = triangle_stitch_colors(model.triangle_stitches, n)
    project_triangle_stitches(P, X, tri, v * h)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..arrays import F, I
from .batches import CHUNK, chunk_slices, flat_gather, flat_positions
from .distance import MIN_LENGTH, DistanceColor


def project_stitches(positions: F, prev_positions: F, colors: Sequence[DistanceColor],
                     closing: float) -> None:
    """Project the stitch ``colors`` in order, in place, toward max(rest, |x_i - x_j| - closing).

    ``positions`` (3, N) [m]; ``prev_positions`` (3, N): the substep's start [m];
    ``closing`` = v h, the most a stitch shortens in this substep [m].
    """
    R = flat_positions(positions)
    R_prev = flat_positions(prev_positions)
    for c in colors:
        m = c.count
        x0 = R_prev.take(c.gather, mode="clip").reshape(2, 3, m)
        d0 = x0[0] - x0[1]
        target = np.maximum(c.rest, np.sqrt(np.einsum("ij,ij->j", d0, d0)) - closing)
        x = R.take(c.gather, mode="clip").reshape(2, 3, m)
        d = x[0] - x[1]
        length = np.sqrt(np.einsum("ij,ij->j", d, d))
        s = (length - target) / np.maximum(length, MIN_LENGTH)
        x -= c.frac * (d * s)
        R[c.gather] = x.reshape(-1)


class TriangleStitchConstraints(Protocol):
    """What :func:`triangle_stitch_colors` reads (a
    :class:`pbdcloth.cloth.model.TriangleStitchFamily`)."""

    @property
    def members(self) -> I: ...
    @property
    def barycentric(self) -> F: ...
    @property
    def rest(self) -> F: ...
    @property
    def w(self) -> F: ...
    def color_slices(self) -> list[slice]: ...


@dataclass(frozen=True, eq=False)
class TriangleStitchColor:
    """One batch of point-to-triangle stitches of one color.

    Attributes:
        gather: flat indices (12 m,): ``R.take(gather).reshape(4, 3, m)`` gives p, a, b, c.
        count: m.
        coef: (1, -u, -v, -w): each point's share of d = x_p - q, shape (4, 1, m).
        w: inverse masses of p, a, b, c [1/kg], shape (4, 1, m).
        wsum: w_p + u^2 w_a + v^2 w_b + w^2 w_c [1/kg], shape (m,).
        rest: rest length [m], shape (m,).
    """

    gather: I
    count: int
    coef: F
    w: F
    wsum: F
    rest: F


def triangle_stitch_colors(family: TriangleStitchConstraints, n: int, chunk: int = CHUNK
                           ) -> list[TriangleStitchColor]:
    """The family's colors as batches of at most ``chunk`` stitches, for ``n`` particles."""
    out = []
    for color in family.color_slices():
        for s in chunk_slices(color, chunk):
            bary = family.barycentric[s].T
            coef = np.concatenate([np.ones((1, bary.shape[1])), -bary])   # (4, m)
            w = np.ascontiguousarray(family.w[s].T)
            out.append(TriangleStitchColor(
                gather=flat_gather([family.members[s, k] for k in range(4)], n),
                count=s.stop - s.start, coef=coef[:, None, :], w=w[:, None, :],
                wsum=(coef * coef * w).sum(axis=0), rest=family.rest[s]))
    return out


def project_triangle_stitches(positions: F, prev_positions: F,
                              colors: Sequence[TriangleStitchColor], closing: float) -> None:
    """Project the point-to-triangle stitch ``colors`` in order, in place, toward
    max(rest, |x_p - q| - closing) (``prev_positions``: the substep's start) [m]."""
    R = flat_positions(positions)
    R_prev = flat_positions(prev_positions)
    for c in colors:
        m = c.count
        x0 = R_prev.take(c.gather, mode="clip").reshape(4, 3, m)
        d0 = (c.coef * x0).sum(axis=0)
        target = np.maximum(c.rest, np.sqrt(np.einsum("ij,ij->j", d0, d0)) - closing)
        x = R.take(c.gather, mode="clip").reshape(4, 3, m)
        d = (c.coef * x).sum(axis=0)                    # x_p - q
        length = np.sqrt(np.einsum("ij,ij->j", d, d))
        ok = c.wsum > 0.0
        step = np.where(ok, (length - target) / np.maximum(length, MIN_LENGTH)
                        / np.where(ok, c.wsum, 1.0), 0.0)     # s / |d|
        x -= (c.w * c.coef) * (d * step)
        R[c.gather] = x.reshape(-1)


__all__ = ["TriangleStitchColor", "project_stitches", "project_triangle_stitches",
           "triangle_stitch_colors"]
