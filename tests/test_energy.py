"""No energy gain at rest contact or in free flight (issue 16).

The cases of scripts/energy_cases.py: a 20 x 20, 1 m sheet whose rest shape is a cylinder of
radius 0.5 m (columns one rest edge apart along the circle, so the flat sheet has the same edge
lengths), started flat, (a) lying on a frictionless plane under gravity (restitution 0) and
(b) in free flight. Energy: kinetic + gravitational + XPBD bending
(:func:`pbdcloth.cloth.energy.cloth_energy`, ``mechanical``), sampled at every frame end. Before
the coarse levels of the hierarchical pass measured their rest distances over the surface,
their chords curled the flat sheet back to its rest shape in one pass whatever its bend
compliance: (a) gained 1115 % at 1 iteration, (b) 225 % at 1, 232 % at 2, 217 % at 3.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.energy import cloth_energy
from pbdcloth.cloth.hierarchy import surface_distance

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from energy_cases import CASES, cylinder, measure

if TYPE_CHECKING:
    from conftest import BackendCase

#: The bound of the issue: never more than 0.1 % of E0.
BOUND = 1e-3


def test_curved_sheet_lying_flat_on_a_frictionless_plane_gains_no_energy(
        backend: BackendCase) -> None:
    """(a) at the default 1 iteration, hierarchy on: the sheet's edges curl up off the plane;
    its energy only falls (measured: -11.7 % at frame 4 at most, numpy)."""
    r = measure(CASES["plane_curved"], backend.cloth_settings(model="xpbd"), frames=24)
    assert r.gain < BOUND, r


@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_curved_sheet_released_flat_in_free_flight_gains_no_energy(
        backend: BackendCase, iterations: int) -> None:
    """(b) hierarchy on (the default): measured +0.019 % (1 iteration, first frame), -9.6 %
    (2) and -18.5 % (3) at most, numpy. Without the border normals' extrapolation
    (:func:`~pbdcloth.cloth.hierarchy.rest_normals`) the coarse surface distances at the
    border fell up to 1e-3 short and 1 iteration gained 0.28 %; without the hierarchy -0.30 %.
    """
    s = backend.cloth_settings(model="xpbd", iterations=iterations)
    r = measure(CASES["free_curved"], s, frames=12)
    assert r.gain < BOUND, r


def test_energy_terms_match_their_closed_forms() -> None:
    """A sheet moving rigidly at v, lifted by dy, its rest shape curved: kinetic 1/2 M v^2,
    gravity M g dy, bending sum theta0^2 / (2 alpha) when flat, stretch and shear as computed
    by hand; PBD has only kinetic and gravity."""
    flat, curved, tris = cylinder(0.5, nx=6)
    s = ClothSettings(model="xpbd", backend="numpy", bend_compliance=4.0)
    solver = ClothSolver(curved, tris, settings=s, velocities=np.tile([0.3, 0.0, -0.4], (36, 1)))
    x = flat + [0.0, 0.2, 0.0]
    e = cloth_energy(solver.model, x, solver.velocities, s)
    mass = solver.model.mass.sum()
    assert e.kinetic == pytest.approx(0.5 * mass * 0.25, rel=1e-12)
    assert e.gravity == pytest.approx(mass * 9.81 * 0.2, rel=1e-12)
    theta0 = solver.model.bend.rest_angle
    assert e.bend == pytest.approx((theta0 ** 2).sum() / 8.0, rel=1e-9)
    st = solver.model.stretch
    c = np.linalg.norm(x[st.i] - x[st.j], axis=1) - st.rest
    assert e.stretch == pytest.approx((c ** 2).sum() / (2 * s.stretch_compliance), rel=1e-9)
    assert e.mechanical == e.kinetic + e.gravity + e.bend
    pbd = cloth_energy(solver.model, x, solver.velocities, s.replace(model="pbd"))
    assert (pbd.bend, pbd.stretch, pbd.shear) == (0.0, 0.0, 0.0)


def test_surface_distance_is_the_arc_on_a_cylinder_and_the_chord_on_a_plane() -> None:
    """Points on a cylinder of radius 0.7 about z with their radial normals: the estimate is
    the geodesic sqrt((R dphi)^2 + dz^2) to rounding; on a plane it is |c| bit for bit."""
    rng = np.random.default_rng(5)
    phi, z = rng.uniform(-1.2, 1.2, 40), rng.uniform(-0.5, 0.5, 40)
    r = 0.7
    pos = np.stack([r * np.sin(phi), r * np.cos(phi), z], 1)
    normals = np.stack([np.sin(phi), np.cos(phi), np.zeros_like(phi)], 1)
    i, j = np.arange(20), np.arange(20, 40)
    exact = np.hypot(r * (phi[j] - phi[i]), z[j] - z[i])
    assert np.abs(surface_distance(pos, normals, i, j) - exact).max() < 1e-12
    chord = np.linalg.norm(pos[j] - pos[i], axis=1)
    assert (exact > chord * (1 + 1e-4)).sum() > 10
    plane = pos * [1.0, 0.0, 1.0]
    up = np.tile([0.0, 1.0, 0.0], (40, 1))
    assert np.array_equal(surface_distance(plane, up, i, j),
                          np.linalg.norm(plane[j] - plane[i], axis=1))
    assert np.array_equal(surface_distance(pos, None, i, j), chord)


def test_the_hierarchy_of_a_flat_panel_keeps_its_chords() -> None:
    """A flat grid's coarse rest distances are its chords, bit for bit (every flat scene's
    results are what they were); a curved one's exceed them."""
    flat, curved, tris = cylinder(0.5)
    for shape, longer in ((flat, False), (curved, True)):
        model = ClothSolver(shape, tris, settings=ClothSettings(backend="numpy")).model
        for level in model.hierarchy.levels:
            chord = np.linalg.norm(shape[level.i] - shape[level.j], axis=1)
            if longer:
                assert (level.rest >= chord).all() and (level.rest > chord).any()
            else:
                assert np.array_equal(level.rest, chord)


