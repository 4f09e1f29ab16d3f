"""Build the audit's counterfactual episodes from kept videos and judge them, one call each.

For every kept video this decodes its frames once (:mod:`vlm_reward.video_io`; the kept
video holds exactly the frames the judge was sent), writes the episode itself and, for a
native success, each registered perturbation's counterfactual (:mod:`..analysis.perturbations`)
as MP4s into a temporary folder of the audit dir, and sends each through the env's own client
(``RewardClient.score_video``: same payload, retries and fallback). The episode itself is
re-encoded like its counterfactuals, so the drop measures the perturbation, not the codec.
The folder is removed at the end, also on error.

The cost is one call per episode plus one per applicable perturbation of each success; a
progress bar counts the calls and their fallbacks.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reward_eval.analysis.audit import ORIGINAL
from reward_eval.analysis.episode_log import KeptEpisode
from reward_eval.analysis.perturbations import (
    FAILURE,
    Counterfactual,
    Source,
    perturb,
    perturbation_names,
)
from reward_eval.judge.calls import JudgeCall, judge_all
from vlm_reward.client.scoring import RewardClient
from vlm_reward.video_io import decode_clip, encode_mp4, probe_video


class AuditInputError(ValueError):
    """The run cannot be audited (no kept video, no native success, no readable success video):
    the user's to fix, not a bug; the command ends with its message and exit status 3."""


@dataclass(frozen=True)
class Call:
    """One judge call: the case it becomes (without its score yet) and the MP4 to send."""

    case: dict[str, Any]
    path: Path
    nframes: int


def decode_frames(video: str) -> tuple[np.ndarray, float]:
    """Every frame of ``video`` ``(T, H, W, 3)`` and its frame rate; ``ValueError`` if unreadable."""
    probe = probe_video(video)
    clip = decode_clip(video, range(probe.num_frames), probe)
    return clip.frames, clip.fps


def source_of(episode: KeptEpisode, frames: np.ndarray, hard_negative: str | None, seed: int) -> Source:
    """The perturbations' input for ``episode``; its random choices are seeded by ``(seed, index
    of the record in its log)``, so an episode's counterfactuals do not depend on the others."""
    return Source(frames, str(episode.record.task_text), hard_negative, (seed, episode.index))


def episode_counterfactuals(source: Source, native_success: bool) -> list[tuple[str, Counterfactual]]:
    """``(row, episode)`` pairs to judge: the episode itself (``original`` for a native success,
    ``failure`` for a native failure), then each applicable perturbation of a success."""
    own = [(ORIGINAL if native_success else FAILURE, Counterfactual(source.frames, source.task_text))]
    if not native_success:
        return own
    made = [(name, perturb(name, source)) for name in perturbation_names()]
    return own + [(name, cf) for name, cf in made if cf is not None]


def _episode_calls(
    episode: KeptEpisode,
    source: Source,
    folder: Path,
    tag: str,
    fps: float,
    max_frames: int,
) -> list[Call]:
    record, native = episode.record, episode.record.native_success
    calls = []
    for name, cf in episode_counterfactuals(source, native):
        path = folder / f"{tag}_{name}.mp4"
        encode_mp4(cf.frames, path, fps=fps)
        case = {
            "perturbation": name,
            "log": episode.log,
            "record": episode.index,
            "task_id": record.task_id,
            "task_text": source.task_text,
            "judged_task_text": cf.task_text,
            "native_success": native,
            "video_path": episode.video,
            "seed": list(source.seed),
            "frames": len(cf.frames),
        }
        calls.append(Call(case, path, min(len(cf.frames), max_frames)))
    return calls


def judge_episodes(
    client: RewardClient,
    episodes: Sequence[KeptEpisode],
    hard_negatives: Mapping[Any, str | None],
    seed: int,
    work_dir: Path,
    concurrency: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(cases, unreadable)``: every judged case in episode order, each with its ``score``
    (``None`` for a fallback, whose ``error`` is kept) and its episode's ``original_score``; and
    the episodes whose video could not be decoded (``log``, ``record``, ``video``, ``error``).
    :class:`AuditInputError` (before any call) when no native success's video could be read."""
    unreadable: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix=".audit-videos-", dir=work_dir) as tmp:

        def build(i: int) -> list[Call]:
            episode = episodes[i]
            try:
                frames, fps = decode_frames(episode.video)
            except ValueError as exc:
                where = {"log": episode.log, "record": episode.index, "video": episode.video}
                unreadable.append({**where, "error": str(exc)})
                return []
            source = source_of(episode, frames, hard_negatives.get(episode.record.task_id), seed)
            max_frames = int(episode.record.frames_sent or client.cfg.nframes)
            fps = fps or client.cfg.video_fps
            return _episode_calls(episode, source, Path(tmp), f"{i:05d}", fps, max_frames)

        with ThreadPoolExecutor(concurrency) as pool:
            calls = [call for built in pool.map(build, range(len(episodes))) for call in built]
        if not any(call.case["perturbation"] == ORIGINAL for call in calls):
            raise AuditInputError(
                f"no video of a native success could be read ({len(unreadable)} unreadable, first: "
                f"{unreadable[0]['video'] if unreadable else 'none'}); the audit perturbs native successes."
            )
        print(f"[reward-eval] audit: {len(calls)} calls for {len(episodes)} episodes", file=sys.stderr)
        cases = _judge(client, calls, concurrency)
    unreadable.sort(key=lambda u: (u["log"], u["record"]))
    return _with_original_scores(cases), unreadable


def _judge(client: RewardClient, calls: Sequence[Call], concurrency: int) -> list[dict[str, Any]]:
    """Each call's case with its ``score`` (``None`` for a fallback, whose ``error`` is kept) and the
    judge's ``frame_scores`` (``None`` from a judge without them)."""
    requests = [
        JudgeCall(
            call.case["judged_task_text"],
            str(call.path),
            call.nframes,
            bool(call.case["native_success"]) and call.case["perturbation"] == ORIGINAL,
        )
        for call in calls
    ]
    results = judge_all(client, requests, concurrency, "audit")
    return [
        {
            **call.case,
            "score": None if r.fallback else r.score,
            "error": r.error if r.fallback else None,
            "judge": None if r.fallback or r.judge is None else str(r.judge),
            "frame_scores": None if r.fallback or r.frame_scores is None else list(r.frame_scores),
        }
        for call, r in zip(calls, results, strict=True)
    ]


def _with_original_scores(cases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case with ``original_score``: the score of its episode judged as it was."""
    own = {(c["log"], c["record"]): c["score"] for c in cases if c["perturbation"] in (ORIGINAL, FAILURE)}
    return [{**c, "original_score": own.get((c["log"], c["record"]))} for c in cases]
