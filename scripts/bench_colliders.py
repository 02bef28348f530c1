#!/usr/bin/env python3
"""Cost of a deforming mesh collider against the cloth's own constraint solve, per substep.

A skirt of about 10k particles (``--nu`` x ``--nv``) on the walking body mesh
(:class:`pbdcloth.scenes.walker.WalkingBody`, about 20k triangles with the default
``--segments 64 --rings 56``), both from ``pbdcloth.scenes.cloth.skirt_scene``. After
``--warmup`` frames (the skirt settles onto the body) it times ``--frames`` frames and, within
every substep, side by side: the collider phase (``MeshCollider.project_cloth``: broad phase,
continuous and discrete contacts, both directions) and the constraint solve (stretch, shear,
bend, tethers, and the strain limit's sweeps, on by default: ``limit``). Prints ms per substep,
the ratio against the whole solve and against the solve without the strain limit, for each
backend, then the numpy collider phase split into its parts
(each function's own time, without the parts it calls; the parts sum to the phase):

- ``refit``: the substep's poses, swept boxes and normals, both box grids refit
  (``MeshCollider.substep``, ``BoxGrid.refit``);
- ``pairs``: the broad-phase pair lists, both directions (``PairList.pairs``);
- ``fail-safe``: the winding-number test for trapped vertices (``find_trapped``);
- ``ccd``: the continuous test of cloth vertices, culls and all (``_continuous``);
- ``cubic``: the vertex-triangle cubic's roots, both directions (``first_crossing``);
- ``cloth vertices``: the sided discrete test and friction, the pairs' per-substep quantities
  (``project_cloth_vertices``, ``_vertex_pairs``);
- ``collider vertices``: collider vertices against the cloth's triangles, their culls
  (``project_collider_vertices``, ``_triangle_pairs``, ``_start_corners``);
- ``recheck``: the continuous test again after the pushes, its selection (``recheck``);
- ``other``: the rest of ``project_cloth`` (per-point thickness, bookkeeping).

On Warp (CPU) a frame runs as one recording; each timed frame is run, then run again from the
same start as its recorded launches one by one, each timed (``--repeat N``: N times, each
launch's fastest kept), and the launches are summed by kind: the mesh collider's kernels and
native loops (:mod:`pbdcloth.backends.warp.mesh_kernels`, :mod:`pbdcloth.backends.warp.mesh_native`,
these on ``--threads`` POSIX threads) against the stretch, shear, bend and tether kernels and
the strain limit's (``distance_limit_lanes``).
``--phases`` also prints the Warp kernels one by one.

    PYTHONPATH=python3.11libs python scripts/bench_colliders.py [--phases] [--repeat 5]
        [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth.backends import numpy_backend
from pbdcloth.colliders import broadphase, mesh, mesh_contact
from pbdcloth.colliders.mesh import MeshCollider
from pbdcloth.scenes.cloth import SKIRT_TIGHT_CUT, skirt_scene
from pbdcloth.settings import ClothSettings
from pbdcloth.solver import ClothSolver

#: The constraint projections the numpy backend calls, timed as "solve".
CONSTRAINT_FUNCTIONS = ("project_distance_pbd", "project_distance_xpbd", "project_bend_pbd",
                        "project_bend_xpbd", "project_tethers")
#: The collider phase's parts: (owner, function name, part), see the module docstring.
COLLIDER_PARTS: tuple[tuple[Any, str, str], ...] = (
    (MeshCollider, "project_cloth", "other"),
    (MeshCollider, "substep", "refit"),
    (broadphase.BoxGrid, "refit", "refit"),
    (broadphase.PairList, "pairs", "pairs"),
    (mesh_contact, "find_trapped", "fail-safe"),
    (mesh_contact, "_continuous", "ccd"),
    (mesh_contact, "first_crossing", "cubic"),
    (mesh_contact, "project_cloth_vertices", "cloth vertices"),
    (mesh_contact, "_vertex_pairs", "cloth vertices"),
    (mesh_contact, "project_collider_vertices", "collider vertices"),
    (mesh_contact, "_triangle_pairs", "collider vertices"),
    (mesh_contact, "_start_corners", "collider vertices"),
    (mesh_contact, "recheck", "recheck"),
)
PARTS = ("refit", "pairs", "fail-safe", "ccd", "cubic", "cloth vertices", "collider vertices",
         "recheck", "other")
CLOCK = {"constraints": 0.0, "limit": 0.0, **{part: 0.0 for part in PARTS}}
#: Time spent in the wrapped functions called by the one running now (its own time excludes
#: them), one entry per wrapped call in progress.
_NESTED: list[float] = []
#: Warp kernels timed as "solve" (lane kernels on the CPU, per-constraint ones elsewhere).
WARP_SOLVE = ("distance_xpbd_lanes", "bend_xpbd_lanes", "distance_pbd_lanes", "bend_pbd_lanes",
              "distance_xpbd", "distance_pbd", "bend_xpbd", "bend_pbd", "tethers")
#: The strain limit's Warp kernel (its sweeps on the CPU lanes).
WARP_LIMIT = ("distance_limit_lanes",)


def _wrap(owner: Any, name: str, key: str) -> None:
    """Time ``owner.name`` into ``CLOCK[key]``, without the wrapped functions it calls (a
    function this version lacks is skipped)."""
    inner: Callable[..., Any] | None = getattr(owner, name, None)
    if inner is None:
        return

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _NESTED.append(0.0)
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            CLOCK[key] += elapsed - _NESTED.pop()
            if _NESTED:
                _NESTED[-1] += elapsed

    setattr(owner, name, wrapper)
    if owner is mesh_contact and hasattr(mesh, name):  # imported by name there
        setattr(mesh, name, wrapper)


def run(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    settings = ClothSettings(
        model="xpbd", substeps=10, iterations=3, density=0.2, stretch_compliance=1e-7,
        shear_compliance=1e-6, bend_compliance=20.0, damping=0.3, tethers=True,
        tether_slack=1.02, thickness=0.006, friction=0.3, static_friction=0.3,
        self_collision=False, backend=backend)
    scene = skirt_scene(frames=args.warmup + args.frames, nu=args.nu, nv=args.nv,
                        body_segments=args.segments, body_rings=args.rings, settings=settings,
                        **SKIRT_TIGHT_CUT)
    body = scene.colliders[0]
    assert isinstance(body, MeshCollider)
    row: dict[str, Any] = {"backend": backend, "particles": int(scene.positions.shape[0]),
                           "body_triangles": int(body.triangles.shape[0])}
    try:
        solver = scene.make_solver()
        if backend == "warp":
            from pbdcloth.backends.warp.backend import WarpBackend
            from pbdcloth.selfcollision.tuning import SelfCollisionTuning

            tuning = SelfCollisionTuning(warp_cpu_threads=args.threads)
            solver.use_backend(WarpBackend(solver.model, device="cpu", use_graph=False,
                                           tuning=tuning))
        assert scene.animate is not None
        for k in range(1, args.warmup + 1):
            scene.animate(solver, k)
            solver.step(1.0 / scene.fps)
    except (ImportError, NotImplementedError) as exc:
        row["unsupported"] = str(exc).split(";")[0]
        return row
    if backend == "warp":
        return _warp_row(row, solver, scene, settings.substeps, args)
    for key in CLOCK:
        CLOCK[key] = 0.0
    start = time.perf_counter()
    for k in range(args.warmup + 1, args.warmup + args.frames + 1):
        scene.animate(solver, k)
        solver.step(1.0 / scene.fps)
    total = time.perf_counter() - start
    substeps = args.frames * settings.substeps
    row["constraints_ms"] = 1000.0 * CLOCK["constraints"] / substeps
    row["limit_ms"] = 1000.0 * CLOCK["limit"] / substeps
    row["collider_ms"] = 1000.0 * sum(CLOCK[part] for part in PARTS) / substeps
    if backend == "numpy":
        row["collider_parts_ms"] = {part: 1000.0 * CLOCK[part] / substeps for part in PARTS}
    row["substep_ms"] = 1000.0 * total / substeps
    _ratios(row)
    return row


def _ratios(row: dict[str, Any]) -> None:
    """The collider phase over the whole solve (``ratio``) and over the solve without the
    strain limit (``ratio_without_limit``)."""
    row["ratio"] = row["collider_ms"] / (row["constraints_ms"] + row["limit_ms"])
    row["ratio_without_limit"] = row["collider_ms"] / row["constraints_ms"]


def _warp_row(row: dict[str, Any], solver: ClothSolver, scene: Any, substeps: int,
              args: argparse.Namespace) -> dict[str, Any]:
    """Time the Warp backend's frames whole, then launch by launch from the same start."""
    import warp as wp

    backend: Any = solver.backend
    kernels: dict[str, float] = {}
    total = 0.0
    for k in range(args.warmup + 1, args.warmup + args.frames + 1):
        scene.animate(solver, k)
        x0, v0 = backend._x.numpy().copy(), backend._v.numpy().copy()
        start = time.perf_counter()
        solver.step(1.0 / scene.fps)
        total += time.perf_counter() - start
        x1, v1 = backend._x.numpy().copy(), backend._v.numpy().copy()
        best: list[float] = []
        for _ in range(args.repeat):  # each launch's fastest run (a shared machine's noise)
            backend._x.assign(x0)
            backend._v.assign(v0)
            times = []
            for launch in backend._launches:
                t0 = time.perf_counter()
                launch.launch()
                wp.synchronize_device(backend.device)
                times.append(time.perf_counter() - t0)
            best = times if not best else [min(a, b) for a, b in zip(best, times)]
        for launch, t in zip(backend._launches, best):
            name = launch.kernel.key.split("__")[-1]
            kernels[name] = kernels.get(name, 0.0) + t
        backend._x.assign(x1)
        backend._v.assign(v1)
    n = args.frames * substeps
    mesh_kernels = {key for key, value in _mesh_kernels().items()
                    if hasattr(value, "module") and hasattr(value, "key")}
    row["constraints_ms"] = 1000.0 * sum(t for name, t in kernels.items()
                                         if name in WARP_SOLVE) / n
    row["limit_ms"] = 1000.0 * sum(t for name, t in kernels.items() if name in WARP_LIMIT) / n
    row["collider_ms"] = 1000.0 * sum(t for name, t in kernels.items()
                                      if name in mesh_kernels) / n
    row["substep_ms"] = 1000.0 * total / n
    _ratios(row)
    row["kernels_ms"] = {name: 1000.0 * t / n for name, t in
                         sorted(kernels.items(), key=lambda item: -item[1])}
    return row


