"""Tests for the vLLM backends (Qwen2.5-VL and PRIMO-R1) on a machine without vLLM.

What vLLM receives is built by plain functions, so those run for real here: the tiny
checkpoint's real Qwen2.5-VL processor renders the prompt, qwen-vl-utils decodes the real
MP4, and the real HF processor checks that the request is one it can consume (vLLM hands
it exactly these pieces). Only ``vllm`` itself is faked, as a narrow stand-in that
records what ``load``/``generate`` pass it.
"""

from __future__ import annotations

import asyncio
import math
import re
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from vlm_reward.backends import ProbabilityAnswer, ScoreJob, backend_aliases, canonical_name, resolve_backend
from vlm_reward.backends.primo_r1_vllm import PrimoR1VllmBackend
from vlm_reward.backends.qwen_vl_vllm import INSTALL_HINT, QwenVllmBackend, build_vllm_request
from vlm_reward.backends.vllm_settings import (
    ENGINE_DEFAULTS,
    MM_LIMITS,
    engine_kwargs,
    sampling_params_kwargs,
)
from vlm_reward.judging.model_family import QWEN2_5_VL
from vlm_reward.judging.probability import AnswerTokens
from vlm_reward.judging.prompts import PRIMO_PROMPT, QWEN_VIDEO_PROMPT

REPO = Path(__file__).resolve().parents[3]
TASK = "put the bowl on the plate"
NFRAMES = 8  # of the fixture's 16 frames at 4 fps
BACKENDS = [QwenVllmBackend, PrimoR1VllmBackend]
BACKEND_IDS = ["qwen", "primo"]


def make_job(video: str, **backend_kwargs: Any) -> ScoreJob:
    """A job that generates text ("auto" mode); probability jobs set ``score_mode`` themselves."""
    return ScoreJob(
        TASK,
        video,
        nframes=NFRAMES,
        max_pixels=200704,
        video_fps=4.0,
        backend_kwargs=backend_kwargs,
        score_mode="auto",
    )


# --- registry and imports -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("qwen_vl_vllm", QwenVllmBackend),
        ("qwen2_5_vl_vllm", QwenVllmBackend),
        ("PRIMO-R1", PrimoR1VllmBackend),
        ("primo_r1_vllm", PrimoR1VllmBackend),
    ],
    ids=["qwen-name", "qwen-alias", "primo-name", "primo-alias"],
)
def test_names_resolve_to_the_backend(name: str, cls: type) -> None:
    assert resolve_backend(name) is cls
    assert canonical_name(name) == cls.name


def test_primo_differs_from_qwen_only_in_data() -> None:
    assert issubclass(PrimoR1VllmBackend, QwenVllmBackend)
    assert backend_aliases()["PRIMO-R1"] == ["primo_r1_vllm"]
    # Qwen judges by probability by default; PRIMO-R1 keeps its reasoning and its 0-100 answer.
    assert (QwenVllmBackend.default_score_mode, PrimoR1VllmBackend.default_score_mode) == (
        "probability",
        "percentage",
    )
    # No behaviour of its own: every method comes from the Qwen backend.
    assert not any(callable(v) for v in vars(PrimoR1VllmBackend).values())


