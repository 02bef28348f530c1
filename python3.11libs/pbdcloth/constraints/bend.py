"""Dihedral bending constraint (Müller et al. 2006, section 4.2), batched over constraints.

A bend constraint joins the two triangles (x1, x2, x3) and (x2, x1, x4) that share the edge
x1-x2; x3 and x4 are the wing vertices. With e = x2 - x1 and the (unnormalised) normals

    n1 = e x (x3 - x1),     n2 = (x4 - x1) x e,

a flat sheet has n1 parallel to n2, and the signed dihedral angle is

    theta = atan2((n1 x n2) . e / |e|, n1 . n2)        (0 when flat).

The constraint is C = theta - theta0 (wrapped to (-pi, pi]). Its gradient is the closed form of
Bridson, Marino and Fedkiw 2003 (also Wardetzky et al. 2007, "Discrete quadratic curvature
energies"):

    dtheta/dx3 = -|e| n1 / |n1|^2
    dtheta/dx4 = -|e| n2 / |n2|^2
    dtheta/dx1 = -((x3 - x2) . e / |e|) n1 / |n1|^2 - ((x4 - x2) . e / |e|) n2 / |n2|^2
    dtheta/dx2 = ((x3 - x1) . e / |e|) n1 / |n1|^2 + ((x4 - x1) . e / |e|) n2 / |n2|^2

which is exactly Müller's q-vectors divided by sqrt(1 - d^2) (d = n1 . n2 of the unit normals),
written so that it stays finite for a flat sheet, where the arccos form loses all precision.
Rest and current angles go through the same function, so a sheet at rest stays exactly at rest.

Positions are passed component-major, shape (3, M), so that a batch costs a few dozen whole-array
numpy operations whatever its size. Using (e x a) x (b x e) = -[e, a, b] e, the sine part needs no
second cross product: (n1 x n2) . e / |e| = -(n1 . (x4 - x1)) |e|.

Projection (Müller 2006, eq. 8; XPBD: Macklin, Müller and Chentanez 2016, eq. 18 and 26), with
g_k = dtheta/dx_k and S = sum_k w_k |g_k|^2:

    PBD:   dx_k = -k' C / S * w_k g_k
    XPBD:  dlambda = (-C - alpha~ lambda - gamma sum_k g_k . (x_k - x_k,prev))
                     / ((1 + gamma) S + alpha~),       dx_k = w_k dlambda g_k

with alpha~ = alpha / h^2 (alpha the bend compliance [1/(N m)]) and gamma = alpha~ beta h.
A hinge with S = 0 (all four corners pinned, or degenerate) is left alone. A per-hinge stiffness
scale s (:mod:`pbdcloth.cloth.attributes`) makes the PBD step min(1, s k') and the XPBD update
dlambda = (-s C - alpha~ lambda - gamma ...) / ((s + gamma) S + alpha~) (compliance alpha / s).

Usage (positions component-major (3, N), C-contiguous; corrected in place)::

    colors = bend_colors(model.bend, n)                 # once per model
    work = BendWorkspace(CHUNK)                         # scratch, reused (optional)
    project_bend_pbd(P, colors, k, work)
    project_bend_xpbd(P, P_prev, colors, lam, alpha_tilde, gamma, work)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np
from numpy.typing import NDArray

from ..arrays import I64, F, I
from ..portable import atan
from .batches import CHUNK, chunk_slices, flat_gather, flat_positions

#: Squared normal length below which a hinge is degenerate and left alone [m^4].
DEGENERATE_NORMAL_SQ = 1e-30

_TINY = 1e-300

_ROT1 = [1, 2, 0]
_ROT2 = [2, 0, 1]


def cross3(a: F, b: F) -> F:
    """Cross product of component-major vectors (3, M)."""
    return a[_ROT1] * b[_ROT2] - a[_ROT2] * b[_ROT1]


def dot3(a: F, b: F) -> F:
    """Dot product of component-major vectors (3, M) -> (M,)."""
    return np.einsum("ij,ij->j", a, b)


def dihedral_angle(x1: F, x2: F, x3: F, x4: F) -> F:
    """Signed dihedral angle theta [rad] of each hinge (inputs (3, M)), 0 when flat, in (-pi, pi].

    Same arithmetic as :func:`dihedral_angle_and_gradient`, so rest and current angles agree.
    """
    return dihedral_angle_and_gradient(np.stack([x1, x2, x3, x4]))[0].copy()


class BendWorkspace:
    """Scratch arrays for :func:`dihedral_angle_and_gradient`, reused from batch to batch.

    Reusing the same memory keeps it in the CPU cache and avoids allocating ~40 temporaries per
    batch; batches of up to ``capacity`` hinges fit.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._x = np.empty(12 * capacity)
        self._d = np.empty(9 * capacity)
        self._n = np.empty(6 * capacity)
        self._t = np.empty(2 * capacity)
        self._nsq = np.empty(2 * capacity)
        self._proj = np.empty(2 * capacity)
        self._s = np.empty((6, capacity))
        self._grad = np.empty(12 * capacity)
        self._wg = np.empty(12 * capacity)

    @classmethod
    def for_colors(cls, colors: Sequence[BendColor]) -> BendWorkspace:
        return cls(max((c.count for c in colors), default=0))

    def weighted(self, m: int) -> F:
        """Scratch (4, 3, m) for the inverse-mass weighted gradient w_k g_k."""
        if m > self.capacity:
            raise ValueError(f"batch of {m} hinges exceeds the workspace ({self.capacity})")
        return self._wg[: 12 * m].reshape(4, 3, m)

    def views(self, m: int) -> tuple[F, F, F, F, F, F, F, F]:
        if m > self.capacity:
            raise ValueError(f"batch of {m} hinges exceeds the workspace ({self.capacity})")
        return (self._x[: 12 * m].reshape(4, 3, m), self._d[: 9 * m].reshape(3, 3, m),
                self._n[: 6 * m].reshape(2, 3, m), self._t[: 2 * m].reshape(2, m),
                self._nsq[: 2 * m].reshape(2, m), self._proj[: 2 * m].reshape(2, m),
                self._s[:, :m], self._grad[: 12 * m].reshape(4, 3, m))

    def gather(self, flat: F, index: NDArray[np.intp]) -> F:
        """Gather hinge corners from flat component-major positions into the workspace."""
        m = index.shape[0] // 12
        out = self._x[: 12 * m]
        flat.take(index, out=out, mode="clip")
        return out.reshape(4, 3, m)


