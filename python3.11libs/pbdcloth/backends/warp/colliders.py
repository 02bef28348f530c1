"""Colliders on the Warp device: their poses per substep, prepared on the host once per frame.

Analytic shapes (:class:`~pbdcloth.colliders.shapes.Plane`, ``Sphere``, ``Capsule``) share one
table: kind, radius [m] and two 3-vectors per shape (plane: point and unit normal; sphere: centre;
capsule: the two ends) at each alpha = s / substeps, s = 0..substeps, as the shapes' own
``pose_at`` gives them. Consecutive shapes are projected by one launch. Each
:class:`~pbdcloth.colliders.sdf.SdfCollider` has its dense block on the device (uploaded once per
block) and its rigid pose per substep, and one launch. Each
:class:`~pbdcloth.colliders.mesh.MeshCollider` has its own arrays and launches
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
from ...colliders.shapes import Capsule, Plane, Sphere
from .kernels import SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SDF, SHAPE_SPHERE
from .mesh_collider import DeviceMeshCollider

#: A triangle-mesh collider (its own launches, :mod:`.mesh_collider`).
SHAPE_MESH = 4

_SHAPE_KIND = {Plane: SHAPE_PLANE, Sphere: SHAPE_SPHERE, Capsule: SHAPE_CAPSULE,
               SdfCollider: SHAPE_SDF, MeshCollider: SHAPE_MESH}


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
                "MeshCollider); use "
                "backend='numpy' for it"
            )
        block = (id(collider.grid) if isinstance(collider, SdfCollider)
                 else id(collider) if isinstance(collider, MeshCollider) else 0)
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
    """

    def __init__(self, kernels: Any, device: Any, key: tuple[tuple[int, int], ...],
                 substeps: int, blocks: dict[int, Any],
                 meshes: dict[int, DeviceMeshCollider] | None = None) -> None:
        k = kernels
        self.k = k
        self.device = device
        self.substeps = substeps
        self.np_scalar = np.float32 if k.scalar is wp.float32 else np.float64
        kinds = [kind for kind, _ in key]
        shapes = [kind for kind in kinds if kind not in (SHAPE_SDF, SHAPE_MESH)]
        self.count = len(kinds)
        self.segments: list[tuple[str, int, int]] = []
        n_shape = n_sdf = n_mesh = 0
        for kind in kinds:
            if kind == SHAPE_SDF:
                self.segments.append(("sdf", n_sdf, 0))
                n_sdf += 1
                continue
            if kind == SHAPE_MESH:
                self.segments.append(("mesh", n_mesh, 0))
                n_mesh += 1
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

    # --- per frame ----------------------------------------------------------------------------
    def update(self, colliders: Sequence[Collider]) -> None:
        """Upload this frame's poses (host: the colliders' own interpolation, in float64)."""
        alphas = [s / self.substeps for s in range(self.substeps + 1)]
        shapes = [c for c in colliders if not isinstance(c, (SdfCollider, MeshCollider))]
        sdfs = [c for c in colliders if isinstance(c, SdfCollider)]
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
            else:
                table, dims = self.sdf_tables[a]
                out.append((k.collide_sdf, particles,
                            [*common, table, dims, self.sdf_poses[a], step, int(continuous),
                             self.sdf_voxel[a], *contact]))
        return out


def upload_block(collider: SdfCollider, device: Any) -> tuple[Any, Any]:
    """An SDF collider's padded table [phi, grad] (float32) on ``device`` and its dimensions."""
    grid = collider.grid
    table: Any = wp.array(np.ascontiguousarray(grid.table, dtype=np.float32), dtype=wp.vec4f,
                     device=device)
    return table, wp.vec3i(*(int(n) for n in grid.shape))
