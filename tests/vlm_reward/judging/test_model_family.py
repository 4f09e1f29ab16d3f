"""Model families: a checkpoint's family from its config.json, and the one-sentence start-up errors.

Standard library only (no model loads): a missing path, a path without config.json and an
unsupported architecture fail before anything heavy, and a local path is never a hub id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlm_reward.judging.model_family import (
    FAMILIES,
    QWEN2_5_VL,
    QWEN3_VL,
    checkpoint_family,
    family_of_config,
    is_hub_id,
)


@pytest.mark.parametrize(
    ("family", "token_side", "model_class", "extra_tokens"),
    [
        (QWEN2_5_VL, 28, "Qwen2_5_VLForConditionalGeneration", 0),
        (QWEN3_VL, 32, "Qwen3VLForConditionalGeneration", 2),
    ],
    ids=["qwen2_5_vl", "qwen3_vl"],
)
def test_each_family_s_geometry_and_class(
    family, token_side: int, model_class: str, extra_tokens: int
) -> None:
    assert (family.token_side, family.model_class, family.kept_video_wrap_tokens) == (
        token_side,
        model_class,
        extra_tokens,
    )
    assert FAMILIES[family.model_type] is family


@pytest.mark.parametrize(
    ("config", "family"),
    [
        ({"model_type": "qwen2_5_vl"}, QWEN2_5_VL),
        ({"model_type": "qwen3_vl", "architectures": ["Qwen3VLForConditionalGeneration"]}, QWEN3_VL),
        ({"model_type": "custom", "architectures": ["Qwen3VLForConditionalGeneration"]}, QWEN3_VL),
    ],
    ids=["model-type", "both", "architectures-only"],
)
def test_family_of_config(config: dict, family) -> None:
    assert family_of_config(config) is family


@pytest.mark.parametrize(
    ("model", "hub"),
    [
        ("Qwen/Qwen3-VL-8B-Instruct", True),
        ("gpt2", True),
        ("/nonexistent/Qwen2.5-VL-7B-Instruct", False),
        ("./models/qwen", False),
        ("~/models/qwen", False),
        ("a/b/c", False),
        ("../qwen", False),
    ],
    ids=["owner-name", "bare-name", "absolute", "dot-relative", "home", "nested", "parent"],
)
def test_what_can_be_a_hub_id(model: str, hub: bool) -> None:
    assert is_hub_id(model) is hub


def _checkpoint(root: Path, config: dict | None) -> str:
    root.mkdir()
    if config is not None:
        (root / "config.json").write_text(json.dumps(config))
    return str(root)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            "missing",
            r"model path '.*/missing' does not exist; give a checkpoint directory holding config\.json "
            r"or a model hub id such as 'Qwen/Qwen2\.5-VL-7B-Instruct'\.",
        ),
        (None, r"model path '.*/ckpt' has no config\.json; give the directory of a Hugging Face checkpoint"),
        (
            {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"]},
            r"the checkpoint at '.*/ckpt' is of an unsupported model family \(model_type 'llava', "
            r"architectures \['LlavaForConditionalGeneration'\]\); supported families: "
            r"qwen2_5_vl \(Qwen2\.5-VL\), qwen3_vl \(Qwen3-VL\)\.",
        ),
    ],
    ids=["missing-path", "no-config-json", "unsupported-family"],
)
def test_a_bad_checkpoint_is_one_sentence(tmp_path: Path, config, message: str) -> None:
    model = str(tmp_path / "missing") if config == "missing" else _checkpoint(tmp_path / "ckpt", config)
    with pytest.raises(ValueError, match=f"^{message}"):
        checkpoint_family(model)


def test_a_hub_id_is_left_to_load_time() -> None:
    assert checkpoint_family("Qwen/Qwen3-VL-8B-Instruct") is None


@pytest.mark.parametrize(
    ("checkpoint", "family"),
    [("tiny_qwen_checkpoint", QWEN2_5_VL), ("tiny_qwen3_checkpoint", QWEN3_VL)],
    ids=["qwen2_5_vl", "qwen3_vl"],
)
def test_the_tiny_checkpoints_are_recognised(request: pytest.FixtureRequest, checkpoint: str, family) -> None:
    assert checkpoint_family(request.getfixturevalue(checkpoint)) is family
