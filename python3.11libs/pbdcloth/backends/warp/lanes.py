"""CPU-only kernels (float32, Warp's CPU device): constraints eight at a time, particles in one loop.

Why: on the CPU Warp runs a kernel's threads one after another, and each thread of
:func:`~pbdcloth.backends.warp.kernels.build_kernels`' per-constraint kernels is one scalar
dependency chain that the processor cannot overlap with the next constraint's: a hinge of
``bend_pbd`` is ~150 floating-point operations (cross products, a square root, an arctangent,
five divisions), ~45-60 ns; a distance constraint of ``distance_pbd`` (a square root and a
division) ~12 ns. Here the constraints of a family are regrouped into *lane groups* of 8
constraints of one color; one launch walks the groups in color order, gathers each group's
corners into 8-wide vectors (clang vector extensions: one AVX register per coordinate of a
corner), runs the constraint math on whole vectors without branches or library calls, and
scatters the moved corners.
Same formulas as the per-constraint kernels:

* distances: ``distance_pbd`` / ``distance_xpbd`` (constraints/distance.py: Müller et al. 2006,
  eq. 10-11; XPBD after Macklin, Müller and Chentanez 2016, eq. 18 and 26), the same operations
  in the same order: bit-identical to the per-constraint kernels (tests/test_warp.py);
* bending: ``hinge_angle`` / ``bend_pbd`` / ``bend_xpbd`` (constraints/bend.py: Bridson, Marino
  and Fedkiw 2003 gradient; Müller et al. 2006 eq. 8), with two rounding-level differences:

  - atan is Cephes' ``atanf`` polynomial (S. L. Moshier: |x| reduced by tan(pi/8) and
    tan(3pi/8), degree-4 polynomial in x^2; peak relative error 1.9e-7, i.e. 1-2 float32 units)
    instead of a libm call, which would stop the vectorization;
  - C = theta - rest is wrapped into (-pi, pi] by adding or subtracting 2 pi (theta and rest
    both lie in [-pi, pi], so one turn is enough) instead of the scalar kernel's fmod.

XPBD multipliers: the first iteration of a substep reads them as 0 (``fresh``) instead of a
separate launch that zeroes them. Predict (without wind) and the velocity update run as one
loop over all particles in one thread (``predict_loop``, ``update_loop``; the same arithmetic as
:mod:`.kernels`' ``predict`` and ``update``), which saves Warp's per-thread overhead: ~2 ns instead
of ~5 ns per particle.

The hierarchy's coarse levels run the same way (``unilateral_lanes``: a level's sweeps in one
launch, the strain limit's arithmetic with trigger and target at the level's slack, stopping as
``unilateral_sweeps`` does), its hand-down and start copy as one loop each; the strain limit's
sweeps after the first skip the groups whose corners no sweep has moved since their last visit
(each group marked, in one copy of the marks per thread, with the last sweep that moved one of
its corners), as numpy skips such edges. The strain limit runs each sweep's colors in turn, a
color's groups in blocks on the tuning's ``warp_cpu_threads`` POSIX threads (the pool of
:mod:`.selfcollision_native`; a block starts once the colors before it are done, and the lanes
of one color share no particle, so the stores are those of one thread). All of these give the
per-constraint kernels' results bit for bit (tests/test_warp.py, tests/test_parity.py).

A group never straddles two colors (each color is padded to a multiple of 8 lanes, see
:class:`LaneGroups`); padding lanes carry the particle index -1 and are never stored. The lanes
of one group share no particle, so the order of the scatter does not matter and results are
deterministic. Measured (CPU time, 100 x 100 particles, 2-core AMD EPYC): distances 2.1-2.2x
and bending 2.5-3x faster than the per-constraint kernels; ~5.5 ns per distance constraint and
~18-20 ns per hinge.

The kernel bodies are native C++ snippets (``wp.func_native``, compiled by Warp's clang):
Warp's own code generator keeps every value in memory and does not vectorize. Lane values are
never written lane by lane and read back as a vector (that stalls store-to-load forwarding);
the scatter goes the other way, whole vectors to memory, then scalar loads. This module is
CPU-only; CUDA (and float64) run the per-constraint kernels, one constraint per GPU thread.
"""

# mypy: ignore-errors
# (kernel annotations are Warp's typed language)
import functools
import itertools
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import warp as wp

from ...constraints.bend import DEGENERATE_NORMAL_SQ
from ...constraints.distance import MIN_LENGTH
from .selfcollision_native import _PTHREAD

#: Constraints per lane group (8 float32 lanes = one AVX register; the gather's vector
#: initializers are written out for 8).
LANES = 8

_MODULE = "pbdcloth_warp_cpu_lanes"

# Gather, shared by both families: K corners per constraint. XPBD and K are compile-time
# constants of the template; DAMP (XPBD constraint damping) is uniform over the launch. All lane
# values are clang vectors (``lanes_t``, one AVX register): built from scalar loads in
# registers, never stored lane by lane and read back whole (a store-to-load forwarding stall).
_GATHER = r"""
typedef float lanes_t __attribute__((ext_vector_type(__LANES__)));
typedef int mask_t __attribute__((ext_vector_type(__LANES__)));
const int L = __LANES__, K = __CORNERS__;
const bool XPBD = __XPBD__;
const bool LIMIT = __LIMIT__;
const bool DAMP = XPBD && gamma != 0.0f;
const lanes_t ZERO = (lanes_t)(0.0f), ONE = (lanes_t)(1.0f);
float* PF = (float*)p.data;
const float* XF = (const float*)x_prev.data;
for (int g = first; g < last; ++g) {
  const int* Q = (const int*)idx.data + g * K * L;      // [K][L] particle indices, -1 = padding
  const float* W = (const float*)w.data + g * K * L;     // [K][L] per-corner weights
  const float* R = (const float*)rest.data + g * L;      // [L] rest values
  float* LAM = (float*)lam.data + g * L;                 // [L] XPBD multipliers
  const float* SC = (const float*)scale.data + g * L;    // [L] stiffness scales (1: none)
  auto load = [](const float* a) { lanes_t v; __builtin_memcpy(&v, a, sizeof(v)); return v; };
  __SKIP__
  mask_t used;
  __builtin_memcpy(&used, Q, sizeof(used));
  used = used >= 0;
  int I[K][L];        // 3 x particle index (padding: particle 0)
  lanes_t X[K][3];    // corners [m]
  lanes_t V[K][3];    // x - x_prev (XPBD damping only)
  lanes_t D[K][3];    // corner moves [m]
  lanes_t LNEW = ZERO;
  mask_t ok;
  #pragma clang loop unroll(full)
  for (int c = 0; c < K; ++c) {
    for (int l = 0; l < L; ++l) I[c][l] = 3 * (Q[c * L + l] < 0 ? 0 : Q[c * L + l]);
    #pragma clang loop unroll(full)
    for (int d = 0; d < 3; ++d) {
      const int* i = I[c];
      X[c][d] = lanes_t{PF[i[0] + d], PF[i[1] + d], PF[i[2] + d], PF[i[3] + d],
                        PF[i[4] + d], PF[i[5] + d], PF[i[6] + d], PF[i[7] + d]};
      if (DAMP)
        V[c][d] = X[c][d] - lanes_t{XF[i[0] + d], XF[i[1] + d], XF[i[2] + d], XF[i[3] + d],
                                    XF[i[4] + d], XF[i[5] + d], XF[i[6] + d], XF[i[7] + d]};
    }
  }
"""

