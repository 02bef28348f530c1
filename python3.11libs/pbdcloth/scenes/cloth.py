"""Built-in scenes for the demo, the benchmarks and the tests.

A scene is a recipe: a mesh, pins, settings, colliders and a frame count, built fresh on each call
so that runs never share state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ..cloth.mesh import grid
from ..colliders import Collider, Plane, Sphere
from ..portable import rotate, rotate_t
from ..settings import ClothSettings
from ..solver import ClothSolver
from .springs import SpringScene, springs_scene


def describe(doc: str | None) -> str:
    """A scene's one-line description: the first paragraph of its docstring, on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


@dataclass
class Scene:
    """A ready-to-run simulation recipe."""

    name: str
    description: str
    """One line (the demo prints it): :func:`describe` of the recipe's docstring."""
    positions: NDArray[np.float64]
    triangles: NDArray[np.int64]
    pinned: NDArray[np.int64]
    settings: ClothSettings
    colliders: list[Collider]
    frames: int
    fps: float = 24.0
    animate: Callable[[ClothSolver, int], None] | None = None
    """Called before each step with the solver and the step number k (1-based): it sets the
    controls for the end of step k, time k / fps after the start. The demo numbers the state
    after step k frame 1 + k (frame 1 is the start state)."""
    info: dict[str, float] = field(default_factory=dict)
    follow_camera: bool = False
    """Pictures centre each frame on the cloth (for scenes where it travels)."""
    point_attributes: dict[str, NDArray[np.float64]] | None = None
    """Per-point attributes (:mod:`pbdcloth.cloth.attributes`), or None."""
    stitches: Any = None
    """Stitches between point pairs (:mod:`pbdcloth.cloth.stitches`), or None."""
    velocities: NDArray[np.float64] | None = None
    """Start velocities (N, 3) [m/s] (a garment already moving with its wearer), or None: at
    rest."""

    def make_solver(self) -> ClothSolver:
        solver = ClothSolver(self.positions, self.triangles, pinned=self.pinned,
                             settings=self.settings, colliders=self.colliders,
                             point_attributes=self.point_attributes, stitches=self.stitches)
        if self.velocities is not None:
            solver.velocities = self.velocities
        return solver


def drape_scene(resolution: int = 50, settings: ClothSettings | None = None,
                frames: int = 72) -> Scene:
    """The demo: a 1.5 m square cloth pinned at two corners, falling onto a sphere and the ground.

    ``resolution`` points per side (50 gives 2,500 particles).
    """
    size = 1.5
    pos, tris = grid(resolution, resolution, size, size, plane="xz",
                     origin=(-size / 2, 1.2, -size / 2))
    pinned = np.array([0, resolution - 1], dtype=np.int64)
    s = settings or ClothSettings(substeps=20, iterations=2, bend_stiffness=0.05, thickness=0.01,
                                  friction=0.4, damping=0.2, tethers=True, tether_slack=1.02)
    colliders: list[Collider] = [Plane((0, 0, 0), (0, 1, 0)), Sphere((0.0, 0.6, 0.15), 0.35)]
    return Scene("drape", description=describe(drape_scene.__doc__), positions=pos, triangles=tris,
                 pinned=pinned, settings=s, colliders=colliders, frames=frames)


def hanging_scene(nx: int = 20, ny: int = 20, size: float = 1.0,
                  settings: ClothSettings | None = None, frames: int = 48) -> Scene:
    """A vertical sheet hanging from its top two corners under gravity."""
    pos, tris = grid(nx, ny, size, size * (ny - 1) / max(nx - 1, 1), plane="xy",
                     origin=(0.0, 1.0, 0.0))
    return Scene("hanging", description="A sheet hanging from its top corners.", positions=pos,
                 triangles=tris, pinned=np.array([0, nx - 1], dtype=np.int64),
                 settings=settings or ClothSettings(), colliders=[], frames=frames)


