"""Colliders from Houdini geometry: VDB signed distance fields, read voxel block by voxel block.

A ``hou.VDB`` level set is copied once into a dense numpy block (its active voxel bounding box)
with ``voxelRangeAsFloat`` over z-slabs of bounded size, then handed to
:meth:`pbdcloth.colliders.sdf.SdfCollider.from_dense`, which samples it for all particles at once.
Per-point ``VDB.sample``/``gradient`` calls (the seed's approach) are never used: they cost one
Python call per particle per iteration.

Closed polygon colliders are first turned into a level set with Houdini's own *VDB from Polygons*
operation, run as a SOP verb on the geometry (no node is created).

Conventions checked at run time rather than assumed: whether ``voxelRangeAsFloat`` treats the
box's maximum as inclusive or exclusive (probed with a one-voxel box), and that the values come
x-fastest (the voxels at the block's minimum and maximum are compared with ``VDB.voxel``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
from numpy.typing import NDArray

from ..arrays import F as F64

if TYPE_CHECKING:
    import hou

    from ..colliders.base import Collider


#: Voxels read per ``voxelRangeAsFloat`` call (a Python tuple of floats of this length).
BLOCK_VOXELS = 1 << 21
#: Largest dense block accepted (float32: 4 bytes per voxel).
MAX_VOXELS = 1 << 28


class VdbError(ValueError):
    """A VDB or volume that cannot serve as a collider; the message says why and what to do."""


@dataclass(frozen=True)
class DenseSdf:
    """A signed distance field on a regular, axis-aligned grid.

    Attributes:
        values: signed distance at voxel centres [m], negative inside, shape (nx, ny, nz),
            float32; ``values[i, j, k]`` is at ``origin + voxel_size * (i, j, k)``.
        voxel_size: edge length of a voxel [m].
        origin: world position of the centre of voxel (0, 0, 0) of ``values`` [m], shape (3,).
        background: distance reported outside the stored narrow band [m] (positive).
    """

    values: NDArray[np.float32]
    voxel_size: float
    origin: F64
    background: float


def read_vdb(prim: "hou.VDB", block_voxels: int = BLOCK_VOXELS,
             max_voxels: int = MAX_VOXELS) -> DenseSdf:
    """Copy a float level-set VDB's active region into a :class:`DenseSdf`.

    Raises:
        VdbError: not a float SDF, empty, non-uniform or rotated voxels, too many voxels, or
            voxel values that do not come back in the expected order.
    """
    import hou

    where = f"VDB primitive {prim.number()}"
    if prim.dataType() != hou.vdbData.Float:
        raise VdbError(f"{where} holds {prim.dataType().name()} voxels; a collider needs a "
                       "float signed distance field (VDB from Polygons, distance VDB)")
    if not prim.isSDF():
        raise VdbError(f"{where} is a fog volume, not a signed distance field; convert it "
                       "with Convert VDB (VDB Class: Convert Fog to SDF)")
    if prim.activeVoxelCount() == 0:
        raise VdbError(f"{where} is empty (no active voxels)")
    voxel_size = _uniform_voxel_size(prim, where)
    _check_axis_aligned(prim, voxel_size, where)

    box = prim.activeVoxelBoundingBox()
    lo = np.array([int(round(c)) for c in box.minvec()], dtype=np.int64)
    # Read through the box's maximum inclusively: if the box is exclusive this adds one layer
    # of background voxels, which is harmless; if inclusive it is exactly the active region.
    hi = np.array([int(round(c)) for c in box.maxvec()], dtype=np.int64)
    shape = hi - lo + 1
    if np.any(shape <= 0):
        raise VdbError(f"{where} has an empty active bounding box {lo.tolist()}..{hi.tolist()}")
    total = int(np.prod(shape))
    if total > max_voxels:
        raise VdbError(
            f"{where} spans {shape.tolist()} = {total} voxels, more than the {max_voxels} a "
            "dense copy allows; use a coarser voxel size or clip the VDB to the cloth's reach"
        )
    inclusive = _range_is_inclusive(prim, lo, where)
    nx, ny, nz = (int(s) for s in shape)
    values = np.empty((nx, ny, nz), dtype=np.float32)
    slab = max(1, block_voxels // (nx * ny))
    for k0 in range(0, nz, slab):
        k1 = min(nz, k0 + slab)  # exclusive, in block coordinates
        z0, z1 = int(lo[2]) + k0, int(lo[2]) + k1 - 1  # inclusive, in index space
        end = 1 if not inclusive else 0
        bbox = hou.BoundingBox(float(lo[0]), float(lo[1]), float(z0),
                               float(hi[0] + end), float(hi[1] + end), float(z1 + end))
        flat = np.asarray(prim.voxelRangeAsFloat(bbox), dtype=np.float32)
        expected = nx * ny * (k1 - k0)
        if flat.size != expected:
            raise VdbError(f"{where}: voxelRangeAsFloat returned {flat.size} values for a "
                           f"{nx}x{ny}x{k1 - k0} block (expected {expected})")
        values[:, :, k0:k1] = flat.reshape(k1 - k0, ny, nx).transpose(2, 1, 0)
    _check_order(prim, values, lo, where)
    origin_v = prim.indexToPos([int(c) for c in lo])
    origin = np.array([float(c) for c in origin_v], dtype=np.float64)
    return DenseSdf(values=values, voxel_size=voxel_size, origin=origin,
                    background=_background(prim, values))


def _uniform_voxel_size(prim: "hou.VDB", where: str) -> float:
    size = np.array([float(c) for c in prim.voxelSize()], dtype=np.float64)
    if not np.all(np.isfinite(size)) or np.any(size <= 0.0):
        raise VdbError(f"{where} has an unusable voxel size {size.tolist()}")
    if np.ptp(size) > 1e-6 * size.max():
        raise VdbError(f"{where} has non-uniform voxels {size.tolist()}; resample it with "
                       "uniform voxels (VDB Resample)")
    return float(size[0])


def _check_axis_aligned(prim: "hou.VDB", voxel_size: float, where: str) -> None:
    """Refuse rotated, sheared or tapered grids: the dense sampler is axis aligned."""
    m = np.array(prim.transform().asTuple(), dtype=np.float64).reshape(3, 3)
    scale = np.abs(np.diag(m))
    off = m - np.diag(np.diag(m))
    if np.any(np.diag(m) <= 0.0) or np.abs(off).max() > 1e-6 * scale.max() \
            or abs(prim.taper() - 1.0) > 1e-9:
        raise VdbError(f"{where} is rotated, mirrored or tapered; resample it onto an "
                       f"axis-aligned grid (VDB Resample) before using it as a collider")


def _range_is_inclusive(prim: "hou.VDB", lo: NDArray[np.int64], where: str) -> bool:
    """Probe ``voxelRangeAsFloat`` with a one-voxel box: 1 value = exclusive max, 8 = inclusive."""
    import hou

    x, y, z = (float(c) for c in lo)
    count = len(prim.voxelRangeAsFloat(hou.BoundingBox(x, y, z, x + 1.0, y + 1.0, z + 1.0)))
    if count == 1:
        return False
    if count == 8:
        return True
    raise VdbError(f"{where}: voxelRangeAsFloat returned {count} values for a unit box; "
                   "this Houdini version reads voxel ranges in an unknown way")


def _check_order(prim: "hou.VDB", values: NDArray[np.float32], lo: NDArray[np.int64],
                 where: str) -> None:
    """Compare a few voxels of the block with ``VDB.voxel`` at their indices.

    The block's smallest and largest voxels, and three at asymmetric positions, so that a block
    read in another axis order (x <-> z) disagrees somewhere unless the field is symmetric
    under that swap (in which case the order does not matter).
    """
    shape = np.array(values.shape)
    probes: list[tuple[int, ...]] = [
        tuple(int(v) for v in np.unravel_index(int(np.argmin(values)), values.shape)),
        tuple(int(v) for v in np.unravel_index(int(np.argmax(values)), values.shape)),
    ]
    for frac in ((0.3, 0.6, 0.45), (0.7, 0.2, 0.55), (0.45, 0.35, 0.8)):
        probes.append(tuple(int(v) for v in np.minimum((shape * frac).astype(int), shape - 1)))
    for ijk in probes:
        index = [int(lo[a] + ijk[a]) for a in range(3)]
        direct = float(prim.voxel(index))
        if not np.isclose(direct, float(values[ijk]), rtol=1e-6, atol=1e-7):
            raise VdbError(f"{where}: voxel {index} reads {direct} directly but "
                           f"{float(values[ijk])} in the block; voxel order not understood")


def _background(prim: "hou.VDB", values: NDArray[np.float32]) -> float:
    """The grid's background (exterior band width) from its intrinsic, else the largest value."""
    import hou

    try:
        value = prim.intrinsicValue("background")
    except hou.Error:  # an intrinsic this Houdini does not have
        value = None
    if isinstance(value, (int, float)) and np.isfinite(value) and value > 0.0:
        return float(value)
    return float(np.abs(values).max())


