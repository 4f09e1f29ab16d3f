"""Two judges of the same episodes side by side, as the main job prints them last. Milliseconds."""

from __future__ import annotations

import json
from pathlib import Path

from reward_eval.analysis.frame_progress import GOAL_FRACTION, summarize_frame_progress
from reward_eval.analysis.metrics import summarize
from reward_eval.report.side_by_side import main, separates, table
from vlm_reward.client.episode_log import episode_log_path, write_episode_log
from vlm_reward.client.episode_record import EpisodeRecord

NATIVE = [True, False, True, False]
GOAL = [[0.0, 0.5, 1.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]


def judged(
    root: Path,
    backend: str,
    scores: list[float],
    audit_rows: dict[str, float] | None,
    frames: list[list[float]] | None = None,
    prefix_voc: float | None = None,
) -> Path:
    root.mkdir()
    records = [
        EpisodeRecord.from_json(
            {"task_id": i // 2, "native_success": n, "vlm_score": s, "success_threshold": 0.5,
             "judge_backend": backend, "judge_model": "m", "score_mode": "probability",
             **({} if frames is None else {"frame_scores": frames[i], GOAL_FRACTION: GOAL[i]})}
        )
        for i, (n, s) in enumerate(zip(NATIVE, scores, strict=True))
    ]  # fmt: skip
    write_episode_log(episode_log_path(str(root), "eval", 0), records)
    summary = summarize(records)
    if frames is not None:
        summary["frame_progress"] = summarize_frame_progress(records)
    if prefix_voc is not None:
        summary["progress"] = {
            "overall": {"native_success": {"mean_voc": prefix_voc}, "native_failure": {"mean_voc": None}}
        }
    (root / "summary.json").write_text(json.dumps(summary))
    if audit_rows is not None:
        (root / "audit").mkdir()
        rows = {name: {"positive_rate": rate} for name, rate in audit_rows.items()}
        (root / "audit" / "audit.json").write_text(json.dumps({"rows": rows}))
    return root


def test_one_row_per_judge_with_its_verdict_and_audit(tmp_path: Path, capsys) -> None:
    vlm = judged(tmp_path / "vlm", "qwen_vl_hf", [0.48, 0.47, 0.46, 0.49], {"original": 0.0, "frozen": 0.0})
    resnet = judged(tmp_path / "resnet", "resnet", [0.99, 0.01, 0.97, 0.02], {"original": 1.0, "frozen": 0.0})
    assert (separates(vlm), separates(resnet)) == (False, True)
    lines = table([vlm, resnet]).splitlines()
    assert lines[1].split()[:2] == ["judge", "n"]
    assert "qwen_vl_hf on m" in lines[2] and "does not separate" in lines[2]
    assert "resnet on m" in lines[3] and "separates" in lines[3] and "100.0%" in lines[3]
    assert main([str(vlm), str(resnet)]) == 0 and "resnet on m" in capsys.readouterr().out


def test_a_run_dir_without_a_summary_is_refused(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path), str(tmp_path)]) == 2
    assert "holds no summary.json" in capsys.readouterr().err


def columns(lines: list[str]) -> list[dict[str, str]]:
    """The rows of an aligned table as {header: cell}, cut at the columns' starts in the header line."""
    names = [name.strip() for name in lines[0].split("  ") if name.strip()]
    starts = [lines[0].index(name) for name in names] + [None]
    return [
        {name: row[a:b].strip() for name, a, b in zip(names, starts[:-1], starts[1:], strict=True)}
        for row in lines[1:]
    ]


def test_progress_columns_for_every_judge_once_one_measured_progress(tmp_path: Path) -> None:
    """The progress judge has frame scores and prefix VOCs, the VLM only its episode scores: each
    gets every column, ``-`` where it has no such measure; both have their ends above the failures'."""
    frames = [[0.0, 0.5, 1.0], [0.0, 0.5, 0.5], [0.0, 0.1, 0.9], [0.1, 0.0, 0.0]]
    progress = judged(tmp_path / "p", "resnet", [1.0, 0.5, 0.9, 0.0], None, frames, prefix_voc=0.875)
    vlm = judged(tmp_path / "vlm", "qwen_vl_hf", [0.48, 0.47, 0.46, 0.49], None)
    cells = columns(table([progress, vlm]).splitlines()[1:])
    assert cells[0]["prefix VOC | success"] == "0.875" and cells[1]["prefix VOC | success"] == "-"
    assert (cells[0]["prefix VOC | failure"], cells[1]["prefix VOC | failure"]) == ("n/a", "-")
    assert cells[0]["frame VOC | success"] == "1.000 (2/2)" and cells[1]["Pearson (goal)"] == "-"
    assert cells[0]["Pearson (goal)"].endswith("(12)") and float(cells[0]["Pearson (goal)"][:5]) > 0.9
    # failures' median end score 0.25 (resnet: 0.5, 0.0) and 0.48 (vlm: 0.47, 0.49)
    assert cells[0]["ends above failures"] == "2/2 (median 0.250)"
    assert cells[1]["ends above failures"] == "0/2 (median 0.480)"
    assert "Pearson (goal)" not in table([vlm, vlm])  # no run measured progress: the table as before
