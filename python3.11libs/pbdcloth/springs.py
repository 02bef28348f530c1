"""Spring chains: the spring bone of VRM 1.0 (VRMC_springBone), with repeatable collision passes.

A chain of K joints hangs from a parent node. Node ``i`` is the head of joint ``i`` and node
``i + 1`` its tail. Like the cloth backends (:mod:`pbdcloth.backends.base`) the chain is split
into Model / State / Control, and one step has the backends' signature::

    solver = SpringSolver(model, collision_passes=4)
    solver.step(state_in, state_out, control, dt)

- :class:`SpringModel`: what never changes while stepping: rest nodes, bone lengths and axes,
  the per-joint settings as arrays.
- :class:`SpringState`: what a step changes: node positions, the tails now and one step ago
  (VRM's Verlet integration carries both), the joints' rotations, the clock.
- :class:`SpringControl`: what the caller sets for a step: the parent's world matrix and the
  colliders (posed with their ``move_to``; the step never moves them).
- :class:`SpringSolver`: the method (how many collision passes, whether to settle contacts);
  ``step`` reads the model, ``state_in`` and the control and writes new arrays into
  ``state_out`` (which may be ``state_in``).

:class:`SpringChain` holds one of each and keeps the simple interface
``chain.step(dt, parent)``, ``chain.positions``, ``chain.rotations``.

The substep (VRMC_springBone 1.0, "SpringBone Algorithm": "Update procedure"). For each joint
from the root out (the order VRM prescribes, so that each joint sees its parent's new rotation),
with ``h`` the joint's head, ``t`` its tail now and ``t'`` its tail one step ago, ``a`` its rest
direction, ``L`` its length and ``R_p`` the current world rotation of its parent (the previous
joint, or the parent matrix for joint 0), the next tail ``n`` is made in six steps:

1. inertia less drag (Verlet): ``n = t + (1 - drag) (t - t')``
2. stiffness, toward the rest direction turned with the parent: ``n += dt stiffness R_p a``
3. gravity: ``n += dt gravity gravity_direction``
4. length: ``n = h + L (n - h) / |n - h|``
5. collisions, ``collision_passes`` times: for each collider ``c`` in order, with
   ``e = phi_c(n) - radius`` (signed distance to the collider's surface less the hit radius)
   and ``m`` the collider's outward normal at ``n``: if ``e < 0`` then ``n = n - e m`` and the
   length is restored as in 4. One pass is exactly VRM; more passes settle deeper contacts.
   With ``settle_contacts`` a tail still inside is then turned about its head onto the surface.
6. rotation: ``R = R_p FromTo(a, R_p^T (n - h) / |n - h|)`` (the shortest arc), ``t' = t``,
   ``t = n``, and the next head is ``h + R (p_{i+1} - p_i)``.

References:
    VRM Consortium, "VRMC_springBone 1.0", section "SpringBone Algorithm" (vrm-c/vrm-specification):
    "Inertia calculation", "Collision with colliders", "Applying rotation".
    pixiv, three-vrm, ``VRMSpringBoneJoint.update`` and ``VRMSpringBoneColliderShapeSphere`` /
    ``...Capsule.calculateCollision`` (pixiv/three-vrm), the VRM reference runtime for the web.

Rest orientation: the nodes of a chain carry no rotation at rest (their frames are the parent's),
so the bone axis ``a`` is the world rest direction ``(p_{i+1} - p_i) / L``. VRM's update depends on
rotations only relative to the rest pose, so a rig whose nodes are rotated at rest moves the same.

Limitations:
    VRM's ``center`` space is not supported (inertia is always evaluated in world space). The
    parent matrix must be rigid (rotation and translation, no scale). The joint loop runs in
    Python: each joint needs its parent's rotation of the same step, so the joints of one chain
    cannot be solved at once.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .arrays import B, F
from .backends.base import FrameStats
from .colliders.base import Collider
from .colliders.shapes import Capsule, Sphere
from .portable import dot, matmul, rotate, rotate_t
from .settings import SPRING_SETTINGS, SpringSettings

__all__ = ["SPRING_SETTINGS", "SpringChain", "SpringChainError", "SpringControl", "SpringModel",
           "SpringSettings", "SpringSolver", "SpringState", "quaternion_matrix"]

#: Tolerance on the parent matrix being rigid: |R^T R - I| and |bottom row - (0, 0, 0, 1)|.
_RIGID_TOL = 1e-6
#: ``settle_contacts``: stop when the tail is no deeper than this inside a collider [m] ...
_SETTLE_TOL = 1e-12
#: ... or after this many Newton steps (quadratic convergence needs about four from 1 cm).
_SETTLE_MAX_STEPS = 32
#: Largest turn of one Newton step about the head [rad], so a far guess cannot overshoot wildly.
_SETTLE_MAX_TURN = 0.5


class SpringChainError(ValueError):
    """A spring chain's input (points, settings, colliders, time step, parent) is unusable."""


