"""The Warp backend: the numpy backend's colored substep as NVIDIA Warp kernels (CPU or CUDA).

Same model, same colors, same settings, same order of operations as
:class:`~pbdcloth.backends.numpy_backend.NumpyBackend` (see its module docstring for the
substep); the kernels in :mod:`.kernels` are the per-constraint form of the same formulas.
Each color of each family is one launch; nothing is reduced in parallel, so a run is
deterministic on the CPU and on a GPU.

A whole frame (``substeps`` x [predict, pins, ``iterations`` x (colors, tethers, colliders),
update]) is recorded once and replayed each frame: as a Warp graph (a CUDA graph on GPUs, Warp's
CPU graph replay on the CPU) or, where Warp cannot capture on that device, as a list of recorded
launches (``wp.launch(record_cmd=True)``). What changes from frame to frame (positions and
velocities, pin targets, collider poses) lives in device arrays that are refreshed before the
replay, so the recording stays valid until the settings, ``dt`` or the kind of colliders change.

Limitations:
    - Colliders: :class:`~pbdcloth.colliders.shapes.Plane`, ``Sphere``, ``Capsule`` and
      :class:`~pbdcloth.colliders.sdf.SdfCollider` (exact types, see :mod:`.colliders`);
      any other collider raises :class:`WarpUnsupportedError` naming it.
    - Self-collision (``self_collision`` on): :mod:`.selfcollision`, issued into the same
      recorded frame; a frame whose candidate pairs overflow their buffers is run again with
      larger ones.
    - float32 by default: agrees with numpy to a measured tolerance, not bit for bit
      (``precision="float64"`` agrees to ~1e-12 and is meant for checks).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import warp as wp
from numpy.typing import NDArray

from ...colliders.base import Collider
from ...colliders.sdf import SdfCollider
from ...cloth.model import ClothModel, DistanceFamily
from ...cloth.state import ClothState
from ...selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from ...settings import ClothSettings, Model, SettingsError
from ..base import Control, FrameStats, pbd_stiffness
from .colliders import DeviceColliders, WarpUnsupportedError, collider_key, upload_block
from .kernels import build_kernels
from .lanes import LaneFamilies, build_lane_kernels, lane_families

__all__ = ["WarpBackend", "WarpUnsupportedError", "resolve_device"]

F = NDArray[np.float64]


def resolve_device(device: str | None) -> Any:
    """The Warp device named ``device``; ``None`` or "" picks CUDA when present, else the CPU.

    Raises:
        SettingsError: the device does not exist here (lists the devices that do).
    """
    if not device:
        return wp.get_device("cuda" if wp.is_cuda_available() else "cpu")
    try:
        return wp.get_device(device)
    except (ValueError, RuntimeError) as exc:
        names = [str(d) for d in wp.get_devices()]
        raise SettingsError(
            f"setting 'device' = {device!r} is not a Warp device here (available: {names}): {exc}"
        ) from None


#: First Warp release that captures graphs on the CPU (replayed natively); older ones replay
#: recorded launches from Python there.
CPU_CAPTURE_VERSION = (1, 13)


def _can_capture(device: Any) -> bool:
    if device.is_cuda:
        return True
    try:
        version = tuple(int(part) for part in wp.__version__.split(".")[:2])
    except ValueError:
        return False
    return version >= CPU_CAPTURE_VERSION


class _Colors:
    """Offsets and sizes of a family's colors."""

    def __init__(self, offsets: NDArray[np.int64]) -> None:
        self.spans = [(int(a), int(b - a)) for a, b in itertools.pairwise(offsets) if b > a]


