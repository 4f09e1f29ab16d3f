"""Where the fine-tune's episodes come from: runs' kept videos (here) or a labelled set
(:mod:`reward_eval.classifier.finetune_data`), each as a :class:`DataSource`: the episodes, the
split, ``wrong_task``'s instruction per episode, the suite the judge is measured on (whose texts the
wrong instructions leave out, :mod:`.instructions`) and, for a set, its record."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from reward_eval.finetune.dataset import HELD_OUT, RunEpisode, run_episodes, split_episodes

DEFAULT_SUITE = "libero_10"  # the mission's suite: a run or set that records none


class DataSource(NamedTuple):
    """The fine-tune's episodes and what goes with them (see the module docstring)."""

    episodes: Sequence[Any]
    splits: Mapping[str, str]  # group -> split, for every group that does not train
    hard_negatives: Callable[[Any], str | None]
    suite: str  # "" when unrecorded (then DEFAULT_SUITE)
    record: Mapping[str, Any] | None = None


def run_source(args: argparse.Namespace) -> DataSource:
    """The runs' kept episodes, split by initial state (``--holdout-fraction``, ``--holdout-tasks``)."""
    episodes = run_episodes(args.runs)
    held = split_episodes(episodes, args.holdout_fraction, args.holdout_tasks, args.seed)
    suite = run_suite(episodes) if args.wrong_instructions else DEFAULT_SUITE
    return DataSource(episodes, dict.fromkeys(held, HELD_OUT), hard_negative_lookup(episodes), suite)


def hard_negative_lookup(episodes: Sequence[RunEpisode]) -> Any:
    """``episode -> instruction`` for ``wrong_task``: another task of the episode's run's suite."""
    from reward_eval.analysis.hard_negatives import hard_negative
    from reward_eval.job.audit_run import suite_tasks
    from reward_eval.job.settings import RunSettings

    suites = {}
    for run in {e.run for e in episodes}:
        mine = [e for e in episodes if e.run == run]
        suites[run] = suite_tasks(RunSettings.read(Path(mine[0].run_dir)), [e.record for e in mine])
    return lambda e: hard_negative(e.record.task_id, suites[e.run])


def run_suite(episodes: Sequence[RunEpisode]) -> str:
    """The LIBERO suite of the first run (its env config's), :data:`DEFAULT_SUITE` without one."""
    from reward_eval.job.env_config import load_env_config
    from reward_eval.job.settings import RunSettings

    config = RunSettings.read(Path(episodes[0].run_dir)).env_config
    if not config or not Path(config).is_file():
        return DEFAULT_SUITE
    return str(load_env_config(config).task_suite_name)


def wrong_instruction_lookup(suite: str, count: int, seed: int) -> Callable[[Any], list[str]]:
    """``episode -> count`` wrong instructions for its success (:mod:`.instructions`), none of them a
    text of ``suite`` (what the judge is measured on); the suites are read only for a positive count.
    ``ValueError`` naming the choices for a suite LIBERO does not have."""
    if count == 0:
        return lambda e: []
    from reward_eval.finetune import instructions as wi
    from reward_eval.job.audit_run import libero_suite_tasks

    if suite not in wi.LIBERO_SUITES:
        raise ValueError(f"unknown LIBERO suite {suite!r}; valid: {', '.join(wi.LIBERO_SUITES)}.")
    texts = {name: [t.instruction for t in libero_suite_tasks(name).values()] for name in wi.LIBERO_SUITES}
    objects = wi.basket_objects(t for name in wi.OBJECT_SUITES for t in texts[name])
    others = [t for name, found in texts.items() if name != suite for t in found]

    def lookup(episode: Any) -> list[str]:
        pairs, rest = wi.training_pool(episode.task_text, objects, others, texts[suite])
        return wi.draw_wrong_instructions(pairs, rest, count, (seed, episode.seed_index, 1))

    return lookup