# --- Model / State / Control --------------------------------------------------------------------
@dataclass(frozen=True)
class SpringModel:
    """The static part of a chain of K joints (K + 1 nodes); its arrays are read-only.

    Build it with :meth:`from_points`; :meth:`with_settings` makes a copy with other settings.

    Attributes:
        node_rest_positions: rest positions of the nodes [m], shape (K+1, 3), in the parent's
            frame (given while the parent transform is the identity). Node 0 is fixed to the
            parent; node ``i + 1`` is the tail of joint ``i``.
        joint_rest_offset: rest bone vectors ``p_{i+1} - p_i`` [m], shape (K, 3).
        joint_length: bone lengths ``L = |p_{i+1} - p_i|`` [m], shape (K,), all > 0.
        joint_axis: rest bone directions ``a = (p_{i+1} - p_i) / L``, unit, shape (K, 3).
        joint_settings: the :class:`~pbdcloth.settings.SpringSettings` of each joint (K).
        joint_stiffness: ``stiffness`` per joint [m/s], shape (K,): the tail moves
            ``dt stiffness`` toward its rest direction per step.
        joint_gravity: ``gravity * gravity_direction`` per joint [m/s], shape (K, 3): the tail
            moves ``dt`` times this per step.
        joint_keep: ``1 - drag`` per joint, shape (K,): the share of the last step's motion a
            tail keeps.
        joint_radius: hit radius of each tail [m], shape (K,).
    """

    node_rest_positions: F
    joint_rest_offset: F
    joint_length: F
    joint_axis: F
    joint_settings: tuple[SpringSettings, ...]
    joint_stiffness: F
    joint_gravity: F
    joint_keep: F
    joint_radius: F

    @classmethod
    def from_points(cls, points: ArrayLike,
                    settings: SpringSettings | Sequence[SpringSettings] | None = None
                    ) -> "SpringModel":
        """The model of the chain through ``points`` (K+1, 3) [m] with ``settings`` (one for all
        joints, K of them root first, or None for the defaults).

        Raises:
            SpringChainError: fewer than two points, non-finite or equal consecutive points,
                wrong settings count or type.
        """
        pts = _as_points(points)
        offsets = pts[1:] - pts[:-1]
        lengths = np.sqrt(np.einsum("ij,ij->i", offsets, offsets))
        short = np.flatnonzero(~(lengths > 0.0))
        if short.size:
            i = int(short[0])
            raise SpringChainError(
                f"bone {i} has zero length: nodes {i} and {i + 1} are both at {pts[i].tolist()}"
            )
        joints = _per_joint(settings, len(lengths))
        return cls(_frozen(pts), _frozen(offsets), _frozen(lengths),
                   _frozen(offsets / lengths[:, None]), joints, *_joint_arrays(joints))

    def with_settings(self, settings: SpringSettings | Sequence[SpringSettings] | None
                      ) -> "SpringModel":
        """This model with other joint settings (the rest data shared)."""
        joints = _per_joint(settings, self.joint_count)
        stiffness, gravity, keep, radius = _joint_arrays(joints)
        return dataclasses.replace(self, joint_settings=joints, joint_stiffness=stiffness,
                                   joint_gravity=gravity, joint_keep=keep, joint_radius=radius)

    @property
    def joint_count(self) -> int:
        """Number of joints K (one fewer than nodes)."""
        return len(self.joint_length)

    def state(self, parent: ArrayLike | None = None) -> "SpringState":
        """A chain at rest under ``parent`` (4x4 world matrix, identity if None), still.

        Nodes ``x_0 = R p_0 + T``, ``x_{i+1} = x_i + R (p_{i+1} - p_i)``; tails now and one
        step ago both at ``x_{i+1}``; every joint's rotation ``R``.

        Raises:
            SpringChainError: ``parent`` is not a rigid 4x4 matrix.
        """
        rot, trans = _as_rigid(parent)
        nodes = np.empty_like(self.node_rest_positions)
        nodes[0] = rotate(rot, self.node_rest_positions[0]) + trans
        nodes[1:] = nodes[0] + np.cumsum(rotate(rot, self.joint_rest_offset), axis=0)
        tails = nodes[1:].copy()
        return SpringState(node_positions=nodes, tail_positions=tails,
                           tail_previous_positions=tails.copy(),
                           joint_rotations=np.broadcast_to(rot, (self.joint_count, 3, 3)).copy())