def dihedral_angle_and_gradient(
    x: F, work: BendWorkspace | None = None
) -> tuple[F, F, NDArray[np.bool_]]:
    """theta (M,), its gradient (4, 3, M) and a validity mask, for hinges ``x`` = (x1..x4) (4, 3, M).

    The gradient's rows are dtheta/dx1 .. dtheta/dx4. Hinges with a degenerate triangle
    (|n|^2 below :data:`DEGENERATE_NORMAL_SQ`) or a zero-length shared edge are flagged invalid;
    their gradients are zero. theta is computed with the half-angle formula
    atan2(s, c) = 2 atan(s / (sqrt(s^2 + c^2) + c)): the same value as ``arctan2`` to rounding,
    about half its cost, well conditioned near flat. (At exactly +-pi with s = 0 it returns 0: a
    hinge folded flat onto itself has no defined fold direction.)

    With a :class:`BendWorkspace` every temporary lives in reused scratch memory; the returned
    arrays are then views into it, valid until the next call.
    """
    m = x.shape[2]
    if work is None:
        work = BendWorkspace(m)
    _, d, normals, tmp, nsq, proj, s, grad = work.views(m)
    np.subtract(x[1:], x[0], out=d)        # e = x2 - x1, a = x3 - x1, b = x4 - x1
    e, b = d[0], d[2]
    left = d[0::2]                         # (e, b)
    right = d[1::-1]                       # (a, e)
    for k, (k1, k2) in enumerate(((1, 2), (2, 0), (0, 1))):   # (n1, n2) = (e x a, b x e)
        np.multiply(left[:, k1], right[:, k2], out=normals[:, k])
        np.multiply(left[:, k2], right[:, k1], out=tmp)
        np.subtract(normals[:, k], tmp, out=normals[:, k])
    np.einsum("kij,kij->kj", normals, normals, out=nsq)
    elen, sin_part, cos_part, r = s[0], s[1], s[2], s[3]
    np.einsum("ij,ij->j", e, e, out=elen)
    valid = np.ones(m, dtype=bool)
    if m and not (nsq.min() > DEGENERATE_NORMAL_SQ and elen.min() > 0.0):
        valid = (np.minimum(nsq[0], nsq[1]) > DEGENERATE_NORMAL_SQ) & (elen > 0.0)
        nsq[:, ~valid] = np.inf
        elen[~valid] = 1.0
    np.sqrt(elen, out=elen)
    n1 = normals[0]
    # sin(theta) |n1| |n2| = -(n1 . b) |e|,   cos(theta) |n1| |n2| = n1 . n2
    np.einsum("ij,ij->j", n1, b, out=sin_part)
    np.multiply(sin_part, elen, out=sin_part)
    np.negative(sin_part, out=sin_part)
    np.einsum("ij,ij->j", n1, normals[1], out=cos_part)
    np.multiply(sin_part, sin_part, out=r)
    np.multiply(cos_part, cos_part, out=s[4])
    np.add(r, s[4], out=r)
    np.sqrt(r, out=r)
    np.add(r, cos_part, out=r)
    # r = 0 only for sin = 0 and cos <= 0 (folded flat onto itself): the tiny offset makes that
    # 0 / tiny = 0 instead of 0 / 0, and changes no other quotient.
    np.add(r, _TINY, out=r)
    theta = s[5]
    np.divide(sin_part, r, out=theta)
    theta[:] = atan(theta)                 # portable: the same bits on every processor
    np.multiply(theta, 2.0, out=theta)
    # Gradient (Bridson 2003): scaled normals N_k = n_k / |n_k|^2.
    np.divide(normals, nsq[:, None, :], out=normals)
    np.einsum("kij,ij->kj", d[1:], e, out=proj)
    np.divide(proj, elen, out=proj)         # (x3 - x1).e/|e|, (x4 - x1).e/|e|
    np.negative(elen, out=r)
    np.multiply(normals, r, out=grad[2:])   # dtheta/dx3, dtheta/dx4 = -|e| N_k
    np.einsum("kj,kij->ij", proj, normals, out=grad[1])
    # dtheta/dx1 = -(the others): the angle does not change under a rigid translation.
    np.add(grad[1], grad[2], out=grad[0])
    np.add(grad[0], grad[3], out=grad[0])
    np.negative(grad[0], out=grad[0])
    return theta, grad, valid


