"""The ``pbdcloth`` command: the parser, its sub-commands and :func:`main`.

Sub-commands: ``demo`` (:mod:`.demo`), ``settings`` (here), ``simulate``, ``validate``,
``preview``, ``plot``, ``postprocess`` (:mod:`.scenes`), ``wedge`` (:mod:`.wedge`). Every solver
setting is an option of ``demo``, ``simulate``, ``validate`` and ``wedge``, generated from the
settings declaration (:mod:`.options`).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Callable, Sequence

from ..backends.base import SimulationDiverged
from ..pipeline.guard import RunFailed
from .demo import add_demo
from .scenes import SIM_COMMANDS
from .wedge import add_wedge

#: Exit codes: bad input (nothing run), a failure during the run, Ctrl-C.
EXIT_USAGE = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


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


def _subparser(parser: argparse.ArgumentParser, command: str | None
               ) -> argparse.ArgumentParser:
    """The parser of ``command`` (the top-level parser when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen: argparse.ArgumentParser = action.choices[command]
            return chosen
    return parser


def unknown_options_message(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """"unrecognized arguments" with a "did you mean" for each mistyped option."""
    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for word in extra:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.6)
            if close:
                hints.append(f"{word}: did you mean {close[0]}?")
    text = f"unrecognized arguments: {' '.join(extra)}"
    return text + (f" ({'; '.join(hints)})" if hints else f"; see {parser.prog} --help")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 600 else text[:597] + "..."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit code: 0 done, 2 bad input (nothing or no frame written),
    1 a failure during the run (the frames on disk are complete), 130 interrupted (Ctrl-C).

    Every error is one line on stderr saying what happened and what to do, never a traceback.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    command = getattr(args, "command", None)
    if extra:
        target = _subparser(parser, command)
        target.print_usage(sys.stderr)
        print(f"{target.prog}: error: {unknown_options_message(target, extra)}",
              file=sys.stderr)
        return EXIT_USAGE
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    where = f"pbdcloth {command}"
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"\n{where}: interrupted (Ctrl-C); files written so far are complete",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunFailed as exc:
        print(f"{where}: failed: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except SimulationDiverged as exc:
        print(f"{where}: failed: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError,
            PermissionError, ImportError) as exc:
        print(f"{where}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"{where}: failed: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - the command line never shows a traceback
        print(f"{where}: failed: {type(exc).__name__}: {_one_line(exc)} (an internal error; "
              "please report it with the command line)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
