"""pbdcloth: position-based cloth (PBD and XPBD) and spring-bone simulation.

The core is headless numpy; the Houdini layer lives in :mod:`pbdcloth.houdini`.
"""

from .backends.base import Control, FrameStats
from .cloth.mesh import ClothMesh, MeshError
from .cloth.state import ClothState
from .colliders import Capsule, Collider, Plane, SdfCollider, SdfError, Sphere
from .scenes.body import Body, body_colliders
from .selfcollision.tuning import SelfCollisionTuning
from .settings import CLOTH_SETTINGS, BackendChoice, ClothSettings, Model, SettingsError
from .solver import ClothSolver, SimulationDiverged, SolverInputError
from .springs import (
    SPRING_SETTINGS,
    SpringChain,
    SpringChainError,
    SpringControl,
    SpringModel,
    SpringSettings,
    SpringSolver,
    SpringState,
)
from .version import __version__  # noqa: E402

__all__ = [
    "BackendChoice",
    "Body",
    "CLOTH_SETTINGS",
    "Capsule",
    "ClothMesh",
    "ClothSettings",
    "ClothSolver",
    "ClothState",
    "Collider",
    "Control",
    "FrameStats",
    "MeshError",
    "Model",
    "Plane",
    "SdfCollider",
    "SdfError",
    "SelfCollisionTuning",
    "SettingsError",
    "SimulationDiverged",
    "SolverInputError",
    "Sphere",
    "SPRING_SETTINGS",
    "SpringChain",
    "SpringChainError",
    "SpringControl",
    "SpringModel",
    "SpringSettings",
    "SpringSolver",
    "SpringState",
    "__version__",
    "body_colliders",
]

# Scene files, streamed caches and post-processing.
from .pipeline.postprocess import taubin_smooth, thicken  # noqa: E402
from .pipeline.scenefile import SceneFileError, load_scene  # noqa: E402
from .pipeline.simulate import simulate  # noqa: E402

__all__ += ["SceneFileError", "load_scene", "simulate", "taubin_smooth", "thicken"]
