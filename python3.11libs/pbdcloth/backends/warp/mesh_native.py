"""CPU-only native loops of the Warp mesh collider, on both cores.

Why: on the CPU Warp runs a kernel's threads one after another on the calling thread, and the
collider phase of :mod:`.mesh_kernels` (grids, candidate searches, narrow phases) ran on one
core against a constraint solve that runs eight-wide lanes. Here each stage of a substep or an
iteration is one C++ loop (``wp.func_native``, compiled by Warp's clang with the module's
flags) launched with dim 1, which runs its items in blocks on ``threads`` POSIX threads (the
team of :mod:`.selfcollision_native`: every thread takes the next block from a shared atomic
counter; the tuning's ``warp_cpu_threads``):

* ``pose_all``: ``mesh_pose`` then ``mesh_triangles`` (the substep's poses, swept boxes and
  normals);
* ``grid_build``: a grid's ``grid_clear``, ``grid_count``, scans and ``grid_fill``. The boxes are
  cut into ``ranges`` contiguous ranges, each counted in its own row of ``count`` and filled
  from its own cursors, so a bucket's entries are in box order whichever thread takes a range.
  It also keeps a byte per cell of the grid's region, 1 where some box overlaps the cell
  (where the region's cells fit in ``occupancy``, four to a word), and where the region has no
  more cells than the grid has buckets, a cell's bucket is its index in the region instead of
  its hash: no bucket holds another cell's entries, and the boxes of neighbouring cells and
  consecutive boxes' cells are near each other in memory (the skirt benchmark: grid builds
  1.8 -> 1.4 ms per substep, the first searches 4.5 -> 4.0 ms on one thread);
* ``search_all``: the Verlet searches (``candidates``, ``triangle_candidates``,
  ``edge_candidates``; ``fresh`` = 2: ``narrow``, a list cut to a smaller margin). They skip the cells that no box overlaps: such a cell's bucket can
  only hold other cells' entries, which the first-shared-cell test rejects. A bucket's run
  of entries is tested without branches. A box is listed once per query: where several of its
  cells hash to one bucket its entries there are next to each other, and the later ones are
  passed over (the kernels do the same). A later iteration tests only the current points
  against the remembered box: the substep's start points lie in it since its first search;
* ``vertices_all``: ``cloth_vertices`` and ``recheck``;
* ``pushes_all``: ``collider_vertices`` then ``apply_pushes``, or ``collider_edges`` then
  ``apply_edge_pushes``, with every triangle or edge done before any vertex takes its push.
* ``trapped_all``: ``find_trapped``, the fail-safe of closed meshes (a cloth vertex behind
  its nearest candidates at the substep's start, with its winding number over every collider
  triangle where it is).

What the threads share is order-free. Each item reads shared arrays and writes only its own
entries. An overflow sets one flag, and the largest size needed is combined after the blocks
are done. Grid counts go to the range's own row. The arithmetic is the kernels': Warp's own
vector functions (``wp::dot``, ``wp::cross``, ``wp::length``, ``wp::min``, ``wp::floor`` ...) and
integer hash, the same operations in the same order. So the lists and the frames are the
kernels' bit for bit, whatever the number of threads (tests/test_warp_meshcollider.py: the
wire on sharp edges, the coarse skirt and a limb sweeping through a sheet, with 1 and 2
threads and with the occupancy bytes off, against the kernels).

``__REAL__`` in the C++ text is the scalar type of the kernels (``float`` or ``double``).
"""

# mypy: ignore-errors
# (kernel annotations are Warp's typed language)
import functools
from types import SimpleNamespace
from typing import Any

import warp as wp

from ...colliders.ccd import BISECTIONS, INSIDE_TOLERANCE
from ...colliders.mesh_contact import EDGE_SLACK
from ...colliders.mesh_edges import PARALLEL
from .mesh_kernels import BIG_CELLS, GP_HI, GP_INV, GP_LO, OVER_SIZE
from .selfcollision_native import _PTHREAD

#: Query kinds: a cloth vertex's path, a cloth triangle's corners' paths, a cloth edge's ends'
#: paths (the boxes of ``candidates``, ``triangle_candidates`` and ``edge_candidates``).
KIND_VERTEX = 0
KIND_TRIANGLE = 1
KIND_EDGE = 2

