"""Command-line options generated from the settings declaration.

Every cloth setting of :data:`pbdcloth.settings.CLOTH_SETTINGS` becomes an option
(``--substeps 20``, ``--gravity 0 -9.81 0``, ``--tethers/--no-tethers``) with its unit, range and
default in the help text, grouped as in the declaration. ``--preset NAME`` sets the values of a
fabric preset (:mod:`pbdcloth.presets`) first; options given with it override them.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..presets import PRESETS, preset
from ..settings import (
    CLOTH_SETTINGS,
    KIND_BOOL,
    KIND_CHOICE,
    KIND_FLOAT,
    KIND_INT,
    KIND_VEC3,
    ClothSettings,
    Setting,
)


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
    parser.add_argument(
        "--preset", dest="setting_preset", default=None, choices=list(PRESETS),
        help="fabric preset (pbdcloth.presets): density, compliances and friction of a real "
        "fabric, in SI units, XPBD; other options override its values")
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
    """The settings given on the command line, as ``{name: value}`` (a ``--preset``'s values
    first, then the options given)."""
    out: dict[str, Any] = {}
    name = getattr(args, "setting_preset", None)
    if name is not None:
        out.update(preset(name).settings())
    for decl in CLOTH_SETTINGS:
        value = getattr(args, f"setting_{decl.name}", None)
        if value is not None:
            out[decl.name] = tuple(value) if decl.kind == KIND_VEC3 else value
    return out


def apply_overrides(base: ClothSettings, args: argparse.Namespace) -> ClothSettings:
    return base.replace(**settings_overrides(args))
