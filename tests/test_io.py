"""Caches and mesh input: USD, Houdini .geo, OBJ sequences, checkpoints and resuming."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from pbdcloth.cloth.mesh import MeshError
from pbdcloth.cloth.state import ClothState
from pbdcloth.io.cache import find_cache, read_cache
from pbdcloth.io.geo import GeoError, parse_geo, read_geo, write_geo
from pbdcloth.io.meshfile import read_mesh
from pbdcloth.io.obj import frame_path
from pbdcloth.pipeline.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from pbdcloth.pipeline.scenefile import load_scene
from pbdcloth.pipeline.simulate import checkpoint_path, simulate
from pbdcloth.scenes.cloth import grid

DATA = Path(__file__).parent / "data" / "io"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

pxr = pytest.importorskip("pxr", reason="USD tests need usd-core")
from pxr import Usd, UsdGeom


def small(tmp_path: Path, fmt: str, frames: int = 6, scene: str = "small_drape.toml",
          sub: str = "out"):
    return load_scene(DATA / scene, {"out": tmp_path / sub, "format": fmt, "frames": frames})


def recorded_run(spec):
    """Simulate and keep the solver's positions at every written frame."""
    positions = {spec.start_frame: spec.positions.copy()}

    def keep(frame, solver):
        positions[frame] = solver.positions.copy()

    simulate(spec, progress=False, on_frame=keep)
    return positions


# --- Houdini .geo --------------------------------------------------------------------------
def kv(items):
    return dict(zip(items[0::2], items[1::2]))


def test_geo_file_has_houdini_structure_and_round_trips(tmp_path: Path) -> None:
    pos, tris = grid(5, 4, 0.4, 0.3)
    rng = np.random.default_rng(0)
    pos = pos + rng.normal(scale=1e-3, size=pos.shape)
    v = rng.normal(size=pos.shape)
    w = np.where(np.arange(20) < 2, 0.0, 1.0 / 0.0013)
    strain = np.abs(rng.normal(scale=0.01, size=20))
    path = write_geo(tmp_path / "a.geo", pos, tris, {"v": v, "w": w, "strain": strain})

    doc = json.loads(path.read_text())  # plain JSON
    assert isinstance(doc, list) and all(isinstance(k, str) for k in doc[0::2])
    top = kv(doc)
    assert top["pointcount"] == 20
    assert top["vertexcount"] == 3 * len(tris)
    assert top["primitivecount"] == len(tris)
    assert kv(kv(top["topology"])["pointref"])["indices"] == tris.reshape(-1).tolist()
    attrs = kv(top["attributes"])["pointattributes"]
    names = [kv(a[0])["name"] for a in attrs]
    sizes = [kv(a[1])["size"] for a in attrs]
    assert names == ["P", "v", "w", "strain"] and sizes == [3, 3, 1, 1]
    p_def = kv(attrs[0][0])
    assert p_def["type"] == "numeric" and p_def["options"]["type"]["value"] == "point"
    for a in attrs:
        values = kv(kv(a[1])["values"])
        stored = values["tuples"] if "tuples" in values else values["arrays"][0]
        assert len(stored) == 20
    prim = top["primitives"]
    assert kv(prim[0][0])["type"] == "Polygon_run"
    run = kv(prim[0][1])
    assert run["startvertex"] == 0 and run["nprimitives"] == len(tris)
    assert run["nvertices_rle"] == [3, len(tris)]

    back = read_geo(path)
    f32 = np.float32
    np.testing.assert_array_equal(back.positions, pos.astype(f32).astype(np.float64))
    np.testing.assert_array_equal(back.triangles, tris)
    np.testing.assert_array_equal(back.point_attributes["v"], v.astype(f32))
    np.testing.assert_array_equal(back.point_attributes["w"], w.astype(f32))
    np.testing.assert_array_equal(back.point_attributes["strain"], strain.astype(f32))


def test_geo_double_precision_round_trips_exactly(tmp_path: Path) -> None:
    pos, tris = grid(3, 3)
    pos = pos + 1e-3 * np.arange(27).reshape(9, 3) / 7.0
    back = read_geo(write_geo(tmp_path / "d.geo", pos, tris, storage="fpreal64"))
    np.testing.assert_array_equal(back.positions, pos)


