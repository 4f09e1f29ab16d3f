"""Native success and VLM/native agreement over a training run, from its log dir.

A run is a log dir as ``run_embodiment.sh`` writes it: TensorBoard event files somewhere
below it and, with the reward model on, ``vlm_episodes_train_rank*.jsonl``.

- **Native success** (a scalar tag, ``env/success_once`` by default): the simulator's
  success, the one number comparable across a native-reward and a VLM-reward run.
- **Agreement** (``env/vlm_native_agree`` by default) of a run that scored episodes. Without
  that scalar it is computed from the episode log in windows of episodes, leaving fallback
  episodes out (they carry the fallback score, not a judgement), as the evaluation report
  does; the scalar, as the env logs it, counts them.
- **The judge's live health** (:class:`HealthCurves`), when the run logged it: the rolling
  false-positive and false-negative rates, the canaries' false-positive rate, each task's
  false-positive rate (the tasks where it was ever above 0) and the step where the reward
  guard tripped (:mod:`vlm_reward.watch.judge_health` defines the metrics).

:func:`read_scalars` and :func:`load_run` read files; :func:`scalar_series`,
:func:`windowed_agreement` and :func:`health_curves` are pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reward_eval.analysis.episode_log import load_train_episodes
from reward_eval.analysis.judges import judges_of
from reward_eval.analysis.metrics import Record, as_records
from vlm_reward.watch.judge_health import TASK_FALSE_POSITIVE_PREFIX

NATIVE_TAG = "env/success_once"
AGREE_TAG = "env/vlm_native_agree"
STEP_UNIT = "training step"
FALSE_POSITIVE_TAG = "env/vlm_false_positive_rate"
FALSE_NEGATIVE_TAG = "env/vlm_false_negative_rate"
CANARY_TAG = "env/vlm_canary_false_positive_rate"
CANARY_COUNT_TAG = "env/vlm_canaries"
SUCCESSES_TAG = "env/vlm_window_native_successes"  # the false-negative rate's denominator
GUARD_TAG = "env/vlm_guard_tripped"
TASK_TAG_PREFIX = f"env/{TASK_FALSE_POSITIVE_PREFIX}/"


@dataclass(frozen=True)
class Series:
    """A curve: ``y`` over ``x``, with the unit of ``x`` and where it came from."""

    x: np.ndarray
    y: np.ndarray
    unit: str
    source: str


@dataclass(frozen=True)
class HealthCurves:
    """The judge's live health over training steps, as the env logged it."""

    false_positive: Series
    false_negative: Series | None  # None when no native success was ever in the window
    canary_false_positive: Series | None  # None when no canary was judged
    per_task: dict[int, Series]  # task id -> false-positive rate, for tasks where it was ever > 0
    guard_tripped_at: int | None  # the first step with env/vlm_guard_tripped > 0


@dataclass(frozen=True)
class RunCurves:
    """What one run contributes to the comparison."""

    label: str
    log_dir: Path
    native: Series
    agreement: Series | None
    judges: tuple[dict[str, Any], ...] = ()  # who scored its episodes (:func:`..judges.judges_of`)
    health: HealthCurves | None = None  # None: the run logged no live health metrics