# Scatter, shared: valid lanes store their multiplier and moved corners.
_SCATTER = r"""
  // Moved corners through memory: whole-vector stores, then scalar loads (cheaper than
  // extracting lanes from registers one by one).
  alignas(32) float Y[K][3][L];
  alignas(32) int OK[L];
  alignas(32) float LN[L];
  #pragma clang loop unroll(full)
  for (int c = 0; c < K; ++c)
    #pragma clang loop unroll(full)
    for (int d = 0; d < 3; ++d) {
      lanes_t y = X[c][d] + D[c][d];
      __builtin_memcpy(Y[c][d], &y, sizeof(y));
    }
  __builtin_memcpy(OK, &ok, sizeof(ok));
  __builtin_memcpy(LN, &LNEW, sizeof(LNEW));
  __KEEP_MOVES__
  for (int l = 0; l < L; ++l) {
    if (!OK[l]) continue;
    __COUNT__
    if (XPBD) LAM[l] = LN[l];
    for (int c = 0; c < K; ++c) {
      float* q = PF + I[c][l];
      __SLIDE__
      q[0] = Y[c][0][l]; q[1] = Y[c][1][l]; q[2] = Y[c][2][l];
      __STAMP__
    }
  }
}  // groups
"""

# Distance: W = (w_i/(w_i+w_j), w_j/(w_i+w_j)) for PBD, (w_i, w_j) [1/kg] for XPBD; R = rest
# length [m]. PBD: s = k' (|d| - d0) / |d|, x_i -= W_i s d, x_j += W_j s d; the strain limit
# (LIMIT, k = 1 + limit, alpha = the target t): where |d| > k d0, s = (|d| - t d0) / |d|, the
# same moves, sweep after sweep until one moves nothing (at most ``fresh`` sweeps). XPBD: n = d/|d|,
# dlambda = (d0 - |d| - alpha~ lambda - gamma n.(dx_i - dx_j)) / ((1 + gamma)(w_i + w_j) + alpha~),
# x_i += w_i dlambda n, x_j -= w_j dlambda n. (x_i - d) == x_i + (-d) exactly.
_DISTANCE = r"""
  lanes_t dx = X[0][0] - X[1][0], dy = X[0][1] - X[1][1], dz = X[0][2] - X[1][2];
  lanes_t len = __builtin_elementwise_sqrt(dx * dx + dy * dy + dz * dz);
  lanes_t safe = len > __MIN_LENGTH__ ? len : (lanes_t)(__MIN_LENGTH__);
  lanes_t w0 = load(W), w1 = load(W + L);
  mask_t stretched = used;   // the strain limit: the lanes past the limit (the others stay)
  if (XPBD) {
    lanes_t nx = dx / safe, ny = dy / safe, nz = dz / safe;
    lanes_t lam_c = fresh ? ZERO : load(LAM);
    lanes_t sc = load(SC);
    lanes_t numer = (load(R) - len) * sc - alpha * lam_c;
    if (DAMP) {
      numer = numer - gamma * (nx * (V[0][0] - V[1][0]) + ny * (V[0][1] - V[1][1])
                               + nz * (V[0][2] - V[1][2]));
    }
    lanes_t denom = (sc + gamma) * (w0 + w1) + alpha;
    mask_t positive = denom > 0.0f;
    lanes_t dl = numer * (1.0f / (positive ? denom : ONE));
    dl = positive ? dl : ZERO;   // both ends pinned and rigid: nothing moves
    LNEW = lam_c + dl;
    nx = nx * dl; ny = ny * dl; nz = nz * dl;
    D[0][0] = nx * w0; D[0][1] = ny * w0; D[0][2] = nz * w0;
    D[1][0] = -(nx * w1); D[1][1] = -(ny * w1); D[1][2] = -(nz * w1);
  } else {
    lanes_t s;
    if (LIMIT) {   // k = 1 + the strain limit, alpha = the target t: past k d0, to t d0
      lanes_t rest_len = load(R);
      mask_t past = (len - k * rest_len) > ZERO;
      stretched = used & past;   // the others move by exactly 0: not stored
      __FAR__
      s = past ? (len - alpha * rest_len) / safe : ZERO;
    } else {
      lanes_t ks = k * load(SC);
      ks = ks < ONE ? ks : ONE;
      s = (len - load(R)) / safe * ks;
    }
    dx = dx * s; dy = dy * s; dz = dz * s;
    D[0][0] = -(dx * w0); D[0][1] = -(dy * w0); D[0][2] = -(dz * w0);
    D[1][0] = dx * w1; D[1][1] = dy * w1; D[1][2] = dz * w1;
  }
  ok = XPBD ? used : stretched;
"""

