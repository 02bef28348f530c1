"""The solver SOPs behave like Houdini solvers, through the stub-checked hou double.

Animated parameters sampled frame by frame (a definition change invalidates, playback does not),
the frame cache (scrubbing is a lookup; over its memory limit the oldest frames go and replay is
still right), inputs checked per frame, interruption with Esc, attribute hygiene, Reset
Simulation and Save to Disk.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.houdini import operators as ops
from pbdcloth.houdini import sops
from pbdcloth.houdini.cache import MEGABYTE
from pbdcloth.settings import SpringSettings
from pbdcloth.springs import SpringChain

NX, NY = 6, 5
FAST = dict(substeps=3, density=0.2)
LAST = 40


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


@pytest.fixture()
def steps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every ClothSolver.step of every solver: the solver frames really simulated."""
    count = [0]
    step = ClothSolver.step

    def counted(self, dt=1.0 / 24.0):  # type: ignore[no-untyped-def]
        count[0] += 1
        return step(self, dt)

    monkeypatch.setattr(ClothSolver, "step", counted)
    return count


def _grid(point_floats=None):  # type: ignore[no-untyped-def]
    pos, quads = scenes.grid_quads(NX, NY)
    return pos, quads, scenes.geometry(pos, quads, groups={"pins": list(range(NX))},
                                       point_floats=point_floats)


def _solver(targets=None, point_floats=None, animated_cloth=True, **parms):  # type: ignore
    pos, quads, geo = _grid(point_floats)
    grid = scenes.source("/obj/cloth/grid", lambda f: geo, animated=animated_cloth)
    pre = scenes.sop(ops.PREPROCESS, "/obj/cloth/pre", [grid], pin_group="pins")
    node = scenes.sop(ops.SOLVER, "/obj/cloth/solver",
                      [scenes.cooked(pre, sops.cook_preprocess), None, targets],
                      **{**FAST, **parms})
    node._cook_fn = sops.cook_solver
    return pos, quads, node


def _play(node, frames, cook=sops.cook_solver):  # type: ignore[no-untyped-def]
    return {f: node._cook(f, cook)._point_values["P"].copy() for f in frames}


def _sim(node) -> sops.NodeSimulation:  # type: ignore[no-untyped-def]
    sim = node.cachedUserData(sops.STATE_KEY)
    assert isinstance(sim, sops.NodeSimulation)
    return sim


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32).astype(np.float64)


def _core(pos, quads, last, damping=lambda f: 0.0, targets=None):  # type: ignore
    """The core run the node must equal: frame f stepped with the parameter values at f."""
    solver = ClothSolver(pos, quads, pinned=np.arange(NX),
                         settings=ClothSettings(**FAST, damping=damping(1)))
    for f in range(2, last + 1):
        solver.settings = solver.settings.replace(damping=damping(f))
        if targets is not None:
            solver.set_pin_targets(targets(f))
        solver.step(1.0 / 24.0)
    return solver.positions


# --- animated parameters -------------------------------------------------------------------------

def test_keyed_damping_plays_1_to_40_in_39_solver_frames_with_each_frames_value(
        hou, steps) -> None:  # type: ignore[no-untyped-def]
    keys = hou._Keys({1: 0.0, 40: 3.0})
    pos, quads, node = _solver(damping=keys)
    played = _play(node, range(1, LAST + 1))
    assert steps[0] == LAST - 1  # was 780: every cook restarted with the new value
    expected = _core(pos, quads, 20, damping=keys.at)
    assert np.array_equal(played[20], _f32(expected))
    # Negative control: the value at frame 20 held from the start gives another result.
    held = _core(pos, quads, 20, damping=lambda f: keys.at(20))
    assert not np.allclose(played[20], _f32(held), atol=1e-6)


