"""The learnable-release expert as RLinf sees it (examples/embodiment/cpu_learn/policy.py; no simulator).

The policy reads packed simulator states (rlinf/envs/libero/expert_state.py) of task 0's scene; RLinf's
own loss (``rlinf.algorithms.registry.policy_loss``, as the FSDP actor calls it) trains it here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from examples.embodiment.cpu_learn.policy import ReleasePolicy, release_parameters
from reward_eval.policies.expert import ExpertController
from rlinf.envs.libero.expert_state import pack
from tests.support.expert_scene import TASK0, task0_raw_obs

RAW = {**task0_raw_obs(), "basket_1_quat": np.array([0.0, 0.0, 0.0, 1.0])}
MEAN = [[0.0, -0.06], [0.0, 0.065]]


def observe(elapsed: list[int], env_ids: list[int] | None = None) -> dict[str, Any]:
    """What RLinf's rollout worker hands the policy for envs at these elapsed steps."""
    ids = env_ids or list(range(len(elapsed)))
    states = np.stack([pack(RAW, env, step) for env, step in zip(ids, elapsed, strict=True)])
    return {"states": torch.as_tensor(states), "task_descriptions": [TASK0] * len(elapsed)}


def test_an_episode_draws_once_at_its_start_and_the_expert_lets_go_there() -> None:
    policy = ReleasePolicy(MEAN, 0.015, seed=3)
    actions, result = policy.predict_action_batch(observe([0, 0]))
    draws = result["forward_inputs"]["release"]
    assert result["forward_inputs"]["drawn"].tolist() == [1.0, 1.0]
    assert not torch.equal(draws[0], draws[1]), "each env its own draw"
    expected = ExpertController(TASK0, release=draws[0].reshape(2, 2).tolist()).act(RAW, 8)
    np.testing.assert_array_equal(actions[0].numpy(), expected)
    _, later = policy.predict_action_batch(observe([8, 8]))
    assert later["forward_inputs"]["drawn"].tolist() == [0.0, 0.0]
    assert not later["prev_logprobs"].any(), "the expert's chunks carry no log-probability"


def test_a_chunk_of_an_episode_it_never_saw_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="env 5 is at step 16 of an episode whose start this policy"):
        ReleasePolicy(MEAN, 0.015).predict_action_batch(observe([16], env_ids=[5]))


def test_the_actor_recomputes_the_rollouts_logprobs_exactly() -> None:
    policy = ReleasePolicy(MEAN, 0.015, seed=0)
    _, result = policy.predict_action_batch(observe([0, 8, 0], env_ids=[0, 0, 1]))
    recomputed = policy(forward_inputs=result["forward_inputs"])["logprobs"]
    assert recomputed.shape == (3, 56) and recomputed.dtype == torch.float32
    torch.testing.assert_close(recomputed, result["prev_logprobs"], rtol=0, atol=0)
    drawn_row = result["prev_logprobs"][0]
    assert drawn_row[:4].ne(0).all() and not drawn_row[4:].any(), "four coordinates, then zeros"


def test_rlinfs_loss_moves_the_means_towards_the_draws_with_positive_advantage() -> None:
    from rlinf.algorithms.registry import policy_loss

    policy = ReleasePolicy(MEAN, 0.015, seed=1)
    _, result = policy.predict_action_batch(observe([0] * 8, env_ids=list(range(8))))
    release = result["forward_inputs"]["release"]
    advantages = torch.tensor([1.0, -1.0] * 4)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=0.003, weight_decay=0.0)
    loss, _ = policy_loss(
        loss_type="actor",
        task_type="embodied",
        logprob_type="token_level",
        reward_type="action_level",
        single_action_dim=7,
        logprobs=policy(forward_inputs=result["forward_inputs"])["logprobs"],
        old_logprobs=result["prev_logprobs"],
        advantages=advantages.reshape(8, 1).expand(8, 8).contiguous(),
        clip_ratio_low=0.2,
        clip_ratio_high=0.28,
    )
    loss.backward()
    optimizer.step()
    before = torch.tensor(MEAN).reshape(-1)
    after = torch.tensor(release_parameters(policy.state_dict())["mean"]).reshape(-1)
    pull = (advantages.reshape(-1, 1) * (release - before)).sum(dim=0)  # the policy gradient's sign
    assert torch.equal(torch.sign(after - before), torch.sign(pull))


def test_release_parameters_read_a_wrapped_state_dict() -> None:
    policy = ReleasePolicy(MEAN, 0.02)
    wrapped = {f"_fsdp_wrapped_module.{key}": value for key, value in policy.state_dict().items()}
    params = release_parameters(wrapped)
    assert np.allclose(params["mean"], MEAN) and np.allclose(params["std"], 0.02)
    with pytest.raises(KeyError, match="not a release_expert state dict"):
        release_parameters({"weight": torch.zeros(1)})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mean": [[0.0, 0.0]], "std": 0.01}, "release_mean must be 2 finite \\(x, y\\) points"),
        ({"mean": MEAN, "std": 0.0}, "release_std must be metres in \\(0, 0.2\\], got 0.0"),
        ({"mean": MEAN, "std": 0.01, "num_action_chunks": 1, "action_dim": 3}, "cannot hold the draw's 4"),
    ],
    ids=["one-object", "no-spread", "tiny-chunk"],
)
def test_bad_settings_are_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReleasePolicy(**kwargs)
