"""What a trajectory weighs in RLinf's actor loss for the ``--cpu-learn`` policy (seconds, no Ray).

RLinf's real actor code runs on a stand-in actor object (no FSDP, no worker): the received batch is
processed by ``CpuLearnActor._process_received_rollout_batch`` (RLinf's loss mask, ``loss_mask_sum``
and reward filter, then :func:`~examples.embodiment.cpu_learn.weights.equal_trajectory_weights`),
GRPO's advantages by RLinf's ``compute_advantages_and_returns`` and the loss and its backward pass by
RLinf's ``train_micro_batch``, one trajectory's rows at a time, so each trajectory's gradient with
respect to the release parameters is seen on its own. The batch is libero_10's settings in small:
4 chunks of 2 steps (an 8-step horizon), 2 GRPO groups of 4, ``reward_coef`` 5, the mission's
reward filter (bounds 0.5 and 4.5).
"""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from rlinf.scheduler.hardware.accelerators.accelerator import AcceleratorType

from examples.embodiment.cpu_learn import hook
from examples.embodiment.cpu_learn.actor import CpuLearnActor
from examples.embodiment.cpu_learn.policy import MODEL_TYPE, ReleasePolicy
from examples.embodiment.cpu_learn.weights import equal_trajectory_weights, per_step_loss_mask

CHUNKS, CHUNK, GROUP, COEF = 4, 2, 4, 5.0
HORIZON = CHUNKS * CHUNK
ACTION_DIM = 7
RELEASE = [0.01, -0.05, -0.01, 0.07]  # every trajectory draws the same point: only lengths differ


