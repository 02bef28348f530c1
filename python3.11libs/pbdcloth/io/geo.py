"""Houdini JSON geometry (``.geo``): the ASCII form of Houdini's geometry format.

A ``.geo`` file is one JSON array of alternating keys and values (SideFX, "Houdini geometry file
format", https://www.sidefx.com/docs/houdini/io/formats/geo.html)::

    ["fileversion", "19.5.0", "hasindex", false,
     "pointcount", N, "vertexcount", V, "primitivecount", P,
     "info", {...},
     "topology", ["pointref", ["indices", [point of vertex 0, point of vertex 1, ...]]],
     "attributes", ["pointattributes", [[definition, data], ...]],
     "primitives", [[["type", "Polygon_run"],
                     ["startvertex", 0, "nprimitives", P, "nvertices_rle", [3, P]]]]]

Each attribute is a pair ``[["scope", "public", "type", "numeric", "name", NAME, "options", {...}],
["size", k, "storage", "fpreal32", "defaults", [...], "values", ["size", k, "storage", "fpreal32",
"tuples", [[...], ...]]]]``; scalars may use ``"arrays", [[...]]`` and Houdini itself often writes
paged data (``"packing"``, ``"pagesize"``, ``"constantpageflags"``, ``"rawpagedata"``).

The writer emits points, closed polygons and the solver's point attributes (``P``; ``v`` [m/s];
``w`` inverse mass [1/kg], 0 on pins, as in the seed; ``strain``). The reader understands what the
writer emits plus the common Houdini variants (paged values, ``Polygon``/``Poly`` primitives,
``nvertices`` lists, point groups), so a ``.geo`` saved from Houdini can be the cloth input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..atomic import atomic_write
from ..cloth.mesh import MeshError

#: Houdini version written in ``fileversion``: the JSON layout used here is the one Houdini has
#: read and written unchanged since version 12.
FILE_VERSION = "19.5.0"

#: Houdini's type information of well-known point attributes (drives transforms in Houdini).
_TYPEINFO = {"P": "point", "v": "vector", "N": "normal", "force": "vector"}


class GeoError(MeshError):
    """A ``.geo`` file is not valid Houdini JSON geometry; the message names the part."""


@dataclass
class GeoGeometry:
    """The content of a ``.geo`` file.

    Attributes:
        positions: point positions ``P`` [m], shape (N, 3), float64.
        faces: closed polygons as lists of point indices (vertex order kept).
        point_attributes: every other numeric point attribute, shape (N,) or (N, k).
        point_groups: named point groups as sorted index arrays.
        fileversion: the Houdini version that wrote the file.
    """

    positions: NDArray[np.float64]
    faces: list[list[int]]
    point_attributes: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    point_groups: dict[str, NDArray[np.int64]] = field(default_factory=dict)
    fileversion: str = ""

    @property
    def triangles(self) -> NDArray[np.int64]:
        """Faces as a (T, 3) array; raises :class:`GeoError` if any face is not a triangle."""
        if any(len(f) != 3 for f in self.faces):
            raise GeoError("the geometry has polygons that are not triangles")
        return np.asarray(self.faces, dtype=np.int64).reshape(-1, 3)


# ------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------
def _rows(values: NDArray[Any], storage: str) -> str:
    """Tuples of a (N, k) array as JSON text; float32 with 9 significant digits (exact)."""
    fmt = "%.9g" if storage == "fpreal32" else "%.17g"
    if values.dtype.kind in "iu":
        fmt = "%d"
    row = "[" + ",".join([fmt] * values.shape[1]) + "]"
    if values.shape[0] == 0:
        return ""
    # One formatting call for the whole array: several times faster than one per row.
    return (",".join([row] * values.shape[0])) % tuple(values.reshape(-1).tolist())


def _scalars(values: NDArray[Any], storage: str) -> str:
    fmt = "%d" if values.dtype.kind in "iu" else ("%.9g" if storage == "fpreal32" else "%.17g")
    return ",".join([fmt] * values.shape[0]) % tuple(values.tolist())


def _attribute_json(name: str, values: NDArray[Any], storage: str) -> str:
    """One ``[definition, data]`` attribute entry."""
    size = 1 if values.ndim == 1 else int(values.shape[1])
    typeinfo = _TYPEINFO.get(name)
    options = {"type": {"type": "string", "value": typeinfo}} if typeinfo and size == 3 else {}
    header = json.dumps(["scope", "public", "type", "numeric", "name", name, "options", options],
                        separators=(",", ":"))
    if storage.startswith("int"):
        defaults = '"defaults",["size",1,"storage","int32","values",[0]]'
    else:
        defaults = '"defaults",["size",1,"storage","fpreal64","values",[0]]'
    if size == 1:
        body = f'"arrays",[[{_scalars(values, storage)}]]'
    else:
        body = f'"tuples",[{_rows(values, storage)}]'
    return (f'[{header},\n   ["size",{size},"storage","{storage}",{defaults},\n    '
            f'"values",["size",{size},"storage","{storage}",{body}]]]')


def _run_lengths(counts: Sequence[int]) -> list[int]:
    """Houdini's ``nvertices_rle``: [count, repeat, count, repeat, ...]."""
    out: list[int] = []
    for c in counts:
        if out and out[-2] == c:
            out[-1] += 1
        else:
            out += [int(c), 1]
    return out