def test_importing_the_backends_imports_no_heavy_library() -> None:
    code = (
        "import sys\n"
        "import vlm_reward.backends.qwen_vl_vllm, vlm_reward.backends.primo_r1_vllm\n"
        "print(sorted(m for m in ('vllm', 'torch', 'transformers', 'qwen_vl_utils') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("cls", BACKENDS, ids=BACKEND_IDS)
def test_load_without_vllm_names_the_install_command(cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail, installed or not
    with pytest.raises(ImportError, match=re.escape(INSTALL_HINT)):
        cls("some/model").load()


def test_generate_before_load_is_an_error(sample_mp4: str) -> None:
    with pytest.raises(RuntimeError, match="not loaded"):
        QwenVllmBackend("some/model").generate([make_job(sample_mp4)])


# --- backend_kwargs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {}),
        ({"temperature": 0.7, "top_p": 0.9}, {"temperature": 0.7, "top_p": 0.9}),
        ({"max_new_tokens": 64}, {"max_tokens": 64}),
        ({"max_tokens": 64}, {"max_tokens": 64}),
        ({"stop": "</answer>"}, {"stop": ["</answer>"]}),
        ({"stop": ["a", "b"]}, {"stop": ["a", "b"]}),
        (
            {"top_k": -1, "seed": 3, "repetition_penalty": 1.05},
            {"top_k": -1, "seed": 3, "repetition_penalty": 1.05},
        ),
        ({"temperature": 0}, {"temperature": 0}),
        ({"system_prompt": "Judge.", "max_model_len": 4096, "top_p": 1}, {"top_p": 1}),
        ({"do_sample": False, "temperature": 0.7}, {"temperature": 0.0}),
        ({"do_sample": True}, {"temperature": 1.0}),
        ({"do_sample": True, "temperature": 0.3}, {"temperature": 0.3}),
    ],
    ids=[
        "empty",
        "floats",
        "max_new_tokens-alias",
        "max_tokens",
        "stop-str",
        "stop-list",
        "ints",
        "greedy",
        "others-ignored",
        "do_sample-false-is-greedy",
        "do_sample-true-default-temperature",
        "do_sample-true-keeps-temperature",
    ],
)
def test_sampling_params_kwargs_mapping(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert sampling_params_kwargs(given) == expected


@pytest.mark.parametrize(
    ("given", "error", "match"),
    [
        ({"temperature": -0.1}, ValueError, r"temperature.*\[0, 2\]"),
        ({"temperature": 2.5}, ValueError, r"temperature.*\[0, 2\]"),
        ({"temperature": "hot"}, TypeError, "temperature.*finite number"),
        ({"temperature": float("nan")}, TypeError, "temperature.*finite number"),
        ({"top_p": 0}, ValueError, r"top_p.*\(0, 1\]"),
        ({"top_p": 1.5}, ValueError, r"top_p.*\(0, 1\]"),
        ({"top_k": -2}, ValueError, "top_k"),
        ({"top_k": 2.5}, TypeError, "top_k.*integer"),
        ({"max_tokens": 0}, ValueError, "max_tokens.*at least 1"),
        ({"max_new_tokens": 1.5}, TypeError, "max_tokens.*integer"),
        ({"max_tokens": True}, TypeError, "max_tokens.*integer"),
        ({"max_tokens": 8, "max_new_tokens": 8}, ValueError, "not both"),
        ({"seed": -1}, ValueError, "seed.*non-negative"),
        ({"repetition_penalty": 0}, ValueError, "repetition_penalty.*positive"),
        ({"stop": [1]}, TypeError, "stop"),
        ({"stop": ""}, TypeError, "stop"),
        ({"do_sample": "no"}, TypeError, "do_sample.*true or false"),
        ({"do_sample": True, "temperature": 0}, ValueError, "do_sample.*temperature is 0"),
    ],
    ids=[
        "temperature-negative",
        "temperature-too-high",
        "temperature-string",
        "temperature-nan",
        "top_p-zero",
        "top_p-above-one",
        "top_k-below-minus-one",
        "top_k-float",
        "max_tokens-zero",
        "max_new_tokens-float",
        "max_tokens-bool",
        "both-token-limits",
        "seed-negative",
        "repetition_penalty-zero",
        "stop-not-strings",
        "stop-empty",
        "do_sample-string",
        "do_sample-with-zero-temperature",
    ],
)
def test_bad_sampling_kwargs_are_rejected(given: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        sampling_params_kwargs(given)


def test_engine_kwargs_defaults_and_overrides() -> None:
    assert engine_kwargs({}) == {**ENGINE_DEFAULTS, "limit_mm_per_prompt": dict(MM_LIMITS)}
    got = engine_kwargs({"max_model_len": 4096, "max_num_seqs": 8, "dtype": "bfloat16", "temperature": 0.5})
    assert (got["max_model_len"], got["max_num_seqs"], got["dtype"]) == (4096, 8, "bfloat16")
    assert "temperature" not in got
    assert got["limit_mm_per_prompt"] == {"image": 2, "video": 1}


@pytest.mark.parametrize(
    ("given", "error", "match"),
    [
        ({"max_model_len": 0}, ValueError, "max_model_len.*at least 1"),
        ({"tensor_parallel_size": "2"}, TypeError, "tensor_parallel_size.*integer"),
        ({"gpu_memory_utilization": 1.5}, ValueError, r"gpu_memory_utilization.*\(0, 1\]"),
        ({"enforce_eager": "yes"}, TypeError, "enforce_eager.*true or false"),
        ({"dtype": 16}, TypeError, "dtype.*string"),
    ],
    ids=["max_model_len-zero", "tp-string", "gpu-mem-above-one", "eager-string", "dtype-int"],
)
def test_bad_engine_kwargs_are_rejected(given: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        QwenVllmBackend("some/model", **given)


def test_unknown_server_key_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'max_len'.*valid keys.*gpu_memory_utilization.*temperature"):
        QwenVllmBackend("some/model", max_len=4096)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"max_model_len": 4096}, "engine settings are server-wide"),
        ({"temprature": 0.1}, "'temprature'.*valid keys"),
    ],
    ids=["engine-key-per-request", "typo"],
)
def test_bad_per_request_keys_are_rejected(overrides: dict[str, Any], match: str, sample_mp4: str) -> None:
    with pytest.raises(ValueError, match=match):
        QwenVllmBackend("some/model").job_settings(make_job(sample_mp4, **overrides))