def test_a_new_keyframe_invalidates_but_playback_does_not(hou) -> None:
    keys = hou._Keys({1: 0.0, 40: 3.0})
    pos, quads, node = _solver(damping=keys)
    _play(node, range(1, 21))
    sim = _sim(node)
    _play(node, range(21, 31))
    assert _sim(node) is sim and sim.stepped == 29
    node._parm_values["damping"] = hou._Keys({1: 0.0, 20: 3.0, 40: 3.0})  # a key added
    out = node._cook(30, sops.cook_solver)._point_values["P"]
    assert _sim(node) is not sim and _sim(node).stepped == 29
    new = hou._Keys({1: 0.0, 20: 3.0, 40: 3.0})
    assert np.array_equal(out, _f32(_core(pos, quads, 30, damping=new.at)))
    # A static value edited (no animation) invalidates too; re-entering the same value does not.
    sim = _sim(node)
    node._parm_values["substeps"] = 4
    node._cook(30, sops.cook_solver)
    assert _sim(node) is not sim
    sim = _sim(node)
    node._parm_values["substeps"] = 4
    node._cook(30, sops.cook_solver)
    assert _sim(node) is sim


# --- the frame cache ------------------------------------------------------------------------------

def test_scrub_40_to_10_to_40_steps_no_frame(hou, steps) -> None:  # type: ignore
    _, _, node = _solver()
    played = _play(node, range(1, LAST + 1))
    before = _sim(node).stepped
    assert before == steps[0] == LAST - 1
    back = node._cook(10, sops.cook_solver)._point_values["P"]
    again = node._cook(LAST, sops.cook_solver)._point_values["P"]
    sub = node._cook(10.5, sops.cook_solver)._point_values["P"]  # a sub-frame: its frame
    assert _sim(node).stepped == before and steps[0] == before
    assert np.array_equal(back, played[10]) and np.array_equal(again, played[LAST])
    assert np.array_equal(sub, played[10])
    assert _sim(node).cache.frames() == list(range(1, LAST + 1))


def test_downstream_asking_f_then_f_minus_1_costs_one_step_a_frame(hou, steps) -> None:  # type: ignore
    _, _, node = _solver()
    for f in range(2, LAST + 1):
        node._cook(f, sops.cook_solver)
        node._cook(f - 1, sops.cook_solver)  # Trail, Time Shift, Point Velocity
    assert steps[0] == LAST - 1  # was 818 without a cache


def test_over_the_memory_limit_the_oldest_frames_go_and_replay_is_still_right(hou) -> None:
    _, _, reference = _solver()
    truth = _play(reference, range(1, LAST + 1))
    entry = _sim(reference).cache.get(5)
    assert entry is not None
    keep = 10
    _, _, node = _solver(cache_memory=keep * entry.nbytes / MEGABYTE)
    _play(node, range(1, LAST + 1))
    cache = _sim(node).cache
    assert cache.frames() == list(range(LAST - keep + 1, LAST + 1))  # frames 1..30 dropped
    assert cache.nbytes <= keep * entry.nbytes and cache.dropped == LAST - keep
    stepped = _sim(node).stepped
    replay = _play(node, [10, 12, 35, LAST])
    for f, p in replay.items():
        assert np.array_equal(p, truth[f]), f
    # Frames 2..10 again (1..10 now push out 31..40), 11-12 on, 13..35 and 36..40 again.
    assert _sim(node).stepped == stepped + 39
    assert cache.frames() == list(range(LAST - keep + 1, LAST + 1))


def test_cache_simulation_off_keeps_only_the_live_state(hou) -> None:
    _, _, reference = _solver()
    truth = _play(reference, range(1, 21))
    _, _, node = _solver(cache_simulation=False)
    _play(node, range(1, 21))
    assert len(_sim(node).cache) == 0
    assert np.array_equal(node._cook(5, sops.cook_solver)._point_values["P"], truth[5])


