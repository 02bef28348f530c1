"""Device code of the Warp backend: the substep's kernels and the constraint math they call.

Every function here is the per-constraint (or per-particle) form of the numpy backend's batched
arithmetic: the same formulas, mostly in the same order of operations, so that the two agree to
rounding. Each projection's docstring names the numpy function it mirrors ("Mirrors ..."), and
``tests/test_parity.py`` holds each pair together (float64: 1e-12):

* distances: :mod:`pbdcloth.constraints.distance` (Müller et al. 2006, eq. 10-11; XPBD after
  Macklin, Müller and Chentanez 2016, eq. 18 and 26);
* bending: :mod:`pbdcloth.constraints.bend` (signed dihedral angle by the half-angle atan2, the
  closed-form gradient of Bridson, Marino and Fedkiw 2003);
* tethers: :mod:`pbdcloth.constraints.tether` (Kim, Chentanez and Müller 2012);
* stitches and soft pins: :mod:`pbdcloth.constraints.stitch`, :mod:`pbdcloth.constraints.softpin`;
* contacts: :mod:`pbdcloth.colliders.response` (push-out to the thickness shell, Coulomb friction
  in position form after Macklin et al. 2014, restitution after Müller et al. 2020, eq. 34), the
  analytic shapes of :mod:`pbdcloth.colliders.shapes` and the dense signed distance block of
  :mod:`pbdcloth.colliders.sdf_grid` (trilinear distance and gradient, rigid pose per substep);
* predict and update: :mod:`pbdcloth.backends.numpy_backend` (damping of the carried velocity,
  gravity and the wind load along the area-weighted vertex normals of
  :func:`pbdcloth.cloth.mesh.vertex_normals`, pins interpolated linearly).

Kernels are built by :func:`build_kernels` for one scalar type (``float32`` for speed, ``float64``
to check the math against numpy to ~1e-12): both sets share this one source. Each family has
its own small builder (``_angle_funcs``, ``_particle_kernels``, ``_distance_kernels``, ...) that
takes the precision's :class:`KernelTypes`; Warp reads the builder's local types and constants
when it compiles. Each set lives in its own Warp module, compiled once per device and kept in
Warp's kernel cache.

A colored family is projected one color per launch: the launch covers the constraints
``offset .. offset + dim - 1`` of the colored arrays, which share no particle, so the threads never
write the same particle and the result does not depend on the order in which they run.
"""

# mypy: ignore-errors
# (kernel bodies and annotations are Warp's typed language, checked by Warp's code generator)
# No ``from __future__ import annotations``: Warp reads the kernels' annotations as objects
# (the builders' scalar and vector types).
import functools
from types import SimpleNamespace
from typing import Any, NamedTuple

import warp as wp

from ...colliders.continuous import MARCH_STEPS, OPPOSED
from ...colliders.sdf_grid import MIN_GRADIENT
from ...constraints.bend import DEGENERATE_NORMAL_SQ
from ...constraints.distance import MIN_LENGTH

#: Collider kinds in the analytic shape table (``shape_kind``).
SHAPE_PLANE = 0
SHAPE_SPHERE = 1
SHAPE_CAPSULE = 2
#: A signed distance field collider (its own launch, see ``collide_sdf``).
SHAPE_SDF = 3

PRECISIONS = ("float32", "float64")

PI = 3.141592653589793
TWO_PI = 6.283185307179586


class KernelTypes(NamedTuple):
    """The Warp types of one precision and the module its kernels live in."""

    scalar: Any
    vec3: Any
    vec4: Any
    mat33: Any
    module: str


def kernel_types(precision: str) -> KernelTypes:
    """The scalar, vector and matrix types of ``precision`` ("float32" or "float64")."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    scalar: Any = wp.float32 if precision == "float32" else wp.float64
    return KernelTypes(scalar, wp.types.vector(3, scalar), wp.types.vector(4, scalar),
                       wp.types.matrix((3, 3), scalar), f"pbdcloth_warp_{precision}")


@functools.cache
def build_kernels(precision: str = "float32") -> SimpleNamespace:
    """The substep kernels for scalars of ``precision`` ("float32" or "float64").

    Returns a namespace with the kernels, the records, the ``wp.func``s they share and the
    ``scalar``/``vec3``/``vec4``/``mat33`` types they use. Built once per precision (cached);
    Warp compiles each set once per device on first launch.
    """
    t = kernel_types(precision)
    wp.set_module_options({"enable_backward": False}, module=t.module)
    records = _records(t)
    angle = _angle_funcs(t)
    contact = _contact_funcs(t)
    particle = _particle_funcs(t)
    return SimpleNamespace(
        **t._asdict(), **vars(records), **vars(angle), **vars(contact), **vars(particle),
        **vars(_particle_kernels(t, particle)),
        **vars(_distance_kernels(t, records)),
        **vars(_bend_kernels(t, records, angle)),
        **vars(_tether_kernels(t)),
        **vars(_hierarchy_kernels(t, records)),
        **vars(_attachment_kernels(t, records)),
        **vars(_sdf_kernels(t, records, contact)),
        **vars(_shape_kernels(t, contact)),
    )


# --- constraint records: one load per constraint instead of one per field -----------------------
def _records(t: KernelTypes) -> SimpleNamespace:
    """The constraint and pose records (``wp.struct``) in ``t``'s scalar type."""
    scalar, vec3, vec4, mat33, module = t

    class DistancePbd:
        """A distance constraint for PBD: particles, rest length [m], w_i/(w_i+w_j), w_j/(w_i+w_j),
        stiffness scale (1: none)."""

        i: wp.int32
        j: wp.int32
        rest: scalar
        wi_frac: scalar
        wj_frac: scalar
        scale: scalar

    class DistanceXpbd:
        """A distance constraint for XPBD: particles, rest length [m], inverse masses [1/kg],
        stiffness scale (1: none)."""

        i: wp.int32
        j: wp.int32
        rest: scalar
        wi: scalar
        wj: scalar
        scale: scalar

    class Hinge:
        """A bend constraint: (p1, p2, p3, p4), rest angle [rad], inverse masses [1/kg],
        stiffness scale (1: none)."""

        quad: wp.vec4i
        rest: scalar
        w: vec4
        scale: scalar

    class TriStitch:
        """A point-to-triangle stitch: (p, a, b, c), barycentric (u, v, w), rest length [m],
        inverse masses [1/kg] of p, a, b, c."""

        quad: wp.vec4i
        bary: vec3
        rest: scalar
        w: vec4

    class SdfPose:
        """A rigid pose of an SDF collider at one instant: world -> padded-voxel coordinates
        u = a x + b, the local -> world rotation ``rot`` and translation ``trans`` [m], and
        whether the collider moves during this frame (else its surface has no displacement)."""

        a: mat33
        b: vec3
        rot: mat33
        trans: vec3
        moving: wp.int32

    # (wp.struct takes the class positionally when it is given a module)
    return SimpleNamespace(DistancePbd=wp.struct(DistancePbd, module=module),
                           DistanceXpbd=wp.struct(DistanceXpbd, module=module),
                           Hinge=wp.struct(Hinge, module=module),
                           TriStitch=wp.struct(TriStitch, module=module),
                           SdfPose=wp.struct(SdfPose, module=module))


