"""The asset in a real Houdini: load the library, cook the example network, compare with the core.

Run with ``./scripts/test_hython.sh`` (``hython -m pytest tests/hython``).
"""

from __future__ import annotations

from pathlib import Path

import hou  # noqa: F401 - collected only when Houdini is present (see conftest.py)
import make_example_hip
import numpy as np
import pytest
import simulate
from pbdcloth import ClothSolver
from pbdcloth.cloth.mesh import ClothMesh
from pbdcloth.cloth.topology import build_topology
from pbdcloth.houdini import geometry as hgeo
from pbdcloth.houdini import parms, vdb
from pbdcloth.houdini.operators import OPERATORS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def library() -> None:
    hou.hipFile.clear(suppress_save_prompt=True)
    make_example_hip.install_library()


@pytest.fixture()
def example() -> hou.SopNode:
    hou.hipFile.clear(suppress_save_prompt=True)
    make_example_hip.install_library()
    solver = make_example_hip.build(rows=12, voxel_size=0.04)
    hou.setFrame(1)
    return solver


def _sibling(node: hou.SopNode, name: str) -> hou.SopNode:
    """The SOP ``name`` in the same network as ``node``."""
    sibling = hou.node(f"{node.path().rsplit('/', 1)[0]}/{name}")
    assert isinstance(sibling, hou.SopNode), name
    return sibling


def _geometry(node: hou.SopNode) -> hou.Geometry:
    geo = node.geometry()
    assert geo is not None, node.path()
    return geo


def _set_parms(node: hou.OpNode, **values: float) -> None:
    for name, value in values.items():
        parm = node.parm(name)
        assert parm is not None, name
        parm.set(value)


def _parm_names(node: hou.OpNode) -> set[str]:
    folders = (hou.parmTemplateType.Folder, hou.parmTemplateType.FolderSet)
    return {t.name() for t in node.parmTuples() if t.parmTemplate().type() not in folders}


def test_every_operator_loads_with_exactly_its_declared_parameters() -> None:
    obj = hou.node("/obj")
    assert obj is not None
    geo = obj.createNode("geo", "parm_check")
    for op in OPERATORS:
        node_type = hou.nodeType(hou.sopNodeTypeCategory(), op.type_name)
        assert node_type is not None, op.type_name
        assert node_type.maxNumInputs() == len(op.inputs)
        node = geo.createNode(op.type_name)
        assert isinstance(node, hou.SopNode)
        assert _parm_names(node) == {p.name for p in op.parameters}
    geo.destroy()


def test_preprocess_detail_arrays_equal_the_core_topology(example: hou.SopNode) -> None:
    geo = _geometry(_sibling(example, "preprocess"))
    faces = [[v.point().number() for v in prim.vertices()] for prim in geo.prims()]
    expected = build_topology(ClothMesh.from_arrays(hgeo.read_positions(geo), faces))
    for name, values in expected.detail_arrays().items():
        if np.issubdtype(values.dtype, np.integer):
            assert np.array_equal(geo.intListAttribValue(name), values), name
        else:  # detail floats are 32-bit in Houdini
            np.testing.assert_allclose(geo.floatListAttribValue(name), values.astype(float),
                                       rtol=2e-7)


def test_example_network_matches_the_headless_core(example: hou.SopNode) -> None:
    hou.setFrame(6)
    cooked = hgeo.read_positions(_geometry(example))
    pre_geo = _geometry(_sibling(example, "preprocess"))
    sdf_geo = _geometry(_sibling(example, "ball_sdf"))
    dense = vdb.read_vdb(next(p for p in sdf_geo.prims() if isinstance(p, hou.VDB)))
    ref = ClothSolver(hgeo.read_positions(pre_geo),
                      hgeo.read_detail_int_array(pre_geo, "triangles").reshape(-1, 3),
                      settings=parms.cloth_settings(example),
                      colliders=[vdb.sdf_collider(dense)])
    for _ in range(5):
        ref.step(1.0 / hou.fps())
    np.testing.assert_allclose(cooked, ref.positions, atol=1e-6)
    assert cooked[:, 1].min() < 1.5 - 0.05  # it moved


def test_scrubbing_back_gives_the_same_frame_as_a_fresh_run(example: hou.SopNode) -> None:
    hou.setFrame(4)
    first = hgeo.read_positions(_geometry(example))
    hou.setFrame(8)
    example.geometry()
    hou.setFrame(4)
    again = hgeo.read_positions(_geometry(example))
    assert np.array_equal(first, again)


