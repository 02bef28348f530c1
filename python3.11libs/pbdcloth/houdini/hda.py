"""Text of the expanded asset library ``hda/pbdcloth.hda``, generated from the declarations.

An expanded library is a folder Houdini loads as is (the form ``hotl -t`` writes):

* ``Sections.list``: first line ``""``, then ``FILE<TAB>SECTION`` per entry;
* ``INDEX__SECTION``: one block per operator (``Operator:``, ``Label:``, ``Path:``, ...);
* ``houdini.hdalibrary``: empty;
* one folder per operator, named by :func:`escape_section_name` of ``ns::Sop/name::version``,
  holding its sections (``DialogScript``, ``PythonCook``, ``Help``, ``Tools.shelf``, ...).

The operators are Python SOPs: their cook code is the ``PythonCook`` section, two lines that call
into :mod:`pbdcloth.houdini.sops`. Everything here is deterministic (no dates, no dict order from
outside), so regenerating gives identical bytes and a test can catch drift.
"""

from __future__ import annotations

import math
import os
import unicodedata
from pathlib import Path
from typing import Iterable

from ..settings import (
    KIND_BOOL,
    KIND_CHOICE,
    KIND_FLOAT,
    KIND_INT,
    KIND_STRING,
    KIND_VEC3,
    Setting,
)
from .operators import OPERATORS, TAB_SUBMENU, Operator, Parameter

LIBRARY_NAME = "pbdcloth.hda"
#: Fixed modification stamp: the text must not change between identical regenerations.
MODIFIED = "Mon Jan  1 00:00:00 2024"
OPERATOR_SECTIONS = ("DialogScript", "PythonCook", "TypePropertiesOptions", "Help",
                     "Tools.shelf", "FunctionName", "CreateScript")
ICON_SECTION = "IconSVG"
"""An operator's own icon; ``INDEX__SECTION`` points at it as ``opdef:/TABLE/NAME?IconSVG``
(as SideFX Labs' public assets do)."""

_DIALOG_TYPES = {
    KIND_FLOAT: "float",
    KIND_INT: "integer",
    KIND_BOOL: "toggle",
    KIND_VEC3: "vector",
    KIND_CHOICE: "string",
    KIND_STRING: "string",
}


def library_path() -> Path:
    """Where ``hda/pbdcloth.hda`` is: under ``$PBDCLOTH_ROOT`` (set by the Houdini package),
    else beside the ``python3.11libs`` folder this module was imported from."""
    root = os.environ.get("PBDCLOTH_ROOT")
    base = Path(root) if root else Path(__file__).resolve().parents[3]
    return base / "hda" / LIBRARY_NAME


def install_library(path: str | os.PathLike[str] | None = None) -> Path:
    """Install the asset library in this Houdini session unless its operators are known already
    (a farm's hython without the package loaded). The user's ``OPlibraries`` file is left
    alone. Returns the library's path.

    Raises:
        FileNotFoundError: no library there.
        RuntimeError: an operator is still unknown after installing.
    """
    import hou

    library = Path(path) if path is not None else library_path()
    missing = [op for op in OPERATORS
               if hou.nodeType(hou.sopNodeTypeCategory(), op.type_name) is None]
    if not missing:
        return library
    if not library.exists():
        raise FileNotFoundError(f"no pbdcloth asset library at {library} (set PBDCLOTH_ROOT "
                                "to the pbdcloth folder or load its Houdini package)")
    hou.hda.installFile(str(library), change_oplibraries_file=False)
    for op in missing:
        if hou.nodeType(hou.sopNodeTypeCategory(), op.type_name) is None:
            raise RuntimeError(f"operator {op.type_name} not found after installing {library}")
    return library


