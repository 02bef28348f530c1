"""Run a scene file into a cache: streamed, logged, resumable.

Frame ``start_frame`` is the cloth at rest (the scene's start state, as in a Houdini simulation
at its start frame); every later frame is one step of 1 / fps seconds. Per frame the loop

1. sets the controls (pin targets and collider poses for the end of the frame) and steps;
2. hands the frame to the cache writer, which writes it atomically (OBJ/.geo: one file per frame;
   USD: the whole layer, exported to a temporary file and renamed, throttled on long caches);
3. appends one JSON line to ``log.jsonl`` (same keys as :func:`pbdcloth.pipeline.run.run_scene`:
   ``frame``, ``ms``, ``max_strain``, ``mean_strain``, ``kinetic_energy``, ``contacts``,
   ``min_distance`` and whatever the backend reports in ``FrameStats.extra``; see
   :func:`pbdcloth.pipeline.run.frame_record`);
4. once the frame is complete on disk, saves the solver state as a checkpoint (atomically).

A cloth that tears (``tear_strain``) changes its topology: each frame is written with its own
triangles (USD: time-sampled faces) and a ``rest`` point attribute (rest positions, for the
split points too), and the checkpoint carries the torn model.

Because the checkpoint never runs ahead of the cache, ``resume=True`` restarts from the
checkpoint's frame, drops anything written after it, and continues bit-identically: the solver is
deterministic and its whole state (positions, velocities, pin targets; colliders follow from the
scene's keys) is restored exactly.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write
from ..backends.base import FrameStats
from ..cloth.mesh import vertex_normals
from ..io.cache import (
    SEQUENCE_FORMATS,
    CacheFormat,
    CacheWriter,
    FrameData,
    SequenceWriter,
    UsdWriter,
    sequence_frames,
)
from ..solver import ClothSolver
from .checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from .guard import RunFailed, check_output_folder, is_disk_error, output_lock
from .postprocess import postprocess
from .progress import Progress
from .run import (
    CallbackHook,
    ClothStepper,
    FrameCallback,
    FrameHook,
    LogHook,
    ProgressCallback,
    Run,
    distance_text,
    strain_text,
)
from .scenefile import SceneSpec

LOG_NAME = "log.jsonl"
SUMMARY_NAME = "summary.json"


@dataclass
class SimulationResult:
    """What :func:`simulate` did."""

    out_dir: Path
    outputs: list[Path]
    first_frame: int
    last_frame: int
    resumed_from: int | None
    frames_simulated: int
    seconds: float
    summary: dict[str, Any] = field(default_factory=dict)


def checkpoint_path(spec: SceneSpec) -> Path:
    return spec.output.dir / f"{spec.output.name}.checkpoint.npz"


def frame_data(spec: SceneSpec, solver: ClothSolver) -> FrameData:
    """The solver's current frame as the cache stores it (post-processed if asked)."""
    x = solver.positions
    tris = solver.triangles
    v, w, strain = solver.velocities, solver.model.inv_mass, solver.point_strain()
    extra = {"rest": solver.model.mesh.positions} if solver.is_torn else {}
    if spec.postprocess.active:
        shell = postprocess(x, tris, spec.postprocess, fixed=solver.pinned)
        x, tris = shell.positions, shell.triangles
        v, w, strain = v[shell.source], w[shell.source], strain[shell.source]
        extra = {k: a[shell.source] for k, a in extra.items()}
    normals = (vertex_normals(x, tris)
               if spec.output.normals and spec.output.format == CacheFormat.USD else None)
    return FrameData(positions=x, triangles=tris, velocities=v, inverse_mass=w, strain=strain,
                     normals=normals, faces=_polygons(spec, solver), extra=extra)


