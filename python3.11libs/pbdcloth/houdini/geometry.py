"""Moving data between ``hou.Geometry`` and numpy arrays.

Point attributes travel in bulk as byte strings (``pointFloatAttribValuesAsString`` /
``setPointFloatAttribValuesFromString``): one call per attribute, never a Python loop over points.
Two things have no bulk call in HOM and loop in Python, once per simulation (never per frame):
the point numbers of each polygon (:func:`polygons`, and of the stitch polylines,
:func:`stitch_polylines`) and the members of the pin group (:func:`point_group_indices`, a loop
over the pinned points only).

Detail ("global") array attributes hold the cloth's topology under the seed's names (see
:meth:`pbdcloth.topology.Topology.detail_arrays`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Mapping

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import hou

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


class GeometryError(ValueError):
    """Input geometry the cook cannot use; the message names the problem and the input."""


def point_count(geo: "hou.Geometry") -> int:
    return geo.pointCount()


def read_point_floats(geo: "hou.Geometry", name: str, size: int) -> F64:
    """A float point attribute as an (N, size) float64 array (N, for size 1).

    Raises:
        GeometryError: no such attribute, or its tuple size is not ``size``.
    """
    import hou

    attrib = geo.findPointAttrib(name)
    if attrib is None:
        raise GeometryError(f"the geometry has no point attribute {name!r}")
    if attrib.size() != size or attrib.dataType() != hou.attribData.Float:
        raise GeometryError(
            f"point attribute {name!r} must be {size} float(s) per point, got "
            f"{attrib.size()} of {attrib.dataType().name()}"
        )
    raw = geo.pointFloatAttribValuesAsString(name, float_type=hou.numericData.Float64)
    values = np.frombuffer(raw, dtype=np.float64).astype(np.float64)
    return values if size == 1 else values.reshape(-1, size)


def read_positions(geo: "hou.Geometry") -> F64:
    """Point positions P [m], shape (N, 3), float64."""
    return read_point_floats(geo, "P", 3)


def write_point_floats(geo: "hou.Geometry", name: str, values: NDArray[np.floating],
                       replace: bool = False) -> "hou.Attrib":
    """Write an (N,) or (N, k) float array as a point attribute, creating it if needed.

    An existing attribute of another size or type is replaced with ``replace``, else refused
    with a GeometryError naming it (never Houdini's bare ``OperationFailed``).
    """
    import hou

    arr = np.ascontiguousarray(values, dtype=np.float32)
    size = 1 if arr.ndim == 1 else int(arr.shape[1])
    count = point_count(geo)
    if arr.shape[0] != count:
        raise GeometryError(
            f"cannot write {arr.shape[0]} values of {name!r} to geometry with {count} points"
        )
    attrib = geo.findPointAttrib(name)
    if attrib is not None and (attrib.size() != size or attrib.dataType() != hou.attribData.Float):
        if not replace:
            raise GeometryError(
                f"point attribute {name!r} exists with {attrib.size()} "
                f"{attrib.dataType().name()} value(s) per point; pbdcloth writes {size} "
                "float(s) there: rename or delete it upstream")
        attrib.destroy()
        attrib = None
    try:
        if attrib is None:
            default: float | tuple[float, ...] = 0.0 if size == 1 else (0.0,) * size
            attrib = geo.addAttrib(hou.attribType.Point, name, default)
        geo.setPointFloatAttribValuesFromString(name, arr.tobytes(),
                                                float_type=hou.numericData.Float32)
    except hou.OperationFailed as exc:
        raise GeometryError(f"could not write point attribute {name!r}: {exc}") from None
    return attrib


def write_velocities(geo: "hou.Geometry", velocities: NDArray[np.floating]) -> None:
    """Write ``v`` [m/s], (N, 3), typed as a vector so that transforms rotate it; a ``v`` of
    another size is replaced (``v`` is velocity by Houdini's convention)."""
    attrib = write_point_floats(geo, "v", velocities, replace=True)
    attrib.setOption("type", "vector")


def write_positions(geo: "hou.Geometry", positions: NDArray[np.floating]) -> None:
    """Set P of every point from an (N, 3) array [m]."""
    write_point_floats(geo, "P", positions)


def polygons(geo: "hou.Geometry", skip: Collection[int] = ()) -> list[list[int]]:
    """Point numbers of each closed polygon, in primitive order, leaving out the primitive
    numbers in ``skip`` (the stitch polylines, :func:`stitch_polylines`).

    HOM has no bulk call for primitive point numbers, so this loops over primitives; call it
    once per simulation (it is cached with the topology), not per frame.

    Raises:
        GeometryError: a primitive that is not a closed polygon, or no primitives.
    """
    import hou

    faces: list[list[int]] = []
    for prim in geo.prims():
        if prim.number() in skip:
            continue
        if not isinstance(prim, hou.Polygon) or not prim.isClosed():
            what = "an open polyline" if isinstance(prim, hou.Polygon) else prim.type().name()
            raise GeometryError(
                f"primitive {prim.number()} is {what}; the cloth must be closed polygons "
                "(triangles or quads)"
            )
        faces.append([v.point().number() for v in prim.vertices()])
    if not faces:
        raise GeometryError("the cloth geometry has no polygons")
    return faces


def polylines(geo: "hou.Geometry") -> list[I64]:
    """Point numbers of each open polyline, in primitive order (one chain each).

    Raises:
        GeometryError: a primitive that is not an open polygon, or one with fewer than 2 points.
    """
    import hou

    chains: list[I64] = []
    for prim in geo.prims():
        if not isinstance(prim, hou.Polygon) or prim.isClosed():
            raise GeometryError(
                f"primitive {prim.number()} is not an open polyline; each chain must be an "
                "open polyline (e.g. from Add or Curve SOPs)"
            )
        points = np.array([v.point().number() for v in prim.vertices()], dtype=np.int64)
        if points.size < 2:
            raise GeometryError(f"polyline {prim.number()} has {points.size} point(s); "
                                "a chain needs at least 2")
        chains.append(points)
    if not chains:
        raise GeometryError("the chain geometry has no polylines")
    return chains


def stitch_polylines(geo: "hou.Geometry", group: str = "") -> tuple[I64, list[int]]:
    """Stitches from two-point open polylines, as Vellum's stitch and weld constraints take
    them: (pairs (K, 2) of point numbers, the polylines' primitive numbers).

    ``group`` names a primitive group holding them; empty: every open two-point polyline of
    the geometry. A loop over the polylines only (once per simulation).

    Raises:
        GeometryError: no such primitive group, or a member that is not a two-point open
            polyline.
    """
    import hou

    name = group.strip()
    if name:
        found = geo.findPrimGroup(name)
        if found is None:
            raise GeometryError(f"the cloth has no primitive group {name!r} (the stitch "
                                "polylines)")
        prims: tuple["hou.Prim", ...] = found.prims()
    else:
        prims = tuple(p for p in geo.prims() if isinstance(p, hou.Polygon) and not p.isClosed()
                      and len(tuple(p.vertices())) == 2)
    pairs, numbers = [], []
    for prim in prims:
        points = [v.point().number() for v in prim.vertices()]
        if not isinstance(prim, hou.Polygon) or prim.isClosed() or len(points) != 2:
            raise GeometryError(f"primitive {prim.number()} of stitch group {name!r} is not a "
                                "two-point open polyline")
        pairs.append(points)
        numbers.append(prim.number())
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return arr, numbers


#: Float primitive attribute of stitch polylines: the length [m] past which a stitch breaks.
BREAK_LENGTH = "breaklength"


def stitch_break_lengths(geo: "hou.Geometry", prims: list[int]) -> F64 | None:
    """The :data:`BREAK_LENGTH` of each stitch polyline (primitive numbers ``prims``; 0: never
    breaks); None when the geometry has no such attribute. One read per
    polyline (stitches are few, and this runs once per simulation).

    Raises:
        GeometryError: the attribute is not one float, or a value is negative or not finite.
    """
    import hou

    attrib = geo.findPrimAttrib(BREAK_LENGTH)
    if attrib is None:
        return None
    if attrib.size() != 1 or attrib.dataType() != hou.attribData.Float:
        raise GeometryError(f"the primitive attribute {BREAK_LENGTH!r} must be one float per "
                            "stitch polyline [m]")
    values = np.zeros(len(prims))
    for k, number in enumerate(prims):
        prim = geo.prim(number)
        if prim is None:
            raise GeometryError(f"the geometry has no primitive {number}")
        values[k] = prim.floatAttribValue(attrib)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0.0))
    if bad.size:
        raise GeometryError(f"stitch polyline {prims[int(bad[0])]} has {BREAK_LENGTH} "
                            f"{values[bad[0]]!r}; it must be >= 0 m (0: never breaks)")
    return values