# Bend: W = inverse masses [1/kg] of (p1, p2, p3, p4); R = rest angle [rad].
_BEND = r"""
  const float pi = 3.141592653589793f, two_pi = 6.283185307179586f;
  // e = x2 - x1, a = x3 - x1, b = x4 - x1, n1 = e x a, n2 = b x e
  lanes_t ex = X[1][0] - X[0][0], ey = X[1][1] - X[0][1], ez = X[1][2] - X[0][2];
  lanes_t ax = X[2][0] - X[0][0], ay = X[2][1] - X[0][1], az = X[2][2] - X[0][2];
  lanes_t bx = X[3][0] - X[0][0], by = X[3][1] - X[0][1], bz = X[3][2] - X[0][2];
  lanes_t n1x = ey * az - ez * ay, n1y = ez * ax - ex * az, n1z = ex * ay - ey * ax;
  lanes_t n2x = by * ez - bz * ey, n2y = bz * ex - bx * ez, n2z = bx * ey - by * ex;
  lanes_t n1sq = n1x * n1x + n1y * n1y + n1z * n1z;
  lanes_t n2sq = n2x * n2x + n2y * n2y + n2z * n2z;
  lanes_t elen2 = ex * ex + ey * ey + ez * ez;
  mask_t valid = ((n1sq < n2sq ? n1sq : n2sq) > __DEGENERATE__) & (elen2 > 0.0f) & used;
  lanes_t elen = __builtin_elementwise_sqrt(elen2);
  lanes_t s = -((n1x * bx + n1y * by + n1z * bz) * elen);
  lanes_t c = n1x * n2x + n1y * n2y + n1z * n2z;
  // theta = 2 atan(s / r), r = sqrt(s^2 + c^2) + c; r = 0: +-pi by the sign of s (0 for s = 0)
  lanes_t r = __builtin_elementwise_sqrt(s * s + c * c) + c;
  mask_t folded = r == 0.0f;
  lanes_t t = s / (folded ? ONE : r);
  lanes_t x = __builtin_elementwise_abs(t);
  mask_t top = x > 2.414213562373095f, mid = x > 0.41421356237309503f;
  lanes_t xr = top ? -1.0f / (x > 0.0f ? x : ONE) : (mid ? (x - 1.0f) / (x + 1.0f) : x);
  lanes_t y0 = top ? (lanes_t)(1.5707963267948966f)
                   : (mid ? (lanes_t)(0.7853981633974483f) : ZERO);
  lanes_t z = xr * xr;
  lanes_t at = y0 + ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z
                      - 3.33329491539e-1f) * z * xr + xr);
  at = t < 0.0f ? -at : at;
  lanes_t theta = folded ? (s > 0.0f ? (lanes_t)(pi) : (s < 0.0f ? (lanes_t)(-pi) : ZERO))
                         : 2.0f * at;
  // gradient: dtheta/dx3 = -|e| n1/|n1|^2, dtheta/dx4 = -|e| n2/|n2|^2, ...
  lanes_t i1 = 1.0f / n1sq, i2 = 1.0f / n2sq, ie = 1.0f / elen;
  lanes_t m1x = n1x * i1, m1y = n1y * i1, m1z = n1z * i1;
  lanes_t m2x = n2x * i2, m2y = n2y * i2, m2z = n2z * i2;
  lanes_t ae = (ax * ex + ay * ey + az * ez) * ie, be = (bx * ex + by * ey + bz * ez) * ie;
  lanes_t g3x = m1x * -elen, g3y = m1y * -elen, g3z = m1z * -elen;
  lanes_t g4x = m2x * -elen, g4y = m2y * -elen, g4z = m2z * -elen;
  lanes_t g2x = m1x * ae + m2x * be, g2y = m1y * ae + m2y * be, g2z = m1z * ae + m2z * be;
  lanes_t g1x = -((g2x + g3x) + g4x), g1y = -((g2y + g3y) + g4y), g1z = -((g2z + g3z) + g4z);
  lanes_t w0 = load(W), w1 = load(W + L), w2 = load(W + 2 * L), w3 = load(W + 3 * L);
  lanes_t wg = (w0 * (g1x * g1x + g1y * g1y + g1z * g1z) + w1 * (g2x * g2x + g2y * g2y + g2z * g2z))
             + (w2 * (g3x * g3x + g3y * g3y + g3z * g3z) + w3 * (g4x * g4x + g4y * g4y + g4z * g4z));
  lanes_t C = theta - load(R);
  C = C > pi ? C - two_pi : (C < -pi ? C + two_pi : C);
  lanes_t step;
  if (XPBD) {
    lanes_t lam_c = fresh ? ZERO : load(LAM);
    lanes_t sc = load(SC);
    lanes_t numer = -C * sc - alpha * lam_c;
    if (DAMP) {
      lanes_t gdx = ((g1x * V[0][0] + g1y * V[0][1] + g1z * V[0][2])
                   + (g2x * V[1][0] + g2y * V[1][1] + g2z * V[1][2]))
                  + ((g3x * V[2][0] + g3y * V[2][1] + g3z * V[2][2])
                   + (g4x * V[3][0] + g4y * V[3][1] + g4z * V[3][2]));
      numer = numer - gamma * gdx;
    }
    lanes_t denom = (sc + gamma) * wg + alpha;
    mask_t positive = denom > 0.0f;
    valid = valid & positive;
    lanes_t dl = numer / (positive ? denom : ONE);
    step = valid ? dl : ZERO;
    LNEW = lam_c + step;
  } else {
    mask_t positive = wg > 0.0f;
    valid = valid & positive;
    lanes_t ks = k * load(SC);
    ks = ks < ONE ? ks : ONE;
    lanes_t q = -ks * (C / (positive ? wg : ONE));
    step = valid ? q : ZERO;
  }
  D[0][0] = (g1x * w0) * step; D[0][1] = (g1y * w0) * step; D[0][2] = (g1z * w0) * step;
  D[1][0] = (g2x * w1) * step; D[1][1] = (g2y * w1) * step; D[1][2] = (g2z * w1) * step;
  D[2][0] = (g3x * w2) * step; D[2][1] = (g3y * w2) * step; D[2][2] = (g3z * w2) * step;
  D[3][0] = (g4x * w3) * step; D[3][1] = (g4y * w3) * step; D[3][2] = (g4z * w3) * step;
  ok = valid;
"""


# Predict and update as one loop over all particles (no per-thread overhead), the same
# arithmetic as :mod:`.kernels`' ``predict`` (without wind) and ``update``.
_PREDICT = r"""
const float* X = (const float*)x.data;
float* V = (float*)v.data;
float* P = (float*)p.data;
float* VP = (float*)v_pred.data;
const float* IM = (const float*)inv_mass.data;
int* CT = (int*)contact.data;
const float ghx = gravity[0] * h, ghy = gravity[1] * h, ghz = gravity[2] * h;
for (int i = 0; i < n; ++i) {
  float vx = V[3 * i] * decay, vy = V[3 * i + 1] * decay, vz = V[3 * i + 2] * decay;
  if (IM[i] > 0.0f) { vx = vx + ghx; vy = vy + ghy; vz = vz + ghz; }
  V[3 * i] = vx; V[3 * i + 1] = vy; V[3 * i + 2] = vz;
  VP[3 * i] = vx; VP[3 * i + 1] = vy; VP[3 * i + 2] = vz;
  P[3 * i] = X[3 * i] + vx * h; P[3 * i + 1] = X[3 * i + 1] + vy * h;
  P[3 * i + 2] = X[3 * i + 2] + vz * h;
  CT[i] = 0;
}
"""

# The hierarchy's hand-down and the copy of the pass's start positions as one loop each, the
# same arithmetic as :mod:`.kernels`' ``hand_down`` and ``copy_positions``.
_HAND_DOWN = r"""
float* P = (float*)p.data;
const float* S = (const float*)start.data;
const int* FI = (const int*)fine.data;
const int* A = (const int*)parent0.data;
const int* B = (const int*)parent1.data;
const float* W0 = (const float*)weight0.data;
const float* W1 = (const float*)weight1.data;
const int count = fine.shape[0];
for (int k = 0; k < count; ++k) {
  const int f = 3 * FI[k], a = 3 * A[k], b = 3 * B[k];
  const float w0 = W0[k], w1 = W1[k];
  for (int d = 0; d < 3; ++d) {
    const float moved = S[f + d] + (P[a + d] - S[a + d]) * w0;
    P[f + d] = moved + (P[b + d] - S[b + d]) * w1;
  }
}
"""
_COPY = r"""
__builtin_memcpy(dst.data, src.data, sizeof(float) * 3 * src.shape[0]);
"""

