"""The episode-reward core without LIBERO or a server: its bookkeeping, positions and pending scores.

The table drives :class:`EpisodeRewards` exactly as ``LiberoEnv``'s hooks do (shape each
step with the held signal, record it, collect, reset on an auto-reset, close the window) for
two envs: env 0 ends at ``end`` (1-based step), env 1 never ends. Env 0's rewards are
checked against values computed by hand, and all rewards against RLinf's own
``_calc_step_reward`` fed the true signal of every step (``s = 0`` before the end step, ``s``
from it on, until a reset): the reward the env would give if the score were known at once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from rlinf.envs.libero.episode_reward import Ended, EpisodeRewards
from rlinf.envs.libero.reward_term import Shaping, success_signal

COEF = 5.0
FRAME = np.zeros((2, 2, 3), dtype=np.uint8)


def _settings(binary: bool = True, threshold: float = 0.5, train: bool = True) -> SimpleNamespace:
    return SimpleNamespace(binary_reward=binary, success_threshold=threshold, use_for_training=train)


def _result(score: float, fallback: bool = False) -> SimpleNamespace:
    return SimpleNamespace(score=score, fallback=fallback, latency_s=0.25, failovers=1)


class ScriptedJudge:
    """A scoring call that answers ``score`` at once and remembers every call."""

    def __init__(self, score: float = 0.8, error: Exception | None = None) -> None:
        self.score, self.error = score, error
        self.calls: list[tuple[int, int, bool]] = []  # (env, frames, native_success)

    def __call__(self, ended: Ended) -> Future:
        self.calls.append((ended.env, len(ended.frames), ended.native_success))
        future: Future = Future()
        if self.error is not None:
            future.set_exception(self.error)
        else:
            future.set_result(_result(self.score))
        return future


# ---- the formula, by hand and RLinf's ----------------------------------------------


def hand_formula(rl: SimpleNamespace, signal: np.ndarray) -> np.ndarray:
    """docs/env/index.md: ``step_penalty + reward_coef * s``; with ``use_rel_reward`` its difference."""
    reward = (-1.0 if rl.use_step_penalty else 0.0) + rl.cfg.reward_coef * signal
    if not rl.use_rel_reward:
        return reward
    diff, rl.prev_step_reward = reward - rl.prev_step_reward, reward
    return diff


@pytest.fixture(scope="module")
def rlinf_formula() -> Callable[[SimpleNamespace, np.ndarray], np.ndarray]:
    """RLinf's own ``LiberoEnv._calc_step_reward`` (imports LIBERO's modules; no simulator runs)."""
    import rlinf.envs.libero.libero_env  # noqa: F401 - loads the installed module beside ours

    return sys.modules["rlinf.envs.libero._installed_libero_env"].LiberoEnv._calc_step_reward


@dataclass(frozen=True)
class Case:
    id: str
    use_rel: bool
    penalty: bool
    windows: tuple[int, ...]  # steps per window (chunk_step), in order
    end: int  # 1-based step where env 0's episode ends
    expected: tuple[float, ...]  # env 0's rewards, by hand
    score: float = 0.8
    binary: bool = True
    reset_after_end: bool = False  # an auto-reset at the end of the window where env 0 ended


CASES = [
    Case("abs_end_mid_window", False, False, (4, 4), 6, (0, 0, 0, 0, 0, 5, 5, 5)),
    Case("rel_end_mid_window", True, False, (4, 4), 6, (0, 0, 0, 0, 0, 5, 0, 0)),
    Case("abs_step_penalty", False, True, (4, 4), 6, (-1, -1, -1, -1, -1, 4, 4, 4)),
    Case("rel_step_penalty", True, True, (4, 4), 6, (-1, 0, 0, 0, 0, 5, 0, 0)),
    Case("rel_end_at_first_step_of_window", True, False, (4, 4), 5, (0, 0, 0, 0, 5, 0, 0, 0)),
    Case("abs_end_at_last_step_held_next_window", False, False, (4, 4), 4, (0, 0, 0, 5, 5, 5, 5, 5)),
    Case("rel_penalty_end_at_last_step_held", True, True, (4, 4), 4, (-1, 0, 0, 5, 0, 0, 0, 0)),
    Case("abs_continuous_score", False, False, (4, 4), 6, (0, 0, 0, 0, 0, 3.5, 3.5, 3.5), 0.7, False),
    Case("rel_binary_failure", True, False, (4, 4), 6, (0,) * 8, 0.3),
    Case("binary_at_threshold_is_success", True, False, (4, 4), 6, (0, 0, 0, 0, 0, 5, 0, 0), 0.5),
    Case("rel_penalty_auto_reset", True, True, (4, 4), 2, (-1, 5, 0, 0, -1, 0, 0, 0), reset_after_end=True),
    Case("abs_auto_reset_mid_chunk", False, False, (4, 4), 2, (0, 5, 5, 5, 0, 0, 0, 0), reset_after_end=True),
    Case("rel_steps_called_alone", True, False, (1,) * 6, 4, (0, 0, 0, 5, 0, 0)),
    Case("abs_steps_called_alone", False, False, (1,) * 6, 4, (0, 0, 0, 5, 5, 5)),
]


@dataclass
class Run:
    rewards: np.ndarray  # (2 envs, all steps)
    return_at_end: float  # env 0's return right after its score was collected
    judge: ScriptedJudge
    core: EpisodeRewards
    signals: list[np.ndarray] = field(default_factory=list)  # the true s of every step


def _rl(case: Case) -> SimpleNamespace:
    return SimpleNamespace(
        cfg=SimpleNamespace(reward_coef=COEF),
        use_rel_reward=case.use_rel,
        use_step_penalty=case.penalty,
        prev_step_reward=np.zeros(2),
        returns=np.zeros(2),
        success_once=np.zeros(2, dtype=bool),
        elapsed=np.zeros(2, dtype=np.int64),
    )


def submit(
    core: EpisodeRewards,
    judge: Callable[[Ended], Future],
    dones: np.ndarray,
    native: np.ndarray,
    elapsed: np.ndarray,
) -> list[int]:
    """Record one step and start the scoring call of each episode that ended, as the env does."""
    ended = core.record_step([FRAME, FRAME], dones, native, elapsed)
    for episode in ended:
        core.submitted(episode.env, judge(episode))
    return [episode.env for episode in ended]


def drive(
    case: Case,
    formula: Callable,
    train: bool = True,
    native_at: int | None = None,
    review: Callable | None = None,
) -> Run:
    """Step the core the way ``LiberoEnv``'s hooks do; RLinf's state lives in ``rl``."""
    rl, judge = _rl(case), ScriptedJudge(case.score)
    core = EpisodeRewards(2, _settings(binary=case.binary, train=train))
    shaping = Shaping(COEF, case.use_rel)
    for env in (0, 1):
        core.start(env, FRAME)
    columns, return_at_end, step, signals = [], 0.0, 0, []
    s_true = success_signal(case.score, _settings(binary=case.binary))
    for width in case.windows:
        core.open_window()
        window = []
        for _ in range(width):
            step += 1
            rl.elapsed += 1
            native = np.array([native_at is not None and step >= native_at, False])
            reward = formula(rl, core.signal.copy() if train else native.astype(float))
            counted_by_rlinf = ~rl.success_once
            rl.returns += reward * counted_by_rlinf  # RLinf's _record_metrics
            rl.success_once |= native
            if train:
                core.count_return(rl.returns, reward, counted_by_rlinf)
            submit(core, judge, np.array([step >= case.end, False]), rl.success_once, rl.elapsed)
            window.append(reward)
            signals.append(np.array([s_true if case.end <= step else 0.0, 0.0]))
        rewards = np.stack(window, axis=1)
        if core.collect(rl.returns, rl.prev_step_reward, shaping, review):
            return_at_end = float(rl.returns[0])
            if case.reset_after_end:  # RLinf's reset, then the hook's start
                rl.prev_step_reward[0] = rl.returns[0] = rl.elapsed[0] = 0
                rl.success_once[0] = False
                core.start(0, FRAME)
                case = Case(**{**case.__dict__, "end": 10**6})  # the new episode does not end
                s_true = 0.0
        core.close_window(rewards)
        columns.append(rewards)
    return Run(np.concatenate(columns, axis=1), return_at_end, judge, core, signals)


def _exact(case: Case, formula: Callable, signals: list[np.ndarray]) -> np.ndarray:
    """RLinf's formula fed the true s of each step (known at once), with RLinf's reset."""
    rl, out = _rl(case), []
    for step, signal in enumerate(signals, start=1):
        if case.reset_after_end and step == case.windows[0] + 1:
            rl.prev_step_reward[0] = 0.0
        out.append(formula(rl, signal))
    return np.stack(out, axis=1)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rewards_match_the_hand_computation(case: Case) -> None:
    run = drive(case, hand_formula)
    np.testing.assert_allclose(run.rewards[0], case.expected, atol=1e-12)
    penalty = -1.0 if case.penalty else 0.0
    never_ends = [penalty] + [0.0 if case.use_rel else penalty] * (len(case.expected) - 1)
    np.testing.assert_allclose(run.rewards[1], never_ends, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rewards_match_rlinfs_formula_fed_the_true_signal(case: Case, rlinf_formula: Callable) -> None:
    run = drive(case, rlinf_formula)
    np.testing.assert_allclose(run.rewards, _exact(case, rlinf_formula, run.signals), atol=1e-12)
    np.testing.assert_allclose(run.rewards[0], case.expected, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_return_is_the_sum_of_the_rewards_up_to_the_end_step(case: Case) -> None:
    run = drive(case, hand_formula)
    assert run.return_at_end == pytest.approx(sum(case.expected[: case.end]))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_one_call_per_episode_submitted_at_its_end_step(case: Case) -> None:
    run = drive(case, hand_formula)
    # Env 0 keeps reporting done after its end (no reset): it is not submitted again.
    assert run.judge.calls == [(0, case.end + 1, False)], "reset frame + one frame per step up to the end"
    assert run.core.frames[0] == [] or case.reset_after_end, "scored: the frames are dropped"
    assert len(run.core.frames[1]) == sum(case.windows) + 1


def test_return_counts_past_a_native_success_under_ignore_terminations() -> None:
    # Native success at step 2; the episode ends at truncation (step 6). RLinf would stop
    # counting at step 2; the VLM episode counts every step up to its end.
    case = Case("penalty", False, True, (4, 4), 6, (-1, -1, -1, -1, -1, 4, 4, 4))
    run = drive(case, hand_formula, native_at=2)
    assert run.return_at_end == pytest.approx(-1 * 5 + 4)
    assert run.core.metrics["native_success"][0] == 1.0 and run.judge.calls == [(0, 7, True)]


@pytest.mark.parametrize("case", [c for c in CASES if not c.reset_after_end], ids=lambda c: c.id)
def test_judge_only_the_simulators_success_changes_no_reward_and_no_return(
    case: Case, rlinf_formula: Callable
) -> None:
    # Judge-only mode (ignore_terminations: True): the episode ends at its truncation (``end``), and
    # the simulator's success, at whatever step it comes or never, is only recorded.
    runs = [
        drive(case, rlinf_formula, native_at=native_at) for native_at in (None, 1, case.end - 1, case.end)
    ]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.rewards, runs[0].rewards)
        assert run.return_at_end == runs[0].return_at_end
        assert run.core.metrics["native_success"][0] == 1.0, "recorded for the rates"
    assert runs[0].core.metrics["native_success"][0] == 0.0
    assert [call[2] for run in runs for call in run.judge.calls] == [False, True, True, True]


def test_shadow_mode_keeps_the_native_reward_and_records_metrics() -> None:
    case = Case("shadow", True, False, (4, 4), 6, (0,) * 8, 0.9)
    run = drive(case, hand_formula, train=False)
    assert not run.rewards.any() and not run.core.signal.any()
    assert run.return_at_end == 0.0
    assert run.core.metrics["vlm_score"][0] == pytest.approx(0.9) and run.core.metrics["vlm_scored"][1] == 0


REFUSED = [
    # (id, use_rel, judge's score, native success at step): the judge's verdict is refused
    ("abs_fooled_judge_native_failure", False, 0.9, None),
    ("rel_fooled_judge_native_failure", True, 0.9, None),
    ("abs_strict_judge_native_success", False, 0.1, 6),
    ("rel_strict_judge_native_success", True, 0.1, 6),
]


@pytest.mark.parametrize(
    ("use_rel", "score", "native_at"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_an_episode_the_review_refuses_trains_on_the_native_reward(
    use_rel: bool, score: float, native_at: int | None, rlinf_formula: Callable
) -> None:
    """The guard's ``native`` action: the episode's s is its native success, so its rewards are
    exactly RLinf's native ones (the simulator's flag, held after the end step)."""
    seen: list[tuple[int, bool, float]] = []

    def refuse(env: int, native: bool, result: Any) -> bool:
        seen.append((env, native, result.score))
        return False

    case = Case("refused", use_rel, False, (4, 4), 6, (0,) * 8, score)
    run = drive(case, rlinf_formula, native_at=native_at, review=refuse)
    flags = np.zeros((2, 8))
    if native_at is not None:
        flags[0, native_at - 1 :] = 1.0  # LIBERO keeps reporting success after it (no reset)
    rl = _rl(case)
    native_rewards = np.stack([rlinf_formula(rl, flags[:, t]) for t in range(8)], axis=1)
    np.testing.assert_allclose(run.rewards, native_rewards, atol=1e-12)
    assert seen == [(0, native_at is not None, score)], "asked once, for the episode that ended"
    assert run.core.metrics["vlm_score"][0] == pytest.approx(score), "the verdict is still recorded"


def test_the_review_sees_every_episode_in_env_order_also_in_shadow_mode() -> None:
    seen: list[int] = []
    core = EpisodeRewards(3, _settings(train=False))
    for env in range(3):
        core.start(env, FRAME)
    core.open_window()
    judge = ScriptedJudge(0.9)
    for ended in core.record_step([FRAME] * 3, np.array([True, False, True]), np.zeros(3, bool), np.ones(3)):
        core.submitted(ended.env, judge(ended))
    scored = core.collect(
        np.zeros(3), np.zeros(3), Shaping(COEF, True), lambda env, *_: seen.append(env) or True
    )
    assert seen == [0, 2] and [s.trained_on_judge for s in scored] == [False, False], (
        "shadow: never trained on"
    )
    core.close_window(np.zeros((3, 1)))


# ---- the contract's guards -------------------------------------------------------------


def _core() -> EpisodeRewards:
    core = EpisodeRewards(2, _settings())
    core.start(0, FRAME)
    core.start(1, FRAME)
    return core


def _step(core: EpisodeRewards, dones: tuple[bool, bool], judge: Any = None) -> list[int]:
    return submit(core, judge or ScriptedJudge(), np.array(dones), np.zeros(2, bool), np.ones(2, np.int64))


def test_the_request_is_in_flight_before_the_window_ends() -> None:
    started = []

    def call(ended: Ended) -> Future:
        started.append(ended.env)
        return Future()  # still running

    core = _core()
    core.open_window()
    assert _step(core, (False, True), call) == [1] and started == [1]
    assert core.pending == {1: 0}
    _step(core, (False, True), call)
    assert started == [1], "an ended env is not returned again"


def test_record_step_returns_the_ended_episodes_and_calls_nothing() -> None:
    core = _core()
    core.open_window()
    ended = core.record_step([FRAME, FRAME], np.array([True, False]), np.array([True, False]), np.full(2, 3))
    assert [(e.env, len(e.frames), e.native_success) for e in ended] == [(0, 2, True)]
    assert core.pending == {0: 0}
    with pytest.raises(RuntimeError, match=r"collect\(\) before the scoring calls of envs \[0\]"):
        core.collect(np.zeros(2), np.zeros(2), Shaping(COEF, True))
    core.submitted(0, ScriptedJudge()(ended[0]))
    with pytest.raises(RuntimeError, match="env 0 has no ended episode waiting"):
        core.submitted(0, Future())
    assert [s.env for s in core.collect(np.zeros(2), np.zeros(2), Shaping(COEF, True))] == [0]


def test_reset_with_a_pending_score_raises_instead_of_dropping_it() -> None:
    core = _core()
    core.open_window()
    _step(core, (True, False))
    with pytest.raises(RuntimeError, match="env 0 is reset while its ended episode"):
        core.start(0, FRAME)


def test_close_window_checks_pending_scores_and_the_shape() -> None:
    core = _core()
    core.open_window()
    _step(core, (True, False))
    with pytest.raises(RuntimeError, match=r"scores still pending for envs \[0\]"):
        core.close_window(np.zeros((2, 1)))
    core.collect(np.zeros(2), np.zeros(2), Shaping(COEF, True))
    with pytest.raises(ValueError, match=r"shape \(2, 1\).*got \(2, 3\)"):
        core.close_window(np.zeros((2, 3)))


def test_record_step_needs_a_window_and_windows_do_not_nest() -> None:
    core = _core()
    with pytest.raises(RuntimeError, match="needs an open window"):
        _step(core, (False, False))
    core.open_window()
    with pytest.raises(RuntimeError, match="already open"):
        core.open_window()


def test_a_failed_call_raises_after_every_call_is_done_and_records_nothing() -> None:
    core = _core()
    core.open_window()
    _step(core, (True, True), ScriptedJudge(error=RuntimeError("HTTP 500")))
    returns = np.zeros(2)
    with pytest.raises(RuntimeError, match="HTTP 500"):
        core.collect(returns, np.zeros(2), Shaping(COEF, True))
    assert core.pending == {} and not returns.any() and not core.metrics["vlm_scored"].any()
    core.abandon_window()
    core.start(0, FRAME)  # the env rolls on after a reset


def test_abandoning_a_window_waits_for_its_calls_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    core = _core()
    core.open_window()
    _step(core, (False, True))
    with caplog.at_level(logging.WARNING, logger="rlinf.envs.libero.episode_reward"):
        assert core.abandon_window() == [1]
    assert "dropping the scores of the episodes of envs [1]" in caplog.text
    assert core.idle


def test_settings_change_only_between_episodes() -> None:
    core = _core()
    core.open_window()
    with pytest.raises(RuntimeError, match="only change between episodes"):
        core.reconfigure(_settings(binary=False))
    core.close_window(np.zeros((2, 0)))
    core.reconfigure(_settings(binary=False))
    assert core.settings.binary_reward is False


@pytest.mark.parametrize("num_envs", [0, -1, 1.5, True], ids=["zero", "negative", "float", "bool"])
def test_num_envs_must_be_a_positive_int(num_envs: Any) -> None:
    with pytest.raises(ValueError, match="num_envs must be an int >= 1"):
        EpisodeRewards(num_envs, _settings())
