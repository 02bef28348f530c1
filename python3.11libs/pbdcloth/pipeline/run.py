"""The one run loop: step a simulation frame by frame, with progress, hooks and interruption.

A :class:`Run` holds a :class:`Stepper` (what advances one frame: a cloth solver with its
animation, spring chains on a walking body, a Houdini node's inputs) and the frame its state
belongs to. Each :meth:`Run.step` advances one frame and hands it to the run's hooks in order
(:class:`FrameHook`: cache writers, the per-frame log, checkpoints, recorders, callbacks); then
the progress bar moves on. :meth:`Run.run_to` steps up to a frame, asking an optional
``on_progress(frame, last)`` callback before each frame: it returns True to stop there, or raises
to abort (``KeyboardInterrupt``, Houdini's ``hou.OperationInterrupted``); every frame handed to
the hooks is complete.

Users: the demo (:func:`run_scene`, :func:`pbdcloth.pipeline.springs.run_spring_scene`),
:func:`pbdcloth.pipeline.simulate.simulate` (scene files into caches), the Houdini solver SOP
(:mod:`pbdcloth.houdini.sops`) and the hython batch script (``scripts/simulate.py``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..arrays import F
from ..atomic import atomic_write
from ..backends.base import FrameStats
from ..colliders.base import min_distance
from ..io.obj import frame_path, write_obj
from ..preview.shapes import Shape, shapes_of
from ..scenes.cloth import Scene
from ..solver import ClothSolver
from .progress import Progress

FrameCallback = Callable[[int, ClothSolver], None]
"""Called after each stepped frame with the frame number and the solver."""

Animation = Callable[[ClothSolver, int], None]
"""Sets the controls (pin targets, collider poses) of the solver for the end of a frame."""

ProgressCallback = Callable[[int, int], "bool | None"]
"""Called before each frame with (frame done so far, last frame); True stops the run there."""


class Stepper(Protocol):
    """What a run advances: sets the controls of ``frame`` and steps one frame to its end."""

    def advance(self, frame: int) -> FrameStats | None:
        """Step from the end of ``frame - 1`` to the end of ``frame``."""
        ...


class FrameHook(Protocol):
    """Something done with every frame of a run, in the order of the run's hooks."""

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        """``frame`` is complete; ``stats`` is None for a frame that was not stepped (the start
        state)."""
        ...

    def close(self) -> None:
        """The run is over (not called when it was aborted)."""
        ...


@dataclass
class ClothStepper:
    """A cloth solver and its animation: ``animate(solver, frame)`` sets the pin targets and
    collider poses for the end of ``frame``; each frame is one ``solver.step(1 / fps)``."""

    solver: ClothSolver
    fps: float
    animate: Animation | None = None

    def advance(self, frame: int) -> FrameStats:
        if self.animate is not None:
            self.animate(self.solver, frame)
        return self.solver.step(1.0 / self.fps)


class Run:
    """Steps ``stepper`` frame by frame from ``frame`` (the frame its state belongs to).

    Args:
        stepper: what advances one frame.
        frame: the frame the stepper's state belongs to now.
        hooks: called with every complete frame, in this order.
        progress: the bar moved on by each frame (None: no bar).
        on_progress: asked before each frame by :meth:`run_to`; see the module docstring.
    """

    def __init__(self, stepper: Stepper, frame: int, hooks: Sequence[FrameHook] = (),
                 progress: Progress | None = None,
                 on_progress: ProgressCallback | None = None) -> None:
        self.stepper = stepper
        self.frame = frame
        self.hooks = list(hooks)
        self.progress = progress
        self.on_progress = on_progress

    def emit(self) -> None:
        """Hand the current frame, unstepped (the start state), to the hooks."""
        self._done(None)

    def step(self) -> FrameStats | None:
        """Advance one frame and hand it to the hooks."""
        frame = self.frame + 1
        stats = self.stepper.advance(frame)
        self.frame = frame
        self._done(stats)
        return stats

    def run_to(self, last: int) -> int:
        """Step until the state belongs to ``last``, or ``on_progress`` says stop; return the
        number of frames stepped. The progress bar is closed however the loop ends."""
        stepped = 0
        try:
            while self.frame < last:
                if self.on_progress is not None and self.on_progress(self.frame, last):
                    break
                self.step()
                stepped += 1
        finally:
            if self.progress is not None:
                self.progress.close()
        return stepped

    def close(self) -> None:
        """Close the hooks and the progress bar (after a run that was not aborted)."""
        for hook in self.hooks:
            hook.close()
        if self.progress is not None:
            self.progress.close()

    def _done(self, stats: FrameStats | None) -> None:
        for hook in self.hooks:
            hook.frame_done(self.frame, stats)
        if self.progress is not None:
            self.progress.update()


