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

from ..cloth.attributes import POINT_ATTRIBUTES
from ..presets import PRESETS
from ..settings import (
    CLOTH_SETTINGS,
    GROUP_MATERIAL,
    KIND_BOOL,
    KIND_CHOICE,
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
        dialog_type: the dialog's type when not the kind's own (``button``, ``file``).
        callback: for a button, the Python function of :mod:`pbdcloth.houdini.sops` it calls
            with the node.
    """

    decl: Setting
    point_group_input: int | None = None
    invisible: bool = False
    default_expression: str = ""
    disable_when: str = ""
    dialog_type: str = ""
    callback: str = ""

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
        icon_svg: the operator's icon (an SVG document, the ``IconSVG`` section).
        help_sections: extra help-card sections, (title, text).
    """

    name: str
    label: str
    cook: str
    inputs: tuple[str, ...]
    min_inputs: int
    output: str
    parameters: tuple[Parameter, ...]
    help: str
    icon_svg: str = ""
    help_sections: tuple[tuple[str, str], ...] = ()

    @property
    def icon(self) -> str:
        """The icon Houdini shows: the asset's own ``IconSVG`` section."""
        return f"opdef:/{self.table_name}?IconSVG" if self.icon_svg else "SOP_python"

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
    choices: tuple[tuple[str, str], ...] = (),
) -> Setting:
    return Setting(name=name, kind=kind, default=default, minimum=minimum, maximum=maximum,
                   unit=unit, label=label, group=group, help=help, choices=choices)


GROUP_SIMULATION = "Simulation"
GROUP_COLLIDER_INPUT = "Collider input"

