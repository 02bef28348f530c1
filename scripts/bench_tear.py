#!/usr/bin/env python3
"""Benchmark: what a tear costs at 10k particles, beside one frame of the solve.

A 100 x 100 grid (10,000 particles, pinned at its left and right columns) tears along one
vertical line of ``--cut`` edges from the top edge (so every point on it but the last splits).
Timed, interleaved round by round so that a busy machine slows every row alike, and reported
as the median of the rounds:

* ``tear (incremental)``: :func:`pbdcloth.cloth.tear.tear_edges`: split the points, rebuild
  topology, carry the colors over and color only the new constraints, rebuild the tethers;
* ``tear with attributes``: the same on a cloth with every point attribute (scales and soft
  pins) and 100 stitches, then :func:`pbdcloth.cloth.tear.carry_extras` (the copies' attributes,
  the families' scales, the stitch families);
* ``model from scratch``: :func:`pbdcloth.cloth.model.build_model` of the torn mesh (topology,
  greedy coloring of every family, tethers): what a full rebuild would cost;
* ``  of which tethers``: :func:`pbdcloth.cloth.model.build_tethers` alone (Dijkstra in Python,
  part of both rows above);
* ``numpy backend rebuild``, ``warp backend rebuild``: constructing the backend for the torn
  model (Warp: device arrays on the CPU device, plus the first frame's kernel recording);
* ``frame (numpy)``: one frame of 10 substeps x 2 iterations on the numpy backend, for scale.

Usage: ``PYTHONPATH=python3.11libs python scripts/bench_tear.py [--n 100] [--cut 40]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth import ClothSettings
from pbdcloth.backends.base import Control
from pbdcloth.backends.numpy_backend import NumpyBackend
from pbdcloth.cloth.mesh import ClothMesh, grid
from pbdcloth.cloth.model import build_model, build_tethers
from pbdcloth.cloth.state import ClothState
from pbdcloth.cloth.stitches import Stitches
from pbdcloth.cloth.tear import carry_extras, tear_edges


def _timed(fn: Callable[[], object]) -> float:
    begin = time.perf_counter()
    fn()
    return time.perf_counter() - begin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="grid points per side (100: 10k)")
    parser.add_argument("--cut", type=int, default=40, help="edges torn (a vertical line)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.n
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    idx = np.arange(n * n).reshape(n, n)
    pins = np.concatenate([idx[:, 0], idx[:, -1]])
    mesh = ClothMesh.from_arrays(pos, tris)
    model = build_model(mesh, pins, 0.15)
    e = model.topology.edges
    col = n // 2
    line = np.flatnonzero((e[:, 0] % n == col) & (e[:, 1] % n == col) & (e[:, 0] // n < args.cut))
    torn = tear_edges(model, line)
    k = np.arange(n * n)
    weight = np.where(k % 97 == 0, 0.5, 0.0)
    attrs = {"bend_scale": 0.5 + (k % 7) / 7.0, "stretch_scale": 1.0 + (k % 3) / 10.0,
             "shear_scale": 0.8 + (k % 5) / 20.0, "mass_scale": 1.0 + (k % 4) / 8.0,
             "pin_weight": weight}
    rows_a = idx[10:60, 20].ravel()
    stitched = build_model(mesh, pins, 0.15, attrs,
                           Stitches(np.stack([np.r_[rows_a, rows_a + 1],
                                              np.r_[rows_a + 2 * n, rows_a + 2 * n + 1]], 1)))

    def tear_with_attributes() -> None:
        t = tear_edges(stitched, line)
        carry_extras(t.model, stitched, t.origin, stitched.stitch_list.index,
                     stitched.triangle_stitch_list.index)

    settings = ClothSettings(substeps=10, iterations=2, tethers=True)
    control = Control(settings, pos[pins], pos[pins])

    try:
        from pbdcloth.backends.warp.backend import WarpBackend
    except ImportError:
        WarpBackend = None  # type: ignore[assignment,misc]

    def warp_rebuild() -> None:
        assert WarpBackend is not None
        backend = WarpBackend(torn.model, device="cpu")
        x = torn.model.mesh.positions
        state = ClothState(x.copy(), np.zeros_like(x))
        backend.step(state, ClothState(x, np.zeros_like(x)),
                     Control(settings, x[torn.model.pinned], x[torn.model.pinned]), 1 / 24)

    def warp_frame() -> None:
        assert WarpBackend is not None
        warp_backend.step(state, ClothState(pos, np.zeros_like(pos)), control, 1 / 24)

    state = ClothState(pos.copy(), np.zeros_like(pos))
    numpy_backend = NumpyBackend(model)
    rows: dict[str, Callable[[], object]] = {
        "tear (incremental)": lambda: tear_edges(model, line),
        "tear with attributes": tear_with_attributes,
        "model from scratch": lambda: build_model(torn.model.mesh, torn.model.pinned, 0.15,
                                                  cut=torn.model.topology.cut),
        "  of which tethers": lambda: build_tethers(torn.model.topology, torn.model.pinned,
                                                    torn.model.particle_count),
        "numpy backend rebuild": lambda: NumpyBackend(torn.model),
        "frame (numpy)": lambda: numpy_backend.step(state, ClothState(pos, pos * 0), control,
                                                     1 / 24),
    }
    if WarpBackend is not None:
        warp_backend = WarpBackend(model, device="cpu")
        warp_backend.step(state, ClothState(pos, np.zeros_like(pos)), control, 1 / 24)
        rows["warp backend rebuild"] = warp_rebuild
        rows["frame (warp cpu)"] = warp_frame
    times: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(args.rounds):
        for name, fn in rows.items():
            times[name].append(_timed(fn))
    frame = statistics.median(times["frame (numpy)"])
    print(f"pbdcloth tear benchmark: {n * n} particles, {line.size} edges torn "
          f"({torn.new_particles} points split), median of {args.rounds} rounds, "
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"{'step':<24} {'ms':>9} {'x numpy frame':>14}")
    for name, values in times.items():
        ms = 1000 * statistics.median(values)
        print(f"{name:<24} {ms:9.1f} {ms / (1000 * frame):14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
