"""The positions :mod:`vlm_reward.backends.video_positions` gives a Qwen2.5-VL, against transformers'
own ``get_rope_index`` on real processor outputs: equal wherever transformers keeps the time step
whole (2 fps: one second a frame pair), time-stepped where it drops the fraction (4 fps), and
installed on a loaded model; and against vLLM's own position code (in ``.venv-vllm``, no engine),
equal token for token."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import transformers

from tests.support.setup_steps import WAITING_TEST_TIMEOUT_S
from tests.support.vllm_venv import require_vllm_python, run_in_vllm_venv
from vlm_reward.backends import video_positions

FRAMES = 8  # four frame pairs
# The fast tests also run in the vLLM venv (transformers 5), whose method has another signature and
# is left as it is (video_positions.SIGNATURE).
TRANSFORMERS_4 = int(transformers.__version__.split(".")[0]) < 5
on_transformers_4 = pytest.mark.skipif(not TRANSFORMERS_4, reason="transformers 4's method (the main venv's)")
PROMPTS = {
    "video": "<|vision_start|><|video_pad|><|vision_end|>is the task done?",
    "image-then-video": "first <|vision_start|><|image_pad|><|vision_end|> then "
    "<|vision_start|><|video_pad|><|vision_end|> done?",
}


@pytest.fixture(scope="module")
def processor(tiny_qwen_checkpoint: str):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_qwen_checkpoint)
    processor.tokenizer.padding_side = "left"
    return processor


@pytest.fixture(scope="module")
def model_config(tiny_qwen_checkpoint: str):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(tiny_qwen_checkpoint)


def batch(processor, names: list[str], fps: float):
    """The processor's tensors for ``names``' prompts, left-padded, each video 8 frames of 56 px."""
    rng = np.random.default_rng(0)
    texts = [PROMPTS[n] for n in names]
    videos = [rng.integers(0, 255, (FRAMES, 56, 56, 3), dtype=np.uint8) for _ in names]
    images = [rng.integers(0, 255, (56, 56, 3), dtype=np.uint8) for n in names if "image" in n]
    return processor(
        text=texts,
        videos=videos,
        images=images or None,
        fps=fps,
        do_sample_frames=False,
        padding=True,
        return_tensors="pt",
    )


def both(model_config, inputs) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """(transformers' positions and deltas, ours) for ``inputs``."""
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel

    owner = SimpleNamespace(config=model_config)
    args = (
        inputs["input_ids"],
        inputs.get("image_grid_thw"),
        inputs["video_grid_thw"],
        inputs["second_per_grid_ts"],
        inputs["attention_mask"],
    )
    return Qwen2_5_VLModel.get_rope_index(owner, *args), video_positions.rope_index(owner, *args)


@on_transformers_4
@pytest.mark.parametrize(
    "names",
    [["video"], ["image-then-video", "video"], ["video", "image-then-video"]],
    ids=["one-video", "image-and-video-then-padded-video", "padded-video-then-image-and-video"],
)
def test_positions_are_transformers_wherever_its_time_step_is_whole(processor, model_config, names) -> None:
    inputs = batch(processor, names, fps=2.0)
    assert inputs["second_per_grid_ts"].tolist() == [1.0] * len(names)
    (theirs, their_deltas), (ours, our_deltas) = both(model_config, inputs)
    assert torch.equal(ours, theirs) and torch.equal(our_deltas, their_deltas)


@on_transformers_4
def test_at_4_fps_each_frame_pair_steps_in_time_where_transformers_stands_still(
    processor, model_config
) -> None:
    inputs = batch(processor, ["video"], fps=4.0)
    (theirs, _), (ours, our_deltas) = both(model_config, inputs)
    ids = inputs["input_ids"][0]
    video = (ids == model_config.video_token_id).nonzero().flatten()
    per_pair = len(video) // (FRAMES // 2)
    first = int(ours[0, 0, video[0]])
    # Ours: the pairs at temporal 0, 1, 2, 3 (0.5 s a pair x 2 tokens a second); transformers: all 0.
    assert ours[0, 0, video][::per_pair].tolist() == [first + k for k in range(FRAMES // 2)]
    assert set(theirs[0, 0, video].tolist()) == {first}
    # The text after the video goes on from the block's largest position (here its last pair's time,
    # 3 past its first, where transformers' is the last row, 1 past), and the deltas say where
    # decoding goes on.
    after = int(video[-1]) + 1
    assert int(ours[0, 0, after]) == first + FRAMES // 2
    assert int(theirs[0, 0, after]) == int(theirs[:, 0, video].max()) + 1 == first + 2
    assert int(our_deltas[0, 0]) == int(ours[:, 0].max()) + 1 - ids.shape[0]


def test_install_reaches_a_loaded_model_on_transformers_4_only_and_leaves_other_families(
    tiny_qwen_checkpoint: str,
) -> None:
    from transformers import Qwen2_5_VLForConditionalGeneration

    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_qwen_checkpoint)
    assert video_positions.install(model) is TRANSFORMERS_4
    installed = getattr(model.model.get_rope_index, "__func__", None) is video_positions.rope_index
    assert installed is TRANSFORMERS_4
    other = SimpleNamespace(config=SimpleNamespace(model_type="qwen3_vl"), model=SimpleNamespace())
    assert not video_positions.install(other) and not hasattr(other.model, "get_rope_index")


def test_a_block_shorter_than_its_grid_is_refused() -> None:
    tokens = video_positions.Placeholders(image=7, video=8)
    grids = iter([(2, 4, 4, 0.5)])  # 2 x 2 x 2 = 8 placeholders after a merge of 2
    with pytest.raises(ValueError, match="fewer placeholders than its grid"):
        video_positions.sequence_positions([1, 8, 8, 8, 2], tokens, iter([]), grids, 2, 2.0)


# vLLM's own positions for one sequence (its Qwen2.5-VL model's method, no engine): argv[1] is
# {"tokens": [...], "features": [{"modality", "offset", "thw", "seconds"}]}; prints the positions.
VLLM_POSITIONS = """
import json, sys
from types import SimpleNamespace as NS
import torch
from vllm.model_executor.models.qwen2_5_vl import Qwen2_5_VLForConditionalGeneration as Model
spec = json.loads(sys.argv[1])
owner = NS(config=NS(vision_config=NS(spatial_merge_size=2, tokens_per_second=2)))
owner.iter_mm_grid_thw = lambda features: Model.iter_mm_grid_thw(owner, features)
features = []
for f in spec["features"]:
    data = {f["modality"] + "_grid_thw": NS(data=torch.tensor(f["thw"]))}
    if f["modality"] == "video":
        data["second_per_grid_ts"] = NS(data=torch.tensor(f["seconds"]))
    features.append(NS(modality=f["modality"], mm_position=NS(offset=f["offset"]), data=data))
positions, delta = Model.get_mrope_input_positions(owner, spec["tokens"], features)
print(json.dumps({"positions": positions.tolist(), "delta": int(delta)}))
"""
IMAGE, VIDEO = 7, 8


def sequence(blocks: list[tuple[str, tuple[int, int, int], float]]) -> tuple[list[int], list[dict]]:
    """Token ids with text around each block (``(modality, thw, seconds)``) and their features."""
    tokens, features = [1, 2, 3], []
    for modality, (t, h, w), seconds in blocks:
        features.append({"modality": modality, "offset": len(tokens), "thw": [t, h, w], "seconds": seconds})
        tokens += [IMAGE if modality == "image" else VIDEO] * (t * h * w // 4) + [4, 5]
    return tokens, features


@pytest.mark.vllm_venv  # vLLM's position code, no engine: the light part
@pytest.mark.slow
@pytest.mark.timeout(WAITING_TEST_TIMEOUT_S)
@pytest.mark.parametrize(
    "blocks",
    [
        [("video", (8, 10, 10), 0.5)],  # the env's clip: 16 frames at 4 fps, 140 px
        [("video", (8, 10, 10), 2.08)],  # 16 frames sampled from 333 at 20 fps
        [("image", (1, 4, 6), 0.0), ("video", (4, 4, 4), 0.5)],
    ],
    ids=["16-frames-at-4-fps", "16-of-333-frames-at-20-fps", "image-then-video"],
)
def test_positions_are_vllm_s_own(blocks: list) -> None:
    python = require_vllm_python()
    tokens, features = sequence(blocks)
    result = run_in_vllm_venv(
        python, ["-c", VLLM_POSITIONS, json.dumps({"tokens": tokens, "features": features})], timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    grids = {
        m: [(*f["thw"], f["seconds"]) for f in features if f["modality"] == m] for m in ("image", "video")
    }
    placeholders = video_positions.Placeholders(IMAGE, VIDEO)
    ours = video_positions.sequence_positions(
        tokens, placeholders, iter(grids["image"]), iter(grids["video"]), merge=2, tokens_per_second=2.0
    )
    assert ours.tolist() == theirs["positions"]
    assert int(ours.max()) + 1 - len(tokens) == theirs["delta"]
