"""Three real reward-server replicas behind one env config; one killed in the middle of a rollout.

One LiberoEnv (3 envs, 4-step episodes, one chunk each) is shared by the module. Its
``reward_model.endpoint`` lists three server processes whose ``recording`` backend takes
``GENERATE_S`` per call and notes each job the moment it starts. Episode by episode:

1. all healthy: the three episodes that end together go to the three replicas;
2. the first replica to start a job is SIGKILLed while that job is in flight: its episode
   fails over to a live replica, every episode is scored, none falls back;
3. the killed replica is cooling down: the episodes go to the two live ones, no failover;
4. every replica killed: the failure policy as with one server (lenient: each episode a
   counted ``connection`` fallback with its native outcome; strict: ``chunk_step`` raises).

And a rolling restart of one of two replicas: the first to start a job gets SIGTERM while
that job is in flight, drains (the job is answered, new ones get 503 and fail over), exits
0 and is started again on its port: every episode is scored, none falls back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.envs.conftest import SOFT_RESET, idle_actions, libero_cfg, libero_env
from tests.support.server import ServerProcess
from vlm_reward.client.scoring import RewardRequestError

pytestmark = [pytest.mark.libero, pytest.mark.slow]

NUM_ENVS = 3
STEPS = 4  # max_episode_steps = the chunk: one chunk_step per episode
GENERATE_S = 1.5  # long enough to kill a replica while it holds a job
COEF = 5.0  # reward_coef of libero_10.yaml; the idle robot never succeeds natively


class Replicas:
    """Three fresh server processes and what each has started; stopped by the test's fixture."""

    def __init__(self, tmp: Path, count: int = 3) -> None:
        self.tmp = tmp
        self.servers: list[ServerProcess] = []
        self.started: list[Path] = []
        for i in range(count):
            self.started.append(tmp / f"started{i}.jsonl")
            self.servers.append(self._start(i))
        for server in self.servers:
            server.wait_ready()

    def _start(self, i: int, port: int | None = None) -> ServerProcess:
        kwargs = {
            "log_path": str(self.tmp / f"calls{i}.jsonl"),
            "start_log": str(self.started[i]),
            "generate_seconds": GENERATE_S,
        }
        args = ["--backend", "recording", "--model", "m", "--video-root", "/"]
        args += ["--backend-kwargs", json.dumps(kwargs)]
        log = self.tmp / f"server{i}.log"
        return ServerProcess(args, log, plugins=("tests.support.env_backends",), port=port)

    def restart(self, index: int) -> int:
        """SIGTERM replica ``index`` (it drains), start it again on its port; its exit code."""
        old = self.servers[index]
        old.proc.terminate()
        code = old.proc.wait(timeout=60)
        self.servers[index] = self._start(index, port=old.port).wait_ready()
        return code

    @property
    def endpoints(self) -> list[str]:
        return [server.endpoint for server in self.servers]

    def jobs_started(self) -> list[int]:
        return [len(p.read_text().splitlines()) if p.exists() else 0 for p in self.started]

    def kill(self, index: int) -> None:
        self.servers[index].proc.kill()
        self.servers[index].proc.wait(timeout=30)

    def kill_first_to_start_a_job(self, before: list[int], killed: list[int], restart: bool = False) -> None:
        """Wait until a replica starts a new job, then SIGKILL it, or with ``restart`` SIGTERM it and
        start it again (run in a thread); ``killed`` gets its index (and the exit code)."""
        deadline = time.monotonic() + 900  # a loaded machine may take minutes to reset LIBERO
        while time.monotonic() < deadline:
            grown = [
                i for i, (now, then) in enumerate(zip(self.jobs_started(), before, strict=True)) if now > then
            ]
            if grown:
                killed.append(grown[0])
                if restart:
                    killed.append(self.restart(grown[0]))
                else:
                    self.kill(grown[0])
                return
            time.sleep(0.01)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


class FailoverRollout:
    """The module's env; each test points it at its own replicas."""

    def __init__(self, env: Any, tmp: Path) -> None:
        self.env, self.tmp = env, tmp
        self.base = env.reward_model  # the module's block, as the env was built with it

    def point_at(self, replicas: Replicas, **changes: Any) -> None:
        """The next episodes' settings: the module's block with ``replicas`` and ``changes``."""
        self.env.set_reward_model(self.base.replace(endpoint=replicas.endpoints, **changes))

    def episodes(self) -> tuple[list[float], dict[str, list[float]]]:
        """Reset, one chunk to the end of every env's episode; (reward sums, VLM metrics per env)."""
        self.env.reset()
        _, rewards, _, truncations, infos = self.env.chunk_step(idle_actions(NUM_ENVS, STEPS))
        assert truncations[:, -1].all(), "every episode must end inside the chunk"
        episode = infos[-1]["episode"]
        metrics = {k: [float(x) for x in v] for k, v in episode.items() if k.startswith("vlm_")}
        return [float(r) for r in rewards.sum(dim=1)], metrics

    def log_lines(self) -> list[dict]:
        """The episode log's lines so far (none before the first scored episode)."""
        logs = list((self.tmp / "episodes").glob("*.jsonl"))
        return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def rollout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FailoverRollout]:
    tmp = tmp_path_factory.mktemp("replica-rollout")
    cfg = libero_cfg(
        max_episode_steps=STEPS,
        **{
            "reward_model.enable": True,
            "reward_model.backend": "recording",
            "reward_model.timeout": 30.0,
            "reward_model.max_retries": 0,  # a failover is not a retry: none are allowed here
            "reward_model.replica_cooldown_s": 600.0,
            "reward_model.temp_video_dir": str(tmp / "videos"),
            "reward_model.episode_log_dir": str(tmp / "episodes"),
            **SOFT_RESET,
        },
    )
    with libero_env(cfg, num_envs=NUM_ENVS) as env:
        yield FailoverRollout(env, tmp)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    started = Replicas(tmp_path)
    try:
        yield started
    finally:
        started.stop()


