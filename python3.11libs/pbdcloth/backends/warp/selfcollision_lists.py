"""The Warp stage's candidate lists: the numpy stage's Verlet lists with partial updates.

Same method as :class:`pbdcloth.selfcollision.lists.CandidateLists` (read its module docstring:
reference positions, movers past half the skin, the large skin from the rest gap while partial
updates follow, the small one while the cloth crumples, a full build past ``partial_limit``
movers), decided on the device so that a whole frame stays one recording:

1. the mean displacement since the references (a fixed-order two-level sum), each particle's
   deviation from it and the counts of movers (past half the current skin) and of fast
   particles (past half the large skin);
2. one thread decides: nothing, a partial update or a full build (and its skin);
3. the references: all positions at a full build, ``P - mean`` for the movers at a partial one;
4. row grids (:mod:`.selfcollision_list_kernels`) over the vertices, the triangle boxes'
   centres (partial updates) and the edge midpoints, all at the references; the owners that
   moved are searched again against everything, the movers against the owners that did not;
   each owner's slots are sorted and gathered into the flat lists the narrow phase reads.

The lists after any sequence of updates are those of a full build at the reference positions,
which is what the numpy stage's partial updates give: the two are compared pair for pair over
substeps of the fold scene (tests/test_warp_selfcollision.py, float64 kernels).
"""

from __future__ import annotations

import math
from typing import Any

import warp as wp

from ...selfcollision.lists import list_radii
from ...selfcollision.tuning import SelfCollisionTuning
from . import selfcollision_list_kernels as lk

__all__ = ["DeviceLists", "RowGrid"]


def table_bits(n: int) -> int:
    """log2 of a key table with at least 2 n keys."""
    return max(4, math.ceil(math.log2(max(2 * n, 2))))


class RowGrid:
    """Row grid over M points (:mod:`.selfcollision_list_kernels`): keys (M,), key counts and
    starts (B + 1,), entries (M,) point indices by key; float and int parameters."""

    def __init__(self, m: int, device: Any, block: int, scan_type: Any, scalar: Any) -> None:
        self.m = m
        self.buckets = 1 << table_bits(m)
        self.mask = self.buckets - 1
        self.lo = wp.zeros(3, dtype=scalar, device=device)
        self.hi = wp.zeros(3, dtype=scalar, device=device)
        self.gf = wp.zeros(lk.GF_SIZE, dtype=scalar, device=device)
        self.gi = wp.zeros(4, dtype=wp.int32, device=device)
        self.key = wp.zeros(m, dtype=wp.int32, device=device)
        self.key_count = wp.zeros(self.buckets, dtype=wp.int32, device=device)
        self.start = wp.zeros(self.buckets + 1, dtype=wp.int32, device=device)
        self.cursor = wp.zeros(self.buckets, dtype=wp.int32, device=device)
        self.entries = wp.zeros(m, dtype=wp.int32, device=device)
        vec3 = wp.types.vector(3, scalar)
        self.pos = wp.zeros(m, dtype=vec3, device=device)
        """The points in entry order [m]."""
        self.half = wp.zeros(m, dtype=vec3, device=device)
        """Half extents of the points' boxes in entry order (box grids) [m]."""
        self.scan = scan_type(self.buckets, device, block)

    def issue_build(self, launch: Any, k: Any, kl: Any, points: Any, radius: Any,
                    extent: Any, scale: Any, gate: Any, halves: Any = None,
                    native: Any = None) -> None:
        """Bounds, sweep axis and cell sizes, keys, a counting sort of the keys (entries in
        key order; their order within a key does not matter: the owners' slots are sorted);
        one native loop where ``native`` (the CPU's native kernels) is given."""
        if native is not None:
            boxes = int(halves is not None)
            launch(native.grid_build_all, 1, [points, halves if boxes else points, boxes,
                                              radius, extent, scale, gate, self.lo, self.hi,
                                              self.gf, self.gi, self.mask, self.key,
                                              self.key_count, self.start, self.entries,
                                              self.pos, self.half])
            return
        launch(kl.bounds_reset, 1, [self.lo, self.hi, gate])
        launch(kl.bounds, self.m, [points, gate, self.lo, self.hi])
        launch(kl.grid_setup, 1, [self.lo, self.hi, radius, extent, scale, gate, self.gf,
                                  self.gi])
        launch(k.zero_ints, self.buckets, [self.key_count, gate])
        launch(k.zero_ints, self.buckets, [self.cursor, gate])
        launch(kl.grid_keys, self.m, [points, self.gf, self.gi, self.mask, gate, self.key,
                                      self.key_count])
        self.scan.issue(launch, k, self.key_count, self.start, gate)
        boxes = int(halves is not None)
        launch(kl.grid_fill, self.m, [self.key, self.start, points,
                                      halves if boxes else points, boxes, gate, self.cursor,
                                      self.entries, self.pos, self.half])

    def query_args(self) -> list[Any]:
        return [self.gf, self.gi, self.mask, self.start, self.entries]


