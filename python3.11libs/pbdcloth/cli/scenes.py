"""Sub-commands for scene files and caches: simulate, validate, preview, plot, postprocess.

Each ``_add_*`` function registers one sub-command (:data:`pbdcloth.cli.main.COMMANDS`); the work
is done by the core modules (:mod:`.scenefile`, :mod:`.simulate`, :mod:`.preview`,
:mod:`.postprocess`), so everything here is argument handling and printing.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .options import add_settings_arguments, settings_overrides

EXIT_OK = 0
EXIT_PROBLEMS = 2
EXIT_INTERRUPTED = 130

Sub = argparse._SubParsersAction


def _parser(sub: Sub, name: str, summary: str, overview: str, examples: str = ""
            ) -> argparse.ArgumentParser:
    """A sub-command parser whose help reads like a Houdini node's page: a one-line summary,
    an overview, the parameters, then examples."""
    epilog = "Examples:\n" + textwrap.indent(textwrap.dedent(examples).strip(), "  ") \
        if examples else None
    short = summary[0].lower() + summary[1:].rstrip(".")
    return sub.add_parser(
        name, help=short,
        description=f"{summary}\n\n{textwrap.fill(' '.join(overview.split()), 96)}",
        epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)


def _scene_overrides(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    over = {"out": getattr(args, "out", None), "format": getattr(args, "format", None),
            "frames": getattr(args, "frames", None)}
    return over, settings_overrides(args)


def _add_scene_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("scene", help="Scene file (TOML): mesh, pins, colliders, settings, frames, "
                   "output. See examples/*.toml.")
    out = p.add_argument_group("output")
    out.add_argument("--out", metavar="DIR",
                     help="Output folder; overrides [output] dir (default out/SCENE).")
    out.add_argument("--format", choices=("usd", "geo", "obj"),
                     help="Cache format; overrides [output] format. usd: one DIR/NAME.usd with "
                     "time-sampled points; geo: Houdini JSON geometry DIR/NAME.$F4.geo with "
                     "point attributes v, w, strain; obj: DIR/NAME.$F4.obj. Frame numbers have "
                     "4 digits and start at the scene's start frame.")
    out.add_argument("--frames", type=int, metavar="N",
                     help="Number of frames written, the first being the start state (default: "
                     "[scene] frames).")
    add_settings_arguments(p)


# --- validate ----------------------------------------------------------------------------
def _cmd_validate(args: argparse.Namespace) -> int:
    from ..pipeline.scenefile import SceneFileError, load_scene

    over, settings = _scene_overrides(args)
    try:
        spec = load_scene(args.scene, over, settings)
    except SceneFileError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"{args.scene}: ok")
    for line in spec.summary_lines():
        print(f"  {line}")
    return EXIT_OK


def _add_validate(sub: Sub) -> None:
    p = _parser(
        sub, "validate", "Check a scene file without simulating it.",
        """Reads the scene file and checks everything a simulation would need: TOML syntax,
        unknown or misspelt keys, kinds and ranges of every value (settings against their
        declared ranges and units), that mesh and collider files exist and load, that the mesh
        is a valid cloth (no zero-area or non-manifold triangles), that pin indices, boxes and
        groups select points, and that the output format is available. Every problem is
        reported at once with its key and value; the exit code is 2 when there is any, 0 when
        the scene is ready.""",
        """
        pbdcloth validate examples/drape.toml
        pbdcloth validate shot.toml --substeps 40 --format usd
        """)
    _add_scene_options(p)
    p.set_defaults(func=_cmd_validate)


# --- simulate ----------------------------------------------------------------------------
def _cmd_simulate(args: argparse.Namespace) -> int:
    from ..pipeline.checkpoint import CheckpointError
    from ..pipeline.postprocess import PostprocessOptions
    from ..pipeline.scenefile import SceneFileError, load_scene
    from ..pipeline.simulate import checkpoint_path, simulate, summary_lines

    over, settings = _scene_overrides(args)
    try:
        spec = load_scene(args.scene, over, settings)
    except SceneFileError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_PROBLEMS
    if args.smooth is not None or args.shell_thickness is not None:
        post = spec.postprocess
        spec.postprocess = PostprocessOptions(
            smooth_iterations=args.smooth if args.smooth is not None else post.smooth_iterations,
            thickness=(args.shell_thickness if args.shell_thickness is not None
                       else post.thickness),
            lam=post.lam, mu=post.mu, centred=post.centred)
        if spec.postprocess.smooth_iterations < 0 or spec.postprocess.thickness < 0:
            print("pbdcloth simulate: --smooth and --shell-thickness must be >= 0",
                  file=sys.stderr)
            return EXIT_PROBLEMS
    if not args.quiet:
        for line in spec.summary_lines():
            print(line)
        if args.resume and not checkpoint_path(spec).is_file():
            print(f"no checkpoint in {spec.output.dir}: starting at frame {spec.start_frame}")
    try:
        result = simulate(spec, resume=args.resume, progress=not args.quiet)
    except CheckpointError as exc:
        print(f"pbdcloth simulate: error: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        print(f"\ninterrupted; the frames on disk are complete. Continue with:\n"
              f"  pbdcloth simulate {args.scene} --resume"
              + (f" --out {args.out}" if args.out else "")
              + (f" --format {args.format}" if args.format else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    if not args.quiet:
        if result.frames_simulated == 0 and result.resumed_from is not None:
            print(f"already complete up to frame {result.last_frame}: nothing to do")
        for line in summary_lines(result.summary):
            print(line)
        print(f"wrote {spec.output.dir}/ "
              f"({', '.join(sorted({p.name for p in result.outputs[:1]}) or ['no new frames'])}"
              f"{' ...' if len(result.outputs) > 1 else ''}, log.jsonl, summary.json)")
    return EXIT_OK


def _add_simulate(sub: Sub) -> None:
    p = _parser(
        sub, "simulate", "Simulate a scene file into a cache (USD, Houdini .geo or OBJ).",
        """Runs the cloth of a scene file frame by frame and streams each frame into the cache
        as soon as it is solved. Frame START (the scene's start_frame, default 1) is the cloth
        at rest; each later frame is one step of 1/fps seconds. Every file is written to a
        temporary name and renamed into place, so an interrupted or killed run leaves complete
        frames only, and after each complete frame the solver state is saved to
        DIR/NAME.checkpoint.npz. --resume continues from that checkpoint with results
        bit-identical to an uninterrupted run (it may also extend a finished run with a larger
        --frames). The progress bar shows frames per second and the time left; DIR/log.jsonl
        gets one JSON line per frame (strain, kinetic energy, contacts, ms) for `pbdcloth
        plot`, and DIR/summary.json the totals. Solver settings on the command line override
        the scene file's [settings].""",
        """
        pbdcloth simulate examples/drape.toml --out out/drape --format usd --frames 12
        pbdcloth simulate examples/drape.toml --format geo --substeps 40 --friction 0.5
        pbdcloth simulate shot.toml --resume          # after a crash or Ctrl-C
        pbdcloth simulate shot.toml --smooth 10 --shell-thickness 0.004
        """)
    _add_scene_options(p)
    p.add_argument("--resume", action="store_true",
                   help="Continue from the last complete frame in the output folder (its "
                   "checkpoint); starts over when there is none.")
    p.add_argument("--quiet", action="store_true", help="No progress bar or summary.")
    post = p.add_argument_group("post-processing (render-ready cache)")
    post.add_argument("--smooth", type=int, metavar="N",
                      help="Taubin smoothing iterations applied to each written frame "
                      "(volume-preserving; 0 = off); overrides [postprocess] smooth_iterations.")
    post.add_argument("--shell-thickness", type=float, metavar="W",
                      help="Write a closed shell W metres thick instead of the sheet (unit m; "
                      "0 = off); overrides [postprocess] shell_thickness. (--thickness is the "
                      "collision distance.)")
    p.set_defaults(func=_cmd_simulate)


