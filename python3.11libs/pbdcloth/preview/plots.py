"""Pictures that are not frames of the cloth: per-frame curves of a run, spring-chain paths."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arrays import F
from ..colliders.base import Collider
from ..colliders.shapes import Capsule, Sphere
from ..portable import norm, rotate_t
from .sheet import _require_matplotlib, save_figure

if TYPE_CHECKING:
    from ..scenes.body import Body


# --- per-frame curves from a run's log -------------------------------------------------------
#: (log key, axis label, scale) of the curves :func:`plot_log` draws, when the log has them.
PLOT_PANELS: tuple[tuple[tuple[tuple[str, str, float], ...], str], ...] = (
    ((("max_strain", "max", 100.0), ("mean_strain", "mean", 100.0)), "strain [%]"),
    ((("kinetic_energy", "kinetic energy", 1.0),), "kinetic energy [J]"),
    ((("contacts", "collider contacts", 1.0),
      ("self_collision_pairs", "self-collision pairs", 1.0)), "count"),
    ((("ms", "ms per frame", 1.0),), "time per frame [ms]"),
)


def plot_log(records: Sequence[dict[str, float]], path: str | Path, title: str = "") -> Path:
    """Curves per frame from ``log.jsonl`` records into a PNG (atomically): max and mean strain,
    kinetic energy, contacts and self-collision pairs, milliseconds per frame."""
    if not records:
        raise ValueError("the log has no frames to plot")
    plt = _require_matplotlib()
    frames = np.array([r["frame"] for r in records], dtype=np.float64)
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), dpi=100, sharex=True)
    for ax, (curves, ylabel) in zip(axes.ravel(), PLOT_PANELS):
        drawn: list[str] = []
        for key, label, scale in curves:
            if not any(r.get(key) is not None for r in records):
                continue
            y = np.array([np.nan if r.get(key) is None else float(r[key]) * scale
                          for r in records])
            ax.plot(frames, y, label=label, linewidth=1.2, marker="." if len(y) < 50 else None)
            drawn.append(label)
        ax.set_ylabel(ylabel if len(drawn) != 1 or ylabel != "count" else drawn[0])
        ax.grid(True, alpha=0.3)
        if len(drawn) > 1:
            ax.legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("frame")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


# --- spring chains ---------------------------------------------------------------------------
def paths_picture(path: str | Path, names: Sequence[str], positions: Sequence[Sequence[F]],
                  parents: Sequence[F], body: Body, title: str = "") -> Path:
    """Side and front views of the chains in the body's frame, and their tips' world paths.

    In the body's (chest) frame the chains are drawn at eight evenly spaced frames with their
    tips' paths; the body is drawn as its capsules at rest. The third panel shows the tips and
    the chest from above, in world space. Written atomically as PNG. Needs matplotlib.
    """
    from ..scenes.body import Body

    plt = _require_matplotlib()
    count = len(parents)
    inv = [(m[:3, :3], m[:3, 3]) for m in parents]
    local = [[rotate_t(r, pos - t) for pos, (r, t) in zip(frames, inv)] for frames in positions]
    rest_body = Body(body.height)
    chest = rest_body.joints["chest"]
    colors = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.4), dpi=100)
    picks = np.unique(np.linspace(0, count - 1, 8).round().astype(int))
    for ax, (u, v), label in ((axes[0], (2, 1), "side (z forward, y up)"),
                              (axes[1], (0, 1), "front (x left, y up)")):
        for collider in rest_body.colliders:
            _draw_collider(ax, collider, chest, u, v)
        for k, name in enumerate(names):
            c = colors(k)
            for n, i in enumerate(picks):
                pts = local[k][i]
                ax.plot(pts[:, u], pts[:, v], "-o", color=c, ms=2, lw=1.2,
                        alpha=0.25 + 0.75 * n / max(len(picks) - 1, 1),
                        label=name if n == len(picks) - 1 else None)
            tip = np.array([f[-1] for f in local[k]])
            ax.plot(tip[:, u], tip[:, v], "-", color=c, lw=0.6, alpha=0.8)
        ax.set_aspect("equal")
        ax.set_title(f"in the body's frame: {label}", fontsize=10)
        ax.legend(fontsize=8, loc="lower left")
    ax = axes[2]
    trail = np.array([m[:3, 3] for m in parents])
    ax.plot(trail[:, 0], trail[:, 2], "-", color="0.4", lw=1.0, label="chest")
    for k, name in enumerate(names):
        tip = np.array([f[-1] for f in positions[k]])
        ax.plot(tip[:, 0], tip[:, 2], "-", color=colors(k), lw=1.0, label=f"{name} tip")
    ax.set_aspect("equal")
    ax.set_title("world, from above (x, z)", fontsize=10)
    ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    return save_figure(fig, path)


def _draw_collider(ax: Any, collider: Collider, origin: F, u: int, v: int) -> None:
    """Outline of a sphere or capsule projected on axes (u, v), relative to ``origin``."""
    angle = np.linspace(0.0, 2.0 * np.pi, 40)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    if isinstance(collider, Sphere):
        radius, ends = collider.radius, [collider.center]
    elif isinstance(collider, Capsule):
        radius, ends = collider.radius, [collider.a, collider.b]
    else:
        return
    pts = [np.asarray(e)[[u, v]] - origin[[u, v]] for e in ends]
    for p in pts:
        ax.plot(p[0] + radius * ring[:, 0], p[1] + radius * ring[:, 1], color="0.75", lw=0.6)
    if len(pts) == 2:
        d = pts[1] - pts[0]
        n = np.array([-d[1], d[0]]) / max(norm(d), 1e-12) * radius
        for s in (1.0, -1.0):
            ax.plot([pts[0][0] + s * n[0], pts[1][0] + s * n[0]],
                    [pts[0][1] + s * n[1], pts[1][1] + s * n[1]], color="0.75", lw=0.6)
