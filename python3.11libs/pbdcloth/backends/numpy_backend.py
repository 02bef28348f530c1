"""The numpy backend: the reference substep loop, one whole-array operation per color.

Positions are held component-major, shape (3, N), during a frame, so that gathering the
particles of a color gives three contiguous rows and the constraint math runs on flat arrays.

The substep (Müller et al. 2006, algorithm 1; Macklin et al. 2016, algorithm 1):

1. predict: v = exp(-damping h) v + h (g + wind load) on free particles; p = x + h v;
   pinned particles move to their targets, interpolated linearly through the frame.
2. project ``iterations`` times: stretch, shear and bend colors (Gauss-Seidel, in colored order),
   then tethers, then colliders (last, so particles end each iteration outside obstacles), then
   self-collision when on (colliders/selfcollision.py, which also clamps the predicted velocity).
3. update: v = (p - x) / h, restitution on contacts, x = p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from ..colliders.base import Collider
from ..colliders.response import ContactBuffer, apply_restitution, project_contacts
from ..selfcollision.stage import SelfCollision
from ..constraints.bend import BendWorkspace, constraint_angle, dihedral_angle_and_gradient
from ..constraints.distance import MIN_LENGTH
from ..cloth.model import ClothModel, DistanceFamily
from ..cloth.state import ClothState
from ..selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from ..settings import ClothSettings, Model
from .base import Control, FrameStats, pbd_stiffness

F = NDArray[np.float64]


@dataclass(frozen=True)
class _DistanceColor:
    """One color of a distance family, with flat gather indices into component-major positions.

    ``g`` = [i, i + N, i + 2N, j, j + N, j + 2N], so ``R.take(g).reshape(2, 3, m)`` gives x_i, x_j.
    """

    g: NDArray[np.intp]
    m: int
    rest: F
    frac: F
    """(w_i / (w_i + w_j), -w_j / (w_i + w_j)) as (2, 1, m): x -= frac * s (x_i - x_j)."""
    w: F
    """(w_i, -w_j) as (2, 1, m) [1/kg]."""
    wsum: F
    sl: slice


@dataclass(frozen=True)
class _BendColor:
    """One color of the bend family; ``g`` gathers x1..x4 as (4, 3, m)."""

    g: NDArray[np.intp]
    m: int
    rest: F
    w: F
    """Inverse masses (4, 1, m), broadcastable against the gradient (4, 3, m)."""
    sl: slice


#: Largest batch of constraints projected in one go: big enough to amortise numpy's per-call cost,
#: small enough that a batch's temporaries stay in the CPU's L2 cache. Batches of one color never
#: share particles, so the split does not change the result.
CHUNK = 4096
DISTANCE_CHUNK = 4096


def _chunks(s: slice, size: int) -> list[slice]:
    return [slice(a, min(a + size, s.stop)) for a in range(s.start, s.stop, size)]


def _flat_gather(columns: list[NDArray[np.intp]], n: int) -> NDArray[np.intp]:
    """Flat indices of the x, y, z components of each column's particles in a (3 N,) array."""
    return np.concatenate([c + k * n for c in columns for k in range(3)]).astype(np.intp)


def _distance_colors(family: DistanceFamily, n: int) -> list[_DistanceColor]:
    return [
        _DistanceColor(
            g=_flat_gather([family.i[s], family.j[s]], n), m=s.stop - s.start,
            rest=family.rest[s],
            frac=np.stack([family.wi_frac[s], -family.wj_frac[s]])[:, None, :],
            w=np.stack([family.wi[s], -family.wj[s]])[:, None, :],
            wsum=family.wi[s] + family.wj[s], sl=s,
        )
        for color in family.color_slices()
        for s in _chunks(color, DISTANCE_CHUNK)
    ]


