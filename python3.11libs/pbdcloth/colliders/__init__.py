"""Obstacles the cloth collides with: analytic shapes and (optionally) OpenVDB level sets."""

from .base import Collider, SolverInputError
from .rigid import RigidTransformError
from .sdf import SdfCollider, SdfError
from .shapes import Capsule, Plane, Sphere

__all__ = [
    "Capsule",
    "Collider",
    "Plane",
    "RigidTransformError",
    "SdfCollider",
    "SdfError",
    "SolverInputError",
    "Sphere",
]
