"""Pictures show the whole scene: each collider at its pose in the frame drawn, pins, colour bar.

The checks read the figure's own artists (the 3D collections and the colour bar's axes), not
the pixels: the one :class:`ScenePolygons` collection of each panel says which of its polygons
are which collider, and those polygons must lie on that collider's surface at the pose it had
at the end of the panel's frame, recorded independently during the run.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from pbdcloth.colliders import Capsule, MeshCollider, Plane, Sphere
from pbdcloth.colliders.sdf import SdfCollider
from pbdcloth.pipeline.run import run_scene
from pbdcloth.preview import (
    ViewError,
    frame_strain,
    parse_view,
    point_max_strain,
    sheet_figure,
)
from pbdcloth.preview.render import from_display, to_display
from pbdcloth.preview.shapes import level_set_surface
from pbdcloth.scenes.cloth import SCENES, Scene

HAS_VDB = importlib.util.find_spec("pyopenvdb") is not None
ROOT = Path(__file__).resolve().parent.parent
CLOTH_SCENES = [n for n in sorted(SCENES) if n != "springs"]


def _pose(c: Any) -> tuple[str, Any]:
    """What a collider's pose is at the end of the current frame (copied)."""
    if isinstance(c, Plane):
        return "ground", (c.point.copy(), c.normal.copy())
    if isinstance(c, Sphere):
        return "sphere", (c.center.copy(), c.radius)
    if isinstance(c, Capsule):
        return "capsule", (c.a.copy(), c.b.copy(), c.radius)
    if isinstance(c, MeshCollider):
        return "surface", np.array(c.vertices)
    assert isinstance(c, SdfCollider)
    return "surface", c.pose(1.0)


def _run(name: str, steps: int = 3) -> tuple[Scene, Any, dict[int, list[tuple[str, Any]]]]:
    scene = SCENES[name]()
    assert isinstance(scene, Scene)
    scene.frames = steps
    scene.settings = scene.settings.replace(substeps=2)
    expected = {1: [_pose(c) for c in scene.colliders]}

    def record(frame: int, solver: Any) -> None:
        expected[frame] = [_pose(c) for c in solver.colliders]

    _, rec = run_scene(scene, None, progress=False, on_frame=record)
    return scene, rec, expected


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = b - a
    t = np.clip((p - a) @ d / max(float(d @ d), 1e-30), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * d), axis=1)


def _check_panel(ax: Any, scene: Scene, poses: list[tuple[str, Any]], positions: np.ndarray
                 ) -> None:
    [polys] = [c for c in ax.collections if c.get_gid() == "scene"]
    parts = {label: (start, stop) for label, start, stop in polys.parts}
    start, stop = parts.pop("cloth")
    assert stop - start == len(scene.triangles)
    np.testing.assert_array_equal(np.array(polys.world[start:stop]),
                                  positions[scene.triangles])
    grounds = {c.get_gid(): c for c in ax.collections if str(c.get_gid()).endswith("ground")}
    drawn = {int(label.split()[1]) for label in parts} | {int(g.split()[1]) for g in grounds}
    assert drawn == set(range(len(poses))), (drawn, len(poses))
    for k, (kind, pose) in enumerate(poses):
        if kind == "ground":
            point, normal = pose
            segs = grounds[f"collider {k} ground"].world.reshape(-1, 3)
            assert np.abs((segs - point) @ normal).max() < 1e-12
            continue
        begin, end = parts[f"collider {k} {kind}"]
        verts = np.concatenate(polys.world[begin:end])
        assert verts.shape[0] > 0
        if kind == "sphere":
            centre, radius = pose
            np.testing.assert_allclose(np.linalg.norm(verts - centre, axis=1), radius,
                                       atol=1e-12)
        elif kind == "capsule":
            a, b, radius = pose
            np.testing.assert_allclose(_segment_distance(verts, a, b), radius, atol=1e-12)
        elif isinstance(scene.colliders[k], MeshCollider):
            tris = scene.colliders[k].triangles  # type: ignore[attr-defined]
            quads = np.concatenate([tris, tris[:, 2:]], axis=1)
            np.testing.assert_array_equal(verts, pose[quads].reshape(-1, 3)[:verts.shape[0]])
        else:
            collider = scene.colliders[k]
            assert isinstance(collider, SdfCollider)
            local = level_set_surface(collider.grid)[0]
            np.testing.assert_allclose(pose.to_local(verts), local[:verts.shape[0]],
                                       atol=1e-9)
    if scene.pinned.size:
        [pins] = [c for c in ax.collections if c.get_gid() == "pins"]
        np.testing.assert_array_equal(pins.world, positions[scene.pinned])


@pytest.mark.parametrize("name", CLOTH_SCENES)
def test_each_scene_preview_draws_its_colliders_at_the_frames_pose(name: str) -> None:
    if name == "prop" and not HAS_VDB:
        pytest.skip("the prop scene's level set needs pyopenvdb")
    import matplotlib.pyplot as plt

    scene, rec, expected = _run(name)
    strain = frame_strain(rec.frames, scene.triangles)
    fig = sheet_figure(rec.frames, scene.triangles, frame_numbers=rec.numbers, strain=strain,
                       colliders=rec.shapes, pins=scene.pinned, panels=4,
                       follow=scene.follow_camera)
    try:
        panels = [ax for ax in fig.axes if hasattr(ax, "get_zlim")]
        assert len(panels) == 4
        for ax in panels:
            found = re.match(r"frame (\d+)", ax.get_title())
            assert found is not None
            frame = int(found.group(1))
            i = rec.numbers.index(frame)
            _check_panel(ax, scene, expected[frame], rec.frames[i])
            top = re.search(r"max strain ([\d.]+) %", ax.get_title())
            assert top is not None and float(top.group(1)) == pytest.approx(
                100 * strain[i].max(), abs=0.006)
        bars = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
        assert len(bars) == 1
        assert bars[0].get_ylabel() == "max edge strain [%]"
        lo, hi = bars[0]._colorbar.mappable.get_clim()
        assert lo == 0.0 and hi == pytest.approx(100 * max(s.max() for s in strain), abs=1e-9)
    finally:
        plt.close(fig)


