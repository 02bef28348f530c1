#!/usr/bin/env python3
"""Benchmark: milliseconds per substep of the cloth solve, backends side by side in one run.

Square grids (32 x 32 and 100 x 100 particles) with stretch, shear and bend constraints, one
iteration per substep, pinned at two corners, no colliders. Each row is the median over repeated
frames of 10 substeps (frame time / 10), after a warm-up frame; the rows of one size are timed
round-robin, a frame each in turn. The per-constraint Python loop
(the seed's way, backends/reference.py) is timed for a single substep at 100 x 100 only.

    python scripts/bench.py [--json] [--repeats N] [--sizes 32 100]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

import numpy as np  # noqa: E402
from pbdcloth import ClothSettings, ClothSolver  # noqa: E402
from pbdcloth.backends.reference import ReferenceBackend  # noqa: E402
from pbdcloth.scenes.cloth import grid  # noqa: E402
from round_robin import median_ms_per_substep  # noqa: E402

SUBSTEPS = 10


def _solver(n: int, model: str, substeps: int) -> ClothSolver:
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    settings = ClothSettings(backend="numpy", model=model, substeps=substeps, iterations=1,
                             bend_stiffness=0.5, bend_compliance=1.0, damping=0.5)
    return ClothSolver(pos, tris, pinned=[0, n - 1], settings=settings)


def time_backends(n: int, models: list[str], repeats: int) -> dict[str, float]:
    """Median ms per substep of each model, timed round-robin (one frame each in turn) so that
    machine load affects every row alike."""
    # One warm-up frame each: first-touch of the work buffers.
    return median_ms_per_substep({m: _solver(n, m, SUBSTEPS) for m in models}, repeats,
                                 SUBSTEPS)


def time_reference(n: int, model: str) -> float:
    """ms for ONE substep of the per-constraint loop."""
    solver = _solver(n, model, 1)
    solver.use_backend(ReferenceBackend(solver.model))
    start = time.perf_counter()
    solver.step(1 / 240)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeats", type=int, default=15, help="frames timed per row (median)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 100])
    parser.add_argument("--no-reference", action="store_true", help="skip the slow loop")
    args = parser.parse_args(argv)

    rows = []
    for n in args.sizes:
        timed = time_backends(n, ["pbd", "xpbd"], args.repeats)
        pbd, xpbd = timed["pbd"], timed["xpbd"]
        rows.append({"grid": f"{n}x{n}", "particles": n * n, "backend": "numpy", "model": "pbd",
                     "ms_per_substep": pbd})
        rows.append({"grid": f"{n}x{n}", "particles": n * n, "backend": "numpy", "model": "xpbd",
                     "ms_per_substep": xpbd, "xpbd_over_pbd": xpbd / pbd})
    if not args.no_reference:
        n = max(args.sizes)
        ref = time_reference(n, "pbd")
        numpy_ms = next(r["ms_per_substep"] for r in rows
                        if r["particles"] == n * n and r["model"] == "pbd")
        rows.append({"grid": f"{n}x{n}", "particles": n * n, "backend": "python loop",
                     "model": "pbd", "ms_per_substep": ref, "loop_over_numpy": ref / numpy_ms})
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "substeps_per_frame": SUBSTEPS,
            "repeats": args.repeats}
    if args.json:
        print(json.dumps({"info": info, "rows": rows}, indent=2))
        return 0
    print(f"pbdcloth benchmark: stretch+shear+bend, 1 iteration, median of {args.repeats} frames "
          f"of {SUBSTEPS} substeps (numpy {np.__version__})")
    print(f"{'grid':>8} {'particles':>9} {'backend':>12} {'model':>5} {'ms/substep':>11}  ratio")
    for r in rows:
        ratio = ""
        if "xpbd_over_pbd" in r:
            ratio = f"xpbd/pbd = {r['xpbd_over_pbd']:.2f}"
        if "loop_over_numpy" in r:
            ratio = f"loop/numpy = {r['loop_over_numpy']:.0f}x"
        print(f"{r['grid']:>8} {r['particles']:>9} {r['backend']:>12} {r['model']:>5} "
              f"{r['ms_per_substep']:>11.2f}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
