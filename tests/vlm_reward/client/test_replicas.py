"""Unit tests for vlm_reward.client.replicas.ReplicaPool: the choice of replica, cool-downs, counts."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from vlm_reward.client.replicas import ReplicaPool

A, B, C = "http://a/score", "http://b/score", "http://c/score"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pool(clock: Clock) -> Iterator[ReplicaPool]:
    yield ReplicaPool([A, B, C], cooldown_s=30.0, clock=clock)


def test_an_idle_pool_is_used_round_robin(pool: ReplicaPool) -> None:
    chosen = []
    for _ in range(6):
        endpoint = pool.order(set())
        with pool.request(endpoint):
            chosen.append(endpoint)
    assert chosen == [A, B, C, A, B, C]


def test_the_replica_with_fewest_in_flight_wins(pool: ReplicaPool) -> None:
    with ExitStack() as stack:
        stack.enter_context(pool.request(A))
        stack.enter_context(pool.request(A))
        stack.enter_context(pool.request(B))
        assert pool.order(set()) == C
        stack.enter_context(pool.request(C))
        assert pool.order(set()) in (B, C) and pool.order(set()) != A


def test_a_failed_replica_sits_out_its_cool_down_then_returns(pool: ReplicaPool, clock: Clock) -> None:
    pool.failed(A, will_fail_over=True)
    assert [pool.order(set()) for _ in range(3)] == [B, B, B]  # nothing in flight: B stays first
    assert pool.order({B, C}) == A  # all others tried: a cooling replica is still tried
    clock.now += 30.1
    assert pool.order({B}) == A  # cooled down, and chosen least recently
    assert pool.failovers == 1


def test_every_replica_tried_gives_none(pool: ReplicaPool) -> None:
    assert pool.order({A, B, C}) is None


def test_when_all_cool_down_the_soonest_back_goes_first(pool: ReplicaPool, clock: Clock) -> None:
    pool.failed(B, will_fail_over=True)
    clock.now += 5
    pool.failed(A, will_fail_over=True)
    clock.now += 5
    pool.failed(C, will_fail_over=False)
    assert [pool.order(set()), pool.order({B}), pool.order({B, A})] == [B, A, C]


def test_success_ends_a_cool_down(pool: ReplicaPool) -> None:
    pool.failed(A, will_fail_over=True)
    pool.succeeded(A)
    assert pool.order(set()) == A


def test_counts_per_replica(pool: ReplicaPool) -> None:
    for endpoint in (A, A, B):
        with pool.request(endpoint):
            pass
    pool.failed(B, will_fail_over=True)
    assert pool.snapshot() == {
        A: {"requests": 2, "failures": 0},
        B: {"requests": 1, "failures": 1},
        C: {"requests": 0, "failures": 0},
    }


def test_counts_survive_concurrent_requests(pool: ReplicaPool) -> None:
    def one(_: int) -> None:
        endpoint = pool.order(set())
        with pool.request(endpoint):
            pass

    with ThreadPoolExecutor(8) as threads:
        list(threads.map(one, range(300)))
    assert sum(s["requests"] for s in pool.snapshot().values()) == 300


@pytest.mark.parametrize(
    ("endpoints", "message"),
    [([], "at least one endpoint"), ([A, A], "lists an endpoint twice")],
    ids=["empty", "dup"],
)
def test_bad_endpoint_lists_are_rejected(endpoints: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReplicaPool(endpoints, cooldown_s=1.0)