# The searches of every query of one kind; the function's closing brace is Warp's.
_SEARCH = r"""
void mesh_search___TAG__(void** ptrs, const int* ints, __REAL__ margin);
void* pbd_ptrs[] = {(void*)p.data, (void*)x_prev.data, (void*)inv_mass.data,
                    (void*)cloth_tris.data, (void*)cloth_edges.data, (void*)ref_lo.data,
                    (void*)ref_hi.data, (void*)gp.data, (void*)start.data, (void*)entries.data,
                    (void*)clo.data, (void*)big.data, (void*)big_count.data, (void*)blo.data,
                    (void*)bhi.data, (void*)cand.data, (void*)ncand.data, (void*)over.data,
                    (void*)occupancy.data, (void*)dense.data};
const int pbd_ints[] = {kind, fresh, mask, slots, what, n, threads, entries.shape[0],
                        blo.shape[0]};
mesh_search___TAG__(pbd_ptrs, pbd_ints, margin);
}
__PTHREAD__
namespace mesh___TAG__ {
typedef __REAL__ R;
const int BLOCK = 64;
struct Job { void** ptrs; const int* ints; int* next; int n, need; R margin; };
static void* work(void* arg) {
  Job* J = (Job*)arg;
  void** P = J->ptrs;
  const R* X1 = (const R*)P[0];
  const R* X0 = (const R*)P[1];
  const R* W = (const R*)P[2];
  const int* TRIS = (const int*)P[3];
  const int* EDGES = (const int*)P[4];
  R* REF_LO = (R*)P[5];
  R* REF_HI = (R*)P[6];
  const R* GP = (const R*)P[7];
  const int* START = (const int*)P[8];
  const int* ENTRIES = (const int*)P[9];
  const int* CLO = (const int*)P[10];
  const int* BIG = (const int*)P[11];
  const int big_count = ((const int*)P[12])[0];
  const R* BLO = (const R*)P[13];
  const R* BHI = (const R*)P[14];
  int* CAND = (int*)P[15];
  int* NCAND = (int*)P[16];
  int* OVER = (int*)P[17];
  const unsigned char* OCC = (const unsigned char*)P[18];
  const int* DENSE = (const int*)P[19];
  const bool dense = DENSE[6] != 0, direct = DENSE[7] != 0;
  const int dx0 = DENSE[0], dy0 = DENSE[1], dz0 = DENSE[2], dny = DENSE[4], dnz = DENSE[5];
  const int kind = J->ints[0], fresh = J->ints[1], mask = J->ints[2], slots = J->ints[3];
  const int what = J->ints[4], cap = J->ints[7], boxes = J->ints[8];
  const R margin = J->margin;
  const int CHUNK = 64, SHORT = 8;
  int hit[64];
  const R inv = GP[__GP_INV__];
  const R* RLO = GP + __GP_LO__;
  const R* RHI = GP + __GP_HI__;
  auto cell = [inv](R x) -> int { return (int)wp::floor(x * inv); };
  auto bucket = [mask](int cx, int cy, int cz) -> int {
    unsigned h = ((unsigned)cx * 73856093u) ^ ((unsigned)cy * 19349663u)
        ^ ((unsigned)cz * 83492791u);
    h = h ^ (h >> 16u);
    h = h * 0x45D9F3Bu;
    h = h ^ (h >> 16u);
    return (int)(h & (unsigned)mask);
  };
  auto overlap = [](const R* lo, const R* hi, const R* blo, const R* bhi) -> bool {
    if (hi[0] < blo[0] || hi[1] < blo[1] || hi[2] < blo[2]) return false;
    if (lo[0] > bhi[0] || lo[1] > bhi[1] || lo[2] > bhi[2]) return false;
    return true;
  };
  auto is_big = [](const int* a, const int* b) -> bool {
    const int dx = b[0] - a[0] + 1, dy = b[1] - a[1] + 1, dz = b[2] - a[2] + 1;
    if (dx > __BIG__ || dy > __BIG__ || dz > __BIG__) return true;
    return dx * dy * dz > __BIG__;
  };
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
  const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
  for (int q = b0; q < b1; ++q) {
    R lo[3], hi[3];
    R* rlo = REF_LO + 3 * q;
    R* rhi = REF_HI + 3 * q;
    if (kind == 0 && W[q] <= R(0)) continue;
    if (fresh == 0) {
      // the box has left the remembered one when a current point has: the substep's start
      // points lie in it since the substep's first search
      const int corners = kind == 0 ? 1 : (kind == 1 ? 3 : 2);
      const int* idx = kind == 1 ? TRIS + 3 * q : EDGES + 2 * q;
      bool inside = true;
      for (int c = 0; c < corners; ++c) {
        const R* x = X1 + 3 * (kind == 0 ? q : idx[c]);
        inside = inside & !(x[0] < rlo[0]) & !(x[1] < rlo[1]) & !(x[2] < rlo[2])
            & !(x[0] > rhi[0]) & !(x[1] > rhi[1]) & !(x[2] > rhi[2]);
      }
      if (inside) continue;
    }
    if (kind == 0) {
      const R* a0 = X0 + 3 * q;
      const R* a1 = X1 + 3 * q;
      for (int k = 0; k < 3; ++k) { lo[k] = wp::min(a0[k], a1[k]); hi[k] = wp::max(a0[k], a1[k]); }
    } else if (kind == 1) {
      const int* t = TRIS + 3 * q;
      const R* a0 = X0 + 3 * t[0];
      const R* b0_ = X0 + 3 * t[1];
      const R* c0 = X0 + 3 * t[2];
      const R* a1 = X1 + 3 * t[0];
      const R* b1_ = X1 + 3 * t[1];
      const R* c1 = X1 + 3 * t[2];
      for (int k = 0; k < 3; ++k) {
        lo[k] = wp::min(wp::min(wp::min(a0[k], b0_[k]), wp::min(c0[k], a1[k])),
                        wp::min(b1_[k], c1[k]));
        hi[k] = wp::max(wp::max(wp::max(a0[k], b0_[k]), wp::max(c0[k], a1[k])),
                        wp::max(b1_[k], c1[k]));
      }
    } else {
      const int* e = EDGES + 2 * q;
      const R* a0 = X0 + 3 * e[0];
      const R* b0_ = X0 + 3 * e[1];
      const R* a1 = X1 + 3 * e[0];
      const R* b1_ = X1 + 3 * e[1];
      for (int k = 0; k < 3; ++k) {
        lo[k] = wp::min(wp::min(a0[k], b0_[k]), wp::min(a1[k], b1_[k]));
        hi[k] = wp::max(wp::max(a0[k], b0_[k]), wp::max(a1[k], b1_[k]));
      }
    }
    for (int k = 0; k < 3; ++k) { lo[k] = lo[k] - margin; hi[k] = hi[k] + margin; }
    for (int k = 0; k < 3; ++k) { rlo[k] = lo[k]; rhi[k] = hi[k]; }
    int n = 0;
    int* out = CAND + q * slots;
    if (fresh == 2) {  // the list of a wider search (the same box, a larger margin) narrowed
      const int wide = NCAND[q];
      for (int s = 0; s < wide; ++s) {
        const int j = out[s];
        if (overlap(lo, hi, BLO + 3 * j, BHI + 3 * j)) out[n++] = j;
      }
      NCAND[q] = n;
      continue;
    }
    const bool in_region = !(hi[0] < RLO[0] || hi[1] < RLO[1] || hi[2] < RLO[2])
        && !(lo[0] > RHI[0] || lo[1] > RHI[1] || lo[2] > RHI[2]);
    if (in_region) {
      for (int k = 0; k < 3; ++k) { lo[k] = wp::max(lo[k], RLO[k]); hi[k] = wp::min(hi[k], RHI[k]); }
      const int qa[3] = {cell(lo[0]), cell(lo[1]), cell(lo[2])};
      const int qb[3] = {cell(hi[0]), cell(hi[1]), cell(hi[2])};
      if (is_big(qa, qb)) {  // read every box
        for (int j = 0; j < boxes; ++j) {
          if (overlap(lo, hi, BLO + 3 * j, BHI + 3 * j)) { if (n < slots) out[n] = j; ++n; }
        }
      } else {
        for (int s = 0; s < big_count; ++s) {
          const int j = BIG[s];
          if (overlap(lo, hi, BLO + 3 * j, BHI + 3 * j)) { if (n < slots) out[n] = j; ++n; }
        }
        for (int cx = qa[0]; cx <= qb[0]; ++cx)
        for (int cy = qa[1]; cy <= qb[1]; ++cy)
        for (int cz = qa[2]; cz <= qb[2]; ++cz) {
          long long c = 0;
          if (dense) {  // a cell no box overlaps holds none of the query's candidates
            c = ((long long)(cx - dx0) * dny + (cy - dy0)) * dnz + (cz - dz0);
            if (OCC[c] == 0) continue;
          }
          const int key = direct ? (int)c : bucket(cx, cy, cz);
          const int e1 = START[key + 1] < cap ? START[key + 1] : cap;
          // a box whose cells share a hash is in the bucket once per such cell, its entries
          // next to each other (a build enters a box's cells before the next box's): once
          int last = -1;
          if (e1 - START[key] < SHORT) {  // a short bucket (often another cell's): branches
            for (int e = START[key]; e < e1; ++e) {
              const int j = ENTRIES[e];
              const int* c = CLO + 3 * j;
              if (cx != (qa[0] > c[0] ? qa[0] : c[0]) || cy != (qa[1] > c[1] ? qa[1] : c[1])
                  || cz != (qa[2] > c[2] ? qa[2] : c[2])) continue;
              if (!overlap(lo, hi, BLO + 3 * j, BHI + 3 * j) || j == last) continue;
              last = j;
              if (n < slots) out[n] = j;
              ++n;
            }
            continue;
          }
          for (int c0 = START[key]; c0 < e1; c0 += CHUNK) {
            // the tests of a chunk of the bucket without branches (their outcome is a coin
            // flip that a branch predictor cannot learn), the entries that pass into hit[]
            const int c1 = c0 + CHUNK < e1 ? c0 + CHUNK : e1;
            int nh = 0;
            for (int e = c0; e < c1; ++e) {
              const int j = ENTRIES[e];
              const int* c = CLO + 3 * j;
              const R* bl = BLO + 3 * j;
              const R* bh = BHI + 3 * j;
              // the first cell shared by the query and the entry (each pair taken once), and
              // the boxes' overlap
              const bool ok = (cx == (qa[0] > c[0] ? qa[0] : c[0]))
                  & (cy == (qa[1] > c[1] ? qa[1] : c[1])) & (cz == (qa[2] > c[2] ? qa[2] : c[2]))
                  & !(hi[0] < bl[0]) & !(hi[1] < bl[1]) & !(hi[2] < bl[2])
                  & !(lo[0] > bh[0]) & !(lo[1] > bh[1]) & !(lo[2] > bh[2]);
              hit[nh] = j;
              nh += ok;
            }
            for (int h = 0; h < nh; ++h) {
              if (hit[h] == last) continue;
              last = hit[h];
              if (n < slots) out[n] = last;
              ++n;
            }
          }
        }
      }
    }
    if (n > slots) {
      __atomic_store_n(&OVER[what], 1, __ATOMIC_RELAXED);
      if (J->need < n) J->need = n;
      n = slots;
    }
    NCAND[q] = n;
  }
  }
  return nullptr;
}
}  // namespace mesh___TAG__
void mesh_search___TAG__(void** ptrs, const int* ints, __REAL__ margin) {
  using namespace mesh___TAG__;
  const int n = ints[5];
  int threads = ints[6] < 1 ? 1 : (ints[6] > 8 ? 8 : ints[6]);
  if (n < 4 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, nullptr, n, 0, margin};
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
  int* OVER = (int*)ptrs[17];
  const int slot = __OVER_SIZE__ + ints[4];
  for (int k = 0; k < threads; ++k) if (OVER[slot] < jobs[k].need) OVER[slot] = jobs[k].need;
"""


