"""VRMC_springBone 1.0: spring chains, their joints' settings and colliders as JSON and glTF.

Two forms, each written and read back:

* :func:`spring_bone_json` / :func:`write_spring_bone_json`: the extension object itself (what a
  VRM file holds under ``extensions.VRMC_springBone``). It validates against the
  VRMC_springBone 1.0 JSON schema. Joints and colliders refer to nodes by index, as the schema
  requires; the named nodes those indices point at travel with it as a glTF-style node array in
  ``extras.pbdcloth.nodes``, so a tool that writes the VRM file can match them by name.
* :func:`write_gltf`: a ``.gltf`` file (pygltflib) whose node hierarchy is the chains (parent
  node, then one node per chain node, each a child of the one before) and whose top-level
  ``extensions`` carry the same VRMC_springBone object (without the node array).

Layout written: per chain a parent node (named ``parent_names[k]``, at the identity, shared by
chains naming the same parent), then nodes ``<name>_0`` ... ``<name>_K`` whose translations are
the rest offsets; per distinct collider a top-level node at the origin, the shape's offset (and
capsule tail) holding its world position; one collider group per chain that has colliders.
Each spring's ``extras.pbdcloth`` keeps what VRM has no field for: ``collisionPasses``,
``settleContacts`` and ``restPoints`` (the rest points exactly as given, used on reading while
they agree with the nodes to 1e-9 m, so a round trip is bit for bit).

Reading accepts any VRMC_springBone 1.0 object whose nodes are given: joints' missing settings
take the schema's defaults, a spring without pbdcloth extras gets one collision pass (plain VRM),
and the chain's points are taken in the frame of the first joint's parent node (see
:class:`~pbdcloth.springs.SpringChain`), which must be rigid. Not supported (refused with a
:class:`VrmError`): ``center`` spaces, colliders on scaled nodes, extended colliders.

Reference: VRM Consortium, VRMC_springBone 1.0 specification and JSON schema
(vrm-c/vrm-specification, ``specification/VRMC_springBone-1.0``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from ..atomic import atomic_write
from ..colliders.base import Collider
from ..colliders.shapes import Capsule, Sphere
from ..portable import matmul, rotate, rotate_t
from ..settings import SPRING_VRM_NAMES, SettingsError, SpringSettings
from ..springs import SpringChain, quaternion_matrix

F = NDArray[np.float64]

EXTENSION = "VRMC_springBone"
SPEC_VERSION = "1.0"
#: Key of this package's data in ``extras``.
EXTRAS_KEY = "pbdcloth"
#: Defaults of a joint's properties in the VRMC_springBone 1.0 schema (joint.schema.json).
SCHEMA_JOINT_DEFAULTS: dict[str, Any] = {
    "hitRadius": 0.0, "stiffness": 1.0, "gravityPower": 0.0, "gravityDir": [0.0, -1.0, 0.0],
    "dragForce": 0.5,
}
#: Largest disagreement between ``extras.pbdcloth.restPoints`` and the nodes still taken as
#: the same rest pose (rounding of the offsets is ~1e-16 m; an edit by another tool is larger).
_REST_POINTS_TOL = 1e-9


class VrmError(ValueError):
    """A VRMC_springBone object or file cannot be written or read (names the offending part)."""


@dataclass
class SpringRig:
    """Spring chains with their names, parents and colliders, as read from VRMC_springBone.

    Attributes:
        chains: one :class:`SpringChain` per spring, reset to rest under its parent's matrix.
        names: the springs' names.
        parent_names: the name of the node each chain hangs from ("" when it has none).
        parent_matrices: that node's rest world matrix (4, 4) (identity when none); pass the
            parent's matrix of each frame to ``chain.step``.
        colliders: every collider of the object, in its order (shared by the chains using it).
        collider_names: the names of the colliders' nodes.
    """

    chains: list[SpringChain]
    names: list[str]
    parent_names: list[str]
    parent_matrices: list[F]
    colliders: list[Collider] = field(default_factory=list)
    collider_names: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------
def spring_bone_json(
    chains: Sequence[SpringChain],
    names: Sequence[str] | None = None,
    parent_names: Sequence[str] | None = None,
    collider_names: Mapping[str, Collider] | None = None,
) -> dict[str, Any]:
    """The VRMC_springBone 1.0 object of ``chains``, with its named nodes in extras.

    Args:
        chains: the chains, in order (exported at their rest pose, not their current one).
        names: a unique name per chain (default ``spring_0``, ``spring_1``, ...); its nodes are
            named ``<name>_0`` ... ``<name>_K``.
        parent_names: the node each chain hangs from (default ``<name>_parent``); chains giving
            the same name share the node.
        collider_names: ``{name: collider}`` for colliders that should carry a name (default
            ``collider_0``, ...). Colliders are written at the pose set by their ``move_to``.

    Raises:
        VrmError: no chains, repeated names, or a collider VRM cannot express (only spheres and
            capsules exist in VRMC_springBone 1.0).
    """
    ext, nodes, _ = _layout(chains, names, parent_names, collider_names)
    ext["extras"] = {EXTRAS_KEY: {"nodes": nodes}}
    return ext


def write_spring_bone_json(
    path: str | os.PathLike[str],
    chains: Sequence[SpringChain],
    names: Sequence[str] | None = None,
    parent_names: Sequence[str] | None = None,
    collider_names: Mapping[str, Collider] | None = None,
) -> Path:
    """Write :func:`spring_bone_json` to ``path`` (indented JSON, atomically)."""
    obj = spring_bone_json(chains, names, parent_names, collider_names)
    target = Path(path)
    with atomic_write(target) as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")
    return target


def write_gltf(
    path: str | os.PathLike[str],
    chains: Sequence[SpringChain],
    names: Sequence[str] | None = None,
    parent_names: Sequence[str] | None = None,
    collider_names: Mapping[str, Collider] | None = None,
) -> Path:
    """Write a ``.gltf`` whose nodes form the chains and which carries VRMC_springBone.

    Same arguments as :func:`spring_bone_json`. Needs pygltflib (``pip install 'pbdcloth[vrm]'``).
    """
    pygltflib = _require_pygltflib()
    from ..version import __version__

    ext, nodes, roots = _layout(chains, names, parent_names, collider_names)
    gltf = pygltflib.GLTF2(
        asset=pygltflib.Asset(version="2.0", generator=f"pbdcloth {__version__}"),
        scene=0,
        scenes=[pygltflib.Scene(nodes=roots)],
        nodes=[pygltflib.Node(name=n["name"], translation=n.get("translation"),
                              children=n.get("children", [])) for n in nodes],
        extensionsUsed=[EXTENSION],
        extensions={EXTENSION: ext},
    )
    target = Path(path)
    with atomic_write(target) as fh:
        fh.write(gltf.to_json(indent=1))
        fh.write("\n")
    return target


def _layout(
    chains: Sequence[SpringChain],
    names: Sequence[str] | None,
    parent_names: Sequence[str] | None,
    collider_names: Mapping[str, Collider] | None,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[int]]:
    """(extension object without extras, glTF-style nodes, indices of the root nodes)."""
    chains = list(chains)
    if not chains:
        raise VrmError("nothing to export: no spring chains given")
    for k, chain in enumerate(chains):
        if not isinstance(chain, SpringChain):
            raise VrmError(f"chains[{k}] is not a SpringChain: {chain!r}")
    chain_names = _names(names, len(chains), "spring", "names")
    parents = _names(parent_names, len(chains), "", "parent_names") if parent_names is not None \
        else [f"{n}_parent" for n in chain_names]
    named = {id(c): n for n, c in (collider_names or {}).items()}

    nodes: list[dict[str, Any]] = []
    roots: list[int] = []
    index: dict[str, int] = {}

    def add(name: str, translation: F | None, parent: int | None) -> int:
        if name in index:
            raise VrmError(f"node name {name!r} is used twice; give unique chain, parent and "
                           f"collider names")
        i = len(nodes)
        node: dict[str, Any] = {"name": name}
        if translation is not None and np.any(translation != 0.0):
            node["translation"] = [float(c) for c in translation]
        nodes.append(node)
        index[name] = i
        if parent is None:
            roots.append(i)
        else:
            nodes[parent].setdefault("children", []).append(i)
        return i

    distinct: list[Collider] = []
    springs: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    parent_nodes: dict[str, int] = {}
    for chain, name, parent_name in zip(chains, chain_names, parents):
        if parent_name not in parent_nodes:
            parent_nodes[parent_name] = add(parent_name, None, None)
        pts = chain.rest_points
        joints: list[dict[str, Any]] = []
        prev = parent_nodes[parent_name]
        for j in range(len(pts)):
            offset = pts[0] if j == 0 else pts[j] - pts[j - 1]
            prev = add(f"{name}_{j}", offset, prev)
            joint: dict[str, Any] = {"node": prev}
            if j < chain.joint_count:
                joint.update(_joint_properties(chain.settings[j]))
            joints.append(joint)
        spring: dict[str, Any] = {"name": name, "joints": joints}
        if chain.colliders:
            members = []
            for c in chain.colliders:
                m = next((i for i, d in enumerate(distinct) if d is c), None)
                if m is None:
                    m = len(distinct)
                    distinct.append(c)
                members.append(m)
            spring["colliderGroups"] = [len(groups)]
            groups.append({"name": f"{name}_colliders", "colliders": members})
        spring["extras"] = {EXTRAS_KEY: {
            "collisionPasses": chain.collision_passes,
            "settleContacts": chain.settle_contacts,
            "restPoints": pts.tolist(),
        }}
        springs.append(spring)

    colliders = []
    for m, c in enumerate(distinct):
        node = add(named.get(id(c), f"collider_{m}"), None, None)
        colliders.append({"node": node, "shape": _shape(c, m)})

    ext: dict[str, Any] = {"specVersion": SPEC_VERSION}
    if colliders:
        ext["colliders"] = colliders
        ext["colliderGroups"] = groups
    ext["springs"] = springs
    return ext, nodes, roots


def _names(given: Sequence[str] | None, count: int, stem: str, what: str) -> list[str]:
    if given is None:
        return [f"{stem}_{k}" for k in range(count)]
    out = list(given)
    if len(out) != count:
        raise VrmError(f"{what} has {len(out)} entries for {count} chains")
    for k, n in enumerate(out):
        if not isinstance(n, str) or not n:
            raise VrmError(f"{what}[{k}] must be a non-empty string, got {n!r}")
    if what == "names" and len(set(out)) != len(out):
        raise VrmError(f"chain names must be unique, got {out}")
    return out


def _joint_properties(settings: SpringSettings) -> dict[str, Any]:
    values = settings.to_dict()
    return {SPRING_VRM_NAMES[k]: v for k, v in values.items()}


def _shape(collider: Collider, m: int) -> dict[str, Any]:
    if isinstance(collider, Sphere):
        return {"sphere": {"offset": collider.center.tolist(), "radius": collider.radius}}
    if isinstance(collider, Capsule):
        return {"capsule": {"offset": collider.a.tolist(), "radius": collider.radius,
                            "tail": collider.b.tolist()}}
    raise VrmError(f"collider {m} is a {type(collider).__name__}; VRMC_springBone 1.0 has only "
                   f"spheres and capsules")


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------
def read_spring_bone_json(source: str | os.PathLike[str] | Mapping[str, Any]) -> SpringRig:
    """Chains from a VRMC_springBone object (as :func:`spring_bone_json` writes) or a whole
    glTF JSON document carrying the extension; ``source`` is a path or the parsed JSON."""
    if isinstance(source, Mapping):
        obj: Any = source
        where = "VRMC_springBone object"
    else:
        p = Path(source)
        if not p.is_file():
            raise VrmError(f"VRMC_springBone JSON file not found: {p}")
        try:
            obj = json.loads(p.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise VrmError(f"{p} is not JSON: {exc}") from None
        where = str(p)
    if not isinstance(obj, Mapping):
        raise VrmError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "specVersion" not in obj and isinstance(obj.get("extensions"), Mapping):
        ext = obj["extensions"].get(EXTENSION)
        if ext is None:
            raise VrmError(f"{where} has no {EXTENSION} extension")
        return _rig(ext, obj.get("nodes", []), where)
    extras = obj.get("extras")
    table = extras.get(EXTRAS_KEY, {}).get("nodes") if isinstance(extras, Mapping) else None
    if table is None:
        raise VrmError(f"{where} has no node array (extras.{EXTRAS_KEY}.nodes): read the glTF "
                       f"or VRM file that holds its nodes instead")
    return _rig(obj, table, where)


def read_gltf(path: str | os.PathLike[str]) -> SpringRig:
    """Chains from a ``.gltf`` / ``.glb`` carrying VRMC_springBone (e.g. from :func:`write_gltf`)."""
    pygltflib = _require_pygltflib()
    p = Path(path)
    if not p.is_file():
        raise VrmError(f"glTF file not found: {p}")
    try:
        gltf = pygltflib.GLTF2().load(str(p))
    except Exception as exc:  # noqa: BLE001 - pygltflib raises assorted errors on bad files
        raise VrmError(f"{p} cannot be read as glTF: {exc}") from None
    if gltf is None:
        raise VrmError(f"{p} cannot be read as glTF")
    ext = (gltf.extensions or {}).get(EXTENSION)
    if ext is None:
        raise VrmError(f"{p} has no {EXTENSION} extension")
    nodes = [{"name": n.name, "children": n.children or [], "translation": n.translation,
              "rotation": n.rotation, "scale": n.scale, "matrix": n.matrix}
             for n in gltf.nodes]
    return _rig(ext, nodes, str(p))


def _rig(ext: Any, nodes: Any, where: str) -> SpringRig:
    if not isinstance(ext, Mapping):
        raise VrmError(f"{where}: {EXTENSION} must be an object")
    version = ext.get("specVersion")
    if version != SPEC_VERSION:
        raise VrmError(f"{where}: specVersion must be '{SPEC_VERSION}', got {version!r}")
    graph = _Graph(nodes, where)
    colliders_json = _list(ext.get("colliders", []), f"{where}: colliders")
    groups_json = _list(ext.get("colliderGroups", []), f"{where}: colliderGroups")
    springs = _list(ext.get("springs", []), f"{where}: springs")
    if not springs:
        raise VrmError(f"{where}: no springs")
    colliders = [_collider(c, graph, f"{where}: colliders[{m}]")
                 for m, c in enumerate(colliders_json)]
    collider_names = [graph.name(_index(c.get("node"), len(graph), f"colliders[{m}].node"))
                      for m, c in enumerate(colliders_json)]

    rig = SpringRig([], [], [], [], colliders, collider_names)
    for k, spring in enumerate(springs):
        at = f"{where}: springs[{k}]"
        if not isinstance(spring, Mapping):
            raise VrmError(f"{at} must be an object")
        if "center" in spring:
            raise VrmError(f"{at} uses a center space, which pbdcloth does not support")
        joints = _list(spring.get("joints"), f"{at}.joints")
        if len(joints) < 2:
            raise VrmError(f"{at} has {len(joints)} joint(s); a chain needs two or more")
        idx = [_index(j.get("node") if isinstance(j, Mapping) else None, len(graph),
                      f"{at}.joints[{i}].node") for i, j in enumerate(joints)]
        parent = graph.parent(idx[0])
        parent_matrix = graph.world(parent) if parent is not None else np.eye(4)
        rot, trans = parent_matrix[:3, :3], parent_matrix[:3, 3]
        if np.abs(rot.T @ rot - np.eye(3)).max() > 1e-6:
            raise VrmError(f"{at}: the node it hangs from ({graph.name(parent)}) is scaled; "
                           f"spring chains need a rigid parent")
        world = np.array([graph.world(i)[:3, 3] for i in idx])
        points = rotate_t(rot, world - trans)
        extras = spring.get("extras")
        ours = extras.get(EXTRAS_KEY, {}) if isinstance(extras, Mapping) else {}
        if not isinstance(ours, Mapping):
            ours = {}
        points = _exact_rest(points, ours.get("restPoints"))
        settings = [_settings(joints[j], f"{at}.joints[{j}]") for j in range(len(joints) - 1)]
        members: list[Collider] = []
        for g in _list(spring.get("colliderGroups", []), f"{at}.colliderGroups"):
            gi = _index(g, len(groups_json), f"{at}.colliderGroups entry")
            group = groups_json[gi]
            for m in _list(group.get("colliders") if isinstance(group, Mapping) else None,
                           f"colliderGroups[{gi}].colliders"):
                members.append(colliders[_index(m, len(colliders), f"colliderGroups[{gi}]")])
        try:
            chain = SpringChain(points, settings, members,
                                collision_passes=ours.get("collisionPasses", 1),
                                settle_contacts=bool(ours.get("settleContacts", False)))
            chain.reset(parent_matrix)
        except ValueError as exc:
            raise VrmError(f"{at}: {exc}") from None
        rig.chains.append(chain)
        name = spring.get("name")
        rig.names.append(name if isinstance(name, str) else f"spring_{k}")
        rig.parent_names.append(graph.name(parent) if parent is not None else "")
        rig.parent_matrices.append(parent_matrix)
    return rig


def _exact_rest(points: F, rest: Any) -> F:
    """The exact rest points kept in extras when they describe the same pose as the nodes."""
    if rest is None:
        return points
    try:
        exact = np.array(rest, dtype=np.float64)
    except (TypeError, ValueError):
        return points
    if exact.shape == points.shape and np.all(np.isfinite(exact)) and \
            float(np.abs(exact - points).max()) <= _REST_POINTS_TOL:
        return exact
    return points


def _settings(joint: Mapping[str, Any], at: str) -> SpringSettings:
    values: dict[str, Any] = {}
    for ours, theirs in SPRING_VRM_NAMES.items():
        value = joint.get(theirs, SCHEMA_JOINT_DEFAULTS[theirs])
        values[ours] = tuple(value) if isinstance(value, list) else value
    try:
        return SpringSettings(**values)
    except SettingsError as exc:
        raise VrmError(f"{at}: {exc}") from None


def _collider(obj: Any, graph: _Graph, at: str) -> Collider:
    if not isinstance(obj, Mapping):
        raise VrmError(f"{at} must be an object")
    node = _index(obj.get("node"), len(graph), f"{at}.node")
    m = graph.world(node)
    if np.abs(m[:3, :3].T @ m[:3, :3] - np.eye(3)).max() > 1e-6:
        raise VrmError(f"{at}: its node {graph.name(node)!r} is scaled; scaled colliders are not "
                       f"supported")
    shape = obj.get("shape")
    if not isinstance(shape, Mapping) or len([k for k in ("sphere", "capsule") if k in shape]) != 1:
        raise VrmError(f"{at}.shape must have exactly one of 'sphere' and 'capsule'")

    def place(v: Any, what: str) -> F:
        try:
            vec = np.array(v, dtype=np.float64)
        except (TypeError, ValueError):
            vec = np.empty(0)
        if vec.shape != (3,) or not np.all(np.isfinite(vec)):
            raise VrmError(f"{at}.{what} must be three numbers, got {v!r}")
        return rotate(m[:3, :3], vec) + m[:3, 3]

    try:
        if "sphere" in shape:
            s = shape["sphere"]
            return Sphere(place(s.get("offset", [0.0, 0.0, 0.0]), "sphere.offset"),
                          s.get("radius", 0.0))
        c = shape["capsule"]
        return Capsule(place(c.get("offset", [0.0, 0.0, 0.0]), "capsule.offset"),
                       place(c.get("tail", [0.0, 0.0, 0.0]), "capsule.tail"),
                       c.get("radius", 0.0))
    except (ValueError, AttributeError) as exc:
        raise VrmError(f"{at}: {exc}") from None


class _Graph:
    """Parent links and rest world matrices of glTF-style nodes."""

    def __init__(self, nodes: Any, where: str) -> None:
        self.nodes = _list(nodes, f"{where}: nodes")
        self.where = where
        self._parent: dict[int, int] = {}
        for i, node in enumerate(self.nodes):
            if not isinstance(node, Mapping):
                raise VrmError(f"{where}: nodes[{i}] must be an object")
            for c in _list(node.get("children") or [], f"nodes[{i}].children"):
                child = _index(c, len(self.nodes), f"nodes[{i}].children")
                if child in self._parent:
                    raise VrmError(f"{where}: node {child} has two parents")
                self._parent[child] = i
        self._world: dict[int, F] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def parent(self, i: int) -> int | None:
        return self._parent.get(i)

    def name(self, i: int | None) -> str:
        if i is None:
            return ""
        name = self.nodes[i].get("name")
        return name if isinstance(name, str) and name else f"node_{i}"

    def world(self, i: int) -> F:
        """Rest world matrix of node ``i`` (product of the local matrices from the root)."""
        if i in self._world:
            return self._world[i]
        path = [i]
        while (p := self._parent.get(path[-1])) is not None and p not in self._world:
            if len(path) > len(self.nodes):
                raise VrmError(f"{self.where}: the node hierarchy has a cycle through node {i}")
            path.append(p)
        base = self._world[p] if p is not None else np.eye(4)
        for j in reversed(path):
            base = matmul(base, self._local(j))
            self._world[j] = base
        return base

    def _local(self, i: int) -> F:
        node = self.nodes[i]
        at = f"{self.where}: nodes[{i}]"
        if node.get("matrix") is not None:
            m = _floats(node["matrix"], 16, f"{at}.matrix")
            return m.reshape(4, 4).T  # glTF matrices are column-major
        out = np.eye(4)
        if node.get("scale") is not None:
            out[:3, :3] = np.diag(_floats(node["scale"], 3, f"{at}.scale"))
        if node.get("rotation") is not None:
            x, y, z, w = _floats(node["rotation"], 4, f"{at}.rotation")
            norm = math.sqrt(x * x + y * y + z * z + w * w)
            if norm == 0.0:
                raise VrmError(f"{at}.rotation is a zero quaternion")
            out[:3, :3] = matmul(quaternion_matrix(np.array([w, x, y, z]) / norm), out[:3, :3])
        if node.get("translation") is not None:
            out[:3, 3] = _floats(node["translation"], 3, f"{at}.translation")
        return out


def _floats(value: Any, count: int, at: str) -> F:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = np.empty(0)
    if arr.shape != (count,) or not np.all(np.isfinite(arr)):
        raise VrmError(f"{at} must be {count} finite numbers, got {value!r}")
    return arr


def _list(value: Any, at: str) -> list[Any]:
    if not isinstance(value, list):
        raise VrmError(f"{at} must be an array, got {value!r}")
    return value


def _index(value: Any, count: int, at: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise VrmError(f"{at} must be an index in [0, {count}), got {value!r}")
    return value


def _require_pygltflib():  # type: ignore[no-untyped-def]
    try:
        import pygltflib
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("glTF files need pygltflib: pip install 'pbdcloth[vrm]'") from exc
    return pygltflib
