"""MeshCollider: a triangle mesh whose vertices move every frame with a fixed topology.

A deforming character, a sword, a moving platform: ``MeshCollider(vertices, triangles)``, then
``move_to(vertices)`` before each frame (or ``frames=``: a callable frame -> vertices, or an
(F, V, 3) array). Within a frame the vertices travel linearly from the frame's start pose to its
end pose, substep by substep, as pins do: at ``alpha`` in [0, 1] of the frame
V(alpha) = V0 + alpha (V1 - V0).

Contacts, each iteration of each substep (:meth:`MeshCollider.project_cloth`, called by the
backend with the cloth's triangles; :mod:`.mesh_contact` holds the math):

1. Cloth vertices against the collider's triangles. Candidate pairs come from the broad phase
   (:mod:`.broadphase`): the vertex's box over the substep (from its start x to its current p,
   grown by the thickness) against the triangles' boxes swept over the substep. Each pair's
   *side* is the side of the triangle's plane the vertex starts the substep on (the sign of
   (x - a0) . n0). Continuous: a vertex whose path crosses a triangle (the first root of the
   vertex-face cubic, :mod:`.ccd`) goes to the crossing point carried with the triangle to the
   end of the substep, a thickness out on its starting side. Discrete: every vertex then moves
   to the thickness on its side of its most violated pair (closest point on the face: along the
   face normal on the pair's side; on an edge or corner: away from the closest point), with
   Coulomb friction against the surface's own motion at the contact point (the barycentric
   interpolation of the triangle's vertex displacements over the substep).
2. Collider vertices against the cloth's triangles (a spike, a finger tip between cloth
   vertices): the same continuous and sided tests with the roles swapped; a violated pair moves
   the cloth triangle's corners away from the collider vertex along the triangle's normal, in
   proportion to their barycentric weights and inverse masses (a point-triangle constraint with
   an immovable point, Müller et al. 2006 section 3.3), averaged over a vertex's pairs.

3. Sharp collider edges against the cloth's edges (a blade's edge, a thin box's ridge
   between two cloth vertices): the sided edge-edge test of :mod:`.mesh_edges`, the cloth
   edge's ends pushed a thickness out on the side it started on.

Guarantee: a cloth vertex that starts a substep outside the band of every triangle ends each
iteration on the side of every triangle it started on, wherever its path crossed a triangle's
interior (up to the cubic's root tolerance, 2^-30 of the substep), however far the collider
moved: no triangle passes through a cloth vertex and no collider vertex passes through a cloth
triangle, however fast the mesh moves within a substep, since both tests follow the linear
paths of the substep. A cloth edge that crosses a sharp collider edge within a substep is
brought back while it ends within the contact band of it (the edge test is discrete, with
sides). Not covered: a cloth edge that passes a sharp edge and ends beyond the band in one
substep, and a cloth vertex that goes around a free boundary of an open collider mesh and
under a face within one substep (it is sent back to its starting side).

Fail-safe for closed meshes (every edge shared by two triangles): a cloth vertex that starts a
substep inside the mesh within the contact band (after a conflict between constraints, say) is
found by its generalized winding number and pushed out through its nearest triangle, instead of
being kept on the inner side (:func:`.mesh_contact.find_trapped`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Union

import numpy as np
from numpy.typing import NDArray

from ..arrays import MAX_COORDINATE, F, I
from ..cloth.topology import edge_use
from ..selfcollision.geometry import closest_point_triangle, columns, cross, dot, unit
from .base import ClothContactCollider, SolverInputError, lerp
from .broadphase import BoxGrid, PairList
from .mesh_contact import Substep, project_cloth_vertices, project_collider_vertices, recheck
from .mesh_edges import cloth_edges, project_collider_edges, sharp_edges
from .response import ContactBuffer

__all__ = ["FrameSource", "MeshCollider", "MeshColliderError", "Substep"]

#: A frame source: frame number -> (V, 3) vertices, or an (F, V, 3) array of frames.
FrameSource = Union[Callable[[int], object], NDArray[np.float64]]  # noqa: UP007 (a runtime alias)


class MeshColliderError(SolverInputError):
    """A MeshCollider's vertices or triangles are unusable (shape, NaN, topology change)."""


