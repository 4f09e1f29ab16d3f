"""The reward client: episode frames (or an MP4) -> ``POST /score`` -> score in [0, 1].

What a call does, in order:

1. samples at most ``nframes`` frames uniformly over the whole episode (first and last
   included, all frames when the episode is shorter; deterministic);
2. encodes them as an MP4 at ``video_fps`` into ``temp_video_dir``;
3. posts a :class:`vlm_reward.protocol.ScoreRequest` (``task_text``, ``video_path`` or, with
   ``send_video_inline``, ``video_b64``, ``nframes``, ``max_pixels``, ``video_fps``,
   ``backend``, ``backend_kwargs``, ``score_mode``) through one pooled ``requests`` session,
   and reads the answer as a :class:`vlm_reward.protocol.ScoreResponse`;
4. removes the MP4 unless ``keep_temp_video``, whether the request succeeded or not (a
   kept video's path is in the result, on a fallback too).

``submit`` runs ``score`` on the client's thread pool and returns a future at once (the env
starts an episode's call the moment the episode ends and collects it later); ``score_many``
scores a batch and waits. ``score_video`` sends step 3's request for an MP4 that already
exists and never removes it (re-scoring a run's kept videos with another judge).

With several endpoints (``reward_model.endpoint`` a list) each call goes to the replica
the :class:`~vlm_reward.client.replicas.ReplicaPool` picks (fewest in flight). A replica
that refuses the connection, times out or answers a retryable status
(:data:`vlm_reward.protocol.RETRYABLE_STATUSES`) cools down for ``replica_cooldown_s`` and
the call fails over to the next replica at once; any other failure is the request's own
and would fail everywhere, so it is not sent again. The result names the replica that
answered and how many failovers it took.

When every replica has failed: connection errors and retryable statuses start another
round after a back-off (``max_retries`` rounds; a timeout, a 4xx or a parse error would
fail again). Then the failure (connection refused, timeout, non-200, malformed JSON, a
missing, NaN or out-of-range score) raises :class:`RewardRequestError` when
``fail_on_request_error``; otherwise the episode gets the fallback score, a warning is
logged once per kind of error (the server's error type, e.g. ``parse_error``, or
``connection``, ``timeout``, ...), and the result says ``fallback=True`` with the reason.

With ``api_key_env``, every request carries ``Authorization: Bearer <key>`` from that
variable. A 401 (``unauthorized``: a missing or wrong key) is the same on every replica and
on every attempt, so it is neither failed over nor retried, and it is never a fallback: a
score that stands in for "the judge refused us" would train on the simulator's reward while
the run claims a VLM's. It raises :class:`~vlm_reward.client.http.RewardAuthError` (naming the
variable read, or that none was) whatever ``fail_on_request_error`` says.
"""

from __future__ import annotations

import base64
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import requests
from pydantic import ValidationError

from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.http import (
    RewardAuthError,
    RewardRequestError,
    fails_over,
    post_score,
    worth_retrying,
)
from vlm_reward.client.replicas import ReplicaPool
from vlm_reward.frames import evenly_spaced
from vlm_reward.protocol import ScoreRequest, ScoreResponse, authorization
from vlm_reward.verdict import JudgeIdentity
from vlm_reward.video_io import encode_mp4

logger = logging.getLogger(__name__)


class _RoundFailed(Exception):
    """Every replica failed once; ``last`` is the last failure."""

    def __init__(self, last: RewardRequestError, failovers: int) -> None:
        super().__init__(str(last))
        self.last, self.failovers = last, failovers


@dataclass(frozen=True)
class FinishedEpisode:
    """One finished episode to score: the policy's main images, oldest first."""

    task_text: str
    frames: Sequence[np.ndarray]
    native_success: bool


@dataclass(frozen=True)
class ScoreResult:
    """The judgement of one episode; ``score`` is the fallback when ``fallback`` is True."""

    score: float
    raw_value: float | None
    answer: str | None
    latency_s: float
    fallback: bool
    error: str | None = None
    error_kind: str | None = None
    video_path: str | None = None
    num_frames_sent: int = 0
    endpoint: str | None = None  # the replica that answered; None on a fallback
    failovers: int = 0  # replicas that failed before the one that answered
    judge: JudgeIdentity | None = None  # who judged, as the server answered; None on a fallback
    # Each frame's score, in the video's order, from a judge that scores frames (a frame classifier);
    # None from the others and on a fallback.
    frame_scores: tuple[float, ...] | None = None


