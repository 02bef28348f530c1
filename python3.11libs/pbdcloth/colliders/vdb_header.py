"""A bounded check of a ``.vdb`` file's header, before OpenVDB parses it.

OpenVDB trusts the sizes written in a file: a truncated or damaged file can make it allocate
gigabytes and run for a minute before it fails (or print a message as long as the file). This
module reads only the header and the grid descriptors with :mod:`struct`, in a few kilobytes and
microseconds, and refuses the file with a one-line :class:`SdfError` unless

* it starts with the VDB magic number, has a file format version OpenVDB 10 reads
  (:data:`MIN_FILE_VERSION` .. :data:`MAX_FILE_VERSION`) and grid offsets;
* it holds 1 .. :data:`MAX_GRIDS` grids, every name and type a short string;
* each grid's data lies inside the file (``grid position <= block position <= end position
  <= file size``; a truncated file fails here), the last grid ending exactly at the file's end;
* each grid's metadata (``file_voxel_count``, ``file_bbox_min``/``max``, written by OpenVDB and
  Houdini) reports at most :data:`MAX_ACTIVE_VOXELS` active voxels and a bounding box of at most
  :data:`~pbdcloth.colliders.sdf_grid.MAX_VOXELS` voxels (what a dense copy may hold).

Layout (OpenVDB ``io/File.cc``, ``io/Archive.cc``, file version 222-224): int64 magic
0x56444220, uint32 file version, uint32 library major, minor, uint8 has-grid-offsets, a 36-byte
UUID, the file metadata (int32 count, then per entry: name string, type string, int32 size,
value), int32 grid count, then per grid a descriptor (name string, type string, instance-parent
string, int64 grid, block and end positions), the descriptor of the next grid at the end
position. At the grid position the grid's metadata starts (uint32 compression flags, then
metadata as above). A string is a uint32 length and that many bytes.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .sdf_grid import MAX_VOXELS, SdfError

VDB_MAGIC = 0x56444220
MIN_FILE_VERSION, MAX_FILE_VERSION = 222, 230
#: Most grids a collider file may hold.
MAX_GRIDS = 64
#: Most active voxels a grid may report.
MAX_ACTIVE_VOXELS = 1 << 26
#: Longest name, type or metadata value read [bytes].
MAX_STRING = 1 << 16
#: Most metadata entries per file or grid.
MAX_METADATA = 4096
#: Smallest possible file: the fixed header, two counts and one grid descriptor [bytes].
MIN_FILE_BYTES = 8 + 4 * 3 + 1 + 36 + 4 + 4 + 3 * 4 + 3 * 8


@dataclass(frozen=True)
class GridEntry:
    """One grid's descriptor and the metadata the checks use."""

    name: str
    type: str
    grid_pos: int
    block_pos: int
    end_pos: int
    voxel_count: int | None
    bbox: tuple[tuple[int, int, int], tuple[int, int, int]] | None


class _Reader:
    """Little-endian reads that refuse to run past the end of the file."""

    def __init__(self, fh: BinaryIO, size: int, where: str) -> None:
        self.fh, self.size, self.where = fh, size, where

    def fail(self, what: str) -> SdfError:
        return SdfError(f"cannot read {self.where} as a .vdb file: {what} (the file has "
                        f"{self.size} bytes; truncated or damaged? write it again)")

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.fh.tell() + n > self.size:
            raise self.fail(f"{what} runs past the end of the file at byte {self.fh.tell()}")
        return self.fh.read(n)

    def unpack(self, fmt: str, what: str) -> Any:
        values = struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))
        return values[0] if len(values) == 1 else values

    def string(self, what: str) -> str:
        n = self.unpack("I", what)
        if n > MAX_STRING:
            raise self.fail(f"{what} claims {n} bytes")
        return self.take(n, what).decode("utf-8", "replace")

    def metadata(self, what: str) -> dict[str, tuple[str, bytes]]:
        count = self.unpack("i", f"{what} count")
        if not 0 <= count <= MAX_METADATA:
            raise self.fail(f"{what} count {count} is outside [0, {MAX_METADATA}]")
        out = {}
        for _ in range(count):
            name = self.string(f"{what} name")
            kind = self.string(f"{what} '{name}' type")
            n = self.unpack("i", f"{what} '{name}' size")
            if not 0 <= n <= MAX_STRING:
                raise self.fail(f"{what} '{name}' claims {n} bytes")
            out[name] = (kind, self.take(n, f"{what} '{name}'"))
        return out