def test_geo_reader_understands_houdini_variants() -> None:
    """Paged P (a constant page and a varying page), single Polygon primitives, a Poly run
    record, and point groups in both encodings Houdini writes (boolRLE and i8)."""
    doc = [
        "fileversion", "20.5.278", "hasindex", False, "pointcount", 5, "vertexcount", 7,
        "primitivecount", 2,
        "topology", ["pointref", ["indices", [0, 1, 2, 3, 2, 4, 3]]],
        "attributes", ["pointattributes", [
            [["scope", "public", "type", "numeric", "name", "P",
              "options", {"type": {"type": "string", "value": "point"}}],
             ["size", 3, "storage", "fpreal32",
              "defaults", ["size", 1, "storage", "fpreal64", "values", [0]],
              "values", ["size", 3, "storage", "fpreal32", "packing", [3], "pagesize", 3,
                         "constantpageflags", [[False, True]],
                         "rawpagedata", [0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0]]]],
            [["scope", "public", "type", "numeric", "name", "mass"],
             ["size", 1, "storage", "fpreal32",
              "values", ["size", 1, "storage", "fpreal32", "arrays", [[1, 2, 3, 4, 5]]]]],
        ]],
        "primitives", [
            [["type", "Polygon"], ["vertex", [0, 1, 2, 3], "closed", True]],
            [["type", "run", "runtype", "Poly", "varyingfields", ["vertex"],
              "uniformfields", {"closed": True}], [[[4, 5, 6]]]],
        ],
        "pointgroups", [
            [["name", "pins"], ["selection", ["unordered", ["boolRLE", [2, True, 3, False]]]]],
            [["name", "tip"], ["selection", ["unordered", ["i8", [0, 0, 0, 0, 1]]]]],
        ],
    ]
    geo = parse_geo(doc)
    expected = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 1, 0]], dtype=float)
    np.testing.assert_array_equal(geo.positions, expected)
    assert geo.faces == [[0, 1, 2, 3], [2, 4, 3]]
    np.testing.assert_array_equal(geo.point_attributes["mass"], [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(geo.point_groups["pins"], [0, 1])
    np.testing.assert_array_equal(geo.point_groups["tip"], [4])


def test_geo_reader_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.geo"
    bad.write_bytes(b"Bgeo\x00\x01binary")
    with pytest.raises(GeoError, match="not JSON"):
        read_geo(bad)
    bad.write_text(json.dumps(["pointcount", 1, "topology", ["pointref", ["indices", [3]]],
                               "attributes", ["pointattributes", []]]))
    with pytest.raises(GeoError, match="outside"):
        read_geo(bad)
    p_attr = [["type", "numeric", "name", "P"],
              ["size", 3, "values", ["size", 3, "storage", "fpreal32", "tuples", [[0, 0, 0]]]]]
    bad.write_text(json.dumps(["pointcount", 1, "topology", ["pointref", ["indices", [0]]],
                               "attributes", ["pointattributes", [p_attr]],
                               "primitives", [[["type", "Sphere"], ["vertex", 0]]]]))
    with pytest.raises(GeoError, match="Sphere"):
        read_geo(bad)
    with pytest.raises(GeoError, match="not found"):
        read_geo(tmp_path / "missing.geo")


def test_geo_sequence_from_a_simulation(tmp_path: Path) -> None:
    spec = small(tmp_path, "geo", frames=4)
    positions = recorded_run(spec)
    files = sorted((tmp_path / "out").glob("cloth.*.geo"))
    assert [f.name for f in files] == [f"cloth.{k:04d}.geo" for k in range(1, 5)]
    for frame, f in zip(range(1, 5), files):
        geo = read_geo(f)
        np.testing.assert_array_equal(geo.positions,
                                      positions[frame].astype(np.float32).astype(np.float64))
        assert set(geo.point_attributes) == {"v", "w", "strain"}
        assert np.all(geo.point_attributes["w"] > 0)  # no pins in this scene


# --- USD -----------------------------------------------------------------------------------
def test_usd_cache_opens_with_pxr_and_matches_solver(tmp_path: Path) -> None:
    frames = 6
    spec = small(tmp_path, "usd", frames=frames)
    positions = recorded_run(spec)
    stage = Usd.Stage.Open(str(tmp_path / "out" / "cloth.usd"))
    assert stage is not None
    mesh = UsdGeom.Mesh(stage.GetDefaultPrim())
    assert mesh and mesh.GetPath() == "/cloth"
    samples = mesh.GetPointsAttr().GetTimeSamples()
    assert samples == [float(k) for k in range(1, frames + 1)]
    n = spec.positions.shape[0]
    for frame in range(1, frames + 1):
        pts = np.asarray(mesh.GetPointsAttr().Get(frame), dtype=np.float64)
        assert pts.shape == (n, 3)
        # float32 storage: relative rounding 2^-24 of coordinates below 1 m.
        np.testing.assert_allclose(pts, positions[frame], rtol=0, atol=1e-7)
        lo, hi = np.asarray(mesh.GetExtentAttr().Get(frame))
        np.testing.assert_allclose(lo, pts.min(axis=0), atol=1e-7)
        np.testing.assert_allclose(hi, pts.max(axis=0), atol=1e-7)
        normals = np.asarray(mesh.GetNormalsAttr().Get(frame))
        np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-6)
    # The cloth falls: the last sample is not the first (the comparison above can fail).
    assert np.max(np.abs(positions[frames] - positions[1])) > 1e-3
    counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get())
    indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get())
    assert np.all(counts == 3)
    np.testing.assert_array_equal(indices.reshape(-1, 3), spec.triangles)
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetFramesPerSecond() == 24.0 and stage.GetTimeCodesPerSecond() == 24.0
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (1.0, float(frames))
    vel = np.asarray(mesh.GetVelocitiesAttr().Get(frames), dtype=np.float64)
    solver_v = load_checkpoint(checkpoint_path(spec)).state.velocities
    np.testing.assert_allclose(vel, solver_v, rtol=1e-6, atol=1e-7)
    assert UsdGeom.PrimvarsAPI(mesh).GetPrimvar("strain").GetAttr().GetTimeSamples() == samples


