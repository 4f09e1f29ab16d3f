"""A tiny document model rendered to Markdown and to standalone HTML.

The report is one list of blocks (headings, paragraphs, lists, tables, images, links, alerts, and
folded groups of blocks), so its Markdown and HTML versions always say the same thing. All text is
plain: the renderers escape it (a VLM answer's ``<answer>`` tags show as text in both). The HTML
needs nothing from the network: its style is inline and images are referenced by relative path.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    """A section title; level 1 is the document's title."""

    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Items:
    """A bulleted list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells, one header row."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Image:
    """An image by a path relative to the document (never embedded, never remote)."""

    src: str
    alt: str


@dataclass(frozen=True)
class Link:
    """A paragraph that is a link to another file of the run dir, by relative path."""

    href: str
    text: str


@dataclass(frozen=True)
class Alert:
    """A warning the reader must not miss: a boxed, bold paragraph."""

    text: str


@dataclass(frozen=True)
class Details:
    """Blocks folded under a one-line summary (``<details>``): complete, out of the reader's way."""

    summary: str
    blocks: tuple[Block, ...]


Block = Heading | Para | Items | Table | Image | Link | Alert | Details


def _md_text(text: str) -> str:
    """``<`` backslash-escaped: a VLM answer's ``<answer>`` tags must show, not vanish as HTML."""
    return str(text).replace("<", "\\<")


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Block]) -> str:
    """GitHub-flavoured Markdown of ``blocks``."""
    out = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"{'#' * b.level} {_md_text(b.text)}")
        elif isinstance(b, Para):
            out.append(_md_text(b.text))
        elif isinstance(b, Items):
            out.append("\n".join(f"- {_md_text(item)}" for item in b.items))
        elif isinstance(b, Table):
            lines = ["| " + " | ".join(map(_md_cell, b.headers)) + " |", "|" + " --- |" * len(b.headers)]
            lines += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, Image):
            out.append(f"![{_md_cell(b.alt)}]({b.src})")
        elif isinstance(b, Link):
            out.append(f"[{_md_cell(b.text)}]({b.href})")
        elif isinstance(b, Alert):
            out.append(f"> **WARNING: {_md_text(b.text)}**")
        elif isinstance(b, Details):  # GitHub folds it; the blank lines let the Markdown inside render
            inner = render_markdown(b.blocks).rstrip("\n")
            out.append(f"<details><summary>{html.escape(b.summary)}</summary>\n\n{inner}\n\n</details>")
    return "\n\n".join(out) + "\n"


STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; }
th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
.warning { background: #fde2e1; border: 2px solid #c0392b; padding: 0.8em; font-weight: bold; }
summary { cursor: pointer; margin: 0.5em 0; }
"""


def _html_block(b: Block) -> str:
    e = html.escape
    if isinstance(b, Heading):
        return f"<h{b.level}>{e(b.text)}</h{b.level}>"
    if isinstance(b, Para):
        return f"<p>{e(b.text)}</p>"
    if isinstance(b, Items):
        return "<ul>" + "".join(f"<li>{e(item)}</li>" for item in b.items) + "</ul>"
    if isinstance(b, Table):
        head = "".join(f"<th>{e(h)}</th>" for h in b.headers)
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in b.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(b, Image):
        return f'<img src="{e(b.src)}" alt="{e(b.alt)}">'
    if isinstance(b, Link):
        return f'<p><a href="{e(b.href)}">{e(b.text)}</a></p>'
    if isinstance(b, Details):
        inner = "\n".join(_html_block(block) for block in b.blocks)
        return f"<details><summary>{e(b.summary)}</summary>\n{inner}\n</details>"
    return f'<div class="warning">WARNING: {e(b.text)}</div>'


def render_html(blocks: Sequence[Block], title: str) -> str:
    """A standalone HTML page of ``blocks``: inline style, images by relative path."""
    body = "\n".join(_html_block(b) for b in blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )
