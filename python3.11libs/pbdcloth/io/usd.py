"""OpenUSD caches and USD mesh input, with usd-core (``pip install 'pbdcloth[usd]'``).

Cache layout: one layer with a single ``UsdGeomMesh`` (the default prim, ``/cloth``) whose
``points`` are time-sampled at the frame numbers (one time code per frame), plus time-sampled
``extent``, optional vertex ``normals`` and ``velocities`` [m/s], and primvars ``strain``
(time-sampled) and ``w`` (inverse mass [1/kg], constant). Stage metadata: ``upAxis = "Y"``,
``metersPerUnit = 1``, ``framesPerSecond = timeCodesPerSecond = fps``, ``startTimeCode`` and
``endTimeCode`` = first and last frame written. The number of the last frame on disk is kept in
the layer's ``customLayerData["pbdcloth"]["last_frame"]``.

Changing topology (a cloth that tears): from the first frame whose faces differ from the
mesh's, ``faceVertexCounts``, ``faceVertexIndices`` and the ``w`` primvar are time-sampled too
(a sample at the first frame holds the faces until then), so every frame carries its own
topology; readers take the faces at each frame's time (:attr:`UsdCache.frame_faces`).

Streaming and atomicity: the stage lives in memory; :meth:`UsdCacheWriter.commit` exports it to
a temporary file beside the target and renames it over the target (``os.replace``), so the file
on disk always holds complete frames only. Exports are throttled so that writing costs at most
about ``1 / (1 + commit_ratio)`` of the run time on long caches.

Everything imports usd-core lazily: the core package works without it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..atomic import atomic_path
from ..cloth.mesh import MeshError
from ..portable import rotate_t

PRIM_PATH = "/cloth"


class UsdError(MeshError):
    """A USD file cannot be read as a cloth mesh or cache; the message says why."""


def require_usd() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """``(Usd, UsdGeom, Sdf, Vt)`` from usd-core, or a clear error naming the extra."""
    try:
        from pxr import Sdf, Usd, UsdGeom, Vt
    except ImportError as exc:
        raise UsdError(
            f"USD needs usd-core: pip install 'pbdcloth[usd]' ({exc})"
        ) from None
    return Usd, UsdGeom, Sdf, Vt


def _vec3f(Vt: ModuleType, values: NDArray[np.float64]) -> Any:
    return Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(values, dtype=np.float32))


def _flat_faces(faces: ArrayLike | Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        return [int(faces.shape[1])] * faces.shape[0], faces.reshape(-1).astype(int).tolist()
    polys = [[int(i) for i in f] for f in cast(Sequence[Sequence[int]], faces)]
    return [len(f) for f in polys], [i for f in polys for i in f]


class UsdCacheWriter:
    """Stream cloth frames into one USD file, committing complete frames atomically.

    Args:
        path: the ``.usd``/``.usdc``/``.usda`` file to write.
        faces: polygons of the mesh (fixed for the whole cache).
        fps: frames per second (``framesPerSecond`` and ``timeCodesPerSecond``).
        start_frame: frame number of the first frame (``startTimeCode``).
        resume_after: ``None`` starts a new file; a frame number reopens the existing file and
            keeps only its samples up to and including that frame.
        commit_ratio: an export is skipped while the time since the last one is below
            ``commit_ratio`` times that export's duration (0 = export every frame, inf = only
            on :meth:`close`).

    Use :meth:`write_frame` per frame (it returns whether the frame is now on disk) and
    :meth:`close` at the end (it commits what is pending).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        faces: ArrayLike | Sequence[Sequence[int]],
        fps: float,
        start_frame: int = 1,
        resume_after: int | None = None,
        commit_ratio: float = 5.0,
        inverse_mass: ArrayLike | None = None,
    ) -> None:
        Usd, UsdGeom, Sdf, Vt = require_usd()
        self._Usd, self._UsdGeom, self._Sdf, self._Vt = Usd, UsdGeom, Sdf, Vt
        self.path = Path(path)
        self.fps = float(fps)
        self.start_frame = int(start_frame)
        self.commit_ratio = float(commit_ratio)
        self.last_frame: int | None = None
        self.committed_frame: int | None = None
        self._last_export_seconds = 0.0
        self._last_export_end = 0.0
        counts, indices = _flat_faces(faces)
        self._faces_now = (counts, indices)
        self._faces_seen: object = None
        self._inverse_mass_now = (None if inverse_mass is None
                                  else np.asarray(inverse_mass, dtype=np.float32))
        self._first_frame: float | None = None
        if resume_after is None:
            layer = Sdf.Layer.CreateAnonymous(".usd")
            self.stage = Usd.Stage.Open(layer)
            self.mesh = UsdGeom.Mesh.Define(self.stage, PRIM_PATH)
            self.stage.SetDefaultPrim(self.mesh.GetPrim())
            UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.y)
            UsdGeom.SetStageMetersPerUnit(self.stage, 1.0)
            self.stage.SetFramesPerSecond(self.fps)
            self.stage.SetTimeCodesPerSecond(self.fps)
            self.mesh.CreateFaceVertexCountsAttr(Vt.IntArray(counts))
            self.mesh.CreateFaceVertexIndicesAttr(Vt.IntArray(indices))
            self.mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
            self.mesh.CreateOrientationAttr(UsdGeom.Tokens.rightHanded)
            if inverse_mass is not None:
                pv = UsdGeom.PrimvarsAPI(self.mesh).CreatePrimvar(
                    "w", Sdf.ValueTypeNames.FloatArray, UsdGeom.Tokens.vertex)
                pv.Set(Vt.FloatArray.FromNumpy(np.asarray(inverse_mass, dtype=np.float32)))
        else:
            self._reopen(int(resume_after), counts, indices)

    # ---------------------------------------------------------------------------------------
    def _reopen(self, keep_until: int, counts: list[int], indices: list[int]) -> None:
        Usd, UsdGeom, Sdf = self._Usd, self._UsdGeom, self._Sdf
        if not self.path.is_file():
            raise UsdError(f"cannot resume: {self.path} does not exist")
        source = Sdf.Layer.FindOrOpen(str(self.path))
        if source is None:
            raise UsdError(f"cannot resume: {self.path} is not a readable USD layer")
        layer = Sdf.Layer.CreateAnonymous(".usd")
        layer.TransferContent(source)
        del source
        self.stage = Usd.Stage.Open(layer)
        self.mesh = UsdGeom.Mesh(self.stage.GetPrimAtPath(PRIM_PATH))
        if not self.mesh:
            raise UsdError(f"cannot resume: {self.path} has no mesh at {PRIM_PATH}")
        counts_attr = self.mesh.GetFaceVertexCountsAttr()
        indices_attr = self.mesh.GetFaceVertexIndicesAttr()
        old_counts = list(counts_attr.Get())
        old_indices = list(indices_attr.Get())
        if old_counts != counts or old_indices != indices:
            raise UsdError(f"cannot resume: the mesh in {self.path} has other faces")
        for attr in self.mesh.GetPrim().GetAttributes():
            for t in attr.GetTimeSamples():
                if t > keep_until:
                    attr.ClearAtTime(t)
        samples = self.mesh.GetPointsAttr().GetTimeSamples()
        if not samples or round(samples[-1]) != keep_until:
            raise UsdError(f"cannot resume: {self.path} does not hold frame {keep_until}")
        self._first_frame = float(samples[0])
        if counts_attr.GetTimeSamples():
            at = self._Usd.TimeCode(float(keep_until))
            self._faces_now = (list(counts_attr.Get(at)), list(indices_attr.Get(at)))
            w = UsdGeom.PrimvarsAPI(self.mesh).GetPrimvar("w")
            if w and w.GetAttr().GetTimeSamples():
                self._inverse_mass_now = np.asarray(w.Get(at), dtype=np.float32)
        self.last_frame = keep_until
        self.committed_frame = keep_until

    # ---------------------------------------------------------------------------------------
    def write_frame(
        self,
        frame: int,
        positions: ArrayLike,
        normals: ArrayLike | None = None,
        velocities: ArrayLike | None = None,
        strain: ArrayLike | None = None,
        force_commit: bool = False,
        extra: Mapping[str, ArrayLike] | None = None,
        faces: ArrayLike | Sequence[Sequence[int]] | None = None,
        inverse_mass: ArrayLike | None = None,
    ) -> bool:
        """Add a frame's time samples; returns True if the file on disk now holds this frame.

        ``positions``/``normals``/``velocities`` are (N, 3) [m], [unit], [m/s]; ``strain`` (N,);
        ``extra``: other point attributes, name -> (N,) or (N, 3) floats, written as
        time-sampled vertex primvars of that name. ``faces`` and ``inverse_mass``: this frame's
        polygons and ``w`` when they may change (a tearing cloth); a change is time-sampled
        (see the module docstring), the same ones again cost a comparison (none when it is
        the very object passed with the previous frame: change faces by passing a new one).
        """
        UsdGeom, Sdf, Vt = self._UsdGeom, self._Sdf, self._Vt
        t = self._Usd.TimeCode(float(frame))
        if self._first_frame is None:
            self._first_frame = float(frame)
        if faces is not None:
            self._sample_faces(faces, t)
        if inverse_mass is not None:
            self._sample_inverse_mass(np.asarray(inverse_mass, dtype=np.float32), t)
        pos = np.asarray(positions, dtype=np.float64)
        points = _vec3f(Vt, pos)
        self.mesh.GetPointsAttr().Set(points, t)
        self.mesh.GetExtentAttr().Set(UsdGeom.Mesh.ComputeExtent(points), t)
        if normals is not None:
            attr = self.mesh.GetNormalsAttr() or self.mesh.CreateNormalsAttr()
            attr.Set(_vec3f(Vt, np.asarray(normals)), t)
            self.mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        if velocities is not None:
            attr = self.mesh.GetVelocitiesAttr() or self.mesh.CreateVelocitiesAttr()
            attr.Set(_vec3f(Vt, np.asarray(velocities)), t)
        if strain is not None:
            api = UsdGeom.PrimvarsAPI(self.mesh)
            pv = api.GetPrimvar("strain")
            if not pv:
                pv = api.CreatePrimvar("strain", Sdf.ValueTypeNames.FloatArray,
                                       UsdGeom.Tokens.vertex)
            pv.Set(Vt.FloatArray.FromNumpy(np.asarray(strain, dtype=np.float32)), t)
        for name, values in (extra or {}).items():
            self._primvar(name, values, t)
        self.last_frame = int(frame)
        due = (self.commit_ratio != float("inf")
               and time.perf_counter() - self._last_export_end
               >= self.commit_ratio * self._last_export_seconds)
        if force_commit or due:
            self.commit()
            return True
        return False

    def _sample_faces(self, faces: ArrayLike | Sequence[Sequence[int]], t: Any) -> None:
        """Time-sample the faces at ``t`` when they differ from the last ones written."""
        if faces is self._faces_seen:
            return  # the very object written last time (a cloth's triangles between tears)
        self._faces_seen = faces
        counts, indices = _flat_faces(faces)
        if (counts, indices) == self._faces_now:
            return
        Vt = self._Vt
        counts_attr = self.mesh.GetFaceVertexCountsAttr()
        indices_attr = self.mesh.GetFaceVertexIndicesAttr()
        if not counts_attr.GetTimeSamples():
            first = self._Usd.TimeCode(self._first_frame)
            counts_attr.Set(Vt.IntArray(self._faces_now[0]), first)
            indices_attr.Set(Vt.IntArray(self._faces_now[1]), first)
        counts_attr.Set(Vt.IntArray(counts), t)
        indices_attr.Set(Vt.IntArray(indices), t)
        self._faces_now = (counts, indices)

    def _sample_inverse_mass(self, w: NDArray[np.float32], t: Any) -> None:
        """Time-sample the ``w`` primvar at ``t`` when it differs from the last one written."""
        now = self._inverse_mass_now
        if now is None or (now.shape == w.shape and np.array_equal(now, w)):
            return
        UsdGeom, Vt = self._UsdGeom, self._Vt
        pv = UsdGeom.PrimvarsAPI(self.mesh).GetPrimvar("w")
        if not pv.GetAttr().GetTimeSamples():
            pv.Set(Vt.FloatArray.FromNumpy(now), self._Usd.TimeCode(self._first_frame))
        pv.Set(Vt.FloatArray.FromNumpy(w), t)
        self._inverse_mass_now = w

    def _primvar(self, name: str, values: ArrayLike, t: Any) -> None:
        """Set the vertex primvar ``name`` (float (N,) or float3 (N, 3)) at time ``t``."""
        UsdGeom, Sdf, Vt = self._UsdGeom, self._Sdf, self._Vt
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim == 1:
            kind, value = Sdf.ValueTypeNames.FloatArray, Vt.FloatArray.FromNumpy(
                arr.astype(np.float32))
        elif arr.ndim == 2 and arr.shape[1] == 3:
            kind, value = Sdf.ValueTypeNames.Float3Array, _vec3f(Vt, arr)
        else:
            raise UsdError(f"point attribute {name!r} of shape {arr.shape} has no USD primvar "
                           "type here (float or float3 per point)")
        api = UsdGeom.PrimvarsAPI(self.mesh)
        pv = api.GetPrimvar(name) or api.CreatePrimvar(name, kind, UsdGeom.Tokens.vertex)
        pv.Set(value, t)

    def commit(self) -> None:
        """Export the stage to a temporary file and rename it over the target (atomic)."""
        if self.last_frame is None or self.committed_frame == self.last_frame:
            return
        begin = time.perf_counter()
        self.stage.SetStartTimeCode(float(self.start_frame))
        self.stage.SetEndTimeCode(float(self.last_frame))
        layer = self.stage.GetRootLayer()
        data = dict(layer.customLayerData)
        data["pbdcloth"] = {"last_frame": int(self.last_frame),
                            "start_frame": int(self.start_frame)}
        layer.customLayerData = data
        tmp = atomic_path(self.path)
        try:
            if not layer.Export(str(tmp)):
                raise UsdError(f"could not write {tmp}")
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self.committed_frame = self.last_frame
        self._last_export_end = time.perf_counter()
        self._last_export_seconds = self._last_export_end - begin

    def close(self) -> None:
        """Commit pending frames."""
        self.commit()


