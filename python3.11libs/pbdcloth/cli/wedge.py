"""``pbdcloth wedge``: the same scene simulated over lists of settings, in parallel on Dask."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .options import add_settings_arguments, settings_overrides
from .scenes import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS, Sub, _parser

EXIT_FAILED = 1
"""Some members failed (each with its message in wedge.csv); the others are complete."""


def _cmd_wedge(args: argparse.Namespace) -> int:
    from ..pipeline.wedge import WedgeError, plan_wedge, run_wedge
    from ..pipeline.wedge.execute import ClusterError

    try:
        plan = plan_wedge(args.scene, args.vary or (), True if args.zip else None, args.out,
                          args.frames, args.format, settings_overrides(args), args.yes)
    except WedgeError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_PROBLEMS
    if not args.serial:
        try:
            import distributed  # noqa: F401
        except ImportError:
            print("pbdcloth wedge: error: wedges run on Dask: pip install 'pbdcloth[dist]' "
                  "(or --serial to run them one after the other here)", file=sys.stderr)
            return EXIT_PROBLEMS
    axes = " x ".join(f"{a.name} ({len(a.values)})" for a in plan.axes)
    where = ("one after the other in this process" if args.serial else
             f"the Dask scheduler {args.scheduler}" if args.scheduler else
             "an embedded Dask cluster" + (f" of {args.workers} workers" if args.workers
                                           else ", one worker per core"))
    quiet = args.quiet

    def ready(dashboard: str) -> None:
        if not quiet and dashboard:
            print(f"Dask dashboard: {dashboard}")

    if not quiet:
        print(f"wedge of {plan.spec.name}: {len(plan.members)} simulations, {axes}"
              f"{' zipped' if plan.zip else ''}, into {plan.out}/ on {where}")
        if args.scheduler:
            print("  (the scene file and that folder must be on storage the workers share: "
                  "checked before starting)")
    try:
        result = run_wedge(plan, scheduler=args.scheduler, workers=args.workers,
                           resume=args.resume, progress=not quiet, serial=args.serial,
                           on_ready=ready)
    except ClusterError as exc:
        print(f"pbdcloth wedge: error: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        print(f"\ninterrupted; finished wedges and the frames on disk are complete. Continue "
              f"with:\n  pbdcloth wedge {' '.join(_again(args))} --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not quiet:
        for line in result_lines(result.rows, [a.name for a in plan.axes]):
            print(line)
        print(f"{len(result.rows) - len(result.failed)} of {len(result.rows)} done in "
              f"{result.seconds:.1f} s; wrote {', '.join(p.name for p in result.outputs)} "
              f"in {plan.out}/")
    for row in result.failed:
        print(f"{row['name']}: failed: {row.get('message', '')}", file=sys.stderr)
    return EXIT_FAILED if result.failed else EXIT_OK


def _again(args: argparse.Namespace) -> list[str]:
    """The wedge's own options, to continue it (settings options: "...")."""
    words = [args.scene]
    for text in args.vary or ():
        words += ["--vary", text]
    for flag in ("out", "frames", "format", "scheduler", "workers"):
        if getattr(args, flag) is not None:
            words += [f"--{flag}", str(getattr(args, flag))]
    words += ["--zip"] if args.zip else []
    return words + (["..."] if settings_overrides(args) else [])


def result_lines(rows: list[dict[str, Any]], names: list[str]) -> list[str]:
    """One line per member: name, status, max strain, min collider distance, ms per frame."""
    lines = []
    for r in rows:
        if r["status"] != "done":
            lines.append(f"  {r['name']}  {r['status']}")
            continue
        dist = r.get("min_collider_distance")
        lines.append(f"  {r['name']}  done  max stretch {100 * (r['max_strain'] or 0):.3f} %"
                     + (f"  min distance {1000 * dist:.2f} mm" if dist is not None else "")
                     + f"  {r['ms_per_frame'] or 0:.1f} ms/frame")
    return lines


def add_wedge(sub: Sub) -> None:
    p = _parser(
        sub, "wedge", "Simulate a scene over lists of settings, many runs at once (Dask).",
        """Runs the scene once for every combination of the varied settings (their product;
        --zip pairs the lists instead), each combination exactly as `pbdcloth simulate` would
        with those settings, into DIR/w0003_bend_stiffness=0.05_friction=0.6/ with its own
        cache, checkpoint, log.jsonl and summary.json. The runs are Dask tasks: by default on
        an embedded cluster (one single-threaded worker process per core, no set-up); with
        --scheduler on an existing Dask cluster, whose workers must see the scene file and DIR
        at the same path (shared storage: checked before anything starts). DIR/wedge.csv and
        wedge.json get one row per run (the varied values, frames, max strain, min collider
        distance, ms per frame, status) and DIR/wedge.png a grid of the last frames. A run
        that fails is marked failed and the others go on; a run whose worker dies is retried
        from its checkpoint; --resume skips the complete runs and resumes the partial ones.
        Without --vary the scene's [wedge] table says what to vary. Every problem with the
        lists (unknown setting, value out of range, empty list, more than 1,000 runs without
        --yes) is reported before anything starts. Exit code 0: all done; 1: some failed; 2:
        bad input.""",
        """
        pbdcloth wedge examples/drape.toml --vary bend_stiffness=0.01,0.05,0.2 \\
            --vary friction=0.2,0.6 --frames 24
        pbdcloth wedge shot.toml --vary substeps=10,20,40 --out out/substeps --workers 4
        pbdcloth wedge shot.toml --scheduler tcp://farm:8786 --out /shared/wedges/shot
        pbdcloth wedge shot.toml --resume                 # after a crash or Ctrl-C
        """)
    p.add_argument("scene", help="Scene file (TOML); its [wedge] table is used when no --vary "
                   "is given.")
    w = p.add_argument_group("wedge")
    w.add_argument("--vary", action="append", metavar="NAME=V1,V2,...",
                   help="A setting and its values, e.g. bend_stiffness=0.01,0.05,0.2 (vectors as "
                   "'x y z'); repeat for more settings.")
    w.add_argument("--zip", action="store_true",
                   help="Pair the lists element by element instead of taking their product.")
    w.add_argument("--out", metavar="DIR",
                   help="The wedge's folder (default out/SCENE_wedge).")
    w.add_argument("--scheduler", metavar="ADDRESS",
                   help="An existing Dask scheduler (tcp://host:8786) instead of the embedded "
                   "cluster; the scene file and DIR must be on shared storage.")
    w.add_argument("--workers", type=int, metavar="N",
                   help="Embedded cluster: N worker processes (default one per core); with "
                   "--scheduler: wait until N workers are connected.")
    w.add_argument("--frames", type=int, metavar="N",
                   help="Frames of every run (default: [scene] frames).")
    w.add_argument("--format", choices=("usd", "geo", "obj"),
                   help="Cache format of every run (default: [output] format).")
    w.add_argument("--resume", action="store_true",
                   help="Skip the runs that are complete, resume the partial ones.")
    w.add_argument("--yes", action="store_true", help="Allow more than 1,000 runs.")
    w.add_argument("--serial", action="store_true",
                   help="Run one after the other in this process, without Dask.")
    w.add_argument("--quiet", action="store_true", help="No progress bar or summary.")
    add_settings_arguments(p)
    p.set_defaults(func=_cmd_wedge)