@pytest.mark.parametrize(
    ("cls", "server", "request_kwargs", "expected_sampling"),
    [
        (QwenVllmBackend, {}, {}, {"temperature": 0.0, "max_tokens": 256}),
        (PrimoR1VllmBackend, {}, {}, {"temperature": 0.1, "top_p": 0.001, "max_tokens": 4096}),
        (QwenVllmBackend, {"max_tokens": 64}, {"temperature": 0.5}, {"temperature": 0.5, "max_tokens": 64}),
        (
            PrimoR1VllmBackend,
            {"top_p": 0.9},
            {"max_new_tokens": 32},
            {"temperature": 0.1, "top_p": 0.9, "max_tokens": 32},
        ),
    ],
    ids=["qwen-defaults", "primo-defaults", "qwen-server-and-request", "primo-server-and-request"],
)
def test_job_sampling_layers_defaults_server_and_request(
    cls: type[QwenVllmBackend],
    server: dict[str, Any],
    request_kwargs: dict[str, Any],
    expected_sampling: dict[str, Any],
    sample_mp4: str,
) -> None:
    _, sampling = cls("some/model", **server).job_settings(make_job(sample_mp4, **request_kwargs))
    assert sampling == expected_sampling


def test_job_prompt_defaults_and_overrides(sample_mp4: str) -> None:
    qwen, primo = QwenVllmBackend("m"), PrimoR1VllmBackend("m", system_prompt="Server judge.")
    assert qwen.job_settings(make_job(sample_mp4))[0] == QWEN_VIDEO_PROMPT
    assert primo.job_settings(make_job(sample_mp4))[0] == replace(PRIMO_PROMPT, system_prompt="Server judge.")
    spec, _ = primo.job_settings(make_job(sample_mp4, prompt="qwen", question_template="Done? {task}"))
    assert spec == replace(QWEN_VIDEO_PROMPT, question_template="Done? {task}")


# --- request building on the real video and processor --------------------------------

VIDEO = "<|vision_start|><|video_pad|><|vision_end|>"
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"


@pytest.fixture(scope="module")
def processor(tiny_qwen_checkpoint: str) -> Any:
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_qwen_checkpoint)