def escape_section_name(name: str) -> str:
    """Folder name Houdini uses for a section: ``_`` -> ``__``, ``/`` -> ``_1``, ``:`` -> ``_8``.

    ``pbdcloth::Sop/cloth_solver::1.0`` -> ``pbdcloth_8_8Sop_1cloth__solver_8_81.0``.
    """
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:-")
    bad = sorted(set(name) - allowed)
    if bad:
        raise ValueError(f"section name {name!r} has characters {bad} with no known escaping")
    return name.replace("_", "__").replace("/", "_1").replace(":", "_8")


def ascii_text(text: str) -> str:
    """``text`` folded to ASCII (``Müller`` -> ``Muller``): asset sections stay plain ASCII."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def quote(text: str) -> str:
    """A DialogScript string literal: ASCII, double quotes, with backslash escapes."""
    escaped = (ascii_text(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\t", "\\t"))
    return f'"{escaped}"'


def _number(value: float) -> str:
    text = f"{value:.10g}"
    return text


def _default_values(decl: Setting) -> list[str]:
    if decl.kind == KIND_VEC3:
        return [_number(float(c)) for c in decl.default]
    if decl.kind == KIND_BOOL:
        return ["1" if decl.default else "0"]
    if decl.kind in (KIND_FLOAT, KIND_INT):
        return [_number(float(decl.default))]
    return [str(decl.default)]


def _soft_max(default: float) -> float:
    magnitude = abs(default)
    return 10.0 if magnitude <= 10.0 else float(10 ** math.ceil(math.log10(magnitude)))


def _range(decl: Setting) -> str:
    """``range { lo hi }``; declared bounds are strict (``!``), open sides get a UI range."""
    default = float(decl.default[1] if decl.kind == KIND_VEC3 else decl.default)
    if decl.minimum is not None:
        lo = _number(decl.minimum) + "!"
    else:
        lo = _number(-_soft_max(default)) if default < 0 or decl.kind == KIND_VEC3 else "0"
    if decl.maximum is not None:
        hi = _number(decl.maximum) + "!"
    else:
        hi = _number(_soft_max(default))
    return f"range   {{ {lo} {hi} }}"


def _help_line(decl: Setting) -> str:
    facts = []
    if decl.unit:
        facts.append(f"Unit: {decl.unit}.")
    return " ".join([decl.help] + facts)


def callback_script(p: Parameter) -> str:
    """The Python a button runs: the named function of :mod:`pbdcloth.houdini.sops`."""
    return (f"__import__('pbdcloth.houdini.sops', fromlist=['sops']).{p.callback}"
            "(kwargs['node'])")


def dialog_type(p: Parameter) -> str:
    """The parameter's DialogScript type."""
    return p.dialog_type or _DIALOG_TYPES[p.decl.kind]


