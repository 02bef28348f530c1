"""Each Warp projection against the numpy function it mirrors, on the same small random inputs.

Every Warp function or kernel that implements a projection names, in its docstring, the numpy
function it mirrors ("Mirrors pbdcloth.constraints.distance.project_distance_pbd."). Here each
pair is run on the same inputs: the float64 kernels agree with numpy to 1e-12 (the same formulas,
a few operations in another order), the float32 kernels to the bound stated at each test (inputs
rounded to float32, then float32 arithmetic: a few units of float32 rounding of the values'
scale). A last test reads every "Mirrors" name in the Warp modules and imports it, so the link
cannot rot. The tests skip when Warp is not installed.
"""

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

wp = pytest.importorskip("warp")
wp.config.log_level = 30  # no module-load lines in the test output

from pbdcloth import Capsule, Plane, SdfCollider, Sphere
from pbdcloth.backends.warp import colliders as device_colliders
from pbdcloth.backends.warp.kernels import build_kernels
from pbdcloth.cloth.mesh import grid, vertex_normals
from pbdcloth.cloth.model import BendFamily, DistanceFamily
from pbdcloth.colliders.base import Collider
from pbdcloth.colliders.response import ContactBuffer, apply_restitution, project_contacts
from pbdcloth.constraints.bend import (
    bend_colors,
    dihedral_angle_and_gradient,
    project_bend_pbd,
    project_bend_xpbd,
)
from pbdcloth.constraints.distance import (
    distance_colors,
    project_distance_pbd,
    project_distance_unilateral,
    project_distance_xpbd,
)
from pbdcloth.constraints.softpin import project_soft_pins, soft_pin_stiffness
from pbdcloth.constraints.stitch import project_stitches
from pbdcloth.constraints.tether import project_tethers

ROOT = Path(__file__).resolve().parents[1]
WARP_MODULES = [ROOT / "python3.11libs" / "pbdcloth" / "backends" / "warp" / name
                for name in ("kernels.py", "lanes.py", "colliders.py")]
CPU = "cpu"

#: float64 kernels against numpy, on values of order 1 [m]: a few operations in another order.
FLOAT64_BOUND = 1e-12
#: float32 kernels against numpy on float32-rounded inputs of order 1: measured at most 4.9e-7
#: (four units of float32 rounding, eps = 1.2e-7) over the tests below but the PBD bend; bound:
#: 16 eps. (float64: measured at most 1.1e-15; the PBD distances bit for bit.)
FLOAT32_BOUND = 16 * float(np.finfo(np.float32).eps)

PRECISIONS = [("float64", np.float64, FLOAT64_BOUND), ("float32", np.float32, FLOAT32_BOUND)]

#: PBD bends in float32: the step -k C / sum w |grad|^2 divides a float32 angle difference by a
#: sum of squared gradients (|grad| ~ 5 / m on these 0.3 m hinges): measured 4.5e-6 m (5.3e-6 m
#: by the lane kernels); bound 128 eps = 1.5e-5 m, a thousandth of the moves checked.
BEND_PRECISIONS = [PRECISIONS[0], ("float32", np.float32, 128 * float(np.finfo(np.float32).eps))]


def _vec3(a: np.ndarray, dtype: Any) -> Any:
    k = build_kernels("float32" if dtype is np.float32 else "float64")
    return wp.array(np.ascontiguousarray(a, dtype=dtype), dtype=k.vec3, device=CPU)


def _scalars(a: np.ndarray, dtype: Any) -> Any:
    k = build_kernels("float32" if dtype is np.float32 else "float64")
    return wp.array(np.ascontiguousarray(a, dtype=dtype), dtype=k.scalar, device=CPU)


def _rounded(a: np.ndarray, dtype: Any) -> np.ndarray:
    """``a`` as the kernels of ``dtype`` see it, back in float64."""
    return np.asarray(a, dtype=dtype).astype(np.float64)


def _one_color(rng: np.random.Generator, n: int, m: int, corners: int) -> np.ndarray:
    """(m, corners) particle indices of ``n``, no particle used twice (one color)."""
    return rng.permutation(n)[: m * corners].reshape(m, corners)


def _inverse_masses(rng: np.random.Generator, n: int) -> np.ndarray:
    w = rng.uniform(0.5, 2.0, n)
    w[rng.random(n) < 0.15] = 0.0  # some pinned particles
    return w


# --- distances ------------------------------------------------------------------------------------

N = 160  #: particles of the random constraint sets
COLORS = 3  #: colors of each random family (each a batch with no particle repeated)


def _colored(rng: np.random.Generator, m: int, corners: int) -> tuple[np.ndarray, np.ndarray]:
    """(COLORS m, corners) particle indices in colored order and the colors' offsets."""
    parts = np.concatenate([_one_color(rng, N, m, corners) for _ in range(COLORS)])
    return parts, np.arange(COLORS + 1) * m


def _scales(rng: np.random.Generator, m: int, dtype: Any) -> np.ndarray:
    """Random stiffness scales in [0, 3], some exactly 0 and some exactly 1."""
    s = rng.uniform(0.0, 3.0, m)
    s[::7], s[1::7] = 0.0, 1.0
    return _rounded(s, dtype)


def _distance_family(seed: int, dtype: Any, scaled: bool = False
                     ) -> tuple[DistanceFamily, np.ndarray, np.ndarray]:
    """A random distance family (one zero-length constraint), positions p and x_prev (N, 3);
    ``scaled``: with random stiffness scales."""
    rng = np.random.default_rng(seed)
    ij, offsets = _colored(rng, 40, 2)
    x_prev = _rounded(rng.normal(size=(N, 3)), dtype)
    p = _rounded(x_prev + rng.normal(scale=0.05, size=(N, 3)), dtype)
    p[ij[0, 1]] = p[ij[0, 0]]  # a zero-length constraint: no direction, nothing moves
    w = _rounded(_inverse_masses(rng, N), dtype)
    wi, wj = w[ij[:, 0]], w[ij[:, 1]]
    wsum = wi + wj
    safe = np.where(wsum > 0.0, wsum, 1.0)
    rest = np.linalg.norm(x_prev[ij[:, 0]] - x_prev[ij[:, 1]], axis=1)
    rest = _rounded(rest * rng.uniform(0.8, 1.2, len(ij)), dtype)
    family = DistanceFamily(
        i=ij[:, 0], j=ij[:, 1], rest=rest, wi=wi, wj=wj,
        wi_frac=_rounded(np.where(wsum > 0.0, wi / safe, 0.0), dtype),
        wj_frac=_rounded(np.where(wsum > 0.0, wj / safe, 0.0), dtype),
        offsets=offsets, source=np.arange(len(ij)),
        scale=_scales(rng, len(ij), dtype) if scaled else None)
    return family, p, x_prev


