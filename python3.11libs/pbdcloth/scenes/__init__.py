"""Built-in scenes: recipes of mesh, pins, settings, colliders and animation (no run loops)."""

from ..cloth.mesh import grid
from .cloth import SCENES, Scene, cloak_scene, drape_scene, fold_scene, hanging_scene, twist_scene
from .sewing import sewing_scene

SCENES["sewing"] = sewing_scene

__all__ = ["SCENES", "Scene", "cloak_scene", "drape_scene", "fold_scene", "grid", "hanging_scene",
           "sewing_scene", "twist_scene"]
