"""Markdown pieces the reference pages are made of: table cells, tables, code spans.

The tables are rendered by MkDocs' Python-Markdown, which splits a row on the pipes outside
code spans: a pipe in prose is escaped, one inside a code span (``str | None``) is left as is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# Sphinx cross-references in the project's docstrings: :class:`~pkg.mod.Name`, :mod:`.sibling`.
_RST_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):`(~?)([^`]+)`")


def cell(text: object) -> str:
    """``text`` as one table cell: on one line, the pipes outside code spans escaped."""
    text = " ".join(str(text).split())
    parts, end = [], 0
    for span in _CODE_SPAN.finditer(text):
        parts += [text[end : span.start()].replace("|", "\\|"), span.group(0)]
        end = span.end()
    return "".join([*parts, text[end:].replace("|", "\\|")])


def from_rst(text: str) -> str:
    """Docstring RST as Markdown: ````x```` becomes a code span, a Sphinx role its target's name in one.

    ``~a.b.C`` is written ``C`` (the role's own shortening); other targets are kept whole.
    """
    text = _RST_ROLE.sub(lambda m: code(m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)), text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def code(text: object) -> str:
    """``text`` as an inline code span (a longer fence when ``text`` holds a backtick)."""
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A pipe table; every value goes through :func:`cell`."""
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)