_UPDATE = r"""
const float* P = (const float*)p.data;
const float* VP = (const float*)v_pred.data;
const int* CT = (const int*)contact.data;
const float* CN = (const float*)contact_normal.data;
const float* SV = (const float*)surface_velocity.data;
float* X = (float*)x.data;
float* V = (float*)v.data;
for (int i = 0; i < n; ++i) {
  const int a = 3 * i;
  float px = P[a], py = P[a + 1], pz = P[a + 2];
  float vx = (px - X[a]) / h, vy = (py - X[a + 1]) / h, vz = (pz - X[a + 2]) / h;
  if (use_restitution != 0 && CT[i] != 0) {
    const float nx = CN[a], ny = CN[a + 1], nz = CN[a + 2];
    const float sx = SV[a], sy = SV[a + 1], sz = SV[a + 2];
    float before = (VP[a] - sx) * nx + (VP[a + 1] - sy) * ny + (VP[a + 2] - sz) * nz;
    float now = (vx - sx) * nx + (vy - sy) * ny + (vz - sz) * nz;
    float e = -before > rest_speed ? restitution : 0.0f;
    float target = before < 0.0f ? -e * before : now;
    float dv = target - now;
    vx = vx + nx * dv; vy = vy + ny * dv; vz = vz + nz * dv;
  }
  V[a] = vx; V[a + 1] = vy; V[a + 2] = vz;
  X[a] = px; X[a + 1] = py; X[a + 2] = pz;
}
"""


