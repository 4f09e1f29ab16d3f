"""RewardClient against a real reward server, and against canned faulty servers."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import moving_square_frames
from tests.support.canned_server import CannedServer
from tests.support.server import REPO, ServerProcess, free_port
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, RewardRequestError, sample_frame_indices

SAMPLING = [
    (1, [0]),
    (2, [0, 1]),
    (15, list(range(15))),
    (16, list(range(16))),
    (17, [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16]),
    (512, [0, 34, 68, 102, 136, 170, 204, 238, 273, 307, 341, 375, 409, 443, 477, 511]),
]


@pytest.mark.parametrize(("length", "expected"), SAMPLING, ids=[f"len{n}" for n, _ in SAMPLING])
def test_uniform_sampling_includes_both_ends(length: int, expected: list[int]) -> None:
    indices = sample_frame_indices(length, 16)
    assert indices.tolist() == expected
    assert indices[0] == 0 and indices[-1] == length - 1
    assert len(set(indices.tolist())) == len(indices)


@pytest.mark.parametrize("bad", [(0, 16), (5, 0)], ids=["no_frames", "zero_nframes"])
def test_sampling_rejects_bad_sizes(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        sample_frame_indices(*bad)


def _episode(n: int = 20, native: bool = False, task: str = "put the bowl on the plate") -> FinishedEpisode:
    return FinishedEpisode(task, list(moving_square_frames(n)), native)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    logs = tmp_path_factory.mktemp("recording")
    calls = logs / "calls.jsonl"
    kwargs = json.dumps({"log_path": str(calls), "generate_seconds": 0.5})
    proc = ServerProcess(
        ["--backend", "recording", "--model", "none", "--video-root", "/", "--backend-kwargs", kwargs],
        logs / "server.log",
        plugins=("tests.support.env_backends",),
    ).wait_ready()
    yield proc, calls
    proc.stop()


def _calls(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _cfg(server: ServerProcess, tmp_path: Path, **changes: object) -> RewardModelConfig:
    base = RewardModelConfig(
        enable=True, endpoint=server.endpoint, backend="recording", temp_video_dir=str(tmp_path)
    )
    return base.replace(**changes)


@pytest.mark.slow
@pytest.mark.parametrize("inline", [False, True], ids=["path", "inline"])
def test_scores_an_episode_and_removes_the_video(server, tmp_path: Path, inline: bool) -> None:
    proc, calls = server
    before = len(_calls(calls))
    client = RewardClient(_cfg(proc, tmp_path, send_video_inline=inline, nframes=8))
    result = client.score(_episode(n=30))
    client.close()
    assert (result.score, result.fallback, result.num_frames_sent) == (0.7, False, 8)
    assert result.answer == "0.7"
    [call] = _calls(calls)[before:]
    assert call == {**call, "task": "put the bowl on the plate", "frames": 8}
    assert list(tmp_path.iterdir()) == []


# Runs in a fresh interpreter where any import of rlinf fails, as on a machine with only
# vlm_reward installed: the client, its config and its video encoding must not need it.
WITHOUT_RLINF = """
import json, sys
class NoRlinf:
    def find_spec(self, name, path=None, target=None):
        if name == "rlinf" or name.startswith("rlinf."):
            raise ImportError("rlinf is not installed here")
sys.meta_path.insert(0, NoRlinf())
import numpy as np
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient
endpoint, video_dir = sys.argv[1:]
cfg = RewardModelConfig(
    enable=True, endpoint=endpoint, backend="recording", temp_video_dir=video_dir, nframes=8
)
client = RewardClient(cfg)
frames = [np.full((64, 64, 3), 8 * i, np.uint8) for i in range(30)]
result = client.score(FinishedEpisode("put the bowl on the plate", frames, False))
client.close()
print(json.dumps({"score": result.score, "fallback": result.fallback, "sent": result.num_frames_sent,
                  "rlinf_loaded": any(m.split(".")[0] == "rlinf" for m in sys.modules)}))
