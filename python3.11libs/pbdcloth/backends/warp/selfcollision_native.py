"""CPU-only native loops of the Warp self-collision stage: candidate searches and pair passes.

Why: on the CPU Warp runs a kernel's threads one after another, and its code generator keeps
every value of a thread in memory: the grid searches of :mod:`.selfcollision_list_kernels`
(``pt_triangles``, ``ee_edges``) cost ~4 ns per grid entry visited, most of it a mispredicted
branch (whether an entry's box overlaps the query's is a coin flip), and a full build of the
fold scene's edge-edge list walks ~5 million entries. Here the same searches are one native
C++ loop each (``wp.func_native``, compiled by Warp's clang with the module's flags), launched
with dim 1, every owner in index order:

* the grids' points (and box half extents) are read in entry order (copies written by the
  grid's counting sort), and the box test of a chunk of a key run is computed without
  branches, the entries that pass collected first and tested further one by one;
* a full edge-edge build scans each row forward along the sweep axis only: the pair goes to
  the edge whose midpoint comes first along it (then the lower index), as every partner lies
  within ``half + maxhalf + radius`` of an edge's midpoint; a partial update scans both ways
  (only the moving edges search).

In a chunk of a key run the box, corner and sphere tests (the edge search: also the shared
ends) are computed as flags in a loop without branches first, then the closest points of the
entries that pass (Ericson's regions and the segments' cases as selects instead of branches,
as flags in a second such loop: the same values), gathered over chunks and queries 256 pairs
at a time, since a query has only a few per chunk and a vectorized loop over those would run
mostly its scalar remainder. The pairs are those of the kernels (each
owner's slots are sorted afterwards, so the order of the pushes does not matter). Also native:
``pt_movers_all`` (a partial update's moving vertices against the triangles that did not move),
``grid_build_all`` (a row grid's bounds, keys and counting sort in one loop, the entries of a
key in point order as the kernels leave them), the slot loops ``compact_all``,
``sort_slots_all`` and ``gather_all`` (integers only), and the narrow phase's loops over a
family's pairs: ``pair_eval_all`` (a pass: the skip test of a block of pairs without branches,
then the geometry of the pairs to evaluate in chunks of 64 without branches, Ericson's regions
and the kernel's other branches as selects, in a loop the compiler vectorizes, then the
response of those in contact one by one), ``mark_crossed_all`` (the fail-safe's search, the
same text with the crossing test instead of the response), ``contact_relax_all``,
``contact_sums_all`` (the scattered sums and their application to the particles in one loop,
which also sets the counts that the pass raised back to 0, so the passes need no
``zero_counts``) and ``track_begin_all``.

Both cores: Warp runs a CPU launch on the calling thread and a recorded frame is one graph
replay, so the searches and the pair passes run on POSIX threads of their own (``threads``,
the tuning's ``warp_cpu_threads``, at most the machine's cores; a pool started once that
sleeps between loops, :data:`_PTHREAD`): the threads take
the next block of owners or pairs from a shared atomic counter until none is left, and the
caller waits only for blocks already taken (on a machine whose other core is busy, a thread
that has not started yet leaves all the work to the caller instead of holding it up; so
whether a loop runs at all is decided before its threads start, as a thread that starts late
works while blocks are left). What they share is order-free: an owner's slot cursor is an atomic integer (the slots are sorted
afterwards), contact counts are atomic integer additions, the touch and revert marks store one
value, and the deepest contact, the counters and the flags are combined after the blocks are
done. The relaxation's scattered sums, whose float order matters, stay on one thread. So the
results do not depend on the number of threads or their timing (tested against the one-thread
kernels, bit for bit).

Same arithmetic as the kernels they replace, in the same order (closest points: Ericson 2005,
"Real-Time Collision Detection", 5.1.5 and 5.1.9, as
:func:`~.selfcollision_kernels.build_self_kernels`). Tested (tests/test_warp_selfcollision.py):
the lists equal the numpy stage's pair for pair (float64), and against the Warp kernels
(float32, a sequence of full builds and partial updates through the fold scene) the same lists
in the same order and the same projected positions bit for bit.

``__REAL__`` in the C++ text is the scalar type of the kernels (``float`` or ``double``).
"""

# mypy: ignore-errors
# (kernel annotations are Warp's typed language)
import functools
from types import SimpleNamespace
from typing import Any

import warp as wp

from . import selfcollision_kernels as kk
from . import selfcollision_list_kernels as lk

# Shared C++ helpers: 3-vectors as three scalars, the grid's cell arithmetic, the slot push,
# the rest-exclusion lookup and the closest points.
_COMMON = r"""
  Job* J = (Job*)arg;
  const R* REF = (const R*)J->ptrs[0];
  const int* MOVER = (const int*)J->ptrs[1];
  const R radius = ((const R*)J->ptrs[2])[0];
  const R* GF = (const R*)J->ptrs[3];
  const int* GI = (const int*)J->ptrs[4];
  const int* START = (const int*)J->ptrs[5];
  const int* ENTRIES = (const int*)J->ptrs[6];
  const int* EXS = (const int*)J->ptrs[7];
  const int* EXC = (const int*)J->ptrs[8];
  const int mode = ((const int*)J->ptrs[9])[0];
  int* CNT = (int*)J->ptrs[10];
  int* KEYS = (int*)J->ptrs[11];
  const int mask = J->ints[0], slots = J->ints[1];
  const int sa = GI[0], ua = GI[1], wa = GI[2];
  const R inv = GF[0], inv_s = GF[1];
  const int buckets = mask + 1;
  auto cell = [](R x, R lo, R iv) -> int { return (int)wp::floor((x - lo) * iv); };
  auto row_hash = [mask](int iu, int iw) -> int {
    long long h = ((long long)iu * 73856093LL) ^ ((long long)iw * 19349663LL);
    return (int)(h & (long long)mask);
  };
  // an owner's next slot (atomic: another thread may push to the same owner; the slots are
  // sorted afterwards), counted past the end (the frame runs again with more slots)
  auto push = [&](int owner, int partner) {
    int f = __atomic_fetch_add(&CNT[owner], 1, __ATOMIC_RELAXED);
    if (f < slots) KEYS[owner * slots + f] = partner;
    else if (J->need < f + 1) J->need = f + 1;
  };
  auto listed = [&](int q, int x) -> bool {
    for (int k = EXS[q]; k < EXS[q + 1]; ++k) if (EXC[k] == x) return true;
    return false;
  };
  auto dot3 = [](const R* a, const R* b) -> R { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; };
  auto safe_div = [](R num, R den) -> R { return den != R(0) ? num / den : R(0); };
  auto clampr = [](R x, R lo, R hi) -> R { return x < lo ? lo : (x > hi ? hi : x); };
  const int CHUNK = 64;
  int hit[64];
  unsigned char okf[64];
"""

#: The Warp function body of a search: the arrays' pointers to the dispatcher below it, which
#: runs the owners in blocks on ``threads`` POSIX threads (each takes the next block left).
_SEARCH = r"""
void pbd_search___TAG__(void** ptrs, const int* ints);
void* pbd_ptrs[] = {(void*)ref.data, (void*)mover.data, (void*)radius_a.data, (void*)gf.data,
                    (void*)gi.data, (void*)start.data, (void*)entries.data,
                    (void*)excl_start.data, (void*)excluded.data, (void*)state.data,
                    (void*)cnt.data, (void*)keys.data, (void*)need.data, __FAMILY__};
const int pbd_ints[] = {mask, slots, __OWNERS__.shape[0], threads};
pbd_search___TAG__(pbd_ptrs, pbd_ints);
}
__PTHREAD__
namespace pbd___TAG__ {
typedef __REAL__ R;
const int BLOCK = 128;
struct Job { void** ptrs; const int* ints; int* next; int n, need; };
static void* work(void* arg) {
__COMMON__
__BODY__
  return nullptr;
}
}  // namespace pbd___TAG__
void pbd_search___TAG__(void** ptrs, const int* ints) {
  using namespace pbd___TAG__;
  // (the mode is tested here, not in work(): a thread that starts late runs work() as long
  // as blocks are left, so work() must take every block)
  if (!(((const int*)ptrs[9])[0] __RUN_IF__)) return;
  const int n = ints[2];
  int threads = ints[3] < 1 ? 1 : (ints[3] > 8 ? 8 : ints[3]);
  if (n < 2 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, nullptr, n, 0};
__PRELUDE__
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
  int* NEED = (int*)ptrs[12];
  for (int k = 0; k < threads; ++k) if (NEED[0] < jobs[k].need) NEED[0] = jobs[k].need;
"""


_EE = r"""
const int* EDGES = (const int*)J->ptrs[13];
const R* SPOS = (const R*)J->ptrs[14];
const R* SHALF = (const R*)J->ptrs[15];
const R* MID = (const R*)J->ptrs[16];
const R* HALF = (const R*)J->ptrs[17];
const int* SEDGE = (const int*)J->ptrs[19];
const R* SREACH = (const R*)J->ptrs[20];
const int M = J->n;
const R* SP1 = SREACH + M;
const R* SD = SREACH + 4 * M;
// the entries' midpoints and half extents by axis (SoA: the chunk loop loads them as vectors)
const R* SX[3] = {SREACH + 7 * M, SREACH + 8 * M, SREACH + 9 * M};
const R* SH[3] = {SREACH + 10 * M, SREACH + 11 * M, SREACH + 12 * M};
const int* SE0 = SEDGE;
const int* SE1 = SEDGE + M;
const int* SMV = SEDGE + 2 * M;
const R g = ((const R*)J->ptrs[18])[0] + radius;
const R r2 = radius * radius;
// the pairs that passed the chunk tests, of this and earlier queries (their entry, the query
// edge, its first end and direction), taken through the closest points PENDING at a time: a
// query's few hits per chunk would leave the vectorized loop mostly to its scalar remainder
const int PENDING = 256;
int pk[PENDING], pe[PENDING];
R pp[3][PENDING], pv[3][PENDING];
unsigned char pok[PENDING];
int np = 0;
auto flush = [&]() {
  // the segments' closest points (the lower edge's as p, the other's as q; selects instead
  // of branches: the same values), flags first in a loop the compiler vectorizes
#pragma clang loop vectorize(enable)
  for (int h = 0; h < np; ++h) {
    const int k = pk[h];
    const bool sw = ENTRIES[k] < pe[h];
    const R* e1 = SP1 + 3 * k;
    const R* e2 = SD + 3 * k;
    const R pi1[3] = {pp[0][h], pp[1][h], pp[2][h]};
    const R pd[3] = {pv[0][h], pv[1][h], pv[2][h]};
    const R p1[3] = {sw ? e1[0] : pi1[0], sw ? e1[1] : pi1[1], sw ? e1[2] : pi1[2]};
    const R q1[3] = {sw ? pi1[0] : e1[0], sw ? pi1[1] : e1[1], sw ? pi1[2] : e1[2]};
    const R d1[3] = {sw ? e2[0] : pd[0], sw ? e2[1] : pd[1], sw ? e2[2] : pd[2]};
    const R d2[3] = {sw ? pd[0] : e2[0], sw ? pd[1] : e2[1], sw ? pd[2] : e2[2]};
    const R rr[3] = {p1[0] - q1[0], p1[1] - q1[1], p1[2] - q1[2]};
    const R A = dot3(d1, d1), E = dot3(d2, d2), F = dot3(d2, rr), C = dot3(d1, rr);
    const R B = dot3(d1, d2);
    const R den = A * E - B * B;
    const R s0 = den > R(1e-12) * A * E ? clampr(safe_div(B * F - C * E, den), R(0), R(1))
                                         : R(0);
    R t = safe_div(B * s0 + F, E);
    const R s = t < R(0) ? clampr(safe_div(-C, A), R(0), R(1))
                         : (t > R(1) ? clampr(safe_div(B - C, A), R(0), R(1)) : s0);
    t = clampr(t, R(0), R(1));
    const R d[3] = {(p1[0] + d1[0] * s) - (q1[0] + d2[0] * t),
                    (p1[1] + d1[1] * s) - (q1[1] + d2[1] * t),
                    (p1[2] + d1[2] * s) - (q1[2] + d2[2] * t)};
    pok[h] = !(dot3(d, d) >= r2);
  }
  for (int h = 0; h < np; ++h) {
    if (!pok[h]) continue;
    const int i = pe[h], j = ENTRIES[pk[h]];
    const int lo_e = i < j ? i : j, hi_e = i < j ? j : i;
    if (listed(lo_e, hi_e)) continue;
    push(lo_e, hi_e);
  }
  np = 0;
};
for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
     b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
for (int i = b0; i < b1; ++i) {
  const int ei0 = EDGES[2 * i], ei1 = EDGES[2 * i + 1];
  if (mode == 1 && (MOVER[ei0] > MOVER[ei1] ? MOVER[ei0] : MOVER[ei1]) == 0) continue;
  const R* mi = MID + 3 * i;
  const R* hi_ = HALF + 3 * i;
  R lo[3], hi[3];
  for (int a = 0; a < 3; ++a) { lo[a] = mi[a] - hi_[a] - g; hi[a] = mi[a] + hi_[a] + g; }
  const R mis = mi[sa];
  const R reach_i = wp::sqrt(dot3(hi_, hi_));
  // the query edge's first end and direction (as the entries' SP1, SD)
  const R* pi1 = REF + 3 * ei0;
  const R* pi2 = REF + 3 * ei1;
  const R pd[3] = {pi2[0] - pi1[0], pi2[1] - pi1[1], pi2[2] - pi1[2]};
  // a full build scans forward along the sweep axis only: each pair is taken by the edge
  // whose midpoint comes first along it (then the lower index), which the other's box
  // reaches, as every partner lies within hi_ + maxhalf + radius of the midpoint
  const R s_from = mode == 2 ? mi[sa] : lo[sa];
__BUCKET_RUNS__      // the tests of a chunk of the run without branches (their outcome is a coin
      // flip, which a branch predictor cannot learn): the boxes, a partner taken by the other
      // edge, a shared end and the bounding spheres as flags first, a loop the compiler
      // vectorizes over the entries' data in entry order; then the indices of those set
      const int len = b1 - b0;
      const int* ent = ENTRIES + b0;
      const R* x0 = SX[0] + b0; const R* x1 = SX[1] + b0; const R* x2 = SX[2] + b0;
      const R* h0 = SH[0] + b0; const R* h1 = SH[1] + b0; const R* h2 = SH[2] + b0;
      const R* xs = SX[sa] + b0;
      const int* e0 = SE0 + b0; const int* e1 = SE1 + b0; const int* mv = SMV + b0;
      const R* sr = SREACH + b0;
#pragma clang loop vectorize(enable)
      for (int q = 0; q < len; ++q) {
        const int j = ent[q];
        const R mjs = xs[q];
        const R dm[3] = {x0[q] - mi[0], x1[q] - mi[1], x2[q] - mi[2]};
        const R reach = reach_i + sr[q] + radius;
        const bool ok = (j != i) & ((mode != 2) | (mjs > mis) | ((mjs == mis) & (j > i)))
            & !(wp::abs(x0[q] - mi[0]) > hi_[0] + h0[q] + radius)
            & !(wp::abs(x1[q] - mi[1]) > hi_[1] + h1[q] + radius)
            & !(wp::abs(x2[q] - mi[2]) > hi_[2] + h2[q] + radius)
            & !((mode == 1) & (j < i) & (mv[q] != 0))
            & (ei0 != e0[q]) & (ei0 != e1[q]) & (ei1 != e0[q]) & (ei1 != e1[q])
            & !(dot3(dm, dm) > reach * reach);
        okf[q] = ok;
      }
      int nh = 0;
      for (int q = 0; q < len; ++q) {
        hit[nh] = b0 + q;
        nh += okf[q];
      }
      for (int h = 0; h < nh; ++h) {
        pk[np + h] = hit[h];
        pe[np + h] = i;
      }
      for (int a = 0; a < 3; ++a)
        for (int h = 0; h < nh; ++h) { pp[a][np + h] = pi1[a]; pv[a][np + h] = pd[a]; }
      np += nh;
      if (np > PENDING - CHUNK) flush();
      }
    }
  }
}
}
flush();
"""

