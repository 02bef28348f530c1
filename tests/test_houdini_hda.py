"""The expanded asset library ``hda/pbdcloth.hda`` and the package file, checked without Houdini.

The library is read with an independent reader (``tests/hda_reader.py``), not the generator.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import hda_reader as reader
import pytest
from pbdcloth.houdini import hda, operators, sops
from pbdcloth.houdini.operators import OPERATORS, Operator
from pbdcloth.settings import KIND_BOOL, KIND_CHOICE, KIND_FLOAT, KIND_INT, KIND_STRING, KIND_VEC3

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "hda" / "pbdcloth.hda"
DOCS = ROOT / "docs" / "parameters.md"

DIALOG_TYPE = {KIND_FLOAT: "float", KIND_INT: "integer", KIND_BOOL: "toggle",
               KIND_VEC3: "vector", KIND_CHOICE: "string", KIND_STRING: "string"}


def _folder(op: Operator) -> Path:
    return LIB / hda.escape_section_name(op.table_name)


def _dialog(op: Operator) -> reader.Block:
    return reader.parse((_folder(op) / "DialogScript").read_text(encoding="utf-8"))


# --- no drift ----------------------------------------------------------------------------------

def _on_disk() -> dict[str, str]:
    return {p.relative_to(LIB).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(LIB.rglob("*")) if p.is_file()}


def test_committed_library_equals_a_fresh_generation() -> None:
    generated = hda.library_files()
    on_disk = _on_disk()
    assert sorted(on_disk) == sorted(generated), "files differ: run scripts/build_hda.py"
    stale = [name for name in generated if generated[name] != on_disk[name]]
    assert not stale, f"stale sections {stale}: run scripts/build_hda.py"
    assert DOCS.read_text(encoding="utf-8") == hda.parameters_markdown()


def test_drift_check_fails_on_a_changed_declaration() -> None:
    """Negative control: change one label in the declaration and the comparison must notice."""
    import dataclasses

    from pbdcloth.houdini import operators

    pin = operators.PIN_GROUP
    changed = dataclasses.replace(pin, decl=dataclasses.replace(pin.decl, label="Pinned Points"))
    edited = dataclasses.replace(operators.PREPROCESS, parameters=(changed,))
    generated = hda.library_files([edited, *OPERATORS[1:]])
    on_disk = _on_disk()
    stale = [name for name in generated if generated[name] != on_disk.get(name)]
    assert any(name.endswith("DialogScript") for name in stale)


def test_build_script_check_mode_passes() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_hda.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- library layout ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, folder", [
    ("Sop/pbd_cloth", "Sop_1pbd__cloth"),                     # ../shared/houdini/NOTES.md
    ("ns::Sop/name::1.0", "ns_8_8Sop_1name_8_81.0"),           # ../shared/houdini/NOTES.md
    # A folder of SideFX Labs' public expanded library (otls/attribute_normalize_float.1.0.hda):
    ("labs::Sop/attribute_normalize_float::1.0", "labs_8_8Sop_1attribute__normalize__float_8_81.0"),
])
def test_section_name_escaping_matches_houdini(name: str, folder: str) -> None:
    assert hda.escape_section_name(name) == folder
    assert reader.unescape_section_name(folder) == name


def test_top_sections_list_names_files_that_exist() -> None:
    entries = reader.read_sections_list(LIB / "Sections.list")
    assert entries[:2] == [("INDEX__SECTION", "INDEX_SECTION"),
                           ("houdini.hdalibrary", "houdini.hdalibrary")]
    for file, _section in entries:
        assert (LIB / file).exists(), f"Sections.list names missing {file}"
    folders = {file: section for file, section in entries[2:]}
    assert set(folders) == {p.name for p in LIB.iterdir() if p.is_dir()}
    for file, section in folders.items():
        assert reader.unescape_section_name(file) == section
    assert {s for s in folders.values()} == {op.table_name for op in OPERATORS}
    assert (LIB / "houdini.hdalibrary").read_bytes() == b""


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.name)
def test_operator_sections_list_matches_its_files(op: Operator) -> None:
    folder = _folder(op)
    entries = reader.read_sections_list(folder / "Sections.list")
    listed = [file for file, _ in entries]
    assert all(file == section for file, section in entries)
    assert sorted(listed) == sorted(p.name for p in folder.iterdir() if p.name != "Sections.list")
    assert {"DialogScript", "PythonCook", "TypePropertiesOptions", "Tools.shelf"} <= set(listed)
    assert not (folder / "Contents.gz").exists()  # a Python operator has no node contents


def test_index_section_names_each_operator() -> None:
    blocks = reader.read_index(LIB / "INDEX__SECTION")
    assert [b["Operator"] for b in blocks] == [op.type_name for op in OPERATORS]
    for block, op in zip(blocks, OPERATORS):
        assert block["Path"] == f"oplib:/{op.table_name}?{op.table_name}"
        assert block["Table"] == "Sop"
        assert (block["Subnet"], block["Python"], block["Empty"]) == ("false", "true", "false")
        lo, hi = (int(x) for x in block["Inputs"].split(" to "))
        labels = [v for k, v in _inputlabels(_dialog(op))]
        assert (lo, hi) == (op.min_inputs, len(labels))
        assert block["Label"] == op.label


def _inputlabels(dialog: reader.Block) -> list[tuple[int, str]]:
    items = dialog.items
    return [(int(items[k + 1]), items[k + 2]) for k, item in enumerate(items[:-2])  # type: ignore
            if item == "inputlabel"]


def test_index_reader_rejects_a_malformed_block(tmp_path: Path) -> None:
    """Negative control for the reader: a block without its blank line, a missing key."""
    good = (LIB / "INDEX__SECTION").read_text(encoding="utf-8")
    (tmp_path / "a").write_text(good.rstrip("\n") + "\n")
    with pytest.raises(reader.HdaFormatError):
        reader.read_index(tmp_path / "a")
    (tmp_path / "b").write_text(good.replace("Icon:", "Icons:", 1))
    with pytest.raises(reader.HdaFormatError):
        reader.read_index(tmp_path / "b")
    (tmp_path / "c").write_text('"\nINDEX__SECTION INDEX_SECTION\n')
    with pytest.raises(reader.HdaFormatError):
        reader.read_sections_list(tmp_path / "c")


# --- dialog scripts ----------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.name)
def test_dialog_script_is_balanced_and_declares_every_parameter(op: Operator) -> None:
    dialog = _dialog(op)
    assert reader.value_after(dialog, "name") == op.type_name
    found = {p.name: p for p in reader.parms(dialog)}
    declared = {p.name: p for p in op.parameters}
    assert set(found) == set(declared)
    for name, p in declared.items():
        info = found[name]
        assert info.type == (p.dialog_type or DIALOG_TYPE[p.decl.kind]), name
        default = reader.value_after(info.block, "default")
        assert isinstance(default, reader.Block)
        if p.dialog_type == "button":
            assert default.items == ["0"]
            continue
        if p.default_expression:
            expr = default.items[0]
            assert isinstance(expr, reader.Block) and expr.items == [p.default_expression,
                                                                     "hscript-expr"]
        elif p.decl.kind == KIND_VEC3:
            assert [float(x) for x in default.items] == list(p.decl.default)  # type: ignore
        elif p.decl.kind in (KIND_FLOAT, KIND_INT):
            assert float(default.items[0]) == float(p.decl.default)  # type: ignore
        elif p.decl.kind == KIND_BOOL:
            assert default.items == ["1" if p.decl.default else "0"]
        else:
            assert default.items == [p.decl.default]
        if p.decl.kind == KIND_CHOICE:
            menu = reader.value_after(info.block, "menu")
            assert isinstance(menu, reader.Block)
            assert menu.items[0::2] == [token for token, _ in p.decl.choices]
        if p.decl.minimum is not None:
            rng = reader.value_after(info.block, "range")
            assert isinstance(rng, reader.Block)
            assert rng.items[0] == f"{p.decl.minimum:.10g}!"
        assert ("invisible" in info.block.items) == p.invisible


def test_pin_group_has_the_standard_group_menu_and_selector() -> None:
    from pbdcloth.houdini.operators import PREPROCESS

    info = {p.name: p for p in reader.parms(_dialog(PREPROCESS))}["pin_group"]
    menu = reader.value_after(info.block, "menutoggle")
    assert isinstance(menu, reader.Block)
    script = menu.items[0]
    assert isinstance(script, reader.Block)
    assert script.items == ["kwargs['node'].generateInputGroupMenu(0, hou.geometryType.Points)"]
    assert menu.items[1:] == ["language", "python"]
    tags = {}
    for k, item in enumerate(info.block.items[:-1]):
        nxt = info.block.items[k + 1]
        if item == "parmtag" and isinstance(nxt, reader.Block):
            tags[nxt.items[0]] = nxt.items[1]
    assert "soputils.selectGroupParm(kwargs)" in tags["script_action"]
    assert "kwargs['geometrytype'] = hou.geometryType.Points" in str(tags["script_action"])
    assert tags["script_action_icon"] == "BUTTONS_reselect"
    assert tags["sop_input"] == "0"


def test_dialog_reader_rejects_unbalanced_scripts() -> None:
    from pbdcloth.houdini.operators import SOLVER

    text = (_folder(SOLVER) / "DialogScript").read_text(encoding="utf-8")
    reader.parse(text)
    with pytest.raises(reader.HdaFormatError):
        reader.parse(text.replace("}", "", 1))
    with pytest.raises(reader.HdaFormatError):
        reader.parse(text + "}\n")
    with pytest.raises(reader.HdaFormatError):
        reader.parse(text.replace('"Start Frame"', '"Start Frame', 1))


def test_solver_disables_parameters_of_the_other_model() -> None:
    from pbdcloth.houdini.operators import SOLVER

    found = {p.name: p for p in reader.parms(_dialog(SOLVER))}
    assert reader.value_after(found["stretch_stiffness"].block, "disablewhen") == \
        "{ model != pbd }"
    assert reader.value_after(found["bend_compliance"].block, "disablewhen") == \
        "{ model != xpbd }"
    for p in found.values():  # every conditional names parameters that exist
        cond = reader.value_after(p.block, "disablewhen")
        if isinstance(cond, str):
            assert cond.split()[1] in found


# --- cook sections: one-line shims into the package -------------------------------------------

@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.name)
def test_python_cook_is_a_two_line_shim_calling_the_package(
        op: Operator, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (_folder(op) / "PythonCook").read_text(encoding="utf-8")
    lines = text.strip("\n").split("\n")
    assert len(lines) == 2 and lines[0] == "from pbdcloth.houdini import sops"
    calls: list[object] = []
    monkeypatch.setattr(sops, op.cook, lambda node: calls.append(node))

    class FakeHou:
        node = object()

        @staticmethod
        def pwd() -> object:
            return FakeHou.node

    exec(compile(text, f"{op.name}/PythonCook", "exec"), {"hou": FakeHou})  # noqa: S102
    assert calls == [FakeHou.node]


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.name)
def test_tools_shelf_puts_the_operator_in_the_pbd_tab_menu(op: Operator) -> None:
    root = ET.fromstring((_folder(op) / "Tools.shelf").read_text(encoding="utf-8"))
    tool = root.find("tool")
    assert tool is not None
    assert tool.findtext("toolSubmenu") == "PBD"
    script = tool.findtext("script") or ""
    assert "soptoolutils.genericTool(kwargs, '$HDA_NAME')" in script
    assert (_folder(op) / "FunctionName").read_text() == op.name


def test_sections_are_plain_ascii() -> None:
    for path in LIB.rglob("*"):
        if path.is_file():
            path.read_bytes().decode("ascii")


# --- package file and docs ---------------------------------------------------------------------

def test_package_file_puts_the_repo_on_houdini_path_and_scans_hda() -> None:
    pkg = json.loads((ROOT / "houdini_package.json").read_text(encoding="utf-8"))
    assert pkg["hpath"] == "$HOUDINI_PACKAGE_PATH"
    scan = [e["HOUDINI_OTLSCAN_PATH"] for e in pkg["env"] if "HOUDINI_OTLSCAN_PATH" in e]
    assert scan == [{"value": ["$HOUDINI_PACKAGE_PATH/hda"], "method": "append"}]
    # Loaded only by a Houdini whose Python is the one python3.11libs/ is for (20.5, 21.0).
    assert pkg["enable"] == "houdini_python == 'python3.11'"
    assert (ROOT / "python3.11libs").is_dir()
    assert (ROOT / "python3.11libs" / "pbdcloth" / "houdini" / "sops.py").is_file()


def test_parameter_reference_lists_every_visible_parameter() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for op in OPERATORS:
        assert op.type_name in text
        for p in op.parameters:
            assert (f"| `{p.name}` |" in text) != p.invisible, p.name


# --- regeneration with new settings and the cache section ----------------------------------------

def check_library(lib: Path, operators: tuple[Operator, ...]) -> None:
    """The structure checks on an expanded library folder: Sections.list names files that
    exist, INDEX__SECTION has a well-formed block per operator, each DialogScript is balanced and
    declares exactly the operator's parameters, each icon is an SVG document."""
    entries = reader.read_sections_list(lib / "Sections.list")
    assert entries[:2] == [("INDEX__SECTION", "INDEX_SECTION"),
                           ("houdini.hdalibrary", "houdini.hdalibrary")]
    for file, _ in entries:
        assert (lib / file).exists(), file
    blocks = reader.read_index(lib / "INDEX__SECTION")
    assert [b["Operator"] for b in blocks] == [op.type_name for op in operators]
    for block, op in zip(blocks, operators, strict=True):
        folder = lib / hda.escape_section_name(op.table_name)
        listed = [f for f, _ in reader.read_sections_list(folder / "Sections.list")]
        assert sorted(listed) == sorted(p.name for p in folder.iterdir()
                                        if p.name != "Sections.list")
        dialog = reader.parse((folder / "DialogScript").read_text(encoding="utf-8"))
        assert {p.name for p in reader.parms(dialog)} == {p.name for p in op.parameters}
        assert block["Icon"] == f"opdef:/{op.table_name}?IconSVG"
        svg = ET.fromstring((folder / "IconSVG").read_text(encoding="utf-8"))
        assert svg.tag == "{http://www.w3.org/2000/svg}svg"