def test_reset_simulation_starts_over(hou) -> None:
    _, _, node = _solver()
    _play(node, range(1, 11))
    sim = _sim(node)
    sops.reset_simulation(node)  # the button's callback: it cooks the node again (frame 10)
    assert _sim(node) is not sim and _sim(node).stepped == 9
    assert _sim(node).cache.frames() == list(range(1, 11))


# --- inputs read per frame -----------------------------------------------------------------------

def test_editing_a_pin_target_keyframe_after_playing_invalidates_frame_10(hou) -> None:
    pos, quads, _ = _grid()
    key = {"z40": 0.4}  # the pin targets' keyframe at frame 40 (linear from 0 at frame 1)

    def moved(frame: float) -> np.ndarray:
        return pos + [0.0, 0.0, key["z40"] * (frame - 1) / 39.0]

    targets = scenes.source("/obj/targets", lambda f: scenes.geometry(moved(f), quads))
    _, _, node = _solver(targets=targets)
    stale = _play(node, range(1, LAST + 1))[10]
    key["z40"] = -0.8  # the keyframe edited upstream
    fresh = node._cook(10, sops.cook_solver)._point_values["P"]
    assert not np.allclose(fresh, stale, atol=1e-4)
    assert np.array_equal(fresh, _f32(_core(pos, quads, 10, targets=moved)))
    assert _sim(node).cache.frames() == list(range(1, 11))


def test_a_static_cloth_input_is_fingerprinted_without_cooking_it_at_the_start_frame(hou) -> None:
    _, _, moving = _solver()
    _, _, still = _solver(animated_cloth=False)
    a, b = _play(moving, range(1, 8)), _play(still, range(1, 8))
    assert all(np.array_equal(a[f], b[f]) for f in a)
    starts = [f for i, f in still._input_frames if i == 0]
    assert starts.count(1.0) == 1  # only when the simulation was built
    assert [f for i, f in moving._input_frames if i == 0].count(1.0) == 8  # per cook + build


# --- interruption --------------------------------------------------------------------------------

def test_esc_at_frame_15_keeps_frames_1_to_14_and_warns(hou) -> None:
    _, _, reference = _solver()
    truth = _play(reference, range(1, LAST + 1))
    _, _, node = _solver()
    # Esc during the 14th progress update from now: the one before frame 15.
    hou._state.interrupt_on_call = hou._state.progress_calls + 14
    out = node._cook(LAST, sops.cook_solver)._point_values["P"]
    assert _sim(node).cache.frames() == list(range(1, 15))
    assert np.array_equal(out, truth[14])
    assert any("interrupted" in w and "frame 14 of 40" in w for w in node.warnings())
    assert hou._state.operations and 0.0 <= min(hou._state.progress) < max(hou._state.progress)
    # Cooking again continues from frame 14 (no frame simulated twice) and ends where an
    # uninterrupted run does.
    again = node._cook(LAST, sops.cook_solver)._point_values["P"]
    assert np.array_equal(again, truth[LAST]) and _sim(node).stepped == LAST - 1
    assert not node.warnings()


# --- attribute hygiene ---------------------------------------------------------------------------

def test_an_input_with_a_3_float_w_cooks_and_keeps_its_w(hou) -> None:
    spin = np.tile([0.0, 1.0, 0.0], (NX * NY, 1))  # angular velocity, as Vellum writes it
    _, _, node = _solver(point_floats={"w": spin})
    out = node._cook(5, sops.cook_solver)
    assert out.findPointAttrib("w").size() == 3
    assert np.array_equal(out._point_values["w"], spin)
    assert np.all(out._point_values["P"][:NX] == _f32(scenes.grid_quads(NX, NY)[0][:NX]))
    assert out.findPointAttrib("v").option("type") == "vector"


