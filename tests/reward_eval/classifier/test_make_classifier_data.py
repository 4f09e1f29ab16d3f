"""scripts/make_classifier_data.py on a handful of states: the real simulator, labels checked
against LIBERO's own success check at each kept frame's state."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from reward_eval.classifier.labelled_set import RESERVED_STATES, check_split
from tests.support.server import REPO

pytestmark = [pytest.mark.libero, pytest.mark.slow]


def data_script():
    spec = importlib.util.spec_from_file_location(
        "make_classifier_data", REPO / "scripts" / "make_classifier_data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory):
    """Task 0: trial 3 (the clean expert, a success) in full, trial 9 (the random policy) cut at 40 steps."""
    script = data_script()
    from reward_eval.classifier.simulation import LabelledScene

    out = tmp_path_factory.mktemp("classifier-data")
    scene = LabelledScene(script.SUITE, 0, 64)
    success = script.make_episode(scene, 0, 3, 0, out, "train")
    script.MAX_STEPS = 40
    failure = script.make_episode(scene, 0, 9, 0, out, "held_out")
    yield scene, out, [success, failure], script
    scene.close()


def test_variants_are_what_the_trials_say(made) -> None:
    _, _, (success, failure), _script = made
    assert (success.policy, failure.policy) == ("expert", "random")
    assert success.native_success and not failure.native_success
    assert success.after is not None and failure.after is None
    assert failure.episode_length == 40


def test_every_label_is_the_simulators_success_at_that_frames_state(made) -> None:
    """Replayed from its seed (the set is reproducible), each kept step's state is set in the
    camera env and LIBERO's own ``_check_success`` asked again."""
    scene, out, episodes, script = made
    checked = 0
    for episode, max_steps in zip(episodes, (400, 40), strict=True):
        replay = scene.play(
            episode.trial_id,
            episode.policy,
            dict(episode.policy_kwargs),
            episode.seed,
            max_steps,
            script.AFTER_STEPS,
        )
        assert replay.end == episode.episode_length
        for frames in episode.frame_sets():
            assert (out / frames.video).is_file()
            for step, label, fraction in zip(frames.steps, frames.success, frames.goal_fraction, strict=True):
                scene.camera.regenerate_obs_from_state(replay.states[step])
                assert scene.camera.env._check_success() == label
                assert (fraction == 1.0) == label
                checked += 1
    assert checked == sum(len(f.steps) for e in episodes for f in e.frame_sets())


def test_frames_are_rendered_at_the_camera_size_and_decode_to_their_labels(made) -> None:
    from vlm_reward.video_io import decode_clip, probe_video

    _, out, (success, _), _ = made
    for frames in success.frame_sets():
        probe = probe_video(out / frames.video)
        clip = decode_clip(out / frames.video, range(probe.num_frames), probe)
        assert clip.frames.shape == (len(frames.steps), 64, 64, 3)
    assert success.served.success[-1] and not any(success.served.success[:-1])
    assert np.all(np.diff(success.served.steps) > 0)


def test_split_of_a_plan_never_puts_a_reserved_state_in_training(made) -> None:
    *_, script = made
    from reward_eval.classifier.labelled_set import choose_held_out

    states = [(t, k) for t in script.TASKS for k in range(script.TRIALS)]
    held = choose_held_out(states, script.HOLDOUT_FRACTION, 0)
    assert held >= RESERVED_STATES
    _, _, episodes, _ = made
    check_split(episodes)
