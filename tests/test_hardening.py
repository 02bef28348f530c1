"""Regression tests of issue 18: every bad input a clear, documented error.

Each ``test_item_N_...`` reproduces item N of the issue (the one-liners that fell through the
contract) and asserts the documented error type and a message naming the input, its value and
its range. The command line gives exit code 2 for bad input, 1 for a failure during the run and
130 for Ctrl-C, each with a one-line message and never a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pbdcloth import (
    Capsule,
    ClothMesh,
    ClothSettings,
    ClothSolver,
    MeshError,
    Plane,
    SceneFileError,
    SettingsError,
    SimulationDiverged,
    SolverInputError,
    Sphere,
)
from pbdcloth.cli.main import main
from pbdcloth.cloth.mesh import grid
from pbdcloth.pipeline.checkpoint import CheckpointError, load_checkpoint
from pbdcloth.pipeline.scenefile import load_scene

ROOT = Path(__file__).resolve().parents[1]
LIBS = ROOT / "python3.11libs"

SCENE = """
[scene]
name = "tiny"
frames = {frames}
fps = {fps}

[mesh]
grid = {{ nx = 4, ny = 4, width = 0.3, height = 0.3, plane = "xy", origin = [0, 1, 0] }}

[pins]
indices = [0, 3]

[settings]
substeps = 2
{settings}

[output]
format = "obj"
"""


def scene_file(tmp_path: Path, frames: int = 3, fps: object = 24, settings: str = "",
               name: str = "tiny.toml") -> Path:
    path = tmp_path / name
    path.write_text(SCENE.format(frames=frames, fps=fps, settings=settings), encoding="utf-8")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Exit code and stderr of ``pbdcloth ARGS`` run in this process."""
    rc = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# --- item 3: integer and float settings given NaN, inf, 10**400 ----------------------------
@pytest.mark.parametrize("value", [float("inf"), float("nan"), 10**400, -10**400])
def test_item_3_integer_settings_nan_inf_huge(value: object) -> None:
    with pytest.raises(SettingsError, match=r"setting 'substeps'.*\[1, 1000\]"):
        ClothSettings(substeps=value)


def test_item_3_huge_floats_name_the_setting() -> None:
    decls = [d for d in ClothSettings.declarations() if d.kind in ("float", "vec3")]
    assert len(decls) == 24  # every float and vector setting is checked
    for d in decls:
        with pytest.raises(SettingsError, match=f"setting '{d.name}'"):
            ClothSettings(**{d.name: 10**400 if d.kind == "float" else (0, 10**400, 0)})


def test_item_3_inf_substeps_in_toml_is_a_scene_problem(tmp_path: Path, capsys) -> None:
    path = scene_file(tmp_path, settings="substeps = inf").read_text().replace(
        "substeps = 2\n", "")
    (tmp_path / "inf.toml").write_text(path)
    with pytest.raises(SceneFileError, match="settings.substeps"):
        load_scene(tmp_path / "inf.toml")
    rc, err = cli(capsys, "validate", str(tmp_path / "inf.toml"))
    assert rc == 2 and "settings.substeps" in err


# --- item 4: a plane normal whose length overflows ---------------------------------------
def test_item_4_huge_plane_normal_is_normalised() -> None:
    plane = Plane((0, 0, 0), (0, 1e155, 1e155))
    assert np.allclose(plane.normal, [0, np.sqrt(0.5), np.sqrt(0.5)])
    phi, _ = plane.query(np.array([[0.0, 1.0, 0.0]]))
    assert np.isfinite(phi).all()
    with pytest.raises(SolverInputError, match="Plane normal must not be zero"):
        Plane((0, 0, 0), (0, 0, 0))


def test_item_4_huge_plane_normal_in_toml_is_refused(tmp_path: Path) -> None:
    path = scene_file(tmp_path)
    path.write_text(path.read_text() + '\n[[colliders]]\ntype = "plane"\n'
                    'normal = [0, 1e155, 1e155]\n')
    with pytest.raises(SceneFileError, match=r"colliders\[0\]\.normal"):
        load_scene(path)


# --- item 5: tiny time steps, divergence, fps, huge meshes ---------------------------------
@pytest.mark.parametrize("dt", [1e-300, 0.0, -1.0, float("nan"), 1e300, True, "0.1", 1j])
def test_item_5_time_step_out_of_range(dt: object) -> None:
    p, f = grid(3, 3)
    solver = ClothSolver(p, f, settings=ClothSettings(model="xpbd"))
    with pytest.raises(SolverInputError, match=r"dt must be a positive number in \[1e-06, 10\]"):
        solver.step(dt)  # type: ignore[arg-type]


