"""Episodes a classifier judges on its own training states: found from its checkpoint, said with the
words "trained on" in the run's output, flagged in the tables. Milliseconds but the report's plots
(~2 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reward_eval.analysis.metrics import summarize
from reward_eval.job.run_dir import finish_report
from reward_eval.job.settings import RunSettings
from reward_eval.job.trained_on import trained_on_block, trained_states
from reward_eval.report.side_by_side import table
from reward_eval.report.table import format_table
from reward_eval.report.trained_on import states_text
from vlm_reward.backends.resnet_checkpoint import CONFIG_FILE
from vlm_reward.client.episode_log import episode_log_path, write_episode_log
from vlm_reward.client.episode_record import EpisodeRecord

# (task, trial, native success, score): task 7's two episodes start from training states.
EPISODES = [(0, 0, True, 0.9), (0, 1, False, 0.2), (7, 0, True, 0.8), (7, 1, False, 0.6)]
TRAINED = [[0, 3], [7, 0], [7, 1]]


def checkpoint(root: Path, body: dict) -> Path:
    root.mkdir(parents=True)
    (root / CONFIG_FILE).write_text(json.dumps({"classifier": {}, **body}))
    return root


def records() -> list[EpisodeRecord]:
    return [
        EpisodeRecord.from_json(
            {"task_id": t, "trial_id": k, "native_success": n, "vlm_score": s, "success_threshold": 0.5,
             "task_text": f"task {t}", "judge_backend": "resnet", "judge_model": "ckpt"}
        )
        for t, k, n, s in EPISODES
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "states"),
    [
        (lambda root: checkpoint(root / "new", {"trained_on": TRAINED}), {(0, 3), (7, 0), (7, 1)}),
        # written before train-classifier recorded them: not known, nothing is marked
        (lambda root: checkpoint(root / "old", {"data": str(root / "data")}), None),
        (lambda root: root, None),
    ],
    ids=["recorded", "not-recorded", "not-a-checkpoint"],
)
def test_trained_states_are_what_the_checkpoint_records(tmp_path: Path, make, states) -> None:
    assert trained_states(make(tmp_path)) == states


def test_the_block_names_the_episodes_their_states_and_the_numbers_without_them(tmp_path: Path) -> None:
    ckpt = checkpoint(tmp_path / "c", {"trained_on": TRAINED})
    block = trained_on_block(records(), RunSettings(backend="resnet", model=str(ckpt)))
    assert (block["episodes"], block["states"], block["per_task"]) == ([2, 3], [[7, 0], [7, 1]], {"7": 2})
    assert block["without"] == summarize(records()[:2])["overall"]
    assert states_text([(7, 1), (0, 3), (7, 0)]) == "task 0 trial 3; task 7 trials 0, 1"


@pytest.mark.parametrize(
    "settings",
    [
        RunSettings(backend="qwen_vl_hf", model="CKPT"),
        RunSettings(backend="resnet", model="the server's (--endpoint)"),
        RunSettings(backend="resnet", model="NO_HITS"),
    ],
    ids=["another-backend", "endpoint", "no-episode-on-a-training-state"],
)
def test_nothing_is_marked_without_a_local_classifier_trained_on_them(tmp_path: Path, settings) -> None:
    checkpoint(tmp_path / "c", {"trained_on": TRAINED})
    checkpoint(tmp_path / "n", {"trained_on": [[1, 9]]})
    model = {"CKPT": str(tmp_path / "c"), "NO_HITS": str(tmp_path / "n")}.get(settings.model, settings.model)
    assert trained_on_block(records(), RunSettings(backend=settings.backend, model=model)) is None


def test_the_run_says_trained_on_and_its_tables_flag_them(tmp_path: Path, capsys) -> None:
    ckpt = checkpoint(tmp_path / "c", {"trained_on": TRAINED})
    run = tmp_path / "run"
    run.mkdir()
    write_episode_log(episode_log_path(str(run), "eval", 0), records())
    settings = RunSettings(command="rescore", backend="resnet", model=str(ckpt))
    paths = finish_report(run, settings, "judged")
    out = capsys.readouterr().out
    assert "[reward-eval] trained on: 2 of 4 episodes start from initial states the classifier was " in out
    assert "(task 7 trials 0, 1)" in out and "without them (2 episodes): AUROC 1.000" in out
    lines = out.splitlines()
    assert any(line.startswith("7 *") for line in lines) and any(line.startswith("0 ") for line in lines)
    assert any(line.startswith("not trained on  2") for line in lines)
    assert "* holds episodes the classifier was trained on" in out
    assert "trained on: 2 of 4 episodes" in paths["markdown"].read_text()
    summary = json.loads(paths["summary"].read_text())
    assert summary["trained_on"]["episodes"] == [2, 3]
    (other := tmp_path / "other").mkdir()
    write_episode_log(episode_log_path(str(other), "eval", 0), records())
    (other / "summary.json").write_text(json.dumps(summarize(records())))
    header, flagged, plain = table([run, other]).splitlines()[1:]
    assert "trained on" in header and "2 of 4" in flagged and "2 of 4" not in plain


def test_a_summary_without_trained_on_episodes_prints_no_flag() -> None:
    text = format_table(summarize(records()))
    assert "*" not in text and "trained on" not in text
