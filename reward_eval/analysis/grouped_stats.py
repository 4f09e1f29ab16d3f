"""Rates of a learning comparison with intervals that respect how its episodes were drawn: pure, numpy.

The design: a GRPO run trains the policy once per reward setting (the native run, on the
simulator's reward, and judged runs), each at a few seeds. A run's step plays its episodes in GRPO
groups, and a group's episodes (8 of 16 per step) start from one initial state, so they succeed or
fail together more often than independent episodes would: a group, not an episode, is one draw.
Runs at the same seed share their first step, and group ``g`` of step ``k`` starts from the same
initial state in every run: the runs are paired by (seed, step, group).

A run's outcomes are ``steps[k][g]``, the episodes of group ``g`` at step ``k`` (steps from the
first), each a mapping with ``"success"`` (bool, the simulator's) and ``"judged"`` (bool, the
judge's verdict; ``None`` in a native run).

Every interval is a percentile bootstrap that resamples whole groups, drawn from
``numpy.random.default_rng(seed)`` (the same arguments give the same interval), vectorised: a call
takes milliseconds. Treating the episodes as independent (a two-proportion test) would count each
group as 8 draws and make the intervals too narrow when its episodes agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Episode = Mapping[str, Any]
Steps = Sequence[Sequence[Sequence[Episode]]]  # steps[k][g]: the episodes of group g at step k
LEVEL = 0.95
RESAMPLES = 10_000
SEED = 0
KINDS = ("false_positive_rate", "recall")


@dataclass(frozen=True)
class Interval:
    """An estimate and the ``level`` interval ``[low, high]`` around it."""

    estimate: float
    low: float
    high: float
    level: float = LEVEL

    def text(self, digits: int = 2, signed: bool = True) -> str:
        """``"+0.31 [+0.12, +0.48]"`` (``signed``: a difference) or ``"0.31 [0.12, 0.48]"`` (a rate)."""
        form = f"{{:{'+' if signed else ''}.{digits}f}}"
        return f"{form.format(self.estimate)} [{form.format(self.low)}, {form.format(self.high)}]"

    def __str__(self) -> str:
        return self.text()


def interval_text(interval: Interval | None, digits: int = 2, signed: bool = True) -> str:
    """:meth:`Interval.text`, or ``"n/a"`` where there is nothing to estimate."""
    return "n/a" if interval is None else interval.text(digits, signed)


@dataclass(frozen=True)
class Rise:
    """Success of the first steps pooled against the last ones, over one run's episodes.

    ``rise`` is ``after - before`` with its cluster-bootstrap interval; ``gap_closed`` the share of
    the gap to 1 the run closed, ``rise / (1 - before)`` (``None`` when ``before`` is 1)."""

    before: float
    after: float
    rise: Interval
    gap_closed: float | None
    episodes_before: int
    episodes_after: int
    groups_before: int
    groups_after: int


@dataclass(frozen=True)
class PairedEndpoint:
    """The primary endpoint: the last steps' success, judged run minus native run, per seed
    (``per_seed``) and their mean (``difference``, with its two-stage bootstrap interval)."""

    per_seed: Mapping[int, float]
    difference: Interval
    last: int


def rise(
    steps: Steps,
    first: int = 2,
    last: int = 3,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Rise:
    """:class:`Rise` of a run's success from its first ``first`` steps to its last ``last``.

    Each period's rate is pooled over its episodes; the interval resamples the groups of each period
    with replacement (the periods independently) and recomputes both pooled rates. ValueError when
    the run has fewer than ``first + last`` steps (the periods would overlap) or a bad episode."""
    _check_options(level, resamples)
    for name, value in (("first", first), ("last", last)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value!r}.")
    if len(steps) < first + last:
        raise ValueError(f"a rise needs at least first + last = {first + last} steps, got {len(steps)}.")
    head, head_n = _groups(steps[:first], "success", offset=0)
    tail, tail_n = _groups(steps[-last:], "success", offset=len(steps) - last)
    before, after = head.sum() / head_n.sum(), tail.sum() / tail_n.sum()
    rng = np.random.default_rng(seed)
    boot = _resampled_ratio(tail, tail_n, resamples, rng) - _resampled_ratio(head, head_n, resamples, rng)
    return Rise(
        before=float(before),
        after=float(after),
        rise=_interval(float(after - before), boot, level),
        gap_closed=None if before == 1.0 else float((after - before) / (1.0 - before)),
        episodes_before=int(head_n.sum()),
        episodes_after=int(tail_n.sum()),
        groups_before=len(head),
        groups_after=len(tail),
    )


def paired_endpoint(
    judged: Mapping[int, Steps],
    native: Mapping[int, Steps],
    last: int = 3,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> PairedEndpoint:
    """The last ``last`` steps' pooled success, judged minus native, paired by seed (the mappings'
    keys) and by (step, group) within a seed.

    A seed's difference is its judged run's pooled success minus its native run's. The interval is a
    two-stage bootstrap of their mean: draw the seeds with replacement, then, within each seed drawn,
    draw its (step, group) pairs with replacement (a pair keeps both runs' groups together, so what
    the shared initial state explains cancels) and recompute the seed's difference.

    What it can say with 2-3 seeds: the seed stage has only 3 (2 seeds) or 10 (3 seeds) distinct
    draws, and a bootstrap of a mean of ``n`` values is narrower than the sampling spread by about
    ``sqrt((n - 1) / n)``, so the interval mostly measures the group-to-group variation within the
    seeds run; it is not a 95% guarantee that another seed's training would differ by as much. With
    one seed it is purely within that seed. Report the per-seed differences beside it.
    ValueError when the seeds differ between the mappings or a seed's runs cannot be paired."""
    _check_options(level, resamples)
    if last < 1:
        raise ValueError(f"last must be at least 1, got {last!r}.")
    missing = sorted(set(judged) ^ set(native))
    if missing:
        raise ValueError(f"seeds {missing} are not in both the judged and the native runs.")
    if not judged:
        raise ValueError("paired_endpoint needs at least one seed, got none.")
    seeds = sorted(judged)
    pairs = [_paired_groups(s, judged[s], native[s], last) for s in seeds]
    per_seed = {s: float(_difference(p, None)) for s, p in zip(seeds, pairs, strict=True)}
    rng = np.random.default_rng(seed)
    n = len(seeds)
    # within[s, b, j]: seed s's difference in resample b if drawn in slot j, each its own redraw
    within = np.stack([_difference(p, rng.integers(0, len(p[0]), (resamples, n, len(p[0])))) for p in pairs])
    drawn = rng.integers(0, n, (resamples, n))
    boot = within[drawn, np.arange(resamples)[:, None], np.arange(n)[None, :]].mean(axis=1)
    estimate = float(np.mean(list(per_seed.values())))
    return PairedEndpoint(per_seed, _interval(estimate, boot, level), last)