def _distance_records(family: DistanceFamily, record: Any, fields: tuple[str, str]) -> Any:
    rec = np.zeros(len(family.i), dtype=record.numpy_dtype())
    rec["i"], rec["j"], rec["rest"] = family.i, family.j, family.rest
    rec[fields[0]], rec[fields[1]] = getattr(family, fields[0]), getattr(family, fields[1])
    rec["scale"] = 1.0 if family.scale is None else family.scale
    return wp.array(rec, dtype=record, device=CPU)


def _component_major(p: np.ndarray) -> np.ndarray:
    """(N, 3) positions as the numpy projections take them: (3, N), C-contiguous."""
    return np.ascontiguousarray(p.T)


SCALED = pytest.mark.parametrize("scaled", [False, True], ids=["unscaled", "scaled"])


@SCALED
@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_distance_pbd_mirrors_project_distance_pbd(precision: str, dtype: Any,
                                                   bound: float, scaled: bool) -> None:
    k = build_kernels(precision)
    family, p0, _ = _distance_family(1, dtype, scaled)
    stiffness = float(dtype(0.7))
    expected = _component_major(p0)
    project_distance_pbd(expected, distance_colors(family, N), stiffness)
    p = _vec3(p0, dtype)
    records = _distance_records(family, k.DistancePbd, ("wi_frac", "wj_frac"))
    for color in family.color_slices():
        wp.launch(k.distance_pbd, color.stop - color.start,
                  [p, records, color.start, k.scalar(stiffness)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-3  # the projection moved particles
    assert np.abs(p.numpy() - expected.T).max() < bound


@SCALED
@pytest.mark.parametrize("gamma", [0.0, 0.3])
@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_distance_xpbd_mirrors_project_distance_xpbd(precision: str, dtype: Any, bound: float,
                                                     gamma: float, scaled: bool) -> None:
    k = build_kernels(precision)
    family, p0, x_prev = _distance_family(2, dtype, scaled)
    lam0 = _rounded(np.random.default_rng(4).normal(scale=1e-3, size=len(family.i)), dtype)
    alpha, gamma = float(dtype(0.5)), float(dtype(gamma))
    expected, lam_expected = _component_major(p0), lam0.copy()
    project_distance_xpbd(expected, _component_major(x_prev), distance_colors(family, N),
                          lam_expected, alpha, gamma)
    p, lam = _vec3(p0, dtype), _scalars(lam0, dtype)
    records = _distance_records(family, k.DistanceXpbd, ("wi", "wj"))
    for color in family.color_slices():
        wp.launch(k.distance_xpbd, color.stop - color.start,
                  [p, _vec3(x_prev, dtype), records, lam, color.start, k.scalar(alpha),
                   k.scalar(gamma)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-3
    assert np.abs(p.numpy() - expected.T).max() < bound
    # multipliers: of the order of the constraint error (0.1 m) over the weights (~1/kg)
    assert np.abs(lam.numpy() - lam_expected).max() < bound


@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_distance_unilateral_mirrors_project_distance_unilateral(precision: str, dtype: Any,
                                                                 bound: float) -> None:
    """Stretched constraints pulled back fully, compressed ones left alone (rest lengths are
    0.8 .. 1.2 of the current lengths, so both kinds are there); the flag of a constraint past
    the tolerance as numpy's return value (0.02: some are; 10: none), and a sweep whose sweep
    before found none, or one while some particle is held, runs nothing."""
    k = build_kernels(precision)
    family, p0, _ = _distance_family(5, dtype)
    slack = float(dtype(1.05))
    records = _distance_records(family, k.DistancePbd, ("wi_frac", "wj_frac"))
    for tolerance, far_expected in ((0.02, True), (10.0, False)):
        expected = _component_major(p0)
        far = project_distance_unilateral(expected, distance_colors(family, N), slack,
                                          tolerance=tolerance)
        assert far is far_expected
        p = _vec3(p0, dtype)
        flags = wp.zeros(2, dtype=wp.int32, device=CPU)
        none_held = wp.zeros(1, dtype=wp.int32, device=CPU)
        for sweep in (0, 1):
            for color in family.color_slices():
                wp.launch(k.distance_unilateral, color.stop - color.start,
                          [p, records, color.start, k.scalar(slack), k.scalar(slack),
                           k.scalar(tolerance), flags, sweep, none_held], device=CPU)
            if sweep == 0:
                assert bool(flags.numpy()[0]) is far_expected
                once = p.numpy().copy()
        moved = np.abs(expected.T - p0).max(axis=1) > 0.0
        assert 0 < moved.sum() < N  # some particles moved, some did not
        assert np.abs(once - expected.T).max() < bound
        if not far_expected:  # the second sweep ran nothing
            assert np.array_equal(p.numpy(), once)
        else:  # ... nor does it while the pass holds some particle
            again = wp.array(once, dtype=p.dtype, device=CPU)
            held = wp.ones(1, dtype=wp.int32, device=CPU)
            for color in family.color_slices():
                wp.launch(k.distance_unilateral, color.stop - color.start,
                          [again, records, color.start, k.scalar(slack), k.scalar(slack),
                           k.scalar(tolerance), flags, 1, held], device=CPU)
            assert np.array_equal(again.numpy(), once)
            assert not np.array_equal(p.numpy(), once)


@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_hierarchy_kernels_mirror_project_hierarchy(precision: str, dtype: Any,
                                                    bound: float) -> None:
    """The whole hierarchical pass of a 12 x 12 sheet pinned at two corners, pulled long:
    distance_unilateral per color and level, at most 6 sweeps a level and stopping at the
    tolerance (0.2 of d0: each level stops after its third), then hand_down, against
    project_hierarchy; a level's sweeps in one launch (unilateral_sweeps, the CPU's) give the
    same bits, and in float32 so do its lane groups (unilateral_lanes, the CPU's default), also
    with a particle held (one sweep a level, against the kernels at one sweep)."""
    from pbdcloth import ClothSolver
    from pbdcloth.backends.warp.backend import WarpBackend
    from pbdcloth.cloth.mesh import grid
    from pbdcloth.constraints.hierarchy import DEADBAND, hierarchy_batches, project_hierarchy

    pos, tris = grid(12, 12, 1.0, 1.0, plane="xy")
    solver = ClothSolver(pos, tris, pinned=[0, 11])
    assert solver.model.hierarchy.depth >= 2
    rng = np.random.default_rng(8)
    p0 = _rounded(pos * [1.0, 1.3, 1.0] + rng.normal(scale=0.01, size=pos.shape), dtype)
    expected = _component_major(p0)
    sweeps, tolerance = 6, 0.2
    levels = hierarchy_batches(solver.model.hierarchy, len(pos))
    project_hierarchy(expected, levels, 1.0, sweeps=[sweeps] * len(levels),
                      tolerance=tolerance)
    backend = WarpBackend(solver.model, device="cpu", precision=precision)
    p, start = _vec3(p0, dtype), _vec3(p0, dtype)
    slack = backend.k.scalar(1.0 + DEADBAND)
    ran: list[int] = []
    none_held = wp.zeros(1, dtype=wp.int32, device=CPU)
    serial = _vec3(p0, dtype)  # the CPU path: a level's sweeps in one launch
    tol = backend.k.scalar(tolerance)
    lanes = precision == "float32"
    if lanes:
        from pbdcloth.backends.warp.lanes import build_lane_kernels, level_lanes
        lk = build_lane_kernels()
        groups = [level_lanes(level, CPU) for level in reversed(solver.model.hierarchy.levels)]
        grouped, held_lanes, held_once = _vec3(p0, dtype), _vec3(p0, dtype), _vec3(p0, dtype)
        some_held = wp.ones(1, dtype=wp.int32, device=CPU)
    for i, lv in enumerate(backend.m.levels):
        far = wp.zeros(sweeps, dtype=wp.int32, device=CPU)
        for sweep in range(sweeps):
            for off, cnt in lv.colors.spans:
                wp.launch(backend.k.distance_unilateral, cnt,
                          [p, lv.cons, off, slack, slack, tol, far, sweep, none_held],
                          device=CPU)
        ran.append(int(far.numpy().sum()) + 1)  # the sweeps that ran (the last found none)
        wp.launch(backend.k.unilateral_sweeps, 1,
                  [serial, lv.cons, slack, slack, tol, sweeps, none_held], device=CPU)
        copies = [p, serial]
        if lanes:
            g = groups[i]
            for q, held in ((grouped, none_held), (held_lanes, some_held)):
                wp.launch(lk.unilateral_lanes, 1, [q, g.idx, g.frac, g.rest, 0, g.groups,
                                                   sweeps, float(slack), float(tol), held],
                          device=CPU)
            wp.launch(backend.k.unilateral_sweeps, 1,
                      [held_once, lv.cons, slack, slack, tol, 1, none_held], device=CPU)
            copies += [grouped, held_lanes, held_once]
        for q in copies:  # the lane copies by the CPU's one-thread hand-down
            hand_down = [q, start, lv.fine, lv.parent0, lv.parent1, lv.weight0, lv.weight1]
            if q in copies[2:]:
                wp.launch(lk.hand_down_loop, 1, hand_down, device=CPU)
            else:
                wp.launch(backend.k.hand_down, lv.fine.shape[0], hand_down, device=CPU)
    assert np.array_equal(serial.numpy(), p.numpy())
    if lanes:
        assert np.array_equal(grouped.numpy(), p.numpy())
        assert np.array_equal(held_lanes.numpy(), held_once.numpy())
        assert not np.array_equal(held_once.numpy(), p.numpy())
    assert all(1 < r < sweeps for r in ran), ran  # every level stopped, after a second sweep
    assert np.abs(expected.T - p0).max() > 0.05  # the pass pulled the sheet back up
    assert np.abs(p.numpy() - expected.T).max() < bound


# --- bending --------------------------------------------------------------------------------------

def test_hinge_angle_mirrors_dihedral_angle_and_gradient() -> None:
    """The kernels' dihedral angle and gradient (float64) against constraints/bend.py, with flat,
    folded, degenerate and millimetre hinges."""
    k = build_kernels("float64")
    hinge_angle = k.hinge_angle

    @wp.kernel(module="unique")
    def evaluate(x: wp.array2d(dtype=wp.vec3d), theta: wp.array(dtype=wp.float64),
                 grad: wp.array2d(dtype=wp.vec3d), valid: wp.array(dtype=wp.int32)):
        i = wp.tid()
        t, g1, g2, g3, g4, ok = hinge_angle(x[i, 0], x[i, 1], x[i, 2], x[i, 3])
        theta[i] = t
        grad[i, 0] = g1
        grad[i, 1] = g2
        grad[i, 2] = g3
        grad[i, 3] = g4
        valid[i] = wp.where(ok, 1, 0)

    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 4, 3))
    x[:50, :, 1] = 0.0                       # flat hinges (theta = 0)
    x[50:60, 3] = x[50:60, 2]                # folded onto itself (theta = +-pi or 0)
    x[60:70, 2] = 0.5 * (x[60:70, 0] + x[60:70, 1])  # degenerate triangle: invalid
    x[70:80] = x[70:80] * 1e-3               # millimetre hinges
    xs = wp.array(x, dtype=wp.vec3d, device=CPU)
    theta = wp.zeros(len(x), dtype=wp.float64, device=CPU)
    grad = wp.zeros((len(x), 4), dtype=wp.vec3d, device=CPU)
    valid = wp.zeros(len(x), dtype=wp.int32, device=CPU)
    wp.launch(evaluate, len(x), [xs, theta, grad, valid], device=CPU)
    ref_theta, ref_grad, ref_valid = dihedral_angle_and_gradient(
        np.ascontiguousarray(x.transpose(1, 2, 0)))
    ok = ref_valid
    np.testing.assert_array_equal(valid.numpy().astype(bool), ok)
    assert (~ok).sum() >= 10 and np.abs(ref_theta[ok]).max() > 2.5
    np.testing.assert_allclose(theta.numpy()[ok], ref_theta[ok], rtol=0, atol=FLOAT64_BOUND)
    g = grad.numpy().transpose(1, 2, 0)
    scale = np.abs(ref_grad).max(axis=(0, 1))
    err = np.abs(g - ref_grad).max(axis=(0, 1))
    assert (err[ok] <= FLOAT64_BOUND * scale[ok]).all()


def _rotations(rng: np.random.Generator, m: int) -> np.ndarray:
    """m random rotation matrices (3, 3)."""
    q, r = np.linalg.qr(rng.normal(size=(m, 3, 3)))
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


def _bend_family(seed: int, dtype: Any, scaled: bool = False
                 ) -> tuple[BendFamily, np.ndarray, np.ndarray]:
    """Random well-shaped hinges at dihedral angles phi in (-3, 3) (so some C wrap past pi),
    rest angles phi +- 0.6, hinge 0 degenerate (a wing on the edge's end); positions p,
    x_prev."""
    rng = np.random.default_rng(seed)
    quads, offsets = _colored(rng, 20, 4)
    m = len(quads)
    phi = rng.uniform(-3.0, 3.0, m)
    wing = np.stack([np.zeros(m), np.cos(phi), np.sin(phi)], axis=1) * 0.2
    local = np.stack([np.tile([-0.15, 0.0, 0.0], (m, 1)), np.tile([0.15, 0.0, 0.0], (m, 1)),
                      np.tile([0.02, -0.2, 0.0], (m, 1)), wing], axis=1)  # (m, 4, 3)
    world = local @ _rotations(rng, m).transpose(0, 2, 1) + rng.normal(size=(m, 1, 3))
    x_prev = np.zeros((N, 3))
    x_prev[quads.reshape(-1)] = world.reshape(-1, 3) + rng.normal(scale=0.01, size=(4 * m, 3))
    x_prev = _rounded(x_prev, dtype)
    p = _rounded(x_prev + rng.normal(scale=0.02, size=(N, 3)), dtype)
    p[quads[0, 2]] = p[quads[0, 0]]  # hinge 0 degenerate: a wing on the edge's end, n1 = 0
    rest = np.pi - np.mod(np.pi - (np.pi - phi + rng.uniform(-0.6, 0.6, m)), 2 * np.pi)
    w = _rounded(_inverse_masses(rng, N), dtype)
    family = BendFamily(quads=quads, rest_angle=_rounded(rest, dtype), w=w[quads],
                        offsets=offsets, source=np.arange(m),
                        scale=_scales(rng, m, dtype) if scaled else None)
    return family, p, x_prev


def _hinge_records(family: BendFamily, k: Any) -> Any:
    rec = np.zeros(len(family.quads), dtype=k.Hinge.numpy_dtype())
    rec["quad"], rec["rest"], rec["w"] = family.quads, family.rest_angle, family.w
    rec["scale"] = 1.0 if family.scale is None else family.scale
    return wp.array(rec, dtype=k.Hinge, device=CPU)




@SCALED
@pytest.mark.parametrize(("precision", "dtype", "bound"), BEND_PRECISIONS)
def test_bend_pbd_mirrors_project_bend_pbd(precision: str, dtype: Any, bound: float,
                                           scaled: bool) -> None:
    k = build_kernels(precision)
    family, p0, _ = _bend_family(6, dtype, scaled)
    stiffness = float(dtype(0.5))
    expected = _component_major(p0)
    project_bend_pbd(expected, bend_colors(family, N), stiffness)
    p, hinges = _vec3(p0, dtype), _hinge_records(family, k)
    for color in family.color_slices():
        wp.launch(k.bend_pbd, color.stop - color.start,
                  [p, hinges, color.start, k.scalar(stiffness)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-2
    assert np.abs(p.numpy() - expected.T).max() < bound


@SCALED
@pytest.mark.parametrize("gamma", [0.0, 0.3])
@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_bend_xpbd_mirrors_project_bend_xpbd(precision: str, dtype: Any, bound: float,
                                             gamma: float, scaled: bool) -> None:
    k = build_kernels(precision)
    family, p0, x_prev = _bend_family(7, dtype, scaled)
    lam0 = _rounded(np.random.default_rng(8).normal(scale=1e-2, size=len(family.quads)), dtype)
    alpha, gamma = float(dtype(0.2)), float(dtype(gamma))
    expected, lam_expected = _component_major(p0), lam0.copy()
    project_bend_xpbd(expected, _component_major(x_prev), bend_colors(family, N), lam_expected,
                      alpha, gamma)
    p, lam, hinges = _vec3(p0, dtype), _scalars(lam0, dtype), _hinge_records(family, k)
    for color in family.color_slices():
        wp.launch(k.bend_xpbd, color.stop - color.start,
                  [p, _vec3(x_prev, dtype), hinges, lam, color.start, k.scalar(alpha),
                   k.scalar(gamma)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-2
    assert np.abs(p.numpy() - expected.T).max() < bound
    # Multipliers agree except at the degenerate hinge 0: numpy adds dlambda = -C / alpha~ to
    # it (moving nothing: its gradient is 0), the kernel skips the hinge. Known difference.
    assert np.abs(lam.numpy() - lam_expected)[1:].max() < bound
    assert lam.numpy()[0] == lam0[0] != lam_expected[0]


# --- the CPU lane kernels (float32 only) ----------------------------------------------------------

def _lane_projection(kind: str, model: str, p0: np.ndarray, x_prev: np.ndarray,
                     family: DistanceFamily | BendFamily, lam0: np.ndarray,
                     args: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Positions (N, 3) and multipliers (M,) after one launch of the lane kernel of ``kind``
    ("distance" or "bend") and ``model`` over every color of ``family``."""
    from pbdcloth.backends.warp.lanes import LaneGroups, build_lane_kernels

    if isinstance(family, DistanceFamily):
        count = len(family.i)
        group = LaneGroups(np.stack([family.i, family.j], axis=1), family.offsets, CPU,
                           frac=np.stack([family.wi_frac, family.wj_frac], axis=1),
                           w=np.stack([family.wi, family.wj], axis=1), rest=family.rest,
                           scale=np.ones(count) if family.scale is None else family.scale)
        weights = group.frac if model == "pbd" else group.w
    else:
        count = len(family.quads)
        group = LaneGroups(family.quads, family.offsets, CPU, w=family.w, rest=family.rest_angle,
                           scale=np.ones(count) if family.scale is None else family.scale)
        weights = group.w
    used = group.slot >= 0
    lam_lanes = np.zeros(group.slot.size, dtype=np.float32)
    lam_lanes[used] = lam0[group.slot[used]]
    group.lam.assign(lam_lanes)
    p = _vec3(p0, np.float32)
    kernel = getattr(build_lane_kernels(), f"{kind}_{model}_lanes")
    wp.launch(kernel, 1, [p, _vec3(x_prev, np.float32), group.idx, weights, group.rest,
                          group.lam, group.scale, 0, group.groups, 0, *args], device=CPU)
    lam = lam0.copy()
    lam[group.slot[used]] = group.lam.numpy()[used]
    return p.numpy(), lam


#: Lane kernels against numpy (float32 inputs): measured 2.2e-7 m (distances, the per-constraint
#: kernels' arithmetic) and 5.3e-6 m (bends: Cephes' atanf polynomial, 1-2 units, instead of
#: libm's atan); bounds FLOAT32_BOUND and the float32 bend bound. Multipliers: 1.7e-6 relative.
@SCALED
@pytest.mark.parametrize("model", ["pbd", "xpbd"])
@pytest.mark.parametrize("kind", ["distance", "bend"])
def test_lane_kernels_mirror_the_numpy_projections(kind: str, model: str, scaled: bool) -> None:
    dtype = np.float32
    make = _distance_family if kind == "distance" else _bend_family
    family, p0, x_prev = make(11, dtype, scaled)
    count = len(family.i) if isinstance(family, DistanceFamily) else len(family.quads)
    lam0 = _rounded(np.random.default_rng(13).normal(scale=1e-2, size=count), dtype)
    stiffness, alpha, gamma = float(dtype(0.6)), float(dtype(0.3)), float(dtype(0.2))
    expected, lam_expected = _component_major(p0), lam0.copy()
    if isinstance(family, DistanceFamily):
        colors = distance_colors(family, N)
        if model == "pbd":
            project_distance_pbd(expected, colors, stiffness)
        else:
            project_distance_xpbd(expected, _component_major(x_prev), colors, lam_expected,
                                  alpha, gamma)
        bound = FLOAT32_BOUND
    else:
        bends = bend_colors(family, N)
        if model == "pbd":
            project_bend_pbd(expected, bends, stiffness)
        else:
            project_bend_xpbd(expected, _component_major(x_prev), bends, lam_expected, alpha,
                              gamma)
        lam_expected[0] = lam0[0]  # the degenerate hinge (see test_bend_xpbd_...)
        bound = BEND_PRECISIONS[1][2]
    args = [stiffness] if model == "pbd" else [alpha, gamma]
    p, lam = _lane_projection(kind, model, p0, x_prev, family, lam0, args)
    assert np.abs(expected.T - p0).max() > 1e-2
    assert np.abs(p - expected.T).max() < bound
    # multipliers up to ~5 (bends): relative to their scale
    assert np.abs(lam - lam_expected).max() < bound * max(1.0, np.abs(lam_expected).max())


# --- tethers and normals --------------------------------------------------------------------------

@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_tethers_mirror_project_tethers(precision: str, dtype: Any, bound: float) -> None:
    k = build_kernels(precision)
    rng = np.random.default_rng(10)
    anchors = rng.choice(N, 8, replace=False)
    particle = rng.permutation(np.setdiff1d(np.arange(N), anchors))[:100]
    anchor = rng.choice(anchors, len(particle))
    p0 = _rounded(rng.normal(size=(N, 3)), dtype)
    dist = np.linalg.norm(p0[particle] - p0[anchor], axis=1)
    rest = _rounded(dist * rng.uniform(0.7, 1.3, len(particle)), dtype)
    slack = float(dtype(1.05))
    expected = _component_major(p0)
    taut = project_tethers(expected, particle, anchor, rest, slack)
    p = _vec3(p0, dtype)
    flags = wp.zeros(len(particle), dtype=wp.int32, device=CPU)
    i32 = lambda a: wp.array(a.astype(np.int32), dtype=wp.int32, device=CPU)  # noqa: E731
    wp.launch(k.tethers, len(particle),
              [p, i32(particle), i32(anchor), _scalars(rest, dtype), k.scalar(slack), flags],
              device=CPU)
    assert 10 < taut < len(particle)
    assert int(flags.numpy().sum()) == taut
    assert np.abs(p.numpy() - expected.T).max() < bound


# --- stitches and soft pins -----------------------------------------------------------------------

@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_stitches_mirror_project_stitches(precision: str, dtype: Any, bound: float) -> None:
    """Random stitches (rest 0 and longer, some pinned ends): the closing limit binds on some
    (start farther apart than rest + closing) and not on others."""
    k = build_kernels(precision)
    family, p0, x_prev = _distance_family(14, dtype)
    rng = np.random.default_rng(15)
    rest = np.where(rng.random(len(family.i)) < 0.5, 0.0, family.rest)
    family = DistanceFamily(**{**vars(family), "rest": _rounded(rest, dtype)})
    closing = float(dtype(0.8))
    start = np.linalg.norm(x_prev[family.i] - x_prev[family.j], axis=1)
    limited = start - closing > family.rest
    assert 5 < limited.sum() < len(limited) - 5
    expected = _component_major(p0)
    project_stitches(expected, _component_major(x_prev), distance_colors(family, N), closing)
    p = _vec3(p0, dtype)
    records = _distance_records(family, k.DistancePbd, ("wi_frac", "wj_frac"))
    for color in family.color_slices():
        wp.launch(k.stitches, color.stop - color.start,
                  [p, _vec3(x_prev, dtype), records, color.start, k.scalar(closing)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-2
    assert np.abs(p.numpy() - expected.T).max() < bound


@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_triangle_stitches_mirror_project_triangle_stitches(precision: str, dtype: Any,
                                                            bound: float) -> None:
    """Random point-to-triangle stitches in three colors (some corners pinned, some rest
    lengths 0), the closing limit binding on some. float32: measured 2.2e-6 m, above the
    distances' bound: the step divides by w_p + u^2 w_a + v^2 w_b + w^2 w_c, small where p is
    pinned, which amplifies the rounding of C; bound 64 eps."""
    from pbdcloth.cloth.model import TriangleStitchFamily
    from pbdcloth.constraints.stitch import project_triangle_stitches, triangle_stitch_colors

    k = build_kernels(precision)
    rng = np.random.default_rng(17)
    members, offsets = _colored(rng, 20, 4)
    bary = rng.dirichlet(np.ones(3), len(members))
    x_prev = _rounded(rng.normal(size=(N, 3)), dtype)
    p0 = _rounded(x_prev + rng.normal(scale=0.05, size=(N, 3)), dtype)
    w = _rounded(_inverse_masses(rng, N), dtype)
    rest = np.where(rng.random(len(members)) < 0.5, 0.0, rng.uniform(0.1, 1.0, len(members)))
    family = TriangleStitchFamily(members=members, barycentric=_rounded(bary, dtype),
                                  rest=_rounded(rest, dtype), w=w[members], offsets=offsets,
                                  source=np.arange(len(members)))
    closing = float(dtype(0.6))
    expected = _component_major(p0)
    project_triangle_stitches(expected, _component_major(x_prev),
                              triangle_stitch_colors(family, N), closing)
    rec = np.zeros(len(members), dtype=k.TriStitch.numpy_dtype())
    rec["quad"], rec["bary"], rec["rest"], rec["w"] = (members, family.barycentric, family.rest,
                                                       family.w)
    records = wp.array(rec, dtype=k.TriStitch, device=CPU)
    p = _vec3(p0, dtype)
    for color in family.color_slices():
        wp.launch(k.triangle_stitches, color.stop - color.start,
                  [p, _vec3(x_prev, dtype), records, color.start, k.scalar(closing)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-2
    assert np.abs(p.numpy() - expected.T).max() < (bound if dtype is np.float64 else 4 * bound)


@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_compliant_stitches_mirror_project_stitches(precision: str, dtype: Any,
                                                    bound: float) -> None:
    """Random stitches, a third hard or still closing (compliance 0), the rest sewn springs
    (alpha~ = alpha / h^2 of order the inverse masses), over two iterations so that the
    second starts from the first's multipliers; both kinds of stitch and their multipliers
    agree."""
    from pbdcloth.cloth.model import TriangleStitchFamily
    from pbdcloth.constraints.stitch import project_triangle_stitches, triangle_stitch_colors

    k = build_kernels(precision)
    family, p0, x_prev = _distance_family(18, dtype)
    rng = np.random.default_rng(19)
    compliance = _rounded(np.where(rng.random(len(family.i)) < 0.33, 0.0,
                                   rng.uniform(2e-5, 2e-4, len(family.i))), dtype)
    family = DistanceFamily(**{**vars(family), "compliance": compliance})
    members, offsets = _colored(rng, 20, 4)
    w = _rounded(_inverse_masses(rng, N), dtype)
    tri_comp = _rounded(np.where(rng.random(len(members)) < 0.33, 0.0,
                                 rng.uniform(2e-5, 2e-4, len(members))), dtype)
    tri = TriangleStitchFamily(
        members=members, barycentric=_rounded(rng.dirichlet(np.ones(3), len(members)), dtype),
        rest=_rounded(rng.uniform(0.0, 0.5, len(members)), dtype), w=w[members],
        offsets=offsets, source=np.arange(len(members)), compliance=tri_comp)
    closing, inv_h2 = float(dtype(0.3)), float(dtype(1e4))
    expected = _component_major(p0)
    lam, tri_lam = np.zeros(len(family.i)), np.zeros(len(members))
    colors, tri_colors = distance_colors(family, N), triangle_stitch_colors(tri, N)
    for _ in range(2):
        project_stitches(expected, _component_major(x_prev), colors, closing, lam, inv_h2)
        project_triangle_stitches(expected, _component_major(x_prev), tri_colors, closing,
                                  tri_lam, inv_h2)
    p, xp = _vec3(p0, dtype), _vec3(x_prev, dtype)
    records = _distance_records(family, k.DistanceXpbd, ("wi", "wj"))
    rec = np.zeros(len(members), dtype=k.TriStitch.numpy_dtype())
    rec["quad"], rec["bary"], rec["rest"], rec["w"] = members, tri.barycentric, tri.rest, tri.w
    tri_records = wp.array(rec, dtype=k.TriStitch, device=CPU)
    d_lam, d_tri_lam = _scalars(np.full(len(family.i), 7.0), dtype), _scalars(
        np.full(len(members), 7.0), dtype)  # garbage: ``fresh`` must ignore it
    for fresh in (1, 0):
        for color in family.color_slices():
            wp.launch(k.stitches_xpbd, color.stop - color.start,
                      [p, xp, records, _scalars(compliance, dtype), d_lam, color.start,
                       k.scalar(closing), k.scalar(inv_h2), fresh], device=CPU)
        for color in tri.color_slices():
            wp.launch(k.triangle_stitches_xpbd, color.stop - color.start,
                      [p, xp, tri_records, _scalars(tri_comp, dtype), d_tri_lam, color.start,
                       k.scalar(closing), k.scalar(inv_h2), fresh], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-2
    assert np.abs(p.numpy() - expected.T).max() < (bound if dtype is np.float64 else 4 * bound)
    scale = max(np.abs(lam).max(), np.abs(tri_lam).max())
    assert np.abs(d_lam.numpy() - lam).max() < 4 * bound * scale
    assert np.abs(d_tri_lam.numpy() - tri_lam).max() < 4 * bound * scale


@pytest.mark.parametrize("alpha", [0.25, 1.0])
@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_soft_pins_mirror_project_soft_pins(precision: str, dtype: Any, bound: float,
                                            alpha: float) -> None:
    k = build_kernels(precision)
    rng = np.random.default_rng(16)
    particle = rng.permutation(N)[:60]
    start = _rounded(rng.normal(size=(60, 3)), dtype)
    end = _rounded(start + rng.normal(scale=0.3, size=(60, 3)), dtype)
    weight = rng.uniform(0.01, 0.99, 60)
    stiffness = _rounded(soft_pin_stiffness(weight, 3), dtype)
    p0 = _rounded(rng.normal(size=(N, 3)), dtype)
    target = start + alpha * (end - start) if alpha < 1.0 else end
    expected = _component_major(p0)
    project_soft_pins(expected, particle, np.ascontiguousarray(target.T), stiffness)
    p = _vec3(p0, dtype)
    wp.launch(k.soft_pins, 60, [p, wp.array(particle.astype(np.int32), dtype=wp.int32, device=CPU),
                                _vec3(start, dtype), _vec3(end, dtype), k.scalar(alpha),
                                _scalars(stiffness, dtype)], device=CPU)
    assert np.abs(expected.T - p0).max() > 1e-1
    assert np.abs(p.numpy() - expected.T).max() < bound


@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_vertex_normal_mirrors_vertex_normals(precision: str, dtype: Any, bound: float) -> None:
    """The wind's per-particle normal (triangles in triangle order) against the mesh's
    (summed by corner): the same sum in another order."""
    k = build_kernels(precision)
    vertex_normal, vec3 = k.vertex_normal, k.vec3
    rng = np.random.default_rng(12)
    pos, tris = grid(7, 6, 1.0, 0.8)
    pos = _rounded(pos + rng.normal(scale=0.03, size=pos.shape), dtype)
    expected = vertex_normals(pos, tris)

    @wp.kernel(module="unique")
    def evaluate(x: wp.array(dtype=vec3), tri_start: wp.array(dtype=wp.int32),
                 tri_list: wp.array(dtype=wp.int32), tris: wp.array(dtype=wp.vec3i),
                 out: wp.array(dtype=vec3)):
        i = wp.tid()
        out[i] = vertex_normal(x, tri_start, tri_list, tris, i)

    flat = tris.reshape(-1)
    start = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=len(pos)))])
    out = _vec3(np.zeros_like(pos), dtype)
    wp.launch(evaluate, len(pos),
              [_vec3(pos, dtype),
               wp.array(start.astype(np.int32), dtype=wp.int32, device=CPU),
               wp.array((np.argsort(flat, kind="stable") // 3).astype(np.int32),
                        dtype=wp.int32, device=CPU),
               wp.array(tris.astype(np.int32), dtype=wp.vec3i, device=CPU), out], device=CPU)
    np.testing.assert_allclose(np.linalg.norm(expected, axis=1), 1.0)
    assert np.abs(out.numpy() - expected).max() < bound


# --- contacts -------------------------------------------------------------------------------------

def _sphere_sdf(center: tuple[float, float, float], radius: float, h: float,
                band: float) -> SdfCollider:
    """A dense narrow-band block of a sphere's exact distance (clamped to +-band)."""
    lo = np.asarray(center) - radius - 2 * band
    n = int(np.ceil((2 * radius + 4 * band) / h)) + 1
    xs = np.meshgrid(*(lo[k] + h * np.arange(n) for k in range(3)), indexing="ij")
    d = np.sqrt(sum((xs[k] - center[k]) ** 2 for k in range(3))) - radius
    return SdfCollider.from_dense(np.clip(d, -band, band), h, lo, band)


def _moving_colliders() -> list[Collider]:
    """A tilting plane, a moving sphere and capsule, a static SDF sphere (one substep's motion)."""
    plane = Plane((0.0, -0.6, 0.0), (0.0, 1.0, 0.0))
    plane.move_to((0.0, -0.55, 0.0), (0.1, 1.0, 0.0))
    sphere = Sphere((0.3, 0.0, 0.0), 0.4)
    sphere.move_to((0.32, 0.03, 0.0), )
    capsule = Capsule((-0.5, 0.0, -0.3), (-0.5, 0.1, 0.3), 0.25)
    capsule.move_to((-0.48, 0.0, -0.3), (-0.5, 0.12, 0.32))
    return [plane, sphere, capsule, _sphere_sdf((0.0, 0.5, 0.3), 0.3, 0.02, 0.06)]


@pytest.mark.parametrize("scaled", [False, True], ids=["uniform", "contact_scales"])
@pytest.mark.parametrize("friction", [(0.0, 0.0), (0.6, 0.4)], ids=["frictionless", "friction"])
@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_collider_kernels_mirror_project_contacts(precision: str, dtype: Any, bound: float,
                                                  friction: tuple[float, float],
                                                  scaled: bool) -> None:
    """One substep of contacts with every collider kind, in order, against project_contacts
    called once per collider (``scaled``: with per-point thickness and friction scales). (The
    SDF block is sampled in float32 on both sides.)"""
    k = build_kernels(precision)
    rng = np.random.default_rng(5)
    n = 600
    x_prev = _rounded(rng.uniform(-0.8, 0.8, size=(n, 3)), dtype)
    p = _rounded(x_prev + rng.normal(scale=0.02, size=(n, 3)), dtype)
    inv_mass = _rounded(_inverse_masses(rng, n), dtype)
    thickness, h = float(dtype(0.02)), float(dtype(1.0 / 240.0))
    mu_s, mu_k = (float(dtype(mu)) for mu in friction)
    colliders = _moving_colliders()
    ts = _rounded(rng.uniform(0.0, 3.0, n), dtype) if scaled else None
    fs = _rounded(rng.uniform(0.0, 2.0, n), dtype) if scaled else None

    expected = p.copy()
    contacts = ContactBuffer(n)
    for collider in colliders:
        project_contacts(expected, x_prev, inv_mass > 0.0, collider, 0.0, 1.0, h, thickness,
                         mu_s, mu_k, contacts, thickness_scale=ts, friction_scale=fs)
    assert contacts.count > 50

    blocks = {id(c.grid): device_colliders.upload_block(c, CPU) for c in colliders
              if isinstance(c, SdfCollider)}
    device = device_colliders.DeviceColliders(k, CPU, device_colliders.collider_key(colliders),
                                              1, blocks)
    device.update(colliders)
    pw = _vec3(p, dtype)
    contact = wp.zeros(n, dtype=wp.int32, device=CPU)
    normal, surface = _vec3(np.zeros((n, 3)), dtype), _vec3(np.zeros((n, 3)), dtype)
    for kernel, dim, inputs in device.launches(
            0, [pw, _vec3(x_prev, dtype), _scalars(inv_mass, dtype),
                _scalars(np.ones(n) if ts is None else ts, dtype),
                _scalars(np.ones(n) if fs is None else fs, dtype)],
            [k.scalar(thickness), k.scalar(mu_s), k.scalar(mu_k), k.scalar(h), contact, normal,
             surface], n):
        wp.launch(kernel, dim, inputs, device=CPU)
    np.testing.assert_array_equal(contact.numpy().astype(bool), contacts.active)
    assert np.abs(pw.numpy() - expected).max() < bound
    on = contacts.active
    assert np.abs(normal.numpy()[on] - contacts.normal[on]).max() < bound
    # surface velocity = surface motion / h: the motion's rounding over h
    assert np.abs(surface.numpy()[on] - contacts.surface_velocity[on]).max() < bound / h


@pytest.mark.parametrize(("precision", "dtype", "bound"), PRECISIONS)
def test_update_mirrors_apply_restitution(precision: str, dtype: Any, bound: float) -> None:
    """The update kernel with x = 0 and h = 1 (so v = p exactly) against apply_restitution, on
    approaching, resting and separating contacts."""
    k = build_kernels(precision)
    rng = np.random.default_rng(9)
    n = 300
    v = _rounded(rng.normal(size=(n, 3)), dtype)
    v_pred = _rounded(rng.normal(size=(n, 3)), dtype)
    v_pred[:20] *= 1e-3  # slow approaches: below the rest speed, no bounce
    contacts = ContactBuffer(n)
    contacts.active[:] = rng.random(n) < 0.7
    normal = rng.normal(size=(n, 3))
    contacts.normal[:] = _rounded(normal / np.linalg.norm(normal, axis=1)[:, None], dtype)
    contacts.surface_velocity[:] = _rounded(rng.normal(scale=0.2, size=(n, 3)), dtype)
    restitution, rest_speed = float(dtype(0.6)), float(dtype(0.05))
    expected = v.copy()
    apply_restitution(expected, v_pred, contacts, restitution, rest_speed)

    x, v_out = _vec3(np.zeros((n, 3)), dtype), _vec3(np.zeros((n, 3)), dtype)
    wp.launch(k.update, n,
              [_vec3(v, dtype), _vec3(v_pred, dtype), k.scalar(1.0), 1,
               wp.array(contacts.active.astype(np.int32), dtype=wp.int32, device=CPU),
               _vec3(contacts.normal, dtype), _vec3(contacts.surface_velocity, dtype),
               k.scalar(restitution), k.scalar(rest_speed), x, v_out], device=CPU)
    assert np.abs(expected - v).max() > 0.1
    assert np.abs(v_out.numpy() - expected).max() < bound
    np.testing.assert_array_equal(x.numpy(), _rounded(v, dtype))  # x = p


# --- the names themselves -------------------------------------------------------------------------

MIRRORS = re.compile(r"Mirrors (pbdcloth(?:\.\w+)+)")


def _docstrings(path: Path) -> dict[str, str]:
    """Docstrings of every function (nested ones included) in the module at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name: ast.get_docstring(node) or "" for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)}


def _resolve(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_mirrors_name_is_an_existing_numpy_function() -> None:
    names = {match for path in WARP_MODULES
             for doc in _docstrings(path).values() for match in MIRRORS.findall(doc)}
    assert len(names) >= 9
    for dotted in sorted(names):
        func = _resolve(dotted)
        assert callable(func), dotted


#: Every projection of the substep, by (module, function): each must name its numpy mirror.
PROJECTIONS = {
    "kernels.py": ["distance_pbd", "distance_xpbd", "distance_unilateral", "distance_limit",
                   "unilateral_sweeps", "hand_down",
                   "bend_pbd", "bend_xpbd", "tethers",
                   "collide_shapes", "collide_sdf", "hinge_angle", "wrap_angle", "vertex_normal",
                   "restitution_velocity"],
    "lanes.py": ["distance_pbd_lanes", "distance_xpbd_lanes", "distance_limit_lanes",
                 "unilateral_lanes", "hand_down_loop", "bend_pbd_lanes",
                 "bend_xpbd_lanes"],
}


@pytest.mark.parametrize("module", sorted(PROJECTIONS))
def test_every_projection_names_its_numpy_mirror(module: str) -> None:
    docs = _docstrings(ROOT / "python3.11libs" / "pbdcloth" / "backends" / "warp" / module)
    missing = [name for name in PROJECTIONS[module] if not MIRRORS.search(docs.get(name, ""))]
    assert not missing, f"{module}: no 'Mirrors pbdcloth....' in the docstring of {missing}"


def test_continuous_collision_numpy_and_warp_agree() -> None:
    """A capsule at 48 m/s through a hanging curtain, 1 substep, continuous test on: the Warp
    kernel's swept_entry (float32) follows colliders/continuous.py (float64). Bound: the
    carried particles move 2 m per frame, so float32 rounding of a 2 m path (2 * 2^-23 m)
    grows through 4 frames of 2 iterations of stiff constraints; measured 3.2e-6 m."""
    from pbdcloth import ClothSettings, ClothSolver  # noqa: F401
    from test_hardening import sweep_through_curtain

    runs = {}
    for name in ("numpy", "warp"):
        s = ClothSettings(substeps=1, iterations=2, backend=name, device="cpu")
        crossed, solver, _ = sweep_through_curtain(s, 48.0)
        assert crossed == [0, 0, 0, 0]
        runs[name] = solver.positions
    assert float(np.abs(runs["numpy"] - runs["warp"]).max()) < 1e-4


def test_continuous_collision_on_a_level_set_numpy_and_warp_agree() -> None:
    """The level-set ball at 48 m/s through the curtain: the Warp sdf_sweep (float32) follows
    SdfCollider.sweep (float64 march over the float32 field); measured 1.0e-6 m."""
    from pbdcloth import ClothSettings
    from test_hardening import level_set_through_curtain

    runs = {}
    for name in ("numpy", "warp"):
        crossed, solver = level_set_through_curtain(
            ClothSettings(substeps=1, iterations=2, backend=name, device="cpu"))
        assert crossed == [0, 0, 0, 0]
        runs[name] = solver.positions
    assert float(np.abs(runs["numpy"] - runs["warp"]).max()) < 1e-4
