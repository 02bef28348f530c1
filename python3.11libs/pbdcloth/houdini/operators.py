"""The Houdini operators pbdcloth ships, declared as data (no ``hou`` needed).

Each :class:`Operator` names its type, inputs, the cook function in :mod:`pbdcloth.houdini.sops`
and its parameters. The cloth solver's parameters are the settings declaration
:data:`pbdcloth.settings.CLOTH_SETTINGS` plus a few node-only parameters (start frame, pin
group, collider conversion) declared here with the same :class:`~pbdcloth.settings.Setting`
record. ``scripts/build_hda.py`` renders the expanded asset library and the parameter
reference from these declarations, and the cook code reads exactly these parameters, so the
asset, the docs and the code cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import (
    CLOTH_SETTINGS,
    KIND_BOOL,
    KIND_FLOAT,
    KIND_INT,
    KIND_STRING,
    SPRING_SETTINGS,
    Setting,
    SettingKind,
)

NAMESPACE = "pbdcloth"
VERSION = "1.0"
TAB_SUBMENU = "PBD"

#: Hidden parameter whose default is the expression ``$FF``: evaluating it gives the cook the
#: current frame and makes the node time dependent, so it recooks when the frame changes.
CURRENT_FRAME = "current_frame"


@dataclass(frozen=True)
class Parameter:
    """One node parameter: a declared setting plus how the node's dialog shows it.

    Attributes:
        decl: name, kind, default, range, unit, label, group (folder) and help.
        point_group_input: for a point-group field, the input whose groups its menu lists
            (standard group menu and viewport selector); ``None`` otherwise.
        invisible: hidden from the user (still evaluated by the cook).
        default_expression: an HScript expression used as the default instead of a value.
        disable_when: a Houdini conditional such as ``{ model != pbd }``.
    """

    decl: Setting
    point_group_input: int | None = None
    invisible: bool = False
    default_expression: str = ""
    disable_when: str = ""

    @property
    def name(self) -> str:
        return self.decl.name


@dataclass(frozen=True)
class Operator:
    """A Python SOP of the asset library.

    Attributes:
        name: operator name without namespace or version (``cloth_solver``).
        label: TAB-menu label.
        cook: name of the function in :mod:`pbdcloth.houdini.sops` its cook section calls.
        inputs: label of each input; the first ``min_inputs`` are required.
        min_inputs: number of required inputs.
        output: label of the single output.
        parameters: the parameters, in dialog order (folders follow ``decl.group``).
        help: one paragraph for the node's help card.
        icon: Houdini icon name.
    """

    name: str
    label: str
    cook: str
    inputs: tuple[str, ...]
    min_inputs: int
    output: str
    parameters: tuple[Parameter, ...]
    help: str
    icon: str = "SOP_python"

    @property
    def type_name(self) -> str:
        """Full operator type name, ``pbdcloth::cloth_solver::1.0``."""
        return f"{NAMESPACE}::{self.name}::{VERSION}"

    @property
    def table_name(self) -> str:
        """Type name with the network table, as the library's section names use it."""
        return f"{NAMESPACE}::Sop/{self.name}::{VERSION}"

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(f"operator {self.type_name} has no parameter {name!r}")


def _node_setting(
    name: str, kind: SettingKind, default: object, label: str, group: str, help: str, *,
    unit: str = "", minimum: float | None = None, maximum: float | None = None,
) -> Setting:
    return Setting(name=name, kind=kind, default=default, minimum=minimum, maximum=maximum,
                   unit=unit, label=label, group=group, help=help)


GROUP_SIMULATION = "Simulation"
GROUP_COLLIDER_INPUT = "Collider input"

START_FRAME = Parameter(_node_setting(
    "start_frame", KIND_INT, 1, "Start Frame", GROUP_SIMULATION,
    "Frame at which the simulation starts from the input's rest state. Cooking an earlier "
    "frame shows the rest state; scrubbing backwards restarts from here.",
))
CURRENT_FRAME_PARM = Parameter(
    _node_setting(CURRENT_FRAME, KIND_FLOAT, 1.0, "Current Frame", GROUP_SIMULATION,
                  "The frame being cooked ($FF); hidden, it makes the node time dependent."),
    invisible=True, default_expression="$FF",
)
PIN_GROUP = Parameter(
    _node_setting(
        "pin_group", KIND_STRING, "", "Pin Group", "Preprocess",
        "Points held in place (inverse mass w = 0); a group name or pattern of input 0. "
        "Empty = no pins. The solver moves them to the pin targets of its third input.",
    ),
    point_group_input=0,
)
COLLIDER_VOXEL_SIZE = Parameter(_node_setting(
    "collider_voxel_size", KIND_FLOAT, 0.02, "Collider Voxel Size", GROUP_COLLIDER_INPUT,
    "Voxel size of the signed distance field made from polygon colliders (VDB from Polygons). "
    "A VDB collider keeps its own voxels.", unit="m", minimum=1e-5, maximum=10.0,
))
COLLIDER_BAND_VOXELS = Parameter(_node_setting(
    "collider_band_voxels", KIND_INT, 3, "Collider Band Voxels", GROUP_COLLIDER_INPUT,
    "Half width, in voxels, of the narrow band made around polygon colliders; cloth farther "
    "than this from the surface sees no collider.", minimum=1, maximum=64,
))

