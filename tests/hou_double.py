"""A minimal test double of Houdini's ``hou`` module, enough to run pbdcloth's cook functions.

Only classes, methods and functions that exist in the ``types-houdini`` stubs are offered, with
the stubs' parameter names (``tests/test_houdini_double.py`` proves it), so code that works with
this double calls real API. Public names here are hou API; everything the tests use to build
scenes is private (leading underscore) or lives in ``tests/houdini_scenes.py``.

Behaviour follows the HOM documentation: Python SOP cooks get ``node.geometry()`` as a writable
copy of input 0; ``inputGeometryAtFrame`` evaluates an input at another frame; attribute byte
strings are little-endian arrays of the requested ``numericData`` type, point-major.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

# --- enums and exceptions ----------------------------------------------------------------------


class EnumValue:
    def __init__(self, _name: str) -> None:
        self._name = _name

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"hou.{self._name}"


class numericData:  # noqa: N801 - hou's spelling
    Float32 = EnumValue("numericData.Float32")
    Float64 = EnumValue("numericData.Float64")
    Int32 = EnumValue("numericData.Int32")
    Int64 = EnumValue("numericData.Int64")


class attribType:  # noqa: N801
    Point = EnumValue("attribType.Point")
    Prim = EnumValue("attribType.Prim")
    Vertex = EnumValue("attribType.Vertex")
    Global = EnumValue("attribType.Global")


class attribData:  # noqa: N801
    Int = EnumValue("attribData.Int")
    Float = EnumValue("attribData.Float")
    String = EnumValue("attribData.String")


class geometryType:  # noqa: N801
    Points = EnumValue("geometryType.Points")
    Primitives = EnumValue("geometryType.Primitives")


class vdbData:  # noqa: N801
    Float = EnumValue("vdbData.Float")
    Vector3 = EnumValue("vdbData.Vector3")


class primType:  # noqa: N801
    Polygon = EnumValue("primType.Polygon")
    VDB = EnumValue("primType.VDB")


class Error(Exception):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)


class OperationFailed(Error):
    pass


class NodeError(Error):
    pass


class OperationInterrupted(Error):
    pass


_DTYPES = {
    "numericData.Float32": np.dtype("<f4"),
    "numericData.Float64": np.dtype("<f8"),
    "numericData.Int32": np.dtype("<i4"),
    "numericData.Int64": np.dtype("<i8"),
}

# --- math types ----------------------------------------------------------------------------------


class Vector3:
    def __init__(self, x: Any = 0.0, y: float = 0.0, z: float = 0.0) -> None:
        if isinstance(x, (Vector3, list, tuple, np.ndarray)):
            self._v = [float(c) for c in x]
        else:
            self._v = [float(x), float(y), float(z)]

    def __getitem__(self, index: int) -> float:
        return self._v[index]

    def __len__(self) -> int:
        return 3

    def __iter__(self) -> Any:
        return iter(self._v)


class Matrix3:
    def __init__(self, values: Any = 1.0) -> None:
        self._m = np.asarray(values, dtype=np.float64).reshape(3, 3) \
            if not np.isscalar(values) else np.eye(3) * float(values)

    def asTuple(self) -> tuple[float, ...]:
        return tuple(float(c) for c in self._m.reshape(-1))


class BoundingBox:
    def __init__(self, bbox_or_xmin: Any = 0.0, ymin: float = 0.0, zmin: float = 0.0,
                 xmax: float = 0.0, ymax: float = 0.0, zmax: float = 0.0) -> None:
        self._min = [float(bbox_or_xmin), float(ymin), float(zmin)]
        self._max = [float(xmax), float(ymax), float(zmax)]

    def minvec(self) -> Vector3:
        return Vector3(self._min)

    def maxvec(self) -> Vector3:
        return Vector3(self._max)


# --- geometry ------------------------------------------------------------------------------------


class Attrib:
    def __init__(self, _geo: "Geometry", _kind: EnumValue, _name: str, _data: EnumValue,
                 _size: int, _array: bool) -> None:
        self._geo, self._kind, self._name = _geo, _kind, _name
        self._data, self._size, self._array = _data, _size, _array
        self._options: dict[str, Any] = {}

    def name(self) -> str:
        return self._name

    def size(self) -> int:
        return self._size

    def dataType(self) -> EnumValue:
        return self._data

    def isArrayType(self) -> bool:
        return self._array

    def setOption(self, name: str, value: Any, type_hint: Any = None) -> None:
        self._geo._check_writable()
        self._options[name] = value

    def option(self, option_name: str) -> Any:
        return self._options.get(option_name)

    def destroy(self) -> None:
        table = self._geo._point_attribs if self._kind is attribType.Point \
            else self._geo._global_attribs
        del table[self._name]


class Point:
    def __init__(self, _number: int) -> None:
        self._number = _number

    def number(self) -> int:
        return self._number


class Vertex:
    def __init__(self, _point: int) -> None:
        self._point = _point

    def point(self) -> Point:
        return Point(self._point)


class Prim:
    _type_enum = EnumValue("primType.Unknown")

    def __init__(self) -> None:
        self._number = -1
        self._floats: dict[str, float] = {}

    def number(self) -> int:
        return self._number

    def floatAttribValue(self, attrib: Any) -> float:
        name = attrib if isinstance(attrib, str) else attrib.name()
        return float(self._floats.get(name, 0.0))

    def type(self) -> EnumValue:
        return self._type_enum

    def vertices(self) -> tuple[Vertex, ...]:
        return ()

    def intrinsicValue(self, intrinsic_name: str) -> Any:
        raise OperationFailed(f"Invalid intrinsic name: {intrinsic_name}")


class Face(Prim):
    def isClosed(self) -> bool:
        return self._closed

    def __init__(self, _points: Sequence[int], _closed: bool = True) -> None:
        super().__init__()
        self._points = [int(p) for p in _points]
        self._closed = _closed

    def vertices(self) -> tuple[Vertex, ...]:
        return tuple(Vertex(p) for p in self._points)


class Polygon(Face):
    _type_enum = primType.Polygon


class VDB(Prim):
    """A float level set stored densely: ``_values[i, j, k]`` is voxel ``_lo + (i, j, k)``.

    ``_inclusive`` picks how ``voxelRangeAsFloat`` reads a box's maximum, so tests can check that
    the reader works with either convention.
    """

    _type_enum = primType.VDB

    def __init__(self, _values: np.ndarray, _lo: Sequence[int], _voxel_size: float,
                 _index_origin: Sequence[float], _background: float,
                 _inclusive: bool = False) -> None:
        super().__init__()
        self._values = np.asarray(_values, dtype=np.float32)
        self._lo = np.asarray(_lo, dtype=np.int64)
        self._voxel_size = float(_voxel_size)
        self._index_origin = np.asarray(_index_origin, dtype=np.float64)
        self._background = float(_background)
        self._inclusive = _inclusive
        self._range_calls: list[int] = []

    def dataType(self) -> EnumValue:
        return vdbData.Float

    def isSDF(self) -> bool:
        return True

    def activeVoxelCount(self) -> int:
        return int(np.count_nonzero(np.abs(self._values) < self._background))

    def voxelSize(self) -> Vector3:
        return Vector3(self._voxel_size, self._voxel_size, self._voxel_size)

    def transform(self) -> Matrix3:
        return Matrix3(np.eye(3) * self._voxel_size)

    def taper(self) -> float:
        return 1.0

    def activeVoxelBoundingBox(self) -> BoundingBox:
        hi = self._lo + np.array(self._values.shape)  # exclusive, as documented
        return BoundingBox(*[float(c) for c in self._lo], *[float(c) for c in hi])

    def voxel(self, index: Sequence[int]) -> float:
        ijk = np.asarray(index, dtype=np.int64) - self._lo
        if np.any(ijk < 0) or np.any(ijk >= np.array(self._values.shape)):
            return self._background
        return float(self._values[tuple(ijk)])

    def voxelRangeAsFloat(self, range: BoundingBox) -> tuple[float, ...]:  # noqa: A002
        lo = [int(round(c)) for c in range.minvec()]
        hi = [int(round(c)) for c in range.maxvec()]
        end = [h + 1 if self._inclusive else h for h in hi]
        out = []
        for z in range_(lo[2], end[2]):
            for y in range_(lo[1], end[1]):
                for x in range_(lo[0], end[0]):
                    out.append(self.voxel((x, y, z)))
        self._range_calls.append(len(out))
        return tuple(out)

    def indexToPos(self, index: Sequence[int]) -> Vector3:
        return Vector3(self._index_origin + self._voxel_size * np.asarray(index, dtype=float))

    def intrinsicValue(self, intrinsic_name: str) -> Any:
        if intrinsic_name == "background":
            return self._background
        return super().intrinsicValue(intrinsic_name)

    def volumeMin(self) -> float:
        return float(self._values.min())

    def volumeMax(self) -> float:
        return float(self._values.max())

    def volumeAverage(self) -> float:
        return float(self._values.mean())


range_ = range  # VDB.voxelRangeAsFloat's parameter is named "range", as in hou


class PointGroup:
    def __init__(self, _name: str) -> None:
        self._name = _name

    def name(self) -> str:
        return self._name


class PrimGroup:
    def __init__(self, _name: str, _prims: Sequence[Prim]) -> None:
        self._name = _name
        self._prims = tuple(_prims)

    def name(self) -> str:
        return self._name

    def prims(self) -> tuple[Prim, ...]:
        return self._prims


class Geometry:
    """Points with float attributes, polygons and VDBs, point and primitive groups, detail
    attributes."""

    def __init__(self, geo: "Geometry | None" = None, clone_data_ids: bool = False) -> None:
        self._point_attribs: dict[str, Attrib] = {}
        self._point_values: dict[str, np.ndarray] = {}
        self._global_attribs: dict[str, Attrib] = {}
        self._global_values: dict[str, Any] = {}
        self._groups: dict[str, np.ndarray] = {}
        self._prim_groups: dict[str, list[int]] = {}
        self._prims: list[Prim] = []
        self._count = 0
        self._read_only = False
        if geo is not None:
            self._count = geo._count
            for name, a in geo._point_attribs.items():
                self._point_attribs[name] = Attrib(self, a._kind, name, a._data, a._size,
                                                   a._array)
                self._point_values[name] = geo._point_values[name].copy()
            for name, a in geo._global_attribs.items():
                self._global_attribs[name] = Attrib(self, a._kind, name, a._data, a._size,
                                                    a._array)
                self._global_values[name] = list(geo._global_values[name])
            self._groups = {k: v.copy() for k, v in geo._groups.items()}
            self._prim_groups = {k: list(v) for k, v in geo._prim_groups.items()}
            self._prims = list(geo._prims)  # prims are immutable in this double

    # points and attributes
    def pointCount(self) -> int:
        return self._count

    def primCount(self) -> int:
        return len(self._prims)

    def prim(self, index: int) -> Prim | None:
        return self._prims[index] if 0 <= index < len(self._prims) else None

    def prims(self) -> tuple[Prim, ...]:
        return tuple(self._prims)

    def findPointAttrib(self, name: str) -> Attrib | None:
        return self._point_attribs.get(name)

    def findGlobalAttrib(self, name: str) -> Attrib | None:
        return self._global_attribs.get(name)

    def findPrimAttrib(self, name: str) -> Attrib | None:
        """A float primitive attribute exists when some primitive carries a value for it (the
        others read 0, its default)."""
        if any(name in p._floats for p in self._prims):
            return Attrib(self, attribType.Prim, name, attribData.Float, 1, False)
        return None

    def findPointGroup(self, name: str) -> PointGroup | None:
        return PointGroup(name) if name in self._groups else None

    def findPrimGroup(self, name: str, scope: EnumValue | None = None) -> PrimGroup | None:
        if name not in self._prim_groups:
            return None
        return PrimGroup(name, [self._prims[i] for i in self._prim_groups[name]])

    def globPoints(self, pattern: str, ordered: bool = False) -> tuple[Point, ...]:
        chosen: list[int] = []
        for token in pattern.split():
            if token in self._groups:
                chosen.extend(int(i) for i in self._groups[token])
            elif token.isdigit():
                chosen.append(int(token))
            elif "-" in token and all(part.isdigit() for part in token.split("-", 1)):
                a, b = (int(part) for part in token.split("-", 1))
                chosen.extend(range(a, b + 1))
            else:
                raise OperationFailed(f"Invalid pattern: {token}")
        return tuple(Point(i) for i in chosen)

    def pointFloatAttribValuesAsString(self, name: str, float_type: EnumValue = numericData.Float32
                                       ) -> bytes:
        a = self._point_attribs.get(name)
        if a is None or a._data is not attribData.Float:
            raise OperationFailed(f"Invalid attribute name: {name}")
        return self._point_values[name].astype(_DTYPES[float_type.name()]).tobytes()

    def setPointFloatAttribValuesFromString(self, name: str, values: bytes,
                                            float_type: EnumValue = numericData.Float32) -> None:
        self._check_writable()
        a = self._point_attribs.get(name)
        if a is None or a._data is not attribData.Float:
            raise OperationFailed(f"Invalid attribute name: {name}")
        arr = np.frombuffer(values, dtype=_DTYPES[float_type.name()])
        if arr.size != self._count * a._size:
            raise OperationFailed(
                f"Size of values ({arr.size}) does not match {self._count} points x {a._size}")
        self._point_values[name] = arr.astype(np.float64).reshape(self._count, a._size)

    def addAttrib(self, type: EnumValue, name: str, default_value: Any,  # noqa: A002
                  transform_as_normal: bool = False, create_local_variable: bool = True
                  ) -> Attrib:
        self._check_writable()
        if type is not attribType.Point:
            raise NotImplementedError("the double adds point attributes only")
        if name in self._point_attribs:
            raise OperationFailed(f"Attribute {name} already exists")
        default = np.atleast_1d(np.asarray(default_value, dtype=np.float64))
        if not isinstance(np.asarray(default_value).reshape(-1)[0].item(), float):
            raise NotImplementedError("the double adds float point attributes only")
        attrib = Attrib(self, type, name, attribData.Float, default.size, False)
        self._point_attribs[name] = attrib
        self._point_values[name] = np.tile(default, (self._count, 1))
        return attrib

    def addArrayAttrib(self, type: EnumValue, name: str, data_type: EnumValue,  # noqa: A002
                       tuple_size: int = 1) -> Attrib:
        self._check_writable()
        if type is not attribType.Global:
            raise NotImplementedError("the double adds detail array attributes only")
        if name in self._global_attribs:
            raise OperationFailed(f"Attribute {name} already exists")
        attrib = Attrib(self, type, name, data_type, tuple_size, True)
        self._global_attribs[name] = attrib
        self._global_values[name] = []
        return attrib

    def setGlobalAttribValue(self, name_or_attrib: Any, attrib_value: Any) -> None:
        self._check_writable()
        name = name_or_attrib if isinstance(name_or_attrib, str) else name_or_attrib.name()
        a = self._global_attribs.get(name)
        if a is None:
            raise OperationFailed(f"Invalid attribute name: {name}")
        values = list(attrib_value)
        want = int if a._data is attribData.Int else float
        if not all(isinstance(v, want) and not isinstance(v, bool) for v in values):
            raise TypeError(f"values for {name} must all be {want.__name__}")
        self._global_values[name] = values

    def intListAttribValue(self, name_or_attrib: Any) -> tuple[int, ...]:
        name = name_or_attrib if isinstance(name_or_attrib, str) else name_or_attrib.name()
        a = self._global_attribs.get(name)
        if a is None or a._data is not attribData.Int:
            raise OperationFailed(f"Invalid attribute name: {name}")
        return tuple(int(v) for v in self._global_values[name])

    def floatListAttribValue(self, name_or_attrib: Any) -> tuple[float, ...]:
        name = name_or_attrib if isinstance(name_or_attrib, str) else name_or_attrib.name()
        a = self._global_attribs.get(name)
        if a is None or a._data is not attribData.Float:
            raise OperationFailed(f"Invalid attribute name: {name}")
        return tuple(float(v) for v in self._global_values[name])

    def pointAttribs(self) -> tuple[Attrib, ...]:
        return tuple(self._point_attribs.values())

    def createPoints(self, point_positions: Sequence[Any]) -> tuple[Point, ...]:
        """Appends points at the positions; their other attributes take the defaults (0)."""
        self._check_writable()
        first, count = self._count, len(point_positions)
        for name, values in self._point_values.items():
            grown = np.zeros((first + count, values.shape[1]))
            grown[:first] = values
            if name == "P":
                grown[first:] = np.asarray([tuple(p) for p in point_positions], dtype=np.float64)
            self._point_values[name] = grown
        self._count = first + count
        return tuple(Point(first + k) for k in range(count))

    def createPolygons(self, point_positions: Sequence[Sequence[Any]], is_closed: bool = True
                       ) -> tuple[Polygon, ...]:
        """Appends one polygon per sequence of point numbers (or points), as hou does (its
        parameter is named ``point_positions`` though it takes points)."""
        self._check_writable()
        made = []
        for corners in point_positions:
            numbers = [c.number() if isinstance(c, Point) else int(c) for c in corners]
            if any(not 0 <= k < self._count for k in numbers):
                raise OperationFailed(f"Invalid point number in {numbers}")
            poly = Polygon(numbers, is_closed)
            poly._number = len(self._prims)
            self._prims.append(poly)
            made.append(poly)
        return tuple(made)

    def deletePrims(self, prims: Sequence[Prim], keep_points: bool = False) -> None:
        self._check_writable()
        drop = {id(p) for p in prims}
        self._prims = [p for p in self._prims if id(p) not in drop]

    def saveToFile(self, file_name: str) -> None:
        """Writes P and the other float point attributes as JSON (a stand-in for .bgeo.sc)."""
        import json

        data = {"pointcount": self._count,
                "point": {n: np.asarray(v).tolist() for n, v in self._point_values.items()}}
        with open(file_name, "w", encoding="utf-8") as fh:
            json.dump(data, fh)

    def _check_writable(self) -> None:
        if self._read_only:
            raise OperationFailed("GeometryPermissionError: the geometry is read-only")


# --- nodes, parameters, verbs ---------------------------------------------------------------------


class _Expression:
    """A parameter holding an expression: ``text`` as Houdini shows it, ``fn(frame)`` its value."""

    def __init__(self, text: str, fn: Callable[[float], Any]) -> None:
        self.text, self.fn = text, fn


class _Keys:
    """A parameter animated by keyframes ``{frame: value}``: linear between keys, constant
    outside them (the double's stand-in for Houdini's segment functions)."""

    def __init__(self, keys: dict[float, float]) -> None:
        self.keys = dict(sorted((float(f), float(v)) for f, v in keys.items()))

    def at(self, frame: float) -> float:
        frames = list(self.keys)
        return float(np.interp(frame, frames, [self.keys[f] for f in frames]))


class BaseKeyframe:
    def __init__(self, _frame: float, _expression: str = "") -> None:
        self._frame, self._expression = float(_frame), _expression

    def frame(self) -> float:
        return self._frame

    def expression(self) -> str:
        return self._expression

    def isExpressionSet(self) -> bool:
        return bool(self._expression)

    def asCode(self, brief: bool = False, save_keys_in_frames: bool = False,
               function_name: str | None = None) -> str:
        return f"hou_keyframe.setFrame({self._frame!r})\nexpression={self._expression!r}"


class Keyframe(BaseKeyframe):
    def __init__(self, _frame: float, _value: float | None, _expression: str = "") -> None:
        super().__init__(_frame, _expression)
        self._value = _value

    def value(self) -> float:
        if self._value is None:
            raise KeyframeValueNotSet("value not set")
        return float(self._value)

    def isValueSet(self) -> bool:
        return self._value is not None

    def asCode(self, brief: bool = False, save_keys_in_frames: bool = False,
               function_name: str | None = None) -> str:
        return super().asCode(brief, save_keys_in_frames, function_name) + \
            f"\nvalue={self._value!r}"


class KeyframeValueNotSet(Error):
    pass


class Parm:
    """One parameter (or one component of a vector ``ParmTuple``). Its raw value is a constant,
    an :class:`_Expression` (or a plain callable of the frame), or :class:`_Keys`."""

    def __init__(self, _node: "SopNode", _name: str, _index: int | None = None) -> None:
        self._node, self._name, self._index = _node, _name, _index

    def _raw(self) -> Any:
        value = self._node._parm_values[self._name]
        return value if self._index is None else value[self._index]

    def _value_at(self, frame: float) -> Any:
        raw = self._raw()
        self._node._parm_evaluations += 1
        if isinstance(raw, _Keys):
            return raw.at(frame)
        if isinstance(raw, _Expression):
            return raw.fn(frame)
        return raw(frame) if callable(raw) else raw

    def _value(self) -> Any:
        return self._value_at(self._node._frame)

    def set(self, value: Any, language: Any = None, follow_parm_reference: bool = True) -> None:
        """A constant value (as a script callback sets it)."""
        if self._index is None:
            self._node._parm_values[self._name] = value
        else:
            current = list(self._node._parm_values[self._name])
            current[self._index] = value
            self._node._parm_values[self._name] = tuple(current)

    def evalAsFloat(self) -> float:
        return float(self._value())

    def evalAsInt(self) -> int:
        return int(self._value())

    def evalAsString(self) -> str:
        return str(self._value())

    def evalAsFloatAtFrame(self, frame: float) -> float:
        return float(self._value_at(frame))

    def evalAsIntAtFrame(self, frame: float) -> int:
        return int(self._value_at(frame))

    def evalAsStringAtFrame(self, frame: float) -> str:
        return str(self._value_at(frame))

    def evalAtFrame(self, frame: float) -> int | float | str:
        value = self._value_at(frame)
        return value if isinstance(value, (int, float, str)) else str(value)

    def keyframes(self) -> tuple[BaseKeyframe, ...]:
        raw = self._raw()
        if isinstance(raw, _Keys):
            return tuple(Keyframe(f, v) for f, v in raw.keys.items())
        if isinstance(raw, _Expression):
            return (Keyframe(0.0, None, raw.text),)
        if callable(raw):
            return (Keyframe(0.0, None, f"python: {raw!r}"),)
        return ()

    def unexpandedString(self) -> str:
        return str(self._raw())

    def rawValue(self) -> str:
        keys = self.keyframes()
        if keys and keys[0].isExpressionSet():
            return keys[0].expression()
        return str(self._value())

    def isTimeDependent(self) -> bool:
        raw = self._raw()
        if isinstance(raw, _Keys):
            return len(set(raw.keys.values())) > 1
        return isinstance(raw, _Expression) or callable(raw)


class ParmTuple:
    def __init__(self, _node: "SopNode", _name: str) -> None:
        self._node, self._name = _node, _name

    def __getitem__(self, index: int) -> Parm:
        return Parm(self._node, self._name, index)

    def __len__(self) -> int:
        return len(self._node._parm_values[self._name])

    def __iter__(self) -> Any:
        return iter([self[k] for k in range(len(self))])

    def evalAsFloats(self) -> tuple[float, ...]:
        return tuple(p.evalAsFloat() for p in self)

    def evalAsFloatsAtFrame(self, frame: float) -> tuple[float, ...]:
        return tuple(p.evalAsFloatAtFrame(frame) for p in self)


class InterruptableOperation:
    """Checks for Esc at each ``updateProgress``: the double presses it at the call number
    ``_state.interrupt_on_call`` (counting every call since the state was made)."""

    def __init__(self, operation_name: str, long_operation_name: str | None = None,
                 open_interrupt_dialog: bool = False, timeout_ms: int = 0) -> None:
        self._name = operation_name
        _state.operations.append(operation_name)

    def updateProgress(self, percentage: float = -1.0) -> None:
        _state.progress_calls += 1
        _state.progress.append(float(percentage))
        if _state.interrupt_on_call and _state.progress_calls == _state.interrupt_on_call:
            _state.interrupt_on_call = 0
            raise OperationInterrupted("Cooking was interrupted")

    def __enter__(self) -> "InterruptableOperation":
        return self

    def __exit__(self, type: Any, value: Any, traceback: Any) -> None:  # noqa: A002
        return None


class SopNode:
    """A SOP whose geometry is either a function of the frame (a source) or cooked by Python."""

    def __init__(self, _path: str, _parms: dict[str, Any] | None = None,
                 _inputs: Sequence["SopNode | None"] = (),
                 _source: Callable[[float], Geometry] | None = None,
                 _time_dependent: bool = True,
                 _cook_fn: Callable[["SopNode"], None] | None = None) -> None:
        self._path = _path
        self._time_dependent = _time_dependent
        self._cook_fn = _cook_fn
        self._warnings: list[str] = []
        self._parm_evaluations = 0
        self._parm_values = dict(_parms or {})
        self._inputs = list(_inputs)
        self._source = _source
        self._frame = 1.0
        self._output: Geometry | None = None
        self._user_data: dict[str, Any] = {}
        self._parms_read: set[str] = set()
        self._input_frames: list[tuple[int, float]] = []

    def path(self) -> str:
        return self._path

    def parm(self, parm_path: str) -> Parm | None:
        self._parms_read.add(parm_path)
        return Parm(self, parm_path) if parm_path in self._parm_values else None

    def parmTuple(self, parm_path: str) -> ParmTuple | None:
        self._parms_read.add(parm_path)
        return ParmTuple(self, parm_path) if parm_path in self._parm_values else None

    def inputs(self) -> tuple["SopNode | None", ...]:
        return tuple(self._inputs)

    def geometry(self, output_index: int = 0) -> Geometry | None:
        if self._source is not None:
            geo = self._source(self._frame)
            geo._read_only = True
            return geo
        return self._output

    def inputGeometryAtFrame(self, frame: float, index: int) -> Geometry | None:
        self._input_frames.append((index, float(frame)))
        node = self._inputs[index] if index < len(self._inputs) else None
        if node is None or node._source is None:
            return None
        geo = node._source(float(frame))
        geo._read_only = True
        return geo

    def cachedUserData(self, name: str) -> Any:
        return self._user_data.get(name)

    def destroyCachedUserData(self, name: str, must_exist: bool = True) -> None:
        if name not in self._user_data:
            if must_exist:
                raise OperationFailed(f"no cached user data {name!r}")
            return
        del self._user_data[name]

    def isTimeDependent(self, for_last_cook: bool = False) -> bool:
        """A source says so itself; a cooked node is when a parameter or an input is."""
        own = self._time_dependent if self._source is not None else any(
            Parm(self, name).isTimeDependent() for name in self._parm_values)
        return own or any(n is not None and n.isTimeDependent() for n in self._inputs)

    def addWarning(self, message: str | None = None) -> None:
        self._warnings.append(message or "")

    def warnings(self) -> tuple[str, ...]:
        return tuple(self._warnings)

    def geometryAtFrame(self, frame: float, output_index: int = 0) -> Geometry | None:
        if self._source is not None:
            geo = self._source(float(frame))
            geo._read_only = True
            return geo
        if self._cook_fn is None:
            raise OperationFailed(f"{self._path} cannot cook")
        geo = self._cook(frame, self._cook_fn)
        geo._read_only = True
        return geo

    def cook(self, force: bool = False, frame_range: Sequence[float] = ()) -> None:
        if self._cook_fn is not None:
            self._cook(frame_range[0] if frame_range else self._frame, self._cook_fn)

    def setCachedUserData(self, name: str, value: Any) -> None:
        self._user_data[name] = value

    def _cook(self, frame: float, cook: Callable[["SopNode"], None]) -> Geometry:
        """Cook like a Python SOP at ``frame``: output starts as a copy of input 0."""
        self._frame = float(frame)
        self._warnings = []
        upstream = self._inputs[0] if self._inputs else None
        self._output = Geometry(upstream._source(self._frame)) \
            if upstream is not None and upstream._source is not None else Geometry()
        _state.current = self
        cook(self)
        return self._output


class OpVerb:
    def setParms(self, p: dict[str, Any]) -> None:
        self._parms = dict(p)


class SopVerb(OpVerb):
    """Stands in for *VDB from Polygons*: makes the SDF of the polygons' bounding sphere."""

    def __init__(self, _name: str) -> None:
        self._name = _name
        self._parms: dict[str, Any] = {}
        self._calls: list[dict[str, Any]] = []

    def execute(self, dest: Geometry, inputs: Sequence[Geometry]) -> None:
        self._calls.append(dict(self._parms))
        src = inputs[0]
        pts = src._point_values["P"]
        used = sorted({v._point for p in src._prims for v in p.vertices()})
        center = pts[used].mean(axis=0)
        radius = float(np.linalg.norm(pts[used] - center, axis=1).mean())
        vs = float(self._parms["voxelsize"])
        band = int(self._parms["exteriorbandvoxels"]) * vs
        n = int(np.ceil((radius + band) / vs))
        idx = np.arange(-n, n + 1)
        gx, gy, gz = np.meshgrid(idx, idx, idx, indexing="ij")
        pos = center[:, None, None, None] + vs * np.stack([gx, gy, gz])
        dist = np.sqrt(((pos - center[:, None, None, None]) ** 2).sum(axis=0)) - radius
        values = np.clip(dist, -band, band)
        lo = np.floor(center / vs).astype(np.int64) - n
        # Voxel lo + i is centred at center + vs * (i - n); index_origin is where index 0 is.
        dest._prims.append(VDB(values, lo, vs, center - vs * n - vs * lo, band))


