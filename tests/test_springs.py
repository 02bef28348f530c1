"""Spring chains (VRM spring bones): physics, the VRM algorithm step for step, collisions,
VRMC_springBone export/import and the ``springs`` demo."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from pbdcloth import (
    Capsule,
    Plane,
    SettingsError,
    Sphere,
    SpringChain,
    SpringChainError,
    SpringSettings,
)
from pbdcloth.io import vrm
from pbdcloth.springs import SpringControl, SpringModel, SpringSolver

SCHEMA_DIR = Path(__file__).parent / "data" / "vrm" / "VRMC_springBone-1.0-schema"
DT = 1.0 / 30.0


# --- helpers ----------------------------------------------------------------------------------
def rigid(angle: float = 0.0, axis: tuple[float, float, float] = (0.0, 0.0, 1.0),
          translation: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """4x4 rotation about ``axis`` by ``angle`` then translation (Rodrigues' formula)."""
    k = np.asarray(axis, dtype=float)
    k = k / np.linalg.norm(k)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    m = np.eye(4)
    m[:3, :3] = np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx
    m[:3, 3] = translation
    return m


def directions(positions: np.ndarray) -> np.ndarray:
    d = positions[1:] - positions[:-1]
    return d / np.linalg.norm(d, axis=1)[:, None]


def _schema_validator():  # type: ignore[no-untyped-def]
    """A draft 2020-12 validator of VRMC_springBone.schema.json whose $refs resolve to the
    copied files (VRM sub-schemas and the glTF core schemas), never to the network."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resources = [
        (p.name, Resource.from_contents(json.loads(p.read_text()),
                                        default_specification=DRAFT202012))
        for p in sorted(SCHEMA_DIR.glob("*.schema.json"))
    ]
    root = json.loads((SCHEMA_DIR / "VRMC_springBone.schema.json").read_text())
    return Draft202012Validator(root, registry=Registry().with_resources(resources))


def _rig() -> tuple[list[SpringChain], dict[str, object]]:
    """Two chains sharing a capsule, one with a sphere too, per-joint settings, odd numbers."""
    ball = Sphere((0.13, -0.31, 0.02), 0.17)
    bar = Capsule((0.31, -0.47, -0.23), (0.29, -0.52, 0.21), 0.045)
    tail = SpringChain(
        [[0.01, 0.02, 0.0], [0.11, 0.03, 0.01], [0.21, 0.01, 0.03], [0.33, -0.02, 0.07]],
        [SpringSettings(stiffness=0.7 + 0.3 * i, gravity=1.3, drag=0.25 + 0.1 * i,
                        radius=0.015 + 0.005 * i, gravity_direction=(0.1, -1.0, 0.05))
         for i in range(3)],
        colliders=[ball, bar], collision_passes=3)
    ear = SpringChain([[0.1, 0.2, 0.3], [0.13, 0.1, 0.3], [0.17, 0.0, 0.29]],
                      SpringSettings(drag=0.7), colliders=[bar], settle_contacts=True)
    return [tail, ear], {"ball": ball}


def _drive(chains: list[SpringChain], steps: int = 90) -> list[np.ndarray]:
    """Step the chains under a parent that swings and travels; return stacked positions."""
    out = []
    for k in range(steps):
        m = rigid(0.6 * math.sin(k / 7), (0.3, 0.2, 1.0), (0.15 * math.sin(k / 5), 0, 0.01 * k))
        for c in chains:
            c.step(DT, m)
        out.append(np.concatenate([c.positions for c in chains]))
    return out


# --- the VRM algorithm step for step ----------------------------------------------------------
HAND = SpringSettings(stiffness=2.0, gravity=3.0, drag=0.5, radius=0.1)
"""With dt = 0.5: stiffness * dt = 1 m, gravity * dt = 1.5 m, (1 - drag) = 0.5."""
HAND_POINTS = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]


def test_two_joints_first_step_by_hand() -> None:
    # Step 1 from rest (no inertia), parent = identity.
    # Joint 0: head (0,0,0), tail (1,0,0); + stiffness 1 * (1,0,0) + gravity 1.5 * (0,-1,0)
    #   = (2, -1.5, 0) = 2.5 * (0.8, -0.6, 0) -> length 1: (0.8, -0.6, 0).
    # Joint 1: head (0.8, -0.6, 0) (joint 0 turned), tail (2,0,0);
    #   stiffness along joint 0's new direction (0.8, -0.6, 0), gravity (0, -1.5, 0):
    #   (2.8, -2.1, 0); minus head = (2, -1.5, 0) -> unit (0.8, -0.6) -> tail (1.6, -1.2, 0).
    chain = SpringChain(HAND_POINTS, HAND, collision_passes=1)
    chain.step(0.5)
    expect = np.array([[0.0, 0.0, 0.0], [0.8, -0.6, 0.0], [1.6, -1.2, 0.0]])
    assert np.abs(chain.positions - expect).max() < 1e-15
    # Both joints turned about z by atan2(-0.6, 0.8): columns are the turned x, y, z axes.
    rz = np.array([[0.8, 0.6, 0.0], [-0.6, 0.8, 0.0], [0.0, 0.0, 1.0]])
    assert np.abs(chain.rotations - rz).max() < 1e-15


def test_two_joints_second_step_by_hand() -> None:
    # Step 2 keeps half the motion of step 1.
    # Joint 0: (0.8,-0.6) + 0.5 (0.8-1, -0.6-0) + (1, 0) + (0, -1.5) = (1.7, -2.4) -> / sqrt(8.65)
    # Joint 1: head n1 = (1.7, -2.4)/sqrt(8.65); tail (1.6,-1.2), previous (2, 0):
    #   (1.6,-1.2) + 0.5 (-0.4,-1.2) + n1 (stiffness along joint 0) + (0,-1.5) = n1 + (1.4,-3.3)
    #   -> n2 = n1 + (1.4, -3.3)/sqrt(12.85).
    chain = SpringChain(HAND_POINTS, HAND, collision_passes=1)
    chain.step(0.5)
    chain.step(0.5)
    n1 = np.array([1.7, -2.4, 0.0]) / math.sqrt(8.65)
    n2 = n1 + np.array([1.4, -3.3, 0.0]) / math.sqrt(12.85)
    assert np.abs(chain.positions - np.array([[0, 0, 0], n1, n2])).max() < 1e-15


def test_two_joints_sphere_collision_one_pass_by_hand() -> None:
    # A sphere at (1.6, -2, 0), radius 0.9, hit radius 0.1: joint 1's tail (1.6, -1.2, 0) after
    # the length step is 0.8 from the centre, depth 0.8 - 0.9 - 0.1 = -0.2, normal (0, 1, 0):
    # pushed to (1.6, -1.0, 0); back to length 1 from its head (0.8, -0.6, 0) along
    # (0.8, -0.4) ~ (2, -1): tail = (0.8 + 2/sqrt5, -0.6 - 1/sqrt5, 0). Joint 0's tail is
    # 1.61 from the centre: untouched.
    ball = Sphere((1.6, -2.0, 0.0), 0.9)
    chain = SpringChain(HAND_POINTS, HAND, colliders=[ball], collision_passes=1)
    chain.step(0.5)
    r5 = math.sqrt(5.0)
    expect = np.array([[0.0, 0.0, 0.0], [0.8, -0.6, 0.0], [0.8 + 2 / r5, -0.6 - 1 / r5, 0.0]])
    assert np.abs(chain.positions - expect).max() < 1e-15
    # Joint 1 now points along (2, -1)/sqrt5: a turn about z by atan2(-1, 2).
    c, s = 2 / r5, -1 / r5
    assert np.abs(chain.rotations[1] - [[c, -s, 0], [s, c, 0], [0, 0, 1]]).max() < 1e-15
    # One pass is VRM: the length step pulls the tail back into the sphere, by (hand)
    # 1 - |(2/sqrt5 - 0.8, 1.4 - 1/sqrt5)| = 0.04254 m ...
    depth = 1.0 - math.hypot(2 / r5 - 0.8, 1.4 - 1 / r5)
    assert depth == pytest.approx(0.0425, abs=1e-4)
    inside = 1.0 - np.linalg.norm(chain.positions[2] - ball.center)
    assert inside == pytest.approx(depth, abs=1e-15)
    # ... which more passes (the seed's 4) shrink.
    more = SpringChain(HAND_POINTS, HAND, colliders=[ball], collision_passes=4)
    more.step(0.5)
    assert 1.0 - np.linalg.norm(more.positions[2] - ball.center) < 0.2 * depth


def _reference_three_vrm(points, rest_rotations, settings, colliders, parents, dt):  # type: ignore[no-untyped-def]
    """An independent transcription of three-vrm's VRMSpringBoneJoint (one collision pass) on
    a node hierarchy whose nodes are ROTATED at rest: local matrices, world = parent @ local,
    stiffness target from parentWorld @ initialLocalMatrix, rotation from the tail in the
    bone's rest frame, shortest arc by Rodrigues' formula. Yields node world positions."""
    k = len(points) - 1
    world_rest = [np.asarray(r, dtype=float) for r in rest_rotations]  # (K,) 3x3
    local = []  # initial local 4x4 of node i (relative to node i-1; node 0 to the parent)
    for i in range(k):
        m = np.eye(4)
        parent_rot = world_rest[i - 1] if i else np.eye(3)
        parent_pos = np.asarray(points[i - 1]) if i else np.zeros(3)
        m[:3, :3] = parent_rot.T @ world_rest[i]
        m[:3, 3] = parent_rot.T @ (np.asarray(points[i]) - parent_pos)
        local.append(m)
    child_local = [world_rest[i].T @ (np.asarray(points[i + 1]) - points[i]) for i in range(k)]
    axis = [c / np.linalg.norm(c) for c in child_local]
    length = [np.linalg.norm(c) for c in child_local]
    cur = [np.asarray(points[i + 1], dtype=float) for i in range(k)]
    prev = [c.copy() for c in cur]

    def from_to(a, b):  # type: ignore[no-untyped-def]
        v = np.cross(a, b)
        s, c = np.linalg.norm(v), float(a @ b)
        if s < 1e-15:
            return np.eye(3)
        kx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]) / s
        return np.eye(3) + s * kx + (1 - c) * kx @ kx

    for parent in parents:
        parent_world = np.asarray(parent, dtype=float)
        nodes = []
        for i in range(k):
            bone_world = parent_world @ local[i]
            pos = bone_world[:3, 3]
            nodes.append(pos)
            target = (parent_world @ local[i] @ np.append(axis[i], 1.0))[:3] - pos
            nxt = (cur[i] + (cur[i] - prev[i]) * (1 - settings.drag)
                   + target / np.linalg.norm(target) * settings.stiffness * dt
                   + np.asarray(settings.gravity_direction) * settings.gravity * dt)
            nxt = pos + (nxt - pos) / np.linalg.norm(nxt - pos) * length[i]
            for kind, a, b, radius in colliders:
                if kind == "sphere":
                    d = nxt - a
                else:
                    ab, ap = b - a, nxt - a
                    t = float(ab @ ap)
                    d = ap if t <= 0 else (nxt - b if t >= ab @ ab else ap - ab * t / (ab @ ab))
                dist = np.linalg.norm(d) - radius - settings.radius
                if dist < 0:
                    nxt = nxt - d / np.linalg.norm(d) * dist
                    nxt = pos + (nxt - pos) / np.linalg.norm(nxt - pos) * length[i]
            prev[i], cur[i] = cur[i], nxt
            inv = np.linalg.inv(parent_world @ local[i])
            to = (inv @ np.append(nxt, 1.0))[:3]
            rot = local[i][:3, :3] @ from_to(axis[i], to / np.linalg.norm(to))
            current_local = local[i].copy()
            current_local[:3, :3] = rot
            parent_world = parent_world @ current_local
        nodes.append((parent_world @ np.append(child_local[-1], 1.0))[:3])
        yield np.array(nodes)


def test_one_pass_matches_a_three_vrm_transcription_with_rotated_rest_nodes() -> None:
    """Our chain (nodes unrotated at rest) against a node-hierarchy transcription of three-vrm
    whose nodes carry arbitrary rest rotations: VRM depends only on rotations relative to
    rest, so the node positions must agree to rounding over a long swinging, colliding run."""
    rng = np.random.default_rng(7)
    points = np.array([[0.0, 0.0, 0.0], [0.12, -0.05, 0.02], [0.2, -0.15, 0.05],
                       [0.25, -0.27, 0.02]])
    rest = [rigid(float(rng.uniform(-3, 3)), tuple(rng.normal(size=3)))[:3, :3]
            for _ in range(3)]
    settings = SpringSettings(stiffness=1.7, gravity=2.2, drag=0.3, radius=0.02,
                              gravity_direction=(0.2, -1.0, 0.1))
    ball, bar = Sphere((0.3, -0.35, 0.1), 0.12), Capsule((0.1, -0.4, -0.2), (0.1, -0.3, 0.3), 0.05)
    chain = SpringChain(points, settings, colliders=[ball, bar], collision_passes=1)
    parents = [rigid(0.8 * math.sin(k / 6), (0.2, 1.0, 0.4), (0.2 * math.sin(k / 9), 0, 0))
               for k in range(200)]
    reference = _reference_three_vrm(
        points, rest, settings, [("sphere", ball.center, None, ball.radius),
                                 ("capsule", bar.a, bar.b, bar.radius)], parents, DT)
    contacts, worst = 0, 0.0
    for parent, expect in zip(parents, reference):
        chain.step(DT, parent)
        worst = max(worst, float(np.abs(chain.positions - expect).max()))
        contacts += int(any(c.query(chain.positions[1:])[0].min() < 0.03 for c in (ball, bar)))
    assert worst < 1e-12
    assert contacts > 20  # the run does exercise the colliders
    # The rotations: ours are world rotations relative to rest; R_i maps a_i onto the bone.
    d = directions(chain.positions)
    a = directions(points)
    assert np.abs(np.einsum("kij,kj->ki", chain.rotations, a) - d).max() < 1e-12
    assert np.abs(chain.rotations @ chain.rotations.transpose(0, 2, 1) - np.eye(3)).max() < 1e-12


# --- physics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("gravity_direction", [(0.0, -1.0, 0.0), (0.6, -0.7, 0.3)])
def test_without_stiffness_it_hangs_straight_along_gravity(gravity_direction) -> None:  # type: ignore[no-untyped-def]
    points = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.2, 0.05, 0.0], [0.3, 0.05, 0.05]]
    parent = rigid(0.4, (1.0, 0.5, 0.0), (0.3, 1.2, -0.1))  # static, not the identity
    g = np.asarray(gravity_direction) / np.linalg.norm(gravity_direction)
    free = SpringChain(points, SpringSettings(stiffness=0.0, drag=0.0, gravity=1.0,
                                              gravity_direction=gravity_direction))
    stiff = SpringChain(points, SpringSettings(stiffness=1.0, drag=0.0, gravity=1.0,
                                               gravity_direction=gravity_direction))
    for c in (free, stiff):
        c.reset(parent)
        for _ in range(600):
            c.step(DT, parent)
    # Every bone along gravity (rounding of unit vectors: 1e-15; the fall has settled).
    assert np.abs(directions(free.positions) - g).max() < 1e-9
    assert np.allclose(free.positions[0], parent[:3, :3] @ points[0] + parent[:3, 3])
    # Control: with stiffness the bones stay bent toward their rest direction.
    assert np.abs(directions(stiff.positions) - g).max() > 0.05


def test_with_stiffness_and_no_gravity_it_returns_to_rest() -> None:
    points = np.array([[0.0, 0.0, 0.0], [0.1, 0.05, 0.0], [0.2, 0.05, 0.03], [0.3, 0.0, 0.05]])
    final = rigid(1.2, (0.0, 0.3, 1.0), (0.5, 0.2, 0.0))
    springy = SpringChain(points, SpringSettings(stiffness=2.0, gravity=0.0))
    limp = SpringChain(points, SpringSettings(stiffness=0.0, gravity=0.0))
    for c in (springy, limp):
        for k in range(31):  # swing the parent away: the chain lags and bends
            c.step(DT, rigid(1.2 * k / 30, (0.0, 0.3, 1.0), (0.5 * k / 30, 0.2 * k / 30, 0.0)))
        bent = np.abs(c.positions - (points @ final[:3, :3].T + final[:3, 3])).max()
        assert bent > 0.01
        for _ in range(400):
            c.step(DT, final)
    rest = points @ final[:3, :3].T + final[:3, 3]
    assert np.abs(springy.positions - rest).max() < 1e-9
    assert np.abs(springy.rotations - final[:3, :3]).max() < 1e-9
    assert np.abs(limp.positions - rest).max() > 0.01  # control: no stiffness, no return


def test_bone_lengths_are_kept_to_1e_9_at_every_step() -> None:
    chains, _ = _rig()
    start = [c.positions for c in chains]
    for k in range(150):
        m = rigid(0.6 * math.sin(k / 7), (0.3, 0.2, 1.0), (0.15 * math.sin(k / 5), 0, 0.01 * k))
        for c in chains:
            c.step(DT, m)
            pos = c.positions
            err = np.abs(np.linalg.norm(pos[1:] - pos[:-1], axis=1) - c.bone_lengths).max()
            assert err < 1e-9
            # The nodes follow from the joints' rotations, so their lengths hold by
            # construction; the Verlet tails the rotations are made from must be at length too.
            tails = c.tails
            assert np.abs(np.linalg.norm(tails - pos[:-1], axis=1) - c.bone_lengths).max() < 1e-9
            assert np.abs(tails - pos[1:]).max() < 1e-9
    moved = max(float(np.abs(c.positions - s).max()) for c, s in zip(chains, start))
    assert moved > 0.1  # the chains did swing


def _penetration(chain: SpringChain, ball: Sphere, steps: int) -> float:
    """Deepest any tail's hit sphere ends inside ``ball`` over the run [m] (own distance)."""
    radius = np.array([s.radius for s in chain.settings])
    worst = 0.0
    for k in range(steps):
        chain.step(DT, rigid(0.3 * math.sin(k / 10), (0, 0, 1), (0.05 * math.sin(k / 4), 0, 0)))
        gap = np.linalg.norm(chain.positions[1:] - ball.center, axis=1) - ball.radius - radius
        worst = max(worst, float(-gap.min()))
    return worst


@pytest.mark.parametrize("passes", [1, 4])
def test_no_tail_ends_inside_a_sphere_with_settled_contacts(passes: int) -> None:
    points = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.2, 0.0, 0.0], [0.3, 0.0, 0.0], [0.4, 0.0, 0.0]]
    settings = SpringSettings(stiffness=0.5, gravity=2.0, radius=0.02)

    def make(settle: bool) -> tuple[SpringChain, Sphere]:
        ball = Sphere((0.15, -0.25, 0.0), 0.2)
        return SpringChain(points, settings, colliders=[ball], collision_passes=passes,
                           settle_contacts=settle), ball

    chain, ball = make(True)
    assert _penetration(chain, ball, 150) <= 1e-9
    # Control: VRM's passes alone end with tails inside (one pass: centimetres).
    chain, ball = make(False)
    assert _penetration(chain, ball, 150) > (1e-2 if passes == 1 else 1e-4)