# ------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------
@dataclass
class UsdMesh:
    """A mesh read from USD, in metres and Y-up.

    Attributes:
        positions: points in world space [m], shape (N, 3).
        faces: polygons as lists of point indices.
        subsets: GeomSubset name -> sorted point indices (face subsets become the points of
            their faces).
        prim_path: the mesh prim read.
        primvars: the mesh's float primvars with one value per point (``vertex`` or
            ``varying`` interpolation, one component), by name, shape (N,): per-point
            attributes such as ``bendScale`` (:mod:`pbdcloth.cloth.attributes`).
    """

    positions: NDArray[np.float64]
    faces: list[list[int]]
    subsets: dict[str, NDArray[np.int64]] = field(default_factory=dict)
    prim_path: str = ""
    primvars: dict[str, NDArray[np.float64]] = field(default_factory=dict)


def _open_stage(path: str | os.PathLike[str]) -> Any:
    Usd = require_usd()[0]
    source = Path(path)
    if not source.is_file():
        raise UsdError(f"USD file not found: {source}")
    try:
        stage = Usd.Stage.Open(str(source))
    except Exception as exc:  # noqa: BLE001 - pxr raises Tf.ErrorException
        raise UsdError(f"{source}: cannot open as USD: {exc}") from None
    if stage is None:
        raise UsdError(f"{source}: cannot open as USD")
    return stage


