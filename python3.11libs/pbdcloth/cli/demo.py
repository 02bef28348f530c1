"""``pbdcloth demo``: run a built-in scene (:data:`pbdcloth.scenes.cloth.SCENES`).

Cloth scenes run through :func:`pbdcloth.pipeline.run.run_scene` (an OBJ per frame, log.jsonl,
summary.json, preview.png), numbered as ``simulate`` numbers frames: ``cloth.0001.obj`` is the
start state, each later frame one step of 1 / fps; the spring scene through
:func:`pbdcloth.pipeline.springs.run_spring_scene`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..settings import SettingsError
from .options import add_settings_arguments, apply_overrides, settings_overrides


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..pipeline.run import START_FRAME, run_scene
    from ..pipeline.springs import run_spring_scene
    from ..preview import contact_sheet, frame_strain, parse_view
    from ..scenes.cloth import SCENES
    from ..scenes.springs import SpringScene

    parse_view(args.view)
    if args.frames is not None and args.frames < 1:
        raise SettingsError(f"--frames must be a whole number >= 1, got {args.frames}")
    scene = SCENES[args.scene]()
    out = Path(args.out) if args.out else Path("out") / args.scene
    if isinstance(scene, SpringScene):  # spring chains, not cloth: no cloth settings apply
        given = settings_overrides(args)
        if given:
            raise SettingsError(f"cloth settings do not apply to scene '{args.scene}': "
                                f"{', '.join(sorted(given))}")
        for line in run_spring_scene(scene, out, frames=args.frames, progress=not args.quiet):
            print(line)
        return 0
    scene.settings = apply_overrides(scene.settings, args)
    frames = args.frames if args.frames is not None else scene.frames
    if frames < 1:
        raise ValueError(f"--frames must be at least 1, got {frames}")
    scene.frames = frames - 1  # frame 1 is the start state; each later frame one step
    out.mkdir(parents=True, exist_ok=True)
    print(f"pbdcloth demo '{scene.name}': {scene.description}")
    summary, record = run_scene(scene, out, progress=not args.quiet)
    strain = frame_strain(record.frames, record.triangles, rest=record.rest)
    picture = contact_sheet(
        out / "preview.png", record.frames, record.triangles, frame_numbers=record.numbers,
        strain=strain, colliders=record.shapes, pins=scene.pinned,
        title=f"pbdcloth {scene.name}: frames {START_FRAME}-{record.numbers[-1]}",
        follow=scene.follow_camera, view=args.view)
    for line in summary.lines():
        print(line)
    print(f"wrote {len(summary.outputs)} OBJ frames, log.jsonl, summary.json and {picture.name} "
          f"to {out}/")
    return 0


def add_demo(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register ``pbdcloth demo``."""
    from ..scenes.cloth import SCENES

    p = sub.add_parser(
        "demo", help="run a built-in scene and write OBJ frames and a preview picture",
        description="Run a built-in scene. Writes an OBJ per frame, log.jsonl, summary.json and "
        "preview.png (a contact sheet) into --out (default out/SCENE).",
    )
    p.add_argument("--scene", choices=sorted(SCENES), default="drape",
                   help="which built-in scene (default drape)")
    p.add_argument("--out", help="output folder (default out/SCENE)")
    p.add_argument("--frames", type=int, help="number of frames written, frame 1 being the "
                   "start state and each later frame one step (default: the scene's)")
    p.add_argument("--view", default="-60,20", metavar="VIEW",
                   help="camera of preview.png: front, side, top, or AZIMUTH,ELEVATION in "
                   "degrees (default -60,20)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_settings_arguments(p)
    p.set_defaults(func=_cmd_demo)
