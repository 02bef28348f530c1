"""Contact response against colliders, shared by every collider type.

Position level, once per solver iteration and collider (first, with continuous collision on,
the particles a moving collider would pass over are moved to where their path met it,
:mod:`pbdcloth.colliders.continuous`) (projected last, after the cloth's own
constraints, so particles end each iteration outside the obstacles):

1. Project: a particle closer than ``thickness`` to the surface (phi < thickness, found by
   ``Collider.near``) moves along the outward normal n by the penetration depth
   d = thickness - phi (Müller 2006, section 3.5; the seed's SDF push-out). Points where the
   collider gives a zero normal (no known way out, e.g. deeper than an SDF's band) are skipped.
2. Friction, Coulomb in position form (Macklin et al. 2014, "Unified Particle Physics", eq. 23-24):
   the slip dx_t is the tangential part of the particle's motion over the substep relative to the
   collider's surface. The contact sticks (dx_t removed) while |dx_t| < mu_s d, otherwise it slides
   with dx_t reduced by min(mu_k d / |dx_t|, 1).

Velocity level, after the substep's velocity update (Müller et al. 2020, "Detailed Rigid Body
Simulation with Extended Position Based Dynamics", eq. 34): a particle that approached the surface
with normal velocity v~_n < 0 leaves it with -e v~_n (e = restitution). Approach speeds below
2 |g| h are treated as resting contact (e = 0) to avoid jitter.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .base import Collider

F = NDArray[np.float64]


class ContactBuffer:
    """Per-particle contact record of the current substep (last contact wins).

    Attributes:
        active: particle touched a collider this substep, shape (N,).
        normal: outward unit normal of that contact, shape (N, 3).
        surface_velocity: velocity of the collider's surface there [m/s], shape (N, 3).
    """

    def __init__(self, particle_count: int) -> None:
        self.active = np.zeros(particle_count, dtype=bool)
        self.normal = np.zeros((particle_count, 3))
        self.surface_velocity = np.zeros((particle_count, 3))

    def clear(self) -> None:
        self.active[:] = False

    @property
    def count(self) -> int:
        return int(np.count_nonzero(self.active))


def project_contacts(
    p: F,
    x_prev: F,
    free: NDArray[np.bool_],
    collider: Collider,
    alpha0: float,
    alpha1: float,
    h: float,
    thickness: float,
    mu_static: float,
    mu_kinetic: float,
    contacts: ContactBuffer,
    continuous: bool = False,
    *,
    thickness_scale: F | None = None,
    friction_scale: F | None = None,
) -> int:
    """Push particles of ``p`` (N, 3, modified in place) out of one collider, with friction.

    ``x_prev`` are the positions at the start of the substep, ``free`` marks particles with
    non-zero inverse mass, ``alpha0``/``alpha1`` the substep's start and end inside the frame.
    With ``continuous`` the collider's :meth:`~pbdcloth.colliders.base.Collider.sweep` first
    moves the particles it would pass over back to where their path met it
    (:mod:`.continuous`). Returns the number of particles in contact.

    Per-point contact scales (:mod:`pbdcloth.cloth.attributes`), (N,) each or ``None``:
    particle i keeps ``thickness * thickness_scale[i]`` from the surface and its coefficients
    are ``mu_static * friction_scale[i]``, ``mu_kinetic * friction_scale[i]``. The collider is
    asked for the points within the largest of those thicknesses, then each point's distance is
    compared with its own (``t s_i <= t max(s)`` in floating point too, so none is lost).
    """
    own: F | None = None
    band = thickness
    if thickness_scale is not None:
        own = thickness * thickness_scale
        if own.size:
            band = thickness * float(thickness_scale.max())
    if continuous:
        moved, entry = collider.sweep(x_prev, p, alpha0, alpha1,
                                      thickness if own is None else own)
        if moved.size:
            keep = free[moved]
            p[moved[keep]] = entry[keep]
    idx, phi, normal = collider.near(p, alpha1, band)
    if own is not None and idx.size:
        inside = np.flatnonzero(phi < own[idx])
        if inside.size < idx.size:
            idx, phi, normal = idx[inside], phi[inside], normal[inside]
    if idx.size == 0:
        return 0
    # Work component-major, (3, M): the solver's positions are (3, N) arrays underneath ``p``,
    # so gathering and scattering whole rows is contiguous (row-wise (M, 3) indexing of the
    # transposed view costs several times more).
    n = np.ascontiguousarray(normal.T)
    # Pinned particles stay; a zero normal means the collider knows no way out here (e.g. a
    # particle deeper inside a signed distance field than its narrow band): pushing or braking
    # it would be arbitrary.
    keep = free[idx] & (np.einsum("ij,ij->j", n, n) > 0.0)
    if not keep.all():
        idx, phi, n = idx[keep], phi[keep], n[:, keep]
        if idx.size == 0:
            return 0
    d = (thickness if own is None else own[idx]) - phi
    pt = p.T
    q = pt[:, idx] + d * n
    surface = np.asarray(collider.displacement(q.T, alpha0, alpha1)).T
    if mu_kinetic > 0.0 or mu_static > 0.0:
        mu_s: float | F = mu_static
        mu_k: float | F = mu_kinetic
        if friction_scale is not None:
            scale_i = friction_scale[idx]
            mu_s, mu_k = mu_static * scale_i, mu_kinetic * scale_i
        slip = (q - x_prev.T[:, idx]) - surface
        slip -= np.einsum("ij,ij->j", slip, n) * n
        slip_len = np.sqrt(np.einsum("ij,ij->j", slip, slip))
        stick = slip_len < mu_s * d
        with np.errstate(divide="ignore", invalid="ignore"):
            slide = np.minimum(mu_k * d / slip_len, 1.0)
        scale = np.where(stick, 1.0, np.where(slip_len > 0.0, slide, 0.0))
        q -= scale * slip
    pt[:, idx] = q
    contacts.active[idx] = True
    contacts.normal[idx] = n.T
    contacts.surface_velocity[idx] = surface.T / h
    return int(idx.size)


def apply_restitution(
    v: F, v_predicted: F, contacts: ContactBuffer, restitution: float, rest_speed: float
) -> None:
    """Set the normal velocity of contacting particles from their approach velocity, in place.

    ``v_predicted`` is the velocity before the constraint solve; ``rest_speed`` the approach speed
    below which a contact counts as resting (no bounce).
    """
    idx = np.flatnonzero(contacts.active)
    if idx.size == 0:
        return
    n = contacts.normal[idx]
    vs = contacts.surface_velocity[idx]
    vn_before = np.einsum("ij,ij->i", v_predicted[idx] - vs, n)
    vn_now = np.einsum("ij,ij->i", v[idx] - vs, n)
    approaching = vn_before < 0.0
    e = np.where(-vn_before > rest_speed, restitution, 0.0)
    target = np.where(approaching, -e * vn_before, vn_now)
    # Approaching contacts leave with -e v~_n; this also removes the spurious separation speed
    # that the push-out alone would give (d / h). Other contacts keep their velocity.
    v[idx] += ((target - vn_now)[:, None]) * n
