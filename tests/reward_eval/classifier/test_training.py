"""The training loop's pure parts: the draw that balances the label values, the class-prior floor,
the loss no model goes below and the balanced loss a trained model is judged on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reward_eval.classifier.training import balanced_draw, fitted_loss, irreducible_loss, prior_floor


def binary_draw(labels: np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """The 0/1 draw as issue 38 wrote it: a class with probability 1/2, positives drawn first."""
    positives, negatives = np.flatnonzero(labels > 0.5), np.flatnonzero(labels <= 0.5)
    rng = np.random.default_rng([seed, epoch])
    pick_positive = rng.random(len(labels)) < 0.5
    return np.where(pick_positive, rng.choice(positives, len(labels)), rng.choice(negatives, len(labels)))


def test_a_binary_target_is_drawn_as_it_always_was() -> None:
    labels = (np.random.default_rng(1).random(400) < 0.15).astype(np.float32)
    for epoch in range(3):
        assert np.array_equal(balanced_draw(labels, 0, epoch), binary_draw(labels, 0, epoch))


@pytest.mark.parametrize(
    ("levels", "shares"),
    [((0.0, 1.0), (0.9, 0.1)), ((0.0, 0.5, 1.0), (0.6, 0.35, 0.05))],
    ids=["success", "goal_fraction"],
)
def test_every_label_value_is_drawn_equally_often(levels, shares) -> None:
    labels = np.random.default_rng(2).choice(levels, 30_000, p=shares).astype(np.float32)
    drawn = labels[balanced_draw(labels, seed=0, epoch=0)]
    counts = np.array([(drawn == level).sum() for level in levels])
    assert len(drawn) == len(labels)
    assert np.all(np.abs(counts / len(drawn) - 1 / len(levels)) < 0.02)  # ~8 standard deviations


def test_one_label_value_cannot_be_balanced() -> None:
    with pytest.raises(ValueError, match=r"two label values or more, got only \[0.0\]"):
        balanced_draw(np.zeros(5, dtype=np.float32), 0, 0)


@pytest.mark.parametrize(
    ("labels", "floor"),
    [
        ([0.0, 1.0, 1.0, 0.0, 0.0], math.log(2)),
        ([0.0, 0.5, 1.0, 0.0], math.log(2)),
        ([0.0, 0.5, 0.5], -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))),
        ([1.0, 1.0], 0.0),
    ],
    ids=["binary", "goal-fraction", "no-success-level", "one-value"],
)
def test_prior_floor_is_the_best_constant_answers_loss(labels, floor) -> None:
    assert prior_floor(np.asarray(labels)) == pytest.approx(floor)


LN2 = math.log(2)


@pytest.mark.parametrize(
    ("labels", "loss"),
    [([0.0, 1.0, 1.0], 0.0), ([0.0, 0.5, 1.0, 0.5], LN2 / 3), ([0.5, 0.5], LN2)],
    ids=["binary", "goal-fraction", "all-half"],
)
def test_irreducible_loss_is_the_mean_entropy_of_the_values(labels, loss) -> None:
    assert irreducible_loss(np.asarray(labels)) == pytest.approx(loss)


@pytest.mark.parametrize(
    ("labels", "probabilities", "loss"),
    [
        # a constant answer of the mean value sits on the prior floor, however unbalanced the frames
        ([0.0, 0.0, 0.0, 1.0], [0.5] * 4, LN2),
        ([0.0, 0.5, 1.0], [0.5] * 3, LN2),
        # exact answers reach the irreducible loss
        ([0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0], LN2 / 3),
        # each value's frames weigh as one: the three failures' loss counts once, the success's once
        ([0.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 1.0], LN2 / 2),
    ],
    ids=["constant-binary", "constant-graded", "exact-graded", "values-weigh-equally"],
)
def test_fitted_loss_weighs_each_value_as_the_draw_does(labels, probabilities, loss) -> None:
    assert fitted_loss(np.asarray(labels), np.asarray(probabilities)) == pytest.approx(loss, abs=1e-6)
