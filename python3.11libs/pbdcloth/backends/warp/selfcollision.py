"""Cloth self-collision on the Warp device: the numpy stage's method as kernels (CPU or CUDA).

Same semantics as :mod:`pbdcloth.selfcollision.stage` (read its module docstring: clamp,
Verlet candidate lists with partial updates, sided contacts, friction, Jacobi averaging, the
skipping of unchanged pairs, fail-safe), with the device-side data structures below.
Everything is issued into the Warp backend's recorded frame (one graph for the whole frame):
nothing waits for the host inside a frame; what the numpy stage decides on the host (a partial
update or a full build, its skin, whether the passes stop) is decided by one-thread kernels
and read by the others from device flags.

Substep (``h`` the substep, ``t`` = ``self_thickness``, ``c`` = ``self_clamp``):

1. After predict and pins: the centre-of-mass velocity of the free particles (a fixed-order
   two-level sum of m v), then each free particle's velocity relative to it clamped to
   ``c t / h``; the clamped centre-of-mass velocity is summed the same way and every free
   particle shifted back by the difference (momentum kept) and its prediction redone.
2. Candidate lists (:mod:`.selfcollision_lists`): the numpy stage's Verlet lists, reference
   positions, movers past half the skin, a partial update for the movers only or a full build
   (large skin from the rest gap while partial updates follow, the small one while the cloth
   crumples), searched on row grids of sorted cell keys (:mod:`.selfcollision_list_kernels`).
   Each triangle (edge) keeps its partners sorted in its own slots; a fixed-order prefix sum
   gathers them into the flat lists, so their order does not depend on thread order. Each
   particle then gets the list of (candidate, corner) it appears in, sorted. The lists equal
   the numpy stage's pair for pair after any sequence of updates (tested).
3. Narrow phase, after the obstacles in every solver iteration: up to ``passes`` Jacobi passes
   (point-triangle, then edge-edge, as numpy), each one kernel over the family's pairs
   (``pair_eval``: the pairs whose slack the motion since their last evaluation can have used
   up are evaluated: closest points, side, contact, its correction ``lambda n`` with friction,
   and an integer count of contacts per moving particle), one over the contacts (each
   correction divided by the largest count among its moving particles) and one per particle
   (the sum of its corrections over its sorted list, added to its ``moved``). A device flag
   ends the passes once no contact is deeper than ``resolved t``. Then the fail-safe: up to
   ``revert_rounds`` rounds that put the free particles of pairs found on the wrong side back
   to their substep start. ``moved`` (per particle, summed over the substep) and each pair's
   slack and base are those of :class:`pbdcloth.selfcollision.stage._Tracked`; a pair is
   evaluated again once twice its particles' motion plus ``SLACK_MARGIN t`` reaches its slack,
   so the result is that of evaluating every pair (``skip_unchanged=False``; tested bit for
   bit on the fold scene).

Capacity: candidate buffers (the per-owner slots and the flat list) are allocated for a guess
and never overrun (a pair past the end is counted, not written). After each frame the host
reads the largest count needed; when it exceeded the buffers they grow and the frame is run
again from its start with a full build at its first substep (so a run that grew its buffers
differs from one that started with large ones by that build; both are deterministic).

CPU: the grid builds, the candidate searches, the slot loops and the narrow phase's loops over
the pairs run as native loops (:mod:`.selfcollision_native`: the same arithmetic, the same lists
and positions bit for bit),
which start POSIX threads of their own (``warp_cpu_threads``), as Warp runs every CPU launch
on the calling thread and the frame is one graph replay. Cost: ``scripts/bench_selfcollision.py``
(README, "Self-collision on Warp").

Names in ``code`` (``passes``, ``resolved``, ...) are fields of the
:class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning` passed in, as are the first buffer
sizes (``warp_initial_per_query``, ``warp_min_capacity``, ``warp_initial_slots``) and the
thread block length of the sums and scans (``warp_block``).

Determinism: no float sum depends on thread order (:mod:`.selfcollision_kernels`); integer
counters are order-free. Two runs on the CPU device are bit-identical (tested); CUDA is
untested.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import warp as wp

from ...cloth.model import ClothModel
from ...selfcollision.lists import CandidateLists
from ...selfcollision.stats import NullStats
from ...selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from ...settings import ClothSettings
from . import selfcollision_kernels as kk
from .selfcollision_list_kernels import build_list_kernels
from .selfcollision_lists import DeviceLists
from .selfcollision_native import build_native_search

__all__ = ["SLACK_MARGIN", "SUMS", "WarpSelfCollision"]

#: How a pass adds the contacts' corrections to the particles, both in the order of the
#: candidate list: "scatter" adds each contact's share to its particles contact by contact (one
#: thread on the CPU, so in list order; on CUDA float atomics would add them in thread order);
#: "gather" sums, per particle, over its sorted list of (contact, corner) entries (every
#: device, deterministic; the default on CUDA). On the CPU both give the same bits (tested).
SUMS = frozenset({"scatter", "gather"})

#: A pair is evaluated again once the motion of its particles can have used up its slack less
#: this fraction of the thickness: the round-off of the kernels' distances (float32: ~1e-7 m
#: at coordinates of a metre) stays far below it, so a skipped pair is one that an evaluation
#: would also find no contact (the narrow phase's result is that of evaluating every pair).
SLACK_MARGIN = 1e-3

class _Scan:
    """Fixed-order exclusive prefix sum of ``counts[:n]`` into ``offsets[:n + 1]``, in thread
    blocks of ``block``."""

    def __init__(self, n: int, device: Any, block: int) -> None:
        self.n = n
        self.block = block
        self.blocks = max(1, (n + block - 1) // block)
        self.block_sums = wp.zeros(self.blocks, dtype=wp.int32, device=device)
        self.block_offsets = wp.zeros(self.blocks, dtype=wp.int32, device=device)
        self.total = wp.zeros(1, dtype=wp.int32, device=device)

    def issue(self, launch: Any, k: Any, counts: Any, offsets: Any, gate: Any,
              native: Any = None) -> None:
        """The scan's kernels where ``gate``; one native loop where ``native`` (the CPU's
        native kernels) is given (the same integers)."""
        if native is not None:
            launch(native.scan_all, 1, [counts, self.n, gate, offsets, self.total])
            return
        launch(k.scan_blocks, self.blocks, [counts, self.n, self.block, gate, offsets,
                                            self.block_sums])
        launch(k.scan_top, 1, [self.block_sums, gate, self.block_offsets, self.total])
        launch(k.scan_add, self.n + 1, [offsets, self.n, self.block, self.block_offsets, gate,
                                        self.total])


class _Candidates:
    """One family's candidate list (capacity C): idx (C,) vec4i particles; per-query slots
    (S each: scratch (Q S,) pairs and their sort keys, filled in one pass), counts and
    offsets; per-particle incidence lists; per-pass contact results. Scans in thread blocks
    of ``block``."""

    def __init__(self, queries: int, n: int, capacity: int, slots: int, device: Any,
                 k: Any, block: int, scatter: bool) -> None:
        v3, v4 = k.vec3, k.vec4
        self.scatter = scatter
        """Corrections are added contact by contact (no incidence lists: :data:`SUMS`)."""
        self.queries = queries
        self.capacity = capacity
        self.slots = slots
        self.workers = capacity if wp.get_device(device).is_cuda else 1
        """Threads of the kernels over the list: each takes every ``workers``-th pair below
        the count (one thread on the CPU, where threads run one after another anyway and a
        launch over the whole capacity costs a call per empty slot)."""
        self.keys = wp.zeros(queries * slots, dtype=wp.int32, device=device)
        """Each owner's partners in its ``slots`` slots, sorted (kept between updates)."""
        self.need_slots = wp.zeros(1, dtype=wp.int32, device=device)
        self.counts = wp.zeros(queries, dtype=wp.int32, device=device)
        self.kept = wp.zeros(queries, dtype=wp.int32, device=device)
        self.offsets = wp.zeros(queries + 1, dtype=wp.int32, device=device)
        self.scan = _Scan(queries, device, block)
        self.idx = wp.zeros(capacity, dtype=wp.vec4i, device=device)
        self.count = wp.zeros(1, dtype=wp.int32, device=device)
        self.need = wp.zeros(1, dtype=wp.int32, device=device)
        self.inc_n = wp.zeros(n, dtype=wp.int32, device=device)
        self.inc_start = wp.zeros(n + 1, dtype=wp.int32, device=device)
        self.inc_cursor = wp.zeros(n, dtype=wp.int32, device=device)
        self.inc = wp.zeros(4 * capacity, dtype=wp.int32, device=device)
        self.inc_scan = _Scan(n, device, block)
        self.act = wp.zeros(capacity, dtype=wp.int32, device=device)
        self.slack_c = wp.zeros(capacity, dtype=k.scalar, device=device)
        """Contact slack of each pair [m] (:class:`pbdcloth.selfcollision.stage._Tracked`)."""
        self.slack_x = wp.zeros(capacity, dtype=k.scalar, device=device)
        """Fail-safe slack of each pair [m]."""
        self.base = wp.zeros(capacity, dtype=k.scalar, device=device)
        """Least ``moved`` of the pair's particles at its last evaluation [m]."""
        self.corr = wp.zeros(capacity, dtype=v3, device=device)
        self.wc = wp.zeros(capacity, dtype=v4, device=device)
        self.n = n

    def issue_finish(self, launch: Any, k: Any, kl: Any, list_state: Any, family: int,
                     tris: Any, edges: Any, gate: Any, kn: Any = None, threads: int = 1
                     ) -> None:
        """After the searches: each owner's slots sorted, offsets, pairs gathered as quads,
        the count and (gathered sums) the per-particle incidence lists (the sorting and the
        gathering as native loops on ``threads`` threads where ``kn``, the CPU's native
        kernels, is given)."""
        sort_args = [list_state, self.slots, self.counts, self.keys, self.kept]
        if kn is not None:
            launch(kn.sort_slots_all, 1, [*sort_args, threads])
        else:
            launch(kl.sort_slots, self.queries, sort_args)
        self.scan.issue(launch, k, self.kept, self.offsets, gate, kn)
        gather_args = [list_state, family, tris, edges, self.slots, self.kept, self.offsets,
                       self.keys, self.idx]
        if kn is not None:
            launch(kn.gather_all, 1, [*gather_args, threads])
        else:
            launch(kl.gather, self.queries, gather_args)
        launch(k.finish_candidates, 1, [self.scan.total, self.capacity, gate, self.count,
                                        self.need])
        if self.scatter:
            return
        launch(k.zero_ints, self.n, [self.inc_n, gate])
        launch(k.zero_ints, self.n, [self.inc_cursor, gate])
        w = self.workers
        launch(k.incidence_count, w, [self.idx, self.count, gate, self.inc_n, w])
        self.inc_scan.issue(launch, k, self.inc_n, self.inc_start, gate)
        launch(k.incidence_fill, w, [self.idx, self.count, self.inc_start, gate,
                                     self.inc_cursor, self.inc, w])
        launch(k.sort_segments, self.n, [self.inc_start, gate, self.inc])


