"""Per-point contact scales against colliders: ``thickness_scale`` and ``friction_scale``.

Closed forms:

* thickness: a point resting on a collider ends each iteration projected onto its own shell,
  phi = settings.thickness * thickness_scale (the contact projection is the iteration's last
  step), so the settled gap is that, to the float rounding of the collider's distance (numpy:
  float64; Warp CPU: float32 positions; level sets: float32 voxels and blend);
* friction: a point at rest on a plane inclined by theta, pressed by gravity, penetrates
  d = h^2 g cos(theta) per substep and slips h^2 g sin(theta): it sticks while
  tan(theta) < mu s (mu = max(static_friction, friction), s = friction_scale). A sliding one
  gains h a, a = g (sin(theta) - mu_k s cos(theta)), of tangential speed each substep, so after
  n substeps it has slid a h^2 n (n + 1) / 2 (the discrete sum of 0.5 a t^2).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.attributes import ATTRIBUTES_BY_NAME, PointAttributeError
from pbdcloth.cloth.mesh import grid
from pbdcloth.colliders.ccd import barycentric
from pbdcloth.colliders.mesh import MeshCollider
from pbdcloth.colliders.sdf import SdfCollider
from pbdcloth.colliders.shapes import Capsule, Plane, Sphere

if TYPE_CHECKING:
    from conftest import BackendCase

T = 0.01  # settings.thickness [m]
DT = 1.0 / 24.0


def _floor_level_set() -> SdfCollider:
    """phi = y on a block around the sheet (trilinear blend of a linear field: exact)."""
    h = 0.02
    origin = np.array([-0.5, -0.2, -0.5])
    shape = (51, 21, 51)
    y = origin[1] + h * np.arange(shape[1])
    values = np.broadcast_to(y[None, :, None], shape).copy()
    return SdfCollider.from_dense(values, h, origin, background=0.2)


def _halves_sheet() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 13 x 13 sheet, 0.48 m, centred over the origin 4 cm up; thickness scale 2 on x > 0."""
    pos, tris = grid(13, 13, 0.48, 0.48, origin=(-0.24, 0.04, -0.24))
    scale = np.where(pos[:, 0] > 1e-9, 2.0, 1.0)
    return pos, tris, scale


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["plane", "level set", "sphere"])
def test_each_half_settles_at_its_own_thickness(backend: BackendCase, surface: str) -> None:
    pos, tris, scale = _halves_sheet()
    if surface == "plane":
        collider = Plane([0.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    elif surface == "level set":
        collider = _floor_level_set()
    else:
        collider = Sphere([0.0, -0.3, 0.0], 0.3)
    # Strain limit off: its sweeps shorten the chords over the sphere every iteration and leave
    # the points beside the top a few 1e-11 m off their shell, above this test's 1e-12.
    settings = backend.cloth_settings(thickness=T, substeps=8, iterations=10, friction=0.5,
                                      strain_limit=0.0)
    solver = ClothSolver(pos, tris, settings=settings, colliders=[collider],
                         point_attributes={"thickness_scale": scale})
    for _ in range(24):
        solver.step(DT)
    phi, _ = collider.query(solver.positions, 1.0)
    # The points in contact lie on their shell to the rounding of the collider's distance
    # (numpy float64: 1e-12 m; Warp's float32 positions and the level set's float32 voxels:
    # 1e-7 m, a few ulp of 0.05 m). After 1 s the rest hover at most 1 um above it (the sheet
    # still settles in-plane), a ten-thousandth of the 1 cm between the halves' thicknesses.
    exact = 1e-12 if backend.name == "numpy" and surface != "level set" else 1e-7
    hover = 1e-6
    # points four edges (16 cm) or more from the seam, past the bend stiffness's overshoot
    # beside the step (0.2 mm at 8 cm, 13 um at 12 cm): the halves' own thickness
    left, right = pos[:, 0] < -0.15, pos[:, 0] > 0.15
    assert abs(phi[left].min() - T) < exact and abs(phi[right].min() - 2 * T) < exact
    assert phi[pos[:, 0] > 1e-9].min() > 2 * T - exact  # no scale-2 point closer
    assert phi.min() > T - exact
    if surface != "sphere":  # the draped sheet touches the sphere near the top only
        assert np.abs(phi[left] - T).max() < hover, phi[left]
        assert np.abs(phi[right] - 2 * T).max() < hover, phi[right]


def test_thickness_zero_lets_points_touch(backend: BackendCase) -> None:
    pos, tris, _ = _halves_sheet()
    plane = Plane([0.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    solver = ClothSolver(pos, tris, settings=backend.cloth_settings(thickness=T, substeps=8),
                         colliders=[plane], point_attributes={"thickness_scale": 0.0})
    for _ in range(24):
        solver.step(DT)
    assert np.abs(solver.positions[:, 1]).max() < 1e-6


def test_the_hierarchy_probe_reaches_each_points_thickness() -> None:
    """The hierarchical pass leaves alone the particles within PROBE_REACH of their own
    thickness from a collider: at 3 thicknesses above a plane, a point of scale 2 (reach 4)
    is held, one of scale 1 (reach 2) is not."""
    from pbdcloth.backends.numpy_backend import NumpyBackend
    from pbdcloth.constraints.hierarchy import PROBE_REACH

    pos, tris, scale = _halves_sheet()
    pos = pos.copy()
    pos[:, 1] = 3.0 * T
    plane = Plane([0.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    settings = ClothSettings(backend="numpy", thickness=T, substeps=8)
    solver = ClothSolver(pos, tris, settings=settings, colliders=[plane],
                         point_attributes={"thickness_scale": scale})
    backend = solver.backend
    assert isinstance(backend, NumpyBackend) and PROBE_REACH * 2 > 3 > PROBE_REACH
    backend.contacts.clear()
    backend._probe_contacts(np.ascontiguousarray(pos.T), solver.control(),
                            backend._constants(settings, DT / 8), 1.0 / 8)
    assert np.array_equal(backend.contacts.active, scale == 2.0)


@pytest.mark.slow
def test_mesh_collider_uses_the_vertex_and_the_triangle_thickness() -> None:
    """numpy only (Warp has no mesh collider). Cloth vertices against a triangle floor keep
    their own thickness; a collider vertex (a spike's tip) under a cloth triangle keeps the mean
    of the triangle's corners' thicknesses."""
    pos, tris, scale = _halves_sheet()
    floor = MeshCollider(np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0],
                                   [-1.0, 0.0, 1.0]]), np.array([[0, 2, 1], [0, 3, 2]]))
    settings = ClothSettings(backend="numpy", thickness=T, substeps=8, iterations=10)
    solver = ClothSolver(pos, tris, settings=settings, colliders=[floor],
                         point_attributes={"thickness_scale": scale})
    for _ in range(24):
        solver.step(DT)
    y = solver.positions[:, 1]
    left, right = pos[:, 0] < -0.15, pos[:, 0] > 0.15
    assert abs(y[left].min() - T) < 1e-12 and abs(y[right].min() - 2 * T) < 1e-12
    assert np.abs(y[left] - T).max() < 1e-6 and np.abs(y[right] - 2 * T).max() < 1e-6
    # A thin spike under a sheet pinned at its corners: its apex props up the cloth triangle
    # above it at that triangle's thickness, T x the mean of its corners' scales. The last
    # iteration's cloth constraints move the triangle after the contact: 3e-6 m measured.
    apex = np.array([0.01, 0.01, 0.03])  # inside the triangle of a cell with corners x = 0, 0.04
    base = 0.004
    spike = np.array([apex, apex + [-base, -0.05, -base], apex + [base, -0.05, -base],
                      apex + [0.0, -0.05, base]])
    spike_tris = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]])
    corners = [0, 12, 156, 168]
    for scales in (np.ones(len(pos)), np.full(len(pos), 3.0), np.where(pos[:, 0] > 0.02, 3.0, 1.0)):
        solver = ClothSolver(pos, tris, pinned=corners, settings=settings,
                             colliders=[MeshCollider(spike, spike_tris)],
                             point_attributes={"thickness_scale": scales})
        for _ in range(12):
            solver.step(DT)
        x = solver.positions
        a, b, c = (x[tris[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n, axis=1)[:, None]
        u, v, w = barycentric(np.repeat(apex[:, None], len(tris), axis=1), a.T, b.T, c.T)
        over = np.flatnonzero((u >= 0.0) & (v >= 0.0) & (w >= 0.0))
        assert over.size == 1
        gap = abs(float((apex - a[over[0]]) @ n[over[0]]))
        expected = T * float(scales[tris[over[0]]].mean())
        assert abs(gap - expected) < 1e-5, (gap, expected)


# --- friction -------------------------------------------------------------------------------
THETA = math.radians(20.0)
MU = 0.5
NORMAL = np.array([math.sin(THETA), math.cos(THETA), 0.0])
DOWNHILL = np.array([math.cos(THETA), -math.sin(THETA), 0.0])
S_STAR = math.tan(THETA) / MU  # the friction scale at which the panels start to slide


def _panels(scales: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One cloth of separate 3 x 3 panels (0.1 m) lying on the inclined plane at the thickness,
    panel k with friction scale ``scales[k]``."""
    pos_all, tris_all, attr = [], [], []
    for k, s in enumerate(scales):
        p, t = grid(3, 3, 0.1, 0.1)
        world = (p[:, :1] * DOWNHILL + (p[:, 2:] + 0.3 * k) * np.array([0.0, 0.0, 1.0])
                 + T * NORMAL)
        tris_all.append(t + 9 * k)
        pos_all.append(world)
        attr.append(np.full(9, s))
    return np.concatenate(pos_all), np.concatenate(tris_all), np.concatenate(attr)


def test_friction_scale_sticks_or_slides_at_atan_mu_s(backend: BackendCase) -> None:
    scales = [1.0, 0.2, 0.97 * S_STAR, 1.03 * S_STAR]
    pos, tris, fs = _panels(scales)
    substeps, frames = 8, 24
    settings = backend.cloth_settings(thickness=T, friction=MU, static_friction=0.0,
                                      damping=0.0, substeps=substeps, iterations=10,
                                      hierarchy=False)
    solver = ClothSolver(pos, tris, settings=settings,
                         colliders=[Plane([0.0, 0.0, 0.0], NORMAL)],
                         point_attributes={"friction_scale": fs})
    for _ in range(frames):
        solver.step(DT)
    h, n = DT / substeps, substeps * frames
    slip = ((solver.positions - pos) @ DOWNHILL).reshape(len(scales), 9).mean(axis=1)
    # Warp: float32 positions round each substep's step h^2 a (3 um near the threshold) to
    # ulp(0.1 m) = 7 nm, 2e-3 of it, over 192 substeps
    rtol = 1e-9 if backend.name == "numpy" else 5e-3
    for k, s in enumerate(scales):
        a = 9.81 * (math.sin(THETA) - MU * s * math.cos(THETA))
        if math.atan(MU * s) > THETA:
            assert abs(slip[k]) < 1e-8, (s, slip[k])
        else:
            expected = a * h * h * n * (n + 1) / 2.0
            assert abs(slip[k] - expected) < rtol * expected, (s, slip[k], expected)
    gaps = solver.positions @ NORMAL
    assert np.abs(gaps - T).max() < 1e-6  # resting on the plane throughout


def test_friction_scale_acts_on_level_sets_and_mesh_colliders() -> None:
    """Friction scale 0 on a sheet pushed sideways over a floor: it slides on as far as with
    frictionless settings, on a level set (both backends share the kernel's formula) and on a
    mesh collider."""
    pos, tris, _ = _halves_sheet()
    pos = pos.copy()
    pos[:, 1] = T
    velocity = np.tile([1.0, 0.0, 0.0], (len(pos), 1))
    floor_mesh = MeshCollider(np.array([[-3.0, 0.0, -3.0], [3.0, 0.0, -3.0], [3.0, 0.0, 3.0],
                                        [-3.0, 0.0, 3.0]]), np.array([[0, 2, 1], [0, 3, 2]]))
    for floor in (_floor_level_set(), floor_mesh):
        ends = {}
        for label, mu, attrs in (("scaled", 0.5, {"friction_scale": 0.0}),
                                 ("frictionless", 0.0, None), ("rough", 0.5, None)):
            settings = ClothSettings(backend="numpy", thickness=T, friction=mu, substeps=4,
                                     hierarchy=False)
            solver = ClothSolver(pos, tris, settings=settings, colliders=[floor],
                                 velocities=velocity, point_attributes=attrs)
            for _ in range(4):
                solver.step(DT)
            ends[label] = float(solver.positions[:, 0].mean())
        assert abs(ends["scaled"] - ends["frictionless"]) < 1e-9, ends
        assert ends["rough"] < ends["frictionless"] - 0.05, ends


# --- scale 1 changes nothing ----------------------------------------------------------------
def _moving_scene(backend: BackendCase, attrs: dict[str, object] | None,
                  mesh: bool) -> np.ndarray:
    pos, tris = grid(9, 9, 0.4, 0.4, origin=(-0.2, 0.06, -0.2))
    field = _floor_level_set()
    sphere = Sphere([0.0, -0.2, 0.0], 0.15)
    capsule = Capsule([-0.3, 0.3, 0.0], [0.3, 0.3, 0.0], 0.03)
    colliders: list[object] = [Plane([0.0, -0.05, 0.0], [0.1, 1.0, 0.0]), sphere, capsule, field]
    if mesh:
        colliders.append(MeshCollider(np.array([[-0.1, 0.01, -0.1], [0.1, 0.01, -0.1],
                                                [0.0, 0.01, 0.1]]), np.array([[0, 1, 2]])))
    settings = backend.cloth_settings(thickness=T, friction=0.4, static_friction=0.6,
                                      substeps=4, iterations=6, continuous_collision=True)
    solver = ClothSolver(pos, tris, pinned=[0], settings=settings, colliders=colliders,
                         point_attributes=attrs)
    out = []
    for frame in range(8):
        sphere.move_to([0.0, -0.2 + 0.08 * (frame + 1), 0.0])
        capsule.move_to([-0.3, 0.3 - 0.1 * (frame + 1), 0.0], [0.3, 0.3 - 0.1 * (frame + 1), 0.0])
        c, s = math.cos(0.05 * frame), math.sin(0.05 * frame)
        field.move_to([[c, -s, 0.0, 0.0], [s, c, 0.0, 0.01 * frame], [0, 0, 1, 0], [0, 0, 0, 1]])
        solver.step(DT)
        out.append(np.concatenate([solver.positions, solver.velocities]))
    return np.stack(out)


def test_scale_one_is_bit_identical_to_no_attribute(backend: BackendCase) -> None:
    mesh = backend.name == "numpy"  # Warp has no mesh collider
    plain = _moving_scene(backend, None, mesh)
    ones = _moving_scene(backend, {"thickness_scale": 1.0, "friction_scale": 1.0}, mesh)
    assert np.array_equal(plain, ones)
    halved = _moving_scene(backend, {"thickness_scale": 0.5}, mesh)
    assert not np.array_equal(plain, halved)  # the scene is in contact: the scale acts


# --- bad values -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["thickness_scale", "friction_scale"])
def test_bad_contact_scales_are_refused_with_the_attribute_name(name: str) -> None:
    pos, tris = grid(4, 3)
    limit = ATTRIBUTES_BY_NAME[name].maximum
    for value, words in ((-0.5, "point 0 is -0.5"), (np.nan, "point 0 is nan"),
                         (limit * 1.01, "within \\[0, 100\\]"),
                         (np.ones(5), "one value per point \\(12,\\)")):
        with pytest.raises(PointAttributeError, match=f"'{name}'.*{words}"):
            ClothSolver(pos, tris, point_attributes={name: value})
    ClothSolver(pos, tris, point_attributes={name: np.r_[0.0, np.full(11, limit)]})


# --- where they come from -------------------------------------------------------------------
def test_scene_file_and_usd_primvar_reach_the_solver(tmp_path) -> None:  # type: ignore
    pytest.importorskip("pxr")
    from pbdcloth.pipeline.scenefile import SceneFileError, load_scene
    from test_attribute_sources import _scene, _usd_cloth

    thick = np.linspace(0.5, 3.0, 12)
    _usd_cloth(tmp_path / "cloth.usda", {"thicknessScale": thick})
    body = '[attributes]\nthickness_scale = { primvar = "thicknessScale" }\nfriction_scale = 0.25'
    path = _scene(tmp_path, body, mesh='file = "cloth.usda"')
    spec = load_scene(path)
    solver = spec.scene().make_solver()
    attrs = solver.model.point_attributes
    np.testing.assert_allclose(attrs["thickness_scale"], thick, rtol=1e-7)  # float32 file
    np.testing.assert_array_equal(attrs["friction_scale"], np.full(12, 0.25))
    assert "attributes friction_scale, thickness_scale" in "\n".join(spec.summary_lines())
    bad = _scene(tmp_path, "[attributes]\nfriction_scale = -1.0\n", mesh='file = "cloth.usda"')
    with pytest.raises(SceneFileError, match="attributes.friction_scale.*point 0 is -1.0"):
        load_scene(bad)


def test_houdini_point_attributes_reach_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The solver SOP (hou double) reads the Houdini names from input 0 and gives the headless
    result with the same attributes; the help card lists both."""
    import hou_double
    import houdini_scenes as scenes
    from pbdcloth.houdini import operators as ops
    from pbdcloth.houdini import sops
    from pbdcloth.houdini.hda import library_files

    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    pos, quads = scenes.grid_quads(9, 9, size=0.5, height=0.45)
    n = len(pos)
    attrs = {"thickness_scale": np.where(pos[:, 0] > 0.0, 3.0, 1.0),
             "friction_scale": np.linspace(0.0, 2.0, n)}
    floats = {ATTRIBUTES_BY_NAME[k].houdini: v for k, v in attrs.items()}
    corners = np.array([[x, y, z] for x in (-0.4, 0.4) for y in (0.3, 0.4) for z in (-0.4, 0.4)])
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    pre = scenes.sop(ops.PREPROCESS, "/obj/pre",
                     [scenes.source("/obj/g", lambda f: scenes.geometry(pos, quads,
                                                                        point_floats=floats))],
                     pin_group="")
    collider = scenes.source("/obj/solver_col", lambda f: scenes.geometry(corners, faces))
    node = scenes.sop(ops.SOLVER, "/obj/solver", [scenes.cooked(pre, sops.cook_preprocess),
                                                  collider],
                      substeps=8, thickness=0.01, friction=0.5, collider_method="triangles")
    got = node._cook(12, sops.cook_solver)._point_values["P"]
    tris = np.array([[f[0], f[k], f[k + 1]] for f in faces for k in (1, 2)])
    runs = {}
    for label, given in (("attributes", attrs), ("plain", None)):
        ref = ClothSolver(pos, quads, settings=ClothSettings(substeps=8, thickness=0.01,
                                                             friction=0.5),
                          colliders=[MeshCollider(corners, tris)], point_attributes=given)
        for _ in range(2, 13):
            ref.step(DT)
        runs[label] = ref.positions.astype(np.float32).astype(np.float64)
    assert np.array_equal(got, runs["attributes"])
    assert np.abs(runs["plain"] - got).max() > 5e-3  # the thick half rests 2 cm higher
    card = next(text for path, text in library_files().items()
                if path.endswith("Help") and "cloth__solver" in path)
    for name in ("thickness_scale", "friction_scale"):
        assert ATTRIBUTES_BY_NAME[name].houdini in card
    assert "self_thickness" in card and "self_friction" in card


def test_the_continuous_sweeps_take_each_points_thickness() -> None:
    """swept_entry (spheres, capsules) and field_entry (moving level sets) with an (M,) array of
    thicknesses give, point by point, what the scalar call with that point's thickness gives."""
    from pbdcloth.colliders.continuous import field_entry, swept_entry

    rng = np.random.default_rng(7)
    m = 2000
    x0 = rng.uniform(-0.4, 0.4, (m, 3))
    p = x0 + rng.uniform(-0.3, 0.3, (m, 3))
    shift = np.tile([0.35, 0.0, 0.0], (m, 1))
    thick = np.where(rng.random(m) < 0.5, 0.01, 0.04)
    a, b = np.array([-0.1, 0.0, 0.0]), np.array([0.1, 0.0, 0.0])

    def sphere_distance(y: np.ndarray) -> np.ndarray:
        return np.linalg.norm(y, axis=1) - 0.15

    def sphere_normal(y: np.ndarray) -> np.ndarray:
        return y / np.linalg.norm(y, axis=1)[:, None]

    calls = {
        "swept": lambda t: swept_entry(x0, p, shift, a, b, 0.1, t),
        "field": lambda t: field_entry(sphere_distance, sphere_normal, x0, p, t, 0.01),
    }
    for name, call in calls.items():
        idx, entry = call(thick)
        got = dict(zip(idx.tolist(), entry))
        want = {}
        for value in (0.01, 0.04):
            sub_idx, sub_entry = call(value)
            for i, e in zip(sub_idx.tolist(), sub_entry):
                if thick[i] == value:
                    want[i] = e
        assert sorted(got) == sorted(want) and len(got) > 10, name
        for i, entry_i in got.items():
            assert np.array_equal(entry_i, want[i]), name


# --- the same per-point formula on every backend ------------------------------------------
def _scaled_scene(use: str, continuous: bool = True) -> np.ndarray:
    from pbdcloth.backends.reference import ReferenceBackend

    pos, tris = grid(9, 9, 0.4, 0.4, origin=(-0.2, 0.06, -0.2))
    rng = np.random.default_rng(3)
    attrs = {"thickness_scale": rng.uniform(0.0, 3.0, len(pos)),
             "friction_scale": rng.uniform(0.0, 2.0, len(pos))}
    sphere = Sphere([0.0, -0.2, 0.0], 0.15)
    capsule = Capsule([-0.3, 0.3, 0.0], [0.3, 0.3, 0.0], 0.03)
    colliders = [Plane([0.0, -0.05, 0.0], [0.1, 1.0, 0.0]), sphere, capsule]
    settings = ClothSettings(backend="warp" if use == "warp32" else "numpy",
                             device="cpu" if use == "warp32" else "", thickness=T,
                             friction=0.4, static_friction=0.6, substeps=4, iterations=6,
                             continuous_collision=continuous)
    solver = ClothSolver(pos, tris, pinned=[0], settings=settings, colliders=colliders,
                         point_attributes=attrs)
    if use == "reference":
        solver.use_backend(ReferenceBackend(solver.model))
    elif use == "warp64":
        from pbdcloth.backends.warp.backend import WarpBackend

        solver.use_backend(WarpBackend(solver.model, device="cpu", precision="float64"))
    for frame in range(8):
        sphere.move_to([0.0, -0.2 + 0.08 * (frame + 1), 0.0])
        capsule.move_to([-0.3, 0.3 - 0.1 * (frame + 1), 0.0], [0.3, 0.3 - 0.1 * (frame + 1), 0.0])
        solver.step(DT)
    return solver.positions


@pytest.mark.slow
def test_contact_scales_agree_across_backends() -> None:
    """Random thickness scales in [0, 3] and friction scales in [0, 2] against a plane and a
    moving sphere and capsule: numpy against the per-constraint reference loop (which has no
    continuous collision; measured 4e-15 m) and against Warp's float64 kernels (continuous on,
    the hierarchy's probe too; measured 2.4e-14 m); bound 1e-12 m. (Warp's float32 run drifts
    from numpy by 3e-4 m here, as it does without attributes in this high-friction regime: see
    the next test.)"""
    ref = _scaled_scene("reference", False)
    assert np.abs(_scaled_scene("numpy", False) - ref).max() < 1e-12
    pytest.importorskip("warp")
    assert np.abs(_scaled_scene("numpy") - _scaled_scene("warp64")).max() < 1e-12


def test_a_uniform_power_of_two_scale_is_the_setting_times_it(backend: BackendCase) -> None:
    """thickness_scale 2 everywhere is thickness 2 T, friction_scale 2 is both coefficients
    doubled, bit for bit (the products are exact), on numpy and on Warp's float32 kernels."""
    pos, tris = grid(9, 9, 0.4, 0.4, origin=(-0.2, 0.06, -0.2))

    def run(thickness: float, friction: float, static: float,
            attrs: dict[str, object] | None) -> np.ndarray:
        sphere = Sphere([0.0, -0.2, 0.0], 0.15)
        settings = backend.cloth_settings(thickness=thickness, friction=friction,
                                          static_friction=static, substeps=4, iterations=6)
        solver = ClothSolver(pos, tris, pinned=[0], settings=settings,
                             colliders=[Plane([0.0, -0.05, 0.0], [0.1, 1.0, 0.0]), sphere],
                             point_attributes=attrs)
        for frame in range(8):
            sphere.move_to([0.0, -0.2 + 0.08 * (frame + 1), 0.0])
            solver.step(DT)
        return solver.positions

    scaled = run(T, 0.4, 0.6, {"thickness_scale": 2.0, "friction_scale": 2.0})
    assert np.array_equal(scaled, run(2 * T, 0.8, 1.2, None))
    assert not np.array_equal(scaled, run(T, 0.4, 0.6, None))