def sdf_collider(dense: DenseSdf) -> "Collider":
    """An :class:`~pbdcloth.colliders.sdf.SdfCollider` sampling ``dense``."""
    from ..colliders.sdf import SdfCollider

    return SdfCollider.from_dense(dense.values, dense.voxel_size, dense.origin, dense.background)


def polygons_to_vdb(geo: "hou.Geometry", voxel_size: float, band_voxels: int) -> "hou.Geometry":
    """Level set of the closed polygons of ``geo`` by Houdini's *VDB from Polygons* verb."""
    import hou

    verb = hou.sopNodeTypeCategory().nodeVerb("vdbfrompolygons")
    if not isinstance(verb, hou.SopVerb):
        raise VdbError("this Houdini has no 'vdbfrompolygons' SOP verb to convert polygon "
                       "colliders; feed the solver a VDB (VDB from Polygons) instead")
    verb.setParms({
        "voxelsize": float(voxel_size),
        "builddistance": 1,
        "distancename": "surface",
        "buildfog": 0,
        "useworldspaceunits": 0,
        "exteriorbandvoxels": int(band_voxels),
        "interiorbandvoxels": int(band_voxels),
        "fillinterior": 0,
    })
    out = hou.Geometry()
    verb.execute(out, [geo])
    return out


