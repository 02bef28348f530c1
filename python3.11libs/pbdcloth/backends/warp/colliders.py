"""Colliders on the Warp device: their poses per substep, prepared on the host once per frame.

Analytic shapes (:class:`~pbdcloth.colliders.shapes.Plane`, ``Sphere``, ``Capsule``) share one
table: kind, radius [m] and two 3-vectors per shape (plane: point and unit normal; sphere: centre;
capsule: the two ends) at each alpha = s / substeps, s = 0..substeps, as the shapes' own
``pose_at`` gives them. Consecutive shapes are projected by one launch. Each
:class:`~pbdcloth.colliders.sdf.SdfCollider` has its dense block on the device (uploaded once per
block) and its rigid pose per substep, and one launch. Each
:class:`~pbdcloth.colliders.sdf_sequence.SdfSequence` (without a surface mesh) has the blocks of
the frame's two level sets, uploaded every frame into buffers that keep their size, and one
launch. Each :class:`~pbdcloth.colliders.mesh.MeshCollider` has its own arrays and launches
(:mod:`.mesh_collider`). Launches follow the colliders' order, so every particle meets the
colliders in the order the numpy backend projects them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import warp as wp

from ...colliders.base import Collider
from ...colliders.mesh import MeshCollider
from ...colliders.sdf import SdfCollider
from ...colliders.sdf_sequence import SdfSequence
from ...colliders.shapes import Capsule, Plane, Sphere
from .kernels import SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SDF, SHAPE_SPHERE
from .mesh_collider import DeviceMeshCollider

#: A triangle-mesh collider (its own launches, :mod:`.mesh_collider`).
SHAPE_MESH = 4
#: A level-set sequence (``collide_sdf_sequence``).
SHAPE_SDF_SEQUENCE = 5

_SHAPE_KIND = {Plane: SHAPE_PLANE, Sphere: SHAPE_SPHERE, Capsule: SHAPE_CAPSULE,
               SdfCollider: SHAPE_SDF, MeshCollider: SHAPE_MESH,
               SdfSequence: SHAPE_SDF_SEQUENCE}
#: Kinds with launches of their own (not in the analytic shapes' table): their segment names.
_OWN_LAUNCH = {SHAPE_SDF: "sdf", SHAPE_MESH: "mesh", SHAPE_SDF_SEQUENCE: "sequence"}


class WarpUnsupportedError(NotImplementedError):
    """The scene uses something the Warp backend has no kernel for (use ``backend="numpy"``)."""


def collider_key(colliders: Sequence[Collider]) -> tuple[tuple[int, int], ...]:
    """What a recorded frame depends on: each collider's kind (and SDF block or mesh
    collider identity).

    Raises:
        WarpUnsupportedError: a collider the device cannot evaluate, named with its index.
    """
    key = []
    for index, collider in enumerate(colliders):
        kind = _SHAPE_KIND.get(type(collider))
        if kind is None:
            raise WarpUnsupportedError(
                f"collider {index} is a {type(collider).__name__}, which the Warp backend cannot "
                "evaluate on the device (supported: Plane, Sphere, Capsule, SdfCollider, "
                "MeshCollider, SdfSequence); use "
                "backend='numpy' for it"
            )
        if isinstance(collider, SdfSequence) and collider.surface is not None:
            raise WarpUnsupportedError(
                f"collider {index} is an SdfSequence with a surface mesh (from_mesh_frames), "
                "whose friction takes the mesh's motion: the Warp backend has no kernel for it; "
                "use a MeshCollider (method = 'triangles'), VDB files, or backend='numpy'")
        block = (id(collider.grid) if isinstance(collider, SdfCollider)
                 else id(collider) if isinstance(collider, (MeshCollider, SdfSequence))
                 else 0)
        key.append((kind, block))
    return tuple(key)


class DeviceColliders:
    """Device arrays for one list of colliders (one recording), refreshed every frame.

    Attributes:
        segments: ("shapes", first, last) runs of analytic shapes and ("sdf", j) SDF colliders,
            in the colliders' order.
        shape_kind (S,) int32, shape_radius (S,) [m], shape_pose (substeps + 1, 2 S) vec3 [m]:
            the analytic shapes' table.
        sdf_poses: per SDF collider, its poses (substeps + 1,) of ``SdfPose``.
        sdf_tables: per SDF collider, its block on the device and the block's dimensions.
        meshes: per mesh collider, its :class:`.mesh_collider.DeviceMeshCollider`.
        sequences: per level-set sequence, its :class:`DeviceSequence`.
    """

    def __init__(self, kernels: Any, device: Any, key: tuple[tuple[int, int], ...],
                 substeps: int, blocks: dict[int, Any],
                 meshes: dict[int, DeviceMeshCollider] | None = None,
                 sequences: dict[int, DeviceSequence] | None = None) -> None:
        k = kernels
        self.k = k
        self.device = device
        self.substeps = substeps
        self.np_scalar = np.float32 if k.scalar is wp.float32 else np.float64
        kinds = [kind for kind, _ in key]
        shapes = [kind for kind in kinds if kind not in _OWN_LAUNCH]
        self.count = len(kinds)
        self.segments: list[tuple[str, int, int]] = []
        n_shape = 0
        n_own = dict.fromkeys(_OWN_LAUNCH.values(), 0)
        for kind in kinds:
            own = _OWN_LAUNCH.get(kind)
            if own is not None:  # (segment name, its index among colliders of its kind)
                self.segments.append((own, n_own[own], 0))
                n_own[own] += 1
                continue
            if self.segments and self.segments[-1][0] == "shapes":
                self.segments[-1] = ("shapes", self.segments[-1][1], n_shape + 1)
            else:
                self.segments.append(("shapes", n_shape, n_shape + 1))
            n_shape += 1
        n_shapes = max(len(shapes), 1)
        self.shape_kind: Any = wp.array(np.array(shapes or [0], dtype=np.int32), dtype=wp.int32,
                                   device=device)
        self.shape_radius = wp.zeros(n_shapes, dtype=k.scalar, device=device)
        self.shape_pose = wp.zeros((substeps + 1, 2 * n_shapes), dtype=k.vec3, device=device)
        self.sdf_poses = [wp.zeros(substeps + 1, dtype=k.SdfPose, device=device)
                          for kind in kinds if kind == SHAPE_SDF]
        self.sdf_tables = [blocks[block] for kind, block in key if kind == SHAPE_SDF]
        self.sdf_voxel: list[Any] = [k.scalar(0.0) for _ in self.sdf_tables]
        """Per SDF collider, its voxel size [m] (the continuous test's tolerance)."""
        self.meshes = [(meshes or {})[ident] for kind, ident in key if kind == SHAPE_MESH]
        self.sequences = [(sequences or {})[ident] for kind, ident in key
                          if kind == SHAPE_SDF_SEQUENCE]

    # --- per frame ----------------------------------------------------------------------------
    def update(self, colliders: Sequence[Collider]) -> None:
        """Upload this frame's poses (host: the colliders' own interpolation, in float64)."""
        alphas = [s / self.substeps for s in range(self.substeps + 1)]
        shapes = [c for c in colliders
                  if not isinstance(c, (SdfCollider, MeshCollider, SdfSequence))]
        sdfs = [c for c in colliders if isinstance(c, SdfCollider)]
        for device_seq, seq in zip(self.sequences,
                                   [c for c in colliders if isinstance(c, SdfSequence)]):
            device_seq.update(seq)
        for device_mesh, mesh in zip(self.meshes,
                                     [c for c in colliders if isinstance(c, MeshCollider)]):
            device_mesh.update(mesh)
        if shapes:
            table = np.zeros((self.substeps + 1, 2 * len(shapes), 3))
            for c, shape in enumerate(shapes):
                moving = shape.is_moving
                for s, alpha in enumerate(alphas if moving else [1.0]):
                    pose = shape.pose_at(alpha)  # type: ignore[attr-defined]
                    rows = slice(s, s + 1) if moving else slice(None)
                    table[rows, 2 * c] = pose[0]
                    if len(pose) > 1:
                        table[rows, 2 * c + 1] = pose[1]
            self.shape_pose.assign(table.astype(self.np_scalar))
            self.shape_radius.assign(np.array([float(getattr(c, "radius", 0.0)) for c in shapes],
                                              dtype=self.np_scalar))
        for j, sdf in enumerate(sdfs):
            moving = sdf.is_moving
            rec = np.zeros(self.substeps + 1, dtype=self.k.SdfPose.numpy_dtype())
            for s, alpha in enumerate(alphas if moving else [1.0]):
                pose = sdf.pose(alpha)
                a, b = sdf.grid.index_transform(pose.rotation, pose.translation)
                rows = slice(s, s + 1) if moving else slice(None)
                rec["a"][rows] = a
                rec["b"][rows] = b
                rec["rot"][rows] = pose.rotation
                rec["trans"][rows] = pose.translation
            rec["moving"] = int(moving)
            self.sdf_poses[j].assign(rec)

    # --- recording ----------------------------------------------------------------------------
    def launches(self, step: int, common: list[Any], contact: list[Any], particles: int,
                 continuous: bool = False, iteration: int = 0, probe: bool = False
                 ) -> list[tuple[Any, int, list[Any]]]:
        """(kernel, dim, inputs) of the collider projections of iteration ``iteration`` of
        substep ``step``, in order; with ``probe`` (the hierarchy's contact probe) without the
        mesh colliders, which the numpy backend's probe leaves out too.

        ``common`` = [p, x_prev, inv_mass, thickness_scale, friction_scale] (the last two per
        particle, :mod:`pbdcloth.cloth.attributes`), ``contact`` = [thickness, mu_s, mu_k, h,
        contact, contact_normal, surface_velocity]; ``continuous``: the analytic shapes' continuous
        test first (:mod:`pbdcloth.colliders.continuous`).
        """
        k = self.k
        out = []
        for kind, a, b in self.segments:
            if kind == "shapes":
                out.append((k.collide_shapes, particles,
                            [*common, self.shape_kind, self.shape_radius, self.shape_pose, a, b,
                             step, int(continuous), *contact]))
            elif kind == "mesh":
                if not probe:
                    out.extend(self.meshes[a].launches(step, iteration, common, contact))
            elif kind == "sequence":
                seq = self.sequences[a]
                out.append((k.collide_sdf_sequence, particles,
                            [*common, seq.table0, seq.table1, seq.dims, seq.poses,
                             k.scalar(step / self.substeps),
                             k.scalar((step + 1) / self.substeps), *contact]))
            else:
                table, dims = self.sdf_tables[a]
                out.append((k.collide_sdf, particles,
                            [*common, table, dims, self.sdf_poses[a], step, int(continuous),
                             self.sdf_voxel[a], *contact]))
        return out


class DeviceSequence:
    """A level-set sequence's two fields on the device: ``table0`` / ``table1`` (frame k's and
    k + 1's padded [phi, grad] blocks, float32, in buffers of ``capacity`` rows), ``dims`` (2,)
    and ``poses`` (2,) ``SdfPose`` records. A frame whose block outgrows the buffers makes
    larger ones and sets ``stale`` (the frame must be recorded again)."""

    def __init__(self, kernels: Any, device: Any) -> None:
        self.k = kernels
        self.device = device
        self.capacity = 0
        self.table0: Any = None
        self.table1: Any = None
        self.dims: Any = wp.zeros(2, dtype=wp.vec3i, device=device)
        self.poses: Any = wp.zeros(2, dtype=kernels.SdfPose, device=device)
        self.stale = True

    def update(self, sequence: SdfSequence) -> None:
        """Upload the coming frame's two level sets (reads the next frame's)."""
        fields = sequence.frame_fields()
        tables = [np.ascontiguousarray(f.grid.table, dtype=np.float32) for f in fields]
        need = max(t.shape[0] for t in tables)
        if need > self.capacity:
            self.capacity = max(need, int(1.25 * self.capacity))
            self.table0 = wp.zeros(self.capacity, dtype=wp.vec4f, device=self.device)
            self.table1 = wp.zeros(self.capacity, dtype=wp.vec4f, device=self.device)
            self.stale = True
        rec = np.zeros(2, dtype=self.k.SdfPose.numpy_dtype())
        for j, (field, table, target) in enumerate(zip(fields, tables,
                                                       (self.table0, self.table1))):
            wp.copy(target, wp.array(table, dtype=wp.vec4f, device=self.device),
                    count=table.shape[0])
            pose = field.pose(1.0)
            a, b = field.grid.index_transform(pose.rotation, pose.translation)
            rec["a"][j], rec["b"][j] = a, b
            rec["rot"][j], rec["trans"][j] = pose.rotation, pose.translation
        self.poses.assign(rec)
        self.dims.assign(np.array([[int(n) for n in f.grid.shape] for f in fields],
                                  dtype=np.int32))


def upload_block(collider: SdfCollider, device: Any) -> tuple[Any, Any]:
    """An SDF collider's padded table [phi, grad] (float32) on ``device`` and its dimensions."""
    grid = collider.grid
    table: Any = wp.array(np.ascontiguousarray(grid.table, dtype=np.float32), dtype=wp.vec4f,
                     device=device)
    return table, wp.vec3i(*(int(n) for n in grid.shape))