def constraint_angle(theta: F, rest: F) -> F:
    """C = theta - rest, wrapped to (-pi, pi] only where needed (rarely: a hinge past +-pi)."""
    c = theta - rest
    if np.abs(c).max(initial=0.0) > np.pi:
        c = wrap_angle(c)
    return c


def wrap_angle(angle: F) -> F:
    """Wrap angles to (-pi, pi]."""
    return np.pi - np.mod(np.pi - angle, 2.0 * np.pi)


class BendConstraints(Protocol):
    """What :func:`bend_colors` reads from a family (:class:`pbdcloth.cloth.model.BendFamily`)."""

    @property
    def quads(self) -> I64: ...
    @property
    def rest_angle(self) -> F: ...
    @property
    def w(self) -> F: ...
    def color_slices(self) -> list[slice]: ...


@dataclass(frozen=True, eq=False)
class BendColor:
    """One batch of hinges of one color, with flat gather indices.

    Attributes:
        gather: flat indices (12 m,): ``R.take(gather).reshape(4, 3, m)`` gives x1..x4.
        count: m, the number of hinges.
        rest: rest dihedral angle theta0 [rad], shape (m,).
        w: inverse masses of the four corners [1/kg], shape (4, 1, m).
        span: the batch's slice of the family's arrays (and of its multipliers).
        scale: stiffness scale of each hinge, shape (m,), or ``None`` (1).
    """

    gather: I
    count: int
    rest: F
    w: F
    span: slice
    scale: F | None = None


