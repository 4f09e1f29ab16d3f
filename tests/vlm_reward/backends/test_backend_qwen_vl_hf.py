"""Tests for the transformers backend and the shared qwen-vl-utils step, on the tiny checkpoint.

Everything is real: the tiny Qwen2.5-VL's processor and weights, qwen-vl-utils decoding
the fixture MP4 with decord, and ``generate``. Only missing packages are simulated.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from vlm_reward.backends import JobCancelledError, ProbabilityAnswer, ScoreJob, resolve_backend
from vlm_reward.backends.hf_generation import INSTALL_HINT, GenerationSettings, generation_settings
from vlm_reward.backends.qwen_vision import job_clip, job_messages, load_vision_inputs, qwen_frame_indices
from vlm_reward.backends.qwen_vl_hf import QwenHFBackend, processor_inputs, render_prompt
from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily
from vlm_reward.judging.prompts import PRIMO_PROMPT, QWEN_VIDEO_PROMPT, PromptSpec

TASK = "put the bowl on the plate"
FIXTURE_FRAMES = 16  # the sample_mp4 fixture: 16 frames at 4 fps
# Small frames keep the vision tower fast on CPU (64x64 frames snap to 112x112).
MAX_PIXELS = 112 * 112


def make_job(video: str, nframes: int = 8, **backend_kwargs: Any) -> ScoreJob:
    """A job that generates text ("auto" mode); :func:`probability_job` reads P(yes) instead."""
    return ScoreJob(
        TASK,
        video,
        nframes=nframes,
        max_pixels=MAX_PIXELS,
        video_fps=4.0,
        backend_kwargs=backend_kwargs,
        score_mode="auto",
    )


@pytest.fixture(scope="module")
def backend(tiny_qwen_checkpoint: str) -> QwenHFBackend:
    loaded = QwenHFBackend(tiny_qwen_checkpoint, max_new_tokens=4)
    loaded.load()
    return loaded


def model_inputs(backend: QwenHFBackend, spec: PromptSpec, *jobs: ScoreJob) -> Any:
    """What ``generate`` feeds the model for ``jobs`` (the backend's own plain functions)."""
    clips = [job_clip(job) for job in jobs]
    messages = [job_messages(spec, job, clip) for job, clip in zip(jobs, clips, strict=True)]
    texts = [render_prompt(backend._processor, m) for m in messages]
    vision = [load_vision_inputs(m, clip, QWEN2_5_VL) for m, clip in zip(messages, clips, strict=True)]
    return processor_inputs(backend._processor, texts, vision)


def messages_of(spec: PromptSpec, job: ScoreJob) -> list[dict[str, Any]]:
    return job_messages(spec, job, job_clip(job))


# --- registry, construction, kwargs ----------------------------------------------------


def test_registered_under_its_name() -> None:
    assert resolve_backend("qwen_vl_hf") is resolve_backend("qwen2_5_vl_hf") is QwenHFBackend


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"top_p": 0.9}, "valid keys for this backend: device, do_sample"),
        ({"device": "gpu0"}, "'cpu', 'cuda' or 'cuda:N'"),
        ({"dtype": "fp8"}, "auto, float32, bfloat16, float16"),
        ({"max_new_tokens": 0}, "positive integer"),
        ({"prompt": "llava"}, "valid presets: qwen, primo"),
    ],
    ids=["unknown-key", "bad-device", "bad-dtype", "zero-tokens", "unknown-preset"],
)
def test_bad_server_kwargs_fail_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QwenHFBackend("unused", **kwargs)


def test_server_prompt_kwargs_set_the_backend_prompt() -> None:
    backend = QwenHFBackend("unused", prompt="primo", question_template="Progress on {task}?")
    spec, _ = backend.job_settings(make_job("v.mp4"))
    assert spec.frame_layout == "first_video_last"
    assert spec.system_prompt == PRIMO_PROMPT.system_prompt
    assert spec.question(TASK) == f"Progress on {TASK}?"


