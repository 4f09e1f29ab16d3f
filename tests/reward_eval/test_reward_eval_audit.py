"""``reward_eval audit`` end to end, ``report`` at another threshold, and the bad inputs.

The judge is a real reward server process the command starts, running the
``square_position`` test backend (``tests/support/frame_backends.py``): it answers the red
square's position in the last frame, whatever the instruction. So every score of the audit is
known from the frames alone: a success (the square slid across) scores 1, its reversed and
frozen counterfactuals end where it started (0), a clipped one ends halfway, a shuffled one
wherever its seeded last frame is, and wrong_task scores as the success does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reward_eval.commands import audit as audit_cmd
from reward_eval.commands import report as report_cmd
from tests.conftest import moving_square_frames
from tests.reward_eval.conftest import run_reward_eval
from tests.support.browser import HeadlessChromium, broken_links, require_chromium
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import ScoreResult
from vlm_reward.video_io import encode_mp4

JUDGE = ["--plugin", "tests.support.frame_backends", "--backend", "square_position", "--model", "none"]


def still(n: int) -> np.ndarray:
    """``n`` copies of the first frame: the square never moves."""
    return moving_square_frames(16)[:1].repeat(n, axis=0)


# (task, native success, frames of the kept video; None: not a video)
EPISODES = [
    (0, True, moving_square_frames(16)),
    (0, True, moving_square_frames(12)),
    (1, True, moving_square_frames(10)),
    (1, True, still(4)),  # a success the judge misses (square never moved): 0 everywhere
    (0, False, moving_square_frames(16)[:8]),  # stopped halfway: 0.5, a false positive at 0.5
    (1, False, still(6)),
    (1, False, None),  # unreadable: left out, listed
]
# Per row, the score of each case in episode order (hand-derived from the frames above):
# clipped keeps T // 2 frames: 16 -> 8 frames ends at x 22/48 -> 0.5; 12 -> 6: 21/48 -> 0.4;
# 10 -> 5: 21/48 -> 0.4. Shuffled: the last frame of np.random.default_rng([0, i]).permutation(T).
SCORES = {
    "original": [1.0, 1.0, 1.0, 0.0],
    "reversed": [0.0, 0.0, 0.0, 0.0],
    "frozen": [0.0, 0.0, 0.0, 0.0],
    "clipped": [0.5, 0.4, 0.4, 0.0],
    "shuffled": [1.0, 0.4, 1.0, 0.0],
    "wrong_task": [1.0, 1.0, 1.0, 0.0],
    "failure": [0.5, 0.0],
}
# False-positive rate (judged success, score >= 0.5) per row; mean drop from the original.
RATES = {
    "original": 0.75,
    "reversed": 0.0,
    "frozen": 0.0,
    "clipped": 0.25,
    "shuffled": 0.5,
    "wrong_task": 0.75,
    "failure": 0.5,
}
DROPS = {"reversed": 0.75, "frozen": 0.75, "clipped": 0.425, "shuffled": 0.15, "wrong_task": 0.0}


def write_run(run_dir: Path, episodes: list[tuple[int, bool, np.ndarray | None]], keep: bool = True) -> Path:
    """A run dir whose records and kept videos are ``episodes``, as the env writes them."""
    (run_dir / "videos").mkdir(parents=True)
    cfg = RewardModelConfig(success_threshold=0.5, use_for_training=False)
    lines = []
    for i, (task, native, frames) in enumerate(episodes):
        video = run_dir / "videos" / f"episode_{i}.mp4"
        if frames is None:
            video.write_bytes(b"not a video")
        elif keep:
            encode_mp4(frames, video, fps=4)
        sent = 16 if frames is None else len(frames)
        result = ScoreResult(0.5, 0.5, "0.5", 0.1, False, video_path=str(video), num_frames_sent=sent)
        meta = {"task_id": task, "task_text": f"task {task}", "trial_id": i}
        lines.append(json.dumps(EpisodeRecord.judged(meta, result, native, cfg).to_json()))
    (run_dir / "vlm_episodes_train_rank0.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The source run audited once with ``--fail-above 0.5``; status, output and audit.json."""
    run_dir = write_run(tmp_path_factory.mktemp("audit") / "run", EPISODES)
    result = run_reward_eval("audit", str(run_dir), *JUDGE, "--fail-above", "0.5", timeout=300)
    audit = json.loads((run_dir / "audit" / "audit.json").read_text())
    return {"run_dir": run_dir, "result": result, "audit": audit}


@pytest.mark.slow
def test_every_case_and_rate_is_pinned(audited: dict[str, Any]) -> None:
    audit = audited["audit"]
    got = {name: [c["score"] for c in audit["cases"] if c["perturbation"] == name] for name in audit["rows"]}
    assert got == SCORES
    assert {name: row["positive_rate"] for name, row in audit["rows"].items()} == RATES
    drops = {name: row["mean_drop"] for name, row in audit["rows"].items() if name in DROPS}
    assert drops == pytest.approx(DROPS, abs=1e-12)
    assert (audit["calls"], audit["fallback_calls"], audit["threshold"]) == (26, 0, 0.5)
    assert audit["per_task"]["1"]["rows"]["clipped"]["positive_rate"] == 0.0  # 0.4 and 0.0
    assert audit["per_task"]["0"]["rows"]["clipped"]["positive_rate"] == 0.5  # 0.5 and 0.4
    # wrong_task judged each task's successes against the other task's instruction
    wrong = [
        (c["task_id"], c["judged_task_text"]) for c in audit["cases"] if c["perturbation"] == "wrong_task"
    ]
    assert wrong == [(0, "task 1"), (0, "task 1"), (1, "task 0"), (1, "task 0")]
    assert [c["frames"] for c in audit["cases"] if c["perturbation"] == "clipped"] == [8, 6, 5, 2]
    [lost] = audit["unreadable"]
    assert lost["record"] == 6 and "not a readable video" in lost["error"]