def cloak_mesh(nu: int = 24, nv: int = 32, top_radius: float = 0.22, bottom_radius: float = 0.5,
               length: float = 1.0, wrap: float = 0.6) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A half cone round the back, in the chest's frame (x right-to-left, y up, z forward).

    The top row (``nu`` points) wraps the back of the neck from one shoulder to the other along an
    arc covering ``wrap`` of a half turn; the cloak falls ``length`` metres, widening from
    ``top_radius`` to ``bottom_radius``. Returns (positions (nu*nv, 3), triangles).
    """
    pos, tris = grid(nu, nv, 1.0, 1.0, plane="xz")
    u, v = pos[:, 0], pos[:, 2]
    phi = np.pi * (0.5 - wrap / 2 + wrap * u)
    r = top_radius + (bottom_radius - top_radius) * v
    local = np.stack([r * np.cos(phi), -length * v, -r * np.sin(phi)], axis=1)
    return local, tris


def _to_world(matrix: NDArray[np.float64], local: NDArray[np.float64]) -> NDArray[np.float64]:
    return rotate(matrix[:3, :3], local) + matrix[:3, 3]


def start_velocity(world_at: Callable[[float], NDArray[np.float64]],
                   fps: float) -> NDArray[np.float64]:
    """Velocities at time 0 of points carried by a moving frame: the central difference
    (x(+dt) - x(-dt)) / 2 dt of their world positions ``world_at(t)``, dt a thousandth of a
    frame (exact for the linear part of the motion, O(dt^2) for the turning). A garment starts
    moving with its wearer; started at rest, its pins would jerk it to walking speed in one
    frame."""
    dt = 1e-3 / fps
    return (world_at(dt) - world_at(-dt)) / (2.0 * dt)


def cloak_scene(height: float = 1.75, frames: int = 96, speed: float = 1.0,
                turn_rate: float = 0.6, settings: ClothSettings | None = None,
                nu: int = 24, nv: int = 32, start_moving: bool = True) -> Scene:
    """A wool cloak pinned at the shoulders of a capsule body that walks and turns.

    XPBD in small steps (one iteration per substep) with tethers to the shoulder pins and the
    default hierarchical solve with its contact round (the round's colliders come after its
    coarse levels: without the round the predict's coarse pass pulled the cloak 2.3 mm into
    the capsules on Warp, so the scene ran without the hierarchy, at 12.4 % strain against
    9.4 % then); the body's capsules move every frame and are interpolated through the
    substeps. The cloak starts moving with the chest (:func:`start_velocity`;
    ``start_moving=False``: at rest) and its contacts slide (``contact_sliding``: a
    strain-limit sweep keeps no move into a capsule): 2.1 % largest strain on Warp, against
    9.4 % started at rest without sliding.
    """
    from .body import Body

    body = Body(height)
    walk = {"speed": speed, "turn_rate": turn_rate}
    body.move_to_time(0.0, **walk)
    for c in body.colliders:
        c.end_frame()
    local, tris = cloak_mesh(nu, nv)
    # Hang the top row a little above the shoulders, behind the neck.
    local[:, 1] += 0.03 * height
    chest = body.frame(0.0, **walk)
    pos = _to_world(chest, local)
    pins = np.arange(nu, dtype=np.int64)
    s = settings or ClothSettings(
        model="xpbd", substeps=20, iterations=1, density=0.3, stretch_compliance=1e-7,
        shear_compliance=1e-6, bend_compliance=50.0, damping=0.5, tethers=True,
        tether_slack=1.02, thickness=0.01, friction=0.3, contact_sliding=True,
    )
    fps = 24.0

    def animate(solver: ClothSolver, frame: int) -> None:
        t = frame / fps
        body.move_to_time(t, **walk)
        solver.set_pin_targets(_to_world(body.frame(t, **walk), local[pins]))

    def on_chest(t: float) -> NDArray[np.float64]:
        return _to_world(body.frame(t, **walk), local)

    return Scene("cloak", description=describe(cloak_scene.__doc__), positions=pos, triangles=tris,
                 pinned=pins, settings=s, colliders=list(body.colliders), frames=frames, fps=fps,
                 animate=animate, info={"height": height}, follow_camera=True,
                 velocities=start_velocity(on_chest, fps) if start_moving else None)


def prop_scene(resolution: int = 40, settings: ClothSettings | None = None,
               frames: int = 48, voxel_size: float = 0.01) -> Scene:
    """A 1.4 m square cloth dropped over a mannequin: an OpenVDB level set collider.

    The mannequin (the capsules of :class:`pbdcloth.body.Body`, meshed; see
    :func:`pbdcloth.props.mannequin_mesh`) is turned into a narrow-band level set by OpenVDB
    the first time and cached as a .vdb file (``$PBDCLOTH_CACHE`` or ~/.cache/pbdcloth); needs
    pyopenvdb. A ground plane catches the hem. Its contacts slide (``contact_sliding``): 2.5 %
    largest strain on Warp, against 6.2 % without.
    """
    from .props import cached_level_set, mannequin_mesh

    size = 1.4
    pos, tris = grid(resolution, resolution, size, size, plane="xz",
                     origin=(-size / 2, 1.85, -size / 2 + 0.03))
    vertices, faces = mannequin_mesh(1.75)
    body, _, _ = cached_level_set("mannequin", vertices, faces, voxel_size)
    s = settings or ClothSettings(substeps=20, iterations=2, bend_stiffness=0.02,
                                  thickness=0.01, friction=0.4, static_friction=0.6,
                                  damping=0.3, contact_sliding=True)
    colliders: list[Collider] = [Plane((0, 0, 0), (0, 1, 0)), body]
    return Scene("prop", description=describe(prop_scene.__doc__), positions=pos, triangles=tris,
                 pinned=np.zeros(0, dtype=np.int64), settings=s, colliders=colliders,
                 frames=frames, info={"voxel_size": voxel_size})


def skirt_mesh(nu: int, nv: int, top: tuple[float, float], flare: float, length: float,
               top_y: float) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A flared tube: ``nv`` elliptic rings of ``nu`` points from ``top_y`` down ``length`` [m],
    half-axes (x, z) ``top`` at the waist growing by ``flare`` per metre down. Row 0 is the
    waistband. Returns (positions (nu nv, 3), triangles (2 nu (nv - 1), 3))."""
    ang = 2.0 * np.pi * np.arange(nu) / nu
    drop = np.linspace(0.0, length, nv)
    rx = top[0] + flare * drop
    rz = top[1] + flare * drop
    pos = np.stack([np.outer(rx, np.cos(ang)), np.repeat(top_y - drop, nu).reshape(nv, nu),
                    -np.outer(rz, np.sin(ang))], axis=2).reshape(-1, 3)
    cur = np.arange(nu)
    nxt = (cur + 1) % nu
    tris = []
    for k in range(nv - 1):
        a, b = k * nu, (k + 1) * nu
        tris += [np.stack([a + cur, b + cur, b + nxt], axis=1),
                 np.stack([a + cur, b + nxt, a + nxt], axis=1)]
    return pos, np.concatenate(tris).astype(np.int64)


