#!/usr/bin/env python3
"""Benchmark: the Warp backend beside numpy and the per-constraint loop, in one run.

Same scene as ``scripts/bench.py``: square grids (32 x 32 and 100 x 100 particles) hanging from two
corners, stretch + shear + bend, one iteration per substep, 10 substeps per frame, no colliders.
Each row is the median over repeated frames (frame time / 10) after a warm-up frame, as wall
time and as this process's CPU time (the CPU time is steadier on a shared machine). The loop
(backends/reference.py) is timed for ONE substep at the largest size only.

Warp rows: ``graph`` replays the recorded frame natively (CPU graph or CUDA graph), ``launches``
replays recorded launches from Python one by one. The first-frame rows give what the first run
costs: compiling the kernels into an empty cache (in a subprocess), and loading them from the
cache.

An optional row times Newton's XPBD solver (``newton``, NVIDIA's successor of ``warp.sim``) on
the same mesh when it is importable; otherwise the row says why not.

    python scripts/bench_warp.py [--json] [--repeats N] [--sizes 32 100] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python3.11libs"))

import numpy as np
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.backends.reference import ReferenceBackend
from pbdcloth.scenes import grid

SUBSTEPS = 10
DT = 1.0 / 24.0


def _solver(n: int, model: str, substeps: int) -> ClothSolver:
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    settings = ClothSettings(model=model, substeps=substeps, iterations=1, bend_stiffness=0.5,
                             bend_compliance=1.0, damping=0.5)
    return ClothSolver(pos, tris, pinned=[0, n - 1], settings=settings)


def _time_frames(solver: ClothSolver, repeats: int, substeps: int) -> tuple[float, float]:
    """Median (wall, CPU) ms per substep over ``repeats`` frames, after one warm-up frame."""
    solver.step(DT)
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        solver.step(DT)
        wall.append((time.perf_counter() - w0) * 1000 / substeps)
        cpu.append((time.process_time() - c0) * 1000 / substeps)
    return statistics.median(wall), statistics.median(cpu)


def time_numpy(n: int, model: str, repeats: int) -> tuple[float, float]:
    return _time_frames(_solver(n, model, SUBSTEPS), repeats, SUBSTEPS)


def time_warp(n: int, model: str, repeats: int, device: str, graph: bool) -> tuple[float, float]:
    from pbdcloth.backends.warp_backend import WarpBackend

    solver = _solver(n, model, SUBSTEPS)
    solver.use_backend(WarpBackend(solver.model, device=device, use_graph=graph))
    return _time_frames(solver, repeats, SUBSTEPS)


def time_reference(n: int) -> float:
    """ms for ONE substep of the per-constraint loop."""
    solver = _solver(n, "pbd", 1)
    solver.use_backend(ReferenceBackend(solver.model))
    start = time.perf_counter()
    solver.step(DT / SUBSTEPS)
    return (time.perf_counter() - start) * 1000


_FIRST_FRAME = """
import sys, time
t0 = time.perf_counter()
import warp as wp
wp.config.quiet = True
wp.config.log_level = 30
sys.path.insert(0, {lib!r})
from pbdcloth.backends.warp_backend import WarpBackend
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.scenes import grid
p, t = grid(32, 32, 1.0, 1.0, plane="xy")
s = ClothSolver(p, t, pinned=[0, 31], settings=ClothSettings(substeps={sub}, iterations=1))
s.use_backend(WarpBackend(s.model, device={device!r}))
t1 = time.perf_counter()
s.step(1 / 24)
print(time.perf_counter() - t1)
"""


def time_first_frame(device: str, cache: str | None) -> float:
    """Seconds of the first frame in a fresh process (kernel compile or cache load included)."""
    env = dict(os.environ)
    if cache is not None:
        env["WARP_CACHE_PATH"] = cache
    code = _FIRST_FRAME.format(lib=str(ROOT / "python3.11libs"), sub=SUBSTEPS, device=device)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


# --- Newton ----------------------------------------------------------------------------------
def time_newton(n: int, repeats: int, device: str) -> tuple[float, float] | str:
    """Newton's XPBD solver on the same grid (stretch springs + bending), ms per substep.

    Returns a reason string when Newton cannot be run here.
    """
    try:
        import newton
        import warp as wp
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return f"newton not importable: {type(exc).__name__}: {exc}"
    try:
        pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
        builder = newton.ModelBuilder()
        builder.add_cloth_mesh(
            pos=wp.vec3(0.0, 0.0, 0.0), rot=wp.quat_identity(), scale=1.0,
            vel=wp.vec3(0.0, 0.0, 0.0), vertices=[wp.vec3(*p) for p in pos],
            indices=tris.reshape(-1).tolist(), density=0.15, edge_ke=1e2, edge_kd=0.0,
            add_springs=True, spring_ke=1e4, spring_kd=0.0,
        )
        for k in (0, n - 1):
            builder.particle_mass[k] = 0.0
        model = builder.finalize(device=device)
        solver = newton.solvers.SolverXPBD(model, iterations=1)
        s0, s1 = model.state(), model.state()
        control = model.control()
        h = DT / SUBSTEPS
        contacts = None

        def frame() -> None:
            nonlocal s0, s1
            for _ in range(SUBSTEPS):
                s0.clear_forces()
                solver.step(s0, s1, control, contacts, h)
                s0, s1 = s1, s0

        with wp.ScopedCapture(device=device) as capture:
            frame()
        graph = capture.graph
        wp.capture_launch(graph)
        wp.synchronize_device(device)
        wall, cpu = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            wp.capture_launch(graph)
            wp.synchronize_device(device)
            wall.append((time.perf_counter() - w0) * 1000 / SUBSTEPS)
            cpu.append((time.process_time() - c0) * 1000 / SUBSTEPS)
        return statistics.median(wall), statistics.median(cpu)
    except Exception as exc:  # noqa: BLE001
        return f"newton failed: {type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeats", type=int, default=15, help="frames timed per row (median)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 100])
    parser.add_argument("--device", default="cpu", help="Warp device for the warp rows")
    parser.add_argument("--no-reference", action="store_true", help="skip the slow loop")
    parser.add_argument("--no-first-frame", action="store_true",
                        help="skip the cold-compile and cached first-frame timings")
    args = parser.parse_args(argv)

    import warp as wp

    setattr(wp.config, "quiet", True)  # no start-up banner on stdout (--json)
    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)  # keep stdout clean for --json
    wp.init()
    rows: list[dict[str, Any]] = []

    def row(n: int, backend: str, model: str, times: tuple[float, float] | str,
            **extra: Any) -> dict[str, Any]:
        r: dict[str, Any] = {"grid": f"{n}x{n}", "particles": n * n, "backend": backend,
                             "model": model}
        if isinstance(times, str):
            r["skipped"] = times
        else:
            r["ms_per_substep"], r["cpu_ms_per_substep"] = times
        r.update(extra)
        rows.append(r)
        return r

    for n in args.sizes:
        for model in ("pbd", "xpbd"):
            base = row(n, "numpy", model, time_numpy(n, model, args.repeats))
            for graph in (True, False):
                name = f"warp-{args.device} ({'graph' if graph else 'launches'})"
                r = row(n, name, model, time_warp(n, model, args.repeats, args.device, graph))
                r["numpy_over_warp"] = base["ms_per_substep"] / r["ms_per_substep"]
        newton_times = time_newton(n, args.repeats, args.device)
        r = row(n, f"newton-xpbd-{args.device}", "xpbd", newton_times)
        if "ms_per_substep" in r:
            ours = next(x for x in rows if x["particles"] == n * n and x["model"] == "pbd"
                        and x["backend"].endswith("(graph)"))
            r["newton_over_warp"] = r["ms_per_substep"] / ours["ms_per_substep"]
    if not args.no_reference:
        n = max(args.sizes)
        ref = time_reference(n)
        numpy_ms = next(r["ms_per_substep"] for r in rows
                        if r["particles"] == n * n and r["backend"] == "numpy"
                        and r["model"] == "pbd")
        rows.append({"grid": f"{n}x{n}", "particles": n * n, "backend": "python loop",
                     "model": "pbd", "ms_per_substep": ref, "loop_over_numpy": ref / numpy_ms})
    first: dict[str, float] = {}
    if not args.no_first_frame:
        with tempfile.TemporaryDirectory() as cache:
            first["first_frame_cold_cache_s"] = time_first_frame(args.device, cache)
            first["first_frame_warm_cache_s"] = time_first_frame(args.device, cache)
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "warp": wp.__version__, "device": str(wp.get_device(args.device)),
            "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "substeps_per_frame": SUBSTEPS, "repeats": args.repeats, **first}
    if args.json:
        print(json.dumps({"info": info, "rows": rows}, indent=2))
        return 0
    print(f"pbdcloth Warp benchmark: stretch+shear+bend, 1 iteration, median of {args.repeats} "
          f"frames of {SUBSTEPS} substeps (Warp {wp.__version__}, numpy {np.__version__})")
    print(f"{'grid':>8} {'backend':>22} {'model':>5} {'ms/substep':>11} {'cpu ms':>8}  ratio")
    for r in rows:
        if "skipped" in r:
            print(f"{r['grid']:>8} {r['backend']:>22} {r['model']:>5}  skipped: {r['skipped']}")
            continue
        ratio = ""
        if "numpy_over_warp" in r:
            ratio = f"numpy/warp = {r['numpy_over_warp']:.1f}x"
        if "newton_over_warp" in r:
            ratio = f"newton/warp = {r['newton_over_warp']:.1f}x"
        if "loop_over_numpy" in r:
            ratio = f"loop/numpy = {r['loop_over_numpy']:.0f}x"
        cpu = f"{r['cpu_ms_per_substep']:>8.3f}" if "cpu_ms_per_substep" in r else f"{'':>8}"
        print(f"{r['grid']:>8} {r['backend']:>22} {r['model']:>5} {r['ms_per_substep']:>11.3f} "
              f"{cpu}  {ratio}")
    for key, value in first.items():
        print(f"{key}: {value:.2f} s")
    print(f"load average: {info['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
