"""The ``pbdcloth`` command.

Every solver setting becomes an option (``--substeps 20``, ``--gravity 0 -9.81 0``,
``--tethers/--no-tethers``) generated from :data:`pbdcloth.settings.CLOTH_SETTINGS`, with its unit,
range and default in the help text.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..settings import (
    CLOTH_SETTINGS,
    KIND_BOOL,
    KIND_CHOICE,
    KIND_FLOAT,
    KIND_INT,
    KIND_VEC3,
    ClothSettings,
    Setting,
    SettingsError,
)

if TYPE_CHECKING:
    from ..scenes.springs import SpringScene

EXIT_USAGE = 2


def option_name(decl: Setting) -> str:
    return "--" + decl.name.replace("_", "-")


def setting_help(decl: Setting) -> str:
    """Help text of a setting: what it does, then unit, range and default."""
    facts = []
    if decl.unit:
        facts.append(f"unit {decl.unit}")
    rng = decl.range_text()
    if rng and decl.kind != KIND_CHOICE:
        facts.append(f"range {rng}")
    default = " ".join(f"{c:g}" for c in decl.default) if decl.kind == KIND_VEC3 else decl.default
    facts.append(f"default {default!s}" if default != "" else "default: empty")
    return f"{decl.help} ({'; '.join(facts)})".replace("%", "%%")


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one option per cloth setting, grouped as in the declaration, all defaulting to None."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for decl in CLOTH_SETTINGS:
        group = groups.setdefault(decl.group, parser.add_argument_group(f"{decl.group} settings"))
        kwargs: dict[str, Any] = {"dest": f"setting_{decl.name}", "default": None,
                                  "help": setting_help(decl)}
        if decl.kind == KIND_BOOL:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif decl.kind == KIND_VEC3:
            kwargs.update(nargs=3, type=float, metavar=("X", "Y", "Z"))
        elif decl.kind == KIND_CHOICE:
            kwargs["choices"] = [v for v, _ in decl.choices]
        elif decl.kind == KIND_INT:
            kwargs.update(type=int, metavar="N")
        elif decl.kind == KIND_FLOAT:
            kwargs.update(type=float, metavar="X")
        else:
            kwargs["metavar"] = "TEXT"
        group.add_argument(option_name(decl), **kwargs)


def settings_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, as ``{name: value}``."""
    out: dict[str, Any] = {}
    for decl in CLOTH_SETTINGS:
        value = getattr(args, f"setting_{decl.name}", None)
        if value is not None:
            out[decl.name] = tuple(value) if decl.kind == KIND_VEC3 else value
    return out


def apply_overrides(base: ClothSettings, args: argparse.Namespace) -> ClothSettings:
    return base.replace(**settings_overrides(args))


# --- demo ----------------------------------------------------------------------------------
def _cmd_demo(args: argparse.Namespace) -> int:
    from ..colliders import Sphere
    from ..preview import contact_sheet
    from ..pipeline.run import run_scene
    from ..scenes.cloth import SCENES
    from ..scenes.springs import SpringScene

    scene = SCENES[args.scene]()
    if isinstance(scene, SpringScene):  # spring chains, not cloth: the scene runs itself
        return _run_spring_scene(scene, args)
    scene.settings = apply_overrides(scene.settings, args)
    if args.frames is not None:
        scene.frames = args.frames
    out = Path(args.out) if args.out else Path("out") / args.scene
    out.mkdir(parents=True, exist_ok=True)
    print(f"pbdcloth demo '{scene.name}': {scene.description.strip().splitlines()[0]}")
    summary, frames = run_scene(scene, out, progress=not args.quiet)
    spheres = [(c.center, c.radius) for c in scene.colliders if isinstance(c, Sphere)]
    picture = contact_sheet(out / "preview.png", frames, scene.triangles,
                            title=f"pbdcloth {scene.name}: {len(frames) - 1} frames",
                            spheres=spheres, follow=scene.follow_camera)
    for line in summary.lines():
        print(line)
    print(f"wrote {len(summary.outputs)} OBJ frames, log.jsonl and {picture} to {out}/")
    return 0


def _run_spring_scene(scene: "SpringScene", args: argparse.Namespace) -> int:
    """Run a spring-chain scene (``springs``) through its own ``run`` method."""
    given = settings_overrides(args)
    if given:
        raise SettingsError(f"cloth settings do not apply to scene '{args.scene}': "
                            f"{', '.join(sorted(given))}")
    out = Path(args.out) if args.out else Path("out") / args.scene
    for line in scene.run(out, frames=args.frames, progress=not args.quiet):
        print(line)
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    from ..scenes.cloth import SCENES

    p = sub.add_parser(
        "demo", help="run a built-in scene and write OBJ frames and a preview picture",
        description="Run a built-in scene. Writes an OBJ per frame, log.jsonl, summary.json and "
        "preview.png (a contact sheet) into --out (default out/SCENE).",
    )
    p.add_argument("--scene", choices=sorted(SCENES), default="drape",
                   help="which built-in scene (default drape)")
    p.add_argument("--out", help="output folder (default out/SCENE)")
    p.add_argument("--frames", type=int, help="number of frames (default: the scene's)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_settings_arguments(p)
    p.set_defaults(func=_cmd_demo)


# --- settings ------------------------------------------------------------------------------
def _cmd_settings(args: argparse.Namespace) -> int:
    from ..docs import settings_markdown

    print(settings_markdown())
    return 0


def _add_settings(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("settings", help="print the reference of every solver setting (Markdown)")
    p.set_defaults(func=_cmd_settings)


#: Sub-command registrations; other modules append theirs.
COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [  # type: ignore[type-arg,unused-ignore]
    _add_demo,
    _add_settings,
]

# Scene files and caches: simulate, validate, preview, plot, postprocess (pbdcloth.cli.scenes).
from .scenes import SIM_COMMANDS  # noqa: E402

COMMANDS.extend(SIM_COMMANDS)


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
