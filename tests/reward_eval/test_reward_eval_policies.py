"""The policy registry and the built-in policies of the evaluation job.

Policies read ``env.num_envs`` (and the expert ``env.current_raw_obs`` and
``env.task_descriptions``); a namespace with those attributes stands in for the LIBERO
env, which the job tests and ``test_reward_eval_expert_libero.py`` run. How the job's loop
hands the env and the observations to a policy is tested in ``test_reward_eval_job.py``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from reward_eval import policies
from reward_eval.policies import basic, make_policy, policy_names, register_policy
from reward_eval.policies import registry as policy_registry
from reward_eval.policies.expert import ExpertController
from tests.support.expert_scene import TASK0, task0_raw_obs


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict:
    """A copy of the registry for tests that register policies, restored afterwards."""
    copy = dict(policy_registry._REGISTRY)
    monkeypatch.setattr(policy_registry, "_REGISTRY", copy)
    return copy


def _env(num_envs: int) -> SimpleNamespace:
    return SimpleNamespace(num_envs=num_envs, current_raw_obs=[{} for _ in range(num_envs)])


def test_builtin_policies_are_registered() -> None:
    assert {"zero", "random", "expert"} <= set(policy_names())
    assert policy_names() == sorted(policy_names())


def test_unknown_policy_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown policy 'oracle'; valid policies: expert, random, zero"):
        make_policy("oracle")


@pytest.mark.parametrize("name", ["zero", "random"])
@pytest.mark.parametrize(("num_envs", "chunk"), [(1, 1), (2, 8), (3, 5)], ids=["1x1", "2x8", "3x5"])
def test_actions_have_the_chunk_shape(name: str, num_envs: int, chunk: int) -> None:
    policy = make_policy(name, seed=0)
    policy.reset(_env(num_envs), {})
    actions = policy.act(_env(num_envs), {}, chunk)
    assert actions.shape == (num_envs, chunk, policies.ACTION_DIM) and actions.dtype == np.float32


def test_zero_policy_holds_still_with_the_gripper_open() -> None:
    actions = make_policy("zero").act(_env(2), {}, 4)
    assert not actions[..., :6].any()
    assert (actions[..., 6] == policies.GRIPPER_OPEN).all()


@pytest.mark.parametrize("scale", [0.1, 1.0], ids=["small", "full"])
def test_random_policy_stays_in_scale_and_opens_or_closes_the_gripper(scale: float) -> None:
    actions = make_policy("random", seed=1, scale=scale).act(_env(4), {}, 64)
    deltas = actions[..., :6]
    assert np.abs(deltas).max() <= scale and np.abs(deltas).max() > 0.8 * scale
    assert set(np.unique(actions[..., 6])) == {-1.0, 1.0}


def test_random_policy_is_reproducible_from_its_seed() -> None:
    def rollout(seed: int) -> np.ndarray:
        policy = make_policy("random", seed=seed)
        return np.stack([policy.act(_env(2), {}, 8) for _ in range(3)])

    np.testing.assert_array_equal(rollout(5), rollout(5))
    assert not np.array_equal(rollout(5), rollout(6))
    first = rollout(5)
    assert not np.array_equal(first[0], first[1]), "successive chunks differ"


@pytest.mark.parametrize("scale", [0.0, -0.5, 1.5], ids=["zero", "negative", "above-one"])
def test_random_policy_rejects_a_bad_scale(scale: float) -> None:
    with pytest.raises(ValueError, match=f"random policy scale must be in \\(0, 1\\], got {scale}"):
        make_policy("random", scale=scale)


def test_registering_twice_or_a_non_policy_fails(registry: dict) -> None:
    with pytest.raises(ValueError, match="policy name 'zero' is already registered by ZeroPolicy"):

        @register_policy("zero")
        class OtherZero(basic.ZeroPolicy):
            pass

    with pytest.raises(TypeError, match="needs a Policy subclass"):
        register_policy("not_a_policy")(object)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- the expert


def _scene_env(num_envs: int, task: str = TASK0) -> SimpleNamespace:
    """Raw observations of task 0's scene at its reset pose, as ``env.current_raw_obs`` holds."""
    return SimpleNamespace(
        num_envs=num_envs,
        current_raw_obs=[task0_raw_obs() for _ in range(num_envs)],
        task_descriptions=[task] * num_envs,
    )


def test_expert_heads_for_the_first_object_with_the_gripper_open() -> None:
    env = _scene_env(2)
    policy = make_policy("expert", seed=0)
    policy.reset(env, {})
    actions = policy.act(env, {}, 8)
    assert actions.shape == (2, 8, 7) and actions.dtype == np.float32
    # The soup is at -x, -y of the end effector: the first moves go that way.
    assert (actions[:, 0, 0] < 0).all() and (actions[:, 0, 1] < 0).all()
    assert (actions[..., 6] == policies.GRIPPER_OPEN).all()


def test_expert_must_be_reset_and_knows_its_tasks() -> None:
    policy = make_policy("expert")
    with pytest.raises(RuntimeError, match="before reset"):
        policy.act(_scene_env(1), {}, 8)
    with pytest.raises(ValueError, match="no plan for task 'open the top drawer'"):
        policy.reset(_scene_env(1, task="open the top drawer"), {})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"drop": "teleport"}, "expert drop 'teleport' is not a phase; valid: descend, close, lift, carry"),
        ({"drop_prob": 1.5}, "drop_prob must be a number in \\[0, 1\\], got 1.5"),
        ({"action_noise": -0.1}, "action_noise must be a number in \\[0, 1\\], got -0.1"),
        ({"action_noise": "high"}, "action_noise must be a number in \\[0, 1\\], got 'high'"),
        ({"noise": 0.1}, "unexpected keyword argument 'noise'"),
        ({"drop_prob": 0.5}, "drop_prob 0.5 needs a drop phase; valid drops: descend, close"),
        ({"place_noise": 0.5}, "place_noise must be metres in \\[0, 0.2\\], got 0.5"),
    ],
    ids=[
        "unknown-phase",
        "prob-above-one",
        "negative-noise",
        "noise-not-a-number",
        "unknown-option",
        "prob-without-drop",
        "place-noise-too-wide",
    ],
)
def test_expert_rejects_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        make_policy("expert", **options)


