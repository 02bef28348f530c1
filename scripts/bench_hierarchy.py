#!/usr/bin/env python3
"""Cost of the fabric solve: ms per frame of a 100 x 100 sheet hanging from two corners, PBD
10 substeps x 1 iteration, plain, with the hierarchy, and with the hierarchy and the strain
limit at 1 % with at most 1, 2, 4, 8, 12 and 16 sweeps (the sweeps stop once one finds every
edge within the limit, so the cost varies from frame to frame), numpy and Warp CPU side by side
(median of ``--frames`` frames after two warm-up frames, every solver of a backend stepped
round-robin in one run so that machine load falls on every row alike).

    python scripts/bench_hierarchy.py [--n 100] [--frames 24]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fabric_candidates import sheet  # noqa: E402
from pbdcloth import ClothSettings  # noqa: E402
from round_robin import median_ms_per_substep  # noqa: E402

OFF = {"strain_limit": 0.0}
ROWS: dict[str, dict[str, object]] = {
    "plain 10 x 1 (the old default)": {"hierarchy": False, **OFF},
    "hierarchy 10 x 1": {**OFF},
    "hierarchy 20 x 1": {"substeps": 20, **OFF},
    "hierarchy + limit 1 %, <= 1 sweep": {"strain_limit_passes": 1},
    "hierarchy + limit 1 %, <= 2 sweeps": {"strain_limit_passes": 2},
    "hierarchy + limit 1 %, <= 4 sweeps": {"strain_limit_passes": 4},
    "hierarchy + limit 1 %, <= 8 sweeps": {"strain_limit_passes": 8},
    "hierarchy + limit 1 %, <= 12 sweeps": {"strain_limit_passes": 12},
    "hierarchy + limit 1 %, <= 16 sweeps (the default)": {},
    "hierarchy <= 8 sweeps per level + limit 1 %, <= 16 sweeps": {"hierarchy_sweeps": 8},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--frames", type=int, default=24)
    args = ap.parse_args()
    backends = ["numpy"] + (["warp"] if importlib.util.find_spec("warp") else [])
    print(f"{args.n} x {args.n} sheet, PBD, ms per frame (median of {args.frames}, round-robin)")
    print("| backend | solve | ms per frame | against the old default |")
    print("|---|---|---:|---:|")
    for backend in backends:
        extra = {"device": "cpu"} if backend == "warp" else {}
        options = [{"damping": 0.5, "backend": backend, **extra, **changes}
                   for changes in ROWS.values()]
        solvers = {name: sheet(args.n, ClothSettings(**o))  # type: ignore[arg-type]
                   for name, o in zip(ROWS, options)}
        ms = median_ms_per_substep(solvers, args.frames, 1, warmup=2)
        base = ms[next(iter(ROWS))]
        for name, value in ms.items():
            print(f"| {backend} | {name} | {value:.1f} | {value / base:.2f} x |", flush=True)


if __name__ == "__main__":
    main()