def _parm_block(p: Parameter, indent: str) -> list[str]:
    d = p.decl
    lines = [f"{indent}parm {{", f"{indent}    name    {quote(d.name)}",
             f"{indent}    label   {quote(d.label)}",
             f"{indent}    type    {dialog_type(p)}"]
    if p.dialog_type == "button":
        lines += [f"{indent}    default {{ \"0\" }}",
                  f"{indent}    help    {quote(_help_line(d))}",
                  f"{indent}    parmtag {{ {quote('script_callback')} "
                  f"{quote(callback_script(p))} }}",
                  f"{indent}    parmtag {{ {quote('script_callback_language')} "
                  f"{quote('python')} }}",
                  f"{indent}}}"]
        return lines
    if p.invisible:
        lines.append(f"{indent}    invisible")
    if d.kind == KIND_VEC3:
        lines.append(f"{indent}    size    3")
    if p.default_expression:
        lines.append(f"{indent}    default {{ [ {quote(p.default_expression)} hscript-expr ] }}")
    else:
        values = " ".join(quote(v) for v in _default_values(d))
        lines.append(f"{indent}    default {{ {values} }}")
    if d.kind == KIND_CHOICE:
        lines.append(f"{indent}    menu {{")
        for token, label in d.choices:
            lines.append(f"{indent}        {quote(token)} {quote(label)}")
        lines.append(f"{indent}    }}")
    if p.point_group_input is not None:
        script = (f"kwargs['node'].generateInputGroupMenu({p.point_group_input}, "
                  "hou.geometryType.Points)")
        lines += [f"{indent}    menutoggle {{", f"{indent}        [ {quote(script)} ]",
                  f"{indent}        language python", f"{indent}    }}"]
    if p.disable_when:
        lines.append(f"{indent}    disablewhen {quote(p.disable_when)}")
    if d.kind in (KIND_FLOAT, KIND_INT, KIND_VEC3):
        lines.append(f"{indent}    {_range(d)}")
    lines.append(f"{indent}    help    {quote(_help_line(d))}")
    if p.callback:
        lines += [f"{indent}    parmtag {{ {quote('script_callback')} "
                  f"{quote(callback_script(p))} }}",
                  f"{indent}    parmtag {{ {quote('script_callback_language')} "
                  f"{quote('python')} }}"]
    if p.point_group_input is not None:
        action = ("import soputils\nkwargs['geometrytype'] = hou.geometryType.Points\n"
                  f"kwargs['inputindex'] = {p.point_group_input}\nsoputils.selectGroupParm(kwargs)")
        lines += [
            f"{indent}    parmtag {{ {quote('script_action')} {quote(action)} }}",
            f"{indent}    parmtag {{ {quote('script_action_help')} "
            f"{quote('Select geometry from an available viewport.')} }}",
            f"{indent}    parmtag {{ {quote('script_action_icon')} {quote('BUTTONS_reselect')} }}",
            f"{indent}    parmtag {{ {quote('sop_input')} {quote(str(p.point_group_input))} }}",
        ]
    lines.append(f"{indent}}}")
    return lines


def folder_name(group: str) -> str:
    """Parameter name of a folder: ``fd_`` and the group label in snake case."""
    slug = "".join(c if c.isalnum() else "_" for c in group.lower()).strip("_")
    return "fd_" + "_".join(part for part in slug.split("_") if part)


def folders(op: Operator) -> list[tuple[str, list[Parameter]]]:
    """The operator's parameters grouped by folder, in order of first appearance."""
    grouped: dict[str, list[Parameter]] = {}
    for p in op.parameters:
        grouped.setdefault(p.decl.group, []).append(p)
    return list(grouped.items())


def dialog_script(op: Operator) -> str:
    """The ``DialogScript`` section: inputs, output, and every parameter in folders."""
    lines = [
        f"# Dialog script for {op.type_name} automatically generated",
        "",
        "{",
        f"    name\t{op.type_name}",
        f"    script\t{op.type_name}",
        f"    label\t{quote(op.label)}",
        "",
        "    help {",
        "\t\"\"",
        "    }",
        "",
    ]
    for k, label in enumerate(op.inputs, start=1):
        lines.append(f"    inputlabel\t{k}\t{quote(label)}")
    lines.append(f"    outputlabel\t1\t{quote(op.output)}")
    lines.append("")
    groups = folders(op)
    for group, params in groups:
        if len(groups) == 1:
            for p in params:
                lines += _parm_block(p, "    ")
            continue
        lines += ["    group {", f"        name    {quote(folder_name(group))}",
                  f"        label   {quote(group)}", ""]
        for p in params:
            lines += _parm_block(p, "        ")
        lines += ["    }", ""]
    lines += ["}", ""]
    return "\n".join(lines)


def python_cook(op: Operator) -> str:
    """The two-line ``PythonCook`` section: import the package, call the operator's function."""
    return f"from pbdcloth.houdini import sops\nsops.{op.cook}(hou.pwd())\n"


