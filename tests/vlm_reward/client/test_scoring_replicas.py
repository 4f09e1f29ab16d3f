"""RewardClient with several reward-server replicas: which one answers, failover, all down.

Canned in-process servers stand in for replicas here (milliseconds per test); real server
processes killed in the middle of a LIBERO rollout are in
``tests/reliability/test_replica_failover_env.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import wait

import pytest

from tests.conftest import moving_square_frames
from tests.support.canned_server import CannedServer
from tests.support.server import free_port
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.http import RewardAuthError
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, RewardRequestError

REPLY = json.dumps(
    {"score": 0.6, "raw_value": 0.6, "answer": "0.6", "think": None}
    | {"backend": "canned", "model": "m", "latency_s": 0.1}  # a complete ScoreResponse
).encode()
BUSY = json.dumps({"error": {"type": "shutting_down", "message": "the server is shutting down"}}).encode()
BAD_REQUEST = json.dumps({"error": {"type": "limit_exceeded", "message": "nframes above 64"}}).encode()
PARSE_ERROR = json.dumps({"error": {"type": "parse_error", "message": "no number"}}).encode()
UNAUTHORIZED = json.dumps({"error": {"type": "unauthorized", "message": "needs a key"}}).encode()


def _episode(native: bool = False) -> FinishedEpisode:
    return FinishedEpisode("put the bowl on the plate", list(moving_square_frames(4)), native)


@pytest.fixture
def servers() -> Iterator[list[CannedServer]]:
    started: list[CannedServer] = []
    yield started
    for server in started:
        server.close()


def _client(endpoints: list[str], tmp_path, **changes: object) -> RewardClient:
    """A client of ``endpoints``; no retry rounds unless ``changes`` asks (failover is not a retry)."""
    settings = {"timeout": 1.0, "max_retries": 0, "temp_video_dir": str(tmp_path), **changes}
    return RewardClient(RewardModelConfig(enable=True, endpoint=endpoints, **settings))


def test_an_idle_pool_spreads_episodes_over_the_replicas(servers, tmp_path) -> None:
    servers += [CannedServer(200, REPLY, delay=0.3) for _ in range(3)]
    client = _client([s.endpoint for s in servers], tmp_path)
    try:
        futures = [client.submit(_episode()) for _ in range(6)]
        wait(futures, timeout=20)
        results = [f.result() for f in futures]
    finally:
        client.close()
    assert [s.hits for s in servers] == [2, 2, 2]
    assert {r.endpoint for r in results} == {s.endpoint for s in servers}
    assert all(not r.fallback and r.failovers == 0 and r.score == 0.6 for r in results)
    assert client.replicas.snapshot() == {s.endpoint: {"requests": 2, "failures": 0} for s in servers}


def _refusing(servers: list[CannedServer]) -> str:
    return f"http://127.0.0.1:{free_port()}/score"


def _busy(servers: list[CannedServer]) -> str:
    servers.append(CannedServer(503, BUSY))
    return servers[-1].endpoint


def _hanging(servers: list[CannedServer]) -> str:
    servers.append(CannedServer(200, REPLY, delay=3.0))
    return servers[-1].endpoint


FAILOVERS = [("refuses_connections", _refusing), ("answers_503", _busy), ("times_out", _hanging)]


@pytest.mark.parametrize("make_bad", [f[1] for f in FAILOVERS], ids=[f[0] for f in FAILOVERS])
def test_a_failing_replica_is_skipped_and_sits_out_its_cool_down(servers, make_bad, tmp_path) -> None:
    bad = make_bad(servers)
    servers.append(CannedServer(200, REPLY))
    good = servers[-1]
    client = _client([bad, good.endpoint], tmp_path)  # the idle pool tries ``bad`` first
    try:
        first, second = client.score(_episode()), client.score(_episode())
    finally:
        client.close()
    assert (first.fallback, first.endpoint, first.failovers, first.score) == (False, good.endpoint, 1, 0.6)
    assert (second.endpoint, second.failovers) == (good.endpoint, 0), "the failed replica is cooling down"
    assert client.replicas.snapshot()[bad] == {"requests": 1, "failures": 1}
    assert (client.replicas.failovers, good.hits) == (1, 2)


NOT_FAILED_OVER = [("http_500", 500, b'{"error": {"type": "inference_error", "message": "OOM"}}')]
NOT_FAILED_OVER += [("limit_exceeded_422", 422, BAD_REQUEST), ("parse_error_502", 502, PARSE_ERROR)]


@pytest.mark.parametrize(
    ("status", "body"), [n[1:] for n in NOT_FAILED_OVER], ids=[n[0] for n in NOT_FAILED_OVER]
)
def test_an_error_of_the_request_itself_is_not_sent_to_another_replica(
    servers, status: int, body: bytes, tmp_path
) -> None:
    servers += [CannedServer(status, body), CannedServer(200, REPLY)]
    client = _client([s.endpoint for s in servers], tmp_path)
    try:
        result = client.score(_episode(native=True))
    finally:
        client.close()
    assert (result.fallback, result.score, result.endpoint) == (True, 1.0, None)
    assert [s.hits for s in servers] == [1, 0]
    assert client.replicas.failovers == 0


def test_a_401_is_raised_at_once_never_failed_over_nor_a_fallback(servers, tmp_path) -> None:
    """The pool shares its keys: a 401 is the client's configuration, the same on every replica."""
    servers += [CannedServer(401, UNAUTHORIZED), CannedServer(200, REPLY)]
    client = _client([s.endpoint for s in servers], tmp_path)
    try:
        with pytest.raises(
            RewardAuthError, match=r"HTTP 401 .*this client sent no key \(no api_key_env is set\)"
        ):
            client.score(_episode(native=True))
    finally:
        client.close()
    assert [s.hits for s in servers] == [1, 0]
    assert client.replicas.failovers == 0 and not client.error_counts


def test_all_replicas_down_applies_the_fallback_after_the_retry_rounds(servers, tmp_path) -> None:
    servers += [CannedServer(503, BUSY), CannedServer(503, BUSY)]
    client = _client([s.endpoint for s in servers], tmp_path, max_retries=1, fallback_score=0.25)
    try:
        result = client.score(_episode(native=True))
    finally:
        client.close()
    assert (result.fallback, result.score, result.error_kind) == (True, 0.25, "shutting_down")
    assert [s.hits for s in servers] == [2, 2], "each round tries every replica once"
    assert client.error_counts == {"shutting_down": 1}


def test_all_replicas_down_raises_naming_the_last_one_when_strict(tmp_path) -> None:
    endpoints = [f"http://127.0.0.1:{free_port()}/score" for _ in range(2)]
    client = _client(endpoints, tmp_path, fail_on_request_error=True)
    try:
        with pytest.raises(RewardRequestError) as info:
            client.score(_episode())
    finally:
        client.close()
    assert info.value.kind == "connection" and info.value.endpoint in endpoints
    assert client.replicas.snapshot() == {e: {"requests": 1, "failures": 1} for e in endpoints}
    assert list(tmp_path.iterdir()) == []