def skirt_scene(height: float = 1.75, frames: int = 72, nu: int = 96, nv: int = 40,
                body_segments: int = 32, body_rings: int = 24,
                settings: ClothSettings | None = None, body_collides: bool = True,
                ease: float = 0.03, flare: float = 0.3, start_moving: bool = True) -> Scene:
    """A flared skirt on a walking, deforming body mesh (a MeshCollider).

    The body (:class:`pbdcloth.scenes.walker.WalkingBody`: a skinned trunk and two legs whose
    hips swing and knees bend) walks forward at 0.8 m/s; its triangle mesh deforms every frame
    and moves linearly through the substeps. The skirt's waistband is pinned to the pelvis;
    ``nu`` x ``nv`` particles (96 x 40 = 3,840), hanging to the knees, ``ease`` [m] wider
    than the waist at the waistband and widening by ``flare`` per metre down (an A-line: a
    straighter skirt meets the swinging thighs with more strain). The skirt starts moving with
    the pelvis (its rigid velocity at time 0, as a garment on a body already walking); started
    at rest (``start_moving=False``), the waistband would jerk to walking speed in one frame.
    ``body_collides=False`` leaves the body out of the colliders; ``**SKIRT_TIGHT_CUT`` gives
    the straighter skirt, started at rest, whose thighs press into it.
    """
    from ..colliders.mesh import MeshCollider
    from .walker import WalkingBody

    fps = 24.0
    body = WalkingBody(height, segments=body_segments, rings=body_rings)
    h = height
    pos, tris = skirt_mesh(nu, nv, (0.10 * h + ease, 0.07 * h + ease), flare,
                           body.waist_y - body.knee_y, body.waist_y)
    pins = np.arange(nu, dtype=np.int64)
    rot0, origin0 = body.pelvis(0.0)
    local_all = rotate_t(rot0, pos - origin0)
    local = local_all[pins]

    def on_pelvis(t: float) -> NDArray[np.float64]:
        rot, origin = body.pelvis(t)
        return rotate(rot, local_all) + origin

    def vertices(frame: int) -> NDArray[np.float64]:
        return body.vertices(frame / fps)

    collider = MeshCollider(None, body.triangles, frames=vertices, name="body")
    s = settings or ClothSettings(
        model="xpbd", substeps=20, iterations=2, density=0.2, stretch_compliance=1e-7,
        shear_compliance=1e-6, bend_compliance=20.0, damping=0.3, tethers=True,
        tether_slack=1.02, thickness=0.006, friction=0.3, static_friction=0.3,
        self_collision=False,
    )

    def animate(solver: ClothSolver, frame: int) -> None:
        rot, origin = body.pelvis(frame / fps)
        solver.set_pin_targets(rotate(rot, local) + origin)

    return Scene("skirt", description=describe(skirt_scene.__doc__), positions=pos,
                  triangles=tris, pinned=pins, settings=s,
                  colliders=[collider] if body_collides else [], frames=frames, fps=fps,
                  animate=animate, info={"height": height, "body_triangles":
                                         float(body.triangles.shape[0])},
                  follow_camera=True,
                  velocities=start_velocity(on_pelvis, fps) if start_moving else None)


