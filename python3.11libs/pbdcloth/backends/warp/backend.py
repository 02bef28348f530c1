"""The Warp backend: the numpy backend's colored substep as NVIDIA Warp kernels (CPU or CUDA).

Same model, same colors, same settings, same order of operations as
:class:`~pbdcloth.backends.numpy_backend.NumpyBackend` (see its module docstring for the
substep); the kernels in :mod:`.kernels` are the per-constraint form of the same formulas.
Each color of each family is one launch; nothing is reduced in parallel, so a run is
deterministic on the CPU and on a GPU.

A whole frame (``substeps`` x [predict, ``iterations`` x (stretch, shear, bend, strain limit, tethers,
colliders, self-collision), update], :meth:`WarpBackend._issue_frame`) is recorded once and
replayed each frame: as a Warp graph (a CUDA graph on GPUs, Warp's
CPU graph replay on the CPU) or, where Warp cannot capture on that device, as a list of recorded
launches (``wp.launch(record_cmd=True)``). What changes from frame to frame (positions and
velocities, pin targets, collider poses) lives in device arrays that are refreshed before the
replay, so the recording stays valid until the settings, ``dt`` or the kind of colliders change.

Limitations:
    - Colliders: :class:`~pbdcloth.colliders.shapes.Plane`, ``Sphere``, ``Capsule``,
      :class:`~pbdcloth.colliders.sdf.SdfCollider` and
      :class:`~pbdcloth.colliders.mesh.MeshCollider` (exact types, see :mod:`.colliders`);
      any other collider raises :class:`WarpUnsupportedError` naming it. A frame whose mesh
      collider's grids or candidate lists overflow is run again with larger ones.
    - Self-collision (``self_collision`` on): :mod:`.selfcollision`, issued into the same
      recorded frame; a frame whose candidate pairs overflow their buffers is run again with
      larger ones.
    - float32 by default: agrees with numpy to a measured tolerance, not bit for bit
      (``precision="float64"`` agrees to ~1e-12 and is meant for checks).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import warp as wp
from numpy.typing import NDArray

from ._quiet import init_quietly

init_quietly(wp)

from ...cloth.attributes import contact_scales
from ...cloth.hierarchy import HierarchyLevel
from ...cloth.model import ClothModel, DistanceFamily
from ...cloth.state import ClothState
from ...cloth.topology import incidence
from ...colliders.base import Collider, SolverInputError
from ...colliders.mesh import MeshCollider
from ...colliders.sdf import SdfCollider
from ...colliders.sdf_sequence import SdfSequence
from ...constraints.hierarchy import DEADBAND as HIERARCHY_DEADBAND
from ...constraints.hierarchy import PROBE_REACH, level_sweeps, sweep_tolerance
from ...constraints.softpin import soft_pin_stiffness
from ...constraints.strain_limit import limit_target, sweep_margin
from ...selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from ...settings import ClothSettings, Model, SettingsError, setting
from ..base import Control, FrameStats, pbd_stiffness
from .colliders import (
    DeviceColliders,
    DeviceSequence,
    WarpUnsupportedError,
    collider_key,
    upload_block,
)
from .kernels import build_kernels
from .lanes import LaneFamilies, build_lane_kernels, lane_families, level_lanes

__all__ = ["WarpBackend", "WarpUnsupportedError", "resolve_device"]



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


#: What a process prints (once, on stderr) before Warp compiles kernels that its kernel cache
#: does not hold yet.
COMPILING_MESSAGE = "pbdcloth: compiling kernels, once, ~15 s (Warp's kernel cache: {})"
_announced = False


def _load_block_dim(module: Any, device: Any) -> Any:
    """The block length Warp loads ``module`` with on ``device`` by default (part of its
    cache directory's name), from Warp's own rule where this Warp release has it."""
    try:
        from warp._src.context import _resolve_launch_block_dim
    except ImportError:
        return None
    return _resolve_launch_block_dim(device, None if device.is_cpu else
                                     module.options["block_dim"])


def cache_is_cold(modules: Sequence[Any], device: Any) -> bool:
    """True when Warp's kernel cache (``wp.config.kernel_cache_dir``) lacks the directory of
    one of these modules on ``device`` (named by the module's content hash, as Warp names
    it: ``wp_<module>_<hash>``)."""
    root = wp.config.kernel_cache_dir
    if root is None:  # Warp not initialized: nothing is cached yet
        return True
    return any(not os.path.isdir(os.path.join(
        root, m.get_module_identifier(block_dim=_load_block_dim(m, device)))) for m in modules)


def announce_compilation(modules: Sequence[Any], device: Any) -> bool:
    """Print :data:`COMPILING_MESSAGE` when the cache is cold for these modules, once per
    process. Returns whether it printed."""
    global _announced
    if _announced or not cache_is_cold(modules, device):
        return False
    _announced = True
    print(COMPILING_MESSAGE.format(wp.config.kernel_cache_dir), file=sys.stderr, flush=True)
    return True


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


def check_float32_range(model: ClothModel) -> None:
    """Refuse a model whose inverse masses [1/kg] or edge rest lengths [m] float32 cannot hold
    (a mesh scaled far from metres: a 1e-20 m sheet's inverse masses overflow to inf; an
    inverse mass that underflowed to 0 would pin its particle).

    Raises:
        SolverInputError: names the quantity, its range and what to do.
    """
    info = np.finfo(np.float32)
    lo, hi = float(info.tiny), float(info.max)
    for what, values in (("inverse mass [1/kg]", model.inv_mass[model.inv_mass > 0.0]),
                         ("edge rest length [m]", model.stretch.rest)):
        if values.size and (values.min() < lo or values.max() > hi):
            raise SolverInputError(
                f"the Warp backend computes in float32, which cannot hold this mesh's "
                f"{what}: {values.min():.3g} to {values.max():.3g}, outside [{lo:.3g}, "
                f"{hi:.3g}]; give the mesh in metres (or change the density), or use "
                f"backend='numpy'")


class _Colors:
    """Offsets and sizes of a family's colors."""

    def __init__(self, offsets: NDArray[np.int64]) -> None:
        self.spans = [(int(a), int(b - a)) for a, b in itertools.pairwise(offsets) if b > a]


class _DeviceDistance(NamedTuple):
    """A distance family on the device (M constraints, colored order): ``pbd`` (M,)
    ``DistancePbd`` records (i, j, rest [m], w_i/(w_i+w_j), w_j/(w_i+w_j)), ``xpbd`` (M,)
    ``DistanceXpbd`` (i, j, rest [m], w_i, w_j [1/kg]), ``lam`` (M,) XPBD multipliers [N s^2],
    ``colors``."""

    pbd: Any
    xpbd: Any
    lam: Any
    colors: _Colors


class _DeviceLevel(NamedTuple):
    """A coarse level of the hierarchy on the device: ``cons`` (M,) ``DistancePbd`` records in
    colored order, ``colors``, and the hand-down to the finer level: ``fine`` (F,) int32, its
    two parents and their weights (F,) each."""

    cons: Any
    colors: _Colors
    fine: Any
    parent0: Any
    parent1: Any
    weight0: Any
    weight1: Any


class _DeviceModel:
    """The model's arrays on the device, in the kernels' scalar type (prepared once).

    Attributes (N particles, B hinges, K tethers, P pins), all in the model's colored order:
        inv_mass: [1/kg], (N,); tri_start (N + 1,), tri_list, tris: the triangles around each
            particle in triangle order (for the wind's vertex normals).
        stretch, shear: :class:`_DeviceDistance`.
        hinges: (B,) ``Hinge`` records (p1..p4, rest angle [rad], inverse masses [1/kg]);
            bend_lam (B,) [N m s^2]; bend_colors.
        tether_particle, tether_anchor (K,) int32; tether_rest [m]; tether_taut (K,) int32.
        pins (P,) int32; pin_start, pin_end (P,) vec3: the frame's pin targets [m].
        levels: the hierarchy's coarse levels, coarsest first (:class:`_DeviceLevel`).
        stitches: :class:`_DeviceDistance` of the stitch family (its PBD records);
            triangle_stitches (T,) ``TriStitch`` records, triangle_stitch_colors;
            stitch_compliance, triangle_stitch_compliance: the sewn stitches' compliances
            [m/N] (None: all hard), triangle_stitch_lam their XPBD multipliers.
        soft_particle (S,) int32; soft_start, soft_end (S,) vec3: the soft pins' targets [m];
            soft_stiffness (S,): their per-iteration pull k' (set when a frame is recorded).
        thickness_scale, friction_scale (N,): the contact scales against colliders
            (:mod:`pbdcloth.cloth.attributes`; ones where not given).
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
        tri_start, tri_list = incidence(tris, n)  # by particle, then by triangle index
        self.tri_start, self.tri_list = i32(tri_start), i32(tri_list)
        self.tris = arr(tris.astype(np.int32), wp.vec3i)
        self.stretch = self._family(model.stretch, k, device)
        self.shear = self._family(model.shear, k, device)
        b = model.bend
        hinges: Any = np.zeros(b.count, dtype=k.Hinge.numpy_dtype())
        hinges["quad"] = b.quads
        hinges["rest"] = b.rest_angle
        hinges["w"] = b.w
        hinges["scale"] = 1.0 if b.scale is None else b.scale
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
        self.levels = [_DeviceLevel(
            cons=self._family(level, k, device).pbd, colors=_Colors(level.offsets),
            fine=i32(level.fine), parent0=i32(level.parents[:, 0]),
            parent1=i32(level.parents[:, 1]),
            weight0=arr(level.weights[:, 0].astype(np_scalar), s),
            weight1=arr(level.weights[:, 1].astype(np_scalar), s))
            for level in reversed(model.hierarchy.levels)]
        self.stitches = self._family(model.stitches, k, device)
        ts = model.triangle_stitches
        tri: Any = np.zeros(ts.count, dtype=k.TriStitch.numpy_dtype())
        tri["quad"], tri["bary"], tri["rest"], tri["w"] = ts.members, ts.barycentric, ts.rest, ts.w
        self.triangle_stitches: Any = wp.array(tri, dtype=k.TriStitch, device=device)
        self.triangle_stitch_colors = _Colors(ts.offsets)
        self.stitch_compliance = (None if model.stitches.compliance is None
                                  else arr(model.stitches.compliance.astype(np_scalar), s))
        self.triangle_stitch_compliance = (
            None if ts.compliance is None else arr(ts.compliance.astype(np_scalar), s))
        self.triangle_stitch_lam = wp.zeros(ts.count, dtype=s, device=device)
        soft = model.soft_pins
        self.soft_particle = i32(soft.particle)
        self.soft_start = arr(model.mesh.positions[soft.particle].astype(np_scalar), v3)
        self.soft_end = arr(model.mesh.positions[soft.particle].astype(np_scalar), v3)
        self.soft_stiffness = wp.zeros(soft.count, dtype=s, device=device)
        thickness_scale, friction_scale = contact_scales(model.point_attributes)
        self.thickness_scale = arr(np.ones(n, dtype=np_scalar) if thickness_scale is None
                                   else thickness_scale.astype(np_scalar), s)
        self.friction_scale = arr(np.ones(n, dtype=np_scalar) if friction_scale is None
                                  else friction_scale.astype(np_scalar), s)

    @staticmethod
    def _family(fam: DistanceFamily | HierarchyLevel, k: Any, device: Any) -> _DeviceDistance:
        """The family's constraint records for the PBD and the XPBD kernels."""
        pbd = np.zeros(fam.count, dtype=k.DistancePbd.numpy_dtype())
        xpbd = np.zeros(fam.count, dtype=k.DistanceXpbd.numpy_dtype())
        for rec in (pbd, xpbd):
            rec["i"], rec["j"], rec["rest"] = fam.i, fam.j, fam.rest
        pbd["wi_frac"], pbd["wj_frac"] = fam.wi_frac, fam.wj_frac
        xpbd["wi"], xpbd["wj"] = fam.wi, fam.wj
        for rec in (pbd, xpbd):
            rec["scale"] = 1.0 if fam.scale is None else fam.scale
        return _DeviceDistance(wp.array(pbd, dtype=k.DistancePbd, device=device),
                               wp.array(xpbd, dtype=k.DistanceXpbd, device=device),
                               wp.zeros(fam.count, dtype=k.scalar, device=device),
                               _Colors(fam.offsets))


@dataclass(frozen=True)
class _Substep:
    """The constants of one recorded frame's substeps, in the kernels' scalar type where they
    are kernel arguments.

    settings; seconds: the substep h [s] (a float), h: the same as a kernel scalar;
    decay = exp(-damping h); gravity, wind [m/s^2] (vec3); use_wind (0/1); xpbd; stiffness
    (PBD, per iteration: k' = 1 - (1 - k)^(1/n)) and compliance: (alpha~ = alpha / h^2,
    gamma = alpha~ beta h) (XPBD) by family ("stretch", "shear", "bend"); tethers, slack;
    contact: the collider kernels' trailing arguments (thickness, mu_s, mu_k, h, contact
    arrays); restitution, rest_speed [m/s] (approach speed below which nothing bounces).
    """

    settings: ClothSettings
    seconds: float
    h: Any
    decay: Any
    gravity: Any
    wind: Any
    use_wind: int
    xpbd: bool
    stiffness: dict[str, float]
    compliance: dict[str, tuple[Any, Any]]
    tethers: bool
    slack: Any
    contact: list[Any]
    restitution: Any
    rest_speed: Any


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
        tuning: the self-collision method's constants.

    Attributes:
        k: the kernels of ``precision`` (:func:`.kernels.build_kernels`); m: the model's
            device arrays; lanes: the lane groups of the CPU path, or None.
        replay_mode: how the last recording is replayed: "graph" or "launches".

    The interface is :class:`~pbdcloth.backends.base.Backend`'s ``step``.
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
        if precision == "float32":
            check_float32_range(model)
        self.m = _DeviceModel(model, k, dev)
        self._x = wp.zeros(n, dtype=k.vec3, device=dev)
        self._v = wp.zeros(n, dtype=k.vec3, device=dev)
        self._p = wp.zeros(n, dtype=k.vec3, device=dev)
        self._v_pred = wp.zeros(n, dtype=k.vec3, device=dev)
        self._hierarchy_start = wp.zeros(n, dtype=k.vec3, device=dev)
        most = int(setting("hierarchy_sweeps").maximum or 1)
        self._level_far = wp.zeros(max(len(self.m.levels), 1) * most, dtype=wp.int32,
                                   device=dev)
        """Per level and sweep: 1 where the sweep found a constraint past the tolerance."""
        self._held_any = wp.zeros(1, dtype=wp.int32, device=dev)
        """1 where the hierarchical pass holds some particle (then one sweep per level)."""
        self._nothing_held = wp.zeros(1, dtype=wp.int32, device=dev)  # stays 0
        self._level_far_views = [self._level_far[i * most:(i + 1) * most]
                                 for i in range(len(self.m.levels))]
        self._touching = wp.zeros(n, dtype=wp.int32, device=dev)
        self._probe = wp.zeros(n, dtype=k.vec3, device=dev)
        self._contact = wp.zeros(n, dtype=wp.int32, device=dev)
        self._no_contact = wp.zeros(n, dtype=wp.int32, device=dev)  # contact flags, all 0
        self._sliding = wp.zeros(n, dtype=wp.int32, device=dev)  # sliding in the strain limit
        self._contact_normal = wp.zeros(n, dtype=k.vec3, device=dev)
        self._surface_velocity = wp.zeros(n, dtype=k.vec3, device=dev)
        self._use_graph = use_graph
        self.lanes: LaneFamilies | None = None
        self._lane_kernels: Any = None
        if use_lanes and not self.device.is_cuda and precision == "float32":
            self.lanes = lane_families(model, dev)
            self._lane_kernels = build_lane_kernels()
            # the strain limit's skipping: each particle's stretch groups, a mark per group
            # for each of the limit's threads
            self._limit_touch = self.lanes.stretch.particle_groups(n)
            copies = min(max(tuning.warp_cpu_threads, 1), 8)
            self._limit_marks = wp.zeros(max(self.lanes.stretch.groups, 1) * copies + 1,
                                         dtype=wp.int32, device=dev)
            # the coarse levels, coarsest first, as self.m.levels
            self._level_lanes = [level_lanes(level, dev)
                                 for level in reversed(model.hierarchy.levels)]
        self._graph: Any = None
        self._launches: list[Any] = []
        self._key: Any = None
        self._colliders: DeviceColliders | None = None
        self._blocks: dict[int, Any] = {}
        """SDF blocks on the device by id of their grid (the grid is kept alive in the value)."""
        self._meshes: dict[int, tuple[Any, MeshCollider]] = {}
        """Mesh colliders on the device by id (the collider is kept alive in the value)."""
        self._sequences: dict[int, tuple[DeviceSequence, SdfSequence]] = {}
        """Level-set sequences on the device by id (the collider is kept alive in the value)."""
        self._last_out: tuple[Any, Any] | None = None
        self.replay_mode = ""
        self._selfcol: Any = None
        """The self-collision stage (:class:`.selfcollision.WarpSelfCollision`), built on
        first use."""

    @property
    def self_collision(self) -> Any:
        """The self-collision stage (:class:`.selfcollision.WarpSelfCollision`), or None until
        a frame with ``self_collision`` on has been recorded."""
        return self._selfcol

    # --- one frame: upload, replay, download ----------------------------------------------------
    def step(self, state_in: ClothState, state_out: ClothState, control: Control,
             dt: float) -> FrameStats:
        """One frame ``dt`` [s] of ``control.settings.substeps`` substeps: reads ``state_in``
        (not modified) and the control, replays the recorded frame (recorded anew when the
        settings, ``dt`` or the kind of colliders changed) and writes new position and velocity
        arrays (N, 3) to ``state_out``."""
        settings, colliders = control.settings, control.colliders
        ckey = collider_key(colliders)
        key = (settings, float(dt), ckey)
        if key != self._key:
            self._record(settings, float(dt), colliders, ckey)
            self._key = key
            self._last_out = None
        self._upload(state_in, control, self._state_changed(state_in))
        if self._colliders is not None and any(seq.stale for seq in self._colliders.sequences):
            # A level set outgrew its device buffers: record with the larger ones.
            self._record(settings, float(dt), colliders, ckey)
            self._upload(state_in, control, True)
        selfcol = self._selfcol if settings.self_collision else None
        if selfcol is not None:
            selfcol.begin_frame()
        self.replay()
        while self._grow_if_needed(selfcol):
            # Self-collision's candidate buffers or a mesh collider's grids overflowed: record
            # with the larger ones and run the frame again from state_in (the recording made
            # the colliders anew).
            self._record(settings, float(dt), colliders, ckey)
            self._upload(state_in, control, True)
            self.replay()
        state_out.positions = self._x.numpy().astype(np.float64)
        state_out.velocities = self._v.numpy().astype(np.float64)
        self._last_out = (state_out.positions, state_out.velocities)
        return self._frame_stats(settings, colliders)

    def _grow_if_needed(self, selfcol: Any) -> bool:
        """True when a buffer of the frame just run overflowed (it is larger now)."""
        grown = selfcol is not None and selfcol.grow_if_needed()
        if self._colliders is not None:
            for device_mesh in self._colliders.meshes:
                grown = device_mesh.grow_if_needed() or grown
        return bool(grown)

    def _state_changed(self, state: ClothState) -> bool:
        """False when ``state``'s arrays are the (read-only) ones this backend returned last,
        so the device already holds them."""
        last = self._last_out
        x, v = state.positions, state.velocities
        return last is None or x is not last[0] or v is not last[1] or x.flags.writeable

    def _upload(self, state: ClothState, control: Control, positions: bool) -> None:
        """The frame's inputs to the device: positions and velocities (where ``positions``),
        pin targets and collider poses."""
        m = self.m
        if positions:
            self._x.assign(np.ascontiguousarray(state.positions, dtype=m.np_scalar))
            self._v.assign(np.ascontiguousarray(state.velocities, dtype=m.np_scalar))
        if m.pins.shape[0]:
            m.pin_start.assign(np.ascontiguousarray(control.pin_start, dtype=m.np_scalar))
            m.pin_end.assign(np.ascontiguousarray(control.pin_end, dtype=m.np_scalar))
        if m.soft_particle.shape[0] and control.soft_start is not None \
                and control.soft_end is not None:
            m.soft_start.assign(np.ascontiguousarray(control.soft_start, dtype=m.np_scalar))
            m.soft_end.assign(np.ascontiguousarray(control.soft_end, dtype=m.np_scalar))
        if self._colliders is not None:
            self._colliders.update(control.colliders)

    def _frame_stats(self, settings: ClothSettings, colliders: Sequence[Collider]) -> FrameStats:
        """Contacts, taut tethers and self-collision counters of the frame just run."""
        stats = FrameStats(substeps=settings.substeps)
        if colliders:
            stats.contacts = int(np.count_nonzero(self._contact.numpy()))
        if settings.tethers and self.model.tethers.count:
            stats.tethers_active = int(np.count_nonzero(self.m.tether_taut.numpy()))
        if settings.self_collision and self._selfcol is not None:
            stats.extra.update(self._selfcol.frame_extra(settings.substeps))
        return stats

    def replay(self) -> None:
        """Run the last recorded frame once on the device state as it stands (no upload, no
        download; :meth:`step` calls it; alone it times the device)."""
        if self._graph is not None:
            wp.capture_launch(self._graph)
        else:
            for launch in self._launches:
                launch.launch()

    # --- recording ------------------------------------------------------------------------------
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
        band = settings.thickness * float(self.m.thickness_scale.numpy().max(initial=1.0))
        for collider in colliders:
            if isinstance(collider, MeshCollider):
                if id(collider) not in self._meshes:
                    from .mesh_collider import DeviceMeshCollider

                    self._meshes[id(collider)] = (DeviceMeshCollider(
                        collider, self.m, self.model.particle_count, self.precision, dev,
                        threads=self.tuning.warp_cpu_threads), collider)
                self._meshes[id(collider)][0].prepare(settings.substeps, band)
        meshes = {key: value[0] for key, value in self._meshes.items()}
        for collider in colliders:
            if isinstance(collider, SdfSequence):
                if id(collider) not in self._sequences:
                    self._sequences[id(collider)] = (DeviceSequence(k, dev), collider)
                device_seq = self._sequences[id(collider)][0]
                device_seq.update(collider)  # sizes the buffers the recording holds
                device_seq.stale = False
        sequences = {key: value[0] for key, value in self._sequences.items()}
        self._colliders = (DeviceColliders(k, dev, ckey, settings.substeps, blocks, meshes,
                                           sequences) if colliders else None)
        if self._colliders is not None:
            self._colliders.sdf_voxel = [k.scalar(c.voxel_size) for c in colliders
                                         if isinstance(c, SdfCollider)]
        modules = [k.module]
        if meshes and self._colliders is not None:
            for device_mesh in self._colliders.meshes:
                modules += [m for m in device_mesh.modules if m not in modules]
        if self._lane_kernels is not None:
            modules.append(self._lane_kernels.module)
        if settings.self_collision:
            from .selfcollision import WarpSelfCollision

            if self._selfcol is None:
                self._selfcol = WarpSelfCollision(self.model, k, dev, tuning=self.tuning)
            self._selfcol.prepare(settings)
            modules += self._selfcol.modules
        soft = self.model.soft_pins
        if soft.count:
            self.m.soft_stiffness.assign(soft_pin_stiffness(
                soft.weight, settings.iterations).astype(self.m.np_scalar))
        objects = [wp.get_module(name) for name in modules]
        announce_compilation(objects, dev)
        for module in objects:
            wp.load_module(module, device=dev)
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

    # --- the substep ----------------------------------------------------------------------------
    def _issue_frame(self, launch: _Recorder, settings: ClothSettings, dt: float) -> None:
        """Issue every launch of one frame, in the numpy backend's order: per substep predict
        (with the hierarchical pass); ``iterations`` times project stretch, shear, bend,
        the strain limit with the stitches inside its sweeps, tethers, soft pins, colliders, contact rounds,
        self-collision; update."""
        c = self._substep(settings, dt)
        for step in range(settings.substeps):
            self._predict(launch, c, step)
            for iteration in range(settings.iterations):
                fresh = int(iteration == 0)  # lane kernels: XPBD multipliers start at 0
                self._project_distance(launch, c, "stretch", fresh)
                self._project_distance(launch, c, "shear", fresh)
                self._project_bend(launch, c, fresh)
                self._project_limit_and_stitches(launch, c, fresh)
                self._project_tethers(launch, c)
                self._project_soft_pins(launch, c, step)
                self._project_colliders(launch, c, step, iteration)
                self._contact_rounds(launch, c, step, iteration)
                self._project_self_collision(launch, c, iteration)
            self._update(launch, c)

    def _substep(self, settings: ClothSettings, dt: float) -> _Substep:
        """The constants of the substeps of a frame ``dt`` [s] under ``settings``."""
        k, s = self.k, self.k.scalar
        h = dt / settings.substeps
        it = settings.iterations

        def alpha_gamma(compliance: float) -> tuple[Any, Any]:
            alpha = compliance / (h * h)
            return s(alpha), s(alpha * settings.constraint_damping * h)

        return _Substep(
            settings=settings, seconds=h, h=s(h), decay=s(math.exp(-settings.damping * h)),
            gravity=k.vec3(*settings.gravity), wind=k.vec3(*settings.wind),
            use_wind=int(any(w != 0.0 for w in settings.wind)),
            xpbd=settings.model == Model.XPBD,
            stiffness={"stretch": pbd_stiffness(settings.stretch_stiffness, it),
                       "shear": pbd_stiffness(settings.shear_stiffness, it),
                       "bend": pbd_stiffness(settings.bend_stiffness, it)},
            compliance={"stretch": alpha_gamma(settings.stretch_compliance),
                        "shear": alpha_gamma(settings.shear_compliance),
                        "bend": alpha_gamma(settings.bend_compliance)},
            tethers=settings.tethers and self.model.tethers.count > 0,
            slack=s(settings.tether_slack),
            contact=[s(settings.thickness), s(settings.mu_static), s(settings.friction), s(h),
                     self._contact, self._contact_normal, self._surface_velocity],
            restitution=s(settings.restitution),
            rest_speed=s(2.0 * float(np.linalg.norm(settings.gravity)) * h))

    def _predict(self, launch: _Recorder, c: _Substep, step: int) -> None:
        """v = decay v + h (g + wind load), p = x + h v; pins at their targets at the substep's
        end; self-collision's velocity clamp and broad phase; XPBD multipliers to 0."""
        k, m, lk = self.k, self.m, self._lane_kernels
        x, v, p = self._x, self._v, self._p
        if self._hierarchy_on(c):
            self._hold_contacts(launch, c, step)
        if lk is not None and not c.use_wind:
            launch(lk.predict_loop, 1, [x, v, m.inv_mass, c.gravity, c.h, c.decay, p,
                                        self._v_pred, self._contact])
        else:
            launch(k.predict, self.model.particle_count,
                   [x, v, m.inv_mass, c.gravity, c.wind, c.use_wind, m.tri_start, m.tri_list,
                    m.tris, c.h, c.decay, p, self._v_pred, self._contact])
        alpha = k.scalar((step + 1) / c.settings.substeps)
        launch(k.pin_targets, m.pins.shape[0], [m.pins, m.pin_start, m.pin_end, alpha, p])
        if c.settings.self_collision:
            self._selfcol.issue_predict(launch, c.settings, c.seconds, x, v, self._v_pred, p,
                                        m.inv_mass)
        self._project_hierarchy(launch, c)
        if c.xpbd and self.lanes is None:
            for lam in (m.stretch.lam, m.shear.lam, m.bend_lam):
                launch(k.zero_scalars, lam.shape[0], [lam])

    def _project_hierarchy(self, launch: _Recorder, c: _Substep, in_round: bool = False
                           ) -> None:
        """The hierarchical pass, coarsest level first: each level's unilateral distances by
        color (at most ``level_sweeps`` times: a sweep after one that found no constraint
        past ``sweep_tolerance`` runs no threads, nor one after the first with some particle
        held; one sweep with a triangle-mesh collider; on the CPU a level's sweeps in one
        launch), then its hand-down to the finer level (mirrors
        :func:`pbdcloth.constraints.hierarchy.project_hierarchy`); the particles
        :meth:`_hold_contacts` marked stay where the prediction put them. In the predict when
        :meth:`_hierarchy_on`; always in a contact round (``in_round``; rounds run only with
        the hierarchy on and levels to project, also with self collision on, as on numpy)."""
        if not (in_round or self._hierarchy_on(c)):
            return
        k, p, start, levels = self.k, self._p, self._hierarchy_start, self.m.levels
        n = self.model.particle_count
        lk = self._lane_kernels if self.lanes is not None else None
        if lk is not None:
            launch(lk.copy_loop, 1, [p, start])
        else:
            launch(k.copy_positions, n, [p, start])
        slack = k.scalar(c.settings.hierarchy_slack * (1.0 + HIERARCHY_DEADBAND))
        meshes = self._colliders is not None and bool(self._colliders.meshes)
        sweeps = level_sweeps(self.model.hierarchy, self.model.stretch.count,
                              1 if meshes else c.settings.hierarchy_sweeps)
        tolerance = k.scalar(sweep_tolerance(c.settings.effective_strain_limit))
        held = self._nothing_held
        if self._colliders is not None:  # without colliders no particle is ever held
            held = self._held_any
            launch(k.zero_flags, 1, [held])
            launch(k.any_flag, n, [self._touching, held])
        cpu = self.device.is_cpu
        if not cpu:
            launch(k.zero_flags, self._level_far.shape[0], [self._level_far])
        for i, (lv, count, far) in enumerate(zip(levels, sweeps, self._level_far_views)):
            if lk is not None:  # one launch a level, eight constraints at a time
                group = self._level_lanes[i]
                launch(lk.unilateral_lanes, 1,
                       [p, group.idx, group.frac, group.rest, 0, group.groups, count, slack,
                        tolerance, held])
            elif cpu:  # one launch a level: skipped sweeps cost no launches
                launch(k.unilateral_sweeps, 1,
                       [p, lv.cons, slack, slack, tolerance, count, held])
            else:
                for sweep in range(count):
                    for off, cnt in lv.colors.spans:
                        launch(k.distance_unilateral, cnt,
                               [p, lv.cons, off, slack, slack, tolerance, far, sweep, held])
            hand_down = [p, start, lv.fine, lv.parent0, lv.parent1, lv.weight0, lv.weight1]
            if lk is not None:
                launch(lk.hand_down_loop, 1, hand_down)
            else:
                launch(k.hand_down, lv.fine.shape[0], hand_down)
        if self._colliders is not None:  # without colliders no particle is ever held
            launch(k.keep_touching, n, [p, start, self._touching])

    def _hold_contacts(self, launch: _Recorder, c: _Substep, step: int) -> None:
        """The particles the hierarchical pass leaves alone: those that touched a collider in
        the frame's last substep, and those within PROBE_REACH thicknesses of one at the
        substep's start positions (a projection of a copy, without friction). Mirrors the
        numpy backend's ``_probe_contacts``. Without colliders nothing is held (the flags are
        read only with colliders)."""
        k, n = self.k, self.model.particle_count
        if self._colliders is None:
            return
        launch(k.hold_contacts, n, [self._contact, self._touching, int(step > 0)])
        launch(k.copy_positions, n, [self._x, self._probe])
        contact = list(c.contact)
        contact[0] = k.scalar(PROBE_REACH * c.settings.thickness)
        contact[1] = contact[2] = k.scalar(0.0)
        contact[4] = self._touching
        m = self.m
        for kernel, dim, inputs in self._colliders.launches(
                step, [self._probe, self._x, m.inv_mass, m.thickness_scale, m.friction_scale],
                contact, n, False, probe=True):
            launch(kernel, dim, inputs)

    def _hierarchy_on(self, c: _Substep) -> bool:
        """The hierarchical pass runs: on in the settings, levels to project, no
        self-collision."""
        return bool(c.settings.hierarchy and self.m.levels and not c.settings.self_collision)

    def _project_distance(self, launch: _Recorder, c: _Substep, family: str,
                          fresh: int) -> None:
        """One pass over the colors of the ``family`` ("stretch" or "shear") distances."""
        k, lk, p, x = self.k, self._lane_kernels, self._p, self._x
        fam: _DeviceDistance = getattr(self.m, family)
        group = getattr(self.lanes, family) if self.lanes is not None else None
        if c.xpbd:
            alpha, gamma = c.compliance[family]
            if group is not None:
                launch(lk.distance_xpbd_lanes, 1, [p, x, group.idx, group.w, group.rest,
                                                   group.lam, group.scale, 0, group.groups,
                                                   fresh, alpha, gamma])
                return
            for off, cnt in fam.colors.spans:
                launch(k.distance_xpbd, cnt, [p, x, fam.xpbd, fam.lam, off, alpha, gamma])
            return
        stiff = c.stiffness[family]
        if stiff == 0.0:
            return
        if group is not None:
            launch(lk.distance_pbd_lanes, 1, [p, x, group.idx, group.frac, group.rest,
                                              group.lam, group.scale, 0, group.groups, fresh,
                                              k.scalar(stiff)])
            return
        for off, cnt in fam.colors.spans:
            launch(k.distance_pbd, cnt, [p, fam.pbd, off, k.scalar(stiff)])

    def _project_bend(self, launch: _Recorder, c: _Substep, fresh: int) -> None:
        """One pass over the colors of the hinges (PBD: skipped at stiffness 0)."""
        k, lk, m, p, x = self.k, self._lane_kernels, self.m, self._p, self._x
        bend = self.lanes.bend if self.lanes is not None else None
        if c.xpbd:
            alpha, gamma = c.compliance["bend"]
            if bend is not None:
                launch(lk.bend_xpbd_lanes, 1, [p, x, bend.idx, bend.w, bend.rest, bend.lam,
                                               bend.scale, 0, bend.groups, fresh, alpha,
                                               gamma])
                return
            for off, cnt in m.bend_colors.spans:
                launch(k.bend_xpbd, cnt, [p, x, m.hinges, m.bend_lam, off, alpha, gamma])
            return
        stiff = c.stiffness["bend"]
        if stiff == 0.0:
            return
        if bend is not None:
            launch(lk.bend_pbd_lanes, 1, [p, x, bend.idx, bend.w, bend.rest, bend.lam,
                                          bend.scale, 0, bend.groups, fresh, k.scalar(stiff)])
            return
        for off, cnt in m.bend_colors.spans:
            launch(k.bend_pbd, cnt, [p, m.hinges, off, k.scalar(stiff)])

    def _project_limit_and_stitches(self, launch: _Recorder, c: _Substep, fresh: int,
                                    in_round: bool = False) -> None:
        """The strain limit with the stitches inside its sweeps: with stitches and the limit
        on, each sweep (one launch, or one pass of the colors) followed by the stitches, all
        ``strain_limit_passes`` of them (the sweeps after the first that shortens nothing move
        nothing, and the stitches are then satisfied); else the limit's sweeps, then the
        stitches once (mirrors the numpy backend's ``_limit_and_contacts``; stitch
        multipliers from 0 on the first stitch pass when ``fresh``). At most
        ``round_strain_limit_passes`` sweeps ``in_round`` (a contact round), else
        ``effective_strain_limit_passes``."""
        m = self.m
        sewn = bool(m.stitches.colors.spans or m.triangle_stitch_colors.spans)
        limit = c.settings.effective_strain_limit
        most = (c.settings.round_strain_limit_passes if in_round
                else c.settings.effective_strain_limit_passes)
        if not sewn or limit <= 0.0:
            self._project_strain_limit(launch, c, passes=most)
            if sewn:
                self._project_stitches(launch, c, fresh)
            return
        for sweep in range(most):
            self._project_strain_limit(launch, c, passes=1)
            self._project_stitches(launch, c, fresh if sweep == 0 else 0)

    def _project_strain_limit(self, launch: _Recorder, c: _Substep,
                              passes: int | None = None) -> None:
        """The strain limit's sweeps over the stretch colors: each edge past (1 + limit) d0
        shortened to the target t d0 (:func:`pbdcloth.constraints.strain_limit.limit_target`),
        with ``contact_sliding`` the particles a collider touched earlier in the substep
        sliding on it.
        On the CPU lanes one launch sweeps until a sweep shortens nothing, at most
        ``strain_limit_passes`` sweeps, a sweep after the first visiting only the lane groups
        with a corner moved since their last visit; elsewhere (CUDA, float64) the recorded
        frame runs all of them, the ones after the first sweep that shortens nothing moving
        nothing (mirrors
        :func:`pbdcloth.constraints.strain_limit.project_strain_limit`)."""
        limit = c.settings.effective_strain_limit
        if limit <= 0.0:
            return
        k, fam, p = self.k, self.m.stretch, self._p
        passes = c.settings.effective_strain_limit_passes if passes is None else passes
        target = limit_target(limit, sweep_margin(c.settings.self_collision))
        group = self.lanes.stretch if self.lanes is not None else None
        # flags of the particles that slide (zeros: none)
        sliding = self._sliding if c.settings.contact_sliding else self._no_contact
        if c.settings.contact_sliding:
            launch(k.sliding_contacts, self.model.particle_count,
                   [self._contact, self._contact_normal, self._surface_velocity, k.scalar(c.h),
                    k.scalar(c.settings.thickness), self._sliding])
        if group is not None:
            launch(self._lane_kernels.distance_limit_lanes, 1,
                   [p, self._x, group.idx, group.frac, group.rest, group.lam, group.scale,
                    0, group.groups, passes, 1.0 + limit, target, sliding,
                    self._contact_normal, self._limit_marks, *self._limit_touch,
                    group.color_starts, self.tuning.warp_cpu_threads])
            return
        trigger, target_s = k.scalar(1.0 + limit), k.scalar(target)
        for _ in range(passes):
            for off, cnt in fam.colors.spans:
                launch(k.distance_limit, cnt, [p, fam.pbd, off, trigger, target_s,
                                               sliding, self._contact_normal])

    def _project_stitches(self, launch: _Recorder, c: _Substep, fresh: int) -> None:
        """The stitch colors in order, closing by at most the model's stitch speed x h (the
        XPBD kernels where some stitch is compliant; multipliers from 0 when ``fresh``)."""
        fam, m, k = self.m.stitches, self.m, self.k
        inv_h2 = k.scalar(1.0 / (c.seconds * c.seconds))
        closing = k.scalar(self.model.stitch_speed * c.seconds)
        for off, cnt in fam.colors.spans:
            if m.stitch_compliance is None:
                launch(k.stitches, cnt, [self._p, self._x, fam.pbd, off, closing])
            else:
                launch(k.stitches_xpbd, cnt, [self._p, self._x, fam.xpbd, m.stitch_compliance,
                                              fam.lam, off, closing, inv_h2, fresh])
        closing = k.scalar(self.model.triangle_stitches.speed * c.seconds)
        for off, cnt in m.triangle_stitch_colors.spans:
            if m.triangle_stitch_compliance is None:
                launch(k.triangle_stitches, cnt, [self._p, self._x, m.triangle_stitches, off,
                                                  closing])
            else:
                launch(k.triangle_stitches_xpbd, cnt,
                       [self._p, self._x, m.triangle_stitches, m.triangle_stitch_compliance,
                        m.triangle_stitch_lam, off, closing, inv_h2, fresh])

    def _project_soft_pins(self, launch: _Recorder, c: _Substep, step: int) -> None:
        """Every soft pin at once, toward its target at the end of substep ``step``."""
        m = self.m
        alpha = self.k.scalar((step + 1) / c.settings.substeps)
        launch(self.k.soft_pins, m.soft_particle.shape[0],
               [self._p, m.soft_particle, m.soft_start, m.soft_end, alpha, m.soft_stiffness])

    def _project_tethers(self, launch: _Recorder, c: _Substep) -> None:
        """Every tether at once (each particle has at most one)."""
        if c.tethers:
            m = self.m
            launch(self.k.tethers, self.model.tethers.count,
                   [self._p, m.tether_particle, m.tether_anchor, m.tether_rest, c.slack,
                    m.tether_taut])

    def _project_colliders(self, launch: _Recorder, c: _Substep, step: int,
                           iteration: int) -> None:
        """The colliders in their order, at their poses of substep ``step``, with friction."""
        if self._colliders is not None:
            m = self.m
            for kernel, dim, inputs in self._colliders.launches(
                    step, [self._p, self._x, m.inv_mass, m.thickness_scale, m.friction_scale],
                    c.contact, self.model.particle_count, c.settings.continuous_collision,
                    iteration):
                launch(kernel, dim, inputs)

    def _contact_rounds(self, launch: _Recorder, c: _Substep, step: int, iteration: int
                        ) -> None:
        """``effective_contact_rounds`` times (with colliders and coarse levels): the
        hierarchical pass with the particles in contact this substep held, then again the
        strain limit, stitches, tethers and the colliders (as a later iteration's: the
        substep's poses and lists are built; not the soft pins, whose stiffness is per
        iteration); none with a triangle-mesh collider.
        Mirrors the numpy backend's ``_contact_round``."""
        if self._colliders is None or self._colliders.meshes or not self.m.levels:
            return
        n = self.model.particle_count
        for _ in range(c.settings.effective_contact_rounds):
            # the particles in contact this substep are held by the hierarchical pass
            launch(self.k.hold_contacts, n, [self._contact, self._touching, 1])
            self._project_hierarchy(launch, c, in_round=True)
            self._project_limit_and_stitches(launch, c, 0, in_round=True)
            self._project_tethers(launch, c)
            self._project_colliders(launch, c, step, max(iteration, 1))

    def _project_self_collision(self, launch: _Recorder, c: _Substep, iteration: int) -> None:
        """Self-collision's narrow phase, last in the iteration."""
        if c.settings.self_collision:
            self._selfcol.issue_project(launch, c.settings, self._p, self._x, self.m.inv_mass,
                                        iteration)

    def _update(self, launch: _Recorder, c: _Substep) -> None:
        """v = (p - x) / h with restitution on contacts; x = p."""
        update = [self._p, self._v_pred, c.h, int(self._colliders is not None), self._contact,
                  self._contact_normal, self._surface_velocity, c.restitution, c.rest_speed,
                  self._x, self._v]
        if self._lane_kernels is not None:
            launch(self._lane_kernels.update_loop, 1, update)
        else:
            launch(self.k.update, self.model.particle_count, update)
