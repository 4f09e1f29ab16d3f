"""Intervals that respect a learning comparison's design (reward_eval/analysis/grouped_stats.py; pure,
milliseconds): the rise, the paired endpoint and the judge's pooled rates on hand-made runs."""

from __future__ import annotations

from typing import Any

import pytest

from reward_eval.analysis.grouped_stats import (
    Interval,
    interval_text,
    paired_endpoint,
    pooled_rate,
    rise,
)


def run(*steps: str, judged: tuple[str, ...] | None = None) -> list[list[list[dict[str, Any]]]]:
    """A run from strings: a step is its groups' outcomes separated by spaces (``"11000000 11111111"``:
    two groups of 8, the first with 2 successes); ``judged`` the verdicts, laid out the same."""
    verdicts = judged or tuple(" ".join("-" * len(g) for g in s.split()) for s in steps)
    return [
        [
            [
                {"success": o == "1", "judged": None if v == "-" else v == "1"}
                for o, v in zip(g, j, strict=True)
            ]
            for g, j in zip(s.split(), v_step.split(), strict=True)
        ]
        for s, v_step in zip(steps, verdicts, strict=True)
    ]


def one_episode_groups(steps: list) -> list:
    """The same episodes, each its own group: what an episode-level bootstrap would resample."""
    return [[[e] for group in step for e in group] for step in steps]


# Groups all-0 or all-1 inside: the 8 episodes of a group are one draw, not 8.
ALL_OR_NONE = run(
    "00000000 11111111", "00000000 00000000", "11111111 11111111", "11111111 00000000", "11111111 11111111"
)
MIXED = run(
    "11000000 10000000", "11100000 01000000", "11110000 11111100", "11111000 01111100", "11111110 11101111"
)


@pytest.mark.parametrize(
    ("steps", "first", "last", "before", "after", "gap_closed", "episodes", "groups"),
    [
        (ALL_OR_NONE, 2, 3, 8 / 32, 40 / 48, (40 / 48 - 8 / 32) / (24 / 32), (32, 48), (4, 6)),
        (MIXED, 2, 3, 7 / 32, 34 / 48, (34 / 48 - 7 / 32) / (25 / 32), (32, 48), (4, 6)),
        (MIXED, 1, 1, 3 / 16, 14 / 16, (14 / 16 - 3 / 16) / (13 / 16), (16, 16), (2, 2)),
        # pooled over episodes, not a mean of group rates (that would be 0.5 and 0.75, a rise)
        (run("1111 00", "1 1100"), 1, 1, 4 / 6, 3 / 5, (3 / 5 - 4 / 6) / (2 / 6), (6, 5), (2, 2)),
        (run("0000 0000", "1000 0000"), 1, 1, 0.0, 1 / 8, 1 / 8, (8, 8), (2, 2)),  # from 0: the rise
        (run("1111 1111", "1111 1111", "1100 1111"), 2, 1, 1.0, 6 / 8, None, (16, 8), (4, 2)),  # no gap
    ],
    ids=["all-or-none", "mixed", "first-1-last-1", "pooled-over-episodes", "from-zero", "from-one-no-gap"],
)
def test_rise_pools_each_period_over_its_episodes(
    steps, first, last, before, after, gap_closed, episodes, groups
) -> None:
    r = rise(steps, first, last)
    assert (r.before, r.after) == pytest.approx((before, after), abs=1e-12)
    assert r.rise.estimate == pytest.approx(after - before, abs=1e-12)
    if gap_closed is None:
        assert r.gap_closed is None
    else:
        assert r.gap_closed == pytest.approx(gap_closed, abs=1e-12)
    assert (r.episodes_before, r.episodes_after) == episodes and (r.groups_before, r.groups_after) == groups


JUDGED_RUN = run(
    "11000000 11111111",
    "00000000 11110000",
    judged=("11100000 11111110", "10000000 11111111"),
)


@pytest.mark.parametrize(
    ("compute", "estimate"),
    [
        (lambda **kw: rise(MIXED, **kw).rise, 34 / 48 - 7 / 32),
        (lambda **kw: paired_endpoint({0: MIXED}, {0: ALL_OR_NONE}, **kw).difference, 34 / 48 - 40 / 48),
        (lambda **kw: pooled_rate(JUDGED_RUN, "false_positive_rate", **kw), 6 / 18),
        (lambda **kw: pooled_rate(JUDGED_RUN, "recall", **kw), 13 / 14),
    ],
    ids=["rise", "paired-endpoint", "false-positive-rate", "recall"],
)
def test_an_interval_holds_its_estimate_and_narrows_with_its_level(compute, estimate: float) -> None:
    wide, narrow = compute(), compute(level=0.5)
    assert wide.estimate == narrow.estimate == pytest.approx(estimate, abs=1e-12)
    assert wide.low < wide.estimate < wide.high and wide.level == 0.95
    assert wide.low <= narrow.low <= narrow.high <= wide.high and narrow.level == 0.5
    assert narrow.high - narrow.low < wide.high - wide.low