# Conditional UI of the cloth settings: constraint parameters of the other model are disabled.
_EXTRA_DISABLE_WHEN = {
    "device": "{ backend == numpy }",
    "tether_slack": "{ tethers == 0 }",
}


def _cloth_disable_when(decl: Setting) -> str:
    if decl.help.startswith("PBD only"):
        return "{ model != pbd }"
    if decl.help.startswith("XPBD only"):
        return "{ model != xpbd }"
    return _EXTRA_DISABLE_WHEN.get(decl.name, "")


def _cloth_parameters() -> tuple[Parameter, ...]:
    return tuple(Parameter(d, disable_when=_cloth_disable_when(d)) for d in CLOTH_SETTINGS)


PREPROCESS = Operator(
    name="cloth_preprocess",
    label="PBD Cloth Preprocess",
    cook="cook_preprocess",
    inputs=("Cloth Mesh",),
    min_inputs=1,
    output="Preprocessed Cloth",
    parameters=(PIN_GROUP,),
    help=(
        "Prepares a polygon mesh for the PBD Cloth Solver: computes the topology (edges, bend "
        "hinges, shear pairs, triangles) and rest data and writes them as detail array "
        "attributes (stretch_edge_v0, stretch_edge_v1, rest_lengths, bend_shared_edge_v0, "
        "bend_shared_edge_v1, bend_non_shared_edge_v0, bend_non_shared_edge_v1, rest_angles, "
        "shear_lengths, triangles, stretch_colors, bend_colors), and the point attributes v "
        "(velocity, zero) and w (0 on pinned points, 1 elsewhere)."
    ),
)

SOLVER = Operator(
    name="cloth_solver",
    label="PBD Cloth Solver",
    cook="cook_solver",
    inputs=("Preprocessed Cloth", "Collider (VDB SDF or Polygons)", "Pin Targets"),
    min_inputs=1,
    output="Simulated Cloth",
    parameters=(START_FRAME, CURRENT_FRAME_PARM) + _cloth_parameters()
    + (COLLIDER_VOXEL_SIZE, COLLIDER_BAND_VOXELS),
    help=(
        "Simulates the preprocessed cloth of input 0 with position based dynamics (PBD or "
        "XPBD), from the start frame to the current frame. Input 1 (optional) holds colliders: "
        "VDB signed distance fields (an animated VDB moves its collider rigidly, frame by "
        "frame), or closed polygons, converted once at the start frame. Input 2 "
        "(optional) animates the pinned points: its points with the same numbers as the pins "
        "give their targets. The state is kept on the node between cooks; changing an input "
        "or a parameter, or going back in time, restarts from the start frame."
    ),
)

SPRING_PARAMETERS: tuple[Parameter, ...] = (
    START_FRAME,
    CURRENT_FRAME_PARM,
    *(Parameter(d) for d in SPRING_SETTINGS),
    Parameter(_node_setting(
        "collision_passes", KIND_INT, 4, "Collision Passes", "Collisions",
        "Times the collision push-out and bone-length restore are repeated per joint; 1 is "
        "exactly the VRM algorithm.", minimum=1, maximum=64,
    )),
    Parameter(_node_setting(
        "settle_contacts", KIND_BOOL, False, "Settle Contacts", "Collisions",
        "After the passes, turn any tail still inside a collider about its head until it "
        "touches the surface (not part of VRM; off reproduces VRM runtimes).",
    )),
    Parameter(_node_setting(
        "collider_radius_scale", KIND_FLOAT, 1.0, "Collider Radius Scale", "Collisions",
        "Factor on the pscale of the collider points of input 1 (each point is a sphere).",
        minimum=0.0, maximum=1e3,
    )),
)
"""Spring chain SOP: the joint settings declaration (SPRING_SETTINGS) plus node-only ones."""

SPRING_CHAINS = Operator(
    name="spring_chains",
    label="PBD Spring Chains",
    cook="cook_spring_chains",
    inputs=("Chains (polylines)", "Collider Spheres (points with pscale)"),
    min_inputs=1,
    output="Swung Chains",
    parameters=SPRING_PARAMETERS,
    help=(
        "Swings each polyline of input 0 as a VRM spring-bone chain: the first point of each "
        "polyline follows the animated input (its motion and the rotation of its first "
        "segment drive the chain's parent), the other points swing under stiffness, gravity "
        "and drag. Points of input 1 are sphere colliders of radius pscale. Outputs the input "
        "with the chain points moved; state is kept between cooks like the cloth solver."
    ),
)

OPERATORS: tuple[Operator, ...] = (PREPROCESS, SOLVER, SPRING_CHAINS)
"""Every operator of ``hda/pbdcloth.hda``, in library order."""


def operator(name: str) -> Operator:
    """An operator by short name (``cloth_solver``) or full type name."""
    for op in OPERATORS:
        if name in (op.name, op.type_name):
            return op
    raise KeyError(name)