# --- constraint math ------------------------------------------------------------------------------
def _angle_funcs(t: KernelTypes) -> SimpleNamespace:
    """The dihedral angle, its gradient and the wrap of C: ``hinge_angle``, ``wrap_angle``,
    ``weighted_gradient_norm``."""
    scalar, vec3, vec4, _, module = t
    zero, one = scalar(0.0), scalar(1.0)
    degenerate_sq = scalar(DEGENERATE_NORMAL_SQ)
    pi, two_pi = scalar(PI), scalar(TWO_PI)

    @wp.func(module=module)
    def hinge_angle(x1: vec3, x2: vec3, x3: vec3, x4: vec3):
        """theta, dtheta/dx1..4 and validity of one hinge.

        e = x2 - x1, a = x3 - x1, b = x4 - x1, n1 = e x a, n2 = b x e;
        sin(theta) |n1||n2| = -(n1 . b)|e|, cos(theta) |n1||n2| = n1 . n2,
        theta = 2 atan(s / (sqrt(s^2 + c^2) + c));
        dtheta/dx3 = -|e| n1/|n1|^2, dtheta/dx4 = -|e| n2/|n2|^2,
        dtheta/dx2 = (a.e/|e|) n1/|n1|^2 + (b.e/|e|) n2/|n2|^2, dtheta/dx1 = -(the others).

        Mirrors pbdcloth.constraints.bend.dihedral_angle_and_gradient.
        """
        e = x2 - x1
        a = x3 - x1
        b = x4 - x1
        n1 = wp.cross(e, a)
        n2 = wp.cross(b, e)
        n1sq = wp.dot(n1, n1)
        n2sq = wp.dot(n2, n2)
        elen2 = wp.dot(e, e)
        z = vec3(zero, zero, zero)
        if wp.min(n1sq, n2sq) <= degenerate_sq or elen2 <= zero:
            return zero, z, z, z, z, False
        elen = wp.sqrt(elen2)
        s = -(wp.dot(n1, b) * elen)
        c = wp.dot(n1, n2)
        r = wp.sqrt(s * s + c * c) + c
        theta = zero
        if r != zero:
            theta = scalar(2.0) * wp.atan(s / r)
        elif s > zero:  # r = 0: folded flat onto itself; +-pi by the sign of s, as numpy's
            theta = pi  # 2 atan(s / (r + tiny)) gives (0 for s = 0)
        elif s < zero:
            theta = -pi
        # One division per hinge quantity, then multiplications (cheaper than numpy's
        # element-wise divisions; the same values to rounding).
        m1 = n1 * (one / n1sq)
        m2 = n2 * (one / n2sq)
        inv_elen = one / elen
        g3 = m1 * (-elen)
        g4 = m2 * (-elen)
        g2 = m1 * (wp.dot(a, e) * inv_elen) + m2 * (wp.dot(b, e) * inv_elen)
        g1 = -((g2 + g3) + g4)
        return theta, g1, g2, g3, g4, True

    @wp.func(module=module)
    def wrap_angle(c: scalar) -> scalar:
        """C wrapped to (-pi, pi] where it left that range.

        Mirrors pbdcloth.constraints.bend.wrap_angle.
        """
        if c > pi or c < -pi:
            r = wp.mod(pi - c, two_pi)  # C fmod; numpy's mod is floored: move into [0, 2 pi)
            if r < zero:
                r = r + two_pi
            return pi - r
        return c

    @wp.func(module=module)
    def weighted_gradient_norm(wc: vec4, g1: vec3, g2: vec3, g3: vec3, g4: vec3) -> scalar:
        """sum_k w_k |dtheta/dx_k|^2."""
        return (wc[0] * wp.dot(g1, g1) + wc[1] * wp.dot(g2, g2)) + \
            (wc[2] * wp.dot(g3, g3) + wc[3] * wp.dot(g4, g4))

    return SimpleNamespace(hinge_angle=hinge_angle, wrap_angle=wrap_angle,
                           weighted_gradient_norm=weighted_gradient_norm)


# --- predict, pins, update ------------------------------------------------------------------------
def _particle_funcs(t: KernelTypes) -> SimpleNamespace:
    """Per-particle math: ``vertex_normal`` (for the wind), ``restitution_velocity``."""
    scalar, vec3, _, _, module = t
    zero, one = scalar(0.0), scalar(1.0)

    @wp.func(module=module)
    def vertex_normal(x: wp.array(dtype=vec3), tri_start: wp.array(dtype=wp.int32),
                      tri_list: wp.array(dtype=wp.int32), tris: wp.array(dtype=wp.vec3i),
                      i: int) -> vec3:
        """Area-weighted unit normal of particle i: the incident triangles' cross products
        summed in triangle order, normalised (0 where they cancel).

        Mirrors pbdcloth.cloth.mesh.vertex_normals.
        """
        nsum = vec3(zero, zero, zero)
        for k in range(tri_start[i], tri_start[i + 1]):
            t = tris[tri_list[k]]
            xa = x[t[0]]
            nsum = nsum + wp.cross(x[t[1]] - xa, x[t[2]] - xa)
        length = wp.length(nsum)
        if length > zero:
            nsum = nsum / length
        return nsum

    @wp.func(module=module)
    def restitution_velocity(vel: vec3, v_before: vec3, n: vec3, vs: vec3, restitution: scalar,
                             rest_speed: scalar) -> vec3:
        """The velocity of a contacting particle after restitution: its normal part relative
        to the surface becomes -e v~_n (approaching at more than ``rest_speed``: e =
        ``restitution``, else 0) or stays (separating).

        Mirrors pbdcloth.colliders.response.apply_restitution.
        """
        vn_before = wp.dot(v_before - vs, n)
        vn_now = wp.dot(vel - vs, n)
        e = zero
        if -vn_before > rest_speed:
            e = restitution
        target = vn_now
        if vn_before < zero:
            target = -e * vn_before
        return vel + n * (target - vn_now)

    return SimpleNamespace(vertex_normal=vertex_normal, restitution_velocity=restitution_velocity)


def _particle_kernels(t: KernelTypes, funcs: SimpleNamespace) -> SimpleNamespace:
    """Per-particle kernels: ``predict``, ``pin_targets``, ``update``, ``zero_scalars``."""
    scalar, vec3, _, _, module = t
    zero, one = scalar(0.0), scalar(1.0)
    vertex_normal, restitution_velocity = funcs.vertex_normal, funcs.restitution_velocity

    @wp.kernel(module=module)
    def predict(
        x: wp.array(dtype=vec3),
        v: wp.array(dtype=vec3),
        inv_mass: wp.array(dtype=scalar),
        gravity: vec3,
        wind: vec3,
        use_wind: int,
        tri_start: wp.array(dtype=wp.int32),
        tri_list: wp.array(dtype=wp.int32),
        tris: wp.array(dtype=wp.vec3i),
        h: scalar,
        decay: scalar,
        p: wp.array(dtype=vec3),
        v_pred: wp.array(dtype=vec3),
        contact: wp.array(dtype=wp.int32),
    ):
        """v = decay v, then v += h (g + (wind . n) n) on free particles; p = x + h v; no contact.

        n is the area-weighted vertex normal (sum of the incident triangles' cross products in
        triangle order, then normalised): ``vertex_normal``.
        """
        i = wp.tid()
        vi = v[i] * decay
        if inv_mass[i] > zero:
            acc = gravity
            if use_wind != 0:
                nsum = vertex_normal(x, tri_start, tri_list, tris, i)
                acc = gravity + nsum * wp.dot(wind, nsum)
            vi = vi + acc * h
        v[i] = vi
        v_pred[i] = vi
        p[i] = x[i] + vi * h
        contact[i] = 0

    @wp.kernel(module=module)
    def pin_targets(
        pins: wp.array(dtype=wp.int32),
        start: wp.array(dtype=vec3),
        end: wp.array(dtype=vec3),
        alpha: scalar,
        p: wp.array(dtype=vec3),
    ):
        """Pinned particles at their targets, linear in time through the frame (exact at 1)."""
        k = wp.tid()
        if alpha >= one:
            p[pins[k]] = end[k]
        else:
            p[pins[k]] = start[k] + (end[k] - start[k]) * alpha

    @wp.kernel(module=module)
    def update(
        p: wp.array(dtype=vec3),
        v_pred: wp.array(dtype=vec3),
        h: scalar,
        use_restitution: int,
        contact: wp.array(dtype=wp.int32),
        contact_normal: wp.array(dtype=vec3),
        surface_velocity: wp.array(dtype=vec3),
        restitution: scalar,
        rest_speed: scalar,
        x: wp.array(dtype=vec3),
        v: wp.array(dtype=vec3),
    ):
        """v = (p - x) / h, restitution on contacts (``restitution_velocity``), x = p."""
        i = wp.tid()
        pi_ = p[i]
        vel = (pi_ - x[i]) / h
        if use_restitution != 0 and contact[i] != 0:
            vel = restitution_velocity(vel, v_pred[i], contact_normal[i], surface_velocity[i],
                                       restitution, rest_speed)
        v[i] = vel
        x[i] = pi_

    @wp.kernel(module=module)
    def zero_scalars(a: wp.array(dtype=scalar)):
        a[wp.tid()] = zero

    return SimpleNamespace(predict=predict, pin_targets=pin_targets, update=update,
                           zero_scalars=zero_scalars)


