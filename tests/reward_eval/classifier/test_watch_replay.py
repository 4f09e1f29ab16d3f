"""Judged episodes replayed through the live watch: the constant judges are caught. Milliseconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from reward_eval.classifier.watch_replay import main, replays, table
from vlm_reward.client.episode_log import episode_log_path, write_episode_log
from vlm_reward.client.episode_record import EpisodeRecord


def judged_run(root: Path, outcomes: list[tuple[bool, float]]) -> Path:
    records = [
        EpisodeRecord.from_json(
            {"task_id": i % 3, "native_success": native, "vlm_score": score, "success_threshold": 0.5,
             "judge_backend": "resnet", "judge_model": "basket"}
        )
        for i, (native, score) in enumerate(outcomes)
    ]  # fmt: skip
    write_episode_log(episode_log_path(str(root), "eval", 0), records)
    return root


def test_a_good_judge_stays_quiet_always_yes_trips_always_no_recalls_nothing(tmp_path: Path) -> None:
    outcomes = [(True, 0.9), (False, 0.1)] * 12 + [(False, 0.8)]  # one false positive in 13 failures
    rows = {r.judge: r for r in replays(judged_run(tmp_path, outcomes), min_episodes=10)}
    assert rows["resnet"].false_positive_rate == pytest.approx(1 / 13) and rows["resnet"].tripped_at is None
    assert rows["resnet"].success_recall == 1.0
    assert rows["always-yes"].false_positive_rate == 1.0
    assert rows["always-yes"].tripped_at == 20  # the 10th native failure: the guard's min_episodes
    assert rows["always-no"].success_recall == 0.0 and rows["always-no"].tripped_at is None
    assert "| always-yes | 25 | 1.000 | 1.000 | tripped at episode 20 |" in table(list(rows.values()))


def test_a_run_without_judged_episodes_is_refused_in_one_sentence(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "empty")])
    assert exit_.value.code == 2 and "holds no judged episode to replay" in capsys.readouterr().err
