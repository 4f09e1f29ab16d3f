"""The fine-tune's pure parts: the split, class weights, the readout loss, the class-prior check,
the defaults, an epoch's steps and the held-out numbers. Milliseconds (the readout's torch
arithmetic included)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reward_eval.finetune import settings
from reward_eval.finetune.metrics import audit_cases, judge_block, separation
from reward_eval.finetune.readout import at_class_prior, prior_floor, target_index
from reward_eval.finetune.split import GroupInfo, choose_held_out, class_weights, group_key, held_out_count
from reward_eval.finetune.trainer import step_lr, steps_of
from vlm_reward.judging.probability import RUBRIC_1_TO_5, YES_NO, AnswerTokens, expected_score

# ----------------------------------------------------------------------------- the split


@pytest.mark.parametrize(
    ("groups", "fraction", "expected"),
    [
        (0, 0.25, 0),
        (1, 0.25, 0),
        (2, 0.25, 1),
        (4, 0.25, 1),
        (6, 0.25, 2),
        (10, 0.25, 3),
        (3, 0.0, 0),
        (3, 1.0, 2),
    ],
    ids=["none", "one-group-stays", "two", "four", "six-rounds-half-up", "ten", "zero-fraction", "never-all"],
)
def test_held_out_count_rounds_and_never_takes_every_group(
    groups: int, fraction: float, expected: int
) -> None:
    assert held_out_count(groups, fraction) == expected


def _groups(successes: int, failures: int, task: int = 0) -> list[GroupInfo]:
    made = [GroupInfo(f"state:{task}{i:02d}", task, True) for i in range(successes)]
    return made + [GroupInfo(f"state:{task}{successes + i:02d}", task, False) for i in range(failures)]


def test_held_out_groups_are_drawn_per_kind_and_depend_only_on_the_seed() -> None:
    groups = _groups(4, 4)
    held = choose_held_out(groups, 0.25, (), seed=0)
    assert held == choose_held_out(list(reversed(groups)), 0.25, (), seed=0), (
        "order of the input is irrelevant"
    )
    kinds = {g.key: g.has_success for g in groups}
    assert sorted(kinds[k] for k in held) == [False, True], "one group of each kind (stratified)"
    assert any(choose_held_out(groups, 0.25, (), seed=s) != held for s in range(1, 6)), "the seed draws"


def test_holdout_tasks_take_every_group_of_the_task_and_the_fraction_applies_to_the_rest() -> None:
    groups = _groups(2, 2, task=0) + _groups(2, 1, task=1)
    held = choose_held_out(groups, 0.0, ("1",), seed=0)
    assert held == {g.key for g in groups if g.task_id == 1}
    both = choose_held_out(groups, 0.5, (1,), seed=0)
    assert held < both and len(both - held) == 2, "plus half of task 0's success and failure groups"


def test_the_split_unit_is_the_initial_state_or_else_the_episode() -> None:
    assert group_key(50, "run0/log:3") == "state:50"
    assert group_key(None, "run0/log:3") == "episode:run0/log:3"


def test_class_weights_give_each_class_half_of_the_loss() -> None:
    weights = class_weights([True] * 2 + [False] * 6)
    assert weights == {True: 2.0, False: 8 / 12}
    assert 2 * weights[True] == pytest.approx(6 * weights[False]) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="both classes, got 0 positive and 3 negative"):
        class_weights([False] * 3)


# ----------------------------------------------------------------------------- the readout


class Letters:
    """A tokenizer over single letters and whole words, enough for AnswerTokens."""

    VOCAB = ("yes", "no", "Yes", " no", "1", "2", "3", "4", "5", "x")

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [self.VOCAB.index(text)] if text in self.VOCAB else [9, 9]


@pytest.mark.parametrize(
    ("scale", "label", "expected"),
    [(YES_NO, True, 0), (YES_NO, False, 1), (RUBRIC_1_TO_5, True, 4), (RUBRIC_1_TO_5, False, 0)],
    ids=["yes", "no", "rubric-5", "rubric-1"],
)
def test_a_success_is_trained_towards_the_answer_scored_1_and_a_failure_towards_0(
    scale: Any, label: bool, expected: int
) -> None:
    assert target_index(scale, label) == expected


def test_the_trained_distribution_is_the_servers_readout() -> None:
    """Softmax over the vocabulary, spellings summed, normalised over the answers: the server's
    expected_score, and the loss is minus the target's log share times its weight."""
    import torch

    from reward_eval.finetune.readout import answer_log_shares, expected_scores, weighted_nll

    tokens = AnswerTokens.from_tokenizer(Letters(), YES_NO)
    logits = torch.tensor(
        [[2.0, 0.5, 1.0, -1.0, 0, 0, 0, 0, 0, 3.0], [-1.0, 2.0, 0.0, 1.5, 0, 0, 0, 0, 0, 0.0]]
    )
    shares = answer_log_shares(logits, tokens)
    logp = torch.log_softmax(logits, dim=-1)
    for row in range(2):
        served, _ = expected_score(dict(enumerate(logp[row].tolist())), tokens)
        assert float(expected_scores(shares, YES_NO)[row]) == pytest.approx(served, abs=1e-6)
    p_yes = float(shares[0, 0].exp())
    loss = weighted_nll(shares, [0, 1], [2.0, 0.5])
    assert float(loss[0]) == pytest.approx(-2.0 * math.log(p_yes), rel=1e-5)
    assert float(loss[1]) == pytest.approx(-0.5 * float(shares[1, 1]), rel=1e-5)