class _NanBackend:
    """A backend whose frame turns particle 5 into NaN (a stand-in for a diverging solve)."""

    name = "nan"

    def step(self, state_in, state_out, control, dt):  # type: ignore[no-untyped-def]
        x = state_in.positions.copy()
        x[5:, 1] = np.nan
        state_out.positions, state_out.velocities = x, state_in.velocities.copy()
        from pbdcloth import FrameStats
        return FrameStats()


def test_item_5_divergence_is_a_value_error_naming_frame_and_particle() -> None:
    p, f = grid(3, 3)
    solver = ClothSolver(p, f)
    solver.step(1 / 24)
    solver.use_backend(_NanBackend())
    with pytest.raises(SimulationDiverged, match="frame 2: particle 5") as info:
        solver.step(1 / 24)
    assert isinstance(info.value, ValueError) and isinstance(info.value, FloatingPointError)
    assert (info.value.frame, info.value.particle) == (2, 5)
    assert solver.frame == 1 and np.isfinite(solver.positions).all()


def test_item_5_tiny_fps_is_refused_by_validate(tmp_path: Path, capsys) -> None:
    path = scene_file(tmp_path, fps="1e-300")
    with pytest.raises(SceneFileError, match="scene.fps"):
        load_scene(path)
    rc, err = cli(capsys, "validate", str(path))
    assert rc == 2 and "scene.fps" in err


def test_item_5_mesh_scaled_by_1e30_is_refused() -> None:
    p, f = grid(3, 3)
    with pytest.raises(MeshError, match=r"within \+-1e\+06 m"):
        ClothSolver(p * 1e30, f, settings=ClothSettings(backend="numpy"))


# --- item 6: checkpoints and output folders ------------------------------------------------
def test_item_6_empty_checkpoint_then_resume(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "x.checkpoint.npz"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="not a pbdcloth checkpoint"):
        load_checkpoint(empty)
    path = scene_file(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "cloth.checkpoint.npz").write_bytes(b"")
    rc, err = cli(capsys, "simulate", str(path), "--out", str(out), "--resume", "--quiet")
    assert rc == 2 and "not a pbdcloth checkpoint" in one_line(err)


def test_item_6_out_naming_an_existing_file(tmp_path: Path, capsys) -> None:
    path = scene_file(tmp_path)
    taken = tmp_path / "taken"
    taken.write_text("x")
    rc, err = cli(capsys, "simulate", str(path), "--out", str(taken), "--quiet")
    assert rc == 2 and "is an existing file" in one_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_item_6_unwritable_output_folder(tmp_path: Path, capsys) -> None:
    path = scene_file(tmp_path)
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        rc, err = cli(capsys, "simulate", str(path), "--out", str(locked), "--quiet")
    finally:
        locked.chmod(0o700)
    assert rc == 2 and "cannot write" in one_line(err)


