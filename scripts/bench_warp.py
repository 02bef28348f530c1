#!/usr/bin/env python3
"""Benchmark: the Warp backend beside numpy and the per-constraint loop, in one run.

Same scene as ``scripts/bench.py``: square grids (32 x 32 and 100 x 100 particles) hanging from two
corners, stretch + shear + bend, one iteration per substep, 10 substeps per frame, no colliders.
Timed frames interleave all backends round by round (so a change of load on a shared machine
hits every row alike); each row is the median over the rounds (frame time / 10), after a warm-up
frame, as wall time and as this process's CPU time. Ratios use the CPU times, which are steadier
on a shared machine. The loop (backends/reference.py) is timed for ONE substep at the largest
size only.

Warp rows: ``graph`` replays the recorded frame natively (CPU graph or CUDA graph), ``launches``
replays recorded launches from Python one by one. The first-frame rows give what the first run
costs: compiling the kernels into an empty cache (in a subprocess), and loading them from the
cache.

An optional row times Newton's XPBD solver (``newton``, NVIDIA's successor of ``warp.sim``) on
the same mesh when it is importable (``pip install newton`` into a separate environment: it
brings its own Warp and numpy), replayed as a graph like ours and compared with our XPBD graph
row; otherwise the row says why not.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python3.11libs"))

import numpy as np
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.backends.reference import ReferenceBackend
from pbdcloth.scenes.cloth import grid

SUBSTEPS = 10
DT = 1.0 / 24.0


def _solver(n: int, model: str, substeps: int) -> ClothSolver:
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    settings = ClothSettings(backend="numpy", model=model, substeps=substeps, iterations=1,
                             bend_stiffness=0.5, bend_compliance=1.0, damping=0.5)
    return ClothSolver(pos, tris, pinned=[0, n - 1], settings=settings)


Frame = Callable[[], object]


def numpy_frame(n: int, model: str) -> Frame:
    solver = _solver(n, model, SUBSTEPS)
    return lambda: solver.step(DT)


def warp_frame(n: int, model: str, device: str, graph: bool) -> Frame:
    from pbdcloth.backends.warp.backend import WarpBackend

    solver = _solver(n, model, SUBSTEPS)
    solver.use_backend(WarpBackend(solver.model, device=device, use_graph=graph))
    return lambda: solver.step(DT)


def time_interleaved(frames: dict[str, Frame], repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) ms per substep of each frame function, after one warm-up frame each.

    Rounds visit every function once, so a change of load on a shared machine hits all rows
    alike instead of whichever row ran at the time.
    """
    for frame in frames.values():
        frame()
    wall: dict[str, list[float]] = {name: [] for name in frames}
    cpu: dict[str, list[float]] = {name: [] for name in frames}
    for _ in range(repeats):
        for name, frame in frames.items():
            w0, c0 = time.perf_counter(), time.process_time()
            frame()
            wall[name].append((time.perf_counter() - w0) * 1000 / SUBSTEPS)
            cpu[name].append((time.process_time() - c0) * 1000 / SUBSTEPS)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name]))
            for name in frames}


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
from pbdcloth.backends.warp.backend import WarpBackend
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
def newton_frame(n: int, device: str) -> Frame | str:
    """One frame of Newton's XPBD solver on the same grid, graph replayed like ours.

    Newton's cloth: springs on the mesh edges and across each pair of triangles (``add_springs``)
    and a dihedral bending constraint per interior edge, one iteration, no particle
    self-contacts, no colliders. Returns a reason string when Newton cannot be run here.
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
            particle_radius=0.0,  # no particle self-contacts: pbdcloth has none here either
        )
        for k in (0, n - 1):
            builder.particle_mass[k] = 0.0
        model = builder.finalize(device=device)
        solver = newton.solvers.SolverXPBD(model, iterations=1)
        states = [model.state(), model.state()]
        control = model.control()
        h = DT / SUBSTEPS

        def substeps() -> None:
            for _ in range(SUBSTEPS):
                states[0].clear_forces()
                solver.step(states[0], states[1], control, None, h)
                states.reverse()

        with wp.ScopedCapture(device=device) as capture:
            substeps()
        graph = capture.graph

        def frame() -> None:
            wp.capture_launch(graph)
            wp.synchronize_device(device)

        frame()
        return frame
    except Exception as exc:  # noqa: BLE001 - report any failure as a skipped row
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

    wp.config.quiet = True  # type: ignore[attr-defined]  # no start-up banner on stdout
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
        frames: dict[str, Frame] = {}
        labels: dict[str, tuple[str, str]] = {}
        for model in ("pbd", "xpbd"):
            frames[f"numpy {model}"] = numpy_frame(n, model)
            labels[f"numpy {model}"] = ("numpy", model)
            for graph in (True, False):
                mode = "graph" if graph else "launches"
                frames[f"warp {model} {mode}"] = warp_frame(n, model, args.device, graph)
                labels[f"warp {model} {mode}"] = (f"warp-{args.device} ({mode})", model)
        newton = newton_frame(n, args.device)
        if not isinstance(newton, str):
            frames["newton"] = newton
        timed = time_interleaved(frames, args.repeats)
        for key, times in timed.items():
            if key == "newton":
                continue
            backend, model = labels[key]
            r = row(n, backend, model, times)
            if key.startswith("warp"):
                r["numpy_over_warp"] = timed[f"numpy {model}"][1] / times[1]
        if isinstance(newton, str):
            row(n, f"newton-xpbd-{args.device}", "xpbd", newton)
        else:
            r = row(n, f"newton-xpbd-{args.device}", "xpbd", timed["newton"])
            r["newton_over_warp"] = timed["newton"][1] / timed["warp xpbd graph"][1]
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
