"""Where per-point attributes and stitches come from: scene files, USD primvars, .geo files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pbdcloth.cloth.mesh import grid
from pbdcloth.io.geo import write_geo
from pbdcloth.io.meshfile import read_mesh
from pbdcloth.pipeline.scenefile import SceneFileError, load_scene


def _scene(tmp_path: Path, body: str, mesh: str = "grid = { nx = 4, ny = 3 }") -> Path:
    path = tmp_path / "scene.toml"
    path.write_text(f"[mesh]\n{mesh}\n\n{body}\n", encoding="utf-8")
    return path


def _usd_cloth(path: Path, primvars: dict[str, np.ndarray]) -> None:
    from pxr import Sdf, Usd, UsdGeom, Vt

    pos, tris = grid(4, 3)
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    mesh = UsdGeom.Mesh.Define(stage, "/cloth")
    stage.SetDefaultPrim(mesh.GetPrim())
    mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(pos.astype(np.float32)))
    mesh.GetFaceVertexCountsAttr().Set([3] * len(tris))
    mesh.GetFaceVertexIndicesAttr().Set(tris.reshape(-1).tolist())
    api = UsdGeom.PrimvarsAPI(mesh)
    for name, values in primvars.items():
        pv = api.CreatePrimvar(name, Sdf.ValueTypeNames.FloatArray, UsdGeom.Tokens.vertex)
        pv.Set(Vt.FloatArray.FromNumpy(values.astype(np.float32)))
    face = api.CreatePrimvar("faceThing", Sdf.ValueTypeNames.FloatArray,
                             UsdGeom.Tokens.uniform)
    face.Set(Vt.FloatArray.FromNumpy(np.ones(len(tris), dtype=np.float32)))
    stage.GetRootLayer().Save()


def test_scene_file_attributes_from_numbers_lists_and_a_usd_primvar(tmp_path: Path) -> None:
    pytest.importorskip("pxr")
    bend = np.linspace(0.0, 2.0, 12)
    _usd_cloth(tmp_path / "cloth.usda", {"bendScale": bend})
    path = _scene(tmp_path, "\n".join([
        "[attributes]",
        "stretch_scale = 0.5",
        f"mass_scale = {[1.0] * 11 + [2.0]}",
        'bend_scale = { primvar = "bendScale" }',
        'shear_scale = { file = "cloth.usda", primvar = "bendScale" }',
        "[stitches]",
        "pairs = [[0, 11], [3, 8]]",
        "rest = 0.01",
        "speed = 2.0",
    ]), mesh='file = "cloth.usda"')
    spec = load_scene(path)
    attrs = spec.point_attributes
    assert attrs is not None
    np.testing.assert_array_equal(attrs["stretch_scale"], np.full(12, 0.5))
    assert attrs["mass_scale"][-1] == 2.0
    np.testing.assert_allclose(attrs["bend_scale"], bend, rtol=1e-7)  # float32 in the file
    solver = spec.scene().make_solver()
    assert solver.model.stitches.count == 2 and solver.model.stitch_speed == 2.0
    np.testing.assert_array_equal(solver.model.stitches.rest, [0.01, 0.01])
    assert solver.model.bend.scale is not None and solver.model.stretch.scale is not None
    summary = "\n".join(spec.summary_lines())
    assert "attributes bend_scale, mass_scale, shear_scale, stretch_scale" in summary
    assert "stitches   2, closing at 2 m/s" in summary
    # the attributes are part of the cache's fingerprint
    other = _scene(tmp_path, "[attributes]\nstretch_scale = 0.6\n", mesh='file = "cloth.usda"')
    assert load_scene(other).digest() != spec.digest()


def test_usd_reader_keeps_per_point_primvars_only(tmp_path: Path) -> None:
    pytest.importorskip("pxr")
    _usd_cloth(tmp_path / "cloth.usda", {"bendScale": np.arange(12.0), "pinWeight": np.ones(12)})
    found = read_mesh(tmp_path / "cloth.usda").attributes
    assert sorted(found) == ["bendScale", "pinWeight"]  # not the per-face primvar
    np.testing.assert_array_equal(found["bendScale"], np.arange(12.0))


def test_geo_point_attribute_as_a_source(tmp_path: Path) -> None:
    pos, tris = grid(4, 3)
    scale = np.arange(12) / 11.0
    write_geo(tmp_path / "cloth.geo", pos, tris, point_attributes={"bendstiffness_scale": scale})
    assert "bendstiffness_scale" in read_mesh(tmp_path / "cloth.geo").attributes
    spec = load_scene(_scene(tmp_path, '[attributes]\nbend_scale = { attribute = '
                             '"bendstiffness_scale" }', mesh='file = "cloth.geo"'))
    assert spec.point_attributes is not None
    np.testing.assert_allclose(spec.point_attributes["bend_scale"], scale, rtol=1e-6)


def test_bad_attributes_and_stitches_are_listed_together(tmp_path: Path) -> None:
    path = _scene(tmp_path, "\n".join([
        "[attributes]",
        "bend_scale = [1.0, 2.0]",
        "stretch_scale = -1.0",
        "bendscale = 1.0",
        'shear_scale = { primvar = "x" }',
        'mass_scale = "heavy"',
        "[stitches]",
        "pairs = [[0, 40]]",
        "speed = 0",
    ]))
    with pytest.raises(SceneFileError) as err:
        load_scene(path)
    text = str(err.value)
    for words in ("attributes.bend_scale", "one value per point", "attributes.stretch_scale",
                  "point 0 is -1.0", "attributes.bendscale", "did you mean 'bend_scale'",
                  "attributes.shear_scale", "needs a 'file'", "attributes.mass_scale",
                  "stitches.speed", "must be > 0"):
        assert words in text, words
    with pytest.raises(SceneFileError, match="outside"):
        load_scene(_scene(tmp_path, "[stitches]\npairs = [[0, 40]]"))


def test_keyed_pins_move_the_weight_pins_too(tmp_path: Path) -> None:
    weight = [0.0] * 12
    weight[2], weight[3] = 1.0, 0.5
    spec = load_scene(_scene(tmp_path, "\n".join([
        "[pins]", "indices = [0]",
        "[[pins.keys]]", "frame = 1", "translate = [0, 0, 0]",
        "[[pins.keys]]", "frame = 4", "translate = [0.3, 0, 0]",
        "[settings]", 'model = "pbd"', 'backend = "numpy"', "substeps = 4", "iterations = 2",
        "gravity = [0, 0, 0]", "tethers = false",
        "[attributes]", f"pin_weight = {weight}",
    ])))
    scene = spec.scene()
    solver = scene.make_solver()
    assert solver.pinned.tolist() == [0, 2] and solver.soft_pinned.tolist() == [3]
    for frame in range(2, 5):
        assert scene.animate is not None
        scene.animate(solver, frame)
        solver.step(1.0 / spec.fps)
    x = solver.positions
    np.testing.assert_array_equal(x[[0, 2]], spec.positions[[0, 2]] + [0.3, 0.0, 0.0])
    gap = abs(x[3, 0] - (spec.positions[3, 0] + 0.3))  # the soft pin follows, loosely
    assert 0.0 < gap < 0.02


def test_a_checkpoint_carries_the_soft_pin_targets(tmp_path: Path) -> None:
    """Resuming from a checkpoint mid-motion equals the run without the break, bit for bit."""
    from pbdcloth import ClothSettings, ClothSolver
    from pbdcloth.pipeline.checkpoint import Checkpoint, load_checkpoint, save_checkpoint

    pos, tris = grid(5, 5, 0.4, 0.4, plane="xy")
    weight = np.zeros(25)
    weight[[1, 2, 3]] = 0.5
    settings = ClothSettings(model="pbd", substeps=4, iterations=2, backend="numpy",
                             tethers=False)

    def solver() -> ClothSolver:
        return ClothSolver(pos, tris, pinned=[0, 4], settings=settings,
                           point_attributes={"pin_weight": weight})

    def frame(s: ClothSolver, f: int) -> None:
        s.set_pin_targets(pos + [0.05 * f, 0.0, 0.0])
        s.step(1.0 / 24.0)

    whole = solver()
    for f in range(1, 7):
        frame(whole, f)
    first = solver()
    for f in range(1, 4):
        frame(first, f)
    save_checkpoint(tmp_path / "c.npz", Checkpoint.of(first, 3, "x"))
    resumed = solver()
    load_checkpoint(tmp_path / "c.npz").restore(resumed)
    for f in range(4, 7):
        frame(resumed, f)
    np.testing.assert_array_equal(resumed.positions, whole.positions)