# The cells a box [lo, hi] covers across the sweep axis (u, w) and its run of buckets along
# it (from s_from's cell, s0 .. s0 + nk, wrapping once around the table), opened as loops over
# the runs' entries in chunks of CHUNK [b0, b1): the edge, moving-vertex and point-triangle
# searches share it (the edge search's full build starts at its midpoint: it scans forward).
_BUCKET_RUNS = r"""
  int u0 = cell(lo[ua], GF[2 + ua], inv); if (u0 < 0) u0 = 0;
  const int u1 = cell(hi[ua], GF[2 + ua], inv);
  int w0 = cell(lo[wa], GF[2 + wa], inv); if (w0 < 0) w0 = 0;
  const int w1 = cell(hi[wa], GF[2 + wa], inv);
  int s0 = cell(s_from, GF[2 + sa], inv_s); if (s0 < 0) s0 = 0;
  int nk = cell(hi[sa], GF[2 + sa], inv_s) - s0 + 1; if (nk > buckets) nk = buckets;
  if (nk <= 0) continue;
  for (int iu = u0; iu <= u1; ++iu) for (int iw = w0; iw <= w1; ++iw) {
    const int k0 = (row_hash(iu, iw) + s0) & mask;
    for (int part = 0; part < 2; ++part) {
      int e0 = 0, e1 = 0;
      if (part == 0) { e0 = START[k0]; e1 = START[k0 + nk < buckets ? k0 + nk : buckets]; }
      else if (k0 + nk > buckets) {
        e0 = START[0]; e1 = START[k0 + nk - buckets < k0 ? k0 + nk - buckets : k0];
      }
      for (int b0 = e0; b0 < e1; b0 += CHUNK) {
      const int b1 = b0 + CHUNK < e1 ? b0 + CHUNK : e1;
"""

# Partial updates: each moving vertex against the triangles that did not move, their box
# centres in the triangle grid (``pt_movers`` of :mod:`.selfcollision_list_kernels`): box
# tests of a chunk without branches, then the triangle's own tests and the pair test of
# ``_PT``, into the triangle's slots.
_PTM = r"""
const int* TRIS = (const int*)J->ptrs[13];
const R* SPOS = (const R*)J->ptrs[14];
const R* SHALF = (const R*)J->ptrs[15];
const R g = ((const R*)J->ptrs[16])[0] + radius;
const R third = R(1.0) / R(3.0);
const R r2 = radius * radius;
// the pairs that passed the box, corner and sphere tests, of this and earlier vertices (the
// triangle, the vertex; the triangle's corners, edges and their dot products and the vertex's
// position), taken through the closest points PENDING at a time (as the triangle search's)
const int PENDING = 256;
int ptri[PENDING], pvtx[PENDING];
R pq[21][PENDING];
unsigned char pok[PENDING];
int np = 0;
auto flush = [&]() {
#pragma clang loop vectorize(enable)
  for (int h = 0; h < np; ++h) {
    const R x[3] = {pq[18][h], pq[19][h], pq[20][h]};
__PT_PENDING__    pok[h] = !(dot3(d, d) >= r2);
  }
  for (int h = 0; h < np; ++h) {
    if (!pok[h]) continue;
    const int t = ptri[h], v = pvtx[h];
    if (listed(t, v)) continue;
    push(t, v);
  }
  np = 0;
};
for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
     b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
for (int v = b0; v < b1; ++v) {
  if (MOVER[v] == 0) continue;
  const R* x = REF + 3 * v;
  R lo[3], hi[3];
  for (int k = 0; k < 3; ++k) { lo[k] = x[k] - g; hi[k] = x[k] + g; }
  const R s_from = lo[sa];
__BUCKET_RUNS__      const int len = b1 - b0;
      const R* sp = SPOS + 3 * b0;
      const R* sh = SHALF + 3 * b0;
#pragma clang loop vectorize(enable)
      for (int q = 0; q < len; ++q) {
        const R* m = sp + 3 * q;
        const R* hb = sh + 3 * q;
        const R d[3] = {x[0] - m[0], x[1] - m[1], x[2] - m[2]};
        okf[q] = !(wp::abs(d[0]) > hb[0] + radius) & !(wp::abs(d[1]) > hb[1] + radius)
            & !(wp::abs(d[2]) > hb[2] + radius);
      }
      int nh = 0;
      for (int q = 0; q < len; ++q) {
        hit[nh] = b0 + q;
        nh += okf[q];
      }
      for (int h = 0; h < nh; ++h) {
        const int t = ENTRIES[hit[h]];
        const int c0 = TRIS[3 * t], c1 = TRIS[3 * t + 1], c2 = TRIS[3 * t + 2];
        if (MOVER[c0] != 0 || MOVER[c1] != 0 || MOVER[c2] != 0) continue;
        if (v == c0 || v == c1 || v == c2) continue;
        const R* a = REF + 3 * c0;
        const R* b = REF + 3 * c1;
        const R* c = REF + 3 * c2;
        R centre[3];
        for (int k = 0; k < 3; ++k) centre[k] = (a[k] + b[k] + c[k]) * third;
        const R da[3] = {a[0] - centre[0], a[1] - centre[1], a[2] - centre[2]};
        const R db[3] = {b[0] - centre[0], b[1] - centre[1], b[2] - centre[2]};
        const R dc[3] = {c[0] - centre[0], c[1] - centre[1], c[2] - centre[2]};
        R m2 = dot3(da, da); const R mb = dot3(db, db), mc = dot3(dc, dc);
        m2 = m2 > mb ? m2 : mb; m2 = m2 > mc ? m2 : mc;
        const R reach = wp::sqrt(m2) + radius;
        const R gx[3] = {x[0] - centre[0], x[1] - centre[1], x[2] - centre[2]};
        if (dot3(gx, gx) > reach * reach) continue;
        const R ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        const R ac[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const R tq[21] = {a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2],
                          ab[0], ab[1], ab[2], ac[0], ac[1], ac[2], dot3(ab, ab),
                          dot3(ac, ac), dot3(ab, ac), x[0], x[1], x[2]};
        for (int k = 0; k < 21; ++k) pq[k][np] = tq[k];
        ptri[np] = t;
        pvtx[np] = v;
        ++np;
      }
      if (np > PENDING - CHUNK) flush();
      }
    }
  }
}
}
flush();
"""

#: Before the edge-edge search's threads start: each grid entry's edge ends and whether it
#: moved (partial updates) as three arrays of M (SEDGE), its bounding sphere's radius
#: (SREACH[:M]), its first end and its direction (second end less first: SREACH[M:4 M],
#: SREACH[4 M:7 M], by entry) and its midpoint's and half extents' coordinates as six arrays
#: of M (SREACH[7 M:13 M]) in entry order, so the search reads them in memory order (the
#: chunk loop's as vectors).
_EE_PRELUDE = r"""
  {
    const int* ENTRIES = (const int*)ptrs[6];
    const int* EDGES = (const int*)ptrs[13];
    const R* SHALF = (const R*)ptrs[15];
    const int* MOVER = (const int*)ptrs[1];
    const R* REF = (const R*)ptrs[0];
    int* SEDGE = (int*)ptrs[19];
    R* SREACH = (R*)ptrs[20];
    const int mode = ((const int*)ptrs[9])[0];
    const R* SPOS = (const R*)ptrs[14];
    for (int k = 0; k < n; ++k) {
      const int j = ENTRIES[k];
      const int a = EDGES[2 * j], b = EDGES[2 * j + 1];
      SEDGE[k] = a;
      SEDGE[n + k] = b;
      SEDGE[2 * n + k] = mode == 1 ? (MOVER[a] > MOVER[b] ? MOVER[a] : MOVER[b]) : 0;
      const R* h = SHALF + 3 * k;
      SREACH[k] = wp::sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]);
      for (int c = 0; c < 3; ++c) {
        SREACH[(7 + c) * n + k] = SPOS[3 * k + c];
        SREACH[(10 + c) * n + k] = h[c];
      }
      const R* p1 = REF + 3 * a;
      const R* p2 = REF + 3 * b;
      for (int c = 0; c < 3; ++c) {
        SREACH[n + 3 * k + c] = p1[c];
        SREACH[4 * n + 3 * k + c] = p2[c] - p1[c];
      }
    }
  }
"""

