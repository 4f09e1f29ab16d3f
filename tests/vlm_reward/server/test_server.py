"""End-to-end tests of the reward server: a real server process (Hypercorn) on 127.0.0.1, driven over HTTP.

The servers load the fake backends of ``tests/support/fake_backends.py`` through the public
``--plugin`` flag, so everything but the model itself is the production code path: CLI,
lifespan, middlewares, routes, video validation, batching, answer parsing, error mapping.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from threading import Barrier
from typing import Any

import pytest
import requests

from tests.support.server import REPO, ServerProcess
from vlm_reward.server.limits import RequestLimits

pytestmark = pytest.mark.slow

MAX_VIDEO_MB = 0.25  # small, so the 413 cases need only a few hundred KB
FAKE_MODEL = "/models/fake-model"


@dataclass(frozen=True)
class ServerCase:
    """Paths and payloads the request tables are built from."""

    root: Path
    outside_video: Path
    uploads: Path
    video_b64: str


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, sample_mp4: str) -> ServerCase:
    root = tmp_path_factory.mktemp("video-root")
    shutil.copy(sample_mp4, root / "episode.mp4")
    (root / "junk.mp4").write_bytes(b"<html>not a video</html>" * 20)
    (root / "empty.mp4").write_bytes(b"")
    (root / "a_dir").mkdir()
    # sample_mp4 lives in another temp dir: outside the root.
    (root / "escape.mp4").symlink_to(sample_mp4)
    video_b64 = base64.b64encode(Path(sample_mp4).read_bytes()).decode()
    return ServerCase(root, Path(sample_mp4), tmp_path_factory.mktemp("uploads"), video_b64)


@pytest.fixture(scope="module")
def server(ctx: ServerCase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    args = ["--backend", "fixed_score", "--model", FAKE_MODEL, "--video-root", str(ctx.root)]
    args += ["--max-video-mb", str(MAX_VIDEO_MB)]
    # TMPDIR makes the server write inline uploads where the test can check they are removed.
    log = tmp_path_factory.mktemp("logs") / "fixed_score.log"
    proc = ServerProcess(args, log, env={"TMPDIR": str(ctx.uploads)})
    proc.wait_until(lambda r: r.status_code == 200)
    yield proc
    proc.stop()


def _post(server: ServerProcess, body: Any) -> requests.Response:
    if isinstance(body, bytes):
        headers = {"content-type": "application/json"}
        return requests.post(server.url("/score"), data=body, headers=headers, timeout=30)
    return requests.post(server.url("/score"), json=body, timeout=30)


def _error(response: requests.Response) -> dict[str, str]:
    """The error object, after checking the body has exactly the one documented shape."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"type", "message"}, body
    assert all(isinstance(v, str) and v for v in body["error"].values()), body
    return body["error"]


def _video(path: str) -> dict[str, str]:
    return {"task_text": "put the bowl on the plate", "video_path": path}


def _plus(**fields: Any) -> Callable[[ServerCase], dict[str, Any]]:
    """A valid request for episode.mp4 with ``fields`` changed."""
    return lambda c: {**_video("episode.mp4"), **fields}


def _inline(video_b64: str) -> Callable[[ServerCase], dict[str, Any]]:
    return lambda c: {"task_text": "t", "video_b64": video_b64}


def _bad(
    case_id: str, build: Callable[[ServerCase], Any], status: int, error_type: str, fragment: str
) -> Any:
    """One row: the request, its documented status and error type, a phrase the message needs."""
    return pytest.param(build, status, error_type, fragment, id=case_id)


V422 = "validation_error"
OUTSIDE = "video_outside_root"
ONE_VIDEO = "exactly one of video_path or video_b64"

