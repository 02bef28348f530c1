#!/usr/bin/env python3
"""Benchmark: the cost of per-point contact scales (thickness_scale, friction_scale), side by side.

A 60 x 60 sheet (1.2 m) draped over a sphere on a floor plane, in contact on both (PBD, 10
substeps x 4 iterations, continuous collision on), on numpy and on Warp (CPU, float32), in
three variants timed round-robin (one frame each in turn, median ms per substep, after 12
frames of draping):

* ``plain``: no attributes (the code path of every existing scene);
* ``ones``: both scales given, 1 everywhere (the scaled code path, same result bit for bit);
* ``scaled``: random thickness scales in [0.5, 2] and friction scales in [0, 2].

``--tree PATH`` also times ``plain`` with the package found under PATH (for example an export
of the commit before the contact scales: ``git archive 1aabc10 | tar -x -C /tmp/before``) in a
subprocess, so the table shows the unattributed path before and after.

    python scripts/bench_contact_scales.py [--repeats N] [--tree /tmp/before]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from round_robin import median_ms_per_substep, rows_of_tree

ROOT = Path(__file__).resolve().parents[1]
SUBSTEPS, N, DRAPE = 10, 60, 12
VARIANTS = ("plain", "ones", "scaled")


def _solver(backend: str, variant: str) -> Any:
    import numpy as np
    from pbdcloth import ClothSettings, ClothSolver
    from pbdcloth.cloth.mesh import grid
    from pbdcloth.colliders import Plane, Sphere

    pos, tris = grid(N, N, 1.2, 1.2, origin=(-0.6, 0.32, -0.6))
    settings = ClothSettings(substeps=SUBSTEPS, iterations=4, backend=backend,
                             device="cpu" if backend == "warp" else "", thickness=0.01,
                             friction=0.4, continuous_collision=True)
    colliders = [Plane([0.0, 0.0, 0.0], [0.0, 1.0, 0.0]), Sphere([0.0, 0.15, 0.0], 0.15)]
    if variant == "plain":  # the call of the tree before the contact scales too
        return ClothSolver(pos, tris, settings=settings, colliders=colliders)
    rng = np.random.default_rng(0)
    n = len(pos)
    ones = variant == "ones"
    attrs = {"thickness_scale": np.ones(n) if ones else rng.uniform(0.5, 2.0, n),
             "friction_scale": np.ones(n) if ones else rng.uniform(0.0, 2.0, n)}
    return ClothSolver(pos, tris, settings=settings, colliders=colliders,
                       point_attributes=attrs)


def time_rows(rows: list[tuple[str, str]], repeats: int) -> dict[str, float]:
    """Median ms per substep of each (backend, variant), timed round-robin."""
    times = median_ms_per_substep({row: _solver(*row) for row in rows}, repeats, SUBSTEPS,
                                  warmup=DRAPE)
    return {"/".join(row): ms for row, ms in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--tree", help="another source tree: time its plain rows too")
    parser.add_argument("--plain-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    variants = ("plain",) if args.plain_only else VARIANTS
    rows = [(b, v) for b in ("numpy", "warp") for v in variants]
    result = time_rows(rows, args.repeats)
    if args.plain_only:
        print(json.dumps(result))
        return 0
    before: dict[str, float] = {}
    if args.tree:
        before = rows_of_tree(__file__, args.tree, args.repeats)
    print(f"{N} x {N} sheet on a sphere and a plane, {SUBSTEPS} substeps x 4 iterations: "
          f"ms per substep (median of {args.repeats} frames)")
    head = f"{'backend':8}" + "".join(f" {v:>8}" for v in VARIANTS)
    print(head + (f" {'before':>8}" if before else ""))
    for b in ("numpy", "warp"):
        line = f"{b:8}" + "".join(f" {result[f'{b}/{v}']:8.3f}" for v in VARIANTS)
        if before:
            line += f" {before[f'{b}/plain']:8.3f}"
        print(line)
    return 0


if __name__ == "__main__":
    if "PYTHONPATH" not in os.environ or "--plain-only" not in sys.argv:
        sys.path.insert(0, str(ROOT / "python3.11libs"))
    raise SystemExit(main())
