"""Docs and command-line options are generated from the settings declaration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pbdcloth.cli.main import build_parser, main
from pbdcloth.cli.options import settings_overrides
from pbdcloth.settings import CLOTH_SETTINGS, ClothSettings

ROOT = Path(__file__).resolve().parents[1]


def test_readme_settings_reference_is_current() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for decl in CLOTH_SETTINGS:
        assert f"| `{decl.name}` |" in readme


def test_every_setting_is_a_cli_option_with_unit_range_and_default() -> None:
    parser = build_parser()
    demo = parser._subparsers._group_actions[0].choices["demo"]  # type: ignore[union-attr]
    helps = {a.dest: a.help for a in demo._actions}
    for decl in CLOTH_SETTINGS:
        text = helps[f"setting_{decl.name}"]
        assert decl.help.replace("%", "%%")[:30] in text
        if decl.unit:
            assert f"unit {decl.unit}" in text
        assert "default" in text


def test_cli_options_become_validated_settings() -> None:
    parser = build_parser()
    args = parser.parse_args(["demo", "--substeps", "7", "--gravity", "0", "-1", "0",
                              "--tethers", "--model", "xpbd"])
    s = ClothSettings().replace(**settings_overrides(args))
    assert (s.substeps, s.gravity, s.tethers, s.model) == (7, (0.0, -1.0, 0.0), True, "xpbd")


def test_out_of_range_cli_setting_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--frames", "1", "--substeps", "0", "--quiet", "--out", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert "setting 'substeps' = 0 is out of range [1, 1000]" in err


def test_demo_writes_frames_log_summary_and_picture(tmp_path: Path) -> None:
    assert main(["demo", "--frames", "3", "--quiet", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("cloth.*.obj")) == [
        "cloth.0001.obj", "cloth.0002.obj", "cloth.0003.obj"]
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 3
    assert (tmp_path / "summary.json").is_file()
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(tmp_path / "preview.png").convert("L"))
    assert pixels.std() > 5  # not blank
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary files left behind
