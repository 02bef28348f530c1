"""CPU-only constraint kernels that project eight constraints at a time (float32, Warp's CPU device).

Why: on the CPU Warp runs a kernel's threads one after another, and each thread of
:func:`~pbdcloth.backends.warp_kernels.build_kernels`' per-constraint kernels is one scalar
dependency chain that the processor cannot overlap with the next constraint's: a hinge of
``bend_pbd`` is ~150 floating-point operations (cross products, a square root, an arctangent,
five divisions), ~50-70 ns; a distance constraint of ``distance_pbd`` ~15-20 ns, most of it the
per-thread overhead of Warp's generated code (argument and record copies, one call per thread).
Here one thread takes a *lane group* of 8 constraints of one color, gathers their corners into
local arrays, runs the constraint math as one loop over the 8 lanes without branches or library
calls (so Warp's clang vectorizes it to 8-wide AVX), then scatters the moved corners.

Same formulas as the per-constraint kernels:

* distances: ``distance_pbd`` / ``distance_xpbd`` (constraints/distance.py: Müller et al. 2006,
  eq. 10-11; XPBD after Macklin, Müller and Chentanez 2016, eq. 18 and 26), the same operations
  in the same order (the lanes and the per-constraint kernels agree to float32 rounding; they
  may differ where the compiler fuses a multiply-add in one and not the other);
* bending: ``hinge_angle`` / ``bend_pbd`` / ``bend_xpbd`` (constraints/bend.py: Bridson, Marino
  and Fedkiw 2003 gradient; Müller et al. 2006 eq. 8), with two rounding-level differences:

  - atan is Cephes' ``atanf`` polynomial (S. L. Moshier: |x| reduced by tan(pi/8) and
    tan(3pi/8), degree-4 polynomial in x^2; peak relative error 1.9e-7, i.e. 1-2 float32 units)
    instead of a libm call, which would stop the vectorization;
  - C = theta - rest is wrapped into (-pi, pi] by adding or subtracting 2 pi (theta and rest
    both lie in [-pi, pi], so one turn is enough) instead of the scalar kernel's fmod.

XPBD multipliers: the first iteration of a substep reads them as 0 (``fresh``) instead of a
separate launch that zeroes them.

A group never straddles two colors (each color is padded to a multiple of 8 lanes, see
:class:`LaneGroups`); padding lanes carry the particle index -1 and are never stored. The lanes
of one group share no particle, so the order of the scatter does not matter and results are
deterministic. Measured on a 2-core AMD EPYC at 100 x 100 particles: bending 4x faster than the
per-hinge kernels, distances about 3x faster than the per-constraint kernels.

The kernel bodies are native C++ snippets (``wp.func_native``): Warp's own code generator keeps
every lane value in memory and does not vectorize. This module is CPU-only; CUDA (and float64)
run the per-constraint kernels, one constraint per GPU thread.
"""

# mypy: ignore-errors
# (kernel annotations are Warp's typed language)
import functools
import itertools
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import warp as wp

from ..constraints.bend import DEGENERATE_NORMAL_SQ
from ..constraints.distance import MIN_LENGTH

#: Constraints per lane group (8 float32 lanes = one AVX register).
LANES = 8

_MODULE = "pbdcloth_warp_cpu_lanes"

