#!/usr/bin/env python3
"""Cost of the hierarchical solve: ms per frame of a 100 x 100 sheet hanging from two corners,
PBD 10 substeps x 1 iteration, with and without the hierarchy, numpy and Warp CPU side by side
(median of ``--frames`` frames after two warm-up frames, in one run).

    python scripts/bench_hierarchy.py [--n 100] [--frames 9]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth import ClothSettings, ClothSolver  # noqa: E402
from pbdcloth.cloth.mesh import grid  # noqa: E402


def frame_ms(n: int, frames: int, **settings: object) -> tuple[float, float]:
    """(median ms per frame, largest strain at the end)."""
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    solver = ClothSolver(pos, tris, pinned=[0, n - 1],
                         settings=ClothSettings(damping=0.5, **settings))  # type: ignore[arg-type]
    for _ in range(2):
        solver.step(1 / 24)
    times = []
    for _ in range(frames):
        start = time.perf_counter()
        solver.step(1 / 24)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times), solver.max_strain()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--frames", type=int, default=9)
    args = ap.parse_args()
    backends = ["numpy"] + (["warp"] if importlib.util.find_spec("warp") else [])
    print(f"{args.n} x {args.n} sheet, PBD, ms per frame (median of {args.frames})")
    print("| backend | substeps x iterations | plain | hierarchy | ratio |")
    print("|---|---|---:|---:|---:|")
    for backend in backends:
        extra = {"device": "cpu"} if backend == "warp" else {}
        base, _ = frame_ms(args.n, args.frames, backend=backend, hierarchy=False, **extra)
        for substeps in (10, 20):
            plain, _ = frame_ms(args.n, args.frames, backend=backend, hierarchy=False,
                                substeps=substeps, **extra)
            hier, _ = frame_ms(args.n, args.frames, backend=backend, hierarchy=True,
                               substeps=substeps, **extra)
            print(f"| {backend} | {substeps} x 1 | {plain:.1f} | {hier:.1f} | "
                  f"{hier / base:.2f} x the plain 10 x 1 ({base:.1f}) |", flush=True)


if __name__ == "__main__":
    main()