#: The closest point of a triangle (corners a, b, c, edges ab, ac and their dot products aa,
#: bc_, cc) to the point x, as ``d``, x less the closest point; without branches (the
#: searches' pending pairs, in a loop the compiler vectorizes).
_PT_CLOSEST = r"""        // Ericson 2005, 5.1.5: the regions in his order, as the Warp kernel, each candidate
        // computed and the first region that holds selected last (the same values)
        const R ap[3] = {x[0] - a[0], x[1] - a[1], x[2] - a[2]};
        const R d1 = dot3(ab, ap), d2 = dot3(ac, ap);
        const R d3 = d1 - aa, d4 = d2 - bc_, d5 = d1 - bc_, d6 = d2 - cc;
        const R vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
        const R den = va + vb + vc;
        const R d43 = d4 - d3, d56 = d5 - d6;
        const bool r1 = (d1 <= R(0)) & (d2 <= R(0));
        const bool r2_ = (d3 >= R(0)) & (d4 <= d3);
        const bool r3 = (vc <= R(0)) & (d1 >= R(0)) & (d3 <= R(0));
        const bool r4 = (d6 >= R(0)) & (d5 <= d6);
        const bool r5 = (vb <= R(0)) & (d2 >= R(0)) & (d6 <= R(0));
        const bool r6 = (va <= R(0)) & (d43 >= R(0)) & (d56 >= R(0));
        R bv = safe_div(vb, den), bw = safe_div(vc, den);
        const R w6 = safe_div(d43, d43 + d56);
        bv = r6 ? R(1) - w6 : bv; bw = r6 ? w6 : bw;
        bv = r5 ? R(0) : bv; bw = r5 ? safe_div(d2, d2 - d6) : bw;
        bv = r4 ? R(0) : bv; bw = r4 ? R(1) : bw;
        bv = r3 ? safe_div(d1, d1 - d3) : bv; bw = r3 ? R(0) : bw;
        bv = r2_ ? R(1) : bv; bw = r2_ ? R(0) : bw;
        bv = r1 ? R(0) : bv; bw = r1 ? R(0) : bw;
        bv = clampr(bv, R(0), R(1));
        bw = clampr(bw, R(0), R(1) - bv);
        const R bu = R(1) - bv - bw;
        const R d[3] = {x[0] - ((a[0] * bu + b[0] * bv) + c[0] * bw),
                        x[1] - ((a[1] * bu + b[1] * bv) + c[1] * bw),
                        x[2] - ((a[2] * bu + b[2] * bv) + c[2] * bw)};
"""

#: A pending point-triangle pair's triangle (rows 0-17 of ``pq`` at ``h``: corners, edges and
#: their dot products) and its closest point to ``x`` (:data:`_PT_CLOSEST`), the same in the
#: triangle search's and the moving vertices' pending loops.
_PT_PENDING = r"""    const R a[3] = {pq[0][h], pq[1][h], pq[2][h]};
    const R b[3] = {pq[3][h], pq[4][h], pq[5][h]};
    const R c[3] = {pq[6][h], pq[7][h], pq[8][h]};
    const R ab[3] = {pq[9][h], pq[10][h], pq[11][h]};
    const R ac[3] = {pq[12][h], pq[13][h], pq[14][h]};
    const R aa = pq[15][h], cc = pq[16][h], bc_ = pq[17][h];
__PT_CLOSEST__"""

_PT = r"""
const int* TRIS = (const int*)J->ptrs[13];
const R* SPOS = (const R*)J->ptrs[14];
const R third = R(1.0) / R(3.0);
// the pairs that passed the chunk tests, of this and earlier queries (their entry, the query
// triangle, its corners, edges and their dot products), taken through the closest points
// PENDING at a time (as the edge search's)
const int PENDING = 256;
int pk[PENDING], pe[PENDING];
R pq[18][PENDING];
unsigned char pok[PENDING];
int np = 0;
const R rr2 = radius * radius;
auto flush = [&]() {
  // the closest points of those as flags (a loop without branches, vectorized), then the rest
  // exclusions and the pushes of those near enough
#pragma clang loop vectorize(enable)
  for (int h = 0; h < np; ++h) {
    const R* x = SPOS + 3 * pk[h];
__PT_PENDING__    pok[h] = !(dot3(d, d) >= rr2);
  }
  for (int h = 0; h < np; ++h) {
    if (!pok[h]) continue;
    const int t = pe[h], v = ENTRIES[pk[h]];
    if (listed(t, v)) continue;
    push(t, v);
  }
  np = 0;
};
for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
     b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
for (int t = b0; t < b1; ++t) {
  const int c0 = TRIS[3 * t], c1 = TRIS[3 * t + 1], c2 = TRIS[3 * t + 2];
  if (mode == 1 && MOVER[c0] == 0 && MOVER[c1] == 0 && MOVER[c2] == 0) continue;
  const R* a = REF + 3 * c0;
  const R* b = REF + 3 * c1;
  const R* c = REF + 3 * c2;
  R lo[3], hi[3], centre[3];
  for (int k = 0; k < 3; ++k) {
    R mn = a[k] < b[k] ? a[k] : b[k]; mn = mn < c[k] ? mn : c[k];
    R mx = a[k] > b[k] ? a[k] : b[k]; mx = mx > c[k] ? mx : c[k];
    lo[k] = mn - radius; hi[k] = mx + radius;
    centre[k] = (a[k] + b[k] + c[k]) * third;
  }
  const R da[3] = {a[0] - centre[0], a[1] - centre[1], a[2] - centre[2]};
  const R db[3] = {b[0] - centre[0], b[1] - centre[1], b[2] - centre[2]};
  const R dc[3] = {c[0] - centre[0], c[1] - centre[1], c[2] - centre[2]};
  R m2 = dot3(da, da); const R mb = dot3(db, db), mc = dot3(dc, dc);
  m2 = m2 > mb ? m2 : mb; m2 = m2 > mc ? m2 : mc;
  const R reach = wp::sqrt(m2) + radius;
  const R reach2 = reach * reach, r2 = radius * radius;
  const R ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  const R ac[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
  const R aa = dot3(ab, ab), cc = dot3(ac, ac), bc_ = dot3(ab, ac);
  const R s_from = lo[sa];
__BUCKET_RUNS__      // the box, corner and sphere tests without branches (flags first, a loop the
      // compiler vectorizes), the entries that pass into hit[]
      const int len = b1 - b0;
      const int* ent = ENTRIES + b0;
      const R* sp = SPOS + 3 * b0;
#pragma clang loop vectorize(enable)
      for (int q = 0; q < len; ++q) {
        const R* x = sp + 3 * q;
        const int v = ent[q];
        const R gx[3] = {x[0] - centre[0], x[1] - centre[1], x[2] - centre[2]};
        const bool ok = !(x[0] < lo[0]) & !(x[1] < lo[1]) & !(x[2] < lo[2])
            & !(x[0] > hi[0]) & !(x[1] > hi[1]) & !(x[2] > hi[2])
            & (v != c0) & (v != c1) & (v != c2) & !(dot3(gx, gx) > reach2);
        okf[q] = ok;
      }
      int nh = 0;
      for (int q = 0; q < len; ++q) {
        hit[nh] = b0 + q;
        nh += okf[q];
      }
      const R tq[18] = {a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2],
                        ab[0], ab[1], ab[2], ac[0], ac[1], ac[2], aa, cc, bc_};
      for (int h = 0; h < nh; ++h) {
        pk[np + h] = hit[h];
        pe[np + h] = t;
      }
      for (int m = 0; m < 18; ++m)
        for (int h = 0; h < nh; ++h) pq[m][np + h] = tq[m];
      np += nh;
      if (np > PENDING - CHUNK) flush();
      }
    }
  }
}
}
flush();
"""


# The narrow phase's pass over one family's pairs (``pair_eval`` of
# :mod:`.selfcollision_kernels`, every pair in list order on one thread): the same skipping,
# geometry, contact normal, slack bookkeeping and response, the same operations in the same
# order.
_EVAL_TAIL = r"""      const R len = __SQRT__(dot3(m, m));
      R normal[3];
      for (int k = 0; k < 3; ++k) normal[k] = (near2 & (len > Z)) ? m[k] / len : Z;
      // contact normal on A's start side and the signed distance along it
      const R dist = __SQRT__(dist2);
      const bool by_diff = dist > R(1e-9) * t;
      R n[3];
      for (int k = 0; k < 3; ++k)
        n[k] = side0 == Z ? (by_diff ? diff[k] / dist : normal[k]) : normal[k] * side0;
      const R signed_ = dot3(n, diff);
      // what the evaluation found: slacks and the moved base
      const R u = __SQRT__(dist2);
      EV_SC[e] = nr == 2 ? signed_ - t : (nr == 1 ? u - t : u - band);
      EV_SX[e] = nr == 2 ? (signed_ < Z ? R(-1e30) : u) : (nr == 1 ? u : u - band);
      R l01 = MOVED[q[0]] < MOVED[q[1]] ? MOVED[q[0]] : MOVED[q[1]];
      R l23 = MOVED[q[2]] < MOVED[q[3]] ? MOVED[q[2]] : MOVED[q[3]];
      EV_BASE[e] = l01 < l23 ? l01 : l23;
      EV_SIGNED[e] = signed_;
      for (int k = 0; k < 3; ++k) {
        EV_N[3 * e + k] = n[k]; EV_D[3 * e + k] = diff[k]; EV_D0[3 * e + k] = diff0[k];
      }
      EV_NEAR[e] = nr;"""
"""The end of a pair's evaluation, the same for point-triangle and edge-edge pairs (each
branch sets ``nr``, 2 near, 1 in the band, 0 beyond, before it): the contact normal on the
start side, the signed distance, the slacks and the moved base, written to the chunk's
scratch ``EV_*``."""


