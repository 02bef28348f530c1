"""The constraint projections of pbdcloth.constraints against hand-computed values.

Every test builds a few constraints by hand, runs one projection on component-major positions
(3, N) and compares with the closed form of the paper's update written out here. Values are of
order 1 m, so a handful of float64 operations is exact to a few 1e-16 m: tolerances of 1e-12
leave room for the rounding of the ~30 operations of a bend gradient and nothing more.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import ArrayLike

from pbdcloth.cloth.model import BendFamily, DistanceFamily
from pbdcloth.constraints.bend import (BendWorkspace, bend_colors, dihedral_angle,
                                       dihedral_angle_and_gradient, project_bend_pbd,
                                       project_bend_xpbd)
from pbdcloth.constraints.distance import (DistanceWorkspace, distance_colors,
                                           project_distance_pbd, project_distance_xpbd)
from pbdcloth.constraints.tether import project_tethers

ROUNDING = 1e-12
"""[m] or [1]: a few hundred ulps of values of order 1."""


def _distance_family(pairs: list[tuple[int, int]], rest: list[float], w: np.ndarray,
                     offsets: list[int]) -> DistanceFamily:
    ij = np.array(pairs, dtype=np.intp)
    wi, wj = w[ij[:, 0]], w[ij[:, 1]]
    wsum = wi + wj
    return DistanceFamily(
        i=ij[:, 0], j=ij[:, 1], rest=np.array(rest, dtype=float), wi=wi, wj=wj,
        wi_frac=wi / wsum, wj_frac=wj / wsum, offsets=np.array(offsets),
        source=np.arange(len(pairs)),
    )


def _bend_family(quad: list[int], rest: float, w: np.ndarray) -> BendFamily:
    q = np.array([quad], dtype=np.intp)
    return BendFamily(quads=q, rest_angle=np.array([rest]), w=w[q], offsets=np.array([0, 1]),
                      source=np.zeros(1, dtype=np.intp))


def _cm(points: ArrayLike) -> np.ndarray:
    """(N, 3) -> C-contiguous component-major (3, N)."""
    return np.ascontiguousarray(np.asarray(points, dtype=float).T)


# --- distance -------------------------------------------------------------------------------
def _one_spring() -> tuple[np.ndarray, np.ndarray, DistanceFamily, np.ndarray, float]:
    """Two particles 2 m apart along (2, 3, 6)/7, rest 1.2 m, inverse masses 1 and 3 [1/kg]."""
    u = np.array([2.0, 3.0, 6.0]) / 7.0
    xi = np.array([0.1, 0.2, 0.3])
    xj = xi + 2.0 * u
    w = np.array([1.0, 3.0])
    return xi, xj, _distance_family([(0, 1)], [1.2], w, [0, 1]), w, 1.2


@pytest.mark.parametrize("k", [1.0, 0.5])
def test_pbd_distance_moves_each_end_by_its_mass_share(k: float) -> None:
    """Müller 2006 eq. (10)-(11): with C = 0.8 m and n = (x_i - x_j)/|x_i - x_j| = -u,
    dx_i = -w_i/(w_i + w_j) k C n = +0.2 k u and dx_j = +0.6 k u; the mass-weighted centre
    (masses 1/w) stays where it was."""
    xi, xj, fam, w, rest = _one_spring()
    P = _cm([xi, xj])
    project_distance_pbd(P, distance_colors(fam, 2), k)
    u = (xj - xi) / 2.0
    c = 2.0 - rest
    np.testing.assert_allclose(P[:, 0], xi + 0.25 * k * c * u, rtol=0, atol=ROUNDING)
    np.testing.assert_allclose(P[:, 1], xj - 0.75 * k * c * u, rtol=0, atol=ROUNDING)
    mass = 1.0 / w
    centre_before = (mass[0] * xi + mass[1] * xj) / mass.sum()
    centre_after = (P * mass).sum(axis=1) / mass.sum()
    np.testing.assert_allclose(centre_after, centre_before, rtol=0, atol=ROUNDING)
    assert np.linalg.norm(P[:, 0] - P[:, 1]) == pytest.approx(2.0 - k * c, abs=ROUNDING)


def test_pbd_distance_leaves_a_pinned_end_in_place() -> None:
    """w_i = 0: the free end takes the whole correction, the pinned end does not move at all."""
    xi, xj, _, _, rest = _one_spring()
    fam = _distance_family([(0, 1)], [rest], np.array([0.0, 2.0]), [0, 1])
    P = _cm([xi, xj])
    project_distance_pbd(P, distance_colors(fam, 2), 1.0)
    assert np.array_equal(P[:, 0], xi)
    assert np.linalg.norm(P[:, 1] - xi) == pytest.approx(rest, abs=ROUNDING)


def test_xpbd_distance_multiplier_is_minus_c_over_w_plus_alpha() -> None:
    """Macklin 2016 eq. (18) for one constraint with lambda = 0, no damping:
    dlambda = -C / (w_i + w_j + alpha~); x_i += w_i dlambda n, x_j -= w_j dlambda n."""
    xi, xj, fam, w, rest = _one_spring()
    alpha = 0.7
    P = _cm([xi, xj])
    lam = np.zeros(1)
    project_distance_xpbd(P, P.copy(), distance_colors(fam, 2), lam, alpha, 0.0)
    c = 2.0 - rest
    dlam = -c / (w.sum() + alpha)
    assert lam[0] == pytest.approx(dlam, abs=ROUNDING)
    n = (xi - xj) / 2.0
    np.testing.assert_allclose(P[:, 0], xi + w[0] * dlam * n, rtol=0, atol=ROUNDING)
    np.testing.assert_allclose(P[:, 1], xj - w[1] * dlam * n, rtol=0, atol=ROUNDING)
    # A second iteration carries the multiplier: dlambda = (-C - alpha~ lambda) / (w + alpha~).
    c2 = float(np.linalg.norm(P[:, 0] - P[:, 1])) - rest
    project_distance_xpbd(P, P.copy(), distance_colors(fam, 2), lam, alpha, 0.0)
    assert lam[0] - dlam == pytest.approx((-c2 - alpha * dlam) / (w.sum() + alpha), abs=ROUNDING)


def test_xpbd_distance_damping_term() -> None:
    """Macklin 2016 eq. (26): with x_prev, dlambda = (-C - alpha~ lambda - gamma n . (dx_i - dx_j))
    / ((1 + gamma)(w_i + w_j) + alpha~), here with lambda = 0.5 carried in."""
    xi, xj, fam, w, rest = _one_spring()
    prev = _cm([xi + [0.01, -0.02, 0.03], xj - [0.04, 0.0, 0.01]])
    alpha, gamma, lam0 = 0.3, 0.2, 0.5
    P = _cm([xi, xj])
    lam = np.array([lam0])
    project_distance_xpbd(P, prev, distance_colors(fam, 2), lam, alpha, gamma)
    n = (xi - xj) / 2.0
    rel = (xi - prev[:, 0]) - (xj - prev[:, 1])
    dlam = (-(2.0 - rest) - alpha * lam0 - gamma * n @ rel) / ((1 + gamma) * w.sum() + alpha)
    assert lam[0] - lam0 == pytest.approx(dlam, abs=ROUNDING)
    np.testing.assert_allclose(P[:, 0], xi + w[0] * dlam * n, rtol=0, atol=ROUNDING)


def test_a_color_is_the_same_whole_or_in_batches() -> None:
    """Constraints of one color share no particle: batches of two give the identical result.

    (Not batches of one: numpy's einsum sums the three products of a single column in another
    order, a rounding difference.)"""
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(8, 3))
    w = rng.uniform(0.5, 2.0, size=8)
    fam = _distance_family([(0, 1), (2, 3), (4, 5), (6, 7), (1, 2), (5, 6)],
                           [0.5, 1.0, 1.5, 0.7, 0.9, 1.1], w, [0, 4, 6])
    whole, split = _cm(pts), _cm(pts)
    project_distance_pbd(whole, distance_colors(fam, 8), 0.8)
    project_distance_pbd(split, distance_colors(fam, 8, chunk=2), 0.8, DistanceWorkspace(2))
    assert np.array_equal(whole, split)
    lw, ls = np.zeros(6), np.zeros(6)
    project_distance_xpbd(whole, _cm(pts), distance_colors(fam, 8), lw, 0.1, 0.05)
    project_distance_xpbd(split, _cm(pts), distance_colors(fam, 8, chunk=2), ls, 0.1, 0.05)
    assert np.array_equal(whole, split) and np.array_equal(lw, ls)


def test_positions_must_be_component_major_and_contiguous() -> None:
    xi, xj, fam, _, _ = _one_spring()
    with pytest.raises(ValueError, match="component-major"):
        project_distance_pbd(np.array([xi, xj]).T, distance_colors(fam, 2), 1.0)


# --- bend -----------------------------------------------------------------------------------
def _hinge(phi: float) -> np.ndarray:
    """Shared edge x1 x2 along x, wing x3 in the xy plane, wing x4 turned by phi about x."""
    return np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.4, 0.8, 0.0],
                     [0.6, -0.9 * np.cos(phi), 0.9 * np.sin(phi)]])


def _angle(points: np.ndarray) -> float:
    return float(dihedral_angle(*(p[:, None] for p in points))[0])


@pytest.mark.parametrize("k", [1.0, 0.3])
def test_pbd_bend_step_cuts_the_linearised_error_by_k(k: float) -> None:
    """Müller 2006 eq. (8): dx_k = -k' C / S w_k g_k with S = sum w_k |g_k|^2, so the linearised
    change of the angle, sum g_k . dx_k, is exactly -k' C (to rounding), pinned corners do not
    move, and the new angle error is (1 - k') C up to terms of higher order in C: below
    |C|^3 = 1.25e-4 rad for C = 0.05 rad (measured: 6e-6), far below the effect k' C and below
    the 0.01 rad by which a wrongly scaled step (k'^2 C, or C) would miss."""
    w = np.array([0.0, 2.0, 1.0, 0.5])          # x1 pinned
    rest = _angle(_hinge(0.0))
    pts = _hinge(0.05)
    c0 = _angle(pts) - rest
    assert abs(c0) > 0.04
    _, grad, _ = dihedral_angle_and_gradient(_cm(pts).T.reshape(4, 3, 1).copy())
    P = _cm(pts)
    project_bend_pbd(P, bend_colors(_bend_family([0, 1, 2, 3], rest, w), 4), k)
    dx = (P - _cm(pts)).T
    assert np.array_equal(dx[0], np.zeros(3))
    assert float(np.sum(grad[:, :, 0] * dx)) == pytest.approx(-k * c0, abs=ROUNDING)
    c1 = _angle(P.T) - rest
    assert abs(c1 - (1.0 - k) * c0) < abs(c0) ** 3


def test_pbd_bend_conserves_momentum_with_all_corners_free() -> None:
    """The angle is invariant under translation, so sum g_k = 0 and sum m_k dx_k = 0."""
    w = np.array([1.0, 2.0, 1.0, 0.5])
    P = _cm(_hinge(0.3))
    before = (P / w).sum(axis=1)
    project_bend_pbd(P, bend_colors(_bend_family([0, 1, 2, 3], 0.0, w), 4), 1.0)
    np.testing.assert_allclose((P / w).sum(axis=1), before, rtol=0, atol=ROUNDING)
    assert abs(_angle(P.T)) < abs(_angle(_hinge(0.3)))


def test_xpbd_bend_multiplier_is_minus_c_over_s_plus_alpha() -> None:
    """Macklin 2016 eq. (18): dlambda = -C / (S + alpha~), dx_k = w_k dlambda g_k."""
    w = np.array([0.5, 2.0, 1.0, 0.5])
    pts = _hinge(0.2)
    c0 = _angle(pts)
    _, grad, _ = dihedral_angle_and_gradient(_cm(pts).T.reshape(4, 3, 1).copy())
    g = grad[:, :, 0]
    s = float(np.sum(w[:, None] * g * g))
    alpha = 0.25
    P = _cm(pts)
    lam = np.zeros(1)
    project_bend_xpbd(P, P.copy(), bend_colors(_bend_family([0, 1, 2, 3], 0.0, w), 4), lam,
                      alpha, 0.0, BendWorkspace(1))
    dlam = -c0 / (s + alpha)
    assert lam[0] == pytest.approx(dlam, abs=ROUNDING)
    np.testing.assert_allclose(P.T, pts + w[:, None] * dlam * g, rtol=0, atol=ROUNDING)


def test_a_hinge_with_all_corners_pinned_is_left_alone() -> None:
    """S = 0: no division by zero, no motion, no multiplier."""
    pts = _hinge(0.4)
    fam = _bend_family([0, 1, 2, 3], 0.0, np.zeros(4))
    P = _cm(pts)
    lam = np.zeros(1)
    project_bend_pbd(P, bend_colors(fam, 4), 1.0)
    project_bend_xpbd(P, P.copy(), bend_colors(fam, 4), lam, 0.0, 0.0)
    assert np.array_equal(P, _cm(pts)) and lam[0] == 0.0


# --- tethers --------------------------------------------------------------------------------
def test_a_tether_acts_only_when_taut() -> None:
    """Kim 2012: C = |x_i - x_a| - s r; nothing happens while C <= 0; a taut tether pulls its
    particle straight back onto the sphere of radius s r about the (pinned) anchor."""
    anchor = np.array([0.0, 1.0, 0.0])
    slack_p = anchor + np.array([0.0, -0.9, 0.0])           # 0.9 m of a 1 m tether
    taut_p = anchor + np.array([1.2, -1.6, 0.0])            # 2 m of a 1 m tether
    P = _cm([anchor, slack_p, taut_p])
    count = project_tethers(P, np.array([1, 2]), np.array([0, 0]), np.array([1.0, 1.0]), 1.05)
    assert count == 1
    assert np.array_equal(P[:, 0], anchor) and np.array_equal(P[:, 1], slack_p)
    np.testing.assert_allclose(P[:, 2], anchor + 1.05 * np.array([0.6, -0.8, 0.0]),
                               rtol=0, atol=ROUNDING)
    assert project_tethers(P, np.array([1, 2]), np.array([0, 0]), np.array([1.0, 1.0]),
                           1.05) == 0
