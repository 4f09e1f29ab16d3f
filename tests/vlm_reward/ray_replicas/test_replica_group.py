"""Replicas on a real private Ray cluster: keyed servers on 127.0.0.1 (one node), a replica whose
process dies comes back on the same endpoint (its server never outlives it), a judge that cannot
load is reported with the server's own sentence, and stopping drains every server.

The judge is the ``fixed_score`` test backend; the training's use of all this is tested by the
CPU smoke run (tests/examples/test_training_smoke.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from tests.support.server import TEST_PLUGINS, running_servers
from vlm_reward.protocol import authorization
from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.ray_replicas.plan import ReplicaPlan, local_slots
from vlm_reward.tools.server_process import route_url

ray = pytest.importorskip("ray")
from vlm_reward.ray_replicas.group import ReplicaGroup, ReplicaStartError, this_node  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def node() -> Iterator[tuple[str, str, list[str]]]:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield this_node()
    finally:
        ray.shutdown()


def plan(node: tuple[str, str, list[str]], replicas: int, **backend_kwargs: object) -> ReplicaPlan:
    settings = RewardServerConfig(
        enable=True,
        backend="fixed_score",
        model="m",
        plugins=list(TEST_PLUGINS),
        backend_kwargs=backend_kwargs,
        replicas=replicas,
        gpus_per_replica=0,
        cpus_per_replica=0,
        drain_timeout_s=5,
        start_timeout_s=60,
    )
    ip, node_id, _ = node
    return ReplicaPlan(settings, settings.check_judge(), local_slots(replicas, 0, ip, node_id))


def backends(endpoint: str, key: str | None) -> int:
    headers = {"Authorization": authorization(key)} if key else {}
    return requests.get(route_url(endpoint, "/backends"), headers=headers, timeout=10).status_code


def test_a_replica_whose_process_dies_comes_back_on_its_endpoint_and_stop_drains_all(
    node, tmp_path: Path
) -> None:
    key = secrets.token_urlsafe(32)
    group = ReplicaGroup(plan(node, 2), tmp_path, key)
    try:
        first = group.start()
        assert [info.index for info in first] == [0, 1] and len(set(group.endpoints)) == 2
        assert all(e.startswith("http://127.0.0.1:") for e in group.endpoints), "one node: on loopback"
        assert [backends(e, key) for e in group.endpoints] == [200, 200]
        assert backends(group.endpoints[0], None) == 401, "a replica listens beyond loopback: keyed"
        server = psutil.Process(first[0].server_pid)
        actor = server.parent()
        actor.kill()  # the replica's actor process dies: its server goes with it, Ray restarts it
        server.wait(timeout=30)
        again = ray.get(group.actors[0].info.remote(), timeout=120)
        assert again.restarted and again.endpoint == first[0].endpoint and again.server_pid != server.pid
        assert backends(again.endpoint, key) == 200
        assert len(running_servers()) == 2
    finally:
        codes = group.stop()
    assert codes == [0, 0], "both servers drained and exited 0"
    deadline = time.monotonic() + 30
    while running_servers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running_servers()


def test_a_judge_that_cannot_load_stops_the_group_with_the_servers_sentence(
    node: tuple[str, str, list[str]], tmp_path: Path
) -> None:
    group = ReplicaGroup(plan(node, 2, load_error="the weights are missing"), tmp_path, "k" * 32)
    with pytest.raises(ReplicaStartError) as info:
        group.start()
    said = "did not start: backend 'fixed_score' failed to load: RuntimeError: the weights are missing; see "
    assert said in str(info.value)
    assert "see " in str(info.value) and str(tmp_path) in str(info.value), "it names the server's log"
    deadline = time.monotonic() + 30
    while running_servers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running_servers() and not group.actors