def test_the_prior_floor_is_the_entropy_of_the_weighted_positive_share() -> None:
    labels = [True, False, False, False]
    assert prior_floor(labels, [1.5, 0.5, 0.5, 0.5]) == pytest.approx(math.log(2))
    assert prior_floor(labels, [1.0] * 4) == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    assert prior_floor([False, False], [1.0, 1.0]) == 0.0


@pytest.mark.parametrize(
    ("loss", "scores", "verdict"),
    [
        (0.02, [0.98, 0.02, 0.01], None),
        (0.69, [0.51, 0.49, 0.5], "nearly the same score (0.490 to 0.510)"),
        (0.67, [0.9, 0.2, 0.1], "ended at 0.6700, on the class-prior floor 0.6931"),
        (0.60, [0.9, 0.2, 0.1], None),
    ],
    ids=["learnt", "equal-scores", "on-the-floor", "below-the-floor"],
)
def test_a_judge_at_the_class_prior_is_told_apart_from_one_that_learnt(
    loss: float, scores: list[float], verdict: str | None
) -> None:
    found = at_class_prior(loss, math.log(2), scores)
    assert (found is None) == (verdict is None) and (verdict is None or verdict in found)


# ----------------------------------------------------------------------------- defaults


def test_auto_fine_tunes_small_checkpoints_fully_and_real_ones_with_lora() -> None:
    assert settings.resolve_method("auto", 356_160) == "full"
    assert settings.resolve_method("auto", 7_000_000_000) == "lora"
    assert settings.resolve_method("lora", 356_160) == "lora"
    assert (
        settings.resolve_lr(None, "full"),
        settings.resolve_lr(None, "lora"),
        settings.resolve_lr(0.5, "lora"),
    ) == (
        1e-3,
        1e-4,
        0.5,
    )
    with pytest.raises(ValueError, match="unknown method 'adapters'; valid: auto, full, lora"):
        settings.resolve_method("adapters", 1)


@pytest.mark.parametrize(
    ("epochs", "examples", "expected"),
    [(None, 8, 80), (None, 9, 40), (None, 6000, 1), (3, 8, 3)],
    ids=["tiny-one-step-an-epoch", "two-steps-an-epoch", "real-data-set", "given"],
)
def test_the_default_length_is_80_optimizer_steps_in_whole_epochs(
    epochs: int | None, examples: int, expected: int
) -> None:
    assert settings.resolve_epochs(epochs, examples, grad_accum=8) == expected


