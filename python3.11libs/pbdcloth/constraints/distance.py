"""Distance constraints (stretch, shear), batched: Müller et al. 2006, eq. (10)-(11).

For particles i, j with inverse masses w_i, w_j and rest length d0,

    C = |x_i - x_j| - d0,     n = (x_i - x_j) / |x_i - x_j|,
    dx_i = -w_i / (w_i + w_j) * s * n,   dx_j = +w_j / (w_i + w_j) * s * n,

with the step s = k' C for PBD (stiffness k' in [0, 1]) and, for XPBD (Macklin, Müller and
Chentanez 2016, eq. 18 and 26), the Lagrange multiplier update

    dlambda = (-C - alpha~ lambda - gamma grad C . (x - x_prev)) / ((1 + gamma)(w_i + w_j) + alpha~),
    alpha~ = alpha / h^2,  gamma = alpha~ beta h,  s = -dlambda (w_i + w_j),

where alpha is the compliance [m/N] and beta the constraint damping [s]. Both conserve linear
and angular momentum (corrections along n, weighted by inverse mass).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]
I = NDArray[np.intp]

#: Below this length a constraint has no direction and is skipped [m].
MIN_LENGTH = 1e-12


def project_distance_pbd(
    p: F, i: I, j: I, rest: F, wi_frac: F, wj_frac: F, stiffness: float
) -> None:
    """Project one batch of distance constraints in place (PBD).

    ``p`` is (N, 3) positions; ``i``/``j`` (M,) particle indices with no particle repeated in the
    batch; ``wi_frac = w_i / (w_i + w_j)`` and ``wj_frac`` likewise (0 where both are pinned).
    """
    d = p[i] - p[j]
    length = np.sqrt(np.einsum("ij,ij->i", d, d))
    safe = np.maximum(length, MIN_LENGTH)
    s = stiffness * (length - rest) / safe
    s[length < MIN_LENGTH] = 0.0
    d *= s[:, None]
    p[i] -= wi_frac[:, None] * d
    p[j] += wj_frac[:, None] * d


def project_distance_xpbd(
    p: F, x_prev: F, i: I, j: I, rest: F, wi: F, wj: F, lam: F, alpha_tilde: float,
    gamma: float,
) -> None:
    """Project one batch of distance constraints in place (XPBD), updating ``lam`` (M,).

    ``x_prev`` is the positions at the start of the substep (for constraint damping); ``wi``/``wj``
    are inverse masses [1/kg]; ``alpha_tilde = compliance / h^2``; ``gamma = alpha_tilde * beta * h``.
    """
    d = p[i] - p[j]
    length = np.sqrt(np.einsum("ij,ij->i", d, d))
    ok = length >= MIN_LENGTH
    n = d / np.maximum(length, MIN_LENGTH)[:, None]
    c = length - rest
    wsum = wi + wj
    numer = -c - alpha_tilde * lam
    if gamma != 0.0:
        vel = (p[i] - x_prev[i]) - (p[j] - x_prev[j])
        numer -= gamma * np.einsum("ij,ij->i", n, vel)
    denom = (1.0 + gamma) * wsum + alpha_tilde
    dlam = np.where(ok & (denom > 0.0), numer / np.where(denom > 0.0, denom, 1.0), 0.0)
    lam += dlam
    n *= dlam[:, None]
    p[i] += wi[:, None] * n
    p[j] -= wj[:, None] * n
