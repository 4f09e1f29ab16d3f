"""The replicas' plan: counts, GPUs kept apart from the training, CPUs Ray can give, what is printed."""

from __future__ import annotations

import pytest

from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.ray_replicas.plan import Node, PlanError, ReplicaPlan, ReplicaSlot, listen_host, local_slots

NODES = [Node(0, "10.0.0.5", 64.0), Node(1, "10.0.0.6", 64.0)]
SMALL = [Node(0, "192.0.2.2", 2.0)]  # this machine: 2 CPUs
TRAINING = {"actor": {(0, str(g)) for g in range(6)}, "rollout": {(0, str(g)) for g in range(6)}}


def slot(node: int = 0, *gpus: str) -> ReplicaSlot:
    return ReplicaSlot(
        node, NODES[node].ip, f"ray-node-{node}", tuple(gpus), host=listen_host(NODES[node].ip, 2)
    )


def plan(*slots: ReplicaSlot, **settings: object) -> ReplicaPlan:
    values = {"enable": True, "model": "/models/judge", "replicas": len(slots), **settings}
    return ReplicaPlan(RewardServerConfig(**values), "/venv/bin/python", slots)


GOOD = [
    ("one_node_of_8", plan(slot(0, "6"), slot(0, "7")), NODES, TRAINING),
    ("two_nodes", plan(slot(0, "7"), slot(1, "7")), NODES, {"actor": {(0, "0"), (1, "0")}}),
    ("two_gpus_each", plan(slot(1, "0", "1"), gpus_per_replica=2), NODES, TRAINING),
    ("cpu_judges_here", plan(slot(), slot(), gpus_per_replica=0, cpus_per_replica=0), SMALL, {}),
    ("two_cpu_judges_here", plan(slot(), slot(), gpus_per_replica=0, cpus_per_replica=1), SMALL, {}),
]


@pytest.mark.parametrize(("p", "nodes", "others"), [g[1:] for g in GOOD], ids=[g[0] for g in GOOD])
def test_a_plan_that_fits_passes(p: ReplicaPlan, nodes: list[Node], others: dict) -> None:
    p.check(nodes, others)


BAD = [
    (
        "fewer_placed_than_asked",
        plan(slot(0, "7"), replicas=2),
        NODES,
        {},
        "cluster.component_placement.reward_server places 1 replica(s), but reward_server.replicas is 2",
    ),
    (
        "gpu_count",
        plan(slot(0, "6", "7")),
        NODES,
        {},
        "gives replica 0 2 GPU(s) (node 0 (10.0.0.5), GPUs 6,7), but reward_server.gpus_per_replica is 1",
    ),
    (
        "gpu_judge_on_a_node_placement",
        plan(slot(0)),
        NODES,
        {},
        "gives replica 0 0 GPU(s) (node 0 (10.0.0.5), no GPU), but reward_server.gpus_per_replica is 1",
    ),
    (
        "shares_the_actors_gpu",
        plan(slot(0, "5"), slot(0, "7")),
        NODES,
        TRAINING,
        "the judge's GPUs overlap the actor's (node 0 GPU 5); give the judge GPUs of its own",
    ),
    (
        "more_cpus_than_the_node_has",
        plan(slot(), slot(), slot(), gpus_per_replica=0, cpus_per_replica=1),
        SMALL,
        {},
        "3 replica(s) of 1 CPU(s) each on node 0 (192.0.2.2) need 3 CPUs, but it has 2; lower "
        "reward_server.cpus_per_replica",
    ),
]


@pytest.mark.parametrize(("p", "nodes", "others", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_plan_the_cluster_cannot_take_is_refused_in_one_sentence(
    p: ReplicaPlan, nodes: list[Node], others: dict, message: str
) -> None:
    with pytest.raises(PlanError) as info:
        p.check(nodes, others)
    assert message in str(info.value)
    assert str(info.value).endswith(".") and "\n" not in str(info.value)


def test_the_server_args_carry_the_judge_and_the_drain_never_a_key() -> None:
    p = plan(
        slot(0, "6"),
        backend="qwen_vl_hf",
        backend_kwargs={"prompt": "yes_no"},
        drain_timeout_s=12.5,
        server_args=["--max-batch-size", "4"],
        video_root="/shared/videos",
    )
    assert p.server_args() == [
        "--backend", "qwen_vl_hf", "--model", "/models/judge", "--video-root", "/shared/videos",
        "--backend-kwargs", '{"prompt": "yes_no"}', "--drain-timeout", "12.5", "--max-batch-size", "4",
    ]  # fmt: skip


def test_the_description_says_what_runs_where() -> None:
    p = plan(slot(0, "6"), slot(1, "6"), max_restarts=-1)
    assert p.describe() == [
        "2 replica(s) of qwen_vl_vllm serving '/models/judge', 1 GPU(s) and 1 CPU(s) each, run by "
        "/venv/bin/python; Ray restarts a replica without limit; videos sent inline",
        "  replica 0: node 0 (10.0.0.5), GPUs 6, listening on 10.0.0.5",
        "  replica 1: node 1 (10.0.0.6), GPUs 6, listening on 10.0.0.6",
    ]


HOSTS = [("one_node", 1, "127.0.0.1"), ("two_nodes", 2, "10.0.0.5"), ("eight_nodes", 8, "10.0.0.5")]


@pytest.mark.parametrize(("nodes", "host"), [h[1:] for h in HOSTS], ids=[h[0] for h in HOSTS])
def test_a_replica_listens_on_loopback_unless_other_nodes_must_reach_it(nodes: int, host: str) -> None:
    assert listen_host("10.0.0.5", nodes) == host


def test_a_local_ray_s_replicas_listen_on_loopback() -> None:
    slots = local_slots(2, 1, "192.0.2.2", "ray-node-0", ["0", "1"])
    assert [s.host for s in slots] == ["127.0.0.1", "127.0.0.1"]
    assert [s.where() for s in slots] == ["node 0 (192.0.2.2), GPUs 0", "node 0 (192.0.2.2), GPUs 1"]


def test_the_self_test_flags_of_the_served_env_go_before_the_user_s_and_are_described() -> None:
    settings = RewardServerConfig(enable=True, model="/models/judge", replicas=1, server_args=["--self-test"])
    flags = ("--self-test-threshold", "0.3", "--self-test-request", '{"nframes": 8}')
    p = ReplicaPlan(settings, "/venv/bin/python", (slot(0, "6"),), flags)
    assert p.server_args()[-5:] == [*flags, "--self-test"]
    assert p.describe()[-1] == (
        "  their self-test flags (with --self-test in server_args): "
        "--self-test-threshold 0.3 --self-test-request '{\"nframes\": 8}'"
    )


@pytest.mark.parametrize(
    "flag", ["--self-test-threshold", "--self-test-request=1"], ids=["threshold", "request"]
)
def test_the_self_test_flags_the_launcher_sets_cannot_be_given(flag: str) -> None:
    with pytest.raises(ValueError, match="set for every replica by the launcher"):
        RewardServerConfig(enable=True, model="/models/judge", server_args=[flag, "0.3"])