# A grid's build (grid_clear, grid_count, the scans and grid_fill of :mod:`.mesh_kernels`) for
# ``ranges`` contiguous ranges of boxes, each counted into its own row of ``count`` and filled
# from its own cursors, so the entries of a bucket are in box order whichever thread takes a
# range; the function's closing brace is Warp's.
_GRID = r"""
void mesh_grid___TAG__(void** ptrs, const int* ints);
void* pbd_ptrs[] = {(void*)lo.data, (void*)hi.data, (void*)gp.data, (void*)count.data,
                    (void*)start.data, (void*)entries.data, (void*)clo.data, (void*)chi.data,
                    (void*)big.data, (void*)big_count.data, (void*)over.data,
                    (void*)occupancy.data, (void*)dense.data};
const int pbd_ints[] = {mask, n, ranges, slot, entries.shape[0], threads,
                        occupancy.shape[0]};
mesh_grid___TAG__(pbd_ptrs, pbd_ints);
}
__PTHREAD__
namespace meshgrid___TAG__ {
typedef __REAL__ R;
struct Job { void** ptrs; const int* ints; int* next; int phase; int* bigs; };
static inline int bucket(int cx, int cy, int cz, int mask) {
  unsigned h = ((unsigned)cx * 73856093u) ^ ((unsigned)cy * 19349663u)
      ^ ((unsigned)cz * 83492791u);
  h = h ^ (h >> 16u);
  h = h * 0x45D9F3Bu;
  h = h ^ (h >> 16u);
  return (int)(h & (unsigned)mask);
}
static void* work(void* arg) {
  Job* J = (Job*)arg;
  void** P = J->ptrs;
  const R* LO = (const R*)P[0];
  const R* HI = (const R*)P[1];
  const R inv = ((const R*)P[2])[__GP_INV__];
  int* COUNT = (int*)P[3];
  int* ENTRIES = (int*)P[5];
  int* CLO = (int*)P[6];
  int* CHI = (int*)P[7];
  int* BIG = (int*)P[8];
  const int mask = J->ints[0], n = J->ints[1], ranges = J->ints[2], cap = J->ints[4];
  const int buckets = mask + 1;
  const int size = (n + ranges - 1) / ranges;
  unsigned char* OCC = (unsigned char*)P[11];
  const int* DENSE = (const int*)P[12];
  const bool dense = DENSE[6] != 0, direct = DENSE[7] != 0;
  const int dx0 = DENSE[0], dy0 = DENSE[1], dz0 = DENSE[2];
  const int dnx = DENSE[3], dny = DENSE[4], dnz = DENSE[5];
  // a cell's key: its index in the region (direct) or its hash
  auto key = [=](int cx, int cy, int cz) -> int {
    if (direct) return (int)(((long long)(cx - dx0) * dny + (cy - dy0)) * dnz + (cz - dz0));
    return bucket(cx, cy, cz, mask);
  };
  // a box's cells [a, b], within the region where keys are region indices (the boxes lie in
  // it; a query's cells do, so no query reads a cell outside)
  const int d0[3] = {dx0, dy0, dz0}, dn[3] = {dnx, dny, dnz};
  auto inside = [&](const int* a, const int* b, int* u, int* v) {
    for (int k = 0; k < 3; ++k) {
      u[k] = a[k];
      v[k] = b[k];
      if (direct) {
        if (u[k] < d0[k]) u[k] = d0[k];
        if (v[k] > d0[k] + dn[k] - 1) v[k] = d0[k] + dn[k] - 1;
      }
    }
  };
  for (int r = __atomic_fetch_add(J->next, 1, __ATOMIC_RELAXED); r < ranges;
       r = __atomic_fetch_add(J->next, 1, __ATOMIC_RELAXED)) {
    const int m0 = r * size, m1 = m0 + size < n ? m0 + size : n;
    int* CNT = COUNT + r * buckets;
    if (J->phase == 0) {
      int nb = 0;  // the range's big boxes, at BIG[m0 ...] until they are gathered
      for (int m = m0; m < m1; ++m) {
        int a[3], b[3];
        for (int k = 0; k < 3; ++k) {
          a[k] = (int)wp::floor(LO[3 * m + k] * inv);
          b[k] = (int)wp::floor(HI[3 * m + k] * inv);
          CLO[3 * m + k] = a[k];
        }
        const int dx = b[0] - a[0] + 1, dy = b[1] - a[1] + 1, dz = b[2] - a[2] + 1;
        if (dx > __BIG__ || dy > __BIG__ || dz > __BIG__ || dx * dy * dz > __BIG__) {
          BIG[m0 + nb++] = m;
          for (int k = 0; k < 3; ++k) b[k] = a[k] - 1;
        }
        for (int k = 0; k < 3; ++k) CHI[3 * m + k] = b[k];
        int u[3], v[3];
        inside(a, b, u, v);
        for (int cx = u[0]; cx <= v[0]; ++cx)
        for (int cy = u[1]; cy <= v[1]; ++cy)
        for (int cz = u[2]; cz <= v[2]; ++cz) {
          CNT[key(cx, cy, cz)] += 1;
          const int ux = cx - dx0, uy = cy - dy0, uz = cz - dz0;
          if (dense && ux >= 0 && ux < dnx && uy >= 0 && uy < dny && uz >= 0 && uz < dnz) {
            const long long c = ((long long)ux * dny + uy) * dnz + uz;
            __atomic_store_n(&OCC[c], (unsigned char)1, __ATOMIC_RELAXED);
          }
        }
      }
      J->bigs[r] = nb;
    } else {
      for (int m = m0; m < m1; ++m) {
        int u[3], v[3];
        inside(CLO + 3 * m, CHI + 3 * m, u, v);
        for (int cx = u[0]; cx <= v[0]; ++cx)
        for (int cy = u[1]; cy <= v[1]; ++cy)
        for (int cz = u[2]; cz <= v[2]; ++cz) {
          const int e = CNT[key(cx, cy, cz)]++;
          if (e < cap) ENTRIES[e] = m;
        }
      }
    }
  }
  return nullptr;
}
}  // namespace meshgrid___TAG__
void mesh_grid___TAG__(void** ptrs, const int* ints) {
  using namespace meshgrid___TAG__;
  const int mask = ints[0], n = ints[1], ranges = ints[2], slot = ints[3], cap = ints[4];
  int threads = ints[5] < 1 ? 1 : (ints[5] > 8 ? 8 : ints[5]);
  if (threads > ranges) threads = ranges;
  if (n < 4096) threads = 1;
  const int buckets = mask + 1;
  int* COUNT = (int*)ptrs[3];
  int* START = (int*)ptrs[4];
  int* BIG = (int*)ptrs[8];
  int* OVER = (int*)ptrs[10];
  // the occupancy bytes of the region's cells, where there are few enough of them; keys by
  // the cells' index in the region where they fit in the buckets, else by their hash
  int keys = buckets;
  {
    const __REAL__* GP = (const __REAL__*)ptrs[2];
    const __REAL__ inv = GP[__GP_INV__];
    int* DENSE = (int*)ptrs[12];
    long long cells = 1;
    for (int k = 0; k < 3; ++k) {
      const int c0 = (int)wp::floor(GP[__GP_LO__ + k] * inv);
      const int c1 = (int)wp::floor(GP[__GP_HI__ + k] * inv);
      DENSE[k] = c0;
      DENSE[3 + k] = c1 - c0 + 1 > 0 ? c1 - c0 + 1 : 0;
      cells *= DENSE[3 + k];
    }
    DENSE[6] = cells > 0 && cells <= 4LL * ints[6];
    DENSE[7] = DENSE[6] && cells <= buckets;
    if (DENSE[7]) keys = (int)cells;
    unsigned char* OCC = (unsigned char*)ptrs[11];
    if (DENSE[6]) for (long long k = 0; k < cells; ++k) OCC[k] = 0;
  }
  for (int r = 0; r < ranges; ++r)
    for (int k = 0; k < keys; ++k) COUNT[(long long)r * buckets + k] = 0;
  int bigs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  Job jobs[8];
  for (int phase = 0; phase < 2; ++phase) {
    for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, nullptr, phase, bigs};
    pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, ranges,
                 [](void* job, int* next) { ((Job*)job)->next = next; });
    if (phase == 1) break;
    // the big boxes in box order (a range's bigs move down: they never pass their own start)
    const int size = (n + ranges - 1) / ranges;
    int nbig = 0;
    for (int r = 0; r < ranges; ++r)
      for (int k = 0; k < bigs[r]; ++k) BIG[nbig++] = BIG[r * size + k];
    ((int*)ptrs[9])[0] = nbig;
    // exclusive prefix sums: each range's cursor in a bucket follows the earlier ranges'
    int acc = 0;
    for (int key = 0; key < keys; ++key) {
      START[key] = acc;
      for (int r = 0; r < ranges; ++r) {
        const int c = COUNT[r * buckets + key];
        COUNT[r * buckets + key] = acc;
        acc += c;
      }
    }
    for (int key = keys; key <= buckets; ++key) START[key] = acc;
    if (acc > cap) {
      OVER[slot] = 1;
      if (OVER[__OVER_SIZE__ + slot] < acc) OVER[__OVER_SIZE__ + slot] = acc;
    }
  }
"""


