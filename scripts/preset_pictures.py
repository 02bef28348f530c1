#!/usr/bin/env python3
"""The same drape in each fabric preset, side by side: docs/presets.png.

The demo drape (scenes.cloth.drape_scene: a 1.5 m cloth pinned at two corners falling onto a
sphere), 30 x 30 points, 48 frames, 20 substeps x 2 iterations with tethers, each preset's
density, compliances and friction (pbdcloth.presets); the last frame drawn from the same camera.

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
from pbdcloth import ClothSettings  # noqa: E402
from pbdcloth.presets import PRESETS, apply_preset  # noqa: E402
from pbdcloth.scenes.cloth import drape_scene  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "presets.png"))
    ap.add_argument("--frames", type=int, default=48)
    args = ap.parse_args()
    base = ClothSettings(substeps=20, iterations=2, thickness=0.01, damping=0.2, tethers=True,
                         tether_slack=1.02)
    fig = plt.figure(figsize=(12, 2.6))
    for k, name in enumerate(PRESETS):
        scene = drape_scene(resolution=30, settings=apply_preset(base, name), frames=args.frames)
        solver = scene.make_solver()
        for _ in range(args.frames):
            solver.step(1 / scene.fps)
        x = solver.positions
        ax = fig.add_subplot(1, len(PRESETS), k + 1, projection="3d")
        ax.plot_trisurf(x[:, 0], x[:, 2], x[:, 1], triangles=scene.triangles, color="tab:blue",
                        edgecolor="none", shade=True)
        ax.set_xlim(-0.8, 0.8)
        ax.set_ylim(-0.8, 0.8)
        ax.set_zlim(0.0, 1.3)
        ax.view_init(elev=15, azim=-60)
        ax.set_axis_off()
        ax.set_title(name.replace("_", " "), fontsize=9)
        print(name, f"lowest point {x[:, 1].min():.3f} m", flush=True)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90, metadata={"Software": None})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