class WarpSelfCollision:
    """Self-collision of one model on one Warp device, issued into the backend's frame.

    Args:
        model: the cloth model (topology, inverse masses, rest shape).
        k: the backend's kernel namespace (its ``scalar``, ``vec3``, ``vec4`` types).
        device: the Warp device.
        tuning: the method's constants (the numpy stage's, and the ``warp_*`` buffer sizes).
        sums: how a pass adds the contacts' corrections (:data:`SUMS`; None: by device).
        native: run the candidate searches as the one-thread native loops of
            :mod:`.selfcollision_native` (the same pairs; None: on the CPU).
    """

    def __init__(self, model: ClothModel, k: Any, device: Any,
                 tuning: SelfCollisionTuning = DEFAULT_TUNING, sums: str | None = None,
                 native: bool | None = None) -> None:
        self.model = model
        if sums is None:
            sums = "gather" if wp.get_device(device).is_cuda else "scatter"
        if sums not in SUMS:
            raise ValueError(f"sums must be one of {sorted(SUMS)}, got {sums!r}")
        self.sums = sums
        """How each pass adds the contacts' corrections to the particles (:data:`SUMS`)."""
        self.tuning = tuning
        self.device = device
        self.kb = k
        precision = "float32" if k.scalar is wp.float32 else "float64"
        self.k = kk.build_self_kernels(precision)
        self.kl = build_list_kernels(precision)
        if native is None:
            native = not wp.get_device(device).is_cuda
        if native and wp.get_device(device).is_cuda:
            raise ValueError("the native searches run on the CPU only")
        self.kn = build_native_search(precision) if native else None
        self.threads = max(1, min(int(tuning.warp_cpu_threads), os.cpu_count() or 1))
        """POSIX threads of the native pair passes (:mod:`.selfcollision_native`)."""
        self.modules = [m.module for m in (self.k, self.kl, self.kn) if m is not None]
        """The Warp modules of the stage's kernels (loaded before a recording)."""
        self.np_scalar = np.float32 if k.scalar is wp.float32 else np.float64
        self.host = CandidateLists(model, tuning, NullStats())
        """The numpy stage's lists, for the rest exclusions (host, cached per thickness)."""
        block = tuning.warp_block
        n = model.particle_count
        self.n = n
        dev = device
        tris = model.topology.triangles.astype(np.int32)
        edges = model.topology.edges.astype(np.int32)
        self.tris: Any = wp.array(tris, dtype=wp.vec3i, device=dev)
        self.edges: Any = wp.array(edges, dtype=wp.vec2i, device=dev)
        self.n_tris = len(tris)
        self.n_edges = len(edges)
        rest = model.mesh.positions
        lengths = np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1)
        self.mean_edge = float(lengths.mean()) if lengths.size else 0.0
        v3 = k.vec3
        s = k.scalar
        self.mean = wp.zeros(1, dtype=v3, device=dev)
        self.mean_after = wp.zeros(1, dtype=v3, device=dev)
        free_mass = model.mass[model.inv_mass > 0.0]
        self.free_mass = float(free_mass.sum()) if free_mass.size else 1.0
        self.mass: Any = wp.array(model.mass.astype(self.np_scalar), dtype=s, device=dev)
        self.sum_blocks = wp.zeros(max(1, (n + block - 1) // block), dtype=v3, device=dev)
        self.rebuild = wp.zeros(1, dtype=wp.int32, device=dev)
        self.lists = DeviceLists(n, self.n_tris, self.n_edges, self.mean_edge, self.k,
                                 self.kl, dev, tuning, _Scan, self.kn, self.threads)
        """Reference positions, movers and the update state of the candidate lists."""
        self.state = wp.zeros(kk.ST_SIZE, dtype=wp.int32, device=dev)
        self.deep = wp.zeros(1, dtype=s, device=dev)
        self.flag = wp.zeros(n, dtype=wp.int32, device=dev)
        self.touch = wp.zeros(n, dtype=wp.int32, device=dev)
        self.reverted = wp.zeros(n, dtype=wp.int32, device=dev)
        self.dp = wp.zeros(n, dtype=v3, device=dev)
        """Each particle's summed correction of the current pass's half (scattered sums)."""
        self.cnt = wp.zeros(n, dtype=wp.int32, device=dev)
        """Contacts of the current pass's half in which each particle moves."""
        self.moved = wp.zeros(n, dtype=s, device=dev)
        """Length of every move of each particle since the substep's first narrow phase [m]."""
        self.last = wp.zeros(n, dtype=v3, device=dev)
        """Positions at the end of the last narrow phase [m]."""
        self.stats = wp.zeros(kk.STAT_SIZE, dtype=wp.int32, device=dev)
        self._excl_for: float | None = None
        self.pt_excluded: Any = None
        self.ee_excluded: Any = None
        per_query, least = tuning.warp_initial_per_query, tuning.warp_min_capacity
        self.pt = _Candidates(self.n_tris, n, max(least, per_query * self.n_tris),
                              tuning.warp_initial_slots, dev, k, block, sums == "scatter")
        self.ee = _Candidates(self.n_edges, n, max(least, per_query * self.n_edges),
                              tuning.warp_initial_slots, dev, k, block, sums == "scatter")

    # --- host side, once per recording or frame -----------------------------------------------
    def prepare(self, settings: ClothSettings) -> None:
        """Rest exclusions for this thickness (host, cached) and a forced rebuild."""
        t = float(settings.self_thickness)
        if self._excl_for != t:
            excl = self.host.exclusions(t)
            self.pt_excluded = self._per_query(excl.point_triangle, self.n_tris, False)
            self.ee_excluded = self._per_query(excl.edge_edge, self.n_edges, True)
            self._excl_for = t
        self.lists.force.fill_(1)

    def _per_query(self, keys: np.ndarray, queries: int, query_first: bool
                   ) -> tuple[Any, Any]:
        """Rest-exclusion keys ``partner * Q + query`` (point-triangle: vertex * T + triangle)
        or ``query * Q + partner`` (edge-edge: i * E + j, i < j, queried by i) as per-query
        lists: (start (Q + 1,), partners (K,)), each query's partners ascending."""
        keys = np.asarray(keys, dtype=np.int64)
        if query_first:
            query, partner = keys // queries, keys % queries
        else:
            query, partner = keys % queries, keys // queries
        order = np.lexsort((partner, query))
        start = np.zeros(queries + 1, dtype=np.int32)
        np.cumsum(np.bincount(query, minlength=queries), out=start[1:])
        dev = self.device
        return (wp.array(start, dtype=wp.int32, device=dev),
                wp.array(partner[order].astype(np.int32), dtype=wp.int32, device=dev))

    def begin_frame(self) -> None:
        """Zero the frame's counters and the capacity demand."""
        self.stats.zero_()
        for fam in (self.pt, self.ee):
            fam.need.zero_()
            fam.need_slots.zero_()

    def grow_if_needed(self) -> bool:
        """After a frame: grow the candidate buffers that overflowed (True: the frame must be
        re-recorded and run again from its start; its first substep rebuilds the lists, which
        the new buffers do not hold)."""
        grew = False
        for name in ("pt", "ee"):
            fam: _Candidates = getattr(self, name)
            need = int(fam.need.numpy()[0])
            need_slots = int(fam.need_slots.numpy()[0])
            if need > fam.capacity or need_slots > fam.slots:
                cap = fam.capacity
                if need > cap:
                    cap = int(need * 1.5) + self.tuning.warp_min_capacity
                slots = max(fam.slots, need_slots + need_slots // 2)
                setattr(self, name, _Candidates(fam.queries, self.n, cap, slots, self.device,
                                                self.kb, self.tuning.warp_block,
                                                fam.scatter))
                grew = True
        if grew:
            self.stats.zero_()
            self.lists.force.fill_(1)
        return grew

    def frame_extra(self, substeps: int) -> dict[str, float]:
        """The numpy stage's per-frame numbers (:meth:`SelfCollisionStats.frame_extra`)."""
        st = self.stats.numpy()
        n = max(substeps, 1)
        return {
            "self_pt_candidates": float(st[kk.STAT_PT_CANDIDATES]) / n,
            "self_ee_candidates": float(st[kk.STAT_EE_CANDIDATES]) / n,
            "self_pt_contacts": float(st[kk.STAT_PT_CONTACTS]),
            "self_ee_contacts": float(st[kk.STAT_EE_CONTACTS]),
            "self_clamped": float(st[kk.STAT_CLAMPED]),
            "self_rebuilds": float(st[kk.STAT_REBUILDS]),
            "self_partial_rebuilds": float(st[kk.STAT_PARTIAL]),
            "self_refreshed": float(st[kk.STAT_REFRESHED]),
            "self_evaluated": float(st[kk.STAT_EVALUATED]),
            "self_reverted": float(st[kk.STAT_REVERTED]),
        }

    # --- issued into the frame ----------------------------------------------------------------
    def issue_predict(self, launch: Any, settings: ClothSettings, h: float, x: Any, v: Any,
                      v_pred: Any, p: Any, inv_mass: Any) -> None:
        """Velocity clamp and broad phase (after predict and pins)."""
        k, s = self.k, self.kb.scalar
        n = self.n
        t = float(settings.self_thickness)
        clamp = float(settings.self_clamp)
        free = int(np.count_nonzero(self.model.inv_mass > 0.0))
        blocks = self.sum_blocks.shape[0]
        block = self.tuning.warp_block
        if free:
            inv_total = s(1.0 / self.free_mass)
            launch(k.momentum_blocks, blocks, [v, self.mass, inv_mass, block, self.sum_blocks])
            launch(k.sum_final, 1, [self.sum_blocks, inv_total, self.mean])
            launch(k.clamp_velocity, n, [v, inv_mass, self.mean, s(clamp * t / h), self.stats])
            launch(k.momentum_blocks, blocks, [v, self.mass, inv_mass, block, self.sum_blocks])
            launch(k.sum_final, 1, [self.sum_blocks, inv_total, self.mean_after])
            launch(k.shift_velocity, n, [v, v_pred, x, p, inv_mass, self.mean, self.mean_after,
                                         s(h)])
        # Candidate lists: a partial update for the movers or a full build, decided on the
        # device (:mod:`.selfcollision_lists`).
        pt, ee = self.pt, self.ee
        large = self.host.radii(t, clamp)[1]
        self.lists.issue(launch, p, inv_mass, self.tris, self.edges, t, clamp, large, pt, ee,
                         self.pt_excluded, self.ee_excluded, self.rebuild, self.stats)
        launch(k.add_stat, 1, [pt.count, kk.STAT_PT_CANDIDATES, self.stats])
        launch(k.add_stat, 1, [ee.count, kk.STAT_EE_CANDIDATES, self.stats])

    def issue_project(self, launch: Any, settings: ClothSettings, p: Any, x: Any,
                      inv_mass: Any, iteration: int = 0) -> None:
        """Narrow phase of solver iteration ``iteration`` of the substep (after the
        obstacles): passes, fail-safe. The first iteration sets every pair's slack from a
        bound on its distance; later ones add what the constraints moved each particle."""
        k, s = self.k, self.kb.scalar
        n = self.n
        t = float(settings.self_thickness)
        tune = self.tuning
        band = s(tune.crossing_band * t)
        mu = s(settings.self_friction)
        interior = s(tune.edge_interior)
        margin = s(SLACK_MARGIN * t)
        skip = int(tune.skip_unchanged)
        pt, ee = self.pt, self.ee
        pair_eval = k.pair_eval if self.kn is None else self.kn.pair_eval_all
        mark_crossed = k.mark_crossed if self.kn is None else self.kn.mark_crossed_all
        contact_relax = k.contact_relax if self.kn is None else self.kn.contact_relax_all
        track_begin = k.track_begin if self.kn is None else self.kn.track_begin_all
        if iteration == 0:
            launch(k.zero_scalars, n, [self.moved])
            for fam, edge_pairs in ((pt, 0), (ee, 1)):
                launch(track_begin, fam.workers, [p, fam.idx, fam.count, edge_pairs, band,
                                                    fam.slack_c, fam.slack_x, fam.base,
                                                    fam.workers if self.kn is None
                                                    else self.threads])
        else:
            launch(k.moved_since, n, [p, self.last, self.moved])
        launch(k.project_begin, 1, [self.state, self.deep])
        # on the CPU the scattered sums and their application are one native loop, which also
        # sets the counts a pass raised back to 0 (then the counts are cleared once per call)
        sums_all = None if self.kn is None else self.kn.contact_sums_all
        fused = sums_all is not None and pt.scatter and ee.scatter
        if fused:
            launch(k.zero_counts, n, [self.state, self.cnt])
        for _ in range(tune.passes):
            for fam, edge_pairs in ((pt, 0), (ee, 1)):
                if not fused:
                    launch(k.zero_counts, n, [self.state, self.cnt])
                launch(pair_eval, fam.workers, [
                    p, x, inv_mass, fam.idx, fam.count, edge_pairs, self.state, s(t), band, mu,
                    interior, self.moved, fam.base, fam.slack_c, fam.slack_x, margin, skip,
                    fam.act, fam.corr, fam.wc, self.deep, self.touch, self.cnt, self.stats,
                    fam.workers if self.kn is None else self.threads])
                if fused:
                    launch(sums_all, 1, [
                        fam.idx, fam.count, fam.act, fam.wc, self.cnt, self.state, fam.corr,
                        self.dp, self.touch, p, self.moved])
                else:
                    launch(contact_relax, fam.workers, [fam.idx, fam.count, fam.act, fam.wc,
                                                          self.cnt, self.state, fam.corr,
                                                          int(fam.scatter), self.dp,
                                                          fam.workers])
                    if fam.scatter:
                        launch(k.apply_sums, n, [self.state, self.touch, self.dp, p,
                                                 self.moved])
                    else:
                        launch(k.contact_apply, n, [fam.inc_start, fam.inc, fam.act, fam.wc,
                                                    fam.corr, self.state, self.touch, p,
                                                    self.moved])
                if edge_pairs == 0:
                    launch(k.next_phase, 1, [self.state])
            launch(k.pass_end, 1, [self.state, self.deep, s(tune.resolved * t)])
        for _ in range(tune.revert_rounds):
            for fam, edge_pairs in ((pt, 0), (ee, 1)):
                launch(mark_crossed, fam.workers, [
                    p, x, inv_mass, fam.idx, fam.count, edge_pairs, s(t), band, interior,
                    self.moved, fam.base, fam.slack_c, fam.slack_x, margin, skip, self.state,
                    self.flag, self.reverted, fam.workers if self.kn is None else self.threads])
            launch(k.revert_apply, n, [x, self.flag, self.state, self.reverted, p, self.moved,
                                       self.stats])
            launch(k.round_end, 1, [self.state])
        launch(k.copy_vec3, n, [p, self.last])