def test_the_committed_library_passes_the_structure_checks() -> None:
    check_library(LIB, OPERATORS)


def test_a_new_setting_regenerates_into_a_well_formed_library(tmp_path: Path) -> None:
    """settings.py gaining a setting (as other issues add them) regenerates the solver with the
    new parameter beside the cache's, and the regenerated library passes the checks."""
    from pbdcloth.houdini import operators
    from pbdcloth.settings import CLOTH_SETTINGS, Setting

    extra = Setting(name="air_drag", kind=KIND_FLOAT, default=0.1, minimum=0.0, maximum=10.0,
                    unit="1/s", label="Air Drag", group="Forces", help="Drag of still air.")
    solver = operators.solver_operator(CLOTH_SETTINGS + (extra,))
    ops = (operators.PREPROCESS, solver, operators.SPRING_CHAINS)
    lib = tmp_path / "pbdcloth.hda"
    for rel, text in hda.library_files(ops).items():
        (lib / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / rel).write_text(text, encoding="utf-8")
    check_library(lib, ops)
    dialog = reader.parse((lib / hda.escape_section_name(solver.table_name) / "DialogScript")
                          .read_text(encoding="utf-8"))
    names = [p.name for p in reader.parms(dialog)]
    assert "air_drag" in names
    assert names[-5:] == ["cache_simulation", "cache_memory", "reset_simulation", "cache_path",
                          "save_to_disk"]
    # Negative control: a dropped section file fails the checks.
    (lib / hda.escape_section_name(solver.table_name) / "IconSVG").unlink()
    with pytest.raises(AssertionError):
        check_library(lib, ops)


