"""Shared fixtures and the test tiers.

Tiers (markers, see pyproject.toml): ``unit``, ``physics``, ``parity``, ``pipeline``,
``houdini``. A test file's tier comes from :data:`TIERS` unless a test carries a tier marker
itself; ``pytest -m physics`` runs one tier. ``slow`` tests are left out of the default run of
``./scripts/test.sh`` and run by ``./scripts/test.sh --all`` (CI).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from pbdcloth import ClothSettings
from pbdcloth.cloth.mesh import grid

TIER_NAMES = ("unit", "physics", "parity", "pipeline", "houdini")

#: The tier of each test module (by file name without ``test_`` and ``.py``).
TIERS = {
    "layout": "unit",
    "portable": "unit",
    "mesh": "unit",
    "topology": "unit",
    "constraints": "unit",
    "solver": "physics",
    "xpbd": "physics",
    "fabric": "physics",
    "hierarchy": "physics",
    "strain_limit": "physics",
    "validation": "physics",
    "sdf": "physics",
    "meshcollider": "physics",
    "meshcollider_bits": "physics",
    "selfcollision": "physics",
    "springs": "physics",
    "warp": "parity",
    "warp_selfcollision": "parity",
    "warp_meshcollider": "parity",
    "parity": "parity",
    "io": "pipeline",
    "cli": "pipeline",
    "docs_cli": "pipeline",
    "postprocess": "pipeline",
    "pipeline": "pipeline",
    "fixtures": "pipeline",
    "preview": "pipeline",
    "polygons": "pipeline",
    "first_run": "pipeline",
    "readme": "pipeline",
    "hardening": "pipeline",
    "fuzz": "unit",
    "wedge": "pipeline",
    "attributes": "physics",
    "sewing": "physics",
    "attribute_sources": "pipeline",
    "attributes_contact": "physics",
    "tear": "physics",
    "tear_toolbox": "physics",
    "plasticity": "physics",
    "tear_caches": "pipeline",
    "energy": "physics",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(t) for t in TIER_NAMES):
            continue
        stem = item.path.stem.removeprefix("test_")
        tier = "houdini" if stem.startswith("houdini") or "hython" in item.path.parts else \
            TIERS.get(stem)
        if tier is None:
            raise pytest.UsageError(f"{item.path.name} has no tier: add it to TIERS in conftest.py")
        item.add_marker(getattr(pytest.mark, tier))


HAS_WARP = importlib.util.find_spec("warp") is not None


@dataclass(frozen=True)
class BackendCase:
    """One backend under test: its name, the settings that select it, and the precision to
    expect of it against closed forms (numpy: float64; Warp on the CPU: float32)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    eps: float = float(np.finfo(np.float64).eps)

    def cloth_settings(self, **changes: Any) -> ClothSettings:
        """ClothSettings with ``changes`` on this backend."""
        return ClothSettings(**{**changes, **self.settings})


NUMPY = BackendCase("numpy", {"backend": "numpy"})
WARP = BackendCase("warp", {"backend": "warp", "device": "cpu"},
                   eps=float(np.finfo(np.float32).eps))


@pytest.fixture(params=[NUMPY, pytest.param(WARP, marks=pytest.mark.skipif(
    not HAS_WARP, reason="warp-lang is not installed"))], ids=lambda case: case.name)
def backend(request: pytest.FixtureRequest) -> BackendCase:
    """Every backend: a test taking this fixture runs on numpy and on Warp (CPU)."""
    case: BackendCase = request.param
    return case


@pytest.fixture
def small_grid() -> tuple[np.ndarray, np.ndarray]:
    """A 12 x 10 flat grid, 1 m x 0.8 m, in the xz plane."""
    return grid(12, 10, 1.0, 0.8)


@pytest.fixture
def crumpled_grid() -> tuple[np.ndarray, np.ndarray]:
    """A 12 x 10 grid whose rest shape is crumpled (so every constraint family is active)."""
    pos, tris = grid(12, 10, 1.0, 0.8)
    rng = np.random.default_rng(7)
    return pos + rng.normal(scale=0.02, size=pos.shape), tris
