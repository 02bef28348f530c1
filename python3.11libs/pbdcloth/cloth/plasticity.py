"""Bend plasticity: hinges bent far past their rest angle take part of the bend as their new rest.

At the end of each frame of length dt, a hinge whose angle theta differs from its rest angle
theta0 by more than the threshold tau (``plasticity_threshold``) moves its rest angle toward
theta by a share of the excess:

    e = wrap(theta - theta0),   theta0 += (1 - exp(-r dt)) sign(e) (|e| - tau)   if |e| > tau,

with r the rate (``plasticity_rate``, 1/s). Held at a fixed angle, the rest angle relaxes
exponentially, frame by frame, to theta - tau sign(e): theta0_k = (theta - tau) -
(theta - tau - theta0_0) exp(-r dt)^k, the linear flow rule of a perfectly plastic material
with a yield threshold (as Vellum's bend plasticity: a threshold, then a rate). A cloth
crumpled and released keeps creases; below the threshold nothing creeps.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..arrays import F
from ..constraints.bend import constraint_angle, dihedral_angle_and_gradient, wrap_angle
from .model import ClothModel


def plastic_rest_angles(positions: F, model: ClothModel, threshold: float, rate: float,
                        dt: float) -> tuple[F, int] | None:
    """The bend family's new rest angles (colored order) and how many hinges yielded, or
    None when none did. ``positions`` (N, 3) [m]; degenerate hinges never yield."""
    bend = model.bend
    if bend.count == 0:
        return None
    x = np.ascontiguousarray(positions.T)[:, bend.quads.T]  # (3, 4, M)
    theta, _, valid = dihedral_angle_and_gradient(np.ascontiguousarray(x.transpose(1, 0, 2)))
    excess = constraint_angle(theta, bend.rest_angle)
    over = np.abs(excess) - threshold
    yielded = valid & (over > 0.0)
    count = int(yielded.sum())
    if count == 0:
        return None
    share = 1.0 - math.exp(-rate * dt)
    rest = bend.rest_angle.copy()
    rest[yielded] = wrap_angle(rest[yielded] + share * np.sign(excess[yielded]) * over[yielded])
    return rest, count


def with_bend_rest(model: ClothModel, rest: F) -> ClothModel:
    """The model with the bend family's rest angles ``rest`` (colored order) [rad]."""
    return replace(model, bend=replace(model.bend, rest_angle=np.ascontiguousarray(rest)))


__all__ = ["plastic_rest_angles", "with_bend_rest"]
