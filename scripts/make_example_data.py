"""Regenerate the small input meshes of examples/data (committed; run after changing them).

    PYTHONPATH=python3.11libs python scripts/make_example_data.py

* towel.obj: a 0.6 x 0.9 m towel of 16 x 24 points as QUADS, hanging in the XY plane (the scene
  file triangulates it); its top corners are pinned by boxes in examples/towel_lift.toml.
* banner.usda: a 1.2 x 0.8 m banner of 25 x 17 points in a UsdGeomMesh with a point GeomSubset
  "hem" (the top row), in centimetres and Z up, to show unit and axis conversion.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pbdcloth.scenes import grid

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


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    towel()
    banner()
    print(f"wrote {DATA}/towel.obj and {DATA}/banner.usda")