def test_drop_prob_decides_per_episode_and_is_reproducible() -> None:
    def drops(seed: int) -> list[bool]:
        return [
            ExpertController(TASK0, seed=seed * 1000 + k, drop="carry", drop_prob=0.5).dropping
            for k in range(64)
        ]

    assert drops(1) == drops(1)
    assert 16 < sum(drops(1)) < 48, "about half the episodes drop"
    assert not any(ExpertController(TASK0, seed=k, drop="carry", drop_prob=0.0).dropping for k in range(16))
    assert all(ExpertController(TASK0, seed=k, drop="carry").dropping for k in range(16))
    assert not ExpertController(TASK0, seed=0).dropping, "no drop phase, nothing to drop"


def test_dropping_does_not_change_the_noise() -> None:
    raw = _scene_env(1).current_raw_obs[0]
    experts = [
        ExpertController(TASK0, seed=s, action_noise=0.3, drop="carry", drop_prob=0.5) for s in range(8)
    ]
    assert {e.dropping for e in experts} == {True, False}
    for seed, expert in enumerate(experts):
        clean = ExpertController(TASK0, seed=seed, action_noise=0.3)
        np.testing.assert_array_equal(expert.act(raw, 8), clean.act(raw, 8))


@pytest.mark.parametrize(("noise", "low", "high"), [(0.0, 0.0, 0.0), (0.3, 0.1, 0.4)], ids=["clean", "noisy"])
def test_action_noise_perturbs_motion_only(noise: float, low: float, high: float) -> None:
    raw = _scene_env(1).current_raw_obs[0]
    clean = ExpertController(TASK0, seed=4).act(raw, 8)
    noisy = ExpertController(TASK0, seed=4, action_noise=noise).act(raw, 8)
    spread = float(np.abs(noisy[:, :6] - clean[:, :6]).mean())  # ~0.8 sigma, less where clipped
    assert low <= spread <= high
    assert np.abs(noisy).max() <= 1.0 and (noisy[:, 6] == clean[:, 6]).all()


def test_release_points_default_to_the_plan_and_are_jittered_per_episode() -> None:
    plan = [step.offset for step in ExpertController(TASK0).plan_steps]
    assert ExpertController(TASK0, seed=3).release == tuple(plan)
    jittered = [ExpertController(TASK0, seed=s, place_noise=0.05).release for s in range(32)]
    assert jittered[0] == ExpertController(TASK0, seed=0, place_noise=0.05).release, "reproducible"
    shifts = np.array(jittered) - np.array(plan)
    assert 0.03 < float(shifts.std()) < 0.07, "about place_noise, on x and y of both objects"
    assert len({j for j in jittered}) == 32, "a draw per episode"


def test_place_noise_does_not_change_the_drop_or_the_action_noise() -> None:
    raw = _scene_env(1).current_raw_obs[0]
    for seed in range(8):
        jittered = ExpertController(
            TASK0, seed=seed, action_noise=0.3, drop="carry", drop_prob=0.5, place_noise=0.05
        )
        clean = ExpertController(TASK0, seed=seed, action_noise=0.3, drop="carry", drop_prob=0.5)
        assert jittered.dropping == clean.dropping
        # the first chunk reaches for the first object: where it is let go does not matter yet
        np.testing.assert_array_equal(jittered.act(raw, 8), clean.act(raw, 8))


def test_release_sets_where_each_object_is_let_go() -> None:
    expert = ExpertController(TASK0, release=[(0.01, -0.05), (0.02, 0.06)])
    assert expert.release == ((0.01, -0.05), (0.02, 0.06))
    assert [step.offset for step in expert.plan_steps] == [(0.01, -0.05), (0.02, 0.06)]


def test_the_expert_policy_lets_every_episode_go_around_its_release_points() -> None:
    """``--policy-kwargs '{"release": ..., "place_noise": ...}'``: each episode its own draw around
    the same points (the learning comparison's policy, played outside RLinf)."""
    env = SimpleNamespace(task_descriptions=[TASK0, TASK0], num_envs=2)
    agent = make_policy("expert", seed=1, release=[(0.0, -0.07), (0.0, 0.07)], place_noise=0.015)
    agent.reset(env, {})
    first, second = (np.array(expert.release) for expert in agent._experts)
    assert not np.array_equal(first, second)
    for drawn in (first, second):
        assert np.abs(drawn - [(0.0, -0.07), (0.0, 0.07)]).max() < 0.06  # 4 standard deviations


@pytest.mark.parametrize(
    "release",
    [[(0.0, 0.0)], [(0.0, 0.0), (0.0, float("nan"))], [(0.0, 0.0, 0.0), (0.0, 0.0, 0.0)], "left"],
    ids=["one-point-for-two-objects", "not-finite", "three-coordinates", "not-points"],
)
def test_release_must_be_one_finite_point_per_object(release: Any) -> None:
    with pytest.raises(ValueError, match="expert release must be 2 finite \\(x, y\\) points in metres"):
        ExpertController(TASK0, release=release)
