"""The one run loop (pipeline/run.py): stepping, hooks, progress, interruption, and its users
(demo scenes, scene files, spring scenes) against loops written out by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from pbdcloth.backends.base import FrameStats
from pbdcloth.pipeline.checkpoint import load_checkpoint
from pbdcloth.pipeline.progress import Progress
from pbdcloth.pipeline.run import ClothStepper, Run, run_scene
from pbdcloth.pipeline.scenefile import load_scene
from pbdcloth.pipeline.simulate import checkpoint_path, read_log, simulate
from pbdcloth.pipeline.springs import simulate_springs
from pbdcloth.scenes.cloth import twist_scene
from pbdcloth.scenes.springs import springs_scene

DATA = Path(__file__).parent / "data" / "io"


class Counter:
    """A stepper that records the frames it was asked for."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def advance(self, frame: int) -> FrameStats:
        self.asked.append(frame)
        return FrameStats(contacts=frame)


class Seen:
    """A hook that records what it was handed."""

    def __init__(self) -> None:
        self.frames: list[tuple[int, int | None]] = []
        self.closed = False

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        self.frames.append((frame, None if stats is None else stats.contacts))

    def close(self) -> None:
        self.closed = True


def test_run_steps_each_frame_once_and_hands_it_to_every_hook_in_order() -> None:
    stepper, first, second = Counter(), Seen(), Seen()
    run = Run(stepper, 10, [first, second])
    run.emit()
    assert run.run_to(13) == 3
    assert stepper.asked == [11, 12, 13] and run.frame == 13
    assert first.frames == second.frames == [(10, None), (11, 11), (12, 12), (13, 13)]
    assert run.run_to(12) == 0  # never backwards
    assert not first.closed
    run.close()
    assert first.closed and second.closed


def test_on_progress_is_asked_before_each_frame_and_can_stop_the_run() -> None:
    asked: list[tuple[int, int]] = []

    def stop_after_two(frame: int, last: int) -> bool:
        asked.append((frame, last))
        return frame >= 2

    stepper = Counter()
    run = Run(stepper, 0, on_progress=stop_after_two)
    assert run.run_to(5) == 2
    assert asked == [(0, 5), (1, 5), (2, 5)] and stepper.asked == [1, 2]


def test_an_exception_stops_the_run_after_the_last_complete_frame() -> None:
    """As hou.InterruptableOperation does: the callback raises; completed frames stay done."""

    def interrupt(frame: int, last: int) -> None:
        if frame == 3:
            raise KeyboardInterrupt

    seen = Seen()
    run = Run(Counter(), 0, [seen], on_progress=interrupt)
    with pytest.raises(KeyboardInterrupt):
        run.run_to(6)
    assert run.frame == 3 and [f for f, _ in seen.frames] == [1, 2, 3]


def test_progress_without_tqdm_prints_a_line_per_tenth(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import fails
    bar = Progress(20, "job")
    for _ in range(20):
        bar.update()
    bar.close()
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"job: frame {k}/20" for k in range(2, 21, 2)]
    Progress(5, "quiet", enabled=False).update()
    assert capsys.readouterr().out == ""


def test_run_scene_equals_stepping_the_solver_by_hand(tmp_path: Path) -> None:
    """An animated scene (twist: moving pins): the run's frames are the hand loop's."""
    scene = twist_scene(resolution=8, frames=4)
    scene.settings = scene.settings.replace(substeps=3, self_collision=False)
    solver = scene.make_solver()
    by_hand = [solver.positions.copy()]
    for frame in range(1, 5):
        assert scene.animate is not None
        scene.animate(solver, frame)
        solver.step(1.0 / scene.fps)
        by_hand.append(solver.positions.copy())
    summary, rec = run_scene(scene, tmp_path, progress=False)
    frames = rec.frames
    assert len(frames) == 5 and summary.frames == 5 and rec.numbers == [1, 2, 3, 4, 5]
    for a, b in zip(frames, by_hand):
        assert np.array_equal(a, b)
    assert not np.array_equal(frames[0], frames[-1])
    # Numbered as simulate numbers them: frame 1 is the start state, frame 1 + k after k steps.
    assert sorted(p.name for p in tmp_path.glob("*.obj")) == [
        f"cloth.000{k}.obj" for k in range(1, 6)]
    log = read_log(tmp_path / "log.jsonl")
    assert [r["frame"] for r in log] == [1, 2, 3, 4, 5]
    assert log[0]["ms"] is None and log[0]["max_strain"] == 0.0


def test_a_scene_file_is_the_same_recipe_as_its_scene() -> None:
    spec = load_scene(DATA / "moving.toml", {"frames": 3})
    scene = spec.scene()
    assert scene.frames == spec.frames - 1  # frame start_frame is the start state
    solver = scene.make_solver()
    run = Run(ClothStepper(solver, scene.fps, scene.animate), spec.start_frame)
    run.run_to(spec.last_frame)
    again = spec.scene().make_solver()
    for frame in range(spec.start_frame + 1, spec.last_frame + 1):
        spec.animate(again, frame)
        again.step(1.0 / spec.fps)
    assert np.array_equal(solver.positions, again.positions)


def test_simulate_stopped_by_its_callback_resumes_bit_identically(tmp_path: Path) -> None:
    def spec(sub: str):  # type: ignore[no-untyped-def]
        return load_scene(DATA / "moving.toml",
                          {"out": tmp_path / sub, "format": "obj", "frames": 7})

    simulate(spec("whole"), progress=False)

    def ctrl_c(frame: int, last: int) -> None:
        if frame == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simulate(spec("cut"), progress=False, on_progress=ctrl_c)
    assert load_checkpoint(checkpoint_path(spec("cut"))).frame == 4
    result = simulate(spec("cut"), resume=True, progress=False)
    assert result.resumed_from == 4 and result.frames_simulated == 3
    for k in range(1, 8):
        name = f"cloth.{k:04d}.obj"
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()
    a = load_checkpoint(checkpoint_path(spec("whole")))
    b = load_checkpoint(checkpoint_path(spec("cut")))
    assert np.array_equal(a.state.positions, b.state.positions)
    assert np.array_equal(a.state.velocities, b.state.velocities)
    assert np.array_equal(a.pin_end, b.pin_end)


def test_spring_scene_run_equals_its_loop_written_out() -> None:
    run, positions, parents = simulate_springs(springs_scene(), frames=8)
    scene = springs_scene()
    dt = 1.0 / scene.fps
    walk = {"speed": scene.speed, "turn_rate": scene.turn_rate}
    scene.body.move_to_time(0.0, **walk)
    for c in scene.body.colliders:
        c.end_frame()
    parent = scene.body.frame(0.0, **walk)
    for chain in scene.chains:
        chain.reset(parent)
    for frame in range(1, 9):
        scene.body.move_to_time(frame * dt, **walk)
        parent = scene.body.frame(frame * dt, **walk)
        for chain in scene.chains:
            chain.step(dt, parent)
        for c in scene.body.colliders:
            c.end_frame()
        assert np.array_equal(parents[frame], parent)
        for k, chain in enumerate(scene.chains):
            assert np.array_equal(positions[k][frame], chain.positions)
    assert run.frames == 8 and len(positions[0]) == 9
    assert run.max_length_error < 1e-9
    with pytest.raises(ValueError, match="whole number"):
        simulate_springs(springs_scene(), frames=0)