@pytest.mark.parametrize(
    ("kwargs", "base", "expected"),
    [
        ({}, GenerationSettings(), GenerationSettings()),
        ({"max_new_tokens": 7}, GenerationSettings(), GenerationSettings(max_new_tokens=7)),
        ({"max_tokens": 7}, GenerationSettings(), GenerationSettings(max_new_tokens=7)),
        ({"temperature": 0.7}, GenerationSettings(), GenerationSettings(do_sample=True, temperature=0.7)),
        (
            {"temperature": 0},
            GenerationSettings(do_sample=True, temperature=0.7),
            GenerationSettings(temperature=0.0),
        ),
        ({"do_sample": True}, GenerationSettings(max_new_tokens=3), GenerationSettings(3, True)),
        ({"temperature": 0.5, "do_sample": False}, GenerationSettings(), GenerationSettings(temperature=0.5)),
        ({"prompt": "primo"}, GenerationSettings(9, True, 1.0), GenerationSettings(9, True, 1.0)),
    ],
    ids=[
        "defaults",
        "max-new-tokens",
        "vllm-alias",
        "temperature-implies-sampling",
        "zero-temperature-is-greedy",
        "inherits-budget",
        "explicit-greedy-wins",
        "non-generation-key-ignored",
    ],
)
def test_generation_settings(
    kwargs: dict[str, Any], base: GenerationSettings, expected: GenerationSettings
) -> None:
    assert generation_settings(kwargs, base) == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_new_tokens": True}, "positive integer"),
        ({"max_new_tokens": 2.5}, "positive integer"),
        ({"max_new_tokens": 4, "max_tokens": 4}, "not both"),
        ({"temperature": -1}, ">= 0"),
        ({"temperature": "hot"}, ">= 0"),
        ({"do_sample": "yes"}, "true or false"),
        ({"do_sample": True, "temperature": 0}, "positive temperature"),
    ],
    ids=[
        "bool-budget",
        "float-budget",
        "both-budget-names",
        "negative-temp",
        "string-temp",
        "string-sample",
        "sample-at-zero",
    ],
)
def test_generation_settings_reject_bad_values(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generation_settings(kwargs, GenerationSettings())


@pytest.mark.parametrize(
    ("settings", "checkpoint_budget", "expected"),
    [
        (GenerationSettings(), 8, {"max_new_tokens": 8, "do_sample": False}),
        (GenerationSettings(), None, {"max_new_tokens": 512, "do_sample": False}),
        (GenerationSettings(3), 8, {"max_new_tokens": 3, "do_sample": False}),
        (GenerationSettings(3, True, 0.5), 8, {"max_new_tokens": 3, "do_sample": True, "temperature": 0.5}),
    ],
    ids=["checkpoint-budget", "fallback-budget", "own-budget", "sampling"],
)
def test_generate_kwargs(
    settings: GenerationSettings, checkpoint_budget: int | None, expected: dict[str, Any]
) -> None:
    kwargs = settings.generate_kwargs(checkpoint_budget)
    assert {k: v for k, v in kwargs.items() if v is not None} == expected


# --- the shared qwen-vl-utils step -----------------------------------------------------


@pytest.mark.parametrize(
    ("total", "nframes", "expected"),
    [
        (16, 8, [0, 2, 4, 6, 9, 11, 13, 15]),
        (16, 16, list(range(16))),
        (16, 15, list(range(16))),  # qwen-vl-utils rounds to an even count
        (10, 16, list(range(10))),  # capped at the file
        (9, 16, [0, 1, 2, 3, 5, 6, 7, 8]),  # an even count of an odd file
        (16, 1, [0, 15]),  # at least two
    ],
    ids=[
        "fewer-than-file",
        "all-frames",
        "odd-rounds-up",
        "short-video-capped",
        "odd-file-even",
        "at-least-two",
    ],
)
def test_qwen_frame_indices(total: int, nframes: int, expected: list[int]) -> None:
    assert qwen_frame_indices(total, nframes) == expected


def test_qwen_frame_indices_reject_a_one_frame_video() -> None:
    with pytest.raises(ValueError, match="1 frame"):
        qwen_frame_indices(1, 8)


@pytest.mark.parametrize("family", [QWEN2_5_VL, QWEN3_VL], ids=["qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize(
    ("nframes", "max_pixels"),
    [(8, MAX_PIXELS), (16, 200704), (15, 12544), (32, 3136)],
    ids=["8-small", "16-env-default", "odd-below-video-floor", "capped-at-file-tiny-frames"],
)
def test_vision_inputs_are_what_qwen_vl_utils_reads_from_the_file(
    sample_mp4: str, nframes: int, max_pixels: int, family: ModelFamily
) -> None:
    """The one decode gives qwen-vl-utils' own pixels, frame indices and metadata, bit for bit,
    at each family's patch size (its ``image_patch_size``)."""
    from qwen_vl_utils import vision_process

    job = replace(make_job(sample_mp4, nframes=nframes), max_pixels=max_pixels)
    messages = messages_of(QWEN_VIDEO_PROMPT, job)
    ours = load_vision_inputs(messages, job_clip(job), family)
    entry = {
        **messages[1]["content"][0],
        "nframes": len(qwen_frame_indices(FIXTURE_FRAMES, nframes)),
        "min_pixels": min(max_pixels, 128 * family.token_side**2),
    }
    reference = [{**messages[1], "content": [entry]}]
    _, [(video, metadata)], _ = vision_process.process_vision_info(
        reference, return_video_kwargs=True, return_video_metadata=True, image_patch_size=family.patch_size
    )
    assert video.shape[-1] % family.token_side == 0 and video.shape[-2] % family.token_side == 0
    assert ours.videos[0].shape == video.shape and bool((ours.videos[0] == video).all())
    assert {**ours.video_metadata[0], "video_backend": "decord"} == metadata


def test_load_vision_inputs_leaves_messages_untouched(sample_mp4: str) -> None:
    job = make_job(sample_mp4, nframes=32)
    messages = messages_of(QWEN_VIDEO_PROMPT, job)
    video_entry = dict(messages[1]["content"][0])
    vision = load_vision_inputs(messages, job_clip(job), QWEN2_5_VL)
    assert messages[1]["content"][0] == video_entry
    assert vision.videos[0].shape[0] == FIXTURE_FRAMES  # capped to the file, not 32
    assert vision.video_metadata[0]["total_num_frames"] == FIXTURE_FRAMES
    # All frames of a 4 fps file sampled: the clip's rate is the file's.
    assert vision.video_kwargs == {"do_sample_frames": False, "fps": [pytest.approx(4.0)]}


def test_missing_qwen_vl_utils_names_the_extra(monkeypatch: pytest.MonkeyPatch, sample_mp4: str) -> None:
    monkeypatch.setitem(sys.modules, "qwen_vl_utils", None)
    with pytest.raises(ImportError, match=r"pip install 'libero-vlm-reward\[hf\]'"):
        job = make_job(sample_mp4)
        load_vision_inputs(messages_of(QWEN_VIDEO_PROMPT, job), job_clip(job), QWEN2_5_VL)


@pytest.mark.parametrize("module", ["transformers", "torch"], ids=["transformers", "torch"])
def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install 'libero-vlm-reward\[hf\]'") as excinfo:
        QwenHFBackend("unused").load()
    assert INSTALL_HINT in str(excinfo.value)


def test_cuda_without_a_gpu_fails_to_load(tiny_qwen_checkpoint: str) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        QwenHFBackend(tiny_qwen_checkpoint, device="cuda").load()


# --- model inputs ----------------------------------------------------------------------


@pytest.mark.parametrize("nframes", [4, 8, 16], ids=["4-frames", "8-frames", "all-16-frames"])
def test_processor_sees_exactly_nframes(backend: QwenHFBackend, sample_mp4: str, nframes: int) -> None:
    """qwen-vl-utils' 2 fps default would give 8 of the 16 frames whatever nframes says."""
    inputs = model_inputs(backend, QWEN_VIDEO_PROMPT, make_job(sample_mp4, nframes=nframes))
    temporal_patch = backend._processor.video_processor.temporal_patch_size
    assert inputs["video_grid_thw"].tolist()[0][0] == nframes // temporal_patch
    # The M-RoPE time step comes from the sampled rate: nframes of 16 frames at 4 fps.
    assert inputs["second_per_grid_ts"][0].item() == pytest.approx(
        temporal_patch / (nframes / FIXTURE_FRAMES * 4)
    )


def test_primo_layout_is_image_video_image_text(backend: QwenHFBackend, sample_mp4: str) -> None:
    spec, _ = backend.job_settings(make_job(sample_mp4, prompt="primo"))
    messages = messages_of(spec, make_job(sample_mp4))
    assert [item["type"] for item in messages[1]["content"]] == ["image", "video", "image", "text"]
    inputs = model_inputs(backend, spec, make_job(sample_mp4))
    grids = inputs["image_grid_thw"]
    assert grids.shape[0] == 2
    assert inputs["pixel_values"].shape[0] == int(grids.prod(dim=1).sum())
    assert inputs["video_grid_thw"].shape[0] == 1
    image_token = backend._processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    merge = backend._processor.image_processor.merge_size**2
    assert int((inputs["input_ids"] == image_token).sum()) == int(grids.prod(dim=1).sum()) // merge


def test_primo_first_and_last_images_are_the_first_and_last_frames(sample_mp4: str) -> None:
    """The fixture's red square slides left to right: it is left in the first image, right in the last."""
    import numpy as np

    messages = messages_of(PRIMO_PROMPT, make_job(sample_mp4))
    first, last = (np.asarray(item["image"]) for item in messages[1]["content"][::2])
    # The background's blue is 128 everywhere; only the square is pure red.
    is_red = [(im[..., 0] > 200) & (im[..., 1] < 60) & (im[..., 2] < 60) for im in (first, last)]
    red_columns = [np.nonzero(mask)[1].mean() for mask in is_red]
    assert red_columns[0] < 20 < 44 < red_columns[1]


@pytest.mark.parametrize(
    ("override", "present", "absent"),
    [
        ({"question_template": "Q: is '{task}' done?"}, f"Q: is '{TASK}' done?", "Watch the whole video"),
        (
            {"system_prompt": "You grade robots."},
            "system\nYou grade robots.<|im_end|>",
            QWEN_VIDEO_PROMPT.system_prompt,
        ),
        ({"prompt": "primo"}, PRIMO_PROMPT.system_prompt, QWEN_VIDEO_PROMPT.system_prompt),
    ],
    ids=["question", "system", "preset"],
)
def test_request_prompt_override_changes_rendered_text(
    backend: QwenHFBackend, sample_mp4: str, override: dict[str, str], present: str, absent: str
) -> None:
    job = make_job(sample_mp4, **override)
    spec, _ = backend.job_settings(job)
    text = render_prompt(backend._processor, messages_of(spec, job))
    assert present in text
    assert absent not in text
    default_text = render_prompt(backend._processor, messages_of(QWEN_VIDEO_PROMPT, job))
    assert absent in default_text


# --- generate --------------------------------------------------------------------------


def test_generate_returns_one_string(backend: QwenHFBackend, sample_mp4: str) -> None:
    outputs = backend.generate([make_job(sample_mp4)])
    assert len(outputs) == 1
    assert isinstance(outputs[0], str)
    assert outputs[0]  # the random model does emit text (no early stop on this prompt)


def test_bad_request_kwargs_fail_only_their_job(backend: QwenHFBackend, sample_mp4: str) -> None:
    jobs = [
        make_job(sample_mp4),
        make_job(sample_mp4, top_p=0.5),
        make_job(sample_mp4, device="cpu"),
        make_job(sample_mp4, max_new_tokens=-1),
        make_job(sample_mp4, prompt="nope"),
        replace(make_job(sample_mp4), video_path=sample_mp4 + ".missing"),
    ]
    outputs = backend.generate(jobs)
    assert isinstance(outputs[0], str)
    assert isinstance(outputs[1], ValueError)
    assert "valid keys per request: do_sample, frame_layout" in str(outputs[1])
    assert isinstance(outputs[2], ValueError)
    assert "load-time settings" in str(outputs[2])
    assert isinstance(outputs[3], ValueError)
    assert isinstance(outputs[4], ValueError)
    assert isinstance(outputs[5], Exception)


def test_batch_of_three_matches_one_by_one(backend: QwenHFBackend, sample_mp4: str) -> None:
    """Left padding: each answer in a mixed batch is the answer the job gets alone (greedy)."""
    jobs = [
        make_job(sample_mp4),
        replace(make_job(sample_mp4, prompt="primo"), task_text="open the top drawer of the cabinet"),
        make_job(sample_mp4, nframes=4, max_new_tokens=2),
    ]
    batch = backend.generate(jobs)
    assert len(batch) == 3
    assert all(isinstance(out, str) for out in batch)
    assert batch == [backend.generate([job])[0] for job in jobs]
    assert batch[0] != batch[1]  # different prompts, different answers: the batch is not one row


def test_generate_before_load_is_an_error(sample_mp4: str) -> None:
    with pytest.raises(RuntimeError, match="not loaded"):
        QwenHFBackend("unused").generate([make_job(sample_mp4)])


# --- cost: token budgets and cancellation ------------------------------------------------


class CancelAfterChecks(threading.Event):
    """A cancel event that reads as set from its ``n``-th check on: "the client left at token n"."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.checks, self.n = 0, n

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks >= self.n or super().is_set()


@pytest.fixture(scope="module")
def checkpoint_default_backend(tiny_qwen_checkpoint: str) -> QwenHFBackend:
    loaded = QwenHFBackend(tiny_qwen_checkpoint)
    loaded.load()
    return loaded


def test_token_budget_is_the_request_s_else_the_server_s_else_the_checkpoint_s(
    backend: QwenHFBackend, checkpoint_default_backend: QwenHFBackend, tiny_qwen_checkpoint: str
) -> None:
    assert backend.token_budget({}) == 4  # the server-wide max_new_tokens of the fixture
    assert backend.token_budget({"max_tokens": 9}) == 9
    assert checkpoint_default_backend.token_budget({}) == 8  # the tiny checkpoint's generation config
    assert QwenHFBackend(tiny_qwen_checkpoint).token_budget({}) == 512  # not loaded: the fallback
    with pytest.raises(ValueError, match="positive integer"):
        backend.token_budget({"max_new_tokens": 0})
    with pytest.raises(ValueError, match="valid keys per request"):
        backend.token_budget({"top_p": 0.5})


def test_a_job_cancelled_before_its_batch_starts_is_not_run(backend: QwenHFBackend, sample_mp4: str) -> None:
    cancelled = make_job(sample_mp4)
    cancelled.cancelled.set()
    kept = make_job(sample_mp4, nframes=4)
    outputs = backend.generate([cancelled, kept])
    assert isinstance(outputs[0], JobCancelledError) and "before it started" in str(outputs[0])
    assert outputs[1] == backend.generate([kept])[0]


def test_cancelling_one_job_mid_generation_stops_it_and_not_its_batch_mate(
    backend: QwenHFBackend, sample_mp4: str
) -> None:
    mate = make_job(sample_mp4, max_new_tokens=12)
    leaving = replace(make_job(sample_mp4, max_new_tokens=12), cancelled=CancelAfterChecks(3))
    outputs = backend.generate([leaving, mate])
    assert isinstance(outputs[0], JobCancelledError) and "while it was generating" in str(outputs[0])
    assert leaving.cancelled.checks >= 3  # checked after every token, not only at the start
    assert outputs[1] == backend.generate([make_job(sample_mp4, max_new_tokens=12)])[0]


def test_a_cancel_from_another_thread_ends_a_runaway_generation(
    backend: QwenHFBackend, sample_mp4: str
) -> None:
    """100k tokens take minutes on the tiny model (about 2 ms per token, more as it grows)."""
    job = make_job(sample_mp4, max_new_tokens=100_000)
    threading.Timer(0.5, job.cancelled.set).start()
    start = time.monotonic()
    [output] = backend.generate([job])
    assert isinstance(output, JobCancelledError)
    assert time.monotonic() - start < 30


# --- score_mode probability ----------------------------------------------------------------

# What the seeded tiny model says of the fixture clip (an unsure judge: close to one half).
PINNED_P_YES = 0.46282
YES_SPELLINGS = ("yes", "Yes", "YES", "Ġyes", "ĠYes", "ĠYES")  # "Ġ" is the byte-level space
NO_SPELLINGS = ("no", "No", "NO", "Ġno", "ĠNo", "ĠNO")


def by_hand(backend: QwenHFBackend, job: ScoreJob) -> float:
    """P(yes) / (P(yes) + P(no)) from one forward pass and a softmax over the whole vocabulary."""
    import torch

    spec, _ = backend.job_settings(job)
    with torch.inference_mode():
        logits = backend._model(**model_inputs(backend, spec, job)).logits[0, -1].double()
    probs = logits.softmax(-1)
    ids = backend._processor.tokenizer.convert_tokens_to_ids
    p_yes = sum(float(probs[ids(t)]) for t in YES_SPELLINGS)
    p_no = sum(float(probs[ids(t)]) for t in NO_SPELLINGS)
    return p_yes / (p_yes + p_no)


def probability_job(video: str, **backend_kwargs: Any) -> ScoreJob:
    return replace(make_job(video, **backend_kwargs), score_mode="probability")


def test_probability_mode_is_the_default_and_asks_a_yes_no_question(
    backend: QwenHFBackend, sample_mp4: str
) -> None:
    assert QwenHFBackend.default_score_mode == "probability"
    default_mode = replace(make_job(sample_mp4), score_mode=None)
    [answer] = backend.generate([default_mode])
    assert isinstance(answer, ProbabilityAnswer)
    spec, _ = backend.job_settings(default_mode)
    assert "Answer with one word: yes or no." in render_prompt(
        backend._processor, messages_of(spec, default_mode)
    )
    text_spec, _ = backend.job_settings(make_job(sample_mp4))
    assert text_spec == QWEN_VIDEO_PROMPT  # the text modes keep the number-in-<answer> prompt


def test_probability_matches_a_hand_computation_from_the_tiny_model_s_logits(
    backend: QwenHFBackend, sample_mp4: str
) -> None:
    job = probability_job(sample_mp4)
    [answer] = backend.generate([job])
    assert isinstance(answer, ProbabilityAnswer)
    assert answer.probability == pytest.approx(by_hand(backend, job), rel=1e-6)
    assert answer.answer == ("yes" if answer.probability >= 0.5 else "no")
    # The seeded random model is unsure, and says so: pinned.
    assert answer.probability == pytest.approx(PINNED_P_YES, abs=1e-4)


def test_probability_and_text_jobs_share_a_batch_each_answered_in_its_own_mode(
    backend: QwenHFBackend, sample_mp4: str
) -> None:
    jobs = [
        probability_job(sample_mp4),
        replace(make_job(sample_mp4), score_mode="auto"),
        probability_job(sample_mp4, nframes=4),
    ]
    first, text, third = backend.generate(jobs)
    assert isinstance(text, str) and text == backend.generate([jobs[1]])[0]
    assert first.probability == pytest.approx(backend.generate([jobs[0]])[0].probability, abs=1e-5)
    assert third.probability == pytest.approx(by_hand(backend, jobs[2]), rel=1e-5)
