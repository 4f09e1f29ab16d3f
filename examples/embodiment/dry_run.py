"""Check a training setup without GPUs: ``run_embodiment.sh --dry-run CONFIG [overrides...]``.

In order, and stopping at the first failure with a message that says what to fix:

1. before Ray starts (seconds, so a server that is down or a wrong path fails at once): if
   ``env.train.reward_model.enable``, checks that each reward server answers ``/health``, lets
   this env in with its key, and that the env's requests (``nframes``, ``max_pixels``) fit the
   server's caps, which would otherwise refuse every episode with 422; with ``reward_server.enable``
   instead (the run starts its judges on its Ray cluster, ``judge_replicas.py``), checks that block;
   for OpenVLA-OFT, checks the checkpoint's files at ``actor.model.model_path``
   (``oft_checkpoint.py``: ``config.json``, norm stats for ``unnorm_key``);
2. composes the hydra config and validates it with RLinf's ``validate_cfg`` (which starts Ray);
3. checks that ``env.train.group_size`` equals ``algorithm.group_size`` (GRPO compares the
   rollouts of one initial state); with ``reward_server``, prints the replicas' plan checked
   against the cluster, starting nothing;
4. for OpenVLA-OFT, checks the stored weight names and shapes against the model built from the
   checkpoint's config on the meta device (no weights loaded);
5. builds the env class RLinf's env worker would build (``get_env_cls``) with one env,
   resets it and runs one ``chunk_step`` of idle actions. With the reward model on, the
   episode is cut to that one chunk so the server actually scores it (not with
   ``reward_server``: its replicas only exist while the run does).

Exit status 0 when everything passed, 1 otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any

import hydra
import numpy as np
import requests
from omegaconf import DictConfig, OmegaConf, open_dict

from vlm_reward.errors import LimitExceededError
from vlm_reward.exit_statuses import EXIT_FAILED
from vlm_reward.protocol import authorization
from vlm_reward.server.limits import RequestLimits
from vlm_reward.tools.server_process import health_url, route_url


class SetupError(RuntimeError):
    """A check failed; the message says what and how to fix it."""


def check_group_sizes(cfg: DictConfig) -> None:
    env_group, algo_group = cfg.env.train.group_size, cfg.algorithm.group_size
    if env_group != algo_group:
        raise SetupError(
            f"env.train.group_size ({env_group}) != algorithm.group_size ({algo_group}): GRPO groups would "
            "compare different initial states; set env.train.group_size=${algorithm.group_size}."
        )


def check_reward_server(endpoint: str, timeout: float = 10.0, ca_bundle: str | None = None) -> str:
    """Return the server's health JSON as text; raise ``SetupError`` if it is not ready."""
    url = health_url(endpoint)
    try:
        response = requests.get(url, timeout=timeout, verify=ca_bundle or True)
    except requests.RequestException as exc:
        raise SetupError(
            f"reward server not reachable at {url} ({type(exc).__name__}); start it with "
            "examples/embodiment/scripts/start_reward_server.sh or fix env.train.reward_model.endpoint."
        ) from exc
    if response.status_code != 200:
        raise SetupError(
            f"reward server at {url} is not ready (HTTP {response.status_code}): {response.text[:300]}"
        )
    return response.text


def check_reward_key(endpoint: str, api_key: str | None, ca_bundle: str | None, timeout: float = 10.0) -> str:
    """``SetupError`` unless the server lets this env in: ``GET /backends`` needs the key when the
    server has keys (``/health`` never does), so a wrong or missing key shows here, not as a
    run of ``unauthorized`` fallbacks."""
    url = route_url(endpoint, "/backends")
    headers = {} if api_key is None else {"Authorization": authorization(api_key)}
    response = requests.get(url, headers=headers, timeout=timeout, verify=ca_bundle or True)
    if response.status_code == 401:
        raise SetupError(
            f"reward server at {url} refused the API key (401): set reward_model.api_key_env to the "
            "name of the environment variable holding the server's key, and export it."
        )
    if response.status_code != 200:
        raise SetupError(
            f"reward server at {url} answered HTTP {response.status_code}: {response.text[:300]}"
        )
    return "key accepted" if api_key is not None else "no key needed"


