"""Documentation generated from the settings declaration (README's parameter reference)."""

from __future__ import annotations

from .settings import KIND_VEC3, groups


def _default_text(value: object, kind: str) -> str:
    if kind == KIND_VEC3:
        return "(" + ", ".join(f"{c:g}" for c in value) + ")"  # type: ignore[attr-defined]
    if isinstance(value, float):
        return f"{value:g}"
    if value == "":
        return '""'
    return str(value)


def _cell(text: str) -> str:
    """A Markdown table cell: a bare ``|`` (e.g. in ``pbd | xpbd``) would end the cell."""
    return text.replace("|", "\\|")


def settings_markdown() -> str:
    """A Markdown table per settings group: name, default, range, unit and help."""
    out = []
    for group, decls in groups():
        out.append(f"### {group}\n")
        out.append("| setting | label | default | range | unit | what it does |")
        out.append("|---|---|---|---|---|---|")
        for d in decls:
            cells = [f"`{d.name}`", d.label, f"`{_default_text(d.default, d.kind)}`",
                     d.range_text() or "-", d.unit or "-", d.help]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    return "\n".join(out)
