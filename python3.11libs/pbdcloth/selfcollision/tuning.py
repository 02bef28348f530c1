"""Self-collision tuning: the method's internal constants as one frozen value, passed in.

These are not user settings (those are ``self_thickness``, ``self_friction`` and ``self_clamp``
in :mod:`pbdcloth.settings`): they fix how the method works and were measured once on the fold
and twist scenes. They live in one frozen dataclass that the self-collision stages take as an
argument, so a test or a benchmark runs with another tuning by passing another value, never by
changing a module global.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SelfCollisionTuning:
    """Constants of the self-collision method (dimensionless unless stated).

    Attributes:
        rest_exclusion: pairs closer than this times the thickness in the rest shape are never
            tested (two layers of a fold a thickness apart are at least pi/2 t apart along the
            cloth).
        edge_interior: an edge-edge contact needs both closest points this far inside their
            edges (fraction of the edge); nearer an end it is a vertex contact.
        crossing_band: a pair is tested for having crossed (its closest points on the other side
            than at the start of the substep) up to this many thicknesses apart.
        passes: Jacobi passes of the contact projection per solver iteration, at most.
        resolved: passes stop once no contact is deeper than this times the thickness.
        revert_rounds: rounds of the fail-safe that reverts pairs left on the wrong side.
        cell_scale: row size of the sweep grid as a multiple of the mean box extent.
        max_skin: the candidate lists reach at most this many thicknesses beyond the contact
            reach.
        gap_fraction: ... and stay below this fraction of the rest gap (the smallest rest
            distance of a pair that is not excluded).
        partial_limit: a list update refreshes only the particles that moved more than half the
            skin while they are at most this fraction of all particles; beyond it, a full build.
        skip_unchanged: skip pairs whose particles have not moved enough since their last
            evaluation to matter (False evaluates every pair in every pass: same result).
        warp_block: thread block length of the Warp stage's two-level sums and scans.
        warp_initial_per_query: first guess of candidate pairs per triangle and per edge (Warp,
            grown on demand).
        warp_min_capacity: smallest Warp candidate buffer (pairs).
        warp_initial_slots: first guess of the most candidate pairs of one triangle or edge
            (Warp, grown on demand).
        warp_cpu_threads: threads of the Warp stage's native pair passes on the CPU (at most
            the machine's cores; 1: one thread; the results do not depend on it), and of the
            Warp mesh collider's native loops (``backends/warp/mesh_native.py``).
    """

    rest_exclusion: float = 0.5 * math.pi
    edge_interior: float = 1e-6
    crossing_band: float = 1.5
    passes: int = 4
    resolved: float = 0.01
    revert_rounds: int = 8
    cell_scale: float = 1.0
    max_skin: float = 0.25
    gap_fraction: float = 0.9
    partial_limit: float = 0.25
    skip_unchanged: bool = True
    warp_block: int = 256
    warp_initial_per_query: int = 4
    warp_min_capacity: int = 64
    warp_initial_slots: int = 16
    warp_cpu_threads: int = 2


#: The tuning every solver uses unless given another.
DEFAULT_TUNING = SelfCollisionTuning()

__all__ = ["DEFAULT_TUNING", "SelfCollisionTuning"]
