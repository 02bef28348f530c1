"""Cook functions of the asset's Python SOPs; each HDA cook section is one call into here.

* :func:`cook_preprocess` - topology and rest data as detail arrays, ``v`` and ``pbd_w``.
* :func:`cook_solver` - steps the cloth from the start frame to the current frame.
* :func:`cook_spring_chains` - swings polylines as VRM spring-bone chains.
* :func:`reset_simulation`, :func:`save_to_disk` - the nodes' buttons (and hython functions);
  :func:`save_core_cache` writes the cached frames with the core's USD / .geo / OBJ writers.

A simulating SOP behaves like a Houdini solver. Its :class:`NodeSimulation` lives on the node
(``setCachedUserData``: Python objects that live as long as the node, not saved with the .hip):
a run (:class:`pbdcloth.pipeline.run.Run`, the loop the command line uses too) and a
:class:`~pbdcloth.houdini.cache.FrameCache` of every simulated frame, bounded by the node's
``Cache Memory (MB)``. A cook

1. computes the simulation's key from the parameters' *definitions*
   (:func:`pbdcloth.houdini.parms.definitions`: keyframes, expressions, static values - not the
   values animation gives them at this frame), the frame rate, the start frame and a fingerprint
   of the cloth's topology, rest state and pins; a different key starts over from the start
   frame (so does ``Reset Simulation``);
2. shows a cached frame as is (scrubbing back, a downstream node asking for frame F - 1, a
   sub-frame: the frame it falls in), after checking that the animated inputs (pin targets,
   colliders) still read as they did when the frame was simulated; otherwise
3. resumes from the latest cached frame at or before the current one and steps frame by frame
   up to it, each frame with the animated parameters sampled at that frame and the pin targets
   and colliders read at that frame, inside ``hou.InterruptableOperation``: Esc stops at a frame
   boundary, the frames done stay cached and the node shows the last one with a warning.

Errors in the input or the parameters raise ``hou.NodeError`` with a message naming the problem,
which Houdini shows on the node.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ..backends.base import FrameStats
from ..cloth.mesh import ClothMesh
from ..cloth.model import build_model
from ..cloth.stitches import Stitches, validate_stitches
from ..cloth.topology import build_topology
from ..colliders.sdf_sequence import SdfSequence
from ..pipeline.run import Run
from ..presets import preset
from ..settings import CLOTH_SETTINGS, SPRING_SETTINGS, Setting
from ..solver import ClothSolver, SolverInputError
from . import geometry as hgeo
from . import operators as ops
from . import parms
from .cache import MEGABYTE, FrameCache, FrameEntry
from .operators import CUSTOM_FABRIC, FABRIC_PRESET
from .parms import ParameterError

if TYPE_CHECKING:
    import hou

    from ..colliders.base import Collider
    from ..colliders.shapes import Sphere
    from ..springs import SpringChain

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

STATE_KEY = "pbdcloth_state"
"""Name of the cached user data holding a simulating node's state."""

#: Pin flag written to ``pbd_w``: 0 on pinned points, 1 elsewhere (the seed's inverse-mass
#: flag). The solver derives the masses from the areal density; the flag only marks the pins.
#: It has the ``pbd_`` prefix because Houdini's own ``w`` is a 3-float angular velocity.
FREE_W = 1.0
PIN_FLAG = "pbd_w"
#: Detail arrays of the stitches: point number pairs (2 K ints) and rest lengths [m] (K).
STITCH_PAIRS, STITCH_REST, STITCH_BREAK = "stitch_pairs", "stitch_rest", "stitch_break"

COLOR_ARRAYS = ("stretch_colors", "bend_colors")


@contextlib.contextmanager
def _node_errors() -> Iterator[None]:
    """Turn the package's clear ValueErrors into ``hou.NodeError`` (shown on the node)."""
    import hou

    try:
        yield
    except (ValueError, FloatingPointError, ImportError) as exc:
        raise hou.NodeError(str(exc)) from None
    except hou.OperationFailed as exc:
        raise hou.NodeError(f"Houdini refused an operation: {exc}") from None


def _output_geometry(node: "hou.SopNode") -> "hou.Geometry":
    """The node's writable output geometry (a copy of input 0 during a Python SOP cook)."""
    geo = node.geometry()
    if geo is None:
        raise hgeo.GeometryError(f"node {node.path()} has no geometry to write; is it cooking?")
    return geo


# --- Preprocess ----------------------------------------------------------------------------------

def cook_preprocess(node: "hou.SopNode") -> None:
    """PBD Cloth Preprocess: write topology, rest data and colors as detail arrays; ``v``, ``w``."""
    with _node_errors():
        _preprocess(node)


def preprocess_arrays(positions: F64, faces: list[list[int]],
                      pins: NDArray[np.int64]) -> dict[str, NDArray[np.generic]]:
    """The detail arrays of the preprocess SOP for a mesh: the seed's names plus colors.

    ``stretch_colors`` and ``bend_colors`` give the Gauss-Seidel color of each stretch edge and
    bend hinge, in the order of the other arrays (constraints of one color share no particle).
    """
    mesh = ClothMesh.from_arrays(positions, faces)
    topology = build_topology(mesh)
    arrays = dict(topology.detail_arrays())
    model = build_model(mesh, pins, density=1.0)
    arrays["stretch_colors"] = _colors_in_topology_order(model.stretch.source,
                                                         model.stretch.offsets)
    arrays["bend_colors"] = _colors_in_topology_order(model.bend.source, model.bend.offsets)
    return arrays