# The helpers of the narrow phases (``sgn``, ``safe_div``, ``barycentric``,
# ``closest_point_triangle``, ``first_crossing`` and ``may_cross`` of :mod:`.mesh_kernels` and
# :mod:`.selfcollision_kernels`), once per module whichever snippet comes first.
_NARROW = r"""
#ifndef MESH_NARROW___TAG__
#define MESH_NARROW___TAG__
namespace meshnarrow___TAG__ {
typedef __REAL__ R;
typedef wp::vec_t<3, R> V;
const R zero = R(0.0), one = R(1.0), half_ = R(0.5), tiny = R(__TINY__);
const R third = R(__THIRD__), inside_tol = R(__INSIDE_TOL__);
static inline R sgn(R x) {
  if (x > zero) return one;
  if (x < zero) return -one;
  return zero;
}
static inline R safe_div(R num, R den) { return den != zero ? num / den : zero; }
static inline V mix3(V a, R u, V b, R v, V c, R w) {
  return wp::add(wp::add(wp::mul(a, u), wp::mul(b, v)), wp::mul(c, w));
}
static inline void barycentric(V p, V a, V b, V c, R& u, R& v, R& w) {
  const V v0 = wp::sub(b, a), v1 = wp::sub(c, a), v2 = wp::sub(p, a);
  const R d00 = wp::dot(v0, v0), d01 = wp::dot(v0, v1), d11 = wp::dot(v1, v1);
  const R d20 = wp::dot(v2, v0), d21 = wp::dot(v2, v1);
  const R den = d00 * d11 - d01 * d01;
  v = safe_div(d11 * d20 - d01 * d21, den);
  w = safe_div(d00 * d21 - d01 * d20, den);
  u = one - v - w;
}
static inline void closest_point_triangle(V p, V a, V b, V c, R& u, R& v, R& w, int& face) {
  const V ab = wp::sub(b, a), ac = wp::sub(c, a), ap = wp::sub(p, a);
  const R d1 = wp::dot(ab, ap), d2 = wp::dot(ac, ap), aa = wp::dot(ab, ab);
  const R cc = wp::dot(ac, ac), bc_ = wp::dot(ab, ac);
  const R d3 = d1 - aa, d4 = d2 - bc_, d5 = d1 - bc_, d6 = d2 - cc;
  const R vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
  const R den = va + vb + vc;
  v = zero; w = zero; face = 0;
  const R d43 = d4 - d3, d56 = d5 - d6;
  if (d1 <= zero && d2 <= zero) { v = zero; w = zero; }
  else if (d3 >= zero && d4 <= d3) { v = one; w = zero; }
  else if (vc <= zero && d1 >= zero && d3 <= zero) { v = safe_div(d1, d1 - d3); w = zero; }
  else if (d6 >= zero && d5 <= d6) { v = zero; w = one; }
  else if (vb <= zero && d2 >= zero && d6 <= zero) { v = zero; w = safe_div(d2, d2 - d6); }
  else if (va <= zero && d43 >= zero && d56 >= zero) { w = safe_div(d43, d43 + d56); v = one - w; }
  else { v = safe_div(vb, den); w = safe_div(vc, den); if (den > zero) face = 1; }
  v = wp::clamp(v, zero, one);
  w = wp::clamp(w, zero, one - v);
  u = one - v - w;
}
static inline R cubic(R c0, R c1, R c2, R c3, R t) { return ((c3 * t + c2) * t + c1) * t + c0; }
static inline int first_crossing(V x0, V x1, V a0, V a1, V b0, V b1, V c0, V c1, R& t_hit,
                                 R& bu, R& bv, R& bw, R& side) {
  const V e0 = wp::sub(x0, a0);
  const V de = wp::sub(wp::sub(x1, x0), wp::sub(a1, a0));
  const V ab0 = wp::sub(b0, a0);
  const V dab = wp::sub(wp::sub(b1, b0), wp::sub(a1, a0));
  const V ac0 = wp::sub(c0, a0);
  const V dac = wp::sub(wp::sub(c1, c0), wp::sub(a1, a0));
  const V n0 = wp::cross(ab0, ac0);
  const V n1 = wp::add(wp::cross(ab0, dac), wp::cross(dab, ac0));
  const V n2 = wp::cross(dab, dac);
  const R k0 = wp::dot(e0, n0);
  const R k1 = wp::dot(e0, n1) + wp::dot(de, n0);
  const R k2 = wp::dot(e0, n2) + wp::dot(de, n1);
  const R k3 = wp::dot(de, n2);
  side = sgn(k0);
  t_hit = one; bu = one; bv = zero; bw = zero;
  if (side == zero) return 0;
  const R qa = R(3.0) * k3, qb = R(2.0) * k2, qc = k1;
  const R disc = qb * qb - R(4.0) * qa * qc;
  const R sq = wp::sqrt(wp::max(disc, zero));
  R r1 = zero, r2 = zero;
  if (wp::abs(qa) > zero) {
    if (disc >= zero) {
      r1 = (-qb - sq) / (R(2.0) * qa);
      r2 = (-qb + sq) / (R(2.0) * qa);
    }
  } else {
    r1 = safe_div(-qc, qb);
    r2 = r1;
  }
  R lo_r = wp::clamp(wp::min(r1, r2), zero, one);
  R hi_r = wp::clamp(wp::max(r1, r2), zero, one);
  if (!wp::isfinite(lo_r)) lo_r = zero;
  if (!wp::isfinite(hi_r)) hi_r = zero;
  R f_lo = cubic(k0, k1, k2, k3, zero);
  for (int piece = 0; piece < 3; ++piece) {
    R lo = zero, hi = one;
    if (piece == 0) hi = lo_r;
    else if (piece == 1) { lo = lo_r; hi = hi_r; }
    else lo = hi_r;
    const R f_hi = cubic(k0, k1, k2, k3, hi);
    const bool live = hi > lo && sgn(f_lo) * sgn(f_hi) <= zero;
    f_lo = f_hi;
    if (live) {
      R t0 = lo, t1 = hi;
      const R s0 = sgn(cubic(k0, k1, k2, k3, t0));
      for (int k = 0; k < __BISECTIONS__; ++k) {
        const R mid = half_ * (t0 + t1);
        if (sgn(cubic(k0, k1, k2, k3, mid)) == s0) t0 = mid;
        else t1 = mid;
      }
      const V xt = wp::add(x0, wp::mul(wp::sub(x1, x0), t1));
      const V at = wp::add(a0, wp::mul(wp::sub(a1, a0), t1));
      const V bt = wp::add(b0, wp::mul(wp::sub(b1, b0), t1));
      const V ct = wp::add(c0, wp::mul(wp::sub(c1, c0), t1));
      R u, v, w;
      barycentric(xt, at, bt, ct, u, v, w);
      if (u >= -inside_tol && v >= -inside_tol && w >= -inside_tol) {
        t_hit = t1; bu = u; bv = v; bw = w;
        return 1;
      }
    }
  }
  return 0;
}
static inline bool may_cross(R plane0, V dx, V a0, V a1, V b0, V b1, V c0, V c1) {
  const V ra = wp::sub(dx, wp::sub(a1, a0));
  const V rb = wp::sub(dx, wp::sub(b1, b0));
  const V rc = wp::sub(dx, wp::sub(c1, c0));
  const R rel = wp::max(wp::max(wp::dot(ra, ra), wp::dot(rb, rb)), wp::dot(rc, rc));
  return wp::abs(plane0) <= wp::sqrt(rel) + tiny;
}
}  // namespace meshnarrow___TAG__
#endif
"""

# The narrow phase of the cloth vertices (``cloth_vertices`` and ``recheck`` of
# :mod:`.mesh_kernels`, with their helpers ``continuous_pass``, ``first_crossing``,
# ``may_cross``, ``barycentric``, ``closest_point_triangle`` and ``contact_friction``): Warp's
# own vector functions, the same operations in the same order; each vertex reads the shared
# collider arrays and writes only its own entries. The function's closing brace is Warp's.
_VERTICES = r"""
void mesh_vertices___TAG__(void** ptrs, const int* ints, const __REAL__* reals);
void* pbd_ptrs[] = {(void*)p.data, (void*)x_prev.data, (void*)inv_mass.data,
                    (void*)thickness_scale.data, (void*)friction_scale.data, (void*)v0.data,
                    (void*)v1.data, (void*)tris.data, (void*)n0.data, (void*)n1.data,
                    (void*)orientation.data, (void*)cand.data, (void*)ncand.data,
                    (void*)trapped.data, (void*)moved.data, (void*)contact.data,
                    (void*)contact_normal.data, (void*)surface_velocity.data};
const int pbd_ints[] = {step, slots, n, mode, threads};
const __REAL__ pbd_reals[] = {thickness, mu_s, mu_k, h};
mesh_vertices___TAG__(pbd_ptrs, pbd_ints, pbd_reals);
}
__PTHREAD__
__NARROW__
namespace meshvert___TAG__ {
const int BLOCK = 64;
using namespace meshnarrow___TAG__;
struct Job { void** ptrs; const int* ints; const R* reals; int* next; };
struct Mesh { const V* v0; const V* v1; const int* tris; const V* n0; const V* n1;
              const int* cand; const int* ncand; int slots; };
static inline V continuous_pass(const Mesh& M, int i, V xi, V x0, R own) {
  int best = -1;
  R best_t = one, bu = one, bv = zero, bw = zero, best_side = zero;
  const V dx = wp::sub(xi, x0);
  for (int s = 0; s < M.ncand[i]; ++s) {
    const int j = M.cand[i * M.slots + s];
    const int* t = M.tris + 3 * j;
    const V a0 = M.v0[t[0]], b0 = M.v0[t[1]], c0 = M.v0[t[2]];
    const V a1 = M.v1[t[0]], b1 = M.v1[t[1]], c1 = M.v1[t[2]];
    const R plane0 = wp::dot(wp::sub(x0, a0), M.n0[j]);
    if (!may_cross(plane0, dx, a0, a1, b0, b1, c0, c1)) continue;
    R th, u, v, w, side;
    const int hit = first_crossing(x0, xi, a0, a1, b0, b1, c0, c1, th, u, v, w, side);
    if (hit != 0 && (best < 0 || th < best_t || (th == best_t && j < best))) {
      best = j; best_t = th; bu = u; bv = v; bw = w; best_side = side;
    }
  }
  if (best < 0) return xi;
  const int* t = M.tris + 3 * best;
  const V at = mix3(M.v1[t[0]], bu, M.v1[t[1]], bv, M.v1[t[2]], bw);
  return wp::add(at, wp::mul(M.n1[best], best_side * own));
}
static void* work(void* arg) {
  Job* J = (Job*)arg;
  void** P = J->ptrs;
  V* X1 = (V*)P[0];
  const V* X0 = (const V*)P[1];
  const R* W = (const R*)P[2];
  const R* TS = (const R*)P[3];
  const R* FS = (const R*)P[4];
  const R* ORIENT = (const R*)P[10];
  const int* TRAPPED = (const int*)P[13];
  int* MOVED = (int*)P[14];
  int* CONTACT = (int*)P[15];
  V* CNORMAL = (V*)P[16];
  V* SURFACE = (V*)P[17];
  Mesh M{(const V*)P[5], (const V*)P[6], (const int*)P[7], (const V*)P[8], (const V*)P[9],
         (const int*)P[11], (const int*)P[12], J->ints[1]};
  const int step = J->ints[0], n = J->ints[2], mode = J->ints[3];
  const R thickness = J->reals[0], mu_s = J->reals[1], mu_k = J->reals[2], h = J->reals[3];
  const R orient = ORIENT[step];
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < n;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
  const int b1 = b0 + BLOCK < n ? b0 + BLOCK : n;
  for (int i = b0; i < b1; ++i) {
    if (mode == 1) {  // recheck
      if (MOVED[i] == 0 || W[i] <= zero || TRAPPED[i] >= 0) continue;
      X1[i] = continuous_pass(M, i, X1[i], X0[i], thickness * TS[i]);
      continue;
    }
    MOVED[i] = 0;
    if (W[i] <= zero || M.ncand[i] == 0) continue;
    const V x0 = X0[i];
    const R own = thickness * TS[i];
    const int mine = TRAPPED[i];
    V xi = X1[i];
    if (mine < 0) xi = continuous_pass(M, i, xi, x0, own);
    int best = -1;
    R best_gap = zero, bu = zero, bv = zero, bw = zero;
    V best_n = V(zero, zero, zero);
    for (int s = 0; s < M.ncand[i]; ++s) {
      const int j = M.cand[i * M.slots + s];
      if (mine >= 0 && j != mine) continue;
      const int* t = M.tris + 3 * j;
      const V a0 = M.v0[t[0]], a1 = M.v1[t[0]], b1 = M.v1[t[1]], c1 = M.v1[t[2]];
      const V nj0 = M.n0[j], nj1 = M.n1[j];
      R side = sgn(wp::dot(wp::sub(x0, a0), nj0));
      if (mine >= 0) side = orient;
      if (side == zero) {  // in the plane at the start: the side the triangle moves toward
        const V shift = wp::mul(wp::add(wp::add(wp::sub(a1, a0), wp::sub(b1, M.v0[t[1]])),
                                        wp::sub(c1, M.v0[t[2]])), third);
        const R toward = sgn(wp::dot(shift, nj0));
        side = toward;
        if (toward == zero) {
          side = orient;
          if (orient == zero) side = one;
        }
      }
      if (side * wp::dot(wp::sub(xi, a1), nj1) >= own) continue;
      R u, v, w;
      int face;
      closest_point_triangle(xi, a1, b1, c1, u, v, w, face);
      const V diff = wp::sub(xi, mix3(a1, u, b1, v, c1, w));
      const R dist = wp::length(diff);
      const R plane = side * wp::dot(diff, nj1);
      if (face == 0 && plane < zero) {
        R pu, pv, pw;
        barycentric(xi, a1, b1, c1, pu, pv, pw);
        if (pu >= -inside_tol && pv >= -inside_tol && pw >= -inside_tol) face = 1;
      }
      if (mine >= 0) face = 1;
      R gap = dist;
      V nrm = wp::mul(nj1, side);
      if (face != 0) gap = plane;
      else if (dist > zero) nrm = wp::div(diff, dist);
      if (gap < own && (best < 0 || gap < best_gap || (gap == best_gap && j < best))) {
        best = j; best_gap = gap; best_n = nrm; bu = u; bv = v; bw = w;
      }
    }
    if (best < 0) {
      X1[i] = xi;
      continue;
    }
    const int* t = M.tris + 3 * best;
    const R depth = own - best_gap;
    V target = wp::add(xi, wp::mul(best_n, depth));
    const V surface = mix3(wp::sub(M.v1[t[0]], M.v0[t[0]]), bu,
                           wp::sub(M.v1[t[1]], M.v0[t[1]]), bv,
                           wp::sub(M.v1[t[2]], M.v0[t[2]]), bw);
    const R fs = FS[i];
    {  // contact_friction: Coulomb friction relative to the surface
      const R ms = mu_s * fs, mk = mu_k * fs;
      V slip = wp::sub(wp::sub(target, x0), surface);
      slip = wp::sub(slip, wp::mul(best_n, wp::dot(slip, best_n)));
      const R slip_len = wp::length(slip);
      R scale = zero;
      if (slip_len < ms * depth) scale = one;
      else if (slip_len > zero) scale = wp::min(mk * depth / slip_len, one);
      target = wp::sub(target, wp::mul(slip, scale));
    }
    X1[i] = target;
    MOVED[i] = 1;
    CONTACT[i] = 1;
    CNORMAL[i] = best_n;
    SURFACE[i] = wp::div(surface, h);
  }
  }
  return nullptr;
}
}  // namespace meshvert___TAG__
void mesh_vertices___TAG__(void** ptrs, const int* ints, const __REAL__* reals) {
  using namespace meshvert___TAG__;
  const int n = ints[2];
  int threads = ints[4] < 1 ? 1 : (ints[4] > 8 ? 8 : ints[4]);
  if (n < 4 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, reals, nullptr};
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
"""


