#!/usr/bin/env hython
"""Cook a SOP of a .hip file frame by frame and write each frame as geometry (batch, no UI).

    hython scripts/simulate.py SCENE.hip --node /obj/cloth/solver --frames 1 120 \\
        --out 'cache/cloth.$F4.bgeo.sc'

The pbdcloth asset library (``hda/pbdcloth.hda`` beside this script) is installed in the
session first unless its operators are known already, so a farm's hython without the Houdini
package loaded meets no unknown node types. Frames are cooked in increasing order by the
pipeline's run loop (:class:`pbdcloth.pipeline.run.Run`, one cook per frame), so a pbdcloth
solver steps once per frame. Each file is written to a temporary name beside its target and
renamed over it, so an interrupted run never leaves a half-written frame. Quote the ``--out``
pattern so the shell keeps ``$F4``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python3.11libs") not in sys.path:
    sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.houdini.hda import install_library  # noqa: E402
from pbdcloth.io.obj import frame_path  # noqa: E402
from pbdcloth.pipeline.run import Run  # noqa: E402

if TYPE_CHECKING:
    import hou

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


class CookStepper:
    """Advances a SOP by cooking it at each frame (``hou.setFrame``, then its geometry)."""

    def __init__(self, node: "hou.SopNode", node_path: str) -> None:
        self.node, self.node_path = node, node_path
        self.geometry: "hou.Geometry | None" = None

    def advance(self, frame: int) -> None:
        import hou

        hou.setFrame(frame)
        try:
            geo = self.node.geometry()
        except hou.Error as exc:
            raise RuntimeError(f"frame {frame}: {self.node_path} failed to cook: {exc}") from None
        errors = self.node.errors()
        if geo is None or errors:
            raise RuntimeError(f"frame {frame}: {self.node_path} failed to cook: "
                               f"{' '.join(errors)}")
        self.geometry = geo


class GeometryFiles:
    """Saves each cooked frame to ``frame_path(pattern, frame)`` atomically and prints a line."""

    def __init__(self, cook: CookStepper, pattern: str) -> None:
        self.cook, self.pattern = cook, pattern
        self.written: list[Path] = []
        self.began = time.perf_counter()

    def frame_done(self, frame: int, stats: object) -> None:
        geo = self.cook.geometry
        assert geo is not None
        target = frame_path(self.pattern, frame)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_beside(target)
        try:
            geo.saveToFile(str(tmp))
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        self.written.append(target)
        print(f"frame {frame}: {target} ({time.perf_counter() - self.began:.1f} s)", flush=True)

    def close(self) -> None:
        pass


def simulate(hip: str, node_path: str, start: int, end: int, pattern: str) -> list[Path]:
    """Load ``hip``, cook ``node_path`` at each frame, write each frame atomically."""
    import hou

    install_library(ROOT / "hda" / "pbdcloth.hda")
    hou.hipFile.load(hip, suppress_save_prompt=True, ignore_load_warnings=True)
    node = hou.node(node_path)
    if not isinstance(node, hou.SopNode):
        raise UsageError(f"{node_path} is not a SOP in {hip}" if node is not None
                         else f"no node {node_path} in {hip}")
    cook = CookStepper(node, node_path)
    files = GeometryFiles(cook, pattern)
    run = Run(cook, start - 1, [files])
    run.run_to(end)
    run.close()
    return files.written


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
