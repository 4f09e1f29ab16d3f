"""Which weights a fine-tune changes (LoRA adapters or every weight), and the merged checkpoint.

LoRA adapters go through ``peft`` on the family's default modules; full fine-tuning changes every
weight (for small models).

**Default LoRA targets come from the model family**
(:attr:`~vlm_reward.judging.model_family.ModelFamily.lora_targets` of the checkpoint's family),
never by branching on a model name: the language model's attention and MLP projections of every
decoder layer, the modules LoRA recipes for Qwen-VL judges adapt while the vision tower stays
frozen. Both families name them alike under ``model.language_model.layers``; a new family
states its own.
``--lora-targets`` overrides it with any ``peft`` ``target_modules`` regular expression.

**The merged checkpoint** is what every backend serves with ``--model``: the adapters folded
into the base weights (``merge_and_unload``), saved with ``save_pretrained`` in the base's
dtype with the processor, and the top-level ``architectures`` written into ``config.json``
(transformers 4.57 writes it only into the text config; vLLM reads the top level).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlm_reward.judging.model_family import ModelFamily

INSTALL_HINT = "pip install peft (pinned in requirements/base.txt + requirements/constraints.txt)"
METHODS = ("lora", "full")


def default_targets(family: ModelFamily) -> str:
    """The family's default LoRA target modules (a ``peft`` ``target_modules`` regular expression)."""
    return family.lora_targets


def import_peft() -> Any:
    """The ``peft`` module; ``ImportError`` with the install command when it is missing."""
    try:
        import peft
    except ImportError as exc:
        raise ImportError(f"LoRA fine-tuning needs peft: {INSTALL_HINT}") from exc
    return peft


def make_trainable(model: Any, method: str, rank: int, alpha: float, targets: str) -> Any:
    """``model`` ready to train: wrapped with LoRA adapters on ``targets`` (only they train), or
    unchanged with every weight trainable (``method="full"``)."""
    if method == "full":
        for parameter in model.parameters():
            parameter.requires_grad_(True)
        return model
    peft = import_peft()
    config = peft.LoraConfig(r=rank, lora_alpha=alpha, target_modules=targets, lora_dropout=0.0, bias="none")
    wrapped = peft.get_peft_model(model, config)
    if not any(p.requires_grad for p in wrapped.parameters()):
        raise ValueError(f"--lora-targets {targets!r} matches no module of the model.")
    return wrapped


def trainable_state(model: Any) -> dict[str, Any]:
    """The trained weights only (the adapters, or every weight): what an epoch checkpoint keeps."""
    return {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model: Any, state: Mapping[str, Any]) -> None:
    """Put a :func:`trainable_state` back; ``ValueError`` if it does not fit this model."""
    parameters = dict(model.named_parameters())
    missing = [name for name in state if name not in parameters]
    if missing or len(state) != sum(p.requires_grad for p in parameters.values()):
        raise ValueError(
            "the checkpoint's trained weights do not fit this model and method "
            f"({len(missing)} unknown names, e.g. {missing[:1]}); resume with the same options."
        )
    import torch

    with torch.no_grad():
        for name, value in state.items():
            parameters[name].copy_(value)


def merged_model(model: Any, method: str) -> Any:
    """The plain transformers model with the adapters folded in (``method="lora"``), or itself."""
    return model.merge_and_unload() if method == "lora" else model


def save_merged(model: Any, processor: Any, out: Path, family: ModelFamily, dtype: Any) -> None:
    """Write the servable checkpoint into ``out``: weights (safetensors, in ``dtype``), config,
    generation config and processor, with the top-level ``architectures`` vLLM needs."""
    from vlm_reward.tools.tiny_checkpoint import write_architectures

    model.to(dtype).save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    write_architectures(out / "config.json", family.architecture)
