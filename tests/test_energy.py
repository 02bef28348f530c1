"""The energy of a cloth state against its closed forms (issue 16;
:mod:`pbdcloth.cloth.energy`, the measure of scripts/energy_cases.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.energy import cloth_energy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from energy_cases import cylinder


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
