"""Caches of simulated frames: writers that stream frame by frame, and a reader for all formats.

Formats and file names (frame numbers zero-padded to 4 digits, Houdini's ``$F4``):

* ``usd``: one file ``NAME.usd`` with time-sampled points (see :mod:`pbdcloth.io.usd`);
* ``geo``: ``NAME.0001.geo``, ``NAME.0002.geo``, ... Houdini JSON geometry with point
  attributes ``v``, ``w``, ``strain`` (see :mod:`pbdcloth.io.geo`);
* ``obj``: ``NAME.0001.obj``, ... Wavefront OBJ.

The topology may change from frame to frame (a cloth that tears): each OBJ / ``.geo`` file holds
its frame's own faces, USD time-samples the faces from the first change on; the reader gives
every frame's triangles (:attr:`CacheFrames.frame_triangles`).

Every file is written to a temporary name and renamed into place, so after a crash the folder
holds complete frames only (plus, at worst, a hidden ``.NAME.*.tmp`` that the next run removes).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ..arrays import F
from ..cloth.mesh import MeshError, triangulate
from ..settings import Choice
from .obj import frame_path, read_obj, write_obj


class CacheFormat(Choice):
    """The cache formats: one USD layer, or one Houdini ``.geo`` / OBJ file per frame."""

    USD = "usd"
    GEO = "geo"
    OBJ = "obj"


#: Every cache format, in the order the command line lists them.
CACHE_FORMATS = tuple(CacheFormat)
#: The formats written as one file per frame.
SEQUENCE_FORMATS = (CacheFormat.GEO, CacheFormat.OBJ)


@dataclass
class FrameData:
    """One frame of cloth for a cache.

    Attributes:
        positions: points [m], shape (N, 3).
        triangles: faces, shape (T, 3) (this frame's: a torn cloth's change).
        velocities: [m/s], shape (N, 3).
        inverse_mass: w = 1/m [1/kg], 0 on pins, shape (N,).
        strain: per-point mean |edge strain|, shape (N,).
        normals: unit vertex normals, shape (N, 3), or None.
        faces: the polygons to write (e.g. the input's quads), or None: ``triangles``.
        extra: any other point attributes, name -> (N,) or (N, k) values (``.geo`` writes them
            as point attributes, USD as vertex primvars, OBJ has no place for them).
    """

    positions: F
    triangles: NDArray[np.int64]
    velocities: F | None = None
    inverse_mass: F | None = None
    strain: F | None = None
    normals: F | None = None
    faces: Sequence[Sequence[int]] | None = None
    extra: dict[str, F] = field(default_factory=dict)

    @property
    def polygons(self) -> NDArray[np.int64] | Sequence[Sequence[int]]:
        """What the writers write as faces: ``faces`` when given, else ``triangles``."""
        return self.faces if self.faces is not None else self.triangles

    def point_attributes(self) -> dict[str, F]:
        """The attributes present, under Houdini's names: ``v``, ``w``, ``strain``, then
        ``extra``."""
        named = {"v": self.velocities, "w": self.inverse_mass, "strain": self.strain}
        return {k: v for k, v in named.items() if v is not None} | dict(self.extra)


class CacheWriter(Protocol):
    """What the simulation loop needs from a cache."""

    def write(self, frame: int, data: FrameData) -> bool:
        """Store a frame; True when it (and every earlier one) is complete on disk."""
        ...

    def close(self) -> None:
        """Make everything written so far complete on disk."""
        ...

    @property
    def outputs(self) -> list[Path]: ...


def sequence_pattern(out_dir: Path, name: str, fmt: str) -> Path:
    """``DIR/NAME.$F4.EXT``."""
    return out_dir / f"{name}.$F4.{fmt}"


def sequence_frames(out_dir: Path, name: str, fmt: str) -> dict[int, Path]:
    """Frame number -> path of the ``NAME.NNNN.EXT`` files in ``out_dir``."""
    rx = re.compile(rf"^{re.escape(name)}\.(-?\d+)\.{re.escape(fmt)}$")
    found: dict[int, Path] = {}
    if out_dir.is_dir():
        for p in out_dir.iterdir():
            m = rx.match(p.name)
            if m and p.is_file():
                found[int(m.group(1))] = p
    return dict(sorted(found.items()))


def remove_temporaries(out_dir: Path, name: str) -> None:
    """Delete temporary files a killed run left (``.NAME.*``, written by the atomic writers)."""
    if out_dir.is_dir():
        for p in out_dir.iterdir():
            if p.name.startswith(f".{name}.") and p.is_file():
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()


class SequenceWriter:
    """One OBJ or ``.geo`` file per frame, written atomically.

    ``keep_until``: ``None`` removes any earlier ``NAME.NNNN.EXT`` frames of this format (a new
    cache); a frame number keeps the frames up to it and removes later ones (resuming).
    """

    def __init__(self, out_dir: str | os.PathLike[str], name: str, fmt: str,
                 keep_until: int | None = None) -> None:
        if fmt not in SEQUENCE_FORMATS:
            raise ValueError(f"sequence format must be 'geo' or 'obj', got {fmt!r}")
        self.out_dir = Path(out_dir)
        self.name, self.fmt = name, fmt
        self.pattern = sequence_pattern(self.out_dir, name, fmt)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        remove_temporaries(self.out_dir, name)
        for frame, path in sequence_frames(self.out_dir, name, fmt).items():
            if keep_until is None or frame > keep_until:
                path.unlink()
        self._outputs: list[Path] = []

    @property
    def outputs(self) -> list[Path]:
        return list(self._outputs)

    def write(self, frame: int, data: FrameData) -> bool:
        path = frame_path(self.pattern, frame)
        if self.fmt == "obj":
            write_obj(path, data.positions, data.polygons, comment=f"pbdcloth frame {frame}")
        else:
            from .geo import write_geo

            write_geo(path, data.positions, data.polygons, data.point_attributes())
        self._outputs.append(path)
        return True

    def close(self) -> None:
        return None


class UsdWriter:
    """``NAME.usd`` with time-sampled points, committed atomically (see :mod:`.usd`)."""

    def __init__(self, out_dir: str | os.PathLike[str], name: str,
                 triangles: NDArray[np.int64] | Sequence[Sequence[int]],
                 fps: float, start_frame: int, keep_until: int | None = None,
                 inverse_mass: F | None = None, normals: bool = True,
                 velocities: bool = True, commit_ratio: float = 5.0) -> None:
        from .usd import UsdCacheWriter

        self.path = Path(out_dir) / f"{name}.usd"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        remove_temporaries(self.path.parent, name)
        self.normals, self.velocities = normals, velocities
        self._writer = UsdCacheWriter(self.path, triangles, fps, start_frame,
                                      resume_after=keep_until, inverse_mass=inverse_mass,
                                      commit_ratio=commit_ratio)

    @property
    def outputs(self) -> list[Path]:
        return [self.path]

    def write(self, frame: int, data: FrameData, force_commit: bool = False) -> bool:
        return self._writer.write_frame(
            frame, data.positions, normals=data.normals if self.normals else None,
            velocities=data.velocities if self.velocities else None, strain=data.strain,
            extra=data.extra, force_commit=force_commit, faces=data.polygons,
            inverse_mass=data.inverse_mass)

    def close(self) -> None:
        self._writer.close()


# ------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------
@dataclass
class CacheFrames:
    """Frames read back from a cache (for pictures and post-processing).

    Attributes:
        frames: frame numbers.
        positions: points per frame [m], each (N, 3).
        triangles: the faces, fan-triangulated, (T, 3).
        strain: per-point strain per frame when the cache stores it (``.geo``, USD), else None.
        fps: frames per second when the cache says (USD), else None.
        source: what was read.
        faces: the polygons as stored (quads stay quads).
        attributes: every point attribute per frame, name -> (N,) or (N, k), under Houdini's
            names (``v``, ``w``, ``strain``, ...; USD velocities read as ``v``, its primvars
            under their names); empty dicts for OBJ.
        frame_triangles, frame_faces: each frame's triangles and polygons when the topology
            changes over the cache (a torn cloth), else None (``triangles`` / ``faces`` hold
            for every frame).
    """

    frames: list[int]
    positions: list[F]
    triangles: NDArray[np.int64]
    strain: list[F] | None
    fps: float | None
    source: str
    faces: list[list[int]] = field(default_factory=list)
    attributes: list[dict[str, F]] = field(default_factory=list)
    frame_triangles: list[NDArray[np.int64]] | None = None
    frame_faces: list[list[list[int]]] | None = None

    def triangles_of(self, k: int) -> NDArray[np.int64]:
        """The triangles of the ``k``-th frame read."""
        return self.triangles if self.frame_triangles is None else self.frame_triangles[k]

    def all_triangles(self) -> list[NDArray[np.int64]]:
        """Every frame's triangles (one shared array when the topology never changes)."""
        return [self.triangles_of(k) for k in range(len(self.frames))]


def _sequence_from(path: Path) -> tuple[Path, str, str] | None:
    """(folder, name, format) of a sequence given by a pattern or by one of its frames."""
    text = str(path)
    for token in ("$F4", "$F3", "$F2", "$F", "####"):
        if token in text:
            head, _, tail = path.name.partition(token)
            return path.parent, head.rstrip("."), tail.lstrip(".")
    m = re.match(r"^(.*)\.(-?\d+)\.(geo|obj)$", path.name)
    if m:
        return path.parent, m.group(1), m.group(3)
    return None


def find_cache(path: str | os.PathLike[str]) -> tuple[str, Path, str]:
    """Identify a cache: ``("usd", file, name)`` or ``("geo"|"obj", folder, name)``.

    ``path`` is a USD file, a frame pattern (``out/cloth.$F4.geo``), one frame of a sequence, or
    a folder holding exactly one cache.
    """
    p = Path(path)
    if p.suffix.lower() in (".usd", ".usda", ".usdc") and p.is_file():
        return CacheFormat.USD, p, p.stem
    seq = _sequence_from(p)
    if seq is not None and seq[2] in SEQUENCE_FORMATS:
        folder, name, fmt = seq
        if not sequence_frames(folder, name, fmt):
            raise MeshError(f"no frames {name}.NNNN.{fmt} in {folder}")
        return fmt, folder, name
    if p.is_dir():
        found: list[tuple[str, Path, str]] = []
        for q in sorted(p.iterdir()):
            if q.suffix in (".usd", ".usda", ".usdc") and not q.name.startswith("."):
                found.append((CacheFormat.USD, q, q.stem))
        names: set[tuple[str, str]] = set()
        for q in sorted(p.iterdir()):
            m = re.match(r"^(.*)\.(-?\d+)\.(geo|obj)$", q.name)
            if m and (m.group(1), m.group(3)) not in names:
                names.add((m.group(1), m.group(3)))
                found.append((m.group(3), p, m.group(1)))
        if len(found) == 1:
            return found[0]
        if not found:
            raise MeshError(f"no cache (NAME.usd, NAME.NNNN.geo or NAME.NNNN.obj) in {p}")
        listed = ", ".join(f"{n}.usd" if k == CacheFormat.USD else f"{n}.$F4.{k}" for k, _, n in found)
        raise MeshError(f"{p} holds several caches ({listed}); name one of them")
    raise MeshError(f"not a cache: {p} (give NAME.usd, a folder, or DIR/NAME.$F4.geo)")


def read_cache(path: str | os.PathLike[str], every: int = 1) -> CacheFrames:
    """Read every ``every``-th frame of a cache (see :func:`find_cache` for ``path``)."""
    kind, where, name = find_cache(path)
    step = max(int(every), 1)
    if kind == CacheFormat.USD:
        from .usd import read_usd_cache

        usd = read_usd_cache(where, every=step)
        per = usd.frame_faces
        first = per[0] if per else usd.faces
        return CacheFrames(usd.frames, usd.positions, triangulate(first), usd.strain, usd.fps,
                           str(where), faces=first, attributes=usd.attributes,
                           frame_triangles=None if per is None else [triangulate(f) for f in per],
                           frame_faces=per)
    frames = list(sequence_frames(where, name, kind).items())[::step]
    positions: list[F] = []
    strain: list[F] | None = [] if kind == "geo" else None
    faces: list[list[int]] | None = None
    attributes: list[dict[str, F]] = []
    every_faces: list[list[list[int]]] = []
    for _, file in frames:
        if kind == "obj":
            pos, f = read_obj(file)
            attributes.append({})
        else:
            from .geo import read_geo

            geo = read_geo(file)
            pos, f = geo.positions, geo.faces
            attributes.append(dict(geo.point_attributes))
            if strain is not None:
                if "strain" in geo.point_attributes:
                    strain.append(np.asarray(geo.point_attributes["strain"], dtype=np.float64))
                else:
                    strain = None
        if faces is None:
            faces = f
        every_faces.append([list(g) for g in f])
        top = max((max(g) for g in f), default=-1)
        if top >= len(pos):
            raise MeshError(f"{file}: a face uses point {top}, but the frame has {len(pos)} "
                            "points")
        positions.append(pos)
    assert faces is not None
    changing = any(g != every_faces[0] for g in every_faces[1:])
    return CacheFrames([k for k, _ in frames], positions, triangulate(faces), strain, None,
                       str(sequence_pattern(where, name, kind)), faces=[list(f) for f in faces],
                       attributes=attributes,
                       frame_triangles=([triangulate(g) for g in every_faces] if changing
                                        else None),
                       frame_faces=every_faces if changing else None)


def write_cache(out_dir: str | os.PathLike[str], name: str, fmt: str, frames: list[int],
                data: list[FrameData], fps: float = 24.0) -> list[Path]:
    """Write a whole cache at once (e.g. a post-processed copy); returns the files written."""
    if fmt not in CACHE_FORMATS:
        raise ValueError(f"format must be one of {[str(f) for f in CACHE_FORMATS]}, got {fmt!r}")
    if len(frames) != len(data) or not frames:
        raise ValueError("write_cache needs one FrameData per frame number, at least one")
    writer: CacheWriter
    if fmt == CacheFormat.USD:
        # Commit once, at the end: nothing to resume in a one-shot write.
        writer = UsdWriter(out_dir, name, data[0].polygons, fps, frames[0],
                           inverse_mass=data[0].inverse_mass, commit_ratio=float("inf"))
    else:
        writer = SequenceWriter(out_dir, name, fmt)
    for frame, d in zip(frames, data):
        writer.write(frame, d)
    writer.close()
    return writer.outputs