START_FRAME = Parameter(_node_setting(
    "start_frame", KIND_INT, 1, "Start Frame", GROUP_SIMULATION,
    "Frame at which the simulation starts from the input's rest state. Cooking an earlier "
    "frame shows the rest state; changing it starts the simulation over.",
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
STITCH_GROUP = Parameter(_node_setting(
    "stitch_group", KIND_STRING, "", "Stitch Group", "Preprocess",
    "Primitive group of two-point open polylines on input 0, each sewing its two points "
    "together (a weld: rest length 0), as Vellum's stitch and weld constraints take them. "
    "A float primitive attribute breaklength on the polylines [m] lets a stitch break once "
    "its points are farther apart than that (0 or absent: never). "
    "Empty = every two-point open polyline of input 0.",
))
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

CUSTOM_FABRIC = "custom"
FABRIC_PRESET = Parameter(_node_setting(
    "fabric_preset", KIND_CHOICE, CUSTOM_FABRIC, "Fabric Preset", GROUP_MATERIAL,
    "Choosing a fabric sets Model to XPBD and Density, the three compliances and Friction to "
    "that fabric's values in SI units (pbdcloth.presets, from KES-F measurements); edit them "
    "afterwards as you like. Custom leaves the values as they are.",
    choices=((CUSTOM_FABRIC, "Custom"),) + tuple((p.name, p.label) for p in PRESETS.values()),
), callback="apply_fabric_preset")
COLLIDER_METHOD = Parameter(Setting(
    name="collider_method", kind=KIND_STRING, default="sdf", minimum=None, maximum=None,
    unit="", label="Polygon Colliders", group=GROUP_COLLIDER_INPUT,
    help="How closed polygons of input 1 collide. VDB from Polygons: a signed distance field "
    "made at the start frame, and made again at every frame once their points move (blended "
    "across the substeps; discrete contacts, friction against the level set's normal motion "
    "only). Triangles: the polygons themselves, their points read at every simulated frame, "
    "continuous contacts and friction that carries the cloth along the surface (deforming "
    "characters; the polygons must stay the same, a change is a node error naming the "
    "frame).",
    choices=(("sdf", "VDB from Polygons (again when they move)"),
             ("triangles", "Triangles (deforming, every frame)")),
))

GROUP_CACHE = "Cache"

CACHE_SIMULATION = Parameter(_node_setting(
    "cache_simulation", KIND_BOOL, True, "Cache Simulation", GROUP_CACHE,
    "Keep every simulated frame in memory, so scrubbing back or a downstream node asking for "
    "an earlier frame is a lookup and playing forward resumes from the latest cached frame. "
    "Off: only the current state is kept and going back simulates again from the start frame.",
))
CACHE_MEMORY = Parameter(_node_setting(
    "cache_memory", KIND_FLOAT, 5000.0, "Cache Memory (MB)", GROUP_CACHE,
    "Most memory the cached frames use; past it the frames cached first are dropped first "
    "(they are simulated again when needed).", unit="MB", minimum=0.0, maximum=1e6,
), disable_when="{ cache_simulation == 0 }")
RESET_SIMULATION = Parameter(_node_setting(
    "reset_simulation", KIND_STRING, "", "Reset Simulation", GROUP_CACHE,
    "Forget the cached frames and simulate again from the start frame (changing a parameter's "
    "keys, expression or value, or the cloth's topology, rest shape or pins, does this too).",
), dialog_type="button", callback="reset_simulation")
CACHE_PATH = Parameter(_node_setting(
    "cache_path", KIND_STRING, "$HIP/cache/$OS.$F4.bgeo.sc", "Cache Path", GROUP_CACHE,
    "Where Save to Disk writes the frames; the extension picks the format (.bgeo.sc).",
), dialog_type="file")
SAVE_TO_DISK = Parameter(_node_setting(
    "save_to_disk", KIND_STRING, "", "Save to Disk", GROUP_CACHE,
    "Write the cached frames (from the first to the last cached frame) to the cache path.",
), dialog_type="button", callback="save_to_disk")
CACHE_PARAMETERS = (CACHE_SIMULATION, CACHE_MEMORY, RESET_SIMULATION, CACHE_PATH, SAVE_TO_DISK)
"""The simulation cache of a simulating node (not part of what the simulation is)."""

UI_ONLY = frozenset(p.name for p in (RESET_SIMULATION, CACHE_PATH, SAVE_TO_DISK,
                                      FABRIC_PRESET))
"""Parameters a cook never reads (buttons, the path they write to, the preset menu)."""

def _attributes_help() -> tuple[str, str]:
    """The help-card section listing the per-point attributes the solver reads from input 0,
    from their declaration (:data:`pbdcloth.cloth.attributes.POINT_ATTRIBUTES`)."""
    lines = [f"* {a.houdini} ({a.range_text()}, default {a.default:g}): {a.meaning}."
             for a in POINT_ATTRIBUTES]
    return ("Point Attributes and Stitches",
            "Float point attributes on input 0 vary the cloth point by point (any of them may "
            "be left out):\n\n" + "\n".join(lines) + "\n\nA constraint takes the mean of its "
            "points' scales. Points with pinweight 1 are pinned like the Pin Group's; between "
            "0 and 1 they follow their pin targets (input 2, one point per cloth point) "
            "loosely. thickness_scale and friction_scale act against the colliders only "
            "(Thickness x scale, Friction and Static Friction x scale); self-collision keeps "
            "Self Thickness and Self Friction. Vellum's point attributes thickness (a length) "
            "and friction are not read: divide a Vellum thickness by the Thickness parameter "
            "for thickness_scale. Stitches come from the Preprocess node's Stitch Group "
            "(two-point polylines, written as the detail arrays stitch_pairs and stitch_rest, "
            "and stitch_break from the polylines' breaklength primitive attribute: a stitch "
            "breaks past that length). With Tear Strain above 0 the cloth tears, and every "
            "copy of a split point keeps its point's attributes.")


ATTRIBUTES_HELP = _attributes_help()

CACHING_HELP = (
    "Caching",
    "Every simulated frame is kept in memory on the node, up to Cache Memory (MB); past it the "
    "frames cached first are dropped first. Scrubbing back, a sub-frame, or a downstream node "
    "asking for an earlier frame (Trail, Time Shift, motion blur) shows the cached frame. "
    "Playing forward resumes from the latest cached frame at or before the current one, and "
    "jumping ahead simulates every frame in between, each with the parameter values and input "
    "geometry of that frame. A long catch-up shows progress in the status bar; Esc stops it at "
    "a frame boundary, keeps the frames done and warns on the node. The cache starts over when "
    "a parameter's definition changes (a keyframe, an expression, or a static value), when the "
    "cloth's topology, rest shape or pins change, when the animated inputs read differently at "
    "a cached frame, and with Reset Simulation; animation merely playing keeps it. The cache "
    "lives in memory only: it is not saved with the .hip file. Save to Disk writes the cached "
    "frames as .bgeo.sc files (in hython: pbdcloth.houdini.sops.save_to_disk(node, pattern, "
    "(first, last))).",
)


def _icon(body: str) -> str:
    """A 64 x 64 SVG icon document around ``body``."""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" '
            'viewBox="0 0 64 64">\n' + body + "</svg>\n")


PREPROCESS_ICON = _icon(
    '  <rect x="6" y="6" width="52" height="52" rx="4" fill="#2d5f8a"/>\n'
    '  <path d="M14 14 H50 V50 H14 Z M14 26 H50 M14 38 H50 M26 14 V50 M38 14 V50 M14 14 L50 50"'
    ' fill="none" stroke="#e8f1f8" stroke-width="2.5"/>\n'
    '  <circle cx="14" cy="14" r="4" fill="#ffb000"/>\n'
    '  <circle cx="50" cy="14" r="4" fill="#ffb000"/>\n')
SOLVER_ICON = _icon(
    '  <rect x="6" y="6" width="52" height="52" rx="4" fill="#2d5f8a"/>\n'
    '  <path d="M12 14 Q32 20 52 14 L50 40 Q40 54 32 44 Q24 54 14 40 Z" fill="#7fb8e6"'
    ' stroke="#e8f1f8" stroke-width="2.5"/>\n'
    '  <circle cx="12" cy="14" r="4" fill="#ffb000"/>\n'
    '  <circle cx="52" cy="14" r="4" fill="#ffb000"/>\n')
SPRING_ICON = _icon(
    '  <rect x="6" y="6" width="52" height="52" rx="4" fill="#2d5f8a"/>\n'
    '  <path d="M32 10 L28 24 L36 36 L30 48 L34 56" fill="none" stroke="#e8f1f8"'
    ' stroke-width="3"/>\n'
    '  <circle cx="32" cy="10" r="4" fill="#ffb000"/>\n'
    '  <circle cx="28" cy="24" r="3.5" fill="#7fb8e6"/>\n'
    '  <circle cx="36" cy="36" r="3.5" fill="#7fb8e6"/>\n'
    '  <circle cx="30" cy="48" r="3.5" fill="#7fb8e6"/>\n')

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


def _cloth_parameters(settings: tuple[Setting, ...] = CLOTH_SETTINGS) -> tuple[Parameter, ...]:
    return tuple(Parameter(d, disable_when=_cloth_disable_when(d)) for d in settings)


PREPROCESS = Operator(
    name="cloth_preprocess",
    label="PBD Cloth Preprocess",
    cook="cook_preprocess",
    inputs=("Cloth Mesh",),
    min_inputs=1,
    output="Preprocessed Cloth",
    parameters=(PIN_GROUP, STITCH_GROUP),
    help=(
        "Prepares a polygon mesh for the PBD Cloth Solver: computes the topology (edges, bend "
        "hinges, shear pairs, triangles) and rest data and writes them as detail array "
        "attributes (stretch_edge_v0, stretch_edge_v1, rest_lengths, bend_shared_edge_v0, "
        "bend_shared_edge_v1, bend_non_shared_edge_v0, bend_non_shared_edge_v1, rest_angles, "
        "shear_lengths, triangles, stretch_colors, bend_colors), and the point attributes v "
        "(velocity, zero, a vector) and pbd_w (the pin flag: 0 on pinned points, 1 elsewhere; "
        "an input's own w, such as a 3-float angular velocity, is left alone). Two-point "
        "polylines of the Stitch Group become stitches (the detail arrays stitch_pairs, point "
        "number pairs, stitch_rest, rest lengths, and, when the polylines have a float "
        "primitive attribute breaklength, stitch_break: the length [m] past which each "
        "breaks, 0 for never)."
    ),
    icon_svg=PREPROCESS_ICON,
)

def _with_preset_menu(parameters: tuple[Parameter, ...]) -> tuple[Parameter, ...]:
    """``parameters`` with the fabric preset menu first in the Material folder."""
    at = next((k for k, p in enumerate(parameters) if p.decl.group == GROUP_MATERIAL),
              len(parameters))
    return parameters[:at] + (FABRIC_PRESET,) + parameters[at:]


def solver_operator(settings: tuple[Setting, ...] = CLOTH_SETTINGS) -> Operator:
    """The PBD Cloth Solver with a parameter for each of ``settings`` (the declaration of
    :mod:`pbdcloth.settings`), the node-only parameters and the cache's."""
    return Operator(
        name="cloth_solver",
        label="PBD Cloth Solver",
        cook="cook_solver",
        inputs=("Preprocessed Cloth", "Collider (VDB SDF or Polygons)", "Pin Targets"),
        min_inputs=1,
        output="Simulated Cloth",
        parameters=(START_FRAME, CURRENT_FRAME_PARM)
        + _with_preset_menu(_cloth_parameters(settings))
        + (COLLIDER_METHOD, COLLIDER_VOXEL_SIZE, COLLIDER_BAND_VOXELS) + CACHE_PARAMETERS,
        help=(
            "Simulates the preprocessed cloth of input 0 with position based dynamics (PBD or "
            "XPBD), from the start frame to the current frame. Input 1 (optional) holds colliders, "
            "read at every simulated frame: VDB signed distance fields (an animated VDB moves its "
            "collider rigidly, frame by frame; a VDB whose voxels change is read again every "
            "frame), or closed polygons, converted with VDB from Polygons at the start frame and "
            "again at every frame once they move or, with Polygon Colliders = Triangles, "
            "collided with as triangles whose points are read every frame. Input 2 (optional) animates the pinned points: its "
            "points with the same numbers as the pins give their targets, read at every "
            "simulated frame. Animated "
            "parameters are sampled at each simulated frame. Every simulated frame is cached on "
            "the node (see Caching). With Tear Strain above 0 the cloth tears: from the first "
            "tear on, the output has the torn cloth's own points (the split ones appended after "
            "the input's, with their input points' float attributes) and triangles, so the "
            "point count changes from frame to frame."
        ),
        icon_svg=SOLVER_ICON,
        help_sections=(ATTRIBUTES_HELP, CACHING_HELP),
    )


SOLVER = solver_operator()

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
    *CACHE_PARAMETERS,
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
        "with the chain points moved. Both inputs are read at every simulated frame, animated "
        "parameters are sampled at each frame, and every frame is cached on the node like the "
        "cloth solver's (see Caching)."
    ),
    icon_svg=SPRING_ICON,
    help_sections=(CACHING_HELP,),
)

OPERATORS: tuple[Operator, ...] = (PREPROCESS, SOLVER, SPRING_CHAINS)
"""Every operator of ``hda/pbdcloth.hda``, in library order."""


def simulation_parameters(op: Operator) -> list[Setting]:
    """The parameters whose definitions make up a simulation (not the current frame, the preset
    menu (the values it sets are), the cache and its buttons)."""
    skip = {CURRENT_FRAME, FABRIC_PRESET.name} | {p.name for p in CACHE_PARAMETERS}
    return [p.decl for p in op.parameters if p.name not in skip]


def operator(name: str) -> Operator:
    """An operator by short name (``cloth_solver``) or full type name."""
    for op in OPERATORS:
        if name in (op.name, op.type_name):
            return op
    raise KeyError(name)