# The fail-safe of closed meshes (``find_trapped`` of :mod:`.mesh_kernels`, with its helper
# ``winding``): each cloth vertex behind the nearest of its candidate triangles at the
# substep's start (by their pseudo-normal) with a winding number above one half there is
# trapped. Warp's own vector functions, the same operations in the same order; each vertex
# reads the shared arrays and writes only its own entry. The function's closing brace is
# Warp's.
_TRAPPED = r"""
void mesh_trapped___TAG__(void** ptrs, const int* ints);
void* pbd_ptrs[] = {(void*)x_prev.data, (void*)inv_mass.data, (void*)v0.data, (void*)tris.data,
                    (void*)n0.data, (void*)orientation.data, (void*)cand.data,
                    (void*)ncand.data, (void*)trapped.data};
const int pbd_ints[] = {step, slots, n, tris.shape[0], threads};
mesh_trapped___TAG__(pbd_ptrs, pbd_ints);
}
__PTHREAD__
__NARROW__
namespace meshtrap___TAG__ {
const int BLOCK = 64;
using namespace meshnarrow___TAG__;
const R four_pi = R(__FOUR_PI__), near_scale = R(__NEAR_SCALE__);
struct Job { void** ptrs; const int* ints; int* next; };
// the generalized winding number of the collider at x (Jacobson et al. 2013; solid angles
// after Van Oosterom and Strackee 1983)
static R winding(V x, const V* v0, const int* tris, int m) {
  R total = zero;
  for (int j = 0; j < m; ++j) {
    const int* t = tris + 3 * j;
    const V a = wp::sub(v0[t[0]], x), b = wp::sub(v0[t[1]], x), c = wp::sub(v0[t[2]], x);
    const R la = wp::length(a), lb = wp::length(b), lc = wp::length(c);
    const R det = wp::dot(a, wp::cross(b, c));
    const R den = la * lb * lc + wp::dot(a, b) * lc + wp::dot(b, c) * la + wp::dot(c, a) * lb;
    total += wp::atan2(det, den);
  }
  return R(2.0) * total / four_pi;
}
static void* work(void* arg) {
  Job* J = (Job*)arg;
  void** P = J->ptrs;
  const V* X0 = (const V*)P[0];
  const R* W = (const R*)P[1];
  const V* V0 = (const V*)P[2];
  const int* TRIS = (const int*)P[3];
  const V* N0 = (const V*)P[4];
  const R* ORIENT = (const R*)P[5];
  const int* CAND = (const int*)P[6];
  const int* NCAND = (const int*)P[7];
  int* TRAPPED = (int*)P[8];
  const int step = J->ints[0], slots = J->ints[1], n = J->ints[2], m = J->ints[3];
  const R orient = ORIENT[step];
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < n;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
  const int b1 = b0 + BLOCK < n ? b0 + BLOCK : n;
  for (int i = b0; i < b1; ++i) {
    TRAPPED[i] = -1;
    const int count = NCAND[i];
    if (W[i] <= zero || orient == zero || count == 0) continue;
    const V x0 = X0[i];
    const int* mine = CAND + i * slots;
    bool behind = false;  // behind some candidate's plane: else it cannot be behind the nearest
    for (int s = 0; s < count; ++s) {
      const int j = mine[s];
      if (orient * wp::dot(wp::sub(x0, V0[TRIS[3 * j]]), N0[j]) < zero) behind = true;
    }
    if (!behind) continue;
    // x0 less its closest point on candidate triangle j
    auto offset = [&](int j) -> V {
      const int* t = TRIS + 3 * j;
      const V a = V0[t[0]], b = V0[t[1]], c = V0[t[2]];
      R u, v, w;
      int face;
      closest_point_triangle(x0, a, b, c, u, v, w, face);
      return wp::sub(x0, mix3(a, u, b, v, c, w));
    };
    int best = -1;
    R best_d2 = zero;
    V best_diff = V(zero, zero, zero);
    for (int s = 0; s < count; ++s) {
      const int j = mine[s];
      const V diff = offset(j);
      const R d2 = wp::dot(diff, diff);
      if (best < 0 || d2 < best_d2 || (d2 == best_d2 && j < best)) {
        best = j; best_d2 = d2; best_diff = diff;
      }
    }
    const R near = best_d2 * near_scale + tiny * tiny;
    V pseudo = V(zero, zero, zero);
    for (int s = 0; s < count; ++s) {
      const int j = mine[s];
      const V diff = offset(j);
      if (wp::dot(diff, diff) <= near) pseudo = wp::add(pseudo, N0[j]);
    }
    if (orient * wp::dot(best_diff, pseudo) >= zero) continue;
    if (wp::abs(winding(x0, V0, TRIS, m)) > half_) TRAPPED[i] = best;
  }
  }
  return nullptr;
}
}  // namespace meshtrap___TAG__
void mesh_trapped___TAG__(void** ptrs, const int* ints) {
  using namespace meshtrap___TAG__;
  const int n = ints[2];
  int threads = ints[4] < 1 ? 1 : (ints[4] > 8 ? 8 : ints[4]);
  if (n < 4 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, nullptr};
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
"""