# --- preview -----------------------------------------------------------------------------
def _cmd_preview(args: argparse.Namespace) -> int:
    from ..io.cache import find_cache, read_cache
    from ..preview import contact_sheet, frame_strain, parse_view, render_frames, write_movie

    parse_view(args.view)
    _check_movie(args.movie)
    kind, where, name = find_cache(args.cache)
    folder = where.parent if kind == "usd" else where
    cache = read_cache(args.cache)
    shapes, pins = None, None
    if args.scene:
        shapes, pins, points = _scene_shapes(args.scene, cache.frames)
        if points != cache.positions[0].shape[0]:
            pins = None  # a post-processed shell: its points are not the scene's
    tris = cache.triangles if cache.frame_triangles is None else cache.frame_triangles
    strain = frame_strain(cache.positions, tris, rest=_frame_rest(cache))
    vmax = args.strain_max if args.strain_max is not None else max(
        float(s.max()) for s in strain)
    png = Path(args.out) if args.out else folder / f"{name}.preview.png"
    title = (f"{name}: frames {cache.frames[0]}-{cache.frames[-1]}, max edge strain "
             f"{100 * max(float(s.max()) for s in strain):.2f} %")
    sheet = contact_sheet(png, cache.positions, tris, frame_numbers=cache.frames,
                          strain=strain, colliders=shapes, pins=pins, panels=args.panels,
                          title=title, view=args.view, vmax=vmax, follow=args.follow)
    print(f"wrote {sheet}" + ("" if args.scene else
                              " (cloth only: give --scene FILE.toml to draw its colliders)"))
    movie = args.movie
    if movie is None and not args.no_movie:
        movie = str(folder / f"{name}.preview.gif")
    if movie:
        picks = list(range(0, len(cache.positions), max(args.every, 1)))
        images = render_frames([cache.positions[i] for i in picks],
                               [cache.triangles_of(i) for i in picks],
                               [strain[i] for i in picks], [cache.frames[i] for i in picks],
                               size=args.size, vmax=vmax, title=name,
                               colliders=[shapes[i] for i in picks] if shapes else None,
                               pins=pins, view=args.view, follow=args.follow)
        fps = args.fps or (cache.fps or 24.0) / max(args.every, 1)
        print(f"wrote {write_movie(movie, images, fps)}")
    return EXIT_OK


