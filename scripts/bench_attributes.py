#!/usr/bin/env python3
"""Benchmark: the cost of per-point stiffness scales, soft pins and stitches, side by side.

A 100 x 100 sheet (stretch, shear and bend, PBD and XPBD, 10 substeps x 1 iteration, pinned at
two corners, no colliders), on numpy and on Warp (CPU lanes, float32), in three variants timed
round-robin (one frame each in turn, median ms per substep after a warm-up frame):

* ``plain``: no attributes (the code path of every existing scene);
* ``scaled``: random stretch, shear and bend scales on every point;
* ``all``: the scales, 100 soft pins and 100 stitches.

``--tree PATH`` also times ``plain`` with the package found under PATH (for example an export
of the commit before the attributes: ``git archive 797e3f8 | tar -x -C /tmp/before``) in a
subprocess, so the table shows the unattributed path before and after.

    python scripts/bench_attributes.py [--repeats N] [--tree /tmp/before]
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
SUBSTEPS, N = 10, 100


def _solver(model: str, backend: str, variant: str) -> Any:
    import numpy as np
    from pbdcloth import ClothSettings, ClothSolver
    from pbdcloth.cloth.mesh import grid

    pos, tris = grid(N, N, 1.0, 1.0, plane="xy")
    settings = ClothSettings(model=model, substeps=SUBSTEPS, iterations=1, bend_stiffness=0.5,
                             bend_compliance=1.0, damping=0.5, backend=backend,
                             device="cpu" if backend == "warp" else "", tethers=False)
    if variant == "plain":
        return ClothSolver(pos, tris, pinned=[0, N - 1], settings=settings)
    rng = np.random.default_rng(0)
    n = len(pos)
    attrs = {name: rng.uniform(0.2, 2.0, n) for name in ("stretch_scale", "shear_scale",
                                                           "bend_scale")}
    stitches = None
    if variant == "all":
        weight = np.zeros(n)
        weight[rng.choice(n, 100, replace=False)] = 0.5
        attrs["pin_weight"] = weight
        stitches = np.stack([np.arange(100) * 97 % n, (np.arange(100) * 97 + 5 * N) % n], 1)
    return ClothSolver(pos, tris, pinned=[0, N - 1], settings=settings, point_attributes=attrs,
                       stitches=stitches)


def time_rows(rows: list[tuple[str, str, str]], repeats: int) -> dict[str, float]:
    """Median ms per substep of each (model, backend, variant), timed round-robin."""
    times = median_ms_per_substep({row: _solver(*row) for row in rows}, repeats, SUBSTEPS)
    return {"/".join(row): ms for row, ms in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--tree", help="another source tree: time its plain rows too")
    parser.add_argument("--plain-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    variants = ["plain"] if args.plain_only else ["plain", "scaled", "all"]
    rows = [(m, b, v) for m in ("pbd", "xpbd") for b in ("numpy", "warp") for v in variants]
    result = time_rows(rows, args.repeats)
    if args.plain_only:
        print(json.dumps(result))
        return 0
    before: dict[str, float] = {}
    if args.tree:
        before = rows_of_tree(__file__, args.tree, args.repeats)
    print(f"{N} x {N} sheet, {SUBSTEPS} substeps x 1 iteration: ms per substep (median of "
          f"{args.repeats} frames)")
    head = f"{'model':6} {'backend':8} {'plain':>8} {'scaled':>8} {'all':>8}"
    print(head + (f" {'before':>8}" if before else ""))
    for m in ("pbd", "xpbd"):
        for b in ("numpy", "warp"):
            line = f"{m:6} {b:8}" + "".join(f" {result[f'{m}/{b}/{v}']:8.3f}"
                                            for v in ("plain", "scaled", "all"))
            if before:
                line += f" {before[f'{m}/{b}/plain']:8.3f}"
            print(line)
    return 0


if __name__ == "__main__":
    if "PYTHONPATH" not in os.environ or "--plain-only" not in sys.argv:
        sys.path.insert(0, str(ROOT / "python3.11libs"))
    raise SystemExit(main())