def _colors_in_topology_order(source: NDArray[np.int64],
                              offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    colors = np.empty(source.shape[0], dtype=np.int64)
    colors[source] = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    return colors


def _preprocess(node: "hou.SopNode") -> None:
    geo = _output_geometry(node)
    positions = hgeo.read_positions(geo)
    pairs, stitch_prims = hgeo.stitch_polylines(geo, parms.evaluate(node, ops.STITCH_GROUP.decl))
    faces = hgeo.polygons(geo, skip=set(stitch_prims))
    pattern = parms.evaluate(node, ops.PIN_GROUP.decl)
    pins = hgeo.point_group_indices(geo, pattern)
    arrays = preprocess_arrays(positions, faces, pins)
    if pairs.shape[0]:
        validate_stitches(pairs, positions.shape[0])
        arrays[STITCH_PAIRS] = pairs.reshape(-1)
        arrays[STITCH_REST] = np.zeros(pairs.shape[0])
        breaks = hgeo.stitch_break_lengths(geo, stitch_prims)
        if breaks is not None:
            arrays[STITCH_BREAK] = breaks
    hgeo.write_detail_arrays(geo, arrays)
    w = np.full(positions.shape[0], FREE_W)
    w[pins] = 0.0
    hgeo.write_point_floats(geo, PIN_FLAG, w)
    hgeo.write_velocities(geo, np.zeros_like(positions))


# --- The simulation kept on a node -------------------------------------------------------------

def _current_frame(node: "hou.SopNode") -> int:
    """The frame being cooked, from the hidden ``current_frame`` parameter ($FF); a sub-frame
    shows the frame it falls in."""
    value = parms.evaluate(node, ops.CURRENT_FRAME_PARM.decl)
    return int(math.floor(value + 1e-6))


def _input_at(node: "hou.SopNode", index: int, frame: float) -> "hou.Geometry | None":
    """Input ``index`` evaluated at ``frame``, or None when nothing is connected."""
    inputs = node.inputs()
    if index >= len(inputs) or inputs[index] is None:
        return None
    return node.inputGeometryAtFrame(float(frame), index)


def _input_node(node: "hou.SopNode", index: int) -> "hou.OpNode | None":
    inputs = node.inputs()
    return inputs[index] if index < len(inputs) else None


def _digest(*parts: bytes | str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"|")
    return h.hexdigest()


def _positions_digest(geo: "hou.Geometry | None") -> str:
    """Point count and P of ``geo`` (one bulk read), or ``none``."""
    if geo is None:
        return "none"
    if not geo.pointCount():
        return "empty"
    return _digest(str(geo.pointCount()), hgeo.read_positions(geo).tobytes())


class SimStepper(Protocol):
    """What a node's simulation steps: a Run stepper that also snapshots and restores itself."""

    inputs: str
    """Digest of the animated inputs the last stepped (or placed) frame read."""

    def advance(self, frame: int) -> FrameStats | None: ...

    def read_inputs(self, frame: int) -> str:
        """Read the animated inputs at ``frame`` and return their digest (nothing stepped)."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """Exact copies of everything the next frame starts from."""
        ...

    def restore(self, snapshot: dict[str, Any]) -> None: ...

    def write(self, geo: "hou.Geometry", snapshot: dict[str, Any]) -> None:
        """Write a snapshot's positions (and velocities) to the output geometry."""
        ...


@dataclass
class NodeSimulation:
    """A simulation kept on a node between cooks.

    Attributes:
        key: parameter definitions, frame rate, start frame and input fingerprint it was built
            from (see the module docstring).
        start: start frame (its state is the input's rest state).
        run: the run stepping it; ``run.frame`` is the frame the live state belongs to.
        cache: every simulated frame kept, bounded in bytes.
        stepped: frames the solver stepped since the simulation was built.
    """

    key: str
    start: int
    run: Run
    cache: FrameCache
    stepped: int = 0

    @property
    def stepper(self) -> SimStepper:
        return self.run.stepper  # type: ignore[return-value]

    @property
    def frame(self) -> int:
        """The frame the live state belongs to."""
        return self.run.frame

    def frame_done(self, frame: int, stats: FrameStats | None) -> None:
        """Run hook: count each stepped frame and keep it in the cache."""
        self.stepped += 1
        self.keep()

    def keep(self) -> None:
        """Cache the live state."""
        self.cache.store(FrameEntry(self.frame, self.stepper.snapshot(), self.stepper.inputs))

    def close(self) -> None:
        pass

    def resume_from(self, entry: FrameEntry) -> None:
        """Put the live state back at a cached frame."""
        self.stepper.restore(entry.state)
        self.stepper.inputs = entry.inputs
        self.run.frame = entry.frame


def _cache_limits(node: "hou.SopNode") -> tuple[int, bool]:
    megabytes = float(parms.evaluate(node, ops.CACHE_MEMORY.decl))
    enabled = bool(parms.evaluate(node, ops.CACHE_SIMULATION.decl))
    return int(megabytes * MEGABYTE), enabled


def _simulation_key(node: "hou.SopNode", op: ops.Operator, start: int,
                    fingerprint: str) -> tuple[str, frozenset[str]]:
    """The key of a node's simulation and the names of its time-dependent parameters."""
    import hou

    defs = parms.definitions(node, ops.simulation_parameters(op), start)
    return _digest(defs.digest, repr(float(hou.fps())), str(start), fingerprint), defs.animated


def _simulate(node: "hou.SopNode", op: ops.Operator, kind: type, fingerprint: str,
              build: "Callable[[int, frozenset[str]], SimStepper]"
              ) -> tuple[NodeSimulation, dict[str, Any]]:
    """Bring the node's simulation to the current frame; return it and the snapshot to show.

    ``build(start, animated)`` makes a stepper at the start frame. Before a cached frame is shown
    or stepping resumes from a frame, the animated inputs are read at that frame and compared
    with what they read when it was simulated; a difference starts the simulation over.
    """
    start = int(parms.evaluate(node, ops.START_FRAME.decl))
    target = max(_current_frame(node), start)
    key, animated = _simulation_key(node, op, start, fingerprint)
    limit, enabled = _cache_limits(node)

    def fresh(cache: FrameCache | None = None, stepped: int = 0) -> NodeSimulation:
        return _fresh(node, build(start, animated), key, start,
                      cache if cache is not None else FrameCache(limit, enabled), stepped)

    sim = node.cachedUserData(STATE_KEY)
    if not isinstance(sim, NodeSimulation) or not isinstance(sim.stepper, kind) \
            or sim.key != key:
        sim = fresh()
    sim.cache.set_limit(limit, enabled)
    hit = sim.cache.get(target)
    if hit is not None:
        if sim.stepper.read_inputs(target) == hit.inputs:
            return sim, hit.state
        sim = fresh()  # the animated inputs were edited since this frame was simulated
    entry = sim.cache.latest_at_or_before(target)
    if entry is not None and (sim.frame > target or entry.frame > sim.frame):
        if sim.stepper.read_inputs(entry.frame) == entry.inputs:
            sim.resume_from(entry)
        else:
            sim = fresh()
    elif sim.frame <= target and sim.frame > start \
            and sim.stepper.read_inputs(sim.frame) != sim.stepper.inputs:
        sim = fresh()
    if sim.frame > target:  # no cached frame at or before the target: from the start again
        sim = fresh(sim.cache, sim.stepped)
    _catch_up(node, sim, target, op.label)
    return sim, sim.stepper.snapshot()


def _fresh(node: "hou.SopNode", stepper: SimStepper, key: str, start: int, cache: FrameCache,
           stepped: int = 0) -> NodeSimulation:
    """A simulation at its start frame (keeping ``cache`` and the step count when only the live
    state is rebuilt)."""
    sim = NodeSimulation(key, start, Run(stepper, start), cache, stepped)
    sim.run.hooks.append(sim)
    stepper.inputs = stepper.read_inputs(start)
    sim.keep()
    node.setCachedUserData(STATE_KEY, sim)
    return sim


def _catch_up(node: "hou.SopNode", sim: NodeSimulation, target: int, label: str) -> None:
    """Step the live state up to ``target``, interruptibly."""
    import hou

    if sim.frame >= target:
        return
    first = sim.frame
    try:
        with hou.InterruptableOperation(
                f"{label}: simulating frames {first + 1}-{target}",
                open_interrupt_dialog=False) as operation:

            def on_progress(frame: int, last: int) -> None:
                operation.updateProgress((frame - first) / max(last - first, 1))

            sim.run.on_progress = on_progress
            sim.run.run_to(target)
    except hou.OperationInterrupted:
        node.addWarning(
            f"interrupted: simulated up to frame {sim.frame} of {target}; showing frame "
            f"{sim.frame} (the frames done are cached; cook again to continue)")
    except BaseException:
        node.destroyCachedUserData(STATE_KEY, must_exist=False)
        raise
    finally:
        sim.run.on_progress = None


def reset_simulation(node: "hou.SopNode") -> None:
    """The ``Reset Simulation`` button: forget the cached frames and the live state; the node
    simulates again from its start frame at its next cook."""
    node.destroyCachedUserData(STATE_KEY, must_exist=False)
    node.cook(force=True)


def apply_fabric_preset(node: "hou.SopNode") -> None:
    """The ``Fabric Preset`` menu: set the node's material parameters (model, density, the
    compliances, friction) to the chosen fabric's values (:mod:`pbdcloth.presets`); ``Custom``
    changes nothing."""
    parm = node.parm(FABRIC_PRESET.name)
    name = parm.evalAsString() if parm is not None else CUSTOM_FABRIC
    if name == CUSTOM_FABRIC:
        return
    for setting, value in preset(name).settings().items():
        target = node.parm(setting)
        if target is None:
            raise ParameterError(f"node {node.path()} has no parameter {setting!r} for the "
                                 f"fabric preset {name!r}")
        target.set(value)


def cached_frames(node: "hou.SopNode") -> list[int]:
    """The frames a simulating node holds in its cache, ascending."""
    sim = node.cachedUserData(STATE_KEY)
    return sim.cache.frames() if isinstance(sim, NodeSimulation) else []


FRAME_TOKENS = ("$F4", "$F3", "$F2", "$F", "${F4}", "####", "{frame")


def save_to_disk(node: "hou.SopNode", pattern: str | None = None,
                 frames: tuple[int, int] | None = None) -> list[Path]:
    """The ``Save to Disk`` button and its hython form: write frames of a simulating node.

    Each frame is cooked through Houdini (``geometryAtFrame``; a cached frame is a lookup) and
    saved with ``hou.Geometry.saveToFile``, whose extension picks the format (``.bgeo.sc``), to a
    temporary name beside the target renamed over it, so no half-written file is left.

    Args:
        node: a PBD Cloth Solver or PBD Spring Chains node.
        pattern: output path with a frame token (``$F4``, ``$F``, ``####``); default the node's
            ``Cache Path`` parameter evaluated at each frame (``$HIP/cache/$OS.$F4.bgeo.sc``).
        frames: first and last frame (inclusive); default the first to the last cached frame.

    Returns:
        The files written, in frame order.

    Raises:
        GeometryError: no frame token, nothing cached and no range, a frame that fails.
    """
    import hou

    from ..io.obj import frame_path

    parm = node.parm(ops.CACHE_PATH.name)
    raw = pattern if pattern is not None else (parm.unexpandedString() if parm else "")
    if not any(token in raw for token in FRAME_TOKENS):
        raise hgeo.GeometryError(
            f"the cache path {raw!r} has no frame token ($F4, $F, ####): every frame would "
            "overwrite the same file")
    if frames is None:
        cached = cached_frames(node)
        if not cached:
            raise hgeo.GeometryError(f"node {node.path()} has no cached frames to save; play "
                                     "the simulation first or give the frame range")
        frames = (cached[0], cached[-1])
    written: list[Path] = []
    for frame in range(int(frames[0]), int(frames[1]) + 1):
        text = raw if pattern is not None or parm is None \
            else parm.evalAsStringAtFrame(float(frame))
        target = frame_path(text, frame) if any(t in text for t in FRAME_TOKENS) else Path(text)
        geo = node.geometryAtFrame(float(frame))
        if geo is None:
            raise hgeo.GeometryError(f"{node.path()} gave no geometry at frame {frame}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".partial-{os.getpid()}-{target.name}")
        try:
            geo.saveToFile(str(tmp))
            os.replace(tmp, target)
        except hou.OperationFailed as exc:
            raise hgeo.GeometryError(f"could not write {target}: {exc}") from None
        finally:
            if tmp.exists():
                tmp.unlink()
        written.append(target)
    return written


def save_core_cache(node: "hou.SopNode", out_dir: str | os.PathLike[str], name: str = "cloth",
                    fmt: str = "usd") -> list[Path]:
    """Write a cloth solver node's cached frames with the core's cache writers
    (:func:`pbdcloth.io.cache.write_cache`: one USD layer, or Houdini ``.geo`` / OBJ files per
    frame), straight from the cache: nothing is cooked. For hython and pipelines that want the
    caches the ``pbdcloth`` command line writes.

    Raises:
        GeometryError: the node has no cached cloth frames.
    """
    from ..io.cache import FrameData, write_cache

    sim = node.cachedUserData(STATE_KEY)
    if not isinstance(sim, NodeSimulation) or not isinstance(sim.stepper, ClothSolverStepper) \
            or not len(sim.cache):
        raise hgeo.GeometryError(f"node {node.path()} has no cached cloth frames to save; play "
                                 "the simulation first (with Cache Simulation on)")
    stepper = sim.stepper
    frames = sim.cache.frames()
    data = []
    for frame in frames:
        entry = sim.cache.get(frame)
        assert entry is not None
        state = entry.state["solver"]
        torn = state.get("torn")
        tris = (stepper.solver.untorn_model.mesh.triangles
                if torn is None or int(torn["torn_edges"]) == 0
                else np.asarray(torn["triangles"], dtype=np.int64))
        data.append(FrameData(positions=state["positions"], triangles=tris,
                              velocities=state["velocities"]))
    return write_cache(out_dir, name, fmt, frames, data, fps=stepper.fps)


# --- Cloth solver --------------------------------------------------------------------------------

@runtime_checkable
class DeformingCollider(Protocol):
    """A collider made from the collision polygons that follows their points frame by frame
    (the mesh collider of deforming characters implements it; the VDB-from-Polygons collider
    does not, and keeps its start-frame shape)."""

    def set_points(self, points: F64) -> None:
        """The polygons' points (N, 3) [m] at the end of the coming frame, in point order."""
        ...


@dataclass
class CollisionInput:
    """The collision input (input 1), read at each simulated frame.

    VDB signed distance fields move their colliders rigidly (their lattice placement each
    frame); once their voxels change, they become a level-set sequence read every frame.
    Closed polygons are converted with *VDB from Polygons* at the start frame; their points are
    read each frame: a :class:`DeformingCollider` made from them is handed the new points, and
    the level set made from them is made again at every frame once the points move (a
    level-set sequence). Only polygons that *VDB from Polygons* turns into more than one level
    set mark the input :attr:`deformed` (their start shape is kept).

    Attributes:
        vdb_numbers: primitive number of each VDB collider (the first solver colliders).
        vdb_frames: lattice placement (:func:`~pbdcloth.houdini.vdb.index_frame`) of each VDB
            at the start frame.
        prim_count: primitives of the input at the start frame.
        polygon_points: digest of the polygon colliders' points at the start frame ("" without
            polygons).
        deformed: the polygons moved since the start frame (their start shape is used).
    """

    node: "hou.SopNode"
    vdb_numbers: list[int] = field(default_factory=list)
    vdb_frames: list[tuple[F64, F64]] = field(default_factory=list)
    prim_count: int = 0
    polygon_points: str = ""
    deformed: bool = False
    mesh_points: I64 | None = None
    """With Polygon Colliders = Triangles: the points the polygons use (their mesh collider's
    vertices, in this order)."""
    mesh_faces: list[list[int]] | None = None
    """The polygons (point numbers) at the start frame; every frame must have the same."""
    vdb_voxels: list[str] = field(default_factory=list)
    """Digest of each VDB's voxels at the start frame: when they change (a VDB from Polygons
    of a deforming character, per frame) the collider becomes a level-set sequence."""
    polygon_voxel: float = 0.0
    """Collider Voxel Size [m] of the polygons' level sets (Polygon Colliders = VDB)."""
    polygon_band: int = 0
    """Collider Band Voxels of the polygons' level sets."""

    def place(self, colliders: list["Collider"], frame: int, move: bool) -> str:
        """Read input 1 at ``frame``; with ``move``, give each VDB collider its motion from the
        start frame. Returns the digest of what was read."""
        from .vdb import VdbError, index_frame, read_vdb, rigid_motion

        if not self.prim_count:
            return "none"
        geo = _input_at(self.node, 1, frame)
        count = geo.primCount() if geo is not None else 0
        if geo is None or count != self.prim_count:
            raise hgeo.GeometryError(
                f"input 1 has {count} primitive(s) at frame {frame} but {self.prim_count} at "
                "the start frame; the colliders must persist (animate them with a transform "
                "or deform their points)")
        parts: list[str] = []
        for k, (number, start) in enumerate(zip(self.vdb_numbers, self.vdb_frames,
                                                strict=True)):
            prim = geo.prim(number)
            import hou

            if not isinstance(prim, hou.VDB):
                raise hgeo.GeometryError(f"input 1 primitive {number} is a VDB at the start "
                                         f"frame but not at frame {frame}")
            placed = index_frame(prim)
            try:
                dense = read_vdb(prim)
                voxels = _vdb_digest(dense)
            except VdbError:  # e.g. a lattice turned since the start: moved rigidly only
                dense, voxels = None, repr(prim.activeVoxelCount())
            parts.append(repr((placed[0].tolist(), placed[1].tolist(), voxels)))
            if isinstance(colliders[k], SdfSequence):
                continue  # it reads its frames itself
            if dense is not None and voxels != self.vdb_voxels[k]:
                if move:
                    colliders[k] = self._sequence(colliders[k], number, frame, dense)
                continue
            move_to = getattr(colliders[k], "move_to", None)
            if move and move_to is not None:
                move_to(rigid_motion(start, placed))
        if self.mesh_points is not None:
            parts.append(self._deform(geo, colliders, frame, move))
        elif self.polygon_points:
            points = hgeo.read_positions(geo)
            digest = _digest(str(points.shape[0]), points.tobytes())
            parts.append(digest)
            extra = len(colliders) - len(self.vdb_numbers)
            mesh = colliders[len(self.vdb_numbers)] if extra > 0 else None
            if isinstance(mesh, DeformingCollider):
                if move:
                    mesh.set_points(points)
            elif isinstance(mesh, SdfSequence):
                pass  # it converts its frames itself
            elif digest != self.polygon_points:
                if extra == 1 and mesh is not None:
                    if move:
                        colliders[len(self.vdb_numbers)] = self._polygon_sequence(mesh, frame)
                else:
                    self.deformed = True
        return _digest(*parts)

    def _geometry_at(self, frame: int) -> "hou.Geometry":
        """Input 1 at ``frame``, with the start frame's primitive count (else a
        :class:`~pbdcloth.houdini.geometry.GeometryError` naming the frame)."""
        geo = _input_at(self.node, 1, frame)
        if geo is None or geo.primCount() != self.prim_count:
            raise hgeo.GeometryError(f"input 1 changed its primitives at frame {frame}")
        return geo

    def _polygon_sequence(self, previous: "Collider", frame: int) -> "Collider":
        """Closed polygons whose points moved: from here on an
        :class:`~pbdcloth.colliders.sdf_sequence.SdfSequence` of their level set made by
        *VDB from Polygons* at every frame (blended across the substeps), starting from
        ``previous`` (their start-frame shape, which they kept until the frame before
        ``frame``)."""
        from .vdb import VdbError, polygon_level_sets, read_vdb, sdf_collider

        def level_set(f: int) -> Any:
            if f == frame - 1:
                return previous
            made = polygon_level_sets(self._geometry_at(f), self.polygon_voxel,
                                      self.polygon_band)
            if len(made) != 1:
                raise VdbError(f"VDB from Polygons made {len(made)} level sets from the "
                               f"collision polygons at frame {f}, 1 at the start frame")
            return sdf_collider(read_vdb(made[0]))

        return SdfSequence(level_set, frame - 1, name="input 1 polygons (VDB per frame)")


    def _sequence(self, previous: "Collider", number: int, frame: int, dense: Any
                  ) -> "Collider":
        """A VDB whose voxels changed: from here on an
        :class:`~pbdcloth.colliders.sdf_sequence.SdfSequence` of its level set read at every
        frame (world-space voxels, blended across the substeps), starting from ``previous``
        (its pose at the end of the frame before ``frame``)."""
        from .vdb import read_vdb, sdf_collider

        read = {frame: dense}

        def level_set(f: int) -> Any:
            if f == frame - 1:
                return previous
            block = read.pop(f, None)
            if block is None:
                prim = self._geometry_at(f).prim(number)
                import hou

                if not isinstance(prim, hou.VDB):
                    raise hgeo.GeometryError(f"input 1 primitive {number} is a VDB at the "
                                             f"start frame but not at frame {f}")
                block = read_vdb(prim)
            return sdf_collider(block)

        return SdfSequence(level_set, frame - 1, name=f"input 1 VDB {number}")

    def _deform(self, geo: "hou.Geometry", colliders: list["Collider"], frame: int,
                move: bool) -> str:
        """Hand the mesh collider the polygons' points at ``frame``; a topology change is a
        node error naming the frame."""
        assert self.mesh_points is not None
        faces = _polygon_faces(geo)
        if faces != self.mesh_faces:
            assert self.mesh_faces is not None
            raise hgeo.GeometryError(
                f"input 1's polygons at frame {frame} differ from the start frame's "
                f"({len(faces)} polygons, {len(self.mesh_faces)} at the start): the topology "
                "changed; a deforming collider needs the same polygons every frame")
        all_points = hgeo.read_positions(geo)
        if all_points.shape[0] <= int(self.mesh_points.max(initial=-1)):
            raise hgeo.GeometryError(f"input 1 has {all_points.shape[0]} points at frame "
                                     f"{frame}, fewer than its polygons use")
        points = all_points[self.mesh_points]
        mesh = colliders[-1]
        if move and isinstance(mesh, DeformingCollider):
            try:
                mesh.set_points(points)
            except SolverInputError as exc:
                raise hgeo.GeometryError(f"input 1 at frame {frame}: {exc}") from None
        return _digest(str(points.shape[0]), points.tobytes())


def _vdb_digest(dense: Any) -> str:
    """Digest of a VDB's voxels in its own lattice (what a rigid motion keeps)."""
    return _digest(str(dense.values.shape), dense.values.tobytes(), repr(dense.voxel_size),
                   repr(dense.background))


def _polygon_faces(geo: "hou.Geometry") -> list[list[int]]:
    """Point numbers of each closed polygon of ``geo`` (VDB primitives skipped)."""
    import hou

    return [[v.point().number() for v in prim.vertices()] for prim in geo.prims()
            if isinstance(prim, hou.Polygon)]


def _mesh_collider(geo: "hou.Geometry", collision: CollisionInput) -> "Collider":
    """A MeshCollider of the closed polygons of ``geo`` (Polygon Colliders = Triangles)."""
    from ..cloth.mesh import triangulate
    from ..colliders.mesh import MeshCollider

    faces = _polygon_faces(geo)
    used = np.unique(np.concatenate([np.asarray(f, dtype=np.int64) for f in faces]))
    remap = np.full(int(used.max()) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    collision.mesh_points = used
    collision.mesh_faces = faces
    points = hgeo.read_positions(geo)[used]
    tris = remap[np.asarray(triangulate(faces), dtype=np.int64)]
    return MeshCollider(points, tris, name="input 1 polygons")


def _collision_input(node: "hou.SopNode", start: int) -> tuple[list["Collider"], CollisionInput]:
    geo = _input_at(node, 1, start)
    collision = CollisionInput(node)
    if geo is None or geo.primCount() == 0:
        return [], collision
    import hou

    from .vdb import colliders_from_geometry, index_frame, read_vdb

    voxel_size = parms.evaluate(node, ops.COLLIDER_VOXEL_SIZE.decl)
    band = parms.evaluate(node, ops.COLLIDER_BAND_VOXELS.decl)
    triangles = parms.evaluate(node, ops.COLLIDER_METHOD.decl) == "triangles"
    colliders = colliders_from_geometry(geo, voxel_size, band, convert_polygons=False) \
        if triangles else colliders_from_geometry(geo, voxel_size, band)
    prims = geo.prims()  # once per simulation
    vdbs = [p for p in prims if isinstance(p, hou.VDB)]
    collision.vdb_numbers = [p.number() for p in vdbs]
    collision.vdb_frames = [index_frame(p) for p in vdbs]
    collision.vdb_voxels = [_vdb_digest(read_vdb(p)) for p in vdbs]
    collision.prim_count = len(prims)
    if len(vdbs) < len(prims):
        if triangles:
            colliders.append(_mesh_collider(geo, collision))
        else:
            points = hgeo.read_positions(geo)
            collision.polygon_points = _digest(str(points.shape[0]), points.tobytes())
            collision.polygon_voxel = float(voxel_size)
            collision.polygon_band = int(band)
    return colliders, collision


@dataclass
class ClothSolverStepper:
    """Steps a solver node's cloth: per frame it samples the animated parameters, reads the pin
    targets (input 2) and the colliders (input 1) at that frame, then steps by 1 / fps.

    Attributes:
        node: the solver node (its inputs are read at each frame).
        solver: the core solver.
        fps: the scene's frame rate when the state was built (part of the state's key).
        rest: positions at the start frame [m], shape (N, 3).
        collision: the collision input, read per frame.
        animated: the time-dependent cloth settings, sampled at each frame.
        inputs: digest of the animated inputs of the last frame.
    """

    node: "hou.SopNode"
    solver: ClothSolver
    fps: float
    rest: F64
    collision: CollisionInput
    animated: tuple[Setting, ...] = ()
    inputs: str = ""

    def advance(self, frame: int) -> FrameStats:
        if self.animated:
            values = parms.evaluate_all(self.node, self.animated, float(frame))
            settings = self.solver.settings.replace(**values)
            if settings != self.solver.settings:
                self.solver.settings = settings
        self.inputs = self._read(frame, apply=True)
        return self.solver.step(1.0 / self.fps)

    def read_inputs(self, frame: int) -> str:
        return self._read(frame, apply=False)

    def _read(self, frame: int, apply: bool) -> str:
        targets = _pin_targets(self, frame)
        if apply and targets is not None:
            self.solver.set_pin_targets(targets)
        colliders = self.collision.place(self.solver.colliders, frame, move=apply)
        pins = "none" if targets is None else _digest(targets.tobytes())
        return _digest(pins, colliders)

    def snapshot(self) -> dict[str, Any]:
        poses = [np.array(getattr(c, "matrix")) if hasattr(c, "matrix")
                 else np.array(getattr(c, "vertices"))
                 if isinstance(c, DeformingCollider) and hasattr(c, "vertices")
                 else None for c in self.solver.colliders]
        return {"solver": self.solver.get_state(), "colliders": poses,
                "settings": self.solver.settings}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.solver.set_state(snapshot["solver"])
        if snapshot["settings"] != self.solver.settings:
            self.solver.settings = snapshot["settings"]
        for collider, pose in zip(self.solver.colliders, snapshot["colliders"], strict=True):
            if isinstance(collider, SdfSequence):  # a VDB whose voxels change: its frame
                start = int(parms.evaluate(self.node, ops.START_FRAME.decl))
                collider.seek(start + int(snapshot["solver"]["frame"]))
                continue
            move_to = getattr(collider, "move_to", None)
            if pose is not None and move_to is not None:
                move_to(pose)
                collider.end_frame()

    def write(self, geo: "hou.Geometry", snapshot: dict[str, Any]) -> None:
        """Positions and velocities; a torn cloth's frame also gets its own points (the split
        ones appended, with their input points' attributes) and triangles."""
        state = snapshot["solver"]
        if geo.pointCount() != self.rest.shape[0]:
            raise hgeo.GeometryError(
                f"input 0 has {geo.pointCount()} points at this frame but {self.rest.shape[0]} "
                "at the start frame; the cloth's point count must not change")
        torn = state.get("torn")
        if torn is not None and int(torn["torn_edges"]) > 0:  # not for broken stitches alone
            hgeo.apply_torn_topology(geo, torn["triangles"], torn["origin"])
        hgeo.write_positions(geo, state["positions"])
        hgeo.write_velocities(geo, state["velocities"])


def cook_solver(node: "hou.SopNode") -> None:
    """PBD Cloth Solver: show the current frame of the cached simulation, stepping as needed."""
    with _node_errors():
        geo = _output_geometry(node)
        fingerprint = _cloth_fingerprint(node, geo)
        sim, snapshot = _simulate(
            node, ops.SOLVER, ClothSolverStepper, fingerprint,
            lambda start, animated: _build_cloth(node, start, animated))
        stepper = sim.stepper
        assert isinstance(stepper, ClothSolverStepper)
        stepper.write(geo, snapshot)
        if stepper.collision.deformed:
            node.addWarning("the collision polygons deform, but VDB from Polygons makes "
                            "several level sets of them; they collide with their start-frame "
                            "shape (set Polygon Colliders to Triangles to follow them)")


def _pin_flags(cloth: "hou.Geometry") -> F64:
    """The pin flags (0 = pinned): ``pbd_w``, or a 1-float ``w`` from an older preprocess."""
    if cloth.findPointAttrib(PIN_FLAG) is not None:
        return hgeo.read_point_floats(cloth, PIN_FLAG, 1)
    legacy = cloth.findPointAttrib("w")
    if legacy is not None and legacy.size() == 1:
        return hgeo.read_point_floats(cloth, "w", 1)
    return np.full(cloth.pointCount(), FREE_W)


def _cloth_fingerprint(node: "hou.SopNode", current: "hou.Geometry") -> str:
    """Topology, rest data, pin flags and start state of the cloth (bulk reads only).

    When input 0 is not time dependent its geometry at the current frame (this cook's output
    copy) is the start frame's, so nothing upstream is cooked again; otherwise the input is read
    at the start frame.
    """
    upstream = _input_node(node, 0)
    if upstream is None:
        raise hgeo.GeometryError("input 0 (the preprocessed cloth) is not connected")
    geo: "hou.Geometry | None" = current
    if upstream.isTimeDependent():
        start = int(parms.evaluate(node, ops.START_FRAME.decl))
        geo = _input_at(node, 0, start)
    if geo is None:
        raise hgeo.GeometryError("input 0 (the preprocessed cloth) gave no geometry")
    if geo.findGlobalAttrib("triangles") is None:
        raise hgeo.GeometryError(
            "input 0 has no 'triangles' detail array: connect the output of a PBD Cloth "
            "Preprocess node")
    parts: list[bytes | str] = [_positions_digest(geo),
                                hgeo.read_detail_int_array(geo, "triangles").tobytes(),
                                _pin_flags(geo).tobytes()]
    for name in ("rest_lengths", "rest_angles"):
        if geo.findGlobalAttrib(name) is not None:
            parts.append(hgeo.read_detail_float_array(geo, name).tobytes())
    if geo.findPointAttrib("v") is not None:
        parts.append(hgeo.read_point_floats(geo, "v", 3).tobytes())
    for name, values in hgeo.read_point_attributes(geo).items():
        parts += [name, values.tobytes()]
    if geo.findGlobalAttrib(STITCH_PAIRS) is not None:
        parts.append(hgeo.read_detail_int_array(geo, STITCH_PAIRS).tobytes())
    if geo.findGlobalAttrib(STITCH_BREAK) is not None:
        parts.append(hgeo.read_detail_float_array(geo, STITCH_BREAK).tobytes())
    return _digest(*parts)


def _stitches(cloth: "hou.Geometry") -> Stitches | None:
    """The preprocess's stitch arrays, or None without any."""
    if cloth.findGlobalAttrib(STITCH_PAIRS) is None:
        return None
    pairs = hgeo.read_detail_int_array(cloth, STITCH_PAIRS)
    if pairs.size % 2:
        raise hgeo.GeometryError(f"the '{STITCH_PAIRS}' detail array has {pairs.size} entries, "
                                 "not a multiple of 2")
    rest = (hgeo.read_detail_float_array(cloth, STITCH_REST)
            if cloth.findGlobalAttrib(STITCH_REST) is not None else 0.0)
    breaks: Any = np.inf
    if cloth.findGlobalAttrib(STITCH_BREAK) is not None:
        raw = hgeo.read_detail_float_array(cloth, STITCH_BREAK)
        breaks = np.where(raw > 0.0, raw, np.inf)  # 0: never breaks
    return Stitches(pairs.reshape(-1, 2), rest, break_length=breaks)


def _build_cloth(node: "hou.SopNode", start: int,
                 animated: frozenset[str]) -> ClothSolverStepper:
    cloth = _input_at(node, 0, start)
    if cloth is None:
        raise hgeo.GeometryError("input 0 (the preprocessed cloth) is not connected")
    positions = hgeo.read_positions(cloth)
    triangles = hgeo.read_detail_int_array(cloth, "triangles")
    if triangles.size % 3:
        raise hgeo.GeometryError(
            f"the 'triangles' detail array has {triangles.size} entries, not a multiple of 3")
    w = _pin_flags(cloth)
    velocities = hgeo.read_point_floats(cloth, "v", 3) if cloth.findPointAttrib("v") is not None \
        else None
    import hou

    settings = parms.cloth_settings(node, float(start))
    colliders, collision = _collision_input(node, start)
    solver = ClothSolver(positions, triangles.reshape(-1, 3), pinned=np.flatnonzero(w == 0.0),
                         settings=settings, colliders=colliders, velocities=velocities,
                         point_attributes=hgeo.read_point_attributes(cloth) or None,
                         stitches=_stitches(cloth))
    sampled = tuple(d for d in CLOTH_SETTINGS if d.name in animated)
    return ClothSolverStepper(node, solver, hou.fps(), positions, collision, sampled)


def _pin_targets(state: ClothSolverStepper, frame: int) -> F64 | None:
    geo = _input_at(state.node, 2, frame)
    if geo is None:
        return None
    targets = hgeo.read_positions(geo)
    n, p = state.rest.shape[0], state.solver.untorn_model.pinned.size
    if targets.shape[0] not in (n, p):
        raise hgeo.GeometryError(
            f"pin targets (input 2) at frame {frame} have {targets.shape[0]} points; give one "
            f"per cloth point ({n}) or one per pinned point ({p}, in point number order)")
    return targets


# --- Spring chains -------------------------------------------------------------------------------

@dataclass
class ChainStepper:
    """Steps a spring-chain node's chains: per frame it samples the animated parameters, reads
    the animated polylines (input 0) and collider points (input 1) at that frame, steps each
    chain by 1 / fps under the matrix taking its rest root segment to the animated one, then
    ends the colliders' frame.

    Attributes:
        node: the spring-chain node (its inputs are read at each frame).
        fps: the scene's frame rate when the state was built (part of the state's key).
        chains: one :class:`~pbdcloth.springs.SpringChain` per polyline.
        points: point numbers of each chain, root first.
        rest: point positions at the start frame [m], shape (N, 3).
        spheres: sphere colliders, one per point of input 1.
        radii: pscale of each collider point at the start frame [m].
        animated: the time-dependent parameters, sampled at each frame.
        inputs: digest of the animated inputs of the last frame.
    """

    node: "hou.SopNode"
    fps: float
    chains: list["SpringChain"]
    points: list[NDArray[np.int64]]
    rest: F64
    spheres: list["Sphere"] = field(default_factory=list)
    radii: F64 = field(default_factory=lambda: np.zeros(0))
    animated: tuple[Setting, ...] = ()
    inputs: str = ""
    _animated_now: F64 | None = None
    _centers: F64 | None = None

    def advance(self, frame: int) -> None:
        if self.animated:
            self._sample(frame)
        self.inputs = self.read_inputs(frame)
        animated = self._animated_now
        assert animated is not None
        if self.spheres and self._centers is not None:
            for sphere, c in zip(self.spheres, self._centers, strict=True):
                sphere.move_to(c)
        dt = 1.0 / self.fps
        for chain, pts in zip(self.chains, self.points, strict=True):
            parent = parent_matrix(self.rest[pts[0]], animated[pts[0]],
                                   self.rest[pts[1]] - self.rest[pts[0]],
                                   animated[pts[1]] - animated[pts[0]])
            chain.step(dt, parent=parent)
        for sphere in self.spheres:
            sphere.end_frame()

    def _sample(self, frame: int) -> None:
        values = parms.evaluate_all(self.node, self.animated, float(frame))
        joint = {d.name: values[d.name] for d in SPRING_SETTINGS if d.name in values}
        for chain in self.chains:
            if joint:
                settings = chain.settings[0].replace(**joint)
                if settings != chain.settings[0]:
                    chain.settings = settings
            if "collision_passes" in values:
                chain.collision_passes = int(values["collision_passes"])
            if "settle_contacts" in values:
                chain.settle_contacts = bool(values["settle_contacts"])
        if "collider_radius_scale" in values:
            for sphere, r in zip(self.spheres, self.radii, strict=True):
                sphere.radius = float(r) * float(values["collider_radius_scale"])

    def read_inputs(self, frame: int) -> str:
        geo = _input_at(self.node, 0, frame)
        if geo is None:
            raise hgeo.GeometryError("input 0 (the chain polylines) is not connected")
        animated = hgeo.read_positions(geo)
        if animated.shape != self.rest.shape:
            raise hgeo.GeometryError(
                f"the chains have {animated.shape[0]} points at frame {frame} but "
                f"{self.rest.shape[0]} at the start frame; the point count must not change")
        self._animated_now = animated
        parts: list[bytes | str] = [animated.tobytes()]
        if self.spheres:
            collider_geo = _input_at(self.node, 1, frame)
            if collider_geo is not None:
                centers = hgeo.read_positions(collider_geo)
                if centers.shape[0] != len(self.spheres):
                    raise hgeo.GeometryError(
                        f"input 1 has {centers.shape[0]} collider points at frame {frame} but "
                        f"{len(self.spheres)} at the start frame; the count must not change")
                self._centers = centers
                parts.append(centers.tobytes())
        return _digest(*parts)

    def snapshot(self) -> dict[str, Any]:
        return {"chains": [c.state.copy() for c in self.chains],
                "settings": [c.settings for c in self.chains],
                "spheres": [(s.center.copy(), s.radius) for s in self.spheres]}

    def restore(self, snapshot: dict[str, Any]) -> None:
        for chain, state, settings in zip(self.chains, snapshot["chains"],
                                          snapshot["settings"], strict=True):
            if settings != chain.settings:
                chain.settings = settings
            chain.state = state
        for sphere, (center, radius) in zip(self.spheres, snapshot["spheres"], strict=True):
            sphere.move_to(center)
            sphere.radius = radius
            sphere.end_frame()

    def write(self, geo: "hou.Geometry", snapshot: dict[str, Any]) -> None:
        positions = hgeo.read_positions(geo)
        if positions.shape != self.rest.shape:
            raise hgeo.GeometryError("the chains' point count changed since the start frame")
        for state, pts in zip(snapshot["chains"], self.points, strict=True):
            positions[pts] = state.node_positions
        hgeo.write_positions(geo, positions)


def cook_spring_chains(node: "hou.SopNode") -> None:
    """PBD Spring Chains: show the current frame of the cached swing, stepping as needed."""
    with _node_errors():
        geo = _output_geometry(node)
        fingerprint = _spring_fingerprint(node)
        sim, snapshot = _simulate(
            node, ops.SPRING_CHAINS, ChainStepper, fingerprint,
            lambda start, animated: _build_chains(node, start, animated))
        sim.stepper.write(geo, snapshot)


def _spring_fingerprint(node: "hou.SopNode") -> str:
    """The chains' rest state and polylines, and the collider points' count and pscale, at the
    start frame (the polylines' point numbers are read once per simulation, not here)."""
    start = int(parms.evaluate(node, ops.START_FRAME.decl))
    chains = _input_at(node, 0, start)
    colliders = _input_at(node, 1, start)
    parts = [_positions_digest(chains), "none" if chains is None else str(chains.primCount()),
             "none" if colliders is None else str(colliders.pointCount())]
    if colliders is not None and colliders.findPointAttrib("pscale") is not None:
        parts.append(_digest(hgeo.read_point_floats(colliders, "pscale", 1).tobytes()))
    return _digest(*parts)


def _sphere_radii(geo: "hou.Geometry") -> F64:
    if geo.findPointAttrib("pscale") is None:
        raise hgeo.GeometryError("collider points (input 1) need a 'pscale' attribute: the "
                                 "radius of each sphere")
    radii = hgeo.read_point_floats(geo, "pscale", 1)
    if np.any(~np.isfinite(radii)) or np.any(radii < 0.0):
        bad = np.flatnonzero(~np.isfinite(radii) | (radii < 0.0))
        raise hgeo.GeometryError(f"collider points {bad[:8].tolist()} have a negative or "
                                 "non-finite pscale")
    return radii


def _build_chains(node: "hou.SopNode", start: int, animated: frozenset[str]) -> ChainStepper:
    import hou

    from ..colliders.shapes import Sphere
    from ..settings import SpringSettings
    from ..springs import SpringChain

    geo = _input_at(node, 0, start)
    if geo is None:
        raise hgeo.GeometryError("input 0 (the chain polylines) is not connected")
    values = parms.evaluate_all(node, ops.simulation_parameters(ops.SPRING_CHAINS), float(start))
    settings = SpringSettings(**{d.name: values[d.name] for d in SPRING_SETTINGS})
    rest = hgeo.read_positions(geo)
    spheres: list[Sphere] = []
    radii = np.zeros(0)
    scale = float(values["collider_radius_scale"])
    collider_geo = _input_at(node, 1, start)
    if collider_geo is not None and collider_geo.pointCount():
        centers = hgeo.read_positions(collider_geo)
        radii = _sphere_radii(collider_geo)
        spheres = [Sphere(c, float(r) * scale) for c, r in zip(centers, radii, strict=True)]
    points = hgeo.polylines(geo)
    chains = [SpringChain(rest[p], settings=settings, colliders=spheres,
                          collision_passes=int(values["collision_passes"]),
                          settle_contacts=bool(values["settle_contacts"])) for p in points]
    sampled = tuple(d for d in ops.simulation_parameters(ops.SPRING_CHAINS)
                    if d.name in animated and d.name != ops.START_FRAME.name)
    return ChainStepper(node, hou.fps(), chains, points, rest, spheres, radii, sampled)


def parent_matrix(root_rest: F64, root_now: F64, dir_rest: F64, dir_now: F64) -> F64:
    """World matrix (4x4, column vectors) taking a chain's rest frame to its animated root.

    Translation moves ``root_rest`` to ``root_now``; the rotation is the smallest one turning the
    first segment's rest direction ``dir_rest`` into its animated direction ``dir_now``
    (Rodrigues' formula; identity for parallel directions, a half turn about a perpendicular
    axis for opposite ones).
    """
    a = dir_rest / max(float(np.linalg.norm(dir_rest)), 1e-300)
    b = dir_now / max(float(np.linalg.norm(dir_now)), 1e-300)
    v = np.cross(a, b)
    c = float(np.dot(a, b))
    if c < -1.0 + 1e-12:
        axis = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0.0, 1.0, 0.0])
        axis /= np.linalg.norm(axis)
        rot = 2.0 * np.outer(axis, axis) - np.eye(3)
    else:
        vx = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
        rot = np.eye(3) + vx + vx @ vx / (1.0 + c)
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = root_now - rot @ root_rest
    return m