BAD_REQUESTS = [
    _bad(
        "missing-task-text", lambda c: {"video_path": "episode.mp4"}, 422, V422, "task_text: Field required"
    ),
    _bad("empty-task-text", _plus(task_text=""), 422, V422, "task_text: String should have at least 1"),
    _bad("blank-task-text", _plus(task_text=" \n"), 422, V422, "non-whitespace"),
    _bad(
        "task-text-wrong-type", _plus(task_text=123), 422, V422, "task_text: Input should be a valid string"
    ),
    _bad(
        "both-video-fields",
        lambda c: {**_video("episode.mp4"), "video_b64": c.video_b64},
        422,
        V422,
        ONE_VIDEO,
    ),
    _bad("no-video-field", lambda c: {"task_text": "stack the blocks"}, 422, V422, ONE_VIDEO),
    _bad("non-video-bytes", _plus(video_path="junk.mp4"), 400, "invalid_video", "cannot be decoded"),
    _bad("empty-file", _plus(video_path="empty.mp4"), 400, "invalid_video", "empty"),
    _bad("directory", _plus(video_path="a_dir"), 400, "invalid_video", "not a regular file"),
    _bad("nonexistent-file", _plus(video_path="missing.mp4"), 400, "video_not_found", "does not exist"),
    _bad("path-outside-root", lambda c: _video(str(c.outside_video)), 403, OUTSIDE, "--video-root"),
    _bad(
        "dotdot-traversal",
        lambda c: _video(f"../{c.outside_video.parent.name}/{c.outside_video.name}"),
        403,
        OUTSIDE,
        "--video-root",
    ),
    _bad("dotdot-to-etc", lambda c: _video(f"{c.root}/../../../../etc/passwd"), 403, OUTSIDE, "--video-root"),
    _bad("symlink-escape", _plus(video_path="escape.mp4"), 403, OUTSIDE, "symlinks"),
    _bad(
        "huge-nframes",
        _plus(nframes=10**9),
        422,
        "limit_exceeded",
        "nframes is 1000000000, above this server's limit of 64 (--max-nframes)",
    ),
    _bad("zero-nframes", _plus(nframes=0), 422, V422, "nframes: Input should be greater than or equal to 1"),
    _bad("nframes-as-string", _plus(nframes="16"), 422, V422, "nframes: Input should be a valid integer"),
    _bad("tiny-max-pixels", _plus(max_pixels=10), 422, V422, "max_pixels"),
    _bad("negative-fps", _plus(video_fps=-4), 422, V422, "video_fps: Input should be greater than 0"),
    _bad("backend-kwargs-not-object", _plus(backend_kwargs=[1]), 422, V422, "backend_kwargs"),
    _bad("misspelled-field", _plus(nframe=8), 422, V422, "nframe: Extra inputs are not permitted"),
    _bad(
        "bad-score-mode",
        _plus(score_mode="decimal"),
        422,
        V422,
        "'auto', 'percentage', 'unit', 'rubric' or 'probability'",
    ),
    _bad(
        "mode-the-backend-cannot-serve",
        _plus(score_mode="probability"),
        400,
        "invalid_request",
        "backend 'fixed_score' cannot score with score_mode 'probability'; its modes: auto, percentage, unit",
    ),
    _bad("unknown-backend", _plus(backend="gpt-judge"), 404, "unknown_backend", "valid names: "),
    _bad("not-loaded", _plus(backend="qwen2_5_vl_hf"), 503, "backend_not_loaded", "--backend qwen_vl_hf"),
    _bad("invalid-base64", _inline("@@not base64@@"), 400, "invalid_request", "not valid base64"),
    _bad("inline-video-over-limit", _inline("A" * 400_000), 413, "payload_too_large", "--max-video-mb"),
    _bad("oversized-body", _inline("A" * 2_000_000), 413, "payload_too_large", "request body"),
    _bad("malformed-json", lambda c: b'{"task_text": "t", ', 422, V422, "not valid JSON"),
    _bad("json-array-body", lambda c: [1, 2], 422, V422, "valid dictionary"),
    _bad(
        "unreadable-answer",
        _plus(backend_kwargs={"answer": "I cannot tell"}),
        502,
        "parse_error",
        "full answer: 'I cannot tell'",
    ),
    _bad(
        "answer-out-of-range-for-mode",
        _plus(score_mode="unit", backend_kwargs={"answer": "<answer>80</answer>"}),
        502,
        "parse_error",
        "above 1",
    ),
    _bad(
        "inference-failure",
        _plus(backend_kwargs={"error": "CUDA out of memory in /opt/secret/model.py"}),
        500,
        "inference_error",
        "CUDA out of memory in <path>",
    ),
    _bad(
        "kwargs-rejected-by-backend",
        _plus(backend_kwargs={"temperature": 0.1}),
        400,
        "invalid_request",
        "valid keys: answer, error",
    ),
]


