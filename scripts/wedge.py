#!/usr/bin/env hython
"""Run a wedge of a scene file from Houdini's Python: the whole wedge, or one member of it.

    hython scripts/wedge.py SCENE.toml --vary bend_stiffness=0.01,0.05,0.2 \\
        --vary friction=0.2,0.6 --out cache/wedge            # the whole wedge, as `pbdcloth wedge`
    hython scripts/wedge.py SCENE.toml --vary ... --out cache/wedge --member 3

Without ``--member`` this is ``pbdcloth wedge`` with the same options, run by hython (Dask
installed into Houdini's Python: ``hython -m pip install --target
"$HOUDINI_USER_PREF_DIR/python3.11libs" "dask[distributed]"``). With ``--member K`` it runs
only member K, in this process and without Dask, into the same folder
``DIR/wKKKK_NAME=VALUE_...`` the whole wedge would use: the body of one work item of a TOP
network (a Python Script TOP or a Generic Generator running this command per work item, with
``--member @pdg_index``), so PDG schedules the members and the folders match a ``pbdcloth
wedge`` of the same lists. The member's settings are printed as ``NAME=VALUE`` lines and its
folder last.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python3.11libs") not in sys.path:
    sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.cli.main import build_parser, main  # noqa: E402
from pbdcloth.cli.options import settings_overrides  # noqa: E402
from pbdcloth.pipeline.wedge import WedgeError, plan_wedge  # noqa: E402
from pbdcloth.pipeline.wedge.execute import STATE_DIR, make_tasks, run_member  # noqa: E402


def _take_member(argv: list[str]) -> tuple[int | None, list[str]]:
    """``--member K`` out of the arguments."""
    rest, member = [], None
    args = iter(argv)
    for arg in args:
        if arg == "--member" or arg.startswith("--member="):
            text = arg.partition("=")[2] if "=" in arg else next(args, "")
            if not text.isdigit():
                raise SystemExit(f"wedge.py: --member needs a member index, got {text!r}")
            member = int(text)
        else:
            rest.append(arg)
    return member, rest


def run_one(argv: list[str], index: int) -> int:
    """Run member ``index`` of the wedge ``argv`` describes (``pbdcloth wedge`` options)."""
    args = build_parser().parse_args(["wedge", *argv])
    try:
        plan = plan_wedge(args.scene, args.vary or (), True if args.zip else None, args.out,
                          args.frames, args.format, settings_overrides(args), args.yes)
    except WedgeError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if not 0 <= index < len(plan.members):
        print(f"wedge.py: --member {index}: the wedge has members 0-{len(plan.members) - 1}",
              file=sys.stderr)
        return 2
    (plan.out / STATE_DIR).mkdir(parents=True, exist_ok=True)
    task = make_tasks(plan, f"member-{index}", args.resume)[index]
    for name, value in task.values.items():
        print(f"{name}={value}")
    row = run_member(task)
    if row["status"] != "done":
        print(f"{task.name}: failed: {row['message']}", file=sys.stderr)
        return 1
    print(plan.out / task.name)
    return 0


def entry(argv: list[str]) -> int:
    member, rest = _take_member(argv)
    if member is None:
        return main(["wedge", *rest])
    return run_one(rest, member)


if __name__ == "__main__":
    sys.exit(entry(sys.argv[1:]))
