"""Scene files: a whole simulation described in TOML, checked in full before it runs.

A scene file has these tables (every one optional except ``[mesh]``)::

    [scene]        name, description, frames, start_frame, fps
    [mesh]         file = "shirt.obj" (OBJ, .geo, USD; prim = "/shirt" for USD), scale, translate
                   or grid = { nx, ny, width, height, plane = "xz" | "xy", origin = [x, y, z] }
    [pins]         indices = [...], box = { min = [..], max = [..] } (or a list of boxes),
                   group = "name" (a USD GeomSubset or a .geo point group), [[pins.keys]]
    [[colliders]]  type = "plane" | "sphere" | "capsule" | "mesh" | "vdb", its shape keys,
                   [[colliders.keys]] frame = F, translate = [x, y, z]
    [settings]     any cloth setting (see ``pbdcloth settings``); preset = "denim" starts from a
                   fabric preset (pbdcloth.presets) that the other keys override
    [attributes]   per-point attributes (pbdcloth.cloth.attributes): NAME = 0.5 (every point),
                   [v0, v1, ...] (one per point) or { file = "shirt.usd", primvar = "bendScale" }
                   ({ attribute = "..." } for a .geo point attribute; file defaults to the mesh's)
    [stitches]     pairs = [[i, j], ...], rest = 0.0 (or one per pair) [m], speed = 1.0 [m/s]
    [output]       dir, name, format = "usd" | "geo" | "obj", normals, velocities
    [postprocess]  smooth_iterations, smooth_lambda, smooth_mu, shell_thickness, centred
    [wedge]        zip, [wedge.vary] NAME = [V1, V2, ...]: read by ``pbdcloth wedge`` only
                   (:mod:`pbdcloth.pipeline.wedge.plan`); a simulation ignores it

Lengths are metres, times seconds, Y is up. Relative file names in the file (inputs and
``[output] dir``) are relative to the scene file; the default output folder ``out/NAME`` and the
command line's ``--out`` are relative to the current directory.
Keyframed motion (``keys``) moves a collider or the pins by a translation interpolated linearly
between keys and held before the first and after the last; pins move relative to where they are
at the start frame.

:func:`load_scene` reads and checks everything (syntax, kinds, ranges, files, mesh validity,
pin indices, groups, settings) and raises one :class:`SceneFileError` listing *every* problem with
its key and value, so a broken file is fixed in one go.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arrays import MAX_COORDINATE
from ..cloth.mesh import ClothMesh, MeshError
from ..colliders import Capsule, Collider, MeshCollider, Plane, SdfSequence, Sphere
from ..io.cache import CACHE_FORMATS, CacheFormat
from ..io.meshseq import expand_frame
from ..presets import preset
from ..scenes.cloth import Scene
from ..settings import CLOTH_SETTINGS, Choice, ClothSettings, SettingsError, setting
from ..solver import MAX_DT, MIN_DT, ClothSolver
from .postprocess import TAUBIN_LAMBDA, TAUBIN_MU, PostprocessOptions

F = NDArray[np.float64]

class ColliderType(Choice):
    """The ``type`` of a ``[[colliders]]`` entry."""

    PLANE = "plane"
    SPHERE = "sphere"
    CAPSULE = "capsule"
    MESH = "mesh"
    """A closed polygon mesh, turned into an OpenVDB level set."""
    VDB = "vdb"
    """A level set read from a ``.vdb`` file."""


class MeshMethod(Choice):
    """How a ``type = "mesh"`` collider collides: the ``method`` of its entry."""

    TRIANGLES = "triangles"
    """Its triangles, every frame (a MeshCollider; the mesh may deform, ``$F`` sequences)."""
    SDF = "sdf"
    """An OpenVDB level set built once from the mesh (rigid; ``keys`` move it)."""


FORMATS = CACHE_FORMATS
COLLIDER_TYPES = tuple(ColliderType)
_MISSING = object()


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a scene file: where (dotted key), what was there, and why it is wrong."""

    key: str
    value: Any
    message: str

    def __str__(self) -> str:
        if self.value is _MISSING:
            return f"{self.key}: {self.message}"
        return f"{self.key} = {_show(self.value)}: {self.message}"


def _finite(value: int | float) -> bool:
    """True for every int (even beyond float range) and for finite floats."""
    return isinstance(value, int) or math.isfinite(value)


