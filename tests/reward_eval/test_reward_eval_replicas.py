"""``--replicas N``: a command's local judge as N servers that a private Ray cluster places.

The options are checked at parse time; the judge itself is real: ``fixed_score`` servers under
the command's fresh key, listening on this machine's address, stopped with Ray afterwards.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import requests

from reward_eval.commands import run as run_cmd
from reward_eval.job import options
from reward_eval.judge import endpoint as judge
from reward_eval.judge.replicas import gpus_each
from tests.support.server import running_servers
from vlm_reward.protocol import authorization
from vlm_reward.tools.server_process import health_url, route_url

PLUGIN = "tests.support.fake_backends"


def _args(*argv: str):
    parser = run_cmd.build_parser()
    args = parser.parse_args(list(argv))
    options.check_scoring_options(parser, args)
    return args


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--endpoint", "http://h:1/score", "--replicas", "2"], "--replicas only configure a local server"),
        (["--gpus-per-replica", "1"], "--gpus-per-replica goes with --replicas N (N >= 2)"),
        (["--replicas", "0"], "argument --replicas: must be at least 1, got 0"),
        (["--replicas", "2", "--gpus-per-replica", "-1"], "argument --gpus-per-replica: must be at least 0"),
    ],
    ids=["with-endpoint", "gpus-without-replicas", "zero-replicas", "negative-gpus"],
)
def test_replica_options_that_cannot_apply_are_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _args(*argv)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("requested", "replicas", "gpus", "each"),
    [(None, 2, [], 0), (None, 2, ["0", "1"], 1), (None, 3, ["0", "1"], 0), (2, 2, ["0", "1", "2", "3"], 2)],
    ids=["no-gpu", "one-each", "too-few-for-one-each", "as-requested"],
)
def test_gpus_per_replica_default_to_one_each_when_there_are_enough(
    requested: int | None, replicas: int, gpus: list[str], each: int
) -> None:
    assert gpus_each(requested, replicas, gpus) == each


@pytest.mark.slow
def test_replicas_serve_under_the_commands_key_and_leave_nothing_behind(tmp_path: Path) -> None:
    args = _args("--backend", "fixed_score", "--model", "none", "--plugin", PLUGIN, "--replicas", "2")
    with judge.scoring_endpoint(args, "none", tmp_path, tmp_path / "reward_server.log") as endpoint:
        urls, key = endpoint.url, os.environ[judge.LOCAL_KEY_ENV]
        assert isinstance(urls, list) and len(set(urls)) == 2 and endpoint.api_key_env == judge.LOCAL_KEY_ENV
        for url in urls:
            assert url.startswith("http://127.0.0.1:"), (
                "one node: on loopback, with the command's key all the same"
            )
            headers = {"Authorization": authorization(key)}
            assert requests.get(route_url(url, "/backends"), headers=headers, timeout=10).status_code == 200
            assert requests.get(route_url(url, "/backends"), timeout=10).status_code == 401
        assert len(running_servers()) == 2
    assert judge.LOCAL_KEY_ENV not in os.environ
    deadline = time.monotonic() + 30
    while running_servers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running_servers()
    logs = sorted(p.name for p in (tmp_path / "reward_server").iterdir())
    assert logs == ["replica0.log", "replica1.log"]
    for url in urls:
        with pytest.raises(requests.ConnectionError):
            requests.get(health_url(url), timeout=2)
