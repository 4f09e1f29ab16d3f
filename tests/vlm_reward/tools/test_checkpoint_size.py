"""The checkpoint tool's sizes: the checks, the presets, what a family derives from a size (pure)."""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

import pytest

from vlm_reward.tools.checkpoint_size import (
    DEFAULT_SIZE,
    FIELD_HELP,
    FIELDS,
    PRESETS,
    CheckpointSize,
    checkpoint_size,
    preset_name,
)
from vlm_reward.tools.tiny_checkpoint import size_stamp
from vlm_reward.tools.tiny_families import deepstack_blocks, global_attention_blocks, scaled_mrope

# What the tiny checkpoints were before sizes existed (tiny_families' toy config): the default.
TINY = {
    "hidden": 64,
    "layers": 2,
    "heads": 2,
    "kv_heads": 1,
    "intermediate": 128,
    "vision_depth": 2,
    "vision_hidden": 64,
    "vision_heads": 2,
    "vision_intermediate": 128,
}

BAD_SIZES = [
    (
        "head-dim-not-whole",
        {"hidden": 100},
        r"hidden / heads = 100 / 2 must be a whole multiple of 32 .*; e\.g\. hidden 64 for 2 heads\.$",
    ),
    (
        "head-dim-48",
        {"hidden": 96},
        r"= 96 / 2 must be .*; e\.g\. hidden 64 for 2 heads, or heads 3 for width 96\.$",
    ),
    (
        "head-dim-16",
        {"heads": 4, "kv_heads": 1},
        r"hidden / heads = 64 / 4 must be .*; e\.g\. hidden 128 for 4 heads, or heads 2 for width 64\.$",
    ),
    (
        "vision-head-dim-16",
        {"vision_heads": 4},
        r"vision_hidden / vision_heads = 64 / 4 must be .*; e\.g\. vision_hidden 128 for 4 heads, or "
        r"vision_heads 2 for width 64\.$",
    ),
    (
        "kv-heads-not-dividing",
        {"hidden": 96, "heads": 3, "kv_heads": 2},
        r"heads 3 must be a multiple of kv_heads 2 .*one of 1, 3\.",
    ),
    ("zero-layers", {"layers": 0}, r"layers must be a positive integer, got 0"),
    ("negative-depth", {"vision_depth": -1}, r"vision_depth must be a positive integer, got -1"),
    ("float", {"intermediate": 128.0}, r"intermediate must be a positive integer, got 128\.0"),
    ("bool", {"layers": True}, r"layers must be a positive integer, got True"),
]