def check_within_server_limits(reward_model: DictConfig, health: dict[str, Any]) -> None:
    """``SetupError`` if the env's requests are above a cap the server reports in ``/health``.

    The caps are checked by the server's own rules (:meth:`RequestLimits.check_request`), so
    the dry run refuses exactly what the server would refuse for every episode.
    """
    reported = health.get("limits")
    if not reported:
        return  # a server that reports no caps: nothing to check against
    known = {f.name for f in dataclasses.fields(RequestLimits)}
    limits = RequestLimits(**{name: value for name, value in reported.items() if name in known})
    kwargs = reward_model.get("backend_kwargs") or {}
    try:
        limits.check_request(
            nframes=reward_model.nframes,
            max_pixels=reward_model.max_pixels,
            task_text="",  # the longest LIBERO instruction is far below any cap
            backend_kwargs=OmegaConf.to_container(kwargs) if isinstance(kwargs, DictConfig) else kwargs,
        )
    except LimitExceededError as exc:
        raise SetupError(f"reward_model {exc.message.rstrip('.')}: every episode would be refused.") from None


def _is_oft(cfg: DictConfig) -> bool:
    return str(cfg.actor.model.model_type) == "openvla_oft"


def check_policy_files(cfg: DictConfig) -> None:
    """The configured OpenVLA-OFT checkpoint's files (before Ray: a wrong path fails at once)."""
    model_cfg = cfg.actor.model
    if not _is_oft(cfg):
        print(
            f"[dry-run] policy {model_cfg.model_type}: its checkpoint is not checked (only openvla_oft's is)"
        )
        return
    from pathlib import Path

    from examples.embodiment.oft_checkpoint import CheckpointError, check_checkpoint

    try:
        check_checkpoint(Path(str(model_cfg.model_path)), str(model_cfg.unnorm_key))
    except CheckpointError as exc:
        raise SetupError(str(exc)) from exc


def check_policy_weights(cfg: DictConfig) -> None:
    """The checkpoint's stored weights fit the model RLinf will build (OpenVLA-OFT only)."""
    if not _is_oft(cfg):
        return
    from examples.embodiment.oft_checkpoint import CheckpointError, check_weights

    model_cfg = cfg.actor.model
    try:
        tensors = check_weights(model_cfg)
    except CheckpointError as exc:
        raise SetupError(str(exc)) from exc
    print(
        f"[dry-run] policy OpenVLA-OFT at {model_cfg.model_path}: config.json, norm stats for "
        f"{model_cfg.unnorm_key!r} and {tensors} stored tensors fit the model built on the meta device"
    )


def smoke_env(cfg: DictConfig, score: bool = True) -> None:
    """One env of the train env class: reset and one chunk step of idle actions (scored by the
    reward server when the reward model is on and ``score``)."""
    from rlinf.envs import get_env_cls

    env_cfg = OmegaConf.create(OmegaConf.to_container(cfg.env.train, resolve=True))
    chunk = int(cfg.actor.model.num_action_chunks)
    with open_dict(env_cfg):
        env_cfg.group_size = 1
        env_cfg.video_cfg.save_video = False
        env_cfg.reward_model.enable = bool(env_cfg.reward_model.enable and score)
        if env_cfg.reward_model.enable:
            env_cfg.max_episode_steps = chunk  # end the episode so the server scores it
    env_cls = get_env_cls(env_cfg.env_type, env_cfg)
    print(f"[dry-run] env class {env_cls.__module__}.{env_cls.__qualname__}")
    env = env_cls(cfg=env_cfg, num_envs=1, seed_offset=0, total_num_processes=1, worker_info=None)
    try:
        started = time.perf_counter()
        obs, _ = env.reset()
        print(f"[dry-run] reset in {time.perf_counter() - started:.1f} s: {obs['task_descriptions'][0]!r}")
        actions = np.zeros((1, chunk, int(cfg.actor.model.action_dim)), dtype=np.float32)
        actions[..., -1] = -1.0
        _, rewards, _, _, infos = env.chunk_step(actions)
        episode = infos[-1].get("episode", {})
        vlm = {k: float(v[0]) for k, v in episode.items() if k.startswith("vlm_")}
        print(f"[dry-run] chunk_step of {chunk}: reward sum {float(rewards.sum()):.3f}, VLM metrics {vlm}")
        if env_cfg.reward_model.enable and vlm.get("vlm_scored") != 1.0:
            raise SetupError("the episode ended but was not scored; see the warnings above.")
    finally:
        env.close()
        env.env.close()