_PAIRS = r"""
void pbd_pairs___TAG__(void** ptrs, const __REAL__* reals, const int* ints);
void* pbd_ptrs[] = {(void*)state.data, (void*)p.data, (void*)x0.data, (void*)inv_mass.data,
                    (void*)idx.data, (void*)moved.data, (void*)base.data, (void*)slack_c.data,
                    (void*)slack_x.data, __POINTERS__};
const __REAL__ pbd_reals[] = {t, band, mu, interior, margin};
const int pbd_ints[] = {edge_pairs, skip, ((const int*)count.data)[0], threads};
pbd_pairs___TAG__(pbd_ptrs, pbd_reals, pbd_ints);
}
__PTHREAD__
namespace pbd___TAG__ {
typedef __REAL__ R;
const int BLOCK = 512;
struct Job {
  void** ptrs; const R* reals; const int* ints; int* next; int n;
  int evaluated, contacts, any; R deep;
};
static void* work(void* arg) {
  Job* J = (Job*)arg;
  const bool CROSSING = __CROSSING__;
  int* ST = (int*)J->ptrs[0];
  const R* P = (const R*)J->ptrs[1];
  const R* X0 = (const R*)J->ptrs[2];
  const R* IM = (const R*)J->ptrs[3];
  const int* IDX = (const int*)J->ptrs[4];
  const R* MOVED = (const R*)J->ptrs[5];
  R* BASE = (R*)J->ptrs[6];
  R* SC = (R*)J->ptrs[7];
  R* SX = (R*)J->ptrs[8];
  int* ACT = (int*)J->ptrs[9];
  R* CORR = (R*)J->ptrs[10];
  R* WC = (R*)J->ptrs[11];
  int* TOUCH = (int*)J->ptrs[12];
  int* CNT = (int*)J->ptrs[13];
  int* FLAG = (int*)J->ptrs[14];
  const int* REVERTED = (const int*)J->ptrs[15];
  const R t = J->reals[0], band = J->reals[1], mu = J->reals[2], interior = J->reals[3];
  const R margin = J->reals[4];
  const int edge_pairs = J->ints[0], skip = J->ints[1];
  const R Z = R(0), ONE = R(1);
  const R band2 = band * band;
  const R hi_s = ONE - interior;
  const int pass_id = ST[__ST_PASS__];
  auto dot3 = [](const R* a, const R* b) -> R { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; };
  auto safe_div = [](R num, R den) -> R { return den != R(0) ? num / den : R(0); };
  auto clampr = [](R x, R lo, R hi) -> R { return x < lo ? lo : (x > hi ? hi : x); };
  auto sgn = [](R x) -> R { return x >= R(0) ? R(1) : R(-1); };
  auto cross3 = [](const R* a, const R* b, R* out) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
  };
  int evaluated = 0;
  unsigned char evalf[BLOCK];
  int todo[BLOCK];
  const int EV = 64;
  R EV_C[4 * EV], EV_N[3 * EV], EV_D[3 * EV], EV_D0[3 * EV];
  R EV_SC[EV], EV_SX[EV], EV_BASE[EV], EV_SIGNED[EV];
  int EV_NEAR[EV], EV_HIT[EV];
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
  const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
  // the skip test of the block's pairs without branches (a loop the compiler vectorizes;
  // every pair's contact flag starts cleared, as an evaluation clears it too), then the
  // pairs to evaluate one by one
  const int len = b1 - b0;
  if (!CROSSING) for (int c = b0; c < b1; ++c) ACT[c] = 0;
#pragma clang loop vectorize(enable)
  for (int o = 0; o < len; ++o) {
    const int c = b0 + o;
    const int* q = IDX + 4 * c;
    R m01 = MOVED[q[0]] > MOVED[q[1]] ? MOVED[q[0]] : MOVED[q[1]];
    R m23 = MOVED[q[2]] > MOVED[q[3]] ? MOVED[q[2]] : MOVED[q[3]];
    R most = m01 > m23 ? m01 : m23;
    evalf[o] = (skip == 0) | !(R(2.0) * (most - BASE[c]) + margin < (CROSSING ? SX[c] : SC[c]));
  }
  int ne = 0;
  for (int o = 0; o < len; ++o) {
    todo[ne] = b0 + o;
    ne += evalf[o];
  }
  // the pairs to evaluate in chunks of EV: the geometry of every pair of a chunk without
  // branches (closest points, side, normal, signed distance, slacks: each value computed
  // as the one-pair text computes it, the branches' choices made by selects), into EV-long
  // arrays in a loop the compiler vectorizes; then the slacks written and, pair by pair, the
  // response (or the fail-safe's flags) of those in contact
  for (int e0 = 0; e0 < ne; e0 += EV) {
  const int m_ = ne - e0 < EV ? ne - e0 : EV;
  const int* td = todo + e0;
  evaluated += m_;
  if (edge_pairs == 0) {
#pragma clang loop vectorize(enable)
    for (int e = 0; e < m_; ++e) {
      const int* q = IDX + 4 * td[e];
      const R* x_ = P + 3 * q[0];
      const R* a = P + 3 * q[1];
      const R* b = P + 3 * q[2];
      const R* cc = P + 3 * q[3];
      // closest point of the triangle (a, b, cc) to x_ (Ericson 2005, 5.1.5)
      const R ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
      const R ac[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
      const R ap[3] = {x_[0] - a[0], x_[1] - a[1], x_[2] - a[2]};
      const R d1 = dot3(ab, ap), d2 = dot3(ac, ap);
      const R aa = dot3(ab, ab), cc2 = dot3(ac, ac), bc_ = dot3(ab, ac);
      const R d3 = d1 - aa, d4 = d2 - bc_, d5 = d1 - bc_, d6 = d2 - cc2;
      const R vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
      const R den = va + vb + vc;
      const R d43 = d4 - d3, d56 = d5 - d6;
      const bool r1 = (d1 <= Z) & (d2 <= Z);
      const bool r2 = (d3 >= Z) & (d4 <= d3);
      const bool r3 = (vc <= Z) & (d1 >= Z) & (d3 <= Z);
      const bool r4 = (d6 >= Z) & (d5 <= d6);
      const bool r5 = (vb <= Z) & (d2 >= Z) & (d6 <= Z);
      const bool r6 = (va <= Z) & (d43 >= Z) & (d56 >= Z);
      const bool face = !(r1 | r2 | r3 | r4 | r5 | r6) & (den > Z);
      R bv = safe_div(vb, den), bw = safe_div(vc, den);
      const R w6 = safe_div(d43, d43 + d56);
      bv = r6 ? ONE - w6 : bv; bw = r6 ? w6 : bw;
      bv = r5 ? Z : bv; bw = r5 ? safe_div(d2, d2 - d6) : bw;
      bv = r4 ? Z : bv; bw = r4 ? ONE : bw;
      bv = r3 ? safe_div(d1, d1 - d3) : bv; bw = r3 ? Z : bw;
      bv = r2 ? ONE : bv; bw = r2 ? Z : bw;
      bv = r1 ? Z : bv; bw = r1 ? Z : bw;
      bv = clampr(bv, Z, ONE);
      bw = clampr(bw, Z, ONE - bv);
      const R bu = ONE - bv - bw;
      R diff[3];
      for (int k = 0; k < 3; ++k) diff[k] = x_[k] - ((a[k] * bu + b[k] * bv) + cc[k] * bw);
      const R dist2 = dot3(diff, diff);
      const bool near2 = dist2 < band2;
      const R* p0 = X0 + 3 * q[0];
      const R* a0 = X0 + 3 * q[1];
      const R* b0 = X0 + 3 * q[2];
      const R* c0 = X0 + 3 * q[3];
      R diff0[3];
      for (int k = 0; k < 3; ++k) {
        const R d0 = p0[k] - ((a0[k] * bu + b0[k] * bv) + c0[k] * bw);
        diff0[k] = near2 ? d0 : Z;
      }
      const R ba0[3] = {b0[0] - a0[0], b0[1] - a0[1], b0[2] - a0[2]};
      const R ca0[3] = {c0[0] - a0[0], c0[1] - a0[1], c0[2] - a0[2]};
      R m[3], m0[3];
      cross3(ab, ac, m);
      cross3(ba0, ca0, m0);
      const R pa0[3] = {p0[0] - a0[0], p0[1] - a0[1], p0[2] - a0[2]};
      const R side_f = sgn(dot3(pa0, m0)) * sgn(dot3(m0, m));
      const R side0 = (near2 & face) ? side_f : Z;
      const int nr = near2 ? 2 : 0;
__EVAL_TAIL__
      EV_C[4 * e] = ONE; EV_C[4 * e + 1] = -bu; EV_C[4 * e + 2] = -bv; EV_C[4 * e + 3] = -bw;
    }
  } else {
#pragma clang loop vectorize(enable)
    for (int e = 0; e < m_; ++e) {
      const int* q = IDX + 4 * td[e];
      // closest points of the segments (p1, p2) and (q1, q2) (Ericson 2005, 5.1.9)
      const R* p1 = P + 3 * q[0];
      const R* p2 = P + 3 * q[1];
      const R* q1 = P + 3 * q[2];
      const R* q2 = P + 3 * q[3];
      const R e1[3] = {p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]};
      const R e2[3] = {q2[0] - q1[0], q2[1] - q1[1], q2[2] - q1[2]};
      const R rr[3] = {p1[0] - q1[0], p1[1] - q1[1], p1[2] - q1[2]};
      const R A = dot3(e1, e1), E = dot3(e2, e2), F = dot3(e2, rr), C = dot3(e1, rr);
      const R B = dot3(e1, e2);
      const R den = A * E - B * B;
      const R s0 = den > R(1e-12) * A * E ? clampr(safe_div(B * F - C * E, den), Z, ONE) : Z;
      R t2 = safe_div(B * s0 + F, E);
      const R s = t2 < Z ? clampr(safe_div(-C, A), Z, ONE)
                         : (t2 > ONE ? clampr(safe_div(B - C, A), Z, ONE) : s0);
      t2 = clampr(t2, Z, ONE);
      R diff[3];
      for (int k = 0; k < 3; ++k) diff[k] = (p1[k] + e1[k] * s) - (q1[k] + e2[k] * t2);
      const R dist2 = dot3(diff, diff);
      const bool in_band = dist2 < band2;
      const bool near2 = in_band & !((s <= interior) | (s >= hi_s) | (t2 <= interior)
                                     | (t2 >= hi_s));
      const R* x1 = X0 + 3 * q[0];
      const R* x2 = X0 + 3 * q[1];
      const R* y1 = X0 + 3 * q[2];
      const R* y2 = X0 + 3 * q[3];
      const R f1[3] = {x2[0] - x1[0], x2[1] - x1[1], x2[2] - x1[2]};
      const R f2[3] = {y2[0] - y1[0], y2[1] - y1[1], y2[2] - y1[2]};
      R diff0[3];
      for (int k = 0; k < 3; ++k) {
        const R d0 = (x1[k] + f1[k] * s) - (y1[k] + f2[k] * t2);
        diff0[k] = near2 ? d0 : Z;
      }
      R m[3], m0[3];
      cross3(e1, e2, m);
      cross3(f1, f2, m0);
      const R xy[3] = {x1[0] - y1[0], x1[1] - y1[1], x1[2] - y1[2]};
      const R side_f = sgn(dot3(xy, m0)) * sgn(dot3(m0, m));
      const R side0 = near2 ? side_f : Z;
      const int nr = near2 ? 2 : (in_band ? 1 : 0);
__EVAL_TAIL__
      EV_C[4 * e] = ONE - s; EV_C[4 * e + 1] = s; EV_C[4 * e + 2] = t2 - ONE;
      EV_C[4 * e + 3] = -t2;
    }
  }
  // the slacks and bases; then the pairs in contact (or, for the fail-safe, on the wrong side)
  int nc = 0;
  for (int e = 0; e < m_; ++e) {
    const int c = td[e];
    SC[c] = EV_SC[e];
    SX[c] = EV_SX[e];
    BASE[c] = EV_BASE[e];
    EV_HIT[nc] = e;
    nc += (EV_NEAR[e] == 2) & (EV_SIGNED[e] < (CROSSING ? Z : t));
  }
  for (int h = 0; h < nc; ++h) {
    const int e = EV_HIT[h];
    const int c = td[e];
    const int* q = IDX + 4 * c;
    const R signed_ = EV_SIGNED[e];
    if (CROSSING) {
      // fail-safe: flag the free, not yet reverted particles of a pair on the wrong side
      const int epoch = ST[__ST_EPOCH__];
      for (int k = 0; k < 4; ++k) {
        const int i = q[k];
        if (IM[i] > Z && REVERTED[i] != epoch) {
          __atomic_store_n(&FLAG[i], epoch, __ATOMIC_RELAXED);
          J->any = 1;
        }
      }
      continue;
    }
    const R* coef = EV_C + 4 * e;
    const R* n = EV_N + 3 * e;
    const R* diff = EV_D + 3 * e;
    const R* diff0 = EV_D0 + 3 * e;
    // response: push-out along n less friction, over the inverse-mass-weighted coefficients
    R w[4];
    for (int k = 0; k < 4; ++k) w[k] = IM[q[k]] * coef[k];
    const R big_w = ((w[0] * coef[0] + w[1] * coef[1]) + w[2] * coef[2]) + w[3] * coef[3];
    if (big_w <= Z || dot3(n, n) <= Z) continue;
    const R depth = t - signed_;
    R delta[3] = {n[0] * depth, n[1] * depth, n[2] * depth};
    if (mu > Z) {
      R slip[3] = {diff[0] - diff0[0], diff[1] - diff0[1], diff[2] - diff0[2]};
      const R sn = dot3(slip, n);
      for (int k = 0; k < 3; ++k) slip[k] = slip[k] - n[k] * sn;
      const R slip_len = __SQRT__(dot3(slip, slip));
      R f = safe_div(mu * depth, slip_len);
      f = f < ONE ? f : ONE;
      for (int k = 0; k < 3; ++k) delta[k] = delta[k] - slip[k] * f;
    }
    ACT[c] = 1;
    for (int k = 0; k < 3; ++k) CORR[3 * c + k] = delta[k] / big_w;
    for (int k = 0; k < 4; ++k) WC[4 * c + k] = w[k];
    if (J->deep < depth) J->deep = depth;
    for (int k = 0; k < 4; ++k) {
      if (w[k] != Z) {
        __atomic_store_n(&TOUCH[q[k]], pass_id, __ATOMIC_RELAXED);
        __atomic_fetch_add(&CNT[q[k]], 1, __ATOMIC_RELAXED);
      }
    }
    J->contacts += 1;
  }
  }
  }
  J->evaluated = evaluated;
  return nullptr;
}
}  // namespace pbd___TAG__
void pbd_pairs___TAG__(void** ptrs, const __REAL__* reals, const int* ints) {
  using namespace pbd___TAG__;
  const bool CROSSING = __CROSSING__;
  int* ST = (int*)ptrs[0];
  if (!CROSSING && ST[__ST_DONE__] != 0) return;
  if (CROSSING && (ST[__ST_PROJECTED__] == 0 || ST[__ST_STOP__] != 0)) return;
  const int n = ints[2];
  int threads = ints[3] < 1 ? 1 : (ints[3] > 8 ? 8 : ints[3]);
  if (n < 2 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, reals, ints, nullptr, n, 0, 0, 0, R(0)};
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
  // the threads' order-free results: counts, flags and the deepest contact
  int evaluated = 0, contacts = 0, any = 0;
  R deep = R(0);
  for (int k = 0; k < threads; ++k) {
    evaluated += jobs[k].evaluated; contacts += jobs[k].contacts; any |= jobs[k].any;
    if (deep < jobs[k].deep) deep = jobs[k].deep;
  }
  if (CROSSING) {
    if (any) ST[__ST_ANY__] = 1;
    return;
  }
  R* DEEP = (R*)ptrs[16];
  int* STATS = (int*)ptrs[17];
  if (DEEP[0] < deep) DEEP[0] = deep;
  if (contacts > 0) {
    ST[__ST_PROJECTED__] = 1;
    ST[__ST_PASS_ANY__] = 1;
    STATS[__STAT_PT_CONTACTS__ + ints[0]] += contacts;
  }
  STATS[__STAT_EVALUATED__] += evaluated;
"""