# --- distance constraints -------------------------------------------------------------------------
def _distance_kernels(t: KernelTypes, records: SimpleNamespace) -> SimpleNamespace:
    """``distance_pbd`` and ``distance_xpbd``: one color of a distance family per launch."""
    scalar, vec3, _, _, module = t
    zero, one = scalar(0.0), scalar(1.0)
    min_length = scalar(MIN_LENGTH)
    DistancePbd, DistanceXpbd = records.DistancePbd, records.DistanceXpbd

    @wp.kernel(module=module)
    def distance_pbd(
        p: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistancePbd),
        offset: int,
        k: scalar,
    ):
        """PBD: s = min(1, k' scale) (|d| - d0) / |d|, x_i -= w_i/(w_i+w_j) s d,
        x_j += w_j/(w_i+w_j) s d.

        Mirrors pbdcloth.constraints.distance.project_distance_pbd.
        """
        con = cons[offset + wp.tid()]
        xi = p[con.i]
        xj = p[con.j]
        d = xi - xj
        length = wp.length(d)
        s = (length - con.rest) / wp.max(length, min_length) * wp.min(k * con.scale, one)
        d = d * s
        p[con.i] = xi - d * con.wi_frac
        p[con.j] = xj + d * con.wj_frac

    @wp.kernel(module=module)
    def distance_xpbd(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistanceXpbd),
        lam: wp.array(dtype=scalar),
        offset: int,
        alpha: scalar,
        gamma: scalar,
    ):
        """XPBD: dlambda = (-s C - alpha~ lambda - gamma n.(dx_i - dx_j)) / ((s+gamma)(w_i+w_j) + alpha~),
        x_i += w_i dlambda n, x_j -= w_j dlambda n (s: the constraint's stiffness scale).

        Mirrors pbdcloth.constraints.distance.project_distance_xpbd.
        """
        c = offset + wp.tid()
        con = cons[c]
        i = con.i
        j = con.j
        xi = p[i]
        xj = p[j]
        d = xi - xj
        length = wp.length(d)
        n = d / wp.max(length, min_length)
        lam_c = lam[c]
        numer = (con.rest - length) * con.scale - alpha * lam_c
        if gamma != zero:
            numer = numer - gamma * wp.dot(n, (xi - x_prev[i]) - (xj - x_prev[j]))
        denom = (con.scale + gamma) * (con.wi + con.wj) + alpha
        dlam = zero  # both ends pinned and rigid: nothing moves
        if denom > zero:
            dlam = numer * (one / denom)
        lam[c] = lam_c + dlam
        n = n * dlam
        p[i] = xi + n * con.wi
        p[j] = xj - n * con.wj

    return SimpleNamespace(distance_pbd=distance_pbd, distance_xpbd=distance_xpbd)


# --- bending --------------------------------------------------------------------------------------
def _bend_kernels(t: KernelTypes, records: SimpleNamespace, angle: SimpleNamespace
                  ) -> SimpleNamespace:
    """``bend_pbd`` and ``bend_xpbd``: one color of hinges per launch."""
    scalar, vec3, _, _, module = t
    zero, one = scalar(0.0), scalar(1.0)
    Hinge = records.Hinge
    hinge_angle, wrap_angle = angle.hinge_angle, angle.wrap_angle
    weighted_gradient_norm = angle.weighted_gradient_norm

    @wp.kernel(module=module)
    def bend_pbd(
        p: wp.array(dtype=vec3),
        hinges: wp.array(dtype=Hinge),
        offset: int,
        k: scalar,
    ):
        """PBD: dx_k = -k' w_k C / (sum_l w_l |grad_l|^2) grad_k (Müller 2006, eq. 8).

        Mirrors pbdcloth.constraints.bend.project_bend_pbd.
        """
        hinge = hinges[offset + wp.tid()]
        q = hinge.quad
        x1 = p[q[0]]
        x2 = p[q[1]]
        x3 = p[q[2]]
        x4 = p[q[3]]
        theta, g1, g2, g3, g4, valid = hinge_angle(x1, x2, x3, x4)
        if not valid:
            return
        wc = hinge.w
        denom = weighted_gradient_norm(wc, g1, g2, g3, g4)
        if denom <= zero:
            return
        step = -wp.min(k * hinge.scale, one) * (wrap_angle(theta - hinge.rest) / denom)
        p[q[0]] = x1 + (g1 * wc[0]) * step
        p[q[1]] = x2 + (g2 * wc[1]) * step
        p[q[2]] = x3 + (g3 * wc[2]) * step
        p[q[3]] = x4 + (g4 * wc[3]) * step

    @wp.kernel(module=module)
    def bend_xpbd(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        hinges: wp.array(dtype=Hinge),
        lam: wp.array(dtype=scalar),
        offset: int,
        alpha: scalar,
        gamma: scalar,
    ):
        """XPBD bend: dlambda = (-s C - alpha~ lambda - gamma grad.dx) / ((s+gamma) sum w|grad|^2 + alpha~),
        dx_k = w_k dlambda grad_k (s: the hinge's stiffness scale).

        Mirrors pbdcloth.constraints.bend.project_bend_xpbd.
        """
        c = offset + wp.tid()
        hinge = hinges[c]
        q = hinge.quad
        x1 = p[q[0]]
        x2 = p[q[1]]
        x3 = p[q[2]]
        x4 = p[q[3]]
        theta, g1, g2, g3, g4, valid = hinge_angle(x1, x2, x3, x4)
        if not valid:
            return
        wc = hinge.w
        lam_c = lam[c]
        numer = -wrap_angle(theta - hinge.rest) * hinge.scale - alpha * lam_c
        if gamma != zero:
            gdx = (wp.dot(g1, x1 - x_prev[q[0]]) + wp.dot(g2, x2 - x_prev[q[1]])) + \
                (wp.dot(g3, x3 - x_prev[q[2]]) + wp.dot(g4, x4 - x_prev[q[3]]))
            numer = numer - gamma * gdx
        denom = (hinge.scale + gamma) * weighted_gradient_norm(wc, g1, g2, g3, g4) + alpha
        if denom <= zero:
            return
        dlam = numer / denom
        lam[c] = lam_c + dlam
        p[q[0]] = x1 + (g1 * wc[0]) * dlam
        p[q[1]] = x2 + (g2 * wc[1]) * dlam
        p[q[2]] = x3 + (g3 * wc[2]) * dlam
        p[q[3]] = x4 + (g4 * wc[3]) * dlam

    return SimpleNamespace(bend_pbd=bend_pbd, bend_xpbd=bend_xpbd)


