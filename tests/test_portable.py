"""pbdcloth.portable: products and arctangents that round alike on every processor."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pbdcloth.portable import atan, atan2, dot, matmul, norm, rotate, rotate_columns, rotate_t


def _ulps(got: np.ndarray, exact: np.ndarray) -> float:
    return float((np.abs(got - exact) / np.spacing(np.maximum(np.abs(exact), 1e-300))).max())


def test_atan_is_within_eight_ulp_of_the_correctly_rounded_arctangent() -> None:
    """Against ``math.atan`` (glibc's, below 1 ulp) over small, moderate and huge arguments
    (measured: at most 6 ulp; the bound leaves 2 for other machines' libm); the special values
    as ``np.arctan`` gives them."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0.0, 0.05, 20000), rng.normal(0.0, 2.0, 20000),
                        rng.normal(0.0, 1e4, 2000), [1.0, -1.0, 1e-300, 5e-324, 1e300]])
    exact = np.array([math.atan(v) for v in x])
    assert _ulps(atan(x), exact) <= 8.0
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    assert np.array_equal(atan(special), np.arctan(special), equal_nan=True)
    assert np.signbit(atan(-0.0)) and not np.signbit(atan(0.0))


def test_atan2_is_within_eight_ulp_in_every_quadrant_with_numpys_zero_rules() -> None:
    rng = np.random.default_rng(8)
    y, x = rng.normal(0.0, 1.0, (2, 40000))
    exact = np.array([math.atan2(a, b) for a, b in zip(y, x)])
    assert _ulps(atan2(y, x), exact) <= 8.0
    zy = np.array([0.0, 0.0, -0.0, -0.0, 1.0, -1.0, 0.0, -0.0, 2.0, -2.0])
    zx = np.array([0.0, -0.0, 0.0, -0.0, 0.0, 0.0, -3.0, -3.0, -2.0, -2.0])
    got, want = atan2(zy, zx), np.arctan2(zy, zx)
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


def test_products_are_the_written_out_sums_and_agree_with_blas_to_rounding() -> None:
    rng = np.random.default_rng(9)
    r, a, b = rng.normal(size=(3, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    assert np.array_equal(dot(a, b), (a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1]) + a[:, 2] * b[:, 2])
    assert norm(a[0]) == math.sqrt(float(dot(a[0], a[0])))
    assert np.allclose(rotate(r, a), a @ r.T, rtol=0, atol=1e-14)
    assert np.array_equal(rotate_columns(r, a), rotate(r, a).T)
    assert rotate_columns(r, a).flags.c_contiguous
    assert np.allclose(rotate_t(r, a), a @ r, rtol=0, atol=1e-14)
    m4 = rng.normal(size=(4, 4))
    assert np.allclose(matmul(m4, m4.T), m4 @ m4.T, rtol=0, atol=1e-14)
    assert np.allclose(matmul(r, r), r @ r, rtol=0, atol=1e-14)


@pytest.mark.parametrize("value", [0.3, -7.5, 1e-8])
def test_one_number_gives_a_number_shaped_result(value: float) -> None:
    assert atan(value).shape == () and abs(float(atan(value)) - math.atan(value)) <= 4e-16 * (
        1 + abs(math.atan(value)))
