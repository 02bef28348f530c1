"""mypy with the ``types-houdini`` stubs passes on the Houdini layer and the hython scripts.

Every ``hou`` call is checked against Houdini 21's API (names, arguments, return types), and no
line of that code silences a ``hou`` call with ``type: ignore``. A negative control proves the
stubs are really in use (a misspelt method fails), since with ``ignore_missing_imports`` a
missing stub package would silently make ``hou`` untyped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = [ROOT / "python3.11libs" / "pbdcloth" / "houdini",
           *sorted((ROOT / "scripts").glob("*.py")),
           *sorted((ROOT / "tests" / "hython").glob("test_*.py"))]

pytest.importorskip("mypy", reason="mypy not installed (pip install 'pbdcloth[dev]')")


def _stubs_installed() -> bool:
    return any((Path(p) / "hou-stubs" / "__init__.pyi").is_file() for p in sys.path if p)


def _mypy(*paths: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary",
         "--disallow-untyped-defs", "--warn-unused-ignores", "--python-version", "3.11",
         "--cache-dir", str(ROOT / ".mypy_cache" / "houdini-layer"),
         *map(str, paths)],
        cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
        # This checkout's package first, before any installed copy of pbdcloth.
        env={**os.environ, "MYPYPATH": str(ROOT / "python3.11libs")})


@pytest.fixture(scope="module")
def stubs() -> None:
    if not _stubs_installed():
        pytest.skip("types-houdini not installed (pip install 'pbdcloth[dev]')")


def test_mypy_passes_on_the_houdini_layer_and_scripts(stubs: None) -> None:
    proc = _mypy(*CHECKED)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_type_ignore_on_hou_calls() -> None:
    files = [p for c in CHECKED for p in ([c] if c.is_file() else sorted(c.rglob("*.py")))]
    assert len(files) >= 8
    offending = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"#\s*type:\s*ignore", line) and "hou" in line.split("#")[0]:
                offending.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offending, "\n".join(offending)


def test_mypy_catches_a_wrong_hou_call(stubs: None, tmp_path: Path) -> None:
    """Negative control: the stubs are active, so invented API and wrong arguments fail."""
    bad = tmp_path / "bad_cook.py"
    bad.write_text(
        "import hou\n\n\n"
        "def cook(node: hou.SopNode) -> None:\n"
        "    geo = node.geometry()\n"
        "    assert geo is not None\n"
        "    geo.pointFloatAttribValuesAsBytes('P')\n"
        "    geo.findPointAttrib(attrib_name='P')\n",
        encoding="utf-8")
    proc = _mypy(bad, cwd=tmp_path)
    assert proc.returncode != 0
    assert "pointFloatAttribValuesAsBytes" in proc.stdout
    assert "attrib_name" in proc.stdout
