"""VDB colliders from Houdini geometry: block reads, conventions, bad grids, polygon conversion."""

from __future__ import annotations

import sys

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth.houdini import vdb as hvdb


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


@pytest.mark.parametrize("inclusive", [False, True], ids=["exclusive-max", "inclusive-max"])
def test_block_read_reproduces_every_voxel(hou, inclusive: bool) -> None:  # type: ignore
    grid = scenes.sphere_vdb((0.1, 0.5, -0.2), 0.3, 0.05, inclusive=inclusive)
    dense = hvdb.read_vdb(grid, block_voxels=600)  # force many z-slabs
    assert len(grid._range_calls) > 3  # several blocks, plus the one-voxel probe
    assert max(grid._range_calls[1:]) <= 600 or grid._range_calls[1] == 1
    nx, ny, nz = grid._values.shape
    # The read covers the active box through its maximum: one extra background layer at most.
    assert dense.values.shape in ((nx, ny, nz), (nx + 1, ny + 1, nz + 1))
    assert np.array_equal(dense.values[:nx, :ny, :nz], grid._values)
    if dense.values.shape != (nx, ny, nz):
        assert np.all(dense.values[nx:] == grid._background)
    assert dense.voxel_size == 0.05
    np.testing.assert_allclose(dense.origin, 0.05 * grid._lo)  # centre of voxel lo
    assert dense.background == grid._background


def test_block_values_are_signed_distances_at_voxel_centres(hou) -> None:  # type: ignore
    c, r, vs = np.array([0.0, 0.4, 0.0]), 0.25, 0.02
    dense = hvdb.read_vdb(scenes.sphere_vdb(c, r, vs))
    i, j, k = np.indices(dense.values.shape)
    pos = dense.origin + vs * np.stack([i, j, k], axis=-1)
    exact = np.linalg.norm(pos - c, axis=-1) - r
    band = np.abs(exact) < dense.background
    np.testing.assert_allclose(dense.values[band], exact[band], atol=1e-6)


class _ZFastVDB(hou_double.VDB):
    """A grid that hands its voxels back z-fastest: the reader must notice, not misplace them."""

    def voxelRangeAsFloat(self, range):  # type: ignore[no-untyped-def]  # noqa: A002
        values = np.array(super().voxelRangeAsFloat(range))
        lo = [int(round(c)) for c in range.minvec()]
        hi = [int(round(c)) for c in range.maxvec()]
        n = [h - low for h, low in zip(hi, lo)]
        return tuple(values.reshape(n[2], n[1], n[0]).transpose(2, 1, 0).ravel())


def test_a_wrong_voxel_order_is_caught(hou) -> None:  # type: ignore
    good = scenes.sphere_vdb((0.0, 0.0, 0.0), 0.2, 0.05)
    # A tilt along x breaks the sphere's x <-> z symmetry (with it, order would not matter).
    tilted = good._values + 1e-3 * np.arange(good._values.shape[0])[:, None, None]
    hvdb.read_vdb(hou_double.VDB(tilted, good._lo, 0.05, (0.0, 0.0, 0.0), good._background))
    bad = _ZFastVDB(tilted, good._lo, 0.05, (0.0, 0.0, 0.0), good._background)
    with pytest.raises(hvdb.VdbError, match="voxel order"):
        hvdb.read_vdb(bad)


class _Fog(hou_double.VDB):
    def isSDF(self) -> bool:
        return False


class _Stretched(hou_double.VDB):
    def voxelSize(self):  # type: ignore[no-untyped-def]
        return hou_double.Vector3(0.05, 0.05, 0.1)


class _Rotated(hou_double.VDB):
    def transform(self):  # type: ignore[no-untyped-def]
        c, s = np.cos(0.3) * 0.05, np.sin(0.3) * 0.05
        return hou_double.Matrix3([[c, -s, 0], [s, c, 0], [0, 0, 0.05]])


