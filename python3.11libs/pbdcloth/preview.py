"""Pictures of a run: a contact sheet of frames drawn with matplotlib."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .arrays import F
from .atomic import atomic_path
from .colliders.base import Collider
from .colliders.shapes import Capsule, Sphere

if TYPE_CHECKING:
    from .scenes.body import Body


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


def save_figure(fig: Any, path: str | Path) -> Path:
    """Lay out ``fig``, write it as a PNG atomically (temporary file, then rename), close it."""
    plt = _require_matplotlib()
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
    return save_figure(fig, path)


# --- caches: strain colours, movies -----------------------------------------------------------
def point_strain_from_rest(positions: NDArray[np.float64], triangles: NDArray[np.int64],
                           rest: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-point mean |L / L0 - 1| over the point's edges, L0 from ``rest``, shape (N,)."""
    from .cloth.topology import edge_use

    edges = edge_use(np.asarray(triangles, dtype=np.int64))[0]
    i, j = edges[:, 0], edges[:, 1]
    rest_len = np.linalg.norm(rest[i] - rest[j], axis=1)
    length = np.linalg.norm(positions[i] - positions[j], axis=1)
    s = np.abs(length / np.where(rest_len > 0.0, rest_len, 1.0) - 1.0)
    n = positions.shape[0]
    total = np.bincount(edges.reshape(-1), weights=np.repeat(s, 2), minlength=n)
    count = np.bincount(edges.reshape(-1), minlength=n)
    return total / np.maximum(count, 1)


def cache_strain(frames: Sequence[NDArray[np.float64]], triangles: NDArray[np.int64],
                 stored: Sequence[NDArray[np.float64]] | None = None
                 ) -> list[NDArray[np.float64]]:
    """Strain per point and frame: the cache's own (``.geo``/USD ``strain``) when it has one,
    else measured against the first frame (a pbdcloth cache starts at rest)."""
    if stored is not None and len(stored) == len(frames):
        return [np.asarray(s, dtype=np.float64) for s in stored]
    return [point_strain_from_rest(f, triangles, frames[0]) for f in frames]


def render_frames(
    frames: Sequence[NDArray[np.float64]],
    triangles: NDArray[np.int64],
    colors: Sequence[NDArray[np.float64]] | None = None,
    frame_numbers: Sequence[int] | None = None,
    size: int = 480,
    vmax: float | None = None,
    title: str = "",
) -> list[NDArray[np.uint8]]:
    """RGB images (size, size, 3) of each frame, same camera for all, coloured by ``colors``."""
    plt = _require_matplotlib()
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    allpts = np.concatenate(list(frames))
    lo, hi = allpts.min(axis=0), allpts.max(axis=0)
    centre, half = ((lo + hi) / 2)[[0, 2, 1]], max(float((hi - lo).max()) / 2, 1e-6)
    if colors is not None and vmax is None:
        vmax = max(float(np.max(c)) for c in colors)
    scale = vmax if vmax else 1.0
    cmap = plt.get_cmap("viridis")
    numbers = list(frame_numbers) if frame_numbers is not None else list(range(len(frames)))
    dpi = 100
    fig = plt.figure(figsize=(size / dpi, size / dpi), dpi=dpi)
    ax = fig.add_subplot(1, 1, 1, projection="3d")
    images: list[NDArray[np.uint8]] = []
    try:
        for k, pts in enumerate(frames):
            ax.cla()
            polys = pts[:, [0, 2, 1]][triangles]
            face = (cmap(np.clip(colors[k][triangles].mean(axis=1) / scale, 0.0, 1.0))
                    if colors is not None else (0.55, 0.65, 0.85, 1.0))
            ax.add_collection3d(Poly3DCollection(polys, facecolors=face,
                                                 edgecolors=(0, 0, 0, 0.08), linewidths=0.2))
            for axis, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre):
                axis(c - half, c + half)
            ax.view_init(elev=20, azim=-60)
            ax.set_axis_off()
            label = f"frame {numbers[k]}"
            if colors is not None:
                label += f"   max strain {100 * float(np.max(colors[k])):.2f} %"
            ax.set_title(f"{title}\n{label}" if title else label, fontsize=9)
            fig.canvas.draw()
            rgba = np.asarray(fig.canvas.buffer_rgba())
            images.append(np.ascontiguousarray(rgba[..., :3]))
    finally:
        plt.close(fig)
    return images


def write_movie(path: str | Path, images: Sequence[NDArray[np.uint8]], fps: float) -> Path:
    """An animated GIF (Pillow) or MP4 (imageio-ffmpeg) of ``images``, written atomically."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise ValueError(f"movie must be a .gif or .mp4 file, got {target.name!r}")
    if not images:
        raise ValueError("no frames to write")
    try:
        import imageio.v3 as iio
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("movies need imageio: pip install 'pbdcloth[cli]'") from exc
    tmp = atomic_path(target)
    try:
        if suffix == ".gif":
            iio.imwrite(tmp, np.stack(images), extension=".gif",
                        duration=int(round(1000.0 / fps)), loop=0)
        else:
            try:
                import imageio_ffmpeg  # noqa: F401
            except ImportError:
                raise RuntimeError("MP4 needs imageio-ffmpeg (pip install imageio-ffmpeg); "
                                   "or write a .gif") from None
            iio.imwrite(tmp, np.stack(images), extension=".mp4", fps=fps, codec="libx264",
                        macro_block_size=16)
        tmp.replace(target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


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
                  parents: Sequence[F], body: "Body", title: str = "") -> Path:
    """Side and front views of the chains in the body's frame, and their tips' world paths.

    In the body's (chest) frame the chains are drawn at eight evenly spaced frames with their
    tips' paths; the body is drawn as its capsules at rest. The third panel shows the tips and
    the chest from above, in world space. Written atomically as PNG. Needs matplotlib.
    """
    from .scenes.body import Body

    plt = _require_matplotlib()
    count = len(parents)
    inv = [(m[:3, :3], m[:3, 3]) for m in parents]
    local = [[(pos - t) @ r for pos, (r, t) in zip(frames, inv)] for frames in positions]
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
        n = np.array([-d[1], d[0]]) / max(float(np.linalg.norm(d)), 1e-12) * radius
        for s in (1.0, -1.0):
            ax.plot([pts[0][0] + s * n[0], pts[1][0] + s * n[0]],
                    [pts[0][1] + s * n[1], pts[1][1] + s * n[1]], color="0.75", lw=0.6)