def test_settled_contacts_keep_tails_out_of_a_capsule() -> None:
    bar = Capsule((-0.2, -0.15, -0.3), (0.5, -0.2, 0.3), 0.06)
    chain = SpringChain([[0, 0, 0], [0.1, 0.0, 0.0], [0.2, 0.0, 0.0], [0.3, 0.0, 0.0]],
                        SpringSettings(gravity=2.0, stiffness=0.3), colliders=[bar],
                        settle_contacts=True)
    worst = -1.0
    for _ in range(120):
        chain.step(DT)
        phi = bar.query(chain.positions[1:])[0] - 0.02
        worst = max(worst, float(-phi.min()))
    assert -0.5 < worst <= 1e-9  # touching (worst ~ 0), never inside


def test_same_inputs_same_outputs_bit_for_bit() -> None:
    a, _ = _rig()
    b, _ = _rig()
    for fa, fb in zip(_drive(a, 60), _drive(b, 60)):
        assert np.array_equal(fa, fb)


# --- Model / State / Control -----------------------------------------------------------------
def _swing(k: int) -> np.ndarray:
    return rigid(0.6 * math.sin(k / 7), (0.3, 0.2, 1.0), (0.15 * math.sin(k / 5), 0, 0.01 * k))


@pytest.mark.parametrize("in_place", [False, True])
def test_state_based_step_agrees_with_chain_step_bit_for_bit(in_place: bool) -> None:
    """A model, solver and states built from the public constructors, stepped with
    ``step(state_in, state_out, control, dt)`` (two states swapped each step, or one state
    written in place), against ``chain.step(dt, parent)`` of the same rig."""
    chains, _ = _rig()
    rigs = []
    for chain in chains:
        model = SpringModel.from_points(chain.rest_points, chain.settings)
        solver = SpringSolver(model, chain.collision_passes, chain.settle_contacts)
        first = model.state(_swing(0))
        chain.reset(_swing(0))
        rigs.append([solver, first, first if in_place else model.state()])
    for k in range(1, 61):
        parent = _swing(k)
        for chain, rig in zip(chains, rigs):
            solver, state_in, state_out = rig
            chain.step(DT, parent)
            solver.step(state_in, state_out, SpringControl(parent, chain.colliders), DT)
            rig[1], rig[2] = state_out, state_in
            assert np.array_equal(state_out.node_positions, chain.positions)
            assert np.array_equal(state_out.joint_rotations, chain.rotations)
            assert np.array_equal(state_out.tail_positions, chain.tails)
            assert (state_out.frame, chain.state.frame) == (k, k)
            assert state_out.time == chain.state.time == pytest.approx(k * DT, abs=1e-12)
    assert max(float(np.abs(c.positions - c.model.state(_swing(60)).node_positions).max())
               for c in chains) > 0.05  # the chains did swing away from rest


