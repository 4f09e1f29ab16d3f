"""The width and depth of a tiny checkpoint: :class:`CheckpointSize`, its named presets, its checks.

:mod:`vlm_reward.tools.tiny_checkpoint` builds a Qwen2.5-VL or Qwen3-VL of the real architecture
at one of these sizes. ``tiny`` (the default, what every test builds) is the toy that only has
to run the code paths; the larger presets are for a judge that should learn something on a CPU
(``docs/server/backends.md`` has each preset's parameters and its forward and training-step
times, measured here). A size holds only what varies between sizes; what a family derives from
it is :mod:`vlm_reward.tools.tiny_families`' (the M-RoPE split scaled to the head dim, which
vision blocks attend globally or feed DeepStack), and the vision merger's output width is the
text width, as in the real models.

Checked on construction, each failure a ``ValueError`` that names the value and what would do:
every number positive; the head dims (``hidden / heads``, ``vision_hidden / vision_heads``)
whole multiples of :data:`HEAD_DIM_MULTIPLE` (vLLM's CPU attention kernels take multiples of
32, and a multiple of 32 is what lets the real M-RoPE splits scale to a whole number of
frequencies); ``heads`` a multiple of ``kv_heads`` (grouped-query attention).

Pure: no torch, no transformers (the server imports this package).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

HEAD_DIM_MULTIPLE = 32


def _field(default: int, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class CheckpointSize:
    """How wide and deep the language model and the vision tower are; each field's ``help`` (its
    metadata) says which config key it sets. The defaults are the ``tiny`` preset's."""

    hidden: int = _field(64, "the language model's width (hidden_size)")
    layers: int = _field(2, "the language model's layers (num_hidden_layers)")
    heads: int = _field(2, "attention heads (num_attention_heads); hidden / heads must be a multiple of 32")
    kv_heads: int = _field(1, "key-value heads (num_key_value_heads); must divide heads")
    intermediate: int = _field(128, "the language model's MLP width (intermediate_size)")
    vision_depth: int = _field(2, "the vision tower's blocks (depth)")
    vision_hidden: int = _field(64, "the vision tower's width (hidden_size)")
    vision_heads: int = _field(
        2, "the vision tower's heads (num_heads); vision_hidden / vision_heads must be a multiple of 32"
    )
    vision_intermediate: int = _field(128, "the vision tower's MLP width (intermediate_size)")

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"checkpoint size: {name} must be a positive integer, got {value!r}.")
        for part, width, heads in (
            ("", self.hidden, self.heads),
            ("vision_", self.vision_hidden, self.vision_heads),
        ):
            if width % heads or (width // heads) % HEAD_DIM_MULTIPLE:
                fits = f"e.g. {part}hidden {heads * HEAD_DIM_MULTIPLE} for {heads} heads"
                if width % HEAD_DIM_MULTIPLE == 0:
                    fits += f", or {part}heads {width // HEAD_DIM_MULTIPLE} for width {width}"
                raise ValueError(
                    f"checkpoint size: {part}hidden / {part}heads = {width} / {heads} must be a whole "
                    f"multiple of {HEAD_DIM_MULTIPLE} (vLLM's CPU attention kernels take head dims of "
                    f"{', '.join(str(HEAD_DIM_MULTIPLE * k) for k in (1, 2, 3, 4))}, ...); {fits}."
                )
        if self.heads % self.kv_heads:
            divisors = [k for k in range(1, self.heads + 1) if self.heads % k == 0]
            raise ValueError(
                f"checkpoint size: heads {self.heads} must be a multiple of kv_heads {self.kv_heads} "
                f"(grouped-query attention); kv_heads may be one of {', '.join(map(str, divisors))}."
            )

    @property
    def head_dim(self) -> int:
        """The language model's head dim: ``hidden / heads``."""
        return self.hidden // self.heads

    @property
    def vision_head_dim(self) -> int:
        """The vision tower's head dim: ``vision_hidden / vision_heads``."""
        return self.vision_hidden // self.vision_heads

    def to_dict(self) -> dict[str, int]:
        """The fields by name, in declaration order (what the checkpoint's size record holds)."""
        return asdict(self)


# The named sizes; "tiny" is the default and what every test builds (its checkpoints are the
# ones built before sizes existed, byte for byte). Parameters are the built models' (both
# families, this tokenizer's 320-row vocabulary): docs/server/backends.md.
PRESETS: Mapping[str, CheckpointSize] = {
    "tiny": CheckpointSize(),
    "small": CheckpointSize(
        hidden=128,
        layers=4,
        heads=4,
        kv_heads=2,
        intermediate=384,
        vision_depth=4,
        vision_hidden=128,
        vision_heads=4,
        vision_intermediate=256,
    ),
    "base": CheckpointSize(
        hidden=256,
        layers=6,
        heads=4,
        kv_heads=2,
        intermediate=768,
        vision_depth=8,
        vision_hidden=256,
        vision_heads=4,
        vision_intermediate=512,
    ),
    "large": CheckpointSize(
        hidden=384,
        layers=8,
        heads=6,
        kv_heads=2,
        intermediate=1152,
        vision_depth=8,
        vision_hidden=320,
        vision_heads=5,
        vision_intermediate=896,
    ),
}
DEFAULT_SIZE = "tiny"
FIELDS = tuple(f.name for f in fields(CheckpointSize))
FIELD_HELP: Mapping[str, str] = {f.name: f.metadata["help"] for f in fields(CheckpointSize)}


def checkpoint_size(name: str = DEFAULT_SIZE, overrides: Mapping[str, Any] | None = None) -> CheckpointSize:
    """The preset ``name`` with ``overrides`` (field -> value) put in, checked as a whole.

    ``ValueError`` for an unknown preset or field, naming the ones there are, and for a size that
    fails :class:`CheckpointSize`'s checks."""
    if name not in PRESETS:
        raise ValueError(f"no checkpoint size {name!r}; choose one of {', '.join(PRESETS)}.")
    unknown = sorted(set(overrides or {}) - set(FIELDS))
    if unknown:
        raise ValueError(
            f"no checkpoint size field {', '.join(unknown)}; the fields are {', '.join(FIELDS)}."
        )
    return replace(PRESETS[name], **dict(overrides or {}))


def preset_name(size: CheckpointSize) -> str | None:
    """The preset ``size`` equals, or ``None`` for a size of its own."""
    return next((name for name, preset in PRESETS.items() if preset == size), None)
