#!/usr/bin/env python3
"""Energy at rest contact and in free flight: the largest gain of a cloth's mechanical energy
over E0, for the cases of issue 16, at iterations 1 / 3 / 10, PBD and XPBD, hierarchy on / off.

    python scripts/energy_cases.py [--frames 24] [--cases plane_curved,...] [--backend numpy]

Energy (:func:`pbdcloth.cloth.energy.cloth_energy`): kinetic + gravitational (from the plane)
+ XPBD bending sum C^2 / (2 alpha); stretch and shear, near-inextensible at the defaults, act as
hard constraints, and their C^2 / (2 alpha) (the column ``st+sh / E0``, the largest over the
frames) measures a Gauss-Seidel residual, not energy the cloth can give back. PBD has no
compliance: its rows count kinetic + gravity only (its bending's release shows as a gain), and
free flight, where that is 0 at the start, has no PBD rows.
The gain is sampled at every frame end: max over frames of (E - E0) / E0.

The sheets: 20 x 20 points, 1 m x 1 m, default settings otherwise (10 substeps, 24 fps).
Curved shapes are cylinders of radius R about z whose columns are one rest edge apart along
the circle (the chord equals the flat spacing), so the flat and the curved shape have the same
edge lengths and the same triangle diagonals (only shear pairs across two columns differ).

Cases:
    plane_curved   curved rest (R 0.5 m) lying flat on a frictionless plane (restitution 0)
    plane_arch     flat rest standing as an arch (R 1 m) on the frictionless plane
    plane_flat     flat rest lying flat on the plane (exactly at rest)
    free_curved    curved rest (R 0.5 m) released flat, no gravity, no colliders
    free_flat      flat rest released curved (R 1 m), no gravity, no colliders
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

from pbdcloth import ClothSettings, ClothSolver, Plane
from pbdcloth.cloth.energy import Energy, cloth_energy
from pbdcloth.cloth.mesh import grid

FPS = 24
SIZE, POINTS = 1.0, 20


def cylinder(radius: float, nx: int = POINTS, size: float = SIZE
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat, curved, triangles): the grid flat in xz and bent about z on a cylinder of
    ``radius`` [m] through it, columns one spacing apart along the circle (equal chords)."""
    flat, tris = grid(nx, nx, size, size)
    dx = size / (nx - 1)
    step = 2.0 * np.arcsin(dx / (2.0 * radius))
    phi = (np.rint(flat[:, 0] / dx) - (nx - 1) / 2.0) * step
    curved = flat.copy()
    curved[:, 0] = size / 2.0 + radius * np.sin(phi)
    curved[:, 1] = radius * (1.0 - np.cos(phi))
    return flat, curved, tris


@dataclass(frozen=True)
class Case:
    name: str
    rest: str  # "flat" or "curved"
    start: str
    radius: float
    plane: bool

    def solver(self, settings: ClothSettings) -> ClothSolver:
        """The case's solver under ``settings`` (gravity off for free flight, friction and
        restitution 0 on the plane)."""
        flat, curved, tris = cylinder(self.radius)
        shapes = {"flat": flat, "curved": curved}
        lift = np.array([0.0, settings.thickness, 0.0]) if self.plane else np.zeros(3)
        if self.plane:
            settings = settings.replace(friction=0.0, static_friction=0.0, restitution=0.0)
            colliders = [Plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0))]
        else:
            settings = settings.replace(gravity=(0.0, 0.0, 0.0))
            colliders = []
        solver = ClothSolver(shapes[self.rest] + lift, tris, settings=settings,
                             colliders=colliders)
        solver.positions = shapes[self.start] + lift
        return solver


CASES = {c.name: c for c in (
    Case("plane_curved", "curved", "flat", 0.5, True),
    Case("plane_arch", "flat", "curved", 1.0, True),
    Case("plane_flat", "flat", "flat", 1.0, True),
    Case("free_curved", "curved", "flat", 0.5, False),
    Case("free_flat", "flat", "curved", 1.0, False),
)}


@dataclass(frozen=True)
class Result:
    e0: float
    gain: float
    """max over frame ends of (E - E0) / E0."""
    frame: int
    residual: float
    """max over frame ends of (stretch + shear potential) / E0 (XPBD)."""


def measure(case: Case, settings: ClothSettings, frames: int) -> Result:
    """Step ``case`` ``frames`` frames; the largest gain of the mechanical energy."""
    solver = case.solver(settings)

    def energy() -> Energy:
        return cloth_energy(solver.model, solver.positions, solver.velocities, solver.settings)

    e0 = energy().mechanical
    gain, at, residual = -np.inf, 0, 0.0
    for frame in range(1, frames + 1):
        solver.step(1.0 / FPS)
        e = energy()
        g = (e.mechanical - e0) / e0
        if g > gain:
            gain, at = g, frame
        residual = max(residual, (e.stretch + e.shear) / e0)
    return Result(e0, float(gain), at, residual)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--iterations", default="1,3,10")
    ap.add_argument("--models", default="pbd,xpbd")
    ap.add_argument("--backend", default="numpy")
    args = ap.parse_args()
    its = [int(k) for k in args.iterations.split(",")]
    print("| case | model | hierarchy | E0 [J] | " + " | ".join(f"gain {k} it" for k in its)
          + " | st+sh / E0 (xpbd, 1 it) |")
    print("|---|---|---|---:|" + "---:|" * len(its) + "---:|")
    for name in args.cases.split(","):
        case = CASES[name]
        for model in args.models.split(","):
            if model == "pbd" and not case.plane:
                continue  # no gravity and no compliance: PBD's E0 is its kinetic energy, 0
            for hierarchy in (True, False):
                cells, e0, residual = [], 0.0, ""
                for it in its:
                    s = ClothSettings(model=model, iterations=it, hierarchy=hierarchy,
                                      backend=args.backend)
                    r = measure(case, s, args.frames)
                    e0 = r.e0
                    cells.append(f"{100 * r.gain:+.3f} % ({r.frame})")
                    if it == its[0] and model == "xpbd":
                        residual = f"{r.residual:.3g}"
                print(f"| {name} | {model} | {'on' if hierarchy else 'off'} | {e0:.4g} | "
                      + " | ".join(cells) + f" | {residual} |", flush=True)


if __name__ == "__main__":
    main()