def test_border_normals_are_extrapolated_to_the_surface_normal() -> None:
    """The cylinder sheet (R 0.5 m): area-weighted normals at its two curved-off borders lean
    inwards by half a column's angle (3.0 degrees); extrapolated, they are radial to 0.01
    degrees (the corners with no edge inwards keep theirs). Inside nothing changes; a flat
    panel's normals are returned bit for bit."""
    from pbdcloth.cloth.hierarchy import rest_normals
    from pbdcloth.cloth.mesh import vertex_normals

    flat, curved, tris = cylinder(0.5)
    model = ClothSolver(curved, tris, settings=ClothSettings(backend="numpy")).model
    top = model.topology
    raw = vertex_normals(curved, tris)
    fixed = rest_normals(curved, raw, top.edges, top.boundary_edges)
    radial = curved - [0.5, 0.5, 0.0]
    radial[:, 2] = 0.0
    radial /= np.linalg.norm(radial, axis=1, keepdims=True)
    side = np.isclose(flat[:, 0], 0.0) | np.isclose(flat[:, 0], 1.0)
    side &= ~(np.isclose(flat[:, 2], 0.0) | np.isclose(flat[:, 2], 1.0))

    def worst(n: np.ndarray) -> float:
        return float(np.degrees(np.arccos(np.clip(np.abs((n * radial).sum(1)), 0, 1)))[side].max())

    assert worst(raw) > 2.9 and worst(fixed) < 0.01
    inside = ~np.isin(np.arange(len(flat)), top.boundary_edges)
    assert np.array_equal(fixed[inside], raw[inside])
    flat_model = ClothSolver(flat, tris, settings=ClothSettings(backend="numpy")).model
    up = vertex_normals(flat, tris)
    assert np.array_equal(rest_normals(flat, up, flat_model.topology.edges,
                                       flat_model.topology.boundary_edges), up)