def test_read_usd_mesh_converts_units_axis_and_reads_subsets(tmp_path: Path) -> None:
    usd = read_mesh(EXAMPLES / "data" / "banner.usda")
    pos, tris = grid(25, 17, 1.2, 0.8, plane="xy", origin=(0.0, 2.0, 0.0))
    # Authored in centimetres, Z up, float32: back to metres, Y up.
    np.testing.assert_allclose(usd.positions, pos, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(usd.faces), tris)
    np.testing.assert_array_equal(usd.groups["hem"], np.arange(25))

    # A face subset becomes the points of its faces; the prim's transform is applied.
    stage = Usd.Stage.CreateNew(str(tmp_path / "x.usda"))
    xf = UsdGeom.Xform.Define(stage, "/root")
    xf.AddTranslateOp().Set((1.0, 2.0, 3.0))
    mesh = UsdGeom.Mesh.Define(stage, "/root/cloth")
    mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)])
    mesh.CreateFaceVertexCountsAttr([3, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 0, 2, 3])
    UsdGeom.Subset.CreateGeomSubset(UsdGeom.Imageable(mesh.GetPrim()), "second",
                                    UsdGeom.Tokens.face, [1])
    stage.GetRootLayer().Save()
    got = read_mesh(tmp_path / "x.usda")
    np.testing.assert_allclose(got.positions[0], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(got.groups["second"], [0, 2, 3])
    with pytest.raises(MeshError, match="no mesh"):
        read_mesh(tmp_path / "x.usda", prim_path="/nothing")


def test_mesh_reader_errors(tmp_path: Path) -> None:
    with pytest.raises(MeshError, match="unknown mesh format"):
        read_mesh(tmp_path / "cloth.fbx")
    with pytest.raises(MeshError, match="not found"):
        read_mesh(tmp_path / "cloth.obj")


# --- pins ------------------------------------------------------------------------------------
def test_pins_from_indices_box_and_group(tmp_path: Path) -> None:
    scene = tmp_path / "pins.toml"
    banner = (EXAMPLES / "data" / "banner.usda").as_posix()
    scene.write_text(f"""
[mesh]
file = "{banner}"
[pins]
indices = [100]
box = {{ min = [1.19, 1.19, -0.01], max = [1.21, 1.21, 0.01] }}
group = "hem"
""")
    spec = load_scene(scene, {"out": tmp_path / "o"})
    corner = 16 * 25 + 24  # bottom right: (x, y) = (1.2, 1.2)
    np.testing.assert_array_equal(spec.pinned, np.unique(np.r_[np.arange(25), 100, corner]))


# --- checkpoints and resuming (in-process) ----------------------------------------------------
def usd_samples(path: Path) -> dict[float, np.ndarray]:
    stage = Usd.Stage.Open(str(path))
    attr = UsdGeom.Mesh(stage.GetDefaultPrim()).GetPointsAttr()
    return {t: np.asarray(attr.Get(t)) for t in attr.GetTimeSamples()}


@pytest.mark.parametrize("fmt", ["geo", "usd"])
def test_resume_continues_bit_identically(tmp_path: Path, fmt: str) -> None:
    """A run stopped after frame 5 and resumed to 12 equals an uninterrupted run to 12, with
    moving pins and a moving collider; restoring the state without velocities does not."""
    import shutil

    last = 12
    full = small(tmp_path, fmt, frames=last, scene="moving.toml", sub="full")
    simulate(full, progress=False)
    simulate(small(tmp_path, fmt, frames=5, scene="moving.toml", sub="part"), progress=False)
    shutil.copytree(tmp_path / "part", tmp_path / "cut")
    rest = small(tmp_path, fmt, frames=last, scene="moving.toml", sub="part")
    result = simulate(rest, resume=True, progress=False)
    assert result.resumed_from == 5 and result.frames_simulated == last - 5

    a = load_checkpoint(checkpoint_path(full))
    b = load_checkpoint(checkpoint_path(rest))
    assert a.frame == b.frame == last
    for key in ("positions", "velocities", "pin_start", "pin_end"):
        np.testing.assert_array_equal(a.solver_state()[key], b.solver_state()[key])
    if fmt == "geo":
        for k in range(1, last + 1):
            name = f"cloth.{k:04d}.geo"
            assert (tmp_path / "full" / name).read_bytes() == (tmp_path / "part" / name).read_bytes()
    else:
        sa, sb = usd_samples(tmp_path / "full" / "cloth.usd"), usd_samples(
            tmp_path / "part" / "cloth.usd")
        assert list(sa) == list(sb) == [float(k) for k in range(1, last + 1)]
        for t in sa:
            np.testing.assert_array_equal(sa[t], sb[t])
    log = [json.loads(line) for line in (tmp_path / "part" / "log.jsonl").read_text().splitlines()]
    assert [r["frame"] for r in log] == list(range(1, last + 1))

    # Negative control: lose the velocities at the checkpoint and the result differs.
    cut = small(tmp_path, fmt, frames=last, scene="moving.toml", sub="cut")
    ck = load_checkpoint(checkpoint_path(cut))
    ck.state.velocities = np.zeros_like(ck.state.velocities)
    save_checkpoint(checkpoint_path(cut), ck)
    simulate(cut, resume=True, progress=False)
    c = load_checkpoint(checkpoint_path(cut))
    assert np.max(np.abs(c.state.positions - a.state.positions)) > 1e-4


def test_resume_refuses_a_changed_scene_or_missing_frames(tmp_path: Path) -> None:
    from pbdcloth.pipeline.checkpoint import CheckpointError

    simulate(small(tmp_path, "obj", frames=3), progress=False)
    (tmp_path / "out" / "cloth.0002.obj").rename(tmp_path / "elsewhere.obj")
    with pytest.raises(CheckpointError, match=r"frames \[2\] of the cache are missing"):
        simulate(small(tmp_path, "obj", frames=5), resume=True, progress=False)
    (tmp_path / "elsewhere.obj").rename(tmp_path / "out" / "cloth.0002.obj")
    changed = load_scene(DATA / "small_drape.toml", {"out": tmp_path / "out", "format": "obj",
                                                     "frames": 5}, {"friction": 0.9})
    with pytest.raises(CheckpointError, match="different scene"):
        simulate(changed, resume=True, progress=False)


def test_usd_resume_drops_samples_after_the_checkpoint(tmp_path: Path) -> None:
    from pbdcloth.io.usd import UsdCacheWriter

    pos, tris = grid(3, 3)
    w = UsdCacheWriter(tmp_path / "c.usd", tris, fps=24, start_frame=1, commit_ratio=0)
    for k in range(1, 6):
        w.write_frame(k, pos + k)
    w.close()
    again = UsdCacheWriter(tmp_path / "c.usd", tris, fps=24, start_frame=1, resume_after=3,
                           commit_ratio=0)
    again.write_frame(4, pos + 40)
    again.close()
    samples = usd_samples(tmp_path / "c.usd")
    assert list(samples) == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(samples[4.0], (pos + 40).astype(np.float32))
    stage = Usd.Stage.Open(str(tmp_path / "c.usd"))
    assert stage.GetEndTimeCode() == 4.0
    with pytest.raises(MeshError, match="other faces"):
        UsdCacheWriter(tmp_path / "c.usd", tris[:-1], fps=24, resume_after=2)


def test_checkpoint_round_trip_is_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    state = ClothState(rng.normal(size=(7, 3)), rng.normal(size=(7, 3)), 12, 0.1 + 0.2)
    pin_start, pin_end = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    path = save_checkpoint(tmp_path / "c.npz", Checkpoint(13, "abc", state, pin_start, pin_end))
    back = load_checkpoint(path)
    assert back.frame == 13 and back.digest == "abc"
    np.testing.assert_array_equal(back.state.positions, state.positions)
    np.testing.assert_array_equal(back.state.velocities, state.velocities)
    np.testing.assert_array_equal(back.pin_start, pin_start)
    np.testing.assert_array_equal(back.pin_end, pin_end)
    assert back.state.time == state.time and back.state.frame == 12


def test_checkpoint_restores_a_solver_bit_for_bit(tmp_path: Path) -> None:
    """Save after 3 frames, restore into a fresh solver: 2 more frames equal 5 uninterrupted."""
    from pbdcloth.scenes.cloth import hanging_scene

    scene = hanging_scene(6, 6, frames=5)
    whole = scene.make_solver()
    for _ in range(5):
        whole.step()
    part = scene.make_solver()
    for _ in range(3):
        part.step()
    save_checkpoint(tmp_path / "c.npz", Checkpoint.of(part, 3, "x"))
    again = scene.make_solver()
    load_checkpoint(tmp_path / "c.npz").restore(again)
    for _ in range(2):
        again.step()
    assert np.array_equal(again.positions, whole.positions)
    assert np.array_equal(again.velocities, whole.velocities)
    assert not np.array_equal(part.positions, whole.positions)


# --- reading caches back -----------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["usd", "geo", "obj"])
def test_read_cache_reads_every_format(tmp_path: Path, fmt: str) -> None:
    spec = small(tmp_path, fmt, frames=3)
    positions = recorded_run(spec)
    for where in (tmp_path / "out",
                  tmp_path / "out" / ("cloth.usd" if fmt == "usd" else f"cloth.$F4.{fmt}")):
        cache = read_cache(where)
        assert cache.frames == [1, 2, 3]
        np.testing.assert_array_equal(cache.triangles, spec.triangles)
        atol = 1e-6 if fmt == "obj" else 1e-7  # OBJ: 9 significant digits
        np.testing.assert_allclose(cache.positions[2], positions[3], rtol=0, atol=atol)
        assert (cache.strain is None) == (fmt == "obj")
    assert find_cache(tmp_path / "out")[0] == fmt


def test_cache_files_are_shareable_and_temporaries_are_cleaned(tmp_path: Path) -> None:
    spec = small(tmp_path, "obj", frames=2)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".cloth.0002.obj.x1.tmp").write_text("half a frame")  # left by a killed run
    (out / "cloth.0009.obj").write_text("stale frame of an older, longer run")
    simulate(spec, progress=False)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith((".", "cloth.0"))) == [
        "cloth.0001.obj", "cloth.0002.obj"]
    umask = os.umask(0)
    os.umask(umask)
    assert (out / "cloth.0001.obj").stat().st_mode & 0o777 == 0o666 & ~umask


