#!/usr/bin/env python3
"""Device check of the Warp backend on a CUDA GPU: agreement with numpy, determinism, speed.

Runs in one go (a few minutes; most of it building the 1M-particle model on the host and
compiling the kernels for the GPU once) and prints a short table:

1. agreement: the hanging cloth and the sphere drape of ``tests/test_warp.py``, 48 frames, float32
   kernels on the device against the numpy backend, with the same bounds as the CPU tests (and
   the float64 kernels, bound 1e-9 m);
2. determinism: two device runs of the drape, bit for bit;
3. speed: 100 x 100 and 1000 x 1000 particles (stretch + shear + bend, one iteration per substep,
   as ``scripts/bench_warp.py``): device time per substep of the replayed frame graph alone, and
   per frame including the host transfers of positions and velocities.

    python scripts/gpu_check.py [--device cuda:0] [--json] [--big 1000] [--frames 48]

Without a CUDA device it stops (exit 2) unless ``--device cpu`` is given, which runs the same
checks on Warp's CPU device (a dry run of this script; the big grid is then skipped).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python3.11libs"))

import numpy as np
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.scenes.cloth import Scene, drape_scene, grid, hanging_scene

#: The bounds of tests/test_warp.py (measured and explained there) [m].
HANGING_BOUND = 2e-5
DRAPE_BOUND = 1.5e-4
FLOAT64_BOUND = 1e-9
DT = 1.0 / 24.0


def _drape() -> Scene:
    settings = ClothSettings(substeps=10, iterations=2, bend_stiffness=0.05, thickness=0.01,
                             friction=1.0, damping=2.0)
    return drape_scene(resolution=16, settings=settings)


def _run(scene: Scene, frames: int, device: str | None, precision: str = "float32"
         ) -> np.ndarray:
    solver = scene.make_solver()
    if device is not None:
        from pbdcloth.backends.warp.backend import WarpBackend

        solver.use_backend(WarpBackend(solver.model, device=device, precision=precision))
    else:
        solver.settings = solver.settings.replace(backend="numpy")
    for _ in range(frames):
        solver.step(DT)
    return solver.positions.copy()


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b, axis=-1).max())


def agreement(device: str, frames: int) -> list[dict[str, Any]]:
    rows = []
    cases: list[tuple[str, Callable[[], Scene], float]] = [
        ("hanging 20x20", hanging_scene, HANGING_BOUND), ("drape 16x16", _drape, DRAPE_BOUND)]
    for name, make, bound in cases:
        reference = _run(make(), frames, None)
        for precision, limit in (("float32", bound), ("float64", FLOAT64_BOUND)):
            diff = _max_diff(_run(make(), frames, device, precision), reference)
            rows.append({"check": f"{name}, {frames} frames, {precision} vs numpy",
                         "value_m": diff, "bound_m": limit, "ok": diff < limit})
    a = _run(_drape(), 12, device)
    b = _run(_drape(), 12, device)
    rows.append({"check": "drape twice on the device, bit for bit", "value_m": _max_diff(a, b),
                 "bound_m": 0.0, "ok": bool(np.array_equal(a, b))})
    return rows


def speed(n: int, device: str, frames: int) -> dict[str, Any]:
    """Device ms per substep (graph replay alone) and ms per frame with the transfers."""
    import warp as wp
    from pbdcloth.backends.warp.backend import WarpBackend

    substeps = 10
    t0 = time.perf_counter()
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    settings = ClothSettings(substeps=substeps, iterations=1, bend_stiffness=0.5, damping=0.5)
    solver = ClothSolver(pos, tris, pinned=[0, n - 1], settings=settings)
    backend = WarpBackend(solver.model, device=device)
    solver.use_backend(backend)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    solver.step(DT)  # records (and on a cold cache compiles) and runs the first frame
    first_s = time.perf_counter() - t0
    frame_ms = []
    for _ in range(frames):
        t0 = time.perf_counter()
        solver.step(DT)
        frame_ms.append((time.perf_counter() - t0) * 1000)
    replay_ms = []
    if backend.replay_mode == "graph":
        dev = wp.get_device(device)
        for _ in range(frames):
            wp.synchronize_device(dev)
            t0 = time.perf_counter()
            backend.replay()
            wp.synchronize_device(dev)
            replay_ms.append((time.perf_counter() - t0) * 1000 / substeps)
    per_substep = float(np.median(replay_ms)) if replay_ms else float("nan")
    return {"grid": f"{n}x{n}", "particles": n * n, "replay": backend.replay_mode,
            "ms_per_substep_device": per_substep,
            "substeps_per_second": 1000.0 / per_substep if replay_ms else float("nan"),
            "ms_per_frame_with_transfers": float(np.median(frame_ms)),
            "model_build_s": build_s, "first_frame_s": first_s,
            "finite": bool(np.all(np.isfinite(solver.positions)))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="Warp device (default: cuda)")
    parser.add_argument("--frames", type=int, default=48, help="frames of the agreement runs")
    parser.add_argument("--big", type=int, default=1000, help="side of the big grid (0: skip)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)

    import warp as wp

    wp.config.quiet = True  # type: ignore[attr-defined]  # no start-up banner on stdout
    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)
    wp.init()
    device = wp.get_device(args.device) if (args.device == "cpu"
                                            or wp.is_cuda_available()) else None
    if device is None:
        print(f"no CUDA device here (Warp devices: {[str(d) for d in wp.get_devices()]}); "
              "run with --device cpu for a dry run on the CPU", file=sys.stderr)
        return 2
    name = str(args.device)
    info = {"device": name, "device_name": getattr(device, "name", name), "warp": wp.__version__,
            "python": platform.python_version(), "numpy": np.__version__}
    checks = agreement(name, args.frames)
    sizes = [100] + ([args.big] if args.big and device.is_cuda else [])
    speeds = [speed(n, name, 20) for n in sizes]
    ok = all(c["ok"] for c in checks) and all(s["finite"] for s in speeds)
    if args.json:
        print(json.dumps({"info": info, "checks": checks, "speed": speeds, "ok": ok}, indent=2))
        return 0 if ok else 1
    print(f"pbdcloth Warp device check on {info['device_name']} ({name}), Warp {wp.__version__}")
    for c in checks:
        print(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['check']:<48} {c['value_m']:.2e} m "
              f"(bound {c['bound_m']:.1e})")
    print(f"  {'grid':>9} {'replay':>8} {'ms/substep':>11} {'substeps/s':>11} "
          f"{'ms/frame+io':>12} {'build s':>8} {'1st frame s':>11}")
    for s in speeds:
        print(f"  {s['grid']:>9} {s['replay']:>8} {s['ms_per_substep_device']:>11.3f} "
              f"{s['substeps_per_second']:>11.0f} {s['ms_per_frame_with_transfers']:>12.2f} "
              f"{s['model_build_s']:>8.1f} {s['first_frame_s']:>11.2f}")
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
