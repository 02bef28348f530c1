"""Pictures of a run: a contact sheet of frames drawn with matplotlib."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from .io.atomic import atomic_path


def _require_matplotlib():  # type: ignore[no-untyped-def]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "pictures need matplotlib: pip install 'pbdcloth[cli]'"
        ) from exc
    return plt


def _shade(polys: NDArray[np.float64]) -> NDArray[np.float64]:
    """Two-sided Lambert shading in [0.35, 1] of triangles (T, 3, 3) lit from the viewer's side."""
    n = np.cross(polys[:, 1] - polys[:, 0], polys[:, 2] - polys[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-30)[:, None]
    light = np.array([-0.4, -0.6, 0.7])
    light /= np.linalg.norm(light)
    return 0.35 + 0.65 * np.abs(n @ light)


def contact_sheet(
    path: str | Path,
    frames: Sequence[NDArray[np.float64]],
    triangles: NDArray[np.int64],
    frame_numbers: Sequence[int] | None = None,
    colors: Sequence[NDArray[np.float64]] | None = None,
    panels: int = 8,
    title: str = "",
    spheres: Sequence[tuple[NDArray[np.float64], float]] = (),
    follow: bool = False,
) -> Path:
    """Draw up to ``panels`` evenly spaced frames side by side, in 3D, into a PNG (atomically).

    ``colors`` (optional, one (N,) array per frame) colours the triangles by the mean of their
    corners' values (e.g. strain). ``spheres`` are drawn as wireframes for context. With
    ``follow`` each panel is centred on its own frame (for cloth that travels, like the cloak).
    """
    plt = _require_matplotlib()
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    count = len(frames)
    picks = np.unique(np.linspace(0, count - 1, min(panels, count)).round().astype(int))
    numbers = list(frame_numbers) if frame_numbers is not None else list(range(count))
    allpts = np.concatenate([frames[i] for i in picks])
    lo, hi = allpts.min(axis=0), allpts.max(axis=0)
    centre, half = (lo + hi) / 2, max(float((hi - lo).max()) / 2, 1e-6)
    cols = min(4, len(picks))
    rows = int(np.ceil(len(picks) / cols))
    fig = plt.figure(figsize=(3.6 * cols, 3.6 * rows), dpi=110)
    vmax = max((float(c.max()) for c in colors), default=1.0) if colors else 1.0
    cmap = plt.get_cmap("viridis")
    for k, i in enumerate(picks):
        ax = fig.add_subplot(rows, cols, k + 1, projection="3d")
        # Houdini is Y-up: show (x, z, y) so the cloth hangs down the screen.
        pts = frames[i][:, [0, 2, 1]]
        polys = pts[triangles]
        if colors is not None:
            value = colors[i][triangles].mean(axis=1) / (vmax if vmax > 0 else 1.0)
            face = cmap(value)
        else:
            face = np.tile([0.55, 0.65, 0.85, 1.0], (len(triangles), 1))
        face[:, :3] *= _shade(polys)[:, None]
        coll = Poly3DCollection(polys, facecolors=face, edgecolors=(0, 0, 0, 0.08),
                                linewidths=0.2)
        ax.add_collection3d(coll)
        for centre_s, radius in spheres:
            u, v = np.mgrid[0:2 * np.pi:16j, 0:np.pi:9j]
            ax.plot_wireframe(centre_s[0] + radius * np.cos(u) * np.sin(v),
                              centre_s[2] + radius * np.sin(u) * np.sin(v),
                              centre_s[1] + radius * np.cos(v), color="0.6", linewidth=0.3)
        if follow:
            lo_i, hi_i = frames[i].min(axis=0), frames[i].max(axis=0)
            c = ((lo_i + hi_i) / 2)[[0, 2, 1]]
        else:
            c = centre[[0, 2, 1]]
        ax.set_xlim(c[0] - half, c[0] + half)
        ax.set_ylim(c[1] - half, c[1] + half)
        ax.set_zlim(c[2] - half, c[2] + half)
        ax.view_init(elev=20, azim=-60)
        ax.set_axis_off()
        ax.set_title(f"frame {numbers[i]}", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    target = Path(path)
    tmp = atomic_path(target)
    try:
        fig.savefig(tmp, format="png")
        tmp.replace(target)
    finally:
        plt.close(fig)
        if tmp.exists():
            tmp.unlink()
    return target
