"""vlm_reward.backends.input_batch: per-job processor outputs joined are the processor's own batch."""

from __future__ import annotations

from typing import Any

import pytest

from vlm_reward.backends import ScoreJob
from vlm_reward.backends.qwen_vision import job_clip, job_messages, load_vision_inputs
from vlm_reward.backends.qwen_vl_hf import processor_inputs, render_prompt
from vlm_reward.judging.model_family import checkpoint_family
from vlm_reward.judging.prompts import PRIMO_PROMPT, QWEN_VIDEO_PROMPT, PromptSpec

torch = pytest.importorskip("torch")
input_batch = pytest.importorskip("vlm_reward.backends.input_batch")


def _prepared(processor: Any, checkpoint: str, spec: PromptSpec, job: ScoreJob) -> tuple[str, Any]:
    clip = job_clip(job)
    messages = job_messages(spec, job, clip)
    return render_prompt(processor, messages), load_vision_inputs(
        messages, clip, checkpoint_family(checkpoint)
    )


@pytest.mark.parametrize(
    "name", ["tiny_qwen_checkpoint", "tiny_qwen3_checkpoint"], ids=["qwen2_5_vl", "qwen3_vl"]
)
def test_joined_outputs_are_the_processors_batch(
    request: pytest.FixtureRequest, sample_mp4: str, name: str
) -> None:
    """Different prompt lengths, frame counts and sizes, and one job with images (PRIMO's layout)."""
    from transformers import AutoProcessor

    checkpoint = request.getfixturevalue(name)
    processor = AutoProcessor.from_pretrained(checkpoint)
    processor.tokenizer.padding_side = "left"
    cases = [
        (QWEN_VIDEO_PROMPT, ScoreJob("open the drawer", sample_mp4, 8, 112 * 112, 4.0)),
        (PRIMO_PROMPT, ScoreJob("put the soup in the basket and close it", sample_mp4, 4, 112 * 112, 4.0)),
        (
            QWEN_VIDEO_PROMPT,
            ScoreJob("stack the blocks", sample_mp4, 6, 224 * 224, 4.0, native_frame_size=True),
        ),
    ]
    prepared = [_prepared(processor, checkpoint, spec, job) for spec, job in cases]
    batch = processor_inputs(processor, [text for text, _ in prepared], [vision for _, vision in prepared])
    parts = [processor_inputs(processor, [text], [vision]) for text, vision in prepared]
    joined = input_batch.join_inputs(parts, processor.tokenizer.pad_token_id, "left")
    assert sorted(joined.keys()) == sorted(batch.keys())
    for key in batch:
        assert torch.equal(joined[key], batch[key]), key
    assert len({part["input_ids"].shape[1] for part in parts}) == 3  # the padding was exercised


@pytest.mark.parametrize(
    ("side", "ids", "mask"),
    [
        ("left", [[0, 0, 5, 6], [7, 8, 9, 4]], [[0, 0, 1, 1], [1, 1, 1, 1]]),
        ("right", [[5, 6, 0, 0], [7, 8, 9, 4]], [[1, 1, 0, 0], [1, 1, 1, 1]]),
    ],
    ids=["left", "right"],
)
def test_token_rows_are_padded_on_the_side_asked_and_vision_tensors_concatenated(
    side: str, ids: list, mask: list
) -> None:
    from transformers import BatchFeature

    def part(tokens: list[int], grid: list[int]) -> Any:
        return BatchFeature(
            {
                "input_ids": torch.tensor([tokens]),
                "attention_mask": torch.ones(1, len(tokens), dtype=torch.long),
                "video_grid_thw": torch.tensor([grid]),
            }
        )

    joined = input_batch.join_inputs([part([5, 6], [1, 2, 2]), part([7, 8, 9, 4], [2, 2, 2])], 0, side)
    assert joined["input_ids"].tolist() == ids and joined["attention_mask"].tolist() == mask
    assert joined["video_grid_thw"].tolist() == [[1, 2, 2], [2, 2, 2]]


@pytest.mark.parametrize(
    ("parts", "side", "message"),
    [
        ([], "left", "at least one processor output"),
        ([{"input_ids": [[1]], "attention_mask": [[1]]}], "middle", "padding_side must be 'left' or 'right'"),
        ([{"input_ids": [[1]]}, {"attention_mask": [[1]]}], "left", "needs its 'attention_mask'"),
    ],
    ids=["none", "bad-side", "missing-token-row"],
)
def test_bad_input_is_refused(parts: list, side: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        input_batch.join_inputs(parts, 0, side)
