"""Deforming polygon colliders in the solver SOP, on the stub-checked Houdini double: with
Polygon Colliders = Triangles the points of input 1 drive a MeshCollider every frame; with VDB
from Polygons their level set is made again every frame once they move (an SdfSequence)."""

from __future__ import annotations

import sys

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.colliders import MeshCollider
from pbdcloth.houdini import operators as ops
from pbdcloth.houdini import sops

CORNERS = np.array([[x, y, z] for x in (-0.3, 0.3) for y in (-0.05, 0.05) for z in (-0.3, 0.3)])
FACES = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


def platform(frame: float) -> np.ndarray:
    """A 0.6 m slab rising from y = 0.3 by 1 cm a frame and widening along x by 1 % a frame:
    it deforms (not a rigid motion)."""
    p = CORNERS * np.array([1.0 + 0.01 * (frame - 1), 1.0, 1.0])
    return p + np.array([0.0, 0.3 + 0.01 * (frame - 1), 0.0])


def _solver(hou, make, path: str = "/obj/solver"):  # type: ignore[no-untyped-def]
    pos, quads = scenes.grid_quads(9, 9, size=0.5, height=0.45)
    pre = scenes.sop(ops.PREPROCESS, "/obj/pre",
                     [scenes.source("/obj/g", lambda f: scenes.geometry(pos, quads))],
                     pin_group="")
    collider = scenes.source(path + "_col", make)
    node = scenes.sop(ops.SOLVER, path, [scenes.cooked(pre, sops.cook_preprocess), collider],
                      substeps=8, thickness=0.01, collider_method="triangles")
    return node, pos, quads


def test_deforming_polygons_drive_a_mesh_collider_every_frame(hou) -> None:  # type: ignore
    node, pos, quads = _solver(hou, lambda f: scenes.geometry(platform(f), FACES))
    p = node._cook(12, sops.cook_solver)._point_values["P"]
    # Headless: the same triangles, moved to the same points before each frame.
    tris = np.array([[f[0], f[k], f[k + 1]] for f in FACES for k in (1, 2)])
    body = MeshCollider(platform(1), tris)
    ref = ClothSolver(pos, quads, settings=ClothSettings(substeps=8, thickness=0.01),
                      colliders=[body])
    for frame in range(2, 13):
        body.move_to(platform(frame))
        ref.step(1.0 / 24.0)
    assert np.array_equal(p, ref.positions.astype(np.float32).astype(np.float64))
    # It collided with the slab where the slab is at frame 12: on its top, a thickness up.
    assert p[:, 1].min() > platform(12)[:, 1].max() + 0.009
    # The points change every frame, and so does the result: the slab left at its start
    # shape gives another drape.
    still, _, _ = _solver(hou, lambda f: scenes.geometry(platform(1), FACES), "/obj/still")
    q = still._cook(12, sops.cook_solver)._point_values["P"]
    assert np.abs(q - p).max() > 0.05


