"""Golden outputs: the demo and ``simulate`` give the same files as the recorded manifest.

``tests/data/fixtures/manifest.json`` holds, for each small case below, the sha256 of every
deterministic output file and the deterministic parts of ``log.jsonl`` / ``summary.json`` (the
timing fields ``ms``, ``seconds``, ``ms_per_frame``, ``seconds_this_run`` dropped). Three kinds of
file are compared by content rather than by bytes:

- checkpoints (``.npz``: a zip archive with a time stamp per member): the digest covers each
  array's name, dtype, shape and bytes;
- USD layers (``.usd``): the digest covers every attribute's default value and time samples,
  prim by prim, as read back through ``pxr``;
- pictures (``.png``): matplotlib projects 3-D points with a BLAS product, whose rounding
  depends on the processor (the kernels OpenBLAS picks), so a few edge pixels of a preview
  differ by one level between machines (6 of 510k pixels, measured with
  ``OPENBLAS_CORETYPE=Sandybridge``): the entry holds the picture's size and its gray levels
  averaged over a grid of 32 x 32 blocks, and two pictures match when every block is within
  :data:`PNG_LEVELS` levels. The simulations themselves give the same bytes on every kernel
  (the solver's products are :mod:`pbdcloth.portable`'s).

Checkpoints and USD layers are compared by content because their bytes carry the time of
writing.

Regenerate the manifest (only when a change of results is intended) with::

    PYTHONPATH=python3.11libs python tests/test_fixtures.py
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MANIFEST = Path(__file__).parent / "data" / "fixtures" / "manifest.json"

#: Timing fields of logs and summaries: they differ from run to run.
TIMING = frozenset({"ms", "seconds", "ms_per_frame", "seconds_this_run"})

#: Case name -> list of command lines (run in order into one output folder ``{out}``).
#: The cloth cases name ``--backend numpy``: the default (``auto``) runs Warp where it imports,
#: whose CPU kernels are compiled for the machine they run on, so its bits may differ between
#: processors; the numpy backend gives the same bytes on every x86-64 processor (its products
#: and arctangents are pbdcloth.portable's: see
#: :func:`test_outputs_are_the_same_on_a_processor_with_other_vector_units`). (Warp against
#: numpy: tests/test_warp.py.)
NUMPY = ["--backend", "numpy"]

CASES: dict[str, list[list[str]]] = {
    "demo_drape": [["demo", "--scene", "drape", "--frames", "3", "--quiet", "--out", "{out}",
                    *NUMPY]],
    "demo_cloak": [["demo", "--scene", "cloak", "--frames", "3", "--substeps", "5",
                    "--quiet", "--out", "{out}", *NUMPY]],
    "demo_springs": [["demo", "--scene", "springs", "--frames", "6", "--quiet",
                      "--out", "{out}"]],
    **{f"simulate_moving_capsule_{fmt}": [
        ["simulate", str(EXAMPLES / "moving_capsule.toml"), "--out", "{out}", "--format", fmt,
         "--frames", "4", "--quiet", *NUMPY]] for fmt in ("obj", "geo", "usd")},
    "simulate_render_ready_geo": [
        ["simulate", str(EXAMPLES / "render_ready.toml"), "--out", "{out}", "--format", "geo",
         "--frames", "3", "--substeps", "5", "--quiet", *NUMPY]],
    "simulate_moving_capsule_obj_resumed": [
        ["simulate", str(EXAMPLES / "moving_capsule.toml"), "--out", "{out}", "--format", "obj",
         "--frames", "2", "--quiet", *NUMPY],
        ["simulate", str(EXAMPLES / "moving_capsule.toml"), "--out", "{out}", "--format", "obj",
         "--frames", "4", "--quiet", "--resume", *NUMPY]],
}


def _usd_digest(path: Path) -> str:
    from pxr import Usd

    h = hashlib.sha256()
    stage = Usd.Stage.Open(str(path))
    for prim in stage.Traverse():
        h.update(str(prim.GetPath()).encode())
        for attr in prim.GetAttributes():
            h.update(attr.GetName().encode())
            times = attr.GetTimeSamples()
            for t in [None, *times]:
                value = attr.Get() if t is None else attr.Get(t)
                h.update(repr(t).encode())
                h.update(np.asarray(value).tobytes() if value is not None and hasattr(
                    value, "__len__") and not isinstance(value, str) else repr(value).encode())
    return h.hexdigest()


def _npz_digest(path: Path) -> str:
    h = hashlib.sha256()
    with np.load(path, allow_pickle=False) as data:
        for key in sorted(data.files):
            a = data[key]
            h.update(f"{key}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
    return h.hexdigest()


#: Largest difference of a block's mean gray level [0, 255] between two matching pictures.
PNG_LEVELS = 2
PNG_BLOCKS = 32


def _png_digest(path: Path) -> str:
    from PIL import Image

    with Image.open(path) as img:
        size = img.size
        blocks = img.convert("L").resize((PNG_BLOCKS, PNG_BLOCKS), Image.Resampling.BOX)
        return f"png:{size[0]}x{size[1]}:{blocks.tobytes().hex()}"


def same_file(got: str, expected: str) -> bool:
    """Whether two digests of :func:`file_digest` name the same output (pictures within
    :data:`PNG_LEVELS` per block, everything else equal)."""
    if not (got.startswith("png:") and expected.startswith("png:")):
        return got == expected
    size_got, levels_got = got[4:].split(":")
    size_expected, levels_expected = expected[4:].split(":")
    a = np.frombuffer(bytes.fromhex(levels_got), dtype=np.uint8).astype(int)
    b = np.frombuffer(bytes.fromhex(levels_expected), dtype=np.uint8).astype(int)
    return size_got == size_expected and a.shape == b.shape and int(
        np.abs(a - b).max()) <= PNG_LEVELS


def file_digest(path: Path) -> str:
    """sha256 of a file: by content for ``.npz``, ``.usd`` and ``.png`` (see the module
    docstring)."""
    if path.suffix == ".png":
        return _png_digest(path)
    if path.suffix == ".npz":
        return "npz:" + _npz_digest(path)
    if path.suffix == ".usd":
        return "usd:" + _usd_digest(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _scrub(value: Any, out: Path) -> Any:
    """``value`` without timing fields, with paths inside ``out`` made relative to it."""
    if isinstance(value, dict):
        return {k: _scrub(v, out) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_scrub(v, out) for v in value]
    if isinstance(value, str) and value.startswith(str(out)):
        return Path(value).relative_to(out).as_posix()
    return value


def run_case(name: str, out: Path) -> dict[str, Any]:
    """Run case ``name`` into ``out`` in this process; return its manifest entry."""
    from pbdcloth.cli import main

    out.mkdir(parents=True, exist_ok=True)
    for argv in CASES[name]:
        with redirect_stdout(StringIO()):
            rc = main([a.replace("{out}", str(out)) for a in argv])
        assert rc == 0, f"{name}: {argv} returned {rc}"
    files = {p.relative_to(out).as_posix(): file_digest(p)
             for p in sorted(out.rglob("*")) if p.is_file()
             and p.name not in ("log.jsonl", "summary.json")}
    entry: dict[str, Any] = {"files": files}
    log = out / "log.jsonl"
    if log.is_file():
        entry["log"] = [_scrub(json.loads(line), out)
                        for line in log.read_text().splitlines() if line.strip()]
    summary = out / "summary.json"
    if summary.is_file():
        entry["summary"] = _scrub(json.loads(summary.read_text()), out)
    return entry


def _needs(name: str) -> None:
    if "usd" in name:
        pytest.importorskip("pxr")
    if name.startswith("demo"):
        pytest.importorskip("matplotlib")


def _expected() -> dict[str, Any]:
    return dict(json.loads(MANIFEST.read_text()))


def _assert_matches(name: str, got: dict[str, Any], expected: dict[str, Any]) -> None:
    """A run's manifest entry against the recorded one: the same files with matching digests
    (:func:`same_file`), the same log and summary."""
    assert sorted(got["files"]) == sorted(expected["files"])
    for path, digest in expected["files"].items():
        assert same_file(got["files"][path], digest), f"{name}: {path} differs"
    assert got.get("log") == expected.get("log")
    assert got.get("summary") == expected.get("summary")


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_match_the_manifest(name: str, tmp_path: Path) -> None:
    _needs(name)
    expected = _expected()[name]
    _assert_matches(name, run_case(name, tmp_path / name), expected)


#: A processor without AVX2, FMA or AVX-512 as numpy and OpenBLAS see it: numpy's dispatched
#: loops (SVML's arctangent and exponential among them) fall back to the baseline ones and
#: OpenBLAS takes its Sandy Bridge kernels (no fused multiply-add).
OTHER_PROCESSOR = {
    "NPY_DISABLE_CPU_FEATURES": "AVX2 FMA3 F16C AVX512F AVX512CD AVX512_SKX AVX512_CLX "
                                "AVX512_CNL AVX512_ICL",
    "OPENBLAS_CORETYPE": "Sandybridge",
}


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="the vector units named are x86's")
@pytest.mark.parametrize("name", ["demo_cloak", "demo_springs", "simulate_render_ready_geo"])
def test_outputs_are_the_same_on_a_processor_with_other_vector_units(name: str,
                                                                     tmp_path: Path) -> None:
    """The manifest's bytes from a process that sees another processor (:data:`OTHER_PROCESSOR`):
    the cloak's bending and coarse-level rest angles (an arctangent), the walking body's and the
    spring chains' rotations (3 x 3 products) are :mod:`pbdcloth.portable`'s, so they round
    alike. With numpy's ``np.arctan`` and ``@`` the cloak's log and the spring summary differed
    in the last bits."""
    _needs(name)
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import test_fixtures as t; "
              "print(json.dumps(t.run_case(sys.argv[2], t.Path(sys.argv[3]))))")
    env = {**os.environ, **OTHER_PROCESSOR,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "python3.11libs"),
                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent), name,
                           str(tmp_path / name)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    _assert_matches(name, json.loads(done.stdout.strip().splitlines()[-1]), _expected()[name])


def test_resumed_run_matches_the_uninterrupted_one() -> None:
    """The manifest itself: a run resumed half way wrote the same frames and checkpoint."""
    expected = _expected()
    whole, resumed = (expected["simulate_moving_capsule_obj"],
                      expected["simulate_moving_capsule_obj_resumed"])
    assert resumed["files"] == whole["files"]
    assert resumed["log"] == whole["log"]


def write_manifest(work: Path) -> dict[str, Any]:
    """Run every case under ``work`` and return the manifest."""
    return {name: run_case(name, work / name) for name in sorted(CASES)}


if __name__ == "__main__":  # pragma: no cover
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_manifest(Path(tmp))
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else MANIFEST
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {target}")
