#!/usr/bin/env hython
"""Build an example scene: a grid dropped on a sphere (grid -> preprocess -> solver + VDB).

    hython scripts/make_example_hip.py [examples/pbdcloth_drape.hip]

The network is /obj/pbdcloth_example: a 2 m Grid SOP 1.5 m up, the PBD Cloth Preprocess, a
polygon sphere turned into a signed distance field by VDB from Polygons, and the PBD Cloth
Solver, displayed. The asset library and the Python package are taken from this repository when
the Houdini package is not installed. Then cache it with ``scripts/simulate.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    import hou

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python3.11libs") not in sys.path:
    sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.houdini import hda  # noqa: E402
from pbdcloth.houdini.operators import PREPROCESS, SOLVER  # noqa: E402

LIBRARY = ROOT / "hda" / "pbdcloth.hda"
NETWORK = "pbdcloth_example"


def install_library() -> None:
    """Install ``hda/pbdcloth.hda`` in this session unless its operators are already known."""
    hda.install_library(LIBRARY)


def build(rows: int = 30, voxel_size: float = 0.02) -> "hou.SopNode":
    """Create the example network and return its solver node."""
    import hou

    install_library()
    obj = hou.node("/obj")
    if obj is None:
        raise RuntimeError("this session has no /obj network")
    old = obj.node(NETWORK)
    if old is not None:
        old.destroy()
    geo = obj.createNode("geo", NETWORK)
    grid = geo.createNode("grid", "cloth")
    _set(grid, size=(2.0, 2.0), t=(0.0, 1.5, 0.0), rows=rows, cols=rows)
    pre = geo.createNode(PREPROCESS.type_name, "preprocess")
    pre.setInput(0, grid)
    sphere = geo.createNode("sphere", "ball")
    _set(sphere, type="polymesh", rad=(0.5, 0.5, 0.5), t=(0.0, 0.5, 0.0), rows=24, cols=48)
    vdb = geo.createNode("vdbfrompolygons", "ball_sdf")
    vdb.setInput(0, sphere)
    _set(vdb, voxelsize=voxel_size)
    solver = geo.createNode(SOLVER.type_name, "solver")
    solver.setInput(0, pre)
    solver.setInput(1, vdb)
    _set(solver, substeps=10, thickness=0.01, friction=0.3)
    if not isinstance(solver, hou.SopNode):
        raise RuntimeError(f"{SOLVER.type_name} did not create a SOP")
    solver.setDisplayFlag(True)
    solver.setRenderFlag(True)
    geo.layoutChildren()
    hou.playbar.setFrameRange(1, 120)
    return solver


def _set(node: "hou.Node", **values: Union[float, int, str, tuple[float, ...]]) -> None:
    """Set parameters (tuples on parm tuples), naming the node and parameter when one is missing."""
    import hou

    if not isinstance(node, hou.OpNode):
        raise RuntimeError(f"{node.path()} has no parameters")
    for name, value in values.items():
        if isinstance(value, tuple):
            parm_tuple = node.parmTuple(name)
            if parm_tuple is None:
                raise RuntimeError(f"{node.path()} has no parameter tuple {name!r}")
            parm_tuple.set([float(v) for v in value])
        else:
            parm = node.parm(name)
            if parm is None:
                raise RuntimeError(f"{node.path()} has no parameter {name!r}")
            parm.set(value)


def main(argv: list[str] | None = None) -> int:
    import hou

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="examples/pbdcloth_drape.hip",
                        help="where to save the .hip file")
    args = parser.parse_args(argv)
    solver = build()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    hou.hipFile.save(str(out))
    print(f"saved {out}; solver at {solver.path()}. Cache it with:\n"
          f"  hython scripts/simulate.py {out} --node {solver.path()} --frames 1 120 "
          "--out 'cache/cloth.$F4.bgeo.sc'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
