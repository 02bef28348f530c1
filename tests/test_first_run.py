"""The first run's rough edges: what a new user reads on the terminal.

Scene descriptions are whole sentences, distances print as millimetres without ``inf`` or
float noise (``-6.4e-08 mm``), and importing the Warp backend on a machine without a CUDA
driver prints neither Warp's banner nor the driver warning.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import grid
from pbdcloth.pipeline.run import RunSummary, distance_text, strain_text
from pbdcloth.pipeline.springs import SpringRun
from pbdcloth.scenes.cloth import SCENES, Scene, describe

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(SCENES))
def test_scene_descriptions_are_whole_sentences_on_one_line(name: str) -> None:
    if name == "prop" and importlib.util.find_spec("pyopenvdb") is None:
        pytest.skip("the prop scene needs pyopenvdb")
    scene = SCENES[name]()
    text = scene.description.strip()
    first = text.splitlines()[0]
    if isinstance(scene, Scene):
        assert "\n" not in text
    assert first.endswith("."), first
    assert "  " not in first


def test_describe_takes_the_docstrings_first_paragraph() -> None:
    doc = """Self-collision stress: a cloth held by two edges that turn in opposite
    directions, wringing it.

    More detail.
    """
    assert describe(doc) == ("Self-collision stress: a cloth held by two edges that turn in "
                             "opposite directions, wringing it.")


def test_distances_and_strains_print_cleanly() -> None:
    assert distance_text(-6.4e-11) == "0.00 mm"
    assert distance_text(0.01) == "10.00 mm"
    assert distance_text(-0.0123) == "-12.30 mm"
    assert strain_text(0.2483) == "24.83 %"


def _summary(distance: float | None) -> RunSummary:
    return RunSummary(scene="twist", frames=3, particles=4, triangles=2, substeps=1,
                      iterations=1, seconds=0.1, ms_per_frame=1.0, max_strain=0.05,
                      max_strain_frame=2, min_collider_distance=distance)


def test_run_summary_without_colliders_has_no_inf() -> None:
    text = "\n".join(_summary(None).lines())
    assert "inf" not in text and "- (no colliders)" in text
    assert "max strain       5.00 % (frame 2)" in text
    assert "-0.00" not in "\n".join(_summary(-1e-12).lines())


def test_spring_summary_has_no_float_noise() -> None:
    run = SpringRun(scene="springs", frames=2, chains=["a"], joints=3, collision_passes=4,
                    seconds=0.1, ms_per_frame=1.0, max_length_error=0.0,
                    min_clearance=-6.4e-11, contact_frames=1, max_tip_swing={"a": 0.1})
    text = "\n".join(run.lines())
    assert "e-" not in text.replace("0.00e+00", "") and "0.00 mm" in text


@pytest.mark.skipif(importlib.util.find_spec("warp") is None, reason="needs warp-lang")
def test_warp_backend_imports_silently() -> None:
    code = "import pbdcloth.backends.warp.backend as b; b.resolve_device('cpu')"
    env = {"PYTHONPATH": str(ROOT / "python3.11libs"), "PATH": "/usr/bin:/bin"}
    import os

    env["HOME"] = os.environ.get("HOME", "/tmp")
    if "WARP_CACHE_PATH" in os.environ:
        env["WARP_CACHE_PATH"] = os.environ["WARP_CACHE_PATH"]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "initialized" not in done.stdout + done.stderr
    assert "CUDA driver" not in done.stdout + done.stderr


_AUTO_RUN = """
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import grid
pos, tris = grid(5, 5, 1.0, 1.0)
solver = ClothSolver(pos, tris, settings=ClothSettings(backend="auto", substeps=2))
solver.step(1 / 24)
solver.step(1 / 24)
print(solver.backend_name)
"""


@pytest.mark.skipif(importlib.util.find_spec("warp") is None, reason="needs warp-lang")
def test_compilation_is_announced_only_while_the_kernel_cache_is_cold(monkeypatch: Any,
                                                                       tmp_path: Path) -> None:
    """The check itself: modules loaded here are in the kernel cache; pointed at an empty
    directory the cache is cold, and the message is printed once per process."""
    import warp as wp
    from pbdcloth.backends.warp import backend as wb

    solver = ClothSolver(*grid(4, 4, 1.0, 1.0), settings=ClothSettings(backend="warp",
                                                                       device="cpu"))
    solver.step(1 / 24)
    modules = [wp.get_module(solver.backend.k.module)]
    cpu = wp.get_device("cpu")
    assert not wb.cache_is_cold(modules, cpu)
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))
    assert wb.cache_is_cold(modules, cpu)
    monkeypatch.setattr(wb, "_announced", False)
    assert wb.announce_compilation(modules, cpu)
    assert not wb.announce_compilation(modules, cpu)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("warp") is None, reason="needs warp-lang")
def test_first_auto_run_announces_compilation_and_later_runs_do_not(tmp_path: Path) -> None:
    """``backend="auto"`` in a fresh process with an empty kernel cache: one line saying the
    kernels compile, once; the same again with the cache filled: no line."""
    import os

    env = {"PYTHONPATH": str(ROOT / "python3.11libs"), "PATH": "/usr/bin:/bin",
           "HOME": os.environ.get("HOME", "/tmp"), "WARP_CACHE_PATH": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", _AUTO_RUN], capture_output=True, text=True,
                           env=env, timeout=600, check=False) for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["warp"]
    assert runs[0].stderr.count("compiling kernels, once") == 1
    assert "compiling kernels" not in runs[1].stderr
