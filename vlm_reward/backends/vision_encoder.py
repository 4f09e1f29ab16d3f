"""The project's own pieces of a Qwen-VL vision encoder, swapped into a model after it loads.

transformers 4.57.6's vision attention (``Qwen2_5_VLVisionAttention``, ``Qwen3VLVisionAttention``)
splits q, k and v at ``cu_seqlens`` and calls the attention function once per window, in a Python
loop, for every implementation but ``flash_attention_2``: Qwen2.5-VL's window layers see a 336 px
frame pair as 9 windows of 64 patches, so one 16-frame video is ~70 calls a layer and a batch of 8
is ~580, none shared. The windows are independent, so the windows of one length can go through
the attention function as one batch: :class:`WindowBatchedAttention` gathers them (a plain view when
every window has the same length, as in the layers that attend over a whole frame pair), calls the
model's configured attention function once per distinct length and puts the rows back in order.
The same weights, the same attention function, the same arithmetic per window.

The patch embedding is a ``Conv3d`` whose kernel equals its stride, so each output is one patch's
pixels times the kernel: :class:`LinearPatchEmbed` computes it as one matrix product with the same
weight (oneDNN's 3-D convolution took ~3x longer for this shape here).

:func:`install` swaps the classes of a loaded model's modules (``module.__class__``); the
subclasses add no parameters or buffers, so the state dict, LoRA wrapping and saving are
unchanged, and nothing in the installed transformers package is edited. ``qwen_vl_hf`` and the
fine-tune call it right after ``from_pretrained``. Registering an attention function alone could
not do this: the loop over windows runs before the function is called.

Which transformers: the Qwen2.5-VL classes are the ones transformers 4.54 introduced (the vision
attention keeps its ``config``, ``scaling`` and ``attention_dropout`` and calls
``eager_attention_forward`` or an ``ALL_ATTENTION_FUNCTIONS`` entry; 4.53 lacks
``attention_dropout``, earlier releases have per-implementation classes), the project's floor.
Qwen3-VL came in 4.57: below it the Qwen3-VL pieces are simply not defined (no Qwen3-VL checkpoint
loads there), and a Qwen2.5-VL model is swapped as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qwen2_5

try:
    from transformers.models.qwen3_vl import modeling_qwen3_vl as qwen3
except ImportError:  # transformers < 4.57 has no Qwen3-VL, so no Qwen3-VL checkpoint loads to swap
    qwen3 = None

# The implementation that handles variable-length windows itself (no loop to remove).
VARLEN_IMPLEMENTATION = "flash_attention_2"


@dataclass(frozen=True)
class WindowGroup:
    """The windows of one length: ``starts`` are their first rows, ``length`` their rows each."""

    length: int
    starts: tuple[int, ...]


def window_groups(cu_seqlens: list[int]) -> list[WindowGroup]:
    """The windows ``cu_seqlens`` (cumulative row offsets, starting at 0) cut, grouped by length.

    Groups come in the order of their first window; empty windows (repeated offsets) are dropped.
    """
    groups: dict[int, list[int]] = {}
    for start, end in itertools.pairwise(cu_seqlens):
        if end > start:
            groups.setdefault(end - start, []).append(start)
    return [WindowGroup(length, tuple(starts)) for length, starts in groups.items()]


def _rows(group: WindowGroup, device: torch.device) -> torch.Tensor:
    """The row indices of ``group``'s windows, window after window."""
    starts = torch.tensor(group.starts, device=device)
    return (starts[:, None] + torch.arange(group.length, device=device)[None, :]).reshape(-1)


