"""An independent reader of expanded Houdini asset libraries, for tests.

It shares no code with the generator (``pbdcloth.houdini.hda``): it tokenises DialogScripts
(quoted strings with backslash escapes, ``{ }`` blocks, ``[ ]`` script lines, bare words), checks
that they are balanced, and reads ``Sections.list`` and ``INDEX__SECTION`` files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

Node = Union[str, "Block"]


class HdaFormatError(AssertionError):
    """The library does not follow the expanded-HDA format."""


@dataclass
class Token:
    kind: str  # "str", "word", "{", "}", "[", "]"
    text: str
    line: int


@dataclass
class Block:
    opener: str
    items: list[Node] = field(default_factory=list)


def tokenize(text: str) -> list[Token]:
    """DialogScript tokens; ``#`` comments to the end of a line outside strings are skipped."""
    tokens: list[Token] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in "{}[]":
            tokens.append(Token(c, c, line))
            i += 1
        elif c == '"':
            j, out = i + 1, []
            while True:
                if j >= n or text[j] == "\n":
                    raise HdaFormatError(f"unterminated string on line {line}")
                if text[j] == "\\":
                    if j + 1 >= n:
                        raise HdaFormatError(f"dangling backslash on line {line}")
                    out.append({"n": "\n", "t": "\t"}.get(text[j + 1], text[j + 1]))
                    j += 2
                    continue
                if text[j] == '"':
                    break
                out.append(text[j])
                j += 1
            tokens.append(Token("str", "".join(out), line))
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in " \t\r\n{}[]\"":
                j += 1
            tokens.append(Token("word", text[i:j], line))
            i = j
    return tokens


def parse(text: str) -> Block:
    """The DialogScript as nested blocks; raises HdaFormatError unless braces/brackets balance
    and the whole script is one top-level ``{ ... }`` block."""
    stack: list[Block] = [Block("root")]
    for tok in tokenize(text):
        if tok.kind in ("{", "["):
            block = Block(tok.kind)
            stack[-1].items.append(block)
            stack.append(block)
        elif tok.kind in ("}", "]"):
            want = "{" if tok.kind == "}" else "["
            if len(stack) == 1 or stack[-1].opener != want:
                raise HdaFormatError(f"unbalanced {tok.kind!r} on line {tok.line}")
            stack.pop()
        else:
            stack[-1].items.append(tok.text)
    if len(stack) != 1:
        raise HdaFormatError(f"{len(stack) - 1} block(s) left open at the end")
    root = stack[0]
    if len(root.items) != 1 or not isinstance(root.items[0], Block):
        raise HdaFormatError("a DialogScript must be exactly one { ... } block")
    return root.items[0]


def value_after(block: Block, key: str) -> Node | None:
    """The item following the first bare ``key`` in ``block`` (not recursing)."""
    items = block.items
    for k, item in enumerate(items[:-1]):
        if item == key:
            return items[k + 1]
    return None


@dataclass
class ParmInfo:
    name: str
    type: str
    folder: str | None
    block: Block


def parms(dialog: Block, folder: str | None = None) -> list[ParmInfo]:
    """Every ``parm { ... }`` of a DialogScript, with its folder (``group``) name."""
    out: list[ParmInfo] = []
    items = dialog.items
    for k, item in enumerate(items[:-1]):
        nxt = items[k + 1]
        if item == "parm" and isinstance(nxt, Block):
            name, kind = value_after(nxt, "name"), value_after(nxt, "type")
            if not isinstance(name, str) or not isinstance(kind, str):
                raise HdaFormatError(f"a parm block without name/type: {nxt.items[:6]}")
            out.append(ParmInfo(name, kind, folder, nxt))
        elif item in ("group", "groupsimple", "groupcollapsible") and isinstance(nxt, Block):
            name = value_after(nxt, "name")
            out.extend(parms(nxt, name if isinstance(name, str) else None))
    return out


def read_sections_list(path: Path) -> list[tuple[str, str]]:
    """(file, section) entries; checks the first line is ``""`` and each line has one TAB."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if not lines or lines[0] != '""':
        raise HdaFormatError(f"{path}: first line must be \"\", got {lines[:1]}")
    if lines[-1] != "":
        raise HdaFormatError(f"{path}: must end with a newline")
    entries = []
    for number, line in enumerate(lines[1:-1], start=2):
        parts = line.split("\t")
        if len(parts) != 2 or not all(parts):
            raise HdaFormatError(f"{path}:{number}: expected FILE<TAB>SECTION, got {line!r}")
        entries.append((parts[0], parts[1]))
    return entries


INDEX_KEYS = ("Operator", "Label", "Path", "Icon", "Table", "License", "Extra", "User", "Inputs",
              "Subnet", "Python", "Empty", "Modified")


def read_index(path: Path) -> list[dict[str, str]]:
    """INDEX__SECTION blocks, each a dict of its ``Key: value`` lines (in the standard order)."""
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n\n"):
        raise HdaFormatError(f"{path}: each block must end with a blank line")
    blocks = []
    for chunk in text.strip("\n").split("\n\n"):
        entry: dict[str, str] = {}
        for line in chunk.split("\n"):
            m = re.fullmatch(r"([A-Za-z]+):( *)(.*)", line)
            if m is None:
                raise HdaFormatError(f"{path}: bad line {line!r}")
            entry[m.group(1)] = m.group(3)
        if tuple(entry) != INDEX_KEYS:
            raise HdaFormatError(f"{path}: keys {tuple(entry)} differ from {INDEX_KEYS}")
        blocks.append(entry)
    return blocks


def unescape_section_name(folder: str) -> str:
    """Inverse of Houdini's section file naming.

    ``__`` -> ``_``, ``_1`` -> ``/``, ``_8`` -> ``:``.
    """
    out, i = [], 0
    while i < len(folder):
        if folder[i] == "_":
            if i + 1 >= len(folder):
                raise HdaFormatError(f"{folder!r} ends in a lone underscore")
            code = folder[i + 1]
            mapping = {"_": "_", "1": "/", "8": ":"}
            if code not in mapping:
                raise HdaFormatError(f"{folder!r}: unknown escape _{code}")
            out.append(mapping[code])
            i += 2
        else:
            out.append(folder[i])
            i += 1
    return "".join(out)
