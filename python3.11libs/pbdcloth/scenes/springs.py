"""The ``springs`` demo: a sword scabbard and a helmet plume swinging on a walking body.

A spring scene is not cloth, so it runs itself (:meth:`SpringScene.run`): ``pbdcloth demo --scene
springs`` calls it. Per frame the body (:class:`~pbdcloth.body.Body`) walks on, its colliders move
(``move_to_time``), and each chain steps with the body's chest matrix (``Body.frame``) as parent.
The run writes the chains' node positions per frame (``chains.json``), a picture of their paths
(``paths.png``), the rig as VRMC_springBone (``springs.vrm.json``, ``springs.gltf``) and
``summary.json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .body import Body
from ..colliders.base import Collider
from ..colliders.shapes import Capsule, Sphere
from ..atomic import atomic_write
from ..settings import SpringSettings
from ..springs import SpringChain

F = NDArray[np.float64]


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
            (f"min clearance    {1000 * self.min_clearance:.3g} mm (tail hit sphere to "
             f"colliders; touching in {self.contact_frames} frames)"),
            f"max tip swing    {swing} (relative to the body)",
        ]


@dataclass
class SpringScene:
    """Spring chains on a walking body: a ready-to-run recipe (built fresh per call)."""

    name: str
    description: str
    body: Body
    chains: list[SpringChain]
    chain_names: list[str]
    frames: int
    fps: float = 30.0
    speed: float = 1.2
    """Walking speed [m/s]."""
    turn_rate: float = 0.0
    """Turning rate about +Y [rad/s]."""

    def parent(self, t: float) -> F:
        """The chains' parent at time ``t`` [s]: the chest's world matrix (4, 4)."""
        return self.body.frame(t, speed=self.speed, turn_rate=self.turn_rate)

    def simulate(self, frames: int | None = None, progress: bool = False
                 ) -> tuple[SpringRun, list[list[F]], list[F]]:
        """Run the scene; return the summary, the chains' node positions per frame (frame 0 =
        rest; ``positions[chain][frame]`` is (K+1, 3) [m]) and the parent matrix per frame."""
        count = self.frames if frames is None else frames
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"frames must be a whole number >= 1, got {count!r}")
        dt = 1.0 / self.fps
        walk = {"speed": self.speed, "turn_rate": self.turn_rate}
        self.body.move_to_time(0.0, **walk)
        _end_frame(self.body.colliders)
        parents = [self.parent(0.0)]
        for chain in self.chains:
            chain.reset(parents[0])
        positions = [[chain.positions] for chain in self.chains]
        rest_local = [chain.rest_points for chain in self.chains]
        length_error, clearance, touching = 0.0, float("inf"), 0
        swing = [0.0] * len(self.chains)
        bar = _bar(count, self.name) if progress else None
        start = time.perf_counter()
        for frame in range(1, count + 1):
            t = frame * dt
            self.body.move_to_time(t, **walk)
            matrix = self.parent(t)
            gap = float("inf")
            for k, chain in enumerate(self.chains):
                chain.step(dt, matrix)
                pos = chain.positions
                positions[k].append(pos)
                bones = np.linalg.norm(pos[1:] - pos[:-1], axis=1)
                length_error = max(length_error, float(np.abs(bones - chain.bone_lengths).max()))
                gap = min(gap, _clearance(chain, pos[1:]))
                local_tip = matrix[:3, :3].T @ (pos[-1] - matrix[:3, 3])
                swing[k] = max(swing[k], float(np.linalg.norm(local_tip - rest_local[k][-1])))
            clearance = min(clearance, gap)
            touching += int(gap < 1e-6)
            parents.append(matrix)
            _end_frame(self.body.colliders)
            if bar is not None:
                bar.update(1)
        seconds = time.perf_counter() - start
        if bar is not None:
            bar.close()
        run = SpringRun(
            scene=self.name, frames=count, chains=list(self.chain_names),
            joints=sum(c.joint_count for c in self.chains),
            collision_passes=max(c.collision_passes for c in self.chains), seconds=seconds,
            ms_per_frame=1000.0 * seconds / count, max_length_error=length_error,
            min_clearance=clearance, contact_frames=touching, max_tip_swing=dict(zip(self.chain_names, swing)),
        )
        return run, positions, parents

    def run(self, out_dir: str | Path, frames: int | None = None,
            progress: bool = True) -> list[str]:
        """Simulate and write the outputs into ``out_dir``; return the lines to print."""
        from ..io.vrm import write_gltf, write_spring_bone_json

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        # The rig is exported at rest, with the colliders where the body stands at t = 0.
        self.body.move_to_time(0.0, speed=self.speed, turn_rate=self.turn_rate)
        named = dict(zip(self.body.collider_names, self.body.colliders))
        parent_names = ["chest"] * len(self.chains)
        outputs = [
            write_spring_bone_json(out / "springs.vrm.json", self.chains, self.chain_names,
                                   parent_names, named),
            write_gltf(out / "springs.gltf", self.chains, self.chain_names, parent_names, named),
        ]
        run, positions, parents = self.simulate(frames, progress)
        outputs.append(write_positions(out / "chains.json", self.chain_names, positions,
                                       self.fps))
        outputs.append(paths_picture(out / "paths.png", self.chain_names, positions, parents,
                                     self.body, title=f"pbdcloth {self.name}: {run.frames} "
                                     f"frames at {self.fps:g} fps"))
        run.outputs = [str(p) for p in outputs]
        with atomic_write(out / "summary.json") as fh:
            json.dump(run.__dict__, fh, indent=2)
        return [f"pbdcloth demo '{self.name}': {self.description.strip().splitlines()[0]}",
                *run.lines(),
                (f"wrote chains.json, paths.png, springs.vrm.json, springs.gltf and "
                 f"summary.json to {out}/")]


def springs_scene(frames: int = 150) -> SpringScene:
    """A sword scabbard at the left hip and a plume on the helmet of a body walking a curve.

    Both chains hang from the chest (``Body.frame``); the scabbard collides with the left leg,
    the plume with the head and the trunk. 150 frames at 30 fps.
    """
    body = Body(1.75)
    h = body.height
    col = dict(zip(body.collider_names, body.colliders))
    chest_y = 0.73 * h
    # Scabbard: from the left hip (just outside the thigh) down, back and a little out, so the
    # thigh swinging back knocks it; 4 x 0.2 m.
    hip = np.array([0.19, 0.53 * h - chest_y, 0.0])
    direction = np.array([0.03, -1.0, -0.2])
    direction /= np.linalg.norm(direction)
    scabbard = SpringChain(
        hip + 0.2 * np.arange(5)[:, None] * direction,
        SpringSettings(stiffness=1.5, gravity=1.0, drag=0.3, radius=0.03),
        colliders=[col["thigh_l"], col["shin_l"]],
    )
    # Plume: from the crest of the helmet up and back, softer toward its tip.
    top = 0.935 * h + 0.065 * h + 0.02 - chest_y
    plume_points = np.array([[0.0, top, 0.0], [0.0, top + 0.08, -0.03], [0.0, top + 0.13, -0.1],
                             [0.0, top + 0.15, -0.18], [0.0, top + 0.14, -0.26],
                             [0.0, top + 0.11, -0.33]])
    plume = SpringChain(
        plume_points,
        [SpringSettings(stiffness=s, gravity=0.4, drag=0.15, radius=0.02)
         for s in (3.0, 1.5, 0.8, 0.5, 0.4)],
        colliders=[col["head"], col["trunk"]],
    )
    return SpringScene(
        name="springs", description=springs_scene.__doc__ or "", body=body,
        chains=[scabbard, plume], chain_names=["scabbard", "plume"], frames=frames, fps=30.0,
        speed=1.2, turn_rate=0.6,
    )


# --- outputs ------------------------------------------------------------------------------------
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


def paths_picture(path: str | Path, names: Sequence[str], positions: Sequence[Sequence[F]],
                  parents: Sequence[F], body: Body, title: str = "") -> Path:
    """Side and front views of the chains in the body's frame, and their tips' world paths.

    In the body's (chest) frame the chains are drawn at eight evenly spaced frames with their
    tips' paths; the body is drawn as its capsules at rest. The third panel shows the tips and
    the chest from above, in world space. Written atomically as PNG. Needs matplotlib.
    """
    from ..preview import _require_matplotlib, save_figure

    plt = _require_matplotlib()
    count = len(parents)
    inv = [(m[:3, :3], m[:3, 3]) for m in parents]
    local = [[(pos - t) @ r for pos, (r, t) in zip(frames, inv)] for frames in positions]
    rest_body = Body(body.height)
    chest = rest_body.joints["chest"]
    colors = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.4), dpi=100)
    picks = np.unique(np.linspace(0, count - 1, 8).round().astype(int))
    for ax, (u, v), label in ((axes[0], (2, 1), "side (z forward, y up)"),
                              (axes[1], (0, 1), "front (x left, y up)")):
        for collider in rest_body.colliders:
            _draw_collider(ax, collider, chest, u, v)
        for k, name in enumerate(names):
            c = colors(k)
            for n, i in enumerate(picks):
                pts = local[k][i]
                ax.plot(pts[:, u], pts[:, v], "-o", color=c, ms=2, lw=1.2,
                        alpha=0.25 + 0.75 * n / max(len(picks) - 1, 1),
                        label=name if n == len(picks) - 1 else None)
            tip = np.array([f[-1] for f in local[k]])
            ax.plot(tip[:, u], tip[:, v], "-", color=c, lw=0.6, alpha=0.8)
        ax.set_aspect("equal")
        ax.set_title(f"in the body's frame: {label}", fontsize=10)
        ax.legend(fontsize=8, loc="lower left")
    ax = axes[2]
    trail = np.array([m[:3, 3] for m in parents])
    ax.plot(trail[:, 0], trail[:, 2], "-", color="0.4", lw=1.0, label="chest")
    for k, name in enumerate(names):
        tip = np.array([f[-1] for f in positions[k]])
        ax.plot(tip[:, 0], tip[:, 2], "-", color=colors(k), lw=1.0, label=f"{name} tip")
    ax.set_aspect("equal")
    ax.set_title("world, from above (x, z)", fontsize=10)
    ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    return save_figure(fig, path)


def _draw_collider(ax: Any, collider: Collider, origin: F, u: int, v: int) -> None:
    """Outline of a sphere or capsule projected on axes (u, v), relative to ``origin``."""
    angle = np.linspace(0.0, 2.0 * np.pi, 40)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    if isinstance(collider, Sphere):
        radius, ends = collider.radius, [collider.center]
    elif isinstance(collider, Capsule):
        radius, ends = collider.radius, [collider.a, collider.b]
    else:
        return
    pts = [np.asarray(e)[[u, v]] - origin[[u, v]] for e in ends]
    for p in pts:
        ax.plot(p[0] + radius * ring[:, 0], p[1] + radius * ring[:, 1], color="0.75", lw=0.6)
    if len(pts) == 2:
        d = pts[1] - pts[0]
        n = np.array([-d[1], d[0]]) / max(float(np.linalg.norm(d)), 1e-12) * radius
        for s in (1.0, -1.0):
            ax.plot([pts[0][0] + s * n[0], pts[1][0] + s * n[0]],
                    [pts[0][1] + s * n[1], pts[1][1] + s * n[1]], color="0.75", lw=0.6)


def _clearance(chain: SpringChain, tails: F) -> float:
    """Smallest signed distance minus hit radius of the tails to the chain's colliders [m]."""
    if not chain.colliders:
        return float("inf")
    radii = np.array([s.radius for s in chain.settings])
    return min(float((c.query(tails, 1.0)[0] - radii).min()) for c in chain.colliders)


def _end_frame(colliders: Sequence[Collider]) -> None:
    for c in colliders:
        c.end_frame()


def _bar(total: int, name: str):  # type: ignore[no-untyped-def]
    from ..pipeline.run import _progress  # the runner's progress bar (tqdm when installed)

    return _progress(total, name)
