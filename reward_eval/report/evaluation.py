"""The report of a reward evaluation: ``summary.json``, ``report.md``, ``report.html`` and PNG plots.

Both documents are rendered from one list of blocks (:mod:`.document`), so the Markdown and
the HTML always say the same thing. The images are the PNGs in the run directory, referenced
by relative paths, so the directory can be copied or zipped as a whole.

Every number in the documents comes from the ``summary`` of
:func:`reward_eval.analysis.metrics.summarize`; only the disagreement strips read
the records themselves (for the task text, the answer and the kept video).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.judges import backend_of, judge_kind, judge_text, mixed_warning
from reward_eval.analysis.metrics import Record, as_records
from reward_eval.report import plots
from reward_eval.report.audit import audit_section
from reward_eval.report.calibration import calibration_section
from reward_eval.report.disagreements import MAX_STRIPS, disagreement_section, relative_link
from reward_eval.report.document import (
    Alert,
    Block,
    Heading,
    Image,
    Para,
    Table,
    render_html,
    render_markdown,
)
from reward_eval.report.frame_progress import frame_progress_section
from reward_eval.report.progress import progress_section
from reward_eval.report.provenance import RANDOM_MODEL_WARNING, provenance_section
from reward_eval.report.table import check_summary, num, pct
from reward_eval.report.trained_on import trained_on_line
from vlm_reward.client.episode_record import EpisodeRecord

# ----------------------------------------------------------------------------- report sections


def _secs(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} s"


def _fallbacks(block: Mapping[str, Any]) -> str:
    return f"{block['fallback_count']} ({pct(block['fallback_rate'])})"


def _lead(
    records: Sequence[EpisodeRecord], summary: Mapping[str, Any], settings: Mapping[str, Any]
) -> list[Block]:
    """The first line under the title: the judge as the server named it, and what it is."""
    backend = backend_of(records, settings.get("backend"))
    kind = judge_kind(backend)
    what = f"a {kind}" if backend is None else f"a {kind}, backend {backend}"
    named = judge_text(summary.get("judges") or [])
    overall = summary["overall"]
    scope = f"{overall['n_episodes']} episodes over {len(summary['per_task'])} task(s)"
    threshold = f"judged success = score >= {summary['threshold']:g}"
    return [Para(f"The judge: {what}; as the server named it: {named}. {scope}; {threshold}.")]


def _overall(block: Mapping[str, Any]) -> list[Block]:
    rows = (
        ("episodes", str(block["n_episodes"])),
        ("judged (non-fallback) episodes", str(block["n_judged"])),
        ("fallbacks", _fallbacks(block)),
        ("native success rate (all episodes)", pct(block["native_success_rate"])),
        ("judge's success rate (judged)", pct(block["vlm_success_rate"])),
        ("agreement judge vs native (judged)", pct(block["agreement"])),
        ("precision", num(block["precision"])),
        ("recall", num(block["recall"])),
        ("specificity", num(block["specificity"])),
        ("F1", num(block["f1"])),
        ("AUROC of the score", num(block["auroc"])),
        ("mean score | native success", num(block["mean_vlm_score_native_success"])),
        ("mean score | native failure", num(block["mean_vlm_score_native_failure"])),
    )
    confusion = (
        ("native success", str(block["tp"]), str(block["fn"])),
        ("native failure", str(block["fp"]), str(block["tn"])),
    )
    return [
        Heading("Overall"),
        Table(("metric", "value"), rows),
        Para("Confusion matrix of the judged episodes (rows: simulator, columns: judge):"),
        Table(("", "judge: success", "judge: failure"), confusion),
    ]


def _per_task(summary: Mapping[str, Any]) -> list[Block]:
    headers = ("task", "task text", "n", "judged", "native SR", "judge SR", "agree")
    headers += ("precision", "recall", "F1", "AUROC", "fallbacks")
    rows = tuple((key, b["task_text"], *_task_cells(b)) for key, b in summary["per_task"].items())
    return [Heading("Per task"), Table(headers, rows)]


def _task_cells(b: Mapping[str, Any]) -> tuple[str, ...]:
    rates = (pct(b["native_success_rate"]), pct(b["vlm_success_rate"]), pct(b["agreement"]))
    scores = (num(b["precision"]), num(b["recall"]), num(b["f1"]), num(b["auroc"]))
    return (str(b["n_episodes"]), str(b["n_judged"]), *rates, *scores, _fallbacks(b))


def _reward_modes(summary: Mapping[str, Any]) -> list[Block]:
    """The binary and the continuous reward side by side, overall and per task."""
    scopes = [("overall", summary["overall"]), *summary["per_task"].items()]
    rows = tuple(
        (
            label,
            pct(b["reward_signal"]["native"]),
            *(num(b["reward_signal"][k]) for k in ("binary", "continuous")),
            *(num(b["continuous"][k]) for k in ("mean_abs_error", "brier")),
        )
        for label, b in scopes
    )
    headers = ("scope", "native SR", "mean s, binary", "mean s, continuous", "|score - native|", "Brier")
    return [
        Heading("Binary and continuous reward"),
        Para(
            "Mean per-episode success signal s over all episodes, fallbacks included (what training "
            f"would see): binary_reward s = 1[score >= {summary['threshold']:g}], continuous s = score. "
            "The last two columns are the errors of the score as an estimate of the native 0/1 outcome "
            "(judged episodes)."
        ),
        Table(headers, rows),
    ]


def _errors_and_latency(block: Mapping[str, Any]) -> list[Block]:
    errors = block["error_counts"]
    lat = block["latency"]
    blocks: list[Block] = [Heading("Errors and latency")]
    if errors:
        blocks.append(Table(("error kind", "episodes"), tuple((k, str(v)) for k, v in errors.items())))
    else:
        blocks.append(Para("No scoring errors."))
    blocks.append(
        Table(
            ("episodes with a latency", "mean", "p50", "p90", "p99", "max"),
            ((str(lat["n"]), *(_secs(lat[k]) for k in ("mean", "p50", "p90", "p99", "max"))),),
        )
    )
    return blocks


def _write_plots(
    run_dir: Path, records: Sequence[EpisodeRecord], summary: Mapping[str, Any]
) -> dict[str, Path]:
    """Every figure that has data; the per-task histograms only with more than one task."""
    folder, threshold = run_dir / "plots", summary["threshold"]
    figures = {
        "score_histogram": plots.score_histogram(folder / "score_histogram.png", records, threshold),
        "task_rates": plots.task_rates_chart(folder / "task_rates.png", summary),
    }
    if len(summary["per_task"]) > 1:
        path = folder / "score_histograms_per_task.png"
        figures["score_histograms_per_task"] = plots.score_histograms_per_task(
            path, records, summary, threshold
        )
    latency = plots.latency_histogram(
        folder / "latency_histogram.png", records, summary["overall"]["latency"]
    )
    if latency is not None:
        figures["latency_histogram"] = latency
    return figures


FIGURE_CAPTIONS = {
    "score_histogram": "score by native outcome, all tasks",
    "score_histograms_per_task": "score by native outcome, per task",
    "task_rates": "native vs judge success rate and agreement per task",
    "latency_histogram": "scoring latency per episode",
}


def _plot_blocks(run_dir: Path, figures: Mapping[str, Path]) -> list[Block]:
    blocks: list[Block] = [Heading("Plots")]
    for key, caption in FIGURE_CAPTIONS.items():
        if key in figures:
            blocks += [
                Para(caption[0].upper() + caption[1:] + ":"),
                Image(relative_link(figures[key], run_dir), caption),
            ]
    if "latency_histogram" not in figures:
        blocks.append(Para("No latency plot: no episode record has a latency_s."))
    return blocks


def write_report(
    run_dir: str | Path,
    records: Sequence[Record],
    summary: Mapping[str, Any],
    *,
    title: str,
    settings: Mapping[str, Any] | None = None,
    max_strips: int = MAX_STRIPS,
) -> dict[str, Path]:
    """Write ``summary.json``, ``report.md``, ``report.html`` and the PNGs into ``run_dir``.

    ``records`` are episode records (decoded lines are validated into them). ``summary``
    must be :func:`..analysis.metrics.summarize` of ``records`` (it is written to
    ``summary.json`` unchanged). The report leads with its results: under ``title`` the judge as
    the records name it and what kind of judge it is (its backend's, :func:`..analysis.judges.judge_kind`),
    then the overall and per-task tables. ``settings`` (backend, model, endpoint, ...) follow as the
    provenance of the numbers, folded (every setting, the ``reward_model`` block with the source
    of each key); ``"random_model": True`` puts a warning at the top that the scores are meaningless.
    ``max_strips`` caps the disagreement strips drawn. Returns the written paths under the keys
    ``summary``, ``markdown``, ``html``, ``score_histogram``, ``task_rates``,
    ``score_histograms_per_task`` (more than one task), ``latency_histogram`` (when latencies
    exist), ``roc`` (both classes judged) and ``reliability`` (any judged episode) of
    ``summary["calibration"]``, ``progress_curves`` of ``summary["progress"]`` (rescore
    ``--prefixes``) and ``disagreement_<record index>`` (one per strip drawn).
    """
    check_summary(summary)
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"title must be a non-empty string, got {title!r}.")
    if isinstance(max_strips, bool) or not isinstance(max_strips, int) or max_strips < 0:
        raise ValueError(f"max_strips must be an integer >= 0, got {max_strips!r}.")
    records = as_records(records)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    settings = dict(settings or {})
    paths = {
        "summary": run_dir / "summary.json",
        "markdown": run_dir / "report.md",
        "html": run_dir / "report.html",
    }
    paths["summary"].write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    figures = _write_plots(run_dir, records, summary)
    strip_blocks, strips = disagreement_section(run_dir, records, summary, max_strips)
    blocks: list[Block] = [Heading(title, 1)]
    if settings.get("random_model"):
        blocks.append(Alert(RANDOM_MODEL_WARNING))
    if (warning := mixed_warning(summary.get("judges") or [])) is not None:
        blocks.append(Alert(warning))
    if trained := summary.get("trained_on"):
        blocks.append(Alert(trained_on_line(trained, summary["overall"]["n_episodes"])))
    blocks += _lead(records, summary, settings) + _overall(summary["overall"]) + _per_task(summary)
    blocks += provenance_section(summary, settings)
    blocks += _reward_modes(summary) + _errors_and_latency(summary["overall"])
    sections = (
        ("calibration", calibration_section),
        ("progress", progress_section),
        ("frame_progress", frame_progress_section),
        ("audit", audit_section),
    )
    for key, section in sections:
        if key in summary:  # calibration: every summarize(); progress: rescore --prefixes; audit: run
            section_blocks, section_figures = section(run_dir, summary)
            blocks += section_blocks
            figures = {**figures, **section_figures}
    blocks += _plot_blocks(run_dir, figures) + strip_blocks
    paths["markdown"].write_text(render_markdown(blocks), encoding="utf-8")
    paths["html"].write_text(render_html(blocks, title), encoding="utf-8")
    return {**paths, **figures, **strips}