# --- stitches and soft pins -------------------------------------------------------------------------
def _attachment_kernels(t: KernelTypes, records: SimpleNamespace) -> SimpleNamespace:
    """``stitches`` (one color of the stitch family per launch) and ``soft_pins`` (all at once:
    each particle has at most one)."""
    scalar, vec3, _, _, module = t
    one = scalar(1.0)
    min_length = scalar(MIN_LENGTH)
    DistancePbd = records.DistancePbd

    @wp.kernel(module=module)
    def stitches(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistancePbd),
        offset: int,
        closing: scalar,
    ):
        """Target r_h = max(rest, |x_i - x_j| (substep start) - v h); s = (|d| - r_h) / |d|,
        x_i -= w_i/(w_i+w_j) s d, x_j += w_j/(w_i+w_j) s d.

        Mirrors pbdcloth.constraints.stitch.project_stitches.
        """
        con = cons[offset + wp.tid()]
        target = wp.max(con.rest, wp.length(x_prev[con.i] - x_prev[con.j]) - closing)
        xi = p[con.i]
        xj = p[con.j]
        d = xi - xj
        length = wp.length(d)
        d = d * ((length - target) / wp.max(length, min_length))
        p[con.i] = xi - d * con.wi_frac
        p[con.j] = xj + d * con.wj_frac

    @wp.kernel(module=module)
    def soft_pins(
        p: wp.array(dtype=vec3),
        particle: wp.array(dtype=wp.int32),
        start: wp.array(dtype=vec3),
        end: wp.array(dtype=vec3),
        alpha: scalar,
        stiffness: wp.array(dtype=scalar),
    ):
        """x += k' (t - x), t the target at ``alpha`` of the frame (linear, exact at 1).

        Mirrors pbdcloth.constraints.softpin.project_soft_pins.
        """
        k = wp.tid()
        target = end[k]
        if alpha < one:
            target = start[k] + (end[k] - start[k]) * alpha
        i = particle[k]
        x = p[i]
        p[i] = x + (target - x) * stiffness[k]

    TriStitch = records.TriStitch
    zero = scalar(0.0)

    @wp.kernel(module=module)
    def triangle_stitches(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        cons: wp.array(dtype=TriStitch),
        offset: int,
        closing: scalar,
    ):
        """d = x_p - (u x_a + v x_b + w x_c), target max(rest, |d| (substep start) - v h),
        s = (|d| - target) / (w_p + u^2 w_a + v^2 w_b + w^2 w_c); x_p -= w_p s n,
        x_a += u w_a s n, ...

        Mirrors pbdcloth.constraints.stitch.project_triangle_stitches.
        """
        con = cons[offset + wp.tid()]
        q = con.quad
        b = con.bary
        wc = con.w
        d0 = x_prev[q[0]] - ((x_prev[q[1]] * b[0] + x_prev[q[2]] * b[1]) + x_prev[q[3]] * b[2])
        target = wp.max(con.rest, wp.length(d0) - closing)
        xp = p[q[0]]
        xa = p[q[1]]
        xb = p[q[2]]
        xc = p[q[3]]
        d = xp - ((xa * b[0] + xb * b[1]) + xc * b[2])
        length = wp.length(d)
        wsum = ((wc[0] + b[0] * b[0] * wc[1]) + b[1] * b[1] * wc[2]) + b[2] * b[2] * wc[3]
        if wsum <= zero:
            return
        d = d * ((length - target) / wp.max(length, min_length) / wsum)
        p[q[0]] = xp - d * wc[0]
        p[q[1]] = xa + d * (b[0] * wc[1])
        p[q[2]] = xb + d * (b[1] * wc[2])
        p[q[3]] = xc + d * (b[2] * wc[3])

    DistanceXpbd = records.DistanceXpbd

    @wp.kernel(module=module)
    def stitches_xpbd(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistanceXpbd),
        compliance: wp.array(dtype=scalar),
        lam: wp.array(dtype=scalar),
        offset: int,
        closing: scalar,
        inv_h2: scalar,
        fresh: int,
    ):
        """Sewn compliant stitches toward rest, the others toward max(rest, |x_i - x_j|
        (substep start) - v h); dlambda = (-C - alpha~ lambda) / (w_i + w_j + alpha~),
        x_i += w_i n dlambda, x_j -= w_j n dlambda (lambda from 0 when ``fresh``).

        Mirrors pbdcloth.constraints.stitch.project_stitches.
        """
        k = offset + wp.tid()
        con = cons[k]
        a = compliance[k]
        target = con.rest
        if a <= zero:
            target = wp.max(con.rest, wp.length(x_prev[con.i] - x_prev[con.j]) - closing)
        xi = p[con.i]
        xj = p[con.j]
        d = xi - xj
        length = wp.length(d)
        at = a * inv_h2
        lk = lam[k]
        if fresh != 0:
            lk = zero
        den = (con.wi + con.wj) + at
        if den <= zero:
            lam[k] = lk
            return
        dlam = (-(length - target) - at * lk) / den
        lam[k] = lk + dlam
        n = d * (dlam / wp.max(length, min_length))
        p[con.i] = xi + n * con.wi
        p[con.j] = xj - n * con.wj

    @wp.kernel(module=module)
    def triangle_stitches_xpbd(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        cons: wp.array(dtype=TriStitch),
        compliance: wp.array(dtype=scalar),
        lam: wp.array(dtype=scalar),
        offset: int,
        closing: scalar,
        inv_h2: scalar,
        fresh: int,
    ):
        """The point-to-triangle stitch in the XPBD form of ``stitches_xpbd``, with the
        gradients (n, -u n, -v n, -w n).

        Mirrors pbdcloth.constraints.stitch.project_triangle_stitches.
        """
        k = offset + wp.tid()
        con = cons[k]
        q = con.quad
        b = con.bary
        wc = con.w
        a = compliance[k]
        target = con.rest
        if a <= zero:
            d0 = x_prev[q[0]] - ((x_prev[q[1]] * b[0] + x_prev[q[2]] * b[1])
                                 + x_prev[q[3]] * b[2])
            target = wp.max(con.rest, wp.length(d0) - closing)
        xp = p[q[0]]
        xa = p[q[1]]
        xb = p[q[2]]
        xc = p[q[3]]
        d = xp - ((xa * b[0] + xb * b[1]) + xc * b[2])
        length = wp.length(d)
        wsum = ((wc[0] + b[0] * b[0] * wc[1]) + b[1] * b[1] * wc[2]) + b[2] * b[2] * wc[3]
        at = a * inv_h2
        lk = lam[k]
        if fresh != 0:
            lk = zero
        den = wsum + at
        if den <= zero:
            lam[k] = lk
            return
        dlam = (-(length - target) - at * lk) / den
        lam[k] = lk + dlam
        n = d * (dlam / wp.max(length, min_length))
        p[q[0]] = xp + n * wc[0]
        p[q[1]] = xa - n * (b[0] * wc[1])
        p[q[2]] = xb - n * (b[1] * wc[2])
        p[q[3]] = xc - n * (b[2] * wc[3])

    return SimpleNamespace(stitches=stitches, soft_pins=soft_pins,
                           triangle_stitches=triangle_stitches, stitches_xpbd=stitches_xpbd,
                           triangle_stitches_xpbd=triangle_stitches_xpbd)


