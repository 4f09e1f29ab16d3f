"""The tiny offline checkpoints (Qwen2.5-VL, Qwen3-VL): real processor, matching ids, small, offline."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily
from vlm_reward.tools.checkpoint_size import PRESETS
from vlm_reward.tools.tiny_checkpoint import (
    SIZE_FILE,
    SPECIAL_TOKENS,
    build_tiny_checkpoint,
    build_tiny_qwen2_5_vl,
    main,
    read_size_record,
    size_stamp,
)

REPO = Path(__file__).resolve().parents[3]

SYSTEM = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
VIDEO = {"type": "video", "video": "episode.mp4"}
IMAGE = {"type": "image", "image": "frame.png"}


# (checkpoint fixture, family, processor class, model class) of each tiny checkpoint.
FAMILIES = [
    ("tiny_qwen_checkpoint", QWEN2_5_VL, "Qwen2_5_VLProcessor", "Qwen2_5_VLForConditionalGeneration"),
    ("tiny_qwen3_checkpoint", QWEN3_VL, "Qwen3VLProcessor", "Qwen3VLForConditionalGeneration"),
]
FAMILY_IDS = ["qwen2_5_vl", "qwen3_vl"]


@pytest.fixture(scope="module")
def processor(tiny_qwen_checkpoint: str) -> Any:
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_qwen_checkpoint)


@pytest.mark.parametrize("checkpoint", [f[0] for f in FAMILIES], ids=FAMILY_IDS)
def test_checkpoint_is_under_5_mb(request: pytest.FixtureRequest, checkpoint: str) -> None:
    total = sum(f.stat().st_size for f in Path(request.getfixturevalue(checkpoint)).iterdir())
    assert total < 5 * 1024 * 1024


@pytest.mark.slow
@pytest.mark.parametrize(("checkpoint", "family", "processor_class", "model_class"), FAMILIES, ids=FAMILY_IDS)
def test_loads_offline_with_auto_classes(
    request: pytest.FixtureRequest,
    checkpoint: str,
    family: ModelFamily,
    processor_class: str,
    model_class: str,
) -> None:
    """A fresh interpreter with the hub switched off (and no reachable proxy) loads both halves."""
    code = (
        "import sys\n"
        "from transformers import AutoModelForImageTextToText, AutoProcessor\n"
        "p = AutoProcessor.from_pretrained(sys.argv[1])\n"
        "m = AutoModelForImageTextToText.from_pretrained(sys.argv[1])\n"
        "print(type(p).__name__, type(m).__name__)\n"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",
    }
    result = subprocess.run(
        [sys.executable, "-c", code, request.getfixturevalue(checkpoint)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [processor_class, model_class]
    assert model_class == family.model_class


@pytest.mark.parametrize(("checkpoint", "family", "processor_class", "model_class"), FAMILIES, ids=FAMILY_IDS)
def test_processor_has_the_real_image_and_video_processors(
    request: pytest.FixtureRequest,
    checkpoint: str,
    family: ModelFamily,
    processor_class: str,
    model_class: str,
) -> None:
    """The classes transformers itself picks for each family, not stand-ins."""
    from transformers import AutoProcessor
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    def names(entry: Any) -> tuple[str, ...]:
        # transformers 4.57: a name or a (slow, fast) pair; 5: {"torchvision": ..., "pil": ...}
        values = entry.values() if isinstance(entry, dict) else [entry] if isinstance(entry, str) else entry
        return tuple(values)

    processor = AutoProcessor.from_pretrained(request.getfixturevalue(checkpoint))
    assert type(processor).__name__ == processor_class
    assert type(processor.image_processor).__name__ in names(IMAGE_PROCESSOR_MAPPING_NAMES[family.model_type])
    assert type(processor.video_processor).__name__ in names(VIDEO_PROCESSOR_MAPPING_NAMES[family.model_type])
    # transformers 5 has one (Rust-backed) Qwen2Tokenizer; 4.57 calls that one ...Fast.
    assert type(processor.tokenizer).__name__ in ("Qwen2TokenizerFast", "Qwen2Tokenizer")
    assert processor.tokenizer.is_fast
    # The real models' vision geometry, which qwen-vl-utils' 28 / 32 px snapping assumes.
    for proc in (processor.image_processor, processor.video_processor):
        assert (proc.patch_size, proc.merge_size, proc.temporal_patch_size) == (family.patch_size, 2, 2)


@pytest.mark.parametrize(
    ("messages", "add_generation_prompt", "expected"),
    [
        (
            [{"role": "user", "content": "hi"}],
            True,
            SYSTEM + "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        ),
        (
            [
                {"role": "system", "content": [{"type": "text", "text": "Judge."}]},
                {"role": "user", "content": [VIDEO, {"type": "text", "text": "Done?"}]},
            ],
            True,
            "<|im_start|>system\nJudge.<|im_end|>\n<|im_start|>user\n"
            "<|vision_start|><|video_pad|><|vision_end|>Done?<|im_end|>\n<|im_start|>assistant\n",
        ),
        (
            [{"role": "user", "content": [IMAGE, VIDEO, IMAGE, {"type": "text", "text": "Q"}]}],
            False,
            SYSTEM + "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
            "<|vision_start|><|video_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>Q<|im_end|>\n",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
            False,
            SYSTEM + "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n",
        ),
    ],
    ids=["default-system", "video-question", "primo-layout", "multi-turn-no-generation-prompt"],
)
def test_chat_template_renders_qwen_format(
    processor: Any, messages: list[dict[str, Any]], add_generation_prompt: bool, expected: str
) -> None:
    for owner in (processor, processor.tokenizer):  # vLLM renders with either
        text = owner.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )
        assert text == expected


@pytest.mark.parametrize(
    ("attribute", "token"),
    [
        ("image_token_id", "<|image_pad|>"),
        ("video_token_id", "<|video_pad|>"),
        ("vision_start_token_id", "<|vision_start|>"),
        ("vision_end_token_id", "<|vision_end|>"),
        ("eos_token_id", "<|im_end|>"),
        ("pad_token_id", "<|endoftext|>"),
        ("bos_token_id", "<|endoftext|>"),
    ],
    ids=["image", "video", "vision-start", "vision-end", "eos", "pad", "bos"],
)
def test_config_token_ids_match_tokenizer(
    tiny_qwen_checkpoint: str, processor: Any, attribute: str, token: str
) -> None:
    config = json.loads((Path(tiny_qwen_checkpoint) / "config.json").read_text())
    token_id = processor.tokenizer.convert_tokens_to_ids(token)
    assert token_id != processor.tokenizer.unk_token_id
    # transformers 5 (.venv-vllm runs this test too) keeps the text ids in text_config only.
    assert attribute in config or attribute in config["text_config"]
    for place in (config, config["text_config"]):
        if attribute in place:
            assert place[attribute] == token_id


def test_special_tokens_are_single_special_ids(tiny_qwen_checkpoint: str, processor: Any) -> None:
    tokenizer = processor.tokenizer
    ids = [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert len(set(ids)) == len(SPECIAL_TOKENS)
    assert tokenizer("".join(SPECIAL_TOKENS))["input_ids"] == ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == ""
    config = json.loads((Path(tiny_qwen_checkpoint) / "config.json").read_text())
    assert max(ids) < config["text_config"]["vocab_size"]


@pytest.mark.parametrize(
    "text",
    ["put the bowl on the plate", "naïve café 漢字 🤖", "\x00\x01\t\n\x7f", "<answer>0.75</answer>"],
    ids=["ascii", "multibyte", "control-bytes", "tags"],
)
def test_tokenizer_round_trips_any_text(processor: Any, text: str) -> None:
    """Byte-level BPE: every byte has a token, so decode(encode(x)) == x."""
    ids = processor.tokenizer(text)["input_ids"]
    assert processor.tokenizer.decode(ids) == text


def test_tokenizer_applies_merges(processor: Any) -> None:
    assert processor.tokenizer.tokenize("the") == ["t", "he"]
    assert processor.tokenizer.tokenize(" the") == ["Ġthe"]


def test_generation_config_stops_at_im_end_quickly(tiny_qwen_checkpoint: str, processor: Any) -> None:
    from transformers import GenerationConfig

    config = GenerationConfig.from_pretrained(tiny_qwen_checkpoint)
    assert processor.tokenizer.convert_tokens_to_ids("<|im_end|>") in config.eos_token_id
    assert config.pad_token_id == processor.tokenizer.pad_token_id
    assert 1 <= config.max_new_tokens <= 16
    assert not config.do_sample


def test_build_is_deterministic_and_leaves_the_global_rng_alone(tmp_path: Path) -> None:
    import torch

    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    first = build_tiny_qwen2_5_vl(tmp_path / "a")
    assert torch.equal(torch.rand(1), expected_next)
    second = build_tiny_qwen2_5_vl(tmp_path / "b")
    assert first == tmp_path / "a"
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def test_cli_writes_checkpoint_and_prints_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "nested" / "ckpt"
    main([str(out)])
    assert capsys.readouterr().out.strip() == str(out)
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json", SIZE_FILE} <= {
        p.name for p in out.iterdir()
    }


def test_cli_builds_the_family_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main([str(tmp_path / "q3"), "--family", "qwen3_vl"])
    config = json.loads((tmp_path / "q3" / "config.json").read_text())
    assert (config["model_type"], config["architectures"]) == (
        "qwen3_vl",
        ["Qwen3VLForConditionalGeneration"],
    )
    assert config["vision_config"]["patch_size"] == 16


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["out", "--family", "llava"], "invalid choice: 'llava'"),
        ([], "the following arguments are required"),
        (["out", "--size", "huge"], "invalid choice: 'huge'"),
        (["out", "--hidden", "100"], "hidden / heads = 100 / 2 must be a whole multiple of 32"),
        (["out", "--size", "small", "--kv-heads", "3"], "heads 4 must be a multiple of kv_heads 3"),
        (["out", "--layers", "two"], "argument --layers: invalid int value: 'two'"),
    ],
    ids=["unknown-family", "no-out-dir", "unknown-size", "bad-head-dim", "bad-kv-heads", "not-a-number"],
)
def test_cli_rejects_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(argv)
    assert excinfo.value.code == 2 and message in capsys.readouterr().err


def test_an_unknown_family_names_the_ones_there_are(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"no tiny checkpoint for model family 'llava'; choose one of qwen2_5_vl, qwen3_vl"
    ):
        build_tiny_checkpoint(tmp_path, "llava")


def test_qwen3_template_adds_no_default_system_turn(tiny_qwen3_checkpoint: str) -> None:
    """Qwen3-VL's real template adds no system turn of its own; the video placeholder is Qwen's."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_qwen3_checkpoint)
    messages = [{"role": "user", "content": [VIDEO, {"type": "text", "text": "Done?"}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>Done?<|im_end|>\n<|im_start|>assistant\n"
    )


def test_cli_without_out_dir_exits_with_usage() -> None:
    with pytest.raises(SystemExit) as excinfo:
        main([])
    assert excinfo.value.code == 2


def test_importing_the_module_stays_light() -> None:
    """The server imports this package without torch/transformers; so must this module."""
    code = (
        "import sys, vlm_reward.tools.tiny_checkpoint; "
        "print(sorted({'torch', 'transformers'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def mrope_section(text_config: dict[str, Any]) -> list[int]:
    """The text config's M-RoPE split (transformers 5 writes ``rope_parameters``, 4.57 ``rope_scaling``)."""
    rope = text_config.get("rope_scaling") or text_config.get("rope_parameters")
    return rope["mrope_section"]


def safetensors_parameters(checkpoint: Path) -> int:
    """The parameters stored in the checkpoint's weights, counted from the tensors' shapes."""
    from safetensors import safe_open

    with safe_open(checkpoint / "model.safetensors", "np") as weights:
        return sum(math.prod(weights.get_slice(k).get_shape()) for k in weights.keys())  # noqa: SIM118


# Each family's tiny checkpoint as it was before sizes existed: its config's size keys, its parameters.
TINY_SIZES = [
    (
        "tiny_qwen_checkpoint",
        {"head_dim": None, "mrope_section": [4, 6, 6], "fullatt_block_indexes": [1]},
        356_160,
    ),
    (
        "tiny_qwen3_checkpoint",
        {"head_dim": 32, "mrope_section": [6, 5, 5], "deepstack_visual_indexes": [0]},
        449_664,
    ),
]


def assert_sized(config: dict[str, Any], dims: dict[str, int], derived: dict[str, Any]) -> None:
    """``config`` has the widths and depths ``dims`` and the family's ``derived`` keys."""
    text, vision = config["text_config"], config["vision_config"]
    assert (
        text["hidden_size"],
        text["num_hidden_layers"],
        text["num_attention_heads"],
        text["num_key_value_heads"],
        text["intermediate_size"],
    ) == (dims["hidden"], dims["layers"], dims["heads"], dims["kv_heads"], dims["intermediate"])
    assert (vision["depth"], vision["hidden_size"], vision["num_heads"], vision["intermediate_size"]) == (
        dims["vision_depth"],
        dims["vision_hidden"],
        dims["vision_heads"],
        dims["vision_intermediate"],
    )
    assert vision["out_hidden_size"] == dims["hidden"]  # the merger feeds the language model
    assert mrope_section(text) == derived["mrope_section"]
    if derived["head_dim"] is not None:
        assert text["head_dim"] == derived["head_dim"]
    for key in ("fullatt_block_indexes", "deepstack_visual_indexes"):
        if key in derived:
            assert vision[key] == derived[key]


@pytest.mark.parametrize(("checkpoint", "derived", "parameters"), TINY_SIZES, ids=FAMILY_IDS)
def test_the_default_size_is_the_tiny_checkpoint_as_before(
    request: pytest.FixtureRequest, checkpoint: str, derived: dict[str, Any], parameters: int
) -> None:
    path = Path(request.getfixturevalue(checkpoint))
    config = json.loads((path / "config.json").read_text())
    assert_sized(config, PRESETS["tiny"].to_dict(), derived)
    record = read_size_record(path)
    assert record == {
        "family": config["model_type"],
        "size": "tiny",
        "dimensions": PRESETS["tiny"].to_dict(),
        "parameters": parameters,
        "stamp": size_stamp(config["model_type"], PRESETS["tiny"]),
    }
    assert safetensors_parameters(path) == parameters


# (family, size flags, the size built, its preset's name in the record, the family's derived keys)
SIZED_BUILDS = [
    (
        "qwen2_5_vl",
        ["--size", "small"],
        PRESETS["small"].to_dict(),
        "small",
        {"head_dim": None, "mrope_section": [4, 6, 6], "fullatt_block_indexes": [3]},
    ),
    (
        "qwen3_vl",
        ["--size", "small"],
        PRESETS["small"].to_dict(),
        "small",
        {"head_dim": 32, "mrope_section": [6, 5, 5], "deepstack_visual_indexes": [0, 1, 2]},
    ),
    (
        "qwen2_5_vl",
        ["--size", "small", "--hidden", "256", "--vision-depth", "8"],
        {**PRESETS["small"].to_dict(), "hidden": 256, "vision_depth": 8},
        None,
        {"head_dim": None, "mrope_section": [8, 12, 12], "fullatt_block_indexes": [7]},
    ),
    (
        "qwen3_vl",
        ["--hidden", "128", "--heads", "2", "--kv-heads", "2"],
        {**PRESETS["tiny"].to_dict(), "hidden": 128, "heads": 2, "kv_heads": 2},
        None,
        {"head_dim": 64, "mrope_section": [12, 10, 10], "deepstack_visual_indexes": [0]},
    ),
]


@pytest.mark.parametrize(
    ("family", "flags", "dims", "name", "derived"),
    SIZED_BUILDS,
    ids=["qwen2_5_vl-small", "qwen3_vl-small", "qwen2_5_vl-small-wider-deeper", "qwen3_vl-tiny-head-dim-64"],
)
def test_cli_builds_the_size_asked_for(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    family: str,
    flags: list[str],
    dims: dict[str, int],
    name: str | None,
    derived: dict[str, Any],
) -> None:
    main([str(tmp_path), "--family", family, *flags])
    assert capsys.readouterr().out.strip() == str(tmp_path)
    assert_sized(json.loads((tmp_path / "config.json").read_text()), dims, derived)
    record = read_size_record(tmp_path)
    assert record is not None
    assert (record["family"], record["size"], record["dimensions"]) == (family, name, dims)
    assert record["parameters"] == safetensors_parameters(tmp_path)
    assert record["stamp"] not in {size_stamp(family, PRESETS["tiny"]), size_stamp(family, PRESETS["base"])}


def test_a_checkpoint_without_a_record_reads_as_none(tmp_path: Path) -> None:
    assert read_size_record(tmp_path) is None