def read_point_attributes(geo: "hou.Geometry") -> dict[str, F64]:
    """The declared per-point attributes (:data:`pbdcloth.cloth.attributes.POINT_ATTRIBUTES`)
    the geometry has, read by their Houdini names (``bendstiffness_scale``, ``pinweight``,
    ...), keyed by their pbdcloth names; (N,) float64 each, one bulk read per attribute.

    Raises:
        GeometryError: an attribute of that name that is not one float per point.
    """
    from ..cloth.attributes import POINT_ATTRIBUTES

    return {a.name: read_point_floats(geo, a.houdini, 1) for a in POINT_ATTRIBUTES
            if geo.findPointAttrib(a.houdini) is not None}


def point_group_indices(geo: "hou.Geometry", pattern: str) -> I64:
    """Sorted point numbers matched by a group name or pattern (``pins``, ``0-9``, ``@P.y>1``).

    An empty pattern matches nothing (no pins), unlike most SOPs where it means all points.

    Raises:
        GeometryError: the pattern names a group the geometry does not have.
    """
    pattern = pattern.strip()
    if not pattern:
        return np.zeros(0, dtype=np.int64)
    import hou

    is_group_name = pattern.replace("_", "").isalnum() and not pattern[0].isdigit()
    if is_group_name and geo.findPointGroup(pattern) is None:
        raise GeometryError(f"the cloth has no point group {pattern!r}")
    try:
        points = geo.globPoints(pattern)
    except hou.OperationFailed as exc:
        raise GeometryError(f"bad point pattern {pattern!r}: {exc}") from None
    return np.unique(np.array([p.number() for p in points], dtype=np.int64))


