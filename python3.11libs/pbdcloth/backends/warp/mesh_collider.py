"""A :class:`~pbdcloth.colliders.mesh.MeshCollider` on the Warp device.

Per frame the host uploads the collider's start and end poses, the grids' cell sizes and
regions, and the orientation of a closed mesh at each substep's start (the sign of its enclosed
volume, a cubic in the frame's alpha since every vertex moves linearly). Per substep the device
interpolates the poses, computes the triangles' swept boxes and normals and builds the two
hashed grids (:mod:`.mesh_kernels`); per iteration it runs the contacts in
:meth:`MeshCollider.project_cloth`'s order: candidates, fail-safe (first iteration), cloth
vertices, collider vertices, pushes, re-check. The arrays keep their sizes from frame to frame;
a frame whose grids or candidate lists overflow is run again with larger ones
(:meth:`DeviceMeshCollider.grow_if_needed`). On the CPU the same stages run as native loops on
``warp_cpu_threads`` POSIX threads (:mod:`.mesh_native`, bit for bit the kernels' results); the
kernels remain for CUDA devices (and ``native=False``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import warp as wp

from ...cloth.topology import incidence
from ...colliders.mesh import MeshCollider
from ...colliders.mesh_edges import cloth_edges
from .mesh_kernels import (
    GP_HI,
    GP_INV,
    GP_LO,
    GP_SIZE,
    OVER_CANDIDATES,
    OVER_EDGE_CANDIDATES,
    OVER_EDGES,
    OVER_SIZE,
    OVER_TRIANGLE_CANDIDATES,
    OVER_TRIANGLES,
    OVER_VERTICES,
    build_mesh_kernels,
)
from .mesh_native import KIND_EDGE, KIND_TRIANGLE, KIND_VERTEX, build_mesh_native

__all__ = ["DeviceMeshCollider", "volume_cubic"]

#: The margin of a substep's first search of the cloth vertices' candidates, in contact bands
#: (as the numpy PairList's: the fail-safe of a closed mesh looks for trapped vertices among
#: these candidates; an open mesh's first search has the tight margin).
MARGIN = 0.5
#: The margin of every other list, in contact bands: the cloth vertices' after the fail-safe
#: (cut from the first search's), the cloth triangles' and the cloth edges'. Their contacts are
#: the same for any list that holds every box overlapping (a superset): the margin only trades
#: candidates against searching again (the skirt benchmark: 9.2 ms per substep at 0.1 against
#: 9.9 at 0.25 and 11.8 at 0.5, everything searching again at 0).
TIGHT_MARGIN = 0.1
#: Grid cells: the triangle grid's in mean triangle boxes (at the frame's start, grown by the
#: contact band), the vertex grid's in the collider's median edge lengths (1.4: the skirt
#: benchmark's cloth-triangle searches took 2.3 ms per substep against 2.7 at 1.0, 3.3 at 0.7
#: and 2.4 at 2.0, with the native searches' occupancy bytes).
TRIANGLE_CELL = 1.0
VERTEX_CELL = 1.4
#: The fewest buckets of a grid (few boxes spread over many cells: a query's cells seldom share
#: a bucket with another cell's entries).
MIN_BUCKETS = 1 << 14
#: Words of a grid's occupancy bytes (native builds, a byte per cell): a region of up to four
#: times as many cells has them, a larger one searches every bucket.
OCCUPANCY_WORDS = 1 << 18
#: Threads per block of the grids' prefix sums.
SCAN_BLOCK = 256
#: Entries per box the grids start with (plus START_EXTRA), and candidates per cloth vertex
#: (triangles) and per cloth triangle (collider vertices).
START_ENTRIES = 8
START_EXTRA = 1024
START_SLOTS = 16
#: The candidate searches run as native loops on the CPU (:mod:`.mesh_native`) unless a
#: collider is made with ``native=False`` or this is False.
NATIVE_ON_CPU = True


def _pow2(n: int) -> int:
    return 1 << max(4, int(n - 1).bit_length())


def volume_cubic(v0: np.ndarray, v1: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Coefficients (4,) of 6 V(alpha) = sum_t a . (b x c) for corners moving linearly from
    ``v0`` to ``v1`` (divergence theorem), lowest power first."""
    a0, b0, c0 = (v0[tris[:, k]] for k in range(3))
    da, db, dc = (v1[tris[:, k]] - v0[tris[:, k]] for k in range(3))

    def triple(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
        return float(np.einsum("ij,ij->", x, np.cross(y, z)))

    return np.array([
        triple(a0, b0, c0),
        triple(da, b0, c0) + triple(a0, db, c0) + triple(a0, b0, dc),
        triple(a0, db, dc) + triple(da, b0, dc) + triple(da, db, c0),
        triple(da, db, dc)])


class _Grid:
    """A hashed grid's device arrays over M boxes (counts and cursors per bucket, entries)."""

    def __init__(self, boxes: int, entries: int, device: Any, vec3: Any, scalar: Any,
                 ranges: int = 1, occupancy: int = 1) -> None:
        self.boxes = boxes
        self.buckets = _pow2(max(4 * boxes, MIN_BUCKETS))
        self.mask = self.buckets - 1
        self.ranges = ranges
        """Ranges of boxes of a native build, each counted in its own row of ``count``."""
        self.count = wp.zeros(ranges * self.buckets, dtype=wp.int32, device=device)
        self.cursor = wp.zeros(self.buckets, dtype=wp.int32, device=device)
        self.start = wp.zeros(self.buckets + 1, dtype=wp.int32, device=device)
        self.blocks = (self.buckets + SCAN_BLOCK - 1) // SCAN_BLOCK
        self.sums = wp.zeros(self.blocks, dtype=wp.int32, device=device)
        self.offsets = wp.zeros(self.blocks + 1, dtype=wp.int32, device=device)
        self.entries = wp.zeros(entries, dtype=wp.int32, device=device)
        self.lo = wp.zeros(boxes, dtype=vec3, device=device)
        self.hi = wp.zeros(boxes, dtype=vec3, device=device)
        self.clo = wp.zeros(boxes, dtype=wp.vec3i, device=device)
        self.chi = wp.zeros(boxes, dtype=wp.vec3i, device=device)
        self.big = wp.zeros(max(boxes, 1), dtype=wp.int32, device=device)
        self.big_count = wp.zeros(1, dtype=wp.int32, device=device)
        self.params = wp.zeros(GP_SIZE, dtype=scalar, device=device)
        self.occupancy = wp.zeros(occupancy, dtype=wp.int32, device=device)
        """Occupancy of the region's cells, a byte each (native builds, where they fit)."""
        self.dense = wp.zeros(8, dtype=wp.int32, device=device)

    def issue_build(self, launch: Any, mk: Any, over: Any, slot: int, kn: Any = None,
                    threads: int = 1) -> None:
        """Count, scan and fill the boxes ``lo``, ``hi`` into the buckets (one native loop
        where ``kn`` is :func:`.mesh_native.build_mesh_native`'s)."""
        if kn is not None:
            launch(kn.grid_build, 1, [self.lo, self.hi, self.params, self.mask, self.boxes,
                                      self.ranges, self.count, self.start, self.entries,
                                      self.clo, self.chi, self.big, self.big_count, over,
                                      slot, self.occupancy, self.dense, threads])
            return
        launch(mk.grid_clear, self.buckets, [self.count, self.cursor, self.big_count])
        launch(mk.grid_count, self.boxes, [self.lo, self.hi, self.params, self.mask,
                                           self.count, self.clo, self.chi, self.big,
                                           self.big_count])
        launch(mk.scan_blocks, self.blocks, [self.count, self.buckets, SCAN_BLOCK, self.start,
                                             self.sums])
        launch(mk.scan_top, 1, [self.sums, self.offsets])
        launch(mk.scan_add, self.buckets + 1, [self.start, self.buckets, SCAN_BLOCK,
                                               self.offsets])
        launch(mk.grid_fill, self.boxes, [self.clo, self.chi, self.mask, self.start,
                                          self.cursor, self.entries, over, slot])

    def query_args(self) -> list[Any]:
        return [self.params, self.mask, self.start, self.entries, self.clo, self.big,
                self.big_count]

    def grow(self, need: int, device: Any) -> None:
        """Room for twice the ``need`` entries an overflowing build counted."""
        self.entries = wp.zeros(2 * need + START_EXTRA, dtype=wp.int32, device=device)


class _VerletList:
    """Candidate lists of ``count`` queries (cloth vertices, triangles or edges) on the device:
    ``slots`` candidates each, their counts, and the boxes of their last searches."""

    def __init__(self, count: int, device: Any, vec3: Any) -> None:
        self.count = max(count, 1)
        self.slots = START_SLOTS
        self.cand = wp.zeros(self.count * self.slots, dtype=wp.int32, device=device)
        self.ncand = wp.zeros(self.count, dtype=wp.int32, device=device)
        self.ref_lo = wp.zeros(self.count, dtype=vec3, device=device)
        self.ref_hi = wp.zeros(self.count, dtype=vec3, device=device)

    def grow(self, need: int, device: Any) -> None:
        """More slots than the ``need`` candidates an overflowing query counted."""
        self.slots = max(2 * self.slots, need + 4)
        self.cand = wp.zeros(self.count * self.slots, dtype=wp.int32, device=device)

    def search_args(self, grid: _Grid) -> list[Any]:
        """A candidates kernel's arguments after ``fresh, margin``: the remembered boxes, the
        grid searched, the lists."""
        return [self.ref_lo, self.ref_hi, *grid.query_args(), grid.lo, grid.hi, self.slots,
                self.cand, self.ncand]

    def lists(self) -> list[Any]:
        """``slots, cand, ncand``: the arguments of a kernel that reads the lists."""
        return [self.slots, self.cand, self.ncand]


class DeviceMeshCollider:
    """One MeshCollider's arrays on the device and the launches of its contacts.

    Args:
        collider: the collider (its triangles and vertex count are fixed).
        cloth: the backend's device model (cloth triangles ``tris`` and each particle's
            triangles ``tri_start`` / ``tri_list``).
        particles: cloth particle count.
        precision, device: the backend's.
        threads: POSIX threads of the native searches (the CPU's; at most its cores).
        native: the candidate searches as native loops (:mod:`.mesh_native`); default on the
            CPU (:data:`NATIVE_ON_CPU`; the same lists as the kernels, bit for bit).
    """

    def __init__(self, collider: MeshCollider, cloth: Any, particles: int, precision: str,
                 device: Any, threads: int = 2, native: bool | None = None) -> None:
        mk = build_mesh_kernels(precision)
        self.mk = mk
        self.device = device
        if native is None:
            native = NATIVE_ON_CPU and not wp.get_device(device).is_cuda
        if native and wp.get_device(device).is_cuda:
            raise ValueError("the native searches run on the CPU only")
        self.kn = build_mesh_native(precision) if native else None
        """The native searches (:mod:`.mesh_native`), or None for the kernels."""
        self.threads = max(1, min(int(threads), os.cpu_count() or 1))
        """POSIX threads of the native searches."""
        self.modules = [m.module for m in (mk, self.kn) if m is not None]
        """The Warp modules of the collider's kernels (loaded before a recording)."""
        self.np_scalar = np.float32 if mk.scalar is wp.float32 else np.float64
        self.cloth = cloth
        self.particles = particles
        self.tri_np = collider.triangles.astype(np.int32)
        self.closed = collider.closed
        self.edge_length = collider.edge_length
        v, t, v3 = collider.vertex_count, self.tri_np.shape[0], mk.vec3
        self.vertex_count, self.triangle_count = v, t
        self.tris: Any = wp.array(self.tri_np, dtype=wp.vec3i, device=device)
        self.v_start = wp.zeros(v, dtype=v3, device=device)
        self.v_end = wp.zeros(v, dtype=v3, device=device)
        self.v0 = wp.zeros(v, dtype=v3, device=device)
        self.v1 = wp.zeros(v, dtype=v3, device=device)
        self.n0 = wp.zeros(t, dtype=v3, device=device)
        self.n1 = wp.zeros(t, dtype=v3, device=device)
        ranges, words = (self.threads, OCCUPANCY_WORDS) if self.kn is not None else (1, 1)
        self.tri_grid = _Grid(t, START_ENTRIES * t + START_EXTRA, device, v3, mk.scalar,
                              ranges, words)
        self.vert_grid = _Grid(v, START_ENTRIES * v + START_EXTRA, device, v3, mk.scalar,
                               ranges, words)
        n_cloth_tris = cloth.tris.shape[0]
        self.cloth_triangles = n_cloth_tris
        self.vertex_lists = _VerletList(particles, device, v3)
        """Each cloth vertex's candidate collider triangles."""
        self.triangle_lists = _VerletList(n_cloth_tris, device, v3)
        """Each cloth triangle's candidate collider vertices."""
        self.trapped = wp.full(particles, -1, dtype=wp.int32, device=device)
        self.moved = wp.zeros(particles, dtype=wp.int32, device=device)
        self.push_len = wp.zeros(3 * n_cloth_tris, dtype=mk.scalar, device=device)
        self.push_dir = wp.zeros(3 * n_cloth_tris, dtype=v3, device=device)
        self.over = wp.zeros(2 * OVER_SIZE, dtype=wp.int32, device=device)
        # Sharp collider edges against the cloth's edges.
        sharp = collider.sharp_edges.astype(np.int32)
        self.sharp_np = sharp.reshape(-1, 2)
        self.sharp_count = sharp.shape[0]
        self.sharp: Any = wp.array(sharp.reshape(-1, 2), dtype=wp.vec2i, device=device)
        self.edge_grid = _Grid(max(self.sharp_count, 1), START_ENTRIES * self.sharp_count
                               + START_EXTRA, device, v3, mk.scalar, ranges, words)
        edges = cloth_edges(np.asarray(cloth.tris.numpy()).reshape(-1, 3).T)  # (2, E)
        self.cloth_edge_count = edges.shape[1]
        self.cloth_edges: Any = wp.array(np.ascontiguousarray(edges.T, dtype=np.int32),
                                         dtype=wp.vec2i, device=device)
        edge_start, edge_list = incidence(edges.T, particles)  # by particle, then by edge
        self.edge_start: Any = wp.array(edge_start.astype(np.int32), dtype=wp.int32,
                                        device=device)
        self.edge_list: Any = wp.array(edge_list.astype(np.int32), dtype=wp.int32,
                                       device=device)
        self.edge_lists = _VerletList(self.cloth_edge_count, device, v3)
        """Each cloth edge's candidate sharp edges."""
        e = max(self.cloth_edge_count, 1)
        self.edge_push_len = wp.zeros(2 * e, dtype=mk.scalar, device=device)
        self.edge_push_dir = wp.zeros(2 * e, dtype=v3, device=device)
        self._flat_tris: Any = wp.array(np.asarray(cloth.tris.numpy(), dtype=np.int32)
                                        .reshape(-1), dtype=wp.int32, device=device)
        self._flat_edges: Any = wp.array(np.ascontiguousarray(edges.T, dtype=np.int32)
                                         .reshape(-1), dtype=wp.int32, device=device)
        """The cloth triangles' corners and the cloth edges' ends, flat (native loops)."""
        self._queries = (particles, self.cloth_triangles, self.cloth_edge_count)
        """Queries of each kind (:data:`.mesh_native.KIND_VERTEX` ...)."""
        self.orientation: Any = None
        self.substeps = 0
        self.band = 0.0

    # --- per recording and per frame ---------------------------------------------------------
    def prepare(self, substeps: int, band: float) -> None:
        """Sizes that a recording fixes: the substep count and the contact band [m] (the
        largest thickness of a cloth vertex)."""
        self.substeps = substeps
        self.band = band
        self.orientation = wp.zeros(substeps, dtype=self.mk.scalar, device=self.device)

    def update(self, collider: MeshCollider) -> None:
        """Upload the frame: the start and end poses, the grids' cells and regions, and the
        orientation at each substep's start."""
        start = np.asarray(collider.pose_at(0.0), dtype=np.float64)
        end = np.asarray(collider.pose_at(1.0), dtype=np.float64)
        self.v_start.assign(start.astype(self.np_scalar))
        self.v_end.assign(end.astype(self.np_scalar))
        band = self.band
        lo = np.minimum(start.min(axis=0), end.min(axis=0)) - 2.0 * band
        hi = np.maximum(start.max(axis=0), end.max(axis=0)) + 2.0 * band
        corners = start[self.tri_np]
        extent = corners.max(axis=1) - corners.min(axis=1)
        # Cells no finer than the region / 1e9, so that cell numbers stay within int32.
        floor = max(float(np.abs(lo).max()), float(np.abs(hi).max()), 1.0) * 1e-9
        tri_cell = max(TRIANGLE_CELL * (float(extent.mean()) + 2.0 * band), 1e-6, floor)
        vert_cell = max(VERTEX_CELL * self.edge_length, 2.0 * band, 1e-6, floor)
        for grid, cell in ((self.tri_grid, tri_cell), (self.vert_grid, vert_cell)):
            params = np.zeros(GP_SIZE)
            params[GP_INV] = 1.0 / cell
            params[GP_LO:GP_LO + 3] = lo
            params[GP_HI:GP_HI + 3] = hi
            grid.params.assign(params.astype(self.np_scalar))
        if self.sharp_count:
            ends = start[self.sharp_np]
            length = float(np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1).mean())
            both = np.concatenate([ends.reshape(-1, 3), end[self.sharp_np].reshape(-1, 3)])
            params = np.zeros(GP_SIZE)
            params[GP_INV] = 1.0 / max(length + 2.0 * band, 1e-6, floor)
            params[GP_LO:GP_LO + 3] = both.min(axis=0) - 2.0 * band  # the sharp edges' region
            params[GP_HI:GP_HI + 3] = both.max(axis=0) + 2.0 * band
            self.edge_grid.params.assign(params.astype(self.np_scalar))
        orient = np.zeros(self.substeps)
        if self.closed:
            coef = volume_cubic(start, end, self.tri_np)
            alpha = np.arange(self.substeps) / self.substeps
            orient = np.sign(((coef[3] * alpha + coef[2]) * alpha + coef[1]) * alpha + coef[0])
        self.orientation.assign(orient.astype(self.np_scalar))

    def grow_if_needed(self) -> bool:
        """After a frame: True when a grid or the candidate lists overflowed (then they are
        larger, and the frame must be recorded and run again)."""
        over = self.over.numpy()
        if not over[:OVER_SIZE].any():
            return False
        dev = self.device
        for slot, grown in ((OVER_TRIANGLES, self.tri_grid), (OVER_VERTICES, self.vert_grid),
                            (OVER_EDGES, self.edge_grid), (OVER_CANDIDATES, self.vertex_lists),
                            (OVER_TRIANGLE_CANDIDATES, self.triangle_lists),
                            (OVER_EDGE_CANDIDATES, self.edge_lists)):
            if over[slot]:
                grown.grow(int(over[OVER_SIZE + slot]), dev)
        self.over.zero_()
        return True

    # --- the launches -----------------------------------------------------------------------
    def launches(self, step: int, iteration: int, common: list[Any], contact: list[Any]
                 ) -> list[tuple[Any, int, list[Any]]]:
        """(kernel, dim, inputs) of one iteration of substep ``step``: on its first iteration
        the substep's poses, boxes and grids, then the contacts.

        ``common`` = [p, x_prev, inv_mass, thickness_scale, friction_scale], ``contact`` =
        [thickness, mu_s, mu_k, h, contact, contact_normal, surface_velocity] (the backend's
        lists for every collider)."""
        mk = self.mk
        out: list[tuple[Any, int, list[Any]]] = []
        launch = _Collect(out)
        p, x, inv_mass, t_scale, f_scale = common
        thickness, mu_s, mu_k, h, flag, normal, surface = contact
        tg, vg = self.tri_grid, self.vert_grid
        scalar = mk.scalar
        if iteration == 0:
            a0 = scalar(step / self.substeps)
            a1 = scalar((step + 1) / self.substeps)
            if self.kn is not None:
                launch(self.kn.pose_all, 1, [self.v_start, self.v_end, a0, a1,
                                             scalar(self.band), self.v0, self.v1, vg.lo,
                                             vg.hi, self.tris, tg.lo, tg.hi, self.n0, self.n1,
                                             self.threads])
            else:
                launch(mk.mesh_pose, self.vertex_count, [self.v_start, self.v_end, a0, a1,
                                                         scalar(self.band), self.v0, self.v1,
                                                         vg.lo, vg.hi])
                launch(mk.mesh_triangles, self.triangle_count,
                       [self.v0, self.v1, self.tris, scalar(self.band), tg.lo, tg.hi, self.n0,
                        self.n1])
            kn, threads = self.kn, self.threads
            tg.issue_build(launch, mk, self.over, OVER_TRIANGLES, kn, threads)
            vg.issue_build(launch, mk, self.over, OVER_VERTICES, kn, threads)
            if self.sharp_count:
                eg = self.edge_grid
                launch(mk.edge_boxes, self.sharp_count, [self.v0, self.v1, self.sharp,
                                                         scalar(self.band), eg.lo, eg.hi])
                eg.issue_build(launch, mk, self.over, OVER_EDGES, kn, threads)
        n = self.particles
        tight = scalar(TIGHT_MARGIN * self.band)
        # the fail-safe's candidates (closed meshes only: an open one has no inside)
        wide = scalar(MARGIN * self.band) if self.closed else tight
        fresh = int(iteration == 0)
        vl, tl, el = self.vertex_lists, self.triangle_lists, self.edge_lists
        cl = self.cloth
        both = [p, x, inv_mass, cl.tris, self.cloth_edges]

        def search(kind: int, lists: _VerletList, grid: _Grid, fresh: int,
                   margin: Any = tight) -> None:
            kn, count = self.kn, self._queries[kind]
            if kn is not None:
                launch(kn.search_all, 1, [*both, kind, count, fresh, margin,
                                          *lists.search_args(grid), self.over,
                                          _OVER_OF[kind], grid.occupancy, grid.dense,
                                          self.threads])
                return
            owners = [inv_mass] if kind == KIND_VERTEX else [
                cl.tris if kind == KIND_TRIANGLE else self.cloth_edges]
            kernel = (mk.candidates, mk.triangle_candidates, mk.edge_candidates)[kind]
            launch(kernel, count, [p, x, *owners, fresh, margin, *lists.search_args(grid),
                                   self.over])

        search(KIND_VERTEX, vl, tg, fresh, wide if fresh else tight)
        if iteration == 0:
            trapped_args = [x, inv_mass, self.v0, self.tris, self.n0, self.orientation, step,
                            *vl.lists(), self.trapped]
            if self.kn is not None:
                launch(self.kn.trapped_all, 1, [*trapped_args, n, self.threads])
            else:
                launch(mk.find_trapped, n, trapped_args)
            if self.closed and self.kn is not None:  # the lists cut to the tight margin
                launch(self.kn.search_all, 1, [*both, KIND_VERTEX, n, 2, tight,
                                               *vl.search_args(tg), self.over,
                                               OVER_CANDIDATES, tg.occupancy, tg.dense,
                                               self.threads])
            elif self.closed:
                launch(mk.narrow, n, [p, x, inv_mass, tight, vl.ref_lo, vl.ref_hi, tg.lo,
                                      tg.hi, *vl.lists()])
        vertex_args = [p, x, inv_mass, t_scale, f_scale, self.v0, self.v1, self.tris, self.n0,
                       self.n1, self.orientation, step, *vl.lists(), self.trapped, self.moved,
                       thickness, mu_s, mu_k, h, flag, normal, surface]
        if self.kn is not None:
            launch(self.kn.vertices_all, 1, [*vertex_args, n, 0, self.threads])
        else:
            launch(mk.cloth_vertices, n, vertex_args)
        search(KIND_TRIANGLE, tl, vg, fresh)
        if self.kn is not None:
            launch(self.kn.pushes_all, 1, [p, x, inv_mass, t_scale, self._flat_tris, self.v0,
                                           self.v1, *tl.lists(), thickness, self.push_len,
                                           self.push_dir, cl.tri_start, cl.tri_list,
                                           self.moved, self.sharp, n, 0, self.threads])
        else:
            launch(mk.collider_vertices, self.cloth_triangles,
                   [p, x, inv_mass, t_scale, cl.tris, self.v0, self.v1, *tl.lists(),
                    thickness, self.push_len, self.push_dir])
            launch(mk.apply_pushes, n, [p, cl.tris, cl.tri_start, cl.tri_list, self.push_len,
                                        self.push_dir, self.moved])
        if self.sharp_count and self.cloth_edge_count:
            eg = self.edge_grid
            search(KIND_EDGE, el, eg, fresh)
            if self.kn is not None:
                launch(self.kn.pushes_all, 1, [p, x, inv_mass, t_scale, self._flat_edges,
                                               self.v0, self.v1, *el.lists(), thickness,
                                               self.edge_push_len, self.edge_push_dir,
                                               self.edge_start, self.edge_list, self.moved,
                                               self.sharp, n, 1, self.threads])
            else:
                launch(mk.collider_edges, self.cloth_edge_count,
                       [p, x, inv_mass, t_scale, self.cloth_edges, self.sharp, self.v0,
                        self.v1, *el.lists(), thickness, self.edge_push_len,
                        self.edge_push_dir])
                launch(mk.apply_edge_pushes, n, [p, self.cloth_edges, self.edge_start,
                                                 self.edge_list, self.edge_push_len,
                                                 self.edge_push_dir, self.moved])
        search(KIND_VERTEX, vl, tg, 0)
        if self.kn is not None:
            launch(self.kn.vertices_all, 1, [*vertex_args, n, 1, self.threads])
        else:
            launch(mk.recheck, n, [p, x, inv_mass, t_scale, self.v0, self.v1, self.tris,
                                   self.n0, self.n1, *vl.lists(), self.trapped, self.moved,
                                   thickness])
        return out


#: The overflow slot of each kind of query.
_OVER_OF = (OVER_CANDIDATES, OVER_TRIANGLE_CANDIDATES, OVER_EDGE_CANDIDATES)


class _Collect:
    """A launch-shaped callable that collects (kernel, dim, inputs) instead of launching."""

    def __init__(self, out: list[tuple[Any, int, list[Any]]]) -> None:
        self.out = out

    def __call__(self, kernel: Any, dim: int, inputs: list[Any]) -> None:
        self.out.append((kernel, dim, inputs))