@dataclass
class SpringState:
    """What a step of a chain changes (K joints).

    Attributes:
        node_positions: world positions of the nodes [m], shape (K+1, 3), float64.
        tail_positions: the tails' Verlet positions now [m], shape (K, 3) (equal to
            ``node_positions[1:]`` up to rounding).
        tail_previous_positions: the tails' positions one step ago [m], shape (K, 3): with
            ``tail_positions`` they carry the chain's motion (inertia) into the next step.
        joint_rotations: world rotation of each joint relative to the rest pose, shape
            (K, 3, 3), column vectors (``world = R @ local``): joint ``i`` maps its rest bone
            direction onto its current one.
        frame: steps taken since the rest state.
        time: simulated time since the rest state [s].
    """

    node_positions: F
    tail_positions: F
    tail_previous_positions: F
    joint_rotations: F
    frame: int = 0
    time: float = 0.0

    @property
    def joint_count(self) -> int:
        return int(self.tail_positions.shape[0])

    def copy(self) -> "SpringState":
        """An independent copy (arrays copied bit for bit)."""
        return SpringState(self.node_positions.copy(), self.tail_positions.copy(),
                           self.tail_previous_positions.copy(), self.joint_rotations.copy(),
                           int(self.frame), float(self.time))


@dataclass(frozen=True)
class SpringControl:
    """What the caller sets for one step of a chain; the step reads it and never writes it.

    Attributes:
        parent_matrix: world matrix of the parent node for this step, shape (4, 4), column
            vectors with the translation [m] in the last column; rigid (rotation and
            translation). ``None`` means the identity.
        colliders: obstacles (:class:`~pbdcloth.colliders.Collider`: ``Sphere``, ``Capsule``
            ...), queried at the pose set by their ``move_to`` (``alpha = 1``). The step never
            calls ``end_frame``: the caller moves them.
    """

    parent_matrix: ArrayLike | None = None
    colliders: Sequence[Collider] = ()


