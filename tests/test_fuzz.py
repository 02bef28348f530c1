"""Fuzzing the input contract with hypothesis (derandomized: the same cases on every run).

For each kind of input (meshes, pins, settings, time steps, pin targets, colliders, scene files,
VDB files, checkpoints) hypothesis generates values, good and bad, and each test asserts that
the outcome is either the documented error type or an accepted input whose result is finite
(no NaN ever comes out of an accepted input). :data:`COUNTS` tallies the cases per kind and
outcome; run with ``-s`` to see the table (printed when the module finishes).
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pbdcloth import (
    Capsule,
    ClothMesh,
    ClothSettings,
    ClothSolver,
    MeshError,
    Plane,
    SceneFileError,
    SdfError,
    SettingsError,
    SimulationDiverged,
    SolverInputError,
    Sphere,
)
from pbdcloth.cloth.mesh import grid

ROOT = Path(__file__).resolve().parents[1]
BALL = ROOT / "examples" / "data" / "ball.vdb"

COUNTS: Counter[tuple[str, str]] = Counter()

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=300,
                suppress_health_check=list(HealthCheck))

#: Numbers that break naive code: NaN, inf, huge, tiny, negative zero, ints beyond float.
nasty_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-300, 1e300, 1e155, -1e155, 1e30, 2.0**63]),
    st.floats(-10, 10))
nasty_ints = st.one_of(st.integers(-10, 40), st.sampled_from([2**63, 2**64, -2**63 - 1, 10**400]))
anything = st.one_of(
    nasty_floats, nasty_ints, st.booleans(), st.text(max_size=4), st.none(),
    st.complex_numbers(allow_nan=False, max_magnitude=10),
    st.lists(nasty_floats, max_size=4), st.dictionaries(st.text(max_size=2), st.integers(),
                                                        max_size=2),
    st.builds(np.float32, st.floats(-10, 10, width=32)), st.builds(np.int64, st.integers(-5, 50)))


def weighted(good: Any, bad: Any, good_share: int = 7) -> Any:
    """``good`` in ``good_share`` of 10 cases, else ``bad`` (one_of would weigh each branch of
    a nested one_of alike)."""
    return st.integers(0, 9).flatmap(lambda k: good if k < good_share else bad)


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    kinds = sorted({k for k, _ in COUNTS})
    print("\nfuzz cases per input kind (outcome: count)")
    for kind in kinds:
        outcomes = {o: n for (k, o), n in sorted(COUNTS.items()) if k == kind}
        print(f"  {kind:12s} {sum(outcomes.values()):5d}  {outcomes}")
    print(f"  {'total':12s} {sum(COUNTS.values()):5d}")


def tally(kind: str, outcome: str) -> None:
    COUNTS[(kind, outcome)] += 1


def _finite_run(solver: ClothSolver, frames: int = 2, dt: float = 1 / 24) -> None:
    for _ in range(frames):
        try:
            solver.step(dt)
        except SimulationDiverged:
            tally("divergence", "SimulationDiverged")
            return
        assert np.isfinite(solver.positions).all() and np.isfinite(solver.velocities).all()


BASE_P, BASE_F = grid(4, 4, 0.3, 0.3, plane="xy", origin=(0.0, 1.0, 0.0))


# --- meshes ----------------------------------------------------------------------------------
@FUZZ
@given(positions=st.one_of(
           st.lists(st.lists(nasty_floats, min_size=3, max_size=3), min_size=0, max_size=20),
           st.lists(st.lists(anything, max_size=4), max_size=6),
           st.builds(lambda s: BASE_P * s, nasty_floats),
           weighted(st.builds(lambda s: BASE_P + s * np.sin(np.arange(48.0)).reshape(16, 3),
                              st.floats(-0.01, 0.01)), st.just(BASE_P))),
       faces=st.one_of(
           st.lists(st.lists(nasty_ints, min_size=0, max_size=6), max_size=8),
           st.lists(st.lists(anything, max_size=5), max_size=4),
           st.just(BASE_F), st.just(BASE_F.tolist()), st.builds(lambda a: BASE_F + a, nasty_ints),
           st.builds(lambda a: BASE_F.astype(float) * a, nasty_floats)))
def test_fuzz_meshes(positions: Any, faces: Any) -> None:
    try:
        mesh = ClothMesh.from_arrays(positions, faces)
    except MeshError:
        tally("mesh", "MeshError")
        return
    tally("mesh", "accepted")
    assert np.isfinite(mesh.positions).all()
    assert mesh.triangles.min() >= 0 and mesh.triangles.max() < mesh.point_count
    try:
        solver = ClothSolver(mesh.positions, mesh.triangles)
    except SolverInputError:  # a scale Warp's float32 cannot hold (a sheet 1e-20 m across)
        tally("mesh", "SolverInputError")
        return
    _finite_run(solver, frames=1)


# --- pins ------------------------------------------------------------------------------------
@FUZZ
@given(pinned=st.one_of(st.lists(nasty_ints, max_size=5), st.lists(anything, max_size=3),
                        anything, st.lists(st.booleans(), min_size=16, max_size=16)))
def test_fuzz_pins(pinned: Any) -> None:
    try:
        solver = ClothSolver(BASE_P, BASE_F, pinned=pinned)
    except (MeshError, SolverInputError):
        tally("pins", "MeshError")
        return
    tally("pins", "accepted")
    _finite_run(solver, frames=1)


# --- settings --------------------------------------------------------------------------------
NAMES = [d.name for d in ClothSettings.declarations() if d.name not in ("backend", "device")]


@FUZZ
@given(changes=st.dictionaries(st.sampled_from(NAMES), anything, min_size=1, max_size=3))
def test_fuzz_settings(changes: dict[str, Any]) -> None:
    try:
        s = ClothSettings(**changes)
    except SettingsError:
        tally("settings", "SettingsError")
        return
    tally("settings", "accepted")
    solver = ClothSolver(BASE_P, BASE_F, pinned=[0, 3],
                         settings=s.replace(substeps=min(s.substeps, 20),
                                            iterations=min(s.iterations, 4)),
                         colliders=[Plane((0, 0.5, 0), (0, 1, 0))])
    _finite_run(solver, frames=2)


# --- time steps ------------------------------------------------------------------------------
@FUZZ
@given(dt=anything, model=st.sampled_from(["pbd", "xpbd"]))
def test_fuzz_time_steps(dt: Any, model: str) -> None:
    solver = ClothSolver(BASE_P, BASE_F, pinned=[0, 3], settings=ClothSettings(model=model))
    try:
        solver.step(dt)
    except SolverInputError:
        tally("time step", "SolverInputError")
        return
    except SimulationDiverged:
        tally("time step", "SimulationDiverged")
        return
    tally("time step", "accepted")
    assert np.isfinite(solver.positions).all()


# --- pin targets -----------------------------------------------------------------------------
@FUZZ
@given(targets=st.one_of(
    st.lists(st.lists(nasty_floats, min_size=3, max_size=3), min_size=0, max_size=3),
    st.lists(st.lists(anything, max_size=3), max_size=2), anything,
    st.builds(lambda s: BASE_P[[0, 3]] + s, nasty_floats)))
def test_fuzz_targets(targets: Any) -> None:
    solver = ClothSolver(BASE_P, BASE_F, pinned=[0, 3])
    try:
        solver.set_pin_targets(targets)
    except SolverInputError:
        tally("targets", "SolverInputError")
        return
    tally("targets", "accepted")
    _finite_run(solver, frames=1)


# --- colliders -------------------------------------------------------------------------------
good_vec = st.tuples(st.floats(-2, 2), st.floats(-1, 2), st.floats(-2, 2))
vec = weighted(good_vec, st.one_of(st.lists(nasty_floats, min_size=3, max_size=3), anything))


@FUZZ
@given(kind=st.sampled_from(["plane", "sphere", "capsule"]), a=vec, b=vec,
       radius=weighted(st.floats(0.01, 1), st.one_of(nasty_floats, anything)),
       to=vec, bare=st.sampled_from([False, False, False, True]))
@pytest.mark.slow
def test_fuzz_colliders(kind: str, a: Any, b: Any, radius: Any, to: Any, bare: bool) -> None:
    try:
        collider = (Plane(a, b) if kind == "plane" else Sphere(a, radius) if kind == "sphere"
                    else Capsule(a, b, radius))
        if kind == "capsule":
            collider.move_to(to, b)  # type: ignore[call-arg]
        else:
            collider.move_to(to)  # type: ignore[call-arg]
        solver = ClothSolver(BASE_P, BASE_F, pinned=[0, 3],
                             colliders=collider if bare else [collider])  # type: ignore[arg-type]
    except SolverInputError:
        tally("colliders", "SolverInputError")
        return
    tally("colliders", "accepted")
    _finite_run(solver, frames=2)


# --- scene files -----------------------------------------------------------------------------
SCENE = """[scene]
frames = {frames}
fps = {fps}
[mesh]
grid = {{ nx = {nx}, ny = 3, width = {width}, height = 0.2, plane = "xy", origin = {origin} }}
[pins]
indices = {pins}
[[colliders]]
type = "{ctype}"
{ckey} = {cval}
radius = {radius}
[settings]
substeps = {substeps}
{sname} = {svalue}
[output]
format = "{fmt}"
"""

toml_values = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e400", "0", "-1", "1e-300", "true", "\"x\"", "[]",
                     "[1, 2]", "[0, 1e155, 1e155]", "{}", "9999999999999999999999", "3",
                     "0.5", "[0.0, 1.0, 0.0]"]),
    st.integers(-5, 50).map(str), st.floats(-10, 10).map(repr))


def mostly(valid: str) -> Any:
    """The valid TOML value most of the time, else a nasty one."""
    return weighted(st.just(valid), toml_values, 8)


@FUZZ
@given(frames=mostly("3"), fps=mostly("24"), nx=mostly("4"), width=mostly("0.3"),
       origin=mostly("[0.0, 1.0, 0.0]"), pins=mostly("[0, 3]"),
       ctype=weighted(st.just("sphere"), st.sampled_from(["plane", "cone"]), 8),
       ckey=weighted(st.just("center"), st.sampled_from(["point", "normal"]), 8),
       cval=mostly("[0.0, 0.5, 0.0]"),
       radius=mostly("0.2"), substeps=mostly("4"),
       sname=st.sampled_from(NAMES + ["substep"]), svalue=weighted(st.just("1"), toml_values, 3),
       fmt=weighted(st.sampled_from(["obj", "geo"]), st.just("abc"), 9),
       garbage=weighted(st.none(), st.binary(max_size=8), 8))
def test_fuzz_scene_files(tmp_path_factory: pytest.TempPathFactory, garbage: bytes | None,
                          **values: str) -> None:
    from pbdcloth.pipeline.scenefile import load_scene

    folder = tmp_path_factory.mktemp("scene")
    text = SCENE.format(**values).encode()
    path = folder / "s.toml"
    path.write_bytes(text if garbage is None else text[:len(text) // 2] + garbage)
    try:
        spec = load_scene(path)
    except SceneFileError:
        tally("scene file", "SceneFileError")
        return
    tally("scene file", "accepted")
    solver = spec.scene().make_solver()
    solver.settings = solver.settings.replace(substeps=min(solver.settings.substeps, 10))
    _finite_run(solver, frames=1, dt=1 / spec.fps)


# --- VDB files -------------------------------------------------------------------------------
@pytest.mark.skipif(not BALL.is_file(), reason="examples/data/ball.vdb missing")
@FUZZ
@given(cut=st.integers(0, 116497), at=st.integers(0, 120),
       patch=st.binary(min_size=0, max_size=6), mode=st.sampled_from(["cut", "patch", "both"]))
def test_fuzz_vdb_files(tmp_path_factory: pytest.TempPathFactory, cut: int, at: int,
                        patch: bytes, mode: str) -> None:
    """Truncations anywhere, and damage in the header and grid descriptors (the bytes the
    bounded check reads; damage inside the voxel data is OpenVDB's to judge)."""
    pytest.importorskip("pyopenvdb")
    from pbdcloth import SdfCollider

    data = bytearray(BALL.read_bytes())
    if mode in ("patch", "both"):
        data[at:at + len(patch)] = patch + bytes(max(0, len(data[at:at + len(patch)])
                                                     - len(patch)))
    if mode in ("cut", "both"):
        data = data[:cut]
    path = tmp_path_factory.mktemp("vdb") / "f.vdb"
    path.write_bytes(bytes(data))
    try:
        collider = SdfCollider.from_vdb(path)
    except SdfError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600
        tally("vdb file", "SdfError")
        return
    tally("vdb file", "accepted")
    phi, _ = collider.query(BASE_P)
    assert np.isfinite(phi).all()


# --- checkpoints -----------------------------------------------------------------------------
def _checkpoint_bytes(**arrays: Any) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@FUZZ
@given(cut=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 2000)),
       drop=st.one_of(st.none(), st.none(), st.sampled_from(["positions", "velocities", "pin_start",
                                                  "frame", "time", "digest"])),
       scale=st.one_of(nasty_floats, st.just(1.0), st.just(1.0), st.just(1.0)),
       rows=st.sampled_from([16, 16, 16, 0, 3, 20]), frame=nasty_ints)
