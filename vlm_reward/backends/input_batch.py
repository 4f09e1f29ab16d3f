"""Joining one-job processor outputs into the batch the HF processor would have made of them.

The transformers backend runs the processor once per job, on the job's own worker thread
(:mod:`vlm_reward.backends.prefetch`), so the processor's work for a batch runs in parallel;
the model still takes the batch as one. What the processor does to a batch of prompts, and so
what :func:`join_inputs` does: the token rows (``input_ids``, ``attention_mask``, and any other
``(1, tokens)`` row such as ``mm_token_type_ids``) are padded on the tokenizer's padding side to
the longest, with the pad id and a zero mask; every vision tensor (flattened patches, grids,
Qwen2.5-VL's ``second_per_grid_ts``) is concatenated in job order along its first dimension,
which is how the processor lays out several jobs' images and videos. A test compares the result
with the processor's own batch for both families.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The per-token rows of a processor output; everything else is a vision tensor.
TOKEN_ROWS = frozenset({"input_ids", "attention_mask", "mm_token_type_ids"})


def _pad_rows(rows: Sequence[Any], value: int, side: str) -> Any:
    import torch

    width = max(row.shape[1] for row in rows)
    padded = []
    for row in rows:
        fill = row.new_full((row.shape[0], width - row.shape[1]), value)
        padded.append(torch.cat([fill, row] if side == "left" else [row, fill], dim=1))
    return torch.cat(padded)


def join_inputs(parts: Sequence[Any], pad_token_id: int, padding_side: str = "left") -> Any:
    """One ``BatchFeature`` from per-job ones (see the module docstring).

    A job without images (or videos) adds nothing to those tensors, as in the processor's batch.
    ``ValueError`` for no parts, a part without token rows, or a padding side other than ``left``
    or ``right``.
    """
    import torch
    from transformers import BatchFeature

    if not parts:
        raise ValueError("join_inputs needs at least one processor output.")
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}.")
    keys = list(dict.fromkeys(key for part in parts for key in part))
    for key in sorted(TOKEN_ROWS.intersection(keys)):
        if any(key not in part for part in parts):
            raise ValueError(f"every processor output needs its {key!r}; one has none.")
    if len(parts) == 1:
        return parts[0]
    data = {}
    for key in keys:
        values = [part[key] for part in parts if key in part]
        if key in TOKEN_ROWS:
            data[key] = _pad_rows(values, pad_token_id if key == "input_ids" else 0, padding_side)
        else:
            data[key] = torch.cat(values)
    return BatchFeature(data=data)