def test_attribute_clashes_are_node_errors_naming_the_attribute(hou) -> None:
    from pbdcloth.houdini import geometry as hgeo

    pos, quads, geo = _grid()
    geo.addAttrib(hou.attribType.Point, "pbd_w", (0.0, 0.0))
    with pytest.raises(hgeo.GeometryError, match="'pbd_w' exists with 2"):
        hgeo.write_point_floats(geo, "pbd_w", np.zeros(len(pos)))
    bad = scenes.sop(ops.PREPROCESS, "/obj/p", [scenes.source("/obj/g", lambda f: geo)],
                     pin_group="pins")
    with pytest.raises(hou.NodeError, match="pbd_w"):
        bad._cook(1, sops.cook_preprocess)
    # Houdini's own refusal (hou.OperationFailed) is turned into a node error too.
    geo2 = hou.Geometry(geo)
    geo2._read_only = True
    with pytest.raises(hgeo.GeometryError, match="could not write point attribute 'P'"):
        hgeo.write_positions(geo2, pos)


# --- save to disk --------------------------------------------------------------------------------

def test_save_to_disk_writes_each_cached_frame_through_the_cache(hou, tmp_path: Path) -> None:
    _, _, node = _solver(cache_path=str(tmp_path / "cloth.$F4.bgeo.sc"))
    played = _play(node, range(1, 6))
    stepped = _sim(node).stepped
    written = sops.save_to_disk(node)
    assert [p.name for p in written] == [f"cloth.{f:04d}.bgeo.sc" for f in range(1, 6)]
    assert _sim(node).stepped == stepped  # lookups only
    for f, path in zip(range(1, 6), written, strict=True):
        data = json.loads(path.read_text())
        assert np.array_equal(np.array(data["point"]["P"]), played[f])
    assert not list(tmp_path.glob(".partial-*"))
    with pytest.raises(ValueError, match="no frame token"):
        sops.save_to_disk(node, str(tmp_path / "cloth.bgeo.sc"))


# --- the spring chain SOP ------------------------------------------------------------------------

def test_spring_chains_sample_keyed_stiffness_and_cache_frames(hou) -> None:
    rest = np.array([[0.1 * i, 1.0, 0.0] for i in range(5)])
    lines = [[0, 1, 2, 3, 4]]

    def animated(frame: float) -> np.ndarray:
        return rest + [0.0, 0.0, 0.2 * np.sin(0.3 * (frame - 1))]

    chains = scenes.source("/obj/rig/chains",
                           lambda f: scenes.geometry(animated(f), lines, closed=False))
    keys = hou._Keys({1: 0.2, 30: 2.0})
    node = scenes.sop(ops.SPRING_CHAINS, "/obj/rig/springs", [chains], stiffness=keys,
                      gravity=2.0)
    played = _play(node, range(1, 31), sops.cook_spring_chains)
    assert _sim(node).stepped == 29
    chain = SpringChain(rest, settings=SpringSettings(stiffness=keys.at(1), gravity=2.0))
    for f in range(2, 21):
        chain.settings = SpringSettings(stiffness=keys.at(f), gravity=2.0)
        now = animated(f)
        chain.step(1.0 / 24.0, parent=sops.parent_matrix(rest[0], now[0], rest[1] - rest[0],
                                                         now[1] - now[0]))
    assert np.array_equal(played[20], _f32(chain.positions))
    node._cook(20, sops.cook_spring_chains)
    node._cook(5, sops.cook_spring_chains)
    assert _sim(node).stepped == 29  # scrubbing back is a lookup


# --- colliders read per frame, and resuming from a cached frame ----------------------------------

def _moving_vdb(frame: float) -> hou_double.VDB:
    base = scenes.sphere_vdb((0.0, 0.55, 0.0), 0.3, 0.05, band_voxels=3)
    return hou_double.VDB(base._values, base._lo, 0.05, [0.01 * (frame - 1), 0.0, 0.0],
                          base._background)


