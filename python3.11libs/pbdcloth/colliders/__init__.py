"""Obstacles the cloth collides with: analytic shapes, deforming triangle meshes and
(optionally) OpenVDB level sets."""

from .base import ClothContactCollider, Collider, SolverInputError
from .mesh import MeshCollider, MeshColliderError
from .rigid import RigidTransformError
from .sdf import SdfCollider, SdfError
from .sdf_sequence import SdfSequence
from .shapes import Capsule, Plane, Sphere

__all__ = [
    "Capsule",
    "ClothContactCollider",
    "Collider",
    "MeshCollider",
    "MeshColliderError",
    "Plane",
    "RigidTransformError",
    "SdfCollider",
    "SdfError",
    "SdfSequence",
    "SolverInputError",
    "Sphere",
]
