"""Arithmetic that rounds alike on every machine: small products without BLAS, an arctangent.

numpy hands ``@``, ``np.dot`` and the norm of a whole vector (``np.linalg.norm(v)``) to BLAS,
and OpenBLAS picks its kernels by the processor it runs on: with or without fused multiply-add
(FMA) and in a different order of summation (an AVX2 machine, an AVX-512 one and one without
FMA round a 3 x 3 product differently in the last bit). A simulation that feeds such a product
back into its state then gives different frames on different machines of one render farm. The
functions here are written as separate ufunc multiplies and adds, each an IEEE 754 operation
rounded once, in the order the docstrings give, so they round alike on every machine:

    dot(a, b) = (a_0 b_0 + a_1 b_1) + a_2 b_2 ...    (over the last axis)
    norm(v) = sqrt(dot(v, v))
    rotate(r, v) = r v  for column vectors, i.e. ``v @ r.T`` for rows v (..., 3)
    rotate_t(r, v) = r^T v, i.e. ``v @ r``
    matmul(a, b) = a b for square (..., n, n) matrices, each entry a dot

The cost is a few whole-array passes instead of one BLAS call: the same order of magnitude for
the (N, 3) arrays the solver uses.

numpy's own arctangent, exponential and logarithm have a second implementation for processors
with AVX-512 (SVML's), which rounds differently from the first in the last bit (``np.arctan``
in 1 % of small arguments, ``np.arctan2`` and ``np.exp`` in 29 %, measured with
``NPY_DISABLE_CPU_FEATURES``); ``np.sqrt`` is correctly rounded everywhere. :func:`atan`
and :func:`atan2` are written with the four operations and square roots alone:

    atan x = pi/2 - atan(1/x)  for |x| > 1,
    atan z = 2 atan(z / (1 + sqrt(1 + z^2)))  (the half-angle identity), three times:
        |z| <= tan(pi/32) < 0.099,
    atan z = z - z^3/3 + z^5/5 - ... - z^15/15 + z^17/17  (the first omitted term is below
        z^19/19 < 1e-20 |z|),

within 6 ulp of the correctly rounded value (measured against ``math.atan`` on 8 x 10^5
arguments of four scales; 0.3 % of small ones are more than 3 ulp off), about 5x numpy's
cost. Below 1e-8, atan x = x.
"""

from __future__ import annotations

import math

import numpy as np

from .arrays import F

__all__ = ["atan", "atan2", "dot", "matmul", "norm", "rotate", "rotate_columns", "rotate_t"]


def dot(a: object, b: object) -> F:
    """sum_k a_k b_k over the last axis (3-vectors, quaternions), added in index order:
    (a_0 b_0 + a_1 b_1) + a_2 b_2 ...; arrays broadcast; a 0-d array for two vectors."""
    p: F = np.asarray(a, dtype=np.float64)
    q: F = np.asarray(b, dtype=np.float64)
    acc: F = p[..., 0] * q[..., 0]
    for k in range(1, max(p.shape[-1], q.shape[-1])):
        acc = acc + p[..., k] * q[..., k]
    return np.asarray(acc)


def norm(v: object) -> float:
    """|v| of one vector: sqrt(dot(v, v)), as a float."""
    return math.sqrt(float(dot(v, v)))


def rotate(r: object, v: object) -> F:
    """r v for the 3 x 3 matrix ``r`` and vectors ``v`` (..., 3) as rows: ``v @ r.T``, summed
    as v_0 r[:, 0] + v_1 r[:, 1], then + v_2 r[:, 2]."""
    m: F = np.asarray(r, dtype=np.float64)
    x: F = np.asarray(v, dtype=np.float64)
    first = x[..., 0:1] * m[:, 0] + x[..., 1:2] * m[:, 1]
    return np.asarray(first + x[..., 2:3] * m[:, 2], dtype=np.float64)


