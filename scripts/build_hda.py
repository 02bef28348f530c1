#!/usr/bin/env python3
"""Regenerate the expanded asset library ``hda/pbdcloth.hda`` and ``docs/parameters.md``.

    python scripts/build_hda.py           # write them
    python scripts/build_hda.py --check   # exit 1, listing the differences, if they are stale

Both are generated from the settings declaration (``pbdcloth/settings.py``) and the operator
declarations (``pbdcloth/houdini/operators.py``); run this after changing either.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.atomic import atomic_write  # noqa: E402
from pbdcloth.houdini.hda import LIBRARY_NAME, library_files, parameters_markdown  # noqa: E402

HDA_DIR = ROOT / "hda" / LIBRARY_NAME
DOCS = ROOT / "docs" / "parameters.md"


def expected_files() -> dict[Path, str]:
    """Every generated file (absolute path -> text)."""
    files = {HDA_DIR / rel: text for rel, text in library_files().items()}
    files[DOCS] = parameters_markdown()
    return files


def differences(expected: dict[Path, str]) -> list[str]:
    """What differs on disk from ``expected``: changed, missing and stray library files."""
    out = []
    for path, text in sorted(expected.items()):
        if not path.is_file():
            out.append(f"missing: {path.relative_to(ROOT)}")
        elif path.read_bytes() != text.encode("utf-8"):
            out.append(f"changed: {path.relative_to(ROOT)}")
    if HDA_DIR.is_dir():
        for path in sorted(p for p in HDA_DIR.rglob("*") if p.is_file()):
            if path not in expected:
                out.append(f"stray:   {path.relative_to(ROOT)}")
    return out


def write(expected: dict[Path, str]) -> None:
    for path, text in sorted(expected.items()):
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            with atomic_write(path, "wb") as handle:
                handle.write(text.encode("utf-8"))
    for path in sorted(p for p in HDA_DIR.rglob("*") if p.is_file()):
        if path not in expected:
            path.unlink()
    for folder in sorted((p for p in HDA_DIR.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare; exit 1 when the committed files are stale")
    args = parser.parse_args(argv)
    expected = expected_files()
    diff = differences(expected)
    if args.check:
        for line in diff:
            print(line)
        if diff:
            print("the asset library is stale: run `python scripts/build_hda.py`",
                  file=sys.stderr)
        return 1 if diff else 0
    write(expected)
    print(f"wrote {len(expected)} files ({len(diff)} changed) under hda/ and docs/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
