"""Cook functions of the asset's Python SOPs; each HDA cook section is one call into here.

* :func:`cook_preprocess` - topology and rest data as detail arrays, ``v`` and ``w`` per point.
* :func:`cook_solver` - steps the cloth from the start frame to the current frame.
* :func:`cook_spring_chains` - swings polylines as VRM spring-bone chains.

The simulating SOPs keep their state on the node with ``setCachedUserData`` (Python objects that
live as long as the node, not saved with the .hip). Each cook computes a key from the parameter
values and the inputs at the start frame; a different key, or a current frame before the state's
frame (scrubbing backwards), restarts from the start frame. Then the state's run
(:class:`pbdcloth.pipeline.run.Run`, the loop the command line uses too) steps it one frame at a
time up to the current frame, reading animated inputs at each intermediate frame with
``inputGeometryAtFrame``, so skipping ahead several frames gives the same result as playing.

Errors in the input or the parameters raise ``hou.NodeError`` with a message naming the problem,
which Houdini shows on the node.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

import numpy as np
from numpy.typing import NDArray

from ..backends.base import FrameStats
from ..cloth.mesh import ClothMesh
from ..cloth.model import build_model
from ..cloth.topology import build_topology
from ..pipeline.run import Run
from ..solver import ClothSolver
from . import geometry as hgeo
from . import operators as ops
from . import parms

if TYPE_CHECKING:
    import hou

    from ..colliders.base import Collider
    from ..colliders.shapes import Sphere
    from ..springs import SpringChain

F64 = NDArray[np.float64]

STATE_KEY = "pbdcloth_state"
"""Name of the cached user data holding a simulating node's state."""

#: Inverse-mass flag written to ``w``: 0 on pinned points, 1 elsewhere. The solver derives the
#: masses from the areal density; ``w`` only marks the pins (as in the seed).
FREE_W = 1.0

COLOR_ARRAYS = ("stretch_colors", "bend_colors")


@contextlib.contextmanager
def _node_errors() -> Iterator[None]:
    """Turn the package's clear ValueErrors into ``hou.NodeError`` (shown on the node)."""
    import hou

    try:
        yield
    except (ValueError, FloatingPointError, ImportError) as exc:
        raise hou.NodeError(str(exc)) from None


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
    faces = hgeo.polygons(geo)
    pattern = parms.evaluate(node, ops.PIN_GROUP.decl)
    pins = hgeo.point_group_indices(geo, pattern)
    arrays = preprocess_arrays(positions, faces, pins)
    hgeo.write_detail_arrays(geo, arrays)
    w = np.full(positions.shape[0], FREE_W)
    w[pins] = 0.0
    hgeo.write_point_floats(geo, "w", w)
    hgeo.write_point_floats(geo, "v", np.zeros_like(positions))


# --- Shared state handling -----------------------------------------------------------------------

def _current_frame(node: "hou.SopNode") -> int:
    """The frame being cooked, from the hidden ``current_frame`` parameter ($FF)."""
    value = parms.evaluate(node, ops.CURRENT_FRAME_PARM.decl)
    return int(math.floor(value + 1e-6))


def _input_at(node: "hou.SopNode", index: int, frame: float) -> "hou.Geometry | None":
    """Input ``index`` evaluated at ``frame``, or None when nothing is connected."""
    inputs = node.inputs()
    if index >= len(inputs) or inputs[index] is None:
        return None
    return node.inputGeometryAtFrame(float(frame), index)


def _parameter_key(node: "hou.SopNode", op: ops.Operator) -> str:
    """Every parameter but the current frame, and the scene's frame rate (it sets dt)."""
    import hou

    values = parms.evaluate_all(
        node, (p.decl for p in op.parameters if p.name != ops.CURRENT_FRAME))
    values["$FPS"] = hou.fps()
    return json.dumps(values, sort_keys=True)


def _fingerprint(geo: "hou.Geometry | None", detail_ints: tuple[str, ...] = (),
                 point_floats: tuple[tuple[str, int], ...] = ()) -> str:
    """A digest of what a simulation reads from an input (bulk reads only)."""
    import hou

    if geo is None:
        return "none"
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{geo.pointCount()}:{geo.primCount()}".encode())
    if geo.pointCount():
        h.update(hgeo.read_positions(geo).tobytes())
    for name in detail_ints:
        if geo.findGlobalAttrib(name) is not None:
            h.update(np.asarray(geo.intListAttribValue(name), dtype=np.int64).tobytes())
    for name, size in point_floats:
        if geo.findPointAttrib(name) is not None:
            h.update(hgeo.read_point_floats(geo, name, size).tobytes())
    for prim in geo.prims():
        if isinstance(prim, hou.VDB):
            box = prim.activeVoxelBoundingBox()
            summary = (tuple(prim.voxelSize()), tuple(box.minvec()), tuple(box.maxvec()),
                       prim.activeVoxelCount(), prim.volumeMin(), prim.volumeMax(),
                       prim.volumeAverage(), prim.transform().asTuple())
            h.update(repr(summary).encode())
    return h.hexdigest()


