"""The time-varying state of a cloth, apart from its static model and from the caller's controls.

Following Newton's Model / State / Control split: :class:`~pbdcloth.cloth.model.ClothModel` holds
what never changes while stepping (topology, rest data, colors, masses), :class:`ClothState` what
a step changes (positions, velocities, the clock), and
:class:`~pbdcloth.backends.base.Control` what the caller sets between frames (pin targets,
collider poses, settings). A backend's ``step(state_in, state_out, control, dt)`` reads the model
and the control and writes ``state_out``.

XPBD's Lagrange multipliers are reset at every substep, so they live in the backends as scratch
memory, not here: nothing of them carries from one frame to the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import F


@dataclass
class ClothState:
    """Particle state after a frame.

    Attributes:
        positions: particle positions [m], shape (N, 3), float64.
        velocities: particle velocities [m/s], shape (N, 3), float64.
        frame: frames stepped since the start.
        time: simulated time since the start [s].
    """

    positions: F
    velocities: F
    frame: int = 0
    time: float = 0.0

    @property
    def particle_count(self) -> int:
        return int(self.positions.shape[0])

    def copy(self) -> "ClothState":
        """An independent copy (arrays copied bit for bit)."""
        return ClothState(self.positions.copy(), self.velocities.copy(), int(self.frame),
                          float(self.time))

    def is_finite(self) -> bool:
        """True when no position or velocity is NaN or infinite."""
        return bool(np.all(np.isfinite(self.positions)) and np.all(np.isfinite(self.velocities)))


__all__ = ["ClothState"]
