"""Sewing: two flat panels, a front and a back, sewn into a tube skirt on a dress form.

The dress form is the capsule body of :mod:`.body` without its arms (trunk, pelvis, legs and
head, like a tailor's dummy): the arms hang where the side seams run. The panels are laid out
flat in front of and behind the body, as in Marvelous Designer, and joined along their side
edges by stitches of rest length 0 (:mod:`pbdcloth.cloth.stitches`). The stitches pull the
panels together at their closing speed with gravity off (as a garment is sewn in Marvelous
Designer before it is simulated); then gravity comes on and the tube drops onto the hips.
"""

from __future__ import annotations

import numpy as np

from ..cloth.mesh import grid
from ..cloth.stitches import Stitches
from ..colliders import Collider
from ..settings import ClothSettings, Vec3
from ..solver import ClothSolver
from .body import Body
from .cloth import Scene, describe

#: Colliders of the body left out of the dress form.
ARMS = ("upper_arm_l", "upper_arm_r", "forearm_l", "forearm_r")


def dress_form(height: float = 1.75) -> list[Collider]:
    """The body's colliders without the arms: trunk, pelvis, legs, head."""
    body = Body(height)
    return [c for c, name in zip(body.colliders, body.collider_names) if name not in ARMS]


def sewing_scene(resolution: int = 16, settings: ClothSettings | None = None,
                 frames: int = 72, speed: float = 1.0, sew_frames: int = 12) -> Scene:
    """Two flat panels, front and back, sewn shut at their sides into a tube skirt that drapes
    on the hips of a dress form.

    Each panel is 0.58 m wide and 0.4 m tall with ``resolution`` points across (16: 352
    particles in all), flat, 0.2 m in front of and behind the trunk, its hem 4 cm above the
    pelvis. Side seams (rest length 0) join the panels' side edges over their whole height; they
    close at ``speed`` m/s (the 0.4 m gaps in 0.4 s at 1 m/s) with gravity off for the first
    ``sew_frames`` frames. Then the tube (1.16 m round: looser than the waist, 0.94 m, tighter
    than the pelvis, 1.21 m) drops onto the hips and hangs there. Self-collision is off: the
    body keeps the panels apart.
    """
    width, length, depth = 0.58, 0.4, 0.2
    body_height = 1.75
    hip_y, hip_radius = 0.53 * body_height, 0.075 * body_height   # the pelvis capsule
    top_y = hip_y + hip_radius + 0.04 + length
    rows = max(2, int(round((resolution - 1) * length / width)) + 1)
    front, tris = grid(resolution, rows, width, length, plane="xy",
                       origin=(-width / 2, top_y, depth))
    back = front.copy()
    back[:, 2] = -depth
    n = front.shape[0]
    positions = np.concatenate([front, back])
    # the back panel faces backwards: reversed winding
    triangles = np.concatenate([tris, tris[:, ::-1] + n]).astype(np.int64)
    seam = np.flatnonzero(np.abs(np.abs(front[:, 0]) - width / 2) < 1e-9)
    s = settings or ClothSettings(
        model="pbd", substeps=20, iterations=6, stretch_stiffness=1.0, shear_stiffness=1.0,
        bend_stiffness=0.02, thickness=0.008, friction=0.5, static_friction=0.0, damping=1.0,
        tethers=False, self_collision=False)
    gravity: dict[str, Vec3] = {}

    def animate(solver: ClothSolver, frame: int) -> None:
        """Gravity off while the seams close (steps 1 .. sew_frames), then the solver's own."""
        if frame == 1:
            gravity["on"] = solver.settings.gravity
        if frame == 1 or frame == sew_frames + 1:
            on = frame > sew_frames
            solver.settings = solver.settings.replace(
                gravity=gravity["on"] if on else (0.0, 0.0, 0.0))

    return Scene(
        "sewing", description=describe(sewing_scene.__doc__), positions=positions,
        triangles=triangles, pinned=np.zeros(0, dtype=np.int64), settings=s,
        colliders=dress_form(body_height), frames=frames, animate=animate,
        stitches=Stitches(np.stack([seam, seam + n], axis=1), 0.0, speed=speed),
        info={"stitches": float(seam.size), "sew_frames": float(sew_frames)})


__all__ = ["ARMS", "dress_form", "sewing_scene"]