@pytest.mark.parametrize("cls, message", [
    (_Fog, "fog volume"), (_Stretched, "non-uniform"), (_Rotated, "rotated"),
])
def test_unusable_grids_are_refused_clearly(hou, cls, message: str) -> None:  # type: ignore
    g = scenes.sphere_vdb((0.0, 0.0, 0.0), 0.2, 0.05)
    with pytest.raises(hvdb.VdbError, match=message):
        hvdb.read_vdb(cls(g._values, g._lo, 0.05, (0.0, 0.0, 0.0), g._background))


def test_oversized_grid_is_refused_before_reading(hou) -> None:  # type: ignore
    g = scenes.sphere_vdb((0.0, 0.0, 0.0), 0.2, 0.05)
    with pytest.raises(hvdb.VdbError, match="coarser voxel size"):
        hvdb.read_vdb(g, max_voxels=100)
    assert g._range_calls == []


def test_unsupported_primitives_are_named(hou) -> None:  # type: ignore
    pos, quads = scenes.grid_quads(3, 3)
    geo = scenes.geometry(pos, quads, closed=False)
    with pytest.raises(hvdb.VdbError, match="VDB signed distance fields or closed polygons"):
        hvdb.colliders_from_geometry(geo, 0.05, 3)


def test_polygons_are_converted_with_the_vdb_from_polygons_verb(hou, monkeypatch) -> None:  # type: ignore
    # A closed box of quads around (0, 0.5, 0), plus a VDB: two colliders, in that order.
    corners = np.array([[x, y, z] for x in (-0.2, 0.2) for y in (0.3, 0.7) for z in (-0.2, 0.2)])
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    geo = scenes.geometry(corners, faces)
    sphere = scenes.sphere_vdb((1.0, 0.0, 0.0), 0.2, 0.05)
    sphere._number = len(faces)
    geo._prims.append(sphere)
    made: list[hvdb.DenseSdf] = []
    monkeypatch.setattr(hvdb, "sdf_collider", lambda dense: made.append(dense) or dense)
    colliders = hvdb.colliders_from_geometry(geo, voxel_size=0.04, band_voxels=4)
    assert len(colliders) == 2
    verb = hou.sopNodeTypeCategory().nodeVerb("vdbfrompolygons")
    assert verb._calls == [{
        "voxelsize": 0.04, "builddistance": 1, "distancename": "surface", "buildfog": 0,
        "useworldspaceunits": 0, "exteriorbandvoxels": 4, "interiorbandvoxels": 4,
        "fillinterior": 0,
    }]
    assert made[0].voxel_size == 0.05 and made[1].voxel_size == 0.04


@pytest.mark.slow
def test_solver_collides_with_a_vdb_sphere_like_the_headless_core(hou) -> None:  # type: ignore
    pytest.importorskip("pbdcloth.colliders.sdf", reason="SdfCollider (issue 4) not merged yet")
    from pbdcloth import ClothSettings, ClothSolver
    from pbdcloth.houdini import operators as ops
    from pbdcloth.houdini import sops

    center, radius = np.array([0.0, 0.55, 0.0]), 0.3
    grid_vdb = scenes.sphere_vdb(center, radius, 0.025, band_voxels=4)
    pos, quads = scenes.grid_quads(9, 9, size=1.0, height=1.0)
    geo = scenes.geometry(pos, quads)
    pre = scenes.sop(ops.PREPROCESS, "/obj/pre", [scenes.source("/obj/g", lambda f: geo)],
                     pin_group="")
    collider = scenes.source("/obj/vdb", lambda f: scenes.vdb_geometry(grid_vdb))
    solver = scenes.sop(ops.SOLVER, "/obj/solver",
                        [scenes.cooked(pre, sops.cook_preprocess), collider],
                        substeps=8, thickness=0.01)
    out = solver._cook(13, sops.cook_solver)
    p = out._point_values["P"]
    # Headless: the same block through the same from_dense call.
    dense = hvdb.read_vdb(grid_vdb)
    ref = ClothSolver(pos, quads, settings=ClothSettings(substeps=8, thickness=0.01),
                      colliders=[hvdb.sdf_collider(dense)])
    for _ in range(12):
        ref.step(1.0 / 24.0)
    assert np.array_equal(p, ref.positions.astype(np.float32).astype(np.float64))
    # And it really collided: nothing ends deeper than a voxel inside the sphere.
    depth = radius - np.linalg.norm(p - center, axis=1)
    assert depth.max() < 0.025
    assert p[:, 1].min() < center[1]  # the cloth draped over the sides, not stuck on top


