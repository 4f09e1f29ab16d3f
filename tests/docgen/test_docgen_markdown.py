"""docgen.markdown: cells keep a row's pipes apart, RST docstrings become Markdown."""

from __future__ import annotations

import pytest

from docgen.markdown import cell, code, from_rst, table


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a | b", "a \\| b"),
        ("`str | None`", "`str | None`"),
        ("`x` | `y | z`", "`x` \\| `y | z`"),
        ("two\n  lines", "two lines"),
        (16, "16"),
    ],
    ids=["plain", "prose-pipe", "pipe-in-code", "both", "newline", "number"],
)
def test_cell(text: object, expected: str) -> None:
    assert cell(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("x", "`x`"), ("a`b", "``a`b``"), ("`a", "`` `a ``")],
    ids=["plain", "inner-backtick", "leading-backtick"],
)
def test_code(text: str, expected: str) -> None:
    assert code(text) == expected


@pytest.mark.parametrize(
    ("rst", "markdown"),
    [
        ("``POST /score``: in", "`POST /score`: in"),
        (":class:`~vlm_reward.protocol.ScoreRequest` in", "`ScoreRequest` in"),
        (":mod:`vlm_reward.server.limits`", "`vlm_reward.server.limits`"),
        (":meth:`.load` then :data:`ERROR_STATUS`", "`.load` then `ERROR_STATUS`"),
        ("no markup", "no markup"),
    ],
    ids=["literal", "short-role", "full-role", "two-roles", "none"],
)
def test_from_rst(rst: str, markdown: str) -> None:
    assert from_rst(rst) == markdown


def test_table() -> None:
    assert table(("a", "b"), [(1, "x | y")]) == "| a | b |\n| --- | --- |\n| 1 | x \\| y |"
