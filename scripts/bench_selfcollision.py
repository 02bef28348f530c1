#!/usr/bin/env python3
"""Cost of self-collision against the cloth's own constraint solve, in the fold scene.

Runs the fold scene (``pbdcloth.scenes.fold_scene``) at about 10k particles up to the first
frame where the cloth lies on itself, then times a window of frames several times, each time
from the same state in a fresh solver. Within each frame it times, side by side and in the same
substeps, the constraint solve (stretch, shear and bend colors, tethers) and the phases of the
self-collision stage (grid build, candidate search, point-triangle, edge-edge). Prints medians
over the repeats, per substep.

    PYTHONPATH=python3.11libs python scripts/bench_selfcollision.py [--json] [--resolution 129]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth.backends import numpy_backend
from pbdcloth.backends.numpy_backend import NumpyBackend
from pbdcloth.scenes.cloth import fold_scene
from pbdcloth.selfcollision.geometry import closest_point_triangle, closest_points_segments
from pbdcloth.selfcollision.stage import SelfCollision
from pbdcloth.solver import ClothSolver

#: The constraint projections the numpy backend calls (pbdcloth.constraints), timed as "solve".
CONSTRAINT_FUNCTIONS = ("project_distance_pbd", "project_distance_xpbd", "project_bend_pbd",
                        "project_bend_xpbd", "project_tethers")


#: Seconds spent in the constraint projections since the last reset.
CLOCK = {"constraints": 0.0}


def _time_constraints() -> None:
    """Wrap (once) the constraint projections the numpy backend calls so their time adds up in
    :data:`CLOCK` (this benchmark's process only)."""
    if getattr(numpy_backend, "_timed_by_bench", False):
        return
    numpy_backend._timed_by_bench = True  # type: ignore[attr-defined]
    clock = CLOCK
    for name in CONSTRAINT_FUNCTIONS:
        inner: Callable[..., Any] = getattr(numpy_backend, name)

        def wrapper(*args: Any, _inner: Callable[..., Any] = inner, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                clock["constraints"] += time.perf_counter() - start

        setattr(numpy_backend, name, wrapper)


def _window(scene: Any, x: np.ndarray, v: np.ndarray, frames: int) -> dict[str, float]:
    """From state (x, v), one frame before the window, in a fresh solver: one untimed frame
    (so the candidate lists are as warm as in a continuous run), then ``frames`` timed
    frames; per-substep averages."""
    solver: ClothSolver = scene.make_solver()
    solver.positions = x
    solver.velocities = v
    solver.step(1.0 / scene.fps)
    backend = solver.backend
    assert isinstance(backend, NumpyBackend)
    _time_constraints()
    CLOCK["constraints"] = 0.0
    clock = CLOCK
    sc = backend.self_collision
    totals: dict[str, float] = {"hash": 0.0, "candidates": 0.0, "point_triangle": 0.0,
                                "edge_edge": 0.0, "pt_candidates": 0.0, "ee_candidates": 0.0,
                                "pt_contacts": 0.0, "ee_contacts": 0.0, "rebuilds": 0.0,
                                "partial_rebuilds": 0.0, "refreshed": 0.0, "reverted": 0.0,
                                "frame": 0.0}
    substeps = 0
    for _ in range(frames):
        start = time.perf_counter()
        solver.step(1.0 / scene.fps)
        totals["frame"] += time.perf_counter() - start
        st = sc.stats
        for key in ("hash", "candidates", "point_triangle", "edge_edge"):
            totals[key] += st.seconds[key]
        totals["pt_candidates"] += st.point_triangle_candidates
        totals["ee_candidates"] += st.edge_edge_candidates
        totals["pt_contacts"] += st.point_triangle_contacts
        totals["ee_contacts"] += st.edge_edge_contacts
        totals["rebuilds"] += st.rebuilds
        totals["partial_rebuilds"] += st.partial_rebuilds
        totals["refreshed"] += st.refreshed
        totals["reverted"] += st.reverted
        substeps += st.substeps
    out = {k: val / substeps for k, val in totals.items()}
    for key in ("hash", "candidates", "point_triangle", "edge_edge", "frame"):
        out[key] *= 1000.0  # ms
    out["constraints"] = 1000.0 * clock["constraints"] / substeps
    out["self_collision"] = out["hash"] + out["candidates"] + out["point_triangle"] + out[
        "edge_edge"]
    out["ratio"] = out["self_collision"] / out["constraints"]
    out["floor"] = _floor(sc, solver.positions) * scene.settings.iterations
    out["floor_ratio"] = out["floor"] / out["constraints"]
    return out


def _floor(sc: SelfCollision, x: np.ndarray) -> float:
    """ms of one closest-point evaluation of every listed pair at positions x (N, 3): what any
    narrow phase pays at least once per iteration for these candidates (best of 5)."""
    pt, ee = sc.lists.point_triangle, sc.lists.edge_edge
    assert pt is not None and ee is not None
    P = np.ascontiguousarray(x.T)
    v, t = pt
    i, j = ee
    T, E = sc.triangles, sc.edges
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        closest_point_triangle(P[:, v], P[:, T[0, t]], P[:, T[1, t]], P[:, T[2, t]])
        closest_points_segments(P[:, E[0, i]], P[:, E[1, i]], P[:, E[0, j]], P[:, E[1, j]])
        best = min(best, time.perf_counter() - start)
    return 1000.0 * best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=129,
                        help="points along the width (129 x 77 = 9,933 particles)")
    parser.add_argument("--thickness", type=float, default=None,
                        help="self thickness [m] (default: the scene's, 1 cm)")
    parser.add_argument("--starts", default="16,30,45",
                        help="frames simulated before each timed window, comma separated "
                        "(default 16: the layers have just met over the sphere; "
                        "30: the upper part lies folded on the lower; 45: settling)")
    parser.add_argument("--frames", type=int, default=1, help="frames per timed window")
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed runs per window (median; at 10k particles one window of one "
                        "frame takes 20-40 s on a 2-core machine)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)

    scene = fold_scene(resolution=args.resolution)
    if args.thickness is not None:
        scene.settings = scene.settings.replace(self_thickness=args.thickness)
    edge = 1.0 / (args.resolution - 1)
    starts = sorted(int(k) for k in args.starts.split(","))
    solver = scene.make_solver()
    snapshots = {}
    if 1 in starts:
        snapshots[1] = (solver.positions.copy(), solver.velocities.copy())
    t0 = time.perf_counter()
    for frame in range(1, max(starts)):
        solver.step(1.0 / scene.fps)
        if frame + 1 in starts:  # one frame early: _window runs it to warm the lists
            snapshots[frame + 1] = (solver.positions.copy(), solver.velocities.copy())
    warm = time.perf_counter() - t0
    windows: list[dict[str, Any]] = []
    for start in starts:
        x, v = snapshots[start]
        runs = [_window(scene, x, v, args.frames) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        windows.append({"frames": [start + 1, start + args.frames], "per_substep_median": med,
                        "ratio_per_run": [r["ratio"] for r in runs]})
    result = {
        "scene": "fold", "particles": int(scene.positions.shape[0]),
        "triangles": int(scene.triangles.shape[0]), "edge_length_m": edge,
        "self_thickness_m": scene.settings.self_thickness, "substeps": scene.settings.substeps,
        "iterations": scene.settings.iterations, "repeats": args.repeats,
        "warmup_seconds": warm, "windows": windows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"fold scene, {result['particles']} particles, {result['triangles']} triangles, "
          f"edge {1000 * edge:.1f} mm, self thickness "
          f"{1000 * scene.settings.self_thickness:.1f} mm, {result['substeps']} substeps x "
          f"{result['iterations']} iterations; per substep, median of {args.repeats} runs")
    labels = [
        ("constraint solve (stretch, shear, bend)", "constraints", "ms"),
        ("self-collision: grid build (hash)", "hash", "ms"),
        ("self-collision: candidate search", "candidates", "ms"),
        ("self-collision: point-triangle", "point_triangle", "ms"),
        ("self-collision: edge-edge", "edge_edge", "ms"),
        ("self-collision: total", "self_collision", "ms"),
        ("whole substep", "frame", "ms"),
        ("self-collision / constraint solve", "ratio", "x"),
        ("candidate pairs point-triangle", "pt_candidates", ""),
        ("candidate pairs edge-edge", "ee_candidates", ""),
        ("contacts projected point-triangle", "pt_contacts", ""),
        ("contacts projected edge-edge", "ee_contacts", ""),
        ("candidate list full builds", "rebuilds", ""),
        ("candidate list partial updates", "partial_rebuilds", ""),
        ("particles refreshed by partial updates", "refreshed", ""),
        ("floor: closest points of all candidates x iterations", "floor", "ms"),
        ("floor / constraint solve", "floor_ratio", "x"),
        ("particles reverted by the fail-safe", "reverted", ""),
    ]
    head = "".join(f"{'frames {}-{}'.format(*w['frames']):>16}" for w in windows)
    print(f"  {'':<52}{head}")
    for label, key, unit in labels:
        cells = "".join(f"{w['per_substep_median'][key]:>13.2f} {unit:<2}" for w in windows)
        print(f"  {label:<52}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