class _DeviceModel:
    """The model's arrays on the device, in the kernels' scalar type (prepared once).

    Attributes (N particles, M constraints of a family, B hinges, K tethers, P pins), all in the
    model's colored order:
        inv_mass: [1/kg], (N,); tri_start (N + 1,), tri_list, tris: the triangles around each
            particle in triangle order (for the wind's vertex normals).
        stretch_pbd, shear_pbd: (M,) ``DistancePbd`` records (i, j, rest [m], w_i/(w_i+w_j),
            w_j/(w_i+w_j)); stretch_xpbd, shear_xpbd: (M,) ``DistanceXpbd`` (i, j, rest [m],
            w_i, w_j [1/kg]); stretch_lam, shear_lam: (M,) XPBD multipliers [N s^2].
        hinges: (B,) ``Hinge`` records (p1..p4, rest angle [rad], inverse masses [1/kg]);
            bend_lam (B,) [N m s^2].
        *_colors: (offset, count) of each color.
        tether_particle, tether_anchor (K,) int32; tether_rest [m]; tether_taut (K,) int32.
        pins (P,) int32; pin_start, pin_end (P,) vec3: the frame's pin targets [m].
    """

    def __init__(self, model: ClothModel, k: Any, device: Any) -> None:
        s, v3 = k.scalar, k.vec3
        n = model.particle_count

        def arr(a: Any, dtype: Any) -> Any:
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=device)

        def i32(a: Any) -> Any:
            return arr(np.asarray(a, dtype=np.int32), wp.int32)

        np_scalar = np.float32 if s is wp.float32 else np.float64
        self.np_scalar = np_scalar
        self.inv_mass = arr(model.inv_mass.astype(np_scalar), s)
        tris = model.topology.triangles
        flat = tris.reshape(-1)
        order = np.argsort(flat, kind="stable")  # by particle, then by triangle index
        self.tri_list = i32(order // 3)
        self.tri_start = i32(np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=n))]))
        self.tris = arr(tris.astype(np.int32), wp.vec3i)
        self.stretch_pbd, self.stretch_xpbd = self._family(model.stretch, k, np_scalar, device)
        self.shear_pbd, self.shear_xpbd = self._family(model.shear, k, np_scalar, device)
        self.stretch_lam = wp.zeros(model.stretch.count, dtype=s, device=device)
        self.shear_lam = wp.zeros(model.shear.count, dtype=s, device=device)
        self.stretch_colors = _Colors(model.stretch.offsets)
        self.shear_colors = _Colors(model.shear.offsets)
        b = model.bend
        hinges: Any = np.zeros(b.count, dtype=k.Hinge.numpy_dtype())
        hinges["quad"] = b.quads
        hinges["rest"] = b.rest_angle
        hinges["w"] = b.w
        self.hinges: Any = wp.array(hinges, dtype=k.Hinge, device=device)
        self.bend_lam = wp.zeros(b.count, dtype=s, device=device)
        self.bend_colors = _Colors(b.offsets)
        t = model.tethers
        self.tether_particle = i32(t.particle)
        self.tether_anchor = i32(t.anchor)
        self.tether_rest = arr(t.rest.astype(np_scalar), s)
        self.tether_taut = wp.zeros(t.count, dtype=wp.int32, device=device)
        self.pins = i32(model.pinned)
        self.pin_start = wp.zeros(model.pinned.size, dtype=v3, device=device)
        self.pin_end = wp.zeros(model.pinned.size, dtype=v3, device=device)

    @staticmethod
    def _family(fam: DistanceFamily, k: Any, np_scalar: Any, device: Any) -> tuple[Any, Any]:
        """The family's constraint records for the PBD and the XPBD kernels."""
        pbd = np.zeros(fam.count, dtype=k.DistancePbd.numpy_dtype())
        xpbd = np.zeros(fam.count, dtype=k.DistanceXpbd.numpy_dtype())
        for rec in (pbd, xpbd):
            rec["i"], rec["j"], rec["rest"] = fam.i, fam.j, fam.rest
        pbd["wi_frac"], pbd["wj_frac"] = fam.wi_frac, fam.wj_frac
        xpbd["wi"], xpbd["wj"] = fam.wi, fam.wj
        return (wp.array(pbd, dtype=k.DistancePbd, device=device),
                wp.array(xpbd, dtype=k.DistanceXpbd, device=device))


class _Recorder:
    """Issues the frame's launches: into a graph capture, or as recorded ``wp.Launch`` objects."""

    def __init__(self, device: Any, record: bool) -> None:
        self.device = device
        self.record = record
        self.launches: list[Any] = []

    def __call__(self, kernel: Any, dim: int, inputs: list[Any]) -> None:
        if dim <= 0:
            return
        if self.record:
            self.launches.append(wp.launch(kernel, dim=dim, inputs=inputs, device=self.device,
                                           record_cmd=True))
        else:
            wp.launch(kernel, dim=dim, inputs=inputs, device=self.device)