def test_item_6_unwritable_output_folder_probe(tmp_path: Path, monkeypatch) -> None:
    """Root ignores permissions, so the probe's failure is simulated: an OSError on open."""
    import builtins
    import errno

    from pbdcloth.pipeline.guard import OutputFolderError, check_output_folder

    real_open = builtins.open

    def refusing(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if ".pbdcloth-probe-" in str(file):
            raise OSError(errno.EACCES, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    with pytest.raises(OutputFolderError, match="cannot write into output folder"):
        check_output_folder(tmp_path / "out")


def test_item_6_movie_mp4_without_ffmpeg_is_refused_first(tmp_path: Path, capsys,
                                                          monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "imageio_ffmpeg" else real(name, *a))
    rc, err = cli(capsys, "preview", str(tmp_path / "nothing"), "--movie",
                  str(tmp_path / "x.mp4"))
    assert rc == 2 and "imageio_ffmpeg" in one_line(err)


def test_item_6_ctrl_c_during_demo_exits_130(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(LIBS)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbdcloth.cli", "demo", "--frames", "400", "--out",
         str(tmp_path / "demo"), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # a shell's background jobs ignore SIGINT, and children inherit that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((tmp_path / "demo").glob("*.obj")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


# --- item 7: face indices beyond int64 ----------------------------------------------------
@pytest.mark.parametrize("faces", [[[0, 1, 2**64]], np.array([[0, 1, 1e30]]),
                                   [[0, 1, -2**70]], np.array([[0, 1, 2**63 + 5]], np.uint64)])
def test_item_7_huge_face_indices(faces: object) -> None:
    p, _ = grid(3, 3)
    with pytest.raises(MeshError, match="face"):
        ClothMesh.from_arrays(p, faces)  # type: ignore[arg-type]


# --- item 8: colliders -------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: Sphere({"x": 1}, 1.0), lambda: Sphere((1j, 0, 0), 1.0), lambda: Sphere((0, 0), 1),
    lambda: Sphere((0, 0, 0), -1.0), lambda: Sphere((0, 0, 0), "1"),
    lambda: Sphere((0, 0, 0), 10**400), lambda: Capsule((0, 0, 0), (1, 0, np.nan), 0.1),
    lambda: Plane("abc", (0, 1, 0)), lambda: Sphere((0, 0, 0), True),
])
def test_item_8_bad_colliders_raise_solver_input_error(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SolverInputError):
        make()


def test_item_8_colliders_none_or_bare() -> None:
    p, f = grid(3, 3)
    assert ClothSolver(p, f, colliders=None).colliders == []
    with pytest.raises(SolverInputError, match=r"bare Sphere.*pass \[Sphere\(\.\.\.\)\]"):
        ClothSolver(p, f, colliders=Sphere((0, 0, 0), 1.0))  # type: ignore[arg-type]
    with pytest.raises(SolverInputError, match="must be a list of colliders"):
        ClothSolver(p, f, colliders=3)  # type: ignore[arg-type]


# --- item 9: accepted silently, now refused -----------------------------------------------
def test_item_9_ngon_with_a_repeated_index() -> None:
    p, _ = grid(3, 3)
    with pytest.raises(MeshError, match=r"face 0 repeats a point index: \[0, 1, 5, 1\]"):
        ClothMesh.from_arrays(p, [[0, 1, 5, 1]])
    with pytest.raises(MeshError, match="repeat a point index"):
        ClothMesh.from_arrays(p, np.array([[0, 1, 5, 1]]))


def test_item_9_complex_positions_faces_targets() -> None:
    p, f = grid(3, 3)
    with pytest.raises(MeshError, match="positions must be real numbers, got complex"):
        ClothMesh.from_arrays(p + 0j, f)
    with pytest.raises(MeshError, match="complex"):
        ClothMesh.from_arrays(p, f + 0j)
    solver = ClothSolver(p, f, pinned=[0])
    with pytest.raises(SolverInputError, match="pin targets must be real numbers"):
        solver.set_pin_targets(np.zeros((1, 3)) + 1j)
    with pytest.raises(SolverInputError, match="velocities must be real numbers"):
        ClothSolver(p, f, velocities=p * 1j)


@pytest.mark.parametrize("changes, match", [
    ({"gravity": "123"}, "'gravity' must be three numbers, got '123'"),
    ({"model": np.array(["pbd"])}, "'model' must be one of"),
    ({"tethers": 1}, "'tethers' must be true or false, got 1"),
    ({"gravity": (0, 1j, 0)}, "'gravity' must be three numbers"),
])
def test_item_9_settings_refused(changes: dict, match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        ClothSettings(**changes)


def test_item_9_step_true_and_tethers_1_in_toml(tmp_path: Path) -> None:
    p, f = grid(3, 3)
    with pytest.raises(SolverInputError):
        ClothSolver(p, f).step(True)
    with pytest.raises(SceneFileError, match="settings.tethers"):
        load_scene(scene_file(tmp_path, settings="tethers = 1"))


@pytest.mark.parametrize("frames", ["0", "-3"])
def test_item_9_demo_frames_zero_or_negative(tmp_path: Path, capsys, frames: str) -> None:
    rc, err = cli(capsys, "demo", "--frames", frames, "--out", str(tmp_path / "d"), "--quiet")
    assert rc == 2 and "--frames must be a whole number >= 1" in one_line(err)
    assert not (tmp_path / "d" / "preview.png").exists()


# --- item 10: unclear messages -------------------------------------------------------------
def test_item_10_non_utf8_scene_file_names_the_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(SCENE.format(frames=3, fps=24, settings="").encode() + b"# caf\xe9\n")
    with pytest.raises(SceneFileError, match="(?s)latin1.toml.*not UTF-8"):
        load_scene(path)
    rc, err = cli(capsys, "validate", str(path))
    assert rc == 2 and "latin1.toml" in err


def test_item_10_string_velocities_targets_and_state() -> None:
    p, f = grid(3, 3)
    with pytest.raises(SolverInputError, match="velocities must be real numbers, got text"):
        ClothSolver(p, f, velocities=[["a"] * 3] * 9)
    solver = ClothSolver(p, f, pinned=[0])
    with pytest.raises(SolverInputError, match="pin targets must be real numbers, got text"):
        solver.set_pin_targets([["a"] * 3])
    state = solver.get_state()
    del state["velocities"]
    with pytest.raises(SolverInputError, match="a solver state needs the keys"):
        solver.set_state(state)


def test_item_10_numpy_scalars_are_numbers() -> None:
    s = ClothSettings(friction=np.float32(0.01), substeps=np.int64(3), tethers=np.bool_(True))
    assert s.friction == float(np.float32(0.01)) and s.substeps == 3 and s.tethers is True
    assert isinstance(s.substeps, int)


def test_item_10_mistyped_option_gets_did_you_mean(tmp_path: Path, capsys) -> None:
    path = scene_file(tmp_path)
    rc = main(["simulate", str(path), "--substesp", "3"])
    err = capsys.readouterr().err
    assert rc == 2 and "did you mean --substeps?" in err and "Traceback" not in err


# --- exit codes ---------------------------------------------------------------------------
def test_exit_1_for_a_failure_during_the_run(tmp_path: Path, capsys, monkeypatch) -> None:
    from pbdcloth.solver import ClothSolver as Solver

    real_step = Solver.step

    def diverging(self, dt=1 / 24):  # type: ignore[no-untyped-def]
        if self.frame >= 1:
            raise SimulationDiverged(self.frame + 1, 7)
        return real_step(self, dt)

    monkeypatch.setattr(Solver, "step", diverging)
    rc, err = cli(capsys, "simulate", str(scene_file(tmp_path)), "--out",
                  str(tmp_path / "o"), "--quiet")
    assert rc == 1 and "diverged at frame 2: particle 7" in one_line(err)


# --- item 1: truncated .vdb files -------------------------------------------------------
BALL = ROOT / "examples" / "data" / "ball.vdb"

_SWEEP = r"""
import json, resource, sys, time
from pathlib import Path
from pbdcloth.colliders import SdfCollider, SdfError
data = Path(sys.argv[1]).read_bytes()
cut = Path(sys.argv[2])
slowest, kinds, longest = 0.0, {}, 0
for n in list(range(0, len(data), 64)):
    cut.write_bytes(data[:n])
    begin = time.perf_counter()
    try:
        SdfCollider.from_vdb(cut)
        kinds["accepted"] = kinds.get("accepted", 0) + 1
    except SdfError as exc:
        kinds["SdfError"] = kinds.get("SdfError", 0) + 1
        longest = max(longest, len(str(exc)))
        assert "\n" not in str(exc)
    slowest = max(slowest, time.perf_counter() - begin)
full = SdfCollider.from_vdb(sys.argv[1])
print(json.dumps({"cases": sum(kinds.values()), "kinds": kinds, "slowest_s": slowest,
                  "longest_message": longest,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


@pytest.mark.skipif(not BALL.is_file(), reason="examples/data/ball.vdb missing")
def test_item_1_every_truncation_of_ball_vdb_is_refused_fast_and_small(tmp_path: Path) -> None:
    pytest.importorskip("pyopenvdb")
    import json

    env = {**os.environ, "PYTHONPATH": str(LIBS)}
    # Linux keeps the largest resident size across fork + exec (ru_maxrss of a child started
    # from this big test process starts at this process's size), so a small launcher starts
    # the sweep: its ru_maxrss is then the sweep's own.
    launch = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
    out = subprocess.run([sys.executable, "-c", launch, sys.executable, "-c", _SWEEP, str(BALL),
                          str(tmp_path / "cut.vdb")],
                         capture_output=True, text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    print(report)
    assert report["cases"] == (BALL.stat().st_size + 63) // 64, report
    assert report["kinds"] == {"SdfError": report["cases"]}, report
    assert report["slowest_s"] < 1.0, report
    assert report["peak_mb"] < 200, report
    assert report["longest_message"] < 400, report


@pytest.mark.skipif(not BALL.is_file(), reason="examples/data/ball.vdb missing")
def test_item_1_validate_a_scene_with_a_truncated_vdb(tmp_path: Path, capsys) -> None:
    pytest.importorskip("pyopenvdb")
    (tmp_path / "ball.vdb").write_bytes(BALL.read_bytes()[:2912])
    path = scene_file(tmp_path)
    path.write_text(path.read_text() + '\n[[colliders]]\ntype = "vdb"\nfile = "ball.vdb"\n')
    begin = time.perf_counter()
    rc, err = cli(capsys, "validate", str(path))
    assert rc == 2 and "truncated or damaged" in err
    assert time.perf_counter() - begin < 1.0


@pytest.mark.parametrize("patch, match", [
    ((0, b"XXXX"), "magic"), ((8, b"\x10\x00\x00\x00"), "file format version 16"),
    ((0x3D, b"\xff\xff\x00\x00"), "grid count 65535"),
    ((0x41, b"\xff\xff\xff\x7f"), "grid 0 name claims"),
])
def test_item_1_damaged_headers(tmp_path: Path, patch: tuple[int, bytes], match: str) -> None:
    from pbdcloth.colliders import SdfError
    from pbdcloth.colliders.vdb_header import check_vdb_file

    data = bytearray(BALL.read_bytes())
    at, raw = patch
    data[at:at + len(raw)] = raw
    (tmp_path / "bad.vdb").write_bytes(bytes(data))
    with pytest.raises(SdfError, match=match):
        check_vdb_file(tmp_path / "bad.vdb")


# --- item 2: one writer per output folder ------------------------------------------------
def _digests(folder: Path) -> dict[str, str]:
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file() and p.name not in ("log.jsonl", "summary.json")}


def test_item_2_second_run_into_one_folder_is_refused(tmp_path: Path) -> None:
    path = scene_file(tmp_path, frames=40)
    path.write_text(path.read_text().replace("nx = 4, ny = 4", "nx = 24, ny = 24"))
    env = {**os.environ, "PYTHONPATH": str(LIBS)}
    shared, lone = tmp_path / "shared", tmp_path / "lone"
    run = [sys.executable, "-m", "pbdcloth.cli", "simulate", str(path), "--quiet", "--out"]
    first = subprocess.Popen(run + [str(shared)], stderr=subprocess.PIPE, text=True, env=env)
    lock = shared / ".pbdcloth.lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.is_file() and lock.read_text().strip()):
        time.sleep(0.01)
    begin = time.perf_counter()
    second = subprocess.run(run + [str(shared), "--substeps", "10"], capture_output=True,
                            text=True, env=env, timeout=60, check=False)
    refused_after = time.perf_counter() - begin
    still_running = first.poll() is None
    _, first_err = first.communicate(timeout=120)
    assert still_running, "the first run ended before the second started; make it longer"
    assert second.returncode == 2
    assert f"being written by process {first.pid}" in one_line(second.stderr)
    assert refused_after < 10.0  # interpreter start-up and imports; no frame is stepped
    assert first.returncode == 0, first_err
    subprocess.run(run + [str(lone)], env=env, timeout=120, check=True)
    assert _digests(shared) == _digests(lone) and len(_digests(lone)) == 41
    assert not lock.exists()


def test_item_2_resume_takes_the_lock_too(tmp_path: Path, capsys) -> None:
    from pbdcloth.pipeline.guard import output_lock

    path = scene_file(tmp_path)
    out = tmp_path / "o"
    with output_lock(out):
        rc, err = cli(capsys, "simulate", str(path), "--out", str(out), "--resume", "--quiet")
    assert rc == 2 and f"process {os.getpid()}" in one_line(err)
    rc, _ = cli(capsys, "simulate", str(path), "--out", str(out), "--resume", "--quiet")
    assert rc == 0


def test_item_2_a_killed_run_leaves_no_lock_held(tmp_path: Path) -> None:
    path = scene_file(tmp_path, frames=400)
    env = {**os.environ, "PYTHONPATH": str(LIBS)}
    out = tmp_path / "o"
    proc = subprocess.Popen([sys.executable, "-m", "pbdcloth.cli", "simulate", str(path),
                             "--quiet", "--out", str(out)], env=env)
    lock = out / ".pbdcloth.lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.is_file() and lock.read_text().strip()):
        time.sleep(0.01)
    proc.kill()
    proc.wait(timeout=30)
    from pbdcloth.pipeline.guard import output_lock

    with output_lock(out):
        assert lock.read_text().strip() == str(os.getpid())


# --- item 6: the disk fills up during the run -------------------------------------------
def test_item_6_disk_full_during_the_run_then_resume(tmp_path: Path, capsys,
                                                    monkeypatch) -> None:
    import errno

    from pbdcloth.io.cache import SequenceWriter

    path = scene_file(tmp_path, frames=8)
    lone, full = tmp_path / "lone", tmp_path / "full"
    assert cli(capsys, "simulate", str(path), "--out", str(lone), "--quiet")[0] == 0
    real_write = SequenceWriter.write

    def filling(self, frame, data):  # type: ignore[no-untyped-def]
        if frame == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, frame, data)

    monkeypatch.setattr(SequenceWriter, "write", filling)
    rc, err = cli(capsys, "simulate", str(path), "--out", str(full), "--quiet")
    line = one_line(err)
    assert rc == 1 and "No space left on device" in line
    assert "frames 1-4 are complete on disk" in line and "--resume" in line
    assert sorted(_digests(full)) == sorted(
        n for n in _digests(lone) if not n.startswith(("cloth.0005", "cloth.0006",
                                                        "cloth.0007", "cloth.0008")))
    for name, digest in _digests(full).items():
        if name.endswith(".obj"):
            assert digest == _digests(lone)[name]
    monkeypatch.setattr(SequenceWriter, "write", real_write)
    assert cli(capsys, "simulate", str(path), "--out", str(full), "--resume", "--quiet")[0] == 0
    assert _digests(full) == _digests(lone)


def test_item_6_too_little_free_space_is_refused_before_the_first_frame(
        tmp_path: Path, capsys, monkeypatch) -> None:
    import shutil

    from pbdcloth.pipeline import guard

    monkeypatch.setattr(guard.shutil, "disk_usage",
                        lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    out = tmp_path / "o"
    rc, err = cli(capsys, "simulate", str(scene_file(tmp_path)), "--out", str(out), "--quiet")
    assert rc == 2 and "MB free" in one_line(err)
    assert not any(out.glob("*.obj"))


# --- item 11: fast colliders never tunnel ---------------------------------------------------
def sweep_through_curtain(settings: ClothSettings, speed: float, shape: str = "capsule",
                          frames: int = 4) -> tuple[list[int], ClothSolver, float]:
    """A 1 m curtain hung from its top row at z = 0; a horizontal capsule (or a sphere) at
    y = 1 m moves along +z at ``speed`` [m/s]. Returns per frame the number of particles whose
    path through the frame, relative to the collider's motion, passed through its inside
    (1 substep: the path is the straight segment), the solver and the collider's final z."""
    from pbdcloth.colliders.continuous import closest_time, segment_axis_distance

    p, f = grid(21, 21, 1.0, 1.0, plane="xy", origin=(-0.5, 1.5, 0.0))
    top = np.flatnonzero(np.isclose(p[:, 1], 1.5))
    radius, z, dz = 0.05, -1.0, speed / 24.0
    half = 1.0 if shape == "capsule" else 0.0
    collider = (Capsule((-half, 1.0, z), (half, 1.0, z), radius) if shape == "capsule"
                else Sphere((0.0, 1.0, z), radius))
    solver = ClothSolver(p, f, pinned=top, settings=settings, colliders=[collider])
    crossed = []
    for _ in range(frames):
        a0, b0 = np.array([-half, 1.0, z]), np.array([half, 1.0, z])
        z += dz
        if shape == "capsule":
            collider.move_to((-half, 1.0, z), (half, 1.0, z))  # type: ignore[call-arg]
        else:
            collider.move_to((0.0, 1.0, z))  # type: ignore[call-arg]
        x0 = solver.positions.copy()
        solver.step(1 / 24)
        d = solver.positions - np.array([0.0, 0.0, dz]) - x0
        closest, _ = segment_axis_distance(x0 + closest_time(x0, d, a0, b0)[:, None] * d,
                                           a0, b0)
        crossed.append(int(np.count_nonzero(closest < radius * (1 - 1e-6))))
    return crossed, solver, z


def test_item_11_capsule_at_48_m_s_never_passes_through_the_cloth(backend) -> None:
    s = backend.cloth_settings(substeps=1, iterations=2)
    crossed, solver, z = sweep_through_curtain(s, 48.0)
    assert crossed == [0, 0, 0, 0]
    carried = np.count_nonzero(solver.positions[:, 2] > z - 0.2)
    assert carried >= 21  # the row at the bar's height, at least, rides on its front
    assert np.isfinite(solver.positions).all()


def test_item_11_with_the_continuous_test_off_the_capsule_tunnels(backend) -> None:
    s = backend.cloth_settings(substeps=1, iterations=2, continuous_collision=False)
    crossed, solver, _ = sweep_through_curtain(s, 48.0)
    assert crossed[0] > 20  # the whole row at the bar's height: the guarantee fails off
    if backend.name == "numpy":  # the observation: as if the capsule were not there
        # (a capsule the cloth never reaches: the solve with colliders runs its contact rounds)
        p, f = grid(21, 21, 1.0, 1.0, plane="xy", origin=(-0.5, 1.5, 0.0))
        far = Capsule((-1.0, 100.0, 0.0), (1.0, 100.0, 0.0), 0.05)
        alone = ClothSolver(p, f, pinned=np.flatnonzero(np.isclose(p[:, 1], 1.5)), settings=s,
                            colliders=[far])
        for _ in range(4):
            alone.step(1 / 24)
        assert np.array_equal(alone.positions, solver.positions)


def test_item_11_sphere_at_24_m_s_is_caught(backend) -> None:
    crossed, solver, _ = sweep_through_curtain(backend.cloth_settings(substeps=1), 24.0,
                                               shape="sphere")
    assert crossed == [0, 0, 0, 0] and np.isfinite(solver.positions).all()


def _ball_field(radius: float = 0.1, voxel: float = 0.01, band: float = 0.03):  # type: ignore[no-untyped-def]
    """A level-set ball (numpy only) centred on its block's origin."""
    from pbdcloth import SdfCollider

    n = int(2 * (radius + band) / voxel) + 3
    o = -(n - 1) / 2 * voxel
    ax = o + voxel * np.arange(n)
    x, y, z = np.meshgrid(ax, ax, ax, indexing="ij")
    phi = np.sqrt(x * x + y * y + z * z) - radius
    return SdfCollider.from_dense(np.clip(phi, -band, band), voxel, (o, o, o), band)


def level_set_through_curtain(settings: ClothSettings, speed: float = 48.0,
                              frames: int = 4) -> tuple[list[int], ClothSolver]:
    """A level-set ball (radius 0.1 m, band 3 voxels) at y = 1 m moving along +z through the
    curtain; per frame the particles whose relative path passed through the ball's inside."""
    from pbdcloth.colliders.continuous import closest_time, segment_axis_distance

    p, f = grid(21, 21, 1.0, 1.0, plane="xy", origin=(-0.5, 1.5, 0.0))
    ball, z, dz = _ball_field(), -1.0, speed / 24.0
    pose = np.eye(4)
    pose[:3, 3] = (0.0, 1.0, z)
    ball.move_to(pose)
    ball.end_frame()
    solver = ClothSolver(p, f, pinned=np.flatnonzero(np.isclose(p[:, 1], 1.5)),
                         settings=settings, colliders=[ball])
    crossed = []
    for _ in range(frames):
        c0 = np.array([0.0, 1.0, z])
        z += dz
        pose[:3, 3] = (0.0, 1.0, z)
        ball.move_to(pose)
        x0 = solver.positions.copy()
        solver.step(1 / 24)
        d = solver.positions - np.array([0.0, 0.0, dz]) - x0
        dist, _ = segment_axis_distance(x0 + closest_time(x0, d, c0, c0)[:, None] * d, c0, c0)
        crossed.append(int(np.count_nonzero(dist < 0.098)))  # the voxelised ball's radius, -2 %
    return crossed, solver


def test_item_11_level_set_at_48_m_s_never_passes_through(backend) -> None:
    crossed, solver = level_set_through_curtain(backend.cloth_settings(substeps=1,
                                                                       iterations=2))
    assert crossed == [0, 0, 0, 0]
    # carried ahead of the ball, not passed through (measured 11 particles past z = 1 m: the
    # cloth, held to the 1 % strain limit, follows the ball less far than a stretchy one)
    assert np.count_nonzero(solver.positions[:, 2] > 1.0) > 5


def test_item_11_level_set_tunnels_with_the_test_off(backend) -> None:
    crossed, _ = level_set_through_curtain(backend.cloth_settings(
        substeps=1, iterations=2, continuous_collision=False))
    assert crossed[0] > 5
