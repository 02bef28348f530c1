"""Fabric presets in physical units: areal density, stretch / shear / bend compliance, friction.

Each :class:`FabricPreset` is a set of :class:`~pbdcloth.settings.ClothSettings` values for the
XPBD model (compliances in SI units), derived from published measurements of real fabrics:

* areal density: the fabric's weight per area (g/m^2, "gsm"; denim is sold by oz/yd^2,
  1 oz/yd^2 = 33.9 g/m^2).
* Kawabata Evaluation System (KES-F) values (Kawabata 1980, "The Standardization and Analysis of
  Hand Evaluation", 2nd ed., Textile Machinery Society of Japan; ranges of typical fabrics in
  Kawabata and Niwa 1989, "Fabric performance in clothing and clothing manufacture",
  J. Textile Institute 80(1)): EMT, the tensile strain at 500 gf/cm (4.903 N/cm); G, the shear
  stiffness [gf/(cm deg)]; B, the bending rigidity [gf cm^2/cm]; MIU, the surface friction
  coefficient.

Conversion to this solver's per-constraint compliances, for a mesh of roughly uniform, near
equilateral or right triangles (the constants are mesh independent to first order):

* stretch: tensile stiffness per width Y = 490.3 N/m / EMT; an edge of a triangulated sheet
  carries a strip about as wide as it is long, so its spring constant is about Y and
  ``stretch_compliance = 1 / Y`` [m/N].
* shear: in-plane shear stiffness per width G_w = G x 56.19 N/m per radian; a wing-to-wing pair
  spans a cell diagonal d = s sqrt(2), which a shear angle gamma lengthens by d gamma / 2, so
  equal energy 0.5 G_w gamma^2 s^2 = 0.5 k (d gamma / 2)^2 gives k = 2 G_w and
  ``shear_compliance = 1 / (2 G_w)``.
* bend: bending rigidity B_SI = B x 9.807e-5 N m; a hinge of edge length e whose triangles'
  centroids are d apart bends the sheet with curvature theta / d over an area e d, energy
  0.5 B_SI e theta^2 / d, so its stiffness is B_SI e / d (about 1.5 B_SI on a regular grid) and
  ``bend_compliance = 1 / (1.5 B_SI)`` [1/(N m)].
* friction: MIU (fabric against the KES probe) as the kinetic coefficient against colliders.

The values are representative of each class within the cited ranges, not a measurement of one
particular cloth. Under its own weight every woven preset strains well under 1e-3, so how far a
simulated preset stretches is decided by the solve (substeps, tethers), not by its compliance.

Usage::

    settings = ClothSettings(**preset("denim").settings())       # or
    settings = apply_preset(ClothSettings(substeps=20), "denim")
    pbdcloth demo drape --preset denim                          # command line
    [settings]  preset = "denim"                                 # scene files
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .settings import ClothSettings, SettingsError

#: 500 gf/cm in N/m: the load at which KES-F measures the tensile strain EMT.
KES_TENSILE_LOAD = 490.3
#: 1 gf/(cm deg) in N/m per radian.
KES_SHEAR_UNIT = 0.980665 * 180.0 / 3.141592653589793
#: 1 gf cm^2/cm in N m.
KES_BEND_UNIT = 9.80665e-5
#: Hinge stiffness over bending rigidity, e / d, on a regular grid.
HINGE_FACTOR = 1.5


@dataclass(frozen=True)
class FabricPreset:
    """One fabric: its measured properties and where they come from.

    Attributes:
        name: the preset's key (``"denim"``).
        label: a human label.
        gsm: areal density [g/m^2].
        emt: KES tensile strain at 500 gf/cm [1].
        shear_g: KES shear stiffness G [gf/(cm deg)].
        bend_b: KES bending rigidity B [gf cm^2/cm].
        miu: KES surface friction coefficient [1].
        source: where the numbers come from.
    """

    name: str
    label: str
    gsm: float
    emt: float
    shear_g: float
    bend_b: float
    miu: float
    source: str

    @property
    def density(self) -> float:
        """Areal density [kg/m^2]."""
        return self.gsm * 1e-3

    @property
    def stretch_compliance(self) -> float:
        """1 / Y, Y = 490.3 N/m / EMT [m/N]."""
        return self.emt / KES_TENSILE_LOAD

    @property
    def shear_compliance(self) -> float:
        """1 / (2 G_w), G_w = G x 56.19 N/m [m/N]."""
        return 1.0 / (2.0 * self.shear_g * KES_SHEAR_UNIT)

    @property
    def bend_compliance(self) -> float:
        """1 / (1.5 B_SI), B_SI = B x 9.807e-5 N m [1/(N m)]."""
        return 1.0 / (HINGE_FACTOR * self.bend_b * KES_BEND_UNIT)

    def settings(self) -> dict[str, Any]:
        """The ClothSettings values of this fabric (XPBD, SI units)."""
        return {
            "model": "xpbd",
            "density": self.density,
            "stretch_compliance": self.stretch_compliance,
            "shear_compliance": self.shear_compliance,
            "bend_compliance": self.bend_compliance,
            "friction": self.miu,
        }


_KES = ("KES-F ranges of Kawabata and Niwa 1989 (J. Text. Inst. 80(1)); "
        "Kawabata 1980, The Standardization and Analysis of Hand Evaluation")

PRESETS: dict[str, FabricPreset] = {p.name: p for p in (
    FabricPreset("silk", "Silk (crepe de chine)", gsm=65.0, emt=0.06, shear_g=0.3, bend_b=0.015,
                 miu=0.15, source=f"65 g/m^2 (14 momme crepe de chine); {_KES}"),
    FabricPreset("cotton_shirting", "Cotton shirting (poplin)", gsm=120.0, emt=0.03,
                 shear_g=0.8, bend_b=0.08, miu=0.2,
                 source=f"120 g/m^2 poplin; {_KES}"),
    FabricPreset("denim", "Denim (13 oz)", gsm=440.0, emt=0.025, shear_g=2.5, bend_b=1.2,
                 miu=0.25, source=f"13 oz/yd^2 = 441 g/m^2 denim; {_KES}"),
    FabricPreset("wool_coating", "Wool coating (melton)", gsm=500.0, emt=0.05, shear_g=1.5,
                 bend_b=0.6, miu=0.25, source=f"500 g/m^2 melton coating; {_KES}"),
    FabricPreset("leather", "Garment leather (1 mm)", gsm=900.0, emt=0.04, shear_g=6.0,
                 bend_b=3.0, miu=0.35,
                 source=("1 mm garment leather at a density of about 0.9 g/cm^3 (weight); the "
                         "KES values are an estimate, stiffer than denim in shear and bending "
                         "and less extensible than knits: no KES-F data set for leather was "
                         "at hand")),
    FabricPreset("jersey", "Cotton single jersey (knit)", gsm=160.0, emt=0.25, shear_g=0.4,
                 bend_b=0.03, miu=0.2, source=f"160 g/m^2 single jersey; knits: {_KES}"),
)}
"""The built-in fabric presets by name."""


def preset(name: str) -> FabricPreset:
    """The preset called ``name``, or a :class:`SettingsError` listing the valid names."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise SettingsError(
            f"unknown fabric preset {name!r}; valid presets: {', '.join(PRESETS)}") from None


def apply_preset(settings: ClothSettings, name: str) -> ClothSettings:
    """``settings`` with the fabric values of preset ``name``."""
    return settings.replace(**preset(name).settings())
