"""The policy registry and the built-in policies of the evaluation job.

Policies read ``env.num_envs`` (and, for a future expert, ``env.current_raw_obs``); a
namespace with those attributes stands in for the LIBERO env, which the job tests run.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from examples.embodiment.reward_eval import policies
from examples.embodiment.reward_eval.policies import Policy, make_policy, policy_names, register_policy


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict:
    """A copy of the registry for tests that register policies, restored afterwards."""
    copy = dict(policies._REGISTRY)
    monkeypatch.setattr(policies, "_REGISTRY", copy)
    return copy


def _env(num_envs: int) -> SimpleNamespace:
    return SimpleNamespace(num_envs=num_envs, current_raw_obs=[{} for _ in range(num_envs)])


def test_builtin_policies_are_registered() -> None:
    assert {"zero", "random"} <= set(policy_names())
    assert policy_names() == sorted(policy_names())


def test_unknown_policy_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown policy 'expert'; valid policies: .*random.*zero"):
        make_policy("expert")


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


def test_a_registered_policy_gets_the_env_and_its_options(registry: dict) -> None:
    seen: dict[str, Any] = {}

    @register_policy("reads_sim_state")
    class ReadsSimState(Policy):
        def __init__(self, seed: int = 0, gain: float = 1.0) -> None:
            super().__init__(seed)
            self.gain = gain

        def reset(self, env: Any, obs: dict[str, Any]) -> None:
            seen["reset_raw_obs"] = env.current_raw_obs

        def act(self, env: Any, obs: dict[str, Any], chunk: int) -> np.ndarray:
            return np.full((env.num_envs, chunk, 7), self.gain, dtype=np.float32)

    assert "reads_sim_state" in policy_names()
    policy = make_policy("reads_sim_state", seed=3, gain=0.25)
    env = _env(2)
    policy.reset(env, {})
    assert seen["reset_raw_obs"] is env.current_raw_obs
    assert policy.name == "reads_sim_state" and policy.seed == 3
    assert (policy.act(env, {}, 2) == 0.25).all()


def test_registering_twice_or_a_non_policy_fails(registry: dict) -> None:
    with pytest.raises(ValueError, match="policy name 'zero' is already registered by ZeroPolicy"):

        @register_policy("zero")
        class OtherZero(policies.ZeroPolicy):
            pass

    with pytest.raises(TypeError, match="needs a Policy subclass"):
        register_policy("not_a_policy")(object)  # type: ignore[arg-type]


def test_a_policy_must_implement_act() -> None:
    class NoAct(Policy):
        pass

    with pytest.raises(TypeError, match="abstract"):
        NoAct()  # type: ignore[abstract]