@pytest.mark.parametrize(
    ("examples", "sizes"),
    [(0, []), (7, [7]), (8, [8]), (9, [5, 4]), (11, [6, 5]), (17, [6, 6, 5]), (24, [8, 8, 8])],
    ids=["none", "one-short-step", "one-full-step", "nine", "eleven", "seventeen", "whole-steps"],
)
def test_an_epochs_steps_are_even_in_size_never_a_lone_example(examples: int, sizes: list[int]) -> None:
    """Issue 55: nine examples at 8 a step were steps of 8 and 1, and the lone example's full-size
    AdamW step kept the tiny judge at the class prior; now 5 and 4, the examples in their order."""
    order = list(range(examples))[::-1]
    steps = steps_of(order, 8)
    assert [len(step) for step in steps] == sizes
    assert [i for step in steps for i in step] == order
    with pytest.raises(ValueError, match="grad_accum must be at least 1"):
        steps_of(order, 0)


# ----------------------------------------------------------------------------- held-out numbers


def _judged(source: str, label: bool, score: float | None, episode: str) -> dict[str, Any]:
    return {
        "source": source,
        "label": label,
        "score": score,
        "episode": episode,
        "task_id": 0,
        "task_text": "t",
    }


JUDGED = [
    _judged("original", True, 0.9, "a"),
    _judged("reversed", False, 0.6, "a"),
    _judged("frozen", False, 0.1, "a"),
    _judged("original", True, 0.4, "b"),
    _judged("reversed", False, None, "b"),  # a failed call: left out
    _judged("failure", False, 0.2, "c"),
]


def test_a_judges_block_has_the_calibration_numbers_and_the_audit_rate_per_row() -> None:
    block = judge_block(JUDGED, ("reversed", "frozen"), threshold=0.5)
    assert (block["n"], block["fallbacks"]) == (6, 1)
    assert block["auroc"] == pytest.approx(5 / 6), "0.4 ranks below 0.6 only"
    assert block["brier"] == pytest.approx((0.01 + 0.36 + 0.01 + 0.36 + 0.04) / 5)
    assert (block["best_f1"], block["best_f1_threshold"]) == (pytest.approx(0.8), 0.4)
    assert block["audit"] == {"original": 0.5, "reversed": 1.0, "frozen": 0.0, "failure": 0.0}


def test_audit_cases_carry_their_episodes_own_score() -> None:
    cases = audit_cases(JUDGED)
    assert [c["original_score"] for c in cases] == [0.9, 0.9, 0.9, 0.4, 0.4, 0.2]
    assert [c["perturbation"] for c in cases] == [j["source"] for j in JUDGED]


def test_the_drop_is_measured_from_the_episode_re_encoded_as_its_counterfactuals_are() -> None:
    """An episode judged as the env sent it and re-encoded: its counterfactuals (re-encoded) drop
    from the re-encoded score, whatever order the two come in."""
    sent = {**_judged("original", True, 0.3, "a"), "encoding": "sent"}
    again = {**_judged("original", True, 0.8, "a"), "encoding": "reencoded"}
    flipped = {**_judged("reversed", False, 0.1, "a"), "encoding": "reencoded"}
    for judged in ([sent, again, flipped], [again, sent, flipped]):
        assert [c["original_score"] for c in audit_cases(judged)] == [0.8, 0.8, 0.8]


def test_separation_is_the_margin_between_the_classes() -> None:
    found = separation([0.9, 0.8, 0.3, 0.1], [True, True, False, False])
    assert found == {"min_success": 0.8, "max_failure": 0.3, "margin": pytest.approx(0.5), "auroc": 1.0}


@pytest.mark.parametrize(
    ("schedule", "step", "expected"),
    [
        ("constant", 0, 1e-4),
        ("constant", 99, 1e-4),
        ("cosine", 0, 1e-4),
        ("cosine", 50, 5e-5),
        ("cosine", 100, 0.0),
    ],
    ids=["constant-first", "constant-last", "cosine-first", "cosine-half-way", "cosine-end"],
)
def test_the_learning_rate_of_a_step(schedule: str, step: int, expected: float) -> None:
    assert step_lr(1e-4, schedule, step, 100) == pytest.approx(expected, abs=1e-12)


def test_an_unknown_learning_rate_schedule_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown learning-rate schedule 'linear'; valid: constant, cosine"):
        step_lr(1e-4, "linear", 0, 10)