# Collider vertices against the cloth's triangles (``collider_vertices``, then ``apply_pushes``
# of :mod:`.mesh_kernels`, ``mode`` 0), or sharp collider edges against the cloth's edges
# (``collider_edges``, then ``apply_edge_pushes``, ``mode`` 1, with ``closest_points_segments``):
# the triangles or edges (each writes its own corners' pushes), then, once every one is done,
# the vertices (each takes the largest push of its triangles or edges). The function's closing
# brace is Warp's.
_PUSHES = r"""
void mesh_pushes___TAG__(void** ptrs, const int* ints, const __REAL__* reals);
void* pbd_ptrs[] = {(void*)p.data, (void*)x_prev.data, (void*)inv_mass.data,
                    (void*)thickness_scale.data, (void*)owners.data, (void*)v0.data,
                    (void*)v1.data, (void*)cand.data, (void*)ncand.data, (void*)push_len.data,
                    (void*)push_dir.data, (void*)own_start.data, (void*)own_list.data,
                    (void*)moved.data, (void*)sharp.data};
const int pbd_ints[] = {slots, owners.shape[0] / (mode == 0 ? 3 : 2), n, mode, threads};
const __REAL__ pbd_reals[] = {thickness};
mesh_pushes___TAG__(pbd_ptrs, pbd_ints, pbd_reals);
}
__PTHREAD__
__NARROW__
namespace meshpush___TAG__ {
using namespace meshnarrow___TAG__;
const int BLOCK = 64;
const R edge_slack = R(__EDGE_SLACK__), parallel = R(__PARALLEL__);
struct Job { void** ptrs; const int* ints; const R* reals; int* next; int phase; };
static inline V unit(V m) {
  const R length = wp::length(m);
  if (length > zero) return wp::div(m, length);
  return V(zero, zero, zero);
}
static inline void closest_points_segments(V p1, V p2, V q1, V q2, R& s, R& t) {
  const V d1 = wp::sub(p2, p1), d2 = wp::sub(q2, q1), r = wp::sub(p1, q1);
  const R a = wp::dot(d1, d1), e = wp::dot(d2, d2), f = wp::dot(d2, r), c = wp::dot(d1, r);
  const R b = wp::dot(d1, d2);
  const R den = a * e - b * b;
  s = zero;
  if (den > tiny * a * e) s = wp::clamp(safe_div(b * f - c * e, den), zero, one);
  t = safe_div(b * s + f, e);
  if (t < zero) s = wp::clamp(safe_div(-c, a), zero, one);
  else if (t > one) s = wp::clamp(safe_div(b - c, a), zero, one);
  t = wp::clamp(t, zero, one);
}
// collider_edges: cloth edge f against its candidate sharp edges
static inline void edge_pushes(int f, const V* X0, const V* X1, const R* WM, const R* TS,
                               const int* E, const int* SHARP, const V* Q0, const V* Q1,
                               const int* CAND, const int* NCAND, int slots, R thickness,
                               R* PLEN, V* PDIR) {
  const int e0 = E[2 * f], e1 = E[2 * f + 1];
  R best0 = zero, best1 = zero;
  V dir0 = V(zero, zero, zero), dir1 = dir0;
  if (NCAND[f] > 0) {
    const V a0 = X0[e0], b0 = X0[e1], a1 = X1[e0], b1 = X1[e1];
    const R wa = WM[e0], wb = WM[e1];
    const R own = thickness * half_ * (TS[e0] + TS[e1]);
    const V ab = wp::sub(b1, a1);
    for (int s = 0; s < NCAND[f]; ++s) {
      const int k = CAND[f * slots + s];
      const int* c = SHARP + 2 * k;
      const V c0 = Q0[c[0]], d0 = Q0[c[1]], c1 = Q1[c[0]], d1 = Q1[c[1]];
      const V m0 = wp::cross(wp::sub(b0, a0), wp::sub(d0, c0));
      R s0, t0;
      closest_points_segments(a0, b0, c0, d0, s0, t0);
      const R side = sgn(wp::dot(m0, wp::sub(wp::add(a0, wp::mul(wp::sub(b0, a0), s0)),
                                              wp::add(c0, wp::mul(wp::sub(d0, c0), t0)))));
      const V cd = wp::sub(d1, c1);
      const V m1 = wp::cross(ab, cd);
      const R len1 = wp::length(m1);
      const R lens = wp::sqrt(wp::dot(ab, ab) * wp::dot(cd, cd));
      R sp, tp;
      closest_points_segments(a1, b1, c1, d1, sp, tp);
      if (!(sp > zero && sp < one && tp > zero && tp < one)) continue;
      if (side == zero || !(len1 > parallel * lens) || !(wp::dot(m0, m0) > zero)) continue;
      V n = wp::div(m1, len1);
      if (wp::dot(n, m0) < zero) n = -n;
      const R gap = side * wp::dot(n, wp::sub(wp::add(a1, wp::mul(ab, sp)),
                                               wp::add(c1, wp::mul(cd, tp))));
      if (!(gap < own)) continue;
      const R den = wa * (one - sp) * (one - sp) + wb * sp * sp;
      if (!(den > zero)) continue;
      const R lam = (own - gap) / den;
      const R la = lam * wa * (one - sp);
      const R lb = lam * wb * sp;
      if (la > zero && la > best0) { best0 = la; dir0 = wp::mul(n, side); }
      if (lb > zero && lb > best1) { best1 = lb; dir1 = wp::mul(n, side); }
    }
  }
  PLEN[2 * f] = best0;
  PLEN[2 * f + 1] = best1;
  PDIR[2 * f] = dir0;
  PDIR[2 * f + 1] = dir1;
}
static void* work(void* arg) {
  Job* J = (Job*)arg;
  void** P = J->ptrs;
  V* X1 = (V*)P[0];
  const V* X0 = (const V*)P[1];
  const R* WM = (const R*)P[2];
  const R* TS = (const R*)P[3];
  const int* OWN = (const int*)P[4];
  const V* Q0 = (const V*)P[5];
  const V* Q1 = (const V*)P[6];
  const int* CAND = (const int*)P[7];
  const int* NCAND = (const int*)P[8];
  R* PLEN = (R*)P[9];
  V* PDIR = (V*)P[10];
  const int* OSTART = (const int*)P[11];
  const int* OLIST = (const int*)P[12];
  int* MOVED = (int*)P[13];
  const int slots = J->ints[0], n_owners = J->ints[1], n = J->ints[2], mode = J->ints[3];
  const R thickness = J->reals[0];
  const int count = J->phase == 0 ? n_owners : n;
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < count;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
  const int b1 = b0 + BLOCK < count ? b0 + BLOCK : count;
  for (int q = b0; q < b1; ++q) {
    if (J->phase == 1) {  // a vertex takes the largest push of its triangles (edges)
      const int corners = mode == 0 ? 3 : 2;
      R best = zero;
      V best_dir = V(zero, zero, zero);
      for (int s = OSTART[q]; s < OSTART[q + 1]; ++s) {
        const int f = OLIST[s];
        const int* o = OWN + corners * f;
        int m = 0;
        if (o[1] == q) m = 1;
        else if (mode == 0 && o[2] == q) m = 2;
        const R length = PLEN[corners * f + m];
        if (mode == 0 ? wp::abs(length) > wp::abs(best) : length > best) {
          best = length;
          best_dir = PDIR[corners * f + m];
        }
      }
      if (mode == 0 ? best != zero : best > zero) {
        X1[q] = wp::add(X1[q], wp::mul(best_dir, best));
        MOVED[q] = 1;
      }
      continue;
    }
    const int f = q;
    if (mode == 1) {
      edge_pushes(f, X0, X1, WM, TS, OWN, (const int*)P[14], Q0, Q1, CAND, NCAND, slots,
                  thickness, PLEN, PDIR);
      continue;
    }
    const int ia = OWN[3 * f], ib = OWN[3 * f + 1], ic = OWN[3 * f + 2];
    const V xa0 = X0[ia], xb0 = X0[ib], xc0 = X0[ic];
    const V xa1 = X1[ia], xb1 = X1[ib], xc1 = X1[ic];
    R best[3] = {zero, zero, zero};
    V dir[3] = {V(zero, zero, zero), V(zero, zero, zero), V(zero, zero, zero)};
    int from[3] = {-1, -1, -1};
    if (NCAND[f] > 0) {
      const R own = thickness * (TS[ia] + TS[ib] + TS[ic]) / R(3.0);
      const V nrm0 = unit(wp::cross(wp::sub(xb0, xa0), wp::sub(xc0, xa0)));
      const V nrm1 = unit(wp::cross(wp::sub(xb1, xa1), wp::sub(xc1, xa1)));
      const R wa = WM[ia], wb = WM[ib], wc = WM[ic];
      for (int s = 0; s < NCAND[f]; ++s) {
        const int k = CAND[f * slots + s];
        const V q0 = Q0[k], q1 = Q1[k];
        const V dq = wp::sub(q1, q0);
        const R plane0 = wp::dot(wp::sub(q0, xa0), nrm0);
        R side = sgn(plane0);
        int hit = 0;
        if (may_cross(plane0, dq, xa0, xa1, xb0, xb1, xc0, xc1)) {
          R th, hu, hv, hw, hs;
          hit = first_crossing(q0, q1, xa0, xa1, xb0, xb1, xc0, xc1, th, hu, hv, hw, hs);
        }
        const R plane1 = wp::dot(wp::sub(q1, xa1), nrm1);
        if (side == zero) {  // the side its own path moves away from
          side = -sgn(wp::dot(dq, nrm0));
          if (side == zero) side = one;
        }
        if (hit == 0 && wp::abs(plane1) >= own) continue;
        R u, v, w;
        barycentric(q1, xa1, xb1, xc1, u, v, w);
        const R gap = side * plane1;
        const bool inside = u >= -edge_slack && v >= -edge_slack && w >= -edge_slack;
        if (hit == 0 && !(inside && gap < own && gap > -own)) continue;
        u = wp::max(u, zero);
        v = wp::max(v, zero);
        w = wp::max(w, zero);
        const R total = wp::max(u + v + w, tiny);
        u = u / total;
        v = v / total;
        w = w / total;
        const R den = wa * u * u + wb * v * v + wc * w * w;
        if (den <= zero) continue;
        const R g = side * wp::dot(wp::sub(q1, mix3(xa1, u, xb1, v, xc1, w)), nrm1);
        const R c = wp::min(g - own, zero);
        const R scale = c * side / den;
        const R l[3] = {scale * wa * u, scale * wb * v, scale * wc * w};
        for (int m = 0; m < 3; ++m) {
          if (l[m] != zero && (wp::abs(l[m]) > wp::abs(best[m]) || (
                  wp::abs(l[m]) == wp::abs(best[m]) && k < from[m]))) {
            best[m] = l[m];
            dir[m] = nrm1;
            from[m] = k;
          }
        }
      }
    }
    for (int m = 0; m < 3; ++m) { PLEN[3 * f + m] = best[m]; PDIR[3 * f + m] = dir[m]; }
  }
  }
  return nullptr;
}
}  // namespace meshpush___TAG__
void mesh_pushes___TAG__(void** ptrs, const int* ints, const __REAL__* reals) {
  using namespace meshpush___TAG__;
  const int n = ints[2];
  int threads = ints[4] < 1 ? 1 : (ints[4] > 8 ? 8 : ints[4]);
  if (n < 4 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int phase = 0; phase < 2; ++phase) {
    for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, reals, nullptr, phase};
    pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, phase == 0 ? ints[1] : n,
                 [](void* job, int* next) { ((Job*)job)->next = next; });
  }
"""


