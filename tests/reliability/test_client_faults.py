"""RewardClient against faults on the wire: broken HTTP, hangs, a server killed and restarted.

Every fault must end the same two ways: with ``fail_on_request_error: False`` the episode
gets the fallback score and is counted under its error kind (the rollout goes on); with
``True`` the call raises ``RewardRequestError`` whose message names the endpoint. Either
way no temp video is left behind, also after 200 episodes against a half-failing server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import moving_square_frames
from tests.support import raw_server
from tests.support.raw_server import RawServer
from tests.support.server import ServerProcess, free_port
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, RewardRequestError, ScoreResult

TIMEOUT = 1.0
STALL = 3 * TIMEOUT  # a hang outlasts the client's patience
HTTP_500 = raw_server.http_response(500, b'{"error": {"type": "inference_error", "message": "OOM"}}')

# id, reply, stall, error kind, requests the server sees with max_retries=1
# (connection errors are retried once; timeouts and bad bodies are not).
WIRE_FAULTS = [
    ("closed-without-reply", raw_server.CLOSED_WITHOUT_REPLY, 0.0, "connection", 2),
    ("status-line-only", raw_server.STATUS_LINE_ONLY, 0.0, "malformed_response", 1),
    ("headers-then-closed", raw_server.HEADERS_ONLY, 0.0, "connection", 2),
    ("body-cut-short", raw_server.HALF_BODY, 0.0, "connection", 2),
    ("chunked-body-cut", raw_server.CHUNKED_CUT, 0.0, "connection", 2),
    ("not-http", raw_server.NOT_HTTP, 0.0, "connection", 2),
    ("no-reply-past-timeout", b"", STALL, "timeout", 1),
    ("headers-then-hang", raw_server.HEADERS_ONLY, STALL, "timeout", 1),
    ("body-hangs-midway", raw_server.HALF_BODY, STALL, "timeout", 1),
    ("http-500", HTTP_500, 0.0, "inference_error", 1),
]


def _episode(native: bool = False, task: str = "put the bowl on the plate", n: int = 4) -> FinishedEpisode:
    return FinishedEpisode(task, list(moving_square_frames(n)), native)


def _client(endpoint: str, videos: Path, **changes: object) -> RewardClient:
    cfg = dict(enable=True, endpoint=endpoint, timeout=TIMEOUT, max_retries=1, temp_video_dir=str(videos))
    return RewardClient(RewardModelConfig(**{**cfg, **changes}))


@pytest.fixture(params=WIRE_FAULTS, ids=[f[0] for f in WIRE_FAULTS])
def fault(request: pytest.FixtureRequest) -> Iterator[tuple[RawServer, str, int]]:
    _, reply, stall, kind, attempts = request.param
    server = RawServer(reply, stall)
    yield server, kind, attempts
    server.close()


@pytest.mark.parametrize("native", [False, True], ids=["native-failure", "native-success"])
def test_wire_fault_becomes_a_counted_fallback(fault, native: bool, tmp_path: Path) -> None:
    server, kind, attempts = fault
    client = _client(server.endpoint, tmp_path)
    started = time.perf_counter()
    result = client.score(_episode(native))
    elapsed = time.perf_counter() - started
    client.close()
    assert (result.fallback, result.error_kind, result.score) == (True, kind, float(native)), result.error
    assert server.endpoint in result.error
    assert client.error_counts == {kind: 1}
    assert server.requests == attempts
    # One timeout bounds the wait; a retried hang would take twice as long.
    assert elapsed < 2 * TIMEOUT
    assert list(tmp_path.iterdir()) == []


def test_wire_fault_stops_a_strict_client_naming_the_endpoint(fault, tmp_path: Path) -> None:
    server, kind, _ = fault
    client = _client(server.endpoint, tmp_path, fail_on_request_error=True)
    with pytest.raises(RewardRequestError) as info:
        client.score(_episode())
    client.close()
    assert info.value.kind == kind
    assert server.endpoint in str(info.value) and f"[{kind}]" in str(info.value)
    assert list(tmp_path.iterdir()) == []


# ---- a real server killed while requests are in flight, then restarted ------------------


def _fixed_server(tmp_path: Path, port: int, generate_seconds: float) -> ServerProcess:
    args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp_path)]
    args += ["--backend-kwargs", json.dumps({"generate_seconds": generate_seconds})]
    return ServerProcess(args, tmp_path / f"server_{generate_seconds}.log", port=port).wait_ready()


def _score_while_killing(
    client: RewardClient, server: ServerProcess, episodes: list[FinishedEpisode]
) -> list[ScoreResult]:
    """Start scoring, kill -9 the server while the requests wait in its backend, return the outcome."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(client.score_many, episodes)
        time.sleep(1.0)  # the requests are in the server: its backend takes 5 s
        server.proc.kill()
        server.proc.wait()
        return future.result(timeout=60)