@pytest.mark.parametrize(
    ("cls", "placeholders", "n_images"),
    [(QwenVllmBackend, [VIDEO], 0), (PrimoR1VllmBackend, [IMAGE, VIDEO, IMAGE], 2)],
    ids=BACKEND_IDS,
)
def test_request_layout(
    cls: type, placeholders: list[str], n_images: int, processor: Any, sample_mp4: str
) -> None:
    job = make_job(sample_mp4)
    spec, _ = cls("m").job_settings(job)
    request = build_vllm_request(spec, job, processor, QWEN2_5_VL)
    prompt = request["prompt"]
    assert TASK in prompt and spec.system_prompt in prompt
    assert re.findall(r"<\|vision_start\|><\|(?:video|image)_pad\|><\|vision_end\|>", prompt) == placeholders
    assert prompt.endswith("<|im_start|>assistant\n")
    mm = request["multi_modal_data"]
    assert len(mm.get("image", [])) == n_images
    [(frames, metadata)] = mm["video"]
    assert frames.shape[0] == NFRAMES == len(metadata["frames_indices"])
    assert metadata["frames_indices"][0] == 0 and metadata["frames_indices"][-1] == 15
    assert (metadata["total_num_frames"], metadata["fps"]) == (16, pytest.approx(4.0))
    # 8 of 16 frames at 4 fps is a 2 fps clip; vLLM must not re-sample it.
    assert request["mm_processor_kwargs"] == {"do_sample_frames": False, "fps": pytest.approx(2.0)}


def _mean_abs_diff(image: Any, frame: Any) -> float:
    """Mean |difference| of a PIL image and a (C, H, W) float frame, at the image's size."""
    from PIL import Image

    pixels = np.clip(frame.permute(1, 2, 0).numpy(), 0, 255).astype(np.uint8)
    resized = Image.fromarray(pixels).resize(image.size, Image.Resampling.BICUBIC)
    return float(np.abs(np.asarray(image, dtype=float) - np.asarray(resized, dtype=float)).mean())


def test_primo_first_and_last_images_are_the_videos_ends(processor: Any, sample_mp4: str) -> None:
    job = make_job(sample_mp4)
    spec, _ = PrimoR1VllmBackend("m").job_settings(job)
    mm = build_vllm_request(spec, job, processor, QWEN2_5_VL)["multi_modal_data"]
    first, last = mm["image"]
    [(frames, _)] = mm["video"]
    # Each image matches its end of the video closely, and the other end clearly worse
    # (the red square moves across the clip).
    assert _mean_abs_diff(first, frames[0]) < 6 < _mean_abs_diff(first, frames[-1])
    assert _mean_abs_diff(last, frames[-1]) < 6 < _mean_abs_diff(last, frames[0])


@pytest.mark.parametrize("cls", BACKENDS, ids=BACKEND_IDS)
def test_request_is_consumable_by_the_real_hf_processor(cls: type, processor: Any, sample_mp4: str) -> None:
    # 4 of 16 frames at 4 fps is a 1 fps clip: unlike 2 fps, not the processor's default.
    job = replace(make_job(sample_mp4), nframes=4)
    spec, _ = cls("m").job_settings(job)
    request = build_vllm_request(spec, job, processor, QWEN2_5_VL)
    mm = request["multi_modal_data"]
    [(frames, metadata)] = mm["video"]
    # vLLM 0.11 calls the processor this way (metadata dropped, fps from the kwargs); vLLM
    # 0.32+, which needs transformers 5, passes the metadata on, and transformers 5 reads the
    # clip's rate from it (.venv-vllm runs this test too).
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        kwargs = {**request["mm_processor_kwargs"], "video_metadata": [metadata]}
    else:
        kwargs = request["mm_processor_kwargs"]
    out = processor(
        text=[request["prompt"]], images=mm.get("image"), videos=[frames], return_tensors="pt", **kwargs
    )
    grid_t, grid_h, grid_w = out["video_grid_thw"][0].tolist()
    assert grid_t == 4 // 2  # temporal patch 2: no frame dropped or added
    video_tokens = int((out["input_ids"] == processor.tokenizer.convert_tokens_to_ids("<|video_pad|>")).sum())
    assert video_tokens == grid_t * grid_h * grid_w // 4
    # Two frames per temporal patch at 1 fps: two seconds per grid step.
    assert out["second_per_grid_ts"].tolist() == [pytest.approx(2.0)]


# --- the async engine, against a narrow fake vllm -------------------------------------


class FakeSamplingParams:
    """Records its kwargs; rejects ``seed == reject_seed`` as vLLM rejects bad values."""

    reject_seed: ClassVar[int | None] = None

    def __init__(self, **kwargs: Any) -> None:
        if (
            FakeSamplingParams.reject_seed is not None
            and kwargs.get("seed") == FakeSamplingParams.reject_seed
        ):
            raise ValueError("rejected by SamplingParams")
        self.kwargs = kwargs