@pytest.mark.parametrize(("overrides", "message"), [c[1:] for c in BAD_SIZES], ids=[c[0] for c in BAD_SIZES])
def test_a_bad_size_names_the_value_and_what_would_do(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CheckpointSize(**{**TINY, **overrides})
    with pytest.raises(ValueError, match=message):  # the same check through a preset and overrides
        checkpoint_size("tiny", overrides)


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("huge", None, r"no checkpoint size 'huge'; choose one of tiny, small, base, large\."),
        ("tiny", {"depth": 4}, r"no checkpoint size field depth; the fields are hidden, layers, heads, "),
    ],
    ids=["unknown-preset", "unknown-field"],
)
def test_unknown_names_list_the_ones_there_are(
    name: str, overrides: dict[str, int] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        checkpoint_size(name, overrides)


def test_the_default_is_tiny_and_tiny_is_the_size_before_sizes_existed() -> None:
    assert DEFAULT_SIZE == "tiny"
    assert asdict(PRESETS["tiny"]) == TINY == CheckpointSize().to_dict() == checkpoint_size().to_dict()
    assert (CheckpointSize().head_dim, CheckpointSize().vision_head_dim) == (32, 32)


@pytest.mark.parametrize("name", list(PRESETS), ids=list(PRESETS))
def test_each_preset_is_named_back_and_grows(name: str) -> None:
    size = PRESETS[name]
    assert preset_name(size) == name
    names = list(PRESETS)
    if names.index(name):
        smaller = PRESETS[names[names.index(name) - 1]]
        assert all(getattr(size, f) >= getattr(smaller, f) for f in FIELDS)


def test_overrides_change_one_value_and_leave_the_preset_s_name_behind() -> None:
    size = checkpoint_size("small", {"layers": 6})
    assert size.to_dict() == {**PRESETS["small"].to_dict(), "layers": 6}
    assert preset_name(size) is None
    assert preset_name(checkpoint_size("tiny", {"hidden": 128, "heads": 4, "kv_heads": 2})) is None
    assert set(FIELD_HELP) == set(FIELDS) and all(FIELD_HELP.values())


@pytest.mark.parametrize(
    ("real", "head_dim", "expected"),
    [
        ((16, 24, 24), 128, [16, 24, 24]),
        ((16, 24, 24), 32, [4, 6, 6]),
        ((16, 24, 24), 64, [8, 12, 12]),
        ((16, 24, 24), 96, [12, 18, 18]),
        ((24, 20, 20), 32, [6, 5, 5]),
        ((24, 20, 20), 64, [12, 10, 10]),
    ],
    ids=["qwen2_5_vl-128", "qwen2_5_vl-32", "qwen2_5_vl-64", "qwen2_5_vl-96", "qwen3_vl-32", "qwen3_vl-64"],
)
def test_the_real_mrope_split_scales_to_the_head_dim(
    real: tuple[int, ...], head_dim: int, expected: list[int]
) -> None:
    assert scaled_mrope(real, head_dim) == expected
    assert sum(expected) == head_dim // 2


@pytest.mark.parametrize(
    ("real", "head_dim"),
    [((16, 24, 24), 40), ((24, 20, 20), 48), ((16, 24, 24), 33)],
    ids=["qwen2_5_vl-40", "qwen3_vl-48", "odd"],
)
def test_a_head_dim_the_split_does_not_scale_to_is_refused(real: tuple[int, ...], head_dim: int) -> None:
    with pytest.raises(
        ValueError, match=re.escape(f"mrope_section {list(real)} does not scale to head dim {head_dim}")
    ):
        scaled_mrope(real, head_dim)


@pytest.mark.parametrize(
    ("depth", "global_blocks", "deepstack"),
    [
        (1, [0], [0]),
        (2, [1], [0]),
        (4, [3], [0, 1, 2]),
        (8, [7], [1, 3, 5]),
        (24, [7, 15, 23], [5, 11, 17]),  # Qwen3-VL-4B's DeepStack taps
        (32, [7, 15, 23, 31], [7, 15, 23]),  # Qwen2.5-VL-7B's global attention
    ],
    ids=["1", "2", "4", "8", "24", "32"],
)
def test_special_vision_blocks_follow_the_real_spacing(
    depth: int, global_blocks: list[int], deepstack: list[int]
) -> None:
    assert global_attention_blocks(depth) == {"fullatt_block_indexes": global_blocks}
    assert deepstack_blocks(depth) == {"deepstack_visual_indexes": deepstack}


def test_stamps_tell_every_family_and_size_apart_and_are_stable() -> None:
    stamps = {
        (family, name): size_stamp(family, size)
        for family in ("qwen2_5_vl", "qwen3_vl")
        for name, size in PRESETS.items()
    }
    assert len(set(stamps.values())) == len(stamps)
    # The stamp is a function of the family and the fields only: an override equal to a preset is it.
    assert size_stamp("qwen2_5_vl", checkpoint_size("tiny", {"layers": 2})) == stamps["qwen2_5_vl", "tiny"]
    assert size_stamp("qwen2_5_vl", checkpoint_size("tiny", {"layers": 3})) not in stamps.values()
    # Pinned: a stamp that changed would silently separate checkpoints that are the same.
    assert (stamps["qwen2_5_vl", "tiny"], stamps["qwen3_vl", "tiny"]) == (
        "a0a176a6215657c2",
        "0796fab5296e6af5",
    )
