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

import time
from typing import Any, Protocol, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .backends.numpy_backend import FrameStats, NumpyBackend
from .colliders.base import Collider
from .cloth.mesh import ClothMesh
from .cloth.model import ClothModel, build_model
from .settings import ClothSettings, SettingsError

F = NDArray[np.float64]


class Backend(Protocol):
    """What a backend offers the solver: one frame of substeps on (N, 3) state arrays."""

    name: str

    def step(
        self, x: F, v: F, settings: ClothSettings, dt: float, pin_start: F, pin_end: F,
        colliders: Sequence[Collider],
    ) -> tuple[F, F, FrameStats]: ...


class SolverInputError(ValueError):
    """A value given to the solver at run time (time step, targets, colliders) is unusable."""


def make_backend(model: ClothModel, settings: ClothSettings) -> Backend:
    """The backend the settings ask for; ``auto`` takes Warp when it imports, else numpy."""
    if settings.backend == "numpy":
        return NumpyBackend(model)
    try:
        from .backends.warp.backend import WarpBackend  # optional dependency
    except ImportError as exc:
        if settings.backend == "auto":
            return NumpyBackend(model)
        raise SettingsError(
            f"backend 'warp' needs NVIDIA Warp (pip install 'pbdcloth[warp]'): {exc}"
        ) from None
    return WarpBackend(model, device=settings.device or None)