# The strain limit's sweeps: the whole lane-group walk repeated until a sweep stores no lane,
# at most ``fresh`` sweeps (every edge is then within the limit; see
# pbdcloth.constraints.strain_limit). GM marks each group with the last sweep that moved one
# of its corners (a stored lane marks every group of its two particles: TO / TG, the groups
# of each particle); after the first sweep a group marked before the previous sweep is
# skipped: each of its edges is as long as at its last visit, which found it within the limit
# (an edge shortened then marked its own group), so the group would store nothing. Each
# thread keeps its own copy of the marks (``mark`` holds G marks per thread, copy k written
# by thread k alone, so no two threads write one cache line, then one slot for
# ``pbd_limit_run``), and a group's mark is the latest of its copies.
#
# The walk of groups first .. last - 1 in one sweep is a lambda (``block``: its own copy of
# the marks, OWN; returns the number of lanes it stored); ``pbd_limit_run`` (below it) runs
# the sweeps, color by color, on ``threads`` POSIX threads.
_SWEEPS_HEAD = r"""
typedef int pbd_limit_fn(void*, int, int, int, int*, int);  // (Warp's macro int(x): no "int (")
void pbd_limit_run(void* f, pbd_limit_fn* call, const int* starts, int colors, int first,
                   int last, int* GM, int marks, int passes, int threads);
const int* CT = (const int*)contact.data;              // [N] touching a collider (0: no)
const float* CNF = (const float*)contact_normal.data;  // [N][3] its outward normal
int* GM = (int*)mark.data;                             // [copies][G] the last sweep that moved
const int* TO = (const int*)touch_offsets.data;        // [N + 1] each particle's groups in TG
const int* TG = (const int*)touch_groups.data;
const int G_ALL_IN = ((const int*)color_starts.data)[color_starts.shape[0] - 1];
const float K_IN = k, ALPHA_IN = alpha, GAMMA_IN = gamma;
auto block = [&](int first, int last, int sweep, int* OWN, int COPIES) -> int {
// (the launch's values as locals of the walk: the stores below cannot change them)
const float k = K_IN, alpha = ALPHA_IN, gamma = GAMMA_IN;
const int G_ALL = G_ALL_IN;
int* const GM_ = GM;
const int* const CT_ = CT;
const float* const CNF_ = CNF;
const int* const TO_ = TO;
const int* const TG_ = TG;
int shortened = 0;
"""
# A later sweep skips a group none of whose corners moved since its last visit (above).
_SKIP_UNMOVED = r"""
  int most = GM_[g];
  for (int k2 = 1; k2 < COPIES; ++k2)
    most = GM_[k2 * G_ALL + g] > most ? GM_[k2 * G_ALL + g] : most;
  if (most < sweep - 1) continue;
"""
_MARK_GROUPS = r"""
      for (int t = TO_[I[c][l] / 3]; t < TO_[I[c][l] / 3 + 1]; ++t) OWN[TG_[t]] = sweep;
"""
_SWEEPS_TAIL = r"""
return shortened;
};  // block
pbd_limit_run((void*)&block,
              [](void* f, int a, int b, int s, int* own, int copies) -> int {
                return (*(decltype(block)*)f)(a, b, s, own, copies);
              },
              (const int*)color_starts.data, color_starts.shape[0] - 1, first, last, GM,
              mark.shape[0], fresh, threads);  // (mark: the marks, then one slot)
}
__PTHREAD__
// The sweeps over the colors' groups (``starts``: each color's first group, then G) within
// first .. last - 1, until a sweep stores no lane, at most ``passes``. One thread: color by
// color, group by group. More: each sweep's colors in turn, a color's groups in blocks of
// BG; a thread takes the next block from one counter over all sweeps (tickets), and starts a
// block only once every block of the colors before it is done (``done``, also counted over
// all sweeps), so each color sees the positions and marks of the colors before it exactly as
// on one thread, and the lanes of one color share no particle: the same stores, bit for bit,
// on any number of threads. A thread that has not started leaves its blocks to the others.
typedef int pbd_limit_fn(void*, int, int, int, int*, int);
namespace pbd_limit {
const int BG = 32, MAX_COLORS = 64, MAX_PASSES = 128;
// a sweep after one that stored fewer lanes than this visits too few groups to share
const int LIGHT = 256;
struct Shared {
  void* f; pbd_limit_fn* call;
  int lo[MAX_COLORS], hi[MAX_COLORS];  // each color's groups, clipped to first .. last - 1
  int pre[MAX_COLORS + 1];             // blocks before each color in a sweep
  int colors, passes, copies;     // copies: of the marks, one per thread
  alignas(64) int ticket;
  alignas(64) int done;
  alignas(64) int stop;
  alignas(64) int slow;                // some thread waited SLOW spins for a block
  alignas(64) int stored[MAX_PASSES];  // lanes stored in each sweep
};
struct Job { Shared* S; int* next; int* own; int index; };
// the test hook (``limit_test_hook``): the calling thread sleeps ``stall_us`` before each
// block of a shared sweep, so the other threads run ahead to the blocks that must wait for
// it; ``helped`` counts the blocks run by threads other than the caller
static int stall_us = 0;
static int helped = 0;
static inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
// wait until ``count`` blocks are done; false once the sweeps have stopped. A block takes
// a few microseconds: after SLOW spins (~0.1 ms) the thread holding it has been held up (its
// processor taken by another thread or by the host), so this one yields from then on and
// the run is marked slow
const int SLOW = 4096;
static inline bool until(Shared& S, int count) {
  for (int spins = 0; __atomic_load_n(&S.done, __ATOMIC_ACQUIRE) < count; ++spins) {
    if (__atomic_load_n(&S.stop, __ATOMIC_ACQUIRE) != 0) return false;
    if (spins < SLOW) {
      relax();
    } else {
      if (spins == SLOW) __atomic_store_n(&S.slow, 1, __ATOMIC_RELAXED);
      pbd_yield();
    }
  }
  return true;
}
// launches left to run on one thread after a slow one (every thread waits for the slowest at
// each color, so while a processor is being taken away one thread is faster)
static int solo = 0;
const int SOLO_RUNS = 32;
static void* work(void* arg) {
  Shared& S = *((Job*)arg)->S;
  int* own = ((Job*)arg)->own;
  const int per = S.pre[S.colors];
  for (;;) {
    const int t = __atomic_fetch_add(&S.ticket, 1, __ATOMIC_RELAXED);
    const int sweep = t / per, r = t - sweep * per;
    if (sweep >= S.passes) break;
    if (sweep > 0) {
      // the sweeps stop after the first that stored no lane
      if (!until(S, sweep * per)) break;
      if (__atomic_load_n(&S.stored[sweep - 1], __ATOMIC_RELAXED) == 0) {
        __atomic_store_n(&S.stop, 1, __ATOMIC_RELEASE);
        break;
      }
    }
    if (sweep > 0 && __atomic_load_n(&S.stored[sweep - 1], __ATOMIC_RELAXED) < LIGHT) {
      // a light sweep (the previous one stored few lanes, so few groups are visited): the
      // thread with its first block runs it whole, the others count their blocks done
      if (r == 0) {
        int n = 0;
        for (int c = 0; c < S.colors; ++c)
          if (S.lo[c] < S.hi[c]) n += S.call(S.f, S.lo[c], S.hi[c], sweep, own, S.copies);
        if (n != 0) __atomic_fetch_add(&S.stored[sweep], n, __ATOMIC_RELAXED);
      }
      __atomic_fetch_add(&S.done, 1, __ATOMIC_RELEASE);
      continue;
    }
    int c = 0;
    while (S.pre[c + 1] <= r) ++c;
    if (!until(S, sweep * per + S.pre[c])) break;
    if (stall_us > 0) {
      if (((Job*)arg)->index == 0) pbd_sleep_us(stall_us);
      else __atomic_fetch_add(&helped, 1, __ATOMIC_RELAXED);
    }
    const int g0 = S.lo[c] + (r - S.pre[c]) * BG;
    const int g1 = g0 + BG < S.hi[c] ? g0 + BG : S.hi[c];
    const int n = S.call(S.f, g0, g1, sweep, own, S.copies);
    if (n != 0) __atomic_fetch_add(&S.stored[sweep], n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&S.done, 1, __ATOMIC_RELEASE);
  }
  return nullptr;
}
}  // namespace pbd_limit
int pbd_limit_test_hook(int stall) {
  const int n = __atomic_exchange_n(&pbd_limit::helped, 0, __ATOMIC_RELAXED);
  pbd_limit::stall_us = stall > 0 ? stall : 0;
  pbd_limit::solo = 0;
  return n;
}
void pbd_limit_run(void* f, pbd_limit_fn* call, const int* starts, int colors, int first,
                   int last, int* GM, int marks, int passes, int threads) {
  using namespace pbd_limit;
  // the slot after the marks: 1 + the lanes the previous run's first sweep stored (0: none
  // yet); a run after a light first sweep keeps to one thread (no thread to wake)
  int* previous = GM + (marks - 1);
  marks -= 1;
  const int groups = starts[colors];
  const int copies = groups > 0 ? marks / groups : 1;   // a copy of the marks per thread
  threads = threads < 1 ? 1 : (threads > 8 ? 8 : threads);
  if (threads > copies) threads = copies;
  if (colors > MAX_COLORS || passes > MAX_PASSES || last - first < 4 * BG) threads = 1;
  if (threads > 1 && solo > 0) {
    solo -= 1;
    threads = 1;
  }
  if (*previous > 0 && *previous - 1 < LIGHT) threads = 1;
  // the first sweep visits all: the marks of the copies in use cleared
  for (int i = 0; i < threads * groups; ++i) GM[i] = -1;
  if (threads == 1) {   // (the colors are contiguous runs of groups, in order)
    for (int sweep = 0; sweep < passes; ++sweep) {
      const int n = call(f, first, last, sweep, GM, 1);
      if (sweep == 0) *previous = 1 + n;
      if (n == 0) break;
    }
    return;
  }
  Shared S;
  S.f = f; S.call = call; S.colors = colors; S.passes = passes; S.copies = threads;
  S.ticket = 0; S.done = 0; S.stop = 0; S.slow = 0;
  S.pre[0] = 0;
  for (int c = 0; c < colors; ++c) {
    S.lo[c] = starts[c] > first ? starts[c] : first;
    S.hi[c] = starts[c + 1] < last ? starts[c + 1] : last;
    const int n = S.hi[c] > S.lo[c] ? S.hi[c] - S.lo[c] : 0;
    S.pre[c + 1] = S.pre[c] + (n + BG - 1) / BG;
  }
  for (int k = 0; k < passes; ++k) S.stored[k] = 0;
  if (S.pre[colors] == 0) return;
  Job jobs[8];
  for (int k = 0; k < threads; ++k) jobs[k] = Job{&S, nullptr, GM + k * groups, k};
  // (the pool's own counter is unused: every thread runs work(), which takes tickets)
  pbd_team_run(work, (char*)jobs, (int)sizeof(Job), threads, 1,
               [](void* job, int* next) { ((Job*)job)->next = next; });
  if (S.slow != 0) solo = SOLO_RUNS;
  *previous = 1 + S.stored[0];
"""
# The test hook of the strain limit's threads (``limit_test_hook``).
_TEST_HOOK = r"""
int pbd_limit_test_hook(int stall);
((int*)helped.data)[0] = pbd_limit_test_hook(stall_us);
"""
# The strain limit's sliding contacts: the corner moves kept through memory, and a corner
# touching a collider keeps none of its move along -n: dx <- dx - min(0, dx . n) n, then
# y = x + dx (the kernels' ``slide``; q still holds x).
_KEEP_MOVES = r"""
  alignas(32) float M[K][3][L];
  #pragma clang loop unroll(full)
  for (int c = 0; c < K; ++c)
    #pragma clang loop unroll(full)
    for (int d = 0; d < 3; ++d) __builtin_memcpy(M[c][d], &D[c][d], sizeof(D[c][d]));
"""
_SLIDE = r"""
      if (CT_[I[c][l] / 3] != 0) {
        const float* nn = CNF_ + I[c][l];
        float mx = M[c][0][l], my = M[c][1][l], mz = M[c][2][l];
        float dn = mx * nn[0] + my * nn[1] + mz * nn[2];
        float inward = dn < 0.0f ? dn : 0.0f;
        Y[c][0][l] = q[0] + (mx - nn[0] * inward);
        Y[c][1][l] = q[1] + (my - nn[1] * inward);
        Y[c][2][l] = q[2] + (mz - nn[2] * inward);
      }
"""


# A coarse level's sweeps (the hierarchy): the limit's arithmetic with trigger = target = the
# slack (k = alpha), swept again while some lane was more than the tolerance (gamma) d0 past
# the slack, at most ``fresh`` sweeps, one while the pass holds some particle.
_LEVEL_HEAD = r"""
const int most = ((const int*)held.data)[0] != 0 ? 1 : fresh;
for (int sweep = 0; sweep < most; ++sweep) {
int far = 0;
"""
_LEVEL_TAIL = r"""
if (far == 0) break;
}  // sweeps
"""
_FAR_FLAG = r"""
      mask_t beyond = used & ((len - k * rest_len) > gamma * rest_len);
      alignas(32) int FB[L];
      __builtin_memcpy(FB, &beyond, sizeof(beyond));
      for (int l = 0; l < L; ++l) far |= FB[l];
"""


