"""The sentence that says a run's episodes were judged on the classifier's own training states.

:mod:`reward_eval.job.trained_on` finds them (the summary's ``trained_on`` block); the terminal and
the report say it with these words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reward_eval.report.table import num, pct


def states_text(states: Sequence[tuple[int, int]]) -> str:
    """``task 7 trials 0, 1; task 0 trial 3``: states grouped by task, in task order."""
    tasks: dict[int, list[int]] = {}
    for task, trial in sorted(states):
        tasks.setdefault(task, []).append(trial)
    return "; ".join(
        f"task {t} trial{'s' if len(k) > 1 else ''} {', '.join(map(str, k))}" for t, k in tasks.items()
    )


def trained_on_line(block: dict[str, Any], total: int) -> str:
    """One sentence for the terminal and the report."""
    states = states_text([tuple(s) for s in block["states"]])
    without = block["without"]
    rest = (
        "every episode is one of them"
        if without is None
        else f"without them ({without['n_episodes']} episodes): AUROC {num(without['auroc'])}, "
        f"agreement {pct(without['agreement'])}"
    )
    return (
        f"trained on: {len(block['episodes'])} of {total} episodes start from initial states the "
        f"classifier was trained on ({states}), so their scores measure nothing unseen; {rest}."
    )