@pytest.fixture(scope="module", autouse=True)
def one_rank(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A one-process gloo group: RLinf's rollout metrics all-reduce over the actor ranks."""
    import torch.distributed as dist

    if dist.is_initialized():
        yield
        return
    store = tmp_path_factory.mktemp("gloo") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _cfg(ignore_terminations: bool = False) -> Any:
    return OmegaConf.create(
        {
            "runner": {"task_type": "embodied"},
            "algorithm": {
                "group_size": GROUP,
                "adv_type": "grpo",
                "reward_type": "action_level",
                "logprob_type": "token_level",
                "loss_type": "actor",
                "clip_ratio_high": 0.28,
                "clip_ratio_low": 0.2,
                "filter_rewards": True,
                "rewards_lower_bound": 0.5,
                "rewards_upper_bound": 4.5,
                "entropy_bonus": 0,
                "gamma": 1.0,
                "gae_lambda": 1.0,
            },
            "env": {
                "train": {
                    "rollout_epoch": 1,
                    "auto_reset": False,
                    "ignore_terminations": ignore_terminations,
                    "max_episode_steps": HORIZON,
                    "reward_coef": COEF,
                }
            },
            "actor": {"seed": 0, "model": {"model_type": MODEL_TYPE, "action_dim": ACTION_DIM}},
        }
    )


def _actor(cfg: Any) -> CpuLearnActor:
    """RLinf's actor methods' ``self``: the attributes they read, nothing of a worker."""
    hook.register()  # release_expert known to RLinf's SupportedModel
    actor = object.__new__(CpuLearnActor)
    policy = ReleasePolicy(
        [[0.0, -0.06], [0.0, 0.065]], 0.015, num_action_chunks=CHUNK, action_dim=ACTION_DIM
    )
    fields = {
        "cfg": cfg,
        "model": policy,
        "device": torch.device("cpu"),
        "amp_context": nullcontext(),
        "before_micro_batch": lambda model, is_last_micro_batch: nullcontext(),
        "optimizer_steps": 1,
        "critic_warmup_steps": 0,
        "enable_sft_co_train": False,
        "gradient_accumulation": 1,
        "grad_scaler": SimpleNamespace(scale=lambda loss: loss),
        "_timer_metrics": {},  # RLinf's Worker.timer adds to it
        "_accelerator_type": AcceleratorType.NO_ACCEL,
    }
    for name, value in fields.items():
        setattr(actor, name, value)
    return actor


def _batch(policy: ReleasePolicy, ends: list[int], rewards_at_end: list[float]) -> dict[str, Any]:
    """A received rollout batch: trajectory j's episode ends at step ``ends[j]`` (1-based) with
    ``rewards_at_end[j]`` there (``use_rel_reward``: the held signal's difference is 0 after it)."""
    n = len(ends)
    dones = torch.zeros(CHUNKS + 1, n, CHUNK, dtype=torch.bool)
    rewards = torch.zeros(CHUNKS, n, CHUNK)
    for j, (end, reward) in enumerate(zip(ends, rewards_at_end, strict=True)):
        chunk, position = divmod(end - 1, CHUNK)
        rewards[chunk, j, position] = reward
        flat = dones[1:].transpose(1, 2).reshape(-1, n)  # steps in order, a view of dones[1:]
        flat[end - 1 :, j] = True  # an ended env keeps reporting done until its reset
        dones[1:] = flat.reshape(CHUNKS, CHUNK, n).transpose(1, 2)
    release = torch.tensor(RELEASE).expand(CHUNKS, n, 4).clone()
    drawn = torch.zeros(CHUNKS, n)
    drawn[0] = 1.0  # the draw is in the episode's first chunk
    logprobs = torch.stack([policy.logprobs(release[c], drawn[c]) for c in range(CHUNKS)]).detach()
    forward_inputs = {
        "release": release,
        "drawn": drawn,
        "action": torch.zeros(CHUNKS, n, CHUNK * ACTION_DIM),
    }
    return {"dones": dones, "rewards": rewards, "prev_logprobs": logprobs, "forward_inputs": forward_inputs}


def trajectory_gradients(cfg: Any, ends: list[int], rewards_at_end: list[float]) -> tuple[np.ndarray, dict]:
    """Each trajectory's gradient of RLinf's actor loss w.r.t. the release means and log-stds,
    ``[trajectories, 8]``, and the batch the actor trained on."""
    from rlinf.workers.actor.fsdp_actor_worker import EmbodiedFSDPActor, process_nested_dict_for_train

    actor = _actor(cfg)
    actor.rollout_batch = actor._process_received_rollout_batch(_batch(actor.model, ends, rewards_at_end))
    EmbodiedFSDPActor.compute_advantages_and_returns(actor)  # RLinf's, not the recording override
    n = len(ends)
    rows = process_nested_dict_for_train(actor.rollout_batch, torch.arange(CHUNKS * n))  # row c * n + j
    grads = []
    for j in range(n):
        mine = torch.arange(CHUNKS) * n + j
        micro = _select(rows, mine)
        actor.model.zero_grad()
        EmbodiedFSDPActor.train_micro_batch(actor, micro, {}, is_last=True)
        grads.append(torch.cat([actor.model.shift.grad.reshape(-1), actor.model.log_std.grad.reshape(-1)]))
    return torch.stack(grads).numpy(), actor.rollout_batch


def _select(rows: dict[str, Any], index: torch.Tensor) -> dict[str, Any]:
    return {
        key: _select(value, index) if isinstance(value, dict) else (None if value is None else value[index])
        for key, value in rows.items()
    }


# Group 0 (kept by the filter: mean return 2.5): two successes at steps 3 and 7, two failures to the
# horizon. Group 1: a graded score of 0.08 on one failure, mean return 0.1 < 0.5: the filter drops it.
ENDS = [3, 7, HORIZON, HORIZON, HORIZON, HORIZON, HORIZON, HORIZON]
REWARDS = [COEF, COEF, 0.0, 0.0, 0.08 * COEF, 0.0, 0.0, 0.0]


def test_two_successes_of_different_lengths_pull_the_release_points_alike() -> None:
    grads, batch = trajectory_gradients(_cfg(), ENDS, REWARDS)
    advantages = batch["advantages"][0, :, 0]
    assert advantages[0] == advantages[1] > 0, "equal returns in one group: equal advantages"
    assert np.abs(grads[0]).max() > 1e-3, "a success pulls"
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(grads[2], grads[3], rtol=1e-5, atol=1e-9)
    assert np.all(np.sign(grads[2][grads[2] != 0]) == -np.sign(grads[0][grads[2] != 0])), "failures push back"


def test_the_reward_filter_leaves_the_dropped_group_no_gradient() -> None:
    grads, batch = trajectory_gradients(_cfg(), ENDS, REWARDS)
    assert not batch["loss_mask"][:, GROUP:].any(), "group 1's mean return 0.1 is below the bound 0.5"
    assert batch["loss_mask"][:, :GROUP].any()
    np.testing.assert_array_equal(grads[GROUP:], 0.0)


def test_every_trajectory_weighs_the_horizon_whatever_its_length() -> None:
    _, batch = trajectory_gradients(_cfg(), ENDS, REWARDS)
    assert batch["loss_mask_sum"][0, :, 0].tolist() == [HORIZON] * len(ENDS)
    # the loss mask still ends each episode at its end step
    assert batch["loss_mask"][:, 0].sum().item() == 3 and batch["loss_mask"][:, 1].sum().item() == 7


@pytest.mark.parametrize("steps", [0, -1, 2.0, True], ids=["zero", "negative", "float", "bool"])
def test_the_horizon_must_be_a_positive_int(steps: Any) -> None:
    with pytest.raises(ValueError, match="max_episode_steps must be a positive int"):
        equal_trajectory_weights({}, steps)


def test_a_batch_without_lengths_is_left_as_it_is() -> None:
    batch = {"loss_mask": torch.ones(2, 2, 1, dtype=torch.bool)}
    assert equal_trajectory_weights(batch, HORIZON) == batch and "loss_mask_sum" not in batch


def test_judge_only_batches_train_with_the_filter_on() -> None:
    """``ignore_terminations: True``: RLinf sets no mask from terminations, its reward filter makes a
    per-chunk one, which the actor makes per step (RLinf's advantage code fails on it otherwise)."""
    ends = [HORIZON] * len(ENDS)  # every episode runs to the horizon, scored at its truncation
    grads, batch = trajectory_gradients(_cfg(ignore_terminations=True), ends, REWARDS)
    assert batch["loss_mask"].shape == batch["rewards"].shape
    assert "loss_mask_sum" not in batch, "RLinf's plain masked mean: equal weights already"
    assert not batch["loss_mask"][:, GROUP:].any() and batch["loss_mask"][:, :GROUP].all()
    np.testing.assert_array_equal(grads[GROUP:], 0.0)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-9)
    assert np.abs(grads[0]).max() > 1e-3, "a success pulls"
    assert np.all(np.sign(grads[2][grads[2] != 0]) == -np.sign(grads[0][grads[2] != 0])), "failures push back"


@pytest.mark.parametrize(
    ("mask_shape", "expected"),
    [((CHUNKS, 2, 1), (CHUNKS, 2, CHUNK)), ((CHUNKS, 2, CHUNK), (CHUNKS, 2, CHUNK)), (None, None)],
    ids=["per-chunk", "per-step", "none"],
)
def test_a_per_chunk_mask_is_made_per_step(mask_shape: Any, expected: Any) -> None:
    batch: dict[str, Any] = {"rewards": torch.zeros(CHUNKS, 2, CHUNK)}
    if mask_shape is not None:
        batch["loss_mask"] = torch.ones(mask_shape, dtype=torch.bool)
    out = per_step_loss_mask(batch)
    assert (None if out.get("loss_mask") is None else tuple(out["loss_mask"].shape)) == expected


def test_a_mask_of_another_shape_is_refused() -> None:
    batch = {
        "rewards": torch.zeros(CHUNKS, 2, CHUNK),
        "loss_mask": torch.ones(CHUNKS, 3, 1, dtype=torch.bool),
    }
    with pytest.raises(ValueError, match="fits neither"):
        per_step_loss_mask(batch)
