"""Tests in this folder need Houdini: they run under ``hython -m pytest tests/hython``.

Without a ``hou`` module (plain Python) nothing here is collected, so the main test run stays
Houdini-free; ``scripts/test_hython.sh`` runs them where Houdini is installed and licensed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

if importlib.util.find_spec("hou") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    libs = str(ROOT / "python3.11libs")
    if libs not in sys.path:
        sys.path.insert(0, libs)
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