class FakeEngineArgs:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class FakeAsyncLLM:
    """Records construction, requests and aborts; answers each request with its own task text.

    A task containing "forever" generates until its request is cancelled (an abort).
    """

    instances: ClassVar[list[FakeAsyncLLM]] = []
    fail_with: ClassVar[Exception | None] = None
    yes_ids: ClassVar[frozenset[int]] = frozenset()

    def __init__(self, args: FakeEngineArgs) -> None:
        self.kwargs = args.kwargs
        self.requests: list[tuple[dict[str, Any], FakeSamplingParams]] = []
        self.aborted: list[str] = []
        self.shut_down = False

    @classmethod
    def from_engine_args(cls, args: FakeEngineArgs) -> FakeAsyncLLM:
        engine = cls(args)
        cls.instances.append(engine)
        return engine

    async def generate(self, request: dict[str, Any], params: FakeSamplingParams, request_id: str) -> Any:
        if FakeAsyncLLM.fail_with is not None:
            raise FakeAsyncLLM.fail_with
        self.requests.append((request, params))
        task = re.search(r'task: "([^"]*)"', request["prompt"]).group(1)
        try:
            while "forever" in task:
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.aborted.append(task)
            raise
        # The fields of vLLM's RequestOutput / CompletionOutput that the backend reads; asked for
        # answer-token log-probabilities, it gives every "yes" spelling -1 and every other -2.
        ids = params.kwargs.get("logprob_token_ids")
        logprobs = None
        if ids is not None:
            yes = FakeAsyncLLM.yes_ids
            logprobs = [{i: types.SimpleNamespace(logprob=-1.0 if i in yes else -2.0) for i in ids}]
        completion = types.SimpleNamespace(
            text=f"<answer>{task}</answer>", token_ids=[0], finish_reason="stop", logprobs=logprobs
        )
        yield types.SimpleNamespace(prompt_token_ids=list(request["prompt"].encode()), outputs=[completion])

    def shutdown(self) -> None:
        self.shut_down = True


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> type[FakeAsyncLLM]:
    module = types.ModuleType("vllm")
    module.AsyncEngineArgs = FakeEngineArgs
    module.AsyncLLMEngine = FakeAsyncLLM
    module.SamplingParams = FakeSamplingParams
    module.sampling_params = types.SimpleNamespace(
        RequestOutputKind=types.SimpleNamespace(FINAL_ONLY="final-only")
    )
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(FakeAsyncLLM, "instances", [])
    monkeypatch.setattr(FakeAsyncLLM, "fail_with", None)
    monkeypatch.setattr(FakeSamplingParams, "reject_seed", None)
    return FakeAsyncLLM


@pytest.fixture
def loaded(fake_vllm: type[FakeAsyncLLM], tiny_qwen_checkpoint: str) -> Iterator[QwenVllmBackend]:
    backend = QwenVllmBackend(tiny_qwen_checkpoint, max_tokens=64)
    backend.load()
    yield backend
    backend.close()


def test_load_builds_the_async_engine_from_backend_kwargs(
    fake_vllm: type[FakeAsyncLLM], tiny_qwen_checkpoint: str
) -> None:
    backend = QwenVllmBackend(tiny_qwen_checkpoint, max_model_len=4096, temperature=0.3)
    backend.load()
    backend.close()
    [engine] = fake_vllm.instances
    expected = {**ENGINE_DEFAULTS, "max_model_len": 4096, "limit_mm_per_prompt": {"image": 2, "video": 1}}
    assert engine.kwargs == {"model": tiny_qwen_checkpoint, **expected}
    assert engine.shut_down


