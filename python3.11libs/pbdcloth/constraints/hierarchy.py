"""Hierarchical projection: Müller 2008, "Hierarchical Position Based Dynamics", section 4.

Given the coarse levels of a cloth (:mod:`pbdcloth.cloth.hierarchy`), one pass runs from the
coarsest level to the finest:

1. project the level's constraints in colored order, as unilateral distances that only
   resist stretch:
   C = max(|x_i - x_j| - s d0, 0), x_i -= w_i / (w_i + w_j) C n, x_j += w_j / (w_i + w_j) C n,
   with the level's masses (s = ``slack`` (1 + DEADBAND), ``slack`` >= 1, on the rest-shape
   distances d0); sweep the level again while some constraint was, when its turn came, more
   than the tolerance past s d0 (|x_i - x_j| - s d0 > tol d0, :func:`sweep_tolerance`), at
   most :func:`level_sweeps` times;
2. hand the level's corrections down: every particle f of the next finer level that is not on
   this level moves by the weighted corrections of its parents since the pass began,
   x_f = X_f + sum_k w_fk (x_pk - X_pk),   X = positions at the start of the pass.

The pass runs once per substep, after the prediction and before the cloth's own constraints
(level 0), which then only have to remove local errors. The coarse levels know no obstacles, so
the backends keep the particles that touched a collider in the frame's previous substep, or lie
within PROBE_REACH thicknesses of one at the substep's start, where the prediction put them (a
hanging sheet pushed by a paddle would otherwise be pulled into it, deeper than a level set's
narrow band). Those held particles are free on the levels and set back after the pass, so
while the pass holds any (or the solver has a triangle-mesh collider, whose collider vertices
prop cloth triangles without marking them), the backends sweep each level once: a level swept
until it is within its slack would pull the cloth around them further from where they end.
Corrections along n weighted by inverse
mass keep linear momentum on every level; the interpolation moves particles rigidly with their
parents where the parents move alike.

Usage (positions component-major (3, N), corrected in place)::

    levels = hierarchy_batches(model.hierarchy, n)        # once per model, coarsest first
    project_hierarchy(P, levels, slack, work, level_sweeps(...), sweep_tolerance(limit))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ..arrays import F, I
from .distance import (
    DistanceColor,
    DistanceConstraints,
    DistanceWorkspace,
    distance_colors,
    project_distance_unilateral,
)

DEADBAND = 1e-6
"""Coarse constraints leave stretch below this fraction of their rest distance alone: lengths
computed in float32 (the Warp backend) are a few ulps (1e-7 each) off, and a cloth at rest must
stay exactly where it is."""
SWEEP_TOLERANCE = 0.005
"""The tolerance of :func:`sweep_tolerance` without a strain limit [1, of d0]: half of the
default limit's 1 %."""
PROBE_REACH = 2.0
"""The backends leave out of the pass the particles within this many thicknesses of a
collider at the start of the substep (and those that touched one in the frame's previous
substep)."""


class HierarchyLevelData(DistanceConstraints, Protocol):
    """What :func:`hierarchy_batches` reads from a level
    (:class:`pbdcloth.cloth.hierarchy.HierarchyLevel`)."""

    @property
    def fine(self) -> I: ...
    @property
    def parents(self) -> I: ...
    @property
    def weights(self) -> F: ...


class HierarchyData(Protocol):
    @property
    def levels(self) -> Sequence[HierarchyLevelData]: ...
    def sizes(self) -> list[int]: ...


@dataclass(frozen=True, eq=False)
class LevelBatches:
    """One level ready to project: its colors and its hand-down to the finer level."""

    colors: list[DistanceColor]
    fine: I
    parents: I
    """(K, F): parents of each fine particle, one row per parent slot."""
    weights: F
    """(K, 1, F): the interpolation weights, broadcast over x, y, z."""


def hierarchy_batches(hierarchy: HierarchyData, n: int) -> list[LevelBatches]:
    """The levels of ``hierarchy`` as batches for :func:`project_hierarchy`, coarsest first."""
    return [
        LevelBatches(colors=distance_colors(level, n), fine=level.fine,
                     parents=np.ascontiguousarray(level.parents.T),
                     weights=np.ascontiguousarray(level.weights.T)[:, None, :])
        for level in reversed(list(hierarchy.levels))
    ]


def level_sweeps(hierarchy: HierarchyData, stretch_count: int, most: int) -> list[int]:
    """Sweeps over each coarse level of ``hierarchy`` per pass, coarsest first (the order of
    :func:`hierarchy_batches`): as many as the level's M_l constraints fit into the cloth's
    ``stretch_count`` M0 (its mesh edges), at least 1 and at most ``most``,

        sweeps_l = min(most, max(1, M0 // M_l)),

    so that the sweeps of one level cost at most one pass over the mesh edges. Gauss-Seidel
    carries a correction about one constraint per sweep, so a level whose chains are long
    (a strip's levels halve, a sheet's quarter) needs several sweeps before its pull reaches
    the pins: at ``most`` = 8 a 5000 x 2 strip's finest coarse level (an eighth of its edges)
    gets 7 and the others 8, a 100 x 100 sheet's finest coarse level (a third) 2."""
    return [min(most, max(1, stretch_count // max(count, 1)))
            for count in reversed(hierarchy.sizes())]


def sweep_tolerance(strain_limit: float) -> float:
    """How far past its slack a coarse constraint may be, as a fraction of its rest distance d0,
    when a level's sweeps stop [1]: half the cloth's strain limit, so the coarse scales leave
    the edges' own sweeps (constraints/strain_limit.py) at most half of what they may stretch
    (at the limit itself a 5000 x 2 catenary strip's edges reached 1.001 % against its 1 %),
    or :data:`SWEEP_TOLERANCE` without a limit (``strain_limit`` <= 0)."""
    return 0.5 * strain_limit if strain_limit > 0.0 else SWEEP_TOLERANCE


def project_hierarchy(positions: F, levels: Sequence[LevelBatches], slack: float,
                      work: DistanceWorkspace | None = None,
                      sweeps: Sequence[int] | None = None,
                      tolerance: float | None = None) -> None:
    """One hierarchical pass over ``levels`` (coarsest first), in place on ``positions`` (3, N):
    each level's constraints at most ``sweeps[l]`` times (:func:`level_sweeps`; ``None``: once),
    stopping after a sweep in which no constraint was more than ``tolerance`` d0 past the slack
    (:func:`sweep_tolerance`; ``None``: after one that moved nothing, which changes nothing),
    then its hand-down.
    """
    if not levels:
        return
    start = positions.copy()
    ws = work if work is not None else DistanceWorkspace.for_colors(
        [c for lv in levels for c in lv.colors])
    limit = slack * (1.0 + DEADBAND)
    for level_index, lv in enumerate(levels):
        for _ in range(1 if sweeps is None else sweeps[level_index]):
            if not project_distance_unilateral(positions, lv.colors, limit, ws, tolerance):
                break
        moved = start[:, lv.fine]
        for parent, weight in zip(lv.parents, lv.weights):
            moved += weight * (positions[:, parent] - start[:, parent])
        positions[:, lv.fine] = moved


__all__ = ["LevelBatches", "hierarchy_batches", "level_sweeps", "project_hierarchy",
           "sweep_tolerance"]
