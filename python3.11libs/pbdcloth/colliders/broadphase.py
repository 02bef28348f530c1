"""Broad phase of mesh colliders: boxes in a sorted-cell-key uniform grid, refit every substep.

A :class:`BoxGrid` holds M boxes (centre +- half extent, component-major (3, M) arrays). The two
axes across the boxes' largest spread are cut into square cells of size ``cell`` (a cell column
is a *row*); each box is keyed by its centre's row and its coordinate along the remaining (sweep)
axis, ``key = row W + (x_s - origin_s)`` (``W`` more than twice the spread, so rows never
interleave), and the boxes are kept sorted by key (the layout of
:class:`pbdcloth.selfcollision.lists.SweepGrid`). A query box finds the boxes of every row it
overlaps, grown by the largest half extent, with two ``searchsorted`` calls per row, then keeps
the pairs that overlap exactly. The grid keeps its boxes' extent row by row
(:class:`~pbdcloth.selfcollision.lists.RowBounds`): a query skips the rows whose boxes all miss
it and searches each row's keys grown by that row's own largest half extent (every run within
the plain one and holding all its overlapping boxes: the same pairs in the same order).

Refit (the topology is fixed, only the boxes move): the keys are recomputed in the previous
sorted order and sorted again with numpy's stable sort, which is Timsort for floats (Peters
2002): it finds the sorted runs already there, so boxes that moved little between substeps are
re-sorted in about linear time instead of an ``M log M`` rebuild.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..arrays import F, I
from ..selfcollision.lists import RowBounds, row_runs

__all__ = ["BoxGrid", "PairList"]

#: At most this many rows: keeps the composite key's rounding far below the spread.
MAX_ROWS = 1 << 20
#: Up to this many big boxes are tested against every query directly; more get a grid.
BIG_DIRECT = 64
#: Rows per box above which the grid keeps no per-row extents (:class:`RowBounds`).
MAX_ROWS_PER_BOX = 64


class BoxGrid:
    """M axis-aligned boxes, searchable by box queries (see the module docstring)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.order: I = np.arange(count, dtype=np.intp)
        """Box indices in sorted order (M,), carried from refit to refit."""
        self.axes: tuple[int, int, int] | None = None
        self.cell = 1.0
        self.comp = np.zeros(0)
        self.reach = np.zeros(3)
        self.small: NDArray[np.bool_] | None = None
        self.big_grid: BoxGrid | None = None
        self.big: I = np.zeros(0, dtype=np.intp)

    def refit(self, centre: F, half: F, cell: float) -> None:
        """Place the boxes ``centre`` +- ``half`` ((3, M) each, [m]) in rows of ``cell`` [m].

        Boxes more than two cells wide (:attr:`big`; e.g. the long thin fan triangles at a
        pole) stay out of the rows, so that they do not widen every query by their size: up to
        :data:`BIG_DIRECT` of them are tested against every query box directly, more go into a
        grid of their own (cells of their size)."""
        big = half.max(axis=0) > max(cell, 1e-12)
        self.big = np.flatnonzero(big)
        self.big_lo, self.big_hi = (np.take(centre - half, self.big, axis=1),
                                    np.take(centre + half, self.big, axis=1))
        # Many big boxes get a grid of their own, with cells of their size.
        if self.big.size > BIG_DIRECT and self.big.size < half.shape[1]:
            if self.big_grid is None or self.big_grid.count != self.big.size:
                self.big_grid = BoxGrid(self.big.size)
            bh = np.take(half, self.big, axis=1)
            self.big_grid.refit(np.take(centre, self.big, axis=1), bh, float(2.0 * bh.mean()))
        else:
            self.big_grid = None
        small = ~big
        if self.small is None or not np.array_equal(self.small, small):
            self.small = small
            self.order = np.flatnonzero(small).astype(np.intp)
        c = np.take(centre, self.order, axis=1)  # the small boxes' centres
        lo = c.min(axis=1) if self.order.size else np.zeros(3)
        ext = (c.max(axis=1) if self.order.size else np.zeros(3)) - lo
        if self.axes is None:  # chosen once: the sweep axis only affects speed, not results
            s = int(np.argmax(ext))
            u, w = [k for k in range(3) if k != s]
            self.axes = (s, u, w)
        s, u, w = self.axes
        cell = max(cell, math.sqrt(float(ext[u] * ext[w]) / MAX_ROWS), 1e-9)
        self.cell, self.inv, self.origin = cell, 1.0 / cell, lo
        self.nu = int(ext[u] * self.inv) + 1
        self.nw = int(ext[w] * self.inv) + 1
        self.width = 2.0 * float(ext[s]) + 1.0
        iu = ((c[u] - lo[u]) * self.inv).astype(np.int64)
        iw = ((c[w] - lo[w]) * self.inv).astype(np.int64)
        row = iu * self.nw + iw
        comp = row * self.width + (c[s] - lo[s])
        perm = np.argsort(comp, kind="stable")
        self.order = self.order.take(perm)
        self.comp = comp.take(perm)
        self.centre = np.take(c, perm, axis=1)
        self.half = np.take(half, self.order, axis=1)
        self.box_lo, self.box_hi = self.centre - self.half, self.centre + self.half
        self.reach = self.half.max(axis=1) if self.half.shape[1] else np.zeros(3)
        self.bounds: RowBounds | None = None
        rows = self.nu * self.nw
        if rows <= MAX_ROWS_PER_BOX * max(self.order.size, 1):
            size = 1.0 + float(np.abs(self.box_lo).max() if self.order.size else 0.0) + float(
                np.abs(self.box_hi).max() if self.order.size else 0.0)
            self.bounds = RowBounds(row.take(perm), self.box_lo, self.box_hi, self.half[s],
                                    rows, 1e-9 * size)
        self._mark_occupied()

    def _mark_occupied(self) -> None:
        """A coarse bitmap of the cells (edge :attr:`coarse`, at least every small box's
        extent, so a box touches at most 2 x 2 x 2 of them) that small boxes touch: a query box
        no larger than a coarse cell whose corners all fall in empty cells overlaps no small box
        and is skipped (the skirt's far side, most of a cloth away from a body)."""
        self.occupied: NDArray[np.bool_] | None = None
        if self.half.shape[1] == 0:
            return
        lo, hi = self.box_lo, self.box_hi
        self.coarse = max(float(2.0 * self.reach.max()), self.cell, 1e-9)
        self.coarse_origin = lo.min(axis=1) - self.coarse
        dims = ((hi.max(axis=1) - self.coarse_origin) / self.coarse).astype(np.int64) + 2
        if int(np.prod(dims)) > (1 << 24):
            return
        self.dims = dims
        occupied = np.zeros(int(np.prod(dims)), dtype=bool)
        for corner in self._corner_cells(lo, hi):
            occupied[corner] = True
        self.occupied = occupied

    def _corner_cells(self, lo: F, hi: F) -> list[NDArray[np.int64]]:
        """Flat coarse-cell indices of the 8 corners of boxes [lo, hi] (3, B), clipped."""
        a = np.clip(((lo - self.coarse_origin[:, None]) / self.coarse).astype(np.int64), 0,
                    (self.dims - 1)[:, None])
        b = np.clip(((hi - self.coarse_origin[:, None]) / self.coarse).astype(np.int64), 0,
                    (self.dims - 1)[:, None])
        out = []
        for x in (a[0], b[0]):
            for y in (a[1], b[1]):
                for z in (a[2], b[2]):
                    out.append((x * self.dims[1] + y) * self.dims[2] + z)
        return out

    def _maybe(self, lo: F, hi: F) -> I:
        """The query boxes that may overlap a small box (see :meth:`_mark_occupied`)."""
        if self.occupied is None:
            return np.arange(lo.shape[1], dtype=np.intp)
        keep = ((hi - lo) > self.coarse).any(axis=0)
        for corner in self._corner_cells(lo, hi):
            keep |= self.occupied.take(corner)
        return np.flatnonzero(keep)

    def query(self, lo: F, hi: F) -> tuple[I, I]:
        """All (query, box) pairs whose boxes overlap, for query boxes ``[lo, hi]`` ((3, Q),
        [m]); ordered by query, then row, then key (a fixed order for a given input)."""
        empty = np.zeros(0, dtype=np.intp)
        if self.axes is None or self.count == 0 or lo.shape[1] == 0:
            return empty, empty
        bq, bb = self._query_big(lo, hi)
        if self.order.size == 0:
            return bq, bb
        live = self._maybe(lo, hi)
        pair_q, pair_b = self._query_rows(np.take(lo, live, axis=1), np.take(hi, live, axis=1))
        pair_q = live.take(pair_q)
        if bq.size == 0:
            return pair_q, pair_b
        q = np.concatenate([pair_q, bq])
        b = np.concatenate([pair_b, bb])
        order = np.argsort(q, kind="stable")
        return q.take(order), b.take(order)

    def _query_rows(self, lo: F, hi: F) -> tuple[I, I]:
        """(query, small box) pairs from the sorted rows."""
        assert self.axes is not None
        s, u, w = self.axes
        box, start, stop = row_runs(self, lo, hi, self.reach, self.bounds)
        count = np.maximum(stop - start, 0)
        pair_q = np.repeat(box, count)
        offs = np.arange(pair_q.size, dtype=np.int64) - np.repeat(
            np.cumsum(count) - count - start, count)
        for k in (u, w, s):  # exact overlap, one axis at a time on the survivors
            keep = (self.box_hi[k].take(offs) >= lo[k].take(pair_q)) & (
                self.box_lo[k].take(offs) <= hi[k].take(pair_q))
            pair_q, offs = pair_q[keep], offs[keep]
        return pair_q, self.order.take(offs)

    def _query_big(self, lo: F, hi: F) -> tuple[I, I]:
        """(query, big box) pairs by a direct overlap test, in blocks of queries."""
        nb = self.big.size
        if nb == 0:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty
        if self.big_grid is not None:
            q, b = self.big_grid.query(lo, hi)
            return q, self.big.take(b)
        qs, bs = [], []
        step = max(1, (1 << 20) // nb)
        for start in range(0, lo.shape[1], step):
            ql, qh = lo[:, start:start + step, None], hi[:, start:start + step, None]
            hit = ((qh >= self.big_lo[:, None, :]) & (ql <= self.big_hi[:, None, :])).all(axis=0)
            q, b = np.nonzero(hit)
            qs.append(q + start)
            bs.append(self.big.take(b))
        return np.concatenate(qs).astype(np.intp), np.concatenate(bs).astype(np.intp)


class PairList:
    """Candidate pairs of query boxes against a :class:`BoxGrid`, kept over the iterations of
    a substep (a Verlet list, Verlet 1967).

    The first call of a substep searches each query box grown by ``margin`` [m] and remembers
    the grown box. Later calls search again only the queries whose box has left its remembered
    box (and drop their old pairs): every pair whose boxes overlap now is still listed, so the
    list is a superset of an exact search, and the narrow phase gives the same result.
    """

    def __init__(self, margin: float) -> None:
        self.margin = margin
        self.lo: F | None = None
        self.hi = np.zeros((3, 0))
        self.q: I = np.zeros(0, dtype=np.intp)
        self.b: I = np.zeros(0, dtype=np.intp)

    def reset(self, margin: float) -> None:
        """Forget the pairs (a new substep)."""
        self.margin = margin
        self.lo = None

    def _search(self, items: I, grid: BoxGrid, region: tuple[F, F]) -> tuple[I, I]:
        assert self.lo is not None
        lo, hi = np.take(self.lo, items, axis=1), np.take(self.hi, items, axis=1)
        near = np.flatnonzero((hi >= region[0][:, None]).all(axis=0)
                              & (lo <= region[1][:, None]).all(axis=0))
        q, b = grid.query(np.take(lo, near, axis=1), np.take(hi, near, axis=1))
        return items.take(near.take(q)), b

    def pairs(self, lo: F, hi: F, active: I, grid: BoxGrid, region: tuple[F, F]
              ) -> tuple[I, I]:
        """(query, box) pairs for query boxes ``[lo, hi]`` ((3, Q) [m]) of the ``active``
        queries (indices, ascending), against ``grid``; queries whose box misses ``region``
        (lo (3,), hi (3,)) have none. Ordered by query."""
        if self.lo is None:
            self.lo, self.hi = lo - self.margin, hi + self.margin
            self.q, self.b = self._search(active, grid, region)
            return self.q, self.b
        out = ((lo < self.lo) | (hi > self.hi)).any(axis=0)  # every query, then the active
        if active.size != lo.shape[1]:  # (all of them: ascending, distinct, 0 .. Q - 1)
            out = out.take(active)
        if not out.any():
            return self.q, self.b
        items = active[out]
        self.lo[:, items] = np.take(lo, items, axis=1) - self.margin
        self.hi[:, items] = np.take(hi, items, axis=1) + self.margin
        moved = np.zeros(lo.shape[1], dtype=bool)
        moved[items] = True
        keep = ~moved.take(self.q)
        nq, nb = self._search(items, grid, region)
        q = np.concatenate([self.q[keep], nq])
        b = np.concatenate([self.b[keep], nb])
        order = np.argsort(q, kind="stable")
        self.q, self.b = q.take(order), b.take(order)
        return self.q, self.b