@pytest.mark.parametrize("op", [o for o in OPERATORS if o.name != "cloth_preprocess"],
                         ids=lambda o: o.name)
def test_cache_buttons_call_the_package_and_the_help_explains_caching(op: Operator) -> None:
    found = {p.name: p for p in reader.parms(_dialog(op))}
    for name, function in (("reset_simulation", "reset_simulation"),
                           ("save_to_disk", "save_to_disk")):
        info = found[name]
        assert info.type == "button"
        tags = {}
        for k, item in enumerate(info.block.items[:-1]):
            nxt = info.block.items[k + 1]
            if item == "parmtag" and isinstance(nxt, reader.Block):
                tags[nxt.items[0]] = nxt.items[1]
        assert tags["script_callback_language"] == "python"
        script = str(tags["script_callback"])
        assert script.endswith(f".{function}(kwargs['node'])")
        called: list[object] = []
        fake_sops = type("sops", (), {function: staticmethod(lambda node: called.append(node))})
        eval(script, {"__import__": lambda *a, **k: fake_sops},  # noqa: S307
             {"kwargs": {"node": "n"}})
        assert called == ["n"] and callable(getattr(sops, function))
    assert found["cache_path"].type == "file"
    assert reader.value_after(found["cache_memory"].block, "disablewhen") == \
        "{ cache_simulation == 0 }"
    help_text = (_folder(op) / "Help").read_text(encoding="utf-8")
    assert "== Caching ==" in help_text and "Cache Memory (MB)" in help_text
    assert "Esc" in help_text and "Reset Simulation" in help_text


