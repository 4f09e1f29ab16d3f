"""Tests for reward_eval.report (the evaluation report, its plots and table) on hand-made records.

The records carry real MP4s (written with the server's own encoder) for the disagreement
strips, one whose video was deleted and one that never kept its video, so every branch of
the strip code meets a real file or a real absence.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from reward_eval.analysis.metrics import summarize
from reward_eval.report.document import Details, Para, Table, render_html, render_markdown
from reward_eval.report.evaluation import write_report
from reward_eval.report.provenance import RANDOM_MODEL_WARNING, key_source
from reward_eval.report.table import format_table, num, pct
from tests.conftest import moving_square_frames
from vlm_reward.video_io import encode_mp4

TASKS = {0: "put the bowl on the plate", 1: "open the top drawer and put the bowl inside"}
SETTINGS = {"backend": "qwen_vl_hf", "model": "/models/tiny-qwen", "random_model": True}


def rec(task: int, native: bool, score: float, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "task_text": TASKS[task],
        "trial_id": extra.pop("trial_id", 0),
        "native_success": native,
        "vlm_score": score,
        "vlm_answer": f"<answer>{score}</answer>",
        "fallback": False,
        "error": None,
        "error_kind": None,
        "latency_s": 0.5 + score,
        "video_path": None,
        "binary_reward": True,
        "success_threshold": 0.5,
        **extra,
    }


def make_records(video_dir: Path) -> list[dict[str, Any]]:
    """Two tasks; three disagreements (video kept, video deleted, no video) and a fallback."""
    video_dir.mkdir(parents=True, exist_ok=True)
    kept, gone = video_dir / "kept.mp4", video_dir / "gone.mp4"
    for path in (kept, gone):
        encode_mp4(moving_square_frames(8, 64), path, fps=4)
    gone.unlink()
    return [
        rec(0, False, 0.85, trial_id=1, video_path=str(kept)),  # 0: false positive, strip
        rec(0, True, 0.9, trial_id=2),
        rec(0, False, 0.1, trial_id=3),
        rec(1, True, 0.2, trial_id=1, video_path=str(gone)),  # 3: false negative, video gone
        rec(1, True, 0.3, trial_id=2),  # 4: false negative, no video kept
        rec(1, True, 0.95, trial_id=3),
        rec(1, False, 0.05, trial_id=4),
        # 7: a fallback that looks like a false positive; it must not be shown as one
        rec(
            1,
            False,
            1.0,
            trial_id=5,
            fallback=True,
            error="HTTP 502",
            error_kind="parse_error",
            vlm_answer=None,
        ),
    ]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("reward-eval")
    records = make_records(root / "videos")
    summary = summarize(records)
    paths = write_report(root / "run", records, summary, title="Native vs VLM", settings=SETTINGS)
    run_dir = root / "run"
    return {
        "records": records,
        "summary": summary,
        "paths": paths,
        "run_dir": run_dir,
        "md": (run_dir / "report.md").read_text(),
        "html": (run_dir / "report.html").read_text(),
    }


def test_every_reported_file_exists_and_summary_round_trips(report: dict[str, Any]) -> None:
    paths = report["paths"]
    expected = {"summary", "markdown", "html", "score_histogram", "score_histograms_per_task", "task_rates"}
    expected |= {"latency_histogram", "disagreement_0", "roc", "reliability"}
    assert set(paths) == expected
    assert all(Path(p).is_file() and Path(p).stat().st_size > 0 for p in paths.values())
    assert all(Path(p).is_relative_to(report["run_dir"]) for p in paths.values())
    assert json.loads(paths["summary"].read_text()) == report["summary"]


PLOT_KEYS = [
    "score_histogram",
    "score_histograms_per_task",
    "task_rates",
    "latency_histogram",
    "disagreement_0",
    "roc",
    "reliability",
]


@pytest.mark.parametrize("key", PLOT_KEYS, ids=PLOT_KEYS)
def test_png_is_a_real_image_with_content(report: dict[str, Any], key: str) -> None:
    with Image.open(report["paths"][key]) as image:
        assert image.format == "PNG"
        pixels = np.asarray(image.convert("RGB"))
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10, "a flat or near-empty image"


def test_disagreement_strip_shows_the_video_frames(report: dict[str, Any]) -> None:
    """The moving square is pure red: red pixels in the strip mean the frames were decoded and drawn."""
    with Image.open(report["paths"]["disagreement_0"]) as image:
        pixels = np.asarray(image.convert("RGB")).astype(int)
    red = (pixels[..., 0] > 200) & (pixels[..., 1] < 60) & (pixels[..., 2] < 60)
    assert red.sum() > 8 * 50, "expected the red square in each of the 8 frames"


def test_markdown_has_each_task_and_the_overall_numbers(report: dict[str, Any]) -> None:
    md, summary = report["md"], report["summary"]
    overall = summary["overall"]
    for key, block in summary["per_task"].items():
        assert block["task_text"] in md
        row = next(line for line in md.splitlines() if line.startswith(f"| {key} | {block['task_text']} |"))
        assert pct(block["native_success_rate"]) in row and pct(block["agreement"]) in row
    for value in (overall["native_success_rate"], overall["vlm_success_rate"], overall["agreement"]):
        assert f"| {pct(value)} |" in md
    for key in ("precision", "recall", "f1", "auroc"):
        assert f"| {num(overall[key])} |" in md, key
    assert f"| native success | {overall['tp']} | {overall['fn']} |" in md
    assert "vlm_score >= 0.5 (threshold: the run's success_threshold)" in md
    assert "backend qwen_vl_hf, model /models/tiny-qwen" in md
    assert "| parse_error | 1 |" in md


def test_disagreements_section_covers_each_case(report: dict[str, Any]) -> None:
    md = report["md"]
    section = md[md.index("## Disagreements") :]
    assert "3 judged episode(s)" in section and "1 false positive(s)" in section
    assert "task 0, trial 1 (record 0)" in section and "disagreements/record_00000.png" in section
    assert "Video gone:" in section and "gone.mp4" in section  # record 3
    assert "No video: the record has no video_path" in section  # record 4
    assert "(record 7)" not in section, "a fallback episode is not a disagreement"
    assert "\\<answer>0.85\\</answer>" in section, "the answer's tags are escaped, not eaten as HTML"


class _Checker(HTMLParser):
    """Collects <img> sources and checks that every non-void tag is closed in order."""

    VOID = frozenset({"meta", "img", "br", "hr", "link", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.images: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs)["src"] or "")
        elif tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def test_html_is_well_formed_and_its_images_exist(report: dict[str, Any]) -> None:
    html, run_dir = report["html"], report["run_dir"]
    assert html.startswith("<!DOCTYPE html>") and "<html" in html and html.rstrip().endswith("</html>")
    checker = _Checker()
    checker.feed(html)
    assert checker.errors == [] and checker.stack == []
    pngs = {p for p in report["paths"].values() if p.suffix == ".png"}
    assert {run_dir / src for src in checker.images} == pngs
    assert all(not src.startswith(("/", "http")) for src in checker.images), "relative paths only"
    assert "&lt;answer&gt;0.85&lt;/answer&gt;" in html


def test_random_model_warning_is_at_the_top(report: dict[str, Any], tmp_path: Path) -> None:
    md = report["md"]
    assert md.index(RANDOM_MODEL_WARNING) < md.index("## Where the numbers come from")
    assert 'class="warning"' in report["html"]
    records = report["records"]
    plain = write_report(tmp_path, records, report["summary"], title="t", settings={"backend": "x"})
    assert RANDOM_MODEL_WARNING not in plain["markdown"].read_text()
    assert 'class="warning"' not in plain["html"].read_text()


def test_threshold_override_is_reported(report: dict[str, Any], tmp_path: Path) -> None:
    records = report["records"]
    summary = summarize(records, threshold=0.25)
    paths = write_report(tmp_path, records, summary, title="low threshold", max_strips=0)
    md = paths["markdown"].read_text()
    assert "vlm_score >= 0.25 (threshold: set for this evaluation)" in md
    assert "backend not recorded, model not recorded" in md
    # at 0.25 record 4 (0.3, native success) agrees; 0 and 3 still disagree, and none is drawn
    assert "2 judged episode(s)" in md and "2 more disagreement(s) not shown (max_strips=0)" in md
    assert not any(key.startswith("disagreement_") for key in paths)


def test_single_task_without_latency_skips_those_plots(tmp_path: Path) -> None:
    records = [rec(0, True, 0.9), rec(0, False, 0.2)]
    for r in records:
        del r["latency_s"]
    paths = write_report(tmp_path, records, summarize(records), title="one task")
    assert set(paths) == {
        "summary",
        "markdown",
        "html",
        "score_histogram",
        "task_rates",
        "roc",
        "reliability",
    }
    md = paths["markdown"].read_text()
    assert "No latency plot" in md and "No scoring errors." in md
    assert "0 judged episode(s)" in md


def test_format_table_has_a_row_per_task_with_its_numbers(report: dict[str, Any]) -> None:
    summary = report["summary"]
    lines = format_table(summary).splitlines()
    assert len(lines) == 3 + len(summary["per_task"])  # note, header, overall, tasks
    assert lines[1].split()[:3] == ["task", "n", "native"]
    rows = {line.split()[0]: line for line in lines[2:]}
    for key, block in [("overall", summary["overall"]), *summary["per_task"].items()]:
        cells = rows[key].split()
        assert cells[1] == str(block["n_episodes"])
        assert cells[2:8] == [
            pct(block["native_success_rate"]),
            pct(block["vlm_success_rate"]),
            pct(block["agreement"]),
            num(block["f1"]),
            num(block["auroc"]),
            str(block["fallback_count"]),
        ]


def test_format_table_shows_undefined_values_as_na() -> None:
    summary = summarize([rec(0, True, 1.0, fallback=True)])
    overall_row = format_table(summary).splitlines()[2].split()
    assert overall_row[:8] == ["overall", "1", "100.0%", "n/a", "n/a", "n/a", "n/a", "1"]


BAD_CALLS = [
    ("summary-not-a-dict", {"summary": [1]}, "summary must be the dict returned by metrics.summarize"),
    ("empty-title", {"title": " "}, "title must be a non-empty string"),
    ("negative-max-strips", {"max_strips": -1}, "max_strips must be an integer >= 0"),
]


@pytest.mark.parametrize(("override", "message"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_arguments_are_rejected(tmp_path: Path, override: dict[str, Any], message: str) -> None:
    records = [rec(0, True, 0.9)]
    kwargs = {"summary": summarize(records), "title": "t", **override}
    with pytest.raises(ValueError, match=message):
        write_report(tmp_path / "run", records, **kwargs)
    assert not (tmp_path / "run").exists(), "nothing is written for a bad call"


def test_document_escapes_table_cells_and_tags() -> None:
    blocks = [Table(("a|b", "c"), (("x | y", "<answer>1</answer>"),)), Para("1 < 2 & 3 > 2")]
    md = render_markdown(blocks)
    assert "| a\\|b | c |" in md and "| x \\| y | \\<answer>1\\</answer> |" in md
    page = render_html(blocks, "t")
    assert "<td>x | y</td><td>&lt;answer&gt;1&lt;/answer&gt;</td>" in page
    assert "<p>1 &lt; 2 &amp; 3 &gt; 2</p>" in page


def test_document_folds_details_in_both_renderings() -> None:
    blocks = [Details("Settings (1)", (Para("a < b"), Table(("k", "v"), (("x", "1"),))))]
    md = render_markdown(blocks)
    table = "| k | v |\n| --- | --- |\n| x | 1 |"
    assert md == f"<details><summary>Settings (1)</summary>\n\na \\< b\n\n{table}\n\n</details>\n"
    page = render_html(blocks, "t")
    assert "<details><summary>Settings (1)</summary>\n<p>a &lt; b</p>\n<table>" in page
    assert "</table>\n</details>" in page


BLOCK_SETTINGS = {
    **SETTINGS,
    "endpoint": "http://127.0.0.1:9/score",
    "reward_model": {"nframes": 16, "backend_kwargs": {"prompt": "yes_no"}, "timeout": 120.0},
    "reward_model_sources": {"nframes": "option", "backend_kwargs.prompt": "env_yaml"},
}


def test_the_report_leads_with_its_judge_and_results_and_folds_its_provenance(tmp_path: Path) -> None:
    records = make_records(tmp_path / "videos")
    paths = write_report(tmp_path / "run", records, summarize(records), title="T", settings=BLOCK_SETTINGS)
    md = paths["markdown"].read_text()
    order = [
        "# T\n",
        RANDOM_MODEL_WARNING,
        "The judge: a video VLM, backend qwen_vl_hf; as the server named it: not recorded (a log older",
        "## Overall",
        "## Per task",
        "## Where the numbers come from",
        "<details><summary>Settings of this evaluation (4)</summary>",
        "<details><summary>The reward_model block of the calls (3 keys, each with its source)</summary>",
        "## Binary and continuous reward",
    ]
    assert [md.index(part) for part in order] == sorted(md.index(part) for part in order)
    assert "| nframes | 16 | option |" in md and "| timeout | 120.0 | not recorded |" in md
    assert '| backend_kwargs | {"prompt": "yes_no"} | key by key: prompt from env_yaml |' in md
    html = paths["html"].read_text()
    assert html.count("<details>") == 2 and html.index("<h2>Overall</h2>") < html.index("<details>")


SOURCES = [
    ("own", "nframes", 16, {"nframes": "option"}, "option"),
    (
        "merged",
        "backend_kwargs",
        {"a": 1, "b": 2},
        {"backend_kwargs.a": "option", "backend_kwargs.b": "job"},
        "key by key: a from option, b from job",
    ),
    (
        "merged-empty",
        "backend_kwargs",
        {},
        {"nframes": "env_yaml"},
        "merged key by key; no source sets a key",
    ),
    ("older-run-dir", "backend_kwargs", {}, {}, "not recorded"),
    ("missing", "timeout", 120.0, {"nframes": "option"}, "not recorded"),
]


@pytest.mark.parametrize(
    ("key", "value", "sources", "shown"), [s[1:] for s in SOURCES], ids=[s[0] for s in SOURCES]
)
def test_every_row_of_the_block_names_its_source(key: str, value: Any, sources: dict, shown: str) -> None:
    assert key_source(key, value, sources) == shown
