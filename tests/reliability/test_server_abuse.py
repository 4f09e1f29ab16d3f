"""Resource abuse against the real server process: ``qwen_vl_hf`` on the tiny checkpoint.

One buggy or hostile client must not take the judge down for everybody. Each request of
the table asks for too much of one thing and gets its documented status at once; a normal
request sent right after the whole table is answered within seconds. A client that gives
up in the middle of a runaway generation frees the model, and a shutdown whose drain
timeout ends answers queued and running jobs 503 instead of running them to the end.

The server allows 100k new tokens here (``--max-new-tokens``), so that a generation nobody
stops would take minutes on the tiny model (about 2 ms per token and growing) and a test
that passes cannot be a race won by luck.
"""

from __future__ import annotations

import base64
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import moving_square_frames
from tests.support.server import ServerProcess
from vlm_reward.video_io import encode_mp4

pytestmark = pytest.mark.slow

MAX_NEW_TOKENS = 100_000
MAX_VIDEO_FRAMES = 64
MAX_VIDEO_MB = 0.5
# A text-mode request at the budget cap (probability mode reads one step and never runs away).
RUNAWAY = {"score_mode": "auto", "backend_kwargs": {"max_new_tokens": MAX_NEW_TOKENS}}
# A normal request answers in about a second on the tiny model; a blocked one would wait
# for a runaway generation (minutes).
PROMPT_ANSWER_S = 10.0


@dataclass(frozen=True)
class AbuseCase:
    root: Path
    video_b64: str
    checkpoint: str


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, sample_mp4: str, tiny_qwen_checkpoint: str) -> AbuseCase:
    root = tmp_path_factory.mktemp("abuse-root")
    shutil.copy(sample_mp4, root / "episode.mp4")
    encode_mp4(moving_square_frames(MAX_VIDEO_FRAMES + 1, size=16), root / "many_frames.mp4", fps=30)
    return AbuseCase(root, base64.b64encode(Path(sample_mp4).read_bytes()).decode(), tiny_qwen_checkpoint)


def _start(ctx: AbuseCase, log: Path, *extra: str) -> ServerProcess:
    args = ["--backend", "qwen_vl_hf", "--model", ctx.checkpoint, "--video-root", str(ctx.root), *extra]
    args += ["--max-new-tokens", str(MAX_NEW_TOKENS), "--max-video-frames", str(MAX_VIDEO_FRAMES)]
    args += ["--max-video-mb", str(MAX_VIDEO_MB)]
    return ServerProcess(args, log, plugins=()).wait_ready(timeout=120)


