"""The reward server a command scores against (``judge.endpoint``) and the launcher under it.

A local server (``--backend/--model``) is ready when its endpoint is yielded and always
stopped after, also when the command fails; one that does not come up is a
``ServerStartError`` naming its log, and is not left running. It takes the fresh key the
command gives it, never one the user exported. A given ``--endpoint`` is checked first, its
key included. These are real server processes on 127.0.0.1, with the test backends.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from reward_eval.job import options
from reward_eval.judge import endpoint as judge
from tests.support.server import ServerProcess
from vlm_reward.client.http import RewardAuthError
from vlm_reward.protocol import API_KEY_ENV, authorization
from vlm_reward.tools.server_process import RewardServerProcess, ServerStartError, free_port, health_url

pytestmark = pytest.mark.slow  # each test starts a server process (a few seconds)

PLUGIN = "tests.support.fake_backends"


def _refused(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
    except requests.ConnectionError:
        return True
    return False


def _local_args(*argv: str) -> argparse.Namespace:
    """The scoring options of a command that starts a local test-backend server."""
    parser = argparse.ArgumentParser()
    options.add_scoring_options(parser, "the env YAML")
    args = parser.parse_args(["--plugin", PLUGIN, "--model", "none", *argv])
    options.check_scoring_options(parser, args)
    return args


def _post(url: str, key: str | None, **body: str) -> requests.Response:
    headers = {"Authorization": authorization(key)} if key else {}
    return requests.post(url, json={"task_text": "t", **body}, headers=headers, timeout=30)


def test_server_is_healthy_inside_keyed_by_the_command_and_stopped_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_KEY_ENV, "the-users-own-key")  # exported, as the cluster recipe does
    log = tmp_path / "logs" / "server.log"
    args = _local_args("--backend", "fixed_score")
    with judge.scoring_endpoint(args, "none", tmp_path, log) as endpoint:
        url, key = endpoint.url, os.environ[judge.LOCAL_KEY_ENV]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/score", url)
        assert endpoint.api_key_env == judge.LOCAL_KEY_ENV and len(key) >= 32
        assert requests.get(health_url(url), timeout=5).status_code == 200
        assert _post(url, key, video_path="/nope.mp4").status_code == 403, "--video-root is tmp_path"
        assert _post(url, None, video_path="/nope.mp4").status_code == 401
        assert _post(url, "the-users-own-key", video_path="/nope.mp4").status_code == 401
    assert _refused(health_url(url))
    assert judge.LOCAL_KEY_ENV not in os.environ, "the key leaves with the server"
    assert "POST /score" in log.read_text(), "the server log goes to the given file"
    assert key not in log.read_text()


def test_server_is_stopped_when_the_body_raises(tmp_path: Path) -> None:
    args = _local_args("--backend", "fixed_score")
    with (
        pytest.raises(RuntimeError, match="rollout crashed"),
        judge.scoring_endpoint(args, "none", tmp_path, tmp_path / "s.log") as endpoint,
    ):
        raise RuntimeError("rollout crashed")
    assert _refused(health_url(endpoint.url))


def test_server_kwargs_reach_the_backend(tmp_path: Path, sample_mp4: str) -> None:
    args = _local_args("--backend", "fixed_score", "--server-kwargs", '{"answer": "<answer>0.25</answer>"}')
    with judge.scoring_endpoint(args, "none", Path(sample_mp4).parent, tmp_path / "s.log") as endpoint:
        body = _post(endpoint.url, os.environ[judge.LOCAL_KEY_ENV], video_path=sample_mp4)
    assert body.status_code == 200 and body.json()["score"] == 0.25


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--backend", "fixed_score", "--plugin", "no_such_module"],
            "the reward server exited with 2: --plugin no_such_module: cannot import it "
            "(No module named 'no_such_module'); see ",
        ),
        (
            ["--backend", "slow", "--server-kwargs", '{"load_seconds": 30}', "--server-start-timeout", "1"],
            "the reward server was not healthy after 1 s; see ",
        ),
    ],
    ids=["exits-at-start", "never-healthy"],
)
def test_a_server_that_does_not_come_up_raises_with_its_log_and_is_stopped(
    tmp_path: Path, argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[RewardServerProcess] = []
    launch = judge.local_server
    monkeypatch.setattr(judge, "local_server", lambda *a: started.append(launch(*a)) or started[-1])
    log = tmp_path / "s.log"
    with (
        pytest.raises(ServerStartError, match=re.escape(message + str(log))),
        judge.scoring_endpoint(_local_args(*argv), "none", tmp_path, log),
    ):
        pytest.fail("the body must not run")
    [server] = started
    assert server.proc.poll() is not None, "a server that never got ready is not left running"


def test_the_launcher_as_a_context_waits_for_health_and_stops_the_server(tmp_path: Path) -> None:
    args = ["--backend", "fixed_score", "--model", "none", "--video-root", str(tmp_path)]
    with RewardServerProcess(args, tmp_path / "s.log", plugins=(PLUGIN,)) as server:
        reply = requests.post(server.endpoint, json={"task_text": "t", "video_path": "/nope.mp4"}, timeout=5)
        assert reply.status_code == 403, "healthy on entry: answered (a path outside --video-root)"
    assert server.proc.poll() is not None, "leaving the context stops the server"


def test_check_endpoint_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(
        judge.EndpointUnavailableError, match=r"not reachable at http://127\.0\.0\.1:\d+/health"
    ):
        judge.check_endpoint(f"http://127.0.0.1:{free_port()}/score", timeout=2)
    args = ["--backend", "slow", "--model", "none", "--backend-kwargs", '{"load_seconds": 30}']
    server = ServerProcess(args, tmp_path / "slow.log", plugins=(PLUGIN,))
    try:
        loading = server.wait_until(lambda r: r.status_code == 503)
        assert loading.json()["error"]["type"] == "backend_loading"
        with pytest.raises(judge.EndpointUnavailableError, match=r"is not ready \(HTTP 503\)"):
            judge.check_endpoint(server.endpoint)
    finally:
        server.stop()


KEY_CHECKS = [
    ("right-key", "the-key", None),
    ("wrong-key", "not-the-key", r"HTTP 401 \(unauthorized\): this client sent the key in \$JUDGE_KEY;"),
    ("no-key", None, r"HTTP 401 \(unauthorized\): this client sent no key \(no api_key_env is set\);"),
]


@pytest.mark.parametrize(("key", "error"), [k[1:] for k in KEY_CHECKS], ids=[k[0] for k in KEY_CHECKS])
def test_check_endpoint_asks_a_guarded_route_with_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keyed_server: ServerProcess, key: str | None, error: str
) -> None:
    if key is not None:
        monkeypatch.setenv("JUDGE_KEY", key)
    api_key_env = "JUDGE_KEY" if key is not None else None
    if error is None:
        judge.check_endpoint(keyed_server.endpoint, api_key_env)
        return
    with pytest.raises(RewardAuthError, match=error):
        judge.check_endpoint(keyed_server.endpoint, api_key_env)


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("keyed")
    args = ["--backend", "fixed_score", "--model", "none", "--video-root", str(tmp)]
    server = ServerProcess(args, tmp / "s.log", plugins=(PLUGIN,), env={API_KEY_ENV: "the-key"})
    try:
        yield server.wait_ready()
    finally:
        server.stop()
