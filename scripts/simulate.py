#!/usr/bin/env hython
"""Cook a SOP of a .hip file frame by frame and write each frame as geometry (batch, no UI).

    hython scripts/simulate.py SCENE.hip --node /obj/cloth/solver --frames 1 120 \\
        --out 'cache/cloth.$F4.bgeo.sc'

Frames are cooked in increasing order, so a pbdcloth solver steps once per frame. Each file is
written to a temporary name beside its target and renamed over it, so an interrupted run never
leaves a half-written frame. Quote the ``--out`` pattern so the shell keeps ``$F4``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python3.11libs") not in sys.path:
    sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.io.obj import frame_path  # noqa: E402

FRAME_TOKENS = ("$F4", "$F3", "$F2", "$F", "####", "{frame")


class UsageError(ValueError):
    """Bad command-line arguments."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hip", help="the .hip file to load")
    parser.add_argument("--node", required=True,
                        help="path of the SOP to cook, e.g. /obj/geo1/solver")
    parser.add_argument("--frames", nargs=2, type=int, metavar=("START", "END"), required=True,
                        help="first and last frame (inclusive)")
    parser.add_argument("--out", required=True,
                        help="output pattern with a frame token ($F4, $F, ####), e.g. "
                        "'cache/cloth.$F4.bgeo.sc'; the extension picks the format")
    args = parser.parse_args(argv)
    start, end = args.frames
    if end < start:
        raise UsageError(f"--frames: the last frame {end} is before the first {start}")
    if not any(token in args.out for token in FRAME_TOKENS):
        raise UsageError(f"--out {args.out!r} has no frame token ($F4, $F, ####): every frame "
                         "would overwrite the same file")
    if not Path(args.hip).is_file():
        raise UsageError(f"no such .hip file: {args.hip}")
    return args


def temporary_beside(target: Path) -> Path:
    """A temporary name in the target's folder that keeps its full extension (``.bgeo.sc``)."""
    return target.with_name(f".partial-{os.getpid()}-{target.name}")


def simulate(hip: str, node_path: str, start: int, end: int, pattern: str) -> list[Path]:
    """Load ``hip``, cook ``node_path`` at each frame, write each frame atomically."""
    import hou

    hou.hipFile.load(hip, suppress_save_prompt=True, ignore_load_warnings=True)
    node = hou.node(node_path)
    if not isinstance(node, hou.SopNode):
        raise UsageError(f"{node_path} is not a SOP in {hip}" if node is not None
                         else f"no node {node_path} in {hip}")
    written = []
    began = time.perf_counter()
    for frame in range(start, end + 1):
        hou.setFrame(frame)
        try:
            geo = node.geometry()
        except hou.Error as exc:
            raise RuntimeError(f"frame {frame}: {node_path} failed to cook: {exc}") from None
        errors = node.errors()
        if geo is None or errors:
            raise RuntimeError(f"frame {frame}: {node_path} failed to cook: {' '.join(errors)}")
        target = frame_path(pattern, frame)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_beside(target)
        try:
            geo.saveToFile(str(tmp))
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        written.append(target)
        print(f"frame {frame}: {target} ({time.perf_counter() - began:.1f} s)", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        simulate(args.hip, args.node, args.frames[0], args.frames[1], args.out)
    except (UsageError, RuntimeError) as exc:
        print(f"simulate.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