# --- the step -----------------------------------------------------------------------------------
class SpringSolver:
    """VRM's spring-bone update of one :class:`SpringModel`, with the cloth backends' step.

    Args:
        model: the chain's static data.
        collision_passes: how many times the colliders push each tail out (>= 1). 1 is exactly
            VRM; the seed's rigs use 4.
        settle_contacts: after the passes, turn any tail still inside a collider about its head
            (Newton's method on the bone's sphere) until it touches the collider's surface, to
            1e-12 m. Off by default (not part of VRM). With overlapping colliders the last one
            settled wins.

    Raises:
        SpringChainError: ``collision_passes`` is not a whole number >= 1.
    """

    name = "numpy"

    def __init__(self, model: SpringModel, collision_passes: int = 4,
                 settle_contacts: bool = False) -> None:
        self.model = model
        self._passes = _as_passes(collision_passes)
        self._settle = bool(settle_contacts)

    @property
    def collision_passes(self) -> int:
        """How many times the colliders push each tail out per step (>= 1; 1 = VRM)."""
        return self._passes

    @property
    def settle_contacts(self) -> bool:
        """Whether tails still inside a collider after the passes are turned onto its surface."""
        return self._settle

    def step(self, state_in: SpringState, state_out: SpringState, control: SpringControl,
             dt: float) -> FrameStats:
        """Advance ``state_in`` by ``dt`` seconds under ``control``; write ``state_out``.

        Reads the model, ``state_in`` and ``control``; assigns new arrays to ``state_out``
        (which may be ``state_in``) and changes nothing else. The update of each joint, root
        first, is the module docstring's steps 1 to 6.

        Raises:
            SpringChainError: bad ``dt``, parent matrix, colliders, or a state of another size;
                ``state_out`` is then left as it was.
        """
        h = _as_dt(dt)
        rot_p, trans = _as_rigid(control.parent_matrix)
        colliders = _as_colliders(control.colliders)
        m = self.model
        count = m.joint_count
        if state_in.tail_positions.shape != (count, 3):
            raise SpringChainError(f"the state has {state_in.tail_positions.shape[0]} tails but "
                                   f"the model has {count} joints")
        bounds = _DistanceBounds(colliders) if colliders else None
        tails_now = state_in.tail_positions
        tails_before = state_in.tail_previous_positions
        nodes = np.empty((count + 1, 3))
        tails = np.empty((count, 3))
        rotations = np.empty((count, 3, 3))
        head = rotate(rot_p, m.node_rest_positions[0]) + trans
        nodes[0] = head
        for i in range(count):
            tail, length, axis = tails_now[i], m.joint_length[i], m.joint_axis[i]
            target = rotate(rot_p, axis)  # the rest direction turned with the parent
            inertia = m.joint_keep[i] * (tail - tails_before[i])         # 1. inertia less drag
            spring = (h * m.joint_stiffness[i]) * target                 # 2. stiffness
            fall = h * m.joint_gravity[i]                                # 3. gravity
            nxt = tail + inertia + spring + fall
            nxt = _at_length(head, nxt, length, target)                  # 4. length
            if bounds is not None:                                       # 5. collisions
                nxt = self._collide(colliders, bounds, head, nxt, length, m.joint_radius[i],
                                    target)
            bone = rotate_t(rot_p, (nxt - head) / length)
            rot = matmul(rot_p, _from_to(axis, bone))                   # 6. rotation
            tails[i] = nxt
            rotations[i] = rot
            head = head + rotate(rot, m.joint_rest_offset[i])
            nodes[i + 1] = head
            rot_p = rot
        state_out.tail_previous_positions = tails_now.copy()
        state_out.tail_positions = tails
        state_out.node_positions = nodes
        state_out.joint_rotations = rotations
        state_out.frame = state_in.frame + 1
        state_out.time = state_in.time + h
        return FrameStats(substeps=1)

    def _collide(self, colliders: list[Collider], bounds: _DistanceBounds, head: F, tail: F,
                 length: float, radius: float, fallback: F) -> F:
        """VRM's collision response, ``collision_passes`` times, then the optional settle.

        Each pass: for each collider in order, ``e = phi(n) - radius``; if ``e < 0`` then
        ``n = h + L unit(n - e m - h)`` (VRMC_springBone 1.0, "Collision with colliders";
        three-vrm ``VRMSpringBoneJoint._collision``). ``bounds`` only skips the exact ``query``
        of colliders that are certainly farther than ``radius`` from the point (they would not
        push); the result is the same as querying every collider in order.
        """
        point = tail[None, :].copy()
        for _ in range(self._passes):
            pushed = False
            near = bounds.near(point[0], radius)
            for j, collider in enumerate(colliders):
                if not near[j]:
                    continue
                phi, normal = collider.query(point, 1.0)
                depth = float(phi[0]) - radius
                if depth < 0.0:
                    point[0] = _at_length(head, point[0] - depth * normal[0], length, fallback)
                    pushed = True
                    near = bounds.near(point[0], radius)  # the point moved
            if not pushed:  # the next passes would see the same point and push nothing either
                break
        if self._settle:
            for j, collider in enumerate(colliders):
                if bounds.near(point[0], radius)[j]:
                    point[0] = _settle(collider, head, point[0], length, radius)
        return point[0]


