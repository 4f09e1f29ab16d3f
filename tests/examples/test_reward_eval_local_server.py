"""The reward server the evaluation commands start themselves: ready when yielded, always stopped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests

from examples.embodiment.reward_eval.local_server import (
    RewardServerError,
    check_endpoint,
    health_url,
    local_reward_server,
)
from tests.support.server import ServerProcess, free_port

pytestmark = pytest.mark.slow  # each test starts a server process (a few seconds)

PLUGINS = ("tests.support.fake_backends",)


def _refused(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
    except requests.ConnectionError:
        return True
    return False


def test_server_is_healthy_inside_and_stopped_after(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "server.log"
    with local_reward_server("fixed_score", "none", tmp_path, log, plugins=PLUGINS) as server:
        assert server.endpoint == f"http://127.0.0.1:{server.port}/score"
        assert requests.get(health_url(server.endpoint), timeout=5).status_code == 200
        body = requests.post(server.endpoint, json={"task_text": "t", "video_path": "/nope.mp4"}, timeout=5)
        assert body.status_code == 403, "the server got tmp_path as its --video-root"
    assert server.proc.poll() is not None
    assert _refused(health_url(server.endpoint))
    assert "POST /score" in log.read_text(), "the server log goes to the given file"


def test_server_is_stopped_when_the_body_raises(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    with (
        pytest.raises(RuntimeError, match="rollout crashed"),
        local_reward_server("fixed_score", "none", tmp_path, log, plugins=PLUGINS) as server,
    ):
        raise RuntimeError("rollout crashed")
    assert server.proc.poll() is not None


def test_server_kwargs_reach_the_backend(tmp_path: Path, sample_mp4: str) -> None:
    kwargs = {"answer": "<answer>0.25</answer>"}
    video_root = Path(sample_mp4).parent
    with local_reward_server(
        "fixed_score", "none", video_root, tmp_path / "s.log", plugins=PLUGINS, backend_kwargs=kwargs
    ) as server:
        body = requests.post(server.endpoint, json={"task_text": "t", "video_path": sample_mp4}, timeout=30)
    assert body.status_code == 200 and body.json()["score"] == 0.25


@pytest.mark.parametrize(
    ("backend", "plugins", "kwargs", "timeout", "message"),
    [
        ("fixed_score", ("no_such_module",), None, 60.0, "the reward server exited with 2; see "),
        ("slow", PLUGINS, {"load_seconds": 30}, 1.0, "the reward server was not healthy after 1 s; see "),
    ],
    ids=["exits-at-start", "never-healthy"],
)
def test_a_server_that_does_not_come_up_raises_with_its_log(
    tmp_path: Path, backend: str, plugins: tuple, kwargs: dict | None, timeout: float, message: str
) -> None:
    log = tmp_path / "s.log"
    with (
        pytest.raises(RewardServerError, match=re.escape(message + str(log))),
        local_reward_server(backend, "none", tmp_path, log, plugins, kwargs, timeout=timeout),
    ):
        pytest.fail("the body must not run")


def test_check_endpoint_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(RewardServerError, match=r"not reachable at http://127\.0\.0\.1:\d+/health"):
        check_endpoint(f"http://127.0.0.1:{free_port()}/score", timeout=2)
    args = ["--backend", "slow", "--model", "none", "--backend-kwargs", '{"load_seconds": 30}']
    server = ServerProcess(args, tmp_path / "slow.log", plugins=PLUGINS)
    try:
        server.wait_until(lambda r: r.status_code == 503)
        with pytest.raises(RewardServerError, match=r"is not ready \(HTTP 503\)"):
            check_endpoint(server.endpoint)
    finally:
        server.stop()