def test_a_replica_killed_mid_rollout_costs_no_episode_its_score(
    rollout: FailoverRollout, replicas: Replicas
) -> None:
    rollout.point_at(replicas)
    endpoints, before = replicas.endpoints, len(rollout.log_lines())

    rewards, metrics = rollout.episodes()
    assert rewards == [pytest.approx(COEF)] * NUM_ENVS and metrics["vlm_fallback"] == [0.0] * NUM_ENVS
    assert sorted(line["endpoint"] for line in rollout.log_lines()[before:]) == sorted(endpoints)

    killed: list[int] = []
    killer = threading.Thread(
        target=replicas.kill_first_to_start_a_job, args=(replicas.jobs_started(), killed), daemon=True
    )
    killer.start()
    rewards, metrics = rollout.episodes()
    killer.join(timeout=10)
    assert len(killed) == 1, "no replica started a job"
    dead = endpoints[killed[0]]
    lines = rollout.log_lines()[before + NUM_ENVS :]
    assert rewards == [pytest.approx(COEF)] * NUM_ENVS, "every episode scored by a live replica"
    assert (metrics["vlm_scored"], metrics["vlm_fallback"]) == ([1.0] * NUM_ENVS, [0.0] * NUM_ENVS)
    assert sorted(metrics["vlm_failovers"]) == [0.0, 0.0, 1.0]
    assert [line["fallback"] for line in lines] == [False] * NUM_ENVS
    assert dead not in {line["endpoint"] for line in lines}

    rewards, metrics = rollout.episodes()
    lines = rollout.log_lines()[before + 2 * NUM_ENVS :]
    assert metrics["vlm_failovers"] == [0.0] * NUM_ENVS, "the dead replica is cooling down, not tried"
    assert {line["endpoint"] for line in lines} == set(endpoints) - {dead}
    assert rewards == [pytest.approx(COEF)] * NUM_ENVS


def test_a_rolling_restart_of_one_of_two_replicas_loses_no_episode(
    rollout: FailoverRollout, tmp_path: Path
) -> None:
    two = Replicas(tmp_path, count=2)
    try:
        rollout.point_at(two)
        before = len(rollout.log_lines())
        restarted: list[int] = []
        restarter = threading.Thread(
            target=two.kill_first_to_start_a_job, args=(two.jobs_started(), restarted, True), daemon=True
        )
        restarter.start()
        first = rollout.episodes()
        second = rollout.episodes()  # while the replica drains or starts again
        restarter.join(timeout=300)
        third = rollout.episodes()  # both replicas up again
        lines = rollout.log_lines()[before:]
        index, exit_code = restarted
        drained_log = (tmp_path / f"server{index}.log").read_text()
    finally:
        two.stop()
    for rewards, metrics in (first, second, third):
        assert rewards == [pytest.approx(COEF)] * NUM_ENVS, "every episode scored by the judge"
        assert (metrics["vlm_scored"], metrics["vlm_fallback"]) == ([1.0] * NUM_ENVS, [0.0] * NUM_ENVS)
    assert [line["fallback"] for line in lines] == [False] * (3 * NUM_ENVS)
    assert exit_code == 0 and "drained: every admitted request was answered" in drained_log


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_all_replicas_down_applies_the_failure_policy(
    rollout: FailoverRollout, replicas: Replicas, strict: bool
) -> None:
    for index in range(3):
        replicas.kill(index)
    rollout.point_at(replicas, fail_on_request_error=strict)
    if strict:
        rollout.env.reset()
        with pytest.raises(RewardRequestError) as info:
            rollout.env.chunk_step(idle_actions(NUM_ENVS, STEPS))
        assert info.value.kind == "connection" and info.value.endpoint in replicas.endpoints
        return
    rewards, metrics = rollout.episodes()
    lines = rollout.log_lines()[-NUM_ENVS:]
    assert rewards == [0.0] * NUM_ENVS, "the fallback is the native outcome: the idle robot failed"
    assert metrics["vlm_fallback"] == [1.0] * NUM_ENVS
    assert [(line["fallback"], line["error_kind"], line["endpoint"]) for line in lines] == [
        (True, "connection", None)
    ] * NUM_ENVS