def test_frame_path_patterns() -> None:
    assert frame_path("a/cloth.$F4.geo", 7) == Path("a/cloth.0007.geo")
    assert frame_path("cloth.####.obj", 12) == Path("cloth.0012.obj")
    assert frame_path("cloth.obj", 3) == Path("cloth.0003.obj")


# --- level-set colliders from scene files -----------------------------------------------------
SDF_SCENE = """
[scene]
frames = {frames}
[mesh]
grid = {{ nx = 10, ny = 10, width = 0.5, height = 0.5, plane = "xz", origin = [-0.25, 0.9, -0.25] }}
[[colliders]]
type = "vdb"
file = "{vdb}"
grid = "ball"
[[colliders.keys]]
frame = 1
translate = [0.0, 0.0, 0.0]
[[colliders.keys]]
frame = 8
translate = [0.0, 0.1, 0.05]
[[colliders]]
type = "mesh"
file = "{obj}"
voxel_size = 0.02
[settings]
substeps = 6
friction = 0.4
[output]
format = "geo"
"""


def test_mesh_and_vdb_colliders_resume_bit_identically(tmp_path: Path) -> None:
    """Level sets from a .vdb file (moving) and from a closed mesh (OpenVDB mesh-to-level-set)
    stop the cloth, and a resumed run with the moving level set matches an uninterrupted one."""
    pytest.importorskip("pyopenvdb")
    scene = tmp_path / "sdf.toml"

    def spec(frames: int, sub: str):
        scene.write_text(SDF_SCENE.format(frames=frames,
                                          vdb=(EXAMPLES / "data" / "ball.vdb").as_posix(),
                                          obj=(EXAMPLES / "data" / "table.obj").as_posix()))
        return load_scene(scene, {"out": tmp_path / sub})

    full = spec(8, "full")
    assert [c.kind for c in full.colliders] == ["vdb", "mesh"]
    result = simulate(full, progress=False)
    log = [json.loads(line) for line in (tmp_path / "full" / "log.jsonl").read_text().splitlines()]
    assert max(r["contacts"] for r in log) > 0  # the ball (top at 0.85 m) caught the cloth
    thickness = full.settings.thickness
    # The moving ball pushes through the substeps; the cloth stays outside to 1 mm.
    assert result.summary["min_collider_distance"] > thickness - 1e-3
    simulate(spec(4, "part"), progress=False)
    simulate(spec(8, "part"), resume=True, progress=False)
    a = load_checkpoint(checkpoint_path(full)).state
    b = load_checkpoint(tmp_path / "part" / "cloth.checkpoint.npz").state
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.velocities, b.velocities)


