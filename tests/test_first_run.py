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

import pytest
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
