"""PRIMO-R1 (a Qwen2.5-VL-7B fine-tune for robot task progress) through vLLM.

PRIMO-R1 is queried the way its authors evaluate it (10-OASIS-01/PRIMO-R1,
``src/eval/eval_interleave.py`` and ``src/primo_prompts.py``): the first frame, the
video and the last frame of the episode (all from the one decode of its MP4), then the
question; the model thinks in ``<think>`` (``<planning>``, ``<observation>``,
``<reasoning>``) and puts the progress, 0-100, in ``<answer>``. Hence the "primo" prompt
preset and the ``percentage`` score mode.

It is the same architecture as Qwen2.5-VL, so the engine, request building and accepted
``backend_kwargs`` are :class:`~vlm_reward.backends.qwen_vl_vllm.QwenVllmBackend`'s;
only the data below differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vlm_reward.backends.base import register_backend
from vlm_reward.backends.qwen_vl_vllm import QwenVllmBackend


@register_backend
class PrimoR1VllmBackend(QwenVllmBackend):
    """PRIMO-R1 on vLLM: the "primo" prompt, progress in percent, the published decoding."""

    name = "PRIMO-R1"
    aliases = ("primo_r1_vllm",)
    default_score_mode = "percentage"
    default_preset: ClassVar[str] = "primo"
    # The authors' evaluation decoding (temperature 0.1 with top_p 0.001 is greedy in
    # practice). The think block is long; a short budget cuts off the <answer>.
    sampling_defaults: ClassVar[Mapping[str, Any]] = {"temperature": 0.1, "top_p": 0.001, "max_tokens": 4096}