def geo_text(
    positions: ArrayLike,
    faces: ArrayLike | Sequence[Sequence[int]],
    point_attributes: Mapping[str, ArrayLike] | None = None,
    storage: str = "fpreal32",
    software: str = "pbdcloth",
) -> str:
    """The ``.geo`` text of a polygon mesh with point attributes.

    Args:
        positions: point positions (N, 3) [m].
        faces: closed polygons, (F, k) array or list of index lists.
        point_attributes: name -> (N,) or (N, k) values; float arrays are written with
            ``storage``, integer arrays as ``int32``.
        storage: ``"fpreal32"`` (Houdini's default for P) or ``"fpreal64"``.
    """
    if storage not in ("fpreal32", "fpreal64"):
        raise ValueError(f"storage must be 'fpreal32' or 'fpreal64', got {storage!r}")
    pos = np.asarray(positions, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or not np.all(np.isfinite(pos)):
        raise GeoError(f"positions must be a finite (N, 3) array, got shape {pos.shape}")
    n = pos.shape[0]
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        flat_arr = faces.astype(np.int64).reshape(-1)
        counts = [int(faces.shape[1])] * faces.shape[0]
    else:
        polys = [[int(i) for i in f] for f in cast(Sequence[Sequence[int]], faces)]
        flat_arr = np.asarray([i for f in polys for i in f], dtype=np.int64)
        counts = [len(f) for f in polys]
    if flat_arr.size and (flat_arr.min() < 0 or flat_arr.max() >= n):
        raise GeoError(f"faces use point indices outside [0, {n - 1}]")
    flat = flat_arr.tolist()
    attrs: list[str] = [_attribute_json("P", pos.astype(np.float32) if storage == "fpreal32"
                                        else pos, storage)]
    for name, value in (point_attributes or {}).items():
        arr = np.asarray(value)
        if arr.shape[0] != n or arr.ndim not in (1, 2):
            raise GeoError(f"point attribute {name!r} must have {n} rows, got shape {arr.shape}")
        if arr.dtype.kind in "iub":
            attrs.append(_attribute_json(name, arr.astype(np.int64), "int32"))
        else:
            arr = arr.astype(np.float64)
            if not np.all(np.isfinite(arr)):
                raise GeoError(f"point attribute {name!r} contains NaN or inf")
            attrs.append(_attribute_json(
                name, arr.astype(np.float32) if storage == "fpreal32" else arr, storage))
    lo, hi = (pos.min(axis=0), pos.max(axis=0)) if n else (np.zeros(3), np.zeros(3))
    info = {"software": software,
            "bounds": [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1]), float(lo[2]),
                       float(hi[2])]}
    rle = _run_lengths(counts)
    primitives = (f'[[["type","Polygon_run"],["startvertex",0,"nprimitives",{len(counts)},'
                  f'"nvertices_rle",{json.dumps(rle, separators=(",", ":"))}]]]') if counts else "[]"
    return (
        "[\n"
        f' "fileversion","{FILE_VERSION}",\n'
        ' "hasindex",false,\n'
        f' "pointcount",{n},\n'
        f' "vertexcount",{len(flat)},\n'
        f' "primitivecount",{len(counts)},\n'
        f' "info",{json.dumps(info, separators=(",", ":"))},\n'
        f' "topology",["pointref",["indices",[{",".join(map(str, flat))}]]],\n'
        ' "attributes",["pointattributes",[\n  ' + ",\n  ".join(attrs) + "\n ]],\n"
        f' "primitives",{primitives}\n'
        "]\n"
    )