def judge_plan(cfg: DictConfig, judges: Any) -> None:
    """The ``reward_server`` replicas' plan, checked against the cluster; nothing is started."""
    from examples.embodiment.judge_replicas import cluster_plan
    from vlm_reward.ray_replicas.plan import PlanError

    try:
        plan = cluster_plan(cfg, judges)
    except PlanError as exc:
        raise SetupError(str(exc)) from None
    for line in plan.describe():
        print(f"[dry-run] reward_server: {line}")
    print(
        "[dry-run] reward_server: the plan fits the cluster; the run starts the replicas (not --dry-run), "
        "so the env step below is not scored"
    )


def judge_request_line(block: Any) -> str:
    """What every episode's request asks the judge, and the success rule, on one line."""
    asked = ", ".join(f"{key} {json.dumps(value)}" for key, value in block.judge_request().items())
    return f"{asked}; a success at score >= {block.success_threshold:g}"


def check_reward_servers(reward_model: DictConfig) -> None:
    """Every endpoint of the env's ``reward_model`` answers ``/health``, lets the env in with its
    key, and takes the env's requests."""
    from vlm_reward.client.config import RewardModelConfig

    parsed = RewardModelConfig.from_mapping(reward_model)
    try:
        api_key = parsed.api_key()
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    for endpoint in parsed.endpoints:  # every replica
        health = check_reward_server(endpoint, ca_bundle=parsed.ca_bundle)
        print(f"[dry-run] reward server healthy: {health}")
        print(f"[dry-run] reward server {endpoint}: {check_reward_key(endpoint, api_key, parsed.ca_bundle)}")
        check_within_server_limits(reward_model, json.loads(health))


def run_checks(cfg: DictConfig) -> None:
    from examples.embodiment.judge_replicas import judge_settings, validate_with_judges
    from vlm_reward.client.config import RewardModelConfig
    from vlm_reward.ray_replicas.plan import PlanError

    try:
        judges = judge_settings(cfg)  # before Ray starts
    except (ValueError, TypeError) as exc:
        raise SetupError(str(exc)) from None
    reward_model = cfg.env.train.reward_model
    if judges is None and reward_model.enable:
        check_reward_servers(reward_model)
    check_policy_files(cfg)
    try:
        cfg = validate_with_judges(cfg, judges)
    except PlanError as exc:
        raise SetupError(str(exc)) from None
    print("[dry-run] config composed and validated by rlinf.config.validate_cfg")
    check_group_sizes(cfg)
    print(f"[dry-run] group sizes match ({cfg.algorithm.group_size})")
    reward_model = cfg.env.train.reward_model
    if reward_model.enable:
        asked = judge_request_line(RewardModelConfig.from_mapping(reward_model))
        print(f"[dry-run] the env asks the judge: {asked}")
    if judges is not None:
        judge_plan(cfg, judges)
    elif not reward_model.enable:
        print("[dry-run] reward model off: training on the native LIBERO reward")
    check_policy_weights(cfg)
    smoke_env(cfg, score=judges is None)


@hydra.main(version_base="1.1", config_path="config", config_name="libero_10_grpo_openvlaoft")
def main(cfg: DictConfig) -> None:
    try:
        run_checks(cfg)
    except SetupError as exc:
        print(f"[dry-run] FAILED: {exc}", file=sys.stderr)
        sys.exit(EXIT_FAILED)
    print("[dry-run] OK: the setup is ready for a GPU run")


if __name__ == "__main__":
    main()