class DeviceLists:
    """Reference positions, movers and the device state of the list updates of one model.

    Args:
        n, n_tris, n_edges: particle, triangle and edge counts.
        mean_edge: mean rest edge length [m] (the grids' cell size).
        k, kl: the stage's and the list kernels; device; tuning; scan_type: the stage's
            fixed-order scan (``_Scan``).
    """

    def __init__(self, n: int, n_tris: int, n_edges: int, mean_edge: float, k: Any, kl: Any,
                 device: Any, tuning: SelfCollisionTuning, scan_type: Any,
                 native: Any = None, threads: int = 1) -> None:
        s, v3 = k.scalar, k.vec3
        block = tuning.warp_block
        self.n, self.n_tris, self.n_edges = n, n_tris, n_edges
        self.k, self.kl, self.tuning = k, kl, tuning
        self.native = native
        """The CPU's native searches (:mod:`.selfcollision_native`), or None."""
        self.threads = threads
        """POSIX threads of the native searches."""
        self.scalar = s
        self.mean_edge = mean_edge
        dev = device
        self.ref = wp.zeros(n, dtype=v3, device=dev)
        """Reference positions of the lists [m], (N,)."""
        self.mover = wp.zeros(n, dtype=wp.int32, device=dev)
        """1 for the particles refreshed by the last update (all at a full build)."""
        self.state = wp.zeros(lk.LS_SIZE, dtype=wp.int32, device=dev)
        self.force = wp.ones(1, dtype=wp.int32, device=dev)
        self.skin = wp.zeros(1, dtype=s, device=dev)
        self.radius = wp.zeros(1, dtype=s, device=dev)
        self.mean = wp.zeros(1, dtype=v3, device=dev)
        self.sum_blocks = wp.zeros(max(1, (n + block - 1) // block), dtype=v3, device=dev)
        self.partial = wp.zeros(1, dtype=wp.int32, device=dev)
        self.tri_mid = wp.zeros(n_tris, dtype=v3, device=dev)
        self.tri_half = wp.zeros(n_tris, dtype=v3, device=dev)
        self.tri_maxhalf = wp.zeros(1, dtype=s, device=dev)
        self.edge_mid = wp.zeros(n_edges, dtype=v3, device=dev)
        self.edge_half = wp.zeros(n_edges, dtype=v3, device=dev)
        self.edge_maxhalf = wp.zeros(1, dtype=s, device=dev)
        self.vertex_grid = RowGrid(n, dev, block, scan_type, s)
        self.tri_grid = RowGrid(n_tris, dev, block, scan_type, s)
        self.edge_grid = RowGrid(n_edges, dev, block, scan_type, s)
        self.edge_scratch = (wp.zeros(3 * n_edges, dtype=wp.int32, device=dev),
                             wp.zeros(13 * n_edges, dtype=s, device=dev))
        """The native edge search's entries in grid order: ends and moving flags; sphere
        radii, first ends and directions."""

    def _compact(self, launch: Any, owners: int, args: list[Any]) -> None:
        """The partial update's ``compact`` of one family's slots (native on the CPU)."""
        if self.native is not None:
            launch(self.native.compact_all, 1, [*args, self.threads])
        else:
            launch(self.kl.compact, owners, args)

    def issue(self, launch: Any, p: Any, inv_mass: Any, tris: Any, edges: Any, thickness: float, clamp: float,
              large_skin: float, pt: Any, ee: Any, pt_excluded: tuple[Any, Any],
              ee_excluded: tuple[Any, Any], gate: Any, stats: Any) -> None:
        """The launches of one update from the predicted positions p: decide, refresh the
        references, search, fill the families' slots and gather (``pt``, ``ee``: the stage's
        ``_Candidates``; their ``issue_finish`` runs under ``gate``, set here to "the lists
        changed")."""
        k, kl, s = self.k, self.kl, self.scalar
        n, tune = self.n, self.tuning
        r, small = list_radii(thickness, clamp, tune)
        block = tune.warp_block
        blocks = self.sum_blocks.shape[0]
        launch(k.sum_blocks, blocks, [p, self.ref, 1, inv_mass, 0, block,
                                      self.sum_blocks])
        launch(k.sum_final, 1, [self.sum_blocks, s(1.0 / n), self.mean])
        launch(kl.deviation, n, [p, self.ref, self.mean, self.skin, s(large_skin), self.state,
                                 self.mover])
        launch(kl.decide, 1, [self.state, self.force, s(tune.partial_limit * n), s(r),
                              s(small), s(large_skin), self.skin, self.radius, gate, stats])
        launch(kl.refresh, n, [p, self.mean, self.state, self.ref, self.mover])
        launch(kl.partial_gate, 1, [self.state, self.partial])
        scale = s(tune.cell_scale)
        extent = s(self.mean_edge)
        ref, mover, st = self.ref, self.mover, self.state
        # Point-triangle: triangles that moved against the vertices; movers against the
        # triangles that did not.
        vg = self.vertex_grid
        vg.issue_build(launch, k, kl, ref, self.radius, extent, scale, gate,
                       native=self.native)
        self._compact(launch, self.n_tris, [tris, mover, edges, 0, st, pt.slots,
                                    pt.counts, pt.keys])
        pt_args = [ref, tris, mover, self.radius, *vg.query_args(), *pt_excluded, st, pt.slots,
                   pt.counts, pt.keys, pt.need_slots]
        if self.native is not None:
            launch(self.native.pt_triangles_all, 1, [*pt_args, vg.pos, self.threads])
        else:
            launch(kl.pt_triangles, self.n_tris, pt_args)
        launch(kl.zero_scalar, 1, [self.tri_maxhalf, self.partial])
        tri_args = [ref, tris, st, self.tri_mid, self.tri_half, self.tri_maxhalf]
        if self.native is not None:
            launch(self.native.tri_boxes_all, 1, tri_args)
        else:
            launch(kl.tri_boxes, self.n_tris, tri_args)
        tg = self.tri_grid
        tg.issue_build(launch, k, kl, self.tri_mid, self.radius, extent, scale, self.partial,
                       self.tri_half, self.native)
        movers_args = [ref, tris, mover, self.radius, self.tri_mid, self.tri_half,
                       self.tri_maxhalf, *tg.query_args(), *pt_excluded, st, pt.slots,
                       pt.counts, pt.keys, pt.need_slots]
        if self.native is not None:
            launch(self.native.pt_movers_all, 1, [*movers_args, tg.pos, tg.half, self.threads])
        else:
            launch(kl.pt_movers, n, movers_args)
        pt.issue_finish(launch, k, kl, st, 0, tris, edges, gate, self.native,
                         self.threads)
        # Edge-edge: edges that moved against all edges, each pair in its lower edge's slots.
        launch(kl.zero_scalar, 1, [self.edge_maxhalf, gate])
        edge_args = [ref, edges, st, self.edge_mid, self.edge_half, self.edge_maxhalf]
        if self.native is not None:
            launch(self.native.edge_boxes_all, 1, edge_args)
        else:
            launch(kl.edge_boxes, self.n_edges, edge_args)
        eg = self.edge_grid
        eg.issue_build(launch, k, kl, self.edge_mid, self.radius, extent, scale, gate,
                       self.edge_half, self.native)
        self._compact(launch, self.n_edges, [tris, mover, edges, 1, st, ee.slots,
                                    ee.counts, ee.keys])
        ee_args = [ref, edges, mover, self.radius, self.edge_mid, self.edge_half,
                   self.edge_maxhalf, *eg.query_args(), *ee_excluded, st, ee.slots, ee.counts,
                   ee.keys, ee.need_slots]
        if self.native is not None:
            launch(self.native.ee_edges_all, 1, [*ee_args, eg.pos, eg.half, *self.edge_scratch,
                                                   self.threads])
        else:
            launch(kl.ee_edges, self.n_edges, ee_args)
        ee.issue_finish(launch, k, kl, st, 1, tris, edges, gate, self.native,
                         self.threads)
