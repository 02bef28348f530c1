#!/usr/bin/env python3
"""The same drape in each fabric preset, side by side: docs/presets.png.

The demo drape (scenes.cloth.drape_scene: a 1.5 m cloth pinned at two corners falling onto a
sphere), 30 x 30 points, 48 frames, 20 substeps x 2 iterations with tethers, each preset's
density, compliances and friction (pbdcloth.presets); the last frame drawn from the same camera
with the preview's renderer (sphere, ground, pins, strain on one colour scale).

    python scripts/preset_pictures.py [--out docs/presets.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python3.11libs"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from pbdcloth import ClothSettings  # noqa: E402
from pbdcloth.presets import PRESETS, apply_preset  # noqa: E402
from pbdcloth.preview import add_strain_colorbar, point_max_strain, render_frame  # noqa: E402
from pbdcloth.scenes.cloth import drape_scene  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "presets.png"))
    ap.add_argument("--frames", type=int, default=48)
    args = ap.parse_args()
    base = ClothSettings(substeps=20, iterations=2, thickness=0.01, damping=0.2, tethers=True,
                         tether_slack=1.02)
    fig = plt.figure(figsize=(2.4 * len(PRESETS) + 0.8, 2.9))
    vmax = 0.0
    drawn = []
    for k, name in enumerate(PRESETS):
        scene = drape_scene(resolution=30, settings=apply_preset(base, name), frames=args.frames)
        solver = scene.make_solver()
        for _ in range(args.frames):
            solver.step(1 / scene.fps)
        x = solver.positions
        strain = point_max_strain(x, scene.triangles, solver.model.mesh.positions)
        vmax = max(vmax, float(strain.max()))
        drawn.append((name, scene, solver, x, strain))
        print(name, f"lowest point {x[:, 1].min():.3f} m, max strain {100 * strain.max():.2f} %",
              flush=True)
    bounds = np.array([[-0.8, 0.0, -0.8], [0.8, 1.3, 0.8]])
    width = 1.0 / (len(PRESETS) + 0.4)
    for k, (name, scene, solver, x, strain) in enumerate(drawn):
        ax = fig.add_axes((k * width, 0.02, width, 0.86), projection="3d")
        render_frame(ax, x, scene.triangles, colliders=solver.colliders, strain=strain,
                     vmax=vmax, pins=solver.pinned, bounds=bounds)
        ax.set_title(name.replace("_", " "), fontsize=9)
    add_strain_colorbar(fig, (1.0 - 0.3 * width, 0.15, 0.012, 0.65), vmax)
    fig.savefig(args.out, dpi=90, metadata={"Software": None})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
