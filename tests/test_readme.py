"""The README's shell blocks run as written, in order, in a fresh copy of the repository.

Every ```sh block of README.md is either run or listed in :data:`NOT_RUN` with the reason (a
new block that is neither fails :func:`test_every_shell_block_is_run_or_excused`). The blocks
run one after another in one fresh copy (the tracked files of this checkout, copied into
``tmp_path``), with ``pbdcloth`` on PATH: a wrapper running this interpreter (the venv's) on the
copy's own package. Each command must exit 0 and write no traceback.

The default test runs a short variant (``--frames 3`` added to every ``pbdcloth demo`` and
``pbdcloth simulate``); the ``slow`` one runs the blocks exactly as written.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: First command of each shell block that is not run here, and why.
NOT_RUN = {
    "./scripts/demo.sh": "builds a second virtual environment (the two commands are checked "
                         "by CI itself: ./scripts/test.sh is what runs this test)",
    'PREFS="$(hython': "needs Houdini's hython",
    "hython scripts/make_example_hip.py": "needs Houdini's hython",
    "pbdcloth wedge": "names scene files and a cluster of the reader's (tests/test_wedge.py runs "
                      "wedges end to end)",
}


def shell_blocks(text: str) -> list[list[str]]:
    """The commands of each ```sh block: comments dropped, backslash continuations joined."""
    blocks = []
    for body in re.findall(r"^```sh\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        joined = body.replace("\\\n", " ")
        commands = []
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
            if line:
                commands.append(" ".join(line.split()))
        blocks.append(commands)
    return blocks


def _runnable() -> list[list[str]]:
    return [b for b in shell_blocks(README.read_text(encoding="utf-8"))
            if not any(b[0].startswith(k) for k in NOT_RUN)]


def test_every_shell_block_is_run_or_excused() -> None:
    blocks = shell_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    for block in _runnable():
        bad = [c for c in block if not c.startswith("pbdcloth ")]
        assert not bad, f"README shell block with commands this test cannot run: {bad}"
    firsts = [b[0] for b in blocks]
    for key in NOT_RUN:
        assert any(f.startswith(key) for f in firsts), f"NOT_RUN names a block that is gone: {key}"
    assert len(_runnable()) >= 2


def _fresh_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def _wrapper(bindir: Path, repo: Path) -> None:
    bindir.mkdir()
    script = bindir / "pbdcloth"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(repo / 'python3.11libs'))} "
                      f"exec {shlex.quote(sys.executable)} -m pbdcloth.cli \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _short(command: str) -> str:
    words = command.split()
    if words[1] in ("demo", "simulate"):
        return command + " --frames 3"
    return command


def _run_blocks(tmp_path: Path, short: bool) -> None:
    repo = _fresh_copy(tmp_path / "repo")
    _wrapper(tmp_path / "bin", repo)
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)
    for block in _runnable():
        for command in block:
            line = _short(command) if short else command
            done = subprocess.run(line, shell=True, cwd=repo, env=env, capture_output=True,
                                  text=True, timeout=900, check=False)
            assert done.returncode == 0 and "Traceback" not in done.stderr, (
                f"README command failed: {line}\n{done.stdout}\n{done.stderr}")
    out = repo / "out"
    for expected in ("drape/cloth.0001.obj", "drape/preview.png", "drape/plot.png",
                     "cloak/preview.png", "drape_usd/cloth.usd", "drape_usd/cloth.preview.png",
                     "drape_usd/cloth.preview.gif", "drape_usd/plot.png",
                     "drape_render/cloth.usd", "drape_render/cloth.preview.png"):
        assert (out / expected).is_file(), expected


def test_readme_shell_blocks_run_in_a_fresh_copy_short(tmp_path: Path) -> None:
    pytest.importorskip("pxr")
    _run_blocks(tmp_path, short=True)


@pytest.mark.slow
def test_readme_shell_blocks_run_in_a_fresh_copy_as_written(tmp_path: Path) -> None:
    pytest.importorskip("pxr")
    _run_blocks(tmp_path, short=False)


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` is a pipe inside a cell)."""
    return re.split(r"(?<!\\)\|", row.strip().strip("|"))


@pytest.mark.parametrize("doc", ["README.md", "docs/parameters.md"])
def test_every_markdown_table_row_has_the_headers_cells(doc: str) -> None:
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    checked = 0
    for k, line in enumerate(lines):
        if k + 1 < len(lines) and line.startswith("|") and re.match(r"^\|(-+\|)+$",
                                                                      lines[k + 1].strip()):
            width = len(_cells(line))
            j = k + 2
            while j < len(lines) and lines[j].startswith("|"):
                assert len(_cells(lines[j])) == width, f"{doc}:{j + 1}: {lines[j][:80]}"
                j += 1
                checked += 1
    assert checked > 20