# --- Cloth solver --------------------------------------------------------------------------------

@dataclass
class ClothSolverStepper:
    """Steps a solver node's cloth: per frame it reads the pin targets (input 2) and the VDB
    colliders' placement (input 1) at that frame, then steps the solver by 1 / fps.

    Attributes:
        node: the solver node (its inputs are read at each frame).
        solver: the core solver.
        fps: the scene's frame rate when the state was built (part of the state's key).
        rest: positions at the start frame [m], shape (N, 3).
        vdb_frames: lattice placement (:func:`~pbdcloth.houdini.vdb.index_frame`) of each VDB
            collider at the start frame; the first ``len(vdb_frames)`` solver colliders.
    """

    node: "hou.SopNode"
    solver: ClothSolver
    fps: float
    rest: F64
    vdb_frames: list[tuple[F64, F64]] = field(default_factory=list)

    def advance(self, frame: int) -> FrameStats:
        targets = _pin_targets(self, frame)
        if targets is not None:
            self.solver.set_pin_targets(targets)
        _move_vdb_colliders(self, frame)
        return self.solver.step(1.0 / self.fps)


@dataclass
class ClothNodeState:
    """A cloth simulation kept on a solver node between cooks.

    Attributes:
        key: parameters and start-frame inputs it was built from.
        start: start frame.
        run: the run stepping the cloth (:class:`~pbdcloth.pipeline.run.Run`); ``run.frame``
            is the frame the solver's state belongs to.
    """

    key: str
    start: int
    run: Run

    @property
    def stepper(self) -> ClothSolverStepper:
        stepper = self.run.stepper
        assert isinstance(stepper, ClothSolverStepper)
        return stepper

    @property
    def frame(self) -> int:
        """The frame the solver's state belongs to."""
        return self.run.frame

    @property
    def solver(self) -> ClothSolver:
        return self.stepper.solver

    @property
    def rest(self) -> F64:
        """Positions at the start frame [m], shape (N, 3)."""
        return self.stepper.rest


def cook_solver(node: "hou.SopNode") -> None:
    """PBD Cloth Solver: step from the start frame to the current frame, output P and v."""
    with _node_errors():
        _solve(node)


def _solver_key(node: "hou.SopNode", start: int) -> str:
    cloth = _input_at(node, 0, start)
    collider = _input_at(node, 1, start)
    parts = [
        _parameter_key(node, ops.SOLVER),
        _fingerprint(cloth, detail_ints=("triangles",), point_floats=(("w", 1), ("v", 3))),
        _fingerprint(collider),
        "pins-animated" if _input_at(node, 2, start) is not None else "pins-static",
    ]
    return "|".join(parts)


def _build_cloth(node: "hou.SopNode", key: str, start: int) -> ClothNodeState:
    cloth = _input_at(node, 0, start)
    if cloth is None:
        raise hgeo.GeometryError("input 0 (the preprocessed cloth) is not connected")
    if cloth.findGlobalAttrib("triangles") is None:
        raise hgeo.GeometryError(
            "input 0 has no 'triangles' detail array: connect the output of a PBD Cloth "
            "Preprocess node")
    positions = hgeo.read_positions(cloth)
    triangles = hgeo.read_detail_int_array(cloth, "triangles")
    if triangles.size % 3:
        raise hgeo.GeometryError(
            f"the 'triangles' detail array has {triangles.size} entries, not a multiple of 3")
    w = hgeo.read_point_floats(cloth, "w", 1) if cloth.findPointAttrib("w") is not None \
        else np.full(positions.shape[0], FREE_W)
    velocities = hgeo.read_point_floats(cloth, "v", 3) if cloth.findPointAttrib("v") is not None \
        else None
    import hou

    settings = parms.cloth_settings(node)
    colliders, vdb_frames = _cloth_colliders(node, start)
    solver = ClothSolver(positions, triangles.reshape(-1, 3), pinned=np.flatnonzero(w == 0.0),
                         settings=settings, colliders=colliders, velocities=velocities)
    stepper = ClothSolverStepper(node, solver, hou.fps(), positions, vdb_frames)
    return ClothNodeState(key=key, start=start, run=Run(stepper, start))


