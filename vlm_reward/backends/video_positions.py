"""Qwen2.5-VL's 3-D rotary positions (M-RoPE) with time in them, the same on transformers as on vLLM.

Why this exists: transformers 4.57's ``Qwen2_5_VLModel.get_rope_index`` turns a video's seconds per
temporal patch (``second_per_grid_ts``) into an integer before it scales the frame-pair index, so at
the env's 4 fps (two frames a patch: 0.5 s) every frame pair of a clip gets temporal position 0, and
the text after the video starts 3 positions earlier than on vLLM, which keeps the fraction. A judge
trained through one engine then answers other positions on the other (issue 55: the trained judge's
test successes scored 0.98 on ``qwen_vl_hf`` and 0.016 on ``qwen_vl_vllm``; with these positions on
the HF side they scored 0.016 there too). :func:`install` gives a loaded model :func:`rope_index`, so
the HF server, the fine-tune's trainer and vLLM place every token alike.

The layout (:data:`LAYOUT`), per sequence, padding left out:

- text tokens count up by one on all three axes;
- a vision block (an image's or a video's placeholder tokens, ``t x h x w`` after the spatial merge)
  starts right after the text before it: token ``(k, row, column)`` of the block is at
  ``start + (floor(k * seconds_per_patch * tokens_per_second), row, column)`` (an image: ``k = 0``);
- the text after a block continues from the block's largest position plus one;
- padding positions are 1; ``rope_deltas`` (what generation adds to a decoding step's cache
  position) is the sequence's last position + 1 - the padded length.

Which transformers: the ``get_rope_index(input_ids, image_grid_thw, video_grid_thw,
second_per_grid_ts, attention_mask)`` method of 4.51-4.57 (the main venv's pin is 4.57.6). transformers
5 (the vLLM venv's) has another signature and its own positions; :func:`install` leaves it as it is
(:data:`SIGNATURE`), as it leaves Qwen3-VL, which writes each frame's timestamp into the prompt.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import torch

# Part of the trained judge's stamp: a judge trained with other positions is another judge.
LAYOUT = "qwen2.5-vl m-rope, temporal index floor(k * second_per_grid_t * tokens_per_second)"
FAMILIES = ("qwen2_5_vl",)  # the config model types whose positions this defines
# The parameters of the method :func:`rope_index` stands in for (transformers 4.51-4.57).
SIGNATURE = ("self", "input_ids", "image_grid_thw", "video_grid_thw", "second_per_grid_ts", "attention_mask")


def install(model: Any) -> bool:
    """Make the loaded ``model`` (a ``Qwen2_5_VLForConditionalGeneration``, LoRA-wrapped or not)
    compute its positions with :func:`rope_index`; ``False`` (nothing changed) for other families
    and for a transformers whose method has another signature. Only this instance changes, nothing
    in the installed transformers."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    if getattr(inner.config, "model_type", None) not in FAMILIES:
        return False
    method = getattr(type(inner.model), "get_rope_index", None)
    if method is None or tuple(inspect.signature(method).parameters) != SIGNATURE:
        return False
    inner.model.get_rope_index = types.MethodType(rope_index, inner.model)
    return True


def rope_index(
    self: Any,
    input_ids: torch.Tensor,
    image_grid_thw: torch.Tensor | None = None,
    video_grid_thw: torch.Tensor | None = None,
    second_per_grid_ts: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(position_ids (3, batch, length), rope_deltas (batch, 1))`` of the module docstring's layout,
    in place of transformers' method of the same name on ``self`` (a ``Qwen2_5_VLModel``)."""
    vision = self.config.vision_config
    mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
    images = _grids(image_grid_thw, None)
    videos = _grids(video_grid_thw, second_per_grid_ts)
    positions = torch.ones(3, *input_ids.shape, dtype=torch.long, device=input_ids.device)
    deltas = []
    tokens = Placeholders(self.config.image_token_id, self.config.video_token_id)
    for row, ids in enumerate(input_ids):
        keep = mask[row].bool()
        placed = sequence_positions(
            ids[keep].tolist(), tokens, images, videos, vision.spatial_merge_size, vision.tokens_per_second
        )
        positions[:, row, keep] = placed.to(positions.device)
        deltas.append(int(placed.max()) + 1 - input_ids.shape[1] if placed.numel() else 0)
    return positions, torch.tensor(deltas, device=input_ids.device).unsqueeze(1)


class Placeholders(NamedTuple):
    """The token ids a vision block is made of."""

    image: int
    video: int


Grid = tuple[int, int, int, float]  # (t, h, w) in patches, seconds per temporal patch


def _grids(thw: torch.Tensor | None, seconds: torch.Tensor | None) -> Iterator[Grid]:
    """The batch's vision inputs of one kind in order (they follow the prompts' order)."""
    rows = [] if thw is None else thw.tolist()
    per_patch = (
        [0.0] * len(rows) if seconds is None else [float(s) for s in torch.as_tensor(seconds).flatten()]
    )
    return iter([(t, h, w, s) for (t, h, w), s in zip(rows, per_patch, strict=True)])


def sequence_positions(
    ids: Sequence[int],
    tokens: Placeholders,
    images: Iterator[Grid],
    videos: Iterator[Grid],
    merge: int,
    tokens_per_second: float,
) -> torch.Tensor:
    """The ``(3, len(ids))`` positions of one unpadded sequence; each vision block takes the next
    grid of its kind from ``images`` or ``videos``. ``ValueError`` when a block's placeholders do not
    match its grid."""
    parts, text_start, next_position, at = [], 0, 0, 0
    while at < len(ids):
        if ids[at] not in tokens:
            at += 1
            continue
        parts.append(_text(next_position, at - text_start))
        next_position += at - text_start
        kind = "image" if ids[at] == tokens.image else "video"
        t, h, w, seconds = _next(images if kind == "image" else videos, kind)
        block = _block(t, h // merge, w // merge, seconds * tokens_per_second)
        end = at + block.shape[1]
        if end > len(ids) or any(i != ids[at] for i in ids[at:end]):
            raise ValueError(
                f"a vision block at token {at} has fewer placeholders than its grid {t}x{h}x{w}."
            )
        parts.append(block + next_position)
        next_position = int(parts[-1].max()) + 1
        at = text_start = end
    parts.append(_text(next_position, len(ids) - text_start))
    return torch.cat(parts, dim=1)


def _next(grids: Iterator[Grid], kind: str) -> Grid:
    try:
        return next(grids)
    except StopIteration:
        raise ValueError(f"the prompts hold more {kind} blocks than the batch has {kind} grids.") from None


def _text(first: int, count: int) -> torch.Tensor:
    return torch.arange(first, first + count).expand(3, count)


def _block(t: int, h: int, w: int, step: float) -> torch.Tensor:
    """A ``t x h x w`` grid's offsets: temporal ``floor(k * step)``, then row, then column."""
    times = torch.tensor([math.floor(k * step) for k in range(t)])
    grid = torch.stack(torch.meshgrid(times, torch.arange(h), torch.arange(w), indexing="ij"))
    return grid.reshape(3, -1)
