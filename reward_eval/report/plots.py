"""The PNG figures of the reward evaluation report, drawn with matplotlib's Agg canvas.

Figures are built on ``matplotlib.figure.Figure`` directly, never through ``pyplot``: no
global backend is switched, nothing opens a window, and the functions are safe to call from
any thread or a headless machine. Each function writes one PNG and returns its path.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from reward_eval.analysis.metrics import task_key
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.frames import evenly_spaced
from vlm_reward.video_io import decode_clip, probe_video

SUCCESS_COLOR = "#2a9d8f"  # native success
FAILURE_COLOR = "#e76f51"  # native failure
FALLBACK_COLOR = "#9e9e9e"  # fallback episodes: no judgement
AGREE_COLOR = "#264653"
SCORE_BINS = np.linspace(0.0, 1.0, 21)
DPI = 110


def save_figure(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", facecolor="white")
    return path


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _split_scores(records: Sequence[EpisodeRecord]) -> tuple[list[float], list[float], list[float]]:
    """Scores of judged native successes, judged native failures, and fallback episodes."""
    success, failure, fallback = [], [], []
    for r in records:
        bucket = fallback if r.fallback else success if r.native_success else failure
        bucket.append(float(r.vlm_score))
    return success, failure, fallback


def _draw_score_hist(ax: Any, records: Sequence[EpisodeRecord], threshold: float, legend: bool) -> None:
    success, failure, fallback = _split_scores(records)
    data = [success, failure]
    labels = [f"native success (n={len(success)})", f"native failure (n={len(failure)})"]
    colors = [SUCCESS_COLOR, FAILURE_COLOR]
    if fallback:  # a third group only when there is one: most runs have none
        data.append(fallback)
        labels.append(f"fallback, not judged (n={len(fallback)})")
        colors.append(FALLBACK_COLOR)
    ax.hist(data, bins=SCORE_BINS, color=colors, label=labels)
    ax.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xlim(0, 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of episodes
    if legend:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside: never over a bar


def score_histogram(path: Path, records: Sequence[EpisodeRecord], threshold: float) -> Path:
    """The judge's scores of all episodes, split by the native outcome, with the threshold marked."""
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.add_subplot()
    _draw_score_hist(ax, records, threshold, legend=True)
    ax.set_xlabel("score")
    ax.set_ylabel("episodes")
    ax.set_title("Score by native outcome (all tasks)")
    return save_figure(fig, path)


def score_histograms_per_task(
    path: Path, records: Sequence[EpisodeRecord], summary: Mapping[str, Any], threshold: float
) -> Path:
    """The score histogram of each task as small multiples, in the summary's task order."""
    keys = list(summary["per_task"])
    cols = min(5, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(3.2 * cols, 2.5 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    for ax, key in zip(axes.flat, keys, strict=False):  # more axes than tasks
        task_records = [r for r in records if task_key(r.task_id) == key]
        _draw_score_hist(ax, task_records, threshold, legend=False)
        ax.set_title(f"{key}: {_short(summary['per_task'][key]['task_text'], 34)}", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(keys) :]:
        ax.set_visible(False)
    # One legend for all panels, built by hand: the first panel may lack a group (e.g. fallbacks).
    handles = [Patch(color=SUCCESS_COLOR), Patch(color=FAILURE_COLOR)]
    labels = ["native success", "native failure"]
    if any(r.fallback for r in records):
        handles.append(Patch(color=FALLBACK_COLOR))
        labels.append("fallback, not judged")
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1))
    labels.append(f"threshold {threshold:g}")
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8)
    fig.suptitle("Score by native outcome, per task")
    return save_figure(fig, path)


def _rate(value: float | None) -> float:
    return np.nan if value is None else value


