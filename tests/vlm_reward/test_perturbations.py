"""The perturbation registry (the audit's counterfactuals, the env's canaries). Milliseconds.

Frames here are tiny arrays whose pixel value is the frame's index, so a perturbation's
output order is read off directly.
"""

from __future__ import annotations

import numpy as np
import pytest

from vlm_reward import perturbations as pt


def indexed(n: int) -> np.ndarray:
    """``n`` 2x2 RGB frames, frame ``i`` filled with the value ``i``."""
    return np.arange(n, dtype=np.uint8)[:, None, None, None].repeat(2, 1).repeat(2, 2).repeat(3, 3)


def order(frames: np.ndarray) -> list[int]:
    return [int(f[0, 0, 0]) for f in frames]


CASES = [
    ("reversed", 5, [4, 3, 2, 1, 0]),
    ("frozen", 4, [0, 0, 0, 0]),
    ("clipped", 5, [0, 1]),
    ("clipped", 1, [0]),  # at least one frame
    ("shuffled", 6, [4, 0, 5, 2, 3, 1]),  # np.random.default_rng([0, 7]).permutation(6)
]


@pytest.mark.parametrize(("name", "n", "expected"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_perturbation_reorders_the_frames_as_its_docstring_says(
    name: str, n: int, expected: list[int]
) -> None:
    source = pt.Source(indexed(n), "put the soup in the basket", "put the butter in the basket", (0, 7))
    made = pt.perturb(name, source)
    assert order(made.frames) == expected
    assert made.task_text == "put the soup in the basket", "only wrong_task changes the instruction"
    assert made.frames.shape[1:] == (2, 2, 3)


def test_shuffled_is_a_pure_function_of_the_seed() -> None:
    frames = indexed(10)
    first = pt.perturb("shuffled", pt.Source(frames, "t", None, (3, 1))).frames
    again = pt.perturb("shuffled", pt.Source(frames, "t", None, (3, 1))).frames
    other = pt.perturb("shuffled", pt.Source(frames, "t", None, (3, 2))).frames
    assert order(first) == order(again) and order(first) != order(other)
    assert sorted(order(first)) == list(range(10)), "a permutation: every frame once"


@pytest.mark.parametrize(
    ("negative", "expected"),
    [("put the butter in the basket", "put the butter in the basket"), (None, None)],
    ids=["other-task", "no-other-task"],
)
def test_wrong_task_keeps_the_frames_and_swaps_the_instruction(
    negative: str | None, expected: str | None
) -> None:
    frames = indexed(3)
    made = pt.perturb("wrong_task", pt.Source(frames, "put the soup in the basket", negative))
    if expected is None:
        assert made is None
        return
    assert made.task_text == expected and made.frames is frames


def test_the_registered_perturbations_in_order_with_a_line_each() -> None:
    assert pt.perturbation_names() == ("reversed", "frozen", "clipped", "shuffled", "wrong_task")
    assert pt.describe("frozen") == "The first frame held for the whole clip: nothing happened."


def test_a_new_perturbation_is_one_registered_function(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pt, "_REGISTRY", dict(pt._REGISTRY))

    @pt.register_perturbation("last_only")
    def last_only(source: pt.Source) -> pt.Counterfactual:
        """The last frame alone."""
        return pt.Counterfactual(source.frames[-1:], source.task_text)

    assert pt.perturbation_names()[-1] == "last_only"
    assert order(pt.perturb("last_only", pt.Source(indexed(4), "t")).frames) == [3]
    with pytest.raises(ValueError, match="'last_only' is already registered"):
        pt.register_perturbation("last_only")(last_only)
    with pytest.raises(ValueError, match="'failure' is already registered"):
        pt.register_perturbation(pt.FAILURE)(last_only)


def test_an_unknown_perturbation_names_the_valid_ones() -> None:
    with pytest.raises(KeyError, match="unknown perturbation 'mirror'; valid: reversed, frozen, clipped"):
        pt.perturb("mirror", pt.Source(indexed(2), "t"))