def test_level_set_problems_are_reported_with_their_key(tmp_path: Path) -> None:
    pytest.importorskip("pyopenvdb")
    from pbdcloth.pipeline.scenefile import SceneFileError

    scene = tmp_path / "bad.toml"
    scene.write_text(SDF_SCENE.format(frames=2, vdb=(EXAMPLES / "data" / "ball.vdb").as_posix(),
                                      obj=(EXAMPLES / "data" / "table.obj").as_posix())
                     .replace('grid = "ball"', 'grid = "nope"')
                     .replace("voxel_size = 0.02", "voxel_size = -1"))
    with pytest.raises(SceneFileError) as err:
        load_scene(scene)
    text = str(err.value)
    assert "colliders[1].voxel_size = -1: must be > 0 m" in text
    scene.write_text(scene.read_text().replace("voxel_size = -1", "voxel_size = 0.02"))
    with pytest.raises(SceneFileError, match=r"colliders\[0\]\.file = 'ball.vdb': .*no grid "
                                             r"named 'nope'"):
        load_scene(scene)


def test_output_folder_in_the_file_is_relative_to_the_file(tmp_path: Path) -> None:
    scene = tmp_path / "shot" / "s.toml"
    scene.parent.mkdir()
    scene.write_text('[mesh]\ngrid = { nx = 3, ny = 3 }\n[output]\ndir = "cache"\n')
    assert load_scene(scene).output.dir == scene.parent / "cache"
    scene.write_text('[scene]\nname = "s1"\n[mesh]\ngrid = { nx = 3, ny = 3 }\n')
    assert load_scene(scene).output.dir == Path("out/s1")
    assert load_scene(scene, {"out": "x"}).output.dir == Path("x")