# --- the chain: model, solver, state and colliders in one object --------------------------------
class SpringChain:
    """A chain of VRM spring bones hanging from a parent node.

    Holds a :class:`SpringModel`, a :class:`SpringSolver` and the current
    :class:`SpringState`; :meth:`step` makes the step's :class:`SpringControl` from its
    arguments and :attr:`colliders`.

    Args:
        points: (K+1, 3) world positions of the chain's nodes at rest [m], given while the
            parent transform is the identity (i.e. in the parent's frame). Node 0 is fixed to the
            parent; node ``i + 1`` is the tail of joint ``i``. At least two nodes, no two
            consecutive ones equal.
        settings: one :class:`~pbdcloth.settings.SpringSettings` for every joint, a sequence of
            K (one per joint, root first), or ``None`` for the defaults.
        colliders: :class:`~pbdcloth.colliders.Collider` objects (``Sphere``, ``Capsule`` ...)
            shared with cloth if wished. They are queried at the pose set by their ``move_to``
            (``alpha = 1``); the chain never calls ``end_frame`` (the cloth solver or the caller
            does). Kept as the list :attr:`colliders`.
        collision_passes: how many times the colliders push each tail out (>= 1). 1 is exactly
            VRM; the seed's rigs use 4.
        settle_contacts: after the passes, turn any tail still inside a collider about its head
            (Newton's method on the bone's sphere) until it touches the collider's surface, to
            1e-12 m. Off by default (not part of VRM). With overlapping colliders the last one
            settled wins.

    Raises:
        SpringChainError: bad points, settings count or type, colliders or passes.

    The state starts at rest under the identity parent; call :meth:`reset` with the parent's
    first matrix when the chain starts elsewhere.
    """

    def __init__(
        self,
        points: ArrayLike,
        settings: SpringSettings | Sequence[SpringSettings] | None = None,
        colliders: Sequence[Collider] = (),
        collision_passes: int = 4,
        settle_contacts: bool = False,
    ) -> None:
        self._model = SpringModel.from_points(points, settings)
        self.colliders: list[Collider] = _as_colliders(colliders)
        self._solver = SpringSolver(self._model, collision_passes, settle_contacts)
        self.reset()

    # --- settings, changeable between steps -------------------------------------------------
    @property
    def settings(self) -> tuple[SpringSettings, ...]:
        """The settings of each joint (K entries). Assign one SpringSettings, a sequence of K
        or None (defaults) to change them between steps; the chain keeps its motion."""
        return self._model.joint_settings

    @settings.setter
    def settings(self, value: SpringSettings | Sequence[SpringSettings] | None) -> None:
        self._model = self._model.with_settings(value)
        self._solver = SpringSolver(self._model, self.collision_passes, self.settle_contacts)

    @property
    def collision_passes(self) -> int:
        """How many times the colliders push each tail out per step (>= 1; 1 = VRM)."""
        return self._solver.collision_passes

    @collision_passes.setter
    def collision_passes(self, value: int) -> None:
        self._solver = SpringSolver(self._model, value, self.settle_contacts)

    @property
    def settle_contacts(self) -> bool:
        """Whether tails still inside a collider after the passes are turned onto its surface
        (see the class docstring); changeable between steps."""
        return self._solver.settle_contacts

    @settle_contacts.setter
    def settle_contacts(self, value: bool) -> None:
        self._solver = SpringSolver(self._model, self.collision_passes, value)

    # --- Model / State / Control ------------------------------------------------------------
    @property
    def model(self) -> SpringModel:
        """The chain's :class:`SpringModel` (replaced when :attr:`settings` are assigned)."""
        return self._model

    @property
    def solver(self) -> SpringSolver:
        """The :class:`SpringSolver` the chain steps with (its passes and settle choice)."""
        return self._solver

    @property
    def state(self) -> SpringState:
        """The current :class:`SpringState` (its arrays are read-only)."""
        return self._state

    @state.setter
    def state(self, value: SpringState) -> None:
        """Restore a state taken from :attr:`state` (copied; the joint count is checked)."""
        if not isinstance(value, SpringState) or value.joint_count != self.joint_count:
            raise SpringChainError(
                f"a chain of {self.joint_count} joints cannot take the state {value!r}")
        self._state = _read_only(value.copy())

    # --- read-only views -------------------------------------------------------------------
    @property
    def joint_count(self) -> int:
        """Number of joints K (one fewer than nodes)."""
        return self._model.joint_count

    @property
    def rest_points(self) -> F:
        """The rest positions given at construction (K+1, 3) [m], read-only."""
        return self._model.node_rest_positions

    @property
    def bone_lengths(self) -> F:
        """Length of each bone (K,) [m] (a copy)."""
        return self._model.joint_length.copy()

    @property
    def positions(self) -> F:
        """World positions of the nodes after the last step (K+1, 3) [m] (a new array)."""
        return self._state.node_positions.copy()

    @property
    def rotations(self) -> F:
        """World rotation of each joint after the last step, as (K, 3, 3) matrices.

        Column-vector convention (``world = R @ local``). Relative to the rest pose, in which
        every node's frame is the parent's: joint ``i`` maps its rest bone direction onto its
        current one, ``R[i] @ a_i = (positions[i+1] - positions[i]) / L_i``. A new array.
        """
        return self._state.joint_rotations.copy()

    @property
    def tails(self) -> F:
        """The tails' current Verlet positions (K, 3) [m] (equal to ``positions[1:]`` up to
        rounding; a new array)."""
        return self._state.tail_positions.copy()

    # --- stepping --------------------------------------------------------------------------
    def reset(self, parent: ArrayLike | None = None) -> None:
        """Put the chain at rest under ``parent`` (4x4 world matrix, identity if None), still."""
        self._state = _read_only(self._model.state(parent))

    def step(self, dt: float, parent: ArrayLike | None = None) -> None:
        """Advance the chain by ``dt`` seconds with its parent node at world matrix ``parent``.

        ``parent`` is a 4x4 numpy array (column vectors, translation in the last column) for this
        step; ``None`` means the identity. It must be rigid. The same as
        ``chain.solver.step(chain.state, new_state, SpringControl(parent, chain.colliders), dt)``
        (see the module docstring for the update of each joint).
        """
        new = dataclasses.replace(self._state)
        self._solver.step(self._state, new, SpringControl(parent, self.colliders), dt)
        self._state = _read_only(new)