@pytest.mark.parametrize(("build", "status", "error_type", "fragment"), BAD_REQUESTS)
def test_bad_request_gets_documented_status_and_error_shape(
    server: ServerProcess,
    ctx: ServerCase,
    build: Callable[[ServerCase], Any],
    status: int,
    error_type: str,
    fragment: str,
) -> None:
    response = _post(server, build(ctx))
    error = _error(response)
    assert (response.status_code, error["type"]) == (status, error_type), error
    assert fragment in error["message"]
    secrets = (str(ctx.root), str(ctx.outside_video.parent), str(ctx.uploads), "/opt/secret", "Traceback")
    assert not [s for s in secrets if s in error["message"]]


GOOD_REQUESTS = [
    pytest.param(_plus(task_text="把碗放到盘子上 🍜 — «ça marche»"), 0.8, id="unicode-task-text"),
    pytest.param(lambda c: _video(str(c.root / "episode.mp4")), 0.8, id="absolute-path"),
    pytest.param(
        lambda c: {"task_text": "open the drawer", "video_b64": c.video_b64}, 0.8, id="inline-video"
    ),
    pytest.param(_plus(backend="fixed"), 0.8, id="backend-alias"),
    pytest.param(
        _plus(
            nframes=8,
            max_pixels=50176,
            video_fps=2.5,
            score_mode="auto",
            backend="fixed_score",
            backend_kwargs={},
        ),
        0.8,
        id="all-fields",
    ),
    pytest.param(
        _plus(score_mode="percentage", backend_kwargs={"answer": "<answer>65</answer>"}),
        0.65,
        id="percentage-mode",
    ),
    pytest.param(
        _plus(backend_kwargs={"answer": "<think>the bowl is on the plate</think><answer>1</answer>"}),
        1.0,
        id="think-and-answer",
    ),
]


@pytest.mark.parametrize(("build", "score"), GOOD_REQUESTS)
def test_good_request_is_scored(
    server: ServerProcess, ctx: ServerCase, build: Callable[[ServerCase], Any], score: float
) -> None:
    response = _post(server, build(ctx))
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {
        "score",
        "raw_value",
        "answer",
        "think",
        "probability",
        "backend",
        "model",
        "latency_s",
        "score_mode",
        "prompt_preset",
        "prompt_hash",
    }
    assert body["score"] == pytest.approx(score)
    # The fake backend asks no prompt of the project's: the judge is its name, model and mode.
    assert (body["prompt_preset"], body["prompt_hash"]) == (None, None)
    assert body["score_mode"] in ("auto", "percentage")
    assert body["probability"] is None  # a text answer
    # Canonical name even for an alias; the model's directory name, not its host path.
    assert (body["backend"], body["model"]) == ("fixed_score", "fake-model")
    assert 0 < body["latency_s"] < 30


def test_answer_parts_are_returned(server: ServerProcess) -> None:
    answer = "<think>it slipped at the end</think> <answer>40%</answer>"
    body = _post(server, {**_video("episode.mp4"), "backend_kwargs": {"answer": answer}}).json()
    assert (body["score"], body["raw_value"], body["answer"], body["think"]) == (
        0.4,
        40.0,
        "40%",
        "it slipped at the end",
    )


def test_server_still_serves_after_the_bad_requests(server: ServerProcess) -> None:
    response = _post(server, _video("episode.mp4"))
    assert response.status_code == 200
    assert response.json()["score"] == pytest.approx(0.8)
    assert requests.get(server.url("/health"), timeout=5).status_code == 200


def test_inline_uploads_leave_no_temp_files(server: ServerProcess, ctx: ServerCase) -> None:
    good = _post(server, {"task_text": "t", "video_b64": ctx.video_b64})
    junk = _post(server, {"task_text": "t", "video_b64": base64.b64encode(b"junk").decode()})
    failed = _post(server, {"task_text": "t", "video_b64": ctx.video_b64, "backend_kwargs": {"error": "x"}})
    assert [r.status_code for r in (good, junk, failed)] == [200, 400, 500]
    assert [p.name for p in ctx.uploads.iterdir() if p.name.startswith("vlm-reward-upload-")] == []