def test_vdb_block_read_agrees_with_houdini(example: hou.SopNode) -> None:
    prim = next(p for p in _geometry(_sibling(example, "ball_sdf")).prims()
                if isinstance(p, hou.VDB))
    dense = vdb.read_vdb(prim, block_voxels=5000)
    lo = np.array([int(round(c)) for c in prim.activeVoxelBoundingBox().minvec()])
    rng = np.random.default_rng(7)
    for ijk in rng.integers(0, dense.values.shape, size=(50, 3)):
        assert dense.values[tuple(ijk)] == pytest.approx(prim.voxel(list(lo + ijk)), abs=1e-7)
        pos = dense.origin + dense.voxel_size * ijk
        assert dense.values[tuple(ijk)] == pytest.approx(prim.sample(list(pos)), abs=1e-5)


def test_vdb_from_polygons_verb_takes_the_parameters_we_set() -> None:
    verb = hou.sopNodeTypeCategory().nodeVerb("vdbfrompolygons")
    assert isinstance(verb, hou.SopVerb)
    assert {"voxelsize", "builddistance", "distancename", "buildfog", "useworldspaceunits",
            "exteriorbandvoxels", "interiorbandvoxels", "fillinterior"} <= set(verb.parms())


def test_simulate_script_writes_every_frame(example: hou.SopNode, tmp_path: Path) -> None:
    hip = tmp_path / "drape.hip"
    hou.hipFile.save(str(hip))
    pattern = str(tmp_path / "cache" / "cloth.$F4.bgeo.sc")
    written = simulate.simulate(str(hip), example.path(), 1, 3, pattern)
    assert [p.name for p in written] == [f"cloth.000{f}.bgeo.sc" for f in (1, 2, 3)]
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [p.name for p in written]
    geo = hou.Geometry()
    geo.loadFromFile(str(written[-1]))
    assert geo.pointCount() == 12 * 12


def test_spring_chains_sop_swings_a_line_like_the_core() -> None:
    from pbdcloth.houdini import sops
    from pbdcloth.houdini.operators import SPRING_CHAINS
    from pbdcloth.settings import SpringSettings
    from pbdcloth.springs import SpringChain

    obj = hou.node("/obj")
    assert obj is not None
    geo = obj.createNode("geo", "springs_check")
    line = geo.createNode("line")
    springs = geo.createNode(SPRING_CHAINS.type_name)
    assert isinstance(line, hou.SopNode) and isinstance(springs, hou.SopNode)
    _set_parms(line, dist=1.0, points=5)
    direction = line.parmTuple("dir")
    assert direction is not None
    direction.set([1.0, 0.0, 0.0])
    springs.setInput(0, line)
    _set_parms(springs, stiffness=0.0)
    hou.setFrame(12)
    got = hgeo.read_positions(_geometry(springs))
    rest = hgeo.read_positions(_geometry(line))  # static input: the parent stays the identity
    chain = SpringChain(rest, settings=SpringSettings(stiffness=0.0), collision_passes=4)
    for _ in range(11):
        chain.step(1.0 / hou.fps(), parent=sops.parent_matrix(rest[0], rest[0], rest[1] - rest[0],
                                                               rest[1] - rest[0]))
    np.testing.assert_allclose(got, chain.positions, atol=1e-6)
    assert got[-1, 1] < rest[-1, 1] - 0.05  # it fell
    geo.destroy()


def test_keyed_damping_is_sampled_per_frame_and_scrubbing_is_a_lookup(
        example: hou.SopNode) -> None:
    """In a real Houdini: a keyed parameter does not restart the simulation each frame, and
    going back is a lookup (the counts come from the node's cached simulation)."""
    from pbdcloth.houdini import sops

    parm = example.parm("damping")
    assert parm is not None
    for frame, value in ((1, 0.0), (10, 2.0)):
        key = hou.Keyframe()
        key.setFrame(frame)
        key.setValue(value)
        parm.setKeyframe(key)
    for frame in range(1, 11):
        hou.setFrame(frame)
        _geometry(example)
    sim = example.cachedUserData(sops.STATE_KEY)
    assert isinstance(sim, sops.NodeSimulation) and sim.stepped == 9
    hou.setFrame(4)
    _geometry(example)
    hou.setFrame(10)
    _geometry(example)
    assert example.cachedUserData(sops.STATE_KEY) is sim and sim.stepped == 9
    assert sim.cache.frames() == list(range(1, 11))
