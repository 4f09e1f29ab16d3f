"""``rescore --prefixes K``: judge the growing prefixes of each kept video, for its VOC.

For every kept video (the frames the judge saw for the whole episode) this decodes the
frames once, writes the prefixes the pure :func:`..analysis.progress.prefix_lengths` names
(the first ``ceil(i * n / K)`` frames, ``i = 1..K``, repeats judged once) as MP4s into a
temporary folder of the run dir, and sends each through the env's own client
(``RewardClient.score_video``: same payload, retries and fallback) with ``nframes`` =
the prefix's frame count, capped at the record's ``frames_sent``. The folder is removed at
the end, also on error. Each episode's VOC is :func:`..analysis.progress.voc` of its
prefixes; a failed call (fallback) is counted and left out.

Every prefix, the whole video (K/K) included, is re-encoded the same way (the env's
near-lossless H.264), so all prefixes of an episode are treated alike; the K/K score can
therefore differ slightly from the episode's own score.

The cost is up to ``episodes x K`` calls: the command prints the count before it starts
and a progress bar counts the calls and their fallbacks.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_eval.analysis.episode_log import KeptEpisode
from reward_eval.analysis.progress import UNREADABLE, prefix_lengths, voc
from reward_eval.judge.calls import JudgeCall, judge_all
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import RewardClient
from vlm_reward.video_io import decode_clip, encode_mp4, probe_video

EPISODES_FILE = "voc_episodes.jsonl"
# The fields of a source record copied into its per-episode VOC result.
META_KEYS = ("task_id", "task_text", "trial_id", "reset_state_id", "native_success", "video_path")


@dataclass(frozen=True)
class Prefixes:
    """The prefix MP4s of one episode (``paths[i]`` holds the first ``frames[i]`` frames), or the
    reason there are none."""

    frames: tuple[int, ...] = ()
    paths: tuple[Path, ...] = ()
    error: str | None = None


def cut_prefixes(video: str, k: int, folder: Path, tag: str, fallback_fps: float) -> Prefixes:
    """Decode ``video`` once and write its prefix MP4s into ``folder`` as ``<tag>_first<n>.mp4``."""
    try:
        probe = probe_video(video)
        clip = decode_clip(video, range(probe.num_frames), probe)
    except ValueError as exc:
        return Prefixes(error=f"{video}: {exc}")
    frames = tuple(prefix_lengths(len(clip.frames), k))
    paths = tuple(folder / f"{tag}_first{n:04d}.mp4" for n in frames)
    for n, path in zip(frames, paths, strict=True):
        encode_mp4(clip.frames[:n], path, fps=clip.fps or fallback_fps)
    return Prefixes(frames, paths)


def episode_result(
    episode: KeptEpisode, prefixes: Prefixes, scores: Sequence[float | None]
) -> dict[str, Any]:
    """The per-episode line of ``voc_episodes.jsonl``: where it came from, its prefixes' frame
    counts and scores (``None`` for a fallback), its VOC or why it has none."""
    meta = {key: getattr(episode.record, key) for key in META_KEYS}
    base = {"log": episode.log, "record": episode.index, **meta, "prefix_frames": list(prefixes.frames)}
    if prefixes.error is not None:
        unreadable = {"voc": None, "voc_undefined": UNREADABLE, "video_error": prefixes.error}
        return {**base, "scores": [], "fallbacks": 0, **unreadable}
    value, reason = voc(prefixes.frames, scores)
    fallbacks = sum(s is None for s in scores)
    return {**base, "scores": list(scores), "fallbacks": fallbacks, "voc": value, "voc_undefined": reason}


def score_prefixes(
    client: RewardClient,
    episodes: Sequence[KeptEpisode],
    k: int,
    work_dir: Path,
    concurrency: int,
) -> list[dict[str, Any]]:
    """Per-episode VOC results, in ``episodes`` order (see the module docstring).

    The prefix MP4s live in a temporary folder inside ``work_dir`` (which must lie in a local
    server's ``--video-root``) and are removed before this returns.
    """
    with tempfile.TemporaryDirectory(prefix=".prefix-videos-", dir=work_dir) as tmp:

        def cut_one(i: int) -> Prefixes:
            return cut_prefixes(episodes[i].video, k, Path(tmp), f"{i:05d}", client.cfg.video_fps)

        with ThreadPoolExecutor(concurrency) as pool:
            cut = list(pool.map(cut_one, range(len(episodes))))
        calls = [(i, j) for i, p in enumerate(cut) for j in range(len(p.frames))]
        print(
            f"[reward-eval] --prefixes {k}: {len(calls)} calls for {len(episodes)} episodes "
            f"(at most episodes x K = {len(episodes) * k}; repeated prefixes of short videos are judged once)"
        )
        scores = _score_calls(client, [(episodes[i].record, cut[i], j) for i, j in calls], concurrency)
    by_call = dict(zip(calls, scores, strict=True))
    return [
        episode_result(e, cut[i], [by_call[(i, j)] for j in range(len(cut[i].frames))])
        for i, e in enumerate(episodes)
    ]


def _score_calls(
    client: RewardClient, calls: Sequence[tuple[EpisodeRecord, Prefixes, int]], concurrency: int
) -> list[float | None]:
    """The score of each ``(record, prefixes, j)`` call (prefix ``j``), ``None`` for a fallback;
    ``nframes`` is the prefix's frame count, capped at the record's ``frames_sent``."""
    requests = [
        JudgeCall(
            str(record.task_text),
            str(prefixes.paths[j]),
            min(prefixes.frames[j], int(record.frames_sent or client.cfg.nframes)),
            record.native_success,
        )
        for record, prefixes, j in calls
    ]
    return [None if r.fallback else r.score for r in judge_all(client, requests, concurrency, "prefixes")]


def write_episodes(path: Path, results: Sequence[Mapping[str, Any]]) -> Path:
    """Write the per-episode results as JSONL (strict JSON: an undefined VOC is ``null``)."""
    lines = [json.dumps(dict(r), allow_nan=False) for r in results]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