def check_triangles(triangles: object, vertex_count: int) -> I:
    """(T, 3) vertex indices in [0, V), as ``np.intp``, or a :class:`MeshColliderError`."""
    try:
        arr = np.asarray(triangles)
    except (TypeError, ValueError) as exc:
        raise MeshColliderError(f"MeshCollider triangles must be a (T, 3) array of vertex "
                                f"indices: {exc}") from None
    if arr.dtype.kind not in "iu" or arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise MeshColliderError(f"MeshCollider triangles must be a (T, 3) array of whole "
                                f"vertex indices (T >= 1), got shape {arr.shape} of {arr.dtype}")
    bad = np.flatnonzero((arr < 0).any(axis=1) | (arr >= vertex_count).any(axis=1))
    if bad.size:
        raise MeshColliderError(f"MeshCollider triangle {int(bad[0])} is {arr[bad[0]].tolist()}: "
                                f"vertex indices must be in [0, {vertex_count})")
    return arr.astype(np.intp)


def check_vertices(vertices: object, what: str, count: int | None = None) -> F:
    """(V, 3) finite vertices within +-MAX_COORDINATE [m] (V = ``count`` when given), or a
    :class:`MeshColliderError` naming ``what`` and the problem."""
    try:
        raw = np.asarray(vertices)
    except (TypeError, ValueError) as exc:
        raise MeshColliderError(f"{what}: vertices must be a (V, 3) array of numbers: {exc}") \
            from None
    if raw.dtype.kind not in "iuf":
        raise MeshColliderError(f"{what}: vertices must be real numbers, got dtype {raw.dtype}")
    arr = np.array(raw, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise MeshColliderError(f"{what}: vertices must have shape (V, 3), got {arr.shape}")
    if count is not None and arr.shape[0] != count:
        raise MeshColliderError(
            f"{what}: {arr.shape[0]} vertices, but the collider's topology has {count}; a "
            "MeshCollider keeps its triangles, so every frame needs the same vertices in the "
            "same order (topology changed)")
    ok = np.isfinite(arr).all(axis=1) & (np.abs(arr) <= MAX_COORDINATE).all(axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        raise MeshColliderError(
            f"{what}: vertex {int(bad[0])} is {arr[bad[0]].tolist()} ({bad.size} bad vertices); "
            f"vertices must be finite and within +-{MAX_COORDINATE:g} m")
    return arr


class MeshCollider(ClothContactCollider):
    """A triangle mesh obstacle whose vertices move every frame (module docstring).

    Args:
        vertices: (V, 3) positions [m] at the start; may be ``None`` when ``frames`` is given.
        triangles: (T, 3) vertex indices; the orientation does not matter (sides are kept per
            substep, not taken from the winding).
        frames: optional source of the vertices at the end of each frame: a callable
            ``frame -> (V, 3)`` (called with ``first_frame``, ``first_frame + 1``, ...) or an
            (F, V, 3) array (frame k = row k; after the last row the mesh stays at it). The
            start pose is the source's ``first_frame``; ``end_frame`` loads the next.
        first_frame: the frame number of the start pose (for the callable and messages).
        name: for messages and ``repr``.

    Raises:
        MeshColliderError: bad shapes, NaN, indices out of range, a frame whose vertex count
            differs from the triangles' (a topology change), naming the frame.
    """

    def __init__(self, vertices: object, triangles: object, *,
                 frames: FrameSource | None = None, first_frame: int = 0,
                 name: str = "mesh") -> None:
        if isinstance(first_frame, bool) or not isinstance(first_frame, numbers.Integral):
            raise MeshColliderError(f"first_frame must be a whole number, got {first_frame!r}")
        self.name: str = name
        self.first_frame: int = int(first_frame)
        self._frames: FrameSource | None = frames
        self._frame: int = 0
        if frames is not None and not callable(frames):
            arr = np.asarray(frames)
            if arr.ndim != 3 or arr.shape[2] != 3 or arr.shape[0] == 0:
                raise MeshColliderError(f"{name}: frames must be a callable frame -> vertices or "
                                        f"an (F, V, 3) array, got shape {arr.shape}")
            self._frames = arr
        if vertices is None:
            if frames is None:
                raise MeshColliderError(f"{name}: give vertices or frames")
            start = self._load(0, None)
        else:
            start = check_vertices(vertices, f"{name} start vertices")
        self.triangles: I = check_triangles(triangles, start.shape[0])
        self._tri_t: I = np.ascontiguousarray(self.triangles.T)
        self.vertex_count: int = start.shape[0]
        self._v0: F = start
        self._v1_: F = start
        self._pending: bool = frames is not None
        """The end pose is the frame source's next frame, not loaded yet (loaded when first
        needed, so that nothing past the last simulated frame is ever read)."""
        self._poses: dict[float, F] = {}
        self._substep: Substep | None = None
        self._last_end: tuple[F, F, tuple[F, F, F], F] | None = None
        """The last substep's end: its pose (the array :meth:`pose_at` gave), that pose
        component-major, its triangle corners and normals (the next substep's start when it
        starts at the same pose array)."""
        self._tri_grid: BoxGrid = BoxGrid(self.triangles.shape[0])
        self._vert_grid: BoxGrid = BoxGrid(self.vertex_count)
        self._cloth_pairs: PairList = PairList(0.0)
        self._triangle_pairs: PairList = PairList(0.0)
        self.sharp_edges: I = sharp_edges(start, self.triangles)
        """The collider's sharp edges (S, 2) in its start pose (:mod:`.mesh_edges`)."""
        self._sharp_t: I = np.ascontiguousarray(self.sharp_edges.T)
        self._edge_grid: BoxGrid = BoxGrid(self.sharp_edges.shape[0])
        self._edge_pairs: PairList = PairList(0.0)
        self._edge_substep: tuple[F, F, F, F, tuple[F, F]] | None = None
        self._cloth_edges: tuple[I, I] | None = None
        self._free: tuple[F, I] | None = None
        e = start[self.triangles] - start[np.roll(self.triangles, 1, axis=1)]
        self.edge_length: float = float(np.median(np.linalg.norm(e, axis=2)))
        """Median edge length at the start [m] (the vertex grid's cell)."""
        self.closed: bool = bool(np.all(edge_use(self.triangles)[1] == 2))
        """Every edge is shared by exactly two triangles (a closed surface, or several): cloth
        vertices found inside it are sent back out (:func:`.mesh_contact.find_trapped`)."""

    # --- frames ------------------------------------------------------------------------------
    def _load(self, k: int, count: int | None) -> F:
        """The vertices of frame ``first_frame + k`` from the frame source, checked."""
        number = self.first_frame + k
        what = f"{self.name} frame {number}"
        src = self._frames
        if callable(src):
            try:
                value = src(number)
            except SolverInputError:
                raise
            except (OSError, ValueError, KeyError, IndexError) as exc:
                raise MeshColliderError(f"{what}: could not get the vertices: {exc}") from None
        else:
            assert src is not None
            value = src[min(k, src.shape[0] - 1)]
        return check_vertices(value, what, count)

    def frame_vertices(self, number: int) -> F:
        """The frame source's vertices (V, 3) [m] of frame ``number``, checked."""
        if self._frames is None:
            raise MeshColliderError(f"{self.name}: no frame source")
        return self._load(int(number) - self.first_frame, self.vertex_count)

    @property
    def frame(self) -> int:
        """Frame number of the current start pose."""
        return self.first_frame + self._frame

    @property
    def _v1(self) -> F:
        if self._pending:
            self._v1_ = self._load(self._frame + 1, self.vertex_count)
            self._pending = False
        return self._v1_

    def seek(self, frame: int) -> None:
        """Start the coming frame at frame number ``frame`` of the frame source (resuming a
        run there)."""
        if self._frames is None:
            raise MeshColliderError(f"{self.name}: seek needs a frame source")
        self._frame = int(frame) - self.first_frame
        self._v0 = self._load(self._frame, self.vertex_count)
        self._pending = True
        self._poses.clear()
        self._substep = None

    def move_to(self, vertices: object) -> None:
        """Set the vertices (V, 3) [m] for the end of the coming frame (same count and order)."""
        self._pending = False
        self._v1_ = check_vertices(vertices, f"{self.name}.move_to (frame {self.frame + 1})",
                                  self.vertex_count)
        self._poses.clear()
        self._substep = None

    def set_points(self, points: object) -> None:
        """:meth:`move_to` under the name Houdini's collision input uses
        (:class:`pbdcloth.houdini.sops.DeformingCollider`)."""
        self.move_to(points)

    def end_frame(self) -> None:
        self._v0 = self._v1
        self._frame += 1
        self._pending = self._frames is not None
        self._poses.clear()
        self._substep = None

    @property
    def is_moving(self) -> bool:
        return not self._pending and not np.array_equal(self._v0, self._v1_)

    @property
    def vertices(self) -> F:
        """The vertices at the end of the coming frame (V, 3) [m] (read-only view); with a frame
        source, until a step needs the next frame, the current ones."""
        v = (self._v0 if self._pending else self._v1_).view()
        v.flags.writeable = False
        return v

    def _now(self, alpha: float) -> F:
        """:meth:`pose_at` for queries between steps: reads no frame (the current pose while the
        next frame is not needed yet)."""
        return self._v0 if self._pending else self.pose_at(alpha)

    def pose_at(self, alpha: float) -> F:
        """Vertices (V, 3) [m] at ``alpha`` of the frame (exact at 0 and 1)."""
        hit = self._poses.get(alpha)
        if hit is None:
            hit = lerp(self._v0, self._v1, alpha)
            self._poses[alpha] = hit
        return hit

    # --- the substep -------------------------------------------------------------------------
    def substep(self, alpha0: float, alpha1: float, thickness: float) -> Substep:
        """The substep's poses, with both broad-phase grids refit to it (once per substep)."""
        sub = self._substep
        if sub is not None and (sub.alpha0, sub.alpha1, sub.thickness) == (alpha0, alpha1,
                                                                          thickness):
            return sub
        pose0, pose1 = self.pose_at(alpha0), self.pose_at(alpha1)
        t = self._tri_t
        last = self._last_end
        if last is not None and last[0] is pose0:  # the same arrays: the same values
            v0, c0, normal0 = last[1], last[2], last[3]
        else:
            v0 = np.ascontiguousarray(pose0.T)
            c0 = (columns(v0, t[0]), columns(v0, t[1]), columns(v0, t[2]))
            normal0 = unit(cross(c0[1] - c0[0], c0[2] - c0[0]))
        v1 = np.ascontiguousarray(pose1.T)
        c1 = (columns(v1, t[0]), columns(v1, t[1]), columns(v1, t[2]))
        tlo = np.minimum(np.minimum(np.minimum(c0[0], c0[1]), np.minimum(c0[2], c1[0])),
                         np.minimum(c1[1], c1[2])) - thickness
        thi = np.maximum(np.maximum(np.maximum(c0[0], c0[1]), np.maximum(c0[2], c1[0])),
                         np.maximum(c1[1], c1[2])) + thickness
        self._tri_grid.refit(0.5 * (tlo + thi), 0.5 * (thi - tlo),
                             float((thi - tlo).mean()))
        vlo, vhi = np.minimum(v0, v1) - thickness, np.maximum(v0, v1) + thickness
        self._vert_grid.refit(0.5 * (vlo + vhi), 0.5 * (vhi - vlo), self.edge_length)
        move = v1 - v0
        step = np.sqrt(dot(move, move))
        reach = np.maximum(np.maximum(step.take(t[0]), step.take(t[1])), step.take(t[2]))
        normal1 = unit(cross(c1[1] - c1[0], c1[2] - c1[0]))
        sub = Substep(alpha0, alpha1, thickness, v0, v1, c0, c1, tlo.min(axis=1),
                      thi.max(axis=1), normal0, normal1, reach,
                      orientation=self._orientation(c0))
        self._substep = sub
        self._last_end = (pose1, v1, c1, normal1)
        self._cloth_pairs.reset(0.5 * thickness)
        self._triangle_pairs.reset(0.5 * thickness)
        self._edge_substep = None
        if self._sharp_t.shape[1]:
            e = self._sharp_t
            ends = (columns(v0, e[0]), columns(v0, e[1]), columns(v1, e[0]), columns(v1, e[1]))
            elo = np.minimum(np.minimum(ends[0], ends[1]), np.minimum(ends[2], ends[3])) \
                - thickness
            ehi = np.maximum(np.maximum(ends[0], ends[1]), np.maximum(ends[2], ends[3])) \
                + thickness
            self._edge_grid.refit(0.5 * (elo + ehi), 0.5 * (ehi - elo),
                                  float((ehi - elo).mean()))
            self._edge_substep = (*ends, (elo.min(axis=1), ehi.max(axis=1)))
            self._edge_pairs.reset(0.5 * thickness)
        return sub

    def _orientation(self, corners: tuple[F, F, F]) -> float:
        """+1 / -1 for a closed mesh wound outward / inward (the sign of its enclosed volume,
        the divergence theorem: V = sum a . (b x c) / 6), 0 for an open one."""
        if not self.closed:
            return 0.0
        volume = float(dot(corners[0], cross(corners[1], corners[2])).sum())
        return 1.0 if volume > 0.0 else -1.0 if volume < 0.0 else 0.0

    def project_cloth(self, P: F, X: F, inv_mass: F, triangles: I, alpha0: float,
                      alpha1: float, h: float, thickness: float, mu_static: float,
                      mu_kinetic: float, contacts: ContactBuffer, *,
                      thickness_scale: F | None = None,
                      friction_scale: F | None = None) -> int:
        """One iteration of contacts with the cloth, in place on ``P`` (3, N): cloth vertices
        against the triangles, then collider vertices against the cloth ``triangles`` (3, Tc)
        (module docstring). ``X`` (3, N) are the positions at the start of the substep,
        ``inv_mass`` (N,), ``contacts`` the backend's
        :class:`~pbdcloth.colliders.response.ContactBuffer` (cloth vertices touching a triangle
        are recorded there). Returns the number of those.

        Per-point contact scales (N,) or None: a cloth vertex keeps ``thickness *
        thickness_scale[i]`` from the triangles and its friction coefficients are scaled by
        ``friction_scale[i]``; a cloth triangle keeps ``thickness`` times the mean of its three
        corners' thickness scales from the collider's vertices (no friction there). The broad
        phase is grown by the largest thickness."""
        vertex_thickness: float | F = thickness
        triangle_thickness: float | F = thickness
        band = thickness
        if thickness_scale is not None and thickness_scale.size:
            vertex_thickness = thickness * thickness_scale
            triangle_thickness = thickness * ((thickness_scale.take(triangles[0])
                                               + thickness_scale.take(triangles[1])
                                               + thickness_scale.take(triangles[2])) / 3.0)
            band = thickness * float(thickness_scale.max())
        sub = self.substep(alpha0, alpha1, band)
        if self._free is None or self._free[0] is not inv_mass:
            self._free = (inv_mass, np.flatnonzero(inv_mass > 0.0))
        free = self._free[1]
        touched = project_cloth_vertices(P, X, free, sub, self._tri_grid, self._cloth_pairs, h,
                                         vertex_thickness, mu_static, mu_kinetic, contacts,
                                         friction_scale)
        pushed = project_collider_vertices(P, X, inv_mass, triangles, sub, self._vert_grid,
                                           self._triangle_pairs, triangle_thickness)
        if self._edge_substep is not None:
            edges = self._edges_of(triangles)
            edge_thickness: float | F = thickness
            if thickness_scale is not None and thickness_scale.size:
                edge_thickness = thickness * 0.5 * (thickness_scale.take(edges[0])
                                                    + thickness_scale.take(edges[1]))
            c0, d0, c1, d1, region = self._edge_substep
            pushed = np.append(pushed, project_collider_edges(
                P, X, inv_mass, edges, c0, d0, c1, d1, self._edge_grid, self._edge_pairs,
                region, edge_thickness))
        recheck(P, X, np.append(touched, pushed), free, sub, self._tri_grid,
                self._cloth_pairs, vertex_thickness)
        return int(touched.size)

    def _edges_of(self, triangles: I) -> I:
        """The cloth's edges (2, E) from its triangles (3, Tc), kept while they are the same
        array."""
        if self._cloth_edges is None or self._cloth_edges[0] is not triangles:
            self._cloth_edges = (triangles, cloth_edges(triangles))
        return self._cloth_edges[1]

    # --- the generic collider queries ----------------------------------------------------------
    def _closest(self, points: F, alpha: float, reach: float
                 ) -> tuple[I, I, F, F, F, F]:
        """For each point (M, 3) within ``reach`` of the mesh at ``alpha``: the point's index,
        its closest triangle, barycentric (u, v, w) and the closest point (3, K)."""
        v = np.ascontiguousarray(self._now(alpha).T)
        t = self._tri_t
        a, b, c = columns(v, t[0]), columns(v, t[1]), columns(v, t[2])
        lo = np.minimum(np.minimum(a, b), c)
        hi = np.maximum(np.maximum(a, b), c)
        grid = BoxGrid(t.shape[1])
        grid.refit(0.5 * (lo + hi), 0.5 * (hi - lo), float((hi - lo).mean()) + reach)
        pt = np.ascontiguousarray(np.asarray(points, dtype=np.float64).T)
        i, j = grid.query(pt - reach, pt + reach)
        pa, pb, pc = columns(a, j), columns(b, j), columns(c, j)
        u, vv, w, _ = closest_point_triangle(columns(pt, i), pa, pb, pc)
        q = u * pa + vv * pb + w * pc
        diff = columns(pt, i) - q
        d2 = dot(diff, diff)
        order = np.lexsort((d2, i))
        first = np.ones(order.size, dtype=bool)
        first[1:] = i[order[1:]] != i[order[:-1]]
        sel = order[first]
        sel = sel[d2[sel] <= reach * reach]
        return i[sel], j[sel], u[sel], vv[sel], w[sel], q[:, sel]

    def query(self, points: F, alpha: float = 1.0, reach: float | None = None
              ) -> tuple[F, F]:
        """Distance (M,) [m] and unit normal (M, 3) at ``points`` (M, 3): within ``reach``
        (default the mesh's median edge length, at least 0.05 m) of the mesh the distance to
        the closest point, negative behind the closest triangle's face (its winding's normal;
        for a closed outward-wound mesh, inside); farther away +reach and a zero normal."""
        reach = max(self.edge_length, 0.05) if reach is None else reach
        m = np.asarray(points).shape[0]
        phi = np.full(m, reach)
        normal = np.zeros((m, 3))
        i, j, _, _, _, q = self._closest(points, alpha, reach)
        if i.size:
            x = np.ascontiguousarray(np.asarray(points, dtype=np.float64).T)
            vv = np.ascontiguousarray(self._now(alpha).T)
            t = self._tri_t
            fn = unit(cross(columns(vv, t[1, j]) - columns(vv, t[0, j]),
                            columns(vv, t[2, j]) - columns(vv, t[0, j])))
            diff = columns(x, i) - q
            d = np.sqrt(dot(diff, diff))
            sgn = np.where(dot(diff, fn) < 0.0, -1.0, 1.0)
            nrm = np.where(d > 0.0, diff / np.where(d > 0.0, d, 1.0), fn) * sgn
            phi[i] = sgn * d
            normal[i] = nrm.T
        return phi, normal

    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        """Motion (M, 3) [m] from ``alpha0`` to ``alpha1`` of the surface point closest to each
        of ``points`` at ``alpha1`` (zero farther than the query reach)."""
        out = np.zeros((np.asarray(points).shape[0], 3))
        i, j, u, v, w, _ = self._closest(points, alpha1, max(self.edge_length, 0.05))
        if i.size:
            d = self._now(alpha1) - self._now(alpha0)
            t = self.triangles[j]
            out[i] = u[:, None] * d[t[:, 0]] + v[:, None] * d[t[:, 1]] + w[:, None] * d[t[:, 2]]
        return out

    def __repr__(self) -> str:
        return (f"MeshCollider(name={self.name!r}, vertices={self.vertex_count}, "
                f"triangles={self.triangles.shape[0]}, frame={self.frame})")