def help_card(op: Operator) -> str:
    """The ``Help`` section in Houdini's wiki markup, one entry per parameter."""
    lines = [f"= {op.label} =", "", "#type: node", "#context: sop",
             f"#internal: {op.type_name}", "", f'"""{op.help.split(": ")[0].split(". ")[0]}."""',
             "", op.help, ""]
    for title, text in op.help_sections:
        lines += [f"== {title} ==", "", text, ""]
    lines += ["@inputs", ""]
    for k, label in enumerate(op.inputs):
        lines += [f"{label}:", f"    {'Required' if k < op.min_inputs else 'Optional'} input.", ""]
    lines += ["@parameters", ""]
    for group, params in folders(op):
        lines += [f"== {group} ==", ""]
        for p in params:
            if p.invisible:
                continue
            lines += [f"{p.decl.label}:", f"    #id: {p.name}", f"    {_help_line(p.decl)}", ""]
    return ascii_text("\n".join(lines))


def tools_shelf(op: Operator) -> str:
    """The ``Tools.shelf`` section: the TAB-menu entry under the PBD submenu."""
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<shelfDocument>",
        "  <!-- This file contains definitions of shelves, toolbars, and tools.",
        " It should not be hand-edited when it is being used by the application.",
        " Note, that two definitions of the same element are not allowed in",
        " a single file. -->",
        "",
        '  <tool name="$HDA_DEFAULT_TOOL" label="$HDA_LABEL" icon="$HDA_ICON">',
        '    <toolMenuContext name="viewer">',
        "      <contextNetType>SOP</contextNetType>",
        "    </toolMenuContext>",
        '    <toolMenuContext name="network">',
        "      <contextOpType>$HDA_TABLE_AND_NAME</contextOpType>",
        "    </toolMenuContext>",
        f"    <toolSubmenu>{TAB_SUBMENU}</toolSubmenu>",
        '    <script scriptType="python"><![CDATA[import soptoolutils',
        "",
        "soptoolutils.genericTool(kwargs, '$HDA_NAME')]]></script>",
        "  </tool>",
        "</shelfDocument>",
        "",
    ])


def create_script(op: Operator) -> str:
    """The ``CreateScript`` section Houdini writes for every asset."""
    return "\n".join([
        "# Automatically generated script",
        "\\set noalias = 1",
        "#",
        f"#  Creation script for {op.type_name} operator",
        "#",
        "",
        'if ( "$arg1" == "" ) then',
        "    echo This script is intended as a creation script",
        "    exit",
        "endif",
        "",
        f"# Node $arg1 ({op.table_name})",
        "opexprlanguage -s hscript $arg1",
        "opuserdata -n '___Version___' -v '' $arg1",
        "",
    ])


TYPE_PROPERTIES_OPTIONS = "".join(f"{k} := {v};\n" for k, v in (
    ("CheckExternal", 1), ("ContentsCompressionType", 1), ("ForbidOutsideParms", 1),
    ("GzipContents", 1), ("LockContents", 1), ("MakeDefault", 1), ("ParmsFromVfl", 0),
    ("PrefixDroppedParmLabel", 0), ("PrefixDroppedParmName", 0), ("SaveCachedCode", 0),
    ("SaveIcon", 1), ("SaveSpareParms", 0), ("UnlockOnCreate", 0), ("UseDSParms", 1),
))


def sections_list(entries: Iterable[tuple[str, str]]) -> str:
    """A ``Sections.list``: ``""`` then ``FILE<TAB>SECTION`` per entry."""
    return '""\n' + "".join(f"{file}\t{section}\n" for file, section in entries)


def index_section(operators: Iterable[Operator]) -> str:
    """``INDEX__SECTION``: one block per operator, each ending with a blank line."""
    out: list[str] = []
    for op in operators:
        fields = (
            ("Operator", op.type_name),
            ("Label", op.label),
            ("Path", f"oplib:/{op.table_name}?{op.table_name}"),
            ("Icon", op.icon),
            ("Table", "Sop"),
            ("License", ""),
            ("Extra", ""),
            ("User", ""),
            ("Inputs", f"{op.min_inputs} to {len(op.inputs)}"),
            ("Subnet", "false"),
            ("Python", "true"),
            ("Empty", "false"),
            ("Modified", MODIFIED),
        )
        out.extend(f"{key + ':':<14}{value}\n" for key, value in fields)
        out.append("\n")
    return "".join(out)