def test_step_reads_state_in_and_the_control_and_writes_only_state_out() -> None:
    chains, _ = _rig()
    chain = chains[0]  # three collision passes against a sphere and a capsule
    model = chain.model
    solver = SpringSolver(model, 3)
    state_in = model.state(_swing(0))
    control_parent = _swing(0)
    for k in range(1, 10):  # into contact, moving, so every term of the update is at work
        control_parent = _swing(k)
        solver.step(state_in, state_in, SpringControl(control_parent, chain.colliders), DT)
    kept = state_in.copy()
    assert (kept.frame, kept.time) == (9, pytest.approx(9 * DT, abs=1e-15))
    ball, bar = chain.colliders
    poses = [ball.center.copy(), bar.a.copy(), bar.b.copy()]
    probe = state_in.tail_positions
    phis = [c.query(probe, 1.0)[0] for c in chain.colliders]
    radius = model.joint_radius
    assert min(float((p - radius).min()) for p in phis) < 1e-3  # touching a collider
    parent = _swing(10)
    kept_parent = parent.copy()
    # Read-only inputs: any write into them would raise.
    for array in (parent, state_in.node_positions, state_in.tail_positions,
                  state_in.tail_previous_positions, state_in.joint_rotations):
        array.flags.writeable = False
    control = SpringControl(parent, tuple(chain.colliders))
    state_out = model.state()
    solver.step(state_in, state_out, control, DT)
    names = ("node_positions", "tail_positions", "tail_previous_positions", "joint_rotations")
    for name in names:
        assert np.array_equal(getattr(state_in, name), getattr(kept, name)), name
    for a, b in itertools.product(names, names):  # new arrays, none shared with state_in
        assert not np.shares_memory(getattr(state_out, a), getattr(state_in, b)), (a, b)
    assert (state_in.frame, state_in.time) == (kept.frame, kept.time)
    assert (state_out.frame, state_out.time) == (kept.frame + 1, kept.time + DT)
    assert np.array_equal(state_out.tail_previous_positions, kept.tail_positions)
    assert np.abs(state_out.tail_positions - kept.tail_positions).max() > 1e-4  # it moved
    assert control.parent_matrix is parent and np.array_equal(parent, kept_parent)
    assert control.colliders == (ball, bar)
    assert all(np.array_equal(a, b) for a, b in zip((ball.center, bar.a, bar.b), poses))
    assert all(np.array_equal(c.query(probe, 1.0)[0], p) for c, p in zip(control.colliders, phis))
    with pytest.raises(dataclasses.FrozenInstanceError):
        control.parent_matrix = np.eye(4)  # type: ignore[misc]
    # A refused step leaves state_out as it was.
    before = state_out.copy()
    other = SpringModel.from_points([[0, 0, 0], [0, -1, 0]]).state()
    with pytest.raises(SpringChainError, match="1 tails but the model has 3 joints"):
        solver.step(other, state_out, control, DT)
    with pytest.raises(SpringChainError, match="rigid"):
        solver.step(state_in, state_out, SpringControl(np.diag([2.0, 2.0, 2.0, 1.0])), DT)
    for name in names:
        assert np.array_equal(getattr(state_out, name), getattr(before, name)), name