# Gather, shared by both families: K corners per constraint. XPBD and K are compile-time
# constants of the template; DAMP (XPBD constraint damping) is uniform over the launch.
_GATHER = r"""
const int L = __LANES__, K = __CORNERS__;
const bool XPBD = __XPBD__;
const bool DAMP = XPBD && gamma != 0.0f;
wp::vec3* P = (wp::vec3*)p.data;
const wp::vec3* XP = (const wp::vec3*)x_prev.data;
for (int g = first; g < last; ++g) {
const int* Q = (const int*)idx.data + g * K * L;      // [K][L] particle indices, -1 = padding
const float* W = (const float*)w.data + g * K * L;     // [K][L] per-corner weights
const float* R = (const float*)rest.data + g * L;      // [L] rest values
float* LAM = (float*)lam.data + g * L;                 // [L] XPBD multipliers
float X[K][3][L];   // corners
float V[K][3][L];   // x - x_prev (XPBD damping only)
float D[K][3][L];   // corner moves
float LNEW[L];
int ok[L];
for (int c = 0; c < K; ++c) {
  for (int l = 0; l < L; ++l) {
    int i = Q[c * L + l] < 0 ? 0 : Q[c * L + l];
    wp::vec3 v = P[i];
    X[c][0][l] = v[0]; X[c][1][l] = v[1]; X[c][2][l] = v[2];
    if (DAMP) {
      wp::vec3 u = XP[i];
      V[c][0][l] = v[0] - u[0]; V[c][1][l] = v[1] - u[1]; V[c][2][l] = v[2] - u[2];
    }
  }
}
"""

# Scatter, shared: valid lanes store their multiplier and moved corners.
_SCATTER = r"""
for (int l = 0; l < L; ++l) {
  if (!ok[l]) continue;
  if (XPBD) LAM[l] = LNEW[l];
  for (int c = 0; c < K; ++c)
    P[Q[c * L + l]] = wp::vec3(X[c][0][l] + D[c][0][l], X[c][1][l] + D[c][1][l],
                               X[c][2][l] + D[c][2][l]);
}
}  // groups
"""

# Distance: W = (w_i/(w_i+w_j), w_j/(w_i+w_j)) for PBD, (w_i, w_j) [1/kg] for XPBD; R = rest
# length [m]. PBD: s = k' (|d| - d0) / |d|, x_i -= W_i s d, x_j += W_j s d. XPBD: n = d/|d|,
# dlambda = (d0 - |d| - alpha~ lambda - gamma n.(dx_i - dx_j)) / ((1 + gamma)(w_i + w_j) + alpha~),
# x_i += w_i dlambda n, x_j -= w_j dlambda n. (x_i - d) == x_i + (-d) exactly.
_DISTANCE = r"""
for (int l = 0; l < L; ++l) {
  float dx = X[0][0][l] - X[1][0][l], dy = X[0][1][l] - X[1][1][l], dz = X[0][2][l] - X[1][2][l];
  float len = __builtin_sqrtf(dx * dx + dy * dy + dz * dz);
  float safe = len > __MIN_LENGTH__ ? len : __MIN_LENGTH__;
  float w0 = W[l], w1 = W[L + l];
  if (XPBD) {
    float nx = dx / safe, ny = dy / safe, nz = dz / safe;
    float lam_c = fresh ? 0.0f : LAM[l];
    float numer = R[l] - len - alpha * lam_c;
    if (DAMP) {
      numer = numer - gamma * (nx * (V[0][0][l] - V[1][0][l]) + ny * (V[0][1][l] - V[1][1][l])
                               + nz * (V[0][2][l] - V[1][2][l]));
    }
    float denom = (1.0f + gamma) * (w0 + w1) + alpha;
    float dl = numer * (1.0f / (denom > 0.0f ? denom : 1.0f));
    dl = denom > 0.0f ? dl : 0.0f;   // both ends pinned and rigid: nothing moves
    LNEW[l] = lam_c + dl;
    nx = nx * dl; ny = ny * dl; nz = nz * dl;
    D[0][0][l] = nx * w0; D[0][1][l] = ny * w0; D[0][2][l] = nz * w0;
    D[1][0][l] = -(nx * w1); D[1][1][l] = -(ny * w1); D[1][2][l] = -(nz * w1);
  } else {
    float s = (len - R[l]) / safe * k;
    dx = dx * s; dy = dy * s; dz = dz * s;
    D[0][0][l] = -(dx * w0); D[0][1][l] = -(dy * w0); D[0][2][l] = -(dz * w0);
    D[1][0][l] = dx * w1; D[1][1][l] = dy * w1; D[1][2][l] = dz * w1;
  }
  ok[l] = Q[l] >= 0;
}
"""

