"""The PBD Spring Chains SOP through the hou double: polylines swung as VRM spring chains."""

from __future__ import annotations

import sys

import hou_double
import houdini_scenes as scenes
import numpy as np
import pytest
from pbdcloth.houdini import operators as ops
from pbdcloth.houdini import sops
from pbdcloth.settings import SpringSettings
from pbdcloth.springs import SpringChain

DT = 1.0 / 24.0


@pytest.fixture()
def hou(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    return hou_double


def _chains_rest() -> tuple[np.ndarray, list[list[int]]]:
    """Two horizontal chains of 5 points (0.1 m bones), roots at x = 0, z = 0 and z = 0.3."""
    pts = [[0.1 * i, 1.0, z] for z in (0.0, 0.3) for i in range(5)]
    return np.array(pts), [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def _animated(rest: np.ndarray, frame: float) -> np.ndarray:
    """Roots swing along z; the whole input moves rigidly with them."""
    return rest + [0.0, 0.0, 0.2 * np.sin(0.3 * (frame - 1))]


def _node(rest, lines, colliders=None, **parms):  # type: ignore[no-untyped-def]
    chains = scenes.source("/obj/rig/chains",
                           lambda f: scenes.geometry(_animated(rest, f), lines, closed=False))
    return scenes.sop(ops.SPRING_CHAINS, "/obj/rig/springs", [chains, colliders], **parms)


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32).astype(np.float64)


def test_spring_sop_matches_headless_chains_driven_by_the_same_roots(hou) -> None:  # type: ignore
    rest, lines = _chains_rest()
    node = _node(rest, lines, stiffness=0.5, gravity=2.0, drag=0.3)
    out = node._cook(9, sops.cook_spring_chains)
    settings = SpringSettings(stiffness=0.5, gravity=2.0, drag=0.3)
    for line in lines:
        chain = SpringChain(rest[line], settings=settings, collision_passes=4)
        for f in range(2, 10):
            now = _animated(rest, f)
            parent = sops.parent_matrix(rest[line[0]], now[line[0]], rest[line[1]] - rest[line[0]],
                                        now[line[1]] - now[line[0]])
            chain.step(DT, parent=parent)
        got = out._point_values["P"][line]
        assert np.array_equal(got, _f32(chain.positions))
        np.testing.assert_allclose(got[0], _animated(rest, 9)[line[0]], atol=1e-6)  # root follows


def test_a_limp_chain_falls_to_hang_below_its_root(hou) -> None:  # type: ignore
    rest, lines = _chains_rest()
    static = scenes.source("/obj/rig/still", lambda f: scenes.geometry(rest, lines, closed=False))
    node = scenes.sop(ops.SPRING_CHAINS, "/obj/rig/limp", [static], stiffness=0.0, gravity=3.0,
                      drag=0.4)
    out = node._cook(150, sops.cook_spring_chains)
    p = out._point_values["P"]
    for line in lines:
        root, tail = p[line[0]], p[line[-1]]
        assert tail[1] < root[1] - 0.39  # 4 bones of 0.1 m: nearly straight down
        assert abs(tail[0] - root[0]) < 0.02
    # Negative control: stiff and weightless, the chain keeps its rest shape.
    stiff = scenes.sop(ops.SPRING_CHAINS, "/obj/rig/stiff", [static], stiffness=4.0, gravity=0.0)
    np.testing.assert_allclose(stiff._cook(150, sops.cook_spring_chains)._point_values["P"],
                               _f32(rest), atol=1e-6)


def test_sphere_colliders_from_points_push_the_tails_out(hou) -> None:  # type: ignore
    rest, lines = _chains_rest()
    center, radius, scale, hit = np.array([0.25, 0.78, 0.0]), 0.1, 1.5, 0.02
    balls = scenes.source("/obj/rig/balls", lambda f: scenes.points_geometry(
        center[None, :], pscale=np.array([radius])))
    # VRM's passes push out and then restore the bone length, which can leave a tail slightly
    # inside; "Settle Contacts" turns such tails onto the surface (to 1e-12 m in float64; P is
    # float32, so 1e-6 m here).
    node = _node(rest, lines, colliders=balls, stiffness=0.0, gravity=3.0, radius=hit,
                 collider_radius_scale=scale, collision_passes=4, settle_contacts=True)
    vrm = _node(rest, lines, colliders=balls, stiffness=0.0, gravity=3.0, radius=hit,
                collider_radius_scale=scale, collision_passes=4)
    touched = 0
    for frame in range(1, 40):
        p = node._cook(frame, sops.cook_spring_chains)._point_values["P"][lines[0]][1:]
        gap = np.linalg.norm(p - center, axis=1) - (radius * scale + hit)
        assert gap.min() > -1e-6, f"frame {frame}: a tail is {-gap.min()} m inside the ball"
        touched += int(gap.min() < 1e-4)
        q = vrm._cook(frame, sops.cook_spring_chains)._point_values["P"][lines[0]][1:]
        assert (np.linalg.norm(q - center, axis=1) - (radius * scale + hit)).min() > -hit
    assert touched >= 1  # the chain met the ball (it then slides off its side)
    # Negative control: without the collider input the same chain passes through that space.
    free = _node(rest, lines, stiffness=0.0, gravity=3.0, radius=hit)
    deepest = 0.0
    for frame in range(1, 40):
        p = free._cook(frame, sops.cook_spring_chains)._point_values["P"][lines[0]][1:]
        deepest = min(deepest, (np.linalg.norm(p - center, axis=1) - (radius * scale + hit)).min())
    assert deepest < -0.01


def test_collider_points_need_pscale(hou) -> None:  # type: ignore
    rest, lines = _chains_rest()
    balls = scenes.source("/obj/rig/balls", lambda f: scenes.points_geometry(np.zeros((1, 3))))
    node = _node(rest, lines, colliders=balls)
    with pytest.raises(hou.NodeError, match="pscale"):
        node._cook(2, sops.cook_spring_chains)


def test_closed_polygons_are_refused(hou) -> None:  # type: ignore
    rest, lines = _chains_rest()
    closed = scenes.source("/obj/rig/closed", lambda f: scenes.geometry(rest, lines))
    node = scenes.sop(ops.SPRING_CHAINS, "/obj/rig/bad", [closed])
    with pytest.raises(hou.NodeError, match="open polyline"):
        node._cook(2, sops.cook_spring_chains)


def test_spring_cook_reads_exactly_the_declared_parameters(hou) -> None:  # type: ignore
    from hda_reader import parms, parse
    from pbdcloth.houdini.hda import escape_section_name
    from test_houdini_hda import LIB

    rest, lines = _chains_rest()
    balls = scenes.source("/obj/rig/balls", lambda f: scenes.points_geometry(
        np.array([[5.0, 5.0, 5.0]]), pscale=np.array([0.1])))
    node = _node(rest, lines, colliders=balls)
    node._cook(3, sops.cook_spring_chains)
    text = (LIB / escape_section_name(ops.SPRING_CHAINS.table_name) / "DialogScript").read_text()
    assert node._parms_read == {p.name for p in parms(parse(text))} - ops.UI_ONLY


@pytest.mark.parametrize("dir_now", [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0],
                                     [0.3, -0.2, 0.9]])
def test_parent_matrix_is_rigid_and_maps_the_root_segment(dir_now: list[float]) -> None:
    root_rest, root_now = np.array([0.1, 1.0, 0.0]), np.array([0.5, 0.2, -0.3])
    dir_rest = np.array([1.0, 0.0, 0.0])
    m = sops.parent_matrix(root_rest, root_now, dir_rest, np.array(dir_now))
    rot = m[:3, :3]
    np.testing.assert_allclose(rot.T @ rot, np.eye(3), atol=1e-12)
    assert np.linalg.det(rot) == pytest.approx(1.0)
    np.testing.assert_allclose(m @ [*root_rest, 1.0], [*root_now, 1.0], atol=1e-12)
    unit = np.array(dir_now) / np.linalg.norm(dir_now)
    np.testing.assert_allclose(rot @ dir_rest, unit, atol=1e-12)
    np.testing.assert_array_equal(m[3], [0.0, 0.0, 0.0, 1.0])