def test_the_model_is_read_only_and_rest_state_is_still() -> None:
    points = np.array([[0.0, 0.0, 0.0], [0.1, -0.02, 0.0], [0.15, -0.1, 0.03]])
    model = SpringModel.from_points(points, SpringSettings(drag=0.2, gravity=1.5))
    assert model.joint_count == 2 and len(model.joint_settings) == 2
    assert np.allclose(model.joint_length, np.linalg.norm(np.diff(points, axis=0), axis=1))
    assert np.allclose(model.joint_gravity, [[0.0, -1.5, 0.0]] * 2)
    assert np.array_equal(model.joint_keep, [0.8, 0.8])
    for array in (model.node_rest_positions, model.joint_rest_offset, model.joint_length,
                  model.joint_axis, model.joint_stiffness, model.joint_gravity,
                  model.joint_keep, model.joint_radius):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0
    parent = rigid(0.7, (1.0, 2.0, 0.5), (0.3, -0.2, 1.0))
    rest = model.state(parent)
    assert np.allclose(rest.node_positions, points @ parent[:3, :3].T + parent[:3, 3],
                       atol=1e-15)
    assert np.array_equal(rest.tail_positions, rest.tail_previous_positions)
    assert np.array_equal(rest.joint_rotations, np.stack([parent[:3, :3]] * 2))
    assert (rest.frame, rest.time) == (0, 0.0)
    softer = model.with_settings([SpringSettings(), SpringSettings(stiffness=0.25)])
    assert softer.joint_rest_offset is model.joint_rest_offset
    assert np.array_equal(softer.joint_stiffness, [1.0, 0.25])
    assert model.joint_settings == (SpringSettings(drag=0.2, gravity=1.5),) * 2  # unchanged