SKIRT_TIGHT_CUT: dict[str, Any] = {"ease": 0.012, "flare": 0.15, "start_moving": False}
""":func:`skirt_scene` keywords for its former cut, started at rest: 1.2 cm of ease and a flare
of 0.15 per metre, tight enough that the swinging thighs press into the skirt (7.4 % largest
strain on Warp). The collider tests, their digests and scripts/bench_colliders.py run on it:
the thighs keep more of the skirt in contact than the A-line does."""


SCENES: dict[str, Callable[[], Scene | SpringScene]] = {
    "drape": drape_scene,
    "cloak": cloak_scene,
    "prop": prop_scene,
    "skirt": skirt_scene,
}
"""Scenes of ``pbdcloth demo --scene NAME``."""


def fold_scene(resolution: int = 40, settings: ClothSettings | None = None,
               frames: int = 72) -> Scene:
    """Self-collision stress: an upright cloth dropped onto a sphere folds over onto itself.

    A 1 m wide, 0.6 m tall sheet stands on its lower edge, leaning 3 degrees, 5 cm above a
    0.2 m sphere resting on the ground. It lands on the sphere, buckles and folds over it, its
    upper part coming down onto its lower part. ``resolution`` points along the width (40 gives
    1,000 particles). Self collision is on, with a self thickness of 1 cm or half the edge
    length, whichever is smaller (the thickness should stay below the edge length: 129 points,
    9,933 particles, 7.8 mm edges, get 3.9 mm); ``settings.replace(self_collision=False)`` shows
    the cloth passing through itself.
    """
    width, height, lean, drop, radius = 1.0, 0.6, np.radians(3.0), 0.05, 0.2
    self_thickness = min(0.01, 0.5 * width / (resolution - 1))
    rows = max(2, int(round(resolution * height / width)))
    pos, tris = grid(resolution, rows, width, height, plane="xy", origin=(-width / 2, 0.0, 0.0))
    up = pos[:, 1] + height  # 0 at the lower edge
    pos[:, 1] = np.cos(lean) * up + 2.0 * radius + drop
    pos[:, 2] = np.sin(lean) * up
    s = settings or ClothSettings(
        substeps=30, iterations=2, bend_stiffness=0.0, thickness=0.01, friction=0.3,
        damping=0.1, self_collision=True, self_thickness=self_thickness, self_friction=0.2,
        contact_rounds=2,
    )
    colliders: list[Collider] = [Plane((0, 0, 0), (0, 1, 0)), Sphere((0.0, radius, 0.0), radius)]
    return Scene("fold", description=describe(fold_scene.__doc__), positions=pos, triangles=tris,
                 pinned=np.zeros(0, dtype=np.int64), settings=s, colliders=colliders,
                 frames=frames)


