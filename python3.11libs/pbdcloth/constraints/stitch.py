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

Usage (positions component-major (3, N), C-contiguous; corrected in place)::

    colors = distance_colors(model.stitches, n)     # once per model
    project_stitches(P, X, colors, v * h)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..arrays import F
from .batches import flat_positions
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


__all__ = ["project_stitches"]