def test_each_job_is_its_own_engine_request_with_its_own_sampling_params(
    loaded: QwenVllmBackend, fake_vllm: type[FakeAsyncLLM], sample_mp4: str
) -> None:
    jobs = [
        replace(make_job(sample_mp4), task_text="open the drawer"),
        make_job(sample_mp4, temperature=0.5),
        make_job(sample_mp4, max_model_len=1),  # invalid per request: fails alone
        replace(make_job(sample_mp4), task_text="close the drawer"),
    ]
    results = loaded.generate(jobs)
    assert results[:2] == ["<answer>open the drawer</answer>", f"<answer>{TASK}</answer>"]
    assert isinstance(results[2], ValueError) and "server-wide" in str(results[2])
    assert results[3] == "<answer>close the drawer</answer>"
    [engine] = fake_vllm.instances
    assert len(engine.requests) == 3
    assert sorted(tuple(sorted(p.kwargs.items())) for _, p in engine.requests) == sorted(
        tuple(sorted({"max_tokens": 64, "output_kind": "final-only", "temperature": t}.items()))
        for t in (0.0, 0.5, 0.0)
    )
    assert all(len(request["multi_modal_data"]["video"]) == 1 for request, _ in engine.requests)


def test_an_engine_failure_fails_that_job(
    loaded: QwenVllmBackend, fake_vllm: type[FakeAsyncLLM], sample_mp4: str
) -> None:
    fake_vllm.fail_with = RuntimeError("CUDA out of memory")
    [result] = loaded.generate([make_job(sample_mp4)])
    assert isinstance(result, RuntimeError) and "out of memory" in str(result)


def test_a_job_rejected_by_sampling_params_fails_alone(
    loaded: QwenVllmBackend, fake_vllm: type[FakeAsyncLLM], sample_mp4: str
) -> None:
    FakeSamplingParams.reject_seed = 7
    jobs = [make_job(sample_mp4, seed=7), replace(make_job(sample_mp4), task_text="open the drawer")]
    first, second = loaded.generate(jobs)
    assert isinstance(first, ValueError) and "rejected" in str(first)
    assert second == "<answer>open the drawer</answer>"
    assert len(fake_vllm.instances[0].requests) == 1


def test_a_bad_video_never_reaches_the_engine(
    loaded: QwenVllmBackend, fake_vllm: type[FakeAsyncLLM], sample_mp4: str
) -> None:
    [result] = loaded.generate([make_job(sample_mp4 + ".missing")])
    assert isinstance(result, Exception)
    assert fake_vllm.instances[0].requests == []


def test_cancelling_a_job_aborts_its_engine_request_and_spares_the_others(
    loaded: QwenVllmBackend, fake_vllm: type[FakeAsyncLLM], sample_mp4: str
) -> None:
    stuck = loaded.submit(replace(make_job(sample_mp4), task_text="generate forever"))
    quick = loaded.submit(replace(make_job(sample_mp4), task_text="open the drawer"))
    assert quick.result(timeout=30) == "<answer>open the drawer</answer>"  # not behind the stuck one
    engine = fake_vllm.instances[0]
    _wait(lambda: len(engine.requests) == 2)  # its video read, the stuck job is in the engine
    stuck.cancel()
    _wait(lambda: engine.aborted == ["generate forever"])
    assert not stuck.running() and engine.aborted == ["generate forever"]


def _wait(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_a_probability_job_asks_the_engine_for_the_answer_tokens_logprobs(
    loaded: QwenVllmBackend, fake_vllm: type[FakeAsyncLLM], sample_mp4: str, processor: Any
) -> None:
    tokens = AnswerTokens.from_tokenizer(processor.tokenizer)
    yes_ids, no_ids = tokens.by_answer
    fake_vllm.yes_ids = yes_ids
    job = replace(make_job(sample_mp4, temperature=0.7), score_mode="probability")
    [answer] = loaded.generate([job])
    [(request, params)] = fake_vllm.instances[0].requests
    # One greedy step and the raw log-probabilities of exactly the twelve spellings.
    assert params.kwargs == {
        "max_tokens": 1,
        "temperature": 0.0,
        "logprob_token_ids": sorted(yes_ids | no_ids),
        "output_kind": "final-only",
    }
    assert len(yes_ids) == len(no_ids) == 6
    assert "Answer with one word: yes or no." in request["prompt"]
    # Six spellings at -1 against six at -2: P(yes) = 1 / (1 + e^-1).
    assert answer == ProbabilityAnswer(pytest.approx(1 / (1 + math.exp(-1))), "yes")