def test_moving_colliders_are_drawn_where_they_are_in_each_frame_not_at_the_end() -> None:
    """The cloak's body walks: each panel's capsules differ, and match their own frame only."""
    import matplotlib.pyplot as plt

    scene, rec, expected = _run("cloak", steps=5)
    fig = sheet_figure(rec.frames, scene.triangles, frame_numbers=rec.numbers,
                       colliders=rec.shapes, pins=scene.pinned, panels=6, follow=True)
    try:
        first, last = fig.axes[0], fig.axes[-1]
        _check_panel(first, scene, expected[1], rec.frames[0])
        with pytest.raises(AssertionError):
            _check_panel(first, scene, expected[6], rec.frames[0])
        _check_panel(last, scene, expected[6], rec.frames[-1])
    finally:
        plt.close(fig)


def test_max_strain_is_one_number_everywhere() -> None:
    """Log, summary, picture colours and ClothSolver.max_strain give the same strain."""
    scene = SCENES["drape"]()
    assert isinstance(scene, Scene)
    scene.frames, scene.settings = 4, scene.settings.replace(substeps=3)
    seen: dict[int, float] = {}
    summary, rec = run_scene(scene, None, progress=False,
                             on_frame=lambda f, s: seen.__setitem__(f, s.max_strain()))
    strain = frame_strain(rec.frames, scene.triangles)
    for frame, value in seen.items():
        assert strain[rec.numbers.index(frame)].max() == pytest.approx(value, rel=1e-12)
    assert summary.max_strain == pytest.approx(max(seen.values()), rel=1e-12)
    assert summary.max_strain_frame == max(seen, key=seen.__getitem__)


def test_point_max_strain_is_the_largest_stretch_of_the_points_edges() -> None:
    rest = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    moved = rest * np.array([1.1, 0.9, 1.0])  # edge 0-1 stretched 10 %, 0-2 compressed 10 %
    s = point_max_strain(moved, np.array([[0, 1, 2]]), rest)
    d12 = np.linalg.norm(moved[1] - moved[2]) / np.sqrt(2.0) - 1.0
    np.testing.assert_allclose(s, [0.1, max(0.1, d12), max(d12, 0.0)], rtol=1e-12)


def test_views() -> None:
    assert parse_view("front") == (-90.0, 12.0)
    assert parse_view(" Top ") == (-90.0, 89.9)
    assert parse_view("30,45") == (30.0, 45.0)
    for bad in ("diagonal", "30", "1,2,3", "0,100", "a,b"):
        with pytest.raises(ViewError, match="view"):
            parse_view(bad)
    p = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_array_equal(from_display(to_display(p)), p)
    r = np.stack([to_display(np.eye(3)[i]) for i in range(3)])
    assert np.linalg.det(r) == pytest.approx(1.0)  # a rotation: pictures are not mirrored


def test_preview_of_a_cache_draws_the_scene_files_colliders_at_each_frames_pose(
        tmp_path: Path) -> None:
    """``pbdcloth preview CACHE --scene FILE``: the capsule of moving_capsule.toml is drawn
    where the simulation had it at the end of each cached frame, and the picture's strain is
    the log's ``max_strain``."""
    from pbdcloth.cli.main import main
    from pbdcloth.cli.scenes import _scene_shapes
    from pbdcloth.io.cache import read_cache
    from pbdcloth.pipeline.scenefile import load_scene
    from pbdcloth.pipeline.simulate import read_log, simulate
    from pbdcloth.preview.shapes import CapsuleShape

    toml = ROOT / "examples" / "moving_capsule.toml"
    spec = load_scene(toml, {"out": str(tmp_path), "format": "obj", "frames": 9},
                      {"substeps": 2})
    seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def record(frame: int, solver: Any) -> None:
        [cap] = [c for c in solver.colliders if isinstance(c, Capsule)]
        seen[frame] = (cap.a.copy(), cap.b.copy())

    simulate(spec, progress=False, on_frame=record)
    cache = read_cache(tmp_path)
    shapes, pins, points = _scene_shapes(str(toml), cache.frames)
    assert points == cache.positions[0].shape[0]
    np.testing.assert_array_equal(pins, spec.pinned)
    drawn = []
    for frame, frame_shapes in zip(cache.frames, shapes):
        [cap] = [s for s in frame_shapes if isinstance(s, CapsuleShape)]
        drawn.append(cap.a)
        if frame in seen:
            np.testing.assert_allclose(cap.a, seen[frame][0], atol=1e-12)
            np.testing.assert_allclose(cap.b, seen[frame][1], atol=1e-12)
    assert len(seen) == 8 and np.linalg.norm(drawn[-1] - drawn[0]) > 0.01  # it moves
    strain = frame_strain(cache.positions, cache.triangles)
    for rec, s in zip(read_log(tmp_path / "log.jsonl"), strain):
        # OBJ keeps 9 significant digits: ~1e-9 m on ~3 cm edges, a few 1e-7 of strain.
        assert s.max() == pytest.approx(rec["max_strain"], abs=1e-6)
    assert main(["preview", str(tmp_path), "--scene", str(toml), "--no-movie",
                 "--view", "side"]) == 0
    assert (tmp_path / "cloth.preview.png").is_file()