# --- tethers --------------------------------------------------------------------------------------
def _tether_kernels(t: KernelTypes) -> SimpleNamespace:
    """``tethers``: every tether in one launch (each particle has at most one tether)."""
    scalar, vec3, _, _, module = t
    zero = scalar(0.0)

    @wp.kernel(module=module)
    def tethers(
        p: wp.array(dtype=vec3),
        particle: wp.array(dtype=wp.int32),
        anchor: wp.array(dtype=wp.int32),
        rest: wp.array(dtype=scalar),
        slack: scalar,
        taut: wp.array(dtype=wp.int32),
    ):
        """|x_i - x_anchor| <= slack * rest: move x_i onto the sphere when outside (Kim 2012);
        ``taut`` marks the tethers that moved their particle.

        Mirrors pbdcloth.constraints.tether.project_tethers.
        """
        t = wp.tid()
        i = particle[t]
        xi = p[i]
        d = xi - p[anchor[t]]
        length = wp.length(d)
        over = length - slack * rest[t]
        if over > zero:
            p[i] = xi - d * (over / length)
            taut[t] = 1
        else:
            taut[t] = 0

    return SimpleNamespace(tethers=tethers)


def _hierarchy_kernels(t: KernelTypes, records: SimpleNamespace) -> SimpleNamespace:
    """``distance_unilateral`` (one color of a coarse level), ``distance_limit`` (one color
    of a strain-limit sweep), ``copy_positions`` and
    ``hand_down`` (a level's corrections to the finer level's other particles)."""
    scalar, vec3, _, _, module = t
    zero = scalar(0.0)
    min_length = scalar(MIN_LENGTH)
    DistancePbd = records.DistancePbd

    @wp.func
    def unilateral(p: wp.array(dtype=vec3), con: DistancePbd, trigger: scalar, target: scalar,
                   tolerance: scalar) -> int:
        """One unilateral distance: where |d| > trigger d0, C = |d| - target d0,
        x_i -= w_i/(w_i+w_j) C d/|d|, x_j += w_j/(w_i+w_j) C d/|d|. Returns 1 where
        |d| - trigger d0 > tolerance d0, else 0."""
        xi = p[con.i]
        xj = p[con.j]
        d = xi - xj
        length = wp.length(d)
        far = int(0)
        if length > trigger * con.rest:
            if length - trigger * con.rest > tolerance * con.rest:
                far = 1
            d = d * ((length - target * con.rest) / wp.max(length, min_length))
            p[con.i] = xi - d * con.wi_frac
            p[con.j] = xj + d * con.wj_frac
        return far

    @wp.kernel(module=module)
    def distance_unilateral(
        p: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistancePbd),
        offset: int,
        trigger: scalar,
        target: scalar,
        tolerance: scalar,
        far: wp.array(dtype=wp.int32),
        sweep: int,
        held: wp.array(dtype=wp.int32),
    ):
        """``unilateral`` on one color; shorter constraints are left alone. ``far[sweep]``
        becomes 1 where |d| - trigger d0 > tolerance d0; nothing runs in a ``sweep`` > 0
        whose sweep before left ``far[sweep - 1]`` at 0 (the level is done) or while the pass
        holds some particle (``held[0]`` = 1).

        Mirrors pbdcloth.constraints.distance.project_distance_unilateral (a coarse level:
        trigger = target = its slack) and the stop of
        pbdcloth.constraints.hierarchy.project_hierarchy.
        """
        if sweep > 0:
            if far[sweep - 1] == 0 or held[0] != 0:
                return
        if unilateral(p, cons[offset + wp.tid()], trigger, target, tolerance) != 0:
            far[sweep] = 1

    @wp.kernel(module=module)
    def unilateral_sweeps(
        p: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistancePbd),
        trigger: scalar,
        target: scalar,
        tolerance: scalar,
        sweeps: int,
        held: wp.array(dtype=wp.int32),
    ):
        """A whole coarse level's sweeps in one thread (the CPU, which runs a launch's threads
        one after the other anyway): ``unilateral`` over ``cons`` in colored order, at most
        ``sweeps`` times (once while the pass holds some particle, ``held[0]`` = 1), stopping
        after a sweep that found none past the tolerance. The same arithmetic in the same
        order as ``distance_unilateral`` color by color.

        Mirrors pbdcloth.constraints.hierarchy.project_hierarchy (one level's sweeps).
        """
        most = sweeps
        if held[0] != 0:
            most = 1
        for sweep in range(most):
            far = int(0)
            for t in range(cons.shape[0]):
                if unilateral(p, cons[t], trigger, target, tolerance) != 0:
                    far = 1
            if far == 0:
                break

    @wp.kernel(module=module)
    def zero_flags(a: wp.array(dtype=wp.int32)):
        a[wp.tid()] = 0

    @wp.kernel(module=module)
    def any_flag(flags: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
        """out[0] = 1 where some flag is set (out[0] zeroed before)."""
        if flags[wp.tid()] != 0:
            out[0] = 1

    @wp.func
    def slide(move: vec3, touching: wp.int32, n: vec3):
        """move less its component along -n where the particle is touching a collider."""
        if touching != 0:
            inward = wp.min(wp.dot(move, n), zero)
            return move - n * inward
        return move

    @wp.kernel(module=module)
    def sliding_contacts(contact: wp.array(dtype=wp.int32), contact_normal: wp.array(dtype=vec3),
                         surface_velocity: wp.array(dtype=vec3), h: scalar, thickness: scalar,
                         sliding: wp.array(dtype=wp.int32)):
        """sliding = touching a collider whose surface moved less than ``thickness`` along the
        contact's normal in the substep h: |v_s . n| h < thickness.

        Mirrors pbdcloth.constraints.strain_limit.sliding_particles.
        """
        i = wp.tid()
        sliding[i] = 0
        if contact[i] != 0:
            if wp.abs(wp.dot(surface_velocity[i], contact_normal[i])) * h < thickness:
                sliding[i] = 1

    @wp.kernel(module=module)
    def distance_limit(
        p: wp.array(dtype=vec3),
        cons: wp.array(dtype=DistancePbd),
        offset: int,
        trigger: scalar,
        target: scalar,
        contact: wp.array(dtype=wp.int32),
        contact_normal: wp.array(dtype=vec3),
    ):
        """One color of a strain-limit sweep: where |d| > trigger d0, C = |d| - target d0,
        dx_i = -w_i/(w_i+w_j) C d/|d|, dx_j = w_j/(w_i+w_j) C d/|d|, an end touching a
        collider (``contact``) keeping none of its move along -n (its contact's normal):
        dx <- dx - min(0, dx . n) n.

        Mirrors pbdcloth.constraints.strain_limit.project_strain_limit (one color of a
        sweep, with ``sliding``).
        """
        con = cons[offset + wp.tid()]
        xi = p[con.i]
        xj = p[con.j]
        d = xi - xj
        length = wp.length(d)
        if length > trigger * con.rest:
            d = d * ((length - target * con.rest) / wp.max(length, min_length))
            p[con.i] = xi + slide(-(d * con.wi_frac), contact[con.i], contact_normal[con.i])
            p[con.j] = xj + slide(d * con.wj_frac, contact[con.j], contact_normal[con.j])

    @wp.kernel(module=module)
    def copy_positions(src: wp.array(dtype=vec3), dst: wp.array(dtype=vec3)):
        """dst = src (the positions at the start of a hierarchical pass)."""
        i = wp.tid()
        dst[i] = src[i]

    @wp.kernel(module=module)
    def hand_down(
        p: wp.array(dtype=vec3),
        start: wp.array(dtype=vec3),
        fine: wp.array(dtype=wp.int32),
        parent0: wp.array(dtype=wp.int32),
        parent1: wp.array(dtype=wp.int32),
        weight0: wp.array(dtype=scalar),
        weight1: wp.array(dtype=scalar),
    ):
        """x_f = X_f + w_0 (x_p0 - X_p0) + w_1 (x_p1 - X_p1).

        Mirrors pbdcloth.constraints.hierarchy.project_hierarchy (its hand-down).
        """
        k = wp.tid()
        f = fine[k]
        a = parent0[k]
        b = parent1[k]
        moved = start[f] + (p[a] - start[a]) * weight0[k]
        p[f] = moved + (p[b] - start[b]) * weight1[k]

    @wp.kernel(module=module)
    def hold_contacts(contact: wp.array(dtype=wp.int32), touching: wp.array(dtype=wp.int32),
                      keep: int):
        """touching = the last substep's contact flags (keep = 1), or none (the frame's first
        substep: nothing carries over from the frame before)."""
        i = wp.tid()
        if keep != 0:
            touching[i] = contact[i]
        else:
            touching[i] = 0

    @wp.kernel(module=module)
    def keep_touching(p: wp.array(dtype=vec3), start: wp.array(dtype=vec3),
                      touching: wp.array(dtype=wp.int32)):
        """The marked particles (near or touching a collider) keep their predicted positions
        through the hierarchical pass."""
        i = wp.tid()
        if touching[i] != 0:
            p[i] = start[i]

    return SimpleNamespace(distance_unilateral=distance_unilateral, zero_flags=zero_flags,
                           unilateral_sweeps=unilateral_sweeps, any_flag=any_flag,
                           distance_limit=distance_limit, sliding_contacts=sliding_contacts,
                           copy_positions=copy_positions, hand_down=hand_down,
                           hold_contacts=hold_contacts, keep_touching=keep_touching)


# --- contacts -------------------------------------------------------------------------------------
def _contact_funcs(t: KernelTypes) -> SimpleNamespace:
    """The analytic shapes' distance and surface motion, and Coulomb friction:
    ``shape_query``, ``shape_displacement``, ``contact_friction``."""
    scalar, vec3, _, _, module = t
    zero, one = scalar(0.0), scalar(1.0)

    @wp.func(module=module)
    def unit_or_up(d: vec3, length: scalar) -> vec3:
        if length > zero:
            return d / length
        return vec3(zero, one, zero)

    @wp.func(module=module)
    def capsule_param(x: vec3, a: vec3, b: vec3) -> scalar:
        ab = b - a
        denom = wp.dot(ab, ab)
        if denom == zero:
            return zero
        return wp.clamp(wp.dot(x - a, ab) / denom, zero, one)

    @wp.func(module=module)
    def shape_query(kind: int, x: vec3, a: vec3, b: vec3, radius: scalar):
        """Signed distance and outward unit normal of a plane (a = point, b = unit normal),
        sphere (a = centre) or capsule (segment a-b), as colliders/shapes.py."""
        if kind == SHAPE_PLANE:
            return wp.dot(x - a, b), b
        if kind == SHAPE_SPHERE:
            d = x - a
            length = wp.length(d)
            return length - radius, unit_or_up(d, length)
        u = capsule_param(x, a, b)
        d = x - (a + (b - a) * u)
        length = wp.length(d)
        return length - radius, unit_or_up(d, length)

    @wp.func(module=module)
    def shape_displacement(kind: int, x: vec3, a0: vec3, b0: vec3, a1: vec3, b1: vec3) -> vec3:
        """Motion of the shape's surface near x from pose 0 to pose 1 (for friction)."""
        if kind == SHAPE_CAPSULE:
            u = capsule_param(x, a0, b0)
            return (a1 - a0) * (one - u) + (b1 - b0) * u
        return a1 - a0

    @wp.func(module=module)
    def contact_friction(q: vec3, x_prev: vec3, surface: vec3, n: vec3, depth: scalar,
                         mu_s: scalar, mu_k: scalar) -> vec3:
        """Coulomb friction in position form (Macklin 2014, eq. 23-24): the slip relative to
        the surface, tangential part, is removed (static, |slip| < mu_s depth) or shortened
        by mu_k depth (kinetic), as in pbdcloth.colliders.response.project_contacts."""
        slip = (q - x_prev) - surface
        slip = slip - n * wp.dot(slip, n)
        slip_len = wp.length(slip)
        scale = zero
        if slip_len < mu_s * depth:
            scale = one
        elif slip_len > zero:
            scale = wp.min(mu_k * depth / slip_len, one)
        return q - slip * scale

    @wp.func(module=module)
    def axis_distance(y: vec3, a: vec3, b: vec3) -> scalar:
        """Distance from y to the segment a-b (a point when a == b)."""
        return wp.length(y - (a + (b - a) * capsule_param(y, a, b)))

    @wp.func(module=module)
    def closest_time(y0: vec3, d: vec3, a: vec3, b: vec3) -> scalar:
        """The t in [0, 1] where y0 + t d comes closest to the segment a-b (Ericson 2005,
        5.1.9). Mirrors pbdcloth.colliders.continuous.closest_time."""
        e = b - a
        r = y0 - a
        aa = wp.dot(d, d)
        ee = wp.dot(e, e)
        ff = wp.dot(r, e)
        cc = wp.dot(d, r)
        if aa <= zero:
            return zero
        if ee == zero:
            return wp.clamp(-cc / aa, zero, one)
        bb = wp.dot(d, e)
        denom = aa * ee - bb * bb
        t = zero
        if denom > zero:
            t = wp.clamp((bb * ff - cc * ee) / denom, zero, one)
        s = (bb * t + ff) / ee
        if s < zero:
            t = wp.clamp(-cc / aa, zero, one)
        elif s > one:
            t = wp.clamp((bb - cc) / aa, zero, one)
        return t

    @wp.func(module=module)
    def swept_entry(x0: vec3, p: vec3, shift: vec3, a: vec3, b: vec3, radius: scalar,
                    thickness: scalar) -> vec3:
        """Where a particle whose substep path x0 -> p the shape (segment a-b at its start
        pose, moving by ``shift``) passes over or through goes instead; ``p`` when it keeps
        the discrete result. Mirrors pbdcloth.colliders.continuous.swept_entry (32
        bisections)."""
        outer = radius + thickness
        band = radius + thickness * scalar(0.5)
        y1 = p - shift
        if axis_distance(x0, a, b) < band:
            return p
        d = y1 - x0
        t_hi = closest_time(x0, d, a, b)
        closest = axis_distance(x0 + d * t_hi, a, b)
        if closest >= band:
            return p
        t_lo = zero
        for _ in range(32):
            mid = scalar(0.5) * (t_lo + t_hi)
            if axis_distance(x0 + d * mid, a, b) < band:
                t_hi = mid
            else:
                t_lo = mid
        entry = x0 + d * t_hi
        n_entry = entry - (a + (b - a) * capsule_param(entry, a, b))
        n_end = y1 - (a + (b - a) * capsule_param(y1, a, b))
        if (closest < radius and wp.length(n_end) >= outer) or wp.dot(n_entry, n_end) <= zero:
            return entry + shift
        return p

    return SimpleNamespace(shape_query=shape_query, shape_displacement=shape_displacement,
                           contact_friction=contact_friction, swept_entry=swept_entry)


def _sdf_kernels(t: KernelTypes, records: SimpleNamespace, contact: SimpleNamespace
                 ) -> SimpleNamespace:
    """``collide_sdf``: one signed distance field collider per launch (``sdf_sample``);
    ``collide_sdf_sequence``: one level-set sequence (two fields blended) per launch."""
    scalar, vec3, _, _, module = t
    zero, one = scalar(0.0), scalar(1.0)
    min_gradient = scalar(MIN_GRADIENT)
    SdfPose = records.SdfPose
    contact_friction = contact.contact_friction

    @wp.func(module=module)
    def lerp4(a: wp.vec4f, b: wp.vec4f, f: wp.float32) -> wp.vec4f:
        return a + (b - a) * f

    @wp.func(module=module)
    def sdf_sample(table: wp.array(dtype=wp.vec4f), dims: wp.vec3i, u: vec3):
        """Trilinear [phi, dphi/dx, dphi/dy, dphi/dz] at padded-voxel coordinates u, as
        SdfGrid.locate/_trilinear: u clamped into the block, fractions and blend in float32,
        x then y then z."""
        ux = wp.clamp(u[0], zero, scalar(dims[0] - 1))
        uy = wp.clamp(u[1], zero, scalar(dims[1] - 1))
        uz = wp.clamp(u[2], zero, scalar(dims[2] - 1))
        i = wp.min(int(ux), dims[0] - 2)
        j = wp.min(int(uy), dims[1] - 2)
        k = wp.min(int(uz), dims[2] - 2)
        fx = wp.float32(ux - scalar(i))
        fy = wp.float32(uy - scalar(j))
        fz = wp.float32(uz - scalar(k))
        sy = dims[2]
        sx = dims[1] * dims[2]
        c = i * sx + j * sy + k
        a00 = lerp4(table[c], table[c + sx], fx)
        a01 = lerp4(table[c + 1], table[c + sx + 1], fx)
        a10 = lerp4(table[c + sy], table[c + sx + sy], fx)
        a11 = lerp4(table[c + sy + 1], table[c + sx + sy + 1], fx)
        b0 = lerp4(a00, a10, fy)
        b1 = lerp4(a01, a11, fy)
        return lerp4(b0, b1, fz)

    @wp.func(module=module)
    def sdf_unit_normal(table: wp.array(dtype=wp.vec4f), dims: wp.vec3i, pose: SdfPose,
                        y: vec3) -> vec3:
        """Unit world gradient at y (zero where shorter than MIN_GRADIENT), as SdfGrid.normal."""
        s = sdf_sample(table, dims, pose.a * y + pose.b)
        g = vec3(scalar(s[1]), scalar(s[2]), scalar(s[3]))
        glen = wp.length(g)
        if not (glen > min_gradient):
            return vec3(zero, zero, zero)
        return pose.rot * (g * (one / glen))

    @wp.func(module=module)
    def sdf_sweep(table: wp.array(dtype=wp.vec4f), dims: wp.vec3i, pose0: SdfPose,
                  pose1: SdfPose, x0: vec3, p: vec3, thickness: scalar, voxel: scalar) -> vec3:
        """Where a particle whose substep path the moving field passes over goes instead; ``p``
        when it keeps the discrete result. Conservative advancement in the start pose's
        placement, then the rest of the path sampled every half voxel. Mirrors
        pbdcloth.colliders.continuous.field_entry (MARCH_STEPS steps)."""
        y1 = pose0.rot * (wp.transpose(pose1.rot) * (p - pose1.trans)) + pose0.trans
        d = y1 - x0
        length = wp.length(d)
        R = scalar(0.5) * thickness
        tol = wp.max(wp.min(scalar(0.01) * voxel, scalar(0.1) * thickness), scalar(1e-9))
        if not (length > tol):
            return p
        if scalar(sdf_sample(table, dims, pose0.a * x0 + pose0.b)[0]) < R:
            return p
        t = zero
        hit = int(0)
        steps = int(0)
        while hit == 0 and t <= one and steps < MARCH_STEPS:
            gap = scalar(sdf_sample(table, dims, pose0.a * (x0 + d * t) + pose0.b)[0]) - R
            if gap <= tol:
                hit = 1
            else:
                t = t + scalar(0.9) * gap / length
            steps = steps + 1
        if hit == 0:
            return p
        entry = x0 + d * t
        samples = wp.min(wp.ceil((one - t) * length / (scalar(0.5) * voxel)),
                         scalar(MARCH_STEPS))
        through = int(0)
        k = int(1)
        while through == 0 and scalar(k) <= samples:
            s = t + (one - t) * (scalar(k) / samples)
            if scalar(sdf_sample(table, dims, pose0.a * (x0 + d * s) + pose0.b)[0]) < zero:
                through = 1
            k = k + 1
        n_end = sdf_unit_normal(table, dims, pose0, y1)
        n_entry = sdf_unit_normal(table, dims, pose0, entry)
        has_normal = wp.dot(n_end, n_end) > zero
        phi_end = scalar(sdf_sample(table, dims, pose0.a * y1 + pose0.b)[0])
        beyond = phi_end >= thickness or not has_normal
        if (has_normal and wp.dot(n_entry, n_end) < scalar(OPPOSED)) or (through != 0
                                                                          and beyond):
            return pose1.rot * (wp.transpose(pose0.rot) * (entry - pose0.trans)) + pose1.trans
        return p

    @wp.kernel(module=module)
    def collide_sdf(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        inv_mass: wp.array(dtype=scalar),
        thickness_scale: wp.array(dtype=scalar),
        friction_scale: wp.array(dtype=scalar),
        table: wp.array(dtype=wp.vec4f),
        dims: wp.vec3i,
        poses: wp.array(dtype=SdfPose),
        step: int,
        continuous: int,
        voxel: scalar,
        thickness: scalar,
        mu_s: scalar,
        mu_k: scalar,
        h: scalar,
        contact: wp.array(dtype=wp.int32),
        contact_normal: wp.array(dtype=vec3),
        surface_velocity: wp.array(dtype=vec3),
    ):
        """Push a free particle out of one SDF collider to the thickness shell, with friction.

        ``poses[step]`` and ``poses[step + 1]`` are the collider's poses at the start and end of
        the substep. Where the interpolated gradient is shorter than MIN_GRADIENT the field
        knows no direction (outside or deeper than the band) and the particle is left alone.

        With ``continuous`` and a moving field, ``sdf_sweep`` first catches the particles the
        field would pass over.

        The particle's thickness is ``thickness * thickness_scale[i]``, its coefficients
        ``mu_s``, ``mu_k`` times ``friction_scale[i]`` (ones where the attributes are not
        given: the products are exact).

        Mirrors pbdcloth.colliders.response.project_contacts (with SdfCollider.near).
        """
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        xi = p[i]
        own = thickness * thickness_scale[i]
        pose1 = poses[step + 1]
        if continuous != 0 and pose1.moving != 0:
            xi = sdf_sweep(table, dims, poses[step], pose1, x_prev[i], xi, own, voxel)
            p[i] = xi
        s = sdf_sample(table, dims, pose1.a * xi + pose1.b)
        phi = scalar(s[0])
        if not (phi < own):
            return
        g = vec3(scalar(s[1]), scalar(s[2]), scalar(s[3]))
        glen = wp.length(g)
        if not (glen > min_gradient):
            return
        n = pose1.rot * (g * (one / glen))
        depth = own - phi
        q = xi + n * depth
        surface = vec3(zero, zero, zero)
        if pose1.moving != 0:
            pose0 = poses[step]
            local = wp.transpose(pose1.rot) * (q - pose1.trans)
            surface = q - (pose0.rot * local + pose0.trans)
        fs = friction_scale[i]
        p[i] = contact_friction(q, x_prev[i], surface, n, depth, mu_s * fs, mu_k * fs)
        contact[i] = 1
        contact_normal[i] = n
        surface_velocity[i] = surface / h

    @wp.func(module=module)
    def sdf_field(table: wp.array(dtype=wp.vec4f), dims: wp.vec3i, pose: SdfPose, x: vec3):
        """(phi, unit world normal) of one field at x; the normal is zero where the
        interpolated gradient is shorter than MIN_GRADIENT, as SdfCollider.query."""
        s = sdf_sample(table, dims, pose.a * x + pose.b)
        g = vec3(scalar(s[1]), scalar(s[2]), scalar(s[3]))
        glen = wp.length(g)
        n = vec3(zero, zero, zero)
        if glen > min_gradient:
            n = pose.rot * (g * (one / glen))
        return scalar(s[0]), n

    @wp.func(module=module)
    def sequence_query(table0: wp.array(dtype=wp.vec4f), table1: wp.array(dtype=wp.vec4f),
                       dims: wp.array(dtype=wp.vec3i), poses: wp.array(dtype=SdfPose),
                       alpha: scalar, x: vec3):
        """The blend (1 - alpha) phi_k + alpha phi_k+1 and its unit normal at x, where both
        fields know a direction; one field's value where only it does; neither: the larger
        distance and no direction. Mirrors SdfSequence.query."""
        if alpha == zero:
            return sdf_field(table0, dims[0], poses[0], x)
        phi1, n1 = sdf_field(table1, dims[1], poses[1], x)
        if alpha == one:
            return phi1, n1
        phi0, n0 = sdf_field(table0, dims[0], poses[0], x)
        k0 = wp.dot(n0, n0) > zero
        k1 = wp.dot(n1, n1) > zero
        phi = (one - alpha) * phi0 + alpha * phi1
        n = n0 * (one - alpha) + n1 * alpha
        if k1 and not k0:
            phi = phi1
            n = n1
        elif k0 and not k1:
            phi = phi0
            n = n0
        length = wp.length(n)
        if length > zero:
            n = n / length
        else:
            n = vec3(zero, zero, zero)
        if not (k0 or k1):
            phi = wp.max(phi0, phi1)
        return phi, n

    @wp.kernel(module=module)
    def collide_sdf_sequence(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        inv_mass: wp.array(dtype=scalar),
        thickness_scale: wp.array(dtype=scalar),
        friction_scale: wp.array(dtype=scalar),
        table0: wp.array(dtype=wp.vec4f),
        table1: wp.array(dtype=wp.vec4f),
        dims: wp.array(dtype=wp.vec3i),
        poses: wp.array(dtype=SdfPose),
        alpha0: scalar,
        alpha1: scalar,
        thickness: scalar,
        mu_s: scalar,
        mu_k: scalar,
        h: scalar,
        contact: wp.array(dtype=wp.int32),
        contact_normal: wp.array(dtype=vec3),
        surface_velocity: wp.array(dtype=vec3),
    ):
        """Push a free particle out of a level-set sequence at the substep's end (frame k's
        field in ``table0``, frame k + 1's in ``table1``, blended at ``alpha1``), with friction
        against the blend's normal motion -(phi(q, alpha1) - phi(q, alpha0)) n at the pushed
        point q (a level set has no tangential motion). Discrete, as on numpy.

        Mirrors pbdcloth.colliders.response.project_contacts with an SdfSequence (without a
        surface mesh)."""
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        xi = p[i]
        own = thickness * thickness_scale[i]
        phi, n = sequence_query(table0, table1, dims, poses, alpha1, xi)
        if not (phi < own) or not (wp.dot(n, n) > zero):
            return
        depth = own - phi
        q = xi + n * depth
        phi_end, n_end = sequence_query(table0, table1, dims, poses, alpha1, q)
        phi_start, n_start = sequence_query(table0, table1, dims, poses, alpha0, q)
        surface = n_end * (-(phi_end - phi_start))
        fs = friction_scale[i]
        p[i] = contact_friction(q, x_prev[i], surface, n, depth, mu_s * fs, mu_k * fs)
        contact[i] = 1
        contact_normal[i] = n
        surface_velocity[i] = surface / h

    return SimpleNamespace(collide_sdf=collide_sdf, sdf_sample=sdf_sample,
                           collide_sdf_sequence=collide_sdf_sequence)


def _shape_kernels(t: KernelTypes, contact: SimpleNamespace) -> SimpleNamespace:
    """``collide_shapes``: a run of consecutive analytic colliders per launch."""
    scalar, vec3, _, _, module = t
    zero = scalar(0.0)
    shape_query, shape_displacement = contact.shape_query, contact.shape_displacement
    contact_friction, swept_entry = contact.contact_friction, contact.swept_entry

    @wp.kernel(module=module)
    def collide_shapes(
        p: wp.array(dtype=vec3),
        x_prev: wp.array(dtype=vec3),
        inv_mass: wp.array(dtype=scalar),
        thickness_scale: wp.array(dtype=scalar),
        friction_scale: wp.array(dtype=scalar),
        shape_kind: wp.array(dtype=wp.int32),
        shape_radius: wp.array(dtype=scalar),
        pose: wp.array2d(dtype=vec3),
        first: int,
        last: int,
        step: int,
        continuous: int,
        thickness: scalar,
        mu_s: scalar,
        mu_k: scalar,
        h: scalar,
        contact: wp.array(dtype=wp.int32),
        contact_normal: wp.array(dtype=vec3),
        surface_velocity: wp.array(dtype=vec3),
    ):
        """Push a free particle out of shapes first..last-1, in order, with friction.

        ``pose[step, 2 c]`` and ``pose[step, 2 c + 1]`` are shape c's pose at the start of the
        substep, ``pose[step + 1, ...]`` at its end. The last contact wins the contact record.

        With ``continuous`` a sphere or capsule first catches the particles it would pass
        over (``swept_entry``, relative to its motion near the particle's start).

        The particle's thickness is ``thickness * thickness_scale[i]``, its coefficients
        ``mu_s``, ``mu_k`` times ``friction_scale[i]`` (ones where the attributes are not
        given: the products are exact).

        Mirrors pbdcloth.colliders.response.project_contacts (one call per shape, in order).
        """
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        xi = p[i]
        xp = x_prev[i]
        own = thickness * thickness_scale[i]
        fs = friction_scale[i]
        ms = mu_s * fs
        mk = mu_k * fs
        touched = wp.int32(0)  # a variable (a bare literal would be a constant in the loop)
        for c in range(first, last):
            kind = shape_kind[c]
            a1 = pose[step + 1, 2 * c]
            b1 = pose[step + 1, 2 * c + 1]
            if continuous != 0 and kind != SHAPE_PLANE:
                a0 = pose[step, 2 * c]
                b0 = pose[step, 2 * c + 1]
                if kind == SHAPE_SPHERE:
                    b0 = a0
                shift = shape_displacement(kind, xp, a0, b0, a1, b1)
                xi = swept_entry(xp, xi, shift, a0, b0, shape_radius[c], own)
                touched = 1
            phi, n = shape_query(kind, xi, a1, b1, shape_radius[c])
            depth = own - phi
            if depth > zero:
                q = xi + n * depth
                surface = shape_displacement(kind, q, pose[step, 2 * c], pose[step, 2 * c + 1],
                                             a1, b1)
                xi = contact_friction(q, xp, surface, n, depth, ms, mk)
                contact[i] = 1
                contact_normal[i] = n
                surface_velocity[i] = surface / h
                touched = 1
        if touched != 0:
            p[i] = xi

    return SimpleNamespace(collide_shapes=collide_shapes)
