"""Which judge scored a run: counted per episode, shown by every report, mixed judges said aloud."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reward_eval.analysis.judges import (
    NOT_RECORDED,
    backend_of,
    evaluation_title,
    judges_of,
    mixed,
    mixed_warning,
)
from reward_eval.analysis.metrics import summarize
from reward_eval.commands import compare
from reward_eval.report.audit import audit_blocks, audit_lines
from reward_eval.report.document import render_markdown
from reward_eval.report.evaluation import write_report
from tests.reward_eval.test_reward_eval_compare import _episode, _write_jsonl, _write_scalars
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.verdict import JudgeIdentity

HF = JudgeIdentity("qwen_vl_hf", "tiny-qwen", "probability", "yes_no", "6b101f59a615")
VLLM = JudgeIdentity("qwen_vl_vllm", "Qwen2.5-VL-7B-Instruct", "probability", "yes_no", "6b101f59a615")


def _record(judge: JudgeIdentity | None, native: bool = True, fallback: bool = False) -> EpisodeRecord:
    keys = {} if judge is None else judge.to_record()
    line = {"task_id": 0, "native_success": native, "vlm_score": 0.7, "fallback": fallback, **keys}
    return EpisodeRecord.from_json(line)


COUNTS = [
    ("one-judge", [HF, HF], [(str(HF), 2)], False),
    ("two-judges", [HF, VLLM, VLLM], [(str(VLLM), 2), (str(HF), 1)], True),
    ("older-log", [None, None], [(NOT_RECORDED, 2)], False),
    ("older-and-one", [HF, None], [(str(HF), 1), (NOT_RECORDED, 1)], False),
]


@pytest.mark.parametrize(
    ("judges", "expected", "is_mixed"), [c[1:] for c in COUNTS], ids=[c[0] for c in COUNTS]
)
def test_judges_are_counted_per_judged_episode(
    judges: list[JudgeIdentity | None], expected: list[tuple[str, int]], is_mixed: bool
) -> None:
    records = [_record(j) for j in judges] + [_record(None, fallback=True)]  # a fallback: judged by nobody
    counted = judges_of(records)
    assert [(j["judge"], j["episodes"]) for j in counted] == expected
    assert mixed(counted) is is_mixed
    assert (mixed_warning(counted) is not None) is is_mixed


def _report(tmp_path: Path, records: list[EpisodeRecord]) -> str:
    summary = summarize(records)
    paths = write_report(tmp_path, records, summary, title="judges", settings={"backend": "qwen_vl_hf"})
    return Path(paths["markdown"]).read_text()


def test_the_report_names_its_judge(tmp_path: Path) -> None:
    text = _report(tmp_path, [_record(HF), _record(HF, native=False)])
    assert f"Judged by (as the server answered, per episode): {HF}." in text
    assert "different judges" not in text


def test_a_report_over_two_judges_says_so(tmp_path: Path) -> None:
    text = _report(tmp_path, [_record(HF), _record(VLLM, native=False)])
    assert "These episodes were scored by 2 different judges" in text
    assert f"{HF} (1 episodes)" in text and f"{VLLM} (1 episodes)" in text


def test_the_audit_names_its_judges() -> None:
    audit: dict[str, Any] = {
        "threshold": 0.5, "calls": 3, "fallback_calls": 0, "rows": {}, "per_task": {}, "worst": {},
        "judges": [{"judge": str(HF), "episodes": 2}, {"judge": str(VLLM), "episodes": 1}],
    }  # fmt: skip
    assert f"audit judged by: {HF} (2 episodes); {VLLM} (1 episodes)" in audit_lines(audit)
    assert "scored by 2 different judges" in render_markdown(audit_blocks(audit))


def test_compare_shows_each_runs_judge_and_warns_of_a_mixed_run(tmp_path: Path) -> None:
    _write_scalars(tmp_path / "native", {"env/success_once": [0.1, 0.2]})
    _write_scalars(tmp_path / "vlm", {"env/success_once": [0.1, 0.3]})
    lines = [{**_episode(0, env, True, True), **judge.to_record()} for env, judge in enumerate((HF, VLLM))]
    _write_jsonl(tmp_path / "vlm", lines)
    out = tmp_path / "out"
    assert compare.main([str(tmp_path / "native"), str(tmp_path / "vlm"), "--out", str(out)]) == 0
    text = (out / "compare.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "n/a (no scored episodes)" in rows["native reward"].split(" | ")[-1]
    assert str(HF) in rows["VLM reward"] and str(VLLM) in rows["VLM reward"]
    assert "**VLM reward:** These episodes were scored by 2 different judges" in text
    assert json.loads(json.dumps(lines))  # the lines are plain JSON, as the env writes them


RESNET = JudgeIdentity("resnet", "libero_basket_resnet [mean P(success) of the last 1 frame]", "probability")
TITLES = [
    ("classifier", [RESNET], None, "ResNet success classifier vs native success: RUN"),
    ("vlm-by-alias", [None], "qwen2_5_vl_hf", "Video VLM vs native success: RUN"),
    ("the-records-win", [HF], "resnet", "Video VLM vs native success: RUN"),
    ("two-backends-the-request", [HF, RESNET], "resnet", "ResNet success classifier vs native success: RUN"),
    ("a-plugin-s", [None], "fixed_score", "Judge vs native success: RUN"),
    ("nothing-known", [None], None, "Judge vs native success: RUN"),
]


@pytest.mark.parametrize(
    ("judges", "requested", "title"), [t[1:] for t in TITLES], ids=[t[0] for t in TITLES]
)
def test_a_report_title_names_the_judge_as_what_it_is(
    judges: list[JudgeIdentity | None], requested: str | None, title: str
) -> None:
    """The backend the records name (else the one asked for) gives the kind; never "VLM" by default."""
    records = [_record(j) for j in judges] + [_record(VLLM, fallback=True)]  # a fallback names nobody
    assert evaluation_title(backend_of(records, requested), "RUN") == title


def test_the_report_s_first_line_says_what_the_judge_is(tmp_path: Path) -> None:
    """The records' backend decides, whatever the settings asked for: a classifier is not a VLM."""
    text = _report(tmp_path, [_record(RESNET), _record(RESNET, native=False)])
    first = text.split("\n\n")[1]
    assert first.startswith(
        f"The judge: a ResNet success classifier, backend resnet; as the server named it: {RESNET}."
    )
    assert "VLM" not in text.split("## Where the numbers come from")[0]