def write_detail_arrays(geo: "hou.Geometry", arrays: Mapping[str, NDArray[np.generic]]) -> None:
    """Write each array as a detail array attribute (int arrays as Int, others as Float)."""
    import hou

    for name, values in arrays.items():
        flat = np.asarray(values).reshape(-1)
        is_int = np.issubdtype(flat.dtype, np.integer)
        data_type = hou.attribData.Int if is_int else hou.attribData.Float
        attrib = geo.findGlobalAttrib(name)
        if attrib is not None and (attrib.dataType() != data_type or not attrib.isArrayType()):
            attrib.destroy()
            attrib = None
        if attrib is None:
            geo.addArrayAttrib(hou.attribType.Global, name, data_type, 1)
        geo.setGlobalAttribValue(name, flat.tolist())


def read_detail_int_array(geo: "hou.Geometry", name: str) -> I64:
    """A detail int array attribute as int64, or GeometryError naming it when absent."""
    if geo.findGlobalAttrib(name) is None:
        raise GeometryError(f"the geometry has no detail array {name!r}")
    return np.asarray(geo.intListAttribValue(name), dtype=np.int64)


def read_detail_float_array(geo: "hou.Geometry", name: str) -> F64:
    """A detail float array attribute as float64, or GeometryError naming it when absent."""
    if geo.findGlobalAttrib(name) is None:
        raise GeometryError(f"the geometry has no detail array {name!r}")
    return np.asarray(geo.floatListAttribValue(name), dtype=np.float64)


def apply_torn_topology(geo: "hou.Geometry", triangles: I64, origin: I64) -> None:
    """Turn ``geo`` (the untorn cloth's points and polygons) into a torn cloth's: new points
    appended for the split ones (``origin``: the input point of every point, the first
    ``pointCount()`` being themselves), each taking its input point's float attributes, and the
    polygons replaced by ``triangles`` (T, 3). Primitive attributes of the input are not
    carried over (a torn cloth is triangles); integer and string point attributes of new
    points keep their defaults.

    Raises:
        GeometryError: ``origin`` does not extend this geometry's points.
    """
    import hou

    n0 = point_count(geo)
    origin = np.asarray(origin, dtype=np.int64)
    if origin.size < n0 or not np.array_equal(origin[:n0], np.arange(n0)) \
            or (origin.size and origin.max() >= n0):
        raise GeometryError(f"a torn cloth's points must extend the {n0} points of its input")
    floats = {a.name(): read_point_floats(geo, a.name(), a.size()) for a in geo.pointAttribs()
              if a.dataType() == hou.attribData.Float and not a.isArrayType()}
    extra = int(origin.size - n0)
    if extra:
        geo.createPoints([(0.0, 0.0, 0.0)] * extra)
    for name, values in floats.items():
        write_point_floats(geo, name, values[origin])
    geo.deletePrims(geo.prims())
    geo.createPolygons([tuple(t) for t in np.asarray(triangles, dtype=np.int64).tolist()], True)