# The slot kernels of :mod:`.selfcollision_list_kernels` (``compact``, ``sort_slots``,
# ``gather``: integers only, every owner on its own), owners in blocks on the stage's threads.
_OWNERS = r"""
void pbd_owners___TAG__(void** ptrs, const int* ints);
void* pbd_ptrs[] = {(void*)state.data, (void*)cnt.data, (void*)keys.data, __POINTERS__};
const int pbd_ints[] = {__N__, threads, slots, __INTS__};
pbd_owners___TAG__(pbd_ptrs, pbd_ints);
}
__PTHREAD__
namespace pbd___TAG__ {
const int BLOCK = 1024;
struct Job { void** ptrs; const int* ints; int* next; int n; };
static void* work(void* arg) {
  Job* J = (Job*)arg;
  const int* ST = (const int*)J->ptrs[0];
  int* CNT = (int*)J->ptrs[1];
  int* KEYS = (int*)J->ptrs[2];
  const int slots = J->ints[2];
  const int mode = ST[0];
  (void)mode; (void)CNT; (void)KEYS; (void)slots;
__DECL__
  for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
       b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
    const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
    for (int o = b0; o < b1; ++o) {
__BODY__
    }
  }
  return nullptr;
}
}  // namespace pbd___TAG__
void pbd_owners___TAG__(void** ptrs, const int* ints) {
  using namespace pbd___TAG__;
  if (((const int*)ptrs[0])[0] == 0) return;
  const int n = ints[0];
  int threads = ints[1] < 1 ? 1 : (ints[1] > 8 ? 8 : ints[1]);
  if (n < 2 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, ints, nullptr, n};
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
"""

# compact: owners that moved are emptied; the others drop the partners that moved (in order)
_COMPACT_DECL = r"""
  const int* TRIS = (const int*)J->ptrs[3];
  const int* MOVER = (const int*)J->ptrs[4];
  const int* EDGES = (const int*)J->ptrs[5];
  const int family = J->ints[3];
"""
_COMPACT = r"""
      int moving = 1;
      if (mode == 1) {
        if (family == 0) {
          const int* t = TRIS + 3 * o;
          moving = MOVER[t[0]] > MOVER[t[1]] ? MOVER[t[0]] : MOVER[t[1]];
          moving = moving > MOVER[t[2]] ? moving : MOVER[t[2]];
        } else {
          moving = MOVER[EDGES[2 * o]] > MOVER[EDGES[2 * o + 1]] ? MOVER[EDGES[2 * o]]
                                                                 : MOVER[EDGES[2 * o + 1]];
        }
      }
      if (moving != 0) { CNT[o] = 0; continue; }
      const int m = CNT[o] < slots ? CNT[o] : slots;
      int* key = KEYS + o * slots;
      int j = 0;
      for (int k = 0; k < m; ++k) {
        const int q = key[k];
        const int gone = family == 0 ? MOVER[q]
            : (MOVER[EDGES[2 * q]] > MOVER[EDGES[2 * q + 1]] ? MOVER[EDGES[2 * q]]
                                                              : MOVER[EDGES[2 * q + 1]]);
        if (gone == 0) { key[j] = q; j += 1; }
      }
      CNT[o] = j;
"""

# sort_slots: each owner's partners in ascending order (insertion sort), its count clamped
_SORT_DECL = r"""
  int* KEPT = (int*)J->ptrs[3];
"""
_SORT = r"""
      const int m = CNT[o] < slots ? CNT[o] : slots;
      int* key = KEYS + o * slots;
      for (int a = 1; a < m; ++a) {
        const int v = key[a];
        int b = a - 1;
        while (b >= 0 && key[b] > v) { key[b + 1] = key[b]; b -= 1; }
        key[b + 1] = v;
      }
      KEPT[o] = m;
"""

# gather: owner o's pairs as particle quads at out[offsets[o]:], those past the capacity dropped
_GATHER_DECL = r"""
  const int* TRIS = (const int*)J->ptrs[3];
  const int* EDGES = (const int*)J->ptrs[4];
  const int* KEPT = (const int*)J->ptrs[5];
  const int* OFFSETS = (const int*)J->ptrs[6];
  int* OUT = (int*)J->ptrs[7];
  const int family = J->ints[3], cap = J->ints[4];
"""
_GATHER = r"""
      const int at = OFFSETS[o];
      const int* key = KEYS + o * slots;
      for (int f = 0; f < KEPT[o]; ++f) {
        if (at + f >= cap) break;
        const int q = key[f];
        int* quad = OUT + 4 * (at + f);
        if (family == 0) {
          quad[0] = q; quad[1] = TRIS[3 * o]; quad[2] = TRIS[3 * o + 1]; quad[3] = TRIS[3 * o + 2];
        } else {
          quad[0] = EDGES[2 * o]; quad[1] = EDGES[2 * o + 1];
          quad[2] = EDGES[2 * q]; quad[3] = EDGES[2 * q + 1];
        }
      }
"""


# A row grid of :mod:`.selfcollision_list_kernels` built in one native loop (one thread):
# ``bounds``, ``grid_setup``, ``grid_keys``, the counting sort's scan and ``grid_fill``, the
# same arithmetic, the entries of a key in point order as the kernels leave them on the CPU.
_GRID = r"""
typedef __REAL__ R;
if (((const int*)gate.data)[0] == 0) return;
const int m = points.shape[0];
const R* X = (const R*)points.data;
const R* HALVES = (const R*)halves.data;
R* LO = (R*)lo.data;
R* HI = (R*)hi.data;
R* GF = (R*)gf.data;
int* GI = (int*)gi.data;
int* KEY = (int*)key.data;
int* COUNT = (int*)key_count.data;
int* START = (int*)start.data;
int* ENTRIES = (int*)entries.data;
R* SPOS = (R*)spos.data;
R* SHALF = (R*)shalf.data;
const int buckets = mask + 1;
for (int a = 0; a < 3; ++a) { LO[a] = R(1e30); HI[a] = R(-1e30); }
for (int i = 0; i < m; ++i)
  for (int a = 0; a < 3; ++a) {
    const R x = X[3 * i + a];
    if (x < LO[a]) LO[a] = x;
    if (x > HI[a]) HI[a] = x;
  }
int sa = 0;
R best = HI[0] - LO[0];
for (int a = 1; a < 3; ++a) if (HI[a] - LO[a] > best) { best = HI[a] - LO[a]; sa = a; }
const int ua = (sa + 1) % 3, wa = (sa + 2) % 3;
GI[0] = sa; GI[1] = ua; GI[2] = wa;
R cell = scale * (extent + R(2.0) * ((const R*)radius.data)[0]);
cell = cell > R(1e-9) ? cell : R(1e-9);
const R inv = R(1.0) / cell, inv_s = R(4.0) / cell;
GF[__GF_INV_ROW__] = inv;
GF[__GF_INV_SWEEP__] = inv_s;
for (int a = 0; a < 3; ++a) GF[__GF_LO__ + a] = LO[a];
for (int b = 0; b < buckets; ++b) COUNT[b] = 0;
for (int i = 0; i < m; ++i) {
  const R* x = X + 3 * i;
  const int iu = (int)wp::floor((x[ua] - LO[ua]) * inv);
  const int iw = (int)wp::floor((x[wa] - LO[wa]) * inv);
  const int is = (int)wp::floor((x[sa] - LO[sa]) * inv_s);
  const long long h = ((long long)iu * 73856093LL) ^ ((long long)iw * 19349663LL);
  const int k = ((int)(h & (long long)mask) + is) & mask;
  KEY[i] = k;
  COUNT[k] += 1;
}
int at = 0;
for (int b = 0; b < buckets; ++b) { START[b] = at; at += COUNT[b]; COUNT[b] = START[b]; }
START[buckets] = at;
for (int i = 0; i < m; ++i) {
  const int slot = COUNT[KEY[i]]++;
  ENTRIES[slot] = i;
  for (int a = 0; a < 3; ++a) SPOS[3 * slot + a] = X[3 * i + a];
  if (boxes != 0) for (int a = 0; a < 3; ++a) SHALF[3 * slot + a] = HALVES[3 * i + a];
}
"""


# ``edge_boxes`` and ``tri_boxes`` of :mod:`.selfcollision_list_kernels` in one loop (the same
# arithmetic and gates: the edges' boxes at any list update, the triangles' at partial updates
# only; the largest half extent is a maximum, so its order does not matter).
_BOXES = r"""
typedef __REAL__ R;
const int mode = ((const int*)state.data)[__LS_MODE__];
if (__CORNERS__ == 3 ? mode != 1 : mode == 0) return;
const R* X = (const R*)ref.data;
const int* C = (const int*)corners.data;
R* MID = (R*)mid.data;
R* HALF = (R*)half.data;
R* MOST = (R*)maxhalf.data;
const int m = corners.shape[0];
const R h_ = R(0.5);
R most = MOST[0];
for (int e = 0; e < m; ++e) {
  const R* a = X + 3 * C[__CORNERS__ * e];
  const R* b = X + 3 * C[__CORNERS__ * e + 1];
  R h[3];
  if (__CORNERS__ == 2) {
    for (int d = 0; d < 3; ++d) {
      MID[3 * e + d] = (a[d] + b[d]) * h_;
      h[d] = wp::abs(a[d] - b[d]) * h_;
    }
  } else {
    const R* c = X + 3 * C[__CORNERS__ * e + 2];
    for (int d = 0; d < 3; ++d) {
      const R lo = wp::min(wp::min(a[d], b[d]), c[d]);
      const R hi = wp::max(wp::max(a[d], b[d]), c[d]);
      MID[3 * e + d] = (lo + hi) * h_;
      h[d] = (hi - lo) * h_;
    }
  }
  for (int d = 0; d < 3; ++d) HALF[3 * e + d] = h[d];
  const R big = wp::max(h[0], wp::max(h[1], h[2]));
  most = most > big ? most : big;
}
MOST[0] = most;
"""


# ``_Scan``'s three kernels (scan_blocks, scan_top, scan_add) as one loop: the same integers.
_SCAN = r"""
if (((const int*)gate.data)[0] == 0) return;
const int* COUNTS = (const int*)counts.data;
int* OFFSETS = (int*)offsets.data;
int acc = 0;
for (int i = 0; i < n; ++i) { OFFSETS[i] = acc; acc += COUNTS[i]; }
OFFSETS[n] = acc;
((int*)total.data)[0] = acc;
"""


