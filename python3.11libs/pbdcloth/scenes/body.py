"""A capsule body for a standing person, and a walk-and-turn animation of it.

The body stands for a person roughly, within a few centimetres of the skin: capsules on the trunk,
hips and limbs and a sphere on the head, sized in proportion to the stature (proportions after
the usual "eight heads" figure drawing canon). It is Y-up, faces +Z, feet at y = 0, like a
Houdini character. Cloth and spring chains share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..colliders import Capsule, Collider, Sphere
from ..portable import norm, rotate

F = NDArray[np.float64]

#: Joint heights as fractions of the stature, and half-widths, for a figure facing +Z.
_PROPORTIONS = {
    "head": 0.935, "neck": 0.845, "chest": 0.73, "waist": 0.61, "hips": 0.53,
    "knee": 0.285, "ankle": 0.045, "shoulder": 0.815, "elbow": 0.63, "wrist": 0.475,
}


@dataclass
class Body:
    """Joint positions and the colliders on them, for a person of ``height`` metres.

    Attributes:
        height: stature [m].
        joints: world positions of the named joints [m] (updated by :meth:`pose`).
        colliders: capsules and a sphere, in a fixed order (see :attr:`collider_names`).
    """

    height: float = 1.75
    joints: dict[str, F] = field(default_factory=dict)
    colliders: list[Collider] = field(default_factory=list)
    collider_names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.height) and 0.3 <= self.height <= 3.0):
            raise ValueError(f"body height must be within [0.3, 3] m, got {self.height!r}")
        self.joints = self._rest_joints()
        self._build_colliders()

    # ---------------------------------------------------------------------------------------
    def _rest_joints(self) -> dict[str, F]:
        h = self.height
        p = {k: v * h for k, v in _PROPORTIONS.items()}
        sw = 0.11 * h   # shoulder half-width
        hw = 0.055 * h  # hip half-width
        j: dict[str, tuple[float, float, float]] = {
            "head": (0, p["head"], 0), "neck": (0, p["neck"], 0),
            "chest": (0, p["chest"], 0), "waist": (0, p["waist"], 0), "hips": (0, p["hips"], 0),
        }
        for side, sx in (("l", 1.0), ("r", -1.0)):
            j[f"shoulder_{side}"] = (sx * sw, p["shoulder"], 0)
            j[f"elbow_{side}"] = (sx * (sw + 0.02 * h), p["elbow"], -0.01 * h)
            j[f"wrist_{side}"] = (sx * (sw + 0.03 * h), p["wrist"], 0.01 * h)
            j[f"hip_{side}"] = (sx * hw, p["hips"], 0)
            j[f"knee_{side}"] = (sx * hw, p["knee"], 0.005 * h)
            j[f"ankle_{side}"] = (sx * hw, p["ankle"], 0)
        return {k: np.array(v, dtype=np.float64) for k, v in j.items()}

    def _segments(self) -> list[tuple[str, str, str, float]]:
        """(name, joint a, joint b, radius as a fraction of height)."""
        segs = [
            ("trunk", "waist", "neck", 0.085), ("pelvis", "hip_l", "hip_r", 0.075),
        ]
        for side in ("l", "r"):
            segs += [
                (f"upper_arm_{side}", f"shoulder_{side}", f"elbow_{side}", 0.03),
                (f"forearm_{side}", f"elbow_{side}", f"wrist_{side}", 0.025),
                (f"thigh_{side}", f"hip_{side}", f"knee_{side}", 0.045),
                (f"shin_{side}", f"knee_{side}", f"ankle_{side}", 0.033),
            ]
        return segs

    def _build_colliders(self) -> None:
        h = self.height
        self.colliders, self.collider_names = [], []
        for name, a, b, r in self._segments():
            self.colliders.append(Capsule(self.joints[a], self.joints[b], r * h))
            self.collider_names.append(name)
        self.colliders.append(Sphere(self.joints["head"], 0.065 * h))
        self.collider_names.append("head")

    # ---------------------------------------------------------------------------------------
    def pose(self, time: float, speed: float = 1.0, turn_rate: float = 0.0,
             stride: float = 0.35) -> dict[str, F]:
        """Joint positions at ``time`` [s] of a walk along the facing direction.

        The body walks at ``speed`` m/s with legs and arms swinging at a step frequency of
        ``speed / stride`` and turns about +Y at ``turn_rate`` rad/s. Returns the joints; call
        :meth:`move_to_time` to also move the colliders.
        """
        rest = self._rest_joints()
        h = self.height
        heading = turn_rate * time
        phase = 2.0 * math.pi * (speed / max(2 * stride, 1e-9)) * time if speed else 0.0
        swing = 0.45 * min(1.0, speed) if speed else 0.0
        joints = {k: v.copy() for k, v in rest.items()}
        for side, sgn in (("l", 1.0), ("r", -1.0)):
            a = sgn * swing * math.sin(phase)       # leg swing angle about the hip (x axis)
            hip = joints[f"hip_{side}"]
            for j in ("knee", "ankle"):
                v = joints[f"{j}_{side}"] - hip
                joints[f"{j}_{side}"] = hip + rotate(_rot_x(a), v)
            sh = joints[f"shoulder_{side}"]
            for j in ("elbow", "wrist"):
                v = joints[f"{j}_{side}"] - sh
                joints[f"{j}_{side}"] = sh + rotate(_rot_x(-0.6 * a), v)
        bob = 0.01 * h * math.cos(2 * phase) if speed else 0.0
        # Heading rotation about the body's own vertical axis, then the walk forward.
        rot = _rot_y(heading)
        if turn_rate != 0.0:
            # integral of the heading direction: a circle of radius speed / turn_rate
            r = speed / turn_rate
            offset = np.array([r * (1 - math.cos(heading)), 0.0, r * math.sin(heading)])
        else:
            offset = np.array([0.0, 0.0, speed * time])
        for k, v in joints.items():
            joints[k] = rotate(rot, v) + offset + np.array([0.0, bob, 0.0])
        return joints

    def move_to_time(self, time: float, **walk: float) -> None:
        """Pose the body at ``time`` and set every collider's end-of-frame pose to match."""
        self.joints = self.pose(time, **walk)
        segs = self._segments()
        for collider, (name, a, b, _) in zip(self.colliders, segs):
            assert isinstance(collider, Capsule)
            collider.move_to(self.joints[a], self.joints[b])
        head = self.colliders[-1]
        assert isinstance(head, Sphere)
        head.move_to(self.joints["head"])

    def frame(self, time: float, **walk: float) -> F:
        """A 4x4 world matrix (column vectors) of the chest: rotation by heading, origin at chest."""
        joints = self.pose(time, **walk)
        right = joints["shoulder_l"] - joints["shoulder_r"]
        right /= norm(right)
        up = np.array([0.0, 1.0, 0.0])
        fwd = np.cross(right, up)
        m = np.eye(4)
        m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = right, up, fwd, joints["chest"]
        return m


def body_colliders(height: float = 1.75) -> list[Collider]:
    """Capsules on the trunk, pelvis and limbs and a sphere on the head of a standing person."""
    return Body(height).colliders


def _rot_x(a: float) -> F:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_y(a: float) -> F:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
