"""Benchmark 14b's requests (benchmarks.bench_request_stages): what each way hands the engine.

The engine is a stand-in that keeps what it is given, so these run without vLLM: the MP4 ways
hand it one video of the 16 frames at the size the server resizes to, the JPEG ways ``count``
images of the frames as decoded, each with an image placeholder in the prompt, and the sampling
each way names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import bench_request_stages as bench
from benchmarks.harness import synthetic_frames
from vlm_reward.protocol import DEFAULT_NFRAMES


class _Engine:
    """What ``bench_request_stages.Engine`` offers the ways, without the engine."""

    def __init__(self, checkpoint: str) -> None:
        from transformers import AutoProcessor

        from vlm_reward.backends.answer_tokens import answer_tokens_or_error, probability_sampling
        from vlm_reward.judging.model_family import QWEN2_5_VL
        from vlm_reward.judging.prompts import ServerPrompts

        self.family = QWEN2_5_VL
        self.processor = AutoProcessor.from_pretrained(checkpoint)
        self.spec = ServerPrompts("qwen", {}).for_job("probability", {})
        tokens = answer_tokens_or_error(self.processor.tokenizer)[self.spec.answer_scale.name]
        self.probability = probability_sampling(tokens)
        self.given: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def generate(self, request: dict[str, Any], sampling: dict[str, Any]) -> tuple[float, int, int]:
        self.given.append((request, sampling))
        return 0.0, 0, 0


@pytest.fixture(scope="module")
def engine(tiny_qwen_checkpoint: str) -> _Engine:
    return _Engine(tiny_qwen_checkpoint)


@pytest.mark.parametrize(("native", "side"), [(False, 336), (True, 252)], ids=["default", "native"])
def test_the_mp4_ways_hand_the_engine_one_video_of_the_frames(
    engine: _Engine, tmp_path: Path, native: bool, side: int
) -> None:
    times = bench.mp4_request(engine, synthetic_frames(DEFAULT_NFRAMES, 256, seed=0), native, tmp_path)
    request, sampling = engine.given[-1]
    [(video, _metadata)] = request["multi_modal_data"]["video"]
    assert tuple(video.shape) == (DEFAULT_NFRAMES, 3, side, side)
    assert sampling == engine.probability  # one forward, one token
    assert set(bench.STAGES) <= set(times)
    assert not list(tmp_path.iterdir())  # the clip is removed


@pytest.mark.parametrize(
    ("way", "count", "max_tokens"),
    [(name, *way) for name, way in bench.JPEG_WAYS.items()],
    ids=list(bench.JPEG_WAYS),
)
def test_the_jpeg_ways_hand_the_engine_one_image_per_frame(
    engine: _Engine, way: str, count: int, max_tokens: int
) -> None:
    frames = synthetic_frames(DEFAULT_NFRAMES, 256, seed=0)
    bench.jpeg_request(engine, frames, count, max_tokens)
    request, sampling = engine.given[-1]
    images = request["multi_modal_data"]["image"]
    assert [image.size for image in images] == [(256, 256)] * count
    # Frames spread over the clip, as the video's: every (16 / count)-th.
    shown = [int(np.asarray(image).mean()) for image in images]
    expected = [int(frame.mean()) for frame in frames[:: DEFAULT_NFRAMES // count]]
    assert shown == pytest.approx(expected, abs=2)
    assert request["prompt"].count("<|image_pad|>") == count
    assert (sampling["max_tokens"], sampling["ignore_eos"]) == (max_tokens, True)
