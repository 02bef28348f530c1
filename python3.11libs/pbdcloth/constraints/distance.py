"""Distance constraints (stretch, shear), batched by color: Müller et al. 2006, eq. (10)-(11).

For particles i, j with inverse masses w_i, w_j and rest length d0,

    C = |x_i - x_j| - d0,     n = (x_i - x_j) / |x_i - x_j|,
    dx_i = -w_i / (w_i + w_j) * s * n,   dx_j = +w_j / (w_i + w_j) * s * n,

with the step s = k' C for PBD (stiffness k' in [0, 1]) and, for XPBD (Macklin, Müller and
Chentanez 2016, eq. 18 and 26), the Lagrange multiplier update

    dlambda = (-C - alpha~ lambda - gamma n . ((x_i - x_i,prev) - (x_j - x_j,prev)))
              / ((1 + gamma)(w_i + w_j) + alpha~),
    dx_i = +w_i dlambda n,    dx_j = -w_j dlambda n,
    alpha~ = alpha / h^2,  gamma = alpha~ beta h,

where alpha is the compliance [m/N], beta the constraint damping [s] and h the substep [s]. Both
conserve linear and angular momentum (corrections along n, weighted by inverse mass).

A per-constraint stiffness scale s (:mod:`pbdcloth.cloth.attributes`) makes the PBD step
min(1, s k') C and the XPBD update (-s C - alpha~ lambda - gamma ...) / ((s + gamma)(w_i + w_j)
+ alpha~) (the compliance alpha / s, multiplied through by s).

Usage (positions component-major, shape (3, N), C-contiguous; corrected in place)::

    colors = distance_colors(model.stretch, n)          # once per model
    work = DistanceWorkspace(CHUNK)                     # scratch, reused (optional)
    project_distance_pbd(P, colors, k, work)
    project_distance_xpbd(P, P_prev, colors, lam, alpha_tilde, gamma, work)

``colors`` is a list of :class:`DistanceColor` batches in colored order (no particle repeated
within a batch); ``lam`` (M,) holds the family's multipliers in the family's (colored) order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np
from numpy.typing import NDArray

from ..arrays import I64, F, I
from .batches import CHUNK, chunk_slices, flat_gather, flat_positions

#: Below this length a constraint has no direction [m]: the length is clamped to it.
MIN_LENGTH = 1e-12


class DistanceConstraints(Protocol):
    """What :func:`distance_colors` reads from a family (:class:`pbdcloth.cloth.model.DistanceFamily`)."""

    @property
    def i(self) -> I64: ...
    @property
    def j(self) -> I64: ...
    @property
    def rest(self) -> F: ...
    @property
    def wi(self) -> F: ...
    @property
    def wj(self) -> F: ...
    @property
    def wi_frac(self) -> F: ...
    @property
    def wj_frac(self) -> F: ...
    def color_slices(self) -> list[slice]: ...


@dataclass(frozen=True, eq=False)
class DistanceColor:
    """One batch of distance constraints of one color, with flat gather indices.

    Attributes:
        gather: [i, i + N, i + 2N, j, j + N, j + 2N] (6 m,): ``R.take(gather).reshape(2, 3, m)``
            gives (x_i, x_j) component-major.
        count: m, the number of constraints.
        rest: rest length d0 [m], shape (m,).
        frac: (w_i / (w_i + w_j), -w_j / (w_i + w_j)) [1], shape (2, 1, m); 0 where both pinned.
        w: (w_i, -w_j) [1/kg], shape (2, 1, m).
        wsum: w_i + w_j [1/kg], shape (m,).
        span: the batch's slice of the family's arrays (and of its multipliers).
        scale: stiffness scale s of each constraint, shape (m,), or ``None`` (1): PBD steps
            with min(1, s k'), XPBD with the compliance alpha / s
            (:mod:`pbdcloth.cloth.attributes`).
        compliance: each constraint's own compliance [m/N] (the stitch family's), shape
            (m,), or ``None``.
    """

    gather: I
    count: int
    rest: F
    frac: F
    w: F
    wsum: F
    span: slice
    scale: F | None = None
    compliance: F | None = None


def distance_colors(family: DistanceConstraints, n: int, chunk: int = CHUNK) -> list[DistanceColor]:
    """The family's colors as batches of at most ``chunk`` constraints, for ``n`` particles
    (with the family's ``scale``, when it has one)."""
    scale: F | None = getattr(family, "scale", None)
    compliance: F | None = getattr(family, "compliance", None)
    return [
        DistanceColor(
            gather=flat_gather([family.i[s], family.j[s]], n), count=s.stop - s.start,
            rest=family.rest[s],
            frac=np.stack([family.wi_frac[s], -family.wj_frac[s]])[:, None, :],
            w=np.stack([family.wi[s], -family.wj[s]])[:, None, :],
            wsum=family.wi[s] + family.wj[s], span=s,
            scale=None if scale is None else scale[s],
            compliance=None if compliance is None else compliance[s],
        )
        for color in family.color_slices()
        for s in chunk_slices(color, chunk)
    ]


class DistanceWorkspace:
    """Scratch arrays for batches of up to ``capacity`` distance constraints, reused, with the
    views of each batch size kept once made."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._x = np.empty(6 * capacity)
        self._corr = np.empty(6 * capacity)
        self._d = np.empty(3 * capacity)
        self._len = np.empty((2, capacity))
        self._flags = np.empty((2, capacity), dtype=bool)
        self._views: dict[int, tuple[F, F, F, F, F]] = {}

    @classmethod
    def for_colors(cls, colors: Sequence[DistanceColor]) -> DistanceWorkspace:
        return cls(max((c.count for c in colors), default=0))

    def views(self, m: int) -> tuple[F, F, F, F, F]:
        """(x (6 m,), correction (2, 3, m), d (3, m), length (m,), safe length (m,))."""
        got = self._views.get(m)
        if got is not None:
            return got
        if m > self.capacity:
            raise ValueError(f"batch of {m} constraints exceeds the workspace ({self.capacity})")
        got = (self._x[: 6 * m], self._corr[: 6 * m].reshape(2, 3, m),
               self._d[: 3 * m].reshape(3, m), self._len[0, :m], self._len[1, :m])
        self._views[m] = got
        return got

    def flags(self, m: int) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Two boolean scratch arrays of length m."""
        return self._flags[0, :m], self._flags[1, :m]


def project_distance_pbd(positions: F, colors: Sequence[DistanceColor], stiffness: float,
                         work: DistanceWorkspace | None = None) -> None:
    """PBD distance projection of ``colors`` in order, in place: x_i -= frac_i k' C n.

    ``positions`` (3, N) [m]; ``stiffness`` is k' (already scaled for the iteration count).
    """
    if stiffness == 0.0:
        return
    R = flat_positions(positions)
    ws = work if work is not None else DistanceWorkspace.for_colors(colors)
    for c in colors:
        x, corr, d, length, safe = _gather_lengths(R, c, ws)
        np.subtract(length, c.rest, out=length)          # C
        np.divide(length, safe, out=length)
        if c.scale is None:
            np.multiply(length, stiffness, out=length)   # k' C / |d|
        else:
            length *= np.minimum(stiffness * c.scale, 1.0)
        _correct(R, c, x, corr, d, length)


def _gather_lengths(R: F, c: DistanceColor, ws: DistanceWorkspace) -> tuple[F, F, F, F, F]:
    """A batch's end points x (2, 3, m), scratch for the correction, d = x_i - x_j (3, m), |d|
    and |d| clamped to MIN_LENGTH (m,), in the workspace's arrays."""
    m = c.count
    buf, corr, d, length, safe = ws.views(m)
    x = R.take(c.gather, mode="clip", out=buf).reshape(2, 3, m)
    np.subtract(x[0], x[1], out=d)
    np.einsum("ij,ij->j", d, d, out=length)
    np.sqrt(length, out=length)
    np.maximum(length, MIN_LENGTH, out=safe)
    return x, corr, d, length, safe


def _correct(R: F, c: DistanceColor, x: F, corr: F, d: F, step: F) -> None:
    """x_i -= frac_i step d, x_j += frac_j step d (frac's signs), written back to R."""
    np.multiply(d, step, out=d)
    x -= np.multiply(c.frac, d, out=corr)
    R[c.gather] = x.reshape(-1)


def project_distance_unilateral(positions: F, colors: Sequence[DistanceColor], slack: float,
                                work: DistanceWorkspace | None = None,
                                tolerance: float | None = None) -> bool:
    """Project only the stretched constraints of ``colors`` in order, fully, in place:
    C = max(|x_i - x_j| - s d0, 0), x_i -= frac_i C n (s = ``slack`` >= 1; a constraint shorter
    than s d0 is left alone). Used by the coarse levels of :mod:`.hierarchy`.

    Returns whether some constraint was, when its turn came, more than ``tolerance`` d0 past
    s d0 (|x_i - x_j| - s d0 > tolerance d0; ``None``: whether any was past s d0), which tells
    :func:`~.hierarchy.project_hierarchy` whether to sweep the level again."""
    R = flat_positions(positions)
    ws = work if work is not None else DistanceWorkspace.for_colors(colors)
    far = False
    for c in colors:
        x, corr, d, length, safe = _gather_lengths(R, c, ws)
        np.subtract(length, slack * c.rest, out=length)  # |d| - s d0
        stretched, beyond = ws.flags(c.count)
        np.greater(length, 0.0, out=stretched)
        count = int(np.count_nonzero(stretched))
        if count == 0:
            continue
        if not far:  # some stretched constraint more than the tolerance past s d0
            far = tolerance is None or bool(np.logical_and(
                np.greater(length, tolerance * c.rest, out=beyond), stretched, out=beyond).any())
        if 4 * count > c.count:
            np.maximum(length, 0.0, out=length)          # C+
            np.divide(length, safe, out=length)          # C+ / |d|
            _correct(R, c, x, corr, d, length)
            continue
        # Few stretched: correct only those (the same operations on the same values; the
        # others' correction is exactly 0 and writing them back would change nothing).
        over = np.flatnonzero(stretched)
        step = d[:, over] * (length[over] / safe[over])
        moved = x[:, :, over] - c.frac[:, :, over] * step
        R[c.gather.reshape(2, 3, c.count)[:, :, over]] = moved
    return far


def distance_inverse_denominators(colors: Sequence[DistanceColor], alpha_tilde: float,
                                  gamma: float) -> list[F]:
    """1 / ((1 + gamma)(w_i + w_j) + alpha~) per batch, 0 where the denominator is 0; with a
    scale s: 1 / ((s + gamma)(w_i + w_j) + alpha~)."""
    out = []
    for c in colors:
        factor = (1.0 + gamma) if c.scale is None else (c.scale + gamma)
        denom = factor * c.wsum + alpha_tilde
        out.append(np.where(denom > 0.0, 1.0 / np.where(denom > 0.0, denom, 1.0), 0.0))
    return out


def project_distance_xpbd(
    positions: F, prev_positions: F, colors: Sequence[DistanceColor], lam: F,
    alpha_tilde: float, gamma: float, work: DistanceWorkspace | None = None,
    inv_denominators: Sequence[F] | None = None,
) -> None:
    """XPBD distance projection of ``colors`` in order, in place; adds dlambda to ``lam`` (M,).

    ``positions``, ``prev_positions`` (3, N) [m] (the latter: positions at the start of the
    substep, for constraint damping); ``alpha_tilde = compliance / h^2`` [kg^-1];
    ``gamma = alpha_tilde * beta * h`` [1]. ``inv_denominators``, if given, is
    :func:`distance_inverse_denominators` of the same arguments (computed once per frame).
    """
    R = flat_positions(positions)
    R_prev = flat_positions(prev_positions)
    ws = work if work is not None else DistanceWorkspace.for_colors(colors)
    inv = (inv_denominators if inv_denominators is not None
           else distance_inverse_denominators(colors, alpha_tilde, gamma))
    for c, inv_denom in zip(colors, inv):
        m = c.count
        buf, corr, d, length, safe = ws.views(m)
        x = R.take(c.gather, mode="clip", out=buf).reshape(2, 3, m)
        np.subtract(x[0], x[1], out=d)
        np.einsum("ij,ij->j", d, d, out=length)
        np.sqrt(length, out=length)
        np.maximum(length, MIN_LENGTH, out=safe)
        np.divide(d, safe, out=d)                        # n
        lam_c = lam[c.span]
        numer = np.subtract(c.rest, length, out=length)  # -C
        if c.scale is not None:
            numer *= c.scale                             # -s C
        if alpha_tilde != 0.0:
            numer -= alpha_tilde * lam_c
        if gamma != 0.0:
            rel = x - R_prev.take(c.gather, mode="clip").reshape(2, 3, m)
            numer -= gamma * np.einsum("ij,ij->j", d, rel[0] - rel[1])
        dlam = np.multiply(numer, inv_denom, out=numer)
        lam_c += dlam
        np.multiply(d, dlam, out=d)                      # dlambda n
        x += np.multiply(c.w, d, out=corr)
        R[c.gather] = x.reshape(-1)
