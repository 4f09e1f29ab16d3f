"""Fake reward backends for the server tests, loaded with ``--plugin tests.support.fake_backends``.

They are real :class:`RewardBackend` subclasses registered the public way, so the server
under test runs exactly the code path a third-party backend would; only the model is
replaced by canned text. Each exists to inject one kind of behaviour:

- ``fixed_score`` (alias ``fixed``): answers a configurable text; can sleep in ``load``/
  ``generate``, fail to load, and fail or change its answer per request.
- ``slow``: ``fixed_score`` whose ``load`` takes ``load_seconds`` (default 2 s), for /health.
- ``failing``: ``generate`` raises for the whole batch.
- ``counting``: answers ``task_text``'s last integer / 10 and appends one JSON line per
  ``generate`` call (batch size, tasks, whether another call overlapped it) to ``log_path``.
- ``coin_flip``: a judge that answers at random, "1" or "0", but the same answer for the same
  video and instruction (a digest of the decoded frames, the instruction and ``seed``): what
  a wrong checkpoint or a broken processor looks like to the self-test.
- ``async_tokens``: an engine with continuous batching in miniature (an
  :class:`AsyncRewardBackend`): each job "generates" ``tokens`` steps of ``token_seconds``
  concurrently with the others and logs ``start``/``done``/``cancelled`` lines to ``log_path``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from vlm_reward.backends import RewardBackend, ScoreJob, register_backend
from vlm_reward.backends.async_base import AsyncRewardBackend

REQUEST_KEYS = ("answer", "error")


@register_backend
class FixedScoreBackend(RewardBackend):
    """Answers ``answer`` for every job; per request, ``answer`` overrides it and ``error`` fails it."""

    name = "fixed_score"
    aliases = ("fixed",)

    def __init__(
        self,
        model: str,
        answer: str = "<answer>0.8</answer>",
        load_seconds: float = 0.0,
        generate_seconds: float = 0.0,
        load_error: str | None = None,
    ) -> None:
        super().__init__(model)
        if load_seconds < 0 or generate_seconds < 0:
            raise ValueError("load_seconds and generate_seconds must be >= 0.")
        self.answer = answer
        self.load_seconds = load_seconds
        self.generate_seconds = generate_seconds
        self.load_error = load_error

    def load(self) -> None:
        time.sleep(self.load_seconds)
        if self.load_error is not None:
            raise RuntimeError(self.load_error)

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        time.sleep(self.generate_seconds)
        return [self._answer(job) for job in jobs]

    def _answer(self, job: ScoreJob) -> str | Exception:
        unknown = sorted(set(job.backend_kwargs) - set(REQUEST_KEYS))
        if unknown:
            return ValueError(f"unknown backend_kwargs {unknown}; valid keys: {', '.join(REQUEST_KEYS)}.")
        if "error" in job.backend_kwargs:
            return RuntimeError(str(job.backend_kwargs["error"]))
        answer = str(job.backend_kwargs.get("answer", self.answer))
        job.usage.record(prompt=len(job.task_text), generated=len(answer))  # a character per "token"
        return answer


@register_backend
class CoinFlipBackend(RewardBackend):
    """Answers ``<answer>1</answer>`` or ``<answer>0</answer>`` by a digest of the job (see above)."""

    name = "coin_flip"

    def __init__(self, model: str, seed: int = 0, generate_seconds: float = 0.0) -> None:
        super().__init__(model)
        self.seed, self.generate_seconds = seed, generate_seconds

    def load(self) -> None:
        pass

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        time.sleep(self.generate_seconds)
        return [f"<answer>{self._flip(job)}</answer>" for job in jobs]

    def _flip(self, job: ScoreJob) -> int:
        digest = hashlib.sha256(f"{self.seed}|{job.task_text}|".encode())
        digest.update(job.clip.frames.tobytes() if job.clip is not None else job.video_path.encode())
        return digest.digest()[0] % 2


@register_backend
class SlowBackend(FixedScoreBackend):
    """``fixed_score`` that takes ``load_seconds`` to load (the /health 503 -> 200 test)."""

    name = "slow"
    aliases = ()

    def __init__(self, model: str, load_seconds: float = 2.0, **kwargs: object) -> None:
        super().__init__(model, load_seconds=load_seconds, **kwargs)  # type: ignore[arg-type]


@register_backend
class FailingBackend(RewardBackend):
    """Every ``generate`` call raises: the whole batch fails."""

    name = "failing"

    def load(self) -> None:
        pass

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        raise RuntimeError("the fake model crashed")


@register_backend
class CountingBackend(RewardBackend):
    """Scores ``task_text``'s last integer / 10 and logs every ``generate`` call to ``log_path``.

    A task containing "fail" gets its own exception (a per-job failure inside a batch).
    """

    name = "counting"

    def __init__(self, model: str, log_path: str, generate_seconds: float = 0.1) -> None:
        super().__init__(model)
        self.log_path = log_path
        self.generate_seconds = generate_seconds
        self._active = 0
        self._lock = threading.Lock()

    def load(self) -> None:
        pass

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        with self._lock:
            self._active += 1
            overlap = self._active > 1
        try:
            time.sleep(self.generate_seconds)
            record = {"batch_size": len(jobs), "tasks": [job.task_text for job in jobs], "overlap": overlap}
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            return [self._answer(job) for job in jobs]
        finally:
            with self._lock:
                self._active -= 1

    @staticmethod
    def _answer(job: ScoreJob) -> str | Exception:
        if "fail" in job.task_text:
            return RuntimeError(f"cannot judge {job.task_text!r}")
        digits = re.findall(r"\d+", job.task_text)
        return f"<answer>{int(digits[-1]) / 10 if digits else 0.0}</answer>"


@register_backend
class AsyncTokensBackend(AsyncRewardBackend):
    """Each job takes ``backend_kwargs['tokens']`` (default 10) steps of ``token_seconds``, answering 0.5.

    Jobs run concurrently on the backend's loop, as in an engine with continuous batching;
    ``log_path`` gets ``start TASK``, ``done TASK`` or ``cancelled TASK`` lines.
    """

    name = "async_tokens"

    def __init__(self, model: str, log_path: str, token_seconds: float = 0.05) -> None:
        super().__init__(model)
        self.log_path = log_path
        self.token_seconds = token_seconds

    async def load_async(self) -> None:
        pass

    def token_budget(self, backend_kwargs: Mapping[str, Any]) -> int:
        unknown = set(backend_kwargs) - {"tokens"}
        if unknown:
            raise ValueError(f"unknown backend_kwargs {sorted(unknown)}; valid keys: tokens.")
        return int(backend_kwargs.get("tokens", 10))

    async def generate_one(self, job: ScoreJob) -> str:
        self._log("start", job)
        try:
            for _ in range(self.token_budget(job.backend_kwargs)):
                await asyncio.sleep(self.token_seconds)
        except asyncio.CancelledError:
            self._log("cancelled", job)
            raise
        self._log("done", job)
        return "<answer>0.5</answer>"

    def _log(self, event: str, job: ScoreJob) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(f"{event} {job.task_text}\n")