def task_rates_chart(path: Path, summary: Mapping[str, Any]) -> Path:
    """Horizontal grouped bars per task (overall first): native SR, the judge's SR, agreement."""
    blocks = [("overall", summary["overall"])]
    blocks += [(f"{k}: {_short(b['task_text'], 42)}", b) for k, b in summary["per_task"].items()]
    series = [
        ("native success rate", "native_success_rate", SUCCESS_COLOR),
        ("judge's success rate (judged)", "vlm_success_rate", FAILURE_COLOR),
        ("agreement (judged)", "agreement", AGREE_COLOR),
    ]
    fig = Figure(figsize=(9, 1.0 + 0.55 * len(blocks)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(blocks))[::-1]  # overall at the top
    height = 0.27
    for i, (label, key, color) in enumerate(series):
        values = np.array([_rate(b[key]) for _, b in blocks], dtype=float)
        bars = ax.barh(y + (1 - i) * height, np.nan_to_num(values), height, color=color, label=label)
        if len(blocks) <= 25:  # value labels stay legible up to about LIBERO-10 x 2
            texts = ["n/a" if np.isnan(v) else f"{v:.0%}" for v in values]
            ax.bar_label(bars, texts, fontsize=7, padding=2)
    ax.set_yticks(y, [label for label, _ in blocks], fontsize=8)
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("rate")
    fig.legend(loc="outside lower center", ncol=3, fontsize=8)  # outside: never over a bar
    ax.set_title("Native vs judge success rate and agreement per task")
    return save_figure(fig, path)


def latency_histogram(
    path: Path, records: Sequence[EpisodeRecord], latency: Mapping[str, Any]
) -> Path | None:
    """Scoring latency of every episode that has one (fallbacks stacked in grey); ``None`` if none has."""
    timed = [r for r in records if r.latency_s is not None]
    judged = [float(r.latency_s) for r in timed if not r.fallback]
    fallback = [float(r.latency_s) for r in timed if r.fallback]
    if not judged and not fallback:
        return None
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.hist(
        [judged, fallback],
        bins=20,
        stacked=True,
        color=[SUCCESS_COLOR, FALLBACK_COLOR],
        label=[f"judged (n={len(judged)})", f"fallback (n={len(fallback)})"],
    )
    for name, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
        if latency.get(name) is not None:
            ax.axvline(
                latency[name],
                color="black",
                linestyle=style,
                linewidth=1,
                label=f"{name} {latency[name]:.2f} s",
            )
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("latency per episode (s): sampling, encoding and the request")
    ax.set_ylabel("episodes")
    ax.set_title("Scoring latency")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save_figure(fig, path)


def read_video_frames(path: str | os.PathLike[str]) -> np.ndarray:
    """All frames of a video as ``uint8`` RGB ``(T, H, W, 3)``; ``ValueError`` naming ``path`` if
    it is unreadable or empty. Decoded by the server's own decoder (:mod:`vlm_reward.video_io`),
    so a strip shows a video the way the judge's server reads it."""
    try:
        probe = probe_video(path)
        if not probe.num_frames:
            raise ValueError("the video has no frames.")
        return decode_clip(path, range(probe.num_frames), probe).frames
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def frame_strip(path: Path, frames: np.ndarray, title: str, max_frames: int = 16, per_row: int = 8) -> Path:
    """The frames in rows of ``per_row`` (evenly subsampled to ``max_frames``) under ``title``.

    Each line of ``title`` is wrapped on its own; at most six lines are drawn.

    The kept video holds exactly the frames the VLM was sent, so with the default 16 the
    strip shows what the judge saw.
    """
    if len(frames) > max_frames:
        frames = frames[evenly_spaced(len(frames), max_frames)]
    cols = min(per_row, len(frames))
    rows = math.ceil(len(frames) / cols)
    lines = [part for line in title.splitlines() for part in textwrap.wrap(line, 130) or [""]]
    wrapped = "\n".join(lines[:6] + (["…"] if len(lines) > 6 else []))
    fig = Figure(
        figsize=(1.7 * cols, 1.75 * rows + 0.22 * (wrapped.count("\n") + 1) + 0.2), layout="constrained"
    )
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if i < len(frames):
            ax.imshow(frames[i])
            ax.set_title(f"frame {i + 1}/{len(frames)}", fontsize=7)
    fig.suptitle(wrapped, fontsize=8, ha="left", x=0.01)
    return save_figure(fig, path)