@pytest.mark.parametrize(
    ("compute", "steps", "widest_naive"),
    [
        (lambda s: rise(s).rise, ALL_OR_NONE, 0.4),
        (
            lambda s: pooled_rate(s, "recall"),
            run("11111111 11111111", "11111111 11111111", judged=("11111111 00000000", "11111111 11111111")),
            0.35,
        ),
    ],
    ids=["rise", "recall"],
)
def test_groups_that_agree_inside_make_the_cluster_interval_wider_than_the_episode_level_one(
    compute, steps, widest_naive: float
) -> None:
    """The point of resampling groups: with each group all-0 or all-1, its 8 episodes say one thing."""
    cluster, naive = compute(steps), compute(one_episode_groups(steps))
    assert cluster.estimate == naive.estimate
    assert naive.high - naive.low < widest_naive
    assert cluster.high - cluster.low > 2 * (naive.high - naive.low)


def test_identical_runs_differ_by_exactly_zero_with_a_degenerate_interval() -> None:
    """Paired by (step, group), the groups' differences are all 0: no draw can make another."""
    endpoint = paired_endpoint({0: MIXED, 3: ALL_OR_NONE}, {0: MIXED, 3: ALL_OR_NONE})
    assert endpoint.per_seed == {0: 0.0, 3: 0.0} and endpoint.last == 3
    assert endpoint.difference == Interval(0.0, 0.0, 0.0, 0.95)


@pytest.mark.parametrize(
    ("judged", "native", "last", "per_seed"),
    [
        ({0: MIXED, 1: ALL_OR_NONE}, {0: ALL_OR_NONE, 1: MIXED}, 3, {0: -6 / 48, 1: 6 / 48}),
        # the steps before the last ones do not count
        ({5: run("1111 1111", "1100 0000")}, {5: run("0000 0000", "1000 0000")}, 1, {5: 1 / 8}),
        ({5: run("1111 1111", "1100 0000")}, {5: run("0000 0000", "1000 0000")}, 2, {5: 9 / 16}),
    ],
    ids=["two-seeds-last-3", "last-1", "last-2"],
)
def test_the_paired_endpoint_is_the_mean_of_the_seeds_last_steps_differences(
    judged, native, last: int, per_seed: dict[int, float]
) -> None:
    endpoint = paired_endpoint(judged, native, last)
    assert endpoint.per_seed == pytest.approx(per_seed, abs=1e-12)
    assert endpoint.difference.estimate == pytest.approx(sum(per_seed.values()) / len(per_seed), abs=1e-12)


def test_the_two_stages_resample_the_seeds_then_the_groups_within_each() -> None:
    """Seeds whose every pair differs alike leave only the seed stage: draws of seeds {0, 0}, {0, 1},
    {1, 1} give +0.5, +0.125, -0.25, so the 95% interval spans the two seeds. One seed whose pairs
    differ leaves only the group stage: an interval around its difference."""
    judged = {0: run("11111111 11111111", "11111111 11111111"), 1: run("0000 0000", "0000 0000")}
    native = {0: run("11111111 11111111", "11110000 11110000"), 1: run("0000 0000", "1000 1000")}
    seeds = paired_endpoint(judged, native, last=1)
    assert seeds.per_seed == {0: 0.5, 1: -0.25}
    assert seeds.difference == Interval(0.125, -0.25, 0.5, 0.95)
    groups = paired_endpoint({0: MIXED}, {0: ALL_OR_NONE}, last=3).difference
    assert groups.low < groups.estimate < groups.high


