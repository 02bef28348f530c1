"""SdfSequence: a level set that changes every frame (a VDB sequence, or a deforming mesh turned
into a level set frame by frame), blended across the substeps.

Each frame k has its own narrow-band level set phi_k (an :class:`~pbdcloth.colliders.sdf.
SdfCollider`: a ``body.$F4.vdb`` file as Houdini's *VDB from Polygons* writes per frame, or a
mesh converted with OpenVDB). Within frame k -> k + 1, at ``alpha`` in [0, 1], the collider is

    phi(x, alpha) = (1 - alpha) phi_k(x) + alpha phi_k+1(x),   n = grad phi / |grad phi|,

where both fields know x (inside both bands); where only one does, that one's value and normal;
neither: the background and no direction, as for a single level set. A blend of two signed
distances is not a distance, but its zero set moves continuously from one frame's surface to
the next, which is what the substeps need.

The surface's own motion, for friction: with a ``surface`` mesh (the mesh the level sets were
made from, a :class:`~pbdcloth.colliders.mesh.MeshCollider` following the same frames), the
motion of the mesh point closest to the contact (barycentric interpolation of its vertices'
motion); without one, the level sets give only the normal motion, d = -(phi(x, alpha1) -
phi(x, alpha0)) n (a level set has no tangential velocity). Contacts are discrete (the end of
each substep): a surface moving more than the band plus the thickness in one substep can pass
a particle; use a :class:`~pbdcloth.colliders.mesh.MeshCollider` for continuous collision.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..arrays import F
from .base import Collider
from .mesh import MeshCollider, MeshColliderError
from .sdf import SdfCollider

__all__ = ["SdfSequence"]


class SdfSequence(Collider):
    """A level set per frame, blended across substeps (module docstring).

    Args:
        level_set: frame number -> the :class:`~pbdcloth.colliders.sdf.SdfCollider` of that
            frame (called once per frame, in order).
        first_frame: the frame number of the start pose.
        surface: optional mesh following the same frames, for the surface's motion (friction).
        name: for messages.
    """

    def __init__(self, level_set: Callable[[int], SdfCollider], first_frame: int = 0,
                 surface: MeshCollider | None = None, name: str = "level set sequence"
                 ) -> None:
        if isinstance(first_frame, bool) or not isinstance(first_frame, numbers.Integral):
            raise MeshColliderError(f"first_frame must be a whole number, got {first_frame!r}")
        self.name: str = name
        self.first_frame: int = int(first_frame)
        self.surface: MeshCollider | None = surface
        self._source: Callable[[int], SdfCollider] = level_set
        self._frame: int = 0
        self._f0: SdfCollider = self._load(0)
        self._f1: SdfCollider | None = None

    @classmethod
    def from_mesh_frames(cls, triangles: object, frames: Callable[[int], object],
                         voxel_size: float, half_width: float = 3.0, first_frame: int = 0,
                         name: str = "mesh level sets") -> SdfSequence:
        """Each frame's closed mesh (``frames``: frame -> (V, 3) vertices; fixed
        ``triangles``) turned into a level set with OpenVDB; the mesh itself gives the
        surface's motion."""
        surface = MeshCollider(None, triangles, frames=frames, first_frame=first_frame,
                               name=name)

        def level_set(frame: int) -> SdfCollider:
            return SdfCollider.from_mesh(surface.frame_vertices(frame), surface.triangles,
                                         voxel_size, half_width)

        return cls(level_set, first_frame, surface, name)

    def _load(self, k: int) -> SdfCollider:
        number = self.first_frame + k
        try:
            made = self._source(number)
        except MeshColliderError:
            raise
        except (OSError, ValueError) as exc:
            raise MeshColliderError(f"{self.name} frame {number}: {exc}") from None
        if not isinstance(made, SdfCollider):
            raise MeshColliderError(f"{self.name} frame {number}: the frame source gave a "
                                    f"{type(made).__name__}, not an SdfCollider")
        return made

    @property
    def frame(self) -> int:
        """Frame number of the current start pose."""
        return self.first_frame + self._frame

    @property
    def current(self) -> SdfCollider:
        """The level set at the start of the coming frame (the current one between steps)."""
        return self._f0

    def _end(self) -> SdfCollider:
        if self._f1 is None:
            self._f1 = self._load(self._frame + 1)
        return self._f1

    def frame_fields(self) -> tuple[SdfCollider, SdfCollider]:
        """The level sets at the start and the end of the coming frame (reads the next one)."""
        return self._f0, self._end()

    def end_frame(self) -> None:
        self._f0 = self._end()
        self._f1 = None
        self._frame += 1
        if self.surface is not None:
            self.surface.end_frame()

    def seek(self, frame: int) -> None:
        """Start the coming frame at frame number ``frame`` (resuming a run there)."""
        self._frame = int(frame) - self.first_frame
        self._f0 = self._load(self._frame)
        self._f1 = None
        if self.surface is not None:
            self.surface.seek(frame)

    @property
    def is_moving(self) -> bool:
        return True

    def near(self, points: F, alpha: float, distance: float) -> tuple[NDArray[np.intp], F, F]:
        """As :meth:`Collider.near`; a step asks for it, so the next frame is read here."""
        self._end()
        return super().near(points, alpha, distance)

    def query(self, points: F, alpha: float = 1.0) -> tuple[F, F]:
        """Blended distance (M,) [m] and unit normal (M, 3) (module docstring). Between steps
        (the next frame not read yet), the current frame's level set."""
        if alpha == 0.0 or self._f1 is None:
            return self._f0.query(points, 1.0)
        phi0, n0 = self._f0.query(points, 1.0)
        phi1, n1 = self._end().query(points, 1.0)
        if alpha == 1.0:
            return phi1, n1
        k0 = np.einsum("ij,ij->i", n0, n0) > 0.0
        k1 = np.einsum("ij,ij->i", n1, n1) > 0.0
        both = k0 & k1
        phi = np.where(k1 & ~k0, phi1, np.where(k0 & ~k1, phi0,
                                                (1.0 - alpha) * phi0 + alpha * phi1))
        n = np.where((k1 & ~k0)[:, None], n1, np.where((k0 & ~k1)[:, None], n0,
                                                       (1.0 - alpha) * n0 + alpha * n1))
        length = np.sqrt(np.einsum("ij,ij->i", n, n))
        n = np.where((length > 0.0)[:, None], n / np.where(length > 0.0, length, 1.0)[:, None],
                     0.0)
        phi = np.where(both | k0 | k1, phi, np.maximum(phi0, phi1))
        return phi, n

    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        """The surface's motion near ``points`` (M, 3) from ``alpha0`` to ``alpha1`` [m]:
        from the ``surface`` mesh when there is one, else the normal motion of the blend."""
        if self.surface is not None:
            self.surface.pose_at(alpha1)  # a step asks: read the mesh's next frame
            return self.surface.displacement(points, alpha0, alpha1)
        phi0, _ = self.query(points, alpha0)
        phi1, n1 = self.query(points, alpha1)
        return np.asarray(-(phi1 - phi0)[:, None] * n1, dtype=np.float64)

    def __repr__(self) -> str:
        return f"SdfSequence(name={self.name!r}, frame={self.frame})"
