"""Shared fixtures for the core tests."""

from __future__ import annotations

import numpy as np
import pytest

from pbdcloth.scenes.cloth import grid


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