def _read_only(state: SpringState) -> SpringState:
    """``state`` with its arrays marked read-only (the chain's own state is not edited)."""
    for array in (state.node_positions, state.tail_positions, state.tail_previous_positions,
                  state.joint_rotations):
        array.flags.writeable = False
    return state


def _frozen(array: F) -> F:
    array.flags.writeable = False
    return array


def _joint_arrays(s: tuple[SpringSettings, ...]) -> tuple[F, F, F, F]:
    """(stiffness (K,), gravity * gravity_direction (K, 3), 1 - drag (K,), radius (K,)) of K
    joint settings, read-only."""
    return (_frozen(np.array([x.stiffness for x in s])),
            _frozen(np.array([x.gravity for x in s])[:, None]
                    * np.array([x.gravity_direction for x in s])),
            _frozen(1.0 - np.array([x.drag for x in s])),
            _frozen(np.array([x.radius for x in s])))


class _DistanceBounds:
    """Signed distances of one point to all spheres and capsules at once, to skip far colliders.

    Evaluates the same formulas as :mod:`pbdcloth.colliders.shapes` at the colliders' end poses
    (``alpha = 1``) in one array operation; rounding may differ from the colliders' own
    ``query`` by ~1e-16 m per metre of coordinates, so a collider counts as near unless it is
    farther than the hit radius by more than ``margin`` (1e-9 m). Colliders of other types are
    always near (always queried).
    """

    margin = 1e-9

    def __init__(self, colliders: Sequence[Collider]) -> None:
        count = len(colliders)
        self._sphere = np.array([j for j, c in enumerate(colliders) if type(c) is Sphere],
                                dtype=np.int64)
        self._capsule = np.array([j for j, c in enumerate(colliders) if type(c) is Capsule],
                                 dtype=np.int64)
        spheres = [colliders[j] for j in self._sphere]
        capsules = [colliders[j] for j in self._capsule]
        self._centers = np.array([s.center for s in spheres]).reshape(-1, 3)
        self._sphere_r = np.array([s.radius for s in spheres])
        self._a = np.array([c.a for c in capsules]).reshape(-1, 3)
        self._ab = np.array([c.b for c in capsules]).reshape(-1, 3) - self._a
        self._ab2 = np.einsum("ij,ij->i", self._ab, self._ab)
        self._ab2_safe = np.where(self._ab2 > 0.0, self._ab2, 1.0)
        self._capsule_r = np.array([c.radius for c in capsules])
        self._phi = np.full(count, -np.inf)

    def near(self, point: F, radius: float) -> B:
        """(N,) True for each collider the point may be within ``radius`` of (or inside)."""
        phi = self._phi
        if self._sphere.size:
            d = point - self._centers
            phi[self._sphere] = np.sqrt(np.einsum("ij,ij->i", d, d)) - self._sphere_r
        if self._capsule.size:
            ap = point - self._a
            u = np.clip(np.einsum("ij,ij->i", ap, self._ab) / self._ab2_safe, 0.0, 1.0)
            u = np.where(self._ab2 > 0.0, u, 0.0)
            d = ap - u[:, None] * self._ab
            phi[self._capsule] = np.sqrt(np.einsum("ij,ij->i", d, d)) - self._capsule_r
        return phi <= radius + self.margin


