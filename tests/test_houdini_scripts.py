"""The hython batch script's command line and file naming (the parts that need no Houdini)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import simulate  # noqa: E402


def test_arguments_are_parsed_and_checked(tmp_path: Path) -> None:
    hip = tmp_path / "scene.hip"
    hip.write_text("")
    args = simulate.parse_args([str(hip), "--node", "/obj/geo1/solver", "--frames", "1", "120",
                                "--out", "cache/cloth.$F4.bgeo.sc"])
    assert (args.node, args.frames, args.out) == ("/obj/geo1/solver", [1, 120],
                                                  "cache/cloth.$F4.bgeo.sc")
    with pytest.raises(simulate.UsageError, match="no frame token"):
        simulate.parse_args([str(hip), "--node", "/n", "--frames", "1", "2", "--out", "a.bgeo"])
    with pytest.raises(simulate.UsageError, match="before the first"):
        simulate.parse_args([str(hip), "--node", "/n", "--frames", "5", "2", "--out", "$F.bgeo"])
    with pytest.raises(simulate.UsageError, match="no such .hip"):
        simulate.parse_args([str(tmp_path / "missing.hip"), "--node", "/n", "--frames", "1",
                             "2", "--out", "$F.bgeo"])


def test_temporary_file_keeps_the_full_extension() -> None:
    """Houdini picks the format from the extension: the temporary must end in .bgeo.sc too."""
    tmp = simulate.temporary_beside(Path("cache/cloth.0007.bgeo.sc"))
    assert tmp.parent == Path("cache")
    assert tmp.name.endswith("cloth.0007.bgeo.sc") and tmp.name.startswith(".partial-")


def test_usage_errors_exit_with_status_2(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate.main([str(tmp_path / "none.hip"), "--node", "/n", "--frames", "1", "2",
                          "--out", "x.$F4.bgeo"]) == 2
    assert "no such .hip file" in capsys.readouterr().err


def test_simulate_installs_the_asset_library_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A farm's hython without the package: the library is installed (the user's OPlibraries
    file untouched) before the .hip is loaded; once the types are known, nothing is installed."""
    import hou_double
    from pbdcloth.houdini import hda
    from pbdcloth.houdini.operators import OPERATORS

    monkeypatch.setitem(sys.modules, "hou", hou_double)
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    library = ROOT / "hda" / "pbdcloth.hda"
    assert hda.library_path() == library or "PBDCLOTH_ROOT" in __import__("os").environ
    hda.install_library(library)
    assert hou_double._state.installs == [(str(library), False)]
    assert {op.type_name for op in OPERATORS} <= hou_double._state.node_types
    hda.install_library(library)
    assert len(hou_double._state.installs) == 1
    monkeypatch.setattr(hou_double, "_state", hou_double._State())
    with pytest.raises(FileNotFoundError, match="no pbdcloth asset library"):
        hda.install_library(ROOT / "missing.hda")
    source = (ROOT / "scripts" / "simulate.py").read_text(encoding="utf-8")
    body = source[source.index("def simulate("):]
    assert body.index("install_library(") < body.index("hou.hipFile.load(")
