#!/usr/bin/env python3
"""Cost of self-collision on the Warp backend against the cloth's own constraint solve.

Fold scene (``pbdcloth.scenes.fold_scene``) at about 10k particles (resolution 129) on a Warp
device (default: the CPU). The scene is simulated with Warp up to each start frame; from that
state a window of frames is then run, side by side in one process:

* ``graph``: the recorded frame replayed as a graph, self-collision on and off (ms per
  substep; their difference is what self-collision costs in production);
* ``launches``: the same frame replayed launch by launch, each launch timed (the device is
  synchronised after each), summed by phase: constraint solve (stretch, shear, bend colors,
  tethers), self-collision broad phase (clamp, Verlet check, grid, candidate lists) and
  narrow phase (contacts, fail-safe). Each launch carries its Python overhead here (a few
  microseconds), which the graph replay does not.

Prints medians over the repeats, per substep, and the ratio self-collision / constraint solve.

    PYTHONPATH=python3.11libs python scripts/bench_warp_selfcollision.py [--resolution 129]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

import warp as wp
from pbdcloth.backends.base import Control
from pbdcloth.backends.warp.backend import WarpBackend
from pbdcloth.cloth.state import ClothState
from pbdcloth.scenes.cloth import fold_scene

# The constraint solve (the CPU path's eight-wide lane kernels carry a "_lanes" suffix).
SOLVE = ("distance_pbd", "distance_xpbd", "bend_pbd", "bend_xpbd", "tethers", "zero_scalars")
NARROW = ("project_begin", "pair_eval", "zero_counts", "contact_relax", "contact_apply", "apply_sums",
          "next_phase", "pass_end", "mark_crossed", "revert_apply", "round_end", "track_begin",
          "moved_since", "copy_vec3", "zero_scalars")


def _phase(launch: Any) -> str:
    name = launch.kernel.key.rsplit("__", 1)[-1].rsplit(".", 1)[-1]
    if "build_list_kernels" in launch.kernel.key:
        return "broad"
    if "build_self_kernels" in launch.kernel.key:
        return "narrow" if name in NARROW else "broad"
    return "solve" if name.removesuffix("_lanes") in SOLVE else "other"


def _graph_window(scene: Any, x: np.ndarray, v: np.ndarray, frames: int, on: bool,
                  device: str) -> tuple[float, dict[str, float]]:
    """ms per substep of the graph replay over the window, and the last frame's stats."""
    settings = scene.settings.replace(self_collision=on)
    backend = WarpBackend(scene.make_solver().model, device=device)
    control = Control(settings, np.zeros((0, 3)), np.zeros((0, 3)), scene.colliders)
    backend.step(ClothState(x, v), ClothState(x, v), control, 1.0 / scene.fps)  # record, grow
    state = ClothState(x, v)
    total = 0.0
    extra: dict[str, float] = {}
    for _ in range(frames):
        start = time.perf_counter()
        st = backend.step(state, state, control, 1.0 / scene.fps)
        total += time.perf_counter() - start
        for key, val in st.extra.items():
            extra[key] = extra.get(key, 0.0) + val / frames
    return 1000.0 * total / (frames * settings.substeps), extra


def _launch_window(scene: Any, x: np.ndarray, v: np.ndarray, device: str) -> dict[str, float]:
    """ms per substep by phase, one frame replayed launch by launch."""
    settings = scene.settings
    backend = WarpBackend(scene.make_solver().model, device=device, use_graph=False)
    control = Control(settings, np.zeros((0, 3)), np.zeros((0, 3)), scene.colliders)
    backend.step(ClothState(x, v), ClothState(x, v), control, 1.0 / scene.fps)  # record, size
    backend._x.assign(x.astype(np.float32))
    backend._v.assign(v.astype(np.float32))
    if backend._selfcol is not None:
        backend._selfcol.begin_frame()
    clock: dict[str, float] = {"solve": 0.0, "broad": 0.0, "narrow": 0.0, "other": 0.0}
    dev = wp.get_device(device)
    for launch in backend._launches:
        start = time.perf_counter()
        launch.launch()
        wp.synchronize_device(dev)
        clock[_phase(launch)] += time.perf_counter() - start
    return {k: 1000.0 * val / settings.substeps for k, val in clock.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--resolution", type=int, default=129,
                        help="points along the width (129 x 77 = 9,933 particles)")
    parser.add_argument("--starts", default="2,14,30",
                        help="frames simulated (with Warp) before each window, comma separated "
                        "(2: falling, flat; 14: the layers meet; 30: folded)")
    parser.add_argument("--frames", type=int, default=1, help="frames per graph window")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (median)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    scene = fold_scene(resolution=args.resolution)
    scene.settings = scene.settings.replace(backend="warp", device=args.device)
    starts = sorted(int(k) for k in args.starts.split(","))
    solver = scene.make_solver()
    snapshots = {}
    t0 = time.perf_counter()
    for frame in range(1, max(starts) + 1):
        solver.step(1.0 / scene.fps)
        if frame in starts:
            snapshots[frame] = (solver.positions.copy(), solver.velocities.copy())
    warm = time.perf_counter() - t0
    rows = []
    for start in starts:
        x, v = snapshots[start]
        on, off, phases = [], [], []
        extra: dict[str, float] = {}
        for _ in range(args.repeats):  # round-robin: on, off, by phase
            ms, extra = _graph_window(scene, x, v, args.frames, True, args.device)
            on.append(ms)
            off.append(_graph_window(scene, x, v, args.frames, False, args.device)[0])
            phases.append(_launch_window(scene, x, v, args.device))
        ph = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
        self_ms = ph["broad"] + ph["narrow"]
        rows.append({
            "start": start, "particles": len(scene.positions),
            "graph_on_ms": statistics.median(on), "graph_off_ms": statistics.median(off),
            "solve_ms": ph["solve"], "broad_ms": ph["broad"], "narrow_ms": ph["narrow"],
            "other_ms": ph["other"], "ratio": self_ms / ph["solve"] if ph["solve"] else 0.0,
            "pt_candidates": extra.get("self_pt_candidates", 0.0),
            "ee_candidates": extra.get("self_ee_candidates", 0.0),
            "pt_contacts": extra.get("self_pt_contacts", 0.0),
            "ee_contacts": extra.get("self_ee_contacts", 0.0),
            "rebuilds": extra.get("self_rebuilds", 0.0),
        })
    if args.json:
        print(json.dumps({"warmup_s": warm, "rows": rows}, indent=2))
        return 0
    print(f"fold scene, {rows[0]['particles']} particles, Warp {wp.__version__} on "
          f"{args.device}, {scene.settings.substeps} substeps x {scene.settings.iterations} "
          f"iterations; ms per substep (medians of {args.repeats})")
    head = ("start", "selfcol off", "selfcol on", "solve", "broad", "narrow", "ratio",
            "PT cand", "EE cand", "PT cont/fr", "EE cont/fr", "rebuilds/fr")
    print(" | ".join(f"{h:>10s}" for h in head))
    for r in rows:
        vals = (r["start"], r["graph_off_ms"], r["graph_on_ms"], r["solve_ms"], r["broad_ms"],
                r["narrow_ms"], r["ratio"], r["pt_candidates"], r["ee_candidates"],
                r["pt_contacts"], r["ee_contacts"], r["rebuilds"])
        print(" | ".join(f"{val:>10.0f}" if isinstance(val, int) or abs(val) >= 100
                         else f"{val:>10.2f}" for val in vals))
    print("selfcol off / on: whole substep (recorded frame replayed) without and with "
          "self-collision; ratio = (broad + narrow) / solve, from the launch-by-launch replay.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
