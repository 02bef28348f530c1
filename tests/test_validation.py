"""The validation report (scripts/validation.py) regenerates docs/validation.md: every row within
its tolerance, and the committed page up to date."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


def _rows(text: str) -> list[str]:
    """The page without its Warp row (absent where warp-lang is not installed)."""
    return [line for line in text.splitlines() if "numpy vs Warp" not in line]


@pytest.mark.slow
def test_validation_report_rows_pass_and_the_page_is_current(tmp_path: Path) -> None:
    import validation

    assert validation.main(["--out", str(tmp_path)]) == 0
    page = (tmp_path / "validation.md").read_text()
    assert "**NO**" not in page
    committed = (ROOT / "docs" / "validation.md").read_text()
    assert _rows(page) == _rows(committed), "docs/validation.md is stale: run scripts/validation.py"
    for name in ("validation_convergence.png", "validation_catenary.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_a_failing_row_is_reported() -> None:
    import validation

    row = validation.Row("x", "0", "1", deviation=2.0, tolerance=1.0, why="")
    assert not row.ok
    assert "**NO**" in validation.page([row], [], [])
