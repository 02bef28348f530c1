#!/usr/bin/env python3
"""Cost of the fabric solve: ms per frame of a 100 x 100 sheet hanging from two corners (or,
``--strip``, a 5000 x 2 strip 2 m long pinned 1.5 m apart at both ends, as in
fabric_candidates.py), PBD 10 substeps x 1 iteration, plain, with the hierarchy at one sweep
per coarse level, with it and the strain limit at 1 % with at most 1, 2, 4, 8, 12 and 16 sweeps
(the sweeps stop once one finds every edge within the limit, so the cost varies from frame to
frame), and the default (at most 8 sweeps per coarse level, a level's stopping once none of
its constraints is more than half the limit past its slack), numpy and Warp CPU side by side
(median of ``--frames`` frames after two warm-up frames, every solver of a backend stepped
round-robin in one run so that machine load falls on every row alike).

    python scripts/bench_hierarchy.py [--n 100] [--frames 24] [--strip]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fabric_candidates import sheet, strip  # noqa: E402
from pbdcloth import ClothSettings  # noqa: E402
from round_robin import median_ms_per_substep  # noqa: E402

OFF = {"strain_limit": 0.0}
ONE = {"hierarchy_sweeps": 1}
ROWS: dict[str, dict[str, object]] = {
    "plain 10 x 1 (the old default)": {"hierarchy": False, **OFF},
    "hierarchy 10 x 1": {**ONE, **OFF},
    "hierarchy 20 x 1": {"substeps": 20, **ONE, **OFF},
    "hierarchy + limit 1 %, <= 1 sweep": {"strain_limit_passes": 1, **ONE},
    "hierarchy + limit 1 %, <= 2 sweeps": {"strain_limit_passes": 2, **ONE},
    "hierarchy + limit 1 %, <= 4 sweeps": {"strain_limit_passes": 4, **ONE},
    "hierarchy + limit 1 %, <= 8 sweeps": {"strain_limit_passes": 8, **ONE},
    "hierarchy + limit 1 %, <= 12 sweeps": {"strain_limit_passes": 12, **ONE},
    "hierarchy + limit 1 %, <= 16 sweeps (the former default)": {**ONE},
    "hierarchy <= 8 sweeps per level, stopping at half the limit, + limit 1 %, <= 16 sweeps "
    "(the default)": {},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--strip", action="store_true",
                    help="the 5000 x 2 catenary strip instead of the sheet (--n: its length)")
    args = ap.parse_args()
    n = args.n if not args.strip or args.n != 100 else 5000
    backends = ["numpy"] + (["warp"] if importlib.util.find_spec("warp") else [])
    what = f"{n} x 2 strip" if args.strip else f"{n} x {n} sheet"
    print(f"{what}, PBD, ms per frame (median of {args.frames}, round-robin)")
    print("| backend | solve | ms per frame | against the old default |")
    print("|---|---|---:|---:|")
    for backend in backends:
        extra = {"device": "cpu"} if backend == "warp" else {}
        options = [{"damping": 0.5, "backend": backend, **extra, **changes}
                   for changes in ROWS.values()]
        solvers = {name: (strip(n, ClothSettings(**o), 2.0, 1.5)  # type: ignore[arg-type]
                          if args.strip else sheet(n, ClothSettings(**o)))  # type: ignore[arg-type]
                   for name, o in zip(ROWS, options)}
        ms = median_ms_per_substep(solvers, args.frames, 1, warmup=2)
        base = ms[next(iter(ROWS))]
        for name, value in ms.items():
            print(f"| {backend} | {name} | {value:.1f} | {value / base:.2f} x |", flush=True)


if __name__ == "__main__":
    main()
