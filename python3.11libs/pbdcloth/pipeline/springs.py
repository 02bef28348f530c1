"""Running a spring scene (:class:`~pbdcloth.scenes.springs.SpringScene`) through the run loop.

Per frame the :class:`SpringStepper` moves the body (``SpringScene.animate``), steps every chain
with the chest matrix as parent and ends the colliders' frame; the :class:`SpringRecorder` keeps
the chains' node positions and the run's measures. :func:`run_spring_scene` writes the rig as
VRMC_springBone (``springs.vrm.json``, ``springs.gltf``), the positions per frame
(``chains.json``), a picture of the paths (``paths.png``) and ``summary.json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..arrays import F
from ..atomic import atomic_write
from ..backends.base import FrameStats
from ..portable import norm, rotate_t
from ..scenes.springs import SpringScene
from ..springs import SpringChain
from .progress import Progress
from .run import ProgressCallback, Run, distance_text


@dataclass
class SpringRun:
    """What a run of a spring scene did; ``lines()`` is what the demo prints."""

    scene: str
    frames: int
    chains: list[str]
    joints: int
    collision_passes: int
    seconds: float
    ms_per_frame: float
    max_length_error: float
    """Largest |bone length - rest length| over all bones and frames [m]."""
    min_clearance: float
    """Smallest (signed distance to a chain's collider - hit radius) of any tail at any frame
    end [m]; negative = the tail's hit sphere is that deep inside a collider."""
    contact_frames: int
    """Frames at whose end some tail touches a collider (clearance below 1 micrometre)."""
    max_tip_swing: dict[str, float]
    """Per chain: largest distance of its tip from its rest place in the body's frame [m]."""
    outputs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        swing = ", ".join(f"{k} {100 * v:.1f} cm" for k, v in self.max_tip_swing.items())
        return [
            f"scene            {self.scene}",
            f"frames           {self.frames}",
            (f"chains           {', '.join(self.chains)} ({self.joints} joints, "
             f"{self.collision_passes} collision passes)"),
            f"time per frame   {self.ms_per_frame:.2f} ms ({self.seconds:.2f} s in all)",
            f"bone length error {self.max_length_error:.2e} m",
            (f"min clearance    {distance_text(self.min_clearance)} (tail hit sphere to "
             f"colliders; touching in {self.contact_frames} frames)"
             if np.isfinite(self.min_clearance) else "min clearance    - (no colliders)"),
            f"max tip swing    {swing} (relative to the body)",
        ]


@dataclass
class SpringStepper:
    """Steps a spring scene: body to the end of the frame, each chain one step of 1 / fps under
    the chest matrix, then the colliders' end pose becomes their start pose."""

    scene: SpringScene
    parent: F = field(init=False)
    """The chains' parent matrix at the end of the last frame (4, 4)."""

    def __post_init__(self) -> None:
        self.parent = self.scene.start()

    def advance(self, frame: int) -> FrameStats | None:
        self.parent = self.scene.animate(frame)
        dt = 1.0 / self.scene.fps
        for chain in self.scene.chains:
            chain.step(dt, self.parent)
        self.scene.end_frame()
        return None


class SpringRecorder:
    """Node positions and parent matrix per frame (frame 0 = rest) and the run's measures:
    bone length error, clearance to the colliders, frames in contact, tip swing."""

    def __init__(self, stepper: SpringStepper) -> None:
        self.stepper = stepper
        chains = stepper.scene.chains
        self.positions: list[list[F]] = [[chain.positions] for chain in chains]
        self.parents: list[F] = [stepper.parent]
        self._rest_tips = [chain.rest_points[-1] for chain in chains]
        self.length_error, self.clearance, self.touching = 0.0, float("inf"), 0
        self.swing = [0.0] * len(chains)

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        matrix = self.stepper.parent
        gap = float("inf")
        for k, chain in enumerate(self.stepper.scene.chains):
            pos = chain.positions
            self.positions[k].append(pos)
            bones = np.linalg.norm(pos[1:] - pos[:-1], axis=1)
            self.length_error = max(self.length_error,
                                    float(np.abs(bones - chain.bone_lengths).max()))
            gap = min(gap, clearance(chain, pos[1:]))
            local_tip = rotate_t(matrix[:3, :3], pos[-1] - matrix[:3, 3])
            self.swing[k] = max(self.swing[k], norm(local_tip - self._rest_tips[k]))
        self.clearance = min(self.clearance, gap)
        self.touching += int(gap < 1e-6)
        self.parents.append(matrix)

    def close(self) -> None:
        pass


def clearance(chain: SpringChain, tails: F) -> float:
    """Smallest signed distance minus hit radius of the tails to the chain's colliders [m]."""
    if not chain.colliders:
        return float("inf")
    radii = np.array([s.radius for s in chain.settings])
    return min(float((c.query(tails, 1.0)[0] - radii).min()) for c in chain.colliders)


def simulate_springs(scene: SpringScene, frames: int | None = None, progress: bool = False,
                     on_progress: ProgressCallback | None = None
                     ) -> tuple[SpringRun, list[list[F]], list[F]]:
    """Run the scene; return the summary, the chains' node positions per frame (frame 0 =
    rest; ``positions[chain][frame]`` is (K+1, 3) [m]) and the parent matrix per frame."""
    count = scene.frames if frames is None else frames
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"frames must be a whole number >= 1, got {count!r}")
    stepper = SpringStepper(scene)
    recorder = SpringRecorder(stepper)
    run = Run(stepper, 0, [recorder], Progress(count, scene.name) if progress else None,
              on_progress)
    start = time.perf_counter()
    run.run_to(count)
    seconds = time.perf_counter() - start
    run.close()
    summary = SpringRun(
        scene=scene.name, frames=count, chains=list(scene.chain_names),
        joints=sum(c.joint_count for c in scene.chains),
        collision_passes=max(c.collision_passes for c in scene.chains), seconds=seconds,
        ms_per_frame=1000.0 * seconds / count, max_length_error=recorder.length_error,
        min_clearance=recorder.clearance, contact_frames=recorder.touching,
        max_tip_swing=dict(zip(scene.chain_names, recorder.swing)),
    )
    return summary, recorder.positions, recorder.parents