def polygon_level_sets(geo: "hou.Geometry", voxel_size: float, band_voxels: int
                       ) -> list["hou.VDB"]:
    """The level sets *VDB from Polygons* makes of the polygons of ``geo`` (its other
    primitives left out)."""
    import hou

    polys = hou.Geometry(geo)
    drop: Sequence[hou.Prim] = [p for p in polys.prims() if not isinstance(p, hou.Polygon)]
    if drop:
        polys.deletePrims(drop)
    return [p for p in polygons_to_vdb(polys, voxel_size, band_voxels).prims()
            if isinstance(p, hou.VDB)]


def index_frame(prim: "hou.VDB") -> tuple[F64, F64]:
    """Where a VDB's voxel lattice sits: (world position of index (0, 0, 0), 3x3 map).

    The map's columns are the world steps of one voxel along i, j and k (column vectors), read
    with ``indexToPos`` so that no matrix convention has to be assumed.
    """
    origin = np.array([float(c) for c in prim.indexToPos([0, 0, 0])])
    steps = [np.array([float(c) for c in prim.indexToPos(list(e))]) - origin
             for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
    return origin, np.stack(steps, axis=1)


def rigid_motion(start: tuple[F64, F64], now: tuple[F64, F64]) -> F64:
    """4x4 matrix (column vectors) moving the lattice at ``start`` onto the lattice at ``now``.

    ``x_now = R (x_start - o_start) + o_now`` with ``R = L_now L_start^-1``; rigid when the VDB was
    only moved and turned (a scaled VDB gives a non-rigid matrix, which the collider refuses).
    """
    (o0, l0), (o1, l1) = start, now
    if np.array_equal(o0, o1) and np.array_equal(l0, l1):
        return np.eye(4)  # exactly still: no motion, no round-off
    rot = l1 @ np.linalg.inv(l0)
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = o1 - rot @ o0
    return m


def vdb_prims(geo: "hou.Geometry") -> list["hou.VDB"]:
    """The VDB primitives of ``geo``, in primitive order."""
    import hou

    return [p for p in geo.prims() if isinstance(p, hou.VDB)]


def colliders_from_geometry(geo: "hou.Geometry", voxel_size: float,
                            band_voxels: int, convert_polygons: bool = True) -> list["Collider"]:
    """Colliders for every VDB SDF of ``geo`` and one for all its closed polygons together
    (without ``convert_polygons`` the polygons are left to the caller).

    The VDB colliders come first, in primitive order (see :func:`vdb_prims`).

    Raises:
        VdbError: a primitive type that is neither a VDB SDF nor a closed polygon.
    """
    import hou

    vdbs: list[hou.VDB] = []
    polygon_prims: list[hou.Prim] = []
    other: list[hou.Prim] = []
    for prim in geo.prims():
        if isinstance(prim, hou.VDB):
            vdbs.append(prim)
        elif isinstance(prim, hou.Polygon) and prim.isClosed():
            polygon_prims.append(prim)
        else:
            other.append(prim)
    if other:
        names = sorted({p.type().name() for p in other})
        raise VdbError(
            f"collider input has primitive(s) {[p.number() for p in other[:8]]} of type(s) "
            f"{names}; give it VDB signed distance fields or closed polygons (unpack packed "
            "primitives, convert volumes with Convert VDB)"
        )
    dense = [read_vdb(v) for v in vdbs]
    if polygon_prims and convert_polygons:
        made = polygon_level_sets(geo, voxel_size, band_voxels)
        if not made:
            raise VdbError("VDB from Polygons made no level set from the collider polygons; "
                           "are they closed and larger than the voxel size?")
        dense.extend(read_vdb(v) for v in made)
    return [sdf_collider(d) for d in dense]
