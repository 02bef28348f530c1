"""Soft pins: a zero-rest-length attachment of a point to its animated target, with a weight.

A point with pin weight w in (0, 1) is pulled toward its target t (the pin target, moving
linearly through the frame like a hard pin's) once per iteration, after the mesh's families and
the tethers and before the colliders:

    x <- x + k' (t - x),        k' = 1 - (1 - w)^(1/n)      (n iterations per substep),

Müller et al. 2006's iteration-count-independent stiffness (section 3.3) applied to the
constraint C = |x - t| with the target's inverse mass 0: after the n iterations of a substep,
the point's own pull alone closes the fraction w of its distance to the target, whatever n is.
So w = 1 is a hard pin (the model makes those hard pins outright: inverse mass 0, placed on the
target) and w = 0 is free. The correction goes into the velocity through the update
v = (x - x_prev) / h like every projection's; like PBD stiffness the pull per second depends on
the number of substeps.

Usage (positions component-major (3, N), corrected in place)::

    project_soft_pins(P, particle, target, k)   # target (3, S), k (S,)
"""

from __future__ import annotations

from ..arrays import F, I


def soft_pin_stiffness(weight: F, iterations: int) -> F:
    """Per-iteration pull k' = 1 - (1 - w)^(1/n) of each soft pin, shape (S,)."""
    return 1.0 - (1.0 - weight) ** (1.0 / iterations)


def project_soft_pins(positions: F, particle: I, target: F, stiffness: F) -> None:
    """Move each soft-pinned ``particle`` (S,) the fraction ``stiffness`` (S,) of the way to its
    ``target`` (3, S) [m], in place on ``positions`` (3, N) [m] (no particle repeats)."""
    if particle.size:
        x = positions[:, particle]
        positions[:, particle] = x + stiffness * (target - x)


__all__ = ["project_soft_pins", "soft_pin_stiffness"]