def _snippet(body: str, corners: int, xpbd: bool, limit: bool = False,
             level: bool = False) -> str:
    """The C++ of one lane-group function: gather, ``body``, scatter, over groups first ..
    last - 1; ``limit``: inside the strain limit's sweeps; ``level``: inside a coarse level's
    sweeps (the limit's arithmetic, no sliding, no skipping)."""
    text = _GATHER + body + _SCATTER
    if limit:
        text = _SWEEPS_HEAD + text + _SWEEPS_TAIL.replace("__PTHREAD__", _PTHREAD)
    if level:
        text = _LEVEL_HEAD + text + _LEVEL_TAIL
    return (text
            .replace("__SKIP__", _SKIP_UNMOVED if limit else "")
            .replace("__STAMP__", _MARK_GROUPS if limit else "")
            .replace("__KEEP_MOVES__", _KEEP_MOVES if limit else "")
            .replace("__SLIDE__", _SLIDE if limit else "")
            .replace("__COUNT__", "++shortened;" if limit else "")
            .replace("__FAR__", _FAR_FLAG if level else "")
            .replace("__LANES__", str(LANES))
            .replace("__CORNERS__", str(corners))
            .replace("__XPBD__", "true" if xpbd else "false")
            .replace("__LIMIT__", "true" if limit or level else "false")
            .replace("__DEGENERATE__", f"{DEGENERATE_NORMAL_SQ!r}f")
            .replace("__MIN_LENGTH__", f"{MIN_LENGTH!r}f"))


def _group_funcs() -> SimpleNamespace:
    """The native lane-group functions ``distance_pbd_groups``, ``distance_xpbd_groups``,
    ``distance_limit_groups``, ``distance_level_groups``,
    ``bend_pbd_groups``, ``bend_xpbd_groups`` (one C++ snippet each, see :func:`_snippet`)."""
    vec3, f32, i32 = wp.vec3, wp.float32, wp.int32
    funcs = {}
    for name, body, corners, mode in (("distance", _DISTANCE, 2, "pbd"),
                                      ("distance", _DISTANCE, 2, "xpbd"),
                                      ("distance", _DISTANCE, 2, "limit"),
                                      ("distance", _DISTANCE, 2, "level"),
                                      ("bend", _BEND, 4, "pbd"), ("bend", _BEND, 4, "xpbd")):
        if mode == "level":
            def groups(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                       rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                       scale: wp.array(dtype=f32), first: int,
                       last: int, fresh: int, k: float, alpha: float, gamma: float,
                       held: wp.array(dtype=i32)):
                ...
        elif mode == "limit":
            def groups(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                       rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                       scale: wp.array(dtype=f32), first: int,
                       last: int, fresh: int, k: float, alpha: float, gamma: float,
                       contact: wp.array(dtype=i32), contact_normal: wp.array(dtype=vec3),
                       mark: wp.array(dtype=i32), touch_offsets: wp.array(dtype=i32),
                       touch_groups: wp.array(dtype=i32), color_starts: wp.array(dtype=i32),
                       threads: int):
                ...
        else:
            def groups(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                       rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                       scale: wp.array(dtype=f32), first: int,
                       last: int, fresh: int, k: float, alpha: float, gamma: float):
                ...

        # Warp names a function by its qualified name: one name per snippet.
        key = f"{name}_{mode}_groups"
        groups.__name__ = groups.__qualname__ = key
        funcs[key] = wp.func_native(
            _snippet(body, corners, mode == "xpbd", mode == "limit", mode == "level"))(groups)
    return SimpleNamespace(**funcs)


def _particle_loops() -> SimpleNamespace:
    """The native one-thread loops ``predict_all`` and ``update_all`` (:data:`_PREDICT`,
    :data:`_UPDATE`)."""
    vec3, f32, i32 = wp.vec3, wp.float32, wp.int32

    @wp.func_native(_PREDICT)
    def predict_all(x: wp.array(dtype=vec3), v: wp.array(dtype=vec3),
                    inv_mass: wp.array(dtype=f32), gravity: vec3, h: float, decay: float,
                    p: wp.array(dtype=vec3), v_pred: wp.array(dtype=vec3),
                    contact: wp.array(dtype=i32), n: int):
        ...

    @wp.func_native(_UPDATE)
    def update_all(p: wp.array(dtype=vec3), v_pred: wp.array(dtype=vec3), h: float,
                   use_restitution: int, contact: wp.array(dtype=i32),
                   contact_normal: wp.array(dtype=vec3), surface_velocity: wp.array(dtype=vec3),
                   restitution: float, rest_speed: float, x: wp.array(dtype=vec3),
                   v: wp.array(dtype=vec3), n: int):
        ...

    @wp.func_native(_HAND_DOWN)
    def hand_down_all(p: wp.array(dtype=vec3), start: wp.array(dtype=vec3),
                      fine: wp.array(dtype=i32), parent0: wp.array(dtype=i32),
                      parent1: wp.array(dtype=i32), weight0: wp.array(dtype=f32),
                      weight1: wp.array(dtype=f32)):
        ...

    @wp.func_native(_COPY)
    def copy_all(src: wp.array(dtype=vec3), dst: wp.array(dtype=vec3)):
        ...

    return SimpleNamespace(predict_all=predict_all, update_all=update_all,
                           hand_down_all=hand_down_all, copy_all=copy_all)


