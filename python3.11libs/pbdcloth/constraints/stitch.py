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

A sewn stitch with a compliance alpha > 0 (:mod:`pbdcloth.cloth.stitches`) is projected as an
XPBD distance constraint at its rest length instead (Macklin et al. 2016, eq. 18):
with alpha~ = alpha / h^2 and the substep's multiplier lambda (0 at each substep's start),

    dlambda = (-C - alpha~ lambda) / (w_i + w_j + alpha~),   dx_i = w_i n dlambda,
    dx_j = -w_j n dlambda,

so a stitch holding a steady force f stretches by alpha f (Hooke's law), whatever the substep
count; the triangle form takes the weighted sum of its gradients' squared lengths. When a
family has compliant stitches, its hard ones (and those still closing) take the same update
with alpha~ = 0, which is the hard step above.

Usage (positions component-major (3, N), C-contiguous; corrected in place)::

    colors = distance_colors(model.stitches, n)     # once per model
    project_stitches(P, X, colors, v * h)
    tri = triangle_stitch_colors(model.triangle_stitches, n)
    project_triangle_stitches(P, X, tri, v * h)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..arrays import F, I
from .batches import CHUNK, chunk_slices, flat_gather, flat_positions
from .distance import MIN_LENGTH, DistanceColor


def _compliant_step(length: F, target: F, compliance: F, lam: F, wsum: F,
                    inv_h2: float) -> F:
    """dlambda = (-C - alpha~ lambda) / (wsum + alpha~) with C = length - target and
    alpha~ = compliance / h^2 (0 where nothing can move); ``lam`` is updated in place."""
    alpha = compliance * inv_h2
    den = wsum + alpha
    ok = den > 0.0
    dlam = np.where(ok, (-(length - target) - alpha * lam) / np.where(ok, den, 1.0), 0.0)
    lam += dlam
    return dlam


def _targets(rest: F, start_length: F, closing: float, compliance: F | None) -> F:
    """max(rest, |d| at the substep start - closing); ``rest`` where a stitch is compliant
    (sewn: it holds as a spring at its rest length)."""
    target = np.maximum(rest, start_length - closing)
    return target if compliance is None else np.where(compliance > 0.0, rest, target)


def project_stitches(positions: F, prev_positions: F, colors: Sequence[DistanceColor],
                     closing: float, lam: F | None = None, inv_h2: float = 0.0) -> None:
    """Project the stitch ``colors`` in order, in place, toward max(rest, |x_i - x_j| - closing)
    (sewn compliant stitches: toward rest, with XPBD compliance).

    ``positions`` (3, N) [m]; ``prev_positions`` (3, N): the substep's start [m];
    ``closing`` = v h, the most a stitch shortens in this substep [m]; ``lam`` the family's
    multipliers and ``inv_h2`` = 1 / h^2, for colors with a ``compliance``.
    """
    R = flat_positions(positions)
    R_prev = flat_positions(prev_positions)
    for c in colors:
        m = c.count
        x0 = R_prev.take(c.gather, mode="clip").reshape(2, 3, m)
        d0 = x0[0] - x0[1]
        target = _targets(c.rest, np.sqrt(np.einsum("ij,ij->j", d0, d0)), closing, c.compliance)
        x = R.take(c.gather, mode="clip").reshape(2, 3, m)
        d = x[0] - x[1]
        length = np.sqrt(np.einsum("ij,ij->j", d, d))
        if c.compliance is None:
            s = (length - target) / np.maximum(length, MIN_LENGTH)
            x -= c.frac * (d * s)
        else:
            assert lam is not None
            dlam = _compliant_step(length, target, c.compliance, lam[c.span], c.wsum, inv_h2)
            x += c.w * (d * (dlam / np.maximum(length, MIN_LENGTH)))
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
    @property
    def compliance(self) -> F | None: ...
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
        span: the batch's slice of the family's arrays (and of its multipliers).
        compliance: compliance [m/N] of each stitch (0: hard or closing), or None (all hard).
    """

    gather: I
    count: int
    coef: F
    w: F
    wsum: F
    rest: F
    span: slice = field(default_factory=lambda: slice(0, 0))
    compliance: F | None = None


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
                wsum=(coef * coef * w).sum(axis=0), rest=family.rest[s], span=s,
                compliance=None if family.compliance is None else family.compliance[s]))
    return out


def project_triangle_stitches(positions: F, prev_positions: F,
                              colors: Sequence[TriangleStitchColor], closing: float,
                              lam: F | None = None, inv_h2: float = 0.0) -> None:
    """Project the point-to-triangle stitch ``colors`` in order, in place, toward
    max(rest, |x_p - q| - closing) (``prev_positions``: the substep's start) [m]; sewn
    compliant stitches toward rest with XPBD (``lam``: multipliers, ``inv_h2`` = 1 / h^2)."""
    R = flat_positions(positions)
    R_prev = flat_positions(prev_positions)
    for c in colors:
        m = c.count
        x0 = R_prev.take(c.gather, mode="clip").reshape(4, 3, m)
        d0 = (c.coef * x0).sum(axis=0)
        target = _targets(c.rest, np.sqrt(np.einsum("ij,ij->j", d0, d0)), closing, c.compliance)
        x = R.take(c.gather, mode="clip").reshape(4, 3, m)
        d = (c.coef * x).sum(axis=0)                    # x_p - q
        length = np.sqrt(np.einsum("ij,ij->j", d, d))
        if c.compliance is not None:
            assert lam is not None
            dlam = _compliant_step(length, target, c.compliance, lam[c.span], c.wsum, inv_h2)
            x += (c.w * c.coef) * (d * (dlam / np.maximum(length, MIN_LENGTH)))
            R[c.gather] = x.reshape(-1)
            continue
        ok = c.wsum > 0.0
        step = np.where(ok, (length - target) / np.maximum(length, MIN_LENGTH)
                        / np.where(ok, c.wsum, 1.0), 0.0)     # s / |d|
        x -= (c.w * c.coef) * (d * step)
        R[c.gather] = x.reshape(-1)


__all__ = ["TriangleStitchColor", "project_stitches", "project_triangle_stitches",
           "triangle_stitch_colors"]
