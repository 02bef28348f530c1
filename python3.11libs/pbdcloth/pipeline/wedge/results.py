"""A wedge's results: ``wedge.csv`` and ``wedge.json`` (one row per member) and ``wedge.png``
(a grid of the members' last frames, rows and columns by the first two varied settings)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...atomic import atomic_write
from ..checkpoint import CheckpointError, load_checkpoint

if TYPE_CHECKING:
    from .plan import WedgePlan

CSV_NAME = "wedge.csv"
JSON_NAME = "wedge.json"
PICTURE_NAME = "wedge.png"

#: Columns of ``wedge.csv`` after the varied settings.
COLUMNS = ("status", "frames", "max_strain", "min_collider_distance", "ms_per_frame",
           "frames_simulated", "resumed_from", "attempt", "seconds", "message")


def write_tables(plan: WedgePlan, rows: Sequence[dict[str, Any]]) -> list[Path]:
    """Write ``wedge.csv`` and ``wedge.json`` atomically; return their paths."""
    names = [a.name for a in plan.axes]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["index", "name", *names, *COLUMNS])
    for r in rows:
        values = r.get("values", {})
        writer.writerow([r["index"], r["name"], *[_cell(values.get(n)) for n in names],
                         *[_cell(r.get(c)) for c in COLUMNS]])
    csv_path, json_path = plan.out / CSV_NAME, plan.out / JSON_NAME
    with atomic_write(csv_path) as fh:
        fh.write(text.getvalue())
    with atomic_write(json_path) as fh:
        json.dump({"plan": plan.to_json(), "rows": list(rows)}, fh, indent=2, default=str)
    return [csv_path, json_path]


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return value


def render_panels(frames: Sequence[NDArray[np.float64]],
                  triangles: NDArray[np.int64] | Sequence[NDArray[np.int64]],
                  strains: Sequence[NDArray[np.float64]], numbers: Sequence[int],
                  size: int = 360) -> list[NDArray[np.uint8]]:
    """RGB images (size, size, 3) of the frames, one camera for all, coloured by strain: the
    preview's renderer."""
    from ...preview import render_frames

    return render_frames(frames, triangles, strains, numbers, size=size)


def write_picture(plan: WedgePlan, rows: Sequence[dict[str, Any]]) -> Path | None:
    """Draw ``wedge.png``: each member's last frame (from its checkpoint), coloured by strain,
    in a grid whose rows and columns are the first two varied settings (a product wedge of one
    or two settings) or in index order (zipped, or more settings), each labelled. Members
    without a checkpoint are drawn as an empty panel with their status. None without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from ...preview import point_max_strain, save_figure

    spec = plan.spec
    tris = spec.triangles
    found: dict[int, tuple[NDArray[np.float64], int, NDArray[np.int64], NDArray[np.float64]]] = {}
    for r in rows:
        if r.get("status") == "done" and r.get("checkpoint"):
            try:
                saved = load_checkpoint(r["checkpoint"])
            except CheckpointError:
                continue
            torn = saved.torn
            if torn is not None and "triangles" in torn and "origin" in torn:
                # A member that tore: its own triangles, rest positions through its points'
                # origins.
                found[r["index"]] = (saved.state.positions, saved.frame,
                                     np.asarray(torn["triangles"], dtype=np.int64),
                                     spec.positions[np.asarray(torn["origin"], dtype=np.int64)])
            else:
                found[r["index"]] = (saved.state.positions, saved.frame, tris, spec.positions)
    keys = sorted(found)
    images = dict(zip(keys, render_panels(
        [found[k][0] for k in keys], [found[k][2] for k in keys],
        [point_max_strain(found[k][0], found[k][2], found[k][3]) for k in keys],
        [found[k][1] for k in keys]))) if keys else {}
    axes = plan.axes
    grid = not plan.zip and len(axes) <= 2
    if grid:
        nrows = len(axes[0].values) if len(axes) == 2 else 1
        ncols = len(axes[-1].values)
    else:
        ncols = min(4, len(rows))
        nrows = -(-len(rows) // ncols)
    fig, ax = plt.subplots(nrows, ncols, figsize=(2.8 * ncols + 0.6, 2.8 * nrows + 0.6),
                           dpi=110, squeeze=False)
    for k, r in enumerate(rows):
        i, j = divmod(k, ncols)
        a = ax[i][j]
        if r["index"] in images:
            a.imshow(images[r["index"]])
        else:
            a.text(0.5, 0.5, str(r.get("status", "pending")), ha="center", va="center",
                   transform=a.transAxes, fontsize=11, color="0.4")
        a.set_xticks([])
        a.set_yticks([])
        values = r.get("values", {})
        if grid:
            if i == 0:
                a.set_title(f"{axes[-1].name} = {_cell(values.get(axes[-1].name))}",
                            fontsize=9)
            if j == 0 and len(axes) == 2:
                a.set_ylabel(f"{axes[0].name} = {_cell(values.get(axes[0].name))}",
                             fontsize=9)
        else:
            a.set_title("\n".join(f"{n} = {_cell(v)}" for n, v in values.items()), fontsize=8)
    for k in range(len(rows), nrows * ncols):
        ax[k // ncols][k % ncols].set_axis_off()
    fig.suptitle(f"{spec.name}: last frames of the wedge", fontsize=11)
    return save_figure(fig, plan.out / PICTURE_NAME)