@pytest.mark.slow  # about 10 s: CI runs it (./scripts/test.sh --all)
def test_resuming_from_a_cached_frame_restores_colliders_and_pins(hou) -> None:
    """Frame 41 after the live state went back to frame 5 resumes from cached frame 40: the
    VDB collider's pose and the pins' targets of frame 40 come back with it."""
    pos, quads, _ = _grid()

    def moved(frame: float) -> np.ndarray:
        return pos + [0.0, 0.01 * (frame - 1), 0.0]

    def make():  # type: ignore[no-untyped-def]
        collider = scenes.source("/obj/vdb", lambda f: scenes.vdb_geometry(_moving_vdb(f)))
        targets = scenes.source("/obj/targets", lambda f: scenes.geometry(moved(f), quads))
        _, _, node = _solver(targets=targets)
        node._inputs[1] = collider
        return node

    truth = _play(make(), range(1, LAST + 2))
    node = make()
    _play(node, range(1, LAST + 1))
    entry = _sim(node).cache.get(3)
    assert entry is not None
    node._parm_values["cache_memory"] = 20 * entry.nbytes / MEGABYTE  # frames 21..40 stay
    node._cook(LAST, sops.cook_solver)
    assert _sim(node).cache.frames() == list(range(21, LAST + 1))
    assert np.array_equal(node._cook(5, sops.cook_solver)._point_values["P"], truth[5])
    assert _sim(node).frame == 5 and LAST in _sim(node).cache
    stepped = _sim(node).stepped
    out = node._cook(LAST + 1, sops.cook_solver)._point_values["P"]
    assert _sim(node).stepped == stepped + 1  # one frame from the cached frame 40
    assert np.array_equal(out, truth[LAST + 1])


@pytest.mark.slow
def test_editing_the_collider_animation_invalidates_the_cached_frames(hou) -> None:
    offset = {"dx": 0.01}

    def vdb(frame: float) -> hou_double.VDB:
        base = _moving_vdb(1)
        return hou_double.VDB(base._values, base._lo, 0.05, [offset["dx"] * (frame - 1), 0, 0],
                              base._background)

    _, _, node = _solver()
    node._inputs[1] = scenes.source("/obj/vdb", lambda f: scenes.vdb_geometry(vdb(f)))
    _play(node, range(1, 13))
    sim = _sim(node)
    node._cook(8, sops.cook_solver)
    assert _sim(node) is sim
    offset["dx"] = -0.02
    node._cook(8, sops.cook_solver)
    assert _sim(node) is not sim and _sim(node).cache.frames() == list(range(1, 9))


def test_deforming_collision_polygons_are_read_and_converted_per_frame(hou) -> None:
    from pbdcloth.colliders import SdfSequence

    ball, faces = scenes.grid_quads(4, 4, size=0.4, height=0.5)

    def polygons(frame: float):  # type: ignore[no-untyped-def]
        squash = ball * [1.0, 1.0 - 0.01 * (frame - 1), 1.0]
        return scenes.geometry(squash, faces)

    _, _, node = _solver()
    node._inputs[1] = scenes.source("/obj/body", polygons)
    node._cook(1, sops.cook_solver)
    assert not node.warnings()
    node._cook(4, sops.cook_solver)
    assert [f for i, f in node._input_frames if i == 1].count(3.0) >= 1  # every frame read
    assert not node.warnings()  # no start-frame shape kept: nothing to warn about
    assert isinstance(_sim(node).stepper.solver.colliders[0], SdfSequence)


