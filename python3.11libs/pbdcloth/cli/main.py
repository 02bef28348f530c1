"""The ``pbdcloth`` command: the parser, its sub-commands and :func:`main`.

Sub-commands: ``demo`` (:mod:`.demo`), ``settings`` (here), ``simulate``, ``validate``,
``preview``, ``plot``, ``postprocess`` (:mod:`.scenes`), ``wedge`` (:mod:`.wedge`). Every solver
setting is an option of ``demo``, ``simulate``, ``validate`` and ``wedge``, generated from the
settings declaration (:mod:`.options`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from ..settings import SettingsError
from .demo import add_demo
from .scenes import SIM_COMMANDS
from .wedge import add_wedge

EXIT_USAGE = 2


# --- settings ------------------------------------------------------------------------------
def _cmd_settings(args: argparse.Namespace) -> int:
    from ..docs import settings_markdown

    print(settings_markdown())
    return 0


def _add_settings(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("settings", help="print the reference of every solver setting (Markdown)")
    p.set_defaults(func=_cmd_settings)


#: Sub-command registrations, in the order of ``pbdcloth --help``.
COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [  # type: ignore[type-arg,unused-ignore]
    add_demo,
    _add_settings,
    *SIM_COMMANDS,  # scene files and caches: simulate, validate, preview, plot, postprocess
    add_wedge,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pbdcloth",
        description="Position-based cloth (PBD/XPBD) and spring-bone simulation. Lengths in "
        "metres, time in seconds, Y up, as in Houdini.",
    )
    from ..version import __version__

    parser.add_argument("--version", action="version", version=f"pbdcloth {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except (SettingsError, ValueError, FileNotFoundError) as exc:
        print(f"pbdcloth {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
