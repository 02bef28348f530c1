#!/usr/bin/env python3
"""Benchmark: SDF collision cost against one substep's constraint solve (numpy backend).

A square cloth of N particles rests on a slab given as an OpenVDB level set (made by
``createLevelSetFromPolygons``, 1 cm voxels; without pyopenvdb the same band computed with
numpy), so that every particle is in the band and in
contact each substep: the worst case for the collider. Timed, interleaved round by round so that
a busy machine slows every row alike, and reported as the median of the rounds:

* ``sdf query``: ``SdfCollider.query`` of all particles (trilinear distance and gradient);
* ``sdf collision``: ``project_contacts`` with the SDF collider (query + push-out + friction),
  what the solver runs once per iteration;
* ``plane collision``: the same response against the analytic ``Plane`` (for scale);
* ``substep, no colliders``: ``NumpyBackend.step`` over one substep with one iteration
  (predict, stretch, shear and bend colors, update): one substep's constraint solve;
* ``substep, with SDF``: the same step with the SDF collider.

The ratio ``sdf collision / substep`` is the cost of the collider per iteration relative to the
constraint solve per iteration, the same for any iteration count. Target: <= 30%.

Usage: ``PYTHONPATH=python3.11libs python scripts/bench_sdf.py [--particles 10000] [--json]``
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth import ClothSettings, Plane, SdfCollider
from pbdcloth.backends.base import Control
from pbdcloth.backends.numpy_backend import NumpyBackend
from pbdcloth.cloth.mesh import ClothMesh
from pbdcloth.cloth.model import build_model
from pbdcloth.cloth.state import ClothState
from pbdcloth.colliders.response import ContactBuffer, project_contacts
from pbdcloth.scenes.cloth import grid
from pbdcloth.scenes.props import box_mesh

TARGET = 0.30


def measure(rows: dict[str, Callable[[], float]],
            repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median and minimum seconds of each row, measured round-robin (one call of every row per
    round); each callable returns the seconds of its own timed part."""
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for fn in rows.values():  # warm-up
        fn()
    for _ in range(repeats):
        for name, fn in rows.items():
            samples[name].append(fn())
    return ({name: float(np.median(v)) for name, v in samples.items()},
            {name: float(np.min(v)) for name, v in samples.items()})


def slab_collider(voxel: float) -> SdfCollider:
    """A 1.8 x 0.1 x 1.8 m slab with its top at y = 0: made by OpenVDB from a box mesh, or,
    without pyopenvdb, the same narrow band (3 voxels) computed with numpy (same sampler)."""
    half, centre = np.array([0.9, 0.05, 0.9]), np.array([0.0, -0.05, 0.0])
    try:
        verts, quads = box_mesh(centre, half)
        return SdfCollider.from_mesh(verts, quads, voxel)
    except ImportError:
        band = 3 * voxel
        lo = centre - half - band
        counts = np.ceil(2 * (half + band) / voxel).astype(int) + 1
        axes = [lo[k] + voxel * np.arange(counts[k]) for k in range(3)]
        pts = np.stack(np.meshgrid(*axes, indexing="ij"), -1)
        q = np.abs(pts - centre) - half
        dist = np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)
        return SdfCollider.from_dense(np.clip(dist, -band, band), voxel, lo, band)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--particles", type=int, default=10_000, help="cloth size (default 10000)")
    ap.add_argument("--repeats", type=int, default=30, help="rounds to take the median of")
    ap.add_argument("--voxel", type=float, default=0.01, help="voxel size [m] (default 0.01)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)

    side = max(2, round(math.sqrt(args.particles)))
    n = side * side
    size, thickness, substep = 1.5, 0.01, 1.0 / 240.0
    settings = ClothSettings(substeps=1, iterations=1, backend="numpy", thickness=thickness,
                             friction=0.3, static_friction=0.5)
    sdf = slab_collider(args.voxel)
    plane = Plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0))

    pos, tris = grid(side, side, size, size, origin=(-size / 2, thickness, -size / 2))
    model = build_model(ClothMesh.from_arrays(pos, tris), None, settings.density)
    backend = NumpyBackend(model)
    free = model.inv_mass > 0.0
    vel = np.zeros_like(pos)
    # Positions after one substep's prediction: gravity presses every particle into the slab.
    predicted = np.ascontiguousarray((pos + substep * substep * np.asarray(settings.gravity)).T)
    x_prev = np.ascontiguousarray(pos.T)
    pins = np.zeros((0, 3))

    def collide(collider: object) -> Callable[[], float]:
        def run() -> float:
            p = predicted.copy()
            contacts = ContactBuffer(n)
            t = time.perf_counter()
            project_contacts(p.T, x_prev.T, free, collider, 0.0, 1.0, substep, thickness,  # type: ignore[arg-type]
                             settings.mu_static, settings.friction, contacts)
            return time.perf_counter() - t
        return run

    def query() -> float:
        pts = predicted.T
        t = time.perf_counter()
        sdf.query(pts, 1.0)
        return time.perf_counter() - t

    def step(colliders: list[object]) -> Callable[[], float]:
        def run() -> float:
            t = time.perf_counter()
            backend.step(ClothState(pos, vel), ClothState(pos, vel),
                         Control(settings, pins, pins, colliders), substep)  # type: ignore[arg-type]
            return time.perf_counter() - t
        return run

    in_contact = project_contacts(predicted.copy().T, x_prev.T, free, sdf, 0.0, 1.0, substep,
                                  thickness, 0.5, 0.3, ContactBuffer(n))
    med, low = measure({
        "sdf query": query,
        "sdf collision": collide(sdf),
        "plane collision": collide(plane),
        "substep, no colliders": step([]),
        "substep, with SDF": step([sdf]),
    }, args.repeats)
    solve = med["substep, no colliders"]
    ratio = med["sdf collision"] / solve
    ratio_min = low["sdf collision"] / low["substep, no colliders"]
    result = {
        "particles": n, "in_contact": in_contact, "voxel_size": args.voxel,
        "sdf_block": list(sdf.grid.dense_shape), "repeats": args.repeats,
        "ms_median": {k: 1000 * v for k, v in med.items()},
        "ms_min": {k: 1000 * v for k, v in low.items()},
        "ratio_sdf_collision_to_substep": ratio,
        "ratio_sdf_collision_to_substep_min": ratio_min,
        "ratio_sdf_query_to_substep": med["sdf query"] / solve,
        "overhead_step_with_sdf": med["substep, with SDF"] / solve - 1.0,
        "target": TARGET, "meets_target": ratio <= TARGET,
        "python": platform.python_version(), "numpy": np.__version__,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"SDF collision benchmark: {n} particles ({in_contact} in contact), voxel "
          f"{args.voxel} m, block {tuple(result['sdf_block'])}, {args.repeats} rounds")
    print(f"{'row':24s} {'median ms':>10s} {'/ substep':>10s} {'min ms':>9s} {'/ substep':>10s}")
    for name in med:
        print(f"{name:24s} {1000 * med[name]:10.3f} {med[name] / solve:10.1%} "
              f"{1000 * low[name]:9.3f} {low[name] / low['substep, no colliders']:10.1%}")
    verdict = "meets" if ratio <= TARGET else "MISSES"
    print(f"SDF collision / one substep's constraint solve = {ratio:.1%} of the median "
          f"({ratio_min:.1%} of the minimum; {verdict} the {TARGET:.0%} target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