def twist_scene(resolution: int = 40, settings: ClothSettings | None = None,
                frames: int = 96, degrees_per_frame: float = 3.75) -> Scene:
    """Self-collision stress: a square cloth held by two opposite edges that turn in opposite
    directions, wringing it.

    A 1 m square sheet hangs horizontally from two opposite edges. Each frame the edges turn
    about the axis between them in opposite directions, together by ``degrees_per_frame`` (each
    by half), and close in on each other until, at 180 degrees of twist, they are half as far
    apart as at rest (the slack a real cloth needs to be wrung). With the defaults the edges
    are turned 180 degrees against each other after 48 frames and 360 after 96.
    ``resolution`` points per side.
    """
    size, squeeze, axis_y = 1.0, 0.5, 1.0
    pos, tris = grid(resolution, resolution, size, size, plane="xz",
                     origin=(-size / 2, axis_y, -size / 2))
    idx = np.arange(resolution * resolution).reshape(resolution, resolution)
    left, right = idx[:, 0], idx[:, -1]
    pinned = np.sort(np.concatenate([left, right])).astype(np.int64)
    rest = pos[pinned]
    half_turn = np.where(np.isin(pinned, left), 0.5, -0.5)
    s = settings or ClothSettings(
        substeps=20, iterations=2, bend_stiffness=0.0, damping=0.5,
        self_collision=True, self_thickness=0.01, self_friction=0.2,
    )

    def animate(solver: ClothSolver, frame: int) -> None:
        """Pin targets for the end of ``frame``: turned about the x axis, moved inwards."""
        twist = degrees_per_frame * frame
        angle = np.radians(twist) * half_turn
        c, sn = np.cos(angle), np.sin(angle)
        y, z = rest[:, 1] - axis_y, rest[:, 2]
        target = np.empty_like(rest)
        target[:, 0] = rest[:, 0] * (1.0 - squeeze * min(twist / 180.0, 1.0))
        target[:, 1] = axis_y + c * y - sn * z
        target[:, 2] = sn * y + c * z
        solver.set_pin_targets(target)

    return Scene("twist", description=describe(twist_scene.__doc__), positions=pos, triangles=tris,
                 pinned=pinned, settings=s, colliders=[], frames=frames, animate=animate,
                 info={"degrees_per_frame": degrees_per_frame})


# Spring chains on a walking body; not cloth: run by pipeline.springs.run_spring_scene.
SCENES["springs"] = springs_scene
SCENES["fold"] = fold_scene
SCENES["twist"] = twist_scene


def tear_scene(nx: int = 36, ny: int = 24, settings: ClothSettings | None = None,
               frames: int = 36, speed: float = 0.05, notch: int = 6) -> Scene:
    """Tearing: a sheet held at its left and right edges is pulled apart and tears from a notch.

    A 1.2 m wide, 0.8 m tall sheet, held taut in the XY plane by its two side edges (every point
    of the left and right columns pinned), has a notch cut into the middle of its top edge
    (``notch`` rows of one cell column left out). From the first frame both edges move outwards
    at ``speed`` m/s; edges stretched past 1 + tear_strain (0.1) x their rest length break and the
    cloth splits along them (:mod:`pbdcloth.cloth.tear`): the crack starts at the notch's tip,
    where the strain concentrates, and runs through the sheet. Gravity is off, so the pull alone
    tears it. ``nx`` x ``ny`` points (36 x 24 gives 864).
    """
    width, height = 1.2, 0.8
    pos, tris = grid(nx, ny, width, height, plane="xy", origin=(-width / 2, 1.5, 0.0))
    cell = np.arange(tris.shape[0]) // 2
    column, row = cell % (nx - 1), cell // (nx - 1)
    tris = tris[~((column == (nx - 1) // 2) & (row < notch))]
    idx = np.arange(nx * ny).reshape(ny, nx)
    left, right = idx[:, 0], idx[:, -1]
    pinned = np.sort(np.concatenate([left, right])).astype(np.int64)
    rest = pos[pinned]
    side = np.where(np.isin(pinned, left), -1.0, 1.0)
    s = settings or ClothSettings(
        model="pbd", substeps=20, iterations=4, stretch_stiffness=1.0, shear_stiffness=1.0,
        bend_stiffness=0.05, damping=0.5, tethers=False, tear_strain=0.1,
        gravity=(0.0, 0.0, 0.0),
    )
    fps = 24.0

    def animate(solver: ClothSolver, frame: int) -> None:
        """Both held edges moved outwards by ``speed`` x time (targets in the input's pin
        order: every copy of a torn pin follows its input pin)."""
        target = rest.copy()
        target[:, 0] += side * speed * frame / fps
        solver.set_pin_targets(target)

    return Scene("tear", description=describe(tear_scene.__doc__), positions=pos,
                 triangles=tris, pinned=pinned, settings=s, colliders=[], frames=frames,
                 fps=fps, animate=animate, info={"speed": speed})


SCENES["tear"] = tear_scene
