"""Caches of a tearing cloth: each frame's own topology in OBJ, .geo and USD (time-sampled
faces), and resuming a torn run from its checkpoint (also after a SIGKILL) bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pbdcloth.io.cache import read_cache
from pbdcloth.pipeline.checkpoint import load_checkpoint
from pbdcloth.pipeline.scenefile import load_scene
from pbdcloth.pipeline.simulate import checkpoint_path, simulate
from pbdcloth.solver import ClothSolver

DATA = Path(__file__).parent / "data" / "io"
SCENE = DATA / "tearing.toml"


def _spec(out: Path, fmt: str, frames: int = 12):  # type: ignore[no-untyped-def]
    return load_scene(SCENE, {"out": out, "format": fmt, "frames": frames})


def _simulate_recording(out: Path, fmt: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Simulate, keeping each frame's positions and triangles as the solver had them."""
    seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def record(frame: int, solver: ClothSolver) -> None:
        seen[frame] = (solver.positions.copy(), solver.triangles.copy())

    simulate(_spec(out, fmt), progress=False, on_frame=record)
    return seen


@pytest.mark.parametrize("fmt", ["obj", "geo", "usd"])
def test_each_frame_of_the_cache_has_its_own_topology(tmp_path: Path, fmt: str) -> None:
    if fmt == "usd":
        pytest.importorskip("pxr")
    seen = _simulate_recording(tmp_path, fmt)
    cache = read_cache(tmp_path / "cloth.usd" if fmt == "usd" else tmp_path)
    assert cache.frames == list(range(1, 13))
    assert cache.frame_triangles is not None, "the topology should change over the cache"
    counts = [p.shape[0] for p in cache.positions]
    assert counts[0] == 121 and counts[-1] > 121 and counts == sorted(counts)
    for k, frame in enumerate(cache.frames[1:], start=1):
        x, tris = seen[frame]
        assert np.array_equal(cache.frame_triangles[k], tris), frame
        np.testing.assert_allclose(cache.positions[k], x, atol=1e-6 if fmt == "usd" else 1e-9)
    if fmt != "obj":
        last = cache.attributes[-1]
        assert last["rest"].shape == (counts[-1], 3) and last["w"].shape == (counts[-1],)


def test_usd_faces_are_time_sampled(tmp_path: Path) -> None:
    pytest.importorskip("pxr")
    from pxr import Usd, UsdGeom

    simulate(_spec(tmp_path, "usd"), progress=False)
    stage = Usd.Stage.Open(str(tmp_path / "cloth.usd"))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/cloth"))
    samples = mesh.GetFaceVertexIndicesAttr().GetTimeSamples()
    assert samples and samples[0] == 1.0 and len(samples) >= 2
    first = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(Usd.TimeCode(1.0)))
    assert first.max() == 120  # the untorn grid
    last = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(Usd.TimeCode(12.0)))
    points = mesh.GetPointsAttr().Get(Usd.TimeCode(12.0))
    assert last.max() == len(points) - 1 > 120


@pytest.mark.parametrize("fmt", ["obj", "usd"])
def test_a_torn_run_resumed_from_its_checkpoint_is_bit_identical(tmp_path: Path,
                                                                 fmt: str) -> None:
    if fmt == "usd":
        pytest.importorskip("pxr")
    simulate(_spec(tmp_path / "whole", fmt), progress=False)

    def ctrl_c(frame: int, last: int) -> None:
        if frame == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simulate(_spec(tmp_path / "cut", fmt), progress=False, on_progress=ctrl_c)
    saved = load_checkpoint(checkpoint_path(_spec(tmp_path / "cut", fmt)))
    # USD commits are throttled: its checkpoint may lag behind the frame stopped at.
    assert 2 <= saved.frame <= 6 and saved.torn is not None, "the cloth should have torn"
    result = simulate(_spec(tmp_path / "cut", fmt), resume=True, progress=False)
    assert result.resumed_from == saved.frame
    if fmt == "obj":
        for k in range(1, 13):
            name = f"cloth.{k:04d}.obj"
            assert (tmp_path / "cut" / name).read_bytes() == \
                (tmp_path / "whole" / name).read_bytes(), name
    else:
        a = read_cache(tmp_path / "whole" / "cloth.usd")
        b = read_cache(tmp_path / "cut" / "cloth.usd")
        assert a.frame_faces == b.frame_faces
        for pa, pb in zip(a.positions, b.positions):
            assert np.array_equal(pa, pb)
    sa = load_checkpoint(checkpoint_path(_spec(tmp_path / "whole", fmt)))
    sb = load_checkpoint(checkpoint_path(_spec(tmp_path / "cut", fmt)))
    assert sa.state.positions.tobytes() == sb.state.positions.tobytes()
    assert sa.torn is not None and sb.torn is not None
    for key in sa.torn:
        assert np.array_equal(sa.torn[key], sb.torn[key]), key


