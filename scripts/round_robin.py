"""Timing that the benchmark scripts share: solvers stepped round-robin, and another source
tree's rows timed in a subprocess.

It imports no pbdcloth, so that a script can time the package of another tree with it
(``--tree``: the script runs itself there with ``--plain-only`` and prints its rows as JSON).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Protocol, TypeVar

K = TypeVar("K", bound=Hashable)


class Stepper(Protocol):
    def step(self, dt: float) -> object: ...


def median_ms_per_substep(solvers: Mapping[K, Stepper], repeats: int, substeps: int,
                          warmup: int = 1, dt: float = 1 / 24) -> dict[K, float]:
    """Median ms per substep of each solver over ``repeats`` frames of ``dt``, after
    ``warmup`` untimed frames, timed round-robin (one frame of each in turn, so that machine
    load affects every row alike)."""
    for solver in solvers.values():
        for _ in range(warmup):
            solver.step(dt)
    times: dict[K, list[float]] = {key: [] for key in solvers}
    for _ in range(repeats):
        for key, solver in solvers.items():
            start = time.perf_counter()
            solver.step(dt)
            times[key].append((time.perf_counter() - start) * 1000 / substeps)
    return {key: statistics.median(t) for key, t in times.items()}


def rows_of_tree(script: str, tree: str, repeats: int) -> dict[str, float]:
    """``script --plain-only --repeats N`` run with the package under ``tree``: the JSON rows
    it prints last."""
    env = {**os.environ, "PYTHONPATH": str(Path(tree) / "python3.11libs")}
    out = subprocess.run([sys.executable, script, "--plain-only", "--repeats", str(repeats)],
                         env=env, capture_output=True, text=True, check=True)
    rows: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return rows
