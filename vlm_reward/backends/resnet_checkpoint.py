"""A frame classifier's checkpoint directory, what it is shown, and how its frames make a score.

The classifier is RLinf's ``ResNetRewardModel`` (``rlinf.models.embodiment.reward``, model type
``resnet``): a torchvision ResNet with a one-logit head, trained with binary cross-entropy on
single frames labelled success or failure. RLinf loads its weights from one file
(``model_path``, ``strict=True``) and needs its architecture from the config it is built with,
so a checkpoint here is a directory holding both:

- ``classifier.json`` (:data:`CONFIG_FILE`): :class:`ClassifierConfig` (``arch``, ``image_size``,
  ``hidden_dim``, ``dropout``, ``normalize``, ``precision``), what it was trained to answer
  (``target``, :mod:`vlm_reward.backends.classifier_targets`; a config without one reads as
  ``success``) and how an episode is scored (``aggregate``, ``last_k``); beside it what it was
  trained and measured on (``trained_on``: its training initial states, ``held_out``, ``test``);
- ``model.safetensors`` (:data:`WEIGHTS_FILE`): the model's state dict (keys ``backbone.*``).

**What it sees** (:func:`model_input`): each frame resized to ``image_size`` x ``image_size``
with antialiasing (area-weighted, whatever the render size), as float32 in [0, 1]. Training and
serving both call it, so the frames a classifier learnt from and the frames it judges went through
one path; RLinf's own resize inside the model is then a no-op. A frame smaller than
``image_size`` is refused rather than upsampled (the classifier would judge pixels it never saw).

**The score of an episode** (:func:`episode_score`) is an aggregate of its frames'
probabilities P(success), in probability mode: ``mean_last`` is the mean over the last ``last_k``
of the frames the backend is shown (the env's client sends ``nframes`` evenly spaced frames, the
last one the episode's end state). The classifier sees neither the instruction nor the order of
the frames; the aggregate is the only place time enters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from vlm_reward.backends.classifier_targets import DEFAULT_TARGET, TARGETS, get_target

CONFIG_FILE = "classifier.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT = "rlinf-resnet-reward/1"  # written into classifier.json: what made it, for a reader
ARCHS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")  # RLinf's SUPPORTED_ARCHS
PRECISIONS = ("fp32", "bf16", "fp16")
AGGREGATES = ("mean_last",)
INSTALL_HINT = (
    "the resnet backend needs RLinf's classifier: install rlinf==0.3.0 with torch and torchvision "
    "(scripts/setup.sh does, into .venv); the vLLM venv has no RLinf"
)


@dataclass(frozen=True)
class ClassifierConfig:
    """What builds the classifier (RLinf's config keys), what it answers and what reads its
    frames into a score. The defaults are ``reward-eval train-classifier``'s.

    Chosen by measurement on this 2-core CPU (``benchmarks/bench_classifier.py --part train``,
    benchmark 15): ResNet-18 at 64 px takes 4.5 ms a frame per training step (96 px 8.4, 128 px
    14.7), and already separates the held-out successes from the held-out failures; ``last_k`` 1
    scores an episode by its end state.
    """

    arch: str = "resnet18"
    image_size: int = 64
    hidden_dim: int | None = None
    dropout: float = 0.1
    normalize: bool = True
    precision: str = "fp32"
    aggregate: str = "mean_last"
    last_k: int = 1
    target: str = DEFAULT_TARGET

    def __post_init__(self) -> None:
        choices = {"arch": ARCHS, "precision": PRECISIONS, "aggregate": AGGREGATES, "target": tuple(TARGETS)}
        for key, valid in choices.items():
            if getattr(self, key) not in valid:
                raise ValueError(f"classifier {key} {getattr(self, key)!r} is not one of {', '.join(valid)}.")
        for key in ("image_size", "last_k"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"classifier {key} must be an int >= 1, got {value!r}.")

    def describe_aggregate(self) -> str:
        """The aggregate and the target in words, as the judge identity names them, e.g. "mean
        P(success) of the last 1 frame, target success"."""
        frames = f"{self.last_k} frame{'s' if self.last_k > 1 else ''}"
        return f"mean {get_target(self.target).estimates} of the last {frames}, target {self.target}"

    def rlinf_config(self, model_path: str | None = None, pretrained: bool = False) -> Any:
        """The ``DictConfig`` RLinf's ``ResNetRewardModel`` is built with. ``pretrained`` (ImageNet
        weights) needs a download; no ``reward_threshold`` (it would zero the probabilities below it)."""
        from omegaconf import OmegaConf

        cfg = {
            "arch": self.arch,
            "pretrained": pretrained,
            "image_size": [3, self.image_size, self.image_size],
            "hidden_dim": self.hidden_dim,
            "dropout": self.dropout,
            "normalize": self.normalize,
            "precision": self.precision,
            "model_path": model_path,
        }
        return OmegaConf.create(cfg)


def is_checkpoint(directory: str | Path) -> bool:
    """Whether ``directory`` holds a classifier's config file (cheap: no weights read)."""
    return (Path(directory) / CONFIG_FILE).is_file()


def read_config(directory: str | Path) -> ClassifierConfig:
    """The checkpoint's config; ``ValueError`` in one sentence for a directory that is not a
    classifier's checkpoint (no ``classifier.json``, no weights, or a config it cannot build)."""
    root = Path(directory)
    if not (is_checkpoint(root) and (root / WEIGHTS_FILE).is_file()):
        raise ValueError(
            f"{root} is not a classifier checkpoint: it needs {CONFIG_FILE} and {WEIGHTS_FILE} "
            "(reward-eval train-classifier writes both)."
        )
    try:
        data = json.loads((root / CONFIG_FILE).read_text(encoding="utf-8"))
        known = {f.name for f in fields(ClassifierConfig)}
        return ClassifierConfig(**{k: v for k, v in data["classifier"].items() if k in known})
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{root / CONFIG_FILE} is not a classifier config ({exc}).") from None


def write_checkpoint(
    directory: Path, config: ClassifierConfig, state_dict: Mapping[str, Any], extra: Mapping[str, Any]
) -> None:
    """``classifier.json`` (the config, the format and ``extra``: what it was trained on) and
    ``model.safetensors`` into ``directory``."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {key: value.detach().cpu().contiguous() for key, value in state_dict.items()}
    save_file(tensors, str(directory / WEIGHTS_FILE))
    body = {"format": FORMAT, "classifier": asdict(config), **extra}
    (directory / CONFIG_FILE).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def build_model(config: ClassifierConfig, weights: str | None = None, pretrained: bool = False) -> Any:
    """RLinf's ``ResNetRewardModel`` built through its config (``weights``: a checkpoint's file,
    loaded by RLinf itself). ``ImportError`` naming the install when RLinf is absent.

    The import is heavy (``rlinf.config`` pulls Ray, the reward package its VLM model: peft,
    transformers; ~1 GB and seconds), so it happens here, never at module import.
    """
    try:
        from rlinf.models.embodiment.reward.resnet_reward_model import ResNetRewardModel
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc}).") from exc
    return ResNetRewardModel(config.rlinf_config(weights, pretrained))


def model_input(frames: Any, image_size: int) -> Any:
    """``(T, H, W, 3)`` uint8 frames (numpy or torch) as the classifier's input: float32
    ``(T, 3, S, S)`` in [0, 1], resized with antialiasing; ``ValueError`` for frames smaller than
    ``image_size`` or of the wrong shape."""
    import torch
    import torch.nn.functional as F

    images = torch.as_tensor(frames)
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != torch.uint8:
        raise ValueError(f"frames must be uint8 (T, H, W, 3), got {images.dtype} {tuple(images.shape)}.")
    height, width = images.shape[1:3]
    if min(height, width) < image_size:
        raise ValueError(
            f"frames of {height}x{width} px are smaller than the classifier's {image_size} px input; "
            "send frames at least that large."
        )
    images = images.permute(0, 3, 1, 2).float() / 255.0
    if (height, width) != (image_size, image_size):
        size = (image_size, image_size)
        images = F.interpolate(images, size=size, mode="bilinear", antialias=True, align_corners=False)
    return images.clamp_(0.0, 1.0)


def scored_frames(count: int, config: ClassifierConfig) -> list[int]:
    """Which of an episode's ``count`` shown frames the aggregate reads (the last ``last_k``)."""
    if count < 1:
        raise ValueError("an episode needs at least one frame to be scored.")
    return list(range(max(0, count - config.last_k), count))


def episode_score(probabilities: Sequence[float], config: ClassifierConfig) -> float:
    """The episode's score from the probabilities of its :func:`scored_frames` (see the module
    docstring): their mean."""
    if not probabilities:
        raise ValueError("an episode needs at least one frame probability to be scored.")
    return float(sum(probabilities) / len(probabilities))
