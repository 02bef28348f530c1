"""A wedge's plan: which settings vary over which values, checked in full before anything runs.

Axes come from the command line (``--vary bend_stiffness=0.01,0.05,0.2``, repeated) or, when
none is given there, from the scene file's ``[wedge]`` table::

    [wedge]
    zip = false                          # true: pair the lists element by element
    [wedge.vary]
    bend_stiffness = [0.01, 0.05, 0.2]
    friction = [0.2, 0.6]

The members are the Cartesian product of the axes, the first axis outermost (row-major), or with
``zip`` the lists paired element by element. Member ``k`` runs in ``DIR/wKKKK_NAME=VALUE_...``:
with the lists above, ``w0003_bend_stiffness=0.05_friction=0.6``.

:func:`plan_wedge` collects every problem (an unknown setting with a "did you mean", a value of
the wrong kind or out of its range, an empty or repeated list, a setting varied twice or both
varied and fixed, lists of different lengths under ``zip``, more than :data:`MAX_MEMBERS` members
without ``yes``, and the scene file's own problems) and raises one :class:`WedgeError` listing
them all.
"""

from __future__ import annotations

import difflib
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...settings import (
    CLOTH_SETTINGS,
    KIND_BOOL,
    KIND_FLOAT,
    KIND_INT,
    KIND_VEC3,
    Choice,
    SettingsError,
    setting,
)
from ..scenefile import (
    Problem,
    ProblemsError,
    SceneFileError,
    SceneSpec,
    load_scene,
    read_scene_file,
)

MAX_MEMBERS = 1000
"""More members than this need ``yes=True`` (``--yes``)."""

_TRUE = ("true", "on", "yes", "1")
_FALSE = ("false", "off", "no", "0")


class WedgeError(ProblemsError):
    """A wedge cannot start; ``problems`` lists every reason at once."""

    what = "in the wedge of"


@dataclass(frozen=True)
class Axis:
    """One varied setting and its values (validated, in the setting's kind)."""

    name: str
    values: tuple[Any, ...]


def value_text(value: Any) -> str:
    """A value as it appears in a member's folder name: the shortest text that reads back as
    the same number (``0.05``, ``1e-05``), ``true``/``false``, a choice's word, ``x,y,z``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Choice):
        return value.value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return ",".join(value_text(v) for v in value)
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Choice):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass(frozen=True)
class Member:
    """One simulation of the wedge: its index and the value of each varied setting."""

    index: int
    values: tuple[tuple[str, Any], ...]

    @property
    def name(self) -> str:
        """The member's folder name, ``w0003_bend_stiffness=0.05_friction=0.6``."""
        parts = [f"w{self.index:04d}"] + [f"{n}={value_text(v)}" for n, v in self.values]
        return "_".join(parts)

    def settings(self) -> dict[str, Any]:
        return dict(self.values)

    def plain(self) -> dict[str, Any]:
        """The varied values as JSON data."""
        return {n: _plain(v) for n, v in self.values}


@dataclass
class WedgePlan:
    """A checked wedge.

    Attributes:
        scene: the scene file (absolute, so workers anywhere find it on shared storage).
        out: the wedge's folder (absolute); member ``k`` writes into ``out / member.name``.
        axes: the varied settings, in order (the first is the grid picture's rows).
        zip: members pair the lists element by element instead of taking their product.
        frames, format: ``--frames`` and ``--format`` for every member (None: the scene's).
        fixed: settings given once for every member (``--substeps 40``).
        members: every simulation, in index order.
        spec: the scene as checked with the fixed settings (not the varied ones).
    """

    scene: Path
    out: Path
    axes: list[Axis]
    zip: bool
    frames: int | None
    format: str | None
    fixed: dict[str, Any]
    members: list[Member]
    spec: SceneSpec = field(repr=False)

    def overrides(self, member: Member) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(overrides, settings_overrides)`` of :func:`~pbdcloth.pipeline.scenefile.load_scene`
        for ``member``: the same as ``pbdcloth simulate SCENE --out DIR/NAME --frames N
        --NAME VALUE ...``."""
        over = {"out": str(self.out / member.name), "frames": self.frames, "format": self.format}
        return over, {**self.fixed, **member.settings()}

    def command(self, member: Member) -> list[str]:
        """The ``pbdcloth simulate`` command line that makes ``member``'s folder."""
        args = ["pbdcloth", "simulate", str(self.scene), "--out", str(self.out / member.name)]
        if self.frames is not None:
            args += ["--frames", str(self.frames)]
        if self.format is not None:
            args += ["--format", self.format]
        for name, value in {**self.fixed, **member.settings()}.items():
            decl = setting(name)
            flag = "--" + name.replace("_", "-")
            if decl.kind == KIND_BOOL:
                args.append(flag if value else "--no-" + name.replace("_", "-"))
            elif decl.kind == KIND_VEC3:
                args += [flag, *(repr(float(c)) for c in value)]
            else:
                args += [flag, value_text(value)]
        return args

    def to_json(self) -> dict[str, Any]:
        return {"scene": str(self.scene), "out": str(self.out),
                "axes": [{"name": a.name, "values": [_plain(v) for v in a.values]}
                         for a in self.axes],
                "zip": self.zip, "frames": self.frames, "format": self.format,
                "fixed": {k: _plain(v) for k, v in self.fixed.items()},
                "members": [{"index": m.index, "name": m.name, "values": m.plain()}
                            for m in self.members]}