@pytest.mark.slow
def test_fail_above_gates_with_status_4_after_writing_the_report(audited: dict[str, Any]) -> None:
    result, run_dir = audited["result"], audited["run_dir"]
    assert result.returncode == 4, result.stderr[-3000:]
    assert "audit failed: false-positive rate above 0.5: wrong_task 0.750" in result.stderr
    assert "audit: 26 calls for 7 episodes" in result.stderr and "audit: 100%" in result.stderr  # the bar
    assert "Traceback" not in result.stderr
    md = (run_dir / "audit" / "report.md").read_text()
    assert "| shuffled | The success's frames in a seeded random order" in md
    assert "| 4 | 4 | 50.0% | 0.600 | 0.150 |" in md
    strips = sorted(p.name for p in (run_dir / "audit" / "strips").iterdir())
    assert strips == sorted(f"{n}_{k}.png" for n in SCORES if n != "original" for k in (0, 1))
    assert not list((run_dir / "audit").glob(".audit-videos-*")), "the counterfactual videos are removed"


@pytest.mark.slow
def test_report_recounts_the_audit_at_another_threshold_without_a_judge(
    audited: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "at-0.4"
    assert report_cmd.main([str(audited["run_dir"]), "--threshold", "0.4", "--out", str(out)]) == 0
    audit = json.loads((out / "audit" / "audit.json").read_text())
    rates = {name: row["positive_rate"] for name, row in audit["rows"].items()}
    assert rates == {**RATES, "clipped": 0.75, "shuffled": 0.75}  # 0.4 >= 0.4 now
    assert audit["wall_s"] is None and audited["audit"]["wall_s"] > 0, "timed only where calls were made"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["threshold"] == 0.4 and summary["audit"]["rows"]["clipped"]["positive_rate"] == 0.75
    assert not (out / "reward_server.log").exists(), "no judge was started"
    records = [json.loads(line) for line in (out / "vlm_episodes_train_rank0.jsonl").read_text().splitlines()]
    assert {r["success_threshold"] for r in records} == {0.4}
    assert (out / "audit" / "strips" / "shuffled_0.png").is_file()
    assert "](audit/strips/shuffled_0.png)" in (out / "report.md").read_text()


BAD_INPUTS = [
    ("no-episode-log", lambda d: d.mkdir(), "holds no vlm_episodes_*.jsonl episode log"),
    ("no-kept-video", lambda d: write_run(d, EPISODES[:2], keep=False), "has no kept video"),
    ("no-native-success", lambda d: write_run(d, EPISODES[4:6]), "none of the 2 kept episodes"),
    (
        "success-unreadable",
        lambda d: write_run(d, [(0, True, None), EPISODES[5]]),
        "no video of a native success",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("make", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_a_run_that_cannot_be_audited_is_status_3_with_one_line(
    make: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make(tmp_path / "run")
    assert audit_cmd.main([str(tmp_path / "run"), *JUDGE]) == audit_cmd.EXIT_CANNOT_AUDIT
    err = capsys.readouterr().err
    assert "[reward-eval] cannot audit: " in err and message in err


@pytest.mark.slow
def test_the_reports_load_cleanly_in_a_real_browser(audited: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "rendered"  # the full run report, the audit section included
    assert report_cmd.main([str(audited["run_dir"]), "--out", str(out)]) == 0
    pages = [out / "report.html", out / "audit" / "report.html", audited["run_dir"] / "audit" / "report.html"]
    with HeadlessChromium(require_chromium()) as browser:
        checks = [browser.check(page.as_uri()) for page in pages]
    for page, check in zip(pages, checks, strict=True):
        assert (check.broken_images, check.console_errors, check.failed_requests) == ([], [], []), page
        assert broken_links(check, page.parent) == [], page
    assert checks[0].links == [(out / "audit" / "report.html").as_uri()], "the run report links the audit's"
    assert "](audit/strips/wrong_task_0.png)" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d.mkdir(), "holds no vlm_episodes_*.jsonl episode log"),
        (lambda d: write_run(d, EPISODES[:1]), "already holds an episode log"),  # --out = the source
    ],
    ids=["no-episode-log", "out-holds-a-log"],
)
def test_report_of_a_dir_without_a_log_or_into_a_used_one_is_status_2(
    make: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make(tmp_path / "run")
    with pytest.raises(SystemExit) as exc:
        report_cmd.parse_args([str(tmp_path / "run"), "--out", str(tmp_path / "run")])
    assert exc.value.code == 2 and message in capsys.readouterr().err