class WarpBackend:
    """Steps a :class:`~pbdcloth.model.ClothModel` with Warp kernels on ``device``.

    Args:
        model: the prepared model (the same object the numpy backend uses).
        device: Warp device ("cpu", "cuda", "cuda:1"); ``None``/"" = CUDA when present, else CPU.
        precision: "float32" (default, fast) or "float64" (to check against numpy).
        use_graph: replay frames as a captured graph where Warp supports it (default); False
            replays recorded launches one by one from Python.
        use_lanes: on the CPU in float32, project distances and hinges eight at a time and
            predict and update all particles in one loop (:mod:`.lanes`, default); False
            runs the per-constraint and per-particle kernels that CUDA runs.

    The interface is :class:`~pbdcloth.backends.numpy_backend.NumpyBackend`'s ``step``.
    """

    name = "warp"

    def __init__(self, model: ClothModel, device: str | None = None,
                 precision: str = "float32", use_graph: bool = True,
                 use_lanes: bool = True, tuning: SelfCollisionTuning = DEFAULT_TUNING) -> None:
        self.model = model
        self.tuning = tuning
        self.device = resolve_device(device)
        self.precision = precision
        self.k = build_kernels(precision)
        k, dev = self.k, self.device
        n = model.particle_count
        self.m = _DeviceModel(model, k, dev)
        self._x = wp.zeros(n, dtype=k.vec3, device=dev)
        self._v = wp.zeros(n, dtype=k.vec3, device=dev)
        self._p = wp.zeros(n, dtype=k.vec3, device=dev)
        self._v_pred = wp.zeros(n, dtype=k.vec3, device=dev)
        self._contact = wp.zeros(n, dtype=wp.int32, device=dev)
        self._contact_normal = wp.zeros(n, dtype=k.vec3, device=dev)
        self._surface_velocity = wp.zeros(n, dtype=k.vec3, device=dev)
        self._use_graph = use_graph
        self._lanes: LaneFamilies | None = None
        self._lane_kernels: Any = None
        if use_lanes and not self.device.is_cuda and precision == "float32":
            self._lanes = lane_families(model, dev)
            self._lane_kernels = build_lane_kernels()
        self._graph: Any = None
        self._launches: list[Any] = []
        self._key: Any = None
        self._colliders: DeviceColliders | None = None
        self._blocks: dict[int, Any] = {}
        """SDF blocks on the device by id of their grid (the grid is kept alive in the value)."""
        self._last_out: tuple[Any, Any] | None = None
        self.replay_mode = ""
        """How the last recording is replayed: "graph" or "launches"."""
        self._selfcol: Any = None
        """The self-collision stage (:class:`.selfcollision.WarpSelfCollision`), built on
        first use."""

    # ---------------------------------------------------------------------------------------
    def step(self, state_in: ClothState, state_out: ClothState, control: Control,
             dt: float) -> FrameStats:
        """One frame ``dt`` [s] of ``control.settings.substeps`` substeps: reads ``state_in``
        (not modified) and the control, writes new position and velocity arrays to
        ``state_out``."""
        x, v, stats = self._frame(state_in.positions, state_in.velocities, control.settings, dt,
                                  control.pin_start, control.pin_end, control.colliders)
        state_out.positions, state_out.velocities = x, v
        return stats

    def _frame(
        self,
        x: F,
        v: F,
        settings: ClothSettings,
        dt: float,
        pin_start: F,
        pin_end: F,
        colliders: Sequence[Collider],
    ) -> tuple[F, F, FrameStats]:
        """Positions and velocities (N, 3) one frame ``dt`` after ``x`` and ``v`` (not modified)."""
        ckey = collider_key(colliders)
        key = (settings, float(dt), ckey)
        if key != self._key:
            self._record(settings, float(dt), colliders, ckey)
            self._key = key
            self._last_out = None
        m = self.m
        # State: skip the upload when x, v are the (read-only) arrays this backend returned.
        last = self._last_out
        if last is None or x is not last[0] or v is not last[1] or x.flags.writeable:
            self._x.assign(np.ascontiguousarray(x, dtype=m.np_scalar))
            self._v.assign(np.ascontiguousarray(v, dtype=m.np_scalar))
        if m.pins.shape[0]:
            m.pin_start.assign(np.ascontiguousarray(pin_start, dtype=m.np_scalar))
            m.pin_end.assign(np.ascontiguousarray(pin_end, dtype=m.np_scalar))
        if self._colliders is not None:
            self._colliders.update(colliders)

        # --- self-collision: rerun the frame when its candidate buffers overflowed ---
        selfcol = self._selfcol if settings.self_collision else None
        if selfcol is not None:
            selfcol.begin_frame()
        self._replay()
        while selfcol is not None and selfcol.grow_if_needed():
            self._record(settings, float(dt), colliders, ckey)
            self._x.assign(np.ascontiguousarray(x, dtype=m.np_scalar))
            self._v.assign(np.ascontiguousarray(v, dtype=m.np_scalar))
            if self._colliders is not None:  # recording made them anew: poses again
                self._colliders.update(colliders)
            self._replay()

        x_out = self._x.numpy().astype(np.float64)
        v_out = self._v.numpy().astype(np.float64)
        stats = FrameStats(substeps=settings.substeps)
        if colliders:
            stats.contacts = int(np.count_nonzero(self._contact.numpy()))
        if settings.tethers and self.model.tethers.count:
            stats.tethers_active = int(np.count_nonzero(m.tether_taut.numpy()))
        if selfcol is not None:
            stats.extra.update(selfcol.frame_extra(settings.substeps))
        self._last_out = (x_out, v_out)
        return x_out, v_out, stats

    def _replay(self) -> None:
        """Run the recorded frame once."""
        if self._graph is not None:
            wp.capture_launch(self._graph)
        else:
            for launch in self._launches:
                launch.launch()

    # ---------------------------------------------------------------------------------------
    def _record(self, settings: ClothSettings, dt: float, colliders: Sequence[Collider],
                ckey: tuple[tuple[int, int], ...]) -> None:
        """Record the launches of one frame: a graph where Warp can capture on this device,
        else a list of recorded launches. The device state is re-uploaded afterwards."""
        k, dev = self.k, self.device
        self._graph = None
        self._launches = []
        for collider in colliders:
            if isinstance(collider, SdfCollider) and id(collider.grid) not in self._blocks:
                self._blocks[id(collider.grid)] = (*upload_block(collider, dev), collider.grid)
        blocks = {key: value[:2] for key, value in self._blocks.items()}
        self._colliders = (DeviceColliders(k, dev, ckey, settings.substeps, blocks)
                           if colliders else None)
        if settings.self_collision:
            from .selfcollision import WarpSelfCollision

            if self._selfcol is None:
                self._selfcol = WarpSelfCollision(self.model, k, dev, tuning=self.tuning)
            self._selfcol.prepare(settings)
            wp.load_module(self._selfcol.k.module, device=dev)
        wp.load_module(k.module, device=dev)
        if self._lane_kernels is not None:
            wp.load_module(self._lane_kernels.module, device=dev)
        if self._use_graph and _can_capture(dev):
            with wp.ScopedCapture(device=dev) as capture:
                self._issue_frame(_Recorder(dev, record=False), settings, dt)
            if capture.graph is not None:
                self._graph = capture.graph
                self.replay_mode = "graph"
                return
        rec = _Recorder(dev, record=True)
        self._issue_frame(rec, settings, dt)
        self._launches = rec.launches
        self.replay_mode = "launches"

    def _issue_frame(self, launch: _Recorder, settings: ClothSettings, dt: float) -> None:
        """Issue every launch of one frame, in the numpy backend's order."""
        k, m = self.k, self.m
        s = k.scalar
        n = self.model.particle_count
        n_sub = settings.substeps
        h = dt / n_sub
        decay = math.exp(-settings.damping * h)
        xpbd = settings.model == Model.XPBD
        it = settings.iterations
        k_stretch = pbd_stiffness(settings.stretch_stiffness, it)
        k_shear = pbd_stiffness(settings.shear_stiffness, it)
        k_bend = pbd_stiffness(settings.bend_stiffness, it)
        rest_speed = 2.0 * float(np.linalg.norm(settings.gravity)) * h
        use_wind = int(any(w != 0.0 for w in settings.wind))
        gravity = k.vec3(*settings.gravity)
        wind = k.vec3(*settings.wind)
        x, p, v = self._x, self._p, self._v
        pins = m.pins.shape[0]
        tethers = settings.tethers and self.model.tethers.count > 0
        colliders = self._colliders
        collide = colliders is not None
        selfcol = self._selfcol if settings.self_collision else None
        contact = [s(settings.thickness), s(settings.mu_static), s(settings.friction), s(h),
                   self._contact, self._contact_normal, self._surface_velocity]

        def alpha_gamma(compliance: float) -> tuple[Any, Any]:
            alpha = compliance / (h * h)
            return s(alpha), s(alpha * settings.constraint_damping * h)

        for step in range(n_sub):
            a1 = (step + 1) / n_sub
            if self._lane_kernels is not None and not use_wind:
                launch(self._lane_kernels.predict_loop, 1,
                       [x, v, m.inv_mass, gravity, s(h), s(decay), p, self._v_pred,
                        self._contact])
            else:
                launch(k.predict, n, [x, v, m.inv_mass, gravity, wind, use_wind, m.tri_start,
                                      m.tri_list, m.tris, s(h), s(decay), p, self._v_pred,
                                      self._contact])
            launch(k.pin_targets, pins, [m.pins, m.pin_start, m.pin_end, s(a1), p])
            if selfcol is not None:  # self-collision: velocity clamp, broad phase
                selfcol.issue_predict(launch, settings, h, x, v, self._v_pred, p, m.inv_mass)
            lanes, lk = self._lanes, self._lane_kernels
            if xpbd and lanes is None:
                for lam in (m.stretch_lam, m.shear_lam, m.bend_lam):
                    launch(k.zero_scalars, lam.shape[0], [lam])
            for iteration in range(it):
                fresh = int(iteration == 0)  # lane kernels: multipliers start at 0
                if xpbd:
                    for cons, lam, colors, group, compliance in (
                        (m.stretch_xpbd, m.stretch_lam, m.stretch_colors,
                         lanes.stretch if lanes else None, settings.stretch_compliance),
                        (m.shear_xpbd, m.shear_lam, m.shear_colors, lanes.shear if lanes else None,
                         settings.shear_compliance),
                    ):
                        alpha, gamma = alpha_gamma(compliance)
                        if group is not None:
                            launch(lk.distance_xpbd_lanes, 1,
                                   [p, x, group.idx, group.w, group.rest, group.lam, 0,
                                    group.groups, fresh, alpha, gamma])
                            continue
                        for off, cnt in colors.spans:
                            launch(k.distance_xpbd, cnt, [p, x, cons, lam, off, alpha, gamma])
                    alpha, gamma = alpha_gamma(settings.bend_compliance)
                    if lanes is not None:
                        bend = lanes.bend
                        launch(lk.bend_xpbd_lanes, 1,
                               [p, x, bend.idx, bend.w, bend.rest, bend.lam, 0, bend.groups,
                                fresh, alpha, gamma])
                    else:
                        for off, cnt in m.bend_colors.spans:
                            launch(k.bend_xpbd, cnt,
                                   [p, x, m.hinges, m.bend_lam, off, alpha, gamma])
                else:
                    for cons, colors, group, stiff in (
                        (m.stretch_pbd, m.stretch_colors, lanes.stretch if lanes else None, k_stretch),
                        (m.shear_pbd, m.shear_colors, lanes.shear if lanes else None, k_shear),
                    ):
                        if stiff == 0.0:
                            continue
                        if group is not None:
                            launch(lk.distance_pbd_lanes, 1,
                                   [p, x, group.idx, group.frac, group.rest, group.lam, 0,
                                    group.groups, fresh, s(stiff)])
                            continue
                        for off, cnt in colors.spans:
                            launch(k.distance_pbd, cnt, [p, cons, off, s(stiff)])
                    if k_bend != 0.0 and lanes is not None:
                        bend = lanes.bend
                        launch(lk.bend_pbd_lanes, 1,
                               [p, x, bend.idx, bend.w, bend.rest, bend.lam, 0, bend.groups,
                                fresh, s(k_bend)])
                    elif k_bend != 0.0:
                        for off, cnt in m.bend_colors.spans:
                            launch(k.bend_pbd, cnt, [p, m.hinges, off, s(k_bend)])
                if tethers:
                    launch(k.tethers, self.model.tethers.count,
                           [p, m.tether_particle, m.tether_anchor, m.tether_rest,
                            s(settings.tether_slack), m.tether_taut])
                if colliders is not None:
                    for kernel, dim, inputs in colliders.launches(step, [p, x, m.inv_mass],
                                                                  contact, n):
                        launch(kernel, dim, inputs)
                if selfcol is not None:  # self-collision: narrow phase, last in the iteration
                    selfcol.issue_project(launch, settings, p, x, m.inv_mass)
            update = [p, self._v_pred, s(h), int(collide), self._contact,
                      self._contact_normal, self._surface_velocity, s(settings.restitution),
                      s(rest_speed), x, v]
            if self._lane_kernels is not None:
                launch(self._lane_kernels.update_loop, 1, update)
            else:
                launch(k.update, n, update)