def test_health_and_backends_describe_the_server(server: ServerProcess) -> None:
    health = requests.get(server.url("/health"), timeout=5)
    assert health.status_code == 200
    assert health.json() == {
        "status": "ok",
        "backend": "fixed_score",
        "model": "fake-model",
        "max_batch_size": 8,
        "limits": {**RequestLimits().as_dict(), "max_video_mb": MAX_VIDEO_MB},
    }
    backends = requests.get(server.url("/backends"), timeout=5).json()
    assert backends["default"] == "fixed_score"
    assert backends["loaded"] == ["fixed_score"]
    assert {"fixed_score", "counting", "qwen_vl_hf", "qwen_vl_vllm"} <= set(backends["backends"])
    assert backends["aliases"]["fixed_score"] == ["fixed"]
    assert backends["states"] == {"fixed_score": "ready"}


@pytest.mark.parametrize(
    ("method", "path", "status", "error_type"),
    [("GET", "/nope", 404, "not_found"), ("GET", "/score", 405, "method_not_allowed")],
    ids=["unknown-url", "wrong-method"],
)
def test_http_errors_use_the_error_shape(
    server: ServerProcess, method: str, path: str, status: int, error_type: str
) -> None:
    response = requests.request(method, server.url(path), timeout=5)
    assert response.status_code == status
    assert _error(response)["type"] == error_type


def test_each_request_is_logged_with_backend_status_and_latency(
    server: ServerProcess, ctx: ServerCase
) -> None:
    _post(server, {**_video("episode.mp4"), "task_text": "log me"})
    _post(server, _video("missing.mp4"))
    _post(server, _inline("A" * 2_000_000)(ctx))
    expected = [
        "POST /score backend=fixed_score status=200 latency=",
        "POST /score backend=fixed_score status=400 latency=",
        "POST /score backend=- status=413 latency=",  # rejected before routing
    ]
    log = server.log_containing(*expected)
    assert [e for e in expected if e not in log] == []


# ------------------------------------------------------------------------------------ batching


@pytest.fixture(scope="module")
def counting_server(
    ctx: ServerCase, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerProcess, Path]]:
    logs = tmp_path_factory.mktemp("counting")
    calls = logs / "calls.jsonl"
    kwargs = json.dumps({"log_path": str(calls), "generate_seconds": 0.2})
    args = [
        "--backend",
        "counting",
        "--model",
        "fake",
        "--video-root",
        str(ctx.root),
        "--backend-kwargs",
        kwargs,
    ]
    # A wide window so all 8 requests land in few batches even on a loaded 2-core machine.
    args += ["--max-batch-size", "8", "--max-wait-ms", "400"]
    proc = ServerProcess(args, logs / "server.log")
    proc.wait_until(lambda r: r.status_code == 200)
    yield proc, calls
    proc.stop()


def _concurrent_scores(server: ServerProcess, tasks: list[str]) -> list[requests.Response]:
    barrier = Barrier(len(tasks))

    def post(task: str) -> requests.Response:
        barrier.wait()
        return _post(server, {"task_text": task, "video_path": "episode.mp4"})

    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        return list(pool.map(post, tasks))


def _calls_since(calls: Path, start: int) -> list[dict[str, Any]]:
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [json.loads(line) for line in lines[start:]]


def test_concurrent_requests_are_batched_each_with_its_own_result(counting_server) -> None:
    server, calls = counting_server
    before = len(_calls_since(calls, 0))
    tasks = [f"pick up object {n}" for n in range(1, 9)]
    responses = _concurrent_scores(server, tasks)
    assert [r.status_code for r in responses] == [200] * 8
    assert [r.json()["score"] for r in responses] == pytest.approx([n / 10 for n in range(1, 9)])
    batches = _calls_since(calls, before)
    assert len(batches) < 8, batches
    assert sorted(t for b in batches for t in b["tasks"]) == sorted(tasks)
    assert not any(b["overlap"] for b in batches)


