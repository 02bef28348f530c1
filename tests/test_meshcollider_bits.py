"""MeshCollider results are held bit for bit: the collider phase's speed-ups (cached per-substep
pair quantities, culled tests, a faster broad phase) must not change a single output bit.

Each case runs a short scene through every path of :mod:`pbdcloth.colliders.mesh_contact` and
hashes the positions and velocities after every frame (SHA-256 of the float64 bytes). The
digests were recorded with the collider phase before its speed-ups (main at 5da3ff5); a change
of any result bit in any frame changes them. They were recorded again, once, when the solve's
bend angle, the body's joints and the meshes' rotations moved to :mod:`pbdcloth.portable`
(an arctangent and products that round alike on every processor), with the collider code
unchanged: the flat ``plane`` case, which bends nothing, kept its digest. What each case
covers:

- ``skirt``: the walking body (a closed, deforming mesh) under a skirt: broad-phase refits of a
  moving mesh, the discrete sided push with Coulomb friction against the surface's motion, the
  winding-number fail-safe's suspects test, collider vertices against the cloth's triangles.
- ``sweep``: a limb crossing a hanging sheet at 3 m/s (several thicknesses per substep): the
  continuous test in both directions, the recheck after collider-vertex pushes; per-point
  thickness and friction scales.
- ``spike``: a thin cone pushed up under a pinned sheet: collider vertices against cloth
  triangles (a vertex sharper than the cloth's edge).
- ``rescue``: a cloth vertex that starts inside a closed box: found by its winding number and
  sent out through its nearest triangle.
- ``plane``: cloth starting exactly in a mesh's plane, with degenerate triangles (zero sides).
- ``bench`` (slow): the benchmark's scene, 10k particles on a 19,712-triangle body.

The scenes run without the sharp-edge test (:mod:`pbdcloth.colliders.mesh_edges`, which came
after the digests and has its own tests): they hold the vertex-triangle paths to their
recorded bits.

The mutation check: each of these changes at least one digest (tried): ``_first_per_group``
keeping the later pair of a tie; the continuous test's loose bound without the triangles' own
motion; the fail-safe's cull passing only vertices 1 cm behind a plane; ``MAX_SUSPECTS`` = 0.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import grid
from pbdcloth.colliders import MeshCollider
from pbdcloth.scenes.props import box_mesh, capsule_mesh

FPS = 24.0


@pytest.fixture(autouse=True)
def _no_sharp_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded scenes predate the sharp-edge test: run them without it."""
    import pbdcloth.colliders.mesh as mesh_module

    monkeypatch.setattr(mesh_module, "sharp_edges",
                        lambda vertices, triangles: np.zeros((0, 2), dtype=np.intp))


def _settings(**changes: object) -> ClothSettings:
    """The cases' settings, with the strain limit off and one sweep per coarse level of the
    hierarchy: the digests were recorded before either."""
    return ClothSettings(strain_limit=0.0, hierarchy_sweeps=1, **changes)  # type: ignore[arg-type]


def _skirt_settings() -> ClothSettings:
    """The skirt's settings, coarse and full size alike."""
    return _settings(model="xpbd", substeps=10, iterations=3, density=0.2,
                     stretch_compliance=1e-7, shear_compliance=1e-6, bend_compliance=20.0,
                     damping=0.3, tethers=True, tether_slack=1.02, thickness=0.006, friction=0.3,
                     static_friction=0.3, self_collision=False, backend="numpy")


