"""Solver checkpoints: the exact state after a frame, saved atomically, for ``--resume``.

A checkpoint is a ``.npz`` holding :meth:`ClothSolver.get_state` (float64 arrays, stored
bit for bit), the frame number it belongs to and the digest of the scene that produced it. A run
resumed from it continues with the same numbers an uninterrupted run would have had.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write

_ARRAYS = ("positions", "velocities", "pin_start", "pin_end")


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable or belongs to another scene."""


@dataclass
class Checkpoint:
    """A saved solver state: ``frame`` (scene frame number), ``digest`` (scene fingerprint) and
    ``state`` (as :meth:`~pbdcloth.solver.ClothSolver.get_state` returns it)."""

    frame: int
    digest: str
    state: dict[str, Any]


def save_checkpoint(path: str | os.PathLike[str], frame: int, digest: str,
                    state: dict[str, Any]) -> Path:
    """Write a checkpoint atomically (temporary file, then rename)."""
    buffer = io.BytesIO()
    np.savez(buffer, frame=np.int64(frame), digest=np.str_(digest),
             solver_frame=np.int64(state["frame"]), time=np.float64(state["time"]),
             **{k: np.asarray(state[k], dtype=np.float64) for k in _ARRAYS})
    target = Path(path)
    with atomic_write(target, "wb") as fh:
        fh.write(buffer.getvalue())
    return target


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`."""
    source = Path(path)
    if not source.is_file():
        raise CheckpointError(f"no checkpoint at {source}: nothing to resume")
    try:
        with np.load(source, allow_pickle=False) as data:
            state = {k: data[k].copy() for k in _ARRAYS}
            state["frame"] = int(data["solver_frame"])
            state["time"] = float(data["time"])
            return Checkpoint(frame=int(data["frame"]), digest=str(data["digest"]), state=state)
    except (OSError, KeyError, ValueError) as exc:
        raise CheckpointError(f"{source} is not a pbdcloth checkpoint ({exc})") from None
