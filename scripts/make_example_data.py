"""Regenerate the small input meshes of examples/data (committed; run after changing them).

    PYTHONPATH=python3.11libs python scripts/make_example_data.py

* towel.obj: a 0.6 x 0.9 m towel of 16 x 24 points as QUADS, hanging in the XY plane (the scene
  file triangulates it); its top corners are pinned by boxes in examples/towel_lift.toml.
* banner.usda: a 1.2 x 0.8 m banner of 25 x 17 points in a UsdGeomMesh with a point GeomSubset
  "hem" (the top row), in centimetres and Z up, to show unit and axis conversion.
* table.obj: a closed mesh (table top on a pedestal, two boxes) for the mesh-to-level-set
  collider of examples/tablecloth.toml.
* ball.vdb: an OpenVDB narrow-band level set of a 0.3 m sphere (2 cm voxels) for
  examples/drape_vdb.toml (needs pyopenvdb).
* walk/walk.0001.obj ... walk.0024.obj: the walking lower-body mesh of
  pbdcloth.scenes.walker (coarse: 12 points a ring, 8 rings a leg) at 24 fps, one OBJ a frame,
  for the deforming mesh collider of examples/walk_mesh.toml.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pbdcloth.scenes.cloth import grid

DATA = Path(__file__).resolve().parent.parent / "examples" / "data"


def towel() -> None:
    nx, ny = 16, 24
    pos, _ = grid(nx, ny, 0.6, 0.9, plane="xy", origin=(-0.3, 1.6, 0.0))
    idx = np.arange(nx * ny).reshape(ny, nx)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    lines = ["# towel: 16 x 24 points, quads, metres, Y up"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in pos]
    lines += ["f " + " ".join(str(i + 1) for i in q) for q in quads]
    (DATA / "towel.obj").write_text("\n".join(lines) + "\n")


def banner() -> None:
    from pxr import Usd, UsdGeom, Vt

    nx, ny = 25, 17
    pos, tris = grid(nx, ny, 1.2, 0.8, plane="xy", origin=(0.0, 2.0, 0.0))
    # Author in centimetres, Z up: (x, y, z)_Y-up metres -> (x, -z, y)_Z-up centimetres.
    zup = np.stack([pos[:, 0], -pos[:, 2], pos[:, 1]], axis=1) * 100.0
    path = DATA / "banner.usda"
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    mesh = UsdGeom.Mesh.Define(stage, "/banner")
    stage.SetDefaultPrim(mesh.GetPrim())
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(zup.astype(np.float32)))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(tris)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray(tris.reshape(-1).tolist()))
    hem = np.arange(nx)  # row j = 0, the top edge
    UsdGeom.Subset.CreateGeomSubset(UsdGeom.Imageable(mesh.GetPrim()), "hem",
                                    UsdGeom.Tokens.point, Vt.IntArray(hem.tolist()))
    stage.GetRootLayer().Save()


def _box(lo: tuple[float, float, float], hi: tuple[float, float, float]
         ) -> tuple[np.ndarray, np.ndarray]:
    """A closed box as 8 corners and 6 outward quads."""
    x = np.array([[lo[0], lo[1], lo[2]], [hi[0], lo[1], lo[2]], [hi[0], hi[1], lo[2]],
                  [lo[0], hi[1], lo[2]], [lo[0], lo[1], hi[2]], [hi[0], lo[1], hi[2]],
                  [hi[0], hi[1], hi[2]], [lo[0], hi[1], hi[2]]])
    quads = np.array([[0, 3, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [2, 3, 7, 6], [1, 2, 6, 5],
                      [0, 4, 7, 3]])
    return x, quads


def table() -> None:
    top = _box((-0.5, 0.72, -0.35), (0.5, 0.77, 0.35))
    foot = _box((-0.06, 0.0, -0.06), (0.06, 0.72, 0.06))
    lines = ["# table: a top 1.0 x 0.05 x 0.7 m at 0.72-0.77 m on a 0.12 m pedestal; quads"]
    for k, (x, q) in enumerate((top, foot)):
        lines += [f"v {a:.4f} {b:.4f} {c:.4f}" for a, b, c in x]
        lines += ["f " + " ".join(str(i + 1 + 8 * k) for i in f) for f in q]
    (DATA / "table.obj").write_text("\n".join(lines) + "\n")


def ball() -> None:
    from pbdcloth.colliders.vdb_io import import_openvdb, write_level_set

    vdb = import_openvdb()
    grid = vdb.createLevelSetSphere(radius=0.3, center=(0.0, 0.55, 0.0), voxelSize=0.02,
                                    halfWidth=3.0)
    grid.name = "ball"
    write_level_set(DATA / "ball.vdb", grid)


def walk() -> None:
    from pbdcloth.scenes.walker import WalkingBody

    body = WalkingBody(segments=12, rings=8)
    folder = DATA / "walk"
    folder.mkdir(exist_ok=True)
    faces = ["f " + " ".join(str(i + 1) for i in t) for t in body.triangles]
    for frame in range(1, 25):
        v = body.vertices((frame - 1) / 24.0)
        lines = [f"# walking body, frame {frame}"]
        lines += [f"v {x:.5f} {y:.5f} {z:.5f}" for x, y, z in v]
        (folder / f"walk.{frame:04d}.obj").write_text("\n".join(lines + faces) + "\n")


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    towel()
    banner()
    table()
    ball()
    walk()
    print(f"wrote towel.obj, banner.usda, table.obj, ball.vdb and walk/ to {DATA}")