@pytest.fixture(scope="module")
def server(ctx: AbuseCase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = _start(ctx, tmp_path_factory.mktemp("abuse-logs") / "server.log")
    yield proc
    proc.stop()


def normal(**fields: Any) -> dict[str, Any]:
    """What the env sends: 16 frames at the default pixel budget, the backend's default answer length."""
    return {"task_text": "put the bowl on the plate", "video_path": "episode.mp4", **fields}


def kwargs(**backend_kwargs: Any) -> Callable[[AbuseCase], dict[str, Any]]:
    return lambda c: normal(backend_kwargs=backend_kwargs)


def fields(**changed: Any) -> Callable[[AbuseCase], dict[str, Any]]:
    return lambda c: normal(**changed)


def row(case_id: str, build: Callable[[AbuseCase], Any], status: int, error_type: str, fragment: str) -> Any:
    return pytest.param(build, status, error_type, fragment, id=case_id)


LIMIT = "limit_exceeded"
BAD = "invalid_request"
TOO_LONG = "x" * 8193
# Python's JSON parser (and so the server's) accepts NaN, which no JSON encoder writes.
NAN_TEMPERATURE = b'{"task_text": "t", "video_path": "episode.mp4", "backend_kwargs": {"temperature": NaN}}'

ABUSE = [
    row(
        "billion-new-tokens",
        kwargs(max_new_tokens=10**9),
        422,
        LIMIT,
        "above this server's limit of 100000 tokens (--max-new-tokens)",
    ),
    row("billion-max-tokens-alias", kwargs(max_tokens=10**9), 422, LIMIT, "(--max-new-tokens)"),
    row("zero-new-tokens", kwargs(max_new_tokens=0), 400, BAD, "must be a positive integer"),
    row("float-new-tokens", kwargs(max_new_tokens=1e6), 400, BAD, "must be a positive integer"),
    row(
        "many-frames",
        fields(nframes=65),
        422,
        LIMIT,
        "nframes is 65, above this server's limit of 64 (--max-nframes)",
    ),
    row("huge-frame", fields(max_pixels=4096 * 4096), 422, LIMIT, "(--max-pixels)"),
    row(
        "frames-times-pixels",
        fields(nframes=64, max_pixels=1003520),
        422,
        LIMIT,
        "nframes * max_pixels is 64225280",
    ),
    row("long-task-text", fields(task_text=TOO_LONG), 422, LIMIT, "task_text length is 8193 chars"),
    row(
        "long-system-prompt",
        kwargs(system_prompt=TOO_LONG),
        422,
        LIMIT,
        "backend_kwargs['system_prompt'] length",
    ),
    row("long-question", kwargs(question_template="{task}" + TOO_LONG), 422, LIMIT, "(--max-prompt-chars)"),
    row("long-kwargs-key", kwargs(**{TOO_LONG: 1}), 422, LIMIT, "backend_kwargs key length is 8193"),
    row(
        "ten-thousand-kwargs",
        kwargs(**{f"k{i}": i for i in range(10_000)}),
        400,
        BAD,
        "unknown backend_kwargs",
    ),
    row("negative-temperature", kwargs(temperature=-1), 400, BAD, "temperature'] must be a number >= 0"),
    row("nan-temperature", lambda c: NAN_TEMPERATURE, 400, BAD, "temperature"),
    row(
        "sample-at-zero-temperature", kwargs(do_sample=True, temperature=0), 400, BAD, "positive temperature"
    ),
    row("do-sample-not-bool", kwargs(do_sample="yes"), 400, BAD, "do_sample'] must be true or false"),
    row("vllm-only-key", kwargs(stop=["x"] * 1000), 400, BAD, "valid keys per request"),
    row("load-time-key", kwargs(device="cuda"), 400, BAD, "load-time settings"),
    row("unknown-prompt-preset", kwargs(prompt="jailbreak"), 400, BAD, "unknown prompt preset"),
    row("unknown-frame-layout", kwargs(frame_layout="every_pixel"), 400, BAD, "frame_layout must be one of"),
    row("fps-absurd", fields(video_fps=1e6), 422, "validation_error", "video_fps"),
    row(
        "video-with-too-many-frames", fields(video_path="many_frames.mp4"), 422, LIMIT, "(--max-video-frames)"
    ),
    row(
        "inline-video-over-cap",
        lambda c: {"task_text": "t", "video_b64": "A" * 800_000},
        413,
        "payload_too_large",
        "--max-video-mb",
    ),
    row(
        "body-over-cap",
        lambda c: normal(backend_kwargs={"pad": "x" * 2_000_000}),
        413,
        "payload_too_large",
        "request body",
    ),
]


@pytest.mark.parametrize(("build", "status", "error_type", "fragment"), ABUSE)
def test_each_abusive_request_gets_its_documented_status_at_once(
    server: ServerProcess,
    ctx: AbuseCase,
    build: Callable[[AbuseCase], Any],
    status: int,
    error_type: str,
    fragment: str,
) -> None:
    body = build(ctx)
    start = time.monotonic()
    if isinstance(body, bytes):
        response = requests.post(
            server.endpoint, data=body, headers={"content-type": "application/json"}, timeout=30
        )
    else:
        response = requests.post(server.endpoint, json=body, timeout=30)
    elapsed = time.monotonic() - start
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (status, error_type), error
    assert fragment in error["message"]
    assert elapsed < PROMPT_ANSWER_S, "refused before any work, not after it"


def test_a_normal_request_right_after_the_table_is_answered_promptly(server: ServerProcess) -> None:
    start = time.monotonic()
    response = requests.post(server.endpoint, json=normal(), timeout=60)
    assert time.monotonic() - start < PROMPT_ANSWER_S
    # The default mode reads P(yes) in one forward pass: the seeded model is unsure.
    assert response.status_code == 200 and 0.4 < response.json()["probability"] < 0.6, response.text


def test_a_client_that_times_out_mid_generation_frees_the_model(server: ServerProcess) -> None:
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(server.endpoint, json=normal(**RUNAWAY), timeout=2)
    start = time.monotonic()
    response = requests.post(server.endpoint, json=normal(), timeout=120)
    waited = time.monotonic() - start
    assert response.status_code == 200, response.text
    assert waited < PROMPT_ANSWER_S, f"waited {waited:.1f} s behind a generation nobody reads"
    log = server.log_containing("status=499")
    assert "backend=qwen_vl_hf status=499" in log


def test_drain_timeout_answers_running_and_queued_jobs_503_and_exits_promptly(
    ctx: AbuseCase, tmp_path: Path
) -> None:
    proc = _start(ctx, tmp_path / "server.log", "--drain-timeout", "1")

    def post(_: int) -> requests.Response:
        return requests.post(proc.endpoint, json=normal(**RUNAWAY), timeout=120)

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(post, i) for i in range(3)]
        time.sleep(1.5)  # running or queued by now: either way each must get its 503 at once
        start = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        responses = [f.result(timeout=60) for f in futures]
        answered = time.monotonic() - start
    assert proc.proc.wait(timeout=60) == 0
    exited = time.monotonic() - start
    assert [(r.status_code, r.json()["error"]["type"]) for r in responses] == [(503, "shutting_down")] * 3
    assert answered < PROMPT_ANSWER_S and exited < 2 * PROMPT_ANSWER_S, (answered, exited)
    assert "drain timeout: answering 3 unfinished request(s) 503 shutting_down" in proc.log()
