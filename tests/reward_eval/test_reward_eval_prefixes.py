"""``reward_eval rescore --prefixes K`` end to end, and the calibration's rescore command line.

The judge is a real reward server process running the ``frame_table`` test backend
(``tests/support/progress_backends.py``): its score is a table lookup on the task and the
number of frames of the video it decoded, so every prefix's score, every VOC and every
calibration number below is known in advance. The source run has real MP4s of different
lengths, written with the server's own encoder, and one unreadable video.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from reward_eval.analysis.progress import CONSTANT, UNREADABLE
from reward_eval.commands import report as report_cmd
from reward_eval.commands import rescore
from tests.conftest import moving_square_frames
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import ScoreResult
from vlm_reward.video_io import encode_mp4

# task text -> {frame count of the video the server decoded: score}. K = 4 cuts a video of
# 16 frames at 4, 8, 12, 16; of 9 at 3, 5, 7, 9; of 11 at 3, 6, 9, 11; of 2 at 1, 2.
SCORES = {
    "task 0": {
        "4": 0.1,
        "8": 0.4,
        "12": 0.6,
        "16": 0.9,
        "3": 0.9,
        "5": 0.5,
        "7": 0.5,
        "9": 0.1,
        "1": 0.3,
        "2": 0.3,
    },
    "task 1": {
        "4": 0.2,
        "8": 0.6,
        "16": 0.7,
        "3": 0.2,
        "6": 0.6,
        "9": 0.3,
        "11": 0.7,
    },  # no "12": that call fails
}
# (task, native success, frames of the kept video; 0: not a video)
EPISODES = [(0, True, 16), (0, False, 9), (0, True, 2), (1, False, 16), (1, True, 11), (1, False, 0)]
ROOT_TWO = -3 / math.sqrt(10)  # Spearman of 1..4 with 0.9, 0.5, 0.5, 0.1 (see test_reward_eval_progress)
# Per episode: (prefix frames, their scores, VOC, why undefined).
EXPECTED = [
    ([4, 8, 12, 16], [0.1, 0.4, 0.6, 0.9], 1.0, None),
    ([3, 5, 7, 9], [0.9, 0.5, 0.5, 0.1], ROOT_TWO, None),
    ([1, 2], [0.3, 0.3], None, CONSTANT),
    ([4, 8, 12, 16], [0.2, 0.6, None, 0.7], 1.0, None),  # 12 frames: no entry, fallback left out
    ([3, 6, 9, 11], [0.2, 0.6, 0.3, 0.7], 0.8, None),
    ([], [], None, UNREADABLE),
]


def _stats(n: int, n_voc: int, mean: float | None, undefined: dict[str, int]) -> dict[str, Any]:
    approx_mean = pytest.approx(mean, abs=1e-12) if mean is not None else None
    return {"n_episodes": n, "n_voc": n_voc, "mean_voc": approx_mean, "undefined": undefined}


@pytest.fixture
def source_run(tmp_path: Path) -> Path:
    """A run dir whose records and kept videos are those of EPISODES, as the env writes them."""
    run_dir = tmp_path / "source"
    (run_dir / "videos").mkdir(parents=True)
    cfg = RewardModelConfig(success_threshold=0.5, use_for_training=False)
    lines = []
    for i, (task, native, frames) in enumerate(EPISODES):
        video = run_dir / "videos" / f"episode_{i}.mp4"
        if frames:
            encode_mp4(moving_square_frames(frames, 32), video, fps=4)
        else:
            video.write_bytes(b"not a video")
        result = ScoreResult(0.5, 0.5, "0.5", 0.2, False, video_path=str(video), num_frames_sent=frames or 16)
        meta = {"task_id": task, "task_text": f"task {task}", "trial_id": i}
        lines.append(json.dumps(EpisodeRecord.judged(meta, result, native, cfg).to_json()))
    (run_dir / "vlm_episodes_train_rank0.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def _judge(*extra: str) -> list[str]:
    server = ["--plugin", "tests.support.progress_backends", "--model", "none"]
    return [*server, "--server-kwargs", json.dumps({"scores": SCORES}), "--backend", "frame_table", *extra]


@pytest.mark.slow
def test_prefixes_4_pins_every_voc_and_the_rescore_at_the_best_threshold(
    source_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rescored"
    assert rescore.main([str(source_run), *_judge("--prefixes", "4", "--out", str(out))]) == 0
    printed = capsys.readouterr().out
    assert "--prefixes 4: 18 calls for 6 episodes (at most episodes x K = 24;" in printed
    assert not list(out.glob(".prefix-videos-*")), "the prefix videos are removed"

    lines = [json.loads(line) for line in (out / "voc_episodes.jsonl").read_text().splitlines()]
    got = [(e["prefix_frames"], e["scores"], e["voc"], e["voc_undefined"]) for e in lines]
    assert got == [
        (f, s, pytest.approx(v, abs=1e-12) if v is not None else None, r) for f, s, v, r in EXPECTED
    ]
    assert [e["fallbacks"] for e in lines] == [0, 0, 0, 1, 0, 0]
    assert [(e["task_id"], e["native_success"], e["record"]) for e in lines] == [
        (t, n, i) for i, (t, n, _) in enumerate(EPISODES)
    ]
    assert "episode_5.mp4" in lines[5]["video_error"]

    summary = json.loads((out / "summary.json").read_text())
    progress = summary["progress"]
    assert (progress["prefixes"], progress["calls"], progress["fallback_calls"]) == (4, 18, 1)
    assert progress["episodes"] == lines
    assert progress["overall"] == {
        "all": _stats(6, 4, (1.0 + ROOT_TWO + 1.0 + 0.8) / 4, {CONSTANT: 1, UNREADABLE: 1}),
        "native_success": _stats(3, 2, 0.9, {CONSTANT: 1}),  # (1.0 + 0.8) / 2
        "native_failure": _stats(3, 2, (ROOT_TWO + 1.0) / 2, {UNREADABLE: 1}),
    }
    assert progress["per_task"]["0"]["native_success"] == _stats(2, 1, 1.0, {CONSTANT: 1})
    assert progress["per_task"]["0"]["native_failure"] == _stats(1, 1, ROOT_TWO, {})
    assert progress["per_task"]["1"]["native_success"] == _stats(1, 1, 0.8, {})
    assert progress["per_task"]["1"]["native_failure"] == _stats(2, 1, 1.0, {UNREADABLE: 1})
    assert (
        "progress order (--prefixes 4, 18 calls, 1 fallbacks): mean VOC native success 0.900 (2/3)" in printed
    )

    report = (out / "report.md").read_text()
    assert "## Progress order (VOC)" in report
    assert "| overall |  | 0.900 (2/3) | 0.026 (2/3) | 0.463 (4/6) |" in report
    assert (
        "| 1 | task 1 | 0.800 (1/1) | 1.000 (1/2) | 0.900 (2/3) | the kept video could not be read: 1 |"
        in report
    )
    assert (
        "| vlm_episodes_train_rank0.jsonl:3 | 1 | 3 | failure | 4, 8, 12, 16 | "
        "0.200, 0.600, fallback, 0.700 | 1.000 |" in report
    )
    assert (out / "plots" / "progress_curves.png").is_file()

    # The whole videos: A .9, B .1, C .3, D .7, E .7 (judged); F unreadable: a fallback, left out.
    # Sweep (t: tp fp): .9: 1 0 | .7: 2 1 | .3: 3 1 | .1: 3 2 -> F1 1/2, 2/3, 6/7, 3/4; J 1/3, 1/6, 1/2, 0
    cal = summary["calibration"]
    assert cal["best_f1"] == pytest.approx({"threshold": 0.3, "f1": 6 / 7, "precision": 0.75, "recall": 1.0})
    assert cal["best_youden"] == pytest.approx({"threshold": 0.3, "j": 0.5, "tpr": 1.0, "fpr": 0.5})
    script = "bash examples/embodiment/scripts/evaluate_reward_model.sh report"
    assert cal["report_at_best_f1"] == f"{script} {out} --threshold 0.3"
    assert "best F1 0.857 at threshold 0.3; report at it: " + cal["report_at_best_f1"] in printed

    # The printed command line re-renders this run's report at that threshold, no judge call.
    argv = shlex.split(cal["report_at_best_f1"])[3:]
    assert report_cmd.main([*argv, "--out", str(tmp_path / "at-best-f1")]) == 0
    at_best = json.loads((tmp_path / "at-best-f1" / "summary.json").read_text())
    assert at_best["threshold"] == 0.3  # the records' success_threshold, which --threshold set
    assert at_best["overall"]["f1"] == pytest.approx(6 / 7)
    assert "progress" not in at_best


TOO_FEW = "argument --prefixes: must be an integer >= 2 (VOC ranks at least two prefixes of each video), got"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", f"{TOO_FEW} 0"),
        ("1", f"{TOO_FEW} 1"),
        ("four", "argument --prefixes: not an integer: 'four'; give K >= 2, e.g. 4"),
    ],
    ids=["zero", "one", "not-a-number"],
)
def test_a_bad_prefix_count_is_an_argparse_error(
    source_run: Path, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        rescore.parse_args([str(source_run), "--endpoint", "http://127.0.0.1:1/score", "--prefixes", value])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_prefixes_on_a_run_without_kept_videos_is_an_argparse_error(
    source_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for video in (source_run / "videos").iterdir():
        video.unlink()
    with pytest.raises(SystemExit) as exc:
        rescore.parse_args([str(source_run), "--endpoint", "http://127.0.0.1:1/score", "--prefixes", "4"])
    assert exc.value.code == 2
    assert re.search(r"6 of 6 episodes .* have no kept video .*--keep-videos", capsys.readouterr().err)
