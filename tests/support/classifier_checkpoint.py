"""A seeded random-weight ResNet classifier checkpoint: the ``resnet`` backend's real files, untrained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlm_reward.backends.resnet_checkpoint import ClassifierConfig, build_model, write_checkpoint


def seeded_classifier(path: Path, config: ClassifierConfig, seed: int = 0) -> Any:
    """Write a checkpoint of RLinf's ResNet classifier built by ``config`` with weights drawn from
    ``seed`` into ``path``; return the model it holds, in eval mode."""
    import torch

    torch.manual_seed(seed)
    model = build_model(config).eval()
    write_checkpoint(path, config, model.state_dict(), {"data": "none"})
    return model