class OpNodeTypeCategory:
    def __init__(self) -> None:
        self._verbs = {"vdbfrompolygons": SopVerb("vdbfrompolygons")}

    def nodeVerb(self, verb_name: str) -> OpVerb | None:
        return self._verbs.get(verb_name)


class NodeType:
    def __init__(self, _name: str) -> None:
        self._name = _name

    def name(self) -> str:
        return self._name


class hda:  # noqa: N801 - hou's spelling
    """Installing an asset library makes the operators its INDEX__SECTION names known."""

    @staticmethod
    def installFile(file_path: str, oplibraries_file: str | None = None,
                    change_oplibraries_file: bool = True, force_use_assets: bool = False
                    ) -> None:
        from pathlib import Path

        index = Path(file_path) / "INDEX__SECTION"
        if not index.is_file():
            raise OperationFailed(f"Unable to install {file_path}")
        _state.installs.append((file_path, change_oplibraries_file))
        for line in index.read_text(encoding="utf-8").splitlines():
            if line.startswith("Operator:"):
                _state.node_types.add(line.split(":", 1)[1].strip())


class _State:
    def __init__(self) -> None:
        self.fps = 24.0
        self.current: SopNode | None = None
        self.category = OpNodeTypeCategory()
        self.interrupt_on_call = 0
        self.progress_calls = 0
        self.progress: list[float] = []
        self.operations: list[str] = []
        self.node_types: set[str] = set()
        self.installs: list[tuple[str, bool]] = []


_state = _State()


def pwd() -> SopNode:
    if _state.current is None:
        raise OperationFailed("no node is cooking")
    return _state.current


def fps() -> float:
    return _state.fps


def frame(full_precision: bool = False) -> float:
    return _state.current._frame if _state.current is not None else 1.0


def nodeType(category_or_name: Any, internal_name: str | None = None) -> NodeType | None:
    return NodeType(internal_name) if internal_name in _state.node_types else None


def sopNodeTypeCategory() -> OpNodeTypeCategory:
    return _state.category