"""


@pytest.mark.slow
def test_the_client_scores_a_video_with_rlinf_unimportable(server, tmp_path: Path) -> None:
    proc, calls = server
    before = len(_calls(calls))
    args = [sys.executable, "-c", WITHOUT_RLINF, proc.endpoint, str(tmp_path)]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"score": 0.7, "fallback": False, "sent": 8, "rlinf_loaded": False}
    assert [call["frames"] for call in _calls(calls)[before:]] == [8]


@pytest.mark.slow
def test_keep_temp_video_keeps_a_readable_file(server, tmp_path: Path) -> None:
    proc, _ = server
    client = RewardClient(_cfg(proc, tmp_path, keep_temp_video=True))
    result = client.score(_episode(n=5))
    client.close()
    assert result.video_path is not None and Path(result.video_path).parent == tmp_path
    from tests.support.video_frames import count_frames

    assert count_frames(result.video_path) == 5


@pytest.mark.slow
def test_score_many_overlaps_requests_on_the_server(server, tmp_path: Path) -> None:
    proc, calls = server
    before = len(_calls(calls))
    client = RewardClient(_cfg(proc, tmp_path))
    episodes = [_episode(task=f"task {i}") for i in range(6)]
    results = client.score_many(episodes)
    client.close()
    assert [r.score for r in results] == [0.7] * 6
    seen = _calls(calls)[before:]
    assert sorted(c["task"] for c in seen) == [f"task {i}" for i in range(6)]
    # Two jobs overlapped if their generate intervals intersect (a batch shares one interval).
    overlapping = [
        (a, b) for a in seen for b in seen if a is not b and a["start"] < b["end"] and b["start"] < a["end"]
    ]
    assert overlapping, f"requests were served one after another: {seen}"


# ---- faults -----------------------------------------------------------------------------


ERROR_BODY = json.dumps({"error": {"type": "inference_error", "message": "CUDA out of memory"}}).encode()
# A frame classifier's answer (the resnet backend's shape), and one whose frame score is out of range.
FRAME_ANSWER = {
    "score": 0.9, "raw_value": 0.9, "answer": "success", "think": None, "probability": 0.9,
    "backend": "resnet", "model": "judge [mean P(success) of the last 1 frame]", "latency_s": 0.01,
    "score_mode": "probability", "prompt_preset": None, "prompt_hash": None, "frame_scores": [0.1, 0.5, 0.9],
}  # fmt: skip
BAD_FRAME_BODY = json.dumps({**FRAME_ANSWER, "frame_scores": [0.1, 1.5]}).encode()
FAULTS = [
    ("http_500", 500, ERROR_BODY, 0.0, "inference_error", "CUDA out of memory"),
    ("malformed_json", 200, b"{not json", 0.0, "malformed_response", "not JSON"),
    ("missing_score", 200, b'{"answer": "yes"}', 0.0, "malformed_response", "no 'score'"),
    ("score_above_1", 200, b'{"score": 1.5}', 0.0, "invalid_score", "1.5"),
    ("score_nan", 200, b'{"score": NaN}', 0.0, "malformed_response", "NaN"),  # not JSON by the spec
    ("score_string", 200, b'{"score": "0.5"}', 0.0, "invalid_score", "not a number"),
    ("slow_beyond_timeout", 200, b'{"score": 0.5}', 3.0, "timeout", "within 1.0 s"),
    ("frame_score_above_1", 200, BAD_FRAME_BODY, 0.0, "malformed_response", "frame_scores.1"),
]


@pytest.fixture(params=FAULTS, ids=[f[0] for f in FAULTS])
def fault(request: pytest.FixtureRequest) -> Iterator[tuple[CannedServer, str, str]]:
    _, status, body, delay, kind, message = request.param
    canned = CannedServer(status, body, delay)
    yield canned, kind, message
    canned.close()


@pytest.mark.parametrize("native", [False, True], ids=["native_fail", "native_success"])
def test_fault_falls_back_to_native_success_with_a_warning(fault, native: bool, tmp_path, caplog) -> None:
    canned, kind, message = fault
    cfg = RewardModelConfig(enable=True, endpoint=canned.endpoint, timeout=1.0, temp_video_dir=str(tmp_path))
    client = RewardClient(cfg)
    with caplog.at_level(logging.WARNING):
        results = [client.score(_episode(n=4, native=native)) for _ in range(2)]
    client.close()
    assert all(r.fallback and r.error_kind == kind and r.score == float(native) for r in results)
    assert message in results[0].error and canned.endpoint in results[0].error
    assert client.error_counts[kind] == 2
    warnings = [r for r in caplog.records if "fallback" in r.getMessage()]
    assert len(warnings) == 1, "one warning per kind of error, not per episode"
    assert list(tmp_path.iterdir()) == [], "the temp video is removed when the request fails"


def test_fault_raises_with_endpoint_status_and_message_when_strict(fault, tmp_path) -> None:
    canned, kind, message = fault
    cfg = RewardModelConfig(
        enable=True,
        endpoint=canned.endpoint,
        timeout=1.0,
        fail_on_request_error=True,
        temp_video_dir=str(tmp_path),
    )
    client = RewardClient(cfg)
    with pytest.raises(RewardRequestError) as info:
        client.score(_episode(n=4))
    client.close()
    assert info.value.kind == kind and message in str(info.value) and canned.endpoint in str(info.value)
    if kind == "inference_error":
        assert "HTTP 500" in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("body", "kept"),
    [(FRAME_ANSWER, (0.1, 0.5, 0.9)), ({k: v for k, v in FRAME_ANSWER.items() if k != "frame_scores"}, None)],
    ids=["frame-classifier", "no-frame-scores"],
)
def test_the_result_keeps_the_frame_scores_in_order(body, kept, tmp_path) -> None:
    canned = CannedServer(200, json.dumps(body).encode())
    client = RewardClient(
        RewardModelConfig(enable=True, endpoint=canned.endpoint, temp_video_dir=str(tmp_path))
    )
    result = client.score(_episode(n=3))
    client.close()
    canned.close()
    assert (result.fallback, result.score, result.frame_scores) == (False, 0.9, kept)


def test_explicit_fallback_score_is_used(tmp_path) -> None:
    canned = CannedServer(500, ERROR_BODY)
    cfg = RewardModelConfig(
        enable=True, endpoint=canned.endpoint, fallback_score=0.25, temp_video_dir=str(tmp_path)
    )
    client = RewardClient(cfg)
    result = client.score(_episode(native=True))
    client.close()
    canned.close()
    assert (result.fallback, result.score) == (True, 0.25)


@pytest.mark.parametrize(
    ("status", "attempts"),
    [(500, 1), (503, 3), (422, 1)],
    ids=["500_not_retried", "503_retried", "422_not_retried"],
)
def test_only_transient_errors_are_retried(status: int, attempts: int, tmp_path) -> None:
    canned = CannedServer(status, ERROR_BODY)
    cfg = RewardModelConfig(
        enable=True, endpoint=canned.endpoint, max_retries=2, temp_video_dir=str(tmp_path)
    )
    client = RewardClient(cfg)
    client.score(_episode(n=3))
    client.close()
    canned.close()
    assert canned.hits == attempts


def test_server_down_is_a_connection_fallback(tmp_path) -> None:
    cfg = RewardModelConfig(
        enable=True,
        endpoint=f"http://127.0.0.1:{free_port()}/score",
        max_retries=0,
        temp_video_dir=str(tmp_path),
    )
    client = RewardClient(cfg)
    result = client.score(_episode(n=3, native=True))
    client.close()
    assert (result.fallback, result.error_kind, result.score) == (True, "connection", 1.0)
    assert not os.listdir(tmp_path)


# ---- submit: the call in flight while the caller goes on ------------------------------


def test_submit_returns_at_once_with_the_request_in_flight(tmp_path) -> None:
    reply = {"score": 0.6, "raw_value": 0.6, "answer": "0.6", "think": None}
    reply |= {"backend": "canned", "model": "m", "latency_s": 1.0}  # a complete ScoreResponse
    canned = CannedServer(200, json.dumps(reply).encode(), delay=1.0)
    client = RewardClient(
        RewardModelConfig(enable=True, endpoint=canned.endpoint, temp_video_dir=str(tmp_path))
    )
    try:
        started = time.perf_counter()
        future = client.submit(_episode(n=8))
        assert time.perf_counter() - started < 0.5, "submit waited for the call"
        deadline = time.monotonic() + 5
        while canned.hits == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert canned.hits == 1 and not future.done(), "the request is at the server, its answer not back"
        result = future.result(timeout=10)
    finally:
        client.close()
        canned.close()
    assert (result.score, result.fallback, canned.hits) == (0.6, False, 1)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_submit_futures_keep_the_failure_semantics(strict: bool, tmp_path) -> None:
    canned = CannedServer(500, ERROR_BODY)
    cfg = RewardModelConfig(
        enable=True, endpoint=canned.endpoint, fail_on_request_error=strict, temp_video_dir=str(tmp_path)
    )
    client = RewardClient(cfg)
    future = client.submit(_episode(n=3, native=True))
    try:
        if strict:
            with pytest.raises(RewardRequestError, match="HTTP 500"):
                future.result(timeout=10)
        else:
            result = future.result(timeout=10)
            assert (result.fallback, result.error_kind, result.score) == (True, "inference_error", 1.0)
    finally:
        client.close()
        canned.close()
    assert canned.hits == 1