# --- hooks -------------------------------------------------------------------------------------
def frame_record(frame: int, solver: ClothSolver, stats: FrameStats | None,
                 detailed: bool = True) -> dict[str, Any]:
    """One line of ``log.jsonl``: ``frame``, ``ms`` (None for the unstepped start frame),
    ``max_strain`` (the max edge strain relative to rest, :meth:`ClothSolver.max_strain`, a
    fraction), ``mean_strain`` (mean |L / L0 - 1|), ``kinetic_energy`` [J], ``contacts``; ``detailed`` adds
    ``min_distance`` [m] (None without colliders) and the backend's ``FrameStats.extra``."""
    record: dict[str, Any] = {
        "frame": frame,
        "ms": None if stats is None else 1000.0 * solver.last_frame_seconds,
        "max_strain": solver.max_strain(),
        "mean_strain": float(np.abs(solver.edge_strain()).mean()),
        "kinetic_energy": solver.kinetic_energy(),
        "contacts": 0 if stats is None else int(stats.contacts),
    }
    if not detailed:
        return record
    record["min_distance"] = min_distance(solver.colliders, solver.positions)
    for key, value in ({} if stats is None else stats.extra).items():
        record.setdefault(key, value)
    if not np.isfinite(record["min_distance"]):
        record["min_distance"] = None  # no colliders: JSON has no infinity
    return record


class LogHook:
    """Appends :func:`frame_record` per frame to a JSON-lines file, flushed line by line.

    The file is first rewritten with ``kept`` records (those of a resumed run's earlier frames).
    """

    def __init__(self, path: Path, solver: ClothSolver, detailed: bool = True,
                 kept: Sequence[dict[str, Any]] = ()) -> None:
        self.solver, self.detailed = solver, detailed
        with atomic_write(path) as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in kept))
        self._file = path.open("a", encoding="utf-8")

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        record = frame_record(frame, self.solver, stats, self.detailed)
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


@dataclass
class ObjFramesHook:
    """Writes the solver's mesh as ``out / frame_path(pattern, frame)`` per stepped frame."""

    solver: ClothSolver
    out: Path
    pattern: str
    comment: str
    outputs: list[str] = field(default_factory=list)

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        path = write_obj(self.out / frame_path(self.pattern, frame), self.solver.positions,
                         self.solver.triangles, comment=f"{self.comment} frame {frame}")
        self.outputs.append(str(path))

    def close(self) -> None:
        pass


@dataclass
class ClothRecorder:
    """Keeps every handed frame's positions and collider shapes (for pictures) and the run's
    extremes: the largest max edge strain (:meth:`ClothSolver.max_strain`) with its frame, and
    the smallest distance to the colliders [m]."""

    solver: ClothSolver
    frames: list[F] = field(default_factory=list)
    triangles: list[NDArray[np.int64]] = field(default_factory=list)
    """Each frame's triangles (one shared array until the cloth tears)."""
    rest: list[F] = field(default_factory=list)
    """Each frame's rest positions (the split points' too)."""
    shapes: list[list[Shape]] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    worst_strain: float = 0.0
    worst_frame: int | None = None
    nearest: float = float("inf")

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        strain = self.solver.max_strain()
        if self.worst_frame is None or strain > self.worst_strain:
            self.worst_strain, self.worst_frame = strain, frame
        self.nearest = min(self.nearest, min_distance(self.solver.colliders,
                                                      self.solver.positions))
        self.frames.append(self.solver.positions.copy())
        self.triangles.append(self.solver.triangles)
        self.rest.append(self.solver.model.mesh.positions)
        self.shapes.append(shapes_of(self.solver.colliders))
        self.numbers.append(frame)

    def close(self) -> None:
        pass


@dataclass
class CallbackHook:
    """Calls ``callback(frame, solver)`` after each stepped frame."""

    callback: FrameCallback
    solver: ClothSolver

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        if stats is not None:
            self.callback(frame, self.solver)

    def close(self) -> None:
        pass


