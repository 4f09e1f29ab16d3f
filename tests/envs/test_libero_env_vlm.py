"""The project's LiberoEnv with the reward model on, against a real reward server: the wiring.

The arithmetic is covered by ``test_episode_reward.py`` without LIBERO; here the hooks into
RLinf's env are checked on the real simulator. One env (2 LIBERO processes,
``max_episode_steps`` 6, resets that reuse the simulator) is shared by the whole module, as
building one is the expensive part.
Every episode states all of its settings (:meth:`EnvCase.episode`): the module's
``reward_model`` block plus the case's changes, set through the env's public
``set_reward_model``, and RLinf's ``use_rel_reward`` and ``auto_reset``; nothing carries
over from one test to the next but the judge's health windows, which a test that counts them
starts afresh with a window size of its own. The server runs the ``recording`` test backend,
which answers a known score (or one per instruction) and logs every job it receives, so calls
are counted on the server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.envs.conftest import SOFT_RESET, cached_frame_counts, idle_actions, libero_cfg, libero_env
from tests.support.server import ServerProcess
from vlm_reward.client.config import RewardModelConfig

pytestmark = [pytest.mark.libero, pytest.mark.slow]

NUM_ENVS, MAX_STEPS, CHUNK, CHUNKS = 2, 6, 4, 3
END_STEP = MAX_STEPS - 1  # 0-based index of the truncation step
COEF = 5.0  # reward_coef of libero_10.yaml
STEP_AFTER_END_S = 0.5  # a simulator step after the end step, in the in-flight test


class EnvCase:
    def __init__(self, env: Any, calls: Path, tmp: Path) -> None:
        self.env, self.calls, self.tmp = env, calls, tmp
        self.base: RewardModelConfig = env.reward_model  # the module's block, as built

    def jobs(self) -> list[dict]:
        return [json.loads(line) for line in self.calls.read_text().splitlines()]

    def log_lines(self) -> list[dict]:
        """The episode log's lines so far (none before the first scored episode)."""
        logs = sorted((self.tmp / "episodes").glob("*.jsonl"))
        assert [p.name for p in logs] in ([], ["vlm_episodes_train_rank0.jsonl"])
        return [json.loads(line) for log in logs for line in log.read_text().splitlines()]

    def configure(self, use_rel: bool = True, auto_reset: bool = False, **reward_model: Any) -> None:
        """All settings of the next episode: the module's block + ``reward_model``, and RLinf's two knobs."""
        self.env.set_reward_model(self.base.replace(**reward_model))
        self.env.use_rel_reward, self.env.auto_reset = use_rel, auto_reset

    def episode(self, chunks: int = CHUNKS, chunk: int = CHUNK, **settings: Any) -> dict:
        self.configure(**settings)
        obs, _ = self.env.reset()
        out = [self.env.chunk_step(idle_actions(NUM_ENVS, chunk)) for _ in range(chunks)]
        return {
            "reset_obs": obs,
            "rewards": torch.cat([o[1] for o in out], dim=1),
            "infos": [o[4][-1] for o in out],
        }


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvCase]:
    tmp = tmp_path_factory.mktemp("vlm-env")
    calls = tmp / "calls.jsonl"
    args = ["--backend", "recording", "--model", "none", "--video-root", str(tmp)]
    server = ServerProcess(
        [*args, "--backend-kwargs", json.dumps({"log_path": str(calls)})],
        tmp / "server.log",
        plugins=("tests.support.env_backends",),
    ).wait_ready()
    cfg = libero_cfg(
        max_episode_steps=MAX_STEPS,
        **{
            "reward_model.enable": True,
            "reward_model.endpoint": server.endpoint,
            "reward_model.backend": "recording",
            "reward_model.temp_video_dir": str(tmp / "videos"),
            "reward_model.episode_log_dir": str(tmp / "episodes"),
            **SOFT_RESET,
        },
    )
    try:
        with libero_env(cfg, NUM_ENVS) as env:
            yield EnvCase(env, calls, tmp)
    finally:
        server.stop()


