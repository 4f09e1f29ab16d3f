"""A labelled set's split as a run dir that the judge tools read. Milliseconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from reward_eval.analysis.episode_log import episode_logs, kept_episodes
from reward_eval.analysis.frame_progress import GOAL_FRACTION
from reward_eval.classifier.labelled_run import NOT_JUDGED, main, write_run
from reward_eval.classifier.labelled_set import LabelledEpisode, LabelledFrames, load_set, write_manifest
from reward_eval.job.settings import RunSettings


def labelled(root: Path) -> Path:
    episodes = []
    for i, (split, success) in enumerate([("train", True), ("held_out", True), ("held_out", False)]):
        frames = LabelledFrames(f"v{i}.mp4", (0, 9), (False, success), (0.0, 1.0 if success else 0.5))
        episodes.append(
            LabelledEpisode(7, "put both in the basket", 10 + i, "expert", {}, i, success, 9, split, frames)
        )
        (root / frames.video).write_bytes(b"")
    write_manifest(root, episodes, {"suite": "libero_10"})
    return root


def test_the_split_becomes_a_run_of_kept_videos_none_judged(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = labelled(tmp_path / "data")
    write_run(load_set(data), "held_out", tmp_path / "run")
    kept = kept_episodes(episode_logs(tmp_path / "run"))
    assert [(e.record.trial_id, e.record.native_success) for e in kept] == [(11, True), (12, False)]
    assert all(e.record.fallback and e.record.error_kind == NOT_JUDGED for e in kept)
    assert all(e.record.frames_sent == 2 and Path(e.video).is_absolute() for e in kept)
    # the simulator's progress of each frame sent, kept as the episode's (a rescore copies it)
    assert [e.record.meta[GOAL_FRACTION] for e in kept] == [[0.0, 1.0], [0.0, 0.5]]
    assert RunSettings.read(tmp_path / "run").command == "labelled-run"


def test_a_second_run_into_the_same_dir_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "data").mkdir()
    data = labelled(tmp_path / "data")
    assert main([str(data), "--out", str(tmp_path / "run")]) == 0
    with pytest.raises(SystemExit) as exit_:
        main([str(data), "--out", str(tmp_path / "run")])
    assert exit_.value.code == 2 and "already holds an episode log" in capsys.readouterr().err