def pooled_rate(
    steps: Steps, kind: str, level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> Interval | None:
    """A judge's rate against the simulator, pooled over the episodes of ``steps``: ``kind``
    ``"false_positive_rate"`` (judged yes among simulator failures) or ``"recall"`` (judged yes
    among simulator successes); ``None`` when no episode is of that class.

    The interval resamples groups (a ratio estimator: the judged-yes count over the class count of
    the same groups); a resample whose groups hold no episode of the class has no rate and is left
    out, so the interval is conditional on the class being seen. ValueError for another ``kind`` or
    an episode without a verdict (a native run's)."""
    _check_options(level, resamples)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    target = kind == "recall"  # the simulator outcome whose episodes are counted
    yes, members = [], []
    for k, groups in enumerate(steps):
        for g, episodes in enumerate(groups):
            outcomes = [_flag(e, "success", k, g) for e in episodes]
            verdicts = [_flag(e, "judged", k, g) for e in episodes]
            members.append(sum(o == target for o in outcomes))
            yes.append(sum(o == target and v for o, v in zip(outcomes, verdicts, strict=True)))
    yes_a, members_a = np.asarray(yes, dtype=float), np.asarray(members, dtype=float)
    if members_a.sum() == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(members_a), (resamples, len(members_a)))
    denominators = members_a[idx].sum(axis=1)
    seen = denominators > 0
    boot = yes_a[idx[seen]].sum(axis=1) / denominators[seen]
    return _interval(float(yes_a.sum() / members_a.sum()), boot, level)


