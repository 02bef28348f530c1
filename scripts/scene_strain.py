#!/usr/bin/env python3
"""How much each built-in scene stretches: the largest edge strain over every frame end, with
the scene's own settings (which start from the defaults), and the time per frame.

    python scripts/scene_strain.py [--frames N] [--scenes drape,cloak,...] [--backend numpy]
        [--set contact_rounds=0]

Prints a Markdown table (scene, particles, substeps x iterations, hierarchical solve, largest
strain and its frame, strain at the last frame, ms per frame). Spring chains are not cloth and
are left out. The twist scene wrings its cloth on purpose and the tear scene tears it.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth.scenes.cloth import SCENES, Scene  # noqa: E402


def run(scene: Scene, frames: int) -> tuple[float, int, float, float]:
    """(largest strain, its frame, last strain, seconds per frame) over ``frames`` steps."""
    solver = scene.make_solver()
    worst, at = 0.0, 0
    start = time.perf_counter()
    for frame in range(1, frames + 1):
        if scene.animate is not None:
            scene.animate(solver, frame)
        solver.step(1.0 / scene.fps)
        strain = solver.max_strain()
        if strain > worst:
            worst, at = strain, frame
    return worst, at, solver.max_strain(), (time.perf_counter() - start) / frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=0, help="frames per scene (0: the scene's)")
    ap.add_argument("--scenes", default="", help="comma-separated names (default: all cloth)")
    ap.add_argument("--backend", default="", help="override the scenes' backend")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a setting of every scene (a Python literal), repeatable")
    args = ap.parse_args()
    changes = {}
    for item in args.set:
        key, _, value = item.partition("=")
        changes[key] = ast.literal_eval(value)
    names = [n for n in (args.scenes.split(",") if args.scenes else SCENES) if n != "springs"]
    print("| scene | particles | substeps x iterations | hierarchy | largest strain (frame) | "
          "last frame | ms per frame |")
    print("|---|---:|---|---|---:|---:|---:|")
    for name in names:
        scene = SCENES[name]()
        assert isinstance(scene, Scene)
        if args.backend:
            scene.settings = scene.settings.replace(backend=args.backend)
        if changes:
            scene.settings = scene.settings.replace(**changes)
        s = scene.settings
        hierarchy = "on" if s.hierarchy and not s.self_collision else "off"
        if s.hierarchy and s.self_collision and s.effective_contact_rounds and scene.colliders:
            hierarchy = f"in {s.effective_contact_rounds} contact rounds"  # not in the predict
        frames = args.frames or scene.frames
        worst, at, last, seconds = run(scene, frames)
        print(f"| {name} | {len(scene.positions)} | {s.substeps} x {s.iterations} | {hierarchy} "
              f"| {worst:.1%} ({at}) | {last:.1%} | {seconds * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