def _find_mesh(stage: Any, prim_path: str | None, source: str) -> Any:
    UsdGeom = require_usd()[1]
    if prim_path:
        prim = stage.GetPrimAtPath(prim_path)
        if not prim or not prim.IsA(UsdGeom.Mesh):
            meshes = [str(p.GetPath()) for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)]
            raise UsdError(f"{source}: no mesh at {prim_path!r}; meshes: {meshes}")
        return UsdGeom.Mesh(prim)
    default = stage.GetDefaultPrim()
    if default and default.IsA(UsdGeom.Mesh):
        return UsdGeom.Mesh(default)
    for prim in stage.Traverse():
        if prim.IsA(UsdGeom.Mesh):
            return UsdGeom.Mesh(prim)
    raise UsdError(f"{source}: no UsdGeomMesh in the stage")


def _to_metres_y_up(stage: Any, points: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scale by ``metersPerUnit`` and turn a Z-up stage Y-up: (x, y, z) -> (x, z, -y).

    A stage without authored ``metersPerUnit`` is read as 1 unit = 1 m, as Houdini does (USD's
    own fallback would be centimetres)."""
    UsdGeom = require_usd()[1]
    scale = (float(UsdGeom.GetStageMetersPerUnit(stage))
             if UsdGeom.StageHasAuthoredMetersPerUnit(stage) else 1.0)
    out = points * scale
    if UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z:
        out = np.stack([out[:, 0], out[:, 2], -out[:, 1]], axis=1)
    return out


def _world_points(stage: Any, mesh: Any, time_code: Any) -> NDArray[np.float64]:
    pts = mesh.GetPointsAttr().Get(time_code)
    if pts is None or len(pts) == 0:
        raise UsdError(f"{mesh.GetPath()}: the mesh has no points")
    local = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
    m = np.asarray(mesh.ComputeLocalToWorldTransform(time_code), dtype=np.float64)
    world = rotate_t(m[:3, :3], local) + m[3, :3]  # USD matrices act on row vectors
    return _to_metres_y_up(stage, world)


def read_usd_mesh(path: str | os.PathLike[str], prim_path: str | None = None,
                  frame: float | None = None) -> UsdMesh:
    """A cloth mesh from a USD file: the mesh at ``prim_path`` (default: the default prim if it
    is a mesh, else the first mesh), its points at ``frame`` (default: the earliest sample or
    the default value) in world space, metres and Y-up, and its GeomSubsets as point groups."""
    Usd, UsdGeom = require_usd()[:2]
    stage = _open_stage(path)
    mesh = _find_mesh(stage, prim_path, str(path))
    attr = mesh.GetPointsAttr()
    samples = attr.GetTimeSamples()
    if frame is not None:
        t = Usd.TimeCode(float(frame))
    elif samples and attr.Get(Usd.TimeCode.Default()) is None:
        t = Usd.TimeCode(samples[0])  # only time samples: take the earliest
    else:
        t = Usd.TimeCode.Default()
    positions = _world_points(stage, mesh, t)
    counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get(), dtype=np.int64)
    indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(), dtype=np.int64)
    if counts.size == 0 or counts.sum() != indices.size:
        raise UsdError(f"{mesh.GetPath()}: faceVertexCounts and faceVertexIndices disagree")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    faces = [indices[s:s + c].tolist() for s, c in zip(starts.tolist(), counts.tolist())]
    subsets: dict[str, NDArray[np.int64]] = {}
    for subset in UsdGeom.Subset.GetAllGeomSubsets(UsdGeom.Imageable(mesh.GetPrim())):
        name = subset.GetPrim().GetName()
        kind = subset.GetElementTypeAttr().Get()
        ids = np.asarray(subset.GetIndicesAttr().Get(t) or [], dtype=np.int64)
        if kind == "point":
            subsets[name] = np.unique(ids)
        elif kind == "face":
            if ids.size and (ids.min() < 0 or ids.max() >= len(faces)):
                raise UsdError(f"GeomSubset {name!r} refers to faces outside the mesh")
            subsets[name] = np.unique(np.asarray([i for f in ids.tolist() for i in faces[f]],
                                                 dtype=np.int64))
    return UsdMesh(positions=positions, faces=faces, subsets=subsets,
                   prim_path=str(mesh.GetPath()), primvars=_point_primvars(mesh, t, len(positions)))


def _point_primvars(mesh: Any, t: Any, n: int) -> dict[str, NDArray[np.float64]]:
    """The mesh's one-component numeric primvars with one value per point, at time ``t``
    (indexed primvars are flattened)."""
    UsdGeom = require_usd()[1]
    out: dict[str, NDArray[np.float64]] = {}
    for pv in UsdGeom.PrimvarsAPI(mesh).GetPrimvars():
        if pv.GetInterpolation() not in (UsdGeom.Tokens.vertex, UsdGeom.Tokens.varying):
            continue
        value = pv.ComputeFlattened(t)
        if value is None:
            continue
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if arr.shape == (n,):
            out[str(pv.GetPrimvarName())] = arr
    return out


@dataclass
class UsdCache:
    """Frames of a time-sampled USD mesh: frame numbers, points per frame and faces."""

    frames: list[int]
    positions: list[NDArray[np.float64]]
    faces: list[list[int]]
    strain: list[NDArray[np.float64]] | None
    fps: float
    attributes: list[dict[str, NDArray[np.float64]]] = field(default_factory=list)
    """Point attributes per frame: ``v`` (velocities) and every vertex primvar (``w``,
    ``strain``, ...) at that time."""
    frame_faces: list[list[list[int]]] | None = None
    """The faces at each frame when the topology is time-sampled (a torn cloth), else None
    (``faces`` hold for every frame)."""


def read_usd_cache(path: str | os.PathLike[str], prim_path: str | None = None,
                   every: int = 1) -> UsdCache:
    """Every ``every``-th time sample of the points of a cached mesh (local space, as written)."""
    Usd, UsdGeom = require_usd()[:2]
    stage = _open_stage(path)
    mesh = _find_mesh(stage, prim_path, str(path))
    samples = list(mesh.GetPointsAttr().GetTimeSamples())
    if not samples:
        raise UsdError(f"{path}: the mesh's points have no time samples")
    samples = samples[::max(int(every), 1)]
    counts_attr, indices_attr = mesh.GetFaceVertexCountsAttr(), mesh.GetFaceVertexIndicesAttr()
    faces = _faces_at(counts_attr, indices_attr, Usd.TimeCode.Default())
    frame_faces = None
    if counts_attr.GetTimeSamples() or indices_attr.GetTimeSamples():
        frame_faces = [_faces_at(counts_attr, indices_attr, Usd.TimeCode(t)) for t in samples]
    pv = UsdGeom.PrimvarsAPI(mesh).GetPrimvar("strain")
    strain = ([np.asarray(pv.Get(Usd.TimeCode(t)), dtype=np.float64) for t in samples]
              if pv and pv.GetAttr().GetTimeSamples() else None)
    positions = [np.asarray(mesh.GetPointsAttr().Get(Usd.TimeCode(t)), dtype=np.float64)
                 for t in samples]
    primvars = [p for p in UsdGeom.PrimvarsAPI(mesh).GetPrimvars()
                if p.GetInterpolation() == UsdGeom.Tokens.vertex]
    velocities = mesh.GetVelocitiesAttr()
    attributes: list[dict[str, NDArray[np.float64]]] = []
    for t, pts in zip(samples, positions):
        n = pts.shape[0]
        at: dict[str, NDArray[np.float64]] = {}
        if velocities and velocities.HasValue():
            v = velocities.Get(Usd.TimeCode(t))
            if v is not None and len(v) == n:
                at["v"] = np.asarray(v, dtype=np.float64)
        for p in primvars:
            value = p.Get(Usd.TimeCode(t))
            if value is None:
                continue
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                continue
            if arr.shape[:1] == (n,):
                at[p.GetPrimvarName()] = arr
        attributes.append(at)
    return UsdCache(frames=[round(t) for t in samples], positions=positions, faces=faces,
                    strain=strain, fps=float(stage.GetFramesPerSecond()),
                    attributes=attributes, frame_faces=frame_faces)


def _faces_at(counts_attr: Any, indices_attr: Any, t: Any) -> list[list[int]]:
    """The polygons at time ``t``; a UsdError when counts and indices disagree."""
    counts = np.asarray(counts_attr.Get(t), dtype=np.int64)
    indices = np.asarray(indices_attr.Get(t), dtype=np.int64)
    if counts.sum() != indices.size:
        raise UsdError(f"{counts_attr.GetPrim().GetPath()}: faceVertexCounts and "
                       "faceVertexIndices disagree")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return [indices[s:s + c].tolist() for s, c in zip(starts.tolist(), counts.tolist())]