def write_geo(
    path: str | os.PathLike[str],
    positions: ArrayLike,
    faces: ArrayLike | Sequence[Sequence[int]],
    point_attributes: Mapping[str, ArrayLike] | None = None,
    storage: str = "fpreal32",
) -> Path:
    """Write a ``.geo`` file atomically (see :func:`geo_text`); returns its path."""
    target = Path(path)
    text = geo_text(positions, faces, point_attributes, storage)
    with atomic_write(target) as fh:
        fh.write(text)
    return target


# ------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------
def _kv(value: Any, where: str) -> dict[str, Any]:
    """Houdini's key/value list ``[k0, v0, k1, v1, ...]`` (or a JSON object) as a dict."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, list) or len(value) % 2:
        raise GeoError(f"{where} must be a list of alternating keys and values")
    keys = value[0::2]
    if not all(isinstance(k, str) for k in keys):
        raise GeoError(f"{where} has a key that is not text")
    return dict(zip(keys, value[1::2]))


def _decode_values(values: Any, count: int, size: int, where: str) -> NDArray[np.float64]:
    """Numeric attribute values as (count, size): ``tuples``, ``arrays`` or paged raw data."""
    v = _kv(values, where)
    size = int(v.get("size", size))
    if "tuples" in v:
        out = np.asarray(v["tuples"], dtype=np.float64).reshape(-1, size)
    elif "arrays" in v:
        arrays = np.asarray(v["arrays"], dtype=np.float64)
        out = arrays.reshape(size, -1).T if arrays.ndim == 2 else arrays.reshape(-1, size)
    elif "rawpagedata" in v:
        out = _decode_pages(v, count, size, where)
    else:
        raise GeoError(f"{where}: no 'tuples', 'arrays' or 'rawpagedata'")
    if out.shape[0] != count:
        raise GeoError(f"{where}: {out.shape[0]} values for {count} elements")
    if v.get("storage") in ("fpreal32", "fpreal16"):
        # The text holds enough digits for the stored type: round to it, as Houdini does.
        out = out.astype(np.float32 if v["storage"] == "fpreal32" else np.float16).astype(
            np.float64)
    return out


def _decode_pages(v: dict[str, Any], count: int, size: int, where: str) -> NDArray[np.float64]:
    """Paged storage: pages of ``pagesize`` elements; per page, each packed sub-vector is either
    one constant tuple (its ``constantpageflags`` entry is true) or one tuple per element."""
    raw = np.asarray(v["rawpagedata"], dtype=np.float64)
    packing = [int(p) for p in v.get("packing", [size])]
    pagesize = int(v.get("pagesize", 1024))
    flags = v.get("constantpageflags", [])
    out = np.empty((count, size))
    cursor = 0
    pages = (count + pagesize - 1) // pagesize
    for page in range(pages):
        first = page * pagesize
        n = min(pagesize, count - first)
        base = 0
        for k, width in enumerate(packing):
            pack_flags = flags[k] if k < len(flags) else []
            constant = bool(pack_flags[page]) if page < len(pack_flags) else False
            take = width if constant else n * width
            if cursor + take > raw.size:
                raise GeoError(f"{where}: paged data ends early")
            block = raw[cursor:cursor + take]
            out[first:first + n, base:base + width] = (
                block if constant else block.reshape(n, width))
            cursor += take
            base += width
    return out


def _group_members(selection: Any, count: int, where: str) -> NDArray[np.int64]:
    sel = _kv(selection, where)
    if "unordered" in sel:
        un = _kv(sel["unordered"], where)
        if "i8" in un:
            flags = np.asarray(un["i8"], dtype=np.int64)[:count] != 0
        elif "boolRLE" in un:
            runs = un["boolRLE"]
            flags = np.concatenate([np.full(int(n), bool(b)) for n, b in
                                    zip(runs[0::2], runs[1::2])] or [np.zeros(0, bool)])[:count]
        else:
            raise GeoError(f"{where}: unknown group encoding {sorted(un)}")
        return np.flatnonzero(flags).astype(np.int64)
    if "ordered" in sel:
        return np.unique(np.asarray(sel["ordered"], dtype=np.int64))
    raise GeoError(f"{where}: unknown group selection {sorted(sel)}")


def _faces(primitives: Any, pointref: NDArray[np.int64]) -> list[list[int]]:
    faces: list[list[int]] = []
    for k, entry in enumerate(primitives):
        where = f"primitives[{k}]"
        if not isinstance(entry, list) or len(entry) != 2:
            raise GeoError(f"{where} must be a [header, body] pair")
        head = _kv(entry[0], where)
        kind = head.get("type")
        if kind in ("Polygon_run", "p_r"):
            body = _kv(entry[1], where)
            if body.get("closed", True) is False:
                raise GeoError(f"{where}: open polygons (curves) are not cloth")
            start, nprims = int(body.get("startvertex", 0)), int(body.get("nprimitives", 0))
            if "nvertices_rle" in body:
                rle = body["nvertices_rle"]
                counts = [int(c) for c, r in zip(rle[0::2], rle[1::2]) for _ in range(int(r))]
            else:
                counts = [int(c) for c in body.get("nvertices", [])]
            if len(counts) != nprims:
                raise GeoError(f"{where}: {len(counts)} vertex counts for {nprims} polygons")
            for c in counts:
                faces.append(pointref[start:start + c].tolist())
                start += c
        elif kind in ("Poly", "Polygon"):
            body = _kv(entry[1], where)
            if body.get("closed", True) is False:
                raise GeoError(f"{where}: open polygons (curves) are not cloth")
            faces.append(pointref[np.asarray(body["vertex"], dtype=np.int64)].tolist())
        elif kind == "run" and head.get("runtype") in ("Poly", "Polygon"):
            fields = list(head.get("varyingfields", []))
            if "vertex" not in fields:
                raise GeoError(f"{where}: polygon run without vertex lists")
            col = fields.index("vertex")
            for item in entry[1]:
                faces.append(pointref[np.asarray(item[col], dtype=np.int64)].tolist())
        else:
            raise GeoError(f"{where}: primitive type {kind!r} is not supported (polygons only)")
    return faces


def parse_geo(document: Any, source: str = "<geo>") -> GeoGeometry:
    """:class:`GeoGeometry` of an already parsed ``.geo`` JSON document."""
    top = _kv(document, source)
    for key in ("pointcount", "topology", "attributes"):
        if key not in top:
            raise GeoError(f"{source}: missing {key!r}; not Houdini JSON geometry")
    n = int(top["pointcount"])
    topo = _kv(_kv(top["topology"], "topology").get("pointref", []), "topology.pointref")
    pointref = np.asarray(topo.get("indices", []), dtype=np.int64)
    if pointref.size and (pointref.min() < 0 or pointref.max() >= n):
        raise GeoError(f"{source}: topology refers to points outside [0, {n - 1}]")
    if "vertexcount" in top and int(top["vertexcount"]) != pointref.size:
        raise GeoError(f"{source}: vertexcount {top['vertexcount']} but {pointref.size} "
                       "vertex indices")
    attributes = _kv(top["attributes"], "attributes")
    point_attrs: dict[str, NDArray[np.float64]] = {}
    for k, entry in enumerate(attributes.get("pointattributes", [])):
        where = f"pointattributes[{k}]"
        definition, data = _kv(entry[0], where), _kv(entry[1], where)
        if definition.get("type") != "numeric":
            continue
        values = _decode_values(data["values"], n, int(data.get("size", 1)),
                                f"{where} ({definition.get('name')})")
        point_attrs[str(definition["name"])] = values[:, 0] if values.shape[1] == 1 else values
    if "P" not in point_attrs:
        raise GeoError(f"{source}: no point attribute 'P'")
    positions = np.asarray(point_attrs.pop("P"), dtype=np.float64)[:, :3]
    faces = _faces(top.get("primitives", []), pointref)
    if "primitivecount" in top and int(top["primitivecount"]) != len(faces):
        raise GeoError(f"{source}: primitivecount {top['primitivecount']} but {len(faces)} "
                       "polygons")
    groups: dict[str, NDArray[np.int64]] = {}
    for k, entry in enumerate(top.get("pointgroups", []) or []):
        where = f"pointgroups[{k}]"
        head, body = _kv(entry[0], where), _kv(entry[1], where)
        groups[str(head["name"])] = _group_members(body["selection"], n, where)
    return GeoGeometry(positions=positions, faces=faces, point_attributes=point_attrs,
                       point_groups=groups, fileversion=str(top.get("fileversion", "")))


def read_geo(path: str | os.PathLike[str]) -> GeoGeometry:
    """Read a Houdini ASCII JSON ``.geo`` file (polygons, numeric point attributes, groups)."""
    source = Path(path)
    if not source.is_file():
        raise GeoError(f".geo file not found: {source}")
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GeoError(f"{source}: not JSON ({exc}); binary .bgeo is not supported, save as "
                       ".geo") from None
    try:
        return parse_geo(document, str(source))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        if isinstance(exc, GeoError):
            raise
        raise GeoError(f"{source}: malformed geometry: {exc!r}") from None
