"""Graph coloring of constraints so that no two constraints of one color share a particle.

Constraints of one color can then be projected together, in one vectorized step, with no write
conflicts: the result equals a sequential Gauss-Seidel sweep over the constraints in colored order
(Fratarcangeli, Tibaldo and Pellacini 2016, "Vivace").

The coloring is greedy ("first fit": each constraint takes the smallest color none of its
neighbours has). Up to :data:`SEQUENTIAL_LIMIT` constraints it runs sequentially in constraint
order, which on meshes numbered row by row gives close to the fewest colors (8 for the edges of a
regular grid, whose lower bound is 6). Larger families are colored in parallel rounds after Jones
and Plassmann 1993, in the order of a fixed integer hash of the constraint index: in each round
every uncolored constraint whose priority beats all uncolored constraints it shares a particle
with takes its color. That equals the sequential greedy coloring in hash order, needs about
log(M) rounds of whole-array operations, and uses a few more colors. Both are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..arrays import I64 as IndexArray

#: Families with at most this many constraints are colored sequentially in index order.
SEQUENTIAL_LIMIT = 400_000


@dataclass(frozen=True)
class Coloring:
    """A permutation of constraints grouped by color.

    Attributes:
        order: constraint indices sorted by (color, original index), shape (M,).
        offsets: start of each color in ``order``, plus the end, shape (C + 1,).
        colors: color of each original constraint, shape (M,).
    """

    order: IndexArray
    offsets: IndexArray
    colors: IndexArray

    @property
    def color_count(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def sizes(self) -> list[int]:
        """Number of constraints of each color."""
        return np.diff(self.offsets).tolist()

    def slices(self) -> list[slice]:
        """Slices of ``order`` (of any array permuted by it) holding each color."""
        return [slice(int(a), int(b)) for a, b in zip(self.offsets[:-1], self.offsets[1:])]


def _hash_priority(count: int) -> NDArray[np.uint64]:
    """A bijective 64-bit mix (splitmix64 finaliser) of 0..count-1: unique, reproducible."""
    with np.errstate(over="ignore"):
        z = np.arange(count, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z


def color_constraints(particles: NDArray[np.integer], particle_count: int) -> Coloring:
    """Greedy coloring of constraints given as rows of particle indices.

    Args:
        particles: (M, k) particle indices of each constraint (k = 2 for distances, 4 for bends).
        particle_count: number of particles N (indices are in [0, N)).

    Returns:
        A :class:`Coloring`; a constraint with all its particles distinct never shares a color
        with a constraint it shares a particle with.
    """
    cons = np.asarray(particles, dtype=np.int64)
    if cons.ndim != 2:
        raise ValueError(f"constraints must be an (M, k) index array, got shape {cons.shape}")
    m, k = cons.shape
    if m == 0:
        return Coloring(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))
    if m <= SEQUENTIAL_LIMIT:
        colors = _greedy_sequential(cons, particle_count)
    else:
        colors = _greedy_parallel(cons, particle_count)
    order = np.lexsort((np.arange(m), colors))
    count = int(colors.max()) + 1
    offsets = np.searchsorted(colors[order], np.arange(count + 1)).astype(np.int64)
    return Coloring(order=order.astype(np.int64), offsets=offsets, colors=colors)


def _greedy_sequential(cons: IndexArray, particle_count: int) -> IndexArray:
    """First-fit coloring in constraint order, with a bit mask of used colors per particle."""
    used = [0] * particle_count
    colors = []
    for row in cons.tolist():
        taken = 0
        for p in row:
            taken |= used[p]
        bit = ~taken & (taken + 1)  # lowest free color
        colors.append(bit.bit_length() - 1)
        for p in row:
            used[p] |= bit
    return np.array(colors, dtype=np.int64)


def _greedy_parallel(cons: IndexArray, particle_count: int) -> IndexArray:
    """First-fit coloring in hash order, computed in Jones-Plassmann rounds."""
    m, k = cons.shape
    colors = np.full(m, -1, dtype=np.int64)
    # Rank of each constraint's hash: a permutation, so priorities are small unique integers.
    prio = np.empty(m, dtype=np.int64)
    prio[np.argsort(_hash_priority(m), kind="stable")] = np.arange(m, dtype=np.int64)

    # used[w][p]: bit c set when particle p already has a constraint of color 64*w + c.
    used: list[NDArray[np.uint64]] = [np.zeros(particle_count, dtype=np.uint64)]
    remaining = np.arange(m, dtype=np.int64)
    best = np.empty(particle_count, dtype=np.int64)
    while remaining.size:
        rc = cons[remaining]
        rp = prio[remaining]
        best.fill(-1)
        np.maximum.at(best, rc.reshape(-1), np.repeat(rp, k))
        winner = (best[rc] == rp[:, None]).all(axis=1)
        win_idx = remaining[winner]
        win_cons = rc[winner]
        color = np.full(win_idx.size, -1, dtype=np.int64)
        for word, mask_of in enumerate(used):
            todo = color < 0
            if not todo.any():
                break
            taken = np.bitwise_or.reduce(mask_of[win_cons[todo]], axis=1)
            free = ~taken
            lowest = free & (np.uint64(0) - free)  # lowest zero bit of taken
            has = lowest != 0
            bit = np.zeros(lowest.shape, dtype=np.int64)
            bit[has] = np.log2(lowest[has].astype(np.float64)).round().astype(np.int64)
            idx = np.flatnonzero(todo)
            color[idx[has]] = 64 * word + bit[has]
            if word == len(used) - 1 and (~has).any():
                used.append(np.zeros(particle_count, dtype=np.uint64))
        colors[win_idx] = color
        word_of = color // 64
        bit_of = (np.uint64(1) << (color % 64).astype(np.uint64))
        for word in np.unique(word_of):
            sel = word_of == word
            for col in range(k):
                used[int(word)][win_cons[sel, col]] |= bit_of[sel]
        remaining = remaining[~winner]
    return colors


def color_constraints_pinned_last(particles: NDArray[np.integer], inv_mass: NDArray[np.floating],
                                  particle_count: int) -> Coloring:
    """:func:`color_constraints`, with the constraints that touch a pinned particle
    (``inv_mass`` 0) in colors of their own after all the others.

    Gauss-Seidel then ends each pass on the constraints that hold the cloth to its pins: a pin
    constraint moves only its free end, fully, so the edges at the pins, which carry the weight
    of everything below them, leave each pass at their rest length instead of being pulled
    long again by the constraints after them.
    """
    cons = np.asarray(particles, dtype=np.int64)
    at_pin = (np.asarray(inv_mass)[cons] == 0.0).any(axis=1) if cons.size else \
        np.zeros(len(cons), dtype=bool)
    free_idx, pin_idx = np.flatnonzero(~at_pin), np.flatnonzero(at_pin)
    first = color_constraints(cons[free_idx], particle_count)
    last = color_constraints(cons[pin_idx], particle_count)
    order = np.concatenate([free_idx[first.order], pin_idx[last.order]])
    offsets = np.concatenate([first.offsets, last.offsets[1:] + first.offsets[-1]])
    colors = np.empty(len(cons), dtype=np.int64)
    colors[free_idx] = first.colors
    colors[pin_idx] = last.colors + (len(first.offsets) - 1)
    return Coloring(order=order, offsets=offsets, colors=colors)


def coloring_of(colors: NDArray[np.integer]) -> Coloring:
    """The :class:`Coloring` (order by (color, index), offsets) of given colors per constraint."""
    values: IndexArray = np.asarray(colors, dtype=np.int64)
    m = values.shape[0]
    if m == 0:
        return Coloring(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))
    order = np.lexsort((np.arange(m), values))
    count = int(values.max()) + 1
    offsets = np.searchsorted(values[order], np.arange(count + 1)).astype(np.int64)
    return Coloring(order=order.astype(np.int64), offsets=offsets, colors=values)


def extend_coloring(particles: NDArray[np.integer], colors: NDArray[np.integer],
                    particle_count: int) -> Coloring:
    """Complete a partial coloring: constraints with ``colors >= 0`` keep their color, the rest
    (``-1``) take, one after the other in index order, the lowest color none of the constraints
    they share a particle with has (first fit, as :func:`color_constraints`).

    The kept colors must already be a valid coloring of the kept constraints (no two of one
    color share a particle); a tear keeps that true, since it only removes constraints or moves
    their ends to new copies of particles. Only the new constraints cost a Python loop.
    """
    cons = np.asarray(particles, dtype=np.int64)
    out = np.asarray(colors, dtype=np.int64).copy()
    if cons.ndim != 2 or out.shape != cons.shape[:1]:
        raise ValueError(f"constraints must be (M, k) with one color each, got {cons.shape} "
                         f"and {out.shape}")
    todo = np.flatnonzero(out < 0)
    if todo.size == 0:
        return coloring_of(out)
    kept = np.flatnonzero(out >= 0)
    used: list[int]
    if kept.size == 0 or int(out[kept].max()) < 63:
        mask = np.zeros(particle_count, dtype=np.uint64)
        bits = np.left_shift(np.uint64(1), out[kept].astype(np.uint64))
        np.bitwise_or.at(mask, cons[kept].reshape(-1), np.repeat(bits, cons.shape[1]))
        used = mask.tolist()
    else:
        used = [0] * particle_count
        for row, color in zip(cons[kept].tolist(), out[kept].tolist()):
            for p in row:
                used[p] |= 1 << color
    for index, row in zip(todo.tolist(), cons[todo].tolist()):
        taken = 0
        for p in row:
            taken |= used[p]
        bit = ~taken & (taken + 1)
        out[index] = bit.bit_length() - 1
        for p in row:
            used[p] |= bit
    return coloring_of(out)
