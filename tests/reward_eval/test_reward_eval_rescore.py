"""``reward_eval rescore``: a run's kept videos scored again by another judge, through real servers.

- Same backend and model (``qwen_vl_hf`` on the tiny checkpoint) as the session's LIBERO
  run: the same answers come back (greedy decoding), so the same scores.
- Another threshold: a ``fixed_score`` server (known answer) on a source run built with the
  env's own record writer and real MP4s, so ``vlm_success`` is known for each threshold.
- ``RewardClient.score_video``, the client call the command uses.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from reward_eval.commands import rescore
from tests.reward_eval.conftest import EvalRun
from tests.support.server import ServerProcess, free_port
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import RewardClient, ScoreResult
from vlm_reward.verdict import JUDGE_KEYS

ANSWER = 0.7  # what the fixed_score server answers in these tests


def _records(run_dir: Path) -> list[dict]:
    [log] = run_dir.glob("vlm_episodes_*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def source_run(tmp_path: Path, sample_mp4: str) -> Path:
    """A run dir of 3 episodes (native: success, failure, success) with kept videos."""
    run_dir = tmp_path / "source"
    (run_dir / "videos").mkdir(parents=True)
    cfg = RewardModelConfig(success_threshold=0.5, use_for_training=False)
    lines = []
    for i, native in enumerate([True, False, True]):
        video = run_dir / "videos" / f"episode_{i}.mp4"
        shutil.copy(sample_mp4, video)
        result = ScoreResult(0.1, 0.1, "0.1", 0.2, False, video_path=str(video), num_frames_sent=16)
        meta = {"task_id": i % 2, "task_text": f"task {i % 2}", "trial_id": i, "episode_length": 20 + i}
        lines.append(json.dumps(EpisodeRecord.judged(meta, result, native, cfg).to_json()))
    (run_dir / "vlm_episodes_train_rank0.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


@pytest.mark.libero
@pytest.mark.slow
def test_same_backend_and_model_reproduce_the_scores(
    reward_eval_run: EvalRun, tiny_qwen_checkpoint: str, tmp_path: Path
) -> None:
    assert reward_eval_run.returncode == 0, reward_eval_run.stderr[-3000:]
    out = tmp_path / "rescored"
    args = ["--backend", "qwen_vl_hf", "--model", tiny_qwen_checkpoint, "--out", str(out)]
    assert rescore.main([str(reward_eval_run.run_dir), *args]) == 0
    before, after = _records(reward_eval_run.run_dir), _records(out)
    assert len(after) == len(before) > 0
    for old, new in zip(before, after, strict=True):
        for key in ("task_id", "trial_id", "reset_state_id", "native_success", "video_path", "frames_sent"):
            assert new[key] == old[key], key
        for key in ("vlm_score", "vlm_success", "fallback", "error_kind", "vlm_raw_value", "vlm_answer"):
            assert new[key] == old[key], key
        # Pinned (see test_job_scores_every_episode_and_writes_the_report): judged, answer "no".
        assert (new["fallback"], new["vlm_answer"], new["error"]) == (False, "no", None)
    assert (out / "report.html").is_file() and (out / "summary.json").is_file()
    assert json.loads((out / "settings.json").read_text())["source"] == str(reward_eval_run.run_dir)


@pytest.mark.slow
def test_another_threshold_changes_only_vlm_success(source_run: Path, tmp_path: Path) -> None:
    server = ServerProcess(
        ["--backend", "fixed_score", "--model", "none", "--video-root", str(source_run)],
        tmp_path / "server.log",
        plugins=("tests.support.fake_backends",),
    ).wait_ready()
    runs = {}
    try:
        for threshold in ("0.5", "0.9"):
            out = tmp_path / f"t{threshold}"
            extra = ["--backend-kwargs", json.dumps({"answer": f"<answer>{ANSWER}</answer>"})]
            argv = [str(source_run), "--endpoint", server.endpoint, "--backend", "fixed_score", *extra]
            assert rescore.main([*argv, "--threshold", threshold, "--out", str(out)]) == 0
            runs[float(threshold)] = out
    finally:
        server.stop()
    source = _records(source_run)
    for threshold, out in runs.items():
        records = _records(out)
        assert [r["vlm_score"] for r in records] == [ANSWER] * len(source)
        assert [r["vlm_success"] for r in records] == [threshold <= ANSWER] * len(source)
        assert [r["native_success"] for r in records] == [r["native_success"] for r in source]
        assert [r["episode_length"] for r in records] == [r["episode_length"] for r in source]
        assert all(r["success_threshold"] == threshold and not r["fallback"] for r in records)
        judge = set(JUDGE_KEYS)  # the rescoring judge (fixed_score) asks no prompt of the project's
        assert set(records[0]) - judge == set(source[0]) - judge, "same record format as the env writes"
        assert (records[0]["judge_backend"], records[0]["judge_model"]) == ("fixed_score", "none")
        summary = json.loads((out / "summary.json").read_text())
        assert summary["overall"]["vlm_success_rate"] == float(threshold <= ANSWER)


@pytest.mark.slow
def test_rescore_starts_its_own_server_with_a_plugin_and_inherits_the_threshold(
    source_run: Path, tmp_path: Path, capsys
) -> None:
    # The source run says it was scored by a random model "none": re-scoring with it keeps the warning.
    (source_run / "settings.json").write_text(json.dumps({"random_model": True, "model": "none"}))
    out = tmp_path / "rescored"
    argv = [str(source_run), "--plugin", "tests.support.fake_backends", "--backend", "fixed_score"]
    argv += ["--model", "none", "--server-kwargs", json.dumps({"answer": "<answer>0.4</answer>"})]
    assert rescore.main([*argv, "--continuous", "--out", str(out)]) == 0
    records = _records(out)
    assert [r["vlm_score"] for r in records] == [0.4] * 3
    assert all(r["success_threshold"] == 0.5 and r["vlm_success"] is False for r in records)
    assert all(r["binary_reward"] is False for r in records)
    assert "POST /score" in (out / "reward_server.log").read_text()
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    assert json.loads((out / "settings.json").read_text())["random_model"] is True
    assert "random-weight model" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda run: shutil.rmtree(run / "videos"), "3 of 3 episodes .* have no kept video .*--keep-videos"),
        (lambda run: (run / "vlm_episodes_train_rank0.jsonl").unlink(), "holds no vlm_episodes_"),
        (
            lambda run: (run / "vlm_episodes_train_rank0.jsonl").write_text(""),
            "holds no episodes to re-score",
        ),
    ],
    ids=["videos-deleted", "no-episode-log", "empty-episode-log"],
)
def test_a_source_without_videos_or_log_is_an_argparse_error(
    source_run: Path, damage, message: str, capsys
) -> None:
    damage(source_run)
    with pytest.raises(SystemExit) as exc:
        rescore.parse_args([str(source_run), "--endpoint", "http://127.0.0.1:1/score"])
    assert exc.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_score_video_falls_back_and_keeps_the_file(sample_mp4: str, tmp_path: Path) -> None:
    cfg = RewardModelConfig(endpoint=f"http://127.0.0.1:{free_port()}/score", max_retries=0)
    client = RewardClient(cfg)
    try:
        result = client.score_video("a task", sample_mp4, 16, native_success=True)
    finally:
        client.close()
    assert result.fallback and result.error_kind == "connection" and result.score == 1.0
    assert result.video_path == sample_mp4 and Path(sample_mp4).is_file()
    assert result.num_frames_sent == 16


def test_an_unreachable_endpoint_is_exit_status_1_with_the_url(
    source_run: Path, tmp_path: Path, capsys
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/score"
    assert rescore.main([str(source_run), "--endpoint", endpoint, "--out", str(tmp_path / "out")]) == 1
    assert (
        f"the reward server is not reachable at {endpoint.replace('/score', '/health')}"
        in capsys.readouterr().err
    )
    assert not list((tmp_path / "out").glob("vlm_episodes_*.jsonl")), "nothing scored, no episode log"
