"""The ``springs`` demo scene: a sword scabbard and a helmet plume swinging on a walking body.

A recipe, run by :func:`pbdcloth.pipeline.springs.run_spring_scene` (``pbdcloth demo --scene
springs``): per frame the body (:class:`~pbdcloth.scenes.body.Body`) walks on, its colliders move
(:meth:`SpringScene.animate`), and each chain steps with the body's chest matrix
(``Body.frame``) as parent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import F
from ..portable import norm
from ..settings import SpringSettings
from ..springs import SpringChain
from .body import Body


@dataclass
class SpringScene:
    """Spring chains on a walking body: a ready-to-run recipe (built fresh per call)."""

    name: str
    description: str
    body: Body
    chains: list[SpringChain]
    chain_names: list[str]
    frames: int
    fps: float = 30.0
    speed: float = 1.2
    """Walking speed [m/s]."""
    turn_rate: float = 0.0
    """Turning rate about +Y [rad/s]."""

    def parent(self, t: float) -> F:
        """The chains' parent at time ``t`` [s]: the chest's world matrix (4, 4)."""
        return self.body.frame(t, speed=self.speed, turn_rate=self.turn_rate)

    def start(self) -> F:
        """Put the body at time 0 and every chain at rest under it, still; return the parent
        matrix at time 0."""
        self.body.move_to_time(0.0, speed=self.speed, turn_rate=self.turn_rate)
        self.end_frame()
        parent = self.parent(0.0)
        for chain in self.chains:
            chain.reset(parent)
        return parent

    def animate(self, frame: int) -> F:
        """Move the body to the end of ``frame`` (time ``frame / fps``) and return the chains'
        parent matrix there; the colliders move from their previous pose to this one."""
        t = frame * (1.0 / self.fps)
        self.body.move_to_time(t, speed=self.speed, turn_rate=self.turn_rate)
        return self.parent(t)

    def end_frame(self) -> None:
        """The colliders' end-of-frame pose becomes the next frame's start pose."""
        for c in self.body.colliders:
            c.end_frame()


def springs_scene(frames: int = 150) -> SpringScene:
    """A sword scabbard at the left hip and a plume on the helmet of a body walking a curve.

    Both chains hang from the chest (``Body.frame``); the scabbard collides with the left leg,
    the plume with the head and the trunk. 150 frames at 30 fps.
    """
    body = Body(1.75)
    h = body.height
    col = dict(zip(body.collider_names, body.colliders))
    chest_y = 0.73 * h
    # Scabbard: from the left hip (just outside the thigh) down, back and a little out, so the
    # thigh swinging back knocks it; 4 x 0.2 m.
    hip = np.array([0.19, 0.53 * h - chest_y, 0.0])
    direction = np.array([0.03, -1.0, -0.2])
    direction /= norm(direction)
    scabbard = SpringChain(
        hip + 0.2 * np.arange(5)[:, None] * direction,
        SpringSettings(stiffness=1.5, gravity=1.0, drag=0.3, radius=0.03),
        colliders=[col["thigh_l"], col["shin_l"]],
    )
    # Plume: from the crest of the helmet up and back, softer toward its tip.
    top = 0.935 * h + 0.065 * h + 0.02 - chest_y
    plume_points = np.array([[0.0, top, 0.0], [0.0, top + 0.08, -0.03], [0.0, top + 0.13, -0.1],
                             [0.0, top + 0.15, -0.18], [0.0, top + 0.14, -0.26],
                             [0.0, top + 0.11, -0.33]])
    plume = SpringChain(
        plume_points,
        [SpringSettings(stiffness=s, gravity=0.4, drag=0.15, radius=0.02)
         for s in (3.0, 1.5, 0.8, 0.5, 0.4)],
        colliders=[col["head"], col["trunk"]],
    )
    return SpringScene(
        name="springs", description=springs_scene.__doc__ or "", body=body,
        chains=[scabbard, plume], chain_names=["scabbard", "plume"], frames=frames, fps=30.0,
        speed=1.2, turn_rate=0.6,
    )