# --- geometry helpers ---------------------------------------------------------------------------
def _at_length(head: F, point: F, length: float, fallback: F) -> F:
    """``head + length * unit(point - head)``; along ``fallback`` if the point is the head."""
    d = point - head
    norm = math.sqrt(float(dot(d, d)))
    if norm == 0.0:
        return head + length * fallback
    return head + (length / norm) * d


def _from_to(a: F, b: F) -> F:
    """The shortest-arc rotation matrix taking unit vector ``a`` onto unit vector ``b``.

    Built as the quaternion (w, v) = (1 + a.b, a x b), normalised; for opposite vectors
    (1 + a.b ~ 0) a half turn about an axis perpendicular to ``a`` (as three.js
    ``Quaternion.setFromUnitVectors`` does).
    """
    w = 1.0 + float(dot(a, b))
    if w < 1e-12:
        if abs(a[0]) > abs(a[2]):
            v = np.array([-a[1], a[0], 0.0])
        else:
            v = np.array([0.0, -a[2], a[1]])
        w = 0.0
    else:  # a x b, written out: np.cross costs ~10x more on 3-vectors
        v = np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                      a[0] * b[1] - a[1] * b[0]])
    q = np.array([w, v[0], v[1], v[2]])
    q /= math.sqrt(float(dot(q, q)))
    return quaternion_matrix(q)


def quaternion_matrix(q: ArrayLike) -> F:
    """The 3x3 rotation matrix of the unit quaternion ``(w, x, y, z)``."""
    w, x, y, z = (float(c) for c in np.asarray(q, dtype=np.float64))
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _settle(collider: Collider, head: F, tail: F, length: float, radius: float) -> F:
    """Turn ``tail`` about ``head`` (keeping ``length``) until ``phi - radius >= -1e-12``.

    Newton's method on the great circle through the tail along the collider normal's tangential
    part ``m_t``: the signed depth changes at rate ``|m_t|`` per metre of arc, so an arc of
    ``-depth / |m_t|`` reaches the surface to first order. Stops unchanged where the normal
    points along the bone (no turn helps) or the head itself is too deep to escape.
    """
    point = tail[None, :].copy()
    for _ in range(_SETTLE_MAX_STEPS):
        phi, normal = collider.query(point, 1.0)
        depth = float(phi[0]) - radius
        if depth >= -_SETTLE_TOL:
            break
        u = (point[0] - head) / length
        m = normal[0]
        tangent = m - float(dot(m, u)) * u
        rate = math.sqrt(float(dot(tangent, tangent)))
        if rate < 1e-9:
            break
        turn = min(-depth / rate / length, _SETTLE_MAX_TURN)
        point[0] = head + length * (math.cos(turn) * u + math.sin(turn) * (tangent / rate))
    return point[0]


