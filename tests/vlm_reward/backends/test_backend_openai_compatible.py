"""The openai_compatible backend: what it sends upstream, what it checks, how it reads the answer.

The request building runs for real here (the tiny checkpoint's processor, the real clip).
The upstream is a narrow stand-in HTTP server that records requests and answers in vLLM's
OpenAI shape; the real ``vllm.entrypoints.openai.api_server`` is in the vLLM end-to-end module.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from vlm_reward.backends import ProbabilityAnswer, ScoreJob, resolve_backend
from vlm_reward.backends.openai_compatible import (
    OpenAICompatibleBackend,
    answer_logprobs,
    check_kwargs,
    expected_prompt_tokens,
)
from vlm_reward.backends.qwen_vision import VisionInputs
from vlm_reward.judging.probability import AnswerTokens
from vlm_reward.video_io import probe_video


class FakeUpstream:
    """Serves ``/v1/models`` and ``/v1/chat/completions``; answers ``reply(body)``; keeps the bodies."""

    def __init__(self, model: str) -> None:
        self.model, self.bodies = model, []
        self.reply: Any = lambda body: {}
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._send(200, {"data": [{"id": upstream.model}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                upstream.bodies.append(body)
                self._send(200, upstream.reply(body))

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def upstream(tiny_qwen_checkpoint: str) -> Iterator[FakeUpstream]:
    server = FakeUpstream(tiny_qwen_checkpoint)
    yield server
    server.httpd.shutdown()


@pytest.fixture(scope="module")
def backend(upstream: FakeUpstream, tiny_qwen_checkpoint: str) -> Iterator[OpenAICompatibleBackend]:
    loaded = OpenAICompatibleBackend(tiny_qwen_checkpoint, base_url=upstream.base_url)
    loaded.load()
    yield loaded
    loaded.close()


def job(video: str, mode: str = "probability", **backend_kwargs: Any) -> ScoreJob:
    return ScoreJob("put the bowl on the plate", video, 8, 200704, 4.0, backend_kwargs, score_mode=mode)


def completion(prompt_tokens: int, content: str = "", logprobs: dict[int, float] | None = None) -> dict:
    choice: dict[str, Any] = {"message": {"content": content}}
    if logprobs is not None:
        top = [{"token": f"token_id:{t}", "logprob": lp} for t, lp in logprobs.items()]
        choice["logprobs"] = {"content": [{"token": "x", "logprob": 0.0, "top_logprobs": top}]}
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(content) or 1}  # any fixed count
    return {"choices": [choice], "usage": usage}


def test_registered_and_base_url_is_required() -> None:
    assert resolve_backend("openai_compatible") is OpenAICompatibleBackend
    with pytest.raises(ValueError, match="needs backend_kwargs\\['base_url'\\]"):
        check_kwargs({}, per_request=False)
    with pytest.raises(ValueError, match=r"'base_url'.*valid keys per request"):
        check_kwargs({"base_url": "http://x/v1"}, per_request=True)


def test_expected_prompt_tokens_expands_each_placeholder(backend: OpenAICompatibleBackend) -> None:
    """The processor's own expansion: 28 px a token for Qwen2.5-VL, each placeholder one token before."""
    import torch
    from PIL import Image

    processor = backend._processor
    video = torch.zeros(8, 3, 56, 84)  # 4 frame pairs of 2 x 3 tokens
    metadata = {"fps": 4.0, "frames_indices": list(range(8)), "total_num_frames": 8}
    vision = VisionInputs([Image.new("RGB", (84, 56))], [video], {"fps": [4.0]}, [metadata])  # + 2 x 3
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "video"}, {"type": "text", "text": "Q"}]}
    ]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    text_tokens = len(processor.tokenizer(text)["input_ids"])
    assert expected_prompt_tokens(processor, text, vision) == text_tokens + (4 * 2 * 3 - 1) + (2 * 3 - 1)