def test_readme_install_lines_work_in_a_plain_shell() -> None:
    """$HOUDINI_USER_PREF_DIR is Houdini's, unset in a plain shell: the README's shell lines
    only hand it to hython inside single quotes, never let the shell expand it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Houdini"):]
    section = section[:section.index("\n## ", 1)]
    blocks = section.split("```sh")[1:]
    assert blocks
    lines = [ln for b in blocks for ln in b.split("```")[0].splitlines()]
    import re

    for line in lines:
        unquoted = re.sub(r"'[^']*'", "''", line)
        assert "$HOUDINI_USER_PREF_DIR" not in unquoted, line
    assert any("$HOUDINI_USER_PREF_DIR" in line for line in lines)  # asked of hython


def test_fabric_preset_menu_lists_the_presets_and_sets_the_material_parameters() -> None:
    """The solver's Fabric Preset menu offers Custom and every preset; its callback calls
    ``sops.apply_fabric_preset``, which sets the node's parameters to the preset's values (the
    settings the node then gives equal ``apply_preset``'s), and Custom changes nothing."""
    from houdini_scenes import sop
    from pbdcloth.houdini import parms
    from pbdcloth.presets import PRESETS, apply_preset
    from pbdcloth.settings import ClothSettings

    found = {p.name: p for p in reader.parms(_dialog(operators.SOLVER))}
    info = found["fabric_preset"]
    menu = next(b for k, b in enumerate(info.block.items)
                if isinstance(b, reader.Block) and info.block.items[k - 1] == "menu")
    assert menu.items[0::2] == ["custom", *PRESETS]
    assert "fabric_preset" in operators.UI_ONLY
    tags = {}
    for k, item in enumerate(info.block.items[:-1]):
        nxt = info.block.items[k + 1]
        if item == "parmtag" and isinstance(nxt, reader.Block):
            tags[nxt.items[0]] = nxt.items[1]
    assert str(tags["script_callback"]).endswith(".apply_fabric_preset(kwargs['node'])")
    node = sop(operators.SOLVER, "/obj/cloth/solver", fabric_preset="denim")
    before = parms.cloth_settings(node)
    sops.apply_fabric_preset(node)
    assert parms.cloth_settings(node) == apply_preset(ClothSettings(), "denim") != before
    custom = sop(operators.SOLVER, "/obj/cloth/solver2")
    sops.apply_fabric_preset(custom)
    assert parms.cloth_settings(custom) == ClothSettings()
