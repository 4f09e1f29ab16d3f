"""LoRA through peft on the tiny checkpoints: the family's default modules, a few steps of the
readout loss, the merge, and the merged checkpoint served by the ``qwen_vl_hf`` backend with the
P(yes) the training read (seconds)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reward_eval.finetune.inputs import Request, model_inputs
from reward_eval.finetune.lora import default_targets, make_trainable, merged_model, save_merged
from reward_eval.finetune.readout import answer_log_shares, expected_scores, weighted_nll
from vlm_reward.judging.model_family import FAMILIES, ModelFamily, checkpoint_family
from vlm_reward.judging.model_family import LANGUAGE_PROJECTIONS as LANGUAGE_PROJECTIONS_RE
from vlm_reward.judging.probability import AnswerTokens

CHECKPOINTS = ["tiny_qwen_checkpoint", "tiny_qwen3_checkpoint"]
LANGUAGE_PROJECTIONS = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_the_default_targets_are_the_familys_own() -> None:
    assert {default_targets(family) for family in FAMILIES.values()} == {LANGUAGE_PROJECTIONS_RE}
    own = ModelFamily("Other", "other", "OtherForConditionalGeneration", "Other", 14, False, lora_targets="x")
    assert default_targets(own) == "x"


@pytest.mark.parametrize("checkpoint", CHECKPOINTS, ids=["qwen2_5_vl", "qwen3_vl"])
def test_lora_trains_the_language_models_projections_and_the_merged_checkpoint_serves_its_readout(
    checkpoint: str, request: pytest.FixtureRequest, sample_mp4: str, tmp_path: Path
) -> None:
    import torch
    import transformers
    from safetensors.torch import load_file

    from vlm_reward.backends import ScoreJob
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend

    path = request.getfixturevalue(checkpoint)
    family = checkpoint_family(path)
    processor = transformers.AutoProcessor.from_pretrained(path)
    torch.manual_seed(0)
    model = make_trainable(
        getattr(transformers, family.model_class).from_pretrained(path, dtype=torch.float32),
        "lora",
        16,
        32.0,
        default_targets(family),
    )
    adapted = {name.rsplit(".lora_A", 1)[0] for name, _ in model.named_parameters() if ".lora_A" in name}
    assert {name.rsplit(".", 1)[1] for name in adapted} == LANGUAGE_PROJECTIONS
    assert all(re.search(r"language_model\.layers\.[01]\.", name) for name in adapted), (
        "never the vision tower"
    )
    assert len(adapted) == 2 * len(LANGUAGE_PROJECTIONS)

    request_ = Request(nframes=4, max_pixels=12544, video_fps=4.0)
    spec = request_.prompt()
    tokens = AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale)
    job = request_.job("put the soup in the basket", sample_mp4, frames=16)
    inputs = model_inputs(processor, family, spec, job)

    def p_yes() -> float:
        with torch.no_grad():
            shares = answer_log_shares(model(**inputs).logits[:, -1, :], tokens)
        return float(expected_scores(shares, spec.answer_scale)[0])

    before = p_yes()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(5):  # towards "yes"
        optimizer.zero_grad()
        weighted_nll(answer_log_shares(model(**inputs).logits[:, -1, :], tokens), [0], [1.0]).sum().backward()
        optimizer.step()
    trained = p_yes()
    assert trained > before + 0.1, (before, trained)
    merged = merged_model(model, "lora")
    save_merged(merged, processor, tmp_path, family, torch.float32)
    backend = QwenHFBackend(str(tmp_path))
    backend.load()
    [answer] = backend.generate(
        [ScoreJob("put the soup in the basket", sample_mp4, 4, 12544, 4.0, score_mode="probability")]
    )
    assert answer.probability == pytest.approx(trained, abs=1e-5), "served as trained"
    assert not any("lora" in key for key in load_file(tmp_path / "model.safetensors")), "adapters folded in"