def test_a_probability_request_pins_frames_and_asks_for_the_answer_tokens(
    backend: OpenAICompatibleBackend, upstream: FakeUpstream, sample_mp4: str, tmp_path: Path
) -> None:
    body, [expected] = backend.request_body(job(sample_mp4))
    tokens = AnswerTokens.from_tokenizer(backend._processor.tokenizer)
    assert body["logprob_token_ids"] == tokens.ids and body["max_tokens"] == 1
    assert (body["logprobs"], body["return_tokens_as_token_ids"], body["temperature"]) == (True, True, 0.0)
    system, user = body["messages"]
    assert system["content"][0]["text"] == "You are a careful judge of robot manipulation videos."
    assert [item["type"] for item in user["content"]] == ["video_url", "text"]
    assert "Answer with one word: yes or no." in user["content"][1]["text"]
    path = tmp_path / "sent.mp4"
    path.write_bytes(base64.b64decode(user["content"][0]["video_url"]["url"].split(",", 1)[1]))
    assert probe_video(path).num_frames == 8  # exactly the frames the in-process backends show
    # 8 frames at 4 fps from a 16-frame, 4 fps file: sent at the sampled rate, 2 fps.
    assert probe_video(path).fps == pytest.approx(2.0)
    yes_ids, no_ids = tokens.by_answer
    yes = {t: -1.0 for t in yes_ids}
    upstream.reply = lambda b: completion(expected, logprobs={**yes, **{t: -2.0 for t in no_ids}})
    answer = backend.generate([job(sample_mp4)])[0]
    assert isinstance(answer, ProbabilityAnswer) and answer.answer == "yes"
    assert answer.probability == pytest.approx(1 / (1 + 2.718281828459045**-1))


def test_primo_layout_sends_first_frame_video_last_frame(
    backend: OpenAICompatibleBackend, sample_mp4: str
) -> None:
    body, _ = backend.request_body(job(sample_mp4, "percentage", prompt="primo"))
    assert [item["type"] for item in body["messages"][1]["content"]] == [
        "image_url",
        "video_url",
        "image_url",
        "text",
    ]


def test_a_resampling_upstream_is_caught_by_the_prompt_length(
    backend: OpenAICompatibleBackend, upstream: FakeUpstream, sample_mp4: str
) -> None:
    _, [expected] = backend.request_body(job(sample_mp4, "auto"))
    upstream.reply = lambda b: completion(expected - 144, content="<answer>1</answer>")
    [error] = backend.generate([job(sample_mp4, "auto")])
    assert isinstance(error, RuntimeError) and f"the pinned frames make {expected}" in str(error)
    assert "--media-io-kwargs" in str(error)
    upstream.reply = lambda b: completion(expected, content="<answer>1</answer>")
    accepted = job(sample_mp4, "auto")
    assert backend.generate([accepted]) == ["<answer>1</answer>"]
    # The upstream's usage is what /metrics counts.
    assert (accepted.usage.prompt, accepted.usage.generated) == (expected, len("<answer>1</answer>"))


def test_sampling_settings_reach_the_upstream_and_bad_ones_fail_alone(
    backend: OpenAICompatibleBackend, upstream: FakeUpstream, sample_mp4: str
) -> None:
    _, [expected] = backend.request_body(job(sample_mp4, "auto"))
    upstream.reply = lambda b: completion(expected, content="ok")
    good, bad = backend.generate(
        [job(sample_mp4, "auto", max_tokens=7, seed=3), job(sample_mp4, "auto", top_p=5)]
    )
    assert good == "ok" and isinstance(bad, ValueError)
    assert (upstream.bodies[-1]["max_tokens"], upstream.bodies[-1]["seed"]) == (7, 3)
    assert backend.token_budget({"max_new_tokens": 9}) == 9


def test_answer_logprobs_reads_token_ids() -> None:
    choice = completion(0, logprobs={5: -0.5, 9: -3.0})["choices"][0]
    assert answer_logprobs(choice) == {5: -0.5, 9: -3.0}


def test_a_model_the_upstream_does_not_serve_fails_to_load(
    upstream: FakeUpstream, tiny_qwen_checkpoint: str
) -> None:
    wrong = OpenAICompatibleBackend(
        tiny_qwen_checkpoint, base_url=upstream.base_url, served_model_name="nope"
    )
    with pytest.raises(ValueError, match="not 'nope'"):
        wrong.load()


@pytest.mark.parametrize(
    ("offset", "accepted"), [(0, True), (2, True), (1, False)], ids=["4.57", "5.x", "off"]
)
def test_a_qwen3_upstream_may_keep_the_outer_video_wrap(
    tiny_qwen3_checkpoint: str, sample_mp4: str, offset: int, accepted: bool
) -> None:
    """Qwen3-VL: 32 px tokens and timestamps counted by its processor; an upstream on
    transformers >= 5.10 reports 2 more tokens per video (the kept outer start/end pair)."""
    upstream = FakeUpstream(tiny_qwen3_checkpoint)
    backend = OpenAICompatibleBackend(tiny_qwen3_checkpoint, base_url=upstream.base_url)
    try:
        backend.load()
        _, counts = backend.request_body(job(sample_mp4, "auto"))
        assert counts == (counts[0], counts[0] + 2)
        upstream.reply = lambda b: completion(counts[0] + offset, content="<answer>1</answer>")
        [answer] = backend.generate([job(sample_mp4, "auto")])
        assert (answer == "<answer>1</answer>") is accepted, answer
    finally:
        backend.close()
        upstream.httpd.shutdown()
