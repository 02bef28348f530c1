"""Caches keep the input's polygons, and post-processing keeps every point attribute.

The towel example is an OBJ of 345 quads: every cache format must write those quads (not the
solver's 690 triangles), and ``pbdcloth postprocess`` must carry every point attribute it reads
(velocities, inverse mass, strain and any other) into its output, point for point.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from pbdcloth.io.cache import read_cache
from pbdcloth.io.geo import read_geo, write_geo
from pbdcloth.io.obj import read_obj
from pbdcloth.pipeline.postprocess import PostprocessOptions, postprocess_cache
from pbdcloth.pipeline.scenefile import load_scene
from pbdcloth.pipeline.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
TOWEL = ROOT / "examples" / "towel_lift.toml"
HAS_USD = importlib.util.find_spec("pxr") is not None
FORMATS = ["obj", "geo"] + (["usd"] if HAS_USD else [])


def _towel_faces() -> list[list[int]]:
    return read_obj(ROOT / "examples" / "data" / "towel.obj")[1]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_quad_mesh_is_cached_as_quads(fmt: str, tmp_path: Path) -> None:
    faces = _towel_faces()
    assert len(faces) == 345 and all(len(f) == 4 for f in faces)
    spec = load_scene(TOWEL, {"out": str(tmp_path), "format": fmt, "frames": 2},
                      {"substeps": 2})
    assert spec.triangles.shape[0] == 690  # the solver's own triangulation
    simulate(spec, progress=False)
    cache = read_cache(tmp_path)
    assert cache.faces == faces
    assert len(cache.positions) == 2


def test_postprocess_keeps_every_point_attribute_and_the_quads(tmp_path: Path) -> None:
    spec = load_scene(TOWEL, {"out": str(tmp_path / "geo"), "format": "geo", "frames": 2},
                      {"substeps": 2})
    simulate(spec, progress=False)
    # Add an attribute of the user's own to the frames, as a Houdini artist might.
    for k, path in enumerate(sorted((tmp_path / "geo").glob("*.geo"))):
        geo = read_geo(path)
        attrs = dict(geo.point_attributes)
        attrs["Cd"] = np.tile([0.1 * k, 0.5, 1.0], (geo.positions.shape[0], 1))
        write_geo(path, geo.positions, geo.faces, attrs)
    src = read_cache(tmp_path / "geo")
    assert {"v", "w", "strain", "Cd"} <= set(src.attributes[0])
    smooth = PostprocessOptions(smooth_iterations=2)
    postprocess_cache(str(tmp_path / "geo"), str(tmp_path / "smooth"), smooth, fmt="geo")
    out = read_cache(tmp_path / "smooth")
    assert out.faces == _towel_faces()
    for a, b in zip(src.attributes, out.attributes):
        assert set(a) <= set(b)
        for name in a:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-6, atol=1e-6)

    shell = PostprocessOptions(thickness=0.004)
    postprocess_cache(str(tmp_path / "geo"), str(tmp_path / "shell"), shell, fmt="geo")
    thick = read_cache(tmp_path / "shell")
    n = src.positions[0].shape[0]
    for a, b in zip(src.attributes, thick.attributes):
        for name in a:
            both = np.concatenate([a[name], a[name]])  # each shell layer takes its point's value
            np.testing.assert_allclose(b[name], both, rtol=1e-6, atol=1e-6)
    assert thick.positions[0].shape[0] == 2 * n


@pytest.mark.skipif(not HAS_USD, reason="needs usd-core")
def test_postprocess_into_usd_keeps_velocities_inverse_mass_and_strain(tmp_path: Path) -> None:
    spec = load_scene(TOWEL, {"out": str(tmp_path / "geo"), "format": "geo", "frames": 3},
                      {"substeps": 2})
    simulate(spec, progress=False)
    src = read_cache(tmp_path / "geo")
    postprocess_cache(str(tmp_path / "geo"), str(tmp_path / "usd"),
                      PostprocessOptions(smooth_iterations=1), fmt="usd")
    out = read_cache(tmp_path / "usd")
    assert out.faces == src.faces
    assert np.abs(src.attributes[-1]["v"]).max() > 0.0
    for a, b in zip(src.attributes, out.attributes):
        for name in ("v", "w", "strain"):
            np.testing.assert_allclose(b[name], a[name], rtol=1e-6, atol=1e-6)