def _frame_rest(cache: Any) -> list[Any]:
    """Each frame's rest positions: its ``rest`` attribute (written once a cloth tears), else
    the first frame when the point count is the same, else the frame itself (no strain known:
    an OBJ cache of a torn cloth)."""
    import numpy as np

    first = cache.positions[0]
    out = []
    for k, pos in enumerate(cache.positions):
        rest = cache.attributes[k].get("rest") if cache.attributes else None
        if rest is not None and np.shape(rest) == pos.shape:
            out.append(np.asarray(rest, dtype=np.float64))
        else:
            out.append(first if pos.shape == first.shape else pos)
    return out


def _scene_shapes(scene_file: str, frames: list[int]) -> tuple[list[list[Any]], Any, int]:
    """The colliders of a scene file at each cache frame's pose (its keys replayed), its pins
    and its number of points, for pictures of the scene's cache."""
    from ..pipeline.scenefile import SceneFileError, load_scene
    from ..preview import shapes_of

    try:
        spec = load_scene(scene_file)
    except SceneFileError as exc:
        raise ValueError(f"--scene {scene_file}: {exc}") from None
    colliders = [c.build(spec.start_frame) for c in spec.colliders]
    shapes = []
    for frame in frames:
        for c_spec, collider in zip(spec.colliders, colliders):
            if c_spec.motion is not None:
                c_spec.move(collider, frame)
                collider.end_frame()
        shapes.append(shapes_of(colliders))
    return shapes, spec.pinned, int(spec.positions.shape[0])


def _check_movie(movie: str | None) -> None:
    """Refuse a movie that cannot be written before any frame is rendered."""
    import importlib.util

    if movie is None:
        return
    suffix = Path(movie).suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise ValueError(f"--movie must be a .gif or .mp4 file, got {movie!r}")
    need = ["imageio"] + (["imageio_ffmpeg"] if suffix == ".mp4" else [])
    missing = [m for m in need if importlib.util.find_spec(m) is None]
    if missing:
        raise ValueError(f"--movie {movie} needs {' and '.join(missing)} "
                         f"(pip install {' '.join(m.replace('_', '-') for m in missing)}); "
                         "or write a .gif, or pass --no-movie")