# --- input checks -----------------------------------------------------------------------------
@pytest.mark.parametrize("points, message", [
    ([[0, 0, 0]], "at least two nodes"),
    ([[0, 0, 0], [0, 0, 0]], "bone 0 has zero length"),
    ([[0, 0, 0], [1, 0]], r"\(K\+1, 3\)"),
    ([[0, 0, 0, 0], [1, 0, 0, 0]], "shape"),
    ([[0, 0, 0], [1, 0, np.nan]], "point 1 is not finite"),
    ("abc", "array of numbers"),
])
def test_bad_points_are_refused(points, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpringChainError, match=message):
        SpringChain(points)


def test_bad_settings_colliders_and_steps_are_refused() -> None:
    pts = [[0, 0, 0], [0, -1, 0], [0, -2, 0]]
    with pytest.raises(SpringChainError, match="3 entries but the chain has 2 joints"):
        SpringChain(pts, [SpringSettings()] * 3)
    with pytest.raises(SpringChainError, match=r"settings\[1\] is not a SpringSettings"):
        SpringChain(pts, [SpringSettings(), {"drag": 0.1}])  # type: ignore[list-item]
    with pytest.raises(SettingsError, match="'drag' = 1.5"):
        SpringSettings(drag=1.5)
    with pytest.raises(SettingsError, match="'stiffness'"):
        SpringSettings(stiffness=-1.0)
    with pytest.raises(SettingsError, match="gravity_direction"):
        SpringSettings(gravity_direction=(0.0, float("inf"), 0.0))
    with pytest.raises(SpringChainError, match=r"colliders\[1\] is not a pbdcloth collider"):
        SpringChain(pts, colliders=[Sphere((0, 0, 0), 1.0), "ball"])  # type: ignore[list-item]
    with pytest.raises(SpringChainError, match="collision_passes"):
        SpringChain(pts, collision_passes=0)
    chain = SpringChain(pts)
    for dt in (0.0, -0.1, float("nan")):
        with pytest.raises(SpringChainError, match="time step"):
            chain.step(dt)
    with pytest.raises(SpringChainError, match="4x4"):
        chain.step(DT, np.eye(3))
    with pytest.raises(SpringChainError, match="rigid"):
        chain.step(DT, np.diag([2.0, 2.0, 2.0, 1.0]))
    with pytest.raises(SpringChainError, match="bottom row"):
        chain.step(DT, np.ones((4, 4)))
    assert np.all(np.isfinite(chain.positions))  # refused steps left the state alone


