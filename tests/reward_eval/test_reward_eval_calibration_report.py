"""The report's calibration and progress-order sections, and the rescore command line it prints.

Hand-made records and per-episode VOC results (no server): every threshold, metric and
``n/a`` reason below is worked out in the comments.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from reward_eval.analysis.metrics import summarize
from reward_eval.analysis.progress import CONSTANT, FEW_PREFIXES, summarize_progress
from reward_eval.report import progress as progress_report
from reward_eval.report.calibration import calibration_lines
from reward_eval.report.evaluation import write_report
from reward_eval.report.progress import progress_lines
from reward_eval.report.threshold_hint import add_report_hints, report_command


def rec(task: int, native: bool, score: float, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "task_text": f"task {task}",
        "native_success": native,
        "vlm_score": score,
        **extra,
    }


# Judged, highest first: .95 T, .9 T, .85 F, .3 T, .2 T, .1 F, .05 F (4 successes, 3 failures).
# Sweep (t: tp fp): .95: 1 0 | .9: 2 0 | .85: 2 1 | .3: 3 1 | .2: 4 1 | .1: 4 2 | .05: 4 3
# F1 = 2tp / (2tp + fp + fn): 2/5, 2/3, 4/7, 3/4, 8/9, 4/5, 8/11 -> best .2 (precision 4/5, recall 1)
# J = tp/4 - fp/3: 1/4, 1/2, 1/6, 5/12, 2/3, 1/3, 0 -> best .2 (TPR 1, FPR 1/3)
# Brier: (.85^2 + .1^2 + .1^2 + .8^2 + .7^2 + .05^2 + .05^2) / 7 = 1.8775 / 7
RECORDS = [
    rec(0, False, 0.85),
    rec(0, True, 0.9),
    rec(0, False, 0.1),
    rec(1, True, 0.2),
    rec(1, True, 0.3),
    rec(1, True, 0.95),
    rec(1, False, 0.05),
    rec(1, False, 1.0, fallback=True),  # left out: it would be a false positive at every threshold
]
SETTINGS = {"backend": "qwen_vl_hf", "model": "/run/tiny", "random_model": True, "plugin": []}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run_dir = tmp_path_factory.mktemp("calibration") / "run"
    summary = summarize(RECORDS)
    add_report_hints(summary["calibration"], run_dir)
    paths = write_report(run_dir, RECORDS, summary, title="calibration", settings=SETTINGS, max_strips=0)
    return {"summary": summary, "paths": paths, "md": paths["markdown"].read_text(), "run_dir": run_dir}


def test_the_summary_holds_the_hand_computed_thresholds(report: dict[str, Any]) -> None:
    cal = json.loads(report["paths"]["summary"].read_text())["calibration"]
    assert (cal["n"], cal["n_success"], cal["n_failure"]) == (7, 4, 3)
    assert cal["best_f1"] == pytest.approx({"threshold": 0.2, "f1": 8 / 9, "precision": 0.8, "recall": 1.0})
    assert cal["best_youden"] == pytest.approx({"threshold": 0.2, "j": 2 / 3, "tpr": 1.0, "fpr": 1 / 3})
    assert cal["brier"] == pytest.approx(1.8775 / 7)
    assert [p[2] for p in cal["roc"]] == [0.95, 0.9, 0.85, 0.3, 0.2, 0.1, 0.05]
    command = f"bash examples/embodiment/scripts/evaluate_reward_model.sh report {report['run_dir']}"
    assert cal["report_at_best_f1"] == f"{command} --threshold 0.2"
    assert cal["report_at_best_youden"] == cal["report_at_best_f1"]
    assert cal["undefined"] == {}


def test_the_report_shows_the_thresholds_the_command_and_both_plots(report: dict[str, Any]) -> None:
    md, cal = report["md"], report["summary"]["calibration"]
    section = md[md.index("## Calibration and thresholds") :]
    assert "| judged episodes (native successes / failures) | 7 (4 / 3) |" in section
    assert "| threshold of the best F1 | 0.2: F1 0.889, precision 0.800, recall 1.000 |" in section
    assert "| threshold of the best Youden's J = TPR - FPR | 0.2: J 0.667, TPR 1.000, FPR 0.333 |" in section
    assert "| Brier score: mean (score - native)^2 | 0.268 |" in section
    assert "| threshold in use 0.5 | F1 0.571 |" in section  # at 0.5: tp 2, fp 1, fn 2 -> 4/7
    assert f"- at the best F1: {cal['report_at_best_f1']}" in section
    assert (
        "![ROC curve](plots/roc.png)" in section
        and "![reliability diagram](plots/reliability.png)" in section
    )
    # bins: [0, .1) .05 F; [.1, .2) .1 F; [.2, .3) .2 T; [.3, .4) .3 T; [.8, .9) .85 F; [.9, 1] .9 T, .95 T
    assert "| [0.9, 1.0] | 2 | 0.925 | 100.0% |" in section and "| [0.8, 0.9) | 1 | 0.850 | 0.0% |" in section


def test_the_terminal_lines_name_the_best_thresholds(report: dict[str, Any]) -> None:
    cal = report["summary"]["calibration"]
    assert calibration_lines(report["summary"]) == [
        # AUROC: .95 and .9 beat the 3 failures, .3 and .2 beat 2 of them: 10/12
        "calibration: AUROC 0.833, Brier 0.268",
        f"best F1 0.889 at threshold 0.2; report at it: {cal['report_at_best_f1']}",
        f"best Youden's J 0.667 at threshold 0.2; report at it: {cal['report_at_best_youden']}",
    ]


def test_one_class_shows_na_with_the_reason_and_no_roc(tmp_path: Path) -> None:
    records = [rec(0, True, 0.9), rec(0, True, 0.4)]
    summary = summarize(records)
    add_report_hints(summary["calibration"], tmp_path)
    paths = write_report(tmp_path, records, summary, title="one class")
    md = paths["markdown"].read_text()
    why = "n/a (no native failure among the 2 judged episodes)"
    assert f"| AUROC (area under the ROC curve) | {why} |" in md
    assert f"| threshold of the best Youden's J = TPR - FPR | {why} |" in md
    assert "| threshold of the best F1 | 0.4: F1 1.000, precision 1.000, recall 1.000 |" in md
    assert "roc" not in paths and "reliability" in paths
    assert summary["calibration"]["report_at_best_youden"] is None
    assert calibration_lines(summary)[2] == f"best Youden's J: {why}"


def test_the_threshold_is_written_exactly_and_the_run_dir_quoted() -> None:
    command = report_command(Path("/runs/my run"), 0.46552611765045965)
    assert command.endswith("report '/runs/my run' --threshold 0.46552611765045965")
    assert float(shlex.split(command)[-1]) == 0.46552611765045965


# ----------------------------------------------------------------------------- progress section


def episode(
    index: int, task: int, native: bool, scores: list[float | None], value: float | None, why: str | None
):
    return {
        "log": "vlm_episodes_train_rank0.jsonl",
        "record": index,
        "task_id": task,
        "task_text": f"task {task}",
        "trial_id": index,
        "native_success": native,
        "prefix_frames": [4, 8][: len(scores)],
        "scores": scores,
        "fallbacks": sum(s is None for s in scores),
        "voc": value,
        "voc_undefined": why,
    }


def test_progress_section_shows_each_mean_and_why_a_voc_is_na(tmp_path: Path) -> None:
    episodes = [
        episode(0, 0, True, [0.2, 0.7], 1.0, None),
        episode(1, 0, False, [0.4, 0.4], None, CONSTANT),
        episode(2, 1, False, [0.5, None], None, FEW_PREFIXES),
    ]
    progress = {
        **summarize_progress(episodes, 2),
        "episodes_file": "voc_episodes.jsonl",
        "episodes": episodes,
    }
    records = [rec(0, True, 0.7), rec(0, False, 0.4), rec(1, False, 0.5)]
    summary = {**summarize(records), "progress": progress}
    paths = write_report(tmp_path, records, summary, title="prefixes")
    md = paths["markdown"].read_text()
    section = md[md.index("## Progress order (VOC)") :]
    assert "(K = 2; repeated prefixes" in section and "6 calls, 1 of them failed (fallback)" in section
    assert "| overall |  | 1.000 (1/1) | n/a (0/2 with a VOC) | 1.000 (1/3) |" in section
    assert (
        f"| 1 | task 1 | n/a (no episode) | n/a (0/1 with a VOC) | n/a (0/1 with a VOC) | {FEW_PREFIXES}: 1 |"
        in section
    )
    assert (
        f"| vlm_episodes_train_rank0.jsonl:1 | 0 | 1 | failure | 4, 8 | 0.400, 0.400 | n/a ({CONSTANT}) |"
        in section
    )
    assert "| vlm_episodes_train_rank0.jsonl:2 | 1 | 2 | failure | 4, 8 | 0.500, fallback |" in section
    assert paths["progress_curves"].is_file()
    assert progress_lines(summary) == [
        "progress order (--prefixes 2, 6 calls, 1 fallbacks): mean VOC native success 1.000 (1/1), "
        "native failure n/a (0/2 with a VOC)"
    ]


def test_progress_section_lists_at_most_max_episode_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_report, "MAX_EPISODE_ROWS", 2)
    episodes = [episode(i, 0, True, [0.1, 0.2], 1.0, None) for i in range(3)]
    progress = {
        **summarize_progress(episodes, 2),
        "episodes_file": "voc_episodes.jsonl",
        "episodes": episodes,
    }
    records = [rec(0, True, 0.2)] * 3
    paths = write_report(tmp_path, records, {**summarize(records), "progress": progress}, title="cap")
    md = paths["markdown"].read_text()
    assert "vlm_episodes_train_rank0.jsonl:1 |" in md and "vlm_episodes_train_rank0.jsonl:2 |" not in md
    assert "1 more episode(s) in voc_episodes.jsonl." in md