@pytest.mark.slow
def test_fuzz_checkpoints(tmp_path_factory: pytest.TempPathFactory, cut: int | None,
                          drop: str | None, scale: float, rows: int, frame: int) -> None:
    from pbdcloth.pipeline.checkpoint import CheckpointError, load_checkpoint

    good = ClothSolver(BASE_P, BASE_F, pinned=[0, 3])
    state = good.get_state()
    with np.errstate(all="ignore"):
        positions = np.resize(state["positions"] * scale, (rows, 3))
    arrays: dict[str, Any] = {
        "frame": np.int64(max(min(frame, 2**62), -2**62)), "digest": np.str_("d"),
        "solver_frame": np.int64(0), "time": np.float64(0.0), "positions": positions,
        "velocities": np.zeros((rows, 3)), "pin_start": state["pin_start"],
        "pin_end": state["pin_end"]}
    if drop is not None:
        arrays.pop(drop)
    raw = _checkpoint_bytes(**arrays)
    path = tmp_path_factory.mktemp("ckpt") / "c.checkpoint.npz"
    path.write_bytes(raw if cut is None else raw[:cut])
    try:
        saved = load_checkpoint(path)
        saved.restore(good)
    except (CheckpointError, SolverInputError):
        tally("checkpoint", "CheckpointError/SolverInputError")
        return
    tally("checkpoint", "accepted")
    assert np.isfinite(good.positions).all() and not math.isnan(good.time)
    _finite_run(good, frames=1)