@functools.cache
def build_lane_kernels() -> SimpleNamespace:
    """The float32 lane-group kernels (CPU only): ``distance_pbd_lanes``,
    ``distance_xpbd_lanes``, ``distance_limit_lanes`` (the strain limit: the most sweeps, 1 +
    the limit and the target length factor instead of ``fresh`` and k), ``bend_pbd_lanes``
    and ``bend_xpbd_lanes``; ``unilateral_lanes``, a coarse level's sweeps, and
    ``hand_down_loop`` and ``copy_loop`` (the arguments of :mod:`.kernels`' ``hand_down`` and
    ``copy_positions``), the hierarchy's other loops (each its own arguments).

    Each is launched with dim 1 and takes (p, x_prev, idx, w, rest, lam, scale) of a
    :class:`LaneGroups`, the range of groups ``first .. last - 1`` it projects one after the
    other (colors are contiguous runs of groups, so one launch can cover a whole family in color
    order), ``fresh`` (1: read the multipliers as 0, the first iteration of a substep) and the
    stiffness k (PBD) or alpha~, gamma (XPBD). Also ``predict_loop`` and ``update_loop`` (dim 1,
    the arguments of :mod:`.kernels`' ``predict`` without the wind's, and of ``update``), and
    ``limit_test_hook``, which holds up the strain limit's calling thread for tests.
    """
    wp.set_module_options({"enable_backward": False}, module=_MODULE)
    vec3, f32, i32 = wp.vec3, wp.float32, wp.int32
    g = _group_funcs()
    distance_pbd_groups, distance_xpbd_groups = g.distance_pbd_groups, g.distance_xpbd_groups
    distance_limit_groups = g.distance_limit_groups
    distance_level_groups = g.distance_level_groups
    bend_pbd_groups, bend_xpbd_groups = g.bend_pbd_groups, g.bend_xpbd_groups
    loops = _particle_loops()
    predict_all, update_all = loops.predict_all, loops.update_all
    hand_down_all, copy_all = loops.hand_down_all, loops.copy_all

    @wp.kernel(module=_MODULE)
    def distance_pbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                           idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                           rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                           scale: wp.array(dtype=f32), first: int, last: int, fresh: int, k: float):
        """PBD distances of lane groups first .. last - 1.

        Mirrors pbdcloth.constraints.distance.project_distance_pbd.
        """
        distance_pbd_groups(p, x_prev, idx, w, rest, lam, scale, first, last, fresh, k, 0.0,
                            0.0)

    @wp.kernel(module=_MODULE)
    def distance_limit_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                             idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                             rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                             scale: wp.array(dtype=f32), first: int, last: int, passes: int,
                             trigger: float, target: float, contact: wp.array(dtype=i32),
                             contact_normal: wp.array(dtype=vec3), mark: wp.array(dtype=i32),
                             touch_offsets: wp.array(dtype=i32),
                             touch_groups: wp.array(dtype=i32),
                             color_starts: wp.array(dtype=i32), threads: int):
        """The strain limit over lane groups first .. last - 1: sweeps shortening each edge
        past ``trigger`` d0 (1 + limit) to ``target`` d0 until a sweep shortens none, at most
        ``passes`` sweeps; the ends touching a collider (``contact``) keep none of their moves
        along -n (``contact_normal``). ``mark`` (T G + 1,) is scratch: for each of up to T
        threads, the last sweep that moved a corner of each group (``touch_offsets``,
        ``touch_groups``: each particle's groups, from :meth:`LaneGroups.particle_groups`),
        then the lanes the last launch's first sweep stored; a sweep after the first skips the
        groups no sweep changed since their last visit, as numpy skips such edges (the same
        results: they would store nothing). ``color_starts`` (C + 1,): each color's first
        group, then G (:attr:`LaneGroups.color_starts`); each sweep's colors run in turn, a
        color's groups in blocks on ``threads`` POSIX threads (at most T; the same results on
        any number, as the lanes of one color share no particle). One thread runs a sweep
        after one that stored fewer than 256 lanes, and a whole launch after one whose first
        sweep did, or after a thread was held up for ~0.1 ms (for the next 32 launches).

        Mirrors pbdcloth.constraints.strain_limit.project_strain_limit with ``sliding``.
        """
        distance_limit_groups(p, x_prev, idx, w, rest, lam, scale, first, last, passes, trigger,
                              target, 0.0, contact, contact_normal, mark, touch_offsets,
                              touch_groups, color_starts, threads)

    @wp.kernel(module=_MODULE)
    def unilateral_lanes(p: wp.array(dtype=vec3), idx: wp.array(dtype=i32),
                         frac: wp.array(dtype=f32), rest: wp.array(dtype=f32), first: int,
                         last: int, sweeps: int, slack: float, tolerance: float,
                         held: wp.array(dtype=i32)):
        """A coarse level's sweeps over its lane groups first .. last - 1: each constraint
        longer than ``slack`` d0 shortened to it, swept again while some constraint was more
        than ``tolerance`` d0 past the slack when its turn came, at most ``sweeps`` times (once
        while ``held[0]`` = 1). The same operations in the same order as :mod:`.kernels`'
        ``unilateral_sweeps``: bit-identical.

        Mirrors pbdcloth.constraints.hierarchy.project_hierarchy (one level's sweeps).
        """
        # x_prev, lam and scale are not read without XPBD: p and rest stand in for them
        distance_level_groups(p, p, idx, frac, rest, rest, rest, first, last, sweeps, slack,
                              slack, tolerance, held)

    @wp.kernel(module=_MODULE)
    def distance_xpbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                            idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                            rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                            scale: wp.array(dtype=f32), first: int, last: int, fresh: int,
                            alpha: float, gamma: float):
        """XPBD distances of lane groups first .. last - 1.

        Mirrors pbdcloth.constraints.distance.project_distance_xpbd.
        """
        distance_xpbd_groups(p, x_prev, idx, w, rest, lam, scale, first, last, fresh, 0.0, alpha,
                             gamma)

    @wp.kernel(module=_MODULE)
    def bend_pbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                       rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                       scale: wp.array(dtype=f32), first: int, last: int, fresh: int, k: float):
        """PBD bend of lane groups first .. last - 1.

        Mirrors pbdcloth.constraints.bend.project_bend_pbd.
        """
        bend_pbd_groups(p, x_prev, idx, w, rest, lam, scale, first, last, fresh, k, 0.0, 0.0)

    @wp.kernel(module=_MODULE)
    def bend_xpbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                        idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                        rest: wp.array(dtype=f32), lam: wp.array(dtype=f32),
                        scale: wp.array(dtype=f32), first: int, last: int, fresh: int,
                            alpha: float, gamma: float):
        """XPBD bend of lane groups first .. last - 1.

        Mirrors pbdcloth.constraints.bend.project_bend_xpbd.
        """
        bend_xpbd_groups(p, x_prev, idx, w, rest, lam, scale, first, last, fresh, 0.0, alpha,
                         gamma)

    @wp.kernel(module=_MODULE)
    def predict_loop(x: wp.array(dtype=vec3), v: wp.array(dtype=vec3),
                     inv_mass: wp.array(dtype=f32), gravity: vec3, h: float, decay: float,
                     p: wp.array(dtype=vec3), v_pred: wp.array(dtype=vec3),
                     contact: wp.array(dtype=i32)):
        """:mod:`.kernels`' ``predict`` without wind, all particles in one thread."""
        predict_all(x, v, inv_mass, gravity, h, decay, p, v_pred, contact, x.shape[0])

    @wp.kernel(module=_MODULE)
    def update_loop(p: wp.array(dtype=vec3), v_pred: wp.array(dtype=vec3), h: float,
                    use_restitution: int, contact: wp.array(dtype=i32),
                    contact_normal: wp.array(dtype=vec3), surface_velocity: wp.array(dtype=vec3),
                    restitution: float, rest_speed: float, x: wp.array(dtype=vec3),
                    v: wp.array(dtype=vec3)):
        """:mod:`.kernels`' ``update``, all particles in one thread (restitution: mirrors
        pbdcloth.colliders.response.apply_restitution)."""
        update_all(p, v_pred, h, use_restitution, contact, contact_normal, surface_velocity,
                   restitution, rest_speed, x, v, x.shape[0])

    @wp.kernel(module=_MODULE)
    def hand_down_loop(p: wp.array(dtype=vec3), start: wp.array(dtype=vec3),
                       fine: wp.array(dtype=i32), parent0: wp.array(dtype=i32),
                       parent1: wp.array(dtype=i32), weight0: wp.array(dtype=f32),
                       weight1: wp.array(dtype=f32)):
        """:mod:`.kernels`' ``hand_down``, a level's fine particles in one thread.

        Mirrors pbdcloth.constraints.hierarchy.project_hierarchy (its hand-down).
        """
        hand_down_all(p, start, fine, parent0, parent1, weight0, weight1)

    @wp.func_native(_TEST_HOOK)
    def test_hook(stall_us: int, helped: wp.array(dtype=i32)):
        ...

    @wp.kernel(module=_MODULE)
    def limit_test_hook(stall_us: int, helped: wp.array(dtype=i32)):
        """For tests of ``distance_limit_lanes`` on several threads: from now on the calling
        thread sleeps ``stall_us`` microseconds (0: none) before each block of a shared sweep,
        so the other threads reach the blocks that must wait for its blocks first; helped[0]
        = the blocks the other threads ran since the last call (then counted from 0). Also
        ends the one-thread launches after a slow run."""
        test_hook(stall_us, helped)

    @wp.kernel(module=_MODULE)
    def copy_loop(src: wp.array(dtype=vec3), dst: wp.array(dtype=vec3)):
        """dst = src in one thread (:mod:`.kernels`' ``copy_positions``)."""
        copy_all(src, dst)

    return SimpleNamespace(module=_MODULE, distance_pbd_lanes=distance_pbd_lanes,
                           hand_down_loop=hand_down_loop, copy_loop=copy_loop,
                           distance_xpbd_lanes=distance_xpbd_lanes,
                           distance_limit_lanes=distance_limit_lanes,
                           unilateral_lanes=unilateral_lanes,
                           bend_pbd_lanes=bend_pbd_lanes, bend_xpbd_lanes=bend_xpbd_lanes,
                           predict_loop=predict_loop, update_loop=update_loop,
                           limit_test_hook=limit_test_hook)