@pytest.mark.parametrize("extra", [
    dict(self_collision=True),
    dict(model="xpbd"),
    pytest.param(dict(backend="warp", device="cpu"), marks=pytest.mark.skipif(
        __import__("importlib").util.find_spec("warp") is None, reason="no warp-lang")),
], ids=["self_collision", "xpbd", "warp"])
def test_a_resumed_run_equals_an_uninterrupted_one_bit_for_bit(hou, extra) -> None:  # type: ignore
    """Self-collision lists, XPBD multipliers and the Warp device state carry nothing a
    snapshot misses: resuming from cached frame 20 after going back gives frames 21, 22 as a
    straight run does."""
    _, _, reference = _solver(**extra)
    truth = _play(reference, range(1, 23))
    _, _, node = _solver(**extra)
    _play(node, range(1, 21))
    entry = _sim(node).cache.get(3)
    assert entry is not None
    node._parm_values["cache_memory"] = 10 * entry.nbytes / MEGABYTE
    node._cook(20, sops.cook_solver)
    node._cook(5, sops.cook_solver)  # from the start again: the live state is at frame 5
    assert _sim(node).frame == 5 and 20 in _sim(node).cache
    assert np.array_equal(node._cook(21, sops.cook_solver)._point_values["P"], truth[21])
    assert np.array_equal(node._cook(22, sops.cook_solver)._point_values["P"], truth[22])


def test_playing_on_after_an_input_edit_starts_over_even_without_the_cache(hou) -> None:
    """Resuming from the live state checks the inputs at its frame too (Cache Simulation off:
    nothing cached to compare with but the live state's own frame)."""
    pos, quads, _ = _grid()
    key = {"z40": 0.4}

    def moved(frame: float) -> np.ndarray:
        return pos + [0.0, 0.0, key["z40"] * (frame - 1) / 39.0]

    targets = scenes.source("/obj/targets", lambda f: scenes.geometry(moved(f), quads))
    _, _, node = _solver(targets=targets, cache_simulation=False)
    _play(node, range(1, 11))
    key["z40"] = -0.8
    out = node._cook(11, sops.cook_solver)._point_values["P"]
    assert np.array_equal(out, _f32(_core(pos, quads, 11, targets=moved)))


def test_the_cached_frames_go_to_the_cores_caches_without_cooking(hou, tmp_path: Path) -> None:
    from pbdcloth.io.cache import read_cache

    _, quads, node = _solver()
    played = _play(node, range(1, 6))
    cooks = len(node._input_frames)
    written = sops.save_core_cache(node, tmp_path, "cloth", "geo")
    assert [p.name for p in written] == [f"cloth.{f:04d}.geo" for f in range(1, 6)]
    assert len(node._input_frames) == cooks  # nothing read or cooked
    back = read_cache(tmp_path / "cloth.0001.geo")
    assert back.frames == [1, 2, 3, 4, 5]
    for k, f in enumerate(back.frames):
        np.testing.assert_allclose(back.positions[k], played[f], atol=1e-6)
    _, _, empty = _solver()
    with pytest.raises(ValueError, match="no cached cloth frames"):
        sops.save_core_cache(empty, tmp_path)


def test_a_deforming_collider_is_handed_the_polygons_points_each_frame(hou, monkeypatch) -> None:  # type: ignore
    """The plug for deforming collision meshes: a collider with ``set_points`` made from the
    polygons gets their points at every simulated frame (and the node does not warn)."""
    from pbdcloth.colliders.shapes import Sphere
    from pbdcloth.houdini import vdb as hvdb

    class Follower(Sphere):
        def __init__(self) -> None:
            super().__init__((0.0, -5.0, 0.0), 0.1)
            self.seen: list[np.ndarray] = []

        def set_points(self, points: np.ndarray) -> None:
            self.seen.append(points.copy())

    follower = Follower()
    monkeypatch.setattr(hvdb, "colliders_from_geometry", lambda geo, vs, band: [follower])
    ball, faces = scenes.grid_quads(4, 4, size=0.4, height=0.5)

    def polygons(frame: float):  # type: ignore[no-untyped-def]
        return scenes.geometry(ball + [0.0, -0.01 * frame, 0.0], faces)

    _, _, node = _solver()
    node._inputs[1] = scenes.source("/obj/body", polygons)
    node._cook(5, sops.cook_solver)
    assert len(follower.seen) == 4 and not node.warnings()
    np.testing.assert_allclose(follower.seen[-1], ball + [0.0, -0.05, 0.0])