#: The team of threads of a native loop (once per module): the POSIX and C calls it uses and
#: ``pbd_team_run``, which runs ``work`` on the calling thread and on up to ``threads - 1``
#: workers of the module's pool, every one taking blocks from the shared counter
#: ``team->next`` until none is left. The pool's threads are started once (detached, on the
#: first run that asks for them) and then sleep on a condition variable between runs, so a run
#: costs a wake-up rather than a thread start (~20-50 us each on a virtual machine). A run is
#: posted under the pool's lock; a worker claims one of its jobs under the lock and counts
#: itself active there; after its own blocks the caller closes the run under the lock (no later
#: claims) and waits only for the workers that claimed a job, which each finish their current
#: block: the caller never waits for a thread that the system has not woken yet, and a worker
#: that wakes late finds the run closed and never touches the caller's jobs. A second caller
#: while a run is posted (another host thread) does all its blocks itself. Windows (no POSIX
#: threads): the calling thread does every block.
_PTHREAD = r"""
#ifndef PBD_TEAM_DECLARED
#define PBD_TEAM_DECLARED
#if defined(_WIN32)
// no POSIX threads: the calling thread does every block, so no thread ever waits for another
// (pbd_yield is never reached) and the test hook's stall has no other thread to let ahead
static inline void pbd_yield() {}
static inline void pbd_sleep_us(int) {}
static void pbd_team_run(void* (*work)(void*), char* jobs, int size, int threads, int n,
                         void (*set_next)(void*, int*)) {
  int next = 0;
  set_next(jobs, &next);
  work(jobs);
}
#else
extern "C" int pthread_create(unsigned long*, const void*, void* (*)(void*), void*);
extern "C" int pthread_detach(unsigned long);
extern "C" int pthread_mutex_init(void*, const void*);
extern "C" int pthread_cond_init(void*, const void*);
extern "C" int pthread_mutex_lock(void*);
extern "C" int pthread_mutex_unlock(void*);
extern "C" int pthread_cond_wait(void*, void*);
extern "C" int pthread_cond_broadcast(void*);
extern "C" int sched_yield();
extern "C" int usleep(unsigned int);
static inline void pbd_yield() { sched_yield(); }
static inline void pbd_sleep_us(int us) { usleep((unsigned int)us); }
struct PbdTeam { int next; int active; int n; };
// the pool: its mutex and condition variable (room for those of glibc, musl and macOS) are
// initialized by the first threaded run (pbd_pool_ready)
struct PbdPool {
  alignas(64) char mutex[64];
  alignas(64) char cond[64];
  int ready;  // 0: not initialized, 1: being initialized, 2: initialized
  int workers;  // threads started
  int generation;  // runs posted
  int open;  // a run is posted and not yet closed
  int claimed, wanted;  // jobs of the run claimed by workers, and how many it has for them
  PbdTeam* team;
  void* (*work)(void*);
  char* jobs;
  int size;
};
static PbdPool pbd_pool;
// POSIX asks for pthread_mutex_init and pthread_cond_init (a zero-filled mutex is an
// initialized one on glibc and musl, not on macOS, where locking it fails); the first caller
// initializes them, one that comes at the same time waits for it
static void pbd_pool_ready(PbdPool& P) {
  if (__atomic_load_n(&P.ready, __ATOMIC_ACQUIRE) == 2) return;
  int expected = 0;
  if (__atomic_compare_exchange_n(&P.ready, &expected, 1, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    pthread_mutex_init(P.mutex, nullptr);
    pthread_cond_init(P.cond, nullptr);
    __atomic_store_n(&P.ready, 2, __ATOMIC_RELEASE);
    return;
  }
  while (__atomic_load_n(&P.ready, __ATOMIC_ACQUIRE) != 2) pbd_yield();
}
// ``arg``: the runs posted before the thread was started (under the mutex), so that the run
// posted right after its start is one it takes part in, however late it first gets the mutex
static void* pbd_pool_thread(void* arg) {
  PbdPool& P = pbd_pool;
  pthread_mutex_lock(P.mutex);
  int seen = (int)(long)arg;
  for (;;) {
    while (P.generation == seen) pthread_cond_wait(P.cond, P.mutex);
    seen = P.generation;
    if (!P.open || P.claimed >= P.wanted) continue;
    P.claimed += 1;
    PbdTeam* team = P.team;
    void* (*work)(void*) = P.work;
    void* job = P.jobs + P.claimed * P.size;
    __atomic_fetch_add(&team->active, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(P.mutex);
    if (__atomic_load_n(&team->next, __ATOMIC_SEQ_CST) < team->n) work(job);
    __atomic_fetch_sub(&team->active, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(P.mutex);
  }
  return nullptr;
}
// jobs: ``threads`` jobs of ``size`` bytes whose ``int* next`` field ``set_next`` points at
// the team's counter; job 0 is the caller's
static void pbd_team_run(void* (*work)(void*), char* jobs, int size, int threads, int n,
                         void (*set_next)(void*, int*)) {
  PbdPool& P = pbd_pool;
  PbdTeam team{0, 0, n};
  for (int k = 0; k < threads; ++k) set_next(jobs + k * size, &team.next);
  bool posted = false;
  if (threads > 1) {
    pbd_pool_ready(P);
    pthread_mutex_lock(P.mutex);
    while (P.workers < threads - 1) {
      unsigned long id;
      if (pthread_create(&id, nullptr, pbd_pool_thread, (void*)(long)P.generation) != 0) break;
      pthread_detach(id);
      P.workers += 1;
    }
    if (!P.open && P.workers > 0) {
      P.open = 1;
      P.claimed = 0;
      P.wanted = threads - 1 < P.workers ? threads - 1 : P.workers;
      P.team = &team;
      P.work = work;
      P.jobs = jobs;
      P.size = size;
      P.generation += 1;
      posted = true;
      pthread_cond_broadcast(P.cond);
    }
    pthread_mutex_unlock(P.mutex);
  }
  work(jobs);
  if (!posted) return;
  pthread_mutex_lock(P.mutex);
  P.open = 0;
  pthread_mutex_unlock(P.mutex);
  while (__atomic_load_n(&team.active, __ATOMIC_SEQ_CST) != 0) pbd_yield();
}
#endif
#endif
"""


# contact_relax (every pair in list order, one thread: its sums' float order matters) and
# track_begin (every pair on its own, in blocks on the stage's threads) of
# :mod:`.selfcollision_kernels`.
_RELAX = r"""
typedef __REAL__ R;
const int* ST = (const int*)state.data;
if (ST[__ST_DONE__] != 0 || ST[__ST_PASS_ANY__] == 0) return;
const int* IDX = (const int*)idx.data;
const int n_pairs = ((const int*)count.data)[0];
const int* ACT = (const int*)act.data;
const R* WC = (const R*)wc.data;
const int* CNT = (const int*)cnt.data;
R* CORR = (R*)corr.data;
R* DP = (R*)dp.data;
// in list order; runs of 32 pairs without a contact are passed over by one test
for (int c0 = 0; c0 < n_pairs; c0 += 32) {
const int c1 = c0 + 32 < n_pairs ? c0 + 32 : n_pairs;
int any = 0;
for (int c = c0; c < c1; ++c) any |= ACT[c];
if (any == 0) continue;
for (int c = c0; c < c1; ++c) {
  if (ACT[c] == 0) continue;
  const int* q = IDX + 4 * c;
  const R* w = WC + 4 * c;
  int most = 1;
  for (int k = 0; k < 4; ++k) if (w[k] != R(0) && CNT[q[k]] > most) most = CNT[q[k]];
  R share[3];
  for (int j = 0; j < 3; ++j) { share[j] = CORR[3 * c + j] / R(most); CORR[3 * c + j] = share[j]; }
  if (scatter != 0) {
    for (int k = 0; k < 4; ++k) {
      if (w[k] == R(0)) continue;
      for (int j = 0; j < 3; ++j) DP[3 * q[k] + j] = DP[3 * q[k] + j] + share[j] * w[k];
    }
  }
}
}
"""

# contact_relax with the scatter, then apply_sums of :mod:`.selfcollision_kernels` (each
# particle touched in this pass: p += dp, moved += |dp|, dp = 0, the same arithmetic), which
# also sets the contact counts of those particles back to 0: the only counts that a pass
# raises, so the next pass starts from zero counts without zero_counts.
_APPLY = r"""
const int* TOUCH = (const int*)touch.data;
R* P = (R*)p.data;
R* MOVED = (R*)moved.data;
int* COUNTS = (int*)cnt.data;
const int pass_id = ST[__ST_PASS__];
const int n_particles = p.shape[0];
for (int i = 0; i < n_particles; ++i) {
  if (TOUCH[i] != pass_id) continue;
  R* d = DP + 3 * i;
  const wp::vec_t<3, R> dv(d[0], d[1], d[2]);
  for (int j = 0; j < 3; ++j) P[3 * i + j] = P[3 * i + j] + d[j];
  MOVED[i] = MOVED[i] + wp::length(dv);
  for (int j = 0; j < 3; ++j) d[j] = R(0);
  COUNTS[i] = 0;
}
"""

_TRACK_BEGIN = r"""
void pbd_track___TAG__(void** ptrs, const __REAL__* reals, const int* ints);
void* pbd_ptrs[] = {(void*)p.data, (void*)idx.data, (void*)slack_c.data, (void*)slack_x.data,
                    (void*)base.data};
const __REAL__ pbd_reals[] = {band};
const int pbd_ints[] = {((const int*)count.data)[0], edge_pairs, threads};
pbd_track___TAG__(pbd_ptrs, pbd_reals, pbd_ints);
}
__PTHREAD__
namespace pbd___TAG__ {
typedef __REAL__ R;
const int BLOCK = 2048;
struct Job { void** ptrs; const R* reals; const int* ints; int* next; int n; };
static void* work(void* arg) {
Job* J = (Job*)arg;
const R* P = (const R*)J->ptrs[0];
const int* IDX = (const int*)J->ptrs[1];
R* SC = (R*)J->ptrs[2];
R* SX = (R*)J->ptrs[3];
R* BASE = (R*)J->ptrs[4];
const R band = J->reals[0];
const int edge_pairs = J->ints[1];
auto len3 = [](R x, R y, R z) -> R { return __SQRT__(x * x + y * y + z * z); };
for (int b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED); b0 < J->n;
     b0 = __atomic_fetch_add(J->next, BLOCK, __ATOMIC_RELAXED)) {
const int b1 = b0 + BLOCK < J->n ? b0 + BLOCK : J->n;
for (int c = b0; c < b1; ++c) {
  const int* q = IDX + 4 * c;
  const R* a0 = P + 3 * q[0];
  const R* a1 = P + 3 * q[1];
  const R* a2 = P + 3 * q[2];
  const R* a3 = P + 3 * q[3];
  R bound;
  if (edge_pairs != 0) {
    R m1[3], m2[3];
    for (int k = 0; k < 3; ++k) {
      m1[k] = (a0[k] + a1[k]) * R(0.5);
      m2[k] = (a2[k] + a3[k]) * R(0.5);
    }
    bound = (len3(m1[0] - m2[0], m1[1] - m2[1], m1[2] - m2[2])
             - R(0.5) * len3(a0[0] - a1[0], a0[1] - a1[1], a0[2] - a1[2]))
            - R(0.5) * len3(a2[0] - a3[0], a2[1] - a3[1], a2[2] - a3[2]);
  } else {
    const R third = R(1.0) / R(3.0);
    R ce[3], da[3], db[3], dc[3];
    for (int k = 0; k < 3; ++k) {
      ce[k] = ((a1[k] + a2[k]) + a3[k]) * third;
      da[k] = a1[k] - ce[k]; db[k] = a2[k] - ce[k]; dc[k] = a3[k] - ce[k];
    }
    R r2 = da[0] * da[0] + da[1] * da[1] + da[2] * da[2];
    const R rb = db[0] * db[0] + db[1] * db[1] + db[2] * db[2];
    const R rc = dc[0] * dc[0] + dc[1] * dc[1] + dc[2] * dc[2];
    r2 = r2 > rb ? r2 : rb;
    r2 = r2 > rc ? r2 : rc;
    bound = len3(a0[0] - ce[0], a0[1] - ce[1], a0[2] - ce[2]) - __SQRT__(r2);
  }
  R sl = bound - band;
  if (bound < band) sl = R(-1e30);
  SC[c] = sl;
  SX[c] = sl;
  BASE[c] = R(0);
}
}
return nullptr;
}
}  // namespace pbd___TAG__
void pbd_track___TAG__(void** ptrs, const __REAL__* reals, const int* ints) {
  using namespace pbd___TAG__;
  const int n = ints[0];
  int threads = ints[2] < 1 ? 1 : (ints[2] > 8 ? 8 : ints[2]);
  if (n < 2 * BLOCK * threads) threads = 1;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{ptrs, reals, ints, nullptr, n};
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, n,
               [](void* job, int* next) { ((Job*)job)->next = next; });
"""


