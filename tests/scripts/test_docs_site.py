"""``bash scripts/docs.sh``: the site builds strictly, with the generated reference parts, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docgen.commands import REPO

pytestmark = pytest.mark.docs


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "docs.sh"), "build", "--site-dir", str(out)],
        cwd="/",  # callable from any directory
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    return out


def test_every_page_of_the_nav_is_built_with_its_generated_parts(site: Path) -> None:
    pages = sorted(p.relative_to(REPO / "docs").with_suffix(".html") for p in (REPO / "docs").rglob("*.md"))
    for page in pages:
        html = (site / page).read_text()
        assert "docgen:" not in html, page  # every marker was replaced
    assert "replica_cooldown_s" in (site / "reference/configuration.html").read_text()
    assert "vlm_reward_requests_total" in (site / "reference/metrics.html").read_text()
    assert "--max-inflight-mb" in (site / "reference/cli.html").read_text()
    assert "no_answer_mass" in (site / "reference/http-api.html").read_text()
    assert "register_backend" in (site / "reference/python.html").read_text()


def test_the_site_asks_nothing_of_the_network(site: Path) -> None:
    for html in site.rglob("*.html"):
        text = html.read_text()
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [a page that is not there](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        (REPO / "mkdocs.yml")
        .read_text()
        .split("\nnav:")[0]
        .replace("docgen/hooks.py", str(REPO / "docgen/hooks.py"))
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(config),
            "-d",
            str(tmp_path / "s"),
        ],
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    assert "missing.md" in result.stderr
