"""Strain limiting: an upper bound on the stretch of every mesh edge (Provot 1995).

Provot ("Deformation constraints in a mass-spring model to describe rigid cloth behavior",
Graphics Interface 1995) corrects, after the dynamics, every spring stretched beyond a critical
rate tau_c of its rest length. In position based form each mesh edge (i, j) of rest length d0
with the limit s is the unilateral constraint |x_i - x_j| <= (1 + s) d0. An edge past it is
shortened to the target length t d0, a margin below the limit,

    t = 1 + s - min(MARGIN, s / 2),      C = |x_i - x_j| - t d0,
    x_i -= w_i / (w_i + w_j) C n,    x_j += w_j / (w_i + w_j) C n,    n = (x_i - x_j) / |x_i - x_j|

(a PBD distance of stiffness 1, Müller et al. 2006, eq. 10-11), so it conserves linear and
angular momentum and leaves edges no longer than (1 + s) d0 alone.

The edges are swept in the stretch family's colored order after the cloth's own constraints in
every iteration (before tethers and colliders, which keep the last word), **until a sweep
shortens no edge**, at most ``passes`` sweeps. When the sweeps stop before the cap, every edge
is within the limit: a sweep that moves nothing has found each edge no longer than
(1 + s) d0. The margin is what makes them stop: one Gauss-Seidel sweep only bounds the edge it
projects, and later edges of the sweep can stretch it again, so sweeps that shortened edges to
exactly (1 + s) d0 would approach the bound from above without reaching it (a 100 x 100 sheet
hanging from two corners read 1.010 % after 10 sweeps at a 1 % limit); shortened a margin
below, an edge needs a re-stretch of MARGIN d0 to be projected again. Each projection of an edge
at rest on the limit moves it by at most MARGIN d0 (3 um on a 3 cm edge).

Only the first sweep visits every edge. A later sweep visits the edges with an end that an
earlier projection of this call moved since the edge's last visit (an end stamped with this or
the previous sweep); any other edge is as long as when it was last visited and found within
the limit, so the sweep would leave it alone: skipping it changes no result.

Stitches run inside the sweeps (``between``): each sweep is the edges, then the stitches, and the
sweeps stop at the first that shortens no edge after the stitches have run at least once. A
stitch of rest length 0 joins two particles into one seam point; projected only after the
sweeps, it pulls both back to their midpoint and undoes the sweeps' moves of the seam in the
direction of the seam's two sides, so the edges next to a seam kept all the stretch of a garment
pulled taut over a body (the sewing scene's: 8.6 % at rest, against 1.4 % with the stitches
inside). Inside, the last sweep proves every edge within the limit with the seams closed.

Particles in contact may slide (``sliding``, the setting ``contact_sliding``): an end that a
collider has touched earlier in the substep keeps none of a sweep's move into the obstacle, only
the rest of it,

    dx_i <- dx_i - min(0, dx_i . n_i) n_i      (n_i the contact's outward normal),

the constraint that the collider would otherwise restore after the sweeps (a contact blocks
motion along -n, as in the projected Gauss-Seidel of contact problems). Projected into the
obstacle and pushed back out along diverging normals, the two ends of an edge over a curved
contact are carried apart again after every iteration (the prop scene's edges over the
mannequin: 6.2 % against a 1 % limit, the cloak's over the capsules 9.4 %, on Warp); sliding,
the sweeps end on edges that the collider no longer lengthens (2.5 % and 4.8 %). A collider
moving a thickness or more per substep along the contact's normal could carry a sliding
particle around its rim, through it by the substep's straight path (a bar at 48 m/s through a
curtain with one substep), so such contacts do not slide (:func:`sliding_particles`).

Usage (positions component-major (3, N), C-contiguous; corrected in place)::

    sweeps = project_strain_limit(P, stretch_colors, settings.effective_strain_limit,
                                  settings.effective_strain_limit_passes,
                                  margin=sweep_margin(settings.self_collision))
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ..arrays import F, I
from .distance import MIN_LENGTH, DistanceColor, flat_positions

MARGIN = 1e-4
"""How far below the limit a projected edge ends, as a strain (at most half the limit)."""


def limit_target(limit: float, margin: float = MARGIN) -> float:
    """t: an edge past (1 + limit) d0 is shortened to t d0, t = 1 + limit - min(margin,
    limit / 2)."""
    return 1.0 + limit - min(margin, 0.5 * limit)


def sweep_margin(self_collision: bool) -> float:
    """The margin the solve uses: :data:`MARGIN`, or 0 while self collision is on. There the
    sweeps are few (``ClothSettings.effective_strain_limit_passes``) and shorten edges to the
    limit itself, as before the margin: the self-collision stage meets the sweeps' moves after
    its broad phase, and on the wrung twist scene (pins holding the cloth 70 % stretched, so
    every sweep moves every edge) the margin's extra moves let triangles intersect by the
    seventh frame of the twist test."""
    return 0.0 if self_collision else MARGIN


def sliding_particles(active: NDArray[np.bool_], normals: F, surface_velocity: F,
                      thickness: float, h: float) -> NDArray[np.bool_]:
    """The particles that slide (N,): touching a collider (``active``) whose surface moved
    less than ``thickness`` [m] along the contact's outward normal (``normals`` (N, 3)) in the
    substep ``h`` [s], |v_s . n| h < thickness (``surface_velocity`` (N, 3) [m/s]); a faster
    surface could carry a sliding particle around its rim."""
    sv, n = surface_velocity, normals
    normal_speed = sv[:, 0] * n[:, 0] + sv[:, 1] * n[:, 1] + sv[:, 2] * n[:, 2]
    return active & (np.abs(normal_speed) * h < thickness)


def _slide(delta: F, ends: I, touching: NDArray[np.bool_], normals: F) -> F:
    """``delta`` (2, 3, m), the moves of the ends ``ends`` (2, m), less min(0, delta . n) n
    at each end in contact (``touching`` (N,), outward unit ``normals`` (N, 3)), in place."""
    for e in (0, 1):
        k = np.flatnonzero(touching[ends[e]])
        if k.size == 0:
            continue
        n = normals[ends[e, k]].T                              # (3, k)
        d = delta[e][:, k]
        inward = np.minimum(d[0] * n[0] + d[1] * n[1] + d[2] * n[2], 0.0)
        delta[e][:, k] = d - n * inward
    return delta


def project_strain_limit(positions: F, colors: Sequence[DistanceColor], limit: float,
                         passes: int, margin: float = MARGIN,
                         between: Callable[[], None] | None = None,
                         moved: I | None = None,
                         sliding: tuple[NDArray[np.bool_], F] | None = None) -> int:
    """Bound the strain of the edges ``colors`` (the stretch family's) to ``limit`` [1], in
    place on ``positions`` (3, N) [m]: sweeps in colored order, each edge longer than
    (1 + limit) d0 shortened to :func:`limit_target` d0, until a sweep shortens none or
    ``passes`` sweeps have run (``margin``: see :func:`limit_target`; at 0 the sweeps
    approach the limit without stopping early). Returns the number of sweeps run; fewer than
    ``passes`` means every edge ends within the limit. ``limit`` <= 0 does nothing (returns
    0).

    ``between`` (the stitches), when given, runs after every sweep, and ``moved`` lists the
    particles it may move (their edges are visited again by the next sweep; ``None``: every
    particle); the sweeps then
    stop at the first after ``between`` has run that shortens no edge.

    ``sliding`` = (in contact (N,), outward normals (N, 3)): the ends in contact keep none of
    their moves' components along -n (see the module's docstring).
    """
    if limit <= 0.0 or passes <= 0:
        return 0
    R = flat_positions(positions)
    trigger, target = 1.0 + limit, limit_target(limit, margin)
    stamp = np.full(R.size // 3, -2, dtype=np.int32)   # the last sweep that moved a particle
    touching = None if sliding is None or not sliding[0].any() else sliding[0]
    for sweep in range(passes):
        shortened = 0
        for c in colors:
            g = c.gather.reshape(2, 3, c.count)
            if sweep == 0:
                seen = None
            else:
                # g[e, 0] are the particle indices of the ends (the x rows of the gather)
                seen = np.flatnonzero(np.maximum(stamp[g[0, 0]], stamp[g[1, 0]]) >= sweep - 1)
                if seen.size == 0:
                    continue
                g = g[:, :, seen]
            x = R.take(g)                              # (2, 3, m) end points
            d = x[0] - x[1]
            length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            rest = c.rest if seen is None else c.rest[seen]
            hit = np.flatnonzero(length > trigger * rest)
            if hit.size == 0:
                continue
            over = hit if seen is None else seen[hit]
            step = d[:, hit] * ((length[hit] - target * rest[hit])
                                / np.maximum(length[hit], MIN_LENGTH))
            g = g[:, :, hit]
            if touching is None:
                R[g] = x[:, :, hit] - c.frac[:, :, over] * step
            else:
                R[g] = x[:, :, hit] + _slide(-(c.frac[:, :, over] * step), g[:, 0], touching,
                                             sliding[1])      # type: ignore[index]
            stamp[g[0, 0]] = sweep
            stamp[g[1, 0]] = sweep
            shortened += hit.size
        if shortened == 0 and (between is None or sweep > 0):
            return sweep + 1
        if between is not None:
            between()
            stamp[slice(None) if moved is None else moved] = sweep
    return passes