# --- input checks -------------------------------------------------------------------------------
def _as_points(points: ArrayLike) -> F:
    try:
        pts = np.array(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpringChainError(f"points must be a (K+1, 3) array of numbers, got {points!r}"
                               ) from None
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise SpringChainError(f"points must have shape (K+1, 3), got {pts.shape}")
    if pts.shape[0] < 2:
        raise SpringChainError(
            f"a spring chain needs at least two nodes (one joint), got {pts.shape[0]}")
    bad = np.flatnonzero(~np.all(np.isfinite(pts), axis=1))
    if bad.size:
        raise SpringChainError(f"point {int(bad[0])} is not finite: {pts[bad[0]].tolist()}")
    return pts


def _per_joint(settings: SpringSettings | Sequence[SpringSettings] | None,
               joints: int) -> tuple[SpringSettings, ...]:
    if settings is None:
        return (SpringSettings(),) * joints
    if isinstance(settings, SpringSettings):
        return (settings,) * joints
    try:
        items = list(settings)
    except TypeError:
        raise SpringChainError(
            f"settings must be a SpringSettings or a list of them, got {settings!r}") from None
    if len(items) != joints:
        raise SpringChainError(
            f"settings has {len(items)} entries but the chain has {joints} joints "
            f"({joints + 1} points): give one SpringSettings per joint, or one for all")
    for i, item in enumerate(items):
        if not isinstance(item, SpringSettings):
            raise SpringChainError(f"settings[{i}] is not a SpringSettings: {item!r}")
    return tuple(items)


def _as_colliders(colliders: Sequence[Collider]) -> list[Collider]:
    try:
        items = list(colliders)
    except TypeError:
        raise SpringChainError(f"colliders must be a list of colliders, got {colliders!r}"
                               ) from None
    for i, c in enumerate(items):
        if not isinstance(c, Collider):
            raise SpringChainError(
                f"colliders[{i}] is not a pbdcloth collider (Sphere, Capsule, ...): {c!r}")
    return items


def _as_passes(passes: int) -> int:
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1:
        raise SpringChainError(f"collision_passes must be a whole number >= 1, got {passes!r}")
    return int(passes)


def _as_dt(dt: float) -> float:
    try:
        h = float(dt)
    except (TypeError, ValueError):
        raise SpringChainError(f"time step dt must be a number, got {dt!r}") from None
    if not (math.isfinite(h) and h > 0.0):
        raise SpringChainError(f"time step dt must be finite and > 0 s, got {dt!r}")
    return h


def _as_rigid(parent: ArrayLike | None) -> tuple[F, F]:
    """(rotation (3, 3), translation (3,)) of a rigid 4x4 matrix; the identity for None."""
    if parent is None:
        return np.eye(3), np.zeros(3)
    try:
        m = np.array(parent, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpringChainError(f"parent must be a 4x4 matrix of numbers, got {parent!r}"
                               ) from None
    if m.shape != (4, 4):
        raise SpringChainError(f"parent must be a 4x4 matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise SpringChainError(f"parent matrix is not finite: {m.tolist()}")
    if np.abs(m[3] - (0.0, 0.0, 0.0, 1.0)).max() > _RIGID_TOL:
        raise SpringChainError(
            f"parent matrix's bottom row must be (0, 0, 0, 1) (column vectors, translation in "
            f"the last column), got {m[3].tolist()}")
    rot = m[:3, :3]
    error = float(np.abs(rot.T @ rot - np.eye(3)).max())
    if error > _RIGID_TOL or np.linalg.det(rot) < 0.0:
        raise SpringChainError(
            f"parent matrix must be rigid (a rotation and a translation, no scale or mirror); "
            f"its 3x3 part is off orthonormal by {error:.3g}")
    return rot.copy(), m[:3, 3].copy()