def _expected(signal: float, use_rel: bool, steps: int = CHUNK * CHUNKS) -> np.ndarray:
    """RLinf's shaping with s = 0 before the end step and s held after it."""
    rewards = np.zeros((NUM_ENVS, steps))
    if use_rel:
        rewards[:, END_STEP] = COEF * signal
    else:
        rewards[:, END_STEP:] = COEF * signal
    return rewards


SHAPING = [
    ("binary_rel_success", True, True, "0.7", 1.0),
    ("binary_rel_failure", True, True, "0.3", 0.0),
    ("binary_abs_success", True, False, "0.7", 1.0),
    ("continuous_rel", False, True, "0.7", 0.7),
    ("continuous_abs", False, False, "<answer>85%</answer>", 0.85),
]


@pytest.mark.parametrize(
    ("binary", "use_rel", "answer", "signal"), [s[1:] for s in SHAPING], ids=[s[0] for s in SHAPING]
)
def test_reward_at_the_end_step_follows_rlinf_shaping(ctx: EnvCase, binary, use_rel, answer, signal) -> None:
    calls_before = len(ctx.jobs())
    result = ctx.episode(use_rel=use_rel, binary_reward=binary, backend_kwargs={"answer": answer})
    np.testing.assert_allclose(result["rewards"].numpy(), _expected(signal, use_rel), atol=1e-6)
    # One call per episode, although the ended envs keep reporting truncation afterwards.
    assert len(ctx.jobs()) - calls_before == NUM_ENVS


@pytest.fixture(scope="module")
def progress_judge(ctx: EnvCase) -> Iterator[ServerProcess]:
    """The ``resnet`` backend serving a seeded random ResNet-18 progress judge (target
    ``goal_fraction``, an episode scored by the mean of its last 2 frame scores): the progress
    judge's path, frame scores and all, with untrained weights."""
    from tests.support.classifier_checkpoint import seeded_classifier
    from vlm_reward.backends.resnet_checkpoint import ClassifierConfig

    model = ctx.tmp / "progress_resnet"
    seeded_classifier(model, ClassifierConfig(image_size=32, last_k=2, target="goal_fraction"))
    args = ["--backend", "resnet", "--model", str(model), "--video-root", str(ctx.tmp)]
    server = ServerProcess(args, ctx.tmp / "progress_server.log").wait_ready()
    try:
        yield server
    finally:
        server.stop()