# The substep's collider (``mesh_pose``, then ``mesh_triangles`` of :mod:`.mesh_kernels`): the
# vertices at the substep's start and end and their paths' boxes, then, once every vertex is
# done, the triangles' swept boxes and unit normals. The function's closing brace is Warp's.
_POSE = r"""
void mesh_pose___TAG__(void** ptrs, const int* ints, const __REAL__* reals);
void* pbd_ptrs[] = {(void*)v_start.data, (void*)v_end.data, (void*)v0.data, (void*)v1.data,
                    (void*)vlo.data, (void*)vhi.data, (void*)tris.data, (void*)tlo.data,
                    (void*)thi.data, (void*)n0.data, (void*)n1.data};
const int pbd_ints[] = {v_start.shape[0], tris.shape[0], threads};
const __REAL__ pbd_reals[] = {alpha0, alpha1, band};
mesh_pose___TAG__(pbd_ptrs, pbd_ints, pbd_reals);
}
__PTHREAD__
__NARROW__
namespace meshpose___TAG__ {
using namespace meshnarrow___TAG__;
const int BLOCK = 256;
struct Job { void** ptrs; const int* ints; const R* reals; int* next; int phase; };
static inline V lerp3(V a, V b, R t) {
  if (t == zero) return a;
  if (t == one) return b;
  return wp::add(a, wp::mul(wp::sub(b, a), t));
}
static inline V unit(V m) {
  const R length = wp::length(m);
  if (length > zero) return wp::div(m, length);
  return V(zero, zero, zero);
}
static void* work(void* arg) {
  Job* J = (Job*)arg;
  void** P = J->ptrs;
  const V* VS = (const V*)P[0];
  const V* VE = (const V*)P[1];
  V* V0 = (V*)P[2];
  V* V1 = (V*)P[3];
  V* VLO = (V*)P[4];
  V* VHI = (V*)P[5];
  const int* TRIS = (const int*)P[6];
  V* TLO = (V*)P[7];
  V* THI = (V*)P[8];
  V* N0 = (V*)P[9];
  V* N1 = (V*)P[10];
  const R alpha0 = J->reals[0], alpha1 = J->reals[1], band = J->reals[2];
  const V g = V(band, band, band);
  const int count = J->phase == 0 ? J->ints[0] : J->ints[1];
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < count;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
  const int b1 = b0 + BLOCK < count ? b0 + BLOCK : count;
  for (int q = b0; q < b1; ++q) {
    if (J->phase == 0) {
      const V a = lerp3(VS[q], VE[q], alpha0);
      const V b = lerp3(VS[q], VE[q], alpha1);
      V0[q] = a;
      V1[q] = b;
      VLO[q] = wp::sub(wp::min(a, b), g);
      VHI[q] = wp::add(wp::max(a, b), g);
      continue;
    }
    const int* t = TRIS + 3 * q;
    const V a0 = V0[t[0]], b0_ = V0[t[1]], c0 = V0[t[2]];
    const V a1 = V1[t[0]], b1_ = V1[t[1]], c1 = V1[t[2]];
    TLO[q] = wp::sub(wp::min(wp::min(wp::min(a0, b0_), wp::min(c0, a1)), wp::min(b1_, c1)), g);
    THI[q] = wp::add(wp::max(wp::max(wp::max(a0, b0_), wp::max(c0, a1)), wp::max(b1_, c1)), g);
    N0[q] = unit(wp::cross(wp::sub(b0_, a0), wp::sub(c0, a0)));
    N1[q] = unit(wp::cross(wp::sub(b1_, a1), wp::sub(c1, a1)));
  }
  }
  return nullptr;
}
}  // namespace meshpose___TAG__
void mesh_pose___TAG__(void** ptrs, const int* ints, const __REAL__* reals) {
  using namespace meshpose___TAG__;
  int threads = ints[2] < 1 ? 1 : (ints[2] > 8 ? 8 : ints[2]);
  if (ints[1] < 4 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int phase = 0; phase < 2; ++phase) {
    for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, reals, nullptr, phase};
    pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, ints[phase],
                 [](void* job, int* next) { ((Job*)job)->next = next; });
  }
"""


