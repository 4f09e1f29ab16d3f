"""docgen.hooks: a page's <!-- docgen: NAME --> line becomes the part rendered from the code."""

from __future__ import annotations

import pytest
from mkdocs.exceptions import PluginError

from docgen import hooks
from docgen.commands import REPO


def test_a_marker_line_is_replaced_and_other_text_is_left_alone() -> None:
    page = "# Keys\n\n<!-- docgen: reward-model-config -->\n\nSee `<!-- docgen: reward-model-config -->`.\n"
    text = hooks.on_page_markdown(page, page=None, config=None, files=None)
    assert "| `replica_cooldown_s` | `float > 0` | `30.0` |" in text
    assert text.endswith("See `<!-- docgen: reward-model-config -->`.\n")  # only whole lines are markers


def test_an_unknown_part_fails_the_build() -> None:
    with pytest.raises(
        PluginError, match="unknown generated part <!-- docgen: nope -->; known: reward-model-config"
    ):
        hooks.on_page_markdown("<!-- docgen: nope -->\n", page=None, config=None, files=None)


def test_every_part_is_asked_for_by_a_page_and_every_marker_names_a_part() -> None:
    asked = {
        m.group(1) for page in (REPO / "docs").rglob("*.md") for m in hooks.MARKER.finditer(page.read_text())
    }
    assert asked == set(hooks.GENERATED)
