"""The tiny OpenVLA-OFT through RLinf's own code, in-process and in seconds (no LIBERO, no Ray).

``get_model`` builds it as the rollout and actor workers do; ``predict_action_batch`` is the
rollout worker's call; ``default_forward`` with ``compute_logprobs`` is the actor's. The on-policy
check of the training smoke (``test_training_smoke.py``) relies on what is measured here: the
actor's logprobs equal the rollout's for the same inputs, and a mismatch in what the actor is fed
moves them far beyond the tolerance.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from examples.embodiment import oft_checkpoint
from examples.embodiment.cpu_smoke import tiny_openvla_oft
from examples.embodiment.oft_checkpoint import CheckpointError
from tests.support.server import REPO

MODEL_YAML = REPO / "examples" / "embodiment" / "config" / "model" / "openvla_oft.yaml"
TASKS = [
    "put both the alphabet soup and the tomato sauce in the basket",
    "turn on the stove and put the moka pot on it",
]
TEMPERATURE = 1.6  # rollout.sampling_params.temperature_train
ONPOLICY_ATOL = 1e-5  # the training smoke's tolerance (see test_training_smoke.py)


def model_cfg(path: str, **overrides: object):
    cfg = OmegaConf.load(MODEL_YAML)
    cfg.model_path, cfg.precision, cfg.max_prompt_length = path, "fp32", 128  # as the smoke run
    cfg.merge_with(overrides)
    return cfg


@pytest.fixture(scope="module")
def model(tiny_oft_checkpoint: str):
    from rlinf.models import get_model

    torch.manual_seed(0)
    return get_model(model_cfg(tiny_oft_checkpoint))


@pytest.fixture(scope="module")
def rollout(model):
    """One action chunk for 2 envs with LIBERO-sized camera images, sampled as in training."""
    generator = torch.Generator().manual_seed(0)
    obs = {
        "task_descriptions": TASKS,
        "main_images": torch.randint(0, 256, (2, 256, 256, 3), dtype=torch.uint8, generator=generator),
        "states": torch.zeros(2, 8),
    }
    torch.manual_seed(0)
    return model.predict_action_batch(env_obs=obs, do_sample=True, temperature=TEMPERATURE, top_k=-1)


def actor_logprobs(model, forward_inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    inputs = {k: v.clone() for k, v in forward_inputs.items()}
    with torch.no_grad():
        out = model(forward_inputs=inputs, compute_logprobs=True, temperature=TEMPERATURE, top_k=-1)
    return out["logprobs"]


def test_the_checkpoint_is_openvla_oft_at_toy_size(tiny_oft_checkpoint: str, model) -> None:
    config = json.loads((Path(tiny_oft_checkpoint) / "config.json").read_text())
    assert config["model_type"] == "openvla" and config["timm_model_ids"] == ["vit_tiny_patch16_224"] * 2
    assert sum(p.numel() for p in model.parameters()) == 15_929_152
    assert model.vocab_size == 32000 and model.unnorm_key == "libero_10_no_noops"


def test_tokenizer_has_the_ids_rlinf_asserts(model) -> None:
    tokenizer = model.input_processor.tokenizer
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id) == (1, 2, 32000)
    ids = tokenizer(f"In: What action should the robot take to {TASKS[0]}?\nOut: ")["input_ids"]
    assert ids[0] == 1 and ids[-1] == 29871 and len(ids) < 50, ids


def test_predict_action_batch_gives_one_chunk_of_action_tokens(rollout) -> None:
    actions, result = rollout
    tokens = result["forward_inputs"]["action_tokens"]
    assert actions.shape == (2, 8, 7) and tokens.shape == (2, 8, 7)
    assert tokens.min() >= 31744 and tokens.max() <= 31999, "the 256 action bins"
    assert result["prev_logprobs"].shape == (2, 56) and (result["prev_logprobs"] < 0).all()
    input_ids = result["forward_inputs"]["input_ids"]
    assert (input_ids[:, 0] == 1).all() and (input_ids[:, -1] == 29871).all() and input_ids.shape[1] == 128
    assert result["forward_inputs"]["pixel_values"].shape == (2, 6, 224, 224), "2 fused backbones x RGB"
    high = torch.tensor([0.9375, 0.9375, 0.9375, 0.3, 0.3, 0.375])
    assert (actions[..., :6].abs() <= high + 1e-6).all(), "un-normalised with the q01/q99 norm stats"


def test_actor_logprobs_equal_the_rollouts(model, rollout) -> None:
    _, result = rollout
    logprobs = actor_logprobs(model, result["forward_inputs"])
    torch.testing.assert_close(logprobs, result["prev_logprobs"], rtol=0, atol=ONPOLICY_ATOL)


MISMATCHES = {
    "image-normalised-twice": lambda inputs: inputs.update(pixel_values=(inputs["pixel_values"] - 0.5) / 0.5),
    "other-envs-image": lambda inputs: inputs.update(pixel_values=inputs["pixel_values"].flip(0)),
    "prompt-of-another-task": lambda inputs: inputs.update(input_ids=inputs["input_ids"].flip(0)),
    "padding-unmasked": lambda inputs: inputs.update(
        attention_mask=torch.ones_like(inputs["attention_mask"])
    ),
    "images-through-bf16": lambda inputs: inputs.update(
        pixel_values=inputs["pixel_values"].to(torch.bfloat16).to(torch.float32)
    ),
}


@pytest.mark.parametrize("mismatch", list(MISMATCHES), ids=list(MISMATCHES))
def test_a_mismatch_between_rollout_and_actor_is_far_beyond_the_tolerance(
    model, rollout, mismatch: str
) -> None:
    _, result = rollout
    inputs = {k: v.clone() for k, v in result["forward_inputs"].items()}
    MISMATCHES[mismatch](inputs)
    gap = (actor_logprobs(model, inputs) - result["prev_logprobs"]).abs().max().item()
    # Seen here: 3.2e-1, 1.3e-1, 9.0e-3, 5.4e-2 and 1.3e-4 in the order of MISMATCHES.
    assert gap > 10 * ONPOLICY_ATOL, f"{mismatch}: max |logprob gap| {gap:.2e}"


def test_the_builder_is_seeded(tiny_oft_checkpoint: str, tmp_path: Path) -> None:
    again = tiny_openvla_oft.build(tmp_path / "again", seed=0)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "preprocessor_config.json"):
        assert (again / name).read_bytes() == (Path(tiny_oft_checkpoint) / name).read_bytes(), name


def test_the_tiny_checkpoint_passes_the_dry_run_checks(tiny_oft_checkpoint: str) -> None:
    oft_checkpoint.check_checkpoint(Path(tiny_oft_checkpoint), "libero_10_no_noops")
    oft_checkpoint.check_checkpoint(Path(tiny_oft_checkpoint), "libero_10")  # RLinf adds _no_noops
    assert oft_checkpoint.check_weights(model_cfg(tiny_oft_checkpoint)) == 327


def _without(name: str):
    return lambda path: (path / name).unlink()


def _config_edit(**text_config: object):
    def edit(path: Path) -> None:
        config = json.loads((path / "config.json").read_text())
        config["text_config"].update(text_config)
        (path / "config.json").write_text(json.dumps(config))

    return edit


BROKEN = {
    "no-directory": (lambda path: shutil.rmtree(path), "is not a directory"),
    "no-config": (_without("config.json"), "has no config.json"),
    "no-weights": (_without("model.safetensors"), "has no model.safetensors or model.safetensors.index.json"),
    "other-llm-width": (_config_edit(hidden_size=32), "do not fit the model"),
    "deeper-llm": (_config_edit(num_hidden_layers=3), "missing (e.g. language_model.model.layers.2."),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_a_wrong_checkpoint_fails_naming_the_path(
    tiny_oft_checkpoint: str, tmp_path: Path, case: str
) -> None:
    path = tmp_path / "ckpt"
    shutil.copytree(tiny_oft_checkpoint, path)
    breaks, message = BROKEN[case]
    breaks(path)
    with pytest.raises(CheckpointError, match=str(path)) as error:
        oft_checkpoint.check_checkpoint(path, "libero_10_no_noops")
        oft_checkpoint.check_weights(model_cfg(str(path)))
    assert message in str(error.value)


def test_norm_stats_of_another_dataset_fail_naming_the_key(tiny_oft_checkpoint: str) -> None:
    with pytest.raises(CheckpointError, match=r"no norm stats for actor\.model\.unnorm_key='bridge_orig'"):
        oft_checkpoint.check_checkpoint(Path(tiny_oft_checkpoint), "bridge_orig")
