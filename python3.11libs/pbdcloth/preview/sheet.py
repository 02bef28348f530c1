"""Pictures of a run's frames: contact sheets (PNG) and movies (GIF, MP4), strain as colour.

Every frame is drawn by :func:`pbdcloth.preview.render.render_frame` with the colliders at
their pose in that frame. Strain, everywhere in pbdcloth (run summaries, ``log.jsonl``, these
pictures, :meth:`pbdcloth.ClothSolver.max_strain`), is the max edge strain relative to rest: the
largest ``L / L0 - 1`` over the cloth's mesh edges, in %. The colour of a point is the largest
strain of its edges (:func:`~pbdcloth.preview.render.point_max_strain`), so the top of a frame's
colours is that frame's max strain.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arrays import F
from ..atomic import atomic_path
from .render import DEFAULT_VIEW, add_strain_colorbar, render_frame, scene_bounds
from .shapes import Shape


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


def save_figure(fig: Any, path: str | Path, layout: bool = True) -> Path:
    """Lay out ``fig`` (unless ``layout`` is False), write it as a PNG atomically (temporary
    file, then rename), close it."""
    plt = _require_matplotlib()
    if layout:
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


FrameShapes = Sequence[Sequence[Shape]]
"""Collider shapes per frame (:func:`pbdcloth.preview.shapes.shapes_of` of each frame)."""

FrameTriangles = NDArray[np.int64] | Sequence[NDArray[np.int64]]
"""One (T, 3) triangle array for every frame, or one per frame (a cloth that tears)."""


def triangles_at(triangles: FrameTriangles, k: int) -> NDArray[np.int64]:
    """The triangles of frame ``k``: ``triangles`` itself, or its ``k``-th array when it holds
    one (T, 3) array per frame."""
    if isinstance(triangles, np.ndarray):
        return triangles
    if len(triangles) and isinstance(triangles[0], np.ndarray) and triangles[0].ndim == 2:
        return np.asarray(triangles[k], dtype=np.int64)
    return np.asarray(triangles, dtype=np.int64)


def _framing(frames: Sequence[F], shapes: FrameShapes | None, picks: Sequence[int],
             follow: bool) -> list[F]:
    """The camera box (2, 3) of each picked frame: all picked frames' cloth and colliders
    together, or with ``follow`` each frame's own, at the size of the largest."""
    per = [scene_bounds([frames[i]], [shapes[i]] if shapes else []) for i in picks]
    if not follow:
        both = scene_bounds([frames[i] for i in picks], [shapes[i] for i in picks] if shapes
                            else [])
        return [both] * len(picks)
    half = max(float((b[1] - b[0]).max()) for b in per) / 2.0
    return [np.stack([(b[0] + b[1]) / 2 - half, (b[0] + b[1]) / 2 + half]) for b in per]


def contact_sheet(path: str | Path, frames: Sequence[F], triangles: FrameTriangles,
                  **options: Any) -> Path:
    """:func:`sheet_figure` written to ``path`` as a PNG (atomically)."""
    return save_figure(sheet_figure(frames, triangles, **options), path, layout=False)