# ------------------------------------------------------------------------------------------
# reading the axes
# ------------------------------------------------------------------------------------------
_NAMES = [d.name for d in CLOTH_SETTINGS]


def _unknown_name(key: str, value: Any, name: str) -> Problem:
    close = difflib.get_close_matches(name, _NAMES, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return Problem(key, value, f"unknown setting '{name}'; {hint}see `pbdcloth settings` for "
                   "the list")


def _from_text(name: str, text: str) -> Any:
    """A command-line value converted to the kind of setting ``name`` (unchecked range)."""
    kind = setting(name).kind
    word = text.strip()
    if kind == KIND_FLOAT:
        return float(word)
    if kind == KIND_INT:
        return int(word)
    if kind == KIND_BOOL:
        if word.lower() in _TRUE:
            return True
        if word.lower() in _FALSE:
            return False
        raise ValueError("not true or false")
    if kind == KIND_VEC3:
        parts = word.replace(":", " ").split()
        if len(parts) != 3:
            raise ValueError("a vector is three numbers 'x y z'")
        return tuple(float(p) for p in parts)
    return word


def _check_values(key: str, name: str, values: Sequence[Any],
                  problems: list[Problem]) -> Axis | None:
    if not values:
        problems.append(Problem(key, [], "empty list: give at least one value"))
        return None
    checked: list[Any] = []
    ok = True
    for value in values:
        try:
            checked.append(setting(name).validate(value))
        except SettingsError as exc:
            problems.append(Problem(key, _plain(value),
                                    str(exc).replace(f"setting '{name}' ", "")))
            ok = False
    if not ok:
        return None
    seen: set[str] = set()
    for value in checked:
        text = value_text(value)
        if text in seen:
            problems.append(Problem(key, _plain(value), "appears twice in the list"))
            ok = False
        seen.add(text)
    return Axis(name, tuple(checked)) if ok else None


def parse_vary(texts: Sequence[str], problems: list[Problem]) -> list[Axis]:
    """Axes from ``--vary NAME=V1,V2,...`` texts; each bad one adds a :class:`Problem`."""
    axes: list[Axis] = []
    for text in texts:
        name, sep, rest = text.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            problems.append(Problem("--vary", text, "must be NAME=V1,V2,... "
                                    "(e.g. bend_stiffness=0.01,0.05,0.2)"))
            continue
        key = f"--vary {name}"
        if name not in _NAMES:
            problems.append(_unknown_name("--vary", text, name))
            continue
        words = rest.split(",") if rest.strip() else []
        values: list[Any] = []
        ok = True
        for word in words:
            try:
                values.append(_from_text(name, word))
            except ValueError:
                kind = setting(name).kind
                problems.append(Problem(key, word.strip(), f"is not a {kind} value"
                                        + (" (empty item between commas)" if not word.strip()
                                           else "")))
                ok = False
        if values or ok:
            axis = _check_values(key, name, values, problems)
            if axis is not None and ok:
                axes.append(axis)
    return axes


def table_axes(table: Any, problems: list[Problem]) -> tuple[list[Axis], bool | None]:
    """Axes and ``zip`` of a scene file's ``[wedge]`` table (see the module docstring)."""
    if not isinstance(table, dict):
        problems.append(Problem("wedge", table, "must be a table"))
        return [], None
    for key in table:
        if key not in ("vary", "zip"):
            close = difflib.get_close_matches(key, ("vary", "zip"), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(Problem(f"wedge.{key}", table[key],
                                    f"unknown key{hint} (valid: vary, zip)"))
    zipped = table.get("zip")
    if zipped is not None and not isinstance(zipped, bool):
        problems.append(Problem("wedge.zip", zipped, "must be true or false"))
        zipped = None
    vary = table.get("vary", {})
    if not isinstance(vary, dict):
        problems.append(Problem("wedge.vary", vary,
                                "must be a table of lists: NAME = [V1, V2, ...]"))
        return [], zipped
    axes = []
    for name, values in vary.items():
        key = f"wedge.vary.{name}"
        if name not in _NAMES:
            problems.append(_unknown_name(key, values, name))
            continue
        if not isinstance(values, list):
            problems.append(Problem(key, values, "must be a list of values [V1, V2, ...]"))
            continue
        axis = _check_values(key, name, values, problems)
        if axis is not None:
            axes.append(axis)
    return axes, zipped


def members(axes: Sequence[Axis], zipped: bool) -> list[Member]:
    """The members in index order: the product of the axes (the first outermost) or, zipped,
    the lists' i-th values together."""
    names = [a.name for a in axes]
    if zipped:
        rows: Any = zip(*(a.values for a in axes))
    else:
        rows = itertools.product(*(a.values for a in axes))
    return [Member(k, tuple(zip(names, row))) for k, row in enumerate(rows)]


def count_members(axes: Sequence[Axis], zipped: bool) -> int:
    if not axes:
        return 0
    if zipped:
        return min(len(a.values) for a in axes)
    n = 1
    for a in axes:
        n *= len(a.values)
    return n


def plan_wedge(scene: str | os.PathLike[str], vary: Sequence[str] = (),
               zipped: bool | None = None, out: str | os.PathLike[str] | None = None,
               frames: int | None = None, fmt: str | None = None,
               fixed: dict[str, Any] | None = None, yes: bool = False) -> WedgePlan:
    """Check everything and return the plan; raise :class:`WedgeError` listing every problem.

    Args:
        scene: the scene file.
        vary: ``NAME=V1,V2,...`` texts; when empty, the scene's ``[wedge]`` table is used.
        zipped: pair the lists instead of taking their product (None: the table's ``zip``,
            else False).
        out: the wedge's folder (default ``out/NAME_wedge``, relative to the current folder).
        frames, fmt: ``--frames`` and ``--format`` for every member.
        fixed: settings for every member (the command line's ``--substeps 40``).
        yes: allow more than :data:`MAX_MEMBERS` members.
    """
    source = Path(scene)
    fixed = dict(fixed or {})
    problems: list[Problem] = []
    data: dict[str, Any] = {}
    try:
        data = read_scene_file(source)
    except SceneFileError as exc:
        raise WedgeError(str(source), exc.problems) from None
    if vary:
        axes = parse_vary(vary, problems)
        table_zip = None
    elif "wedge" in data:
        axes, table_zip = table_axes(data["wedge"], problems)
    else:
        axes, table_zip = [], None
    use_zip = bool(zipped) if zipped is not None else bool(table_zip)
    if not axes and not problems:
        problems.append(Problem("--vary", "", "nothing to vary: give --vary NAME=V1,V2,... or "
                                "a [wedge.vary] table in the scene file"))
    seen: set[str] = set()
    for axis in axes:
        if axis.name in seen:
            problems.append(Problem(f"--vary {axis.name}", axis.name,
                                    "is varied twice: give one list per setting"))
        seen.add(axis.name)
        if axis.name in fixed:
            flag = "--" + axis.name.replace("_", "-")
            problems.append(Problem(flag, _plain(fixed[axis.name]),
                                    f"{axis.name} is both varied and fixed: drop one"))
    if use_zip and len({len(a.values) for a in axes}) > 1:
        lengths = ", ".join(f"{a.name}: {len(a.values)}" for a in axes)
        problems.append(Problem("--zip", lengths, "zipped lists must have the same length"))
    count = count_members(axes, use_zip)
    if count > MAX_MEMBERS and not yes:
        problems.append(Problem("--vary", count, f"{count} simulations is more than "
                                f"{MAX_MEMBERS}: add --yes to run them all"))
    spec: SceneSpec | None = None
    try:
        spec = load_scene(source, {"frames": frames, "format": fmt}, fixed)
    except SceneFileError as exc:
        problems += exc.problems
    planned = members(axes, use_zip) if not problems else []
    if spec is not None:
        for member in planned:
            try:
                spec.settings.replace(**member.settings())
            except SettingsError as exc:
                problems.append(Problem(member.name, member.plain(), str(exc)))
    if problems or spec is None:
        raise WedgeError(str(source), problems)
    folder = Path(out) if out is not None else Path("out") / f"{spec.name}_wedge"
    return WedgePlan(scene=source.resolve(), out=folder.resolve(), axes=list(axes),
                     zip=use_zip, frames=frames, format=fmt, fixed=fixed, members=planned,
                     spec=spec)