@pytest.mark.parametrize(
    ("judged", "native", "problem"),
    [
        ({0: MIXED, 1: MIXED}, {0: MIXED}, r"seeds \[1\] are not in both"),
        ({0: MIXED}, {0: MIXED, 2: MIXED, 4: MIXED}, r"seeds \[2, 4\] are not in both"),
        ({}, {}, "needs at least one seed"),
        ({0: MIXED}, {0: MIXED[:4]}, "seed 0: the judged run has 5 steps and the native run 4"),
        (
            {0: run("11 00", "11 00", "11 00")},
            {0: run("11 00", "11 00", "1100")},
            "seed 0: step 2 has 2 groups",
        ),
        ({0: MIXED[:2]}, {0: MIXED[:2]}, "seed 0: the runs have 2 steps, fewer than last = 3"),
    ],
    ids=[
        "missing-native",
        "missing-judged",
        "no-seed",
        "different-lengths",
        "different-groups",
        "too-few-steps",
    ],
)
def test_runs_that_cannot_be_paired_are_refused_in_one_sentence(judged, native, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        paired_endpoint(judged, native)


@pytest.mark.parametrize(
    ("steps", "kind", "estimate"),
    [
        (JUDGED_RUN, "false_positive_rate", 6 / 18),
        (JUDGED_RUN, "recall", 13 / 14),
        (run("1111 1111", judged=("1011 0000",)), "false_positive_rate", None),  # no simulator failure
        (run("1111 1111", judged=("1011 0000",)), "recall", 3 / 8),
        (run("0000 0000", judged=("1011 0000",)), "recall", None),  # no simulator success
        (run("0000 0000", judged=("1011 0000",)), "false_positive_rate", 3 / 8),
    ],
    ids=["fpr", "recall", "fpr-no-failure", "recall-all-succeed", "recall-no-success", "fpr-all-fail"],
)
def test_pooled_rates_count_the_judges_yes_among_one_simulator_class(steps, kind, estimate) -> None:
    rate = pooled_rate(steps, kind)
    if estimate is None:
        assert rate is None
    else:
        assert rate is not None and rate.estimate == pytest.approx(estimate, abs=1e-12)


@pytest.mark.parametrize(
    "compute",
    [
        lambda **kw: rise(MIXED, **kw).rise,
        lambda **kw: paired_endpoint({0: MIXED, 1: ALL_OR_NONE}, {0: ALL_OR_NONE, 1: MIXED}, **kw).difference,
        lambda **kw: pooled_rate(JUDGED_RUN, "recall", **kw),
    ],
    ids=["rise", "paired-endpoint", "recall"],
)
def test_the_same_seed_gives_the_same_interval_and_another_seed_another(compute) -> None:
    """10,000 draws of these small runs' few distinct values land on the same percentiles from any
    seed; 40 draws do not, so they show that the seed drives the draws."""
    assert compute(seed=0) == compute(seed=0)
    assert compute(seed=0, resamples=40) == compute(seed=0, resamples=40)
    assert compute(seed=0, resamples=40) != compute(seed=1, resamples=40)


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (lambda: rise(MIXED, first=3, last=3), "a rise needs at least first \\+ last = 6 steps, got 5"),
        (lambda: rise(MIXED, first=0), "first must be at least 1, got 0"),
        (lambda: rise(MIXED, level=1.0), "level must be strictly between 0 and 1, got 1.0"),
        (lambda: rise(MIXED, resamples=0), "resamples must be a positive int, got 0"),
        (lambda: rise([[[{"success": 1}]]] * 5), "step 0 group 0 has 'success' = 1: expected a bool"),
        (lambda: rise([[]] * 5), "step 0 has no groups"),
        (lambda: rise([[[]]] * 5), "group 0 of step 0 has no episodes"),
        (lambda: pooled_rate(MIXED, "precision"), "kind must be one of .*, got 'precision'"),
        (lambda: pooled_rate(MIXED, "recall"), "step 0 group 0 has 'judged' = None: .*a native run has no"),
    ],
    ids=[
        "periods-overlap",
        "first-0",
        "level-1",
        "no-resamples",
        "success-not-bool",
        "step-without-groups",
        "group-without-episodes",
        "unknown-kind",
        "native-run-has-no-verdicts",
    ],
)
def test_bad_input_is_a_value_error_naming_the_value(call, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        call()


@pytest.mark.parametrize(
    ("interval", "signed", "text"),
    [
        (Interval(0.31, 0.12, 0.48), True, "+0.31 [+0.12, +0.48]"),
        (Interval(-0.05, -0.2, 0.1), True, "-0.05 [-0.20, +0.10]"),
        (Interval(0.31, 0.12, 0.48), False, "0.31 [0.12, 0.48]"),
        (None, True, "n/a"),
    ],
    ids=["rise", "fall", "rate", "nothing-to-estimate"],
)
def test_an_interval_renders_as_estimate_then_bounds(interval, signed: bool, text: str) -> None:
    assert interval_text(interval, signed=signed) == text
    if interval is not None and signed:
        assert str(interval) == text
