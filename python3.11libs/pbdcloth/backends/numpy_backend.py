"""The numpy backend: the reference substep loop, one whole-array operation per color.

Positions are held component-major, shape (3, N), during a frame, so that gathering the
particles of a color gives three contiguous rows and the constraint math
(:mod:`pbdcloth.constraints`) runs on flat arrays.

The substep (Müller et al. 2006, algorithm 1; Macklin et al. 2016, algorithm 1):

1. predict: v = exp(-damping h) v + h (g + wind load) on free particles; p = x + h v;
   pinned particles move to their targets, interpolated linearly through the frame; then the
   hierarchical pass (:mod:`pbdcloth.constraints.hierarchy`) when on (with self-collision on:
   the velocity clamp before, the broad phase after, and no hierarchical pass).
2. project ``iterations`` times: stretch, shear and bend colors (Gauss-Seidel, in colored order),
   the strain limit's sweeps over the stretch colors (constraints/strain_limit.py), each
   followed by the stitches (constraints/stitch.py; without the limit the stitches once), then
   tethers, soft pins (constraints/softpin.py), then
   colliders (last, so particles end each iteration outside obstacles), then the contact
   rounds (``contact_rounds``: the hierarchical pass with the particles in contact held, then
   the strain limit, stitches, tethers and colliders again; also with self-collision on, their
   strain limit then not capped), then self-collision when on
   (selfcollision/stage.py, which also clamps the predicted velocity).
3. update: v = (p - x) / h, restitution on contacts, x = p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..arrays import F, I
from ..cloth.attributes import contact_scales
from ..cloth.mesh import vertex_normals_t
from ..cloth.model import ClothModel
from ..cloth.state import ClothState
from ..colliders.base import ClothContactCollider
from ..colliders.response import ContactBuffer, apply_restitution, project_contacts
from ..constraints.batches import CHUNK
from ..constraints.bend import BendWorkspace, bend_colors, project_bend_pbd, project_bend_xpbd
from ..constraints.distance import (
    DistanceWorkspace,
    distance_colors,
    distance_inverse_denominators,
    project_distance_pbd,
    project_distance_xpbd,
)
from ..constraints.hierarchy import (
    PROBE_REACH,
    hierarchy_batches,
    level_sweeps,
    project_hierarchy,
    sweep_tolerance,
)
from ..constraints.softpin import project_soft_pins, soft_pin_stiffness
from ..constraints.stitch import (
    project_stitches,
    project_triangle_stitches,
    triangle_stitch_colors,
)
from ..constraints.strain_limit import project_strain_limit, sliding_particles, sweep_margin
from ..constraints.tether import project_tethers
from ..portable import dot, norm
from ..selfcollision.stage import SelfCollision
from ..selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from ..settings import ClothSettings, Model
from .base import Control, FrameStats, pbd_stiffness

__all__ = ["NumpyBackend"]


@dataclass(frozen=True)
class _FrameConstants:
    """The constants of one frame's substeps, from the settings and the substep ``h`` [s]."""

    h: float
    decay: float
    """exp(-damping h): the velocity kept per substep."""
    gravity: F
    """(3, 1) [m/s^2]."""
    wind: F
    """(3,) [m/s^2]."""
    xpbd: bool
    k: tuple[float, float, float]
    """PBD stiffness k' of stretch, shear, bend per iteration."""
    alpha: tuple[float, float, float]
    """XPBD alpha~ = compliance / h^2 of stretch, shear, bend."""
    gamma: tuple[float, float, float]
    """XPBD constraint damping gamma = alpha~ beta h of stretch, shear, bend."""
    inv_denominators: tuple[list[F], list[F]]
    """XPBD distance denominators of stretch and shear (empty for PBD)."""
    rest_speed: float
    """Contacts slower than this [m/s] get no restitution."""
    level_sweeps: list[int]
    """The most sweeps over each coarse level of the hierarchical pass, coarsest first."""
    sweep_tolerance: float
    """A level's sweeps stop when no constraint is this far past its slack [1, of d0]."""


