"""Every user-facing cloth setting, declared once.

Each field of :class:`ClothSettings` carries its declaration (default, range, unit, label, group,
help) in its dataclass metadata. The command line, the HDA's parameters and the parameter reference
in the docs are all generated from :data:`CLOTH_SETTINGS`, so adding a field here is the only step
needed to expose a new setting everywhere.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Iterable, Iterator, Sequence, TypeVar

Vec3 = tuple[float, float, float]

class Choice(str, Enum):
    """A closed choice: an enum whose members are their text (``Model.XPBD == "xpbd"``).

    Members print, format and serialise (JSON, TOML, Houdini menus) as their value, so code
    compares against members while files and command lines keep the plain words.
    """

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class SettingKind(Choice):
    """What kind of value a declared setting holds."""

    FLOAT = "float"
    INT = "int"
    BOOL = "bool"
    VEC3 = "vec3"
    CHOICE = "choice"
    STRING = "string"


class Model(Choice):
    """The constraint solver: Müller 2006 PBD (stiffness) or Macklin 2016 XPBD (compliance)."""

    PBD = "pbd"
    XPBD = "xpbd"


class BackendChoice(Choice):
    """Which backend steps the cloth."""

    NUMPY = "numpy"
    WARP = "warp"
    AUTO = "auto"


KIND_FLOAT = SettingKind.FLOAT
KIND_INT = SettingKind.INT
KIND_BOOL = SettingKind.BOOL
KIND_VEC3 = SettingKind.VEC3
KIND_CHOICE = SettingKind.CHOICE
KIND_STRING = SettingKind.STRING


class SettingsError(ValueError):
    """A setting has a value outside its declared range or of the wrong kind."""


SELF_COLLISION_LIMIT_PASSES = 2
"""The most strain-limit sweeps of an iteration while self collision is on (ClothSettings.
effective_strain_limit_passes; a contact round's sweeps are not capped:
ClothSettings.round_strain_limit_passes)."""


@dataclass(frozen=True)
class Setting:
    """Declaration of one user-facing setting.

    Attributes:
        name: Python keyword and parameter name (``snake_case``).
        kind: one of ``float``, ``int``, ``bool``, ``vec3``, ``choice``, ``string``.
        default: default value.
        minimum, maximum: inclusive range (``None`` = unbounded). For ``vec3`` the bound applies
            to each component.
        unit: SI unit as text (empty if dimensionless).
        label: short human label, as shown in Houdini.
        group: folder the parameter belongs to.
        help: one or two sentences: what it does and how it is used.
        choices: allowed values of a ``choice`` setting, with their labels.
    """

    name: str
    kind: SettingKind
    default: Any
    minimum: float | None
    maximum: float | None
    unit: str
    label: str
    group: str
    help: str
    choices: tuple[tuple[str, str], ...] = ()
    enum: type[Choice] | None = None
    """For a ``choice`` setting: the :class:`Choice` enum its values are converted to."""

    def range_text(self) -> str:
        """Human-readable range, e.g. ``[0, 1]`` or ``>= 0``."""
        if self.kind == KIND_CHOICE:
            return " | ".join(value for value, _ in self.choices)
        if self.kind in (KIND_BOOL, KIND_STRING):
            return ""
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            return f"[{_fmt(lo)}, {_fmt(hi)}]"
        if lo is not None:
            return f">= {_fmt(lo)}"
        if hi is not None:
            return f"<= {_fmt(hi)}"
        return "any"

    def validate(self, value: Any) -> Any:
        """Return ``value`` normalised to the setting's kind, or raise :class:`SettingsError`.

        Numbers may be any real number type (``int``, ``float``, numpy scalars); ``bool``,
        complex numbers and text are refused where a number is meant, whole numbers and true or
        false are told apart from each other, and a value too large for a float (``10**400``)
        is out of range like any other.
        """
        where = f"setting '{self.name}'"
        if self.kind == KIND_BOOL:
            if _is_bool(value):
                return bool(value)
            raise SettingsError(f"{where} must be true or false, got {_shown(value)}")
        if self.kind == KIND_STRING:
            if not isinstance(value, str):
                raise SettingsError(f"{where} must be text, got {_shown(value)}")
            return value
        if self.kind == KIND_CHOICE:
            allowed = [v for v, _ in self.choices]
            if not isinstance(value, str) or value not in allowed:
                raise SettingsError(f"{where} must be one of {allowed}, got {_shown(value)}")
            return self.enum(value) if self.enum is not None else str(value)
        if self.kind == KIND_VEC3:
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise SettingsError(f"{where} must be three numbers, got {_shown(value)}")
            items = list(value)
            if len(items) != 3:
                raise SettingsError(f"{where} must be three numbers, got {len(items)}: "
                                    f"{_shown(value)}")
            vec = tuple(self._real(c, value) for c in items)
            for c in vec:
                self._check_number(c)
            return vec
        number: float = self._real(value, value)
        if self.kind == KIND_INT:
            self._check_number(int(value) if isinstance(value, numbers.Integral) else number)
            if number != math.floor(number):
                raise SettingsError(f"{where} must be a whole number, got {_shown(value)}")
            return int(value) if isinstance(value, numbers.Integral) else int(number)
        self._check_number(number)
        return number

    def _real(self, value: Any, whole: Any) -> float:
        """A real number as a float (inf beyond float's range), or SettingsError."""
        if _is_bool(value) or not isinstance(value, numbers.Real):
            raise SettingsError(f"setting '{self.name}' must be "
                                f"{'three numbers' if self.kind == KIND_VEC3 else 'a number'}, "
                                f"got {_shown(whole)}")
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf  # type: ignore[operator]

    def _check_number(self, number: float) -> None:
        where = f"setting '{self.name}'"
        if isinstance(number, int):  # whole numbers of any size: only the range applies
            if (self.minimum is not None and number < self.minimum) or (
                    self.maximum is not None and number > self.maximum):
                unit = f" {self.unit}" if self.unit else ""
                shown = repr(number) if abs(number) < 10**20 else f"a {len(str(number))}-digit number"
                raise SettingsError(f"{where} = {shown}{unit} is out of range "
                                    f"{self.range_text()}: {self.help}")
            return
        if math.isnan(number) or (not math.isfinite(number) and self.minimum is None
                                  and self.maximum is None):
            rng = self.range_text()
            within = f" (range {rng})" if rng not in ("", "any") else ""
            raise SettingsError(f"{where} must be finite, got {number!r}{within}")
        if not math.isfinite(number) or (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            unit = f" {self.unit}" if self.unit else ""
            shown = "a value beyond float range" if abs(number) == math.inf else repr(number)
            raise SettingsError(
                f"{where} = {shown}{unit} is out of range {self.range_text()}: {self.help}"
            )


def _is_bool(value: Any) -> bool:
    """True for ``True``/``False`` and numpy booleans (not for 0 and 1)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _plain(value: Any) -> Any:
    """A setting's value as plain data: vectors as lists, choices as their text."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Choice):
        return value.value
    return value


def _fmt(x: float) -> str:
    return f"{x:g}"


def _declare(
    default: Any,
    *,
    kind: SettingKind,
    label: str,
    group: str,
    help: str,
    unit: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    choices: Sequence[tuple[str, str]] = (),
    enum: type[Choice] | None = None,
) -> Any:
    """A dataclass field whose metadata holds the declaration of one setting."""
    meta = {
        "kind": kind,
        "label": label,
        "group": group,
        "help": help,
        "unit": unit,
        "minimum": minimum,
        "maximum": maximum,
        "choices": tuple(choices),
        "enum": enum,
    }
    return field(default=default, metadata=meta)


_SettingsT = TypeVar("_SettingsT", bound="DeclaredSettings")
_DECLARATIONS: dict[type, tuple[Setting, ...]] = {}


class DeclaredSettings:
    """Validation and conversions shared by the settings dataclasses whose fields are declared
    with ``_declare``: every field is checked against its declaration on construction."""

    _what: ClassVar[str] = "setting"

    @classmethod
    def declarations(cls) -> tuple[Setting, ...]:
        """The declaration of every field, in display order."""
        if cls not in _DECLARATIONS:
            _DECLARATIONS[cls] = _declarations(cls)
        return _DECLARATIONS[cls]

    def __post_init__(self) -> None:
        for decl in self.declarations():
            object.__setattr__(self, decl.name, decl.validate(getattr(self, decl.name)))

    def replace(self: _SettingsT, **changes: Any) -> _SettingsT:
        """A copy with some settings changed (validated)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        """Plain ``{name: value}`` of every setting (vectors as lists), JSON-safe."""
        return {d.name: _plain(getattr(self, d.name)) for d in self.declarations()}

    @classmethod
    def from_dict(cls: type[_SettingsT], values: dict[str, Any]) -> _SettingsT:
        """Build from a mapping, refusing unknown names (typos) with the list of valid ones."""
        names = [d.name for d in cls.declarations()]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise SettingsError(f"unknown {cls._what}(s) {unknown}; valid names: {names}")
        return cls(**values)


GROUP_SOLVER = "Solver"
GROUP_MATERIAL = "Material"
GROUP_FORCES = "Forces"
GROUP_PINS = "Pins and tethers"
GROUP_COLLISIONS = "Collisions"
GROUP_SELF = "Self collision"

@dataclass(frozen=True)
class ClothSettings(DeclaredSettings):
    """Settings of a cloth simulation; every field is range-checked on construction.

    Build one with keywords (``ClothSettings(substeps=20, model="xpbd")``) and derive variants with
    :meth:`replace`. Out-of-range or ill-typed values raise :class:`SettingsError` naming the
    setting, its value and its range.
    """

    # --- Solver -------------------------------------------------------------------------------
    model: str = _declare(  # a Model (a str) after validation
        Model.PBD, kind=KIND_CHOICE, label="Model", group=GROUP_SOLVER, enum=Model,
        choices=(("pbd", "PBD (stiffness 0..1)"), ("xpbd", "XPBD (compliance, SI units)")),
        help="pbd: Müller 2006 position based dynamics with stiffness in [0, 1]; "
        "xpbd: Macklin 2016 extended PBD with compliance in SI units. A single constraint "
        "settles at its exact static extension for any substep count; coupled constraints "
        "(a whole cloth) converge to their equilibrium as h^2 (h = substep), so sag and "
        "stretch still fall with more substeps (README: measured convergence table).",
    )
    substeps: int = _declare(
        10, kind=KIND_INT, label="Substeps", group=GROUP_SOLVER, minimum=1, maximum=1000,
        help="Substeps per frame. More substeps stiffen the cloth and make collisions safer; "
        "cost grows linearly.",
    )
    iterations: int = _declare(
        1, kind=KIND_INT, label="Constraint Iterations", group=GROUP_SOLVER, minimum=1,
        maximum=1000,
        help="Gauss-Seidel passes over all constraints per substep. With XPBD one pass per "
        "substep ('small steps') is usually best.",
    )
    hierarchy: bool = _declare(
        True, kind=KIND_BOOL, label="Hierarchical Solve", group=GROUP_SOLVER,
        help="Hierarchical position based dynamics (Müller 2008): before the constraints of "
        "each substep, coarser copies of the mesh (every few particles, joined by their "
        "rest-shape distances, which resist stretch only) are projected coarsest first and "
        "their corrections interpolated down, so a pin's pull reaches the far side of a fine "
        "mesh in one substep instead of one edge per pass. Makes a finely meshed cloth far "
        "less stretchy for about a third more time per substep; off gives the plain solve. "
        "Skipped while self collision is on (it would move particles after the self-collision "
        "broad phase).",
    )
    hierarchy_slack: float = _declare(
        1.0, kind=KIND_FLOAT, label="Hierarchy Slack", group=GROUP_SOLVER, minimum=1.0,
        maximum=10.0,
        help="Factor on the coarse levels' rest distances: 1 allows no stretch at the coarse "
        "scales, 1.05 allows 5 % (for stretchy fabrics whose compliance should show; raise "
        "the Strain Limit with it, which caps every edge).",
    )
    hierarchy_sweeps: int = _declare(
        8, kind=KIND_INT, label="Hierarchy Sweeps", group=GROUP_SOLVER, minimum=1, maximum=32,
        help="The most Gauss-Seidel sweeps over each coarse level of the Hierarchical Solve "
        "per pass. A level is swept again while some of its constraints was more than half "
        "the Strain Limit (0.5 % without one) past its slack when its turn came, at most as "
        "often as its constraints fit into the cloth's stretch constraints (a level with a "
        "third of them: 3) and at most this many, so each level costs at most one pass over "
        "the mesh edges. A pass that holds particles near a collider sweeps each level once, "
        "as does every pass with a triangle-mesh collider. 1 is Müller's single sweep. Long, "
        "thin cloth (straps, ribbons) needs several: a 5000 x 2 strip hanging as a catenary "
        "reaches 5.8 % strain at 1 and stays within the 1 % Strain Limit at every frame at 8 "
        "(README: Which knob buys what).",
    )
    strain_limit: float = _declare(
        0.01, kind=KIND_FLOAT, label="Strain Limit", group=GROUP_SOLVER, minimum=0.0,
        maximum=10.0,
        help="Largest stretch of a mesh edge, as a fraction of its rest length (Provot 1995): "
        "after the cloth's constraints in every iteration, each edge longer than (1 + limit) "
        "times its rest length is shortened to 1e-4 below it, both ends moving by their "
        "inverse masses, sweep after sweep until a sweep finds no edge past the limit (at "
        "most Strain Limit Passes); the stitches run after each sweep, so a seam shares the "
        "stretch of a garment pulled taut (the sewing scene: 2 % against 14.9 % with the "
        "stitches after the sweeps). Before tethers and colliders (which can still stretch "
        "edges past it). A 100 x 100 sheet hanging from two corners: 6.4 % without, "
        "1.000 % with it. 0 = off (stretchy knits, rubber: let the compliance decide). Off "
        "while tearing is on (it would stop the cloth reaching the Tear Strain).",
    )
    strain_limit_passes: int = _declare(
        16, kind=KIND_INT, label="Strain Limit Passes", group=GROUP_SOLVER, minimum=1,
        maximum=100,
        help="The most sweeps of the strain limit per iteration; the sweeps stop as soon as "
        "one finds every edge within the limit (a 100 x 100 sheet hanging from two corners: "
        "5.4 sweeps on average, 12 at most), and after the first only the edges next to "
        "those moved are visited. Below that count the limit is not reached: where colliders "
        "or pins keep stretching the cloth every sweep may find work (README: measured "
        "strain and cost). At most 2 in an iteration while Self Collision is on (more would "
        "move particles past the self-collision broad phase's reach; a contact round's sweeps "
        "are not capped).",
    )
    contact_rounds: int = _declare(
        1, kind=KIND_INT, label="Contact Rounds", group=GROUP_SOLVER, minimum=0, maximum=8,
        help="Rounds after the colliders of every iteration, each a hierarchical pass (the "
        "particles in contact held where the colliders put them), then the strain limit, "
        "stitches, tethers and colliders again. An obstacle that stops a falling cloth moves "
        "its particles after the strain limit; the round pulls the rest of the cloth after "
        "them from afar instead of leaving the edges at the contact stretched (the prop "
        "scene: 13.0 % without, 6.2 % with one round, at about 1.8 times the frame time). "
        "Runs with the Hierarchical Solve and the Strain Limit on and colliders present "
        "(touching or not; analytic shapes and level sets, not a triangle-mesh collider), "
        "also with Self Collision on (the fold scene on Warp: 13.9 % without, 3.6 % with one "
        "round, 2.3 % with two; the round's strain limit then runs all its Strain Limit "
        "Passes); 0 = off.",
    )
    contact_sliding: bool = _declare(
        False, kind=KIND_BOOL, label="Contact Sliding", group=GROUP_SOLVER,
        help="In the strain limit's sweeps, a particle that a collider touched earlier in the "
        "substep keeps none of its move into the obstacle (the component along -n, the "
        "contact's normal), only the slide along it, so the collider does not push the edge's "
        "ends apart again after the sweeps (Warp, 48 frames: the prop scene 6.2 % -> 2.5 %, "
        "the cloak 9.4 % -> 4.8 %). Contacts whose surface moves a Thickness or more along its "
        "normal per substep do not slide (a fast collider could carry them around its rim). "
        "Off by default: the sewing scene's seams stretch more with it (2.2 % -> 3.1 %).",
    )
    backend: str = _declare(  # a BackendChoice (a str) after validation
        BackendChoice.AUTO, kind=KIND_CHOICE, label="Backend", group=GROUP_SOLVER,
        enum=BackendChoice,
        choices=(("numpy", "NumPy"), ("warp", "NVIDIA Warp"), ("auto", "Fastest available")),
        help="numpy: the reference, runs everywhere; warp: Warp kernels on the CPU or a CUDA "
        "GPU; auto: warp when importable, else numpy.",
    )
    device: str = _declare(
        "", kind=KIND_STRING, label="Device", group=GROUP_SOLVER,
        help="Warp device ('cpu', 'cuda', 'cuda:1'); empty = CUDA when present, else the CPU. "
        "Ignored by the numpy backend.",
    )

    # --- Material -----------------------------------------------------------------------------
    density: float = _declare(
        0.15, kind=KIND_FLOAT, label="Density", group=GROUP_MATERIAL, unit="kg/m^2",
        minimum=1e-6, maximum=1e3,
        help="Areal density of the fabric; each triangle's mass is split equally between its "
        "three corners. Cotton shirting is about 0.15 kg/m^2.",
    )
    stretch_stiffness: float = _declare(
        1.0, kind=KIND_FLOAT, label="Stretch Stiffness", group=GROUP_MATERIAL, minimum=0.0,
        maximum=1.0,
        help="PBD only: stiffness of the mesh edges, 0 (none) to 1 (rigid), made independent "
        "of the iteration count by k' = 1 - (1 - k)^(1/iterations).",
    )
    shear_stiffness: float = _declare(
        1.0, kind=KIND_FLOAT, label="Shear Stiffness", group=GROUP_MATERIAL, minimum=0.0,
        maximum=1.0,
        help="PBD only: stiffness of the distance between the wing vertices of each pair of "
        "adjacent triangles, 0 to 1.",
    )
    bend_stiffness: float = _declare(
        0.1, kind=KIND_FLOAT, label="Bend Stiffness", group=GROUP_MATERIAL, minimum=0.0,
        maximum=1.0,
        help="PBD only: stiffness of the dihedral angle across each interior edge, 0 (drapes "
        "freely) to 1 (keeps its rest shape).",
    )
    stretch_compliance: float = _declare(
        1e-6, kind=KIND_FLOAT, label="Stretch Compliance", group=GROUP_MATERIAL, unit="m/N",
        minimum=0.0, maximum=1e3,
        help="XPBD only: inverse stiffness of each edge as a spring, in metres per newton; "
        "0 = inextensible.",
    )
    shear_compliance: float = _declare(
        1e-5, kind=KIND_FLOAT, label="Shear Compliance", group=GROUP_MATERIAL, unit="m/N",
        minimum=0.0, maximum=1e3,
        help="XPBD only: inverse stiffness of the wing-to-wing distances, in metres per newton; "
        "0 = rigid.",
    )
    bend_compliance: float = _declare(
        10.0, kind=KIND_FLOAT, label="Bend Compliance", group=GROUP_MATERIAL, unit="1/(N m)",
        minimum=0.0, maximum=1e9,
        help="XPBD only: inverse stiffness of each hinge, in radians per newton-metre of "
        "moment (1/(N m)); 0 = keeps its rest angle rigidly.",
    )
    constraint_damping: float = _declare(
        0.0, kind=KIND_FLOAT, label="Constraint Damping", group=GROUP_MATERIAL, unit="s",
        minimum=0.0, maximum=10.0,
        help="XPBD only: Rayleigh-style damping of the constraints (Macklin 2016, eq. 26), "
        "in seconds; damps stretch and bend oscillation without slowing rigid motion. Where "
        "compliance * damping / h is large (a hinge at the default Bend Compliance: 2.4 at "
        "1e-3 s), one iteration is far from converged: a cloth landing on a plane can gain "
        "energy (README: Energy); more iterations remove that.",
    )
    damping: float = _declare(
        0.0, kind=KIND_FLOAT, label="Velocity Damping", group=GROUP_MATERIAL, unit="1/s",
        minimum=0.0, maximum=1e3,
        help="Velocity damping rate: each substep of length h scales the velocity carried over "
        "by exp(-damping * h) before gravity is added, so static sag is unbiased. 0 = none.",
    )
    tear_strain: float = _declare(
        0.0, kind=KIND_FLOAT, label="Tear Strain", group=GROUP_MATERIAL, minimum=0.0,
        maximum=100.0,
        help="Tearing: after each frame every mesh edge longer than (1 + tear_strain) times its "
        "rest length breaks, and the cloth splits where the torn edges separate the triangles "
        "around a vertex (new points appear; mass and momentum are kept). 0 = never tears; "
        "0.5 tears at 50 % stretch.",
    )
    plasticity_rate: float = _declare(
        0.0, kind=KIND_FLOAT, label="Bend Plasticity Rate", group=GROUP_MATERIAL, unit="1/s",
        minimum=0.0, maximum=1e3,
        help="Bend plasticity: after each frame of length dt, a hinge bent more than the Plastic "
        "Threshold away from its rest angle moves its rest angle toward the current angle by "
        "the excess times 1 - exp(-rate dt), so creases stay. 0 = elastic (never creeps).",
    )
    plasticity_threshold: float = _declare(
        0.2, kind=KIND_FLOAT, label="Plastic Threshold", group=GROUP_MATERIAL, unit="rad",
        minimum=0.0, maximum=3.14159,
        help="Bend plasticity: how far [rad] a hinge bends from its rest angle before its rest "
        "angle creeps (only with a Bend Plasticity Rate above 0).",
    )

    # --- Forces -------------------------------------------------------------------------------
    gravity: Vec3 = _declare(
        (0.0, -9.81, 0.0), kind=KIND_VEC3, label="Gravity", group=GROUP_FORCES, unit="m/s^2",
        help="Acceleration of gravity applied to every free particle.",
    )
    wind: Vec3 = _declare(
        (0.0, 0.0, 0.0), kind=KIND_VEC3, label="Wind", group=GROUP_FORCES, unit="m/s^2",
        help="Wind load: a particle whose surface faces the wind gets the acceleration "
        "(wind . n) n along its vertex normal n; cloth edge-on to the wind gets none.",
    )

    # --- Pins and tethers ---------------------------------------------------------------------
    tethers: bool = _declare(
        False, kind=KIND_BOOL, label="Tethers", group=GROUP_PINS,
        help="Long range attachments (Kim 2012): keep each free particle no farther from its "
        "nearest pin (geodesic over mesh edges) than its rest distance times the slack.",
    )
    tether_slack: float = _declare(
        1.0, kind=KIND_FLOAT, label="Tether Slack", group=GROUP_PINS, minimum=1.0, maximum=10.0,
        help="Factor on the tethers' rest distances: 1 allows no stretch along the tether, "
        "1.05 allows 5%.",
    )

    # --- Collisions ---------------------------------------------------------------------------
    thickness: float = _declare(
        0.01, kind=KIND_FLOAT, label="Thickness", group=GROUP_COLLISIONS, unit="m",
        minimum=0.0, maximum=10.0,
        help="Distance the cloth keeps from colliders' surfaces.",
    )
    friction: float = _declare(
        0.3, kind=KIND_FLOAT, label="Friction", group=GROUP_COLLISIONS, minimum=0.0,
        maximum=10.0,
        help="Kinetic (Coulomb) friction coefficient against colliders; 0 = frictionless.",
    )
    static_friction: float = _declare(
        0.0, kind=KIND_FLOAT, label="Static Friction", group=GROUP_COLLISIONS, minimum=0.0,
        maximum=10.0,
        help="Static friction coefficient: a contact sticks while its tangential slip is below "
        "static_friction times the penetration depth (Macklin 2014). The effective value is "
        "max(static_friction, friction).",
    )
    continuous_collision: bool = _declare(
        True, kind=KIND_BOOL, label="Continuous Collision", group=GROUP_COLLISIONS,
        help="Follow each particle's path through a substep against the motion of spheres, "
        "capsules and moving level sets, so a collider moving any distance per substep never "
        "passes through a particle: it catches it on the side it came from. Off: only the end "
        "of the substep is tested.",
    )
    restitution: float = _declare(
        0.0, kind=KIND_FLOAT, label="Restitution", group=GROUP_COLLISIONS, minimum=0.0,
        maximum=1.0,
        help="Bounciness of collisions: 0 stops the normal velocity, 1 reverses it fully.",
    )

    # --- Self collision -----------------------------------------------------------------------
    self_collision: bool = _declare(
        False, kind=KIND_BOOL, label="Self Collision", group=GROUP_SELF,
        help="Keep the cloth from passing through itself: vertex-triangle and edge-edge contacts "
        "between parts that are not mesh neighbours, found with a spatial hash each substep. "
        "Both backends run it (numpy and Warp).",
    )
    self_thickness: float = _declare(
        0.01, kind=KIND_FLOAT, label="Self Thickness", group=GROUP_SELF, unit="m",
        minimum=1e-5, maximum=1.0,
        help="Distance kept between layers of the cloth (vertex to triangle, edge to edge). Keep "
        "it below the mesh's edge length; pairs closer than pi/2 times this in the rest shape "
        "are never tested.",
    )
    self_friction: float = _declare(
        0.2, kind=KIND_FLOAT, label="Self Friction", group=GROUP_SELF, minimum=0.0,
        maximum=10.0,
        help="Coulomb friction coefficient between touching layers of the cloth (position "
        "based, Macklin 2014); 0 = layers slide freely.",
    )
    self_clamp: float = _declare(
        0.5, kind=KIND_FLOAT, label="Self Motion Clamp", group=GROUP_SELF, minimum=0.01,
        maximum=0.5,
        help="With self collision on, each substep limits every particle's speed relative to "
        "the cloth's centre-of-mass velocity to self_clamp * self_thickness / h (h = substep), "
        "keeping the cloth's linear momentum, so no two particles close in by more than a "
        "thickness per substep while the cloth as a whole falls or flies freely. Cloth that "
        "crumples fast needs more substeps.",
    )

    # Derived quantities ---------------------------------------------------------------------
    @property
    def mu_static(self) -> float:
        """Effective static friction coefficient max(static_friction, friction)."""
        return max(self.static_friction, self.friction)

    @property
    def effective_strain_limit(self) -> float:
        """The strain limit the solve applies: ``strain_limit``, or 0 (off) while tearing is on
        (``tear_strain`` > 0), since a bound below the tear strain would stop any tear."""
        return 0.0 if self.tear_strain > 0.0 else self.strain_limit

    @property
    def effective_contact_rounds(self) -> int:
        """The contact rounds the solve runs (with colliders present): ``contact_rounds``, or
        0 without the hierarchical solve or without the strain limit (tearing on, or a limit
        of 0). With self collision on the rounds run too (the hierarchical pass of the predict
        does not: it would move particles after the velocity clamp)."""
        if not self.hierarchy or self.effective_strain_limit <= 0.0:
            return 0
        return self.contact_rounds

    @property
    def effective_strain_limit_passes(self) -> int:
        """The most strain-limit sweeps the solve runs: ``strain_limit_passes``, or at most
        :data:`SELF_COLLISION_LIMIT_PASSES` while self collision is on (sweeps past a
        converged limit move particles after the self-collision broad phase, further than its
        candidate lists reach: a wrung cloth whose pins keep it stretched passed through
        itself with 16)."""
        if self.self_collision:
            return min(self.strain_limit_passes, SELF_COLLISION_LIMIT_PASSES)
        return self.strain_limit_passes

    @property
    def round_strain_limit_passes(self) -> int:
        """The most strain-limit sweeps of a contact round: ``strain_limit_passes``, also while
        self collision is on. The cap of :attr:`effective_strain_limit_passes` was measured on
        the wrung twist scene, which has no colliders and so no rounds; the fold scene, which
        lands on a sphere, reads 2.9 % (numpy) with a round of all 16 sweeps after the capped
        iteration (10.3 % with the round capped as well) and still never intersects itself
        (tests/test_selfcollision.py)."""
        return self.strain_limit_passes


def _declarations(cls: type) -> tuple[Setting, ...]:
    decls = []
    for f in dataclasses.fields(cls):
        m = f.metadata
        decls.append(
            Setting(
                name=f.name, kind=m["kind"], default=f.default, minimum=m["minimum"],
                maximum=m["maximum"], unit=m["unit"], label=m["label"], group=m["group"],
                help=m["help"], choices=m["choices"], enum=m.get("enum"),
            )
        )
    return tuple(decls)


CLOTH_SETTINGS: tuple[Setting, ...] = _declarations(ClothSettings)
"""The declaration of every cloth setting, in display order."""


def setting(name: str) -> Setting:
    """The declaration of one cloth setting by name."""
    for decl in CLOTH_SETTINGS:
        if decl.name == name:
            return decl
    raise KeyError(name)


def groups() -> Iterator[tuple[str, list[Setting]]]:
    """Settings grouped by folder, in declaration order."""
    seen: dict[str, list[Setting]] = {}
    for decl in CLOTH_SETTINGS:
        seen.setdefault(decl.group, []).append(decl)
    yield from seen.items()


# --- Spring chains (VRM spring bones) ----------------------------------------------------------
GROUP_SPRING = "Spring"


@dataclass(frozen=True)
class SpringSettings(DeclaredSettings):
    """Settings of one joint of a spring chain, with the meaning and units of VRM 1.0.

    Each field is the VRMC_springBone joint property named in :data:`SPRING_VRM_NAMES`. Per step
    of length ``dt`` the joint's tail moves by its inertia times ``1 - drag``, by
    ``stiffness * dt`` toward its rest direction and by ``gravity * dt * gravity_direction``
    (VRMC_springBone 1.0, "SpringBone Algorithm"). Out-of-range values raise
    :class:`SettingsError`.
    """

    stiffness: float = _declare(
        1.0, kind=KIND_FLOAT, label="Stiffness", group=GROUP_SPRING, unit="m/s", minimum=0.0,
        help="VRM stiffness: each step the tail moves stiffness * dt toward the bone's rest "
        "direction (turned with its parent); 0 = no return to the rest shape.",
    )
    gravity: float = _declare(
        0.5, kind=KIND_FLOAT, label="Gravity", group=GROUP_SPRING, unit="m/s", minimum=0.0,
        help="VRM gravityPower: each step the tail moves gravity * dt along the gravity "
        "direction.",
    )
    gravity_direction: Vec3 = _declare(
        (0.0, -1.0, 0.0), kind=KIND_VEC3, label="Gravity Direction", group=GROUP_SPRING,
        help="VRM gravityDir: the direction gravity pulls the tail, in world space; used as "
        "given (as VRM runtimes do), so its length scales gravity.",
    )
    drag: float = _declare(
        0.4, kind=KIND_FLOAT, label="Drag", group=GROUP_SPRING, minimum=0.0, maximum=1.0,
        help="VRM dragForce: the fraction of the tail's motion since the last step that is "
        "lost; 0 keeps all of it, 1 none.",
    )
    radius: float = _declare(
        0.02, kind=KIND_FLOAT, label="Hit Radius", group=GROUP_SPRING, unit="m", minimum=0.0,
        help="VRM hitRadius: radius of the sphere around the tail that colliders push out.",
    )

    _what = "spring setting"


SPRING_SETTINGS: tuple[Setting, ...] = _declarations(SpringSettings)
"""The declaration of every spring-chain joint setting, in display order."""

SPRING_VRM_NAMES: dict[str, str] = {
    "stiffness": "stiffness",
    "gravity": "gravityPower",
    "gravity_direction": "gravityDir",
    "drag": "dragForce",
    "radius": "hitRadius",
}
"""The VRMC_springBone 1.0 joint property of each :class:`SpringSettings` field."""