# Bend: W = inverse masses [1/kg] of (p1, p2, p3, p4); R = rest angle [rad].
_BEND = r"""
const float pi = 3.141592653589793f, two_pi = 6.283185307179586f;
for (int l = 0; l < L; ++l) {
  // e = x2 - x1, a = x3 - x1, b = x4 - x1, n1 = e x a, n2 = b x e
  float ex = X[1][0][l] - X[0][0][l], ey = X[1][1][l] - X[0][1][l], ez = X[1][2][l] - X[0][2][l];
  float ax = X[2][0][l] - X[0][0][l], ay = X[2][1][l] - X[0][1][l], az = X[2][2][l] - X[0][2][l];
  float bx = X[3][0][l] - X[0][0][l], by = X[3][1][l] - X[0][1][l], bz = X[3][2][l] - X[0][2][l];
  float n1x = ey * az - ez * ay, n1y = ez * ax - ex * az, n1z = ex * ay - ey * ax;
  float n2x = by * ez - bz * ey, n2y = bz * ex - bx * ez, n2z = bx * ey - by * ex;
  float n1sq = n1x * n1x + n1y * n1y + n1z * n1z;
  float n2sq = n2x * n2x + n2y * n2y + n2z * n2z;
  float elen2 = ex * ex + ey * ey + ez * ez;
  bool valid = (n1sq < n2sq ? n1sq : n2sq) > __DEGENERATE__ && elen2 > 0.0f
               && Q[l] >= 0;
  float elen = __builtin_sqrtf(elen2);
  float s = -((n1x * bx + n1y * by + n1z * bz) * elen);
  float c = n1x * n2x + n1y * n2y + n1z * n2z;
  // theta = 2 atan(s / r), r = sqrt(s^2 + c^2) + c; r = 0: +-pi by the sign of s (0 for s = 0)
  float r = __builtin_sqrtf(s * s + c * c) + c;
  float t = s / (r != 0.0f ? r : 1.0f);
  float x = __builtin_fabsf(t);
  bool top = x > 2.414213562373095f, mid = x > 0.41421356237309503f;
  float xr = top ? -1.0f / (x > 0.0f ? x : 1.0f) : (mid ? (x - 1.0f) / (x + 1.0f) : x);
  float y0 = top ? 1.5707963267948966f : (mid ? 0.7853981633974483f : 0.0f);
  float z = xr * xr;
  float at = y0 + ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z
                    - 3.33329491539e-1f) * z * xr + xr);
  at = t < 0.0f ? -at : at;
  float theta = r != 0.0f ? 2.0f * at : (s > 0.0f ? pi : (s < 0.0f ? -pi : 0.0f));
  // gradient: dtheta/dx3 = -|e| n1/|n1|^2, dtheta/dx4 = -|e| n2/|n2|^2, ...
  float i1 = 1.0f / n1sq, i2 = 1.0f / n2sq, ie = 1.0f / elen;
  float m1x = n1x * i1, m1y = n1y * i1, m1z = n1z * i1;
  float m2x = n2x * i2, m2y = n2y * i2, m2z = n2z * i2;
  float ae = (ax * ex + ay * ey + az * ez) * ie, be = (bx * ex + by * ey + bz * ez) * ie;
  float g3x = m1x * -elen, g3y = m1y * -elen, g3z = m1z * -elen;
  float g4x = m2x * -elen, g4y = m2y * -elen, g4z = m2z * -elen;
  float g2x = m1x * ae + m2x * be, g2y = m1y * ae + m2y * be, g2z = m1z * ae + m2z * be;
  float g1x = -((g2x + g3x) + g4x), g1y = -((g2y + g3y) + g4y), g1z = -((g2z + g3z) + g4z);
  float w0 = W[l], w1 = W[L + l], w2 = W[2 * L + l], w3 = W[3 * L + l];
  float wg = (w0 * (g1x * g1x + g1y * g1y + g1z * g1z) + w1 * (g2x * g2x + g2y * g2y + g2z * g2z))
           + (w2 * (g3x * g3x + g3y * g3y + g3z * g3z) + w3 * (g4x * g4x + g4y * g4y + g4z * g4z));
  float C = theta - R[l];
  C = C > pi ? C - two_pi : (C < -pi ? C + two_pi : C);
  float step;
  if (XPBD) {
    float lam_c = fresh ? 0.0f : LAM[l];
    float numer = -C - alpha * lam_c;
    if (DAMP) {
      float gdx = ((g1x * V[0][0][l] + g1y * V[0][1][l] + g1z * V[0][2][l])
                 + (g2x * V[1][0][l] + g2y * V[1][1][l] + g2z * V[1][2][l]))
                + ((g3x * V[2][0][l] + g3y * V[2][1][l] + g3z * V[2][2][l])
                 + (g4x * V[3][0][l] + g4y * V[3][1][l] + g4z * V[3][2][l]));
      numer = numer - gamma * gdx;
    }
    float denom = (1.0f + gamma) * wg + alpha;
    valid = valid && denom > 0.0f;
    float dl = numer / (denom > 0.0f ? denom : 1.0f);
    step = valid ? dl : 0.0f;
    LNEW[l] = lam_c + step;
  } else {
    valid = valid && wg > 0.0f;
    float q = -k * (C / (wg > 0.0f ? wg : 1.0f));
    step = valid ? q : 0.0f;
  }
  D[0][0][l] = (g1x * w0) * step; D[0][1][l] = (g1y * w0) * step; D[0][2][l] = (g1z * w0) * step;
  D[1][0][l] = (g2x * w1) * step; D[1][1][l] = (g2y * w1) * step; D[1][2][l] = (g2z * w1) * step;
  D[2][0][l] = (g3x * w2) * step; D[2][1][l] = (g3y * w2) * step; D[2][2][l] = (g3z * w2) * step;
  D[3][0][l] = (g4x * w3) * step; D[3][1][l] = (g4y * w3) * step; D[3][2][l] = (g4z * w3) * step;
  ok[l] = valid;
}
"""


