"""Per-point attributes and stitch polylines through the Houdini layer (the hou double).

The preprocess turns two-point polylines into the stitch detail arrays; the solver reads the
declared point attributes (Houdini names) and the stitches from input 0 and gives the headless
core's result; the help card lists every attribute.
"""

from __future__ import annotations

import sys

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.attributes import POINT_ATTRIBUTES
from pbdcloth.cloth.stitches import Stitches
from pbdcloth.houdini import operators as ops
from pbdcloth.houdini import sops
from pbdcloth.houdini.hda import library_files

NX, NY = 7, 6
FAST = dict(substeps=4, density=0.2)


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


def _cloth(stitch_group: str = "", prim_groups=None, bend=None, pinweight=None,  # type: ignore
           polyline_floats=None, **settings):
    pos, quads = scenes.grid_quads(NX, NY)
    n = len(pos)
    floats = {}
    if bend is not None:
        floats["bendstiffness_scale"] = bend
    if pinweight is not None:
        floats["pinweight"] = pinweight
    lines = [[0, n - 1], [NX - 1, n - NX]]  # opposite corners sewn together
    geo = scenes.geometry(pos, quads, groups={"pins": [NX // 2]}, point_floats=floats,
                          polylines=lines, prim_groups=prim_groups,
                          polyline_floats=polyline_floats)
    grid = scenes.source("/obj/cloth/grid", lambda f: geo)
    pre = scenes.sop(ops.PREPROCESS, "/obj/cloth/preprocess", [grid], pin_group="pins",
                     stitch_group=stitch_group)
    solver = scenes.sop(ops.SOLVER, "/obj/cloth/solver",
                        [scenes.cooked(pre, sops.cook_preprocess), None, None],
                        **{**FAST, **settings})
    return pos, quads, lines, pre, solver


def test_preprocess_writes_the_stitch_polylines_as_detail_arrays(hou) -> None:  # type: ignore
    _, quads, lines, pre, _ = _cloth()
    out = pre._cook(1, sops.cook_preprocess)
    assert list(out.intListAttribValue(sops.STITCH_PAIRS)) == [i for line in lines for i in line]
    assert list(out.floatListAttribValue(sops.STITCH_REST)) == [0.0, 0.0]
    # the polylines are not cloth: the triangles are the quads' only
    assert len(out.intListAttribValue("triangles")) == 3 * 2 * len(quads)


def test_a_named_stitch_group_takes_only_its_polylines(hou) -> None:  # type: ignore
    n_quads = (NX - 1) * (NY - 1)
    _, _, _, pre, _ = _cloth("seam", prim_groups={"seam": [n_quads + 1]})
    with pytest.raises(hou.NodeError, match="primitive 30 is an open polyline"):
        pre._cook(1, sops.cook_preprocess)  # the other polyline is neither cloth nor stitch
    _, _, _, pre, _ = _cloth("nosuch")
    with pytest.raises(hou.NodeError, match="no primitive group 'nosuch'"):
        pre._cook(1, sops.cook_preprocess)


def test_solver_reads_attributes_and_stitches_like_the_core(hou) -> None:  # type: ignore
    n = NX * NY
    bend = np.linspace(0.0, 2.0, n)
    weight = np.zeros(n)
    weight[0], weight[NX - 1] = 0.5, 1.0
    pos, quads, lines, _, solver = _cloth(bend=bend, pinweight=weight)
    for frame in range(1, 7):
        out = solver._cook(frame, sops.cook_solver)
    ref = ClothSolver(pos, quads, pinned=[NX // 2], settings=ClothSettings(**FAST),
                      point_attributes={"bend_scale": bend, "pin_weight": weight},
                      stitches=np.asarray(lines))
    for _ in range(5):
        ref.step(1.0 / 24.0)
    assert ref.pinned.tolist() == [NX // 2, NX - 1] and ref.soft_pinned.tolist() == [0]
    got = out._point_values["P"]
    np.testing.assert_array_equal(got, ref.positions.astype(np.float32).astype(np.float64))
    plain = ClothSolver(pos, quads, pinned=[NX // 2], settings=ClothSettings(**FAST))
    for _ in range(5):
        plain.step(1.0 / 24.0)
    assert np.abs(plain.positions - got).max() > 1e-2  # the attributes and stitches acted


def test_stitch_break_lengths_and_tearing_reach_the_solver(hou) -> None:  # type: ignore
    """A breaklength primitive attribute on the stitch polylines (0: never) becomes the
    stitch_break detail array and the stitches' break lengths; with Tear Strain on, a cloth
    with point attributes and stitches cooks like the core (tearing keeps them)."""
    n = NX * NY
    bend = np.linspace(0.5, 1.5, n)
    _, _, _, pre, _ = _cloth(polyline_floats={"breaklength": [0.3, 0.0]})
    out = pre._cook(1, sops.cook_preprocess)
    assert list(out.floatListAttribValue(sops.STITCH_BREAK)) == [0.3, 0.0]
    pos, quads, lines, _, solver = _cloth(bend=bend, polyline_floats={"breaklength": [0.3, 0.0]},
                                          tear_strain=0.05)
    for frame in range(1, 9):
        got = solver._cook(frame, sops.cook_solver)._point_values["P"]
    ref = ClothSolver(pos, quads, pinned=[NX // 2],
                      settings=ClothSettings(**FAST, tear_strain=0.05),
                      point_attributes={"bend_scale": bend},
                      stitches=Stitches(np.asarray(lines), 0.0, break_length=[0.3, np.inf]))
    np.testing.assert_array_equal(ref.model.stitch_list.break_length, [0.3, np.inf])
    for _ in range(7):
        ref.step(1.0 / 24.0)
    assert ref.torn_edges > 0 or ref.broken_stitches > 0  # something gave way
    np.testing.assert_array_equal(got, ref.positions.astype(np.float32).astype(np.float64))
    _, _, _, pre, _ = _cloth(polyline_floats={"breaklength": [-1.0, 0.0]})
    with pytest.raises(hou.NodeError, match="breaklength -1.0"):
        pre._cook(1, sops.cook_preprocess)


def test_a_changed_attribute_restarts_the_simulation(hou) -> None:  # type: ignore
    n = NX * NY
    geo_bend = {"value": np.ones(n)}
    pos, quads = scenes.grid_quads(NX, NY)

    def make(frame: float):  # type: ignore[no-untyped-def]
        return scenes.geometry(pos, quads, groups={"pins": [0]},
                               point_floats={"bendstiffness_scale": geo_bend["value"]})

    grid = scenes.source("/obj/cloth/grid", make)
    pre = scenes.sop(ops.PREPROCESS, "/obj/cloth/preprocess", [grid], pin_group="pins")
    solver = scenes.sop(ops.SOLVER, "/obj/cloth/solver",
                        [scenes.cooked(pre, sops.cook_preprocess), None, None], **FAST)
    first = solver._cook(4, sops.cook_solver)._point_values["P"].copy()
    geo_bend["value"] = np.zeros(n)
    second = solver._cook(4, sops.cook_solver)._point_values["P"]
    assert np.abs(first - second).max() > 1e-6


def test_a_bad_attribute_is_a_node_error_naming_it(hou) -> None:  # type: ignore
    n = NX * NY
    _, _, _, _, solver = _cloth(bend=np.full(n, -1.0))
    with pytest.raises(hou.NodeError, match="'bend_scale'.*point 0 is -1.0"):
        solver._cook(2, sops.cook_solver)


def test_the_help_card_lists_every_point_attribute() -> None:
    cards = {path: text for path, text in library_files().items() if path.endswith("Help")}
    solver_card = next(text for path, text in cards.items() if "cloth__solver" in path)
    for a in POINT_ATTRIBUTES:
        assert a.houdini in solver_card, a.houdini
    pre_card = next(text for path, text in cards.items() if "cloth__preprocess" in path)
    assert "Stitch Group" in pre_card and "stitch_pairs" in pre_card
