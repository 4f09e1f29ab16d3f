"""Check an OpenVLA-OFT checkpoint against the configured model before GPUs are booked.

``run_embodiment.sh --dry-run`` and ``--cpu-smoke`` call :func:`check_checkpoint` and
:func:`check_weights`. A wrong path, a checkpoint of another model, or norm stats for another
dataset otherwise surface minutes into a cluster job, inside a Ray worker's traceback. Here each
is one :class:`CheckpointError` naming the path:

* no directory, or no ``config.json`` in it;
* no norm stats for ``actor.model.unnorm_key`` (RLinf reads ``config.json``'s ``norm_stats`` and
  ``dataset_statistics.json``, and accepts ``KEY`` for ``KEY_no_noops``);
* weights whose names or shapes, read from the safetensors headers (no tensor is loaded), differ
  from the model RLinf builds from that ``config.json`` (built on the meta device: no memory, no
  weights, seconds even for 7B).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
# Parameters RLinf adds on top of the checkpoint (initialised fresh, so never in it).
FRESH_PREFIXES = ("value_head.",)
SHOWN = 5  # mismatching names quoted in a message


class CheckpointError(ValueError):
    """The checkpoint cannot be trained with this config; the message names the path and the fix."""


def _norm_stat_keys(path: Path) -> set[str]:
    config = json.loads((path / "config.json").read_text())
    keys = set(config.get("norm_stats") or {})
    statistics = path / "dataset_statistics.json"
    if statistics.is_file():
        keys |= set(json.loads(statistics.read_text()))
    return keys


def check_checkpoint(path: Path, unnorm_key: str) -> None:
    """The cheap checks: the directory, ``config.json`` and the norm stats RLinf will look up."""
    if not path.is_dir():
        raise CheckpointError(
            f"actor.model.model_path {path} is not a directory; point it at an OFT checkpoint."
        )
    if not (path / "config.json").is_file():
        raise CheckpointError(
            f"actor.model.model_path {path} has no config.json: not a Hugging Face checkpoint."
        )
    keys = _norm_stat_keys(path)
    if unnorm_key not in keys and f"{unnorm_key}_no_noops" not in keys:
        raise CheckpointError(
            f"the checkpoint at {path} has no norm stats for actor.model.unnorm_key={unnorm_key!r} "
            f"(it has: {', '.join(sorted(keys)) or 'none'}); set unnorm_key to one of them or use a "
            "checkpoint trained on that dataset."
        )


def _header(file: Path) -> dict[str, Any]:
    with file.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
    header.pop("__metadata__", None)
    return header


def read_safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape over the checkpoint's safetensors files (one file or an index of shards)."""
    if (path / INDEX).is_file():
        files = sorted(set(json.loads((path / INDEX).read_text())["weight_map"].values()))
    elif (path / SINGLE).is_file():
        files = [SINGLE]
    else:
        raise CheckpointError(f"the checkpoint at {path} has no {SINGLE} or {INDEX}: no weights to train.")
    shapes: dict[str, tuple[int, ...]] = {}
    for name in files:
        shapes.update({k: tuple(v["shape"]) for k, v in _header(path / name).items()})
    return shapes


def meta_model_shapes(model_cfg: Any) -> dict[str, tuple[int, ...]]:
    """Parameter and buffer shapes of the model RLinf builds from ``model_cfg``, on the meta device."""
    import rlinf  # noqa: F401  (first: it installs the import hook that provides `prismatic`)

    # isort: split
    from accelerate import init_empty_weights
    from omegaconf import OmegaConf
    from prismatic.extern.hf.configuration_prismatic import OpenVLAConfig
    from rlinf.models.embodiment.openvla_oft.rlinf.openvla_oft_action_model import (
        OpenVLAOFTForRLActionPrediction,
    )
    from transformers import AutoConfig

    AutoConfig.register("openvla", OpenVLAConfig, exist_ok=True)
    config = AutoConfig.from_pretrained(str(model_cfg.model_path))
    path = Path(str(model_cfg.model_path))
    if (path / "dataset_statistics.json").is_file():  # as RLinf's get_model merges them
        config.norm_stats = {
            **(config.norm_stats or {}),
            **json.loads((path / "dataset_statistics.json").read_text()),
        }
    for key, value in OmegaConf.to_container(model_cfg, resolve=True).items():
        setattr(config, key, value)  # RLinf copies the YAML's model block onto the config too
    # Parameters go to the meta device as they are registered (timm's ViT calls .item() while it
    # builds, which a global meta device refuses).
    with init_empty_weights():
        model = OpenVLAOFTForRLActionPrediction(
            config,
            action_dim=model_cfg.action_dim,
            num_action_chunks=model_cfg.num_action_chunks,
            add_value_head=model_cfg.add_value_head,
            max_prompt_length=model_cfg.max_prompt_length,
        )
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def weight_mismatches(
    built: dict[str, tuple[int, ...]], stored: dict[str, tuple[int, ...]]
) -> tuple[list[str], list[str], list[str]]:
    """``(missing, unexpected, wrong_shape)`` of the stored weights against the built model."""
    missing = sorted(k for k in built.keys() - stored.keys() if not k.startswith(FRESH_PREFIXES))
    unexpected = sorted(stored.keys() - built.keys())
    wrong = sorted(
        f"{k} {stored[k]} != {built[k]}" for k in built.keys() & stored.keys() if built[k] != stored[k]
    )
    return missing, unexpected, wrong


def check_weights(model_cfg: Any) -> int:
    """:class:`CheckpointError` unless the stored weights fit the meta-built model; returns their count."""
    path = Path(str(model_cfg.model_path))
    stored = read_safetensors_shapes(path)
    missing, unexpected, wrong = weight_mismatches(meta_model_shapes(model_cfg), stored)
    problems = [
        f"{len(names)} {what} (e.g. {', '.join(names[:SHOWN])})"
        for names, what in ((missing, "missing"), (unexpected, "unexpected"), (wrong, "of another shape"))
        if names
    ]
    if problems:
        raise CheckpointError(
            f"the weights at {path} do not fit the model its config.json and actor.model describe: "
            f"{'; '.join(problems)}. Is model_path the checkpoint this config was written for?"
        )
    return len(stored)