def _digest(solver: ClothSolver, frames: int, animate=None) -> str:  # type: ignore[no-untyped-def]
    h = hashlib.sha256()
    for k in range(1, frames + 1):
        if animate is not None:
            animate(solver, k)
        solver.step(1.0 / FPS)
        h.update(np.ascontiguousarray(solver.positions, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(solver.velocities, dtype=np.float64).tobytes())
    return h.hexdigest()


def _skirt() -> str:
    from pbdcloth.scenes.cloth import SKIRT_TIGHT_CUT, skirt_scene

    settings = _skirt_settings()
    scene = skirt_scene(frames=6, settings=settings, nu=64, nv=20, body_segments=24,
                        body_rings=20, **SKIRT_TIGHT_CUT)
    return _digest(scene.make_solver(), 6, scene.animate)


def _bench() -> str:
    """The benchmark's scene (scripts/bench_colliders.py): 10k particles on a 19,712-triangle
    body, 8 frames."""
    from pbdcloth.scenes.cloth import SKIRT_TIGHT_CUT, skirt_scene

    settings = _skirt_settings()
    scene = skirt_scene(frames=8, settings=settings, nu=200, nv=50, body_segments=64,
                        body_rings=56, **SKIRT_TIGHT_CUT)
    return _digest(scene.make_solver(), 8, scene.animate)


def _sweep() -> str:
    cv, ct = capsule_mesh((0, 0.55, 0), (0, 0.95, 0), 0.05, segments=16, rings=4)

    def limb(k: int) -> np.ndarray:
        return cv + np.array([0.0, 0.0, -0.15 + 3.0 * k / FPS])

    pos, tris = grid(31, 31, 0.8, 0.8, plane="xy", origin=(-0.4, 1.2, 0.0))
    top = np.flatnonzero(pos[:, 1] > 1.2 - 1e-9)
    scale = 1.0 + 0.5 * (pos[:, 0] > 0.0)
    s = _settings(substeps=10, iterations=4, thickness=0.004, friction=0.2,
                  static_friction=0.3, model="xpbd", stretch_compliance=1e-8,
                  shear_compliance=1e-6, bend_compliance=1.0, damping=0.0, tethers=False,
                  self_collision=False, backend="numpy")
    solver = ClothSolver(pos, tris, pinned=top, settings=s,
                         colliders=[MeshCollider(None, ct, frames=limb, name="limb")],
                         point_attributes={"thickness_scale": scale, "friction_scale": 2.0 - scale})
    return _digest(solver, 5)


def _spike() -> str:
    pos, tris = grid(21, 21, 1.0, 1.0, plane="xz", origin=(-0.5, 0.5, -0.5))
    border = np.flatnonzero((np.abs(pos[:, 0]) > 0.5 - 1e-9) | (np.abs(pos[:, 2]) > 0.5 - 1e-9))
    ring = 8
    ang = 2 * np.pi * np.arange(ring) / ring
    base = np.stack([0.012 + 0.01 * np.cos(ang), np.zeros(ring), 0.031 + 0.01 * np.sin(ang)],
                    axis=1)
    cone = np.concatenate([base, [[0.012, 0.12, 0.031], [0.012, 0.0, 0.031]]])
    cone_t = np.array([[k, (k + 1) % ring, ring] for k in range(ring)]
                      + [[(k + 1) % ring, k, ring + 1] for k in range(ring)])

    def spike(k: int) -> np.ndarray:
        return cone + np.array([0.0, 0.25 + min(k, 6) / FPS, 0.0])

    s = _settings(substeps=10, iterations=6, thickness=0.004, friction=0.0,
                  static_friction=0.0, model="xpbd", stretch_compliance=1e-7,
                  shear_compliance=1e-6, bend_compliance=1.0, damping=0.0, tethers=False,
                  self_collision=False, backend="numpy")
    solver = ClothSolver(pos, tris, pinned=border, settings=s,
                         colliders=[MeshCollider(None, cone_t, frames=spike)])
    return _digest(solver, 10)


def _rescue() -> str:
    v, quads = box_mesh((0.0, 0.05, 0.0), (0.5, 0.05, 0.5))
    t = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    pos, tris = grid(11, 11, 0.2, 0.2, plane="xz", origin=(-0.1, 0.106, -0.1))
    pos[60, 1] = 0.098
    s = _settings(substeps=10, iterations=4, thickness=0.004, friction=0.3,
                  model="xpbd", stretch_compliance=1e-7, shear_compliance=1e-6,
                  bend_compliance=1.0, damping=0.0, tethers=False, self_collision=False,
                  backend="numpy")
    return _digest(ClothSolver(pos, tris, settings=s, colliders=[MeshCollider(v, t)]), 4)


def _plane() -> str:
    v = np.array([[-1, 0, -1], [1, 0, -1], [1, 0, 1], [-1, 0, 1], [0, 0, 0], [0, 0, 0]], float)
    t = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 4], [0, 0, 1]])
    pos, tris = grid(10, 10, 0.5, 0.5, plane="xz", origin=(-0.25, 0.0, -0.25))
    s = _settings(substeps=5, iterations=3, thickness=0.01, model="xpbd", tethers=False,
                  self_collision=False, backend="numpy")
    return _digest(ClothSolver(pos, tris, settings=s, colliders=[MeshCollider(v, t)]), 4)


CASES = {"skirt": _skirt, "sweep": _sweep, "spike": _spike, "rescue": _rescue, "plane": _plane}

#: SHA-256 of every frame's positions and velocities (see the module docstring).
DIGESTS = {
    "skirt": "bac729c6d7ef7b4650029c3b928f76feb3600154124dd6c61602c8474879afc4",
    "sweep": "2fee659eb28632972f8ae8db53b12c5401104ea3d2cd923d662b8435eeb6fa38",
    "spike": "c44b0f01ec7f333f0e0b5121abddeb975ee3671b17fd4a5e57c185cd4cff5891",
    "rescue": "486d1c901dcfed982f39508e70945c726ae22bfa1210c29f2a5ee841150d0b1a",
    "plane": "c931cbf5c062743ae78b82eb783c6829951c47204cc6199f0db9929b0dcad594",
    "bench": "29cea1d9618d6f362fb52593d5fc518a1fc984a00739d316f8d440a30769e709",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mesh_collider_results_are_unchanged_bit_for_bit(case: str) -> None:
    assert CASES[case]() == DIGESTS[case]


def test_first_per_group_on_ordered_pairs_picks_what_the_stable_sort_picks() -> None:
    """The run-minimum path of ``_first_per_group`` (pairs ordered by group) against the
    stable sort by (group, key) it replaces: ties (the earlier pair), -0.0 and 0.0, single
    pairs, and a NaN key (which falls back to the sort)."""
    from pbdcloth.colliders.mesh_contact import _first_per_group

    rng = np.random.default_rng(7)
    for trial in range(200):
        group = np.sort(rng.integers(0, 40, rng.integers(1, 300)))
        key = rng.integers(-3, 4, group.size).astype(float)  # many ties
        key[rng.random(group.size) < 0.1] = -0.0
        if trial % 10 == 0:
            key[rng.integers(0, group.size)] = np.nan
        order = np.lexsort((key, group))
        g = group[order]
        expected = order[np.concatenate(([True], g[1:] != g[:-1]))]
        assert np.array_equal(_first_per_group(group, key), expected)


@pytest.mark.slow
def test_the_benchmark_scene_is_unchanged_bit_for_bit() -> None:
    assert _bench() == DIGESTS["bench"]


if __name__ == "__main__":
    import pbdcloth.colliders.mesh as mesh_module

    mesh_module.sharp_edges = lambda vertices, triangles: np.zeros((0, 2), dtype=np.intp)
    for name, fn in {**CASES, "bench": _bench}.items():
        print(f'    "{name}": "{fn()}",')
