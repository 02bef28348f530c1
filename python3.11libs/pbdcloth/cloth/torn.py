"""A torn cloth's model as plain arrays, and back: what checkpoints store after a tear (or once
a stitch has been sewn or broken).

A torn model follows from the model the cloth was built with (the *untorn* model) and a few
arrays: ``origin`` (the input point of each particle), ``triangles`` (the torn corners), ``cut``
(torn half-edges), ``mass`` (each copy's share), the colors of the stretch, shear and bend
constraints in topology order (carried from tear to tear, so they depend on the tear's history
and are stored rather than recomputed) and the rows of the stitches still holding
(``stitch_index``, ``triangle_stitch_index``) with their sewn flags (``stitch_sewn``,
``triangle_stitch_sewn``) and the hinges' rest angles (``bend_rest``, which bend plasticity
moves). Rest positions, pins, point attributes and the stitches' particles
follow from ``origin`` (:func:`~pbdcloth.cloth.tear.carry_extras`). Putting
the arrays back rebuilds the same model bit for bit, so a run resumed from a checkpoint goes on
exactly as the uninterrupted run; the arrays are checked against the untorn model first
(``origin[triangles]`` must be its triangles), so a checkpoint of another cloth is refused.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..arrays import I
from .coloring import coloring_of
from .mesh import ClothMesh, MeshError
from .model import ClothModel, FamilyColorings, assemble_model
from .tear import bend_rest_in_topology_order, carry_extras, family_colors
from .topology import build_topology


def torn_arrays(model: ClothModel, origin: I, torn_edges: int) -> dict[str, Any]:
    """Copies of the arrays that rebuild ``model`` from the untorn one (see the module
    docstring): ``origin``, ``triangles``, ``cut``, ``mass``, ``stretch_colors``,
    ``shear_colors``, ``bend_colors``, ``stitch_index``, ``triangle_stitch_index``,
    ``stitch_sewn``, ``triangle_stitch_sewn``, ``bend_rest`` and the count ``torn_edges``."""
    return {"origin": np.asarray(origin, dtype=np.int64).copy(),
            "triangles": model.mesh.triangles.astype(np.int64, copy=True),
            "cut": model.topology.cut.copy(), "mass": model.mass.copy(),
            **family_colors(model), "torn_edges": np.int64(torn_edges),
            "stitch_index": model.stitch_list.index.astype(np.int64, copy=True),
            "triangle_stitch_index": model.triangle_stitch_list.index.astype(np.int64,
                                                                             copy=True),
            "stitch_sewn": model.stitch_list.sewn.copy(),
            "triangle_stitch_sewn": model.triangle_stitch_list.sewn.copy(),
            "bend_rest": bend_rest_in_topology_order(model)}


def _array(arrays: dict[str, Any], key: str, dtype: Any, shape: tuple[int, ...]) -> Any:
    if key not in arrays:
        raise MeshError(f"a torn cloth's state needs '{key}' (from get_state), got "
                        f"{sorted(arrays)}")
    arr = np.asarray(arrays[key])
    if arr.shape != shape:
        raise MeshError(f"torn state '{key}' must have shape {shape}, got {arr.shape}")
    if dtype is bool:
        if arr.dtype != bool:
            raise MeshError(f"torn state '{key}' must be true/false values, got {arr.dtype}")
        return arr.copy()
    if dtype is int:
        if arr.dtype.kind not in "iu":
            raise MeshError(f"torn state '{key}' must be whole numbers, got {arr.dtype}")
        return arr.astype(np.int64)
    if arr.dtype.kind != "f" or not np.isfinite(arr).all():
        raise MeshError(f"torn state '{key}' must be finite real numbers")
    return arr.astype(np.float64)


def restore_torn(untorn: ClothModel, arrays: object) -> tuple[ClothModel, I, I, int]:
    """The torn model, ``origin``, the pins' rows in the untorn pin order and the torn-edge
    count from :func:`torn_arrays` output; a MeshError names what does not fit ``untorn``."""
    if not isinstance(arrays, dict):
        raise MeshError(f"torn state must be a dict from get_state, got {type(arrays).__name__}")
    n0 = untorn.particle_count
    tris0 = untorn.mesh.triangles
    origin_raw = np.asarray(arrays.get("origin", np.zeros(0)))
    if origin_raw.ndim != 1 or origin_raw.size < n0:
        raise MeshError(f"torn state 'origin' must list at least the {n0} input points, got "
                        f"shape {origin_raw.shape}")
    n = int(origin_raw.size)
    origin = _array(arrays, "origin", int, (n,))
    if (origin < 0).any() or (origin >= n0).any() or not np.array_equal(origin[:n0],
                                                                        np.arange(n0)):
        raise MeshError("torn state 'origin' does not belong to this cloth (points must come "
                        f"from input points 0..{n0 - 1}, the first {n0} from themselves)")
    tris = _array(arrays, "triangles", int, tris0.shape)
    if (tris < 0).any() or (tris >= n).any() or not np.array_equal(origin[tris], tris0):
        raise MeshError("torn state 'triangles' do not belong to this cloth (their corners "
                        "must be copies of the input triangles' corners)")
    cut = _array(arrays, "cut", bool, tris0.shape)
    mass = _array(arrays, "mass", float, (n,))
    if (mass <= 0.0).any():
        raise MeshError("torn state 'mass' must be positive")
    mesh = ClothMesh(positions=untorn.mesh.positions[origin], triangles=tris)
    top = build_topology(mesh, cut)
    colorings = []
    for key, rows in (("stretch_colors", top.edges), ("shear_colors", top.shear_pairs),
                      ("bend_colors", top.bend_quads)):
        colors = _array(arrays, key, int, (rows.shape[0],))
        if colors.size and colors.min() < 0:
            raise MeshError(f"torn state '{key}' must be colors >= 0")
        _check_colors(rows, colors, key)
        colorings.append(coloring_of(colors))
    was_pinned = np.zeros(n0, dtype=bool)
    was_pinned[untorn.pinned] = True
    pins = np.flatnonzero(was_pinned[origin]).astype(np.int64)
    rows = np.searchsorted(untorn.pinned, origin[pins]).astype(np.intp)
    model = assemble_model(mesh, top, mass, pins, FamilyColorings(*colorings))
    rows_st = _rows(arrays, "stitch_index", untorn.stitch_list.count)
    rows_tri = _rows(arrays, "triangle_stitch_index", untorn.triangle_stitch_list.count)
    sewn = {key: _array(arrays, key, bool, (size,)) if key in arrays else None
            for key, size in (("stitch_sewn", rows_st.size),
                              ("triangle_stitch_sewn", rows_tri.size))}
    model = carry_extras(model, untorn, origin, rows_st, rows_tri, sewn["stitch_sewn"],
                         sewn["triangle_stitch_sewn"])
    if "bend_rest" in arrays:
        rest = _array(arrays, "bend_rest", float, (top.bend_quads.shape[0],))
        model = replace(model, bend=replace(model.bend, rest_angle=np.ascontiguousarray(
            rest[model.bend.source])))
    torn = int(np.asarray(arrays.get("torn_edges", 0)))
    return model, origin.astype(np.intp), rows, torn


def _rows(arrays: dict[str, Any], key: str, count: int) -> I:
    """Rows of a stitch list still holding: increasing, within [0, count); all when absent."""
    if key not in arrays:
        return np.arange(count, dtype=np.intp)
    raw = np.asarray(arrays[key])
    rows = _array(arrays, key, int, (raw.size,)) if raw.ndim == 1 else None
    if rows is None or (rows.size and (rows[0] < 0 or rows[-1] >= count
                                       or (np.diff(rows) <= 0).any())):
        raise MeshError(f"torn state '{key}' must be increasing rows of the cloth's {count} "
                        "stitches")
    return rows.astype(np.intp)


def _check_colors(rows: I, colors: I, key: str) -> None:
    """Refuse colors under which two constraints of one color share a particle."""
    if rows.shape[0] == 0:
        return
    k = rows.shape[1]
    pairs = np.stack([np.repeat(colors, k), rows.reshape(-1)], axis=1)
    if np.unique(pairs, axis=0).shape[0] != pairs.shape[0]:
        raise MeshError(f"torn state '{key}' is not a coloring: two constraints of one color "
                        "share a particle")


__all__ = ["restore_torn", "torn_arrays"]
