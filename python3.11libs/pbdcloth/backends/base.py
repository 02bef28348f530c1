"""What every backend shares: the step signature, its controls and statistics, PBD stiffness.

Every backend (numpy, the per-constraint reference loop, Warp) steps with one signature::

    stats = backend.step(state_in, state_out, control, dt)

It reads its :class:`~pbdcloth.cloth.model.ClothModel` (bound at construction), ``state_in`` and
``control``, and writes ``state_out`` (which may be ``state_in``). It never changes the control:
the caller moves pins and colliders between frames (``Collider.end_frame`` included).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from ..arrays import F
from ..cloth.state import ClothState
from ..colliders.base import Collider, SolverInputError
from ..settings import ClothSettings


class SimulationDiverged(ValueError, FloatingPointError):
    """The cloth's positions or velocities became NaN or inf during a frame.

    A ``ValueError`` like every other error of pbdcloth (and still a ``FloatingPointError``,
    what earlier versions raised). Attributes: ``frame`` (the frame that diverged, counted from
    1 since the start) and ``particle`` (the lowest index of a non-finite particle).
    """

    def __init__(self, frame: int, particle: int) -> None:
        self.frame, self.particle = frame, particle
        super().__init__(
            f"the simulation diverged at frame {frame}: particle {particle} (and maybe others) "
            "has a non-finite position or velocity; lower the time step, raise substeps or "
            "soften the compliance")


def pbd_stiffness(k: float, iterations: int) -> float:
    """Per-projection stiffness k' = 1 - (1 - k)^(1/n_s) (Müller et al. 2006, section 3.3).

    n_s is the number of solver iterations per substep: after n_s projections the remaining
    error of an isolated constraint is (1 - k') ^ n_s = 1 - k, whatever n_s is.
    """
    return 1.0 - (1.0 - k) ** (1.0 / iterations)


@dataclass
class FrameStats:
    """What happened during the last frame."""

    substeps: int = 0
    contacts: int = 0
    """Particles in contact with a collider during the last substep."""
    tethers_active: int = 0
    """Tethers that were taut (and projected) in the last iteration of the last substep."""
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Control:
    """What the caller sets for one frame; a backend reads it and never writes it.

    Attributes:
        settings: the solver settings for this frame.
        pin_start: pin targets at the start of the frame [m], shape (P, 3), in sorted pin order.
        pin_end: pin targets at the end of the frame [m], shape (P, 3); within the frame pins
            travel linearly from ``pin_start`` to ``pin_end``, substep by substep.
        colliders: obstacles, each posed for the start and the end of the frame (``move_to``).
        soft_start, soft_end: targets of the soft pins (``model.soft_pins``) at the start and
            the end of the frame [m], shape (S, 3), in sorted order; moving like ``pin_start``
            and ``pin_end``. ``None`` without soft pins.
    """

    settings: ClothSettings
    pin_start: F
    pin_end: F
    colliders: Sequence[Collider] = ()
    soft_start: F | None = None
    soft_end: F | None = None


class Backend(Protocol):
    """One frame of substeps: ``state_in`` -> ``state_out`` under ``control``."""

    name: str

    def step(self, state_in: ClothState, state_out: ClothState, control: Control,
             dt: float) -> FrameStats: ...


__all__ = ["Backend", "Control", "FrameStats", "SimulationDiverged", "SolverInputError",
           "pbd_stiffness"]