def test_a_progress_judge_s_graded_score_is_the_reward(ctx: EnvCase, progress_judge: ServerProcess) -> None:
    """``binary_reward: False``: each env's reward at the end step is ``reward_coef`` times the
    score the progress judge gave its episode, a score strictly inside (0, 1), logged with the
    frame scores it is the mean of."""
    lines_before = len(ctx.log_lines())
    result = ctx.episode(endpoint=progress_judge.endpoint, backend="resnet", binary_reward=False)
    lines = sorted(ctx.log_lines()[lines_before:], key=lambda line: line["env"])
    assert [line["env"] for line in lines] == [0, 1]
    scores = np.array([line["vlm_score"] for line in lines])
    assert ((scores > 0) & (scores < 1)).all(), scores
    for line in lines:
        frame_scores = line["frame_scores"]
        assert len(frame_scores) == line["frames_sent"] > 2 and all(0 < f < 1 for f in frame_scores)
        assert line["vlm_score"] == pytest.approx(np.mean(frame_scores[-2:]), abs=1e-6)
        assert line["binary_reward"] is False and "target goal_fraction" in line["judge_model"]
    expected = np.zeros((NUM_ENVS, CHUNK * CHUNKS))
    expected[:, END_STEP] = COEF * scores  # use_rel_reward: s - 0 at the end step
    np.testing.assert_allclose(result["rewards"].numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(result["infos"][-1]["episode"]["vlm_score"].numpy(), scores, atol=1e-6)


def test_metrics_and_episode_log(ctx: EnvCase) -> None:
    lines_before = len(ctx.log_lines())
    result = ctx.episode(chunks=2, binary_reward=True, backend_kwargs={"answer": "0.7"})
    episode = result["infos"][-1]["episode"]
    expected = {"vlm_scored": 1, "vlm_score": 0.7, "vlm_success": 1, "native_success": 0}
    expected["vlm_native_agree"] = 0
    for key, value in expected.items():
        np.testing.assert_allclose(episode[key].numpy(), [value] * NUM_ENVS, err_msg=key)
    assert episode["vlm_fallback"].sum() == 0 and (episode["vlm_latency_s"] > 0).all()
    first_chunk = result["infos"][0]["episode"]
    assert first_chunk["vlm_scored"].sum() == 0, "not scored before the episode ends"
    lines = ctx.log_lines()[lines_before:]
    assert [line["env"] for line in lines] == [0, 1]
    tasks = result["reset_obs"]["task_descriptions"]
    for line, task in zip(lines, tasks, strict=True):
        assert line["task_text"] == task and line["episode_length"] == MAX_STEPS
        assert line["native_success"] is False and line["vlm_score"] == 0.7 and line["vlm_success"] is True
        assert line["frames_sent"] == MAX_STEPS + 1 and line["fallback"] is False and line["error"] is None
        assert line["reset_state_id"] >= 0 and 0 <= line["task_id"] < 10
        assert (line["split"], line["rank"], line["seed_offset"]) == ("train", 0, 0)
    frames_seen = [job["frames"] for job in ctx.jobs()[-NUM_ENVS:]]
    assert frames_seen == [MAX_STEPS + 1] * NUM_ENVS, "reset frame + one frame per step"


def test_temp_videos_removed_or_kept(ctx: EnvCase) -> None:
    videos = ctx.tmp / "videos"
    before = set(videos.iterdir())
    ctx.episode(chunks=2, keep_temp_video=False)
    assert set(videos.iterdir()) == before
    ctx.episode(chunks=2, keep_temp_video=True)
    kept = [Path(line["video_path"]) for line in ctx.log_lines()[-NUM_ENVS:]]
    assert set(videos.iterdir()) - before == set(kept)
    assert all(path.stat().st_size > 0 for path in kept)


def test_unparseable_answer_takes_the_fallback_path(ctx: EnvCase) -> None:
    answer = "I cannot tell from this video."
    result = ctx.episode(chunks=2, binary_reward=True, backend_kwargs={"answer": answer})
    episode = result["infos"][-1]["episode"]
    np.testing.assert_array_equal(episode["vlm_fallback"].numpy(), [1, 1])
    np.testing.assert_array_equal(episode["vlm_score"].numpy(), [0, 0])  # native success of an idle robot
    assert result["rewards"].abs().sum() == 0
    line = ctx.log_lines()[-1]
    assert line["fallback"] is True and "I cannot tell" in line["error"]


def test_shadow_mode_scores_but_trains_on_native_reward(ctx: EnvCase) -> None:
    calls_before = len(ctx.jobs())
    result = ctx.episode(chunks=2, use_for_training=False, backend_kwargs={"answer": "0.9"})
    assert result["rewards"].abs().sum() == 0, "native reward of an idle robot is zero"
    assert len(ctx.jobs()) - calls_before == NUM_ENVS
    np.testing.assert_allclose(result["infos"][-1]["episode"]["vlm_score"].numpy(), [0.9, 0.9])


def test_auto_reset_scores_before_resetting(ctx: EnvCase) -> None:
    calls_before = len(ctx.jobs())
    result = ctx.episode(chunks=2, auto_reset=True, binary_reward=False, backend_kwargs={"answer": "0.6"})
    final = result["infos"][-1]["final_info"]["episode"]
    np.testing.assert_allclose(final["vlm_score"].numpy(), [0.6, 0.6])
    assert len(ctx.jobs()) - calls_before == NUM_ENVS
    # The ended episodes got their reward; the fresh ones start with one cached frame.
    np.testing.assert_allclose(result["rewards"][:, END_STEP].numpy(), [COEF * 0.6] * NUM_ENVS)
    assert cached_frame_counts(ctx.env) == [1, 1]


def test_the_request_is_in_flight_while_the_chunk_goes_on(
    ctx: EnvCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Chunks of 5: the episodes end (step 6) at the first step of the second chunk. The
    # server must see the job before the chunk's last simulator step begins. The steps after
    # the end step are slowed: idle steps take ~5 ms, shorter than encoding and sending the
    # clip beside a busy CI (CI once saw the job start 50 ms after the last step began), and a
    # request held until the chunk's end would still start after all of them.
    sim_cls = type(ctx.env.env)  # RLinf's vector of LIBERO processes
    step_started: list[float] = []
    original = sim_cls.step

    def timed_step(self: Any, *args: Any, **kwargs: Any) -> Any:
        step_started.append(time.time())
        if len(step_started) > MAX_STEPS:
            time.sleep(STEP_AFTER_END_S)
        return original(self, *args, **kwargs)

    ctx.configure(backend_kwargs={"answer": "0.7"})
    ctx.env.reset()  # its settling steps go through the same step: patch after it
    monkeypatch.setattr(sim_cls, "step", timed_step)
    calls_before = len(ctx.jobs())
    rewards = torch.cat([ctx.env.chunk_step(idle_actions(NUM_ENVS, 5))[1] for _ in range(2)], dim=1)
    jobs = ctx.jobs()[calls_before:]
    assert len(jobs) == NUM_ENVS and len(step_started) == 10
    assert max(job["start"] for job in jobs) < step_started[-1], (jobs, step_started[-4:])
    np.testing.assert_allclose(rewards[:, END_STEP].numpy(), [COEF] * NUM_ENVS)


def test_step_called_alone_scores_its_ended_episode_without_auto_reset(ctx: EnvCase) -> None:
    """Review finding: the score of an episode ended by ``step(auto_reset=False)`` was dropped."""
    ctx.configure(backend_kwargs={"answer": "0.7"})
    ctx.env.reset()
    calls_before, lines_before = len(ctx.jobs()), len(ctx.log_lines())
    action = idle_actions(NUM_ENVS, 1)[:, 0]
    steps = [ctx.env.step(action, auto_reset=False) for _ in range(MAX_STEPS + 1)]
    rewards = torch.stack([s[1] for s in steps], dim=1).numpy()
    np.testing.assert_allclose(rewards, _expected(1.0, True, MAX_STEPS + 1), atol=1e-6)
    end_infos = steps[END_STEP][4]["episode"]
    np.testing.assert_allclose(end_infos["vlm_score"].numpy(), [0.7, 0.7])
    np.testing.assert_allclose(end_infos["return"].numpy(), [COEF, COEF])
    assert len(ctx.jobs()) - calls_before == NUM_ENVS, "scored once, at the end step"
    assert len(ctx.log_lines()) - lines_before == NUM_ENVS
    ctx.env.reset()  # nothing pending: the reset does not raise


def test_step_called_alone_with_auto_reset(ctx: EnvCase) -> None:
    ctx.configure(auto_reset=True, backend_kwargs={"answer": "0.2"}, binary_reward=False)
    ctx.env.reset()
    action = idle_actions(NUM_ENVS, 1)[:, 0]
    steps = [ctx.env.step(action) for _ in range(MAX_STEPS)]
    _, reward, _, truncations, infos = steps[-1]
    assert truncations.all()
    np.testing.assert_allclose(reward.numpy(), [COEF * 0.2] * NUM_ENVS, atol=1e-6)
    np.testing.assert_allclose(infos["final_info"]["episode"]["vlm_score"].numpy(), [0.2, 0.2])
    assert cached_frame_counts(ctx.env) == [1, 1], "reset: one frame each"


def test_set_reward_model_keeps_enable_fixed(ctx: EnvCase) -> None:
    with pytest.raises(ValueError, match=r"reward_model\.enable is fixed when the env is built"):
        ctx.env.set_reward_model(ctx.base.replace(enable=False))
    with pytest.raises(ValueError, match=r"reward_model\.nframes"):
        ctx.env.set_reward_model({**ctx.base.model_dump(), "nframes": 0})
    with pytest.raises(AttributeError):
        ctx.env.reward_model = ctx.base  # read-only: a silent half-change is impossible


# ---- watching the judge: per-task rates, canaries, the guard ------------------------------
#
# The judge here answers by the instruction (the recording backend's ``answers``): a judge a
# policy can fool, as whatever a clip shows, an instruction it says "yes" to gets a "yes". The
# simulator's success is scripted (an idle robot never succeeds): ``native_success_at`` makes
# the vector of LIBERO processes report success for the chosen envs from a given step on, as
# LIBERO does once a task is done; everything else is the real env.

SUCCESS_STEP = 2  # a scripted success ends its episode at step 2 (reset frame + 2 frames)


@contextmanager
def native_success_at(env: Any, envs: set[int], step: int = SUCCESS_STEP) -> Iterator[None]:
    """LIBERO reports success for ``envs`` from their ``step``-th step on (resets' settling steps,
    which pass env ids, are left alone)."""
    sim_cls = type(env.env)  # RLinf's vector of LIBERO processes
    original = sim_cls.step

    def step_with_success(self: Any, actions: Any, *ids: Any) -> Any:
        raw_obs, reward, terminations, infos = original(self, actions, *ids)
        if not ids:
            terminations = np.array(terminations)
            for i in envs:
                terminations[i] |= env.elapsed_steps[i] >= step
        return raw_obs, reward, terminations, infos

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sim_cls, "step", step_with_success)
        yield


def task_state(env: Any, task: int) -> int:
    """The reset-state id of ``task``'s first trial (RLinf's ids count the trials of each task)."""
    return 0 if task == 0 else int(env.cumsum_trial_id_bins[task - 1])


def play(ctx: EnvCase, tasks: tuple[int, int], succeed: set[int] = frozenset(), **settings: Any) -> dict:
    """One episode per env on ``tasks`` (two 4-step chunks: every episode ends in them), with
    ``settings``; the envs in ``succeed`` succeed natively at step 2."""
    ctx.configure(**settings)
    ctx.env.reset(reset_state_ids=np.array([task_state(ctx.env, t) for t in tasks]))
    with native_success_at(ctx.env, set(succeed)):
        out = [ctx.env.chunk_step(idle_actions(NUM_ENVS, CHUNK)) for _ in range(2)]
    return {"rewards": torch.cat([o[1] for o in out], dim=1).numpy(), "episode": out[-1][4][-1]["episode"]}


def task_texts(env: Any, answers: dict[int, str]) -> dict[str, str]:
    return {env.task_suite.get_task(task).language: answer for task, answer in answers.items()}


def rewarded_at_success(*envs: int) -> np.ndarray:
    """Rewards of a pair of 8-step episodes where only ``envs`` are rewarded, at the scripted
    success step (RLinf's relative shaping: the term once)."""
    rewards = np.zeros((NUM_ENVS, 2 * CHUNK))
    rewards[list(envs), SUCCESS_STEP - 1] = COEF
    return rewards


def test_per_task_rates_canaries_and_the_guard_against_a_fooled_judge(
    ctx: EnvCase, caplog: pytest.LogCaptureFixture
) -> None:
    # The judge says yes to task 0 and no to task 1, whatever the clip. A health window of its own
    # size starts empty; the guard acts once 3 native failures are in, above a rate of 0.3.
    guard = {"enable": True, "action": "stop", "max_false_positive_rate": 0.3, "min_episodes": 3}
    watch = {
        "backend_kwargs": {"answers": task_texts(ctx.env, {0: "0.9", 1: "0.2"})},
        "health_window": 37,
        "canary_rate": 1.0,
        "canary_perturbations": ["reversed", "frozen", "clipped"],
        "guard": {**guard, "window": 10},
    }
    jobs_before, lines_before = len(ctx.jobs()), len(ctx.log_lines())
    with caplog.at_level("WARNING", logger="vlm_reward.watch.judge_watch"):
        # 1: task 0 succeeds, judged a success (its canary, played backwards, too: fooled);
        #    task 1 fails, judged a failure.
        first = play(ctx, (0, 1), succeed={0}, **watch)
        # 2: task 1 fails, judged a failure; task 0 fails, judged a success: a false positive, the
        #    third native failure, 1/3 > 0.3: the guard trips on env 1's episode.
        second = play(ctx, (1, 0), **watch)
        # 3: both succeed: task 0 judged a success, task 1 a failure (its canary too: the judge says
        #    no to task 1 whatever the clip); both train on the native reward now.
        third = play(ctx, (0, 1), succeed={0, 1}, **watch)
    np.testing.assert_array_equal(second["episode"]["vlm_canary_false_positive_rate"].numpy(), [1.0, 1.0])

    expected = {  # by hand: task 0 = TP, FP, TP; task 1 = TN, TN, FN; canaries: FP, FP, TN
        "vlm_false_positive_rate": 1 / 3,
        "vlm_false_negative_rate": 1 / 3,
        "vlm_false_positives": 1,
        "vlm_false_negatives": 1,
        "vlm_window_native_failures": 3,
        "vlm_window_native_successes": 3,
        "vlm_window_fallbacks": 0,
        "vlm_canary_false_positive_rate": 2 / 3,
        "vlm_canaries": 3,
        "vlm_task_false_positive_rate/0": 1.0,
        "vlm_task_false_negative_rate/0": 0.0,
        "vlm_task_false_positive_rate/1": 0.0,
        "vlm_task_false_negative_rate/1": 1.0,
        "vlm_task_native_failures/2": 0.0,  # the suite's other tasks: their counts from the start
        "vlm_guard_tripped": 1.0,
    }
    for key, value in expected.items():
        np.testing.assert_allclose(third["episode"][key].numpy(), [value] * NUM_ENVS, err_msg=key)
    assert sum(key.startswith("vlm_task_native_failures/") for key in third["episode"]) == 10
    # ... but a rate only where episodes are behind it: never a 0 for a task that did not run.
    assert sum(key.startswith("vlm_task_false_positive_rate/") for key in third["episode"]) == 2

    # Before the trip, the judge's reward; from the tripping episode on, the native one: no reward
    # for the false positive (the judge's would be 5 at its end step), 5 for the success it missed.
    np.testing.assert_allclose(first["rewards"], rewarded_at_success(0), atol=1e-6)
    np.testing.assert_allclose(second["rewards"], np.zeros((NUM_ENVS, 2 * CHUNK)), atol=1e-6)
    np.testing.assert_allclose(third["rewards"], rewarded_at_success(0, 1), atol=1e-6)
    lines = ctx.log_lines()[lines_before:]
    episodes = [line for line in lines if "canary" not in line]
    assert [(line["task_id"], line["used_for_training"]) for line in episodes] == [
        (0, True),
        (1, True),
        (1, True),
        (0, False),
        (0, False),
        (1, False),
    ]
    [message] = [r.getMessage() for r in caplog.records if "reward guard tripped" in r.getMessage()]
    assert "tripped after 4 judged episodes: false-positive rate 0.333 (1 of 3 native failures" in message
    assert ctx.env.reward_guard_stop == message and "exit status 4" in message

    canaries = [line for line in lines if "canary" in line]
    assert [(c["canary"], c["task_id"], c["vlm_success"]) for c in canaries] == [
        ("reversed", 0, True),
        ("frozen", 0, True),
        ("clipped", 1, False),
    ]
    assert all(c["native_success"] is False and c["used_for_training"] is False for c in canaries)
    # The server saw each canary as a clip of the success's 3 frames (reset + 2 steps), or half of one.
    frames = [job["frames"] for job in ctx.jobs()[jobs_before:]]
    assert sorted(frames) == [1] + [SUCCESS_STEP + 1] * 5 + [MAX_STEPS + 1] * 3