def run_spring_scene(scene: SpringScene, out_dir: str | Path, frames: int | None = None,
                     progress: bool = True) -> list[str]:
    """Simulate and write the outputs into ``out_dir``; return the lines to print."""
    from ..io.vrm import write_gltf, write_spring_bone_json
    from ..preview import paths_picture

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # The rig is exported at rest, with the colliders where the body stands at t = 0.
    scene.body.move_to_time(0.0, speed=scene.speed, turn_rate=scene.turn_rate)
    named = dict(zip(scene.body.collider_names, scene.body.colliders))
    parent_names = ["chest"] * len(scene.chains)
    outputs = [
        write_spring_bone_json(out / "springs.vrm.json", scene.chains, scene.chain_names,
                               parent_names, named),
        write_gltf(out / "springs.gltf", scene.chains, scene.chain_names, parent_names, named),
    ]
    run, positions, parents = simulate_springs(scene, frames, progress)
    outputs.append(write_positions(out / "chains.json", scene.chain_names, positions, scene.fps))
    outputs.append(paths_picture(out / "paths.png", scene.chain_names, positions, parents,
                                 scene.body, title=f"pbdcloth {scene.name}: {run.frames} "
                                 f"frames at {scene.fps:g} fps"))
    run.outputs = [str(p) for p in outputs]
    with atomic_write(out / "summary.json") as fh:
        json.dump(run.__dict__, fh, indent=2)
    return [f"pbdcloth demo '{scene.name}': {scene.description.strip().splitlines()[0]}",
            *run.lines(),
            (f"wrote chains.json, paths.png, springs.vrm.json, springs.gltf and "
             f"summary.json to {out}/")]


def write_positions(path: str | Path, names: Sequence[str], positions: Sequence[Sequence[F]],
                    fps: float) -> Path:
    """Write ``{"fps", "frames", "chains": {name: [[[x, y, z], ...] per frame]}}`` atomically.

    Frame 0 is the rest pose; positions in metres, world space, 9 significant digits.
    """
    target = Path(path)
    data = {
        "fps": fps,
        "frames": len(positions[0]) - 1 if positions else 0,
        "units": "m",
        "chains": {n: [[[float(f"{c:.9g}") for c in p] for p in frame.tolist()]
                       for frame in frames] for n, frames in zip(names, positions)},
    }
    with atomic_write(target) as fh:
        json.dump(data, fh, separators=(",", ":"))
        fh.write("\n")
    return target