class NumpyBackend:
    """Steps a :class:`~pbdcloth.model.ClothModel` with numpy; bit-for-bit deterministic.

    During a frame positions are one flat component-major array R = [x..., y..., z...] (3 N,):
    each color gathers its particles with one ``take`` and writes them back with one indexed
    assignment (no two constraints of a color share a particle, so no write is lost).
    """

    name = "numpy"

    def __init__(self, model: ClothModel,
                 tuning: SelfCollisionTuning = DEFAULT_TUNING) -> None:
        self.model = model
        self.tuning = tuning
        n = model.particle_count
        self._stretch = _distance_colors(model.stretch, n)
        self._shear = _distance_colors(model.shear, n)
        b = model.bend
        self._bend = [
            _BendColor(
                g=_flat_gather([b.quads[s, k] for k in range(4)], n), m=s.stop - s.start,
                rest=b.rest_angle[s], w=np.ascontiguousarray(b.w[s].T[:, None, :]), sl=s,
            )
            for color in b.color_slices()
            for s in _chunks(color, CHUNK)
        ]
        self._work = BendWorkspace(CHUNK)
        self._wg = np.empty(12 * CHUNK)
        self._dist_x = np.empty(6 * DISTANCE_CHUNK)
        self._dist_w = np.empty(6 * DISTANCE_CHUNK)
        self._dist_d = np.empty(3 * DISTANCE_CHUNK)
        self._dist_l = np.empty((2, DISTANCE_CHUNK))
        self._free = model.inv_mass > 0.0
        self._free_idx = np.flatnonzero(self._free)
        self.contacts = ContactBuffer(n)
        self._lam_stretch = np.zeros(model.stretch.count)
        self._lam_shear = np.zeros(model.shear.count)
        self._lam_bend = np.zeros(model.bend.count)
        self._denominators: dict[tuple[int, float, float], list[F]] = {}
        self.self_collision = SelfCollision(model, tuning)

    # ---------------------------------------------------------------------------------------
    def step(self, state_in: ClothState, state_out: ClothState, control: Control,
             dt: float) -> FrameStats:
        """One frame ``dt`` [s] of ``control.settings.substeps`` substeps: reads ``state_in``
        (not modified) and the control, writes new position and velocity arrays to
        ``state_out``."""
        x, v, stats = self._frame(state_in.positions, state_in.velocities, control.settings, dt,
                                  control.pin_start, control.pin_end, control.colliders)
        state_out.positions, state_out.velocities = x, v
        return stats

    def _frame(
        self,
        x: F,
        v: F,
        settings: ClothSettings,
        dt: float,
        pin_start: F,
        pin_end: F,
        colliders: Sequence[Collider],
    ) -> tuple[F, F, FrameStats]:
        """Positions and velocities (N, 3) one frame ``dt`` after ``x`` and ``v`` (not modified)."""
        model = self.model
        n_sub = settings.substeps
        h = dt / n_sub
        X = np.ascontiguousarray(x.T)
        V = np.ascontiguousarray(v.T)
        free = self._free
        free_idx = self._free_idx
        pins = model.pinned
        gravity = np.asarray(settings.gravity)[:, None]
        wind = np.asarray(settings.wind)
        has_wind = bool(np.any(wind != 0.0))
        decay = math.exp(-settings.damping * h)
        xpbd = settings.model == Model.XPBD
        mu_s, mu_k = settings.mu_static, settings.friction
        rest_speed = 2.0 * float(np.linalg.norm(settings.gravity)) * h
        k_it = settings.iterations
        k_stretch = pbd_stiffness(settings.stretch_stiffness, k_it)
        k_shear = pbd_stiffness(settings.shear_stiffness, k_it)
        k_bend = pbd_stiffness(settings.bend_stiffness, k_it)
        stats = FrameStats(substeps=n_sub)
        selfcol = self.self_collision if settings.self_collision else None
        if selfcol is not None:
            selfcol.stats.reset()

        for s in range(n_sub):
            a0, a1 = s / n_sub, (s + 1) / n_sub
            # 1. predict. Damping acts on the velocity carried over, before the external
            # acceleration is added, so a resting cloth feels its full weight (damping the sum, as
            # the seed does, scales gravity by exp(-damping h) and biases every static sag).
            if decay != 1.0:
                V *= decay
            if has_wind:
                normals = _vertex_normals_t(X, model.topology.triangles)
                load = (wind @ normals) * normals
                V[:, free_idx] += h * (gravity + load[:, free_idx])
            else:
                V[:, free_idx] += h * gravity
            if selfcol is not None:
                selfcol.clamp_velocity(V, h, settings.self_thickness, settings.self_clamp)
            X_prev = X
            P = X + h * V
            if pins.size:
                P[:, pins] = (pin_start + a1 * (pin_end - pin_start)).T if a1 < 1.0 else pin_end.T
            V_pred = V
            R = P.reshape(-1)  # flat view: writes through R change P
            if selfcol is not None:
                selfcol.begin_substep(P, settings.self_thickness, settings.self_clamp)
            self.contacts.clear()
            if xpbd:
                self._lam_stretch.fill(0.0)
                self._lam_shear.fill(0.0)
                self._lam_bend.fill(0.0)

            # 2. project
            for _ in range(k_it):
                if xpbd:
                    R_prev = X_prev.reshape(-1)
                    self._distance_xpbd(R, R_prev, self._stretch, self._lam_stretch,
                                        settings.stretch_compliance, settings, h)
                    self._distance_xpbd(R, R_prev, self._shear, self._lam_shear,
                                        settings.shear_compliance, settings, h)
                    self._bend_xpbd(R, R_prev, settings, h)
                else:
                    self._distance_pbd(R, self._stretch, k_stretch)
                    self._distance_pbd(R, self._shear, k_shear)
                    self._bend_pbd(R, k_bend)
                if settings.tethers and model.tethers.count:
                    stats.tethers_active = self._tethers(P, settings.tether_slack)
                if colliders:
                    PT, XT = P.T, X_prev.T
                    for collider in colliders:
                        project_contacts(PT, XT, free, collider, a0, a1, h, settings.thickness,
                                         mu_s, mu_k, self.contacts)
                if selfcol is not None:
                    selfcol.project(P, X_prev, settings.self_thickness, settings.self_friction)

            # 3. update
            V = (P - X_prev) / h
            if colliders and self.contacts.active.any():
                apply_restitution(V.T, V_pred.T, self.contacts, settings.restitution, rest_speed)
            X = P

        stats.contacts = self.contacts.count
        if selfcol is not None:
            stats.extra.update(selfcol.stats.frame_extra())
        return np.ascontiguousarray(X.T), np.ascontiguousarray(V.T), stats

    # ---------------------------------------------------------------------------------------
    def _distance_pbd(self, R: F, colors: list[_DistanceColor], k: float) -> None:
        """PBD distance projection, one color at a time (see constraints/distance.py)."""
        if k == 0.0:
            return
        for c in colors:
            m = c.m
            x = R.take(c.g, mode="clip", out=self._dist_x[: 6 * m]).reshape(2, 3, m)
            d = np.subtract(x[0], x[1], out=self._dist_d[: 3 * m].reshape(3, m))
            length, safe = self._dist_l[0, :m], self._dist_l[1, :m]
            np.einsum("ij,ij->j", d, d, out=length)
            np.sqrt(length, out=length)
            np.maximum(length, MIN_LENGTH, out=safe)
            np.subtract(length, c.rest, out=length)
            np.divide(length, safe, out=length)
            np.multiply(length, k, out=length)
            np.multiply(d, length, out=d)
            x -= np.multiply(c.frac, d, out=self._dist_w[: 6 * m].reshape(2, 3, m))
            R[c.g] = x.reshape(-1)

    def _distance_xpbd(
        self, R: F, R_prev: F, colors: list[_DistanceColor], lam: F, compliance: float,
        settings: ClothSettings, h: float,
    ) -> None:
        """XPBD distance projection with compliance [m/N] and constraint damping.

        dlambda = (-C - alpha~ lambda - gamma n.(dx_i - dx_j)) / ((1 + gamma)(w_i + w_j) + alpha~),
        x_i += w_i dlambda n, x_j -= w_j dlambda n (Macklin 2016, eq. 18 and 26).
        """
        alpha = compliance / (h * h)
        gamma = alpha * settings.constraint_damping * h
        inv_denoms = self._inverse_denominators(colors, alpha, gamma)
        for c, inv_denom in zip(colors, inv_denoms):
            m = c.m
            x = R.take(c.g, mode="clip", out=self._dist_x[: 6 * m]).reshape(2, 3, m)
            d = np.subtract(x[0], x[1], out=self._dist_d[: 3 * m].reshape(3, m))
            length, safe = self._dist_l[0, :m], self._dist_l[1, :m]
            np.einsum("ij,ij->j", d, d, out=length)
            np.sqrt(length, out=length)
            np.maximum(length, MIN_LENGTH, out=safe)
            np.divide(d, safe, out=d)                       # n
            lam_c = lam[c.sl]
            numer = np.subtract(c.rest, length, out=length)  # -C
            if alpha != 0.0:
                numer -= alpha * lam_c
            if gamma != 0.0:
                rel = x - R_prev.take(c.g, mode="clip").reshape(2, 3, m)
                numer -= gamma * np.einsum("ij,ij->j", d, rel[0] - rel[1])
            dlam = np.multiply(numer, inv_denom, out=numer)
            lam_c += dlam
            np.multiply(d, dlam, out=d)
            x += np.multiply(c.w, d, out=self._dist_w[: 6 * m].reshape(2, 3, m))
            R[c.g] = x.reshape(-1)

    def _inverse_denominators(self, colors: list[_DistanceColor], alpha: float,
                              gamma: float) -> list[F]:
        """1 / ((1 + gamma)(w_i + w_j) + alpha~) per color, cached while alpha~, gamma hold."""
        key = (id(colors), alpha, gamma)
        cached = self._denominators.get(key)
        if cached is None:
            cached = []
            for c in colors:
                denom = (1.0 + gamma) * c.wsum + alpha
                cached.append(np.where(denom > 0.0, 1.0 / np.where(denom > 0.0, denom, 1.0), 0.0))
            if len(self._denominators) > 8:
                self._denominators.clear()
            self._denominators[key] = cached
        return cached

    def _bend_pbd(self, R: F, k: float) -> None:
        """PBD dihedral bend (Müller 2006, eq. 8, with the closed-form angle gradient)."""
        if k == 0.0:
            return
        work = self._work
        for c in self._bend:
            x = work.gather(R, c.g)
            theta, grad, valid = dihedral_angle_and_gradient(x, work)
            cval = constraint_angle(theta, c.rest)
            wg = np.multiply(grad, c.w, out=self._wg[: 12 * c.m].reshape(4, 3, c.m))
            denom = np.einsum("kij,kij->j", wg, grad)
            if denom.min(initial=1.0) > 0.0:
                np.divide(cval, denom, out=cval)
                cval *= -k
            else:
                ok = denom > 0.0
                cval = np.where(ok, -k * cval / np.where(ok, denom, 1.0), 0.0)
            wg *= cval
            x += wg
            R[c.g] = x.reshape(-1)

    def _bend_xpbd(self, R: F, R_prev: F, settings: ClothSettings, h: float) -> None:
        """XPBD dihedral bend with compliance [1/(N m)] and constraint damping."""
        alpha = settings.bend_compliance / (h * h)
        gamma = alpha * settings.constraint_damping * h
        lam = self._lam_bend
        work = self._work
        for c in self._bend:
            x = work.gather(R, c.g)
            theta, grad, valid = dihedral_angle_and_gradient(x, work)
            numer = constraint_angle(theta, c.rest)
            np.negative(numer, out=numer)                   # -C
            wg = np.multiply(grad, c.w, out=self._wg[: 12 * c.m].reshape(4, 3, c.m))
            lam_c = lam[c.sl]
            if alpha != 0.0:
                numer -= alpha * lam_c
            if gamma != 0.0:
                dx = x - R_prev.take(c.g, mode="clip").reshape(4, 3, c.m)
                numer -= gamma * np.einsum("kij,kij->j", grad, dx)
            denom = np.einsum("kij,kij->j", wg, grad)
            if gamma != 0.0:
                denom *= 1.0 + gamma
            denom += alpha
            if denom.min(initial=1.0) > 0.0:
                dlam = np.divide(numer, denom, out=numer)
            else:
                ok = denom > 0.0
                dlam = np.where(ok, numer / np.where(ok, denom, 1.0), 0.0)
            lam_c += dlam
            wg *= dlam
            x += wg
            R[c.g] = x.reshape(-1)

    def _tethers(self, P: F, slack: float) -> int:
        """Unilateral long range attachments: |x_i - x_anchor| <= slack * rest (Kim 2012)."""
        t = self.model.tethers
        d = P[:, t.particle] - P[:, t.anchor]
        length = np.sqrt(np.einsum("ij,ij->j", d, d))
        over = length - slack * t.rest
        taut = np.flatnonzero(over > 0.0)
        if taut.size:
            P[:, t.particle[taut]] -= d[:, taut] * (over[taut] / length[taut])
        return int(taut.size)


def _vertex_normals_t(X: F, triangles: NDArray[np.int64]) -> F:
    """Area-weighted unit vertex normals of component-major positions X (3, N), shape (3, N)."""
    a, b, c = X[:, triangles[:, 0]], X[:, triangles[:, 1]], X[:, triangles[:, 2]]
    u, w = b - a, c - a
    fn = np.stack([u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]])
    n = X.shape[1]
    out = np.empty_like(X)
    flat = triangles.reshape(-1)
    for k in range(3):
        out[k] = np.bincount(flat, weights=np.repeat(fn[k], 3), minlength=n)
    length = np.sqrt((out * out).sum(axis=0))
    return out / np.where(length > 0.0, length, 1.0)