def test_a_failing_job_in_a_batch_fails_only_that_request(counting_server) -> None:
    server, calls = counting_server
    before = len(_calls_since(calls, 0))
    tasks = [f"stack block {n}" for n in range(1, 9)]
    tasks[2] = "fail on purpose 3"
    responses = _concurrent_scores(server, tasks)
    statuses = [r.status_code for r in responses]
    assert statuses == [200, 200, 500, 200, 200, 200, 200, 200]
    error = _error(responses[2])
    assert error["type"] == "inference_error" and "cannot judge 'fail on purpose 3'" in error["message"]
    assert [r.json()["score"] for i, r in enumerate(responses) if i != 2] == pytest.approx(
        [n / 10 for n in range(1, 9) if n != 3]
    )
    batch = next(b for b in _calls_since(calls, before) if "fail on purpose 3" in b["tasks"])
    assert batch["batch_size"] > 1  # the failure really shared a batch with good jobs


# ---------------------------------------------------------------------------- startup / health


def test_health_is_503_while_loading_then_200(ctx: ServerCase, tmp_path: Path) -> None:
    args = ["--backend", "slow", "--model", "fake", "--video-root", str(ctx.root)]
    proc = ServerProcess([*args, "--backend-kwargs", '{"load_seconds": 3}'], tmp_path / "slow.log")
    try:
        loading = proc.wait_until(lambda r: True)
        assert loading.status_code == 503
        assert _error(loading)["type"] == "backend_loading"
        early = _post(proc, _video("episode.mp4"))
        assert early.status_code == 503
        assert _error(early) == _error(loading)
        ready = proc.wait_until(lambda r: r.status_code == 200)
        assert ready.json()["status"] == "ok"
        assert _post(proc, _video("episode.mp4")).json()["score"] == pytest.approx(0.8)
    finally:
        assert proc.stop() == 0  # a drained server exits 0
    assert "shutdown complete" in proc.log()


def test_load_failure_keeps_health_503_with_the_reason(ctx: ServerCase, tmp_path: Path) -> None:
    kwargs = json.dumps({"load_error": "no weights found in /secret/checkpoints/qwen"})
    args = [
        "--backend",
        "fixed_score",
        "--model",
        "fake",
        "--video-root",
        str(ctx.root),
        "--backend-kwargs",
        kwargs,
    ]
    proc = ServerProcess(args, tmp_path / "failing.log")
    try:
        failed = proc.wait_until(lambda r: "backend_load_failed" in r.text)
        assert failed.status_code == 503
        message = _error(failed)["message"]
        assert "failed to load" in message and "no weights found in <path>" in message
        assert "/secret" not in message
        score = _post(proc, _video("episode.mp4"))
        assert score.status_code == 503 and _error(score) == _error(failed)
    finally:
        proc.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "nope", "--model", "m"], "valid names:"),
        (["--backend", "fixed_score"], "--model"),
        (["--model", "m", "--port", "70000"], "port in 1..65535"),
        (["--model", "m", "--max-batch-size", "0"], "must be at least 1, got 0"),
        (["--model", "m", "--max-wait-ms", "-5"], ">= 0"),
        (["--model", "m", "--backend-kwargs", "[1, 2]"], "JSON object"),
        (["--model", "m", "--backend-kwargs", "{oops"], "not valid JSON"),
        (["--model", "m", "--video-root", "/no/such/dir"], "not an existing directory"),
        (["--model", "m", "--plugin", "no_such_plugin_module"], "cannot import"),
        (["--backend", "fixed_score", "--model", "m", "--backend-kwargs", '{"bogus": 1}'], "bogus"),
    ],
    ids=[
        "unknown-backend",
        "missing-model",
        "bad-port",
        "zero-batch",
        "negative-wait",
        "kwargs-not-object",
        "kwargs-not-json",
        "missing-video-root",
        "missing-plugin",
        "kwargs-rejected-by-backend",
    ],
)
def test_bad_command_line_is_a_clear_argparse_error(args: list[str], message: str) -> None:
    cmd = [sys.executable, "-m", "vlm_reward.libero_reward_server", "--plugin", "tests.support.fake_backends"]
    result = subprocess.run([*cmd, *args], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