@pytest.mark.slow  # about 20 s: CI runs it (./scripts/test.sh --all)
def test_deforming_polygons_as_vdb_are_converted_again_every_frame(hou) -> None:  # type: ignore
    """Polygon Colliders = VDB from Polygons (the default) on the deforming slab: from the first
    frame its points move, the solver makes its level set again at every frame, as a headless
    SdfSequence of the same conversions gives bit for bit, with no warning; the slab held at
    its start shape gives another drape."""
    from pbdcloth.colliders import SdfSequence
    from pbdcloth.houdini import vdb as hvdb

    voxel = float(ops.COLLIDER_VOXEL_SIZE.decl.default)
    band = int(ops.COLLIDER_BAND_VOXELS.decl.default)
    pos, quads = scenes.grid_quads(9, 9, size=0.5, height=0.45)
    pre = scenes.sop(ops.PREPROCESS, "/obj/pre",
                     [scenes.source("/obj/g", lambda f: scenes.geometry(pos, quads))],
                     pin_group="")
    node = scenes.sop(ops.SOLVER, "/obj/solver",
                      [scenes.cooked(pre, sops.cook_preprocess),
                       scenes.source("/obj/col", lambda f: scenes.geometry(platform(f), FACES))],
                      substeps=8, thickness=0.01)
    p = node._cook(12, sops.cook_solver)._point_values["P"]
    assert not node._warnings

    def level_set(f: int):  # type: ignore[no-untyped-def]
        made = hvdb.polygons_to_vdb(scenes.geometry(platform(f), FACES), voxel, band)
        return hvdb.sdf_collider(hvdb.read_vdb(made.prims()[0]))

    ref = ClothSolver(pos, quads, settings=ClothSettings(substeps=8, thickness=0.01),
                      colliders=[SdfSequence(level_set, first_frame=1)])
    for _ in range(11):
        ref.step(1.0 / 24.0)
    assert np.array_equal(p, ref.positions.astype(np.float32).astype(np.float64))
    still = scenes.sop(ops.SOLVER, "/obj/still",
                       [scenes.cooked(pre, sops.cook_preprocess),
                        scenes.source("/obj/col0", lambda f: scenes.geometry(platform(1), FACES))],
                       substeps=8, thickness=0.01)
    q = still._cook(12, sops.cook_solver)._point_values["P"]
    assert np.abs(q - p).max() > 0.02


def test_a_topology_change_of_the_collision_polygons_is_a_node_error_naming_the_frame(
        hou) -> None:  # type: ignore
    def make(frame: float):  # type: ignore[no-untyped-def]
        faces = FACES if frame < 5 else [FACES[0][::-1]] + FACES[1:]
        return scenes.geometry(platform(frame), faces)

    node, _, _ = _solver(hou, make)
    node._cook(4, sops.cook_solver)
    with pytest.raises(hou.NodeError, match="at frame 5 differ from the start frame's"):
        node._cook(6, sops.cook_solver)


@pytest.mark.slow  # about 10 s: CI runs it (./scripts/test.sh --all)
def test_a_vdb_whose_voxels_change_becomes_a_level_set_sequence(hou) -> None:  # type: ignore
    """A VDB sphere that grows every frame (its voxels change, as VDB from Polygons of a
    deforming character per frame gives): the solver reads its level set every frame and blends
    them across the substeps, like the headless SdfSequence; a VDB kept at its first frame's
    voxels gives another drape."""
    pytest.importorskip("pbdcloth.colliders.sdf")
    from pbdcloth.colliders import SdfSequence
    from pbdcloth.houdini import vdb as hvdb

    center, vs = np.array([0.0, 0.55, 0.0]), 0.025

    def sphere(frame: float):  # type: ignore[no-untyped-def]
        return scenes.sphere_vdb(center, 0.25 + 0.01 * (frame - 1), vs, band_voxels=4)

    pos, quads = scenes.grid_quads(9, 9, size=1.0, height=1.0)
    pre = scenes.sop(ops.PREPROCESS, "/obj/pre",
                     [scenes.source("/obj/g", lambda f: scenes.geometry(pos, quads))],
                     pin_group="")
    node = scenes.sop(ops.SOLVER, "/obj/solver",
                      [scenes.cooked(pre, sops.cook_preprocess),
                       scenes.source("/obj/vdb", lambda f: scenes.vdb_geometry(sphere(f)))],
                      substeps=8)
    p = node._cook(13, sops.cook_solver)._point_values["P"]
    seq = SdfSequence(lambda f: hvdb.sdf_collider(hvdb.read_vdb(sphere(f))), first_frame=1)
    ref = ClothSolver(pos, quads, settings=ClothSettings(substeps=8), colliders=[seq])
    for _ in range(12):
        ref.step(1.0 / 24.0)
    assert np.array_equal(p, ref.positions.astype(np.float32).astype(np.float64))
    still = scenes.sop(ops.SOLVER, "/obj/still",
                       [scenes.cooked(pre, sops.cook_preprocess),
                        scenes.source("/obj/vdb0", lambda f: scenes.vdb_geometry(sphere(1)))],
                       substeps=8)
    q = still._cook(13, sops.cook_solver)._point_values["P"]
    assert np.abs(q - p).max() > 0.05