# --- VRMC_springBone export and import --------------------------------------------------------
def test_exported_json_validates_against_the_vrm_schema() -> None:
    validator = _schema_validator()
    chains, named = _rig()
    obj = vrm.spring_bone_json(chains, ["tail", "ear"], ["hips", "hips"], named)
    assert list(validator.iter_errors(obj)) == []
    assert [n["name"] for n in obj["extras"]["pbdcloth"]["nodes"]][:6] == [
        "hips", "tail_0", "tail_1", "tail_2", "tail_3", "ear_0"]
    # Controls: the validator does reach the $ref'd joint, shape and glTF id schemas.
    for path, value in ((("springs", 0, "joints", 1, "dragForce"), 1.5),
                        (("springs", 0, "joints", 0, "node"), "tail_0"),
                        (("colliders", 0, "node"), -1),
                        (("colliders", 0, "shape", "capsule"), {"radius": 0.1})):
        bad = copy.deepcopy(obj)
        target = bad
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert list(validator.iter_errors(bad)), path


def test_exported_gltf_carries_a_valid_extension_on_a_node_chain(tmp_path: Path) -> None:
    chains, named = _rig()
    path = vrm.write_gltf(tmp_path / "rig.gltf", chains, ["tail", "ear"], None, named)
    doc = json.loads(path.read_text())
    assert doc["extensionsUsed"] == ["VRMC_springBone"]
    ext = doc["extensions"]["VRMC_springBone"]
    assert list(_schema_validator().iter_errors(ext)) == []
    nodes = doc["nodes"]
    spring = ext["springs"][0]
    ids = [j["node"] for j in spring["joints"]]
    assert [nodes[i]["name"] for i in ids] == ["tail_0", "tail_1", "tail_2", "tail_3"]
    for a, b in itertools.pairwise(ids):  # each joint node is the child of the one before
        assert nodes[a]["children"] == [b]
    assert [j for j in spring["joints"][-1]] == ["node"]  # the last node is only a tail
    assert [nodes[c["node"]]["name"] for c in ext["colliders"]] == ["ball", "collider_1"]


