"""Fabric physics: unique constraint pairs, a momentum-keeping self-collision clamp, energy at
rest contact, and near-inextensible cloth at the default solve (issue 16)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import ClothMesh, grid
from pbdcloth.cloth.model import build_model

if TYPE_CHECKING:
    from conftest import BackendCase


def _pairs(model_family_i: np.ndarray, model_family_j: np.ndarray) -> np.ndarray:
    return np.sort(np.stack([model_family_i, model_family_j], 1), 1)


@pytest.mark.parametrize("shape", [(30, 30), (7, 5), (2, 9)])
def test_no_constraint_family_lists_a_pair_twice(shape: tuple[int, int]) -> None:
    pos, tris = grid(*shape, 1.0, 1.0)
    model = build_model(ClothMesh.from_arrays(pos, tris), [0], 0.15)
    for name, fam in (("stretch", model.stretch), ("shear", model.shear)):
        pr = _pairs(fam.i, fam.j)
        assert len(np.unique(pr, axis=0)) == len(pr), name
    quads = np.sort(model.bend.quads, axis=1)
    assert len(np.unique(quads, axis=0)) == len(quads)
    tied = np.sort(np.stack([model.tethers.particle, model.tethers.anchor], 1), 1)
    assert len(np.unique(tied, axis=0)) == len(tied)


def test_shear_pairs_cover_every_wing_pair_once() -> None:
    """30 x 30: 2,465 hinges, whose wings form 1,681 distinct pairs (784 repeats before)."""
    pos, tris = grid(30, 30, 1.0, 1.0)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.15)
    wings = np.unique(np.sort(model.topology.bend_quads[:, 2:4], 1), axis=0)
    assert model.bend.count == 2465
    assert model.shear.count == len(wings) == 1681
    assert np.array_equal(np.unique(_pairs(model.shear.i, model.shear.j), axis=0), wings)


def _spinning_cloth(backend: BackendCase | type, drift: tuple[float, float, float]) -> ClothSolver:
    pos, tris = grid(10, 10, 0.5, 0.5)
    pos = pos + [0.0, 1.0, 0.0]
    v0 = np.cross([0.0, 6.0, 0.0], pos - pos.mean(0)) + np.asarray(drift)
    s = backend.cloth_settings(self_collision=True, self_thickness=0.005, substeps=20,
                               gravity=(0.0, 0.0, 0.0))
    return ClothSolver(pos, tris, settings=s, velocities=v0)


def test_self_collision_clamp_keeps_linear_momentum(backend: BackendCase) -> None:
    """A 10 x 10 cloth spinning about y at 6 rad/s (and drifting) in free flight: the clamp acts
    on hundreds of particles, and the linear momentum stays what it was to 1e-9 of sum m |v|
    (float64; float32 Warp: a few hundred eps)."""
    solver = _spinning_cloth(backend, (0.3, 0.1, -0.2))
    m = solver.model.mass
    p0 = m @ solver.velocities
    scale = float(m @ np.linalg.norm(solver.velocities, axis=1))
    clamped = 0.0
    for _ in range(3):
        solver.step(1 / 24)
        clamped += solver.last_stats.extra.get("self_clamped", 0.0)
        drift = np.abs(m @ solver.velocities - p0).max() / scale
        assert drift < (1e-9 if backend.name == "numpy" else 500 * backend.eps), drift
    assert clamped > 100


def test_clamp_corrections_sum_to_zero_momentum() -> None:
    from pbdcloth.selfcollision.stage import SelfCollision

    pos, tris = grid(8, 8, 0.4, 0.4)
    model = build_model(ClothMesh.from_arrays(pos, tris), [0, 7], 0.15)
    rng = np.random.default_rng(3)
    V = rng.normal(size=(3, model.particle_count)) + np.array([[2.0], [0.0], [-1.0]])
    V[:, model.pinned] = 0.0
    before = V.copy()
    clamped = SelfCollision(model).clamp_velocity(V, 1 / 240, 0.005, 0.5)
    assert clamped > 40
    dp = (V - before) @ model.mass
    assert np.abs(dp).max() < 1e-13 * np.abs(before @ model.mass).max()
    # No two free particles close in faster than 2 vmax (the clamp's guarantee).
    vf = V[:, model.inv_mass > 0]
    rel = np.linalg.norm(vf[:, :, None] - vf[:, None, :], axis=0)
    assert rel.max() <= 2 * 0.5 * 0.005 * 240 * (1 + 1e-12)


# --- presets ------------------------------------------------------------------------------------

GRID_SCENE = """
[scene]
frames = 2
[mesh]
grid = { nx = 6, ny = 6, width = 0.5, height = 0.5 }
[settings]
"""


def test_presets_are_physical_and_sourced() -> None:
    from pbdcloth.presets import PRESETS, preset

    assert set(PRESETS) >= {"silk", "cotton_shirting", "denim", "wool_coating", "leather",
                            "jersey"}
    for p in PRESETS.values():
        s = ClothSettings(**p.settings())
        assert s.model == "xpbd" and len(p.source) > 20
        assert s.density == pytest.approx(p.gsm / 1000)
    # Denim is heavier and stiffer in bending than silk; jersey (a knit) stretches most.
    assert preset("denim").density > 5 * preset("silk").density
    assert preset("denim").bend_compliance < preset("silk").bend_compliance / 10
    assert max(PRESETS.values(), key=lambda p: p.stretch_compliance).name == "jersey"
    # Closed forms of the conversion: cotton EMT 3 % -> 1 / (490.3 N/m / 0.03).
    assert preset("cotton_shirting").stretch_compliance == pytest.approx(0.03 / 490.3)


def test_unknown_preset_names_the_valid_ones() -> None:
    from pbdcloth import SettingsError
    from pbdcloth.presets import preset

    with pytest.raises(SettingsError, match="valid presets: silk"):
        preset("burlap")


def test_preset_on_the_command_line_and_in_scene_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import argparse

    from pbdcloth.cli.options import add_settings_arguments, settings_overrides
    from pbdcloth.pipeline.scenefile import SceneFileError, load_scene
    from pbdcloth.presets import preset

    parser = argparse.ArgumentParser()
    add_settings_arguments(parser)
    given = settings_overrides(parser.parse_args(["--preset", "denim", "--friction", "0.7"]))
    assert given == {**preset("denim").settings(), "friction": 0.7}

    path = tmp_path / "s.toml"
    path.write_text(GRID_SCENE + 'preset = "leather"\nsubsteps = 12\n')
    spec = load_scene(path)
    leather = preset("leather")
    assert spec.settings.density == leather.density and spec.settings.substeps == 12
    assert spec.settings.bend_compliance == leather.bend_compliance
    # The command line's preset and options come after the file's.
    spec = load_scene(path, settings_overrides={**preset("silk").settings(), "friction": 0.1})
    assert spec.settings.density == preset("silk").density and spec.settings.friction == 0.1
    path.write_text(GRID_SCENE + 'preset = "burlap"\n')
    with pytest.raises(SceneFileError, match="settings.preset"):
        load_scene(path)


@pytest.mark.skipif(not __import__("importlib.util").util.find_spec("warp"),
                    reason="warp-lang is not installed")
def test_warp_clamp_mirrors_the_numpy_clamp_in_float64() -> None:
    """The spinning cloth, one frame with the clamp acting and no contact: Warp's float64
    kernels (momentum_blocks, clamp_velocity, shift_velocity) give the numpy stage's result to
    rounding."""
    from pbdcloth.backends.warp.backend import WarpBackend

    class NUMPY:
        name = "numpy"

        @staticmethod
        def cloth_settings(**changes: object) -> ClothSettings:
            return ClothSettings(**{**changes, "backend": "numpy"})  # type: ignore[arg-type]

    ref = _spinning_cloth(NUMPY, (0.3, 0.1, -0.2))
    dev = _spinning_cloth(NUMPY, (0.3, 0.1, -0.2))
    dev.use_backend(WarpBackend(dev.model, device="cpu", precision="float64"))
    a, b = ref.step(1 / 24), dev.step(1 / 24)
    assert a.extra["self_clamped"] == b.extra["self_clamped"] > 100
    assert a.extra["self_pt_contacts"] == 0
    assert np.abs(ref.positions - dev.positions).max() < 1e-12
    assert np.abs(ref.velocities - dev.velocities).max() < 1e-10
