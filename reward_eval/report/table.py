"""The short table a command prints at its end, and the number formats of every report.

Every number comes from the ``summary`` of
:func:`reward_eval.analysis.metrics.summarize`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

THRESHOLD_SOURCES = {
    "argument": "set for this evaluation",
    "records": "the run's success_threshold",
    "default": "the env default; the records carry no success_threshold",
}


# ----------------------------------------------------------------------------- number formats


def pct(value: float | None) -> str:
    """A rate as a percentage with one decimal, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def num(value: float | None, digits: int = 3) -> str:
    """A score-like number with ``digits`` decimals, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value:.{digits}f}"


# ----------------------------------------------------------------------------- terminal table


def format_table(summary: Mapping[str, Any]) -> str:
    """A plain-text table for the terminal: overall and one row per task.

    Columns: task, n, native SR, VLM SR, agreement, F1, AUROC, fallbacks, task text. VLM SR,
    agreement, F1 and AUROC are over the judged (non-fallback) episodes. A summary with
    ``trained_on`` (episodes a classifier judged on its own training states:
    :mod:`reward_eval.job.trained_on`) flags their tasks with ``*`` and adds the overall
    row without them.
    """
    check_summary(summary)
    header = ("task", "n", "native SR", "VLM SR", "agree", "F1", "AUROC", "fallbacks", "task text")
    trained = summary.get("trained_on") or {}
    flagged = trained.get("per_task", {})
    rows = [_table_row("overall", summary["overall"], "")]
    rows += [
        _table_row(f"{k} *" if k in flagged else k, b, b["task_text"]) for k, b in summary["per_task"].items()
    ]
    if trained.get("without") is not None:
        text = "overall, without the trained-on episodes"
        rows.append(_table_row("not trained on", trained["without"], text))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

    def line(row: tuple[str, ...]) -> str:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:], strict=True)]
        return "  ".join([*cells, row[-1]]).rstrip()

    source = THRESHOLD_SOURCES.get(summary["threshold_source"], summary["threshold_source"])
    note = f"VLM success = score >= {summary['threshold']:g} ({source}); judge metrics exclude fallbacks"
    footer = ["* holds episodes the classifier was trained on (their initial states)"] if flagged else []
    return "\n".join([note, line(header), *map(line, rows), *footer])


def _table_row(label: str, b: Mapping[str, Any], text: str) -> tuple[str, ...]:
    return (
        label,
        str(b["n_episodes"]),
        pct(b["native_success_rate"]),
        pct(b["vlm_success_rate"]),
        pct(b["agreement"]),
        num(b["f1"]),
        num(b["auroc"]),
        str(b["fallback_count"]),
        text if len(text) <= 60 else text[:59] + "…",
    )


def check_summary(summary: Any) -> None:
    """``ValueError`` unless ``summary`` has the shape :func:`..analysis.metrics.summarize` returns."""
    required = {"overall", "per_task", "threshold", "threshold_source"}
    if not isinstance(summary, Mapping) or not required <= summary.keys():
        raise ValueError(
            "summary must be the dict returned by metrics.summarize() (keys overall, per_task, ...)."
        )
