"""A plain per-constraint loop of the same method: the yardstick for tests and benchmarks.

This is the seed's way of writing the solver (a Python loop over constraints, numpy 3-vectors per
constraint), visiting constraints in the same colored order as the vectorized backends. Since the
constraints of one color share no particle, a sequential sweep in that order equals the colored
vectorized solve; the tests check that to 1e-12. It is far too slow for real use.

The formulas are written out here independently of :mod:`pbdcloth.constraints`, from the papers
(Müller 2006 eq. 10-11 for distances; the dihedral angle and its gradient after Bridson 2003;
Macklin 2016 eq. 18 for XPBD; Müller 2008 for the hierarchical pass; Provot 1995 for the strain
limit). Per-constraint stiffness scales s (PBD: min(1, s k'); XPBD:
compliance alpha / s), stitches (closing at the model's stitch speed) and soft pins
(x += k' (t - x)) follow :mod:`pbdcloth.cloth.attributes`, :mod:`pbdcloth.constraints.stitch`
and :mod:`pbdcloth.constraints.softpin`'s definitions, one constraint at a time.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from ..cloth.attributes import contact_scales
from ..cloth.hierarchy import HierarchyLevel
from ..cloth.model import ClothModel, DistanceFamily
from ..cloth.state import ClothState
from ..colliders.base import ClothContactCollider, Collider
from ..colliders.response import ContactBuffer, apply_restitution, project_contacts
from ..constraints.hierarchy import DEADBAND as HIERARCHY_DEADBAND
from ..constraints.hierarchy import PROBE_REACH, level_sweeps, sweep_tolerance
from ..constraints.strain_limit import limit_target, sweep_margin
from ..portable import dot, norm
from ..settings import ClothSettings, Model
from .base import Control, FrameStats, pbd_stiffness

F = NDArray[np.float64]


def _hinge_angle_gradient(x1: F, x2: F, x3: F, x4: F) -> tuple[float, list[F]] | None:
    e = x2 - x1
    a = x3 - x1
    b = x4 - x1
    n1 = np.cross(e, a)
    n2 = np.cross(b, e)
    n1sq = float(dot(n1, n1))
    n2sq = float(dot(n2, n2))
    elen = math.sqrt(float(dot(e, e)))
    if n1sq <= 1e-30 or n2sq <= 1e-30 or elen == 0.0:
        return None
    theta = math.atan2(-float(dot(n1, b)) * elen, float(dot(n1, n2)))
    m1 = n1 / n1sq
    m2 = n2 / n2sq
    g3 = -elen * m1
    g4 = -elen * m2
    g2 = (float(dot(a, e)) / elen) * m1 + (float(dot(b, e)) / elen) * m2
    g1 = -(g2 + g3 + g4)
    return theta, [g1, g2, g3, g4]


def _project_unilateral(P: F, fam: DistanceFamily | HierarchyLevel, trigger: float,
                        target: float, sliding: NDArray[np.bool_] | None = None,
                        normals: F | None = None, tolerance: float | None = None) -> int:
    """One sweep over ``fam``'s distances in order: where |x_i - x_j| > trigger d0,
    C = |x_i - x_j| - target d0 leaves, x_i -= w_i / (w_i + w_j) C n,
    x_j += w_j / (w_i + w_j) C n (the hierarchy's coarse levels, trigger = target = the
    slack; the strain limit, target below trigger). An end marked ``sliding`` (the strain
    limit: touched by a collider earlier in the substep) keeps none of its move along -n, its
    contact's outward normal in ``normals``: dx <- dx - min(0, dx . n) n. Returns how many
    were shortened (with a ``tolerance``: how many were more than ``tolerance`` d0 past
    trigger d0)."""
    shortened = 0
    for c in range(fam.count):
        i, j = int(fam.i[c]), int(fam.j[c])
        d = P[i] - P[j]
        length = math.sqrt(float(dot(d, d)))
        rest = float(fam.rest[c])
        excess = length - trigger * rest
        if excess <= 0.0 or length < 1e-12:
            continue
        step = d * ((length - target * rest) / length)
        if sliding is None or normals is None:
            P[i] = P[i] - fam.wi_frac[c] * step
            P[j] = P[j] + fam.wj_frac[c] * step
        else:
            for k, move in ((i, -(fam.wi_frac[c] * step)), (j, fam.wj_frac[c] * step)):
                if sliding[k]:
                    n = normals[k]
                    move = move - n * min(float(dot(move, n)), 0.0)
                P[k] = P[k] + move
        if tolerance is None or excess > tolerance * rest:
            shortened += 1
    return shortened


def _wrap(angle: float) -> float:
    return math.pi - math.fmod(math.pi - angle, 2.0 * math.pi) if abs(angle) > math.pi else angle


class ReferenceBackend:
    """Per-constraint loop backend (slow). Same interface as the numpy backend."""

    name = "reference"

    def __init__(self, model: ClothModel) -> None:
        self.model = model
        self.contacts = ContactBuffer(model.particle_count)
        self._soft: tuple[F | None, F | None] = (None, None)

    def step(self, state_in: ClothState, state_out: ClothState, control: Control,
             dt: float) -> FrameStats:
        """One frame ``dt`` [s] of ``control.settings.substeps`` substeps: reads ``state_in``
        (not modified) and the control, writes new position and velocity arrays to
        ``state_out``."""
        self._soft = (control.soft_start, control.soft_end)
        x, v, stats = self._frame(state_in.positions, state_in.velocities, control.settings, dt,
                                  control.pin_start, control.pin_end, control.colliders)
        state_out.positions, state_out.velocities = x, v
        return stats

    def _hierarchy(self, P: F, slack: float, most: int, tolerance: float) -> None:
        """Müller 2008: each coarse level (coarsest first) as unilateral distances with the
        level's masses (swept until no constraint is more than ``tolerance`` d0 past the slack,
        at most ``level_sweeps`` times, at most ``most``; once with some particle held), then
        its corrections interpolated to the finer level's other particles,
        x_f = X_f + sum_k w_fk (x_pk - X_pk). The particles marked in
        ``self.contacts`` stay where they were (in the predict: those that touched a collider
        in the frame's last substep or lie within PROBE_REACH thicknesses of one; in a contact
        round: those in contact this substep)."""
        touching = np.flatnonzero(self.contacts.active)
        held = P[touching].copy()
        start = P.copy()
        sweeps = level_sweeps(self.model.hierarchy, self.model.stretch.count,
                              1 if touching.size else most)
        for level, count in zip(reversed(self.model.hierarchy.levels), sweeps):
            for _ in range(count):
                if not _project_unilateral(P, level, slack, slack, tolerance=tolerance):
                    break
            for row, f in enumerate(level.fine):
                moved = start[f].copy()
                for parent, weight in zip(level.parents[row], level.weights[row]):
                    moved += weight * (P[parent] - start[parent])
                P[f] = moved
        P[touching] = held

    def _limit_and_stitches(self, P: F, X: F, settings: ClothSettings, h: float,
                            stitch_lam: tuple[F, F]) -> None:
        """Provot 1995: sweeps over the mesh edges in colored order, each followed by the
        stitches, until a sweep after the stitches' first pass shortens none, at most
        ``effective_strain_limit_passes``; an edge longer than (1 + limit) d0 is shortened to
        the target t d0 (``limit_target``), its ends moving by w_i / (w_i + w_j) and
        w_j / (w_i + w_j). Without the limit, the stitches once."""
        limit = settings.effective_strain_limit
        sewn = self.model.stitches.count + self.model.triangle_stitches.count > 0
        if limit <= 0.0:
            if sewn:
                self._stitches(P, X, h, stitch_lam)
            return
        trigger = 1.0 + limit
        target = limit_target(limit, sweep_margin(settings.self_collision))
        sliding = None
        if settings.contact_sliding:  # touched, by a surface slower than a thickness per substep
            c = self.contacts
            sliding = [bool(c.active[k]) and abs(float(dot(c.surface_velocity[k], c.normal[k])))
                       * h < settings.thickness for k in range(self.model.particle_count)]
        for sweep in range(settings.effective_strain_limit_passes):
            shortened = _project_unilateral(P, self.model.stretch, trigger, target,
                                            None if sliding is None else np.array(sliding),
                                            self.contacts.normal)
            if shortened == 0 and (not sewn or sweep > 0):
                return
            if sewn:
                self._stitches(P, X, h, stitch_lam)

    def _frame(
        self, x: F, v: F, settings: ClothSettings, dt: float, pin_start: F, pin_end: F,
        colliders: Sequence[Collider],
    ) -> tuple[F, F, FrameStats]:
        model = self.model
        n_sub = settings.substeps
        h = dt / n_sub
        X = x.copy()
        V = v.copy()
        w = model.inv_mass
        free = w > 0.0
        g = np.asarray(settings.gravity)
        decay = math.exp(-settings.damping * h)
        xpbd = settings.model == Model.XPBD
        rest_speed = 2.0 * norm(g) * h
        t_scale, f_scale = contact_scales(model.point_attributes)
        if any(c != 0.0 for c in settings.wind):
            raise NotImplementedError("the reference loop has no wind")
        if settings.self_collision:
            raise NotImplementedError(
                "the reference loop has no self-collision; use the numpy backend")
        self.contacts.clear()
        for s in range(n_sub):
            a0, a1 = s / n_sub, (s + 1) / n_sub
            V *= decay
            V[free] += h * g
            P = X + h * V
            if model.pinned.size:
                P[model.pinned] = pin_start + a1 * (pin_end - pin_start) if a1 < 1.0 else pin_end
            if settings.hierarchy and model.hierarchy.levels:
                probe = X.copy()
                for collider in colliders:
                    if not isinstance(collider, ClothContactCollider):
                        project_contacts(probe, X, free, collider, a0, a1, h,
                                         PROBE_REACH * settings.thickness, 0.0, 0.0,
                                         self.contacts, False, thickness_scale=t_scale)
                meshes = any(isinstance(c, ClothContactCollider) for c in colliders)
                self._hierarchy(P, settings.hierarchy_slack * (1.0 + HIERARCHY_DEADBAND),
                                1 if meshes else settings.hierarchy_sweeps,
                                sweep_tolerance(settings.effective_strain_limit))
            soft_target = self._soft_target(a1)
            V_pred = V.copy()
            self.contacts.clear()
            lams = {"stretch": np.zeros(model.stretch.count), "shear": np.zeros(model.shear.count),
                    "bend": np.zeros(model.bend.count)}
            stitch_lam = (np.zeros(model.stitches.count), np.zeros(model.triangle_stitches.count))
            for _ in range(settings.iterations):
                for name, fam, k, alpha in (
                    ("stretch", model.stretch, settings.stretch_stiffness,
                     settings.stretch_compliance),
                    ("shear", model.shear, settings.shear_stiffness, settings.shear_compliance),
                ):
                    kk = pbd_stiffness(k, settings.iterations)
                    at = alpha / (h * h)
                    lam = lams[name]
                    for c in range(fam.count):
                        sc = 1.0 if fam.scale is None else float(fam.scale[c])
                        i, j = int(fam.i[c]), int(fam.j[c])
                        wi, wj = w[i], w[j]
                        d = P[i] - P[j]
                        length = norm(d)
                        if length < 1e-12 or wi + wj == 0.0:
                            continue
                        n = d / length
                        cval = length - fam.rest[c]
                        if xpbd:
                            if sc * (wi + wj) + at == 0.0:
                                continue
                            dlam = (-sc * cval - at * lam[c]) / (sc * (wi + wj) + at)
                            lam[c] += dlam
                            P[i] += wi * dlam * n
                            P[j] -= wj * dlam * n
                        else:
                            ks = min(1.0, kk * sc)
                            P[i] -= wi / (wi + wj) * ks * cval * n
                            P[j] += wj / (wi + wj) * ks * cval * n
                bend = model.bend
                kb = pbd_stiffness(settings.bend_stiffness, settings.iterations)
                atb = settings.bend_compliance / (h * h)
                lam = lams["bend"]
                for c in range(bend.count):
                    sc = 1.0 if bend.scale is None else float(bend.scale[c])
                    q = [int(k) for k in bend.quads[c]]
                    res = _hinge_angle_gradient(*(P[k] for k in q))
                    if res is None:
                        continue
                    theta, grads = res
                    cval = _wrap(theta - bend.rest_angle[c])
                    denom = sum(w[k] * float(dot(gk, gk)) for k, gk in zip(q, grads))
                    if xpbd:
                        if sc * denom + atb <= 0.0:
                            continue
                        dlam = (-sc * cval - atb * lam[c]) / (sc * denom + atb)
                        lam[c] += dlam
                        for k, gk in zip(q, grads):
                            P[k] += w[k] * dlam * gk
                    elif denom > 0.0:
                        step = -min(1.0, kb * sc) * cval / denom
                        for k, gk in zip(q, grads):
                            P[k] += w[k] * step * gk
                self._limit_and_stitches(P, X, settings, h, stitch_lam)
                self._tethers(P, settings)
                soft = model.soft_pins
                for c in range(soft.count):
                    kp = 1.0 - (1.0 - float(soft.weight[c])) ** (1.0 / settings.iterations)
                    i = int(soft.particle[c])
                    P[i] += kp * (soft_target[c] - P[i])
                self._collide(P, X, free, colliders, settings, a0, a1, h, t_scale, f_scale)
                if colliders and model.hierarchy.levels and not any(
                        isinstance(c, ClothContactCollider) for c in colliders):
                    for _ in range(settings.effective_contact_rounds):
                        # a contact round: the hierarchical pass with the particles in contact
                        # held, the strain limit, stitches, tethers, the colliders again
                        self._hierarchy(P, settings.hierarchy_slack * (1.0 + HIERARCHY_DEADBAND),
                                        settings.hierarchy_sweeps,
                                        sweep_tolerance(settings.effective_strain_limit))
                        self._limit_and_stitches(P, X, settings, h, stitch_lam)
                        self._tethers(P, settings)
                        self._collide(P, X, free, colliders, settings, a0, a1, h, t_scale,
                                      f_scale)
            V = (P - X) / h
            if colliders:
                apply_restitution(V, V_pred, self.contacts, settings.restitution, rest_speed)
            X = P
        return X, V, FrameStats(substeps=n_sub, contacts=self.contacts.count)

    def _stitches(self, P: F, X: F, h: float, stitch_lam: tuple[F, F]) -> None:
        """Stitches (closing at the model's stitch speed; XPBD where compliant), then triangle
        stitches, one constraint at a time, in place on P (N, 3)."""
        model = self.model
        w = model.inv_mass
        st = model.stitches
        for c in range(st.count):
            i, j = int(st.i[c]), int(st.j[c])
            wi, wj = w[i], w[j]
            a = 0.0 if st.compliance is None else float(st.compliance[c])
            target = float(st.rest[c]) if a > 0.0 else max(
                float(st.rest[c]), norm(X[i] - X[j])
                - model.stitch_speed * h)
            d = P[i] - P[j]
            length = norm(d)
            if st.compliance is not None:  # XPBD, multipliers from 0 each substep
                at = a / (h * h)
                if wi + wj + at <= 0.0:
                    continue
                dl = (-(length - target) - at * stitch_lam[0][c]) / (wi + wj + at)
                stitch_lam[0][c] += dl
                n = d / max(length, 1e-12)
                P[i] += wi * dl * n
                P[j] -= wj * dl * n
                continue
            if wi + wj == 0.0 or length < 1e-12:
                continue
            corr = (length - target) / length * d
            P[i] -= wi / (wi + wj) * corr
            P[j] += wj / (wi + wj) * corr
        ts = model.triangle_stitches
        for c in range(ts.count):
            p_, a_, b_, c_ = (int(k) for k in ts.members[c])
            u, vv, ww = (float(k) for k in ts.barycentric[c])
            wts = [w[p_], u * u * w[a_], vv * vv * w[b_], ww * ww * w[c_]]
            a = 0.0 if ts.compliance is None else float(ts.compliance[c])
            q0 = u * X[a_] + vv * X[b_] + ww * X[c_]
            target = float(ts.rest[c]) if a > 0.0 else max(
                float(ts.rest[c]), norm(X[p_] - q0) - ts.speed * h)
            d = P[p_] - (u * P[a_] + vv * P[b_] + ww * P[c_])
            length = norm(d)
            if ts.compliance is not None:
                at = a / (h * h)
                if sum(wts) + at <= 0.0:
                    continue
                dl = (-(length - target) - at * stitch_lam[1][c]) / (sum(wts) + at)
                stitch_lam[1][c] += dl
                n = d / max(length, 1e-12)
                P[p_] += w[p_] * dl * n
                P[a_] -= u * w[a_] * dl * n
                P[b_] -= vv * w[b_] * dl * n
                P[c_] -= ww * w[c_] * dl * n
                continue
            if sum(wts) == 0.0 or length < 1e-12:
                continue
            corr = (length - target) / sum(wts) / length * d
            P[p_] -= w[p_] * corr
            P[a_] += u * w[a_] * corr
            P[b_] += vv * w[b_] * corr
            P[c_] += ww * w[c_] * corr

    def _tethers(self, P: F, settings: ClothSettings) -> None:
        """Tethers, one at a time, in place on P (N, 3)."""
        if settings.tethers:
            t = self.model.tethers
            for c in range(t.count):
                i, a = int(t.particle[c]), int(t.anchor[c])
                d = P[i] - P[a]
                length = norm(d)
                over = length - settings.tether_slack * t.rest[c]
                if over > 0.0:
                    P[i] -= d * (over / length)

    def _collide(self, P: F, X: F, free: np.ndarray, colliders: Sequence[Collider],
                 settings: ClothSettings, a0: float, a1: float, h: float, t_scale: F | None,
                 f_scale: F | None) -> None:
        """The colliders in their order, with friction, in place on P (N, 3)."""
        model = self.model
        for collider in colliders:
            if isinstance(collider, ClothContactCollider):
                collider.project_cloth(P.T, X.T, model.inv_mass, model.topology.triangles.T,
                                       a0, a1, h, settings.thickness, settings.mu_static,
                                       settings.friction, self.contacts,
                                       thickness_scale=t_scale, friction_scale=f_scale)
                continue
            project_contacts(P, X, free, collider, a0, a1, h, settings.thickness,
                             settings.mu_static, settings.friction, self.contacts,
                             thickness_scale=t_scale, friction_scale=f_scale)

    def _soft_target(self, a1: float) -> F:
        """The soft pins' targets (S, 3) at ``a1`` of the frame (rest positions without any)."""
        start, end = self._soft
        if start is None or end is None:
            return self.model.mesh.positions[self.model.soft_pins.particle]
        return start + a1 * (end - start) if a1 < 1.0 else end
