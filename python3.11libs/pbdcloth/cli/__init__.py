"""The ``pbdcloth`` command."""

from .main import main

__all__ = ["main"]