class NumpyBackend:
    """Steps a :class:`~pbdcloth.cloth.model.ClothModel` with numpy; bit-for-bit deterministic.

    During a frame positions are component-major (3, N): each color gathers its particles with
    one ``take`` and writes them back with one indexed assignment (no two constraints of a color
    share a particle, so no write is lost).
    """

    name = "numpy"

    def __init__(self, model: ClothModel,
                 tuning: SelfCollisionTuning = DEFAULT_TUNING) -> None:
        self.model = model
        self.tuning = tuning
        n = model.particle_count
        self._stretch = distance_colors(model.stretch, n)
        self._shear = distance_colors(model.shear, n)
        self._bend = bend_colors(model.bend, n)
        self._levels = hierarchy_batches(model.hierarchy, n)
        self._stitch = distance_colors(model.stitches, n)
        self._tri_stitch = triangle_stitch_colors(model.triangle_stitches, n)
        self._stitched: I = np.unique(np.concatenate(
            [model.stitches.i, model.stitches.j,
             model.triangle_stitches.members.reshape(-1)]).astype(np.intp))
        """Every particle a stitch or triangle stitch moves."""
        self._stitch_lam = (np.zeros(model.stitches.count),
                            np.zeros(model.triangle_stitches.count))
        self._soft_k: F = np.zeros(0)
        self._soft_target: F = np.zeros((3, 0))
        self._distance_work = DistanceWorkspace(CHUNK)
        self._bend_work = BendWorkspace(CHUNK)
        self._free = model.inv_mass > 0.0
        self._free_idx: I = np.flatnonzero(self._free)
        self.contacts = ContactBuffer(n)
        self._lam = (np.zeros(model.stretch.count), np.zeros(model.shear.count),
                     np.zeros(model.bend.count))
        self.self_collision = SelfCollision(model, tuning)
        self._triangles_t: I = np.ascontiguousarray(model.topology.triangles.T, dtype=np.intp)
        self._thickness_scale, self._friction_scale = contact_scales(model.point_attributes)

    def step(self, state_in: ClothState, state_out: ClothState, control: Control,
             dt: float) -> FrameStats:
        """One frame ``dt`` [s] of ``control.settings.substeps`` substeps: reads ``state_in``
        (not modified) and the control, writes new position and velocity arrays to
        ``state_out``."""
        settings = control.settings
        n_sub = settings.substeps
        consts = self._constants(settings, dt / n_sub)
        if self.model.soft_pins.count:
            self._soft_k = soft_pin_stiffness(self.model.soft_pins.weight, settings.iterations)
        selfcol = self.self_collision if settings.self_collision else None
        stats = FrameStats(substeps=n_sub)
        if selfcol is not None:
            selfcol.stats.reset()
        self.contacts.clear()  # nothing of the last frame's contacts carries over
        X = np.array(state_in.positions.T, order="C")
        V = np.array(state_in.velocities.T, order="C")
        for s in range(n_sub):
            a0, a1 = s / n_sub, (s + 1) / n_sub
            P, V_pred = self._predict(X, V, control, consts, a1, selfcol)
            for _ in range(settings.iterations):
                self._project(P, X, control, consts, a0, a1, selfcol, stats)
            X, V = self._update(P, X, V_pred, control, consts)
        stats.contacts = self.contacts.count
        if selfcol is not None:
            stats.extra.update(selfcol.stats.frame_extra())
        state_out.positions = np.ascontiguousarray(X.T)
        state_out.velocities = np.ascontiguousarray(V.T)
        return stats

    # ---------------------------------------------------------------------------------------
    def _predict(self, X: F, V: F, control: Control, consts: _FrameConstants, a1: float,
                 selfcol: SelfCollision | None) -> tuple[F, F]:
        """Predicted positions P = X + h V (pins at their targets at ``a1`` of the frame) and
        the predicted velocity V (updated in place)."""
        settings, h, free_idx = control.settings, consts.h, self._free_idx
        # Damping acts on the velocity carried over, before the external acceleration is added,
        # so a resting cloth feels its full weight.
        if consts.decay != 1.0:
            V *= consts.decay
        if np.any(consts.wind != 0.0):
            normals = vertex_normals_t(X, self.model.topology.triangles)
            load = dot(normals.T, consts.wind) * normals
            V[:, free_idx] += h * (consts.gravity + load[:, free_idx])
        else:
            V[:, free_idx] += h * consts.gravity
        if selfcol is not None:
            selfcol.clamp_velocity(V, h, settings.self_thickness, settings.self_clamp)
        P = X + h * V
        pins = self.model.pinned
        if pins.size:
            start, end = control.pin_start, control.pin_end
            P[:, pins] = (start + a1 * (end - start)).T if a1 < 1.0 else end.T
        if self.model.soft_pins.count:
            self._soft_target = self._soft_targets(control, a1)
        if selfcol is not None:
            selfcol.begin_substep(P, settings.self_thickness, settings.self_clamp)
        if settings.hierarchy and self._levels and selfcol is None:
            # Particles that touched a collider in the last substep or are within PROBE_REACH
            # thicknesses of one at the substep's start stay where the prediction put them:
            # the coarse levels know no obstacles and would pull them in.
            # One sweep per level with a triangle-mesh collider: its collider vertices prop
            # cloth triangles without marking their corners held (with more, a sheet propped
            # by a spike's tip ended 3.7 mm too far above it).
            self._probe_contacts(X, control, consts, a1)
            meshes = any(isinstance(c, ClothContactCollider) for c in control.colliders)
            self._hierarchy_holding_contacts(P, settings.hierarchy_slack,
                                             None if meshes else consts.level_sweeps,
                                             consts.sweep_tolerance)
        self.contacts.clear()
        if consts.xpbd:
            for lam in self._lam:
                lam.fill(0.0)
        for lam in self._stitch_lam:
            lam.fill(0.0)
        return P, V

    def _probe_contacts(self, X: F, control: Control, consts: _FrameConstants,
                        a1: float) -> None:
        """Also mark in ``self.contacts`` the particles at ``X`` (3, N) within PROBE_REACH
        thicknesses (each particle's own, with ``thickness_scale``) of a collider at the
        substep's poses (a projection of a copy: nothing moves)."""
        settings = control.settings
        if not control.colliders:
            return
        probe = X.T.copy()
        a0 = a1 - 1.0 / settings.substeps
        for collider in control.colliders:
            if not isinstance(collider, ClothContactCollider):
                project_contacts(probe, X.T, self._free, collider, a0, a1, consts.h,
                                 PROBE_REACH * settings.thickness, 0.0, 0.0, self.contacts,
                                 False, thickness_scale=self._thickness_scale)

    def _project(self, P: F, X_prev: F, control: Control, consts: _FrameConstants, a0: float, a1: float,
                 selfcol: SelfCollision | None, stats: FrameStats) -> None:
        """One iteration over every constraint family, in place on P: stretch, shear, bend,
        the strain limit, stitches, tethers, soft pins, colliders, contact rounds,
        self-collision."""
        settings = control.settings
        if consts.xpbd:
            for colors, lam, alpha, gamma, inv in zip(
                    (self._stretch, self._shear), self._lam, consts.alpha, consts.gamma,
                    consts.inv_denominators):
                project_distance_xpbd(P, X_prev, colors, lam, alpha, gamma,
                                      self._distance_work, inv)
            project_bend_xpbd(P, X_prev, self._bend, self._lam[2], consts.alpha[2], consts.gamma[2],
                              self._bend_work)
        else:
            project_distance_pbd(P, self._stretch, consts.k[0], self._distance_work)
            project_distance_pbd(P, self._shear, consts.k[1], self._distance_work)
            project_bend_pbd(P, self._bend, consts.k[2], self._bend_work)
        self._limit_and_contacts(P, X_prev, control, consts, a0, a1, stats, in_round=False)
        if control.colliders and self._levels and not any(
                isinstance(c, ClothContactCollider) for c in control.colliders):
            for _ in range(settings.effective_contact_rounds):
                self._contact_round(P, X_prev, control, consts, a0, a1, stats)
        if selfcol is not None:
            selfcol.project(P, X_prev, settings.self_thickness, settings.self_friction)

    def _limit_and_contacts(self, P: F, X_prev: F, control: Control, consts: _FrameConstants,
                            a0: float, a1: float, stats: FrameStats, in_round: bool) -> None:
        """The iteration after the cloth's own constraints: the strain limit with the stitches
        inside its sweeps (with ``contact_sliding``, the particles a collider touched earlier in
        this substep sliding on it; constraints/strain_limit.py), tethers, soft pins (not
        ``in_round``: their stiffness is per iteration), colliders. A contact round's strain
        limit runs ``round_strain_limit_passes`` sweeps at most, an iteration's
        ``effective_strain_limit_passes``."""
        settings = control.settings
        sewn = bool(self._stitch or self._tri_stitch)

        def sew() -> None:
            self._project_stitches(P, X_prev, consts)

        project_strain_limit(P, self._stretch, settings.effective_strain_limit,
                             settings.round_strain_limit_passes if in_round
                             else settings.effective_strain_limit_passes,
                             margin=sweep_margin(settings.self_collision),
                             between=sew if sewn else None, moved=self._stitched,
                             sliding=self._sliding(settings.thickness, consts.h)
                             if settings.contact_sliding else None)
        if sewn and settings.effective_strain_limit <= 0.0:
            sew()
        tethers = self.model.tethers
        if settings.tethers and tethers.count:
            stats.tethers_active = project_tethers(P, tethers.particle, tethers.anchor,
                                                   tethers.rest, settings.tether_slack)
        if not in_round and self.model.soft_pins.count:
            project_soft_pins(P, self.model.soft_pins.particle, self._soft_target, self._soft_k)
        self._collide(P, X_prev, control, consts, a0, a1)

    def _sliding(self, thickness: float, h: float) -> tuple[NDArray[np.bool_], F]:
        """(the particles that slide in the strain limit, their contact normals)
        (:func:`~pbdcloth.constraints.strain_limit.sliding_particles`)."""
        c = self.contacts
        return sliding_particles(c.active, c.normal, c.surface_velocity, thickness, h), c.normal

    def _project_stitches(self, P: F, X_prev: F, consts: _FrameConstants) -> None:
        """The stitches, then the triangle stitches, in place on P."""
        if self._stitch:
            project_stitches(P, X_prev, self._stitch, self.model.stitch_speed * consts.h,
                             self._stitch_lam[0], 1.0 / (consts.h * consts.h))
        if self._tri_stitch:
            project_triangle_stitches(P, X_prev, self._tri_stitch,
                                      self.model.triangle_stitches.speed * consts.h,
                                      self._stitch_lam[1], 1.0 / (consts.h * consts.h))

    def _contact_round(self, P: F, X_prev: F, control: Control, consts: _FrameConstants,
                       a0: float, a1: float, stats: FrameStats) -> None:
        """One contact round: the hierarchical pass with the particles in contact this
        substep held where the colliders put them, then again the strain limit, stitches,
        tethers and colliders (not the soft pins)."""
        self._hierarchy_holding_contacts(P, control.settings.hierarchy_slack,
                                         consts.level_sweeps, consts.sweep_tolerance)
        self._limit_and_contacts(P, X_prev, control, consts, a0, a1, stats, in_round=True)

    def _hierarchy_holding_contacts(self, P: F, slack: float, sweeps: list[int] | None,
                                    tolerance: float) -> None:
        """The hierarchical pass, in place on P, with the particles marked in
        ``self.contacts`` left where they are: up to ``sweeps`` per level with nothing held,
        one per level with some particle held (or ``sweeps`` None). The held particles are
        free on the coarse levels and set back after the pass, so a level swept until it is
        within its slack pulls the cloth around them further from where they end (largest
        strain of the prop scene 3.0 % against 2.5 %; of the cloak's with the contact rounds'
        passes swept, 4.2 % against 2.1 %)."""
        touching = np.flatnonzero(self.contacts.active)
        held = P[:, touching]
        project_hierarchy(P, self._levels, slack, self._distance_work,
                          None if touching.size else sweeps, tolerance)
        P[:, touching] = held

    def _collide(self, P: F, X_prev: F, control: Control, consts: _FrameConstants, a0: float,
                 a1: float) -> None:
        """The colliders in their order, with friction, in place on P."""
        settings = control.settings
        PT, XT = P.T, X_prev.T
        for collider in control.colliders:
            if isinstance(collider, ClothContactCollider):
                collider.project_cloth(P, X_prev, self.model.inv_mass, self._triangles_t, a0, a1,
                                       consts.h, settings.thickness, settings.mu_static,
                                       settings.friction, self.contacts,
                                       thickness_scale=self._thickness_scale,
                                       friction_scale=self._friction_scale)
                continue
            project_contacts(PT, XT, self._free, collider, a0, a1, consts.h, settings.thickness,
                             settings.mu_static, settings.friction, self.contacts,
                             settings.continuous_collision,
                             thickness_scale=self._thickness_scale,
                             friction_scale=self._friction_scale)

    def _soft_targets(self, control: Control, a1: float) -> F:
        """The soft pins' targets (3, S) at ``a1`` of the frame (their rest positions when the
        control carries none)."""
        soft = self.model.soft_pins
        if control.soft_start is None or control.soft_end is None:
            return np.ascontiguousarray(self.model.mesh.positions[soft.particle].T)
        start, end = control.soft_start, control.soft_end
        return np.ascontiguousarray((start + a1 * (end - start)).T if a1 < 1.0 else end.T)

    def _update(self, P: F, X_prev: F, V_pred: F, control: Control,
                consts: _FrameConstants) -> tuple[F, F]:
        """New positions P and velocities (P - X_prev) / h, restitution on contacts."""
        V = (P - X_prev) / consts.h
        if control.colliders and self.contacts.active.any():
            apply_restitution(V.T, V_pred.T, self.contacts, control.settings.restitution,
                              consts.rest_speed)
        return P, V

    def _constants(self, settings: ClothSettings, h: float) -> _FrameConstants:
        """What every substep of a frame with substep ``h`` [s] uses, computed once."""
        it = settings.iterations
        compliance = (settings.stretch_compliance, settings.shear_compliance,
                      settings.bend_compliance)
        alpha = tuple(c / (h * h) for c in compliance)
        gamma = tuple(a * settings.constraint_damping * h for a in alpha)
        xpbd = settings.model == Model.XPBD
        inv: tuple[list[F], list[F]] = ([], [])
        if xpbd:
            inv = (distance_inverse_denominators(self._stretch, alpha[0], gamma[0]),
                   distance_inverse_denominators(self._shear, alpha[1], gamma[1]))
        return _FrameConstants(
            h=h, decay=math.exp(-settings.damping * h),
            gravity=np.asarray(settings.gravity)[:, None], wind=np.asarray(settings.wind),
            xpbd=xpbd,
            k=(pbd_stiffness(settings.stretch_stiffness, it),
               pbd_stiffness(settings.shear_stiffness, it),
               pbd_stiffness(settings.bend_stiffness, it)),
            alpha=(alpha[0], alpha[1], alpha[2]), gamma=(gamma[0], gamma[1], gamma[2]),
            inv_denominators=inv,
            rest_speed=2.0 * norm(settings.gravity) * h,
            level_sweeps=level_sweeps(self.model.hierarchy, self.model.stretch.count,
                                      settings.hierarchy_sweeps),
            sweep_tolerance=sweep_tolerance(settings.effective_strain_limit),
        )