def _polygons(spec: SceneSpec, solver: ClothSolver | None = None) -> list[list[int]] | None:
    """The input's polygons for the cache (quads stay quads), unless a shell replaced them or
    the cloth has torn (then its triangles are each frame's faces)."""
    if solver is not None and solver.is_torn:
        return None
    return spec.faces if spec.postprocess.thickness == 0.0 else None


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``log.jsonl``; a torn last line (killed run) is ignored."""
    source = Path(path)
    if not source.is_file():
        return []
    records = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "frame" in rec:
            records.append(rec)
    return records


def _make_writer(spec: SceneSpec, solver: ClothSolver, keep_until: int | None) -> CacheWriter:
    out = spec.output
    if out.format == CacheFormat.USD:
        untorn = solver.untorn_model  # the cache's first faces, also when resuming after a tear
        tris = untorn.mesh.triangles
        w = untorn.inv_mass
        if spec.postprocess.active:
            shell = postprocess(untorn.mesh.positions, tris, spec.postprocess)
            tris, w = shell.triangles, w[shell.source]
        faces = _polygons(spec)
        return UsdWriter(out.dir, out.name, tris if faces is None else faces, spec.fps,
                         spec.start_frame,
                         keep_until=keep_until, inverse_mass=w, normals=out.normals,
                         velocities=out.velocities)
    return SequenceWriter(out.dir, out.name, out.format, keep_until=keep_until)


class CacheHook:
    """Hands each frame (post-processed if asked) to the cache writer; ``committed`` says
    whether the last frame is on disk."""

    def __init__(self, spec: SceneSpec, solver: ClothSolver, writer: CacheWriter) -> None:
        self.spec, self.solver, self.writer = spec, solver, writer
        self.committed = False

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        self.committed = self.writer.write(frame, frame_data(self.spec, self.solver))

    def close(self) -> None:
        self.writer.close()


class CheckpointHook:
    """Saves the solver state once a frame is complete on disk, and after the last frame."""

    def __init__(self, path: Path, digest: str, solver: ClothSolver, cache: CacheHook,
                 saved: int | None) -> None:
        self.path, self.digest, self.solver, self.cache = path, digest, solver, cache
        self.saved, self.last = saved, saved

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        self.last = frame
        if self.cache.committed:
            self.save(frame)

    def save(self, frame: int) -> None:
        save_checkpoint(self.path, Checkpoint.of(self.solver, frame, self.digest))
        self.saved = frame

    def close(self) -> None:
        if self.last is not None and self.saved != self.last:
            self.save(self.last)


def simulate(spec: SceneSpec, resume: bool = False, progress: bool = True,
             on_frame: FrameCallback | None = None,
             on_progress: ProgressCallback | None = None) -> SimulationResult:
    """Simulate ``spec`` into ``spec.output`` (see the module docstring).

    ``on_frame(frame, solver)`` is called after each stepped frame, ``on_progress(frame, last)``
    before each (True stops the run there; see :class:`~pbdcloth.pipeline.run.Run`).

    The output folder is locked for the whole call (:func:`~pbdcloth.pipeline.guard.output_lock`)
    and probed for writing and free space before the first frame.

    Raises:
        CheckpointError: ``resume`` with a checkpoint from a different scene, or unreadable.
        OutputFolderError: the output folder is a file, unwritable, full, or another run is
            writing into it (nothing written).
        RunFailed: writing failed during the run (disk full); the frames on disk are complete
            and ``resume=True`` continues from the last one.
    """
    with output_lock(spec.output.dir):
        return _simulate(spec, resume, progress, on_frame, on_progress)


def _first_frames_bytes(spec: SceneSpec, solver: ClothSolver) -> int:
    """A generous estimate of the first two frames plus a checkpoint on disk [bytes]."""
    points, tris = solver.model.particle_count, solver.model.mesh.triangle_count
    frame = 160 * points + 40 * tris
    return 2 * frame + 64 * points + (1 << 16)


def _simulate(spec: SceneSpec, resume: bool, progress: bool, on_frame: FrameCallback | None,
              on_progress: ProgressCallback | None) -> SimulationResult:
    out_dir = spec.output.dir
    solver = spec.scene().make_solver()
    check_output_folder(out_dir, _first_frames_bytes(spec, solver))
    digest = spec.digest()
    ckpt = checkpoint_path(spec)
    done: int | None = None
    if resume and ckpt.is_file():
        saved = load_checkpoint(ckpt)
        if saved.digest != digest:
            raise CheckpointError(
                f"cannot resume: {ckpt} was made by a different scene, settings or output "
                "(only the frame count may change); run without --resume to start over")
        if not spec.start_frame <= saved.frame:
            raise CheckpointError(f"cannot resume: checkpoint frame {saved.frame} is before the "
                                  f"start frame {spec.start_frame}")
        if spec.output.format in SEQUENCE_FORMATS:
            have = sequence_frames(spec.output.dir, spec.output.name, spec.output.format)
            missing = [k for k in range(spec.start_frame, saved.frame + 1) if k not in have]
            if missing:
                raise CheckpointError(
                    f"cannot resume: frames {missing[:5]} of the cache are missing from "
                    f"{spec.output.dir}; run without --resume to start over")
        try:
            saved.restore(solver)
        except ValueError as exc:
            raise CheckpointError(f"cannot resume from {ckpt}: {exc}; run without --resume "
                                  "to start over") from None
        spec.restore_controls(solver, saved.frame)
        done = saved.frame
    resumed_from = done
    if done is not None and done >= spec.last_frame:
        records = read_log(out_dir / LOG_NAME)
        return SimulationResult(out_dir, [], spec.start_frame, done, done, 0, 0.0,
                                _summary(spec, solver, records, 0.0, resumed_from))

    writer = _make_writer(spec, solver, keep_until=done)
    log_path = out_dir / LOG_NAME
    kept = [r for r in read_log(log_path) if done is not None and r["frame"] <= done]
    cache = CacheHook(spec, solver, writer)
    hooks: list[FrameHook] = [cache, LogHook(log_path, solver, kept=kept),
                              CheckpointHook(ckpt, digest, solver, cache, done)]
    if on_frame is not None:
        hooks.append(CallbackHook(on_frame, solver))
    bar = Progress(spec.frames, spec.name, 0 if done is None else done - spec.start_frame + 1,
                   progress)
    run = Run(ClothStepper(solver, spec.fps, spec.animate),
              spec.start_frame if done is None else done, hooks, bar, on_progress)
    begin = time.perf_counter()
    saver = hooks[2]
    assert isinstance(saver, CheckpointHook)
    try:
        if done is None:
            run.emit()  # the start frame is the rest state: no step, so no time per frame
        simulated = run.run_to(spec.last_frame)
        run.close()
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        with contextlib.suppress(OSError):
            hooks[1].close()  # the log; the cache and checkpoint stay as last committed
        last = saver.saved
        told = (f"frames {spec.start_frame}-{last} are complete on disk; free some space and "
                f"continue with --resume" if last is not None else
                "no frame was completed; free some space and run again")
        raise RunFailed(f"writing into {out_dir} failed ({exc.strerror or exc}): {told}",
                        last) from None
    finally:
        bar.close()
    seconds = time.perf_counter() - begin
    summary = _summary(spec, solver, read_log(log_path), seconds, resumed_from)
    with atomic_write(out_dir / SUMMARY_NAME) as fh:
        json.dump(summary, fh, indent=2)
    return SimulationResult(out_dir, writer.outputs, spec.start_frame, run.frame,
                            resumed_from, simulated, seconds, summary)


def _summary(spec: SceneSpec, solver: ClothSolver, records: list[dict[str, Any]],
             seconds: float, resumed_from: int | None) -> dict[str, Any]:
    stepped = [r for r in records if r["frame"] > spec.start_frame]
    dists = [r["min_distance"] for r in records if r.get("min_distance") is not None]
    return {
        "scene": spec.name, "first_frame": spec.start_frame, "last_frame": spec.last_frame,
        "frames": spec.frames, "format": spec.output.format,
        "particles": solver.model.particle_count,
        "triangles": solver.model.mesh.triangle_count, "substeps": solver.settings.substeps,
        "iterations": solver.settings.iterations, "model": solver.settings.model,
        "seconds_this_run": seconds,
        "ms_per_frame": (float(np.mean([r["ms"] for r in stepped if r.get("ms") is not None]))
                         if any(r.get("ms") is not None for r in stepped) else 0.0),
        "max_strain": max((r["max_strain"] for r in records), default=0.0),
        "min_collider_distance": min(dists) if dists else None,
        "resumed_from": resumed_from,
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as printed at the end of ``pbdcloth simulate``."""
    dist = summary.get("min_collider_distance")
    lines = [
        (f"frames           {summary['first_frame']}-{summary['last_frame']}"
         + (f" (resumed after frame {summary['resumed_from']})"
            if summary.get("resumed_from") is not None else "")),
        f"particles        {summary['particles']} ({summary['triangles']} triangles)",
        (f"substeps x iter  {summary['substeps']} x {summary['iterations']} "
         f"({summary['model']})"),
        f"time per frame   {summary['ms_per_frame']:.1f} ms",
        f"max strain       {strain_text(summary['max_strain'])} (max edge strain vs rest)",
        "min distance to colliders "
        + (distance_text(dist) if dist is not None else "- (no colliders)"),
    ]
    return lines