def _cloth_colliders(node: "hou.SopNode",
                     start: int) -> tuple[list["Collider"], list[tuple[F64, F64]]]:
    geo = _input_at(node, 1, start)
    if geo is None or geo.primCount() == 0:
        return [], []
    from .vdb import colliders_from_geometry, index_frame, vdb_prims

    voxel_size = parms.evaluate(node, ops.COLLIDER_VOXEL_SIZE.decl)
    band = parms.evaluate(node, ops.COLLIDER_BAND_VOXELS.decl)
    colliders = colliders_from_geometry(geo, voxel_size, band)
    return colliders, [index_frame(v) for v in vdb_prims(geo)]


def _move_vdb_colliders(state: ClothSolverStepper, frame: int) -> None:
    """Give each VDB collider its rigid motion from the start frame to ``frame``.

    The VDBs of input 1 are read at ``frame`` (their voxels are not re-read: the field is
    rigid); a moved or turned VDB moves its collider, interpolated over the frame's substeps.
    Polygon colliders keep their start-frame shape.
    """
    if not state.vdb_frames:
        return
    from .vdb import index_frame, rigid_motion, vdb_prims

    geo = _input_at(state.node, 1, frame)
    prims = vdb_prims(geo) if geo is not None else []
    if len(prims) != len(state.vdb_frames):
        raise hgeo.GeometryError(
            f"input 1 has {len(prims)} VDB(s) at frame {frame} but {len(state.vdb_frames)} at "
            "the start frame; the collider VDBs must persist (animate them with a transform)")
    for collider, prim, start in zip(state.solver.colliders, prims, state.vdb_frames,
                                     strict=False):
        move_to = getattr(collider, "move_to", None)
        if move_to is not None:
            move_to(rigid_motion(start, index_frame(prim)))


def _pin_targets(state: ClothSolverStepper, frame: int) -> F64 | None:
    geo = _input_at(state.node, 2, frame)
    if geo is None:
        return None
    targets = hgeo.read_positions(geo)
    n, p = state.rest.shape[0], state.solver.pinned.size
    if targets.shape[0] not in (n, p):
        raise hgeo.GeometryError(
            f"pin targets (input 2) at frame {frame} have {targets.shape[0]} points; give one "
            f"per cloth point ({n}) or one per pinned point ({p}, in point number order)")
    return targets


def _solve(node: "hou.SopNode") -> None:
    start = int(parms.evaluate(node, ops.START_FRAME.decl))
    current = _current_frame(node)
    key = _solver_key(node, start)
    state = node.cachedUserData(STATE_KEY)
    if not isinstance(state, ClothNodeState) or state.key != key \
            or (current < state.frame and state.frame > start):
        state = _build_cloth(node, key, start)
        node.setCachedUserData(STATE_KEY, state)
    state.run.run_to(current)
    geo = _output_geometry(node)
    if geo.pointCount() != state.rest.shape[0]:
        raise hgeo.GeometryError(
            f"input 0 has {geo.pointCount()} points at this frame but {state.rest.shape[0]} "
            f"at the start frame {start}; the cloth's point count must not change")
    hgeo.write_positions(geo, state.solver.positions)
    hgeo.write_point_floats(geo, "v", state.solver.velocities)


# --- Spring chains -------------------------------------------------------------------------------

@dataclass
class ChainStepper:
    """Steps a spring-chain node's chains: per frame it reads the animated polylines (input 0)
    and collider points (input 1) at that frame, steps each chain by 1 / fps under the matrix
    taking its rest root segment to the animated one, then ends the colliders' frame.

    Attributes:
        node: the spring-chain node (its inputs are read at each frame).
        fps: the scene's frame rate when the state was built (part of the state's key).
        chains: one :class:`~pbdcloth.springs.SpringChain` per polyline.
        points: point numbers of each chain, root first.
        rest: point positions at the start frame [m], shape (N, 3).
        spheres: sphere colliders, one per point of input 1.
        radius_scale: factor from a collider point's pscale to its sphere radius.
    """

    node: "hou.SopNode"
    fps: float
    chains: list["SpringChain"]
    points: list[NDArray[np.int64]]
    rest: F64
    spheres: list["Sphere"] = field(default_factory=list)
    radius_scale: float = 1.0

    def advance(self, frame: int) -> None:
        geo = _input_at(self.node, 0, frame)
        if geo is None:
            raise hgeo.GeometryError("input 0 (the chain polylines) is not connected")
        animated = hgeo.read_positions(geo)
        if animated.shape != self.rest.shape:
            raise hgeo.GeometryError(
                f"the chains have {animated.shape[0]} points at frame {frame} but "
                f"{self.rest.shape[0]} at the start frame; the point count must not change")
        if self.spheres:
            collider_geo = _input_at(self.node, 1, frame)
            if collider_geo is not None:
                centers = hgeo.read_positions(collider_geo)
                if centers.shape[0] != len(self.spheres):
                    raise hgeo.GeometryError(
                        f"input 1 has {centers.shape[0]} collider points at frame {frame} but "
                        f"{len(self.spheres)} at the start frame; the count must not change")
                for sphere, c in zip(self.spheres, centers, strict=True):
                    sphere.move_to(c)
        dt = 1.0 / self.fps
        for chain, pts in zip(self.chains, self.points, strict=True):
            parent = parent_matrix(self.rest[pts[0]], animated[pts[0]],
                                   self.rest[pts[1]] - self.rest[pts[0]],
                                   animated[pts[1]] - animated[pts[0]])
            chain.step(dt, parent=parent)
        for sphere in self.spheres:
            sphere.end_frame()


