"""The training sees what the server shows: the fine-tune's inputs for an example are the
``qwen_vl_hf`` backend's for the same request, token for token and pixel for pixel, on both
families and both probability presets (tiny checkpoints, a small MP4; seconds)."""

from __future__ import annotations

import pytest

from reward_eval.finetune.inputs import InputCache, Request, model_inputs
from vlm_reward.backends.qwen_vl_hf import QwenHFBackend
from vlm_reward.judging.model_family import checkpoint_family

PRESETS = [({}, "yes"), ({"prompt": "roboreward"}, "ANSWER: ")]


@pytest.fixture(
    scope="module", params=["tiny_qwen_checkpoint", "tiny_qwen3_checkpoint"], ids=["qwen2_5_vl", "qwen3_vl"]
)
def backend(request: pytest.FixtureRequest) -> QwenHFBackend:
    loaded = QwenHFBackend(request.getfixturevalue(request.param))
    loaded.load()
    return loaded


@pytest.mark.parametrize(("kwargs", "ends_with"), PRESETS, ids=["yes_no", "roboreward"])
def test_training_inputs_are_the_backends_token_ids_and_pixels(
    backend: QwenHFBackend, sample_mp4: str, kwargs: dict, ends_with: str
) -> None:
    import torch

    request = Request(nframes=8, max_pixels=12544, video_fps=4.0, backend_kwargs=kwargs)
    job = request.job("put the soup in the basket", sample_mp4, frames=16)
    family = checkpoint_family(backend.model)
    mine = model_inputs(backend._processor, family, request.prompt(), job)
    served = backend._model_inputs([backend.prepare(job)])  # what generate() runs the model on
    assert sorted(mine.keys()) == sorted(served.keys())
    for key in served:
        assert torch.equal(mine[key], served[key]), key
    text = backend._processor.tokenizer.decode(mine["input_ids"][0])
    assert text.endswith("<|im_start|>assistant\n" + ("" if ends_with == "yes" else ends_with))
    assert job.nframes == 8 and job.score_mode == "probability"


def test_the_cache_builds_an_examples_inputs_once(backend: QwenHFBackend, sample_mp4: str) -> None:
    request = Request(nframes=4, max_pixels=12544, video_fps=4.0)
    cache = InputCache(backend._processor, checkpoint_family(backend.model), request.prompt())
    job = request.job("t", sample_mp4, frames=16)
    first = cache.get("a", job)
    spent = cache.seconds
    assert cache.get("a", job) is first and cache.seconds == spent > 0
    off = InputCache(backend._processor, checkpoint_family(backend.model), request.prompt(), enabled=False)
    assert off.get("a", job) is not off.get("a", job)
