"""The episodes where the VLM's verdict and the simulator's differ, each with the frames the VLM saw.

The evaluation report's "Disagreements" section: for every judged episode whose verdict at the
summary's threshold differs from ``native_success``, both verdicts, the VLM's answer and a strip
of the kept video's frames (or a sentence saying why there is none). At most ``max_strips``
strips are drawn; the rest are counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.metrics import disagreements
from reward_eval.report import plots
from reward_eval.report.document import Block, Heading, Image, Items, Para
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.verdict import is_success

MAX_STRIPS = 24  # disagreement strips drawn; beyond that the report lists how many were left out
ANSWER_CHARS = 300  # of the VLM's answer shown per disagreement: PRIMO's <think> can be pages long


def relative_link(path: Path, run_dir: Path) -> str:
    """``path`` as the report links it: relative to the run directory, so the directory can move."""
    return path.relative_to(run_dir).as_posix()


def _outcome(success: bool) -> str:
    return "success" if success else "failure"


def _episode_label(index: int, record: EpisodeRecord) -> str:
    parts = [f"task {record.task_id}"]
    labelled = (("trial", record.trial_id), ("episode", record.episode))
    parts += [f"{name} {value}" for name, value in labelled if value is not None]
    return ", ".join(parts) + f" (record {index})"


def _verdict_lines(record: EpisodeRecord, threshold: float) -> list[str]:
    """Task, both verdicts and the VLM's answer (whitespace collapsed, cut at ``ANSWER_CHARS``)."""
    answer = record.vlm_answer
    answer = "(no answer logged)" if answer is None else " ".join(str(answer).split())
    if len(answer) > ANSWER_CHARS:
        answer = answer[: ANSWER_CHARS - 1] + "…"
    native, verdict = _outcome(record.native_success), _outcome(is_success(record.vlm_score, threshold))
    score = float(record.vlm_score)
    return [
        f"task: {record.task_text or '(no task text)'}",
        f"native: {native}; score {score:.3f} -> {verdict} at threshold {threshold:g}",
        f"judge's answer: {answer}",
    ]


def _video_frames(record: EpisodeRecord, run_dir: Path) -> tuple[Any, str | None]:
    """The kept video's frames, or ``None`` and a sentence saying why there are none."""
    video = record.video_path
    if not video:
        return None, "No video: the record has no video_path (reward_model.keep_temp_video: True keeps them)."
    path = Path(video)
    if not path.is_absolute() and not path.exists():
        path = run_dir / path  # a log moved together with its videos
    if not path.exists():
        return None, f"Video gone: {video} no longer exists."
    try:
        return plots.read_video_frames(path), None
    except ValueError as exc:
        return None, f"Video unreadable: {exc}"


def disagreement_section(
    run_dir: Path, records: Sequence[EpisodeRecord], summary: Mapping[str, Any], max_strips: int
) -> tuple[list[Block], dict[str, Path]]:
    """One entry per judged episode where VLM and simulator disagree, with its frame strip."""
    threshold, overall = summary["threshold"], summary["overall"]
    indices = disagreements(records, threshold)
    blocks: list[Block] = [
        Heading("Disagreements"),
        Para(
            f"{len(indices)} judged episode(s) where the judge's verdict differs from the simulator's: "
            f"{overall['fp']} false positive(s) (judged success, native failure) and {overall['fn']} false "
            "negative(s). Each strip shows the frames of the video the judge was sent."
        ),
    ]
    strips: dict[str, Path] = {}
    for index in indices[:max_strips]:
        record = records[index]
        label, verdict = _episode_label(index, record), _verdict_lines(record, threshold)
        blocks += [Heading(label, 3), Items(tuple(verdict))]
        frames, note = _video_frames(record, run_dir)
        if frames is None:
            blocks.append(Para(note))
            continue
        path = plots.frame_strip(
            run_dir / "disagreements" / f"record_{index:05d}.png", frames, "\n".join([label, *verdict])
        )
        strips[f"disagreement_{index}"] = path
        blocks.append(Image(relative_link(path, run_dir), f"frames of {label}"))
    if len(indices) > max_strips:
        blocks.append(
            Para(f"{len(indices) - max_strips} more disagreement(s) not shown (max_strips={max_strips}).")
        )
    return blocks, strips
