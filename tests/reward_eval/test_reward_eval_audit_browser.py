"""The browser check itself: on a page built to be broken it finds every kind of breakage.

A check that cannot fail proves nothing about the reports it passes
(``test_reward_eval_audit.py`` opens the real ones): this page has an image that does not
exist, one that is not an image, a link to a missing file of the run dir, and a script that
logs an error and throws.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import HeadlessChromium, broken_links, find_chromium, require_chromium

BROKEN_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>broken</title></head><body>
<img src="plots/missing.png" alt="missing"><img src="not_an_image.png" alt="not an image">
<img src="ok.png" alt="fine">
<a href="audit/report.html">missing</a> <a href="ok.png">present</a> <a href="https://example.org/">outside</a>
<script>console.error("the page logged an error"); throw new Error("the page threw");</script>
</body></html>"""
# The smallest valid PNG (1x1, transparent).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000005000157a2c9c40000000049454e44ae426082"
)


@pytest.mark.slow
def test_the_check_finds_a_missing_image_a_broken_link_and_console_errors(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(BROKEN_PAGE)
    (tmp_path / "not_an_image.png").write_text("text")
    (tmp_path / "ok.png").write_bytes(PNG)
    with HeadlessChromium(require_chromium()) as browser:
        check = browser.check((tmp_path / "page.html").as_uri())
    assert [Path(src).name for src in check.broken_images] == ["missing.png", "not_an_image.png"]
    assert broken_links(check, tmp_path) == [(tmp_path / "audit" / "report.html").as_uri()]
    errors = "\n".join(check.console_errors)
    assert "the page logged an error" in errors and "the page threw" in errors
    assert "missing.png" in errors, "a resource that failed to load is a console error too"
    assert any("missing.png" in f for f in check.failed_requests)


def test_find_chromium_is_none_without_a_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_chromium() is None