@functools.cache
def build_native_search(precision: str = "float32") -> SimpleNamespace:
    """The native kernels (CPU only) for scalars of ``precision``, launched with dim 1:
    ``ee_all`` and ``pt_all`` (the arguments of the list kernels ``ee_edges`` and
    ``pt_triangles`` of :mod:`.selfcollision_list_kernels`, and the grid's points in entry
    order), ``pair_eval_all``, ``mark_crossed_all``, ``contact_relax_all`` and
    ``track_begin_all`` (the arguments of the kernels of the same names less ``_all``), and
    ``contact_sums_all`` (``contact_relax`` with the scatter, then ``apply_sums``)."""
    scalar: Any = wp.float32 if precision == "float32" else wp.float64
    vec3: Any = wp.types.vector(3, scalar)
    real = "float" if precision == "float32" else "double"
    module = f"pbdcloth_warp_selfnative_{precision}"
    wp.set_module_options({"enable_backward": False}, module=module)
    i32 = wp.int32

    def ee_body(ref: wp.array(dtype=vec3), edges: wp.array(dtype=wp.vec2i),
                mover: wp.array(dtype=i32), radius_a: wp.array(dtype=scalar),
                mid: wp.array(dtype=vec3), half: wp.array(dtype=vec3),
                maxhalf: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                gi: wp.array(dtype=i32), mask: int, start: wp.array(dtype=i32),
                entries: wp.array(dtype=i32), excl_start: wp.array(dtype=i32),
                excluded: wp.array(dtype=i32), state: wp.array(dtype=i32), slots: int,
                cnt: wp.array(dtype=i32), keys: wp.array(dtype=i32),
                need: wp.array(dtype=i32), spos: wp.array(dtype=vec3),
                shalf: wp.array(dtype=vec3), sedge: wp.array(dtype=i32),
                sreach: wp.array(dtype=scalar), threads: int):
        ...

    def pt_body(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                mover: wp.array(dtype=i32), radius_a: wp.array(dtype=scalar),
                gf: wp.array(dtype=scalar), gi: wp.array(dtype=i32), mask: int,
                start: wp.array(dtype=i32), entries: wp.array(dtype=i32),
                excl_start: wp.array(dtype=i32), excluded: wp.array(dtype=i32),
                state: wp.array(dtype=i32), slots: int, cnt: wp.array(dtype=i32),
                keys: wp.array(dtype=i32), need: wp.array(dtype=i32),
                spos: wp.array(dtype=vec3), threads: int):
        ...

    def ptm_body(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                 mover: wp.array(dtype=i32), radius_a: wp.array(dtype=scalar),
                 maxhalf: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                 gi: wp.array(dtype=i32), mask: int, start: wp.array(dtype=i32),
                 entries: wp.array(dtype=i32), excl_start: wp.array(dtype=i32),
                 excluded: wp.array(dtype=i32), state: wp.array(dtype=i32), slots: int,
                 cnt: wp.array(dtype=i32), keys: wp.array(dtype=i32),
                 need: wp.array(dtype=i32), spos: wp.array(dtype=vec3),
                 shalf: wp.array(dtype=vec3), threads: int):
        ...

    # Warp names a function by its qualified name: one name per snippet and precision.
    for fn, name in ((ee_body, "ee_search"), (pt_body, "pt_search"), (ptm_body, "ptm_search")):
        fn.__name__ = fn.__qualname__ = f"{name}_{precision}"
    def search_text(body: str, family: str, owners: str, tag: str, prelude: str = "",
                    run_if: str = "!= 0") -> str:
        """The dispatcher and work() of a search, which runs when the list mode (0 unchanged,
        1 partial, 2 full) satisfies ``run_if``."""
        text = _SEARCH.replace("__COMMON__", _COMMON).replace("__BODY__", body)
        text = text.replace("__BUCKET_RUNS__", _BUCKET_RUNS)
        text = text.replace("__RUN_IF__", run_if)
        text = text.replace("__PT_PENDING__", _PT_PENDING)
        text = text.replace("__PT_CLOSEST__", _PT_CLOSEST)
        text = text.replace("__PRELUDE__", prelude)
        text = text.replace("__PTHREAD__", _PTHREAD).replace("__FAMILY__", family)
        text = text.replace("__OWNERS__", owners).replace("__TAG__", f"{tag}_{precision}")
        return text.replace("__REAL__", real)

    ee_search = wp.func_native(search_text(
        _EE, "(void*)edges.data, (void*)spos.data, (void*)shalf.data, (void*)mid.data, "
        "(void*)half.data, (void*)maxhalf.data, (void*)sedge.data, (void*)sreach.data",
        "edges", "ee", _EE_PRELUDE))(ee_body)
    pt_search = wp.func_native(search_text(_PT, "(void*)tris.data, (void*)spos.data", "tris",
                                           "pt"))(pt_body)
    ptm_search = wp.func_native(search_text(
        _PTM, "(void*)tris.data, (void*)spos.data, (void*)shalf.data, (void*)maxhalf.data",
        "ref", "ptm", run_if="== 1"))(ptm_body)

    @wp.kernel(module=module)
    def ee_edges_all(ref: wp.array(dtype=vec3), edges: wp.array(dtype=wp.vec2i),
               mover: wp.array(dtype=i32), radius_a: wp.array(dtype=scalar),
               mid: wp.array(dtype=vec3), half: wp.array(dtype=vec3),
               maxhalf: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
               gi: wp.array(dtype=i32), mask: int, start: wp.array(dtype=i32),
               entries: wp.array(dtype=i32), excl_start: wp.array(dtype=i32),
               excluded: wp.array(dtype=i32), state: wp.array(dtype=i32), slots: int,
               cnt: wp.array(dtype=i32), keys: wp.array(dtype=i32), need: wp.array(dtype=i32),
               spos: wp.array(dtype=vec3), shalf: wp.array(dtype=vec3),
               sedge: wp.array(dtype=i32), sreach: wp.array(dtype=scalar), threads: int):
        """``ee_edges`` of every edge, in blocks on ``threads`` POSIX threads
        (``spos``, ``shalf``: the edge grid's midpoints and half extents in entry order;
        ``sedge`` (3 M,), ``sreach`` (13 M,): scratch, the entries' ends, moving flags,
        bounding-sphere radii, first ends, directions, midpoints and half extents in entry
        order)."""
        ee_search(ref, edges, mover, radius_a, mid, half, maxhalf, gf, gi, mask, start,
                  entries, excl_start, excluded, state, slots, cnt, keys, need, spos, shalf,
                  sedge, sreach, threads)

    @wp.kernel(module=module)
    def pt_triangles_all(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
               mover: wp.array(dtype=i32), radius_a: wp.array(dtype=scalar),
               gf: wp.array(dtype=scalar), gi: wp.array(dtype=i32), mask: int,
               start: wp.array(dtype=i32), entries: wp.array(dtype=i32),
               excl_start: wp.array(dtype=i32), excluded: wp.array(dtype=i32),
               state: wp.array(dtype=i32), slots: int, cnt: wp.array(dtype=i32),
               keys: wp.array(dtype=i32), need: wp.array(dtype=i32),
               spos: wp.array(dtype=vec3), threads: int):
        """``pt_triangles`` of every triangle, in blocks on ``threads`` POSIX threads
        (``spos``: the vertex grid's positions in entry order)."""
        pt_search(ref, tris, mover, radius_a, gf, gi, mask, start, entries, excl_start,
                  excluded, state, slots, cnt, keys, need, spos, threads)

    @wp.kernel(module=module)
    def pt_movers_all(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                      mover: wp.array(dtype=i32), radius_a: wp.array(dtype=scalar),
                      mid: wp.array(dtype=vec3), half: wp.array(dtype=vec3),
                      maxhalf: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                      gi: wp.array(dtype=i32), mask: int, start: wp.array(dtype=i32),
                      entries: wp.array(dtype=i32), excl_start: wp.array(dtype=i32),
                      excluded: wp.array(dtype=i32), state: wp.array(dtype=i32), slots: int,
                      cnt: wp.array(dtype=i32), keys: wp.array(dtype=i32),
                      need: wp.array(dtype=i32), spos: wp.array(dtype=vec3),
                      shalf: wp.array(dtype=vec3), threads: int):
        """``pt_movers`` of every moving vertex, in blocks on ``threads`` POSIX threads
        (``spos``, ``shalf``: the triangle grid's box centres and half extents in entry
        order; ``mid``, ``half`` unused, the arguments of ``pt_movers``)."""
        ptm_search(ref, tris, mover, radius_a, maxhalf, gf, gi, mask, start, entries,
                   excl_start, excluded, state, slots, cnt, keys, need, spos, shalf, threads)

    def owners_text(tag: str, n: str, pointers: str, ints: str, decl: str, body: str) -> str:
        text = _OWNERS.replace("__PTHREAD__", _PTHREAD).replace("__DECL__", decl)
        text = text.replace("__BODY__", body).replace("__POINTERS__", pointers)
        text = text.replace("__N__", n).replace("__INTS__", ints)
        return text.replace("__TAG__", f"{tag}_{precision}")

    def compact_body(owners: wp.array(dtype=wp.vec3i), mover: wp.array(dtype=i32),
                     partner_ends: wp.array(dtype=wp.vec2i), family: int,
                     state: wp.array(dtype=i32), slots: int, cnt: wp.array(dtype=i32),
                     keys: wp.array(dtype=i32), threads: int):
        ...

    def sort_body(state: wp.array(dtype=i32), slots: int, cnt: wp.array(dtype=i32),
                  keys: wp.array(dtype=i32), kept: wp.array(dtype=i32), threads: int):
        ...

    def gather_body(state: wp.array(dtype=i32), family: int, tris: wp.array(dtype=wp.vec3i),
                    edges: wp.array(dtype=wp.vec2i), slots: int, kept: wp.array(dtype=i32),
                    offsets: wp.array(dtype=i32), keys: wp.array(dtype=i32),
                    out: wp.array(dtype=wp.vec4i), cnt: wp.array(dtype=i32), threads: int):
        ...

    for fn, name in ((compact_body, "compact_pass"), (sort_body, "sort_pass"),
                     (gather_body, "gather_pass")):
        fn.__name__ = fn.__qualname__ = f"{name}_{precision}"
    compact_pass = wp.func_native(owners_text(
        "compact", "(family == 0 ? owners.shape[0] : partner_ends.shape[0])",
        "(void*)owners.data, (void*)mover.data, (void*)partner_ends.data", "family",
        _COMPACT_DECL, _COMPACT))(compact_body)
    sort_pass = wp.func_native(owners_text(
        "sort", "cnt.shape[0]", "(void*)kept.data", "0", _SORT_DECL, _SORT))(sort_body)
    gather_pass = wp.func_native(owners_text(
        "gather", "kept.shape[0]",
        "(void*)tris.data, (void*)edges.data, (void*)kept.data, (void*)offsets.data, "
        "(void*)out.data", "family, out.shape[0]", _GATHER_DECL, _GATHER))(gather_body)

    @wp.kernel(module=module)
    def compact_all(owners: wp.array(dtype=wp.vec3i), mover: wp.array(dtype=i32),
                    partner_ends: wp.array(dtype=wp.vec2i), family: int,
                    state: wp.array(dtype=i32), slots: int, cnt: wp.array(dtype=i32),
                    keys: wp.array(dtype=i32), threads: int):
        """``compact`` of every owner (triangles: family 0, edges: 1), in blocks on
        ``threads`` POSIX threads."""
        compact_pass(owners, mover, partner_ends, family, state, slots, cnt, keys, threads)

    @wp.kernel(module=module)
    def sort_slots_all(state: wp.array(dtype=i32), slots: int, cnt: wp.array(dtype=i32),
                       keys: wp.array(dtype=i32), kept: wp.array(dtype=i32), threads: int):
        """``sort_slots`` of every owner, in blocks on ``threads`` POSIX threads."""
        sort_pass(state, slots, cnt, keys, kept, threads)

    @wp.kernel(module=module)
    def gather_all(state: wp.array(dtype=i32), family: int, tris: wp.array(dtype=wp.vec3i),
                   edges: wp.array(dtype=wp.vec2i), slots: int, kept: wp.array(dtype=i32),
                   offsets: wp.array(dtype=i32), keys: wp.array(dtype=i32),
                   out: wp.array(dtype=wp.vec4i), threads: int):
        """``gather`` of every owner, in blocks on ``threads`` POSIX threads."""
        gather_pass(state, family, tris, edges, slots, kept, offsets, keys, out, kept, threads)

    def grid_body(points: wp.array(dtype=vec3), halves: wp.array(dtype=vec3), boxes: int,
                  radius: wp.array(dtype=scalar), extent: scalar, scale: scalar,
                  gate: wp.array(dtype=i32), lo: wp.array(dtype=scalar),
                  hi: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                  gi: wp.array(dtype=i32), mask: int, key: wp.array(dtype=i32),
                  key_count: wp.array(dtype=i32), start: wp.array(dtype=i32),
                  entries: wp.array(dtype=i32), spos: wp.array(dtype=vec3),
                  shalf: wp.array(dtype=vec3)):
        ...

    grid_body.__name__ = grid_body.__qualname__ = f"grid_pass_{precision}"
    grid_text = _GRID.replace("__REAL__", real)
    for name in ("GF_INV_ROW", "GF_INV_SWEEP", "GF_LO"):
        grid_text = grid_text.replace(f"__{name}__", str(getattr(lk, name)))
    grid_pass = wp.func_native(grid_text)(grid_body)

    def boxes_text(corners: int) -> str:
        return (_BOXES.replace("__REAL__", real).replace("__CORNERS__", str(corners))
                .replace("__LS_MODE__", str(lk.LS_MODE)))

    def edge_body(ref: wp.array(dtype=vec3), corners: wp.array(dtype=wp.vec2i),
                  state: wp.array(dtype=i32), mid: wp.array(dtype=vec3),
                  half: wp.array(dtype=vec3), maxhalf: wp.array(dtype=scalar)):
        ...

    def tri_body(ref: wp.array(dtype=vec3), corners: wp.array(dtype=wp.vec3i),
                 state: wp.array(dtype=i32), mid: wp.array(dtype=vec3),
                 half: wp.array(dtype=vec3), maxhalf: wp.array(dtype=scalar)):
        ...

    edge_body.__name__ = edge_body.__qualname__ = f"edge_boxes_pass_{precision}"
    edge_pass = wp.func_native(boxes_text(2))(edge_body)
    tri_body.__name__ = tri_body.__qualname__ = f"tri_boxes_pass_{precision}"
    tri_pass = wp.func_native(boxes_text(3))(tri_body)

    @wp.kernel(module=module)
    def edge_boxes_all(ref: wp.array(dtype=vec3), edges: wp.array(dtype=wp.vec2i),
                       state: wp.array(dtype=i32), mid: wp.array(dtype=vec3),
                       half: wp.array(dtype=vec3), maxhalf: wp.array(dtype=scalar)):
        """``edge_boxes`` of every edge in one loop."""
        edge_pass(ref, edges, state, mid, half, maxhalf)

    @wp.kernel(module=module)
    def tri_boxes_all(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                      state: wp.array(dtype=i32), mid: wp.array(dtype=vec3),
                      half: wp.array(dtype=vec3), maxhalf: wp.array(dtype=scalar)):
        """``tri_boxes`` of every triangle in one loop."""
        tri_pass(ref, tris, state, mid, half, maxhalf)

    def scan_body(counts: wp.array(dtype=i32), n: int, gate: wp.array(dtype=i32),
                  offsets: wp.array(dtype=i32), total: wp.array(dtype=i32)):
        ...

    scan_body.__name__ = scan_body.__qualname__ = f"scan_pass_{precision}"
    scan_pass = wp.func_native(_SCAN)(scan_body)

    @wp.kernel(module=module)
    def scan_all(counts: wp.array(dtype=i32), n: int, gate: wp.array(dtype=i32),
                 offsets: wp.array(dtype=i32), total: wp.array(dtype=i32)):
        """Exclusive prefix sum of ``counts[:n]`` into ``offsets[:n + 1]``, the total to
        ``total[0]``, where ``gate``: the stage's fixed-order scan in one loop."""
        scan_pass(counts, n, gate, offsets, total)

    @wp.kernel(module=module)
    def grid_build_all(points: wp.array(dtype=vec3), halves: wp.array(dtype=vec3), boxes: int,
                       radius: wp.array(dtype=scalar), extent: scalar, scale: scalar,
                       gate: wp.array(dtype=i32), lo: wp.array(dtype=scalar),
                       hi: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                       gi: wp.array(dtype=i32), mask: int, key: wp.array(dtype=i32),
                       key_count: wp.array(dtype=i32), start: wp.array(dtype=i32),
                       entries: wp.array(dtype=i32), spos: wp.array(dtype=vec3),
                       shalf: wp.array(dtype=vec3)):
        """A row grid over ``points`` (``RowGrid.issue_build``'s kernels in one loop; with
        ``boxes``, the ``halves`` in entry order too), where ``gate``."""
        grid_pass(points, halves, boxes, radius, extent, scale, gate, lo, hi, gf, gi, mask,
                  key, key_count, start, entries, spos, shalf)

    vec4: Any = wp.types.vector(4, scalar)
    def pairs_text(crossing: bool) -> str:
        pointers = ("(void*)act.data, (void*)corr.data, (void*)wc.data, (void*)touch.data, "
                    "(void*)cnt.data, nullptr, nullptr, (void*)deep.data, (void*)stats.data"
                    if not crossing else
                    "nullptr, nullptr, nullptr, nullptr, nullptr, (void*)flag.data, "
                    "(void*)reverted.data, nullptr, nullptr")
        text = _PAIRS.replace("__EVAL_TAIL__", _EVAL_TAIL)
        text = text.replace("__POINTERS__", pointers).replace("__PTHREAD__", _PTHREAD)
        if crossing:
            head = "const __REAL__ pbd_reals[] = {t, band, mu,"
            text = text.replace(head, "const __REAL__ mu = 0;\n" + head)
        text = text.replace("__TAG__", f"{'crossed' if crossing else 'pairs'}_{precision}")
        text = text.replace("__REAL__", real).replace("__SQRT__", "wp::sqrt")
        text = text.replace("__CROSSING__", "true" if crossing else "false")
        for name in ("ST_DONE", "ST_PASS", "ST_PROJECTED", "ST_PASS_ANY", "ST_EPOCH",
                     "ST_STOP", "ST_ANY", "STAT_PT_CONTACTS", "STAT_EVALUATED"):
            text = text.replace(f"__{name}__", str(getattr(kk, name)))
        return text

    def pairs_body(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3),
                   inv_mass: wp.array(dtype=scalar), idx: wp.array(dtype=wp.vec4i),
                   count: wp.array(dtype=i32), edge_pairs: int, state: wp.array(dtype=i32),
                   t: scalar, band: scalar, mu: scalar, interior: scalar,
                   moved: wp.array(dtype=scalar), base: wp.array(dtype=scalar),
                   slack_c: wp.array(dtype=scalar), slack_x: wp.array(dtype=scalar),
                   margin: scalar, skip: int, act: wp.array(dtype=i32),
                   corr: wp.array(dtype=vec3), wc: wp.array(dtype=vec4),
                   deep: wp.array(dtype=scalar), touch: wp.array(dtype=i32),
                   cnt: wp.array(dtype=i32), stats: wp.array(dtype=i32), threads: int):
        ...

    def crossed_body(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3),
                     inv_mass: wp.array(dtype=scalar), idx: wp.array(dtype=wp.vec4i),
                     count: wp.array(dtype=i32), edge_pairs: int, state: wp.array(dtype=i32),
                     t: scalar, band: scalar, interior: scalar,
                     moved: wp.array(dtype=scalar), base: wp.array(dtype=scalar),
                     slack_c: wp.array(dtype=scalar), slack_x: wp.array(dtype=scalar),
                     margin: scalar, skip: int, flag: wp.array(dtype=i32),
                     reverted: wp.array(dtype=i32), threads: int):
        ...

    pairs_body.__name__ = pairs_body.__qualname__ = f"pair_pass_{precision}"
    pair_pass = wp.func_native(pairs_text(False))(pairs_body)
    crossed_body.__name__ = crossed_body.__qualname__ = f"crossed_pass_{precision}"
    crossed_pass = wp.func_native(pairs_text(True))(crossed_body)

    @wp.kernel(module=module)
    def pair_eval_all(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3),
                      inv_mass: wp.array(dtype=scalar), idx: wp.array(dtype=wp.vec4i),
                      count: wp.array(dtype=i32), edge_pairs: int,
                      state: wp.array(dtype=i32), t: scalar, band: scalar, mu: scalar,
                      interior: scalar, moved: wp.array(dtype=scalar),
                      base: wp.array(dtype=scalar), slack_c: wp.array(dtype=scalar),
                      slack_x: wp.array(dtype=scalar), margin: scalar, skip: int,
                      act: wp.array(dtype=i32), corr: wp.array(dtype=vec3),
                      wc: wp.array(dtype=vec4), deep: wp.array(dtype=scalar),
                      touch: wp.array(dtype=i32), cnt: wp.array(dtype=i32),
                      stats: wp.array(dtype=i32), threads: int):
        """``pair_eval`` of every pair, split into ``threads`` runs of the list, one POSIX
        thread each (the arguments of ``pair_eval`` but its last)."""
        pair_pass(p, x0, inv_mass, idx, count, edge_pairs, state, t, band, mu, interior, moved,
                  base, slack_c, slack_x, margin, skip, act, corr, wc, deep, touch, cnt, stats,
                  threads)

    @wp.kernel(module=module)
    def mark_crossed_all(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3),
                         inv_mass: wp.array(dtype=scalar), idx: wp.array(dtype=wp.vec4i),
                         count: wp.array(dtype=i32), edge_pairs: int, t: scalar,
                         band: scalar, interior: scalar, moved: wp.array(dtype=scalar),
                         base: wp.array(dtype=scalar), slack_c: wp.array(dtype=scalar),
                         slack_x: wp.array(dtype=scalar), margin: scalar, skip: int,
                         state: wp.array(dtype=i32), flag: wp.array(dtype=i32),
                         reverted: wp.array(dtype=i32), threads: int):
        """``mark_crossed`` of every pair, in ``threads`` runs as ``pair_eval_all``."""
        crossed_pass(p, x0, inv_mass, idx, count, edge_pairs, state, t, band, interior, moved,
                     base, slack_c, slack_x, margin, skip, flag, reverted, threads)

    def sub(text: str) -> str:
        text = text.replace("__REAL__", real).replace("__SQRT__", "wp::sqrt")
        for name in ("ST_DONE", "ST_PASS_ANY", "ST_PASS"):
            text = text.replace(f"__{name}__", str(getattr(kk, name)))
        return text

    def relax_body(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=i32),
                   act: wp.array(dtype=i32), wc: wp.array(dtype=vec4),
                   cnt: wp.array(dtype=i32), state: wp.array(dtype=i32),
                   corr: wp.array(dtype=vec3), scatter: int, dp: wp.array(dtype=vec3)):
        ...

    def track_body(p: wp.array(dtype=vec3), idx: wp.array(dtype=wp.vec4i),
                   count: wp.array(dtype=i32), edge_pairs: int, band: scalar,
                   slack_c: wp.array(dtype=scalar), slack_x: wp.array(dtype=scalar),
                   base: wp.array(dtype=scalar), threads: int):
        ...

    relax_body.__name__ = relax_body.__qualname__ = f"relax_pass_{precision}"
    relax_pass = wp.func_native(sub(_RELAX))(relax_body)

    def sums_body(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=i32),
                  act: wp.array(dtype=i32), wc: wp.array(dtype=vec4),
                  cnt: wp.array(dtype=i32), state: wp.array(dtype=i32),
                  corr: wp.array(dtype=vec3), scatter: int, dp: wp.array(dtype=vec3),
                  touch: wp.array(dtype=i32), p: wp.array(dtype=vec3),
                  moved: wp.array(dtype=scalar)):
        ...

    sums_body.__name__ = sums_body.__qualname__ = f"sums_pass_{precision}"
    sums_pass = wp.func_native(sub(_RELAX + _APPLY))(sums_body)
    track_body.__name__ = track_body.__qualname__ = f"track_pass_{precision}"
    track_pass = wp.func_native(sub(_TRACK_BEGIN).replace("__PTHREAD__", _PTHREAD).replace(
        "__TAG__", f"track_{precision}"))(track_body)

    @wp.kernel(module=module)
    def contact_relax_all(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=i32),
                          act: wp.array(dtype=i32), wc: wp.array(dtype=vec4),
                          cnt: wp.array(dtype=i32), state: wp.array(dtype=i32),
                          corr: wp.array(dtype=vec3), scatter: int, dp: wp.array(dtype=vec3),
                          stride: int):
        """``contact_relax`` of every contact in list order, one thread (``stride`` unused)."""
        relax_pass(idx, count, act, wc, cnt, state, corr, scatter, dp)

    @wp.kernel(module=module)
    def contact_sums_all(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=i32),
                         act: wp.array(dtype=i32), wc: wp.array(dtype=vec4),
                         cnt: wp.array(dtype=i32), state: wp.array(dtype=i32),
                         corr: wp.array(dtype=vec3), dp: wp.array(dtype=vec3),
                         touch: wp.array(dtype=i32), p: wp.array(dtype=vec3),
                         moved: wp.array(dtype=scalar)):
        """``contact_relax`` (scattered, in list order) and then ``apply_sums`` in one thread;
        the counts of the particles touched in the pass back to 0 (none other is raised)."""
        sums_pass(idx, count, act, wc, cnt, state, corr, 1, dp, touch, p, moved)

    @wp.kernel(module=module)
    def track_begin_all(p: wp.array(dtype=vec3), idx: wp.array(dtype=wp.vec4i),
                        count: wp.array(dtype=i32), edge_pairs: int, band: scalar,
                        slack_c: wp.array(dtype=scalar), slack_x: wp.array(dtype=scalar),
                        base: wp.array(dtype=scalar), threads: int):
        """``track_begin`` of every pair, in blocks on ``threads`` POSIX threads."""
        track_pass(p, idx, count, edge_pairs, band, slack_c, slack_x, base, threads)

    return SimpleNamespace(module=module, ee_edges_all=ee_edges_all,
                           pt_triangles_all=pt_triangles_all, pt_movers_all=pt_movers_all,
                           compact_all=compact_all, sort_slots_all=sort_slots_all,
                           gather_all=gather_all, grid_build_all=grid_build_all,
                           edge_boxes_all=edge_boxes_all, tri_boxes_all=tri_boxes_all,
                           scan_all=scan_all,
                           pair_eval_all=pair_eval_all, mark_crossed_all=mark_crossed_all,
                           contact_relax_all=contact_relax_all,
                           contact_sums_all=contact_sums_all,
                           track_begin_all=track_begin_all)
