"""Faults during a LIBERO rollout through the project's LiberoEnv with the reward model on.

One env (1 LIBERO process, 4-step episodes, one chunk each) is shared by the module:
resets are the expensive part. Episode by episode the reward server misbehaves in a
different way: killed, hanging past ``timeout``, cutting its response off, answering 500,
then restarted on the same port (more wire faults, without LIBERO's resets, are in
``test_client_faults.py``). With ``fail_on_request_error: False`` the rollout never
stops and every affected episode is a counted fallback (metrics and episode log) whose
reward is the native outcome's; with ``True`` ``chunk_step`` raises ``RewardRequestError``
naming the endpoint, and the env still rolls on after a reset. A 401 is a configuration error,
never a fallback: ``chunk_step`` raises at the first one whatever ``fail_on_request_error`` says.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.envs.conftest import SOFT_RESET, idle_actions, libero_cfg, libero_env
from tests.support import raw_server
from tests.support.raw_server import RawServer
from tests.support.server import ServerProcess, free_port
from vlm_reward.client.http import RewardAuthError, RewardRequestError

pytestmark = [pytest.mark.libero, pytest.mark.slow]

STEPS = 4  # max_episode_steps = the chunk: one chunk_step per episode
TIMEOUT = 1.0
COEF = 5.0  # reward_coef of libero_10.yaml; the idle robot never succeeds natively
HTTP_500 = raw_server.http_response(500, b'{"error": {"type": "inference_error", "message": "CUDA OOM"}}')
HTTP_401 = raw_server.http_response(401, b'{"error": {"type": "unauthorized", "message": "API key needed"}}')


class FaultRollout:
    """The shared env, the reward server it talks to, and what each episode produced."""

    def __init__(self, env: Any, tmp: Path, port: int) -> None:
        self.env, self.tmp, self.port = env, tmp, port
        self.base = env.reward_model  # the module's block, as the env was built with it
        self.server = self.start_server()
        self.raw: list[RawServer] = []

    def start_server(self) -> ServerProcess:
        args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(self.tmp)]
        log = self.tmp / "server.log"
        self.server = ServerProcess(args, log, port=self.port).wait_ready()
        return self.server

    def raw_endpoint(self, reply: bytes, stall: float = 0.0) -> str:
        self.raw.append(RawServer(reply, stall))
        return self.raw[-1].endpoint

    def healthy_server(self) -> ServerProcess:
        """The real server on the module's port, started again if a fault killed it."""
        if self.server.proc.poll() is not None:
            self.start_server()
        return self.server

    def point_at(self, endpoint: str, **changes: Any) -> None:
        """The next episodes' settings: the module's block with ``endpoint`` and ``changes``.

        Set through the env's public ``set_reward_model`` (between episodes), from the
        module's block every time, so no test depends on what an earlier one set.
        """
        self.env.set_reward_model(self.base.replace(endpoint=endpoint, **changes))

    def episode(self) -> tuple[float, dict[str, float]]:
        """Reset, one chunk to the end of the episode; (reward sum, the episode's VLM metrics)."""
        self.env.reset()
        _, rewards, _, truncations, infos = self.env.chunk_step(idle_actions(1, STEPS))
        assert bool(truncations[0, -1]), "the episode must end inside the chunk"
        metrics = {k: float(v[0]) for k, v in infos[-1]["episode"].items() if k.startswith("vlm_")}
        return float(rewards.sum()), metrics

    def log_lines(self) -> list[dict]:
        [log] = (self.tmp / "episodes").glob("*.jsonl")
        return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def rollout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultRollout]:
    tmp = tmp_path_factory.mktemp("rollout-faults")
    port = free_port()
    cfg = libero_cfg(
        max_episode_steps=STEPS,
        **{
            "reward_model.enable": True,
            "reward_model.endpoint": f"http://127.0.0.1:{port}/score",
            "reward_model.backend": "fixed_score",
            "reward_model.timeout": TIMEOUT,
            "reward_model.max_retries": 1,
            "reward_model.temp_video_dir": str(tmp / "videos"),
            "reward_model.episode_log_dir": str(tmp / "episodes"),
            **SOFT_RESET,
        },
    )
    with libero_env(cfg, num_envs=1) as env:
        ctx = FaultRollout(env, tmp, port)
        try:
            yield ctx
        finally:
            ctx.server.stop()
            for server in ctx.raw:
                server.close()