@dataclass
class ChainState:
    """Spring chains kept on a node between cooks.

    Attributes:
        key: parameters and start-frame input it was built from.
        run: the run stepping the chains (:class:`~pbdcloth.pipeline.run.Run`); ``run.frame``
            is the frame the chains' state belongs to.
    """

    key: str
    run: Run

    @property
    def stepper(self) -> ChainStepper:
        stepper = self.run.stepper
        assert isinstance(stepper, ChainStepper)
        return stepper

    @property
    def frame(self) -> int:
        """The frame the chains' state belongs to."""
        return self.run.frame


def cook_spring_chains(node: "hou.SopNode") -> None:
    """PBD Spring Chains: swing each polyline from the start frame to the current frame."""
    with _node_errors():
        _swing(node)


def _spring_key(node: "hou.SopNode", start: int) -> str:
    chains = _input_at(node, 0, start)
    colliders = _input_at(node, 1, start)
    topology = "none"
    if chains is not None:
        topology = hashlib.blake2b(
            b"".join(c.tobytes() for c in hgeo.polylines(chains)), digest_size=16).hexdigest()
    collider_count = "none" if colliders is None else str(colliders.pointCount())
    return "|".join([_parameter_key(node, ops.SPRING_CHAINS), _fingerprint(chains), topology,
                     collider_count])


def _sphere_radii(geo: "hou.Geometry", scale: float) -> F64:
    if geo.findPointAttrib("pscale") is None:
        raise hgeo.GeometryError("collider points (input 1) need a 'pscale' attribute: the "
                                 "radius of each sphere")
    radii = hgeo.read_point_floats(geo, "pscale", 1) * scale
    if np.any(~np.isfinite(radii)) or np.any(radii < 0.0):
        bad = np.flatnonzero(~np.isfinite(radii) | (radii < 0.0))
        raise hgeo.GeometryError(f"collider points {bad[:8].tolist()} have a negative or "
                                 "non-finite pscale")
    return radii


def _build_chains(node: "hou.SopNode", key: str, start: int) -> ChainState:
    import hou

    from ..colliders.shapes import Sphere
    from ..settings import SPRING_SETTINGS, SpringSettings
    from ..springs import SpringChain

    geo = _input_at(node, 0, start)
    if geo is None:
        raise hgeo.GeometryError("input 0 (the chain polylines) is not connected")
    values = parms.evaluate_all(node, (p.decl for p in ops.SPRING_PARAMETERS))
    settings = SpringSettings(**{d.name: values[d.name] for d in SPRING_SETTINGS})
    rest = hgeo.read_positions(geo)
    spheres: list[Sphere] = []
    scale = float(values["collider_radius_scale"])
    collider_geo = _input_at(node, 1, start)
    if collider_geo is not None and collider_geo.pointCount():
        centers = hgeo.read_positions(collider_geo)
        radii = _sphere_radii(collider_geo, scale)
        spheres = [Sphere(c, float(r)) for c, r in zip(centers, radii, strict=True)]
    points = hgeo.polylines(geo)
    chains = [SpringChain(rest[p], settings=settings, colliders=spheres,
                          collision_passes=int(values["collision_passes"]),
                          settle_contacts=bool(values["settle_contacts"])) for p in points]
    stepper = ChainStepper(node, hou.fps(), chains, points, rest, spheres, scale)
    return ChainState(key=key, run=Run(stepper, start))


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


def _swing(node: "hou.SopNode") -> None:
    start = int(parms.evaluate(node, ops.START_FRAME.decl))
    current = _current_frame(node)
    key = _spring_key(node, start)
    state = node.cachedUserData(STATE_KEY)
    if not isinstance(state, ChainState) or state.key != key \
            or (current < state.frame and state.frame > start):
        state = _build_chains(node, key, start)
        node.setCachedUserData(STATE_KEY, state)
    state.run.run_to(current)
    chains = state.stepper
    out = _output_geometry(node)
    positions = hgeo.read_positions(out)
    if positions.shape != chains.rest.shape:
        raise hgeo.GeometryError("the chains' point count changed since the start frame")
    for chain, pts in zip(chains.chains, chains.points, strict=True):
        positions[pts] = np.asarray(chain.positions)
    hgeo.write_positions(out, positions)