@pytest.mark.slow
def test_server_killed_mid_request_falls_back_then_recovers_after_restart(tmp_path: Path) -> None:
    port = free_port()
    server = _fixed_server(tmp_path, port, generate_seconds=5.0)
    client = _client(
        server.endpoint, tmp_path / "videos", backend="fixed_score", timeout=30.0, max_concurrency=4
    )
    episodes = [_episode(native=i % 2 == 0, task=f"task {i}") for i in range(4)]
    try:
        killed = _score_while_killing(client, server, episodes)
        server = _fixed_server(tmp_path, port, generate_seconds=0.0)
        restarted = client.score_many(episodes)
    finally:
        client.close()
        server.stop()
    assert [(r.fallback, r.error_kind, r.score) for r in killed] == [
        (True, "connection", float(e.native_success)) for e in episodes
    ]
    assert [(r.fallback, r.score) for r in restarted] == [(False, 0.8)] * 4
    assert list((tmp_path / "videos").iterdir()) == []


@pytest.mark.slow
def test_server_killed_mid_request_stops_a_strict_client(tmp_path: Path) -> None:
    server = _fixed_server(tmp_path, free_port(), generate_seconds=5.0)
    client = _client(
        server.endpoint, tmp_path / "videos", backend="fixed_score", timeout=30.0, fail_on_request_error=True
    )
    try:
        with pytest.raises(RewardRequestError) as info:
            _score_while_killing(client, server, [_episode(task=f"task {i}") for i in range(2)])
    finally:
        client.close()
        server.stop()
    assert info.value.kind == "connection" and server.endpoint in str(info.value)
    assert list((tmp_path / "videos").iterdir()) == []


# ---- no temp video survives, whatever happens to the requests ---------------------------


@pytest.fixture(scope="module")
def half_failing_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """``counting`` backend: a task containing "fail" fails, others score their digit / 10."""
    tmp = tmp_path_factory.mktemp("half-failing")
    uploads = tmp / "uploads"
    uploads.mkdir()
    # The root holds every test's tmp_path, where the clients write their videos.
    args = ["--backend", "counting", "--model", "m", "--video-root", str(tmp_path_factory.getbasetemp())]
    args += ["--backend-kwargs", json.dumps({"log_path": str(tmp / "calls.jsonl"), "generate_seconds": 0.0})]
    # TMPDIR: where the server writes inline uploads, so the test can count them too.
    server = ServerProcess(args, tmp / "server.log", env={"TMPDIR": str(uploads)}).wait_ready()
    yield server, uploads
    server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("inline", [False, True], ids=["by-path", "inline"])
def test_200_episodes_against_a_half_failing_server_leave_no_video(
    half_failing_server, inline: bool, tmp_path: Path
) -> None:
    server, uploads = half_failing_server
    tasks = [f"fail episode {i % 10}" if i % 2 else f"stack block {i % 10}" for i in range(200)]
    client = _client(
        server.endpoint,
        tmp_path,
        backend="counting",
        send_video_inline=inline,
        timeout=30.0,
        max_concurrency=16,
    )
    results = client.score_many(
        [FinishedEpisode(t, list(moving_square_frames(4, size=32)), True) for t in tasks]
    )
    client.close()
    failed = [r for r in results if r.fallback]
    assert len(failed) == 100 and {r.error_kind for r in failed} == {"inference_error"}
    assert client.error_counts == {"inference_error": 100}
    scored = [(t, r.score) for t, r in zip(tasks, results, strict=True) if not r.fallback]
    assert scored == [(t, int(t[-1]) / 10) for t in tasks if not t.startswith("fail")]
    assert list(tmp_path.iterdir()) == [], "client temp videos left behind"
    assert [p.name for p in uploads.iterdir()] == [], "server upload files left behind"