class WindowBatchedAttention(nn.Module):
    """The vision attention with one attention call per window length (see the module docstring).

    A mixin for a family's attention class, which supplies ``qkv``, ``proj``, ``num_heads``,
    ``scaling``, ``config`` and the rotary function (:attr:`rotary`).
    """

    rotary: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    eager: Callable[..., tuple[torch.Tensor, Any]]

    def forward(
        self,
        hidden_states: torch.Tensor,
        cu_seqlens: torch.Tensor,
        rotary_pos_emb: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        implementation = self.config._attn_implementation
        if implementation == VARLEN_IMPLEMENTATION:
            return super().forward(hidden_states, cu_seqlens, rotary_pos_emb, position_embeddings, **kwargs)
        rows = hidden_states.shape[0]
        q, k, v = self.qkv(hidden_states).reshape(rows, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0)
        cos, sin = position_embeddings
        q, k = type(self).rotary(q, k, cos, sin)
        attend = type(self).eager if implementation == "eager" else ALL_ATTENTION_FUNCTIONS[implementation]
        groups = window_groups(cu_seqlens.tolist())
        if len(groups) == 1 and groups[0].length * len(groups[0].starts) == rows:
            out = self._attend(attend, q, k, v, groups[0].length, **kwargs)  # windows tile the rows
        else:
            indices = [_rows(group, q.device) for group in groups]
            parts = [
                self._attend(attend, q[index], k[index], v[index], group.length, **kwargs)
                for group, index in zip(groups, indices, strict=True)
            ]
            order = torch.cat(indices)
            gathered = torch.cat(parts)
            out = gathered.new_empty(gathered.shape).index_copy(0, order, gathered)
        return self.proj(out.reshape(rows, -1))

    def _attend(
        self,
        attend: Callable[..., Any],
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        length: int,
        **kwargs: Any,
    ) -> torch.Tensor:
        """Attention within each consecutive run of ``length`` rows of ``(rows, heads, dim)`` q, k, v."""
        heads, dim = q.shape[1:]

        def windows(x: torch.Tensor) -> torch.Tensor:
            return x.reshape(-1, length, heads, dim).transpose(1, 2)

        out, _ = attend(
            self,
            windows(q),
            windows(k),
            windows(v),
            attention_mask=None,
            scaling=self.scaling,
            dropout=0.0 if not self.training else self.attention_dropout,
            is_causal=False,
            **kwargs,
        )
        return out.reshape(-1, heads, dim)  # the functions answer (windows, length, heads, dim)


class LinearPatchEmbed(nn.Module):
    """The patch embedding as one matrix product with the ``Conv3d``'s own weight and bias.

    Falls back to the convolution when ``proj`` is no longer a plain ``Conv3d`` (a LoRA wrapper).
    """

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        proj = self.proj
        if type(proj) is not nn.Conv3d:
            return super().forward(hidden_states)
        weight = proj.weight
        flat = hidden_states.reshape(-1, weight[0].numel()).to(dtype=weight.dtype)
        return nn.functional.linear(flat, weight.reshape(weight.shape[0], -1), proj.bias)


class Qwen2_5_VLWindowBatchedAttention(WindowBatchedAttention, qwen2_5.Qwen2_5_VLVisionAttention):
    """Qwen2.5-VL's vision attention, windows batched."""

    rotary = staticmethod(qwen2_5.apply_rotary_pos_emb_vision)
    eager = staticmethod(qwen2_5.eager_attention_forward)


class Qwen2_5_VLLinearPatchEmbed(LinearPatchEmbed, qwen2_5.Qwen2_5_VisionPatchEmbed):
    """Qwen2.5-VL's patch embedding as a matrix product."""


# transformers' class -> the project's subclass that replaces it.
REPLACEMENTS: dict[type[nn.Module], type[nn.Module]] = {
    qwen2_5.Qwen2_5_VLVisionAttention: Qwen2_5_VLWindowBatchedAttention,
    qwen2_5.Qwen2_5_VisionPatchEmbed: Qwen2_5_VLLinearPatchEmbed,
}

if qwen3 is not None:

    class Qwen3VLWindowBatchedAttention(WindowBatchedAttention, qwen3.Qwen3VLVisionAttention):
        """Qwen3-VL's vision attention, windows batched."""

        rotary = staticmethod(qwen3.apply_rotary_pos_emb_vision)
        eager = staticmethod(qwen3.eager_attention_forward)

    class Qwen3VLLinearPatchEmbed(LinearPatchEmbed, qwen3.Qwen3VLVisionPatchEmbed):
        """Qwen3-VL's patch embedding as a matrix product."""

    REPLACEMENTS[qwen3.Qwen3VLVisionAttention] = Qwen3VLWindowBatchedAttention
    REPLACEMENTS[qwen3.Qwen3VLVisionPatchEmbed] = Qwen3VLLinearPatchEmbed


def _swap_classes(model: nn.Module, classes: dict[type[nn.Module], type[nn.Module]]) -> int:
    """Give every module of ``model`` whose exact class is a key of ``classes`` that key's value."""
    swapped = 0
    for module in model.modules():
        new_class = classes.get(type(module))
        if new_class is not None:
            module.__class__ = new_class
            swapped += 1
    return swapped


def install(model: nn.Module) -> int:
    """Swap every module of ``model`` that :data:`REPLACEMENTS` names for the project's subclass.

    Returns how many were swapped (0 for a model of another architecture). Idempotent.
    """
    return _swap_classes(model, REPLACEMENTS)


def uninstall(model: nn.Module) -> int:
    """Put transformers' own classes back (the shipped path, for comparisons); returns how many."""
    return _swap_classes(model, {new: old for old, new in REPLACEMENTS.items()})
