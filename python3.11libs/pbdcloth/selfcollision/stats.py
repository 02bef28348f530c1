"""What the self-collision stage reports: counters and per-phase timings, kept by a recorder.

The stage's physics calls the recorder only (``with stats.phase("edge_edge"): ...``,
``stats.on_contacts(n_pt, n_ee)``); what is recorded is up to the recorder.
:class:`SelfCollisionStats` (the default) sums everything since its last :meth:`reset`;
:class:`NullStats` records nothing. Recording never changes the physics.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["PHASES", "NullStats", "SelfCollisionStats"]

#: The timed phases: sorting points into grids, searching and filtering candidate pairs, and
#: the narrow phase of each family (the fail-safe counts as point-triangle).
PHASES = ("hash", "candidates", "point_triangle", "edge_edge")


def _zero_seconds() -> dict[str, float]:
    return {name: 0.0 for name in PHASES}


@dataclass
class SelfCollisionStats:
    """Counters and timings of the self-collision stage, summed since the last ``reset``."""

    substeps: int = 0
    rebuilds: int = 0
    """Full builds of the candidate lists (at most one per substep)."""
    partial_rebuilds: int = 0
    """Partial updates of the lists (the movers' pairs only; at most one per substep)."""
    refreshed: int = 0
    """Particles whose pairs a partial update searched again (summed)."""
    point_triangle_candidates: int = 0
    edge_edge_candidates: int = 0
    point_triangle_contacts: int = 0
    """Point-triangle contacts projected, summed over iterations and substeps."""
    edge_edge_contacts: int = 0
    clamped: int = 0
    """Particle speeds clamped (summed over substeps)."""
    reverted: int = 0
    """Particles put back to their substep start by the fail-safe (summed over calls)."""
    evaluated: int = 0
    """Pair evaluations (closest points) of the narrow phase and the fail-safe (summed)."""
    seconds: dict[str, float] = field(default_factory=_zero_seconds)
    """Wall-clock seconds per phase (:data:`PHASES`) [s]; nested phases are exclusive (time in
    an inner phase is not also counted in the outer one)."""
    _open: list[str | None] = field(default_factory=list, repr=False, compare=False)
    _mark: float = field(default=0.0, repr=False, compare=False)

    def reset(self) -> None:
        """Zero every counter and timing (at the start of a frame)."""
        self.__dict__.update(SelfCollisionStats().__dict__)

    # --- timing --------------------------------------------------------------------------------
    @contextmanager
    def phase(self, name: str | None) -> Iterator[None]:
        """Charge the wall-clock time of the ``with`` body to phase ``name`` (None: to no
        phase, nor to any phase opened inside it: for one-off costs such as the rest-shape
        exclusions)."""
        self._charge()
        muted = bool(self._open) and self._open[-1] is None
        self._open.append(None if muted else name)
        try:
            yield
        finally:
            self._charge()
            self._open.pop()

    def _charge(self) -> None:
        """Add the time since the last mark to the innermost open phase, and mark now."""
        now = time.perf_counter()
        if self._open and self._open[-1] is not None:
            self.seconds[self._open[-1]] += now - self._mark
        self._mark = now

    # --- events --------------------------------------------------------------------------------
    def on_substep(self) -> None:
        self.substeps += 1

    def on_clamp(self, clamped: int) -> None:
        self.clamped += clamped

    def on_full_build(self) -> None:
        self.rebuilds += 1

    def on_partial_update(self, refreshed: int) -> None:
        self.partial_rebuilds += 1
        self.refreshed += refreshed

    def on_lists(self, point_triangle: int, edge_edge: int) -> None:
        """The candidate lists' lengths for this substep."""
        self.point_triangle_candidates += point_triangle
        self.edge_edge_candidates += edge_edge

    def on_evaluate(self, pairs: int) -> None:
        self.evaluated += pairs

    def on_contacts(self, point_triangle: int, edge_edge: int) -> None:
        """Contacts projected by one pass."""
        self.point_triangle_contacts += point_triangle
        self.edge_edge_contacts += edge_edge

    def on_revert(self, particles: int) -> None:
        self.reverted += particles

    # --- report --------------------------------------------------------------------------------
    def frame_extra(self) -> dict[str, float]:
        """Per-frame numbers for :attr:`FrameStats.extra` (candidates are per substep)."""
        n = max(self.substeps, 1)
        return {
            "self_pt_candidates": self.point_triangle_candidates / n,
            "self_ee_candidates": self.edge_edge_candidates / n,
            "self_pt_contacts": float(self.point_triangle_contacts),
            "self_ee_contacts": float(self.edge_edge_contacts),
            "self_clamped": float(self.clamped),
            "self_rebuilds": float(self.rebuilds),
            "self_partial_rebuilds": float(self.partial_rebuilds),
            "self_refreshed": float(self.refreshed),
            "self_evaluated": float(self.evaluated),
            "self_reverted": float(self.reverted),
        }


class NullStats(SelfCollisionStats):
    """A recorder that records nothing (every counter and timing stays zero)."""

    @contextmanager
    def phase(self, name: str | None) -> Iterator[None]:
        yield

    def on_substep(self) -> None:
        pass

    def on_clamp(self, clamped: int) -> None:
        pass

    def on_full_build(self) -> None:
        pass

    def on_partial_update(self, refreshed: int) -> None:
        pass

    def on_lists(self, point_triangle: int, edge_edge: int) -> None:
        pass

    def on_evaluate(self, pairs: int) -> None:
        pass

    def on_contacts(self, point_triangle: int, edge_edge: int) -> None:
        pass

    def on_revert(self, particles: int) -> None:
        pass