@pytest.mark.parametrize("form", ["json", "gltf"])
def test_round_trip_export_import_step_is_identical(form: str, tmp_path: Path) -> None:
    chains, named = _rig()
    if form == "json":
        path = vrm.write_spring_bone_json(tmp_path / "rig.json", chains, ["tail", "ear"],
                                          None, named)
        rig = vrm.read_spring_bone_json(path)
    else:
        rig = vrm.read_gltf(vrm.write_gltf(tmp_path / "rig.gltf", chains, ["tail", "ear"],
                                           None, named))
    assert rig.names == ["tail", "ear"]
    assert rig.parent_names == ["tail_parent", "ear_parent"]
    assert rig.collider_names == ["ball", "collider_1"]
    assert rig.chains[1].colliders[0] is rig.chains[0].colliders[1]  # shared, as exported
    for a, b in zip(chains, rig.chains):
        assert a.settings == b.settings
        assert (a.collision_passes, a.settle_contacts) == (b.collision_passes, b.settle_contacts)
        assert np.array_equal(a.rest_points, b.rest_points)
    for fa, fb in zip(_drive(chains), _drive(rig.chains)):
        assert np.array_equal(fa, fb)
    for a, b in zip(chains, rig.chains):
        assert np.array_equal(a.rotations, b.rotations)


def test_import_from_nodes_alone_agrees_to_rounding() -> None:
    """Without our extras (as another tool would write it) the rest points come from the node
    hierarchy; they differ from the given ones only by the rounding of the offsets' sums."""
    chains, named = _rig()
    obj = vrm.spring_bone_json(chains, ["tail", "ear"], None, named)
    for spring in obj["springs"]:
        del spring["extras"]["pbdcloth"]["restPoints"]
    rig = vrm.read_spring_bone_json(obj)
    for a, b in zip(chains, rig.chains):
        assert np.abs(a.rest_points - b.rest_points).max() < 1e-15
    for fa, fb in zip(_drive(chains, 30), _drive(rig.chains, 30)):
        assert np.abs(fa - fb).max() < 1e-12


def test_import_reads_a_plain_vrm_object_with_rotated_nodes_and_schema_defaults() -> None:
    """A glTF document as a VRM tool writes it: joints with only some settings, nodes rotated
    and translated, no pbdcloth extras (so one collision pass: plain VRM)."""
    q = [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]  # 90 degrees about z (x,y,z,w)
    doc = {
        "nodes": [
            {"name": "hips", "translation": [0.0, 1.0, 0.0], "children": [1]},
            {"name": "a", "translation": [0.1, 0.0, 0.0], "rotation": q, "children": [2]},
            {"name": "b", "translation": [0.2, 0.0, 0.0], "children": [3]},  # local x = world y
            {"name": "c", "translation": [0.2, 0.0, 0.0]},
            {"name": "head", "translation": [0.0, 1.5, 0.0]},
        ],
        "extensionsUsed": ["VRMC_springBone"],
        "extensions": {"VRMC_springBone": {
            "specVersion": "1.0",
            "colliders": [{"node": 4, "shape": {"sphere": {"radius": 0.1}}}],
            "colliderGroups": [{"colliders": [0]}],
            "springs": [{"joints": [{"node": 1, "stiffness": 0.5}, {"node": 2}, {"node": 3}],
                         "colliderGroups": [0]}],
        }},
    }
    assert list(_schema_validator().iter_errors(doc["extensions"]["VRMC_springBone"])) == []
    rig = vrm.read_spring_bone_json(doc)
    chain = rig.chains[0]
    # In the frame of "hips" (translation (0, 1, 0)): a at (0.1, 0, 0); then +0.2 along local x,
    # which the 90 degree turn maps onto +y.
    assert np.allclose(chain.rest_points, [[0.1, 0, 0], [0.1, 0.2, 0], [0.1, 0.4, 0]],
                       atol=1e-15)
    assert np.allclose(rig.parent_matrices[0][:3, 3], [0.0, 1.0, 0.0])
    assert chain.settings[0] == SpringSettings(stiffness=0.5, gravity=0.0, drag=0.5, radius=0.0)
    assert chain.settings[1] == SpringSettings(stiffness=1.0, gravity=0.0, drag=0.5, radius=0.0)
    assert chain.collision_passes == 1 and not chain.settle_contacts
    assert isinstance(chain.colliders[0], Sphere)
    assert np.allclose(chain.colliders[0].center, [0.0, 1.5, 0.0])
    assert rig.names == ["spring_0"] and rig.collider_names == ["head"]
    assert np.allclose(chain.positions, chain.rest_points + [0.0, 1.0, 0.0])  # reset at rest


