"""ClothSolver: the user-facing cloth simulation object.

It validates the input, prepares the static :class:`~pbdcloth.model.ClothModel` once, holds the
state (positions, velocities), the controls (pin targets, colliders) and steps them frame by frame
with the backend the settings choose.

Example::

    solver = ClothSolver(positions, faces, pinned=[0, 9], settings=ClothSettings(substeps=20),
                         colliders=[Sphere((0, 1, 0), 0.5)])
    for frame in range(48):
        solver.step(1 / 24)
        write(solver.positions)
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Iterable, Mapping
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arrays import MAX_COORDINATE, F, real_array
from .backends.base import Backend, Control, FrameStats, SimulationDiverged, SolverInputError
from .backends.numpy_backend import NumpyBackend
from .cloth.mesh import ClothMesh
from .cloth.model import ClothModel, build_model
from .cloth.plasticity import plastic_rest_angles, with_bend_rest
from .cloth.state import ClothState
from .cloth.tear import (
    Breakable,
    bend_rest_in_topology_order,
    broken,
    carry_bend_rest,
    carry_extras,
    sew_and_break,
    stitch_breakables,
    stretch_breakable,
    tear_edges,
)
from .cloth.torn import restore_torn, torn_arrays
from .colliders.base import Collider
from .selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from .settings import BackendChoice, ClothSettings, SettingsError

__all__ = ["ClothSolver", "MAX_DT", "MAX_SPEED", "MIN_DT", "SimulationDiverged",
           "SolverInputError", "make_backend"]

#: Range of a frame's time step ``dt`` [s]: below 1 microsecond XPBD's alpha~ = compliance / h^2
#: leaves float range; above 10 s a frame is no animation step.
MIN_DT, MAX_DT = 1e-6, 10.0
#: Largest speed accepted for initial or restored velocities [m/s].
MAX_SPEED = 1e6


def _first_bad_particle(state: ClothState) -> int | None:
    """The lowest particle index whose position or velocity is not finite, or None."""
    if state.is_finite():
        return None
    ok = np.isfinite(state.positions).all(axis=1) & np.isfinite(state.velocities).all(axis=1)
    return int(np.flatnonzero(~ok)[0])


def make_backend(model: ClothModel, settings: ClothSettings,
                 tuning: SelfCollisionTuning = DEFAULT_TUNING) -> Backend:
    """The backend the settings ask for; ``auto`` takes Warp when it imports, else numpy."""
    if settings.backend == BackendChoice.NUMPY:
        return NumpyBackend(model, tuning=tuning)
    try:
        from .backends.warp.backend import WarpBackend  # optional dependency
    except ImportError as exc:
        if settings.backend == BackendChoice.AUTO:
            return NumpyBackend(model, tuning=tuning)
        raise SettingsError(
            f"backend 'warp' needs NVIDIA Warp (pip install 'pbdcloth[warp]'): {exc}"
        ) from None
    return WarpBackend(model, device=settings.device or None, tuning=tuning)


class ClothSolver:
    """A cloth simulation: mesh + pins + settings + colliders, stepped one frame at a time.

    Holds the static :attr:`model`, the time-varying :attr:`state` and the caller's controls
    (pin targets, colliders, settings), and steps them with a backend's
    ``step(state_in, state_out, control, dt)``.

    Args:
        positions: rest positions (N, 3) [m]; also the initial positions.
        faces: triangles (F, 3), quads (F, 4) or a list of polygons of point indices.
        pinned: indices (or a boolean mask) of particles held in place; ``None`` for none.
        settings: :class:`ClothSettings`; defaults when ``None``.
        colliders: obstacles (Plane, Sphere, Capsule, SdfCollider, ...).
        velocities: initial velocities (N, 3) [m/s]; zero when ``None``.
        self_collision_tuning: the self-collision method's constants (tests and benchmarks
            pass another :class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning`).
        point_attributes: per-point attributes by name, (N,) arrays
            (:data:`~pbdcloth.cloth.attributes.POINT_ATTRIBUTES`: ``mass_scale``,
            ``stretch_scale``, ``shear_scale``, ``bend_scale``, ``pin_weight``,
            ``thickness_scale``, ``friction_scale``). A pin weight of 1 adds a hard pin (to
            :attr:`pinned`), one in (0, 1) a soft pin (:attr:`soft_pinned`); the contact
            scales multiply each point's collider thickness and friction.
        stitches: stitch / weld constraints between point pairs
            (:mod:`pbdcloth.cloth.stitches`: (K, 2) pairs, (K, 3) rows (i, j, rest) or a
            :class:`~pbdcloth.cloth.stitches.Stitches`).
        triangle_stitches: stitches from points to points inside triangles
            (:class:`~pbdcloth.cloth.stitches.TriangleStitches`).

    Raises:
        MeshError: bad mesh or pins (see :class:`~pbdcloth.cloth.mesh.ClothMesh`), bad point
            attributes (``PointAttributeError``) or stitches (``StitchError``), both MeshErrors.
        SettingsError: out-of-range settings.
    """

    def __init__(
        self,
        positions: ArrayLike,
        faces: Any,
        pinned: ArrayLike | None = None,
        settings: ClothSettings | None = None,
        colliders: Sequence[Collider] | None = (),
        velocities: ArrayLike | None = None,
        self_collision_tuning: SelfCollisionTuning = DEFAULT_TUNING,
        point_attributes: Mapping[str, ArrayLike] | None = None,
        stitches: Any = None,
        triangle_stitches: Any = None,
    ) -> None:
        self._settings = self._check_settings(settings if settings is not None else ClothSettings())
        mesh = ClothMesh.from_arrays(positions, faces)
        self._point_attributes, self._stitches = point_attributes, stitches
        self._triangle_stitches = triangle_stitches
        self.model: ClothModel = build_model(mesh, pinned, self._settings.density,
                                             point_attributes, stitches, triangle_stitches)
        self.colliders: list[Collider] = self._check_colliders(colliders)
        self._tuning = self_collision_tuning
        x = mesh.positions.copy()
        v = np.zeros_like(x)
        if velocities is not None:
            v[:] = real_array(velocities, "velocities", SolverInputError, shape=x.shape,
                              limit=MAX_SPEED)
            v[self.model.pinned] = 0.0
        self._state = ClothState(x, v)
        self._pin_start = x[self.model.pinned].copy()
        self._pin_end = self._pin_start.copy()
        self._soft_start = x[self.model.soft_pins.particle].copy()
        self._soft_end = self._soft_start.copy()
        self._backend: Backend = make_backend(self.model, self._settings, self._tuning)
        self.last_stats = FrameStats()
        self.last_frame_seconds = 0.0
        self._untorn = self.model
        self._origin: NDArray[np.intp] = np.arange(mesh.point_count, dtype=np.intp)
        self._pin_origin_rows: NDArray[np.intp] = np.arange(self.model.pinned.size,
                                                            dtype=np.intp)
        self.torn_edges = 0
        """Mesh edges torn since the start (``settings.tear_strain``)."""
        self.broken_stitches = 0
        """Stitches (point-pair and point-to-triangle) broken since the start."""

    # --- settings ----------------------------------------------------------------------------
    @staticmethod
    def _check_settings(settings: object) -> ClothSettings:
        if not isinstance(settings, ClothSettings):
            raise SettingsError(f"settings must be a ClothSettings, got {type(settings).__name__}")
        return settings

    @staticmethod
    def _check_colliders(colliders: object) -> list[Collider]:
        if isinstance(colliders, Collider):
            raise SolverInputError(f"colliders must be a list of colliders, got a bare "
                                   f"{colliders!r}; pass [{type(colliders).__name__}(...)]")
        if colliders is None:
            return []
        if isinstance(colliders, (str, bytes, dict)) or not isinstance(colliders, Iterable):
            raise SolverInputError(f"colliders must be a list of colliders (Plane, Sphere, "
                                   f"Capsule, SdfCollider), got {type(colliders).__name__}")
        out = list(colliders)
        for k, c in enumerate(out):
            if not isinstance(c, Collider):
                raise SolverInputError(
                    f"collider {k} is a {type(c).__name__}, not a pbdcloth collider "
                    "(Plane, Sphere, Capsule, SdfCollider)"
                )
        return out

    @property
    def settings(self) -> ClothSettings:
        return self._settings

    @settings.setter
    def settings(self, value: ClothSettings) -> None:
        """Change settings between frames. Density and backend changes rebuild the model."""
        value = self._check_settings(value)
        old = self._settings
        self._settings = value
        if value.density != old.density:
            torn = self._changed
            self._untorn = build_model(self._untorn.mesh, self._untorn.pinned, value.density,
                                       self._point_attributes, self._stitches,
                                       self._triangle_stitches)
            m = self.model
            self.model = (build_model(m.mesh, m.pinned, value.density, m.point_attributes,
                                      m.stitch_list, m.triangle_stitch_list,
                                      cut=m.topology.cut) if torn else self._untorn)
            if torn:
                rest = bend_rest_in_topology_order(m)
                self.model = with_bend_rest(self.model, rest[self.model.bend.source])
        if value.density != old.density or (value.backend, value.device) != (old.backend,
                                                                            old.device):
            self._backend = make_backend(self.model, value, self._tuning)

    @property
    def backend_name(self) -> str:
        return self._backend.name

    @property
    def backend(self) -> Backend:
        """The backend object that steps this solver (read-only; see :meth:`use_backend`)."""
        return self._backend

    def use_backend(self, backend: Backend) -> None:
        """Step with a backend object built for this solver's model (e.g. the reference loop)."""
        self._backend = backend

    # --- state -------------------------------------------------------------------------------
    @property
    def state(self) -> ClothState:
        """The current :class:`~pbdcloth.cloth.state.ClothState` (its arrays are read-only)."""
        return self._state

    @property
    def frame(self) -> int:
        """Frames stepped since the start."""
        return self._state.frame

    @property
    def time(self) -> float:
        """Simulated time since the start [s]."""
        return self._state.time

    @property
    def positions(self) -> F:
        """Current particle positions [m], shape (N, 3), read-only.

        Each frame makes a new array, so an array kept from an earlier frame stays as it was.
        Assign to the property to teleport the cloth.
        """
        return self._state.positions

    @positions.setter
    def positions(self, value: ArrayLike) -> None:
        self._state.positions = self._checked("positions", value, self._state.positions.shape)

    @property
    def velocities(self) -> F:
        """Current particle velocities [m/s], shape (N, 3), read-only (new array each frame)."""
        return self._state.velocities

    @velocities.setter
    def velocities(self, value: ArrayLike) -> None:
        self._state.velocities = self._checked("velocities", value,
                                               self._state.velocities.shape, MAX_SPEED)

    @staticmethod
    def _checked(name: str, value: object, shape: tuple[int, ...],
                 limit: float = MAX_COORDINATE) -> F:
        return real_array(value, name, SolverInputError, shape=shape, limit=limit)

    @property
    def pinned(self) -> NDArray[np.int64]:
        """Indices of the pinned particles, sorted, shape (P,)."""
        return self.model.pinned

    @property
    def soft_pinned(self) -> NDArray[np.intp]:
        """Indices of the soft-pinned particles (pin weight in (0, 1)), sorted, shape (S,)."""
        return self.model.soft_pins.particle

    @property
    def triangles(self) -> NDArray[np.int64]:
        return self.model.mesh.triangles

    # --- controls ----------------------------------------------------------------------------
    def set_pin_targets(self, targets: ArrayLike) -> None:
        """Target positions of the pinned particles at the end of the coming frame.

        ``targets`` is (P, 3) in the order of :attr:`pinned` (sorted indices), or (N, 3) for all
        particles (only the pinned rows are used, soft pins' included). Within the frame the
        pins move linearly from their previous targets to these, substep by substep. After a
        tear the shapes of the input cloth are accepted too ((P0, 3) for its pins, (N0, 3) for
        its points): every copy of a split pin follows its input pin's target.
        """
        arr = real_array(targets, "pin targets", SolverInputError, finite=False)
        pins = self.model.pinned
        if arr.shape == self._state.positions.shape:
            if self.model.soft_pins.count:
                self.set_soft_pin_targets(arr)
            arr = arr[pins]
        elif self._changed and arr.shape == (self._untorn.pinned.size, 3):
            arr = arr[self._pin_origin_rows]
        elif self._changed and arr.shape == (self._untorn.particle_count, 3):
            if self.model.soft_pins.count:
                self.set_soft_pin_targets(arr[self._origin])
            arr = arr[self._origin[pins]]
        if arr.shape != (pins.size, 3):
            raise SolverInputError(
                f"pin targets must have shape ({pins.size}, 3) (one per pinned point, in sorted "
                f"index order) or {self._state.positions.shape}, got {arr.shape}"
            )
        bad = np.flatnonzero(~(np.isfinite(arr) & (np.abs(arr) <= MAX_COORDINATE)).all(axis=1))
        if bad.size:
            raise SolverInputError(f"pin targets must be finite and within "
                                   f"+-{MAX_COORDINATE:g} m; rows {bad[:8].tolist()} are not")
        self._pin_end = arr.copy()

    def set_soft_pin_targets(self, targets: ArrayLike) -> None:
        """Target positions of the soft-pinned particles at the end of the coming frame:
        (S, 3) in the order of :attr:`soft_pinned`, or (N, 3) (the soft-pinned rows are used;
        after a tear also the input cloth's (N0, 3): copies follow their input point)."""
        arr = real_array(targets, "soft pin targets", SolverInputError, finite=False)
        soft = self.model.soft_pins.particle
        if arr.shape == self._state.positions.shape:
            arr = arr[soft]
        elif self._changed and arr.shape == (self._untorn.particle_count, 3):
            arr = arr[self._origin[soft]]
        if arr.shape != (soft.size, 3):
            raise SolverInputError(
                f"soft pin targets must have shape ({soft.size}, 3) (one per soft-pinned point, "
                f"in sorted index order) or {self._state.positions.shape}, got {arr.shape}")
        bad = np.flatnonzero(~(np.isfinite(arr) & (np.abs(arr) <= MAX_COORDINATE)).all(axis=1))
        if bad.size:
            raise SolverInputError(f"soft pin targets must be finite and within "
                                   f"+-{MAX_COORDINATE:g} m; rows {bad[:8].tolist()} are not")
        self._soft_end = arr.copy()

    def control(self) -> Control:
        """The controls of the coming frame: settings, pin targets, colliders."""
        soft = self.model.soft_pins.count > 0
        return Control(settings=self._settings, pin_start=self._pin_start, pin_end=self._pin_end,
                       colliders=tuple(self.colliders),
                       soft_start=self._soft_start if soft else None,
                       soft_end=self._soft_end if soft else None)

    # --- checkpoints -------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Exact copies of everything the solver carries from frame to frame: ``positions``,
        ``velocities`` (N, 3), ``pin_start``, ``pin_end`` (P, 3), ``frame`` and ``time``.

        With soft pins also ``soft_start``, ``soft_end`` (S, 3). Colliders are controls, not
        state: whoever animates them restores their poses. A cloth whose model changed (a
        tear, stitches sewn or broken, plastic rest angles) adds ``torn``: the arrays that
        rebuild its model exactly (:func:`~pbdcloth.cloth.torn.torn_arrays`).
        """
        s = self._state
        out: dict[str, Any] = {
            "positions": s.positions.copy(), "velocities": s.velocities.copy(),
            "pin_start": self._pin_start.copy(), "pin_end": self._pin_end.copy(),
            "frame": int(s.frame), "time": float(s.time)}
        if self.model.soft_pins.count:
            out["soft_start"], out["soft_end"] = self._soft_start.copy(), self._soft_end.copy()
        if self._changed:
            out["torn"] = torn_arrays(self.model, self._origin, self.torn_edges)
        return out

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`get_state` snapshot bit for bit (shapes and finiteness checked).

        A snapshot of a torn cloth (with ``torn``) puts the torn model back; one without puts
        back the cloth as it was built.
        """
        keys = ("positions", "velocities", "pin_start", "pin_end", "frame", "time")
        if not isinstance(state, dict) or any(k not in state for k in keys):
            have = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise SolverInputError(f"a solver state needs the keys {list(keys)} (from "
                                   f"get_state), got {have}")
        model, origin, rows, torn = self._untorn, None, None, 0
        if state.get("torn") is not None:
            model, origin, rows, torn = restore_torn(self._untorn, state["torn"])
        n_shape = (model.particle_count, 3)
        p_shape = (model.pinned.size, 3)
        arrays = {name: self._checked(f"state '{name}'", state[name], shape,
                                      MAX_SPEED if name == "velocities" else MAX_COORDINATE)
                  for name, shape in (("positions", n_shape), ("velocities", n_shape),
                                      ("pin_start", p_shape), ("pin_end", p_shape))}
        frame, when = state["frame"], state["time"]
        if isinstance(frame, bool) or not isinstance(frame, numbers.Integral) or frame < 0:
            raise SolverInputError(f"state 'frame' must be a whole number >= 0, got {frame!r}")
        if isinstance(when, bool) or not isinstance(when, numbers.Real) \
                or not np.isfinite(float(when)):
            raise SolverInputError(f"state 'time' must be a finite number, got {when!r}")
        s_shape = (model.soft_pins.count, 3)
        soft = {name: self._checked(f"state '{name}'", state[name], s_shape)
                for name in ("soft_start", "soft_end") if name in state}
        if model is not self.model:
            self._use_model(model)
        self._origin = (np.arange(model.particle_count, dtype=np.intp) if origin is None
                        else origin)
        self._pin_origin_rows = (np.arange(model.pinned.size, dtype=np.intp) if rows is None
                                 else rows)
        self.torn_edges = torn
        self.broken_stitches = (self._untorn.stitch_list.count - model.stitch_list.count
                                + self._untorn.triangle_stitch_list.count
                                - model.triangle_stitch_list.count)
        self._state = ClothState(arrays["positions"], arrays["velocities"], int(frame),
                                 float(when))
        self._pin_start, self._pin_end = arrays["pin_start"], arrays["pin_end"]
        at_rest = model.mesh.positions[model.soft_pins.particle]
        self._soft_start = soft.get("soft_start", at_rest.copy())
        self._soft_end = soft.get("soft_end", at_rest.copy())

    # --- stepping ----------------------------------------------------------------------------
    def step(self, dt: float = 1.0 / 24.0) -> FrameStats:
        """Advance one frame of length ``dt`` [s] = ``settings.substeps`` substeps.

        The backend steps the state under this frame's controls; then the controls move on:
        the pins' end targets become the next frame's start, each collider's end pose its start.
        """
        if isinstance(dt, (bool, np.bool_)) or not isinstance(dt, numbers.Real) \
                or not MIN_DT <= dt <= MAX_DT:
            raise SolverInputError(f"frame time step dt must be a positive number in "
                                   f"[{MIN_DT:g}, {MAX_DT:g}] s, got {dt!r}")
        start = time.perf_counter()
        out = ClothState(self._state.positions, self._state.velocities, self._state.frame,
                         self._state.time)
        stats = self._step_backend(out, float(dt))
        self._pin_start = self._pin_end.copy()
        self._soft_start = self._soft_end.copy()
        for collider in self.colliders:
            collider.end_frame()
        bad = _first_bad_particle(out)
        if bad is not None:
            raise SimulationDiverged(self.frame + 1, bad)
        out.positions.flags.writeable = False
        out.velocities.flags.writeable = False
        out.frame += 1
        out.time += float(dt)
        self._state = out
        if self._settings.tear_strain > 0.0 or self.model.stitch_list.watched \
                or self.model.triangle_stitch_list.watched:
            stats.extra.update(self._tear())
        if self._settings.plasticity_rate > 0.0:
            stats.extra["yielded_hinges"] = float(self._yield_hinges(float(dt)))
        self.last_stats = stats
        self.last_frame_seconds = time.perf_counter() - start
        return stats

    # --- tearing -----------------------------------------------------------------------------
    @property
    def is_torn(self) -> bool:
        """True once a mesh edge has torn (the topology is no longer the input's; a broken
        stitch alone changes no topology)."""
        return self.torn_edges > 0

    @property
    def _changed(self) -> bool:
        """True once the model is no longer the one the cloth was built with (a tear, a stitch
        sewn or broken, a hinge's rest angle moved by plasticity)."""
        return self.model is not self._untorn

    @property
    def untorn_model(self) -> ClothModel:
        """The model the cloth was built with, before any tear."""
        return self._untorn

    @property
    def point_origin(self) -> NDArray[np.intp]:
        """The input point each particle comes from, shape (N,) (``arange(N)`` until a tear
        splits points; copies follow the input's points)."""
        return self._origin

    def breakables(self) -> list[Breakable]:
        """The link families checked for breaking after each frame: the mesh edges when
        ``tear_strain > 0`` (:func:`~pbdcloth.cloth.tear.stretch_breakable`) and the stitches
        with a finite break length (:func:`~pbdcloth.cloth.tear.stitch_breakables`)."""
        out = stitch_breakables(self.model)
        if self._settings.tear_strain > 0.0:
            out.insert(0, stretch_breakable(self.model, self._settings.tear_strain))
        return out

    def _tear(self) -> dict[str, float]:
        """At the end of the frame: stitches that closed become sewn, sewn stitches past
        their break length break, then mesh edges past their limit tear (every family
        measured at the frame's positions); the frame's ``torn_edges``, ``new_points`` and
        ``broken_stitches``."""
        x = self._state.positions
        model, broken_stitches = sew_and_break(self.model, x)
        if model is not self.model:
            self._use_model(model)
        torn_edges = new_points = 0
        if self._settings.tear_strain > 0.0:
            edges = broken(x, stretch_breakable(self.model, self._settings.tear_strain))
            if edges.size:
                tear = tear_edges(self.model, edges)
                origin = self._origin[tear.origin]
                st, tri = self.model.stitch_list, self.model.triangle_stitch_list
                model = carry_extras(tear.model, self._untorn, origin, st.index, tri.index,
                                     st.sewn, tri.sewn)
                model = carry_bend_rest(model, self.model, tear.origin)
                self._apply_tear(model, tear.origin, tear.pin_rows)
                torn_edges, new_points = tear.torn_edges, tear.new_particles
        self.torn_edges += torn_edges
        self.broken_stitches += broken_stitches
        return {"torn_edges": float(torn_edges), "new_points": float(new_points),
                "broken_stitches": float(broken_stitches)}

    def _yield_hinges(self, dt: float) -> int:
        """Bend plasticity at the end of a frame of ``dt`` [s]
        (:mod:`pbdcloth.cloth.plasticity`): the number of hinges whose rest angle moved."""
        s = self._settings
        found = plastic_rest_angles(self._state.positions, self.model, s.plasticity_threshold,
                                    s.plasticity_rate, dt)
        if found is None:
            return 0
        self._use_model(with_bend_rest(self.model, found[0]))
        return found[1]

    def _apply_tear(self, model: ClothModel, origin: NDArray[np.intp],
                    pin_rows: NDArray[np.intp]) -> None:
        """Carry the state and the pin targets over to a torn model (copies take their
        parent's position, velocity and targets, a soft pin's included) and rebuild the
        backend."""
        s = self._state
        x, v = s.positions[origin], s.velocities[origin]
        x.flags.writeable = False
        v.flags.writeable = False
        self._state = ClothState(x, v, s.frame, s.time)
        self._pin_start = self._pin_start[pin_rows]
        self._pin_end = self._pin_end[pin_rows]
        soft_rows = np.searchsorted(self.model.soft_pins.particle,
                                    origin[model.soft_pins.particle])
        self._soft_start = self._soft_start[soft_rows]
        self._soft_end = self._soft_end[soft_rows]
        self._origin = self._origin[origin]
        self._pin_origin_rows = self._pin_origin_rows[pin_rows]
        self._use_model(model)

    def _use_model(self, model: ClothModel) -> None:
        """Step ``model`` from now on, with a backend the settings choose built for it (one set
        with :meth:`use_backend` is replaced)."""
        self.model = model
        self._backend = make_backend(model, self._settings, self._tuning)

    def _step_backend(self, out: ClothState, dt: float) -> FrameStats:
        """The backend's step; with ``backend="auto"``, a frame whose colliders the Warp
        backend cannot evaluate (it raises before touching the state) moves this solver onto
        the numpy backend for good, and the frame is stepped there."""
        if self._settings.backend != BackendChoice.AUTO or self._backend.name != "warp":
            return self._backend.step(self._state, out, self.control(), dt)
        from .backends.warp.colliders import WarpUnsupportedError  # Warp imported: it is here

        try:
            return self._backend.step(self._state, out, self.control(), dt)
        except WarpUnsupportedError:
            pass
        self._backend = NumpyBackend(self.model, tuning=self._tuning)
        return self._backend.step(self._state, out, self.control(), dt)

    # --- measurements ------------------------------------------------------------------------
    def edge_strain(self) -> F:
        """Relative stretch (|x_i - x_j| - L0) / L0 of every mesh edge, shape (E,)."""
        top = self.model.topology
        d = self._state.positions[top.edges[:, 0]] - self._state.positions[top.edges[:, 1]]
        return np.linalg.norm(d, axis=1) / top.edge_rest_length - 1.0

    def max_strain(self) -> float:
        """Largest edge stretch (positive strain) over the mesh."""
        return float(max(self.edge_strain().max(), 0.0))

    def point_strain(self) -> F:
        """Per-point strain: mean |strain| of the edges at each point, shape (N,)."""
        top = self.model.topology
        s = np.abs(self.edge_strain())
        n = self.model.particle_count
        total = np.bincount(top.edges.reshape(-1), weights=np.repeat(s, 2), minlength=n)
        count = np.bincount(top.edges.reshape(-1), minlength=n)
        return total / np.maximum(count, 1)

    def kinetic_energy(self) -> float:
        """Sum of 1/2 m |v|^2 over free particles [J]."""
        free = self.model.inv_mass > 0.0
        m = self.model.mass[free]
        return float(0.5 * (m * (self._state.velocities[free] ** 2).sum(axis=1)).sum())