def rotate_columns(r: object, v: object) -> F:
    """:func:`rotate` of rows ``v`` (M, 3) returned component-major, (3, M) C-contiguous: the
    same sums, for code that works on coordinate rows."""
    m: F = np.asarray(r, dtype=np.float64)
    x: F = np.asarray(v, dtype=np.float64)
    first = m[:, 0:1] * x[:, 0] + m[:, 1:2] * x[:, 1]
    return np.asarray(first + m[:, 2:3] * x[:, 2], dtype=np.float64)


def rotate_t(r: object, v: object) -> F:
    """r^T v for the 3 x 3 matrix ``r`` and vectors ``v`` (..., 3) as rows: ``v @ r``, summed
    as v_0 r[0] + v_1 r[1], then + v_2 r[2]."""
    m: F = np.asarray(r, dtype=np.float64)
    x: F = np.asarray(v, dtype=np.float64)
    return (x[..., 0:1] * m[0] + x[..., 1:2] * m[1]) + x[..., 2:3] * m[2]


def matmul(a: object, b: object) -> F:
    """a b for square matrices (3 x 3, 4 x 4; stacks (..., n, n) broadcast): entry (i, j) is
    (a_i0 b_0j + a_i1 b_1j) + a_i2 b_2j ..., added in index order."""
    p: F = np.asarray(a, dtype=np.float64)
    q: F = np.asarray(b, dtype=np.float64)
    acc: F = p[..., :, 0:1] * q[..., 0:1, :]
    for k in range(1, p.shape[-1]):
        acc = acc + p[..., :, k:k + 1] * q[..., k:k + 1, :]
    return acc


#: Taylor coefficients of atan z: (-1)^k / (2 k + 1), k = 0 .. 8.
_ATAN_SERIES = tuple((-1.0) ** k / (2 * k + 1) for k in range(9))


def atan(x: object) -> F:
    """arctan x [rad] elementwise, in (-pi/2, pi/2) (see the module docstring; atan(-0) = -0,
    atan(+-inf) = +-pi/2, NaN stays NaN)."""
    v: F = np.asarray(x, dtype=np.float64)
    ax = np.abs(v)
    big = ax > 1.0
    z = np.where(big, 1.0 / np.where(big, ax, 1.0), ax)
    for _ in range(3):
        z = z / (1.0 + np.sqrt(1.0 + z * z))
    zz = z * z
    acc = np.full_like(z, _ATAN_SERIES[-1])
    for c in _ATAN_SERIES[-2::-1]:
        acc = acc * zz + c
    r = 8.0 * (z * acc)
    r = np.where(big, 0.5 * math.pi - r, r)
    # below 1e-8, atan x = x to within x^2 / 3 < 4e-17 relative (and the halvings would lose
    # the bits of subnormal arguments)
    r = np.where(ax < 1e-8, ax, r)
    return np.asarray(np.copysign(r, v), dtype=np.float64)


def atan2(y: object, x: object) -> F:
    """arctan2(y, x) [rad] elementwise, in [-pi, pi], from :func:`atan`: atan(y / x) for x > 0,
    +-pi/2 - atan(x / y) where |y| >= |x|, atan(y / x) +- pi for x < 0 (the sign of y); 0 for
    y = x = 0 (with the sign rules of ``np.arctan2`` for signed zeros)."""
    yy: F = np.asarray(y, dtype=np.float64)
    xx: F = np.asarray(x, dtype=np.float64)
    yy, xx = np.broadcast_arrays(yy, xx)
    steep = np.abs(yy) > np.abs(xx)
    safe_x = np.where(xx == 0.0, 1.0, xx)
    safe_y = np.where(yy == 0.0, 1.0, yy)
    flat = atan(np.where(steep, 0.0, yy / safe_x))
    flat = np.where(xx < 0.0, flat + np.copysign(math.pi, yy), flat)
    flat = np.where((xx == 0.0) & (yy == 0.0),
                    np.where(np.signbit(xx), np.copysign(math.pi, yy), np.copysign(0.0, yy)),
                    flat)
    upright = np.copysign(0.5 * math.pi, yy) - atan(np.where(steep, xx / safe_y, 0.0))
    return np.asarray(np.where(steep, upright, flat), dtype=np.float64)