def _add_preview(sub: Sub) -> None:
    p = _parser(
        sub, "preview", "Render a cache to a contact sheet (PNG) and a movie (GIF or MP4).",
        """Reads a cache (NAME.usd, a .geo or OBJ sequence, or a folder holding one cache) and
        draws evenly spaced frames side by side into a PNG contact sheet, and every frame into
        an animated GIF (or an MP4 when imageio-ffmpeg is installed), the cloth coloured by
        strain with a colour bar in %. Strain is the max edge strain relative to rest (each
        point shows the largest L / L0 - 1 of its edges; a frame's title its largest), measured
        against the first frame, which a pbdcloth cache holds at rest: the same number as the
        run's log and summary. With --scene (the scene file the cache was made from) the
        colliders are drawn at their pose in each frame (ground as a grid, spheres, capsules,
        mesh and VDB colliders as their surface) and the pins are marked.""",
        """
        pbdcloth preview out/drape_usd/cloth.usd --scene examples/drape.toml
        pbdcloth preview out/drape --movie out/drape/drape.mp4 --every 2 --view side
        pbdcloth preview 'out/drape/cloth.$F4.geo' --no-movie --panels 12 --view 30,45
        """)
    p.add_argument("cache", help="NAME.usd, DIR/NAME.$F4.geo (or .obj), one frame of a "
                   "sequence, or a folder holding one cache.")
    p.add_argument("--out", metavar="PNG",
                   help="Contact sheet file (default: next to the cache, NAME.preview.png).")
    p.add_argument("--movie", metavar="FILE",
                   help="Movie file, .gif or .mp4 (default: NAME.preview.gif next to the cache).")
    p.add_argument("--no-movie", action="store_true", help="Only the contact sheet.")
    p.add_argument("--panels", type=int, default=8, metavar="N",
                   help="Frames on the contact sheet (default 8).")
    p.add_argument("--every", type=int, default=1, metavar="N",
                   help="Movie: every N-th frame (default 1).")
    p.add_argument("--fps", type=float, metavar="X",
                   help="Movie frames per second (default: the cache's fps / every).")
    p.add_argument("--size", type=int, default=480, metavar="PIXELS",
                   help="Movie frame width and height in pixels (default 480).")
    p.add_argument("--scene", metavar="TOML",
                   help="The scene file of the cache: draw its colliders at each frame's pose "
                   "and mark its pins.")
    p.add_argument("--view", default="-60,20", metavar="VIEW",
                   help="Camera: front, side, top, or AZIMUTH,ELEVATION in degrees "
                   "(default -60,20).")
    p.add_argument("--follow", action="store_true",
                   help="Centre each frame on its own cloth and colliders (for travelling "
                   "cloth) instead of one camera for all.")
    p.add_argument("--strain-max", type=float, metavar="X",
                   help="Strain shown as the top of the colour scale, as a fraction "
                   "(0.05 = 5%%; default: the largest in the cache).")
    p.set_defaults(func=_cmd_preview)


# --- plot --------------------------------------------------------------------------------
def _cmd_plot(args: argparse.Namespace) -> int:
    from ..pipeline.simulate import LOG_NAME, read_log
    from ..preview import plot_log

    source = Path(args.log)
    log = source / LOG_NAME if source.is_dir() else source
    if not log.is_file():
        raise FileNotFoundError(f"no run log at {log}")
    records = read_log(log)
    out = Path(args.out) if args.out else log.parent / "plot.png"
    print(f"wrote {plot_log(records, out, title=args.title or str(log.parent))}")
    return EXIT_OK