def test_sigkilled_torn_run_resumes_with_no_frame_lost(tmp_path: Path) -> None:
    """``pbdcloth simulate`` of the tearing scene killed (SIGKILL) after a tear, then resumed:
    every frame is on disk once, equal byte for byte to an uninterrupted run's."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from pbdcloth.cli.main import main

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root / "python3.11libs") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    ref, run = tmp_path / "ref", tmp_path / "run"
    common = ["--format", "obj", "--frames", "12", "--quiet"]
    assert main(["simulate", str(SCENE), "--out", str(ref), *common]) == 0
    args = [sys.executable, "-m", "pbdcloth.cli", "simulate", str(SCENE), "--out", str(run),
            *common]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = run / "log.jsonl"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if log.is_file() and len(log.read_text().splitlines()) >= 5:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    saved = load_checkpoint(run / "cloth.checkpoint.npz")
    assert saved.torn is not None and saved.frame < 12
    assert main(["simulate", str(SCENE), "--out", str(run), *common, "--resume"]) == 0
    for k in range(1, 13):
        name = f"cloth.{k:04d}.obj"
        assert (ref / name).read_bytes() == (run / name).read_bytes(), name


def test_the_tear_scene_tears_and_keeps_its_mass(tmp_path: Path) -> None:
    """``pbdcloth demo --scene tear``, coarse: the sheet tears (points are split, the crack
    separates the mesh) and its total mass stays density x area to 1e-12."""
    from pbdcloth.cli.main import main
    from pbdcloth.cloth.mesh import triangle_areas
    from pbdcloth.pipeline.run import run_scene
    from pbdcloth.scenes.cloth import tear_scene

    scene = tear_scene(nx=18, ny=12, frames=24, notch=3, speed=0.1)
    scene.settings = scene.settings.replace(substeps=10, iterations=2, tear_strain=0.1,
                                            model="pbd", tethers=False)
    masses: list[float] = []
    summary, record = run_scene(scene, progress=False,
                                on_frame=lambda f, s: masses.append(s.model.mass.sum()))
    area = triangle_areas(scene.positions, scene.triangles).sum()
    total = scene.settings.density * area
    assert record.frames[-1].shape[0] > scene.positions.shape[0]
    assert record.triangles[-1].shape == scene.triangles.shape
    assert not np.array_equal(record.triangles[-1], scene.triangles)
    from pbdcloth.cloth.tear import piece_labels
    from pbdcloth.cloth.topology import edge_use

    edges = edge_use(record.triangles[-1])[0]
    assert np.unique(piece_labels(edges, record.frames[-1].shape[0])).size >= 2
    assert max(abs(m - total) for m in masses) <= 1e-12 * total
    out = tmp_path / "demo"
    assert main(["demo", "--scene", "tear", "--frames", "3", "--quiet", "--out", str(out)]) == 0
    assert (out / "preview.png").is_file() and (out / "cloth.0003.obj").is_file()


def test_a_wedge_over_tear_strain_draws_the_torn_members(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A serial wedge of tear_strain (off, 0.1): the member that tears ends with more points,
    and wedge.png draws it with its own triangles."""
    import json

    from pbdcloth.pipeline.wedge import plan_wedge, results, run_wedge

    drawn: list[list[np.ndarray]] = []
    render = results.render_panels

    def spy(frames, triangles, strains, numbers, size=360):  # type: ignore[no-untyped-def]
        drawn.append(list(triangles))
        return render(frames, triangles, strains, numbers, size)

    monkeypatch.setattr(results, "render_panels", spy)
    plan = plan_wedge(SCENE, ["tear_strain=0,0.1"], out=tmp_path, frames=6)
    result = run_wedge(plan, serial=True, progress=False)
    assert [r["status"] for r in result.rows] == ["done", "done"]
    points = [load_checkpoint(r["checkpoint"]).state.positions.shape[0] for r in result.rows]
    assert points[0] == 121 < points[1]
    assert json.loads((tmp_path / "wedge.json").read_text())["rows"][1]["status"] == "done"
    assert (tmp_path / "wedge.png").stat().st_size > 10_000
    torn = load_checkpoint(result.rows[1]["checkpoint"]).torn
    assert torn is not None and np.array_equal(drawn[-1][1], torn["triangles"])
