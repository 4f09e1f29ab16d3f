"""Which native successes become canaries, capped per chunk, and the counterfactual. Milliseconds."""

from __future__ import annotations

import numpy as np
import pytest

from vlm_reward.watch.canaries import CanaryPlan, canary_counterfactual


def indexed(n: int) -> list[np.ndarray]:
    """``n`` 2x2 RGB frames, frame ``i`` filled with ``i``."""
    return [np.full((2, 2, 3), i, dtype=np.uint8) for i in range(n)]


def test_every_success_at_rate_one_takes_the_perturbations_in_turn_up_to_the_cap() -> None:
    plan = CanaryPlan(1.0, ["reversed", "frozen", "clipped"], max_per_chunk=2, seed=0)
    first_chunk = [plan.choose() for _ in range(3)]
    plan.new_chunk()
    second_chunk = [plan.choose() for _ in range(2)]
    assert first_chunk == ["reversed", "frozen", None], "the cap: two per chunk"
    assert second_chunk == ["clipped", "reversed"] and plan.capped == 1


def test_rate_zero_draws_nothing() -> None:
    plan = CanaryPlan(0.0, ["frozen"], 5, seed=0)
    assert [plan.choose() for _ in range(20)] == [None] * 20


def test_a_fraction_is_drawn_reproducibly_from_the_seed() -> None:
    def draws(seed: int) -> list[bool]:
        plan = CanaryPlan(0.3, ["frozen"], max_per_chunk=10**6, seed=seed)
        return [plan.choose() is not None for _ in range(2000)]

    assert draws(1) == draws(1) and draws(1) != draws(2)
    assert 0.27 < np.mean(draws(1)) < 0.33


def test_draws_do_not_depend_on_the_cap() -> None:
    """A capped canary is dropped, but the episodes drawn are the same ones."""
    capped, free = CanaryPlan(0.5, ["frozen"], 1, seed=4), CanaryPlan(0.5, ["frozen"], 99, seed=4)
    got = [(capped.choose(), free.choose()) for _ in range(40)]
    assert all(c is None or f is not None for c, f in got)
    assert sum(c is not None for c, _ in got) == 1 and capped.capped == sum(f is not None for _, f in got) - 1


CASES = [
    ("reversed", 10, 4, [9, 6, 3, 0]),  # the 4 frames the client sends (0, 3, 6, 9), backwards
    ("frozen", 10, 4, [0, 0, 0, 0]),
    ("clipped", 10, 4, [0, 3]),
    ("reversed", 3, 16, [2, 1, 0]),  # shorter than nframes: every frame
]


@pytest.mark.parametrize(
    ("name", "n", "nframes", "expected"), CASES, ids=[f"{c[0]}-{c[1]}of{c[2]}" for c in CASES]
)
def test_the_counterfactual_perturbs_the_frames_the_client_sends(
    name: str, n: int, nframes: int, expected: list[int]
) -> None:
    made = canary_counterfactual(indexed(n), "put the soup in the basket", name, nframes)
    assert [int(f[0, 0, 0]) for f in made.frames] == expected
    assert made.task_text == "put the soup in the basket"


def test_wrong_task_needs_another_instruction() -> None:
    frames = indexed(4)
    assert canary_counterfactual(frames, "a", "wrong_task", 16) is None
    assert canary_counterfactual(frames, "a", "wrong_task", 16, hard_negative="b").task_text == "b"
