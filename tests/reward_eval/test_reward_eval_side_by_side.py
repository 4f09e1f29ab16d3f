"""Two judges of the same episodes side by side, as the main job prints them last. Milliseconds."""

from __future__ import annotations

import json
from pathlib import Path

from reward_eval.analysis.metrics import summarize
from reward_eval.report.side_by_side import main, separates, table
from vlm_reward.client.episode_log import episode_log_path, write_episode_log
from vlm_reward.client.episode_record import EpisodeRecord

NATIVE = [True, False, True, False]


def judged(root: Path, backend: str, scores: list[float], audit_rows: dict[str, float] | None) -> Path:
    root.mkdir()
    records = [
        EpisodeRecord.from_json(
            {"task_id": i // 2, "native_success": n, "vlm_score": s, "success_threshold": 0.5,
             "judge_backend": backend, "judge_model": "m", "score_mode": "probability"}
        )
        for i, (n, s) in enumerate(zip(NATIVE, scores, strict=True))
    ]  # fmt: skip
    write_episode_log(episode_log_path(str(root), "eval", 0), records)
    (root / "summary.json").write_text(json.dumps(summarize(records)))
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