# ---- helpers ---------------------------------------------------------------------------------


def _check_options(level: float, resamples: int) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level!r}.")
    if not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive int, got {resamples!r}.")


def _flag(episode: Episode, key: str, step: int, group: int) -> bool:
    """An episode's ``key`` as a bool; ValueError naming the episode's step and group otherwise."""
    value = episode.get(key) if isinstance(episode, Mapping) else None
    if not isinstance(value, bool | np.bool_):
        raise ValueError(
            f"episode of step {step} group {group} has {key!r} = {value!r}: expected a bool "
            f"({'a native run has no verdicts' if key == 'judged' else 'the simulator success'})."
        )
    return bool(value)


def _groups(steps: Steps, key: str, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group of ``steps`` (step-major): the episodes whose ``key`` is true, and the episodes."""
    hits, sizes = [], []
    for k, groups in enumerate(steps, start=offset):
        if len(groups) == 0:
            raise ValueError(f"step {k} has no groups: every step needs at least one.")
        for g, episodes in enumerate(groups):
            if len(episodes) == 0:
                raise ValueError(f"group {g} of step {k} has no episodes: every group needs one.")
            hits.append(sum(_flag(e, key, k, g) for e in episodes))
            sizes.append(len(episodes))
    return np.asarray(hits, dtype=float), np.asarray(sizes, dtype=float)


def _resampled_ratio(
    hits: np.ndarray, sizes: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """The pooled rate of ``resamples`` draws of the groups with replacement."""
    idx = rng.integers(0, len(hits), (resamples, len(hits)))
    return hits[idx].sum(axis=1) / sizes[idx].sum(axis=1)


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # judged hits, sizes; native hits, sizes


def _paired_groups(seed: int, judged: Steps, native: Steps, last: int) -> Pairs:
    """The last ``last`` steps' groups of a seed's two runs, aligned by (step, group)."""
    if len(judged) != len(native):
        raise ValueError(
            f"seed {seed}: the judged run has {len(judged)} steps and the native run {len(native)}; "
            "paired runs need the same steps."
        )
    if len(judged) < last:
        raise ValueError(f"seed {seed}: the runs have {len(judged)} steps, fewer than last = {last}.")
    offset = len(judged) - last
    for k in range(offset, len(judged)):
        if len(judged[k]) != len(native[k]):
            raise ValueError(
                f"seed {seed}: step {k} has {len(judged[k])} groups in the judged run and "
                f"{len(native[k])} in the native run; paired runs need the same groups."
            )
    return (*_groups(judged[offset:], "success", offset), *_groups(native[offset:], "success", offset))


def _difference(pairs: Pairs, idx: np.ndarray | None) -> np.ndarray:
    """Judged minus native pooled success of the pairs, or of each draw of pair indices ``idx``."""
    jh, jn, nh, nn = pairs if idx is None else (a[idx] for a in pairs)
    return jh.sum(axis=-1) / jn.sum(axis=-1) - nh.sum(axis=-1) / nn.sum(axis=-1)


def _interval(estimate: float, boot: np.ndarray, level: float) -> Interval:
    """The percentile interval of the bootstrap draws ``boot`` (degenerate at ``estimate`` if none)."""
    if boot.size == 0:
        return Interval(estimate, estimate, estimate, level)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail])
    return Interval(estimate, float(low), float(high), level)