def test_export_and_import_refuse_what_vrm_cannot_say(tmp_path: Path) -> None:
    chain = SpringChain([[0, 0, 0], [0, -1, 0]], colliders=[Plane((0, 0, 0), (0, 1, 0))])
    with pytest.raises(vrm.VrmError, match="Plane; VRMC_springBone 1.0 has only spheres"):
        vrm.spring_bone_json([chain])
    with pytest.raises(vrm.VrmError, match="no spring chains"):
        vrm.spring_bone_json([])
    plain = SpringChain([[0, 0, 0], [0, -1, 0]])
    with pytest.raises(vrm.VrmError, match="unique"):
        vrm.spring_bone_json([plain, plain], names=["a", "a"])
    obj = vrm.spring_bone_json([plain])
    bad = copy.deepcopy(obj)
    bad["springs"][0]["center"] = 0
    with pytest.raises(vrm.VrmError, match="center space"):
        vrm.read_spring_bone_json(bad)
    bad = copy.deepcopy(obj)
    bad["springs"][0]["joints"][0]["dragForce"] = 2.0
    with pytest.raises(vrm.VrmError, match=r"springs\[0\].joints\[0\].*'drag' = 2.0"):
        vrm.read_spring_bone_json(bad)
    bad = copy.deepcopy(obj)
    bad["springs"][0]["joints"] = bad["springs"][0]["joints"][:1]
    with pytest.raises(vrm.VrmError, match="1 joint"):
        vrm.read_spring_bone_json(bad)
    bad = copy.deepcopy(obj)
    bad["specVersion"] = "0.0"
    with pytest.raises(vrm.VrmError, match="specVersion"):
        vrm.read_spring_bone_json(bad)
    bad = copy.deepcopy(obj)
    del bad["extras"]
    with pytest.raises(vrm.VrmError, match="no node array"):
        vrm.read_spring_bone_json(bad)
    with pytest.raises(vrm.VrmError, match="not found"):
        vrm.read_gltf(tmp_path / "missing.gltf")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(vrm.VrmError, match="not JSON"):
        vrm.read_spring_bone_json(tmp_path / "broken.json")


# --- the demo ---------------------------------------------------------------------------------
def test_springs_demo_runs_and_writes_its_outputs(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from pbdcloth.cli.main import main
    from pbdcloth.scenes.cloth import SCENES

    assert "springs" in SCENES
    assert main(["demo", "--scene", "springs", "--frames", "12", "--quiet",
                 "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "bone length error" in printed
    data = json.loads((tmp_path / "chains.json").read_text())
    assert data["frames"] == 12
    assert [len(v) for v in data["chains"].values()] == [13, 13]
    assert np.asarray(data["chains"]["scabbard"]).shape == (13, 5, 3)
    assert (tmp_path / "paths.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["max_length_error"] < 1e-9
    assert summary["max_tip_swing"]["plume"] > 0.01  # the walk does swing the chains
    rig = vrm.read_gltf(tmp_path / "springs.gltf")
    assert rig.names == ["scabbard", "plume"] and rig.parent_names == ["chest", "chest"]
    assert {"thigh_l", "head"} <= set(rig.collider_names)
    # Cloth settings make no sense here and are refused, not ignored.
    assert main(["demo", "--scene", "springs", "--substeps", "3", "--out", str(tmp_path)]) == 2


def test_skipping_far_colliders_changes_nothing() -> None:
    """The chain skips the exact query of colliders certainly out of reach; a subclass (always
    queried) must give bit-identical results over a run with many contacts."""

    class QueriedSphere(Sphere):
        pass

    class QueriedCapsule(Capsule):
        pass

    def make(sphere: type, capsule: type) -> SpringChain:
        return SpringChain(
            [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.2, 0.0, 0.0], [0.3, 0.0, 0.0]],
            SpringSettings(gravity=2.0, stiffness=0.4),
            colliders=[sphere((0.15, -0.25, 0.0), 0.2), capsule((0.3, -0.3, -0.2),
                                                               (0.3, -0.3, 0.2), 0.05),
                       sphere((3.0, 0.0, 0.0), 0.1)],
            collision_passes=4, settle_contacts=True)

    fast, slow = make(Sphere, Capsule), make(QueriedSphere, QueriedCapsule)
    for fa, fb in zip(_drive([fast], 90), _drive([slow], 90)):
        assert np.array_equal(fa, fb)


def test_settings_and_passes_can_change_between_steps() -> None:
    points = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.2, 0.0, 0.0]]
    ball = Sphere((0.15, -0.12, 0.0), 0.08)
    wanted = [SpringSettings(gravity=2.0), SpringSettings(gravity=1.0, drag=0.1)]
    a = SpringChain(points, wanted, colliders=[ball], collision_passes=2)
    b = SpringChain(points, colliders=[ball])
    b.settings = wanted
    b.collision_passes = 2
    assert b.settings == tuple(wanted)
    for fa, fb in zip(_drive([a], 40), _drive([b], 40)):
        assert np.array_equal(fa, fb)
    with pytest.raises(SpringChainError, match="3 entries but the chain has 2 joints"):
        b.settings = [SpringSettings()] * 3
    with pytest.raises(SpringChainError, match="collision_passes"):
        b.collision_passes = 0
    assert b.settings == tuple(wanted) and b.collision_passes == 2  # unchanged by the refusals
    b.colliders.append("not a collider")  # type: ignore[arg-type]
    with pytest.raises(SpringChainError, match=r"colliders\[1\]"):
        b.step(DT)