def _add_plot(sub: Sub) -> None:
    p = _parser(
        sub, "plot", "Draw per-frame curves of a run from its log.",
        """Reads the JSON-lines log of `pbdcloth simulate` or `pbdcloth demo` (one object per
        frame) and draws, against the frame number: the largest and the mean edge strain (%),
        the kinetic energy of the cloth (J), the number of particles touching colliders and of
        self-collision pairs (when the solver reports them), and the solve time per frame
        (ms).""",
        """
        pbdcloth plot out/drape
        pbdcloth plot out/drape/log.jsonl --out drape_curves.png
        """)
    p.add_argument("log", help="log.jsonl, or the folder holding it.")
    p.add_argument("--out", metavar="PNG", help="Picture file (default: plot.png beside the log).")
    p.add_argument("--title", help="Title (default: the run's folder).")
    p.set_defaults(func=_cmd_plot)


# --- postprocess -------------------------------------------------------------------------
def _cmd_postprocess(args: argparse.Namespace) -> int:
    from ..pipeline.postprocess import PostprocessOptions, postprocess_cache

    options = PostprocessOptions(smooth_iterations=args.smooth, thickness=args.shell_thickness,
                                 lam=args.smooth_lambda, mu=args.smooth_mu,
                                 centred=not args.one_sided)
    if args.smooth < 0 or args.shell_thickness < 0:
        raise ValueError("--smooth and --shell-thickness must be >= 0")
    if not options.active:
        raise ValueError("nothing to do: give --smooth N and/or --shell-thickness W")
    written = postprocess_cache(args.cache, args.out, options, fmt=args.format, name=args.name)
    print(f"wrote {len(written)} file(s) to {args.out}/")
    return EXIT_OK


def _add_postprocess(sub: Sub) -> None:
    from ..pipeline.postprocess import TAUBIN_LAMBDA, TAUBIN_MU

    p = _parser(
        sub, "postprocess", "Smooth and thicken a cache for rendering.",
        """Makes a render-ready garment from every frame of a cache. Smooth applies Taubin's
        lambda|mu smoothing (a low-pass filter that removes faceting and high-frequency noise
        without the shrinking of plain Laplacian smoothing; open edges are smoothed along the
        edge). Shell thickness then extrudes the cloth along its vertex normals into a closed shell,
        front and back faces W metres apart with the rim stitched, so every edge has two
        faces. The result is written as a new cache; per-point strain is carried over.""",
        """
        pbdcloth postprocess out/drape/cloth.usd --out out/drape_render --smooth 10 \\
            --shell-thickness 0.004
        pbdcloth postprocess 'out/drape/cloth.$F4.geo' --out out/shell \\
            --shell-thickness 0.01 --format usd
        """)
    p.add_argument("cache", help="NAME.usd, DIR/NAME.$F4.geo (or .obj), or a folder holding "
                   "one cache.")
    p.add_argument("--out", required=True, metavar="DIR", help="Output folder.")
    p.add_argument("--name", help="Output name (default: the source's).")
    p.add_argument("--format", choices=("usd", "geo", "obj"),
                   help="Output format (default: the source's).")
    p.add_argument("--smooth", type=int, default=0, metavar="N",
                   help="Taubin iterations (one lambda and one mu pass each; default 0 = off).")
    p.add_argument("--smooth-lambda", type=float, default=TAUBIN_LAMBDA, metavar="X",
                   help=f"Shrinking step lambda, range (0, 1) (default {TAUBIN_LAMBDA:g}).")
    p.add_argument("--smooth-mu", type=float, default=TAUBIN_MU, metavar="X",
                   help=f"Inflating step mu, range (-1, -lambda) (default {TAUBIN_MU:g}).")
    p.add_argument("--shell-thickness", type=float, default=0.0, metavar="W",
                   help="Shell thickness (unit m; default 0 = no shell).")
    p.add_argument("--one-sided", action="store_true",
                   help="Extrude to the front only (the cloth is the shell's back face) instead "
                   "of centring the shell on the cloth.")
    p.set_defaults(func=_cmd_postprocess)


#: Registrations appended to :data:`pbdcloth.cli.COMMANDS`.
SIM_COMMANDS: list[Callable[[Sub], None]] = [
    _add_simulate,
    _add_validate,
    _add_preview,
    _add_plot,
    _add_postprocess,
]