@functools.cache
def build_mesh_native(precision: str = "float32") -> SimpleNamespace:
    """The native search kernel (CPU only) for scalars of ``precision``: ``search_all``,
    launched with dim 1, runs the Verlet search of every query of one ``kind``
    (:data:`KIND_VERTEX`, :data:`KIND_TRIANGLE`, :data:`KIND_EDGE`) over the grid given, as
    ``candidates``, ``triangle_candidates`` or ``edge_candidates`` of :mod:`.mesh_kernels`
    would (``what``: the overflow slot, ``n``: the query count)."""
    scalar: Any = wp.float32 if precision == "float32" else wp.float64
    vec3: Any = wp.types.vector(3, scalar)
    real = "float" if precision == "float32" else "double"
    module = f"pbdcloth_warp_meshnative_{precision}"
    wp.set_module_options({"enable_backward": False}, module=module)
    i32 = wp.int32

    def search_body(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                    inv_mass: wp.array(dtype=scalar), cloth_tris: wp.array(dtype=wp.vec3i),
                    cloth_edges: wp.array(dtype=wp.vec2i), kind: int, n: int, fresh: int,
                    margin: scalar, ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
                    gp: wp.array(dtype=scalar), mask: int, start: wp.array(dtype=i32),
                    entries: wp.array(dtype=i32), clo: wp.array(dtype=wp.vec3i),
                    big: wp.array(dtype=i32), big_count: wp.array(dtype=i32),
                    blo: wp.array(dtype=vec3), bhi: wp.array(dtype=vec3), slots: int,
                    cand: wp.array(dtype=i32), ncand: wp.array(dtype=i32),
                    over: wp.array(dtype=i32), what: int, occupancy: wp.array(dtype=i32),
                    dense: wp.array(dtype=i32), threads: int):
        ...

    # Warp names a function by its qualified name: one name per precision.
    search_body.__name__ = search_body.__qualname__ = f"mesh_search_{precision}"

    def _fill(text: str) -> str:
        text = text.replace("__PTHREAD__", _PTHREAD).replace("__NARROW__", _NARROW)
        text = text.replace("__TAG__", precision)
        for key, value in (("__REAL__", real), ("__GP_INV__", GP_INV), ("__GP_LO__", GP_LO),
                           ("__GP_HI__", GP_HI), ("__BIG__", BIG_CELLS),
                           ("__OVER_SIZE__", OVER_SIZE), ("__BISECTIONS__", BISECTIONS),
                           ("__INSIDE_TOL__", repr(float(INSIDE_TOLERANCE))),
                           ("__TINY__", repr(1e-12)), ("__THIRD__", repr(1.0 / 3.0)),
                           ("__EDGE_SLACK__", repr(float(EDGE_SLACK))),
                           ("__PARALLEL__", repr(float(PARALLEL))),
                           ("__FOUR_PI__", repr(4.0 * 3.141592653589793)),
                           ("__NEAR_SCALE__", repr(1.0 + 1e-4))):
            text = text.replace(key, str(value))
        return text

    search = wp.func_native(_fill(_SEARCH))(search_body)

    @wp.kernel(module=module)
    def search_all(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                   inv_mass: wp.array(dtype=scalar), cloth_tris: wp.array(dtype=wp.vec3i),
                   cloth_edges: wp.array(dtype=wp.vec2i), kind: int, n: int, fresh: int,
                   margin: scalar, ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
                   gp: wp.array(dtype=scalar), mask: int, start: wp.array(dtype=i32),
                   entries: wp.array(dtype=i32), clo: wp.array(dtype=wp.vec3i),
                   big: wp.array(dtype=i32), big_count: wp.array(dtype=i32),
                   blo: wp.array(dtype=vec3), bhi: wp.array(dtype=vec3), slots: int,
                   cand: wp.array(dtype=i32), ncand: wp.array(dtype=i32),
                   over: wp.array(dtype=i32), what: int, occupancy: wp.array(dtype=i32),
                   dense: wp.array(dtype=i32), threads: int):
        """The Verlet search of every query of one kind, on ``threads`` POSIX threads."""
        search(p, x_prev, inv_mass, cloth_tris, cloth_edges, kind, n, fresh, margin, ref_lo,
               ref_hi, gp, mask, start, entries, clo, big, big_count, blo, bhi, slots, cand,
               ncand, over, what, occupancy, dense, threads)

    def grid_body(lo: wp.array(dtype=vec3), hi: wp.array(dtype=vec3),
                  gp: wp.array(dtype=scalar), mask: int, n: int, ranges: int,
                  count: wp.array(dtype=i32), start: wp.array(dtype=i32),
                  entries: wp.array(dtype=i32), clo: wp.array(dtype=wp.vec3i),
                  chi: wp.array(dtype=wp.vec3i), big: wp.array(dtype=i32),
                  big_count: wp.array(dtype=i32), over: wp.array(dtype=i32), slot: int,
                  occupancy: wp.array(dtype=i32), dense: wp.array(dtype=i32), threads: int):
        ...

    grid_body.__name__ = grid_body.__qualname__ = f"mesh_grid_{precision}"
    grid = wp.func_native(_fill(_GRID))(grid_body)

    @wp.kernel(module=module)
    def grid_build(lo: wp.array(dtype=vec3), hi: wp.array(dtype=vec3),
                   gp: wp.array(dtype=scalar), mask: int, n: int, ranges: int,
                   count: wp.array(dtype=i32), start: wp.array(dtype=i32),
                   entries: wp.array(dtype=i32), clo: wp.array(dtype=wp.vec3i),
                   chi: wp.array(dtype=wp.vec3i), big: wp.array(dtype=i32),
                   big_count: wp.array(dtype=i32), over: wp.array(dtype=i32), slot: int,
                   occupancy: wp.array(dtype=i32), dense: wp.array(dtype=i32), threads: int):
        """A grid's build from the boxes ``lo``, ``hi`` (``ranges`` rows of ``count``), and
        the ``occupancy`` of the region's cells, a byte each (``dense``: the region's first
        cell and cell counts, and whether they fit in ``occupancy``'s words)."""
        grid(lo, hi, gp, mask, n, ranges, count, start, entries, clo, chi, big, big_count,
             over, slot, occupancy, dense, threads)

    def vertices_body(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                      inv_mass: wp.array(dtype=scalar), thickness_scale: wp.array(dtype=scalar),
                      friction_scale: wp.array(dtype=scalar), v0: wp.array(dtype=vec3),
                      v1: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                      n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3),
                      orientation: wp.array(dtype=scalar), step: int, slots: int,
                      cand: wp.array(dtype=i32), ncand: wp.array(dtype=i32),
                      trapped: wp.array(dtype=i32), moved: wp.array(dtype=i32),
                      thickness: scalar, mu_s: scalar, mu_k: scalar, h: scalar,
                      contact: wp.array(dtype=i32), contact_normal: wp.array(dtype=vec3),
                      surface_velocity: wp.array(dtype=vec3), n: int, mode: int,
                      threads: int):
        ...

    vertices_body.__name__ = vertices_body.__qualname__ = f"mesh_vertices_{precision}"
    vertices = wp.func_native(_fill(_VERTICES))(vertices_body)

    @wp.kernel(module=module)
    def vertices_all(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                     inv_mass: wp.array(dtype=scalar), thickness_scale: wp.array(dtype=scalar),
                     friction_scale: wp.array(dtype=scalar), v0: wp.array(dtype=vec3),
                     v1: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                     n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3),
                     orientation: wp.array(dtype=scalar), step: int, slots: int,
                     cand: wp.array(dtype=i32), ncand: wp.array(dtype=i32),
                     trapped: wp.array(dtype=i32), moved: wp.array(dtype=i32),
                     thickness: scalar, mu_s: scalar, mu_k: scalar, h: scalar,
                     contact: wp.array(dtype=i32), contact_normal: wp.array(dtype=vec3),
                     surface_velocity: wp.array(dtype=vec3), n: int, mode: int,
                     threads: int):
        """``cloth_vertices`` (``mode`` 0) or ``recheck`` (1) of every cloth vertex, on
        ``threads`` POSIX threads."""
        vertices(p, x_prev, inv_mass, thickness_scale, friction_scale, v0, v1, tris, n0, n1,
                 orientation, step, slots, cand, ncand, trapped, moved, thickness, mu_s, mu_k,
                 h, contact, contact_normal, surface_velocity, n, mode, threads)

    def pushes_body(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                    inv_mass: wp.array(dtype=scalar), thickness_scale: wp.array(dtype=scalar),
                    owners: wp.array(dtype=i32), v0: wp.array(dtype=vec3),
                    v1: wp.array(dtype=vec3), slots: int, cand: wp.array(dtype=i32),
                    ncand: wp.array(dtype=i32), thickness: scalar,
                    push_len: wp.array(dtype=scalar), push_dir: wp.array(dtype=vec3),
                    own_start: wp.array(dtype=i32), own_list: wp.array(dtype=i32),
                    moved: wp.array(dtype=i32), sharp: wp.array(dtype=wp.vec2i), n: int,
                    mode: int, threads: int):
        ...

    pushes_body.__name__ = pushes_body.__qualname__ = f"mesh_pushes_{precision}"
    pushes = wp.func_native(_fill(_PUSHES))(pushes_body)

    @wp.kernel(module=module)
    def pushes_all(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                   inv_mass: wp.array(dtype=scalar), thickness_scale: wp.array(dtype=scalar),
                   owners: wp.array(dtype=i32), v0: wp.array(dtype=vec3),
                   v1: wp.array(dtype=vec3), slots: int, cand: wp.array(dtype=i32),
                   ncand: wp.array(dtype=i32), thickness: scalar,
                   push_len: wp.array(dtype=scalar), push_dir: wp.array(dtype=vec3),
                   own_start: wp.array(dtype=i32), own_list: wp.array(dtype=i32),
                   moved: wp.array(dtype=i32), sharp: wp.array(dtype=wp.vec2i), n: int,
                   mode: int, threads: int):
        """``collider_vertices`` then ``apply_pushes`` (``mode`` 0, ``owners`` the cloth
        triangles' corners flat), or ``collider_edges`` then ``apply_edge_pushes`` (1,
        ``owners`` the cloth edges' ends flat), on ``threads`` POSIX threads."""
        pushes(p, x_prev, inv_mass, thickness_scale, owners, v0, v1, slots, cand, ncand,
               thickness, push_len, push_dir, own_start, own_list, moved, sharp, n, mode,
               threads)

    def trapped_body(x_prev: wp.array(dtype=vec3), inv_mass: wp.array(dtype=scalar),
                     v0: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                     n0: wp.array(dtype=vec3), orientation: wp.array(dtype=scalar), step: int,
                     slots: int, cand: wp.array(dtype=i32), ncand: wp.array(dtype=i32),
                     trapped: wp.array(dtype=i32), n: int, threads: int):
        ...

    trapped_body.__name__ = trapped_body.__qualname__ = f"mesh_trapped_{precision}"
    trapped_native = wp.func_native(_fill(_TRAPPED))(trapped_body)

    @wp.kernel(module=module)
    def trapped_all(x_prev: wp.array(dtype=vec3), inv_mass: wp.array(dtype=scalar),
                    v0: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                    n0: wp.array(dtype=vec3), orientation: wp.array(dtype=scalar), step: int,
                    slots: int, cand: wp.array(dtype=i32), ncand: wp.array(dtype=i32),
                    trapped: wp.array(dtype=i32), n: int, threads: int):
        """``find_trapped`` of every cloth vertex (the fail-safe of closed meshes), on
        ``threads`` POSIX threads."""
        trapped_native(x_prev, inv_mass, v0, tris, n0, orientation, step, slots, cand, ncand,
                       trapped, n, threads)

    def pose_body(v_start: wp.array(dtype=vec3), v_end: wp.array(dtype=vec3), alpha0: scalar,
                  alpha1: scalar, band: scalar, v0: wp.array(dtype=vec3),
                  v1: wp.array(dtype=vec3), vlo: wp.array(dtype=vec3),
                  vhi: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                  tlo: wp.array(dtype=vec3), thi: wp.array(dtype=vec3),
                  n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3), threads: int):
        ...

    pose_body.__name__ = pose_body.__qualname__ = f"mesh_pose_{precision}"
    pose = wp.func_native(_fill(_POSE))(pose_body)

    @wp.kernel(module=module)
    def pose_all(v_start: wp.array(dtype=vec3), v_end: wp.array(dtype=vec3), alpha0: scalar,
                 alpha1: scalar, band: scalar, v0: wp.array(dtype=vec3),
                 v1: wp.array(dtype=vec3), vlo: wp.array(dtype=vec3),
                 vhi: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                 tlo: wp.array(dtype=vec3), thi: wp.array(dtype=vec3),
                 n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3), threads: int):
        """``mesh_pose`` then ``mesh_triangles``, on ``threads`` POSIX threads."""
        pose(v_start, v_end, alpha0, alpha1, band, v0, v1, vlo, vhi, tris, tlo, thi, n0, n1,
             threads)

    return SimpleNamespace(module=module, search_all=search_all, grid_build=grid_build,
                           vertices_all=vertices_all, pushes_all=pushes_all,
                           pose_all=pose_all, trapped_all=trapped_all)
