"""scripts/make_classifier_data.py on a handful of states: the real simulator, labels checked
against LIBERO's own success check at each kept frame's state (in a child process:
:mod:`tests.support.labelled_episodes` says why)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reward_eval.classifier.labelled_set import RESERVED_STATES, LabelledEpisode, check_split, choose_held_out
from reward_eval.libero_task import SAMPLED_TRIAL0
from tests.support.server import REPO

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[LabelledEpisode], dict]:
    out = tmp_path_factory.mktemp("classifier-data")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    command = [sys.executable, "-m", "tests.support.labelled_episodes", str(out)]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    check = json.loads((out / "check.json").read_text())
    return out, [LabelledEpisode.from_json(e) for e in check["episodes"]], check


def test_variants_are_what_the_trials_say(made) -> None:
    _, (success, failure, _), _ = made
    assert (success.policy, failure.policy) == ("expert", "random")
    assert (success.variant, failure.variant) == ("expert", "random")
    assert success.native_success and not failure.native_success
    assert success.after is not None and failure.after is None
    assert failure.episode_length == 40


def test_to_horizon_plays_a_success_on_to_the_step_limit_and_serves_all_of_it(made) -> None:
    """The judge-only runs' episodes: a success does not end the episode; the served frames span
    it to the limit, and the goal still holds there."""
    _, (success, _, horizon), _ = made
    assert horizon.variant == "expert" and horizon.native_success
    assert (horizon.episode_length, horizon.after) == (400, None)
    assert horizon.served.steps[0] == 0 and horizon.served.steps[-1] == 400
    assert horizon.served.success[-1] and not horizon.served.success[0]
    assert success.episode_length < 400, "the same expert's success ends its episode without --to-horizon"


def test_a_sampled_state_is_none_of_liberos_and_the_same_when_drawn_again(made) -> None:
    _, (_, failure, _), check = made
    assert failure.trial_id >= SAMPLED_TRIAL0
    assert check["sampled"]["redrawn"] == 0.0
    assert check["sampled"]["to_libero"] > 1e-3, "LIBERO's states differ from each other by ~0.06"


def test_every_label_is_the_simulators_success_at_that_frames_state(made) -> None:
    """Replayed from its seed (the set is reproducible), each kept step's state is set in the
    camera env and LIBERO's own ``_check_success`` asked again."""
    _, episodes, check = made
    assert [e["replayed_end"] for e in check["episodes"]] == [e.episode_length for e in episodes]
    assert len(check["checks"]) == sum(len(f.steps) for e in episodes for f in e.frame_sets())
    for label, simulator, fraction in check["checks"]:
        assert label == simulator and (fraction == 1.0) == label
    assert {label for label, _, _ in check["checks"]} == {True, False}


def test_frames_are_rendered_at_the_camera_size_and_decode_to_their_labels(made) -> None:
    from vlm_reward.video_io import decode_clip, probe_video

    out, (success, _, _), _ = made
    for frames in success.frame_sets():
        probe = probe_video(out / frames.video)
        clip = decode_clip(out / frames.video, range(probe.num_frames), probe)
        assert clip.frames.shape == (len(frames.steps), 64, 64, 3)
    assert success.served.success[-1] and not any(success.served.success[:-1])
    assert np.all(np.diff(success.served.steps) > 0)


def test_split_of_a_plan_never_puts_a_reserved_state_in_training(made) -> None:
    _, episodes, _ = made
    states = [(t, k) for t in (0, 1, 7) for k in range(50)]
    assert choose_held_out(states, 0.25, 0) >= RESERVED_STATES
    check_split(episodes)
