"""Solver checkpoints: the exact state after a frame, saved atomically, for ``--resume``.

A checkpoint is a ``.npz`` holding the cloth's :class:`~pbdcloth.cloth.state.ClothState`
(``positions``, ``velocities`` as float64 arrays stored bit for bit, the solver's ``solver_frame``
count and ``time``), the pin targets (``pin_start``, ``pin_end``: the pins move from the one to
the other during the coming frame; with soft pins also ``soft_start``, ``soft_end``), the scene
frame number it belongs to (``frame``) and the digest of the scene that produced it
(``digest``); after a tear also the torn cloth's model as ``torn_*`` arrays
(:mod:`pbdcloth.cloth.torn`), so the resumed run goes on with the torn topology. A run resumed
from it continues with the same
numbers an uninterrupted run would have had. Colliders are controls, not state: the scene puts
them back (:meth:`pbdcloth.pipeline.scenefile.SceneSpec.restore_controls`).
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays import F
from ..atomic import atomic_write
from ..cloth.state import ClothState
from ..solver import ClothSolver

#: The soft pins' targets, in a checkpoint only when the cloth has soft pins.
SOFT_KEYS = ("soft_start", "soft_end")
#: Prefix of the torn model's arrays in a checkpoint file.
TORN_PREFIX = "torn_"


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable or belongs to another scene."""


@dataclass
class Checkpoint:
    """A saved solver state.

    Attributes:
        frame: the scene frame number the state belongs to.
        digest: fingerprint of the scene (:meth:`~pbdcloth.pipeline.scenefile.SceneSpec.digest`).
        state: positions [m] and velocities [m/s] (N, 3), frames stepped and time [s].
        pin_start, pin_end: pin targets at the start and end of the coming frame [m], (P, 3).
        soft: with soft pins, their targets ``soft_start``, ``soft_end`` [m], (S, 3).
        torn: the torn model's arrays (:func:`~pbdcloth.cloth.torn.torn_arrays`), or None for a
            cloth that has not torn.
    """

    frame: int
    digest: str
    state: ClothState
    pin_start: F
    pin_end: F
    soft: dict[str, F] = field(default_factory=dict)
    torn: dict[str, Any] | None = None

    @classmethod
    def of(cls, solver: ClothSolver, frame: int, digest: str) -> "Checkpoint":
        """Exact copies of what ``solver`` carries from frame to frame."""
        s = solver.get_state()
        return cls(frame, digest, ClothState(s["positions"], s["velocities"], s["frame"],
                                             s["time"]), s["pin_start"], s["pin_end"],
                   {k: s[k] for k in SOFT_KEYS if k in s}, s.get("torn"))

    def solver_state(self) -> dict[str, Any]:
        """The state in the form of :meth:`ClothSolver.get_state` / ``set_state``."""
        return {"positions": self.state.positions, "velocities": self.state.velocities,
                "pin_start": self.pin_start, "pin_end": self.pin_end,
                "frame": int(self.state.frame), "time": float(self.state.time), **self.soft,
                "torn": self.torn}

    def restore(self, solver: ClothSolver) -> None:
        """Put ``solver`` in this state, bit for bit."""
        solver.set_state(self.solver_state())


def save_checkpoint(path: str | os.PathLike[str], checkpoint: Checkpoint) -> Path:
    """Write a checkpoint atomically (temporary file, then rename)."""
    buffer = io.BytesIO()
    c = checkpoint
    torn = {f"{TORN_PREFIX}{k}": np.asarray(v) for k, v in (c.torn or {}).items()}
    np.savez(buffer, **torn, frame=np.int64(c.frame), digest=np.str_(c.digest),
             solver_frame=np.int64(c.state.frame), time=np.float64(c.state.time),
             positions=np.asarray(c.state.positions, dtype=np.float64),
             velocities=np.asarray(c.state.velocities, dtype=np.float64),
             pin_start=np.asarray(c.pin_start, dtype=np.float64),
             pin_end=np.asarray(c.pin_end, dtype=np.float64),
             **{k: np.asarray(v, dtype=np.float64) for k, v in c.soft.items()})
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
            state = ClothState(data["positions"].copy(), data["velocities"].copy(),
                               int(data["solver_frame"]), float(data["time"]))
            torn = {k[len(TORN_PREFIX):]: data[k].copy() for k in data.files
                    if k.startswith(TORN_PREFIX)}
            return Checkpoint(frame=int(data["frame"]), digest=str(data["digest"]), state=state,
                              pin_start=data["pin_start"].copy(), pin_end=data["pin_end"].copy(),
                              soft={k: data[k].copy() for k in SOFT_KEYS if k in data.files},
                              torn=torn or None)
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        reason = str(exc) or type(exc).__name__
        raise CheckpointError(f"{source} is not a pbdcloth checkpoint ({reason}); delete it and "
                              "run without --resume to start over") from None
