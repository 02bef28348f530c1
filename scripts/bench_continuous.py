#!/usr/bin/env python3
"""Benchmark: the cost of continuous collision (``continuous_collision``) on the example scenes.

Each scene of ``examples/`` with moving or static colliders is stepped for 24 frames with the
continuous test off and on, on numpy and on Warp (CPU), after one warm-up frame; the rounds are
interleaved (off, on, off, on) so that a busy machine slows both alike, and the faster of two
rounds is reported, in milliseconds per frame, with the ratio on / off.

    PYTHONPATH=python3.11libs python scripts/bench_continuous.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.pipeline.scenefile import load_scene

SCENES = ("moving_capsule.toml", "drape_vdb.toml", "drape.toml")
FRAMES = 24


def ms_per_frame(path: Path, continuous: bool, backend: str) -> float:
    over: dict[str, object] = {"continuous_collision": continuous, "backend": backend}
    if backend == "warp":
        over["device"] = "cpu"
    spec = load_scene(path, settings_overrides=over)
    solver = spec.scene().make_solver()
    first = spec.start_frame + 1
    spec.animate(solver, first)
    solver.step(1 / spec.fps)
    begin = time.perf_counter()
    for frame in range(first + 1, first + 1 + FRAMES):
        spec.animate(solver, frame)
        solver.step(1 / spec.fps)
    return (time.perf_counter() - begin) / FRAMES * 1000.0


def main() -> None:
    backends = ["numpy"]
    try:
        import warp  # noqa: F401

        backends.append("warp")
    except ImportError:
        pass
    print(f"{'scene':22s} {'backend':7s} {'off ms':>8s} {'on ms':>8s} {'on/off':>7s}")
    for name in SCENES:
        for backend in backends:
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(2):
                for continuous in (False, True):
                    times[continuous].append(ms_per_frame(ROOT / "examples" / name, continuous,
                                                          backend))
            off, on = min(times[False]), min(times[True])
            print(f"{name:22s} {backend:7s} {off:8.2f} {on:8.2f} {on / off:7.2f}")


if __name__ == "__main__":
    main()