def _mesh_kernels() -> dict[str, Any]:
    """The Warp mesh collider's kernels and native loops (float32), by name."""
    from pbdcloth.backends.warp.mesh_kernels import build_mesh_kernels

    kernels = vars(build_mesh_kernels("float32"))
    try:
        from pbdcloth.backends.warp.mesh_native import build_mesh_native
    except ImportError:  # a tree from before the native loops
        return kernels
    return {**kernels, **vars(build_mesh_native("float32"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nu", type=int, default=200, help="skirt points around (200)")
    parser.add_argument("--nv", type=int, default=50, help="skirt rings (50: 10,000 particles)")
    parser.add_argument("--segments", type=int, default=64, help="body points around a ring")
    parser.add_argument("--rings", type=int, default=56, help="body rings along a leg")
    parser.add_argument("--warmup", type=int, default=6, help="untimed frames first")
    parser.add_argument("--frames", type=int, default=3, help="timed frames")
    parser.add_argument("--repeat", type=int, default=1,
                        help="Warp: run each timed frame's launches this many times from the "
                             "same start and keep each launch's fastest (1)")
    parser.add_argument("--threads", type=int, default=2,
                        help="POSIX threads of the Warp native loops (warp_cpu_threads, 2)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--phases", action="store_true",
                        help="also print the Warp kernels one by one (ms per substep)")
    args = parser.parse_args(argv)
    for name in CONSTRAINT_FUNCTIONS:
        _wrap(numpy_backend, name, "constraints")
    _wrap(numpy_backend, "project_strain_limit", "limit")
    for owner, name, part in COLLIDER_PARTS:
        _wrap(owner, name, part)
    rows = [run(b, args) for b in ("numpy", "warp")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"skirt {rows[0]['particles']} particles on a {rows[0]['body_triangles']}-triangle "
          f"walking body, 10 substeps x 3 iterations, ms per substep")
    print(f"{'backend':8} {'collider':>9} {'solve':>9} {'limit':>7} {'ratio':>7} "
          f"{'no limit':>8} {'substep':>9}")
    print(f"{'':8} {'':>9} {'':>9} {'':>7} {'':>7} {'ratio':>8}")
    for r in rows:
        if "unsupported" in r:
            print(f"{r['backend']:8} {'unsupported: ' + r['unsupported']}")
            continue
        print(f"{r['backend']:8} {r['collider_ms']:9.2f} {r['constraints_ms']:9.2f} "
              f"{r['limit_ms']:7.2f} {r['ratio']:7.2f} {r['ratio_without_limit']:8.2f} "
              f"{r['substep_ms']:9.2f}")
    parts = rows[0].get("collider_parts_ms")
    if parts:
        solve = rows[0]["constraints_ms"] + rows[0]["limit_ms"]
        print(f"\nnumpy collider phase by part, ms per substep (x the solve's {solve:.2f} ms, "
              "strain limit included)")
        for part in PARTS:
            print(f"  {part:18} {parts[part]:7.2f} {parts[part] / solve:6.2f}x")
    warp = [r for r in rows if "kernels_ms" in r]
    if args.phases and warp:
        print("\nWarp kernels, ms per substep (timed one by one, so each includes a launch)")
        for name, ms in warp[0]["kernels_ms"].items():
            print(f"  {name:28} {ms:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