@pytest.mark.slow  # about 10 s: CI runs it (./scripts/test.sh --all)
def test_an_animated_vdb_moves_its_collider_rigidly(hou) -> None:  # type: ignore
    """A VDB sphere sliding along x under a pinned-free cloth: the collider follows each frame."""
    pytest.importorskip("pbdcloth.colliders.sdf", reason="SdfCollider (issue 4) not merged yet")
    from pbdcloth import ClothSettings, ClothSolver
    from pbdcloth.houdini import operators as ops
    from pbdcloth.houdini import sops

    center, radius, vs = np.array([0.0, 0.55, 0.0]), 0.3, 0.025
    base = scenes.sphere_vdb(center, radius, vs, band_voxels=4)

    def shifted(frame: float) -> hou_double.VDB:
        moved = hou_double.VDB(base._values, base._lo, vs, [0.02 * (frame - 1), 0.0, 0.0],
                               base._background)
        return moved

    pos, quads = scenes.grid_quads(9, 9, size=1.0, height=1.0)
    geo = scenes.geometry(pos, quads)
    pre = scenes.sop(ops.PREPROCESS, "/obj/pre", [scenes.source("/obj/g", lambda f: geo)],
                     pin_group="")
    collider = scenes.source("/obj/vdb", lambda f: scenes.vdb_geometry(shifted(f)))
    solver = scenes.sop(ops.SOLVER, "/obj/solver",
                        [scenes.cooked(pre, sops.cook_preprocess), collider], substeps=8)
    out = solver._cook(16, sops.cook_solver)
    p = out._point_values["P"]
    start_frame = hvdb.index_frame(shifted(1))
    ref_collider = hvdb.sdf_collider(hvdb.read_vdb(shifted(1)))
    ref = ClothSolver(pos, quads, settings=ClothSettings(substeps=8), colliders=[ref_collider])
    for frame in range(2, 17):
        ref_collider.move_to(hvdb.rigid_motion(start_frame, hvdb.index_frame(shifted(frame))))
        ref.step(1.0 / 24.0)
    assert np.array_equal(p, ref.positions.astype(np.float32).astype(np.float64))
    moved_center = center + [0.02 * 15, 0.0, 0.0]
    assert (radius - np.linalg.norm(p - moved_center, axis=1)).max() < vs
    # Negative control: against the sphere left where it started, the drape is elsewhere.
    still = scenes.sop(ops.SOLVER, "/obj/still",
                       [scenes.cooked(pre, sops.cook_preprocess),
                        scenes.source("/obj/vdb0", lambda f: scenes.vdb_geometry(shifted(1)))],
                       substeps=8)
    q = still._cook(16, sops.cook_solver)._point_values["P"]
    assert np.abs(q - p).max() > 0.05


def test_rigid_motion_of_a_still_grid_is_exactly_the_identity() -> None:
    frame = (np.array([0.1, 0.2, 0.3]), np.eye(3) * 0.025)
    assert np.array_equal(hvdb.rigid_motion(frame, frame), np.eye(4))
    moved = (frame[0] + [1.0, 0.0, 0.0], frame[1])
    m = hvdb.rigid_motion(frame, moved)
    np.testing.assert_allclose(m[:3, 3], [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(m[:3, :3], np.eye(3), atol=1e-12)