def _kill(r: FaultRollout) -> str:
    r.server.proc.kill()
    r.server.proc.wait()
    return r.server.endpoint


# id, what to do before the episode (returns the endpoint), expected (fallback, error kind)
FAULTS: list[tuple[str, Callable[[FaultRollout], str], tuple[bool, str | None]]] = [
    ("healthy", lambda r: r.server.endpoint, (False, None)),
    ("server-killed", _kill, (True, "connection")),
    ("hangs-past-timeout", lambda r: r.raw_endpoint(b"", stall=3 * TIMEOUT), (True, "timeout")),
    ("response-cut-off", lambda r: r.raw_endpoint(raw_server.HALF_BODY), (True, "connection")),
    ("http-500", lambda r: r.raw_endpoint(HTTP_500), (True, "inference_error")),
    ("restarted-on-the-same-port", lambda r: r.start_server().endpoint, (False, None)),
]


def test_lenient_rollout_survives_every_fault_as_a_counted_fallback(rollout: FaultRollout) -> None:
    rollout.healthy_server()
    seen = []
    for name, inject, (fallback, _) in FAULTS:
        rollout.point_at(inject(rollout), fail_on_request_error=False)
        reward, metrics = rollout.episode()
        line = rollout.log_lines()[-1]
        seen.append(
            (name, metrics["vlm_scored"], metrics["vlm_fallback"], line["fallback"], line["error_kind"])
        )
        # The fallback is the native outcome (failure): no reward; the healthy judge says 0.8 -> success.
        assert reward == pytest.approx(0.0 if fallback else COEF), name
        assert metrics["vlm_score"] == pytest.approx(0.0 if fallback else 0.8), name
    assert seen == [(name, 1.0, float(fb), fb, kind) for name, _, (fb, kind) in FAULTS]
    assert len(rollout.log_lines()) >= len(FAULTS)
    assert list((rollout.tmp / "videos").iterdir()) == [], "temp videos left behind"


def test_strict_rollout_stops_naming_the_endpoint_then_rolls_on(rollout: FaultRollout) -> None:
    endpoint = rollout.raw_endpoint(HTTP_500)
    rollout.point_at(endpoint, fail_on_request_error=True)
    rollout.env.reset()
    with pytest.raises(RewardRequestError) as info:
        rollout.env.chunk_step(idle_actions(1, STEPS))
    assert info.value.kind == "inference_error"
    assert endpoint in str(info.value) and "HTTP 500" in str(info.value) and "CUDA OOM" in str(info.value)
    rollout.point_at(rollout.healthy_server().endpoint, fail_on_request_error=True)
    reward, metrics = rollout.episode()
    assert (reward, metrics["vlm_fallback"], metrics["vlm_score"]) == (
        pytest.approx(COEF),
        0.0,
        pytest.approx(0.8),
    )
    assert list((rollout.tmp / "videos").iterdir()) == []


def test_a_401_stops_the_rollout_even_when_lenient(
    rollout: FaultRollout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "a-stale-key")  # exported, named by api_key_env, refused
    endpoint = rollout.raw_endpoint(HTTP_401)
    rollout.point_at(endpoint, fail_on_request_error=False, api_key_env="JUDGE_KEY")
    rollout.env.reset()
    with pytest.raises(
        RewardAuthError, match=r"HTTP 401 \(unauthorized\): this client sent the key in \$JUDGE_KEY"
    ):
        rollout.env.chunk_step(idle_actions(1, STEPS))
    assert "a-stale-key" not in "\n".join(str(line) for line in rollout.log_lines())
    rollout.point_at(rollout.healthy_server().endpoint, fail_on_request_error=False)
    reward, metrics = rollout.episode()
    assert (reward, metrics["vlm_fallback"]) == (pytest.approx(COEF), 0.0), "the env rolls on after a reset"