def sample_frame_indices(num_frames: int, nframes: int) -> np.ndarray:
    """Indices of at most ``nframes`` frames spread evenly over ``num_frames``, ends included."""
    return np.array(evenly_spaced(num_frames, nframes), dtype=np.int64)


class RewardClient:
    """Scores finished episodes against a reward server; thread-safe, one pooled session."""

    def __init__(self, cfg: RewardModelConfig) -> None:
        self.cfg = cfg
        self.error_counts: Counter[str] = Counter()
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self.replicas = ReplicaPool(cfg.endpoints, cfg.replica_cooldown_s)
        self._session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(
            pool_connections=len(cfg.endpoints), pool_maxsize=cfg.max_concurrency
        )
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        # The key lives only in the session's headers: never in the config, a log or a result.
        api_key = cfg.api_key()
        if api_key is not None:
            self._session.headers["Authorization"] = authorization(api_key)
        self._pool = ThreadPoolExecutor(cfg.max_concurrency, thread_name_prefix="vlm-reward")
        self._video_dir = cfg.temp_video_dir or tempfile.gettempdir()
        os.makedirs(self._video_dir, exist_ok=True)

    def submit(self, episode: FinishedEpisode) -> Future[ScoreResult]:
        """Start scoring ``episode`` on the client's thread pool and return at once.

        The future's ``result()`` is :meth:`score`'s: the judgement, the fallback, or (with
        ``fail_on_request_error``) the :class:`RewardRequestError`. At most ``max_concurrency``
        calls run at a time; more wait in the pool's queue. ``episode.frames`` is read by
        the worker thread, so the caller must not change that sequence afterwards.
        """
        return self._pool.submit(self.score, episode)

    def score_many(self, episodes: Sequence[FinishedEpisode]) -> list[ScoreResult]:
        """Score ``episodes`` concurrently (at most ``max_concurrency`` in flight), in order."""
        if len(episodes) <= 1:
            return [self.score(e) for e in episodes]
        return list(self._pool.map(self.score, episodes))

    def score(self, episode: FinishedEpisode) -> ScoreResult:
        """Score one episode; raises :class:`RewardRequestError` only with ``fail_on_request_error``,
        and :class:`~vlm_reward.client.http.RewardAuthError` on a 401 whatever it says."""
        started = time.perf_counter()
        frames = np.stack(
            [
                np.asarray(episode.frames[i])
                for i in sample_frame_indices(len(episode.frames), self.cfg.nframes)
            ]
        )
        path = os.path.join(self._video_dir, f"libero_episode_{uuid.uuid4().hex}.mp4")
        try:
            encode_mp4(frames, path, fps=self.cfg.video_fps)
            kept = path if self.cfg.keep_temp_video else None
            return self._request(episode, path, len(frames), started, kept)
        finally:
            if not self.cfg.keep_temp_video and os.path.exists(path):
                os.remove(path)

    def score_video(
        self, task_text: str, video_path: str, num_frames: int, native_success: bool
    ) -> ScoreResult:
        """Score an MP4 that already exists, e.g. a kept episode video re-scored by another judge.

        The request, retries, validation and fallback are those of :meth:`score` (the
        fallback uses ``native_success``); ``num_frames`` is sent as ``nframes``. The file
        is read, never removed, and the result's ``video_path`` is its absolute path.
        """
        episode = FinishedEpisode(task_text, (), native_success)
        started = time.perf_counter()
        return self._request(episode, video_path, num_frames, started, os.path.abspath(video_path))

    def close(self) -> None:
        """Stop the worker threads and close the HTTP connections; log what each replica did."""
        self._pool.shutdown(wait=True)
        self._session.close()
        if len(self.replicas.endpoints) > 1:
            logger.info(
                "reward-server replicas: %s; %d failovers", self.replicas.snapshot(), self.replicas.failovers
            )

    def _request(
        self, episode: FinishedEpisode, path: str, nframes: int, started: float, kept: str | None
    ) -> ScoreResult:
        """POST the video at ``path``; a failure becomes the fallback (or raises, see ``score``).

        ``kept`` is the path to report as ``video_path``, also on a fallback: a kept video
        of a failed call is what a later re-scoring needs most.
        """
        try:
            body, endpoint, failovers = self._post(self._payload(episode.task_text, path, nframes))
        except RewardRequestError as exc:
            return replace(self._fallback(episode, exc, started, nframes), video_path=kept)
        return ScoreResult(
            score=body.score,
            raw_value=body.raw_value,
            answer=body.answer,
            latency_s=time.perf_counter() - started,
            fallback=False,
            video_path=kept,
            num_frames_sent=nframes,
            endpoint=endpoint,
            failovers=failovers,
            judge=JudgeIdentity(
                body.backend, body.model, body.score_mode, body.prompt_preset, body.prompt_hash
            ),
            frame_scores=None if body.frame_scores is None else tuple(body.frame_scores),
        )

    def _payload(self, task_text: str, path: str, nframes: int) -> dict[str, Any]:
        """The request body, validated by the protocol here (a bad one never leaves the env)."""
        video: dict[str, str] = {}
        if self.cfg.send_video_inline:
            with open(path, "rb") as handle:
                video["video_b64"] = base64.b64encode(handle.read()).decode("ascii")
        else:
            video["video_path"] = os.path.abspath(path)
        try:
            request = ScoreRequest(
                task_text=task_text,
                nframes=nframes,
                max_pixels=self.cfg.max_pixels,
                video_fps=self.cfg.video_fps,
                native_frame_size=self.cfg.native_frame_size,
                backend=self.cfg.backend,
                backend_kwargs=dict(self.cfg.backend_kwargs),
                score_mode=self.cfg.score_mode,
                **video,
            )
        except ValidationError as exc:
            message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            where = ", ".join(self.replicas.endpoints)
            raise RewardRequestError("invalid_request", where, message) from exc
        payload = request.model_dump(exclude_none=True)
        if not request.native_frame_size:
            # Left out at its default: a server older than the setting refuses unknown fields.
            del payload["native_frame_size"]
        return payload

    def _post(self, payload: dict[str, Any]) -> tuple[ScoreResponse, str, int]:
        """(response, replica, failovers): rounds over the replicas, retried for transient errors."""
        failovers = 0
        for attempt in range(self.cfg.max_retries + 1):
            try:
                return self._post_round(payload, failovers)
            except _RoundFailed as failed:
                exc, failovers = failed.last, failed.failovers
                if not worth_retrying(exc) or attempt == self.cfg.max_retries:
                    raise exc from exc.__cause__  # the transport error, not the round
                time.sleep(min(0.5 * 2**attempt, 5.0))
        raise AssertionError("unreachable")

    def _post_round(self, payload: dict[str, Any], failovers: int) -> tuple[ScoreResponse, str, int]:
        """Try each replica once, in the pool's order, until one answers.

        A failure another replica may not share (:func:`vlm_reward.client.http.fails_over`) cools its
        replica down and moves on; any other failure is raised at once. Raises
        :class:`_RoundFailed` when every replica has failed.
        """
        tried: set[str] = set()
        while (endpoint := self.replicas.order(tried)) is not None:
            tried.add(endpoint)
            try:
                with self.replicas.request(endpoint):
                    body = post_score(self._session, endpoint, payload, self.cfg.timeout, self.cfg.ca_bundle)
            except RewardRequestError as exc:
                if not fails_over(exc):
                    raise
                another = len(tried) < len(self.replicas.endpoints)
                self.replicas.failed(endpoint, will_fail_over=another)
                if not another:
                    raise _RoundFailed(exc, failovers) from exc
                failovers += 1
                continue
            self.replicas.succeeded(endpoint)
            return body, endpoint, failovers
        raise AssertionError("unreachable: a pool is never empty")

    def _fallback(
        self, episode: FinishedEpisode, exc: RewardRequestError, started: float, sent: int
    ) -> ScoreResult:
        if exc.status == 401:  # never a fallback, whatever fail_on_request_error says
            raise RewardAuthError(exc.endpoint, exc.reason, self.cfg.api_key_env) from exc
        if self.cfg.fail_on_request_error:
            raise exc
        with self._lock:
            self.error_counts[exc.kind] += 1
            first = exc.kind not in self._warned
            self._warned.add(exc.kind)
        if first:
            logger.warning("%s; using the fallback score (warned once per kind of error).", exc)
        fallback = self.cfg.fallback_score
        score = float(episode.native_success) if fallback is None else fallback
        return ScoreResult(
            score=score,
            raw_value=None,
            answer=None,
            latency_s=time.perf_counter() - started,
            fallback=True,
            error=str(exc),
            error_kind=exc.kind,
            num_frames_sent=sent,
        )
