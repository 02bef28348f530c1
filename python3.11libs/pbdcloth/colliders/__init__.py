"""Obstacles the cloth collides with: analytic shapes and (optionally) OpenVDB level sets."""

from .base import Collider
from .shapes import Capsule, Plane, Sphere

__all__ = ["Collider", "Capsule", "Plane", "Sphere"]