class LaneGroups:
    """A colored constraint family regrouped into lane groups of :data:`LANES`, color by color.

    Args:
        particles: (M, K) int, the K particles of each constraint, in colored order.
        offsets: (C + 1,) color boundaries.
        device: the Warp device.
        **fields: per-constraint float arrays, (M,) or (M, K) (one value per corner).

    Attributes (G lane groups):
        idx: (G * K * LANES,) int32, group-major [g][corner][lane]; -1 on padding lanes.
        one float32 array per field: (G * K * LANES,) [g][corner][lane] or (G * LANES,)
            [g][lane]; 0 on padding lanes.
        lam: (G * LANES,) float32 XPBD multipliers.
        spans: (first group, group count) of each non-empty color; groups: G.
        color_starts: (C + 1,) int32, each non-empty color's first group, then G.
        slot: (G * LANES,) int64, the constraint (colored order) in each lane, -1 on padding.
    """

    def __init__(self, particles: np.ndarray, offsets: np.ndarray, device, **fields) -> None:
        particles = np.asarray(particles)
        m = particles.shape[0]
        slots, self.spans = [], []
        groups = 0
        for a, b in itertools.pairwise(offsets):
            a, b = int(a), int(b)
            if b <= a:
                continue
            cnt = -(-(b - a) // LANES)
            slot = np.full(cnt * LANES, -1, dtype=np.int64)
            slot[: b - a] = np.arange(a, b)
            slots.append(slot)
            self.spans.append((groups, cnt))
            groups += cnt
        self.groups = groups
        slot = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
        self.slot = slot
        pad = slot < 0
        src = np.where(pad, 0, slot)

        def lanes(values: np.ndarray, fill, dtype) -> np.ndarray:
            values = np.asarray(values)
            per = 1 if values.ndim == 1 else values.shape[1]
            v = values.reshape(m, per)[src] if m else np.zeros((slot.size, per))
            v[pad] = fill
            return np.ascontiguousarray(
                v.reshape(groups, LANES, per).transpose(0, 2, 1).reshape(-1), dtype=dtype)

        self.idx = wp.array(lanes(particles, -1, np.int32), dtype=wp.int32, device=device)
        self.fields = {name: wp.array(lanes(values, 0.0, np.float32), dtype=wp.float32,
                                      device=device) for name, values in fields.items()}
        self.lam = wp.zeros(groups * LANES, dtype=wp.float32, device=device)
        self.color_starts = wp.array(np.array([a for a, _ in self.spans] + [groups],
                                              dtype=np.int32), dtype=wp.int32, device=device)

    def particle_groups(self, particle_count: int) -> tuple:
        """(offsets (N + 1,), groups): the lane groups each of the ``particle_count``
        particles is a corner of, ascending (CSR, int32 device arrays)."""
        idx, device = self.idx.numpy(), self.idx.device
        group = np.arange(idx.size) // max(idx.size // max(self.groups, 1), 1)
        used = idx >= 0
        pairs = np.unique(np.stack([idx[used].astype(np.int64), group[used]], axis=1), axis=0)
        offsets = np.zeros(particle_count + 1, dtype=np.int32)
        np.cumsum(np.bincount(pairs[:, 0], minlength=particle_count), out=offsets[1:])
        return (wp.array(offsets, dtype=wp.int32, device=device),
                wp.array(pairs[:, 1].astype(np.int32), dtype=wp.int32, device=device))

    def __getattr__(self, name: str):
        """A field's lane array by its keyword name (``group.rest``)."""
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")


class LaneFamilies(NamedTuple):
    """A model's three constraint families in lane groups. Distances carry ``frac``
    (w_i/(w_i+w_j), w_j/(w_i+w_j), for PBD), ``w`` (w_i, w_j [1/kg], XPBD) and ``rest`` [m];
    the bend carries ``w`` (inverse masses of p1..p4 [1/kg]) and ``rest`` (angle [rad]); each
    carries ``scale``, the constraints' stiffness scales (1 without point attributes)."""

    stretch: LaneGroups
    shear: LaneGroups
    bend: LaneGroups


def level_lanes(level, device) -> LaneGroups:
    """A coarse level of the hierarchy (a distance family of its own: ``i``, ``j``,
    ``wi_frac``, ``wj_frac``, ``rest``, ``offsets``) in lane groups carrying ``frac`` and
    ``rest``, for ``unilateral_lanes``."""
    return LaneGroups(np.stack([level.i, level.j], axis=1), level.offsets, device,
                      frac=np.stack([level.wi_frac, level.wj_frac], axis=1), rest=level.rest)


def lane_families(model, device) -> LaneFamilies:
    """The model's stretch, shear and bend families regrouped into lane groups on ``device``."""

    def scale(fam) -> np.ndarray:
        return np.ones(fam.count) if fam.scale is None else fam.scale

    def distance(fam) -> LaneGroups:
        return LaneGroups(np.stack([fam.i, fam.j], axis=1), fam.offsets, device,
                          frac=np.stack([fam.wi_frac, fam.wj_frac], axis=1),
                          w=np.stack([fam.wi, fam.wj], axis=1), rest=fam.rest, scale=scale(fam))

    b = model.bend
    return LaneFamilies(distance(model.stretch), distance(model.shear),
                        LaneGroups(b.quads, b.offsets, device, w=b.w, rest=b.rest_angle,
                                   scale=scale(b)))