class ClothSolver:
    """A cloth simulation: mesh + pins + settings + colliders, stepped one frame at a time.

    Args:
        positions: rest positions (N, 3) [m]; also the initial positions.
        faces: triangles (F, 3), quads (F, 4) or a list of polygons of point indices.
        pinned: indices (or a boolean mask) of particles held in place; ``None`` for none.
        settings: :class:`ClothSettings`; defaults when ``None``.
        colliders: obstacles (Plane, Sphere, Capsule, SdfCollider, ...).
        velocities: initial velocities (N, 3) [m/s]; zero when ``None``.

    Raises:
        MeshError: bad mesh or pins (see :class:`~pbdcloth.mesh.ClothMesh`).
        SettingsError: out-of-range settings.
    """

    def __init__(
        self,
        positions: ArrayLike,
        faces: Any,
        pinned: ArrayLike | None = None,
        settings: ClothSettings | None = None,
        colliders: Sequence[Collider] = (),
        velocities: ArrayLike | None = None,
    ) -> None:
        self._settings = self._check_settings(settings if settings is not None else ClothSettings())
        mesh = ClothMesh.from_arrays(positions, faces)
        self.model: ClothModel = build_model(mesh, pinned, self._settings.density)
        self.colliders: list[Collider] = self._check_colliders(colliders)
        self._x = mesh.positions.copy()
        self._v = np.zeros_like(self._x)
        if velocities is not None:
            vel = np.asarray(velocities, dtype=np.float64)
            if vel.shape != self._x.shape or not np.all(np.isfinite(vel)):
                raise SolverInputError(
                    f"velocities must be a finite array of shape {self._x.shape}, got {vel.shape}"
                )
            self._v[:] = vel
            self._v[self.model.pinned] = 0.0
        self._pin_start = self._x[self.model.pinned].copy()
        self._pin_end = self._pin_start.copy()
        self._backend: Backend = make_backend(self.model, self._settings)
        self.frame = 0
        self.time = 0.0
        self.last_stats = FrameStats()
        self.last_frame_seconds = 0.0

    # --- settings ----------------------------------------------------------------------------
    @staticmethod
    def _check_settings(settings: object) -> ClothSettings:
        if not isinstance(settings, ClothSettings):
            raise SettingsError(f"settings must be a ClothSettings, got {type(settings).__name__}")
        return settings

    @staticmethod
    def _check_colliders(colliders: Sequence[Collider]) -> list[Collider]:
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
            self.model = build_model(self.model.mesh, self.model.pinned, value.density)
        if value.density != old.density or (value.backend, value.device) != (old.backend,
                                                                            old.device):
            self._backend = make_backend(self.model, value)

    @property
    def backend_name(self) -> str:
        return self._backend.name

    def use_backend(self, backend: Backend) -> None:
        """Step with a backend object built for this solver's model (e.g. the reference loop)."""
        self._backend = backend

    # --- state -------------------------------------------------------------------------------
    @property
    def positions(self) -> F:
        """Current particle positions [m], shape (N, 3), read-only.

        Each frame makes a new array, so an array kept from an earlier frame stays as it was.
        Assign to the property to teleport the cloth.
        """
        return self._x

    @positions.setter
    def positions(self, value: ArrayLike) -> None:
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != self._x.shape or not np.all(np.isfinite(arr)):
            raise SolverInputError(f"positions must be finite, shape {self._x.shape}")
        self._x = arr.copy()

    @property
    def velocities(self) -> F:
        """Current particle velocities [m/s], shape (N, 3), read-only (new array each frame)."""
        return self._v

    @velocities.setter
    def velocities(self, value: ArrayLike) -> None:
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != self._v.shape or not np.all(np.isfinite(arr)):
            raise SolverInputError(f"velocities must be finite, shape {self._v.shape}")
        self._v = arr.copy()

    @property
    def pinned(self) -> NDArray[np.int64]:
        """Indices of the pinned particles, sorted, shape (P,)."""
        return self.model.pinned

    @property
    def triangles(self) -> NDArray[np.int64]:
        return self.model.mesh.triangles

    # --- controls ----------------------------------------------------------------------------
    def set_pin_targets(self, targets: ArrayLike) -> None:
        """Target positions of the pinned particles at the end of the coming frame.

        ``targets`` is (P, 3) in the order of :attr:`pinned` (sorted indices), or (N, 3) for all
        particles (only the pinned rows are used). Within the frame the pins move linearly from
        their previous targets to these, substep by substep.
        """
        arr = np.asarray(targets, dtype=np.float64)
        pins = self.model.pinned
        if arr.shape == self._x.shape:
            arr = arr[pins]
        if arr.shape != (pins.size, 3):
            raise SolverInputError(
                f"pin targets must have shape ({pins.size}, 3) (one per pinned point, in sorted "
                f"index order) or {self._x.shape}, got {arr.shape}"
            )
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        if bad.size:
            raise SolverInputError(f"pin targets contain NaN or inf at rows {bad[:8].tolist()}")
        self._pin_end = arr.copy()

    # --- checkpoints -------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Exact copies of everything the solver carries from frame to frame: ``positions``,
        ``velocities`` (N, 3), ``pin_start``, ``pin_end`` (P, 3), ``frame`` and ``time``.

        Colliders are controls, not state: whoever animates them restores their poses.
        """
        return {"positions": self._x.copy(), "velocities": self._v.copy(),
                "pin_start": self._pin_start.copy(), "pin_end": self._pin_end.copy(),
                "frame": int(self.frame), "time": float(self.time)}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`get_state` snapshot bit for bit (shapes and finiteness checked)."""
        shapes = {"positions": self._x.shape, "velocities": self._v.shape,
                  "pin_start": self._pin_start.shape, "pin_end": self._pin_end.shape}
        arrays = {}
        for name, shape in shapes.items():
            arr = np.array(state[name], dtype=np.float64)
            if arr.shape != shape or not np.all(np.isfinite(arr)):
                raise SolverInputError(f"state '{name}' must be finite with shape {shape}, "
                                       f"got {arr.shape}")
            arrays[name] = arr
        self._x, self._v = arrays["positions"], arrays["velocities"]
        self._pin_start, self._pin_end = arrays["pin_start"], arrays["pin_end"]
        self.frame = int(state["frame"])
        self.time = float(state["time"])

    # --- stepping ----------------------------------------------------------------------------
    def step(self, dt: float = 1.0 / 24.0) -> FrameStats:
        """Advance one frame of length ``dt`` [s] = ``settings.substeps`` substeps."""
        if not (isinstance(dt, (int, float)) and np.isfinite(dt) and dt > 0.0):
            raise SolverInputError(f"frame time step dt must be a positive number, got {dt!r}")
        start = time.perf_counter()
        x, v, stats = self._backend.step(self._x, self._v, self._settings, float(dt),
                                         self._pin_start, self._pin_end, self.colliders)
        self._pin_start = self._pin_end.copy()
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
            raise FloatingPointError(
                f"the simulation diverged at frame {self.frame + 1} (non-finite positions); "
                "lower the time step or raise substeps"
            )
        x.flags.writeable = False
        v.flags.writeable = False
        self._x, self._v = x, v
        self.frame += 1
        self.time += float(dt)
        self.last_stats = stats
        self.last_frame_seconds = time.perf_counter() - start
        return stats

    # --- measurements ------------------------------------------------------------------------
    def edge_strain(self) -> F:
        """Relative stretch (|x_i - x_j| - L0) / L0 of every mesh edge, shape (E,)."""
        top = self.model.topology
        d = self._x[top.edges[:, 0]] - self._x[top.edges[:, 1]]
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
        return float(0.5 * (m * (self._v[free] ** 2).sum(axis=1)).sum())
