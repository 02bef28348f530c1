#!/usr/bin/env python3
"""Candidate solves for near-inextensible cloth, measured side by side in one run (issue 16).

Two pinned cases at about 10k particles, stepped with each candidate for ``--frames`` frames at
24 fps, velocity damping 0.5 1/s:

* sheet: 100 x 100 points, 1 m square, hanging in the xy plane from its two top corners;
* catenary: a strip of 5000 x 2 points, 2 m long, 2 cm wide (rest), its two ends pinned 1.5 m
  apart (started on the circular arc of its length between the pins); the centre line is
  compared with the closed-form catenary of the same length and span, y = a cosh(x / a),
  2 a sinh(s / (2 a)) = L.

Columns: the largest edge strain over every frame and at the last frame, the catenary's largest
distance from the closed form as a fraction of the span (last frame), and the cost per frame
relative to the old default (PBD, 10 substeps x 1 iteration, no hierarchy, no strain limit),
all from the same run.

    python scripts/fabric_candidates.py [--frames 48] [--quick] [--backend numpy|warp]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

import numpy as np  # noqa: E402
from pbdcloth import ClothSettings, ClothSolver  # noqa: E402
from pbdcloth.cloth.mesh import grid  # noqa: E402

OFF = {"strain_limit": 0.0}
ONE = {"hierarchy_sweeps": 1}  # one sweep per coarse level, the former default
CANDIDATES: dict[str, dict[str, Any]] = {
    "before: pbd 10 x 1, no hierarchy": {"hierarchy": False, **OFF},
    "pbd 10 x 1 + tethers": {"hierarchy": False, "tethers": True, **OFF},
    "pbd 20 x 1 + tethers": {"hierarchy": False, "tethers": True, "substeps": 20, **OFF},
    "pbd 10 x 2 + tethers": {"hierarchy": False, "tethers": True, "iterations": 2, **OFF},
    "xpbd 1e-8 20 x 1 + tethers": {"hierarchy": False, "model": "xpbd",
                                   "stretch_compliance": 1e-8, "tethers": True, "substeps": 20,
                                   **OFF},
    "pbd 40 x 1 + tethers (4x cost)": {"hierarchy": False, "tethers": True, "substeps": 40,
                                       **OFF},
    "hierarchy + tethers, pbd 10 x 1": {"hierarchy": True, "tethers": True, **ONE, **OFF},
    "hierarchy, pbd 10 x 1": {"hierarchy": True, **ONE, **OFF},
    "hierarchy, pbd 20 x 1": {"hierarchy": True, "substeps": 20, **ONE, **OFF},
    "hierarchy, pbd 10 x 2": {"hierarchy": True, "iterations": 2, **ONE, **OFF},
    "plain + limit 1 %, pbd 10 x 1": {"hierarchy": False},
    "hierarchy + limit 1 % <= 1 sweep, pbd 10 x 1": {"strain_limit_passes": 1, **ONE},
    "hierarchy + limit 1 % <= 2 sweeps, pbd 10 x 1": {"strain_limit_passes": 2, **ONE},
    "hierarchy + limit 1 % <= 4 sweeps, pbd 10 x 1": {"strain_limit_passes": 4, **ONE},
    "hierarchy + limit 1 % <= 8 sweeps, pbd 10 x 1": {"strain_limit_passes": 8, **ONE},
    "hierarchy + limit 1 % <= 16 sweeps, pbd 10 x 1 (the former default)": {**ONE},
    "hierarchy + limit 1 % <= 16 sweeps, pbd 20 x 1": {"substeps": 20, **ONE},
    "hierarchy <= 4 sweeps per level + limit 1 % <= 16 sweeps, pbd 10 x 1":
        {"hierarchy_sweeps": 4},
    "hierarchy <= 8 sweeps per level, stopping at half the limit, + limit 1 % <= 16 sweeps, "
    "pbd 10 x 1 (the default)": {},
}


def max_strain(solver: ClothSolver) -> float:
    top = solver.model.topology
    x = solver.positions
    length = np.linalg.norm(x[top.edges[:, 0]] - x[top.edges[:, 1]], axis=1)
    return float((length / top.edge_rest_length - 1.0).max())


def catenary_parameter(length: float, span: float) -> float:
    """a of the catenary 2 a sinh(span / (2 a)) = length (bisection on a)."""
    lo, hi = 1e-3, 1e3
    for _ in range(200):
        a = np.sqrt(lo * hi)
        if 2 * a * np.sinh(span / (2 * a)) > length:
            lo = a
        else:
            hi = a
    return float(np.sqrt(lo * hi))


def catenary_distances(x: np.ndarray, y: np.ndarray, length: float, span: float) -> np.ndarray:
    """Distance of each point (x, y) from the closed-form catenary of ``length`` between
    (0, 0) and (span, 0) [m]: to its nearest point on the curve, not the vertical offset at the
    same x (which near the steep pins reads a small shift along the curve as a large error).

    The nearest point's u = x' - span / 2 solves f(u) = (u - p) + (c(u) - y) c'(u) = 0 with
    c(u) = a cosh(u / a) - a cosh(span / (2 a)); Newton's method from u = p, kept on the
    span (the pins are the curve's ends).
    """
    a = catenary_parameter(length, span)
    half = 0.5 * span
    p = np.asarray(x, dtype=np.float64) - half
    q = np.asarray(y, dtype=np.float64)
    base = a * np.cosh(half / a)
    u = np.clip(p, -half, half)
    for _ in range(30):
        c, dc, ddc = a * np.cosh(u / a) - base, np.sinh(u / a), np.cosh(u / a) / a
        f = (u - p) + (c - q) * dc
        df = 1.0 + dc * dc + (c - q) * ddc
        u = np.clip(u - f / np.where(df > 1e-12, df, 1e-12), -half, half)
    return np.hypot(u - p, a * np.cosh(u / a) - base - q)


def catenary_error(solver: ClothSolver, nx: int, length: float, span: float) -> float:
    """Largest distance of the strip's centre line from the closed form, over the span."""
    x = solver.positions
    mid = 0.5 * (x[:nx] + x[nx:])
    return float(catenary_distances(mid[:, 0], mid[:, 1], length, span).max() / span)


def sheet(n: int, settings: ClothSettings) -> ClothSolver:
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    return ClothSolver(pos, tris, pinned=[0, n - 1], settings=settings)


def arc(length: float, span: float, s: np.ndarray) -> np.ndarray:
    """Points (x, y) at arc-length fractions ``s`` of the circular arc of ``length`` whose chord
    is ``span``, hanging below the chord (the half angle t solves sin(t) / t = span / length)."""
    lo, hi = 1e-9, np.pi
    for _ in range(100):
        t = 0.5 * (lo + hi)
        lo, hi = (t, hi) if length * np.sin(t) / t > span else (lo, t)
    radius = length / (2 * t)
    angle = -t + 2 * t * s
    return np.stack([0.5 * span + radius * np.sin(angle),
                     radius * np.cos(t) - radius * np.cos(angle)], axis=1)


def strip(nx: int, settings: ClothSettings, length: float, span: float) -> ClothSolver:
    """A strip of rest length ``length`` (flat along x), started on the circular arc of the same
    length between its pins ``span`` apart, so the pins never move."""
    width = 0.02
    pos, tris = grid(nx, 2, length, width, plane="xz")
    pins = [0, nx - 1, nx, 2 * nx - 1]
    solver = ClothSolver(pos, tris, pinned=pins, settings=settings)
    start = pos.copy()
    start[:, :2] = arc(length, span, pos[:, 0] / length)
    state = solver.get_state()
    state.update(positions=start, pin_start=start[pins], pin_end=start[pins].copy())
    solver.set_state(state)
    return solver


def run(make: Any, frames: int) -> tuple[ClothSolver, float, float]:
    solver = make()
    worst = 0.0
    start = time.perf_counter()
    for _ in range(frames):
        solver.step(1 / 24)
        worst = max(worst, max_strain(solver))
    return solver, worst, (time.perf_counter() - start) / frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--quick", action="store_true", help="30 x 30 sheet, 100 x 2 strip")
    ap.add_argument("--only", default="", help="only the candidates whose name contains this "
                    "(and the first, the baseline)")
    ap.add_argument("--backend", default="numpy", choices=("numpy", "warp"))
    args = ap.parse_args()
    device: dict[str, Any] = {"device": "cpu"} if args.backend == "warp" else {}
    n, nx = (30, 100) if args.quick else (100, 5000)
    length, span = 2.0, 1.5
    print(f"sheet {n} x {n}, catenary strip {nx} x 2, {args.frames} frames, {args.backend}")
    print("| candidate | sheet max strain | sheet last | catenary max strain | catenary last | "
          "catenary vs closed form / span | cost vs before |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    sheet(8, ClothSettings(backend=args.backend, **device)).step(1 / 24)  # warm-up
    base = None
    for k, (name, changes) in enumerate(CANDIDATES.items()):
        if args.only and args.only not in name and k:
            continue
        s = ClothSettings(damping=0.5, backend=args.backend, **device, **changes)
        sol_s, worst_s, t_s = run(lambda s=s: sheet(n, s), args.frames)
        sol_c, worst_c, t_c = run(lambda s=s: strip(nx, s, length, span), args.frames)
        cost = t_s + t_c
        base = cost if base is None else base
        print(f"| {name} | {worst_s:.1%} | {max_strain(sol_s):.1%} | {worst_c:.1%} | "
              f"{max_strain(sol_c):.1%} | {catenary_error(sol_c, nx, length, span):.1%} | "
              f"{cost / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