def read_scalars(log_dir: Path) -> dict[str, dict[int, float]]:
    """Every scalar of every event file below ``log_dir``: ``{tag: {step: value}}``.

    Files are read in the order they were created (:func:`_creation_order`), so when a resumed
    run logs a step twice the later value wins.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars: dict[str, dict[int, float]] = {}
    for path in sorted(Path(log_dir).rglob("events.out.tfevents.*"), key=_creation_order):
        accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0})  # 0: keep all
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            scalars.setdefault(tag, {}).update({e.step: e.value for e in accumulator.Scalars(tag)})
    return scalars


def _creation_order(path: Path) -> tuple[int, int, str]:
    """An event file's ``(second, writer number, name)`` from its name
    (``events.out.tfevents.<second>.<host>.<pid>.<n>``): writers opened in one second are told
    apart by their number, compared as a number (``10`` after ``9``)."""
    parts = path.name.split(".")
    second = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0
    number = int(parts[-1]) if parts[-1].isdigit() else 0
    return second, number, path.name


def scalar_series(scalars: Mapping[str, Mapping[int, float]], tag: str) -> Series | None:
    """The scalar ``tag`` by training step, or ``None`` when the run never logged it."""
    if not scalars.get(tag):
        return None
    steps = sorted(scalars[tag])
    values = [scalars[tag][s] for s in steps]
    return Series(np.array(steps), np.array(values, dtype=float), STEP_UNIT, f"scalar {tag}")


def windowed_agreement(records: Sequence[Record], window: int) -> Series | None:
    """Agreement of the judged (non-fallback) episodes, per window of ``window`` episodes.

    Episodes are ordered by (episode counter, rank, env), i.e. by when they were played, as
    all envs advance in lockstep; x is the number of judged episodes at each window's end.
    ``None`` without any judged episode; ``ValueError`` for a ``window`` below 1.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}.")
    ordered = sorted(as_records(records), key=lambda r: (r.episode or 0, r.rank or 0, r.env or 0))
    agree = [bool(r.vlm_success) == r.native_success for r in ordered if not r.fallback]
    if not agree:
        return None
    windows = [agree[start : start + window] for start in range(0, len(agree), window)]
    ends = np.cumsum([len(w) for w in windows])
    means = np.array([np.mean(w) for w in windows], dtype=float)
    unit = f"judged episode (windows of {window})"
    return Series(ends, means, unit, f"JSONL episode log, windows of {window}")


def health_curves(scalars: Mapping[str, Mapping[int, float]]) -> HealthCurves | None:
    """The live health of a run from its scalars; ``None`` when it has no false-positive rate."""
    false_positive = scalar_series(scalars, FALSE_POSITIVE_TAG)
    if false_positive is None:
        return None
    canaries = scalar_series(scalars, CANARY_COUNT_TAG)
    judged_canaries = canaries is not None and bool(canaries.y.max() > 0)
    successes = scalar_series(scalars, SUCCESSES_TAG)  # absent: trust the rate as logged
    no_success = successes is not None and not bool(successes.y.max() > 0)
    per_task = {
        int(tag[len(TASK_TAG_PREFIX) :]): series
        for tag in sorted(scalars)
        if tag.startswith(TASK_TAG_PREFIX) and tag[len(TASK_TAG_PREFIX) :].isdigit()
        if (series := scalar_series(scalars, tag)) is not None and series.y.max() > 0
    }
    guard = scalar_series(scalars, GUARD_TAG)
    tripped = None if guard is None or not (guard.y > 0).any() else int(guard.x[np.argmax(guard.y > 0)])
    return HealthCurves(
        false_positive,
        None if no_success else scalar_series(scalars, FALSE_NEGATIVE_TAG),
        scalar_series(scalars, CANARY_TAG) if judged_canaries else None,
        dict(sorted(per_task.items())),
        tripped,
    )


def load_run(label: str, log_dir: Path, native_tag: str, agree_tag: str, window: int) -> RunCurves:
    """Read one run; ``ValueError`` naming the tags it has when ``native_tag`` is missing."""
    if not log_dir.is_dir():
        raise ValueError(f"{label} run: {log_dir} is not a directory.")
    scalars = read_scalars(log_dir)
    native = scalar_series(scalars, native_tag)
    if native is None:
        known = ", ".join(sorted(scalars)) or "none (no TensorBoard event files found)"
        raise ValueError(f"{label} run {log_dir} has no scalar {native_tag!r}; its scalars: {known}.")
    records = load_train_episodes(log_dir)
    agreement = scalar_series(scalars, agree_tag) or windowed_agreement(records, window)
    return RunCurves(label, log_dir, native, agreement, tuple(judges_of(records)), health_curves(scalars))
