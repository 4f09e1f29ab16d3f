"""A policy GRPO can improve on two CPU cores: the scripted expert with learnable release points.

:class:`ReleasePolicy` plays LIBERO's basket tasks with the project's scripted expert
(``reward_eval/policies/expert.py``) and learns one thing: where it lets each object go. At an
episode's first chunk it draws, per object, a release point (x, y, metres from the basket's
centre) from a Gaussian with learnable mean and standard deviation; the expert then carries the
objects there, unchanged otherwise. A point on the basket's floor is a placement, one on its rim
or beyond a miss, so an episode ends with 0, 1 or 2 objects placed and its success is decided by
the draw. The means start off-centre (``release_mean``), so some draws miss and the simulator's
success starts well inside (0, 1).

Why a draw per episode: GRPO compares the returns of a group's episodes and weights each
episode's log-probability by its advantage; with the whole decision in one draw, that
log-probability is the draw's, and the gradient is clean (noise on every action would bury it).

What RLinf sees is an ordinary embodied policy (``rlinf.models.register_model``, model type
:data:`MODEL_TYPE`): ``predict_action_batch`` returns 7-D actions (``num_action_chunks`` of them)
and per-chunk log-probabilities shaped like OpenVLA-OFT's (``num_action_chunks * action_dim``,
token level): the draw's log-density, one entry per coordinate, in the first entries of the
episode's first chunk, zeros elsewhere (the other chunks are the expert's, deterministic).
``default_forward`` recomputes them from ``forward_inputs`` for RLinf's actor.

It reads the simulator through the env's packed ``states`` (``simulation.expert_state: True``,
:mod:`rlinf.envs.libero.expert_state`) and keeps one expert per env id between chunks; a chunk
at elapsed step 0 starts a new episode.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from rlinf.models.embodiment.base_policy import BasePolicy
from torch import nn

from reward_eval.policies.expert import ExpertController
from reward_eval.policies.libero_plans import plan_for
from rlinf.envs.libero.expert_state import unpack

MODEL_TYPE = "release_expert"
OBJECTS = 2  # the libero_10 basket tasks put two objects in the basket
AXES = 2  # x, y


def _draw_size() -> int:
    return OBJECTS * AXES


class ReleasePolicy(nn.Module, BasePolicy):
    """The policy of the module docstring. ``mean`` / ``std``: ``(OBJECTS, 2)`` metres at the start.

    Learnable: ``shift`` (the means' change from ``mean``, so weight decay would pull back to the
    start, never towards the basket) and ``log_std``.
    """

    def __init__(
        self, mean: Any, std: float, num_action_chunks: int = 8, action_dim: int = 7, seed: int = 0
    ) -> None:
        super().__init__()
        start = torch.as_tensor(mean, dtype=torch.float32)
        if start.shape != (OBJECTS, AXES) or not torch.isfinite(start).all():
            raise ValueError(f"release_mean must be {OBJECTS} finite (x, y) points in metres, got {mean!r}.")
        if isinstance(std, bool) or not isinstance(std, (int, float)) or not 0.0 < std <= 0.2:
            raise ValueError(f"release_std must be metres in (0, 0.2], got {std!r}.")
        if num_action_chunks * action_dim < _draw_size():
            raise ValueError(
                f"a chunk of {num_action_chunks}x{action_dim} cannot hold the draw's {_draw_size()} "
                "log-densities."
            )
        self.register_buffer("start", start)
        self.shift = nn.Parameter(torch.zeros(OBJECTS, AXES))
        self.log_std = nn.Parameter(torch.full((OBJECTS, AXES), math.log(std)))
        self.num_action_chunks, self.action_dim = num_action_chunks, action_dim
        self._rng = np.random.default_rng(seed)
        self._experts: dict[int, ExpertController] = {}  # env id -> the expert of its episode

    # ---- what is learnt -------------------------------------------------------------------

    def distribution(self) -> torch.distributions.Normal:
        """The release points' Gaussian, ``(OBJECTS, 2)``."""
        return torch.distributions.Normal(self.start + self.shift, self.log_std.exp())

    def logprobs(self, release: torch.Tensor, drawn: torch.Tensor) -> torch.Tensor:
        """``(B, chunks * action_dim)`` float32: each drawn row's log-densities first, zeros elsewhere."""
        per_coordinate = self.distribution().log_prob(release.reshape(-1, OBJECTS, AXES).float())
        out = torch.zeros(release.shape[0], self.num_action_chunks * self.action_dim, dtype=torch.float32)
        out = out.to(per_coordinate.device)
        out[:, : _draw_size()] = per_coordinate.reshape(-1, _draw_size()) * drawn.reshape(-1, 1).float()
        return out

    # ---- RLinf's embodied-policy interface ------------------------------------------------

    def forward(self, forward_type: Any = None, **kwargs: Any) -> dict[str, torch.Tensor]:
        return self.default_forward(**kwargs)

    def default_forward(
        self,
        forward_inputs: dict[str, torch.Tensor],
        compute_logprobs: bool = True,
        compute_entropy: bool = False,
        compute_values: bool = False,
        **kwargs: Any,
    ) -> dict[str, torch.Tensor]:
        """RLinf's actor pass: the log-probabilities of the rollout's draws under today's Gaussian."""
        if compute_values:
            raise NotImplementedError("release_expert has no value head; use GRPO (adv_type grpo).")
        out: dict[str, torch.Tensor] = {}
        if compute_logprobs:
            out["logprobs"] = self.logprobs(forward_inputs["release"], forward_inputs["drawn"])
        if compute_entropy:
            entropy = (
                self.distribution().entropy().reshape(1, -1).expand(forward_inputs["drawn"].shape[0], -1)
            )
            out["entropy"] = entropy
        return out

    @torch.no_grad()
    def predict_action_batch(self, env_obs: dict[str, Any], mode: str = "train", **kwargs: Any) -> tuple:
        """Actions for one chunk of every env in ``env_obs``; a draw for each env starting an episode."""
        states = torch.as_tensor(env_obs["states"]).cpu().numpy()
        tasks = list(env_obs["task_descriptions"])
        batch = len(tasks)
        actions = np.zeros((batch, self.num_action_chunks, self.action_dim), dtype=np.float32)
        release = np.zeros((batch, _draw_size()), dtype=np.float32)
        drawn = np.zeros(batch, dtype=np.float32)
        for row, (state, task) in enumerate(zip(states, tasks, strict=True)):
            plan = plan_for(task)
            view = unpack(state, [step.obj for step in plan] + [plan[0].container])
            if view.elapsed == 0:
                point = self._draw(mode)
                self._experts[view.env_id] = ExpertController(task, release=point.reshape(OBJECTS, AXES))
                release[row], drawn[row] = point, 1.0
            elif view.env_id not in self._experts:
                raise RuntimeError(
                    f"env {view.env_id} is at step {view.elapsed} of an episode whose start this policy "
                    "never saw."
                )
            actions[row] = self._experts[view.env_id].act(view.raw_obs, self.num_action_chunks)
        release_t, drawn_t = torch.from_numpy(release), torch.from_numpy(drawn)
        result = {
            "prev_logprobs": self.logprobs(release_t, drawn_t),
            "prev_values": torch.zeros(batch, 1),
            "forward_inputs": {
                "action": torch.from_numpy(actions.reshape(batch, -1)),
                "release": release_t,
                "drawn": drawn_t,
            },
        }
        return torch.from_numpy(actions), result

    def _draw(self, mode: str) -> np.ndarray:
        dist = self.distribution()
        mean, std = dist.mean.reshape(-1).numpy(), dist.stddev.reshape(-1).numpy()
        if mode == "eval":  # evaluation plays the mean
            return mean.astype(np.float32)
        return (mean + std * self._rng.standard_normal(_draw_size())).astype(np.float32)


def release_parameters(state_dict: dict[str, torch.Tensor]) -> dict[str, list[list[float]]]:
    """The release Gaussian's mean and standard deviation per object (x, y), in metres, from a
    policy's state dict (keys may carry a wrapper's prefix)."""
    by_name = {key.rsplit(".", 1)[-1]: value for key, value in state_dict.items()}
    missing = {"start", "shift", "log_std"} - set(by_name)
    if missing:
        raise KeyError(f"not a release_expert state dict: no {sorted(missing)} among {sorted(state_dict)}.")
    mean = by_name["start"].float() + by_name["shift"].float()
    return {"mean": mean.tolist(), "std": by_name["log_std"].float().exp().tolist()}


def build(cfg: Any, torch_dtype: Any = None) -> ReleasePolicy:
    """RLinf's model builder (``register_model``): the policy from ``actor.model``'s keys."""
    return ReleasePolicy(
        mean=[list(point) for point in cfg.release_mean],
        std=float(cfg.release_std),
        num_action_chunks=int(cfg.num_action_chunks),
        action_dim=int(cfg.action_dim),
        seed=int(cfg.get("draw_seed", 0)),
    )
