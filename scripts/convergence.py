#!/usr/bin/env python3
"""What XPBD's compliance guarantees, measured: settled equilibria against substeps 5 ... 160.

Three static problems, each settled with heavy velocity damping (which leaves a static
equilibrium unbiased, settings.damping) under XPBD at one iteration per substep:

* one spring: a particle of mass m under one distance constraint of compliance alpha. The
  exact static extension is m g alpha for ANY substep count (the XPBD multiplier of a single
  constraint converges to the force, Macklin et al. 2016, section 4).
* two springs: the free corner of a triangle whose other two corners are pinned, two edges of
  compliance alpha. The exact equilibrium solves 2 T y / d = m g, T = (d - L) / alpha,
  d = sqrt(a^2 + y^2) (found by bisection). One Gauss-Seidel pass per substep does not reach the
  coupled solution: the error falls as h^2 (h the substep).
* cloth: a 30 x 30 sheet, 1 m square, pinned at two corners, default compliances: its settled
  sag (the lowest point below the pins) against the 160-substep value.

All three run with the strain limit off (``strain_limit=0``), and the cloth with the plain solve
(``hierarchy=False``): they measure what the compliance alone gives.

    python scripts/convergence.py            # prints the Markdown table
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python3.11libs"))

import numpy as np  # noqa: E402
from pbdcloth import ClothSettings, ClothSolver  # noqa: E402
from pbdcloth.cloth.mesh import grid  # noqa: E402

SUBSTEPS = (5, 10, 20, 40, 80, 160)
G = 9.81
A, B = 0.3, 0.4          # half base and height of the triangle [m]
ALPHA = 1e-4             # compliance of the two springs [m/N]
DENSITY = 0.15           # [kg/m^2]


@dataclasses.dataclass(frozen=True)
class Row:
    substeps: int
    triangle_y: float
    """settled depth of the free corner below its rest position [m]"""
    triangle_exact: float
    triangle_rel: float
    """|measured - exact| / exact"""
    cloth_sag: float | None
    """settled sag of the 30 x 30 sheet [m]"""


def _settle(solver: ClothSolver, frames: int) -> None:
    for _ in range(frames):
        solver.step(1 / 24)


def triangle_solver(substeps: int, **changes: object) -> ClothSolver:
    pos = np.array([[-A, 0.0, 0.0], [A, 0.0, 0.0], [0.0, -B, 0.0]])
    s = ClothSettings(**{"backend": "numpy", "model": "xpbd", "substeps": substeps, "iterations": 1,
                         "stretch_compliance": ALPHA, "density": DENSITY, "damping": 30.0,
                         "strain_limit": 0.0, **changes})  # type: ignore[arg-type]
    return ClothSolver(pos, [[0, 1, 2]], pinned=[0, 1], settings=s)


def triangle_exact(mass: float) -> float:
    """Depth below the rest position of the exact nonlinear equilibrium [m] (bisection)."""
    length = float(np.hypot(A, B))
    lo, hi = B, B + 10.0
    for _ in range(200):
        y = 0.5 * (lo + hi)
        d = float(np.hypot(A, y))
        if 2.0 * (d - length) / ALPHA * y / d > mass * G:
            hi = y
        else:
            lo = y
    return 0.5 * (lo + hi) - B


def triangle_depth(substeps: int, frames: int = 48, **changes: object) -> tuple[float, float]:
    """(settled depth, exact depth) of the two-spring triangle [m]."""
    solver = triangle_solver(substeps, **changes)
    _settle(solver, frames)
    return float(-solver.positions[2, 1] - B), triangle_exact(float(solver.model.mass[2]))


def cloth_sag(substeps: int, frames: int = 72, n: int = 30) -> float:
    pos, tris = grid(n, n, 1.0, 1.0, plane="xy")
    s = ClothSettings(backend="numpy", model="xpbd", substeps=substeps, iterations=1,
                      damping=8.0, strain_limit=0.0, hierarchy=False)
    solver = ClothSolver(pos, tris, pinned=[0, n - 1], settings=s)
    _settle(solver, frames)
    return float(-solver.positions[:, 1].min())


def measure(cloth: bool = True) -> list[Row]:
    rows = []
    for k in SUBSTEPS:
        y, exact = triangle_depth(k)
        rows.append(Row(k, y, exact, abs(y - exact) / abs(exact),
                        cloth_sag(k) if cloth else None))
    return rows


def table(rows: list[Row]) -> str:
    ref = rows[-1].cloth_sag if rows else None
    lines = [("| substeps | two springs: depth [um] | exact [um] | rel. error | "
              "30 x 30 cloth sag [m] | vs 160 substeps |"),
             "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        sag = "" if r.cloth_sag is None else f"{r.cloth_sag:.4f}"
        dev = "" if r.cloth_sag is None or ref is None else f"{(r.cloth_sag - ref) / ref:+.2%}"
        lines.append(f"| {r.substeps} | {r.triangle_y * 1e6:.2f} | {r.triangle_exact * 1e6:.2f} "
                     f"| {r.triangle_rel:.2e} | {sag} | {dev} |")
    return "\n".join(lines)


def main() -> None:
    print(table(measure()))


if __name__ == "__main__":
    main()