def bend_colors(family: BendConstraints, n: int, chunk: int = CHUNK) -> list[BendColor]:
    """The family's colors as batches of at most ``chunk`` hinges, for ``n`` particles (with
    the family's ``scale``, when it has one)."""
    scale: F | None = getattr(family, "scale", None)
    return [
        BendColor(
            gather=flat_gather([family.quads[s, k] for k in range(4)], n), count=s.stop - s.start,
            rest=family.rest_angle[s], w=np.ascontiguousarray(family.w[s].T[:, None, :]), span=s,
            scale=None if scale is None else scale[s],
        )
        for color in family.color_slices()
        for s in chunk_slices(color, chunk)
    ]


def project_bend_pbd(positions: F, colors: Sequence[BendColor], stiffness: float,
                     work: BendWorkspace | None = None) -> None:
    """PBD bend projection of ``colors`` in order, in place: dx_k = -k' C / S * w_k g_k.

    ``positions`` (3, N) [m]; ``stiffness`` is k' (already scaled for the iteration count).
    """
    if stiffness == 0.0:
        return
    R = flat_positions(positions)
    ws = work if work is not None else BendWorkspace.for_colors(colors)
    for c in colors:
        x = ws.gather(R, c.gather)
        theta, grad, _ = dihedral_angle_and_gradient(x, ws)
        cval = constraint_angle(theta, c.rest)
        wg = np.multiply(grad, c.w, out=ws.weighted(c.count))
        denom = np.einsum("kij,kij->j", wg, grad)       # S
        k = stiffness if c.scale is None else np.minimum(stiffness * c.scale, 1.0)
        if denom.min(initial=1.0) > 0.0:
            np.divide(cval, denom, out=cval)
            cval *= -k
        else:
            ok = denom > 0.0
            cval = np.where(ok, -k * cval / np.where(ok, denom, 1.0), 0.0)
        wg *= cval
        x += wg
        R[c.gather] = x.reshape(-1)


def project_bend_xpbd(
    positions: F, prev_positions: F, colors: Sequence[BendColor], lam: F, alpha_tilde: float,
    gamma: float, work: BendWorkspace | None = None,
) -> None:
    """XPBD bend projection of ``colors`` in order, in place; adds dlambda to ``lam`` (B,).

    ``positions``, ``prev_positions`` (3, N) [m] (the latter: positions at the start of the
    substep, for constraint damping); ``alpha_tilde = compliance / h^2``;
    ``gamma = alpha_tilde * beta * h``.
    """
    R = flat_positions(positions)
    R_prev = flat_positions(prev_positions)
    ws = work if work is not None else BendWorkspace.for_colors(colors)
    for c in colors:
        x = ws.gather(R, c.gather)
        theta, grad, _ = dihedral_angle_and_gradient(x, ws)
        numer = constraint_angle(theta, c.rest)
        np.negative(numer, out=numer)                   # -C
        if c.scale is not None:
            numer *= c.scale                            # -s C
        wg = np.multiply(grad, c.w, out=ws.weighted(c.count))
        lam_c = lam[c.span]
        if alpha_tilde != 0.0:
            numer -= alpha_tilde * lam_c
        if gamma != 0.0:
            dx = x - R_prev.take(c.gather, mode="clip").reshape(4, 3, c.count)
            numer -= gamma * np.einsum("kij,kij->j", grad, dx)
        denom = np.einsum("kij,kij->j", wg, grad)       # S
        if c.scale is not None:
            denom *= c.scale + gamma
        elif gamma != 0.0:
            denom *= 1.0 + gamma
        denom += alpha_tilde
        if denom.min(initial=1.0) > 0.0:
            dlam = np.divide(numer, denom, out=numer)
        else:
            ok = denom > 0.0
            dlam = np.where(ok, numer / np.where(ok, denom, 1.0), 0.0)
        lam_c += dlam
        wg *= dlam
        x += wg
        R[c.gather] = x.reshape(-1)