def sheet_figure(
    frames: Sequence[F],
    triangles: FrameTriangles,
    frame_numbers: Sequence[int] | None = None,
    strain: Sequence[F] | None = None,
    colliders: FrameShapes | None = None,
    pins: NDArray[np.int64] | None = None,
    panels: int = 8,
    title: str = "",
    follow: bool = False,
    view: str | tuple[float, float] = DEFAULT_VIEW,
    vmax: float | None = None,
) -> Path:
    """A figure of up to ``panels`` evenly spaced frames side by side, in 3D, each drawn by
    :func:`~.render.render_frame` in its own axes (titled with its frame and max strain).

    Args:
        frames: cloth positions per frame [m].
        strain: per-point strain per frame (fractions; e.g. :func:`frame_strain`), coloured on
            one scale 0..``vmax`` (default the largest) with a colour bar in %.
        colliders: the collider shapes of each frame, drawn at that frame's pose.
        pins: pinned point indices, marked.
        follow: centre each panel on its own frame (cloth and colliders; for scenes that
            travel, like the cloak); otherwise one camera frames every panel's content.
        view: ``front``, ``side``, ``top`` or ``"AZ,EL"`` (:func:`~.render.parse_view`).
    """
    plt = _require_matplotlib()
    count = len(frames)
    picks = [int(i) for i in np.unique(np.linspace(0, count - 1, min(panels, count))
                                       .round().astype(int))]
    numbers = list(frame_numbers) if frame_numbers is not None else list(range(count))
    if strain is not None and vmax is None:
        vmax = max(float(np.max(strain[i])) for i in range(count))
    boxes = _framing(frames, colliders, picks, follow)
    cols = min(4, len(picks))
    rows = int(np.ceil(len(picks) / cols))
    width = 3.6 * cols + 0.9
    fig = plt.figure(figsize=(width, 3.6 * rows), dpi=110)
    for k, i in enumerate(picks):
        ax = fig.add_subplot(rows, cols, k + 1, projection="3d")
        render_frame(ax, frames[i], triangles_at(triangles, i), colliders[i] if colliders else (),
                     strain=strain[i] if strain is not None else None, vmax=vmax, pins=pins,
                     view=view, bounds=boxes[k])
        label = f"frame {numbers[i]}"
        if strain is not None:
            label += f"   max strain {100 * float(np.max(strain[i])):.2f} %"
        ax.set_title(label, fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0.0, 0.0, 1.0 - 0.9 / width, 1.0))
    if strain is not None:
        add_strain_colorbar(fig, (1.0 - 0.75 / width, 0.2, 0.12 / width, 0.6), vmax or 0.0)
    return fig


def frame_strain(frames: Sequence[F], triangles: FrameTriangles,
                 rest: F | Sequence[F] | None = None) -> list[F]:
    """Per-point max edge strain of each frame against ``rest`` (default the first frame, which
    a pbdcloth run or cache holds at rest; or one rest array per frame, for a cloth that
    tears); see :func:`~.render.point_max_strain`. ``triangles``: see :data:`FrameTriangles`."""
    from .render import point_max_strain

    out = []
    for k, f in enumerate(frames):
        if rest is None:
            base = frames[0]
        elif isinstance(rest, np.ndarray):
            base = rest
        else:
            base = rest[k]
        if base.shape != f.shape:
            raise ValueError(f"frame {k} has {f.shape[0]} points but its rest shape "
                             f"{base.shape[0]}: give each frame's rest positions")
        out.append(point_max_strain(f, triangles_at(triangles, k), base))
    return out


def render_frames(
    frames: Sequence[F],
    triangles: FrameTriangles,
    strain: Sequence[F] | None = None,
    frame_numbers: Sequence[int] | None = None,
    size: int = 480,
    vmax: float | None = None,
    title: str = "",
    colliders: FrameShapes | None = None,
    pins: NDArray[np.int64] | None = None,
    view: str | tuple[float, float] = DEFAULT_VIEW,
    follow: bool = False,
) -> list[NDArray[np.uint8]]:
    """RGB images (size, size, 3) of each frame (for a movie): one camera for all (or one
    following the cloth), colliders at each frame's pose, strain on one scale with a colour
    bar; each frame's title gives its max strain."""
    plt = _require_matplotlib()
    if strain is not None and vmax is None:
        vmax = max(float(np.max(s)) for s in strain)
    numbers = list(frame_numbers) if frame_numbers is not None else list(range(len(frames)))
    boxes = _framing(frames, colliders, range(len(frames)), follow)
    dpi = 100
    fig = plt.figure(figsize=(size / dpi, size / dpi), dpi=dpi)
    ax = fig.add_axes((0.0, 0.0, 0.86, 0.9), projection="3d")
    if strain is not None:
        add_strain_colorbar(fig, (0.87, 0.15, 0.03, 0.6), vmax or 0.0)
    images: list[NDArray[np.uint8]] = []
    try:
        for k, pts in enumerate(frames):
            ax.cla()
            render_frame(ax, pts, triangles_at(triangles, k), colliders[k] if colliders else (),
                         strain=strain[k] if strain is not None else None, vmax=vmax,
                         pins=pins, view=view, bounds=boxes[k])
            label = f"frame {numbers[k]}"
            if strain is not None:
                label += f"   max strain {100 * float(np.max(strain[k])):.2f} %"
            fig.suptitle(f"{title}\n{label}" if title else label, fontsize=9)
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


