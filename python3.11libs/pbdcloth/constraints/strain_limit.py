"""Strain limiting: an upper bound on the stretch of every mesh edge (Provot 1995).

Provot ("Deformation constraints in a mass-spring model to describe rigid cloth behavior",
Graphics Interface 1995) corrects, after the dynamics, every spring stretched beyond a critical
rate tau_c of its rest length. In position based form each mesh edge (i, j) of rest length d0
is the unilateral constraint

    C = |x_i - x_j| - (1 + s) d0 <= 0,      s = the strain limit,

projected where C > 0 exactly as a PBD distance of stiffness 1 (Müller et al. 2006, eq. 10-11):

    x_i -= w_i / (w_i + w_j) C n,      x_j += w_j / (w_i + w_j) C n,      n = (x_i - x_j) / |x_i - x_j|,

so it conserves linear and angular momentum and leaves edges shorter than (1 + s) d0 alone.
The edges are swept in the stretch family's colored order ``passes`` times after the cloth's
own constraints in every iteration (before tethers and colliders, which keep the last word).
One Gauss-Seidel sweep only bounds the edge it projects; later edges of the sweep can stretch it
again, so each pass brings the largest strain closer to s (README: measured table).

Usage (positions component-major (3, N), C-contiguous; corrected in place)::

    project_strain_limit(P, stretch_colors, settings.effective_strain_limit,
                         settings.strain_limit_passes, work)
"""

from __future__ import annotations

from typing import Sequence

from ..arrays import F
from .distance import DistanceColor, DistanceWorkspace, project_distance_unilateral


def project_strain_limit(positions: F, colors: Sequence[DistanceColor], limit: float,
                         passes: int, work: DistanceWorkspace | None = None) -> None:
    """Bound the strain of the edges ``colors`` (the stretch family's) to ``limit`` [1]:
    ``passes`` sweeps of C = max(|x_i - x_j| - (1 + limit) d0, 0), in place on ``positions``
    (3, N) [m]. ``limit`` <= 0 does nothing."""
    if limit <= 0.0:
        return
    for _ in range(passes):
        project_distance_unilateral(positions, colors, 1.0 + limit, work)
