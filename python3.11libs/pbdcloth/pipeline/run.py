"""Run a scene frame by frame: progress, per-frame log, cache files and a summary."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from ..colliders import Collider
from ..atomic import atomic_write
from ..io.obj import frame_path, write_obj
from ..scenes.cloth import Scene
from ..solver import ClothSolver

FrameCallback = Callable[[int, ClothSolver], None]


@dataclass
class RunSummary:
    """What a run did, as printed at its end and written to ``summary.json``."""

    scene: str
    frames: int
    particles: int
    triangles: int
    substeps: int
    iterations: int
    seconds: float
    ms_per_frame: float
    max_strain: float
    min_collider_distance: float
    """Smallest signed distance of any particle to any collider at any frame end [m]."""
    outputs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"scene            {self.scene}",
            f"frames           {self.frames}",
            f"particles        {self.particles} ({self.triangles} triangles)",
            f"substeps x iter  {self.substeps} x {self.iterations}",
            f"time per frame   {self.ms_per_frame:.1f} ms ({self.seconds:.2f} s in all)",
            f"max stretch      {100 * self.max_strain:.3f} %",
            f"min distance to colliders {1000 * self.min_collider_distance:.2f} mm",
        ]


def min_distance(colliders: Iterable[Collider], positions: NDArray[np.float64]) -> float:
    """Smallest signed distance from the particles to the colliders' surfaces [m] (inf if none)."""
    best = float("inf")
    for c in colliders:
        phi, _ = c.query(positions, 1.0)
        best = min(best, float(phi.min()))
    return best


def run_scene(
    scene: Scene,
    out_dir: str | Path | None = None,
    obj_pattern: str = "cloth.$F4.obj",
    progress: bool = True,
    on_frame: FrameCallback | None = None,
) -> tuple[RunSummary, list[NDArray[np.float64]]]:
    """Simulate ``scene.frames`` frames; write an OBJ per frame and a JSON-lines log to ``out_dir``.

    Returns the summary and the positions of every frame (frame 0 = the initial state).
    """
    solver = scene.make_solver()
    frames = [solver.positions.copy()]
    out = Path(out_dir) if out_dir is not None else None
    outputs: list[str] = []
    log_lines: list[str] = []
    worst_strain = 0.0
    nearest = min_distance(solver.colliders, solver.positions)
    bar = _progress(scene.frames, scene.name) if progress else None
    start = time.perf_counter()
    dt = 1.0 / scene.fps
    for frame in range(1, scene.frames + 1):
        if scene.animate is not None:
            scene.animate(solver, frame)
        stats = solver.step(dt)
        strain = solver.max_strain()
        worst_strain = max(worst_strain, strain)
        nearest = min(nearest, min_distance(solver.colliders, solver.positions))
        frames.append(solver.positions.copy())
        if out is not None:
            path = write_obj(out / frame_path(obj_pattern, frame), solver.positions,
                             solver.triangles, comment=f"pbdcloth {scene.name} frame {frame}")
            outputs.append(str(path))
        log_lines.append(json.dumps({
            "frame": frame, "ms": 1000 * solver.last_frame_seconds, "max_strain": strain,
            "mean_strain": float(np.abs(solver.edge_strain()).mean()),
            "kinetic_energy": solver.kinetic_energy(), "contacts": stats.contacts,
        }))
        if on_frame is not None:
            on_frame(frame, solver)
        if bar is not None:
            bar.update(1)
    seconds = time.perf_counter() - start
    if bar is not None:
        bar.close()
    summary = RunSummary(
        scene=scene.name, frames=scene.frames, particles=solver.model.particle_count,
        triangles=solver.model.mesh.triangle_count, substeps=solver.settings.substeps,
        iterations=solver.settings.iterations, seconds=seconds,
        ms_per_frame=1000 * seconds / max(scene.frames, 1), max_strain=worst_strain,
        min_collider_distance=nearest, outputs=outputs,
    )
    if out is not None:
        with atomic_write(out / "log.jsonl") as fh:
            fh.write("\n".join(log_lines) + "\n")
        with atomic_write(out / "summary.json") as fh:
            json.dump(summary.__dict__ | {"outputs": len(outputs)}, fh, indent=2)
    return summary, frames


class _Bar:
    """tqdm when installed, otherwise a plain line per 10%."""

    def __init__(self, total: int, name: str) -> None:
        self.total, self.n, self.name = total, 0, name
        try:
            from tqdm import tqdm
            self._tqdm = tqdm(total=total, desc=name, unit="frame")
        except ImportError:
            self._tqdm = None

    def update(self, k: int) -> None:
        self.n += k
        if self._tqdm is not None:
            self._tqdm.update(k)
        elif self.n * 10 // self.total != (self.n - k) * 10 // self.total:
            print(f"{self.name}: frame {self.n}/{self.total}", flush=True)

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()


def _progress(total: int, name: str) -> _Bar:
    return _Bar(total, name)
