"""``BackendSlot.admit``: one step decides whether a request may queue, in a fixed order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from vlm_reward.backends import RewardBackend, ScoreJob
from vlm_reward.errors import BackendError, BackendLoadingError, InvalidRequestError, LimitExceededError
from vlm_reward.server.backend_slot import BackendSlot
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.limits import RequestLimits


class Budgeted(RewardBackend):
    """Generates ``max_new_tokens`` tokens (default 8); serves the text modes only."""

    name = "budgeted"

    def load(self) -> None:
        pass

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        return ["<answer>1</answer>"] * len(jobs)

    def token_budget(self, backend_kwargs: Mapping[str, Any]) -> int:
        budget = backend_kwargs.get("max_new_tokens", 8)
        if not isinstance(budget, int):
            raise TypeError(f"max_new_tokens must be an int, got {budget!r}.")
        return budget


LIMITS = RequestLimits(max_new_tokens=16)


@pytest.fixture(scope="module")
def slot() -> Iterator[BackendSlot]:
    config = ServerConfig(backend="budgeted", model="/models/x", limits=LIMITS)
    slot = BackendSlot("budgeted", Budgeted("/models/x"), config)
    slot.load()
    yield slot
    slot.close()


# (kwargs, score_mode, the error admit raises first); a request wrong twice gets the budget's.
REFUSALS = [
    ({"max_new_tokens": 17}, None, LimitExceededError),
    ({"max_new_tokens": "x"}, None, BackendError),
    ({}, "probability", InvalidRequestError),
    ({"max_new_tokens": 17}, "probability", LimitExceededError),
]


@pytest.mark.parametrize(
    ("kwargs", "mode", "error"), REFUSALS, ids=["over_budget", "bad_kwargs", "mode", "budget_before_mode"]
)
def test_admit_refuses_in_order(slot: BackendSlot, kwargs: dict, mode: str | None, error: type) -> None:
    with pytest.raises(error):
        slot.admit(8, kwargs, mode, LIMITS)


def test_admit_returns_what_the_job_needs(slot: BackendSlot) -> None:
    admitted = slot.admit(4, {"max_new_tokens": 16}, None, LIMITS)
    assert (admitted.backend, admitted.model, admitted.score_mode) == ("budgeted", "x", "auto")
    assert admitted.runner is slot.runner
    assert admitted.frames(10) == [0, 3, 6, 9]  # the backend's choice for the request's nframes


def test_a_loading_backend_is_refused_before_anything_else() -> None:
    loading = BackendSlot(
        "budgeted", Budgeted("/m"), ServerConfig(backend="budgeted", model="/m", limits=LIMITS)
    )
    with pytest.raises(BackendLoadingError):
        loading.admit(8, {"max_new_tokens": 17}, "probability", LIMITS)
