"""Long range attachments (tethers): Kim, Chentanez and Müller-Fischer 2012, section 3.

A tether ties a free particle i to a pinned anchor a with rest distance r (the geodesic distance
over the mesh) and acts only when taut (a unilateral constraint):

    C = |x_i - x_a| - s r <= 0,       s the slack factor (1: no stretch along the tether),
    where C > 0:  x_i -= C (x_i - x_a) / |x_i - x_a|      (the anchor has w = 0 and stays).

No two tethers share their free particle, so all are projected at once.

Usage (positions component-major (3, N), corrected in place)::

    taut = project_tethers(P, t.particle, t.anchor, t.rest, slack)
"""

from __future__ import annotations

import numpy as np

from ..arrays import F, I


def project_tethers(positions: F, particle: I, anchor: I, rest: F, slack: float) -> int:
    """Project every taut tether of ``particle`` (K,) to ``anchor`` (K,) in place; the count taut.

    ``positions`` (3, N) [m]; ``rest`` (K,) [m]; ``slack`` [1] scales the rest distances.
    """
    d = positions[:, particle] - positions[:, anchor]
    length = np.sqrt(np.einsum("ij,ij->j", d, d))
    over = length - slack * rest
    taut = np.flatnonzero(over > 0.0)
    if taut.size:
        positions[:, particle[taut]] -= d[:, taut] * (over[taut] / length[taut])
    return int(taut.size)
