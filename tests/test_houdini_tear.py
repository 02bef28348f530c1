"""A tearing cloth through the solver SOP (stub-checked hou double): each frame's output has its
own points and triangles, equal to the core solver's; scrubbing back shows the untorn cloth;
Save to Disk writes each frame's topology."""

from __future__ import annotations

import sys
from pathlib import Path

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.houdini import operators as ops
from pbdcloth.houdini import sops

NX, NY = 8, 6
SETTINGS = dict(substeps=3, iterations=1, density=0.2, tear_strain=0.1, model="pbd",
                stretch_stiffness=1.0, tethers=False)
LAST = 14


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


def _targets(pos: np.ndarray, frame: float) -> np.ndarray:
    """The top row's right half pulled +x by 6 cm per frame, the rest where it is."""
    out = pos.copy()
    right = np.arange(NX)[pos[:NX, 0] > 0.0]
    out[right, 0] += 0.06 * (frame - 1)
    return out


def _node():  # type: ignore[no-untyped-def]
    pos, quads = scenes.grid_quads(NX, NY)
    geo = scenes.geometry(pos, quads, groups={"pins": list(range(NX))})
    grid = scenes.source("/obj/cloth/grid", lambda f: geo, animated=False)
    targets = scenes.source("/obj/targets", lambda f: scenes.geometry(_targets(pos, f), quads))
    pre = scenes.sop(ops.PREPROCESS, "/obj/cloth/pre", [grid], pin_group="pins")
    node = scenes.sop(ops.SOLVER, "/obj/cloth/solver",
                      [scenes.cooked(pre, sops.cook_preprocess), None, targets], **SETTINGS)
    node._cook_fn = sops.cook_solver
    return pos, quads, node


def _core(pos: np.ndarray, quads: list[list[int]], last: int) -> ClothSolver:
    solver = ClothSolver(pos, quads, pinned=np.arange(NX), settings=ClothSettings(**SETTINGS))
    for f in range(2, last + 1):
        solver.set_pin_targets(_targets(pos, f))
        solver.step(1.0 / 24.0)
    return solver


def test_the_solver_sop_outputs_the_torn_topology(hou) -> None:  # type: ignore[no-untyped-def]
    pos, quads, node = _node()
    out = {f: hou.Geometry(node._cook(f, sops.cook_solver)) for f in range(1, LAST + 1)}
    core = _core(pos, quads, LAST)
    assert core.is_torn, "the pull should tear the cloth"
    last = out[LAST]
    assert last.pointCount() == core.model.particle_count > NX * NY
    faces = [[v.point().number() for v in p.vertices()] for p in last.prims()]
    assert np.array_equal(np.asarray(faces), core.triangles)
    np.testing.assert_array_equal(last._point_values["P"],
                                  core.positions.astype(np.float32).astype(np.float64))
    # New points take their input point's attributes: pbd_w is 0 on every copy of a pin.
    w = last._point_values["pbd_w"].reshape(-1)
    origin = core.point_origin
    assert np.array_equal(w, w[origin])
    assert (w[np.isin(origin, np.arange(NX))] == 0.0).all()
    # Scrubbing back to an untorn frame shows the input's points and quads again.
    back = node._cook(1, sops.cook_solver)
    assert back.pointCount() == NX * NY and len(back.prims()) == len(quads)


def test_save_to_disk_writes_each_frames_topology(hou, tmp_path: Path) -> None:  # type: ignore
    from pbdcloth.io.cache import read_cache

    pos, quads, node = _node()
    for f in range(1, LAST + 1):
        node._cook(f, sops.cook_solver)
    sops.save_core_cache(node, tmp_path, "cloth", "geo")
    back = read_cache(tmp_path / "cloth.0001.geo")
    assert back.frame_triangles is not None
    core = _core(pos, quads, LAST)
    assert np.array_equal(back.frame_triangles[-1], core.triangles)
    assert back.positions[-1].shape == (core.model.particle_count, 3)
