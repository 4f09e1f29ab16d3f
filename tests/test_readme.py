"""The README is the front page: the two commands first, short, and every link lands in the repo."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
LINKS = re.findall(r"\]\(([^)\s]+)\)", README)
MAX_LINES = 150


def test_it_starts_with_the_two_commands() -> None:
    first_block = README.split("```")[1].splitlines()
    assert first_block[0] == "bash"
    assert [line.split("#")[0].strip() for line in first_block[1:] if line] == [
        "bash scripts/run.sh",
        "bash scripts/test.sh",
    ]


def test_it_is_a_front_page() -> None:
    assert len(README.splitlines()) <= MAX_LINES


@pytest.mark.parametrize("link", [link for link in LINKS if "://" not in link], ids=str)
def test_every_relative_link_lands_in_the_repo(link: str) -> None:
    target = REPO / link.split("#")[0]
    assert target.is_file(), link
    if target.suffix in (".png", ".jpg", ".svg"):
        assert target.stat().st_size < 100_000, f"{link} is {target.stat().st_size} bytes; keep it small"


def test_it_reaches_the_gpu_recipe_in_one_click() -> None:
    assert "docs/training/gpu.md" in LINKS