# --- the demo's cloth scenes -------------------------------------------------------------------
@dataclass
class RunSummary:
    """What a run did, as printed at its end and written to ``summary.json``."""

    scene: str
    frames: int
    """Frames written: frame 1 is the start state, each later frame one step."""
    particles: int
    triangles: int
    substeps: int
    iterations: int
    seconds: float
    ms_per_frame: float
    max_strain: float
    """Largest max edge strain (``L / L0 - 1`` over the mesh edges) of any frame."""
    max_strain_frame: int | None
    min_collider_distance: float | None
    """Smallest signed distance of any particle to any collider at any frame [m]; None
    without colliders."""
    outputs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [
            f"scene            {self.scene}",
            f"frames           1-{self.frames} (frame 1 at rest)",
            f"particles        {self.particles} ({self.triangles} triangles)",
            f"substeps x iter  {self.substeps} x {self.iterations}",
            f"time per frame   {self.ms_per_frame:.1f} ms ({self.seconds:.2f} s in all)",
            f"max strain       {strain_text(self.max_strain)}"
            + (f" (frame {self.max_strain_frame})" if self.max_strain_frame is not None
               else ""),
        ]
        lines.append("min distance to colliders "
                     + (distance_text(self.min_collider_distance)
                        if self.min_collider_distance is not None else "- (no colliders)"))
        return lines


def strain_text(strain: float) -> str:
    """A strain (fraction) as printed everywhere: percent with 2 decimals."""
    return f"{100.0 * strain:.2f} %"


def distance_text(metres: float) -> str:
    """A clearance [m] in mm, with 2 decimals; float round-off below 0.005 mm prints as 0.00
    (never ``-0.00`` or ``-6.4e-08``)."""
    mm = 1000.0 * metres
    return f"{0.0 if abs(mm) < 0.005 else mm:.2f} mm"


START_FRAME = 1
"""The demo's first frame: the start state (as ``simulate``'s start_frame, default 1)."""


def run_scene(
    scene: Scene,
    out_dir: str | Path | None = None,
    obj_pattern: str = "cloth.$F4.obj",
    progress: bool = True,
    on_frame: FrameCallback | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[RunSummary, ClothRecorder]:
    """Simulate ``scene``; write an OBJ per frame, a JSON-lines log and ``summary.json`` to
    ``out_dir`` (nothing when None).

    Frames are numbered as ``simulate`` numbers them: frame 1 (:data:`START_FRAME`) is the start
    state (written, logged), frame ``1 + k`` the state after ``k`` steps of 1 / fps, up to
    frame ``1 + scene.frames``; ``scene.animate(solver, k)`` sets the controls of step ``k``.
    Returns the summary and the recorder (positions and collider shapes of every frame).
    """
    solver = scene.make_solver()
    out = Path(out_dir) if out_dir is not None else None
    recorder = ClothRecorder(solver)
    hooks: list[FrameHook] = [recorder]
    obj: ObjFramesHook | None = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        obj = ObjFramesHook(solver, out, obj_pattern, f"pbdcloth {scene.name}")
        hooks += [obj, LogHook(out / "log.jsonl", solver, detailed=False)]
    if on_frame is not None:
        hooks.append(CallbackHook(on_frame, solver))
    animate = scene.animate
    shifted: Animation | None = (None if animate is None else
                                 lambda s, frame: animate(s, frame - START_FRAME))
    last = START_FRAME + scene.frames
    run = Run(ClothStepper(solver, scene.fps, shifted), START_FRAME, hooks,
              Progress(last - START_FRAME + 1, scene.name) if progress else None, on_progress)
    start = time.perf_counter()
    run.emit()
    run.run_to(last)
    seconds = time.perf_counter() - start
    run.close()
    outputs = obj.outputs if obj is not None else []
    summary = RunSummary(
        scene=scene.name, frames=last, particles=solver.model.particle_count,
        triangles=solver.model.mesh.triangle_count, substeps=solver.settings.substeps,
        iterations=solver.settings.iterations, seconds=seconds,
        ms_per_frame=1000 * seconds / max(scene.frames, 1), max_strain=recorder.worst_strain,
        max_strain_frame=recorder.worst_frame,
        min_collider_distance=(recorder.nearest if np.isfinite(recorder.nearest) else None),
        outputs=outputs,
    )
    if out is not None:
        with atomic_write(out / "summary.json") as fh:
            json.dump(summary.__dict__ | {"outputs": len(outputs)}, fh, indent=2)
    return summary, recorder
