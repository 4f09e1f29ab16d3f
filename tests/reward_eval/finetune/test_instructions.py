"""The wrong instructions a success trains against: never a measured text, never true of it, drawn
reproducibly (pure; milliseconds)."""

from __future__ import annotations

import pytest

from reward_eval.finetune.instructions import (
    basket_objects,
    draw_wrong_instructions,
    pair_of,
    training_pool,
)

LIBERO_10_BASKET = (
    "put both the alphabet soup and the tomato sauce in the basket",
    "put both the cream cheese box and the butter in the basket",
    "put both the alphabet soup and the cream cheese box in the basket",
)
MEASURED = (*LIBERO_10_BASKET, "turn on the stove and put the moka pot on it")
SINGLES = ("pick up the ketchup and put it in the basket", "pick up the milk and put it in the basket")
OTHERS = (
    "open the top drawer of the cabinet",
    "pick up the milk and put it in the basket",
    "turn on the stove",
)


def test_the_objects_are_read_from_both_basket_wordings() -> None:
    assert basket_objects([*LIBERO_10_BASKET, *SINGLES, "turn on the stove"]) == [
        "alphabet soup",
        "butter",
        "cream cheese box",
        "ketchup",
        "milk",
        "tomato sauce",
    ]


@pytest.mark.parametrize("own", LIBERO_10_BASKET, ids=["task0", "task1", "task7"])
def test_the_pool_holds_no_measured_text_and_no_text_true_of_the_success(own: str) -> None:
    objects = basket_objects([*LIBERO_10_BASKET, *SINGLES])
    pairs, others = training_pool(own, objects, [*OTHERS, *MEASURED], MEASURED)
    measured_pairs = {pair_of(t) for t in MEASURED} - {None}
    assert all(pair_of(t) not in measured_pairs for t in pairs), "no measured pair, in either order"
    assert len(pairs) == len(objects) * (len(objects) - 1) - 2 * len(measured_pairs), (
        "both orders of the rest"
    )
    assert others == ["open the top drawer of the cabinet", "turn on the stove"], (
        "no basket text, none measured"
    )
    assert own not in pairs + others


def test_a_draw_is_half_pairs_without_repeats_and_the_same_for_the_same_seed() -> None:
    pairs, others = [f"pair {i}" for i in range(10)], [f"other {i}" for i in range(10)]
    drawn = draw_wrong_instructions(pairs, others, 5, (0, 3, 1))
    assert sum(t.startswith("pair") for t in drawn) == 3 and len(set(drawn)) == 5
    assert drawn == draw_wrong_instructions(pairs, others, 5, (0, 3, 1))
    assert drawn != draw_wrong_instructions(pairs, others, 5, (0, 4, 1)), "another episode, another draw"
    assert draw_wrong_instructions(pairs[:1], others[:1], 4, (0,)) == ["pair 0", "other 0"], "pools run out"
    with pytest.raises(ValueError, match="must be 0 or more, got -1"):
        draw_wrong_instructions(pairs, others, -1, (0,))
