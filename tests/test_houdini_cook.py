"""The cook functions, driven end to end through the hou double (no Houdini needed).

Preprocess then solver on a grid, pins from a group, animated pin targets, state kept between
cooks (skip ahead, scrub back, parameter change), VDB colliders read in voxel blocks, polygon
colliders through the VDB-from-Polygons verb, and clear node errors for bad input.
"""

from __future__ import annotations

import sys

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import ClothMesh
from pbdcloth.cloth.topology import build_topology
from pbdcloth.houdini import operators as ops
from pbdcloth.houdini import sops

NX, NY = 7, 6
# Small, fast solver settings shared by the node and the headless reference.
FAST = dict(substeps=4, density=0.2)


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Install the double as ``hou`` for the code under test; fresh state per test."""
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


def _grid(pins: bool = True):  # type: ignore[no-untyped-def]
    pos, quads = scenes.grid_quads(NX, NY)
    groups = {"pins": list(range(NX))} if pins else {}
    return pos, quads, scenes.geometry(pos, quads, groups=groups)


def _pipeline(pin_group: str = "pins", collider=None, targets=None, **solver_parms):  # type: ignore
    pos, quads, geo = _grid()
    grid = scenes.source("/obj/cloth/grid", lambda f: geo)
    pre = scenes.sop(ops.PREPROCESS, "/obj/cloth/preprocess", [grid], pin_group=pin_group)
    solver = scenes.sop(ops.SOLVER, "/obj/cloth/solver",
                        [scenes.cooked(pre, sops.cook_preprocess), collider, targets],
                        **{**FAST, **solver_parms})
    return pos, quads, pre, solver


def _reference(pos, quads, pins, frames, settings=None, targets=None, colliders=()):  # type: ignore
    solver = ClothSolver(pos, quads, pinned=pins, settings=settings or ClothSettings(**FAST),
                         colliders=colliders)
    for f in range(1, frames + 1):
        if targets is not None:
            solver.set_pin_targets(targets(f + 1))
        solver.step(1.0 / 24.0)
    return solver


def _p(geo) -> np.ndarray:  # type: ignore[no-untyped-def]
    return geo._point_values["P"]


def _f32(a: np.ndarray) -> np.ndarray:
    """Values as Houdini stores P: rounded to float32."""
    return np.asarray(a).astype(np.float32).astype(np.float64)


# --- preprocess ----------------------------------------------------------------------------------

def test_preprocess_detail_arrays_equal_the_core_topology(hou) -> None:  # type: ignore
    pos, quads, pre, _ = _pipeline()
    out = pre._cook(1, sops.cook_preprocess)
    expected = build_topology(ClothMesh.from_arrays(pos, quads)).detail_arrays()
    for name, values in expected.items():
        attrib = out.findGlobalAttrib(name)
        assert attrib is not None and attrib.isArrayType(), name
        if np.issubdtype(values.dtype, np.integer):
            assert attrib.dataType() is hou.attribData.Int
            assert np.array_equal(out.intListAttribValue(name), values), name
        else:
            assert attrib.dataType() is hou.attribData.Float
            # Houdini keeps detail floats in 32 bits: compare to float32 resolution.
            np.testing.assert_allclose(out.floatListAttribValue(name), values, rtol=2e-7,
                                       err_msg=name)
    w = out._point_values[sops.PIN_FLAG].ravel()
    assert np.array_equal(np.flatnonzero(w == 0.0), np.arange(NX))
    assert np.all(w[NX:] == 1.0)
    assert np.all(out._point_values["v"] == 0.0)


def test_preprocess_colors_never_share_a_point_within_a_color(hou) -> None:  # type: ignore
    _, _, pre, _ = _pipeline()
    out = pre._cook(1, sops.cook_preprocess)
    e0, e1 = (np.array(out.intListAttribValue(n)) for n in ("stretch_edge_v0", "stretch_edge_v1"))
    quads = np.stack([np.array(out.intListAttribValue(n)) for n in
                      ("bend_shared_edge_v0", "bend_shared_edge_v1",
                       "bend_non_shared_edge_v0", "bend_non_shared_edge_v1")], axis=1)
    for particles, colors in ((np.stack([e0, e1], 1), out.intListAttribValue("stretch_colors")),
                              (quads, out.intListAttribValue("bend_colors"))):
        colors = np.asarray(colors)
        assert colors.shape == (particles.shape[0],) and colors.max() >= 1
        for c in np.unique(colors):
            members = particles[colors == c].ravel()
            assert np.unique(members).size == members.size, f"color {c} shares a point"


def test_preprocess_twice_replaces_its_arrays(hou) -> None:  # type: ignore
    _, _, pre, _ = _pipeline()
    once = pre._cook(1, sops.cook_preprocess)
    again_node = scenes.sop(ops.PREPROCESS, "/obj/again",
                            [scenes.source("/obj/in", lambda f: once)], pin_group="")
    twice = again_node._cook(1, sops.cook_preprocess)
    assert twice.intListAttribValue("triangles") == once.intListAttribValue("triangles")
    assert np.all(twice._point_values[sops.PIN_FLAG] == 1.0)  # no pins this time


def test_preprocess_refuses_bad_input_with_node_errors(hou) -> None:  # type: ignore
    pos, quads, geo = _grid()
    missing_group = scenes.sop(ops.PREPROCESS, "/obj/p", [scenes.source("/obj/g", lambda f: geo)],
                               pin_group="collar")
    with pytest.raises(hou.NodeError, match="no point group 'collar'"):
        missing_group._cook(1, sops.cook_preprocess)
    lines = scenes.geometry(pos, quads, closed=False)
    open_curves = scenes.sop(ops.PREPROCESS, "/obj/p2",
                             [scenes.source("/obj/l", lambda f: lines)])
    with pytest.raises(hou.NodeError, match="open polyline"):
        open_curves._cook(1, sops.cook_preprocess)


# --- solver --------------------------------------------------------------------------------------

def test_solver_matches_the_headless_core_and_holds_the_pin_group(hou) -> None:  # type: ignore
    pos, quads, _, solver = _pipeline()
    for frame in range(1, 7):
        out = solver._cook(frame, sops.cook_solver)
    ref = _reference(pos, quads, np.arange(NX), frames=5)
    # P is written as float32, as Houdini stores it.
    assert np.array_equal(_p(out), _f32(ref.positions))
    assert np.array_equal(_p(out)[:NX], _f32(pos[:NX]))
    assert _p(out)[NX:, 1].max() < pos[NX:, 1].min() - 1e-3  # the rest fell
    np.testing.assert_allclose(out._point_values["v"], ref.velocities, rtol=1e-6, atol=1e-6)


def test_without_the_pin_group_everything_falls(hou) -> None:  # type: ignore
    """Negative control for the test above: the pins come from the group, not by accident."""
    pos, _, _, solver = _pipeline(pin_group="")
    out = solver._cook(6, sops.cook_solver)
    assert np.all(_p(out)[:, 1] < pos[:, 1] - 1e-3)


def test_skipping_ahead_equals_playing_every_frame(hou) -> None:  # type: ignore
    _, _, _, played = _pipeline()
    for frame in range(1, 9):
        a = played._cook(frame, sops.cook_solver)
    _, _, _, jumped = _pipeline()
    b = jumped._cook(8, sops.cook_solver)
    assert np.array_equal(_p(a), _p(b))
    assert jumped.cachedUserData(sops.STATE_KEY).frame == 8


def test_scrubbing_back_is_a_lookup_and_parameter_change_resets(hou) -> None:  # type: ignore
    pos, quads, _, solver = _pipeline()
    solver._cook(6, sops.cook_solver)
    state = solver.cachedUserData(sops.STATE_KEY)
    back = solver._cook(3, sops.cook_solver)
    assert solver.cachedUserData(sops.STATE_KEY) is state and state.stepped == 5
    ref = _reference(pos, quads, np.arange(NX), frames=2)
    assert np.array_equal(_p(back), _f32(ref.positions))
    # Same frame, same parameters: the state is reused, not rebuilt.
    solver._cook(3, sops.cook_solver)
    assert solver.cachedUserData(sops.STATE_KEY) is state
    # A parameter change rebuilds from the start frame with the new value.
    solver._parm_values["substeps"] = 9
    changed = solver._cook(3, sops.cook_solver)
    assert solver.cachedUserData(sops.STATE_KEY) is not state
    ref9 = _reference(pos, quads, np.arange(NX), frames=2,
                      settings=ClothSettings(**{**FAST, "substeps": 9}))
    assert np.array_equal(_p(changed), _f32(ref9.positions))
    # So does a new frame rate (it sets the time step).
    state = solver.cachedUserData(sops.STATE_KEY)
    hou._state.fps = 30.0
    solver._cook(3, sops.cook_solver)
    assert solver.cachedUserData(sops.STATE_KEY) is not state


def test_frames_before_the_start_show_the_rest_state(hou) -> None:  # type: ignore
    pos, _, _, solver = _pipeline(start_frame=10)
    out = solver._cook(4, sops.cook_solver)
    assert np.array_equal(_p(out), _f32(pos))
    out = solver._cook(12, sops.cook_solver)
    assert solver.cachedUserData(sops.STATE_KEY).frame == 12
    assert not np.array_equal(_p(out), pos)


def test_an_input_change_resets_the_simulation(hou) -> None:  # type: ignore
    pos, quads, geo = _grid()
    shift = {"dy": 0.0}

    def make(frame: float):  # type: ignore[no-untyped-def]
        g = hou.Geometry(geo)
        g._point_values["P"] = pos + [0.0, shift["dy"], 0.0]
        return g

    pre = scenes.sop(ops.PREPROCESS, "/obj/pre", [scenes.source("/obj/g", make)], pin_group="pins")
    solver = scenes.sop(ops.SOLVER, "/obj/solver", [scenes.cooked(pre, sops.cook_preprocess)],
                        **FAST)
    solver._cook(4, sops.cook_solver)
    state = solver.cachedUserData(sops.STATE_KEY)
    shift["dy"] = 0.5
    out = solver._cook(4, sops.cook_solver)
    assert solver.cachedUserData(sops.STATE_KEY) is not state
    assert np.allclose(_p(out)[:NX], (pos + [0, 0.5, 0])[:NX], atol=1e-6)


def test_animated_pin_targets_move_the_pins(hou) -> None:  # type: ignore
    pos, quads, geo = _grid()

    def moved(frame: float) -> np.ndarray:
        return pos + [0.0, 0.0, 0.05 * (frame - 1)]

    targets = scenes.source("/obj/targets", lambda f: scenes.geometry(moved(f), quads))
    _, _, _, solver = _pipeline(targets=targets)
    out = solver._cook(5, sops.cook_solver)
    assert np.allclose(_p(out)[:NX], moved(5)[:NX], atol=1e-6)
    # Intermediate frames were read for the intermediate targets (catch-up, not a jump).
    frames_read = sorted({f for i, f in solver._input_frames if i == 2})
    assert frames_read == [1.0, 2.0, 3.0, 4.0, 5.0]
    ref = _reference(pos, quads, np.arange(NX), frames=4, targets=lambda f: moved(f))
    assert np.array_equal(_p(out), _f32(ref.positions))


def test_solver_refuses_an_unpreprocessed_input(hou) -> None:  # type: ignore
    _, _, geo = _grid()
    solver = scenes.sop(ops.SOLVER, "/obj/s", [scenes.source("/obj/raw", lambda f: geo)])
    with pytest.raises(hou.NodeError, match="PBD Cloth Preprocess"):
        solver._cook(2, sops.cook_solver)


def test_solver_reports_bad_settings_on_the_node(hou) -> None:  # type: ignore
    _, _, _, solver = _pipeline(model="fem")
    with pytest.raises(hou.NodeError, match="model"):
        solver._cook(2, sops.cook_solver)


# --- parameters: the cook reads exactly what the dialog declares ---------------------------------

def test_cooks_read_exactly_the_declared_parameters(hou) -> None:  # type: ignore
    from hda_reader import parms, parse
    from pbdcloth.houdini.hda import escape_section_name
    from test_houdini_hda import LIB

    def declared(op: ops.Operator) -> set[str]:
        text = (LIB / escape_section_name(op.table_name) / "DialogScript").read_text()
        return {p.name for p in parms(parse(text))}

    vdb = scenes.vdb_geometry(scenes.sphere_vdb((0, 0.4, 0), 0.3, 0.05))
    collider = scenes.source("/obj/collider", lambda f: vdb)
    _, _, pre, solver = _pipeline(collider=collider)
    pre._cook(1, sops.cook_preprocess)
    assert pre._parms_read == declared(ops.PREPROCESS)
    solver._cook(2, sops.cook_solver)
    assert solver._parms_read == declared(ops.SOLVER) - ops.UI_ONLY