def _show(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ProblemsError(ValueError):
    """Every problem of one input at once: ``problems`` lists them, ``source`` names the input,
    and the message has a heading line and one indented line per problem."""

    what = "in"

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = list(problems)
        count = len(self.problems)
        lines = [f"{count} problem{'s' if count != 1 else ''} {self.what} {source}:"]
        lines += [f"  {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class SceneFileError(ProblemsError):
    """A scene file has problems; ``problems`` lists all of them."""


# ------------------------------------------------------------------------------------------
# the checked scene
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Motion:
    """Keyframed translation: ``frames`` (K,) increasing, ``translate`` (K, 3) [m]."""

    frames: F
    translate: F

    def offset(self, frame: float) -> F:
        """Translation at ``frame``: linear between keys, held outside them, shape (3,) [m]."""
        return np.array([np.interp(float(frame), self.frames, self.translate[:, k])
                         for k in range(3)])

    def to_json(self) -> list[list[float]]:
        return [[float(f), *map(float, t)] for f, t in zip(self.frames, self.translate)]


@dataclass(frozen=True)
class ColliderSpec:
    """A collider as declared: its type, shape parameters (metres), motion and key path."""

    kind: ColliderType
    params: dict[str, Any]
    motion: Motion | None
    key: str
    _sdf: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The level set, built once (validation) and shared by every collider made from it."""

    def build(self, frame: float) -> Collider:
        """The collider at its pose for ``frame``."""
        off = self.motion.offset(frame) if self.motion is not None else np.zeros(3)
        p = self.params
        if self.kind == ColliderType.PLANE:
            return Plane(np.asarray(p["point"]) + off, p["normal"])
        if self.kind == ColliderType.SPHERE:
            return Sphere(np.asarray(p["center"]) + off, p["radius"])
        if self.kind == ColliderType.CAPSULE:
            return Capsule(np.asarray(p["a"]) + off, np.asarray(p["b"]) + off, p["radius"])
        if self.kind == ColliderType.MESH and p["method"] == MeshMethod.TRIANGLES:
            return _build_triangles(self, int(frame))
        if self.sequence:
            return _build_sdf_sequence(self, int(frame))
        return _build_sdf(self, off)

    @property
    def sequence(self) -> bool:
        """The file name holds ``$F``: one file per frame."""
        from ..io.meshseq import is_sequence

        return isinstance(self.params.get("file"), Path) and is_sequence(str(self.params["file"]))

    def missing_frame(self, first: int, last: int) -> int | None:
        """For a mesh sequence: the first frame in [first, last] without its file."""
        if not self.sequence and not (self.kind == ColliderType.MESH
                                      and self.params["method"] == MeshMethod.TRIANGLES):
            return None
        from ..io.meshseq import MeshSequence

        return MeshSequence(self.params["file"]).missing(first, last)

    def move(self, collider: Collider, frame: float) -> None:
        """Set ``collider``'s end-of-frame pose to this spec's pose at ``frame``."""
        if self.motion is None or isinstance(collider, (MeshCollider, SdfSequence)):
            return  # colliders with a frame source read their frames (and keys) themselves
        off = self.motion.offset(frame)
        p = self.params
        if isinstance(collider, Plane):
            collider.move_to(np.asarray(p["point"]) + off)
        elif isinstance(collider, Sphere):
            collider.move_to(np.asarray(p["center"]) + off)
        elif isinstance(collider, Capsule):
            collider.move_to(np.asarray(p["a"]) + off, np.asarray(p["b"]) + off)
        else:
            collider.move_to(_translation(off))  # type: ignore[attr-defined]

    def to_json(self) -> dict[str, Any]:
        out = {"type": self.kind, **{k: _plain(v) for k, v in self.params.items()},
               "keys": self.motion.to_json() if self.motion else None}
        if isinstance(self.params.get("file"), Path) and self.params["file"].is_file():
            out["file_sha256"] = hashlib.sha256(self.params["file"].read_bytes()).hexdigest()
        return out


def _translation(offset: F) -> F:
    """4 x 4 matrix (column vectors) translating by ``offset`` [m]."""
    m = np.eye(4)
    m[:3, 3] = offset
    return m


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return value


def _sequence_pattern(check: _Checker, name: str, where: str, suffixes: Sequence[str]
                      ) -> Path | None:
    """A ``$F`` file pattern, relative to the scene file (frames are checked once the frame
    range is known)."""
    path = Path(name) if os.path.isabs(name) else check.base / name
    if path.suffix.lower() not in suffixes:
        check.add(f"{where}file", name, f"must be a {' / '.join(suffixes)} file")
        return None
    return path


def _build_triangles(spec: ColliderSpec, frame: int) -> Collider:
    """A :class:`~pbdcloth.colliders.mesh.MeshCollider` reading its vertices frame by frame
    from the file (a ``$F`` sequence or a time-sampled USD mesh), moved by ``keys``."""
    from ..io.meshseq import MeshSequence

    p = spec.params
    seq = MeshSequence(p["file"], p.get("prim") or None)
    motion = spec.motion

    def vertices(f: int) -> F:
        v = seq.read(f)
        return v + motion.offset(f) if motion is not None else v

    start = vertices(frame)
    assert seq.triangles is not None
    return MeshCollider(start, seq.triangles, frames=vertices, first_frame=frame,
                        name=f"{spec.key} ({Path(p['file']).name})")


def _build_sdf_sequence(spec: ColliderSpec, frame: int) -> Collider:
    """A :class:`~pbdcloth.colliders.sdf_sequence.SdfSequence`: one level set per frame, from
    ``.vdb`` files or from a mesh sequence converted per frame by OpenVDB (its mesh then gives
    the surface's motion), moved by ``keys``."""
    from ..colliders.sdf import SdfCollider
    from ..io.meshseq import MeshSequence, expand_frame

    p = spec.params
    motion = spec.motion

    def offset(f: int) -> F:
        return motion.offset(f) if motion is not None else np.zeros(3)

    name = f"{spec.key} ({Path(p['file']).name})"
    if spec.kind == ColliderType.VDB:
        def level_set(f: int) -> SdfCollider:
            made = SdfCollider.from_vdb(expand_frame(str(p["file"]), f), p.get("grid") or None)
            if np.any(offset(f) != 0.0):
                made.move_to(_translation(offset(f)))
                made.end_frame()
            return made

        return SdfSequence(level_set, frame, name=name)
    seq = MeshSequence(p["file"], p.get("prim") or None)

    def vertices(f: int) -> F:
        return seq.read(f) + offset(f)

    vertices(frame)
    assert seq.triangles is not None
    return SdfSequence.from_mesh_frames(seq.triangles, vertices, p["voxel_size"],
                                        p["half_width"], frame, name)


def _build_sdf(spec: ColliderSpec, offset: F) -> Collider:
    """A level-set collider from a closed mesh (OpenVDB mesh-to-level-set, like Houdini's VDB
    from Polygons) or a ``.vdb`` file; the level set is built once per spec."""
    try:
        from ..colliders.sdf import SdfCollider
    except ImportError as exc:
        raise SceneFileError(spec.key, [Problem(
            f"{spec.key}.type", spec.kind,
            f"'{spec.kind}' colliders need SdfCollider (pbdcloth.colliders.sdf), which this "
            f"installation lacks ({exc})")]) from None
    p = spec.params
    if "collider" not in spec._sdf:
        if spec.kind == ColliderType.MESH:
            from ..cloth.mesh import triangulate
            from ..io.meshfile import read_mesh

            mesh = read_mesh(p["file"], p.get("prim") or None)
            spec._sdf["collider"] = SdfCollider.from_mesh(
                mesh.positions, triangulate(mesh.faces), voxel_size=p["voxel_size"],
                half_width=p["half_width"])
        else:
            spec._sdf["collider"] = SdfCollider.from_vdb(p["file"], p.get("grid") or None)
    made = spec._sdf["collider"]
    collider = SdfCollider(made.grid, made.base, made.source)
    if np.any(offset != 0.0):
        collider.move_to(_translation(offset))
        collider.end_frame()
    return collider


@dataclass(frozen=True)
class OutputSpec:
    """Where and how the cache is written."""

    dir: Path
    name: str = "cloth"
    format: str = CacheFormat.OBJ  # a CacheFormat (a str)
    normals: bool = True
    velocities: bool = True


@dataclass
class SceneSpec:
    """A checked scene: everything needed to build and run the simulation.

    Attributes:
        positions: cloth rest (and start) positions [m], shape (N, 3).
        triangles: the cloth's triangles, shape (T, 3).
        pinned: sorted indices of pinned points, shape (P,).
        frames: number of frames written; frame ``start_frame`` is the start state and each
            later frame one step of 1 / fps seconds further.
    """

    name: str
    description: str
    source: Path | None
    positions: F
    triangles: NDArray[np.int64]
    pinned: NDArray[np.int64]
    pin_motion: Motion | None
    colliders: list[ColliderSpec]
    settings: ClothSettings
    frames: int
    start_frame: int
    fps: float
    output: OutputSpec
    postprocess: PostprocessOptions = field(default_factory=PostprocessOptions)
    faces: list[list[int]] | None = None
    """The mesh file's polygons when they are not all triangles (the caches write them; the
    solver works on ``triangles``, their fan triangulation); None: ``triangles``."""
    point_attributes: dict[str, F] | None = None
    """Per-point attributes by name, (N,) each (the ``[attributes]`` table), or None."""
    stitches: Any = None
    """The ``[stitches]`` table as a :class:`~pbdcloth.cloth.stitches.Stitches`, or None."""

    @property
    def last_frame(self) -> int:
        return self.start_frame + self.frames - 1

    def scene(self) -> Scene:
        """The scene as a recipe: the cloth at the start frame, colliders at their start-frame
        pose, :meth:`animate` as its animation, ``frames - 1`` steps of 1 / fps."""
        return Scene(self.name, self.description, positions=self.positions,
                     triangles=self.triangles, pinned=self.pinned, settings=self.settings,
                     colliders=[c.build(self.start_frame) for c in self.colliders],
                     frames=self.frames - 1, fps=self.fps, animate=self.animate,
                     point_attributes=self.point_attributes, stitches=self.stitches)

    def pin_targets(self, frame: float) -> F:
        """Where the pins are at ``frame`` [m], shape (P, 3), in sorted pin order."""
        rest = self.positions[self.pinned]
        if self.pin_motion is None:
            return rest.copy()
        return rest + (self.pin_motion.offset(frame) - self.pin_motion.offset(self.start_frame))

    def animate(self, solver: ClothSolver, frame: int) -> None:
        """Set the controls for the step that ends at ``frame``: pin targets, collider poses.

        The keyed pin motion moves every pin of the solver: the ``[pins]`` points and those
        that a ``pin_weight`` attribute pins, hard or soft."""
        if self.pin_motion is not None and (self.pinned.size or solver.soft_pinned.size
                                            or solver.pinned.size):
            if solver.pinned.size == self.pinned.size and not solver.soft_pinned.size:
                solver.set_pin_targets(self.pin_targets(frame))
            else:
                shift = self.pin_motion.offset(frame) - self.pin_motion.offset(self.start_frame)
                solver.set_pin_targets(self.positions + shift)
        for spec, collider in zip(self.colliders, solver.colliders):
            spec.move(collider, frame)

    def restore_controls(self, solver: ClothSolver, frame: int) -> None:
        """Put the colliders where they are at the end of ``frame`` (for resuming there)."""
        for spec, collider in zip(self.colliders, solver.colliders):
            if isinstance(collider, (MeshCollider, SdfSequence)):
                collider.seek(frame)
            elif spec.motion is not None:
                spec.move(collider, frame)
                collider.end_frame()

    def digest(self) -> str:
        """Fingerprint of everything that determines the cached frames (not their count)."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.positions).tobytes())
        h.update(np.ascontiguousarray(self.triangles).tobytes())
        h.update(np.ascontiguousarray(self.pinned).tobytes())
        meta = {
            "settings": self.settings.to_dict(), "fps": self.fps, "start": self.start_frame,
            "pin_motion": self.pin_motion.to_json() if self.pin_motion else None,
            "colliders": [c.to_json() for c in self.colliders],
            "output": [self.output.name, self.output.format, self.output.normals,
                       self.output.velocities],
            "postprocess": [self.postprocess.smooth_iterations, self.postprocess.thickness,
                            self.postprocess.lam, self.postprocess.mu, self.postprocess.centred],
        }
        h.update(json.dumps(meta, sort_keys=True, default=str).encode())
        for name, values in sorted((self.point_attributes or {}).items()):
            h.update(name.encode() + np.ascontiguousarray(values).tobytes())
        if self.stitches is not None:
            st = self.stitches
            h.update(np.ascontiguousarray(st.pairs).tobytes() + np.ascontiguousarray(
                st.rest).tobytes() + repr(float(st.speed)).encode())
            if not np.all(np.isinf(np.asarray(st.break_length, dtype=np.float64))):
                h.update(np.ascontiguousarray(st.break_length, dtype=np.float64).tobytes())
        return h.hexdigest()

    def summary_lines(self) -> list[str]:
        kinds = ", ".join(c.kind for c in self.colliders) or "none"
        out = self.output
        return [
            f"scene      {self.name}",
            (f"cloth      {self.positions.shape[0]} points, {self.triangles.shape[0]} "
             f"triangles, {self.pinned.size} pinned"),
            f"colliders  {len(self.colliders)} ({kinds})",
            f"frames     {self.start_frame}-{self.last_frame} at {self.fps:g} fps",
            (f"settings   {self.settings.model}, {self.settings.substeps} substeps x "
             f"{self.settings.iterations} iterations"),
            f"output     {out.dir / out.name} ({out.format})",
        ] + self._attribute_lines()

    def _attribute_lines(self) -> list[str]:
        """A line for the per-point attributes and one for the stitches, when there are any."""
        lines = []
        if self.point_attributes:
            lines.append(f"attributes {', '.join(sorted(self.point_attributes))}")
        if self.stitches is not None:
            count = int(np.asarray(self.stitches.pairs).reshape(-1, 2).shape[0])
            lines.append(f"stitches   {count}, closing at {float(self.stitches.speed):g} m/s")
        return lines


# ------------------------------------------------------------------------------------------
# checking
# ------------------------------------------------------------------------------------------
class _Checker:
    """Reads values out of the TOML tables, recording a :class:`Problem` for each bad one."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.problems: list[Problem] = []

    def add(self, key: str, value: Any, message: str) -> None:
        self.problems.append(Problem(key, value, message))

    def table(self, data: dict[str, Any], name: str, where: str = "") -> dict[str, Any]:
        value = data.get(name, {})
        key = f"{where}{name}"
        if not isinstance(value, dict):
            self.add(key, value, "must be a table")
            return {}
        return value

    def unknown(self, table: dict[str, Any], allowed: Sequence[str], where: str) -> None:
        for name, value in table.items():
            if name not in allowed:
                close = difflib.get_close_matches(name, allowed, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                self.add(f"{where}{name}", value,
                         f"unknown key{hint} (valid: {', '.join(allowed)})")

    def _absent(self, key: str, value: Any, default: Any, required: str = "is required") -> bool:
        """True when the key is not in its table; a key without a default is then reported."""
        if value is not _MISSING:
            return False
        if default is _MISSING:
            self.add(key, _MISSING, required)
        return True

    def number(self, table: dict[str, Any], name: str, where: str, default: Any = _MISSING,
               minimum: float | None = None, maximum: float | None = None,
               integer: bool = False, exclusive_min: bool = False, unit: str = "") -> Any:
        key = f"{where}{name}"
        value = table.get(name, _MISSING)
        if self._absent(key, value, default):
            return None if default is _MISSING else default
        what = "a whole number" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                integer and not isinstance(value, int)):
            self.add(key, value, f"must be {what}")
            return None
        if not _finite(value):
            self.add(key, value, "must be finite")
            return None
        u = f" {unit}" if unit else ""
        if minimum is not None and (value < minimum or (exclusive_min and value == minimum)):
            rel = ">" if exclusive_min else ">="
            self.add(key, value, f"must be {rel} {minimum:g}{u}")
            return None
        if maximum is not None and value > maximum:
            self.add(key, value, f"must be <= {maximum:g}{u}")
            return None
        return int(value) if integer else float(value)

    def vec3(self, table: dict[str, Any], name: str, where: str,
             default: Any = _MISSING) -> F | None:
        key = f"{where}{name}"
        value = table.get(name, _MISSING)
        if self._absent(key, value, default, "is required (three numbers [x, y, z])"):
            return None if default is _MISSING else np.asarray(default, dtype=np.float64)
        if (not isinstance(value, list) or len(value) != 3 or any(
                isinstance(c, bool) or not isinstance(c, (int, float)) or not _finite(c)
                or abs(c) > MAX_COORDINATE for c in value)):
            self.add(key, value, f"must be three finite numbers [x, y, z] within "
                     f"+-{MAX_COORDINATE:g}")
            return None
        return np.asarray(value, dtype=np.float64)

    def text(self, table: dict[str, Any], name: str, where: str, default: Any = _MISSING,
             choices: Sequence[str] | None = None) -> Any:
        key = f"{where}{name}"
        value = table.get(name, _MISSING)
        if self._absent(key, value, default):
            return None if default is _MISSING else default
        if not isinstance(value, str):
            self.add(key, value, "must be text")
            return None
        if choices is not None and value not in choices:
            self.add(key, value, f"must be one of {', '.join(choices)}")
            return None
        return value

    def flag(self, table: dict[str, Any], name: str, where: str, default: bool) -> bool:
        value = table.get(name, default)
        if not isinstance(value, bool):
            self.add(f"{where}{name}", value, "must be true or false")
            return default
        return value

    def file(self, table: dict[str, Any], name: str, where: str,
             suffixes: Sequence[str]) -> Path | None:
        text = self.text(table, name, where)
        if text is None:
            return None
        path = Path(text) if os.path.isabs(text) else self.base / text
        if path.suffix.lower() not in suffixes:
            self.add(f"{where}{name}", text, f"must be a {' / '.join(suffixes)} file")
            return None
        if not path.is_file():
            self.add(f"{where}{name}", text, f"file not found ({path})")
            return None
        return path

    def motion(self, table: dict[str, Any], where: str) -> Motion | None:
        keys = table.get("keys", _MISSING)
        if keys is _MISSING:
            return None
        if not isinstance(keys, list) or not keys or not all(isinstance(k, dict) for k in keys):
            self.add(f"{where}keys", keys, "must be a list of tables {frame, translate}")
            return None
        frames: list[float] = []
        moves: list[F] = []
        for i, k in enumerate(keys):
            w = f"{where}keys[{i}]."
            self.unknown(k, ("frame", "translate"), w)
            f = self.number(k, "frame", w)
            t = self.vec3(k, "translate", w)
            if f is None or t is None:
                continue
            if frames and f <= frames[-1]:
                self.add(f"{w}frame", k["frame"], "key frames must increase")
                continue
            frames.append(f)
            moves.append(t)
        if len(frames) != len(keys):
            return None
        return Motion(np.asarray(frames, dtype=np.float64), np.asarray(moves))


def _read_settings(check: _Checker, table: dict[str, Any],
                   overrides: dict[str, Any]) -> ClothSettings | None:
    names = [d.name for d in CLOTH_SETTINGS]
    values: dict[str, Any] = {}
    ok = True
    if "preset" in table:
        table = dict(table)
        name = table.pop("preset")
        try:
            values.update(preset(name).settings())
        except SettingsError as exc:
            check.add("settings.preset", name, str(exc))
            ok = False
    for name, value in table.items():
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            check.add(f"settings.{name}", value,
                      f"unknown setting; {hint}see `pbdcloth settings` for the list")
            ok = False
            continue
        try:
            values[name] = setting(name).validate(value)
        except SettingsError as exc:
            check.add(f"settings.{name}", value, str(exc).replace(f"setting '{name}' ", ""))
            ok = False
    for name, value in overrides.items():
        try:
            values[name] = setting(name).validate(value)
        except (SettingsError, KeyError) as exc:
            check.add(f"--{name.replace('_', '-')}", value, str(exc))
            ok = False
    if not ok:
        return None
    try:
        return ClothSettings.from_dict(values)
    except SettingsError as exc:  # pragma: no cover - every value was validated above
        check.add("settings", values, str(exc))
        return None


def _read_mesh(check: _Checker, table: dict[str, Any]
               ) -> tuple[F, NDArray[np.int64], dict[str, NDArray[np.int64]],
                          list[list[int]] | None] | None:
    from ..io.meshfile import MESH_SUFFIXES, read_mesh
    from ..scenes.cloth import grid

    where = "mesh."
    check.unknown(table, ("file", "prim", "grid", "scale", "translate"), where)
    scale = check.number(table, "scale", where, 1.0, minimum=0.0, exclusive_min=True)
    move = check.vec3(table, "translate", where, (0.0, 0.0, 0.0))
    has_file, has_grid = "file" in table, "grid" in table
    if has_file == has_grid:
        check.add("mesh", table, "give exactly one of 'file' or 'grid'")
        return None
    groups: dict[str, NDArray[np.int64]] = {}
    faces: Any
    if has_file:
        path = check.file(table, "file", where, MESH_SUFFIXES)
        prim = check.text(table, "prim", where, None)
        if path is None:
            return None
        try:
            mesh = read_mesh(path, prim)
        except (MeshError, ValueError) as exc:
            check.add(f"{where}file", table["file"], str(exc))
            return None
        positions, faces, groups = mesh.positions, mesh.faces, mesh.groups
    else:
        g = table["grid"]
        if not isinstance(g, dict):
            check.add(f"{where}grid", g, "must be a table {nx, ny, width, height, plane, origin}")
            return None
        w = f"{where}grid."
        check.unknown(g, ("nx", "ny", "width", "height", "plane", "origin"), w)
        nx = check.number(g, "nx", w, minimum=2, maximum=2000, integer=True)
        ny = check.number(g, "ny", w, minimum=2, maximum=2000, integer=True)
        width = check.number(g, "width", w, 1.0, minimum=0.0, exclusive_min=True, unit="m")
        height = check.number(g, "height", w, 1.0, minimum=0.0, exclusive_min=True, unit="m")
        plane = check.text(g, "plane", w, "xz", choices=("xz", "xy"))
        origin = check.vec3(g, "origin", w, (0.0, 0.0, 0.0))
        if None in (nx, ny, width, height, plane) or origin is None:
            return None
        positions, tris = grid(nx, ny, width, height, plane=plane, origin=tuple(origin))
        faces = tris
    if scale is None or move is None:
        return None
    positions = np.asarray(positions, dtype=np.float64) * scale + move
    try:
        mesh_ok = ClothMesh.from_arrays(positions, faces)
    except MeshError as exc:
        check.add("mesh", table.get("file", table.get("grid")), str(exc))
        return None
    polygons = None
    if not isinstance(faces, np.ndarray) and any(len(f) != 3 for f in faces):
        polygons = [[int(i) for i in f] for f in faces]
    return mesh_ok.positions, mesh_ok.triangles, groups, polygons


def _read_pins(check: _Checker, table: dict[str, Any], positions: F | None,
               groups: dict[str, NDArray[np.int64]]) -> tuple[NDArray[np.int64], Motion | None]:
    where = "pins."
    check.unknown(table, ("indices", "box", "group", "keys"), where)
    chosen: list[NDArray[np.int64]] = []
    n = positions.shape[0] if positions is not None else None
    if "indices" in table:
        idx = table["indices"]
        if not isinstance(idx, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                for i in idx):
            check.add(f"{where}indices", idx, "must be a list of whole numbers (point indices)")
        elif n is not None:
            bad = [i for i in idx if not 0 <= i < n]
            if bad:
                check.add(f"{where}indices", idx,
                          f"point indices {bad[:8]} are outside [0, {n - 1}]")
            else:
                chosen.append(np.asarray(idx, dtype=np.int64))
    if "box" in table:
        boxes = table["box"] if isinstance(table["box"], list) else [table["box"]]
        for b, box in enumerate(boxes):
            w = f"{where}box" + (f"[{b}]." if isinstance(table["box"], list) else ".")
            if not isinstance(box, dict):
                check.add(w.rstrip("."), box, "must be a table {min = [x, y, z], max = [x, y, z]}")
                continue
            check.unknown(box, ("min", "max"), w)
            lo, hi = check.vec3(box, "min", w), check.vec3(box, "max", w)
            if lo is None or hi is None:
                continue
            if np.any(lo > hi):
                check.add(w.rstrip("."), box, "min must not exceed max in any axis")
                continue
            if positions is not None:
                inside = np.flatnonzero(np.all((positions >= lo) & (positions <= hi), axis=1))
                if inside.size == 0:
                    check.add(w.rstrip("."), box, "the box holds no cloth point")
                chosen.append(inside.astype(np.int64))
    if "group" in table:
        names = table["group"] if isinstance(table["group"], list) else [table["group"]]
        for name in names:
            if not isinstance(name, str):
                check.add(f"{where}group", table["group"], "must be a group name (text)")
            elif positions is not None and name not in groups:
                have = ", ".join(sorted(groups)) or "none"
                check.add(f"{where}group", name,
                          f"no such point group in the mesh file (groups: {have})")
            elif name in groups:
                chosen.append(groups[name])
    motion = check.motion(table, where)
    pinned = np.unique(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    if motion is not None and "indices" not in table and "box" not in table \
            and "group" not in table:
        check.add(f"{where}keys", table["keys"], "moves no pins: give indices, box or group")
    return pinned.astype(np.int64), motion


_COLLIDER_KEYS = {
    "plane": ("point", "normal"),
    "sphere": ("center", "radius"),
    "capsule": ("a", "b", "radius"),
    "mesh": ("file", "prim", "method", "voxel_size", "half_width"),
    "vdb": ("file", "grid"),
}


def _read_collider(check: _Checker, entry: Any, i: int) -> ColliderSpec | None:
    key = f"colliders[{i}]"
    where = key + "."
    if not isinstance(entry, dict):
        check.add(key, entry, "must be a table with a 'type'")
        return None
    kind = check.text(entry, "type", where, choices=COLLIDER_TYPES)
    if kind is None:
        return None
    check.unknown(entry, ("type", "name", "keys", *_COLLIDER_KEYS[kind]), where)
    params: dict[str, Any] = {}
    if kind == ColliderType.PLANE:
        params["point"] = check.vec3(entry, "point", where, (0.0, 0.0, 0.0))
        params["normal"] = check.vec3(entry, "normal", where, (0.0, 1.0, 0.0))
        if params["normal"] is not None and not np.any(params["normal"] != 0.0):
            check.add(f"{where}normal", entry.get("normal"), "must not be zero")
            params["normal"] = None
    elif kind == ColliderType.SPHERE:
        params["center"] = check.vec3(entry, "center", where)
        params["radius"] = check.number(entry, "radius", where, minimum=0.0,
                                        maximum=MAX_COORDINATE, exclusive_min=True, unit="m")
    elif kind == ColliderType.CAPSULE:
        params["a"] = check.vec3(entry, "a", where)
        params["b"] = check.vec3(entry, "b", where)
        params["radius"] = check.number(entry, "radius", where, minimum=0.0,
                                        maximum=MAX_COORDINATE, exclusive_min=True, unit="m")
    elif kind == ColliderType.MESH:
        from ..io.meshfile import MESH_SUFFIXES
        from ..io.meshseq import is_sequence

        params["method"] = check.text(entry, "method", where, MeshMethod.SDF,
                                      choices=tuple(MeshMethod))
        name = entry.get("file")
        if isinstance(name, str) and is_sequence(name):
            params["file"] = _sequence_pattern(check, name, where, MESH_SUFFIXES)
        else:
            params["file"] = check.file(entry, "file", where, MESH_SUFFIXES)
        params["prim"] = check.text(entry, "prim", where, "")
        if params["method"] == MeshMethod.TRIANGLES:
            for extra in ("voxel_size", "half_width"):
                if extra in entry:
                    check.add(f"{where}{extra}", entry[extra], "applies to method = 'sdf' only")
        else:
            params["voxel_size"] = check.number(entry, "voxel_size", where, minimum=0.0,
                                                maximum=MAX_COORDINATE, exclusive_min=True,
                                                unit="m")
            params["half_width"] = check.number(entry, "half_width", where, 3.0, minimum=1.0,
                                                maximum=100.0, unit="voxels")
    else:
        from ..io.meshseq import is_sequence

        name = entry.get("file")
        if isinstance(name, str) and is_sequence(name):
            params["file"] = _sequence_pattern(check, name, where, (".vdb",))
        else:
            params["file"] = check.file(entry, "file", where, (".vdb",))
        params["grid"] = check.text(entry, "grid", where, "")
    motion = check.motion(entry, where)
    if any(v is None for v in params.values()):
        return None
    if kind == ColliderType.VDB or (kind == ColliderType.MESH
                                    and params["method"] == MeshMethod.SDF):
        try:
            from ..colliders.sdf import SdfCollider  # noqa: F401
        except ImportError:
            check.add(f"{where}type", kind,
                      f"'{kind}' colliders need SdfCollider (pbdcloth.colliders.sdf), which "
                      "this installation lacks")
            return None
    return ColliderSpec(kind=ColliderType(kind), params=params, motion=motion, key=key)


def _read_output(check: _Checker, table: dict[str, Any], name: str) -> OutputSpec | None:
    where = "output."
    check.unknown(table, ("dir", "name", "format", "normals", "velocities"), where)
    folder = check.text(table, "dir", where, f"out/{name}")
    stem = check.text(table, "name", where, "cloth")
    fmt = check.text(table, "format", where, "obj", choices=FORMATS)
    normals = check.flag(table, "normals", where, True)
    velocities = check.flag(table, "velocities", where, True)
    if stem is not None and (not stem or any(c in stem for c in "/\\:$#{}") or stem[0] == "."):
        check.add(f"{where}name", stem, "must be a plain file name (no folders, '$', '#')")
        stem = None
    if folder is None or stem is None or fmt is None:
        return None
    # A folder named in the file is relative to the file, like every path in it; the default
    # (out/NAME) and --out are relative to the current directory.
    folder_path = Path(folder)
    if "dir" in table and not folder_path.is_absolute():
        folder_path = check.base / folder_path
    return OutputSpec(dir=folder_path, name=stem, format=CacheFormat(fmt), normals=normals,
                      velocities=velocities)


def _read_postprocess(check: _Checker, table: dict[str, Any]) -> PostprocessOptions | None:
    where = "postprocess."
    check.unknown(table, ("smooth_iterations", "smooth_lambda", "smooth_mu", "shell_thickness",
                          "centred"), where)
    it = check.number(table, "smooth_iterations", where, 0, minimum=0, maximum=10000,
                      integer=True)
    lam = check.number(table, "smooth_lambda", where, TAUBIN_LAMBDA, minimum=0.0, maximum=1.0,
                       exclusive_min=True)
    mu = check.number(table, "smooth_mu", where, TAUBIN_MU, minimum=-1.0, maximum=0.0)
    width = check.number(table, "shell_thickness", where, 0.0, minimum=0.0, maximum=1.0,
                         unit="m")
    centred = check.flag(table, "centred", where, True)
    if lam is not None and mu is not None and not mu < -lam:
        check.add(f"{where}smooth_mu", mu,
                  f"must be below -smooth_lambda = {-lam:g} (Taubin: the mu step must inflate "
                  "more than the lambda step shrinks)")
        return None
    if None in (it, lam, mu, width):
        return None
    return PostprocessOptions(smooth_iterations=it, thickness=width, lam=lam, mu=mu,
                              centred=centred)


def _attribute_source(check: _Checker, entry: dict[str, Any], key: str,
                      mesh_table: dict[str, Any]) -> Any:
    """The values of ``{ file, prim, primvar | attribute }``: a point attribute or primvar of a
    mesh file (the ``[mesh]`` file when ``file`` is not given); None after a problem."""
    from ..io.meshfile import MESH_SUFFIXES, read_mesh

    where = key + "."
    check.unknown(entry, ("file", "prim", "primvar", "attribute"), where)
    names = [entry[k] for k in ("primvar", "attribute") if k in entry]
    if len(names) != 1 or not isinstance(names[0], str):
        check.add(key, entry, "give one of 'primvar' (USD) or 'attribute' (.geo): the name of "
                  "the values in the file")
        return None
    if "file" in entry:
        path = check.file(entry, "file", where, MESH_SUFFIXES)
        prim = check.text(entry, "prim", where, None)
    elif "file" in mesh_table and isinstance(mesh_table["file"], str):
        text = mesh_table["file"]
        path = Path(text) if os.path.isabs(text) else check.base / text
        prim = entry.get("prim", mesh_table.get("prim"))
    else:
        check.add(key, entry, "needs a 'file' (the mesh is a grid, not a file)")
        return None
    if path is None:
        return None
    try:
        found = read_mesh(path, prim if isinstance(prim, str) else None).attributes
    except (MeshError, ValueError, OSError) as exc:
        check.add(f"{where}file", str(path), str(exc))
        return None
    if names[0] not in found:
        have = ", ".join(sorted(found)) or "none"
        check.add(key, names[0], f"no such one-value-per-point attribute in {path.name} "
                  f"(it has: {have})")
        return None
    return found[names[0]]


def _read_attributes(check: _Checker, table: dict[str, Any], mesh_table: dict[str, Any],
                     positions: F | None) -> dict[str, F] | None:
    """The ``[attributes]`` table, validated by :mod:`pbdcloth.cloth.attributes`."""
    from ..cloth.attributes import (
        ATTRIBUTES_BY_NAME,
        PointAttributeError,
        validate_point_attributes,
    )

    if not table:
        return None
    check.unknown(table, tuple(ATTRIBUTES_BY_NAME), "attributes.")
    values: dict[str, Any] = {}
    for name, value in table.items():
        key = f"attributes.{name}"
        if name not in ATTRIBUTES_BY_NAME:
            continue
        if isinstance(value, dict):
            value = _attribute_source(check, value, key, mesh_table)
        elif isinstance(value, bool) or not isinstance(value, (int, float, list)):
            check.add(key, value, "must be a number, a list with one number per point or "
                      "{ file, primvar | attribute }")
            value = None
        if value is None or positions is None:
            continue
        try:
            values.update(validate_point_attributes({name: value}, positions.shape[0]))
        except PointAttributeError as exc:
            check.add(key, value if not isinstance(value, np.ndarray) else _MISSING, str(exc))
    return values or None


def _read_stitches(check: _Checker, table: dict[str, Any], positions: F | None) -> Any:
    """The ``[stitches]`` table as a :class:`~pbdcloth.cloth.stitches.Stitches`."""
    from ..cloth.stitches import DEFAULT_STITCH_SPEED, StitchError, Stitches, validate_stitches

    if not table:
        return None
    where = "stitches."
    check.unknown(table, ("pairs", "rest", "speed", "break_length"), where)
    pairs = table.get("pairs", _MISSING)
    if pairs is _MISSING:
        check.add(f"{where}pairs", _MISSING, "is required: [[i, j], ...] point index pairs")
        return None
    rest = table.get("rest", 0.0)
    speed = check.number(table, "speed", where, DEFAULT_STITCH_SPEED, minimum=0.0,
                         exclusive_min=True, unit="m/s")
    if speed is None or positions is None:
        return None
    stitches = Stitches(pairs, rest, speed, table.get("break_length", np.inf))
    try:
        validate_stitches(stitches, positions.shape[0])
    except StitchError as exc:
        check.add(f"{where}pairs", pairs, str(exc))
        return None
    return stitches


def check_scene_data(data: dict[str, Any], base: Path, source: str = "<scene>",
                     overrides: dict[str, Any] | None = None,
                     settings_overrides: dict[str, Any] | None = None
                     ) -> tuple[SceneSpec | None, list[Problem]]:
    """Check a parsed scene; returns the scene (None if anything is wrong) and all problems.

    ``overrides`` may set ``frames``, ``start_frame``, ``fps``, ``out`` and ``format`` (the
    command line's); ``settings_overrides`` cloth settings by name.
    """
    check = _Checker(base)
    over = dict(overrides or {})
    check.unknown(data, ("scene", "mesh", "pins", "colliders", "settings", "output",
                         "postprocess", "wedge", "attributes", "stitches"), "")
    scene = check.table(data, "scene")
    check.unknown(scene, ("name", "description", "frames", "start_frame", "fps"), "scene.")
    name = check.text(scene, "name", "scene.", Path(source).stem)
    description = check.text(scene, "description", "scene.", "")
    frames = check.number(scene, "frames", "scene.", 48, minimum=1, maximum=1_000_000,
                          integer=True)
    start = check.number(scene, "start_frame", "scene.", 1, minimum=-1_000_000,
                         maximum=1_000_000, integer=True)
    fps = check.number(scene, "fps", "scene.", 24.0, minimum=1.0 / MAX_DT,
                       maximum=min(100_000.0, 1.0 / MIN_DT), unit="frames/s")
    if over.get("frames") is not None:
        if not isinstance(over["frames"], int) or over["frames"] < 1:
            check.add("--frames", over["frames"], "must be a whole number >= 1")
        else:
            frames = over["frames"]

    if "mesh" not in data:
        check.add("mesh", _MISSING, "is required: file = \"cloth.obj\" or grid = {...}")
        mesh = None
    else:
        mesh = _read_mesh(check, check.table(data, "mesh"))
    positions, triangles, groups, polygons = mesh if mesh is not None else (None, None, {}, None)
    pinned, pin_motion = _read_pins(check, check.table(data, "pins"), positions, groups)

    colliders: list[ColliderSpec] = []
    raw_colliders = data.get("colliders", [])
    if not isinstance(raw_colliders, list):
        check.add("colliders", raw_colliders, "must be an array of tables ([[colliders]])")
        raw_colliders = []
    for i, entry in enumerate(raw_colliders):
        collider = _read_collider(check, entry, i)
        if collider is not None:
            colliders.append(collider)

    settings = _read_settings(check, check.table(data, "settings"), settings_overrides or {})
    output = _read_output(check, check.table(data, "output"), name or "scene")
    if output is not None:
        changes: dict[str, Any] = {}
        if over.get("out") is not None:
            changes["dir"] = Path(over["out"])
        if over.get("format") is not None:
            if over["format"] not in FORMATS:
                check.add("--format", over["format"], f"must be one of {', '.join(FORMATS)}")
            else:
                changes["format"] = CacheFormat(over["format"])
        if changes:
            output = OutputSpec(**{**output.__dict__, **changes})
        if output.format == CacheFormat.USD:
            try:
                import pxr  # noqa: F401
            except ImportError:
                check.add("output.format", "usd",
                          "USD output needs usd-core: pip install 'pbdcloth[usd]'")
    post = _read_postprocess(check, check.table(data, "postprocess"))
    attributes = _read_attributes(check, check.table(data, "attributes"),
                                  check.table(data, "mesh"), positions)
    stitches = _read_stitches(check, check.table(data, "stitches"), positions)

    if check.problems:
        return None, check.problems
    assert positions is not None and triangles is not None and settings is not None
    assert output is not None and post is not None
    spec = SceneSpec(name=name, description=description, source=None, positions=positions,
                     triangles=triangles, pinned=pinned, pin_motion=pin_motion,
                     colliders=colliders, settings=settings, frames=frames, start_frame=start,
                     fps=fps, output=output, postprocess=post, faces=polygons,
                     point_attributes=attributes, stitches=stitches)
    problems: list[Problem] = []
    for c in colliders:
        gap = c.missing_frame(start, start + frames - 1)
        if gap is not None:
            problems.append(Problem(f"{c.key}.file", str(c.params["file"].name),
                                    f"frame {gap} is missing ({c.params['file'].parent / ''}"
                                    f"{expand_frame(c.params['file'].name, gap)})"))
            continue
        # Build each collider once: catches what only its constructor sees (a .vdb without a
        # level set, an open mesh, pyopenvdb missing).
        try:
            c.build(start)
        except SceneFileError as exc:
            problems += exc.problems
        except (ValueError, RuntimeError, OSError, ImportError) as exc:
            key = f"{c.key}.file" if "file" in c.params else c.key
            value = c.params["file"].name if "file" in c.params else _MISSING
            problems.append(Problem(key, value, str(exc)))
    if problems:
        return None, problems
    return spec, []


def read_scene_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML content of a scene file; errors as a one-problem :class:`SceneFileError`."""
    source = Path(path)
    if not source.is_file():
        raise SceneFileError(str(source), [Problem("file", str(source), "scene file not found")])
    try:
        import tomllib
    except ImportError:  # Python 3.10: the same parser as the tomli package
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with source.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SceneFileError(str(source), [Problem("toml", _MISSING, f"syntax error: {exc}")]
                             ) from None
    except UnicodeDecodeError as exc:
        raise SceneFileError(str(source), [Problem(
            "file", str(source), f"is not UTF-8 text (byte {exc.start}: "
            f"{exc.object[exc.start:exc.start + 1]!r}); save the scene file as UTF-8")]) from None
    except OSError as exc:
        raise SceneFileError(str(source), [Problem("file", str(source),
                                                   f"cannot be read: {exc.strerror}")]) from None


def load_scene(path: str | os.PathLike[str], overrides: dict[str, Any] | None = None,
               settings_overrides: dict[str, Any] | None = None) -> SceneSpec:
    """Read and check a scene file; raise :class:`SceneFileError` listing every problem."""
    source = Path(path)
    data = read_scene_file(source)
    spec, problems = check_scene_data(data, source.resolve().parent, str(source), overrides,
                                      settings_overrides)
    if problems or spec is None:
        raise SceneFileError(str(source), problems)
    spec.source = source
    return spec