def _int_meta(meta: dict[str, tuple[str, bytes]], name: str) -> int | None:
    kind, raw = meta.get(name, ("", b""))
    if kind == "int64" and len(raw) == 8:
        return int(struct.unpack("<q", raw)[0])
    if kind == "int32" and len(raw) == 4:
        return int(struct.unpack("<i", raw)[0])
    return None


def _vec3i_meta(meta: dict[str, tuple[str, bytes]], name: str) -> tuple[int, int, int] | None:
    kind, raw = meta.get(name, ("", b""))
    if kind == "vec3i" and len(raw) == 12:
        x, y, z = struct.unpack("<3i", raw)
        return int(x), int(y), int(z)
    return None


def check_vdb_file(path: str | os.PathLike[str]) -> list[GridEntry]:
    """The grids of a ``.vdb`` file after the bounded checks above, or :class:`SdfError`.

    Reads at most the header, the descriptors and each grid's metadata (a few kilobytes).
    """
    p = Path(path)
    where = repr(str(p))
    try:
        size = p.stat().st_size
        fh = p.open("rb")
    except OSError as exc:
        raise SdfError(f"cannot open level set file {where}: {exc.strerror}") from None
    with fh:
        r = _Reader(fh, size, where)
        if size < MIN_FILE_BYTES:
            raise r.fail(f"the smallest .vdb has {MIN_FILE_BYTES} bytes")
        magic, version, major, minor, offsets = r.unpack("qIIIB", "header")
        if magic != VDB_MAGIC:
            raise r.fail("it does not start with the VDB magic number")
        if not MIN_FILE_VERSION <= version <= MAX_FILE_VERSION:
            raise r.fail(f"file format version {version} (library {major}.{minor}) is outside "
                         f"[{MIN_FILE_VERSION}, {MAX_FILE_VERSION}]")
        if offsets != 1:
            raise r.fail("it has no grid offsets (written by a very old OpenVDB)")
        r.take(36, "UUID")
        r.metadata("file metadata")
        count = r.unpack("i", "grid count")
        if not 1 <= count <= MAX_GRIDS:
            raise r.fail(f"grid count {count} is outside [1, {MAX_GRIDS}]")
        grids = []
        for k in range(count):
            name = r.string(f"grid {k} name").split("\x1e")[0]
            kind = r.string(f"grid {k} type")
            r.string(f"grid {k} instance parent")
            grid_pos, block_pos, end_pos = r.unpack("qqq", f"grid {k} offsets")
            here = fh.tell()
            if not here <= grid_pos <= block_pos <= end_pos <= size:
                raise r.fail(f"grid {k} '{name}' claims bytes {grid_pos}-{end_pos}")
            fh.seek(grid_pos)
            r.unpack("I", f"grid '{name}' compression")
            meta = r.metadata(f"grid '{name}' metadata")
            lo, hi = _vec3i_meta(meta, "file_bbox_min"), _vec3i_meta(meta, "file_bbox_max")
            bbox = (lo, hi) if lo is not None and hi is not None else None
            grids.append(GridEntry(name, kind, grid_pos, block_pos, end_pos,
                                   _int_meta(meta, "file_voxel_count"), bbox))
            fh.seek(end_pos)
        if grids[-1].end_pos != size:
            raise r.fail(f"its last grid ends at byte {grids[-1].end_pos}")
    for g in grids:
        if g.voxel_count is not None and not 0 <= g.voxel_count <= MAX_ACTIVE_VOXELS:
            raise SdfError(f"grid '{g.name}' in {where} reports {g.voxel_count} active voxels, "
                           f"outside [0, {MAX_ACTIVE_VOXELS}]; use a coarser voxel size")
        if g.bbox is not None:
            dims = [h - lo + 1 for lo, h in zip(*g.bbox)]
            span = dims[0] * dims[1] * dims[2]
            if min(dims) > 0 and span > MAX_VOXELS:
                raise SdfError(f"grid '{g.name}' in {where} spans {dims} voxels, more than a "
                               f"dense copy may hold ({span} > {MAX_VOXELS}); use a coarser "
                               "voxel size")
    return grids


__all__ = ["MAX_ACTIVE_VOXELS", "MAX_GRIDS", "GridEntry", "check_vdb_file"]
