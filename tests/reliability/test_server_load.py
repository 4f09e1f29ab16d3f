"""The reward server under load (the CI-sized version of ``benchmarks/load_test.py``).

300 requests at concurrency 64 against an instant backend: every one a 200 with its score,
and the server's resident memory flat once warmed up. Then a slow backend under load:
clients with a short timeout fall back cleanly with ``error_kind`` "timeout", and a later
request is served promptly: the jobs of clients that went away are dropped, not worked
through (the server logs them as 499).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests

from tests.conftest import moving_square_frames
from tests.support.server import ServerProcess
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient

pytestmark = pytest.mark.slow

REQUESTS, CONCURRENCY, WARMUP = 300, 64, 100
# benchmarks/load_test.py measured +0.4 MiB over 2,000 requests after warm-up (benchmarks/README.md);
# a leak of one 16-frame MP4 (~30 KB) per request would add ~9 MiB here.
RSS_SLACK_MIB = 6
SLOW_SECONDS, SLOW_BATCH, EPISODES, CLIENT_TIMEOUT = 2.0, 2, 32, 0.5


@pytest.fixture(scope="module")
def instant_server(tmp_path_factory: pytest.TempPathFactory, sample_mp4: str) -> Iterator[ServerProcess]:
    root = Path(sample_mp4).parent
    args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(root)]
    server = ServerProcess(args, tmp_path_factory.mktemp("load") / "server.log").wait_ready()
    yield server
    server.stop()


def _fire(server: ServerProcess, body: dict, n: int) -> list[str]:
    """Send ``n`` requests, CONCURRENCY at a time; return a description of each failure."""
    local = threading.local()

    def one(_: int) -> str:
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        try:
            response = session.post(server.endpoint, json=body, timeout=60)
        except requests.RequestException as exc:
            return f"{type(exc).__name__}: {exc}"
        ok = response.status_code == 200 and response.json().get("score") == 0.8
        return "" if ok else f"HTTP {response.status_code}: {response.text[:200]}"

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return [error for error in pool.map(one, range(n)) if error]


def test_300_concurrent_requests_all_succeed_and_memory_stays_flat(
    instant_server: ServerProcess, sample_mp4: str
) -> None:
    body = {"task_text": "put the bowl on the plate", "video_path": sample_mp4}
    assert _fire(instant_server, body, WARMUP) == []
    before = psutil.Process(instant_server.proc.pid).memory_info().rss
    errors = _fire(instant_server, body, REQUESTS)
    after = psutil.Process(instant_server.proc.pid).memory_info().rss
    assert errors == []
    assert (after - before) / 2**20 < RSS_SLACK_MIB, f"RSS grew from {before} to {after} bytes"
    assert requests.get(instant_server.url("/health"), timeout=5).status_code == 200


@pytest.fixture(scope="module")
def slow_server(
    tmp_path_factory: pytest.TempPathFactory, sample_mp4: str
) -> Iterator[tuple[ServerProcess, Path]]:
    """A backend taking SLOW_SECONDS per call; TMPDIR is where it writes inline uploads."""
    uploads = tmp_path_factory.mktemp("slow-uploads")
    args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(Path(sample_mp4).parent)]
    args += [
        "--backend-kwargs",
        json.dumps({"generate_seconds": SLOW_SECONDS}),
        "--max-batch-size",
        str(SLOW_BATCH),
    ]
    server = ServerProcess(
        args, uploads.parent / "slow_server.log", env={"TMPDIR": str(uploads)}
    ).wait_ready()
    yield server, uploads
    server.stop()


def test_slow_backend_under_load_times_out_cleanly_and_the_server_recovers(
    slow_server: tuple[ServerProcess, Path], tmp_path: Path, sample_mp4: str
) -> None:
    server, uploads = slow_server
    cfg = RewardModelConfig(
        enable=True,
        endpoint=server.endpoint,
        backend="fixed_score",
        timeout=CLIENT_TIMEOUT,
        max_concurrency=EPISODES,
        send_video_inline=True,
        temp_video_dir=str(tmp_path),
    )
    client = RewardClient(cfg)
    episodes = [
        FinishedEpisode(f"task {i}", list(moving_square_frames(4)), i % 2 == 0) for i in range(EPISODES)
    ]
    results = client.score_many(episodes)
    client.close()
    assert [(r.fallback, r.error_kind, r.score) for r in results] == [
        (True, "timeout", float(e.native_success)) for e in episodes
    ]
    assert client.error_counts == {"timeout": EPISODES}
    assert list(tmp_path.iterdir()) == []
    # The backlog the clients left is EPISODES / SLOW_BATCH calls = 32 s; a recovered server
    # answers after at most the batch already running plus this request's own call.
    started = time.perf_counter()
    later = requests.post(server.endpoint, json={"task_text": "t", "video_path": sample_mp4}, timeout=60)
    assert later.status_code == 200 and later.json()["score"] == 0.8
    assert time.perf_counter() - started < 2 * SLOW_SECONDS + 2
    assert "status=499" in server.log()
    assert list(uploads.iterdir()) == [], "dropped requests left their inline uploads behind"