def _snippet(body: str, corners: int, xpbd: bool) -> str:
    return ((_GATHER + body + _SCATTER)
            .replace("__LANES__", str(LANES))
            .replace("__CORNERS__", str(corners))
            .replace("__XPBD__", "true" if xpbd else "false")
            .replace("__DEGENERATE__", f"{DEGENERATE_NORMAL_SQ!r}f")
            .replace("__MIN_LENGTH__", f"{MIN_LENGTH!r}f"))


@functools.cache
def build_lane_kernels() -> SimpleNamespace:
    """The float32 lane-group kernels (CPU only): ``distance_pbd_lanes``,
    ``distance_xpbd_lanes``, ``bend_pbd_lanes`` and ``bend_xpbd_lanes``.

    Each is launched with dim 1 and takes (p, x_prev, idx, w, rest, lam) of a
    :class:`LaneGroups`, the range of groups ``first .. last - 1`` it projects one after the
    other (colors are contiguous runs of groups, so one launch can cover a whole family in color
    order), ``fresh`` (1: read the multipliers as 0, the first iteration of a substep) and the
    stiffness k (PBD) or alpha~, gamma (XPBD).
    """
    wp.set_module_options({"enable_backward": False}, module=_MODULE)
    vec3, f32, i32 = wp.vec3, wp.float32, wp.int32
    funcs = {}
    for name, body, corners in (("distance", _DISTANCE, 2), ("bend", _BEND, 4)):
        for xpbd in (False, True):
            def groups(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                       rest: wp.array(dtype=f32), lam: wp.array(dtype=f32), first: int,
                       last: int, fresh: int, k: float, alpha: float, gamma: float):
                ...

            # Warp names a function by its qualified name: one name per snippet.
            groups.__name__ = groups.__qualname__ = f"{name}_{'xpbd' if xpbd else 'pbd'}_groups"
            funcs[name, xpbd] = wp.func_native(_snippet(body, corners, xpbd))(groups)

    distance_pbd_groups = funcs["distance", False]
    distance_xpbd_groups = funcs["distance", True]
    bend_pbd_groups = funcs["bend", False]
    bend_xpbd_groups = funcs["bend", True]

    @wp.kernel(module=_MODULE)
    def distance_pbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                           idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                           rest: wp.array(dtype=f32), lam: wp.array(dtype=f32), first: int,
                           last: int, fresh: int, k: float):
        """PBD distances of lane groups first .. last - 1."""
        distance_pbd_groups(p, x_prev, idx, w, rest, lam, first, last, fresh, k, 0.0, 0.0)

    @wp.kernel(module=_MODULE)
    def distance_xpbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                            idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                            rest: wp.array(dtype=f32), lam: wp.array(dtype=f32), first: int,
                            last: int, fresh: int, alpha: float, gamma: float):
        """XPBD distances of lane groups first .. last - 1."""
        distance_xpbd_groups(p, x_prev, idx, w, rest, lam, first, last, fresh, 0.0, alpha,
                             gamma)

    @wp.kernel(module=_MODULE)
    def bend_pbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                       rest: wp.array(dtype=f32), lam: wp.array(dtype=f32), first: int,
                       last: int, fresh: int, k: float):
        """PBD bend of lane groups first .. last - 1."""
        bend_pbd_groups(p, x_prev, idx, w, rest, lam, first, last, fresh, k, 0.0, 0.0)

    @wp.kernel(module=_MODULE)
    def bend_xpbd_lanes(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                        idx: wp.array(dtype=i32), w: wp.array(dtype=f32),
                        rest: wp.array(dtype=f32), lam: wp.array(dtype=f32), first: int,
                        last: int, fresh: int, alpha: float, gamma: float):
        """XPBD bend of lane groups first .. last - 1."""
        bend_xpbd_groups(p, x_prev, idx, w, rest, lam, first, last, fresh, 0.0, alpha, gamma)

    return SimpleNamespace(module=_MODULE, distance_pbd_lanes=distance_pbd_lanes,
                           distance_xpbd_lanes=distance_xpbd_lanes,
                           bend_pbd_lanes=bend_pbd_lanes, bend_xpbd_lanes=bend_xpbd_lanes)


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

    def __getattr__(self, name: str):
        """A field's lane array by its keyword name (``group.rest``)."""
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")


class LaneFamilies(NamedTuple):
    """A model's three constraint families in lane groups. Distances carry ``frac``
    (w_i/(w_i+w_j), w_j/(w_i+w_j), for PBD), ``w`` (w_i, w_j [1/kg], XPBD) and ``rest`` [m];
    the bend carries ``w`` (inverse masses of p1..p4 [1/kg]) and ``rest`` (angle [rad])."""

    stretch: LaneGroups
    shear: LaneGroups
    bend: LaneGroups


def lane_families(model, device) -> LaneFamilies:
    """The model's stretch, shear and bend families regrouped into lane groups on ``device``."""

    def distance(fam) -> LaneGroups:
        return LaneGroups(np.stack([fam.i, fam.j], axis=1), fam.offsets, device,
                          frac=np.stack([fam.wi_frac, fam.wj_frac], axis=1),
                          w=np.stack([fam.wi, fam.wj], axis=1), rest=fam.rest)

    b = model.bend
    return LaneFamilies(distance(model.stretch), distance(model.shear),
                        LaneGroups(b.quads, b.offsets, device, w=b.w, rest=b.rest_angle))