def operator_sections(op: Operator) -> tuple[str, ...]:
    """The section files of one operator, in ``Sections.list`` order."""
    return OPERATOR_SECTIONS + ((ICON_SECTION,) if op.icon_svg else ())


def operator_files(op: Operator) -> dict[str, str]:
    """The sections of one operator, by file name."""
    icon = {ICON_SECTION: op.icon_svg} if op.icon_svg else {}
    return icon | {
        "DialogScript": dialog_script(op),
        "PythonCook": python_cook(op),
        "TypePropertiesOptions": TYPE_PROPERTIES_OPTIONS,
        "Help": help_card(op),
        "Tools.shelf": tools_shelf(op),
        "FunctionName": op.name,
        "CreateScript": create_script(op),
    }


def library_files(operators: Iterable[Operator] = OPERATORS) -> dict[str, str]:
    """Every file of the expanded library, by path relative to ``pbdcloth.hda/``."""
    ops = list(operators)
    files: dict[str, str] = {
        "Sections.list": sections_list(
            [("INDEX__SECTION", "INDEX_SECTION"), ("houdini.hdalibrary", "houdini.hdalibrary")]
            + [(escape_section_name(op.table_name), op.table_name) for op in ops]
        ),
        "INDEX__SECTION": index_section(ops),
        "houdini.hdalibrary": "",
    }
    for op in ops:
        folder = escape_section_name(op.table_name)
        sections = operator_files(op)
        names = operator_sections(op)
        files[f"{folder}/Sections.list"] = sections_list((s, s) for s in names)
        for name in names:
            files[f"{folder}/{name}"] = sections[name]
    return files


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _default_md(decl: Setting, p: Parameter) -> str:
    if p.default_expression:
        return f"`{p.default_expression}`"
    if p.dialog_type == "button":
        return "(button)"
    values = _default_values(decl)
    if decl.kind == KIND_VEC3:
        return "`(" + ", ".join(values) + ")`"
    if decl.kind == KIND_BOOL:
        return "`on`" if decl.default else "`off`"
    return f"`{values[0]}`" if values[0] != "" else '`""`'


def parameters_markdown(operators: Iterable[Operator] = OPERATORS) -> str:
    """The parameter reference of every operator (``docs/parameters.md``)."""
    out: list[str] = [
        "# Houdini asset parameters",
        "",
        "Generated by `scripts/build_hda.py` from the settings declaration "
        "(`pbdcloth/settings.py`) and the operator declarations "
        "(`pbdcloth/houdini/operators.py`); do not edit by hand. The cloth solver's settings "
        "are the same as the command line's options (`--stretch-stiffness` for "
        "`stretch_stiffness`).",
        "",
    ]
    for op in operators:
        out += [f"## {op.label} (`{op.type_name}`)", "", op.help, ""]
        out.append("Inputs: " + "; ".join(
            f"{k}: {label}{'' if k < op.min_inputs else ' (optional)'}"
            for k, label in enumerate(op.inputs)) + ".")
        out.append("")
        for group, params in folders(op):
            shown = [p for p in params if not p.invisible]
            if not shown:
                continue
            out += [f"### {group}", "",
                    "| parameter | label | default | range | unit | what it does |",
                    "|---|---|---|---|---|---|"]
            for p in shown:
                d = p.decl
                out.append(
                    f"| `{d.name}` | {_md(d.label)} | {_default_md(d, p)} | "
                    f"{_md(d.range_text()) or '-'} | {_md(d.unit) or '-'} | {_md(d.help)} |")
            out.append("")
    return "\n".join(out)
