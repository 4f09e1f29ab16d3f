"""The policy checkpoint of a CPU smoke run: the tiny OpenVLA-OFT built on the spot, or one you name.

``config/cpu_smoke/tiny.yaml`` points ``actor.model.model_path`` at ``cpu_smoke.tiny_model_dir``;
there :func:`prepare_policy` builds the tiny checkpoint (``tiny_openvla_oft.py``, seconds) before
Ray starts. A checkpoint named with ``actor.model.model_path=...`` is trained instead, unless it
would not fit: the actor holds its weights, gradients and two Adam moments in fp32 and the rollout
worker another copy, so a 7B checkpoint asks for ~170 GB and is refused here with a message
rather than killed by the kernel mid-run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# fp32 copies of the weights alive at once in a smoke run: actor weights, gradients and two Adam
# moments, the rollout worker's weights, and the state dict the bucket syncer collects.
COPIES_IN_MEMORY = 6
FP32_BYTES = 4


@dataclass(frozen=True)
class PolicyPlan:
    """What the smoke run trains: the checkpoint's path, whether it was built now, its parameters."""

    path: Path
    built: bool
    parameters: int

    def describe(self) -> str:
        how = "tiny OpenVLA-OFT built for this run" if self.built else "checkpoint"
        return f"{how} at {self.path} ({self.parameters / 1e6:.1f} M parameters)"


def checkpoint_parameters(path: Path) -> int:
    """Parameter count of a checkpoint, read from its safetensors headers (no tensor is loaded)."""
    from examples.embodiment.oft_checkpoint import read_safetensors_shapes

    return sum(math.prod(shape) for shape in read_safetensors_shapes(path).values())


def memory_needed(parameters: int) -> int:
    """Bytes a smoke run needs for a policy of ``parameters`` (see :data:`COPIES_IN_MEMORY`)."""
    return parameters * FP32_BYTES * COPIES_IN_MEMORY


def check_fits(parameters: int, available: int, path: Path) -> None:
    """``ValueError`` when the policy cannot train in ``available`` bytes of memory."""
    need = memory_needed(parameters)
    if need > available:
        raise ValueError(
            f"the checkpoint at {path} has {parameters / 1e9:.2f} B parameters; a CPU smoke run holds about "
            f"{COPIES_IN_MEMORY} fp32 copies ({need / 2**30:.1f} GiB) and this machine has "
            f"{available / 2**30:.1f} GiB available. Leave actor.model.model_path unset to train the tiny "
            "OpenVLA-OFT, or run the full model on GPUs."
        )


def prepare_policy(cfg: Any, available: int | None = None) -> PolicyPlan | None:
    """Build or check the smoke run's policy checkpoint; ``None`` for a policy without one (mlp_policy)."""
    import psutil

    if str(cfg.actor.model.model_type) != "openvla_oft":
        return None
    path = Path(str(cfg.actor.model.model_path))
    built = False
    if path == Path(str(cfg.cpu_smoke.tiny_model_dir)) and not (path / "config.json").is_file():
        from examples.embodiment.cpu_smoke.tiny_openvla_oft import build

        build(path)
        built = True
    from examples.embodiment.oft_checkpoint import check_checkpoint

    check_checkpoint(path, str(cfg.actor.model.unnorm_key))
    parameters = checkpoint_parameters(path)
    check_fits(parameters, psutil.virtual_memory().available if available is None else available, path)
    return PolicyPlan(path, built, parameters)
