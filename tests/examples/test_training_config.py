"""The libero_10 GRPO config composes and passes RLinf's own validation, native and VLM."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from vlm_reward.client.config import RewardModelConfig

EMBODIED = Path(__file__).resolve().parents[2] / "examples" / "embodiment"
EMBODIED_PATH_BEFORE = os.environ.get("EMBODIED_PATH")
VARIANTS = {"native": [], "vlm": ["env.train.reward_model.enable=True"]}


def _validated(overrides: list[str], tmp_path: Path) -> DictConfig:
    from rlinf.config import validate_cfg

    # The config's searchpath reads $EMBODIED_PATH (run_embodiment.sh exports it); set it only
    # while composing, so it does not leak into later tests (module fixtures get no monkeypatch).
    # validate_cfg starts RLinf's Cluster: RAY_ADDRESS=local keeps it from joining another Ray
    # cluster on the machine (a training test's, which may run beside this one).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMBODIED_PATH", str(EMBODIED))
        patch.setenv("RAY_ADDRESS", "local")
        with initialize_config_dir(config_dir=str(EMBODIED / "config"), version_base="1.1"):
            cfg = compose(
                "libero_10_grpo_openvlaoft", overrides=[f"runner.logger.log_path={tmp_path}", *overrides]
            )
        return validate_cfg(cfg)


@pytest.fixture(scope="module", autouse=True)
def private_ray() -> Iterator[None]:
    """Stop the private Ray cluster validate_cfg started once the module is done (it holds GBs)."""
    yield
    import ray
    from rlinf.scheduler import Cluster

    ray.shutdown()
    if hasattr(Cluster, "_instance"):  # RLinf's singleton: a later Cluster() starts Ray again
        delattr(Cluster, "_instance")


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def variant(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, DictConfig]:
    return request.param, _validated(VARIANTS[request.param], tmp_path_factory.mktemp("logs"))


def test_env_worker_config_carries_the_reward_model_block(variant) -> None:
    name, cfg = variant
    block = RewardModelConfig.from_mapping(cfg.env.train.reward_model)
    assert block.enable is (name == "vlm")
    assert block.episode_log_dir == cfg.runner.logger.log_path, "episode log defaults to the run's log dir"


def test_eval_env_stays_native(variant) -> None:
    _, cfg = variant
    assert cfg.env.eval.reward_model.enable is False


def test_group_sizes_match(variant) -> None:
    _, cfg = variant
    assert cfg.env.train.group_size == cfg.algorithm.group_size == 8
    assert cfg.env.train.total_num_envs % cfg.env.train.group_size == 0


def test_libero_10_and_openvla_oft(variant) -> None:
    _, cfg = variant
    assert cfg.env.train.task_suite_name == "libero_10"
    assert cfg.actor.model.model_type == "openvla_oft" and cfg.algorithm.adv_type == "grpo"


def test_group_size_override_follows_the_algorithm(tmp_path: Path) -> None:
    cfg = _validated(["algorithm.group_size=4"], tmp_path)
    assert cfg.env.train.group_size == 4


def test_composing_leaves_the_environment_alone(variant) -> None:
    assert os.environ.get("EMBODIED_PATH") == EMBODIED_PATH_BEFORE


SUITES = ("libero_10", "libero_90", "libero_goal", "libero_object", "libero_spatial")


@pytest.mark.parametrize("suite", SUITES, ids=SUITES)
def test_each_suite_composes_in_a_training_config_as_every_reader_loads_it(
    suite: str, tmp_path: Path
) -> None:
    """A training config's ``env/<suite>@env.train`` entry and :func:`load_env_config` give one env
    block per suite (the training config names its suite in its defaults list, as this one does)."""
    from omegaconf import OmegaConf

    from reward_eval.job.env_config import load_env_config

    (tmp_path / "train.yaml").write_text(
        f"defaults:\n  - env/{suite}@env.train\n  - _self_\n\n"
        f"hydra:\n  searchpath:\n    - file://{EMBODIED / 'config'}\n"
    )
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.1"):
        composed = OmegaConf.to_container(compose("train").env.train, resolve=False)
    assert composed == OmegaConf.to_container(load_env_config(EMBODIED / "config" / "env" / f"{suite}.yaml"))
    assert composed["task_suite_name"] == suite and composed["reward_model"]["enable"] is False
