#!/usr/bin/env python3
"""Cost of self-collision on both backends against the cloth's own constraint solve, fold scene.

The fold scene (``pbdcloth.scenes.fold_scene``, 9,933 particles at resolution 129) is run once
with Warp on the CPU up to the last window, and the state one frame before each window is
saved (``--states FILE.npz`` keeps them for later runs). From each saved state, side by side in
one process, each backend in a fresh solver runs one untimed frame (so its candidate lists are
as warm as in a continuous run), then the timed frames:

* numpy: the constraint solve (stretch, shear and bend colors, the strain limit, tethers) and
  the phases of the self-collision stage, list maintenance (grid and candidate search, full
  builds and partial updates) and narrow phase (point-triangle and edge-edge passes,
  fail-safe);
* Warp CPU: the recorded frame replayed as a graph with self-collision on and off (the whole
  substep, what production pays), and the same frame replayed launch by launch, each launch
  timed and summed by phase (:data:`WARP_PHASES`: constraint solve; list maintenance: clamp,
  movers and the update's decision, grids and scans, candidate searches, slots and gathering;
  narrow phase: pair passes, contact sums, fail-safe, slack bookkeeping), less Warp's cost of
  replaying one recorded launch from Python (measured on an empty kernel);
* Newton's ``SolverVBD`` with self-contact (``--newton``: when ``newton`` imports) on the same
  mesh from the folded state of the last window, 10 iterations: ms per substep beside our
  Warp graph's whole substep.

Per substep: candidates, movers (particles refreshed by partial updates), pairs evaluated by
the narrow phase and ns per evaluated pair. Medians over ``--repeats``. Both cores: the Warp
graph is also replayed with the native loops on one thread (``warp_cpu_threads=1``) beside the
default two, and with the stage as Warp kernels only (``native=False``: the stage as it was
before its CPU loops went native), all from the same state. Times are wall-clock time
(``--clock wall``, the default; the load average is printed with the table, as other
processes on a shared machine inflate it) or the calling thread's CPU time (``--clock thread``:
immune to other processes, but blind to the native loops' second thread).

    PYTHONPATH=python3.11libs python scripts/bench_selfcollision.py [--json] [--resolution 129]
        [--starts 16,30,45] [--states /tmp/fold_states.npz] [--newton] [--threads]
        [--clock wall|thread]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth.backends import numpy_backend
from pbdcloth.backends.base import Control
from pbdcloth.backends.numpy_backend import NumpyBackend
from pbdcloth.cloth.state import ClothState
from pbdcloth.scenes.cloth import Scene, fold_scene
from pbdcloth.selfcollision import stats as sc_stats
from pbdcloth.selfcollision.tuning import DEFAULT_TUNING
from pbdcloth.solver import ClothSolver

#: The constraint projections the numpy backend calls (pbdcloth.constraints), timed as "solve".
CONSTRAINT_FUNCTIONS = ("project_distance_pbd", "project_distance_xpbd", "project_bend_pbd",
                        "project_bend_xpbd", "project_strain_limit", "project_tethers")
#: Warp kernels of the constraint solve (the CPU path's lane kernels carry "_lanes").
WARP_SOLVE = ("distance_pbd", "distance_xpbd", "bend_pbd", "bend_xpbd", "distance_limit",
              "distance_unilateral", "unilateral_sweeps", "any_flag", "zero_flags", "tethers",
              "zero_scalars")
#: Phases of the Warp self-collision stage: kernel names (the CPU's native loops carry
#: "_all"), list maintenance first, then the narrow phase.
WARP_PHASES = {
    "clamp": ("momentum_blocks", "clamp_velocity", "shift_velocity"),
    "movers, decision": ("sum_blocks", "sum_final", "deviation", "decide", "refresh",
                         "partial_gate", "list_gate"),
    "grids, scans": ("bounds_reset", "bounds", "grid_setup", "grid_keys", "grid_fill",
                     "grid_build", "tri_boxes", "edge_boxes", "zero_scalar", "zero_ints",
                     "scan_blocks", "scan_top", "scan_add"),
    "searches": ("pt_triangles", "pt_movers", "ee_edges", "compact"),
    "slots, gathering": ("sort_slots", "gather", "finish_candidates", "add_stat",
                         "incidence_count", "incidence_fill", "sort_segments"),
    "pair passes": ("pair_eval",),
    "contact sums": ("zero_counts", "contact_relax", "contact_sums", "apply_sums", "contact_apply",
                     "next_phase", "pass_end", "project_begin"),
    "fail-safe": ("mark_crossed", "revert_apply", "round_end"),
    "slack bookkeeping": ("track_begin", "moved_since", "copy_vec3", "zero_scalars"),
}
WARP_LIST_PHASES = ("clamp", "movers, decision", "grids, scans", "searches",
                    "slots, gathering")
WARP_NARROW_PHASES = ("pair passes", "contact sums", "fail-safe", "slack bookkeeping")
#: The numpy stage's timed phases (SelfCollisionStats.seconds) and their rows.
NUMPY_PHASES = {"hash": "grids (sorted keys)", "candidates": "candidate search, filters",
                "point_triangle": "point-triangle passes, fail-safe",
                "edge_edge": "edge-edge passes"}

#: The clock of every timing (``--clock``): the calling thread's CPU time or wall time.
TIMER: dict[str, Callable[[], float]] = {"now": time.perf_counter}

#: Seconds spent in the constraint projections since the last reset.
CLOCK = {"constraints": 0.0}


def _time_constraints() -> None:
    """Wrap (once) the constraint projections the numpy backend calls so their time adds up in
    :data:`CLOCK` (this benchmark's process only)."""
    if getattr(numpy_backend, "_timed_by_bench", False):
        return
    numpy_backend._timed_by_bench = True  # type: ignore[attr-defined]
    # the numpy stage's phase timer on the benchmark's clock
    clock_module = SimpleNamespace(perf_counter=lambda: TIMER["now"]())
    sc_stats.time = clock_module  # type: ignore[assignment]
    clock = CLOCK
    for name in CONSTRAINT_FUNCTIONS:
        inner: Callable[..., Any] = getattr(numpy_backend, name)

        def wrapper(*args: Any, _inner: Callable[..., Any] = inner, **kwargs: Any) -> Any:
            start = TIMER["now"]()
            try:
                return _inner(*args, **kwargs)
            finally:
                clock["constraints"] += TIMER["now"]() - start

        setattr(numpy_backend, name, wrapper)


def _on(scene: Scene, backend: str, **changes: Any) -> Scene:
    scene.settings = scene.settings.replace(backend=backend, device="cpu", **changes)
    return scene


def numpy_window(scene: Scene, x: np.ndarray, v: np.ndarray, frames: int) -> dict[str, float]:
    """numpy, from (x, v): one untimed frame, then ``frames`` timed; per-substep values."""
    solver: ClothSolver = _on(scene, "numpy").make_solver()
    solver.positions, solver.velocities = x, v
    solver.step(1.0 / scene.fps)
    backend = solver.backend
    assert isinstance(backend, NumpyBackend) and backend.self_collision is not None
    _time_constraints()
    CLOCK["constraints"] = 0.0
    sc = backend.self_collision
    keys = tuple(NUMPY_PHASES)
    tot = dict.fromkeys((*keys, "frame", "pt", "ee", "movers", "evaluated", "full", "partial"),
                        0.0)
    substeps = 0
    for _ in range(frames):
        start = TIMER["now"]()
        solver.step(1.0 / scene.fps)
        tot["frame"] += TIMER["now"]() - start
        st = sc.stats
        for key in keys:
            tot[key] += st.seconds[key]
        tot["pt"] += st.point_triangle_candidates
        tot["ee"] += st.edge_edge_candidates
        tot["movers"] += st.refreshed
        tot["evaluated"] += st.evaluated
        tot["full"] += st.rebuilds
        tot["partial"] += st.partial_rebuilds
        substeps += st.substeps
    per = {k: val / substeps for k, val in tot.items()}
    lists = 1000.0 * (per["hash"] + per["candidates"])
    narrow = 1000.0 * (per["point_triangle"] + per["edge_edge"])
    row = _row(1000.0 * CLOCK["constraints"] / substeps, lists, narrow,
               1000.0 * per["frame"], per)
    row.update({f"numpy:{key}": 1000.0 * per[key] for key in keys})
    return row


def _row(solve: float, lists: float, narrow: float, substep: float,
         per: dict[str, float]) -> dict[str, float]:
    return {"solve_ms": solve, "lists_ms": lists, "narrow_ms": narrow,
            "self_ms": lists + narrow, "substep_ms": substep,
            "self_over_solve": (lists + narrow) / solve if solve else float("nan"),
            "pt_candidates": per["pt"], "ee_candidates": per["ee"], "movers": per["movers"],
            "evaluated": per["evaluated"],
            "ns_per_pair": 1e6 * narrow / per["evaluated"] if per["evaluated"] else 0.0,
            "full_builds": per["full"], "partial_updates": per["partial"]}


def _warp_phase(key: str) -> str:
    """The phase of a Warp kernel (its ``key``): "solve", a :data:`WARP_PHASES` name, or
    "other" (predict, colliders, update)."""
    name = key.rsplit("__", 1)[-1].rsplit(".", 1)[-1]
    if any(tag in key for tag in ("build_list_kernels", "build_self_kernels",
                                  "build_native_search")):
        name = name.removesuffix("_all")
        for phase, names in WARP_PHASES.items():
            if name in names:
                return phase
        return "other"
    return "solve" if name.removesuffix("_lanes") in WARP_SOLVE else "other"


def launch_overhead(repeats: int = 400) -> float:
    """Seconds that replaying one recorded Warp CPU launch costs from Python (an empty
    kernel, median)."""
    import warp as wp

    @wp.kernel
    def empty(a: wp.array(dtype=int)):  # type: ignore[no-untyped-def, valid-type]
        a[wp.tid()] = 0

    arr = wp.zeros(1, dtype=int, device="cpu")
    cmd = wp.launch(empty, dim=1, inputs=[arr], device="cpu", record_cmd=True)
    cmd.launch()
    dev = wp.get_device("cpu")
    times = []
    for _ in range(repeats):
        start = TIMER["now"]()
        cmd.launch()
        wp.synchronize_device(dev)
        times.append(TIMER["now"]() - start)
    return statistics.median(times)


def warp_window(scene: Scene, x: np.ndarray, v: np.ndarray, frames: int) -> dict[str, float]:
    """Warp CPU, from (x, v): the graph with self-collision on and off (one untimed frame,
    then ``frames`` timed), and one frame launch by launch by phase; per substep."""
    import warp as wp
    from pbdcloth.backends.warp.backend import WarpBackend
    from pbdcloth.backends.warp.selfcollision import WarpSelfCollision

    fps = scene.fps
    n = scene.settings.substeps

    def graph(on: bool, threads: int = DEFAULT_TUNING.warp_cpu_threads, native: bool = True
              ) -> tuple[float, dict[str, float]]:
        settings = scene.settings.replace(self_collision=on)
        tuning = dataclasses.replace(DEFAULT_TUNING, warp_cpu_threads=threads)
        model = scene.make_solver().model
        backend = WarpBackend(model, device="cpu", tuning=tuning)
        if on and not native:  # the stage as Warp kernels only (the backend records it then)
            backend._selfcol = WarpSelfCollision(model, backend.k, backend.device,
                                                 tuning=tuning, native=False)
        control = Control(settings, np.zeros((0, 3)), np.zeros((0, 3)), scene.colliders)
        state = ClothState(x, v)
        backend.step(state, state, control, 1.0 / fps)
        extra: dict[str, float] = {}
        total = 0.0
        for _ in range(frames):
            start = TIMER["now"]()
            st = backend.step(state, state, control, 1.0 / fps)
            total += TIMER["now"]() - start
            for key, val in st.extra.items():
                extra[key] = extra.get(key, 0.0) + val / frames
        return 1000.0 * total / (frames * n), extra

    on, extra = graph(True)
    off, _ = graph(False)
    on_one, _ = graph(True, threads=1)
    on_kernels, _ = graph(True, native=False)
    overhead = launch_overhead()
    backend = WarpBackend(scene.make_solver().model, device="cpu", use_graph=False)
    control = Control(scene.settings, np.zeros((0, 3)), np.zeros((0, 3)), scene.colliders)
    state = ClothState(x, v)
    backend.step(state, state, control, 1.0 / fps)
    assert backend.self_collision is not None
    backend.self_collision.begin_frame()
    clock = dict.fromkeys(("solve", *WARP_PHASES, "other"), 0.0)
    dev = wp.get_device("cpu")
    for launch in backend._launches:
        start = TIMER["now"]()
        launch.launch()
        wp.synchronize_device(dev)
        clock[_warp_phase(launch.kernel.key)] += TIMER["now"]() - start - overhead
    ms = {k: 1000.0 * val / n for k, val in clock.items()}
    per = {"pt": extra.get("self_pt_candidates", 0.0), "ee": extra.get("self_ee_candidates", 0.0),
           "movers": extra.get("self_refreshed", 0.0) / n,
           "evaluated": extra.get("self_evaluated", 0.0) / n,
           "full": extra.get("self_rebuilds", 0.0) / n,
           "partial": extra.get("self_partial_rebuilds", 0.0) / n}
    lists = sum(ms[p] for p in WARP_LIST_PHASES)
    narrow = sum(ms[p] for p in WARP_NARROW_PHASES)
    row = _row(ms["solve"], lists, narrow, on, per)
    row.update(graph_off_ms=off, graph_self_ms=on - off, graph_self_one_ms=on_one - off,
               graph_self_kernels_ms=on_kernels - off,
               launches=len(backend._launches) / n, launch_us=1e6 * overhead)
    row.update({f"warp:{p}": ms[p] for p in WARP_PHASES})
    return row


def newton_vbd(scene: Scene, x: np.ndarray, substeps: int = 3) -> dict[str, Any]:
    """Newton's SolverVBD with self-contact on the same mesh, started folded at ``x``: ms per
    substep (after one untimed substep, which compiles), or why it could not run."""
    try:
        import newton
        import warp as wp
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return {"error": f"newton not importable: {type(exc).__name__}: {exc}"}
    try:
        t = scene.settings.self_thickness
        builder = newton.ModelBuilder()
        builder.add_cloth_mesh(
            pos=wp.vec3(0.0, 0.0, 0.0), rot=wp.quat_identity(), scale=1.0,
            vel=wp.vec3(0.0, 0.0, 0.0), vertices=[wp.vec3(*p) for p in scene.positions],
            indices=scene.triangles.reshape(-1).tolist(), density=0.15, tri_ke=1e4,
            tri_ka=1e4, tri_kd=0.0, edge_ke=1e-2, particle_radius=0.5 * t)
        builder.color()
        model = builder.finalize(device="cpu")
        solver = newton.solvers.SolverVBD(
            model, iterations=10, particle_enable_self_contact=True,
            particle_self_contact_margin=t, particle_self_contact_gap=0.5 * t)
        states = [model.state(), model.state()]
        for s in states:
            s.particle_q.assign(x.astype(np.float32))
        control = model.control()
        h = 1.0 / scene.fps / scene.settings.substeps
        times = []
        for _ in range(substeps + 1):
            start = time.perf_counter()
            states[0].clear_forces()
            solver.step(states[0], states[1], control, None, h)
            wp.synchronize_device("cpu")
            times.append(time.perf_counter() - start)
            states.reverse()
        return {"ms_per_substep": 1000.0 * statistics.median(times[1:]),
                "particles": model.particle_count, "iterations": 10,
                "version": getattr(newton, "__version__", "?")}
    except Exception as exc:  # noqa: BLE001 - report any failure instead of a row
        return {"error": f"newton failed: {type(exc).__name__}: {exc}"}


def two_threads(repeats: int = 3) -> dict[str, float]:
    """Whether two Warp CPU launches run at once: a busy kernel (about 0.1 s) launched twice
    one after the other, then once from each of two Python threads; the same with numpy sorts
    (which release the GIL) as the control of how many cores this process gets now. Wall and
    process CPU seconds, best of ``repeats``."""
    import threading

    import warp as wp

    @wp.kernel
    def busy(out: wp.array(dtype=float), n: int):  # type: ignore[no-untyped-def, valid-type]
        i = wp.tid()
        acc = float(0.0)  # noqa: UP018 (Warp: a float local that the loop changes)
        for k in range(n):
            acc = acc + wp.sin(float(k) * 1e-3 + float(i))  # type: ignore[arg-type]
        out[i] = acc

    arrays = [wp.zeros(1000, dtype=float, device="cpu") for _ in range(2)]
    wp.launch(busy, dim=1000, inputs=[arrays[0], 1], device="cpu")
    data = [np.random.default_rng(k).random(3_000_000) for k in range(2)]

    def warp_job(k: int) -> None:
        wp.launch(busy, dim=1000, inputs=[arrays[k], 20000], device="cpu")

    def numpy_job(k: int) -> None:
        np.sort(data[k])

    def timed(job: Callable[[int], None], threaded: bool) -> tuple[float, float]:
        best = (float("inf"), 0.0)
        for _ in range(repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            if threaded:
                pool = [threading.Thread(target=job, args=(k,)) for k in range(2)]
                for t in pool:
                    t.start()
                for t in pool:
                    t.join()
            else:
                job(0)
                job(1)
            best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
        return best

    out = {}
    for name, job in (("warp", warp_job), ("numpy", numpy_job)):
        for threaded in (False, True):
            wall, cpu = timed(job, threaded)
            key = f"{name}_{'threads' if threaded else 'serial'}"
            out[f"{key}_wall_s"], out[f"{key}_cpu_s"] = wall, cpu
    return out


def saved_states(resolution: int, starts: list[int], path: str | None) -> dict[int, Any]:
    """(x, v) after ``start - 1`` frames of a Warp CPU run of the fold scene, per start (read
    from ``path`` when it holds them, else simulated and written there)."""
    keys = [f"x{s}" for s in starts] + [f"v{s}" for s in starts]
    if path and Path(path).exists():
        data = np.load(path)
        if all(k in data for k in keys) and int(data["resolution"]) == resolution:
            return {s: (data[f"x{s}"], data[f"v{s}"]) for s in starts}
    scene = _on(fold_scene(resolution=resolution), "warp")
    solver = scene.make_solver()
    out: dict[str, Any] = {"resolution": resolution}
    for frame in range(1, max(starts)):
        solver.step(1.0 / scene.fps)
        if frame + 1 in starts:
            out[f"x{frame + 1}"] = solver.positions.copy()
            out[f"v{frame + 1}"] = solver.velocities.copy()
    if 1 in starts:
        out["x1"], out["v1"] = scene.positions.copy(), np.zeros_like(scene.positions)
    if path:
        np.savez(path, **out)
    return {s: (out[f"x{s}"], out[f"v{s}"]) for s in starts}


LABELS = [
    ("constraint solve", "solve_ms", "ms"),
    ("self-collision: list maintenance", "lists_ms", "ms"),
    *((f"  numpy: {label}", f"numpy:{key}", "ms") for key, label in NUMPY_PHASES.items()
      if key in ("hash", "candidates")),
    *((f"  Warp: {p}", f"warp:{p}", "ms") for p in WARP_LIST_PHASES),
    ("self-collision: narrow phase", "narrow_ms", "ms"),
    *((f"  numpy: {label}", f"numpy:{key}", "ms") for key, label in NUMPY_PHASES.items()
      if key in ("point_triangle", "edge_edge")),
    *((f"  Warp: {p}", f"warp:{p}", "ms") for p in WARP_NARROW_PHASES),
    ("self-collision: total", "self_ms", "ms"),
    ("self-collision / own constraint solve", "self_over_solve", "x"),
    ("whole substep (Warp: graph replay)", "substep_ms", "ms"),
    ("Warp graph: self-collision off", "graph_off_ms", "ms"),
    ("Warp graph: on - off", "graph_self_ms", "ms"),
    ("Warp graph: on - off, native loops on 1 thread", "graph_self_one_ms", "ms"),
    ("Warp graph: on - off, kernels only (before)", "graph_self_kernels_ms", "ms"),
    ("Warp launches per substep", "launches", ""),
    ("candidates point-triangle", "pt_candidates", ""),
    ("candidates edge-edge", "ee_candidates", ""),
    ("movers (refreshed by partial updates)", "movers", ""),
    ("full builds", "full_builds", ""),
    ("partial updates", "partial_updates", ""),
    ("pairs evaluated by the narrow phase", "evaluated", ""),
    ("narrow phase per evaluated pair", "ns_per_pair", "ns"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--resolution", type=int, default=129,
                        help="points along the width (129 x 77 = 9,933 particles)")
    parser.add_argument("--starts", default="16,30,45",
                        help="frames before each window (16: crumpling over the sphere; 30: "
                        "folded; 45: settling); the timed frames are start + 1 ...")
    parser.add_argument("--frames", type=int, default=1, help="timed frames per window")
    parser.add_argument("--repeats", type=int, default=1, help="runs per window (median)")
    parser.add_argument("--states", default=None, help="npz file of the saved states (read "
                        "when it holds them, else written)")
    parser.add_argument("--backends", default="numpy,warp", help="comma separated")
    parser.add_argument("--newton", action="store_true",
                        help="also time Newton's SolverVBD with self-contact (if it imports)")
    parser.add_argument("--threads", action="store_true",
                        help="also measure whether two Warp CPU launches run at once")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                        help="wall time (default) or the calling thread's CPU time")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    TIMER["now"] = time.thread_time if args.clock == "thread" else time.perf_counter
    load_before = os.getloadavg()[0]

    starts = sorted(int(k) for k in args.starts.split(","))
    backends = [b for b in args.backends.split(",") if b]
    t0 = time.perf_counter()
    states = (saved_states(args.resolution, starts, args.states) if backends or args.newton
              else {})
    warm = time.perf_counter() - t0
    run = {"numpy": numpy_window, "warp": warp_window}
    windows: list[dict[str, Any]] = []
    for start in starts if backends else []:
        x, v = states[start]
        cols = {}
        for name in backends:
            runs = [run[name](fold_scene(resolution=args.resolution), x, v, args.frames)
                    for _ in range(args.repeats)]
            cols[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        windows.append({"frames": [start + 1, start + args.frames], "backends": cols})
    scene = fold_scene(resolution=args.resolution)
    result: dict[str, Any] = {
        "scene": "fold", "particles": int(scene.positions.shape[0]),
        "self_thickness_m": scene.settings.self_thickness, "substeps": scene.settings.substeps,
        "iterations": scene.settings.iterations, "repeats": args.repeats, "clock": args.clock,
        "states_seconds": warm, "windows": windows, "load_before": load_before,
        "load_after": os.getloadavg()[0]}
    if args.newton:
        result["newton_vbd"] = newton_vbd(scene, states[starts[-1]][0])
    if args.threads:
        result["two_threads"] = two_threads()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"fold scene, {result['particles']} particles, self thickness "
          f"{1000 * scene.settings.self_thickness:.1f} mm, {result['substeps']} substeps x "
          f"{result['iterations']} iterations; per substep, median of {args.repeats}, "
          f"{args.clock} clock, load average {load_before:.2f} before the run, "
          f"{result['load_after']:.2f} after")
    head = "".join(f"{'{} {}-{}'.format(b, *w['frames']):>16}" for w in windows
                   for b in w["backends"])
    print(f"  {'':<40}{head}")
    for label, key, unit in LABELS if windows else []:
        cells = "".join(
            f"{w['backends'][b][key]:>13.2f} {unit:<2}" if key in w["backends"][b]
            else f"{'-':>16}" for w in windows for b in w["backends"])
        print(f"  {label:<40}{cells}")
    if "warp" in backends and windows:
        last = windows[-1]["backends"]["warp"]
        print("goals (Warp CPU self-collision per substep: the graph with it on less off):")
        print("  <= 10 ms in each window: " + ", ".join(
            f"{w['backends']['warp']['graph_self_ms']:.1f} ms" for w in windows))
        print(f"  <= 2 x the Warp solve at the last window: "
              f"{last['graph_self_ms'] / last['solve_ms']:.1f} x")
        if "numpy" in backends:
            print("  <= 2 x the numpy solve in every window: " + ", ".join(
                f"{w['backends']['warp']['graph_self_ms'] / w['backends']['numpy']['solve_ms']:.1f}"
                " x" for w in windows))
        print("  both cores (native loops on 2 threads against 1): " + ", ".join(
            f"{w['backends']['warp']['graph_self_ms']:.1f} / "
            f"{w['backends']['warp']['graph_self_one_ms']:.1f} ms" for w in windows))
    if "two_threads" in result:
        tt = result["two_threads"]
        for name in ("warp", "numpy"):
            print(f"two {name} jobs: one after the other {tt[f'{name}_serial_wall_s']:.3f} s, "
                  f"on two threads {tt[f'{name}_threads_wall_s']:.3f} s wall, "
                  f"{tt[f'{name}_threads_cpu_s']:.3f} s process CPU")
    if "newton_vbd" in result:
        nv = result["newton_vbd"]
        if "error" in nv:
            print(f"Newton SolverVBD: {nv['error']}")
        else:
            ours = windows[-1]["backends"].get("warp", {}).get("substep_ms") if windows else None
            ratio = f", {nv['ms_per_substep'] / ours:.1f} x our Warp substep" if ours else ""
            print(f"Newton {nv['version']} SolverVBD, self-contact, 10 iterations, "
                  f"{nv['particles']} particles, CPU: {nv['ms_per_substep']:.0f} ms per "
                  f"substep{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
