"""The command line: simulate (contract, kill and resume), validate, preview, plot, postprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pbdcloth.cli.main import build_parser, main
from pbdcloth.cloth.topology import edge_use
from pbdcloth.io.geo import read_geo
from pbdcloth.io.obj import read_obj
from pbdcloth.pipeline.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "io"
EXAMPLES = ROOT / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python3.11libs") + os.pathsep
       + os.environ.get("PYTHONPATH", "")}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "pbdcloth.cli", *args]


def usd_points(path: Path) -> dict[float, np.ndarray]:
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(path))
    attr = UsdGeom.Mesh(stage.GetDefaultPrim()).GetPointsAttr()
    return {t: np.asarray(attr.Get(t)) for t in attr.GetTimeSamples()}


# --- the contract ------------------------------------------------------------------------
def test_contract_drape_usd_twelve_frames(tmp_path: Path) -> None:
    """Exactly the documented call, through the real entry point."""
    pytest.importorskip("pxr")
    out = tmp_path / "usd"
    done = subprocess.run(cli("simulate", str(EXAMPLES / "drape.toml"), "--out", str(out),
                              "--format", "usd", "--frames", "12"),
                          env=ENV, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    samples = usd_points(out / "cloth.usd")
    assert list(samples) == [float(k) for k in range(1, 13)]
    assert all(p.shape == (1024, 3) for p in samples.values())
    assert "frame/s" in done.stderr  # tqdm progress: frames per second and ETA


@pytest.mark.parametrize("fmt", ["geo", "obj"])
def test_contract_sequence_names(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / fmt
    rc = main(["simulate", str(EXAMPLES / "drape.toml"), "--out", str(out), "--format", fmt,
               "--frames", "3", "--substeps", "2", "--quiet"])
    assert rc == 0
    assert sorted(p.name for p in out.glob(f"cloth.*.{fmt}")) == [
        f"cloth.000{k}.{fmt}" for k in (1, 2, 3)]


def test_start_frame_sets_the_first_file_number(tmp_path: Path) -> None:
    scene = tmp_path / "s.toml"
    scene.write_text((DATA / "small_drape.toml").read_text().replace(
        "frames = 8", "frames = 2\nstart_frame = 1001"))
    assert main(["simulate", str(scene), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert sorted(p.name for p in (tmp_path / "o").glob("cloth.*.obj")) == [
        "cloth.1001.obj", "cloth.1002.obj"]


# --- kill and resume ---------------------------------------------------------------------
def complete_frames(out: Path, fmt: str, points: int) -> list[int]:
    """Frame numbers on disk, each checked to be complete; fails on any partial frame."""
    if fmt == "usd":
        samples = usd_points(out / "cloth.usd")  # opens: the file is whole
        assert all(p.shape == (points, 3) for p in samples.values())
        return [int(t) for t in samples]
    frames = []
    for path in sorted(out.glob("cloth.*.obj")):
        pos, faces = read_obj(path)
        assert pos.shape == (points, 3) and len(faces) == 390, path
        frames.append(int(path.name.split(".")[1]))
    return frames


def start_and_kill(args: list[str], log: Path, after_frame: int) -> None:
    """Start ``pbdcloth simulate`` and SIGKILL it once the log shows ``after_frame``."""
    proc = subprocess.Popen(cli(*args), env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if log.is_file() and len(log.read_text().splitlines()) >= after_frame:
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


@pytest.mark.parametrize("fmt", ["obj", "usd"])
def test_sigkill_leaves_complete_frames_and_resume_is_bit_identical(tmp_path: Path,
                                                                    fmt: str) -> None:
    if fmt == "usd":
        pytest.importorskip("pxr")
    scene = str(DATA / "moving.toml")
    ref, run = tmp_path / "ref", tmp_path / "run"
    assert main(["simulate", scene, "--out", str(ref), "--format", fmt, "--quiet"]) == 0
    args = ["simulate", scene, "--out", str(run), "--format", fmt, "--quiet"]
    points = 16 * 14

    start_and_kill(args, run / "log.jsonl", after_frame=3)
    first = complete_frames(run, fmt, points)
    assert first == list(range(1, len(first) + 1)) and 12 not in first
    assert not (run / "summary.json").exists()  # it really stopped mid-run

    # Killed again, this time while resuming.
    start_and_kill(args + ["--resume"], run / "log.jsonl", after_frame=len(first) + 3)
    second = complete_frames(run, fmt, points)
    assert second == list(range(1, len(second) + 1)) and 12 not in second

    assert main(args + ["--resume"]) == 0
    assert complete_frames(run, fmt, points) == list(range(1, 13))
    if fmt == "obj":
        for k in range(1, 13):
            name = f"cloth.{k:04d}.obj"
            assert (ref / name).read_bytes() == (run / name).read_bytes(), name
    else:
        a, b = usd_points(ref / "cloth.usd"), usd_points(run / "cloth.usd")
        for t in a:
            np.testing.assert_array_equal(a[t], b[t])
    sa = load_checkpoint(ref / "cloth.checkpoint.npz").solver_state()
    sb = load_checkpoint(run / "cloth.checkpoint.npz").solver_state()
    for key in ("positions", "velocities", "pin_start", "pin_end"):
        np.testing.assert_array_equal(sa[key], sb[key])
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["frame"] for r in log] == list(range(1, 13))


def test_resume_with_another_scene_is_refused(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "o")
    assert main(["simulate", str(DATA / "small_drape.toml"), "--out", out, "--frames", "2",
                 "--quiet"]) == 0
    rc = main(["simulate", str(DATA / "small_drape.toml"), "--out", out, "--frames", "4",
               "--friction", "0.9", "--resume", "--quiet"])
    assert rc == 2
    assert "different scene" in capsys.readouterr().err


# --- validate ----------------------------------------------------------------------------
BROKEN_KEYS = ["scene.frames", "pins.indices", "colliders[0].center", "colliders[0].radius",
               "colliders[1].type", "settings.substep", "settings.friction", "settings.model",
               "output.format", "postprocess.smooth_mu", "render"]


def test_every_problem_of_a_broken_scene_is_reported_at_once(tmp_path: Path, capsys) -> None:
    broken = DATA / "broken.toml"
    rc = main(["validate", str(broken)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{len(BROKEN_KEYS)} problems in" in err
    lines = [line.strip() for line in err.splitlines()[1:]]
    for key in BROKEN_KEYS:
        assert any(line.startswith(key) for line in lines), (key, err)
    assert "settings.substep = 20: unknown setting; did you mean 'substeps'?" in err
    assert "pins.indices = [0, 9, 100]: point indices [100] are outside [0, 99]" in err
    assert "settings.friction = -1.0" in err and "out of range" in err
    # simulate refuses it the same way, before writing anything.
    assert main(["simulate", str(broken), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()

    # Negative control: with the marked lines fixed, the same file is valid.
    fixed = (broken.read_text()
             .replace("frames = 0 ", "frames = 3 ").replace("[0, 9, 100]", "[0, 9]")
             .replace("center = [0.0, 0.5] ", "center = [0.0, 0.5, 0.0] ")
             .replace("radius = -0.2", "radius = 0.2").replace('"torus"', '"plane"')
             .replace("substep = 20", "substeps = 20").replace("friction = -1.0", "friction = 1.0")
             .replace('"fem"', '"xpbd"').replace('"fbx"', '"geo"')
             .replace("smooth_mu = -0.1", "smooth_mu = -0.6")
             .replace('[render]              # BAD: unknown table\nengine = "karma"', ""))
    (tmp_path / "fixed.toml").write_text(fixed)
    assert main(["validate", str(tmp_path / "fixed.toml")]) == 0, capsys.readouterr().err


def test_validate_reports_files_syntax_and_command_line(tmp_path: Path, capsys) -> None:
    scene = tmp_path / "s.toml"
    scene.write_text('[mesh]\nfile = "nowhere.obj"\n[[colliders]]\ntype = "vdb"\n'
                     'file = "body.vdb"\n')
    assert main(["validate", str(scene), "--substeps", "0", "--frames", "0"]) == 2
    err = capsys.readouterr().err
    assert "mesh.file = 'nowhere.obj': file not found" in err
    assert "colliders[0].file = 'body.vdb': file not found" in err
    assert "--substeps = 0" in err and "--frames = 0" in err
    scene.write_text("[scene\nframes = 3\n")
    assert main(["validate", str(scene)]) == 2
    assert "syntax error" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.toml")]) == 2


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_every_example_scene_is_valid(example: str, capsys) -> None:
    if example in ("drape.toml", "xpbd.toml", "moving_capsule.toml", "banner_usd.toml",
                   "render_ready.toml", "drape_vdb.toml"):
        pytest.importorskip("pxr")
    if example in ("tablecloth.toml", "drape_vdb.toml"):
        pytest.importorskip("pyopenvdb")
    assert main(["validate", str(EXAMPLES / example)]) == 0, capsys.readouterr().err


# --- pictures ----------------------------------------------------------------------------
def cloth_pixels(image: np.ndarray) -> np.ndarray:
    """Pixels with a strong colour (the viridis-coloured cloth), not white, grey or black."""
    rgb = image[..., :3].astype(int)
    return rgb[(rgb.max(axis=-1) - rgb.min(axis=-1)) > 60]


def test_preview_png_shows_the_cloth_and_gif_moves(tmp_path: Path) -> None:
    import imageio.v3 as iio
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = tmp_path / "cache"
    assert main(["simulate", str(DATA / "small_drape.toml"), "--out", str(out), "--format",
                 "geo", "--frames", "5", "--quiet"]) == 0
    png, gif = tmp_path / "sheet.png", tmp_path / "anim.gif"
    assert main(["preview", str(out), "--out", str(png), "--movie", str(gif), "--size",
                 "160", "--panels", "4"]) == 0
    image = iio.imread(png)
    cloth = cloth_pixels(image)
    assert cloth.shape[0] > 0.01 * image.shape[0] * image.shape[1]
    # Strain as colour: the cloth is not one flat colour.
    assert len(np.unique(cloth, axis=0)) > 20
    # Negative control: a picture with only a title has no cloth pixels.
    fig = plt.figure(figsize=(4, 2))
    fig.suptitle("frame 1")
    fig.savefig(tmp_path / "blank.png")
    plt.close(fig)
    assert cloth_pixels(iio.imread(tmp_path / "blank.png")).shape[0] == 0

    frames = iio.imread(gif, index=None)
    assert frames.shape[0] == 5 and frames.shape[1:3] == (160, 160)
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).max() > 50


def test_plot_draws_the_log_and_tolerates_a_torn_line(tmp_path: Path) -> None:
    import imageio.v3 as iio

    out = tmp_path / "cache"
    assert main(["simulate", str(DATA / "small_drape.toml"), "--out", str(out), "--frames",
                 "4", "--quiet"]) == 0
    with (out / "log.jsonl").open("a") as fh:
        fh.write('{"frame": 5, "ms": 3')  # what a killed run may leave
    assert main(["plot", str(out)]) == 0
    image = iio.imread(out / "plot.png")
    assert cloth_pixels(image).shape[0] > 100  # coloured curves
    assert main(["plot", str(tmp_path / "nothing")]) == 2


# --- post-processing ---------------------------------------------------------------------
def test_postprocess_command_and_simulate_option_write_closed_shells(tmp_path: Path) -> None:
    src = tmp_path / "src"
    assert main(["simulate", str(DATA / "small_drape.toml"), "--out", str(src), "--format",
                 "geo", "--frames", "3", "--quiet"]) == 0
    dst = tmp_path / "dst"
    assert main(["postprocess", str(src), "--out", str(dst), "--smooth", "3",
                 "--shell-thickness", "0.01"]) == 0
    for path in sorted(dst.glob("cloth.*.geo")):
        geo = read_geo(path)
        assert geo.positions.shape == (288, 3)
        counts = edge_use(geo.triangles)[1]
        assert counts.min() == counts.max() == 2
        assert "strain" in geo.point_attributes
    assert len(list(dst.glob("cloth.*.geo"))) == 3

    sim = tmp_path / "sim"
    assert main(["simulate", str(DATA / "small_drape.toml"), "--out", str(sim), "--frames",
                 "2", "--shell-thickness", "0.005", "--smooth", "2", "--quiet"]) == 0
    pos, faces = read_obj(sim / "cloth.0002.obj")
    assert pos.shape == (288, 3)
    assert edge_use(np.asarray(faces))[1].min() == 2
    assert main(["postprocess", str(src), "--out", str(dst)]) == 2  # nothing to do


# --- help --------------------------------------------------------------------------------
def test_help_reads_like_documentation() -> None:
    parser = build_parser()
    top = parser.format_help()
    for name in ("simulate", "validate", "preview", "plot", "postprocess"):
        assert name in top
    sub = {a.dest: a for a in parser._actions if a.dest == "command"}["command"]
    text = sub.choices["simulate"].format_help()
    assert "--substeps N" in text and "default 10" in text and "range [1, 1000]" in text
    assert "unit m/s^2" in text  # gravity, from the settings declaration
    assert "Examples:" in text and "--resume" in text
    assert "unit m" in sub.choices["postprocess"].format_help()
