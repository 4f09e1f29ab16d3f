"""Model families: what the Qwen backends need to know about a checkpoint's architecture.

A backend never branches on a model name. It asks the family of its checkpoint, read from
the checkpoint's ``config.json`` (``model_type``, else ``architectures``), for what differs
between architectures:

- ``model_class``: the transformers class that generates (the HF backend loads it);
- ``patch_size`` and ``merge_size``: the vision geometry. One visual token covers a
  ``token_side x token_side`` square (``patch_size * merge_size``), so frames and images are
  resized to multiples of it: 28 px for Qwen2.5-VL (14 px patches), 32 px for Qwen3-VL
  (16 px patches). qwen-vl-utils takes the patch size as ``image_patch_size``;
- ``video_timestamps``: whether the processor writes a ``<t seconds>`` text before each
  pair of frames (Qwen3-VL does; its timestamps come from the video metadata's ``fps`` and
  ``frames_indices``, so the metadata must reach the processor) or encodes time in M-RoPE
  only (Qwen2.5-VL, from the ``fps`` processor kwarg);
- ``kept_video_wrap_tokens``: how many tokens longer a video's prompt is under transformers
  >= 5.10 (the vLLM venv's 5.19, and vLLM 0.32 follows it) than under 4.57 (the main venv).
  For a timestamped video, 4.57 replaces the whole ``<|vision_start|><|video_pad|><|vision_end|>``
  by the per-frame sequence, each frame wrapped in its own start/end; 5.x replaces only the
  ``<|video_pad|>`` and keeps the outer pair: 2 more tokens per video. Qwen2.5-VL: 0.

Both families take frames in pairs (temporal patch 2) and share the chat format and the
special tokens, so prompts and frame sampling are family-neutral.

A checkpoint is checked before anything heavy happens (:func:`checkpoint_family`): a local
path that does not exist or holds no ``config.json``, or an architecture no family covers,
is a ``ValueError`` naming the value and the valid choices, and a local path is never
looked up on the model hub. Standard library only: the server imports this at start-up.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Where a LoRA fine-tune of a judge adapts it by default (a peft target_modules regular
# expression): the language model's attention and MLP projections of every decoder layer, the
# vision tower left frozen. The language model is named explicitly: Qwen2.5-VL's vision blocks
# also have gate/up/down projections.
LANGUAGE_PROJECTIONS = r".*language_model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)"


@dataclass(frozen=True)
class ModelFamily:
    """One architecture family: how its checkpoints are recognised, what its vision needs, and
    which modules a LoRA fine-tune adapts by default (``lora_targets``)."""

    name: str
    model_type: str
    architecture: str
    model_class: str
    patch_size: int
    video_timestamps: bool
    kept_video_wrap_tokens: int = 0
    merge_size: int = 2
    temporal_patch_size: int = 2
    lora_targets: str = LANGUAGE_PROJECTIONS

    @property
    def token_side(self) -> int:
        """Pixels per side of the square one visual token covers (sizes snap to multiples of it)."""
        return self.patch_size * self.merge_size


QWEN2_5_VL = ModelFamily(
    name="Qwen2.5-VL",
    model_type="qwen2_5_vl",
    architecture="Qwen2_5_VLForConditionalGeneration",
    model_class="Qwen2_5_VLForConditionalGeneration",
    patch_size=14,
    video_timestamps=False,
)
QWEN3_VL = ModelFamily(
    name="Qwen3-VL",
    model_type="qwen3_vl",
    architecture="Qwen3VLForConditionalGeneration",
    model_class="Qwen3VLForConditionalGeneration",
    patch_size=16,
    video_timestamps=True,
    kept_video_wrap_tokens=2,
)
# model_type -> family; the one list of supported architectures.
FAMILIES: Mapping[str, ModelFamily] = {f.model_type: f for f in (QWEN2_5_VL, QWEN3_VL)}

# A hub id is "name" or "owner/name" of word characters, dots and dashes (no leading "/",
# ".", "~", no "..", at most one "/"); anything else can only be a local path.
_HUB_ID = re.compile(r"(?!\.)[\w.-]+(/(?!\.)[\w.-]+)?")


def supported_families() -> str:
    """The supported families, for messages: ``"qwen2_5_vl (Qwen2.5-VL), qwen3_vl (Qwen3-VL)"``."""
    return ", ".join(f"{f.model_type} ({f.name})" for f in FAMILIES.values())


def family_of_config(config: Mapping[str, Any], where: str = "the checkpoint") -> ModelFamily:
    """The family of a parsed ``config.json``: by ``model_type``, else by ``architectures``.

    ``ValueError`` naming what the config says and the supported families when none fits.
    """
    family = FAMILIES.get(config.get("model_type", ""))
    if family is not None:
        return family
    architectures = config.get("architectures") or []
    for family in FAMILIES.values():
        if family.architecture in architectures:
            return family
    found = f"model_type {config.get('model_type')!r}, architectures {architectures}"
    raise ValueError(
        f"{where} is of an unsupported model family ({found}); supported families: {supported_families()}."
    )


def is_hub_id(model: str) -> bool:
    """Whether ``model`` could name a model hub repository (and is not an existing local path)."""
    return not os.path.exists(model) and _HUB_ID.fullmatch(model) is not None


def local_config(model: str) -> dict[str, Any]:
    """The parsed ``config.json`` of the local checkpoint directory ``model``.

    ``ValueError`` in one sentence when the path does not exist, is not a directory, or has
    no ``config.json`` (no hub lookup: a path is never a hub id).
    """
    path = Path(model).expanduser()
    if not path.exists():
        raise ValueError(
            f"model path {model!r} does not exist; give a checkpoint directory holding config.json "
            "or a model hub id such as 'Qwen/Qwen2.5-VL-7B-Instruct'."
        )
    config_path = path / "config.json"
    if not config_path.is_file():
        raise ValueError(
            f"model path {model!r} has no config.json; give the directory of a Hugging Face checkpoint "
            "(config.json, weights and the processor files)."
        )
    return json.loads(config_path.read_text())


def checkpoint_family(model: str) -> ModelFamily | None:
    """The family of the checkpoint ``model`` without loading anything heavy.

    A local path is read here (``ValueError`` for a missing path, a missing ``config.json``
    or an unsupported family). A hub id gives ``None``: its config is not on disk, so the
    backend resolves it at load time with :func:`hub_checkpoint_family`, still before any
    weight is read.
    """
    if is_hub_id(model):
        return None
    return family_of_config(local_config(model), where=f"the checkpoint at {model!r}")


def hub_checkpoint_family(model: str, **from_pretrained_kwargs: Any) -> ModelFamily:
    """The family of ``model`` (a local path or a hub id), reading only its config.

    For a hub id this asks the hub (or its local cache) for ``config.json`` through
    transformers' ``AutoConfig``, which downloads no weights.
    """
    family = checkpoint_family(model)
    if family is not None:
        return family
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model, **from_pretrained_kwargs).to_dict()
    return family_of_config(config, where=f"the checkpoint {model!r}")
